/* data_merge.c - `merge` of data-set shards: the report JSONs of runs over
 * parts of one data set (run --samples k/n; report --json) joined into the
 * session's last run, the one an unsharded run gives: every layer's worst,
 * mean and p95 are taken over all samples again from the per-sample figures
 * the shards carry, so `report`, `assert` and `--json` then work as after
 * that run. The shards are checked to be of one model, target, rule list and
 * data set, with every sample exactly once.
 *
 * GNU parallel (or a Slurm array, or Kubernetes Jobs) runs the shards as
 * separate mpx processes; mpx has no scheduler of its own. */
#include "repl_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct shard {
    const char *path;
    cJSON *root;
    const cJSON *layers;
} shard;

static const char *str_of(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A figure as report --json writes it: a number, or "inf", "-inf", "nan". */
static double num_of(const cJSON *v) {
    if (cJSON_IsNumber(v)) return v->valuedouble;
    if (cJSON_IsString(v)) return strcmp(v->valuestring, "nan") == 0 ? NAN : v->valuestring[0] == '-' ? -INFINITY : INFINITY;
    return NAN;
}

static void metrics_of(const cJSON *o, mpx_metrics *m) {
    memset(m, 0, sizeof *m);
    for (int k = 0; k < MPX_METRIC_COUNT; k++) {
        const mpx_metric_info *mi = mpx_metric_info_of((mpx_metric_id)k);
        mpx_metric_set(m, (mpx_metric_id)k, num_of(cJSON_GetObjectItemCaseSensitive(o, mi->name)));
    }
    m->absmax_ref = num_of(cJSON_GetObjectItemCaseSensitive(o, "absmax_ref"));
    m->n = (int64_t)num_of(cJSON_GetObjectItemCaseSensitive(o, "n"));
}

/* The fields every shard must share, compared with the first's. */
static mpx_status same_as_first(const shard *a, const shard *b, mpx_error *err) {
    static const char *const keys[] = {"model", "target"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *x = str_of(a->root, keys[i]), *y = str_of(b->root, keys[i]);
        if (!x || !y || strcmp(x, y) != 0)
            return mpx_error_set(err, MPX_E_INVALID, "merge: %s has %s %s, %s has %s (shards of one run share it)", b->path,
                                 keys[i], y ? y : "none", a->path, x ? x : "none");
    }
    char *ra = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(a->root, "rules"));
    char *rb = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(b->root, "rules"));
    bool same = ra && rb && strcmp(ra, rb) == 0;
    free(ra);
    free(rb);
    if (!same) return mpx_error_set(err, MPX_E_INVALID, "merge: %s ran other rules than %s", b->path, a->path);
    if (num_of(cJSON_GetObjectItemCaseSensitive(a->root, "n_samples_total")) !=
        num_of(cJSON_GetObjectItemCaseSensitive(b->root, "n_samples_total")))
        return mpx_error_set(err, MPX_E_INVALID, "merge: %s is of a data set of another size than %s", b->path, a->path);
    int n = cJSON_GetArraySize(a->layers);
    if (cJSON_GetArraySize(b->layers) != n)
        return mpx_error_set(err, MPX_E_INVALID, "merge: %s compared %d layers, %s %d", b->path,
                             cJSON_GetArraySize(b->layers), a->path, n);
    return MPX_OK;
}

static mpx_status read_shards(mpx_session *s, int n, char **paths, shard *sh, mpx_error *err) {
    for (int i = 0; i < n; i++) {
        sh[i].path = paths[i];
        mpx_status st = repl_read_json(s, paths[i], &sh[i].root, err);
        if (st) return st;
        const char *kind = str_of(sh[i].root, "kind");
        sh[i].layers = cJSON_GetObjectItemCaseSensitive(sh[i].root, "layers");
        if (!kind || strcmp(kind, "mpx-samples") != 0 || !cJSON_IsArray(sh[i].layers) ||
            !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(sh[i].root, "sample_ids")))
            return mpx_error_set(err, MPX_E_INVALID, "merge: %s is not the report --json of a run over a data set",
                                 paths[i]);
        const char *fig = str_of(sh[i].root, "figures");
        if (!fig || strcmp(fig, "worst") != 0)
            return mpx_error_set(err, MPX_E_INVALID, "merge: %s holds one sample's figures (report --sample); write "
                                 "shards with report --json", paths[i]);
        if (i && (st = same_as_first(&sh[0], &sh[i], err))) return st;
    }
    return MPX_OK;
}

/* The model the shards ran, loaded unless the session has it. */
static mpx_status need_model(mpx_session *s, const char *model, mpx_error *err) {
    if (s->graph && strcmp(s->model_path, model) == 0) return MPX_OK;
    char *argv[2] = {"load", (char *)model};
    return repl_exec_words(s, 2, argv, err);
}

/* Sample figures of shard sh for its row r into the layers of c (report
 * --json sorts its layers by error, so each shard has its own order: matched
 * by tensor name). */
static mpx_status shard_row(const shard *sh, int r, mpx_compare *c, mpx_error *err) {
    int seen = 0;
    for (const cJSON *L = sh->layers->child; L; L = L->next) {
        const char *t = str_of(L, "tensor");
        int i = -1;
        for (int k = 0; t && k < c->n_layers && i < 0; k++)
            if (strcmp(t, c->g->tensors[c->layers[k].tensor]->name) == 0) i = k;
        if (i < 0)
            return mpx_error_set(err, MPX_E_INVALID, "merge: %s: layer %s is not among the first shard's layers", sh->path,
                                 t ? t : "?");
        const cJSON *ps = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(L, "per_sample"), r);
        if (!cJSON_IsObject(ps))
            return mpx_error_set(err, MPX_E_INVALID, "merge: %s: layer %s has no figures for its sample row %d", sh->path, t, r);
        metrics_of(ps, &c->layers[i].m);
        seen++;
    }
    if (seen != c->n_layers)
        return mpx_error_set(err, MPX_E_INVALID, "merge: %s has %d layers, the first shard %d", sh->path, seen, c->n_layers);
    return MPX_OK;
}

/* The comparison the shards stand for, over s->graph; labels[id] filled. */
static mpx_status build(mpx_session *s, int n, const shard *sh, int total, const char **labels, mpx_compare **out,
                        mpx_error *err) {
    const mpx_graph *g = s->graph;
    mpx_compare *c = calloc(1, sizeof *c);
    int nl = cJSON_GetArraySize(sh[0].layers);
    if (!c) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    c->g = g;
    c->n_layers = nl;
    c->layers = calloc((size_t)(nl ? nl : 1), sizeof *c->layers);
    c->ref = calloc((size_t)(g->n_tensors ? g->n_tensors : 1), sizeof *c->ref);
    c->cand = calloc((size_t)(g->n_tensors ? g->n_tensors : 1), sizeof *c->cand);
    c->samples = mpx_samples_new();
    mpx_status st = c->layers && c->ref && c->cand && c->samples ? MPX_OK : mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int i = 0; !st && i < g->n_tensors; i++) c->ref[i].n = c->cand[i].n = -1; /* nothing kept */
    int i = 0;
    for (const cJSON *L = sh[0].layers->child; !st && L; L = L->next, i++) {
        const char *t = str_of(L, "tensor"), *f = str_of(L, "format");
        int ti = -1;
        for (int k = 0; t && k < g->n_tensors && ti < 0; k++)
            if (strcmp(g->tensors[k]->name, t) == 0) ti = k;
        if (ti < 0 || !g->tensors[ti]->producer) {
            st = mpx_error_set(err, MPX_E_INVALID, "merge: %s: layer %s is not a computed tensor of %s", sh[0].path,
                               t ? t : "?", s->model_path);
            break;
        }
        c->layers[i].tensor = ti;
        c->layers[i].node = g->tensors[ti]->producer->index;
        c->layers[i].fmt = f && strcmp(f, "fp32") != 0 ? mpx_format_by_name(f) : NULL;
    }
    /* Rows in sample order: each id once, from whichever shard holds it. */
    for (int id = 0; !st && id < total; id++) {
        int from = -1, row = -1;
        for (int k = 0; k < n; k++) {
            int r = 0;
            for (const cJSON *v = cJSON_GetObjectItemCaseSensitive(sh[k].root, "sample_ids")->child; v; v = v->next, r++)
                if (cJSON_IsNumber(v) && (int)v->valuedouble == id + 1) {
                    if (from >= 0) {
                        st = mpx_error_set(err, MPX_E_INVALID, "merge: sample %d is in %s and in %s", id + 1,
                                           sh[from].path, sh[k].path);
                        break;
                    }
                    from = k, row = r;
                }
        }
        if (st) break;
        if (from < 0) {
            st = mpx_error_set(err, MPX_E_INVALID, "merge: no shard holds sample %d of %d (a shard is missing)", id + 1, total);
            break;
        }
        const cJSON *lab = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(sh[from].root, "samples"), row);
        labels[id] = cJSON_IsString(lab) ? lab->valuestring : "?";
        if (!(st = shard_row(&sh[from], row, c, err))) st = mpx_samples_add(c->samples, c, id, err);
    }
    int *worst = st ? NULL : malloc((size_t)(nl ? nl : 1) * sizeof *worst);
    if (!st && !worst) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    if (!st) st = mpx_samples_reduce(c->samples, MPX_STAT_WORST, 0, c->layers, worst, err);
    if (!st) {
        /* The kept sample: the worst of the first model output. */
        for (int k = 0; k < nl; k++)
            if (repl_is_output(g, c->layers[k].tensor)) {
                c->samples->kept = worst[k];
                break;
            }
    }
    free(worst);
    if (st) {
        mpx_compare_free(c);
        return st;
    }
    *out = c;
    return MPX_OK;
}

mpx_status repl_merge_samples(mpx_session *s, int argc, char **argv, mpx_error *err) {
    int files = 1;
    while (files < argc && strncmp(argv[files], "--", 2) != 0) files++;
    int n = files - 1;
    shard *sh = calloc((size_t)n, sizeof *sh);
    if (!sh) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    mpx_status st = read_shards(s, n, argv + 1, sh, err);
    const char *model = st ? NULL : str_of(sh[0].root, "model");
    const char *target = st ? NULL : str_of(sh[0].root, "target");
    double total = st ? 0 : num_of(cJSON_GetObjectItemCaseSensitive(sh[0].root, "n_samples_total"));
    if (!st && (!model || !target || !(total >= 1) || total > 1e7))
        st = mpx_error_set(err, MPX_E_INVALID, "merge: %s lacks its model, target or data set size", sh[0].path);
    if (!st) st = need_model(s, model, err);
    const char **labels = st ? NULL : calloc((size_t)total, sizeof *labels);
    if (!st && !labels) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    mpx_compare *c = NULL;
    if (!st) st = build(s, n, sh, (int)total, labels, &c, err);
    repl_dataset *d = NULL;
    if (!st) {
        char source[1100];
        snprintf(source, sizeof source, "%d merged shard%s of %s", n, n == 1 ? "" : "s", sh[0].path);
        if (!(d = repl_data_labels(source, (int)total, labels, err))) st = err->status;
    }
    if (!st) {
        repl_set_data(s, d);
        fprintf(s->info, "merge: %d shard%s, %d samples of %s\n", n, n == 1 ? "" : "s", (int)total, model);
        st = repl_take_run(s, c, strcmp(target, "fp32") == 0 ? NULL : mpx_format_by_name(target), false, NULL, err);
        c = NULL;
    }
    mpx_compare_free(c);
    free(labels);
    for (int i = 0; i < n; i++) cJSON_Delete(sh[i].root);
    free(sh);
    /* --json/--csv: the merged report, as `report` writes it. */
    if (!st && files < argc) {
        argv[files - 1] = "report";
        st = repl_exec_words(s, argc - files + 1, argv + files - 1, err);
    }
    return st;
}
