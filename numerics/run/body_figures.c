/* body_figures.c - the figures of values inside Loop, Scan and SequenceMap
 * bodies, accumulated run by run (kern_internal.h): a body runs up to 2^20
 * times, so each value keeps its worst and its sums, not one row per run.
 * kern_loop.c compares the runs; compare.c owns the sink and hands its
 * layers to the result. */
#include "run_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t mpx_body_next_run(mpx_body_sink *k, const mpx_graph *b) {
    for (int i = 0; i < k->n_graphs; i++)
        if (k->graphs[i] == b) return k->runs[i]++;
    if (k->n_graphs == k->graphs_cap) {
        int cap = k->graphs_cap ? 2 * k->graphs_cap : 4;
        const mpx_graph **g = realloc(k->graphs, (size_t)cap * sizeof *g);
        if (!g) return 0;
        k->graphs = g;
        int64_t *r = realloc(k->runs, (size_t)cap * sizeof *r);
        if (!r) return 0;
        k->runs = r;
        k->graphs_cap = cap;
    }
    k->graphs[k->n_graphs] = b;
    k->runs[k->n_graphs++] = 1;
    return 0;
}

/* One run's figures m into the worst (per metric) and the sums. */
static void add(mpx_metrics *worst, mpx_metrics *sum, int64_t *worst_run, int64_t runs, const mpx_metrics *m,
                int64_t run) {
    if (runs == 0) {
        *worst = *m;
        *sum = *m;
        *worst_run = run;
        return;
    }
    for (int id = 0; id < MPX_METRIC_COUNT; id++) { /* metrics.def's table */
        mpx_metric_id mid = (mpx_metric_id)id;
        double v = mpx_metric_value(m, mid), w = mpx_metric_value(worst, mid);
        if (mpx_metric_badness(mid, v) > mpx_metric_badness(mid, w)) {
            mpx_metric_set(worst, mid, v);
            if (mid == MPX_METRIC_rel_l2) *worst_run = run;
        }
        mpx_metric_set(sum, mid, mpx_metric_value(sum, mid) + v);
    }
    if (m->absmax_ref > worst->absmax_ref || isnan(m->absmax_ref)) worst->absmax_ref = m->absmax_ref;
    sum->absmax_ref = worst->absmax_ref;
}

bool mpx_body_add(mpx_body_sink *k, const mpx_node *top, const mpx_node *node, const mpx_tensor *t,
                  const mpx_format *fmt, const mpx_metrics *m, bool local, int64_t run) {
    mpx_body_layer *L = NULL;
    for (int i = k->n - 1; i >= 0 && !L; i--)
        if (k->v[i].tensor == t && k->v[i].owner == top) L = &k->v[i];
    if (!L) {
        if (k->n == k->cap) {
            int cap = k->cap ? 2 * k->cap : 16;
            mpx_body_layer *v = realloc(k->v, (size_t)cap * sizeof *v);
            if (!v) return false;
            k->v = v;
            k->cap = cap;
        }
        L = &k->v[k->n++];
        memset(L, 0, sizeof *L);
        L->owner = top, L->node = node, L->tensor = t, L->fmt = fmt;
    }
    if (local) {
        /* the local run of an iteration comes after its plain comparison */
        add(&L->local_worst, &L->local_mean, &L->local_worst_run, L->has_local ? L->runs : 0, m, run);
        L->has_local = true;
    } else {
        add(&L->worst, &L->mean, &L->worst_run, L->runs, m, run);
        L->runs++;
    }
    return true;
}

/* The sums' real metrics into means (the counts stay totals). */
static void mean_of(mpx_metrics *m, int64_t runs) {
    double n = (double)(runs ? runs : 1);
    for (int id = 0; id < MPX_METRIC_COUNT; id++)
        if (!mpx_metric_info_of((mpx_metric_id)id)->count)
            mpx_metric_set(m, (mpx_metric_id)id, mpx_metric_value(m, (mpx_metric_id)id) / n);
}

mpx_body_layer *mpx_body_finish(mpx_body_sink *k, int *n) {
    for (int i = 0; i < k->n; i++) {
        mean_of(&k->v[i].mean, k->v[i].runs);
        if (k->v[i].has_local) mean_of(&k->v[i].local_mean, k->v[i].runs);
    }
    mpx_body_layer *v = k->v;
    *n = k->n;
    k->v = NULL;
    k->n = k->cap = 0;
    return v;
}

void mpx_body_sink_free(mpx_body_sink *k) {
    free(k->v);
    free(k->graphs);
    free(k->runs);
    memset(k, 0, sizeof *k);
}
