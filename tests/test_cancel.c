/* test_cancel.c - a cancel inside one huge node (numerics/run/mpx_run.h,
 * mpx_set_cancel_flag): the run ends MPX_E_CANCELLED from inside the
 * kernel, and nothing the stopped kernel computed survives it: the next run
 * through the same comparison cache, on the same graph (whose kept packed
 * weights the stopped run made), gives the bits of a fresh graph's run.
 *
 * The graph: x [4096 x 2048] -> MatMul with W [2048 x 4096] -> y -> Relu ->
 * z; the product is seconds of work on two cores. The cancel comes from a
 * watcher thread once the process has spent half a product's user CPU time
 * since the run started (a condition, not a sleep): by then the run is
 * inside a product (everything before it, the inputs' rounding, is a
 * fraction of that), and not near its end. A product's user time is
 * measured first, by an uncancelled run: CPUs differ several-fold (a fixed
 * 0.4 s was past the product's start on Zen 3 but, with AVX-512, near its
 * end on Zen 5). User time, not user + system: the kernel clearing the
 * run's fresh pages (hundreds of MB, slow in a VM) would count as time in
 * the product before it began. Two ways in:
 * - the comparison's own opts.cancel (the kernels see it through the
 *   step's cancel scope), a full run that fills the cache;
 * - the process-wide flag (mpx_set_cancel_flag) with no opts.cancel, in an
 *   incremental run (another format for the product: the cache's reference
 *   stands, the candidate's product is recomputed), where a kernel that
 *   returned part-computed values as a success would have them cached and
 *   reported, since no check between nodes would see the flag. */
#include "check.h"
#include "graph_build.h"
#include "mpx_numerics.h"

#include <pthread.h>
#include <sys/resource.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static mpx_error err;

/* The product's size: 4096 x 2048 x 4096 (34 G multiply-adds). The
 * sanitizer build computes about 0.2 G a second, which would make the
 * test's seven products a quarter of an hour: there (MPX_CANCEL_SMALL, set
 * by tests/CMakeLists.txt) 1024 x 1024 x 2048, still seconds of work in that
 * build, and the cancel still lands inside the product. */
static int64_t M = 4096, K = 2048, N = 4096;
/* User CPU seconds into the run when the cancel comes: half a product's
 * (measured in test_cancel_inside_product). */
static double cpu_into;

static mpx_graph *build(void) {
    mpx_graph *g = mpx_graph_new("cancel");
    char ins[96];
    snprintf(ins, sizeof ins, "x:f:%lldx%lld w#f:%lldx%lld", (long long)M, (long long)K, (long long)K, (long long)N);
    node(g, "mm", "MatMul", ins, "y", "");
    node(g, "relu", "Relu", "y", "z", "");
    mpx_error_clear(&err);
    mpx_status st = gb_build(g, "z", &err);
    CHECK_MSG(st == MPX_OK, "building the graph: %s", err.msg);
    mpx_tensor *w = mpx_graph_find_tensor(g, "w");
    mpx_value wv = {.f = w->f32, .n = w->nelem};
    gb_fill_normal(&wv, 7);
    return g;
}

static double cpu_s(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6;
}

typedef struct job {
    const mpx_graph *g;
    const mpx_assign *a;
    const mpx_value *x;
    mpx_compare_opts o;
    mpx_status st;
    mpx_error err;
    mpx_compare *c;
    atomic_int done;
} job;

static void *job_run(void *arg) {
    job *j = arg;
    j->st = mpx_compare_run(j->g, j->a, j->x, &j->o, &j->c, &j->err);
    atomic_store(&j->done, 1);
    return NULL;
}

/* Runs j on a thread and sets *flag once the process has spent cpu_into
 * of user CPU since the start (or the run ended first: the checks then fail). */
static void run_cancelled(job *j, volatile int *flag) {
    atomic_init(&j->done, 0);
    const double t0 = cpu_s();
    pthread_t t;
    CHECK(pthread_create(&t, NULL, job_run, j) == 0);
    const struct timespec poll = {0, 1000000};
    while (!atomic_load(&j->done) && cpu_s() - t0 < cpu_into) nanosleep(&poll, NULL);
    CHECK_MSG(!atomic_load(&j->done), "the run ended (%s) before the cancel came", mpx_status_name(j->st));
    *flag = 1;
    pthread_join(t, NULL);
}

/* The values of tensor name in a run of a fresh graph (no packed weights
 * kept, no cache): the candidate's under a (NULL: fp32). */
static bool fresh_equal(const mpx_assign *a_of_fresh(const mpx_graph *), const mpx_value *x, const mpx_value *cand,
                        const mpx_value *ref) {
    mpx_graph *g = build();
    const mpx_assign *a = a_of_fresh(g);
    mpx_compare *c = NULL;
    mpx_compare_opts o = {0};
    mpx_error_clear(&err);
    mpx_status st = mpx_compare_run(g, a, x, &o, &c, &err);
    CHECK_MSG(st == MPX_OK, "fresh run: %s", err.msg);
    int z = mpx_graph_find_tensor(g, "z")->index;
    bool same = c && c->cand[z].n == cand->n && c->ref[z].n == ref->n &&
                memcmp(c->cand[z].f, cand->f, (size_t)cand->n * sizeof(float)) == 0 &&
                memcmp(c->ref[z].f, ref->f, (size_t)ref->n * sizeof(float)) == 0;
    mpx_compare_free(c);
    mpx_assign_free((mpx_assign *)a);
    mpx_graph_free(g);
    return same;
}

static const mpx_assign *fp16_of(const mpx_graph *g) {
    return mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
}

static const mpx_assign *bf16_of(const mpx_graph *g) {
    return mpx_assign_uniform(g, &mpx_format_bf16, NULL, false);
}

static void test_cancel_inside_product(void) {
    mpx_graph *g = build();
    int64_t xd[2] = {M, K};
    mpx_value x;
    CHECK(mpx_value_alloc(&x, MPX_DT_FLOAT, 2, xd, &err) == MPX_OK);
    gb_fill_normal(&x, 3);
    mpx_compare_cache *k = mpx_compare_cache_new((size_t)1 << 30);
    mpx_assign *a16 = (mpx_assign *)fp16_of(g), *ab16 = (mpx_assign *)bf16_of(g);
    const int z = mpx_graph_find_tensor(g, "z")->index;

    /* 0. A product's user time: an uncancelled run (the reference's product
     * and the candidate's) on a graph of its own, so that the cancelled run
     * below still makes g's kept packed weights. */
    {
        mpx_graph *gc = build();
        const mpx_assign *ac = fp16_of(gc);
        job c = {.g = gc, .a = ac, .x = &x, .o = {.threads = 1}};
        const double t0 = cpu_s();
        job_run(&c);
        CHECK_MSG(c.st == MPX_OK, "the run that measures a product: %s", c.err.msg);
        cpu_into = (cpu_s() - t0) / 4;
        mpx_compare_free(c.c);
        mpx_assign_free((mpx_assign *)ac);
        mpx_graph_free(gc);
    }

    /* 1. The run's own flag, a full run through the cache. */
    volatile int flag = 0;
    job j = {.g = g, .a = a16, .x = &x, .o = {.cancel = &flag, .cache = k, .threads = 1}};
    run_cancelled(&j, &flag);
    CHECK_MSG(j.st == MPX_E_CANCELLED && j.c == NULL, "status %s: %s", mpx_status_name(j.st), j.err.msg);
    CHECK_CONTAINS(j.err.msg, "node \"mm\" (MatMul): cancelled while it ran");
    mpx_compare_free(j.c);
    flag = 0;
    j = (job){.g = g, .a = a16, .x = &x, .o = {.cancel = &flag, .cache = k}};
    job_run(&j);
    CHECK_MSG(j.st == MPX_OK && j.c, "the run after the cancel: %s", j.err.msg);
    if (j.c) {
        CHECK_MSG(!j.c->incremental, "the cancelled run left a cache the next run took");
        CHECK_MSG(fresh_equal(fp16_of, &x, &j.c->cand[z], &j.c->ref[z]),
                  "the run after a cancel differs from a fresh graph's");
    }
    mpx_compare_free(j.c);

    /* 2. The process-wide flag only, an incremental run: bf16 makes the
     * product dirty, the cached reference stands. */
    volatile int ctrl_c = 0;
    mpx_set_cancel_flag(&ctrl_c);
    j = (job){.g = g, .a = ab16, .x = &x, .o = {.cache = k}};
    run_cancelled(&j, &ctrl_c);
    CHECK_MSG(j.st == MPX_E_CANCELLED && j.c == NULL, "status %s: %s", mpx_status_name(j.st), j.err.msg);
    CHECK_CONTAINS(j.err.msg, "cancelled");
    mpx_compare_free(j.c);
    ctrl_c = 0;
    /* The cancelled run had let go of the candidate values it was to
     * replace (the product's and Relu's): the cache still describes the fp16
     * run, and a run of that plan makes them again, the same bits. */
    j = (job){.g = g, .a = a16, .x = &x, .o = {.cache = k}};
    job_run(&j);
    CHECK_MSG(j.st == MPX_OK && j.c, "the fp16 run after the cancel: %s", j.err.msg);
    if (j.c) {
        CHECK_MSG(j.c->incremental && j.c->n_run == 2, "incremental %d, %d nodes run", j.c->incremental, j.c->n_run);
        CHECK_MSG(fresh_equal(fp16_of, &x, &j.c->cand[z], &j.c->ref[z]),
                  "the fp16 run after a cancelled bf16 one differs from a fresh graph's");
    }
    mpx_compare_free(j.c);
    j = (job){.g = g, .a = ab16, .x = &x, .o = {.cache = k}};
    job_run(&j);
    CHECK_MSG(j.st == MPX_OK && j.c, "the run after the cancel: %s", j.err.msg);
    if (j.c) {
        /* the cache still held the fp16 run: only the product and Relu ran */
        CHECK_MSG(j.c->incremental && j.c->n_run == 2, "incremental %d, %d nodes run", j.c->incremental, j.c->n_run);
        CHECK_MSG(fresh_equal(bf16_of, &x, &j.c->cand[z], &j.c->ref[z]),
                  "the incremental run after a cancel differs from a fresh graph's");
    }
    mpx_compare_free(j.c);
    mpx_set_cancel_flag(NULL);

    mpx_assign_free(a16);
    mpx_assign_free(ab16);
    mpx_compare_cache_free(k);
    mpx_value_free(&x);
    mpx_graph_free(g);
}

int main(void) {
    if (getenv("MPX_CANCEL_SMALL")) M = 1024, K = 1024, N = 2048;
    /* A comparison makes the weights' kept forms at its start, before its
     * values (exec.c: mpx_exec_prepare_forms; whole packings, not stoppable),
     * and the CPU that takes can reach the quarter of a product after
     * which the watcher cancels: the cancel then lands before the product,
     * at the node's start, which is not what this test is about. Without
     * it the product makes them, as the test's premise says. */
    setenv("MPX_CMP_NOPREP", "1", 1);
    mpx_numerics_init();
    test_cancel_inside_product();
    return check_report("test_cancel");
}
