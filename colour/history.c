/* history.c - undo and redo over (rules, options) states.
 *
 * A plan is a pure function of graph + rules + options, so undo is "go back
 * to the previous state" and needs no inverse operations. States are cheap:
 * a rule-set copy shares its parsed rules. */
#include "colour_internal.h"

#include <stdlib.h>

typedef struct state {
    mpx_rules *rules;
    mpx_plan_opts opts;
} state;

struct mpx_history {
    state *v;
    int n, cap;
    int cur; /* index of the current state */
};

void mpx_plan_opts_default(mpx_plan_opts *o) {
    o->target = &mpx_format_fp16;
    o->keep_io = true;
    o->accum = &mpx_format_fp32;
    o->accum_block = 0;
}

mpx_history *mpx_history_new(const mpx_plan_opts *opts) {
    mpx_history *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->v = calloc(8, sizeof *h->v);
    if (!h->v || !(h->v[0].rules = mpx_rules_new())) {
        free(h->v);
        free(h);
        return NULL;
    }
    if (opts) h->v[0].opts = *opts;
    else mpx_plan_opts_default(&h->v[0].opts);
    h->cap = 8;
    h->n = 1;
    return h;
}

void mpx_history_free(mpx_history *h) {
    if (!h) return;
    for (int i = 0; i < h->n; i++) mpx_rules_free(h->v[i].rules);
    free(h->v);
    free(h);
}

const mpx_rules *mpx_history_rules(const mpx_history *h) { return h->v[h->cur].rules; }
const mpx_plan_opts *mpx_history_opts(const mpx_history *h) { return &h->v[h->cur].opts; }

bool mpx_history_state(const mpx_history *h, int back, const mpx_rules **rules,
                       const mpx_plan_opts **opts) {
    if (back < 0 || back > h->cur) return false;
    const state *s = &h->v[h->cur - back];
    if (rules) *rules = s->rules;
    if (opts) *opts = &s->opts;
    return true;
}

mpx_status mpx_history_push(mpx_history *h, const mpx_rules *rules, const mpx_plan_opts *opts,
                            mpx_error *err) {
    /* opts may point into h->v (the current state's), which realloc moves. */
    mpx_plan_opts o = opts ? *opts : h->v[h->cur].opts;
    mpx_rules *copy = mpx_rules_copy(rules);
    if (!copy) return mpx_error_set(err, MPX_E_NOMEM, "out of memory saving the rule history");
    if (h->cur + 2 > h->cap) {
        state *v = realloc(h->v, (size_t)h->cap * 2 * sizeof *v);
        if (!v) {
            mpx_rules_free(copy);
            return mpx_error_set(err, MPX_E_NOMEM, "out of memory saving the rule history");
        }
        h->v = v;
        h->cap *= 2;
    }
    /* A new change forgets what was undone. */
    for (int i = h->cur + 1; i < h->n; i++) mpx_rules_free(h->v[i].rules);
    h->cur++;
    h->v[h->cur].rules = copy;
    h->v[h->cur].opts = o;
    h->n = h->cur + 1;
    return MPX_OK;
}

bool mpx_history_undo(mpx_history *h) {
    if (h->cur == 0) return false;
    h->cur--;
    return true;
}

bool mpx_history_redo(mpx_history *h) {
    if (h->cur + 1 >= h->n) return false;
    h->cur++;
    return true;
}
