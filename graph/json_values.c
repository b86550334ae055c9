/* json_values.c - tensor values of the JSON model: inline data (rounded to
 * the dtype), raw little-endian side files inside the model's folder, and
 * seeded random init (json_internal.h). */
/* glibc declares realpath only for X/Open (or _DEFAULT_SOURCE), not for the
 * build-wide _POSIX_C_SOURCE=200809L. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#include "json_internal.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* ---- values: rounding, data, side files, seeded init ---------------------- */

/* Round to a binary format with mant fraction bits and minimum normal exponent
 * emin (RNE, IEEE overflow to inf). Every float dtype is held as fp32, so a
 * float16 or bfloat16 value must already be exactly representable in its
 * format; rounding straight from the double avoids double rounding. */
static double round_bits(double x, int mant, int emin, double maxf) {
    if (!isfinite(x) || x == 0) return x;
    int e;
    frexp(x, &e);
    int lead = e - 1 < emin ? emin : e - 1;
    double r = ldexp(rint(ldexp(x, mant - lead)), lead - mant);
    return fabs(r) > maxf ? copysign(INFINITY, x) : r;
}

static float to_dtype(mpx_dtype dt, double v) {
    switch (dt) {
    case MPX_DT_FLOAT16: return (float)round_bits(v, 10, -14, 65504.0);
    case MPX_DT_BFLOAT16: return (float)round_bits(v, 7, -126, ldexp(255.0, 120));
    default: return (float)round_bits(v, 23, -126, FLT_MAX);
    }
}

static bool value_dtype_ok(mpx_dtype dt) {
    return dt == MPX_DT_FLOAT || dt == MPX_DT_FLOAT16 || dt == MPX_DT_BFLOAT16 ||
           dt == MPX_DT_DOUBLE || mpx_dtype_is_int_like(dt);
}

static void int_range(mpx_dtype dt, int64_t *lo, int64_t *hi) {
    switch (dt) {
    case MPX_DT_INT8: *lo = -128, *hi = 127; break;
    case MPX_DT_UINT8: *lo = 0, *hi = 255; break;
    case MPX_DT_INT16: *lo = -32768, *hi = 32767; break;
    case MPX_DT_UINT16: *lo = 0, *hi = 65535; break;
    case MPX_DT_INT32: *lo = INT32_MIN, *hi = INT32_MAX; break;
    case MPX_DT_UINT32: *lo = 0, *hi = UINT32_MAX; break;
    case MPX_DT_BOOL: *lo = 0, *hi = 1; break;
    case MPX_DT_UINT64: *lo = 0, *hi = INT64_MAX; break; /* held as int64 */
    default: *lo = INT64_MIN, *hi = INT64_MAX; break;
    }
}

static mpx_status set_elem(mpx_json_ctx *c, mpx_tensor *t, int64_t k, const cJSON *v, const char *what) {
    if (t->f32 || t->f64) {
        double x;
        if (cJSON_IsNumber(v)) {
            x = v->valuedouble;
        } else if (cJSON_IsString(v) && (!strcmp(v->valuestring, "inf") ||
                                         !strcmp(v->valuestring, "-inf") ||
                                         !strcmp(v->valuestring, "nan"))) {
            /* JSON has no spelling for these; a precision explorer needs them. */
            x = v->valuestring[0] == 'n' ? NAN : v->valuestring[0] == '-' ? -INFINITY : INFINITY;
        } else {
            return mpx_json_bad(c, MPX_E_INVALID, "%s must be a number (or \"inf\", \"-inf\", \"nan\"), not %s",
                       what, mpx_json_kind_name(v));
        }
        if (t->f64) t->f64[k] = x;
        else t->f32[k] = cJSON_IsNumber(v) ? to_dtype(t->dtype, x) : (float)x;
        return MPX_OK;
    }
    int64_t x, lo, hi;
    if (cJSON_IsBool(v)) x = cJSON_IsTrue(v);
    else if (!mpx_json_as_int64(c, v, &x))
        return mpx_json_bad(c, MPX_E_INVALID, "%s must be an integer for type %s", what,
                   mpx_dtype_name(t->dtype));
    int_range(t->dtype, &lo, &hi);
    if (x < lo || x > hi)
        return mpx_json_bad(c, MPX_E_INVALID, "%s (%lld) is out of range for type %s", what, (long long)x,
                   mpx_dtype_name(t->dtype));
    t->i64[k] = x;
    return MPX_OK;
}

/* The count was checked by read_value. */
static mpx_status fill_data(mpx_json_ctx *c, const cJSON *data, mpx_tensor *t) {
    char what[32];
    if (!cJSON_IsArray(data)) return set_elem(c, t, 0, data, "\"data\"");
    int k = 0;
    for (const cJSON *v = data->child; v; v = v->next, k++) {
        snprintf(what, sizeof what, "data[%d]", k);
        mpx_status st = set_elem(c, t, k, v, what);
        if (st != MPX_OK) return st;
    }
    return MPX_OK;
}

/* Little-endian element k of buf into t (a file written on any machine reads
 * the same). */
static mpx_status decode_elem(mpx_json_ctx *c, mpx_tensor *t, int64_t k, const unsigned char *p,
                              const char *path) {
    int nb = (int)mpx_dtype_size(t->dtype);
    uint64_t u = 0;
    for (int b = nb - 1; b >= 0; b--) u = (u << 8) | p[b];
    if (t->f64) {
        memcpy(&t->f64[k], &u, sizeof u);
        return MPX_OK;
    }
    if (mpx_dtype_is_float(t->dtype)) {
        t->f32[k] = mpx_dtype_decode(t->dtype, u);
        return MPX_OK;
    }
    switch (t->dtype) {
    case MPX_DT_BOOL: t->i64[k] = u != 0; return MPX_OK;
    case MPX_DT_INT8: t->i64[k] = (int8_t)(uint8_t)u; return MPX_OK;
    case MPX_DT_INT16: t->i64[k] = (int16_t)(uint16_t)u; return MPX_OK;
    case MPX_DT_INT32: t->i64[k] = (int32_t)(uint32_t)u; return MPX_OK;
    case MPX_DT_INT64: t->i64[k] = (int64_t)u; return MPX_OK;
    case MPX_DT_UINT64:
        if (u > (uint64_t)INT64_MAX)
            return mpx_json_bad(c, MPX_E_UNSUPPORTED, "side file \"%s\": element %lld (%llu) exceeds int64",
                       path, (long long)k, (unsigned long long)u);
        t->i64[k] = (int64_t)u;
        return MPX_OK;
    default: t->i64[k] = (int64_t)u; return MPX_OK; /* uint8/16/32 */
    }
}

/* Side files must stay inside the model's folder: a model from elsewhere must
 * not be able to read /etc/... into its weights. Checked lexically (clear
 * message) and after realpath (symlinks). On success *fp is positioned at the
 * tensor's bytes; every check happens before the value is allocated, so a
 * 20-byte model cannot make mpx touch gigabytes before it is refused. */
static mpx_status open_side(mpx_json_ctx *c, const cJSON *spec, mpx_dtype dt, int64_t nelem, FILE **fp,
                            const char **pathp) {
    static const char *const keys[] = {"path", "offset", "doc", NULL};
    const char *path = NULL;
    int64_t offset = 0;
    if (cJSON_IsString(spec) && spec->valuestring) {
        path = spec->valuestring;
    } else if (cJSON_IsObject(spec)) {
        mpx_status st = mpx_json_check_keys(c, spec, keys, NULL);
        if (st == MPX_OK) st = mpx_json_get_str(c, spec, "path", true, NULL, &path);
        if (st != MPX_OK) return st;
        const cJSON *o = mpx_json_field(spec, "offset");
        if (o && (!mpx_json_as_int64(c, o, &offset) || offset < 0))
            return mpx_json_bad(c, MPX_E_INVALID, "\"offset\" must be a non-negative integer");
    } else {
        return mpx_json_bad(c, MPX_E_INVALID, "\"file\" must be a path or {\"path\": ..., \"offset\": ...}");
    }
    if (!path[0]) return mpx_json_bad(c, MPX_E_INVALID, "side file path is empty");
    if (!c->dir)
        return mpx_json_bad(c, MPX_E_UNSUPPORTED, "side file \"%s\": this model has no folder to read it from", path);
    if (path[0] == '/')
        return mpx_json_bad(c, MPX_E_INVALID, "side file \"%s\" is an absolute path; give it relative to the model's folder", path);
    if (mpx_path_has_dotdot(path))
        return mpx_json_bad(c, MPX_E_INVALID, "side file \"%s\" leaves the model's folder", path);

    mpx_status st = MPX_OK;
    FILE *f = NULL;
    char *rdir = NULL, *rfile = NULL;
    size_t jl = strlen(c->dir) + strlen(path) + 2;
    char *joined = malloc(jl);
    if (!joined) return mpx_json_bad(c, MPX_E_NOMEM, "out of memory");
    snprintf(joined, jl, "%s/%s", c->dir, path);
    if (!(rdir = realpath(c->dir, NULL)) || !(rfile = realpath(joined, NULL))) {
        st = mpx_json_bad(c, MPX_E_IO, "cannot open side file \"%s\": %s", joined, strerror(errno));
        goto out;
    }
    size_t dl = strlen(rdir);
    if (dl > 1 && (strncmp(rfile, rdir, dl) != 0 || rfile[dl] != '/')) {
        st = mpx_json_bad(c, MPX_E_INVALID, "side file \"%s\" resolves to \"%s\", outside the model's folder",
                 path, rfile);
        goto out;
    }
    struct stat sb;
    mpx_error oerr;
    int fd = mpx_file_open_read(rfile, false, &oerr);
    if (fd < 0) {
        st = mpx_json_bad(c, oerr.status, "cannot read side file \"%s\": %s", joined, oerr.msg);
        goto out;
    }
    f = fstat(fd, &sb) == 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        close(fd);
        st = mpx_json_bad(c, MPX_E_IO, "cannot read side file \"%s\": %s", joined, strerror(errno));
        goto out;
    }
    int eb = (int)mpx_dtype_size(dt);
    int64_t need = nelem * eb, size = (int64_t)sb.st_size;
    if (offset > size || need > size - offset) {
        /* offset may be anything up to INT64_MAX: the sum is formatted unsigned. */
        st = mpx_json_bad(c, MPX_E_INVALID,
                 "side file \"%s\" has %lld bytes; offset %lld + %lld elements x %d bytes needs %llu",
                 path, (long long)size, (long long)offset, (long long)nelem, eb,
                 (unsigned long long)offset + (unsigned long long)need);
        goto out;
    }
    if (fseeko(f, (off_t)offset, SEEK_SET) != 0) {
        st = mpx_json_bad(c, MPX_E_IO, "cannot read side file \"%s\": %s", path, strerror(errno));
        goto out;
    }
    if (mpx_graph_note_file(c->g, rfile) != MPX_OK) {
        st = mpx_json_bad(c, MPX_E_NOMEM, "out of memory");
        goto out;
    }
    *fp = f;
    *pathp = path;
    f = NULL;
out:
    if (f) fclose(f);
    free(rdir);
    free(rfile);
    free(joined);
    return st;
}

static mpx_status read_side(mpx_json_ctx *c, FILE *f, mpx_tensor *t, const char *path) {
    enum { CHUNK = 1 << 16 };
    int eb = (int)mpx_dtype_size(t->dtype);
    unsigned char *buf = malloc(CHUNK);
    mpx_status st = buf ? MPX_OK : mpx_json_bad(c, MPX_E_NOMEM, "out of memory");
    for (int64_t k = 0; k < t->nelem && st == MPX_OK;) {
        int64_t n = t->nelem - k < CHUNK / eb ? t->nelem - k : CHUNK / eb;
        if (fread(buf, (size_t)eb, (size_t)n, f) != (size_t)n) {
            st = mpx_json_bad(c, MPX_E_IO, "short read from side file \"%s\"", path);
            break;
        }
        for (int64_t j = 0; j < n && st == MPX_OK; j++, k++)
            st = decode_elem(c, t, k, buf + j * eb, path);
    }
    free(buf);
    return st;
}

static uint64_t fnv1a(const char *s) {
    uint64_t h = 14695981039346656037u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static mpx_status fill_init(mpx_json_ctx *c, const cJSON *init, const cJSON *params, mpx_tensor *t) {
    static const char *const keys[] = {"dist", "mean", "std", "low", "high", "seed", "value", "doc", NULL};
    const char *dist;
    mpx_status st;
    if (cJSON_IsString(init)) {
        dist = init->valuestring;
    } else if (cJSON_IsObject(init)) {
        if ((st = mpx_json_check_keys(c, init, keys, NULL)) != MPX_OK ||
            (st = mpx_json_get_str(c, init, "dist", true, NULL, &dist)) != MPX_OK)
            return st;
    } else {
        return mpx_json_bad(c, MPX_E_INVALID, "\"init\" must be a string or an object, not %s", mpx_json_kind_name(init));
    }
    bool zeros = !strcmp(dist, "zeros"), ones = !strcmp(dist, "ones");
    bool normal = !strcmp(dist, "normal"), uniform = !strcmp(dist, "uniform");
    if (zeros || ones || !strcmp(dist, "constant")) {
        /* Element 0 (always allocated) takes the value with set_elem's checks. */
        if (t->f32) t->f32[0] = (float)ones;
        else if (t->f64) t->f64[0] = ones;
        else t->i64[0] = ones;
        if (!zeros && !ones) {
            const cJSON *vv = mpx_json_field(params, "value");
            if (!vv) return mpx_json_bad(c, MPX_E_INVALID, "constant init needs \"value\"");
            if ((st = set_elem(c, t, 0, vv, "\"value\"")) != MPX_OK) return st;
        }
        for (int64_t k = 1; k < t->nelem; k++) {
            if (t->f32) t->f32[k] = t->f32[0];
            else if (t->f64) t->f64[k] = t->f64[0];
            else t->i64[k] = t->i64[0];
        }
        return MPX_OK;
    }
    if (!normal && !uniform)
        return mpx_json_bad(c, MPX_E_INVALID,
                   "unknown init \"%.40s\" (normal, uniform, constant, zeros, ones)", dist);
    if (!t->f32 && !t->f64)
        return mpx_json_bad(c, MPX_E_UNSUPPORTED, "random init needs a float type, not %s",
                   mpx_dtype_name(t->dtype));
    double a, b;
    if ((st = mpx_json_get_num(c, params, normal ? "mean" : "low", 0.0, &a)) != MPX_OK ||
        (st = mpx_json_get_num(c, params, normal ? "std" : "high", 1.0, &b)) != MPX_OK)
        return st;
    if (normal && b < 0) return mpx_json_bad(c, MPX_E_INVALID, "\"std\" is negative");
    if (uniform && b < a) return mpx_json_bad(c, MPX_E_INVALID, "\"high\" is below \"low\"");
    uint64_t seed = fnv1a(t->name);
    const cJSON *sv = mpx_json_field(params, "seed");
    if (sv) {
        int64_t s;
        if (!mpx_json_as_int64(c, sv, &s) || s < 0)
            return mpx_json_bad(c, MPX_E_INVALID, "\"seed\" must be a non-negative integer");
        seed = (uint64_t)s;
    }
    mpx_rng rng;
    mpx_rng_init(&rng, seed);
    for (int64_t k = 0; k < t->nelem; k++) {
        double v = uniform ? a + (b - a) * mpx_rng_unit(&rng) : mpx_rng_normal(&rng, a, b);
        if (t->f64) t->f64[k] = v;
        else t->f32[k] = to_dtype(t->dtype, v);
    }
    return MPX_OK;
}

/* A tensor with a value: {"type", "shape", and one of "data" / "init" / "file"}.
 * Initializers and TENSOR attributes share it. */
mpx_status mpx_json_read_value(mpx_json_ctx *c, const cJSON *obj, mpx_tensor *t, bool named) {
    static const char *const keys[] = {"name", "type", "shape", "data", "init", "file", "doc", NULL};
    static const char *const flat_init[] = {"mean", "std", "low", "high", "seed", "value", NULL};
    if (!cJSON_IsObject(obj)) return mpx_json_bad(c, MPX_E_INVALID, "a tensor must be an object, not %s", mpx_json_kind_name(obj));
    const cJSON *data = mpx_json_field(obj, "data"), *init = mpx_json_field(obj, "init"), *file = mpx_json_field(obj, "file");
    /* The short form {"init": "normal", "std": 0.05, "seed": 3} keeps the
     * parameters beside "init". */
    bool flat = cJSON_IsString(init);
    /* keys[0] is "name": attribute tensors have none */
    mpx_status st = mpx_json_check_keys(c, obj, keys + (named ? 0 : 1), flat ? flat_init : NULL);
    if (st != MPX_OK) return st;
    const char *tname;
    if ((st = mpx_json_get_str(c, obj, "type", true, NULL, &tname)) != MPX_OK) return st;
    mpx_dtype dt = mpx_dtype_from_name(tname);
    if (dt == MPX_DT_UNDEFINED)
        return mpx_json_bad(c, MPX_E_INVALID, "unknown type \"%.40s\" (float32, float16, bfloat16, float64, "
                   "int64, int32, int16, int8, uint8, bool, ...)", tname);
    if (!value_dtype_ok(dt))
        return mpx_json_bad(c, MPX_E_UNSUPPORTED, "values of type %s are not supported", mpx_dtype_name(dt));
    const cJSON *shape = mpx_json_field(obj, "shape");
    if (!shape) return mpx_json_bad(c, MPX_E_INVALID, "missing \"shape\"");
    int rank;
    int64_t dims[MPX_MAX_RANK];
    const char *sym[MPX_MAX_RANK];
    if ((st = mpx_json_read_shape(c, shape, false, &rank, dims, sym)) != MPX_OK) return st;
    int sources = !!data + !!init + !!file;
    if (sources != 1)
        return mpx_json_bad(c, MPX_E_INVALID, sources ? "give only one of \"data\", \"init\" and \"file\""
                                             : "needs one of \"data\", \"init\" or \"file\"");
    /* Refuse a wrong "data" length or a bad side file before allocating. */
    int64_t n;
    mpx_error sub;
    if (mpx_dims_check(rank, dims, &n, &sub) != MPX_OK) return mpx_json_bad(c, MPX_E_LIMIT, "%s", sub.msg);
    if (data && cJSON_IsArray(data) && cJSON_GetArraySize(data) != n)
        return mpx_json_bad(c, MPX_E_INVALID, "\"data\" has %d values but the shape needs %lld",
                   cJSON_GetArraySize(data), (long long)n);
    if (data && !cJSON_IsArray(data) && (n != 1 || cJSON_IsObject(data)))
        return mpx_json_bad(c, MPX_E_INVALID, "\"data\" must be an array of %lld values", (long long)n);
    if (init) {
        const int64_t bytes = n * (mpx_dtype_is_float(dt) && dt != MPX_DT_DOUBLE ? 4 : 8);
        if (bytes > MPX_JSON_INIT_MAX - c->init_bytes)
            return mpx_json_bad(c, MPX_E_LIMIT, "\"init\" would generate %lld values (%.1f MiB), beyond the "
                                                "%lld MiB a model's generated values may take (give \"file\")",
                                (long long)n, (double)bytes / (1 << 20), (long long)(MPX_JSON_INIT_MAX >> 20));
        c->init_bytes += bytes;
    }
    FILE *f = NULL;
    const char *side = NULL;
    if (file && (st = open_side(c, file, dt, n, &f, &side)) != MPX_OK) return st;
    if ((st = mpx_tensor_alloc_value(c->g, t, dt, rank, dims, &sub)) != MPX_OK)
        st = mpx_json_bad(c, st, "%s", sub.msg);
    else if (data)
        st = fill_data(c, data, t);
    else if (init)
        st = fill_init(c, init, flat ? obj : init, t);
    else
        st = read_side(c, f, t, side);
    if (f) fclose(f);
    return st;
}
