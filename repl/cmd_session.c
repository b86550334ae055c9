/* cmd_session.c - the session itself: source, set, save.
 *
 * `save` writes the session as a script that rebuilds it: the model, the
 * inputs, the plan options and rules of the current undo state (not the undo
 * history), and the settings that differ from the defaults. It writes what
 * the session holds rather than replaying the commands typed, so a refused
 * command or an undone rule never reaches the file. */
#include "repl_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- source ------------------------------------------------------------------ */

MPX_CMD(repl_cmd_source) {
    if (argc != 2) return mpx_error_set(err, MPX_E_ARG, "usage: source <file.mpx>");
    return repl_source(s, argv[1], err);
}

/* ---- set ----------------------------------------------------------------------- */

enum { TOP_MAX = 1000000 };

static void print_settings(const mpx_session *s) {
    fprintf(s->out, "bail  %-8s whether a script stops at its first error\n", s->bail ? "on" : "off");
    fprintf(s->out, "top   %-8d rows `report` shows without --top\n", s->report_top);
    fprintf(s->out, "cache %-8d MB of the last run's values kept so a re-run recomputes only what changed (0: off)\n",
            s->cache_mb);
    fprintf(s->out, "pager %-8s long output at the prompt through $PAGER (default less -FRX)\n", s->pager ? "on" : "off");
}

MPX_CMD(repl_cmd_set) {
    if (argc == 1) {
        print_settings(s);
        return MPX_OK;
    }
    if (argc != 3)
        return mpx_error_set(err, MPX_E_ARG, "usage: set [bail on|off | top <n> | cache <MB> | pager on|off]");
    const char *name = argv[1], *value = argv[2];
    if (strcmp(name, "bail") == 0 || strcmp(name, "pager") == 0) {
        if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0)
            return mpx_error_set(err, MPX_E_ARG, "set %s: expected on or off, not \"%s\"", name, value);
        *(name[0] == 'b' ? &s->bail : &s->pager) = strcmp(value, "on") == 0;
        return MPX_OK;
    }
    if (strcmp(name, "top") == 0) {
        char *end;
        errno = 0;
        long v = strtol(value, &end, 10);
        if (end == value || *end || errno == ERANGE || v < 1 || v > TOP_MAX)
            return mpx_error_set(err, MPX_E_ARG, "set top: expected a row count from 1 to %d, not \"%s\"", TOP_MAX,
                                 value);
        s->report_top = (int)v;
        return MPX_OK;
    }
    if (strcmp(name, "cache") == 0) {
        char *end;
        errno = 0;
        long v = strtol(value, &end, 10);
        if (end == value || *end || errno == ERANGE || v < 0 || v > 1 << 20)
            return mpx_error_set(err, MPX_E_ARG, "set cache: expected megabytes from 0 (off) to %d, not \"%s\"",
                                 1 << 20, value);
        /* A new budget starts a new cache at the next run. */
        mpx_compare_cache_free(s->run_cache);
        s->run_cache = NULL;
        repl_drop_sample_caches(s);
        s->cache_mb = (int)v;
        return MPX_OK;
    }
    mpx_name_hint h;
    mpx_name_hint_init(&h, name);
    static const char *const settings[] = {"bail", "top", "cache", "pager"};
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) mpx_name_hint_add(&h, settings[i]);
    char hint[64];
    return mpx_error_set(err, MPX_E_ARG, "unknown setting \"%s\" (settings: bail, top, cache, pager)%s", name,
                         mpx_name_hint_tail(&h, hint, sizeof hint));
}

/* ---- save ---------------------------------------------------------------------- */

/* A growing string; a failed allocation is remembered and reported once. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf;

__attribute__((format(printf, 2, 3))) static void sb_printf(sbuf *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = true;
            return;
        }
        if (b->p && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 256;
        while (cap <= b->len + (size_t)n) cap *= 2;
        char *grown = realloc(b->p, cap);
        if (!grown) {
            b->oom = true;
            return;
        }
        b->p = grown;
        b->cap = cap;
    }
}

/* One word as the tokenizer reads it back (quoted where needed); false for
 * a word that cannot be written (a line break). */
static bool sb_word(sbuf *b, const char *w) {
    char q[4096];
    if (!repl_quote_word(q, sizeof q, w)) return false;
    sb_printf(b, "%s", q);
    return true;
}

/* The shortest decimal that reads back as exactly v (%.17g always would, but
 * `0.10000000000000001` for 0.1 reads badly). */
static void sb_double(sbuf *b, double v) {
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    sb_printf(b, "%s", buf);
}

static bool have_command(const char *name) {
    int n = 0;
    const mpx_command *c = mpx_commands(&n);
    for (int i = 0; i < n; i++)
        if (strcmp(c[i].name, name) == 0) return true;
    return false;
}

/* The input lines of one spec: its shape, then how its values are made. */
static bool save_input(sbuf *b, const mpx_input_spec *sp) {
    bool ok = true;
    if (sp->shape[0]) {
        sb_printf(b, "input ");
        ok = sb_word(b, sp->name) && ok;
        sb_printf(b, " shape %s\n", sp->shape);
    }
    if (sp->kind == MPX_INPUT_DEFAULT) return ok;
    sb_printf(b, "input ");
    ok = sb_word(b, sp->name) && ok;
    switch (sp->kind) {
    case MPX_INPUT_NORMAL:
    case MPX_INPUT_UNIFORM:
        sb_printf(b, " random %s ", sp->kind == MPX_INPUT_NORMAL ? "normal" : "uniform");
        sb_double(b, sp->a);
        sb_printf(b, " ");
        sb_double(b, sp->b);
        sb_printf(b, " seed %llu\n", sp->seed);
        break;
    case MPX_INPUT_CONST:
        sb_printf(b, " const ");
        sb_double(b, sp->a);
        sb_printf(b, "\n");
        break;
    case MPX_INPUT_FILE:
        sb_printf(b, " file ");
        ok = sb_word(b, sp->path) && ok;
        sb_printf(b, "%s\n", sp->convert ? " convert" : "");
        break;
    case MPX_INPUT_IMAGE:
    case MPX_INPUT_AUDIO:
        sb_printf(b, sp->kind == MPX_INPUT_IMAGE ? " image " : " audio ");
        ok = sb_word(b, sp->path) && ok;
        sb_printf(b, "%s%s\n", sp->opts[0] ? " " : "", sp->opts);
        break;
    case MPX_INPUT_DEFAULT: break;
    }
    return ok;
}

/* The script text of the session; *n_cmds counts its commands. */
static mpx_status save_text(const mpx_session *s, sbuf *b, int *n_cmds, mpx_error *err) {
    int n = 0;
    sb_printf(b, "# mpx session (written by save; run it with `mpx <file>` or `source <file>`)\n");
    if (s->graph) {
        sb_printf(b, "load ");
        if (!sb_word(b, s->model_path))
            return mpx_error_set(err, MPX_E_ARG, "save: the model path %s cannot be written in a script (it holds a \")",
                                 s->model_path);
        sb_printf(b, "\n");
        n++;
        for (int i = 0; i < s->n_specs; i++) {
            const mpx_input_spec *sp = &s->specs[i];
            if (!save_input(b, sp))
                return mpx_error_set(err, MPX_E_ARG, "save: input %s cannot be written in a script (a name or path "
                                     "holds a \")", sp->name);
            n += (sp->shape[0] != 0) + (sp->kind != MPX_INPUT_DEFAULT);
        }
    }
    if (s->graph && s->hist) {
        const mpx_plan_opts *o = mpx_history_opts(s->hist);
        /* target NULL means fp16 (mpx_plan_opts). */
        sb_printf(b, "target %s", o->target ? o->target->name : "fp16");
        if (o->accum_block) sb_printf(b, " block %d", o->accum_block);
        sb_printf(b, "\nkeep-io %s\n", o->keep_io ? "on" : "off");
        n += 2;
        const mpx_rules *r = mpx_history_rules(s->hist);
        bool ran = false;
        for (int i = 0; i < mpx_rules_count(r); i++) {
            /* A rule on a measured figure (absmax) plans only after a reference
             * run: the replay runs once before the first such rule. */
            if (!ran && mpx_rules_uses_measured(r, i) && have_command("run")) {
                sb_printf(b, "run   # rule %d uses measured figures\n", i + 1);
                ran = true;
                n++;
            }
            sb_printf(b, "%s\n", mpx_rules_text(r, i));
            n++;
        }
    }
    mpx_session d;
    mpx_session_init(&d, s->out); /* only its defaults are read */
    if (s->bail != d.bail) {
        sb_printf(b, "set bail %s\n", s->bail ? "on" : "off");
        n++;
    }
    if (s->cache_mb != d.cache_mb) sb_printf(b, "set cache %d\n", s->cache_mb);
    if (s->pager != d.pager) {
        sb_printf(b, "set pager %s\n", s->pager ? "on" : "off");
        n++;
    }
    if (s->report_top != d.report_top) {
        sb_printf(b, "set top %d\n", s->report_top);
        n++;
    }
    if (b->oom) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    *n_cmds = n;
    return MPX_OK;
}

/* save [<file.mpx>]: without a file, print the script. */
MPX_CMD(repl_cmd_save) {
    if (argc > 2) return mpx_error_set(err, MPX_E_ARG, "usage: save [<file.mpx>]");
    sbuf b = {NULL, 0, 0, false};
    int n = 0;
    mpx_status st = save_text(s, &b, &n, err);
    if (!st && argc == 1) fputs(b.p, s->out);
    if (!st && argc == 2 && !(st = repl_write_file(s, argv[1], b.p, err)))
        fprintf(s->info, "saved %s (%d command%s)%s\n", argv[1], n, n == 1 ? "" : "s",
                s->graph ? "" : "; no model loaded");
    free(b.p);
    return st;
}
