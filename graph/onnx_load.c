/* onnx_load.c - ONNX ModelProto (protobuf-c, generated from the system's
 * onnx.proto) into the IR.
 *
 * The loader only translates: structural checks (producers, dangling reads,
 * cycles) and Constant values belong to mpx_graph_finalize, so both loaders
 * give the same guarantees. What is ONNX-specific is checked here: tensor
 * encodings and their lengths, external data files, opset imports.
 *
 * The protobuf-c tree is freed before every return. Every error names the
 * model file (err->file) and the initializer, node or attribute at fault. */
/* realpath() is XSI: the build's _POSIX_C_SOURCE alone does not declare it. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#include "graph_internal.h"
#include "onnx_walk.h"

#include "onnx.pb-c.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* protobuf messages are limited to 2 GiB; larger models must use external
 * data, so a bigger .onnx file is not a model protobuf-c could read. */
#define MAX_ONNX_BYTES ((size_t)INT32_MAX)

typedef struct ctx {
    mpx_graph *g;
    const char *path; /* the model, for messages */
    const char *dir;  /* where external data lives; NULL: refused */
    char *dir_real;   /* realpath(dir) + "/", computed on first use */
    mpx_error *err;
    const Onnx__ModelProto *model;
    /* Subgraph scopes while an If's branches load: scope[d] is the prefix
     * of names defined at depth d ("" for the main graph). */
    int depth;
    const char *scope[MPX_MAX_SUBGRAPH_DEPTH + 1];
    /* The If whose branches load at depth d + 1, by d: the branches'
     * outputs it reads (k per branch) and the nodes each branch added. */
    struct {
        mpx_tensor **outs;
        size_t k;
        int first[2], last[2];
    } ifs[MPX_MAX_SUBGRAPH_DEPTH + 1];
    int nest; /* Loop/Scan bodies around this graph */
    /* The external data read so far, bodies' included (shared through the
     * copies a body's load makes), held to the memory budget: a small model
     * may name a huge, sparse file. */
    uint64_t *ext_bytes;
} ctx;

static mpx_status fail(ctx *c, mpx_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static mpx_status fail(ctx *c, mpx_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    st = mpx_error_vnode(c->err, st, c->path, NULL, fmt, ap);
    va_end(ap);
    return st;
}

static const char *nz(const char *s) { return s ? s : ""; }

/* ---- element decoding (the element-type table: graph/dtype.c) --------------- */

static uint64_t le(const uint8_t *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) v = (v << 8) | p[i];
    return v;
}

/* Little-endian bytes (raw_data or an external file) into t's value. The
 * length was checked against nelem by the caller. */
static void decode_raw(mpx_tensor *t, const uint8_t *p) {
    size_t es = mpx_dtype_size(t->dtype);
    const bool flt = mpx_dtype_is_float(t->dtype);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* float32 on a little-endian host: the bytes are the values (the loop
     * below, a byte at a time through the element table, was a tenth of
     * loading ViT-B/16's 344 MB) */
    if (t->dtype == MPX_DT_FLOAT && t->f32 && !t->f64 && t->nelem > 0) {
        memcpy(t->f32, p, (size_t)t->nelem * sizeof(float));
        return;
    }
#endif
    for (int64_t i = 0; i < t->nelem; i++, p += es) {
        uint64_t v = le(p, es);
        if (t->f64) {
            memcpy(&t->f64[i], &v, sizeof v);
            continue;
        }
        if (flt) {
            t->f32[i] = mpx_dtype_decode(t->dtype, v);
            continue;
        }
        switch (t->dtype) {
        case MPX_DT_INT8: t->i64[i] = (int8_t)(uint8_t)v; break;
        case MPX_DT_INT16: t->i64[i] = (int16_t)(uint16_t)v; break;
        case MPX_DT_INT32: t->i64[i] = (int32_t)(uint32_t)v; break;
        case MPX_DT_BOOL: t->i64[i] = v != 0; break;
        /* uint64 above INT64_MAX wraps: mpx holds integers as int64. */
        default: t->i64[i] = (int64_t)v; break;
        }
    }
}

/* int32_data carries every type narrower than 32 bits, floats as bit
 * patterns (ONNX spec, TensorProto.int32_data). */
static void decode_int32(mpx_tensor *t, const int32_t *d) {
    for (int64_t i = 0; i < t->nelem; i++) {
        uint32_t u = (uint32_t)d[i];
        switch (t->dtype) {
        case MPX_DT_FLOAT16: case MPX_DT_BFLOAT16: case MPX_DT_FLOAT8E4M3FN: case MPX_DT_FLOAT8E4M3FNUZ:
        case MPX_DT_FLOAT8E5M2: case MPX_DT_FLOAT8E5M2FNUZ:
            t->f32[i] = mpx_dtype_decode(t->dtype, u);
            break;
        case MPX_DT_INT8: t->i64[i] = (int8_t)(uint8_t)u; break;
        case MPX_DT_UINT8: t->i64[i] = (uint8_t)u; break;
        case MPX_DT_INT16: t->i64[i] = (int16_t)(uint16_t)u; break;
        case MPX_DT_UINT16: t->i64[i] = (uint16_t)u; break;
        case MPX_DT_BOOL: t->i64[i] = d[i] != 0; break;
        default: t->i64[i] = d[i]; break;
        }
    }
}

/* ---- external data ---------------------------------------------------------- */

static bool parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s) return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false;
        unsigned dgt = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - dgt) / 10) return false;
        v = v * 10 + dgt;
    }
    *out = v;
    return true;
}

/* Does a relative path climb above its starting folder ("a/../../x")? A
 * lexical check gives a clear message even when the target does not exist;
 * symlinks are caught afterwards with realpath. */
static bool climbs_out(const char *loc) {
    int depth = 0;
    const char *p = loc;
    while (*p) {
        const char *q = strchr(p, '/');
        size_t n = q ? (size_t)(q - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (--depth < 0) return true;
        } else if (n > 0 && !(n == 1 && p[0] == '.')) {
            depth++;
        }
        p += n;
        if (*p == '/') p++;
    }
    return false;
}

/* Read want bytes at offset from the external file loc into a new buffer. */
static mpx_status read_external(ctx *c, const char *what, const Onnx__TensorProto *tp,
                                size_t want, uint8_t **out) {
    const char *loc = NULL, *off_s = NULL, *len_s = NULL;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        if (!e || !e->key) continue;
        if (strcmp(e->key, "location") == 0) loc = e->value;
        else if (strcmp(e->key, "offset") == 0) off_s = e->value;
        else if (strcmp(e->key, "length") == 0) len_s = e->value;
    }
    if (!loc || !*loc)
        return fail(c, MPX_E_INVALID, "%s: external data without a location", what);
    if (!c->dir)
        return fail(c, MPX_E_UNSUPPORTED,
                    "%s: external data file \"%s\" cannot be read: the model was not "
                    "loaded from a folder", what, loc);
    uint64_t off = 0, len = want;
    if (off_s && !parse_u64(off_s, &off))
        return fail(c, MPX_E_INVALID, "%s: external data file \"%s\": bad offset \"%s\"", what,
                    loc, off_s);
    if (len_s && !parse_u64(len_s, &len))
        return fail(c, MPX_E_INVALID, "%s: external data file \"%s\": bad length \"%s\"", what,
                    loc, len_s);
    if (len != want)
        return fail(c, MPX_E_INVALID,
                    "%s: external data file \"%s\": length %llu disagrees with the dims, "
                    "which need %zu bytes", what, loc, (unsigned long long)len, want);
    if (loc[0] == '/')
        return fail(c, MPX_E_INVALID,
                    "%s: external data file \"%s\" is an absolute path; only files inside "
                    "the model's folder are read", what, loc);
    if (climbs_out(loc))
        return fail(c, MPX_E_INVALID,
                    "%s: external data file \"%s\" is outside the model's folder", what, loc);

    if (!c->dir_real) {
        char *r = realpath(c->dir, NULL);
        if (!r)
            return fail(c, MPX_E_IO, "%s: external data file \"%s\": model folder \"%s\": %s",
                        what, loc, c->dir, strerror(errno));
        size_t n = strlen(r);
        c->dir_real = malloc(n + 2);
        if (!c->dir_real) {
            free(r);
            return fail(c, MPX_E_NOMEM, "out of memory");
        }
        memcpy(c->dir_real, r, n + 1);
        if (n == 0 || r[n - 1] != '/') strcat(c->dir_real, "/");
        free(r);
    }
    size_t dl = strlen(c->dir), ll = strlen(loc);
    char *joined = malloc(dl + ll + 2);
    if (!joined) return fail(c, MPX_E_NOMEM, "out of memory");
    snprintf(joined, dl + ll + 2, "%s/%s", c->dir, loc);
    char *real = realpath(joined, NULL);
    int rerr = errno;
    free(joined);
    if (!real)
        return fail(c, MPX_E_IO, "%s: external data file \"%s\": %s", what, loc,
                    rerr == ENOENT ? "no such file" : strerror(rerr));
    /* A symlink inside the folder may point anywhere: judge where it lands. */
    if (strncmp(real, c->dir_real, strlen(c->dir_real)) != 0) {
        mpx_status st = fail(c, MPX_E_INVALID,
                             "%s: external data file \"%s\" resolves to \"%s\", outside the "
                             "model's folder", what, loc, real);
        free(real);
        return st;
    }
    mpx_error oerr;
    int fd = mpx_file_open_read(real, false, &oerr);
    /* The session protects it from its own writes (see mpx_file_guard). */
    mpx_status noted = fd >= 0 ? mpx_graph_note_file(c->g, real) : MPX_OK;
    free(real);
    if (fd < 0)
        return fail(c, oerr.status, "%s: external data file \"%s\": %s", what, loc, oerr.msg);
    if (noted) {
        close(fd);
        return fail(c, MPX_E_NOMEM, "out of memory");
    }
    struct stat sb;
    mpx_status st = MPX_OK;
    uint8_t *buf = NULL;
    if (fstat(fd, &sb) != 0) {
        st = fail(c, MPX_E_IO, "%s: external data file \"%s\": %s", what, loc, strerror(errno));
    } else if (off > (uint64_t)sb.st_size || (uint64_t)sb.st_size - off < len) {
        st = fail(c, MPX_E_IO,
                  "%s: external data file \"%s\" is too short: %lld bytes, need %llu at offset "
                  "%llu", what, loc, (long long)sb.st_size, (unsigned long long)len,
                  (unsigned long long)off);
    } else if (c->ext_bytes && (st = mpx_check_budget(c->path, "its initializers' external data",
                                                       *c->ext_bytes + want, c->err))) {
        /* (err filled, naming the model) */
    } else if (!(buf = malloc(want ? want : 1))) {
        st = fail(c, MPX_E_NOMEM, "%s: out of memory for %zu bytes", what, want);
    } else {
        size_t got = 0;
        while (got < want) {
            ssize_t r = pread(fd, buf + got, want - got, (off_t)(off + got));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                st = fail(c, MPX_E_IO, "%s: external data file \"%s\": short read at %llu", what,
                          loc, (unsigned long long)(off + got));
                break;
            }
            got += (size_t)r;
        }
    }
    close(fd);
    if (st != MPX_OK) {
        free(buf);
        return st;
    }
    if (c->ext_bytes) *c->ext_bytes += want;
    *out = buf;
    return MPX_OK;
}

/* ---- tensors ------------------------------------------------------------------ */

static const char *count_field(mpx_dtype dt, const Onnx__TensorProto *tp, size_t *n) {
    switch (dt) {
    case MPX_DT_FLOAT: case MPX_DT_COMPLEX64:
        *n = tp->n_float_data;
        return "float_data";
    case MPX_DT_INT64:
        *n = tp->n_int64_data;
        return "int64_data";
    case MPX_DT_DOUBLE: case MPX_DT_COMPLEX128:
        *n = tp->n_double_data;
        return "double_data";
    case MPX_DT_UINT32: case MPX_DT_UINT64:
        *n = tp->n_uint64_data;
        return "uint64_data";
    case MPX_DT_STRING:
        *n = tp->n_string_data;
        return "string_data";
    default:
        *n = tp->n_int32_data;
        return "int32_data";
    }
}

/* Fill t (a graph tensor or a detached attribute tensor) from a TensorProto:
 * declared shape, dtype and, for numeric types, the value. what names the
 * tensor in messages ("initializer \"w\""). */
static mpx_status load_tensor(ctx *c, const Onnx__TensorProto *tp, mpx_tensor *t,
                              const char *what) {
    if (!tp->has_data_type || tp->data_type <= 0 || tp->data_type >= MPX_DT_COUNT_)
        return fail(c, tp->has_data_type && tp->data_type > 0 ? MPX_E_UNSUPPORTED : MPX_E_INVALID,
                    "%s: data type %d is not supported", what, (int)tp->data_type);
    mpx_dtype dt = (mpx_dtype)tp->data_type;
    if (tp->n_dims > MPX_MAX_RANK)
        return fail(c, MPX_E_UNSUPPORTED, "%s: rank %zu exceeds mpx's limit of %d", what,
                    tp->n_dims, MPX_MAX_RANK);
    if (tp->segment)
        return fail(c, MPX_E_UNSUPPORTED, "%s: segmented tensors are not supported", what);
    int rank = (int)tp->n_dims;
    const int64_t *dims = tp->dims;
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0)
            return fail(c, MPX_E_INVALID, "%s: dim %d is negative (%lld)", what, i,
                        (long long)dims[i]);
    int64_t nelem;
    mpx_error sub;
    if (mpx_dims_check(rank, dims, &nelem, &sub) != MPX_OK)
        return fail(c, MPX_E_LIMIT, "%s: %s", what, sub.msg);

    if (mpx_tensor_declare(t, dt, rank, dims, NULL, &sub) != MPX_OK)
        return fail(c, sub.status, "%s: %s", what, sub.msg);
    bool external = tp->has_data_location &&
                    tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (!mpx_dtype_is_float(dt) && !mpx_dtype_is_int_like(dt)) {
        /* Strings and complex numbers: the type and shape are kept, the value
         * is not (mpx computes on neither). */
        size_t n;
        const char *field = count_field(dt, tp, &n);
        if (dt == MPX_DT_STRING && !external && n != (size_t)nelem)
            return fail(c, MPX_E_INVALID, "%s: %zu values in %s, but dims hold %lld", what, n,
                        field, (long long)nelem);
        t->rank = rank;
        for (int i = 0; i < MPX_MAX_RANK; i++) t->dims[i] = i < rank ? dims[i] : -1;
        t->nelem = nelem;
        return MPX_OK;
    }
    /* The data's length is checked before the value is allocated: dims are
     * only a claim, and a few hundred bytes of file must not make mpx
     * allocate gigabytes before it finds the data missing. */
    size_t es = mpx_dtype_size(dt), need = (size_t)nelem * es;
    if (external) {
        uint8_t *bytes = NULL;
        mpx_status st = read_external(c, what, tp, need, &bytes);
        if (st != MPX_OK) return st;
        if (mpx_tensor_alloc_value(c->g, t, dt, rank, dims, &sub) != MPX_OK) {
            free(bytes);
            return fail(c, sub.status, "%s: %s", what, sub.msg);
        }
        decode_raw(t, bytes);
        free(bytes);
        return MPX_OK;
    }
    size_t n;
    const char *field = count_field(dt, tp, &n);
    /* raw_data wins when both are present; an empty raw_data only when the
     * typed field is empty too. */
    bool raw = tp->has_raw_data && (tp->raw_data.len > 0 || n == 0);
    if (raw && tp->raw_data.len != need)
        return fail(c, MPX_E_INVALID,
                    "%s: raw_data has %zu bytes, but its dims hold %lld elements of %s, "
                    "which need %zu bytes",
                    what, tp->raw_data.len, (long long)nelem, mpx_dtype_name(dt), need);
    if (!raw && n != (size_t)nelem)
        return fail(c, MPX_E_INVALID, "%s: %zu values in %s, but dims hold %lld elements", what,
                    n, field, (long long)nelem);
    if (mpx_tensor_alloc_value(c->g, t, dt, rank, dims, &sub) != MPX_OK)
        return fail(c, sub.status, "%s: %s", what, sub.msg);
    if (raw) {
        decode_raw(t, tp->raw_data.data);
        return MPX_OK;
    }
    if (nelem == 0) return MPX_OK;
    switch (dt) {
    case MPX_DT_FLOAT:
        memcpy(t->f32, tp->float_data, n * sizeof(float));
        break;
    case MPX_DT_DOUBLE:
        memcpy(t->f64, tp->double_data, n * sizeof(double));
        break;
    case MPX_DT_INT64:
        memcpy(t->i64, tp->int64_data, n * sizeof(int64_t));
        break;
    case MPX_DT_UINT32: case MPX_DT_UINT64:
        for (size_t i = 0; i < n; i++) t->i64[i] = (int64_t)tp->uint64_data[i];
        break;
    default:
        decode_int32(t, tp->int32_data);
        break;
    }
    return MPX_OK;
}

/* A TENSOR attribute's value: a tensor in the graph's arena that is not one of
 * the graph's tensors. */
static mpx_status detached_tensor(ctx *c, const Onnx__TensorProto *tp, const char *what,
                                  mpx_tensor **out) {
    mpx_tensor *t = mpx_arena_alloc(c->g->arena, sizeof *t);
    if (!t) return fail(c, MPX_E_NOMEM, "out of memory");
    t->name = mpx_arena_strdup(c->g->arena, nz(tp->name));
    if (!t->name) return fail(c, MPX_E_NOMEM, "out of memory");
    t->index = -1;
    t->rank = t->decl_rank = -1;
    t->nelem = -1;
    for (int i = 0; i < MPX_MAX_RANK; i++) t->dims[i] = t->decl_dims[i] = -1;
    mpx_status st = load_tensor(c, tp, t, what);
    if (st != MPX_OK) return st;
    *out = t;
    return MPX_OK;
}

/* ---- attributes ------------------------------------------------------------ */

static mpx_status int_count(ctx *c, size_t n, const char *what, int *out) {
    if (n > INT_MAX) return fail(c, MPX_E_LIMIT, "%s: %zu elements is too many", what, n);
    *out = (int)n;
    return MPX_OK;
}

static char *bytes_dup(mpx_arena *a, const ProtobufCBinaryData *b) {
    char *s = mpx_arena_alloc(a, b->len + 1);
    if (s && b->len) memcpy(s, b->data, b->len);
    return s;
}

/* Old IR versions (before 0.0.2... and some hand-written files) omit the type:
 * infer it from the field that is set. */
static int infer_attr_type(const Onnx__AttributeProto *ap) {
    if (ap->has_type) return (int)ap->type;
    if (ap->has_f) return MPX_ATTR_FLOAT;
    if (ap->has_i) return MPX_ATTR_INT;
    if (ap->has_s) return MPX_ATTR_STRING;
    if (ap->t) return MPX_ATTR_TENSOR;
    if (ap->g) return MPX_ATTR_GRAPH;
    if (ap->sparse_tensor) return MPX_ATTR_SPARSE_TENSOR;
    if (ap->tp) return MPX_ATTR_TYPE_PROTO;
    if (ap->n_floats) return MPX_ATTR_FLOATS;
    if (ap->n_ints) return MPX_ATTR_INTS;
    if (ap->n_strings) return MPX_ATTR_STRINGS;
    if (ap->n_tensors) return MPX_ATTR_TENSORS;
    if (ap->n_graphs) return MPX_ATTR_GRAPHS;
    if (ap->n_sparse_tensors) return MPX_ATTR_SPARSE_TENSORS;
    if (ap->n_type_protos) return MPX_ATTR_TYPE_PROTOS;
    return MPX_ATTR_UNDEFINED;
}

static mpx_status load_attr(ctx *c, const mpx_node *n, const Onnx__AttributeProto *ap,
                            mpx_attr *a) {
    mpx_arena *ar = c->g->arena;
    char what[700];
    snprintf(what, sizeof what, "node \"%s\" (%s) attribute \"%.200s\"", n->name, n->op_type,
             nz(ap->name));
    a->name = mpx_arena_strdup(ar, nz(ap->name));
    if (!a->name) return fail(c, MPX_E_NOMEM, "out of memory");
    int type = infer_attr_type(ap);
    if (type < 0 || type > MPX_ATTR_TYPE_PROTOS)
        return fail(c, MPX_E_INVALID, "%s: unknown attribute type %d", what, type);
    a->type = (mpx_attr_type)type;
    mpx_status st = MPX_OK;
    switch (a->type) {
    case MPX_ATTR_UNDEFINED:
        break; /* ref_attr_name only (function bodies) or empty: kept by name */
    case MPX_ATTR_FLOAT:
        a->f = ap->f;
        break;
    case MPX_ATTR_INT:
        a->i = ap->i;
        break;
    case MPX_ATTR_STRING:
        a->s = bytes_dup(ar, &ap->s);
        a->s_len = ap->s.len;
        if (!a->s) return fail(c, MPX_E_NOMEM, "out of memory");
        break;
    case MPX_ATTR_TENSOR:
        if (!ap->t) return fail(c, MPX_E_INVALID, "%s: TENSOR attribute without a tensor", what);
        return detached_tensor(c, ap->t, what, &a->t);
    case MPX_ATTR_GRAPH:
        if (ap->g) {
            a->graph_name = mpx_arena_strdup(ar, nz(ap->g->name));
            if (!a->graph_name) return fail(c, MPX_E_NOMEM, "out of memory");
            if ((st = int_count(c, ap->g->n_node, what, &a->graph_nodes)) != MPX_OK) return st;
        }
        break;
    case MPX_ATTR_FLOATS:
        if ((st = int_count(c, ap->n_floats, what, &a->n)) != MPX_OK) return st;
        a->floats = mpx_arena_calloc(ar, ap->n_floats ? ap->n_floats : 1, sizeof(float));
        if (!a->floats) return fail(c, MPX_E_NOMEM, "out of memory");
        if (ap->n_floats) memcpy(a->floats, ap->floats, ap->n_floats * sizeof(float));
        break;
    case MPX_ATTR_INTS:
        if ((st = int_count(c, ap->n_ints, what, &a->n)) != MPX_OK) return st;
        a->ints = mpx_arena_calloc(ar, ap->n_ints ? ap->n_ints : 1, sizeof(int64_t));
        if (!a->ints) return fail(c, MPX_E_NOMEM, "out of memory");
        if (ap->n_ints) memcpy(a->ints, ap->ints, ap->n_ints * sizeof(int64_t));
        break;
    case MPX_ATTR_STRINGS:
        if ((st = int_count(c, ap->n_strings, what, &a->n)) != MPX_OK) return st;
        a->strings = mpx_arena_calloc(ar, ap->n_strings ? ap->n_strings : 1, sizeof(char *));
        if (!a->strings) return fail(c, MPX_E_NOMEM, "out of memory");
        for (size_t i = 0; i < ap->n_strings; i++)
            if (!(a->strings[i] = bytes_dup(ar, &ap->strings[i])))
                return fail(c, MPX_E_NOMEM, "out of memory");
        break;
    case MPX_ATTR_TENSORS:
        if ((st = int_count(c, ap->n_tensors, what, &a->n)) != MPX_OK) return st;
        a->tensors = mpx_arena_calloc(ar, ap->n_tensors ? ap->n_tensors : 1, sizeof(mpx_tensor *));
        if (!a->tensors) return fail(c, MPX_E_NOMEM, "out of memory");
        for (size_t i = 0; i < ap->n_tensors; i++) {
            char w2[760];
            snprintf(w2, sizeof w2, "%s[%zu]", what, i);
            if ((st = detached_tensor(c, ap->tensors[i], w2, &a->tensors[i])) != MPX_OK)
                return st;
        }
        break;
    case MPX_ATTR_GRAPHS:
        /* n subgraphs; graph_name is the first one's, graph_nodes the total. */
        if ((st = int_count(c, ap->n_graphs, what, &a->n)) != MPX_OK) return st;
        if (ap->n_graphs) {
            a->graph_name = mpx_arena_strdup(ar, nz(ap->graphs[0]->name));
            if (!a->graph_name) return fail(c, MPX_E_NOMEM, "out of memory");
        }
        {
            size_t total = 0;
            for (size_t i = 0; i < ap->n_graphs; i++) total += ap->graphs[i]->n_node;
            if ((st = int_count(c, total, what, &a->graph_nodes)) != MPX_OK) return st;
        }
        break;
    case MPX_ATTR_SPARSE_TENSOR: case MPX_ATTR_TYPE_PROTO:
        break;
    case MPX_ATTR_SPARSE_TENSORS:
        return int_count(c, ap->n_sparse_tensors, what, &a->n);
    case MPX_ATTR_TYPE_PROTOS:
        return int_count(c, ap->n_type_protos, what, &a->n);
    }
    return MPX_OK;
}

/* ---- declared types -------------------------------------------------------- */

static mpx_status declare(ctx *c, mpx_tensor *t, const Onnx__ValueInfoProto *vi,
                          const char *what) {
    const Onnx__TypeProto *tp = vi->type;
    /* A sequence or optional of tensors: flagged (no plan gives it a format),
     * with the tensors' element type; maps and deeper nestings: nothing. */
    if (tp && (tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE ||
               tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE)) {
        bool opt = tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
        const Onnx__TypeProto *e = opt ? (tp->optional_type ? tp->optional_type->elem_type : NULL)
                                       : (tp->sequence_type ? tp->sequence_type->elem_type : NULL);
        /* an optional of a sequence of tensors (ONNX 1.11's optional
         * sequences: Loop's and If's optional outputs) */
        bool inner_seq = false;
        if (opt && e && e->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) {
            e = e->sequence_type ? e->sequence_type->elem_type : NULL;
            inner_seq = true;
        }
        if (e && e->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && e->tensor_type &&
            e->tensor_type->has_elem_type && e->tensor_type->elem_type > 0 &&
            e->tensor_type->elem_type < MPX_DT_COUNT_) {
            t->flags |= MPX_T_SEQUENCE | (opt ? MPX_T_OPTIONAL : 0u) | (inner_seq ? MPX_T_INNER_SEQ : 0u);
            t->dtype = (mpx_dtype)e->tensor_type->elem_type;
        }
        return MPX_OK;
    }
    /* Maps: no tensor shape to declare. */
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return MPX_OK;
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    mpx_dtype dt = MPX_DT_UNDEFINED;
    if (tt->has_elem_type && tt->elem_type > 0 && tt->elem_type < MPX_DT_COUNT_)
        dt = (mpx_dtype)tt->elem_type;
    if (!tt->shape) /* rank unknown */
        return mpx_tensor_declare(t, dt, -1, NULL, NULL, NULL);
    if (tt->shape->n_dim > MPX_MAX_RANK)
        return fail(c, MPX_E_UNSUPPORTED, "%s \"%s\": rank %zu exceeds mpx's limit of %d", what,
                    t->name, tt->shape->n_dim, MPX_MAX_RANK);
    int rank = (int)tt->shape->n_dim;
    int64_t dims[MPX_MAX_RANK];
    const char *sym[MPX_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        dims[i] = -1;
        sym[i] = NULL;
        if (!d) continue;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            /* Some exporters write -1 (or 0 for batch) for "dynamic"; negative
             * values are taken as unknown. */
            if (d->dim_value >= 0) dims[i] = d->dim_value;
        } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   d->dim_param && *d->dim_param) {
            sym[i] = mpx_arena_strdup(c->g->arena, d->dim_param);
            if (!sym[i]) return fail(c, MPX_E_NOMEM, "out of memory");
        }
    }
    mpx_error sub;
    if (mpx_tensor_declare(t, dt, rank, dims, sym, &sub) != MPX_OK)
        return fail(c, sub.status, "%s \"%s\": %s", what, t->name, sub.msg);
    return MPX_OK;
}

/* ---- the model ------------------------------------------------------------------ */


static mpx_status domain_opset(ctx *c, const char *domain, int *out) {
    const Onnx__ModelProto *m = c->model;
    bool dflt = mpx_onnx_default_domain(domain);
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (!o) continue;
        if (dflt ? mpx_onnx_default_domain(o->domain) : strcmp(nz(o->domain), domain) == 0) {
            if (o->version < 0 || o->version > INT_MAX)
                return fail(c, MPX_E_INVALID, "opset import of domain \"%s\": version %lld",
                            nz(o->domain), (long long)o->version);
            *out = (int)o->version;
            return MPX_OK;
        }
    }
    *out = -1;
    return MPX_OK;
}

static mpx_status tensor_for(ctx *c, const char *name, mpx_tensor **out) {
    *out = mpx_graph_tensor(c->g, name);
    return *out ? MPX_OK : fail(c, MPX_E_NOMEM, "out of memory");
}

/* ---- nodes and If subgraphs ------------------------------------------------------ */

/* A name as the current scope reads it: a tensor its own subgraph (or an
 * enclosing one) defines, innermost first, else the main graph's. */
static mpx_status tensor_read(ctx *c, const char *name, mpx_tensor **out) {
    for (int d = c->depth; d > 0; d--) {
        char full[1200];
        snprintf(full, sizeof full, "%s%s", c->scope[d], name);
        if ((*out = mpx_graph_find_tensor(c->g, full))) return MPX_OK;
    }
    return tensor_for(c, name, out);
}

/* A name the current scope defines (a node output or an initializer of a
 * subgraph): prefixed with the scope, so that the two branches of an If (and
 * the main graph) may use one name for different tensors. */
static mpx_status tensor_def(ctx *c, const char *name, mpx_tensor **out) {
    if (c->depth == 0) return tensor_for(c, name, out);
    char full[1200];
    if ((size_t)snprintf(full, sizeof full, "%s%s", c->scope[c->depth], name) >= sizeof full)
        return fail(c, MPX_E_LIMIT, "tensor \"%.200s...\" in subgraph \"%.200s...\": the name is too long",
                    name, c->scope[c->depth]);
    return tensor_for(c, full, out);
}

static mpx_status load_nodes(ctx *c, const Onnx__GraphProto *gp);

static mpx_status domain_opset(ctx *c, const char *domain, int *out);
static mpx_status load_attr(ctx *c, const mpx_node *n, const Onnx__AttributeProto *ap, mpx_attr *a);

/* What every node takes from its NodeProto: its domain's opset (0 for a
 * domain the model does not import: mpx does not run such ops, and refusing
 * the whole model would hide the rest), its outputs (defined in the current
 * scope), its attributes and, unless the caller wires them itself (If), its
 * inputs as the file lists them (read in the current scope). */
static mpx_status fill_node(ctx *c, const Onnx__NodeProto *np, mpx_node *n, bool file_inputs) {
    int ns;
    mpx_status st = domain_opset(c, np->domain, &ns);
    if (st != MPX_OK) return st;
    n->opset = ns < 0 ? 0 : ns;
    for (size_t j = 0; file_inputs && j < np->n_input; j++)
        if (np->input[j] && *np->input[j] && (st = tensor_read(c, np->input[j], &n->inputs[j])) != MPX_OK)
            return st;
    for (size_t j = 0; j < np->n_output; j++)
        if (np->output[j] && *np->output[j] && (st = tensor_def(c, np->output[j], &n->outputs[j])) != MPX_OK)
            return st;
    for (size_t j = 0; j < np->n_attribute; j++)
        if ((st = load_attr(c, n, np->attribute[j], &n->attrs[j])) != MPX_OK) return st;
    return MPX_OK;
}

/* ---- If: its branches flattened ------------------------------------------------
 *
 * The order in which nodes are added (mpx_node.file_order) is
 * mpx_onnx_walk_graph's (onnx_walk.c), which the exporter walks too: both
 * branches' nodes first (so the file order stays topological), then the If
 * itself, reading [cond, then outputs..., else outputs...]; it hands on the
 * outputs of the branch its condition selects (kern_data.c), and the branch
 * nodes carry it as their guard. A branch's initializers and nodes join the
 * graph under the prefix "<if name>/<then_branch|else_branch>/". */

static mpx_status if_begin(void *vc, const Onnx__NodeProto *np, const char *ifname) {
    ctx *c = vc;
    size_t k = np->n_output;
    if (np->n_input != 1 || !np->input[0] || !*np->input[0])
        return fail(c, MPX_E_INVALID, "node \"%s\" (If) has %zu inputs; it takes one, the condition", ifname,
                    np->n_input);
    if (k > 4096) return fail(c, MPX_E_LIMIT, "node \"%s\" (If) has %zu outputs", ifname, k);
    mpx_tensor **outs = mpx_arena_calloc(c->g->arena, 2 * k + 1, sizeof *outs);
    if (!outs) return fail(c, MPX_E_NOMEM, "out of memory");
    c->ifs[c->depth].outs = outs;
    c->ifs[c->depth].k = k;
    return MPX_OK;
}

static mpx_status branch_begin(void *vc, const Onnx__NodeProto *np, const char *ifname, int which_b,
                               const Onnx__GraphProto *b, const char *prefix, int depth) {
    ctx *c = vc;
    const char *which = which_b ? "else_branch" : "then_branch";
    size_t k = c->ifs[c->depth].k;
    (void)np, (void)depth;
    if (b->n_input)
        return fail(c, MPX_E_INVALID, "node \"%s\" (If): %s has %zu inputs; an If's branches take none", ifname,
                    which, b->n_input);
    if (b->n_output != k)
        return fail(c, MPX_E_INVALID, "node \"%s\" (If): %s has %zu outputs, the node %zu", ifname, which,
                    b->n_output, k);
    if (b->n_sparse_initializer)
        return fail(c, MPX_E_UNSUPPORTED, "node \"%s\" (If): %s has a sparse initializer", ifname, which);
    if (b->n_node > INT_MAX) return fail(c, MPX_E_LIMIT, "node \"%s\" (If): %s is too large", ifname, which);
    c->ifs[c->depth].first[which_b] = c->g->n_nodes;
    c->scope[++c->depth] = prefix; /* (the walk's, valid until branch_end) */
    for (size_t i = 0; i < b->n_initializer; i++) {
        const Onnx__TensorProto *tp = b->initializer[i];
        if (!tp->name || !*tp->name)
            return fail(c, MPX_E_INVALID, "node \"%s\" (If): %s: initializer %zu has no name", ifname, which, i);
        char what[1400];
        snprintf(what, sizeof what, "initializer \"%s%.500s\"", prefix, tp->name);
        mpx_tensor *t;
        mpx_status st;
        if ((st = tensor_def(c, tp->name, &t)) != MPX_OK) return st;
        if (t->flags & MPX_T_INITIALIZER) return fail(c, MPX_E_INVALID, "%s appears twice", what);
        if ((st = load_tensor(c, tp, t, what)) != MPX_OK) return st;
        t->flags |= MPX_T_INITIALIZER;
    }
    return MPX_OK;
}

/* The branch's outputs, read in its scope, for the If to read. */
static mpx_status branch_end(void *vc, const Onnx__NodeProto *np, const char *ifname, int which_b,
                             const Onnx__GraphProto *b) {
    ctx *c = vc;
    (void)np;
    size_t k = c->ifs[c->depth - 1].k;
    mpx_tensor **outs = c->ifs[c->depth - 1].outs + (size_t)which_b * k;
    for (size_t j = 0; j < k; j++) {
        const char *nm = b->output[j] ? b->output[j]->name : NULL;
        if (!nm || !*nm)
            return fail(c, MPX_E_INVALID, "node \"%s\" (If): %s output %zu has no name", ifname,
                        which_b ? "else_branch" : "then_branch", j);
        mpx_status st = tensor_read(c, nm, &outs[j]);
        if (st != MPX_OK) return st;
    }
    c->depth--;
    c->ifs[c->depth].last[which_b] = c->g->n_nodes;
    return MPX_OK;
}

/* The If, after its branches. */
static mpx_status load_if(ctx *c, const Onnx__NodeProto *np, const char *ifname) {
    mpx_graph *g = c->g;
    size_t k = c->ifs[c->depth].k;
    mpx_tensor **outs = c->ifs[c->depth].outs;
    const int *first = c->ifs[c->depth].first, *last = c->ifs[c->depth].last;
    mpx_status st;
    mpx_node *n = mpx_graph_add_node(g, ifname, np->op_type, np->domain, (int)(1 + 2 * k), (int)k,
                                     (int)np->n_attribute);
    if (!n) return fail(c, MPX_E_NOMEM, "out of memory");
    if ((st = fill_node(c, np, n, false)) != MPX_OK) return st;
    if ((st = tensor_read(c, np->input[0], &n->inputs[0])) != MPX_OK) return st;
    for (size_t j = 0; j < 2 * k; j++) n->inputs[1 + j] = outs[j];
    /* Nodes of nested Ifs keep their own If as guard; those Ifs get this one. */
    for (int b = 0; b < 2; b++)
        for (int i = first[b]; i < last[b]; i++)
            if (!g->nodes[i]->guard) g->nodes[i]->guard = n, g->nodes[i]->branch = b;
    return MPX_OK;
}

/* Loop, Scan and SequenceMap: the body becomes a graph of its own (mpx_node.body),
 * whose nodes are named "<node>/body/..." in messages. Its inputs are the
 * body's formal inputs, then each name it reads that no scope inside it
 * defines - a tensor of the enclosing graphs, which the node reads as an
 * extra input after its own, so that the plan, the run order and the value
 * lifetimes see the dependency. Declared shapes of the formal inputs are
 * not kept (each iteration binds the values' shapes), their types are. */
static mpx_status load_body_node(ctx *c, const Onnx__NodeProto *np, const Onnx__GraphProto *body) {
    mpx_graph *g = c->g;
    char name[1000];
    int len = np->name && *np->name ? snprintf(name, sizeof name, "%s%s", c->scope[c->depth], np->name)
                                    : snprintf(name, sizeof name, "%s%s_%d", c->scope[c->depth], np->op_type, g->n_nodes);
    if (len < 0 || (size_t)len >= sizeof name)
        return fail(c, MPX_E_LIMIT, "node \"%.200s...\" (%s): its name is too long", name, np->op_type);
    if (c->nest >= MPX_MAX_SUBGRAPH_DEPTH)
        return fail(c, MPX_E_LIMIT, "node \"%s\" (%s): bodies nested deeper than %d", name, np->op_type,
                    MPX_MAX_SUBGRAPH_DEPTH);
    if (body->n_input > 4096 || body->n_output > 4096 || np->n_input > 4096)
        return fail(c, MPX_E_LIMIT, "node \"%s\" (%s): too many inputs or outputs", name, np->op_type);
    mpx_graph *b = mpx_graph_new(c->path);
    if (!b) return fail(c, MPX_E_NOMEM, "out of memory");
    if (mpx_graph_adopt(g, b) != MPX_OK) return fail(c, MPX_E_NOMEM, "out of memory");
    b->opset = g->opset, b->ir_version = g->ir_version;
    char prefix[1100];
    snprintf(prefix, sizeof prefix, "%s/body/", name);
    ctx cc = *c;
    cc.g = b, cc.depth = 0, cc.nest = c->nest + 1;
    cc.scope[0] = mpx_arena_strdup(b->arena, prefix);
    if (!cc.scope[0]) return fail(c, MPX_E_NOMEM, "out of memory");
    b->name = mpx_arena_strdup(b->arena, name);
    mpx_status st;
    for (size_t i = 0; i < body->n_input; i++) {
        const char *nm = body->input[i] ? body->input[i]->name : NULL;
        if (!nm || !*nm) return fail(c, MPX_E_INVALID, "node \"%s\" (%s): body input %zu has no name", name,
                                     np->op_type, i);
        mpx_tensor *t;
        if ((st = tensor_for(&cc, nm, &t)) != MPX_OK) return st;
        if ((st = declare(&cc, t, body->input[i], "body input")) != MPX_OK) return st;
        t->decl_rank = -1; /* its shape is each iteration's */
        t->flags |= MPX_T_INPUT;
    }
    for (size_t i = 0; i < body->n_initializer; i++) {
        const Onnx__TensorProto *tp = body->initializer[i];
        if (!tp->name || !*tp->name)
            return fail(c, MPX_E_INVALID, "node \"%s\" (%s): body initializer %zu has no name", name, np->op_type, i);
        char what[1700];
        snprintf(what, sizeof what, "initializer \"%s%.500s\"", prefix, tp->name);
        mpx_tensor *t;
        if ((st = tensor_for(&cc, tp->name, &t)) != MPX_OK) return st;
        if (t->flags & MPX_T_INITIALIZER) return fail(c, MPX_E_INVALID, "%s appears twice", what);
        if ((st = load_tensor(&cc, tp, t, what)) != MPX_OK) return st;
        t->flags |= MPX_T_INITIALIZER;
    }
    if ((st = load_nodes(&cc, body)) != MPX_OK) return st;
    b->outputs = mpx_arena_calloc(b->arena, body->n_output ? body->n_output : 1, sizeof *b->outputs);
    if (!b->outputs) return fail(c, MPX_E_NOMEM, "out of memory");
    for (size_t i = 0; i < body->n_output; i++) {
        const char *nm = body->output[i] ? body->output[i]->name : NULL;
        if (!nm || !*nm) return fail(c, MPX_E_INVALID, "node \"%s\" (%s): body output %zu has no name", name,
                                     np->op_type, i);
        mpx_tensor *t;
        if ((st = tensor_for(&cc, nm, &t)) != MPX_OK) return st;
        /* only a container's kind is kept from the declaration (shapes are
         * each iteration's) */
        if (body->output[i]->type && body->output[i]->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
            (st = declare(&cc, t, body->output[i], "body output")) != MPX_OK)
            return st;
        t->flags |= MPX_T_OUTPUT;
        b->outputs[b->n_outputs++] = t;
    }
    /* What the body reads and does not define: the enclosing graphs'. */
    bool *def = calloc((size_t)b->n_tensors + 1, sizeof *def);
    if (!def) return fail(c, MPX_E_NOMEM, "out of memory");
    for (int i = 0; i < b->n_nodes; i++)
        for (int j = 0; j < b->nodes[i]->n_outputs; j++)
            if (b->nodes[i]->outputs[j]) def[b->nodes[i]->outputs[j]->index] = true;
    int n_free = 0;
    for (int i = 0; i < b->n_tensors; i++)
        n_free += !def[i] && !(b->tensors[i]->flags & (MPX_T_INPUT | MPX_T_INITIALIZER));
    b->inputs = mpx_arena_calloc(b->arena, body->n_input + (size_t)n_free + 1, sizeof *b->inputs);
    mpx_node *n = b->inputs ? mpx_graph_add_node(g, name, np->op_type, np->domain, (int)np->n_input + n_free,
                                                 (int)np->n_output, (int)np->n_attribute)
                            : NULL;
    if (!n) {
        free(def);
        return fail(c, MPX_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < body->n_input; i++) b->inputs[b->n_inputs++] = mpx_graph_find_tensor(b, body->input[i]->name);
    int k = (int)np->n_input;
    for (int i = 0; i < b->n_tensors && st == MPX_OK; i++) {
        mpx_tensor *t = b->tensors[i];
        if (def[i] || (t->flags & (MPX_T_INPUT | MPX_T_INITIALIZER))) continue;
        t->flags |= MPX_T_INPUT;
        b->inputs[b->n_inputs++] = t;
        st = tensor_read(c, t->name, &n->inputs[k++]);
    }
    free(def);
    if (st != MPX_OK) return st;
    n->body = b;
    n->n_explicit = (int)np->n_input;
    if ((st = fill_node(c, np, n, true)) != MPX_OK) return st;
    return mpx_graph_finalize(b, c->err);
}

/* One node of the walk (an If after its branches). */
static mpx_status load_node(void *vc, const Onnx__GraphProto *gp, size_t i, const char *prefix, int order,
                            const char *ifname) {
    ctx *c = vc;
    mpx_graph *g = c->g;
    const Onnx__NodeProto *np = gp->node[i];
    (void)order;
    if (!np->op_type || !*np->op_type)
        return fail(c, MPX_E_INVALID, "node %zu (\"%s%s\") has no op_type", i, prefix, nz(np->name));
    if (np->n_input > INT_MAX || np->n_output > INT_MAX || np->n_attribute > INT_MAX)
        return fail(c, MPX_E_LIMIT, "node \"%s%s\" has too many inputs, outputs or attributes", prefix,
                    nz(np->name));
    if (ifname) return load_if(c, np, ifname);
    const Onnx__GraphProto *body = mpx_onnx_graph_attr(np, "body");
    if ((strcmp(np->op_type, "Loop") == 0 || strcmp(np->op_type, "Scan") == 0 ||
         strcmp(np->op_type, "SequenceMap") == 0) &&
        mpx_onnx_default_domain(np->domain) && body)
        return load_body_node(c, np, body);
    char name[1200];
    if (np->name && *np->name) snprintf(name, sizeof name, "%s%s", prefix, np->name);
    else if (*prefix) snprintf(name, sizeof name, "%s%s_%d", prefix, np->op_type, g->n_nodes);
    else name[0] = '\0';
    mpx_node *n = mpx_graph_add_node(g, name, np->op_type, np->domain, (int)np->n_input,
                                     (int)np->n_output, (int)np->n_attribute);
    if (!n) return fail(c, MPX_E_NOMEM, "out of memory");
    return fill_node(c, np, n, true);
}

static mpx_status load_nodes(ctx *c, const Onnx__GraphProto *gp) {
    if (gp->n_node > INT_MAX) return fail(c, MPX_E_LIMIT, "the graph is too large");
    const mpx_onnx_walk w = {
        .ctx = c, .if_begin = if_begin, .branch_begin = branch_begin, .branch_end = branch_end, .node = load_node};
    return mpx_onnx_walk_graph(gp, c->scope[c->depth], &w, c->path, c->err);
}

static mpx_status convert(ctx *c, const Onnx__ModelProto *m) {
    mpx_graph *g = c->g;
    mpx_arena *ar = g->arena;
    mpx_status st;
    const Onnx__GraphProto *gp = m->graph;
    if (!gp)
        return fail(c, MPX_E_PARSE, "not an ONNX model: the file holds no graph");

    /* Metadata. */
    g->ir_version = m->has_ir_version ? m->ir_version : 0;
    g->name = mpx_arena_strdup(ar, nz(gp->name));
    {
        const char *pn = nz(m->producer_name), *pv = nz(m->producer_version);
        size_t n = strlen(pn) + strlen(pv) + 2;
        char *p = mpx_arena_alloc(ar, n);
        if (p) snprintf(p, n, "%s%s%s", pn, *pn && *pv ? " " : "", pv);
        g->producer = p;
    }
    if (!g->name || !g->producer) return fail(c, MPX_E_NOMEM, "out of memory");

    int opset;
    if ((st = domain_opset(c, "", &opset)) != MPX_OK) return st;
    if (opset < 0)
        return fail(c, MPX_E_UNSUPPORTED,
                    "the model imports no opset of the default ONNX domain (IR version %lld); "
                    "mpx reads opset 1 and newer",
                    (long long)g->ir_version);
    g->opset = opset;
    if (gp->n_node > INT_MAX || gp->n_initializer > INT_MAX || gp->n_input > INT_MAX ||
        gp->n_output > INT_MAX)
        return fail(c, MPX_E_LIMIT, "the graph is too large");

    /* Model inputs first, so tensors are listed inputs first. */
    for (size_t i = 0; i < gp->n_input; i++) {
        const char *nm = gp->input[i] ? gp->input[i]->name : NULL;
        if (!nm || !*nm) return fail(c, MPX_E_INVALID, "graph input %zu has no name", i);
        mpx_tensor *t;
        if ((st = tensor_for(c, nm, &t)) != MPX_OK) return st;
    }

    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp->name || !*tp->name)
            return fail(c, MPX_E_INVALID, "initializer %zu has no name", i);
        char what[600];
        snprintf(what, sizeof what, "initializer \"%.500s\"", tp->name);
        mpx_tensor *t;
        if ((st = tensor_for(c, tp->name, &t)) != MPX_OK) return st;
        if (t->flags & MPX_T_INITIALIZER)
            return fail(c, MPX_E_INVALID, "%s appears twice", what);
        if ((st = load_tensor(c, tp, t, what)) != MPX_OK) return st;
        t->flags |= MPX_T_INITIALIZER;
    }
    if (gp->n_sparse_initializer)
        return fail(c, MPX_E_UNSUPPORTED, "sparse initializer \"%s\" is not supported",
                    gp->sparse_initializer[0]->values
                        ? nz(gp->sparse_initializer[0]->values->name) : "");

    /* Inputs that are also initializers are weights with a default value
     * (older exporters list every weight as an input): not model inputs. */
    g->inputs = mpx_arena_calloc(ar, gp->n_input ? gp->n_input : 1, sizeof *g->inputs);
    g->outputs = mpx_arena_calloc(ar, gp->n_output ? gp->n_output : 1, sizeof *g->outputs);
    if (!g->inputs || !g->outputs) return fail(c, MPX_E_NOMEM, "out of memory");
    for (size_t i = 0; i < gp->n_input; i++) {
        mpx_tensor *t = mpx_graph_find_tensor(g, gp->input[i]->name);
        if (t->flags & (MPX_T_INITIALIZER | MPX_T_INPUT)) continue;
        if ((st = declare(c, t, gp->input[i], "model input")) != MPX_OK) return st;
        t->flags |= MPX_T_INPUT;
        g->inputs[g->n_inputs++] = t;
    }
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *nm = gp->output[i] ? gp->output[i]->name : NULL;
        if (!nm || !*nm) return fail(c, MPX_E_INVALID, "graph output %zu has no name", i);
        mpx_tensor *t;
        if ((st = tensor_for(c, nm, &t)) != MPX_OK) return st;
        if (t->flags & MPX_T_OUTPUT) continue;
        if (!(t->flags & (MPX_T_INITIALIZER | MPX_T_INPUT)) &&
            (st = declare(c, t, gp->output[i], "model output")) != MPX_OK)
            return st;
        t->flags |= MPX_T_OUTPUT;
        g->outputs[g->n_outputs++] = t;
    }
    for (size_t i = 0; i < gp->n_value_info; i++) {
        const char *nm = gp->value_info[i] ? gp->value_info[i]->name : NULL;
        if (!nm || !*nm) continue;
        mpx_tensor *t;
        if ((st = tensor_for(c, nm, &t)) != MPX_OK) return st;
        if (t->flags & (MPX_T_INITIALIZER | MPX_T_INPUT | MPX_T_OUTPUT)) continue;
        if ((st = declare(c, t, gp->value_info[i], "value_info")) != MPX_OK) return st;
    }

    c->scope[0] = "";
    if ((st = load_nodes(c, gp)) != MPX_OK) return st;
    /* Opsets 1-6: the nodes whose form changed are read in opset 7's
     * (onnx_legacy.c), so nothing after the loader knows older forms; up to
     * 9, the experimental ops (removed at 10) as standard ops. */
    if (opset < 10 && (st = mpx_onnx_legacy_rewrite(g, opset, c->err)) != MPX_OK) return st;
    return mpx_graph_finalize(g, c->err);
}

/* ---- nesting, before protobuf-c sees the bytes ----------------------------------
 *
 * protobuf-c unpacks a message by recursion, one C frame (and more) per
 * nested message: a 30 KB file of 2,500 Ifs, each in the last one's branch,
 * overflows the stack before the loader could count the levels. So the wire
 * format is walked first, iteratively, following only the fields through
 * which ONNX's messages can nest (graphs in attributes, types in types), and
 * a file nested deeper than mpx loads is refused here by the node that does
 * it. Anything the walk does not understand is left to protobuf-c to refuse:
 * it reads a message's fields before any submessage, so it never goes deeper
 * than the point where this walk stopped. */

enum { W_SKIP, W_MODEL, W_TRAIN, W_FUNC, W_GRAPH, W_NODE, W_ATTR, W_VALUEINFO, W_TYPE, W_TYPE_ELEM, W_TYPE_MAP };

/* The message a length-delimited field of kind holds, W_SKIP when it cannot
 * nest further (field numbers from onnx.proto). */
static int wire_child(int kind, uint64_t field) {
    switch (kind) {
    case W_MODEL: return field == 7 ? W_GRAPH : field == 20 ? W_TRAIN : field == 25 ? W_FUNC : W_SKIP;
    case W_TRAIN: return field == 1 || field == 2 ? W_GRAPH : W_SKIP;
    case W_FUNC: return field == 7 ? W_NODE : W_SKIP;
    case W_GRAPH: return field == 1 ? W_NODE : field >= 11 && field <= 13 ? W_VALUEINFO : W_SKIP;
    case W_NODE: return field == 5 ? W_ATTR : W_SKIP;
    case W_ATTR: return field == 6 || field == 11 ? W_GRAPH : field == 14 || field == 15 ? W_TYPE : W_SKIP;
    case W_VALUEINFO: return field == 2 ? W_TYPE : W_SKIP;
    case W_TYPE: return field == 4 || field == 9 ? W_TYPE_ELEM : field == 5 ? W_TYPE_MAP : W_SKIP;
    case W_TYPE_ELEM: return field == 1 ? W_TYPE : W_SKIP; /* Sequence, Optional */
    case W_TYPE_MAP: return field == 2 ? W_TYPE : W_SKIP;
    default: return W_SKIP;
    }
}

/* Messages nested deeper than this are refused: MPX_MAX_SUBGRAPH_DEPTH
 * graphs take 3 levels each (graph, node, attribute), types a few more. */
#define WIRE_MAX_DEPTH (3 * MPX_MAX_SUBGRAPH_DEPTH + 40)

/* A base-128 varint at *p, advancing it; false when cut off by end. */
static bool wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    uint64_t r = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

static mpx_status check_nesting(ctx *c, const uint8_t *buf, size_t len) {
    struct frame {
        const uint8_t *end;
        int kind;
        const uint8_t *name, *op; /* a node's, when seen */
        size_t name_len, op_len;
    } st[WIRE_MAX_DEPTH + 1];
    int top = 0, graphs = 0;
    st[0] = (struct frame){buf + len, W_MODEL, NULL, NULL, 0, 0};
    const uint8_t *p = buf;
    for (;;) {
        if (p >= st[top].end) {
            if (p > st[top].end) return MPX_OK; /* malformed: protobuf-c refuses it */
            if (top == 0) return MPX_OK;
            if (st[top].kind == W_GRAPH) graphs--;
            top--;
            continue;
        }
        uint64_t tag, v;
        if (!wire_varint(&p, st[top].end, &tag)) return MPX_OK;
        switch (tag & 7) {
        case 0:
            if (!wire_varint(&p, st[top].end, &v)) return MPX_OK;
            break;
        case 1:
        case 5: {
            size_t n = (tag & 7) == 1 ? 8 : 4;
            if ((size_t)(st[top].end - p) < n) return MPX_OK;
            p += n;
            break;
        }
        case 2: {
            if (!wire_varint(&p, st[top].end, &v) || v > (uint64_t)(st[top].end - p)) return MPX_OK;
            int kind = wire_child(st[top].kind, tag >> 3);
            if (st[top].kind == W_NODE && (tag >> 3) == 3) st[top].name = p, st[top].name_len = (size_t)v;
            if (st[top].kind == W_NODE && (tag >> 3) == 4) st[top].op = p, st[top].op_len = (size_t)v;
            if (kind == W_SKIP) {
                p += v;
                break;
            }
            /* graphs counts the model's own graph too. */
            if (kind == W_GRAPH && ++graphs > MPX_MAX_SUBGRAPH_DEPTH + 1) {
                /* The node whose attribute (the top frame) holds this graph. */
                const struct frame *n = st[top].kind == W_ATTR && st[top - 1].kind == W_NODE ? &st[top - 1] : NULL;
                int nl = n && n->name ? (int)(n->name_len < 200 ? n->name_len : 200) : 0;
                int ol = n && n->op ? (int)(n->op_len < 64 ? n->op_len : 64) : 0;
                return fail(c, MPX_E_LIMIT,
                            "node \"%.*s\" (%.*s): subgraphs nested deeper than %d (If branches and Loop "
                            "and Scan bodies together)", nl, n && n->name ? (const char *)n->name : "", ol,
                            n && n->op ? (const char *)n->op : "?", MPX_MAX_SUBGRAPH_DEPTH);
            }
            if (top == WIRE_MAX_DEPTH)
                return fail(c, MPX_E_LIMIT, "messages nested deeper than %d levels (types inside types?)",
                            WIRE_MAX_DEPTH);
            top++;
            st[top] = (struct frame){p + v, kind, NULL, NULL, 0, 0};
            break;
        }
        default: return MPX_OK; /* groups, bad wire types: protobuf-c's to refuse */
        }
    }
}

/* ---- entry points ------------------------------------------------------------ */

mpx_graph *mpx_graph_load_onnx_buffer(const uint8_t *buf, size_t len, const char *path,
                                      const char *dir, mpx_error *err) {
    uint64_t ext_bytes = 0;
    ctx c = {.path = path ? path : "", .dir = dir, .err = err, .ext_bytes = &ext_bytes};
    if (!buf && len) {
        mpx_error_set(err, MPX_E_ARG, "no buffer");
        return NULL;
    }
    if (len == 0) {
        fail(&c, MPX_E_PARSE, "not an ONNX model: the file is empty");
        return NULL;
    }
    if (len > MAX_ONNX_BYTES) {
        fail(&c, MPX_E_LIMIT,
             "%zu bytes is beyond protobuf's 2 GiB limit (large models keep weights in "
             "external data files)", len);
        return NULL;
    }
    if (check_nesting(&c, buf, len) != MPX_OK) return NULL;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    if (!m) {
        fail(&c, MPX_E_PARSE,
             "not an ONNX model: the protobuf does not decode (truncated or not ONNX), %zu bytes",
             len);
        return NULL;
    }
    c.model = m;
    c.g = mpx_graph_new(c.path);
    mpx_status st = c.g ? convert(&c, m) : fail(&c, MPX_E_NOMEM, "out of memory");
    onnx__model_proto__free_unpacked(m, NULL);
    free(c.dir_real);
    if (st != MPX_OK) {
        mpx_graph_free(c.g);
        return NULL;
    }
    return c.g;
}

mpx_status mpx_tensor_proto_decode(mpx_graph *g, const uint8_t *buf, size_t len,
                                   const char *path, mpx_tensor **out, mpx_error *err) {
    ctx c = {.g = g, .path = path ? path : "", .err = err};
    if (!g || !out || (!buf && len)) return mpx_error_set(err, MPX_E_ARG, "no graph or buffer");
    /* An empty buffer decodes as a TensorProto with nothing set. */
    if (len == 0) return fail(&c, MPX_E_PARSE, "not an ONNX TensorProto: the file is empty");
    if (len > MAX_ONNX_BYTES)
        return fail(&c, MPX_E_LIMIT, "%zu bytes is beyond protobuf's 2 GiB limit", len);
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
    if (!tp)
        return fail(&c, MPX_E_PARSE,
                    "not an ONNX TensorProto: the protobuf does not decode (truncated or "
                    "another kind of file), %zu bytes", len);
    char what[300];
    snprintf(what, sizeof what, "tensor \"%.256s\"", nz(tp->name));
    mpx_status st = detached_tensor(&c, tp, what, out);
    onnx__tensor_proto__free_unpacked(tp, NULL);
    free(c.dir_real);
    return st;
}

/* SequenceProto and OptionalProto live in onnx-data.proto, which Debian's
 * libonnx-dev does not ship (only onnx.proto, from which protobuf-c's reader
 * is generated), so their three fields that matter are read from the wire
 * here: 1 name (bytes), 2 elem_type (varint), 3 tensor values (each a
 * TensorProto, decoded by protobuf-c); an OptionalProto's fields 1-3 have
 * the same numbers and wire types. Fields 4-7 (sparse tensors, sequences,
 * maps, optionals) are refused. */
mpx_status mpx_sequence_proto_decode(mpx_graph *g, const uint8_t *buf, size_t len, const char *path,
                                     mpx_tensor ***items, int *n, char *name, size_t name_len,
                                     const uint8_t **inner, size_t *inner_len, mpx_error *err) {
    ctx c = {.g = g, .path = path ? path : "", .err = err};
    *items = NULL, *n = 0;
    if (inner) *inner = NULL, *inner_len = 0;
    if (name && name_len) name[0] = '\0';
    if (!g || (!buf && len)) return mpx_error_set(err, MPX_E_ARG, "no graph or buffer");
    if (len > MAX_ONNX_BYTES) return fail(&c, MPX_E_LIMIT, "%zu bytes is beyond protobuf's 2 GiB limit", len);
    enum { MAX_ITEMS = 65536 };
    mpx_tensor **got = mpx_arena_calloc(g->arena, MAX_ITEMS, sizeof *got);
    if (!got) return fail(&c, MPX_E_NOMEM, "out of memory");
    const uint8_t *p = buf, *end = buf + len;
    mpx_status st = MPX_OK;
    int count = 0;
    uint64_t elem_type = 1;
    while (p < end && st == MPX_OK) {
        uint64_t key, v;
        if (!wire_varint(&p, end, &key)) {
            st = fail(&c, MPX_E_PARSE, "not a SequenceProto: a field key is cut off");
            break;
        }
        uint64_t field = key >> 3, wt = key & 7;
        if (wt == 0) {
            if (!wire_varint(&p, end, &v)) st = fail(&c, MPX_E_PARSE, "not a SequenceProto: a number is cut off");
            else if (field == 2) elem_type = v;
            continue;
        }
        if (wt != 2 || !wire_varint(&p, end, &v) || v > (uint64_t)(end - p)) {
            st = fail(&c, MPX_E_PARSE, "not a SequenceProto or OptionalProto (field %llu, wire type %llu)",
                      (unsigned long long)field, (unsigned long long)wt);
            break;
        }
        const uint8_t *body = p;
        p += v;
        if (field == 1) {
            if (name && name_len) snprintf(name, name_len, "%.*s", (int)(v < 1000 ? v : 1000), (const char *)body);
        } else if (field == 3) {
            if (count == MAX_ITEMS) {
                st = fail(&c, MPX_E_LIMIT, "more than %d tensors in one sequence", MAX_ITEMS);
                break;
            }
            Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, (size_t)v, body);
            if (!tp) {
                st = fail(&c, MPX_E_PARSE, "item %d is not a TensorProto", count);
                break;
            }
            char what[300];
            snprintf(what, sizeof what, "item %d of \"%.200s\"", count, name ? name : "");
            st = detached_tensor(&c, tp, what, &got[count]);
            onnx__tensor_proto__free_unpacked(tp, NULL);
            if (st == MPX_OK) count++;
        } else if (field == 5 && inner && !*inner) { /* an OptionalProto's sequence_value */
            *inner = body, *inner_len = (size_t)v;
        } else if (field >= 4 && field <= 7) {
            st = fail(&c, MPX_E_UNSUPPORTED, "\"%s\": a sequence or optional of sparse tensors, sequences, maps or "
                      "optionals", name ? name : "");
        }
    }
    if (st == MPX_OK && inner && *inner && count > 0)
        st = fail(&c, MPX_E_INVALID, "\"%s\": an optional holding both a sequence and %d tensor%s", name ? name : "",
                  count, count == 1 ? "" : "s");
    if (st == MPX_OK && inner && *inner && elem_type != 3) /* (3: OptionalProto's SEQUENCE) */
        st = fail(&c, MPX_E_INVALID, "\"%s\": an optional of elements of kind %llu holding a sequence",
                  name ? name : "", (unsigned long long)elem_type);
    if (st == MPX_OK && !(inner && *inner) && elem_type != 1 && !(elem_type == 0 && count == 0)) /* 0: an empty optional */
        st = fail(&c, MPX_E_UNSUPPORTED, "\"%s\": elements of kind %llu, not tensors", name ? name : "",
                  (unsigned long long)elem_type);
    free(c.dir_real);
    if (st == MPX_OK) *items = got, *n = count;
    return st;
}

static mpx_graph *from_buffer(const void *buf, size_t len, const char *path, const char *dir,
                              mpx_error *err) {
    return mpx_graph_load_onnx_buffer(buf, len, path, dir, err);
}

mpx_graph *mpx_graph_load_onnx(const char *path, mpx_error *err) {
    if (!path || !*path) {
        mpx_error_set(err, MPX_E_ARG, "no model path");
        return NULL;
    }
    int fd = mpx_file_open_read(path, false, err);
    if (fd < 0) return NULL;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        mpx_error_at(err, MPX_E_IO, path, 0, 0, "cannot read: %s", strerror(errno));
        close(fd);
        return NULL;
    }
    if ((uint64_t)sb.st_size > MAX_ONNX_BYTES) {
        mpx_error_at(err, MPX_E_LIMIT, path, 0, 0,
                     "%lld bytes is beyond protobuf's 2 GiB limit (large models keep weights "
                     "in external data files)", (long long)sb.st_size);
        close(fd);
        return NULL;
    }
    size_t len = (size_t)sb.st_size, got = 0;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) {
        mpx_error_at(err, MPX_E_NOMEM, path, 0, 0, "out of memory for %zu bytes", len);
        close(fd);
        return NULL;
    }
    while (got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            mpx_error_at(err, MPX_E_IO, path, 0, 0, "cannot read: %s", strerror(errno));
            close(fd);
            free(buf);
            return NULL;
        }
        if (r == 0) break; /* shrank while reading: parse what is there */
        got += (size_t)r;
    }
    close(fd);
    return mpx_load_in_folder(buf, got, path, from_buffer, err);
}

static bool has_ext(const char *path, const char *ext) {
    size_t n = strlen(path), e = strlen(ext);
    return n > e && strcasecmp(path + n - e, ext) == 0;
}

mpx_graph *mpx_graph_load(const char *path, mpx_error *err) {
    if (!path || !*path) {
        mpx_error_set(err, MPX_E_ARG, "no model path");
        return NULL;
    }
    /* A folder is one answer whatever its name ends in. */
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        mpx_error_at(err, MPX_E_IO, path, 0, 0, "a folder, not a model file (a .onnx or .json file)");
        return NULL;
    }
    if (has_ext(path, ".onnx")) return mpx_graph_load_onnx(path, err);
    if (has_ext(path, ".json")) return mpx_graph_load_json(path, err);
    mpx_error_at(err, MPX_E_ARG, path, 0, 0,
                 "unknown model format: expected a .onnx or .json file");
    return NULL;
}
