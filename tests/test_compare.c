/* test_compare.c - the streaming per-layer comparison (numerics/compare.c):
 * its metrics are bit for bit those of two whole mpx_run_graph runs (and a
 * local run), on the example CNN and transformer and on hand-built graphs;
 * overflow shows in the layer metrics; local mode separates a node's own
 * error from what it inherits; keep; values are freed after their last
 * reader (peak_bytes on a chain); cancel, progress, and errors that return
 * nothing and leak nothing (run it under the sanitizer build); the
 * incremental cache: re-runs after recolouring a late or an early node, or
 * nothing, are bit for bit full runs. */
#include "check.h"
#include "compare_internal.h"
#include "graph_build.h"
#include "mpx_numerics.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static mpx_error err;

/* ---- building graphs in one line (tests/graph_build.h) ------------------------ */

static mpx_graph *finish(mpx_graph *g, const char *outputs) {
    mpx_status st = gb_build(g, outputs, &err);
    CHECK_MSG(st == MPX_OK, "building the test graph: %s", err.msg);
    return g;
}

static mpx_tensor *T(const mpx_graph *g, const char *name) {
    return mpx_graph_find_tensor(g, name);
}


static mpx_value fvalue(int rank, const int64_t *dims, const float *data) {
    mpx_value v;
    mpx_value_alloc(&v, MPX_DT_FLOAT, rank, dims, NULL);
    for (int64_t k = 0; data && k < v.n; k++) v.f[k] = data[k];
    return v;
}

static mpx_run *run_(int line, const mpx_graph *g, const mpx_assign *a, const mpx_value *in,
                     const mpx_run *local) {
    mpx_run *r = NULL;
    mpx_run_opts o = {.local_ref = local};
    mpx_error_clear(&err);
    mpx_status st = mpx_run_graph(g, a, in, &o, &r, &err);
    CHECK_MSG(st == MPX_OK && r, "line %d: run failed: %s", line, err.msg);
    return r;
}
#define RUN(...) run_(__LINE__, __VA_ARGS__)

static mpx_compare *compare_(int line, const mpx_graph *g, const mpx_assign *a,
                             const mpx_value *in, const mpx_compare_opts *o) {
    mpx_compare *c = NULL;
    mpx_error_clear(&err);
    mpx_status st = mpx_compare_run(g, a, in, o, &c, &err);
    CHECK_MSG(st == MPX_OK && c, "line %d: compare failed: %s", line, err.msg);
    return c;
}
#define COMPARE(...) compare_(__LINE__, __VA_ARGS__)

static bool same_bits(const mpx_value *x, const mpx_value *y) {
    if (x->n != y->n || x->rank != y->rank || !x->f != !y->f) return false;
    for (int k = 0; k < x->rank; k++)
        if (x->dims[k] != y->dims[k]) return false;
    if (x->n <= 0) return true;
    return x->f ? memcmp(x->f, y->f, (size_t)x->n * sizeof *x->f) == 0
                : memcmp(x->i, y->i, (size_t)x->n * sizeof *x->i) == 0;
}

/* Bytes of every value the runs hold (what keeping everything costs). */
static size_t run_bytes(const mpx_run *r) {
    size_t b = 0;
    for (int i = 0; r && i < r->n; i++) b += mpx_value_bytes(&r->vals[i]);
    return b;
}

/* The comparison the streaming one replaces: whole runs, every value kept,
 * then the metrics of every float tensor a node computed; c must list the
 * same layers in the same order with the same bits (mpx_metrics is all
 * 8-byte fields, so memcmp sees every bit, NaNs included). Returns the
 * bytes the whole runs held. */
static size_t check_equal_m_(int line, const mpx_graph *g, const mpx_assign *a, const mpx_value *in,
                             const mpx_compare *c, bool local, const bool *measure) {
    mpx_run *ref = RUN(g, NULL, in, NULL), *cand = RUN(g, a, in, NULL);
    mpx_run *loc = local && ref ? RUN(g, a, in, ref) : NULL;
    size_t bytes = run_bytes(ref) + run_bytes(cand) + run_bytes(loc);
    int k = 0, bad = 0;
    if (ref && cand && c && (!local || loc)) {
        for (int ni = 0; ni < g->n_nodes; ni++) {
            const mpx_node *n = g->nodes[ni];
            for (int q = 0; q < n->n_outputs; q++) {
                const mpx_tensor *t = n->outputs[q];
                if (!t || (t->flags & MPX_T_CONSTANT)) continue;
                const mpx_value *r = &ref->vals[t->index], *v = &cand->vals[t->index];
                if (r->n < 0 || v->n < 0 || !r->f || !v->f) continue;
                const mpx_format *f = a && a->tensor[t->index] &&
                                              a->tensor[t->index]->kind != MPX_FMT_FP32
                                          ? a->tensor[t->index]
                                          : NULL;
                mpx_metrics m, ml;
                CHECK(mpx_metrics_compute(r, v, f, &m, &err) == MPX_OK);
                if (local)
                    CHECK(mpx_metrics_compute(r, &loc->vals[t->index], f, &ml, &err) == MPX_OK);
                const mpx_layer *L = k < c->n_layers ? &c->layers[k] : NULL;
                /* A layer left out by measure has no figures; one measured
                 * has the whole run's bits (a cached run may still hold a
                 * layer's earlier figures: they are the same). */
                bool left_out = L && L->unmeasured && measure && !measure[t->index] && isnan(L->m.rel_l2) &&
                                isnan(L->m.max_abs) && L->m.overflow == 0;
                bool ok = L && L->tensor == t->index && L->node == n->index && L->fmt == f &&
                          (left_out || (!L->unmeasured && memcmp(&L->m, &m, sizeof m) == 0)) &&
                          L->has_local == local && (!local || memcmp(&L->local, &ml, sizeof ml) == 0);
                if (!ok && bad++ < 3)
                    fprintf(stderr, "line %d: layer %d (%s) differs\n", line, k, t->name);
                k++;
            }
        }
        CHECK_MSG(bad == 0 && k == c->n_layers, "line %d: %d layers differ; %d layers, want %d",
                  line, bad, c->n_layers, k);
        /* Kept values are the runs' values; nothing else is kept. */
        for (int i = 0; i < g->n_tensors; i++) {
            if (!(g->tensors[i]->flags & MPX_T_OUTPUT)) continue;
            CHECK_MSG(same_bits(&c->ref[i], &ref->vals[i]) && same_bits(&c->cand[i], &cand->vals[i]),
                      "line %d: kept output %s", line, g->tensors[i]->name);
        }
    }
    mpx_run_free(ref);
    mpx_run_free(cand);
    mpx_run_free(loc);
    return bytes;
}
static size_t check_equal_(int line, const mpx_graph *g, const mpx_assign *a, const mpx_value *in,
                           const mpx_compare *c, bool local) {
    return check_equal_m_(line, g, a, in, c, local, NULL);
}
#define CHECK_EQUAL(...) check_equal_(__LINE__, __VA_ARGS__)

static int64_t live_count(const mpx_graph *g, const mpx_value *vals) {
    int64_t n = 0;
    for (int i = 0; i < g->n_tensors; i++) n += vals[i].n >= 0;
    return n;
}

/* ---- equality with whole runs ----------------------------------------------------------- */

static void test_model(const char *file, const int64_t *dims, int rank) {
    /* The examples' input dims are symbolic ("batch", "height"): bound here. */
    mpx_graph *g = gb_load_example(file, rank, dims, &err);
    CHECK_MSG(g != NULL, "%s: %s", file, err.msg);
    if (!g) return;
    for (int i = 0; i < g->n_nodes; i++)
        if (!mpx_kernel_for(g->nodes[i]->op)) {
            printf("test_compare: skipped %s (no %s kernel yet)\n", file, g->nodes[i]->op_type);
            mpx_graph_free(g);
            return;
        }
    mpx_value x;
    mpx_value_alloc(&x, MPX_DT_FLOAT, rank, dims, NULL);
    gb_fill_normal(&x, 7);
    const mpx_assign *as[4] = {
        mpx_assign_uniform(g, &mpx_format_fp16, NULL, false),
        mpx_assign_uniform(g, &mpx_format_fp16, NULL, true),
        mpx_assign_uniform(g, &mpx_format_bf16, &mpx_format_bf16, false),
        NULL, /* fp32 against itself */
    };
    for (int k = 0; k < 4; k++) {
        for (int local = 0; local < 2; local++) {
            /* One thread for the local runs, a worker for the others. */
            mpx_compare_opts o = {.local = local, .threads = local ? 1 : 2};
            mpx_compare *c = COMPARE(g, as[k], &x, &o);
            size_t whole = CHECK_EQUAL(g, as[k], &x, c, local);
            if (c) {
                CHECK(c->n_layers > 0);
                CHECK_MSG(c->peak_bytes > 0 && c->peak_bytes < whole,
                          "%s: peak %zu bytes, whole runs %zu", file, c->peak_bytes, whole);
                CHECK(c->ms_ref >= 0 && c->ms_cand >= 0 && c->ms_metrics >= 0);
                CHECK(local ? c->ms_local >= 0 : c->ms_local == 0);
                /* Only the model's output values are kept. */
                CHECK(live_count(g, c->ref) == g->n_outputs &&
                      live_count(g, c->cand) == g->n_outputs);
                if (k == 3) {
                    const mpx_layer *L = mpx_compare_layer(c, g->outputs[0]->index);
                    CHECK(L && L->m.rel_l2 == 0 && L->m.max_abs == 0);
                }
                if (k == 1 && local)
                    printf("test_compare: %s fp16 local: %d layers, peak %zu bytes (whole runs "
                           "%zu)\n",
                           file, c->n_layers, c->peak_bytes, whole);
            }
            mpx_compare_free(c);
        }
    }
    /* All four candidates against one shared reference: each result is the
     * single run's, layer for layer and bit for bit, kept values too. */
    for (int local = 0; local < 2; local++)
        for (int threads = 1; threads <= 2; threads++) {
            mpx_compare_opts o = {.local = local, .threads = threads};
            mpx_compare *many[4] = {0};
            mpx_error_clear(&err);
            CHECK_MSG(mpx_compare_run_many(g, as, 4, &x, &o, many, &err) == MPX_OK, "%s",
                      err.msg);
            for (int k = 0; k < 4 && many[0]; k++) {
                mpx_compare *one = COMPARE(g, as[k], &x, &o);
                bool same = one && many[k] && one->n_layers == many[k]->n_layers;
                for (int i = 0; same && i < one->n_layers; i++) {
                    const mpx_layer *a = &one->layers[i], *b = &many[k]->layers[i];
                    same = a->tensor == b->tensor && a->node == b->node && a->fmt == b->fmt &&
                           memcmp(&a->m, &b->m, sizeof a->m) == 0 &&
                           a->has_local == b->has_local &&
                           (!a->has_local || memcmp(&a->local, &b->local, sizeof a->local) == 0);
                }
                for (int i = 0; same && i < g->n_tensors; i++)
                    same = (one->ref[i].n < 0) == (many[k]->ref[i].n < 0) &&
                           (one->ref[i].n < 0 || same_bits(&one->ref[i], &many[k]->ref[i])) &&
                           (one->cand[i].n < 0) == (many[k]->cand[i].n < 0) &&
                           (one->cand[i].n < 0 || same_bits(&one->cand[i], &many[k]->cand[i]));
                CHECK_MSG(same, "%s: candidate %d of 4 (local %d, threads %d) differs from its own run",
                          file, k, local, threads);
                mpx_compare_free(one);
            }
            for (int k = 0; k < 4; k++) mpx_compare_free(many[k]);
        }
    mpx_compare *none[9] = {0};
    CHECK(mpx_compare_run_many(g, as, 0, &x, NULL, none, &err) == MPX_E_ARG && !none[0]);
    CHECK_CONTAINS(err.msg, "0 candidates: from 1 to 8 at once");
    const mpx_assign *nine[9] = {0};
    CHECK(mpx_compare_run_many(g, nine, 9, &x, NULL, none, &err) == MPX_E_ARG && !none[0]);
    CHECK_CONTAINS(err.msg, "9 candidates: from 1 to 8 at once");
    for (int k = 0; k < 4; k++) mpx_assign_free((mpx_assign *)as[k]);
    mpx_value_free(&x);
    mpx_graph_free(g);
}

/* A hand-built chain with a branch, a constant shared by two nodes, a tensor
 * read twice by one node, an int64 side path and a second output. */
static void test_chain_equal(void) {
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "m1", "Mul", "x:f:2x8 c=f[0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8]", "t1", "");
    node(g, "a1", "Add", "t1 t1", "t2", "");
    node(g, "r1", "Relu", "t2", "t3", "");
    node(g, "m2", "Mul", "t3 c", "t4", "");
    node(g, "s1", "Sub", "t4 t1", "t5", "");
    node(g, "shp", "Shape", "t5", "s", "");
    node(g, "rs", "Reshape", "t5 s", "y", "");
    finish(g, "y t3");
    int64_t d[2] = {2, 8};
    mpx_value x;
    mpx_value_alloc(&x, MPX_DT_FLOAT, 2, d, NULL);
    gb_fill_normal(&x, 3);
    mpx_assign *a = mpx_assign_uniform(g, &mpx_format_fp16, &mpx_format_fp16, false);
    mpx_assign *b = mpx_assign_uniform(g, &mpx_format_fp8e4m3_sat, NULL, true);
    for (int v = 0; v < 4; v++) {
        bool local = v & 1;
        mpx_compare_opts o = {.local = local, .threads = v < 2 ? 1 : 2};
        mpx_compare *c = COMPARE(g, a, &x, &o);
        CHECK_EQUAL(g, a, &x, c, local);
        if (c) {
            CHECK(c->n_layers == 6); /* t1..t5 and y; not the int64 shape */
            CHECK(mpx_compare_layer(c, T(g, "s")->index) == NULL);
            CHECK(mpx_compare_layer(c, T(g, "t2")->index)->fmt == &mpx_format_fp16);
        }
        mpx_compare_free(c);
        c = COMPARE(g, b, &x, &o);
        CHECK_EQUAL(g, b, &x, c, local);
        mpx_compare_free(c);
    }
    mpx_assign_free(a);
    mpx_assign_free(b);
    mpx_value_free(&x);
    mpx_graph_free(g);
}

/* ---- what the metrics say ----------------------------------------------------------------- */

/* 300 * 300 = 90000 overflows fp16 (max 65504); bf16 holds it as 90112. */
static void test_overflow(void) {
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "mul", "Mul", "x:f:2 c=f[300,2]", "p", "");
    node(g, "relu", "Relu", "p", "y", "");
    finish(g, "y");
    int64_t d = 2;
    float xd[2] = {300, 3};
    mpx_value x = fvalue(1, &d, xd);
    mpx_assign *h = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
    mpx_assign *b = mpx_assign_uniform(g, &mpx_format_bf16, NULL, false);
    mpx_compare *ch = COMPARE(g, h, &x, NULL), *cb = COMPARE(g, b, &x, NULL);
    if (ch && cb) {
        const mpx_layer *lh = mpx_compare_layer(ch, T(g, "p")->index);
        const mpx_layer *lb = mpx_compare_layer(cb, T(g, "p")->index);
        CHECK(lh && lh->m.overflow == 1 && isinf(lh->m.rel_l2) && lh->m.absmax_ref == 90000.0);
        CHECK(lb && lb->m.overflow == 0 && isfinite(lb->m.rel_l2) && lb->m.rel_l2 > 0 &&
              lb->m.rel_l2 < 1e-2);
        CHECK(lh && lh->fmt == &mpx_format_fp16 && lb && lb->fmt == &mpx_format_bf16);
        /* The infinity travels on: Relu inherits it. */
        lh = mpx_compare_layer(ch, T(g, "y")->index);
        CHECK(lh && lh->m.overflow == 1 && !lh->has_local);
        CHECK(ch->cand[T(g, "y")->index].n == 2 && isinf(ch->cand[T(g, "y")->index].f[0]));
        CHECK(cb->cand[T(g, "y")->index].f[0] == 90112.0f);
    }
    CHECK_EQUAL(g, h, &x, ch, false);
    CHECK_EQUAL(g, b, &x, cb, false);
    mpx_compare_free(ch);
    mpx_compare_free(cb);
    mpx_assign_free(h);
    mpx_assign_free(b);
    mpx_value_free(&x);
    mpx_graph_free(g);
}

/* Only the first node loses anything: Floor of x after x is rounded to fp16
 * on entry (2.9998 -> 3 in fp16, so floor 3 where the reference says 2).
 * The reference's floors are small integers, exact in fp16, so the Mul and
 * Add after it, fed the reference values, compute exactly: their local error
 * is 0 while the error they inherit is large. */
static void test_local(void) {
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "fl", "Floor", "x:f:4", "t1", "");
    node(g, "m", "Mul", "t1 c=f[0.5,2,4,8]", "t2", "");
    node(g, "a", "Add", "t2 t1", "y", "");
    finish(g, "y");
    int64_t d = 4;
    float xd[4] = {2.9998f, 1.5f, 7.9999f, -3.25f};
    mpx_value x = fvalue(1, &d, xd);
    mpx_assign *h = mpx_assign_uniform(g, &mpx_format_fp16, NULL, true);
    mpx_compare_opts o = {.local = true};
    mpx_compare *c = COMPARE(g, h, &x, &o);
    if (c) {
        const mpx_layer *l1 = mpx_compare_layer(c, T(g, "t1")->index);
        const mpx_layer *l2 = mpx_compare_layer(c, T(g, "t2")->index);
        const mpx_layer *ly = mpx_compare_layer(c, T(g, "y")->index);
        CHECK(l1 && l2 && ly && l1->has_local && l2->has_local && ly->has_local);
        if (l1 && l2 && ly) {
            /* The first node's own error is all of its error. */
            CHECK(l1->m.rel_l2 > 0.05 && l1->local.rel_l2 == l1->m.rel_l2);
            CHECK_MSG(l2->m.rel_l2 > 0.05 && l2->local.rel_l2 == 0,
                      "Mul: inherited %g, local %g", l2->m.rel_l2, l2->local.rel_l2);
            CHECK_MSG(ly->m.rel_l2 > 0.05 && ly->local.rel_l2 == 0,
                      "Add: inherited %g, local %g", ly->m.rel_l2, ly->local.rel_l2);
        }
    }
    CHECK_EQUAL(g, h, &x, c, true);
    mpx_compare_free(c);
    mpx_assign_free(h);
    mpx_value_free(&x);
    mpx_graph_free(g);
}

/* The metrics' float sums run in eight lanes whatever the CPU: the AVX-512
 * and AVX2 paths (which do not check for non-finite values as they go and
 * start again on the checking path when there were any; AVX2's in chunks of
 * 1024, hence 4099 and 5003) and the portable one give the same bits, for
 * lengths around the 8- and 16-element blocks and the 65536-element pieces
 * (metrics.c), with zeros, values below the format's normal range, infinities
 * and NaNs in the first block, the last block (the last piece), the middle
 * and the tail. */
static void test_metrics_paths(void) {
    static const char *const paths[][2] = {{"MPX_KERN_AVX2", "1"}, {"MPX_KERN_PORTABLE", "1"}};
    static const int64_t lens[] = {1,    7,    8,    9,    15,   16,           17,           23,
                                   24,   31,   32,   33,   1000, 4099,         5003,         65536,
                                   65544, 196608, 196613};
    mpx_rng rng;
    mpx_rng_init(&rng, 12345);
    int compared = 0;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
        for (int kind = 0; kind < 5; kind++) {
            int64_t n = lens[li];
            mpx_value r = fvalue(1, &n, NULL), c = fvalue(1, &n, NULL);
            for (int64_t k = 0; k < n; k++) {
                float x = (float)(mpx_rng_unit(&rng) * 8.0 - 4.0);
                r.f[k] = x;
                c.f[k] = k % 5 == 0 ? 0.0f : k % 7 == 0 ? 3e-6f * x : x * (1.0f + 0x1p-9f);
            }
            /* kind 1-4: a non-finite value at the start, in the last block,
             * in the reference, or a NaN pair in the tail */
            if (kind == 1) c.f[0] = INFINITY;
            if (kind == 2) c.f[n - 1 - (n > 9 ? 8 : 0)] = -INFINITY;
            if (kind == 3) r.f[n / 2] = NAN;
            if (kind == 4) r.f[n - 1] = c.f[n - 1] = NAN;
            mpx_metrics m0, m1;
            CHECK(mpx_metrics_compute(&r, &c, &mpx_format_fp16, &m0, &err) == MPX_OK);
            for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
                setenv(paths[p][0], paths[p][1], 1);
                CHECK(mpx_metrics_compute(&r, &c, &mpx_format_fp16, &m1, &err) == MPX_OK);
                unsetenv(paths[p][0]);
                CHECK_MSG(memcmp(&m0, &m1, sizeof m0) == 0,
                          "n %lld, case %d: %s gives other metrics (rel_l2 %.17g, %.17g)",
                          (long long)n, kind, paths[p][0], m0.rel_l2, m1.rel_l2);
                compared++;
            }
            /* Both candidates in one pass (as a report takes fp16 and bf16):
             * each the same bits as alone, whether or not the other holds a
             * non-finite value. */
            mpx_value c2 = fvalue(1, &n, NULL);
            for (int64_t k = 0; k < n; k++) c2.f[k] = k % 3 == 0 ? r.f[k] : r.f[k] * 0.75f;
            if (kind == 2) c2.f[0] = NAN;
            const mpx_value *cs[3] = {&c, &c2, &r};
            const mpx_format *fs[3] = {&mpx_format_fp16, &mpx_format_bf16, NULL};
            for (int nc = 1; nc <= 3; nc++) {
                mpx_metrics mm[3], one;
                CHECK(mpx_metrics_compute_many(&r, cs, fs, nc, mm, &err) == MPX_OK);
                for (int q = 0; q < nc; q++) {
                    CHECK(mpx_metrics_compute(&r, cs[q], fs[q], &one, &err) == MPX_OK);
                    CHECK_MSG(memcmp(&one, &mm[q], sizeof one) == 0,
                              "n %lld, case %d: candidate %d of %d in one pass differs", (long long)n,
                              kind, q, nc);
                }
            }
            mpx_value_free(&c2);
            /* What the figures say, so that all paths being wrong alike fails too. */
            if (kind == 0 && n >= 16) CHECK(m0.subnormal > 0 && m0.underflow > 0 && m0.rel_l2 > 0.1 && m0.rel_l2 < 1);
            if (kind == 1) CHECK(m0.overflow == 1 && isinf(m0.rel_l2));
            if (kind == 3) CHECK(isinf(m0.rel_l2) && m0.overflow == 0);
            if (kind == 4) CHECK(isfinite(m0.rel_l2) && m0.overflow == 0);
            mpx_value_free(&r);
            mpx_value_free(&c);
        }
    CHECK(compared == 19 * 5 * 2);
}

/* rel_l2 in the documented order, by hand: per piece of 65536 elements,
 * eight lanes (element k of the piece in lane k % 8, whole blocks of eight,
 * fused multiply-adds from zero), the pieces' lanes added in piece order,
 * the lanes added ((0+1)+(2+3)) + ((4+5)+(6+7)), then the tail shorter than
 * a block one element at a time. mpx_metrics_compute must give these bits
 * whatever the CPU path and the number of threads taking the pieces. */
static double rel_l2_by_hand(const float *x, const float *y, int64_t n) {
    enum { P = 65536 };
    double se[8] = {0}, rr[8] = {0};
    const int64_t body = n - n % 8;
    for (int64_t k0 = 0; k0 < body; k0 += P) {
        double pse[8] = {0}, prr[8] = {0};
        for (int64_t k = k0; k < body && k < k0 + P; k++) {
            const double a = x[k], d = (double)y[k] - a;
            pse[k % 8] = fma(d, d, pse[k % 8]);
            prr[k % 8] = fma(a, a, prr[k % 8]);
        }
        for (int l = 0; l < 8; l++) se[l] = se[l] + pse[l], rr[l] = rr[l] + prr[l];
    }
    double s = ((se[0] + se[1]) + (se[2] + se[3])) + ((se[4] + se[5]) + (se[6] + se[7]));
    double r = ((rr[0] + rr[1]) + (rr[2] + rr[3])) + ((rr[4] + rr[5]) + (rr[6] + rr[7]));
    for (int64_t k = body; k < n; k++) {
        const double a = x[k], d = (double)y[k] - a;
        s = fma(d, d, s);
        r = fma(a, a, r);
    }
    return sqrt(s) / sqrt(r);
}

static void test_metrics_pieces(void) {
    static const int64_t lens[] = {100, 65536, 65541, 3 * 65536 + 3, 7 * 65536 + 16};
    mpx_rng rng;
    mpx_rng_init(&rng, 777);
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        int64_t n = lens[li];
        mpx_value r = fvalue(1, &n, NULL), c = fvalue(1, &n, NULL), c2 = fvalue(1, &n, NULL);
        for (int64_t k = 0; k < n; k++) {
            r.f[k] = (float)(mpx_rng_unit(&rng) * 8.0 - 4.0) * (k % 1000 == 0 ? 1000.0f : 1.0f);
            c.f[k] = mpx_round_scalar(&mpx_format_fp16, r.f[k]);
            c2.f[k] = mpx_round_scalar(&mpx_format_bf16, r.f[k]);
        }
        mpx_metrics m, mm[2];
        CHECK(mpx_metrics_compute(&r, &c, &mpx_format_fp16, &m, &err) == MPX_OK);
        const double want = rel_l2_by_hand(r.f, c.f, n);
        CHECK_MSG(m.rel_l2 == want, "n %lld: rel_l2 %.17g, by hand %.17g", (long long)n, m.rel_l2, want);
        const mpx_value *cs[2] = {&c, &c2};
        const mpx_format *fs[2] = {&mpx_format_fp16, &mpx_format_bf16};
        CHECK(mpx_metrics_compute_many(&r, cs, fs, 2, mm, &err) == MPX_OK);
        CHECK(mm[0].rel_l2 == want && mm[1].rel_l2 == rel_l2_by_hand(r.f, c2.f, n));
        mpx_value_free(&r);
        mpx_value_free(&c);
        mpx_value_free(&c2);
    }
}

/* ---- memory: keep, freeing after the last reader ------------------------------------------- */

/* x -> 10 nodes -> y, 1000 floats each: streaming holds the value being read
 * and the one being made in each run (4 activations, plus the fp16 copy of
 * the scalar), whole runs hold all 22; and with every node pointwise, each
 * step writes its output over its input (no later job reads it), so each
 * run holds one (2 activations), unless MPX_CMP_NOINPLACE says not to. */
static void test_chain_memory(void) {
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    char in[32], out[32];
    for (int k = 0; k < 10; k++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", k);
        /* Even nodes negate, odd ones scale by the shared scalar c. */
        if (k == 0)
            snprintf(in, sizeof in, "x:f:1000");
        else if (k == 1)
            snprintf(in, sizeof in, "t1 c=f1.5");
        else
            snprintf(in, sizeof in, k % 2 ? "t%d c" : "t%d", k);
        snprintf(out, sizeof out, k == 9 ? "y" : "t%d", k + 1);
        node(g, name, k % 2 ? "Mul" : "Neg", in, out, "");
    }
    finish(g, "y");
    int64_t d = 1000;
    mpx_value x;
    mpx_value_alloc(&x, MPX_DT_FLOAT, 1, &d, NULL);
    gb_fill_normal(&x, 5);
    mpx_assign *h = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
    const size_t act = 1000 * sizeof(float);
    for (int run = 0; run < 4; run++) {
        const int threads = run % 2 + 1;
        const bool inplace = run < 2;
        if (!inplace) setenv("MPX_CMP_NOINPLACE", "1", 1);
        mpx_compare_opts o = {.threads = threads};
        mpx_compare *c = COMPARE(g, h, &x, &o);
        size_t whole = CHECK_EQUAL(g, h, &x, c, false);
        CHECK(whole >= 22 * act);
        if (c) {
            CHECK(c->n_layers == 10);
            /* on two threads, steps of the next nodes may run beside the
             * first unfinished one's, within the peak already reached (see
             * the keep case below): a step's outputs or two more */
            const size_t least = inplace ? 2 * act : 4 * act;
            size_t most = threads == 1 ? least + 64 : least + 2 * act + 64;
            CHECK_MSG(c->peak_bytes >= least && c->peak_bytes <= most,
                      "%d thread(s)%s: peak %zu bytes, want about %zu", threads ? threads : 2,
                      inplace ? "" : ", not in place", c->peak_bytes, least);
            CHECK(c->peak_bytes < whole / 4);
            CHECK(live_count(g, c->ref) == 1 && c->ref[T(g, "y")->index].n == 1000);
        }
        mpx_compare_free(c);
        unsetenv("MPX_CMP_NOINPLACE");
    }

    /* keep: the asked tensor (and the output) survive, no other value does. */
    bool *keep = calloc((size_t)g->n_tensors, sizeof *keep);
    keep[T(g, "t4")->index] = true;
    mpx_compare_opts o = {.keep = keep, .local = true};
    mpx_compare *c = NULL;
    for (int threads = 1; threads <= 2; threads++) {
    mpx_compare_free(c);
    o.threads = threads;
    c = COMPARE(g, h, &x, &o);
    CHECK_EQUAL(g, h, &x, c, true);
    if (c) {
        mpx_run *ref = RUN(g, NULL, &x, NULL), *cand = RUN(g, h, &x, NULL);
        int t4 = T(g, "t4")->index;
        if (ref && cand)
            CHECK(same_bits(&c->ref[t4], &ref->vals[t4]) &&
                  same_bits(&c->cand[t4], &cand->vals[t4]));
        mpx_run_free(ref);
        mpx_run_free(cand);
        for (int i = 0; i < g->n_tensors; i++) {
            bool kept = i == t4 || i == T(g, "y")->index;
            CHECK_MSG((c->ref[i].n >= 0) == kept && (c->cand[i].n >= 0) == kept, "%s",
                      g->tensors[i]->name);
        }
        CHECK(c->ref[T(g, "t3")->index].n == -1 && c->cand[T(g, "x")->index].n == -1);
        /* t4 stays alive to the end, as does a local output while compared:
         * on one thread the stream holds 8 activations at most. On two, a
         * thread with nothing of the first unfinished node to do may run
         * steps of the next ones (while the values stay under the peak
         * already reached, room kept for the first node's own: compare.c),
         * whose outputs then sit beside the first node's: a few more (at
         * most two seen in 150 runs; whole runs hold 22). */
        size_t most = threads == 1 ? 8 * act + 64 : 12 * act + 64;
        CHECK_MSG(c->peak_bytes > 4 * act && c->peak_bytes <= most, "%d thread(s): peak %zu bytes, act %zu",
                  threads ? threads : 2, c->peak_bytes, act);
        CHECK(c->ms_local >= 0);
    }
    }
    mpx_compare_free(c);
    /* A kept constant is the graph's own data (a borrowed view) in the
     * reference, and in the candidate the rounded copy kept on the tensor
     * (also a view: made once for all runs, valid while the graph is). */
    keep[T(g, "t4")->index] = false;
    keep[T(g, "c")->index] = true;
    c = COMPARE(g, h, &x, &o);
    if (c) {
        const mpx_value *cr = &c->ref[T(g, "c")->index], *cc = &c->cand[T(g, "c")->index];
        CHECK(cr->borrowed && cr->f == T(g, "c")->f32 && cc->borrowed && cc->f != cr->f && cc->f[0] == 1.5f);
    }
    mpx_compare_free(c);
    free(keep);
    mpx_assign_free(h);
    mpx_value_free(&x);
    mpx_graph_free(g);
}

/* ---- cancel, progress, errors ------------------------------------------------------------------ */

typedef struct progress_log {
    int calls, last_done, total;
    bool increasing;
    volatile int *cancel;
    int cancel_at;
} progress_log;

static void on_progress(void *ctx, int done, int total) {
    progress_log *p = ctx;
    if (done <= p->last_done) p->increasing = false;
    p->calls++;
    p->last_done = done;
    p->total = total;
    if (p->cancel && done == p->cancel_at) *p->cancel = 1;
}

static void test_cancel_progress(void) {
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "first", "Neg", "x:f:3", "t1", "");
    node(g, "second", "Relu", "t1", "t2", "");
    node(g, "third", "Neg", "t2", "y", "");
    finish(g, "y");
    int64_t d = 3;
    float xd[3] = {1, -2, 3};
    mpx_value x = fvalue(1, &d, xd);
    mpx_assign *h = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);

    progress_log log = {.increasing = true};
    mpx_compare_opts o = {.progress = on_progress, .progress_ctx = &log, .local = true};
    mpx_compare *c = COMPARE(g, h, &x, &o);
    CHECK(log.calls == 3 && log.last_done == 3 && log.total == 3 && log.increasing);
    mpx_compare_free(c);

    /* Cancelled before the run: nothing runs, nothing is returned. */
    volatile int cancel = 1;
    o.cancel = &cancel;
    log = (progress_log){.increasing = true};
    c = (mpx_compare *)&err; /* must come back NULL */
    mpx_error_clear(&err);
    CHECK(mpx_compare_run(g, h, &x, &o, &c, &err) == MPX_E_CANCELLED && c == NULL);
    CHECK_CONTAINS(err.msg, "run cancelled at node \"first\"");
    CHECK(log.calls == 0);

    /* Cancelled by the progress callback after the second node. */
    for (int threads = 1; threads <= 2; threads++) {
        cancel = 0;
        o.threads = threads;
        log = (progress_log){.increasing = true, .cancel = &cancel, .cancel_at = 2};
        c = (mpx_compare *)&err;
        CHECK(mpx_compare_run(g, h, &x, &o, &c, &err) == MPX_E_CANCELLED && c == NULL);
        CHECK_CONTAINS(err.msg, "run cancelled at node \"third\"");
        CHECK(log.calls == 2);
    }
    mpx_assign_free(h);
    mpx_value_free(&x);
    mpx_graph_free(g);
}

static void test_errors(void) {
    /* A Gather that fails mid-run, after values exist in both runs: the error
     * names it, nothing is returned (the sanitizer build checks no leak). */
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "/pre", "Neg", "x:f:3", "t", "");
    node(g, "/blk/gather", "Gather", "t idx:i:1", "g1", "axis=0");
    node(g, "/blk/id", "Identity", "g1", "y", "");
    finish(g, "y");
    int64_t d = 3, one = 1;
    float xd[3] = {1, 2, 3};
    mpx_value in[2];
    in[0] = fvalue(1, &d, xd);
    mpx_value_alloc(&in[1], MPX_DT_INT64, 1, &one, NULL);
    in[1].i[0] = 7;
    mpx_assign *h = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
    mpx_compare_opts o = {.local = true};
    mpx_compare *c;
    for (int threads = 1; threads <= 2; threads++) {
        o.threads = threads;
        c = (mpx_compare *)&err; /* must come back NULL */
        mpx_error_clear(&err);
        CHECK(mpx_compare_run(g, h, in, &o, &c, &err) == MPX_E_SHAPE && c == NULL);
        CHECK_CONTAINS(err.msg, "node \"/blk/gather\" (Gather)");
        CHECK_CONTAINS(err.msg, "index 7");
    }
    in[1].i[0] = -1;
    c = COMPARE(g, h, in, &o);
    if (c) CHECK(c->cand[T(g, "y")->index].f[0] == -3.0f);
    mpx_compare_free(c);

    /* A wrong input shape is refused before anything runs. */
    mpx_value wrong;
    int64_t wd[2] = {1, 3};
    mpx_value_alloc(&wrong, MPX_DT_FLOAT, 2, wd, NULL);
    mpx_value keep = in[0];
    in[0] = wrong;
    c = (mpx_compare *)&err;
    CHECK(mpx_compare_run(g, h, in, &o, &c, &err) == MPX_E_SHAPE && c == NULL);
    CHECK_CONTAINS(err.msg, "input \"x\": the value has shape 1x3, the input is bound to 3");
    in[0] = keep;
    mpx_value_free(&wrong);
    /* No inputs; an assignment of another graph; no graph. */
    CHECK(mpx_compare_run(g, h, NULL, NULL, &c, &err) == MPX_E_ARG && c == NULL);
    mpx_assign other = {.n_tensors = 1, .n_nodes = 1};
    CHECK(mpx_compare_run(g, &other, in, NULL, &c, &err) == MPX_E_ARG && c == NULL);
    CHECK_CONTAINS(err.msg, "another graph");
    CHECK(mpx_compare_run(NULL, NULL, in, NULL, &c, &err) == MPX_E_ARG && c == NULL);
    mpx_assign_free(h);
    mpx_graph_free(g);
    mpx_value_free(&in[0]);
    mpx_value_free(&in[1]);

    /* A node with no kernel: refused up front. */
    g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "/blk/foo", "FooBar", "x:f:3", "y", "");
    finish(g, "y");
    mpx_value x = fvalue(1, &d, xd);
    CHECK(mpx_compare_run(g, NULL, &x, NULL, &c, &err) == MPX_E_UNSUPPORTED && c == NULL);
    CHECK_CONTAINS(err.msg, "no kernel for FooBar");
    mpx_value_free(&x);
    mpx_graph_free(g);

    mpx_compare_free(NULL);
    CHECK(mpx_compare_layer(NULL, 0) == NULL);
    CHECK(mpx_value_bytes(NULL) == 0);
}

/* ---- the incremental cache ---------------------------------------------------------------- */

/* Node i fp32 ("red"): computes, writes and holds its outputs in fp32. */
static void make_red(const mpx_graph *g, mpx_assign *a, int i) {
    const mpx_node *n = g->nodes[i];
    a->node[i].compute = NULL;
    a->node[i].output = NULL;
    for (int j = 0; j < n->n_outputs; j++)
        if (n->outputs[j]) a->tensor[n->outputs[j]->index] = NULL;
}

/* The first and last nodes that run with a float input (-1: none). */
static int float_node(const mpx_graph *g, bool last) {
    int found = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        const mpx_node *n = g->nodes[i];
        if (mpx_exec_skipped(n) || n->n_inputs < 1 || !n->inputs[0] ||
            !mpx_dtype_is_float(n->inputs[0]->dtype))
            continue;
        found = i;
        if (!last) break;
    }
    return found;
}

/* One run with the cache k: checked against whole runs (metrics memcmp,
 * kept values); want_inc 1/0: it must (not) have been incremental, -1:
 * either. Returns the nodes it ran. */
static int cached_run_(int line, const mpx_graph *g, const mpx_assign *a, const mpx_value *in,
                       mpx_compare_cache *k, const bool *keep, int threads, int want_inc) {
    mpx_compare_opts o = {.cache = k, .keep = keep, .threads = threads};
    mpx_compare *c = compare_(line, g, a, in, &o);
    if (!c) return -1;
    check_equal_(line, g, a, in, c, false);
    if (want_inc >= 0)
        CHECK_MSG(c->incremental == (want_inc == 1), "line %d: incremental %d, want %d", line,
                  c->incremental, want_inc);
    if (keep) {
        mpx_run *ref = run_(line, g, NULL, in, NULL), *cand = run_(line, g, a, in, NULL);
        for (int i = 0; ref && cand && i < g->n_tensors; i++)
            if (keep[i])
                CHECK_MSG(same_bits(&c->ref[i], &ref->vals[i]) &&
                              same_bits(&c->cand[i], &cand->vals[i]),
                          "line %d: kept %s", line, g->tensors[i]->name);
        mpx_run_free(ref);
        mpx_run_free(cand);
    }
    int n = c->n_run;
    mpx_compare_free(c);
    return n;
}
#define CACHED_RUN(...) cached_run_(__LINE__, __VA_ARGS__)

static int run_nodes(const mpx_graph *g) {
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) n += !mpx_exec_skipped(g->nodes[i]);
    return n;
}

/* Recolour late, early, nothing, the accumulation, back; other inputs; a
 * budget too small for anything; local runs leave the cache alone. Every
 * result is bit for bit a full run's. */
static void check_cache(const mpx_graph *g, mpx_value *x, const bool *keep) {
    int all = run_nodes(g), late = float_node(g, true), early = float_node(g, false);
    CHECK(late >= 0 && early >= 0);
    if (late < 0 || early < 0) return;
    for (int threads = 1; threads <= 2; threads++) {
        mpx_compare_cache *k = mpx_compare_cache_new(0);
        mpx_assign *a = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
        CHECK(CACHED_RUN(g, a, x, k, keep, threads, 0) == all);
        CHECK(mpx_compare_cache_bytes(k) > 0);
        CHECK(CACHED_RUN(g, a, x, k, keep, threads, 1) == 0); /* nothing changed */
        make_red(g, a, late);
        int n_late = CACHED_RUN(g, a, x, k, keep, threads, 1);
        CHECK_MSG(n_late >= 1 && n_late < all, "late recolour ran %d of %d", n_late, all);
        make_red(g, a, early);
        int n_early = CACHED_RUN(g, a, x, k, keep, threads, 1);
        CHECK(n_early >= n_late);
        a->node[late].acc.fmt = &mpx_format_bf16;
        CHECK(CACHED_RUN(g, a, x, k, keep, threads, 1) >= 1);
        mpx_assign *b = mpx_assign_uniform(g, &mpx_format_bf16, &mpx_format_bf16, true);
        CACHED_RUN(g, b, x, k, keep, threads, 1);
        /* A plan that rounds nothing runs no node: its candidate values are
         * the reference's (no work twice); the plan after it reads them. */
        mpx_compare_opts of = {.cache = k, .keep = keep, .threads = threads};
        mpx_compare *cf = COMPARE(g, NULL, x, &of);
        CHECK_EQUAL(g, NULL, x, cf, false);
        CHECK_MSG(cf && cf->incremental && cf->n_run == all && cf->n_shared == all,
                  "the fp32 plan ran %d of %d nodes, %d of them shared", cf ? cf->n_run : -1, all,
                  cf ? cf->n_shared : -1);
        mpx_compare_free(cf);
        mpx_assign *one = mpx_assign_uniform(g, NULL, NULL, false);
        one->node[late].compute = one->node[late].output = &mpx_format_fp16;
        for (int j = 0; j < g->nodes[late]->n_outputs; j++)
            if (g->nodes[late]->outputs[j]) one->tensor[g->nodes[late]->outputs[j]->index] = &mpx_format_fp16;
        CHECK(CACHED_RUN(g, one, x, k, keep, threads, 1) >= 1); /* the late node alone low, on fp32 inputs */
        mpx_assign_free(one);
        CACHED_RUN(g, a, x, k, keep, threads, 1);
        /* Local runs: the full thing, the cache unchanged. */
        size_t bytes = mpx_compare_cache_bytes(k);
        mpx_compare_opts lo = {.cache = k, .local = true, .keep = keep};
        mpx_compare *c = COMPARE(g, b, x, &lo);
        CHECK_EQUAL(g, b, x, c, true);
        CHECK(c && !c->incremental && mpx_compare_cache_bytes(k) == bytes);
        mpx_compare_free(c);
        CHECK(CACHED_RUN(g, a, x, k, keep, threads, 1) == 0);
        /* Other input values: a full run. */
        x->f[0] += 1.0f;
        CHECK(CACHED_RUN(g, a, x, k, keep, threads, 0) == all);
        CHECK(CACHED_RUN(g, b, x, k, keep, threads, 1) >= 1);
        x->f[0] -= 1.0f;
        CHECK(CACHED_RUN(g, b, x, k, keep, threads, 0) == all);
        mpx_compare_cache_clear(k);
        CHECK(mpx_compare_cache_bytes(k) == 0);
        CHECK(CACHED_RUN(g, b, x, k, keep, threads, 0) == all);
        mpx_compare_cache_free(k);
        /* A budget of one byte holds nothing: every run is a full one, and
         * right. */
        k = mpx_compare_cache_new(1);
        CHECK(CACHED_RUN(g, a, x, k, keep, threads, 0) == all);
        CHECK(mpx_compare_cache_bytes(k) <= 1);
        make_red(g, b, late);
        CHECK(CACHED_RUN(g, b, x, k, keep, threads, -1) >= 1);
        mpx_compare_cache_free(k);
        /* Half the values: the earliest are dropped; whatever the re-runs
         * find missing, they are right. */
        k = mpx_compare_cache_new(bytes / 2);
        CHECK(CACHED_RUN(g, a, x, k, keep, threads, 0) == all);
        CHECK(mpx_compare_cache_bytes(k) <= bytes / 2);
        CACHED_RUN(g, b, x, k, keep, threads, -1);
        CACHED_RUN(g, a, x, k, keep, threads, -1);
        mpx_compare_cache_free(k);
        mpx_assign_free(a);
        mpx_assign_free(b);
    }
}

static void test_cache(void) {
    /* The example CNN and transformer. */
    const char *files[2] = {"tiny_cnn.json", "tiny_transformer.json"};
    int64_t dims[2][4] = {{1, 3, 16, 16}, {1, 16, 64}};
    int ranks[2] = {4, 3};
    for (int f = 0; f < 2; f++) {
        mpx_graph *g = gb_load_example(files[f], ranks[f], dims[f], &err);
        CHECK_MSG(g != NULL, "%s: %s", files[f], err.msg);
        if (!g) continue;
        mpx_value x;
        mpx_value_alloc(&x, MPX_DT_FLOAT, ranks[f], dims[f], NULL);
        gb_fill_normal(&x, 11);
        bool skip = false;
        for (int i = 0; i < g->n_nodes; i++) skip = skip || !mpx_kernel_for(g->nodes[i]->op);
        if (!skip) {
            check_cache(g, &x, NULL);
            /* A middle tensor kept too. */
            bool *keep = calloc((size_t)g->n_tensors, sizeof *keep);
            const mpx_node *mid = g->nodes[g->n_nodes / 2];
            if (keep && mid->n_outputs > 0 && mid->outputs[0]) keep[mid->outputs[0]->index] = true;
            if (keep) check_cache(g, &x, keep);
            free(keep);
        }
        mpx_value_free(&x);
        mpx_graph_free(g);
    }
    /* The hand-built chain: a branch, a shared constant, a tensor read twice
     * by one node, an int64 side path, two outputs. */
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "m1", "Mul", "x:f:2x8 c=f[0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8]", "t1", "");
    node(g, "a1", "Add", "t1 t1", "t2", "");
    node(g, "r1", "Relu", "t2", "t3", "");
    node(g, "m2", "Mul", "t3 c", "t4", "");
    node(g, "s1", "Sub", "t4 t1", "t5", "");
    node(g, "shp", "Shape", "t5", "s", "");
    node(g, "rs", "Reshape", "t5 s", "y", "");
    finish(g, "y t3");
    int64_t d[2] = {2, 8};
    mpx_value x;
    mpx_value_alloc(&x, MPX_DT_FLOAT, 2, d, NULL);
    gb_fill_normal(&x, 3);
    check_cache(g, &x, NULL);
    bool keep[64] = {0};
    CHECK(g->n_tensors <= 64);
    keep[T(g, "t2")->index] = true;
    keep[T(g, "c")->index] = true;
    keep[T(g, "x")->index] = true;
    check_cache(g, &x, keep);
    /* A chain large enough to run by tiles (numerics/fuse.c: 2^16 elements
     * and more), so the incremental runs take the fused path too; its
     * pointwise values are large enough that full runs leave them out of
     * the cache (compare_cache.c: cache_plan_lean), so the re-runs make
     * them again from x and the Softmax's (not pointwise) output. */
    {
        mpx_graph *h = mpx_graph_new("chain.json");
        h->opset = 13;
        node(h, "m1", "Mul", "x:f:1x4x128x128 s=f[0.75]", "u1", "");
        node(h, "a1", "Add", "u1 u1", "u2", "");
        node(h, "r1", "Softmax", "u2", "u3", "");
        node(h, "m2", "Mul", "u3 s", "u4", "");
        node(h, "s1", "Sub", "u4 u1", "u5", "");
        node(h, "c1", "Clip", "u5", "y", "min=-0.5 max=0.5");
        finish(h, "y");
        int64_t hd[4] = {1, 4, 128, 128};
        mpx_value hx;
        mpx_value_alloc(&hx, MPX_DT_FLOAT, 4, hd, NULL);
        gb_fill_normal(&hx, 7);
        check_cache(h, &hx, NULL);
        mpx_value_free(&hx);
        mpx_graph_free(h);
    }
    /* Recolouring the last node runs it alone. */
    mpx_compare_cache *k = mpx_compare_cache_new(0);
    mpx_assign *a = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
    CACHED_RUN(g, a, &x, k, NULL, 0, 0);
    make_red(g, a, float_node(g, true));
    CHECK(CACHED_RUN(g, a, &x, k, NULL, 0, 1) == 1);
    /* The constant c's format: both its readers and what follows them. */
    a->tensor[T(g, "c")->index] = &mpx_format_bf16;
    CHECK(CACHED_RUN(g, a, &x, k, NULL, 0, 1) == 7); /* m1 and m2, and all after m1 */
    mpx_assign_free(a);
    mpx_compare_cache_free(k);
    mpx_value_free(&x);
    mpx_graph_free(g);
}

/* Full runs leave pointwise values of 64 KB and more out of the cache
 * (compare_cache.c: cache_plan_lean); the incremental runs make the ones
 * they need again from what it holds - candidate values of a recoloured
 * node's inputs, reference values to measure dirty layers against - with a
 * full run's bits, and give them to the cache, so the next run finds them. */
/* A weight passed on by an Identity (as PyTorch exports write a reused
 * bias) into a chain the cache leaves out: the Identity's output is a
 * constant with a size but no activation estimate. A recolour of the last
 * node stays incremental (it ran in full when the run's room check counted
 * that constant as "size not known"). */
static void test_cache_lean_identity(void) {
    mpx_graph *g = mpx_graph_new("lean_id.json");
    g->opset = 13;
    node(g, "m1", "Mul", "x:f:1x4x128x128 s=f[0.75]", "u1", "");
    node(g, "sm", "Softmax", "u1", "u2", "");
    node(g, "id", "Identity", "b=f[0.5]", "w", "");
    node(g, "a1", "Add", "u2 w", "u3", "");
    node(g, "r1", "Relu", "u3", "u4", "");
    node(g, "c1", "Clip", "u4", "y", "min=-0.5 max=0.5");
    finish(g, "y");
    int64_t d[4] = {1, 4, 128, 128};
    mpx_value x;
    mpx_value_alloc(&x, MPX_DT_FLOAT, 4, d, NULL);
    gb_fill_normal(&x, 17);
    int all = run_nodes(g), c1 = T(g, "y")->producer->index;
    mpx_compare_cache *k = mpx_compare_cache_new(0);
    mpx_assign *a = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
    CHECK(CACHED_RUN(g, a, &x, k, NULL, 0, 0) == all);
    make_red(g, a, c1);
    int n = CACHED_RUN(g, a, &x, k, NULL, 0, 1);
    CHECK_MSG(n > 0 && n < all, "recolouring the last node ran %d of %d nodes", n, all);
    mpx_compare_cache_free(k);
    mpx_assign_free(a);
    mpx_value_free(&x);
    mpx_graph_free(g);
}

/* DynamicQuantizeLinear's tensor is lean (a pass to make again), its scale
 * and zero point not: a full run keeps the other values but the quantised
 * one (int64 here, twice a float's bytes), and a recolour reading it makes
 * it again. */
static void test_cache_lean_quant(void) {
    mpx_graph *g = mpx_graph_new("lean_q.json");
    g->opset = 13;
    node(g, "dql", "DynamicQuantizeLinear", "x:f:1x4x128x128", "q s z", "");
    node(g, "deq", "DequantizeLinear", "q s z", "u", "");
    node(g, "sm", "Softmax", "u", "v", "");
    node(g, "r1", "Relu", "v", "y", "");
    finish(g, "y");
    int64_t d[4] = {1, 4, 128, 128};
    mpx_value x;
    mpx_value_alloc(&x, MPX_DT_FLOAT, 4, d, NULL);
    gb_fill_normal(&x, 19);
    const size_t one = (size_t)4 * 128 * 128 * sizeof(float);
    int all = run_nodes(g), deq = T(g, "u")->producer->index;
    mpx_compare_cache *k = mpx_compare_cache_new(0);
    mpx_assign *a = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
    CHECK(CACHED_RUN(g, a, &x, k, NULL, 1, 0) == all);
    CHECK(mpx_cmp_cache_lean(k, T(g, "q")->index) && !mpx_cmp_cache_lean(k, T(g, "s")->index));
    /* held: u, v and y, each reference and candidate, the scale and zero point */
    const size_t held = mpx_compare_cache_bytes(k);
    CHECK_MSG(held >= 6 * one && held < 6 * one + 64, "cache holds %zu bytes, want %zu and the scalars", held, 6 * one);
    make_red(g, a, deq);
    CHECK(CACHED_RUN(g, a, &x, k, NULL, 1, 1) == all);
    mpx_compare_cache_free(k);
    mpx_assign_free(a);
    mpx_value_free(&x);
    mpx_graph_free(g);
}

static void test_cache_lean(void) {
    mpx_graph *g = mpx_graph_new("lean.json");
    g->opset = 13;
    node(g, "m1", "Mul", "x:f:1x4x128x128 s=f[0.75]", "u1", "");
    node(g, "a1", "Add", "u1 u1", "u2", "");
    node(g, "sm", "Softmax", "u2", "u3", "");
    node(g, "r1", "Relu", "u3", "u4", "");
    node(g, "m2", "Mul", "u4 s", "u5", "");
    node(g, "c1", "Clip", "u5", "y", "min=-0.5 max=0.5");
    finish(g, "y");
    int64_t d[4] = {1, 4, 128, 128};
    mpx_value x;
    mpx_value_alloc(&x, MPX_DT_FLOAT, 4, d, NULL);
    gb_fill_normal(&x, 13);
    const size_t one = (size_t)4 * 128 * 128 * sizeof(float);
    int all = run_nodes(g), c1 = T(g, "y")->producer->index, r1 = T(g, "u4")->producer->index, m1 = T(g, "u1")->producer->index;
    for (int threads = 1; threads <= 2; threads++) {
        mpx_compare_cache *k = mpx_compare_cache_new(0);
        mpx_assign *a = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
        CHECK(CACHED_RUN(g, a, &x, k, NULL, threads, 0) == all);
        /* Held: u3 (Softmax) and y (the output), each reference and candidate. */
        CHECK_MSG(mpx_compare_cache_bytes(k) == 4 * one, "cache holds %zu bytes, want %zu",
                  mpx_compare_cache_bytes(k), 4 * one);
        /* The last node: its input's candidate value made again (m2 from
         * u3, r1 too); y's reference is held. */
        make_red(g, a, c1);
        CHECK(CACHED_RUN(g, a, &x, k, NULL, threads, 1) == 3);
        CHECK(CACHED_RUN(g, a, &x, k, NULL, threads, 1) == 0);
        /* ... u5's given to the cache (recolouring c1 again runs it alone);
         * u4's, made again only to make u5, passed through, not kept. */
        CHECK_MSG(mpx_compare_cache_bytes(k) == 5 * one, "cache holds %zu bytes, want %zu",
                  mpx_compare_cache_bytes(k), 5 * one);
        a->node[c1].acc.fmt = &mpx_format_bf16;
        CHECK(CACHED_RUN(g, a, &x, k, NULL, threads, 1) == 1);
        /* r1: the references of r1's and m2's outputs made again (from u3),
         * their candidates recomputed, and all four passed through (a run
         * that cannot be undone keeps no lean value, as a full run), u5's
         * old candidate let go: u3 and y are left. */
        make_red(g, a, r1);
        CHECK(CACHED_RUN(g, a, &x, k, NULL, threads, 1) == 3);
        CHECK_MSG(mpx_compare_cache_bytes(k) == 4 * one, "cache holds %zu bytes, want %zu",
                  mpx_compare_cache_bytes(k), 4 * one);
        /* An undoable run (a search's trial) keeps them for the next trial. */
        a->node[r1].acc.fmt = &mpx_format_bf16;
        {
            mpx_compare_opts o = {.cache = k, .threads = threads, .undoable = true};
            mpx_compare *c = compare_(__LINE__, g, a, &x, &o);
            CHECK(c && c->incremental && c->n_run == 3);
            if (c) check_equal_(__LINE__, g, a, &x, c, false);
            mpx_compare_free(c);
        }
        CHECK_MSG(mpx_compare_cache_bytes(k) == 8 * one, "cache holds %zu bytes, want %zu",
                  mpx_compare_cache_bytes(k), 8 * one);
        make_red(g, a, m1);
        CHECK(CACHED_RUN(g, a, &x, k, NULL, threads, 1) == all);
        CHECK(CACHED_RUN(g, a, &x, k, NULL, threads, 1) == 0);
        mpx_compare_cache_free(k);
        /* A budget with no room for the remade values: a full run, right. */
        mpx_assign_free(a);
        a = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
        k = mpx_compare_cache_new(4 * one + one / 2);
        CHECK(CACHED_RUN(g, a, &x, k, NULL, threads, 0) == all);
        make_red(g, a, r1);
        CHECK(CACHED_RUN(g, a, &x, k, NULL, threads, 0) == all);
        mpx_compare_cache_free(k);
        mpx_assign_free(a);
    }
    mpx_value_free(&x);
    mpx_graph_free(g);
}

/* Only the layers asked for are measured (search reads a condition's
 * figures, not 300 layers'), with the bits of a full run; a later run
 * through the same cache that wants every layer measures the left-out ones
 * from the cached values without running a node, or runs in full when the
 * cache does not hold them. */
/* tiny_cnn at 1x3x16x16 and a normal input from seed (NULL graph: failed, x not made). */
static mpx_graph *tiny_cnn(mpx_value *x, uint64_t seed) {
    int64_t dims[4] = {1, 3, 16, 16};
    mpx_graph *g = gb_load_example("tiny_cnn.json", 4, dims, &err);
    CHECK_MSG(g != NULL, "tiny_cnn.json: %s", err.msg);
    if (!g) return NULL;
    mpx_value_alloc(x, MPX_DT_FLOAT, 4, dims, NULL);
    gb_fill_normal(x, seed);
    return g;
}

static void test_measure(void) {
    mpx_value x;
    mpx_graph *g = tiny_cnn(&x, 5);
    if (!g) return;
    bool *outs = calloc((size_t)g->n_tensors, sizeof *outs);
    int late = float_node(g, true), early = float_node(g, false), all = run_nodes(g), second = -1;
    /* the first node reading what the first float node computes */
    for (int i = early + 1; early >= 0 && second < 0 && i < g->n_nodes; i++)
        for (int j = 0; j < g->nodes[i]->n_inputs; j++)
            if (g->nodes[i]->inputs[j] && g->nodes[i]->inputs[j]->producer == g->nodes[early]) second = i;
    CHECK(outs && late >= 0 && early >= 0 && second >= 0);
    if (!outs || late < 0 || early < 0 || second < 0) goto done;
    for (int i = 0; i < g->n_outputs; i++) outs[g->outputs[i]->index] = true;
    for (int threads = 1; threads <= 2; threads++) {
        mpx_assign *a = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
        /* Without a cache: outputs measured, the rest left out. */
        mpx_compare_opts o = {.measure = outs, .threads = threads};
        mpx_compare *c = COMPARE(g, a, &x, &o);
        check_equal_m_(__LINE__, g, a, &x, c, false, outs);
        int left = 0;
        for (int i = 0; c && i < c->n_layers; i++) left += c->layers[i].unmeasured;
        CHECK_MSG(c && left > 0 && left < c->n_layers, "%d of %d layers left out", left, c ? c->n_layers : 0);
        mpx_compare_free(c);
        /* Local runs measure everything. */
        mpx_compare_opts lo = {.measure = outs, .local = true, .threads = threads};
        c = COMPARE(g, a, &x, &lo);
        CHECK_EQUAL(g, a, &x, c, true);
        mpx_compare_free(c);
        /* Through a cache: measured, recoloured and left out, then wanted:
         * measured from the cached values, no node run. */
        mpx_compare_cache *k = mpx_compare_cache_new(0);
        mpx_compare_opts full = {.cache = k, .threads = threads};
        o.cache = k;
        c = COMPARE(g, a, &x, &full);
        mpx_compare_free(c);
        make_red(g, a, early);
        c = COMPARE(g, a, &x, &o);
        CHECK(c && c->incremental && c->n_run >= 1);
        check_equal_m_(__LINE__, g, a, &x, c, false, outs);
        mpx_compare_free(c);
        c = COMPARE(g, a, &x, &full);
        CHECK_MSG(c && c->incremental && c->n_run == 0, "measuring from the cache ran %d nodes", c ? c->n_run : -1);
        CHECK_EQUAL(g, a, &x, c, false);
        mpx_compare_free(c);
        /* A cache filled by a run that measures the outputs only holds no
         * reference values of the other layers (search's evaluations: half
         * the bytes): its incremental runs are right, and a run that wants
         * every layer is a full one, and right. */
        mpx_compare_cache_clear(k);
        c = COMPARE(g, a, &x, &o);
        check_equal_m_(__LINE__, g, a, &x, c, false, outs);
        mpx_compare_free(c);
        make_red(g, a, late);
        c = COMPARE(g, a, &x, &o);
        CHECK(c && c->incremental && c->n_run >= 1 && c->n_run < all);
        check_equal_m_(__LINE__, g, a, &x, c, false, outs);
        mpx_compare_free(c);
        c = COMPARE(g, a, &x, &full);
        CHECK(c && c->n_run == all);
        CHECK_EQUAL(g, a, &x, c, false);
        mpx_compare_free(c);
        mpx_compare_cache_free(k);
        /* A cache too small to hold the left-out layers' values: the run
         * that wants them is a full one, and right. */
        k = mpx_compare_cache_new(1);
        o.cache = full.cache = k;
        c = COMPARE(g, a, &x, &o);
        mpx_compare_free(c);
        c = COMPARE(g, a, &x, &full);
        CHECK(c && c->n_run == all);
        CHECK_EQUAL(g, a, &x, c, false);
        mpx_compare_free(c);
        mpx_compare_cache_free(k);
        /* A budget that drops the earliest candidate values: recolouring the
         * node that reads the first one remakes it (its producer runs again)
         * instead of running in full, reference included; right either way. */
        mpx_assign *b = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
        k = mpx_compare_cache_new(0);
        o.cache = k;
        c = COMPARE(g, b, &x, &o);
        mpx_compare_free(c);
        size_t held = mpx_compare_cache_bytes(k);
        mpx_compare_cache_free(k);
        k = mpx_compare_cache_new(held / 2);
        o.cache = k;
        c = COMPARE(g, b, &x, &o);
        mpx_compare_free(c);
        make_red(g, b, second);
        c = COMPARE(g, b, &x, &o);
        CHECK_MSG(c && c->incremental && c->n_run >= 2, "remaking a dropped value ran %d of %d, %s",
                  c ? c->n_run : -1, all, c && c->incremental ? "incremental" : "in full");
        check_equal_m_(__LINE__, g, b, &x, c, false, outs);
        mpx_compare_free(c);
        mpx_compare_cache_free(k);
        /* Undo: an undoable incremental run taken back leaves the cache
         * describing the run before it (that plan again runs nothing); a
         * second undo, or one after a full run, does nothing. */
        k = mpx_compare_cache_new(0);
        o.cache = k;
        mpx_assign *u = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
        mpx_assign_free(b);
        b = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
        make_red(g, b, late);
        c = COMPARE(g, u, &x, &o);
        mpx_compare_free(c);
        CHECK(!mpx_compare_cache_undo(k));
        o.undoable = true;
        c = COMPARE(g, b, &x, &o);
        CHECK(c && c->incremental && c->n_run >= 1);
        mpx_compare_free(c);
        CHECK(mpx_compare_cache_undo(k));
        CHECK(!mpx_compare_cache_undo(k));
        o.undoable = false;
        c = COMPARE(g, u, &x, &o);
        CHECK_MSG(c && c->incremental && c->n_run == 0, "after undo the first plan ran %d nodes", c ? c->n_run : -1);
        check_equal_m_(__LINE__, g, u, &x, c, false, outs);
        mpx_compare_free(c);
        c = COMPARE(g, b, &x, &o);
        CHECK(c && c->incremental && c->n_run >= 1);
        check_equal_m_(__LINE__, g, b, &x, c, false, outs);
        mpx_compare_free(c);
        mpx_compare_cache_free(k);
        mpx_assign_free(u);
        mpx_assign_free(b);
        mpx_assign_free(a);
    }
done:
    free(outs);
    mpx_value_free(&x);
    mpx_graph_free(g);
}


/* ---- weights read rounded by their kernels ------------------------------------------------ */

/* Fills every float constant of g from a seeded generator: values that fp16
 * and bf16 both change when they round them. */
static void fill_weights(mpx_graph *g, uint64_t seed) {
    for (int i = 0; i < g->n_tensors; i++) {
        mpx_tensor *t = g->tensors[i];
        for (int64_t k = 0; t->f32 && k < t->nelem; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            t->f32[k] = (float)((double)(seed >> 40) / 16777216.0 - 0.5) * 0.7f;
        }
    }
}

/* Weights that only Conv, Gemm and MatMul read start a comparison's
 * candidate unrounded, and each kernel reads them rounded (the GEMM core as
 * it packs them, its other routes from the rounded copy): the figures and
 * kept outputs are bit for bit those of whole runs, which round every weight
 * as they start, on every route (a 3x3 and a 1x1 convolution on the core, a
 * 3x3 one on its lanes route, a depthwise one, one whose weight overflows
 * fp16 and takes the general loop, Gemm with transB on few and on many rows
 * and without, MatMul of a batch and of one matrix by a matrix, by a batch
 * of matrices and by a vector, a weight another op reads too), for
 * fp16 and bf16, fp16 accumulation, weights held in bf16 and read in fp16,
 * and weights held in fp32 and read in fp16. The weights packed that way
 * keep no rounded copy: the process's kept copies grow by every other float
 * constant's bytes exactly. no_kept: no copy may be kept at all
 * (MPX_KERN_NOKEPT), so every route rounds a copy per call instead. The
 * comparisons go to cs[WR_RUNS]; returns the graph. */
enum { WR_RUNS = 5 };

/* The graph of weights_run and prepared_runs: inputs x, y, z, q in in[4].
 * c5's 32 output channels on a 10 x 10 map take the core's lanes route
 * (its weights kept as 16-row panels) where c1's 16 take the grid. */
static mpx_graph *weights_graph(mpx_value in[4]) {
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "c1", "Conv", "x:f:1x8x10x10 w1#f:16x8x3x3 b1#f:16", "t1", "pads=[1,1,1,1]");
    node(g, "dw", "Conv", "t1 w2#f:16x1x3x3", "t2", "pads=[1,1,1,1] group=16");
    node(g, "c3", "Conv", "t2 w3#f:16x16x1x1", "t3", "");
    node(g, "c4", "Conv", "t3 w4#f:4x16x3x3", "t4", "");
    node(g, "c5", "Conv", "t1 w5#f:32x16x3x3", "t5", "pads=[1,1,1,1]");
    node(g, "rs", "Reshape", "t4 s=i[1,256]", "r", "");
    node(g, "g1", "Gemm", "r wg1#f:32x256 bg1#f:32", "u1", "transB=1");
    node(g, "g2", "Gemm", "u1 wg2#f:32x16", "u2", "");
    node(g, "g3", "Gemm", "y:f:20x24 wg3#f:40x24", "u3", "transB=1");
    node(g, "m1", "MatMul", "z:f:2x20x24 wm1#f:24x36", "v1", "");
    node(g, "m2", "MatMul", "z wm2#f:2x24x8", "v2", "");
    node(g, "m3", "MatMul", "y wv#f:24", "v3", "");
    node(g, "m4", "MatMul", "y wm4#f:24x40", "v5", "");
    node(g, "rw", "Add", "wm1 q:f:24x36", "v4", "");
    fill_weights(g, 11);
    T(g, "w4")->f32[5] = 1e6f; /* inf in fp16, finite in bf16 */
    finish(g, "u2 u3 v1 v2 v3 v4 t5 v5");
    int64_t dx[4] = {1, 8, 10, 10}, dy[2] = {20, 24}, dz[3] = {2, 20, 24}, dq[2] = {24, 36};
    mpx_value_alloc(&in[0], MPX_DT_FLOAT, 4, dx, NULL);
    mpx_value_alloc(&in[1], MPX_DT_FLOAT, 2, dy, NULL);
    mpx_value_alloc(&in[2], MPX_DT_FLOAT, 3, dz, NULL);
    mpx_value_alloc(&in[3], MPX_DT_FLOAT, 2, dq, NULL);
    for (int k = 0; k < 4; k++) gb_fill_normal(&in[k], 21 + (uint64_t)k);
    return g;
}

static mpx_graph *weights_run(bool no_kept, mpx_compare **cs) {
    if (no_kept) setenv("MPX_KERN_NOKEPT", "1", 1);
    mpx_value in[4];
    mpx_graph *g = weights_graph(in);
    /* the weights the core packs rounded: no copy kept of them */
    size_t other = 0;
    for (int i = 0; i < g->n_tensors; i++) {
        const mpx_tensor *t = g->tensors[i];
        const char *nm = t->name;
        bool packed = !strcmp(nm, "w1") || !strcmp(nm, "w3") || !strcmp(nm, "w5") || !strcmp(nm, "wg1") ||
                      !strcmp(nm, "wg3") || !strcmp(nm, "wm4");
        if (t->f32 && t->nelem > 0 && !packed) other += (size_t)t->nelem * sizeof(float);
    }
    mpx_assign *as[WR_RUNS] = {
        mpx_assign_uniform(g, &mpx_format_fp16, NULL, false),
        mpx_assign_uniform(g, &mpx_format_bf16, NULL, false),
        mpx_assign_uniform(g, &mpx_format_fp16, &mpx_format_fp16, false),
        mpx_assign_uniform(g, &mpx_format_bf16, NULL, false),
        mpx_assign_uniform(g, &mpx_format_fp16, NULL, false),
    };
    for (int i = 0; as[3] && i < g->n_nodes; i++)
        if (as[3]->node[i].compute) as[3]->node[i].compute = &mpx_format_fp16; /* held bf16, read fp16 */
    for (int i = 0; as[4] && i < g->n_tensors; i++) as[4]->tensor[i] = NULL; /* held fp32, read fp16 */
    for (int v = 0; v < WR_RUNS; v++) {
        cs[v] = NULL;
        CHECK_MSG(as[v] != NULL, "assignment %d", v);
        if (!as[v]) continue;
        const size_t before = mpx_numerics_kept_rounded_bytes();
        mpx_compare_opts o = {.threads = v == 1 ? 1 : 0};
        mpx_compare *c = COMPARE(g, as[v], in, &o);
        const size_t grew = mpx_numerics_kept_rounded_bytes() - before;
        /* (the first two make their formats' copies; the rest find them.
         * In bf16, w4 is finite and packed too.) */
        const size_t want = no_kept ? 0 : other - (v == 1 ? (size_t)T(g, "w4")->nelem * sizeof(float) : 0);
        if (v < 2) CHECK_MSG(grew == want, "assignment %d: kept copies grew by %zu bytes, want %zu", v, grew, want);
        CHECK_EQUAL(g, as[v], in, c, false);
        if (c && v == 0) { /* the overflow reached the outputs */
            const mpx_value *u2 = &c->cand[T(g, "u2")->index];
            CHECK(u2->n == 16 && !isfinite(u2->f[0]));
        }
        cs[v] = c;
    }
    for (int v = 0; v < WR_RUNS; v++) mpx_assign_free(as[v]);
    for (int k = 0; k < 4; k++) mpx_value_free(&in[k]);
    unsetenv("MPX_KERN_NOKEPT");
    return g;
}

/* The same comparisons with rounded copies kept and with none kept (every
 * copy made per call): the same figures and outputs, bit for bit (the whole
 * runs CHECK_EQUAL compares with take the same per-call routes, so this is
 * what holds those routes to the kept ones). */
static void test_weights_unrounded(void) {
    mpx_compare *kept[WR_RUNS], *none[WR_RUNS];
    mpx_graph *g = weights_run(false, kept), *h = weights_run(true, none);
    for (int v = 0; v < WR_RUNS; v++) {
        const mpx_compare *a = kept[v], *b = none[v];
        bool same = a && b && a->n_layers == b->n_layers;
        for (int i = 0; same && i < a->n_layers; i++)
            same = a->layers[i].tensor == b->layers[i].tensor &&
                   memcmp(&a->layers[i].m, &b->layers[i].m, sizeof a->layers[i].m) == 0;
        for (int t = 0; same && t < g->n_tensors; t++)
            if (g->tensors[t]->flags & MPX_T_OUTPUT) same = same_bits(&a->cand[t], &b->cand[t]);
        CHECK_MSG(same, "assignment %d: copies kept and made per call differ", v);
        mpx_compare_free(kept[v]);
        mpx_compare_free(none[v]);
    }
    mpx_graph_free(g);
    mpx_graph_free(h);
}

/* A product's constant weights are packed once, in fp32: the fp16 and
 * bf16 candidates read that packing, rounding each part as they reach it,
 * and keep no packing of their own (a report's two formats had kept one
 * each, twice the weights' bytes, all of it fresh memory for a session's
 * first run); their figures are whole runs' (which round the weights as
 * they start), bit for bit. A MatMul's B and a Gemm's transB B, on enough
 * rows that the core keeps B's packing; a convolution's A on the core's
 * grid (16 output channels) and on its lanes route (32 on a 10 x 10 map). */
static void test_packing_shared(void) {
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "m", "MatMul", "x:f:40x64 wb#f:64x72", "y", "");
    node(g, "gm", "Gemm", "y wt#f:48x72", "z", "transB=1");
    node(g, "c1", "Conv", "xc:f:1x8x10x10 w1#f:16x8x3x3", "t1", "pads=[1,1,1,1]");
    node(g, "c5", "Conv", "t1 w5#f:32x16x3x3", "t5", "pads=[1,1,1,1]");
    fill_weights(g, 5);
    finish(g, "z t5");
    int64_t dx[2] = {40, 64}, dc[4] = {1, 8, 10, 10};
    mpx_value in[2];
    mpx_value_alloc(&in[0], MPX_DT_FLOAT, 2, dx, NULL);
    mpx_value_alloc(&in[1], MPX_DT_FLOAT, 4, dc, NULL);
    gb_fill_normal(&in[0], 9);
    gb_fill_normal(&in[1], 10);
    mpx_compare_opts o = {0};
    mpx_assign *f32 = mpx_assign_uniform(g, &mpx_format_fp32, NULL, false);
    mpx_compare *c0 = COMPARE(g, f32, in, &o);
    CHECK_MSG(T(g, "wb")->derived && T(g, "wt")->derived && T(g, "w1")->derived && T(g, "w5")->derived,
              "the reference kept every packing");
    const mpx_format *fs[2] = {&mpx_format_fp16, &mpx_format_bf16};
    for (int q = 0; q < 2; q++) {
        mpx_assign *a = mpx_assign_uniform(g, fs[q], NULL, false);
        const size_t made = mpx_numerics_kept_made();
        mpx_compare *c = COMPARE(g, a, in, &o);
        CHECK_MSG(mpx_numerics_kept_made() == made, "%s: %zu forms kept beside the fp32 packings", fs[q]->name,
                  mpx_numerics_kept_made() - made);
        /* (the whole runs it is held to round the weights as copies, and
         * keep those and their packings: after the check above) */
        CHECK_EQUAL(g, a, in, c, false);
        mpx_compare_free(c);
        mpx_assign_free(a);
    }
    mpx_compare_free(c0);
    mpx_assign_free(f32);
    mpx_value_free(&in[0]);
    mpx_value_free(&in[1]);
    mpx_graph_free(g);
}

/* ---- a run's forms made before its values (exec.c: mpx_exec_prepare_forms) ---------------------- */

enum { PR_RUNS = 7 };

/* The plans prepared_runs takes in turn on weights_graph: held bf16 and
 * read fp16 (first, so that no earlier plan's forms stand in for its own),
 * fp16, bf16, fp16 accumulation, held fp32 and read fp16, then
 * recoloured (c1 and m4 red, c5 and g1 computing in bf16 where they read
 * fp16 weights), then fp16 again. */
static mpx_assign *prepared_plan(const mpx_graph *g, int v) {
    static const int uni[PR_RUNS] = {1, 0, 1, 0, 0, 0, 0};
    mpx_assign *a = mpx_assign_uniform(g, uni[v] ? &mpx_format_bf16 : &mpx_format_fp16,
                                       v == 3 ? &mpx_format_fp16 : NULL, false);
    for (int i = 0; a && i < g->n_nodes; i++) {
        const char *nm = g->nodes[i]->name;
        if (v == 0 && a->node[i].compute) a->node[i].compute = &mpx_format_fp16;
        if (v == 5 && (!strcmp(nm, "c1") || !strcmp(nm, "m4"))) a->node[i] = (mpx_node_prec){0};
        if (v == 5 && (!strcmp(nm, "c5") || !strcmp(nm, "g1"))) a->node[i].compute = &mpx_format_bf16;
    }
    for (int i = 0; a && v == 4 && i < g->n_tensors; i++) a->tensor[i] = NULL;
    return a;
}

/* The plans of prepared_plan in turn on a graph of their own, each
 * comparison's kept forms made first as run_stream makes them (the
 * reference's, then the candidate's, from their start values), then the
 * comparison with MPX_CMP_NOPREP=1: it must make none (else the prepared
 * forms were not the ones its run reads: another key, a route missed, a
 * recolour's new formats left out), and its figures and outputs are whole
 * runs' bit for bit. made[v]: the forms made for plan v before its run
 * (by its start and the prepare); the comparisons go to cs. */
static mpx_graph *prepared_runs(size_t *made, mpx_compare **cs) {
    mpx_value in[4];
    mpx_graph *g = weights_graph(in);
    const int nt = g->n_tensors;
    mpx_compare_opts o = {0};
    bool *keep = calloc((size_t)nt, sizeof *keep);
    mpx_value *ref = calloc((size_t)nt, sizeof *ref), *cand = calloc((size_t)nt, sizeof *cand);
    CHECK(keep && ref && cand);
    for (int t = 0; keep && t < nt; t++) keep[t] = mpx_cmp_kept(g, &o, t);
    for (int v = 0; v < PR_RUNS && keep && ref && cand; v++) {
        mpx_assign *a = prepared_plan(g, v);
        CHECK(a != NULL);
        /* (the start keeps the rounded copies of weights held low that
         * something reads as they are held: counted as the run's) */
        const size_t m0 = mpx_numerics_kept_made(), kept0 = mpx_numerics_kept_rounded_bytes();
        CHECK(mpx_exec_start(g, NULL, in, ref, &err) == MPX_OK);
        CHECK(mpx_exec_start_some(g, a, in, NULL, keep, cand, &err) == MPX_OK);
        const size_t ms = mpx_numerics_kept_made();
        size_t p = mpx_exec_prepare_forms(g, NULL, ref, NULL) + mpx_exec_prepare_forms(g, a, cand, NULL);
        CHECK_MSG(p == mpx_numerics_kept_made() - ms, "plan %d: %zu forms prepared, %zu made", v, p,
                  mpx_numerics_kept_made() - ms);
        CHECK_MSG(mpx_exec_prepare_forms(g, NULL, ref, NULL) + mpx_exec_prepare_forms(g, a, cand, NULL) == 0,
                  "plan %d: prepared again", v);
        for (int t = 0; t < nt; t++) mpx_value_free(&ref[t]), mpx_value_free(&cand[t]);
        made[v] = mpx_numerics_kept_made() - m0;
        const size_t m1 = mpx_numerics_kept_made();
        setenv("MPX_CMP_NOPREP", "1", 1);
        cs[v] = COMPARE(g, a, in, &o);
        unsetenv("MPX_CMP_NOPREP");
        CHECK_MSG(mpx_numerics_kept_made() == m1, "plan %d: its run made %zu forms the prepare did not", v,
                  mpx_numerics_kept_made() - m1);
        if (mpx_env_on("MPX_KERN_NOKEPT")) CHECK(mpx_numerics_kept_rounded_bytes() == kept0);
        CHECK_EQUAL(g, a, in, cs[v], false);
        mpx_assign_free(a);
    }
    free(keep), free(ref), free(cand);
    for (int k = 0; k < 4; k++) mpx_value_free(&in[k]);
    return g;
}

/* The same plans on a graph of their own with nothing prepared (each
 * comparison makes its forms as it runs): counts[v] forms each, results to
 * cs; with prep, through mpx_compare_run as a session runs them, cached
 * (the recolour runs incrementally; *k the cache). Returns the graph. */
static mpx_graph *unprepared_runs(bool prep, size_t *counts, mpx_compare **cs, mpx_compare_cache **kp) {
    mpx_value in[4];
    mpx_graph *g = weights_graph(in);
    mpx_compare_cache *k = *kp = prep ? mpx_compare_cache_new(0) : NULL;
    mpx_compare_opts o = {.cache = k};
    if (!prep) setenv("MPX_CMP_NOPREP", "1", 1);
    for (int v = 0; v < PR_RUNS; v++) {
        mpx_assign *a = prepared_plan(g, v);
        const size_t m0 = mpx_numerics_kept_made();
        cs[v] = COMPARE(g, a, in, &o);
        counts[v] = mpx_numerics_kept_made() - m0;
        CHECK_EQUAL(g, a, in, cs[v], false);
        mpx_assign_free(a);
    }
    unsetenv("MPX_CMP_NOPREP");
    for (int q = 0; q < 4; q++) mpx_value_free(&in[q]);
    return g;
}

/* A comparison's kept forms (rounded copies, packings in the rounded
 * format, the reference's packings) made before its values are the forms
 * its run makes without them, no more and no fewer, under each plan in
 * turn (a recolour, bf16 then fp16 for one weight), and the results are
 * the same bits; also with no rounded copy kept at all (MPX_KERN_NOKEPT:
 * the budget reached at once). */
static void test_prepared_forms(void) {
    for (int no_kept = 0; no_kept < 2; no_kept++) {
        if (no_kept) setenv("MPX_KERN_NOKEPT", "1", 1);
        size_t made[PR_RUNS] = {0}, plain[PR_RUNS] = {0}, session[PR_RUNS] = {0};
        mpx_compare *a[PR_RUNS] = {0}, *b[PR_RUNS] = {0}, *c[PR_RUNS] = {0};
        mpx_compare_cache *k0, *k;
        mpx_graph *g = prepared_runs(made, a), *h = unprepared_runs(false, plain, b, &k0),
                  *j = unprepared_runs(true, session, c, &k);
        for (int v = 0; v < PR_RUNS; v++) {
            CHECK_MSG(made[v] == plain[v], "kept %d, plan %d: %zu forms prepared, a run makes %zu", !no_kept, v,
                      made[v], plain[v]);
            CHECK_MSG(session[v] == plain[v], "kept %d, plan %d: %zu forms made in a session, a run makes %zu",
                      !no_kept, v, session[v], plain[v]);
            bool same = a[v] && b[v] && c[v] && a[v]->n_layers == b[v]->n_layers && c[v]->n_layers == b[v]->n_layers;
            for (int i = 0; same && i < b[v]->n_layers; i++)
                same = memcmp(&a[v]->layers[i].m, &b[v]->layers[i].m, sizeof b[v]->layers[i].m) == 0 &&
                       memcmp(&c[v]->layers[i].m, &b[v]->layers[i].m, sizeof b[v]->layers[i].m) == 0;
            CHECK_MSG(same, "kept %d, plan %d: figures differ with forms prepared", !no_kept, v);
            mpx_compare_free(a[v]), mpx_compare_free(b[v]), mpx_compare_free(c[v]);
        }
        mpx_compare_cache_free(k);
        mpx_graph_free(g), mpx_graph_free(h), mpx_graph_free(j);
        unsetenv("MPX_KERN_NOKEPT");
    }
}

/* ---- steps writing over inputs no later job reads ------------------------------------------ */

/* fp16 and bf16 against one reference on g, with steps writing over dead
 * inputs and again with MPX_CMP_NOINPLACE: each result's figures (local
 * ones too) are the whole runs' bit for bit (so nothing was overwritten
 * before its last reader read it), and both runs' figures and kept values
 * agree. *peak_in / *peak_out: the reference's peak bytes each way. */
static void inplace_runs(const char *what, const mpx_graph *g, const mpx_value *x, bool local, int threads,
                         size_t *peak_in, size_t *peak_out) {
    const mpx_assign *as[2] = {mpx_assign_uniform(g, &mpx_format_fp16, NULL, false),
                               mpx_assign_uniform(g, &mpx_format_bf16, NULL, false)};
    mpx_compare_opts o = {.local = local, .threads = threads};
    mpx_compare *in[2] = {0}, *out[2] = {0};
    mpx_error_clear(&err);
    CHECK_MSG(mpx_compare_run_many(g, as, 2, x, &o, in, &err) == MPX_OK, "%s: %s", what, err.msg);
    setenv("MPX_CMP_NOINPLACE", "1", 1);
    CHECK_MSG(mpx_compare_run_many(g, as, 2, x, &o, out, &err) == MPX_OK, "%s: %s", what, err.msg);
    unsetenv("MPX_CMP_NOINPLACE");
    for (int q = 0; q < 2 && in[q] && out[q]; q++) {
        CHECK_EQUAL(g, as[q], x, in[q], local);
        bool same = in[q]->n_layers == out[q]->n_layers;
        for (int i = 0; same && i < in[q]->n_layers; i++)
            same = memcmp(&in[q]->layers[i].m, &out[q]->layers[i].m, sizeof in[q]->layers[i].m) == 0;
        for (int t = 0; same && t < g->n_tensors; t++)
            if (g->tensors[t]->flags & MPX_T_OUTPUT)
                same = same_bits(&in[q]->cand[t], &out[q]->cand[t]) && same_bits(&in[0]->ref[t], &out[0]->ref[t]);
        CHECK_MSG(same, "%s, candidate %d (local %d, threads %d): in place and not differ", what, q, local, threads);
    }
    *peak_in = in[0] ? in[0]->peak_bytes : 0;
    *peak_out = out[0] ? out[0]->peak_bytes : 0;
    for (int q = 0; q < 2; q++) {
        mpx_compare_free(in[q]);
        mpx_compare_free(out[q]);
        mpx_assign_free((mpx_assign *)as[q]);
    }
}

/* Every pointwise op (kernels.def: MPX_KERNEL_POINTWISE) in a graph that
 * offers each kind of input a step might wrongly write over: one read
 * later by another node (x), read twice by the same node, read second with
 * a broadcast first operand, a graph output read on (o1), a per-channel
 * operand; on one and two threads, local figures or not (inplace_runs),
 * and on one thread the peak is lower (so the steps did write in place). */
static void test_inplace(void) {
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 18;
    node(g, "a", "Add", "x:f:1x8x32x32 c3=f3", "ta", "");
    node(g, "cl", "Clip", "ta lo=f0 hi=f6", "tb", "");
    node(g, "m", "Mul", "x tb", "th", "");
    node(g, "d", "Div", "th six=f6", "td", "");
    node(g, "bn", "BatchNormalization",
         "td s=f[1,2,0.5,1.5,1,0.25,3,1] b=f[0,1,-1,0.5,0,0,2,-2] mu=f[0.1,0,0.2,0,-0.1,0,0.3,0] "
         "var=f[1,0.5,2,1,1,4,0.25,1]", "te", "epsilon=0.001");
    node(g, "sg", "Sigmoid", "te", "tf", "");
    node(g, "sw", "Mul", "te tf", "tg", "");
    node(g, "sq", "Mul", "tg tg", "tq", "");
    node(g, "sb", "Sub", "pc#f:1x8x1x1 tq", "tu", "");
    node(g, "r", "Relu", "tu", "o1", "");
    node(g, "th", "Tanh", "o1", "tv", "");
    node(g, "ax", "Add", "tv x", "t0", "");
    static const char *const unary[] = {"LeakyRelu", "Elu",   "Selu", "Celu", "Softsign", "HardSigmoid",
                                        "HardSwish", "Softplus", "Mish", "Erf", "Gelu", "Sin", "Cos", "Abs",
                                        "Sqrt",      "Neg",   "Exp",  "Log",  "Reciprocal", "Sign", "Floor",
                                        "Ceil",      "Round", "ThresholdedRelu"};
    const int nu = (int)(sizeof unary / sizeof unary[0]);
    for (int k = 0; k < nu; k++) {
        char name[16], in[16], out[16];
        snprintf(name, sizeof name, "u%d", k);
        snprintf(in, sizeof in, "t%d", k);
        snprintf(out, sizeof out, k == nu - 1 ? "y" : "t%d", k + 1);
        node(g, name, unary[k], in, out, "");
    }
    finish(g, "o1 y");
    int64_t d[4] = {1, 8, 32, 32};
    mpx_value x;
    mpx_value_alloc(&x, MPX_DT_FLOAT, 4, d, NULL);
    gb_fill_normal(&x, 11);
    for (int64_t k = 0; k < x.n; k++) x.f[k] *= 4.0f;
    const size_t act = (size_t)x.n * sizeof(float);
    for (int local = 0; local < 2; local++)
        for (int threads = 1; threads <= 2; threads++) {
            size_t in, out;
            inplace_runs("pointwise", g, &x, local, threads, &in, &out);
            /* the hard-swish and the unary chain: two values a run at the
             * widest cut (x and one more) instead of three. On one thread;
             * on two, whether a step finds its input dead depends on which
             * job ran first (the bits do not), and so does the peak. */
            if (threads == 1)
                CHECK_MSG(in + 2 * act <= out, "local %d: peak %zu bytes in place, %zu not", local, in, out);
        }
    mpx_value_free(&x);
    mpx_graph_free(g);
}

/* A Concat grows its input 0 into its output where that is the output's
 * first part, dead after it, and made in a mapping (compare.c): a UNet's
 * skip joins. In the full graph, heads that may not grow too: one read
 * after the Concat (s2), a graph input (x), an axis with a dim before it
 * that is not 1 (cz). The figures and kept values (the grown Concat is an
 * output) as inplace_runs checks them; in the skip join alone, where the
 * Concat is the widest cut, the peak on one thread is lower by at least
 * one activation a run. */
static mpx_graph *concat_graph(bool full) {
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 18;
    node(g, "s", "Relu", "x:f:1x16x64x64", "s", "");
    node(g, "m", "Neg", "s", "m", "");
    node(g, "u", "Sigmoid", "m", "u", "");
    node(g, "c", "Concat", "s u", "c", "axis=1");
    if (!full) {
        node(g, "r", "Relu", "c", "y", "");
        return finish(g, "y");
    }
    node(g, "s2", "Tanh", "x", "s2", "");
    node(g, "c2", "Concat", "s2 u", "c2", "axis=-3");
    node(g, "cx", "Concat", "x s2", "cx", "axis=1");
    node(g, "cz", "Concat", "s2 x", "cz", "axis=2");
    node(g, "a", "Add", "c2 cx", "t", "");
    node(g, "e", "Erf", "cz", "tz", "");
    node(g, "r", "Relu", "t", "y", "");
    return finish(g, "c y tz");
}

static void test_concat_grows(void) {
    int64_t d[4] = {1, 16, 64, 64};
    mpx_value x;
    mpx_value_alloc(&x, MPX_DT_FLOAT, 4, d, NULL);
    gb_fill_normal(&x, 13);
    const size_t act = (size_t)x.n * sizeof(float);
    for (int full = 0; full < 2; full++) {
        mpx_graph *g = concat_graph(full);
        for (int local = 0; local < 2; local++)
            for (int threads = 1; threads <= 2; threads++) {
                size_t in, out;
                inplace_runs(full ? "joins" : "skip join", g, &x, local, threads, &in, &out);
                /* on one thread: each candidate's join grows, and the
                 * reference's too unless its local steps read s after it;
                 * on two, which job runs first moves the peak either way */
                if (!full && threads == 1)
                    CHECK_MSG(in + (local ? 2 : 3) * act <= out, "local %d: peak %zu bytes grown, %zu not", local,
                              in, out);
            }
        mpx_graph_free(g);
    }
    mpx_value_free(&x);
}

/* Task figures against hand computations: two rows of three,
 *   r = [[1 3 2] [5 4 0]], c = [[1 2 3] [6 0 4]].
 * top1: row 0's argmax is 1 against 2, row 1's 0 against 0: 1/2.
 * topk_overlap@2: row 0 {1,2} and {2,1}: 1; row 1 {0,1} and {0,2}: 1/2; mean 3/4.
 * iou@2.5, a sample a row: row 0 {1} and {2}: 0; row 1 {0,1} and {0,2}:
 * 1/3; mean 1/6. sign_agree@2.5: above 2.5, r F T F T T F, c F F T T F T:
 * 2 of 6 agree. */
static double task(const mpx_value *r, const mpx_value *c, const char *name) {
    mpx_task_figure f;
    bool is;
    mpx_error e;
    double v = NAN;
    if (mpx_task_parse(name, &is, &f, &e) || !is || mpx_task_compute(r, c, &f, &v, &e)) return NAN;
    return v;
}

static void test_task_figures(void) {
    int64_t dims[2] = {2, 3};
    mpx_value r, c;
    mpx_error e;
    CHECK(mpx_value_alloc(&r, MPX_DT_FLOAT, 2, dims, &e) == MPX_OK);
    CHECK(mpx_value_alloc(&c, MPX_DT_FLOAT, 2, dims, &e) == MPX_OK);
    const float rv[6] = {1, 3, 2, 5, 4, 0}, cv[6] = {1, 2, 3, 6, 0, 4};
    memcpy(r.f, rv, sizeof rv);
    memcpy(c.f, cv, sizeof cv);
    CHECK(task(&r, &c, "top1") == 0.5);
    CHECK(task(&r, &c, "topk_overlap@2") == 0.75);
    CHECK(fabs(task(&r, &c, "iou@2.5") - 1.0 / 6) < 1e-15);
    CHECK(fabs(task(&r, &c, "sign_agree@2.5") - 1.0 / 3) < 1e-15);
    CHECK(task(&r, &r, "top1") == 1 && task(&r, &r, "iou@2.5") == 1 && task(&r, &r, "topk_overlap@3") == 1);
    /* a threshold nothing passes: both masks empty, the same mask */
    CHECK(task(&r, &c, "iou@100") == 1);
    /* refusals: no threshold, a bad k, a metric that is no task figure, one element to rank */
    mpx_task_figure f;
    bool is;
    CHECK(mpx_task_parse("iou", &is, &f, &e) == MPX_E_ARG && is && strstr(e.msg, "iou@<t>"));
    CHECK(mpx_task_parse("sign_agree@x", &is, &f, &e) == MPX_E_ARG && strstr(e.msg, "not a number"));
    CHECK(mpx_task_parse("topk_overlap@0", &is, &f, &e) == MPX_E_ARG);
    CHECK(mpx_task_parse("top1@2", &is, &f, &e) == MPX_E_ARG);
    CHECK(mpx_task_parse("rel_l2", &is, &f, &e) == MPX_OK && !is);
    CHECK(mpx_task_parse("topk_overlap@4", &is, &f, &e) == MPX_OK && mpx_task_compute(&r, &c, &f, &(double){0}, &e) == MPX_E_ARG &&
          strstr(e.msg, "only 3"));
    int64_t one[2] = {3, 1};
    mpx_value r1, c1;
    CHECK(mpx_value_alloc(&r1, MPX_DT_FLOAT, 2, one, &e) == MPX_OK);
    CHECK(mpx_value_alloc(&c1, MPX_DT_FLOAT, 2, one, &e) == MPX_OK);
    CHECK(mpx_task_parse("top1", &is, &f, &e) == MPX_OK &&
          mpx_task_compute(&r1, &c1, &f, &(double){0}, &e) == MPX_E_ARG && strstr(e.msg, "nothing to rank"));
    mpx_value_free(&r);
    mpx_value_free(&c);
    mpx_value_free(&r1);
    mpx_value_free(&c1);
}

/* ---- no work twice ---------------------------------------------------------------------- */

/* A candidate node that rounds nothing, on inputs whose candidate values
 * are the reference's, copies the reference's outputs instead of running
 * (n_shared counts them): a plan that rounds nothing computes the model
 * once; a plan that rounds from some node on shares the nodes before it
 * alone; a rounded weight or input stops the sharing where it is read. The
 * figures (local ones too) and kept values are the whole runs' bit for bit
 * either way. */
static void test_shared(void) {
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "m1", "Mul", "x:f:2x8 c=f[0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8]", "t1", "");
    node(g, "a1", "Add", "t1 t1", "t2", "");
    node(g, "r1", "Relu", "t2", "t3", "");
    node(g, "m2", "Mul", "t3 c", "t4", "");
    node(g, "s1", "Sub", "t4 t1", "t5", "");
    node(g, "shp", "Shape", "t5", "s", "");
    node(g, "rs", "Reshape", "t5 s", "y", "");
    finish(g, "y t3");
    int all = run_nodes(g);
    int64_t d[2] = {2, 8};
    mpx_value x;
    mpx_value_alloc(&x, MPX_DT_FLOAT, 2, d, NULL);
    gb_fill_normal(&x, 5);
    /* everything fp32 (an assignment, and none) */
    mpx_assign *f32 = mpx_assign_uniform(g, &mpx_format_fp32, NULL, false);
    /* fp16 from r1 on (m1 and a1 fp32; the input and c held fp32, r1 and m2
     * reading them rounded) */
    mpx_assign *late = mpx_assign_uniform(g, &mpx_format_fp16, NULL, true);
    /* every node fp32 but the weight c held in fp16: m1 reads it rounded */
    mpx_assign *wlow = mpx_assign_uniform(g, &mpx_format_fp32, NULL, false);
    /* fp32 nodes with an fp16 accumulation: nothing shared */
    mpx_assign *acc = mpx_assign_uniform(g, &mpx_format_fp32, NULL, false);
    CHECK(f32 && late && wlow && acc);
    if (!f32 || !late || !wlow || !acc) goto out;
    for (int i = 0; i < g->n_nodes; i++) {
        const mpx_node *n = g->nodes[i];
        if (strcmp(n->name, "m1") != 0 && strcmp(n->name, "a1") != 0) continue;
        late->node[i] = (mpx_node_prec){0};
        for (int k = 0; k < n->n_outputs; k++) late->tensor[n->outputs[k]->index] = NULL;
    }
    late->tensor[T(g, "c")->index] = NULL;
    wlow->tensor[T(g, "c")->index] = &mpx_format_fp16;
    for (int i = 0; i < g->n_nodes; i++) acc->node[i].acc.fmt = &mpx_format_fp16;
    const struct {
        const mpx_assign *a;
        int shared;
    } cases[] = {{NULL, all}, {f32, all}, {late, 2}, {wlow, 0}, {acc, 0}};
    for (int v = 0; v < 4; v++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            /* local runs too: a local step of a node that rounds nothing
             * copies the reference's outputs whatever its inputs */
            const int threads = v & 1;
            const bool local = v >= 2;
            mpx_compare_opts o = {.threads = threads, .local = local};
            mpx_compare *c = COMPARE(g, cases[i].a, &x, &o);
            CHECK_EQUAL(g, cases[i].a, &x, c, local);
            CHECK_MSG(c && c->n_run == all && c->n_shared == cases[i].shared,
                      "case %zu threads %d local %d: %d of %d nodes shared, want %d", i, threads, local, c ? c->n_shared : -1,
                      c ? c->n_run : -1, cases[i].shared);
            for (int t = 0; c && cases[i].a == f32 && t < c->n_layers; t++)
                CHECK(c->layers[t].m.rel_l2 == 0.0 && c->layers[t].m.max_abs == 0.0);
            mpx_compare_free(c);
        }
    /* several candidates at once: each its own */
    const mpx_assign *many[3] = {late, f32, wlow};
    mpx_compare *cs[3] = {0};
    mpx_compare_opts o = {0};
    CHECK(mpx_compare_run_many(g, many, 3, &x, &o, cs, &err) == MPX_OK);
    for (int q = 0; q < 3; q++) CHECK_EQUAL(g, many[q], &x, cs[q], false);
    CHECK(cs[0] && cs[1] && cs[2] && cs[0]->n_shared == 2 && cs[1]->n_shared == all && cs[2]->n_shared == 0);
    for (int q = 0; q < 3; q++) mpx_compare_free(cs[q]);
out:
    mpx_assign_free(f32);
    mpx_assign_free(late);
    mpx_assign_free(wlow);
    mpx_assign_free(acc);
    mpx_value_free(&x);
    mpx_graph_free(g);
}

/* Comparisons on two threads at once, each on two threads of its own: one
 * takes the kept second job thread (compare_jobs.c), the other starts a
 * thread of its own, and both give the bits one comparison gives alone. */
typedef struct conc {
    const mpx_graph *g;
    const mpx_assign *a;
    const mpx_value *x;
    const mpx_value *want; /* the output's candidate value alone */
    int out, bad;
} conc;

static void *conc_main(void *arg) {
    conc *w = arg;
    for (int r = 0; r < 12; r++) {
        mpx_compare *c = NULL;
        mpx_error e = {0};
        mpx_compare_opts o = {.threads = 0};
        if (mpx_compare_run(w->g, w->a, w->x, &o, &c, &e) != MPX_OK || !c || !same_bits(&c->cand[w->out], w->want))
            w->bad++;
        mpx_compare_free(c);
    }
    return NULL;
}

static void test_concurrent(void) {
    mpx_value x;
    mpx_graph *g = tiny_cnn(&x, 11);
    if (!g) return;
    mpx_assign *a = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
    mpx_run_start_threads();
    mpx_run_start_threads(); /* (idempotent) */
    const int out = g->outputs[0]->index;
    mpx_run *alone = RUN(g, a, &x, NULL);
    if (alone) {
        conc w[2] = {{g, a, &x, &alone->vals[out], out, 0}, {g, a, &x, &alone->vals[out], out, 0}};
        pthread_t th;
        const bool up = pthread_create(&th, NULL, conc_main, &w[1]) == 0;
        CHECK(up);
        conc_main(&w[0]);
        if (up) pthread_join(th, NULL);
        CHECK_MSG(w[0].bad == 0 && w[1].bad == 0, "concurrent comparisons: %d and %d of 12 differ or failed",
                  w[0].bad, w[1].bad);
    }
    /* A child of fork() (a Python multiprocessing worker) has none of the
     * kept threads: its comparison starts its own and gives the same bits,
     * where waiting for the parent's would never end. The parent waits for
     * the child's exit, up to a minute however busy the machine. */
    pid_t pid = alone ? fork() : -1;
    if (pid == 0) {
        conc w = {g, a, &x, &alone->vals[out], out, 0};
        conc_main(&w);
        _exit(w.bad == 0 ? 0 : 1);
    }
    int status = -1;
    if (pid > 0) {
        for (int i = 0; i < 6000 && waitpid(pid, &status, WNOHANG) == 0; i++)
            nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
        if (waitpid(pid, &status, WNOHANG) == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            status = -1;
        }
    }
    CHECK_MSG(pid > 0 && status == 0, "comparisons in a forked child: %s",
              status == -1 ? "did not end within a minute" : "failed or differ");
    mpx_run_free(alone);
    mpx_assign_free(a);
    mpx_value_free(&x);
    mpx_graph_free(g);
}

int main(void) {
    mpx_numerics_init();
    test_task_figures(); /* constant folding runs the kernels */
    int64_t cnn[4] = {1, 3, 16, 16}, tr[3] = {1, 16, 64};
    test_model("tiny_cnn.json", cnn, 4);
    test_model("tiny_transformer.json", tr, 3);
    test_chain_equal();
    test_overflow();
    test_local();
    test_metrics_paths();
    test_metrics_pieces();
    test_chain_memory();
    test_cancel_progress();
    test_errors();
    test_cache();
    test_cache_lean();
    test_cache_lean_identity();
    test_cache_lean_quant();
    test_measure();
    test_weights_unrounded();
    test_packing_shared();
    test_prepared_forms();
    test_inplace();
    test_concat_grows();
    test_shared();
    test_concurrent();
    return check_report("test_compare");
}
