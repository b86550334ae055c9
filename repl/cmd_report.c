/* cmd_report.c - what the last run showed: report (table, JSON, CSV, per
 * sample) and tensor (one tensor's values in both runs, saved as .npy). */
#include "repl_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- report ----------------------------------------------------------------- */

/* Sort keys: the metrics (numerics/metrics.def, in its order), then local
 * (the node's own rel_l2, after run --local) and order (graph order). */
enum { K_LOCAL = REPORT_SORT_LOCAL, K_ORDER = REPORT_SORT_ORDER };
typedef int metric_id;

static const char *layer_name(const mpx_graph *g, const mpx_layer *L) { return g->tensors[L->tensor]->name; }

static const char *key_name(metric_id k) {
    return k == K_LOCAL ? "local" : k == K_ORDER ? "order" : mpx_metric_info_of((mpx_metric_id)k)->name;
}

/* The figure a report sorts by, oriented so that larger is worse. */
static double badness(const mpx_layer *L, metric_id m) {
    double v;
    if (m == K_LOCAL) v = L->has_local ? L->local.rel_l2 : -1.0;
    else if (m == K_ORDER) v = 0.0;
    else {
        v = mpx_metric_value(&L->m, (mpx_metric_id)m);
        if (mpx_metric_info_of((mpx_metric_id)m)->low_is_worse) v = -v;
    }
    return isnan(v) ? INFINITY : v;
}

static metric_id sort_metric;

static int layer_cmp(const void *x, const void *y) {
    const mpx_layer *a = *(const mpx_layer *const *)x, *b = *(const mpx_layer *const *)y;
    if (sort_metric != K_ORDER) {
        double da = badness(a, sort_metric), db = badness(b, sort_metric);
        if (da != db) return da < db ? 1 : -1;
    }
    if (a->node != b->node) return a->node - b->node;
    return a->tensor - b->tensor;
}

/* A bar for a rel_l2 on a log scale: 1e-8 or less empty, 1 or more full. */
static void bar(char *buf, double rel) {
    int n = 0;
    if (isnan(rel) || rel >= 1.0) n = 10;
    else if (rel > 1e-8) n = (int)lround((log10(rel) + 8.0) * 10.0 / 8.0);
    if (n < 0) n = 0;
    if (n > 10) n = 10;
    for (int i = 0; i < 10; i++) buf[i] = i < n ? '#' : '.';
    buf[10] = '\0';
}

cJSON *repl_metrics_json(const mpx_metrics *m) {
    cJSON *o = cJSON_CreateObject();
    /* JSON has no inf or NaN: such figures are written as strings. All
     * digits: merged shards must give one run's figures exactly. */
    for (int k = 0; k < MPX_METRIC_COUNT; k++)
        if (!mpx_metric_info_of((mpx_metric_id)k)->count)
            mpx_explore_json_exact(o, mpx_metric_info_of((mpx_metric_id)k)->name, mpx_metric_value(m, (mpx_metric_id)k), NULL);
    mpx_explore_json_exact(o, "absmax_ref", m->absmax_ref, NULL);
    for (int k = 0; k < MPX_METRIC_COUNT; k++)
        if (mpx_metric_info_of((mpx_metric_id)k)->count)
            cJSON_AddNumberToObject(o, mpx_metric_info_of((mpx_metric_id)k)->name, mpx_metric_value(m, (mpx_metric_id)k));
    cJSON_AddNumberToObject(o, "n", (double)m->n);
    return o;
}

static char *csv_field(const char *s, char *buf, size_t n) {
    if (!strpbrk(s, ",\"\n")) {
        snprintf(buf, n, "%s", s);
        return buf;
    }
    size_t o = 0;
    if (o + 1 < n) buf[o++] = '"';
    for (; *s && o + 3 < n; s++) {
        if (*s == '"') buf[o++] = '"';
        buf[o++] = *s;
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

/* report [--top n | --all] [--sort metric] [--json [file] | --csv [file]] */
/* report --samples: one row per sample, its model outputs' worst figures. */
static mpx_status report_samples(mpx_session *s, const mpx_compare *c, mpx_error *err) {
    const mpx_samples *S = c->samples;
    const mpx_graph *g = s->graph;
    mpx_layer *v = malloc((size_t)(c->n_layers ? c->n_layers : 1) * sizeof *v);
    if (!v) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    fprintf(s->out, "%s against fp32 over %d samples: each sample's worst model output\n", mpx_format_name(s->last_target),
            S->n_samples);
    fprintf(s->out, "%-6s %-44s %9s %9s %9s %6s %6s  %s\n", "sample", "file", "rel_l2", "max_abs", "cos", "ovf", "unf",
            "worst layer");
    mpx_status st = MPX_OK;
    for (int k = 0; k < S->n_samples && !st; k++) {
        memcpy(v, c->layers, (size_t)c->n_layers * sizeof *v);
        if ((st = mpx_samples_reduce(S, MPX_STAT_SAMPLE, k, v, NULL, err))) break;
        mpx_compare view = *c;
        view.layers = v;
        mpx_run_totals t = mpx_compare_totals(&view);
        const mpx_layer *w = mpx_compare_worst_layer(&view, MPX_WORST_ANY);
        const char *label = repl_data_label(s->data, S->id[k]);
        size_t len = strlen(label);
        char lb[64];
        if (len > 44) snprintf(lb, sizeof lb, "...%s", label + len - 41);
        else snprintf(lb, sizeof lb, "%s", label);
        const mpx_layer *o = t.worst_out;
        fprintf(s->out, "%-6d %-44s %9.3g %9.3g %9.6f %6lld %6lld  %s\n", S->id[k] + 1, lb, o ? o->m.rel_l2 : NAN,
                o ? o->m.max_abs : NAN, o ? o->m.cos : NAN, (long long)t.overflow, (long long)t.underflow,
                w ? g->nodes[w->node]->name : "-");
    }
    free(v);
    return st;
}

/* The rows a table shows: top of n (top < 0: all). */
static int rows_shown(int top, int n) { return top < 0 || top > n ? n : top; }

/* A table row's first cells, the same in both tables: order, node (a long
 * exported name keeps its informative tail), op, format and the figures. */
static void row_cells(FILE *out, int order, const char *node, int opw, const char *op, const mpx_format *fmt,
                      const mpx_metrics *m) {
    char b[16], name[64];
    bar(b, m->rel_l2);
    size_t len = strlen(node);
    if (len > 30) snprintf(name, sizeof name, "...%s", node + len - 27);
    else snprintf(name, sizeof name, "%s", node);
    fprintf(out, "%-5d %-30s %-*s %-5s %9.3g %-10s %9.3g %9.6f %8.1f %6lld %6lld", order, name, opw, op,
            mpx_format_name(fmt), m->rel_l2, b, m->max_abs, m->cos, m->sqnr_db, (long long)m->overflow,
            (long long)m->underflow);
}

/* The values inside bodies as layers the report's sort takes: node is the
 * owner's index, tensor the place in c->body (run order breaks ties), m the
 * worst over the iterations. NULL on out of memory. */
static mpx_layer *body_as_layers(const mpx_compare *c, metric_id sm, const mpx_layer ***rows) {
    int nb = c->n_body;
    mpx_layer *v = calloc((size_t)(nb ? nb : 1), sizeof *v);
    *rows = malloc((size_t)(nb ? nb : 1) * sizeof **rows);
    if (!v || !*rows) {
        free(v);
        free(*rows);
        *rows = NULL;
        return NULL;
    }
    for (int i = 0; i < nb; i++) {
        const mpx_body_layer *B = &c->body[i];
        v[i] = (mpx_layer){.tensor = i, .node = B->owner->index, .fmt = B->fmt, .m = B->worst,
                           .has_local = B->has_local, .local = B->local_worst};
        (*rows)[i] = &v[i];
    }
    sort_metric = sm;
    qsort(*rows, (size_t)nb, sizeof **rows, layer_cmp);
    return v;
}

static cJSON *body_json(const mpx_body_layer *B) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "tensor", B->tensor->name);
    cJSON_AddStringToObject(e, "node", B->node->name);
    cJSON_AddStringToObject(e, "op", B->node->op_type);
    cJSON_AddStringToObject(e, "owner", B->owner->name);
    cJSON_AddNumberToObject(e, "order", B->owner->index);
    cJSON_AddStringToObject(e, "format", mpx_format_name(B->fmt));
    cJSON_AddNumberToObject(e, "runs", (double)B->runs);
    cJSON_AddNumberToObject(e, "worst_run", (double)B->worst_run);
    cJSON_AddItemToObject(e, "metrics", repl_metrics_json(&B->worst));
    cJSON_AddItemToObject(e, "mean", repl_metrics_json(&B->mean));
    if (B->has_local) {
        cJSON_AddNumberToObject(e, "local_worst_run", (double)B->local_worst_run);
        cJSON_AddItemToObject(e, "local", repl_metrics_json(&B->local_worst));
        cJSON_AddItemToObject(e, "local_mean", repl_metrics_json(&B->local_mean));
    }
    return e;
}

/* The values inside Loop, Scan and SequenceMap bodies: a second table,
 * sorted as the first, each row a value's worst over the iterations. */
static mpx_status body_table(mpx_session *s, const mpx_compare *c, metric_id sm, int top, mpx_error *err) {
    const mpx_layer **rows;
    mpx_layer *v = body_as_layers(c, sm, &rows);
    if (!v) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    int n = rows_shown(top, c->n_body);
    int opw = 14;
    for (int i = 0; i < n; i++) {
        int l = (int)strlen(c->body[rows[i]->tensor].node->op_type);
        if (l > opw) opw = l;
    }
    fprintf(s->out, "inside bodies: %d values, each its worst over the iterations, the iteration of its worst rel_l2 "
            "(from 0) and its mean rel_l2%s\n", c->n_body, n < c->n_body ? "" : " (all)");
    fprintf(s->out, "%-5s %-30s %-*s %-5s %9s %-10s %9s %9s %8s %6s %6s  %11s %9s%s\n", "#", "node", opw, "op", "fmt",
            "rel_l2", "", "max_abs", "cos", "sqnr_db", "ovf", "unf", "iter/runs", "mean", s->last_local ? "  local" : "");
    for (int i = 0; i < n; i++) {
        const mpx_body_layer *B = &c->body[rows[i]->tensor];
        char it[32];
        snprintf(it, sizeof it, "%lld/%lld", (long long)B->worst_run, (long long)B->runs);
        row_cells(s->out, B->owner->index, B->node->name, opw, B->node->op_type, B->fmt, &B->worst);
        fprintf(s->out, "  %11s %9.3g", it, B->mean.rel_l2);
        if (B->has_local) fprintf(s->out, "  %.3g", B->local_worst.rel_l2);
        fputc('\n', s->out);
    }
    free(rows);
    free(v);
    return MPX_OK;
}

/* A report's view of the last run: its layers (a data set's reduced to
 * their worst or to one sample's), sorted, and what the outputs read. */
typedef struct report_view {
    const mpx_compare *c;
    const mpx_samples *S;
    int one;                  /* --sample k, 0-based; -1: none */
    metric_id sm;
    int top, n;               /* n rows shown of c->n_layers */
    const mpx_layer **rows;
    const mpx_layer *mean;    /* per layer, over the samples */
    const int *worst_of;      /* per layer, the sample of its worst rel_l2 */
} report_view;

/* report --json: the text (NULL and err set on failure). */
static char *report_json(mpx_session *s, const report_view *v, mpx_error *err) {
    const mpx_graph *g = s->graph;
    const mpx_compare *c = v->c;
    const mpx_samples *S = v->S;
    const int one = v->one, n = v->n;
    const mpx_layer *const *rows = v->rows;
    const mpx_layer *mean = v->mean;
    const int *worst_of = v->worst_of;
    const metric_id sm = v->sm;
    const int top = v->top;
    mpx_status st = MPX_OK;
    char *text = NULL;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "target", mpx_format_name(s->last_target));
    cJSON_AddBoolToObject(root, "local", s->last_local);
    cJSON_AddStringToObject(root, "sort", key_name(sm));
    mpx_run_totals t = mpx_compare_totals(c);
    cJSON_AddNumberToObject(root, "overflow", (double)t.overflow);
    cJSON_AddNumberToObject(root, "underflow", (double)t.underflow);
    if (S) {
        cJSON_AddStringToObject(root, "figures", one >= 0 ? "sample" : "worst");
        if (one >= 0) cJSON_AddNumberToObject(root, "sample", one + 1);
        cJSON *sa = cJSON_AddArrayToObject(root, "samples");
        cJSON *si = cJSON_AddArrayToObject(root, "sample_ids");
        for (int k = 0; k < S->n_samples; k++) {
            cJSON_AddItemToArray(sa, cJSON_CreateString(repl_data_label(s->data, S->id[k])));
            cJSON_AddItemToArray(si, cJSON_CreateNumber(S->id[k] + 1));
        }
        /* What a shard's merge checks: the same model, plan and data set. */
        cJSON_AddStringToObject(root, "kind", "mpx-samples");
        cJSON_AddStringToObject(root, "model", s->model_path);
        char sid[16];
        mpx_error ierr;
        cJSON_AddStringToObject(root, "model_id", repl_model_id(s));
        /* merged shards' samples (no command makes them again): the session
         * the shards ran from, so that the merged report is theirs byte for byte */
        if (!repl_data_replay(s->data) && s->merged_session_id[0])
            cJSON_AddStringToObject(root, "session_id", s->merged_session_id);
        else if (!repl_session_id(s, sid, sizeof sid, &ierr))
            cJSON_AddStringToObject(root, "session_id", sid);
        cJSON_AddNumberToObject(root, "n_samples_total", repl_data_count(s->data));
        cJSON *ru = cJSON_AddArrayToObject(root, "rules");
        const mpx_rules *rr = mpx_history_rules(s->hist);
        for (int k = 0; k < mpx_rules_count(rr); k++)
            cJSON_AddItemToArray(ru, cJSON_CreateString(mpx_rules_text(rr, k)));
    }
    cJSON *arr = cJSON_AddArrayToObject(root, "layers");
    for (int i = 0; i < n; i++) {
        const mpx_layer *L = rows[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "tensor", layer_name(g, L));
        cJSON_AddStringToObject(e, "node", g->nodes[L->node]->name);
        cJSON_AddStringToObject(e, "op", g->nodes[L->node]->op_type);
        cJSON_AddNumberToObject(e, "order", L->node);
        cJSON_AddStringToObject(e, "format", mpx_format_name(L->fmt));
        cJSON_AddBoolToObject(e, "output", repl_is_output(g, L->tensor));
        cJSON_AddItemToObject(e, "metrics", repl_metrics_json(&L->m));
        if (L->has_local) cJSON_AddItemToObject(e, "local", repl_metrics_json(&L->local));
        if (S) {
            int li = (int)(L - c->layers);
            if (one < 0) cJSON_AddNumberToObject(e, "worst_sample", S->id[worst_of[li]] + 1);
            cJSON_AddItemToObject(e, "mean", repl_metrics_json(&mean[li].m));
            /* Every sample's figures of this layer, in sample order. */
            cJSON *ps = cJSON_AddArrayToObject(e, "per_sample");
            for (int k = 0; k < S->n_samples; k++)
                cJSON_AddItemToArray(ps, repl_metrics_json(&S->m[(size_t)k * (size_t)S->n_layers + (size_t)li]));
        }
        cJSON_AddItemToArray(arr, e);
    }
    if (c->n_body) {
        const mpx_layer **brows;
        mpx_layer *bv = body_as_layers(c, sm, &brows);
        cJSON *ba = cJSON_AddArrayToObject(root, "body");
        int nbr = rows_shown(top, c->n_body);
        for (int i = 0; bv && i < nbr; i++) cJSON_AddItemToArray(ba, body_json(&c->body[brows[i]->tensor]));
        free(brows);
        free(bv);
        if (!bv) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    text = st ? NULL : cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

/* report --csv: the text (NULL when out of memory). */
static char *report_csv(const mpx_session *s, const report_view *v) {
    const mpx_graph *g = s->graph;
    const mpx_compare *c = v->c;
    const mpx_samples *S = v->S;
    const int one = v->one, n = v->n;
    char *text;
    size_t cap = 256 + (size_t)n * 512, o = 0;
    text = malloc(cap);
    if (text) {
        char names[256];
        o += (size_t)snprintf(text + o, cap - o, "order,node,op,tensor,format,%s,absmax_ref,local_rel_l2%s\n",
                              mpx_metric_names(",", names, sizeof names), S ? ",worst_sample,mean_rel_l2" : "");
        for (int i = 0; i < n && o < cap; i++) {
            const mpx_layer *L = v->rows[i];
            char f1[300], f2[300];
            o += (size_t)snprintf(text + o, cap - o, "%d,%s,%s,%s,%s,", L->node,
                                  csv_field(g->nodes[L->node]->name, f1, sizeof f1), g->nodes[L->node]->op_type,
                                  csv_field(layer_name(g, L), f2, sizeof f2), mpx_format_name(L->fmt));
            /* The metrics' columns in metrics.def's order; cos with 9 digits,
             * since near 1 what it says is in its last digits. */
            for (int k = 0; k < MPX_METRIC_COUNT && o < cap; k++) {
                const mpx_metric_info *mi = mpx_metric_info_of((mpx_metric_id)k);
                double val = mpx_metric_value(&L->m, (mpx_metric_id)k);
                if (mi->count)
                    o += (size_t)snprintf(text + o, cap - o, "%lld,", (long long)val);
                else
                    o += (size_t)snprintf(text + o, cap - o, k == MPX_METRIC_cos ? "%.9g," : "%.6g,", val);
            }
            if (o < cap) o += (size_t)snprintf(text + o, cap - o, "%.6g,", L->m.absmax_ref);
            if (o < cap && L->has_local) o += (size_t)snprintf(text + o, cap - o, "%.6g", L->local.rel_l2);
            if (o < cap && S) {
                int li = (int)(L - c->layers);
                o += (size_t)snprintf(text + o, cap - o, ",%d,%.6g", one < 0 ? S->id[v->worst_of[li]] + 1 : one + 1,
                                      v->mean[li].m.rel_l2);
            }
            if (o < cap) o += (size_t)snprintf(text + o, cap - o, "\n");
        }
    }
    return text;
}

/* report's table on the terminal. */
static void report_table(mpx_session *s, const report_view *v) {
    const mpx_graph *g = s->graph;
    const mpx_compare *c = v->c;
    const mpx_samples *S = v->S;
    const int one = v->one, n = v->n;
    fprintf(s->out, "%s against fp32, %d layers, sorted by %s%s\n", mpx_format_name(s->last_target), c->n_layers,
            key_name(v->sm), n < c->n_layers ? "" : " (all)");
    if (S && one >= 0) fprintf(s->out, "sample %d of %d (%s)\n", one + 1, repl_data_count(s->data),
                              repl_data_label(s->data, one));
    else if (S)
        fprintf(s->out, "over %d samples: each layer's worst figures, the sample of its worst rel_l2 and the mean rel_l2\n",
                S->n_samples);
    /* The op column as wide as the longest op shown (BatchNormalization,
     * DequantizeLinear), never cut. */
    int opw = 14;
    for (int i = 0; i < n; i++) {
        int l = (int)strlen(g->nodes[v->rows[i]->node]->op_type);
        if (l > opw) opw = l;
    }
    fprintf(s->out, "%-5s %-30s %-*s %-5s %9s %-10s %9s %9s %8s %6s %6s%s%s\n", "#", "node", opw, "op", "fmt", "rel_l2", "",
            "max_abs", "cos", "sqnr_db", "ovf", "unf", S && one < 0 ? "  sample      mean" : "",
            s->last_local ? "  local" : "");
    for (int i = 0; i < n; i++) {
        const mpx_layer *L = v->rows[i];
        row_cells(s->out, L->node, g->nodes[L->node]->name, opw, g->nodes[L->node]->op_type, L->fmt, &L->m);
        if (S && one < 0) fprintf(s->out, "  %6d %9.3g", S->id[v->worst_of[L - c->layers]] + 1, v->mean[L - c->layers].m.rel_l2);
        if (L->has_local) fprintf(s->out, "  %.3g", L->local.rel_l2);
        fputc('\n', s->out);
    }
}

mpx_status repl_cmd_report(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    const mpx_opt_value *opt = args->opt;
    bool top_given = opt[REPORT_TOP].given || opt[REPORT_ALL].given;
    int top = opt[REPORT_TOP].given ? (int)opt[REPORT_TOP].i : opt[REPORT_ALL].given ? -1 : s->report_top;
    metric_id sm = (metric_id)opt[REPORT_SORT].i;
    bool json = opt[REPORT_JSON].given, csv = opt[REPORT_CSV].given, per_sample = opt[REPORT_SAMPLES].given;
    int one = opt[REPORT_SAMPLE].given ? (int)opt[REPORT_SAMPLE].i - 1 : -1; /* --sample k (0-based) */
    const char *path = json ? opt[REPORT_JSON].text : opt[REPORT_CSV].text;
    const mpx_compare *c = s->last;
    if (!c) return mpx_error_set(err, MPX_E_ARG, "no run yet (use: run)");
    /* The run keeps the plan it ran; say so when the plan moved on since. */
    if (s->run_plan && s->run_plan != s->plan)
        fprintf(s->info, "report: the last run ran the plan before the latest change (run again for the current one)\n");
    if (sm == K_LOCAL && !s->last_local)
        return mpx_error_set(err, MPX_E_ARG, "the last run has no local figures (use: run --local)");
    const mpx_samples *S = c->samples;
    if ((one >= 0 || per_sample) && !S)
        return mpx_error_set(err, MPX_E_ARG, "the last run had one input, not a data set (see: help data)");
    if (per_sample) return report_samples(s, c, err);
    int row = S && one >= 0 ? mpx_samples_row(S, one) : -1;
    if (S && one >= 0 && row < 0)
        return mpx_error_set(err, MPX_E_ARG, "--sample %d: the last run did not run it (it ran %d sample%s%s)", one + 1,
                             S->n_samples, S->n_samples == 1 ? "" : "s",
                             S->n_samples < repl_data_count(s->data) ? ", a shard of the data set" : "");
    /* Per layer: the sample of its worst rel_l2 and the mean over samples;
     * with --sample k, the layers are that sample's own figures. */
    mpx_layer *view = NULL, *mean = NULL;
    int *worst_of = NULL;
    mpx_compare vc;
    if (S) {
        size_t nl = (size_t)(c->n_layers ? c->n_layers : 1);
        view = malloc(nl * sizeof *view);
        mean = malloc(nl * sizeof *mean);
        worst_of = malloc(nl * sizeof *worst_of);
        if (!view || !mean || !worst_of) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        if (!st) {
            memcpy(view, c->layers, (size_t)c->n_layers * sizeof *view);
            memcpy(mean, c->layers, (size_t)c->n_layers * sizeof *mean);
            st = mpx_samples_reduce(S, one >= 0 ? MPX_STAT_SAMPLE : MPX_STAT_WORST, row, view, worst_of, err);
        }
        if (!st) st = mpx_samples_reduce(S, MPX_STAT_MEAN, 0, mean, NULL, err);
        if (st) {
            free(view), free(mean), free(worst_of);
            return st;
        }
        vc = *c;
        vc.layers = view;
        c = &vc;
    }
    const mpx_layer **rows = malloc((size_t)(c->n_layers ? c->n_layers : 1) * sizeof *rows);
    if (!rows) {
        free(view), free(mean), free(worst_of);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    for (int i = 0; i < c->n_layers; i++) rows[i] = &c->layers[i];
    sort_metric = sm;
    qsort(rows, (size_t)c->n_layers, sizeof *rows, layer_cmp);
    /* The terminal gets the worst rows; machines get every row unless --top. */
    if ((json || csv) && !top_given) top = -1;
    report_view v = {c, S, one, sm, top, rows_shown(top, c->n_layers), rows, mean, worst_of};
    if (json || csv) {
        char *text = json ? report_json(s, &v, err) : report_csv(s, &v);
        free(rows);
        free(view), free(mean), free(worst_of);
        if (!text) return json && err->status ? err->status : mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        return repl_emit(s, text, path, err);
    }
    report_table(s, &v);
    free(rows);
    free(view), free(mean), free(worst_of);
    return c->n_body ? body_table(s, c, sm, top, err) : MPX_OK;
}

/* ---- tensor ------------------------------------------------------------------ */

static void value_stats(const mpx_value *v, double *mn, double *mx, double *mean, int64_t *nonfinite) {
    double lo = INFINITY, hi = -INFINITY, sum = 0.0;
    int64_t bad = 0, cnt = 0;
    for (int64_t i = 0; i < v->n; i++) {
        double x = v->d ? v->d[i] : v->f ? (double)v->f[i] : (double)v->i[i];
        if (!isfinite(x)) {
            bad++;
            continue;
        }
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        sum += x;
        cnt++;
    }
    *mn = lo, *mx = hi, *mean = cnt ? sum / (double)cnt : NAN, *nonfinite = bad;
}

/* tensor <name> [--save <file.npy>] [--save-ref <file.npy>] */
mpx_status repl_cmd_tensor(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    const char *save = args->opt[TENSOR_SAVE].text, *save_ref = args->opt[TENSOR_SAVE_REF].text;
    const char *name = args->word[0];
    const mpx_graph *g = s->graph;
    const mpx_tensor *t = mpx_figure_find_tensor(g, name);
    if (!t) {
        char hint[300];
        return mpx_error_set(err, MPX_E_ARG, "no tensor or node named \"%s\"%s", name,
                             repl_name_tail(g, name, true, true, hint, sizeof hint));
    }
    const mpx_compare *c = s->last;
    mpx_compare *fresh = NULL;
    if (!c || c->ref[t->index].n < 0) {
        /* Not kept by the last run (or no run yet): run the current plan again
         * keeping this tensor; the session's last run stays as it was. */
        bool *keep = calloc((size_t)g->n_tensors, sizeof *keep);
        if (!keep) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        keep[t->index] = true;
        st = repl_run_plan(s, s->plan, false, keep, NULL, REPL_UNCACHED, &fresh, err);
        free(keep);
        if (st) return st;
        c = fresh;
        if (c->ref[t->index].n < 0) {
            mpx_compare_free(fresh);
            return mpx_error_set(err, MPX_E_ARG, "tensor \"%s\" has no value in a run (not computed)", t->name);
        }
    }
    const mpx_value *r = &c->ref[t->index], *v = &c->cand[t->index];
    char sh[256];
    if (r->is_seq) {
        /* a container: its tensors are compared where they come out of it */
        fprintf(s->out, "tensor %s: %s of %lld %s tensors (SequenceAt / OptionalGetElement give them as tensors)\n",
                t->name, r->is_opt ? "an optional" : "a sequence", (long long)r->n, mpx_dtype_name(r->dtype));
        mpx_compare_free(fresh);
        return MPX_OK;
    }
    const mpx_format *f = s->plan ? s->plan->tensors[t->index].format : NULL;
    fprintf(s->out, "tensor %s %s %s, held in %s%s\n", t->name, mpx_dtype_name(t->dtype),
            mpx_dims_str(r->rank, r->dims, sh, sizeof sh), mpx_format_name(f), fresh ? " (from a fresh run of the current plan)" : "");
    for (int k = 0; k < 2; k++) {
        const mpx_value *x = k ? v : r;
        double mn, mx, mean;
        int64_t bad;
        value_stats(x, &mn, &mx, &mean, &bad);
        fprintf(s->out, "  %-9s min %.6g, max %.6g, mean %.6g", k ? "candidate" : "reference", mn, mx, mean);
        if (bad) fprintf(s->out, ", %lld inf/NaN", (long long)bad);
        fputc('\n', s->out);
    }
    mpx_metrics m;
    if (((r->f && v->f) || (r->d && v->d)) && mpx_metrics_compute(r, v, f, &m, err) == MPX_OK)
        fprintf(s->out, "  rel_l2 %.3g, max_abs %.3g, cos %.6f, overflow %lld, underflow %lld, subnormal %lld\n",
                m.rel_l2, m.max_abs, m.cos, (long long)m.overflow, (long long)m.underflow, (long long)m.subnormal);
    if (!st && save && !(st = repl_make_parent(s, save, err)) && (st = mpx_npy_write(save, s->guard, v, err)) == MPX_OK) fprintf(s->info, "wrote %s\n", save);
    if (!st && save_ref && !(st = repl_make_parent(s, save_ref, err)) && (st = mpx_npy_write(save_ref, s->guard, r, err)) == MPX_OK) fprintf(s->info, "wrote %s\n", save_ref);
    mpx_compare_free(fresh);
    return st;
}

