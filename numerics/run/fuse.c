/* fuse.c - runs a chain of elementwise nodes tile by tile.
 *
 * Why: in a CNN's fp32 forward most non-convolution time is elementwise
 * nodes over the largest tensors (hard-swish is Add, Clip, Mul, Div after
 * every BatchNormalization), each reading and writing the whole tensor.
 * ONNX Runtime fuses such chains into the convolution with other roundings;
 * mpx must keep every node's exact output, so instead it runs the chain one
 * tile (a few thousand elements) at a time: every node of the chain on
 * tile 1, then on tile 2, ..., so intermediate values stay in cache and
 * only the values someone needs are written out whole.
 *
 * Exact by construction: a tile runs the same kernel through the same
 * executor step (mpx_exec_node_with: the node's input conversions, kernel
 * and output rounding) on views of the tile, and every op fused here
 * computes each element from the elements at the same place alone, so the
 * bits are those of the whole-tensor run. Operands that broadcast (a
 * per-channel scale, Clip's bounds, BatchNormalization's parameters) must
 * be one value over each tile: tiles never cross a plane over which such
 * an operand is constant.
 *
 * The executor (exec.c) asks mpx_fuse_span for a group starting at a node
 * and runs it with mpx_fuse_run. */
#include "kern_internal.h"
#include "run_internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum {
    FUSE_TILE = 8192,       /* elements per tile: a chain's tiles fit in L2 */
    FUSE_MIN_ELEMS = 1 << 16, /* smaller ones stay in L2 anyway (2^16 beat 2^17 on rec) */
    FUSE_MIN_PLANE = 1024,  /* a broadcast operand constant over fewer: tiles too short */
    FUSE_MAX_NODES = MPX_FUSE_MAX_NODES,
    FUSE_PAR_MIN = 1 << 17, /* element-steps (elements x nodes) worth two threads: the pool's
                               workers spin between jobs, so a second thread pays from here */
};

static bool known_float(const mpx_tensor *t) {
    if (!t || !mpx_dtype_is_float(t->dtype) || t->dtype == MPX_DT_DOUBLE || t->rank < 1 || t->rank > MPX_MAX_RANK)
        return false;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] < 0) return false;
    return true;
}

static bool same_dims(const mpx_tensor *a, const mpx_tensor *b) {
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

/* How operand t is read by a node whose output is out: strides over out's
 * dims (0 where broadcast), whether it is out's own layout ("full"), and the
 * largest product of trailing out dims over which it is one value. */
typedef struct operand {
    int64_t st[MPX_MAX_RANK];
    bool full;
    int64_t plane;
} operand;

static bool describe(const mpx_tensor *t, const mpx_tensor *out, bool per_channel, operand *o) {
    int r = out->rank;
    if (per_channel) { /* BatchNormalization's [C] parameters, read at dim 1 */
        if (t->rank != 1 || r < 2 || t->dims[0] != out->dims[1]) return false;
        for (int i = 0; i < r; i++) o->st[i] = i == 1 ? 1 : 0;
    } else { /* numpy broadcasting, as the kernels walk it */
        if (t->rank > r) return false;
        int off = r - t->rank;
        mpx_value shape = {.rank = t->rank};
        for (int j = 0; j < t->rank; j++) {
            if (t->dims[j] != 1 && t->dims[j] != out->dims[off + j]) return false;
            shape.dims[j] = t->dims[j];
        }
        mpx_k_bcast_strides(&shape, r, out->dims, o->st);
    }
    o->full = true;
    int64_t s = 1;
    for (int i = r - 1; i >= 0; i--) {
        if (out->dims[i] != 1 && o->st[i] != s) o->full = false;
        s *= out->dims[i];
    }
    o->plane = 1;
    for (int i = r - 1; i >= 0 && (o->st[i] == 0 || out->dims[i] == 1); i--) o->plane *= out->dims[i];
    return true;
}

/* Node n alone: can it run by tiles of its output? *plane receives the tile
 * bound its broadcast operands set (its output size when none). */
static bool node_ok(const mpx_node *n, int64_t *plane) {
    /* A node of an If's branch runs only when its branch is taken
     * (mpx_exec_node decides, node by node). */
    if (n->guard) return false;
    if (!mpx_kernel_pointwise(n->op) || n->n_outputs < 1 || !known_float(n->outputs[0])) return false;
    for (int j = 1; j < n->n_outputs; j++)
        if (n->outputs[j]) return false;
    const mpx_tensor *out = n->outputs[0];
    if (out->nelem < FUSE_MIN_ELEMS) return false;
    bool bn = n->op == MPX_OP_BatchNormalization;
    if (bn && (mpx_node_attr_int(n, "training_mode", 0) != 0 ||
               (n->opset > 0 && n->opset < 9 && mpx_node_attr_int(n, "spatial", 1) == 0) ||
               n->n_inputs != 5))
        return false;
    *plane = out->nelem;
    bool any_full = false;
    for (int j = 0; j < n->n_inputs; j++) {
        const mpx_tensor *t = n->inputs[j];
        if (!t) continue;
        if (!known_float(t) && !(t->rank == 0 && mpx_dtype_is_float(t->dtype) && t->dtype != MPX_DT_DOUBLE)) return false;
        operand o;
        if (t->rank == 0) {
            memset(&o, 0, sizeof o);
            o.plane = out->nelem;
        } else if (!describe(t, out, bn && j > 0, &o)) {
            return false;
        }
        if (o.full && (!bn || j == 0)) {
            any_full = true;
            continue;
        }
        if (bn && j == 0) return false;
        if (o.plane < FUSE_MIN_PLANE) return false;
        if (o.plane < *plane) *plane = o.plane;
    }
    return any_full;
}

/* MPX_FUSE=0 runs every node on its own (to measure what fusing gives, or
 * to rule it out when chasing a problem). */
bool mpx_fuse_enabled(void) {
    const char *e = getenv("MPX_FUSE");
    return !(e && strcmp(e, "0") == 0);
}

int mpx_fuse_span(const mpx_graph *g, int first) {
    if (!g || first < 0 || first >= g->n_nodes) return 0;
    const mpx_node *n0 = g->nodes[first];
    int64_t plane;
    if (mpx_exec_skipped(n0) || !node_ok(n0, &plane)) return 0;
    const mpx_tensor *shape = n0->outputs[0];
    int last = first;
    /* Constant nodes (not run: their values come from the graph) may sit
     * between a chain's nodes in topological order, as exporters emit the
     * scalar of each x + 3 just before it: they are stepped over. */
    for (int k = first + 1; k < g->n_nodes && k - first < FUSE_MAX_NODES; k++) {
        const mpx_node *n = g->nodes[k];
        if (mpx_exec_skipped(n)) continue;
        if (!node_ok(n, &plane) || !same_dims(n->outputs[0], shape)) break;
        last = k;
    }
    return last - first + 1;
}

/* ---- running a group -------------------------------------------------------------------- */

typedef struct fin {
    const mpx_value *ext; /* an outside value (NULL: a value of the group) */
    int member;           /* the group node that makes it, when ext is NULL */
    operand o;
    bool scalar;          /* rank 0 */
} fin;

/* The ops a plain chain runs without the executor (run_direct). */
typedef enum fop { FOP_NONE, FOP_ADD, FOP_SUB, FOP_MUL, FOP_DIV, FOP_CLIP, FOP_RELU, FOP_SIGMOID, FOP_BN, FOP_HARDSWISH, FOP_ERF } fop;

typedef struct fnode {
    const mpx_node *n;
    bool skip;         /* a Constant node inside the span: not run */
    fop op;            /* run_direct's op (FOP_NONE: the group runs through the executor) */
    float lo, hi;      /* Clip's bounds */
    float eps;         /* BatchNormalization's epsilon */
    fin in[8];
    bool out_needed;
    int donor;         /* the outside input whose buffer the output takes (give_buffers), or -1 */
    mpx_dtype dt;      /* the output's dtype, as the first tile's kernel set it */
} fnode;

typedef struct fgroup {
    const mpx_assign *a;
    int count;
    fnode *nodes;
    const mpx_tensor *shape;
    int64_t total, plane, tile, tiles_per_plane;
    mpx_value *outs;   /* [count]: whole outputs written (n = -1 when not needed) */
    float **scratch;   /* [nt]: count x tile floats per thread for the other outputs */
    bool direct;       /* every node plain fp32 arithmetic: run_direct */
    int vec;           /* Sigmoid's and Erf's vector form (mpx_k_vec_now: the environment read once a group) */
    int nt;
    mpx_error *errs;   /* [nt] */
    mpx_status *st;    /* [nt] */
    atomic_int failed;
} fgroup;

/* The offset in an operand of output element `flat`. */
static int64_t operand_offset(const fgroup *f, const operand *o, int64_t flat) {
    int64_t off = 0;
    for (int i = f->shape->rank - 1; i >= 0; i--) {
        int64_t d = f->shape->dims[i];
        off += (flat % d) * o->st[i];
        flat /= d;
    }
    return off;
}

static void view(mpx_value *v, mpx_dtype dt, float *data, int64_t n, int rank) {
    memset(v, 0, sizeof *v);
    v->dtype = dt;
    v->rank = rank;
    for (int i = 0; i < rank; i++) v->dims[i] = 1;
    if (rank > 0) v->dims[rank - 1] = n;
    v->n = n;
    v->f = data;
    v->borrowed = true;
}

/* ---- a plain fp32 chain, without the executor ------------------------------------------
 * Why: where nothing is rounded (the fp32 forward, a comparison's reference)
 * and every node is an IEEE operation per element (Add, Sub, Mul, Div, Clip,
 * Relu; Sigmoid, Erf, HardSwish and inference BatchNormalization through the functions
 * their kernels run), the executor's per-node, per-tile step (views, kernel lookup,
 * output values) and the tile's trips through L2 cost more than the
 * arithmetic: rec's forward spent a quarter of its time in these chains
 * (PP-LCNetV3's affine blocks and hard-swish, eight nodes after every
 * convolution). Here the tile is cut into blocks of FUSE_BLOCK elements
 * that stay in L1, and each node is one vector loop over its block. Each
 * element is the same operation on the same operands as the node's kernel
 * (kern_binary.c's frow, kern_elem.c's Clip and Relu maps), so the bits are
 * the executor's; only the values someone needs are written out whole. */
enum { FUSE_BLOCK = 512 };

/* Clip's and Relu's selects on a run (step 1), 8 elements a step as masks
 * of the lanes' comparisons: the same comparisons and the same value
 * chosen for each element as the scalar loops (NaN, -0 and all), which
 * GCC leaves scalar (its if-conversion of the selects waits on
 * -fno-trapping-math): on MobileNetV3-Small's BatchNormalization + Relu
 * chains over 72 x 56 x 56 the scalar Relu was a third of the chain. */
typedef float fv8 __attribute__((vector_size(32)));
typedef int32_t fi8 __attribute__((vector_size(32)));

/* x = m ? yes : no, lane by lane (m: a comparison's all-ones or zero lanes) */
#define FV8_PICK(x, m, yes, no)                                                                      \
    do {                                                                                             \
        fi8 ya_, no_;                                                                                \
        const fv8 yv_ = (yes), nv_ = (no);                                                           \
        memcpy(&ya_, &yv_, sizeof ya_);                                                              \
        memcpy(&no_, &nv_, sizeof no_);                                                              \
        ya_ = (ya_ & (m)) | (no_ & ~(m));                                                            \
        memcpy(&(x), &ya_, sizeof ya_);                                                              \
    } while (0)

static inline __attribute__((always_inline)) int64_t clip_run(const float *a, float lo, float hi, float *y,
                                                              int64_t n) {
    const fv8 vlo = {lo, lo, lo, lo, lo, lo, lo, lo}, vhi = {hi, hi, hi, hi, hi, hi, hi, hi};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        fv8 x;
        memcpy(&x, a + i, sizeof x);
        FV8_PICK(x, x < vlo, vlo, x);
        FV8_PICK(x, x > vhi, vhi, x);
        memcpy(y + i, &x, sizeof x);
    }
    return i;
}

/* One node on n elements: a and b are runs (step 1) or one value (step 0). */
MPX_K_CLONES("avx512f", "avx2", "default")
static void direct_op(fop op, float lo, float hi, const float *a, int64_t sa, const float *b, int64_t sb,
                      float *y, int64_t n) {
#define DROW(expr)                                                                                   \
    do {                                                                                             \
        if (sa && sb) for (int64_t i = 0; i < n; i++) { const float A = a[i], B = b[i]; y[i] = (expr); } \
        else if (sa) { const float B = b[0]; for (int64_t i = 0; i < n; i++) { const float A = a[i]; y[i] = (expr); } } \
        else if (sb) { const float A = a[0]; for (int64_t i = 0; i < n; i++) { const float B = b[i]; y[i] = (expr); } } \
        else { const float A = a[0], B = b[0]; for (int64_t i = 0; i < n; i++) y[i] = (expr); }    \
    } while (0)
    switch (op) {
    case FOP_ADD: DROW(A + B); break;
    case FOP_SUB: DROW(A - B); break;
    case FOP_MUL: DROW(A * B); break;
    case FOP_DIV: DROW(A / B); break;
    case FOP_CLIP:
        for (int64_t i = sa == 1 ? clip_run(a, lo, hi, y, n) : 0; i < n; i++) {
            const float v = a[i * sa] < lo ? lo : a[i * sa];
            y[i] = v > hi ? hi : v;
        }
        break;
    case FOP_RELU: {
        const fv8 z = {0};
        int64_t i = 0;
        for (; sa == 1 && i + 8 <= n; i += 8) {
            fv8 x;
            memcpy(&x, a + i, sizeof x);
            FV8_PICK(x, x < z, z, x);
            memcpy(y + i, &x, sizeof x);
        }
        for (; i < n; i++) y[i] = a[i * sa] < 0.0f ? 0.0f : a[i * sa];
        break;
    }
    case FOP_SIGMOID: case FOP_BN: case FOP_HARDSWISH: case FOP_ERF: case FOP_NONE: break; /* (run_direct's own calls) */
    }
#undef DROW
}

static void run_direct(fgroup *f, int tid, int64_t start, int64_t len) {
    float *buf = f->scratch[tid]; /* count x FUSE_BLOCK floats */
    /* The operands that are one value over the tile, found once for it
     * (operand_offset divides by each dimension: found per block, its
     * divisions were a tenth of a BatchNormalization + Relu chain's time). */
    const float *one[FUSE_MAX_NODES][5];
    for (int k = 0; k < f->count; k++)
        for (int j = 0; j < 5 && j < f->nodes[k].n->n_inputs; j++) {
            const fin *in = &f->nodes[k].in[j];
            one[k][j] = !f->nodes[k].skip && in->ext && !in->scalar && !in->o.full
                            ? in->ext->f + operand_offset(f, &in->o, start)
                            : NULL;
        }
    for (int64_t b0 = 0; b0 < len; b0 += FUSE_BLOCK) {
        const int64_t n = len - b0 < FUSE_BLOCK ? len - b0 : FUSE_BLOCK, at = start + b0;
        for (int k = 0; k < f->count; k++) {
            const fnode *fn = &f->nodes[k];
            if (fn->skip) continue;
            const float *src[5] = {NULL};
            int64_t step[5] = {0};
            const int nin = fn->op == FOP_BN                                                                 ? 5
                            : fn->op == FOP_CLIP || fn->op == FOP_RELU || fn->op == FOP_SIGMOID || fn->op == FOP_HARDSWISH || fn->op == FOP_ERF ? 1
                                                                                                                            : 2;
            for (int j = 0; j < nin; j++) {
                const fin *in = &fn->in[j];
                if (!in->ext) {
                    const fnode *m = &f->nodes[in->member];
                    src[j] = m->out_needed ? f->outs[in->member].f + at : buf + in->member * FUSE_BLOCK;
                    step[j] = 1;
                } else if (in->scalar) {
                    src[j] = in->ext->f;
                } else if (in->o.full) {
                    src[j] = in->ext->f + at, step[j] = 1;
                } else { /* one value over the tile (tiles never cross its plane) */
                    src[j] = one[k][j];
                }
            }
            float *y = fn->out_needed ? f->outs[k].f + at : buf + k * FUSE_BLOCK;
            if (fn->op == FOP_SIGMOID) /* (its input is a run: a member's or a full operand) */
                mpx_k_sigmoid_map_vec(src[0], y, n, f->vec);
            else if (fn->op == FOP_BN) /* X, then scale, B, mean, var: one value over the tile */
                mpx_k_bn_row(src[0], y, n, *src[3], *src[4], fn->eps, *src[1], *src[2]);
            else if (fn->op == FOP_HARDSWISH) /* (a run too, as Sigmoid's) */
                mpx_k_hard_swish_row(src[0], y, n);
            else if (fn->op == FOP_ERF) /* (a run too: GELU's Div, Erf, Add, Mul) */
                mpx_k_erf_map_vec(src[0], y, n, f->vec);
            else
                direct_op(fn->op, fn->lo, fn->hi, src[0], step[0], src[1], step[1], y, n);
        }
    }
}

/* The node's op for run_direct, or FOP_NONE: a plain node whose float
 * operands and output are fp32 (Clip's bounds one value each). */
static fop direct_of(const fgroup *f, const fnode *fn) {
    const mpx_node *n = fn->n;
    if (!mpx_exec_node_plain(f->a, n) || n->outputs[0]->dtype != MPX_DT_FLOAT) return FOP_NONE;
    /* an accum option that changes the op's steps (Sigmoid's steps, Div's
     * reciprocal) is its kernel's: an fp32 node with one runs there */
    const mpx_accum *acc = f->a ? &f->a->node[n->index].acc : NULL;
    if (acc && acc->flags && acc->fmt && acc->fmt->kind != MPX_FMT_FP32) return FOP_NONE;
    for (int j = 0; j < n->n_inputs; j++)
        if (n->inputs[j] && n->inputs[j]->dtype != MPX_DT_FLOAT) return FOP_NONE;
    switch (n->op) {
    case MPX_OP_Add: return n->n_inputs == 2 ? FOP_ADD : FOP_NONE;
    case MPX_OP_Sub: return n->n_inputs == 2 ? FOP_SUB : FOP_NONE;
    case MPX_OP_Mul: return n->n_inputs == 2 ? FOP_MUL : FOP_NONE;
    case MPX_OP_Div: return n->n_inputs == 2 ? FOP_DIV : FOP_NONE;
    case MPX_OP_Relu: return n->n_inputs == 1 ? FOP_RELU : FOP_NONE;
    case MPX_OP_HardSwish: return n->n_inputs == 1 && (!fn->in[0].ext || fn->in[0].o.full) ? FOP_HARDSWISH : FOP_NONE;
    case MPX_OP_Sigmoid: return n->n_inputs == 1 && (!fn->in[0].ext || fn->in[0].o.full) ? FOP_SIGMOID : FOP_NONE;
    case MPX_OP_Erf: return n->n_inputs == 1 && (!fn->in[0].ext || fn->in[0].o.full) ? FOP_ERF : FOP_NONE;
    case MPX_OP_BatchNormalization: /* inference (node_ok): X a run, the parameters per channel */
        for (int j = 1; j < 5; j++)
            if (!fn->in[j].ext || fn->in[j].scalar) return FOP_NONE;
        return n->n_inputs == 5 && (!fn->in[0].ext || fn->in[0].o.full) ? FOP_BN : FOP_NONE;
    case MPX_OP_Clip:
        for (int j = 1; j < n->n_inputs; j++)
            if (n->inputs[j] && (!fn->in[j].ext || fn->in[j].ext->n != 1)) return FOP_NONE;
        return n->n_inputs >= 1 && n->n_inputs <= 3 ? FOP_CLIP : FOP_NONE;
    default: return FOP_NONE;
    }
}

static void run_tile(void *vc, int tid, long item) {
    fgroup *f = vc;
    if (atomic_load(&f->failed)) return;
    if (f->direct) {
        const int64_t p = (int64_t)item / f->tiles_per_plane, t = (int64_t)item % f->tiles_per_plane;
        const int64_t len = f->plane - t * f->tile < f->tile ? f->plane - t * f->tile : f->tile;
        run_direct(f, tid, p * f->plane + t * f->tile, len);
        return;
    }
    int64_t p = (int64_t)item / f->tiles_per_plane, t = (int64_t)item % f->tiles_per_plane;
    int64_t start = p * f->plane + t * f->tile;
    int64_t len = f->plane - t * f->tile < f->tile ? f->plane - t * f->tile : f->tile;
    mpx_value tv[FUSE_MAX_NODES];
    int made = 0;
    mpx_status st = MPX_OK;
    for (int k = 0; k < f->count && st == MPX_OK; k++) {
        const fnode *fn = &f->nodes[k];
        const mpx_node *n = fn->n;
        if (fn->skip) {
            memset(&tv[k], 0, sizeof tv[k]);
            tv[k].n = -1;
            made = k + 1;
            continue;
        }
        bool bn = n->op == MPX_OP_BatchNormalization;
        mpx_value views[8];
        const mpx_value *srcs[8] = {0};
        for (int j = 0; j < n->n_inputs; j++) {
            const fin *in = &fn->in[j];
            if (!n->inputs[j]) continue;
            if (!in->ext) { /* a value made earlier in this tile */
                const mpx_value *m = &tv[in->member];
                view(&views[j], m->dtype, m->f, len, bn && j == 0 ? 3 : 1);
            } else if (in->scalar) {
                views[j] = *in->ext;
            } else if (in->o.full) {
                view(&views[j], in->ext->dtype, in->ext->f + start, len, bn && j == 0 ? 3 : 1);
            } else {
                view(&views[j], in->ext->dtype, in->ext->f + operand_offset(f, &in->o, start), 1,
                     1);
            }
            srcs[j] = &views[j];
        }
        /* Outputs written out go straight into place; the others into the
         * thread's scratch (no allocation per tile). */
        float *dest = fn->out_needed ? f->outs[k].f + start : f->scratch[tid] + k * f->tile;
        st = mpx_exec_node_with(n, f->a, srcs, &tv[k], dest, len, &f->errs[tid]);
        if (st != MPX_OK) break;
        made = k + 1;
        if (tv[k].n != len || !tv[k].f) {
            st = mpx_error_set(&f->errs[tid], MPX_E_INVALID,
                               "node \"%s\" (%s): a tile gave %lld values for %lld", n->name,
                               n->op_type, (long long)tv[k].n, (long long)len);
            break;
        }
        if (item == 0) f->nodes[k].dt = tv[k].dtype;
        if (fn->out_needed && tv[k].f != dest) /* the kernel did not write in place */
            memcpy(dest, tv[k].f, (size_t)len * sizeof(float));
    }
    for (int k = 0; k < made; k++) mpx_value_free(&tv[k]);
    if (st != MPX_OK) {
        if (f->st[tid] == MPX_OK) f->st[tid] = st;
        atomic_store(&f->failed, 1);
    }
}

/* ---- writing over a dead input ---------------------------------------------------------
 * Why: a chain's first operand and its output are whole tensors (det's 32 x
 * 320 x 320 maps, 13 MB): the output's stores went to a buffer last used
 * long ago, each line read from memory before it was written, and those
 * stores were most of run_direct's time in det's forward. Where the caller
 * says an outside input dies with the chain (dead, by tensor), an output
 * the chain writes out takes that input's buffer: each block's stores then
 * go to lines the block has just read. Only in a plain chain (run_direct:
 * each node reads its operands at the block's places before the output
 * node writes them, blocks and threads apart), only for the last node that
 * reads the input (no later node reads what was overwritten), and only for
 * a buffer the run owns (not a view, not a mapping) of the output's size.
 * run_direct cannot fail, so an input is never left half-overwritten. */
static bool reads_after(const fgroup *f, const mpx_graph *g, int first, int k, const mpx_tensor *t) {
    for (int q = k + 1; q < f->count; q++)
        for (int j = 0; !f->nodes[q].skip && j < g->nodes[first + q]->n_inputs; j++)
            if (g->nodes[first + q]->inputs[j] == t) return true;
    return false;
}

static void give_buffers(fgroup *f, const mpx_graph *g, int first, mpx_value *vals, const bool *dead) {
    for (int k = 0; k < f->count; k++) f->nodes[k].donor = -1;
    if (!dead || !f->direct) return;
    for (int k = f->count - 1; k >= 0; k--) {
        fnode *fn = &f->nodes[k];
        if (fn->skip || !fn->out_needed) continue;
        /* an outside input of this node or an earlier one, read by none after it */
        for (int q = 0; q <= k && fn->donor < 0; q++) {
            const mpx_node *n = g->nodes[first + q];
            for (int j = 0; !f->nodes[q].skip && j < n->n_inputs && fn->donor < 0; j++) {
                const mpx_tensor *t = n->inputs[j];
                const fin *in = &f->nodes[q].in[j];
                if (!t || !in->ext || in->scalar || !in->o.full || !dead[t->index]) continue;
                const mpx_value *v = &vals[t->index];
                if (!mpx_value_own_floats(v) || v->mapped || v->n != f->total || v->dtype != MPX_DT_FLOAT) continue;
                bool given = false;
                for (int o = k + 1; o < f->count && !given; o++) given = f->nodes[o].donor == t->index;
                if (!given && !reads_after(f, g, first, k, t)) fn->donor = t->index;
            }
        }
    }
}

mpx_status mpx_fuse_run(const mpx_graph *g, const mpx_assign *a, int first, int count,
                        mpx_value *vals, const bool *needed, const bool *dead, mpx_error *err) {
    if (count < 1 || count > FUSE_MAX_NODES || first < 0 || first + count > g->n_nodes)
        return mpx_error_set(err, MPX_E_ARG, "no group of nodes to run");
    fgroup f = {.a = a, .count = count, .shape = g->nodes[first]->outputs[0]};
    atomic_init(&f.failed, 0);
    f.total = f.shape->nelem;
    f.plane = f.total;
    f.nodes = calloc((size_t)count, sizeof *f.nodes);
    f.outs = calloc((size_t)count, sizeof *f.outs);
    /* A second thread only for large chains: waking it costs more than a
     * small chain's work (the PP-OCR classifier ran 1.7x slower). */
    f.nt = f.total * count >= FUSE_PAR_MIN ? kg_threads() : 1;
    if (f.nt < 1) f.nt = 1;
    f.errs = calloc((size_t)f.nt, sizeof *f.errs);
    f.st = calloc((size_t)f.nt, sizeof *f.st);
    mpx_status st = MPX_OK;
    if (!f.nodes || !f.outs || !f.errs || !f.st) {
        st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        goto done;
    }
    for (int k = 0; k < count; k++) f.outs[k].n = -1;
    for (int k = 0; k < count && st == MPX_OK; k++) {
        const mpx_node *n = g->nodes[first + k];
        fnode *fn = &f.nodes[k];
        fn->n = n;
        if (mpx_exec_skipped(n)) {
            fn->skip = true;
            continue;
        }
        int64_t plane;
        if (n->n_inputs > 8 || !node_ok(n, &plane) || !same_dims(n->outputs[0], f.shape)) {
            st = mpx_error_set(err, MPX_E_ARG, "node \"%s\" (%s) cannot run by tiles", n->name,
                               n->op_type);
            break;
        }
        if (plane < f.plane) f.plane = plane;
        bool bn = n->op == MPX_OP_BatchNormalization;
        for (int j = 0; j < n->n_inputs; j++) {
            const mpx_tensor *t = n->inputs[j];
            fin *in = &fn->in[j];
            if (!t) continue;
            int m = -1;
            for (int q = k - 1; q >= 0 && m < 0; q--)
                if (!f.nodes[q].skip && g->nodes[first + q]->outputs[0] == t) m = q;
            if (m >= 0) {
                in->member = m;
                continue;
            }
            const mpx_value *v = &vals[t->index];
            if (v->n < 0 || !v->f || v->n != t->nelem || !mpx_k_same_shape(v, t)) {
                st = mpx_error_set(err, MPX_E_INVALID, "node \"%s\" (%s): input \"%s\" has no value",
                                   n->name, n->op_type, t->name);
                break;
            }
            in->ext = v;
            in->scalar = t->rank == 0;
            if (!in->scalar) describe(t, f.shape, bn && j > 0, &in->o);
        }
        fn->out_needed = needed[n->outputs[0]->index];
    }
    if (st != MPX_OK) goto done;
    f.direct = true;
    for (int k = 0; k < count && f.direct; k++) {
        fnode *fn = &f.nodes[k];
        if (fn->skip) continue;
        fn->op = direct_of(&f, fn);
        f.direct = fn->op != FOP_NONE;
        if (fn->op == FOP_BN) fn->eps = mpx_node_attr_float(fn->n, "epsilon", 1e-5f);
        if (fn->op == FOP_CLIP) {
            const mpx_node *n = fn->n;
            mpx_k_clip_bounds(n, n->n_inputs > 1 && n->inputs[1] ? fn->in[1].ext : NULL,
                              n->n_inputs > 2 && n->inputs[2] ? fn->in[2].ext : NULL, &fn->lo, &fn->hi);
        }
    }
    for (int k = 0; f.direct && k < count; k++) f.nodes[k].dt = MPX_DT_FLOAT;
    f.vec = f.direct ? mpx_k_vec_now() : 0;
    /* The outputs written out whole: an input's buffer, or their own. */
    give_buffers(&f, g, first, vals, dead);
    for (int k = 0; k < count && st == MPX_OK; k++) {
        fnode *fn = &f.nodes[k];
        if (fn->skip || !fn->out_needed) continue;
        const mpx_tensor *o = fn->n->outputs[0];
        if (fn->donor >= 0) { /* (borrowed until the run is done: an error frees nothing of it) */
            f.outs[k] = vals[fn->donor];
            f.outs[k].borrowed = true;
            f.outs[k].rank = o->rank;
            memcpy(f.outs[k].dims, o->dims, sizeof o->dims);
            continue;
        }
        mpx_error e = {0};
        if ((st = mpx_value_alloc_raw(&f.outs[k], MPX_DT_FLOAT, o->rank, o->dims, &e)))
            mpx_error_set(err, st, "node \"%s\" (%s): %s", fn->n->name, fn->n->op_type, e.msg);
    }
    if (st != MPX_OK) goto done;
    f.tile = f.plane < FUSE_TILE ? f.plane : FUSE_TILE;
    f.scratch = calloc((size_t)f.nt, sizeof *f.scratch);
    for (int t = 0; f.scratch && t < f.nt && st == MPX_OK; t++)
        if (!(f.scratch[t] = malloc((size_t)count * (size_t)(f.direct ? FUSE_BLOCK : f.tile) * sizeof(float))))
            st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    if (!f.scratch && st == MPX_OK) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    if (st != MPX_OK) goto done;
    f.tiles_per_plane = (f.plane + f.tile - 1) / f.tile;
    long items = (long)(f.total / f.plane * f.tiles_per_plane);
    if (f.total > 0) mpx_k_parallel(items, f.nt, run_tile, &f);
    for (int t = 0; t < f.nt && st == MPX_OK; t++)
        if (f.st[t] != MPX_OK) {
            st = f.st[t];
            if (err) *err = f.errs[t];
        }
    if (st == MPX_OK)
        for (int k = 0; k < count; k++) {
            const mpx_tensor *o = g->nodes[first + k]->outputs[0];
            if (f.outs[k].n < 0) continue;
            f.outs[k].dtype = f.nodes[k].dt;
            mpx_value_free(&vals[o->index]);
            if (f.nodes[k].donor >= 0) { /* the buffer changes hands */
                f.outs[k].borrowed = false;
                mpx_value_clear(&vals[f.nodes[k].donor]);
            }
            vals[o->index] = f.outs[k];
            f.outs[k].n = -1;
            f.outs[k].f = NULL;
        }
done:
    for (int k = 0; f.outs && k < count; k++) mpx_value_free(&f.outs[k]);
    free(f.outs);
    for (int t = 0; f.scratch && t < f.nt; t++) free(f.scratch[t]);
    free(f.scratch);
    free(f.nodes);
    free(f.errs);
    free(f.st);
    return st;
}
