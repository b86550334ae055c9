/* search.c - the nodes to keep in fp32 so that a condition (assert's
 * grammar and figures) holds, with as much of the model low as possible
 * (the methods: mpx_explore.h).
 *
 * Every evaluation is a real plan and a real run: the base rules plus
 * `colour name:<node> red` for each node of the set, planned by the host as
 * `colour` would plan it and run through the host's run cache (only what
 * the set changed is recomputed), and the condition evaluated by
 * figures.c's code, the same as assert's. So the result, applied as
 * ordinary rules, reproduces the reported figures exactly.
 *
 * An evaluation is a pure function of its set, so auto and greedy remember
 * every set they evaluated and never run one twice (a repeated set costs a
 * lookup). Nothing is applied here: the caller applies mpx_search_rules once
 * the search has succeeded, and an error, a condition no plan meets, the
 * evaluation or time limit or an interruption leave its rules as they were
 * unless it asks for the best plan found so far. What a stopped search
 * learned is never lost: its result holds that best plan and its JSON every
 * evaluation however it ended. */
#include "mpx_explore.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}


static const char *const method_names[MPX_SEARCH_METHOD_COUNT] = {"auto", "greedy", "bisect", "sensitivity"};

/* How a search ended: its JSON's "ended", and the word its messages use. */
static const char *const ending_names[] = {"done", "no_plan", "max_evals", "time", "interrupted", "failed"};

struct mpx_search {
    const mpx_graph *g;
    const mpx_plan *base;   /* the plan the search starts from */
    const mpx_rules *rules; /* its rules */
    mpx_explore_host h;
    mpx_cond cond;
    bool need_run;
    mpx_search_method how;
    int max_evals, n_evals;
    double max_ms;      /* the time limit in ms (search --time); 0: none */
    mpx_search_end end; /* set where the search stops early (the limits, no plan) */
    int n_unchanged;    /* trials whose plan computed what an earlier one did */
    double t0;
    int n_cand;
    int *cand;          /* node indices of the nodes low in the base plan, topological */
    cJSON *log;         /* every evaluation (opts.log; search --json) */
    /* per node (auto): its own rel_l2 (NaN: not measured), and whether its
     * output or its weights overflow, for the rules' comments */
    double *own;
    /* [n_cand]: each node's place in the last ranking (auto), -1 for the
     * nodes kept fp32 before it (overflows); NULL: not ranked */
    int *place;
    /* [n_cand]: each ranked node's score in that ranking (the predicted
     * error its region adds that the regions ranked before it do not) */
    double *score;
    unsigned char *flags; /* 1: own output overflows, 2: weights overflow */
    /* [n_tensors] or NULL (all): the layers the condition reads, the only
     * ones an evaluation measures (local runs, for ranking, measure all) */
    bool *measure;
    bool *keep;         /* [n_tensors] or NULL: the values the condition's task figures read */
    /* the last evaluation that held: */
    double best_got[MPX_COND_MAX];
    double best_low_pct, best_low_cost;
    double last_got[MPX_COND_MAX]; /* the last evaluation's figures */
    bool *best_set;     /* [n_cand]: its set */
    /* The evaluation that held with the most of the model low (what a
     * search stopped early reports, and --apply-best applies): */
    bool have_top;
    bool *top_set;      /* [n_cand] */
    double top_got[MPX_COND_MAX];
    double top_low_pct, top_low_cost;
    /* auto, greedy: every set evaluated (n_cand bytes each) and its answer */
    struct memo {
        bool *set;
        bool holds;
        double got[MPX_COND_MAX];
        double low_pct, low_cost;
    } *memo;
    int n_memo, cap_memo;
    bool *set;          /* [n_cand]: the set being searched */
    bool seeded;        /* auto's set came from bisect's segments */
    double ms;          /* how long the search took */
};
typedef struct mpx_search search;

/* A search result must be checkable exactly (assert output.rel_l2 == ...):
 * all digits, and null for a figure that is not finite. */
static void add_exact(cJSON *obj, const char *key, double v) { mpx_explore_json_exact(obj, key, v, "null"); }

/* The base rules with the nodes of set (indices into cand) red. */
static mpx_status rules_with(const search *x, const bool *set, mpx_rules **out, mpx_error *err) {
    mpx_rules *r = mpx_rules_copy(x->rules);
    if (!r) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    mpx_status st = MPX_OK;
    for (int i = 0; i < x->n_cand && !st; i++)
        if (set[i]) st = mpx_rules_add_node(r, x->g->nodes[x->cand[i]], MPX_COLOUR_RED, NULL, err);
    if (st) {
        mpx_rules_free(r);
        return st;
    }
    *out = r;
    return MPX_OK;
}

static int count(const search *x, const bool *set);

/* Tell the host where the search stands: evaluations done, the best plan so
 * far and the time left to the nearer limit (the time limit, or the
 * evaluation limit at the mean evaluation's pace): what the search will at
 * least give back if it has to stop. */
static void progress(const search *x) {
    if (!x->h.progress) return;
    double ms = now_ms() - x->t0, left = x->n_evals ? ms / x->n_evals * (x->max_evals - x->n_evals) : -1;
    if (x->max_ms > 0 && (left < 0 || x->max_ms - ms < left)) left = x->max_ms - ms;
    mpx_search_progress pr = {.fig = x->cond.c[0].fig, .n_evals = x->n_evals, .have_best = x->have_top, .left_ms = left};
    if (x->have_top) pr.best_k = count(x, x->top_set), pr.best_got0 = x->top_got[0], pr.best_low_cost_pct = x->top_low_cost;
    x->h.progress(x->h.ctx, &pr);
}

/* A set that held: the best so far when more of the model's cost is low
 * than in the best before (the first found among equals). */
static void note_held(search *x, const bool *set, const double *got, double low_pct, double low_cost) {
    memcpy(x->best_got, got, sizeof x->best_got);
    x->best_low_pct = low_pct;
    x->best_low_cost = low_cost;
    memcpy(x->best_set, set, (size_t)x->n_cand * sizeof *set);
    if (x->have_top && low_cost <= x->top_low_cost) return;
    x->have_top = true;
    memcpy(x->top_got, got, sizeof x->top_got);
    x->top_low_pct = low_pct;
    x->top_low_cost = low_cost;
    memcpy(x->top_set, set, (size_t)x->n_cand * sizeof *set);
}

static int count(const search *x, const bool *set) {
    int k = 0;
    for (int i = 0; i < x->n_cand; i++) k += set[i];
    return k;
}

/* One evaluation: plan the set, run it (when the condition reads a run),
 * evaluate the condition. local: also the nodes' own error (for ranking; a
 * local run does not use the cache). *cmp_out (may be NULL) gets the run. */
static mpx_status evaluate(search *x, const bool *set, bool local, bool *holds, mpx_compare **cmp_out,
                           mpx_error *err) {
    if (x->n_evals >= x->max_evals) {
        x->end = MPX_SEARCH_MAX_EVALS;
        return mpx_error_set(err, MPX_E_LIMIT, "search: stopped at --max-evals %d before it finished", x->max_evals);
    }
    if (x->max_ms > 0 && now_ms() - x->t0 >= x->max_ms) {
        x->end = MPX_SEARCH_TIME;
        return mpx_error_set(err, MPX_E_LIMIT, "search: stopped at --time %g s before it finished", x->max_ms / 1000);
    }
    if (x->h.cancelled && x->h.cancelled(x->h.ctx)) {
        x->end = MPX_SEARCH_INTERRUPTED;
        return mpx_error_set(err, MPX_E_CANCELLED, "search: interrupted");
    }
    for (int m = 0; x->how != MPX_SEARCH_BISECT && !cmp_out && m < x->n_memo; m++)
        if (memcmp(x->memo[m].set, set, (size_t)x->n_cand * sizeof *set) == 0) {
            *holds = x->memo[m].holds;
            memcpy(x->last_got, x->memo[m].got, sizeof x->last_got);
            if (*holds) note_held(x, set, x->memo[m].got, x->memo[m].low_pct, x->memo[m].low_cost);
            return MPX_OK;
        }
    double t = now_ms();
    mpx_rules *r = NULL;
    mpx_plan *p = NULL;
    mpx_compare *c = NULL;
    mpx_status st = rules_with(x, set, &r, err);
    if (!st) st = x->h.plan(x->h.ctx, r, NULL, &p, err);
    if (!st && x->need_run) st = x->h.run(x->h.ctx, p, local, !local, local ? NULL : x->measure, x->keep, &c, err);
    mpx_rules_free(r);
    double got[MPX_COND_MAX];
    int failed = -1;
    if (!st) {
        mpx_figure_ctx fc = {.plan = p, .cmp = c, .local = local, .eval = x->h.eval, .eval_ctx = x->h.eval_ctx};
        st = mpx_cond_eval(&fc, &x->cond, got, &failed, err);
    }
    if (st) {
        /* A run cancelled inside gives no verdict: the evaluation is listed
         * as interrupted, neither holding nor failing, and nothing of it is
         * remembered (memo, best set). */
        /* A failed one (an --eval command's error, a run out of memory) is
         * listed with its error, also without a verdict. */
        if (st == MPX_E_CANCELLED) x->end = MPX_SEARCH_INTERRUPTED;
        if (x->log) {
            cJSON *e = cJSON_CreateObject(), *names = cJSON_AddArrayToObject(e, "set");
            for (int i = 0; i < x->n_cand; i++)
                if (set[i]) cJSON_AddItemToArray(names, cJSON_CreateString(x->g->nodes[x->cand[i]]->name));
            if (st == MPX_E_CANCELLED) cJSON_AddBoolToObject(e, "interrupted", true);
            else cJSON_AddStringToObject(e, "error", err->msg);
            cJSON_AddNumberToObject(e, "ms", now_ms() - t);
            if (local) cJSON_AddBoolToObject(e, "local", true);
            cJSON_AddItemToArray(x->log, e);
        }
        mpx_plan_free(p);
        mpx_compare_free(c);
        return st;
    }
    /* A run that recomputed no node ran the plan of an earlier evaluation
     * (a set that differs only in nodes whose format follows their
     * neighbours'): the run cache answered it, so it is not counted. */
    if (c && c->incremental && c->n_run == 0) x->n_unchanged++;
    else x->n_evals++;
    *holds = failed < 0;
    /* Every method goes on from the last set that held: a set that failed
     * leaves the run cache as it was before it (the next trial, one node off
     * that set, then recomputes that node's cone alone, not the failed
     * trial's as well). With a data set every sample's cache is undone. */
    if (!*holds && c && !local) if (x->h.undo) x->h.undo(x->h.ctx);
    memcpy(x->last_got, got, sizeof got);
    if (x->how != MPX_SEARCH_BISECT) {
        if (x->n_memo == x->cap_memo) {
            int cap = x->cap_memo ? 2 * x->cap_memo : 64;
            struct memo *grown = realloc(x->memo, (size_t)cap * sizeof *grown);
            if (grown) {
                x->memo = grown;
                x->cap_memo = cap;
            }
        }
        bool *copy = x->n_memo < x->cap_memo ? malloc((size_t)(x->n_cand ? x->n_cand : 1) * sizeof *copy) : NULL;
        if (copy) { /* without memory the next repeat is evaluated again: slower, not wrong */
            memcpy(copy, set, (size_t)x->n_cand * sizeof *set);
            struct memo *e = &x->memo[x->n_memo++];
            e->set = copy;
            e->holds = *holds;
            memcpy(e->got, got, sizeof got);
            e->low_pct = p->counts.low_macs_pct;
            e->low_cost = p->counts.low_cost_pct;
        }
    }
    if (*holds) note_held(x, set, got, p->counts.low_macs_pct, p->counts.low_cost_pct);
    if (x->log) {
        cJSON *e = cJSON_CreateObject(), *names = cJSON_AddArrayToObject(e, "set");
        for (int i = 0; i < x->n_cand; i++)
            if (set[i]) cJSON_AddItemToArray(names, cJSON_CreateString(x->g->nodes[x->cand[i]]->name));
        cJSON_AddBoolToObject(e, "holds", *holds);
        cJSON *f = cJSON_AddObjectToObject(e, "figures");
        for (int i = 0; i < x->cond.n; i++)
            if (!isnan(got[i])) add_exact(f, x->cond.c[i].fig, got[i]);
        cJSON_AddNumberToObject(e, "low_macs_pct", p->counts.low_macs_pct);
        cJSON_AddNumberToObject(e, "low_cost_pct", p->counts.low_cost_pct);
        cJSON_AddNumberToObject(e, "ms", now_ms() - t);
        if (c) cJSON_AddNumberToObject(e, "nodes_run", c->n_run); /* what the run cache did not answer */
        if (local) cJSON_AddBoolToObject(e, "local", true); /* each node's own error too, for the ranking */
        cJSON_AddItemToArray(x->log, e);
    }
    progress(x);
    mpx_plan_free(p);
    if (cmp_out) *cmp_out = c;
    else mpx_compare_free(c);
    return MPX_OK;
}

static mpx_status no_plan(search *x, mpx_error *err) {
    x->end = MPX_SEARCH_NO_PLAN;
    return mpx_error_set(err, MPX_E_INVALID, "search: no plan meets %s, not even with every low node in fp32",
                         x->cond.text);
}

/* The figures of the final set: those of the last evaluation that held when
 * it was of this very set (usual), else one more evaluation. */
static mpx_status final_figures(search *x, const bool *set, mpx_error *err) {
    if (memcmp(x->best_set, set, (size_t)x->n_cand * sizeof *set) == 0) return MPX_OK;
    bool holds;
    return evaluate(x, set, false, &holds, NULL, err);
}

/* ---- auto and greedy ------------------------------------------------------- */

typedef struct ranked {
    int i;        /* index into cand */
    int tier;     /* 2: weights overflow, 1: own output overflows, 0 */
    double score; /* the predicted error it adds to the outputs */
    int64_t macs;
} ranked;

/* Keep fp32 first: overflow tiers, then the larger predicted error, then
 * fewer MACs (the aim is as many MACs low as possible), then the earlier. */
static int by_score(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->tier != y->tier) return y->tier - x->tier;
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    if (x->macs != y->macs) return x->macs < y->macs ? -1 : 1;
    return x->i - y->i;
}

/* A node's work (graph/cost.c's definition of what low_cost_pct counts), 0
 * when unknown. */
static double work(const mpx_node *n) {
    int64_t w = mpx_cost_node_work(n);
    return w > 0 ? (double)w : 0;
}

static double clip1(double e) { return isnan(e) || e > 1 ? 1 : e < 0 ? 0 : e; }

/* The nodes that go fp32 when candidate i does, beside the set: i itself
 * and the gray and clear nodes whose format follows it (a gray node runs in
 * fp32 once an input arrives in fp32). Planned, not guessed: one plan per
 * candidate (det: 319 plans in 20-25 ms, a tenth of one evaluation). Returns the
 * count written to out, -1 on error. */
static int region(search *x, bool *set, const bool *low, int i, int *out) {
    const mpx_graph *g = x->g;
    mpx_rules *r = NULL;
    mpx_plan *p = NULL;
    mpx_error e;
    set[i] = true;
    mpx_status st = rules_with(x, set, &r, &e);
    set[i] = false;
    if (!st) st = x->h.plan(x->h.ctx, r, NULL, &p, &e);
    mpx_rules_free(r);
    if (st) return -1;
    int k = 0;
    for (int m = 0; m < g->n_nodes; m++)
        if (low[m] && !p->nodes[m].low) out[k++] = m;
    mpx_plan_free(p);
    return k;
}

/* Orders the non-overflow candidates by what keeping each fp32 takes out
 * of the predicted error: not its own prediction alone but its region's
 * (region above), since keeping one node fp32 among low neighbours
 * removes little: its output is rounded again by the low nodes reading it,
 * and a correctly rounded elementwise op gives the same bits in either
 * format. Greedy: each step takes the candidate whose region holds the most
 * predicted error not yet covered by the regions taken before, per (1 +
 * the share of the model's cost, graph/cost.c's work, the region's
 * uncovered nodes hold); its score becomes that marginal error, so the
 * prefix sums of squares still estimate how much error a prefix removes.
 * The cost term matters where regions nest: a Conv's region holds the gray
 * BatchNormalization after it, so on error alone the Conv always wins,
 * though the BatchNormalization alone removes nearly as much at a fraction
 * of the cost (tiny_cnn in bf16: 5.6% of MACs low without the term, 86.7%
 * with it). A stronger weight (error per cost share, every region costing
 * at least 1% or 10%) found cheaper sets on tiny_cnn but took 141-150
 * evaluations on det for 68-80% of cost low, where this one with the
 * swap pass (swap_followers) gets there in fewer. Ranking by own prediction
 * alone needed the first 204 of det's 319 candidates to meet
 * output.rel_l2 < 1e-2, for a final set of 15; with regions the first 40. */
static void by_region(search *x, bool *set, const double *pred, ranked *r, int n) {
    const mpx_graph *g = x->g;
    size_t nn = (size_t)(g->n_nodes ? g->n_nodes : 1);
    bool *low = calloc(nn, sizeof *low), *covered = calloc(nn, sizeof *covered), *taken = calloc((size_t)n, sizeof *taken);
    int *start = malloc((size_t)(n + 1) * sizeof *start), *members = NULL, n_members = 0;
    mpx_rules *rules = NULL;
    mpx_plan *base = NULL;
    mpx_error e;
    bool ok = low && covered && taken && start && !rules_with(x, set, &rules, &e) &&
              !x->h.plan(x->h.ctx, rules, NULL, &base, &e);
    mpx_rules_free(rules);
    for (int m = 0; ok && m < g->n_nodes; m++) low[m] = base->nodes[m].low;
    mpx_plan_free(base);
    int *buf = ok ? malloc(nn * sizeof *buf) : NULL;
    ok = ok && buf;
    for (int j = 0; ok && j < n; j++) {
        int k = region(x, set, low, r[j].i, buf);
        int *grown = k >= 0 ? realloc(members, (size_t)(n_members + k + 1) * sizeof *members) : NULL;
        if (!grown) {
            ok = false;
            break;
        }
        members = grown;
        start[j] = n_members;
        memcpy(members + n_members, buf, (size_t)k * sizeof *buf);
        n_members += k;
    }
    if (ok) start[n] = n_members;
    ranked *out = ok ? malloc((size_t)n * sizeof *out) : NULL;
    double total = 1;
    for (int m = 0; m < g->n_nodes; m++) total += work(g->nodes[m]);
    for (int step = 0; out && step < n; step++) {
        int best = -1;
        double best_gain = -1, best_key = -1;
        for (int j = 0; j < n; j++) {
            if (taken[j]) continue;
            double gain = 0, cost = 0;
            for (int q = start[j]; q < start[j + 1]; q++) {
                int m = members[q];
                if (covered[m]) continue;
                gain += pred[m] * pred[m];
                cost += work(g->nodes[m]);
            }
            double key = gain / (1 + cost / total);
            if (key > best_key || (key == best_key && r[j].macs < r[best].macs)) best = j, best_gain = gain, best_key = key;
        }
        taken[best] = true;
        for (int q = start[best]; q < start[best + 1]; q++) covered[members[q]] = true;
        out[step] = r[best];
        out[step].score = sqrt(best_gain);
    }
    if (out) memcpy(r, out, (size_t)n * sizeof *r);
    free(out);
    free(buf);
    free(members);
    free(start);
    free(low);
    free(covered);
    free(taken);
}

/* Tier 2, by node, for the nodes reading a weight that overflows the
 * base plan's format (known before any run). */
static void weight_tier(search *x, unsigned char *tier) {
    const mpx_graph *g = x->g;
    mpx_weight_check *w = NULL;
    int n_w = 0;
    mpx_error ignored;
    if (mpx_plan_check_weights(x->base, &w, &n_w, &ignored) != MPX_OK) n_w = 0;
    for (int k = 0; tier && k < n_w; k++) {
        if (!w[k].overflow) continue;
        const mpx_tensor *t = g->tensors[x->base->weights[w[k].weight].tensor];
        for (int j = 0; j < t->n_consumers; j++) {
            tier[t->consumers[j]->index] = 2;
            if (x->flags) x->flags[t->consumers[j]->index] |= 2;
        }
    }
    free(w);
}

/* What each low node adds to the outputs' error, predicted from one local
 * run (the set as it is): its own rel_l2 l (fed reference inputs) times the
 * gain G from its output to the model's outputs. A node c passes on the
 * error of its inputs with gain g_c = sqrt(e_c^2 - l_c^2) / e_in, where e_c
 * is its inherited rel_l2 and e_in its worst input's: the part of its error
 * that its own rounding does not explain, per unit of input error. G is 1 at
 * a model output and sums g_c * G(c's output) over the consumers c, walking
 * the layers backwards. The prediction is first order (errors of different
 * nodes add in quadrature), which is what roundings of independent nodes
 * do; it ranks far better than the own error alone: on det an early Conv's
 * 3e-4 of own error reaches the output amplified a hundredfold, a late
 * Sigmoid's larger own error not at all. Ranking by own error alone needed
 * the first 296 of det's 320 low nodes to meet output.rel_l2 < 1e-2.
 * Overflows go first whatever the prediction: weights that do not fit
 * (tier 2) and outputs that overflow when fed reference inputs (tier 1).
 * Among equal predictions, fewer MACs first (the aim is MACs low). */
static void rank(search *x, const mpx_compare *c, bool *set, ranked *r, int *n_r, int *n_tier) {
    const mpx_graph *g = x->g;
    size_t nt = (size_t)(g->n_tensors ? g->n_tensors : 1), nn = (size_t)(g->n_nodes ? g->n_nodes : 1);
    double *e = calloc(nt, sizeof *e), *G = calloc(nt, sizeof *G), *pred = calloc(nn, sizeof *pred);
    unsigned char *tier = calloc(nn, 1);
    weight_tier(x, tier);
    if (e && G && pred && tier && c) {
        for (int k = 0; k < c->n_layers; k++) e[c->layers[k].tensor] = clip1(c->layers[k].m.rel_l2);
        for (int k = 0; k < g->n_outputs; k++)
            if (g->outputs[k]) G[g->outputs[k]->index] = 1;
        for (int k = c->n_layers - 1; k >= 0; k--) {
            const mpx_layer *L = &c->layers[k];
            const mpx_node *n = g->nodes[L->node];
            double l = L->has_local ? clip1(L->local.rel_l2) : 0, out = e[L->tensor], in = 0;
            for (int j = 0; j < n->n_inputs; j++)
                if (n->inputs[j] && e[n->inputs[j]->index] > in) in = e[n->inputs[j]->index];
            double gain = in > 1e-12 ? sqrt(out * out > l * l ? out * out - l * l : 0) / in : 1;
            if (gain > 1e3) gain = 1e3; /* a tiny input error is a poor divisor */
            double sum_in = 0;
            for (int j = 0; j < n->n_inputs; j++)
                if (n->inputs[j]) sum_in += e[n->inputs[j]->index];
            for (int j = 0; j < n->n_inputs; j++)
                if (n->inputs[j] && sum_in > 0) G[n->inputs[j]->index] += gain * G[L->tensor] * e[n->inputs[j]->index] / sum_in;
            pred[L->node] += l * G[L->tensor];
            if (x->own && L->has_local && !(x->own[L->node] >= L->local.rel_l2)) x->own[L->node] = L->local.rel_l2;
            if (L->has_local && L->local.overflow) {
                if (tier[L->node] < 1) tier[L->node] = 1;
                if (x->flags) x->flags[L->node] |= 1;
            }
        }
    }
    int n = 0, n_t = 0;
    for (int i = 0; i < x->n_cand; i++) {
        if (set[i]) continue;
        int nd = x->cand[i];
        int64_t macs = g->nodes[nd]->cost.macs;
        r[n++] = (ranked){i, tier ? tier[nd] : 0, pred ? pred[nd] : 0, macs};
        n_t += tier && tier[nd] > 0;
    }
    qsort(r, (size_t)n, sizeof *r, by_score);
    if (pred && n > n_t) by_region(x, set, pred, r + n_t, n - n_t);
    *n_r = n;
    *n_tier = n_t;
    free(e);
    free(G);
    free(pred);
    free(tier);
}

/* The order nodes are offered back to low: the last of the ranking first
 * (the least likely to be needed, so give-backs come early and the passes
 * that follow them are short), the nodes kept for overflows last; without
 * a ranking the largest MACs first. On det with the region ranking (before
 * its MACs term), offering the largest MACs first took 100 evaluations for
 * a set of 14 with 59.8% of MACs low; the last-ranked first, 85 for 12 with
 * 85.2%. */
static bool goes_back_first(const search *x, int a, int b) {
    if (x->place) return x->place[a] > x->place[b];
    const mpx_graph *g = x->g;
    return g->nodes[x->cand[a]]->cost.macs > g->nodes[x->cand[b]]->cost.macs;
}

/* What giving each node of the set back to low buys: the plan's low cost
 * share without it minus with it (its gray followers and the casts it
 * adds or removes included: planned, not guessed). */
static void cost_bought(search *x, const bool *set, double *buys) {
    bool *t = malloc((size_t)(x->n_cand ? x->n_cand : 1) * sizeof *t);
    double base = 0;
    for (int i = -1; t && i < x->n_cand; i++) {
        if (i >= 0 && !set[i]) continue;
        memcpy(t, set, (size_t)x->n_cand * sizeof *t);
        if (i >= 0) t[i] = false;
        mpx_rules *r = NULL;
        mpx_plan *p = NULL;
        mpx_error e;
        double v = 0;
        if (!rules_with(x, t, &r, &e) && !x->h.plan(x->h.ctx, r, NULL, &p, &e))
            v = p->counts.low_cost_pct;
        mpx_rules_free(r);
        mpx_plan_free(p);
        if (i < 0) base = v;
        else buys[i] = v - base;
    }
    free(t);
}

/* The order the chunks of the pruning go back in: the most cost bought
 * per predicted error first (buys / score, a knapsack's ratio: what
 * giving the node back buys over what the ranking says it costs in error),
 * the nodes kept for overflows (or before the ranking) last; without a
 * ranking, goes_back_first's order. Chunks decide in bulk which part of
 * the set goes back, so which nodes share the first chunks decides most of
 * the cost the pruning buys: in the ranking's order alone, the first
 * halves hold the nodes the ranking thought least needed, whatever they
 * cost, and PP-OCR cls kept its costliest Convs fp32 (88.1% of cost low,
 * where bisect keeps 88.7%; in this order 93.9%). The single-node passes
 * keep goes_back_first's order: in this one det needed 177 evaluations
 * for less cost low (76.3% against 77.8% in 96). */
static bool chunk_first(const search *x, const double *buys, int a, int b) {
    if (!x->place || !x->score || !buys) return goes_back_first(x, a, b);
    bool ra = x->place[a] >= 0 && x->score[a] < 1e300, rb = x->place[b] >= 0 && x->score[b] < 1e300;
    if (ra != rb) return ra;
    if (!ra) return goes_back_first(x, a, b);
    double ka = buys[a] / (x->score[a] + 1e-9), kb = buys[b] / (x->score[b] + 1e-9);
    if (ka != kb) return ka > kb;
    return goes_back_first(x, a, b);
}

static bool bounds_error(const mpx_clause *cl);

/* After bisect's segments (x->seeded), a node whose give-back left the
 * first clause's error at FAR times its bound or more is not offered again
 * once another node has gone back: near the bound what a set leaves is
 * noise-like (on PP-OCR rec sets of one size sit between 0.9 and 1.2 times
 * it), far above it a single give-back elsewhere does not bring it under
 * (rec: 137 evaluations instead of 150, the same set). */
#define FAR 1.5

/* Give nodes of the set back to low while the condition holds: chunks of
 * half the set, then quarters, ... (delta debugging: cheap when most of the
 * set is not needed; a size at which no chunk could go back ends them, as
 * the ranked prefix is mostly needed), in chunk_first's order, then single
 * nodes, in goes_back_first's, until every node of the set has failed to go
 * back against the set as it finally is: the result is 1-minimal. The error
 * is not monotone in the set (a node given back can make another one
 * dispensable, or needed again), so a give-back sends the nodes already
 * tried round once more (except those FAR says to leave). */
static mpx_status prune(search *x, bool *set, mpx_error *err) {
    bool *far = calloc((size_t)(x->n_cand > 0 ? x->n_cand : 1), sizeof *far); /* see FAR */
    int *order = malloc((size_t)(x->n_cand > 0 ? x->n_cand : 1) * sizeof *order), n = 0;
    bool *tried = calloc((size_t)(x->n_cand > 0 ? x->n_cand : 1), sizeof *tried);
    int *taken = malloc((size_t)(x->n_cand > 0 ? x->n_cand : 1) * sizeof *taken);
    mpx_status st = MPX_OK;
    if (!order || !tried || !far || !taken) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int i = 0; !st && i < x->n_cand; i++)
        if (set[i]) order[n++] = i;
    double *buys = x->place && x->score && n > 2 ? calloc((size_t)x->n_cand, sizeof *buys) : NULL;
    if (buys) cost_bought(x, set, buys);
    for (int a = 1; a < n; a++) /* insertion sort, stable: sets are small */
        for (int b = a; b > 0 && chunk_first(x, buys, order[b], order[b - 1]); b--) {
            int t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    free(buys);
    bool holds;
    for (int chunk = n / 2, gave = 1; chunk > 1 && gave && !st; chunk /= 2) {
        gave = 0;
        for (int j = 0; j < n && !st; j += chunk) {
            int m = 0;
            for (int i = j; i < j + chunk && i < n; i++)
                if (set[order[i]]) {
                    set[order[i]] = false;
                    taken[m++] = order[i];
                }
            if (!m) continue;
            st = evaluate(x, set, false, &holds, NULL, err);
            if (st || !holds)
                for (int i = 0; i < m; i++) set[taken[i]] = true;
            else
                gave = 1;
        }
    }
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && goes_back_first(x, order[b], order[b - 1]); b--) {
            int t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    for (bool again = true; again && !st;) {
        again = false;
        for (int j = 0; j < n && !st; j++) {
            int i = order[j];
            if (!set[i] || tried[i]) continue;
            set[i] = false;
            if ((st = evaluate(x, set, false, &holds, NULL, err))) set[i] = true;
            else if (!holds) {
                set[i] = true;
                tried[i] = true;
                far[i] = x->seeded && bounds_error(&x->cond.c[0]) && !(x->last_got[0] < FAR * x->cond.c[0].want);
            } else {
                for (int k = 0; k < x->n_cand; k++) tried[k] = far[k];
                again = true;
            }
        }
    }
    free(order);
    free(tried);
    free(far);
    free(taken);
    return st;
}

/* Whether the first clause bounds an error figure from above, so that the
 * first-order prediction can say how much of the error must go. */
static bool bounds_error(const mpx_clause *cl) {
    const char *op = mpx_cond_op(cl);
    return (strcmp(op, "<") == 0 || strcmp(op, "<=") == 0) && cl->want > 0 &&
           (strstr(cl->fig, "rel_l2") || strstr(cl->fig, "max_abs") || strstr(cl->fig, "mean_abs"));
}

/* The low cost share of set's plan, 0 when it cannot be planned; with
 * low (may be NULL) each node's low flag. */
static double plan_low_cost(search *x, const bool *set, bool *low) {
    mpx_rules *r = NULL;
    mpx_plan *p = NULL;
    mpx_error e;
    double v = 0;
    if (!rules_with(x, set, &r, &e) && !x->h.plan(x->h.ctx, r, NULL, &p, &e)) {
        v = p->counts.low_cost_pct;
        for (int m = 0; low && m < p->n_nodes; m++) low[m] = p->nodes[m].low;
    }
    mpx_rules_free(r);
    mpx_plan_free(p);
    return v;
}

/* A node kept fp32 takes the gray nodes reading it into fp32 too, and the
 * condition may need only those followers: a Conv kept for the two cheap
 * Muls after it (tests/models/cost_choice.json) is the smallest set, the
 * Muls alone the cheapest, and no give-back reaches them, since without the
 * Conv the Muls go low again. So each node of the 1-minimal set, the one
 * whose return buys the most low cost first, is tried swapped for its
 * followers (the set without it, with them red), those followers then
 * offered back one by one; the swap stays when the condition holds and more
 * of the cost is low. One evaluation per node with followers, plus one per
 * follower when the swap holds. */
static mpx_status swap_followers(search *x, bool *set, mpx_error *err) {
    const mpx_graph *g = x->g;
    size_t nc = (size_t)(x->n_cand ? x->n_cand : 1), nn = (size_t)(g->n_nodes ? g->n_nodes : 1);
    double *buys = calloc(nc, sizeof *buys);
    int *order = malloc(nc * sizeof *order), *fol = malloc(nc * sizeof *fol), n = 0;
    bool swapped = false;
    bool *trial = malloc(nc * sizeof *trial), *with = malloc(nn * sizeof *with), *without = malloc(nn * sizeof *without);
    mpx_status st = buys && order && fol && trial && with && without ? MPX_OK
                                                                    : mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    if (!st) cost_bought(x, set, buys);
    for (int i = 0; !st && i < x->n_cand; i++)
        if (set[i]) order[n++] = i;
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && buys[order[b]] > buys[order[b - 1]]; b--) {
            int t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    for (int k = 0; k < n && !st; k++) {
        int i = order[k];
        if (!set[i]) continue;
        double now = plan_low_cost(x, set, with);
        memcpy(trial, set, nc * sizeof *trial);
        trial[i] = false;
        plan_low_cost(x, trial, without);
        int nf = 0;
        for (int j = 0; j < x->n_cand; j++)
            if (j != i && !set[j] && !with[x->cand[j]] && without[x->cand[j]]) fol[nf++] = j;
        if (!nf) continue;
        for (int f = 0; f < nf; f++) trial[fol[f]] = true;
        bool holds;
        if ((st = evaluate(x, trial, false, &holds, NULL, err)) || !holds) continue;
        for (int f = 0; f < nf && !st; f++) {
            trial[fol[f]] = false;
            if ((st = evaluate(x, trial, false, &holds, NULL, err)) || !holds) trial[fol[f]] = true;
        }
        if (!st && plan_low_cost(x, trial, NULL) > now) {
            memcpy(set, trial, nc * sizeof *set);
            swapped = true;
        }
    }
    /* The rest of the set was needed beside the node swapped out, not
     * necessarily beside its followers: 1-minimal again. Not after bisect's
     * segments: there every node was already offered back in a context
     * close to this one (rec: 133 evaluations instead of 150, the same set;
     * with FAR as well det keeps 82.5% of cost low in 133, 82.7% in 182
     * without either). */
    if (!st && swapped && !x->seeded) st = prune(x, set, err);
    free(buys);
    free(order);
    free(fol);
    free(trial);
    free(with);
    free(without);
    return st;
}

/* The shortest prefix of r predicted to bring the first clause's figure e0
 * under its bound with 10% to spare (the scores' sum of squares stands for
 * e0^2); *removed gets the share of e0^2 that prefix is predicted to take
 * away. */
static int prefix_for(const search *x, const ranked *r, int n, double e0, double *removed) {
    int want = 1;
    *removed = 0;
    if (bounds_error(&x->cond.c[0]) && e0 > x->cond.c[0].want) {
        double total = 0, cut = 0, keep = 0.9 * x->cond.c[0].want / e0;
        for (int i = 0; i < n; i++) total += r[i].score * r[i].score;
        double need = total * (1 - keep * keep);
        for (want = 0; want < n && cut < need; want++) cut += r[want].score * r[want].score;
        if (want < 1) want = 1;
        *removed = total > 0 ? cut / total : 0;
    }
    return want;
}

/* How many of the ranking's first candidates are measured alone: a quarter
 * of the ranked ones, at most 24, one evaluation each. On the BERT-style
 * encoder of the suite (115 candidates, 27 with a predicted error) the
 * first layer's first MLP MatMul is the 23rd. */
#define PROBE_MAX 24

/* The first candidates of the ranking (those with a predicted error)
 * measured alone: the set with that one node fp32 more, one evaluation
 * each; what its fallback takes away, d = e0^2 - figure^2, replaces the
 * prediction. The prediction is first order from one local run, and its
 * gains can be far off: on the BERT-style encoder they shrink about 40-fold
 * per layer going back, where each layer's first MLP MatMul measured alone
 * takes away the same 14% of the squared error. r is reordered: the
 * measured nodes that take error away, the most per share of cost their
 * fallback costs first (a knapsack's ratio), with sqrt(d) as their score;
 * then the unmeasured in their order, their scores scaled so that all
 * scores' squares add up to e0^2; then the measured nodes that took nothing
 * away. When the single fallbacks measured take away more than all of e0^2
 * together, or one adds more than a tenth of e0^2, their effects do not add
 * up and r stays as it was (PP-OCR rec stops at the fifth probe, det at
 * the third; the encoder's worst adds 0.9%). *done says whether r was
 * reordered. */
static mpx_status probe(search *x, bool *set, ranked *r, int n, int n_tier, double e0, bool *done, bool *apart,
                        mpx_error *err) {
    *done = *apart = false;
    int m_max = (n - n_tier) / 4, m = 0;
    if (m_max > PROBE_MAX) m_max = PROBE_MAX;
    while (m < m_max && r[n_tier + m].score > 0) m++;
    if (m < 2) return MPX_OK;
    double *d = calloc((size_t)m, sizeof *d), *cost = calloc((size_t)m, sizeof *cost);
    bool *used = calloc((size_t)m, sizeof *used);
    ranked *out = malloc((size_t)n * sizeof *out);
    mpx_status st = d && cost && used && out ? MPX_OK : mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    double base_cost = st ? 0 : plan_low_cost(x, set, NULL), sum_pos = 0;
    int j_end = 0;
    for (int j = 0; j < m && !st; j++, j_end = j) {
        int i = r[n_tier + j].i;
        bool holds;
        set[i] = true;
        st = evaluate(x, set, false, &holds, NULL, err);
        cost[j] = base_cost - plan_low_cost(x, set, NULL);
        set[i] = false;
        double f = x->last_got[0];
        d[j] = isnan(f) ? 0 : e0 * e0 - f * f;
        sum_pos += d[j] > 0 ? d[j] : 0;
        if (sum_pos > e0 * e0 || d[j] < -0.1 * e0 * e0) { /* the effects do not add up */
            *apart = true;
            break;
        }
    }
    if (!st && j_end == m) {
        int k = n_tier;
        double sum = 0;
        memcpy(out, r, (size_t)n_tier * sizeof *out);
        for (;;) {
            int b = -1;
            double bk = 0;
            for (int j = 0; j < m; j++) {
                if (used[j] || d[j] <= 0) continue;
                double key = d[j] / (cost[j] > 1e-3 ? cost[j] : 1e-3);
                if (b < 0 || key > bk) b = j, bk = key;
            }
            if (b < 0) break;
            used[b] = true;
            out[k] = r[n_tier + b];
            out[k++].score = sqrt(d[b]);
            sum += d[b];
        }
        double rest = 0;
        for (int j = n_tier + m; j < n; j++) rest += r[j].score * r[j].score;
        double scale = rest > 0 && e0 * e0 > sum ? sqrt((e0 * e0 - sum) / rest) : 0;
        for (int j = n_tier + m; j < n; j++) {
            out[k] = r[j];
            out[k++].score = r[j].score * scale;
        }
        for (int j = 0; j < m; j++)
            if (!used[j]) {
                out[k] = r[n_tier + j];
                out[k++].score = 0;
            }
        memcpy(r, out, (size_t)n * sizeof *r);
        *done = true;
    }
    free(d);
    free(cost);
    free(used);
    free(out);
    return st;
}

static mpx_status halve(search *x, bool *set, int min, const bool *keep, mpx_error *err);

/* The segments bisect's halving stops at when it seeds auto (SEGMENT_MIN
 * nodes or fewer stay fp32 whole when they fail). */
#define SEGMENT_MIN 4

static mpx_status run_auto(search *x, bool *set, mpx_error *err) {
    mpx_compare *c = NULL;
    bool holds = false;
    int n = 0, n_tier = 0;
    memset(set, 0, (size_t)x->n_cand * sizeof *set);
    ranked *r = malloc((size_t)(x->n_cand ? x->n_cand : 1) * sizeof *r);
    bool *base = malloc((size_t)(x->n_cand ? x->n_cand : 1) * sizeof *base);
    if (!r || !base) {
        free(r);
        free(base);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    /* Nodes whose weights overflow are known before any run: when there are
     * such, the plan as it is gets a plain run (does it already hold?), and
     * the first local run, for the ranking, is made with them fp32; before,
     * the first local run was of the plan as it is, whose figures an
     * overflow ruins downstream, only to find them and run again (det: two
     * local runs, 1.2 s, where a plain run and one local run take 0.75). */
    unsigned char *wt = calloc((size_t)(x->g->n_nodes ? x->g->n_nodes : 1), 1);
    mpx_status st = wt ? MPX_OK : mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    bool wt_set = false;
    if (wt) weight_tier(x, wt);
    for (int i = 0; wt && i < x->n_cand; i++) wt_set = wt_set || wt[x->cand[i]] == 2;
    if (!st && x->need_run && wt_set) {
        st = evaluate(x, set, false, &holds, NULL, err);
        for (int i = 0; !st && !holds && i < x->n_cand; i++) set[i] = wt[x->cand[i]] == 2;
    }
    free(wt);
    if (!st && !holds) st = evaluate(x, set, x->need_run, &holds, &c, err);
    /* Overflows first, each round measured again: once a node no longer
     * overflows, the error that reaches the outputs is another one. */
    for (int round = 0; !st && !holds; round++) {
        rank(x, c, set, r, &n, &n_tier);
        if (!n_tier || round == 8) break;
        for (int i = 0; i < n_tier; i++) set[r[i].i] = true;
        mpx_compare_free(c);
        c = NULL;
        st = evaluate(x, set, x->need_run, &holds, &c, err);
    }
    mpx_compare_free(c);
    if (st || holds) goto done;
    /* The shortest prefix of the ranking predicted to bring the error under
     * the bound (prefix_for), after the first candidates' fallbacks
     * measured alone where the bound is on an error (probe); then doubled
     * until the condition holds, and bisected between the last prefix that
     * failed and the first that held. The measured order is kept only when
     * its first prefix takes away at least half the error it was predicted
     * to: measured effects add up where single nodes' errors are
     * independent (the encoder: the prefix predicted to leave 1.70e-4 left
     * 1.65e-4); on PP-OCR rec, where what a budget leaves is noise-like,
     * the first measured prefix left more error than no fallback at all,
     * and its order would then take 224 nodes to hold. Where the probes
     * stop because the single fallbacks do not add up (rec, det), no prefix
     * of the ranking is the seed but bisect's segments down to SEGMENT_MIN
     * nodes, each judged with every node after it fp32 (rec 62.7% of cost
     * low in 120 evaluations where the prefix kept 45.6% in 153, bisect
     * 60.8% in 141; det 82.5% against 77.8%); where they add up (the
     * BERT-style encoder) the segments would lose the measured order. */
    double e0 = x->last_got[0], removed = 0;
    bool measured = false, apart = false;
    ranked *predicted = NULL;
    if (x->need_run && bounds_error(&x->cond.c[0]) && e0 > x->cond.c[0].want) {
        if (!(predicted = malloc((size_t)(n ? n : 1) * sizeof *predicted))) {
            st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
            goto done;
        }
        memcpy(predicted, r, (size_t)n * sizeof *r);
        if ((st = probe(x, set, r, n, n_tier, e0, &measured, &apart, err))) {
            free(predicted);
            goto done;
        }
    }
    int want = prefix_for(x, r, n, e0, &removed);
    memcpy(base, set, (size_t)x->n_cand * sizeof *set);
    int fail = 0, ok = -1;
    bool seeded = false;
    if (apart) {
        for (int i = 0; i < x->n_cand; i++) set[i] = true;
        if (!(st = evaluate(x, set, false, &holds, NULL, err)) && holds) {
            st = halve(x, set, SEGMENT_MIN, base, err);
            seeded = x->seeded = true;
        } else
            memcpy(set, base, (size_t)x->n_cand * sizeof *set);
        if (st) {
            free(predicted);
            goto done;
        }
    }
    if (seeded) ok = 0;
    if (measured && want < n) {
        for (int i = 0; i < want; i++) set[r[i].i] = true;
        if (!(st = evaluate(x, set, false, &holds, NULL, err))) {
            double got = x->last_got[0];
            if (holds) ok = want;
            else if (isnan(got) || e0 * e0 - got * got < 0.5 * removed * e0 * e0) {
                memcpy(r, predicted, (size_t)n * sizeof *r);
                want = prefix_for(x, r, n, e0, &removed);
            } else {
                fail = want;
                want *= 2;
            }
        }
    }
    free(predicted);
    while (ok < 0 && !st) {
        if (want > n) want = n;
        memcpy(set, base, (size_t)x->n_cand * sizeof *set);
        for (int i = 0; i < want; i++) set[r[i].i] = true;
        if ((st = evaluate(x, set, false, &holds, NULL, err))) break;
        if (holds) ok = want;
        else if (want == n)
            st = no_plan(x, err);
        else {
            fail = want;
            want *= 2;
        }
    }
    while (!st && ok - fail > 1) {
        int mid = fail + (ok - fail) / 2;
        memcpy(set, base, (size_t)x->n_cand * sizeof *set);
        for (int i = 0; i < mid; i++) set[r[i].i] = true;
        if ((st = evaluate(x, set, false, &holds, NULL, err))) break;
        if (holds) ok = mid;
        else fail = mid;
    }
    if (!st) {
        if (!seeded) {
            memcpy(set, base, (size_t)x->n_cand * sizeof *set);
            for (int i = 0; i < ok; i++) set[r[i].i] = true;
        }
        if ((x->place = malloc((size_t)(x->n_cand ? x->n_cand : 1) * sizeof *x->place))) {
            for (int i = 0; i < x->n_cand; i++) x->place[i] = -1;
            for (int i = 0; i < n; i++) x->place[r[i].i] = i;
        }
        if ((x->score = calloc((size_t)(x->n_cand ? x->n_cand : 1), sizeof *x->score)))
            for (int i = 0; i < n; i++) x->score[r[i].i] = r[i].tier ? HUGE_VAL : r[i].score;
    }
done:
    free(r);
    free(base);
    if (st || x->how == MPX_SEARCH_GREEDY) return st;
    if ((st = prune(x, set, err)) || (st = swap_followers(x, set, err))) return st;
    return final_figures(x, set, err);
}

/* ---- sensitivity ------------------------------------------------------------- */

typedef struct sens {
    int i;
    double key; /* the first clause's figure with this node alone fp32, made smaller-is-better */
} sens;

static int by_sensitivity(const void *a, const void *b) {
    const sens *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->i - y->i;
}

/* Intel Neural Compressor's fallback, the peers' method, for comparison:
 * each low node is measured falling back to fp32 alone (one evaluation
 * each; its sensitivity is the first clause's figure then), and nodes fall
 * back one at a time, the most sensitive first (the figure that improves
 * most: the smallest under a bound from above, the largest above one from
 * below), until the condition holds. Nothing is given back afterwards. */
static mpx_status run_sensitivity(search *x, bool *set, mpx_error *err) {
    bool holds = false;
    memset(set, 0, (size_t)x->n_cand * sizeof *set);
    mpx_status st = evaluate(x, set, false, &holds, NULL, err);
    if (st || holds) return st;
    sens *v = malloc((size_t)(x->n_cand ? x->n_cand : 1) * sizeof *v);
    if (!v) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int i = 0; i < x->n_cand && !st; i++) {
        set[i] = true;
        st = evaluate(x, set, false, &holds, NULL, err);
        set[i] = false;
        double f = x->last_got[0];
        v[i] = (sens){i, isnan(f) ? INFINITY : mpx_cond_op(&x->cond.c[0])[0] == '>' ? -f : f};
    }
    if (!st) qsort(v, (size_t)x->n_cand, sizeof *v, by_sensitivity);
    holds = false;
    for (int k = 0; k < x->n_cand && !st && !holds; k++) {
        set[v[k].i] = true;
        st = evaluate(x, set, false, &holds, NULL, err);
    }
    free(v);
    if (!st && !holds) return no_plan(x, err);
    return st ? st : final_figures(x, set, err);
}

/* ---- bisect ------------------------------------------------------------------ */

/* Bisect's segments, on set (every candidate fp32, a set that holds): each
 * topological segment [a, b) of the candidates is tried low with every node
 * after it still fp32, so a node is judged in the context it ends up in; a
 * segment that fails is halved, first half first, down to min nodes (a
 * segment of min or fewer that fails stays fp32 whole). Nodes of keep (may
 * be NULL) stay fp32 throughout. */
static mpx_status halve(search *x, bool *set, int min, const bool *keep, mpx_error *err) {
    /* A stack of segments [lo, hi), first segment on top. */
    int *lo = malloc((size_t)(2 * x->n_cand + 2) * sizeof *lo), *hi = malloc((size_t)(2 * x->n_cand + 2) * sizeof *hi);
    if (!lo || !hi) {
        free(lo);
        free(hi);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    mpx_status st = MPX_OK;
    bool holds;
    int top = 0;
    lo[top] = 0;
    hi[top++] = x->n_cand;
    while (top > 0 && !st) {
        top--;
        int a = lo[top], b = hi[top], k = 0;
        for (int i = a; i < b; i++)
            if (!keep || !keep[i]) set[i] = false, k++;
        if (!k) continue;
        if ((st = evaluate(x, set, false, &holds, NULL, err))) break;
        if (holds) continue;
        for (int i = a; i < b; i++) set[i] = true;
        if (b - a <= min) continue;
        int m = a + (b - a) / 2;
        lo[top] = m; /* second half below, first half on top */
        hi[top++] = b;
        lo[top] = a;
        hi[top++] = m;
    }
    free(lo);
    free(hi);
    return st;
}

static mpx_status run_bisect(search *x, bool *set, mpx_error *err) {
    bool holds = false;
    memset(set, 0, (size_t)x->n_cand * sizeof *set);
    mpx_status st = evaluate(x, set, false, &holds, NULL, err);
    if (st || holds) return st;
    /* Undecided nodes stay fp32 while a segment is tried low. */
    for (int i = 0; i < x->n_cand; i++) set[i] = true;
    if ((st = evaluate(x, set, false, &holds, NULL, err))) return st;
    if (!holds)
        return no_plan(x, err);
    if (!(st = halve(x, set, 1, NULL, err))) st = final_figures(x, set, err);
    return st;
}


/* ---- the API ------------------------------------------------------------------ */

const char *mpx_search_method_name(mpx_search_method m) {
    return (unsigned)m < MPX_SEARCH_METHOD_COUNT ? method_names[m] : NULL;
}

const char *mpx_search_end_name(mpx_search_end e) {
    return (unsigned)e <= MPX_SEARCH_FAILED ? ending_names[e] : NULL;
}

void mpx_search_free(mpx_search *x) {
    if (!x) return;
    cJSON_Delete(x->log);
    free(x->own);
    free(x->flags);
    free(x->measure);
    free(x->keep);
    free(x->place);
    free(x->score);
    free(x->cand);
    free(x->best_set);
    free(x->top_set);
    free(x->set);
    for (int m = 0; m < x->n_memo; m++) free(x->memo[m].set);
    free(x->memo);
    free(x);
}

mpx_status mpx_search_new(const mpx_graph *g, const mpx_plan *base, const mpx_rules *rules, const mpx_cond *cond,
                          const mpx_search_opts *opts, const mpx_explore_host *host, mpx_search **out,
                          mpx_error *err) {
    *out = NULL;
    if (!g || !base || base->g != g || !rules || !cond || cond->n < 1 || !host || !host->plan || !host->run)
        return mpx_error_set(err, MPX_E_ARG, "search: needs a graph, its plan and rules, a condition and a host "
                                             "that plans and runs");
    if (opts && (unsigned)opts->method >= MPX_SEARCH_METHOD_COUNT)
        return mpx_error_set(err, MPX_E_ARG, "search: no method %d", (int)opts->method);
    search *x = calloc(1, sizeof *x);
    if (!x) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    x->g = g, x->base = base, x->rules = rules, x->h = *host, x->cond = *cond;
    x->need_run = mpx_cond_needs_run(cond);
    x->how = opts ? opts->method : MPX_SEARCH_AUTO;
    x->max_evals = opts && opts->max_evals > 0 ? opts->max_evals : 500;
    x->max_ms = opts && opts->max_ms > 0 ? opts->max_ms : 0;
    size_t nn = (size_t)(g->n_nodes ? g->n_nodes : 1), nt = (size_t)(g->n_tensors ? g->n_tensors : 1);
    x->cand = malloc(nn * sizeof *x->cand);
    x->set = calloc(nn, sizeof *x->set);
    x->best_set = calloc(nn, sizeof *x->best_set);
    x->top_set = calloc(nn, sizeof *x->top_set);
    x->own = malloc(nn * sizeof *x->own);
    x->flags = calloc(nn, 1);
    if (opts && opts->log) x->log = cJSON_CreateArray();
    if (!x->cand || !x->set || !x->best_set || !x->top_set || !x->own || !x->flags || (opts && opts->log && !x->log)) {
        mpx_search_free(x);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    for (int i = 0; i < g->n_nodes; i++)
        if (base->nodes[i].low && base->nodes[i].is_float && !base->nodes[i].folded) x->cand[x->n_cand++] = i;
    x->measure = malloc(nt * sizeof *x->measure);
    if (x->measure && !mpx_cond_measure(g, &x->cond, x->measure)) {
        free(x->measure); /* measure every layer: slower, not wrong */
        x->measure = NULL;
    }
    x->keep = malloc(nt * sizeof *x->keep);
    if (x->keep && !mpx_cond_keep(g, &x->cond, x->keep)) {
        free(x->keep);
        x->keep = NULL;
    }
    for (int i = 0; i < g->n_nodes; i++) x->own[i] = NAN;
    *out = x;
    return MPX_OK;
}

void mpx_search_reads(const mpx_search *x, const bool **keep, const bool **measure) {
    *keep = x->keep;
    *measure = x->measure;
}

void mpx_search_get_result(const mpx_search *x, mpx_status st, mpx_search_result *r) {
    *r = (mpx_search_result){.end = MPX_SEARCH_DONE, .set = x->set, .got = x->best_got, .low_macs_pct = x->best_low_pct,
                             .low_cost_pct = x->best_low_cost};
    if (st) {
        r->end = x->end != MPX_SEARCH_DONE ? x->end : st == MPX_E_CANCELLED ? MPX_SEARCH_INTERRUPTED : MPX_SEARCH_FAILED;
        r->set = x->have_top ? x->top_set : NULL;
        r->got = x->top_got;
        r->low_macs_pct = x->top_low_pct;
        r->low_cost_pct = x->top_low_cost;
    }
    r->k = r->set ? count(x, r->set) : 0;
    r->n_cand = x->n_cand;
    r->cand = x->cand;
    r->n_evals = x->n_evals;
    r->n_unchanged = x->n_unchanged;
    r->ms = x->ms;
}

mpx_status mpx_search_run(mpx_search *x, mpx_search_result *r, mpx_error *err) {
    x->t0 = now_ms();
    bool *set = x->set;
    mpx_status st = x->how == MPX_SEARCH_BISECT        ? run_bisect(x, set, err)
                    : x->how == MPX_SEARCH_SENSITIVITY ? run_sensitivity(x, set, err)
                                                       : run_auto(x, set, err);
    x->ms = now_ms() - x->t0;
    mpx_search_get_result(x, st, r);
    return st;
}

mpx_status mpx_search_rules(const mpx_search *x, const bool *set, bool why, mpx_search_end end, mpx_rules **out,
                            mpx_error *err) {
    *out = NULL;
    if (!why) return rules_with(x, set, out, err);
    mpx_rules *rules = mpx_rules_copy(x->rules);
    mpx_status st = rules ? MPX_OK : mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int i = 0; i < x->n_cand && !st; i++) {
        if (!set[i]) continue;
        char text[1400];
        int nd = x->cand[i];
        size_t w = (size_t)snprintf(text, sizeof text, "search%s%s: %s", end == MPX_SEARCH_DONE ? "" : ", best at ",
                                    end == MPX_SEARCH_DONE ? "" : ending_names[end], x->cond.text);
        /* What the ranking run saw of the node: `why` shows the rule. */
        char parts[160] = "";
        if (x->own && !isnan(x->own[nd])) snprintf(parts, sizeof parts, "own rel_l2 %.3g", x->own[nd]);
        if (x->flags && (x->flags[nd] & 1))
            strncat(parts, parts[0] ? ", own output overflows" : "own output overflows", sizeof parts - strlen(parts) - 1);
        if (x->flags && (x->flags[nd] & 2))
            strncat(parts, parts[0] ? ", weights overflow" : "weights overflow", sizeof parts - strlen(parts) - 1);
        if (parts[0] && w < sizeof text) snprintf(text + w, sizeof text - w, " (%s)", parts);
        st = mpx_rules_add_node(rules, x->g->nodes[nd], MPX_COLOUR_RED, text, err);
    }
    if (st) {
        mpx_rules_free(rules);
        return st;
    }
    *out = rules;
    return MPX_OK;
}

char *mpx_search_json(mpx_search *x, const mpx_search_result *r, const char *error, bool applied,
                      const mpx_search_validation *v) {
    const mpx_graph *g = x->g;
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    cJSON_AddStringToObject(root, "condition", x->cond.text);
    cJSON_AddStringToObject(root, "method", method_names[x->how]);
    cJSON_AddStringToObject(root, "ended", ending_names[r->end]);
    if (error) cJSON_AddStringToObject(root, "error", error);
    if (r->set) {
        cJSON *res = cJSON_AddArrayToObject(root, "fp32");
        for (int i = 0; i < x->n_cand; i++)
            if (r->set[i]) cJSON_AddItemToArray(res, cJSON_CreateString(g->nodes[x->cand[i]]->name));
        cJSON *f = cJSON_AddObjectToObject(root, "figures");
        for (int i = 0; i < x->cond.n; i++) add_exact(f, x->cond.c[i].fig, r->got[i]);
        cJSON_AddNumberToObject(root, "low_macs_pct", r->low_macs_pct);
        cJSON_AddNumberToObject(root, "low_cost_pct", r->low_cost_pct);
    } else { /* the same keys, null: a script reads d["figures"] whatever the end */
        cJSON_AddNullToObject(root, "fp32");
        cJSON_AddNullToObject(root, "figures");
        cJSON_AddNullToObject(root, "low_macs_pct");
        cJSON_AddNullToObject(root, "low_cost_pct");
    }
    cJSON_AddBoolToObject(root, "applied", applied && r->k > 0);
    if (v) {
        cJSON *o = cJSON_AddObjectToObject(root, "validation");
        cJSON_AddStringToObject(o, "data", v->data);
        cJSON_AddNumberToObject(o, "samples", v->samples);
        cJSON *f = cJSON_AddObjectToObject(o, "figures");
        for (int i = 0; i < x->cond.n; i++) add_exact(f, x->cond.c[i].fig, v->got[i]);
        cJSON_AddBoolToObject(o, "holds", v->holds);
    }
    cJSON_AddNumberToObject(root, "candidates", x->n_cand);
    cJSON_AddNumberToObject(root, "n_evaluations", x->n_evals);
    cJSON_AddNumberToObject(root, "n_unchanged", x->n_unchanged);
    cJSON_AddNumberToObject(root, "ms", r->ms);
    if (x->log) cJSON_AddItemToObject(root, "evaluations", x->log);
    x->log = NULL;
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    size_t n = text ? strlen(text) : 0;
    char *out = text ? realloc(text, n + 2) : NULL;
    if (!out) {
        free(text);
        return NULL;
    }
    memcpy(out + n, "\n", 2);
    return out;
}
