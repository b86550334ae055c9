/* fuzz_model.h - after a model loads, what a user does next: bind every
 * input (declared dims, symbolic ones 2) and infer shapes, folding constants
 * through numerics' kernels. Shared by the ONNX and JSON harnesses. */
#ifndef MPX_FUZZ_MODEL_H
#define MPX_FUZZ_MODEL_H

#include "mpx_graph.h"
#include "mpx_numerics.h"

static void fuzz_bind_infer(mpx_graph *g) {
    static int init;
    if (!init) mpx_numerics_init(), init = 1;
    mpx_error err;
    for (int i = 0; i < g->n_inputs; i++) {
        const mpx_tensor *t = g->inputs[i];
        if (t->decl_rank < 0) continue;
        int64_t dims[MPX_MAX_RANK];
        for (int d = 0; d < t->decl_rank; d++) dims[d] = t->decl_dims[d] >= 0 && t->decl_dims[d] <= 64 ? t->decl_dims[d] : 2;
        mpx_error_clear(&err);
        (void)mpx_graph_bind_input(g, t->name, t->decl_rank, dims, &err);
    }
    mpx_error_clear(&err);
    (void)mpx_graph_infer(g, &err);
}

#endif
