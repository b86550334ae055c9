/* graph_internal.h - what the graph/ sources share and nothing outside graph/ sees. */
#ifndef MPX_GRAPH_INTERNAL_H
#define MPX_GRAPH_INTERNAL_H

#include "mpx_graph.h"

/* cost.c: fill node->cost from its tensors' current shapes and values
 * (fields -1 where a needed shape is unknown). */
void mpx_cost_node(mpx_node *n);

#endif
