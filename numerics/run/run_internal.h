/* run_internal.h - what the files of run/ share beyond mpx_run.h: the
 * executor's steps on given input values, the figures taken inside bodies
 * (body_figures.c; kern_loop.c fills them) and the chains of elementwise
 * nodes run by tiles (fuse.c). Not installed; nothing outside run/ (and
 * the tests) includes it. */
#ifndef MPX_RUN_INTERNAL_H
#define MPX_RUN_INTERNAL_H

#include "mpx_run.h"

/* ---- the executor's step on given input values (exec.c) ----------------------- */

/* mpx_exec_node with the node's input values given one by one (srcs[j] for
 * n->inputs[j], NULL when absent), as the run's own values (not reference
 * ones), and dest (may be NULL) offered to the kernel for its output
 * (mpx_kctx.dest): fuse.c runs nodes on tile views this way. */
mpx_status mpx_exec_node_with(const mpx_node *n, const mpx_assign *a, const mpx_value *const *srcs,
                              mpx_value *outs, float *dest, int64_t dest_n, mpx_error *err);

/* Whether input j of n is that tensor's first place among n's inputs (a
 * tensor n reads twice counts once: use counts, writing over an input). */
static inline bool mpx_node_first_read(const mpx_node *n, int j) {
    const mpx_tensor *t = n->inputs[j];
    for (int q = 0; t && q < j; q++)
        if (n->inputs[q] == t) return false;
    return t != NULL;
}

/* Whether v's float buffer is the run's own to hand to another value (a
 * step writing its output over a dead input: compare.c, exec.c, fuse.c):
 * not a view of data another owner holds, not a sequence, not empty. */
static inline bool mpx_value_own_floats(const mpx_value *v) {
    return !v->borrowed && !v->is_seq && v->f && v->n > 0;
}

/* Run a's kept forms of its weights (a NULL: the reference's; rounded
 * copies, packings: mpx_k_prepare_reads) for the nodes marked in
 * runs (NULL: all), made before its run's values from its start values
 * vals (mpx_exec_start_some); the count of forms made. */
size_t mpx_exec_prepare_forms(const mpx_graph *g, const mpx_assign *a, const mpx_value *vals, const bool *runs);

/* Whether running n under a converts nothing: no input or output of it is
 * rounded (a NULL, or the node and its outputs in fp32). */
bool mpx_exec_node_plain(const mpx_assign *a, const mpx_node *n);

/* The one format a weight's own values are rounded to for a node that
 * reads them, held in tf (the tensor's low format, or NULL) and read in cf
 * (the node's low compute format, or NULL): tf or cf where only one is set
 * or both are the same, else NULL (two roundings: tf's copy, then cf).
 * exec_node's rule, which a comparison's preparing (compare.c) follows to
 * make the same kept forms. */
const mpx_format *mpx_exec_one_rounding(const mpx_format *tf, const mpx_format *cf);

/* mpx_exec_node with a body probe (mpx_kctx.probe) for a node that has a
 * body; mpx_exec_node is this with NULL. */
mpx_status mpx_exec_node_probe(const mpx_node *n, const mpx_assign *a, const mpx_value *vals, bool ref_inputs,
                               const struct mpx_body_probe *probe, mpx_value *outs, size_t *scratch_bytes,
                               mpx_error *err);

/* mpx_exec_node_probe with dest (may be NULL) offered to the kernel for
 * output 0 (mpx_kctx.dest; taken: outs[0] is a borrowed value over it).
 * compare.c offers a pointwise node the buffer of an input no later job
 * reads (kernels.def: MPX_KERNEL_POINTWISE), so the output overwrites it. */
mpx_status mpx_exec_node_into(const mpx_node *n, const mpx_assign *a, const mpx_value *vals, bool ref_inputs,
                              const struct mpx_body_probe *probe, float *dest, int64_t dest_n, mpx_value *outs,
                              size_t *scratch_bytes, mpx_error *err);

/* ---- figures inside bodies (body_figures.c; kern_loop.c fills them) ------------ */

/* Where one candidate's body figures accumulate during a comparison (owned
 * by the comparison; only the thread running that candidate's steps writes
 * it, under kern_loop.c's lock). */
typedef struct mpx_body_sink {
    mpx_body_layer *v;
    int n, cap;
    /* body runs so far, per body graph: the run index of a nested body */
    const mpx_graph **graphs;
    int64_t *runs;
    int n_graphs, graphs_cap;
} mpx_body_sink;

/* What a Loop, Scan or SequenceMap kernel of a candidate step reads: the
 * reference values of the graph the node belongs to (indexed by tensor),
 * the sink, the node of the main graph that owns it all, and whether to
 * take local figures too. */
typedef struct mpx_body_probe {
    const mpx_value *ref_vals;
    mpx_body_sink *sink;
    const mpx_node *top;
    bool local;
} mpx_body_probe;

/* The index of this run of body b (0, 1, ... per body graph). */
int64_t mpx_body_next_run(mpx_body_sink *k, const mpx_graph *b);
/* Add one run's figures m of tensor t (computed by node in b) under run
 * index run; local: they are local figures. False on out of memory. */
bool mpx_body_add(mpx_body_sink *k, const mpx_node *top, const mpx_node *node, const mpx_tensor *t,
                  const mpx_format *fmt, const mpx_metrics *m, bool local, int64_t run);
/* Turn the sums into means; hand the layers over (*n of them; the sink is
 * left empty). */
mpx_body_layer *mpx_body_finish(mpx_body_sink *k, int *n);
void mpx_body_sink_free(mpx_body_sink *k);
/* Badness of a metric value: larger is worse, NaN worst of all (samples.c). */
double mpx_metric_badness(mpx_metric_id id, double v);

/* mpx_exec_start for the tensors marked in want only (NULL: all): a re-run
 * that recomputes a few nodes needs a few constants, not every weight
 * rounded again. keep (NULL: none of this) marks the tensors whose values
 * the caller hands on (a comparison's kept tensors): any other constant
 * held low whose every reader reads it rounded itself (kernels.def's
 * MPX_KERNEL_READS_ROUNDED) starts unrounded, a view of the graph's value,
 * and each node reading it gets it with its format (mpx_kctx.in_round).
 * Only mpx_exec_node and fuse.c may read such a run's values. */
mpx_status mpx_exec_start_some(const mpx_graph *g, const mpx_assign *a, const mpx_value *inputs,
                               const bool *want, const bool *keep, mpx_value *vals, mpx_error *err);

/* ---- chains of elementwise nodes run by tiles (fuse.c) ------------------------- */

/* How many nodes from g->nodes[first] on form a chain fuse.c runs by tiles:
 * consecutive elementwise nodes (unary maps, Add/Sub/Mul/Div,
 * inference-mode BatchNormalization) with one output shape of known dims,
 * whose other operands are whole tensors of that shape or values
 * broadcast over long planes of it. 0 or 1: no chain. */
int mpx_fuse_span(const mpx_graph *g, int first);
/* False when MPX_FUSE=0 asks for every node on its own (read once a run). */
bool mpx_fuse_enabled(void);
enum { MPX_FUSE_MAX_NODES = 64 }; /* the longest chain run as one */
/* Runs nodes first .. first+count-1 tile by tile, on two threads, with the
 * same bits as running them one after another. Reads their outside inputs
 * from vals; writes into vals only the outputs marked in needed (indexed by
 * tensor). dead (indexed by tensor, or NULL): outside inputs nothing reads
 * after the chain, whose buffers an output may take (fuse.c, "writing over
 * a dead input"; such an input's value is then absent from vals). On error
 * nothing is written and the message names the node. */
mpx_status mpx_fuse_run(const mpx_graph *g, const mpx_assign *a, int first, int count,
                        mpx_value *vals, const bool *needed, const bool *dead, mpx_error *err);

#endif
