/* scope.c - where each of mpx's nodes and tensors sits in the source
 * file's graphs, for a model with If branches and Loop/Scan bodies.
 *
 * The loader flattens an If's branches into mpx's graph (names prefixed
 * "<if>/then_branch/", nodes numbered in one file order), while the file
 * keeps them inside the If's GraphProto attributes. The exporter edits the
 * file, so it walks the protos with the loader's own walk
 * (graph/onnx_walk.h: the numbering and the names are that code's, not a
 * copy) and records, per node, its NodeProto, the graph (scope) holding it
 * and its place there; per tensor, the scope that defines it and the name
 * it has there (mpx's name less the scope's prefix). A Cast the plan adds
 * goes into its tensor's scope, which encloses every reader. A Loop's or
 * Scan's body stays one node (the loader keeps it as a graph of its own):
 * the exporter only renames the outer values its body reads
 * (ex_rename_outer). */
#include "export_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Onnx__GraphProto *ex_graph_attr(Onnx__NodeProto *np, const char *name) {
    /* (the export owns the unpacked tree it edits) */
    return (Onnx__GraphProto *)mpx_onnx_graph_attr(np, name);
}

bool ex_is_if(Onnx__NodeProto *np, Onnx__GraphProto **then_b, Onnx__GraphProto **else_b) {
    const Onnx__GraphProto *br[2];
    if (!mpx_onnx_is_if(np, br)) return false;
    if (then_b) *then_b = (Onnx__GraphProto *)br[0];
    if (else_b) *else_b = (Onnx__GraphProto *)br[1];
    return true;
}

static int add_scope(ex *e, Onnx__GraphProto *gp, const char *prefix) {
    if (!ex_grow(&e->scopes, (size_t)e->n_scopes, &e->cap_scopes, sizeof *e->scopes)) return -1;
    ex_scope *s = &e->scopes[e->n_scopes];
    memset(s, 0, sizeof *s);
    s->gp = gp;
    s->prefix = prefix;
    s->plen = strlen(prefix);
    s->fo = mpx_arena_calloc(e->a, gp->n_node + 1, sizeof *s->fo);
    return s->fo ? e->n_scopes++ : -1;
}

/* The walk's state: the scope of each enclosing branch, by depth. */
typedef struct sites_walk {
    ex *e;
    mpx_error *err;
    int depth;
    int scope[MPX_MAX_SUBGRAPH_DEPTH + 2];
    int count; /* nodes walked */
} sites_walk;

static mpx_status site_branch_begin(void *vw, const Onnx__NodeProto *np, const char *if_name, int which,
                                    const Onnx__GraphProto *branch, const char *prefix, int depth) {
    sites_walk *w = vw;
    (void)np, (void)if_name, (void)which, (void)depth;
    char *p = mpx_arena_strdup(w->e->a, prefix);
    int c = p ? add_scope(w->e, (Onnx__GraphProto *)branch, p) : -1;
    if (c < 0) return ex_oom(w->err);
    w->scope[++w->depth] = c;
    return MPX_OK;
}

static mpx_status site_branch_end(void *vw, const Onnx__NodeProto *np, const char *if_name, int which,
                                  const Onnx__GraphProto *branch) {
    sites_walk *w = vw;
    (void)np, (void)if_name, (void)which, (void)branch;
    w->depth--;
    return MPX_OK;
}

static mpx_status site_node(void *vw, const Onnx__GraphProto *gp, size_t i, const char *prefix, int order,
                            const char *if_name) {
    sites_walk *w = vw;
    ex *e = w->e;
    int s = w->scope[w->depth];
    (void)prefix, (void)if_name;
    if (order < e->g->n_nodes) { /* (a longer file is refused by the caller) */
        e->site[order] = gp->node[i];
        e->site_scope[order] = s;
    }
    e->scopes[s].fo[i] = order;
    w->count = order + 1;
    return MPX_OK;
}

mpx_status ex_map_sites(ex *e, mpx_error *err) {
    const mpx_graph *g = e->g;
    size_t nn = (size_t)g->n_nodes + 1;
    e->site = mpx_arena_calloc(e->a, nn, sizeof *e->site);
    e->site_scope = mpx_arena_calloc(e->a, nn, sizeof *e->site_scope);
    e->t_scope = mpx_arena_calloc(e->a, (size_t)g->n_tensors + 1, sizeof *e->t_scope);
    if (!e->site || !e->site_scope || !e->t_scope || add_scope(e, e->m->graph, "") != 0) return ex_oom(err);
    sites_walk sw = {.e = e, .err = err};
    const mpx_onnx_walk w = {.ctx = &sw, .branch_begin = site_branch_begin, .branch_end = site_branch_end,
                             .node = site_node};
    mpx_status st = mpx_onnx_walk_graph(e->m->graph, "", &w, g->path, err);
    if (st) return st;
    /* The file must be the one loaded: as many nodes, the same ops. */
    bool same = sw.count == g->n_nodes;
    for (int i = 0; same && i < g->n_nodes; i++) {
        const mpx_node *n = g->nodes[i];
        const Onnx__NodeProto *np = e->site[n->file_order];
        same = np && np->op_type && strcmp(np->op_type, n->op_type) == 0;
    }
    if (!same)
        return mpx_error_set(err, MPX_E_INVALID,
                             "%s no longer holds the nodes the session loaded (%d of them): the file changed since "
                             "it was loaded; load it again", g->path, g->n_nodes);
    for (int i = 0; i < g->n_tensors; i++) {
        const mpx_tensor *t = g->tensors[i];
        if (t->producer) e->t_scope[i] = e->site_scope[t->producer->file_order];
    }
    /* A branch's initializers: defined in its scope, under its prefix. */
    for (int s = 1; s < e->n_scopes; s++) {
        Onnx__GraphProto *gp = e->scopes[s].gp;
        for (size_t i = 0; i < gp->n_initializer; i++) {
            char full[1400];
            snprintf(full, sizeof full, "%s%s", e->scopes[s].prefix, gp->initializer[i]->name);
            const mpx_tensor *t = mpx_graph_find_tensor(g, full);
            if (t) e->t_scope[t->index] = s;
        }
    }
    return MPX_OK;
}

const char *ex_pname(const ex *e, const mpx_tensor *t) {
    const ex_scope *s = &e->scopes[e->t_scope[t->index]];
    return strncmp(t->name, s->prefix, s->plen) == 0 ? t->name + s->plen : t->name;
}

bool ex_name_in_scopes(const ex *e, const char *name) {
    char full[1400];
    for (int s = 1; s < e->n_scopes; s++) {
        snprintf(full, sizeof full, "%s%s", e->scopes[s].prefix, name);
        if (mpx_graph_find_tensor(e->g, full) || mpx_graph_find_node(e->g, full)) return true;
    }
    return false;
}

/* Whether graph gp defines name itself (an input, an initializer or a
 * node's output): then its reads of name are its own, not the outer one. */
static bool defines(const Onnx__GraphProto *gp, const char *name) {
    for (size_t i = 0; i < gp->n_input; i++)
        if (gp->input[i]->name && strcmp(gp->input[i]->name, name) == 0) return true;
    for (size_t i = 0; i < gp->n_initializer; i++)
        if (gp->initializer[i]->name && strcmp(gp->initializer[i]->name, name) == 0) return true;
    for (size_t i = 0; i < gp->n_node; i++)
        for (size_t j = 0; j < gp->node[i]->n_output; j++)
            if (gp->node[i]->output[j] && strcmp(gp->node[i]->output[j], name) == 0) return true;
    return false;
}

mpx_status ex_rename_outer(ex *e, Onnx__GraphProto *gp, const char *from, const char *to, int depth,
                           mpx_error *err) {
    if (depth > MPX_MAX_SUBGRAPH_DEPTH || defines(gp, from)) return MPX_OK;
    for (size_t i = 0; i < gp->n_node; i++) {
        Onnx__NodeProto *np = gp->node[i];
        bool owned = false;
        for (size_t j = 0; j < np->n_input; j++)
            if (np->input[j] && strcmp(np->input[j], from) == 0 &&
                !ex_set_name(e, &np->input, np->n_input, &owned, (int)j, to))
                return ex_oom(err);
        for (size_t a = 0; a < np->n_attribute; a++) {
            Onnx__AttributeProto *ap = np->attribute[a];
            mpx_status st = MPX_OK;
            if (ap->g) st = ex_rename_outer(e, ap->g, from, to, depth + 1, err);
            for (size_t q = 0; !st && q < ap->n_graphs; q++) st = ex_rename_outer(e, ap->graphs[q], from, to, depth + 1, err);
            if (st) return st;
        }
    }
    for (size_t i = 0; i < gp->n_output; i++)
        if (gp->output[i]->name && strcmp(gp->output[i]->name, from) == 0) {
            if (!ex_save_slot(e, &gp->output[i]->name, NULL)) return ex_oom(err);
            gp->output[i]->name = (char *)to;
        }
    return MPX_OK;
}
