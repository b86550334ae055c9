/* cmd_stats.c - `stats`: the range of every tensor of the fp32 reference over
 * the inputs (every sample of a data set), and saved ranges for planning.
 *
 * Calibration is what range rules (`when absmax > ...`) need: the largest
 * value a tensor takes over the data the model will see. Each sample runs
 * the fp32 reference streaming, each value is read once as it is made
 * (mpx_run_opts.on_value) and freed; min, max and |x| percentiles accumulate
 * per tensor. Percentiles come from a histogram of |x| with 8 bins per
 * power of two (a bin's upper edge is reported: at most 9% above the true
 * value, never below it), so memory does not grow with the samples.
 * `stats --save` writes the ranges as JSON; `stats --load` gives them to the
 * plan's absmax rules without running anything. */
#include "repl_internal.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* |x| from 2^-150 to 2^128, 8 bins per octave. */
#define OCT_LO (-150)
#define OCT_N 278
#define SUB 8
#define NBINS (OCT_N * SUB)

typedef struct tstat {
    bool seen;
    double min, max, absmax;
    int64_t n, zeros, nonfinite;
    uint32_t *hist; /* [NBINS] */
} tstat;

typedef struct stats_ctx {
    tstat *t; /* [n_tensors] */
    bool nomem;
} stats_ctx;

static int bin_of(double a) {
    int e;
    double m = frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    int oct = e - OCT_LO;
    if (oct < 0) return 0;
    if (oct >= OCT_N) return NBINS - 1;
    int sub = (int)((m - 0.5) * 2 * SUB);
    return oct * SUB + (sub < SUB ? sub : SUB - 1);
}

/* The upper edge of bin b. */
static double bin_top(int b) {
    int oct = b / SUB, sub = b % SUB;
    return ldexp(0.5 + (sub + 1) * (0.5 / SUB), oct + OCT_LO);
}

static void on_value(void *ctx, const mpx_tensor *tensor, const mpx_value *v) {
    stats_ctx *x = ctx;
    tstat *t = &x->t[tensor->index];
    if (!t->hist && !(t->hist = calloc(NBINS, sizeof *t->hist))) {
        x->nomem = true;
        return;
    }
    if (!t->seen) t->min = INFINITY, t->max = -INFINITY, t->seen = true;
    for (int64_t i = 0; i < v->n; i++) {
        double a = v->f[i];
        if (!isfinite(a)) {
            t->nonfinite++;
            continue;
        }
        if (a < t->min) t->min = a;
        if (a > t->max) t->max = a;
        a = fabs(a);
        if (a > t->absmax) t->absmax = a;
        if (a == 0) t->zeros++;
        else t->hist[bin_of(a)]++;
    }
    t->n += v->n;
}

/* The p-quantile (0..1) of |x| over the finite values: nearest rank, from the
 * histogram (zeros below every bin). */
static double quantile(const tstat *t, double p) {
    int64_t finite = t->n - t->nonfinite;
    if (finite <= 0) return NAN;
    int64_t rank = (int64_t)ceil(p * (double)finite), cum = t->zeros;
    if (rank <= cum) return 0;
    for (int b = 0; b < NBINS; b++) {
        cum += t->hist[b];
        if (cum >= rank) return fmin(bin_top(b), t->absmax);
    }
    return t->absmax;
}

static void free_stats(const mpx_graph *g, tstat *t) {
    if (!t) return;
    for (int i = 0; i < g->n_tensors; i++) free(t[i].hist);
    free(t);
}

/* Runs the fp32 reference on every sample (or the one input set). */
static mpx_status gather(mpx_session *s, tstat **out, int *n_samples, mpx_error *err) {
    const mpx_graph *g = s->graph;
    stats_ctx x = {calloc((size_t)(g->n_tensors ? g->n_tensors : 1), sizeof(tstat)), false};
    if (!x.t) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    int n = s->data ? repl_data_count(s->data) : 1;
    mpx_status st = MPX_OK;
    for (int k = 0; k < n && !st; k++) {
        if (s->cancel && *s->cancel) {
            st = mpx_error_set(err, MPX_E_CANCELLED, "stats: cancelled at sample %d of %d", k + 1, n);
            break;
        }
        if (s->progress && n > 1) fprintf(stderr, "\r  stats: sample %d of %d   ", k + 1, n);
        mpx_value *inputs = NULL;
        if ((st = s->data ? repl_data_inputs(s, k, &inputs, err) : repl_make_inputs(s, &inputs, err))) break;
        mpx_run_opts o = {.stream = true, .on_value = on_value, .on_value_ctx = &x};
        mpx_run *r = NULL;
        st = mpx_run_graph(g, NULL, inputs, &o, &r, err);
        mpx_run_free(r);
        repl_free_inputs(s, inputs);
        if (!st && x.nomem) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory for the histograms");
        if (st && s->data && st != MPX_E_CANCELLED) repl_error_sample(err, k, n, repl_data_label(s->data, k));
    }
    if (s->progress && n > 1) fputs("\r                              \r", stderr);
    if (st) {
        free_stats(g, x.t);
        return st;
    }
    *out = x.t;
    *n_samples = n;
    return MPX_OK;
}

static char *ranges_json(const mpx_session *s, const tstat *t, int n_samples) {
    const mpx_graph *g = s->graph;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "kind", "mpx-ranges");
    cJSON_AddStringToObject(root, "model", s->model_path);
    cJSON_AddNumberToObject(root, "samples", n_samples);
    cJSON *arr = cJSON_AddArrayToObject(root, "tensors");
    for (int i = 0; i < g->n_tensors; i++) {
        if (!t[i].seen) continue;
        const mpx_tensor *tt = g->tensors[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "tensor", tt->name);
        cJSON_AddStringToObject(e, "node", tt->producer ? tt->producer->name : "");
        repl_json_exact(e, "min", t[i].min, NULL);
        repl_json_exact(e, "max", t[i].max, NULL);
        repl_json_exact(e, "absmax", t[i].absmax, NULL);
        repl_json_exact(e, "p99", quantile(&t[i], 0.99), NULL);
        repl_json_exact(e, "p999", quantile(&t[i], 0.999), NULL);
        cJSON_AddNumberToObject(e, "n", (double)t[i].n);
        cJSON_AddNumberToObject(e, "zeros", (double)t[i].zeros);
        cJSON_AddNumberToObject(e, "nonfinite", (double)t[i].nonfinite);
        cJSON_AddItemToArray(arr, e);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

/* absmax per node (its outputs' largest) from per-tensor values. */
static double *node_absmax(const mpx_graph *g, const double *tensor_absmax) {
    double *a = malloc((size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof *a);
    if (!a) return NULL;
    for (int i = 0; i < g->n_nodes; i++) {
        a[i] = NAN;
        for (int j = 0; j < g->nodes[i]->n_outputs; j++) {
            const mpx_tensor *t = g->nodes[i]->outputs[j];
            if (t && !isnan(tensor_absmax[t->index]) && (isnan(a[i]) || tensor_absmax[t->index] > a[i]))
                a[i] = tensor_absmax[t->index];
        }
    }
    return a;
}

/* The absmax rules of the plan now read a (taken). */
static mpx_status use_absmax(mpx_session *s, double *a, mpx_error *err) {
    double *old = s->absmax;
    s->absmax = a;
    mpx_status st = repl_replan(s, false, err);
    if (st) {
        s->absmax = old;
        free(a);
        return st;
    }
    free(old);
    return MPX_OK;
}

static mpx_status load_ranges(mpx_session *s, const char *path, mpx_error *err) {
    const mpx_graph *g = s->graph;
    cJSON *root = NULL;
    mpx_status st = repl_read_json(s, path, &root, err);
    if (st) return st;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(root, "kind");
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "tensors");
    double *ta = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *ta);
    if (!ta) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    else if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "mpx-ranges") != 0 || !cJSON_IsArray(arr))
        st = mpx_error_set(err, MPX_E_INVALID, "%s is not a ranges file (stats --save writes those)", path);
    for (int i = 0; !st && i < g->n_tensors; i++) ta[i] = NAN;
    int used = 0, k = 0;
    for (const cJSON *e = arr ? arr->child : NULL; !st && e; e = e->next, k++) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "tensor");
        const cJSON *am = cJSON_GetObjectItemCaseSensitive(e, "absmax");
        if (!cJSON_IsString(name) || !(cJSON_IsNumber(am) || cJSON_IsString(am))) {
            st = mpx_error_set(err, MPX_E_INVALID, "%s: tensors[%d] lacks its tensor name or absmax", path, k);
            break;
        }
        int ti = -1;
        for (int i = 0; i < g->n_tensors && ti < 0; i++)
            if (strcmp(g->tensors[i]->name, name->valuestring) == 0) ti = i;
        if (ti < 0) {
            st = mpx_error_set(err, MPX_E_INVALID, "%s: tensor %s is not in %s (ranges of another model?)", path,
                               name->valuestring, s->model_path);
            break;
        }
        ta[ti] = cJSON_IsNumber(am) ? am->valuedouble : INFINITY;
        used++;
    }
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(root, "samples");
    int n_samples = cJSON_IsNumber(ns) ? (int)ns->valuedouble : 0;
    cJSON_Delete(root);
    double *na = st ? NULL : node_absmax(g, ta);
    free(ta);
    if (!st && !na) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    if (st) return st;
    if ((st = use_absmax(s, na, err))) return st;
    fprintf(s->info, "stats: ranges of %d tensors from %s (%d sample%s); absmax rules use them\n", used, path, n_samples,
            n_samples == 1 ? "" : "s");
    return MPX_OK;
}

static const tstat *sort_t; /* qsort has no context argument in C11 */
static int cmp_absmax(const void *a, const void *b) {
    double x = sort_t[*(const int *)a].absmax, y = sort_t[*(const int *)b].absmax;
    return x < y ? 1 : x > y ? -1 : *(const int *)a - *(const int *)b;
}

/* stats [--top <n> | --all] [--save <ranges.json>] | stats --load <ranges.json> */
MPX_CMD(repl_cmd_stats) {
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    const char *save = NULL;
    int top = s->report_top;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--load") == 0) {
            if (argc != 3) return repl_usage_error(err, argv[0], "--load goes alone");
            return load_ranges(s, argv[a + 1], err);
        }
        if (strcmp(argv[a], "--save") == 0) save = argv[++a];
        else if (strcmp(argv[a], "--all") == 0) top = -1;
        else if (strcmp(argv[a], "--top") == 0) {
            double v;
            if ((st = mpx_explore_parse_number(argv[++a], "--top", &v, err))) return st;
            if (v < 1 || v != (double)(int)v) return mpx_error_set(err, MPX_E_ARG, "--top %s: a count of rows", argv[a]);
            top = (int)v;
        }
    }
    const mpx_graph *g = s->graph;
    tstat *t = NULL;
    int n_samples = 0;
    if ((st = gather(s, &t, &n_samples, err))) return st;
    /* Save first: a failed write leaves the session as it was. */
    if (save) {
        char *text = ranges_json(s, t, n_samples);
        st = text ? repl_write_file(s, save, text, err) : mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        free(text);
        if (st) {
            free_stats(g, t);
            return st;
        }
    }
    double *ta = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *ta);
    int *order = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *order);
    int n = 0;
    if (!ta || !order) {
        free(ta), free(order);
        free_stats(g, t);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    for (int i = 0; i < g->n_tensors; i++) {
        ta[i] = t[i].seen ? t[i].absmax : NAN;
        if (t[i].seen) order[n++] = i;
    }
    sort_t = t;
    qsort(order, (size_t)n, sizeof *order, cmp_absmax);
    const mpx_format *lowf = s->plan->opts.target ? s->plan->opts.target : mpx_format_by_name("fp16");
    double maxf = lowf ? (double)lowf->max_finite : FLT_MAX;
    int over = 0;
    for (int i = 0; i < n; i++) over += t[order[i]].absmax > maxf;
    fprintf(s->out, "stats: fp32 reference over %d sample%s, %d tensors; %d exceed %s's largest finite (%.6g)\n", n_samples,
            n_samples == 1 ? "" : "s", n, over, mpx_format_name(lowf), maxf);
    fprintf(s->out, "%-30s %-14s %11s %11s %11s %11s %11s\n", "tensor", "op", "min", "max", "absmax", "p99 |x|", "p99.9 |x|");
    int rows = top < 0 || top > n ? n : top;
    for (int r = 0; r < rows; r++) {
        const tstat *x = &t[order[r]];
        const mpx_tensor *tt = g->tensors[order[r]];
        const char *nm = tt->name;
        size_t len = strlen(nm);
        char name[64];
        if (len > 30) snprintf(name, sizeof name, "...%s", nm + len - 27);
        else snprintf(name, sizeof name, "%s", nm);
        fprintf(s->out, "%-30s %-14s %11.4g %11.4g %11.4g %11.4g %11.4g%s\n", name, tt->producer ? tt->producer->op_type : "-",
                x->min, x->max, x->absmax, quantile(x, 0.99), quantile(x, 0.999), x->absmax > maxf ? "  OVER" : "");
    }
    if (save) fprintf(s->info, "wrote %s\n", save);
    free_stats(g, t);
    free(order);
    double *na = node_absmax(g, ta);
    free(ta);
    if (!na) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    return use_absmax(s, na, err);
}
