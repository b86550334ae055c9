/* graph_internal.h - what the graph/ sources share and nothing outside graph/ sees. */
#ifndef MPX_GRAPH_INTERNAL_H
#define MPX_GRAPH_INTERNAL_H

#include "mpx_graph.h"

/* cost.c: fill node->cost from its tensors' current shapes and values
 * (fields -1 where a needed shape is unknown). */
void mpx_cost_node(mpx_node *n);

/* graph.c: mpx_dims_product, and MPX_E_LIMIT also for any one dim beyond
 * MPX_MAX_ELEMS when another dim is 0 or unknown. Used wherever a tensor gets
 * a shape (declared, bound, loaded, inferred), so shape arithmetic may rely
 * on known dims being at most MPX_MAX_ELEMS. */
mpx_status mpx_dims_check(int rank, const int64_t *dims, int64_t *out, mpx_error *err);

/* loaders (files.c): parse buf (len bytes read from path) with the
 * loader's from-memory entry point, giving it path's folder as the folder its
 * side files (JSON) or external data (ONNX) are relative to. Frees buf. */
typedef mpx_graph *(*mpx_buffer_loader)(const void *buf, size_t len, const char *path,
                                        const char *dir, mpx_error *err);
mpx_graph *mpx_load_in_folder(void *buf, size_t len, const char *path, mpx_buffer_loader load,
                              mpx_error *err);

/* graph.c: g takes ownership of child (a Loop or Scan body): freed with g.
 * On failure (out of memory) child is freed. */
mpx_status mpx_graph_adopt(mpx_graph *g, mpx_graph *child);

/* onnx_legacy.c: the nodes of a model of default-domain opset 1-6 (loaded
 * in file order, not finalized yet) rewritten to opset 7's forms; sets
 * g->opset to 7 and g->opset_file to opset. Through opset 9, ImageScaler
 * nodes become Mul and Add, and MeanVarianceNormalization before 9 opset 9's
 * form. Fails naming the node for a form it cannot rewrite. */
mpx_status mpx_onnx_legacy_rewrite(mpx_graph *g, int opset, mpx_error *err);

#endif
