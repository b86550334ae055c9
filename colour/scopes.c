/* scopes.c - the plan's figures per scope of the model's own structure
 * (mpx_graph_scopes), computed once for every reader: the review page's
 * boxes, dot/svg --fold scopes and plan --scopes. */
#include "colour_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void add_format(mpx_scope_figures *f, const mpx_format *fmt) {
    for (int k = 0; k < f->n_formats && k < 4; k++)
        if (f->formats[k] == fmt) {
            f->format_nodes[k]++;
            /* keep most nodes first */
            while (k > 0 && f->format_nodes[k] > f->format_nodes[k - 1]) {
                const mpx_format *tf = f->formats[k];
                int tn = f->format_nodes[k];
                f->formats[k] = f->formats[k - 1];
                f->format_nodes[k] = f->format_nodes[k - 1];
                f->formats[k - 1] = tf;
                f->format_nodes[k - 1] = tn;
                k--;
            }
            return;
        }
    if (f->n_formats < 4) {
        f->formats[f->n_formats] = fmt;
        f->format_nodes[f->n_formats] = 1;
    }
    f->n_formats++;
}

mpx_status mpx_plan_scope_figures(const mpx_plan *p, const mpx_scopes *sc, const mpx_compare *run,
                                  mpx_scope_figures **out, mpx_error *err) {
    *out = NULL;
    const mpx_graph *g = p->g;
    if (sc->n_graph_nodes != g->n_nodes) return mpx_error_set(err, MPX_E_ARG, "the scopes belong to another model");
    if (run && run->g != g) return mpx_error_set(err, MPX_E_ARG, "the run belongs to another model (run again)");
    mpx_scope_figures *f = calloc((size_t)sc->n + 1, sizeof *f);
    int *mark = malloc(((size_t)sc->n + 1) * sizeof *mark);
    if (!f || !mark) {
        free(f);
        free(mark);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    for (int s = 0; s < sc->n; s++) {
        f[s].worst_node = -1;
        mark[s] = 0;
    }
    /* per node: its figures into its scope and every ancestor */
    double *worst = NULL;
    int64_t *ovf = NULL;
    if (run) {
        worst = malloc(((size_t)g->n_nodes + 1) * sizeof *worst);
        ovf = calloc((size_t)g->n_nodes + 1, sizeof *ovf);
        if (!worst || !ovf) {
            free(f);
            free(mark);
            free(worst);
            free(ovf);
            return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        }
        for (int i = 0; i < g->n_nodes; i++) worst[i] = -1;
        for (int k = 0; k < run->n_layers; k++) {
            const mpx_layer *l = &run->layers[k];
            if (l->node < 0 || l->node >= g->n_nodes) continue;
            double r = isnan(l->m.rel_l2) ? INFINITY : l->m.rel_l2;
            if (r > worst[l->node]) worst[l->node] = r;
            ovf[l->node] += l->m.overflow;
        }
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const mpx_plan_node *pn = &p->nodes[i];
        for (int s = sc->of_node[i]; s >= 0; s = sc->s[s].parent) {
            mpx_scope_figures *x = &f[s];
            x->nodes++;
            x->colours[pn->colour]++;
            if (pn->is_float && pn->compute) add_format(x, pn->compute);
            if (g->nodes[i]->cost.macs > 0) x->macs += g->nodes[i]->cost.macs;
            if (worst && worst[i] >= 0) {
                if (!x->has_error || worst[i] > x->worst_rel_l2) {
                    x->worst_rel_l2 = worst[i];
                    x->worst_node = i;
                }
                x->has_error = true;
                x->overflow += ovf[i];
                x->overflow_nodes += ovf[i] > 0;
            }
        }
    }
    /* casts: each scope once per cast, by where the value is made and where
     * it is read (stamped with the cast's number) */
    for (int c = 0; c < p->n_casts; c++) {
        const mpx_plan_cast *k = &p->casts[c];
        const mpx_tensor *t = g->tensors[k->tensor];
        int src = t->producer ? sc->of_node[t->producer->index] : -1;
        int stamp_in = 2 * c + 1, stamp_src = 2 * c + 2;
        /* scopes holding the producer (mark = stamp_src) */
        for (int s = src; s >= 0; s = sc->s[s].parent) mark[s] = stamp_src;
        bool any_out = false;
        for (int q = 0; q < k->n_consumers; q++) {
            int dst = k->consumers[q] >= 0 ? sc->of_node[k->consumers[q]] : -1;
            if (k->consumers[q] < 0) any_out = true;
            for (int s = dst; s >= 0; s = sc->s[s].parent) {
                if (mark[s] == stamp_src) {
                    f[s].casts_inside++;
                    mark[s] = -stamp_src; /* counted inside */
                } else if (mark[s] != stamp_in && mark[s] != -stamp_src) {
                    f[s].casts_in++;
                    mark[s] = stamp_in;
                }
            }
        }
        /* holding the producer and not every reader: out */
        for (int s = src; s >= 0; s = sc->s[s].parent) {
            bool all_inside = !any_out;
            for (int q = 0; all_inside && q < k->n_consumers; q++)
                all_inside = k->consumers[q] >= 0 && mpx_scope_within(sc, sc->of_node[k->consumers[q]], s);
            if (!all_inside) f[s].casts_out++;
        }
    }
    free(worst);
    free(ovf);
    free(mark);
    *out = f;
    return MPX_OK;
}
