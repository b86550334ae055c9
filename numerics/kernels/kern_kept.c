/* kern_kept.c - the list of derived forms kept on a constant's tensor
 * (kern_kept.h), guarded by one lock. */
#include "kern_kept.h"
#include "kern_gemm.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t kg_kept_lock = PTHREAD_MUTEX_INITIALIZER;

atomic_llong kg_rounded_bytes; /* the kept rounded copies' bytes (mpx_k_kept_rounded) */

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
    default: return 0;
    }
}
