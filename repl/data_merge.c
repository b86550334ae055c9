/* data_merge.c - `merge` of data-set shards: the report JSONs of runs over
 * parts of one data set (run --samples k/n; report --json) joined into the
 * session's last run, the one an unsharded run gives, so `report`, `assert`
 * and `--json` then work as after that run. The joining and its checks are
 * explore/'s (mpx_shards); this file reads the files through the session's
 * guard, loads the model the shards ran and hands the run to the session. */
#include "repl_internal.h"

#include <stdlib.h>
#include <string.h>

/* The model the shards ran, loaded unless the session has it. */
static mpx_status need_model(mpx_session *s, const char *model, mpx_error *err) {
    if (s->graph && strcmp(s->model_path, model) == 0) return MPX_OK;
    char *argv[2] = {"load", (char *)model};
    return repl_exec_words(s, 2, argv, err);
}

mpx_status repl_merge_samples(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    const mpx_opt_value *o = args->opt;
    /* a sweep's outputs have no meaning here: refused before any file is read */
    if (o[SWEEP_PLOT].given || o[SWEEP_TABLE].given)
        return mpx_error_set(err, MPX_E_ARG, "merge: --plot and --table are for a sweep's shards, not a data set's");
    if (o[SWEEP_JSON].given && o[SWEEP_CSV].given) return mpx_error_set(err, MPX_E_ARG, "--json or --csv, not both");
    char *const *files = args->word;
    int n = args->n;
    char **texts = calloc((size_t)n, sizeof *texts);
    if (!texts) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    mpx_status st = MPX_OK;
    for (int i = 0; i < n && !st; i++) st = repl_read_text(s, files[i], &texts[i], err);
    mpx_shards *sh = NULL;
    if (!st) st = mpx_shards_parse(n, (const char *const *)files, (const char *const *)texts, &sh, err);
    for (int i = 0; i < n; i++) free(texts[i]);
    free(texts);
    if (!st) st = need_model(s, mpx_shards_model(sh), err);
    mpx_compare *c = NULL;
    mpx_dataset *labels = NULL;
    if (!st) st = mpx_shards_compare(sh, s->graph, &c, &labels, err);
    repl_dataset *d = NULL;
    if (!st && !(d = repl_data_labels(labels, err))) st = err->status;
    if (!st) {
        const char *target = mpx_shards_target(sh);
        repl_set_data(s, d);
        snprintf(s->merged_session_id, sizeof s->merged_session_id, "%s", mpx_shards_session_id(sh));
        fprintf(s->info, "merge: %d shard%s, %d samples of %s\n", n, n == 1 ? "" : "s", mpx_shards_total(sh),
                mpx_shards_model(sh));
        st = repl_take_run(s, c, strcmp(target, "fp32") == 0 ? NULL : mpx_format_by_name(target), false, NULL, err);
        c = NULL;
    }
    mpx_compare_free(c);
    mpx_shards_free(sh);
    /* --json/--csv: the merged report, as `report` writes it. */
    if (!st && (o[SWEEP_JSON].given || o[SWEEP_CSV].given)) {
        char *w[3] = {"report", o[SWEEP_JSON].given ? "--json" : "--csv", NULL};
        const mpx_opt_value *v = &o[o[SWEEP_JSON].given ? SWEEP_JSON : SWEEP_CSV];
        w[2] = (char *)v->text;
        st = repl_exec_words(s, v->text ? 3 : 2, w, err);
    }
    return st;
}
