/* session.c - the session's life, shared helpers, the one command table,
 * help and dispatch.
 *
 * One table drives dispatch, `help` and completion: adding a command is
 * adding a row (the handlers live in cmd_*.c, grouped by subject). */
#include "repl_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

void mpx_session_init(mpx_session *s, FILE *out) {
    memset(s, 0, sizeof *s);
    s->out = out;
    s->info = out;
    s->bail = true;
    s->pager = true;
    s->report_top = 20;
    s->cache_mb = 512;
}

void repl_drop_run(mpx_session *s) {
    mpx_compare_free(s->last);
    s->last = NULL;
    for (int i = 0; i < s->n_stash; i++) mpx_compare_free(s->stash[i].cmp);
    s->n_stash = 0;
    free(s->absmax);
    s->absmax = NULL;
    mpx_compare_cache_free(s->run_cache);
    s->run_cache = NULL;
    repl_drop_sample_caches(s);
}

void repl_drop_sample_caches(mpx_session *s) {
    for (int i = 0; i < s->n_sample_cache; i++) mpx_compare_cache_free(s->sample_cache[i]);
    free(s->sample_cache);
    s->sample_cache = NULL;
    s->n_sample_cache = 0;
}

void mpx_session_free(mpx_session *s) {
    repl_drop_run(s);
    mpx_plan_free(s->plan);
    s->plan = NULL;
    mpx_history_free(s->hist);
    s->hist = NULL;
    mpx_graph_free(s->graph);
    s->graph = NULL;
    free(s->specs);
    s->specs = NULL;
    s->n_specs = 0;
    repl_data_free(s->data);
    s->data = NULL;
}

void repl_after_plan_change(mpx_session *s) {
    if (s->on_plan_change) s->on_plan_change(s);
}

mpx_status repl_set_graph(mpx_session *s, mpx_graph *g, const char *path, bool fresh, mpx_error *err) {
    mpx_history *h = NULL;
    if (fresh || !s->hist) {
        /* A new model starts with no rules; the plan options stay. */
        h = mpx_history_new(s->hist ? mpx_history_opts(s->hist) : NULL);
        if (!h) {
            mpx_graph_free(g);
            return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        }
    }
    const mpx_history *use = h ? h : s->hist;
    mpx_plan *p = NULL;
    mpx_status st = mpx_plan_build(g, mpx_history_rules(use), mpx_history_opts(use), NULL, &p, err);
    if (st) {
        mpx_history_free(h);
        mpx_graph_free(g);
        return st;
    }
    repl_drop_run(s);
    mpx_plan_free(s->plan);
    s->plan = p;
    if (h) {
        mpx_history_free(s->hist);
        s->hist = h;
    }
    if (fresh) {
        free(s->specs);
        s->specs = NULL;
        s->n_specs = 0;
        repl_data_free(s->data); /* its files name another model's inputs */
        s->data = NULL;
    }
    mpx_graph_free(s->graph);
    s->graph = g;
    if (path != s->model_path) snprintf(s->model_path, sizeof s->model_path, "%s", path);
    repl_after_plan_change(s);
    return MPX_OK;
}

void repl_json_exact(cJSON *obj, const char *key, double v, const char *nonfinite) {
    char buf[64];
    if (isfinite(v)) snprintf(buf, sizeof buf, "%.17g", v);
    else if (nonfinite) snprintf(buf, sizeof buf, "%s", nonfinite);
    else snprintf(buf, sizeof buf, "\"%s\"", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
    cJSON_AddItemToObject(obj, key, cJSON_CreateRaw(buf));
}

mpx_status repl_parse_shard(const char *text, const char *opt, int *k, int *n, mpx_error *err) {
    int a = 0, b = 0;
    char extra;
    if (sscanf(text, "%d/%d%c", &a, &b, &extra) != 2 || b < 1 || a < 1 || a > b)
        return mpx_error_set(err, MPX_E_ARG, "%s %s: k/n with 1 <= k <= n (e.g. %s 2/4)", opt, text, opt);
    *k = a;
    *n = b;
    return MPX_OK;
}

mpx_status repl_need_model(const mpx_session *s, mpx_error *err) {
    if (!s->graph) return mpx_error_set(err, MPX_E_ARG, "no model loaded (use: load <file.onnx|file.json>)");
    return MPX_OK;
}

mpx_status repl_parse_shape(const char *text, int *rank, int64_t *dims, mpx_error *err) {
    int r = 0;
    const char *p = text;
    while (*p) {
        if (r == MPX_MAX_RANK)
            return mpx_error_set(err, MPX_E_ARG, "shape \"%s\" has more than %d dims", text, MPX_MAX_RANK);
        if (*p < '0' || *p > '9')
            return mpx_error_set(err, MPX_E_ARG, "bad shape \"%s\": expected a number at \"%s\"", text, p);
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno == ERANGE || v > MPX_MAX_ELEMS)
            return mpx_error_set(err, MPX_E_ARG, "bad shape \"%s\": dim %d is too large", text, r);
        dims[r++] = v;
        p = end;
        if (*p == 'x' || *p == 'X' || *p == ',') {
            p++;
            if (!*p) return mpx_error_set(err, MPX_E_ARG, "bad shape \"%s\": ends with a separator", text);
        } else if (*p) {
            return mpx_error_set(err, MPX_E_ARG, "bad shape \"%s\": unexpected \"%c\"", text, *p);
        }
    }
    if (r == 0) return mpx_error_set(err, MPX_E_ARG, "empty shape");
    *rank = r;
    return MPX_OK;
}

double repl_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

const char *repl_human(int64_t v, char *buf, size_t n) {
    if (v < 0) snprintf(buf, n, "?");
    else if (v >= 1000000000) snprintf(buf, n, "%.2fG", (double)v / 1e9);
    else if (v >= 1000000) snprintf(buf, n, "%.2fM", (double)v / 1e6);
    else if (v >= 10000) snprintf(buf, n, "%.1fK", (double)v / 1e3);
    else snprintf(buf, n, "%lld", (long long)v);
    return buf;
}


mpx_status repl_parse_number(const char *text, const char *what, double *out, mpx_error *err) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno == ERANGE)
        return mpx_error_set(err, MPX_E_ARG, "%s: \"%s\" is not a number", what, text);
    switch (*end) {
    case 'K': case 'k': v *= 1e3; end++; break;
    case 'M': v *= 1e6; end++; break;
    case 'G': v *= 1e9; end++; break;
    default: break;
    }
    if (*end || isnan(v))
        return mpx_error_set(err, MPX_E_ARG, "%s: \"%s\" is not a number", what, text);
    *out = v;
    return MPX_OK;
}

/* Below the current folder: relative, and no ".." step. */
static bool below_cwd(const char *path) { return path[0] != '/' && !mpx_path_has_dotdot(path); }

mpx_status repl_make_parent(const mpx_session *s, const char *path, mpx_error *err) {
    struct stat out_st, model_st;
    if (s && s->model_path[0] && stat(path, &out_st) == 0 && stat(s->model_path, &model_st) == 0 &&
        out_st.st_dev == model_st.st_dev && out_st.st_ino == model_st.st_ino)
        return mpx_error_set(err, MPX_E_ARG, "%s is the model this session loaded: write to another file",
                             path);
    char dir[1024];
    if (strlen(path) >= sizeof dir) return mpx_error_set(err, MPX_E_ARG, "path too long: %s", path);
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return MPX_OK;
    *slash = '\0';
    /* mkdir -p, but only below the current folder: a typo in an absolute
     * path must not grow folders under / or $HOME (`svg /nonexisting/x.svg`). */
    bool may_create = below_cwd(path);
    for (char *p = dir + 1;; p++) {
        if (*p == '/' || !*p) {
            char c = *p;
            *p = '\0';
            struct stat st;
            if (stat(dir, &st) == 0) {
                if (!S_ISDIR(st.st_mode))
                    return mpx_error_set(err, MPX_E_IO, "cannot write %s: %s is not a folder", path, dir);
            } else if (!may_create) {
                return mpx_error_set(err, MPX_E_IO,
                                     "cannot write %s: the folder %s does not exist (mpx creates folders "
                                     "only below the current one)", path, dir);
            } else if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
                return mpx_error_set(err, MPX_E_IO, "cannot create folder %s for %s: %s", dir, path, strerror(errno));
            }
            *p = c;
            if (!c) break;
        }
    }
    return MPX_OK;
}

mpx_status repl_write_file(const mpx_session *s, const char *path, const char *text, mpx_error *err) {
    mpx_status mk = repl_make_parent(s, path, err);
    if (mk) return mk;
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return mpx_error_set(err, MPX_E_IO, "cannot write %s: %s", path, strerror(errno));
    bool ok = fputs(text, f) >= 0;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return mpx_error_set(err, MPX_E_IO, "cannot write %s: %s", path, strerror(e));
    }
    return MPX_OK;
}

mpx_status repl_emit(mpx_session *s, char *text, const char *path, mpx_error *err) {
    if (!text) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    mpx_status st = MPX_OK;
    if (path) {
        size_t n = strlen(text);
        bool nl = n && text[n - 1] == '\n';
        if (!nl) {
            char *t2 = realloc(text, n + 2);
            if (!t2) {
                free(text);
                return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
            }
            text = t2;
            text[n] = '\n';
            text[n + 1] = '\0';
        }
        st = repl_write_file(s, path, text, err);
        if (!st) fprintf(s->info, "wrote %s\n", path);
    } else {
        fputs(text, s->out);
        size_t n = strlen(text);
        if (!n || text[n - 1] != '\n') fputc('\n', s->out);
    }
    free(text);
    return st;
}

static mpx_status cmd_help(mpx_session *s, int argc, char **argv, mpx_error *err);

static mpx_status cmd_quit(mpx_session *s, int argc, char **argv, mpx_error *err) {
    (void)argc;
    (void)argv;
    (void)err;
    s->quit = true;
    return MPX_OK;
}

static const mpx_command commands[] = {
    {"load", "load <file.onnx|file.json>", "load a model (the previous one stays if this fails)",
     "Loads an ONNX model or an mpx JSON model. Inputs keep their symbolic dims until\n"
     "bound with `input`. A model that fails to load leaves the session unchanged.",
     repl_cmd_load},
    {"input", "input <name> shape <AxBxC> | random [normal|uniform] [<a> <b>] [seed <n>] | const <v> | file <x.npy> [convert] | image <file> [size <H>x<W>] [layout nchw|nhwc] [channels rgb|bgr|gray] [scale <s>] [mean <a,b,c>] [std <a,b,c>] | audio <file> [rate <hz>] [length <n>] [scale <s>]",
     "bind an input's shape, or say how its values are made",
     "shape: binds the input's dims (replacing symbolic ones such as\n"
     "p2o.DynamicDimension.0), then infers every tensor's shape and each node's cost\n"
     "figures; a shape that does not fit the model is refused and the previous\n"
     "binding stays.\n"
     "random: normal(mean, std) (default 0 1) or uniform [low, high) (default 0 1),\n"
     "seeded (default seed 0): the same seed gives the same values on every machine.\n"
     "const: every element the value. file: a NumPy .npy file, whose shape is bound;\n"
     "integer arrays feed a float input only with `convert` (each to the nearest float).\n"
     "image: a PNG or JPEG (libpng, libjpeg-turbo); value = (pixel/255*scale - mean)/std\n"
     "per channel (default 1, 0, 1; mean/std take 1 or 3 values). The shape follows the\n"
     "input: rank 4 gets batch 1, layout nchw unless the input's last dim is 1 or 3\n"
     "(nhwc), channels gray for a 1-channel input else rgb; alpha is dropped, gray from\n"
     "colour is 0.299R+0.587G+0.114B. size resizes (bilinear, half-pixel centres, no\n"
     "antialiasing) only when it differs from the file.\n"
     "audio: WAV, FLAC, OGG... (libsndfile), channels averaged, values in [-1, 1) times\n"
     "scale (32768: int16 range); rate resamples (libsamplerate, best sinc); length\n"
     "pads with zeros or cuts. Shape [n], [1, n] or [1, 1, n] by the input's rank.\n"
     "A file whose shape differs from the bound one binds its shape (and says so).\n"
     "An input never set is random normal(0, 1), seed 0.",
     repl_cmd_input},
    {"data", "data [<file.npz>|<folder>|'<glob>' [stacked] [limit <n>] [shuffle <seed>] | off]",
     "run over many samples: an .npz, a folder or glob of .npz files or sample folders",
     "An .npz whose keys are input names is one sample (stacked: its arrays have a\n"
     "leading sample axis, one sample per index). A folder or glob of .npz files gives\n"
     "one sample each; a folder of folders one sample per folder, each holding\n"
     "<input>.npy, .png, .jpg or .wav files (images and audio with the options of the\n"
     "input's own `input <name> image|audio` line). For one input's files:\n"
     "input <name> files '<glob>' npy|image|audio [options]. Files are taken in name\n"
     "order (shuffle <seed>: a seeded shuffle first), then the first <limit>; more than\n"
     "100000 files need a limit. Inputs a sample does not hold keep their own specs.\n"
     "The first sample's shapes are bound; every sample must share them.\n"
     "run, report, assert, search and sweep then go over every sample, one at a time:\n"
     "each layer's figures are its worst over the samples (report names the sample),\n"
     "absmax rules see the largest value over all samples. data off: back to one run.",
     repl_cmd_data},
    {"stats", "stats [--top <n> | --all] [--save <ranges.json>] | stats --load <ranges.json>",
     "every tensor's range in the fp32 reference, over all samples (calibration)",
     "Runs the fp32 reference on the inputs (every sample of a data set, one at a\n"
     "time) and shows per tensor min, max, absmax and the 99th and 99.9th percentile\n"
     "of |x|, largest absmax first, marking those beyond the target's largest finite\n"
     "value. Percentiles come from a histogram with 8 bins per power of two: the\n"
     "bin's upper edge, at most 9% above the true value. absmax rules (colour ... when\n"
     "absmax > ...) then use these ranges. --save writes them as JSON; --load reads\n"
     "such a file into the plan's absmax rules without running anything (the tensors\n"
     "must be the model's).",
     repl_cmd_stats},
    {"info", "info", "model summary: opset, node and parameter counts, inputs, outputs", NULL, repl_cmd_info},
    {"ops", "ops [--json [<file>]]", "per op type: nodes, parameters, MACs",
     "Lists each op type with its node count, weight elements and multiply-accumulates.\n"
     "--json prints (or writes) {\"ops\": [{\"op\", \"supported\", \"count\", \"params\",\n"
     "\"macs\"}...], \"nodes\", \"params\"}.",
     repl_cmd_ops},
    {"show", "show <node>", "a node: op, inputs and outputs with shapes, attributes, cost figures", NULL,
     repl_cmd_show},
    {"target", "target [<format> [block <k>]]", "the low-precision format (see: help target)",
     "Sets the format green nodes (and gray/clear nodes that follow them) run in.\n"
     "block k: a low accumulation format rounds the running sum after each block of k\n"
     "terms (summed in fp32) instead of after every addition (block 0, the default).\n"
     "Without arguments prints the current target.",
     repl_cmd_target},
    {"keep-io", "keep-io [on|off]", "keep model inputs and outputs in their declared type (default on)", NULL,
     repl_cmd_keep_io},
    {"colour", "colour <selector> <colour> [when <expr> [else <colour>]]", "recolour nodes: green gray clear red",
     "selector: op types separated by commas (Conv,Gemm), * for every node, or\n"
     "name:<glob> (name:/backbone/*). colour: green (always low), gray (low when all\n"
     "float inputs arrive low), clear (follows its inputs), red (always fp32).\n"
     "when: comparisons of node figures - macs params in_elems out_elems in_ch out_ch\n"
     "kernel group k attr.<name>, and absmax (largest |fp32 output| of the last run) -\n"
     "with and/or/not and parentheses; numbers like 1e6, 1M, 64K. Nodes the condition\n"
     "does not hold for keep what earlier rules gave them, unless `else` says.\n"
     "Later rules override earlier ones. Example: colour Conv green when macs >= 1M else gray",
     repl_cmd_rule},
    {"color", "color <selector> <colour> [when <expr> [else <colour>]]", "same as colour", NULL, repl_cmd_rule},
    {"accum", "accum <selector> <format> [when <expr> [else <format>]]",
     "the accumulation format of dot products and sums (default fp32)",
     "Selectors and conditions as for colour. With fp16 or bf16 the running sum of\n"
     "Conv, Gemm, MatMul, reductions and Softmax's sum is rounded after every addition\n"
     "(or every block: see target).",
     repl_cmd_rule},
    {"rules", "rules [--json]", "the rules in order, with how many nodes each selects and sets", NULL,
     repl_cmd_rules},
    {"unrule", "unrule <n>", "remove rule n (numbers as `rules` shows them)", NULL, repl_cmd_unrule},
    {"undo", "undo", "undo the last change of rules, target or keep-io", NULL, repl_cmd_undo},
    {"redo", "redo", "redo what undo undid", NULL, repl_cmd_undo},
    {"plan", "plan [--changed] [--json [<file>]]", "every node's colour and formats, the casts, the summary",
     "--changed lists only nodes a rule decided or whose colour differs from its\n"
     "default. --json: {\"target\", \"keep_io\", \"counts\": {green, gray, clear, red,\n"
     "casts, weights_converted, weight_bytes_before, weight_bytes_after,\n"
     "low_macs_pct}, \"nodes\": [{name, op, colour, default, rule, compute, accum,\n"
     "output}], \"casts\": [{tensor, from, to, consumers}]}.",
     repl_cmd_plan},
    {"diff", "diff [--json]", "what the last change did: nodes recoloured, casts added and removed",
     "--json: {\"nodes\": [{name, op, colour_before, colour_after, compute_before,\n"
     "compute_after}], \"casts_added\", \"casts_removed\": [{tensor, from, to}],\n"
     "\"casts_before\", \"casts_after\"}.",
     repl_cmd_diff},
    {"why", "why <node>", "how a node got its colour and formats: default, rules, propagation", NULL,
     repl_cmd_why},
    {"run", "run [--local] [--keep <tensor,...>] [--samples <k>/<n>]", "run the plan against the fp32 reference, layer by layer",
     "Runs the inputs (see input) through the fp32 reference and through the plan's\n"
     "emulated formats side by side and compares every float tensor a node computes\n"
     "(rel_l2, max_abs, mean_abs, cos, sqnr_db, overflow, underflow, subnormal).\n"
     "--local also feeds each node the reference values of its inputs (in its\n"
     "formats), separating a layer's own error from what it inherits. --keep keeps\n"
     "those tensors' values for `tensor` (model outputs are always kept). Ctrl-C\n"
     "stops a run; the session stays as it was. With a data set (see data) every\n"
     "sample is run, one at a time; `tensor` shows the sample whose output is worst.\n"
     "--samples k/n runs only samples i with i % n == k-1: a shard, whose report\n"
     "--json `merge` joins with the others into the unsharded run's report.",
     repl_cmd_run},
    {"report", "report [--top <n> | --all] [--sort <metric>] [--sample <k> | --samples] [--json [<file>] | --csv [<file>]]",
     "per-layer error of the last run, worst first",
     "metric: one of the metrics listed below (default rel_l2), local (the node's own\n"
     "rel_l2; needs run --local) or order (graph order). The terminal shows the\n"
     "top rows (set top <n>); --json and --csv give every row unless --top. --json:\n"
     "{\"target\", \"local\", \"sort\", \"overflow\", \"underflow\", \"layers\": [{tensor, node, op, order, format, output, metrics:\n"
     "{the real metrics, absmax_ref, the counts, n}, local: {...}}]}; inf and NaN are\n"
     "written as strings.\n"
     "After a run over a data set (see data): each layer's figures are its worst over\n"
     "the samples, with the sample of its worst rel_l2 and the mean rel_l2; JSON adds\n"
     "\"samples\" (their files) and per layer worst_sample, mean and per_sample; CSV adds\n"
     "worst_sample and mean_rel_l2. --sample k: sample k's own figures. --samples: one\n"
     "row per sample with its worst model output and worst layer.",
     repl_cmd_report},
    {"tensor", "tensor <name> [--save <file.npy>] [--save-ref <file.npy>]",
     "one tensor of the last run: range, error; save it as .npy",
     "name: a node (its first output) or a tensor. A tensor the last run did not\n"
     "keep is computed by a fresh run of the current plan (the last run stays).\n"
     "--save writes the emulated values, --save-ref the fp32 reference.",
     repl_cmd_tensor},
    {"compare", "compare <format> [<format> ...] [--local] [--json]", "the current rules under several targets, side by side",
     "Plans and runs the rules with each target (e.g. compare fp16 bf16) and prints\n"
     "casts, share of MACs in the low format, the worst output and layer rel_l2, and\n"
     "overflow/underflow counts. The fp32 reference runs once for all the targets\n"
     "(at most 8). The runs are kept for plot and html.",
     repl_cmd_compare},
    {"assert", "assert <figure> <op> <number> [and ...]", "fail the script unless a figure of the plan or run holds",
     "op: < <= > >= == !=. Plan figures: casts green gray clear red low_nodes\n"
     "low_macs_pct weights_converted weights_overflow (values). Run figures: overflow underflow subnormal layers,\n"
     "output.<metric> (worst model output), worst.<metric> (worst layer),\n"
     "<node or tensor>.<metric>; metric as in report, plus absmax. After a run over a\n"
     "data set, run figures are the worst over its samples; prefixes choose others:\n"
     "mean:, p95: (nearest rank), sample <k>: (e.g. assert p95:output.rel_l2 < 1e-3).\n"
     "A failed assert stops a script with exit status 2.\n"
     "Example: assert output.rel_l2 < 1e-3 and overflow == 0 and casts <= 40",
     repl_cmd_assert},
    {"search", "search <figure> <op> <number> [and ...] [--method auto|greedy|bisect] [--max-evals <n>] [--json [<file>]]",
     "find the nodes to keep in fp32 so that a condition holds",
     "The condition is assert's (same figures and grammar), e.g.\n"
     "  search output.rel_l2 < 1e-3 and casts <= 40\n"
     "Each evaluation plans the rules so far plus `colour name:<node> red` for a set\n"
     "of nodes and runs it (only what the set changes is recomputed). auto (the\n"
     "default): one local run ranks the low nodes (overflow in their weights or own\n"
     "output first, then their own rel_l2); the top 1, 2, 4, ... go fp32 until the\n"
     "condition holds; then each, largest MACs first, goes back to low while the\n"
     "condition still holds, until no single node of the set can (1-minimal).\n"
     "greedy: auto without giving back. bisect: onnxconverter-common's method\n"
     "(segments of the topological order tried low, failing ones halved), for\n"
     "comparison. The result is added as rules `colour name:<node> red  # search:\n"
     "<condition>`, one undo step. Nothing is applied when no plan meets the\n"
     "condition, on an error, at --max-evals (default 500) or on Ctrl-C.\n"
     "--json prints (or writes) {condition, method, fp32: [names], figures,\n"
     "low_macs_pct, candidates, n_evaluations, ms, evaluations: [{set, holds,\n"
     "figures, low_macs_pct, ms}]}.",
     repl_cmd_search},
    {"sweep", "sweep <name> in <v1>,<v2>,... : <command using $name> [--json [<file>] | --csv [<file>]] [--plot <file.svg>] [--shard <k>/<n>]",
     "try a plan change with several values, every point planned and run",
     "e.g. sweep t in 0,64k,256k,1M,4M : colour Conv green when macs >= $t else gray\n"
     "Each point is the session's rules plus the command (colour, color, accum, target\n"
     "or keep-io) with $name replaced by the value, planned and run on the session's\n"
     "inputs through the run cache (the fp32 reference once, each point recomputing\n"
     "only what its plan changes). Nothing is applied: the rules are the same after.\n"
     "Table: colour counts, casts, % of MACs low, weight bytes, output rel_l2,\n"
     "overflow and underflow counts, the worst layer. --json/--csv instead of the\n"
     "table (to a file or stdout); --plot writes error against % of MACs low with\n"
     "the Pareto front. --shard k/n runs only the points i with i % n == k-1 (its\n"
     "JSON is merged with `merge`). A command that fails for one value names it and\n"
     "keeps nothing.",
     repl_cmd_sweep},
    {"merge", "merge <shard.json> ... [--json [<file>] | --csv [<file>]] [--plot <file.svg>]",
     "join the JSON shards of a sweep, or of a run over a data set",
     "The shards must be of one sweep (name, command, values, model, target) and\n"
     "together hold every point once; the result is what the unsharded sweep gives.\n"
     "Shards of a data set (run --samples k/n, then report --json) become the last\n"
     "run, as the unsharded run gives it (the model loaded if need be): report,\n"
     "assert and --json/--csv (the report's) then work on all samples.\n"
     "Also `mpx merge a.json b.json ...` from the shell.",
     repl_cmd_merge},
    {"dot", "dot [<file.dot>] [--around <node> <depth>] [--shapes] [--collapse] [--cluster <n>] [--weights] [--all] [--overlay]",
     "the cast graph as DOT text (printed, or written to a file)",
     "Nodes are filled by colour and labelled with op type and name; runtime casts\n"
     "are hexagons labelled with the conversion (fp32->fp16); edges carry the format\n"
     "of their values; a double border marks a colour set by a rule; W->fp16 marks\n"
     "weights converted offline. Constant and folded nodes are left out (--all\n"
     "draws them). --around <node> <depth>: only nodes within depth edges of the\n"
     "node (or of the tensor's producer). --shapes: edge labels add shapes.\n"
     "--collapse: chains of nodes with the same formats become one node.\n"
     "--cluster <n>: group by the first n components of node names\n"
     "(/backbone/stage2/...). --weights: draw weights as nodes.\n"
     "--overlay [--local]: border colour and width by the last run's rel_l2 (log\n"
     "scale), overflow and underflow marked. The text is the same for the same\n"
     "plan and options (ids from graph indices), so it can be diffed.",
     repl_cmd_dot},
    {"svg", "svg <file.svg> [dot's options] [--engine dot|sfdp|neato] [--watch] | svg --unwatch",
     "the cast graph as SVG, laid out in-process by Graphviz",
     "Options as for dot. --watch re-writes the file after every change of the plan\n"
     "(rules, target, undo...), so a viewer that reloads on change follows along;\n"
     "svg --unwatch stops. --engine: the Graphviz layout (dot, the default, draws\n"
     "layers top to bottom; sfdp and neato are force-directed).",
     repl_cmd_svg},
    {"plot", "plot <file.svg> [<metric>] [--local]", "per-layer error along the graph as an SVG plot",
     "One line per run: the last run (under its target) and the runs of `compare`\n"
     "(e.g. compare fp16 bf16). metric: one of the metrics listed below (default\n"
     "rel_l2; cos is drawn as 1 - cos); log scale except sqnr_db. Red nodes and\n"
     "runtime casts of the current plan are marked, overflowing layers crossed, the\n"
     "three worst layers named.",
     repl_cmd_plot},
    {"html", "html <file.html> [dot's options] [--no-overlay]", "one self-contained review page",
     "Model summary, target and rules, the plan's figures and casts, the cast graph\n"
     "(with the last run's error overlay), the error plot and the per-layer table,\n"
     "in one file that opens from disk with no network.",
     repl_cmd_html},
    {"export", "export <file.onnx> [--force] [--external] [--json [<file>]]",
     "write the plan as a mixed-precision ONNX model",
     "Writes the current plan as an ONNX model a runtime can load: weights read by\n"
     "low nodes stored in the low format (rounded as the emulation rounds them), one\n"
     "Cast per plan cast, the model's float Casts retyped, keep-io Casts at inputs and\n"
     "outputs, the opset raised where the format needs it (bf16: 13, fp8: 19; refused\n"
     "when one of the model's ops changed meaning in between). A model loaded from\n"
     ".onnx keeps its metadata, doc strings and value_info. ONNX has no attribute for\n"
     "the accumulation format: it goes into metadata mpx.accumulate and the low nodes'\n"
     "doc strings. tf32 is refused (no ONNX type). Never overwrites the loaded model;\n"
     "an existing file needs --force; the folder must exist; a failure leaves no file.\n"
     "Weights of 1 KiB and more go to external data, <file.onnx>.data beside the model,\n"
     "when the model would pass protobuf's 2 GB limit, or always with --external.\n"
     "Check the result in ONNX Runtime with scripts/verify-export.sh.",
     repl_cmd_export},
    {"source", "source <file.mpx>", "run the commands of a script file in this session",
     "Comments (#), blank lines and trailing-backslash continuations as in scripts.\n"
     "An error names the sourced file and its line and stops it (and the scripts\n"
     "that sourced it) unless `set bail off`; the commands before the error stay\n"
     "done. Scripts nest up to 16 deep. Paths are relative to the current folder.",
     repl_cmd_source},
    {"set", "set [bail on|off | top <n> | cache <MB>]", "change a setting; without arguments, list them",
     "bail: on (default) stops a script at its first error; off goes on with the\n"
     "next command (the exit status still says a command failed).\n"
     "top: the rows `report` shows without --top (default 20).\n"
     "cache: megabytes of the last run's values `run` keeps (default 512; 0: none), so\n"
     "a re-run after a recolour recomputes only the nodes downstream of the change.",
     repl_cmd_set},
    {"save", "save [<file.mpx>]", "write the session as a script that rebuilds it (no file: print it)",
     "Writes load, the inputs (shape, then values), target and keep-io, the rules\n"
     "in order as typed (a `run` before the first that uses absmax), and the\n"
     "settings that differ from their defaults. The current state is saved, not the\n"
     "undo history. The file is replaced whole or not at all.",
     repl_cmd_save},
    {"help", "help [<command>]", "list commands, or explain one", NULL, cmd_help},
    {"quit", "quit", "leave mpx (also: exit, Ctrl-D)", NULL, cmd_quit},
};

const mpx_command *mpx_commands(int *count) {
    *count = (int)(sizeof commands / sizeof commands[0]);
    return commands;
}

static const mpx_command *find_command(const char *name) {
    if (strcmp(name, "exit") == 0) name = "quit";
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

/* "; did you mean colour?" for a mistyped command, or "". */
static const char *command_hint(const char *typed, char *buf, size_t n) {
    mpx_name_hint h;
    mpx_name_hint_init(&h, typed);
    /* Aliases (color) are left out: the hint names the command help lists. */
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strncmp(commands[i].summary, "same as ", 8) != 0) mpx_name_hint_add(&h, commands[i].name);
    return mpx_name_hint_tail(&h, buf, n);
}

static mpx_status cmd_help(mpx_session *s, int argc, char **argv, mpx_error *err) {
    if (argc == 1) {
        /* Names and summaries; the usage lines are long, `help <command>` has them. */
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            fprintf(s->out, "  %-9s %s\n", commands[i].name, commands[i].summary);
        fprintf(s->out, "help <command> gives its usage and details.\n");
        return MPX_OK;
    }
    const mpx_command *c = argc == 2 ? find_command(argv[1]) : NULL;
    if (!c) {
        char hint[128];
        return mpx_error_set(err, MPX_E_ARG, "no command \"%s\" (try: help)%s", argc == 2 ? argv[1] : "",
                             argc == 2 ? command_hint(argv[1], hint, sizeof hint) : "");
    }
    fprintf(s->out, "usage: %s\n%s\n", c->usage, c->summary);
    if (c->help) fprintf(s->out, "\n%s\n", c->help);
    /* The formats and metrics a command takes come from their tables. */
    if (strstr(c->usage, "<format>") || strstr(c->usage, "<fmt>")) {
        char names[256];
        fprintf(s->out, "formats: %s (fp8e4m3 saturates, fp8e4m3nan overflows to NaN)\n", mpx_format_names(" ", true, names, sizeof names));
    }
    if (strstr(c->usage, "<metric>") || strstr(c->usage, "<figure>")) {
        char names[256];
        fprintf(s->out, "metrics: %s\n", mpx_metric_names(" ", names, sizeof names));
    }
    return MPX_OK;
}

/* ---- dispatch -------------------------------------------------------------- */

enum { MAX_ARGS = 64 };

mpx_status mpx_session_exec(mpx_session *s, const char *line, mpx_error *err) {
    mpx_error_clear(err);
    size_t len = strlen(line);
    char *copy = malloc(len + 1);
    if (!copy) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    memcpy(copy, line, len + 1);
    int argc = 0;
    char *argv[MAX_ARGS];
    mpx_status st = repl_split_words(copy, &argc, argv, MAX_ARGS, false, err);
    if (st == MPX_OK && argc > 0) {
        const mpx_command *c = find_command(argv[0]);
        if (!c) {
            char hint[128];
            st = mpx_error_set(err, MPX_E_ARG, "unknown command \"%s\" (try: help)%s", argv[0],
                               command_hint(argv[0], hint, sizeof hint));
        } else {
            const char *saved = s->line;
            s->line = line;
            st = c->handler(s, argc, argv, err);
            s->line = saved;
        }
    }
    free(copy);
    return st;
}
