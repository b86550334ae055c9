/* exec.c - the executor: runs a graph under a precision assignment and keeps
 * every tensor's value (DESIGN section 3, Emulation).
 *
 * The assignment is followed literally: the executor makes no colouring
 * decisions. A value "in format F" is an fp32 buffer of values representable
 * in F, so a conversion is mpx_round_array and widening is free.
 *
 * A run is made of steps (mpx_exec_check, mpx_exec_start, mpx_exec_node)
 * that the streaming comparison (compare.c) drives too: one definition of
 * what a node computes, whichever driver keeps or frees the values.
 *
 * One exception to "values in their format", for the comparison's runs
 * only: a weight held low that only kernels reading it rounded themselves
 * read (kernels.def) starts unrounded, and each node gets it with the
 * format (mpx_kctx.in_round); the GEMM core rounds it as it packs it. The
 * rounded copy it replaces was kept beside the packing for each format. */
#include "kern_internal.h"
#include "run_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* fp32 is "no rounding": NULL and the fp32 descriptor mean the same. */
static const mpx_format *low(const mpx_format *f) {
    return f && f->kind != MPX_FMT_FP32 ? f : NULL;
}

/* Integer and bool tensors carry no format; an undefined dtype might be
 * float, and only float values are ever rounded, so it may hold one. */
static bool may_be_float(const mpx_tensor *t) {
    return t && !mpx_dtype_is_int_like(t->dtype) && t->dtype != MPX_DT_STRING && !(t->flags & MPX_T_SEQUENCE);
}

mpx_assign *mpx_assign_uniform(const mpx_graph *g, const mpx_format *f, const mpx_format *acc,
                               bool keep_io) {
    if (!g) return NULL;
    mpx_assign *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->n_tensors = g->n_tensors;
    a->n_nodes = g->n_nodes;
    a->tensor = calloc(g->n_tensors ? (size_t)g->n_tensors : 1u, sizeof *a->tensor);
    a->node = calloc(g->n_nodes ? (size_t)g->n_nodes : 1u, sizeof *a->node);
    if (!a->tensor || !a->node) {
        mpx_assign_free(a);
        return NULL;
    }
    f = low(f);
    if (!f) return a;
    for (int i = 0; i < g->n_tensors; i++) {
        const mpx_tensor *t = g->tensors[i];
        bool io = (t->flags & (MPX_T_INPUT | MPX_T_OUTPUT)) != 0;
        if (may_be_float(t) && !(keep_io && io)) a->tensor[t->index] = f;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const mpx_node *n = g->nodes[i];
        bool fin = false;
        for (int j = 0; j < n->n_inputs; j++) fin = fin || may_be_float(n->inputs[j]);
        if (!fin) continue;
        mpx_node_prec *p = &a->node[n->index];
        p->compute = f;
        p->output = f;
        p->acc.fmt = acc;
        p->acc.block = 0;
        p->acc.flags = 0;
    }
    return a;
}

void mpx_assign_free(mpx_assign *a) {
    if (!a) return;
    free(a->tensor);
    free(a->node);
    free(a);
}

void mpx_run_free(mpx_run *r) {
    if (!r) return;
    for (int i = 0; r->vals && i < r->n; i++) mpx_value_free(&r->vals[i]);
    free(r->vals);
    free(r);
}

static bool has_value(const mpx_value *v) { return v && v->n >= 0 && (v->f || v->i || v->d || v->is_seq); }

/* A constant whose value the graph holds (initializer or Constant output). */
static bool is_constant(const mpx_tensor *t) {
    return t && (t->flags & MPX_T_CONSTANT) && (t->f32 || t->i64 || t->f64) && t->nelem >= 0 && t->rank >= 0;
}

/* Constant nodes are not run: their outputs come from the graph (as shape
 * inference and the cost figures see them). */
static bool skipped(const mpx_node *n) {
    if (n->n_outputs < 1) return false;
    for (int j = 0; j < n->n_outputs; j++)
        if (!is_constant(n->outputs[j])) return false;
    return true;
}

static const mpx_format *tensor_fmt(const mpx_assign *a, const mpx_tensor *t) {
    return a ? low(a->tensor[t->index]) : NULL;
}

const mpx_format *mpx_exec_one_rounding(const mpx_format *tf, const mpx_format *cf) {
    return !tf ? cf : !cf || cf == tf ? tf : NULL;
}

/* mpx_round_array on both cores for large arrays: rounding is a pass over
 * memory, and one core's loads leave half the bandwidth idle (a candidate's
 * activations were rounded on one thread: a tenth of ResNet-18's report).
 * Each value's rounding does not depend on the split. */
enum { RPAR_PIECE = 1 << 16, RPAR_MIN = 1 << 18 };
typedef struct rpar {
    const mpx_format *f;
    float *dst;
    const float *src;
    size_t n;
} rpar;

static void rpar_item(void *vc, int tid, long item) {
    (void)tid;
    const rpar *r = vc;
    const size_t at = (size_t)item * RPAR_PIECE, len = r->n - at < RPAR_PIECE ? r->n - at : RPAR_PIECE;
    mpx_round_array(r->f, r->dst + at, r->src + at, len);
}

static void round_values(const mpx_format *f, float *dst, const float *src, size_t n) {
    const int nt = kg_threads();
    if (n < RPAR_MIN || nt < 2) {
        mpx_round_array(f, dst, src, n);
        return;
    }
    rpar r = {f, dst, src, n};
    mpx_k_parallel((long)((n + RPAR_PIECE - 1) / RPAR_PIECE), nt, rpar_item, &r);
}

/* dst = src rounded to f, in one pass over the values: a copy rounded in
 * place read and wrote every converted input twice (a tenth of ResNet-18's
 * report went to that copy). A sequence, or a value whose count and
 * buffer disagree, takes the copy. */
static mpx_status round_into(mpx_value *dst, const mpx_value *src, const mpx_format *f, mpx_error *err) {
    if (!src->is_seq && src->d) { /* float64 held low: rounded once from the double, kept double */
        mpx_value t;
        mpx_status st = mpx_value_alloc_raw(&t, src->dtype, src->rank, src->dims, err);
        if (st != MPX_OK) return st;
        if (t.n > 0) mpx_round_double_array(f, t.d, src->d, (size_t)t.n);
        *dst = t;
        return MPX_OK;
    }
    if (!src->is_seq && src->f && src->n > 0) {
        mpx_value t;
        mpx_status st = mpx_value_alloc_raw(&t, src->dtype, src->rank, src->dims, err);
        if (st != MPX_OK) return st;
        if (t.n == src->n && t.f) {
            round_values(f, t.f, src->f, (size_t)t.n);
            *dst = t;
            return MPX_OK;
        }
        mpx_value_free(&t);
    }
    mpx_status st = mpx_value_copy(dst, src, err);
    if (st == MPX_OK && dst->f && dst->n > 0) round_values(f, dst->f, dst->f, (size_t)dst->n);
    return st;
}

/* v = a view of t's values rounded to f as kept on t (kern_gemm.c: made
 * once for all runs; the GEMM core keeps its packing too); false when none
 * is kept (over the budget, out of memory), v untouched. (The tensor's
 * derived slot is the one thing a run writes in the graph: hence the cast.) */
static bool kept_view(mpx_value *v, const mpx_tensor *t, const mpx_format *f) {
    const float *kept = f && t->f32 ? mpx_k_kept_rounded((mpx_tensor *)t, f) : NULL;
    if (!kept) return false;
    mpx_value_view(v, t);
    v->f = (float *)kept;
    return true;
}

static mpx_status round_copy(mpx_value *v, const mpx_format *f, mpx_error *err) {
    if ((!v->f && !v->d) || !low(f)) return MPX_OK;
    if (v->borrowed) {
        mpx_value c;
        mpx_status st = round_into(&c, v, f, err);
        if (st != MPX_OK) return st;
        *v = c;
        return MPX_OK;
    }
    if (v->n > 0 && v->d) mpx_round_double_array(f, v->d, v->d, (size_t)v->n);
    else if (v->n > 0) round_values(f, v->f, v->f, (size_t)v->n);
    return MPX_OK;
}

static const char *vshape(const mpx_value *v, char *buf, size_t n) {
    mpx_tensor t = {.rank = v->rank, .nelem = v->n};
    for (int i = 0; i < v->rank && i < MPX_MAX_RANK; i++) t.dims[i] = v->dims[i];
    return mpx_tensor_shape_str(&t, buf, n);
}

/* Everything refused before any node runs. */
static mpx_status check(const mpx_graph *g, const mpx_assign *a, const mpx_value *inputs,
                        const mpx_run *ref, mpx_error *err) {
    if (a && (a->n_tensors != g->n_tensors || a->n_nodes != g->n_nodes || !a->tensor || !a->node))
        return mpx_error_set(err, MPX_E_ARG,
                             "the precision assignment is for another graph (%d tensors, %d nodes; "
                             "the graph has %d and %d)",
                             a->n_tensors, a->n_nodes, g->n_tensors, g->n_nodes);
    if (ref && (ref->g != g || ref->n != g->n_tensors || !ref->vals))
        return mpx_error_set(err, MPX_E_ARG,
                             "the reference run for local error is of another graph");
    for (int i = 0; i < g->n_nodes; i++) {
        const mpx_node *n = g->nodes[i];
        if (!skipped(n) && mpx_kernel_for(n->op) && !mpx_kernel_for_node(n))
            return mpx_error_set(err, MPX_E_UNSUPPORTED,
                                 "node \"%s\" (%s): no float64 kernel for %s; mpx computes float64 as float64 "
                                 "and runs no float64 node in float32 (docs/float64.md lists the float64 ops; "
                                 "a Cast to float32 before it in the model runs it in float32)",
                                 n->name, n->op_type, n->op_type);
        if (!skipped(n) && !mpx_kernel_for(n->op)) {
            /* an op of another domain is not ONNX's op of that name */
            const bool other = n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0;
            return mpx_error_set(err, MPX_E_UNSUPPORTED, "node \"%s\" (%s%s%s): no kernel for %s%s%s", n->name,
                                 other ? n->domain : "", other ? ":" : "", n->op_type, n->op_type,
                                 other ? " of domain " : "", other ? n->domain : "");
        }
    }
    if (g->n_inputs > 0 && !inputs)
        return mpx_error_set(err, MPX_E_ARG, "no input values given (the model has %d inputs)",
                             g->n_inputs);
    char b1[128], b2[128];
    for (int i = 0; i < g->n_inputs; i++) {
        const mpx_tensor *t = g->inputs[i];
        const mpx_value *v = &inputs[i];
        if (t->flags & MPX_T_SEQUENCE) { /* a sequence or optional: no shape to bind */
            if (!v->is_seq || v->n < 0)
                return mpx_error_set(err, MPX_E_ARG, "input \"%s\" is a %s of tensors; its value is not one", t->name,
                                     (t->flags & MPX_T_OPTIONAL) ? "optional" : "sequence");
            continue;
        }
        if (v->is_seq)
            return mpx_error_set(err, MPX_E_ARG, "input \"%s\" is a tensor; its value is a sequence", t->name);
        bool known = t->rank >= 0;
        for (int k = 0; known && k < t->rank; k++) known = t->dims[k] >= 0;
        if (!known)
            return mpx_error_set(err, MPX_E_ARG,
                                 "input \"%s\" is not bound (shape %s): give it a shape", t->name,
                                 mpx_tensor_shape_str(t, b1, sizeof b1));
        if (!has_value(v) || v->rank < 0 || v->rank > MPX_MAX_RANK)
            return mpx_error_set(err, MPX_E_ARG, "input \"%s\" has no value", t->name);
        if (!mpx_k_same_shape(v, t))
            return mpx_error_set(
                err, MPX_E_SHAPE, "input \"%s\": the value has shape %s, the input is bound to %s",
                t->name, vshape(v, b1, sizeof b1), mpx_tensor_shape_str(t, b2, sizeof b2));
        bool vf = mpx_dtype_is_float(v->dtype), vd = v->dtype == MPX_DT_DOUBLE;
        if ((vd ? !v->d : vf ? !v->f : !v->i) || v->n != t->nelem)
            return mpx_error_set(err, MPX_E_ARG, "input \"%s\": the value is malformed", t->name);
        if (t->dtype != MPX_DT_UNDEFINED && mpx_dtype_is_float(t->dtype) != vf)
            return mpx_error_set(err, MPX_E_ARG, "input \"%s\" is %s but the value is %s", t->name,
                                 mpx_dtype_name(t->dtype), mpx_dtype_name(v->dtype));
        if (t->dtype != MPX_DT_UNDEFINED && vf && (t->dtype == MPX_DT_DOUBLE) != vd)
            return mpx_error_set(err, MPX_E_ARG, "input \"%s\" is %s but the value is %s (convert it to %s)", t->name,
                                 mpx_dtype_name(t->dtype), mpx_dtype_name(v->dtype), mpx_dtype_name(t->dtype));
    }
    /* Every node input has a value by the time the node runs. */
    bool *avail = calloc(g->n_tensors ? (size_t)g->n_tensors : 1u, sizeof *avail);
    if (!avail) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int i = 0; i < g->n_inputs; i++) avail[g->inputs[i]->index] = true;
    for (int i = 0; i < g->n_tensors; i++)
        if (is_constant(g->tensors[i])) avail[i] = true;
    mpx_status st = MPX_OK;
    for (int i = 0; i < g->n_nodes && st == MPX_OK; i++) {
        const mpx_node *n = g->nodes[i];
        if (skipped(n)) continue;
        for (int j = 0; j < n->n_inputs && st == MPX_OK; j++) {
            const mpx_tensor *t = n->inputs[j];
            if (!t) continue;
            if (!avail[t->index] && (t->flags & MPX_T_INITIALIZER))
                /* an initializer of an element type mpx holds no values of
                 * (string, complex) */
                st = mpx_error_set(err, MPX_E_UNSUPPORTED,
                                   "node \"%s\" (%s): its input \"%s\" is an initializer of type %s, which mpx holds "
                                   "no values of", n->name, n->op_type, t->name, mpx_dtype_name(t->dtype));
            else if (!avail[t->index])
                st =
                    mpx_error_set(err, MPX_E_INVALID,
                                  "node \"%s\" (%s): input \"%s\" has no value (not a model input, "
                                  "an initializer or a node's output)",
                                  n->name, n->op_type, t->name);
            /* (an If's untaken branch, and the nodes in it, have none) */
            else if (ref && !has_value(&ref->vals[t->index]) && !n->guard && !(n->op == MPX_OP_If && j > 0))
                st = mpx_error_set(err, MPX_E_ARG,
                                   "node \"%s\" (%s): the reference run has no value for \"%s\"",
                                   n->name, n->op_type, t->name);
        }
        for (int j = 0; j < n->n_outputs; j++)
            if (n->outputs[j]) avail[n->outputs[j]->index] = true;
    }
    free(avail);
    return st;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

bool mpx_exec_skipped(const mpx_node *n) { return n && skipped(n); }

/* Run a's kept forms of the weights its steps read (a NULL: the
 * reference's), made before its values (kern_kept.c: mpx_k_prepare_rounded
 * and mpx_k_prepare_reads say why): for each node that runs (runs[i],
 * NULL: every node) and each constant input, what exec_node (exec.c) hands
 * its kernel. A start value vals holds that is the graph's own
 * (mpx_exec_start_some left it unrounded) is read in the tensor's format,
 * else the node's compute format, one of them where both are low and the
 * same (else the tensor's rounded copy, rounded again per call); where the
 * kernel reads that input rounded itself (kernels.def) it gets the values
 * with the format and makes what it keeps of them (its fp32 packing, which
 * it rounds as it reads: kern_gemm.h); any other reads the copy kept on the
 * tensor. A start value that is the tensor's rounded copy is
 * handed as it is where no compute format rounds it again, and the
 * kernel keeps its packing of it. The run finds these forms under the same
 * keys; a form not made here (a shape not known ahead) the run makes as
 * before. MPX_CMP_NOPREP=1: none made here (to compare). */
size_t mpx_exec_prepare_forms(const mpx_graph *g, const mpx_assign *a, const mpx_value *vals, const bool *runs) {
    if (mpx_env_on("MPX_CMP_NOPREP")) return 0;
    enum { FEW = 8 };
    float *zero = NULL;
    size_t zero_n = 0, made = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const mpx_node *n = g->nodes[i];
        if ((runs && !runs[i]) || mpx_exec_skipped(n) || n->body || n->guard || n->n_inputs > FEW) continue;
        static const mpx_node_prec fp32 = {0};
        const mpx_node_prec *p = a ? &a->node[n->index] : &fp32;
        const mpx_format *cf = low(p->compute);
        const mpx_format *rd[FEW] = {0};
        const mpx_value *given[FEW] = {0};
        bool packs = false;
        for (int j = 0; j < n->n_inputs; j++) {
            mpx_tensor *t = n->inputs[j];
            const mpx_value *v = t ? &vals[t->index] : NULL;
            if (!v || !t->f32 || !(t->flags & MPX_T_CONSTANT) || v->n < 0 || v->is_seq || !v->f) continue;
            given[j] = v;
            const bool reads = mpx_kernel_reads_rounded(n->op, j);
            const mpx_format *tf = a ? low(a->tensor[t->index]) : NULL;
            if (v->f != t->f32) { /* held in tf, a copy made at the start */
                const bool held = j < 64 && ((p->held >> j) & 1u);
                packs = packs || (reads && (!cf || cf == tf || held));
                continue;
            }
            const mpx_format *one = mpx_exec_one_rounding(tf, cf);
            if (reads && (one || !a)) {
                rd[j] = one;
                packs = true;
            } else if (one || tf) {
                made += mpx_k_prepare_rounded(t, one ? one : tf);
            }
        }
        if (packs) made += mpx_k_prepare_reads(n, &p->acc, cf, rd, given, &zero, &zero_n);
    }
    free(zero);
    return made;
}

/* At load, what the first fp32 run would make beside mpx_k_prepare_node's
 * forms: the reference's, as a comparison's start makes them
 * (mpx_exec_prepare_forms on the constants' own values), which are the
 * convolutions' packings and a one-column product's kept rows (a
 * classifier's weights, an SE block's: MobileNetV3-Small's first run made
 * them at 2.3 ms, ten times its products); ONNX Runtime packs its weights
 * when a session is created too. Nothing where a shape is not known. */
static size_t prepare_reference(const mpx_graph *g) {
    mpx_value *vals = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *vals);
    if (!vals) return 0;
    for (int t = 0; t < g->n_tensors; t++) {
        const mpx_tensor *x = g->tensors[t];
        vals[t] = (mpx_value){.n = -1};
        if (x && x->f32 && (x->flags & MPX_T_CONSTANT)) mpx_value_view(&vals[t], x);
    }
    const size_t made = mpx_exec_prepare_forms(g, NULL, vals, NULL);
    free(vals); /* (views: nothing of their own) */
    return made;
}

size_t mpx_exec_prepare(const mpx_graph *g) {
    mpx_run_start_threads();
    size_t bytes = 0;
    for (int i = 0; g && i < g->n_nodes; i++)
        if (!skipped(g->nodes[i])) bytes += mpx_k_prepare_node(g->nodes[i]);
    if (g) (void)prepare_reference(g);
    return bytes;
}

mpx_status mpx_exec_check(const mpx_graph *g, const mpx_assign *a, const mpx_value *inputs,
                          mpx_error *err) {
    if (!g) return mpx_error_set(err, MPX_E_ARG, "no graph");
    return check(g, a, inputs, NULL, err);
}

mpx_status mpx_exec_start(const mpx_graph *g, const mpx_assign *a, const mpx_value *inputs,
                          mpx_value *vals, mpx_error *err) {
    return mpx_exec_start_some(g, a, inputs, NULL, NULL, vals, err);
}

/* Whether a constant held low may start a run unrounded: every node that
 * reads it reads it rounded itself (kernels.def: MPX_KERNEL_READS_ROUNDED;
 * exec_node hands it with its format), and nothing else sees the value:
 * not a graph output, nor kept for the caller (keep NULL: none may; so too
 * in a graph with a Loop or Scan body, which reads outer values on its
 * own: mpx_exec_start_some). */
static bool unrounded_ok(const mpx_tensor *t, const bool *keep) {
    if (!keep || keep[t->index] || !t->f32 || (t->flags & MPX_T_OUTPUT) || t->n_consumers < 1) return false;
    for (int c = 0; c < t->n_consumers; c++) {
        const mpx_node *n = t->consumers[c];
        for (int j = 0; j < n->n_inputs; j++)
            if (n->inputs[j] == t && !mpx_kernel_reads_rounded(n->op, j)) return false;
    }
    return true;
}

mpx_status mpx_exec_start_some(const mpx_graph *g, const mpx_assign *a, const mpx_value *inputs,
                               const bool *want, const bool *keep, mpx_value *vals, mpx_error *err) {
    mpx_status st = MPX_OK;
    for (int i = 0; i < g->n_tensors; i++) vals[i].n = -1;
    for (int i = 0; keep && i < g->n_nodes; i++)
        if (g->nodes[i]->body) keep = NULL; /* every constant rounded (unrounded_ok) */
    /* Constants: converted once, before the run (weights converted offline). */
    for (int i = 0; i < g->n_tensors && st == MPX_OK; i++) {
        const mpx_tensor *t = g->tensors[i];
        if (!is_constant(t) || (want && !want[i])) continue;
        /* held low: the rounded copy kept on the tensor, else one for this
         * run; or left as it is for readers that round it themselves (a
         * weight's two formats' rounded copies were twice its bytes beside
         * the packings made of them: exec_node, mpx_kctx.in_round) */
        const mpx_format *f = tensor_fmt(a, t);
        if (f && unrounded_ok(t, keep)) {
            mpx_value_view(&vals[i], t);
            continue;
        }
        if (kept_view(&vals[i], t, f)) continue;
        mpx_value_view(&vals[i], t);
        st = round_copy(&vals[i], f, err);
    }
    for (int i = 0; i < g->n_inputs && st == MPX_OK; i++) {
        const mpx_tensor *t = g->inputs[i];
        if (want && !want[t->index]) continue;
        mpx_value *v = &vals[t->index];
        mpx_value_free(v);
        st = mpx_value_copy(v, &inputs[i], err);
        if (st != MPX_OK) break;
        if (t->dtype != MPX_DT_UNDEFINED) v->dtype = t->dtype;
        st = round_copy(v, tensor_fmt(a, t), err);
    }
    if (st != MPX_OK)
        for (int i = 0; i < g->n_tensors; i++) mpx_value_free(&vals[i]);
    return st;
}

/* The formats output j of n is rounded to, in turn: the node's output
 * format (none for an output that is always fp32), then its tensor's (NULL:
 * none). */
static void output_formats(const mpx_node *n, const mpx_node_prec *p, const mpx_assign *a, int j,
                           const mpx_format **of, const mpx_format **tf) {
    *of = mpx_node_output_is_f32(n, j) ? NULL : low(p->output);
    *tf = tensor_fmt(a, n->outputs[j]);
}

/* In a streamed run (last: each tensor's last reader, keep: tensors the
 * caller keeps, or NULL): whether nothing needs t after node index end, no
 * later node reading it and it being neither a model output nor kept. What
 * the run may free, write over or never write out whole. */
static bool dies_by(const mpx_tensor *t, int end, const int *last, const bool *keep) {
    return last[t->index] <= end && !(t->flags & MPX_T_OUTPUT) && !(keep && keep[t->index]);
}

/* The value of a pointwise node's input (or input 0 of a node whose kernel
 * takes it, kernels.def: MPX_KERNEL_TAKES_INPUT0), at node index i of a streamed run, that no later node reads and
 * the run owns, of the output's size (the first read of it, as compare.c's
 * plan_inplace); NULL: none. */
static mpx_value *dying_input(const mpx_node *n, int i, const int *last, const bool *keep, mpx_value *vals) {
    const bool moves = mpx_kernel_takes_input0(n->op);
    if ((!mpx_kernel_pointwise(n->op) && !moves) || n->n_outputs != 1 || !n->outputs[0] || n->guard) return NULL;
    for (int k = 0; k < (moves ? 1 : n->n_inputs); k++) {
        const mpx_tensor *t = n->inputs[k];
        if (!mpx_node_first_read(n, k) || !dies_by(t, i, last, keep)) continue;
        mpx_value *v = &vals[t->index];
        /* (not a mapping: the adoption below hands over a heap block) */
        if (mpx_value_own_floats(v) && !v->mapped && v->n == n->outputs[0]->nelem) return v;
    }
    return NULL;
}

/* One node: convert its inputs, run its kernel, round its outputs. Kept free
 * of shared mutable state (everything it writes is outs, its own scratch or
 * err) so that a comparison may run two of them at once. */
static mpx_status exec_node(const mpx_node *n, const mpx_assign *a, const mpx_value *const *srcs,
                            bool ref_inputs, const mpx_body_probe *probe, mpx_value *outs, size_t *scratch_bytes,
                            float *dest, int64_t dest_n, mpx_error *err) {
    static const mpx_node_prec fp32 = {0};
    const mpx_node_prec *p = a ? &a->node[n->index] : &fp32;
    const mpx_format *cf = low(p->compute);
    int ni = n->n_inputs, no = n->n_outputs;
    size_t scratch = 0;
    for (int j = 0; j < no; j++) mpx_value_clear(&outs[j]);
    /* Most nodes have few inputs: their arrays on the stack (this runs for
     * every node, and for every tile of a fused chain). */
    enum { FEW = 8 };
    mpx_value conv_few[FEW];
    const mpx_value *ins_few[FEW];
    const mpx_format *rd_few[FEW];
    bool heap = ni > FEW, any_rd = false;
    mpx_value *conv = heap ? calloc((size_t)ni, sizeof *conv) : conv_few;
    const mpx_value **ins = heap ? calloc((size_t)ni, sizeof *ins) : ins_few;
    const mpx_format **rd = heap ? calloc((size_t)ni, sizeof *rd) : rd_few;
    if (!heap) {
        memset(conv_few, 0, sizeof conv_few);
        memset(ins_few, 0, sizeof ins_few);
        memset(rd_few, 0, sizeof rd_few);
    }
    mpx_status st = MPX_OK;
    if (!conv || !ins || !rd) {
        st =
            mpx_error_set(err, MPX_E_NOMEM, "node \"%s\" (%s): out of memory", n->name, n->op_type);
        goto done;
    }
    for (int j = 0; j < ni; j++) conv[j].n = -1;
    for (int j = 0; j < ni; j++) {
        const mpx_tensor *t = n->inputs[j];
        const mpx_value *src = srcs[j];
        if (!t || !src) continue;
        /* The graph's own values (weights): in a candidate's run, held low
         * and left unrounded by mpx_exec_start_some, or read in the compute
         * format. Where one rounding makes the value the node reads, a
         * kernel that reads the input rounded itself gets them with the
         * format (kernels.def); else their rounded copy kept on the tensor,
         * read in place. */
        if (src->d && !src->is_seq) {
            /* float64: a weight held low (tf), then the compute format (cf);
             * a node's input held in cf already needs no second rounding. */
            const bool own_d = src->d == t->f64;
            const mpx_format *tf = own_d && !ref_inputs ? tensor_fmt(a, t) : NULL;
            const mpx_format *rf = own_d ? NULL : cf && (ref_inputs || tensor_fmt(a, t) != cf) ? cf : NULL;
            if (own_d && cf && cf != tf) rf = cf;
            if (tf || rf) {
                mpx_error e = {0};
                st = round_into(&conv[j], src, tf ? tf : rf, &e);
                if (st == MPX_OK && tf && rf) st = round_copy(&conv[j], rf, &e);
                if (st != MPX_OK) {
                    st = mpx_error_set(err, e.status, "node \"%s\" (%s): %s", n->name, n->op_type, e.msg);
                    goto done;
                }
                scratch += mpx_value_bytes(&conv[j]);
                ins[j] = &conv[j];
            } else {
                ins[j] = src;
            }
            continue;
        }
        const bool own = src->f && src->f == t->f32 && !src->is_seq;
        const mpx_format *tf = own && !ref_inputs ? tensor_fmt(a, t) : NULL;
        if (own && (tf || cf)) {
            const mpx_format *one = mpx_exec_one_rounding(tf, cf); /* NULL: tf, then cf */
            if (one && mpx_kernel_reads_rounded(n->op, j)) {
                rd[j] = one;
                any_rd = true;
                ins[j] = src;
                continue;
            }
            if (one && kept_view(&conv[j], t, one)) {
                ins[j] = &conv[j];
                continue;
            }
            /* A copy for this call: past the budget for kept copies, or held
             * in tf and read in cf (tf's values rounded again). */
            mpx_value held;
            mpx_error e = {0};
            mpx_value_view(&held, t);
            st = one || kept_view(&held, t, tf) ? MPX_OK : round_copy(&held, tf, &e);
            if (st == MPX_OK) st = round_into(&conv[j], &held, one ? one : cf, &e);
            mpx_value_free(&held);
            if (st != MPX_OK) {
                st = mpx_error_set(err, e.status, "node \"%s\" (%s): %s", n->name, n->op_type, e.msg);
                goto done;
            }
            scratch += mpx_value_bytes(&conv[j]);
            ins[j] = &conv[j];
            continue;
        }
        /* A value held in the compute format already needs no rounding;
         * reference values are fp32 and always do. */
        const bool held = j < 64 && ((p->held >> j) & 1u);
        if (src->f && cf && !held && (ref_inputs || tensor_fmt(a, t) != cf)) {
            mpx_error e = {0};
            if (round_into(&conv[j], src, cf, &e) != MPX_OK) {
                st = mpx_error_set(err, e.status, "node \"%s\" (%s): %s", n->name, n->op_type,
                                   e.msg);
                goto done;
            }
            scratch += mpx_value_bytes(&conv[j]);
            ins[j] = &conv[j];
        } else {
            ins[j] = src;
        }
    }
    /* Identity of the graph's own value (weights a model shares between
     * layers and reads through an Identity per layer, as torch exports a
     * cloned encoder layer's): a view of that value where nothing rounds
     * the output. The copies were a tenth of a BERT-style forward, and the
     * GEMM core keeps the packing of a view's values (mpx_k_value_owner),
     * not of a fresh copy's. */
    if (n->op == MPX_OP_Identity && ni >= 1 && no >= 1 && n->inputs[0] && n->outputs[0] && ins[0] &&
        !ins[0]->is_seq && ins[0]->f && ins[0]->f == n->inputs[0]->f32 && !tensor_fmt(a, n->outputs[0]) &&
        (mpx_node_output_is_f32(n, 0) || !low(p->output))) {
        mpx_value_view(&outs[0], n->inputs[0]);
        for (int j = 1; j < no; j++) mpx_value_free(&outs[j]);
        goto done;
    }
    bool taken = false, rounded = false;
    const mpx_format *sf = low(p->output) ? low(p->output) : cf;
    /* output 0's one rounding, offered to the kernel (mpx_kctx.out_round) */
    const mpx_format *of0 = NULL, *tf0 = NULL;
    if (no >= 1 && n->outputs[0]) output_formats(n, p, a, 0, &of0, &tf0);
    mpx_kctx kc = {.node = n, .acc = p->acc, .round = cf, .state = sf, .err = err, .dest = dest,
                   .dest_n = dest_n, .dest_taken = &taken, .probe = n->body ? probe : NULL,
                   .out_round = !of0 ? tf0 : !tf0 || tf0 == of0 ? of0 : NULL, .out_rounded = &rounded,
                   .in_round = any_rd ? rd : NULL};
    if (err) err->msg[0] = '\0';
    /* A kernel that saw a cancel may have stopped early, its outputs part
     * computed (or failed on them): whatever it returned is dropped, never
     * stored, cached or compared. The flags stay set until the run ends,
     * so a kernel that stopped is always caught here. */
    const bool before = mpx_k_cancelled();
    if (!before) st = mpx_kernel_for_node(n)(&kc, ins, ni, outs, no);
    if (before || (st != MPX_E_CANCELLED && mpx_k_cancelled())) {
        st = mpx_error_set(err, MPX_E_CANCELLED, "node \"%s\" (%s): cancelled%s", n->name, n->op_type,
                           before ? "" : " while it ran (its values dropped)");
        goto done;
    }
    if (st != MPX_OK) {
        if (err && !err->msg[0]) mpx_kernel_error(&kc, st, "the kernel failed");
        goto done;
    }
    for (int j = 0; j < no; j++) {
        const mpx_tensor *t = n->outputs[j];
        mpx_value *v = &outs[j];
        if (!t) {
            mpx_value_free(v);
            continue;
        }
        if (!has_value(v)) {
            if (t->n_consumers > 0 || (t->flags & MPX_T_OUTPUT)) {
                st = mpx_error_set(err, MPX_E_INVALID,
                                   "node \"%s\" (%s): no value for output \"%s\"", n->name,
                                   n->op_type, t->name);
                goto done;
            }
            mpx_value_free(v); /* absent, whatever the kernel left */
            continue;
        }
        if (j == 0 && rounded) continue; /* the kernel rounded it to kc.out_round */
        const mpx_format *of, *tf;
        output_formats(n, p, a, j, &of, &tf);
        if (v->d && v->n > 0) { /* float64 held low: each rounding from the double */
            if (of) mpx_round_double_array(of, v->d, v->d, (size_t)v->n);
            if (tf && tf != of) mpx_round_double_array(tf, v->d, v->d, (size_t)v->n);
            continue;
        }
        if (v->f && of && v->n > 0) round_values(of, v->f, v->f, (size_t)v->n);
        /* Rounding twice to one format changes nothing: skip the second. */
        if (v->f && tf && tf != of && v->n > 0) round_values(tf, v->f, v->f, (size_t)v->n);
    }
done:
    if (st != MPX_OK)
        for (int j = 0; j < no; j++) mpx_value_free(&outs[j]);
    for (int j = 0; conv && j < ni; j++) mpx_value_free(&conv[j]);
    if (heap) {
        free(conv);
        free(ins);
        free(rd);
    }
    if (scratch_bytes) *scratch_bytes = scratch;
    return st;
}

/* Whether a node of an If's branch runs, given the run's values: every If
 * around it (innermost first) has a condition that selects its branch. A
 * branch not taken computes nothing: its outputs stay absent, and the If
 * reads the other's. */
bool mpx_exec_active(const mpx_node *n, const mpx_value *vals) {
    for (int depth = 0; n && n->guard && depth <= MPX_MAX_SUBGRAPH_DEPTH; depth++, n = n->guard) {
        const mpx_tensor *ct = n->guard->inputs[0];
        const mpx_value *cv = ct ? &vals[ct->index] : NULL;
        if (!cv || cv->n < 1 || (!cv->i && !cv->f && !cv->d)) return false;
        bool then = cv->i ? cv->i[0] != 0 : cv->d ? cv->d[0] != 0.0 : cv->f[0] != 0.0f;
        if ((then ? 0 : 1) != n->branch) return false;
    }
    return true;
}

mpx_status mpx_exec_node(const mpx_node *n, const mpx_assign *a, const mpx_value *vals,
                         bool ref_inputs, mpx_value *outs, size_t *scratch_bytes,
                         mpx_error *err) {
    return mpx_exec_node_probe(n, a, vals, ref_inputs, NULL, outs, scratch_bytes, err);
}

mpx_status mpx_exec_node_probe(const mpx_node *n, const mpx_assign *a, const mpx_value *vals, bool ref_inputs,
                               const mpx_body_probe *probe, mpx_value *outs, size_t *scratch_bytes,
                               mpx_error *err) {
    return mpx_exec_node_into(n, a, vals, ref_inputs, probe, NULL, 0, outs, scratch_bytes, err);
}

mpx_status mpx_exec_node_into(const mpx_node *n, const mpx_assign *a, const mpx_value *vals, bool ref_inputs,
                              const mpx_body_probe *probe, float *dest, int64_t dest_n, mpx_value *outs,
                              size_t *scratch_bytes, mpx_error *err) {
    enum { FEW = 8 };
    if (n->guard && !mpx_exec_active(n, vals)) {
        for (int j = 0; j < n->n_outputs; j++) mpx_value_clear(&outs[j]);
        if (scratch_bytes) *scratch_bytes = 0;
        return MPX_OK;
    }
    const mpx_value *few[FEW] = {0}, **srcs = few;
    if (n->n_inputs > FEW && !(srcs = malloc((size_t)n->n_inputs * sizeof *srcs))) {
        for (int j = 0; j < n->n_outputs; j++) mpx_value_clear(&outs[j]);
        return mpx_error_set(err, MPX_E_NOMEM, "node \"%s\" (%s): out of memory", n->name,
                             n->op_type);
    }
    for (int j = 0; j < n->n_inputs; j++) srcs[j] = n->inputs[j] ? &vals[n->inputs[j]->index] : NULL;
    mpx_status st = exec_node(n, a, srcs, ref_inputs, probe, outs, scratch_bytes, dest, dest_n, err);
    if (srcs != few) free(srcs);
    return st;
}

mpx_status mpx_exec_node_with(const mpx_node *n, const mpx_assign *a, const mpx_value *const *srcs,
                              mpx_value *outs, float *dest, int64_t dest_n, mpx_error *err) {
    return exec_node(n, a, srcs, false, NULL, outs, NULL, dest, dest_n, err);
}

bool mpx_exec_node_plain(const mpx_assign *a, const mpx_node *n) {
    if (!a) return true;
    const mpx_node_prec *p = &a->node[n->index];
    if (low(p->compute) || low(p->output)) return false;
    for (int j = 0; j < n->n_outputs; j++)
        if (n->outputs[j] && tensor_fmt(a, n->outputs[j])) return false;
    return true;
}

/* Store a node's outputs into a run's values (a node may recompute a tensor
 * that also had a value before, which it replaces). */
static void store_outputs(const mpx_node *n, mpx_value *outs, mpx_value *vals) {
    for (int j = 0; j < n->n_outputs; j++) {
        const mpx_tensor *t = n->outputs[j];
        if (!t || !has_value(&outs[j])) continue;
        mpx_value_free(&vals[t->index]);
        vals[t->index] = outs[j];
        mpx_value_clear(&outs[j]);
    }
}

/* For each tensor the index of the last node that reads it (-1: none). */
static int *last_uses(const mpx_graph *g) {
    int *last = malloc((g->n_tensors ? (size_t)g->n_tensors : 1u) * sizeof *last);
    if (!last) return NULL;
    for (int i = 0; i < g->n_tensors; i++) last[i] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        const mpx_node *n = g->nodes[i];
        for (int j = 0; j < n->n_inputs; j++)
            if (n->inputs[j]) last[n->inputs[j]->index] = i;
    }
    return last;
}

/* (The flag lives with the kernels, which read it inside long loops.) */
void mpx_set_cancel_flag(const volatile int *flag) { mpx_k_set_cancel_flag(flag); }

bool mpx_cancel_requested(void) { return mpx_k_cancelled(); }

mpx_status mpx_run_graph(const mpx_graph *g, const mpx_assign *a, const mpx_value *inputs,
                         const mpx_run_opts *opts, mpx_run **out, mpx_error *err) {
    if (out) *out = NULL;
    if (!g || !out) return mpx_error_set(err, MPX_E_ARG, "no graph or no place for the run");
    const mpx_run *ref = opts ? opts->local_ref : NULL;
    mpx_status st = check(g, a, inputs, ref, err);
    if (st != MPX_OK) return st;
    double t0 = now_ms();
    mpx_run *run = calloc(1, sizeof *run);
    if (!run) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    run->g = g;
    run->n = g->n_tensors;
    run->vals = calloc(g->n_tensors ? (size_t)g->n_tensors : 1u, sizeof *run->vals);
    int max_out = 1;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->n_outputs > max_out) max_out = g->nodes[i]->n_outputs;
    mpx_value *outs = calloc((size_t)max_out, sizeof *outs);
    if (!run->vals || !outs) {
        free(outs);
        free(run->vals);
        free(run);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    bool stream = opts && opts->stream;
    int *last = stream ? last_uses(g) : NULL;
    if (stream && !last) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    else st = mpx_exec_start(g, a, inputs, run->vals, err);
    bool fuse = !ref && mpx_fuse_enabled() && !(opts && opts->on_value);
    bool *needed = calloc(g->n_tensors ? (size_t)g->n_tensors : 1u, sizeof *needed);
    /* inputs of a chain that die with it: their buffers may take its outputs (fuse.c) */
    bool *dead = stream ? calloc(g->n_tensors ? (size_t)g->n_tensors : 1u, sizeof *dead) : NULL;
    if ((!needed || (stream && !dead)) && st == MPX_OK) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int i = 0; i < g->n_nodes && st == MPX_OK; i++) {
        const mpx_node *n = g->nodes[i];
        if (skipped(n)) continue;
        const int first = i;
        const double t_node = opts && opts->node_ms ? now_ms() : 0.0;
        if (mpx_cancel_requested()) {
            st = mpx_error_set(err, MPX_E_CANCELLED, "run cancelled at node \"%s\" (%d of %d)", n->name, i + 1,
                               g->n_nodes);
            break;
        }
        /* A chain of elementwise nodes runs by tiles (fuse.c); outputs that
         * nothing after the chain reads are never written out whole. */
        int span = fuse ? mpx_fuse_span(g, i) : 0, end = i;
        if (span >= 2) {
            end = i + span - 1;
            for (int k = i; k <= end; k++) {
                const mpx_tensor *t = g->nodes[k]->outputs[0];
                needed[t->index] = !stream || !dies_by(t, end, last, opts->keep);
            }
            for (int k = i; dead && k <= end; k++)
                for (int j = 0; j < g->nodes[k]->n_inputs; j++) {
                    const mpx_tensor *t = g->nodes[k]->inputs[j];
                    if (t) dead[t->index] = dies_by(t, end, last, opts->keep);
                }
            st = mpx_fuse_run(g, a, i, span, run->vals, needed, dead, err);
            for (int k = i; dead && k <= end; k++)
                for (int j = 0; j < g->nodes[k]->n_inputs; j++)
                    if (g->nodes[k]->inputs[j]) dead[g->nodes[k]->inputs[j]->index] = false;
            /* A chain that fails changed nothing: its first node runs on its
             * own instead (values whose shapes differ from shape inference's,
             * or a kernel's refusal, then get the node-by-node path and its
             * message). */
            if (st != MPX_OK) {
                end = i;
                if (err) mpx_error_clear(err);
                st = MPX_OK;
                span = 0;
            }
        }
        if (span < 2) {
            /* A pointwise node writes over an input that dies here (the
             * comparison's rule, compare.c "writing over a dead input"):
             * its stores go to lines it has just read, not to a cold
             * buffer read from memory first. */
            mpx_value *over = stream && !ref ? dying_input(n, i, last, opts->keep, run->vals) : NULL;
            st = mpx_exec_node_into(n, a, ref ? ref->vals : run->vals, ref != NULL, opts ? opts->probe : NULL,
                                    over ? over->f : NULL, over ? over->n : 0, outs, NULL, err);
            if (st == MPX_OK && over && outs[0].borrowed && outs[0].f == over->f) { /* taken: it changes hands */
                outs[0].borrowed = false;
                mpx_value_clear(over);
            }
            if (st == MPX_OK) store_outputs(n, outs, run->vals);
            for (int j = 0; st == MPX_OK && opts && opts->on_value && j < n->n_outputs; j++) {
                const mpx_tensor *t = n->outputs[j];
                if (t && run->vals[t->index].n >= 0 && (run->vals[t->index].f || run->vals[t->index].d))
                    opts->on_value(opts->on_value_ctx, t, &run->vals[t->index]);
            }
        }
        /* Free what these nodes read last (and outputs nothing reads). */
        for (int k = i; st == MPX_OK && stream && k <= end; k++) {
            n = g->nodes[k];
            for (int j = 0; j < n->n_inputs + n->n_outputs; j++) {
                const mpx_tensor *t = j < n->n_inputs ? n->inputs[j] : n->outputs[j - n->n_inputs];
                if (t && dies_by(t, end, last, opts->keep) && !run->vals[t->index].borrowed)
                    mpx_value_free(&run->vals[t->index]);
            }
        }
        i = end;
        if (opts && opts->node_ms) {
            /* The frees are the run's cost too. A chain's time is shared
             * equally by the nodes it ran, not the Constant nodes inside
             * it, which are not run: mpx_bench's profile leaves those out,
             * and with them their shares (a hard-swish chain's sixth). */
            int ran = 0;
            for (int k = first; k <= end; k++) ran += !skipped(g->nodes[k]);
            const double dt = (now_ms() - t_node) / (ran > 0 ? ran : 1);
            for (int k = first; k <= end; k++) opts->node_ms[k] = skipped(g->nodes[k]) ? 0.0 : dt;
        }
    }
    free(needed);
    free(dead);
    free(last);
    free(outs);
    if (st != MPX_OK) {
        mpx_run_free(run);
        return st;
    }
    run->ms = now_ms() - t0;
    *out = run;
    return MPX_OK;
}
