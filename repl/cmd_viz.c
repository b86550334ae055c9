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

static mpx_status parse_count(const char *text, const char *what, int *out, mpx_error *err) {
    double v;
    mpx_status st = mpx_explore_parse_number(text, what, &v, err);
    if (st) return st;
    if (v < 0 || v > 1000 || v != (double)(int)v)
        return mpx_error_set(err, MPX_E_ARG, "%s: \"%s\" is not a count from 0 to 1000", what, text);
    *out = (int)v;
    return MPX_OK;
}

/* Parse argv[1..]: at most one positional (the file) and the options. */
static mpx_status parse_viz_args(int argc, char **argv, viz_args *a, mpx_error *err) {
    memset(a, 0, sizeof *a);
    mpx_viz_opts_default(&a->o);
    for (int i = 1; i < argc; i++) {
        const char *w = argv[i];
        if (strcmp(w, "--around") == 0) {
            if (i + 2 >= argc) return mpx_error_set(err, MPX_E_ARG, "--around needs a node and a depth");
            snprintf(a->around, sizeof a->around, "%s", argv[i + 1]);
            mpx_status st = parse_count(argv[i + 2], "--around depth", &a->o.depth, err);
            if (st) return st;
            a->o.around = a->around;
            i += 2;
        } else if (strcmp(w, "--cluster") == 0) {
            if (i + 1 >= argc) return mpx_error_set(err, MPX_E_ARG, "--cluster needs a depth (name components)");
            mpx_status st = parse_count(argv[++i], "--cluster", &a->o.cluster, err);
            if (st) return st;
        } else if (strcmp(w, "--engine") == 0) {
            if (i + 1 >= argc) return mpx_error_set(err, MPX_E_ARG, "--engine needs dot, sfdp or neato");
            const char *e = argv[++i];
            if (strcmp(e, "dot") != 0 && strcmp(e, "sfdp") != 0 && strcmp(e, "neato") != 0)
                return mpx_error_set(err, MPX_E_ARG, "--engine: \"%s\" is not dot, sfdp or neato", e);
            snprintf(a->engine, sizeof a->engine, "%s", e);
            a->o.engine = a->engine;
        } else if (strcmp(w, "--shapes") == 0) {
            a->o.shapes = true;
        } else if (strcmp(w, "--collapse") == 0) {
            a->o.collapse = true;
        } else if (strcmp(w, "--upstream-to-cause") == 0) {
            a->o.to_cause = true;
        } else if (strcmp(w, "--fold") == 0) {
            a->o.fold = MPX_VIZ_FOLD_BOXES;
        } else if (strcmp(w, "--weights") == 0) {
            a->o.weights = true;
        } else if (strcmp(w, "--all") == 0) {
            a->o.all = true;
        } else if (strcmp(w, "--overlay") == 0) {
            a->overlay = true;
        } else if (strcmp(w, "--no-overlay") == 0) {
            a->no_overlay = true;
        } else if (strcmp(w, "--local") == 0) {
            a->o.overlay_local = true;
        } else if (strcmp(w, "--no-legend") == 0) {
            a->o.legend = false;
        } else if (strcmp(w, "--watch") == 0) { /* svg only: dispatch refuses it elsewhere */
            a->watch = true;
        } else if (strcmp(w, "--unwatch") == 0) {
            a->unwatch = true;
        } else {
            a->file = w; /* the one plain word; dispatch checked the options (the rows' specs) */
        }
    }
    return MPX_OK;
}

/* Whether the last run ran the current plan (see the file comment). */
static bool run_is_current(const mpx_session *s) {
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
    if (s->last && s->last->g == s->graph && run_is_current(s)) {
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
        /* the path is read off the last run's own errors */
        if (!a->o.around) return mpx_error_set(err, MPX_E_ARG, "--upstream-to-cause needs --around <node> <depth>");
        if (!run_is_current(s) || !s->last_local)
            return mpx_error_set(err, MPX_E_ARG, "--upstream-to-cause needs a run of the current plan with own "
                                                 "errors (use: run --local)");
        a->overlay = true;
    }
    bool want = a->overlay || (by_default && !a->no_overlay);
    if (!want) return MPX_OK;
    if (run_is_current(s)) {
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
    if (st->chains) fprintf(s->info, ", %d chains", st->chains);
    fprintf(s->info, "), %d edges, %d casts", st->edges, st->casts);
    if (st->clusters) fprintf(s->info, ", %d clusters", st->clusters);
    if (st->hidden) fprintf(s->info, "; %d Constant/folded nodes left out", st->hidden);
    fprintf(s->info, "; %s", kib(st->bytes, k, sizeof k));
    if (laid_out) fprintf(s->info, "; layout %.2f s, render %.2f s", st->ms_layout / 1e3, st->ms_render / 1e3);
    fputc('\n', s->info);
}

/* ---- dot -------------------------------------------------------------------- */

MPX_CMD(repl_cmd_dot) {
    viz_args a;
    mpx_status st = parse_viz_args(argc, argv, &a, err);
    if (!st) st = need_plan(s, err);
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
    if (a.overlay && run_is_current(s)) a.o.overlay = s->last;
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

MPX_CMD(repl_cmd_svg) {
    viz_args a;
    mpx_status st = parse_viz_args(argc, argv, &a, err);
    if (st) return st;
    if (a.unwatch) {
        if (argc != 2) return repl_usage_error(err, argv[0], "--unwatch goes alone");
        if (watch.s == s && watch.path[0]) fprintf(s->info, "no longer watching %s\n", watch.path);
        else fprintf(s->info, "no svg is watched\n");
        unwatch(s);
        return MPX_OK;
    }
    if (!a.file) return repl_usage_error(err, argv[0], NULL);
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

MPX_CMD(repl_cmd_plot) {
    const char *file = NULL, *metric = NULL;
    bool local = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--local") == 0) local = true;
        else if (!file) file = argv[i];
        else metric = argv[i]; /* at most two plain words (the row's spec) */
    }
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

MPX_CMD(repl_cmd_html) {
    viz_args a;
    mpx_status st = parse_viz_args(argc, argv, &a, err);
    if (st) return st;
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
