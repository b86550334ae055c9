/* names.c - "did you mean": the closest of a set of names to one a person
 * typed. Every place that looks a name up (commands, nodes, tensors, ops,
 * figures, formats, metrics, settings) feeds its candidates through one
 * mpx_name_hint, so the rule for a plausible typo is the same everywhere. */
#include "mpx_graph.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { NAME_MAX_LEN = 255 };

/* Optimal string alignment (Levenshtein plus adjacent transpositions: fp61
 * is one slip from fp16), case-insensitive; three rows of the table. */
size_t mpx_name_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > NAME_MAX_LEN || lb > NAME_MAX_LEN) return SIZE_MAX;
    size_t r0[NAME_MAX_LEN + 1], r1[NAME_MAX_LEN + 1], r2[NAME_MAX_LEN + 1];
    size_t *prev2 = r0, *prev = r1, *cur = r2;
    for (size_t j = 0; j <= lb; j++) prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        int ca = tolower((unsigned char)a[i - 1]);
        for (size_t j = 1; j <= lb; j++) {
            int cb = tolower((unsigned char)b[j - 1]);
            size_t best = prev[j - 1] + (ca != cb);
            if (prev[j] + 1 < best) best = prev[j] + 1;
            if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) && tolower((unsigned char)a[i - 2]) == cb &&
                prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1;
            cur[j] = best;
        }
        size_t *t = prev2;
        prev2 = prev, prev = cur, cur = t;
    }
    return prev[lb];
}

void mpx_name_hint_init(mpx_name_hint *h, const char *typed) {
    h->typed = typed;
    h->best = NULL;
    h->dist = SIZE_MAX;
}

void mpx_name_hint_add(mpx_name_hint *h, const char *cand) {
    if (!cand || !*cand) return;
    size_t d = mpx_name_distance(h->typed, cand);
    if (d < h->dist) h->dist = d, h->best = cand;
}

/* A case difference only (distance 0), one slip, two in a name of four
 * letters or more (colr: colour), or up to a third of a longer name: beyond
 * that a suggestion is noise. */
const char *mpx_name_hint_get(const mpx_name_hint *h) {
    if (!h->best) return NULL;
    size_t n = strlen(h->typed);
    return h->dist <= 1 || (h->dist <= 2 && n >= 4) || h->dist * 3 <= n ? h->best : NULL;
}

const char *mpx_name_hint_tail(const mpx_name_hint *h, char *buf, size_t n) {
    const char *b = mpx_name_hint_get(h);
    if (!n) return buf;
    if (b) snprintf(buf, n, "; did you mean %s?", b);
    else buf[0] = '\0';
    return buf;
}

const char *mpx_op_suggest(const char *typed, const mpx_graph *g) {
    mpx_name_hint h;
    mpx_name_hint_init(&h, typed);
    for (int i = 1; i < MPX_OP_COUNT; i++) mpx_name_hint_add(&h, mpx_op_name((mpx_op)i));
    for (int i = 0; g && i < g->n_nodes; i++) mpx_name_hint_add(&h, g->nodes[i]->op_type);
    return mpx_name_hint_get(&h);
}
