/* dtype.c - the element types: one table of what each is (name, bytes in
 * raw data, float or integer, a narrow float's encoding) and the one decoder
 * of their little-endian codes. The loaders (onnx_load.c, json_values.c),
 * numerics/ (mpx_format_decode, the .npy reader) and the exporter read it
 * from here. The enum's numbering is ONNX's TensorProto.DataType, so the
 * ONNX code of a type is its value. */
#include "mpx_graph.h"

#include <fp16.h>
#include <math.h>
#include <string.h>

/* How a narrow float's all-ones patterns read (mpx_dtype_decode). */
typedef enum dt_nan {
    DT_NAN_IEEE, /* exponent all ones: infinity (mantissa 0) or NaN keeping its payload */
    DT_NAN_ONE,  /* S.1111.111 is the only NaN, no infinity (float8e4m3fn) */
    DT_NAN_NEG0, /* 0x80 (negative zero's code) is the only NaN, no infinity (the FNUZ types) */
} dt_nan;

typedef struct dt_info {
    const char *name;
    unsigned char size;     /* bytes an element takes in raw little-endian data; 0: none mpx reads */
    bool is_float, is_int;  /* values held as fp32 / as int64 (bool is an integer here) */
    /* float8 encodings (exp_bits 0 for every other type): exponent and
     * mantissa widths, bias, NaN rule */
    unsigned char exp_bits, man_bits, bias;
    dt_nan nan;
} dt_info;

static const dt_info dtypes[MPX_DT_COUNT_] = {
    [MPX_DT_UNDEFINED] = {"undefined", 0, false, false, 0, 0, 0, DT_NAN_IEEE},
    [MPX_DT_FLOAT] = {"float32", 4, true, false, 0, 0, 0, DT_NAN_IEEE},
    [MPX_DT_UINT8] = {"uint8", 1, false, true, 0, 0, 0, DT_NAN_IEEE},
    [MPX_DT_INT8] = {"int8", 1, false, true, 0, 0, 0, DT_NAN_IEEE},
    [MPX_DT_UINT16] = {"uint16", 2, false, true, 0, 0, 0, DT_NAN_IEEE},
    [MPX_DT_INT16] = {"int16", 2, false, true, 0, 0, 0, DT_NAN_IEEE},
    [MPX_DT_INT32] = {"int32", 4, false, true, 0, 0, 0, DT_NAN_IEEE},
    [MPX_DT_INT64] = {"int64", 8, false, true, 0, 0, 0, DT_NAN_IEEE},
    [MPX_DT_STRING] = {"string", 0, false, false, 0, 0, 0, DT_NAN_IEEE},
    [MPX_DT_BOOL] = {"bool", 1, false, true, 0, 0, 0, DT_NAN_IEEE},
    [MPX_DT_FLOAT16] = {"float16", 2, true, false, 0, 0, 0, DT_NAN_IEEE},
    [MPX_DT_DOUBLE] = {"float64", 8, true, false, 0, 0, 0, DT_NAN_IEEE},
    [MPX_DT_UINT32] = {"uint32", 4, false, true, 0, 0, 0, DT_NAN_IEEE},
    [MPX_DT_UINT64] = {"uint64", 8, false, true, 0, 0, 0, DT_NAN_IEEE},
    [MPX_DT_COMPLEX64] = {"complex64", 8, false, false, 0, 0, 0, DT_NAN_IEEE},
    [MPX_DT_COMPLEX128] = {"complex128", 16, false, false, 0, 0, 0, DT_NAN_IEEE},
    [MPX_DT_BFLOAT16] = {"bfloat16", 2, true, false, 0, 0, 0, DT_NAN_IEEE},
    [MPX_DT_FLOAT8E4M3FN] = {"float8e4m3fn", 1, true, false, 4, 3, 7, DT_NAN_ONE},
    [MPX_DT_FLOAT8E4M3FNUZ] = {"float8e4m3fnuz", 1, true, false, 4, 3, 8, DT_NAN_NEG0},
    [MPX_DT_FLOAT8E5M2] = {"float8e5m2", 1, true, false, 5, 2, 15, DT_NAN_IEEE},
    [MPX_DT_FLOAT8E5M2FNUZ] = {"float8e5m2fnuz", 1, true, false, 5, 2, 16, DT_NAN_NEG0},
};

static const dt_info *info(mpx_dtype t) {
    return (unsigned)t < MPX_DT_COUNT_ ? &dtypes[t] : &dtypes[MPX_DT_UNDEFINED];
}

const char *mpx_dtype_name(mpx_dtype t) { return info(t)->name; }

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
        if (strcmp(dtypes[i].name, s) == 0) return (mpx_dtype)i;
    return MPX_DT_UNDEFINED;
}

bool mpx_dtype_is_float(mpx_dtype t) { return info(t)->is_float; }

bool mpx_dtype_is_int_like(mpx_dtype t) { return info(t)->is_int; }

size_t mpx_dtype_size(mpx_dtype t) { return info(t)->size; }

static float f32_of(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* A float8 code by its row's encoding; every value is exact in fp32. */
static float f8_decode(const dt_info *d, uint8_t b) {
    const unsigned mbits = d->man_bits, ebits = d->exp_bits, emax = (1u << ebits) - 1u;
    const bool neg = (b & 0x80u) != 0;
    const unsigned e = ((unsigned)b >> mbits) & emax, m = (unsigned)b & ((1u << mbits) - 1u);
    const uint32_t sign = neg ? 0x80000000u : 0u;
    if (d->nan == DT_NAN_NEG0 && b == 0x80u) return NAN; /* the only NaN; no -0, no inf */
    if (d->nan == DT_NAN_ONE && (b & 0x7fu) == 0x7fu) return f32_of(sign | 0x7fc00000u);
    if (d->nan == DT_NAN_IEEE && e == emax) /* infinity, or NaN keeping its payload */
        return f32_of(sign | 0x7f800000u | ((uint32_t)m << (23 - mbits)));
    const float v = e == 0 ? ldexpf((float)m, 1 - (int)d->bias - (int)mbits)
                           : ldexpf((float)((1u << mbits) + m), (int)e - (int)d->bias - (int)mbits);
    return neg ? -v : v;
}

float mpx_dtype_decode(mpx_dtype t, uint64_t code) {
    switch (t) {
    case MPX_DT_FLOAT: return f32_of((uint32_t)code);
    /* (the FP16 library's bit conversion: exact, NaN payloads kept; its
     * normalisation counts leading zeros with __builtin_clz, undefined for a
     * zero, so the two zeros are made here) */
    case MPX_DT_FLOAT16:
        if (((uint16_t)code & 0x7fffu) == 0) return f32_of((uint32_t)((uint16_t)code & 0x8000u) << 16);
        return f32_of(fp16_ieee_to_fp32_bits((uint16_t)code));
    case MPX_DT_BFLOAT16: return f32_of((uint32_t)(uint16_t)code << 16);
    case MPX_DT_DOUBLE: {
        double d;
        memcpy(&d, &code, sizeof d);
        return (float)d;
    }
    default: return info(t)->exp_bits ? f8_decode(info(t), (uint8_t)code) : NAN;
    }
}
