/* export_scope.c - where each of mpx's nodes and tensors sits in the source
 * file's graphs, for a model with If branches and Loop/Scan bodies.
 *
 * The loader flattens an If's branches into mpx's graph (names prefixed
 * "<if>/then_branch/", nodes numbered in one file order: both branches'
 * nodes, depth first, then the If; graph/onnx_load.c), while the file keeps
 * them inside the If's GraphProto attributes. The exporter edits the file,
 * so it walks the protos in the loader's order and records, per node, its
 * NodeProto, the graph (scope) holding it and its place there; per tensor,
 * the scope that defines it and the name it has there (mpx's name less the
 * scope's prefix). A Cast the plan adds goes into its tensor's scope, which
 * encloses every reader. A Loop's or Scan's body stays one node (the
 * loader keeps it as a graph of its own): the exporter only renames the
 * outer values its body reads (vx_rename_outer). */
#include "viz_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool vx_default_domain(const char *d) { return !d || !*d || strcmp(d, "ai.onnx") == 0; }

Onnx__GraphProto *vx_graph_attr(Onnx__NodeProto *np, const char *name) {
    const Onnx__AttributeProto *ap = vx_find_attr(np, name);
    return ap ? ap->g : NULL;
}

bool vx_is_if(Onnx__NodeProto *np, Onnx__GraphProto **then_b, Onnx__GraphProto **else_b) {
    Onnx__GraphProto *tb = vx_graph_attr(np, "then_branch"), *eb = vx_graph_attr(np, "else_branch");
    if (!np->op_type || strcmp(np->op_type, "If") != 0 || !vx_default_domain(np->domain) || !tb || !eb) return false;
    if (then_b) *then_b = tb;
    if (else_b) *else_b = eb;
    return true;
}

static int add_scope(ex *e, Onnx__GraphProto *gp, const char *prefix) {
    if (!vx_grow(&e->scopes, (size_t)e->n_scopes, &e->cap_scopes, sizeof *e->scopes)) return -1;
    vx_scope *s = &e->scopes[e->n_scopes];
    memset(s, 0, sizeof *s);
    s->gp = gp;
    s->prefix = prefix;
    s->plen = strlen(prefix);
    s->fo = mpx_arena_calloc(e->a, gp->n_node + 1, sizeof *s->fo);
    return s->fo ? e->n_scopes++ : -1;
}

/* Scope s's nodes, in the loader's order: an If's branches (each a new
 * scope) before the If. */
static mpx_status walk(ex *e, int s, int *k, int depth, mpx_error *err) {
    Onnx__GraphProto *gp = e->scopes[s].gp;
    const char *prefix = e->scopes[s].prefix;
    if (depth > MPX_MAX_SUBGRAPH_DEPTH) return mpx_error_set(err, MPX_E_LIMIT, "subgraphs nested too deep");
    for (size_t i = 0; i < gp->n_node; i++) {
        Onnx__NodeProto *np = gp->node[i];
        Onnx__GraphProto *br[2];
        if (vx_is_if(np, &br[0], &br[1])) {
            /* The If's name as the loader makes it: its own, or If_<n>
             * numbered by the nodes loaded before its branches. */
            char ifname[1000];
            if (np->name && *np->name) snprintf(ifname, sizeof ifname, "%s%s", prefix, np->name);
            else snprintf(ifname, sizeof ifname, "%sIf_%d", prefix, *k);
            static const char *const which[2] = {"then_branch", "else_branch"};
            for (int b = 0; b < 2; b++) {
                size_t n = strlen(ifname) + strlen(which[b]) + 3;
                char *p = mpx_arena_alloc(e->a, n);
                if (!p) return vx_oom(err);
                snprintf(p, n, "%s/%s/", ifname, which[b]);
                int c = add_scope(e, br[b], p);
                if (c < 0) return vx_oom(err);
                mpx_status st = walk(e, c, k, depth + 1, err);
                if (st) return st;
            }
        }
        if (*k < e->g->n_nodes) { /* (a longer file is refused by the caller) */
            e->site[*k] = np;
            e->site_scope[*k] = s;
        }
        e->scopes[s].fo[i] = *k;
        (*k)++;
    }
    return MPX_OK;
}

mpx_status vx_map_sites(ex *e, mpx_error *err) {
    const mpx_graph *g = e->g;
    size_t nn = (size_t)g->n_nodes + 1;
    e->site = mpx_arena_calloc(e->a, nn, sizeof *e->site);
    e->site_scope = mpx_arena_calloc(e->a, nn, sizeof *e->site_scope);
    e->t_scope = mpx_arena_calloc(e->a, (size_t)g->n_tensors + 1, sizeof *e->t_scope);
    if (!e->site || !e->site_scope || !e->t_scope || add_scope(e, e->m->graph, "") != 0) return vx_oom(err);
    int k = 0;
    mpx_status st = walk(e, 0, &k, 0, err);
    if (st) return st;
    /* The file must be the one loaded: as many nodes, the same ops. */
    bool same = k == g->n_nodes;
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

const char *vx_pname(const ex *e, const mpx_tensor *t) {
    const vx_scope *s = &e->scopes[e->t_scope[t->index]];
    return strncmp(t->name, s->prefix, s->plen) == 0 ? t->name + s->plen : t->name;
}

bool vx_name_in_scopes(const ex *e, const char *name) {
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

mpx_status vx_rename_outer(ex *e, Onnx__GraphProto *gp, const char *from, const char *to, int depth,
                           mpx_error *err) {
    if (depth > MPX_MAX_SUBGRAPH_DEPTH || defines(gp, from)) return MPX_OK;
    for (size_t i = 0; i < gp->n_node; i++) {
        Onnx__NodeProto *np = gp->node[i];
        bool owned = false;
        for (size_t j = 0; j < np->n_input; j++)
            if (np->input[j] && strcmp(np->input[j], from) == 0 &&
                !vx_set_name(e, &np->input, np->n_input, &owned, (int)j, to))
                return vx_oom(err);
        for (size_t a = 0; a < np->n_attribute; a++) {
            Onnx__AttributeProto *ap = np->attribute[a];
            mpx_status st = MPX_OK;
            if (ap->g) st = vx_rename_outer(e, ap->g, from, to, depth + 1, err);
            for (size_t q = 0; !st && q < ap->n_graphs; q++) st = vx_rename_outer(e, ap->graphs[q], from, to, depth + 1, err);
            if (st) return st;
        }
    }
    for (size_t i = 0; i < gp->n_output; i++)
        if (gp->output[i]->name && strcmp(gp->output[i]->name, from) == 0) {
            if (!vx_save_slot(e, &gp->output[i]->name, NULL)) return vx_oom(err);
            gp->output[i]->name = (char *)to;
        }
    return MPX_OK;
}
