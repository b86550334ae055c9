/* json_load.c - mpx's own JSON model format (docs/json-model.md) into the IR.
 *
 * The cJSON tree is only read here: every structural rule (one producer per
 * tensor, no dangling read, no cycle) is left to mpx_graph_finalize so JSON and
 * ONNX models get the same checks. The tree is deleted before returning on
 * every path; on failure the partial graph is freed too.
 *
 * cJSON keeps neither a number's spelling nor exact 64-bit integers, yet the
 * format needs both ("alpha": 1 is INT but 1.0 is FLOAT; Slice ends of
 * 9223372036854775807). So the text is scanned once more for number tokens,
 * in document order, and each cJSON number's valueint is overwritten with its
 * index in that side table (valueint is never used otherwise). */
/* glibc declares realpath only for X/Open (or _DEFAULT_SOURCE), not for the
 * build-wide _POSIX_C_SOURCE=200809L. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif

#include "graph_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Model files beyond this are refused (weights belong in side files). */
#define MAX_JSON_BYTES ((size_t)1 << 30)

typedef struct {
    int64_t i;     /* exact value when !is_float && i_ok */
    bool is_float; /* spelled with '.', 'e' or 'E' */
    bool i_ok;     /* integer spelling that fits int64 */
} numinfo;

typedef struct {
    const char *file; /* names the model in messages */
    const char *dir;  /* folder side files are relative to; NULL refuses them */
    mpx_graph *g;
    mpx_error *err;
    numinfo *nums;
    int n_nums;
    char where[512]; /* JSON path of what is being read, for messages */
} ctx;

static mpx_status bad(ctx *c, mpx_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static mpx_status bad(ctx *c, mpx_status st, const char *fmt, ...) {
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->where[0]) mpx_error_at(c->err, st, c->file, 0, 0, "%s: %s", c->where, msg);
    else mpx_error_at(c->err, st, c->file, 0, 0, "%s", msg);
    return st;
}

static void set_where(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_where(ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->where, sizeof c->where, fmt, ap);
    va_end(ap);
}

/* Appends to the path; the caller restores the saved copy afterwards. */
static void push_where(ctx *c, const char *suffix) {
    size_t n = strlen(c->where);
    snprintf(c->where + n, sizeof c->where - n, "%s", suffix);
}

/* ---- number spellings ------------------------------------------------------ */

/* Same token rule as cJSON's parse_number: in valid JSON, every number starts
 * with '-' or a digit outside a string and runs over [0-9+-.eE]. */
static int scan_numbers(const char *s, size_t len, numinfo *out) {
    int n = 0;
    for (size_t i = 0; i < len;) {
        char ch = s[i];
        if (ch == '"') {
            for (i++; i < len && s[i] != '"'; i++)
                if (s[i] == '\\') i++;
            i++;
        } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
            size_t b = i;
            bool fl = false;
            while (i < len && s[i] != '\0' && strchr("0123456789+-.eE", s[i])) {
                fl |= s[i] == '.' || s[i] == 'e' || s[i] == 'E';
                i++;
            }
            if (out) {
                char tok[72];
                size_t tl = i - b < sizeof tok - 1 ? i - b : sizeof tok - 1;
                memcpy(tok, s + b, tl);
                tok[tl] = '\0';
                out[n].is_float = fl;
                out[n].i_ok = false;
                if (!fl) {
                    errno = 0;
                    char *end;
                    long long v = strtoll(tok, &end, 10);
                    out[n].i_ok = errno == 0 && *end == '\0';
                    out[n].i = v;
                }
            }
            n++;
        } else {
            i++;
        }
    }
    return n;
}

static void number_index(cJSON *it, int *k) {
    for (; it; it = it->next) {
        if (cJSON_IsNumber(it)) it->valueint = (*k)++;
        if (it->child) number_index(it->child, k);
    }
}

static const numinfo *num_of(const ctx *c, const cJSON *it) {
    return it->valueint >= 0 && it->valueint < c->n_nums ? &c->nums[it->valueint] : NULL;
}

static bool spelled_float(const ctx *c, const cJSON *it) {
    const numinfo *ni = num_of(c, it);
    return ni ? ni->is_float : it->valuedouble != floor(it->valuedouble);
}

/* An integer where one is expected: 3 and 3.0 both count; 2.5 and 1e300 do not. */
static bool as_int64(const ctx *c, const cJSON *it, int64_t *out) {
    if (!cJSON_IsNumber(it)) return false;
    const numinfo *ni = num_of(c, it);
    if (ni && !ni->is_float) {
        *out = ni->i;
        return ni->i_ok;
    }
    double v = it->valuedouble;
    if (v != floor(v) || !(fabs(v) < 9.2e18)) return false;
    *out = (int64_t)v;
    return true;
}

/* ---- small field helpers -------------------------------------------------- */

static const char *kind_name(const cJSON *v) {
    if (!v) return "nothing";
    if (cJSON_IsObject(v)) return "an object";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNull(v)) return "null";
    return "an invalid value";
}

static const cJSON *field(const cJSON *obj, const char *key) {
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static bool in_list(const char *s, const char *const *list) {
    for (; list && *list; list++)
        if (strcmp(s, *list) == 0) return true;
    return false;
}

/* A typo in a key ("initialisers") must not silently drop data, so unknown
 * keys are errors; keys starting with '_' are comments. */
static mpx_status check_keys(ctx *c, const cJSON *obj, const char *const *allowed,
                             const char *const *also) {
    for (const cJSON *it = obj->child; it; it = it->next) {
        const char *k = it->string ? it->string : "";
        if (k[0] == '_') continue;
        if (!in_list(k, allowed) && !in_list(k, also))
            return bad(c, MPX_E_INVALID, "unknown key \"%.80s\"", k);
        for (const cJSON *p = obj->child; p != it; p = p->next)
            if (p->string && strcmp(p->string, k) == 0)
                return bad(c, MPX_E_INVALID, "key \"%.80s\" appears twice", k);
    }
    return MPX_OK;
}

/* *out = the string, or dflt when absent (an error when required). */
static mpx_status get_str(ctx *c, const cJSON *obj, const char *key, bool required,
                          const char *dflt, const char **out) {
    const cJSON *v = field(obj, key);
    *out = dflt;
    if (!v) return required ? bad(c, MPX_E_INVALID, "missing \"%s\"", key) : MPX_OK;
    if (!cJSON_IsString(v))
        return bad(c, MPX_E_INVALID, "\"%s\" must be a string, not %s", key, kind_name(v));
    *out = v->valuestring ? v->valuestring : "";
    return MPX_OK;
}

static mpx_status get_num(ctx *c, const cJSON *obj, const char *key, double dflt,
                          double *out) {
    const cJSON *v = field(obj, key);
    *out = dflt;
    if (!v) return MPX_OK;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return bad(c, MPX_E_INVALID, "\"%s\" must be a finite number", key);
    *out = v->valuedouble;
    return MPX_OK;
}

static char *dup(ctx *c, const char *s) {
    return mpx_arena_strdup(c->g->arena, s);
}

/* ---- shapes ------------------------------------------------------------------ */

/* Dims are non-negative integers; with allow_sym also a string (a symbolic dim
 * such as "batch") or null (an anonymous unknown dim), both stored as -1. */
static mpx_status read_shape(ctx *c, const cJSON *arr, bool allow_sym, int *rank,
                             int64_t *dims, const char **sym) {
    if (!cJSON_IsArray(arr))
        return bad(c, MPX_E_INVALID, "\"shape\" must be an array, not %s", kind_name(arr));
    int r = cJSON_GetArraySize(arr);
    if (r > MPX_MAX_RANK)
        return bad(c, MPX_E_UNSUPPORTED, "\"shape\" has rank %d; mpx supports up to %d", r,
                   MPX_MAX_RANK);
    int i = 0;
    for (const cJSON *d = arr->child; d; d = d->next, i++) {
        sym[i] = NULL;
        if (allow_sym && cJSON_IsString(d)) {
            dims[i] = -1;
            if (!(sym[i] = dup(c, d->valuestring))) return bad(c, MPX_E_NOMEM, "out of memory");
        } else if (allow_sym && cJSON_IsNull(d)) {
            dims[i] = -1;
        } else if (!as_int64(c, d, &dims[i])) {
            return bad(c, MPX_E_INVALID, "shape[%d] must be %s", i,
                       allow_sym ? "an integer, a name or null" : "an integer");
        } else if (dims[i] < 0) {
            return bad(c, MPX_E_INVALID, "shape[%d] is negative (%lld)%s", i,
                       (long long)dims[i], allow_sym ? "; write null or a name for an unknown dim" : "");
        }
    }
    *rank = r;
    int64_t n;
    mpx_error sub;
    if (mpx_dims_check(r, dims, &n, &sub) != MPX_OK)
        return bad(c, MPX_E_LIMIT, "\"shape\": %s", sub.msg);
    return MPX_OK;
}

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

static mpx_status set_elem(ctx *c, mpx_tensor *t, int64_t k, const cJSON *v, const char *what) {
    if (t->f32) {
        if (cJSON_IsNumber(v)) {
            t->f32[k] = to_dtype(t->dtype, v->valuedouble);
        } else if (cJSON_IsString(v) && (!strcmp(v->valuestring, "inf") ||
                                         !strcmp(v->valuestring, "-inf") ||
                                         !strcmp(v->valuestring, "nan"))) {
            /* JSON has no spelling for these; a precision explorer needs them. */
            t->f32[k] = v->valuestring[0] == 'n' ? NAN
                        : v->valuestring[0] == '-' ? -INFINITY : INFINITY;
        } else {
            return bad(c, MPX_E_INVALID, "%s must be a number (or \"inf\", \"-inf\", \"nan\"), not %s",
                       what, kind_name(v));
        }
        return MPX_OK;
    }
    int64_t x, lo, hi;
    if (cJSON_IsBool(v)) x = cJSON_IsTrue(v);
    else if (!as_int64(c, v, &x))
        return bad(c, MPX_E_INVALID, "%s must be an integer for type %s", what,
                   mpx_dtype_name(t->dtype));
    int_range(t->dtype, &lo, &hi);
    if (x < lo || x > hi)
        return bad(c, MPX_E_INVALID, "%s (%lld) is out of range for type %s", what, (long long)x,
                   mpx_dtype_name(t->dtype));
    t->i64[k] = x;
    return MPX_OK;
}

/* The count was checked by read_value. */
static mpx_status fill_data(ctx *c, const cJSON *data, mpx_tensor *t) {
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

static int elem_bytes(mpx_dtype dt) {
    switch (dt) {
    case MPX_DT_INT8: case MPX_DT_UINT8: case MPX_DT_BOOL: return 1;
    case MPX_DT_INT16: case MPX_DT_UINT16: case MPX_DT_FLOAT16: case MPX_DT_BFLOAT16: return 2;
    case MPX_DT_INT32: case MPX_DT_UINT32: case MPX_DT_FLOAT: return 4;
    default: return 8;
    }
}

static float half_to_float(uint32_t h) {
    uint32_t e = (h >> 10) & 31u, m = h & 1023u;
    double v = e == 0 ? ldexp((double)m, -24)
             : e == 31 ? (m ? NAN : INFINITY)
             : ldexp((double)(m | 1024u), (int)e - 25);
    return (float)((h & 0x8000u) ? -v : v);
}

/* Little-endian element k of buf into t (a file written on any machine reads
 * the same). */
static mpx_status decode_elem(ctx *c, mpx_tensor *t, int64_t k, const unsigned char *p,
                              const char *path) {
    int nb = elem_bytes(t->dtype);
    uint64_t u = 0;
    for (int b = nb - 1; b >= 0; b--) u = (u << 8) | p[b];
    switch (t->dtype) {
    case MPX_DT_FLOAT: {
        uint32_t u32 = (uint32_t)u;
        memcpy(&t->f32[k], &u32, sizeof u32);
        return MPX_OK;
    }
    case MPX_DT_FLOAT16: t->f32[k] = half_to_float((uint32_t)u); return MPX_OK;
    case MPX_DT_BFLOAT16: {
        uint32_t u32 = (uint32_t)u << 16;
        memcpy(&t->f32[k], &u32, sizeof u32);
        return MPX_OK;
    }
    case MPX_DT_DOUBLE: {
        double d;
        memcpy(&d, &u, sizeof d);
        t->f32[k] = to_dtype(MPX_DT_FLOAT, d);
        return MPX_OK;
    }
    case MPX_DT_BOOL: t->i64[k] = u != 0; return MPX_OK;
    case MPX_DT_INT8: t->i64[k] = (int8_t)(uint8_t)u; return MPX_OK;
    case MPX_DT_INT16: t->i64[k] = (int16_t)(uint16_t)u; return MPX_OK;
    case MPX_DT_INT32: t->i64[k] = (int32_t)(uint32_t)u; return MPX_OK;
    case MPX_DT_INT64: t->i64[k] = (int64_t)u; return MPX_OK;
    case MPX_DT_UINT64:
        if (u > (uint64_t)INT64_MAX)
            return bad(c, MPX_E_UNSUPPORTED, "side file \"%s\": element %lld (%llu) exceeds int64",
                       path, (long long)k, (unsigned long long)u);
        t->i64[k] = (int64_t)u;
        return MPX_OK;
    default: t->i64[k] = (int64_t)u; return MPX_OK; /* uint8/16/32 */
    }
}

static bool has_dotdot(const char *p) {
    for (const char *s = p; *s;) {
        size_t n = strcspn(s, "/");
        if (n == 2 && s[0] == '.' && s[1] == '.') return true;
        s += n;
        while (*s == '/') s++;
    }
    return false;
}

/* Side files must stay inside the model's folder: a model from elsewhere must
 * not be able to read /etc/... into its weights. Checked lexically (clear
 * message) and after realpath (symlinks). On success *fp is positioned at the
 * tensor's bytes; every check happens before the value is allocated, so a
 * 20-byte model cannot make mpx touch gigabytes before it is refused. */
static mpx_status open_side(ctx *c, const cJSON *spec, mpx_dtype dt, int64_t nelem, FILE **fp,
                            const char **pathp) {
    static const char *const keys[] = {"path", "offset", "doc", NULL};
    const char *path = NULL;
    int64_t offset = 0;
    if (cJSON_IsString(spec) && spec->valuestring) {
        path = spec->valuestring;
    } else if (cJSON_IsObject(spec)) {
        mpx_status st = check_keys(c, spec, keys, NULL);
        if (st == MPX_OK) st = get_str(c, spec, "path", true, NULL, &path);
        if (st != MPX_OK) return st;
        const cJSON *o = field(spec, "offset");
        if (o && (!as_int64(c, o, &offset) || offset < 0))
            return bad(c, MPX_E_INVALID, "\"offset\" must be a non-negative integer");
    } else {
        return bad(c, MPX_E_INVALID, "\"file\" must be a path or {\"path\": ..., \"offset\": ...}");
    }
    if (!path[0]) return bad(c, MPX_E_INVALID, "side file path is empty");
    if (!c->dir)
        return bad(c, MPX_E_UNSUPPORTED, "side file \"%s\": this model has no folder to read it from", path);
    if (path[0] == '/')
        return bad(c, MPX_E_INVALID, "side file \"%s\" is an absolute path; give it relative to the model's folder", path);
    if (has_dotdot(path))
        return bad(c, MPX_E_INVALID, "side file \"%s\" leaves the model's folder", path);

    mpx_status st = MPX_OK;
    FILE *f = NULL;
    char *rdir = NULL, *rfile = NULL;
    size_t jl = strlen(c->dir) + strlen(path) + 2;
    char *joined = malloc(jl);
    if (!joined) return bad(c, MPX_E_NOMEM, "out of memory");
    snprintf(joined, jl, "%s/%s", c->dir, path);
    if (!(rdir = realpath(c->dir, NULL)) || !(rfile = realpath(joined, NULL))) {
        st = bad(c, MPX_E_IO, "cannot open side file \"%s\": %s", joined, strerror(errno));
        goto out;
    }
    size_t dl = strlen(rdir);
    if (dl > 1 && (strncmp(rfile, rdir, dl) != 0 || rfile[dl] != '/')) {
        st = bad(c, MPX_E_INVALID, "side file \"%s\" resolves to \"%s\", outside the model's folder",
                 path, rfile);
        goto out;
    }
    struct stat sb;
    f = fopen(rfile, "rb");
    if (!f || fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st = bad(c, MPX_E_IO, "cannot read side file \"%s\": %s", joined,
                 f ? "not a regular file" : strerror(errno));
        goto out;
    }
    int eb = elem_bytes(dt);
    int64_t need = nelem * eb, size = (int64_t)sb.st_size;
    if (offset > size || need > size - offset) {
        /* offset may be anything up to INT64_MAX: the sum is formatted unsigned. */
        st = bad(c, MPX_E_INVALID,
                 "side file \"%s\" has %lld bytes; offset %lld + %lld elements x %d bytes needs %llu",
                 path, (long long)size, (long long)offset, (long long)nelem, eb,
                 (unsigned long long)offset + (unsigned long long)need);
        goto out;
    }
    if (fseeko(f, (off_t)offset, SEEK_SET) != 0) {
        st = bad(c, MPX_E_IO, "cannot read side file \"%s\": %s", path, strerror(errno));
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

static mpx_status read_side(ctx *c, FILE *f, mpx_tensor *t, const char *path) {
    enum { CHUNK = 1 << 16 };
    int eb = elem_bytes(t->dtype);
    unsigned char *buf = malloc(CHUNK);
    mpx_status st = buf ? MPX_OK : bad(c, MPX_E_NOMEM, "out of memory");
    for (int64_t k = 0; k < t->nelem && st == MPX_OK;) {
        int64_t n = t->nelem - k < CHUNK / eb ? t->nelem - k : CHUNK / eb;
        if (fread(buf, (size_t)eb, (size_t)n, f) != (size_t)n) {
            st = bad(c, MPX_E_IO, "short read from side file \"%s\"", path);
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

static mpx_status fill_init(ctx *c, const cJSON *init, const cJSON *params, mpx_tensor *t) {
    static const char *const keys[] = {"dist", "mean", "std", "low", "high", "seed", "value", "doc", NULL};
    const char *dist;
    mpx_status st;
    if (cJSON_IsString(init)) {
        dist = init->valuestring;
    } else if (cJSON_IsObject(init)) {
        if ((st = check_keys(c, init, keys, NULL)) != MPX_OK ||
            (st = get_str(c, init, "dist", true, NULL, &dist)) != MPX_OK)
            return st;
    } else {
        return bad(c, MPX_E_INVALID, "\"init\" must be a string or an object, not %s", kind_name(init));
    }
    bool zeros = !strcmp(dist, "zeros"), ones = !strcmp(dist, "ones");
    bool normal = !strcmp(dist, "normal"), uniform = !strcmp(dist, "uniform");
    if (zeros || ones || !strcmp(dist, "constant")) {
        /* Element 0 (always allocated) takes the value with set_elem's checks. */
        if (t->f32) t->f32[0] = (float)ones;
        else t->i64[0] = ones;
        if (!zeros && !ones) {
            const cJSON *vv = field(params, "value");
            if (!vv) return bad(c, MPX_E_INVALID, "constant init needs \"value\"");
            if ((st = set_elem(c, t, 0, vv, "\"value\"")) != MPX_OK) return st;
        }
        for (int64_t k = 1; k < t->nelem; k++) {
            if (t->f32) t->f32[k] = t->f32[0];
            else t->i64[k] = t->i64[0];
        }
        return MPX_OK;
    }
    if (!normal && !uniform)
        return bad(c, MPX_E_INVALID,
                   "unknown init \"%.40s\" (normal, uniform, constant, zeros, ones)", dist);
    if (!t->f32)
        return bad(c, MPX_E_UNSUPPORTED, "random init needs a float type, not %s",
                   mpx_dtype_name(t->dtype));
    double a, b;
    if ((st = get_num(c, params, normal ? "mean" : "low", 0.0, &a)) != MPX_OK ||
        (st = get_num(c, params, normal ? "std" : "high", 1.0, &b)) != MPX_OK)
        return st;
    if (normal && b < 0) return bad(c, MPX_E_INVALID, "\"std\" is negative");
    if (uniform && b < a) return bad(c, MPX_E_INVALID, "\"high\" is below \"low\"");
    uint64_t seed = fnv1a(t->name);
    const cJSON *sv = field(params, "seed");
    if (sv) {
        int64_t s;
        if (!as_int64(c, sv, &s) || s < 0)
            return bad(c, MPX_E_INVALID, "\"seed\" must be a non-negative integer");
        seed = (uint64_t)s;
    }
    mpx_rng rng;
    mpx_rng_init(&rng, seed);
    for (int64_t k = 0; k < t->nelem; k++) {
        double v = uniform ? a + (b - a) * mpx_rng_unit(&rng) : mpx_rng_normal(&rng, a, b);
        t->f32[k] = to_dtype(t->dtype, v);
    }
    return MPX_OK;
}

/* A tensor with a value: {"type", "shape", and one of "data" / "init" / "file"}.
 * Initializers and TENSOR attributes share it. */
static mpx_status read_value(ctx *c, const cJSON *obj, mpx_tensor *t, bool named) {
    static const char *const keys[] = {"name", "type", "shape", "data", "init", "file", "doc", NULL};
    static const char *const flat_init[] = {"mean", "std", "low", "high", "seed", "value", NULL};
    if (!cJSON_IsObject(obj)) return bad(c, MPX_E_INVALID, "a tensor must be an object, not %s", kind_name(obj));
    const cJSON *data = field(obj, "data"), *init = field(obj, "init"), *file = field(obj, "file");
    /* The short form {"init": "normal", "std": 0.05, "seed": 3} keeps the
     * parameters beside "init". */
    bool flat = cJSON_IsString(init);
    /* keys[0] is "name": attribute tensors have none */
    mpx_status st = check_keys(c, obj, keys + (named ? 0 : 1), flat ? flat_init : NULL);
    if (st != MPX_OK) return st;
    const char *tname;
    if ((st = get_str(c, obj, "type", true, NULL, &tname)) != MPX_OK) return st;
    mpx_dtype dt = mpx_dtype_from_name(tname);
    if (dt == MPX_DT_UNDEFINED)
        return bad(c, MPX_E_INVALID, "unknown type \"%.40s\" (float32, float16, bfloat16, float64, "
                   "int64, int32, int16, int8, uint8, bool, ...)", tname);
    if (!value_dtype_ok(dt))
        return bad(c, MPX_E_UNSUPPORTED, "values of type %s are not supported", mpx_dtype_name(dt));
    const cJSON *shape = field(obj, "shape");
    if (!shape) return bad(c, MPX_E_INVALID, "missing \"shape\"");
    int rank;
    int64_t dims[MPX_MAX_RANK];
    const char *sym[MPX_MAX_RANK];
    if ((st = read_shape(c, shape, false, &rank, dims, sym)) != MPX_OK) return st;
    int sources = !!data + !!init + !!file;
    if (sources != 1)
        return bad(c, MPX_E_INVALID, sources ? "give only one of \"data\", \"init\" and \"file\""
                                             : "needs one of \"data\", \"init\" or \"file\"");
    /* Refuse a wrong "data" length or a bad side file before allocating. */
    int64_t n;
    mpx_error sub;
    if (mpx_dims_check(rank, dims, &n, &sub) != MPX_OK) return bad(c, MPX_E_LIMIT, "%s", sub.msg);
    if (data && cJSON_IsArray(data) && cJSON_GetArraySize(data) != n)
        return bad(c, MPX_E_INVALID, "\"data\" has %d values but the shape needs %lld",
                   cJSON_GetArraySize(data), (long long)n);
    if (data && !cJSON_IsArray(data) && (n != 1 || cJSON_IsObject(data)))
        return bad(c, MPX_E_INVALID, "\"data\" must be an array of %lld values", (long long)n);
    FILE *f = NULL;
    const char *side = NULL;
    if (file && (st = open_side(c, file, dt, n, &f, &side)) != MPX_OK) return st;
    if ((st = mpx_tensor_alloc_value(c->g, t, dt, rank, dims, &sub)) != MPX_OK)
        st = bad(c, st, "%s", sub.msg);
    else if (data)
        st = fill_data(c, data, t);
    else if (init)
        st = fill_init(c, init, flat ? obj : init, t);
    else
        st = read_side(c, f, t, side);
    if (f) fclose(f);
    return st;
}

/* ---- attributes ------------------------------------------------------------- */

static mpx_attr_type attr_type_from_name(const char *s) {
    static const struct { const char *n; mpx_attr_type t; } names[] = {
        {"float", MPX_ATTR_FLOAT},   {"int", MPX_ATTR_INT},       {"string", MPX_ATTR_STRING},
        {"tensor", MPX_ATTR_TENSOR}, {"floats", MPX_ATTR_FLOATS}, {"ints", MPX_ATTR_INTS},
        {"strings", MPX_ATTR_STRINGS},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i].n)) return names[i].t;
    return MPX_ATTR_UNDEFINED;
}

static mpx_attr_type infer_attr_type(const ctx *c, const cJSON *v) {
    if (cJSON_IsNumber(v)) return spelled_float(c, v) ? MPX_ATTR_FLOAT : MPX_ATTR_INT;
    if (cJSON_IsBool(v)) return MPX_ATTR_INT;
    if (cJSON_IsString(v)) return MPX_ATTR_STRING;
    if (!cJSON_IsArray(v)) return MPX_ATTR_UNDEFINED;
    bool nums = true, strs = true, fl = false;
    for (const cJSON *e = v->child; e; e = e->next) {
        nums &= cJSON_IsNumber(e);
        strs &= cJSON_IsString(e);
        fl |= cJSON_IsNumber(e) && spelled_float(c, e);
    }
    return nums ? (fl ? MPX_ATTR_FLOATS : MPX_ATTR_INTS) : strs ? MPX_ATTR_STRINGS : MPX_ATTR_UNDEFINED;
}

static mpx_status read_attr(ctx *c, mpx_node *n, mpx_attr *a, const cJSON *v) {
    mpx_arena *ar = c->g->arena;
    mpx_attr_type want = MPX_ATTR_UNDEFINED;
    if (!(a->name = dup(c, v->string))) return bad(c, MPX_E_NOMEM, "out of memory");
    if (cJSON_IsObject(v)) {
        static const char *const tkeys[] = {"tensor", NULL}, *const vkeys[] = {"type", "value", NULL};
        const char *tn;
        mpx_status st;
        if (field(v, "tensor")) {
            if ((st = check_keys(c, v, tkeys, NULL)) != MPX_OK) return st;
            want = MPX_ATTR_TENSOR;
            v = field(v, "tensor");
        } else {
            if ((st = check_keys(c, v, vkeys, NULL)) != MPX_OK ||
                (st = get_str(c, v, "type", true, NULL, &tn)) != MPX_OK)
                return st;
            if ((want = attr_type_from_name(tn)) == MPX_ATTR_UNDEFINED)
                return bad(c, MPX_E_INVALID, "unknown attribute type \"%.40s\" (float, int, string, "
                           "floats, ints, strings, tensor)", tn);
            if (!(v = field(v, "value"))) return bad(c, MPX_E_INVALID, "missing \"value\"");
        }
    } else if ((want = infer_attr_type(c, v)) == MPX_ATTR_UNDEFINED) {
        return bad(c, MPX_E_INVALID, "%s is not an attribute value (a number, a string, an "
                   "array of numbers or of strings, or {\"tensor\": ...})", kind_name(v));
    }
    a->type = want;
    int64_t iv;
    switch (want) {
    case MPX_ATTR_FLOAT:
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
            return bad(c, MPX_E_INVALID, "must be a finite number");
        a->f = (float)v->valuedouble;
        return MPX_OK;
    case MPX_ATTR_INT:
        if (cJSON_IsBool(v)) iv = cJSON_IsTrue(v);
        else if (!as_int64(c, v, &iv)) return bad(c, MPX_E_INVALID, "must be an integer within int64");
        a->i = iv;
        return MPX_OK;
    case MPX_ATTR_STRING:
        if (!cJSON_IsString(v)) return bad(c, MPX_E_INVALID, "must be a string");
        a->s = dup(c, v->valuestring);
        a->s_len = a->s ? strlen(a->s) : 0;
        return a->s ? MPX_OK : bad(c, MPX_E_NOMEM, "out of memory");
    case MPX_ATTR_TENSOR: {
        mpx_tensor *t = mpx_arena_alloc(ar, sizeof *t);
        char nm[700];
        snprintf(nm, sizeof nm, "%s:%s", n->name, a->name);
        if (!t || !(t->name = dup(c, nm))) return bad(c, MPX_E_NOMEM, "out of memory");
        t->index = -1;
        t->decl_rank = t->rank = -1;
        t->nelem = -1;
        a->t = t;
        return read_value(c, v, t, false);
    }
    default:
        break;
    }
    /* the list kinds */
    if (!cJSON_IsArray(v)) return bad(c, MPX_E_INVALID, "must be an array");
    int cnt = cJSON_GetArraySize(v), k = 0;
    a->n = cnt;
    size_t sz = want == MPX_ATTR_FLOATS ? sizeof(float) : want == MPX_ATTR_INTS ? sizeof(int64_t)
                                                                               : sizeof(char *);
    void *arr = mpx_arena_calloc(ar, (size_t)(cnt ? cnt : 1), sz);
    if (!arr) return bad(c, MPX_E_NOMEM, "out of memory");
    if (want == MPX_ATTR_FLOATS) a->floats = arr;
    else if (want == MPX_ATTR_INTS) a->ints = arr;
    else a->strings = arr;
    for (const cJSON *e = v->child; e; e = e->next, k++) {
        if (want == MPX_ATTR_FLOATS && cJSON_IsNumber(e) && isfinite(e->valuedouble))
            a->floats[k] = (float)e->valuedouble;
        else if (want == MPX_ATTR_INTS && as_int64(c, e, &iv))
            a->ints[k] = iv;
        else if (want == MPX_ATTR_STRINGS && cJSON_IsString(e)) {
            if (!(a->strings[k] = dup(c, e->valuestring))) return bad(c, MPX_E_NOMEM, "out of memory");
        } else
            return bad(c, MPX_E_INVALID, "element %d must be %s", k,
                       want == MPX_ATTR_FLOATS ? "a finite number"
                       : want == MPX_ATTR_INTS ? "an integer within int64" : "a string");
    }
    return MPX_OK;
}

/* ---- sections ---------------------------------------------------------------- */

/* inputs / outputs / value_info entries: {"name", "type"?, "shape"?} */
static mpx_status read_decl(ctx *c, const cJSON *obj, const char *dflt_type, mpx_tensor **out) {
    static const char *const keys[] = {"name", "type", "shape", "doc", NULL};
    const char *name, *tname;
    mpx_status st;
    if (!cJSON_IsObject(obj)) return bad(c, MPX_E_INVALID, "must be an object, not %s", kind_name(obj));
    if ((st = check_keys(c, obj, keys, NULL)) != MPX_OK ||
        (st = get_str(c, obj, "name", true, NULL, &name)) != MPX_OK ||
        (st = get_str(c, obj, "type", false, dflt_type, &tname)) != MPX_OK)
        return st;
    if (!name[0]) return bad(c, MPX_E_INVALID, "\"name\" is empty");
    mpx_tensor *t = mpx_graph_tensor(c->g, name);
    if (!t) return bad(c, MPX_E_NOMEM, "out of memory");
    *out = t;
    const cJSON *shape = field(obj, "shape");
    if (!tname && !shape) return MPX_OK;
    mpx_dtype dt = tname ? mpx_dtype_from_name(tname) : t->dtype;
    if (dt == MPX_DT_UNDEFINED && tname)
        return bad(c, MPX_E_INVALID, "unknown type \"%.40s\"", tname);
    int rank = -1;
    int64_t dims[MPX_MAX_RANK];
    const char *sym[MPX_MAX_RANK];
    if (shape && (st = read_shape(c, shape, true, &rank, dims, sym)) != MPX_OK) return st;
    if (t->flags & MPX_T_INITIALIZER) return MPX_OK; /* the value's own shape wins */
    mpx_error sub;
    if ((st = mpx_tensor_declare(t, dt, rank, dims, sym, &sub)) != MPX_OK) return bad(c, st, "%s", sub.msg);
    return MPX_OK;
}

static mpx_status read_list(ctx *c, const cJSON *root, const char *key, bool required,
                            const char *dflt_type, uint32_t flag) {
    const cJSON *arr = field(root, key);
    if (!arr) return required ? bad(c, MPX_E_INVALID, "missing \"%s\"", key) : MPX_OK;
    if (!cJSON_IsArray(arr)) return bad(c, MPX_E_INVALID, "\"%s\" must be an array, not %s", key, kind_name(arr));
    int cnt = cJSON_GetArraySize(arr), i = 0;
    if (flag == MPX_T_OUTPUT) {
        if (cnt == 0) return bad(c, MPX_E_INVALID, "\"outputs\" is empty; a model needs an output");
        if (!(c->g->outputs = mpx_arena_calloc(c->g->arena, (size_t)cnt, sizeof(mpx_tensor *))))
            return bad(c, MPX_E_NOMEM, "out of memory");
    }
    for (const cJSON *e = arr->child; e; e = e->next, i++) {
        const cJSON *nm = cJSON_IsObject(e) ? field(e, "name") : NULL;
        if (nm && cJSON_IsString(nm)) set_where(c, "%s[%d] (\"%.80s\")", key, i, nm->valuestring);
        else set_where(c, "%s[%d]", key, i);
        mpx_tensor *t;
        mpx_status st = read_decl(c, e, dflt_type, &t);
        if (st != MPX_OK) return st;
        if (flag && (t->flags & flag))
            return bad(c, MPX_E_INVALID, "\"%s\" is listed twice", t->name);
        t->flags |= flag;
        if (flag == MPX_T_OUTPUT) c->g->outputs[c->g->n_outputs++] = t;
    }
    c->where[0] = '\0';
    return MPX_OK;
}

static mpx_status read_initializers(ctx *c, const cJSON *arr) {
    if (!arr) return MPX_OK;
    if (!cJSON_IsArray(arr))
        return bad(c, MPX_E_INVALID, "\"initializers\" must be an array, not %s", kind_name(arr));
    int i = 0;
    for (const cJSON *e = arr->child; e; e = e->next, i++) {
        const char *name;
        set_where(c, "initializers[%d]", i);
        if (!cJSON_IsObject(e)) return bad(c, MPX_E_INVALID, "must be an object, not %s", kind_name(e));
        mpx_status st = get_str(c, e, "name", true, NULL, &name);
        if (st != MPX_OK) return st;
        set_where(c, "initializers[%d] (\"%.80s\")", i, name);
        if (!name[0]) return bad(c, MPX_E_INVALID, "\"name\" is empty");
        mpx_tensor *t = mpx_graph_tensor(c->g, name);
        if (!t) return bad(c, MPX_E_NOMEM, "out of memory");
        if (t->flags & MPX_T_INITIALIZER)
            return bad(c, MPX_E_INVALID, "initializer \"%.80s\" is defined twice", name);
        if ((st = read_value(c, e, t, true)) != MPX_OK) return st;
        mpx_error sub;
        if ((st = mpx_tensor_declare(t, t->dtype, t->rank, t->dims, NULL, &sub)) != MPX_OK)
            return bad(c, st, "%s", sub.msg);
        t->flags |= MPX_T_INITIALIZER | MPX_T_CONSTANT;
    }
    c->where[0] = '\0';
    return MPX_OK;
}

/* "inputs" / "outputs" of a node: names, "" for an omitted optional one. */
static mpx_status read_names(ctx *c, const cJSON *arr, const char *key, mpx_tensor **out) {
    int i = 0;
    for (const cJSON *e = arr->child; e; e = e->next, i++) {
        if (!cJSON_IsString(e)) return bad(c, MPX_E_INVALID, "\"%s\" must be an array of strings", key);
        out[i] = NULL;
        if (!e->valuestring[0]) continue;
        if (!(out[i] = mpx_graph_tensor(c->g, e->valuestring))) return bad(c, MPX_E_NOMEM, "out of memory");
    }
    return MPX_OK;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* No attribute name twice (cJSON keeps repeated keys). Sorted, not compared
 * pairwise: a node with 20000 attributes took 10 s that way. */
static mpx_status unique_attrs(ctx *c, const cJSON *attrs, int n) {
    if (!attrs || n < 2) return MPX_OK;
    const char **names = malloc((size_t)n * sizeof *names);
    if (!names) return bad(c, MPX_E_NOMEM, "out of memory");
    int k = 0;
    for (const cJSON *a = attrs->child; a && k < n; a = a->next) names[k++] = a->string ? a->string : "";
    qsort(names, (size_t)k, sizeof *names, cmp_str);
    mpx_status st = MPX_OK;
    for (int i = 1; i < k && st == MPX_OK; i++)
        if (!strcmp(names[i - 1], names[i]))
            st = bad(c, MPX_E_INVALID, "attribute \"%.80s\" appears twice", names[i]);
    free(names);
    return st;
}

static int cmp_tensor(const void *a, const void *b) {
    int32_t x = (*(mpx_tensor *const *)a)->index, y = (*(mpx_tensor *const *)b)->index;
    return (x > y) - (x < y);
}

/* No output named twice; sorted for the same reason as unique_attrs. */
static mpx_status unique_outputs(ctx *c, const mpx_node *n) {
    if (n->n_outputs < 2) return MPX_OK;
    mpx_tensor **outs = malloc((size_t)n->n_outputs * sizeof *outs);
    if (!outs) return bad(c, MPX_E_NOMEM, "out of memory");
    int k = 0;
    for (int j = 0; j < n->n_outputs; j++)
        if (n->outputs[j]) outs[k++] = n->outputs[j];
    qsort(outs, (size_t)k, sizeof *outs, cmp_tensor);
    mpx_status st = MPX_OK;
    for (int j = 1; j < k && st == MPX_OK; j++)
        if (outs[j] == outs[j - 1]) st = bad(c, MPX_E_INVALID, "output \"%s\" is listed twice", outs[j]->name);
    free(outs);
    return st;
}

static mpx_status read_node(ctx *c, const cJSON *e, int i) {
    static const char *const keys[] = {"name", "op", "domain", "inputs", "outputs", "attrs", "doc", NULL};
    const char *name, *op, *domain;
    mpx_status st;
    set_where(c, "nodes[%d]", i);
    if (!cJSON_IsObject(e)) return bad(c, MPX_E_INVALID, "must be an object, not %s", kind_name(e));
    if ((st = get_str(c, e, "name", false, NULL, &name)) != MPX_OK) return st;
    if (name) set_where(c, "nodes[%d] (\"%.80s\")", i, name);
    if ((st = check_keys(c, e, keys, NULL)) != MPX_OK ||
        (st = get_str(c, e, "op", true, NULL, &op)) != MPX_OK ||
        (st = get_str(c, e, "domain", false, "", &domain)) != MPX_OK)
        return st;
    if (!op[0]) return bad(c, MPX_E_INVALID, "\"op\" is empty");
    const cJSON *ins = field(e, "inputs"), *outs = field(e, "outputs"), *attrs = field(e, "attrs");
    if (ins && !cJSON_IsArray(ins)) return bad(c, MPX_E_INVALID, "\"inputs\" must be an array of strings");
    if (!outs) return bad(c, MPX_E_INVALID, "missing \"outputs\"");
    if (!cJSON_IsArray(outs) || !cJSON_GetArraySize(outs))
        return bad(c, MPX_E_INVALID, "\"outputs\" must be a non-empty array of strings");
    if (attrs && !cJSON_IsObject(attrs)) return bad(c, MPX_E_INVALID, "\"attrs\" must be an object");
    mpx_node *n = mpx_graph_add_node(c->g, name, op, domain, ins ? cJSON_GetArraySize(ins) : 0,
                                     cJSON_GetArraySize(outs), attrs ? cJSON_GetArraySize(attrs) : 0);
    if (!n) return bad(c, MPX_E_NOMEM, "out of memory");
    if ((ins && (st = read_names(c, ins, "inputs", n->inputs)) != MPX_OK) ||
        (st = read_names(c, outs, "outputs", n->outputs)) != MPX_OK)
        return st;
    if ((st = unique_outputs(c, n)) != MPX_OK) return st;
    if ((st = unique_attrs(c, attrs, n->n_attrs)) != MPX_OK) return st;
    int k = 0;
    char saved[sizeof c->where];
    memcpy(saved, c->where, sizeof saved);
    for (const cJSON *a = attrs ? attrs->child : NULL; a; a = a->next, k++) {
        push_where(c, ": attrs.");
        push_where(c, a->string);
        if ((st = read_attr(c, n, &n->attrs[k], a)) != MPX_OK) return st;
        memcpy(c->where, saved, sizeof saved);
    }
    return MPX_OK;
}

static mpx_status convert(ctx *c, const cJSON *root) {
    static const char *const keys[] = {"format", "version", "name", "producer", "opset", "doc",
                                       "inputs", "outputs", "value_info", "initializers",
                                       "nodes", NULL};
    mpx_status st;
    const char *fmt, *name, *producer;
    if (!cJSON_IsObject(root))
        return bad(c, MPX_E_PARSE, "the top level must be a JSON object, not %s", kind_name(root));
    if ((st = check_keys(c, root, keys, NULL)) != MPX_OK ||
        (st = get_str(c, root, "format", true, NULL, &fmt)) != MPX_OK)
        return st;
    if (strcmp(fmt, "mpx-model") != 0)
        return bad(c, MPX_E_PARSE, "\"format\" is \"%.40s\"; an mpx model says \"mpx-model\"", fmt);
    int64_t version = 1, opset = 17;
    const cJSON *v = field(root, "version"), *o = field(root, "opset");
    if (v && !as_int64(c, v, &version)) return bad(c, MPX_E_INVALID, "\"version\" must be an integer");
    if (version != 1)
        return bad(c, MPX_E_UNSUPPORTED, "format version %lld is not supported (mpx reads version 1)",
                   (long long)version);
    if (o && (!as_int64(c, o, &opset) || opset < 1 || opset > 1000))
        return bad(c, MPX_E_INVALID, "\"opset\" must be an integer from 1 to 1000");
    if ((st = get_str(c, root, "name", false, "", &name)) != MPX_OK ||
        (st = get_str(c, root, "producer", false, "", &producer)) != MPX_OK)
        return st;
    mpx_graph *g = c->g;
    g->opset = (int)opset;
    if (!(g->name = dup(c, name)) || !(g->producer = dup(c, producer)))
        return bad(c, MPX_E_NOMEM, "out of memory");
    const cJSON *nodes = field(root, "nodes");
    if (!nodes) return bad(c, MPX_E_INVALID, "missing \"nodes\"");
    if (!cJSON_IsArray(nodes)) return bad(c, MPX_E_INVALID, "\"nodes\" must be an array, not %s", kind_name(nodes));

    /* Inputs first and outputs in their listed order, so graph->inputs (which
     * finalize lists in tensor-creation order) and graph->outputs follow the file. */
    if ((st = read_list(c, root, "inputs", false, "float32", MPX_T_INPUT)) != MPX_OK ||
        (st = read_initializers(c, field(root, "initializers"))) != MPX_OK ||
        (st = read_list(c, root, "outputs", true, NULL, MPX_T_OUTPUT)) != MPX_OK ||
        (st = read_list(c, root, "value_info", false, NULL, 0)) != MPX_OK)
        return st;
    int i = 0;
    for (const cJSON *e = nodes->child; e; e = e->next, i++)
        if ((st = read_node(c, e, i)) != MPX_OK) return st;
    c->where[0] = '\0';
    return mpx_graph_finalize(g, c->err);
}

/* ---- entry points ---------------------------------------------------------- */

static void line_col(const char *s, size_t off, int *line, int *col) {
    int l = 1;
    size_t bol = 0;
    for (size_t i = 0; i < off; i++)
        if (s[i] == '\n') l++, bol = i + 1;
    *line = l;
    *col = (int)(off - bol + 1);
}

static size_t skip_ws(const char *s, size_t i, size_t len) {
    while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
    return i;
}

/* Did cJSON fail at off because the text ran out? It reports running out at
 * the last byte (or, in a string, where the string starts), which is otherwise
 * indistinguishable from an error there. So: the text ends inside a string
 * that starts at or before off, or off is the last byte and an object or
 * array is still open. */
static bool ran_out(const char *s, size_t len, size_t off) {
    long depth = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '"') {
            size_t start = i;
            for (i++; i < len && s[i] != '"'; i++)
                if (s[i] == '\\') i++;
            if (i >= len) return off >= start;
        } else if (s[i] == '{' || s[i] == '[') {
            depth++;
        } else if (s[i] == '}' || s[i] == ']') {
            depth--;
        }
    }
    return depth > 0 && off + 1 >= len;
}

static mpx_status syntax_error(const char *file, const char *s, size_t len, size_t off,
                               const char *what, mpx_error *err) {
    int line, col;
    if (off > len) off = len;
    if (skip_ws(s, off, len) >= len || ran_out(s, len, off)) {
        line_col(s, len, &line, &col);
        return mpx_error_at(err, MPX_E_PARSE, file, line, col,
                            "JSON syntax error: unexpected end of input (truncated file?)");
    }
    line_col(s, off, &line, &col);
    char near[24];
    size_t k = 0;
    for (size_t i = off; i < len && k < 16 && s[i] != '\n' && s[i] != '\r'; i++)
        near[k++] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
    near[k] = '\0';
    return mpx_error_at(err, MPX_E_PARSE, file, line, col, "JSON syntax error: %s near \"%s\"",
                        what, near);
}

mpx_graph *mpx_graph_load_json_text(const char *text, size_t len, const char *path,
                                    const char *dir, mpx_error *err) {
    const char *file = path && path[0] ? path : "<json>";
    if (!text && len) {
        mpx_error_at(err, MPX_E_ARG, file, 0, 0, "no text");
        return NULL;
    }
    if (len > MAX_JSON_BYTES) {
        mpx_error_at(err, MPX_E_LIMIT, file, 0, 0, "the model is %zu bytes; JSON models are limited to %zu "
                     "(put weights in a side file)", len, MAX_JSON_BYTES);
        return NULL;
    }
    if (skip_ws(text, 0, len) == len) {
        mpx_error_at(err, MPX_E_PARSE, file, 1, 1, "empty file: expected a JSON object");
        return NULL;
    }
    /* A NUL-terminated copy: cJSON and the number scan both want one. */
    char *s = malloc(len + 1);
    if (!s) {
        mpx_error_at(err, MPX_E_NOMEM, file, 0, 0, "out of memory");
        return NULL;
    }
    memcpy(s, text, len);
    s[len] = '\0';
    /* cJSON skips NUL as whitespace; a NUL means this is not JSON text at all
     * (an .onnx file loaded as JSON, say). */
    const char *nul = memchr(s, '\0', len);
    if (nul) {
        int line, col;
        line_col(s, (size_t)(nul - s), &line, &col);
        mpx_error_at(err, MPX_E_PARSE, file, line, col, "a NUL byte: this is not JSON text");
        free(s);
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(s, len, &end, 0);
    if (!root) {
        syntax_error(file, s, len, end ? (size_t)(end - s) : 0, "unexpected character", err);
        free(s);
        return NULL;
    }
    size_t rest = skip_ws(s, (size_t)(end - s), len);
    if (rest < len) {
        syntax_error(file, s, len, rest, "unexpected text after the JSON value", err);
        cJSON_Delete(root);
        free(s);
        return NULL;
    }
    ctx c = {.file = file, .dir = dir, .err = err};
    mpx_status st = MPX_OK;
    int k = 0;
    c.n_nums = scan_numbers(s, len, NULL);
    c.nums = calloc((size_t)c.n_nums + 1, sizeof *c.nums);
    c.g = mpx_graph_new(file);
    if (!c.nums || !c.g) {
        st = mpx_error_at(err, MPX_E_NOMEM, file, 0, 0, "out of memory");
    } else {
        scan_numbers(s, len, c.nums);
        number_index(root, &k);
        if (k != c.n_nums) c.n_nums = 0; /* cannot happen; falls back to value-based typing */
        st = convert(&c, root);
    }
    cJSON_Delete(root);
    free(c.nums);
    free(s);
    if (st != MPX_OK) {
        mpx_graph_free(c.g);
        return NULL;
    }
    return c.g;
}

mpx_graph *mpx_graph_load_json(const char *path, mpx_error *err) {
    if (!path) {
        mpx_error_set(err, MPX_E_ARG, "no model path");
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        mpx_error_at(err, MPX_E_IO, path, 0, 0, "cannot open: %s", strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap || len > MAX_JSON_BYTES) break;
        /* Grows to at most MAX_JSON_BYTES + 1, enough to tell "too big". */
        size_t ncap = cap * 2 > MAX_JSON_BYTES + 1 ? MAX_JSON_BYTES + 1 : cap * 2;
        char *nb = realloc(buf, ncap);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap = ncap;
    }
    bool rerr = ferror(f) != 0;
    int rerrno = errno;
    fclose(f);
    if (!buf || rerr) {
        mpx_error_at(err, buf ? MPX_E_IO : MPX_E_NOMEM, path, 0, 0, "cannot read: %s",
                     buf ? strerror(rerrno) : "out of memory");
        free(buf);
        return NULL;
    }
    /* Side files are relative to the model's folder. */
    char *dir = malloc(strlen(path) + 2);
    mpx_graph *g = NULL;
    if (!dir) {
        mpx_error_at(err, MPX_E_NOMEM, path, 0, 0, "out of memory");
    } else {
        const char *slash = strrchr(path, '/');
        if (!slash) strcpy(dir, ".");
        else if (slash == path) strcpy(dir, "/");
        else {
            memcpy(dir, path, (size_t)(slash - path));
            dir[slash - path] = '\0';
        }
        g = mpx_graph_load_json_text(buf, len, path, dir, err);
    }
    free(dir);
    free(buf);
    return g;
}
