/* kern_loop.c - Loop, Scan and SequenceMap: the body (mpx_node.body, a
 * graph of its own, graph/onnx_load.c) run once per iteration with
 * mpx_run_graph (SequenceMap: once per item of its sequences).
 *
 * Body inputs: Loop's are (iteration number, condition, carried values...),
 * Scan's (state..., one slice of each scan input...), then the tensors of
 * the enclosing graphs the body reads (the node's inputs after its own).
 * Outputs: Loop's (condition, carried values..., scan outputs...), Scan's
 * (state..., slices of the scan outputs...); the scan outputs of every
 * iteration are stacked.
 *
 * Precision: the node is one node of the plan. Under a low plan its body
 * runs with every node in the node's compute format (mpx_assign_uniform with
 * its accumulation format), so a carried value leaves each iteration in
 * that format and enters the next one in it: one format across iterations,
 * as a runtime running the loop in half precision holds its state. Loop and
 * Scan are red by default for that reason (the state accumulates rounding),
 * as the recurrent ops are.
 *
 * A body's shapes are bound to each iteration's values and inferred again
 * when they change; the body graph is shared, so a recursive lock makes one
 * thread at a time run bodies (a comparison's reference and candidate run
 * their loops one after the other; a Loop inside a body takes the lock it
 * already holds). Bounds: 2^20 iterations, scan outputs of 2^31 values;
 * past them the node is refused by name.
 *
 * Figures inside the body: in a comparison's candidate step the node gets a
 * probe (mpx_kctx.probe) with the reference's values of its inputs, and
 * runs the reference's loop beside its own (the twin: fp32, its own carried
 * state, as the reference run has it), one iteration of each in turn. Both
 * body runs keep every value of the iteration; each float value a body node
 * computed is compared (body_figures.c keeps the worst iteration and the
 * mean) and, for local figures, a third run feeds every body node the
 * reference's values of that iteration. The candidate's values are the same
 * bits with or without the twin. Scan-8 (a batch of scans) takes no
 * figures. */
#include "kern_nn.h"
#include "run_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_ITERS = 1 << 20 };

static pthread_mutex_t lock;
static pthread_once_t lock_once = PTHREAD_ONCE_INIT;

static void lock_init(void) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&lock, &a);
    pthread_mutexattr_destroy(&a);
}

/* n absent values (NULL on out of memory). */
static mpx_value *absent_values(int n) {
    mpx_value *v = calloc((size_t)(n > 0 ? n : 1), sizeof *v);
    for (int i = 0; v && i < n; i++) v[i].n = -1;
    return v;
}

/* What running a body needs across iterations. */
typedef struct body_run {
    const mpx_kctx *c;
    mpx_graph *b;
    mpx_assign *a; /* the node's low format for every body node; NULL: fp32 */
    bool bound;
    int64_t iter;
    /* With c->probe: the reference's loop runs beside the candidate's (the
     * twin), each carrying its own state, while the two stay in step (the
     * same trip count and shapes); each iteration's body values are
     * compared there (figures). */
    bool twin;
    double t0; /* when the first iteration started (ms; 0: not yet), for the loop budget */
} body_run;

/* The loop budget (mpx_set_loop_budget), in ms; 0: none. */
static _Atomic long long budget_ms = (long long)MPX_LOOP_SECONDS * 1000;

void mpx_set_loop_budget(double seconds) {
    atomic_store(&budget_ms, seconds > 0 ? (long long)(seconds * 1000.0 + 0.5) : 0);
}

double mpx_loop_budget(void) { return (double)atomic_load(&budget_ms) / 1000.0; }

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Bind the body's inputs to these values' shapes and infer again when they
 * changed (the low plan of the body follows its shapes). */
static mpx_status bind(body_run *r, const mpx_value *ins) {
    const mpx_kctx *c = r->c;
    mpx_graph *b = r->b;
    mpx_error e = {0};
    bool changed = !r->bound;
    for (int i = 0; i < b->n_inputs; i++) {
        if (ins[i].is_seq) { /* a container: no shape to bind; the body learns its kind */
            b->inputs[i]->flags |= MPX_T_SEQUENCE | (ins[i].is_opt ? MPX_T_OPTIONAL : 0u) |
                                   (ins[i].is_opt && ins[i].n > 0 && ins[i].seq[0].is_seq ? MPX_T_INNER_SEQ : 0u);
            if (b->inputs[i]->dtype == MPX_DT_UNDEFINED) b->inputs[i]->dtype = ins[i].dtype;
            continue;
        }
        if (mpx_k_same_shape(&ins[i], b->inputs[i]) && r->bound) continue;
        if (b->inputs[i]->dtype == MPX_DT_UNDEFINED) b->inputs[i]->dtype = ins[i].dtype;
        if (mpx_graph_bind_input(b, b->inputs[i]->name, ins[i].rank, ins[i].dims, &e) != MPX_OK)
            return mpx_kernel_error(c, e.status, "iteration %lld: %s", (long long)r->iter, e.msg);
        changed = true;
    }
    if (changed) {
        if (mpx_graph_infer(b, &e) != MPX_OK)
            return mpx_kernel_error(c, e.status, "iteration %lld: %s", (long long)r->iter, e.msg);
        if (c->round) {
            mpx_assign_free(r->a);
            r->a = mpx_assign_uniform(b, c->round, c->acc.fmt, false);
            if (!r->a) return mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
        }
        r->bound = true;
    }
    return MPX_OK;
}

/* Copies of a body run's outputs into outs[b->n_outputs] (all or none). */
static mpx_status take_outputs(body_run *r, const mpx_run *run, mpx_value *outs) {
    const mpx_graph *b = r->b;
    mpx_error e = {0};
    mpx_status st = MPX_OK;
    for (int k = 0; k < b->n_outputs && !st; k++) {
        const mpx_value *v = &run->vals[b->outputs[k]->index];
        if (v->n < 0) st = mpx_kernel_error(r->c, MPX_E_INVALID, "iteration %lld: the body computed no value for its "
                                            "output \"%s\"", (long long)r->iter, b->outputs[k]->name);
        else if (mpx_value_copy(&outs[k], v, &e) != MPX_OK) st = mpx_kernel_error(r->c, e.status, "%s", e.msg);
    }
    if (st)
        for (int k = 0; k < b->n_outputs; k++) mpx_value_free(&outs[k]);
    return st;
}

static mpx_status run_body(body_run *r, const mpx_assign *a, const mpx_value *ins, const mpx_run_opts *o,
                           mpx_run **run) {
    mpx_error e = {0};
    if (mpx_run_graph(r->b, a, ins, o, run, &e) != MPX_OK)
        return mpx_kernel_error(r->c, e.status, "iteration %lld: %s", (long long)r->iter, e.msg);
    return MPX_OK;
}

/* Ctrl-C and the loop budget between two iterations: the 2^20 cap bounds
 * how many there are, not how long they take. The budget's clock starts at
 * the first iteration, not when the node waited for the body lock. */
static mpx_status check_cancel(body_run *r) {
    if (mpx_cancel_requested())
        return mpx_kernel_error(r->c, MPX_E_CANCELLED, "cancelled at iteration %lld", (long long)r->iter);
    const long long budget = atomic_load(&budget_ms);
    const double now = budget > 0 ? now_ms() : 0;
    if (r->t0 == 0) r->t0 = now;
    if (budget > 0 && r->iter > 0 && now - r->t0 >= (double)budget)
        return mpx_kernel_error(r->c, MPX_E_LIMIT,
                                "stopped by the loop budget of %g s after %lld iterations (set loops <seconds>; "
                                "0: no limit)",
                                (double)budget / 1000.0, (long long)r->iter);
    return MPX_OK;
}

/* One iteration: ins[b->n_inputs] in, outs[b->n_outputs] out (owned). */
static mpx_status run_once(body_run *r, const mpx_value *ins, mpx_value *outs) {
    mpx_status cs = check_cancel(r);
    if (cs) return cs;
    mpx_run *run = NULL;
    mpx_run_opts o = {.stream = true};
    mpx_status st = bind(r, ins);
    if (!st) st = run_body(r, r->a, ins, &o, &run);
    if (!st) st = take_outputs(r, run, outs);
    mpx_run_free(run);
    r->iter++;
    return st;
}

/* Float values on both sides, or float64 ones (held as doubles, also where
 * a plan holds them low): the pairs mpx_metrics_compute takes. */
static bool comparable(const mpx_value *x, const mpx_value *y) {
    return x->n >= 0 && y->n >= 0 && ((x->f && y->f) || (x->d && y->d)) && !x->is_seq && !y->is_seq &&
           mpx_k_same_dims(x, y);
}

/* The figures of one iteration: every float value a body node computed in
 * the candidate's run (and the local run) against the reference's. */
static mpx_status figures(body_run *r, const mpx_run *rr, const mpx_run *cr, const mpx_run *lr, int64_t idx) {
    const mpx_body_probe *p = r->c->probe;
    const mpx_graph *b = r->b;
    for (int i = 0; i < b->n_nodes; i++) {
        const mpx_node *n = b->nodes[i];
        if (mpx_exec_skipped(n)) continue;
        for (int j = 0; j < n->n_outputs; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (!t) continue;
            const mpx_value *rv = &rr->vals[t->index];
            const mpx_format *fmt = r->a ? r->a->tensor[t->index] : NULL;
            for (int side = 0; side < (lr ? 2 : 1); side++) {
                const mpx_value *cv = side ? &lr->vals[t->index] : &cr->vals[t->index];
                if (!comparable(rv, cv)) continue;
                mpx_metrics m;
                mpx_error e = {0};
                if (mpx_metrics_compute(rv, cv, fmt, &m, &e) != MPX_OK)
                    return mpx_kernel_error(r->c, e.status, "iteration %lld: body value \"%s\": %s",
                                            (long long)r->iter, t->name, e.msg);
                if (!mpx_body_add(p->sink, p->top, n, t, fmt, &m, side == 1, idx))
                    return mpx_kernel_error(r->c, MPX_E_NOMEM, "out of memory");
            }
        }
    }
    return MPX_OK;
}

/* One iteration of both loops: the candidate's (ins, outs) and the
 * reference twin's (rins, routs), every value of both body runs kept until
 * they are compared. The candidate's body gets a probe of its own, so a
 * Loop inside it compares its body against the reference run's the same
 * way. When the two sides' inputs differ in shape the twin stops
 * (r->twin false, routs left absent) and the candidate runs on its own. */
static mpx_status run_pair(body_run *r, const mpx_value *ins, mpx_value *outs, const mpx_value *rins,
                           mpx_value *routs) {
    const mpx_body_probe *p = r->c->probe;
    const mpx_graph *b = r->b;
    for (int i = 0; i < b->n_inputs && r->twin; i++)
        r->twin = ins[i].is_seq == rins[i].is_seq && (ins[i].is_seq || mpx_k_same_dims(&ins[i], &rins[i]));
    if (!r->twin) return run_once(r, ins, outs);
    mpx_status st = check_cancel(r);
    if (st) return st;
    int64_t idx = mpx_body_next_run(p->sink, b);
    mpx_run *rr = NULL, *cr = NULL, *lr = NULL;
    mpx_run_opts ro = {0};
    st = bind(r, rins);
    if (!st) st = run_body(r, NULL, rins, &ro, &rr);
    mpx_body_probe child = {.ref_vals = rr ? rr->vals : NULL, .sink = p->sink, .top = p->top, .local = p->local};
    mpx_run_opts co = {.probe = &child}, lo = {.local_ref = rr};
    if (!st) st = run_body(r, r->a, ins, &co, &cr);
    if (!st && p->local) st = run_body(r, r->a, rins, &lo, &lr);
    if (!st) st = figures(r, rr, cr, lr, idx);
    if (!st) st = take_outputs(r, cr, outs);
    if (!st && (st = take_outputs(r, rr, routs))) mpx_k_free_values(outs, b->n_outputs);
    mpx_run_free(rr);
    mpx_run_free(cr);
    mpx_run_free(lr);
    r->iter++;
    return st;
}

/* The reference's values of the node's inputs (NULL for an omitted one), for
 * the twin; NULL when the reference has no value of one the node reads (an
 * If around it took the other branch there): no twin then. */
static const mpx_value **twin_inputs(const mpx_kctx *c, const mpx_value *const *in, int n_in) {
    if (!c->probe || !c->probe->ref_vals) return NULL;
    const mpx_value **rin = calloc((size_t)(n_in ? n_in : 1), sizeof *rin);
    for (int j = 0; rin && j < n_in; j++) {
        const mpx_tensor *t = c->node->inputs[j];
        if (!in[j] || !t) continue;
        rin[j] = &c->probe->ref_vals[t->index];
        if (rin[j]->n < 0) {
            free(rin);
            return NULL;
        }
    }
    return rin;
}

/* A growing list of one scan output's per-iteration values. */
typedef struct stack {
    mpx_value *v;
    int64_t n, cap, elems;
} stack;

static mpx_status push(const mpx_kctx *c, stack *s, mpx_value *v, int k) {
    if (s->n && (!mpx_k_same_dims(&s->v[0], v) || s->v[0].dtype != v->dtype))
        return mpx_kernel_error(c, MPX_E_SHAPE, "scan output %d changes shape between iterations", k);
    if (s->elems + v->n > MPX_MAX_ELEMS)
        return mpx_kernel_error(c, MPX_E_LIMIT, "scan output %d would hold over 2^31 values", k);
    if (s->n == s->cap) {
        int64_t cap = s->cap ? 2 * s->cap : 16;
        mpx_value *nv = realloc(s->v, (size_t)cap * sizeof *nv);
        if (!nv) return mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
        s->v = nv, s->cap = cap;
    }
    s->v[s->n++] = *v;
    s->elems += v->n;
    mpx_value_clear(v);
    return MPX_OK;
}

static void stack_free(stack *s) {
    for (int64_t i = 0; i < s->n; i++) mpx_value_free(&s->v[i]);
    free(s->v);
}

/* The values of s stacked along axis ax (reverse: last first); empty: a
 * leading 0 on the shape the body's output was inferred to have. */
static mpx_status stack_out(const mpx_kctx *c, stack *s, int64_t ax, bool reverse, const mpx_tensor *like,
                            mpx_value *out) {
    int64_t d[MPX_MAX_RANK];
    if (!s->n) {
        int r = like && like->rank >= 0 && like->rank < MPX_MAX_RANK ? like->rank : 0;
        d[0] = 0;
        for (int i = 0; i < r; i++) d[1 + i] = like->dims[i] < 0 ? 0 : like->dims[i];
        mpx_dtype dt = like && like->dtype != MPX_DT_UNDEFINED ? like->dtype : MPX_DT_FLOAT;
        return mpx_k_alloc(c, out, dt, r + 1, d);
    }
    const mpx_value *f = &s->v[0];
    if (f->rank + 1 > MPX_MAX_RANK) return mpx_kernel_error(c, MPX_E_LIMIT, "a scan output of rank %d", f->rank + 1);
    if (ax < 0) ax += f->rank + 1;
    if (ax < 0 || ax > f->rank) return mpx_kernel_error(c, MPX_E_INVALID, "scan output axis out of range");
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < f->rank; i++) {
        d[i + (i >= ax)] = f->dims[i];
        if (i < ax) outer *= f->dims[i];
        else inner *= f->dims[i];
    }
    d[ax] = s->n;
    mpx_status st = mpx_k_alloc(c, out, f->dtype, f->rank + 1, d);
    if (st) return st;
    for (int64_t t = 0; t < s->n; t++) {
        const mpx_value *v = &s->v[reverse ? s->n - 1 - t : t];
        for (int64_t o = 0; o < outer; o++) {
            int64_t at = (o * s->n + t) * inner;
            if (out->d) memcpy(out->d + at, v->d + o * inner, (size_t)inner * sizeof *out->d);
            else if (out->f) memcpy(out->f + at, v->f + o * inner, (size_t)inner * sizeof *out->f);
            else memcpy(out->i + at, v->i + o * inner, (size_t)inner * sizeof *out->i);
        }
    }
    return MPX_OK;
}

/* Body inputs from `first` on: views of the enclosing graphs' values, which
 * the node reads after its own inputs (the body only reads them). */
static mpx_status outer_views(const mpx_kctx *c, const mpx_value *const *in, int first, mpx_value *ins) {
    const mpx_graph *b = c->node->body;
    for (int i = first, j = c->node->n_explicit; i < b->n_inputs; i++, j++) {
        if (!in[j] || in[j]->n < 0)
            return mpx_kernel_error(c, MPX_E_INVALID, "outer value \"%s\" has no value", b->inputs[i]->name);
        ins[i] = *in[j];
        ins[i].borrowed = true;
    }
    return MPX_OK;
}

static mpx_status scalar(const mpx_kctx *c, mpx_value *v, mpx_dtype dt, int64_t x) {
    int64_t none[1] = {1};
    mpx_status st = mpx_k_alloc(c, v, dt, 0, none);
    if (!st) v->i[0] = x;
    return st;
}

static bool truth(const mpx_value *v) { return v->i ? v->i[0] != 0 : v->f && v->f[0] != 0.0f; }

/* Copies of the n carried values src[] (NULL or absent: refused, naming
 * `what` i) into dst[], the state an iteration starts from. */
static mpx_status copy_state(const mpx_kctx *c, const mpx_value *const *src, int n, mpx_value *dst,
                             const char *what) {
    mpx_error e;
    for (int i = 0; i < n; i++) {
        if (!src[i] || src[i]->n < 0) return mpx_kernel_error(c, MPX_E_INVALID, "%s %d has no value", what, i);
        if (mpx_value_copy(&dst[i], src[i], &e)) return mpx_kernel_error(c, e.status, "%s", e.msg);
    }
    return MPX_OK;
}

/* An iteration's n carried outputs become the next one's inputs. */
static void carry(mpx_value *ins, mpx_value *outs, int n) {
    for (int i = 0; i < n; i++) {
        mpx_value_free(&ins[i]);
        ins[i] = outs[i];
        mpx_value_clear(&outs[i]);
    }
}

/* A Loop's body inputs before the first iteration: copies of the carried
 * values (node inputs 2..), views of the outer values. */
static mpx_status loop_start(const mpx_kctx *c, const mpx_value *const *in, int nv, mpx_value *ins) {
    mpx_status st = copy_state(c, in + 2, nv, ins + 2, "loop-carried value");
    return st ? st : outer_views(c, in, 2 + nv, ins);
}

/* The trip count M (-1: none) and the condition's first value. */
static mpx_status loop_bounds(const mpx_kctx *c, const mpx_value *const *in, int n_in, int64_t *trips, bool *go) {
    const mpx_value *m = kn_opt(in, n_in, 0), *cv = kn_opt(in, n_in, 1);
    *trips = -1;
    if (m) {
        if (!m->i || m->n != 1) return mpx_kernel_error(c, MPX_E_INVALID, "the trip count M must be one integer");
        *trips = m->i[0];
        if (*trips < 0)
            return mpx_kernel_error(c, MPX_E_INVALID, "the trip count M = %lld is negative", (long long)*trips);
    }
    if (cv && cv->n != 1) return mpx_kernel_error(c, MPX_E_INVALID, "the condition must be one value");
    *go = !cv || truth(cv);
    return MPX_OK;
}

/* Iteration it's number and condition in, the carried values out of outs
 * into the next iteration's inputs. */
static mpx_status loop_enter(const mpx_kctx *c, mpx_value *ins, int64_t it, bool go) {
    mpx_value_free(&ins[0]), mpx_value_free(&ins[1]);
    mpx_status st = scalar(c, &ins[0], MPX_DT_INT64, it);
    return st ? st : scalar(c, &ins[1], MPX_DT_BOOL, go);
}

static void loop_carry(mpx_value *ins, mpx_value *outs, int nv) {
    mpx_value_free(&outs[0]);
    carry(ins + 2, outs + 1, nv);
}

static void free_ins(mpx_value *ins, int nb) {
    for (int i = 0; ins && i < nb; i++)
        if (!ins[i].borrowed) mpx_value_free(&ins[i]);
}

mpx_status mpx_k_loop(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    mpx_graph *b = c->node->body;
    int nv = c->node->n_explicit - 2;
    if (!b || nv < 0 || b->n_inputs != 2 + nv + (n_in - c->node->n_explicit) || b->n_outputs != 1 + n_out ||
        n_out < nv)
        return mpx_kernel_error(c, MPX_E_INVALID, "the body (%d inputs, %d outputs) does not fit the node",
                                b ? b->n_inputs : 0, b ? b->n_outputs : 0);
    int64_t trips, rtrips = -1;
    bool go, rgo = false;
    mpx_status st = loop_bounds(c, in, n_in, &trips, &go);
    if (st) return st;
    int nb = b->n_inputs, ns = n_out - nv;
    const mpx_value **rin = twin_inputs(c, in, n_in);
    mpx_value *ins = absent_values(nb), *outs = absent_values(b->n_outputs);
    mpx_value *rins = rin ? absent_values(nb) : NULL, *routs = rin ? absent_values(b->n_outputs) : NULL;
    stack *sc = calloc((size_t)(ns ? ns : 1), sizeof *sc);
    if (!ins || !outs || !sc || (rin && (!rins || !routs))) st = mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
    if (!st) st = loop_start(c, in, nv, ins);
    body_run r = {.c = c, .b = b};
    /* The twin starts when the reference's loop would take as many steps; one
     * that cannot start is no error of the node. */
    if (!st && rin) {
        mpx_status ts = loop_bounds(c, rin, n_in, &rtrips, &rgo);
        if (!ts && rtrips == trips && rgo == go) ts = loop_start(c, rin, nv, rins);
        r.twin = !ts && rtrips == trips && rgo == go;
        if (ts && c->err) mpx_error_clear(c->err);
    }
    pthread_once(&lock_once, lock_init);
    pthread_mutex_lock(&lock);
    for (int64_t it = 0; !st && go && (trips < 0 || it < trips); it++) {
        if (it >= MAX_ITERS) {
            st = mpx_kernel_error(c, MPX_E_LIMIT, "stopped after %d iterations (trip count %s%lld); mpx runs at most "
                                  "2^20", MAX_ITERS, trips < 0 ? "none, condition still true: " : "", (long long)trips);
            break;
        }
        if ((st = loop_enter(c, ins, it, go))) break;
        if (r.twin && (st = loop_enter(c, rins, it, rgo))) break;
        if ((st = r.twin ? run_pair(&r, ins, outs, rins, routs) : run_once(&r, ins, outs))) break;
        go = truth(&outs[0]);
        loop_carry(ins, outs, nv);
        for (int k = 0; k < ns && !st; k++) st = push(c, &sc[k], &outs[1 + nv + k], k);
        mpx_k_free_values(outs + 1 + nv, ns);
        if (r.twin) {
            rgo = truth(&routs[0]);
            loop_carry(rins, routs, nv);
            mpx_k_free_values(routs, b->n_outputs);
            r.twin = rgo == go;
        }
    }
    pthread_mutex_unlock(&lock);
    mpx_assign_free(r.a);
    for (int i = 0; i < nv && !st; i++) {
        out[i] = ins[2 + i];
        mpx_value_clear(&ins[2 + i]);
    }
    for (int k = 0; k < ns && !st; k++) st = stack_out(c, &sc[k], 0, false, b->outputs[1 + nv + k], &out[nv + k]);
    if (st) mpx_k_free_values(out, n_out);
    free_ins(ins, nb);
    free_ins(rins, nb);
    mpx_k_free_values(outs, outs ? b->n_outputs : 0);
    mpx_k_free_values(routs, routs ? b->n_outputs : 0);
    for (int k = 0; sc && k < ns; k++) stack_free(&sc[k]);
    free(ins), free(outs), free(rins), free(routs), free(sc), free(rin);
    return st;
}

/* Slice t of each scan input xv[i] along iax[i] (from the end with idir)
 * into ins[nst + i]. */
static mpx_status scan_slices(const mpx_kctx *c, const mpx_value *const *xv, int nst, int nsi, const int64_t *iax,
                              const int64_t *idir, const int64_t *outer, const int64_t *inner, int64_t len, int64_t t,
                              mpx_value *ins) {
    for (int i = 0; i < nsi; i++) {
        const mpx_value *x = xv[i];
        int64_t d[MPX_MAX_RANK], at = idir[i] ? len - 1 - t : t;
        for (int q = 0, w = 0; q < x->rank; q++)
            if (q != iax[i]) d[w++] = x->dims[q];
        mpx_value *sl = &ins[nst + i];
        mpx_value_free(sl);
        mpx_status st = mpx_k_alloc(c, sl, x->dtype, x->rank - 1, d);
        if (st) return st;
        for (int64_t o = 0; o < outer[i]; o++) {
            int64_t from = (o * len + at) * inner[i];
            if (x->d) memcpy(sl->d + o * inner[i], x->d + from, (size_t)inner[i] * sizeof *sl->d);
            else if (x->f) memcpy(sl->f + o * inner[i], x->f + from, (size_t)inner[i] * sizeof *sl->f);
            else memcpy(sl->i + o * inner[i], x->i + from, (size_t)inner[i] * sizeof *sl->i);
        }
    }
    return MPX_OK;
}

/* The body inputs of a Scan before its first iteration: copies of the
 * states, views of the outer values. */
static mpx_status scan_start(const mpx_kctx *c, const mpx_value *const *in, const mpx_value *const *sv, int nst,
                             int nsi, mpx_value *ins) {
    mpx_status st = copy_state(c, sv, nst, ins, "state");
    return st ? st : outer_views(c, in, nst + nsi, ins);
}

/* One Scan over states sv[nst] and scan inputs xv[nsi] (slices along
 * iax, in direction idir), outputs stacked along oax (prepended when odir):
 * Scan-9's meaning; Scan-8 runs it once per batch item. With rin (the
 * reference's node inputs; rsv, rxv its states and scan inputs) the
 * reference's scan runs beside as the twin. */
static mpx_status scan_core(const mpx_kctx *c, const mpx_value *const *in, const mpx_value *const *sv,
                            const mpx_value *const *xv, int nst, int nsi, int64_t *iax, const int64_t *idir,
                            const int64_t *oax, const int64_t *odir, mpx_value *out, int n_out,
                            const mpx_value *const *rin, const mpx_value *const *rsv, const mpx_value *const *rxv) {
    mpx_graph *b = c->node->body;
    int nso = n_out - nst;
    /* the scan inputs' slices: along axis, len of them (equal for all) */
    int64_t len = -1, outer[1024], inner[1024];
    for (int i = 0; i < nsi; i++) {
        const mpx_value *x = xv[i];
        if (!x || x->rank < 1) return mpx_kernel_error(c, MPX_E_INVALID, "scan input %d has no value of rank 1 or more", i);
        int64_t a = iax[i] < 0 ? iax[i] + x->rank : iax[i];
        if (a < 0 || a >= x->rank)
            return mpx_kernel_error(c, MPX_E_INVALID, "scan_input_axes[%d] = %lld is out of range for rank %d", i,
                                    (long long)iax[i], x->rank);
        if (len >= 0 && x->dims[a] != len)
            return mpx_kernel_error(c, MPX_E_SHAPE, "scan input %d has %lld slices along axis %lld, scan input 0 %lld",
                                    i, (long long)x->dims[a], (long long)a, (long long)len);
        len = x->dims[a];
        iax[i] = a, outer[i] = 1, inner[i] = 1;
        for (int d = 0; d < x->rank; d++) {
            if (d < a) outer[i] *= x->dims[d];
            if (d > a) inner[i] *= x->dims[d];
        }
    }
    if (len > MAX_ITERS) return mpx_kernel_error(c, MPX_E_LIMIT, "%lld iterations; mpx runs at most 2^20", (long long)len);
    /* The twin's scan inputs must be sliced the same way. */
    bool twin = rin != NULL;
    for (int i = 0; twin && i < nsi; i++) twin = rxv[i] && mpx_k_same_dims(rxv[i], xv[i]) && rxv[i]->dtype == xv[i]->dtype;
    for (int i = 0; twin && i < nst; i++) twin = rsv[i] != NULL;
    int nb = b->n_inputs;
    mpx_value *ins = absent_values(nb), *outs = absent_values(n_out);
    mpx_value *rins = twin ? absent_values(nb) : NULL, *routs = twin ? absent_values(n_out) : NULL;
    stack *sc = calloc((size_t)(nso ? nso : 1), sizeof *sc);
    mpx_status st = MPX_OK;
    if (!ins || !outs || !sc || (twin && (!rins || !routs))) st = mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
    if (!st) st = scan_start(c, in, sv, nst, nsi, ins);
    body_run r = {.c = c, .b = b};
    if (!st && twin) {
        r.twin = scan_start(c, rin, rsv, nst, nsi, rins) == MPX_OK;
        if (!r.twin && c->err) mpx_error_clear(c->err); /* no error of the node's */
    }
    pthread_once(&lock_once, lock_init);
    pthread_mutex_lock(&lock);
    for (int64_t t = 0; t < len && !st; t++) {
        if ((st = scan_slices(c, xv, nst, nsi, iax, idir, outer, inner, len, t, ins))) break;
        if (r.twin && (st = scan_slices(c, rxv, nst, nsi, iax, idir, outer, inner, len, t, rins))) break;
        if ((st = r.twin ? run_pair(&r, ins, outs, rins, routs) : run_once(&r, ins, outs))) break;
        carry(ins, outs, nst);
        for (int k = 0; k < nso && !st; k++) st = push(c, &sc[k], &outs[nst + k], k);
        mpx_k_free_values(outs + nst, nso);
        if (r.twin) {
            carry(rins, routs, nst);
            mpx_k_free_values(routs, n_out);
        }
    }
    pthread_mutex_unlock(&lock);
    mpx_assign_free(r.a);
    for (int i = 0; i < nst && !st; i++) {
        out[i] = ins[i];
        mpx_value_clear(&ins[i]);
    }
    for (int k = 0; k < nso && !st; k++)
        st = stack_out(c, &sc[k], oax[k], odir[k] != 0, b->outputs[nst + k], &out[nst + k]);
    if (st) mpx_k_free_values(out, n_out);
    free_ins(ins, nb);
    free_ins(rins, nb);
    mpx_k_free_values(outs, outs ? n_out : 0);
    mpx_k_free_values(routs, routs ? n_out : 0);
    for (int k = 0; sc && k < nso; k++) stack_free(&sc[k]);
    free(ins), free(outs), free(rins), free(routs), free(sc);
    return st;
}

mpx_status mpx_k_scan(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    mpx_graph *b = c->node->body;
    int64_t nsi = mpx_node_attr_int(c->node, "num_scan_inputs", -1);
    bool v8 = kn_opset(c) < 9; /* Scan-8: a leading batch dim and sequence_lens first */
    int ne = c->node->n_explicit, nst = ne - (int)nsi - (v8 ? 1 : 0), first = v8 ? 1 : 0;
    if (!b || nsi < 1 || nsi > 1024 || nst < 0 || b->n_inputs != ne - first + (n_in - ne) || b->n_outputs != n_out ||
        n_out < nst)
        return mpx_kernel_error(c, MPX_E_INVALID, "num_scan_inputs %lld and the body (%d inputs, %d outputs) do not "
                                "fit the node", (long long)nsi, b ? b->n_inputs : 0, b ? b->n_outputs : 0);
    int nso = n_out - nst;
    int64_t iax[1024], idir[1024], oax[1024], odir[1024];
    const int64_t *v;
    const char *names[4] = {"scan_input_axes", v8 ? "directions" : "scan_input_directions", "scan_output_axes",
                            "scan_output_directions"};
    int64_t *dst[4] = {iax, idir, oax, odir};
    int cnt[4] = {(int)nsi, (int)nsi, nso, nso};
    for (int q = 0; q < 4; q++) {
        int k = mpx_node_attr_ints(c->node, names[q], &v);
        if (v && k != cnt[q])
            return mpx_kernel_error(c, MPX_E_INVALID, "%s has %d values for %d scans", names[q], k, cnt[q]);
        for (int i = 0; i < cnt[q]; i++) dst[q][i] = v ? v[i] : 0;
    }
    const mpx_value *sv[1024], *xv[1024];
    for (int i = 0; i < nst; i++) sv[i] = kn_opt(in, n_in, first + i);
    for (int i = 0; i < nsi; i++) xv[i] = kn_opt(in, n_in, first + nst + i);
    if (!v8) {
        const mpx_value **rin = twin_inputs(c, in, n_in);
        const mpx_value *rsv[1024], *rxv[1024];
        for (int i = 0; rin && i < nst; i++) rsv[i] = kn_opt(rin, n_in, first + i);
        for (int i = 0; rin && i < nsi; i++) rxv[i] = kn_opt(rin, n_in, first + nst + i);
        mpx_status st = scan_core(c, in, sv, xv, nst, (int)nsi, iax, idir, oax, odir, out, n_out, rin, rsv, rxv);
        free(rin);
        return st;
    }
    /* Scan-8: the Scan of each batch item (its slice of every state and scan
     * input), the results stacked along a new leading batch dim;
     * sequence_lens, when given, must be the full length */
    const mpx_value *lens = kn_opt(in, n_in, 0);
    int64_t B = -1;
    for (int i = 0; i < nst + nsi; i++) {
        const mpx_value *x = i < nst ? sv[i] : xv[i - nst];
        if (!x || x->rank < (i < nst ? 1 : 2) || (B >= 0 && x->dims[0] != B))
            return mpx_kernel_error(c, MPX_E_SHAPE, "Scan-8 input %d must have the batch dim first (%lld)", first + i,
                                    (long long)B);
        B = x->dims[0];
    }
    if (lens && (!lens->i || lens->n != B))
        return mpx_kernel_error(c, MPX_E_SHAPE, "sequence_lens must hold one length per batch item (%lld)", (long long)B);
    for (int64_t q = 0; lens && q < B; q++)
        if (lens->i[q] != xv[0]->dims[1])
            return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "sequence_lens[%lld] = %lld: mpx runs full-length sequences "
                                    "only (%lld)", (long long)q, (long long)lens->i[q], (long long)xv[0]->dims[1]);
    for (int i = 0; i < nsi; i++) iax[i] = 0;
    for (int k = 0; k < nso; k++) oax[k] = 0, odir[k] = 0;
    mpx_value *slices = calloc((size_t)(nst + nsi), sizeof *slices), *ob = calloc((size_t)n_out, sizeof *ob);
    stack *st8 = calloc((size_t)n_out, sizeof *st8);
    mpx_status st = slices && ob && st8 ? MPX_OK : mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
    const mpx_value *sb[1024], *xb[1024];
    for (int64_t q = 0; q < B && !st; q++) {
        for (int i = 0; i < nst + nsi; i++) { /* views of batch item q */
            const mpx_value *x = i < nst ? sv[i] : xv[i - nst];
            mpx_value *sl = &slices[i];
            mpx_value_clear(sl);
            sl->dtype = x->dtype, sl->rank = x->rank - 1, sl->n = x->n / B, sl->borrowed = true;
            for (int d = 1; d < x->rank; d++) sl->dims[d - 1] = x->dims[d];
            if (x->d) sl->d = x->d + q * sl->n;
            else if (x->f) sl->f = x->f + q * sl->n;
            else sl->i = x->i + q * sl->n;
            if (i < nst) sb[i] = sl;
            else xb[i - nst] = sl;
        }
        for (int k = 0; k < n_out; k++) mpx_value_clear(&ob[k]);
        if ((st = scan_core(c, in, sb, xb, nst, (int)nsi, iax, idir, oax, odir, ob, n_out, NULL, NULL, NULL))) break;
        for (int k = 0; k < n_out && !st; k++) st = push(c, &st8[k], &ob[k], k);
        mpx_k_free_values(ob, n_out);
    }
    for (int k = 0; k < n_out && !st; k++) st = stack_out(c, &st8[k], 0, false, b->outputs[k], &out[k]);
    if (st) mpx_k_free_values(out, n_out);
    for (int k = 0; st8 && k < n_out; k++) stack_free(&st8[k]);
    free(slices), free(ob), free(st8);
    return st;
}

/* SequenceMap: the body once per item of the input sequence(s) (sequence
 * inputs give their i-th item, tensor inputs themselves), each body output
 * collected into an output sequence. */
mpx_status mpx_k_sequence_map(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    mpx_graph *b = c->node->body;
    int ne = c->node->n_explicit;
    if (!b || b->n_outputs != n_out || b->n_inputs != n_in || ne < 1)
        return mpx_kernel_error(c, MPX_E_INVALID, "the body (%d inputs, %d outputs) does not fit the node",
                                b ? b->n_inputs : 0, b ? b->n_outputs : 0);
    const mpx_value *s0 = kn_opt(in, n_in, 0);
    if (!s0 || !s0->is_seq) return mpx_kernel_error(c, MPX_E_INVALID, "input 0 must be a sequence");
    int64_t len = s0->n;
    for (int j = 1; j < ne; j++) {
        const mpx_value *v = kn_opt(in, n_in, j);
        if (!v) return mpx_kernel_error(c, MPX_E_INVALID, "input %d has no value", j);
        if (v->is_seq && v->n != len)
            return mpx_kernel_error(c, MPX_E_SHAPE, "sequence input %d has %lld items, input 0 %lld", j, (long long)v->n,
                                    (long long)len);
    }
    mpx_value *ins = calloc((size_t)n_in, sizeof *ins), *outs = calloc((size_t)n_out, sizeof *outs);
    if (!ins || !outs) {
        free(ins), free(outs);
        return mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
    }
    mpx_status st = MPX_OK;
    for (int k = 0; k < n_out; k++) {
        outs[k].n = -1;
        memset(&out[k], 0, sizeof out[k]);
        out[k].is_seq = true, out[k].rank = -1, out[k].n = 0, out[k].dtype = b->outputs[k]->dtype;
        if (len > 0 && !(out[k].seq = calloc((size_t)len, sizeof *out[k].seq))) st = mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
    }
    /* The twin: the reference's sequences, as long as the candidate's. */
    const mpx_value **rin = twin_inputs(c, in, n_in);
    mpx_value *rins = rin ? absent_values(n_in) : NULL, *routs = rin ? absent_values(n_out) : NULL;
    body_run r = {.c = c, .b = b, .twin = rins && routs};
    for (int j = 0; r.twin && j < n_in; j++)
        r.twin = rin[j] && rin[j]->is_seq == in[j]->is_seq && (!in[j]->is_seq || rin[j]->n == in[j]->n);
    pthread_once(&lock_once, lock_init);
    pthread_mutex_lock(&lock);
    for (int64_t it = 0; it < len && !st; it++) {
        for (int j = 0; j < n_in; j++) {
            const mpx_value *v = in[j];
            ins[j] = j < ne && v->is_seq ? v->seq[it] : *v;
            ins[j].borrowed = true;
            if (!r.twin) continue;
            v = rin[j];
            rins[j] = j < ne && v->is_seq ? v->seq[it] : *v;
            rins[j].borrowed = true;
        }
        if ((st = r.twin ? run_pair(&r, ins, outs, rins, routs) : run_once(&r, ins, outs))) break;
        mpx_k_free_values(routs, routs ? n_out : 0);
        for (int k = 0; k < n_out; k++) {
            out[k].seq[it] = outs[k];
            out[k].n = it + 1;
            if (out[k].dtype == MPX_DT_UNDEFINED) out[k].dtype = outs[k].dtype;
            mpx_value_clear(&outs[k]);
        }
    }
    pthread_mutex_unlock(&lock);
    mpx_assign_free(r.a);
    if (st) mpx_k_free_values(out, n_out);
    free(ins), free(outs), free(rins), free(routs), free(rin);
    return st;
}
