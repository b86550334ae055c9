/* compare.c - per-layer comparison of a candidate run against the fp32
 * reference.
 *
 * First version: two whole runs through mpx_run_graph (every value kept),
 * then the metrics, then everything not kept is dropped. Correct, but holds
 * two complete copies of the activations at the peak; the streaming version
 * (node by node, freeing after the last consumer) replaces it. */
#include "kern_internal.h"

#include <stdlib.h>
#include <string.h>

static bool is_low(const mpx_format *f) { return f && f->kind != MPX_FMT_FP32; }

void mpx_compare_free(mpx_compare *c) {
    if (!c) return;
    if (c->ref)
        for (int i = 0; i < c->g->n_tensors; i++) mpx_value_free(&c->ref[i]);
    if (c->cand)
        for (int i = 0; i < c->g->n_tensors; i++) mpx_value_free(&c->cand[i]);
    free(c->ref);
    free(c->cand);
    free(c->layers);
    free(c);
}

const mpx_layer *mpx_compare_layer(const mpx_compare *c, int tensor) {
    if (!c) return NULL;
    for (int i = 0; i < c->n_layers; i++)
        if (c->layers[i].tensor == tensor) return &c->layers[i];
    return NULL;
}

static size_t value_bytes(const mpx_run *r) {
    size_t b = 0;
    for (int i = 0; i < r->g->n_tensors; i++) {
        const mpx_value *v = &r->vals[i];
        if (v->n > 0 && !v->borrowed) b += (size_t)v->n * (v->f ? sizeof(float) : sizeof(int64_t));
    }
    return b;
}

mpx_status mpx_compare_run(const mpx_graph *g, const mpx_assign *a, const mpx_value *inputs,
                           const mpx_compare_opts *opts, mpx_compare **out, mpx_error *err) {
    *out = NULL;
    mpx_compare_opts none = {0};
    if (!opts) opts = &none;
    mpx_run *ref = NULL, *cand = NULL, *loc = NULL;
    mpx_compare *c = calloc(1, sizeof *c);
    if (!c) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    c->g = g;
    mpx_status st = mpx_run_graph(g, NULL, inputs, NULL, &ref, err);
    if (!st && opts->cancel && *opts->cancel) st = mpx_error_set(err, MPX_E_CANCELLED, "run cancelled");
    if (!st) st = mpx_run_graph(g, a, inputs, NULL, &cand, err);
    if (!st && opts->local) {
        mpx_run_opts lo = {.local_ref = ref};
        st = mpx_run_graph(g, a, inputs, &lo, &loc, err);
    }
    if (!st && opts->cancel && *opts->cancel) st = mpx_error_set(err, MPX_E_CANCELLED, "run cancelled");
    if (st) goto fail;
    c->ms_ref = ref->ms;
    c->ms_cand = cand->ms;
    c->ms_local = loc ? loc->ms : 0.0;
    c->peak_bytes = value_bytes(ref) + value_bytes(cand) + (loc ? value_bytes(loc) : 0);
    c->layers = calloc(g->n_tensors ? (size_t)g->n_tensors : 1u, sizeof *c->layers);
    c->ref = calloc(g->n_tensors ? (size_t)g->n_tensors : 1u, sizeof *c->ref);
    c->cand = calloc(g->n_tensors ? (size_t)g->n_tensors : 1u, sizeof *c->cand);
    if (!c->layers || !c->ref || !c->cand) {
        st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < g->n_tensors; i++) c->ref[i].n = c->cand[i].n = -1;
    for (int ni = 0; ni < g->n_nodes; ni++) {
        const mpx_node *n = g->nodes[ni];
        for (int k = 0; k < n->n_outputs; k++) {
            const mpx_tensor *t = n->outputs[k];
            if (!t || (t->flags & MPX_T_CONSTANT)) continue;
            const mpx_value *r = &ref->vals[t->index], *v = &cand->vals[t->index];
            if (r->n < 0 || v->n < 0 || !r->f || !v->f) continue;
            mpx_layer *L = &c->layers[c->n_layers];
            L->tensor = t->index;
            L->node = n->index;
            L->fmt = a && is_low(a->tensor[t->index]) ? a->tensor[t->index] : NULL;
            if ((st = mpx_metrics_compute(r, v, L->fmt, &L->m, err))) goto fail;
            if (loc && loc->vals[t->index].n >= 0) {
                if ((st = mpx_metrics_compute(r, &loc->vals[t->index], L->fmt, &L->local, err))) goto fail;
                L->has_local = true;
            }
            c->n_layers++;
        }
    }
    /* Keep what was asked for and the model outputs; move, not copy. */
    for (int i = 0; i < g->n_tensors; i++) {
        bool keep = (opts->keep && opts->keep[i]) || (g->tensors[i]->flags & MPX_T_OUTPUT);
        if (!keep) continue;
        c->ref[i] = ref->vals[i];
        c->cand[i] = cand->vals[i];
        ref->vals[i].n = cand->vals[i].n = -1;
        ref->vals[i].f = cand->vals[i].f = NULL;
        ref->vals[i].i = cand->vals[i].i = NULL;
    }
    mpx_run_free(ref);
    mpx_run_free(cand);
    mpx_run_free(loc);
    *out = c;
    return MPX_OK;
fail:
    mpx_run_free(ref);
    mpx_run_free(cand);
    mpx_run_free(loc);
    mpx_compare_free(c);
    return st;
}
