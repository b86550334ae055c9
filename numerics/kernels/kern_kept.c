/* kern_kept.c - the list of derived forms kept on a constant's tensor
 * (kern_kept.h), guarded by one lock. */
#include "kern_kept.h"
#include "kern_gemm.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t kg_kept_lock = PTHREAD_MUTEX_INITIALIZER;

atomic_llong kg_rounded_bytes; /* the kept rounded copies' bytes (mpx_k_kept_rounded) */
static atomic_size_t kg_made;  /* forms kept so far in the process (mpx_numerics_kept_made) */

size_t mpx_numerics_kept_made(void) { return atomic_load(&kg_made); }

float *kg_alloc(size_t n) {
    size_t bytes = (n ? n : 1) * sizeof(float);
    bytes = (bytes + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes);
}

static void kg_kept_del(kg_kept *k) {
    if (k->kind == KG_KEPT_ROUNDED) atomic_fetch_sub(&kg_rounded_bytes, k->M * (long long)sizeof(float));
    free(k->ap);
    free(k);
}

static void kg_kept_free(void *p) {
    for (kg_kept *k = p, *n; k; k = n) {
        n = k->next;
        kg_kept_del(k);
    }
}

/* Whether p is the tensor's own values (float or integer) or a rounded copy
 * of them kept on it (called with the lock held). */
static bool kg_kept_current(const mpx_tensor *t, const void *p) {
    if (p == t->f32 || (t->i64 && p == t->i64)) return true;
    for (const kg_kept *o = t->derived_free == kg_kept_free ? t->derived : NULL; o; o = o->next)
        if (o->kind == KG_KEPT_ROUNDED && o->ap == p && o->a == t->f32) return true;
    return false;
}

bool kg_kept_holds(const mpx_tensor *t, const void *p) {
    pthread_mutex_lock(&kg_kept_lock);
    const bool own = kg_kept_current(t, p);
    pthread_mutex_unlock(&kg_kept_lock);
    return own;
}

static bool kg_kept_match(const kg_kept *k, const kg_key *q) {
    return k->kind == q->k.kind && k->a == q->k.a && k->M == q->k.M && k->K == q->k.K && k->G == q->k.G &&
           k->ams == q->k.ams && k->aks == q->k.aks && k->ga == q->k.ga && k->fmt == q->k.fmt &&
           (k->checked || !q->check);
}

const kg_kept *kg_kept_find(const kg_key *q) {
    pthread_mutex_lock(&kg_kept_lock);
    const kg_kept *k = q->owner->derived_free == kg_kept_free ? q->owner->derived : NULL;
    while (k && !kg_kept_match(k, q)) k = k->next;
    pthread_mutex_unlock(&kg_kept_lock);
    return k;
}

/* Keep ap (true: the tensor owns it now). */
bool kg_kept_add(const kg_key *q, float *ap, bool finite) {
    kg_kept *k = malloc(sizeof *k);
    if (!k) return false;
    *k = q->k;
    k->checked = q->check;
    k->finite = finite;
    k->ap = ap;
    k->next = NULL;
    mpx_tensor *t = q->owner;
    pthread_mutex_lock(&kg_kept_lock);
    bool ok = !t->derived || t->derived_free == kg_kept_free;
    /* Packings of values the tensor no longer holds (a folded weight gets a
     * new buffer when shapes are bound again) go, and rounded copies of
     * them: no kernel can be using one, since a kernel keeps only what
     * matches the tensor's values (the rounded copies are dropped last:
     * whether a packing is current is looked up among them). */
    for (int pass = 0; pass < 2; pass++)
        for (kg_kept **pp = ok ? (kg_kept **)&t->derived : NULL; pp && *pp;) {
            kg_kept *o = *pp;
            if ((o->kind == KG_KEPT_ROUNDED) != (pass == 1) || kg_kept_current(t, o->a)) {
                pp = &o->next;
                continue;
            }
            *pp = o->next;
            kg_kept_del(o);
        }
    for (const kg_kept *o = ok ? t->derived : NULL; o && ok; o = o->next) ok = !kg_kept_match(o, q);
    if (ok) {
        k->next = t->derived;
        t->derived = k;
        t->derived_free = kg_kept_free;
    }
    pthread_mutex_unlock(&kg_kept_lock);
    if (!ok) free(k);
    else if (k->kind != KG_KEPT_PREPARED && k->kind != KG_KEPT_FINITE) atomic_fetch_add(&kg_made, 1);
    return ok;
}

/* ---- made before the first run ----------------------------------------------------------------
 * Left to a session's first run, every weight is packed as the run reaches
 * it (ViT-B/16: 324 MB of fp32 packings, a quantised BERT-style encoder's
 * 16 integer matrices; a GRU's R transposed, 48 fresh pages of 4 KB at 15
 * us a fault on a KVM machine). ONNX Runtime packs them when a session is
 * created, which its timings leave out; mpx_k_prepare_node makes those forms when a
 * model is loaded: the same calls a fp32 run makes, on a one-row (or
 * two-column) product, so the same entries under the same keys, which the
 * run then finds; a run under another layout or format makes its own as
 * before. */

mpx_tensor *kg_prep_owner(const mpx_node *n, int k) {
    mpx_tensor *t = k < n->n_inputs ? n->inputs[k] : NULL;
    for (int depth = 0; t && depth < 16; depth++) { /* (as mpx_k_value_owner's walk) */
        if ((t->flags & (MPX_T_CONSTANT | MPX_T_FOLDED)) && (t->f32 || t->i64)) return t;
        const mpx_node *p = t->producer;
        if (!p || p->op != MPX_OP_Identity || p->n_inputs < 1) break;
        t = p->inputs[0];
    }
    return NULL;
}

/* One fp32 product of M x K by K x N on the GEMM core with a zero operand
 * beside the constant one (a_owner or b_owner): the core packs and keeps
 * the constant's panels as a run's call does. */
static void prep_gemm(const float *a, mpx_tensor *a_owner, const float *b, mpx_tensor *b_owner, int64_t b_ldt,
                      int64_t M, int64_t N, int64_t K) {
    float *zero = calloc((size_t)(a_owner ? K * N : M * K), sizeof *zero), *y = malloc((size_t)(M * N) * sizeof *y);
    int64_t *boff = malloc((size_t)K * sizeof *boff), *crow = malloc((size_t)M * sizeof *crow);
    if (zero && y && boff && crow) {
        for (int64_t k = 0; k < K; k++) boff[k] = k * N;
        for (int64_t i = 0; i < M; i++) crow[i] = i * N;
        kg_gemm g = {.M = M, .N = N, .K = K, .G = 1, .a = a_owner ? a : zero, .ams = K, .aks = 1,
                     .b = b_owner ? b : zero, .boff = boff, .c = y, .crow = crow, .gc = M * N, .gw = N,
                     .gvalid = N, .cs = 1, .mode = KG_FP32, .a_owner = a_owner, .b_owner = b_owner,
                     .b_ldt = b_ldt};
        (void)kg_gemm_run(&g); /* (out of memory: the run packs then) */
    }
    free(zero), free(y), free(boff), free(crow);
}

/* A MatMul's (or a Gemm's) constant K x N B, or with trans (a Gemm's
 * transB) N x K: its packing (kern_gemm.c's kg_kept_b), which a product of
 * one row makes and keeps (N > 1: a single column takes the
 * matrix-vector route, nothing packed). */
static size_t prep_b(mpx_tensor *t, bool trans) {
    if (!t || !t->f32 || t->dtype != MPX_DT_FLOAT || t->rank != 2 || t->dims[0] < 1 || t->dims[1] < 1) return 0;
    const int64_t K = t->dims[trans ? 1 : 0], N = t->dims[trans ? 0 : 1];
    const kg_key key = {.k = {.kind = trans ? KG_KEPT_BTPANELS : KG_KEPT_BPANELS, .a = t->f32, .M = N, .K = K,
                              .G = 1, .ams = trans ? 1 : N, .aks = trans ? K : 1},
                        .owner = t};
    if (N < 2 || kg_kept_find(&key)) return 0;
    prep_gemm(NULL, NULL, t->f32, t, trans ? K : 0, 1, N, K);
    return kg_kept_find(&key) ? (size_t)t->nelem * sizeof(float) : 0; /* (less the panels' padding) */
}

/* A recurrent op's constant W ([dirs][gates * hid][in]): the input
 * projection's A panels (kern_rnn.c: project_inputs), which a product of
 * two columns makes and keeps (one takes the matrix-vector route). */
static size_t prep_w(mpx_tensor *t) {
    if (!t || !t->f32 || t->dtype != MPX_DT_FLOAT || t->rank != 3 || t->dims[2] < 1) return 0;
    const int64_t M = t->dims[0] * t->dims[1], K = t->dims[2];
    const kg_key key = {.k = {.kind = KG_KEPT_PANELS, .a = t->f32, .M = M, .K = K, .G = 1, .ams = K, .aks = 1},
                        .owner = t};
    if (M < 1 || kg_kept_find(&key)) return 0;
    prep_gemm(t->f32, t, NULL, NULL, 0, M, 2, K);
    return kg_kept_find(&key) ? (size_t)t->nelem * sizeof(float) : 0; /* (less the panels' padding) */
}

size_t mpx_k_prepare_node(const mpx_node *n) {
    switch (n->op) {
    case MPX_OP_MatMul: return prep_b(kg_prep_owner(n, 1), false);
    case MPX_OP_Gemm: {
        /* transB: B^T kept where A has rows enough, else the run takes
         * other routes */
        const mpx_tensor *a = n->n_inputs > 0 ? n->inputs[0] : NULL;
        const bool tb = mpx_node_attr_int(n, "transB", 0) != 0;
        const int64_t M = a && a->rank == 2 ? a->dims[mpx_node_attr_int(n, "transA", 0) ? 1 : 0] : -1;
        return !tb || M >= GEMM_KEPT_T_MIN_M ? prep_b(kg_prep_owner(n, 1), tb) : 0;
    }
    case MPX_OP_LSTM: case MPX_OP_GRU: case MPX_OP_RNN:
        return prep_w(kg_prep_owner(n, 1)) + kg_prep_rnn(n);
    case MPX_OP_MatMulInteger: return kg_prep_qmm(n);
    case MPX_OP_ConvInteger: return kg_prep_qconv(n, 1, 3);
    case MPX_OP_QLinearConv: return kg_prep_qconv(n, 3, 5);
    default: return 0;
    }
}

/* ---- a run's forms, made before a comparison's values ------------------------------------------
 * A candidate's first run made the weights' rounded copies and their
 * packings in the rounded format as it reached each node (and the
 * reference's first run its convolutions' packings), in the heap between
 * its values, where they stay for the model's life; the next run's values,
 * the same sizes in another order, no longer fit the holes between them,
 * and the heap grew again (a process's second report took 1.5-2x its later
 * ones). Made before the run's values instead (compare.c), as the fp32
 * packings of products are made at load, they lie together below them. */

size_t mpx_k_prepare_rounded(mpx_tensor *t, const mpx_format *f) {
    const size_t before = atomic_load(&kg_made);
    (void)mpx_k_kept_rounded(t, f); /* (within its budget, as a run's) */
    return atomic_load(&kg_made) - before;
}

/* The mark that node n's prepare call on these values under (in_round,
 * acc, round) ran, kept on w, a constant whose values (or kept rounded
 * copy) v it was handed: a later comparison's prepare skips the call (a
 * kernel call on zeros costs its passes over them, a convolution's padded
 * copy of its input). Keyed by what the kernel's choice of route reads
 * besides the weights: the node, its first input's size (the shapes
 * bound) and the accumulation. */
static kg_key prep_mark(const mpx_node *n, mpx_tensor *w, const float *v, const mpx_format *f, const mpx_accum *acc,
                        const mpx_format *round) {
    const mpx_tensor *x = n->n_inputs > 0 ? n->inputs[0] : NULL;
    return (kg_key){.k = {.kind = KG_KEPT_PREPARED, .a = v, .M = n->index, .K = x ? x->nelem : -1,
                          .G = round && round->kind == MPX_FMT_FP16, .ams = acc->block, .aks = acc->flags,
                          .ga = (int64_t)(intptr_t)acc->fmt, .fmt = f},
                    .owner = w};
}

/* t's inferred shape (one_row: every axis but the last cut to 1) in v,
 * its values left for the caller; false where it is not known ahead. */
static bool prep_shape(const mpx_tensor *t, bool one_row, mpx_value *v) {
    if (t->dtype != MPX_DT_FLOAT || t->rank < 0 || t->rank > MPX_MAX_RANK || t->nelem < 0) return false;
    *v = (mpx_value){.dtype = t->dtype, .rank = t->rank, .n = 1, .borrowed = true};
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0) return false;
        v->dims[i] = one_row && i < t->rank - 1 ? 1 : t->dims[i];
        v->n *= v->dims[i];
    }
    return true;
}

size_t mpx_k_prepare_reads(const mpx_node *n, const mpx_accum *acc, const mpx_format *round,
                           const mpx_format *const *in_round, const mpx_value *const *given, float **zero,
                           size_t *zero_n) {
    enum { MAX_IN = 8 };
    const mpx_kernel_fn fn = mpx_kernel_for_node(n);
    const int ni = n->n_inputs, no = n->n_outputs;
    if (!fn || ni > MAX_IN || no > MAX_IN || n->body || mpx_node_is_f64(n)) return 0;
    int w = -1; /* the input the kernel reads rounded itself, or would (kernels.def): its weights */
    for (int k = 0; k < ni && w < 0; k++)
        if (given[k] && given[k]->f && n->inputs[k] && mpx_kernel_reads_rounded(n->op, k) &&
            kg_kept_holds(n->inputs[k], given[k]->f))
            w = k;
    if (w < 0) return 0;
    const kg_key mark = prep_mark(n, n->inputs[w], given[w]->f, in_round ? in_round[w] : NULL, acc, round);
    if (kg_kept_find(&mark)) return 0;
    /* A MatMul packs its B inside its batch's work items, which a
     * cancelled scope skips: it runs instead, on one row of A (a row's
     * product; its B kept as for any rows: the core's route for a constant B
     * does not depend on them, as mpx_k_prepare_node's one-row products). */
    const bool one_row = n->op == MPX_OP_MatMul;
    mpx_value zeros[MAX_IN], outs[MAX_IN];
    const mpx_value *ins[MAX_IN] = {0};
    size_t most = 1;
    for (int k = 0; k < ni; k++) {
        if (given[k] || !n->inputs[k]) {
            ins[k] = given[k];
            continue;
        }
        if (!prep_shape(n->inputs[k], one_row, &zeros[k])) return 0;
        if ((size_t)zeros[k].n > most) most = (size_t)zeros[k].n;
        ins[k] = &zeros[k];
    }
    if (most > *zero_n) { /* (one buffer of zeros for every input) */
        free(*zero);
        *zero_n = (*zero = calloc(most, sizeof **zero)) ? most : 0;
        if (!*zero) return 0;
    }
    for (int k = 0; k < ni; k++)
        if (ins[k] == &zeros[k]) zeros[k].f = *zero;
    for (int j = 0; j < no; j++) outs[j] = (mpx_value){.n = -1};
    /* The kernel as the run calls it (exec.c's context for the node), on
     * zeros: the same routes (they depend on the shapes, the weights and
     * the accumulation, not on the values), so the same forms under the
     * same keys. Its product is skipped: a cancelled scope stops the
     * kernels' work items (mpx_k_parallel_stoppable), and the GEMM core
     * packs and keeps a constant before its items run. */
    static const volatile int stop = 1;
    mpx_error e = {0};
    const mpx_kctx kc = {.node = n, .acc = *acc, .round = round, .err = &e, .in_round = in_round};
    const size_t before = atomic_load(&kg_made);
    const volatile int *scope = mpx_k_cancel_scope(one_row ? NULL : &stop);
    (void)fn(&kc, ins, ni, outs, no); /* (cancelled: its outputs are not values) */
    mpx_k_cancel_scope(scope);
    for (int j = 0; j < no; j++) mpx_value_free(&outs[j]);
    (void)kg_kept_add(&mark, NULL, true);
    return atomic_load(&kg_made) - before;
}
