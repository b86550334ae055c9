/* figures.c - the figures a condition names and the conditions themselves:
 * what `assert` checks and what `search` must make hold.
 *
 * A figure is read from a (plan, comparison) pair, not from a program's
 * state, so that search can evaluate candidate plans it has not applied
 * with exactly the code assert uses: a search result that "meets
 * output.rel_l2 < 1e-3" is then an assert that passes, by construction.
 * The weights a plan converts offline that do not fit are counted through
 * colour/'s weight check (weights_overflow). */
#include "mpx_explore.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static bool is_output(const mpx_graph *g, int tensor) { return (g->tensors[tensor]->flags & MPX_T_OUTPUT) != 0; }

mpx_status mpx_explore_parse_number(const char *text, const char *what, double *out, mpx_error *err) {
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

int64_t mpx_figure_weights_overflow(const mpx_plan *p) {
    mpx_weight_check *w = NULL;
    int n = 0;
    int64_t total = 0;
    mpx_error e;
    if (mpx_plan_check_weights(p, &w, &n, &e) != MPX_OK) n = 0;
    for (int i = 0; i < n; i++) total += w[i].overflow;
    free(w);
    return total;
}

/* Exported models reuse names across nodes and tensors (p2o names node
 * p2o.Add.280's output p2o.Add.281), so nodes come first. */
const mpx_tensor *mpx_figure_find_tensor(const mpx_graph *g, const char *name) {
    const mpx_node *n = mpx_graph_find_node(g, name);
    if (n && n->n_outputs && n->outputs[0]) return n->outputs[0];
    return mpx_graph_find_tensor(g, name);
}

const char *mpx_figure_metric_hint(const char *typed, bool extra, char *buf, size_t n) {
    mpx_name_hint h;
    mpx_name_hint_init(&h, typed);
    for (int i = 0; i < MPX_METRIC_COUNT; i++) mpx_name_hint_add(&h, mpx_metric_info_of((mpx_metric_id)i)->name);
    if (extra) mpx_name_hint_add(&h, "absmax"), mpx_name_hint_add(&h, "local");
    return mpx_name_hint_tail(&h, buf, n);
}

const char *mpx_explore_format_hint(const char *typed, bool low_only, char *buf, size_t n) {
    mpx_name_hint h;
    mpx_name_hint_init(&h, typed);
    for (size_t i = 0; i < mpx_format_count(); i++)
        if (!low_only || mpx_format_at(i)->kind != MPX_FMT_FP32) mpx_name_hint_add(&h, mpx_format_at(i)->name);
    return mpx_name_hint_tail(&h, buf, n);
}

/* A metric of the table (numerics/metrics.def), absmax (the reference's
 * largest |value|) or local (the node's own rel_l2, after run --local). */
static bool metric_of(const mpx_layer *L, const char *metric, double *out) {
    mpx_metric_id id;
    if (mpx_metric_by_name(metric, &id) && strcmp(metric, mpx_metric_info_of(id)->name) == 0)
        *out = mpx_metric_value(&L->m, id);
    else if (strcmp(metric, "absmax") == 0) *out = L->m.absmax_ref;
    else if (strcmp(metric, "local") == 0 && L->has_local) *out = L->local.rel_l2;
    else return false;
    return true;
}

/* The worse of two figures of one metric (cos, sqnr_db and the task
 * figures: the smaller). */
static double worse(const char *metric, double a, double b) {
    mpx_metric_id id;
    mpx_task_figure tf;
    bool task = false;
    mpx_error e;
    if (mpx_task_parse(metric, &task, &tf, &e)) task = false;
    bool low_bad = task || (mpx_metric_by_name(metric, &id) && mpx_metric_info_of(id)->low_is_worse);
    if (isnan(a) || isnan(b)) return NAN;
    return low_bad ? (a < b ? a : b) : (a > b ? a : b);
}

/* The plan's figures, once: read by assert, search and their messages. */
typedef enum {
    PF_CASTS, PF_LOW_NODES, PF_LOW_MACS_PCT, PF_LOW_COST_PCT, PF_WEIGHTS_CONVERTED, PF_WEIGHTS_OVERFLOW, PF_COUNT
} plan_fig;
static const char *const plan_fig_names[PF_COUNT] = {"casts", "low_nodes", "low_macs_pct", "low_cost_pct",
                                                     "weights_converted", "weights_overflow"};

/* A plan figure's index, PF_COUNT + colour for a colour count, -1 if fig is
 * not a plan figure. */
static int plan_figure(const char *fig) {
    for (int i = 0; i < PF_COUNT; i++)
        if (strcmp(fig, plan_fig_names[i]) == 0) return i;
    for (int c = 1; c < MPX_COLOUR_COUNT; c++)
        if (strcmp(fig, mpx_colour_name((mpx_colour)c)) == 0) return PF_COUNT + c;
    return -1;
}

bool mpx_figure_needs_run(const char *fig) { return plan_figure(fig) < 0; }

/* eval or eval.<key>: search --eval's figures. */
static bool eval_figure(const char *fig) { return strcmp(fig, "eval") == 0 || (strncmp(fig, "eval.", 5) == 0 && fig[5]); }

/* The run's whole-model figures (beside <tensor>.<metric>). */
static const char *const run_fig_names[] = {"overflow", "underflow", "subnormal", "layers"};
enum { RUN_FIGS = sizeof run_fig_names / sizeof run_fig_names[0] };

void mpx_figure_names(const char *text, void (*add)(const char *prefix, const char *word)) {
    for (int i = 0; i < PF_COUNT; i++) add(text, plan_fig_names[i]);
    for (int c = 1; c < MPX_COLOUR_COUNT; c++) add(text, mpx_colour_name((mpx_colour)c));
    for (int i = 0; i < RUN_FIGS; i++) add(text, run_fig_names[i]);
}

/* "unknown figure" with every figure's name, from the tables, and a hint. */
static mpx_status unknown_figure(const char *fig, mpx_error *err) {
    char plan[256] = "", run[128] = "", hint[96];
    size_t o = 0;
    mpx_name_hint h;
    mpx_name_hint_init(&h, fig);
    for (int i = 0; i < PF_COUNT + MPX_COLOUR_COUNT - 1; i++) {
        const char *n = i < PF_COUNT ? plan_fig_names[i] : mpx_colour_name((mpx_colour)(i - PF_COUNT + 1));
        o += (size_t)snprintf(plan + o, o < sizeof plan ? sizeof plan - o : 0, "%s%s", o ? " " : "", n);
        mpx_name_hint_add(&h, n);
    }
    o = 0;
    for (int i = 0; i < RUN_FIGS; i++) {
        o += (size_t)snprintf(run + o, o < sizeof run ? sizeof run - o : 0, "%s%s", o ? " " : "", run_fig_names[i]);
        mpx_name_hint_add(&h, run_fig_names[i]);
    }
    return mpx_error_set(err, MPX_E_ARG,
                         "unknown figure \"%s\" (plan: %s; run: %s, and output.<metric>, worst.<metric>, "
                         "out[<output>].<metric>, <tensor or node>.<metric>)%s", fig, plan, run, mpx_name_hint_tail(&h, hint, sizeof hint));
}

/* "mean:", "p95:", "worst:" or "sample<k>:" (written `sample 3:`; the
 * condition parser joins the words) before a run figure: which statistic
 * over a data set's samples it reads. *rest is the figure after it. */
static bool stat_prefix(const char *fig, mpx_stat *stat, int *k, const char **rest) {
    static const struct {
        const char *name;
        mpx_stat stat;
    } pre[] = {{"mean:", MPX_STAT_MEAN}, {"p95:", MPX_STAT_P95}, {"worst:", MPX_STAT_WORST}};
    for (size_t i = 0; i < sizeof pre / sizeof pre[0]; i++)
        if (strncmp(fig, pre[i].name, strlen(pre[i].name)) == 0) {
            *stat = pre[i].stat, *k = 0, *rest = fig + strlen(pre[i].name);
            return true;
        }
    if (strncmp(fig, "sample", 6) == 0) {
        char *end;
        long v = strtol(fig + 6, &end, 10);
        if (end != fig + 6 && *end == ':' && v >= 1 && v <= INT32_MAX) {
            *stat = MPX_STAT_SAMPLE, *k = (int)v - 1, *rest = end + 1;
            return true;
        }
    }
    return false;
}

/* A prefixed figure: read rest from a view of the run whose layers hold
 * the statistic. */
static mpx_status stat_figure(const mpx_figure_ctx *x, const char *fig, mpx_stat stat, int k, const char *rest,
                              double *out, mpx_error *err) {
    const mpx_compare *c = x->cmp;
    if (!mpx_figure_needs_run(rest))
        return mpx_error_set(err, MPX_E_ARG, "%s: %s is a figure of the plan, the same for every sample", fig, rest);
    if (!c) return mpx_error_set(err, MPX_E_ARG, "%s needs a run (use: run)", fig);
    if (!c->samples)
        return mpx_error_set(err, MPX_E_ARG, "%s: the run had one input, not a data set (see: help data)", fig);
    if (stat == MPX_STAT_SAMPLE) { /* sample<k>: numbered as in the data set (a shard holds some) */
        int row = mpx_samples_row(c->samples, k);
        if (row < 0)
            return mpx_error_set(err, MPX_E_ARG, "%s: the run has no sample %d (it went over %d sample%s)", fig, k + 1,
                                 c->samples->n_samples, c->samples->n_samples == 1 ? "" : "s");
        k = row;
    }
    mpx_layer *v = malloc((size_t)(c->n_layers ? c->n_layers : 1) * sizeof *v);
    if (!v) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    memcpy(v, c->layers, (size_t)c->n_layers * sizeof *v);
    mpx_status st = mpx_samples_reduce(c->samples, stat, k, v, NULL, err);
    if (!st) {
        mpx_compare view = *c;
        view.layers = v;
        mpx_figure_ctx y = *x;
        y.cmp = &view;
        y.has_stat = true, y.stat = stat, y.stat_k = k;
        st = mpx_figure_read(&y, rest, out, err);
    }
    free(v);
    return st;
}

/* Which layers a <what>.<metric> figure reads, what being the part before
 * the metric's dot (mpx_figure_metric_dot; written to what[n], *metric after
 * it): every model output ("output"), every layer ("worst") or one tensor or
 * node's (its tensor index). mpx_figure_read reads them and mpx_cond_measure
 * asks for them, from this one reading. */
enum {
    FIG_OUTPUTS = -1, FIG_ALL = -2, FIG_NONE = -3 /* no <what>.<metric> */, FIG_UNKNOWN = -4 /* no such name */,
    FIG_NOT_OUTPUT = -5 /* out[<name>] naming no model output */
};
/* out[<name>].<metric>: one model output by its name, which may hold dots
 * (the name runs to the last "]."). */
static int output_figure(const mpx_graph *g, const char *fig, char *what, size_t n, const char **metric) {
    const char *close = strstr(fig, "].");
    for (const char *c = close; c; c = strstr(c + 1, "]."))
        close = c;
    if (!close || close == fig + 4 || !close[2]) return FIG_NONE;
    snprintf(what, n, "%.*s", (int)(close - fig - 4), fig + 4);
    *metric = close + 2;
    for (int k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] && strcmp(g->outputs[k]->name, what) == 0) return g->outputs[k]->index;
    return FIG_NOT_OUTPUT;
}

/* (a name may hold "@" too: the "@" counts only when a number follows it
 * to the end, as a threshold does) */
const char *mpx_figure_metric_dot(const char *fig) {
    const char *at = strrchr(fig, '@'), *end = fig + strlen(fig);
    if (at && at[1]) {
        char *e;
        (void)strtod(at + 1, &e);
        if (e != at + 1 && *e == '\0') end = at;
    }
    const char *dot = NULL;
    for (const char *c = fig; c < end; c++)
        if (*c == '.') dot = c;
    return dot;
}

static int layer_figure(const mpx_graph *g, const char *fig, char *what, size_t n, const char **metric) {
    if (strncmp(fig, "out[", 4) == 0) return output_figure(g, fig, what, n, metric);
    const char *dot = mpx_figure_metric_dot(fig);
    if (!dot || dot == fig || !dot[1]) return FIG_NONE;
    snprintf(what, n, "%.*s", (int)(dot - fig), fig);
    *metric = dot + 1;
    if (strcmp(what, "output") == 0) return FIG_OUTPUTS;
    if (strcmp(what, "worst") == 0) return FIG_ALL;
    const mpx_tensor *t = mpx_figure_find_tensor(g, what);
    return t ? t->index : FIG_UNKNOWN;
}

/* The refusal for out[<name>] naming no model output: the outputs, and the
 * closest. */
static mpx_status not_output(const mpx_graph *g, const char *fig, const char *name, mpx_error *err) {
    char list[512] = "", hint[300];
    size_t o = 0;
    mpx_name_hint h;
    mpx_name_hint_init(&h, name);
    for (int k = 0; k < g->n_outputs; k++) {
        if (!g->outputs[k]) continue;
        o += (size_t)snprintf(list + o, o < sizeof list ? sizeof list - o : 0, "%s%s", o ? ", " : "",
                              g->outputs[k]->name);
        mpx_name_hint_add(&h, g->outputs[k]->name);
    }
    return mpx_error_set(err, MPX_E_ARG, "figure %s: \"%s\" is not a model output (outputs: %s)%s", fig, name, list,
                         mpx_name_hint_tail(&h, hint, sizeof hint));
}

/* The names a figure's <what> may take, for did-you-mean: output, worst,
 * out[<output>], and every node and tensor. */
static const char *what_hint(const mpx_graph *g, const char *what, char *buf, size_t n) {
    mpx_name_hint h;
    mpx_name_hint_init(&h, what);
    mpx_name_hint_add(&h, "output");
    mpx_name_hint_add(&h, "worst");
    char o[600];
    for (int k = 0; k < g->n_outputs; k++)
        if (g->outputs[k]) {
            snprintf(o, sizeof o, "out[%s]", g->outputs[k]->name);
            mpx_name_hint_add(&h, o);
        }
    for (int i = 0; i < g->n_nodes; i++) mpx_name_hint_add(&h, g->nodes[i]->name);
    for (int i = 0; i < g->n_tensors; i++) mpx_name_hint_add(&h, g->tensors[i]->name);
    return mpx_name_hint_tail(&h, buf, n);
}

mpx_status mpx_figure_check(const mpx_graph *g, const char *fig, mpx_error *err) {
    mpx_stat stat;
    int k;
    const char *rest;
    if (stat_prefix(fig, &stat, &k, &rest)) fig = rest;
    if (!mpx_figure_needs_run(fig) || eval_figure(fig)) return MPX_OK;
    for (size_t i = 0; i < sizeof run_fig_names / sizeof run_fig_names[0]; i++)
        if (strcmp(fig, run_fig_names[i]) == 0) return MPX_OK;
    char what[512], hint[300];
    const char *metric = NULL;
    const int t = layer_figure(g, fig, what, sizeof what, &metric);
    if (t == FIG_NONE) return unknown_figure(fig, err);
    if (t == FIG_NOT_OUTPUT) return not_output(g, fig, what, err);
    if (t == FIG_UNKNOWN)
        return mpx_error_set(err, MPX_E_ARG, "figure %s: no tensor or node named \"%s\"%s", fig, what,
                             what_hint(g, what, hint, sizeof hint));
    bool task;
    mpx_task_figure tf;
    mpx_error te;
    if (mpx_task_parse(metric, &task, &tf, &te)) return mpx_error_set(err, MPX_E_ARG, "figure %s: %s", fig, te.msg);
    return MPX_OK;
}

bool mpx_cond_keep(const mpx_graph *g, const mpx_cond *c, bool *keep) {
    bool any = false;
    memset(keep, 0, (size_t)g->n_tensors * sizeof *keep);
    for (int i = 0; i < c->n; i++) {
        const char *fig = c->c[i].fig, *rest, *metric;
        mpx_stat stat;
        int k;
        if (stat_prefix(fig, &stat, &k, &rest)) fig = rest;
        if (eval_figure(fig)) { /* --eval's command reads every output */
            any = true;
            for (int j = 0; j < g->n_outputs; j++)
                if (g->outputs[j]) keep[g->outputs[j]->index] = true;
            continue;
        }
        char what[512];
        const int t = layer_figure(g, fig, what, sizeof what, &metric);
        bool task = false;
        mpx_task_figure tf;
        mpx_error e;
        if (t == FIG_NONE || t < FIG_ALL || mpx_task_parse(metric, &task, &tf, &e) || !task) continue;
        any = true;
        for (int j = 0; t < 0 && j < g->n_outputs; j++)
            if (g->outputs[j]) keep[g->outputs[j]->index] = true;
        if (t >= 0) keep[t] = true;
    }
    return any;
}

/* A task figure over a data set: each sample's figure from the values the
 * run held for every sample (mpx_samples_hold), then their mean (the share
 * over all samples when each sample counts alike: top1 over 32 one-row
 * samples is the share of samples whose class agrees), or the stat prefix's
 * reduction: worst is the lowest (task figures are shares, higher better),
 * p95 the nearest-rank ceil(0.95 n)-th best, sample<k> one sample's. */
static mpx_status task_over_samples(const mpx_figure_ctx *x, const char *fig, int t, const mpx_task_figure *tf,
                                    double *out, mpx_error *err) {
    const mpx_samples *S = x->cmp->samples;
    const char *name = x->plan->g->tensors[t]->name;
    if (!mpx_samples_held(S, 0, t, false))
        return mpx_error_set(err, MPX_E_ARG,
                             "figure %s: over a data set the run must hold %s for every sample (search and sweep "
                             "do for their conditions; use: run --keep %s)", fig, name, name);
    double *v = malloc((size_t)S->n_samples * sizeof *v);
    if (!v) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    mpx_status st = MPX_OK;
    for (int k = 0; k < S->n_samples && !st; k++) {
        mpx_error e;
        const mpx_value *r = mpx_samples_held(S, k, t, false), *c = mpx_samples_held(S, k, t, true);
        if (!r || !c) st = mpx_error_set(err, MPX_E_ARG, "figure %s: sample %d's values of %s were not held", fig,
                                         S->id[k] + 1, name);
        else if ((st = mpx_task_compute(r, c, tf, &v[k], &e)))
            mpx_error_set(err, st, "figure %s (%s), sample %d: %s", fig, name, S->id[k] + 1, e.msg);
    }
    if (!st) {
        mpx_stat stat = x->has_stat ? x->stat : MPX_STAT_MEAN;
        if (stat == MPX_STAT_SAMPLE) {
            *out = x->stat_k >= 0 && x->stat_k < S->n_samples ? v[x->stat_k] : NAN;
        } else if (stat == MPX_STAT_MEAN) {
            double sum = 0;
            for (int k = 0; k < S->n_samples; k++) sum += v[k];
            *out = sum / S->n_samples;
        } else { /* a share: the lower, the worse (badness -v) */
            double worst = v[0];
            for (int k = 0; k < S->n_samples; k++) {
                if (v[k] < worst) worst = v[k];
                v[k] = -v[k];
            }
            *out = stat == MPX_STAT_WORST ? worst : -mpx_samples_p95(v, S->n_samples);
        }
    }
    free(v);
    return st;
}

/* A task figure (numerics/task.c) of tensor t: from the run's values of it
 * and its reference, which the run must have kept (search keeps them for
 * the conditions that read them: mpx_cond_keep); over a data set, from
 * every sample's (task_over_samples). */
static mpx_status task_value(const mpx_figure_ctx *x, const char *fig, int t, const mpx_task_figure *tf, double *out,
                             mpx_error *err) {
    const mpx_compare *c = x->cmp;
    const char *name = x->plan->g->tensors[t]->name;
    if (c->samples) return task_over_samples(x, fig, t, tf, out, err);
    if (!c->ref || !c->cand || c->ref[t].n < 0 || c->cand[t].n < 0)
        return mpx_error_set(err, MPX_E_ARG, "figure %s: the run did not keep the values of %s (use: run --keep %s)",
                             fig, name, name);
    mpx_error e;
    mpx_status st = mpx_task_compute(&c->ref[t], &c->cand[t], tf, out, &e);
    return st ? mpx_error_set(err, st, "figure %s (%s): %s", fig, name, e.msg) : MPX_OK;
}

mpx_status mpx_figure_read(const mpx_figure_ctx *x, const char *fig, double *out, mpx_error *err) {
    mpx_stat stat;
    int sk;
    const char *rest;
    if (stat_prefix(fig, &stat, &sk, &rest)) return stat_figure(x, fig, stat, sk, rest, out, err);
    const mpx_plan *p = x->plan;
    const mpx_graph *g = p->g;
    int pf = plan_figure(fig);
    if (pf >= PF_COUNT) return *out = p->counts.nodes[pf - PF_COUNT], MPX_OK;
    switch (pf) {
    case PF_CASTS: return *out = p->counts.casts, MPX_OK;
    case PF_LOW_NODES: return *out = p->counts.low_nodes, MPX_OK;
    case PF_LOW_MACS_PCT: return *out = p->counts.low_macs_pct, MPX_OK;
    case PF_LOW_COST_PCT: return *out = p->counts.low_cost_pct, MPX_OK;
    case PF_WEIGHTS_CONVERTED: return *out = p->counts.weights_converted, MPX_OK;
    case PF_WEIGHTS_OVERFLOW: {
        return *out = (double)mpx_figure_weights_overflow(p), MPX_OK;
    }
    default: break;
    }
    const mpx_compare *c = x->cmp;
    if (eval_figure(fig)) {
        if (!x->eval)
            return mpx_error_set(err, MPX_E_ARG, "%s is the figure of a command: search ... --eval \"<command>\"", fig);
        if (!c) return mpx_error_set(err, MPX_E_ARG, "%s needs a run", fig);
        return x->eval(x->eval_ctx, g, c, fig, out, err);
    }
    for (int i = 0; i < RUN_FIGS; i++) {
        if (strcmp(fig, run_fig_names[i]) != 0) continue;
        if (!c) return mpx_error_set(err, MPX_E_ARG, "%s needs a run (use: run)", fig);
        mpx_run_totals t = mpx_compare_totals(c);
        double v[RUN_FIGS] = {(double)t.overflow, (double)t.underflow, (double)t.subnormal, (double)c->n_layers};
        return *out = v[i], MPX_OK;
    }
    char what[512];
    const char *metric = NULL;
    const int want = layer_figure(g, fig, what, sizeof what, &metric);
    if (want == FIG_NONE) return unknown_figure(fig, err);
    if (want == FIG_UNKNOWN || want == FIG_NOT_OUTPUT) return mpx_figure_check(g, fig, err);
    if (!c) return mpx_error_set(err, MPX_E_ARG, "%s needs a run (use: run)", fig);
    bool any = false;
    double v = NAN, val;
    for (int i = 0; i < c->n_layers; i++) {
        const mpx_layer *L = &c->layers[i];
        if (want >= 0 ? L->tensor != want : (want == FIG_OUTPUTS && !is_output(g, L->tensor))) continue;
        if (L->unmeasured) continue;
        bool task = false;
        mpx_task_figure tf;
        mpx_error te;
        if (!metric_of(L, metric, &val) && mpx_task_parse(metric, &task, &tf, &te) != MPX_OK)
            return mpx_error_set(err, MPX_E_ARG, "figure %s: %s", fig, te.msg);
        if (task) {
            mpx_status st = task_value(x, fig, L->tensor, &tf, &val, err);
            if (st) return st;
        } else if (!metric_of(L, metric, &val)) {
            char names[256];
            char hint[128];
            return mpx_error_set(err, MPX_E_ARG,
                                 "figure %s: unknown metric \"%s\" (%s absmax%s; task: top1 topk_overlap@k iou@t "
                                 "sign_agree@t)%s", fig, metric,
                                 mpx_metric_names(" ", names, sizeof names), x->local ? " local" : "",
                                 mpx_figure_metric_hint(metric, true, hint, sizeof hint));
        }
        v = any ? worse(metric, v, val) : val;
        any = true;
    }
    if (!any) return mpx_error_set(err, MPX_E_ARG, "figure %s: the last run compared no such tensor", fig);
    *out = v;
    return MPX_OK;
}

/* ---- conditions ------------------------------------------------------------ */

static const char *const cmp_ops[] = {"<=", ">=", "==", "!=", "<", ">", "="};

mpx_status mpx_cond_parse(const char *cmd, int argc, char **argv, mpx_cond *c, mpx_error *err) {
    memset(c, 0, sizeof *c);
    if (argc < 1) return mpx_error_set(err, MPX_E_ARG, "usage: %s <figure> <op> <number> [and ...]", cmd);
    /* Clauses are split at "and"; a clause may be written with or without
     * blanks around its operator. */
    int a = 0;
    size_t to = 0;
    while (a < argc) {
        if (c->n == MPX_COND_MAX)
            return mpx_error_set(err, MPX_E_ARG, "%s: more than %d clauses", cmd, MPX_COND_MAX);
        char clause[1024];
        size_t o = 0;
        clause[0] = '\0';
        int first = a;
        for (; a < argc && strcmp(argv[a], "and") != 0; a++) {
            if (strcmp(argv[a], "or") == 0 || strcmp(argv[a], "not") == 0)
                return mpx_error_set(err, MPX_E_ARG, "%s: \"%s\" is not part of a condition: its clauses are joined by "
                                     "and, and all of them must hold", cmd, argv[a]);
            o += (size_t)snprintf(clause + o, o < sizeof clause ? sizeof clause - o : 0, "%s", argv[a]);
        }
        if (o >= sizeof clause) return mpx_error_set(err, MPX_E_ARG, "%s: expression too long", cmd);
        int end = a;
        /* a last "and" with nothing after it: a gate with a clause lost in
         * an edit must not pass */
        if (a == argc - 1)
            return mpx_error_set(err, MPX_E_ARG, "%s: nothing after the last \"and\": give its clause or remove it", cmd);
        a++; /* past "and" */
        char *at = NULL;
        int op = -1;
        for (int k = 0; k < 7 && !at; k++)
            if ((at = strstr(clause, cmp_ops[k]))) op = k;
        if (!at || at == clause)
            return mpx_error_set(err, MPX_E_ARG, "%s: expected <figure> <op> <number> in \"%s\" (op: < <= > >= == !=)",
                                 cmd, clause);
        mpx_clause *cl = &c->c[c->n++];
        snprintf(cl->fig, sizeof cl->fig, "%.*s", (int)(at - clause), clause);
        snprintf(cl->num, sizeof cl->num, "%s", at + strlen(cmp_ops[op]));
        cl->op = op;
        mpx_status st = mpx_explore_parse_number(cl->num, cmd, &cl->want, err);
        if (st) {
            /* The clause's words are joined, so a mistyped "and" shows up
             * inside the number ("1adncasts<3"): name it. */
            for (int k = first; k < end; k++) {
                mpx_name_hint h;
                mpx_name_hint_init(&h, argv[k]);
                mpx_name_hint_add(&h, "and");
                if (strcmp(argv[k], "and") != 0 && mpx_name_hint_get(&h))
                    return mpx_error_set(err, MPX_E_ARG, "%s: \"%s\" is not a keyword: did you mean and?", cmd,
                                         argv[k]);
            }
            return st;
        }
        to += (size_t)snprintf(c->text + to, to < sizeof c->text ? sizeof c->text - to : 0, "%s%s %s %s",
                               c->n > 1 ? " and " : "", cl->fig, cmp_ops[op], cl->num);
    }
    return MPX_OK;
}

bool mpx_cond_measure(const mpx_graph *g, const mpx_cond *c, bool *measure) {
    memset(measure, 0, (size_t)g->n_tensors * sizeof *measure);
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i]) measure[g->outputs[i]->index] = true;
    for (int i = 0; i < c->n; i++) {
        const char *fig = c->c[i].fig, *rest;
        mpx_stat stat;
        int k;
        if (stat_prefix(fig, &stat, &k, &rest)) fig = rest;
        if (!mpx_figure_needs_run(fig) || eval_figure(fig)) continue;
        char what[512];
        const char *metric;
        const int t = layer_figure(g, fig, what, sizeof what, &metric);
        if (t == FIG_OUTPUTS) continue;
        if (t < 0) return false; /* worst.*, overflow, underflow, subnormal, layers, or an error to come */
        measure[t] = true;
    }
    return true;
}

bool mpx_cond_needs_run(const mpx_cond *c) {
    for (int i = 0; i < c->n; i++)
        if (mpx_figure_needs_run(c->c[i].fig)) return true;
    return false;
}

mpx_status mpx_cond_eval(const mpx_figure_ctx *x, const mpx_cond *c, double *got, int *failed, mpx_error *err) {
    for (int i = 0; i < c->n; i++) got[i] = NAN;
    *failed = -1;
    for (int i = 0; i < c->n; i++) {
        const mpx_clause *cl = &c->c[i];
        double v = NAN;
        mpx_status st = mpx_figure_read(x, cl->fig, &v, err);
        if (st) return st;
        got[i] = v;
        int op = cl->op;
        double w = cl->want;
        bool ok = op == 0 ? v <= w : op == 1 ? v >= w : op == 2 || op == 6 ? v == w : op == 3 ? v != w
                  : op == 4 ? v < w : v > w;
        if (!ok) {
            *failed = i; /* the later clauses are not evaluated (assert names the first) */
            return MPX_OK;
        }
    }
    return MPX_OK;
}

const char *mpx_cond_op(const mpx_clause *cl) { return cmp_ops[cl->op]; }

/* Why more digits: a share of 0.99974 printed "1" beside ">= 1" reads as a
 * clause that holds. */
const char *mpx_clause_got_text(const mpx_clause *cl, double got, int digits, char *buf, size_t n) {
    for (int d = digits < 1 ? 1 : digits;; d++) {
        snprintf(buf, n, "%.*g", d, got);
        const double shown = strtod(buf, NULL);
        if (d >= 17 || !isfinite(got) || shown == got) break;
        const bool same_side = (shown < cl->want) == (got < cl->want) && (shown > cl->want) == (got > cl->want);
        if (same_side && shown != cl->want) break;
    }
    return buf;
}

const char *mpx_cond_output_ambiguity(const mpx_graph *g, const mpx_cond *c) {
    bool named = false;
    for (int k = 0; g && k < g->n_outputs; k++) named = named || (g->outputs[k] && strcmp(g->outputs[k]->name, "output") == 0);
    for (int i = 0; named && i < c->n; i++) {
        const char *fig = c->c[i].fig, *rest;
        mpx_stat stat;
        int k;
        if (stat_prefix(fig, &stat, &k, &rest)) fig = rest;
        if (strncmp(fig, "output.", 7) == 0) return fig;
    }
    return NULL;
}
