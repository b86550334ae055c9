/* test_pool.c - the kernels' thread pool (kern_gemm.c, mpx_k_parallel):
 * every item of a job runs exactly once, on a thread id below the job's
 * thread count, and none runs after the call returns.
 *
 * The pool's caller does not wait for a worker that has not joined its job
 * (it closes the job when its items run out; a worker arriving later skips
 * it). A mistake in that handshake runs a late worker on a job that is
 * gone (it lives on the caller's stack) or returns while an item still
 * runs: both show here as an item counted twice, missing, or running
 * after its job returned. The jobs are small and separated by pauses
 * longer than the workers' spin, so workers are often asleep when a job
 * starts, the case the handshake is for; two callers at once are tried
 * too (the second runs its items on its own thread).
 *
 * Each thread has a home range of the items (kern_threads.c) and takes
 * from another's only when its own is empty: a job whose first half is
 * slow shows the second thread taking items of the first half's range
 * (else the job would take twice as long), every item still once. */
#include "check.h"
#include "kern_internal.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

typedef struct job {
    atomic_int runs[320];
    atomic_bool returned; /* set once mpx_k_parallel returned */
    int nt;
    long spin;            /* busy-work per item */
} job;

static atomic_long late, bad_tid;

static void item(void *ctx, int tid, long i) {
    job *j = ctx;
    if (tid < 0 || tid >= j->nt) atomic_fetch_add(&bad_tid, 1);
    volatile long s = 0;
    for (long k = 0; k < j->spin; k++) s += k;
    (void)s;
    atomic_fetch_add(&j->runs[i], 1);
    if (atomic_load(&j->returned)) atomic_fetch_add(&late, 1);
}

static void pause_us(long us) {
    struct timespec t = {0, us * 1000};
    nanosleep(&t, NULL);
}

/* n_jobs jobs of 1..16 items, every fourth of 1..300 (items are claimed
 * in runs of a share of those left in a home range: kern_threads.c
 * kg_par_loop), on nt threads; false when an item ran other than once. */
static bool run_jobs(int n_jobs, int nt, unsigned seed) {
    bool ok = true;
    for (int r = 0; r < n_jobs; r++) {
        seed = seed * 1103515245u + 12345u;
        const long n = 1 + (long)(seed >> 16) % (r % 4 == 1 ? 300 : 16);
        job j = {.nt = nt, .spin = (long)((seed >> 8) % 4) * 2000};
        for (int i = 0; i < 320; i++) atomic_init(&j.runs[i], 0);
        atomic_init(&j.returned, false);
        mpx_k_parallel(n, nt, item, &j);
        atomic_store(&j.returned, true);
        for (long i = 0; i < 320; i++) ok = ok && atomic_load(&j.runs[i]) == (i < n ? 1 : 0);
        /* every few jobs a pause past the workers' 200 us spin (kern_gemm.c
         * KG_SPIN_NS): they sleep */
        if (r % 3 == 0) pause_us(220 + (long)(seed % 100));
    }
    return ok;
}

/* Nested jobs: a job started from an item of a job on two threads runs on
 * that item's thread: the pool is the outer job's, and starting threads
 * per inner call cost a pthread_create and a join per product of a
 * batched MatMul (BERT's per-head attention products ran at 4 GMAC/s).
 * Seen as the process's thread count while inner items run (both cores
 * are busy with the outer items, so a thread started for an inner job
 * seldom gets to run an item, but it exists until joined). A job started
 * from a job of one item still gets the pool's threads. Run first in
 * main: the pool then has the one worker the outer job starts. */
typedef struct nest {
    pthread_t outer;          /* the thread of the outer item running the inner job */
    atomic_int runs, foreign; /* inner items run, and run on another thread */
    atomic_int tid_max, threads_max;
} nest;

static int threads_now(void) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void atomic_max(atomic_int *a, int v) {
    int m = atomic_load(a);
    while (v > m && !atomic_compare_exchange_weak(a, &m, v)) {
    }
}

static void inner_item(void *ctx, int tid, long i) {
    (void)i;
    nest *n = ctx;
    volatile long s = 0;
    for (long k = 0; k < 20000; k++) s += k; /* long enough for a second thread to take items */
    (void)s;
    if (!pthread_equal(pthread_self(), n->outer)) atomic_fetch_add(&n->foreign, 1);
    atomic_max(&n->tid_max, tid);
    atomic_max(&n->threads_max, threads_now());
    atomic_fetch_add(&n->runs, 1);
}

static void outer_item(void *ctx, int tid, long i) {
    (void)tid;
    nest *n = (nest *)ctx + i;
    n->outer = pthread_self();
    mpx_k_parallel(64, 2, inner_item, n);
}

static void nest_clear(nest *n) {
    atomic_init(&n->runs, 0), atomic_init(&n->foreign, 0);
    atomic_init(&n->tid_max, 0), atomic_init(&n->threads_max, 0);
}

static void check_nested(void) {
    const int before = threads_now();
    nest ns[2];
    for (int r = 0; r < 20; r++) {
        nest_clear(&ns[0]), nest_clear(&ns[1]);
        mpx_k_parallel(2, 2, outer_item, ns);
        for (int i = 0; i < 2; i++) {
            CHECK_MSG(atomic_load(&ns[i].runs) == 64, "nested job %d: %d of 64 items ran", i,
                      atomic_load(&ns[i].runs));
            CHECK_MSG(atomic_load(&ns[i].foreign) == 0, "nested job %d: %d items ran off the outer item's thread",
                      i, atomic_load(&ns[i].foreign));
            /* the caller and the pool's one worker */
            CHECK_MSG(atomic_load(&ns[i].threads_max) <= before + 1,
                      "nested job %d: %d threads while it ran (%d before the outer job): it started its own", i,
                      atomic_load(&ns[i].threads_max), before);
        }
    }
    /* one outer item: its inner job is the only one, and may use thread 1
     * (it does whenever the worker wakes in time; tried a few times) */
    bool shared = false;
    for (int r = 0; r < 50 && !shared; r++) {
        nest_clear(&ns[0]);
        mpx_k_parallel(1, 2, outer_item, ns);
        CHECK(atomic_load(&ns[0].runs) == 64);
        shared = atomic_load(&ns[0].tid_max) == 1;
    }
    CHECK_MSG(shared, "a job of one item: its inner job never ran on a second thread");
}

/* A job of 64 items whose first 32 (thread 0's home range on two
 * threads) take 200 us each and the others nothing: thread 1 empties its
 * own range at once and must take from the back of thread 0's. */
typedef struct steal {
    atomic_int runs[64];
    atomic_int stolen; /* items of range 0 run by thread 1 */
} steal;

static void steal_item(void *ctx, int tid, long i) {
    steal *s = ctx;
    if (i < 32) {
        pause_us(200);
        if (tid == 1) atomic_fetch_add(&s->stolen, 1);
    }
    atomic_fetch_add(&s->runs[i], 1);
}

static void check_stealing(void) {
    bool seen = false;
    /* the worker may be asleep when a job starts (then the caller runs
     * every item itself): tried until it joined, at most 50 jobs */
    for (int r = 0; r < 50 && !seen; r++) {
        steal s;
        for (int i = 0; i < 64; i++) atomic_init(&s.runs[i], 0);
        atomic_init(&s.stolen, 0);
        mpx_k_parallel(64, 2, steal_item, &s);
        for (int i = 0; i < 64; i++) CHECK_MSG(atomic_load(&s.runs[i]) == 1, "item %d ran %d times", i, atomic_load(&s.runs[i]));
        seen = atomic_load(&s.stolen) > 0;
    }
    CHECK_MSG(seen, "thread 1 never took an item of thread 0's range once its own was empty");
}

static void *second_caller(void *arg) {
    *(bool *)arg = run_jobs(300, 2, 7u);
    return NULL;
}

int main(void) {
    check_nested();
    check_stealing();
    CHECK_MSG(run_jobs(2000, 2, 1u), "two threads: an item ran other than once");
    CHECK_MSG(run_jobs(500, 4, 2u), "four threads: an item ran other than once");
    bool other = false;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, second_caller, &other) == 0);
    bool mine = run_jobs(300, 2, 3u);
    pthread_join(th, NULL);
    CHECK_MSG(mine && other, "two callers at once: an item ran other than once");
    CHECK_MSG(atomic_load(&late) == 0, "%ld items ran after their job returned", atomic_load(&late));
    CHECK_MSG(atomic_load(&bad_tid) == 0, "%ld items ran on a thread id out of range", atomic_load(&bad_tid));
    return check_report("test_pool");
}
