/* mpx_run_model - the mpx half of the ONNX Runtime comparison
 * (tests/ort_compare.sh): load a model, bind input shapes, fill the inputs
 * (seeded uniform values or a synthetic text image, or read from .npy), run
 * the fp32 reference, and write the inputs and every tensor the run computed
 * as .npy into a folder, with a manifest (manifest.tsv: "input"/"tensor",
 * tensor name, file, dtype, shape; and one "run" line: first and minimum run
 * time in ms, run count) that tests/ort_run.js reads. Prints load and run
 * times (the run is timed `repeat` times; the minimum is the figure to
 * compare with ONNX Runtime) and the peak RSS.
 *
 * usage: mpx_run_model <model> <out_dir> [<input>=<AxBxC> | <AxBxC>] ...
 *                      [--seed N] [--range LO HI | --image page|line] [--repeat N]
 *                      [--file <input>=<x.npy> | --file <x.npy>]
 *        mpx_run_model <model> --compare <format> [--local] [--keep-all] [--layers]
 *                      [--threads N]
 *                      [<input>=<AxBxC> | <AxBxC>] ... (same input options)
 * --image: a seeded synthetic text image instead of uniform values (a page
 * for a text detector, a single line for a recogniser or classifier).
 * A bare shape or file binds the model's only input; an input read from a
 * file takes the file's shape.
 *
 * --compare: a per-layer report instead of the .npy dump: every node in
 * <format> (mpx_assign_uniform, keep-io) against the fp32 reference, with
 * mpx_compare_run (streaming: values freed after their last reader), or with
 * --keep-all as two (three with --local) whole mpx_run_graph runs that keep
 * every value. Prints the layer count, the output's and the worst layer's
 * rel_l2, a hash of every layer's metrics (equal in both modes when the
 * results are bit for bit equal), the value bytes at the peak, the peak RSS
 * before and after the run, and the times; --layers also prints one line per
 * layer (node, op, tensor, rel_l2, overflow count, local rel_l2); --threads
 * is mpx_compare_opts.threads (1: one thread). Run each
 * mode in its own process:
 * peak RSS is the process's. */
#include "mpx_numerics.h"
#include "text_image.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static const char *shape_str(const mpx_value *v, char *buf, size_t n) {
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < v->rank && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? "x" : "", (long long)v->dims[i]);
    return buf;
}

/* mkdir -p */
static int mkdir_p(const char *dir) {
    char buf[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof buf) return -1;
    memcpy(buf, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        char c = buf[i];
        buf[i] = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
        buf[i] = c;
    }
    return 0;
}

static int fail(const char *what, const mpx_error *err) {
    char msg[2048];
    fprintf(stderr, "mpx_run_model: %s: %s\n", what, mpx_error_format(err, msg, sizeof msg));
    return 1;
}

/* Inputs not read from files come from one seeded stream, in model-input
 * order: uniform in [lo, hi), or a synthetic text image. */
static mpx_status make_inputs(const mpx_graph *g, uint64_t seed, double lo, double hi,
                              image_kind image, mpx_value *vals, mpx_error *err) {
    mpx_rng rng;
    mpx_rng_init(&rng, seed);
    for (int k = 0; k < g->n_inputs; k++) {
        const mpx_tensor *t = g->inputs[k];
        if (vals[k].n >= 0) continue;
        if (!mpx_dtype_is_float(t->dtype))
            return mpx_error_set(err, MPX_E_UNSUPPORTED,
                                 "input \"%s\" is %s: only float inputs are generated", t->name,
                                 mpx_dtype_name(t->dtype));
        if (t->rank < 0 || t->nelem < 0)
            return mpx_error_set(err, MPX_E_ARG, "input \"%s\" has no bound shape: give <name>=<AxBxC>",
                                 t->name);
        mpx_status st = mpx_value_alloc(&vals[k], t->dtype, t->rank, t->dims, err);
        if (st != MPX_OK) return st;
        if (image != IMAGE_NONE) {
            if ((st = make_image(&rng, image, &vals[k], err)) != MPX_OK) return st;
            continue;
        }
        for (int64_t i = 0; i < vals[k].n; i++) {
            double x = lo + (hi - lo) * mpx_rng_unit(&rng);
            if (vals[k].d) vals[k].d[i] = x;
            else vals[k].f[i] = (float)x;
        }
    }
    return MPX_OK;
}

/* ---- --compare ------------------------------------------------------------------- */

static double peak_rss_mb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

/* FNV-1a over every layer's tensor, metrics and local metrics: two modes
 * that agree bit for bit print the same hash. */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

typedef struct compare_report {
    int n_layers;
    uint64_t hash;
    double out_rel, worst_rel, worst_local;
    const char *worst;
    size_t bytes;
    double ms_ref, ms_cand, ms_local, ms_metrics;
} compare_report;

static bool print_layers;

static void report_layer(compare_report *r, const mpx_graph *g, const mpx_layer *L) {
    if (print_layers) {
        const mpx_node *n = g->nodes[L->node];
        printf("layer\t%s\t%s\t%s\t%.4g\t%lld", n->name, n->op_type, g->tensors[L->tensor]->name,
               L->m.rel_l2, (long long)L->m.overflow);
        if (L->has_local) printf("\t%.4g", L->local.rel_l2);
        printf("\n");
    }
    r->n_layers++;
    r->hash = hash_bytes(r->hash, &L->tensor, sizeof L->tensor);
    r->hash = hash_bytes(r->hash, &L->m, sizeof L->m);
    if (L->has_local) r->hash = hash_bytes(r->hash, &L->local, sizeof L->local);
    if (g->tensors[L->tensor]->flags & MPX_T_OUTPUT) r->out_rel = L->m.rel_l2;
    if (!r->worst || L->m.rel_l2 > r->worst_rel || isnan(L->m.rel_l2)) {
        r->worst_rel = L->m.rel_l2;
        r->worst = g->tensors[L->tensor]->name;
    }
    if (L->has_local && L->local.rel_l2 > r->worst_local) r->worst_local = L->local.rel_l2;
}

static size_t run_bytes(const mpx_run *r) {
    size_t b = 0;
    for (int i = 0; r && i < r->n; i++) b += mpx_value_bytes(&r->vals[i]);
    return b;
}

/* What the first, non-streaming comparison did: whole runs, every value
 * kept, then the metrics. */
static mpx_status compare_keep_all(const mpx_graph *g, const mpx_assign *a,
                                   const mpx_value *inputs, bool local, compare_report *r,
                                   mpx_error *err) {
    mpx_run *ref = NULL, *cand = NULL, *loc = NULL;
    mpx_status st = mpx_run_graph(g, NULL, inputs, NULL, &ref, err);
    if (st == MPX_OK) st = mpx_run_graph(g, a, inputs, NULL, &cand, err);
    mpx_run_opts lo = {.local_ref = ref};
    if (st == MPX_OK && local) st = mpx_run_graph(g, a, inputs, &lo, &loc, err);
    if (st != MPX_OK) goto done;
    r->ms_ref = ref->ms;
    r->ms_cand = cand->ms;
    r->ms_local = loc ? loc->ms : 0.0;
    r->bytes = run_bytes(ref) + run_bytes(cand) + run_bytes(loc);
    double t0 = now_ms();
    for (int ni = 0; ni < g->n_nodes && st == MPX_OK; ni++) {
        const mpx_node *n = g->nodes[ni];
        for (int k = 0; k < n->n_outputs && st == MPX_OK; k++) {
            const mpx_tensor *t = n->outputs[k];
            if (!t || (t->flags & MPX_T_CONSTANT)) continue;
            const mpx_value *rv = &ref->vals[t->index], *cv = &cand->vals[t->index];
            if (rv->n < 0 || cv->n < 0 || (!rv->f && !rv->d) || (!cv->f && !cv->d)) continue;
            mpx_layer L = {.tensor = t->index, .node = n->index};
            const mpx_format *f = a->tensor[t->index];
            L.fmt = f && f->kind != MPX_FMT_FP32 ? f : NULL;
            st = mpx_metrics_compute(rv, cv, L.fmt, &L.m, err);
            if (st == MPX_OK && loc && loc->vals[t->index].n >= 0) {
                st = mpx_metrics_compute(rv, &loc->vals[t->index], L.fmt, &L.local, err);
                L.has_local = true;
            }
            if (st == MPX_OK) report_layer(r, g, &L);
        }
    }
    r->ms_metrics = now_ms() - t0;
done:
    mpx_run_free(ref);
    mpx_run_free(cand);
    mpx_run_free(loc);
    return st;
}

static int run_compare(const mpx_graph *g, const mpx_value *inputs, const mpx_format *f,
                       bool local, bool keep_all, int threads) {
    mpx_error err;
    mpx_error_clear(&err);
    mpx_assign *a = mpx_assign_uniform(g, f, NULL, true);
    if (!a) {
        fprintf(stderr, "mpx_run_model: mpx_assign_uniform failed\n");
        return 1;
    }
    compare_report r = {.hash = 14695981039346656037ull};
    double rss0 = peak_rss_mb(), t0 = now_ms();
    mpx_status st;
    if (keep_all) {
        st = compare_keep_all(g, a, inputs, local, &r, &err);
    } else {
        mpx_compare_opts o = {.local = local, .threads = threads};
        mpx_compare *c = NULL;
        st = mpx_compare_run(g, a, inputs, &o, &c, &err);
        if (st == MPX_OK) {
            for (int i = 0; i < c->n_layers; i++) report_layer(&r, g, &c->layers[i]);
            r.bytes = c->peak_bytes;
            r.ms_ref = c->ms_ref;
            r.ms_cand = c->ms_cand;
            r.ms_local = c->ms_local;
            r.ms_metrics = c->ms_metrics;
        }
        mpx_compare_free(c);
    }
    double total = now_ms() - t0;
    mpx_assign_free(a);
    if (st != MPX_OK) return fail("compare", &err);
    printf("mpx_run_model: compare %s%s, %s: %d layers, output rel_l2 %.4g, worst layer rel_l2 "
           "%.4g (%s)",
           f->name, local ? " with local" : "", keep_all ? "keep-all" : "streaming", r.n_layers,
           r.out_rel, r.worst_rel, r.worst ? r.worst : "-");
    if (local) printf(", worst local rel_l2 %.4g", r.worst_local);
    printf("; metrics hash %016llx\n", (unsigned long long)r.hash);
    printf("mpx_run_model: peak value bytes %zu (%.1f MB); peak RSS %.1f MB before the run, "
           "%.1f MB after\n",
           r.bytes, (double)r.bytes / 1048576.0, rss0, peak_rss_mb());
    printf("mpx_run_model: times: reference %.1f ms, candidate %.1f ms, local %.1f ms, metrics "
           "%.1f ms, total %.1f ms\n",
           r.ms_ref, r.ms_cand, r.ms_local, r.ms_metrics, total);
    return 0;
}

int main(int argc, char **argv) {
    mpx_numerics_init(); /* constant folding runs the kernels */
    const char *model = NULL, *out = NULL;
    const char *specs[64], *files[64], *positional[66];
    int n_specs = 0, n_files = 0, n_pos = 0, repeat = 1;
    const char *compare = NULL;
    bool local = false, keep_all = false;
    int threads = 0;
    unsigned long long seed = 1;
    double lo = -1.0, hi = 1.0;
    image_kind image = IMAGE_NONE;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) repeat = atoi(argv[++i]);
        else if (strcmp(argv[i], "--file") == 0 && i + 1 < argc && n_files < 64)
            files[n_files++] = argv[++i];
        else if (strcmp(argv[i], "--image") == 0 && i + 1 < argc) {
            i++;
            image = strcmp(argv[i], "page") == 0 ? IMAGE_PAGE
                    : strcmp(argv[i], "line") == 0 ? IMAGE_LINE : (image_kind)-1;
        }
        else if (strcmp(argv[i], "--range") == 0 && i + 2 < argc) {
            lo = atof(argv[++i]);
            hi = atof(argv[++i]);
        } else if (strcmp(argv[i], "--compare") == 0 && i + 1 < argc) compare = argv[++i];
        else if (strcmp(argv[i], "--local") == 0) local = true;
        else if (strcmp(argv[i], "--keep-all") == 0) keep_all = true;
        else if (strcmp(argv[i], "--layers") == 0) print_layers = true;
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else if (n_pos < 66) positional[n_pos++] = argv[i];
    }
    /* A comparison writes no files: everything after the model is a shape. */
    int first_spec = compare ? 1 : 2;
    if (n_pos > 0) model = positional[0];
    if (!compare && n_pos > 1) out = positional[1];
    for (int i = first_spec; i < n_pos && n_specs < 64; i++) specs[n_specs++] = positional[i];
    const mpx_format *cmp_fmt = compare ? mpx_format_by_name(compare) : NULL;
    if (!model || (!compare && !out) || (compare && !cmp_fmt) || repeat < 1 || !(lo < hi) ||
        (int)image < 0) {
        fprintf(stderr, "usage: mpx_run_model <model> <out_dir> [<input>=<AxBxC> | <AxBxC>] ... "
                        "[--seed N] [--range LO HI | --image page|line] [--repeat N] "
                        "[--file [<input>=]<x.npy>]\n"
                        "       mpx_run_model <model> --compare <format> [--local] [--keep-all] [--layers] "
                        "[--threads N] "
                        "[<input>=<AxBxC> | <AxBxC>] ... (input options as above)\n");
        return 2;
    }
    if (!compare && mkdir_p(out) != 0) {
        fprintf(stderr, "mpx_run_model: cannot create %s: %s\n", out, strerror(errno));
        return 1;
    }

    mpx_error err;
    mpx_error_clear(&err);
    double t0 = now_ms();
    mpx_graph *g = mpx_graph_load(model, &err);
    double load_ms = now_ms() - t0;
    if (!g) return fail(model, &err);

    int rc = 1;
    mpx_value *inputs = calloc((size_t)g->n_inputs + 1, sizeof *inputs);
    mpx_assign *a = NULL;
    mpx_run *run = NULL;
    FILE *man = NULL;
    if (!inputs) goto done;
    for (int k = 0; k < g->n_inputs; k++) inputs[k].n = -1;

    for (int i = 0; i < n_specs; i++) {
        char name[512];
        const char *eq = strchr(specs[i], '=');
        int64_t dims[MPX_MAX_RANK];
        int rank = mpx_dims_parse(eq ? eq + 1 : specs[i], dims);
        if (eq) {
            snprintf(name, sizeof name, "%.*s", (int)(eq - specs[i]), specs[i]);
        } else if (g->n_inputs == 1) {
            snprintf(name, sizeof name, "%s", g->inputs[0]->name);
        } else {
            fprintf(stderr, "mpx_run_model: '%s': the model has %d inputs, name the one to bind\n",
                    specs[i], g->n_inputs);
            goto done;
        }
        if (rank < 0) {
            fprintf(stderr, "mpx_run_model: bad shape in '%s' (want AxBxC)\n", specs[i]);
            goto done;
        }
        if (mpx_graph_bind_input(g, name, rank, dims, &err) != MPX_OK) {
            fail("binding input", &err);
            goto done;
        }
    }
    for (int i = 0; i < n_files; i++) {
        const char *eq = strchr(files[i], '=');
        int k = -1;
        if (!eq && g->n_inputs == 1) k = 0;
        for (int j = 0; eq && j < g->n_inputs; j++)
            if (strlen(g->inputs[j]->name) == (size_t)(eq - files[i]) &&
                strncmp(g->inputs[j]->name, files[i], (size_t)(eq - files[i])) == 0)
                k = j;
        if (k < 0 || inputs[k].n >= 0) {
            fprintf(stderr, "mpx_run_model: '%s' names no unbound model input\n", files[i]);
            goto done;
        }
        if (mpx_npy_read(eq ? eq + 1 : files[i], &inputs[k], &err) != MPX_OK ||
            mpx_value_hold_as(&inputs[k], g->inputs[k]->dtype, &err) != MPX_OK) {
            fail("reading an input", &err);
            goto done;
        }
        if (mpx_graph_bind_input(g, g->inputs[k]->name, inputs[k].rank, inputs[k].dims, &err) !=
            MPX_OK) {
            fail("binding input", &err);
            goto done;
        }
    }
    if (mpx_graph_infer(g, &err) != MPX_OK) {
        fail("shape inference", &err);
        goto done;
    }
    if (make_inputs(g, seed, lo, hi, image, inputs, &err) != MPX_OK) {
        fail("inputs", &err);
        goto done;
    }
    if (compare) {
        printf("mpx_run_model: load %.1f ms\n", load_ms);
        rc = run_compare(g, inputs, cmp_fmt, local, keep_all, threads);
        goto done;
    }
    a = mpx_assign_uniform(g, NULL, NULL, true);
    if (!a) {
        fprintf(stderr, "mpx_run_model: mpx_assign_uniform failed\n");
        goto done;
    }
    /* The first run's values are written; further runs only time. */
    double first_ms = 0.0, min_ms = 0.0;
    for (int r = 0; r < repeat; r++) {
        mpx_run *cur = NULL;
        double t = now_ms();
        if (mpx_run_graph(g, a, inputs, NULL, &cur, &err) != MPX_OK) {
            fail("run", &err);
            goto done;
        }
        double ms = now_ms() - t;
        if (r == 0) {
            run = cur;
            first_ms = min_ms = ms;
        } else {
            if (ms < min_ms) min_ms = ms;
            mpx_run_free(cur);
        }
    }

    char path[4096], shape[256];
    snprintf(path, sizeof path, "%s/manifest.tsv", out);
    man = fopen(path, "w");
    if (!man) {
        fprintf(stderr, "mpx_run_model: cannot write %s: %s\n", path, strerror(errno));
        goto done;
    }
    fprintf(man, "run\t%.3f\t%.3f\t%d\n", first_ms, min_ms, repeat);
    int written = 0, missing = 0;
    for (int k = 0; k < g->n_inputs; k++) {
        char file[64];
        snprintf(file, sizeof file, "input_%d.npy", k);
        snprintf(path, sizeof path, "%s/%s", out, file);
        if (mpx_npy_write(path, NULL, &inputs[k], &err) != MPX_OK) {
            fail("writing input", &err);
            goto done;
        }
        fprintf(man, "input\t%s\t%s\t%s\t%s\n", g->inputs[k]->name, file,
                mpx_dtype_name(inputs[k].dtype), shape_str(&inputs[k], shape, sizeof shape));
    }
    /* Node outputs only: weights are the model's, not something mpx computed. */
    for (int i = 0; i < g->n_tensors; i++) {
        const mpx_tensor *t = g->tensors[i];
        if (!t->producer) continue;
        const mpx_value *v = &run->vals[t->index];
        if (v->n < 0) {
            missing++;
            continue;
        }
        if (v->is_seq) continue; /* a sequence: no .npy; its items come out as tensors */
        char file[64];
        snprintf(file, sizeof file, "t%d.npy", t->index);
        snprintf(path, sizeof path, "%s/%s", out, file);
        if (mpx_npy_write(path, NULL, v, &err) != MPX_OK) {
            fail("writing a tensor", &err);
            goto done;
        }
        fprintf(man, "tensor\t%s\t%s\t%s\t%s\n", t->name, file, mpx_dtype_name(v->dtype),
                shape_str(v, shape, sizeof shape));
        written++;
    }
    if (fclose(man) != 0) {
        man = NULL;
        fprintf(stderr, "mpx_run_model: writing the manifest failed\n");
        goto done;
    }
    man = NULL;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("mpx_run_model: load %.1f ms, fp32 reference run %.1f ms (first), %.1f ms (min of %d); "
           "%d tensors written, %d node outputs not kept; peak RSS %.1f MB\n",
           load_ms, first_ms, min_ms, repeat, written, missing, (double)ru.ru_maxrss / 1024.0);
    rc = 0;
done:
    if (man) fclose(man);
    if (run) mpx_run_free(run);
    if (a) mpx_assign_free(a);
    if (inputs)
        for (int k = 0; k < g->n_inputs; k++) mpx_value_free(&inputs[k]);
    free(inputs);
    mpx_graph_free(g);
    return rc;
}
