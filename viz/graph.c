/* graph.c - the cast graph: a plan drawn as a Graphviz graph (libcgraph),
 * written as DOT (agwrite into memory) or laid out and rendered to SVG
 * in-process (libgvc), with no `dot` program involved.
 *
 * What is drawn (DESIGN section 3, Casts):
 *  - each op node filled by its colour, labelled with op type and name; a
 *    double border when a rule decided its colour; "W->fp16" when it reads
 *    weights converted offline; a dashed border when precision does not apply
 *    (no float values);
 *  - each runtime cast of the plan as a hexagon of its own colour labelled
 *    with the conversion, between the producer and exactly the consumers the
 *    plan lists for it;
 *  - model inputs and outputs as house shapes;
 *  - each edge labelled with the format its values travel in (and the shape);
 *  - with an overlay, each node's border coloured and widened by the worst
 *    rel_l2 of its outputs on a log scale, overflow/underflow spelled out.
 * Constant nodes and nodes folded at load are weights, not steps of the
 * computation: they are left out unless opts.all (PP-OCRv4 rec has 325
 * Constant nodes among its 765).
 *
 * Determinism: cgraph orders subgraphs by object id, and its default id
 * discipline makes a named object's id the address of its interned name, so
 * the order of clusters in agwrite's output would follow malloc. The id
 * discipline of gv.c gives every object the next number of a counter instead
 * (cgraph keeps the names in its internal map), so the DOT text depends only
 * on the order objects are made in, which is graph order. The price: agclose
 * of Graphviz 2.42 does not free the internal map's entries of the graph and
 * its clusters (48 bytes each per picture; tests/viz/lsan.supp). */
#include "viz_gv.h"
#include "viz_internal.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the view: what is drawn ------------------------------------------------ */

enum { V_NONE = 0, V_OP, V_CHAIN, V_REGION, V_STUB, V_SCOPE };

/* Members of a chain or region are linked through next[] from their head. */
#define V_GROUP(k) ((k) == V_CHAIN || (k) == V_REGION || (k) == V_SCOPE)

typedef struct endpoint {
    Agnode_t *an;
    bool full;   /* an op in view, a cast, an input or output (not a stub) */
} endpoint;

typedef struct view {
    const mpx_plan *p;
    const mpx_graph *g;
    const mpx_viz_opts *o;
    int center;          /* --around node, -1 */
    bool *hidden;        /* [n_nodes] Constant/folded, not drawn */
    int *dist;           /* [n_nodes] --around distance, -1 unreached (0 everywhere without it) */
    int *head;           /* [n_nodes] the node drawing it (chain head, itself), -1 none */
    int *next;           /* [n_nodes] next chain member, -1 */
    char *kind;          /* [n_nodes] of heads: V_OP, V_CHAIN, V_REGION, V_STUB */
    int *cast_of;        /* [n_tensors] first cast index of the tensor, -1 */
    int *on_path;        /* [n_nodes] position on the path to the cause (0: the centre), -1; or NULL */
    int n_path;
    vz_node_err *err;    /* [n_nodes] overlay figures or NULL */
    Agraph_t *G;
    Agnode_t **an;       /* [n_nodes] by head */
    Agnode_t **acast;    /* [n_casts] */
    Agnode_t **ain, **aout; /* [n_inputs], [n_outputs] */
    Agnode_t **aw;       /* [n_tensors] weight nodes */
    int *stamp;          /* [n_nodes + n_casts + n_outputs] edge dedupe per tensor */
    mpx_viz_stats st;
    vz_buf tmp;
    /* folded by scopes: the tree of the drawn nodes, its figures, the scope
     * drawn open (and which scopes are open: it and its ancestors), the
     * scope of each V_SCOPE head's box */
    mpx_scopes *sc;
    mpx_scope_figures *fig;
    int open;
    bool *opened;
    int *unit;
} view;

static bool is_data_tensor(const view *v, const mpx_tensor *t) {
    if (!t) return false;
    if (!v->p->tensors[t->index].constant) return true;
    /* a constant drawn as an edge: produced by a node that is drawn (--all) */
    return t->producer && !v->hidden[t->producer->index];
}

static bool cast_serves(const mpx_plan_cast *k, int c);

/* The first letter of a drawn node's id (mpx_viz.h lists them). */
static char id_letter(char kind) {
    return kind == V_CHAIN ? 'c' : kind == V_REGION ? 'r' : kind == V_STUB ? 's' : kind == V_SCOPE ? 'p' : 'n';
}

/* The id of the node drawn for head h: its letter and the head's index, a
 * scope's box the scope's. */
static void head_id(const view *v, int h, char *buf, size_t n) {
    snprintf(buf, n, "%c%d", id_letter(v->kind[h]), v->kind[h] == V_SCOPE ? v->unit[h] : h);
}

static bool is_weight_input(const view *v, const mpx_tensor *t) {
    return t && !is_data_tensor(v, t) && mpx_dtype_is_float(t->dtype);
}

static void free_view(view *v) {
    free(v->hidden);
    free(v->dist);
    free(v->head);
    free(v->next);
    free(v->kind);
    free(v->cast_of);
    free(v->on_path);
    free(v->err);
    free(v->an);
    free(v->acast);
    free(v->ain);
    free(v->aout);
    free(v->aw);
    free(v->stamp);
    mpx_scopes_free(v->sc);
    free(v->fig);
    free(v->opened);
    free(v->unit);
    vz_buf_free(&v->tmp);
    if (v->G) agclose(v->G);
    v->G = NULL;
}

/* Breadth-first distances from the center over data edges, both directions. */
static mpx_status around(view *v, mpx_error *err) {
    const mpx_graph *g = v->g;
    int *queue = malloc((size_t)g->n_nodes * sizeof *queue);
    if (!queue) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int i = 0; i < g->n_nodes; i++) v->dist[i] = -1;
    int qh = 0, qt = 0;
    v->dist[v->center] = 0;
    queue[qt++] = v->center;
    int limit = v->o->depth + 1; /* one ring further: the stubs */
    while (qh < qt) {
        int n = queue[qh++];
        if (v->dist[n] >= limit) continue;
        const mpx_node *nd = g->nodes[n];
        for (int side = 0; side < 2; side++) {
            int cnt = side ? nd->n_outputs : nd->n_inputs;
            for (int k = 0; k < cnt; k++) {
                const mpx_tensor *t = side ? nd->outputs[k] : nd->inputs[k];
                if (!is_data_tensor(v, t)) continue;
                int nc = side ? t->n_consumers : 1;
                for (int c = 0; c < nc; c++) {
                    const mpx_node *m = side ? t->consumers[c] : t->producer;
                    if (!m || v->hidden[m->index] || v->dist[m->index] >= 0) continue;
                    v->dist[m->index] = v->dist[n] + 1;
                    queue[qt++] = m->index;
                }
            }
        }
    }
    free(queue);
    return MPX_OK;
}

static bool in_view(const view *v, int n) {
    return !v->hidden[n] && v->dist[n] >= 0 && v->dist[n] <= (v->o->around ? v->o->depth : 0);
}

/* A node name's non-empty '/'-separated components (at most max). */
static int name_parts(const char *name, const char **comp, size_t *len, int max) {
    int nc = 0;
    for (const char *p = name; *p && nc < max;) {
        while (*p == '/') p++;
        if (!*p) break;
        size_t l = strcspn(p, "/");
        comp[nc] = p;
        len[nc++] = l;
        p += l;
    }
    return nc;
}

/* Whether two names fall in the same cluster (the rule of cluster_for: the
 * first `depth` components, never the last one, which names the node). */
static bool same_cluster(const char *a, const char *b, int depth) {
    const char *ca[64], *cb[64];
    size_t la[64], lb[64];
    int na = name_parts(a, ca, la, 64) - 1, nb = name_parts(b, cb, lb, 64) - 1;
    if (na > depth) na = depth;
    if (nb > depth) nb = depth;
    if (na != nb) return false;
    for (int i = 0; i < na; i++)
        if (la[i] != lb[i] || strncmp(ca[i], cb[i], la[i]) != 0) return false;
    return true;
}

/* The one drawn data consumer of node a's single output (a -> b), or -1. */
static int chain_successor(const view *v, int a) {
    const mpx_node *na = v->g->nodes[a];
    const mpx_tensor *out = NULL;
    for (int k = 0; k < na->n_outputs; k++) {
        const mpx_tensor *t = na->outputs[k];
        if (!t || t->n_consumers == 0) continue;
        if (out) return -1; /* two used outputs */
        out = t;
    }
    if (!out || (out->flags & MPX_T_OUTPUT) || v->cast_of[out->index] >= 0) return -1;
    int b = -1;
    for (int c = 0; c < out->n_consumers; c++) {
        int m = out->consumers[c]->index;
        if (v->hidden[m]) continue;
        if (b >= 0 && b != m) return -1;
        b = m;
    }
    if (b < 0 || !in_view(v, b) || b == v->center) return -1;
    /* b reads no other data than a's output */
    const mpx_node *nb = v->g->nodes[b];
    for (int k = 0; k < nb->n_inputs; k++)
        if (is_data_tensor(v, nb->inputs[k]) && nb->inputs[k] != out) return -1;
    const mpx_plan_node *pa = &v->p->nodes[a], *pb = &v->p->nodes[b];
    if (pa->is_float != pb->is_float || pa->compute != pb->compute || pa->output != pb->output) return -1;
    /* with clusters, a chain stays inside one cluster (an If's branch is one) */
    if (v->o->cluster > 0 && !same_cluster(v->g->nodes[a]->name, v->g->nodes[b]->name, v->o->cluster)) return -1;
    if (na->guard != nb->guard || na->branch != nb->branch) return -1;
    return b;
}

/* ---- folding into regions: the model-level view ----------------------------- */

/* Whether a rule picks nodes by name (name:<glob>): a decision about those
 * nodes (a per-node override, search's fp32 set) that the model-level view
 * must show, not fold into a box. */
static bool rule_names_nodes(const char *text) {
    if (!text) return false;
    const char *n = strstr(text, "name:"), *w = strstr(text, " when "), *c = strchr(text, '#');
    return n && (!w || n < w) && (!c || n < c);
}

static bool foldable(const view *v, int i) {
    if (v->kind[i] != V_OP || i == v->center) return false;
    int r = v->p->nodes[i].colour_rule;
    return !(r >= 0 && v->o->rules && rule_names_nodes(mpx_rules_text(v->o->rules, r)));
}

/* Nodes that may share a box: the formats a reviewer reads off the box. */
static bool same_formats(const view *v, int a, int b) {
    /* folded by scopes, the nodes outside the boxes of one open scope fold
     * whatever their formats: the box lists them */
    if (v->sc) return v->sc->of_node[a] == v->sc->of_node[b];
    const mpx_plan_node *pa = &v->p->nodes[a], *pb = &v->p->nodes[b];
    const mpx_node *na = v->g->nodes[a], *nb = v->g->nodes[b];
    if (pa->is_float != pb->is_float || pa->compute != pb->compute || pa->output != pb->output) return false;
    if (na->guard != nb->guard || na->branch != nb->branch) return false;
    return v->o->cluster <= 0 || same_cluster(na->name, nb->name, v->o->cluster);
}

/* Whether a runtime cast sits on tensor t on its way to node c. */
static bool cast_between(const view *v, const mpx_tensor *t, int c) {
    const mpx_plan *p = v->p;
    if (v->sc) return false; /* folded by scopes, casts are drawn on the edges between boxes */
    for (int j = v->cast_of[t->index]; j >= 0 && j < p->n_casts && p->casts[j].tensor == t->index; j++)
        if (cast_serves(&p->casts[j], c)) return true;
    return false;
}

typedef struct fold {
    int *root;      /* union-find parent */
    int *size;      /* of roots: members */
    int *last;      /* of roots: largest member index */
    int *member;    /* of roots: first of the member list, linked by link[] */
    int *link;
    int *seen, stamp;
    int *stack;
} fold;

static int fold_find(fold *f, int i) {
    while (f->root[i] != i) i = f->root[i] = f->root[f->root[i]];
    return i;
}

/* Whether merging regions a and b (an edge runs from a to b) keeps both
 * convex, so the folded picture stays acyclic and every box is a piece of
 * the computation with inputs on one side and outputs on the other: no path
 * may leave a and reach b through a node outside both. Graph order is
 * topological, so the search stops past b's last member. */
static bool fold_convex(const view *v, fold *f, int a, int b) {
    const mpx_graph *g = v->g;
    int sp = 0, lim = f->last[b];
    f->stamp++;
    for (int m = f->member[a]; m >= 0; m = f->link[m]) {
        const mpx_node *nd = g->nodes[m];
        for (int k = 0; k < nd->n_outputs; k++) {
            const mpx_tensor *t = nd->outputs[k];
            for (int c = 0; t && c < t->n_consumers; c++) {
                int x = t->consumers[c]->index, rx = fold_find(f, x);
                if (rx == a || rx == b || x > lim || f->seen[x] == f->stamp) continue;
                f->seen[x] = f->stamp;
                f->stack[sp++] = x;
            }
        }
    }
    while (sp > 0) {
        const mpx_node *nd = g->nodes[f->stack[--sp]];
        for (int k = 0; k < nd->n_outputs; k++) {
            const mpx_tensor *t = nd->outputs[k];
            for (int c = 0; t && c < t->n_consumers; c++) {
                int x = t->consumers[c]->index;
                if (x > lim || f->seen[x] == f->stamp) continue;
                if (fold_find(f, x) == b) return false;
                f->seen[x] = f->stamp;
                f->stack[sp++] = x;
            }
        }
    }
    return true;
}

/* Regions: convex groups of connected nodes in the same formats with no
 * cast between them, grown along the data edges in graph order up to `cap`
 * members, so a long stretch of the model becomes a few boxes of similar
 * size (a cap of all nodes would draw most exported models as one box).
 * Each region of two or more is drawn as one node, r<head>. */
static mpx_status fold_regions(view *v, int cap, mpx_error *err) {
    const mpx_graph *g = v->g;
    size_t nn = (size_t)g->n_nodes + 1;
    fold f = {0};
    f.root = malloc(nn * sizeof *f.root);
    f.size = malloc(nn * sizeof *f.size);
    f.last = malloc(nn * sizeof *f.last);
    f.member = malloc(nn * sizeof *f.member);
    f.link = malloc(nn * sizeof *f.link);
    f.seen = calloc(nn, sizeof *f.seen);
    f.stack = malloc(nn * sizeof *f.stack);
    mpx_status st = MPX_OK;
    if (!f.root || !f.size || !f.last || !f.member || !f.link || !f.seen || !f.stack) {
        st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        f.root[i] = f.member[i] = f.last[i] = i;
        f.size[i] = 1;
        f.link[i] = -1;
    }
    for (int b = 0; b < g->n_nodes; b++) {
        if (!foldable(v, b)) continue;
        const mpx_node *nb = g->nodes[b];
        for (int k = 0; k < nb->n_inputs; k++) {
            const mpx_tensor *t = nb->inputs[k];
            if (!is_data_tensor(v, t) || !t->producer) continue;
            int a = t->producer->index;
            if (!foldable(v, a) || !same_formats(v, a, b) || cast_between(v, t, b)) continue;
            int ra = fold_find(&f, a), rb = fold_find(&f, b);
            if (ra == rb || f.size[ra] + f.size[rb] > cap || !fold_convex(v, &f, ra, rb)) continue;
            /* the smaller index roots the union; member lists are joined */
            int lo = ra < rb ? ra : rb, hi = ra < rb ? rb : ra;
            f.root[hi] = lo;
            f.size[lo] += f.size[hi];
            if (f.last[hi] > f.last[lo]) f.last[lo] = f.last[hi];
            int tail = f.member[lo];
            while (f.link[tail] >= 0) tail = f.link[tail];
            f.link[tail] = f.member[hi];
        }
    }
    /* members in graph order behind the head (the smallest index) */
    for (int i = 0; i < g->n_nodes; i++) f.last[i] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        if (!foldable(v, i)) continue;
        int r = fold_find(&f, i);
        if (f.size[r] < 2) continue;
        if (f.last[r] < 0) {
            v->kind[i] = V_REGION;
            v->st.chains++;
        } else {
            v->next[f.last[r]] = i;
            v->head[i] = r;
            v->kind[i] = V_NONE;
        }
        f.last[r] = i;
    }
out:
    free(f.root);
    free(f.size);
    free(f.last);
    free(f.member);
    free(f.link);
    free(f.seen);
    free(f.stack);
    return st;
}

/* Folding by scopes: every drawn node inside a scope that is not open is
 * drawn as that scope's box (the outermost such scope: a child of an open
 * one); the nodes of open scopes outside any box fold into regions. Leaves
 * v->sc NULL when fold_by is AUTO and the names carry no useful scopes (the
 * caller folds by regions then). */
static mpx_status fold_scopes(view *v, mpx_error *err) {
    const mpx_graph *g = v->g;
    size_t nn = (size_t)g->n_nodes + 1;
    bool *skip = malloc(nn * sizeof *skip);
    if (!skip) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int i = 0; i < g->n_nodes; i++) skip[i] = v->kind[i] != V_OP;
    mpx_status st = mpx_graph_scopes(g, skip, &v->sc, err);
    free(skip);
    if (st) return st;
    if (v->o->fold_by != MPX_VIZ_FOLD_SCOPES && !mpx_scopes_useful(v->sc)) {
        mpx_scopes_free(v->sc);
        v->sc = NULL;
        return MPX_OK;
    }
    const mpx_scopes *sc = v->sc;
    v->open = v->o->open_scope > 0 && v->o->open_scope < sc->n ? v->o->open_scope : sc->top;
    if (!mpx_scope_within(sc, v->open, sc->top)) v->open = sc->top;
    v->opened = calloc((size_t)sc->n + 1, sizeof *v->opened);
    v->unit = malloc(nn * sizeof *v->unit);
    int *unit_head = malloc(((size_t)sc->n + 1) * sizeof *unit_head);
    int *unit_last = malloc(((size_t)sc->n + 1) * sizeof *unit_last);
    if (!v->opened || !v->unit || !unit_head || !unit_last) {
        free(unit_head);
        free(unit_last);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    for (int s = v->open; s >= 0; s = sc->s[s].parent) v->opened[s] = true;
    for (int s = 0; s < sc->n; s++) unit_head[s] = unit_last[s] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        v->unit[i] = -1;
        int s = sc->of_node[i];
        /* a scope opened below the top is drawn alone, its items in its
         * frame: the way back is the page's path above the view */
        if (v->kind[i] == V_OP && s >= 0 && v->open != sc->top && !mpx_scope_within(sc, s, v->open)) {
            v->kind[i] = V_NONE;
            v->head[i] = -1;
            v->st.op_nodes--;
            continue;
        }
        if (v->kind[i] != V_OP || s < 0 || v->opened[s] || i == v->center) continue;
        while (!v->opened[sc->s[s].parent]) s = sc->s[s].parent;
        if (unit_head[s] < 0) {
            unit_head[s] = i;
            v->kind[i] = V_SCOPE;
            v->unit[i] = s;
            v->st.scopes++;
        } else {
            v->next[unit_last[s]] = i;
            v->head[i] = unit_head[s];
            v->kind[i] = V_NONE;
        }
        unit_last[s] = i;
    }
    free(unit_head);
    free(unit_last);
    return mpx_plan_scope_figures(v->p, sc, v->o->overlay, &v->fig, err);
}

static mpx_status build_view(view *v, mpx_error *err) {
    const mpx_graph *g = v->g;
    const mpx_plan *p = v->p;
    size_t nn = (size_t)(g->n_nodes ? g->n_nodes : 1), nt = (size_t)(g->n_tensors ? g->n_tensors : 1);
    v->hidden = calloc(nn, sizeof *v->hidden);
    v->dist = calloc(nn, sizeof *v->dist);
    v->head = malloc(nn * sizeof *v->head);
    v->next = malloc(nn * sizeof *v->next);
    v->kind = calloc(nn, sizeof *v->kind);
    v->cast_of = malloc(nt * sizeof *v->cast_of);
    v->an = calloc(nn, sizeof *v->an);
    v->acast = calloc((size_t)p->n_casts + 1, sizeof *v->acast);
    v->ain = calloc((size_t)g->n_inputs + 1, sizeof *v->ain);
    v->aout = calloc((size_t)g->n_outputs + 1, sizeof *v->aout);
    v->aw = calloc(nt, sizeof *v->aw);
    size_t ns = nn + (size_t)p->n_casts + (size_t)g->n_outputs + 1;
    v->stamp = malloc(ns * sizeof *v->stamp);
    if (!v->hidden || !v->dist || !v->head || !v->next || !v->kind || !v->cast_of || !v->an || !v->acast ||
        !v->ain || !v->aout || !v->aw || !v->stamp)
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (size_t i = 0; i < ns; i++) v->stamp[i] = -1;
    for (int t = 0; t < g->n_tensors; t++) v->cast_of[t] = -1;
    for (int k = p->n_casts - 1; k >= 0; k--) v->cast_of[p->casts[k].tensor] = k;
    for (int i = 0; i < g->n_nodes; i++) {
        v->hidden[i] = !v->o->all && (g->nodes[i]->op == MPX_OP_Constant || p->nodes[i].folded);
        if (v->hidden[i]) v->st.hidden++;
        v->head[i] = v->next[i] = -1;
    }
    if (v->o->around) {
        mpx_status st = around(v, err);
        if (st) return st;
    }
    if (v->o->to_cause) {
        if (!v->o->around || !v->o->overlay)
            return mpx_error_set(err, MPX_E_ARG, "--upstream-to-cause needs --around <node> <depth> and a run");
        int *path = malloc(nn * sizeof *path);
        v->on_path = malloc(nn * sizeof *v->on_path);
        if (!path || !v->on_path) {
            free(path);
            return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        }
        v->n_path = vz_cause_path(g, v->o->overlay, v->center, path);
        if (v->n_path <= 0) {
            free(path);
            if (v->n_path < 0) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
            return mpx_error_set(err, MPX_E_ARG, "--upstream-to-cause: the run has no own (local) errors upstream of "
                                                 "\"%s\" (use: run --local)", v->o->around);
        }
        for (int i = 0; i < g->n_nodes; i++) v->on_path[i] = -1;
        /* the path is drawn whatever its length: its nodes join the view */
        for (int k = 0; k < v->n_path; k++) {
            v->on_path[path[k]] = k;
            if (v->dist[path[k]] < 0 || v->dist[path[k]] > v->o->depth) v->dist[path[k]] = v->o->depth;
        }
        free(path);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        if (v->hidden[i] || v->dist[i] < 0) continue;
        if (in_view(v, i)) {
            v->head[i] = i;
            v->kind[i] = V_OP;
            v->st.op_nodes++;
        } else if (v->dist[i] == v->o->depth + 1) {
            v->head[i] = i;
            v->kind[i] = V_STUB;
        }
    }
    if (v->o->fold > 0) {
        int n_op = v->st.op_nodes;
        /* about o->fold boxes whatever the model's size */
        int cap = (n_op + v->o->fold - 1) / v->o->fold;
        mpx_status st = MPX_OK;
        if (v->o->fold_by != MPX_VIZ_FOLD_REGIONS && (st = fold_scopes(v, err))) return st;
        /* by scopes, what lies outside the boxes folds into regions as
         * large as convexity allows: the boxes are the structure */
        if (v->sc && mpx_scopes_useful(v->sc)) cap = g->n_nodes + 1;
        st = fold_regions(v, cap < 2 ? 2 : cap, err);
        if (st) return st;
    } else if (v->o->collapse) {
        bool *has_prev = calloc(nn, sizeof *has_prev);
        if (!has_prev) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        for (int a = 0; a < g->n_nodes; a++) {
            if (v->kind[a] != V_OP || a == v->center) continue;
            int b = chain_successor(v, a);
            if (b >= 0) {
                v->next[a] = b;
                has_prev[b] = true;
            }
        }
        /* Heads are members without a predecessor; walk each chain once. */
        for (int a = 0; a < g->n_nodes; a++) {
            if (v->next[a] < 0 || has_prev[a]) continue;
            v->kind[a] = V_CHAIN;
            v->st.chains++;
            for (int m = v->next[a]; m >= 0; m = v->next[m]) {
                v->head[m] = a;
                v->kind[m] = V_NONE;
            }
        }
        free(has_prev);
    }
    if (v->o->overlay) {
        v->err = vz_node_errors(v->o->overlay, g->n_nodes, v->o->overlay_local);
        if (!v->err) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    return MPX_OK;
}

/* ---- labels ------------------------------------------------------------------- */

/* Text for a DOT label: backslashes doubled, so names never turn into
 * Graphviz escapes (\N, \G, \l ...); our own line breaks are added as "\n". */
static void put_label_text(vz_buf *b, const char *s) {
    for (; *s; s++) {
        if (*s == '\\') vz_put(b, "\\\\");
        else if (*s == '\n') vz_put(b, "\\n");
        else vz_putn(b, s, 1);
    }
}

/* The format a tensor's values travel in, or its dtype when not float. */
static const char *tensor_fmt(const view *v, const mpx_tensor *t) {
    const mpx_format *f = v->p->tensors[t->index].format;
    return f ? f->name : mpx_dtype_name(t->dtype);
}

/* The converted weights node n reads: the format, or NULL. */
static const mpx_format *converted_weights(const view *v, int n) {
    const mpx_node *nd = v->g->nodes[n];
    const mpx_plan_node *pn = &v->p->nodes[n];
    for (int k = 0; k < nd->n_inputs; k++) {
        const mpx_tensor *t = nd->inputs[k];
        if (!is_weight_input(v, t)) continue;
        for (int w = 0; w < v->p->n_weights; w++)
            if (v->p->weights[w].tensor == t->index && v->p->weights[w].to == pn->compute) return pn->compute;
    }
    return NULL;
}

/* The overlay's lines and border for node figures e. */
static void overlay_style(Agnode_t *an, const vz_node_err *e, vz_buf *label) {
    if (!e || !e->has) return;
    char fig[32], col[8];
    double t = vz_err_t(e->rel_l2);
    vz_err_colour(t, col);
    char pw[16];
    snprintf(pw, sizeof pw, "%.1f", 1.5 + 4.5 * t);
    /* exact nodes keep their border colour but no text: "rel_l2 0" would be
     * noise on every node of a mostly-fp32 plan (the tooltip still has it) */
    if (e->rel_l2 != 0) vz_printf(label, "\\nrel_l2 %s", vz_fig(e->rel_l2, fig, sizeof fig));
    if (e->overflow) {
        vz_printf(label, "\\nOVERFLOW %lld", (long long)e->overflow);
        snprintf(col, sizeof col, "%s", VZ_OVERFLOW_COLOUR);
        snprintf(pw, sizeof pw, "6");
    }
    if (e->underflow) vz_printf(label, "\\nunderflow %lld", (long long)e->underflow);
    vz_set(an, "color", col);
    vz_set(an, "penwidth", pw);
}

static void node_tooltip(view *v, vz_buf *b, int n) {
    const mpx_node *nd = v->g->nodes[n];
    const mpx_plan_node *pn = &v->p->nodes[n];
    put_label_text(b, nd->op_type);
    vz_put(b, " ");
    put_label_text(b, nd->name);
    vz_put(b, "\\n");
    vz_printf(b, "colour %s", mpx_colour_name(pn->colour));
    if (pn->colour_rule >= 0) {
        const char *text = v->o->rules ? mpx_rules_text(v->o->rules, pn->colour_rule) : NULL;
        vz_printf(b, " (rule #%d%s", pn->colour_rule + 1, text ? ": " : "");
        if (text) put_label_text(b, text);
        vz_put(b, ")");
    } else {
        vz_printf(b, " (default: %s)", pn->dflt_source ? pn->dflt_source : "table");
    }
    if (pn->is_float)
        vz_printf(b, "\\ncompute %s, accumulate %s, output %s", mpx_format_name(pn->compute), mpx_format_name(pn->accum),
                  mpx_format_name(pn->output));
    else
        vz_put(b, "\\nno float values: precision does not apply");
    char m[32];
    if (nd->cost.macs > 0) vz_printf(b, "\\nMACs %lld", (long long)nd->cost.macs);
    if (v->err && v->err[n].has)
        vz_printf(b, "\\nrel_l2 %s, overflow %lld, underflow %lld", vz_fig(v->err[n].rel_l2, m, sizeof m),
                  (long long)v->err[n].overflow, (long long)v->err[n].underflow);
}

static Agnode_t *new_node(view *v, const char *id) {
    Agnode_t *an = agnode(v->G, (char *)id, 1);
    if (an) {
        vz_set(an, "id", id);
        v->st.nodes++;
    }
    return an;
}

/* A new cluster inside parent, keyed and labelled (NULL when cgraph fails). */
static Agraph_t *new_cluster(view *v, Agraph_t *parent, const char *key, const char *label, const char *style,
                             const char *color) {
    Agraph_t *sub = agsubg(parent, (char *)key, 1);
    if (!sub) return NULL;
    v->st.clusters++;
    vz_buf lb;
    vz_buf_init(&lb);
    put_label_text(&lb, label);
    vz_set(sub, "label", lb.s ? lb.s : "");
    vz_set(sub, "id", key);
    vz_buf_free(&lb);
    vz_set(sub, "style", style);
    vz_set(sub, "color", color);
    return sub;
}

/* The cluster a node's name puts it in (nested by '/' components), or the root. */
static Agraph_t *cluster_for(view *v, const char *name) {
    Agraph_t *parent = v->G;
    if (v->o->cluster <= 0) return parent;
    const char *comp[64];
    size_t len[64];
    int nc = name_parts(name, comp, len, 64);
    int levels = nc - 1 < v->o->cluster ? nc - 1 : v->o->cluster;
    char key[1024];
    size_t kl = (size_t)snprintf(key, sizeof key, "cluster_");
    for (int L = 0; L < levels; L++) {
        if (kl + len[L] + 2 >= sizeof key) break;
        key[kl++] = '/';
        memcpy(key + kl, comp[L], len[L]);
        kl += len[L];
        key[kl] = '\0';
        Agraph_t *sub = agsubg(parent, key, 0);
        if (!sub) {
            char part[256];
            snprintf(part, sizeof part, "%.*s", (int)len[L], comp[L]);
            if (!(sub = new_cluster(v, parent, key, part, "rounded,filled", "#9e9e9e"))) return parent;
            vz_set(sub, "fillcolor", L % 2 ? "#ffffff" : "#f5f5f5");
        }
        parent = sub;
    }
    return parent;
}

/* The cluster of an If's branch ("If_25: then_branch"), inside the cluster
 * of the branch around that If: drawn whatever --cluster says, since the
 * branches are the model's structure, not a naming convention. */
static Agraph_t *branch_cluster(view *v, const mpx_node *n, int depth) {
    if (!n->guard || depth > MPX_MAX_SUBGRAPH_DEPTH) return v->G;
    Agraph_t *parent = branch_cluster(v, n->guard, depth + 1);
    const char *which = n->branch ? "else_branch" : "then_branch";
    char key[1100];
    snprintf(key, sizeof key, "cluster_if:%s/%s", n->guard->name, which);
    Agraph_t *sub = agsubg(parent, key, 0);
    if (sub) return sub;
    char part[1100];
    snprintf(part, sizeof part, "%s: %s", n->guard->name, which);
    sub = new_cluster(v, parent, key, part, "rounded,dashed", n->branch ? "#8e24aa" : "#1e88e5");
    return sub ? sub : parent;
}

/* The label of a chain or region as a Graphviz HTML table: its text rows
 * above a bar of colour shares, so a box of mixed colours shows each share
 * without painting stripes under the text. */
static void group_label(view *v, int h, int count, const int *cnt, const vz_node_err *e, const mpx_format *w,
                        vz_buf *b) {
    const mpx_graph *g = v->g;
    const mpx_plan_node *pn = &v->p->nodes[h];
    int kinds = 0;
    for (int c = 1; c < MPX_COLOUR_COUNT; c++) kinds += cnt[c] > 0;
    int last = h;
    while (v->next[last] >= 0) last = v->next[last];
    /* the formats its nodes compute in: one for a region (a box shares
     * them), any number folded by scopes, where regions mix them */
    char fmts[64];
    snprintf(fmts, sizeof fmts, "%s", pn->is_float ? mpx_format_name(pn->compute) : "no float");
    if (v->sc) {
        const mpx_format *seen[3];
        int ns = 0, more = 0;
        size_t fl = 0;
        fmts[0] = '\0';
        for (int m = h; m >= 0; m = v->next[m]) {
            const mpx_plan_node *pm = &v->p->nodes[m];
            if (!pm->is_float || !pm->compute) continue;
            bool have = false;
            for (int q = 0; q < ns; q++) have |= seen[q] == pm->compute;
            if (have) continue;
            if (ns == 3) {
                more++;
                continue;
            }
            seen[ns++] = pm->compute;
            fl += (size_t)snprintf(fmts + fl, sizeof fmts - fl, "%s%s", fl ? ", " : "", mpx_format_name(pm->compute));
            if (fl >= sizeof fmts) fl = sizeof fmts - 1;
        }
        if (more) snprintf(fmts + fl, sizeof fmts - fl, " +%d", more);
        if (!ns) snprintf(fmts, sizeof fmts, "no float");
    }
    vz_printf(b, "<TABLE BORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"1\"><TR><TD COLSPAN=\"%d\"><B>%d nodes "
                 "\xc2\xb7 %s</B></TD></TR><TR><TD COLSPAN=\"%d\">",
              kinds, count, fmts, kinds);
    if (v->kind[h] == V_CHAIN) {
        int k = 0;
        for (int m = h; m >= 0; m = v->next[m], k++) {
            if (count > 4 && k == 2) {
                vz_put(b, " &#8594; &#8230;");
                while (v->next[m] != last) m = v->next[m];
                continue;
            }
            if (k) vz_put(b, " &#8594; ");
            vz_put_xml(b, g->nodes[m]->op_type);
        }
    } else {
        /* op types by count, the four most frequent; ties in first-seen order */
        int shown = 0, taken[4] = {-1, -1, -1, -1};
        for (; shown < 4; shown++) {
            int best = -1, best_n = 0;
            for (int m = h; m >= 0; m = v->next[m]) {
                int op = (int)g->nodes[m]->op, n = 0;
                bool done = false;
                for (int q = 0; q < shown; q++) done |= taken[q] == op;
                if (done || op == best) continue;
                for (int q = m; q >= 0; q = v->next[q]) n += (int)g->nodes[q]->op == op;
                if (n > best_n) best = op, best_n = n;
            }
            if (best < 0) break;
            taken[shown] = best;
            int n = 0;
            const char *name = NULL;
            for (int m = h; m >= 0; m = v->next[m])
                if ((int)g->nodes[m]->op == best) {
                    if (!name) name = g->nodes[m]->op_type;
                    n++;
                }
            if (shown) vz_put(b, " \xc2\xb7 ");
            vz_put_xml(b, name);
            vz_printf(b, " %d", n);
        }
        int rest = count;
        for (int m = h; m >= 0; m = v->next[m])
            for (int q = 0; q < shown; q++) rest -= (int)g->nodes[m]->op == taken[q];
        if (rest > 0) vz_printf(b, " \xc2\xb7 %d more", rest);
    }
    vz_put(b, "</TD></TR>");
    /* the first and last names in smaller type; not in a view by scopes,
     * whose boxes are few and named (the tooltip lists them) */
    if (!v->sc) {
        vz_printf(b, "<TR><TD COLSPAN=\"%d\"><FONT POINT-SIZE=\"%s\">", kinds, v->o->fold > 0 ? "11" : "8");
        vz_put_xml(b, g->nodes[h]->name);
        vz_put(b, " &#8230; ");
        vz_put_xml(b, g->nodes[last]->name);
        vz_put(b, "</FONT></TD></TR>");
    }
    char fig[32];
    if (e && e->has && e->rel_l2 != 0)
        vz_printf(b, "<TR><TD COLSPAN=\"%d\">worst rel_l2 %s</TD></TR>", kinds, vz_fig(e->rel_l2, fig, sizeof fig));
    if (e && e->overflow)
        vz_printf(b, "<TR><TD COLSPAN=\"%d\"><B>OVERFLOW %lld</B></TD></TR>", kinds, (long long)e->overflow);
    if (e && e->underflow)
        vz_printf(b, "<TR><TD COLSPAN=\"%d\">underflow %lld</TD></TR>", kinds, (long long)e->underflow);
    /* a rule shows as the double border; converted weights need a word */
    if (w) vz_printf(b, "<TR><TD COLSPAN=\"%d\">W&#8594;%s</TD></TR>", kinds, w->name);
    if (v->sc) {
        /* regions of any formats hold casts: how many */
        int inside = 0;
        for (int k = 0; k < v->p->n_casts; k++) {
            const mpx_tensor *t = g->tensors[v->p->casts[k].tensor];
            bool here = false;
            for (int q = 0; !here && t->producer && v->head[t->producer->index] == h && q < v->p->casts[k].n_consumers; q++)
                here = v->p->casts[k].consumers[q] >= 0 && v->head[v->p->casts[k].consumers[q]] == h;
            inside += here;
        }
        if (inside) vz_printf(b, "<TR><TD COLSPAN=\"%d\">%d cast%s inside</TD></TR>", kinds, inside, inside == 1 ? "" : "s");
    }
    if (kinds > 1) {
        vz_put(b, "<TR>");
        for (int c = 1; c < MPX_COLOUR_COUNT; c++)
            if (cnt[c])
                vz_printf(b, "<TD BGCOLOR=\"%s\" BORDER=\"1\" COLOR=\"#9e9e9e\" HEIGHT=\"6\" WIDTH=\"%d\" "
                             "FIXEDSIZE=\"TRUE\"></TD>",
                          vz_fill((mpx_colour)c), 4 + 120 * cnt[c] / count);
        vz_put(b, "</TR>");
    }
    vz_put(b, "</TABLE>");
}

/* Set an HTML-like label (agstrdup interns by content: making the HTML
 * string first makes agsafeset's copy of the same text the HTML one). */
static void set_html_label(view *v, Agnode_t *an, const char *text) {
    char *html = agstrdup_html(v->G, (char *)text);
    if (!html) return;
    vz_set(an, "label", html);
    agstrfree(v->G, html);
}

/* The frame of the scope opened below the top, around its items (the view
 * draws that scope alone); the root graph for everything else. */
static Agraph_t *scope_cluster(view *v, int s, int depth) {
    const mpx_scopes *sc = v->sc;
    if (s < 0 || s != v->open || mpx_scope_within(sc, sc->top, s) || depth > sc->n) return v->G;
    Agraph_t *parent = v->G;
    char key[32];
    snprintf(key, sizeof key, "cluster_scope:%d", s);
    Agraph_t *sub = agsubg(parent, key, 0);
    if (sub) return sub;
    char label[1200];
    snprintf(label, sizeof label, "%s (%d nodes)", sc->s[s].label, sc->s[s].n_total);
    sub = new_cluster(v, parent, key, label, "rounded,filled", s == v->open ? "#455a64" : "#9e9e9e");
    if (!sub) return parent;
    vz_set(sub, "fillcolor", depth % 2 ? "#ffffff" : "#f5f5f5");
    vz_set(sub, "fontsize", "14");
    return sub;
}

/* The label of a scope's box (an HTML-like table): its name, what it holds
 * and in which formats, casts on its border, the run's worst error and
 * overflow, the model inputs and outputs it reads or makes, and a bar of
 * its colour shares. Figures: mpx_plan_scope_figures. */
static void scope_label(view *v, int h, vz_buf *b) {
    const mpx_scopes *sc = v->sc;
    int s = v->unit[h];
    const mpx_scope_figures *f = &v->fig[s];
    int kinds = 0;
    for (int c = 1; c < MPX_COLOUR_COUNT; c++) kinds += f->colours[c] > 0;
    if (kinds < 1) kinds = 1;
    vz_printf(b, "<TABLE BORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"1\"><TR><TD COLSPAN=\"%d\"><B>", kinds);
    vz_put_xml(b, sc->s[s].label);
    vz_printf(b, "</B></TD></TR><TR><TD COLSPAN=\"%d\">%d nodes", kinds, f->nodes);
    for (int k = 0; k < f->n_formats && k < 3; k++)
        vz_printf(b, " \xc2\xb7 %s%s", mpx_format_name(f->formats[k]), f->n_formats > 1 ? "" : "");
    if (f->n_formats > 3) vz_printf(b, " +%d", f->n_formats - 3);
    vz_put(b, "</TD></TR>");
    if (f->casts_in || f->casts_out)
        vz_printf(b, "<TR><TD COLSPAN=\"%d\">casts: %d in \xc2\xb7 %d out</TD></TR>", kinds, f->casts_in, f->casts_out);
    char fig[32];
    if (v->err && f->has_error && f->worst_rel_l2 != 0)
        vz_printf(b, "<TR><TD COLSPAN=\"%d\">worst rel_l2 %s</TD></TR>", kinds, vz_fig(f->worst_rel_l2, fig, sizeof fig));
    if (v->err && f->overflow)
        vz_printf(b, "<TR><TD COLSPAN=\"%d\"><B>OVERFLOW %lld</B></TD></TR>", kinds, (long long)f->overflow);
    /* the model's inputs and outputs it reads and makes (they are not drawn) */
    int io = 0;
    for (int side = 0; side < 2; side++) {
        int n = side ? v->g->n_outputs : v->g->n_inputs;
        for (int k = 0; k < n; k++) {
            const mpx_tensor *t = side ? v->g->outputs[k] : v->g->inputs[k];
            bool here = false;
            if (side) here = t->producer && v->head[t->producer->index] == h;
            for (int c = 0; !side && !here && c < t->n_consumers; c++) here = v->head[t->consumers[c]->index] == h;
            if (!here) continue;
            if (io++ == 2) {
                vz_printf(b, "<TR><TD COLSPAN=\"%d\">&#8230;</TD></TR>", kinds);
                continue;
            }
            if (io > 3) continue;
            vz_printf(b, "<TR><TD COLSPAN=\"%d\">%s ", kinds, side ? "&#8594; output" : "input");
            vz_put_xml(b, t->name);
            vz_put(b, "</TD></TR>");
        }
    }
    if (kinds > 1) {
        vz_put(b, "<TR>");
        for (int c = 1; c < MPX_COLOUR_COUNT; c++)
            if (f->colours[c])
                vz_printf(b, "<TD BGCOLOR=\"%s\" BORDER=\"1\" COLOR=\"#9e9e9e\" HEIGHT=\"7\" WIDTH=\"%d\" "
                             "FIXEDSIZE=\"TRUE\"></TD>",
                          vz_fill((mpx_colour)c), 4 + 120 * f->colours[c] / (f->nodes ? f->nodes : 1));
        vz_put(b, "</TR>");
    }
    vz_put(b, "</TABLE>");
}

static void add_op(view *v, int h) {
    const mpx_graph *g = v->g;
    const mpx_node *nd = g->nodes[h];
    const mpx_plan_node *pn = &v->p->nodes[h];
    char id[32];
    head_id(v, h, id, sizeof id);
    Agnode_t *an = new_node(v, id);
    if (!an) return;
    v->an[h] = an;
    Agraph_t *cl = v->sc ? scope_cluster(v, v->kind[h] == V_SCOPE ? v->sc->s[v->unit[h]].parent : v->sc->of_node[h], 0)
                   : nd->guard ? branch_cluster(v, nd, 0)
                               : cluster_for(v, nd->name);
    if (cl != v->G) agsubnode(cl, an, 1);
    vz_buf *b = &v->tmp;
    if (v->kind[h] == V_STUB) {
        b->len = 0;
        put_label_text(b, nd->op_type);
        vz_put(b, "\\n");
        put_label_text(b, nd->name);
        vz_set(an, "label", b->s ? b->s : "");
        vz_set(an, "style", "rounded,dashed");
        vz_set(an, "color", "#9e9e9e");
        vz_set(an, "fontcolor", "#757575");
        b->len = 0;
        vz_put(b, "outside --around: ");
        put_label_text(b, nd->name);
        vz_set(an, "tooltip", b->s ? b->s : "");
        return;
    }
    bool group = V_GROUP(v->kind[h]);
    bool rule = false, nofloat = !pn->is_float;
    const mpx_format *w = NULL;
    int count = 0, cnt[MPX_COLOUR_COUNT] = {0};
    vz_node_err e = {0};
    for (int m = h; m >= 0; m = group ? v->next[m] : -1) {
        count++;
        cnt[v->p->nodes[m].colour]++;
        if (v->p->nodes[m].colour_rule >= 0) rule = true;
        if (!w) w = converted_weights(v, m);
        if (v->err && v->err[m].has) {
            if (!e.has || v->err[m].rel_l2 > e.rel_l2) e.rel_l2 = v->err[m].rel_l2;
            e.has = true;
            e.overflow += v->err[m].overflow;
            e.underflow += v->err[m].underflow;
        }
    }
    b->len = 0;
    if (group) {
        if (v->kind[h] == V_SCOPE) scope_label(v, h, b);
        else group_label(v, h, count, cnt, v->err ? &e : NULL, w, b);
        /* the box takes the fill of its most frequent colour */
        int top = 1;
        for (int c = 2; c < MPX_COLOUR_COUNT; c++)
            if (cnt[c] > cnt[top]) top = c;
        vz_set(an, "shape", "box");
        vz_set(an, "style", nofloat ? "filled,dashed" : "filled");
        vz_set(an, "fillcolor", vz_fill((mpx_colour)top));
        if (rule) vz_set(an, "peripheries", "2");
        if (v->err) {
            vz_buf scratch;
            vz_buf_init(&scratch);
            overlay_style(an, &e, &scratch); /* the border; the figures are in the table */
            vz_buf_free(&scratch);
        }
        if (!b->oom && b->s) set_html_label(v, an, b->s);
        b->len = 0;
        int k = 0;
        for (int m = h; m >= 0 && k < 24; m = v->next[m], k++) {
            if (k) vz_put(b, "\\n");
            put_label_text(b, g->nodes[m]->op_type);
            vz_put(b, " ");
            put_label_text(b, g->nodes[m]->name);
            vz_printf(b, " (%s%s)", mpx_colour_name(v->p->nodes[m].colour),
                      v->p->nodes[m].colour_rule >= 0 ? ", rule" : "");
        }
        if (count > 24) vz_printf(b, "\\n... %d more", count - 24);
        vz_set(an, "tooltip", b->s ? b->s : "");
        return;
    }
    put_label_text(b, nd->op_type);
    vz_put(b, "\\n");
    /* inside a scope's cluster or an If branch's, the name less what the
     * cluster says (a flattened branch node's full name can be hundreds of
     * characters); the tooltip has the full name */
    put_label_text(b, v->sc ? v->sc->short_name[h] : mpx_node_local_name(nd));
    vz_set(an, "fillcolor", vz_fill(pn->colour));
    if (nofloat) vz_set(an, "style", "rounded,filled,dashed");
    if (rule || w) {
        vz_put(b, "\\n");
        if (rule) vz_printf(b, "rule #%d", pn->colour_rule + 1);
        if (w) vz_printf(b, "%sW\xe2\x86\x92%s", rule ? " \xc2\xb7 " : "", w->name);
    }
    if (rule) vz_set(an, "peripheries", "2");
    if (v->on_path && v->on_path[h] == v->n_path - 1) {
        /* the cause: its own error, measured with exact inputs */
        double own = -1;
        const mpx_compare *c = v->o->overlay;
        for (int k = 0; k < c->n_layers; k++)
            if (c->layers[k].node == h && c->layers[k].has_local && !(c->layers[k].local.rel_l2 <= own))
                own = c->layers[k].local.rel_l2;
        char fig[32];
        vz_printf(b, "\\nCAUSE: own rel_l2 %s", vz_fig(own, fig, sizeof fig));
        vz_set(an, "fontcolor", "#d50000");
    }
    if (h == v->center) {
        vz_set(an, "fontsize", "12");
        if (!v->err) vz_set(an, "penwidth", "3");
    }
    overlay_style(an, v->err ? &e : NULL, b);
    vz_set(an, "label", b->s ? b->s : "");
    b->len = 0;
    node_tooltip(v, b, h);
    vz_set(an, "tooltip", b->s ? b->s : "");
}

/* A Loop's, Scan's or SequenceMap's body as a cluster beside it: its nodes
 * (ids <id>b<j>, nested bodies inside), its inputs (<id>i<k>: the formal
 * ones, then the outer tensors it reads) and outputs (<id>o<k>), the edges
 * between them. A body runs as one node of the plan, every node of it in
 * that node's format each iteration (numerics/kern_loop.c), so its nodes
 * take the node's fill; a dashed edge ties the node to the body's inputs. */
static void add_body(view *v, Agraph_t *parent, Agnode_t *owner, const char *id, const mpx_node *nd,
                     const mpx_plan_node *pn, int depth) {
    const mpx_graph *b = nd->body;
    if (!b || depth > MPX_MAX_SUBGRAPH_DEPTH) return;
    char key[1100], label[1100], nid[96];
    snprintf(key, sizeof key, "cluster_body:%s", id);
    snprintf(label, sizeof label, "%s: body (%s each iteration)", nd->name, mpx_format_name(pn->compute));
    Agraph_t *cl = new_cluster(v, parent, key, label, "rounded,dashed", "#6d4c41");
    if (!cl) return;
    Agnode_t **bn = calloc((size_t)(b->n_nodes + b->n_inputs + 1), sizeof *bn), **bin = bn + b->n_nodes;
    if (!bn) return;
    vz_buf *t = &v->tmp;
    for (int k = 0; k < b->n_inputs; k++) {
        snprintf(nid, sizeof nid, "%si%d", id, k);
        Agnode_t *an = bin[k] = new_node(v, nid);
        if (!an) continue;
        agsubnode(cl, an, 1);
        t->len = 0;
        put_label_text(t, b->inputs[k]->name);
        vz_set(an, "label", t->s ? t->s : "");
        vz_set(an, "shape", "ellipse");
        vz_set(an, "style", "dashed");
        Agedge_t *e = owner ? agedge(v->G, owner, an, NULL, 1) : NULL;
        if (e) vz_set(e, "style", "dashed"), vz_set(e, "arrowhead", "none");
    }
    for (int j = 0; j < b->n_nodes; j++) {
        const mpx_node *m = b->nodes[j];
        if (m->op == MPX_OP_Constant && !v->o->all) continue;
        snprintf(nid, sizeof nid, "%sb%d", id, j);
        Agnode_t *an = bn[j] = new_node(v, nid);
        if (!an) continue;
        agsubnode(cl, an, 1);
        t->len = 0;
        put_label_text(t, m->op_type);
        vz_put(t, "\\n");
        put_label_text(t, m->name);
        vz_set(an, "label", t->s ? t->s : "");
        vz_set(an, "fillcolor", vz_fill(pn->colour));
        t->len = 0;
        put_label_text(t, m->op_type);
        vz_put(t, " ");
        put_label_text(t, m->name);
        vz_put(t, ": inside ");
        put_label_text(t, nd->name);
        vz_printf(t, " (%s), in %s each iteration", nd->op_type, mpx_format_name(pn->compute));
        vz_set(an, "tooltip", t->s ? t->s : "");
        for (int i = 0; i < m->n_inputs; i++) {
            const mpx_tensor *x = m->inputs[i];
            Agnode_t *src = NULL;
            if (!x) continue;
            if (x->producer) { /* (index: its place in the body's nodes) */
                if (x->producer->index < j && b->nodes[x->producer->index] == x->producer) src = bn[x->producer->index];
            } else {
                for (int k = 0; k < b->n_inputs && !src; k++)
                    if (b->inputs[k] == x) src = bin[k];
            }
            if (src) agedge(v->G, src, an, NULL, 1);
        }
        if (m->body) {
            char sub_id[96];
            snprintf(sub_id, sizeof sub_id, "%sb%d", id, j);
            add_body(v, cl, an, sub_id, m, pn, depth + 1);
        }
    }
    for (int k = 0; k < b->n_outputs; k++) {
        const mpx_tensor *x = b->outputs[k];
        Agnode_t *src = NULL;
        if (x && x->producer && x->producer->index < b->n_nodes && b->nodes[x->producer->index] == x->producer)
            src = bn[x->producer->index];
        for (int q = 0; q < b->n_inputs && !src; q++)
            if (b->inputs[q] == x) src = bin[q];
        snprintf(nid, sizeof nid, "%so%d", id, k);
        Agnode_t *an = new_node(v, nid);
        if (!an) continue;
        agsubnode(cl, an, 1);
        t->len = 0;
        put_label_text(t, x ? x->name : "");
        vz_set(an, "label", t->s ? t->s : "");
        vz_set(an, "shape", "ellipse");
        vz_set(an, "style", "dashed");
        if (src) agedge(v->G, src, an, NULL, 1);
    }
    free(bn);
}

static void add_io(view *v, const mpx_tensor *t, bool input, int k) {
    char id[32], sh[256];
    snprintf(id, sizeof id, "%s%d", input ? "in" : "out", k);
    Agnode_t *an = new_node(v, id);
    if (!an) return;
    (input ? v->ain : v->aout)[k] = an;
    vz_buf *b = &v->tmp;
    b->len = 0;
    vz_put(b, input ? "input " : "output ");
    put_label_text(b, t->name);
    vz_printf(b, "\\n%s %s", mpx_dtype_name(t->dtype), mpx_tensor_shape_str(t, sh, sizeof sh));
    vz_set(an, "label", b->s ? b->s : "");
    vz_set(an, "shape", input ? "invhouse" : "house");
    vz_set(an, "style", "filled");
    vz_set(an, "fillcolor", VZ_IO_FILL);
    vz_set(an, "tooltip", b->s ? b->s : "");
}

static Agnode_t *cast_node(view *v, int k) {
    if (v->acast[k]) return v->acast[k];
    const mpx_plan_cast *c = &v->p->casts[k];
    char id[32];
    snprintf(id, sizeof id, "k%d", k);
    Agnode_t *an = new_node(v, id);
    if (!an) return NULL;
    v->acast[k] = an;
    v->st.casts++;
    /* A cast whose readers are all in one If branch is drawn in it: that is
     * where a runtime runs it (only when the branch is taken). */
    const mpx_node *in = NULL;
    bool one = c->n_consumers > 0;
    for (int q = 0; one && q < c->n_consumers; q++) {
        const mpx_node *m = c->consumers[q] >= 0 ? v->g->nodes[c->consumers[q]] : NULL;
        one = m && m->guard && (!in || (m->guard == in->guard && m->branch == in->branch));
        if (one && !in) in = m;
    }
    if (one && in) agsubnode(branch_cluster(v, in, 0), an, 1);
    vz_buf *b = &v->tmp;
    b->len = 0;
    vz_printf(b, "Cast\\n%s\xe2\x86\x92%s", mpx_format_name(c->from), mpx_format_name(c->to));
    vz_set(an, "label", b->s ? b->s : "");
    vz_set(an, "shape", "hexagon");
    vz_set(an, "style", "filled");
    vz_set(an, "fillcolor", VZ_CAST_FILL);
    vz_set(an, "color", "#e65100");
    vz_set(an, "fontsize", v->o->fold > 0 ? "12" : "9");
    b->len = 0;
    vz_printf(b, "runtime cast of ");
    put_label_text(b, v->g->tensors[c->tensor]->name);
    vz_printf(b, ": %s to %s, %d consumer%s", mpx_format_name(c->from), mpx_format_name(c->to), c->n_consumers,
              c->n_consumers == 1 ? "" : "s");
    vz_set(an, "tooltip", b->s ? b->s : "");
    return an;
}

static Agedge_t *add_edge(view *v, Agnode_t *a, Agnode_t *b, const mpx_tensor *t, const char *fmt) {
    Agedge_t *e = agedge(v->G, a, b, NULL, 1);
    if (!e) return NULL;
    v->st.edges++;
    vz_buf *lb = &v->tmp;
    lb->len = 0;
    vz_put(lb, fmt);
    if (v->o->shapes) {
        char sh[256];
        vz_printf(lb, "\\n%s", mpx_tensor_shape_str(t, sh, sizeof sh));
    }
    /* the model-level view leaves the format to the boxes: labels on its
     * long edges would take a rank's height each */
    if (v->o->fold <= 0) vz_set(e, "label", lb->s ? lb->s : "");
    lb->len = 0;
    put_label_text(lb, t->name);
    vz_printf(lb, " (%s)", fmt);
    vz_set(e, "tooltip", lb->s ? lb->s : "");
    return e;
}

/* The endpoint drawing node n. */
static endpoint node_end(const view *v, int n) {
    endpoint e = {NULL, false};
    int h = v->head[n];
    if (h < 0) return e;
    e.an = v->an[h];
    e.full = v->kind[h] != V_STUB;
    return e;
}

/* Whether cast k routes tensor t to consumer c (-1: the model output). */
static bool cast_serves(const mpx_plan_cast *k, int c) {
    for (int i = 0; i < k->n_consumers; i++)
        if (k->consumers[i] == c) return true;
    return false;
}

static void path_style(Agedge_t *e, bool on_path) {
    if (!e || !on_path) return;
    vz_set(e, "color", "#d50000");
    vz_set(e, "penwidth", "3");
}

/* Edges of one data tensor: from its source to each consumer (through the
 * cast that serves it, if any) and to the output node. stamp dedupes targets
 * per tensor (a node reading a tensor twice, two members of one chain). */
static void tensor_edges(view *v, const mpx_tensor *t, endpoint src, int out_k) {
    const mpx_plan *p = v->p;
    int nn = v->g->n_nodes;
    int tid = t->index;
    for (int c = -1; c < t->n_consumers; c++) {
        endpoint dst;
        int slot, cid;
        if (c < 0) {
            if (out_k < 0 || !v->aout[out_k]) continue;
            dst.an = v->aout[out_k];
            dst.full = true;
            slot = nn + p->n_casts + out_k;
            cid = -1;
        } else {
            cid = t->consumers[c]->index;
            dst = node_end(v, cid);
            if (!dst.an) continue;
            slot = v->head[cid];
        }
        /* a step of the path to the cause (--upstream-to-cause) */
        bool on_path = v->on_path && t->producer && cid >= 0 && v->on_path[cid] >= 0 &&
                       v->on_path[t->producer->index] == v->on_path[cid] + 1;
        int k = -1;
        for (int j = v->cast_of[tid]; j >= 0 && j < p->n_casts && p->casts[j].tensor == tid; j++)
            if (cast_serves(&p->casts[j], cid)) k = j;
        if (k >= 0 && v->sc) {
            /* folded by scopes: a cast is an edge between two boxes, drawn in
             * the casts' colour (inside a box it is one of its figures) */
            if (!src.an || src.an == dst.an || v->stamp[slot] == tid) continue;
            v->stamp[slot] = tid;
            Agedge_t *ce = agedge(v->G, src.an, dst.an, NULL, 0);
            if (!ce) ce = add_edge(v, src.an, dst.an, t, tensor_fmt(v, t));
            if (ce) {
                char lb[64];
                snprintf(lb, sizeof lb, "%s\xe2\x86\x92%s", mpx_format_name(p->casts[k].from),
                         mpx_format_name(p->casts[k].to));
                vz_set(ce, "color", "#e65100");
                vz_set(ce, "penwidth", "2.5");
                vz_set(ce, "label", lb);
                vz_set(ce, "fontsize", "12");
                vz_set(ce, "fontcolor", "#bf360c");
            }
            continue;
        }
        if (k < 0) {
            if (!src.an || src.an == dst.an || !(src.full || dst.full) || v->stamp[slot] == tid) continue;
            v->stamp[slot] = tid;
            /* the model-level view draws one edge per pair of boxes */
            if (v->o->fold > 0 && agedge(v->G, src.an, dst.an, NULL, 0)) continue;
            path_style(add_edge(v, src.an, dst.an, t, tensor_fmt(v, t)), on_path);
        } else {
            if (!(src.full || dst.full) || v->stamp[slot] == tid) continue;
            v->stamp[slot] = tid;
            bool fresh = !v->acast[k];
            Agnode_t *kn = cast_node(v, k);
            if (!kn) continue;
            if (fresh && src.an) add_edge(v, src.an, kn, t, mpx_format_name(p->casts[k].from));
            if (on_path && src.an) path_style(agedge(v->G, src.an, kn, NULL, 0), true);
            path_style(add_edge(v, kn, dst.an, t, mpx_format_name(p->casts[k].to)), on_path);
        }
    }
}

static void add_weights(view *v, int n) {
    const mpx_node *nd = v->g->nodes[n];
    endpoint dst = node_end(v, n);
    if (!dst.an || !dst.full) return;
    for (int k = 0; k < nd->n_inputs; k++) {
        const mpx_tensor *t = nd->inputs[k];
        if (!is_weight_input(v, t)) continue;
        int ti = t->index;
        const mpx_format *to = NULL;
        for (int w = 0; w < v->p->n_weights; w++)
            if (v->p->weights[w].tensor == ti && v->p->weights[w].to == v->p->nodes[n].compute)
                to = v->p->weights[w].to;
        if (!v->aw[ti]) {
            char id[32];
            snprintf(id, sizeof id, "w%d", ti);
            Agnode_t *an = new_node(v, id);
            if (!an) return;
            v->aw[ti] = an;
            vz_buf *b = &v->tmp;
            b->len = 0;
            put_label_text(b, t->name);
            vz_set(an, "label", b->s ? b->s : "");
            vz_set(an, "shape", "note");
            vz_set(an, "fontsize", "8");
            vz_set(an, "style", "filled");
            vz_set(an, "fillcolor", "#fafafa");
            vz_set(an, "tooltip", b->s ? b->s : "");
        }
        if (to) {
            vz_set(v->aw[ti], "fillcolor", "#c8e6c9");
            char lb[64];
            snprintf(lb, sizeof lb, "%s\xe2\x86\x92%s offline", tensor_fmt(v, t), to->name);
            add_edge(v, v->aw[ti], dst.an, t, lb);
        } else {
            add_edge(v, v->aw[ti], dst.an, t, tensor_fmt(v, t));
        }
    }
}

static void add_legend(view *v) {
    vz_buf b;
    vz_buf_init(&b);
    const char *tgt = mpx_format_name(v->p->opts.target);
    vz_put(&b, "<TABLE BORDER=\"0\" CELLBORDER=\"1\" CELLSPACING=\"0\" CELLPADDING=\"4\">"
               "<TR><TD COLSPAN=\"2\"><B>legend</B></TD></TR>");
    static const char *what[MPX_COLOUR_COUNT] = {NULL, "always %s", "%s when its float inputs are %s",
                                                 "follows its inputs (exact)", "always fp32"};
    for (int c = 1; c < MPX_COLOUR_COUNT; c++) {
        vz_printf(&b, "<TR><TD BGCOLOR=\"%s\">%s</TD><TD ALIGN=\"LEFT\" WIDTH=\"215\">", vz_fill((mpx_colour)c),
                  mpx_colour_name((mpx_colour)c));
        vz_printf(&b, what[c], tgt, tgt);
        vz_put(&b, "</TD></TR>");
    }
    vz_printf(&b, "<TR><TD BGCOLOR=\"%s\">Cast</TD><TD ALIGN=\"LEFT\" WIDTH=\"215\">runtime cast (from&#8594;to)</TD></TR>",
              VZ_CAST_FILL);
    vz_printf(&b, "<TR><TD BGCOLOR=\"%s\">input/output</TD><TD ALIGN=\"LEFT\" WIDTH=\"215\">model inputs and outputs</TD></TR>",
              VZ_IO_FILL);
    vz_put(&b, "<TR><TD>rule #n</TD><TD ALIGN=\"LEFT\" WIDTH=\"215\">double border: colour set by a rule</TD></TR>"
               "<TR><TD>W&#8594;fmt</TD><TD ALIGN=\"LEFT\" WIDTH=\"215\">reads weights converted offline</TD></TR>"
               "<TR><TD>edge label</TD><TD ALIGN=\"LEFT\" WIDTH=\"215\">format of the values</TD></TR>"
               "<TR><TD>dashed</TD><TD ALIGN=\"LEFT\" WIDTH=\"215\">no float values</TD></TR>");
    if (v->err) {
        vz_put(&b, "<TR><TD COLSPAN=\"2\">border: rel_l2 of the last run</TD></TR><TR><TD COLSPAN=\"2\">"
                   "<TABLE BORDER=\"0\" CELLSPACING=\"1\"><TR>");
        static const double ticks[] = {1e-6, 1e-4, 1e-2, 1};
        static const char *names[] = {"&#8804;1e-6", "1e-4", "1e-2", "&#8805;1"};
        for (int i = 0; i < 4; i++) {
            char col[8];
            vz_err_colour(vz_err_t(ticks[i]), col);
            vz_printf(&b, "<TD BGCOLOR=\"%s\"><FONT COLOR=\"%s\">%s</FONT></TD>", col, i >= 2 ? "white" : "black",
                      names[i]);
        }
        vz_printf(&b, "<TD BGCOLOR=\"%s\"><FONT COLOR=\"white\">overflow</FONT></TD></TR></TABLE></TD></TR>",
                  VZ_OVERFLOW_COLOUR);
    }
    vz_put(&b, "</TABLE>");
    if (b.s && !b.oom) {
        Agnode_t *an = new_node(v, "legend");
        if (an) {
            /* agstrdup interns by content: making the HTML string first makes
             * agsafeset's copy of the same text the HTML one. */
            char *html = agstrdup_html(v->G, b.s);
            vz_set(an, "label", html);
            agstrfree(v->G, html);
            vz_set(an, "shape", "plaintext");
            vz_set(an, "style", "");
            vz_set(an, "tooltip", "legend");
        }
    }
    vz_buf_free(&b);
}

/* The model-level view in columns. Folded, most exported models are a
 * chain a few boxes wide and tens of boxes deep, which a screen shows only
 * too small to read; cut at every `rows` levels of depth, the chain goes on
 * in the next column, as text does in a newspaper. dot does the placing:
 * an edge between columns stops counting for the ranks (constraint=false),
 * so each column starts again at the top. Returns -1 when out of memory. */
static int fold_columns(view *v) {
    Agraph_t *G = v->G;
    int n = agnnodes(G), changed = 1, deepest = 0;
    int *depth = calloc((size_t)n + 1, sizeof *depth);
    Agnode_t **by_seq = calloc((size_t)n + 1, sizeof *by_seq);
    if (!depth || !by_seq) {
        free(depth);
        free(by_seq);
        return -1;
    }
    for (Agnode_t *a = agfstnode(G); a; a = agnxtnode(G, a))
        if (AGSEQ(a) >= 1 && AGSEQ(a) <= (uint64_t)n) by_seq[AGSEQ(a)] = a;
    /* longest path from the sources; the folded graph is acyclic (convex
     * regions), and n rounds reach the fixed point */
    for (int round = 0; changed && round <= n; round++) {
        changed = 0;
        for (int q = 1; q <= n; q++) {
            Agnode_t *a = by_seq[q];
            if (!a) continue;
            for (Agedge_t *e = agfstin(G, a); e; e = agnxtin(G, e)) {
                uint64_t t = AGSEQ(agtail(e));
                if (t >= 1 && t <= (uint64_t)n && depth[t] + 1 > depth[q]) {
                    depth[q] = depth[t] + 1;
                    changed = 1;
                }
            }
            if (depth[q] > deepest) deepest = depth[q];
        }
    }
    /* about as many columns as make the picture as wide as a screen is:
     * sqrt(levels / 2) (16 levels: 3 columns, 50: 5), at most 8 */
    int cols = (int)lround(sqrt((deepest + 1) / 2.0));
    if (cols > 8) cols = 8;
    if (cols > 1) {
        int rows = (deepest + cols) / cols;
        for (int q = 1; q <= n; q++) {
            Agnode_t *a = by_seq[q];
            if (!a) continue;
            for (Agedge_t *e = agfstout(G, a); e; e = agnxtout(G, e)) {
                uint64_t h = AGSEQ(aghead(e));
                if (h >= 1 && h <= (uint64_t)n && depth[h] / rows != depth[q] / rows) {
                    vz_set(e, "constraint", "false");
                    vz_set(e, "style", "dashed");
                }
            }
        }
    }
    free(depth);
    free(by_seq);
    return 0;
}

static mpx_status make_graph(view *v, mpx_error *err) {
    const mpx_graph *g = v->g;
    const mpx_plan *p = v->p;
    Agdisc_t disc = {&AgMemDisc, &vz_gv_ids, &vz_gv_io};
    v->G = agopen((char *)"plan", Agdirected, &disc);
    if (!v->G) return mpx_error_set(err, MPX_E_NOMEM, "graphviz: cannot make a graph: %s", vz_gv_last());
    Agraph_t *G = v->G;
    /* Defaults, declared first so every node and edge shares them. */
    agattr(G, AGRAPH, (char *)"rankdir", (char *)"TB");
    agattr(G, AGRAPH, (char *)"fontname", (char *)"Helvetica");
    agattr(G, AGRAPH, (char *)"nodesep", (char *)"0.25");
    agattr(G, AGRAPH, (char *)"ranksep", (char *)(v->o->fold > 0 ? "0.2" : "0.3"));
    agattr(G, AGRAPH, (char *)"labelloc", (char *)"t");
    agattr(G, AGRAPH, (char *)"fontsize", (char *)"16");
    agattr(G, AGNODE, (char *)"shape", (char *)"box");
    agattr(G, AGNODE, (char *)"style", (char *)"rounded,filled");
    agattr(G, AGNODE, (char *)"fontname", (char *)"Helvetica");
    /* the model-level view is the page's first screen: its text must read
     * at the size a screen shows the whole view */
    agattr(G, AGNODE, (char *)"fontsize", (char *)(v->o->fold > 0 ? "14" : "10"));
    agattr(G, AGNODE, (char *)"margin", (char *)"0.08,0.03");
    agattr(G, AGNODE, (char *)"height", (char *)"0.3");
    agattr(G, AGEDGE, (char *)"fontname", (char *)"Helvetica");
    agattr(G, AGEDGE, (char *)"fontsize", (char *)"8");
    agattr(G, AGEDGE, (char *)"arrowsize", (char *)"0.6");
    agattr(G, AGEDGE, (char *)"color", (char *)"#616161");

    vz_buf *b = &v->tmp;
    b->len = 0;
    if (v->o->title) {
        put_label_text(b, v->o->title);
    } else {
        char sum[512];
        mpx_plan_summary(p, sum, sizeof sum);
        put_label_text(b, g->name && *g->name ? g->name : "model");
        vz_printf(b, " \xc2\xb7 target %s\n", mpx_format_name(p->opts.target));
        put_label_text(b, sum);
        if (v->o->around) {
            vz_put(b, "\\naround ");
            put_label_text(b, v->o->around);
            vz_printf(b, ", depth %d", v->o->depth);
        }
        if (v->on_path) {
            vz_printf(b, "\\npath to the cause (%d nodes, red edges): ", v->n_path);
            for (int i = 0; i < g->n_nodes; i++)
                if (v->on_path[i] == v->n_path - 1) put_label_text(b, g->nodes[i]->name);
        }
        if (v->st.hidden) vz_printf(b, "\\n%d Constant/folded nodes not drawn", v->st.hidden);
    }
    vz_set(G, "label", b->s ? b->s : "");

    if (v->o->legend) add_legend(v);
    /* folded by scopes, the boxes name the inputs and outputs they read and
     * make: house shapes would crowd the first screen */
    for (int i = 0; i < g->n_inputs && !v->sc; i++) {
        const mpx_tensor *t = g->inputs[i];
        bool used = !v->o->around;
        for (int c = 0; c < t->n_consumers && !used; c++) used = node_end(v, t->consumers[c]->index).full;
        if (used) add_io(v, t, true, i);
    }
    for (int i = 0; i < g->n_nodes; i++)
        if (v->head[i] == i) add_op(v, i);
    for (int i = 0; i < g->n_outputs && !v->sc; i++) {
        const mpx_tensor *t = g->outputs[i];
        bool used = !v->o->around || (t->producer && node_end(v, t->producer->index).full);
        if (used) add_io(v, t, false, i);
    }
    /* Edges in graph order: model inputs, then each node's outputs. */
    for (int i = 0; i < g->n_inputs; i++) {
        endpoint src = {v->ain[i], true};
        int out_k = -1;
        for (int o = 0; o < g->n_outputs; o++)
            if (g->outputs[o] == g->inputs[i]) out_k = o;
        tensor_edges(v, g->inputs[i], src, out_k);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        if (v->head[i] < 0) continue;
        endpoint src = node_end(v, i);
        const mpx_node *nd = g->nodes[i];
        for (int k = 0; k < nd->n_outputs; k++) {
            const mpx_tensor *t = nd->outputs[k];
            if (!is_data_tensor(v, t)) continue;
            int out_k = -1;
            for (int o = 0; o < g->n_outputs; o++)
                if (g->outputs[o] == t) out_k = o;
            tensor_edges(v, t, src, out_k);
        }
        if (v->o->weights) add_weights(v, i);
    }
    /* Bodies, unless chains or regions are folded (--collapse, --fold):
     * a drawn node with a body, whole in view. */
    for (int i = 0; !v->o->collapse && v->o->fold <= 0 && i < g->n_nodes; i++)
        if (g->nodes[i]->body && v->head[i] == i && v->an[i] && v->kind[i] != V_STUB) {
            char id[32];
            snprintf(id, sizeof id, "n%d", i);
            const mpx_node *nd = g->nodes[i];
            add_body(v, nd->guard ? branch_cluster(v, nd, 0) : cluster_for(v, nd->name), v->an[i], id, nd,
                     &p->nodes[i], 0);
        }
    if (v->o->fold > 0 && fold_columns(v) != 0) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    if (v->tmp.oom) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    return MPX_OK;
}

/* ---- entry points ------------------------------------------------------------- */

void mpx_viz_opts_default(mpx_viz_opts *o) {
    memset(o, 0, sizeof *o);
    o->legend = true;
    o->engine = "dot";
}

/* The view of plan p under o (what is drawn, by which id), checked: what
 * both the pictures and mpx_viz_node_ids start from. */
static mpx_status setup(view *v, const mpx_plan *p, const mpx_viz_opts *o, mpx_error *err) {
    memset(v, 0, sizeof *v);
    vz_buf_init(&v->tmp);
    v->p = p;
    v->o = o;
    v->center = -1;
    if (!p || !p->g || !o) return mpx_error_set(err, MPX_E_ARG, "no plan to draw");
    v->g = p->g;
    if (o->overlay && o->overlay->g != p->g)
        return mpx_error_set(err, MPX_E_ARG, "the run to overlay belongs to another model (run again)");
    if (o->around) {
        if (o->depth < 0) return mpx_error_set(err, MPX_E_ARG, "--around: depth must be 0 or more, not %d", o->depth);
        /* a node, or a tensor standing for its producer (as other commands resolve names) */
        const mpx_node *c = mpx_graph_find_node(p->g, o->around);
        const mpx_tensor *t = c ? NULL : mpx_graph_find_tensor(p->g, o->around);
        if (t && t->producer) c = t->producer;
        if (!c)
            return mpx_error_set(err, MPX_E_ARG, "--around: no node %s\"%s\"",
                                 t ? "produces the model input or weight " : "or tensor named ", o->around);
        v->center = c->index;
    }
    if (o->cluster < 0) return mpx_error_set(err, MPX_E_ARG, "--cluster: depth must be 0 or more");
    mpx_status st = build_view(v, err);
    if (!st && v->center >= 0 && v->hidden[v->center])
        return mpx_error_set(err, MPX_E_ARG, "--around: node \"%s\" is a Constant or folded node (add --all)",
                             o->around);
    return st;
}

static mpx_status prepare(view *v, const mpx_plan *p, const mpx_viz_opts *o, mpx_error *err) {
    double t0 = vz_now_ms();
    mpx_status st = setup(v, p, o, err);
    if (!st) st = make_graph(v, err);
    v->st.ms_build = vz_now_ms() - t0;
    return st;
}

static mpx_status finish(view *v, mpx_viz_stats *stats, mpx_status st) {
    if (stats) *stats = v->st;
    free_view(v);
    return st;
}

mpx_status mpx_viz_dot(const mpx_plan *plan, const mpx_viz_opts *o, char **out, mpx_viz_stats *stats,
                       mpx_error *err) {
    *out = NULL;
    vz_gv_errs saved = vz_gv_catch();
    view v;
    mpx_status st = prepare(&v, plan, o, err);
    if (!st) {
        double t0 = vz_now_ms();
        vz_buf b;
        vz_buf_init(&b);
        if (agwrite(v.G, &b) != 0 || b.oom) {
            vz_buf_free(&b);
            st = b.oom ? mpx_error_set(err, MPX_E_NOMEM, "out of memory")
                       : mpx_error_set(err, MPX_E_INVALID, "graphviz: writing DOT failed: %s", vz_gv_last());
        } else {
            v.st.bytes = b.len;
            *out = vz_buf_take(&b);
            if (!*out) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        }
        v.st.ms_render = vz_now_ms() - t0;
    }
    st = finish(&v, stats, st);
    vz_gv_release(saved);
    return st;
}

mpx_status mpx_viz_scope_tree(const mpx_plan *plan, const mpx_viz_opts *o, mpx_scopes **out, mpx_error *err) {
    *out = NULL;
    view v;
    mpx_status st = setup(&v, plan, o, err);
    if (!st) {
        *out = v.sc;
        v.sc = NULL;
    }
    free_view(&v);
    return st;
}

mpx_status mpx_viz_node_ids(const mpx_plan *plan, const mpx_viz_opts *o, char (*ids)[16], mpx_error *err) {
    view v;
    mpx_status st = setup(&v, plan, o, err);
    for (int i = 0; !st && i < plan->g->n_nodes; i++) {
        int h = v.head[i];
        ids[i][0] = '\0';
        if (h >= 0) head_id(&v, h, ids[i], sizeof ids[i]);
    }
    free_view(&v);
    return st;
}

/* One Graphviz context for the life of the process, never freed: Graphviz
 * 2.42's pango text layout keeps a pointer to the last font name, which
 * belongs to the context's font table, so freeing a context and laying out
 * with a new one reads freed memory (AddressSanitizer caught it on the
 * second SVG). Reusing one context is also what the library intends, and
 * saves loading the plugins again for every picture. */
static GVC_t *shared_context(void) {
    static GVC_t *gvc;
    if (!gvc) gvc = gvContext();
    return gvc;
}

mpx_status mpx_viz_svg(const mpx_plan *plan, const mpx_viz_opts *o, char **out, mpx_viz_stats *stats,
                       mpx_error *err) {
    *out = NULL;
    vz_gv_errs saved = vz_gv_catch();
    view v;
    mpx_status st = prepare(&v, plan, o, err);
    const char *engine = o && o->engine && *o->engine ? o->engine : "dot";
    GVC_t *gvc = NULL;
    if (!st && v.st.nodes > MPX_VIZ_LAYOUT_MAX_NODES)
        st = mpx_error_set(err, MPX_E_LIMIT,
                           "%d nodes to draw, more than mpx gives Graphviz to lay out (%d): draw a part "
                           "(--around <node> <depth>)%s",
                           v.st.nodes, MPX_VIZ_LAYOUT_MAX_NODES,
                           o && o->fold ? " (this model view folds no further)"
                                        : " or, with svg, the model-level view (--fold)");
    if (!st) {
        gvc = shared_context();
        if (!gvc) st = mpx_error_set(err, MPX_E_NOMEM, "graphviz: cannot make a context: %s", vz_gv_last());
    }
    if (!st) {
        double t0 = vz_now_ms();
        if (gvLayout(gvc, v.G, engine) != 0) {
            st = mpx_error_set(err, MPX_E_INVALID, "graphviz: layout with \"%s\" failed: %s", engine, vz_gv_last());
        } else {
            double t1 = vz_now_ms();
            v.st.ms_layout = t1 - t0;
            char *data = NULL;
            unsigned int len = 0;
            if (gvRenderData(gvc, v.G, "svg", &data, &len) != 0 || !data) {
                st = mpx_error_set(err, MPX_E_INVALID, "graphviz: SVG rendering failed: %s", vz_gv_last());
            } else {
                /* Our own copy, so callers free() it whatever allocator
                 * Graphviz used. */
                char *s = malloc((size_t)len + 1);
                if (!s) {
                    st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
                } else {
                    memcpy(s, data, len);
                    s[len] = '\0';
                    *out = s;
                    v.st.bytes = len;
                }
            }
            if (data) gvFreeRenderData(data);
            gvFreeLayout(gvc, v.G);
            v.st.ms_render = vz_now_ms() - t1;
        }
    }
    st = finish(&v, stats, st);
    vz_gv_release(saved);
    return st;
}
