/* test_explore.c - explore/'s API used as a program linking libmpx uses it,
 * with no REPL: figures and conditions read from a plan and its run.
 *
 * tiny_cnn (examples/tiny_cnn.json) bound to 1x3x32x32, fp16 by default,
 * one seeded input. */
#include "check.h"
#include "graph_build.h"
#include "mpx_explore.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

int main(void) {
    mpx_numerics_init();
    static const int64_t d[4] = {1, 3, 32, 32};
    mpx_graph *g = gb_load_example("tiny_cnn.json", 4, d, &err);
    CHECK_MSG(g != NULL, "%s", err.msg);
    if (!g) return check_report("test_explore");
    mpx_value x;
    mpx_value_alloc(&x, MPX_DT_FLOAT, 4, d, NULL);
    gb_fill_normal(&x, 3);
    test_figures(g, &x);
    mpx_value_free(&x);
    mpx_graph_free(g);
    return check_report("test_explore");
}
