/* compare_jobs.c - a second thread that shares each node's steps and
 * metrics with the calling thread (compare_internal.h). */
#include "compare_internal.h"

#include <string.h>
#include <time.h>

double mpx_cmp_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void run_job(job *j) {
    double t0 = mpx_cmp_now_ms();
    mpx_error_clear(&j->err);
    if (j->kind == JOB_METRICS || j->kind == JOB_METRICS_LOCAL)
        j->st = mpx_metrics_compute(j->r, j->c, j->fmt, j->m, &j->err);
    else
        j->st = mpx_exec_node_probe(j->n, j->a, j->vals, j->kind == JOB_LOCAL, j->probe, j->outs, &j->scratch,
                                    &j->err);
    j->ms = mpx_cmp_now_ms() - t0;
}

/* Waiting for the other thread spins this long (ns) before it sleeps on
 * the condition variable: a report posts a batch per node (hundreds a
 * forward, many of a few microseconds' work), and a sleeping thread took
 * tens of microseconds to wake on this VM (the kernels' pool spins for the
 * same reason, kern_gemm.c). */
enum { SPIN_NS = 30000 };

static bool spin_until(const atomic_int *v, int want_at_least) {
    const double end = mpx_cmp_now_ms() + SPIN_NS / 1e6;
    for (int i = 0;; i++) {
        if (atomic_load_explicit(v, memory_order_acquire) >= want_at_least) return true;
        if ((i & 63) == 63 && mpx_cmp_now_ms() > end) return false;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

/* The worker: takes jobs from the batch until told to quit. */
static void *worker(void *arg) {
    pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (!p->quit && p->next >= p->n) {
            pthread_mutex_unlock(&p->mu);
            (void)spin_until(&p->unclaimed, 1);
            pthread_mutex_lock(&p->mu);
        }
        while (!p->quit && p->next >= p->n) pthread_cond_wait(&p->work, &p->mu);
        if (p->quit) break;
        job *j = &p->jobs[p->next++];
        atomic_fetch_sub(&p->unclaimed, 1);
        pthread_mutex_unlock(&p->mu);
        run_job(j);
        pthread_mutex_lock(&p->mu);
        if (atomic_fetch_add(&p->finished, 1) + 1 == p->n) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Without a worker (one thread asked for, or none could start) everything
 * runs here, in order. */
void mpx_cmp_pool_start(pool *p) {
    memset(p, 0, sizeof *p);
    atomic_init(&p->finished, 0);
    atomic_init(&p->unclaimed, 0);
    if (pthread_mutex_init(&p->mu, NULL) != 0) return;
    if (pthread_cond_init(&p->work, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        return;
    }
    if (pthread_cond_init(&p->done, NULL) != 0) {
        pthread_cond_destroy(&p->work);
        pthread_mutex_destroy(&p->mu);
        return;
    }
    if (pthread_create(&p->th, NULL, worker, p) != 0) {
        pthread_cond_destroy(&p->done);
        pthread_cond_destroy(&p->work);
        pthread_mutex_destroy(&p->mu);
        return;
    }
    p->running = true;
}

void mpx_cmp_pool_stop(pool *p) {
    if (!p->running) return;
    pthread_mutex_lock(&p->mu);
    p->quit = true;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->th, NULL);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->mu);
    p->running = false;
}

void mpx_cmp_run_jobs(pool *p, job *jobs, int n) {
    if (!p->running || n < 2) {
        for (int k = 0; k < n; k++) run_job(&jobs[k]);
        return;
    }
    mpx_k_concurrent(true);
    pthread_mutex_lock(&p->mu);
    p->jobs = jobs;
    p->n = n;
    p->next = 0;
    atomic_store(&p->finished, 0);
    atomic_store(&p->unclaimed, n);
    pthread_cond_signal(&p->work);
    while (p->next < p->n) {
        job *j = &p->jobs[p->next++];
        atomic_fetch_sub(&p->unclaimed, 1);
        pthread_mutex_unlock(&p->mu);
        run_job(j);
        pthread_mutex_lock(&p->mu);
        atomic_fetch_add(&p->finished, 1);
    }
    if (atomic_load(&p->finished) < p->n) {
        pthread_mutex_unlock(&p->mu);
        (void)spin_until(&p->finished, n);
        pthread_mutex_lock(&p->mu);
    }
    while (atomic_load(&p->finished) < p->n) pthread_cond_wait(&p->done, &p->mu);
    p->n = p->next = 0;
    pthread_mutex_unlock(&p->mu);
    mpx_k_concurrent(false);
}
