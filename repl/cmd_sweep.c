/* cmd_sweep.c - `sweep`: one command tried with each of several values, every
 * point planned and run, the figures side by side; `merge`: the shards of a
 * sweep joined back into one table.
 *
 *   sweep t in 0,64k,256k,1M : colour Conv green when macs >= $t else gray
 *
 * Each point is the session's rules and options plus the command with $name
 * replaced by the value, planned and run as a trial (figures.c): nothing is
 * applied, so the session's rules are the same afterwards. The points run
 * through the session's run cache in order, so the fp32 reference is
 * computed once and each point recomputes only what its plan changes.
 *
 * Sharding: `--shard k/n` runs the points i with i % n == k - 1 and writes
 * its JSON; `merge` (or `mpx merge`) checks that the shards are of one sweep
 * (command, values, model, target) and joins them into the table, CSV, JSON
 * and plot one unsharded run gives. Spreading the shards over cores or
 * machines is the scheduler's job (GNU parallel, Slurm, Kubernetes Jobs). */
#include "repl_internal.h"

#include "mpx_viz.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SWEEP_MAX_POINTS 256

/* One point's figures. */
typedef struct point {
    bool done;
    char value[64];
    int colours[MPX_COLOUR_COUNT];
    int casts;
    double low_pct;
    double low_cost_pct;
    int64_t weight_bytes;
    double out_rel_l2;      /* worst model output */
    char worst[256];        /* worst layer (tensor) and its rel_l2 */
    double worst_rel_l2;
    int64_t overflow, underflow;
    int64_t weights_overflow;
} point;

typedef struct sweep_def {
    char name[64];
    char command[2048];     /* with $name */
    int n;
    char values[SWEEP_MAX_POINTS][64];
    char model[1024];
    char target[32];
    point pts[SWEEP_MAX_POINTS];
} sweep_def;

/* ---- the command with the value in it ------------------------------------- */

/* cmd with every $name (not followed by a name character) replaced by v. */
static mpx_status substitute(const char *cmd, const char *name, const char *v, char *out, size_t n, bool *used,
                             mpx_error *err) {
    size_t o = 0, nl = strlen(name);
    *used = false;
    for (const char *c = cmd; *c;) {
        if (c[0] == '$' && strncmp(c + 1, name, nl) == 0 &&
            !(c[1 + nl] == '_' || (c[1 + nl] >= 'a' && c[1 + nl] <= 'z') || (c[1 + nl] >= 'A' && c[1 + nl] <= 'Z') ||
              (c[1 + nl] >= '0' && c[1 + nl] <= '9'))) {
            size_t vl = strlen(v);
            if (o + vl >= n) break;
            memcpy(out + o, v, vl);
            o += vl;
            c += 1 + nl;
            *used = true;
            continue;
        }
        if (c[0] == '$')
            return mpx_error_set(err, MPX_E_ARG, "sweep: \"%.*s\" is not the swept name (sweep %s in ...)",
                                 (int)strcspn(c, " \t,"), c, name);
        if (o + 1 >= n) break;
        out[o++] = *c++;
    }
    if (o + 1 >= n) return mpx_error_set(err, MPX_E_ARG, "sweep: the command is too long");
    out[o] = '\0';
    return MPX_OK;
}

/* The rules and options of one point: the session's plus the command, which
 * must change the plan (colour, color, accum, target, keep-io). */
static mpx_status point_state(mpx_session *s, const char *line, mpx_rules **r, mpx_plan_opts *o, mpx_error *err) {
    *r = mpx_rules_copy(mpx_history_rules(s->hist));
    *o = *mpx_history_opts(s->hist);
    if (!*r) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    char word[32];
    size_t k = strcspn(line, " \t");
    snprintf(word, sizeof word, "%.*s", (int)(k < sizeof word ? k : sizeof word - 1), line);
    const char *rest = line + k + strspn(line + k, " \t");
    mpx_status st = MPX_OK;
    if (strcmp(word, "colour") == 0 || strcmp(word, "color") == 0 || strcmp(word, "accum") == 0) {
        st = mpx_rules_add(*r, line, s->graph, err);
    } else if (strcmp(word, "target") == 0) {
        char f[32];
        snprintf(f, sizeof f, "%.*s", (int)strcspn(rest, " \t"), rest);
        o->target = mpx_format_by_name(f);
        if (!o->target || o->target->kind == MPX_FMT_FP32)
        {
            char hint[128];
            st = mpx_error_set(err, MPX_E_ARG, "sweep: unknown target \"%s\"%s", f, repl_format_tail(f, true, hint, sizeof hint));
        }
        if (!st && strpbrk(rest, " \t")) st = mpx_error_set(err, MPX_E_ARG, "sweep: target takes one format here");
    } else if (strcmp(word, "keep-io") == 0) {
        if (strcmp(rest, "on") == 0) o->keep_io = true;
        else if (strcmp(rest, "off") == 0) o->keep_io = false;
        else st = mpx_error_set(err, MPX_E_ARG, "sweep: keep-io on|off, not \"%s\"", rest);
    } else {
        st = mpx_error_set(err, MPX_E_ARG,
                           "sweep: the command must change the plan (colour, color, accum, target, keep-io), not \"%s\"",
                           word);
    }
    if (st) {
        mpx_rules_free(*r);
        *r = NULL;
    }
    return st;
}

static void record(const mpx_session *s, const mpx_plan *p, const mpx_compare *c, point *pt) {
    for (int k = 0; k < MPX_COLOUR_COUNT; k++) pt->colours[k] = p->counts.nodes[k];
    pt->casts = p->counts.casts;
    pt->low_pct = p->counts.low_macs_pct;
    pt->low_cost_pct = p->counts.low_cost_pct;
    pt->weight_bytes = p->counts.weight_bytes_after;
    repl_check_weights(s, p, NULL, NULL, &pt->weights_overflow, NULL);
    mpx_run_totals t = mpx_compare_totals(c);
    pt->out_rel_l2 = t.worst_out ? t.out_rel_l2 : NAN;
    pt->overflow = t.overflow;
    pt->underflow = t.underflow;
    const mpx_layer *w = mpx_compare_worst_layer(c, MPX_WORST_ANY);
    pt->worst_rel_l2 = w ? w->m.rel_l2 : NAN;
    snprintf(pt->worst, sizeof pt->worst, "%s", w ? p->g->tensors[w->tensor]->name : "-");
    pt->done = true;
}

/* ---- output: table, CSV, JSON, plot ------------------------------------------ */

static void print_table(FILE *out, const sweep_def *d) {
    fprintf(out, "sweep %s: %s (%s)\n", d->name, d->command, d->target);
    fprintf(out, "  %-10s %5s %5s %5s %5s %6s %7s %7s %10s %11s %9s %9s  %s\n", d->name, "green", "gray", "clear", "red",
            "casts", "%MACs", "%cost", "weights", "out_rel_l2", "overflow", "underflow", "worst layer (rel_l2)");
    for (int i = 0; i < d->n; i++) {
        const point *p = &d->pts[i];
        if (!p->done) continue;
        char wb[32];
        fprintf(out, "  %-10s %5d %5d %5d %5d %6d %6.1f%% %6.1f%% %10s %11.3g %9lld %9lld  %s (%.3g)\n", d->values[i],
                p->colours[MPX_COLOUR_GREEN], p->colours[MPX_COLOUR_GRAY], p->colours[MPX_COLOUR_CLEAR], p->colours[MPX_COLOUR_RED], p->casts,
                p->low_pct, p->low_cost_pct, mpx_count_str(p->weight_bytes, wb, sizeof wb), p->out_rel_l2, (long long)p->overflow,
                (long long)p->underflow, p->worst, p->worst_rel_l2);
    }
}

static char *csv_text(const sweep_def *d) {
    size_t cap = 256 + (size_t)d->n * 512, o = 0;
    char *t = malloc(cap);
    if (!t) return NULL;
    o += (size_t)snprintf(t + o, cap - o,
                          "%s,green,gray,clear,red,casts,low_macs_pct,low_cost_pct,weight_bytes,weights_overflow,output_rel_l2,"
                          "overflow,underflow,worst_layer,worst_rel_l2\n", d->name);
    for (int i = 0; i < d->n && o < cap; i++) {
        const point *p = &d->pts[i];
        if (!p->done) continue;
        o += (size_t)snprintf(t + o, cap - o, "%s,%d,%d,%d,%d,%d,%.17g,%.17g,%lld,%lld,%.17g,%lld,%lld,\"%s\",%.17g\n",
                              d->values[i], p->colours[MPX_COLOUR_GREEN], p->colours[MPX_COLOUR_GRAY], p->colours[MPX_COLOUR_CLEAR],
                              p->colours[MPX_COLOUR_RED], p->casts, p->low_pct, p->low_cost_pct, (long long)p->weight_bytes,
                              (long long)p->weights_overflow, p->out_rel_l2, (long long)p->overflow,
                              (long long)p->underflow, p->worst, p->worst_rel_l2);
    }
    return t;
}

/* Numbers with every digit (cJSON's own printing may drop the last bit), so
 * merged shards equal an unsharded run exactly. */
static void add_exact(cJSON *o, const char *k, double v) {
    char b[64];
    if (isfinite(v)) snprintf(b, sizeof b, "%.17g", v);
    else snprintf(b, sizeof b, "null");
    cJSON_AddItemToObject(o, k, cJSON_CreateRaw(b));
}

static char *json_text(const sweep_def *d, const char *shard) {
    cJSON *root = cJSON_CreateObject(), *sw = cJSON_AddObjectToObject(root, "sweep");
    cJSON_AddStringToObject(sw, "name", d->name);
    cJSON_AddStringToObject(sw, "command", d->command);
    cJSON *vals = cJSON_AddArrayToObject(sw, "values");
    for (int i = 0; i < d->n; i++) cJSON_AddItemToArray(vals, cJSON_CreateString(d->values[i]));
    cJSON_AddStringToObject(sw, "model", d->model);
    cJSON_AddStringToObject(sw, "target", d->target);
    if (shard) cJSON_AddStringToObject(sw, "shard", shard);
    cJSON *pts = cJSON_AddArrayToObject(root, "points");
    for (int i = 0; i < d->n; i++) {
        const point *p = &d->pts[i];
        if (!p->done) continue;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "index", i);
        cJSON_AddStringToObject(e, "value", d->values[i]);
        for (int k = 1; k < MPX_COLOUR_COUNT; k++)
            cJSON_AddNumberToObject(e, mpx_colour_name((mpx_colour)k), p->colours[k]);
        cJSON_AddNumberToObject(e, "casts", p->casts);
        add_exact(e, "low_macs_pct", p->low_pct);
        add_exact(e, "low_cost_pct", p->low_cost_pct);
        cJSON_AddNumberToObject(e, "weight_bytes", (double)p->weight_bytes);
        cJSON_AddNumberToObject(e, "weights_overflow", (double)p->weights_overflow);
        add_exact(e, "output_rel_l2", p->out_rel_l2);
        cJSON_AddNumberToObject(e, "overflow", (double)p->overflow);
        cJSON_AddNumberToObject(e, "underflow", (double)p->underflow);
        cJSON_AddStringToObject(e, "worst_layer", p->worst);
        add_exact(e, "worst_rel_l2", p->worst_rel_l2);
        cJSON_AddItemToArray(pts, e);
    }
    char *t = cJSON_Print(root);
    cJSON_Delete(root);
    return t;
}

static mpx_status plot_text(const sweep_def *d, char **out, mpx_error *err) {
    mpx_viz_point p[SWEEP_MAX_POINTS];
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
static mpx_status emit(mpx_session *s, const sweep_def *d, const outputs *o, const char *shard, mpx_error *err) {
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
        char *t = json_text(d, shard);
        if (!t) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        if (o->json) {
            st = repl_write_file(s, o->json, t, err);
            if (!st) fprintf(s->info, "wrote %s\n", o->json);
        } else fprintf(s->out, "%s\n", t);
        free(t);
    }
    if (!st && o->want_csv) {
        char *t = csv_text(d);
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

/* --json [f] --csv [f] --plot f --table (and --shard k/n for sweep) */
static mpx_status parse_outputs(int argc, char **argv, int from, outputs *o, int *shard_k, int *shard_n,
                                mpx_error *err) {
    memset(o, 0, sizeof *o);
    for (int a = from; a < argc; a++) {
        bool has_arg = a + 1 < argc && strncmp(argv[a + 1], "--", 2) != 0;
        if (strcmp(argv[a], "--json") == 0) {
            o->want_json = true;
            if (has_arg) o->json = argv[++a];
        } else if (strcmp(argv[a], "--csv") == 0) {
            o->want_csv = true;
            if (has_arg) o->csv = argv[++a];
        } else if (strcmp(argv[a], "--plot") == 0 && has_arg) {
            o->plot = argv[++a];
        } else if (strcmp(argv[a], "--table") == 0) {
            o->table = true;
        } else if (shard_k && strcmp(argv[a], "--shard") == 0 && has_arg) {
            mpx_status st = repl_parse_shard(argv[++a], "--shard", shard_k, shard_n, err);
            if (st) return st;
        } else {
            return repl_usage_error(err, argv[0], "unexpected \"%s\"", argv[a]);
        }
    }
    if (o->want_json && o->want_csv && (!o->json || !o->csv))
        return mpx_error_set(err, MPX_E_ARG, "--json and --csv together need a file for each");
    return MPX_OK;
}

/* sweep <name> in v1,v2,... : <command> [options] */
MPX_CMD(repl_cmd_sweep) {
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    if (!s->plan || !s->hist) return mpx_error_set(err, MPX_E_INVALID, "no plan (load a model first)");
    int colon = -1;
    for (int a = 1; a < argc && colon < 0; a++)
        if (strcmp(argv[a], ":") == 0) colon = a;
    if (argc < 6 || strcmp(argv[2], "in") != 0 || colon != 4)
        return repl_usage_error(err, argv[0], NULL);
    sweep_def *d = calloc(1, sizeof *d);
    if (!d) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    snprintf(d->name, sizeof d->name, "%s", argv[1]);
    /* The command: the words after ':' up to the first --option. */
    int end = colon + 1;
    size_t o = 0;
    for (; end < argc && strncmp(argv[end], "--", 2) != 0; end++)
        o += (size_t)snprintf(d->command + o, o < sizeof d->command ? sizeof d->command - o : 0, "%s%s",
                              end > colon + 1 ? " " : "", argv[end]);
    outputs out;
    int sk = 0, sn = 0;
    if (end == colon + 1) st = repl_usage_error(err, argv[0], "no command after ':'");
    if (!st) st = parse_outputs(argc, argv, end, &out, &sk, &sn, err);
    /* The values. */
    char vals[4096];
    snprintf(vals, sizeof vals, "%s", argv[3]);
    for (char *save = NULL, *v = strtok_r(vals, ",", &save); v && !st; v = strtok_r(NULL, ",", &save)) {
        if (d->n == SWEEP_MAX_POINTS) st = mpx_error_set(err, MPX_E_LIMIT, "sweep: more than %d values", SWEEP_MAX_POINTS);
        else if (strlen(v) >= sizeof d->values[0]) st = mpx_error_set(err, MPX_E_ARG, "sweep: value \"%.20s...\" too long", v);
        else snprintf(d->values[d->n++], sizeof d->values[0], "%s", v);
    }
    if (!st && d->n == 0) st = mpx_error_set(err, MPX_E_ARG, "sweep: no values (sweep %s in v1,v2,... : ...)", d->name);
    snprintf(d->model, sizeof d->model, "%s", s->model_path);
    snprintf(d->target, sizeof d->target, "%s", mpx_format_name(mpx_history_opts(s->hist)->target));
    /* Check every point's command before running any: a bad value costs nothing. */
    for (int i = 0; i < d->n && !st; i++) {
        char line[2200];
        bool used;
        mpx_rules *r = NULL;
        mpx_plan_opts po;
        if ((st = substitute(d->command, d->name, d->values[i], line, sizeof line, &used, err))) break;
        if (!used) {
            st = mpx_error_set(err, MPX_E_ARG, "sweep: the command does not use $%s", d->name);
            break;
        }
        if ((st = point_state(s, line, &r, &po, err))) {
            char m[sizeof err->msg];
            snprintf(m, sizeof m, "%s", err->msg);
            st = mpx_error_set(err, st, "sweep %s = %s: %s", d->name, d->values[i], m);
        }
        mpx_rules_free(r);
    }
    double t0 = repl_now_ms();
    for (int i = 0; i < d->n && !st; i++) {
        if (sn && i % sn != sk - 1) continue;
        char line[2200];
        bool used;
        mpx_rules *r = NULL;
        mpx_plan_opts po;
        mpx_plan *p = NULL;
        mpx_compare *c = NULL;
        substitute(d->command, d->name, d->values[i], line, sizeof line, &used, err);
        if (s->progress) fprintf(stderr, "\r  sweep: %s = %s (%d of %d)      ", d->name, d->values[i], i + 1, d->n);
        st = point_state(s, line, &r, &po, err);
        if (!st) st = repl_trial(s, r, &po, true, false, false, NULL, NULL, &p, &c, err);
        if (st) {
            char m[sizeof err->msg];
            snprintf(m, sizeof m, "%s", err->msg);
            st = mpx_error_set(err, st, "sweep %s = %s: %s (nothing kept)", d->name, d->values[i], m);
        } else record(s, p, c, &d->pts[i]);
        mpx_rules_free(r);
        mpx_plan_free(p);
        mpx_compare_free(c);
    }
    if (s->progress) fputs("\r                                                        \r", stderr);
    char shard[32];
    snprintf(shard, sizeof shard, "%d/%d", sk, sn);
    if (!st) st = emit(s, d, &out, sn ? shard : NULL, err);
    if (!st && !(out.want_json && !out.json) && !(out.want_csv && !out.csv))
        fprintf(s->info, "  %d point%s in %.0f ms%s\n", d->n, d->n == 1 ? "" : "s", repl_now_ms() - t0,
                sn ? " (this shard's only)" : "");
    free(d);
    return st;
}

/* ---- merge ------------------------------------------------------------------- */

mpx_status repl_read_json(mpx_session *s, const char *path, cJSON **out, mpx_error *err) {
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
    *out = cJSON_Parse(buf);
    free(buf);
    if (!*out) return mpx_error_set(err, MPX_E_PARSE, "merge: %s is not JSON", path);
    return MPX_OK;
}

static const char *str_of(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num_of(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* One shard into d (the first defines the sweep; later ones must match). */
static mpx_status merge_one(const char *path, const cJSON *root, sweep_def *d, bool first, mpx_error *err) {
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(root, "sweep");
    const cJSON *vals = sw ? cJSON_GetObjectItemCaseSensitive(sw, "values") : NULL;
    const cJSON *pts = cJSON_GetObjectItemCaseSensitive(root, "points");
    const char *name = sw ? str_of(sw, "name") : NULL, *cmd = sw ? str_of(sw, "command") : NULL;
    const char *model = sw ? str_of(sw, "model") : NULL, *target = sw ? str_of(sw, "target") : NULL;
    if (!name || !cmd || !model || !target || !cJSON_IsArray(vals) || !cJSON_IsArray(pts))
        return mpx_error_set(err, MPX_E_INVALID, "merge: %s is not the JSON of a sweep (sweep ... --json <file>)", path);
    int nv = cJSON_GetArraySize(vals);
    if (first) {
        if (nv < 1 || nv > SWEEP_MAX_POINTS) return mpx_error_set(err, MPX_E_INVALID, "merge: %s: %d values", path, nv);
        snprintf(d->name, sizeof d->name, "%s", name);
        snprintf(d->command, sizeof d->command, "%s", cmd);
        snprintf(d->model, sizeof d->model, "%s", model);
        snprintf(d->target, sizeof d->target, "%s", target);
        d->n = nv;
        for (int i = 0; i < nv; i++) {
            const cJSON *v = cJSON_GetArrayItem(vals, i);
            snprintf(d->values[i], sizeof d->values[i], "%s", cJSON_IsString(v) ? v->valuestring : "?");
        }
    } else {
        bool same = strcmp(d->name, name) == 0 && strcmp(d->command, cmd) == 0 && nv == d->n;
        for (int i = 0; same && i < nv; i++) {
            const cJSON *v = cJSON_GetArrayItem(vals, i);
            same = cJSON_IsString(v) && strcmp(v->valuestring, d->values[i]) == 0;
        }
        if (!same) return mpx_error_set(err, MPX_E_INVALID, "merge: %s is another sweep (%s: %s)", path, name, cmd);
        if (strcmp(d->model, model) != 0)
            return mpx_error_set(err, MPX_E_INVALID, "merge: %s is a sweep of another model (%s, not %s)", path, model,
                                 d->model);
        if (strcmp(d->target, target) != 0)
            return mpx_error_set(err, MPX_E_INVALID, "merge: %s is a sweep with target %s, not %s", path, target,
                                 d->target);
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, pts) {
        double idx = num_of(e, "index");
        if (!(idx >= 0 && idx < d->n) || idx != (double)(int)idx)
            return mpx_error_set(err, MPX_E_INVALID, "merge: %s: a point with a bad index", path);
        point *p = &d->pts[(int)idx];
        if (p->done) return mpx_error_set(err, MPX_E_INVALID, "merge: %s: point %s = %s is in two shards", path, d->name,
                                          d->values[(int)idx]);
        for (int k = 1; k < MPX_COLOUR_COUNT; k++) p->colours[k] = (int)num_of(e, mpx_colour_name((mpx_colour)k));
        p->casts = (int)num_of(e, "casts");
        p->low_pct = num_of(e, "low_macs_pct");
        p->low_cost_pct = num_of(e, "low_cost_pct");
        p->weight_bytes = (int64_t)num_of(e, "weight_bytes");
        p->weights_overflow = (int64_t)num_of(e, "weights_overflow");
        p->out_rel_l2 = num_of(e, "output_rel_l2");
        p->overflow = (int64_t)num_of(e, "overflow");
        p->underflow = (int64_t)num_of(e, "underflow");
        const char *w = str_of(e, "worst_layer");
        snprintf(p->worst, sizeof p->worst, "%s", w ? w : "-");
        p->worst_rel_l2 = num_of(e, "worst_rel_l2");
        p->done = true;
    }
    return MPX_OK;
}

/* merge a.json b.json ... [--json [f] | --csv [f]] [--plot f] */
MPX_CMD(repl_cmd_merge) {
    int files = 1;
    while (files < argc && strncmp(argv[files], "--", 2) != 0) files++;
    if (files == 1) return repl_usage_error(err, argv[0], "the shards come first");
    /* Shards of a data-set run (report --json after run --samples k/n) are
     * data_merge.c's. */
    cJSON *first = NULL;
    mpx_status st0 = repl_read_json(s, argv[1], &first, err);
    if (st0) return st0;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(first, "kind");
    bool samples = cJSON_IsString(kind) && strcmp(kind->valuestring, "mpx-samples") == 0;
    cJSON_Delete(first);
    if (samples) return repl_merge_samples(s, argc, argv, err);
    outputs out;
    mpx_status st = parse_outputs(argc, argv, files, &out, NULL, NULL, err);
    if (st) return st;
    sweep_def *d = calloc(1, sizeof *d);
    if (!d) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int a = 1; a < files && !st; a++) {
        cJSON *root = NULL;
        if (!(st = repl_read_json(s, argv[a], &root, err))) st = merge_one(argv[a], root, d, a == 1, err);
        cJSON_Delete(root);
    }
    for (int i = 0; i < d->n && !st; i++)
        if (!d->pts[i].done)
            st = mpx_error_set(err, MPX_E_INVALID, "merge: no shard has point %s = %s (a shard is missing)", d->name,
                               d->values[i]);
    if (!st) st = emit(s, d, &out, NULL, err);
    free(d);
    return st;
}
