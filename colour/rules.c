/* rules.c - parsing `colour`, `accum` and `fuse` rules, and evaluating them on a node.
 *
 * A hand-written recursive-descent parser over the text as typed, so every
 * error can name the column and what was expected there. Grammar:
 *
 *   rule     := ("colour" | "color") selector COLOUR [when]
 *             | "accum" selector FORMAT option* [when]
 *             | "fuse" selector ["when" or]
 *   (in accum and fuse rules a selector's items may be patterns: patterns.c)
 *   when     := "when" or ["else" (COLOUR | FORMAT option*)]
 *   option   := "bias-first" | "round-sum" | "welford" | "steps" | "reciprocal" | "sequential"
 *             | "sleef-lanes"
 *               (accum_options)
 *   selector := item ("," item)*
 *   item     := "*" | "name:" (GLOB | '"' chars '"' | "'" chars "'") | OPTYPE
 *   or       := and ("or" and)*
 *   and      := not ("and" not)*
 *   not      := "not" not | "(" or ")" | operand CMP operand
 *   operand  := NUMBER | figure
 *
 * Keywords, colours and formats are case-insensitive. */
#include "colour_internal.h"

#include <ctype.h>
#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { MAX_DEPTH = 64 };

/* ---- figures ---------------------------------------------------------------- */

static const struct {
    const char *name;
    fig kind;
} figures[] = {
    {"macs", FIG_MACS},     {"params", FIG_PARAMS}, {"in_elems", FIG_IN_ELEMS},
    {"out_elems", FIG_OUT_ELEMS}, {"in_ch", FIG_IN_CH}, {"out_ch", FIG_OUT_CH},
    {"kernel", FIG_KERNEL}, {"group", FIG_GROUP},   {"k", FIG_K},
    {"absmax", FIG_ABSMAX}, {"const_in", FIG_CONST_IN}, {"transposed_b", FIG_TRANSPOSED_B},
};
const char *mpx_rule_figure_at(size_t i) { return i < sizeof figures / sizeof figures[0] ? figures[i].name : NULL; }

/* The lists messages show, made from the tables that define the names
 * (figures above, colours in defaults.c, formats in numerics). */
typedef struct name_list {
    char s[256];
} name_list;

static name_list figure_list(void) {
    name_list l = {""};
    size_t o = 0;
    for (size_t i = 0; mpx_rule_figure_at(i) && o < sizeof l.s; i++)
        o += (size_t)snprintf(l.s + o, sizeof l.s - o, "%s, ", mpx_rule_figure_at(i));
    if (o < sizeof l.s) snprintf(l.s + o, sizeof l.s - o, "attr.<name>");
    return l;
}

static name_list colour_list(void) {
    name_list l = {""};
    size_t o = 0;
    for (int c = 1; c < MPX_COLOUR_COUNT && o < sizeof l.s; c++)
        o += (size_t)snprintf(l.s + o, sizeof l.s - o, "%s%s", c > 1 ? ", " : "", mpx_colour_name((mpx_colour)c));
    return l;
}

static name_list format_list(void) {
    name_list l = {""};
    size_t o = 0;
    for (size_t i = 0; mpx_format_at(i) && o < sizeof l.s; i++)
        o += (size_t)snprintf(l.s + o, sizeof l.s - o, "%s%s", i ? ", " : "", mpx_format_at(i)->name);
    return l;
}

static const char *fig_name(fig f) {
    for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++)
        if (figures[i].kind == f) return figures[i].name;
    return f == FIG_ATTR ? "attr" : "number";
}

/* ---- did you mean ----------------------------------------------------------- */

static const char *suggest_figure(const char *name) {
    mpx_name_hint h;
    mpx_name_hint_init(&h, name);
    for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++) mpx_name_hint_add(&h, figures[i].name);
    return mpx_name_hint_get(&h);
}

/* A misspelt colour or format ("gren"): the closest name. */
static const char *suggest_target(const char *typed, bool colour) {
    mpx_name_hint h;
    mpx_name_hint_init(&h, typed);
    if (colour)
        for (int c = 1; c < MPX_COLOUR_COUNT; c++) mpx_name_hint_add(&h, mpx_colour_name((mpx_colour)c));
    else
        for (size_t i = 0; mpx_format_at(i); i++) mpx_name_hint_add(&h, mpx_format_at(i)->name);
    return mpx_name_hint_get(&h);
}

/* ---- the parser ------------------------------------------------------------ */

typedef struct parser {
    const char *s;
    size_t i;
    mpx_arena *a;
    const mpx_graph *g;
    mpx_error *err;
    mpx_rule *rule;
    int depth;
} parser;

static mpx_status fail(parser *p, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static mpx_status fail(parser *p, size_t at, const char *fmt, ...) {
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* The column is in the message too: scripts print "file:line: msg". */
    return mpx_error_at(p->err, MPX_E_PARSE, NULL, 0, (int)at + 1, "column %d: %s", (int)at + 1,
                        msg);
}

static void skip_ws(parser *p) {
    while (p->s[p->i] && isspace((unsigned char)p->s[p->i])) p->i++;
}

static bool at_end(parser *p) {
    skip_ws(p);
    return p->s[p->i] == '\0';
}

/* "found "xyz"" or "found end of rule": what stands at the cursor. */
static const char *found(parser *p, char *buf, size_t n) {
    const char *t = p->s + p->i;
    if (!*t) return "found end of rule";
    size_t len = 0;
    while (t[len] && !isspace((unsigned char)t[len]) && len < 24) len++;
    snprintf(buf, n, "found \"%.*s\"", (int)len, t);
    return buf;
}

/* "; "adn" is not a keyword: did you mean and?" when the word at the cursor
 * is close to one of the keywords (NULL-ended) the rule could go on with,
 * else "". */
static const char *keyword_hint(parser *p, const char *const *kws, char *buf, size_t n) {
    const char *t = p->s + p->i;
    size_t len = 0;
    while (isalpha((unsigned char)t[len]) && len < 24) len++;
    buf[0] = '\0';
    if (!len) return buf;
    char w[32];
    snprintf(w, sizeof w, "%.*s", (int)len, t);
    mpx_name_hint h;
    mpx_name_hint_init(&h, w);
    for (int k = 0; kws[k]; k++) mpx_name_hint_add(&h, kws[k]);
    const char *best = mpx_name_hint_get(&h);
    if (best) snprintf(buf, n, "; \"%s\" is not a keyword: did you mean %s?", w, best);
    return buf;
}

static bool is_ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool is_ident_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '.'; }

/* Length of the identifier at the cursor (0 if none); letters, digits, _ and .
 * (for attr.<name>). */
static size_t ident_len(parser *p) {
    const char *t = p->s + p->i;
    if (!is_ident_start(*t)) return 0;
    size_t n = 1;
    while (is_ident_char(t[n])) n++;
    return n;
}

/* The keyword kw (case-insensitive) as a whole word at the cursor. */
static bool peek_kw(parser *p, const char *kw) {
    skip_ws(p);
    size_t n = ident_len(p);
    return n == strlen(kw) && strncasecmp(p->s + p->i, kw, n) == 0;
}

static bool take_kw(parser *p, const char *kw) {
    if (!peek_kw(p, kw)) return false;
    p->i += strlen(kw);
    return true;
}

static char *word_dup(parser *p, size_t at, size_t n) {
    return mpx_arena_strndup(p->a, p->s + at, n);
}

/* The one name glob matches when it has no wildcard ('*', '?', '['): its
 * text with fnmatch's escapes taken out; NULL for a glob with one (or a
 * trailing backslash), and without memory, so that fnmatch decides. */
static const char *glob_literal(mpx_arena *a, const char *glob) {
    size_t n = strlen(glob), o = 0;
    char *lit = mpx_arena_alloc(a, n + 1);
    if (!lit) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (glob[i] == '*' || glob[i] == '?' || glob[i] == '[') return NULL;
        if (glob[i] == '\\' && ++i == n) return NULL;
        lit[o++] = glob[i];
    }
    lit[o] = '\0';
    return lit;
}

static mpx_status nomem(parser *p) {
    return mpx_error_set(p->err, MPX_E_NOMEM, "out of memory parsing a rule");
}

/* ---- selector --------------------------------------------------------------- */

static bool graph_has_op_type(const mpx_graph *g, const char *name) {
    for (int i = 0; g && i < g->n_nodes; i++)
        if (strcmp(g->nodes[i]->op_type, name) == 0) return true;
    return false;
}

static mpx_status parse_item(parser *p, sel_item *it) {
    skip_ws(p);
    size_t at = p->i;
    const char *t = p->s + at;
    char fb[64];
    if (*t == '*' && (t[1] == '\0' || t[1] == ',' || isspace((unsigned char)t[1]))) {
        it->kind = SEL_ALL;
        p->i++;
        return MPX_OK;
    }
    if (strncasecmp(t, "name:", 5) == 0) {
        p->i += 5;
        size_t start = p->i, len;
        char q = p->s[p->i];
        if (q == '"' || q == '\'') {
            const char *close = strchr(p->s + p->i + 1, q);
            if (!close) return fail(p, p->i, q == '"' ? "unterminated quote in name:\"...\"" : "unterminated quote in name:'...'");
            start = p->i + 1;
            len = (size_t)(close - (p->s + start));
            p->i = (size_t)(close - p->s) + 1;
        } else {
            while (p->s[p->i] && p->s[p->i] != ',' && !isspace((unsigned char)p->s[p->i])) p->i++;
            len = p->i - start;
        }
        if (len == 0) return fail(p, start, "expected a node-name glob after name: (as in name:/backbone/*)");
        it->kind = SEL_NAME;
        it->s = word_dup(p, start, len);
        if (!it->s) return nomem(p);
        it->lit = glob_literal(p->a, it->s);
        return MPX_OK;
    }
    size_t n = 0;
    while (isalnum((unsigned char)t[n]) || t[n] == '_') n++;
    if (n == 0)
        return fail(p, at, "expected a selector (an op type such as Conv, a list Conv,Gemm, * or "
                           "name:<glob>), %s", found(p, fb, sizeof fb));
    if (t[n] && t[n] != ',' && !isspace((unsigned char)t[n]))
        return fail(p, at + n, "unexpected '%c' in the op type \"%.*s\"", t[n], (int)n, t);
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)n, t);
    p->i += n;
    /* In a fuse or accum rule a pattern's name is the pattern (an op of
     * that name, ONNX's Gelu, is one node, which rounds once already and
     * has no sum or steps an accum rule could change). */
    int pat = p->rule->kind != MPX_RULE_COLOUR ? mpx_fuse_pattern_find_(t, n) : -1;
    if (pat >= 0) {
        it->kind = SEL_PATTERN;
        it->pattern = pat;
        return MPX_OK;
    }
    mpx_op op = mpx_op_from_name_ci(name);
    if (op != MPX_OP_UNKNOWN) {
        it->kind = SEL_OP;
        it->op = op;
        return MPX_OK;
    }
    if (graph_has_op_type(p->g, name)) {
        it->kind = SEL_OPTYPE;
        it->s = word_dup(p, at, n);
        return it->s ? MPX_OK : nomem(p);
    }
    const char *hint = mpx_op_suggest(name, p->g);
    char tail[160] = "";
    if (hint) snprintf(tail, sizeof tail, "; did you mean %s?", hint);
    return fail(p, at, "unknown op type \"%s\": not an op mpx knows%s%s", name,
                p->g ? " and no node of the model has it" : "", tail);
}

static mpx_status parse_selector(parser *p) {
    sel_item items[64];
    int n = 0;
    for (;;) {
        if (n == (int)(sizeof items / sizeof items[0]))
            return fail(p, p->i, "too many selector items (at most 64)");
        mpx_status st = parse_item(p, &items[n++]);
        if (st != MPX_OK) return st;
        skip_ws(p);
        if (p->s[p->i] != ',') break;
        p->i++;
    }
    p->rule->sel = mpx_arena_calloc(p->a, (size_t)n, sizeof *p->rule->sel);
    if (!p->rule->sel) return nomem(p);
    memcpy(p->rule->sel, items, (size_t)n * sizeof items[0]);
    p->rule->n_sel = n;
    return MPX_OK;
}

/* The colour or (accum rules) format word at the cursor. */
static mpx_status parse_target(parser *p, const char *after, mpx_colour *c, const mpx_format **f) {
    skip_ws(p);
    size_t at = p->i;
    const char *t = p->s + at;
    size_t n = 0;
    while (isalnum((unsigned char)t[n]) || t[n] == '_') n++;
    char w[64], fb[64];
    snprintf(w, sizeof w, "%.*s", (int)(n < 60 ? n : 60), t);
    bool colour = p->rule->kind == MPX_RULE_COLOUR;
    if (n > 0 && n < 60) {
        if (colour && (*c = mpx_colour_from_name(w)) != MPX_COLOUR_NONE) {
            p->i += n;
            return MPX_OK;
        }
        if (!colour && (*f = mpx_format_by_name(w)) != NULL) {
            p->i += n;
            return MPX_OK;
        }
    }
    const char *hint = "";
    if (colour && n && mpx_op_from_name_ci(w) != MPX_OP_UNKNOWN)
        hint = " (op types in a selector list are separated by commas)";
    else if (colour && n && mpx_format_by_name(w))
        hint = " (a format goes in an accum rule, or in `target`)";
    char tail[96];
    const char *near = n && !*hint ? suggest_target(w, colour) : NULL;
    if (near) {
        snprintf(tail, sizeof tail, "; did you mean %s?", near);
        hint = tail;
    }
    if (colour)
        return fail(p, at, "expected a colour (%s) after %s, %s%s", colour_list().s, after,
                    found(p, fb, sizeof fb), hint);
    return fail(p, at, "expected a format (%s) after %s, %s%s", format_list().s, after, found(p, fb, sizeof fb),
                hint);
}

/* ---- expressions ------------------------------------------------------------ */

static mpx_status parse_or(parser *p, expr **out);

static expr *new_expr(parser *p, expr_kind k) {
    expr *e = mpx_arena_alloc(p->a, sizeof *e);
    if (e) e->kind = k;
    return e;
}

/* Digits, an optional fraction and exponent, then an optional K/k/M/G/T. */
static mpx_status parse_number(parser *p, double *out) {
    size_t at = p->i, j = at;
    const char *s = p->s;
    if (s[j] == '-' || s[j] == '+') j++;
    size_t digits = 0;
    while (isdigit((unsigned char)s[j])) j++, digits++;
    if (s[j] == '.') {
        j++;
        while (isdigit((unsigned char)s[j])) j++, digits++;
    }
    if (digits == 0) return fail(p, at, "expected a number");
    if ((s[j] == 'e' || s[j] == 'E') &&
        (isdigit((unsigned char)s[j + 1]) ||
         ((s[j + 1] == '-' || s[j + 1] == '+') && isdigit((unsigned char)s[j + 2])))) {
        j += 2;
        while (isdigit((unsigned char)s[j])) j++;
    }
    char buf[64];
    if (j - at >= sizeof buf) return fail(p, at, "number too long");
    memcpy(buf, s + at, j - at);
    buf[j - at] = '\0';
    double v = strtod(buf, NULL);
    double scale = 1;
    switch (s[j]) {
    case 'K': case 'k': scale = 1e3; j++; break;
    case 'M': scale = 1e6; j++; break;
    case 'G': scale = 1e9; j++; break;
    case 'T': scale = 1e12; j++; break;
    default: break;
    }
    if (is_ident_char(s[j]))
        return fail(p, j, "unexpected '%c' after the number \"%.*s\" (suffixes: K, M, G, T)", s[j],
                    (int)(j - at), s + at);
    if (!isfinite(v * scale)) return fail(p, at, "number out of range");
    *out = v * scale;
    p->i = j;
    return MPX_OK;
}

static mpx_status parse_operand(parser *p, operand *o, const char *after) {
    skip_ws(p);
    size_t at = p->i;
    char c = p->s[at], fb[64];
    if (isdigit((unsigned char)c) || c == '.' || c == '-' || c == '+') {
        o->kind = FIG_NUM;
        return parse_number(p, &o->num);
    }
    size_t n = ident_len(p);
    if (n == 0)
        return fail(p, at, "expected a number or a figure (%s)%s%s, %s", figure_list().s,
                    after ? " after " : "", after ? after : "", found(p, fb, sizeof fb));
    char w[128];
    snprintf(w, sizeof w, "%.*s", (int)(n < 120 ? n : 120), p->s + at);
    if (strncasecmp(w, "attr.", 5) == 0) {
        if (!w[5] || !is_ident_start(w[5]))
            return fail(p, at + 5, "expected an attribute name after \"attr.\" (as in attr.group)");
        o->kind = FIG_ATTR;
        o->attr = word_dup(p, at + 5, n - 5);
        p->i += n;
        return o->attr ? MPX_OK : nomem(p);
    }
    for (size_t k = 0; k < sizeof figures / sizeof figures[0]; k++) {
        if (strcasecmp(w, figures[k].name) == 0) {
            o->kind = figures[k].kind;
            if (o->kind == FIG_ABSMAX) p->rule->measured = true;
            p->i += n;
            return MPX_OK;
        }
    }
    const char *hint = suggest_figure(w);
    char tail[96] = "";
    if (hint) snprintf(tail, sizeof tail, "; did you mean %s?", hint);
    return fail(p, at, "unknown figure \"%s\" (figures: %s)%s", w, figure_list().s, tail);
}

static bool take_cmp(parser *p, cmp_op *op) {
    skip_ws(p);
    const char *t = p->s + p->i;
    static const struct { const char *s; cmp_op op; } ops[] = {
        {">=", CMP_GE}, {"<=", CMP_LE}, {"==", CMP_EQ}, {"!=", CMP_NE},
        {">", CMP_GT},  {"<", CMP_LT},  {"=", CMP_EQ},
    };
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        size_t n = strlen(ops[k].s);
        if (strncmp(t, ops[k].s, n) == 0) {
            *op = ops[k].op;
            p->i += n;
            return true;
        }
    }
    return false;
}

static mpx_status parse_not(parser *p, expr **out) {
    if (++p->depth > MAX_DEPTH) return fail(p, p->i, "expression nested too deeply");
    mpx_status st;
    skip_ws(p);
    size_t at = p->i;
    char fb[64];
    if (take_kw(p, "not")) {
        expr *e = new_expr(p, EX_NOT);
        if (!e) return nomem(p);
        if ((st = parse_not(p, &e->l)) != MPX_OK) return st;
        *out = e;
    } else if (p->s[at] == '(') {
        p->i++;
        if ((st = parse_or(p, out)) != MPX_OK) return st;
        skip_ws(p);
        if (p->s[p->i] != ')')
            return fail(p, p->i, "expected ')' to close the '(' at column %d, or and/or, %s",
                        (int)at + 1, found(p, fb, sizeof fb));
        p->i++;
    } else {
        expr *e = new_expr(p, EX_CMP);
        if (!e) return nomem(p);
        if ((st = parse_operand(p, &e->a, NULL)) != MPX_OK) return st;
        char lhs[64];
        snprintf(lhs, sizeof lhs, "\"%.*s\"", (int)(p->i - at < 40 ? p->i - at : 40), p->s + at);
        if (!take_cmp(p, &e->cmp))
            return fail(p, p->i, "expected a comparison (<, <=, >, >=, ==, !=) after %s, %s", lhs,
                        found(p, fb, sizeof fb));
        if ((st = parse_operand(p, &e->b, "the comparison")) != MPX_OK) return st;
        *out = e;
    }
    p->depth--;
    return MPX_OK;
}

static mpx_status parse_and(parser *p, expr **out) {
    mpx_status st = parse_not(p, out);
    while (st == MPX_OK && take_kw(p, "and")) {
        expr *e = new_expr(p, EX_AND);
        if (!e) return nomem(p);
        e->l = *out;
        st = parse_not(p, &e->r);
        *out = e;
    }
    return st;
}

static mpx_status parse_or(parser *p, expr **out) {
    mpx_status st = parse_and(p, out);
    while (st == MPX_OK && take_kw(p, "or")) {
        expr *e = new_expr(p, EX_OR);
        if (!e) return nomem(p);
        e->l = *out;
        st = parse_and(p, &e->r);
        *out = e;
    }
    return st;
}

/* ---- accum options ------------------------------------------------------------ */

/* The options an accum rule may give after a format: how a kernel's sum,
 * or an op's internal steps, deviate from mpx's default where a runtime
 * does otherwise (mpx_accum's flags; docs/fidelity.md says which runtime). */
static const struct {
    const char *name;
    unsigned flag;
    const char *fp32; /* with fp32 what mpx does anyway (refused there); NULL: allowed */
    const char *low;  /* with a rounded format: why it is refused there; NULL: allowed */
} accum_options[] = {
    {"bias-first", MPX_ACC_BIAS_FIRST, "fp32 sums add the bias last", NULL},
    {"round-sum", MPX_ACC_ROUND_SUM, NULL, NULL},
    {"welford", MPX_ACC_WELFORD, "fp32 statistics are mpx's default", NULL},
    {"steps", MPX_ACC_STEPS, "the steps are rounded to it, and fp32 rounds nothing", NULL},
    {"reciprocal", MPX_ACC_RECIPROCAL, "the reciprocal is rounded to it, and fp32 rounds nothing", NULL},
    {"sequential", MPX_ACC_SEQUENTIAL, NULL, NULL},
    {"sleef-lanes", MPX_ACC_SLEEF_LANES, NULL, "PyTorch's softmax it mirrors sums in fp32"},
};

const char *mpx_rules_accum_option(int k, unsigned *flag) {
    if (k < 0 || (size_t)k >= sizeof accum_options / sizeof accum_options[0]) return NULL;
    if (flag) *flag = accum_options[k].flag;
    return accum_options[k].name;
}

const char *mpx_rules_accum_flags_str(unsigned flags, const char *sep, char *buf, size_t n) {
    size_t len = 0;
    unsigned f;
    if (n) buf[0] = '\0';
    for (int k = 0; mpx_rules_accum_option(k, &f); k++)
        if ((flags & f) && len < n) {
            int w = snprintf(buf + len, n - len, "%s%s", len ? sep : "", accum_options[k].name);
            if (w > 0) len += (size_t)w;
        }
    return buf;
}

/* Zero or more accum options after the format f at the cursor, into *flags. */
static mpx_status parse_accum_options(parser *p, const mpx_format *f, unsigned *flags) {
    *flags = 0;
    for (;;) {
        skip_ws(p);
        size_t at = p->i, n = 0;
        while (isalnum((unsigned char)p->s[at + n]) || p->s[at + n] == '-' || p->s[at + n] == '_') n++;
        size_t k = 0, nk = sizeof accum_options / sizeof accum_options[0];
        while (k < nk && !(strlen(accum_options[k].name) == n &&
                           strncasecmp(p->s + at, accum_options[k].name, n) == 0))
            k++;
        if (n == 0 || k == nk) return MPX_OK;
        if (accum_options[k].fp32 && f->kind == MPX_FMT_FP32)
            return fail(p, at, "%s needs a rounded accumulate format (fp16, bf16, tf32...): %s",
                        accum_options[k].name, accum_options[k].fp32);
        if (accum_options[k].low && f->kind != MPX_FMT_FP32)
            return fail(p, at, "%s needs fp32 accumulation: %s", accum_options[k].name, accum_options[k].low);
        *flags |= accum_options[k].flag;
        p->i = at + n;
    }
}

/* ---- a whole rule ------------------------------------------------------------- */

static mpx_status parse_rule(parser *p) {
    mpx_rule *r = p->rule;
    char fb[64];
    skip_ws(p);
    size_t at = p->i;
    if (take_kw(p, "colour") || take_kw(p, "color"))
        r->kind = MPX_RULE_COLOUR;
    else if (take_kw(p, "accum"))
        r->kind = MPX_RULE_ACCUM;
    else if (take_kw(p, "fuse"))
        r->kind = MPX_RULE_FUSE;
    else
        return fail(p, at, "expected \"colour\", \"accum\" or \"fuse\" to start a rule, %s",
                    found(p, fb, sizeof fb));
    skip_ws(p);
    if (!p->s[p->i])
        return fail(p, p->i, "expected a selector (an op type such as Conv, a list Conv,Gemm, * or "
                             "name:<glob>), found end of rule");
    mpx_status st = parse_selector(p);
    if (st != MPX_OK) return st;
    if (r->kind != MPX_RULE_FUSE && (st = parse_target(p, "the selector", &r->colour, &r->format)) != MPX_OK)
        return st;
    if (r->kind == MPX_RULE_ACCUM && (st = parse_accum_options(p, r->format, &r->flags)) != MPX_OK) return st;
    if (at_end(p)) return MPX_OK;
    char kh[96];
    static const char *const when_kw[] = {"when", NULL};
    static const char *const more_kw[] = {"and", "or", "else", NULL};
    if (!take_kw(p, "when"))
        return fail(p, p->i, "expected \"when\" or end of rule, %s%s", found(p, fb, sizeof fb),
                    keyword_hint(p, when_kw, kh, sizeof kh));
    if (at_end(p))
        return fail(p, p->i, "expected a condition after \"when\" (as in macs >= 1M), found end of rule");
    if ((st = parse_or(p, &r->when)) != MPX_OK) return st;
    if (at_end(p)) return MPX_OK;
    if (r->kind == MPX_RULE_FUSE && peek_kw(p, "else"))
        return fail(p, p->i, "a fuse rule has no else: the nodes its condition does not hold for are not fused");
    if (take_kw(p, "else")) {
        r->has_else = true;
        if ((st = parse_target(p, "\"else\"", &r->else_colour, &r->else_format)) != MPX_OK) return st;
        if (r->kind == MPX_RULE_ACCUM && (st = parse_accum_options(p, r->else_format, &r->else_flags)) != MPX_OK)
            return st;
        if (at_end(p)) return MPX_OK;
        return fail(p, p->i, "expected end of rule after the else %s, %s",
                    r->kind == MPX_RULE_COLOUR ? "colour" : "format", found(p, fb, sizeof fb));
    }
    return fail(p, p->i, "expected \"and\", \"or\", \"else\" or end of rule, %s%s", found(p, fb, sizeof fb),
                keyword_hint(p, more_kw, kh, sizeof kh));
}

static void rule_unref(mpx_rule *r) {
    if (r && --r->refs == 0) mpx_arena_free(r->arena);
}

/* ---- rule sets -------------------------------------------------------------- */

mpx_rules *mpx_rules_new(void) { return calloc(1, sizeof(mpx_rules)); }

static bool reserve(mpx_rules *r, int n) {
    if (n <= r->cap) return true;
    int cap = r->cap ? r->cap * 2 : 8;
    while (cap < n) cap *= 2;
    mpx_rule **v = realloc(r->v, (size_t)cap * sizeof *v);
    if (!v) return false;
    r->v = v;
    r->cap = cap;
    return true;
}

mpx_rules *mpx_rules_copy(const mpx_rules *r) {
    mpx_rules *c = mpx_rules_new();
    if (!c) return NULL;
    if (!r || r->n == 0) return c;
    if (!reserve(c, r->n)) {
        free(c);
        return NULL;
    }
    for (int i = 0; i < r->n; i++) {
        c->v[i] = r->v[i];
        c->v[i]->refs++;
    }
    c->n = r->n;
    return c;
}

void mpx_rules_free(mpx_rules *r) {
    if (!r) return;
    for (int i = 0; i < r->n; i++) rule_unref(r->v[i]);
    free(r->v);
    free(r);
}

int mpx_rules_count(const mpx_rules *r) { return r ? r->n : 0; }

const mpx_rule *mpx_rules_at_(const mpx_rules *r, int i) {
    return r && i >= 0 && i < r->n ? r->v[i] : NULL;
}

const char *mpx_rules_text(const mpx_rules *r, int i) {
    const mpx_rule *x = mpx_rules_at_(r, i);
    return x ? x->text : NULL;
}

mpx_rule_kind mpx_rules_kind(const mpx_rules *r, int i) {
    const mpx_rule *x = mpx_rules_at_(r, i);
    return x ? x->kind : MPX_RULE_COLOUR;
}

bool mpx_rules_uses_measured(const mpx_rules *r, int i) {
    const mpx_rule *x = mpx_rules_at_(r, i);
    return x && x->measured;
}

mpx_status mpx_rules_add(mpx_rules *r, const char *text, const mpx_graph *g, mpx_error *err) {
    if (!r || !text) return mpx_error_set(err, MPX_E_ARG, "no rule text");
    if (!reserve(r, r->n + 1)) return mpx_error_set(err, MPX_E_NOMEM, "out of memory adding a rule");
    mpx_arena *a = mpx_arena_new();
    mpx_rule *rule = a ? mpx_arena_alloc(a, sizeof *rule) : NULL;
    if (!rule) {
        mpx_arena_free(a);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory adding a rule");
    }
    rule->arena = a;
    rule->refs = 1;
    /* A comment (# to the end) is kept in the rule's text, not parsed: search
     * says in it why it added the rule, and `rules`, `why` and `save` show it. */
    const char *hash = strchr(text, '#');
    char *body = hash ? mpx_arena_strndup(a, text, (size_t)(hash - text)) : NULL;
    if (hash && !body) {
        mpx_arena_free(a);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory adding a rule");
    }
    parser p = {.s = body ? body : text, .a = a, .g = g, .err = err, .rule = rule};
    mpx_status st = parse_rule(&p);
    if (st == MPX_OK) {
        size_t b = 0, e = strlen(text);
        while (b < e && isspace((unsigned char)text[b])) b++;
        while (e > b && isspace((unsigned char)text[e - 1])) e--;
        rule->text = mpx_arena_strndup(a, text + b, e - b);
        if (!rule->text) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory adding a rule");
    }
    if (st != MPX_OK) {
        mpx_arena_free(a);
        return st;
    }
    r->v[r->n++] = rule;
    return MPX_OK;
}

/* The name:<glob> matching exactly this name: glob characters escaped
 * (fnmatch reads a backslash as an escape); a comma or a blank, which would
 * end the selector in the rule's text, matches as '?', so that the text
 * (`rules`, `save`) read back selects what the rule selects. Into buf of
 * 2 * strlen(name) + 1 bytes. */
static void exact_glob(const char *name, char *buf) {
    size_t o = 0;
    for (const char *c = name; *c; c++) {
        if (*c == '*' || *c == '?' || *c == '[' || *c == '\\') buf[o++] = '\\';
        buf[o++] = (*c == ',' || *c == ' ' || *c == '\t') ? '?' : *c;
    }
    buf[o] = '\0';
}

mpx_status mpx_rules_add_node(mpx_rules *r, const mpx_node *n, mpx_colour colour, const char *comment,
                              mpx_error *err) {
    if (!r || !n || !n->name) return mpx_error_set(err, MPX_E_ARG, "no node to colour");
    if ((unsigned)colour >= MPX_COLOUR_COUNT || colour == MPX_COLOUR_NONE)
        return mpx_error_set(err, MPX_E_ARG, "no colour for node %s", n->name);
    if (comment && strchr(comment, '\n'))
        return mpx_error_set(err, MPX_E_ARG, "a rule's comment is one line (node %s)", n->name);
    if (!reserve(r, r->n + 1)) return mpx_error_set(err, MPX_E_NOMEM, "out of memory adding a rule");
    mpx_arena *a = mpx_arena_new();
    mpx_rule *rule = a ? mpx_arena_alloc(a, sizeof *rule) : NULL;
    sel_item *sel = rule ? mpx_arena_calloc(a, 1, sizeof *sel) : NULL;
    size_t len = strlen(n->name);
    char *glob = sel ? mpx_arena_alloc(a, 2 * len + 1) : NULL;
    const char *cname = mpx_colour_name(colour);
    size_t cap = 2 * len + strlen(cname) + (comment ? strlen(comment) : 0) + 32;
    char *text = glob ? mpx_arena_alloc(a, cap) : NULL;
    if (!text) {
        mpx_arena_free(a);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory adding a rule");
    }
    exact_glob(n->name, glob);
    snprintf(text, cap, "colour name:%s %s%s%s", glob, cname, comment ? "  # " : "", comment ? comment : "");
    *sel = (sel_item){.kind = SEL_NAME, .s = glob, .lit = glob_literal(a, glob)};
    *rule = (mpx_rule){.refs = 1, .arena = a, .kind = MPX_RULE_COLOUR, .text = text, .n_sel = 1, .sel = sel,
                       .colour = colour};
    r->v[r->n++] = rule;
    return MPX_OK;
}

mpx_status mpx_rules_remove(mpx_rules *r, int i, mpx_error *err) {
    if (!r || i < 0 || i >= r->n)
        return mpx_error_set(err, MPX_E_ARG, "no rule #%d (there %s %d)", i + 1,
                             r && r->n == 1 ? "is" : "are", r ? r->n : 0);
    rule_unref(r->v[i]);
    memmove(r->v + i, r->v + i + 1, (size_t)(r->n - i - 1) * sizeof *r->v);
    r->n--;
    return MPX_OK;
}

/* ---- evaluation ----------------------------------------------------------------- */

bool mpx_rule_selects_(const mpx_rule *r, const mpx_node *n) {
    for (int i = 0; i < r->n_sel; i++) {
        const sel_item *s = &r->sel[i];
        switch (s->kind) {
        case SEL_ALL: return true;
        case SEL_OP: if (n->op == s->op) return true; break;
        case SEL_OPTYPE: if (strcmp(n->op_type, s->s) == 0) return true; break;
        case SEL_NAME:
            if (s->lit ? strcmp(s->lit, n->name) == 0 : fnmatch(s->s, n->name, 0) == 0) return true;
            break;
        case SEL_PATTERN: if (mpx_fuse_pattern_inner_(s->pattern, n)) return true; break;
        }
    }
    return false;
}

/* The operand's value for n; false when unknown. */
/* transposed_b: 1 when n's second input is a Transpose that puts the last
 * two axes in the opposite order of its input's (perm[r-1] < perm[r-2]; no
 * perm reverses all), the second operand of a product read transposed
 * (attention's Q K^T: torch's k.transpose(-2, -1), which a runtime's GEMM
 * takes as a transposed operand, not as the copy ONNX writes). */
static int transposed_b(const mpx_node *n) {
    const mpx_node *t = n->n_inputs >= 2 && n->inputs[1] ? n->inputs[1]->producer : NULL;
    if (!t || t->op != MPX_OP_Transpose) return 0;
    const int64_t *perm = NULL;
    int r = mpx_node_attr_ints(t, "perm", &perm);
    if (r <= 0 || !perm) return t->n_outputs > 0 && t->outputs[0] && t->outputs[0]->rank >= 2;
    return r >= 2 && perm[r - 1] < perm[r - 2];
}

static bool value_of(const operand *o, const mpx_node *n, const double *absmax, double *v) {
    int64_t x;
    switch (o->kind) {
    case FIG_NUM: *v = o->num; return true;
    case FIG_MACS: x = n->cost.macs; break;
    case FIG_PARAMS: x = n->cost.params; break;
    case FIG_IN_ELEMS: x = n->cost.in_elems; break;
    case FIG_OUT_ELEMS: x = n->cost.out_elems; break;
    case FIG_IN_CH: x = n->cost.in_ch; break;
    case FIG_OUT_CH: x = n->cost.out_ch; break;
    case FIG_KERNEL: x = n->cost.kernel; break;
    case FIG_GROUP: x = n->cost.group; break;
    case FIG_K: x = n->cost.k; break;
    case FIG_CONST_IN: /* float inputs that are weights: 0 for a product of two activations */
        x = 0;
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] && mpx_dtype_is_float(n->inputs[i]->dtype) && mpx_tensor_is_weight_(n->inputs[i])) x++;
        break;
    case FIG_TRANSPOSED_B: x = transposed_b(n); break;
    case FIG_ABSMAX:
        if (!absmax || isnan(absmax[n->index])) return false;
        *v = absmax[n->index];
        return true;
    case FIG_ATTR: {
        const mpx_attr *a = mpx_node_attr(n, o->attr);
        if (!a) return false;
        if (a->type == MPX_ATTR_INT) *v = (double)a->i;
        else if (a->type == MPX_ATTR_FLOAT) *v = a->f;
        else if (a->type == MPX_ATTR_INTS && a->n == 1) *v = (double)a->ints[0];
        else if (a->type == MPX_ATTR_FLOATS && a->n == 1) *v = a->floats[0];
        else return false;
        return !isnan(*v);
    }
    default: return false;
    }
    if (x < 0) return false;
    *v = (double)x;
    return true;
}

static tri eval(const expr *e, const mpx_node *n, const double *absmax) {
    switch (e->kind) {
    case EX_NOT: {
        tri t = eval(e->l, n, absmax);
        return t == TRI_UNKNOWN ? t : t == TRI_TRUE ? TRI_FALSE : TRI_TRUE;
    }
    case EX_AND: {
        tri a = eval(e->l, n, absmax), b = eval(e->r, n, absmax);
        if (a == TRI_FALSE || b == TRI_FALSE) return TRI_FALSE;
        return a == TRI_TRUE && b == TRI_TRUE ? TRI_TRUE : TRI_UNKNOWN;
    }
    case EX_OR: {
        tri a = eval(e->l, n, absmax), b = eval(e->r, n, absmax);
        if (a == TRI_TRUE || b == TRI_TRUE) return TRI_TRUE;
        return a == TRI_FALSE && b == TRI_FALSE ? TRI_FALSE : TRI_UNKNOWN;
    }
    case EX_CMP: {
        double a, b;
        if (!value_of(&e->a, n, absmax, &a) || !value_of(&e->b, n, absmax, &b)) return TRI_UNKNOWN;
        bool r = false;
        switch (e->cmp) {
        case CMP_LT: r = a < b; break;
        case CMP_LE: r = a <= b; break;
        case CMP_GT: r = a > b; break;
        case CMP_GE: r = a >= b; break;
        case CMP_EQ: r = a == b; break;
        case CMP_NE: r = a != b; break;
        }
        return r ? TRI_TRUE : TRI_FALSE;
    }
    }
    return TRI_UNKNOWN;
}

tri mpx_rule_eval_(const mpx_rule *r, const mpx_node *n, const double *absmax) {
    return r->when ? eval(r->when, n, absmax) : TRI_TRUE;
}

/* ---- figures, for why ----------------------------------------------------- */

typedef struct figbuf {
    mpx_text_ t;
    const operand *seen[32];
    int n_seen;
} figbuf;

static bool same_figure(const operand *a, const operand *b) {
    return a->kind == b->kind && (a->kind != FIG_ATTR || strcmp(a->attr, b->attr) == 0);
}

static void add_figure(figbuf *f, const operand *o, const mpx_node *n, const double *absmax) {
    if (o->kind == FIG_NUM) return;
    for (int i = 0; i < f->n_seen; i++)
        if (same_figure(f->seen[i], o)) return;
    if (f->n_seen < 32) f->seen[f->n_seen++] = o;
    const char *name = o->kind == FIG_ATTR ? o->attr : fig_name(o->kind);
    const char *pre = o->kind == FIG_ATTR ? "attr." : "";
    if (f->t.len) mpx_text_printf_(&f->t, ", ");
    double v;
    if (value_of(o, n, absmax, &v))
        mpx_text_printf_(&f->t, "%s%s = %.15g", pre, name, v);
    else if (o->kind == FIG_ABSMAX)
        mpx_text_printf_(&f->t, "absmax not measured");
    else if (o->kind == FIG_ATTR)
        mpx_text_printf_(&f->t, "attr.%s absent or not a number", name);
    else
        mpx_text_printf_(&f->t, "%s unknown (shapes not bound)", name);
}

static void walk_figures(figbuf *f, const expr *e, const mpx_node *n, const double *absmax) {
    if (!e) return;
    if (e->kind == EX_CMP) {
        add_figure(f, &e->a, n, absmax);
        add_figure(f, &e->b, n, absmax);
        return;
    }
    walk_figures(f, e->l, n, absmax);
    walk_figures(f, e->r, n, absmax);
}

size_t mpx_rule_figures_(const mpx_rule *r, const mpx_node *n, const double *absmax, char *buf,
                         size_t size) {
    figbuf f = {.t = {.buf = buf, .size = size}};
    if (size) buf[0] = '\0';
    walk_figures(&f, r->when, n, absmax);
    return f.t.len;
}

typedef struct body_count {
    const mpx_rule *rule;
    int n;
    const mpx_node *first, *owner;
} body_count;

static bool count_visit(void *ctx, const mpx_node *n, const mpx_node *owner) {
    body_count *b = ctx;
    if (n->op == MPX_OP_Constant || !mpx_rule_selects_(b->rule, n)) return true;
    if (!b->n++) b->first = n, b->owner = owner;
    return true;
}

const char *mpx_rules_name_tail(const mpx_rules *r, int i, const mpx_graph *g, char *buf, size_t n) {
    if (n) buf[0] = '\0';
    if (!r || i < 0 || i >= r->n || !g || !n) return buf;
    const mpx_rule *rule = r->v[i];
    for (int k = 0; k < rule->n_sel; k++) {
        const sel_item *s = &rule->sel[k];
        if (s->kind != SEL_NAME) continue;
        bool any = false;
        for (int j = 0; j < g->n_nodes && !any; j++) any = fnmatch(s->s, g->nodes[j]->name, 0) == 0;
        if (any) continue;
        mpx_name_hint h;
        mpx_name_hint_init(&h, s->s);
        for (int j = 0; j < g->n_nodes; j++) mpx_name_hint_add(&h, g->nodes[j]->name);
        const char *best = mpx_name_hint_get(&h);
        if (!best) continue;
        /* Written back as the rule reads it: quoted when it holds a blank or a comma. */
        bool quote = strpbrk(best, " \t,") != NULL;
        snprintf(buf, n, "; did you mean name:%s%s%s?", quote ? "\"" : "", best, quote ? "\"" : "");
        return buf;
    }
    return buf;
}

int mpx_rules_body_matches(const mpx_rules *r, int i, const mpx_graph *g, const mpx_node **first,
                           const mpx_node **owner) {
    body_count b = {r && i >= 0 && i < r->n ? r->v[i] : NULL, 0, NULL, NULL};
    if (b.rule) mpx_graph_each_body_node(g, count_visit, &b);
    if (first) *first = b.first;
    if (owner) *owner = b.owner;
    return b.n;
}
