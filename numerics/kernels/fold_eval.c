/* fold_eval.c - the kernels as graph/'s constant folder (mpx_graph.h,
 * "constant folding: one evaluator of op meaning"): a node whose inputs are
 * all known runs its kernel on borrowed views of them, as the fp32 reference
 * run would (fp32 accumulation), and its outputs are copied into the buffers
 * shape inference allocated. So an op's meaning is its kernel, everywhere. */
#include "kern_internal.h"

#include <stdlib.h>
#include <string.h>

/* The kernel's value fits the buffer shape inference made for t: same shape
 * and the same storage kind (fp32 or int64). */
static bool fits(const mpx_tensor *t, const mpx_value *v) {
    if (v->n != t->nelem || v->rank != t->rank || (!t->f32 != !v->f) || (!t->i64 != !v->i) || (!t->f64 != !v->d))
        return false;
    for (int i = 0; i < t->rank; i++)
        if (v->dims[i] != t->dims[i]) return false;
    return true;
}

static mpx_status eval_node(const mpx_node *n, bool *done, mpx_error *err) {
    *done = false;
    mpx_kernel_fn fn = mpx_kernel_for_node(n);
    if (!fn) return MPX_OK;
    int ni = n->n_inputs, no = n->n_outputs;
    mpx_value *views = calloc((size_t)ni + 1, sizeof *views);
    const mpx_value **ins = calloc((size_t)ni + 1, sizeof *ins);
    mpx_value *outs = calloc((size_t)no, sizeof *outs);
    if (!views || !ins || !outs) {
        free(views), free(ins), free(outs);
        return MPX_OK; /* best effort: no memory to fold is not the model's fault */
    }
    for (int i = 0; i < ni; i++) {
        if (!n->inputs[i]) continue;
        mpx_value_view(&views[i], n->inputs[i]);
        ins[i] = &views[i];
    }
    for (int j = 0; j < no; j++) outs[j].n = -1;
    mpx_error e = {0};
    mpx_kctx kc = {.node = n, .err = &e};
    mpx_status st = fn(&kc, ins, ni, outs, no);
    /* A kernel may stop early on a cancel (mpx_k_cancelled): its values
     * are not folded in then, the node stays to run. */
    bool ok = st == MPX_OK && !mpx_k_cancelled();
    for (int j = 0; ok && j < no; j++) {
        mpx_tensor *t = n->outputs[j];
        if (!t || !(t->flags & MPX_T_FOLDED)) continue;
        ok = fits(t, &outs[j]);
        if (ok && t->nelem > 0) {
            if (t->f32) memcpy(t->f32, outs[j].f, (size_t)t->nelem * sizeof *t->f32);
            else if (t->f64) memcpy(t->f64, outs[j].d, (size_t)t->nelem * sizeof *t->f64);
            else memcpy(t->i64, outs[j].i, (size_t)t->nelem * sizeof *t->i64);
        }
    }
    for (int j = 0; j < no; j++) mpx_value_free(&outs[j]);
    free(views), free(ins), free(outs);
    *done = ok;
    /* Values that do not fit the op (an index out of range) fail the run the
     * same way: say so now. Anything else only leaves the values unknown. */
    if (st == MPX_E_SHAPE) return mpx_error_set(err, st, "%s", e.msg);
    return MPX_OK;
}

void mpx_numerics_init(void) { mpx_graph_set_evaluator(eval_node); }
