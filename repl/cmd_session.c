/* cmd_session.c - the session itself: source, set, save.
 *
 * `save` writes the session as a script that rebuilds it: the model, the
 * inputs, the plan options and rules of the current undo state (not the undo
 * history), and the settings that differ from the defaults. It writes what
 * the session holds rather than replaying the commands typed, so a refused
 * command or an undone rule never reaches the file. */
#include "repl_internal.h"

#include <zlib.h>

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- source ------------------------------------------------------------------ */

mpx_status repl_cmd_source(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    return repl_source(s, args->word[0], err); /* dispatch checked the count against the row */
}

/* ---- set ----------------------------------------------------------------------- */

enum { TOP_MAX = 1000000, CACHE_MAX = 1 << 20, MEMORY_MAX = 1 << 30, LOOPS_MAX = 1 << 30 };

/* The settings: one row each for `set`, its listing, `save`, completion and
 * the unknown-name message. choices: the words an on/off setting takes
 * (NULL: a whole number from lo to hi). */
typedef struct setting {
    const char *name;
    const char *choices;
    long lo, hi;
    const char *what;
} setting;

enum { SET_BAIL, SET_TOP, SET_CACHE, SET_PAGER, SET_MEMORY, SET_LOOPS, SET_COUNT };
static const setting settings[] = {
    [SET_BAIL] = {"bail", "on|off", 0, 1, "whether a script stops at its first error"},
    [SET_TOP] = {"top", NULL, 1, TOP_MAX, "rows `report` shows without --top"},
    [SET_CACHE] = {"cache", NULL, 0, CACHE_MAX,
                   "MB of the last run's values kept so a re-run recomputes only what changed (0: off)"},
    [SET_PAGER] = {"pager", "on|off", 0, 1, "long output at the prompt through $PAGER (default less -FRX)"},
    [SET_MEMORY] = {"memory", NULL, 0, MEMORY_MAX,
                    "MB a file read may claim: external data, .npz members, images, audio (0: half the machine's memory)"},
    [SET_LOOPS] = {"loops", NULL, 0, LOOPS_MAX,
                   "seconds one Loop, Scan or SequenceMap node may spend on its iterations (0: no limit)"},
};
static_assert(sizeof settings / sizeof settings[0] == SET_COUNT, "one row per setting");

static long setting_value(const mpx_session *s, int i) {
    switch (i) {
    case SET_BAIL: return s->bail;
    case SET_TOP: return s->report_top;
    case SET_CACHE: return s->cache_mb;
    case SET_MEMORY: return s->memory_mb;
    case SET_LOOPS: return s->loops_s;
    default: return s->pager;
    }
}

/* "on", "off" or the number, as `set` takes it. */
static const char *setting_text(const mpx_session *s, int i, char *buf, size_t n) {
    long v = setting_value(s, i);
    if (settings[i].choices) return v ? "on" : "off";
    snprintf(buf, n, "%ld", v);
    return buf;
}

void repl_setting_names(const char *text, void (*add)(const char *prefix, const char *word)) {
    for (int i = 0; i < SET_COUNT; i++) add(text, settings[i].name);
}

const char *repl_setting_choices(const char *name) {
    for (int i = 0; i < SET_COUNT; i++)
        if (strcmp(settings[i].name, name) == 0) return settings[i].choices;
    return NULL;
}

static void print_settings(const mpx_session *s) {
    for (int i = 0; i < SET_COUNT; i++) {
        char v[32];
        fprintf(s->out, "%-6s %-8s %s\n", settings[i].name, setting_text(s, i, v, sizeof v), settings[i].what);
    }
}

mpx_status repl_cmd_set(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    if (args->n == 0) {
        print_settings(s);
        return MPX_OK;
    }
    if (args->n != 2) return repl_usage_error(err, "set", NULL);
    const char *name = args->word[0], *value = args->word[1];
    int i = 0;
    while (i < SET_COUNT && strcmp(settings[i].name, name) != 0) i++;
    if (i == SET_COUNT) {
        mpx_name_hint h;
        mpx_name_hint_init(&h, name);
        char names[64] = "", hint[64];
        for (int k = 0; k < SET_COUNT; k++) {
            mpx_name_hint_add(&h, settings[k].name);
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "", settings[k].name);
        }
        return mpx_error_set(err, MPX_E_ARG, "unknown setting \"%s\" (settings: %s)%s", name, names,
                             mpx_name_hint_tail(&h, hint, sizeof hint));
    }
    long v;
    if (settings[i].choices) {
        if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0)
            return mpx_error_set(err, MPX_E_ARG, "set %s: expected on or off, not \"%s\"", name, value);
        v = strcmp(value, "on") == 0;
    } else {
        char *end;
        errno = 0;
        v = strtol(value, &end, 10);
        if (end == value || *end || errno == ERANGE || v < settings[i].lo || v > settings[i].hi)
            return mpx_error_set(err, MPX_E_ARG, i == SET_TOP      ? "set %s: expected a row count from %ld to %ld, not \"%s\""
                                                 : i == SET_MEMORY ? "set %s: expected megabytes from %ld (the default) to %ld, not \"%s\""
                                                 : i == SET_LOOPS  ? "set %s: expected seconds from %ld (no limit) to %ld, not \"%s\""
                                                                   : "set %s: expected megabytes from %ld (off) to %ld, not \"%s\"",
                                 name, settings[i].lo, settings[i].hi, value);
    }
    switch (i) {
    case SET_BAIL: s->bail = v; break;
    case SET_PAGER: s->pager = v; break;
    case SET_TOP: s->report_top = (int)v; break;
    case SET_MEMORY:
        s->memory_mb = v;
        mpx_set_memory_budget((uint64_t)v << 20);
        break;
    case SET_LOOPS:
        s->loops_s = v;
        mpx_set_loop_budget((double)v);
        break;
    case SET_CACHE:
        /* A new budget starts a new cache at the next run. */
        mpx_compare_cache_free(s->run_cache);
        s->run_cache = NULL;
        repl_drop_sample_caches(s);
        repl_decoded_drop(s, NULL);
        s->cache_mb = (int)v;
        break;
    }
    return MPX_OK;
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
        /* The data set after the inputs: a sample folder's files take their
         * input's options. */
        if (s->data && repl_data_replay(s->data)) {
            sb_printf(b, "%s\n", repl_data_replay(s->data));
            n++;
        } else if (s->data) { /* said, so the script is not taken for the session */
            sb_printf(b, "# data: %d sample names from merged shards, which no command makes again\n",
                      repl_data_count(s->data));
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
    for (int i = 0; i < SET_COUNT; i++)
        if (setting_value(s, i) != setting_value(&d, i)) {
            char v[32];
            sb_printf(b, "set %s %s\n", settings[i].name, setting_text(s, i, v, sizeof v));
            n++;
        }
    mpx_session_free(&d); /* init may allocate (the decoded-inputs table) */
    if (b->oom) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    *n_cmds = n;
    return MPX_OK;
}

/* The session's id for shards (repl_internal.h): save's script without its
 * comments, load line and settings (none of which changes a figure), as a
 * CRC-32. */
mpx_status repl_session_id(const mpx_session *s, char *out, size_t n, mpx_error *err) {
    sbuf b = {NULL, 0, 0, false};
    int cmds = 0;
    mpx_status st = save_text(s, &b, &cmds, err);
    uLong crc = crc32(0L, Z_NULL, 0);
    for (const char *line = b.p; !st && line && *line;) {
        const char *end = strchr(line, '\n');
        const size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
        if (line[0] != '#' && strncmp(line, "load ", 5) != 0 && strncmp(line, "set ", 4) != 0)
            crc = crc32(crc, (const Bytef *)line, (uInt)len);
        line += len;
    }
    free(b.p);
    if (!st) snprintf(out, n, "%08lx", (unsigned long)crc);
    return st;
}

/* save [<file.mpx>]: without a file, print the script. */
mpx_status repl_cmd_save(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    sbuf b = {NULL, 0, 0, false};
    int n = 0;
    mpx_status st = save_text(s, &b, &n, err);
    if (!st && args->n == 0) fputs(b.p, s->out);
    if (!st && args->n == 1 && !(st = repl_write_file(s, args->word[0], b.p, err)))
        fprintf(s->info, "saved %s (%d command%s)%s\n", args->word[0], n, n == 1 ? "" : "s",
                s->graph ? "" : "; no model loaded");
    free(b.p);
    return st;
}
