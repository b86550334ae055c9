/* sweep.c - one command tried with each of several values, every point
 * planned and run as a trial through the host, the figures side by side;
 * the shards of a sweep (--shard k/n) joined back into one (mpx_explore.h).
 *
 * The points run in order through the host's run cache, so the fp32
 * reference is computed once and each point recomputes only what its plan
 * changes. Spreading the shards over cores or machines is the scheduler's
 * job (GNU parallel, Slurm, Kubernetes Jobs). */
#include "mpx_explore.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* cmd with every $name (not followed by a name character) replaced by v. */
static mpx_status substitute(const char *cmd, const char *name, const char *v, char *out, size_t n, bool *used,
                             mpx_error *err) {
    size_t o = 0, nl = strlen(name);
    *used = false;
    for (const char *c = cmd; *c;) {
        if (c[0] == '$' && strncmp(c + 1, name, nl) == 0 &&
            !(c[1 + nl] == '_' || (c[1 + nl] >= 'a' && c[1 + nl] <= 'z') || (c[1 + nl] >= 'A' && c[1 + nl] <= 'Z') ||
              (c[1 + nl] >= '0' && c[1 + nl] <= '9'))) {
            size_t vl = strlen(v);
            if (o + vl >= n) break;
            memcpy(out + o, v, vl);
            o += vl;
            c += 1 + nl;
            *used = true;
            continue;
        }
        if (c[0] == '$')
            return mpx_error_set(err, MPX_E_ARG, "sweep: \"%.*s\" is not the swept name (sweep %s in ...)",
                                 (int)strcspn(c, " \t,"), c, name);
        if (o + 1 >= n) break;
        out[o++] = *c++;
    }
    if (o + 1 >= n) return mpx_error_set(err, MPX_E_ARG, "sweep: the command is too long");
    out[o] = '\0';
    return MPX_OK;
}

mpx_status mpx_sweep_point_state(const mpx_graph *g, const mpx_rules *rules, const mpx_plan_opts *base, const char *line,
                                 mpx_rules **r, mpx_plan_opts *o, mpx_error *err) {
    *r = mpx_rules_copy(rules);
    *o = *base;
    if (!*r) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    char word[32];
    size_t k = strcspn(line, " \t");
    snprintf(word, sizeof word, "%.*s", (int)(k < sizeof word ? k : sizeof word - 1), line);
    const char *rest = line + k + strspn(line + k, " \t");
    mpx_status st = MPX_OK;
    if (strcmp(word, "colour") == 0 || strcmp(word, "color") == 0 || strcmp(word, "accum") == 0 ||
        strcmp(word, "fuse") == 0) {
        st = mpx_rules_add(*r, line, g, err);
    } else if (strcmp(word, "target") == 0) {
        char f[32];
        snprintf(f, sizeof f, "%.*s", (int)strcspn(rest, " \t"), rest);
        o->target = mpx_format_by_name(f);
        if (!o->target || o->target->kind == MPX_FMT_FP32)
        {
            char hint[128];
            st = mpx_error_set(err, MPX_E_ARG, "sweep: unknown target \"%s\"%s", f, mpx_explore_format_hint(f, true, hint, sizeof hint));
        }
        if (!st && strpbrk(rest, " \t")) st = mpx_error_set(err, MPX_E_ARG, "sweep: target takes one format here");
    } else if (strcmp(word, "keep-io") == 0) {
        if (strcmp(rest, "on") == 0) o->keep_io = true;
        else if (strcmp(rest, "off") == 0) o->keep_io = false;
        else st = mpx_error_set(err, MPX_E_ARG, "sweep: keep-io on|off, not \"%s\"", rest);
    } else {
        st = mpx_error_set(err, MPX_E_ARG,
                           "sweep: the command must change the plan (colour, color, accum, fuse, target, keep-io), not \"%s\"",
                           word);
    }
    if (st) {
        mpx_rules_free(*r);
        *r = NULL;
    }
    return st;
}

void mpx_sweep_record(const mpx_plan *p, const mpx_compare *c, mpx_sweep_point *pt) {
    for (int k = 0; k < MPX_COLOUR_COUNT; k++) pt->colours[k] = p->counts.nodes[k];
    pt->casts = p->counts.casts;
    pt->low_pct = p->counts.low_macs_pct;
    pt->low_cost_pct = p->counts.low_cost_pct;
    pt->weight_bytes = p->counts.weight_bytes_after;
    pt->weights_overflow = mpx_figure_weights_overflow(p);
    mpx_run_totals t = mpx_compare_totals(c);
    pt->out_rel_l2 = t.worst_out ? t.out_rel_l2 : NAN;
    pt->overflow = t.overflow;
    pt->underflow = t.underflow;
    const mpx_layer *w = mpx_compare_worst_layer(c, MPX_WORST_ANY);
    pt->worst_rel_l2 = w ? w->m.rel_l2 : NAN;
    snprintf(pt->worst, sizeof pt->worst, "%s", w ? p->g->tensors[w->tensor]->name : "-");
    pt->done = true;
}

char *mpx_sweep_csv(const mpx_sweep *d) {
    size_t cap = 256 + (size_t)d->n * 512, o = 0;
    char *t = malloc(cap);
    if (!t) return NULL;
    o += (size_t)snprintf(t + o, cap - o,
                          "%s,green,gray,clear,red,casts,low_macs_pct,low_cost_pct,weight_bytes,weights_overflow,output_rel_l2,"
                          "overflow,underflow,worst_layer,worst_rel_l2\n", d->name);
    for (int i = 0; i < d->n && o < cap; i++) {
        const mpx_sweep_point *p = &d->pts[i];
        if (!p->done) continue;
        o += (size_t)snprintf(t + o, cap - o, "%s,%d,%d,%d,%d,%d,%.17g,%.17g,%lld,%lld,%.17g,%lld,%lld,\"%s\",%.17g\n",
                              d->values[i], p->colours[MPX_COLOUR_GREEN], p->colours[MPX_COLOUR_GRAY], p->colours[MPX_COLOUR_CLEAR],
                              p->colours[MPX_COLOUR_RED], p->casts, p->low_pct, p->low_cost_pct, (long long)p->weight_bytes,
                              (long long)p->weights_overflow, p->out_rel_l2, (long long)p->overflow,
                              (long long)p->underflow, p->worst, p->worst_rel_l2);
    }
    return t;
}

/* Numbers with every digit (cJSON's own printing may drop the last bit), so
 * merged shards equal an unsharded run exactly. */
static void add_exact(cJSON *obj, const char *key, double v) { mpx_explore_json_exact(obj, key, v, "null"); }

char *mpx_sweep_json(const mpx_sweep *d, const char *shard) {
    cJSON *root = cJSON_CreateObject(), *sw = cJSON_AddObjectToObject(root, "sweep");
    cJSON_AddStringToObject(sw, "name", d->name);
    cJSON_AddStringToObject(sw, "command", d->command);
    cJSON *vals = cJSON_AddArrayToObject(sw, "values");
    for (int i = 0; i < d->n; i++) cJSON_AddItemToArray(vals, cJSON_CreateString(d->values[i]));
    cJSON_AddStringToObject(sw, "model", d->model);
    cJSON_AddStringToObject(sw, "target", d->target);
    if (d->model_id[0]) cJSON_AddStringToObject(sw, "model_id", d->model_id);
    if (d->session_id[0]) cJSON_AddStringToObject(sw, "session_id", d->session_id);
    if (shard) cJSON_AddStringToObject(sw, "shard", shard);
    cJSON *pts = cJSON_AddArrayToObject(root, "points");
    for (int i = 0; i < d->n; i++) {
        const mpx_sweep_point *p = &d->pts[i];
        if (!p->done) continue;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "index", i);
        cJSON_AddStringToObject(e, "value", d->values[i]);
        for (int k = 1; k < MPX_COLOUR_COUNT; k++)
            cJSON_AddNumberToObject(e, mpx_colour_name((mpx_colour)k), p->colours[k]);
        cJSON_AddNumberToObject(e, "casts", p->casts);
        add_exact(e, "low_macs_pct", p->low_pct);
        add_exact(e, "low_cost_pct", p->low_cost_pct);
        cJSON_AddNumberToObject(e, "weight_bytes", (double)p->weight_bytes);
        cJSON_AddNumberToObject(e, "weights_overflow", (double)p->weights_overflow);
        add_exact(e, "output_rel_l2", p->out_rel_l2);
        cJSON_AddNumberToObject(e, "overflow", (double)p->overflow);
        cJSON_AddNumberToObject(e, "underflow", (double)p->underflow);
        cJSON_AddStringToObject(e, "worst_layer", p->worst);
        add_exact(e, "worst_rel_l2", p->worst_rel_l2);
        cJSON_AddItemToArray(pts, e);
    }
    char *t = cJSON_Print(root);
    cJSON_Delete(root);
    return t;
}

static const char *str_of(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num_of(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* One shard into d (the first defines the sweep; later ones must match). */
static mpx_status merge_one(const char *path, const cJSON *root, mpx_sweep *d, bool first, mpx_error *err) {
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(root, "sweep");
    const cJSON *vals = sw ? cJSON_GetObjectItemCaseSensitive(sw, "values") : NULL;
    const cJSON *pts = cJSON_GetObjectItemCaseSensitive(root, "points");
    const char *name = sw ? str_of(sw, "name") : NULL, *cmd = sw ? str_of(sw, "command") : NULL;
    const char *model = sw ? str_of(sw, "model") : NULL, *target = sw ? str_of(sw, "target") : NULL;
    if (!name || !cmd || !model || !target || !cJSON_IsArray(vals) || !cJSON_IsArray(pts))
        return mpx_error_set(err, MPX_E_INVALID, "merge: %s is not the JSON of a sweep (sweep ... --json <file>)", path);
    int nv = cJSON_GetArraySize(vals);
    if (first) {
        if (nv < 1 || nv > MPX_SWEEP_MAX_POINTS) return mpx_error_set(err, MPX_E_INVALID, "merge: %s: %d values", path, nv);
        snprintf(d->name, sizeof d->name, "%s", name);
        snprintf(d->command, sizeof d->command, "%s", cmd);
        snprintf(d->model, sizeof d->model, "%s", model);
        snprintf(d->target, sizeof d->target, "%s", target);
        snprintf(d->model_id, sizeof d->model_id, "%s", str_of(sw, "model_id") ? str_of(sw, "model_id") : "");
        snprintf(d->session_id, sizeof d->session_id, "%s", str_of(sw, "session_id") ? str_of(sw, "session_id") : "");
        d->n = nv;
        for (int i = 0; i < nv; i++) {
            const cJSON *v = cJSON_GetArrayItem(vals, i);
            snprintf(d->values[i], sizeof d->values[i], "%s", cJSON_IsString(v) ? v->valuestring : "?");
        }
    } else {
        bool same = strcmp(d->name, name) == 0 && strcmp(d->command, cmd) == 0 && nv == d->n;
        for (int i = 0; same && i < nv; i++) {
            const cJSON *v = cJSON_GetArrayItem(vals, i);
            same = cJSON_IsString(v) && strcmp(v->valuestring, d->values[i]) == 0;
        }
        if (!same) return mpx_error_set(err, MPX_E_INVALID, "merge: %s is another sweep (%s: %s)", path, name, cmd);
        /* the model by its content where the shards carry it (workers may
         * hold it in other folders), else by its path */
        const char *mid = str_of(sw, "model_id") ? str_of(sw, "model_id") : "";
        const char *sid = str_of(sw, "session_id") ? str_of(sw, "session_id") : "";
        if (d->model_id[0] || mid[0] ? strcmp(d->model_id, mid) != 0 : strcmp(d->model, model) != 0)
            return mpx_error_set(err, MPX_E_INVALID, "merge: %s is a sweep of another model (%s, %s; not %s, %s)", path,
                                 model, mid[0] ? mid : "no content id", d->model, d->model_id[0] ? d->model_id : "no content id");
        if (strcmp(d->session_id, sid) != 0)
            return mpx_error_set(err, MPX_E_INVALID, "merge: %s ran from another session than the first shard (its "
                                 "inputs, data set, keep-io or rules differ; session %s, not %s)", path,
                                 sid[0] ? sid : "unknown", d->session_id[0] ? d->session_id : "unknown");
        if (strcmp(d->target, target) != 0)
            return mpx_error_set(err, MPX_E_INVALID, "merge: %s is a sweep with target %s, not %s", path, target,
                                 d->target);
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, pts) {
        double idx = num_of(e, "index");
        if (!(idx >= 0 && idx < d->n) || idx != (double)(int)idx)
            return mpx_error_set(err, MPX_E_INVALID, "merge: %s: a point with a bad index", path);
        mpx_sweep_point *p = &d->pts[(int)idx];
        if (p->done) return mpx_error_set(err, MPX_E_INVALID, "merge: %s: point %s = %s is in two shards", path, d->name,
                                          d->values[(int)idx]);
        for (int k = 1; k < MPX_COLOUR_COUNT; k++) p->colours[k] = (int)num_of(e, mpx_colour_name((mpx_colour)k));
        p->casts = (int)num_of(e, "casts");
        p->low_pct = num_of(e, "low_macs_pct");
        p->low_cost_pct = num_of(e, "low_cost_pct");
        p->weight_bytes = (int64_t)num_of(e, "weight_bytes");
        p->weights_overflow = (int64_t)num_of(e, "weights_overflow");
        p->out_rel_l2 = num_of(e, "output_rel_l2");
        p->overflow = (int64_t)num_of(e, "overflow");
        p->underflow = (int64_t)num_of(e, "underflow");
        const char *w = str_of(e, "worst_layer");
        snprintf(p->worst, sizeof p->worst, "%s", w ? w : "-");
        p->worst_rel_l2 = num_of(e, "worst_rel_l2");
        p->done = true;
    }
    return MPX_OK;
}

mpx_status mpx_sweep_define(mpx_sweep *d, const char *name, const char *command, const char *values,
                            const char *model, const mpx_format *target, mpx_error *err) {
    memset(d, 0, sizeof *d);
    if (strlen(name) >= sizeof d->name) return mpx_error_set(err, MPX_E_ARG, "sweep: the name \"%.20s...\" is too long", name);
    if (strlen(command) >= sizeof d->command) return mpx_error_set(err, MPX_E_ARG, "sweep: the command is too long");
    snprintf(d->name, sizeof d->name, "%s", name);
    snprintf(d->command, sizeof d->command, "%s", command);
    char vals[4096];
    snprintf(vals, sizeof vals, "%s", values);
    for (char *save = NULL, *v = strtok_r(vals, ",", &save); v; v = strtok_r(NULL, ",", &save)) {
        if (d->n == MPX_SWEEP_MAX_POINTS) return mpx_error_set(err, MPX_E_LIMIT, "sweep: more than %d values", MPX_SWEEP_MAX_POINTS);
        if (strlen(v) >= sizeof d->values[0]) return mpx_error_set(err, MPX_E_ARG, "sweep: value \"%.20s...\" too long", v);
        snprintf(d->values[d->n++], sizeof d->values[0], "%s", v);
    }
    if (d->n == 0) return mpx_error_set(err, MPX_E_ARG, "sweep: no values (sweep %s in v1,v2,... : ...)", d->name);
    snprintf(d->model, sizeof d->model, "%s", model ? model : "");
    snprintf(d->target, sizeof d->target, "%s", mpx_format_name(target));
    return MPX_OK;
}

mpx_status mpx_sweep_point_command(const mpx_sweep *d, int i, char *out, size_t n, mpx_error *err) {
    bool used;
    mpx_status st = substitute(d->command, d->name, d->values[i], out, n, &used, err);
    if (!st && !used) st = mpx_error_set(err, MPX_E_ARG, "sweep: the command does not use $%s", d->name);
    return st;
}

mpx_status mpx_sweep_run(mpx_sweep *d, const mpx_graph *g, const mpx_rules *rules, const mpx_plan_opts *o,
                         const mpx_explore_host *h, int shard_k, int shard_n, mpx_error *err) {
    if (!h || !h->plan || !h->run) return mpx_error_set(err, MPX_E_ARG, "sweep: needs a host that plans and runs");
    mpx_status st = MPX_OK;
    /* Check every point's command before running any: a bad value costs nothing. */
    for (int i = 0; i < d->n && !st; i++) {
        char line[2200];
        mpx_rules *r = NULL;
        mpx_plan_opts po;
        if ((st = mpx_sweep_point_command(d, i, line, sizeof line, err))) break;
        if ((st = mpx_sweep_point_state(g, rules, o, line, &r, &po, err))) {
            char m[sizeof err->msg];
            snprintf(m, sizeof m, "%s", err->msg);
            st = mpx_error_set(err, st, "sweep %s = %s: %s", d->name, d->values[i], m);
        }
        mpx_rules_free(r);
    }
    for (int i = 0; i < d->n && !st; i++) {
        if (shard_n && i % shard_n != shard_k - 1) continue;
        char line[2200];
        mpx_rules *r = NULL;
        mpx_plan_opts po;
        mpx_plan *p = NULL;
        mpx_compare *c = NULL;
        mpx_sweep_point_command(d, i, line, sizeof line, err);
        if (h->point) h->point(h->ctx, d, i);
        st = mpx_sweep_point_state(g, rules, o, line, &r, &po, err);
        if (!st) st = h->plan(h->ctx, r, &po, &p, err);
        if (!st) st = h->run(h->ctx, p, false, false, NULL, NULL, &c, err);
        if (st) {
            char m[sizeof err->msg];
            snprintf(m, sizeof m, "%s", err->msg);
            st = mpx_error_set(err, st, "sweep %s = %s: %s (nothing kept)", d->name, d->values[i], m);
        } else mpx_sweep_record(p, c, &d->pts[i]);
        mpx_rules_free(r);
        mpx_plan_free(p);
        mpx_compare_free(c);
    }
    return st;
}

mpx_status mpx_sweep_merge(mpx_sweep *d, const char *path, const char *text, bool first, mpx_error *err) {
    cJSON *root = cJSON_Parse(text);
    if (!root) return mpx_error_set(err, MPX_E_PARSE, "merge: %s is not JSON", path);
    mpx_status st = merge_one(path, root, d, first, err);
    cJSON_Delete(root);
    return st;
}

mpx_status mpx_sweep_check_complete(const mpx_sweep *d, mpx_error *err) {
    for (int i = 0; i < d->n; i++)
        if (!d->pts[i].done)
            return mpx_error_set(err, MPX_E_INVALID, "merge: no shard has point %s = %s (a shard is missing)", d->name,
                                 d->values[i]);
    return MPX_OK;
}
