/* kern_internal.h - the kernels' helpers: the accumulator every sum goes
 * through, broadcasting, the thread pool, the weights kept on the graph,
 * the kernel declarations the table in kernels.c is built from, and the
 * pieces of kernels run/ reuses (fuse.c's plain chains, the executor's
 * rounded weights). Folders above kernels/ in numerics/ (run/) may include
 * it; nothing outside numerics/ does (the tests aside). */
#ifndef MPX_KERN_INTERNAL_H
#define MPX_KERN_INTERNAL_H

#include "formats_internal.h"
#include "mpx_kernels.h"

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

/* The broadcast walk in rows (kern_binary.c): the output of the given rank
 * and dims is walked in rows of its innermost dim after merging adjacent
 * dims that every input (nin of them, at most MPX_K_WALK_MAX_IN) steps
 * through alike. fn is called once per row with the row's length n, its
 * first output element yo, and for each input k its first element off[k]
 * and its step step[k], which is 0 (broadcast) or 1. kern_binary.c's fp32
 * and integer ops and kern_f64.c's broadcasting ops and MatMul batches are
 * its callers. */
enum { MPX_K_WALK_MAX_IN = 3 };
typedef struct mpx_k_bwalk {
    int rank; /* >= 1 */
    int64_t dims[MPX_MAX_RANK];
    int nin;
    int64_t st[MPX_K_WALK_MAX_IN][MPX_MAX_RANK];
} mpx_k_bwalk;
typedef void (*mpx_k_row_fn)(void *ctx, int64_t n, int64_t yo, const int64_t *off, const int64_t *step);
void mpx_k_bwalk_init(mpx_k_bwalk *w, int rank, const int64_t *dims, int nin, const mpx_value *const *v);
void mpx_k_bwalk_run(const mpx_k_bwalk *w, void *ctx, mpx_k_row_fn fn);

/* ---- threads ------------------------------------------------------------------ */

/* fn(ctx, tid, item) for every item < n on up to nt threads (tid < nt).
 * Thread t's home range is items kg_home_first(n, t, nt) up to
 * kg_home_first(n, t + 1, nt), which it claims from the front, a
 * kg_claim_run of what is left at a time; a thread whose range is empty
 * claims the same from the back of the range with the most left
 * (kern_threads.c), so items may take different times. Called from an item
 * of a job on two or more threads, it runs every item on the calling thread
 * (the other threads are busy with the outer job). */
void mpx_k_parallel(long n, int nt, void (*fn)(void *, int, long), void *ctx);
/* The first item of thread t's home range in a job of n items on nt
 * threads; kg_home_first(n, nt, nt) is n. */
static inline int64_t kg_home_first(int64_t n, int t, int nt) { return n * t / nt; }
/* How many items one claim takes of a range with `left` of them: a quarter,
 * at least one (the last ones singly, so the threads' ends even out). The
 * pool and the GEMM core's model of it (kern_gemm.c kg_makespan) both use
 * this. */
static inline int64_t kg_claim_run(int64_t left) { return left / 4 > 1 ? left / 4 : 1; }
/* mpx_k_parallel for a job that may stop early: no item starts once a
 * cancel is asked for (mpx_k_cancelled, read before each item); false when
 * an item was left out. Only for work whose results are the node's own
 * outputs, which the executor then drops (exec.c): never for packings or
 * rounded copies kept between runs (kern_kept.c, kern_rounded.c), which
 * must be whole once made. */
bool mpx_k_parallel_stoppable(long n, int nt, void (*fn)(void *, int, long), void *ctx);
/* Cancellation inside kernels. The process-wide flag (mpx_set_cancel_flag
 * in mpx_run.h sets it) and the calling thread's scope (a comparison's
 * opts.cancel around its steps; the previous scope is returned, to put
 * back): mpx_k_cancelled is true when either is non-zero. A long kernel
 * checks it between blocks of work and may then return early with any
 * values: once a cancel is asked for, the executor discards what a kernel
 * returns (exec.c), so a flag must stay set until the run returns. */
void mpx_k_set_cancel_flag(const volatile int *flag);
const volatile int *mpx_k_cancel_scope(const volatile int *flag);
bool mpx_k_cancelled(void);
/* A thread other than the kernel pool's caller starts (true) or stops
 * (false) running kernels at the same time (compare_jobs.c's second job
 * thread): the pool's threads then sleep between jobs instead of spinning. */
void mpx_k_concurrent(bool enter);
/* Such a thread (either job thread) starts (true) or ends (false) a job:
 * while two are in one, parallel calls run on their callers' threads alone
 * (kern_threads.c). */
void mpx_k_busy(bool enter);
/* Starts the pool's workers a kernel may use now (a session's start, as a
 * runtime starts its thread pool), rather than at the first parallel job. */
void mpx_k_start_threads(void);
/* How many threads a kernel may use (kern_gemm.c: 2, or MPX_KERN_THREADS). */
int kg_threads(void);
/* Whether a parallel call made now runs on its caller's thread alone (two
 * job threads busy: mpx_k_busy), so a product planned now plans for one. */
bool kg_alone_now(void);

/* ---- helpers ------------------------------------------------------------------ */

/* The graph tensor whose own values `data` are (the graph's weights, float
 * or integer, or their rounded copy kept on the tensor; not a run's copy), found from the
 * node's input k back through Identity nodes (exec.c gives an Identity of a
 * constant a view of it); NULL when data is neither. The GEMM core keeps
 * packings on it (kern_gemm.c). */
mpx_tensor *mpx_k_value_owner(const mpx_kctx *c, int k, const void *data);
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
/* Whether op's kernel may take input 0's buffer, when it dies at the node,
 * for its output (kernels.def: MPX_KERNEL_TAKES_INPUT0). */
bool mpx_kernel_takes_input0(mpx_op op);
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
/* The axes a Reduce* node reduces (kern_reduce.c): mask[i] for each dim of
 * x, from the "axes" attribute or input 1 as the node's opset has them; no
 * axes reduces every dim, or none (*noop) with noop_with_empty_axes=1. */
mpx_status mpx_k_reduce_axes(const mpx_kctx *c, const mpx_value *x, const mpx_value *const *in, int n_in,
                             bool *mask, bool *noop);
/* Allocate out with the dtype and shape; a wrapper naming the node on error. */
mpx_status mpx_k_alloc(const mpx_kctx *c, mpx_value *out, mpx_dtype dt, int rank,
                       const int64_t *dims);
/* Not cleared (poisoned in sanitizer builds): only for kernels that write
 * every element of the output. */
mpx_status mpx_k_alloc_raw(const mpx_kctx *c, mpx_value *out, mpx_dtype dt, int rank,
                           const int64_t *dims);

/* ---- values and shapes ------------------------------------------------------- */

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

/* ---- kernel declarations -------------------------------------------------------- */

#define MPX_KERNEL(op, fn)                                                              \
    mpx_status fn(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, \
                  int n_out);
#include "kernels.def"
#undef MPX_KERNEL

/* The float64 kernels that live beside their fp32 kernels, sharing their
 * checks and index walks (kern_nn.c: the convolutions' geometry; kern_pool.c:
 * the windows and taps; kern_norm.c, kern_reduce.c, kern_matmul.c (Det),
 * kern_loss.c: the inputs and attributes; kern_resize.c: the axes and
 * coordinates; kern_rnn.c: the checks and the step walk); kernels_f64.def
 * names them with kern_f64.c's own. */
#define MPX_F64_SHARED(fn) \
    mpx_status fn(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out);
MPX_F64_SHARED(mpx_k_conv_f64)
MPX_F64_SHARED(mpx_k_deform_conv_f64)
MPX_F64_SHARED(mpx_k_pool_f64)
MPX_F64_SHARED(mpx_k_global_pool_f64)
MPX_F64_SHARED(mpx_k_batch_normalization_f64)
MPX_F64_SHARED(mpx_k_instance_normalization_f64)
MPX_F64_SHARED(mpx_k_layer_normalization_f64)
MPX_F64_SHARED(mpx_k_lp_normalization_f64)
MPX_F64_SHARED(mpx_k_group_normalization_f64)
MPX_F64_SHARED(mpx_k_lrn_f64)
MPX_F64_SHARED(mpx_k_resize_f64)
MPX_F64_SHARED(mpx_k_upsample_f64)
MPX_F64_SHARED(mpx_k_lstm_f64)
MPX_F64_SHARED(mpx_k_gru_f64)
MPX_F64_SHARED(mpx_k_rnn_f64)
MPX_F64_SHARED(mpx_k_einsum_f64)
MPX_F64_SHARED(mpx_k_cumsum_f64)
MPX_F64_SHARED(mpx_k_det_f64)
MPX_F64_SHARED(mpx_k_mean_variance_normalization_f64)
MPX_F64_SHARED(mpx_k_rms_normalization_f64)
MPX_F64_SHARED(mpx_k_nll_loss_f64)
MPX_F64_SHARED(mpx_k_softmax_cross_entropy_f64)
MPX_F64_SHARED(mpx_k_attention_f64)
#undef MPX_F64_SHARED

/* Softmax (log: LogSoftmax) of float64 rows in double (kern_f64.c): outer
 * blocks of len values inner apart, each row's largest value subtracted,
 * libm's exp and log, the sum in order. SoftmaxCrossEntropyLoss's float64
 * log_softmax (kern_loss.c) is the same rows. */
void mpx_k_softmax_rows_f64(const double *x, double *y, int64_t outer, int64_t len, int64_t inner, bool lg);

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

/* Sigmoid's and Tanh's fp32 kernels over n values (kern_elem.c: ke_sigmoid
 * and ke_tanh, vectorised; x and y may be the same array), and one channel's run
 * of an inference BatchNormalization, (x - mean) / sqrt(var + eps) * scale
 * + bias (kern_norm.c): the functions their kernels run, so that fuse.c's
 * plain chains compute the same bits without a second copy of either. */
void mpx_k_sigmoid_map(const float *x, float *y, int64_t n);
void mpx_k_tanh_map(const float *x, float *y, int64_t n);
/* mpx_k_sigmoid_map in vector form vec (kern_elem.h's ke_vec, AVX-512
 * included), and the form this CPU and the environment choose
 * (ke_vec_now), read once by the caller: fuse.c, once a group. */
int mpx_k_vec_now(void);
void mpx_k_sigmoid_map_vec(const float *x, float *y, int64_t n, int vec);
/* Erf's fp32 map in vector form vec, as mpx_k_sigmoid_map_vec (kern_elem.c's ke_erf_map). */
void mpx_k_erf_map_vec(const float *x, float *y, int64_t n, int vec);
void mpx_k_bn_row(const float *x, float *y, int64_t n, float mean, float var, float eps, float scale, float bias);
/* HardSwish over n values (kern_elem.c), x t with t = x / 6 + 1/2 clamped
 * to [0, 1]: its kernel's map and fuse.c's plain chains. */
void mpx_k_hard_swish_row(const float *x, float *y, int64_t n);


#endif
