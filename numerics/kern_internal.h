/* kern_internal.h - what the kernel files (kernels.c, kern_*.c) and the
 * executor share: the accumulator every sum goes through, broadcasting, and
 * the kernel declarations the table in kernels.c is built from.
 * Nothing outside numerics/ includes this. */
#ifndef MPX_KERN_INTERNAL_H
#define MPX_KERN_INTERNAL_H

#include "mpx_numerics.h"

#include <string.h>

/* ---- accumulation (DESIGN section 3, mpx_accum in the public header) ------- */

/* One running sum. fp32 accumulation is a plain float sum (the reference);
 * otherwise the sum is rounded to the accumulate format after every addition
 * (the exact sum rounded once: mpx_round_sum) or, with a block size, after
 * every block of terms summed in fp32. Every
 * reduction in every kernel goes through this so the order is the documented
 * one: terms in the order the kernel adds them. */
typedef struct mpx_acc {
    float sum;
    float blk;
    int nblk;
    int block;
    const mpx_format *f; /* NULL: fp32 */
} mpx_acc;

/* The accumulation's fp16 step inline (mpx_acc_add runs it per term, and
 * the calls into format.c were half of an fp16-accumulated BERT-style
 * encoder's LayerNormalization and Softmax sums): s + t made round-to-odd
 * in fp32 (Fast2Sum, as mpx_round_sum), then rounded to fp16 with integer
 * operations: to 13 fewer bits in fp16's normal range, to a multiple of
 * 2^-24 below it (through the float addition of 1.5 * 2^-1, exact there),
 * infinity from 65520; NaN and infinite sums through mpx_round_value.
 * Bit for bit mpx_round_sum(fp16): test_formats checks the rounding on all
 * 2^32 floats (MPX_EXHAUSTIVE=1) or a stride of them, the sum with
 * mpx_round_sum's tests. */
static inline float mpx_fp16_round_inline(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    const uint32_t a = u & 0x7fffffffu, sign = u & 0x80000000u;
    uint32_t r;
    if (a >= 0x7f800000u) return mpx_round_value(&mpx_format_fp16, x);
    if (a >= 0x477ff000u) { /* 65520 and above: beyond half an ulp past 65504 */
        r = sign | 0x7f800000u;
    } else if (a >= 0x38800000u) { /* fp16 normal: 10 mantissa bits */
        r = (u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu;
    } else { /* fp16 subnormal or zero: a multiple of 2^-24 */
        float m;
        uint32_t am = a;
        memcpy(&m, &am, sizeof m);
        const float q = (m + 0x1p-1f) - 0x1p-1f; /* RNE to 2^-24: 0.5's ulp */
        memcpy(&r, &q, sizeof r);
        r |= sign;
    }
    float y;
    memcpy(&y, &r, sizeof y);
    return y;
}

/* s + t made round-to-odd in fp32 (format.c's mpx_round_sum explains). */
static inline float mpx_ro_sum(float s, float t) {
    float r = s + t;
    uint32_t ur, us, ut;
    memcpy(&ur, &r, sizeof ur);
    memcpy(&us, &s, sizeof us);
    memcpy(&ut, &t, sizeof ut);
    if ((ur & 0x7fffffffu) >= 0x7f800000u) {
        if ((us & 0x7fffffffu) < 0x7f800000u && (ut & 0x7fffffffu) < 0x7f800000u)
            ur = (ur & 0x80000000u) | 0x7f7fffffu; /* beyond fp32: the largest float */
    } else {
        const bool s_big = (us & 0x7fffffffu) >= (ut & 0x7fffffffu);
        const float big = s_big ? s : t, small = s_big ? t : s;
        const float e = small - (r - big);
        uint32_t ue;
        memcpy(&ue, &e, sizeof ue);
        if (e != 0.0f && !(ur & 1u)) ur = ((ue ^ ur) >> 31) ? ur - 1u : ur + 1u;
    }
    memcpy(&r, &ur, sizeof r);
    return r;
}

static inline void mpx_acc_init(mpx_acc *a, const mpx_accum *m, float init) {
    a->f = (m && m->fmt && m->fmt->kind != MPX_FMT_FP32) ? m->fmt : NULL;
    /* fp32: blocks of MPX_ACC_FP32_BLOCK (see mpx_accum in the header). */
    a->block = a->f ? (m ? m->block : 0) : MPX_ACC_FP32_BLOCK;
    a->sum = a->f ? mpx_round_value(a->f, init) : init;
    a->blk = 0.0f;
    a->nblk = 0;
}

static inline void mpx_acc_add(mpx_acc *a, float term) {
    if (!a->f) {
        a->blk += term;
        if (++a->nblk == a->block) {
            a->sum += a->blk;
            a->blk = 0.0f;
            a->nblk = 0;
        }
    } else if (a->block <= 0) {
        a->sum = a->f->kind == MPX_FMT_FP16 ? mpx_fp16_round_inline(mpx_ro_sum(a->sum, term))
                                            : mpx_round_sum(a->f, a->sum, term);
    } else {
        a->blk += term;
        if (++a->nblk == a->block) {
            a->sum = mpx_round_sum(a->f, a->sum, mpx_round_value(a->f, a->blk));
            a->blk = 0.0f;
            a->nblk = 0;
        }
    }
}

/* The sum (a partial last block is added as a block). */
static inline float mpx_acc_result(mpx_acc *a) {
    if (!a->f) {
        if (a->nblk > 0) a->sum += a->blk;
        a->blk = 0.0f;
        a->nblk = 0;
    } else if (a->block > 0 && a->nblk > 0) {
        a->sum = mpx_round_sum(a->f, a->sum, mpx_round_value(a->f, a->blk));
        a->blk = 0.0f;
        a->nblk = 0;
    }
    return a->sum;
}

/* The node computes in fp16, so the executor gave it its float inputs as fp16
 * values: products of them are exact in fp32 and an fp16-accumulated sum of
 * them is a chain of fp16 fused multiply-adds (the GEMM core's kg_gemm.f16). */
static inline bool mpx_k_f16_operands(const mpx_kctx *c) {
    return c->round && c->round->kind == MPX_FMT_FP16;
}

/* True when sums need no rounding, so a kernel may take its plain fp32 loop. */
static inline bool mpx_acc_is_fp32(const mpx_accum *m) {
    return !m || !m->fmt || m->fmt->kind == MPX_FMT_FP32;
}

/* ---- broadcasting (numpy / ONNX multidirectional rules) --------------------- */

/* Output shape of broadcasting n shapes; error names the node and the shapes. */
mpx_status mpx_k_bcast_shape(const mpx_kctx *c, int n, const mpx_value *const *v, int *rank,
                             int64_t *dims);
/* Element strides of v viewed in an output of the given rank and dims: 0 on
 * broadcast dims. */
void mpx_k_bcast_strides(const mpx_value *v, int rank, const int64_t *dims, int64_t *strides);

/* ---- threads ------------------------------------------------------------------ */

/* fn(ctx, tid, item) for every item < n on up to nt threads (tid < nt); the
 * items are handed out one by one, so they may take different times. Called
 * from an item of a job on two or more threads, it runs every item on the
 * calling thread (the other threads are busy with the outer job). */
void mpx_k_parallel(long n, int nt, void (*fn)(void *, int, long), void *ctx);
/* A thread other than the kernel pool's caller starts (true) or stops
 * (false) running kernels at the same time (compare_jobs.c's second job
 * thread): the pool's threads then sleep between jobs instead of spinning. */
void mpx_k_concurrent(bool enter);
/* How many threads a kernel may use (kern_gemm.c: 2, or MPX_KERN_THREADS). */
int kg_threads(void);

/* One copy of a function per ISA listed, picked when the program loads
 * (GCC's target clones; elsewhere the plain function): for loops whose each
 * element is the same IEEE operations whatever the vector width, so every
 * copy gives the same bits.
 *
 * Clones name CPU features or feature levels (x86-64-v3: AVX2, FMA, F16C,
 * BMI2...), never a CPU model: GCC picks an "arch=haswell" clone by the
 * model (__builtin_cpu_is), so it ran on Haswell alone and every AMD CPU,
 * and every later Intel one without AVX-512, took the baseline, whose fmaf
 * is a libm call (EfficientNet-B0's forward on a Zen 3: 211 ms, 28 with the
 * vector copy); "arch=x86-64-v3" is picked by features. A lone "fma" clone is
 * no substitute: without AVX2's integer lanes GCC vectorised Sigmoid 4
 * lanes wide. MPX_K_CLONED says whether functions are cloned (test_clones
 * holds the FMA list's loops to their vector copies). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MPX_K_CLONES(...) __attribute__((target_clones(__VA_ARGS__)))
#define MPX_K_CLONED 1
#else
#define MPX_K_CLONES(...)
#define MPX_K_CLONED 0
#endif
/* For loops with fused multiply-adds. */
#define MPX_K_CLONES_FMA MPX_K_CLONES("avx512f", "arch=x86-64-v3", "default")

/* ---- helpers ------------------------------------------------------------------ */

/* The graph tensor whose own values `data` are (the graph's weights, or
 * their rounded copy kept on the tensor; not a run's copy), found from the
 * node's input k back through Identity nodes (exec.c gives an Identity of a
 * constant a view of it); NULL when data is neither. The GEMM core keeps
 * packings on it (kern_gemm.c). */
mpx_tensor *mpx_k_value_owner(const mpx_kctx *c, int k, const float *data);
/* t's own values rounded to f, made on first use and kept on t (freed with
 * the graph, dropped when t's values move); NULL past the process's budget
 * for such copies or out of memory (the caller rounds a copy of its own). */
const float *mpx_k_kept_rounded(mpx_tensor *t, const mpx_format *f);
/* t's values rounded to f: the copy kept on t, else (past the budget) one
 * made for this call in *owned, which the caller frees; NULL out of memory
 * (or t holds no values). */
const float *mpx_k_rounded_values(mpx_tensor *t, const mpx_format *f, float **owned);

/* Whether op's kernel may be handed input k as a constant's own values with
 * the format to read them in (kernels.def: MPX_KERNEL_READS_ROUNDED). */
bool mpx_kernel_reads_rounded(mpx_op op, int input);
/* Whether environment variable name is set, non-empty and not "0" (the
 * kernels' and the comparison's switches: MPX_KERN_*, MPX_CMP_*). */
bool mpx_env_on(const char *name);
/* Whether op computes each output element from the input elements at its
 * place alone (kernels.def: MPX_KERNEL_POINTWISE). */
bool mpx_kernel_pointwise(mpx_op op);
/* The format input k is to be read in, when the executor handed the
 * constant's own values unrounded (mpx_kctx.in_round); NULL otherwise. */
const mpx_format *mpx_k_in_round(const mpx_kctx *c, int k);
/* For a route that reads input k where it lies: where it came unrounded,
 * *v becomes a view of its rounded values (the copy kept on the constant,
 * else one made for this call in *owned, which the caller frees) and *c a
 * copy of the context (in *local) without in_round, so that nothing below
 * rounds it again. A no-op (MPX_OK, *owned NULL) otherwise. */
mpx_status mpx_k_in_rounded(const mpx_kctx **c, mpx_kctx *local, int k, const mpx_value **v, mpx_value *local_v,
                            float **owned);

/* Normalise an axis in [-rank, rank) (or [-rank-1, rank] when extra = 1);
 * error names the node. */
mpx_status mpx_k_axis(const mpx_kctx *c, int64_t axis, int rank, int extra, int *out);
/* Allocate out with the dtype and shape; a wrapper naming the node on error. */
mpx_status mpx_k_alloc(const mpx_kctx *c, mpx_value *out, mpx_dtype dt, int rank,
                       const int64_t *dims);
/* Not cleared (poisoned in sanitizer builds): only for kernels that write
 * every element of the output. */
mpx_status mpx_k_alloc_raw(const mpx_kctx *c, mpx_value *out, mpx_dtype dt, int rank,
                           const int64_t *dims);

/* ---- the executor's step on given input values (exec.c) ----------------------- */

/* A value has the shape the graph gives its tensor (rank and dims). */
static inline bool mpx_k_same_shape(const mpx_value *v, const mpx_tensor *t) {
    if (v->rank != t->rank) return false;
    for (int i = 0; i < v->rank; i++)
        if (v->dims[i] != t->dims[i]) return false;
    return true;
}

/* Two values of one shape (rank and dims). */
static inline bool mpx_k_same_dims(const mpx_value *a, const mpx_value *b) {
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

/* Free n values (outputs a kernel or a run made). */
static inline void mpx_k_free_values(mpx_value *v, int n) {
    for (int j = 0; v && j < n; j++) mpx_value_free(&v[j]);
}

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

/* Whether running n under a converts nothing: no input or output of it is
 * rounded (a NULL, or the node and its outputs in fp32). */
bool mpx_exec_node_plain(const mpx_assign *a, const mpx_node *n);

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

/* ---- kernel declarations -------------------------------------------------------- */

#define MPX_KERNEL(op, fn)                                                              \
    mpx_status fn(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, \
                  int n_out);
#include "kernels.def"
#undef MPX_KERNEL

/* The rounding the executor offers for a float output 0 (mpx_kctx.out_round;
 * NULL: none). A kernel taking it rounds its output in pieces of
 * MPX_K_ROUND_PIECE values as it makes them, each while it is in L1 (the
 * executor's pass over the whole output afterwards read and wrote it from
 * memory again: det's report spent a quarter of its time in elementwise
 * operations and that rounding), and sets *c->out_rounded. */
enum { MPX_K_ROUND_PIECE = 2048 };
static inline const mpx_format *mpx_k_out_round(const mpx_kctx *c) {
    return c->out_round && c->out_rounded ? c->out_round : NULL;
}

/* Clip's bounds for node n (kern_elem.c): its min/max attributes before
 * opset 11, else its optional one-value inputs lo and hi (NULL: absent),
 * as its kernel applies them; fuse.c's plain chains take them from here. */
void mpx_k_clip_bounds(const mpx_node *n, const mpx_value *lo, const mpx_value *hi, float *l, float *h);

/* Sigmoid's fp32 kernel over n values (kern_elem.c), and one channel's run
 * of an inference BatchNormalization, (x - mean) / sqrt(var + eps) * scale
 * + bias (kern_norm.c): the functions their kernels run, so that fuse.c's
 * plain chains compute the same bits without a second copy of either. */
void mpx_k_sigmoid_map(const float *x, float *y, int64_t n);
void mpx_k_bn_row(const float *x, float *y, int64_t n, float mean, float var, float eps, float scale, float bias);

/* The CPU has F16C (format.c; callers also check AVX). */
bool mpx_cpu_has_f16c(void);
/* The CPU has AVX512-FP16 (format.c; callers also check AVX-512F). */
bool mpx_cpu_has_avx512fp16(void);

#endif
