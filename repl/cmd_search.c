/* cmd_search.c - `search`: the words of the command, the session's side of
 * explore/'s search (the session as its host: repl_explore_host),
 * --validate on held-out samples, and what is printed. The algorithm is
 * explore/search.c's.
 *
 * Nothing is applied until the search has succeeded: an error, a condition
 * no plan meets, --max-evals, --time or Ctrl-C leave the session's rules as
 * they were, unless --apply-best asks for the best plan found so far (one
 * repl_apply_rules, one undo step). The JSON (--json) is written however
 * the search ended. */
#include "repl_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --validate: the held-out samples, and the found plan's figures on them. */
typedef struct held {
    struct repl_dataset *data;
    const char *spec;
    bool validated, holds;
    double got[MPX_COND_MAX];
} held;

/* The plan of set run on the held-out samples instead of the session's (no
 * cache: those hold the session's samples), and the condition read there. */
static mpx_status validate(mpx_session *s, const mpx_search *x, const mpx_cond *cond, repl_eval *eval, const bool *set,
                           held *v, mpx_error *err) {
    mpx_rules *r = NULL;
    mpx_plan *p = NULL;
    mpx_compare *c = NULL;
    mpx_status st = mpx_search_rules(x, set, false, MPX_SEARCH_DONE, &r, err);
    if (!st) st = repl_build_plan(s, r, mpx_history_opts(s->hist), &p, err);
    mpx_rules_free(r);
    if (!st && mpx_cond_needs_run(cond)) {
        /* What the condition reads, as the search's evaluations: its kept
         * values and the layers of its figures (every layer of det at
         * 640x640 measured on two held-out samples: loading and validation
         * 0.60-0.81 s one thread, 0.52-0.57 without). */
        const bool *keep, *measure;
        mpx_search_reads(x, &keep, &measure);
        struct repl_dataset *old = s->data;
        s->data = v->data;
        st = repl_run_plan(s, p, false, keep, measure, REPL_UNCACHED, &c, err);
        s->data = old;
    }
    int failed = -1;
    if (!st) {
        mpx_figure_ctx fc = {.plan = p, .cmp = c, .eval = eval ? repl_eval_figure : NULL, .eval_ctx = eval};
        st = mpx_cond_eval(&fc, cond, v->got, &failed, err);
        /* The clauses after a failing one too: the held-out figures are
         * what the user reads, not a verdict alone (the run is done; eval's
         * command ran once for the comparison). */
        for (int i = failed + 1; !st && failed >= 0 && i < cond->n; i++)
            st = mpx_figure_read(&fc, cond->c[i].fig, &v->got[i], err);
    }
    if (st) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        mpx_error_set(err, st, "--validate %s: %s", v->spec, msg);
    }
    v->validated = !st;
    v->holds = failed < 0;
    mpx_plan_free(p);
    mpx_compare_free(c);
    return st;
}

/* The human line: the set (at most 8 names), its figures, the low share and
 * the evaluations. */
static void summary(const mpx_session *s, const mpx_cond *cond, const mpx_search_result *r, bool apply,
                    const char *lead, double ms, FILE *f) {
    const mpx_graph *g = s->graph;
    char line[4096];
    size_t o = (size_t)snprintf(line, sizeof line, "%s", lead);
    if (r->k == 0)
        o += (size_t)snprintf(line + o, sizeof line - o, "the current plan already meets %s; nothing added", cond->text);
    else {
        o += (size_t)snprintf(line + o, sizeof line - o, "%d node%s kept fp32", r->k, r->k == 1 ? "" : "s");
        const char *sep = " (";
        int shown = 0;
        for (int i = 0; i < r->n_cand && o < sizeof line; i++) {
            if (!r->set[i]) continue;
            if (shown++ == 8) {
                o += (size_t)snprintf(line + o, sizeof line - o, ", ... %d more", r->k - 8);
                break;
            }
            o += (size_t)snprintf(line + o, sizeof line - o, "%s%s", sep, g->nodes[r->cand[i]]->name);
            sep = ", ";
        }
        if (o < sizeof line) o += (size_t)snprintf(line + o, sizeof line - o, ")");
    }
    char v[40];
    for (int i = 0; i < cond->n && o < sizeof line; i++)
        o += (size_t)snprintf(line + o, sizeof line - o, "; %s %s %s %s", cond->c[i].fig,
                              mpx_clause_got_text(&cond->c[i], r->got[i], 3, v, sizeof v), mpx_cond_op(&cond->c[i]),
                              cond->c[i].num);
    if (o < sizeof line)
        o += (size_t)snprintf(line + o, sizeof line - o, "; %.1f%% of MACs in %s (%.1f%% of cost); %d evaluation%s",
                              r->low_macs_pct, mpx_format_name(s->plan->opts.target), r->low_cost_pct, r->n_evals,
                              r->n_evals == 1 ? "" : "s");
    if (r->n_unchanged && o < sizeof line)
        o += (size_t)snprintf(line + o, sizeof line - o, " and %d set%s whose plan computed as an earlier one",
                              r->n_unchanged, r->n_unchanged == 1 ? "" : "s");
    if (o < sizeof line) o += (size_t)snprintf(line + o, sizeof line - o, " (%.1f ms)", ms);
    if (r->end != MPX_SEARCH_DONE && o < sizeof line)
        snprintf(line + o, sizeof line - o, apply ? "; applied (--apply-best)" : "; not applied (--apply-best applies it)");
    fprintf(f, "%s\n", line);
}

/* search <condition> [--method auto|greedy|bisect] [--max-evals n] [--time s] [--apply-best] [--json [file]] */
mpx_status repl_cmd_search(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    if (!s->plan || !s->hist) return mpx_error_set(err, MPX_E_INVALID, "no plan (load a model first)");
    const mpx_opt_value *o = args->opt;
    mpx_search_opts so = {.method = (mpx_search_method)o[SEARCH_METHOD].i, .max_evals = (int)o[SEARCH_MAX_EVALS].i};
    if (o[SEARCH_TIME].given) so.max_ms = o[SEARCH_TIME].d * 1000;
    mpx_cond cond;
    held hv = {.spec = o[SEARCH_VALIDATE].text};
    repl_eval *eval = NULL;
    bool json = o[SEARCH_JSON].given, apply_best = o[SEARCH_APPLY_BEST].given;
    const char *json_path = o[SEARCH_JSON].text, *eval_cmd = o[SEARCH_EVAL].text;
    double eval_timeout = o[SEARCH_EVAL_TIMEOUT].d;
    /* the condition's words are the plain ones, and come before the options */
    if (args->argc > 1 && strncmp(args->argv[1], "--", 2) == 0)
        return repl_usage_error(err, "search", "the condition comes first");
    if ((st = mpx_cond_parse("search", args->n, (char **)args->word, &cond, err))) return st;
    /* Check the figures' names before any run: a typo costs nothing. */
    bool evals = false;
    for (int i = 0; i < cond.n; i++) {
        if ((st = mpx_figure_check(s->graph, cond.c[i].fig, err))) return st;
        const char *f = cond.c[i].fig;
        if (strcmp(f, "eval") == 0 || strncmp(f, "eval.", 5) == 0) {
            if (!eval_cmd)
                return mpx_error_set(err, MPX_E_ARG, "%s is the figure of a command: search ... --eval \"<command>\"", f);
            evals = true;
        }
    }
    /* The JSON's file before any run: a typo there would cost the search */
    if (json_path && (st = repl_check_target(s, json_path, err))) return st;
    if (hv.spec) {
        char line[1024], *w[16];
        int nw = 0;
        snprintf(line, sizeof line, "%s", hv.spec);
        if ((st = repl_split_words(line, &nw, w, 16, false, err)) ||
            (st = repl_data_open(s, nw, w, &hv.data, err))) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            return mpx_error_set(err, st, "--validate %s: %s", hv.spec, msg);
        }
    }
    repl_cond_warn(s, &cond);
    for (int i = 0; i < cond.n; i++) {
        if (evals && strncmp(cond.c[i].fig, "eval", 4) == 0) continue;
        mpx_figure_ctx fc = {.plan = s->plan, .cmp = s->last, .local = s->last_local};
        double v;
        mpx_error e;
        if (!mpx_figure_needs_run(cond.c[i].fig) || s->last) {
            if (mpx_figure_read(&fc, cond.c[i].fig, &v, &e) != MPX_OK && !strstr(e.msg, "compared no such")) {
                repl_data_free(hv.data);
                return mpx_error_set(err, e.status, "%s", e.msg);
            }
        }
    }
    if (eval_cmd && (st = repl_eval_new(eval_cmd, eval_timeout, s->cancel, &eval, err))) {
        repl_data_free(hv.data);
        return st;
    }
    so.log = json;
    mpx_explore_host sh = repl_explore_host(s, eval);
    mpx_search *x = NULL;
    if ((st = mpx_search_new(s->graph, s->plan, mpx_history_rules(s->hist), &cond, &so, &sh, &x, err))) {
        repl_eval_free(eval);
        repl_data_free(hv.data);
        return st;
    }
    /* The inputs once for every evaluation (a data set makes each sample's
     * as it goes). */
    mpx_search_result r;
    st = !s->data && mpx_cond_needs_run(&cond) ? repl_make_inputs(s, &s->held_inputs, err) : MPX_OK;
    if (!st) st = mpx_search_run(x, &r, err);
    else mpx_search_get_result(x, st, &r);
    repl_free_inputs(s, s->held_inputs);
    s->held_inputs = NULL;
    if (!st && hv.data) {
        st = validate(s, x, &cond, eval, r.set, &hv, err);
        if (st) mpx_search_get_result(x, st, &r);
    }
    if (s->progress) fputs("\r                                                                              \r", stderr);
    double ms = r.ms;
    /* What the search learned, however it ended: the set found, else the
     * best that met the condition so far. */
    bool apply = st ? apply_best && r.set : true;
    mpx_error stop = {0};
    if (st) stop = *err;
    /* The JSON first: when its file cannot be written nothing is applied. */
    char *json_text = NULL;
    mpx_status wst = MPX_OK;
    mpx_search_validation val = {.data = hv.spec, .samples = hv.data ? repl_data_count(hv.data) : 0, .got = hv.got,
                                 .holds = hv.holds};
    if (json && !(json_text = mpx_search_json(x, &r, st ? stop.msg : NULL, apply, hv.validated ? &val : NULL)))
        wst = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    if (json_text && json_path) {
        wst = repl_write_file(s, json_path, json_text, err);
        free(json_text);
        json_text = NULL;
    }
    if (wst) {
        apply = false;
        if (st) { /* the stop is what the user must read first; the file second */
            fprintf(s->info, "warning: %s\n", err->msg);
            *err = stop;
        } else
            st = wst;
    }
    /* Apply: one rule per node of the set, one undo step; the user's rules stay. */
    mpx_status ast = MPX_OK;
    if (apply && r.k > 0) {
        mpx_rules *rules = NULL;
        ast = mpx_search_rules(x, r.set, true, r.end, &rules, err);
        if (!ast) ast = repl_apply_rules(s, rules, mpx_history_opts(s->hist), err);
        mpx_rules_free(rules);
    }
    if (ast) {
        st = ast;
        apply = false;
    }
    /* stdout holds what was asked for: the JSON alone when it goes there. */
    FILE *human = json && !json_path ? s->info : s->out;
    if (!ast && (!st || r.set)) {
        char lead[1100] = "search: ";
        if (r.end == MPX_SEARCH_DONE && st) snprintf(lead, sizeof lead, "search: the plan found, not applied: ");
        else if (st && apply) snprintf(lead, sizeof lead, "%s; the best plan so far: ", stop.msg);
        else if (st) snprintf(lead, sizeof lead, "search: the best plan so far: ");
        summary(s, &cond, &r, apply, lead, ms, human);
    }
    if (hv.validated && r.end == MPX_SEARCH_DONE) {
        fprintf(human, "search: on the held-out samples (%s, %d): ", hv.spec, repl_data_count(hv.data));
        char v[40];
        for (int i = 0; i < cond.n; i++)
            fprintf(human, "%s%s %s", i ? "; " : "", cond.c[i].fig,
                    mpx_clause_got_text(&cond.c[i], hv.got[i], 3, v, sizeof v));
        fprintf(human, hv.holds ? "; %s holds there too\n"
                                : "; %s does NOT hold there: the plan meets it on the search's samples only\n",
                cond.text);
    }
    if (json_text) fputs(json_text, s->out);
    if (st && !ast && apply) st = MPX_OK; /* --apply-best: the user asked for what was found */
    else if (st && !ast && !r.set && r.end != MPX_SEARCH_FAILED && r.end != MPX_SEARCH_NO_PLAN)
        mpx_error_set(err, stop.status, "%s; no plan met %s in %d evaluation%s", stop.msg, cond.text, r.n_evals,
                      r.n_evals == 1 ? "" : "s");
    free(json_text);
    mpx_search_free(x);
    repl_eval_free(eval);
    repl_data_free(hv.data);
    return st;
}
