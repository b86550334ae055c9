/* session.c - the one owner of the session's state.
 *
 * The graph, the plan, the last run and the plan it ran change here and only
 * here, through a few functions: repl_set_graph (a new model),
 * repl_rebind_graph (the model's input shapes changed in place),
 * repl_apply_rules (a new state of rules and options: pushed on the undo
 * history), repl_replan (the history's current state planned again: undo,
 * redo, measured absmax changed), repl_take_run and repl_drop_run. Each
 * builds what it needs aside and swaps it in only when nothing can fail any
 * more, so a refused command leaves the session as it was. The cmd_*.c
 * handlers parse words and call these. The table and dispatch are
 * commands.c's; helpers that hold no state are util.c's. */
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
    s->loops_s = MPX_LOOP_SECONDS;
    mpx_set_loop_budget((double)s->loops_s); /* (process-wide, as the setting's effect is) */
    s->decoded = repl_decoded_new(); /* NULL: inputs are decoded every time */
}

void repl_drop_run(mpx_session *s) {
    mpx_compare_free(s->last);
    s->last = NULL;
    if (s->run_plan != s->plan) mpx_plan_free(s->run_plan);
    s->run_plan = NULL;
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
    repl_decoded_drop(s, NULL);
    free(s->decoded);
    s->decoded = NULL;
    mpx_file_guard_free(s->guard);
    s->guard = NULL;
}

mpx_status repl_protect(mpx_session *s, const char *path, const char *what, mpx_error *err) {
    if (!s->guard && !(s->guard = mpx_file_guard_new())) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    return mpx_file_guard_add(s->guard, path, what, err);
}


void repl_after_plan_change(mpx_session *s) {
    if (s->on_plan_change) s->on_plan_change(s);
}

/* The plan becomes p; the old one is freed unless the last run still
 * describes it (s->run_plan). */
static void swap_plan(mpx_session *s, mpx_plan *p) {
    if (s->plan != s->run_plan) mpx_plan_free(s->plan);
    s->plan = p;
}

static mpx_plan_measured measured(const mpx_session *s) {
    mpx_plan_measured m = {0, NULL};
    if (s->absmax && s->graph) {
        m.n_nodes = s->graph->n_nodes;
        m.absmax = s->absmax;
    }
    return m;
}

mpx_status repl_build_plan(const mpx_session *s, const mpx_rules *r, const mpx_plan_opts *o, mpx_plan **out,
                           mpx_error *err) {
    mpx_plan_measured m = measured(s);
    return mpx_plan_build(s->graph, r, o, m.absmax ? &m : NULL, out, err);
}

/* "plan: 3 nodes changed (2 to green, 1 to gray); casts 4 -> 6 (+3 -1); 61.2% of MACs in fp16 (58.0% of cost)" */
static void print_change(mpx_session *s, const mpx_plan *a, const mpx_plan *b) {
    mpx_plan_diff *d = NULL;
    mpx_error e;
    if (!a || mpx_plan_diff_new(a, b, &d, &e) != MPX_OK) {
        char sum[512];
        mpx_plan_summary(b, sum, sizeof sum);
        fprintf(s->info, "plan: %s\n", sum);
        return;
    }
    int to[MPX_COLOUR_COUNT] = {0}, fmt_only = 0;
    for (int i = 0; i < d->n_nodes; i++) {
        if (d->nodes[i].colour_a != d->nodes[i].colour_b) to[d->nodes[i].colour_b]++;
        else fmt_only++;
    }
    fprintf(s->info, "plan: %d node%s changed", d->n_nodes, d->n_nodes == 1 ? "" : "s");
    if (d->n_nodes) {
        const char *sep = " (";
        for (int c = 1; c < MPX_COLOUR_COUNT; c++)
            if (to[c]) {
                fprintf(s->info, "%s%d to %s", sep, to[c], mpx_colour_name((mpx_colour)c));
                sep = ", ";
            }
        if (fmt_only) fprintf(s->info, "%s%d formats only", sep, fmt_only);
        fputc(')', s->info);
    }
    fprintf(s->info, "; casts %d -> %d (+%d -%d); ", d->a.casts, d->b.casts, d->n_added, d->n_removed);
    if (d->b.macs_total == 0 && d->b.macs_unknown)
        fprintf(s->info, "MACs unknown until the inputs' shapes are bound\n");
    else
        fprintf(s->info, "%.1f%% of MACs in %s (%.1f%% of cost)\n", d->b.low_macs_pct, mpx_format_name(b->opts.target),
                d->b.low_cost_pct);
    mpx_plan_diff_free(d);
}

mpx_status repl_apply_rules(mpx_session *s, const mpx_rules *r, const mpx_plan_opts *o, mpx_error *err) {
    mpx_plan *p = NULL;
    mpx_status st = repl_build_plan(s, r, o, &p, err);
    if (st) return st;
    if ((st = mpx_history_push(s->hist, r, o, err))) {
        mpx_plan_free(p);
        return st;
    }
    print_change(s, s->plan, p);
    swap_plan(s, p);
    repl_after_plan_change(s);
    return MPX_OK;
}

/* The history's current state planned again and swapped in; drop: the last
 * run no longer fits the graph (its shapes changed). */
static mpx_status replan(mpx_session *s, bool say, bool drop, mpx_error *err) {
    mpx_plan *p = NULL;
    mpx_status st = repl_build_plan(s, mpx_history_rules(s->hist), mpx_history_opts(s->hist), &p, err);
    if (st) return st;
    if (say) print_change(s, s->plan, p);
    if (drop) repl_drop_run(s);
    swap_plan(s, p);
    repl_after_plan_change(s);
    return MPX_OK;
}

mpx_status repl_replan(mpx_session *s, bool say, mpx_error *err) { return replan(s, say, false, err); }

mpx_status repl_rebind_graph(mpx_session *s, mpx_error *err) { return replan(s, false, true, err); }

/* After a run: the largest |fp32 output| per node, for `when absmax ...`. */
static double *absmax_of(const mpx_graph *g, const mpx_compare *c) {
    double *a = malloc((size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof *a);
    if (!a) return NULL;
    for (int i = 0; i < g->n_nodes; i++) a[i] = NAN;
    for (int i = 0; i < c->n_layers; i++) {
        const mpx_layer *L = &c->layers[i];
        if (isnan(a[L->node]) || L->m.absmax_ref > a[L->node]) a[L->node] = L->m.absmax_ref;
    }
    return a;
}

mpx_status repl_take_run(mpx_session *s, mpx_compare *c, const mpx_format *target, bool local, const mpx_plan *ran,
                         mpx_error *err) {
    double *am = absmax_of(s->graph, c);
    if (!am) {
        mpx_compare_free(c);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    mpx_compare_free(s->last);
    if (s->run_plan != s->plan) mpx_plan_free(s->run_plan);
    s->last = c;
    s->last_target = target;
    s->last_local = local;
    s->run_plan = ran == s->plan ? s->plan : NULL;
    free(s->absmax);
    s->absmax = am;
    return MPX_OK;
}

const mpx_input_spec *repl_find_spec(const mpx_session *s, const char *name) {
    for (int i = 0; i < s->n_specs; i++)
        if (strcmp(s->specs[i].name, name) == 0) return &s->specs[i];
    return NULL;
}

mpx_status repl_set_spec(mpx_session *s, const mpx_input_spec *sp, mpx_error *err) {
    if (sp->kind == MPX_INPUT_FILE || sp->kind == MPX_INPUT_IMAGE || sp->kind == MPX_INPUT_AUDIO) {
        mpx_status st = repl_protect(s, sp->path, "an input file of this session", err);
        if (st) return st;
    }
    for (int i = 0; i < s->n_specs; i++)
        if (strcmp(s->specs[i].name, sp->name) == 0) {
            s->specs[i] = *sp;
            repl_decoded_drop(s, sp->name);
            return MPX_OK;
        }
    mpx_input_spec *grown = realloc(s->specs, (size_t)(s->n_specs + 1) * sizeof *grown);
    if (!grown) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    s->specs = grown;
    s->specs[s->n_specs++] = *sp;
    return MPX_OK;
}

void repl_set_data(mpx_session *s, struct repl_dataset *d) {
    repl_data_free(s->data);
    s->data = d;
    repl_decoded_drop(s, NULL); /* the values of another set's files */
    repl_drop_run(s); /* runs and caches were of another set's samples */
}

mpx_status repl_set_graph(mpx_session *s, mpx_graph *g, const char *path, mpx_error *err) {
    /* A new model starts with no rules, inputs or data set; the plan options stay. */
    mpx_history *h = mpx_history_new(s->hist ? mpx_history_opts(s->hist) : NULL);
    if (!h) {
        mpx_graph_free(g);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    mpx_plan *p = NULL;
    mpx_status st = mpx_plan_build(g, mpx_history_rules(h), mpx_history_opts(h), NULL, &p, err);
    /* The model and the files its load read are the session's from now on:
     * no write may replace them. */
    if (!st && !s->guard && !(s->guard = mpx_file_guard_new())) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    if (!st) st = mpx_file_guard_add_model(s->guard, g, err);
    if (st) {
        mpx_plan_free(p);
        mpx_history_free(h);
        mpx_graph_free(g);
        return st;
    }
    repl_drop_run(s);
    swap_plan(s, p);
    mpx_history_free(s->hist);
    s->hist = h;
    free(s->specs);
    s->specs = NULL;
    s->n_specs = 0;
    repl_data_free(s->data); /* its files name another model's inputs */
    s->data = NULL;
    repl_decoded_drop(s, NULL);
    mpx_graph_free(s->graph);
    s->graph = g;
    snprintf(s->model_path, sizeof s->model_path, "%s", path);
    s->model_id[0] = '\0'; /* made when a shard first needs it (repl_model_id) */
    repl_after_plan_change(s);
    return MPX_OK;
}

/* The file is read again for its CRC only here, when a shard is written,
 * not at every load (a model of a GB read twice). */
const char *repl_model_id(mpx_session *s) {
    mpx_error err;
    if (!s->model_id[0] && s->graph && repl_file_id(s->model_path, s->model_id, sizeof s->model_id, &err))
        s->model_id[0] = '\0';
    return s->model_id;
}

