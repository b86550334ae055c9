/* cmd_plan.c - colouring and the plan: target, keep-io, colour, accum, rules,
 * unrule, undo, redo, plan, diff, why.
 *
 * Every command that changes the plan goes through the session's
 * repl_apply_rules or repl_replan (session.c): the candidate plan is built
 * aside and swapped in only when it planned, with one line saying what
 * changed. These handlers parse words and call them. */
#include "repl_internal.h"
#include "mpx_viz.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static mpx_status need_plan(const mpx_session *s, mpx_error *err) {
    mpx_status st = repl_need_model(s, err);
    if (!st && (!s->hist || !s->plan)) st = mpx_error_set(err, MPX_E_INVALID, "no plan (load a model first)");
    return st;
}

/* target <format> [block <k>] (formats: numerics' table) */
mpx_status repl_cmd_target(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    const int n = args->n; /* format, "block", k (dispatch checked the words) */
    char *const *w = args->word;
    mpx_status st = need_plan(s, err);
    if (st) return st;
    mpx_plan_opts o = *mpx_history_opts(s->hist);
    if (n == 0) {
        fprintf(s->out, "target %s", mpx_format_name(o.target));
        if (o.accum_block) fprintf(s->out, " block %d", o.accum_block);
        fputc('\n', s->out);
        return MPX_OK;
    }
    if (n == 2) return repl_usage_error(err, "target", "block needs a size");
    const mpx_format *f = mpx_format_by_name(w[0]);
    if (!f || f->kind == MPX_FMT_FP32) {
        char names[256];
        char hint[128];
        return mpx_error_set(err, MPX_E_ARG, "unknown target \"%s\" (formats: %s)%s", w[0],
                             mpx_format_names(" ", true, names, sizeof names),
                             mpx_explore_format_hint(w[0], true, hint, sizeof hint));
    }
    o.target = f;
    if (n == 3) {
        double k;
        if ((st = mpx_explore_parse_number(w[2], "block", &k, err))) return st;
        if (k < 0 || k > 1e6 || k != (double)(int)k)
            return mpx_error_set(err, MPX_E_ARG, "block %s: a count from 0 (round after every addition) up", w[2]);
        o.accum_block = (int)k;
    }
    return repl_apply_rules(s, mpx_history_rules(s->hist), &o, err);
}

mpx_status repl_cmd_keep_io(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    mpx_status st = need_plan(s, err);
    if (st) return st;
    mpx_plan_opts o = *mpx_history_opts(s->hist);
    if (args->n == 0) {
        fprintf(s->out, "keep-io %s\n", o.keep_io ? "on" : "off");
        return MPX_OK;
    }
    o.keep_io = strcmp(args->word[0], "on") == 0;
    return repl_apply_rules(s, mpx_history_rules(s->hist), &o, err);
}

/* colour/color/accum: the whole line is the rule (its text is kept as typed). */
mpx_status repl_cmd_rule(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    mpx_status st = need_plan(s, err);
    if (st) return st;
    if (args->n < (strcmp(args->argv[0], "fuse") == 0 ? 1 : 2)) return repl_usage_error(err, args->argv[0], NULL);
    mpx_rules *r = mpx_rules_copy(mpx_history_rules(s->hist));
    if (!r) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    st = mpx_rules_add(r, s->line, s->graph, err);
    if (!st) st = repl_apply_rules(s, r, mpx_history_opts(s->hist), err);
    if (!st) {
        int k = mpx_rules_count(r) - 1;
        if (s->plan->rule_selected[k] == 0) {
            const mpx_node *first = NULL, *owner = NULL;
            int inside = mpx_rules_body_matches(r, k, s->graph, &first, &owner);
            if (inside > 0)
                fprintf(s->info,
                        "warning: rule %d colours no node: it names %d node%s inside a body (%s, in %s's); a body "
                        "runs as one node, in that node's format: colour %s (colour name:%s ...)\n",
                        k + 1, inside, inside == 1 ? "" : "s", first->name, owner->name, owner->name, owner->name);
            else {
                char hint[600];
                fprintf(s->info, "warning: rule %d matches no node of this model%s\n", k + 1,
                        mpx_rules_name_tail(r, k, s->graph, hint, sizeof hint));
            }
        } else if (s->plan->rule_applied[k] == 0)
            fprintf(s->info, "warning: rule %d selects %d node%s but its condition holds for none\n", k + 1,
                    s->plan->rule_selected[k], s->plan->rule_selected[k] == 1 ? "" : "s");
    }
    mpx_rules_free(r);
    return st;
}

mpx_status repl_cmd_unrule(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    const char *nth = args->word[0]; /* dispatch checked the count against the row */
    mpx_status st = need_plan(s, err);
    if (st) return st;
    const mpx_rules *cur = mpx_history_rules(s->hist);
    double k;
    if ((st = mpx_explore_parse_number(nth, "rule number", &k, err))) return st;
    int n = mpx_rules_count(cur);
    if (k != (double)(int)k || k < 1 || k > n)
        return mpx_error_set(err, MPX_E_ARG, "no rule %s (there %s %d; see: rules)", nth, n == 1 ? "is" : "are", n);
    mpx_rules *r = mpx_rules_copy(cur);
    if (!r) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    st = mpx_rules_remove(r, (int)k - 1, err);
    if (!st) st = repl_apply_rules(s, r, mpx_history_opts(s->hist), err);
    mpx_rules_free(r);
    return st;
}

/* undo / redo: move the cursor, plan the state; put it back if that fails. */
mpx_status repl_cmd_undo(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    const char *name = args->argv[0]; /* undo or redo */
    mpx_status st = need_plan(s, err);
    if (st) return st;
    bool undo = strcmp(name, "undo") == 0;
    if (!(undo ? mpx_history_undo(s->hist) : mpx_history_redo(s->hist)))
        return mpx_error_set(err, MPX_E_ARG, "nothing to %s", name);
    if ((st = repl_replan(s, true, err))) {
        if (undo) mpx_history_redo(s->hist);
        else mpx_history_undo(s->hist);
        return st;
    }
    return MPX_OK;
}

/* rules [--json] */
mpx_status repl_cmd_rules(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    mpx_status st = need_plan(s, err);
    if (st) return st;
    bool json = args->opt[OPT_JSON].given;
    const mpx_rules *r = mpx_history_rules(s->hist);
    const mpx_plan_opts *o = mpx_history_opts(s->hist);
    int n = mpx_rules_count(r);
    if (json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "target", mpx_format_name(o->target));
        cJSON_AddBoolToObject(root, "keep_io", o->keep_io);
        cJSON_AddNumberToObject(root, "accum_block", o->accum_block);
        cJSON *arr = cJSON_AddArrayToObject(root, "rules");
        for (int i = 0; i < n; i++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "n", i + 1);
            cJSON_AddStringToObject(e, "text", mpx_rules_text(r, i));
            cJSON_AddStringToObject(e, "kind", mpx_rules_kind(r, i) == MPX_RULE_ACCUM  ? "accum"
                                                : mpx_rules_kind(r, i) == MPX_RULE_FUSE ? "fuse"
                                                                                        : "colour");
            cJSON_AddNumberToObject(e, "selected", s->plan->rule_selected[i]);
            cJSON_AddNumberToObject(e, "applied", s->plan->rule_applied[i]);
            cJSON_AddItemToArray(arr, e);
        }
        char *text = cJSON_Print(root);
        cJSON_Delete(root);
        return repl_emit(s, text, NULL, err);
    }
    fprintf(s->out, "target %s, keep-io %s%s\n", mpx_format_name(o->target), o->keep_io ? "on" : "off",
            o->accum_block ? ", low accumulation in blocks" : "");
    if (!n) fprintf(s->out, "no rules: every node has its default colour\n");
    for (int i = 0; i < n; i++)
        fprintf(s->out, "%3d  %-48s  selects %d, sets %d\n", i + 1, mpx_rules_text(r, i), s->plan->rule_selected[i],
                s->plan->rule_applied[i]);
    return MPX_OK;
}

static const char *rule_label(const mpx_plan_node *pn, char *buf, size_t n) {
    if (pn->colour_rule >= 0) snprintf(buf, n, "rule %d", pn->colour_rule + 1);
    else snprintf(buf, n, "default");
    if (pn->fused) {
        size_t k = strlen(buf);
        snprintf(buf + k, n - k, ", fused by %d", pn->fuse_rule + 1);
    }
    return buf;
}

/* A node's accum cell: "-" for a node without float values, else the
 * format, then the accum rule's options after a '+' each (bf16+bias-first). */
static const char *accum_cell(const mpx_plan_node *pn, char *buf, size_t n) {
    char opts[64];
    if (!pn->is_float) snprintf(buf, n, "-");
    else snprintf(buf, n, "%s%s%s", mpx_format_name(pn->accum), pn->accum_flags ? "+" : "",
                  mpx_rules_accum_flags_str(pn->accum_flags, "+", opts, sizeof opts));
    return buf;
}

/* plan [--changed] [--json [<file>]] */
/* One line of plan --scopes and its children's, indented by depth. */
static void print_scope(mpx_session *s, const mpx_scopes *sc, const mpx_scope_figures *f, int k, int depth, int w) {
    const mpx_scope *x = &sc->s[k];
    const mpx_scope_figures *e = &f[k];
    char name[256], fmts[64] = "", cols[48], casts[24], worst[112] = "-";
    snprintf(name, sizeof name, "%*s%s", 2 * depth, "", x->label[0] ? x->label : "(model)");
    size_t n = 0;
    for (int q = 0; q < e->n_formats && q < 2 && n < sizeof fmts; q++)
        n += (size_t)snprintf(fmts + n, sizeof fmts - n, "%s%s %d", q ? " " : "", mpx_format_name(e->formats[q]),
                              e->format_nodes[q]);
    if (e->n_formats > 2 && n < sizeof fmts) snprintf(fmts + n, sizeof fmts - n, " +%d", e->n_formats - 2);
    if (!e->n_formats) snprintf(fmts, sizeof fmts, "-");
    snprintf(cols, sizeof cols, "%d/%d/%d/%d", e->colours[MPX_COLOUR_GREEN], e->colours[MPX_COLOUR_GRAY],
             e->colours[MPX_COLOUR_CLEAR], e->colours[MPX_COLOUR_RED]);
    snprintf(casts, sizeof casts, "%d/%d", e->casts_in, e->casts_out);
    if (e->has_error) {
        char fig[32];
        snprintf(fig, sizeof fig, "%.3g", e->worst_rel_l2);
        /* where: the node's name below this scope */
        const char *nm = e->worst_node >= 0 ? s->graph->nodes[e->worst_node]->name : "";
        size_t pl = strlen(x->path);
        if (x->kind == MPX_SCOPE_NAME && pl && strncmp(nm, x->path, pl) == 0 && nm[pl] == '/') nm += pl + 1;
        snprintf(worst, sizeof worst, "%s %.70s", fig, nm);
    }
    fprintf(s->out, "%-*.*s %6d  %-18s %-15s %-8s %-9s %s\n", w, w, name, e->nodes, fmts, cols, casts,
            e->has_error ? (e->overflow ? "yes" : "0") : "-", worst);
    if (e->has_error && e->overflow) fprintf(s->out, "%*s  (%lld values overflowed in %d nodes)\n", w, "",
                                             (long long)e->overflow, e->overflow_nodes);
    for (int c = 0; c < x->n_children; c++) print_scope(s, sc, f, x->children[c], depth + 1, w);
}

/* plan --scopes: the model's own structure (mpx_graph_scopes of the drawn
 * nodes, as the review page and dot/svg --fold scopes fold it) with each
 * scope's figures (mpx_plan_scope_figures): the terminal's model view. */
static mpx_status plan_scopes(mpx_session *s, mpx_error *err) {
    const mpx_plan *p = s->plan;
    mpx_viz_opts o;
    mpx_viz_opts_default(&o);
    o.fold = MPX_VIZ_FOLD_BOXES;
    o.fold_by = MPX_VIZ_FOLD_SCOPES;
    mpx_scopes *sc = NULL;
    mpx_status st = mpx_viz_scope_tree(p, &o, &sc, err);
    if (st) return st;
    if (!sc) return mpx_error_set(err, MPX_E_INVALID, "no scope tree");
    const mpx_compare *run = repl_run_is_current(s) ? s->last : NULL;
    mpx_scope_figures *f = NULL;
    if ((st = mpx_plan_scope_figures(p, sc, run, &f, err))) {
        mpx_scopes_free(sc);
        return st;
    }
    if (!mpx_scopes_useful(sc))
        fprintf(s->out, "the node names carry no scopes (%d of %d nodes in one): the review page and --fold draw "
                        "regions instead\n",
                sc->n_scoped, sc->s[0].n_total);
    int w = 12;
    for (int k = 0; k < sc->n; k++) {
        int len = 2 * (sc->s[k].depth - sc->s[sc->top].depth) + (int)strlen(sc->s[k].label);
        if (mpx_scope_within(sc, k, sc->top) && len > w) w = len;
    }
    if (w > 48) w = 48;
    fprintf(s->out, "%-*s %6s  %-18s %-15s %-8s %-9s %s\n", w, "scope", "nodes", "formats", "g/gr/c/r", "casts",
            "overflow", run ? "worst rel_l2 at" : "worst rel_l2 (no run of this plan)");
    print_scope(s, sc, f, sc->top, 0, w);
    fprintf(s->out, "%d scopes; casts in/out: runtime casts of values crossing the scope's border; g/gr/c/r: green, "
                    "gray, clear, red nodes\n",
            sc->n - 1 - sc->s[sc->top].depth);
    free(f);
    mpx_scopes_free(sc);
    return MPX_OK;
}

mpx_status repl_cmd_plan(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    mpx_status st = need_plan(s, err);
    if (st) return st;
    if (args->opt[PLAN_SCOPES].given) return plan_scopes(s, err);
    bool changed = args->opt[PLAN_CHANGED].given, json = args->opt[PLAN_JSON].given;
    const char *path = args->opt[PLAN_JSON].text;
    const mpx_plan *p = s->plan;
    const mpx_graph *g = s->graph;
    if (json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "target", mpx_format_name(p->opts.target));
        cJSON_AddBoolToObject(root, "keep_io", p->opts.keep_io);
        cJSON *cnt = cJSON_AddObjectToObject(root, "counts");
        for (int c = 1; c < MPX_COLOUR_COUNT; c++)
            cJSON_AddNumberToObject(cnt, mpx_colour_name((mpx_colour)c), p->counts.nodes[c]);
        cJSON_AddNumberToObject(cnt, "casts", p->counts.casts);
        cJSON_AddNumberToObject(cnt, "weights_converted", p->counts.weights_converted);
        cJSON_AddNumberToObject(cnt, "weight_bytes_before", (double)p->counts.weight_bytes_before);
        cJSON_AddNumberToObject(cnt, "weight_bytes_after", (double)p->counts.weight_bytes_after);
        /* every digit (cJSON's own printing keeps 15 where they read back
         * within its epsilon): a figure another client compares */
        mpx_explore_json_exact(cnt, "low_macs_pct", p->counts.low_macs_pct, "null");
        mpx_explore_json_exact(cnt, "low_cost_pct", p->counts.low_cost_pct, "null");
        cJSON *nodes = cJSON_AddArrayToObject(root, "nodes");
        for (int i = 0; i < g->n_nodes; i++) {
            const mpx_plan_node *pn = &p->nodes[i];
            if (changed && !mpx_plan_node_changed(p, i)) continue;
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "name", g->nodes[i]->name);
            cJSON_AddStringToObject(e, "op", g->nodes[i]->op_type);
            cJSON_AddStringToObject(e, "colour", mpx_colour_name(pn->colour));
            cJSON_AddStringToObject(e, "default", mpx_colour_name(pn->dflt));
            if (pn->colour_rule >= 0) cJSON_AddNumberToObject(e, "rule", pn->colour_rule + 1);
            else cJSON_AddNullToObject(e, "rule");
            if (pn->is_float) {
                cJSON_AddStringToObject(e, "compute", mpx_format_name(pn->compute));
                cJSON_AddStringToObject(e, "accum", mpx_format_name(pn->accum));
                cJSON *ao = cJSON_AddArrayToObject(e, "accum_options");
                unsigned f;
                for (int k = 0; mpx_rules_accum_option(k, &f); k++)
                    if (pn->accum_flags & f) cJSON_AddItemToArray(ao, cJSON_CreateString(mpx_rules_accum_option(k, NULL)));
                cJSON_AddStringToObject(e, "output", mpx_format_name(pn->output));
            }
            if (pn->fused) { /* only where a fuse rule applies: plans without one read as before */
                cJSON_AddBoolToObject(e, "fused", true);
                cJSON_AddNumberToObject(e, "fuse_rule", pn->fuse_rule + 1);
            }
            cJSON_AddItemToArray(nodes, e);
        }
        cJSON *casts = cJSON_AddArrayToObject(root, "casts");
        for (int i = 0; i < p->n_casts; i++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "tensor", g->tensors[p->casts[i].tensor]->name);
            cJSON_AddStringToObject(e, "from", mpx_format_name(p->casts[i].from));
            cJSON_AddStringToObject(e, "to", mpx_format_name(p->casts[i].to));
            cJSON_AddNumberToObject(e, "consumers", p->casts[i].n_consumers);
            cJSON_AddItemToArray(casts, e);
        }
        char *text = cJSON_Print(root);
        cJSON_Delete(root);
        return repl_emit(s, text, path, err);
    }
    char sum[512], rl[48];
    mpx_plan_summary(p, sum, sizeof sum);
    int w = 4;
    for (int i = 0; i < g->n_nodes; i++) {
        int len = (int)strlen(g->nodes[i]->name);
        if ((!changed || mpx_plan_node_changed(p, i)) && len > w) w = len;
    }
    if (w > 60) w = 60;
    /* the accum column as wide as its widest cell: the format and the accum
     * rule's options (bf16+bias-first) */
    char acc[96];
    int aw = 7;
    for (int i = 0; i < g->n_nodes; i++) {
        int len = (int)strlen(accum_cell(&p->nodes[i], acc, sizeof acc));
        if ((!changed || mpx_plan_node_changed(p, i)) && len > aw) aw = len;
    }
    fprintf(s->out, "%-*s %-18s %-6s %-7s %-*s %-7s %s\n", w, "node", "op", "colour", "compute", aw, "accum", "output",
            "set by");
    int shown = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const mpx_plan_node *pn = &p->nodes[i];
        if (changed && !mpx_plan_node_changed(p, i)) continue;
        shown++;
        fprintf(s->out, "%-*s %-18s %-6s %-7s %-*s %-7s %s\n", w, g->nodes[i]->name, g->nodes[i]->op_type,
                mpx_colour_name(pn->colour), pn->is_float ? mpx_format_name(pn->compute) : "-", aw,
                accum_cell(pn, acc, sizeof acc), pn->is_float ? mpx_format_name(pn->output) : "-",
                rule_label(pn, rl, sizeof rl));
    }
    if (changed && !shown) fprintf(s->out, "(no node changed by rules)\n");
    for (int i = 0; i < p->n_casts; i++)
        fprintf(s->out, "cast %s %s -> %s (%d consumer%s)\n", g->tensors[p->casts[i].tensor]->name,
                mpx_format_name(p->casts[i].from), mpx_format_name(p->casts[i].to), p->casts[i].n_consumers,
                p->casts[i].n_consumers == 1 ? "" : "s");
    fprintf(s->out, "%s\n", sum);
    char head[96];
    snprintf(head, sizeof head, "weights that do not fit %s:\n", mpx_format_name(p->opts.target));
    if (!repl_check_weights(s, p, s->out, head, NULL, NULL)) repl_print_flushed(s, p, s->out, "");
    return MPX_OK;
}

/* diff [--json]: the current plan against the one before the last change. */
mpx_status repl_cmd_diff(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    mpx_status st = need_plan(s, err);
    if (st) return st;
    bool json = args->opt[OPT_JSON].given;
    const mpx_rules *r;
    const mpx_plan_opts *o;
    if (!mpx_history_state(s->hist, 1, &r, &o))
        return mpx_error_set(err, MPX_E_ARG, "no earlier state to compare with (nothing changed yet)");
    mpx_plan *prev = NULL;
    if ((st = repl_build_plan(s, r, o, &prev, err))) return st;
    mpx_plan_diff *d = NULL;
    st = mpx_plan_diff_new(prev, s->plan, &d, err);
    mpx_plan_free(prev);
    if (st) return st;
    const mpx_graph *g = s->graph;
    if (json) {
        cJSON *root = cJSON_CreateObject();
        cJSON *nodes = cJSON_AddArrayToObject(root, "nodes");
        for (int i = 0; i < d->n_nodes; i++) {
            const mpx_plan_diff_node *n = &d->nodes[i];
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "name", g->nodes[n->node]->name);
            cJSON_AddStringToObject(e, "op", g->nodes[n->node]->op_type);
            cJSON_AddStringToObject(e, "colour_before", mpx_colour_name(n->colour_a));
            cJSON_AddStringToObject(e, "colour_after", mpx_colour_name(n->colour_b));
            cJSON_AddStringToObject(e, "compute_before", mpx_format_name(n->compute_a));
            cJSON_AddStringToObject(e, "compute_after", mpx_format_name(n->compute_b));
            cJSON_AddItemToArray(nodes, e);
        }
        for (int k = 0; k < 2; k++) {
            cJSON *arr = cJSON_AddArrayToObject(root, k ? "casts_removed" : "casts_added");
            int n = k ? d->n_removed : d->n_added;
            const mpx_plan_diff_cast *c = k ? d->removed : d->added;
            for (int i = 0; i < n; i++) {
                cJSON *e = cJSON_CreateObject();
                cJSON_AddStringToObject(e, "tensor", g->tensors[c[i].tensor]->name);
                cJSON_AddStringToObject(e, "from", mpx_format_name(c[i].from));
                cJSON_AddStringToObject(e, "to", mpx_format_name(c[i].to));
                cJSON_AddItemToArray(arr, e);
            }
        }
        cJSON_AddNumberToObject(root, "casts_before", d->a.casts);
        cJSON_AddNumberToObject(root, "casts_after", d->b.casts);
        mpx_plan_diff_free(d);
        char *text = cJSON_Print(root);
        cJSON_Delete(root);
        return repl_emit(s, text, NULL, err);
    }
    for (int i = 0; i < d->n_nodes; i++) {
        const mpx_plan_diff_node *n = &d->nodes[i];
        fprintf(s->out, "  %-32s %-16s %s/%s -> %s/%s\n", g->nodes[n->node]->name, g->nodes[n->node]->op_type,
                mpx_colour_name(n->colour_a), mpx_format_name(n->compute_a), mpx_colour_name(n->colour_b),
                mpx_format_name(n->compute_b));
    }
    for (int i = 0; i < d->n_added; i++)
        fprintf(s->out, "  + cast %s %s -> %s\n", g->tensors[d->added[i].tensor]->name, mpx_format_name(d->added[i].from),
                mpx_format_name(d->added[i].to));
    for (int i = 0; i < d->n_removed; i++)
        fprintf(s->out, "  - cast %s %s -> %s\n", g->tensors[d->removed[i].tensor]->name,
                mpx_format_name(d->removed[i].from), mpx_format_name(d->removed[i].to));
    fprintf(s->out, "%d node%s changed; casts %d -> %d\n", d->n_nodes, d->n_nodes == 1 ? "" : "s", d->a.casts,
            d->b.casts);
    mpx_plan_diff_free(d);
    return MPX_OK;
}

mpx_status repl_cmd_why(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    mpx_status st = need_plan(s, err);
    if (st) return st;
    const char *name = args->word[0];
    const mpx_node *owner = NULL, *inner = mpx_graph_find_node(s->graph, name) ? NULL
                                           : mpx_graph_find_body_node(s->graph, name, &owner);
    if (inner) { /* inside a body: the node that runs it decides */
        const mpx_plan_node *pn = &s->plan->nodes[owner->index];
        fprintf(s->out, "%s (%s) is inside the body of %s (%s): a body runs as one node of the plan, every node "
                        "of it in that node's format each iteration, so it computes in %s. Why %s:\n",
                inner->name, inner->op_type, owner->name, owner->op_type, mpx_format_name(pn->compute), owner->name);
        name = owner->name;
    }
    const mpx_node *n = repl_node_named(s, name, err);
    if (!n) return err->status;
    size_t need = mpx_plan_why(s->plan, n->index, NULL, 0) + 1;
    char *buf = malloc(need);
    if (!buf) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    mpx_plan_why(s->plan, n->index, buf, need);
    fputs(buf, s->out);
    free(buf);
    /* What the last run's values say about it: the cause of values it made
     * non-finite where fp32 is finite. */
    for (int i = 0; s->last && i < s->last->n_layers; i++) {
        const mpx_layer *L = &s->last->layers[i];
        if (L->node != n->index || L->unmeasured || L->m.overflow <= 0) continue;
        char cause[1024] = "";
        repl_overflow_cause(s, s->last, L, cause, sizeof cause);
        fprintf(s->out, "  last run%s: %lld values of \"%s\" are non-finite where fp32 is finite: %s\n",
                s->run_plan && s->run_plan != s->plan ? " (under the plan before the last change)" : "",
                (long long)L->m.overflow, s->graph->tensors[L->tensor]->name, cause);
    }
    return MPX_OK;
}

/* profile [<name>]: no name lists the profiles (colour/profiles.c) with
 * their plans; a name replaces the plan with the profile's. */
mpx_status repl_cmd_profile(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    if (args->n == 0) {
        for (int k = 0; mpx_profile_name(k); k++) {
            fprintf(s->out, "%s: %s\n", mpx_profile_name(k), mpx_profile_about(k));
            mpx_plan_opts o;
            mpx_rules *r = NULL;
            mpx_status st = mpx_profile_build(k, NULL, NULL, &r, &o, err);
            if (st) return st;
            fprintf(s->out, "  target %s", mpx_format_name(o.target));
            if (o.accum_block) fprintf(s->out, " block %d", o.accum_block);
            fprintf(s->out, "; keep-io %s\n", o.keep_io ? "on" : "off");
            for (int i = 0; i < mpx_rules_count(r); i++) fprintf(s->out, "  %s\n", mpx_rules_text(r, i));
            mpx_rules_free(r);
        }
        return MPX_OK;
    }
    int k = mpx_profile_find(args->word[0]);
    if (k < 0) {
        char names[256] = "";
        size_t o = 0;
        mpx_name_hint h;
        mpx_name_hint_init(&h, args->word[0]);
        for (int i = 0; mpx_profile_name(i) && o < sizeof names; i++) {
            o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", i ? ", " : "", mpx_profile_name(i));
            mpx_name_hint_add(&h, mpx_profile_name(i));
        }
        const char *hint = mpx_name_hint_get(&h);
        return mpx_error_set(err, MPX_E_ARG, "no profile \"%s\" (profiles: %s)%s%s%s", args->word[0], names,
                             hint ? "; did you mean " : "", hint ? hint : "", hint ? "?" : "");
    }
    mpx_status st = need_plan(s, err);
    if (st) return st;
    mpx_rules *r = NULL;
    mpx_plan_opts o;
    if ((st = mpx_profile_build(k, s->graph, mpx_history_opts(s->hist), &r, &o, err))) return st;
    st = repl_apply_rules(s, r, &o, err);
    mpx_rules_free(r);
    return st;
}
