/* data_merge.c - shards of a data-set run (run --samples k/n, then report
 * --json) joined into the comparison an unsharded run gives: every layer's
 * worst, mean and p95 are taken over all samples again from the per-sample
 * figures the shards carry. The shards are checked to be of one model,
 * target, rule list and data set, with every sample exactly once.
 *
 * GNU parallel (or a Slurm array, or Kubernetes Jobs) runs the shards as
 * separate mpx processes; mpx has no scheduler of its own. */
#include "mpx_data.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct shard {
    const char *path;
    cJSON *root;
    const cJSON *layers;
} shard;

struct mpx_shards {
    int n;
    shard *sh;
    char **paths;        /* copies: messages name them */
    const char *model, *target;
    int total;
};

static const char *str_of(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A figure as report --json writes it: a number, or "inf", "-inf", "nan". */
static double num_of(const cJSON *v) {
    if (cJSON_IsNumber(v)) return v->valuedouble;
    if (cJSON_IsString(v)) return strcmp(v->valuestring, "nan") == 0 ? NAN : v->valuestring[0] == '-' ? -INFINITY : INFINITY;
    return NAN;
}

static void metrics_of(const cJSON *o, mpx_metrics *m) {
    memset(m, 0, sizeof *m);
    for (int k = 0; k < MPX_METRIC_COUNT; k++) {
        const mpx_metric_info *mi = mpx_metric_info_of((mpx_metric_id)k);
        mpx_metric_set(m, (mpx_metric_id)k, num_of(cJSON_GetObjectItemCaseSensitive(o, mi->name)));
    }
    m->absmax_ref = num_of(cJSON_GetObjectItemCaseSensitive(o, "absmax_ref"));
    m->n = (int64_t)num_of(cJSON_GetObjectItemCaseSensitive(o, "n"));
}

/* The fields every shard must share, compared with the first's. */
static mpx_status same_as_first(const shard *a, const shard *b, mpx_error *err) {
    /* the model by its content (workers may hold it in other folders); the
     * session (inputs, data set and its order, keep-io, rules) by its id */
    static const char *const keys[] = {"model_id", "target"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *x = str_of(a->root, keys[i]), *y = str_of(b->root, keys[i]);
        if (!x || !y || strcmp(x, y) != 0)
            return mpx_error_set(err, MPX_E_INVALID, "merge: %s has %s %s, %s has %s (shards of one run share it)", b->path,
                                 keys[i], y ? y : "none", a->path, x ? x : "none");
    }
    char *ra = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(a->root, "rules"));
    char *rb = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(b->root, "rules"));
    bool same = ra && rb && strcmp(ra, rb) == 0;
    free(ra);
    free(rb);
    if (!same) return mpx_error_set(err, MPX_E_INVALID, "merge: %s ran other rules than %s", b->path, a->path);
    const char *sa = str_of(a->root, "session_id"), *sb = str_of(b->root, "session_id");
    if (!sa || !sb || strcmp(sa, sb) != 0)
        return mpx_error_set(err, MPX_E_INVALID, "merge: %s ran from another session than %s (its inputs, data set or "
                             "its order, or keep-io differ: session %s, not %s)", b->path, a->path, sb ? sb : "none",
                             sa ? sa : "none");
    if (num_of(cJSON_GetObjectItemCaseSensitive(a->root, "n_samples_total")) !=
        num_of(cJSON_GetObjectItemCaseSensitive(b->root, "n_samples_total")))
        return mpx_error_set(err, MPX_E_INVALID, "merge: %s is of a data set of another size than %s", b->path, a->path);
    int n = cJSON_GetArraySize(a->layers);
    if (cJSON_GetArraySize(b->layers) != n)
        return mpx_error_set(err, MPX_E_INVALID, "merge: %s compared %d layers, %s %d", b->path,
                             cJSON_GetArraySize(b->layers), a->path, n);
    return MPX_OK;
}

void mpx_shards_free(mpx_shards *S) {
    if (!S) return;
    for (int i = 0; i < S->n; i++) {
        cJSON_Delete(S->sh[i].root);
        free(S->paths[i]);
    }
    free(S->sh);
    free(S->paths);
    free(S);
}

int mpx_shards_count(const mpx_shards *S) { return S ? S->n : 0; }
const char *mpx_shards_model(const mpx_shards *S) { return S->model; }
const char *mpx_shards_target(const mpx_shards *S) { return S->target; }
const char *mpx_shards_session_id(const mpx_shards *S) { return str_of(S->sh[0].root, "session_id"); }
int mpx_shards_total(const mpx_shards *S) { return S->total; }

mpx_status mpx_shards_parse(int n, const char *const *paths, const char *const *texts, mpx_shards **out,
                            mpx_error *err) {
    *out = NULL;
    if (n < 1) return mpx_error_set(err, MPX_E_ARG, "merge: no shards");
    mpx_shards *S = calloc(1, sizeof *S);
    if (S) {
        S->sh = calloc((size_t)n, sizeof *S->sh);
        S->paths = calloc((size_t)n, sizeof *S->paths);
    }
    if (!S || !S->sh || !S->paths) {
        if (S) free(S->sh), free(S->paths), free(S);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    mpx_status st = MPX_OK;
    for (int i = 0; i < n && !st; i++) {
        shard *sh = &S->sh[i];
        if (!(S->paths[i] = strdup(paths[i]))) {
            st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
            break;
        }
        S->n = i + 1;
        sh->path = S->paths[i];
        if (!(sh->root = cJSON_Parse(texts[i]))) {
            st = mpx_error_set(err, MPX_E_PARSE, "merge: %s is not JSON", paths[i]);
            break;
        }
        const char *kind = str_of(sh->root, "kind");
        sh->layers = cJSON_GetObjectItemCaseSensitive(sh->root, "layers");
        if (!kind || strcmp(kind, "mpx-samples") != 0 || !cJSON_IsArray(sh->layers) ||
            !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(sh->root, "sample_ids"))) {
            st = mpx_error_set(err, MPX_E_INVALID, "merge: %s is not the report --json of a run over a data set",
                               paths[i]);
            break;
        }
        /* local figures (run --local) are each shard's worst alone: no
         * merge gives the unsharded run's, so none is made */
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sh->root, "local"))) {
            st = mpx_error_set(err, MPX_E_INVALID, "merge: %s ran with local figures (run --local), which shards cannot "
                               "join into the whole data set's; run the shards without --local", paths[i]);
            break;
        }
        if (!str_of(sh->root, "model_id") || !str_of(sh->root, "session_id")) {
            st = mpx_error_set(err, MPX_E_INVALID, "merge: %s names no model_id and session_id (written by an older "
                               "mpx): write the shards again with this one", paths[i]);
            break;
        }
        const char *fig = str_of(sh->root, "figures");
        if (!fig || strcmp(fig, "worst") != 0) {
            st = mpx_error_set(err, MPX_E_INVALID, "merge: %s holds one sample's figures (report --sample); write "
                               "shards with report --json", paths[i]);
            break;
        }
        if (i) st = same_as_first(&S->sh[0], sh, err);
    }
    if (!st) {
        S->model = str_of(S->sh[0].root, "model");
        S->target = str_of(S->sh[0].root, "target");
        double total = num_of(cJSON_GetObjectItemCaseSensitive(S->sh[0].root, "n_samples_total"));
        if (!S->model || !S->target || !(total >= 1) || total > 1e7)
            st = mpx_error_set(err, MPX_E_INVALID, "merge: %s lacks its model, target or data set size", paths[0]);
        else S->total = (int)total;
    }
    if (st) {
        mpx_shards_free(S);
        return st;
    }
    *out = S;
    return MPX_OK;
}

/* Sample figures of shard sh for its row r into the layers of c (report
 * --json sorts its layers by error, so each shard has its own order: matched
 * by tensor name). */
static mpx_status shard_row(const shard *sh, int r, mpx_compare *c, mpx_error *err) {
    int seen = 0;
    for (const cJSON *L = sh->layers->child; L; L = L->next) {
        const char *t = str_of(L, "tensor");
        int i = -1;
        for (int k = 0; t && k < c->n_layers && i < 0; k++)
            if (strcmp(t, c->g->tensors[c->layers[k].tensor]->name) == 0) i = k;
        if (i < 0)
            return mpx_error_set(err, MPX_E_INVALID, "merge: %s: layer %s is not among the first shard's layers", sh->path,
                                 t ? t : "?");
        const cJSON *ps = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(L, "per_sample"), r);
        if (!cJSON_IsObject(ps))
            return mpx_error_set(err, MPX_E_INVALID, "merge: %s: layer %s has no figures for its sample row %d", sh->path, t, r);
        metrics_of(ps, &c->layers[i].m);
        seen++;
    }
    if (seen != c->n_layers)
        return mpx_error_set(err, MPX_E_INVALID, "merge: %s has %d layers, the first shard %d", sh->path, seen, c->n_layers);
    return MPX_OK;
}

mpx_status mpx_shards_compare(const mpx_shards *S, const mpx_graph *g, mpx_compare **out, mpx_dataset **labels_out,
                              mpx_error *err) {
    *out = NULL;
    *labels_out = NULL;
    const shard *sh = S->sh;
    int n = S->n, total = S->total;
    mpx_compare *c = calloc(1, sizeof *c);
    const char **labels = calloc((size_t)total, sizeof *labels);
    int nl = cJSON_GetArraySize(sh[0].layers);
    if (!c || !labels) {
        free(c);
        free(labels);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    c->g = g;
    c->n_layers = nl;
    c->layers = calloc((size_t)(nl ? nl : 1), sizeof *c->layers);
    c->ref = calloc((size_t)(g->n_tensors ? g->n_tensors : 1), sizeof *c->ref);
    c->cand = calloc((size_t)(g->n_tensors ? g->n_tensors : 1), sizeof *c->cand);
    c->n_values = g->n_tensors;
    c->samples = mpx_samples_new();
    mpx_status st = c->layers && c->ref && c->cand && c->samples ? MPX_OK : mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int i = 0; !st && i < g->n_tensors; i++) c->ref[i].n = c->cand[i].n = -1; /* nothing kept */
    int i = 0;
    for (const cJSON *L = sh[0].layers->child; !st && L; L = L->next, i++) {
        const char *t = str_of(L, "tensor"), *f = str_of(L, "format");
        int ti = -1;
        for (int k = 0; t && k < g->n_tensors && ti < 0; k++)
            if (strcmp(g->tensors[k]->name, t) == 0) ti = k;
        if (ti < 0 || !g->tensors[ti]->producer) {
            st = mpx_error_set(err, MPX_E_INVALID, "merge: %s: layer %s is not a computed tensor of %s", sh[0].path,
                               t ? t : "?", S->model);
            break;
        }
        c->layers[i].tensor = ti;
        c->layers[i].node = g->tensors[ti]->producer->index;
        c->layers[i].fmt = f && strcmp(f, "fp32") != 0 ? mpx_format_by_name(f) : NULL;
    }
    /* Rows in sample order: each id once, from whichever shard holds it. */
    for (int id = 0; !st && id < total; id++) {
        int from = -1, row = -1;
        for (int k = 0; k < n; k++) {
            int r = 0;
            for (const cJSON *v = cJSON_GetObjectItemCaseSensitive(sh[k].root, "sample_ids")->child; v; v = v->next, r++)
                if (cJSON_IsNumber(v) && (int)v->valuedouble == id + 1) {
                    if (from >= 0) {
                        st = mpx_error_set(err, MPX_E_INVALID, "merge: sample %d is in %s and in %s", id + 1,
                                           sh[from].path, sh[k].path);
                        break;
                    }
                    from = k, row = r;
                }
        }
        if (st) break;
        if (from < 0) {
            st = mpx_error_set(err, MPX_E_INVALID, "merge: no shard holds sample %d of %d (a shard is missing)", id + 1, total);
            break;
        }
        const cJSON *lab = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(sh[from].root, "samples"), row);
        labels[id] = cJSON_IsString(lab) ? lab->valuestring : "?";
        if (!(st = shard_row(&sh[from], row, c, err))) st = mpx_samples_add(c->samples, c, id, err);
    }
    int *worst = st ? NULL : malloc((size_t)(nl ? nl : 1) * sizeof *worst);
    if (!st && !worst) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    if (!st) st = mpx_samples_reduce(c->samples, MPX_STAT_WORST, 0, c->layers, worst, err);
    if (!st) {
        /* The kept sample: the worst of the first model output. */
        for (int k = 0; k < nl; k++)
            if (g->tensors[c->layers[k].tensor]->flags & MPX_T_OUTPUT) {
                c->samples->kept = worst[k];
                break;
            }
    }
    free(worst);
    mpx_dataset *d = NULL;
    if (!st) {
        char source[1100];
        snprintf(source, sizeof source, "%d merged shard%s of %s", n, n == 1 ? "" : "s", sh[0].path);
        st = mpx_dataset_of_labels(source, total, labels, &d, err);
    }
    free(labels);
    if (st) {
        mpx_compare_free(c);
        return st;
    }
    *out = c;
    *labels_out = d;
    return MPX_OK;
}
