/* ops.c - names of the op registry (element types: dtype.c). */
#include "mpx_graph.h"

#include <assert.h>
#include <string.h>
#include <strings.h>

static const char *const op_names[MPX_OP_COUNT] = {
    [MPX_OP_UNKNOWN] = "?",
#define MPX_OP(name, shape, cost, fold) [MPX_OP_##name] = #name,
#include "ops.def"
#undef MPX_OP
};
static_assert(sizeof op_names / sizeof op_names[0] == MPX_OP_COUNT,
              "op name table out of step with ops.def");

/* The FOLD column: fold or run (see ops.def). */
enum { fold = 1, run = 0 };
static const bool op_folds[MPX_OP_COUNT] = {
#define MPX_OP(name, shape, cost, f) [MPX_OP_##name] = f,
#include "ops.def"
#undef MPX_OP
};

bool mpx_op_folds(mpx_op op) { return (unsigned)op < MPX_OP_COUNT && op_folds[op]; }

/* The ops of domain com.microsoft: the MPX_OP_MS rows of ops.def. */
static const bool op_ms[MPX_OP_COUNT] = {
#define MPX_OP(name, shape, cost, f) [MPX_OP_##name] = false,
#define MPX_OP_MS(name, shape, cost, f) [MPX_OP_##name] = true,
#include "ops.def"
#undef MPX_OP
};

mpx_op mpx_op_from_domain_name(const char *domain, const char *op_type) {
    bool dflt = !domain || !*domain || strcmp(domain, "ai.onnx") == 0;
    bool ms = domain && strcmp(domain, "com.microsoft") == 0;
    mpx_op op = mpx_op_from_name(op_type);
    if (op == MPX_OP_UNKNOWN || (!dflt && !ms)) return MPX_OP_UNKNOWN;
    /* ORT's com.microsoft Gelu is ONNX's Gelu (opset 20) without the
     * approximate attribute, its RotaryEmbedding ONNX's (opset 23) with the
     * inputs in another order; its Attention (the BERT form) and ONNX's share
     * a row, the kernel telling them apart by domain. */
    if (ms)
        return op_ms[op] || op == MPX_OP_Gelu || op == MPX_OP_RotaryEmbedding || op == MPX_OP_Attention
                   ? op
                   : MPX_OP_UNKNOWN;
    return op_ms[op] ? MPX_OP_UNKNOWN : op;
}

const char *mpx_op_name(mpx_op op) {
    if ((unsigned)op >= MPX_OP_COUNT) return "?";
    return op_names[op];
}

/* ~100 ops: a linear scan is cheaper than building anything at load time. */
mpx_op mpx_op_from_name(const char *op_type) {
    if (!op_type) return MPX_OP_UNKNOWN;
    for (int i = 1; i < MPX_OP_COUNT; i++)
        if (strcmp(op_names[i], op_type) == 0) return (mpx_op)i;
    return MPX_OP_UNKNOWN;
}

mpx_op mpx_op_from_name_ci(const char *op_type) {
    if (!op_type) return MPX_OP_UNKNOWN;
    for (int i = 1; i < MPX_OP_COUNT; i++)
        if (strcasecmp(op_names[i], op_type) == 0) return (mpx_op)i;
    return MPX_OP_UNKNOWN;
}
