/* cmd_stats.c - `stats`: the range of every tensor of the fp32 reference over
 * the session's inputs (every sample of a data set), printed, saved, and
 * given to the plan's absmax rules; `stats --load` gives saved ranges to
 * them without running anything. The ranges are explore/stats.c's. */
#include "repl_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Runs the fp32 reference on every sample (or the one input set). */
static mpx_status gather(mpx_session *s, mpx_ranges **out, mpx_error *err) {
    const mpx_graph *g = s->graph;
    mpx_ranges *x = mpx_ranges_new(g);
    if (!x) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    int n = s->data ? repl_data_count(s->data) : 1;
    mpx_status st = MPX_OK;
    for (int k = 0; k < n && !st; k++) {
        if (s->cancel && *s->cancel) {
            st = mpx_error_set(err, MPX_E_CANCELLED, "stats: cancelled at sample %d of %d", k + 1, n);
            break;
        }
        if (s->progress && n > 1) fprintf(stderr, "\r  stats: sample %d of %d   ", k + 1, n);
        mpx_value *inputs = NULL;
        if ((st = s->data ? repl_data_inputs(s, k, &inputs, err) : repl_make_inputs(s, &inputs, err))) break;
        st = mpx_ranges_add_run(x, inputs, err);
        repl_free_inputs(s, inputs);
        if (st && s->data && st != MPX_E_CANCELLED) mpx_dataset_error_sample(err, k, n, repl_data_label(s->data, k));
    }
    if (s->progress && n > 1) fputs("\r                              \r", stderr);
    if (st) {
        mpx_ranges_free(x);
        return st;
    }
    *out = x;
    return MPX_OK;
}

/* The absmax rules of the plan now read a (taken). */
static mpx_status use_absmax(mpx_session *s, double *a, mpx_error *err) {
    double *old = s->absmax;
    s->absmax = a;
    mpx_status st = repl_replan(s, false, err);
    if (st) {
        s->absmax = old;
        free(a);
        return st;
    }
    free(old);
    return MPX_OK;
}

static mpx_status load_ranges(mpx_session *s, const char *path, mpx_error *err) {
    const mpx_graph *g = s->graph;
    char *text = NULL;
    double *ta = NULL;
    int used = 0, n_samples = 0;
    mpx_status st = repl_read_text(s, path, &text, err);
    if (!st) st = mpx_ranges_load(g, path, text, s->model_path, &ta, &used, &n_samples, err);
    free(text);
    if (st) return st;
    double *na = mpx_ranges_node_absmax(g, ta);
    free(ta);
    if (!na) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    if ((st = use_absmax(s, na, err))) return st;
    fprintf(s->info, "stats: ranges of %d tensors from %s (%d sample%s); absmax rules use them\n", used, path, n_samples,
            n_samples == 1 ? "" : "s");
    return MPX_OK;
}

static const mpx_ranges *sort_r; /* qsort has no context argument in C11 */
static int cmp_absmax(const void *a, const void *b) {
    double x = mpx_ranges_at(sort_r, *(const int *)a)->absmax, y = mpx_ranges_at(sort_r, *(const int *)b)->absmax;
    return x < y ? 1 : x > y ? -1 : *(const int *)a - *(const int *)b;
}

/* stats [--top <n> | --all] [--save <ranges.json>] | stats --load <ranges.json> */
mpx_status repl_cmd_stats(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    const mpx_opt_value *o = args->opt;
    if (o[STATS_LOAD].given) return load_ranges(s, o[STATS_LOAD].text, err);
    const char *save = o[STATS_SAVE].text;
    int top = o[STATS_TOP].given ? (int)o[STATS_TOP].i : o[STATS_ALL].given ? -1 : s->report_top;
    const mpx_graph *g = s->graph;
    mpx_ranges *t = NULL;
    if ((st = gather(s, &t, err))) return st;
    const int n_samples = mpx_ranges_samples(t);
    /* Save first: a failed write leaves the session as it was. */
    if (save) {
        char *text = mpx_ranges_json(t, s->model_path);
        st = text ? repl_write_file(s, save, text, err) : mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        free(text);
        if (st) {
            mpx_ranges_free(t);
            return st;
        }
    }
    double *ta = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *ta);
    int *order = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *order);
    int n = 0;
    if (!ta || !order) {
        free(ta), free(order);
        mpx_ranges_free(t);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    for (int i = 0; i < g->n_tensors; i++) {
        const mpx_range *x = mpx_ranges_at(t, i);
        ta[i] = x->seen ? x->absmax : NAN;
        if (x->seen) order[n++] = i;
    }
    sort_r = t;
    qsort(order, (size_t)n, sizeof *order, cmp_absmax);
    const mpx_format *lowf = s->plan->opts.target ? s->plan->opts.target : mpx_format_by_name("fp16");
    double maxf = lowf ? (double)lowf->max_finite : FLT_MAX;
    int over = 0;
    for (int i = 0; i < n; i++) over += mpx_ranges_at(t, order[i])->absmax > maxf;
    fprintf(s->out, "stats: fp32 reference over %d sample%s, %d tensors; %d exceed %s's largest finite (%.6g)\n", n_samples,
            n_samples == 1 ? "" : "s", n, over, mpx_format_name(lowf), maxf);
    fprintf(s->out, "%-30s %-14s %11s %11s %11s %11s %11s\n", "tensor", "op", "min", "max", "absmax", "p99 |x|", "p99.9 |x|");
    int rows = top < 0 || top > n ? n : top;
    for (int r = 0; r < rows; r++) {
        const mpx_range *x = mpx_ranges_at(t, order[r]);
        const mpx_tensor *tt = g->tensors[order[r]];
        const char *nm = tt->name;
        size_t len = strlen(nm);
        char name[64];
        if (len > 30) snprintf(name, sizeof name, "...%s", nm + len - 27);
        else snprintf(name, sizeof name, "%s", nm);
        fprintf(s->out, "%-30s %-14s %11.4g %11.4g %11.4g %11.4g %11.4g%s\n", name, tt->producer ? tt->producer->op_type : "-",
                x->min, x->max, x->absmax, mpx_ranges_quantile(t, order[r], 0.99), mpx_ranges_quantile(t, order[r], 0.999), x->absmax > maxf ? "  OVER" : "");
    }
    if (save) fprintf(s->info, "wrote %s\n", save);
    mpx_ranges_free(t);
    free(order);
    double *na = mpx_ranges_node_absmax(g, ta);
    free(ta);
    if (!na) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    return use_absmax(s, na, err);
}
