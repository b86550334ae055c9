/* options.c - a command's words parsed against its row: the --options
 * typed (mpx_opt: flag, whole number, number, text, path, node(s), choice,
 * shard k/n; optional values, repeats, options that go alone, exclude each
 * other or need another), defaults filled, plain words counted. The usage
 * line, the options' lines of `help` and the man page, the suggestion for a
 * mistyped option and completion's candidates (complete.c) are all made
 * from the same rows, so an option's name is written once: in its row. */
#include "repl_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Choice k of a `choices` string ("rgb|bgr|gray/grey"): its name, the text
 * before any '/'. What follows a '/' are other spellings the choice accepts
 * (repl_choice_find), which usage, help and completion do not list. */
const char *repl_choice_at(const char *choices, int k, char *buf, size_t n) {
    const char *p = choices;
    for (int i = 0; p && *p; i++) {
        const char *bar = strchr(p, '|');
        size_t l = bar ? (size_t)(bar - p) : strlen(p);
        if (i == k) {
            const char *slash = memchr(p, '/', l);
            if (slash) l = (size_t)(slash - p);
            if (l >= n) return NULL;
            memcpy(buf, p, l);
            buf[l] = '\0';
            return buf;
        }
        p = bar ? bar + 1 : p + l;
    }
    return NULL;
}

int repl_choice_find(const char *choices, const char *w) {
    size_t wl = strlen(w);
    int k = 0;
    for (const char *p = choices; p && *p;) {
        size_t l = strcspn(p, "/|"); /* one spelling of choice k */
        if (l == wl && strncmp(p, w, wl) == 0) return k;
        if (p[l] == '|') k++;
        p += l + (p[l] != '\0');
    }
    return -1;
}

const char *repl_opt_choice(const mpx_opt *o, int k, char *buf, size_t n) {
    if (o->name_at) {
        const char *name = o->name_at(k);
        if (!name || strlen(name) >= n) return NULL;
        memcpy(buf, name, strlen(name) + 1);
        return buf;
    }
    return repl_choice_at(o->choices, k, buf, n);
}

static int choice_index(const mpx_opt *o, const char *w) {
    if (!o->name_at) return repl_choice_find(o->choices, w);
    char b[64];
    for (int k = 0; repl_opt_choice(o, k, b, sizeof b); k++)
        if (strcmp(b, w) == 0) return k;
    return -1;
}

const mpx_opt *mpx_command_option(const mpx_command *c, const char *name) {
    for (const mpx_opt *o = c && name ? c->options : NULL; o && o->name; o++)
        if (strcmp(o->name, name) == 0) return o;
    return NULL;
}

int repl_opt_takes(const mpx_opt *o, int i, int argc, char *const *argv) {
    if (o->type == MPX_OPT_FLAG) return 0;
    if (o->flags & MPX_OPT_OPTIONAL) {
        /* an optional choice takes the next word only when it is one (dot
         * --fold scopes; dot --fold out.dot keeps the file) */
        if (i + 1 >= argc) return 0;
        if (o->type == MPX_OPT_CHOICE) return choice_index(o, argv[i + 1]) >= 0;
        return strncmp(argv[i + 1], "--", 2) != 0;
    }
    return o->type2 == MPX_OPT_FLAG ? 1 : 2;
}

/* ---- text made from the rows ------------------------------------------------ */

typedef struct {
    char *p;
    size_t n, len;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) {
    if (b->len >= b->n) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->p + b->len, b->n - b->len, fmt, ap);
    va_end(ap);
    if (k > 0) b->len += (size_t)k;
    if (b->len >= b->n) b->len = b->n - 1;
}

/* "a|b|c" for a choice without a meta. */
static void put_choices(sbuf *b, const mpx_opt *o, const char *sep, const char *last_sep) {
    char w[64], next[64];
    for (int k = 0; repl_opt_choice(o, k, w, sizeof w); k++)
        put(b, "%s%s", k == 0 ? "" : repl_opt_choice(o, k + 1, next, sizeof next) ? sep : last_sep, w);
}

/* The option and its value(s): "--json [<file>]", "--around <node> <depth>". */
static void put_option(sbuf *b, const mpx_opt *o) {
    put(b, "%s", o->name);
    if (o->type == MPX_OPT_FLAG) return;
    bool opt = o->flags & MPX_OPT_OPTIONAL;
    put(b, opt ? " [" : " ");
    if (o->meta) put(b, "%s", o->meta);
    else put_choices(b, o, "|", "|");
    if (opt) put(b, "]");
    if (o->type2 != MPX_OPT_FLAG) put(b, " %s", o->meta2 ? o->meta2 : "<value>");
}

/* The option with the options that need it nested after it:
 * --eval "<command>" [--eval-timeout <s>]. */
static void put_nested(sbuf *b, const mpx_command *c, const mpx_opt *o) {
    put_option(b, o);
    for (const mpx_opt *q = c->options; q->name; q++)
        if (q->needs && strcmp(q->needs, o->name) == 0 && !(q->flags & MPX_OPT_ALONE)) {
            put(b, " [");
            put_nested(b, c, q);
            put(b, "]");
        }
}

/* Keyword tables a grammar's synopsis names by a tag ("image <file>
 * {image}"): the usage lists their options, help their lines. */
static const struct {
    const char *tag, *title;
    const mpx_opt *table;
    int first; /* {files}: a data set's keywords but stacked */
} keyword_tags[] = {
    {"{image}", "image options", repl_image_keywords, 0},
    {"{audio}", "audio options", repl_audio_keywords, 0},
    {"{data}", "data set options", repl_data_keywords, 0},
    {"{files}", "data set options", repl_data_keywords, DATA_LIMIT},
};

/* The synopsis with each tag replaced by its table's "[name <value>] ...". */
static void put_words(sbuf *b, const char *w) {
    while (*w) {
        size_t k = 0, nt = sizeof keyword_tags / sizeof keyword_tags[0];
        while (k < nt && strncmp(w, keyword_tags[k].tag, strlen(keyword_tags[k].tag)) != 0) k++;
        if (k == nt) {
            put(b, "%c", *w++);
            continue;
        }
        for (const mpx_opt *o = keyword_tags[k].table + keyword_tags[k].first; o->name; o++) {
            put(b, "%s[", o == keyword_tags[k].table + keyword_tags[k].first ? "" : " ");
            put_option(b, o);
            put(b, "]");
        }
        w += strlen(keyword_tags[k].tag);
    }
}

static size_t usage_of(const mpx_command *c, char *buf, size_t n) {
    sbuf b = {buf, n, 0};
    buf[0] = '\0';
    put(&b, "%s", c->name);
    if (c->words && *c->words) {
        put(&b, " ");
        put_words(&b, c->words);
    }
    for (const mpx_opt *o = c->options; o && o->name; o++) {
        if (o->flags & MPX_OPT_ALONE || o->needs) continue;
        bool seen = false; /* an earlier option of its group wrote the group */
        for (const mpx_opt *q = c->options; o->group && q != o; q++) seen |= q->group == o->group;
        if (seen) continue;
        put(&b, " [");
        put_nested(&b, c, o);
        for (const mpx_opt *q = o + 1; o->group && q->name; q++)
            if (q->group == o->group && !(q->flags & MPX_OPT_ALONE)) {
                put(&b, " | ");
                put_nested(&b, c, q);
            }
        put(&b, "]");
    }
    for (const mpx_opt *o = c->options; o && o->name; o++)
        if (o->flags & MPX_OPT_ALONE) {
            put(&b, " | %s ", c->name);
            put_option(&b, o);
        }
    return b.len;
}

const char *mpx_command_usage(const mpx_command *c) {
    /* Made once per row and kept: the rows are constant. */
    static char *made[128];
    int count = 0;
    const mpx_command *all = mpx_commands(&count);
    long k = c - all;
    char buf[1024];
    if (k < 0 || k >= count || k >= (long)(sizeof made / sizeof made[0])) {
        usage_of(c, buf, sizeof buf); /* not a row of the table (tests): no cache */
        static char other[1024];
        memcpy(other, buf, sizeof other);
        return other;
    }
    if (!made[k]) {
        size_t len = usage_of(c, buf, sizeof buf);
        made[k] = malloc(len + 1);
        if (!made[k]) return c->name;
        memcpy(made[k], buf, len + 1);
    }
    return made[k];
}

/* One line per option: "  --top <n>   the n worst rows (default 20)". */
static void put_lines(sbuf *b, const mpx_opt *o) {
    for (; o && o->name; o++) {
        char head[128];
        sbuf h = {head, sizeof head, 0};
        head[0] = '\0';
        put_option(&h, o);
        put(b, "  %-26s%s%s", head, h.len >= 26 ? "\n                            " : "", o->help ? o->help : "");
        if (o->def) put(b, " (default %s)", o->def);
        put(b, "\n");
    }
}

size_t repl_options_help(const mpx_command *c, char *buf, size_t n) {
    sbuf b = {buf, n, 0};
    buf[0] = '\0';
    if (c->options) {
        put(&b, "options:\n");
        put_lines(&b, c->options);
    }
    for (size_t k = 0; c->words && k < sizeof keyword_tags / sizeof keyword_tags[0]; k++)
        if (keyword_tags[k].title && strstr(c->words, keyword_tags[k].tag)) {
            put(&b, "%s%s:\n", b.len ? "\n" : "", keyword_tags[k].title);
            put_lines(&b, keyword_tags[k].table + keyword_tags[k].first);
        }
    return b.len;
}

/* ---- parsing ----------------------------------------------------------------- */

/* What a value of type t is, for refusals ("a whole number from 1"). */
static void expected(const mpx_opt *o, mpx_opt_type t, char *buf, size_t n) {
    sbuf b = {buf, n, 0};
    buf[0] = '\0';
    bool bounded = o->min != 0 || o->max != 0 || (o->flags & MPX_OPT_ABOVE);
    if (t == MPX_OPT_INT) put(&b, "a whole number");
    else put(&b, "a number");
    if (!bounded) return;
    /* whole bounds written out (1000000000000000, not 1e+15) */
    const char *fmt_min = o->min == floor(o->min) && fabs(o->min) < 1e16 ? "%.0f" : "%.15g";
    const char *fmt_max = o->max == floor(o->max) && fabs(o->max) < 1e16 ? "%.0f" : "%.15g";
    char lo[40], hi[40];
    snprintf(lo, sizeof lo, fmt_min, o->min);
    snprintf(hi, sizeof hi, fmt_max, o->max);
    if (o->flags & MPX_OPT_ABOVE) put(&b, " more than %s", lo);
    else put(&b, " from %s", lo);
    if (o->max != 0) put(&b, "%s %s", o->flags & MPX_OPT_ABOVE ? ", up to" : " to", hi);
}

static mpx_status parse_value(const mpx_opt *o, mpx_opt_type t, const char *w, mpx_opt_value *v, bool second,
                              mpx_error *err) {
    mpx_status st;
    switch (t) {
    case MPX_OPT_INT:
    case MPX_OPT_NUMBER: {
        double d;
        /* a second value is named by its meta: "--around depth" */
        char what[96];
        if (second && o->meta2) {
            snprintf(what, sizeof what, "%s %s", o->name, o->meta2 + (o->meta2[0] == '<'));
            char *gt = strchr(what, '>');
            if (gt) *gt = '\0';
        } else snprintf(what, sizeof what, "%s", o->name);
        if ((st = mpx_explore_parse_number(w, what, &d, err))) return st;
        bool bounded = o->min != 0 || o->max != 0 || (o->flags & MPX_OPT_ABOVE);
        bool bad = !isfinite(d) || (t == MPX_OPT_INT && (d != floor(d) || fabs(d) > 1e15));
        if (bounded && ((o->flags & MPX_OPT_ABOVE) ? !(d > o->min) : d < o->min)) bad = true;
        if (bounded && o->max != 0 && d > o->max) bad = true;
        if (bad) {
            char exp[96];
            expected(o, t, exp, sizeof exp);
            return mpx_error_set(err, MPX_E_ARG, "%s %s: expected %s", what, w, exp);
        }
        if (second) v->n = (long long)d;
        else {
            v->d = d;
            v->i = (long long)d;
        }
        return MPX_OK;
    }
    case MPX_OPT_CHOICE: {
        int k = choice_index(o, w);
        if (k < 0) {
            char list[512], hint[128], c[2][64];
            sbuf b = {list, sizeof list, 0};
            list[0] = '\0';
            put_choices(&b, o, ", ", " or ");
            /* the hint keeps a pointer to its best: two buffers, the best
             * one kept while the next is read into the other */
            mpx_name_hint h;
            mpx_name_hint_init(&h, w);
            for (int i = 0, b2 = 0; repl_opt_choice(o, i, c[b2], sizeof c[b2]); i++) {
                mpx_name_hint_add(&h, c[b2]);
                if (h.best == c[b2]) b2 = 1 - b2;
            }
            return mpx_error_set(err, MPX_E_ARG, "%s: \"%s\" is not %s%s", o->name, w, list,
                                 mpx_name_hint_tail(&h, hint, sizeof hint));
        }
        v->i = k;
        return MPX_OK;
    }
    case MPX_OPT_SHARD: {
        int k, n;
        if ((st = repl_parse_shard(w, o->name, &k, &n, err))) return st;
        v->i = k;
        v->n = n;
        return MPX_OK;
    }
    case MPX_OPT_FLAG:
    case MPX_OPT_TEXT:
    case MPX_OPT_PATH:
    case MPX_OPT_NODE:
    case MPX_OPT_NODES: return MPX_OK;
    }
    return MPX_OK;
}

mpx_status repl_usage_verror(mpx_error *err, const mpx_command *c, const char *name, const char *fmt, va_list ap) {
    char detail[512] = "";
    if (fmt) vsnprintf(detail, sizeof detail, fmt, ap);
    return mpx_error_set(err, MPX_E_ARG, "%s%susage: %s", detail, *detail ? "; " : "", c ? mpx_command_usage(c) : name);
}

/* A refusal ending in the row's usage (the row itself: tests parse rows
 * that are not in the table). */
__attribute__((format(printf, 3, 4))) static mpx_status refuse(const mpx_command *c, mpx_error *err, const char *fmt,
                                                               ...) {
    va_list ap;
    va_start(ap, fmt);
    mpx_status st = repl_usage_verror(err, c, c->name, fmt, ap);
    va_end(ap);
    return st;
}

/* The option's row in c and its index. */
static int index_of(const mpx_command *c, const mpx_opt *o) { return (int)(o - c->options); }

mpx_status mpx_command_parse(const mpx_command *c, int argc, char **argv, mpx_cmd_args *out, mpx_error *err) {
    memset(out, 0, sizeof *out);
    out->argc = argc;
    out->argv = argv;
    bool grammar = c->min_args == MPX_ARGS_GRAMMAR;
    mpx_status st;
    int values = 0; /* words that are options or their values */
    for (int i = 1; i < argc; i++) {
        const char *w = argv[i];
        if (strncmp(w, "--", 2) != 0 || !w[2] || (grammar && !c->options)) {
            if (!grammar) {
                int last = (int)(sizeof c->args / sizeof c->args[0]) - 1;
                mpx_word_kind kind = c->args[out->n < last ? out->n : last];
                bool ok = kind != MPX_WORD_CHOICE || repl_choice_find(c->choices, w) >= 0;
                if (!ok) return refuse(c, err, "\"%s\" is not %s", w, c->choices);
            }
            if (out->n >= MPX_ARGS_MAX) return refuse(c, err, "too many words");
            out->word[out->n++] = argv[i];
            continue;
        }
        const mpx_opt *o = mpx_command_option(c, w);
        if (!o) {
            mpx_name_hint h;
            mpx_name_hint_init(&h, w);
            for (const mpx_opt *k = c->options; k && k->name; k++) mpx_name_hint_add(&h, k->name);
            char hint[96];
            mpx_name_hint_tail(&h, hint, sizeof hint);
            return refuse(c, err, "unknown option \"%s\"%s", w, hint);
        }
        mpx_opt_value *v = &out->opt[index_of(c, o)];
        if (v->count && !(o->flags & MPX_OPT_REPEAT)) return refuse(c, err, "%s given twice", w);
        if (v->count >= MPX_OPT_REPEAT_MAX)
            return mpx_error_set(err, MPX_E_ARG, "%s: at most %d times", w, MPX_OPT_REPEAT_MAX);
        int takes = repl_opt_takes(o, i, argc, argv);
        if (i + takes >= argc)
            return refuse(c, err, "%s needs %s", w, takes == 2 ? "two values" : "a value");
        v->given = true;
        if (takes >= 1) {
            if ((st = parse_value(o, o->type, argv[i + 1], v, false, err))) return st;
            v->text = argv[i + 1];
            v->has_value = true;
            v->all[v->count] = argv[i + 1];
        }
        if (takes == 2 && (st = parse_value(o, o->type2, argv[i + 2], v, true, err))) return st;
        v->count++;
        values += 1 + takes;
        i += takes;
    }
    /* What holds between options: alone, needs, groups. */
    for (const mpx_opt *o = c->options; o && o->name; o++) {
        const mpx_opt_value *v = &out->opt[index_of(c, o)];
        if (!v->given) continue;
        if (o->flags & MPX_OPT_ALONE && (out->n > 0 || values != 1 + (v->has_value ? 1 : 0)))
            return refuse(c, err, "%s goes alone", o->name);
        const mpx_opt *need = o->needs ? mpx_command_option(c, o->needs) : NULL;
        if (need && !out->opt[index_of(c, need)].given) {
            char what[128];
            sbuf b = {what, sizeof what, 0};
            put_option(&b, need);
            return mpx_error_set(err, MPX_E_ARG, "%s needs %s", o->name, what);
        }
        for (const mpx_opt *q = o + 1; o->group && q->name; q++)
            if (q->group == o->group && out->opt[index_of(c, q)].given)
                return mpx_error_set(err, MPX_E_ARG, "%s or %s, not both", o->name, q->name);
    }
    /* Defaults, parsed as typed values are (test_options checks each row's). */
    for (const mpx_opt *o = c->options; o && o->name; o++) {
        mpx_opt_value *v = &out->opt[index_of(c, o)];
        if (v->has_value || !o->def) continue;
        if ((st = parse_value(o, o->type, o->def, v, false, err))) return st;
        v->text = o->def;
        v->has_value = true;
    }
    if (!grammar && (out->n < c->min_args || (c->max_args >= 0 && out->n > c->max_args)))
        return refuse(c, err, NULL);
    return MPX_OK;
}

/* ---- keyword options: `limit 32 shuffle 7` among a grammar's words -------------- */

mpx_status repl_keywords_parse(const mpx_opt *table, int *argc, char **argv, mpx_opt_value *out, mpx_error *err) {
    int n_rows = 0;
    while (table[n_rows].name) n_rows++;
    memset(out, 0, (size_t)n_rows * sizeof *out);
    mpx_status st;
    int o = 0;
    for (int i = 0; i < *argc; i++) {
        const mpx_opt *k = NULL;
        for (const mpx_opt *r = table; r->name && !k; r++)
            if (strcmp(r->name, argv[i]) == 0) k = r;
        if (!k) {
            argv[o++] = argv[i]; /* the grammar's own word */
            continue;
        }
        mpx_opt_value *v = &out[k - table];
        if (v->count) return mpx_error_set(err, MPX_E_ARG, "%s given twice", k->name);
        v->given = true;
        v->count = 1;
        if (k->type == MPX_OPT_FLAG) continue;
        if (i + 1 >= *argc) {
            char what[128];
            sbuf b = {what, sizeof what, 0};
            what[0] = '\0';
            put_option(&b, k);
            return mpx_error_set(err, MPX_E_ARG, "%s needs a value (%s)", k->name, what);
        }
        if ((st = parse_value(k, k->type, argv[++i], v, false, err))) return st;
        v->text = v->all[0] = argv[i];
        v->has_value = true;
    }
    *argc = o;
    for (const mpx_opt *k = table; k->name; k++) {
        mpx_opt_value *v = &out[k - table];
        if (v->has_value || !k->def) continue;
        if ((st = parse_value(k, k->type, k->def, v, false, err))) return st;
        v->text = k->def;
        v->has_value = true;
    }
    return MPX_OK;
}

mpx_status repl_keywords_only(const mpx_opt *table, const char *what, int argc, char **argv, mpx_opt_value *out,
                              mpx_error *err) {
    int rest = argc;
    mpx_status st = repl_keywords_parse(table, &rest, argv, out, err);
    if (st || !rest) return st;
    char list[256], hint[96];
    sbuf b = {list, sizeof list, 0};
    list[0] = '\0';
    mpx_name_hint h;
    mpx_name_hint_init(&h, argv[0]);
    for (const mpx_opt *k = table; k->name; k++) {
        put(&b, "%s%s", k == table ? "" : ", ", k->name);
        mpx_name_hint_add(&h, k->name);
    }
    return mpx_error_set(err, MPX_E_ARG, "unknown %s option \"%s\" (%s)%s", what, argv[0], list,
                         mpx_name_hint_tail(&h, hint, sizeof hint));
}
