/* samples.c - one plan's per-layer figures over many samples, and their
 * worst, mean, 95th percentile or one sample's values.
 *
 * Each sample's comparison is streamed and freed by the caller; only its
 * figures are appended here (a layer's mpx_metrics per sample: 403 layers x
 * 256 samples of rec is 10 MB), so memory does not grow with the values of
 * the samples, only with their figures. */
#include "run_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

mpx_samples *mpx_samples_new(void) { return calloc(1, sizeof(mpx_samples)); }

void mpx_samples_free(mpx_samples *S) {
    if (!S) return;
    free(S->tensor);
    free(S->id);
    free(S->m);
    free(S->lm);
    for (size_t i = 0; S->href && i < (size_t)S->held_cap * (size_t)S->n_held; i++) {
        mpx_value_free(&S->href[i]);
        mpx_value_free(&S->hcand[i]);
    }
    free(S->href);
    free(S->hcand);
    free(S->held_tensor);
    free(S);
}

/* Bytes a copy of v takes (mpx_value_copy: floats in f, the rest in i;
 * a sequence's items). */
static uint64_t held_need(const mpx_value *v) {
    if (v->is_seq) {
        uint64_t sum = 0;
        for (int64_t k = 0; k < v->n; k++) sum += held_need(&v->seq[k]);
        return sum;
    }
    if (v->n <= 0) return 0;
    return (uint64_t)v->n * (mpx_dtype_is_float(v->dtype) ? sizeof(float) : sizeof(int64_t));
}

/* Held values grow with the samples (a classifier's 1000 logits x 32 samples
 * is 256 KB, a 1024x1024 mask's 8 MB a sample): checked against the memory
 * budget rather than left to run the machine out of memory. */
mpx_status mpx_samples_hold(mpx_samples *S, const mpx_compare *c, const bool *keep, int n_tensors,
                            mpx_error *err) {
    int k = S->n_samples - 1;
    if (k < 0) return mpx_error_set(err, MPX_E_INVALID, "mpx_samples_hold: no sample added");
    if (k == 0) {
        int n = 0;
        for (int t = 0; t < n_tensors; t++) n += keep[t];
        free(S->held_tensor);
        S->held_tensor = malloc((size_t)(n ? n : 1) * sizeof *S->held_tensor);
        if (!S->held_tensor) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        S->n_held = 0;
        for (int t = 0; t < n_tensors; t++)
            if (keep[t]) S->held_tensor[S->n_held++] = t;
    }
    if (!S->n_held) return MPX_OK;
    if (k >= S->held_cap) {
        int cap = S->held_cap ? S->held_cap * 2 : 16;
        size_t per = (size_t)S->n_held * sizeof(mpx_value);
        mpx_value *r = realloc(S->href, (size_t)cap * per);
        if (!r) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        S->href = r;
        mpx_value *cv = realloc(S->hcand, (size_t)cap * per);
        if (!cv) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        S->hcand = cv;
        for (size_t i = (size_t)S->held_cap * (size_t)S->n_held; i < (size_t)cap * (size_t)S->n_held; i++)
            S->href[i] = (mpx_value){.n = -1}, S->hcand[i] = (mpx_value){.n = -1};
        S->held_cap = cap;
    }
    const mpx_graph *g = c->g;
    for (int j = 0; j < S->n_held; j++) {
        int t = S->held_tensor[j];
        const char *name = g && t < g->n_tensors ? g->tensors[t]->name : "?";
        if (!c->ref || !c->cand || c->ref[t].n < 0 || c->cand[t].n < 0)
            return mpx_error_set(err, MPX_E_INVALID, "sample %d: the run did not keep the values of %s", k + 1, name);
        /* checked before the copies are allocated */
        uint64_t need = held_need(&c->ref[t]) + held_need(&c->cand[t]);
        if (S->held_bytes + need > mpx_memory_budget())
            return mpx_error_set(err, MPX_E_NOMEM,
                                 "the values of %s for %d sample%s pass the memory budget (%llu MB; see: set memory)",
                                 name, k + 1, k ? "s" : "", (unsigned long long)(mpx_memory_budget() >> 20));
        size_t i = (size_t)k * (size_t)S->n_held + (size_t)j;
        mpx_status st = mpx_value_copy(&S->href[i], &c->ref[t], err);
        if (!st) st = mpx_value_copy(&S->hcand[i], &c->cand[t], err);
        if (st) return st;
        S->held_bytes += need;
    }
    return MPX_OK;
}

const mpx_value *mpx_samples_held(const mpx_samples *S, int k, int t, bool cand) {
    if (!S || k < 0 || k >= S->n_samples) return NULL;
    for (int j = 0; j < S->n_held; j++)
        if (S->held_tensor[j] == t) {
            size_t i = (size_t)k * (size_t)S->n_held + (size_t)j;
            if (i >= (size_t)S->held_cap * (size_t)S->n_held) return NULL;
            const mpx_value *v = cand ? &S->hcand[i] : &S->href[i];
            return v->n < 0 ? NULL : v;
        }
    return NULL;
}

int mpx_samples_row(const mpx_samples *S, int id) {
    for (int k = 0; k < S->n_samples; k++)
        if (S->id[k] == id) return k;
    return -1;
}

mpx_status mpx_samples_add(mpx_samples *S, const mpx_compare *c, int id, mpx_error *err) {
    if (S->n_samples == 0) {
        free(S->tensor);
        S->tensor = malloc((size_t)(c->n_layers ? c->n_layers : 1) * sizeof *S->tensor);
        if (!S->tensor) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        S->n_layers = c->n_layers;
        for (int i = 0; i < c->n_layers; i++) S->tensor[i] = c->layers[i].tensor;
        S->local = c->n_layers > 0 && c->layers[0].has_local;
    }
    if (c->n_layers != S->n_layers)
        return mpx_error_set(err, MPX_E_INVALID, "sample %d compared %d layers, the first sample %d", S->n_samples + 1,
                             c->n_layers, S->n_layers);
    for (int i = 0; i < c->n_layers; i++)
        if (c->layers[i].tensor != S->tensor[i])
            return mpx_error_set(err, MPX_E_INVALID, "sample %d compared other layers than the first sample",
                                 S->n_samples + 1);
    if (S->n_samples == S->cap) {
        int cap = S->cap ? S->cap * 2 : 16;
        size_t per = (size_t)(S->n_layers ? S->n_layers : 1) * sizeof(mpx_metrics);
        mpx_metrics *m = realloc(S->m, (size_t)cap * per);
        if (!m) return mpx_error_set(err, MPX_E_NOMEM, "out of memory for the figures of %d samples", cap);
        S->m = m;
        int *ids = realloc(S->id, (size_t)cap * sizeof *ids);
        if (!ids) return mpx_error_set(err, MPX_E_NOMEM, "out of memory for the figures of %d samples", cap);
        S->id = ids;
        if (S->local) {
            mpx_metrics *lm = realloc(S->lm, (size_t)cap * per);
            if (!lm) return mpx_error_set(err, MPX_E_NOMEM, "out of memory for the figures of %d samples", cap);
            S->lm = lm;
        }
        S->cap = cap;
    }
    mpx_metrics *row = S->m + (size_t)S->n_samples * (size_t)S->n_layers;
    for (int i = 0; i < c->n_layers; i++) row[i] = c->layers[i].m;
    if (S->local) {
        mpx_metrics *lrow = S->lm + (size_t)S->n_samples * (size_t)S->n_layers;
        for (int i = 0; i < c->n_layers; i++) lrow[i] = c->layers[i].local;
    }
    S->id[S->n_samples] = id;
    S->n_samples++;
    return MPX_OK;
}

/* larger is worse, NaN worst of all (kern_internal.h) */
double mpx_metric_badness(mpx_metric_id id, double v) {
    if (isnan(v)) return INFINITY;
    return mpx_metric_info_of(id)->low_is_worse ? -v : v;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

double mpx_samples_p95(double *badness, int n) {
    qsort(badness, (size_t)n, sizeof *badness, cmp_double);
    return badness[(int)ceil(0.95 * n) - 1]; /* 1-based nearest rank */
}

/* stat of one layer's figures over the samples: rows m[k * stride]. */
static void reduce_layer(const mpx_metrics *m, size_t stride, int n, mpx_stat stat, double *scratch,
                         mpx_metrics *out, int *worst) {
    /* n and absmax_ref are the reference's: the same kind of statistic of
     * the largest magnitude (calibration takes the worst, the largest). */
    double amax = 0, nsum = 0;
    for (int k = 0; k < n; k++) {
        const mpx_metrics *x = &m[(size_t)k * stride];
        if (x->absmax_ref > amax || isnan(x->absmax_ref)) amax = x->absmax_ref;
        nsum += (double)x->n;
    }
    out->absmax_ref = amax;
    out->n = (int64_t)llround(nsum / n);
    for (int id = 0; id < MPX_METRIC_COUNT; id++) {
        mpx_metric_id mid = (mpx_metric_id)id;
        double v;
        if (stat == MPX_STAT_MEAN) {
            double sum = 0;
            for (int k = 0; k < n; k++) sum += mpx_metric_value(&m[(size_t)k * stride], mid);
            v = sum / n;
        } else {
            int wk = 0;
            for (int k = 0; k < n; k++) {
                scratch[k] = mpx_metric_badness(mid, mpx_metric_value(&m[(size_t)k * stride], mid));
                if (scratch[k] > scratch[wk]) wk = k;
            }
            if (mid == MPX_METRIC_rel_l2 && worst) *worst = wk;
            if (stat == MPX_STAT_WORST) {
                v = mpx_metric_value(&m[(size_t)wk * stride], mid);
            } else {
                double b = mpx_samples_p95(scratch, n);
                v = isinf(b) && b > 0 ? (mid == MPX_METRIC_cos ? NAN : mpx_metric_info_of(mid)->low_is_worse ? -INFINITY : INFINITY)
                                      : mpx_metric_info_of(mid)->low_is_worse ? -b : b;
            }
        }
        mpx_metric_set(out, mid, v);
    }
}

mpx_status mpx_samples_reduce(const mpx_samples *S, mpx_stat stat, int k, mpx_layer *layers,
                              int *worst_sample, mpx_error *err) {
    if (S->n_samples == 0) return mpx_error_set(err, MPX_E_INVALID, "no samples");
    if (stat == MPX_STAT_SAMPLE && (k < 0 || k >= S->n_samples))
        return mpx_error_set(err, MPX_E_ARG, "row %d: the run had %d samples", k, S->n_samples);
    double *scratch = malloc((size_t)S->n_samples * sizeof *scratch);
    if (!scratch) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    size_t stride = (size_t)S->n_layers;
    for (int i = 0; i < S->n_layers; i++) {
        if (stat == MPX_STAT_SAMPLE) {
            layers[i].m = S->m[(size_t)k * stride + (size_t)i];
            if (S->lm) layers[i].local = S->lm[(size_t)k * stride + (size_t)i];
            if (worst_sample) worst_sample[i] = k;
            continue;
        }
        reduce_layer(S->m + i, stride, S->n_samples, stat, scratch, &layers[i].m, worst_sample ? &worst_sample[i] : NULL);
        if (S->lm) reduce_layer(S->lm + i, stride, S->n_samples, stat, scratch, &layers[i].local, NULL);
    }
    free(scratch);
    return MPX_OK;
}
