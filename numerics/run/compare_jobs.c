/* compare_jobs.c - a comparison's jobs run as soon as their inputs exist,
 * on the calling thread and one worker (compare_internal.h).
 *
 * Each thread loops: pick a ready job under the lock, run it without, hand
 * it back under the lock (which may make others ready). A thread with
 * nothing ready waits for the next job to finish: it spins a little first
 * (a node's jobs are often a few microseconds, and a sleeping thread can
 * take tens of microseconds to wake, on virtual machines especially), then
 * sleeps. Which thread runs
 * what, and in which order, changes no result: only the time and the peak
 * of live values (the owner bounds that with its window of nodes). The
 * worker is kept for the process (below). */
#include "compare_internal.h"

#include <string.h>
#include <time.h>

double mpx_cmp_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

enum { SPIN_NS = 30000 };

/* Spin until another job finished (true) or SPIN_NS passed (false). */
static bool spin_past(const atomic_long *finished, long seen) {
    const double end = mpx_cmp_now_ms() + SPIN_NS / 1e6;
    for (int i = 0;; i++) {
        if (atomic_load_explicit(finished, memory_order_acquire) != seen) return true;
        if ((i & 63) == 63 && mpx_cmp_now_ms() > end) return false;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

static void loop(sched *s, int thread) {
    pthread_mutex_lock(&s->mu);
    for (;;) {
        if (thread == 0 && s->tick) {
            pthread_mutex_unlock(&s->mu);
            s->tick(s->ctx);
            pthread_mutex_lock(&s->mu);
        }
        if (s->over(s->ctx)) break;
        job *j = s->pick(s->ctx);
        if (!j) {
            long seen = atomic_load(&s->finished);
            pthread_mutex_unlock(&s->mu);
            bool moved = spin_past(&s->finished, seen);
            pthread_mutex_lock(&s->mu);
            if (!moved)
                while (atomic_load(&s->finished) == seen && !s->over(s->ctx))
                    pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        j->thread = thread;
        pthread_mutex_unlock(&s->mu);
        double t0 = mpx_cmp_now_ms();
        if (s->two) mpx_k_busy(true);
        s->run(s->ctx, j);
        if (s->two) mpx_k_busy(false);
        j->ms = mpx_cmp_now_ms() - t0;
        pthread_mutex_lock(&s->mu);
        s->done(s->ctx, j);
        mpx_cmp_sched_wake(s);
    }
    /* the other thread may be waiting for a change that will not come */
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void mpx_cmp_sched_wake(sched *s) {
    atomic_fetch_add_explicit(&s->finished, 1, memory_order_release);
    pthread_cond_broadcast(&s->cv);
}

/* The second job thread, kept for the process: creating one per
 * comparison cost 0.1 ms each and about 1 ms the first time in a process
 * (its stack and glibc's thread set-up, on a KVM machine), which is most
 * of a small model's first run (a GRU's: 1.6 ms against 0.6 for later ones).
 * It is started with the kernels' pool when a model is prepared
 * (mpx_run_start_threads) or at the first comparison, and sleeps between
 * comparisons. One comparison at a time holds it; another running at the
 * same time (a second thread of the caller's) starts a thread of its own. */
static struct {
    pthread_mutex_t hold; /* held by the comparison the worker serves */
    pthread_mutex_t m;
    pthread_cond_t cv;
    sched *job;           /* the comparison being served, NULL once the worker has left it */
    bool up;
} keeper = {.hold = PTHREAD_MUTEX_INITIALIZER, .m = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void *keeper_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&keeper.m);
    for (;;) {
        while (!keeper.job) pthread_cond_wait(&keeper.cv, &keeper.m);
        sched *s = keeper.job;
        pthread_mutex_unlock(&keeper.m);
        loop(s, 1);
        pthread_mutex_lock(&keeper.m);
        keeper.job = NULL;
        pthread_cond_broadcast(&keeper.cv);
    }
    return NULL;
}

/* A child of fork() has none of its parent's threads: it starts its own
 * worker when it first needs one (a Python multiprocessing child would
 * otherwise wait for ever on a worker that is not there). The child runs
 * on one thread, so nothing holds these locks in it but a parent thread's
 * copy: they are made anew. */
static void keeper_forget(void) {
    keeper.hold = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    keeper.m = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    keeper.cv = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
    keeper.job = NULL;
    keeper.up = false;
}

static void keeper_at_fork(void) { (void)pthread_atfork(NULL, NULL, keeper_forget); }

/* Starts the kept worker unless it runs; under keeper.m. */
static bool keeper_up(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (keeper.up) return true;
    pthread_once(&once, keeper_at_fork);
    pthread_t th;
    if (pthread_create(&th, NULL, keeper_main, NULL) != 0) return false;
    pthread_detach(th);
    return keeper.up = true;
}

void mpx_run_start_threads(void) {
    mpx_k_start_threads();
    pthread_mutex_lock(&keeper.m);
    (void)keeper_up();
    pthread_mutex_unlock(&keeper.m);
}

/* s's second thread on the kept worker; false (nothing started) when
 * another comparison holds it or it cannot start. */
static bool keeper_serve(sched *s) {
    if (pthread_mutex_trylock(&keeper.hold) != 0) return false;
    pthread_mutex_lock(&keeper.m);
    const bool ok = keeper_up();
    if (ok) {
        keeper.job = s;
        pthread_cond_broadcast(&keeper.cv);
    }
    pthread_mutex_unlock(&keeper.m);
    if (!ok) pthread_mutex_unlock(&keeper.hold);
    return ok;
}

/* Waits until the kept worker has left s's loop (s's mutex is then free to
 * destroy) and gives the worker back. */
static void keeper_wait(void) {
    pthread_mutex_lock(&keeper.m);
    while (keeper.job) pthread_cond_wait(&keeper.cv, &keeper.m);
    pthread_mutex_unlock(&keeper.m);
    pthread_mutex_unlock(&keeper.hold);
}

static void *worker(void *arg) {
    loop(arg, 1);
    return NULL;
}

bool mpx_cmp_sched_run(sched *s, bool two_threads) {
    atomic_init(&s->finished, 0);
    if (pthread_mutex_init(&s->mu, NULL) != 0) return false;
    if (pthread_cond_init(&s->cv, NULL) != 0) {
        pthread_mutex_destroy(&s->mu);
        return false;
    }
    /* Without a worker (one thread asked for, or none could start) the
     * same loop runs here alone. */
    pthread_t th;
    s->two = two_threads; /* (read by the worker from its start) */
    const bool kept = two_threads && keeper_serve(s);
    const bool own = two_threads && !kept && pthread_create(&th, NULL, worker, s) == 0;
    if (!kept && !own) s->two = false; /* (alone: no other thread reads it) */
    if (kept || own) mpx_k_concurrent(true);
    loop(s, 0);
    if (kept) keeper_wait();
    if (own) pthread_join(th, NULL);
    if (kept || own) mpx_k_concurrent(false);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    return true;
}
