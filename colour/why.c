/* why.c - the chain of rules and propagation steps that decided a node.
 *
 * The plan keeps only each node's outcome (colour, deciding rule, the input
 * that decided a gray or clear node); the rules are re-evaluated here to show
 * what each `when` gave. Since a plan is a pure function of its inputs and
 * keeps copies of its rules and measured figures, the replay is exact. */
#include "colour_internal.h"

#include <stdarg.h>
#include <stdio.h>

enum { MAX_CHAIN = 16 };

typedef mpx_text_ out;
#define put mpx_text_printf_

void mpx_text_printf_(mpx_text_ *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = t->len < t->size ? t->size - t->len : 0;
    int k = vsnprintf(room ? t->buf + t->len : NULL, room, fmt, ap);
    va_end(ap);
    if (k > 0) t->len += (size_t)k;
}

static const char *fname(const mpx_format *f) { return f ? f->name : "-"; }

/* "rule #2" or "default" */
static const char *by(int rule, char *buf, size_t n) {
    if (rule < 0) return "default";
    snprintf(buf, n, "rule #%d", rule + 1);
    return buf;
}

static void rules_lines(out *o, const mpx_plan *p, const mpx_node *n) {
    const mpx_rules *rules = mpx_plan_rules_(p);
    const double *absmax = mpx_plan_absmax_(p);
    for (int k = 0; k < mpx_rules_count(rules); k++) {
        const mpx_rule *r = mpx_rules_at_(rules, k);
        if (!mpx_rule_selects_(r, n)) continue;
        bool colour = r->kind == MPX_RULE_COLOUR, fuse = r->kind == MPX_RULE_FUSE;
        const char *then = fuse ? "output to its consumers unrounded" : colour ? mpx_colour_name(r->colour)
                                                                               : fname(r->format);
        const char *other = colour ? mpx_colour_name(r->else_colour) : fname(r->else_format);
        const char *what = fuse ? "fused: " : colour ? "" : "accumulate ";
        put(o, "  rule #%d `%s`: ", k + 1, r->text);
        if (!r->when) {
            put(o, "%s%s\n", what, then);
            continue;
        }
        char figs[256];
        mpx_rule_figures_(r, n, absmax, figs, sizeof figs);
        switch (mpx_rule_eval_(r, n, absmax)) {
        case TRI_TRUE: put(o, "when holds (%s) -> %s%s\n", figs, what, then); break;
        case TRI_FALSE:
            if (r->has_else) put(o, "when fails (%s) -> else %s%s\n", figs, what, other);
            else put(o, "when fails (%s): no change\n", figs);
            break;
        case TRI_UNKNOWN: put(o, "when is unknown (%s): rule skipped\n", figs); break;
        }
    }
}

/* Follow the tensor that decided a gray or clear node upstream to where its
 * format was set: a model input, a red or green node, or a constant. */
static void chain(out *o, const mpx_plan *p, int tensor) {
    char rb[32];
    for (int depth = 0; tensor >= 0 && depth < MAX_CHAIN; depth++) {
        const mpx_tensor *t = p->g->tensors[tensor];
        const mpx_format *f = p->tensors[tensor].format;
        if (!t->producer) {
            if (p->tensors[tensor].constant)
                put(o, "    \"%s\" is a constant held in %s\n", t->name, fname(f));
            else
                put(o, "    \"%s\" is a model input, in %s (keep-io %s)\n", t->name, fname(f),
                    p->opts.keep_io ? "on: inputs keep their declared type" : "off: inputs arrive in the target");
            return;
        }
        const mpx_node *n = t->producer;
        const mpx_plan_node *pn = &p->nodes[n->index];
        put(o, "    \"%s\" comes from \"%s\" (%s, %s by %s), which computes in %s", t->name, n->name,
            n->op_type, mpx_colour_name(pn->colour), by(pn->colour_rule, rb, sizeof rb),
            fname(pn->compute));
        if ((pn->colour == MPX_COLOUR_GRAY || pn->colour == MPX_COLOUR_CLEAR) && pn->cause >= 0) {
            put(o, " because \"%s\" arrives in %s\n", p->g->tensors[pn->cause]->name,
                fname(p->tensors[pn->cause].format));
            tensor = pn->cause;
        } else {
            put(o, "\n");
            return;
        }
    }
    if (tensor >= 0) put(o, "    ...\n");
}

static void propagation(out *o, const mpx_plan *p, const mpx_node *n) {
    const mpx_plan_node *pn = &p->nodes[n->index];
    const char *target = p->opts.target->name;
    bool reads = false, dyn = false;
    const mpx_format *first = NULL;
    bool mixed = false;
    for (int i = 0; i < n->n_inputs; i++) {
        const mpx_tensor *t = mpx_node_data_input_(n, i);
        if (!t) continue;
        reads = true;
        if (mpx_tensor_is_const_(t)) continue;
        dyn = true;
        const mpx_format *f = p->tensors[t->index].format;
        if (first && f != first) mixed = true;
        if (!first) first = f;
    }
    if (mpx_plan_op_fp32_only(n->op) && pn->colour != MPX_COLOUR_RED) {
        put(o, "  %s, but %s computes in fp32 whatever its colour: runtimes have no low-precision kernel for it\n",
            mpx_colour_name(pn->colour), n->op_type);
        return;
    }
    switch (pn->colour) {
    case MPX_COLOUR_RED:
        put(o, mpx_node_is_f64(n) ? "  red: computes in float64 (the reference's precision)\n" : "  red: computes in fp32\n");
        return;
    case MPX_COLOUR_GREEN: put(o, "  green: computes in %s, the target\n", target); return;
    case MPX_COLOUR_GRAY:
    case MPX_COLOUR_CLEAR: {
        const char *c = mpx_colour_name(pn->colour);
        if (!reads) {
            put(o, "  %s: no float input, so a source of float values: computes in fp32\n", c);
        } else if (!dyn) {
            put(o, "  %s: its float inputs are constants, which count as low: computes in %s\n", c,
                target);
        } else if (pn->colour == MPX_COLOUR_GRAY) {
            if (pn->cause >= 0) {
                put(o, "  gray: input \"%s\" arrives in %s, so it computes in fp32\n",
                    p->g->tensors[pn->cause]->name, fname(p->tensors[pn->cause].format));
                chain(o, p, pn->cause);
            } else {
                put(o, "  gray: every float input arrives low: computes in %s\n", target);
            }
        } else if (mixed) {
            put(o, "  clear: its inputs arrive in different formats: computes in the widest, %s "
                   "(from \"%s\")\n",
                fname(pn->compute), pn->cause >= 0 ? p->g->tensors[pn->cause]->name : "?");
            if (pn->cause >= 0) chain(o, p, pn->cause);
        } else {
            put(o, "  clear: follows its inputs, which arrive in %s\n", fname(pn->compute));
            if (pn->cause >= 0) chain(o, p, pn->cause);
        }
        return;
    }
    default: return;
    }
}

static void io_lines(out *o, const mpx_plan *p, const mpx_node *n) {
    const mpx_plan_node *pn = &p->nodes[n->index];
    for (int i = 0; i < n->n_inputs; i++) {
        const mpx_tensor *t = mpx_node_data_input_(n, i);
        if (!t) continue;
        const mpx_format *f = p->tensors[t->index].format;
        if (mpx_tensor_is_const_(t)) {
            const mpx_format *nat = mpx_dtype_format_(t->dtype);
            if (pn->compute != nat) {
                put(o, "  input \"%s\": a constant, converted offline from %s to %s", t->name, fname(nat),
                    fname(pn->compute));
                mpx_value v;
                mpx_value_view(&v, t);
                int64_t ovf = 0, flush = 0;
                if (pn->compute && v.n > 0 && v.f) mpx_format_count_damage(pn->compute, v.f, (size_t)v.n, &ovf, &flush);
                if (v.n == 1 && (ovf || flush))
                    put(o, " (%.6g in fp32, which %s in %s)", (double)v.f[0], ovf ? "overflows" : "flushes to zero",
                        fname(pn->compute));
                else if (ovf || flush)
                    put(o, " (%lld of its %lld values %s)", (long long)(ovf ? ovf : flush), (long long)v.n,
                        ovf ? "overflow" : "flush to zero");
                put(o, "\n");
            }
            else
                put(o, "  input \"%s\": a constant, used in %s\n", t->name, fname(nat));
            continue;
        }
        const mpx_plan_cast *c = mpx_plan_find_cast(p, t->index, pn->compute);
        if (c && f != pn->compute)
            put(o, "  input \"%s\" arrives in %s: cast to %s (one cast, %d consumer%s)\n", t->name,
                fname(f), fname(pn->compute), c->n_consumers, c->n_consumers == 1 ? "" : "s");
        else if (f != pn->compute && t->producer && p->nodes[t->producer->index].fused)
            put(o, "  input \"%s\" arrives in %s, unrounded (its producer is fused): read as it is, the "
                   "node's output rounded once\n", t->name, fname(f));
        else
            put(o, "  input \"%s\" arrives in %s: no cast\n", t->name, fname(f));
    }
    for (int i = 0; i < n->n_outputs; i++) {
        const mpx_tensor *t = n->outputs[i];
        if (!t || !(t->flags & MPX_T_OUTPUT)) continue;
        const mpx_format *nat = mpx_dtype_format_(t->dtype);
        if (mpx_plan_find_cast(p, t->index, nat))
            put(o, "  output \"%s\" is a model output: cast from %s to %s before it (keep-io on)\n",
                t->name, fname(p->tensors[t->index].format), fname(nat));
    }
}

size_t mpx_plan_why(const mpx_plan *p, int node, char *buf, size_t size) {
    out o = {buf, size, 0};
    if (size) buf[0] = '\0';
    if (!p || node < 0 || node >= p->n_nodes) {
        put(&o, "no node #%d in the plan\n", node);
        return o.len;
    }
    const mpx_node *n = p->g->nodes[node];
    const mpx_plan_node *pn = &p->nodes[node];
    char rb[32];
    put(&o, "node \"%s\" (%s), target %s\n", n->name, n->op_type, p->opts.target->name);
    put(&o, "  default: %s (%s)\n", mpx_colour_name(pn->dflt), pn->dflt_source);
    rules_lines(&o, p, n);
    put(&o, "  colour: %s (%s)\n", mpx_colour_name(pn->colour), by(pn->colour_rule, rb, sizeof rb));
    if (!pn->is_float) {
        if (n->op == MPX_OP_Shape || n->op == MPX_OP_Size)
            put(&o, "  reads only its input's shape: precision does not apply\n");
        else if (pn->folded)
            put(&o, "  computed at load from constants (folded): precision does not apply\n");
        else
            put(&o, "  no floating-point values: precision does not apply\n");
        return o.len;
    }
    propagation(&o, p, n);
    char opts[64];
    if (pn->accum_rule >= 0)
        put(&o, "  accumulate: %s%s%s (rule #%d)\n", fname(pn->accum), pn->accum_flags ? ", " : "",
            mpx_rules_accum_flags_str(pn->accum_flags, ", ", opts, sizeof opts), pn->accum_rule + 1);
    else if (pn->low)
        put(&o, "  accumulate: %s (default for nodes that run low)\n", fname(pn->accum));
    else
        put(&o, "  accumulate: %s (the node runs in fp32)\n", fname(pn->accum));
    if (pn->fused && pn->output != pn->compute)
        put(&o, "  output: %s, unrounded: its consumers read it as it is and round their own outputs "
                "(fused by rule #%d)\n", fname(pn->output), pn->fuse_rule + 1);
    else if (pn->output != pn->compute)
        put(&o, "  output: %s (the model's own Cast)\n", fname(pn->output));
    else
        put(&o, "  output: %s\n", fname(pn->output));
    io_lines(&o, p, n);
    return o.len;
}
