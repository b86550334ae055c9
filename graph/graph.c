/* graph.c - building and checking a graph: the part both loaders share.
 *
 * Loaders only translate their parse tree into tensors and nodes; every
 * structural rule (one producer per tensor, nothing read that nobody
 * produces, no cycle) is checked once, here, so JSON and ONNX models get the
 * same guarantees and the same messages. */
#include "graph_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- name -> pointer map (open addressing; the table is malloc'd because it
 * is resized, the keys and values live in the arena) ---------------------- */

typedef struct mpx_name_map {
    size_t cap, len;
    const char **keys;
    void **vals;
} name_map;

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static name_map *map_new(void) {
    name_map *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->cap = 64;
    m->keys = calloc(m->cap, sizeof *m->keys);
    m->vals = calloc(m->cap, sizeof *m->vals);
    if (!m->keys || !m->vals) {
        free(m->keys);
        free(m->vals);
        free(m);
        return NULL;
    }
    return m;
}

static void map_free(name_map *m) {
    if (!m) return;
    free(m->keys);
    free(m->vals);
    free(m);
}

static void *map_get(const name_map *m, const char *key) {
    if (!m || !key) return NULL;
    size_t i = (size_t)hash_str(key) & (m->cap - 1);
    while (m->keys[i]) {
        if (strcmp(m->keys[i], key) == 0) return m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
    return NULL;
}

static bool map_put(name_map *m, const char *key, void *val) {
    if ((m->len + 1) * 2 > m->cap) {
        size_t ncap = m->cap * 2;
        const char **nk = calloc(ncap, sizeof *nk);
        void **nv = calloc(ncap, sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return false;
        }
        for (size_t j = 0; j < m->cap; j++) {
            if (!m->keys[j]) continue;
            size_t i = (size_t)hash_str(m->keys[j]) & (ncap - 1);
            while (nk[i]) i = (i + 1) & (ncap - 1);
            nk[i] = m->keys[j];
            nv[i] = m->vals[j];
        }
        free(m->keys);
        free(m->vals);
        m->keys = nk;
        m->vals = nv;
        m->cap = ncap;
    }
    size_t i = (size_t)hash_str(key) & (m->cap - 1);
    while (m->keys[i]) {
        if (strcmp(m->keys[i], key) == 0) {
            m->vals[i] = val;
            return true;
        }
        i = (i + 1) & (m->cap - 1);
    }
    m->keys[i] = key;
    m->vals[i] = val;
    m->len++;
    return true;
}

/* ---- growing pointer arrays in the arena ---------------------------------- */

static bool grow(mpx_arena *a, void ***arr, int len, int *cap) {
    if (len < *cap) return true;
    int ncap = *cap ? *cap * 2 : 64;
    void **n = mpx_arena_calloc(a, (size_t)ncap, sizeof *n);
    if (!n) return false;
    if (*arr) memcpy(n, *arr, (size_t)len * sizeof *n);
    *arr = n;
    *cap = ncap;
    return true;
}

/* ---- building ------------------------------------------------------------- */

mpx_graph *mpx_graph_new(const char *path) {
    mpx_graph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->arena = mpx_arena_new();
    g->map_ = map_new();
    g->node_map_ = map_new();
    if (!g->arena || !g->map_ || !g->node_map_) {
        mpx_graph_free(g);
        return NULL;
    }
    g->path = mpx_arena_strdup(g->arena, path ? path : "");
    g->name = "";
    g->producer = "";
    if (!g->path) {
        mpx_graph_free(g);
        return NULL;
    }
    return g;
}

void mpx_graph_free(mpx_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->n_children_; i++) mpx_graph_free(g->children_[i]);
    free(g->children_);
    free(g->files_);
    for (int i = 0; i < g->n_tensors; i++)
        if (g->tensors[i]->derived && g->tensors[i]->derived_free) g->tensors[i]->derived_free(g->tensors[i]->derived);
    map_free(g->map_);
    map_free(g->node_map_);
    mpx_arena_free(g->arena);
    free(g);
}

mpx_tensor *mpx_graph_find_tensor(const mpx_graph *g, const char *name) {
    return g ? map_get(g->map_, name) : NULL;
}

mpx_node *mpx_graph_find_node(const mpx_graph *g, const char *name) {
    return g ? map_get(g->node_map_, name) : NULL;
}

static bool each_in(const mpx_graph *b, const mpx_node *owner, int depth,
                    bool (*visit)(void *ctx, const mpx_node *n, const mpx_node *owner), void *ctx) {
    for (int i = 0; b && depth <= MPX_MAX_SUBGRAPH_DEPTH && i < b->n_nodes; i++) {
        if (!visit(ctx, b->nodes[i], owner)) return false;
        if (b->nodes[i]->body && !each_in(b->nodes[i]->body, owner, depth + 1, visit, ctx)) return false;
    }
    return true;
}

void mpx_graph_each_body_node(const mpx_graph *g, bool (*visit)(void *ctx, const mpx_node *n, const mpx_node *owner),
                              void *ctx) {
    for (int i = 0; g && i < g->n_nodes; i++)
        if (g->nodes[i]->body && !each_in(g->nodes[i]->body, g->nodes[i], 0, visit, ctx)) return;
}

typedef struct body_find {
    const char *name;
    const mpx_node *found, *owner;
} body_find;

static bool find_visit(void *ctx, const mpx_node *n, const mpx_node *owner) {
    body_find *f = ctx;
    if (strcmp(n->name, f->name) != 0) return true;
    f->found = n, f->owner = owner;
    return false;
}

const mpx_node *mpx_graph_find_body_node(const mpx_graph *g, const char *name, const mpx_node **owner) {
    body_find f = {name, NULL, NULL};
    if (name) mpx_graph_each_body_node(g, find_visit, &f);
    if (owner) *owner = f.owner;
    return f.found;
}

mpx_tensor *mpx_graph_tensor(mpx_graph *g, const char *name) {
    if (!g || !name) return NULL;
    mpx_tensor *t = map_get(g->map_, name);
    if (t) return t;
    t = mpx_arena_alloc(g->arena, sizeof *t);
    if (!t) return NULL;
    t->name = mpx_arena_strdup(g->arena, name);
    if (!t->name) return NULL;
    t->rank = -1;
    t->decl_rank = -1;
    t->nelem = -1;
    for (int i = 0; i < MPX_MAX_RANK; i++) t->dims[i] = t->decl_dims[i] = -1;
    if (!grow(g->arena, (void ***)&g->tensors, g->n_tensors, &g->tensors_cap_)) return NULL;
    if (!map_put(g->map_, t->name, t)) return NULL;
    t->index = g->n_tensors;
    g->tensors[g->n_tensors++] = t;
    return t;
}

static bool suffix_taken(const mpx_graph *g, const char *base, int k, char *alt, size_t n) {
    snprintf(alt, n, "%.600s#%d", base, k);
    return map_get(g->node_map_, alt) != NULL;
}

mpx_node *mpx_graph_add_node(mpx_graph *g, const char *name, const char *op_type,
                             const char *domain, int n_inputs, int n_outputs,
                             int n_attrs) {
    if (!g || n_inputs < 0 || n_outputs < 0 || n_attrs < 0) return NULL;
    mpx_node *n = mpx_arena_alloc(g->arena, sizeof *n);
    if (!n) return NULL;
    n->op_type = mpx_arena_strdup(g->arena, op_type ? op_type : "");
    n->domain = mpx_arena_strdup(g->arena, domain ? domain : "");
    n->op = MPX_OP_UNKNOWN;
    n->opset = g->opset;
    n->file_order = g->n_nodes;
    n->n_inputs = n_inputs;
    n->n_outputs = n_outputs;
    n->n_attrs = n_attrs;
    n->inputs = mpx_arena_calloc(g->arena, (size_t)n_inputs, sizeof *n->inputs);
    n->outputs = mpx_arena_calloc(g->arena, (size_t)n_outputs, sizeof *n->outputs);
    n->attrs = mpx_arena_calloc(g->arena, (size_t)n_attrs, sizeof *n->attrs);
    if (!n->op_type || !n->domain || !n->inputs || !n->outputs || !n->attrs) return NULL;

    /* Names identify nodes in rules and messages, so they must be unique:
     * an unnamed node gets "<op>_<n>", a repeated name a "#k" suffix. */
    char buf[600];
    if (!name || !*name) {
        snprintf(buf, sizeof buf, "%s_%d", n->op_type, g->n_nodes);
        name = buf;
    }
    char alt[640];
    if (map_get(g->node_map_, name)) {
        /* The first free "#k" (k >= 2), by galloping then bisecting over k:
         * the suffixes handed out so far are consecutive, so this finds the
         * next one in O(log n) look-ups, where counting up from 2 made a
         * model that repeats one name n times take O(n^2) (20000 repeats:
         * minutes). Any free k found keeps names unique. */
        int lo = 1, hi = 2; /* lo: taken (1 stands for the bare name); hi: free once the loop ends */
        while (suffix_taken(g, name, hi, alt, sizeof alt)) {
            lo = hi;
            hi *= 2;
        }
        while (hi - lo > 1) {
            int mid = lo + (hi - lo) / 2;
            if (suffix_taken(g, name, mid, alt, sizeof alt)) lo = mid;
            else hi = mid;
        }
        snprintf(alt, sizeof alt, "%.600s#%d", name, hi);
        name = alt;
    }
    n->name = mpx_arena_strdup(g->arena, name);
    if (!n->name) return NULL;
    if (!grow(g->arena, (void ***)&g->nodes, g->n_nodes, &g->nodes_cap_)) return NULL;
    if (!map_put(g->node_map_, n->name, n)) return NULL;
    n->index = g->n_nodes;
    g->nodes[g->n_nodes++] = n;
    return n;
}

mpx_status mpx_dims_product(int rank, const int64_t *dims, int64_t *out, mpx_error *err) {
    int64_t p = 1;
    bool unknown = false;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0) {
            unknown = true;
            continue;
        }
        if (dims[i] != 0 && p > MPX_MAX_ELEMS / dims[i]) {
            *out = -1;
            return mpx_error_set(err, MPX_E_LIMIT,
                                 "dims product exceeds %lld elements (dim %d is %lld)",
                                 (long long)MPX_MAX_ELEMS, i, (long long)dims[i]);
        }
        p *= dims[i];
    }
    *out = unknown ? -1 : p;
    return MPX_OK;
}

/* One dim beyond the limit is refused even when another dim is 0 or unknown
 * (which mpx_dims_product accepts): no tensor mpx can hold has it, and with
 * every dim bounded, sums and products of two dims cannot overflow. */
mpx_status mpx_dims_check(int rank, const int64_t *dims, int64_t *out, mpx_error *err) {
    for (int i = 0; i < rank; i++)
        if (dims[i] > MPX_MAX_ELEMS) {
            *out = -1;
            return mpx_error_set(err, MPX_E_LIMIT, "dim %d is %lld, beyond mpx's limit of %lld elements", i,
                                 (long long)dims[i], (long long)MPX_MAX_ELEMS);
        }
    return mpx_dims_product(rank, dims, out, err);
}

mpx_status mpx_tensor_declare(mpx_tensor *t, mpx_dtype dtype, int rank, const int64_t *dims,
                              const char *const *sym, mpx_error *err) {
    if (rank > MPX_MAX_RANK)
        return mpx_error_set(err, MPX_E_UNSUPPORTED,
                             "tensor \"%s\": rank %d exceeds mpx's limit of %d", t->name, rank,
                             MPX_MAX_RANK);
    t->dtype = dtype;
    t->decl_rank = rank;
    for (int i = 0; i < MPX_MAX_RANK; i++) {
        t->decl_dims[i] = i < rank && dims ? dims[i] : -1;
        t->decl_sym[i] = i < rank && sym ? sym[i] : NULL;
        if (i < rank && t->decl_dims[i] < -1)
            return mpx_error_set(err, MPX_E_INVALID, "tensor \"%s\": dim %d is %lld", t->name,
                                 i, (long long)t->decl_dims[i]);
    }
    return MPX_OK;
}

mpx_status mpx_tensor_alloc_value(mpx_graph *g, mpx_tensor *t, mpx_dtype dtype, int rank,
                                  const int64_t *dims, mpx_error *err) {
    if (rank < 0 || rank > MPX_MAX_RANK)
        return mpx_error_set(err, MPX_E_UNSUPPORTED, "tensor \"%s\": rank %d is not supported",
                             t->name, rank);
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0)
            return mpx_error_set(err, MPX_E_INVALID, "tensor \"%s\": dim %d is negative (%lld)",
                                 t->name, i, (long long)dims[i]);
    int64_t n;
    mpx_error sub;
    if (mpx_dims_check(rank, dims, &n, &sub) != MPX_OK)
        return mpx_error_set(err, MPX_E_LIMIT, "tensor \"%s\": %s", t->name, sub.msg);
    t->dtype = dtype;
    t->rank = rank;
    t->nelem = n;
    for (int i = 0; i < MPX_MAX_RANK; i++) {
        t->dims[i] = i < rank ? dims[i] : -1;
        t->sym[i] = NULL;
    }
    t->f32 = NULL;
    t->i64 = NULL;
    t->f64 = NULL;
    if (dtype == MPX_DT_DOUBLE)
        t->f64 = mpx_arena_calloc(g->arena, (size_t)(n ? n : 1), sizeof(double));
    else if (mpx_dtype_is_float(dtype))
        t->f32 = mpx_arena_calloc(g->arena, (size_t)(n ? n : 1), sizeof(float));
    else if (mpx_dtype_is_int_like(dtype))
        t->i64 = mpx_arena_calloc(g->arena, (size_t)(n ? n : 1), sizeof(int64_t));
    else
        return mpx_error_set(err, MPX_E_UNSUPPORTED, "tensor \"%s\": values of type %s are not supported",
                             t->name, mpx_dtype_name(dtype));
    if (!t->f32 && !t->i64 && !t->f64)
        return mpx_error_set(err, MPX_E_NOMEM, "tensor \"%s\": out of memory for %lld elements",
                             t->name, (long long)n);
    t->flags |= MPX_T_CONSTANT;
    return MPX_OK;
}

/* ---- finalize ------------------------------------------------------------- */

static mpx_status fail(mpx_graph *g, mpx_error *err, mpx_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static mpx_status fail(mpx_graph *g, mpx_error *err, mpx_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    st = mpx_error_vnode(err, st, g->path, NULL, fmt, ap);
    va_end(ap);
    return st;
}

/* A Constant node's attribute becomes its output's value at load, so weights
 * stored as Constants (as paddle2onnx exports do) count as weights everywhere. */
static mpx_status constant_value(mpx_graph *g, mpx_node *n, mpx_error *err) {
    if (n->n_outputs < 1 || !n->outputs[0])
        return fail(g, err, MPX_E_INVALID, "node \"%s\" (Constant) has no output", n->name);
    mpx_tensor *out = n->outputs[0];
    if (n->n_attrs < 1)
        return fail(g, err, MPX_E_INVALID, "node \"%s\" (Constant) has no value attribute", n->name);
    const mpx_attr *a = &n->attrs[0];
    mpx_error sub;
    mpx_status st = MPX_OK;
    int64_t one = 1;
    if (strcmp(a->name, "value") == 0 && a->type == MPX_ATTR_TENSOR && a->t) {
        const mpx_tensor *v = a->t;
        if (v->dtype == MPX_DT_STRING) {
            out->dtype = MPX_DT_STRING;
            return MPX_OK;
        }
        st = mpx_tensor_alloc_value(g, out, v->dtype, v->rank, v->dims, &sub);
        if (st == MPX_OK && out->nelem > 0) {
            if (out->f32 && v->f32) memcpy(out->f32, v->f32, (size_t)out->nelem * sizeof(float));
            else if (out->i64 && v->i64) memcpy(out->i64, v->i64, (size_t)out->nelem * sizeof(int64_t));
            else if (out->f64 && v->f64) memcpy(out->f64, v->f64, (size_t)out->nelem * sizeof(double));
            else
                return fail(g, err, MPX_E_INVALID, "node \"%s\" (Constant): value tensor has no data",
                            n->name);
        }
    } else if (strcmp(a->name, "value_float") == 0 && a->type == MPX_ATTR_FLOAT) {
        st = mpx_tensor_alloc_value(g, out, MPX_DT_FLOAT, 0, &one, &sub);
        if (st == MPX_OK) out->f32[0] = a->f;
    } else if (strcmp(a->name, "value_int") == 0 && a->type == MPX_ATTR_INT) {
        st = mpx_tensor_alloc_value(g, out, MPX_DT_INT64, 0, &one, &sub);
        if (st == MPX_OK) out->i64[0] = a->i;
    } else if (strcmp(a->name, "value_floats") == 0 && a->type == MPX_ATTR_FLOATS) {
        int64_t d = a->n;
        st = mpx_tensor_alloc_value(g, out, MPX_DT_FLOAT, 1, &d, &sub);
        if (st == MPX_OK && d) memcpy(out->f32, a->floats, (size_t)d * sizeof(float));
    } else if (strcmp(a->name, "value_ints") == 0 && a->type == MPX_ATTR_INTS) {
        int64_t d = a->n;
        st = mpx_tensor_alloc_value(g, out, MPX_DT_INT64, 1, &d, &sub);
        if (st == MPX_OK && d) memcpy(out->i64, a->ints, (size_t)d * sizeof(int64_t));
    } else if (strncmp(a->name, "value_string", 12) == 0) {
        out->dtype = MPX_DT_STRING;
        return MPX_OK;
    } else {
        return fail(g, err, MPX_E_UNSUPPORTED,
                    "node \"%s\" (Constant): attribute \"%s\" is not supported", n->name, a->name);
    }
    if (st != MPX_OK) return fail(g, err, st, "node \"%s\" (Constant): %s", n->name, sub.msg);
    return MPX_OK;
}

/* Min-heap of node indices keyed by file order: Kahn's algorithm that keeps
 * the file's order wherever the dependencies allow, so listings stay stable. */
typedef struct {
    int *a;
    int n;
} heap;

static void heap_push(heap *h, const mpx_node *const *nodes, int v) {
    int i = h->n++;
    h->a[i] = v;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (nodes[h->a[p]]->file_order <= nodes[h->a[i]]->file_order) break;
        int t = h->a[p];
        h->a[p] = h->a[i];
        h->a[i] = t;
        i = p;
    }
}

static int heap_pop(heap *h, const mpx_node *const *nodes) {
    int top = h->a[0];
    h->a[0] = h->a[--h->n];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && nodes[h->a[l]]->file_order < nodes[h->a[m]]->file_order) m = l;
        if (r < h->n && nodes[h->a[r]]->file_order < nodes[h->a[m]]->file_order) m = r;
        if (m == i) break;
        int t = h->a[m];
        h->a[m] = h->a[i];
        h->a[i] = t;
        i = m;
    }
    return top;
}

/* Describe one cycle among the nodes Kahn's algorithm could not place:
 * follow producers backwards until a node repeats. */
static void describe_cycle(const mpx_graph *g, const bool *placed, char *buf, size_t n) {
    int start = -1;
    for (int i = 0; i < g->n_nodes; i++)
        if (!placed[i]) { start = i; break; }
    buf[0] = '\0';
    if (start < 0) return;
    int *seen = calloc((size_t)g->n_nodes, sizeof *seen);
    int *path = calloc((size_t)g->n_nodes + 1, sizeof *path);
    if (!seen || !path) {
        snprintf(buf, n, "\"%s\"", g->nodes[start]->name);
        free(seen);
        free(path);
        return;
    }
    int len = 0, cur = start;
    while (!seen[cur]) {
        seen[cur] = len + 1;
        path[len++] = cur;
        const mpx_node *nd = g->nodes[cur];
        int next = -1;
        for (int i = 0; i < nd->n_inputs && next < 0; i++) {
            const mpx_tensor *t = nd->inputs[i];
            if (t && t->producer && !placed[t->producer->index]) next = t->producer->index;
        }
        if (next < 0) break;
        cur = next;
    }
    /* path[seen[cur]-1 .. len-1] is the cycle, listed against data flow. */
    size_t used = 0;
    int from = seen[cur] ? seen[cur] - 1 : 0;
    for (int i = len - 1; i >= from && used < n; i--) {
        int w = snprintf(buf + used, n - used, "\"%s\" -> ", g->nodes[path[i]]->name);
        if (w < 0) break;
        used += (size_t)w;
    }
    if (used < n) snprintf(buf + used, n - used, "\"%s\"", g->nodes[path[len - 1]]->name);
    free(seen);
    free(path);
}

/* The length of the UTF-8 sequence at p with no control character (C0,
 * DEL, C1), or 0. */
static int name_char(const unsigned char *p) {
    if (p[0] < 0x20 || p[0] == 0x7f) return 0;
    if (p[0] < 0x80) return 1;
    const int n = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 && p[0] < 0xe0 ? 2 : 0;
    for (int k = 1; k < n; k++)
        if ((p[k] & 0xc0) != 0x80) return 0;
    if (n == 2 && p[0] == 0xc2 && p[1] < 0xa0) return 0; /* C1 controls */
    if (n == 3 && ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0))) return 0; /* overlong, surrogate */
    if (n == 4 && ((p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))) return 0;
    return n;
}

/* Names go into JSON, SVG and HTML (which must be UTF-8) and onto the
 * terminal (where an escape sequence would act): a name that is not UTF-8
 * or holds a control character is refused at load, shown escaped. */
static mpx_status check_name(mpx_graph *g, const char *what, const char *name, mpx_error *err) {
    const unsigned char *p = (const unsigned char *)name;
    size_t at = 0;
    int n;
    while (p[at] && (n = name_char(p + at)) > 0) at += (size_t)n;
    if (!p[at]) return MPX_OK;
    char shown[160];
    size_t o = 0;
    for (size_t k = 0; p[k] && o + 5 < sizeof shown; k++)
        o += (size_t)(p[k] >= 0x20 && p[k] < 0x7f ? snprintf(shown + o, sizeof shown - o, "%c", p[k])
                                                   : snprintf(shown + o, sizeof shown - o, "\\x%02x", p[k]));
    return fail(g, err, MPX_E_INVALID, "%s \"%s\" holds %s at byte %zu: rename it in the model", what, shown,
                p[at] < 0x20 || p[at] == 0x7f ? "a control character" : "bytes that are not UTF-8 text", at + 1);
}

mpx_status mpx_graph_finalize(mpx_graph *g, mpx_error *err) {
    mpx_status st = MPX_OK;
    for (int i = 0; i < g->n_nodes; i++)
        if ((st = check_name(g, "node name", g->nodes[i]->name, err)) ||
            (st = check_name(g, "op type", g->nodes[i]->op_type, err)) ||
            (g->nodes[i]->domain && (st = check_name(g, "op domain", g->nodes[i]->domain, err))))
            return st;
    for (int i = 0; i < g->n_tensors; i++)
        if ((st = check_name(g, "tensor name", g->tensors[i]->name, err))) return st;
    /* Ops and producers. */
    for (int i = 0; i < g->n_nodes; i++) {
        mpx_node *n = g->nodes[i];
        n->op = mpx_op_from_domain_name(n->domain, n->op_type);
        for (int j = 0; j < n->n_outputs; j++) {
            mpx_tensor *t = n->outputs[j];
            if (!t) continue;
            if (t->producer)
                return fail(g, err, MPX_E_INVALID,
                            "tensor \"%s\" is written by two nodes: \"%s\" (%s) and \"%s\" (%s)",
                            t->name, t->producer->name, t->producer->op_type, n->name, n->op_type);
            if (t->flags & MPX_T_INITIALIZER)
                return fail(g, err, MPX_E_INVALID,
                            "node \"%s\" (%s) writes tensor \"%s\", which is an initializer",
                            n->name, n->op_type, t->name);
            if (t->flags & MPX_T_INPUT)
                return fail(g, err, MPX_E_INVALID,
                            "node \"%s\" (%s) writes tensor \"%s\", which is a model input",
                            n->name, n->op_type, t->name);
            t->producer = n;
        }
    }
    /* Every read has a source. */
    for (int i = 0; i < g->n_nodes; i++) {
        mpx_node *n = g->nodes[i];
        for (int j = 0; j < n->n_inputs; j++) {
            mpx_tensor *t = n->inputs[j];
            if (!t || t->producer || (t->flags & (MPX_T_INITIALIZER | MPX_T_INPUT | MPX_T_CONSTANT)))
                continue;
            return fail(g, err, MPX_E_INVALID,
                        "node \"%s\" (%s) reads tensor \"%s\" (input %d), which no node, "
                        "initializer or model input produces",
                        n->name, n->op_type, t->name, j);
        }
        for (int j = 0; j < n->n_outputs; j++)
            if (n->outputs[j]) n->outputs[j]->consumers = NULL;
    }
    /* Consumer lists: count, then fill. */
    int *ccount = calloc((size_t)g->n_tensors + 1, sizeof *ccount);
    if (!ccount) return fail(g, err, MPX_E_NOMEM, "out of memory");
    for (int i = 0; i < g->n_nodes; i++)
        for (int j = 0; j < g->nodes[i]->n_inputs; j++)
            if (g->nodes[i]->inputs[j]) ccount[g->nodes[i]->inputs[j]->index]++;
    for (int t = 0; t < g->n_tensors; t++) {
        g->tensors[t]->n_consumers = 0;
        g->tensors[t]->consumers =
            mpx_arena_calloc(g->arena, (size_t)(ccount[t] ? ccount[t] : 1), sizeof(mpx_node *));
        if (!g->tensors[t]->consumers) {
            free(ccount);
            return fail(g, err, MPX_E_NOMEM, "out of memory");
        }
    }
    free(ccount);
    for (int i = 0; i < g->n_nodes; i++) {
        mpx_node *n = g->nodes[i];
        for (int j = 0; j < n->n_inputs; j++) {
            mpx_tensor *t = n->inputs[j];
            if (!t) continue;
            /* A node reading one tensor twice (Mul x x) is one consumer. A
             * node's entries are appended together, so only the last one can
             * be it (scanning them all was quadratic in the fan-out). */
            if (!t->n_consumers || t->consumers[t->n_consumers - 1] != n) t->consumers[t->n_consumers++] = n;
        }
    }
    /* Topological order. */
    int nn = g->n_nodes;
    int *indeg = calloc((size_t)nn + 1, sizeof *indeg), *cond_wait = NULL, *cond_first = NULL;
    heap h = {calloc((size_t)nn + 1, sizeof(int)), 0};
    bool *placed = calloc((size_t)nn + 1, sizeof *placed);
    mpx_node **order = mpx_arena_calloc(g->arena, (size_t)(nn ? nn : 1), sizeof *order);
    if (!indeg || !h.a || !placed || !order) {
        st = fail(g, err, MPX_E_NOMEM, "out of memory");
        goto done;
    }
    /* One edge per (produced tensor, consumer) pair: consumer lists hold
     * each reading node once, so a node with many inputs is not rescanned
     * for every producer placed (which was quadratic in its width). */
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t]->producer)
            for (int k = 0; k < g->tensors[t]->n_consumers; k++) indeg[g->tensors[t]->consumers[k]->index]++;
    /* A node of an If's branch also waits for that If's condition: whether
     * it runs is decided by the condition's value (CSR lists: the nodes
     * waiting on each producer). */
    cond_wait = calloc((size_t)nn + 1, sizeof *cond_wait);
    cond_first = calloc((size_t)nn + 2, sizeof *cond_first);
    if (!cond_wait || !cond_first) {
        st = fail(g, err, MPX_E_NOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < nn; i++) {
        const mpx_node *gd = g->nodes[i]->guard;
        const mpx_tensor *ct = gd && gd->n_inputs ? gd->inputs[0] : NULL;
        if (ct && ct->producer) cond_first[ct->producer->index + 1]++, indeg[i]++;
    }
    for (int i = 0; i < nn; i++) cond_first[i + 1] += cond_first[i];
    {
        int *fill = calloc((size_t)nn + 1, sizeof *fill);
        if (!fill) {
            st = fail(g, err, MPX_E_NOMEM, "out of memory");
            goto done;
        }
        for (int i = 0; i < nn; i++) {
            const mpx_node *gd = g->nodes[i]->guard;
            const mpx_tensor *ct = gd && gd->n_inputs ? gd->inputs[0] : NULL;
            if (ct && ct->producer) {
                int p = ct->producer->index;
                cond_wait[cond_first[p] + fill[p]++] = i;
            }
        }
        free(fill);
    }
    for (int i = 0; i < nn; i++)
        if (!indeg[i]) heap_push(&h, (const mpx_node *const *)g->nodes, i);
    int placed_n = 0;
    while (h.n) {
        int v = heap_pop(&h, (const mpx_node *const *)g->nodes);
        placed[v] = true;
        order[placed_n++] = g->nodes[v];
        const mpx_node *n = g->nodes[v];
        for (int j = 0; j < n->n_outputs; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (!t) continue;
            for (int k = 0; k < t->n_consumers; k++)
                if (--indeg[t->consumers[k]->index] == 0)
                    heap_push(&h, (const mpx_node *const *)g->nodes, t->consumers[k]->index);
        }
        for (int k = cond_first[v]; k < cond_first[v + 1]; k++)
            if (--indeg[cond_wait[k]] == 0) heap_push(&h, (const mpx_node *const *)g->nodes, cond_wait[k]);
    }
    if (placed_n < nn) {
        char cyc[700];
        describe_cycle(g, placed, cyc, sizeof cyc);
        st = fail(g, err, MPX_E_INVALID, "the graph has a cycle: %s", cyc);
        goto done;
    }
    for (int i = 0; i < nn; i++) {
        order[i]->index = i;
        g->nodes[i] = order[i];
    }
    /* Constant values. */
    for (int i = 0; i < nn; i++) {
        mpx_node *n = g->nodes[i];
        if (strcmp(n->op_type, "Constant") == 0 && n->op == MPX_OP_Constant) {
            st = constant_value(g, n, err);
            if (st != MPX_OK) goto done;
        }
    }
    /* Model inputs and outputs, unless the loader listed them itself. An input
     * that is also an initializer is a weight with a default (old exporters
     * list weights as inputs): it stays a weight. */
    for (int t = 0; t < g->n_tensors; t++) {
        mpx_tensor *x = g->tensors[t];
        if ((x->flags & MPX_T_INPUT) && (x->flags & MPX_T_INITIALIZER)) x->flags &= ~(uint32_t)MPX_T_INPUT;
    }
    if (g->n_inputs == 0 || g->n_outputs == 0) {
        int ni = 0, no = 0;
        for (int t = 0; t < g->n_tensors; t++) {
            ni += (g->tensors[t]->flags & MPX_T_INPUT) != 0;
            no += (g->tensors[t]->flags & MPX_T_OUTPUT) != 0;
        }
        if (g->n_inputs == 0) {
            g->inputs = mpx_arena_calloc(g->arena, (size_t)(ni ? ni : 1), sizeof *g->inputs);
            if (!g->inputs) { st = fail(g, err, MPX_E_NOMEM, "out of memory"); goto done; }
            for (int t = 0; t < g->n_tensors; t++)
                if (g->tensors[t]->flags & MPX_T_INPUT) g->inputs[g->n_inputs++] = g->tensors[t];
        }
        if (g->n_outputs == 0) {
            g->outputs = mpx_arena_calloc(g->arena, (size_t)(no ? no : 1), sizeof *g->outputs);
            if (!g->outputs) { st = fail(g, err, MPX_E_NOMEM, "out of memory"); goto done; }
            for (int t = 0; t < g->n_tensors; t++)
                if (g->tensors[t]->flags & MPX_T_OUTPUT) g->outputs[g->n_outputs++] = g->tensors[t];
        }
    }
    for (int i = 0; i < g->n_outputs; i++) {
        const mpx_tensor *t = g->outputs[i];
        if (!t->producer && !(t->flags & (MPX_T_INPUT | MPX_T_INITIALIZER | MPX_T_CONSTANT))) {
            st = fail(g, err, MPX_E_INVALID,
                      "model output \"%s\" is not produced by any node, input or initializer",
                      t->name);
            goto done;
        }
    }
    /* Before binding, the current shape is the declared one. */
    for (int t = 0; t < g->n_tensors; t++) {
        mpx_tensor *x = g->tensors[t];
        if ((x->flags & MPX_T_CONSTANT) || x->decl_rank < 0) continue;
        x->rank = x->decl_rank;
        for (int d = 0; d < MPX_MAX_RANK; d++) {
            x->dims[d] = x->decl_dims[d];
            x->sym[d] = x->decl_sym[d];
        }
        mpx_error sub;
        if (mpx_dims_check(x->rank, x->dims, &x->nelem, &sub) != MPX_OK) {
            st = fail(g, err, MPX_E_LIMIT, "tensor \"%s\": %s", x->name, sub.msg);
            goto done;
        }
    }
done:
    free(indeg);
    free(cond_wait);
    free(cond_first);
    free(h.a);
    free(placed);
    return st;
}

const char *mpx_count_str(int64_t v, char *buf, size_t n) {
    if (v < 0) snprintf(buf, n, "?");
    else if (v >= 1000000000) snprintf(buf, n, "%.2fG", (double)v / 1e9);
    else if (v >= 1000000) snprintf(buf, n, "%.2fM", (double)v / 1e6);
    else if (v >= 10000) snprintf(buf, n, "%.1fK", (double)v / 1e3);
    else snprintf(buf, n, "%lld", (long long)v);
    return buf;
}

int mpx_node_if_pick(const mpx_node *n) {
    if (!n || n->op != MPX_OP_If || n->n_inputs < 1) return -1;
    const mpx_tensor *c = n->inputs[0];
    if (!c || c->nelem < 1) return -1;
    if (c->i64) return c->i64[0] ? 0 : 1;
    if (c->f32) return c->f32[0] != 0.0f ? 0 : 1;
    if (c->f64) return c->f64[0] != 0.0 ? 0 : 1;
    return -1;
}

bool mpx_node_inactive(const mpx_node *n) {
    for (int depth = 0; n && n->guard && depth <= MPX_MAX_SUBGRAPH_DEPTH; depth++, n = n->guard) {
        int pick = mpx_node_if_pick(n->guard);
        if (pick >= 0 && pick != n->branch) return true;
    }
    return false;
}

int mpx_node_weight_input(const mpx_node *n) {
    return n && (n->op == MPX_OP_QLinearConv || n->op == MPX_OP_QLinearMatMul) ? 3 : 1;
}

int mpx_node_bias_input(const mpx_node *n) {
    if (!n) return 2;
    return n->op == MPX_OP_QLinearConv    ? 8
           : n->op == MPX_OP_DeformConv   ? 3
           : n->op == MPX_OP_ConvInteger || n->op == MPX_OP_MatMulInteger ? -1
                                          : 2;
}

mpx_status mpx_graph_adopt(mpx_graph *g, mpx_graph *child) {
    if (g->n_children_ == g->children_cap_) {
        int cap = g->children_cap_ ? 2 * g->children_cap_ : 4;
        mpx_graph **n = realloc(g->children_, (size_t)cap * sizeof *n);
        if (!n) {
            mpx_graph_free(child);
            return MPX_E_NOMEM;
        }
        g->children_ = n, g->children_cap_ = cap;
    }
    g->children_[g->n_children_++] = child;
    return MPX_OK;
}

mpx_status mpx_graph_note_file(mpx_graph *g, const char *path) {
    for (int i = 0; i < g->n_files_; i++)
        if (strcmp(g->files_[i], path) == 0) return MPX_OK;
    if (g->n_files_ == g->files_cap_) {
        int cap = g->files_cap_ ? 2 * g->files_cap_ : 4;
        const char **n = realloc(g->files_, (size_t)cap * sizeof *n);
        if (!n) return MPX_E_NOMEM;
        g->files_ = n, g->files_cap_ = cap;
    }
    const char *copy = mpx_arena_strdup(g->arena, path);
    if (!copy) return MPX_E_NOMEM;
    g->files_[g->n_files_++] = copy;
    return MPX_OK;
}

void mpx_graph_each_file(const mpx_graph *g, void (*visit)(void *ctx, const char *path), void *ctx) {
    for (int i = 0; i < g->n_files_; i++) visit(ctx, g->files_[i]);
    for (int i = 0; i < g->n_children_; i++) mpx_graph_each_file(g->children_[i], visit, ctx);
}
