/* cmd_viz.c - the picture commands: dot, svg (and svg --watch), plot, html.
 *
 * viz/ makes the text (it never prints); this file picks what to draw from
 * the session (the current plan, the last run and `compare`'s runs), writes
 * the files and says what it wrote.
 *
 * Runs and staleness: a run belongs to the plan it ran under, and the plan can
 * change after it (a new rule does not drop the run). A run is "current" when
 * its target is the plan's and every compared tensor's format is the one the
 * plan gives it now. The overlay and the page's run sections use only a
 * current run and say so when the last run is stale. */
#include "repl_internal.h"
#include "mpx_viz.h"

#include <stdlib.h>
#include <string.h>

/* ---- options shared by dot, svg and html ---------------------------------- */

typedef struct viz_args {
    mpx_viz_opts o;
    const char *file;       /* the positional argument, or NULL */
    char around[512];
    bool overlay, no_overlay;
    bool watch, unwatch;
    char engine[16];
} viz_args;

/* The options (parsed by dispatch: dot's, svg's and html's rows share
 * them) into the drawing's options. */
static void viz_args_of(const mpx_cmd_args *args, viz_args *a) {
    const mpx_opt_value *o = args->opt;
    memset(a, 0, sizeof *a);
    mpx_viz_opts_default(&a->o);
    a->file = args->n ? args->word[0] : NULL;
    if (o[VIZ_AROUND].given) {
        snprintf(a->around, sizeof a->around, "%s", o[VIZ_AROUND].text);
        a->o.around = a->around;
        a->o.depth = (int)o[VIZ_AROUND].n;
    }
    if (o[VIZ_CLUSTER].given) a->o.cluster = (int)o[VIZ_CLUSTER].i;
    if (o[VIZ_ENGINE].given) {
        snprintf(a->engine, sizeof a->engine, "%s", o[VIZ_ENGINE].text);
        a->o.engine = a->engine;
    }
    a->o.shapes = o[VIZ_SHAPES].given;
    a->o.collapse = o[VIZ_COLLAPSE].given;
    a->o.to_cause = o[VIZ_TO_CAUSE].given;
    if (o[VIZ_FOLD].given) {
        a->o.fold = MPX_VIZ_FOLD_BOXES;
        if (o[VIZ_FOLD].has_value)
            a->o.fold_by = o[VIZ_FOLD].i == 0 ? MPX_VIZ_FOLD_SCOPES : MPX_VIZ_FOLD_REGIONS; /* scopes|regions */
    }
    a->o.weights = o[VIZ_WEIGHTS].given;
    a->o.all = o[VIZ_ALL].given;
    a->overlay = o[VIZ_OVERLAY].given;
    a->o.overlay_local = o[VIZ_LOCAL].given;
    if (o[VIZ_NO_LEGEND].given) a->o.legend = false;
    /* the options past the shared ones are each command's own */
    bool svg = strcmp(args->argv[0], "svg") == 0, html = strcmp(args->argv[0], "html") == 0;
    a->watch = svg && o[VIZ_WATCH].given;
    a->unwatch = svg && o[VIZ_UNWATCH].given;
    a->no_overlay = html && o[VIZ_NO_OVERLAY].given;
}

/* Whether the last run ran the current plan (see the file comment). */
bool repl_run_is_current(const mpx_session *s) {
    const mpx_compare *c = s->last;
    if (!c || !s->plan || c->g != s->graph) return false;
    if (s->last_target && s->last_target != s->plan->opts.target) return false;
    for (int i = 0; i < c->n_layers; i++) {
        const mpx_layer *l = &c->layers[i];
        if (l->tensor < 0 || l->tensor >= s->plan->n_tensors) return false;
        if (strcmp(mpx_format_name(l->fmt), mpx_format_name(s->plan->tensors[l->tensor].format)) != 0) return false;
    }
    return true;
}

/* The runs to plot: the last run (if current) under its target's name, then
 * `compare`'s runs of other formats. labels holds the texts. */
static int run_series(const mpx_session *s, mpx_viz_series *out, char (*labels)[48], int max) {
    int n = 0;
    const mpx_format *last_fmt = NULL;
    if (s->last && s->last->g == s->graph && repl_run_is_current(s)) {
        last_fmt = s->last_target ? s->last_target : s->plan->opts.target;
        snprintf(labels[n], 48, "%s", mpx_format_name(last_fmt));
        out[n].label = labels[n];
        out[n].cmp = s->last;
        n++;
    }
    for (int i = 0; i < s->n_stash && n < max; i++) {
        if (!s->stash[i].cmp || s->stash[i].cmp->g != s->graph || s->stash[i].fmt == last_fmt) continue;
        snprintf(labels[n], 48, "%s (compare)", mpx_format_name(s->stash[i].fmt));
        out[n].label = labels[n];
        out[n].cmp = s->stash[i].cmp;
        n++;
    }
    return n;
}

static mpx_status need_plan(const mpx_session *s, mpx_error *err) {
    mpx_status st = repl_need_model(s, err);
    if (!st && !s->plan) st = mpx_error_set(err, MPX_E_INVALID, "no plan (load a model first)");
    return st;
}

/* Resolve --overlay against the session: the last run, when it is current. */
static mpx_status pick_overlay(const mpx_session *s, viz_args *a, bool by_default, mpx_error *err) {
    if (a->o.to_cause) {
        /* the path is read off the last run's own errors (dispatch saw
         * --around given: the row's needs) */
        if (!repl_run_is_current(s) || !s->last_local)
            return mpx_error_set(err, MPX_E_ARG, "--upstream-to-cause needs a run of the current plan with own "
                                                 "errors (use: run --local)");
        a->overlay = true;
    }
    bool want = a->overlay || (by_default && !a->no_overlay);
    if (!want) return MPX_OK;
    if (repl_run_is_current(s)) {
        a->o.overlay = s->last;
        if (a->o.overlay_local && !s->last_local)
            return mpx_error_set(err, MPX_E_ARG, "--local: the last run has no local errors (use: run --local)");
        return MPX_OK;
    }
    if (!a->overlay) return MPX_OK; /* the default quietly does without */
    if (!s->last) return mpx_error_set(err, MPX_E_ARG, "--overlay needs a run first (use: run)");
    return mpx_error_set(err, MPX_E_ARG, "--overlay: the last run used another plan (rules or target changed since); "
                                         "run again");
}

static const char *kib(size_t n, char *buf, size_t len) {
    if (n >= (size_t)1 << 20) snprintf(buf, len, "%.1f MiB", (double)n / (1 << 20));
    else snprintf(buf, len, "%.1f KiB", (double)n / 1024);
    return buf;
}

static void say_wrote(mpx_session *s, const char *path, const mpx_viz_stats *st, bool laid_out) {
    char k[32];
    fprintf(s->info, "wrote %s: %d nodes (%d ops", path, st->nodes, st->op_nodes);
    if (st->scopes) fprintf(s->info, ", %d scopes", st->scopes);
    if (st->chains) fprintf(s->info, ", %d %s", st->chains, st->scopes ? "regions" : "chains");
    fprintf(s->info, "), %d edges, %d casts", st->edges, st->casts);
    if (st->clusters) fprintf(s->info, ", %d clusters", st->clusters);
    if (st->hidden) fprintf(s->info, "; %d Constant/folded nodes left out", st->hidden);
    fprintf(s->info, "; %s", kib(st->bytes, k, sizeof k));
    if (laid_out) fprintf(s->info, "; layout %.2f s, render %.2f s", st->ms_layout / 1e3, st->ms_render / 1e3);
    fputc('\n', s->info);
}

/* ---- dot -------------------------------------------------------------------- */

mpx_status repl_cmd_dot(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    viz_args a;
    viz_args_of(args, &a);
    mpx_status st = need_plan(s, err);
    if (!st) st = pick_overlay(s, &a, false, err);
    if (st) return st;
    a.o.rules = mpx_history_rules(s->hist);
    char *text = NULL;
    mpx_viz_stats vs;
    if ((st = mpx_viz_dot(s->plan, &a.o, &text, &vs, err))) return st;
    if (!a.file) return repl_emit(s, text, NULL, err);
    st = repl_write_file(s, a.file, text, err);
    free(text);
    if (!st) say_wrote(s, a.file, &vs, false);
    return st;
}

/* ---- svg and its watch ------------------------------------------------------ */

/* What `svg --watch` re-draws after each change: one file per process (the
 * program has one session), with the options as typed. */
static struct {
    const mpx_session *s;
    char path[1024];
    viz_args a;             /* a.o.around points into a.around: fixed up on use */
} watch;

static mpx_status write_svg(mpx_session *s, const char *path, viz_args *a, mpx_viz_stats *vs, mpx_error *err) {
    a->o.rules = mpx_history_rules(s->hist);
    char *svg = NULL;
    mpx_status st = mpx_viz_svg(s->plan, &a->o, &svg, vs, err);
    if (st) return st;
    st = repl_write_file(s, path, svg, err);
    free(svg);
    return st;
}

void repl_viz_after_change(mpx_session *s) {
    /* the hook test ties the watch to this session's life (a session made
     * later at the same address starts with no hook) */
    if (watch.s != s || !watch.path[0] || !s->plan || s->on_plan_change != repl_viz_after_change) return;
    viz_args a = watch.a;
    if (a.o.around) a.o.around = a.around;
    if (a.o.engine && a.engine[0]) a.o.engine = a.engine;
    a.o.overlay = NULL;
    /* The watched picture follows the plan: the overlay only while the last
     * run is the current plan's (a stale overlay would show old errors on
     * new colours). */
    if (a.overlay && repl_run_is_current(s)) a.o.overlay = s->last;
    mpx_error e;
    mpx_error_clear(&e);
    mpx_viz_stats vs;
    if (write_svg(s, watch.path, &a, &vs, &e)) {
        char msg[1200];
        mpx_error_format(&e, msg, sizeof msg);
        fflush(s->out);
        fprintf(stderr, "warning: svg --watch %s: %s\n", watch.path, msg);
    }
}

static void unwatch(mpx_session *s) {
    if (s->on_plan_change == repl_viz_after_change) s->on_plan_change = NULL;
    memset(&watch, 0, sizeof watch);
}

mpx_status repl_cmd_svg(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    viz_args a;
    viz_args_of(args, &a);
    mpx_status st;
    if (a.unwatch) {
        if (watch.s == s && watch.path[0]) fprintf(s->info, "no longer watching %s\n", watch.path);
        else fprintf(s->info, "no svg is watched\n");
        unwatch(s);
        return MPX_OK;
    }
    if (!a.file) return repl_usage_error(err, "svg", NULL);
    if ((st = need_plan(s, err)) || (st = pick_overlay(s, &a, false, err))) return st;
    mpx_viz_stats vs;
    if ((st = write_svg(s, a.file, &a, &vs, err))) return st;
    say_wrote(s, a.file, &vs, true);
    if (a.watch) {
        if (strlen(a.file) >= sizeof watch.path)
            return mpx_error_set(err, MPX_E_ARG, "--watch: the file name is too long");
        watch.s = s;
        snprintf(watch.path, sizeof watch.path, "%s", a.file);
        watch.a = a;
        watch.a.file = NULL;
        s->on_plan_change = repl_viz_after_change;
        fprintf(s->info, "watching: %s is re-written after every change of the plan (svg --unwatch stops)\n",
                a.file);
    }
    return MPX_OK;
}

/* ---- plot ------------------------------------------------------------------- */

mpx_status repl_cmd_plot(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    const char *file = args->word[0], *metric = args->n > 1 ? args->word[1] : NULL;
    bool local = args->opt[PLOT_LOCAL].given;
    mpx_status st = need_plan(s, err);
    if (st) return st;
    mpx_viz_plot_opts po;
    mpx_viz_plot_opts_default(&po);
    char names[256];
    if (metric && !mpx_metric_by_name(metric, &po.metric))
    {
        char hint[128];
        return mpx_error_set(err, MPX_E_ARG, "unknown metric \"%s\" (%s)%s", metric,
                             mpx_metric_names(" ", names, sizeof names), mpx_figure_metric_hint(metric, false, hint, sizeof hint));
    }
    po.local = local;
    mpx_viz_series series[9];
    char labels[9][48];
    int n = run_series(s, series, labels, 9);
    if (n == 0) {
        if (s->last || s->n_stash)
            return mpx_error_set(err, MPX_E_ARG, "the last run used another plan (rules or target changed since); "
                                                 "run again");
        return mpx_error_set(err, MPX_E_ARG, "nothing to plot yet (use: run, or compare <fmt> <fmt>)");
    }
    if (local && !s->last_local)
        return mpx_error_set(err, MPX_E_ARG, "--local: the last run has no local errors (use: run --local)");
    /* Casts and red nodes are the current plan's: they belong to the line of
     * the last run (the first), which ran it. */
    po.marks = series[0].cmp == s->last ? s->plan : NULL;
    char *svg = NULL;
    if ((st = mpx_viz_plot(series, n, &po, &svg, err))) return st;
    st = repl_write_file(s, file, svg, err);
    size_t len = strlen(svg);
    free(svg);
    if (st) return st;
    char k[32];
    fprintf(s->info, "wrote %s: %s per layer, %d line%s (", file, mpx_metric_info_of(po.metric)->name, n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) fprintf(s->info, "%s%s", i ? ", " : "", series[i].label);
    fprintf(s->info, "); %s\n", kib(len, k, sizeof k));
    return MPX_OK;
}

/* ---- html ------------------------------------------------------------------- */

mpx_status repl_cmd_html(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    viz_args a;
    viz_args_of(args, &a);
    mpx_status st;
    if ((st = need_plan(s, err)) || (st = pick_overlay(s, &a, true, err))) return st;
    a.o.rules = mpx_history_rules(s->hist);
    mpx_viz_series series[9];
    char labels[9][48];
    int n = run_series(s, series, labels, 9);
    mpx_viz_plot_opts po;
    mpx_viz_plot_opts_default(&po);
    po.marks = n && series[0].cmp == s->last ? s->plan : NULL;
    mpx_viz_page pg = {s->plan, mpx_history_rules(s->hist), s->model_path, series, n, &a.o, &po, NULL, 0};
    /* the data set's names, for the table's worst-sample column */
    int n_labels = repl_data_count(s->data);
    const char **sample_labels = n_labels ? calloc((size_t)n_labels, sizeof *sample_labels) : NULL;
    for (int k = 0; sample_labels && k < n_labels; k++) sample_labels[k] = repl_data_label(s->data, k);
    if (sample_labels) {
        pg.sample_labels = sample_labels;
        pg.n_sample_labels = n_labels;
    }
    char *html = NULL;
    mpx_viz_stats vs;
    double t0 = repl_now_ms();
    st = mpx_viz_html(&pg, &html, &vs, err);
    free(sample_labels);
    if (st) return st;
    double ms = repl_now_ms() - t0;
    st = repl_write_file(s, a.file, html, err);
    size_t len = strlen(html);
    free(html);
    if (st) return st;
    char k[32];
    fprintf(s->info, "wrote %s: %s; cast graph of %d nodes, %d casts; ", a.file, kib(len, k, sizeof k), vs.nodes,
            vs.casts);
    if (!n) fprintf(s->info, "plan table (no run yet)");
    for (int i = 0; i < n; i++) fprintf(s->info, "%s%s", i ? ", " : "error plot and per-layer table of ", labels[i]);
    fprintf(s->info, "; %.2f s\n", ms / 1e3);
    if (!n && s->last) fprintf(s->info, "  the last run used another plan: run again to add its errors\n");
    return MPX_OK;
}
