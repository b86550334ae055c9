/* test_explore.c - explore/'s API used as a program linking libmpx uses it,
 * with no REPL: figures and conditions read from a plan and its run, and a
 * search and a sweep driven through a host of the test's own (plans with
 * default options, runs on one input, no run cache).
 *
 * tiny_cnn (examples/tiny_cnn.json) bound to 1x3x32x32, fp16 by default,
 * one seeded input; a data set of three sample folders of .npy files (and
 * its refusals: a sample of another shape, a file named after no input). */
#include "check.h"
#include "graph_build.h"
#include "mpx_explore.h"
#include "mpx_data.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static mpx_error err;

/* The plan of g under the default rules and options. */
static mpx_plan *default_plan(const mpx_graph *g) {
    mpx_rules *r = mpx_rules_new();
    mpx_plan *p = NULL;
    CHECK_MSG(mpx_plan_build(g, r, NULL, NULL, &p, &err) == MPX_OK, "plan: %s", err.msg);
    mpx_rules_free(r);
    return p;
}

static mpx_compare *run_plan(const mpx_plan *p, const mpx_value *x) {
    mpx_assign *a = mpx_plan_to_assign(p, &err);
    mpx_compare *c = NULL;
    CHECK_MSG(a && mpx_compare_run(p->g, a, x, NULL, &c, &err) == MPX_OK, "run: %s", err.msg);
    mpx_assign_free(a);
    return c;
}

static mpx_status cond_of(const char *text, mpx_cond *c) {
    char buf[512], *words[32], *save;
    int n = 0;
    snprintf(buf, sizeof buf, "%s", text);
    for (char *w = strtok_r(buf, " ", &save); w && n < 32; w = strtok_r(NULL, " ", &save)) words[n++] = w;
    return mpx_cond_parse("test", n, words, c, &err);
}

static void test_figures(const mpx_graph *g, const mpx_value *x) {
    mpx_plan *p = default_plan(g);
    if (!p) return;
    mpx_figure_ctx fx = {.plan = p};
    double v = -1;
    /* plan figures need no run; run figures do */
    CHECK(mpx_figure_read(&fx, "low_nodes", &v, &err) == MPX_OK && v == p->counts.low_nodes);
    CHECK(mpx_figure_read(&fx, "red", &v, &err) == MPX_OK && v == p->counts.nodes[MPX_COLOUR_RED]);
    CHECK(!mpx_figure_needs_run("casts") && mpx_figure_needs_run("output.rel_l2"));
    CHECK(mpx_figure_read(&fx, "output.rel_l2", &v, &err) == MPX_E_ARG);
    CHECK_CONTAINS(err.msg, "needs a run");
    CHECK(mpx_figure_read(&fx, "castz", &v, &err) == MPX_E_ARG);
    CHECK_CONTAINS(err.msg, "did you mean casts");
    CHECK(mpx_figure_check(g, "nosuchnode.rel_l2", &err) == MPX_E_ARG);
    CHECK_CONTAINS(err.msg, "nosuchnode");

    mpx_compare *c = run_plan(p, x);
    if (!c) {
        mpx_plan_free(p);
        return;
    }
    fx.cmp = c;
    const mpx_layer *w = mpx_compare_worst_layer(c, MPX_WORST_ANY), *o = mpx_compare_worst_layer(c, MPX_WORST_OUTPUT);
    CHECK(w && o && (o->m.rel_l2 <= w->m.rel_l2));
    CHECK(mpx_figure_read(&fx, "worst.rel_l2", &v, &err) == MPX_OK && w && v == w->m.rel_l2);
    CHECK(mpx_figure_read(&fx, "output.rel_l2", &v, &err) == MPX_OK && o && v == o->m.rel_l2);
    CHECK(v > 0 && v < 0.1); /* fp16 on a small CNN: an error, not a failure */
    CHECK(mpx_figure_read(&fx, "layers", &v, &err) == MPX_OK && v == c->n_layers);

    /* conditions: the first clause that fails is named, later ones are not read */
    mpx_cond cond;
    double got[MPX_COND_MAX];
    int failed = 7;
    CHECK_MSG(cond_of("output.rel_l2 < 0.1 and casts >= 0", &cond) == MPX_OK, "%s", err.msg);
    CHECK(cond.n == 2 && strcmp(cond.text, "output.rel_l2 < 0.1 and casts >= 0") == 0);
    CHECK(mpx_cond_needs_run(&cond));
    CHECK(mpx_cond_eval(&fx, &cond, got, &failed, &err) == MPX_OK && failed == -1);
    CHECK(got[0] == o->m.rel_l2 && got[1] == p->counts.casts);
    CHECK(cond_of("output.rel_l2 < 1e-12 and casts >= 0", &cond) == MPX_OK);
    CHECK(mpx_cond_eval(&fx, &cond, got, &failed, &err) == MPX_OK && failed == 0 && isnan(got[1]));
    CHECK(strcmp(mpx_cond_op(&cond.c[0]), "<") == 0);
    CHECK(cond_of("casts <= 2K", &cond) == MPX_OK && cond.c[0].want == 2000 && !mpx_cond_needs_run(&cond));
    CHECK(cond_of("casts <= two", &cond) == MPX_E_ARG);
    CHECK_CONTAINS(err.msg, "not a number");
    /* the layers a condition reads: the outputs (always) and the one named */
    bool *measure = calloc((size_t)g->n_tensors, sizeof *measure);
    CHECK(cond_of("output.rel_l2 < 1", &cond) == MPX_OK && measure && mpx_cond_measure(g, &cond, measure));
    int n_measured = 0;
    for (int i = 0; measure && i < g->n_tensors; i++) n_measured += measure[i];
    CHECK(n_measured == g->n_outputs);
    CHECK(cond_of("worst.rel_l2 < 1", &cond) == MPX_OK && measure && !mpx_cond_measure(g, &cond, measure));
    free(measure);
    mpx_compare_free(c);
    mpx_plan_free(p);
}

/* ---- search through a host of this test's own ------------------------------ */

static mpx_graph *the_graph; /* what th_plan plans */

typedef struct test_host {
    const mpx_value *x;
    int plans, runs, undos, progress;
    int cancel_after; /* evaluations before cancelled() says yes (0: never) */
    /* The run (counted from 1) that a cancel stops inside, after its first
     * node (0: none): a Ctrl-C during an evaluation's run. */
    int cancel_in_run;
    volatile int flag;
} test_host;

/* Sets the run's cancel flag once it has told of its first node. */
static void th_run_progress(void *ctx, int done, int total) {
    test_host *h = ctx;
    (void)total;
    if (done >= 1) h->flag = 1;
}

static mpx_status th_plan(void *ctx, const mpx_rules *r, const mpx_plan_opts *o, mpx_plan **out, mpx_error *e) {
    test_host *h = ctx;
    h->plans++;
    return mpx_plan_build(the_graph, r, o, NULL, out, e);
}

static mpx_status th_run(void *ctx, const mpx_plan *p, bool local, bool undoable, const bool *measure,
                         const bool *keep, mpx_compare **out, mpx_error *e) {
    test_host *h = ctx;
    (void)undoable;
    h->runs++;
    mpx_assign *a = mpx_plan_to_assign(p, e);
    if (!a) return e->status ? e->status : MPX_E_NOMEM;
    mpx_compare_opts o = {.local = local, .measure = measure, .keep = keep};
    h->flag = 0;
    if (h->runs == h->cancel_in_run) o.cancel = &h->flag, o.progress = th_run_progress, o.progress_ctx = h;
    mpx_status st = mpx_compare_run(p->g, a, h->x, &o, out, e);
    mpx_assign_free(a);
    return st;
}

static void th_undo(void *ctx) { ((test_host *)ctx)->undos++; }
static void th_progress(void *ctx, const mpx_search_progress *pr) {
    test_host *h = ctx;
    h->progress++;
    CHECK(pr->n_evals >= 0);
}
static bool th_cancelled(void *ctx) {
    test_host *h = ctx;
    return h->cancel_after > 0 && h->runs >= h->cancel_after;
}

/* output.rel_l2 below half the all-fp16 plan's: search finds a set, and its
 * rules, planned and run again, give the figure it reported, bit for bit. */
static void test_search(mpx_graph *g, const mpx_value *x) {
    the_graph = g;
    mpx_plan *base = default_plan(g);
    mpx_compare *c0 = base ? run_plan(base, x) : NULL;
    const mpx_layer *o0 = c0 ? mpx_compare_worst_layer(c0, MPX_WORST_OUTPUT) : NULL;
    CHECK(o0 && o0->m.rel_l2 > 0);
    if (!o0) {
        mpx_compare_free(c0);
        mpx_plan_free(base);
        return;
    }
    char text[128];
    snprintf(text, sizeof text, "output.rel_l2 < %.6g", o0->m.rel_l2 / 2);
    mpx_cond cond;
    CHECK(cond_of(text, &cond) == MPX_OK);
    mpx_rules *rules = mpx_rules_new();
    test_host th = {.x = x};
    mpx_explore_host h = {.ctx = &th, .plan = th_plan, .run = th_run, .undo = th_undo, .progress = th_progress,
                         .cancelled = th_cancelled};
    for (int m = 0; m < MPX_SEARCH_METHOD_COUNT; m++) {
        mpx_search_opts so = {.method = (mpx_search_method)m, .log = true};
        mpx_search *s = NULL;
        mpx_search_result r;
        CHECK_MSG(mpx_search_new(g, base, rules, &cond, &so, &h, &s, &err) == MPX_OK, "%s", err.msg);
        if (!s) continue;
        mpx_status st = mpx_search_run(s, &r, &err);
        CHECK_MSG(st == MPX_OK && r.end == MPX_SEARCH_DONE, "%s: %s", mpx_search_method_name(so.method), err.msg);
        CHECK(r.set && r.k > 0 && r.k < r.n_cand && r.got[0] < o0->m.rel_l2 / 2 && r.n_evals > 0);
        CHECK(r.low_cost_pct > 0 && r.low_cost_pct < base->counts.low_cost_pct);
        /* the found set, as rules: the same figure */
        mpx_rules *found = NULL;
        mpx_plan *p = NULL;
        CHECK(r.set && mpx_search_rules(s, r.set, true, r.end, &found, &err) == MPX_OK);
        CHECK(found && mpx_rules_count(found) == r.k && strstr(mpx_rules_text(found, 0), "# search: output.rel_l2 <"));
        CHECK(found && mpx_plan_build(g, found, NULL, NULL, &p, &err) == MPX_OK);
        mpx_compare *c = p ? run_plan(p, x) : NULL;
        mpx_figure_ctx fx = {.plan = p, .cmp = c};
        double v = NAN;
        CHECK(c && mpx_figure_read(&fx, "output.rel_l2", &v, &err) == MPX_OK && v == r.got[0]);
        CHECK(p && p->counts.low_cost_pct == r.low_cost_pct);
        char *json = mpx_search_json(s, &r, NULL, false, NULL);
        CHECK(json && strstr(json, "\"ended\":\t\"done\"") && strstr(json, "\"evaluations\""));
        free(json);
        mpx_compare_free(c);
        mpx_plan_free(p);
        mpx_rules_free(found);
        mpx_search_free(s);
    }
    CHECK(th.plans > 0 && th.runs > 0 && th.progress > 0 && th.undos > 0);

    /* limits: one evaluation, then a stop naming it; Ctrl-C */
    mpx_search_opts one = {.max_evals = 1};
    mpx_search *s = NULL;
    mpx_search_result r;
    CHECK(mpx_search_new(g, base, rules, &cond, &one, &h, &s, &err) == MPX_OK);
    CHECK(s && mpx_search_run(s, &r, &err) == MPX_E_LIMIT && r.end == MPX_SEARCH_MAX_EVALS && r.n_evals == 1);
    CHECK_CONTAINS(err.msg, "--max-evals 1");
    mpx_search_free(s);
    th.runs = 0, th.cancel_after = 2;
    CHECK(mpx_search_new(g, base, rules, &cond, NULL, &h, &s, &err) == MPX_OK);
    CHECK(s && mpx_search_run(s, &r, &err) == MPX_E_CANCELLED && r.end == MPX_SEARCH_INTERRUPTED);
    mpx_search_free(s);
    /* Ctrl-C inside the third evaluation's run: no verdict for it. The log
     * lists it as interrupted, without holds or figures; the two before
     * have theirs, and only they are counted. */
    th.runs = 0, th.cancel_after = 0, th.cancel_in_run = 3;
    mpx_search_opts logged = {.log = true};
    CHECK(mpx_search_new(g, base, rules, &cond, &logged, &h, &s, &err) == MPX_OK);
    mpx_status cst = s ? mpx_search_run(s, &r, &err) : MPX_E_ARG;
    CHECK_MSG(cst == MPX_E_CANCELLED && r.end == MPX_SEARCH_INTERRUPTED, "%s: %s", mpx_status_name(cst), err.msg);
    CHECK_MSG(th.runs == 3 && r.n_evals == 2, "%d runs, %d evaluations", th.runs, r.n_evals);
    char *js = s ? mpx_search_json(s, &r, err.msg, false, NULL) : NULL;
    const char *ev = js ? strstr(js, "\"evaluations\"") : NULL;
    int holds = 0, interrupted = 0;
    for (const char *q = ev; q && (q = strstr(q, "\"holds\"")); q++) holds++;
    for (const char *q = ev; q && (q = strstr(q, "\"interrupted\":\ttrue")); q++) interrupted++;
    const char *last = ev ? strstr(ev, "\"interrupted\":\ttrue") : NULL;
    CHECK_MSG(ev && holds == 2 && interrupted == 1 && last && !strstr(last, "\"holds\"") && !strstr(last, "\"figures\""),
              "the interrupted evaluation in the log: %s", ev ? ev : "(no log)");
    CHECK(js && strstr(js, "\"ended\":\t\"interrupted\""));
    free(js);
    mpx_search_free(s);
    th.cancel_in_run = 0;
    /* a condition no plan meets */
    CHECK(cond_of("output.rel_l2 < 0", &cond) == MPX_OK);
    th.cancel_after = 0;
    CHECK(mpx_search_new(g, base, rules, &cond, NULL, &h, &s, &err) == MPX_OK);
    CHECK(s && mpx_search_run(s, &r, &err) == MPX_E_INVALID && r.end == MPX_SEARCH_NO_PLAN && !r.set);
    mpx_search_free(s);
    /* no host: refused */
    mpx_explore_host none = {0};
    CHECK(mpx_search_new(g, base, rules, &cond, NULL, &none, &s, &err) == MPX_E_ARG && !s);
    mpx_rules_free(rules);
    mpx_compare_free(c0);
    mpx_plan_free(base);
}

/* A sweep through the same host: every point planned and run, its figures
 * those of its plan; two shards' JSON merged give the unsharded sweep. */
static void test_sweep(mpx_graph *g, const mpx_value *x) {
    the_graph = g;
    test_host th = {.x = x};
    mpx_explore_host h = {.ctx = &th, .plan = th_plan, .run = th_run};
    mpx_rules *rules = mpx_rules_new();
    mpx_plan_opts o;
    mpx_plan_opts_default(&o);
    mpx_sweep *d = malloc(sizeof *d), *a = malloc(sizeof *a), *b = malloc(sizeof *b), *m = calloc(1, sizeof *m);
    if (!d || !a || !b || !m) {
        free(d), free(a), free(b), free(m);
        mpx_rules_free(rules);
        CHECK_MSG(false, "out of memory");
        return;
    }
    const char *cmd = "colour Conv green when macs >= $t else red";
    CHECK_MSG(mpx_sweep_define(d, "t", cmd, "0,1G", "tiny_cnn.json", o.target, &err) == MPX_OK, "%s", err.msg);
    CHECK_MSG(mpx_sweep_run(d, g, rules, &o, &h, 0, 0, &err) == MPX_OK, "%s", err.msg);
    CHECK(d->n == 2 && d->pts[0].done && d->pts[1].done);
    /* every Conv green at t = 0, none at 1G: more of the model low, more error */
    CHECK(d->pts[0].low_pct > d->pts[1].low_pct && d->pts[0].out_rel_l2 > d->pts[1].out_rel_l2);
    char line[256];
    CHECK(mpx_sweep_point_command(d, 1, line, sizeof line, &err) == MPX_OK &&
          strcmp(line, "colour Conv green when macs >= 1G else red") == 0);
    /* shards 1/2 and 2/2, merged */
    CHECK(mpx_sweep_define(a, "t", cmd, "0,1G", "tiny_cnn.json", o.target, &err) == MPX_OK);
    CHECK(mpx_sweep_define(b, "t", cmd, "0,1G", "tiny_cnn.json", o.target, &err) == MPX_OK);
    CHECK(mpx_sweep_run(a, g, rules, &o, &h, 1, 2, &err) == MPX_OK && a->pts[0].done && !a->pts[1].done);
    CHECK(mpx_sweep_run(b, g, rules, &o, &h, 2, 2, &err) == MPX_OK && !b->pts[0].done && b->pts[1].done);
    char *ja = mpx_sweep_json(a, "1/2"), *jb = mpx_sweep_json(b, "2/2"), *jd = mpx_sweep_json(d, NULL);
    CHECK(ja && jb && mpx_sweep_merge(m, "a.json", ja, true, &err) == MPX_OK);
    CHECK(mpx_sweep_check_complete(m, &err) == MPX_E_INVALID);
    CHECK_CONTAINS(err.msg, "t = 1G");
    CHECK(jb && mpx_sweep_merge(m, "b.json", jb, false, &err) == MPX_OK && mpx_sweep_check_complete(m, &err) == MPX_OK);
    CHECK(jb && mpx_sweep_merge(m, "b.json", jb, false, &err) == MPX_E_INVALID);
    CHECK_CONTAINS(err.msg, "in two shards");
    char *jm = mpx_sweep_json(m, NULL), *cm = mpx_sweep_csv(m), *cd = mpx_sweep_csv(d);
    CHECK(jm && jd && strcmp(jm, jd) == 0);
    CHECK(cm && cd && strcmp(cm, cd) == 0);
    /* a command that does not change the plan, a value that does not parse */
    CHECK(mpx_sweep_define(a, "t", "run --local $t", "1", "m", o.target, &err) == MPX_OK);
    CHECK(mpx_sweep_run(a, g, rules, &o, &h, 0, 0, &err) == MPX_E_ARG);
    CHECK_CONTAINS(err.msg, "must change the plan");
    CHECK(mpx_sweep_define(a, "t", "colour Conv green when macs >= $t", "1,x", "m", o.target, &err) == MPX_OK);
    CHECK(mpx_sweep_run(a, g, rules, &o, &h, 0, 0, &err) != MPX_OK && !a->pts[0].done);
    CHECK_CONTAINS(err.msg, "sweep t = x");
    free(ja), free(jb), free(jd), free(jm), free(cm), free(cd);
    free(d), free(a), free(b), free(m);
    mpx_rules_free(rules);
}

/* Ranges of the fp32 reference: an output's absmax is its largest |value|
 * in a plain run; saved and loaded, the same per tensor; per node, its
 * output's. */
static void test_ranges(const mpx_graph *g, const mpx_value *x) {
    mpx_ranges *r = mpx_ranges_new(g);
    CHECK(r && mpx_ranges_add_run(r, x, &err) == MPX_OK && mpx_ranges_samples(r) == 1);
    if (!r) return;
    mpx_run_opts o = {0}; /* not streaming: every value kept */
    mpx_run *run = NULL;
    CHECK_MSG(mpx_run_graph(g, NULL, x, &o, &run, &err) == MPX_OK, "%s", err.msg);
    const mpx_tensor *out = g->outputs[0];
    const mpx_value *v = run ? &run->vals[out->index] : NULL;
    double amax = 0;
    for (int64_t i = 0; v && i < v->n; i++) amax = fmax(amax, fabs((double)v->f[i]));
    const mpx_range *ro = mpx_ranges_at(r, out->index);
    CHECK(ro->seen && ro->absmax == amax && amax > 0 && ro->n == (v ? v->n : -1));
    CHECK(ro->min <= ro->max && mpx_ranges_quantile(r, out->index, 0.99) <= amax * 1.0);
    char *json = mpx_ranges_json(r, "tiny_cnn.json");
    double *ta = NULL;
    int used = 0, samples = 0;
    CHECK(json && mpx_ranges_load(g, "r.json", json, "tiny_cnn.json", &ta, &used, &samples, &err) == MPX_OK);
    CHECK(ta && samples == 1 && used > 0 && ta[out->index] == amax);
    double *na = ta ? mpx_ranges_node_absmax(g, ta) : NULL;
    CHECK(na && out->producer && na[out->producer->index] == amax);
    double *none = NULL;
    CHECK(mpx_ranges_load(g, "x.json", "{\"kind\": \"other\"}", "m", &none, &used, &samples, &err) == MPX_E_INVALID &&
          !none);
    CHECK_CONTAINS(err.msg, "not a ranges file");
    free(na);
    free(ta);
    free(json);
    mpx_run_free(run);
    mpx_ranges_free(r);
}


/* ---- data sets: a host of .npy files alone (no specs of its own) ------------- */

static mpx_status dh_read(void *ctx, const mpx_data_file *f, const mpx_tensor *t, bool kept, mpx_value *v,
                          mpx_error *e) {
    (void)ctx, (void)t, (void)kept;
    return mpx_npy_read(f->path, v, e);
}

static mpx_status dh_make(void *ctx, const char *but, mpx_value **out, mpx_error *e) {
    const mpx_graph *g = ctx;
    (void)but;
    mpx_value *v = calloc((size_t)g->n_inputs, sizeof *v);
    if (!v) return mpx_error_set(e, MPX_E_NOMEM, "out of memory");
    for (int i = 0; i < g->n_inputs; i++) v[i].n = -1;
    *out = v;
    return MPX_OK;
}

/* Sample folder dir/<name> holding x.npy: x filled from seed, of shape d. */
static void write_sample(const char *dir, const char *name, int seed, const int64_t *d) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/x.npy", dir, name);
    mpx_value v;
    mpx_value_alloc(&v, MPX_DT_FLOAT, 4, d, NULL);
    gb_fill_normal(&v, (unsigned)seed);
    unlink(path);
    CHECK_MSG(mpx_npy_write(path, NULL, &v, &err) == MPX_OK, "write %s: %s", path, err.msg);
    mpx_value_free(&v);
}

static void test_datasets(const mpx_graph *g) {
    const char *tmp = getenv("TMPDIR");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/mpx_test_explore_data", tmp ? tmp : "/tmp");
    mkdir(dir, 0755);
    static const int64_t d[4] = {1, 3, 32, 32}, wrong[4] = {1, 3, 16, 16};
    write_sample(dir, "s1", 11, d);
    write_sample(dir, "s2", 12, d);
    write_sample(dir, "s3", 13, d);
    mpx_data_host h = {.ctx = (void *)g, .read_file = dh_read, .make_inputs = dh_make};
    mpx_data_opts o = {0};
    mpx_dataset *ds = NULL;
    CHECK_MSG(mpx_dataset_open(g, dir, &o, &h, &ds, &err) == MPX_OK, "data set: %s", err.msg);
    if (!ds) return;
    CHECK(mpx_dataset_count(ds) == 3 && mpx_dataset_matched(ds) == 3);
    char want[1100];
    snprintf(want, sizeof want, "%s/s2", dir);
    CHECK_MSG(strcmp(mpx_dataset_label(ds, 1), want) == 0, "label of sample 2: %s", mpx_dataset_label(ds, 1));
    CHECK(mpx_dataset_file(ds, 1, "x") && mpx_dataset_file(ds, 1, "x")->kind == MPX_DATA_NPY);
    /* Sample 2's values are the ones written for it, not another sample's. */
    mpx_value *in = NULL, x2;
    mpx_value_alloc(&x2, MPX_DT_FLOAT, 4, d, NULL);
    gb_fill_normal(&x2, 12);
    CHECK_MSG(mpx_dataset_inputs(ds, g, 1, &h, &in, &err) == MPX_OK, "inputs of sample 2: %s", err.msg);
    CHECK(in && in[0].n == x2.n && memcmp(in[0].f, x2.f, (size_t)x2.n * sizeof *x2.f) == 0);
    mpx_dataset_free_inputs(g, in);
    mpx_value_free(&x2);
    CHECK_MSG(mpx_dataset_check_bound(ds, g, &h, &err) == MPX_OK, "check bound: %s", err.msg);
    mpx_dataset_free(ds);
    /* limit takes the first samples, matched counts them all */
    o.limit = 2;
    ds = NULL;
    CHECK(mpx_dataset_open(g, dir, &o, &h, &ds, &err) == MPX_OK && mpx_dataset_count(ds) == 2 &&
          mpx_dataset_matched(ds) == 3);
    mpx_dataset_free(ds);
    o.limit = 0;
    /* a sample of another shape: refused naming the sample and both shapes */
    write_sample(dir, "s3", 13, wrong);
    ds = NULL;
    CHECK(mpx_dataset_open(g, dir, &o, &h, &ds, &err) == MPX_OK);
    in = NULL;
    CHECK(ds && mpx_dataset_inputs(ds, g, 2, &h, &in, &err) == MPX_E_SHAPE && !in);
    CHECK_MSG(strstr(err.msg, "sample 3 of 3") && strstr(err.msg, "1x3x16x16") && strstr(err.msg, "1x3x32x32"),
              "wrong shape: %s", err.msg);
    mpx_dataset_free(ds);
    /* a file named after no input */
    char path[1200];
    snprintf(path, sizeof path, "%s/s3/x.npy", dir);
    char moved[1200];
    snprintf(moved, sizeof moved, "%s/s3/y.npy", dir);
    CHECK(rename(path, moved) == 0);
    ds = NULL;
    CHECK(mpx_dataset_open(g, dir, &o, &h, &ds, &err) == MPX_E_ARG && !ds);
    CHECK_MSG(strstr(err.msg, "\"y.npy\" is not named after an input"), "a file named after no input: %s", err.msg);
    unlink(moved);
    for (int k = 1; k <= 3; k++) {
        snprintf(path, sizeof path, "%s/s%d/x.npy", dir, k);
        unlink(path);
        snprintf(path, sizeof path, "%s/s%d", dir, k);
        rmdir(path);
    }
    rmdir(dir);
}

/* A figure's value beside its clause: 3 digits, more where those would put
 * it on the number or across it; the metric after the last dot before a
 * threshold's "@". */
static void test_figure_text(void) {
    mpx_cond c;
    char b[40];
    CHECK_MSG(cond_of("output.top1 >= 1", &c) == MPX_OK, "%s", err.msg);
    CHECK_MSG(strcmp(mpx_clause_got_text(&c.c[0], 0.99974, 3, b, sizeof b), "0.9997") == 0, "got %s", b);
    CHECK_MSG(strcmp(mpx_clause_got_text(&c.c[0], 0.9999997, 3, b, sizeof b), "0.9999997") == 0, "got %s", b);
    CHECK_MSG(strcmp(mpx_clause_got_text(&c.c[0], 1, 3, b, sizeof b), "1") == 0, "got %s", b);
    CHECK_MSG(strcmp(mpx_clause_got_text(&c.c[0], 0.98765, 3, b, sizeof b), "0.988") == 0, "got %s", b);
    CHECK_MSG(cond_of("output.rel_l2 < 1e-3", &c) == MPX_OK, "%s", err.msg);
    CHECK_MSG(strcmp(mpx_clause_got_text(&c.c[0], 0.00099951, 3, b, sizeof b), "0.0009995") == 0, "got %s", b);
    CHECK_MSG(strcmp(mpx_clause_got_text(&c.c[0], 0.0010004, 3, b, sizeof b), "0.0010004") == 0, "got %s", b);
    CHECK_MSG(strcmp(mpx_clause_got_text(&c.c[0], 0.012345, 3, b, sizeof b), "0.0123") == 0, "got %s", b);
    CHECK(strcmp(mpx_figure_metric_dot("output.iou@0.5"), ".iou@0.5") == 0);
    CHECK(strcmp(mpx_figure_metric_dot("a.b.sign_agree@-1e-9"), ".sign_agree@-1e-9") == 0);
    CHECK(strcmp(mpx_figure_metric_dot("x@1.5.rel_l2"), ".rel_l2") == 0); /* "@" in a name */
    CHECK(strcmp(mpx_figure_metric_dot("p2o.Conv.5.rel_l2"), ".rel_l2") == 0);
    CHECK(mpx_figure_metric_dot("casts") == NULL);
}

int main(void) {
    mpx_numerics_init();
    test_figure_text();
    static const int64_t d[4] = {1, 3, 32, 32};
    mpx_graph *g = gb_load_example("tiny_cnn.json", 4, d, &err);
    CHECK_MSG(g != NULL, "%s", err.msg);
    if (!g) return check_report("test_explore");
    mpx_value x;
    mpx_value_alloc(&x, MPX_DT_FLOAT, 4, d, NULL);
    gb_fill_normal(&x, 3);
    test_figures(g, &x);
    test_search(g, &x);
    test_sweep(g, &x);
    test_ranges(g, &x);
    test_datasets(g);
    mpx_value_free(&x);
    mpx_graph_free(g);
    return check_report("test_explore");
}
