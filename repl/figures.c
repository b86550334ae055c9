/* figures.c - `assert` over explore/'s figures and conditions, trials (a
 * plan of the session's not applied, and its run), the name hints of the
 * commands' messages, and the lines that list the weights a plan converts
 * offline that do not fit (plan, run and compare print them). */
#include "repl_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool repl_is_output(const mpx_graph *g, int tensor) { return (g->tensors[tensor]->flags & MPX_T_OUTPUT) != 0; }

const char *repl_name_tail(const mpx_graph *g, const char *typed, bool nodes, bool tensors, char *buf, size_t n) {
    mpx_name_hint h;
    mpx_name_hint_init(&h, typed);
    for (int i = 0; nodes && i < g->n_nodes; i++) mpx_name_hint_add(&h, g->nodes[i]->name);
    for (int i = 0; tensors && i < g->n_tensors; i++) mpx_name_hint_add(&h, g->tensors[i]->name);
    return mpx_name_hint_tail(&h, buf, n);
}

void repl_cond_warn(mpx_session *s, const mpx_cond *c) {
    const char *fig = s->warned_output_name ? NULL : mpx_cond_output_ambiguity(s->graph, c);
    if (!fig) return;
    fprintf(s->info, "warning: %s is the worst over all %d model outputs; the output named \"output\" is out[output].%s\n",
            fig, s->graph->n_outputs, fig + 7);
    s->warned_output_name = true;
}

/* ---- trials: the session as explore/'s host ---------------------------------- */

static mpx_status host_plan(void *ctx, const mpx_rules *r, const mpx_plan_opts *o, mpx_plan **out, mpx_error *err) {
    mpx_session *s = ctx;
    return repl_build_plan(s, r, o ? o : mpx_history_opts(s->hist), out, err);
}

/* Local runs neither use nor touch the cache (numerics' rule). */
static mpx_status host_run(void *ctx, const mpx_plan *p, bool local, bool undoable, const bool *measure,
                           const bool *keep, mpx_compare **out, mpx_error *err) {
    repl_cached how = local ? REPL_UNCACHED : undoable ? REPL_CACHED_UNDOABLE : REPL_CACHED;
    return repl_run_plan(ctx, p, local, keep, measure, how, out, err);
}

/* With a data set every sample's cache is undone. */
static void host_undo(void *ctx) { repl_undo_trial(ctx); }

static bool host_cancelled(void *ctx) {
    const mpx_session *s = ctx;
    return s->cancel && *s->cancel;
}

/* On a terminal: evaluations done, the best plan so far (its first figure
 * and low share) and the time left to the nearer limit: what the search
 * will at least give back if it has to stop. */
static void host_progress(void *ctx, const mpx_search_progress *pr) {
    const mpx_session *s = ctx;
    if (!s->progress) return;
    char best[700] = "no plan meets it yet";
    if (pr->have_best)
        snprintf(best, sizeof best, "best: %d fp32, %s %.3g, %.1f%% of cost low", pr->best_k, pr->fig, pr->best_got0,
                 pr->best_low_cost_pct);
    fprintf(stderr, "\r  search: %d evaluations; %s", pr->n_evals, best);
    if (pr->left_ms >= 0) fprintf(stderr, "; at most %.0f s left", pr->left_ms / 1000);
    fputs("      ", stderr);
}

static void host_point(void *ctx, const mpx_sweep *d, int i) {
    const mpx_session *s = ctx;
    if (s->progress) fprintf(stderr, "\r  sweep: %s = %s (%d of %d)      ", d->name, d->values[i], i + 1, d->n);
}

mpx_explore_host repl_explore_host(mpx_session *s, repl_eval *eval) {
    return (mpx_explore_host){.ctx = s, .plan = host_plan, .run = host_run, .undo = host_undo,
                              .progress = host_progress, .point = host_point, .cancelled = host_cancelled,
                              .eval = eval ? repl_eval_figure : NULL, .eval_ctx = eval};
}

/* assert <figure> <op> <number> [and <figure> <op> <number> ...] */
mpx_status repl_cmd_assert(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    if (!s->plan) return mpx_error_set(err, MPX_E_INVALID, "no plan (load a model first)");
    if (args->n < 1) return mpx_error_set(err, MPX_E_ARG, "usage: assert <figure> <op> <number> [and ...]");
    mpx_cond c;
    if ((st = mpx_cond_parse("assert", args->n, (char **)args->word, &c, err))) return st;
    repl_cond_warn(s, &c);
    mpx_figure_ctx x = {.plan = s->plan, .cmp = s->last, .local = s->last_local};
    double got[MPX_COND_MAX];
    int failed;
    if ((st = mpx_cond_eval(&x, &c, got, &failed, err))) return st;
    if (failed >= 0) {
        const mpx_clause *cl = &c.c[failed];
        char v[40];
        return mpx_error_set(err, MPX_E_ASSERT, "assert failed: %s %s %s, but %s = %s", cl->fig, mpx_cond_op(cl),
                             cl->num, cl->fig, mpx_clause_got_text(cl, got[failed], 6, v, sizeof v));
    }
    return MPX_OK;
}

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
