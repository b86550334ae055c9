/* arena.c - one bump allocator per model, freed once.
 *
 * A model's tensors, nodes, names and weights all die together, so a bump
 * allocator avoids thousands of small frees and makes "no leak on any error
 * path" trivial for the loaders. Large requests get a block of their own so a
 * 10 MB weight does not waste the rest of a chunk. */
#include "mpx_graph.h"

#include <stdlib.h>
#include <string.h>

enum { CHUNK = 64 * 1024, ALIGN = 16 };

typedef struct block {
    struct block *next;
    size_t used, cap;
    /* payload follows, ALIGN-aligned */
} block;

struct mpx_arena {
    block *head;  /* current chunk (bump from here) */
    block *large; /* dedicated blocks for big requests */
    size_t bytes;
};

#define HDR (((sizeof(block) + ALIGN - 1) / ALIGN) * ALIGN)

static block *block_new(size_t cap) {
    if (cap > SIZE_MAX - HDR) return NULL;
    block *b = malloc(HDR + cap);
    if (!b) return NULL;
    b->next = NULL;
    b->used = 0;
    b->cap = cap;
    return b;
}

mpx_arena *mpx_arena_new(void) {
    mpx_arena *a = calloc(1, sizeof *a);
    return a;
}

static void free_list(block *b) {
    while (b) {
        block *n = b->next;
        free(b);
        b = n;
    }
}

void mpx_arena_free(mpx_arena *a) {
    if (!a) return;
    free_list(a->head);
    free_list(a->large);
    free(a);
}

void *mpx_arena_alloc(mpx_arena *a, size_t size) {
    if (!a) return NULL;
    if (size == 0) size = 1;
    if (size > SIZE_MAX - ALIGN) return NULL;
    size_t need = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (need > CHUNK / 4) {
        block *b = block_new(need);
        if (!b) return NULL;
        b->next = a->large;
        a->large = b;
        a->bytes += need;
        void *p = (char *)b + HDR;
        memset(p, 0, need);
        return p;
    }
    if (!a->head || a->head->cap - a->head->used < need) {
        block *b = block_new(CHUNK);
        if (!b) return NULL;
        b->next = a->head;
        a->head = b;
    }
    void *p = (char *)a->head + HDR + a->head->used;
    a->head->used += need;
    a->bytes += need;
    memset(p, 0, need);
    return p;
}

void *mpx_arena_calloc(mpx_arena *a, size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    return mpx_arena_alloc(a, n * size);
}

char *mpx_arena_strndup(mpx_arena *a, const char *s, size_t n) {
    if (!s) s = "";
    size_t len = strnlen(s, n);
    char *p = mpx_arena_alloc(a, len + 1);
    if (!p) return NULL;
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *mpx_arena_strdup(mpx_arena *a, const char *s) {
    if (!s) s = "";
    return mpx_arena_strndup(a, s, strlen(s));
}

size_t mpx_arena_bytes(const mpx_arena *a) { return a ? a->bytes : 0; }
