/* onnx_walk.c - the loader's order of an ONNX graph's nodes (onnx_walk.h),
 * walked once for the loader and the exporter alike. */
#include "onnx_walk.h"

#include <stdio.h>
#include <string.h>

bool mpx_onnx_default_domain(const char *d) { return !d || !*d || strcmp(d, "ai.onnx") == 0; }

const Onnx__GraphProto *mpx_onnx_graph_attr(const Onnx__NodeProto *np, const char *name) {
    for (size_t j = 0; j < np->n_attribute; j++) {
        const Onnx__AttributeProto *ap = np->attribute[j];
        if (ap && ap->name && strcmp(ap->name, name) == 0) return ap->g;
    }
    return NULL;
}

bool mpx_onnx_is_if(const Onnx__NodeProto *np, const Onnx__GraphProto *br[2]) {
    if (!np->op_type || strcmp(np->op_type, "If") != 0 || !mpx_onnx_default_domain(np->domain)) return false;
    const Onnx__GraphProto *tb = mpx_onnx_graph_attr(np, "then_branch"), *eb = mpx_onnx_graph_attr(np, "else_branch");
    if (!tb || !eb) return false;
    if (br) br[0] = tb, br[1] = eb;
    return true;
}

static mpx_status walk(const Onnx__GraphProto *gp, const char *prefix, int depth, int *order,
                       const mpx_onnx_walk *w, const char *file, mpx_error *err) {
    static const char *const which[2] = {"then_branch", "else_branch"};
    mpx_status st;
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        const Onnx__GraphProto *br[2];
        char if_name[1000];
        bool is_if = mpx_onnx_is_if(np, br);
        if (is_if) {
            /* Named by the nodes walked before its branches. */
            int len = np->name && *np->name ? snprintf(if_name, sizeof if_name, "%s%s", prefix, np->name)
                                            : snprintf(if_name, sizeof if_name, "%sIf_%d", prefix, *order);
            if (len < 0 || (size_t)len >= sizeof if_name)
                return mpx_error_at(err, MPX_E_LIMIT, file, 0, 0,
                                    "node \"%.200s...\" (If): its name in its subgraph is too long", if_name);
            if (w->if_begin && (st = w->if_begin(w->ctx, np, if_name)) != MPX_OK) return st;
            for (int b = 0; b < 2; b++) {
                if (depth >= MPX_MAX_SUBGRAPH_DEPTH)
                    return mpx_error_at(err, MPX_E_LIMIT, file, 0, 0,
                                        "node \"%s\" (If): subgraphs nested deeper than %d", if_name,
                                        MPX_MAX_SUBGRAPH_DEPTH);
                char sub[1100];
                snprintf(sub, sizeof sub, "%s/%s/", if_name, which[b]);
                if (w->branch_begin && (st = w->branch_begin(w->ctx, np, if_name, b, br[b], sub, depth + 1)) != MPX_OK)
                    return st;
                if ((st = walk(br[b], sub, depth + 1, order, w, file, err)) != MPX_OK) return st;
                if (w->branch_end && (st = w->branch_end(w->ctx, np, if_name, b, br[b])) != MPX_OK) return st;
            }
        }
        if (w->node && (st = w->node(w->ctx, gp, i, prefix, *order, is_if ? if_name : NULL)) != MPX_OK) return st;
        (*order)++;
    }
    return MPX_OK;
}

mpx_status mpx_onnx_walk_graph(const Onnx__GraphProto *gp, const char *prefix, const mpx_onnx_walk *w,
                               const char *file, mpx_error *err) {
    int order = 0;
    return walk(gp, prefix ? prefix : "", 0, &order, w, file, err);
}
