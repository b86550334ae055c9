/* lex.c - the words of the command language, in one place: how a line splits
 * into words, where a comment or a ; starts, how a word is written back (save),
 * and how long a script line may be.
 *
 * Quoting is a shell's: 'single quotes' keep everything literally, "double
 * quotes" keep blanks and read \" and \\ as escapes, and quoted and unquoted
 * parts join into one word (a"b c"d is `ab cd`). Outside quotes a backslash is
 * literal, unlike a shell: colour rules escape glob characters with it
 * (name:conv\*), and Windows-free paths never need it. */
#include "repl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* At p, inside quote q: an escape (\" or \\, double quotes only)? */
static bool escape_at(char q, const char *p) { return q == '"' && p[0] == '\\' && (p[1] == '"' || p[1] == '\\'); }

mpx_status repl_split_words(char *line, int *argc, char **argv, int max, bool lenient, mpx_error *err) {
    int n = 0;
    char *p = line;
    for (;;) {
        while (blank(*p)) p++;
        if (!*p) break;
        if (n == max) return mpx_error_set(err, MPX_E_ARG, "too many words (more than %d)", max);
        char *out = p; /* the word is written over itself: it only shrinks */
        argv[n++] = out;
        while (*p && !blank(*p)) {
            if (*p != '\'' && *p != '"') {
                *out++ = *p++;
                continue;
            }
            char q = *p;
            size_t col = (size_t)(p - line) + 1;
            p++;
            while (*p && *p != q) {
                if (escape_at(q, p)) p++;
                *out++ = *p++;
            }
            if (!*p) {
                if (lenient) break;
                return mpx_error_set(err, MPX_E_ARG, "unterminated %s quote (opened at column %zu)",
                                     q == '"' ? "double" : "single", col);
            }
            p++;
        }
        bool more = *p != '\0';
        if (more) p++;
        *out = '\0';
        if (!more) break;
    }
    *argc = n;
    return MPX_OK;
}

char *repl_find_unquoted(char *text, const char *set) {
    char q = 0;
    for (char *p = text; *p; p++) {
        if (q) {
            if (escape_at(q, p)) p++;
            else if (*p == q) q = 0;
        } else if (*p == '\'' || *p == '"') {
            q = *p;
        } else if (strchr(set, *p)) {
            return p;
        }
    }
    return NULL;
}

void repl_strip_comment(char *text) {
    char *hash = repl_find_unquoted(text, "#");
    if (hash) *hash = '\0';
}

/* Plain when nothing in it needs quoting; else in single quotes (nothing is
 * special inside them) unless it holds one; else in double quotes with \"
 * and \\. A trailing backslash is quoted too: the script reader would take it
 * for a continuation. Line breaks cannot be written (a line is a command). */
bool repl_quote_word(char *buf, size_t n, const char *w) {
    if (strpbrk(w, "\n\r")) return false;
    size_t len = strlen(w);
    bool plain = len > 0 && !strpbrk(w, " \t#;'\"") && w[len - 1] != '\\';
    size_t o = 0;
    if (plain) {
        if (len + 1 > n) return false;
        memcpy(buf, w, len + 1);
        return true;
    }
    char q = strchr(w, '\'') ? '"' : '\'';
    if (o + 1 >= n) return false;
    buf[o++] = q;
    for (const char *c = w; *c; c++) {
        if (o + 4 >= n) return false;
        if (q == '"' && (*c == '"' || *c == '\\')) buf[o++] = '\\';
        buf[o++] = *c;
    }
    buf[o++] = q;
    buf[o] = '\0';
    return true;
}

char repl_last_word(const char *line, size_t *start, char *buf, size_t n) {
    char q = 0;
    size_t o = 0;
    *start = 0;
    if (n) buf[0] = '\0';
    for (size_t i = 0; line[i]; i++) {
        const char *p = line + i;
        if (!q && blank(*p)) {
            *start = i + 1;
            o = 0;
        } else if (!q && (*p == '\'' || *p == '"')) {
            q = *p;
        } else if (q && *p == q) {
            q = 0;
        } else {
            if (q && escape_at(q, p)) p++, i++;
            if (o + 1 < n) buf[o++] = *p;
        }
        if (n) buf[o] = '\0';
    }
    return q;
}

/* Append cand inside quote q (which is open) to buf at *o. */
static bool put_quoted(char *buf, size_t n, size_t *o, char q, const char *cand) {
    for (const char *c = cand; *c; c++) {
        if (*o + 6 >= n) return false;
        if (q == '"' && (*c == '"' || *c == '\\')) buf[(*o)++] = '\\';
        if (q == '\'' && *c == '\'') { /* '...' holds no ': close, "'", reopen */
            memcpy(buf + *o, "'\"'\"'", 5);
            *o += 5;
            continue;
        }
        buf[(*o)++] = *c;
    }
    buf[*o] = '\0';
    return true;
}

bool repl_complete_quoted(const char *typed, char q, const char *cand, size_t done, bool open, char *buf, size_t n) {
    size_t tl = strlen(typed), o = 0;
    const char *rest = cand + (done < strlen(cand) ? done : strlen(cand));
    bool special = strpbrk(cand, " \t#;'\"") != NULL;
    if (!q && !special) { /* nothing to quote: the typed text and the rest */
        if (tl + strlen(rest) + 1 > n) return false;
        snprintf(buf, n, "%s%s", typed, rest);
        return true;
    }
    if (!q && !strpbrk(typed, "'\"")) {
        /* Nothing quoted yet: the whole word, as save writes it. */
        if (!repl_quote_word(buf, n, cand)) return false;
        if (open) buf[strlen(buf) - 1] = '\0';
        return true;
    }
    if (tl + 2 > n) return false;
    memcpy(buf, typed, tl);
    o = tl;
    if (!q) buf[o++] = q = strchr(rest, '\'') ? '"' : '\'';
    buf[o] = '\0';
    if (!put_quoted(buf, n, &o, q, rest)) return false;
    if (!open) buf[o++] = q, buf[o] = '\0';
    return true;
}

/* A byte at a time: a line of a gigabyte costs REPL_LINE_MAX of memory and
 * an error, not a gigabyte; a NUL byte (fgets would hide it, and a stream of
 * them, /dev/zero, would never end a line) stops the reading there. */
int repl_read_line(FILE *in, char **buf, size_t *cap, size_t *len) {
    if (!*buf) {
        *cap = 256;
        *buf = malloc(*cap);
        if (!*buf) return -2;
    }
    size_t n = 0;
    int ch;
    while ((ch = getc(in)) != EOF) {
        if (ch == '\0') return 2;
        if (n >= REPL_LINE_MAX) {
            ungetc(ch, in);
            return 1;
        }
        if (n + 2 > *cap) {
            size_t grown = *cap * 2 > REPL_LINE_MAX + 2 ? REPL_LINE_MAX + 2 : *cap * 2;
            char *g = realloc(*buf, grown);
            if (!g) return -2;
            *buf = g;
            *cap = grown;
        }
        /* A lone CR ends a line too (a script saved with old Mac line
         * endings ran as one line); CR LF is one end, the CR dropped. */
        if (ch == '\r') {
            const int next = getc(in);
            if (next != '\n' && next != EOF) ungetc(next, in);
            ch = '\n';
        }
        (*buf)[n++] = (char)ch;
        if (ch == '\n') break;
    }
    if (ch == EOF && n == 0) return -1;
    (*buf)[n] = '\0';
    *len = n;
    return 0;
}

int repl_skip_line(FILE *in) {
    int ch;
    while ((ch = getc(in)) != EOF && ch != '\n')
        if (ch == '\0') return 2;
    return 0;
}
