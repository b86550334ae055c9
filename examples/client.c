/* client.c - a program that uses libmpx the way the mpx program does:
 * load a model, bind its input's shape, plan fp16 with a rule, run the
 * plan against the fp32 reference on seeded inputs, print the worst layers,
 * and export the plan as an ONNX model.
 *
 *   cc client.c $(pkg-config --cflags --libs mpx) -o client
 *   ./client tiny_cnn.json x 1x3x32x32 out.onnx
 *
 * (the test `install_check` builds and runs it against an installed mpx). */
#include <mpx.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, const mpx_error *err) {
    char msg[1024];
    fprintf(stderr, "client: %s: %s\n", what, mpx_error_format(err, msg, sizeof msg));
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: client <model> <input> <AxBxC...> <out.onnx>\n");
        return 64;
    }
    int64_t dims[8];
    int rank = 0;
    for (char *p = argv[3]; *p && rank < 8; rank++) {
        dims[rank] = strtoll(p, &p, 10);
        if (*p == 'x') p++;
    }
    printf("libmpx %s\n", mpx_version());
    mpx_error err;
    mpx_error_clear(&err);
    mpx_graph *g = mpx_graph_load(argv[1], &err);
    if (!g) return fail("load", &err);
    if (mpx_graph_bind_input(g, argv[2], rank, dims, &err) || mpx_graph_infer(g, &err)) return fail("shape", &err);

    /* Conv in fp16 only where it is big enough to matter; the rest by
     * default colours. */
    mpx_rules *rules = mpx_rules_new();
    if (!rules || mpx_rules_add(rules, "colour Conv green when macs >= 10K else gray", g, &err))
        return fail("rule", &err);
    mpx_plan_opts o;
    mpx_plan_opts_default(&o);
    mpx_plan *plan = NULL;
    if (mpx_plan_build(g, rules, &o, NULL, &plan, &err)) return fail("plan", &err);
    printf("plan: %d casts, %.1f%% of MACs in %s\n", plan->counts.casts, plan->counts.low_macs_pct,
           mpx_format_name(plan->opts.target));

    /* Seeded uniform inputs in [-1, 1). */
    const mpx_tensor *in = g->inputs[0];
    mpx_value x;
    if (mpx_value_alloc(&x, in->dtype, in->rank, in->dims, &err)) return fail("input", &err);
    mpx_rng rng;
    mpx_rng_init(&rng, 1);
    for (int64_t i = 0; i < x.n; i++) x.f[i] = (float)(2 * mpx_rng_unit(&rng) - 1);

    mpx_assign *a = mpx_plan_to_assign(plan, &err);
    mpx_compare *c = NULL;
    if (!a || mpx_compare_run(g, a, &x, NULL, &c, &err)) return fail("run", &err);
    const mpx_layer *worst = mpx_compare_worst_layer(c, MPX_WORST_ANY);
    printf("run: %d layers; worst %s (%s) rel_l2 %.3g\n", c->n_layers, g->tensors[worst->tensor]->name,
           g->nodes[worst->node]->op_type, worst->m.rel_l2);

    if (mpx_export_onnx(plan, argv[4], true, false, NULL, NULL, &err)) return fail("export", &err);
    printf("exported %s\n", argv[4]);

    mpx_compare_free(c);
    mpx_assign_free(a);
    mpx_value_free(&x);
    mpx_plan_free(plan);
    mpx_rules_free(rules);
    mpx_graph_free(g);
    return 0;
}
