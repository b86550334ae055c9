/* diff.c - what changed between two plans of the same graph: nodes whose
 * colour or formats differ, casts added and removed. Casts are sorted by
 * (tensor, format) in both plans, so one merge pass finds both lists. */
#include "colour_internal.h"

#include <stdlib.h>

static int fmt_order(const mpx_format *f) {
    for (size_t i = 0; i < mpx_format_count(); i++)
        if (mpx_format_at(i) == f) return (int)i;
    return 99;
}

static int cast_cmp(const mpx_plan_cast *a, const mpx_plan_cast *b) {
    if (a->tensor != b->tensor) return a->tensor < b->tensor ? -1 : 1;
    int fa = fmt_order(a->to), fb = fmt_order(b->to);
    return fa < fb ? -1 : fa > fb;
}

mpx_status mpx_plan_diff_new(const mpx_plan *a, const mpx_plan *b, mpx_plan_diff **out,
                             mpx_error *err) {
    if (!out) return mpx_error_set(err, MPX_E_ARG, "no place for the diff");
    *out = NULL;
    if (!a || !b) return mpx_error_set(err, MPX_E_ARG, "a diff needs two plans");
    if (a->g != b->g || a->n_nodes != b->n_nodes || a->n_tensors != b->n_tensors)
        return mpx_error_set(err, MPX_E_ARG,
                             "the two plans are for different models: a diff compares plans of "
                             "the same model");
    mpx_plan_diff *d = calloc(1, sizeof *d);
    if (!d) return mpx_error_set(err, MPX_E_NOMEM, "out of memory comparing plans");
    d->nodes = calloc((size_t)a->n_nodes + 1, sizeof *d->nodes);
    d->added = calloc((size_t)b->n_casts + 1, sizeof *d->added);
    d->removed = calloc((size_t)a->n_casts + 1, sizeof *d->removed);
    if (!d->nodes || !d->added || !d->removed) {
        mpx_plan_diff_free(d);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory comparing plans");
    }
    for (int i = 0; i < a->n_nodes; i++) {
        const mpx_plan_node *x = &a->nodes[i], *y = &b->nodes[i];
        if (x->colour == y->colour && x->compute == y->compute && x->accum == y->accum &&
            x->accum_flags == y->accum_flags &&
            x->output == y->output)
            continue;
        d->nodes[d->n_nodes++] = (mpx_plan_diff_node){
            i, x->colour, y->colour, x->compute, y->compute, x->accum, y->accum, x->output, y->output};
    }
    int i = 0, j = 0;
    while (i < a->n_casts || j < b->n_casts) {
        int c = i >= a->n_casts ? 1 : j >= b->n_casts ? -1 : cast_cmp(&a->casts[i], &b->casts[j]);
        if (c < 0) {
            d->removed[d->n_removed++] = (mpx_plan_diff_cast){a->casts[i].tensor, a->casts[i].from, a->casts[i].to};
            i++;
        } else if (c > 0) {
            d->added[d->n_added++] = (mpx_plan_diff_cast){b->casts[j].tensor, b->casts[j].from, b->casts[j].to};
            j++;
        } else {
            /* Same (tensor, target) but from another format: the old cast goes, a new one comes. */
            if (a->casts[i].from != b->casts[j].from) {
                d->removed[d->n_removed++] = (mpx_plan_diff_cast){a->casts[i].tensor, a->casts[i].from, a->casts[i].to};
                d->added[d->n_added++] = (mpx_plan_diff_cast){b->casts[j].tensor, b->casts[j].from, b->casts[j].to};
            }
            i++;
            j++;
        }
    }
    d->a = a->counts;
    d->b = b->counts;
    *out = d;
    return MPX_OK;
}

void mpx_plan_diff_free(mpx_plan_diff *d) {
    if (!d) return;
    free(d->nodes);
    free(d->added);
    free(d->removed);
    free(d);
}
