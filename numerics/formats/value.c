/* value.c - runtime tensor values: allocation, views of graph constants, copies. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* mremap */
#endif
#include "mpx_formats.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#define MPX_HAVE_MREMAP 1
#endif

/* A run allocates and frees activations of up to tens of MB per node. glibc
 * would hand each large block back to the kernel (mmap/munmap) and fault it
 * in again on the next run: on PP-OCRv4 det that page-faulting cost more
 * system time than all the kernels. So: blocks up to 32 MB (glibc's largest
 * mmap threshold; mallopt refuses more, and an earlier refused 1 GB left
 * every block over 128 KB to mmap, since setting the trim threshold also
 * freezes the mmap threshold) come from the heap, which is not trimmed; and
 * one arena serves every thread (a worker thread's arena is an mmap'd heap
 * that glibc shrinks eagerly). Measured on a det search of 30 evaluations:
 * 955k page faults and 18.7 s before, 201k and 9.6 s after. */
void mpx_numerics_keep_memory(void) {
#ifdef __GLIBC__
    mallopt(M_ARENA_MAX, 1);
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

/* The faults left are the first touch of every page a session uses (its
 * weights, their packings, its activations): 54k on a ResNet-18 report's
 * first run, a fifth of its time. glibc gives its heap to the kernel's
 * transparent huge pages (one fault per 2 MB; Debian's default THP mode,
 * "madvise", gives them only where asked) when its glibc.malloc.hugetlb
 * tunable is 1, and reads tunables from the environment at start only:
 * with it, 1.3k faults and the first run 20-24% faster (ResNet-18 and
 * PP-OCRv4 det, medians of 5 to 8 fresh processes, loaded machine); peak
 * RSS within 2%. Advising our own large blocks instead (madvise after
 * each allocation) caught only part of them: the heap grows in steps whose
 * 2 MB ranges straddle its end, and the model's weights are read in
 * before any run (-7%). A tunable the environment already sets (also
 * hugetlb=0) is left as it is. */
void mpx_numerics_huge_pages(char *const *argv) {
#if defined(__GLIBC__) && defined(__linux__)
    const char *t = getenv("GLIBC_TUNABLES");
    if (t && strstr(t, "glibc.malloc.hugetlb")) return;
    char val[1024], exe[4096];
    const int n = t && *t ? snprintf(val, sizeof val, "%s:glibc.malloc.hugetlb=1", t)
                          : snprintf(val, sizeof val, "glibc.malloc.hugetlb=1");
    /* the program's own file by its name (not /proc/self/exe, whose name
     * would become the process's in ps and /proc/PID/comm) */
    const ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || (size_t)n >= sizeof val || k <= 0 || (size_t)k >= sizeof exe - 1 || !argv || !argv[0]) return;
    exe[k] = 0;
    /* Only the program itself: under a tool that runs it (valgrind, the
     * dynamic loader called by hand, an emulator) the file is the tool's,
     * and starting it again with the program's arguments would be wrong. */
    const char *a = strrchr(argv[0], '/'), *e = strrchr(exe, '/');
    if (strcmp(a ? a + 1 : argv[0], e ? e + 1 : exe) != 0) return;
    if (setenv("GLIBC_TUNABLES", val, 1) == 0) execv(exe, argv);
    unsetenv("GLIBC_TUNABLES"); /* the exec failed: go on as before */
    if (t) setenv("GLIBC_TUNABLES", t, 1);
#else
    (void)argv;
#endif
}

/* v's dtype and shape, no buffer yet. */
static mpx_status value_shape(mpx_value *v, mpx_dtype dtype, int rank, const int64_t *dims, mpx_error *err) {
    if (rank < 0 || rank > MPX_MAX_RANK)
        return mpx_error_set(err, MPX_E_LIMIT, "rank %d is beyond mpx's limit of %d", rank,
                             MPX_MAX_RANK);
    int64_t n = 1;
    mpx_status st = mpx_dims_product(rank, dims, &n, err);
    if (st != MPX_OK) return st;
    if (n < 0) return mpx_error_set(err, MPX_E_SHAPE, "a dimension is negative");
    memset(v, 0, sizeof *v);
    v->dtype = dtype;
    v->rank = rank;
    for (int i = 0; i < rank; i++) v->dims[i] = dims[i];
    v->n = n;
    return MPX_OK;
}

/* A value too big for the memory the machine has free is refused before
 * it is allocated: malloc would succeed (Linux overcommits) and the first
 * touch of its pages would wake the OOM killer, which may take another
 * process too (a Loop doubling a tensor each trip: 26 trips to 8 GB). Only
 * large blocks ask (/proc/meminfo is read per call, a few microseconds). */
enum { BIG_BLOCK = 64 << 20 };

static mpx_status fits_memory(size_t bytes, int64_t n, mpx_error *err) {
#ifdef __linux__
    if (bytes < BIG_BLOCK) return MPX_OK;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return MPX_OK;
    char line[128];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    fclose(f);
    if (!kb || bytes / 1024 <= kb) return MPX_OK;
    return mpx_error_set(err, MPX_E_NOMEM, "out of memory: a value of %lld elements (%.1f GB) is more than the %.1f GB "
                         "of memory the machine has available", (long long)n, (double)bytes / (1 << 30),
                         (double)kb / (1 << 20));
#else
    (void)bytes, (void)n, (void)err;
    return MPX_OK;
#endif
}

static mpx_status value_alloc(mpx_value *v, mpx_dtype dtype, int rank, const int64_t *dims,
                              bool zero, mpx_error *err) {
    mpx_status st = value_shape(v, dtype, rank, dims, err);
    if (st != MPX_OK) return st;
    const int64_t n = v->n;
    /* calloc(0) may return NULL; keep a valid pointer so "absent" stays n < 0. */
    size_t cnt = n ? (size_t)n : 1u;
    const bool dbl = dtype == MPX_DT_DOUBLE, flt = !dbl && mpx_dtype_is_float(dtype);
    size_t each = dbl ? sizeof *v->d : flt ? sizeof *v->f : sizeof *v->i;
    if (cnt <= SIZE_MAX / each && (st = fits_memory(cnt * each, n, err))) {
        v->n = -1;
        return st;
    }
    void *p;
    if (!zero) {
        /* malloc of memory the heap reuses is not cleared: calloc's memset
         * was an eighth of an fp32 forward. */
        p = cnt <= SIZE_MAX / each ? malloc(cnt * each) : NULL;
#ifdef MPX_POISON_RAW
        /* Sanitizer builds: all-ones bytes (NaN, -1) so that a kernel that
         * reads an element it did not write shows in the tests. */
        if (p) memset(p, 0xff, cnt * each);
#endif
    } else {
        p = calloc(cnt, each);
    }
    if (dbl) v->d = p;
    else if (flt) v->f = p;
    else v->i = p;
    if (!p) {
        v->n = -1;
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory allocating %lld elements",
                             (long long)n);
    }
    return MPX_OK;
}

mpx_status mpx_value_alloc(mpx_value *v, mpx_dtype dtype, int rank, const int64_t *dims,
                           mpx_error *err) {
    return value_alloc(v, dtype, rank, dims, true, err);
}

mpx_status mpx_value_alloc_raw(mpx_value *v, mpx_dtype dtype, int rank, const int64_t *dims,
                               mpx_error *err) {
    return value_alloc(v, dtype, rank, dims, false, err);
}

#ifdef MPX_HAVE_MREMAP
static size_t page_round(size_t b) {
    long ps = sysconf(_SC_PAGESIZE);
    size_t p = ps > 0 ? (size_t)ps : 4096u;
    return b > SIZE_MAX - p ? 0 : (b + p - 1) / p * p;
}
#endif

#ifdef MPX_HAVE_MREMAP
/* Mappings freed, kept for the next values made in one (at most
 * MAP_KEPT_N of them, MAP_KEPT_BYTES in all), as the heap keeps its freed
 * blocks (mpx_numerics_keep_memory): a fresh mapping's pages are faulted
 * in and cleared on first touch, every run. UNet 1x3x256x256's report
 * (its decoder's joins grow in mappings: compare.c plan_joins) spent 14% of
 * its samples clearing pages with every mapping unmapped when freed; kept,
 * six reports' system time 0.38 -> 0.03 s, page faults 649 -> 413, peak RSS
 * 168 -> 164 MB, and a report 284 -> 276 ms (medians of four interleaved
 * processes: the clearing had run beside the other job thread). A value
 * takes the smallest kept mapping that holds it (a join's head takes the
 * mapping its run before grew to, which it grows into again for free);
 * a mapping not kept is unmapped. The lock is a plain mutex: the two job
 * threads of a comparison make and free values; a child of fork() makes
 * its lock anew (a parent thread may have held it). */
enum { MAP_KEPT_N = 32 };
#define MAP_KEPT_BYTES ((size_t)256 << 20)
static struct {
    pthread_mutex_t m;
    void *p[MAP_KEPT_N];
    size_t bytes[MAP_KEPT_N];
    int n;
    size_t total;
} map_kept = {.m = PTHREAD_MUTEX_INITIALIZER};

static void map_kept_forget(void) { map_kept.m = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER; }
static void map_kept_at_fork(void) { (void)pthread_atfork(NULL, NULL, map_kept_forget); }

static void *map_take(size_t bytes, size_t *got) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, map_kept_at_fork);
    void *p = NULL;
    pthread_mutex_lock(&map_kept.m);
    int best = -1;
    for (int i = 0; i < map_kept.n; i++)
        if (map_kept.bytes[i] >= bytes && (best < 0 || map_kept.bytes[i] < map_kept.bytes[best])) best = i;
    if (best >= 0) {
        p = map_kept.p[best];
        *got = map_kept.bytes[best];
        map_kept.total -= *got;
        map_kept.p[best] = map_kept.p[--map_kept.n];
        map_kept.bytes[best] = map_kept.bytes[map_kept.n];
    }
    pthread_mutex_unlock(&map_kept.m);
    return p;
}

/* false: not kept (the caller unmaps it) */
static bool map_give(void *p, size_t bytes) {
    bool kept = false;
    pthread_mutex_lock(&map_kept.m);
    if (map_kept.n < MAP_KEPT_N && bytes <= MAP_KEPT_BYTES - map_kept.total) {
        map_kept.p[map_kept.n] = p;
        map_kept.bytes[map_kept.n++] = bytes;
        map_kept.total += bytes;
        kept = true;
    }
    pthread_mutex_unlock(&map_kept.m);
    return kept;
}
#endif

mpx_status mpx_value_alloc_mapped(mpx_value *v, int rank, const int64_t *dims, mpx_error *err) {
#ifdef MPX_HAVE_MREMAP
    mpx_value w = {.n = -1};
    mpx_status st = value_shape(&w, MPX_DT_FLOAT, rank, dims, err);
    if (st != MPX_OK) return st;
    size_t bytes = (uint64_t)w.n <= SIZE_MAX / sizeof *w.f ? page_round((size_t)(w.n ? w.n : 1) * sizeof *w.f) : 0;
    if (bytes && (st = fits_memory(bytes, w.n, err))) return st;
    size_t got = 0;
    void *p = bytes ? map_take(bytes, &got) : NULL;
    if (p) {
        bytes = got;
    } else {
        p = bytes ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
        if (p == MAP_FAILED) return value_alloc(v, MPX_DT_FLOAT, rank, dims, false, err);
        /* Fresh pages: in 2 MB pages where the system has them, a fault
         * each instead of 512 (a UNet's joins grow large values whose 4 KB
         * page faults were a visible share of a report). */
#ifdef MADV_HUGEPAGE
        madvise(p, bytes, MADV_HUGEPAGE);
#endif
    }
#ifdef MPX_POISON_RAW
    memset(p, 0xff, bytes); /* as value_alloc's raw blocks */
#endif
    w.f = p;
    w.mapped = bytes;
    *v = w;
    return MPX_OK;
#else
    return value_alloc(v, MPX_DT_FLOAT, rank, dims, false, err);
#endif
}

mpx_status mpx_value_grow(mpx_value *v, int64_t n, mpx_error *err) {
    if (!v || !v->f || v->borrowed || !v->mapped || n < 0 || (uint64_t)n > SIZE_MAX / sizeof *v->f)
        return mpx_error_set(err, MPX_E_ARG, "no mapped value of its own to grow");
#ifdef MPX_HAVE_MREMAP
    size_t bytes = page_round((size_t)(n ? n : 1) * sizeof *v->f);
    if (bytes <= v->mapped) return MPX_OK;
    mpx_status st = fits_memory(bytes - v->mapped, n, err);
    if (st) return st;
    void *p = bytes ? mremap(v->f, v->mapped, bytes, MREMAP_MAYMOVE) : MAP_FAILED;
    if (p == MAP_FAILED)
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory growing %lld elements to %lld", (long long)v->n,
                             (long long)n);
    v->f = p;
    v->mapped = bytes;
#endif
    return MPX_OK;
}

void mpx_value_free(mpx_value *v) {
    if (!v) return;
    if (v->is_seq && !v->borrowed) {
        for (int64_t k = 0; v->seq && k < v->n; k++) mpx_value_free(&v->seq[k]);
        free(v->seq);
    }
#ifdef MPX_HAVE_MREMAP
    if (!v->borrowed && v->mapped) {
        if (!map_give(v->f, v->mapped)) munmap(v->f, v->mapped);
        v->f = NULL;
    }
#endif
    if (!v->borrowed) {
        free(v->f);
        free(v->i);
        free(v->d);
    }
    memset(v, 0, sizeof *v);
    v->n = -1;
}

void mpx_value_view(mpx_value *v, const mpx_tensor *t) {
    memset(v, 0, sizeof *v);
    v->n = -1;
    if (!t || t->rank < 0 || (!t->f32 && !t->i64 && !t->f64)) return;
    v->dtype = t->dtype;
    v->rank = t->rank;
    for (int i = 0; i < t->rank; i++) v->dims[i] = t->dims[i];
    v->n = t->nelem;
    v->f = t->f32;
    v->i = t->i64;
    v->d = t->f64;
    v->borrowed = true;
}

/* A sequence's deep copy: every item copied. */
static mpx_status seq_copy(mpx_value *dst, const mpx_value *src, mpx_error *err) {
    mpx_value tmp = *src;
    tmp.borrowed = false;
    tmp.seq = src->n > 0 ? calloc((size_t)src->n, sizeof *tmp.seq) : NULL;
    if (src->n > 0 && !tmp.seq) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int64_t k = 0; k < src->n; k++) {
        mpx_status st = mpx_value_copy(&tmp.seq[k], &src->seq[k], err);
        if (st != MPX_OK) {
            tmp.n = k;
            mpx_value_free(&tmp);
            return st;
        }
    }
    *dst = tmp;
    return MPX_OK;
}

void mpx_value_fill(mpx_value *v, mpx_fill_kind kind, double a, double b, uint64_t seed) {
    mpx_rng r;
    mpx_rng_init(&r, seed);
    for (int64_t i = 0; i < v->n; i++) {
        double x = kind == MPX_FILL_CONST     ? a
                   : kind == MPX_FILL_UNIFORM ? a + (b - a) * mpx_rng_unit(&r)
                                              : mpx_rng_normal(&r, a, b);
        if (v->f) v->f[i] = (float)x;
        else if (v->d) v->d[i] = x;
        else if (v->i) v->i[i] = (int64_t)floor(x);
    }
}

mpx_status mpx_value_copy(mpx_value *dst, const mpx_value *src, mpx_error *err) {
    if (src->is_seq) return seq_copy(dst, src, err);
    mpx_value tmp;
    /* Every element is copied when src holds its buffer: no need to clear. */
    const void *from = src->dtype == MPX_DT_DOUBLE ? (const void *)src->d
                       : mpx_dtype_is_float(src->dtype) ? (const void *)src->f : (const void *)src->i;
    bool whole = src->n >= 0 && from != NULL;
    mpx_status st = value_alloc(&tmp, src->dtype, src->rank, src->dims, !whole, err);
    if (st != MPX_OK) return st;
    size_t each = tmp.d ? sizeof *tmp.d : tmp.f ? sizeof *tmp.f : sizeof *tmp.i;
    char *base = tmp.d ? (char *)tmp.d : tmp.f ? (char *)tmp.f : (char *)tmp.i;
    if (src->n > 0 && from) memcpy(base, from, (size_t)src->n * each);
    if (whole && tmp.n > src->n) { /* a malformed src: clear what it did not fill */
        int64_t at = src->n > 0 ? src->n : 0;
        memset(base + (size_t)at * each, 0, (size_t)(tmp.n - at) * each);
    }
    *dst = tmp;
    return MPX_OK;
}

mpx_status mpx_value_hold_as(mpx_value *v, mpx_dtype dtype, mpx_error *err) {
    if (!v || v->n < 0 || v->is_seq || !mpx_dtype_is_float(dtype) || (!v->f && !v->d)) return MPX_OK;
    const bool want_d = dtype == MPX_DT_DOUBLE;
    if (want_d == (v->d != NULL)) {
        v->dtype = dtype;
        return MPX_OK;
    }
    mpx_value w;
    mpx_status st = value_alloc(&w, dtype, v->rank, v->dims, false, err);
    if (st != MPX_OK) return st;
    for (int64_t k = 0; k < v->n; k++) {
        if (want_d) w.d[k] = (double)v->f[k];
        else w.f[k] = (float)v->d[k];
    }
    mpx_value_free(v);
    *v = w;
    return MPX_OK;
}

size_t mpx_value_bytes(const mpx_value *v) {
    if (!v || v->n <= 0 || v->borrowed) return 0;
    if (v->is_seq) {
        size_t b = 0;
        for (int64_t k = 0; v->seq && k < v->n; k++) b += mpx_value_bytes(&v->seq[k]);
        return b;
    }
    if (v->f) return (size_t)v->n * sizeof *v->f;
    if (v->i) return (size_t)v->n * sizeof *v->i;
    if (v->d) return (size_t)v->n * sizeof *v->d;
    return 0;
}

mpx_status mpx_fill_check(mpx_fill_kind kind, double a, double b, mpx_error *err) {
    switch (kind) {
    case MPX_FILL_CONST:
        return isfinite(a) ? MPX_OK : mpx_error_set(err, MPX_E_ARG, "const: %g is not finite", a);
    case MPX_FILL_NORMAL:
        if (!isfinite(a)) return mpx_error_set(err, MPX_E_ARG, "mean %g is not finite", a);
        if (!isfinite(b)) return mpx_error_set(err, MPX_E_ARG, "std %g is not finite", b);
        return b >= 0 ? MPX_OK : mpx_error_set(err, MPX_E_ARG, "std %g is negative", b);
    case MPX_FILL_UNIFORM:
        if (!isfinite(a) || !isfinite(b))
            return mpx_error_set(err, MPX_E_ARG, "uniform range [%g, %g) is not finite", a, b);
        return b > a ? MPX_OK : mpx_error_set(err, MPX_E_ARG, "uniform range [%g, %g) is empty", a, b);
    }
    return mpx_error_set(err, MPX_E_ARG, "unknown fill kind %d", (int)kind);
}
