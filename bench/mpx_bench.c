/* mpx_bench - the mpx half of bench/run.sh: one kind of run of one model,
 * timed in this process, with the process's peak RSS. Each mode runs in its
 * own process so the peak RSS is that mode's alone. Prints one JSON object
 * on stdout (times in ms, every repetition listed, and their median).
 *
 * usage: mpx_bench <model> <AxBxC> <mode> [--image page|line] [--seed N]
 *                  [--repeat N] [--warmup N] [--top N] [--out FILE] [--acc16] [--alone]
 * modes:
 *   input    write the input (--out x.npy) for ONNX Runtime, nothing timed
 *   fp32     the fp32 reference forward: mpx_run_graph with no assignment,
 *            streaming (each value freed after its last consumer, the
 *            outputs kept: what ONNX Runtime's forward does)
 *   report   the full per-layer report: for fp16 and for bf16, the default
 *            plan (no rules, target f, keep-io, fp32 accumulation: what
 *            `compare fp16 bf16` in the REPL plans), both run by one
 *            mpx_compare_run_many against one fp32 reference, every metric
 *            of every layer; one repetition is both formats. Its JSON
 *            adds thread_ms: the last repetition's thread time in the
 *            reference's, each candidate's steps and the metrics (they
 *            overlap on two threads: where the time goes, not the wall)
 *   report1  the same two comparisons one after the other (two
 *            mpx_compare_run, the reference run twice): slower, about two
 *            live activation sets at the peak instead of three
 *   acc16    every node in fp16 with fp16 accumulation, the running sum
 *            rounded after every addition (mpx_assign_uniform(g, fp16, fp16,
 *            keep-io)), through mpx_run_graph, streaming like fp32
 *   rerun    the report's fp16 run after recolouring one late layer (the
 *            last Conv, ConvTranspose, Gemm or MatMul: `colour name:<it> red`)
 *            and re-planning, as the REPL's `run` does it: with the
 *            session's incremental cache (mpx_compare_cache, default budget),
 *            filled by the untimed first report, so only the recoloured node
 *            and what depends on it are recomputed. Repetitions alternate
 *            between the recoloured plan and the first one (each is one
 *            late-layer recolour away from the cache's state); its JSON
 *            adds the last repetition's thread_ms as the report's
 *   run      the REPL's `run` as a user runs it: the default fp16 plan
 *            (planning timed too), one mpx_compare_run of the fp32 reference
 *            and the fp16 candidate with every layer's metrics, through a
 *            run cache of the REPL's default budget made fresh for each
 *            repetition (a session's first run); the model's load is not
 *            timed. bench.js runs it with --repeat 1 --warmup 0, a process a
 *            sample, so each is the first run of a fresh process as well
 *   peak     (no model: `mpx_bench peak [--threads N]`) the machine's fused
 *            multiply-add peak on N threads (default 2), bench/peak.c;
 *            bench.js turns the report's terms (report_gmacs below) into
 *            the floor no implementation of (4) on this machine can beat
 *   profile  time per node and per op type of the fp32 reference (or with
 *            --acc16 the acc16 run) as the fp32 mode's forward runs it
 *            (mpx_run_graph streaming, each node's wall time; a chain of
 *            elementwise nodes run by tiles shares its time among its
 *            nodes; with --alone every node run on its own into fresh
 *            memory, every value kept), medians of --repeat runs, to stderr (the slowest --top N nodes, 40 by
 *            default); with --out FILE every node's samples as JSON, which
 *            bench.js --profile sets beside ONNX Runtime's per-node profile
 * The input is a seeded synthetic text image (--image, the default page for
 * a 4-D input of height > 64, else a line) as tests/mpx_run_model.c makes it
 * (copied here: that file is a test program), or uniform [-1, 1) with
 * --image none. */
#include "mpx_colour.h"
#include "mpx_numerics.h"
#include "peak.h"
#include "run_internal.h" /* mpx_fuse_span, mpx_fuse_run: profile runs chains as mpx_run_graph does */
#include "text_image.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The process's peak resident set (VmHWM), in MB. Not getrusage's
 * ru_maxrss: Linux keeps that across exec, so a process started by a large
 * parent (node with ONNX Runtime's sessions) would report the parent's. */
static double peak_rss_mb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kb = -1.0;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) kb = atof(line + 6);
    if (f) fclose(f);
    if (kb < 0) { /* not Linux: ru_maxrss (kB on Linux and the BSDs) */
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        kb = (double)ru.ru_maxrss;
    }
    return kb / 1024.0;
}

static int fail(const char *what, const mpx_error *err) {
    char msg[2048];
    fprintf(stderr, "mpx_bench: %s: %s\n", what, mpx_error_format(err, msg, sizeof msg));
    return 1;
}

/* ---- runs ------------------------------------------------------------------------------ */

typedef struct bench {
    mpx_graph *g;
    mpx_value *inputs;
    int repeat, warmup;
    double *ms;    /* [repeat] */
    int n_ms;
    char extra[1024]; /* extra JSON members, ", \"k\": v" */
    mpx_compare_cache *cache; /* rerun: the session's cache (else NULL) */
    int n_run, incremental;   /* of the last comparison */
    size_t cache_bytes;
    size_t peak_values;       /* report: most value bytes alive at once */
    double job_ms[4];         /* report, run: thread-ms of the last one's reference, fp16 and bf16
                               * candidate steps, and metrics (where the time goes) */
} bench;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, int n) {
    if (n <= 0) return NAN;
    double *s = malloc((size_t)n * sizeof *s);
    if (!s) return NAN;
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    free(s);
    return m;
}

static mpx_status run_once(bench *b, const mpx_assign *a, mpx_error *err) {
    mpx_run *r = NULL;
    mpx_run_opts o = {.stream = true};
    mpx_status st = mpx_run_graph(b->g, a, b->inputs, &o, &r, err);
    mpx_run_free(r);
    return st;
}

/* The largest rel_l2 of a run's layers (NaN counts as largest). */
static double worst_of(const mpx_compare *c) {
    double w = 0.0;
    for (int i = 0; i < c->n_layers; i++)
        if (!(c->layers[i].m.rel_l2 <= w)) w = c->layers[i].m.rel_l2;
    return w;
}

/* One comparison under plan p's assignment; the worst layer's rel_l2 into *worst. */
static mpx_status compare_once(bench *b, const mpx_assign *a, double *worst, int *layers,
                               mpx_error *err) {
    mpx_compare_opts o = {.cache = b->cache};
    mpx_compare *c = NULL;
    mpx_status st = mpx_compare_run(b->g, a, b->inputs, &o, &c, err);
    if (st) return st;
    b->n_run = c->n_run;
    b->incremental = c->incremental;
    b->peak_values = c->peak_bytes;
    b->cache_bytes = mpx_compare_cache_bytes(b->cache);
    b->job_ms[0] = c->ms_ref;
    b->job_ms[1] = c->ms_cand;
    b->job_ms[3] = c->ms_metrics;
    if (worst) *worst = worst_of(c);
    if (layers) *layers = c->n_layers;
    mpx_compare_free(c);
    return MPX_OK;
}

/* The report: fp16 and bf16 against one shared reference (what the REPL's
 * `compare fp16 bf16` runs). */
static mpx_status report_once(bench *b, const mpx_assign *a16, const mpx_assign *abf,
                              double *w16, double *wbf, int *layers, mpx_error *err) {
    const mpx_assign *as[2] = {a16, abf};
    mpx_compare *c[2] = {0};
    mpx_status st = mpx_compare_run_many(b->g, as, 2, b->inputs, NULL, c, err);
    if (st) return st;
    *w16 = worst_of(c[0]);
    *wbf = worst_of(c[1]);
    *layers = c[0]->n_layers;
    b->peak_values = c[0]->peak_bytes;
    b->job_ms[0] = c[0]->ms_ref;
    b->job_ms[1] = c[0]->ms_cand;
    b->job_ms[2] = c[1]->ms_cand;
    b->job_ms[3] = c[0]->ms_metrics + c[1]->ms_metrics;
    mpx_compare_free(c[0]);
    mpx_compare_free(c[1]);
    return MPX_OK;
}

static mpx_assign *plan_assign(const mpx_graph *g, const mpx_rules *rules, const mpx_format *f,
                               mpx_error *err) {
    mpx_plan_opts o;
    mpx_plan_opts_default(&o);
    o.target = f;
    mpx_plan *p = NULL;
    if (mpx_plan_build(g, rules, &o, NULL, &p, err)) return NULL;
    mpx_assign *a = mpx_plan_to_assign(p, err);
    mpx_plan_free(p);
    return a;
}

/* The products the GEMM core computes (kern_gemm.h); other ops' products
 * (Einsum, recurrent cells, attention) are left out of the counts below. */
static bool dot_product(mpx_op op) {
    return op == MPX_OP_Conv || op == MPX_OP_ConvTranspose || op == MPX_OP_Gemm || op == MPX_OP_MatMul;
}

/* The last node doing a dot product: the "late layer" the rerun mode recolours. */
static const mpx_node *late_layer(const mpx_graph *g) {
    for (int i = g->n_nodes - 1; i >= 0; i--)
        if (dot_product(g->nodes[i]->op)) return g->nodes[i];
    return NULL;
}

/* ---- profile ------------------------------------------------------------------------------ */

/* Issue 20's memory bound for the report's value bytes: 2 x (weights + the
 * largest live activation set of one fp32 forward). The live set is
 * computed from the inferred shapes on mpx_run_graph's streaming schedule
 * (nodes in order; a value freed after its last reader; model inputs and
 * outputs held throughout; a node's outputs alive beside its inputs), values
 * held as mpx holds them: 4 bytes a float element, 8 an integer one.
 * Weights: the float constants (initializers, Constant outputs, folded
 * values), 4 bytes an element. Static, so the bound does not depend on
 * what the measured run does. */
static size_t held_bytes(const mpx_tensor *t) {
    if (t->nelem < 0 || (t->flags & MPX_T_SEQUENCE)) return 0;
    return (size_t)t->nelem * (mpx_dtype_is_float(t->dtype) ? 4u : 8u);
}

static void fp32_bound(const mpx_graph *g, double *weights_mb, double *live_mb) {
    size_t w = 0, live = 0, peak = 0;
    int *last = calloc((size_t)(g->n_tensors ? g->n_tensors : 1), sizeof *last);
    for (int t = 0; t < g->n_tensors; t++) {
        const mpx_tensor *x = g->tensors[t];
        if (x->flags & (MPX_T_CONSTANT | MPX_T_FOLDED)) w += mpx_dtype_is_float(x->dtype) ? held_bytes(x) : 0;
        else if (x->flags & MPX_T_INPUT) live += held_bytes(x);
        if (last) last[t] = -1;
    }
    for (int i = 0; last && i < g->n_nodes; i++)
        for (int j = 0; j < g->nodes[i]->n_inputs; j++)
            if (g->nodes[i]->inputs[j]) last[g->nodes[i]->inputs[j]->index] = i;
    peak = live;
    for (int i = 0; last && i < g->n_nodes; i++) {
        const mpx_node *n = g->nodes[i];
        if (mpx_exec_skipped(n)) continue;
        for (int j = 0; j < n->n_outputs; j++)
            if (n->outputs[j] && !(n->outputs[j]->flags & (MPX_T_CONSTANT | MPX_T_FOLDED))) live += held_bytes(n->outputs[j]);
        if (live > peak) peak = live;
        for (int j = 0; j < n->n_inputs; j++) {
            const mpx_tensor *t = n->inputs[j];
            if (!t || last[t->index] != i || (t->flags & (MPX_T_CONSTANT | MPX_T_FOLDED | MPX_T_INPUT | MPX_T_OUTPUT)))
                continue;
            bool twice = false; /* a tensor read twice by this node is freed once */
            for (int q = 0; q < j; q++) twice = twice || n->inputs[q] == t;
            if (!twice) live -= held_bytes(t);
        }
    }
    free(last);
    *weights_mb = (double)w / 1048576.0;
    *live_mb = (double)peak / 1048576.0;
}

/* A JSON string's body: the name as is, quotes, backslashes and control
 * characters escaped. */
static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* A node's kind for the per-op tables: its op type, and "Conv[dw]" for a
 * depthwise Conv (one input channel a group), whose kernel is not the GEMM
 * core's. */
static const char *node_kind(const mpx_node *n) {
    if (n->op == MPX_OP_Conv && n->cost.group > 1 && n->cost.group == n->cost.in_ch) return "Conv[dw]";
    return n->op_type;
}

/* profile: every node timed as the fp32 forward runs it (mpx_run_graph
 * streaming, mpx_run_opts.node_ms: a node writes over an input that dies
 * at it, what dies is freed, a chain run by tiles, fuse.c, shares its time
 * equally among its nodes; MPX_FUSE=0: no chains); with --alone every node
 * on its own instead (mpx_exec_node, nodes in order, each output in fresh
 * memory and every value kept to the end: a node's time then includes
 * faulting in its output's pages, which a streaming forward reuses), --repeat
 * runs after --warmup untimed ones. To stderr: per op type the sum of the nodes' medians and the
 * slowest nodes. With --json FILE, every node's samples (bench.js's per-op
 * comparison with ONNX Runtime reads them). */
static int profile(bench *b, const mpx_assign *a, int top, const char *json, bool alone) {
    mpx_error err;
    mpx_error_clear(&err);
    const mpx_graph *g = b->g;
    int reps = b->repeat;
    double *samples = calloc((size_t)g->n_nodes * (size_t)reps, sizeof *samples);
    double *node_ms = calloc((size_t)g->n_nodes, sizeof *node_ms);
    mpx_value *vals = calloc((size_t)g->n_tensors, sizeof *vals);
    bool *needed = calloc((size_t)g->n_tensors, sizeof *needed);
    bool fuse = mpx_fuse_enabled();
    mpx_value outs[16];
    if (!samples || !node_ms || !vals || !needed) return 1;
    for (int rep = -b->warmup; rep < reps && !alone; rep++) { /* as the forward runs */
        mpx_run *r = NULL;
        for (int i = 0; i < g->n_nodes; i++) node_ms[i] = 0.0;
        mpx_run_opts o = {.stream = true, .node_ms = node_ms};
        if (mpx_run_graph(g, a, b->inputs, &o, &r, &err)) return fail("run", &err);
        mpx_run_free(r);
        for (int i = 0; rep >= 0 && i < g->n_nodes; i++) samples[(size_t)i * (size_t)reps + (size_t)rep] = node_ms[i];
    }
    for (int rep = -b->warmup; rep < reps && alone; rep++) {
        if (mpx_exec_start(g, a, b->inputs, vals, &err)) return fail("start", &err);
        for (int i = 0; i < g->n_nodes; i++) {
            const mpx_node *n = g->nodes[i];
            if (mpx_exec_skipped(n)) continue;
            int span = fuse ? mpx_fuse_span(g, i) : 0;
            if (span >= 2) { /* a chain mpx_run_graph runs by tiles: so here, its time shared */
                int end = i + span - 1;
                for (int k = i; k <= end; k++) {
                    const mpx_tensor *t = g->nodes[k]->outputs[0];
                    bool later = (t->flags & MPX_T_OUTPUT) != 0;
                    for (int c = 0; c < t->n_consumers; c++) later = later || t->consumers[c]->index > end;
                    needed[t->index] = later;
                }
                double t0 = now_ms();
                mpx_status st = mpx_fuse_run(g, a, i, span, vals, needed, NULL, &err);
                double dt = (now_ms() - t0) / span;
                for (int k = i; k <= end; k++) needed[g->nodes[k]->outputs[0]->index] = false;
                if (st == MPX_OK) {
                    for (int k = i; rep >= 0 && k <= end; k++) samples[(size_t)k * (size_t)reps + (size_t)rep] = dt;
                    i = end;
                    continue;
                }
                mpx_error_clear(&err); /* as mpx_run_graph: the first node on its own */
            }
            double t0 = now_ms();
            if (mpx_exec_node(n, a, vals, false, outs, NULL, &err)) return fail("node", &err);
            double dt = now_ms() - t0;
            if (rep >= 0) samples[(size_t)i * (size_t)reps + (size_t)rep] = dt;
            for (int k = 0; k < n->n_outputs; k++) {
                const mpx_tensor *t = n->outputs[k];
                if (!t || outs[k].n < 0) {
                    mpx_value_free(&outs[k]);
                    continue;
                }
                mpx_value_free(&vals[t->index]);
                vals[t->index] = outs[k];
            }
        }
        for (int i = 0; i < g->n_tensors; i++) mpx_value_free(&vals[i]);
    }
    for (int i = 0; i < g->n_nodes; i++) node_ms[i] = median(samples + (size_t)i * (size_t)reps, reps);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, "mpx_bench: cannot write %s\n", json);
            return 1;
        }
        fprintf(f, "{\"repeat\": %d, \"nodes\": [", reps);
        bool first = true;
        for (int i = 0; i < g->n_nodes; i++) {
            const mpx_node *n = g->nodes[i];
            if (mpx_exec_skipped(n)) continue;
            fprintf(f, "%s\n {\"name\": ", first ? "" : ",");
            first = false;
            json_str(f, n->name);
            fprintf(f, ", \"op\": ");
            json_str(f, n->op_type);
            fprintf(f, ", \"kind\": ");
            json_str(f, node_kind(n));
            fprintf(f, ", \"outputs\": [");
            for (int k = 0; k < n->n_outputs; k++) {
                if (k) fputs(", ", f);
                json_str(f, n->outputs[k] ? n->outputs[k]->name : "");
            }
            fprintf(f, "], \"ms\": [");
            for (int r = 0; r < reps; r++) fprintf(f, "%s%.4f", r ? ", " : "", samples[(size_t)i * (size_t)reps + (size_t)r]);
            fprintf(f, "]}");
        }
        fprintf(f, "\n]}\n");
        if (fclose(f)) {
            fprintf(stderr, "mpx_bench: cannot write %s\n", json);
            return 1;
        }
    }
    /* per op type */
    const char *types[128];
    double tms[128] = {0}, tmacs[128] = {0};
    int nt = 0, tcount[128] = {0};
    double total = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const mpx_node *n = g->nodes[i];
        if (mpx_exec_skipped(n)) continue;
        const char *kind = node_kind(n);
        int k = 0;
        while (k < nt && strcmp(types[k], kind) != 0) k++;
        if (k == nt && nt < 128) types[nt++] = kind;
        if (k < 128) {
            tms[k] += node_ms[i];
            tmacs[k] += (double)n->cost.macs;
            tcount[k]++;
        }
        total += node_ms[i];
    }
    fprintf(stderr, "total %.2f ms (sum of the nodes' medians over %d runs)\n", total, reps);
    for (int k = 0; k < nt; k++)
        fprintf(stderr, "  %-20s %4d %8.3f ms %5.1f%%  %8.3f GMAC  %6.2f GMAC/s\n", types[k], tcount[k], tms[k],
                100 * tms[k] / total, tmacs[k] / 1e9, tms[k] > 0 ? tmacs[k] / 1e6 / tms[k] : 0.0);
    /* the slowest nodes */
    for (int shown = 0; shown < top; shown++) {
        int best = -1;
        for (int i = 0; i < g->n_nodes; i++)
            if (!mpx_exec_skipped(g->nodes[i]) && node_ms[i] >= 0 && (best < 0 || node_ms[i] > node_ms[best])) best = i;
        if (best < 0) break;
        const mpx_node *n = g->nodes[best];
        const mpx_tensor *x = n->n_inputs ? n->inputs[0] : NULL, *y = n->outputs[0];
        fprintf(stderr, "  %7.2f ms %-14s in %lldx%lldx%lld out %lldx%lldx%lld k%lld g%lld  %6.2f GMAC/s  %s\n",
                node_ms[best], n->op_type, x && x->rank == 4 ? (long long)x->dims[1] : -1LL,
                x && x->rank == 4 ? (long long)x->dims[2] : -1LL,
                x && x->rank == 4 ? (long long)x->dims[3] : -1LL,
                y && y->rank == 4 ? (long long)y->dims[1] : -1LL,
                y && y->rank == 4 ? (long long)y->dims[2] : -1LL,
                y && y->rank == 4 ? (long long)y->dims[3] : -1LL, (long long)n->cost.kernel,
                (long long)n->cost.group,
                node_ms[best] > 0 ? (double)n->cost.macs / 1e6 / node_ms[best] : 0.0, n->name);
        node_ms[best] = -1;
    }
    free(samples);
    free(needed);
    free(node_ms);
    free(vals);
    return 0;
}

/* Multiply-accumulates a report must do: every term of the fp32
 * reference's dot products, and again for each candidate plan's low nodes
 * (they read rounded operands, so none of their terms is the reference's).
 * A lower bound: red nodes downstream of low ones are recomputed too, and
 * nothing else a report does is counted (pooling's sums, elementwise
 * nodes, the metrics). */
static double report_gmacs(const mpx_graph *g, const mpx_assign *const *plans, int n_plans) {
    double m = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const mpx_node *n = g->nodes[i];
        if (mpx_exec_skipped(n) || !dot_product(n->op) || n->cost.macs <= 0) continue;
        int runs = 1;
        for (int p = 0; p < n_plans; p++) runs += plans[p]->node[i].compute != NULL;
        m += (double)runs * (double)n->cost.macs;
    }
    return m / 1e9;
}

static int peak_mode(int argc, char **argv) {
    int threads = 2;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else threads = 0;
    }
    bench_peak_result r;
    if (threads < 1 || bench_peak(threads, &r)) {
        fprintf(stderr, "usage: mpx_bench peak [--threads 1..%d]\n", BENCH_PEAK_MAX_THREADS);
        return 2;
    }
    printf("{\"mode\": \"peak\", \"isa\": \"%s\", \"threads\": %d, \"lanes\": %d, \"seconds\": %.3f, "
           "\"gmacs\": %.2f, \"sink\": %g}\n",
           r.isa, r.threads, r.lanes, r.seconds, r.gmacs, (double)r.sink);
    return 0;
}

/* ---- main ------------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    mpx_numerics_huge_pages(argv); /* glibc's heap on huge pages: may start the program again */
    if (argc >= 2 && strcmp(argv[1], "peak") == 0) return peak_mode(argc, argv);
    mpx_numerics_init(); /* constant folding runs the kernels */
    mpx_numerics_keep_memory(); /* runs again and again: keep freed activations */
    const char *pos[3] = {0}, *out = NULL;
    int n_pos = 0, repeat = 3, warmup = 1, top = 40;
    bool acc16 = false, alone = false;
    unsigned long long seed = 20240601;
    image_kind image = IMAGE_AUTO;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) repeat = atoi(argv[++i]);
        else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (strcmp(argv[i], "--top") == 0 && i + 1 < argc) top = atoi(argv[++i]);
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) out = argv[++i];
        else if (strcmp(argv[i], "--acc16") == 0) acc16 = true;
        else if (strcmp(argv[i], "--alone") == 0) alone = true;
        else if (strcmp(argv[i], "--image") == 0 && i + 1 < argc) {
            i++;
            image = strcmp(argv[i], "page") == 0   ? IMAGE_PAGE
                    : strcmp(argv[i], "line") == 0 ? IMAGE_LINE
                    : strcmp(argv[i], "none") == 0 ? IMAGE_NONE
                                                   : (image_kind)-1;
        } else if (n_pos < 3) pos[n_pos++] = argv[i];
        else n_pos = 99;
    }
    int64_t dims[MPX_MAX_RANK];
    int rank = n_pos == 3 ? mpx_dims_parse(pos[1], dims) : -1;
    const char *mode = pos[2];
    static const char *const modes[] = {"input", "fp32", "report", "report1", "acc16", "rerun",
                                        "profile", "run"};
    bool known = false;
    for (size_t i = 0; mode && i < sizeof modes / sizeof *modes; i++) known |= strcmp(mode, modes[i]) == 0;
    if (rank < 0 || !known || repeat < 1 || warmup < 0 || (int)image < 0 ||
        (strcmp(mode, "input") == 0 && !out)) {
        fprintf(stderr, "usage: mpx_bench <model> <AxBxC> input|fp32|report|report1|acc16|rerun|run|profile "
                        "[--image page|line|none] [--seed N] [--repeat N] [--warmup N] [--top N] [--out FILE] [--acc16] [--alone]\n"
                        "       mpx_bench peak [--threads N]\n");
        return 2;
    }

    mpx_error err;
    mpx_error_clear(&err);
    bench b = {.repeat = repeat, .warmup = warmup};
    double t0 = now_ms();
    b.g = mpx_graph_load(pos[0], &err);
    double load_ms = now_ms() - t0;
    if (!b.g) return fail(pos[0], &err);
    mpx_graph *g = b.g;
    if (g->n_inputs != 1) {
        fprintf(stderr, "mpx_bench: models with one input only (this one has %d)\n", g->n_inputs);
        return 1;
    }
    if (mpx_graph_bind_input(g, g->inputs[0]->name, rank, dims, &err)) return fail("binding", &err);
    if (mpx_graph_infer(g, &err)) return fail("shape inference", &err);
    /* as the REPL's load: the weights' kept forms made before any run */
    t0 = now_ms();
    const size_t prepared = strcmp(mode, "input") != 0 ? mpx_exec_prepare(g) : 0;
    const double prepare_ms = now_ms() - t0;
    mpx_value in = {.n = -1};
    if (mpx_value_alloc(&in, g->inputs[0]->dtype, rank, dims, &err)) return fail("input", &err);
    mpx_rng rng;
    mpx_rng_init(&rng, seed);
    if (image == IMAGE_AUTO) image = rank == 4 && dims[2] > 64 ? IMAGE_PAGE : IMAGE_LINE;
    if (image == IMAGE_NONE) {
        for (int64_t i = 0; i < in.n; i++) in.f[i] = (float)(-1.0 + 2.0 * mpx_rng_unit(&rng));
    } else if (make_image(&rng, image, &in, &err)) {
        return fail("input", &err);
    }
    b.inputs = &in;
    if (strcmp(mode, "input") == 0) {
        if (mpx_npy_write(out, NULL, &in, &err)) return fail(out, &err);
        printf("{\"mode\": \"input\", \"file\": \"%s\"}\n", out);
        return 0;
    }

    mpx_assign *a = NULL, *a2 = NULL;
    mpx_rules *rules = NULL;
    const mpx_node *late = NULL;
    if (strcmp(mode, "acc16") == 0 || (strcmp(mode, "profile") == 0 && acc16)) {
        a = mpx_assign_uniform(g, &mpx_format_fp16, &mpx_format_fp16, true);
        if (!a) return fail("assign", &err);
    } else if (strcmp(mode, "report") == 0 || strcmp(mode, "report1") == 0) {
        if (!(a = plan_assign(g, NULL, &mpx_format_fp16, &err))) return fail("plan fp16", &err);
        if (!(a2 = plan_assign(g, NULL, &mpx_format_bf16, &err))) return fail("plan bf16", &err);
    } else if (strcmp(mode, "rerun") == 0) {
        late = late_layer(g);
        if (!late) {
            fprintf(stderr, "mpx_bench: no Conv, ConvTranspose, Gemm or MatMul to recolour\n");
            return 1;
        }
        char rule[1024];
        snprintf(rule, sizeof rule, "colour name:%s red", late->name);
        rules = mpx_rules_new();
        if (!rules || mpx_rules_add(rules, rule, g, &err)) return fail(rule, &err);
        if (!(a = plan_assign(g, NULL, &mpx_format_fp16, &err))) return fail("plan fp16", &err);
        if (!(a2 = plan_assign(g, rules, &mpx_format_fp16, &err))) return fail("plan", &err);
    }
    if (strcmp(mode, "profile") == 0) {
        /* freed as the other modes free theirs: the sanitizer build's leak
         * check runs bench_check's profile too */
        const int rc = profile(&b, a, top, out, alone);
        mpx_assign_free(a);
        mpx_value_free(&in);
        mpx_graph_free(g);
        return rc;
    }

    b.ms = calloc((size_t)repeat, sizeof *b.ms);
    if (!b.ms) return 1;
    double worst16 = NAN, worstbf = NAN;
    int layers = 0;
    mpx_status st = MPX_OK;
    if (strcmp(mode, "rerun") == 0) { /* the session's first report, not timed */
        b.cache = mpx_compare_cache_new(0);
        if (!b.cache) return fail("cache", &err);
        st = compare_once(&b, a, NULL, NULL, &err);
    }
    for (int r = -warmup; r < repeat && !st; r++) {
        double t = now_ms();
        if (strcmp(mode, "fp32") == 0 || strcmp(mode, "acc16") == 0) {
            st = run_once(&b, a, &err);
        } else if (strcmp(mode, "run") == 0) { /* a session's first run: its cache new */
            mpx_compare_cache_free(b.cache);
            if (!(b.cache = mpx_compare_cache_new(0))) return fail("cache", &err);
            t = now_ms();
            mpx_assign *ar = plan_assign(g, NULL, &mpx_format_fp16, &err);
            if (!ar) return fail("plan fp16", &err);
            st = compare_once(&b, ar, &worst16, &layers, &err);
            mpx_assign_free(ar);
        } else if (strcmp(mode, "report") == 0) {
            st = report_once(&b, a, a2, &worst16, &worstbf, &layers, &err);
        } else if (strcmp(mode, "report1") == 0) { /* one format at a time */
            st = compare_once(&b, a, &worst16, &layers, &err);
            size_t p16 = b.peak_values;
            if (!st) st = compare_once(&b, a2, &worstbf, NULL, &err);
            if (p16 > b.peak_values) b.peak_values = p16;
        } else { /* rerun: recoloured, then back, ... */
            st = compare_once(&b, (r + warmup) % 2 == 0 ? a2 : a, &worst16, &layers, &err);
        }
        if (r >= 0) b.ms[b.n_ms++] = now_ms() - t;
    }
    if (st) return fail(mode, &err);
    if (strcmp(mode, "report") == 0 || strcmp(mode, "report1") == 0) {
        double wmb, lmb;
        fp32_bound(g, &wmb, &lmb);
        snprintf(b.extra, sizeof b.extra,
                 ", \"layers\": %d, \"worst_rel_l2_fp16\": %.6g, \"worst_rel_l2_bf16\": %.6g, "
                 "\"peak_value_mb\": %.1f, \"kept_rounded_mb\": %.1f, \"weights_mb\": %.1f, \"live_fp32_mb\": %.1f, "
                 "\"bound_mb\": %.1f, \"gmacs\": %.9g, \"report_gmacs\": %.9g",
                 layers, worst16, worstbf, (double)b.peak_values / 1048576.0,
                 (double)mpx_numerics_kept_rounded_bytes() / 1048576.0, wmb, lmb, 2 * (wmb + lmb),
                 report_gmacs(g, NULL, 0), report_gmacs(g, (const mpx_assign *const[]){a, a2}, 2));
        if (strcmp(mode, "report") == 0) { /* report1 runs two comparisons: no one split */
            size_t used = strlen(b.extra);
            snprintf(b.extra + used, sizeof b.extra - used,
                     ", \"thread_ms\": {\"ref\": %.1f, \"fp16\": %.1f, \"bf16\": %.1f, \"metrics\": %.1f}",
                     b.job_ms[0], b.job_ms[1], b.job_ms[2], b.job_ms[3]);
        }
    }
    else if (strcmp(mode, "run") == 0)
        snprintf(b.extra, sizeof b.extra,
                 ", \"layers\": %d, \"worst_rel_l2_fp16\": %.6g, \"nodes_run\": %d, "
                 "\"thread_ms\": {\"ref\": %.1f, \"fp16\": %.1f, \"metrics\": %.1f}",
                 layers, worst16, b.n_run, b.job_ms[0], b.job_ms[1], b.job_ms[3]);
    else if (strcmp(mode, "rerun") == 0)
        snprintf(b.extra, sizeof b.extra,
                 ", \"recoloured\": \"%s\", \"node_index\": %d, \"nodes\": %d, \"incremental\": %s, "
                 "\"nodes_recomputed\": %d, \"cache_mb\": %.1f, "
                 "\"thread_ms\": {\"ref\": %.3f, \"fp16\": %.3f, \"metrics\": %.3f}",
                 late->name, late->index, g->n_nodes, b.incremental ? "true" : "false", b.n_run,
                 (double)b.cache_bytes / 1048576.0, b.job_ms[0], b.job_ms[1], b.job_ms[3]);
    printf("{\"mode\": \"%s\", \"model\": \"%s\", \"shape\": \"%s\", \"load_ms\": %.3f, "
           "\"prepare_ms\": %.3f, \"prepared_mb\": %.1f, \"median_ms\": %.3f, \"ms\": [",
           mode, pos[0], pos[1], load_ms, prepare_ms, (double)prepared / 1048576.0, median(b.ms, b.n_ms));
    for (int i = 0; i < b.n_ms; i++) printf("%s%.3f", i ? ", " : "", b.ms[i]);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("], \"peak_rss_mb\": %.1f, \"cpu_user_s\": %.3f, \"cpu_sys_s\": %.3f, \"minor_faults\": %ld%s}\n",
           peak_rss_mb(), (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6, ru.ru_minflt, b.extra);
    mpx_assign_free(a);
    mpx_assign_free(a2);
    mpx_compare_cache_free(b.cache);
    mpx_rules_free(rules);
    free(b.ms);
    mpx_value_free(&in);
    mpx_graph_free(g);
    return 0;
}
