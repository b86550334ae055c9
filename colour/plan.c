/* plan.c - the precision plan: colour per node, then formats, casts and counts.
 *
 * One forward pass in topological order (DESIGN section 3):
 *  1. colour: the default table, then every rule in order (the last rule that
 *     applies decides);
 *  2. compute format: red fp32; green the target; gray the target when every
 *     float input arrives low, else fp32; clear the format its inputs arrive in
 *     (mixed: the widest). Constants and initializers count as low and adapt to
 *     the node (converted once, offline);
 *  3. casts: a consumer whose compute format differs from the format a tensor
 *     is held in needs a cast; one Cast per (tensor, format), shared by all
 *     consumers; with keep-io, model outputs get a cast back to their declared
 *     type. Casts always start at the producer's tensor, never at another cast,
 *     and clear nodes follow their inputs, so no pair of casts that cancel
 *     (fp32 -> fp16 -> fp32 with nothing between) can arise.
 *
 * Decisions where DESIGN is silent:
 *  - A node with no float input (Cast from int, Range, RandomNormal) is a
 *    source of float values: green makes them low, every other colour keeps
 *    fp32, as a model input is kept.
 *  - A gray or clear node whose float inputs are all constants runs in the
 *    target (constants count as low).
 *  - Resize/Upsample roi and scales and Dropout's ratio are parameters, not
 *    data: they never decide a format and never get a cast.
 *  - Shape and Size read no values: precision does not apply to them, nor to
 *    nodes on non-float tensors only, nor to nodes folded to constants at load.
 *  - A model Cast to a narrower float type keeps its type (part of the model);
 *    a Cast to fp32 is clear, unless its input is declared low (a model
 *    already in mixed precision): then it keeps its type too.
 *  - "Widest" of two formats is the one that holds the other exactly; when
 *    neither does (fp16 and bf16), fp32.
 *  - A tensor of undefined type (downstream of an unknown op) is not float.
 *  - Range, TopK and CumSum compute in fp32 whatever their colour
 *    (mpx_plan_op_fp32_only: runtimes have no low-precision kernels).
 *  - Outputs whose type the op fixes to float32 (the statistics of
 *    LayerNormalization and ORT's Skip/Simplified normalisations,
 *    mpx_node_output_is_f32) are held fp32 whatever the node's format, as a
 *    runtime's fp16 kernel writes them.
 *  - In a model that holds weights narrower than fp32 (already in mixed
 *    precision), a green or gray node whose float outputs are declared fp32
 *    is red by default.
 */
#include "colour_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mpx_plan_priv {
    mpx_arena *arena;
    mpx_rules *rules;
    double *absmax;
};

/* ---- formats ------------------------------------------------------------------ */

const mpx_format *mpx_dtype_format_(mpx_dtype t) { return mpx_format_of_dtype(t, true); }

static bool is_low(const mpx_format *f) {
    return f && (f->man_bits < mpx_format_fp32.man_bits || f->exp_bits < mpx_format_fp32.exp_bits);
}

/* a holds every value of b exactly. */
static bool contains(const mpx_format *a, const mpx_format *b) {
    return a->exp_bits >= b->exp_bits && a->man_bits >= b->man_bits;
}

static const mpx_format *widest(const mpx_format *a, const mpx_format *b) {
    if (contains(a, b)) return a;
    if (contains(b, a)) return b;
    return &mpx_format_fp32;
}

/* A stable order of formats for sorting casts. */
static int fmt_rank(const mpx_format *f) {
    for (size_t i = 0; i < mpx_format_count(); i++)
        if (mpx_format_at(i) == f) return (int)i;
    return 99;
}

/* ---- tensors ------------------------------------------------------------------ */

static bool is_float_t(const mpx_tensor *t) {
    return t && mpx_dtype_is_float(t->dtype) && !(t->flags & MPX_T_SEQUENCE);
}

bool mpx_tensor_is_const_(const mpx_tensor *t) {
    return t->f32 || t->i64 || t->f64 ||
           (t->flags & (MPX_T_INITIALIZER | MPX_T_CONSTANT | MPX_T_FOLDED));
}

static bool param_input(const mpx_node *n, int i) {
    switch (n->op) {
    case MPX_OP_Resize: case MPX_OP_Upsample: case MPX_OP_Dropout: return i >= 1;
    case MPX_OP_CastLike: return i == 1; /* only its type is read */
    default: return false;
    }
}

const mpx_tensor *mpx_node_data_input_(const mpx_node *n, int i) {
    const mpx_tensor *t = n->inputs[i];
    if (!is_float_t(t) || param_input(n, i)) return NULL;
    for (int j = 0; j < i; j++)
        if (n->inputs[j] == t) return NULL;
    return t;
}

/* ---- cast and conversion requests ---------------------------------------------- */

typedef struct req {
    int tensor, rank, consumer;
    const mpx_format *f;
} req;

typedef struct reqs {
    req *v;
    size_t n, cap;
} reqs;

static bool req_add(reqs *r, int tensor, const mpx_format *f, int consumer) {
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 256;
        req *v = realloc(r->v, cap * sizeof *v);
        if (!v) return false;
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n++] = (req){tensor, fmt_rank(f), consumer, f};
    return true;
}

static int req_cmp(const void *pa, const void *pb) {
    const req *a = pa, *b = pb;
    if (a->tensor != b->tensor) return a->tensor < b->tensor ? -1 : 1;
    if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
    if (a->consumer != b->consumer) return a->consumer < b->consumer ? -1 : 1;
    return 0;
}

/* ---- building ----------------------------------------------------------------- */

static mpx_status oom(mpx_error *err) {
    return mpx_error_set(err, MPX_E_NOMEM, "out of memory building the plan");
}

/* A model already in mixed precision: it holds weights narrower than fp32
 * (an export of mpx or another converter's output). A model that only
 * casts an activation to fp16 is an fp32 model with a Cast. */
static bool declares_low(const mpx_graph *g) {
    for (int i = 0; i < g->n_tensors; i++) {
        mpx_dtype d = g->tensors[i]->dtype;
        if ((g->tensors[i]->flags & MPX_T_CONSTANT) && mpx_dtype_is_float(d) && d != MPX_DT_FLOAT &&
            d != MPX_DT_DOUBLE)
            return true;
    }
    return false;
}

/* In such a model a node the op table would run low (green, gray) but whose
 * float outputs the model declares fp32 was kept fp32 by whoever converted
 * it: its default is red, so the plan shows the model's own precision (an
 * export loaded back has the formats of the plan that wrote it, rules
 * included) and re-exporting it changes nothing. */
static bool declared_fp32(const mpx_node *n) {
    int float_out = 0;
    for (int k = 0; k < n->n_outputs; k++) {
        const mpx_tensor *t = n->outputs[k];
        if (!t || !mpx_dtype_is_float(t->dtype)) continue;
        if (t->dtype != MPX_DT_FLOAT) return false;
        float_out++;
    }
    return float_out > 0 && n->op != MPX_OP_Cast && n->op != MPX_OP_CastLike;
}

static void colour_nodes(mpx_plan *p, const mpx_rules *rules, const double *absmax) {
    const mpx_graph *g = p->g;
    bool mixed = declares_low(g);
    for (int i = 0; i < g->n_nodes; i++) {
        const mpx_node *n = g->nodes[i];
        mpx_plan_node *pn = &p->nodes[n->index];
        pn->dflt = mpx_colour_default_node(n, p->opts.target, &pn->dflt_source);
        if (mixed && (pn->dflt == MPX_COLOUR_GREEN || pn->dflt == MPX_COLOUR_GRAY) && declared_fp32(n)) {
            pn->dflt = MPX_COLOUR_RED;
            pn->dflt_source = "mpx: declared fp32 in a model already in mixed precision";
        }
        /* float64 is the model's own choice of precision (audio front ends,
         * classical-ML converters): the defaults keep it; a rule that colours
         * the node low rounds it like any other. */
        if (pn->dflt != MPX_COLOUR_RED && mpx_node_is_f64(n)) {
            pn->dflt = MPX_COLOUR_RED;
            pn->dflt_source = "mpx: float64 stays float64 unless a rule colours it";
        }
        pn->colour = pn->dflt;
        pn->colour_rule = pn->accum_rule = -1;
        pn->accum_flags = 0;
        pn->cause = -1;
        pn->fused = false;
        pn->fuse_rule = -1;
        for (int k = 0; k < p->n_rules; k++) {
            const mpx_rule *r = mpx_rules_at_(rules, k);
            if (!mpx_rule_selects_(r, n)) continue;
            p->rule_selected[k]++;
            tri t = mpx_rule_eval_(r, n, absmax);
            if (t == TRI_UNKNOWN || (t == TRI_FALSE && !r->has_else)) continue;
            p->rule_applied[k]++;
            if (r->kind == MPX_RULE_COLOUR) {
                pn->colour = t == TRI_TRUE ? r->colour : r->else_colour;
                pn->colour_rule = k;
            } else if (r->kind == MPX_RULE_FUSE) {
                pn->fused = true; /* no else: only a true condition gets here */
                pn->fuse_rule = k;
            } else {
                /* Stash the rule's format; resolved once compute is known. */
                pn->accum = t == TRI_TRUE ? r->format : r->else_format;
                pn->accum_flags = t == TRI_TRUE ? r->flags : r->else_flags;
                pn->accum_rule = k;
            }
        }
    }
}

/* Whether t is the output of a fused node, which its consumers read as
 * held (fp32), unrounded. */
static bool held_unrounded(const mpx_plan *p, const mpx_tensor *t) {
    const mpx_node *pr = t ? t->producer : NULL;
    return pr && p->nodes[pr->index].fused && p->nodes[pr->index].is_float && !mpx_tensor_is_const_(t);
}

/* The format a consumer's colour sees t arrive in: for a fused producer's
 * output, the producer's compute format (the value is the low op's result,
 * only not rounded yet), else the format it is held in. */
static const mpx_format *arrives(const mpx_plan *p, const mpx_tensor *t) {
    return held_unrounded(p, t) ? p->nodes[t->producer->index].compute : p->tensors[t->index].format;
}

/* Steps 2 and 3 for one node. */
static bool plan_node(mpx_plan *p, const mpx_node *n, reqs *casts, reqs *convs) {
    mpx_plan_node *pn = &p->nodes[n->index];
    const mpx_format *target = p->opts.target, *fp32 = &mpx_format_fp32;
    bool reads = false, writes = false, folded = n->n_outputs > 0;
    int n_dyn = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        const mpx_tensor *t = mpx_node_data_input_(n, i);
        if (!t) continue;
        reads = true;
        if (!mpx_tensor_is_const_(t)) n_dyn++;
    }
    for (int i = 0; i < n->n_outputs; i++) {
        const mpx_tensor *t = n->outputs[i];
        if (is_float_t(t)) writes = true;
        if (t && !mpx_tensor_is_const_(t)) folded = false;
    }
    pn->folded = folded;
    if (folded || (!reads && !writes) || n->op == MPX_OP_Shape || n->op == MPX_OP_Size) {
        pn->is_float = false;
        pn->accum = NULL;
        pn->accum_flags = 0;
        return true;
    }
    pn->is_float = true;

    const mpx_format *comp = fp32;
    switch (pn->colour) {
    case MPX_COLOUR_GREEN: comp = target; break;
    case MPX_COLOUR_GRAY:
        comp = reads ? target : fp32;
        for (int i = 0; i < n->n_inputs && n_dyn; i++) {
            const mpx_tensor *t = mpx_node_data_input_(n, i);
            if (t && !mpx_tensor_is_const_(t) && !is_low(arrives(p, t))) {
                comp = fp32;
                pn->cause = t->index;
                break;
            }
        }
        break;
    case MPX_COLOUR_CLEAR:
        comp = reads ? target : fp32;
        if (n_dyn) {
            const mpx_format *w = NULL;
            for (int i = 0; i < n->n_inputs; i++) {
                const mpx_tensor *t = mpx_node_data_input_(n, i);
                if (!t || mpx_tensor_is_const_(t)) continue;
                const mpx_format *f = arrives(p, t);
                w = w ? widest(w, f) : f;
            }
            comp = w;
            for (int i = 0; i < n->n_inputs && pn->cause < 0; i++) {
                const mpx_tensor *t = mpx_node_data_input_(n, i);
                if (t && !mpx_tensor_is_const_(t) && arrives(p, t) == w) pn->cause = t->index;
            }
            for (int i = 0; i < n->n_inputs && pn->cause < 0; i++) {
                const mpx_tensor *t = mpx_node_data_input_(n, i);
                if (t && !mpx_tensor_is_const_(t)) pn->cause = t->index;
            }
        }
        break;
    default: comp = fp32; break; /* red, and NONE which never occurs */
    }
    if (mpx_plan_op_fp32_only(n->op)) comp = fp32;
    pn->compute = comp;
    pn->low = is_low(comp);
    pn->output = comp;
    if (n->op == MPX_OP_Cast || n->op == MPX_OP_CastLike) {
        const mpx_format *to = mpx_dtype_format_(mpx_node_cast_to(n));
        if (to && is_low(to)) pn->output = to;
        /* A model already in mixed precision (an export loaded back)
         * converts back to fp32 itself: a Cast of a tensor the model
         * declares low keeps its type, so the plan shows the formats the
         * model declares and adds no cast of its own. */
        else if (to && n->n_inputs > 0 && n->inputs[0] && is_low(mpx_dtype_format_(n->inputs[0]->dtype)))
            pn->output = to;
    }
    if (pn->accum_rule < 0) pn->accum = pn->low ? p->opts.accum : fp32;
    /* fused: the result as the arithmetic left it, for its consumers to round */
    if (pn->fused && n->op != MPX_OP_Cast && n->op != MPX_OP_CastLike) pn->output = fp32;

    for (int i = 0; i < n->n_outputs; i++) {
        const mpx_tensor *t = n->outputs[i];
        if (is_float_t(t) && !mpx_tensor_is_const_(t))
            p->tensors[t->index].format = mpx_node_output_is_f32(n, i) ? fp32 : pn->output;
    }
    for (int i = 0; i < n->n_inputs; i++) {
        const mpx_tensor *t = mpx_node_data_input_(n, i);
        if (!t) continue;
        if (mpx_tensor_is_const_(t)) {
            if (!req_add(convs, t->index, comp, n->index)) return false;
        } else if (p->tensors[t->index].format != comp && !held_unrounded(p, t)) {
            if (!req_add(casts, t->index, comp, n->index)) return false;
        }
    }
    return true;
}

/* Group sorted cast requests into one cast per (tensor, format). */
static bool make_casts(mpx_plan *p, reqs *r) {
    if (r->n) qsort(r->v, r->n, sizeof *r->v, req_cmp);
    int n = 0;
    for (size_t i = 0; i < r->n; i++)
        if (i == 0 || r->v[i].tensor != r->v[i - 1].tensor || r->v[i].f != r->v[i - 1].f) n++;
    mpx_arena *a = p->priv_->arena;
    p->casts = mpx_arena_calloc(a, n ? (size_t)n : 1, sizeof *p->casts);
    if (!p->casts) return false;
    int k = -1;
    for (size_t i = 0; i < r->n; i++) {
        if (i == 0 || r->v[i].tensor != r->v[i - 1].tensor || r->v[i].f != r->v[i - 1].f) {
            size_t j = i;
            while (j < r->n && r->v[j].tensor == r->v[i].tensor && r->v[j].f == r->v[i].f) j++;
            mpx_plan_cast *c = &p->casts[++k];
            c->tensor = r->v[i].tensor;
            c->from = p->tensors[c->tensor].format;
            c->to = r->v[i].f;
            c->consumers = mpx_arena_calloc(a, j - i, sizeof *c->consumers);
            if (!c->consumers) return false;
        }
        mpx_plan_cast *c = &p->casts[k];
        c->consumers[c->n_consumers++] = r->v[i].consumer;
    }
    p->n_casts = n;
    return true;
}

/* Constants: their held format (the one all consumers use, else declared) and
 * the offline conversions. */
static bool make_weights(mpx_plan *p, reqs *r) {
    if (r->n) qsort(r->v, r->n, sizeof *r->v, req_cmp);
    mpx_arena *a = p->priv_->arena;
    p->weights = mpx_arena_calloc(a, r->n ? r->n : 1, sizeof *p->weights);
    if (!p->weights) return false;
    for (size_t i = 0; i < r->n;) {
        int t = r->v[i].tensor;
        const mpx_tensor *x = p->g->tensors[t];
        const mpx_format *nat = mpx_dtype_format_(x->dtype);
        const mpx_format *one = r->v[i].f;
        size_t j = i;
        for (; j < r->n && r->v[j].tensor == t; j++) {
            if (r->v[j].f != one) one = NULL;
            if (r->v[j].f == nat || (j > i && r->v[j].f == r->v[j - 1].f)) continue;
            mpx_plan_weight *w = &p->weights[p->n_weights++];
            w->tensor = t;
            w->to = r->v[j].f;
            int64_t ne = x->nelem >= 0 ? x->nelem : -1;
            w->bytes_before = ne < 0 ? -1 : ne * nat->storage_bits / 8;
            w->bytes_after = ne < 0 ? -1 : ne * w->to->storage_bits / 8;
        }
        p->tensors[t].format = one ? one : nat;
        i = j;
    }
    return true;
}

static int64_t sat_add(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

static mpx_status count(mpx_plan *p, mpx_error *err) {
    mpx_plan_counts *c = &p->counts;
    memset(c, 0, sizeof *c);
    /* MACs as `ops` and `info` count them: an If's branch only when taken. */
    int64_t *macs = malloc(((size_t)p->n_nodes + 1) * sizeof *macs);
    if (!macs || !mpx_graph_count_once(p->g, NULL, macs)) {
        free(macs);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    for (int i = 0; i < p->n_nodes; i++) {
        const mpx_plan_node *pn = &p->nodes[i];
        c->nodes[pn->colour]++;
        c->float_nodes += pn->is_float;
        c->low_nodes += pn->low;
        if (macs[i] < 0) {
            c->macs_unknown++;
            continue;
        }
        c->macs_total = sat_add(c->macs_total, macs[i]);
        if (pn->low) c->macs_low = sat_add(c->macs_low, macs[i]);
        /* the cost's multiply-adds are the ones counted once (an If's
         * untaken branch costs nothing), its traffic the node's own */
        const mpx_node *n = p->g->nodes[i];
        int64_t w = pn->is_float && !pn->folded ? mpx_cost_node_work(n) : -1;
        if (w < 0) continue;
        w = sat_add(w - (n->cost.macs > 0 ? n->cost.macs : 0), macs[i]);
        c->cost_total = sat_add(c->cost_total, w);
        if (pn->low) c->cost_low = sat_add(c->cost_low, w);
    }
    for (int i = 0; i < p->n_casts; i++) {
        int64_t w = mpx_cost_cast_work(p->g->tensors[p->casts[i].tensor]);
        if (w > 0) c->cost_total = sat_add(c->cost_total, w);
    }
    free(macs);
    c->casts = p->n_casts;
    c->weights_converted = p->n_weights;
    for (int i = 0; i < p->n_weights; i++) {
        if (p->weights[i].bytes_before < 0) continue;
        c->weight_bytes_before += p->weights[i].bytes_before;
        c->weight_bytes_after += p->weights[i].bytes_after;
    }
    c->low_macs_pct = c->macs_total > 0 ? 100.0 * (double)c->macs_low / (double)c->macs_total : 0.0;
    c->low_cost_pct = c->cost_total > 0 ? 100.0 * (double)c->cost_low / (double)c->cost_total : 0.0;
    return MPX_OK;
}

static mpx_status check_inputs(const mpx_graph *g, const mpx_rules *rules, const mpx_plan_opts *o,
                               const mpx_plan_measured *m, mpx_error *err) {
    if (!g) return mpx_error_set(err, MPX_E_ARG, "no model loaded: load one before planning");
    if (o && o->accum_block < 0)
        return mpx_error_set(err, MPX_E_ARG, "accumulate block %d: must be 0 (every add) or positive",
                             o->accum_block);
    if (m && m->absmax && m->n_nodes != g->n_nodes)
        return mpx_error_set(err, MPX_E_ARG,
                             "the measured figures are for a model of %d nodes, this one has %d: "
                             "run the reference again",
                             m->n_nodes, g->n_nodes);
    for (int k = 0; k < mpx_rules_count(rules); k++)
        if (mpx_rules_uses_measured(rules, k) && !(m && m->absmax))
            return mpx_error_set(err, MPX_E_ARG,
                                 "rule #%d (%s) uses absmax, a figure measured by the reference run, "
                                 "and there is none yet: `run` first",
                                 k + 1, mpx_rules_text(rules, k));
    return MPX_OK;
}

mpx_status mpx_plan_build(const mpx_graph *g, const mpx_rules *rules, const mpx_plan_opts *opts,
                          const mpx_plan_measured *measured, mpx_plan **out, mpx_error *err) {
    if (!out) return mpx_error_set(err, MPX_E_ARG, "no place for the plan");
    *out = NULL;
    mpx_status st = check_inputs(g, rules, opts, measured, err);
    if (st != MPX_OK) return st;

    mpx_plan *p = calloc(1, sizeof *p);
    struct mpx_plan_priv *priv = calloc(1, sizeof *priv);
    if (!p || !priv || !(priv->arena = mpx_arena_new())) {
        free(p);
        free(priv);
        return oom(err);
    }
    p->priv_ = priv;
    mpx_arena *a = priv->arena;
    p->g = g;
    if (opts) p->opts = *opts;
    else mpx_plan_opts_default(&p->opts);
    if (!p->opts.target) p->opts.target = &mpx_format_fp16;
    if (!p->opts.accum) p->opts.accum = &mpx_format_fp32;
    p->n_nodes = g->n_nodes;
    p->n_tensors = g->n_tensors;
    p->n_rules = mpx_rules_count(rules);
    p->nodes = mpx_arena_calloc(a, (size_t)g->n_nodes + 1, sizeof *p->nodes);
    p->tensors = mpx_arena_calloc(a, (size_t)g->n_tensors + 1, sizeof *p->tensors);
    p->rule_selected = mpx_arena_calloc(a, (size_t)p->n_rules + 1, sizeof(int));
    p->rule_applied = mpx_arena_calloc(a, (size_t)p->n_rules + 1, sizeof(int));
    priv->rules = mpx_rules_copy(rules);
    if (measured && measured->absmax) {
        priv->absmax = mpx_arena_calloc(a, (size_t)g->n_nodes + 1, sizeof(double));
        if (priv->absmax)
            memcpy(priv->absmax, measured->absmax, (size_t)g->n_nodes * sizeof(double));
    }
    reqs casts = {0}, convs = {0};
    bool ok = p->nodes && p->tensors && p->rule_selected && p->rule_applied && priv->rules &&
              (!measured || !measured->absmax || priv->absmax);
    if (ok) {
        colour_nodes(p, rules, priv->absmax);
        for (int i = 0; i < g->n_tensors; i++) {
            const mpx_tensor *t = g->tensors[i];
            mpx_plan_tensor *pt = &p->tensors[t->index];
            if (!is_float_t(t)) continue;
            pt->constant = mpx_tensor_is_const_(t);
            pt->format = mpx_dtype_format_(t->dtype);
            if (!pt->constant && !t->producer && !p->opts.keep_io) pt->format = p->opts.target;
        }
        for (int i = 0; ok && i < g->n_nodes; i++) ok = plan_node(p, g->nodes[i], &casts, &convs);
        for (int i = 0; ok && p->opts.keep_io && i < g->n_outputs; i++) {
            const mpx_tensor *t = g->outputs[i];
            if (!is_float_t(t) || mpx_tensor_is_const_(t)) continue;
            const mpx_format *nat = mpx_dtype_format_(t->dtype);
            if (p->tensors[t->index].format != nat) ok = req_add(&casts, t->index, nat, -1);
        }
        ok = ok && make_casts(p, &casts) && make_weights(p, &convs);
    }
    free(casts.v);
    free(convs.v);
    if (!ok) {
        mpx_plan_free(p);
        return oom(err);
    }
    st = count(p, err);
    if (st) {
        mpx_plan_free(p);
        return st;
    }
    *out = p;
    return MPX_OK;
}

void mpx_plan_free(mpx_plan *p) {
    if (!p) return;
    if (p->priv_) {
        mpx_rules_free(p->priv_->rules);
        mpx_arena_free(p->priv_->arena);
        free(p->priv_);
    }
    free(p);
}

const mpx_rules *mpx_plan_rules_(const mpx_plan *p) { return p->priv_->rules; }
const double *mpx_plan_absmax_(const mpx_plan *p) { return p->priv_->absmax; }

/* ---- queries -------------------------------------------------------------------- */

const mpx_plan_cast *mpx_plan_find_cast(const mpx_plan *p, int tensor, const mpx_format *f) {
    for (int i = 0; p && i < p->n_casts; i++)
        if (p->casts[i].tensor == tensor && p->casts[i].to == f) return &p->casts[i];
    return NULL;
}

const mpx_format *mpx_plan_input_format(const mpx_plan *p, const mpx_node *node, int i) {
    if (!p || !node || node->index < 0 || node->index >= p->n_nodes || i < 0 || i >= node->n_inputs)
        return NULL;
    const mpx_plan_node *pn = &p->nodes[node->index];
    const mpx_tensor *t = node->inputs[i];
    if (!pn->is_float || !is_float_t(t) || param_input(node, i)) return NULL;
    if (held_unrounded(p, t)) return p->tensors[t->index].format;
    return pn->compute;
}

const mpx_format *mpx_plan_dtype_format(mpx_dtype t) { return mpx_dtype_format_(t); }
bool mpx_plan_tensor_is_const(const mpx_tensor *t) { return t && mpx_tensor_is_const_(t); }

/* Ops runtimes run in fp32 only (ONNX Runtime's CPU provider has no fp16
 * kernel for them; converters keep their inputs fp32: onnxconverter-common's
 * block list, ModelOpt AutoCast): a plan that ran them low would predict a
 * model no runtime computes, so whatever their colour they compute in fp32
 * and the export keeps their inputs fp32. NonMaxSuppression and RoiAlign
 * belong here too once the registry has them. */
bool mpx_plan_op_fp32_only(mpx_op op) {
    return op == MPX_OP_Range || op == MPX_OP_TopK || op == MPX_OP_CumSum;
}

bool mpx_plan_input_is_param(const mpx_node *node, int i) { return node && param_input(node, i); }

bool mpx_plan_node_changed(const mpx_plan *p, int node) {
    if (!p || node < 0 || node >= p->n_nodes) return false;
    const mpx_plan_node *pn = &p->nodes[node];
    return pn->colour_rule >= 0 || pn->accum_rule >= 0 || pn->fuse_rule >= 0 || pn->colour != pn->dflt;
}

static void bytes_str(int64_t b, char *buf, size_t n) {
    if (b < 1024) snprintf(buf, n, "%lld B", (long long)b);
    else if (b < 1024 * 1024) snprintf(buf, n, "%.1f KiB", (double)b / 1024.0);
    else snprintf(buf, n, "%.1f MiB", (double)b / (1024.0 * 1024.0));
}

size_t mpx_plan_summary(const mpx_plan *p, char *buf, size_t size) {
    const mpx_plan_counts *c = &p->counts;
    char before[32], after[32], macs[96];
    bytes_str(c->weight_bytes_before, before, sizeof before);
    bytes_str(c->weight_bytes_after, after, sizeof after);
    if (c->macs_unknown)
        snprintf(macs, sizeof macs, "%.1f%% of known MACs in %s (%d nodes' MACs unknown)",
                 c->low_macs_pct, p->opts.target->name, c->macs_unknown);
    else
        snprintf(macs, sizeof macs, "%.1f%% of MACs in %s (%.1f%% of cost)", c->low_macs_pct, p->opts.target->name,
                 c->low_cost_pct);
    int k = snprintf(buf, size,
                     "green %d, gray %d, clear %d, red %d; %d cast%s; %d weight%s converted "
                     "(%s -> %s); %s",
                     c->nodes[MPX_COLOUR_GREEN], c->nodes[MPX_COLOUR_GRAY],
                     c->nodes[MPX_COLOUR_CLEAR], c->nodes[MPX_COLOUR_RED], c->casts,
                     c->casts == 1 ? "" : "s", c->weights_converted,
                     c->weights_converted == 1 ? "" : "s", before, after, macs);
    return k < 0 ? 0 : (size_t)k;
}

/* ---- the executor's view ------------------------------------------------------ */

static const mpx_format *or_null(const mpx_format *f) {
    return f == &mpx_format_fp32 ? NULL : f;
}

mpx_status mpx_plan_fill_assign(const mpx_plan *p, mpx_assign *a, mpx_error *err) {
    if (!p || !a || !a->tensor || !a->node)
        return mpx_error_set(err, MPX_E_ARG, "no plan or no assignment to fill");
    if (a->n_tensors != p->n_tensors || a->n_nodes != p->n_nodes)
        return mpx_error_set(err, MPX_E_ARG,
                             "the assignment is for a graph of %d tensors and %d nodes, the plan "
                             "for %d and %d",
                             a->n_tensors, a->n_nodes, p->n_tensors, p->n_nodes);
    for (int i = 0; i < p->n_tensors; i++) a->tensor[i] = or_null(p->tensors[i].format);
    for (int i = 0; i < p->n_nodes; i++) {
        const mpx_plan_node *pn = &p->nodes[i];
        a->node[i].compute = or_null(pn->compute);
        a->node[i].output = or_null(pn->output);
        a->node[i].acc.fmt = or_null(pn->accum);
        a->node[i].acc.block = p->opts.accum_block;
        a->node[i].acc.flags = pn->accum_flags;
        a->node[i].held = 0;
    }
    for (int i = 0; i < p->g->n_nodes; i++) {
        const mpx_node *n = p->g->nodes[i];
        if (!p->nodes[n->index].is_float) continue;
        for (int j = 0; j < n->n_inputs && j < 64; j++)
            if (n->inputs[j] && held_unrounded(p, n->inputs[j])) a->node[n->index].held |= (uint64_t)1 << j;
    }
    return MPX_OK;
}

mpx_assign *mpx_plan_to_assign(const mpx_plan *p, mpx_error *err) {
    if (!p) {
        mpx_error_set(err, MPX_E_ARG, "no plan");
        return NULL;
    }
    mpx_assign *a = mpx_assign_uniform(p->g, NULL, NULL, false);
    if (!a) {
        mpx_error_set(err, MPX_E_NOMEM, "out of memory converting the plan for the executor");
        return NULL;
    }
    if (mpx_plan_fill_assign(p, a, err) != MPX_OK) {
        mpx_assign_free(a);
        return NULL;
    }
    return a;
}
