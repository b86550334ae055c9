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
 * index in that side table (valueint is never used otherwise; json_read.c).
 * Values (data, side files, seeded init) are decoded in json_values.c. */
/* glibc declares realpath only for X/Open (or _DEFAULT_SOURCE), not for the
 * build-wide _POSIX_C_SOURCE=200809L. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif

#include "json_internal.h"

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
#include <unistd.h>

/* Model files beyond this are refused (weights belong in side files). */
#define MAX_JSON_BYTES ((size_t)1 << 30)

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

static mpx_attr_type infer_attr_type(const mpx_json_ctx *c, const cJSON *v) {
    if (cJSON_IsNumber(v)) return mpx_json_spelled_float(c, v) ? MPX_ATTR_FLOAT : MPX_ATTR_INT;
    if (cJSON_IsBool(v)) return MPX_ATTR_INT;
    if (cJSON_IsString(v)) return MPX_ATTR_STRING;
    if (!cJSON_IsArray(v)) return MPX_ATTR_UNDEFINED;
    bool nums = true, strs = true, fl = false;
    for (const cJSON *e = v->child; e; e = e->next) {
        nums &= cJSON_IsNumber(e);
        strs &= cJSON_IsString(e);
        fl |= cJSON_IsNumber(e) && mpx_json_spelled_float(c, e);
    }
    return nums ? (fl ? MPX_ATTR_FLOATS : MPX_ATTR_INTS) : strs ? MPX_ATTR_STRINGS : MPX_ATTR_UNDEFINED;
}

static mpx_status read_attr(mpx_json_ctx *c, mpx_node *n, mpx_attr *a, const cJSON *v) {
    mpx_arena *ar = c->g->arena;
    mpx_attr_type want = MPX_ATTR_UNDEFINED;
    if (!(a->name = mpx_json_dup(c, v->string))) return mpx_json_bad(c, MPX_E_NOMEM, "out of memory");
    if (cJSON_IsObject(v)) {
        static const char *const tkeys[] = {"tensor", NULL}, *const vkeys[] = {"type", "value", NULL};
        const char *tn;
        mpx_status st;
        if (mpx_json_field(v, "tensor")) {
            if ((st = mpx_json_check_keys(c, v, tkeys, NULL)) != MPX_OK) return st;
            want = MPX_ATTR_TENSOR;
            v = mpx_json_field(v, "tensor");
        } else {
            if ((st = mpx_json_check_keys(c, v, vkeys, NULL)) != MPX_OK ||
                (st = mpx_json_get_str(c, v, "type", true, NULL, &tn)) != MPX_OK)
                return st;
            if ((want = attr_type_from_name(tn)) == MPX_ATTR_UNDEFINED)
                return mpx_json_bad(c, MPX_E_INVALID, "unknown attribute type \"%.40s\" (float, int, string, "
                           "floats, ints, strings, tensor)", tn);
            if (!(v = mpx_json_field(v, "value"))) return mpx_json_bad(c, MPX_E_INVALID, "missing \"value\"");
        }
    } else if ((want = infer_attr_type(c, v)) == MPX_ATTR_UNDEFINED) {
        return mpx_json_bad(c, MPX_E_INVALID, "%s is not an attribute value (a number, a string, an "
                   "array of numbers or of strings, or {\"tensor\": ...})", mpx_json_kind_name(v));
    }
    a->type = want;
    int64_t iv;
    switch (want) {
    case MPX_ATTR_FLOAT:
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
            return mpx_json_bad(c, MPX_E_INVALID, "must be a finite number");
        a->f = (float)v->valuedouble;
        return MPX_OK;
    case MPX_ATTR_INT:
        if (cJSON_IsBool(v)) iv = cJSON_IsTrue(v);
        else if (!mpx_json_as_int64(c, v, &iv)) return mpx_json_bad(c, MPX_E_INVALID, "must be an integer within int64");
        a->i = iv;
        return MPX_OK;
    case MPX_ATTR_STRING:
        if (!cJSON_IsString(v)) return mpx_json_bad(c, MPX_E_INVALID, "must be a string");
        a->s = mpx_json_dup(c, v->valuestring);
        a->s_len = a->s ? strlen(a->s) : 0;
        return a->s ? MPX_OK : mpx_json_bad(c, MPX_E_NOMEM, "out of memory");
    case MPX_ATTR_TENSOR: {
        mpx_tensor *t = mpx_arena_alloc(ar, sizeof *t);
        char nm[700];
        snprintf(nm, sizeof nm, "%s:%s", n->name, a->name);
        if (!t || !(t->name = mpx_json_dup(c, nm))) return mpx_json_bad(c, MPX_E_NOMEM, "out of memory");
        t->index = -1;
        t->decl_rank = t->rank = -1;
        t->nelem = -1;
        a->t = t;
        return mpx_json_read_value(c, v, t, false);
    }
    default:
        break;
    }
    /* the list kinds */
    if (!cJSON_IsArray(v)) return mpx_json_bad(c, MPX_E_INVALID, "must be an array");
    int cnt = cJSON_GetArraySize(v), k = 0;
    a->n = cnt;
    size_t sz = want == MPX_ATTR_FLOATS ? sizeof(float) : want == MPX_ATTR_INTS ? sizeof(int64_t)
                                                                               : sizeof(char *);
    void *arr = mpx_arena_calloc(ar, (size_t)(cnt ? cnt : 1), sz);
    if (!arr) return mpx_json_bad(c, MPX_E_NOMEM, "out of memory");
    if (want == MPX_ATTR_FLOATS) a->floats = arr;
    else if (want == MPX_ATTR_INTS) a->ints = arr;
    else a->strings = arr;
    for (const cJSON *e = v->child; e; e = e->next, k++) {
        if (want == MPX_ATTR_FLOATS && cJSON_IsNumber(e) && isfinite(e->valuedouble))
            a->floats[k] = (float)e->valuedouble;
        else if (want == MPX_ATTR_INTS && mpx_json_as_int64(c, e, &iv))
            a->ints[k] = iv;
        else if (want == MPX_ATTR_STRINGS && cJSON_IsString(e)) {
            if (!(a->strings[k] = mpx_json_dup(c, e->valuestring))) return mpx_json_bad(c, MPX_E_NOMEM, "out of memory");
        } else
            return mpx_json_bad(c, MPX_E_INVALID, "element %d must be %s", k,
                       want == MPX_ATTR_FLOATS ? "a finite number"
                       : want == MPX_ATTR_INTS ? "an integer within int64" : "a string");
    }
    return MPX_OK;
}

/* ---- sections ---------------------------------------------------------------- */

/* inputs / outputs / value_info entries: {"name", "type"?, "shape"?} */
static mpx_status read_decl(mpx_json_ctx *c, const cJSON *obj, const char *dflt_type, mpx_tensor **out) {
    static const char *const keys[] = {"name", "type", "shape", "doc", NULL};
    const char *name, *tname;
    mpx_status st;
    if (!cJSON_IsObject(obj)) return mpx_json_bad(c, MPX_E_INVALID, "must be an object, not %s", mpx_json_kind_name(obj));
    if ((st = mpx_json_check_keys(c, obj, keys, NULL)) != MPX_OK ||
        (st = mpx_json_get_str(c, obj, "name", true, NULL, &name)) != MPX_OK ||
        (st = mpx_json_get_str(c, obj, "type", false, dflt_type, &tname)) != MPX_OK)
        return st;
    if (!name[0]) return mpx_json_bad(c, MPX_E_INVALID, "\"name\" is empty");
    mpx_tensor *t = mpx_graph_tensor(c->g, name);
    if (!t) return mpx_json_bad(c, MPX_E_NOMEM, "out of memory");
    *out = t;
    const cJSON *shape = mpx_json_field(obj, "shape");
    if (!tname && !shape) return MPX_OK;
    mpx_dtype dt = tname ? mpx_dtype_from_name(tname) : t->dtype;
    if (dt == MPX_DT_UNDEFINED && tname)
        return mpx_json_bad(c, MPX_E_INVALID, "unknown type \"%.40s\"", tname);
    int rank = -1;
    int64_t dims[MPX_MAX_RANK];
    const char *sym[MPX_MAX_RANK];
    if (shape && (st = mpx_json_read_shape(c, shape, true, &rank, dims, sym)) != MPX_OK) return st;
    if (t->flags & MPX_T_INITIALIZER) return MPX_OK; /* the value's own shape wins */
    mpx_error sub;
    if ((st = mpx_tensor_declare(t, dt, rank, dims, sym, &sub)) != MPX_OK) return mpx_json_bad(c, st, "%s", sub.msg);
    return MPX_OK;
}

static mpx_status read_list(mpx_json_ctx *c, const cJSON *root, const char *key, bool required,
                            const char *dflt_type, uint32_t flag) {
    const cJSON *arr = mpx_json_field(root, key);
    if (!arr) return required ? mpx_json_bad(c, MPX_E_INVALID, "missing \"%s\"", key) : MPX_OK;
    if (!cJSON_IsArray(arr)) return mpx_json_bad(c, MPX_E_INVALID, "\"%s\" must be an array, not %s", key, mpx_json_kind_name(arr));
    int cnt = cJSON_GetArraySize(arr), i = 0;
    if (flag == MPX_T_OUTPUT) {
        if (cnt == 0) return mpx_json_bad(c, MPX_E_INVALID, "\"outputs\" is empty; a model needs an output");
        if (!(c->g->outputs = mpx_arena_calloc(c->g->arena, (size_t)cnt, sizeof(mpx_tensor *))))
            return mpx_json_bad(c, MPX_E_NOMEM, "out of memory");
    }
    for (const cJSON *e = arr->child; e; e = e->next, i++) {
        const cJSON *nm = cJSON_IsObject(e) ? mpx_json_field(e, "name") : NULL;
        if (nm && cJSON_IsString(nm)) mpx_json_set_where(c, "%s[%d] (\"%.80s\")", key, i, nm->valuestring);
        else mpx_json_set_where(c, "%s[%d]", key, i);
        mpx_tensor *t;
        mpx_status st = read_decl(c, e, dflt_type, &t);
        if (st != MPX_OK) return st;
        if (flag && (t->flags & flag))
            return mpx_json_bad(c, MPX_E_INVALID, "\"%s\" is listed twice", t->name);
        t->flags |= flag;
        if (flag == MPX_T_OUTPUT) c->g->outputs[c->g->n_outputs++] = t;
    }
    c->where[0] = '\0';
    return MPX_OK;
}

static mpx_status read_initializers(mpx_json_ctx *c, const cJSON *arr) {
    if (!arr) return MPX_OK;
    if (!cJSON_IsArray(arr))
        return mpx_json_bad(c, MPX_E_INVALID, "\"initializers\" must be an array, not %s", mpx_json_kind_name(arr));
    int i = 0;
    for (const cJSON *e = arr->child; e; e = e->next, i++) {
        const char *name;
        mpx_json_set_where(c, "initializers[%d]", i);
        if (!cJSON_IsObject(e)) return mpx_json_bad(c, MPX_E_INVALID, "must be an object, not %s", mpx_json_kind_name(e));
        mpx_status st = mpx_json_get_str(c, e, "name", true, NULL, &name);
        if (st != MPX_OK) return st;
        mpx_json_set_where(c, "initializers[%d] (\"%.80s\")", i, name);
        if (!name[0]) return mpx_json_bad(c, MPX_E_INVALID, "\"name\" is empty");
        mpx_tensor *t = mpx_graph_tensor(c->g, name);
        if (!t) return mpx_json_bad(c, MPX_E_NOMEM, "out of memory");
        if (t->flags & MPX_T_INITIALIZER)
            return mpx_json_bad(c, MPX_E_INVALID, "initializer \"%.80s\" is defined twice", name);
        if ((st = mpx_json_read_value(c, e, t, true)) != MPX_OK) return st;
        mpx_error sub;
        if ((st = mpx_tensor_declare(t, t->dtype, t->rank, t->dims, NULL, &sub)) != MPX_OK)
            return mpx_json_bad(c, st, "%s", sub.msg);
        t->flags |= MPX_T_INITIALIZER | MPX_T_CONSTANT;
    }
    c->where[0] = '\0';
    return MPX_OK;
}

/* "inputs" / "outputs" of a node: names, "" for an omitted optional one. */
static mpx_status read_names(mpx_json_ctx *c, const cJSON *arr, const char *key, mpx_tensor **out) {
    int i = 0;
    for (const cJSON *e = arr->child; e; e = e->next, i++) {
        if (!cJSON_IsString(e)) return mpx_json_bad(c, MPX_E_INVALID, "\"%s\" must be an array of strings", key);
        out[i] = NULL;
        if (!e->valuestring[0]) continue;
        if (!(out[i] = mpx_graph_tensor(c->g, e->valuestring))) return mpx_json_bad(c, MPX_E_NOMEM, "out of memory");
    }
    return MPX_OK;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* No attribute name twice (cJSON keeps repeated keys). Sorted, not compared
 * pairwise: a node with 20000 attributes took 10 s that way. */
static mpx_status unique_attrs(mpx_json_ctx *c, const cJSON *attrs, int n) {
    if (!attrs || n < 2) return MPX_OK;
    const char **names = malloc((size_t)n * sizeof *names);
    if (!names) return mpx_json_bad(c, MPX_E_NOMEM, "out of memory");
    int k = 0;
    for (const cJSON *a = attrs->child; a && k < n; a = a->next) names[k++] = a->string ? a->string : "";
    qsort(names, (size_t)k, sizeof *names, cmp_str);
    mpx_status st = MPX_OK;
    for (int i = 1; i < k && st == MPX_OK; i++)
        if (!strcmp(names[i - 1], names[i]))
            st = mpx_json_bad(c, MPX_E_INVALID, "attribute \"%.80s\" appears twice", names[i]);
    free(names);
    return st;
}

static int cmp_tensor(const void *a, const void *b) {
    int32_t x = (*(mpx_tensor *const *)a)->index, y = (*(mpx_tensor *const *)b)->index;
    return (x > y) - (x < y);
}

/* No output named twice; sorted for the same reason as unique_attrs. */
static mpx_status unique_outputs(mpx_json_ctx *c, const mpx_node *n) {
    if (n->n_outputs < 2) return MPX_OK;
    mpx_tensor **outs = malloc((size_t)n->n_outputs * sizeof *outs);
    if (!outs) return mpx_json_bad(c, MPX_E_NOMEM, "out of memory");
    int k = 0;
    for (int j = 0; j < n->n_outputs; j++)
        if (n->outputs[j]) outs[k++] = n->outputs[j];
    qsort(outs, (size_t)k, sizeof *outs, cmp_tensor);
    mpx_status st = MPX_OK;
    for (int j = 1; j < k && st == MPX_OK; j++)
        if (outs[j] == outs[j - 1]) st = mpx_json_bad(c, MPX_E_INVALID, "output \"%s\" is listed twice", outs[j]->name);
    free(outs);
    return st;
}

static mpx_status read_node(mpx_json_ctx *c, const cJSON *e, int i) {
    static const char *const keys[] = {"name", "op", "domain", "inputs", "outputs", "attrs", "doc", NULL};
    const char *name, *op, *domain;
    mpx_status st;
    mpx_json_set_where(c, "nodes[%d]", i);
    if (!cJSON_IsObject(e)) return mpx_json_bad(c, MPX_E_INVALID, "must be an object, not %s", mpx_json_kind_name(e));
    if ((st = mpx_json_get_str(c, e, "name", false, NULL, &name)) != MPX_OK) return st;
    if (name) mpx_json_set_where(c, "nodes[%d] (\"%.80s\")", i, name);
    if ((st = mpx_json_check_keys(c, e, keys, NULL)) != MPX_OK ||
        (st = mpx_json_get_str(c, e, "op", true, NULL, &op)) != MPX_OK ||
        (st = mpx_json_get_str(c, e, "domain", false, "", &domain)) != MPX_OK)
        return st;
    if (!op[0]) return mpx_json_bad(c, MPX_E_INVALID, "\"op\" is empty");
    const cJSON *ins = mpx_json_field(e, "inputs"), *outs = mpx_json_field(e, "outputs"), *attrs = mpx_json_field(e, "attrs");
    if (ins && !cJSON_IsArray(ins)) return mpx_json_bad(c, MPX_E_INVALID, "\"inputs\" must be an array of strings");
    if (!outs) return mpx_json_bad(c, MPX_E_INVALID, "missing \"outputs\"");
    if (!cJSON_IsArray(outs) || !cJSON_GetArraySize(outs))
        return mpx_json_bad(c, MPX_E_INVALID, "\"outputs\" must be a non-empty array of strings");
    if (attrs && !cJSON_IsObject(attrs)) return mpx_json_bad(c, MPX_E_INVALID, "\"attrs\" must be an object");
    mpx_node *n = mpx_graph_add_node(c->g, name, op, domain, ins ? cJSON_GetArraySize(ins) : 0,
                                     cJSON_GetArraySize(outs), attrs ? cJSON_GetArraySize(attrs) : 0);
    if (!n) return mpx_json_bad(c, MPX_E_NOMEM, "out of memory");
    if ((ins && (st = read_names(c, ins, "inputs", n->inputs)) != MPX_OK) ||
        (st = read_names(c, outs, "outputs", n->outputs)) != MPX_OK)
        return st;
    if ((st = unique_outputs(c, n)) != MPX_OK) return st;
    if ((st = unique_attrs(c, attrs, n->n_attrs)) != MPX_OK) return st;
    int k = 0;
    char saved[sizeof c->where];
    memcpy(saved, c->where, sizeof saved);
    for (const cJSON *a = attrs ? attrs->child : NULL; a; a = a->next, k++) {
        mpx_json_push_where(c, ": attrs.");
        mpx_json_push_where(c, a->string);
        if ((st = read_attr(c, n, &n->attrs[k], a)) != MPX_OK) return st;
        memcpy(c->where, saved, sizeof saved);
    }
    return MPX_OK;
}

static mpx_status convert(mpx_json_ctx *c, const cJSON *root) {
    static const char *const keys[] = {"format", "version", "name", "producer", "opset", "doc",
                                       "inputs", "outputs", "value_info", "initializers",
                                       "nodes", NULL};
    mpx_status st;
    const char *fmt, *name, *producer;
    if (!cJSON_IsObject(root))
        return mpx_json_bad(c, MPX_E_PARSE, "the top level must be a JSON object, not %s", mpx_json_kind_name(root));
    if ((st = mpx_json_check_keys(c, root, keys, NULL)) != MPX_OK ||
        (st = mpx_json_get_str(c, root, "format", true, NULL, &fmt)) != MPX_OK)
        return st;
    if (strcmp(fmt, "mpx-model") != 0)
        return mpx_json_bad(c, MPX_E_PARSE, "\"format\" is \"%.40s\"; an mpx model says \"mpx-model\"", fmt);
    int64_t version = 1, opset = 17;
    const cJSON *v = mpx_json_field(root, "version"), *o = mpx_json_field(root, "opset");
    if (v && !mpx_json_as_int64(c, v, &version)) return mpx_json_bad(c, MPX_E_INVALID, "\"version\" must be an integer");
    if (version != 1)
        return mpx_json_bad(c, MPX_E_UNSUPPORTED, "format version %lld is not supported (mpx reads version 1)",
                   (long long)version);
    if (o && (!mpx_json_as_int64(c, o, &opset) || opset < 1 || opset > 1000))
        return mpx_json_bad(c, MPX_E_INVALID, "\"opset\" must be an integer from 1 to 1000");
    if ((st = mpx_json_get_str(c, root, "name", false, "", &name)) != MPX_OK ||
        (st = mpx_json_get_str(c, root, "producer", false, "", &producer)) != MPX_OK)
        return st;
    mpx_graph *g = c->g;
    g->opset = (int)opset;
    if (!(g->name = mpx_json_dup(c, name)) || !(g->producer = mpx_json_dup(c, producer)))
        return mpx_json_bad(c, MPX_E_NOMEM, "out of memory");
    const cJSON *nodes = mpx_json_field(root, "nodes");
    if (!nodes) return mpx_json_bad(c, MPX_E_INVALID, "missing \"nodes\"");
    if (!cJSON_IsArray(nodes)) return mpx_json_bad(c, MPX_E_INVALID, "\"nodes\" must be an array, not %s", mpx_json_kind_name(nodes));

    /* Inputs first and outputs in their listed order, so graph->inputs (which
     * finalize lists in tensor-creation order) and graph->outputs follow the file. */
    if ((st = read_list(c, root, "inputs", false, "float32", MPX_T_INPUT)) != MPX_OK ||
        (st = read_initializers(c, mpx_json_field(root, "initializers"))) != MPX_OK ||
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

#define MPX_STR_(x) #x
#define MPX_STR(x) MPX_STR_(x)

/* How deep in [ and { the text is at offset at (strings skipped): cJSON
 * gives up past CJSON_NESTING_LIMIT and says only where. */
static size_t nesting_at(const char *s, size_t at) {
    size_t depth = 0, deepest = 0;
    bool in_str = false;
    for (size_t i = 0; i <= at && s[i]; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\' && s[i + 1]) i++;
            else if (c == '"') in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '[' || c == '{') {
            if (++depth > deepest) deepest = depth;
        } else if ((c == ']' || c == '}') && depth) {
            depth--;
        }
    }
    return deepest;
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
        size_t at = end ? (size_t)(end - s) : 0;
        syntax_error(file, s, len, at, nesting_at(s, at) > CJSON_NESTING_LIMIT ? "nested too deeply (cJSON reads "
                     "at most " MPX_STR(CJSON_NESTING_LIMIT) " levels of [ and {)" : "unexpected character", err);
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
    mpx_json_ctx c = {.file = file, .dir = dir, .err = err};
    mpx_status st = MPX_OK;
    int k = 0;
    c.n_nums = mpx_json_scan_numbers(s, len, NULL);
    c.nums = calloc((size_t)c.n_nums + 1, sizeof *c.nums);
    c.g = mpx_graph_new(file);
    if (!c.nums || !c.g) {
        st = mpx_error_at(err, MPX_E_NOMEM, file, 0, 0, "out of memory");
    } else {
        mpx_json_scan_numbers(s, len, c.nums);
        mpx_json_number_index(root, &k);
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

static mpx_graph *from_buffer(const void *buf, size_t len, const char *path, const char *dir,
                              mpx_error *err) {
    return mpx_graph_load_json_text(buf, len, path, dir, err);
}

mpx_graph *mpx_graph_load_json(const char *path, mpx_error *err) {
    if (!path) {
        mpx_error_set(err, MPX_E_ARG, "no model path");
        return NULL;
    }
    int fd = mpx_file_open_read(path, false, err);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        mpx_error_at(err, MPX_E_IO, path, 0, 0, "cannot read: %s", strerror(errno));
        close(fd);
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
    return mpx_load_in_folder(buf, len, path, from_buffer, err);
}
