/* compare_internal.h - what the comparison's files share (numerics/ only):
 * compare.c streams the reference and candidates node by node,
 * compare_jobs.c shares each node's steps and metrics with a worker thread,
 * compare_cache.c keeps values between runs for incremental comparisons.
 * A stream owns its jobs and pool for one mpx_compare_run call; the cache is
 * owned by the caller (mpx_compare_cache_new). */
#ifndef MPX_COMPARE_INTERNAL_H
#define MPX_COMPARE_INTERNAL_H

#include "kern_internal.h"

#include <pthread.h>
#include <stdatomic.h>

/* A node's reference, candidate and local steps read disjoint inputs (or
 * only read shared ones) and write their own outputs, and so do the metrics
 * of its outputs: each is a job that writes only its own slots, so running
 * them on two threads changes no result. */
typedef enum job_kind { JOB_REF, JOB_CAND, JOB_LOCAL, JOB_METRICS, JOB_METRICS_LOCAL } job_kind;

typedef struct job {
    job_kind kind;
    const mpx_node *n;
    /* a step */
    const mpx_assign *a;
    const mpx_value *vals;
    mpx_value *outs;
    const mpx_body_probe *probe; /* a candidate step of a node with a body */
    size_t scratch;
    /* metrics */
    const mpx_tensor *t;
    const mpx_value *r, *c;
    const mpx_format *fmt;
    mpx_metrics *m;
    int cand;                 /* whose metrics (the candidate's index) */
    /* results */
    mpx_status st;
    double ms;
    mpx_error err;
} job;

/* One worker beside the calling thread; both take jobs from one batch. */
typedef struct pool {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    job *jobs;
    int n, next;
    atomic_int finished;  /* written under mu; read without it by a spinning caller */
    atomic_int unclaimed; /* jobs of the batch not yet taken: what a spinning worker reads */
    bool quit, running;
} pool;

double mpx_cmp_now_ms(void);
/* Start the worker; without one (none could start) everything runs on the
 * calling thread, in order. */
void mpx_cmp_pool_start(pool *p);
void mpx_cmp_pool_stop(pool *p);
/* Run n jobs, shared with the worker; returns when all are done. */
void mpx_cmp_run_jobs(pool *p, job *jobs, int n);

/* compare.c */
static inline bool mpx_cmp_is_low(const mpx_format *f) { return f && f->kind != MPX_FMT_FP32; }
void *mpx_cmp_alloc_n(int n, size_t size);   /* calloc of at least one element */
mpx_value *mpx_cmp_alloc_values(int n);      /* n absent values */
size_t mpx_cmp_outs_bytes(const mpx_value *outs, int n);

/* compare_cache.c */
/* Whether the run takes tensor t's metrics (opts->measure), and a layer
 * marked as left out. */
bool mpx_cmp_measured(const mpx_compare_opts *opts, int t);
void mpx_cmp_set_unmeasured(mpx_layer *L);
/* A tensor whose values outlive the run (opts->keep or a model output). */
bool mpx_cmp_kept(const mpx_graph *g, const mpx_compare_opts *opts, int t);
/* Move r and c (tensor t's reference and candidate values) into the cache
 * where it takes them (within budget); what it does not take stays. */
void mpx_cmp_cache_put(struct mpx_compare_cache *k, int t, mpx_value *r, mpx_value *c);
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
