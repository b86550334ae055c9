/* kern_kept.c - the list of derived forms kept on a constant's tensor
 * (kern_kept.h), guarded by one lock. */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MADV_HUGEPAGE */
#endif
#include "kern_kept.h"
#include "kern_gemm.h"

#include <pthread.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

static pthread_mutex_t kg_kept_lock = PTHREAD_MUTEX_INITIALIZER;

atomic_llong kg_rounded_bytes; /* the kept rounded copies' bytes (mpx_k_kept_rounded) */

float *kg_alloc(size_t n) {
    size_t bytes = (n ? n : 1) * sizeof(float);
    bytes = (bytes + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes);
}

/* ---- kept blocks apart from the heap ------------------------------------------------------------
 * A run takes its values from the heap, and a candidate's first run makes
 * its weights' rounded copies and their packings as it reaches each node,
 * between its values. Made in the heap, those blocks, which live as long
 * as the model, split the space the values came from, and the next run's
 * values (the same sizes, in another order: two threads run the jobs) no
 * longer fit the holes between them: the heap grew again in a process's
 * second report (mallinfo2 after each run: EfficientNet-B0 by 31 MB,
 * BERT-style 42, ResNet-18 10; by nothing from the third on), fresh memory,
 * which a virtual machine backs slowly (docs/benchmarks.md), the second
 * report 1.5 to 2 times the later ones. So a block meant to be kept that
 * holds rounded values (a copy in a low format, or a packing of one), of
 * KEPT_MIN bytes or more, is carved from chunks of its own: mappings of
 * CHUNK_BYTES on 2 MB boundaries with transparent huge pages asked for, as
 * the heap has them (a mapping a block in 4 KB pages made ResNet-18's first
 * run 2.7 times as long: 15 us a fault here). The fp32 packings stay in the
 * heap: they are the size of the weights, so they fill the holes the
 * model's decoded bytes leave after a load, where a first run would
 * otherwise take fresh memory for its values (every kept block in chunks:
 * first runs 1.2-1.4 times as long, peak RSS up 12-25%). From 16 KB: a
 * small model's convolution weights are mostly below 256 KB (with every
 * kept block in chunks from 256 KB, EfficientNet-B0's heap still grew by
 * 10 MB). The second run's growth left (docs/benchmarks.md) is the values'
 * own order. A chunk counts its live blocks and
 * is unmapped when the last goes (the current one is carved again from its
 * start); the space of a block dropped while others of its chunk live is
 * not reused before that (kept blocks go together: with their model, or
 * when its shapes are bound again). Moving blocks there once kept would
 * copy them and leave their heap pages resident beside the copy. */
enum { KEPT_MIN = 16 << 10, CHUNK_BYTES = 32 << 20, HUGE = 2 << 20 };

struct kg_chunk {
    char *base;
    size_t bytes, used; /* mapped; carved so far */
    long live;          /* blocks carved and not released */
};

static pthread_mutex_t chunk_lock = PTHREAD_MUTEX_INITIALIZER;
static kg_chunk *chunk_now; /* the chunk blocks are carved from (under chunk_lock) */

static kg_chunk *chunk_map(size_t bytes) {
#ifdef __linux__
    kg_chunk *c = malloc(sizeof *c);
    /* HUGE more, and the ends trimmed to put base on a 2 MB boundary (only
     * whole aligned 2 MB ranges get huge pages) */
    char *p = c ? mmap(NULL, bytes + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
    if (p == MAP_FAILED) {
        free(c);
        return NULL;
    }
    const size_t head = (size_t)(-(uintptr_t)p & (HUGE - 1));
    if (head) munmap(p, head);
    if (HUGE - head) munmap(p + head + bytes, HUGE - head);
#ifdef MADV_HUGEPAGE
    (void)madvise(p + head, bytes, MADV_HUGEPAGE);
#endif
    *c = (kg_chunk){.base = p + head, .bytes = bytes};
    return c;
#else
    (void)bytes;
    return NULL;
#endif
}

static void chunk_unmap(kg_chunk *c) {
#ifdef __linux__
    munmap(c->base, c->bytes);
#endif
    free(c);
}

float *kg_alloc_kept(const kg_key *q, size_t n, kg_chunk **home) {
    *home = NULL;
    const size_t bytes = n <= SIZE_MAX / 8 ? ((n ? n : 1) * sizeof(float) + 63) & ~(size_t)63 : 0;
    /* rounded: to a format as packed, or a packing of a rounded copy (its
     * values are not the tensor's own) */
    const bool rounded = q->k.fmt || (q->owner && q->k.a != q->owner->f32);
    if (bytes < KEPT_MIN || !rounded) return kg_alloc(n);
    pthread_mutex_lock(&chunk_lock);
    kg_chunk *c;
    if (bytes > CHUNK_BYTES / 4) { /* a chunk of its own */
        c = chunk_map((bytes + HUGE - 1) & ~(size_t)(HUGE - 1));
    } else {
        if (!chunk_now || chunk_now->used + bytes > chunk_now->bytes) {
            kg_chunk *old = chunk_now;
            chunk_now = chunk_map(CHUNK_BYTES);
            if (old && old->live == 0) chunk_unmap(old);
        }
        c = chunk_now;
    }
    float *p = NULL;
    if (c) {
        p = (float *)(void *)(c->base + c->used);
        c->used += bytes;
        c->live++;
    }
    pthread_mutex_unlock(&chunk_lock);
    if (!p) return kg_alloc(n); /* (no mapping: the heap's) */
    *home = c;
    return p;
}

void kg_free_kept(float *p, kg_chunk *home) {
    if (!p) return; /* (one kept meanwhile: its block is the list's now) */
    if (!home) {
        free(p);
        return;
    }
    pthread_mutex_lock(&chunk_lock);
    if (--home->live == 0) {
        if (home == chunk_now) home->used = 0;
        else chunk_unmap(home);
    }
    pthread_mutex_unlock(&chunk_lock);
}

float *kg_unkept(float *p, size_t n, kg_chunk *home) {
    if (!p || !home) return p;
    float *h = kg_alloc(n);
    if (h) memcpy(h, p, n * sizeof *h);
    kg_free_kept(p, home);
    return h;
}

static void kg_kept_del(kg_kept *k) {
    if (k->kind == KG_KEPT_ROUNDED) atomic_fetch_sub(&kg_rounded_bytes, k->M * (long long)sizeof(float));
    kg_free_kept(k->ap, k->home);
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
bool kg_kept_add(const kg_key *q, float *ap, kg_chunk *home, bool finite) {
    kg_kept *k = malloc(sizeof *k);
    if (!k) return false;
    *k = q->k;
    k->checked = q->check;
    k->finite = finite;
    k->ap = ap;
    k->home = home;
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
