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
 * too (the second runs its items on its own thread). */
#include "check.h"
#include "kern_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

typedef struct job {
    atomic_int runs[16];
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

/* n_jobs jobs of 1..16 items on nt threads; false when an item ran other
 * than once. */
static bool run_jobs(int n_jobs, int nt, unsigned seed) {
    bool ok = true;
    for (int r = 0; r < n_jobs; r++) {
        seed = seed * 1103515245u + 12345u;
        const long n = 1 + (long)(seed >> 16) % 16;
        job j = {.nt = nt, .spin = (long)((seed >> 8) % 4) * 2000};
        for (int i = 0; i < 16; i++) atomic_init(&j.runs[i], 0);
        atomic_init(&j.returned, false);
        mpx_k_parallel(n, nt, item, &j);
        atomic_store(&j.returned, true);
        for (long i = 0; i < 16; i++) ok = ok && atomic_load(&j.runs[i]) == (i < n ? 1 : 0);
        /* every few jobs a pause past the workers' 200 us spin (kern_gemm.c
         * KG_SPIN_NS): they sleep */
        if (r % 3 == 0) pause_us(220 + (long)(seed % 100));
    }
    return ok;
}

static void *second_caller(void *arg) {
    *(bool *)arg = run_jobs(300, 2, 7u);
    return NULL;
}

int main(void) {
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
