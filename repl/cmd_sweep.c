/* cmd_sweep.c - `sweep` and `merge`: the words of the commands, the
 * session as the sweep's host (repl_explore_host), and the table,
 * CSV, JSON and plot written. The sweep itself, its shards' JSON and their
 * merge are explore/sweep.c's:
 *
 *   sweep t in 0,64k,256k,1M : colour Conv green when macs >= $t else gray
 *
 * Nothing is applied: the session's rules are the same afterwards.
 * `merge` (or `mpx merge`) checks that the shards are of one sweep
 * (command, values, model, target) and joins them into the table, CSV,
 * JSON and plot one unsharded run gives. */
#include "repl_internal.h"

#include "mpx_viz.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- output: table, CSV, JSON, plot ------------------------------------------ */

static void print_table(FILE *out, const mpx_sweep *d) {
    fprintf(out, "sweep %s: %s (%s)\n", d->name, d->command, d->target);
    fprintf(out, "  %-10s %5s %5s %5s %5s %6s %7s %7s %10s %11s %9s %9s  %s\n", d->name, "green", "gray", "clear", "red",
            "casts", "%MACs", "%cost", "weights", "out_rel_l2", "overflow", "underflow", "worst layer (rel_l2)");
    for (int i = 0; i < d->n; i++) {
        const mpx_sweep_point *p = &d->pts[i];
        if (!p->done) continue;
        char wb[32];
        fprintf(out, "  %-10s %5d %5d %5d %5d %6d %6.1f%% %6.1f%% %10s %11.3g %9lld %9lld  %s (%.3g)\n", d->values[i],
                p->colours[MPX_COLOUR_GREEN], p->colours[MPX_COLOUR_GRAY], p->colours[MPX_COLOUR_CLEAR], p->colours[MPX_COLOUR_RED], p->casts,
                p->low_pct, p->low_cost_pct, mpx_count_str(p->weight_bytes, wb, sizeof wb), p->out_rel_l2, (long long)p->overflow,
                (long long)p->underflow, p->worst, p->worst_rel_l2);
    }
}

static mpx_status plot_text(const mpx_sweep *d, char **out, mpx_error *err) {
    mpx_viz_point p[MPX_SWEEP_MAX_POINTS];
    int n = 0;
    for (int i = 0; i < d->n; i++)
        if (d->pts[i].done)
            p[n++] = (mpx_viz_point){d->values[i], d->pts[i].low_pct, d->pts[i].out_rel_l2, 0};
    const char *names[1] = {d->target};
    char title[2200];
    snprintf(title, sizeof title, "sweep %s: %s", d->name, d->command);
    return mpx_viz_pareto(p, n, names, 1, title, out, err);
}

typedef struct outputs {
    const char *json, *csv, *plot; /* files; NULL for stdout (json, csv) */
    bool want_json, want_csv;
    bool table; /* --table: the table too, beside the outputs asked for */
} outputs;

/* Every output file first written aside (repl_write_file renames into
 * place), then the table or the stdout text. */
static mpx_status emit(mpx_session *s, const mpx_sweep *d, const outputs *o, const char *shard, mpx_error *err) {
    mpx_status st = MPX_OK;
    if (o->plot) {
        char *svg = NULL;
        if (!(st = plot_text(d, &svg, err))) {
            st = repl_write_file(s, o->plot, svg, err);
            free(svg);
        }
        if (!st) fprintf(s->info, "wrote %s\n", o->plot);
    }
    if (!st && o->want_json) {
        char *t = mpx_sweep_json(d, shard);
        if (!t) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        if (o->json) {
            st = repl_write_file(s, o->json, t, err);
            if (!st) fprintf(s->info, "wrote %s\n", o->json);
        } else fprintf(s->out, "%s\n", t);
        free(t);
    }
    if (!st && o->want_csv) {
        char *t = mpx_sweep_csv(d);
        if (!t) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        if (o->csv) {
            st = repl_write_file(s, o->csv, t, err);
            if (!st) fprintf(s->info, "wrote %s\n", o->csv);
        } else fputs(t, s->out);
        free(t);
    }
    /* The table is what a bare sweep prints; asked for anything else (a file
     * included), stdout holds that alone unless --table asks for the table
     * too (JSON on stdout never gets it: it would not parse). */
    bool asked = o->want_json || o->want_csv || o->plot;
    bool stdout_data = (o->want_json && !o->json) || (o->want_csv && !o->csv);
    if (!st && (!asked || (o->table && !stdout_data))) print_table(s->out, d);
    return st;
}

/* --json [f] --csv [f] --plot f --table (sweep's and merge's rows share
 * them; --shard k/n is sweep's, read by its handler). */
static mpx_status outputs_of(const mpx_cmd_args *args, outputs *o, mpx_error *err) {
    const mpx_opt_value *v = args->opt;
    memset(o, 0, sizeof *o);
    o->want_json = v[SWEEP_JSON].given;
    o->json = v[SWEEP_JSON].text;
    o->want_csv = v[SWEEP_CSV].given;
    o->csv = v[SWEEP_CSV].text;
    o->plot = v[SWEEP_PLOT].text;
    o->table = v[SWEEP_TABLE].given;
    if (o->want_json && o->want_csv && (!o->json || !o->csv))
        return mpx_error_set(err, MPX_E_ARG, "--json and --csv together need a file for each");
    return MPX_OK;
}

/* The files, checked before the points run. */
static mpx_status check_outputs(const mpx_session *s, const outputs *o, mpx_error *err) {
    const char *files[3] = {o->json, o->csv, o->plot};
    for (int k = 0; k < 3; k++)
        if (files[k]) {
            mpx_status st = repl_check_target(s, files[k], err);
            if (st) return st;
        }
    return repl_distinct_targets(files, 3, err);
}

/* sweep <name> in v1,v2,... : <command> [options] */
mpx_status repl_cmd_sweep(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    if (!s->plan || !s->hist) return mpx_error_set(err, MPX_E_INVALID, "no plan (load a model first)");
    /* <name> in <values> : <command...>: the plain words (the options are
     * dispatch's) */
    char *const *w = args->word;
    int colon = -1;
    for (int a = 0; a < args->n && colon < 0; a++)
        if (strcmp(w[a], ":") == 0) colon = a;
    if (args->n < 4 || strcmp(w[1], "in") != 0 || colon != 3) return repl_usage_error(err, "sweep", NULL);
    if (args->n == 4) return repl_usage_error(err, "sweep", "no command after ':'");
    char command[2048];
    size_t o = 0;
    for (int a = colon + 1; a < args->n; a++)
        o += (size_t)snprintf(command + o, o < sizeof command ? sizeof command - o : 0, "%s%s", a > colon + 1 ? " " : "",
                              w[a]);
    outputs out;
    if ((st = outputs_of(args, &out, err)) || (st = check_outputs(s, &out, err))) return st;
    int sk = args->opt[SWEEP_SHARD].given ? (int)args->opt[SWEEP_SHARD].i : 0;
    int sn = args->opt[SWEEP_SHARD].given ? (int)args->opt[SWEEP_SHARD].n : 0;
    mpx_sweep *d = malloc(sizeof *d);
    if (!d) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    st = mpx_sweep_define(d, w[0], command, w[2], s->model_path, mpx_history_opts(s->hist)->target, err);
    if (!st) {
        snprintf(d->model_id, sizeof d->model_id, "%s", repl_model_id(s));
        st = repl_session_id(s, d->session_id, sizeof d->session_id, err);
    }
    double t0 = repl_now_ms();
    mpx_explore_host h = repl_explore_host(s, NULL);
    if (!st) st = mpx_sweep_run(d, s->graph, mpx_history_rules(s->hist), mpx_history_opts(s->hist), &h, sk, sn, err);
    if (s->progress) fputs("\r                                                        \r", stderr);
    char shard[32];
    snprintf(shard, sizeof shard, "%d/%d", sk, sn);
    if (!st) st = emit(s, d, &out, sn ? shard : NULL, err);
    int ran = 0;
    for (int i = 0; i < d->n; i++) ran += d->pts[i].done;
    if (!st && !(out.want_json && !out.json) && !(out.want_csv && !out.csv)) {
        if (sn) fprintf(s->info, "  %d of %d point%s (shard %s) in %.0f ms\n", ran, d->n, d->n == 1 ? "" : "s", shard,
                        repl_now_ms() - t0);
        else fprintf(s->info, "  %d point%s in %.0f ms\n", d->n, d->n == 1 ? "" : "s", repl_now_ms() - t0);
    }
    free(d);
    return st;
}

/* ---- merge ------------------------------------------------------------------- */

mpx_status repl_read_text(mpx_session *s, const char *path, char **out, mpx_error *err) {
    mpx_error oerr;
    int fd = mpx_file_open_read(path, false, &oerr);
    char why[1600];
    if (fd < 0) return mpx_error_set(err, oerr.status, "merge: %s", mpx_error_format(&oerr, why, sizeof why));
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return mpx_error_set(err, MPX_E_IO, "merge: cannot read %s", path);
    }
    mpx_status pst = repl_protect(s, path, "a file this session read", err);
    if (pst) {
        fclose(f);
        return pst;
    }
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 65536 > cap) {
            if (cap > (size_t)256 << 20) {
                free(buf);
                fclose(f);
                return mpx_error_set(err, MPX_E_LIMIT, "merge: %s is over 256 MB", path);
            }
            char *g = realloc(buf, cap = cap * 2 + 65536);
            if (!g) {
                free(buf);
                fclose(f);
                return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
            }
            buf = g;
        }
        size_t k = fread(buf + n, 1, cap - n - 1, f);
        n += k;
        if (k == 0) break;
    }
    fclose(f);
    buf[n] = '\0';
    *out = buf;
    return MPX_OK;
}

mpx_status repl_read_json(mpx_session *s, const char *path, cJSON **out, mpx_error *err) {
    char *buf = NULL;
    mpx_status st = repl_read_text(s, path, &buf, err);
    if (st) return st;
    *out = cJSON_Parse(buf);
    free(buf);
    if (!*out) return mpx_error_set(err, MPX_E_PARSE, "merge: %s is not JSON", path);
    return MPX_OK;
}

/* merge a.json b.json ... [--json [f] | --csv [f]] [--plot f] */
mpx_status repl_cmd_merge(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    if (args->argc > 1 && strncmp(args->argv[1], "--", 2) == 0)
        return repl_usage_error(err, "merge", "the shards come first");
    char *const *files = args->word;
    /* Shards of a data-set run (report --json after run --samples k/n) are
     * data_merge.c's. */
    cJSON *first = NULL;
    mpx_status st0 = repl_read_json(s, files[0], &first, err);
    if (st0) return st0;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(first, "kind");
    bool samples = cJSON_IsString(kind) && strcmp(kind->valuestring, "mpx-samples") == 0;
    cJSON_Delete(first);
    if (samples) return repl_merge_samples(s, args, err);
    outputs out;
    mpx_status st = outputs_of(args, &out, err);
    if (!st) st = check_outputs(s, &out, err);
    if (st) return st;
    mpx_sweep *d = calloc(1, sizeof *d);
    if (!d) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int a = 0; a < args->n && !st; a++) {
        char *text = NULL;
        if (!(st = repl_read_text(s, files[a], &text, err))) st = mpx_sweep_merge(d, files[a], text, a == 0, err);
        free(text);
    }
    if (!st) st = mpx_sweep_check_complete(d, err);
    if (!st) st = emit(s, d, &out, NULL, err);
    free(d);
    return st;
}
