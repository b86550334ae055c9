/* stats.c - the range of every tensor of the fp32 reference over the
 * inputs a program runs (every sample of a data set), and saved ranges for
 * planning.
 *
 * Calibration is what range rules (`when absmax > ...`) need: the largest
 * value a tensor takes over the data the model will see. Each run is the
 * fp32 reference streaming, each value read once as it is made
 * (mpx_run_opts.on_value) and freed; min, max and |x| percentiles
 * accumulate per tensor. Percentiles come from a histogram of |x| with 8
 * bins per power of two (a bin's upper edge is reported: at most 9% above
 * the true value, never below it), so memory does not grow with the
 * samples. */
#include "mpx_explore.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* |x| from 2^-150 to 2^128, 8 bins per octave. */
#define OCT_LO (-150)
#define OCT_N 278
#define SUB 8
#define NBINS (OCT_N * SUB)

struct mpx_ranges {
    const mpx_graph *g;
    mpx_range *t;      /* [n_tensors] */
    uint32_t **hist;   /* [n_tensors], each [NBINS] once the tensor is seen */
    int samples;
    bool nomem;
};

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
    mpx_ranges *x = ctx;
    mpx_range *t = &x->t[tensor->index];
    uint32_t **hist = &x->hist[tensor->index];
    if (!*hist && !(*hist = calloc(NBINS, sizeof **hist))) {
        x->nomem = true;
        return;
    }
    if (!t->seen) t->min = INFINITY, t->max = -INFINITY, t->seen = true;
    for (int64_t i = 0; i < v->n; i++) {
        double a = v->d ? v->d[i] : (double)v->f[i];
        if (!isfinite(a)) {
            t->nonfinite++;
            continue;
        }
        if (a < t->min) t->min = a;
        if (a > t->max) t->max = a;
        a = fabs(a);
        if (a > t->absmax) t->absmax = a;
        if (a == 0) t->zeros++;
        else (*hist)[bin_of(a)]++;
    }
    t->n += v->n;
}

/* The p-quantile (0..1) of |x| over the finite values: nearest rank, from the
 * histogram (zeros below every bin). */
double mpx_ranges_quantile(const mpx_ranges *r, int tensor, double p) {
    const mpx_range *t = &r->t[tensor];
    const uint32_t *hist = r->hist[tensor];
    if (!t->seen || !hist) return NAN;
    int64_t finite = t->n - t->nonfinite;
    if (finite <= 0) return NAN;
    int64_t rank = (int64_t)ceil(p * (double)finite), cum = t->zeros;
    if (rank <= cum) return 0;
    for (int b = 0; b < NBINS; b++) {
        cum += hist[b];
        if (cum >= rank) return fmin(bin_top(b), t->absmax);
    }
    return t->absmax;
}

double *mpx_ranges_node_absmax(const mpx_graph *g, const double *tensor_absmax) {
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

mpx_ranges *mpx_ranges_new(const mpx_graph *g) {
    mpx_ranges *r = calloc(1, sizeof *r);
    size_t nt = (size_t)(g->n_tensors ? g->n_tensors : 1);
    if (r) r->g = g, r->t = calloc(nt, sizeof *r->t), r->hist = calloc(nt, sizeof *r->hist);
    if (r && (!r->t || !r->hist)) {
        mpx_ranges_free(r);
        return NULL;
    }
    return r;
}

void mpx_ranges_free(mpx_ranges *r) {
    if (!r) return;
    for (int i = 0; r->hist && i < r->g->n_tensors; i++) free(r->hist[i]);
    free(r->hist);
    free(r->t);
    free(r);
}

mpx_status mpx_ranges_add_run(mpx_ranges *r, const mpx_value *inputs, mpx_error *err) {
    mpx_run_opts o = {.stream = true, .on_value = on_value, .on_value_ctx = r};
    mpx_run *run = NULL;
    mpx_status st = mpx_run_graph(r->g, NULL, inputs, &o, &run, err);
    mpx_run_free(run);
    if (!st && r->nomem) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory for the histograms");
    if (!st) r->samples++;
    return st;
}

const mpx_range *mpx_ranges_at(const mpx_ranges *r, int tensor) { return &r->t[tensor]; }

int mpx_ranges_samples(const mpx_ranges *r) { return r->samples; }

char *mpx_ranges_json(const mpx_ranges *r, const char *model) {
    const mpx_graph *g = r->g;
    const mpx_range *t = r->t;
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    cJSON_AddStringToObject(root, "kind", "mpx-ranges");
    cJSON_AddStringToObject(root, "model", model);
    cJSON_AddNumberToObject(root, "samples", r->samples);
    cJSON *arr = cJSON_AddArrayToObject(root, "tensors");
    for (int i = 0; i < g->n_tensors; i++) {
        if (!t[i].seen) continue;
        const mpx_tensor *tt = g->tensors[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "tensor", tt->name);
        cJSON_AddStringToObject(e, "node", tt->producer ? tt->producer->name : "");
        mpx_explore_json_exact(e, "min", t[i].min, NULL);
        mpx_explore_json_exact(e, "max", t[i].max, NULL);
        mpx_explore_json_exact(e, "absmax", t[i].absmax, NULL);
        mpx_explore_json_exact(e, "p99", mpx_ranges_quantile(r, i, 0.99), NULL);
        mpx_explore_json_exact(e, "p999", mpx_ranges_quantile(r, i, 0.999), NULL);
        cJSON_AddNumberToObject(e, "n", (double)t[i].n);
        cJSON_AddNumberToObject(e, "zeros", (double)t[i].zeros);
        cJSON_AddNumberToObject(e, "nonfinite", (double)t[i].nonfinite);
        cJSON_AddItemToArray(arr, e);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

mpx_status mpx_ranges_load(const mpx_graph *g, const char *path, const char *text, const char *model, double **out,
                           int *used_out, int *samples_out, mpx_error *err) {
    *out = NULL;
    cJSON *root = cJSON_Parse(text);
    if (!root) return mpx_error_set(err, MPX_E_PARSE, "merge: %s is not JSON", path);
    mpx_status st = MPX_OK;
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
                               name->valuestring, model);
            break;
        }
        ta[ti] = cJSON_IsNumber(am) ? am->valuedouble : INFINITY;
        used++;
    }
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(root, "samples");
    *samples_out = cJSON_IsNumber(ns) ? (int)ns->valuedouble : 0;
    *used_out = used;
    cJSON_Delete(root);
    if (st) {
        free(ta);
        return st;
    }
    *out = ta;
    return MPX_OK;
}

void mpx_explore_json_exact(cJSON *obj, const char *key, double v, const char *nonfinite) {
    char buf[64];
    if (isfinite(v)) snprintf(buf, sizeof buf, "%.17g", v);
    else if (nonfinite) snprintf(buf, sizeof buf, "%s", nonfinite);
    else snprintf(buf, sizeof buf, "\"%s\"", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
    cJSON_AddItemToObject(obj, key, cJSON_CreateRaw(buf));
}
