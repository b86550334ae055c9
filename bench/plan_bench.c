/* plan_bench.c - how long planning takes on a synthetic 10,000-node graph.
 *
 * Planning runs again after every rule a user types, so it must feel
 * instant (target: under 20 ms). The graph is written as an mpx JSON model
 * (blocks of Conv -> BatchNormalization -> Relu -> Add (residual) -> Sigmoid,
 * weights seeded random), loaded and shaped like any model; then the plan is
 * built 20 times under three rules (a threshold, a name glob, an accum rule)
 * and the median and best are printed, with the default plan for comparison.
 *
 * usage: plan_bench [n_nodes]     (default 10000)
 */
#define _DEFAULT_SOURCE /* mkstemps */
#include "mpx_colour.h"
#include "mpx_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static bool write_model(FILE *f, int n_nodes) {
    fprintf(f, "{\"format\": \"mpx-model\", \"version\": 1, \"name\": \"bench\", \"opset\": 17,\n"
               "\"inputs\": [{\"name\": \"x\", \"type\": \"float32\", \"shape\": [1, 8, 8, 8]}],\n"
               "\"outputs\": [{\"name\": \"out\", \"type\": \"float32\"}],\n\"initializers\": [\n");
    int blocks = (n_nodes + 4) / 5;
    for (int b = 0; b < blocks; b++) {
        fprintf(f, "%s{\"name\": \"w%d\", \"type\": \"float32\", \"shape\": [8, 8, 1, 1], \"init\": \"normal\"},\n",
                b ? "" : " ", b);
        for (int k = 0; k < 4; k++)
            fprintf(f, "{\"name\": \"s%d_%d\", \"type\": \"float32\", \"shape\": [8], \"init\": \"uniform\", "
                       "\"low\": 0.5, \"high\": 1.5}%s\n", b, k, (b == blocks - 1 && k == 3) ? "" : ",");
    }
    fprintf(f, "],\n\"nodes\": [\n");
    static const char *const ops[5] = {"Conv", "BatchNormalization", "Relu", "Add", "Sigmoid"};
    char prev[32] = "x";
    for (int k = 0; k < n_nodes; k++) {
        int b = k / 5, j = k % 5;
        char out[32], ins[160];
        if (k == n_nodes - 1) snprintf(out, sizeof out, "out");
        else snprintf(out, sizeof out, "t%d", k);
        if (j == 0) snprintf(ins, sizeof ins, "\"%s\", \"w%d\"", prev, b);
        else if (j == 1) snprintf(ins, sizeof ins, "\"%s\", \"s%d_0\", \"s%d_1\", \"s%d_2\", \"s%d_3\"", prev, b, b, b, b);
        else snprintf(ins, sizeof ins, "\"%s\"", prev);
        if (j == 3) { /* residual: the block's input */
            char res[32];
            if (b == 0) snprintf(res, sizeof res, "x");
            else snprintf(res, sizeof res, "t%d", b * 5 - 1);
            snprintf(ins, sizeof ins, "\"%s\", \"%s\"", prev, res);
        }
        fprintf(f, "{\"name\": \"/blk%d/%s\", \"op\": \"%s\", \"inputs\": [%s], \"outputs\": [\"%s\"]}%s\n", b, ops[j],
                ops[j], ins, out, k == n_nodes - 1 ? "" : ",");
        snprintf(prev, sizeof prev, "%s", out);
    }
    fprintf(f, "]}\n");
    return !ferror(f);
}

static double time_plan(const mpx_graph *g, const mpx_rules *r, int reps, double *best) {
    double t[64];
    mpx_error err;
    for (int i = 0; i < reps; i++) {
        mpx_plan *p = NULL;
        double t0 = now_ms();
        if (mpx_plan_build(g, r, NULL, NULL, &p, &err) != MPX_OK) {
            fprintf(stderr, "plan_bench: %s\n", err.msg);
            exit(1);
        }
        t[i] = now_ms() - t0;
        mpx_plan_free(p);
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    *best = t[0];
    return t[reps / 2];
}

int main(int argc, char **argv) {
    mpx_numerics_init(); /* constant folding runs the kernels */
    int n = argc > 1 ? atoi(argv[1]) : 10000;
    if (n < 5 || n > 1000000) {
        fprintf(stderr, "usage: plan_bench [n_nodes >= 5]\n");
        return 64;
    }
    char path[] = "/tmp/mpx_plan_bench_XXXXXX.json";
    int fd = mkstemps(path, 5);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f || !write_model(f, n) || fclose(f) != 0) {
        fprintf(stderr, "plan_bench: cannot write %s\n", path);
        return 1;
    }
    mpx_error err;
    double t0 = now_ms();
    mpx_graph *g = mpx_graph_load(path, &err);
    if (g && mpx_graph_infer(g, &err) != MPX_OK) {
        mpx_graph_free(g);
        g = NULL;
    }
    double t_load = now_ms() - t0;
    remove(path);
    if (!g) {
        fprintf(stderr, "plan_bench: %s\n", err.msg);
        return 1;
    }
    mpx_rules *none = mpx_rules_new(), *r = mpx_rules_new();
    if (!none || !r || mpx_rules_add(r, "colour Conv green when macs >= 1M else gray", g, &err) ||
        mpx_rules_add(r, "colour name:/blk1*/* red", g, &err) || mpx_rules_add(r, "accum Conv fp16 when k > 4", g, &err)) {
        fprintf(stderr, "plan_bench: %s\n", err.msg);
        return 1;
    }
    double best0, best1;
    double med0 = time_plan(g, none, 21, &best0);
    double med1 = time_plan(g, r, 21, &best1);
    printf("plan_bench: %d nodes (load + shapes %.1f ms)\n", g->n_nodes, t_load);
    printf("  default colours:  median %.2f ms, best %.2f ms (21 plans)\n", med0, best0);
    printf("  three rules:      median %.2f ms, best %.2f ms (21 plans)\n", med1, best1);
    mpx_rules_free(none);
    mpx_rules_free(r);
    mpx_graph_free(g);
    return 0;
}
