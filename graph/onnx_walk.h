/* onnx_walk.h - the order in which the ONNX loader flattens a graph's nodes,
 * for every reader of the ONNX protos: the loader (onnx_load.c) and the
 * exporter (export/), which edits the source file and must find in it the
 * node behind each mpx_node.file_order. Both walk through
 * mpx_onnx_walk_graph, so the two cannot number the nodes differently.
 *
 * The order: a graph's nodes as the file lists them; an If (mpx_onnx_is_if)
 * comes after its two branches, each walked the same way (then, else),
 * depth first, so the numbering stays topological. Loop, Scan and
 * SequenceMap bodies are not entered: each is one node here, and the loader
 * makes its body a graph of its own, walked on its own.
 *
 * Not part of libmpx's API (not installed): it exposes the protobuf-c types
 * generated from onnx.proto at build time. */
#ifndef MPX_ONNX_WALK_H
#define MPX_ONNX_WALK_H

#include "mpx_graph.h"
#include "onnx.pb-c.h"

/* The default ONNX domain ("", "ai.onnx" or none). */
bool mpx_onnx_default_domain(const char *domain);
/* The graph attribute called name (an If's branch, a Loop's body), or NULL. */
const Onnx__GraphProto *mpx_onnx_graph_attr(const Onnx__NodeProto *np, const char *name);
/* Whether np is an If the loader flattens (default domain, both branches);
 * then its branches in br[0] (then) and br[1] (else) when br is not NULL. */
bool mpx_onnx_is_if(const Onnx__NodeProto *np, const Onnx__GraphProto *br[2]);

/* What a walk calls; any hook may be NULL. A hook's non-MPX_OK status stops
 * the walk and is returned. Names and prefixes point into the walk's own
 * buffers: valid for the call (a branch's prefix until its branch_end). */
typedef struct mpx_onnx_walk {
    void *ctx;
    /* An If, before its branches; if_name: its name in mpx's graph (its
     * own under the enclosing prefix, else "<prefix>If_<order>"). */
    mpx_status (*if_begin)(void *ctx, const Onnx__NodeProto *np, const char *if_name);
    /* Branch which (0 then, 1 else) of that If: its nodes are walked
     * between these two calls under prefix "<if_name>/<then|else>_branch/";
     * depth is the branch's (1 for a branch of the walked graph's If). */
    mpx_status (*branch_begin)(void *ctx, const Onnx__NodeProto *np, const char *if_name, int which,
                               const Onnx__GraphProto *branch, const char *prefix, int depth);
    mpx_status (*branch_end)(void *ctx, const Onnx__NodeProto *np, const char *if_name, int which,
                             const Onnx__GraphProto *branch);
    /* Every node, in the order above: node `index` of graph gp, whose
     * names are under prefix ("" for the walked graph); order is its place
     * in the walk from 0 (the loader's mpx_node.file_order); if_name is
     * its name when it is an If, else NULL. */
    mpx_status (*node)(void *ctx, const Onnx__GraphProto *gp, size_t index, const char *prefix, int order,
                       const char *if_name);
} mpx_onnx_walk;

/* Walk gp's nodes (the main graph, or a Loop's body, whose nodes the
 * loader numbers on their own) under prefix. Refused, naming the If and
 * file (may be NULL) in err: branches nested deeper than
 * MPX_MAX_SUBGRAPH_DEPTH, an If's name too long. */
mpx_status mpx_onnx_walk_graph(const Onnx__GraphProto *gp, const char *prefix, const mpx_onnx_walk *w,
                               const char *file, mpx_error *err);

#endif
