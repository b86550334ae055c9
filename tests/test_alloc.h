/* test_alloc.h - allocations for test models built by hand (protobuf-c
 * structs), all freed at once after each test case. Header-only (static):
 * test_onnx and test_robust share it. */
#ifndef MPX_TEST_ALLOC_H
#define MPX_TEST_ALLOC_H

#include <stdlib.h>
#include <string.h>

static void **pool;
static size_t npool, cappool;

/* Zeroed memory that lives until pool_free; aborts when memory runs out. */
static void *tal(size_t n) {
    void *p = calloc(1, n ? n : 1);
    if (!p) abort();
    if (npool == cappool) {
        cappool = cappool ? cappool * 2 : 256;
        pool = realloc(pool, cappool * sizeof *pool);
        if (!pool) abort();
    }
    pool[npool++] = p;
    return p;
}

static void pool_free(void) {
    for (size_t i = 0; i < npool; i++) free(pool[i]);
    npool = 0;
}

static char *tstr(const char *s) {
    char *p = tal(strlen(s) + 1);
    strcpy(p, s);
    return p;
}

#endif
