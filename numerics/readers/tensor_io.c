/* tensor_io.c - tensors in files: NumPy .npy (read and write) and ONNX
 * TensorProto .pb (read; how ONNX's test data sets hold inputs and outputs).
 *
 * A .npy file is a magic string, a version, a header (a Python dict literal
 * giving dtype, order and shape) and the raw elements. Everything the header
 * claims is checked against the file's size before anything is allocated, so
 * a short or hostile file gives a message, not a huge allocation. The data is
 * converted in blocks, never held twice.
 *
 * Every error names the file (err->file) and says what is wrong with it. */
#include "mpx_readers.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
/* NumPy itself refuses headers over 10000 bytes by default; this is looser
 * but still keeps a corrupt length from allocating much. */
#define NPY_MAX_HEADER ((uint32_t)1 << 20)
#define BLOCK_ELEMS ((size_t)1 << 14)
/* protobuf messages end at 2 GiB. */
#define PB_MAX_BYTES ((uint64_t)INT32_MAX)

static mpx_status file_error(mpx_error *err, mpx_status st, const char *path, const char *fmt,
                             ...) __attribute__((format(printf, 4, 5)));

static mpx_status file_error(mpx_error *err, mpx_status st, const char *path, const char *fmt,
                             ...) {
    va_list ap;
    va_start(ap, fmt);
    st = mpx_error_vnode(err, st, path, NULL, fmt, ap);
    va_end(ap);
    return st;
}

static uint64_t load_le(const unsigned char *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) v = (v << 8) | p[i];
    return v;
}

static void store_le(unsigned char *p, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; i++, v >>= 8) p[i] = (unsigned char)(v & 0xffu);
}

/* Open path for reading as a regular file and give its size. */
static mpx_status open_regular(const char *path, FILE **fp, uint64_t *size, mpx_error *err) {
    int fd = mpx_file_open_read(path, false, err);
    if (fd < 0) return err ? err->status : MPX_E_IO;
    struct stat sb;
    FILE *f = fstat(fd, &sb) == 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        close(fd);
        return file_error(err, MPX_E_IO, path, "cannot read: %s", strerror(errno));
    }
    *fp = f;
    *size = (uint64_t)sb.st_size;
    return MPX_OK;
}

/* ---- .npy header: a Python dict literal ------------------------------------ */

typedef struct npy_header {
    char descr[32];
    bool fortran;
    int rank;
    int64_t dims[MPX_MAX_RANK];
    bool have_descr, have_order, have_shape;
    bool too_many_dims;
} npy_header;

typedef struct lexer {
    const char *p, *end;
    const char *why;   /* what was expected where parsing stopped */
} lexer;

static void skip_ws(lexer *l) {
    while (l->p < l->end && (*l->p == ' ' || *l->p == '\t' || *l->p == '\n' || *l->p == '\r'))
        l->p++;
}

static bool eat(lexer *l, char c) {
    skip_ws(l);
    if (l->p < l->end && *l->p == c) {
        l->p++;
        return true;
    }
    return false;
}

static bool eat_word(lexer *l, const char *w) {
    skip_ws(l);
    size_t n = strlen(w);
    if ((size_t)(l->end - l->p) < n || memcmp(l->p, w, n) != 0) return false;
    const char *after = l->p + n;
    if (after < l->end && ((*after >= 'a' && *after <= 'z') || (*after >= 'A' && *after <= 'Z') ||
                           (*after >= '0' && *after <= '9') || *after == '_'))
        return false;
    l->p = after;
    return true;
}

/* A quoted string ('...' or "...", backslash escapes taken literally) into
 * out; false if it is not one or does not fit. */
static bool parse_string(lexer *l, char *out, size_t cap) {
    skip_ws(l);
    if (l->p >= l->end || (*l->p != '\'' && *l->p != '"')) return false;
    char q = *l->p++;
    size_t n = 0;
    while (l->p < l->end && *l->p != q) {
        if (*l->p == '\\' && l->p + 1 < l->end) l->p++;
        if (n + 1 < cap) out[n] = *l->p;
        n++;
        l->p++;
    }
    if (l->p >= l->end) return false;
    l->p++;
    if (n + 1 > cap) return false;
    out[n] = '\0';
    return true;
}

/* A non-negative integer (Python 2 wrote a trailing L). */
static bool parse_count(lexer *l, int64_t *v) {
    skip_ws(l);
    if (l->p >= l->end || *l->p < '0' || *l->p > '9') return false;
    int64_t x = 0;
    while (l->p < l->end && *l->p >= '0' && *l->p <= '9') {
        int d = *l->p++ - '0';
        if (x > (INT64_MAX - d) / 10) return false;
        x = x * 10 + d;
    }
    if (l->p < l->end && (*l->p == 'L' || *l->p == 'l')) l->p++;
    *v = x;
    return true;
}

/* Skip a value of a key mpx does not use: strings, numbers, names and
 * (nested) tuples, lists and dicts. */
static bool skip_value(lexer *l, int depth) {
    skip_ws(l);
    if (l->p >= l->end || depth > 16) return false;
    char c = *l->p;
    if (c == '\'' || c == '"') {
        char q = *l->p++;
        while (l->p < l->end && *l->p != q) {
            if (*l->p == '\\') l->p++;
            l->p++;
        }
        if (l->p >= l->end) return false;
        l->p++;
        return true;
    }
    if (c == '(' || c == '[' || c == '{') {
        char close = c == '(' ? ')' : c == '[' ? ']' : '}';
        l->p++;
        for (;;) {
            if (eat(l, close)) return true;
            if (!skip_value(l, depth + 1)) return false;
            if (c == '{' && !(eat(l, ':') && skip_value(l, depth + 1))) return false;
            if (!eat(l, ',') && !(skip_ws(l), l->p < l->end && *l->p == close)) return false;
        }
    }
    const char *start = l->p;
    while (l->p < l->end && (strchr("+-.", *l->p) || (*l->p >= '0' && *l->p <= '9') ||
                             (*l->p >= 'a' && *l->p <= 'z') || (*l->p >= 'A' && *l->p <= 'Z') ||
                             *l->p == '_'))
        l->p++;
    return l->p > start;
}

/* "(2, 3)", "(5,)", "()" */
static bool parse_shape(lexer *l, npy_header *h) {
    if (!eat(l, '(')) {
        l->why = "a tuple for 'shape'";
        return false;
    }
    h->rank = 0;
    for (;;) {
        if (eat(l, ')')) return true;
        if (h->rank == MPX_MAX_RANK) {
            h->too_many_dims = true;
            return false;
        }
        if (!parse_count(l, &h->dims[h->rank])) {
            l->why = "a non-negative integer dim in 'shape'";
            return false;
        }
        h->rank++;
        if (!eat(l, ',')) {
            if (eat(l, ')')) return true;
            l->why = "',' or ')' in 'shape'";
            return false;
        }
    }
}

static bool parse_header(lexer *l, npy_header *h) {
    memset(h, 0, sizeof *h);
    if (!eat(l, '{')) {
        l->why = "a dict starting with '{'";
        return false;
    }
    for (;;) {
        if (eat(l, '}')) break;
        char key[64];
        if (!parse_string(l, key, sizeof key)) {
            l->why = "a quoted key";
            return false;
        }
        if (!eat(l, ':')) {
            l->why = "':' after a key";
            return false;
        }
        if (strcmp(key, "descr") == 0) {
            skip_ws(l);
            if (l->p < l->end && *l->p == '[') {
                l->why = "a plain dtype: structured arrays (a list 'descr') are not supported";
                return false;
            }
            if (!parse_string(l, h->descr, sizeof h->descr)) {
                l->why = "a short quoted string for 'descr'";
                return false;
            }
            h->have_descr = true;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (eat_word(l, "True")) h->fortran = true;
            else if (eat_word(l, "False")) h->fortran = false;
            else {
                l->why = "True or False for 'fortran_order'";
                return false;
            }
            h->have_order = true;
        } else if (strcmp(key, "shape") == 0) {
            if (!parse_shape(l, h)) return false;
            h->have_shape = true;
        } else if (!skip_value(l, 0)) {
            l->why = "a Python literal";
            return false;
        }
        if (!eat(l, ',')) {
            if (eat(l, '}')) break;
            l->why = "',' or '}' after a value";
            return false;
        }
    }
    skip_ws(l);
    if (l->p != l->end) {
        l->why = "nothing but spaces after the dict";
        return false;
    }
    if (!h->have_descr || !h->have_order || !h->have_shape) {
        l->why = "the keys 'descr', 'fortran_order' and 'shape'";
        return false;
    }
    return true;
}

/* ---- .npy dtypes ------------------------------------------------------------- */

typedef struct npy_type {
    const char *code;  /* descr without the byte-order character */
    mpx_dtype dt;
    size_t size;
} npy_type;

static const npy_type npy_types[] = {
    {"f2", MPX_DT_FLOAT16, 2}, {"f4", MPX_DT_FLOAT, 4},  {"f8", MPX_DT_DOUBLE, 8},
    {"i1", MPX_DT_INT8, 1},    {"i2", MPX_DT_INT16, 2},  {"i4", MPX_DT_INT32, 4},
    {"i8", MPX_DT_INT64, 8},   {"u1", MPX_DT_UINT8, 1},  {"u2", MPX_DT_UINT16, 2},
    {"u4", MPX_DT_UINT32, 4},  {"u8", MPX_DT_UINT64, 8}, {"b1", MPX_DT_BOOL, 1},
};

static mpx_status npy_dtype(const char *path, const char *descr, const npy_type **out,
                            mpx_error *err) {
    char order = descr[0];
    const char *code = descr + (order ? 1 : 0);
    const npy_type *t = NULL;
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
        if (strcmp(code, npy_types[i].code) == 0) t = &npy_types[i];
    if (!order || !strchr("<>|=", order) || !t)
        return file_error(err, MPX_E_UNSUPPORTED, path,
                          "dtype '%s' is not supported (mpx reads float16/32/64, int8-64, "
                          "uint8-64 and bool)", descr);
    /* Byte order matters only for multi-byte elements. */
    if (t->size > 1 && order == '>')
        return file_error(err, MPX_E_UNSUPPORTED, path,
                          "dtype '%s' is big-endian; mpx reads little-endian data "
                          "(save with arr.astype('<%s'))", descr, code);
    if (t->size > 1 && order != '<')
        return file_error(err, MPX_E_UNSUPPORTED, path,
                          "dtype '%s' does not say its byte order; expected '<%s'", descr, code);
    *out = t;
    return MPX_OK;
}

/* ---- .npy read ---------------------------------------------------------------- */

/* One block of n elements of type t from raw bytes into v at offset at.
 * Returns the index of a uint64 value too large for int64, or -1. */
static int64_t npy_convert(const npy_type *t, const unsigned char *p, size_t n, mpx_value *v,
                           int64_t at) {
    for (size_t k = 0; k < n; k++, p += t->size) {
        uint64_t u = load_le(p, t->size);
        int64_t i = at + (int64_t)k;
        if (v->d) { /* float64 held as float64 */
            memcpy(&v->d[i], &u, sizeof u);
            continue;
        }
        if (mpx_dtype_is_float(t->dt)) { /* held as fp32 */
            v->f[i] = mpx_dtype_decode(t->dt, u);
            continue;
        }
        switch (t->dt) {
        case MPX_DT_INT8: v->i[i] = (int8_t)(uint8_t)u; break;
        case MPX_DT_INT16: v->i[i] = (int16_t)(uint16_t)u; break;
        case MPX_DT_INT32: v->i[i] = (int32_t)(uint32_t)u; break;
        case MPX_DT_INT64: v->i[i] = (int64_t)u; break;
        case MPX_DT_BOOL: v->i[i] = u != 0; break;
        case MPX_DT_UINT64:
            if (u > (uint64_t)INT64_MAX) return i;
            v->i[i] = (int64_t)u;
            break;
        default: v->i[i] = (int64_t)u; break; /* uint8/16/32 */
        }
    }
    return -1;
}

static mpx_status npy_read_header(const char *path, FILE *fp, uint64_t size, npy_header *h,
                                  uint64_t *data_off, mpx_error *err) {
    unsigned char pre[12];
    if (size < 10 || fread(pre, 1, 10, fp) != 10)
        return file_error(err, MPX_E_PARSE, path,
                          "not a .npy file: %llu bytes, shorter than the 10-byte preamble",
                          (unsigned long long)size);
    if (memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return file_error(err, MPX_E_PARSE, path,
                          "not a .npy file: it does not start with \"\\x93NUMPY\"");
    int major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0)
        return file_error(err, MPX_E_UNSUPPORTED, path,
                          ".npy format version %d.%d is not supported (1.0, 2.0, 3.0 are)", major,
                          minor);
    /* 1.0: 2-byte header length; 2.0 and 3.0 (3.0: the header is UTF-8): 4. */
    uint64_t hlen, off;
    if (major == 1) {
        hlen = load_le(pre + 8, 2);
        off = 10;
    } else {
        if (size < 12 || fread(pre + 10, 1, 2, fp) != 2)
            return file_error(err, MPX_E_PARSE, path, "truncated .npy preamble");
        hlen = load_le(pre + 8, 4);
        off = 12;
    }
    if (hlen > NPY_MAX_HEADER)
        return file_error(err, MPX_E_LIMIT, path, ".npy header of %llu bytes is implausibly large",
                          (unsigned long long)hlen);
    if (size - off < hlen)
        return file_error(err, MPX_E_PARSE, path,
                          "truncated: the .npy header needs %llu bytes, the file has %llu after "
                          "the preamble", (unsigned long long)hlen,
                          (unsigned long long)(size - off));
    char *text = malloc((size_t)hlen + 1);
    if (!text) return file_error(err, MPX_E_NOMEM, path, "out of memory");
    if (fread(text, 1, (size_t)hlen, fp) != hlen) {
        free(text);
        return file_error(err, MPX_E_IO, path, "short read in the .npy header");
    }
    text[hlen] = '\0';
    lexer l = {text, text + hlen, NULL};
    bool ok = parse_header(&l, h);
    mpx_status st = MPX_OK;
    int shown = (int)(hlen < 200 ? hlen : 200);
    while (shown > 0 && strchr(" \n\r\t", text[shown - 1])) shown--;
    if (!ok && h->too_many_dims)
        st = file_error(err, MPX_E_LIMIT, path, "the shape has more than %d dims, mpx's limit",
                        MPX_MAX_RANK);
    else if (!ok)
        st = file_error(err, MPX_E_PARSE, path,
                        "bad .npy header at byte %ld: expected %s; header: %.*s",
                        (long)(l.p - text), l.why ? l.why : "a valid dict", shown, text);
    free(text);
    *data_off = off + hlen;
    return st;
}

/* The .npy in fp (size bytes from its start); path names it in messages. */
static mpx_status npy_read_stream(const char *path, FILE *fp, uint64_t size, mpx_value *out,
                                  mpx_error *err) {
    mpx_status st = MPX_OK;
    npy_header h;
    uint64_t off = 0;
    const npy_type *t = NULL;
    mpx_value v;
    mpx_value_clear(&v);
    unsigned char *buf = NULL;
    if ((st = npy_read_header(path, fp, size, &h, &off, err)) != MPX_OK) goto done;
    if ((st = npy_dtype(path, h.descr, &t, err)) != MPX_OK) goto done;
    if (h.fortran) {
        st = file_error(err, MPX_E_UNSUPPORTED, path,
                        "the array is in Fortran order; mpx reads C order (save "
                        "np.ascontiguousarray(arr))");
        goto done;
    }
    int64_t n = 1;
    mpx_error sub;
    if (mpx_dims_product(h.rank, h.dims, &n, &sub) != MPX_OK) {
        st = file_error(err, sub.status, path, "shape: %s", sub.msg);
        goto done;
    }
    /* n <= 2^31 and size <= 8 bytes: no overflow. */
    uint64_t need = (uint64_t)n * t->size;
    if (size - off != need) {
        st = file_error(err, MPX_E_PARSE, path,
                        "%s: the shape holds %lld elements of '%s' (%llu bytes of data), but the "
                        "file has %llu bytes after the header",
                        size - off < need ? "truncated" : "extra bytes", (long long)n, h.descr,
                        (unsigned long long)need, (unsigned long long)(size - off));
        goto done;
    }
    if ((st = mpx_value_alloc(&v, t->dt, h.rank, h.dims, &sub)) != MPX_OK) {
        st = file_error(err, st, path, "%s", sub.msg);
        goto done;
    }
    buf = malloc(BLOCK_ELEMS * t->size);
    if (!buf) {
        st = file_error(err, MPX_E_NOMEM, path, "out of memory");
        goto done;
    }
    for (int64_t at = 0; at < n;) {
        size_t k = (size_t)(n - at) < BLOCK_ELEMS ? (size_t)(n - at) : BLOCK_ELEMS;
        if (fread(buf, t->size, k, fp) != k) {
            st = file_error(err, MPX_E_IO, path, "short read at element %lld", (long long)at);
            goto done;
        }
        int64_t bad = npy_convert(t, buf, k, &v, at);
        if (bad >= 0) {
            st = file_error(err, MPX_E_UNSUPPORTED, path,
                            "element %lld is a uint64 beyond int64, which mpx holds integers in",
                            (long long)bad);
            goto done;
        }
        at += (int64_t)k;
    }
done:
    free(buf);
    if (st != MPX_OK) {
        mpx_value_free(&v);
        return st;
    }
    *out = v;
    return MPX_OK;
}

mpx_status mpx_npy_read(const char *path, mpx_value *out, mpx_error *err) {
    FILE *fp = NULL;
    uint64_t size = 0;
    mpx_status st = open_regular(path, &fp, &size, err);
    if (st != MPX_OK) return st;
    st = npy_read_stream(path, fp, size, out, err);
    fclose(fp);
    return st;
}

/* An .npz member arrives decompressed in memory; fmemopen lets the one
 * stream reader above serve it, so the two paths cannot disagree. */
mpx_status mpx_npy_read_mem(const char *name, const void *data, size_t len, mpx_value *out,
                            mpx_error *err) {
    if (len == 0)
        return file_error(err, MPX_E_PARSE, name, "not a .npy file: it is empty");
    FILE *fp = fmemopen((void *)(uintptr_t)data, len, "rb");
    if (!fp) return file_error(err, MPX_E_NOMEM, name, "cannot read from memory: %s", strerror(errno));
    mpx_status st = npy_read_stream(name, fp, (uint64_t)len, out, err);
    fclose(fp);
    return st;
}

/* ---- .npy write --------------------------------------------------------------- */

mpx_status mpx_npy_write(const char *path, const mpx_file_guard *guard, const mpx_value *v, mpx_error *err) {
    if (!path || !*path) return mpx_error_set(err, MPX_E_ARG, "no file name");
    if (!v || v->n < 0)
        return file_error(err, MPX_E_ARG, path, "no value to write (the tensor was not computed)");
    bool isf = mpx_dtype_is_float(v->dtype);
    if (!isf && !mpx_dtype_is_int_like(v->dtype))
        return file_error(err, MPX_E_UNSUPPORTED, path, "values of type %s cannot be written",
                          mpx_dtype_name(v->dtype));
    if (v->rank < 0 || v->rank > MPX_MAX_RANK)
        return file_error(err, MPX_E_ARG, path, "rank %d", v->rank);
    int64_t n = 1;
    mpx_error sub;
    if (mpx_dims_product(v->rank, v->dims, &n, &sub) != MPX_OK || n != v->n)
        return file_error(err, MPX_E_ARG, path, "the value's shape does not hold its %lld elements",
                          (long long)v->n);
    const bool dbl = v->dtype == MPX_DT_DOUBLE;
    if (n > 0 && (dbl ? !v->d : isf ? !v->f : !v->i))
        return file_error(err, MPX_E_ARG, path, "the value has no data");

    /* Header as NumPy writes it; padded with spaces to a multiple of 64
     * bytes counting the 10-byte preamble, ending in '\n'. */
    char header[512];
    int len = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                       dbl ? "<f8" : isf ? "<f4" : "<i8");
    for (int d = 0; d < v->rank; d++)
        len += snprintf(header + len, sizeof header - (size_t)len, "%s%lld", d ? ", " : "",
                        (long long)v->dims[d]);
    len += snprintf(header + len, sizeof header - (size_t)len, "%s), }",
                    v->rank == 1 ? "," : "");
    size_t total = ((size_t)len + 1 + 10 + 63) / 64 * 64;
    size_t hlen = total - 10;
    memset(header + len, ' ', hlen - (size_t)len - 1);
    header[hlen - 1] = '\n';
    unsigned char pre[10];
    memcpy(pre, NPY_MAGIC, NPY_MAGIC_LEN);
    pre[6] = 1;
    pre[7] = 0;
    store_le(pre + 8, hlen, 2);

    /* Written aside and renamed into place (mpx_file_open_write): an
     * interrupted or failed write leaves the old file, never a truncated one. */
    mpx_out_file *o;
    mpx_status st = mpx_file_open_write(path, guard, &o, err);
    if (st) return st;
    size_t es = isf && !dbl ? 4 : 8;
    unsigned char *buf = malloc(BLOCK_ELEMS * es);
    if (!buf) {
        mpx_out_file_abort(o);
        return file_error(err, MPX_E_NOMEM, path, "cannot write: out of memory");
    }
    if (!(st = mpx_out_file_write(o, pre, 10, err))) st = mpx_out_file_write(o, header, hlen, err);
    for (int64_t at = 0; !st && at < n;) {
        size_t k = (size_t)(n - at) < BLOCK_ELEMS ? (size_t)(n - at) : BLOCK_ELEMS;
        for (size_t j = 0; j < k; j++) {
            uint64_t u;
            if (dbl) {
                memcpy(&u, &v->d[at + (int64_t)j], sizeof u);
            } else if (isf) {
                uint32_t w;
                memcpy(&w, &v->f[at + (int64_t)j], sizeof w);
                u = w;
            } else {
                u = (uint64_t)v->i[at + (int64_t)j];
            }
            store_le(buf + j * es, u, es);
        }
        st = mpx_out_file_write(o, buf, k * es, err);
        at += (int64_t)k;
    }
    free(buf);
    if (st) {
        mpx_out_file_abort(o);
        return st;
    }
    return mpx_out_file_commit(o, guard, err);
}

/* ---- ONNX TensorProto -------------------------------------------------------------- */

/* The decoding (raw_data or typed fields, every ONNX element type, length
 * checks) is the ONNX loader's, through mpx_tensor_proto_decode; this only
 * reads the file and moves the result out of the scratch graph's arena. */
/* A detached tensor's numeric value into v (owned). */
static mpx_status value_of(const mpx_tensor *t, const char *path, mpx_value *v, mpx_error *err) {
    mpx_value_clear(v);
    if (!mpx_dtype_is_float(t->dtype) && !mpx_dtype_is_int_like(t->dtype))
        return file_error(err, MPX_E_UNSUPPORTED, path, "tensor \"%s\" holds %s values; mpx reads numeric tensors only",
                          t->name, mpx_dtype_name(t->dtype));
    mpx_error sub;
    mpx_status st = mpx_value_alloc(v, t->dtype, t->rank, t->dims, &sub);
    if (st != MPX_OK) return file_error(err, st, path, "%s", sub.msg);
    if (v->n > 0) {
        if (v->f && t->f32) memcpy(v->f, t->f32, (size_t)v->n * sizeof *v->f);
        else if (v->i && t->i64) memcpy(v->i, t->i64, (size_t)v->n * sizeof *v->i);
        else if (v->d && t->f64) memcpy(v->d, t->f64, (size_t)v->n * sizeof *v->d);
        else {
            mpx_value_free(v);
            return file_error(err, MPX_E_INVALID, path, "tensor \"%s\" has no data", t->name);
        }
    }
    return MPX_OK;
}

static mpx_status read_bytes(const char *path, uint8_t **bytes, uint64_t *size, mpx_error *err);

/* A SequenceProto or OptionalProto in bytes: an optional may hold a
 * sequence (one level: a sequence inside is decoded as a plain one). */
static mpx_status container_of(mpx_graph *g, const uint8_t *bytes, size_t size, const char *path, bool optional,
                               mpx_value *out, char *name, size_t name_len, mpx_error *err) {
    mpx_tensor **items = NULL;
    const uint8_t *inner = NULL;
    size_t inner_len = 0;
    int n = 0;
    mpx_status st = mpx_sequence_proto_decode(g, bytes, size, path, &items, &n, name, name_len,
                                              optional ? &inner : NULL, &inner_len, err);
    mpx_value v;
    memset(&v, 0, sizeof v);
    v.is_seq = true, v.is_opt = optional, v.rank = -1, v.n = 0, v.dtype = MPX_DT_FLOAT;
    if (st == MPX_OK && optional && n > 1)
        st = file_error(err, MPX_E_INVALID, path, "an optional holds %d tensors", n);
    if (st == MPX_OK && inner) n = 1;
    if (st == MPX_OK && n > 0 && !(v.seq = calloc((size_t)n, sizeof *v.seq)))
        st = file_error(err, MPX_E_NOMEM, path, "out of memory");
    if (st == MPX_OK && inner) {
        v.seq[0].n = -1;
        st = container_of(g, inner, inner_len, path, false, &v.seq[0], NULL, 0, err);
        if (st == MPX_OK) v.n = 1, v.dtype = v.seq[0].dtype;
    }
    for (int k = 0; !inner && k < n && st == MPX_OK; k++) {
        st = value_of(items[k], path, &v.seq[k], err);
        if (st == MPX_OK) v.n = k + 1, v.dtype = v.seq[k].dtype;
    }
    if (st != MPX_OK) {
        mpx_value_free(&v);
        return st;
    }
    *out = v;
    return MPX_OK;
}

/* A .pb file decoded: a TensorProto, or (container) a SequenceProto or
 * OptionalProto; the tensors are decoded into a graph of their own. */
static mpx_status pb_read(const char *path, bool container, bool optional, mpx_value *out, char *name,
                          size_t name_len, mpx_error *err) {
    uint8_t *bytes = NULL;
    uint64_t size = 0;
    mpx_status st = read_bytes(path, &bytes, &size, err);
    if (st != MPX_OK) return st;
    mpx_graph *g = mpx_graph_new(path);
    if (!g) {
        free(bytes);
        return file_error(err, MPX_E_NOMEM, path, "out of memory");
    }
    mpx_value v;
    mpx_value_clear(&v);
    if (container) {
        st = container_of(g, bytes, (size_t)size, path, optional, &v, name, name_len, err);
    } else {
        mpx_tensor *t = NULL;
        st = mpx_tensor_proto_decode(g, bytes, (size_t)size, path, &t, err);
        if (st == MPX_OK) st = value_of(t, path, &v, err);
        if (st == MPX_OK && name && name_len) snprintf(name, name_len, "%s", t->name);
    }
    free(bytes);
    mpx_graph_free(g);
    if (st != MPX_OK) {
        mpx_value_free(&v);
        return st;
    }
    *out = v;
    return MPX_OK;
}

mpx_status mpx_pb_read_container(const char *path, bool optional, mpx_value *out, char *name, size_t name_len,
                                 mpx_error *err) {
    return pb_read(path, true, optional, out, name, name_len, err);
}

mpx_status mpx_pb_read(const char *path, mpx_value *out, char *name, size_t name_len, mpx_error *err) {
    return pb_read(path, false, false, out, name, name_len, err);
}

/* A whole protobuf file into memory (owned by the caller). */
static mpx_status read_bytes(const char *path, uint8_t **bytes, uint64_t *size, mpx_error *err) {
    FILE *fp = NULL;
    *size = 0;
    mpx_status st = open_regular(path, &fp, size, err);
    if (st != MPX_OK) return st;
    if (*size > PB_MAX_BYTES) {
        fclose(fp);
        return file_error(err, MPX_E_LIMIT, path, "%llu bytes is beyond protobuf's 2 GiB limit for one message",
                          (unsigned long long)*size);
    }
    *bytes = malloc(*size ? (size_t)*size : 1);
    if (!*bytes) {
        fclose(fp);
        return file_error(err, MPX_E_NOMEM, path, "out of memory for %llu bytes", (unsigned long long)*size);
    }
    size_t got = fread(*bytes, 1, (size_t)*size, fp);
    fclose(fp);
    if (got != *size) {
        free(*bytes);
        return file_error(err, MPX_E_IO, path, "short read");
    }
    return MPX_OK;
}
