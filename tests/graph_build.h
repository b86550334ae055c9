/* graph_build.h - building small graphs in one line, for the C unit tests
 * (test_shape, test_exec, test_compare, test_colour share it).
 *
 *   node(g, "c1", "Conv", "x:f:1x3xHxW w#f:4x3x3x3 -", "y", "pads=[1,1,1,1] group=1");
 *
 * Inputs: a tensor name; a graph input "x:<t>:<dims>" (dims are numbers or
 * names for symbolic dims, "x" between them, "" a scalar); an initializer with
 * a value "c=<t>[1,2]" / "c=<t>5" (scalar) / "c=i[]"; an initializer of a
 * shape filled with 0.5 (int: 1) "w#<t>:<dims>"; "-" omits an input.
 * <t>: f float32, h float16, i int64, I int32, b bool.
 * Attributes: name=int, name=float, name=[ints], name=[floats] (a '.' in the
 * list), name=T:<value> (a tensor, as for "c=" above), else a string.
 *
 * Header-only (static inline) so every test keeps its own CHECK counters. */
#ifndef MPX_TEST_GRAPH_BUILD_H
#define MPX_TEST_GRAPH_BUILD_H

#include "mpx_graph.h"
#include "mpx_numerics.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { GB_MAX_VALUES = 64, GB_MAX_LIST = 16 };

static inline mpx_dtype gb_dtype(char c) {
    switch (c) {
    case 'i': return MPX_DT_INT64;
    case 'I': return MPX_DT_INT32;
    case 'b': return MPX_DT_BOOL;
    case 'h': return MPX_DT_FLOAT16;
    case 'u': return MPX_DT_UINT8;
    case 'U': return MPX_DT_UINT64;
    default: return MPX_DT_FLOAT;
    }
}

/* "1x3xHx4": numbers, or names for symbolic dims; "" is a scalar. */
static inline int gb_dims(mpx_graph *g, const char *s, int64_t *d, const char **sym) {
    int r = 0;
    while (*s && r < MPX_MAX_RANK) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end != s) {
            d[r] = v;
            sym[r] = NULL;
        } else {
            size_t n = strcspn(s, "x");
            d[r] = -1;
            sym[r] = mpx_arena_strndup(g->arena, s, n);
            end = (char *)s + n;
        }
        r++;
        s = end;
        if (*s == 'x') s++;
    }
    return r;
}

/* "i[1,2]", "i5" (scalar), "f[0.5,2]", "f0.5", "i[]": give t that value. */
static inline void gb_set_value(mpx_graph *g, mpx_tensor *t, const char *v) {
    mpx_dtype dt = gb_dtype(v[0]);
    double vals[GB_MAX_VALUES];
    long long ivals[GB_MAX_VALUES];
    int n = 0;
    const char *p = v + 1;
    bool list = *p == '[';
    if (list) p++;
    while (*p && *p != ']' && n < GB_MAX_VALUES) {
        char *end;
        ivals[n] = strtoll(p, &end, 10); /* exact for INT64_MAX */
        vals[n++] = strtod(p, &end);
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p != ']' && *p) break;
    }
    int64_t dim = n;
    mpx_tensor_alloc_value(g, t, dt, list ? 1 : 0, &dim, NULL);
    for (int i = 0; i < n; i++) {
        if (t->f32) t->f32[i] = (float)vals[i];
        else t->i64[i] = ivals[i];
    }
}

static inline mpx_tensor *gb_tensor(mpx_graph *g, const char *spec) {
    char name[64];
    size_t n = strcspn(spec, ":=#");
    snprintf(name, sizeof name, "%.*s", (int)n, spec);
    mpx_tensor *t = mpx_graph_tensor(g, name);
    int64_t d[MPX_MAX_RANK];
    const char *sym[MPX_MAX_RANK];
    if (spec[n] == ':') {
        int r = gb_dims(g, spec + n + 3, d, sym);
        mpx_tensor_declare(t, gb_dtype(spec[n + 1]), r, d, sym, NULL);
        t->flags |= MPX_T_INPUT;
    } else if (spec[n] == '=') {
        gb_set_value(g, t, spec + n + 1);
        t->flags |= MPX_T_INITIALIZER;
    } else if (spec[n] == '#') {
        int r = gb_dims(g, spec + n + 3, d, sym);
        mpx_tensor_alloc_value(g, t, gb_dtype(spec[n + 1]), r, d, NULL);
        for (int64_t i = 0; i < t->nelem; i++) {
            if (t->f32) t->f32[i] = 0.5f;
            else t->i64[i] = 1;
        }
        t->flags |= MPX_T_INITIALIZER;
    }
    return t;
}

static inline void gb_attr(mpx_graph *g, mpx_attr *a, const char *tok) {
    size_t n = strcspn(tok, "=");
    a->name = mpx_arena_strndup(g->arena, tok, n);
    const char *v = tok + n + 1;
    if (strncmp(v, "T:", 2) == 0) {
        a->type = MPX_ATTR_TENSOR;
        a->t = mpx_arena_alloc(g->arena, sizeof *a->t);
        a->t->name = "value";
        gb_set_value(g, a->t, v + 2);
        return;
    }
    if (*v == '[') {
        bool flt = strchr(v, '.') != NULL;
        a->type = flt ? MPX_ATTR_FLOATS : MPX_ATTR_INTS;
        a->ints = mpx_arena_calloc(g->arena, GB_MAX_LIST, sizeof(int64_t));
        a->floats = mpx_arena_calloc(g->arena, GB_MAX_LIST, sizeof(float));
        const char *p = v + 1;
        while (*p && *p != ']' && a->n < GB_MAX_LIST) {
            char *end;
            if (flt) a->floats[a->n++] = strtof(p, &end);
            else a->ints[a->n++] = strtoll(p, &end, 10);
            p = *end == ',' ? end + 1 : end;
        }
        return;
    }
    char *end;
    long long i = strtoll(v, &end, 10);
    if (end != v && !*end) {
        a->type = MPX_ATTR_INT;
        a->i = i;
        return;
    }
    double f = strtod(v, &end);
    if (end != v && !*end) {
        a->type = MPX_ATTR_FLOAT;
        a->f = (float)f;
        return;
    }
    a->type = MPX_ATTR_STRING;
    a->s = mpx_arena_strdup(g->arena, v);
    a->s_len = strlen(v);
}

static inline int gb_count_tokens(const char *s) {
    int n = 0;
    for (const char *p = s; *p;) {
        p += strspn(p, " ");
        if (!*p) break;
        n++;
        p += strcspn(p, " ");
    }
    return n;
}

static inline mpx_node *node(mpx_graph *g, const char *name, const char *op, const char *ins, const char *outs,
                             const char *attrs) {
    mpx_node *n = mpx_graph_add_node(g, name, op, "", gb_count_tokens(ins), gb_count_tokens(outs),
                                     gb_count_tokens(attrs));
    const char *lists[3] = {ins, outs, attrs};
    for (int l = 0; l < 3; l++) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", lists[l]);
        int k = 0;
        char *save;
        for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save), k++) {
            if (l == 2) gb_attr(g, &n->attrs[k], tok);
            else if (strcmp(tok, "-") == 0) continue;
            else if (l == 0) n->inputs[k] = gb_tensor(g, tok);
            else n->outputs[k] = mpx_graph_tensor(g, tok);
        }
    }
    return n;
}

/* Mark the space-separated tensors as model outputs, then finalize and infer. */
static inline mpx_status gb_build(mpx_graph *g, const char *outputs, mpx_error *err) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", outputs ? outputs : "");
    char *save;
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
        mpx_graph_tensor(g, tok)->flags |= MPX_T_OUTPUT;
    mpx_error_clear(err);
    mpx_status st = mpx_graph_finalize(g, err);
    if (st == MPX_OK) st = mpx_graph_infer(g, err);
    return st;
}

/* examples/<file> from the source tree ($MPX_SRC, as ctest sets it; else
 * ".."), its first input bound to dims, shapes inferred. NULL with err
 * filled (naming the file) on failure. */
static inline mpx_graph *gb_load_example(const char *file, int rank, const int64_t *dims, mpx_error *err) {
    char path[1024];
    const char *src = getenv("MPX_SRC");
    snprintf(path, sizeof path, "%s/examples/%s", src ? src : "..", file);
    mpx_graph *g = mpx_graph_load(path, err);
    if (!g) return NULL;
    mpx_status st = rank > 0 ? mpx_graph_bind_input(g, g->inputs[0]->name, rank, dims, err) : MPX_OK;
    if (!st) st = mpx_graph_infer(g, err);
    if (st) {
        mpx_graph_free(g);
        return NULL;
    }
    return g;
}

/* v's float values from a seeded normal(0, 1). */
static inline void gb_fill_normal(mpx_value *v, uint64_t seed) {
    mpx_rng rng;
    mpx_rng_init(&rng, seed);
    for (int64_t k = 0; k < v->n; k++) v->f[k] = (float)mpx_rng_normal(&rng, 0.0, 1.0);
}

#endif
