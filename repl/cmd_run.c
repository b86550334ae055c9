/* cmd_run.c - runs: run and compare (report and tensor are cmd_report.c's).
 *
 * A run is mpx_compare_run: the fp32 reference and the plan's assignment side
 * by side, per-layer metrics for every float tensor a node computes. Input
 * values are made from the session's input specs at every run (cheap next to
 * the run, and it keeps the specs the single truth that `save` replays).
 * Figures, conditions and assert are figures.c's. */
#include "repl_internal.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
static double output_badness(const mpx_compare *c) {
    double r = mpx_compare_totals(c).out_rel_l2;
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
 * every sample's figures. Through the caches (run and search, one
 * candidate, not local), sample k runs through its own cache (sample_cache):
 * its reference and the layers a plan change does not touch are not
 * computed again, within the budget (`set cache`) split evenly between the
 * samples, so memory does not grow with their number. nc candidates (compare's formats) share each
 * sample's reference run; out[j] is as[j]'s. */
static mpx_status run_samples_many(mpx_session *s, const mpx_assign *const *as, int nc, bool local, const bool *keep,
                                   const bool *measure, repl_cached how, int shard_k, int shard_n, mpx_compare **out, mpx_error *err) {
    const mpx_graph *g = s->graph;
    int n = repl_data_count(s->data);
    mpx_samples *S[MPX_COMPARE_MAX_CANDS] = {0};
    mpx_compare *best[MPX_COMPARE_MAX_CANDS] = {0}; /* the kept ones: worst output so far */
    double ms[MPX_COMPARE_MAX_CANDS][4] = {{0}};
    int n_run[MPX_COMPARE_MAX_CANDS] = {0}, n_shared[MPX_COMPARE_MAX_CANDS] = {0};
    bool incremental[MPX_COMPARE_MAX_CANDS] = {0};
    size_t peak = 0;
    mpx_status st = MPX_OK;
    for (int j = 0; j < nc && !st; j++)
        if (!(S[j] = mpx_samples_new())) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int k = shard_k; k < n && !st; k += shard_n) {
        mpx_value *inputs = NULL;
        if ((st = repl_data_inputs(s, k, &inputs, err))) break;
        sample_progress sp = {k, n};
        mpx_compare_opts o = {.local = local, .keep = keep, .cancel = s->cancel, .measure = measure};
        if (how != REPL_UNCACHED && nc == 1 && !local) o.cache = sample_cache(s, k, n);
        o.undoable = how == REPL_CACHED_UNDOABLE;
        if (s->progress) o.progress = sample_progress_cb, o.progress_ctx = &sp;
        mpx_compare *c[MPX_COMPARE_MAX_CANDS] = {0};
        st = nc == 1 ? mpx_compare_run(g, as[0], inputs, &o, &c[0], err)
                     : mpx_compare_run_many(g, as, nc, inputs, &o, c, err);
        repl_free_inputs(s, inputs);
        if (st) {
            if (st != MPX_E_CANCELLED) mpx_dataset_error_sample(err, k, n, repl_data_label(s->data, k));
            break;
        }
        for (int j = 0; j < nc; j++) {
            ms[j][0] += c[j]->ms_ref, ms[j][1] += c[j]->ms_cand, ms[j][2] += c[j]->ms_local, ms[j][3] += c[j]->ms_metrics;
            if (c[j]->peak_bytes > peak) peak = c[j]->peak_bytes;
            n_run[j] += c[j]->n_run;
            n_shared[j] += c[j]->n_shared;
            incremental[j] = incremental[j] || c[j]->incremental;
            if (!st) st = mpx_samples_add(S[j], c[j], k, err);
            /* the values task figures and --eval read, for every sample */
            if (!st && keep) st = mpx_samples_hold(S[j], c[j], keep, g->n_tensors, err);
            if (!st && (!best[j] || output_badness(c[j]) > output_badness(best[j]))) {
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
        best[j]->n_shared = n_shared[j];
        out[j] = best[j];
    }
    return st;
}

static mpx_status run_samples(mpx_session *s, const mpx_plan *p, bool local, const bool *keep, const bool *measure,
                              repl_cached how,
                              int shard_k, int shard_n, mpx_compare **out, mpx_error *err) {
    mpx_assign *a = mpx_plan_to_assign(p, err);
    if (!a) return err->status ? err->status : MPX_E_NOMEM;
    const mpx_assign *as[1] = {a};
    mpx_status st = run_samples_many(s, as, 1, local, keep, measure, how, shard_k, shard_n, out, err);
    mpx_assign_free(a);
    return st;
}

/* With a data set, the run goes over its samples (run_samples). */
mpx_status repl_run_plan(mpx_session *s, const mpx_plan *p, bool local, const bool *keep, const bool *measure,
                         repl_cached how, mpx_compare **out, mpx_error *err) {
    if (s->data) return run_samples(s, p, local, keep, measure, how, 0, 1, out, err);
    mpx_value *inputs = s->held_inputs;
    mpx_status st = inputs ? MPX_OK : repl_make_inputs(s, &inputs, err);
    if (st) return st;
    mpx_assign *a = mpx_plan_to_assign(p, err);
    if (!a) {
        if (inputs != s->held_inputs) repl_free_inputs(s, inputs);
        return err->status ? err->status : MPX_E_NOMEM;
    }
    /* The session's cache is made on first use; without memory for it the
     * run is a full one, as always. */
    if (how != REPL_UNCACHED && !s->run_cache && s->cache_mb > 0)
        s->run_cache = mpx_compare_cache_new((size_t)s->cache_mb << 20);
    mpx_compare_opts o = {.local = local, .keep = keep, .cancel = s->cancel, .measure = measure,
                          .cache = how != REPL_UNCACHED ? s->run_cache : NULL,
                          .undoable = how == REPL_CACHED_UNDOABLE};
    if (s->progress) o.progress = progress_cb;
    st = mpx_compare_run(s->graph, a, inputs, &o, out, err);
    if (st && s->progress) fputs("\r                                   \r", stderr); /* a cancelled run's line */
    mpx_assign_free(a);
    if (inputs != s->held_inputs) repl_free_inputs(s, inputs);
    return st;
}

void repl_undo_trial(mpx_session *s) {
    mpx_compare_cache_undo(s->run_cache);
    for (int k = 0; k < s->n_sample_cache; k++) mpx_compare_cache_undo(s->sample_cache[k]);
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
        st = run_samples_many(s, as, n, local, NULL, NULL, REPL_UNCACHED, 0, 1, out, err);
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
    /* a copy of the whole list: a model's tensor names run to thousands of
     * characters, and a cut name would be reported as unknown */
    char *buf = strdup(list), *save = NULL;
    if (!buf) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    mpx_status st = MPX_OK;
    for (char *tok = strtok_r(buf, ",", &save); tok && !st; tok = strtok_r(NULL, ",", &save)) {
        const mpx_tensor *t = mpx_figure_find_tensor(g, tok);
        if (!t) {
            char hint[300];
            st = mpx_error_set(err, MPX_E_ARG, "no tensor or node named \"%s\"%s", tok,
                               repl_name_tail(g, tok, true, true, hint, sizeof hint));
        } else {
            keep[t->index] = true;
        }
    }
    free(buf);
    return st;
}

static bool rules_use_measured(const mpx_session *s) {
    const mpx_rules *r = mpx_history_rules(s->hist);
    for (int i = 0; i < mpx_rules_count(r); i++)
        if (mpx_rules_uses_measured(r, i)) return true;
    return false;
}

static const char *layer_name(const mpx_graph *g, const mpx_layer *L) { return g->tensors[L->tensor]->name; }

void repl_overflow_cause(const mpx_session *s, const mpx_compare *c, const mpx_layer *L, char *buf, size_t n) {
    const mpx_plan *p = s->run_plan && c == s->last ? s->run_plan : s->plan;
    mpx_nonfinite_cause k;
    mpx_error e;
    if (p && mpx_plan_nonfinite_cause(p, c, L, &k, &e) == MPX_OK) mpx_nonfinite_cause_text(p, &k, buf, n);
    else snprintf(buf, n, "non-finite in %s where fp32 is finite (fp32 values up to %.4g; no plan of this run to "
                          "trace the cause)", mpx_format_name(L->fmt), L->m.absmax_ref);
}

void repl_print_run_summary(mpx_session *s, const mpx_compare *c, const mpx_format *target) {
    const mpx_graph *g = s->graph;
    mpx_run_totals t = mpx_compare_totals(c);
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
    const mpx_layer *w = mpx_compare_worst_layer(c, MPX_WORST_ANY);
    if (w)
        fprintf(s->info, "  worst layer: %s (%s %s) rel_l2 %.3g\n", layer_name(g, w), g->nodes[w->node]->op_type,
                g->nodes[w->node]->name, w->m.rel_l2);
    /* With --local figures the cause leads: the layer whose own rounding
     * does the most, which the worst layer above may only inherit. */
    const mpx_layer *own = mpx_compare_worst_layer(c, MPX_WORST_OWN);
    if (own)
        fprintf(s->info, "  worst own error: %s (%s %s) local rel_l2 %.3g (rel_l2 %.3g at its output)\n",
                layer_name(g, own), g->nodes[own->node]->op_type, g->nodes[own->node]->name, own->local.rel_l2,
                own->m.rel_l2);
    /* Inside Loop, Scan and SequenceMap bodies: the worst value over the
     * iterations, and values that overflowed there (the node's outputs may
     * hide it: a loop can carry an inf away or saturate it). */
    const mpx_body_layer *bw = NULL, *bo = NULL;
    for (int i = 0; i < c->n_body; i++) {
        const mpx_body_layer *B = &c->body[i];
        if (!bw || B->worst.rel_l2 > bw->worst.rel_l2 || isnan(B->worst.rel_l2)) bw = B;
        if (!bo && B->worst.overflow) bo = B;
    }
    if (bw)
        fprintf(s->info, "  inside bodies: %d values; worst %s (%s) rel_l2 %.3g at iteration %lld of %lld (report lists them)\n",
                c->n_body, bw->node->name, bw->node->op_type, bw->worst.rel_l2, (long long)bw->worst_run,
                (long long)bw->runs);
    if (bo) {
        /* Only values beyond the format's range "do not fit"; a body node
         * that makes inf from values that fit has its cause upstream or in
         * its own arithmetic, which `why` on the node that holds it names. */
        double max = bo->fmt ? (double)bo->fmt->max_finite : (double)FLT_MAX;
        if (bo->worst.absmax_ref > max)
            fprintf(s->info, "  overflow inside bodies: first at %s (%s): fp32 values up to %.4g do not fit %s\n",
                    bo->node->name, bo->node->op_type, bo->worst.absmax_ref, mpx_format_name(bo->fmt));
        else
            fprintf(s->info, "  overflow inside bodies: first at %s (%s): non-finite values although its fp32 values "
                             "(up to %.4g) fit %s: an input that underflowed or a constant flushed to zero "
                             "upstream, or its own arithmetic\n",
                    bo->node->name, bo->node->op_type, bo->worst.absmax_ref, mpx_format_name(bo->fmt));
    }
    if (t.layers_overflow) {
        char cause[1024] = "";
        repl_overflow_cause(s, c, t.first_overflow, cause, sizeof cause);
        fprintf(s->info, "  overflow: %lld values in %d layers, first at %s (%s): %s\n", (long long)t.overflow,
                t.layers_overflow, layer_name(g, t.first_overflow), g->nodes[t.first_overflow->node]->op_type, cause);
    } else fprintf(s->info, "  overflow: none in activations\n");
    char head[160];
    snprintf(head, sizeof head, "  weights that do not fit %s (converted offline, before the run):\n",
             mpx_format_name(target));
    if (!repl_check_weights(s, s->plan, s->info, head, NULL, NULL)) repl_print_flushed(s, s->plan, s->info, "  ");
    if (t.layers_underflow)
        fprintf(s->info, "  underflow: %lld non-zero values became zero in %d layer%s\n", (long long)t.underflow,
                t.layers_underflow, t.layers_underflow == 1 ? "" : "s");
}

void repl_print_flushed(const mpx_session *s, const mpx_plan *p, FILE *out, const char *indent) {
    mpx_weight_check *w = NULL;
    int n = 0, flushed = 0;
    mpx_error e;
    if (mpx_plan_check_weights(p, &w, &n, &e) != MPX_OK) n = 0;
    for (int i = 0; i < n; i++) flushed += w[i].underflow > 0;
    if (flushed) {
        fprintf(out, "%s%d weight%s with values flushed to zero in %s (converted offline):", indent, flushed,
                flushed == 1 ? "" : "s", mpx_format_name(p->opts.target));
        int shown = 0;
        for (int i = 0; i < n; i++) {
            if (!w[i].underflow) continue;
            if (shown++ == 8) {
                fprintf(out, ", ...");
                break;
            }
            fprintf(out, "%s %s (%lld of %lld)", shown > 1 ? "," : "", s->graph->tensors[p->weights[w[i].weight].tensor]->name,
                    (long long)w[i].underflow, (long long)w[i].n);
        }
        fputc('\n', out);
    }
    free(w);
}

/* run [--local] [--keep <tensor,...>] [--samples k/n] */
mpx_status repl_cmd_run(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    if (!s->plan) return mpx_error_set(err, MPX_E_INVALID, "no plan (load a model first)");
    bool local = args->opt[RUN_LOCAL].given;
    bool *keep = calloc((size_t)(s->graph->n_tensors ? s->graph->n_tensors : 1), sizeof *keep);
    if (!keep) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    const mpx_opt_value *kv = &args->opt[RUN_KEEP];
    for (int k = 0; k < kv->count && !st; k++) st = parse_keep(s->graph, kv->all[k], keep, err);
    /* One input (no data set): its float model inputs are kept too, a copy
     * the size of the input, so that an overflow where an input meets a low
     * node is laid at the conversion, not at the node (colour/cause.c). */
    for (int i = 0; !s->data && i < s->graph->n_inputs; i++)
        if (mpx_dtype_is_float(s->graph->inputs[i]->dtype)) keep[s->graph->inputs[i]->index] = true;
    const mpx_opt_value *sv = &args->opt[RUN_SAMPLES];
    int shard_k = sv->given ? (int)sv->i - 1 : 0, shard_n = sv->given ? (int)sv->n : 1;
    if (!st && shard_n > 1 && !s->data) st = mpx_error_set(err, MPX_E_ARG, "--samples %d/%d: no data set (see: help data)",
                                                          shard_k + 1, shard_n);
    mpx_compare *c = NULL;
    if (!st && shard_n > 1) st = run_samples(s, s->plan, local, keep, NULL, REPL_CACHED, shard_k, shard_n, &c, err);
    else if (!st) st = repl_run_plan(s, s->plan, local, keep, NULL, REPL_CACHED, &c, err);
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

/* ---- compare ---------------------------------------------------------------- */

/* compare <fmt> <fmt> ...: the current rules under each target, side by side. */
mpx_status repl_cmd_compare(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    if (!s->plan) return mpx_error_set(err, MPX_E_INVALID, "no plan (load a model first)");
    bool json = args->opt[COMPARE_JSON].given, local = args->opt[COMPARE_LOCAL].given;
    int nf = 0;
    const mpx_format *fmts[MPX_COMPARE_MAX_CANDS];
    for (int a = 0; a < args->n; a++) {
        const char *w = args->word[a];
        if (nf == MPX_COMPARE_MAX_CANDS) return mpx_error_set(err, MPX_E_ARG, "at most %d formats at once", MPX_COMPARE_MAX_CANDS);
        const mpx_format *f = mpx_format_by_name(w);
        if (!f || f->kind == MPX_FMT_FP32) {
            char names[256];
            char hint[128];
            return mpx_error_set(err, MPX_E_ARG, "unknown format \"%s\" (%s)%s", w,
                                 mpx_format_names(" ", true, names, sizeof names),
                                 mpx_explore_format_hint(w, true, hint, sizeof hint));
        }
        fmts[nf++] = f;
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
        fprintf(s->out, "%-10s %6s %7s %7s %11s %11s %9s %9s %6s %7s  %s\n", "target", "casts", "low%", "cost%", "output", "worst",
                "overflow", "underflow", "w.ovf", "w.flush",
                local ? "worst own error (local rel_l2; worst layer)" : "worst layer");
    for (int i = 0; i < nf; i++) {
        mpx_run_totals t = mpx_compare_totals(cmp[i]);
        const mpx_layer *w = mpx_compare_worst_layer(cmp[i], MPX_WORST_ANY);
        /* Weights are converted before the run: their overflow is not in
         * the activations' count, so each row says it apart. */
        int w_flushed = 0;
        int w_overflow = repl_check_weights(s, plans[i], NULL, NULL, NULL, &w_flushed);
        /* With --local the cause leads: the layer whose own rounding does
         * the most (the worst layer may only inherit it). */
        const mpx_layer *own = local ? mpx_compare_worst_layer(cmp[i], MPX_WORST_OWN) : NULL;
        if (json) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "target", fmts[i]->name);
            cJSON_AddNumberToObject(e, "casts", plans[i]->counts.casts);
            /* every digit, as plan --json's */
            mpx_explore_json_exact(e, "low_macs_pct", plans[i]->counts.low_macs_pct, "null");
            mpx_explore_json_exact(e, "low_cost_pct", plans[i]->counts.low_cost_pct, "null");
            if (t.worst_out) cJSON_AddItemToObject(e, "output", repl_metrics_json(&t.worst_out->m));
            if (w) {
                cJSON_AddStringToObject(e, "worst_tensor", layer_name(g, w));
                cJSON_AddItemToObject(e, "worst", repl_metrics_json(&w->m));
            }
            cJSON_AddNumberToObject(e, "overflow", (double)t.overflow);
            cJSON_AddNumberToObject(e, "underflow", (double)t.underflow);
            cJSON_AddNumberToObject(e, "weights_overflow", w_overflow);
            cJSON_AddNumberToObject(e, "weights_flushed", w_flushed);
            if (own) {
                cJSON_AddStringToObject(e, "worst_own_tensor", layer_name(g, own));
                mpx_explore_json_exact(e, "worst_own_local_rel_l2", own->local.rel_l2, "null");
            }
            cJSON_AddItemToArray(root, e);
        } else {
            fprintf(s->out, "%-10s %6d %6.1f%% %6.1f%% %11.3g %11.3g %9lld %9lld %6d %7d  %s", fmts[i]->name,
                    plans[i]->counts.casts, plans[i]->counts.low_macs_pct, plans[i]->counts.low_cost_pct, t.worst_out ? t.worst_out->m.rel_l2 : NAN,
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
