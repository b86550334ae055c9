/* compare_internal.h - what the comparison's files share (numerics/ only):
 * compare.c streams the reference and candidates node by node,
 * compare_jobs.c runs the stream's jobs (each node's steps and metrics) on
 * the calling thread and a worker as their inputs become ready,
 * compare_cache.c keeps values between runs for incremental comparisons,
 * compare_incremental.c runs from them (their shared state:
 * compare_cache_internal.h).
 * A stream owns its jobs and worker for one mpx_compare_run call; the cache is
 * owned by the caller (mpx_compare_cache_new). */
#ifndef MPX_COMPARE_INTERNAL_H
#define MPX_COMPARE_INTERNAL_H

#include "kern_internal.h"
#include "run_internal.h"

#include <pthread.h>
#include <stdatomic.h>

/* A job: one node's reference step, a candidate's step, a candidate's
 * local step, or the node's metrics (every candidate's, against the
 * reference). A job writes only its own outputs and results and reads
 * values that the jobs it waits for have stored, so running jobs on two
 * threads, in whatever order their inputs allow, changes no result. */
typedef enum job_kind { JOB_REF, JOB_CAND, JOB_LOCAL, JOB_METRICS } job_kind;
typedef enum job_state { JOB_WAITING, JOB_RUNNING, JOB_DONE } job_state;

typedef struct job {
    job_kind kind;
    job_state state;
    int q;           /* the candidate (JOB_CAND, JOB_LOCAL) */
    int pos;         /* the node's position in the run */
    mpx_value *outs; /* [max_out]: a step's outputs until they are stored */
    size_t scratch;  /* a step's input copies, bytes */
    size_t est;      /* the output bytes expected of a step started ahead (compare.c) */
    int inplace;     /* a step writing its output over this input's buffer (compare.c), -1: none */
    bool grow;       /* inplace: a Concat growing its input 0's buffer into its output */
    bool map_out;    /* output 0 made in a mapping of its own (a Concat may grow it) */
    int thread;      /* 0 the caller, 1 the worker */
    long started;    /* jobs finished before it started (compare.c) */
    mpx_status st;
    double ms;
    mpx_error err;
} job;

/* Jobs run as they become ready, on the calling thread and one worker
 * (compare_jobs.c). The owner's functions are called under mu, except run
 * (the job's work) and tick (the calling thread's, between its jobs: where
 * progress callbacks go). */
typedef struct sched {
    void *ctx;
    job *(*pick)(void *ctx);          /* a ready job, marked running, or NULL */
    bool (*over)(void *ctx);          /* nothing left to run or to wait for */
    void (*run)(void *ctx, job *j);
    void (*done)(void *ctx, job *j);  /* j has run */
    void (*tick)(void *ctx);
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_long finished;             /* bumped by every job done and every wake: what a waiting thread watches */
    bool two;                         /* run on two job threads: each job counted busy (mpx_k_busy) */
} sched;

double mpx_cmp_now_ms(void);
/* Runs s's jobs until over, on two threads when two_threads (and a worker
 * can start), else on the calling thread alone; false when no lock could
 * be made (nothing ran). */
bool mpx_cmp_sched_run(sched *s, bool two_threads);
/* A thread that changed what over or pick answer outside done (tick:
 * cancelled) wakes a waiting one: called under mu. */
void mpx_cmp_sched_wake(sched *s);

/* compare.c */
static inline bool mpx_cmp_is_low(const mpx_format *f) { return f && f->kind != MPX_FMT_FP32; }
void *mpx_cmp_alloc_n(int n, size_t size);   /* calloc of at least one element */
mpx_value *mpx_cmp_alloc_values(int n);      /* n absent values */
size_t mpx_cmp_outs_bytes(const mpx_value *outs, int n);
/* Node n's candidate step under a computes what its reference step does
 * on the same inputs: fp32 compute and accumulation, no output or tensor
 * format, no body (so, on the reference's inputs, the reference's bits). */
bool mpx_cmp_rounds_nothing(const mpx_assign *a, const mpx_node *n);

/* compare_cache.c, compare_incremental.c */
/* Whether the run takes tensor t's metrics (opts->measure), and a layer
 * marked as left out. */
bool mpx_cmp_measured(const mpx_compare_opts *opts, int t);
void mpx_cmp_set_unmeasured(mpx_layer *L);
/* A tensor whose values outlive the run (opts->keep or a model output). */
bool mpx_cmp_kept(const mpx_graph *g, const mpx_compare_opts *opts, int t);
/* Move r and c (tensor t's reference and candidate values) into the cache
 * where it takes them (within budget); what it does not take stays. */
void mpx_cmp_cache_put(struct mpx_compare_cache *k, int t, mpx_value *r, mpx_value *c);
/* Tensor t's values are not given to the cache by a full run (cheap to
 * make again: compare_cache.c, cache_plan_lean). */
bool mpx_cmp_cache_lean(const mpx_compare_cache *k, int t);
/* The cache describes a complete run of g on these input values. */
bool mpx_cmp_cache_fits(const mpx_compare_cache *k, const mpx_graph *g, const mpx_value *inputs);
/* Empty the cache and make it ready to take a full run of g on inputs. */
mpx_status mpx_cmp_cache_start(mpx_compare_cache *k, const mpx_graph *g, const mpx_value *inputs,
                               mpx_error *err);
/* After a full run c under a succeeded: record a, c's layers and kept values. */
void mpx_cmp_cache_finish(mpx_compare_cache *k, const mpx_assign *a, const mpx_compare *c);
/* The run from the cache k (which fits g and the inputs). MPX_OK with *out
 * NULL: a value it needs is not cached, run in full. */
mpx_status mpx_cmp_run_incremental(mpx_compare_cache *k, const mpx_graph *g, const mpx_assign *a,
                                   const mpx_value *inputs, const mpx_compare_opts *opts,
                                   mpx_compare **out, mpx_error *err);

#endif
