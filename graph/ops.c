/* ops.c - names of the op registry and of element types. */
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

static const char *const dtype_names[MPX_DT_COUNT_] = {
    [MPX_DT_UNDEFINED] = "undefined", [MPX_DT_FLOAT] = "float32",
    [MPX_DT_UINT8] = "uint8",         [MPX_DT_INT8] = "int8",
    [MPX_DT_UINT16] = "uint16",       [MPX_DT_INT16] = "int16",
    [MPX_DT_INT32] = "int32",         [MPX_DT_INT64] = "int64",
    [MPX_DT_STRING] = "string",       [MPX_DT_BOOL] = "bool",
    [MPX_DT_FLOAT16] = "float16",     [MPX_DT_DOUBLE] = "float64",
    [MPX_DT_UINT32] = "uint32",       [MPX_DT_UINT64] = "uint64",
    [MPX_DT_COMPLEX64] = "complex64", [MPX_DT_COMPLEX128] = "complex128",
    [MPX_DT_BFLOAT16] = "bfloat16",   [MPX_DT_FLOAT8E4M3FN] = "float8e4m3fn",
    [MPX_DT_FLOAT8E4M3FNUZ] = "float8e4m3fnuz", [MPX_DT_FLOAT8E5M2] = "float8e5m2",
    [MPX_DT_FLOAT8E5M2FNUZ] = "float8e5m2fnuz",
};

const char *mpx_dtype_name(mpx_dtype t) {
    if ((unsigned)t >= MPX_DT_COUNT_) return "undefined";
    return dtype_names[t];
}

mpx_dtype mpx_dtype_from_name(const char *s) {
    if (!s) return MPX_DT_UNDEFINED;
    static const struct { const char *alias; mpx_dtype t; } aliases[] = {
        {"float", MPX_DT_FLOAT},   {"fp32", MPX_DT_FLOAT},   {"f32", MPX_DT_FLOAT},
        {"half", MPX_DT_FLOAT16},  {"fp16", MPX_DT_FLOAT16}, {"f16", MPX_DT_FLOAT16},
        {"bf16", MPX_DT_BFLOAT16}, {"double", MPX_DT_DOUBLE}, {"fp64", MPX_DT_DOUBLE},
    };
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(s, aliases[i].alias) == 0) return aliases[i].t;
    for (int i = 1; i < MPX_DT_COUNT_; i++)
        if (dtype_names[i] && strcmp(dtype_names[i], s) == 0) return (mpx_dtype)i;
    return MPX_DT_UNDEFINED;
}

bool mpx_dtype_is_float(mpx_dtype t) {
    switch (t) {
    case MPX_DT_FLOAT: case MPX_DT_FLOAT16: case MPX_DT_DOUBLE: case MPX_DT_BFLOAT16:
    case MPX_DT_FLOAT8E4M3FN: case MPX_DT_FLOAT8E4M3FNUZ: case MPX_DT_FLOAT8E5M2:
    case MPX_DT_FLOAT8E5M2FNUZ:
        return true;
    default:
        return false;
    }
}

bool mpx_dtype_is_int_like(mpx_dtype t) {
    switch (t) {
    case MPX_DT_UINT8: case MPX_DT_INT8: case MPX_DT_UINT16: case MPX_DT_INT16:
    case MPX_DT_INT32: case MPX_DT_INT64: case MPX_DT_BOOL: case MPX_DT_UINT32:
    case MPX_DT_UINT64:
        return true;
    default:
        return false;
    }
}
