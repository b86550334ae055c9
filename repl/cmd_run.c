/* cmd_run.c - inputs and runs: input, run, report, tensor, compare.
 *
 * A run is mpx_compare_run: the fp32 reference and the plan's assignment side
 * by side, per-layer metrics for every float tensor a node computes. Input
 * values are made from the session's input specs at every run (cheap next to
 * the run, and it keeps the specs the single truth that `save` replays).
 * Figures, conditions and assert are figures.c's. */
#include "repl_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- weights converted offline ------------------------------------------- */

/* Converting a constant can itself overflow (a BatchNormalization variance of
 * 1e8 becomes inf in fp16) or flush values to zero: the activations' metrics
 * never show that as overflow, only as a layer that went wrong. So every
 * conversion the plan makes is checked here, value by value, once. Returns
 * the number of weights with an overflow; when there is one and out is
 * non-NULL, prints header and then one line per weight that overflows or
 * loses more than 1% (rel_l2). */
int repl_check_weights(const mpx_session *s, const mpx_plan *p, FILE *out, const char *header, int64_t *n_overflow,
                       int *n_flushed) {
    mpx_weight_check *w = NULL;
    int n = 0, bad = 0, flushed = 0;
    int64_t total = 0;
    mpx_error e;
    if (mpx_plan_check_weights(p, &w, &n, &e) != MPX_OK) n = 0;
    for (int i = 0; i < n; i++) {
        total += w[i].overflow;
        bad += w[i].overflow > 0;
        flushed += w[i].underflow > 0;
    }
    if (n_flushed) *n_flushed = flushed;
    if (out && bad && header) fputs(header, out);
    for (int i = 0; out && bad && i < n; i++) {
        const mpx_plan_weight *pw = &p->weights[w[i].weight];
        const mpx_tensor *t = s->graph->tensors[pw->tensor];
        const mpx_node *user = t->n_consumers ? t->consumers[0] : NULL;
        fprintf(out, "  weight %s (%lld values, used by %s %s) in %s: ", t->name, (long long)w[i].n,
                user ? user->op_type : "?", user ? user->name : "?", mpx_format_name(pw->to));
        if (w[i].overflow)
            fprintf(out, "%lld overflow (values up to %.4g; largest finite %s is %.6g)\n", (long long)w[i].overflow,
                    w[i].absmax, mpx_format_name(pw->to), (double)pw->to->max_finite);
        else
            fprintf(out, "rel_l2 %.3g, %lld flushed to zero\n", w[i].rel_l2, (long long)w[i].underflow);
    }
    free(w);
    if (n_overflow) *n_overflow = total;
    return bad;
}

/* ---- run ------------------------------------------------------------------ */

static void progress_cb(void *ctx, int done, int total) {
    (void)ctx;
    /* Only on a terminal (s->progress), at most ~50 updates a run. */
    if (total > 0 && (done % (total / 50 + 1) == 0 || done == total))
        fprintf(stderr, "\r  running: node %d of %d", done, total);
    if (done == total) fputs("\r                                   \r", stderr);
}

typedef struct sample_progress {
    int k, n;
} sample_progress;

static void sample_progress_cb(void *ctx, int done, int total) {
    const sample_progress *sp = ctx;
    if (total > 0 && (done % (total / 20 + 1) == 0 || done == total))
        fprintf(stderr, "\r  sample %d of %d, node %d of %d   ", sp->k + 1, sp->n, done, total);
}

/* The worst model output's rel_l2 of a comparison (NaN worst). */
static double output_badness(const mpx_graph *g, const mpx_compare *c) {
    double r = repl_totals(g, c).out_rel_l2;
    return isnan(r) ? INFINITY : r;
}

/* Sample k's run cache (made on first use; the set of caches is remade when
 * the sample count changes), with an even share of the `set cache` budget;
 * NULL when the cache is off. */
static mpx_compare_cache *sample_cache(mpx_session *s, int k, int n) {
    if (s->cache_mb <= 0) return NULL;
    if (s->n_sample_cache != n) {
        repl_drop_sample_caches(s);
        s->sample_cache = calloc((size_t)n, sizeof *s->sample_cache);
        if (!s->sample_cache) return NULL;
        s->n_sample_cache = n;
    }
    if (!s->sample_cache[k]) s->sample_cache[k] = mpx_compare_cache_new(((size_t)s->cache_mb << 20) / (size_t)n);
    return s->sample_cache[k];
}

/* A run over the data set's samples, one at a time: each sample's inputs
 * made, run, its figures appended, its values freed, except the kept values
 * of the sample whose worst output is worst (what `tensor` then shows). The
 * result's layers hold each layer's worst over the samples; ->samples has
 * every sample's figures. With cached (run and search, one candidate, not
 * local), sample k runs through its own cache (sample_cache): its reference
 * and the layers a plan change does not touch are not computed again, within
 * the budget (`set cache`) split evenly between the samples, so memory does
 * not grow with their number. nc candidates (compare's formats) share each
 * sample's reference run; out[j] is as[j]'s. */
static mpx_status run_samples_many(mpx_session *s, const mpx_assign *const *as, int nc, bool local, const bool *keep,
                                   bool cached, int shard_k, int shard_n, mpx_compare **out, mpx_error *err) {
    const mpx_graph *g = s->graph;
    int n = repl_data_count(s->data);
    mpx_samples *S[MPX_COMPARE_MAX_CANDS] = {0};
    mpx_compare *best[MPX_COMPARE_MAX_CANDS] = {0}; /* the kept ones: worst output so far */
    double ms[MPX_COMPARE_MAX_CANDS][4] = {{0}};
    int n_run[MPX_COMPARE_MAX_CANDS] = {0};
    bool incremental[MPX_COMPARE_MAX_CANDS] = {0};
    size_t peak = 0;
    mpx_status st = MPX_OK;
    for (int j = 0; j < nc && !st; j++)
        if (!(S[j] = mpx_samples_new())) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int k = shard_k; k < n && !st; k += shard_n) {
        mpx_value *inputs = NULL;
        if ((st = repl_data_inputs(s, k, &inputs, err))) break;
        sample_progress sp = {k, n};
        mpx_compare_opts o = {.local = local, .keep = keep, .cancel = s->cancel};
        if (cached && nc == 1 && !local) o.cache = sample_cache(s, k, n);
        if (s->progress) o.progress = sample_progress_cb, o.progress_ctx = &sp;
        mpx_compare *c[MPX_COMPARE_MAX_CANDS] = {0};
        st = nc == 1 ? mpx_compare_run(g, as[0], inputs, &o, &c[0], err)
                     : mpx_compare_run_many(g, as, nc, inputs, &o, c, err);
        repl_free_inputs(s, inputs);
        if (st) {
            if (st != MPX_E_CANCELLED) repl_error_sample(err, k, n, repl_data_label(s->data, k));
            break;
        }
        for (int j = 0; j < nc; j++) {
            ms[j][0] += c[j]->ms_ref, ms[j][1] += c[j]->ms_cand, ms[j][2] += c[j]->ms_local, ms[j][3] += c[j]->ms_metrics;
            if (c[j]->peak_bytes > peak) peak = c[j]->peak_bytes;
            n_run[j] += c[j]->n_run;
            incremental[j] = incremental[j] || c[j]->incremental;
            if (!st) st = mpx_samples_add(S[j], c[j], k, err);
            if (!st && (!best[j] || output_badness(g, c[j]) > output_badness(g, best[j]))) {
                mpx_compare_free(best[j]);
                best[j] = c[j];
                S[j]->kept = S[j]->n_samples - 1;
            } else {
                mpx_compare_free(c[j]);
            }
        }
    }
    if (s->progress) fputs("\r                                                    \r", stderr);
    if (!st && !best[0]) st = mpx_error_set(err, MPX_E_ARG, "shard %d/%d holds no sample (the data set has %d)", shard_k + 1,
                                            shard_n, n);
    for (int j = 0; j < nc && !st; j++) st = mpx_samples_reduce(S[j], MPX_STAT_WORST, 0, best[j]->layers, NULL, err);
    for (int j = 0; j < nc; j++) {
        if (st) {
            mpx_samples_free(S[j]);
            mpx_compare_free(best[j]);
            continue;
        }
        best[j]->samples = S[j];
        best[j]->ms_ref = ms[j][0], best[j]->ms_cand = ms[j][1], best[j]->ms_local = ms[j][2], best[j]->ms_metrics = ms[j][3];
        best[j]->peak_bytes = peak;
        /* Over the samples: node runs in all of them, incremental when a
         * sample's cache spared any. */
        best[j]->incremental = incremental[j];
        best[j]->n_run = n_run[j];
        out[j] = best[j];
    }
    return st;
}

static mpx_status run_samples(mpx_session *s, const mpx_plan *p, bool local, const bool *keep, bool cached,
                              int shard_k, int shard_n, mpx_compare **out, mpx_error *err) {
    mpx_assign *a = mpx_plan_to_assign(p, err);
    if (!a) return err->status ? err->status : MPX_E_NOMEM;
    const mpx_assign *as[1] = {a};
    mpx_status st = run_samples_many(s, as, 1, local, keep, cached, shard_k, shard_n, out, err);
    mpx_assign_free(a);
    return st;
}

/* cache: `run`'s and `search`'s (NULL for the other commands: `compare`
 * runs other plans, which would only churn it). With a data set, the run goes
 * over its samples (run_samples). */
mpx_status repl_run_plan(mpx_session *s, const mpx_plan *p, bool local, const bool *keep,
                         mpx_compare_cache *cache, mpx_compare **out, mpx_error *err) {
    if (s->data) return run_samples(s, p, local, keep, cache != NULL, 0, 1, out, err);
    mpx_value *inputs = NULL;
    mpx_status st = repl_make_inputs(s, &inputs, err);
    if (st) return st;
    mpx_assign *a = mpx_plan_to_assign(p, err);
    if (!a) {
        repl_free_inputs(s, inputs);
        return err->status ? err->status : MPX_E_NOMEM;
    }
    mpx_compare_opts o = {.local = local, .keep = keep, .cancel = s->cancel, .cache = cache};
    if (s->progress) o.progress = progress_cb;
    st = mpx_compare_run(s->graph, a, inputs, &o, out, err);
    if (st && s->progress) fputs("\r                                   \r", stderr); /* a cancelled run's line */
    mpx_assign_free(a);
    repl_free_inputs(s, inputs);
    return st;
}

/* Several plans against one shared reference run (`compare`). */
static mpx_status run_plans(mpx_session *s, mpx_plan *const *plans, int n, bool local, mpx_compare **out,
                            mpx_error *err) {
    mpx_value *inputs = NULL;
    mpx_status st = repl_make_inputs(s, &inputs, err);
    if (st) return st;
    const mpx_assign *as[MPX_COMPARE_MAX_CANDS] = {0};
    for (int i = 0; i < n && !st; i++) {
        mpx_assign *a = mpx_plan_to_assign(plans[i], err);
        if (!a) st = err->status ? err->status : MPX_E_NOMEM;
        as[i] = a;
    }
    if (!st && s->data) {
        st = run_samples_many(s, as, n, local, NULL, false, 0, 1, out, err);
    } else if (!st) {
        mpx_compare_opts o = {.local = local, .cancel = s->cancel};
        if (s->progress) o.progress = progress_cb;
        st = mpx_compare_run_many(s->graph, as, n, inputs, &o, out, err);
        if (st && s->progress) fputs("\r                                   \r", stderr);
    }
    for (int i = 0; i < n; i++) mpx_assign_free((mpx_assign *)as[i]);
    repl_free_inputs(s, inputs);
    return st;
}


/* Tensor indices named in a comma list (for --keep); err names the first unknown. */
static mpx_status parse_keep(const mpx_graph *g, const char *list, bool *keep, mpx_error *err) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        const mpx_tensor *t = repl_find_named(g, tok);
        if (!t) {
            char hint[300];
            return mpx_error_set(err, MPX_E_ARG, "no tensor or node named \"%s\"%s", tok,
                                 repl_name_tail(g, tok, true, true, hint, sizeof hint));
        }
        keep[t->index] = true;
    }
    return MPX_OK;
}

static bool rules_use_measured(const mpx_session *s) {
    const mpx_rules *r = mpx_history_rules(s->hist);
    for (int i = 0; i < mpx_rules_count(r); i++)
        if (mpx_rules_uses_measured(r, i)) return true;
    return false;
}

static const char *layer_name(const mpx_graph *g, const mpx_layer *L) { return g->tensors[L->tensor]->name; }

void repl_print_run_summary(mpx_session *s, const mpx_compare *c, const mpx_format *target) {
    const mpx_graph *g = s->graph;
    repl_run_totals t = repl_totals(g, c);
    fprintf(s->info, "run: %s plan against the fp32 reference, %d layers compared (%.1f ms + %.1f ms)\n",
            mpx_format_name(target), c->n_layers, c->ms_ref, c->ms_cand);
    if (c->samples)
        fprintf(s->info, "  over %d samples: each figure is its layer's worst; the worst output is sample %d (%s)\n",
                c->samples->n_samples, c->samples->id[c->samples->kept] + 1,
                repl_data_label(s->data, c->samples->id[c->samples->kept]));
    for (int i = 0; i < c->n_layers; i++) {
        const mpx_layer *L = &c->layers[i];
        if (!repl_is_output(g, L->tensor)) continue;
        fprintf(s->info, "  output %s: rel_l2 %.3g, max_abs %.3g, cos %.6f%s\n", layer_name(g, L), L->m.rel_l2,
                L->m.max_abs, L->m.cos, L->m.overflow ? " (OVERFLOW)" : "");
    }
    int samples = c->samples ? c->samples->n_samples : 1;
    if (c->incremental && c->n_run < g->n_nodes * samples) {
        fprintf(s->info, "  incremental: %d of %d node runs recomputed, the rest from the run cache%s\n", c->n_run,
                g->n_nodes * samples, samples > 1 ? " (one per sample)" : "");
    }
    const mpx_layer *w = repl_worst_layer(c);
    if (w)
        fprintf(s->info, "  worst layer: %s (%s %s) rel_l2 %.3g\n", layer_name(g, w), g->nodes[w->node]->op_type,
                g->nodes[w->node]->name, w->m.rel_l2);
    /* With --local figures the cause leads: the layer whose own rounding
     * does the most, which the worst layer above may only inherit. */
    const mpx_layer *own = repl_worst_own_layer(c);
    if (own)
        fprintf(s->info, "  worst own error: %s (%s %s) local rel_l2 %.3g (rel_l2 %.3g at its output)\n",
                layer_name(g, own), g->nodes[own->node]->op_type, g->nodes[own->node]->name, own->local.rel_l2,
                own->m.rel_l2);
    if (t.layers_overflow)
        fprintf(s->info, "  overflow: %lld values in %d layers, first at %s (%s): fp32 values up to %.4g do not fit %s\n",
                (long long)t.overflow, t.layers_overflow, layer_name(g, t.first_overflow),
                g->nodes[t.first_overflow->node]->op_type, t.first_overflow->m.absmax_ref,
                mpx_format_name(t.first_overflow->fmt));
    else fprintf(s->info, "  overflow: none in activations\n");
    char head[160];
    snprintf(head, sizeof head, "  weights that do not fit %s (converted offline, before the run):\n",
             mpx_format_name(target));
    repl_check_weights(s, s->plan, s->info, head, NULL, NULL);
    if (t.layers_underflow)
        fprintf(s->info, "  underflow: %lld non-zero values became zero in %d layers\n", (long long)t.underflow,
                t.layers_underflow);
}

/* run [--local] [--keep <tensor,...>] [--samples k/n] */
MPX_CMD(repl_cmd_run) {
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    if (!s->plan) return mpx_error_set(err, MPX_E_INVALID, "no plan (load a model first)");
    bool local = false;
    bool *keep = calloc((size_t)(s->graph->n_tensors ? s->graph->n_tensors : 1), sizeof *keep);
    if (!keep) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    int shard_k = 0, shard_n = 1;
    for (int a = 1; a < argc && !st; a++) {
        if (strcmp(argv[a], "--local") == 0) local = true;
        else if (strcmp(argv[a], "--keep") == 0 && a + 1 < argc) st = parse_keep(s->graph, argv[++a], keep, err);
        else if (strcmp(argv[a], "--samples") == 0 && a + 1 < argc) {
            if (!(st = repl_parse_shard(argv[++a], "--samples", &shard_k, &shard_n, err))) shard_k--;
        }
    }
    if (!st && shard_n > 1 && !s->data) st = mpx_error_set(err, MPX_E_ARG, "--samples %d/%d: no data set (see: help data)",
                                                          shard_k + 1, shard_n);
    mpx_compare *c = NULL;
    /* Without memory for a cache the run is a full one, as always. */
    if (!s->run_cache && s->cache_mb > 0) s->run_cache = mpx_compare_cache_new((size_t)s->cache_mb << 20);
    if (!st && shard_n > 1) st = run_samples(s, s->plan, local, keep, true, shard_k, shard_n, &c, err);
    else if (!st) st = repl_run_plan(s, s->plan, local, keep, s->run_cache, &c, err);
    free(keep);
    if (st) return st;
    if ((st = repl_take_run(s, c, s->plan->opts.target, local, s->plan, err))) return st;
    repl_print_run_summary(s, c, s->last_target);
    if (rules_use_measured(s)) {
        /* Rules on absmax now see this run's figures: the plan is re-made
         * (the run keeps the plan it ran: s->run_plan). */
        mpx_error e2;
        if (repl_replan(s, false, &e2) == MPX_OK)
            fprintf(s->info, "  plan re-made with the measured absmax (run again to see its effect)\n");
    }
    /* Followers of the plan (svg --watch) also show the run's overlay. */
    repl_after_plan_change(s);
    return MPX_OK;
}

/* ---- report ----------------------------------------------------------------- */

/* Sort keys: the metrics (numerics/metrics.def, in its order), then local
 * (the node's own rel_l2, after run --local) and order (graph order). */
enum { K_LOCAL = MPX_METRIC_COUNT, K_ORDER, K_COUNT };
typedef int metric_id;

static const char *key_name(metric_id k) {
    return k == K_LOCAL ? "local" : k == K_ORDER ? "order" : mpx_metric_info_of((mpx_metric_id)k)->name;
}

/* The figure a report sorts by, oriented so that larger is worse. */
static double badness(const mpx_layer *L, metric_id m) {
    double v;
    if (m == K_LOCAL) v = L->has_local ? L->local.rel_l2 : -1.0;
    else if (m == K_ORDER) v = 0.0;
    else {
        v = mpx_metric_value(&L->m, (mpx_metric_id)m);
        if (mpx_metric_info_of((mpx_metric_id)m)->low_is_worse) v = -v;
    }
    return isnan(v) ? INFINITY : v;
}

static metric_id sort_metric;

static int layer_cmp(const void *x, const void *y) {
    const mpx_layer *a = *(const mpx_layer *const *)x, *b = *(const mpx_layer *const *)y;
    if (sort_metric != K_ORDER) {
        double da = badness(a, sort_metric), db = badness(b, sort_metric);
        if (da != db) return da < db ? 1 : -1;
    }
    if (a->node != b->node) return a->node - b->node;
    return a->tensor - b->tensor;
}

/* A bar for a rel_l2 on a log scale: 1e-8 or less empty, 1 or more full. */
static void bar(char *buf, double rel) {
    int n = 0;
    if (isnan(rel) || rel >= 1.0) n = 10;
    else if (rel > 1e-8) n = (int)lround((log10(rel) + 8.0) * 10.0 / 8.0);
    if (n < 0) n = 0;
    if (n > 10) n = 10;
    for (int i = 0; i < 10; i++) buf[i] = i < n ? '#' : '.';
    buf[10] = '\0';
}

static cJSON *metrics_json(const mpx_metrics *m) {
    cJSON *o = cJSON_CreateObject();
    /* JSON has no inf or NaN: such figures are written as strings. All
     * digits: merged shards must give one run's figures exactly. */
    for (int k = 0; k < MPX_METRIC_COUNT; k++)
        if (!mpx_metric_info_of((mpx_metric_id)k)->count)
            repl_json_exact(o, mpx_metric_info_of((mpx_metric_id)k)->name, mpx_metric_value(m, (mpx_metric_id)k), NULL);
    repl_json_exact(o, "absmax_ref", m->absmax_ref, NULL);
    for (int k = 0; k < MPX_METRIC_COUNT; k++)
        if (mpx_metric_info_of((mpx_metric_id)k)->count)
            cJSON_AddNumberToObject(o, mpx_metric_info_of((mpx_metric_id)k)->name, mpx_metric_value(m, (mpx_metric_id)k));
    cJSON_AddNumberToObject(o, "n", (double)m->n);
    return o;
}

static char *csv_field(const char *s, char *buf, size_t n) {
    if (!strpbrk(s, ",\"\n")) {
        snprintf(buf, n, "%s", s);
        return buf;
    }
    size_t o = 0;
    if (o + 1 < n) buf[o++] = '"';
    for (; *s && o + 3 < n; s++) {
        if (*s == '"') buf[o++] = '"';
        buf[o++] = *s;
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

/* report [--top n | --all] [--sort metric] [--json [file] | --csv [file]] */
/* report --samples: one row per sample, its model outputs' worst figures. */
static mpx_status report_samples(mpx_session *s, const mpx_compare *c, mpx_error *err) {
    const mpx_samples *S = c->samples;
    const mpx_graph *g = s->graph;
    mpx_layer *v = malloc((size_t)(c->n_layers ? c->n_layers : 1) * sizeof *v);
    if (!v) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    fprintf(s->out, "%s against fp32 over %d samples: each sample's worst model output\n", mpx_format_name(s->last_target),
            S->n_samples);
    fprintf(s->out, "%-6s %-44s %9s %9s %9s %6s %6s  %s\n", "sample", "file", "rel_l2", "max_abs", "cos", "ovf", "unf",
            "worst layer");
    mpx_status st = MPX_OK;
    for (int k = 0; k < S->n_samples && !st; k++) {
        memcpy(v, c->layers, (size_t)c->n_layers * sizeof *v);
        if ((st = mpx_samples_reduce(S, MPX_STAT_SAMPLE, k, v, NULL, err))) break;
        mpx_compare view = *c;
        view.layers = v;
        repl_run_totals t = repl_totals(g, &view);
        const mpx_layer *w = repl_worst_layer(&view);
        const char *label = repl_data_label(s->data, S->id[k]);
        size_t len = strlen(label);
        char lb[64];
        if (len > 44) snprintf(lb, sizeof lb, "...%s", label + len - 41);
        else snprintf(lb, sizeof lb, "%s", label);
        const mpx_layer *o = t.worst_out;
        fprintf(s->out, "%-6d %-44s %9.3g %9.3g %9.6f %6lld %6lld  %s\n", S->id[k] + 1, lb, o ? o->m.rel_l2 : NAN,
                o ? o->m.max_abs : NAN, o ? o->m.cos : NAN, (long long)t.overflow, (long long)t.underflow,
                w ? g->nodes[w->node]->name : "-");
    }
    free(v);
    return st;
}

MPX_CMD(repl_cmd_report) {
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    int top = s->report_top;
    bool top_given = false;
    metric_id sm = MPX_METRIC_rel_l2;
    bool json = false, csv = false, per_sample = false;
    int one = -1; /* --sample k (0-based) */
    const char *path = NULL;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--sample") == 0 && a + 1 < argc) {
            double v;
            if ((st = repl_parse_number(argv[++a], "--sample", &v, err))) return st;
            if (v < 1 || v != (double)(int)v) return mpx_error_set(err, MPX_E_ARG, "--sample %s: a sample number from 1", argv[a]);
            one = (int)v - 1;
        } else if (strcmp(argv[a], "--samples") == 0) {
            per_sample = true;
        } else if (strcmp(argv[a], "--top") == 0 && a + 1 < argc) {
            double v;
            if ((st = repl_parse_number(argv[++a], "--top", &v, err))) return st;
            if (v < 1 || v != (double)(int)v) return mpx_error_set(err, MPX_E_ARG, "--top %s: a count of rows", argv[a]);
            top = (int)v;
            top_given = true;
        } else if (strcmp(argv[a], "--all") == 0) {
            top = -1;
            top_given = true;
        } else if (strcmp(argv[a], "--sort") == 0 && a + 1 < argc) {
            a++;
            int k = 0;
            while (k < K_COUNT && strcmp(key_name(k), argv[a]) != 0) k++;
            if (k == K_COUNT) {
                char hint[128];
                char names[256];
                return mpx_error_set(err, MPX_E_ARG, "--sort: unknown metric \"%s\" (%s, local, order)%s", argv[a],
                                     mpx_metric_names(", ", names, sizeof names),
                                     repl_metric_tail(argv[a], true, hint, sizeof hint));
            }
            sm = k;
        } else if (strcmp(argv[a], "--json") == 0 || strcmp(argv[a], "--csv") == 0) {
            if (argv[a][2] == 'j') json = true;
            else csv = true;
            if (a + 1 < argc && strncmp(argv[a + 1], "--", 2) != 0) path = argv[++a];
        }
    }
    if (json && csv) return mpx_error_set(err, MPX_E_ARG, "--json or --csv, not both");
    const mpx_compare *c = s->last;
    if (!c) return mpx_error_set(err, MPX_E_ARG, "no run yet (use: run)");
    /* The run keeps the plan it ran; say so when the plan moved on since. */
    if (s->run_plan && s->run_plan != s->plan)
        fprintf(s->info, "report: the last run ran the plan before the latest change (run again for the current one)\n");
    if (sm == K_LOCAL && !s->last_local)
        return mpx_error_set(err, MPX_E_ARG, "the last run has no local figures (use: run --local)");
    const mpx_samples *S = c->samples;
    if ((one >= 0 || per_sample) && !S)
        return mpx_error_set(err, MPX_E_ARG, "the last run had one input, not a data set (see: help data)");
    if (one >= 0 && per_sample) return mpx_error_set(err, MPX_E_ARG, "--sample or --samples, not both");
    if (per_sample) return report_samples(s, c, err);
    int row = S && one >= 0 ? mpx_samples_row(S, one) : -1;
    if (S && one >= 0 && row < 0)
        return mpx_error_set(err, MPX_E_ARG, "--sample %d: the last run did not run it (it ran %d sample%s%s)", one + 1,
                             S->n_samples, S->n_samples == 1 ? "" : "s",
                             S->n_samples < repl_data_count(s->data) ? ", a shard of the data set" : "");
    const mpx_graph *g = s->graph;
    /* Per layer: the sample of its worst rel_l2 and the mean over samples;
     * with --sample k, the layers are that sample's own figures. */
    mpx_layer *view = NULL, *mean = NULL;
    int *worst_of = NULL;
    mpx_compare vc;
    if (S) {
        size_t nl = (size_t)(c->n_layers ? c->n_layers : 1);
        view = malloc(nl * sizeof *view);
        mean = malloc(nl * sizeof *mean);
        worst_of = malloc(nl * sizeof *worst_of);
        if (!view || !mean || !worst_of) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        if (!st) {
            memcpy(view, c->layers, (size_t)c->n_layers * sizeof *view);
            memcpy(mean, c->layers, (size_t)c->n_layers * sizeof *mean);
            st = mpx_samples_reduce(S, one >= 0 ? MPX_STAT_SAMPLE : MPX_STAT_WORST, row, view, worst_of, err);
        }
        if (!st) st = mpx_samples_reduce(S, MPX_STAT_MEAN, 0, mean, NULL, err);
        if (st) {
            free(view), free(mean), free(worst_of);
            return st;
        }
        vc = *c;
        vc.layers = view;
        c = &vc;
    }
    const mpx_layer **rows = malloc((size_t)(c->n_layers ? c->n_layers : 1) * sizeof *rows);
    if (!rows) {
        free(view), free(mean), free(worst_of);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    for (int i = 0; i < c->n_layers; i++) rows[i] = &c->layers[i];
    sort_metric = sm;
    qsort(rows, (size_t)c->n_layers, sizeof *rows, layer_cmp);
    /* The terminal gets the worst rows; machines get every row unless --top. */
    if ((json || csv) && !top_given) top = -1;
    int n = (top < 0 || top > c->n_layers) ? c->n_layers : top;
    if (json || csv) {
        char *text = NULL;
        if (json) {
            cJSON *root = cJSON_CreateObject();
            cJSON_AddStringToObject(root, "target", mpx_format_name(s->last_target));
            cJSON_AddBoolToObject(root, "local", s->last_local);
            cJSON_AddStringToObject(root, "sort", key_name(sm));
            repl_run_totals t = repl_totals(g, c);
            cJSON_AddNumberToObject(root, "overflow", (double)t.overflow);
            cJSON_AddNumberToObject(root, "underflow", (double)t.underflow);
            if (S) {
                cJSON_AddStringToObject(root, "figures", one >= 0 ? "sample" : "worst");
                if (one >= 0) cJSON_AddNumberToObject(root, "sample", one + 1);
                cJSON *sa = cJSON_AddArrayToObject(root, "samples");
                cJSON *si = cJSON_AddArrayToObject(root, "sample_ids");
                for (int k = 0; k < S->n_samples; k++) {
                    cJSON_AddItemToArray(sa, cJSON_CreateString(repl_data_label(s->data, S->id[k])));
                    cJSON_AddItemToArray(si, cJSON_CreateNumber(S->id[k] + 1));
                }
                /* What a shard's merge checks: the same model, plan and data set. */
                cJSON_AddStringToObject(root, "kind", "mpx-samples");
                cJSON_AddStringToObject(root, "model", s->model_path);
                cJSON_AddNumberToObject(root, "n_samples_total", repl_data_count(s->data));
                cJSON *ru = cJSON_AddArrayToObject(root, "rules");
                const mpx_rules *rr = mpx_history_rules(s->hist);
                for (int k = 0; k < mpx_rules_count(rr); k++)
                    cJSON_AddItemToArray(ru, cJSON_CreateString(mpx_rules_text(rr, k)));
            }
            cJSON *arr = cJSON_AddArrayToObject(root, "layers");
            for (int i = 0; i < n; i++) {
                const mpx_layer *L = rows[i];
                cJSON *e = cJSON_CreateObject();
                cJSON_AddStringToObject(e, "tensor", layer_name(g, L));
                cJSON_AddStringToObject(e, "node", g->nodes[L->node]->name);
                cJSON_AddStringToObject(e, "op", g->nodes[L->node]->op_type);
                cJSON_AddNumberToObject(e, "order", L->node);
                cJSON_AddStringToObject(e, "format", mpx_format_name(L->fmt));
                cJSON_AddBoolToObject(e, "output", repl_is_output(g, L->tensor));
                cJSON_AddItemToObject(e, "metrics", metrics_json(&L->m));
                if (L->has_local) cJSON_AddItemToObject(e, "local", metrics_json(&L->local));
                if (S) {
                    int li = (int)(L - c->layers);
                    if (one < 0) cJSON_AddNumberToObject(e, "worst_sample", S->id[worst_of[li]] + 1);
                    cJSON_AddItemToObject(e, "mean", metrics_json(&mean[li].m));
                    /* Every sample's figures of this layer, in sample order. */
                    cJSON *ps = cJSON_AddArrayToObject(e, "per_sample");
                    for (int k = 0; k < S->n_samples; k++)
                        cJSON_AddItemToArray(ps, metrics_json(&S->m[(size_t)k * (size_t)S->n_layers + (size_t)li]));
                }
                cJSON_AddItemToArray(arr, e);
            }
            text = cJSON_Print(root);
            cJSON_Delete(root);
        } else {
            size_t cap = 256 + (size_t)n * 512, o = 0;
            text = malloc(cap);
            if (text) {
                o += (size_t)snprintf(text + o, cap - o,
                                      "order,node,op,tensor,format,rel_l2,max_abs,mean_abs,cos,sqnr_db,overflow,"
                                      "underflow,subnormal,absmax_ref,local_rel_l2%s\n",
                                      S ? ",worst_sample,mean_rel_l2" : "");
                for (int i = 0; i < n && o < cap; i++) {
                    const mpx_layer *L = rows[i];
                    char f1[300], f2[300];
                    o += (size_t)snprintf(text + o, cap - o, "%d,%s,%s,%s,%s,%.6g,%.6g,%.6g,%.9g,%.6g,%lld,%lld,%lld,%.6g,",
                                          L->node, csv_field(g->nodes[L->node]->name, f1, sizeof f1),
                                          g->nodes[L->node]->op_type, csv_field(layer_name(g, L), f2, sizeof f2),
                                          mpx_format_name(L->fmt), L->m.rel_l2, L->m.max_abs, L->m.mean_abs, L->m.cos,
                                          L->m.sqnr_db, (long long)L->m.overflow, (long long)L->m.underflow,
                                          (long long)L->m.subnormal, L->m.absmax_ref);
                    if (o < cap && L->has_local) o += (size_t)snprintf(text + o, cap - o, "%.6g", L->local.rel_l2);
                    if (o < cap && S) {
                        int li = (int)(L - c->layers);
                        o += (size_t)snprintf(text + o, cap - o, ",%d,%.6g", one < 0 ? S->id[worst_of[li]] + 1 : one + 1,
                                              mean[li].m.rel_l2);
                    }
                    if (o < cap) o += (size_t)snprintf(text + o, cap - o, "\n");
                }
            }
        }
        free(rows);
        free(view), free(mean), free(worst_of);
        return repl_emit(s, text, path, err);
    }
    fprintf(s->out, "%s against fp32, %d layers, sorted by %s%s\n", mpx_format_name(s->last_target), c->n_layers,
            key_name(sm), n < c->n_layers ? "" : " (all)");
    if (S && one >= 0) fprintf(s->out, "sample %d of %d (%s)\n", one + 1, repl_data_count(s->data),
                              repl_data_label(s->data, one));
    else if (S)
        fprintf(s->out, "over %d samples: each layer's worst figures, the sample of its worst rel_l2 and the mean rel_l2\n",
                S->n_samples);
    /* The op column as wide as the longest op shown (BatchNormalization,
     * DequantizeLinear), never cut. */
    int opw = 14;
    for (int i = 0; i < n; i++) {
        int l = (int)strlen(g->nodes[rows[i]->node]->op_type);
        if (l > opw) opw = l;
    }
    fprintf(s->out, "%-5s %-30s %-*s %-5s %9s %-10s %9s %9s %8s %6s %6s%s%s\n", "#", "node", opw, "op", "fmt", "rel_l2", "",
            "max_abs", "cos", "sqnr_db", "ovf", "unf", S && one < 0 ? "  sample      mean" : "",
            s->last_local ? "  local" : "");
    for (int i = 0; i < n; i++) {
        const mpx_layer *L = rows[i];
        char b[16], name[64];
        bar(b, L->m.rel_l2);
        const char *nm = g->nodes[L->node]->name;
        size_t len = strlen(nm);
        /* Long exported names: keep the informative tail. */
        if (len > 30) snprintf(name, sizeof name, "...%s", nm + len - 27);
        else snprintf(name, sizeof name, "%s", nm);
        fprintf(s->out, "%-5d %-30s %-*s %-5s %9.3g %-10s %9.3g %9.6f %8.1f %6lld %6lld", L->node, name, opw,
                g->nodes[L->node]->op_type, mpx_format_name(L->fmt), L->m.rel_l2, b, L->m.max_abs, L->m.cos, L->m.sqnr_db,
                (long long)L->m.overflow, (long long)L->m.underflow);
        if (S && one < 0) fprintf(s->out, "  %6d %9.3g", S->id[worst_of[L - c->layers]] + 1, mean[L - c->layers].m.rel_l2);
        if (L->has_local) fprintf(s->out, "  %.3g", L->local.rel_l2);
        fputc('\n', s->out);
    }
    free(rows);
    free(view), free(mean), free(worst_of);
    return MPX_OK;
}

/* ---- tensor ------------------------------------------------------------------ */

static void value_stats(const mpx_value *v, double *mn, double *mx, double *mean, int64_t *nonfinite) {
    double lo = INFINITY, hi = -INFINITY, sum = 0.0;
    int64_t bad = 0, cnt = 0;
    for (int64_t i = 0; i < v->n; i++) {
        double x = v->f ? (double)v->f[i] : (double)v->i[i];
        if (!isfinite(x)) {
            bad++;
            continue;
        }
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        sum += x;
        cnt++;
    }
    *mn = lo, *mx = hi, *mean = cnt ? sum / (double)cnt : NAN, *nonfinite = bad;
}

/* tensor <name> [--save <file.npy>] [--save-ref <file.npy>] */
MPX_CMD(repl_cmd_tensor) {
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    const char *save = NULL, *save_ref = NULL;
    for (int a = 2; a < argc; a++) {
        if (strcmp(argv[a], "--save") == 0) save = argv[++a];
        else if (strcmp(argv[a], "--save-ref") == 0) save_ref = argv[++a];
    }
    const mpx_graph *g = s->graph;
    const mpx_tensor *t = repl_find_named(g, argv[1]);
    if (!t) {
        char hint[300];
        return mpx_error_set(err, MPX_E_ARG, "no tensor or node named \"%s\"%s", argv[1],
                             repl_name_tail(g, argv[1], true, true, hint, sizeof hint));
    }
    const mpx_compare *c = s->last;
    mpx_compare *fresh = NULL;
    if (!c || c->ref[t->index].n < 0) {
        /* Not kept by the last run (or no run yet): run the current plan again
         * keeping this tensor; the session's last run stays as it was. */
        bool *keep = calloc((size_t)g->n_tensors, sizeof *keep);
        if (!keep) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        keep[t->index] = true;
        st = repl_run_plan(s, s->plan, false, keep, NULL, &fresh, err);
        free(keep);
        if (st) return st;
        c = fresh;
        if (c->ref[t->index].n < 0) {
            mpx_compare_free(fresh);
            return mpx_error_set(err, MPX_E_ARG, "tensor \"%s\" has no value in a run (not computed)", t->name);
        }
    }
    const mpx_value *r = &c->ref[t->index], *v = &c->cand[t->index];
    char sh[256];
    const mpx_format *f = s->plan ? s->plan->tensors[t->index].format : NULL;
    fprintf(s->out, "tensor %s %s %s, held in %s%s\n", t->name, mpx_dtype_name(t->dtype),
            repl_dims_str(r->rank, r->dims, sh, sizeof sh), mpx_format_name(f), fresh ? " (from a fresh run of the current plan)" : "");
    for (int k = 0; k < 2; k++) {
        const mpx_value *x = k ? v : r;
        double mn, mx, mean;
        int64_t bad;
        value_stats(x, &mn, &mx, &mean, &bad);
        fprintf(s->out, "  %-9s min %.6g, max %.6g, mean %.6g", k ? "candidate" : "reference", mn, mx, mean);
        if (bad) fprintf(s->out, ", %lld inf/NaN", (long long)bad);
        fputc('\n', s->out);
    }
    mpx_metrics m;
    if (r->f && v->f && mpx_metrics_compute(r, v, f, &m, err) == MPX_OK)
        fprintf(s->out, "  rel_l2 %.3g, max_abs %.3g, cos %.6f, overflow %lld, underflow %lld, subnormal %lld\n",
                m.rel_l2, m.max_abs, m.cos, (long long)m.overflow, (long long)m.underflow, (long long)m.subnormal);
    if (!st && save && !(st = repl_make_parent(s, save, err)) && (st = mpx_npy_write(save, v, err)) == MPX_OK) fprintf(s->info, "wrote %s\n", save);
    if (!st && save_ref && !(st = repl_make_parent(s, save_ref, err)) && (st = mpx_npy_write(save_ref, r, err)) == MPX_OK) fprintf(s->info, "wrote %s\n", save_ref);
    mpx_compare_free(fresh);
    return st;
}

/* ---- compare ---------------------------------------------------------------- */

/* compare <fmt> <fmt> ...: the current rules under each target, side by side. */
MPX_CMD(repl_cmd_compare) {
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    if (!s->plan) return mpx_error_set(err, MPX_E_INVALID, "no plan (load a model first)");
    bool json = false, local = false;
    int nf = 0;
    const mpx_format *fmts[MPX_COMPARE_MAX_CANDS];
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[a], "--local") == 0) {
            local = true;
        } else if (nf == MPX_COMPARE_MAX_CANDS) {
            return mpx_error_set(err, MPX_E_ARG, "at most %d formats at once", MPX_COMPARE_MAX_CANDS);
        } else {
            const mpx_format *f = mpx_format_by_name(argv[a]);
            if (!f || f->kind == MPX_FMT_FP32) {
                char names[256];
                char hint[128];
                return mpx_error_set(err, MPX_E_ARG, "unknown format \"%s\" (%s)%s", argv[a],
                                     mpx_format_names(" ", true, names, sizeof names),
                                     repl_format_tail(argv[a], true, hint, sizeof hint));
            }
            fmts[nf++] = f;
        }
    }
    mpx_compare *cmp[MPX_COMPARE_MAX_CANDS] = {0};
    mpx_plan *plans[MPX_COMPARE_MAX_CANDS] = {0};
    for (int i = 0; i < nf && !st; i++) {
        mpx_plan_opts o = *mpx_history_opts(s->hist);
        o.target = fmts[i];
        st = repl_build_plan(s, mpx_history_rules(s->hist), &o, &plans[i], err);
    }
    /* One reference run shared by every format. */
    if (!st) st = run_plans(s, plans, nf, local, cmp, err);
    if (st) {
        for (int i = 0; i < nf; i++) {
            mpx_compare_free(cmp[i]);
            mpx_plan_free(plans[i]);
        }
        return st;
    }
    const mpx_graph *g = s->graph;
    cJSON *root = json ? cJSON_CreateArray() : NULL;
    if (!json && s->data)
        fprintf(s->out, "over %d samples: each figure is the worst of any sample\n", repl_data_count(s->data));
    if (!json)
        fprintf(s->out, "%-10s %6s %7s %11s %11s %9s %9s %6s %7s  %s\n", "target", "casts", "low%", "output", "worst",
                "overflow", "underflow", "w.ovf", "w.flush",
                local ? "worst own error (local rel_l2; worst layer)" : "worst layer");
    for (int i = 0; i < nf; i++) {
        repl_run_totals t = repl_totals(g, cmp[i]);
        const mpx_layer *w = repl_worst_layer(cmp[i]);
        /* Weights are converted before the run: their overflow is not in
         * the activations' count, so each row says it apart. */
        int w_flushed = 0;
        int w_overflow = repl_check_weights(s, plans[i], NULL, NULL, NULL, &w_flushed);
        /* With --local the cause leads: the layer whose own rounding does
         * the most (the worst layer may only inherit it). */
        const mpx_layer *own = local ? repl_worst_own_layer(cmp[i]) : NULL;
        if (json) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "target", fmts[i]->name);
            cJSON_AddNumberToObject(e, "casts", plans[i]->counts.casts);
            cJSON_AddNumberToObject(e, "low_macs_pct", plans[i]->counts.low_macs_pct);
            if (t.worst_out) cJSON_AddItemToObject(e, "output", metrics_json(&t.worst_out->m));
            if (w) {
                cJSON_AddStringToObject(e, "worst_tensor", layer_name(g, w));
                cJSON_AddItemToObject(e, "worst", metrics_json(&w->m));
            }
            cJSON_AddNumberToObject(e, "overflow", (double)t.overflow);
            cJSON_AddNumberToObject(e, "underflow", (double)t.underflow);
            cJSON_AddNumberToObject(e, "weights_overflow", w_overflow);
            cJSON_AddNumberToObject(e, "weights_flushed", w_flushed);
            if (own) {
                cJSON_AddStringToObject(e, "worst_own_tensor", layer_name(g, own));
                cJSON_AddNumberToObject(e, "worst_own_local_rel_l2", own->local.rel_l2);
            }
            cJSON_AddItemToArray(root, e);
        } else {
            fprintf(s->out, "%-10s %6d %6.1f%% %11.3g %11.3g %9lld %9lld %6d %7d  %s", fmts[i]->name,
                    plans[i]->counts.casts, plans[i]->counts.low_macs_pct, t.worst_out ? t.worst_out->m.rel_l2 : NAN,
                    w ? w->m.rel_l2 : NAN, (long long)t.overflow, (long long)t.underflow, w_overflow, w_flushed,
                    own ? layer_name(g, own) : w ? layer_name(g, w) : "-");
            if (own) fprintf(s->out, " (%.3g; %s)", own->local.rel_l2, w ? layer_name(g, w) : "-");
            fputc('\n', s->out);
        }
        mpx_plan_free(plans[i]);
    }
    /* Keep the runs for plot/html: they replace the previous stash. */
    for (int i = 0; i < s->n_stash; i++) mpx_compare_free(s->stash[i].cmp);
    for (int i = 0; i < nf; i++) {
        s->stash[i].fmt = fmts[i];
        s->stash[i].cmp = cmp[i];
    }
    s->n_stash = nf;
    if (json) {
        char *text = cJSON_Print(root);
        cJSON_Delete(root);
        return repl_emit(s, text, NULL, err);
    }
    return MPX_OK;
}
