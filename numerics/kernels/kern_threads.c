/* kern_threads.c - the kernels' threads (kern_internal.h: mpx_k_parallel,
 * mpx_k_concurrent, mpx_k_busy, kg_threads): a pool of workers kept for the process,
 * taking a job's items from a shared atomic counter with the calling
 * thread; each item writes only its own outputs, so results do not depend
 * on which thread ran what. */
#include "kern_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#define KG_HAVE_X86 1
#else
#define KG_HAVE_X86 0
#endif

int kg_threads(void) {
    const char *e = getenv("MPX_KERN_THREADS");
    if (e && *e) {
        int n = atoi(e);
        if (n >= 1 && n <= 8) return n;
    }
    return 2;
}

/* A thread's home range of a job's items, [lo, hi) packed in one word
 * (lo in the low half) so that one compare-and-swap claims from either end;
 * each on its own cache line. */
typedef struct {
    _Alignas(64) atomic_ullong lohi;
} kg_range;

typedef struct kg_par {
    kg_range r[8];
    long n, base; /* items base .. base + n - 1 (kg_parallel's slices) */
    void (*fn)(void *ctx, int tid, long item);
    void *ctx;
    /* A job that may stop early (mpx_k_parallel_stoppable): the caller's
     * cancel scope, read by every thread of the job (workers have none of
     * their own), and whether an item was left out. */
    bool stoppable;
    const volatile int *scope;
    atomic_bool stopped;
    int nt; /* the threads the job runs on (the home ranges) */
} kg_par;

/* ---- cancellation ------------------------------------------------------------
 * Two flags stop a kernel: the process-wide one a Ctrl-C handler sets
 * (mpx_set_cancel_flag), and the calling thread's scope (a comparison's
 * opts.cancel, set around each of its steps). Both are only read here:
 * a relaxed load per work item costs nothing beside an item's work. */
static _Atomic(const volatile int *) kg_cancel_flag;
static _Thread_local const volatile int *kg_scope;

void mpx_k_set_cancel_flag(const volatile int *flag) { atomic_store(&kg_cancel_flag, flag); }

const volatile int *mpx_k_cancel_scope(const volatile int *flag) {
    const volatile int *was = kg_scope;
    kg_scope = flag;
    return was;
}

static bool kg_flags_set(const volatile int *scope) {
    const volatile int *f = atomic_load_explicit(&kg_cancel_flag, memory_order_relaxed);
    return (f && *f) || (scope && *scope);
}

bool mpx_k_cancelled(void) { return kg_flags_set(kg_scope); }

typedef struct kg_worker {
    kg_par *p;
    int tid;
    pthread_t th;
} kg_worker;

/* Whether this thread is running an item of a parallel job: a job started
 * from inside one (a batch of small products side by side, each through
 * the GEMM core, which would split it again) runs on the calling thread.
 * The pool is held by the outer job, so such a call would otherwise start
 * threads of its own, a pthread_create per product (BERT's per-head
 * attention products, 12 small ones a MatMul, would pay that each). */
static _Thread_local bool kg_in_job;

/* Each thread has a home range of the items, the t-th of nt equal
 * contiguous ranges, and takes its own items from the front, a quarter of
 * what is left at a time (at least one item: the last ones singly, so
 * the threads' ends even out); a thread whose range is empty takes from
 * the back of the range with the most left, the same quarter, so the
 * threads still finish together when one of them is late or slowed.
 *
 * Why home ranges: on the KVM machines of the benchmark the two vCPUs
 * share no cache, and a line goes from one to the other in 230-390 ns.
 * With one shared counter every claim moved its line between the cores,
 * and which thread ran which items changed from one job to the next, so
 * a convolution's input copy, its product and the next node's reads each
 * found half their data in the other core's cache. With home ranges a
 * job's claims touch a line its owner alone uses, and the items of
 * consecutive jobs over the same data (a convolution's column bands and
 * the input rows they read: kern_gemm.c kg_fill_bands) stay on one core.
 * Two threads, Zen 5, interleaved processes' medians: two 64 x 56 x 56
 * 3x3 convolutions 1.80 -> 1.60 ms, MobileNetV3-Small 1.87 -> 1.71,
 * EfficientNet-B0 8.0 -> 7.5, BERT-style 17.7 -> 16.6, ViT-B/16 124 ->
 * 116. Which thread runs an item never changes a result. */
static inline unsigned long long kg_pack(unsigned long lo, unsigned long hi) {
    return (unsigned long long)lo | (unsigned long long)hi << 32;
}

static void kg_ranges_init(kg_par *p) {
    for (int t = 0; t < 8; t++) {
        const long lo = t < p->nt ? (long)kg_home_first(p->n, t, p->nt) : p->n;
        const long hi = t < p->nt ? (long)kg_home_first(p->n, t + 1, p->nt) : p->n;
        atomic_init(&p->r[t].lohi, kg_pack((unsigned long)lo, (unsigned long)hi));
    }
}

/* Claims items [*at, *at + *run) from range t, from the front (own) or the
 * back (a thief's run); false when it was empty. */
static bool kg_claim(kg_par *p, int t, bool front, long *at, long *run) {
    unsigned long long w = atomic_load_explicit(&p->r[t].lohi, memory_order_relaxed);
    for (;;) {
        const long lo = (long)(w & 0xffffffffu), hi = (long)(w >> 32);
        if (lo >= hi) return false;
        const long k = (long)kg_claim_run(hi - lo);
        const unsigned long long nw = front ? kg_pack((unsigned long)(lo + k), (unsigned long)hi)
                                            : kg_pack((unsigned long)lo, (unsigned long)(hi - k));
        if (atomic_compare_exchange_weak(&p->r[t].lohi, &w, nw)) {
            *at = front ? lo : hi - k;
            *run = k;
            return true;
        }
    }
}

static void kg_stop_all(kg_par *p) {
    atomic_store(&p->stopped, true);
    for (int t = 0; t < p->nt; t++) atomic_store(&p->r[t].lohi, kg_pack(0, 0)); /* the others take no more */
}

static void kg_par_loop(kg_par *p, int tid) {
    const int nt = p->nt > 1 ? p->nt : 1;
    const int home = tid < nt ? tid : 0;
    for (;;) {
        long at, run;
        if (!kg_claim(p, home, true, &at, &run)) {
            /* the victim: the range with the most left */
            int v = -1;
            long most = 0;
            for (int t = 0; t < nt; t++) {
                const unsigned long long w = atomic_load_explicit(&p->r[t].lohi, memory_order_relaxed);
                const long left = (long)(w >> 32) - (long)(w & 0xffffffffu);
                if (left > most) most = left, v = t;
            }
            if (v < 0) return;
            if (!kg_claim(p, v, false, &at, &run)) continue;
        }
        for (long i = at; i < at + run; i++) {
            if (p->stoppable && kg_flags_set(p->scope)) {
                kg_stop_all(p);
                return;
            }
            p->fn(p->ctx, tid, p->base + i);
        }
    }
}

/* kg_par_loop as one of a job's threads (a job on one thread leaves its
 * items free to split: a batch of one product gets the threads). */
static void kg_par_loop_shared(kg_par *p, int tid) {
    const bool outer = kg_in_job;
    const volatile int *scope = kg_scope;
    kg_in_job = true;
    kg_scope = p->scope; /* (a worker's items check the caller's scope) */
    kg_par_loop(p, tid);
    kg_in_job = outer;
    kg_scope = scope;
}

static void *kg_par_main(void *arg) {
    kg_worker *w = arg;
    kg_par_loop_shared(w->p, w->tid);
    return NULL;
}

/* A pool of worker threads kept for the process: a det forward calls this
 * about a thousand times, and creating and joining a thread per call cost
 * more than some of the calls' work. One caller at a time holds the pool;
 * a second, concurrent caller (compare.c runs a node's reference and
 * candidate on two threads, each with its own kernels) runs its items on
 * its own thread: the cores are already both busy, and threads of its own
 * would only share them, at a thread's start-up cost per call. Workers
 * sleep on a condition variable between jobs.
 *
 * The caller waits only for workers that joined its job: when it has run
 * out of items it closes the job (closed = its gen), and a worker that
 * arrives after that skips it. Waiting for every worker to arrive would
 * make a job that found its worker asleep (no job for the length of its
 * spin) pay the wake-up, tens of microseconds on a virtual machine, even
 * where the caller had run every item itself: small calls (1x1
 * convolutions of a few hundred thousand multiply-adds) could not go
 * parallel. The handshake: a
 * worker counts itself in `active`, then reads `closed`; the caller
 * stores `closed`, then reads `active` (both sequentially consistent), so
 * either the caller sees the worker and waits for it, or the worker sees
 * the job closed and never touches it (the job lives on the caller's
 * stack). */
enum { KG_POOL_MAX = 7 };

static struct {
    pthread_mutex_t hold; /* held by the caller whose job the pool runs */
    pthread_mutex_t m;
    pthread_cond_t go, done;
    kg_par *job;
    int job_nt;           /* workers 1 .. job_nt-1 take part */
    atomic_ulong gen;     /* bumped for every job */
    atomic_ulong closed;  /* the gen of the last job whose items ran out */
    atomic_int active;    /* workers inside a job */
    int started;          /* workers alive */
    kg_worker w[KG_POOL_MAX];
} kg_pool = {.hold = PTHREAD_MUTEX_INITIALIZER,
             .m = PTHREAD_MUTEX_INITIALIZER,
             .go = PTHREAD_COND_INITIALIZER,
             .done = PTHREAD_COND_INITIALIZER};

/* Spin this long (ns) on a job's start or end before sleeping on the
 * condition variable: a sleeping thread can take tens of microseconds to
 * wake (on virtual machines especially), and a forward makes a few hundred
 * parallel calls, a few hundred microseconds of work each (ResNet-18's
 * convolutions). A bounded spin wastes at most this much CPU per call
 * where no job follows. 200 us rather than less: small models leave gaps
 * of serial nodes longer than 50 us between parallel calls. */
enum { KG_SPIN_NS = 200000 };

/* Threads running kernels beside the pool's caller (a comparison's second
 * job thread, mpx_k_concurrent): while there are any, nothing spins, since
 * a spinning worker would take a core from the other caller's own
 * threads. */
static atomic_int kg_concurrent;

void mpx_k_concurrent(bool enter) { atomic_fetch_add(&kg_concurrent, enter ? 1 : -1); }

/* Of those threads, the ones inside a job right now (mpx_k_busy). While two
 * or more are, every parallel call runs on its caller's thread alone: the
 * two job threads already keep both cores busy, and a worker of the pool
 * would be a third thread on two cores, taken off one of them by the
 * scheduler in the middle of a call the other waits on. While one is (the
 * other job thread waits for a job's inputs), its calls take the pool.
 * With the pool taken by whichever job thread called first, the other
 * running beside it, a report (reference, fp16 and bf16 candidates, every
 * layer's metrics) ran three threads on two cores. Zen 5, two vCPUs,
 * interleaved processes' medians, report before -> after: ResNet-18 58.2
 * -> 56.2 ms, MobileNetV3-Small 12.7 -> 10.8, EfficientNet-B0 51.9 -> 48.1,
 * PP-OCRv4 det (640 x 640) 251 -> 233, rec 77.1 -> 72.7, UNet 293 -> 279,
 * ViT-B/16, BERT-style, the GRU and the LSTM the same; a REPL run
 * (reference and fp16 candidate): det 161 -> 149, MobileNetV3-Small 7.7
 * -> 6.8, the quantised BERT-style 29.8 -> 27.7. */
static atomic_int kg_busy;

void mpx_k_busy(bool enter) { atomic_fetch_add(&kg_busy, enter ? 1 : -1); }

bool kg_alone_now(void) { return atomic_load(&kg_busy) > 1; }

static uint64_t kg_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Spin until ready(arg), for at most KG_SPIN_NS and only while no other
 * thread runs kernels; true when it happened (false: the caller sleeps on
 * the condition variable). */
static bool kg_spin(bool (*ready)(const void *), const void *arg) {
    const uint64_t end = kg_now_ns() + KG_SPIN_NS;
    for (int i = 0;; i++) {
        if (ready(arg)) return true;
        if ((i & 255) == 255 && (kg_now_ns() > end || atomic_load(&kg_concurrent) > 0)) return false;
#if KG_HAVE_X86
        __builtin_ia32_pause();
#endif
    }
}

static bool kg_new_job(const void *seen) {
    return atomic_load_explicit(&kg_pool.gen, memory_order_acquire) != *(const unsigned long *)seen;
}

static bool kg_job_done(const void *unused) {
    (void)unused;
    return atomic_load(&kg_pool.active) == 0;
}

static void *kg_pool_main(void *arg) {
    kg_worker *w = arg;
    unsigned long seen = 0;
    for (;;) {
        (void)kg_spin(kg_new_job, &seen);
        /* job, job_nt and gen read together under the lock the caller
         * writes them under (a worker outside a job may see a later one's) */
        pthread_mutex_lock(&kg_pool.m);
        while (atomic_load(&kg_pool.gen) == seen) pthread_cond_wait(&kg_pool.go, &kg_pool.m);
        seen = atomic_load(&kg_pool.gen);
        kg_par *p = kg_pool.job;
        bool mine = w->tid < kg_pool.job_nt;
        pthread_mutex_unlock(&kg_pool.m);
        if (!mine) continue;
        atomic_fetch_add(&kg_pool.active, 1);
        /* (closed only grows: a later job's closing closes this one too) */
        if (atomic_load(&kg_pool.closed) < seen) kg_par_loop_shared(p, w->tid);
        if (atomic_fetch_sub(&kg_pool.active, 1) == 1) {
            pthread_mutex_lock(&kg_pool.m); /* (the caller may be about to sleep) */
            pthread_cond_signal(&kg_pool.done);
            pthread_mutex_unlock(&kg_pool.m);
        }
    }
    return NULL;
}

/* A child of fork() has none of the parent's workers (nor its jobs): it
 * starts its own when it needs them, with locks made anew (the child runs
 * on one thread; a lock a parent thread held would never be released). */
static void kg_pool_forget(void) {
    kg_pool.hold = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    kg_pool.m = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    kg_pool.go = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
    kg_pool.done = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
    kg_pool.job = NULL;
    kg_pool.job_nt = 0;
    atomic_store(&kg_pool.active, 0);
    atomic_store(&kg_pool.closed, atomic_load(&kg_pool.gen));
    kg_pool.started = 0;
    atomic_store(&kg_concurrent, 0);
    atomic_store(&kg_busy, 0);
}

static void kg_pool_at_fork(void) { (void)pthread_atfork(NULL, NULL, kg_pool_forget); }

/* Starts workers until the pool has nt - 1 (under kg_pool.m). */
static void kg_pool_grow(int nt) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, kg_pool_at_fork);
    if (nt > KG_POOL_MAX + 1) nt = KG_POOL_MAX + 1;
    while (kg_pool.started < nt - 1) {
        kg_worker *w = &kg_pool.w[kg_pool.started];
        w->tid = kg_pool.started + 1;
        if (pthread_create(&w->th, NULL, kg_pool_main, w) != 0) break;
        pthread_detach(w->th);
        kg_pool.started++;
    }
}

void mpx_k_start_threads(void) {
    pthread_mutex_lock(&kg_pool.m);
    kg_pool_grow(kg_threads());
    pthread_mutex_unlock(&kg_pool.m);
}

/* Runs p on the pool with nt threads (the caller is thread 0); false when
 * another caller holds the pool or its threads cannot be started. */
static bool kg_pool_run(kg_par *p, int nt) {
    if (pthread_mutex_trylock(&kg_pool.hold) != 0) return false;
    pthread_mutex_lock(&kg_pool.m);
    kg_pool_grow(nt);
    if (kg_pool.started < nt - 1) {
        pthread_mutex_unlock(&kg_pool.m);
        pthread_mutex_unlock(&kg_pool.hold);
        return false;
    }
    kg_pool.job = p;
    kg_pool.job_nt = nt;
    const unsigned long g = atomic_fetch_add_explicit(&kg_pool.gen, 1, memory_order_release) + 1;
    pthread_cond_broadcast(&kg_pool.go);
    pthread_mutex_unlock(&kg_pool.m);
    kg_par_loop_shared(p, 0);
    atomic_store(&kg_pool.closed, g);
    if (!kg_spin(kg_job_done, NULL)) {
        pthread_mutex_lock(&kg_pool.m);
        while (atomic_load(&kg_pool.active) > 0) pthread_cond_wait(&kg_pool.done, &kg_pool.m);
        pthread_mutex_unlock(&kg_pool.m);
    }
    kg_pool.job = NULL;
    pthread_mutex_unlock(&kg_pool.hold);
    return true;
}

/* p's items on up to nt threads (the caller's among them). */
static void kg_parallel_slice(kg_par *p, int nt) {
    const long n = p->n;
    if (nt > n) nt = (int)n;
    if (nt > KG_POOL_MAX + 1) nt = KG_POOL_MAX + 1;
    const bool alone = nt < 2 || kg_in_job || kg_alone_now();
    p->nt = alone ? 1 : nt;
    kg_ranges_init(p);
    if (alone) {
        kg_par_loop(p, 0);
        return;
    }
    if (kg_pool_run(p, nt)) return;
    if (atomic_load(&kg_concurrent) > 0) {
        kg_par_loop(p, 0);
        return;
    }
    kg_worker w[KG_POOL_MAX];
    int started = 0;
    for (int t = 1; t < nt; t++) {
        w[started].p = p;
        w[started].tid = t;
        if (pthread_create(&w[started].th, NULL, kg_par_main, &w[started]) != 0) break;
        started++;
    }
    kg_par_loop_shared(p, 0);
    for (int t = 0; t < started; t++) pthread_join(w[t].th, NULL);
}

/* The home ranges pack item numbers in 32 bits: a job of more items
 * (none so far: items are rows, tiles or channels) runs in slices. */
static void kg_parallel(kg_par *p, int nt) {
    const long n = p->n, slice = 0x7fffffffL;
    for (long b = 0; b < n && !atomic_load(&p->stopped); b += slice) {
        p->base = b;
        p->n = n - b < slice ? n - b : slice;
        kg_parallel_slice(p, nt);
    }
    p->n = n;
}

/* fn(ctx, tid, item) for every item < n, on up to nt threads (tid < nt).
 * Shared with the elementwise kernels as mpx_k_parallel (kern_internal.h). */
void mpx_k_parallel(long n, int nt, void (*fn)(void *, int, long), void *ctx) {
    kg_par p = {.n = n, .fn = fn, .ctx = ctx, .scope = kg_scope};
    atomic_init(&p.stopped, false);
    kg_parallel(&p, nt);
}

bool mpx_k_parallel_stoppable(long n, int nt, void (*fn)(void *, int, long), void *ctx) {
    kg_par p = {.n = n, .fn = fn, .ctx = ctx, .stoppable = true, .scope = kg_scope};
    atomic_init(&p.stopped, false);
    kg_parallel(&p, nt);
    return !atomic_load(&p.stopped);
}
