/* test_formats_all.c - the fast rounding paths against the scalar reference
 * for every fp32 bit pattern (2^32 inputs per format).
 *
 * Inputs go in chunks of 2^16 consecutive patterns. Per chunk the reference
 * (mpx_round_reference_array: mpx_round_scalar over the chunk) is computed
 * once, and every fast path of the format must equal it bit for bit:
 * mpx_round_array and mpx_round_value, and for fp16 both the F16C and the
 * portable (fp16.h) routines. Two threads split the chunks.
 *
 * The F16C switch (mpx_fp16_use_hw) is process-wide, so for fp16 the threads
 * go in step: both check their chunk with F16C on, meet, thread 0 turns it
 * off, they meet again and check the portable path against the same
 * reference, and so on. That saves a second pass of the reference, the
 * costliest part.
 *
 * usage: test_formats_all [--stride N] [format ...]
 *   formats: fp16 bf16 tf32 fp8e4m3 fp8e4m3nan fp8e5m2 (default: all).
 *   --stride N (or env MPX_FORMATS_STRIDE=N) checks only the inputs k*N: the
 *   sanitizer build uses 257, where every input would take far too long.
 */
#include "check.h"
#include "mpx_numerics.h"
#include "formats_internal.h" /* mpx_f32_bits */

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define CHUNK ((uint64_t)1 << 16)
#define N_THREADS 2
#define MAX_VARIANTS 2

/* One way of rounding a format: the F16C switch (fp16 only), and which
 * inputs mpx_round_value is checked on besides mpx_round_array: every
 * value_every-th of a chunk (1: all; 0: none). A call per value costs about
 * as much as the reference, so only the accumulation formats (fp16, bf16)
 * get every input; the others share the code and get a sample. */
typedef struct variant {
    const char *name;
    int hw;          /* 1 F16C, 0 portable, -1 not fp16 */
    unsigned value_every;
} variant;

typedef struct suite {
    const char *name;
    const mpx_format *fmt;
    int n_variants;
    variant v[MAX_VARIANTS];
} suite;

static const suite suites[] = {
    /* Without F16C, mpx_round_value's fp16 path is the portable array's
     * per-value function (round_fp16_lib): every input through the array,
     * a sample through the call. */
    {"fp16", &mpx_format_fp16, 2, {{"F16C", 1, 1}, {"portable", 0, 16}}},
    {"bf16", &mpx_format_bf16, 1, {{"", -1, 1}}},
    {"tf32", &mpx_format_tf32, 1, {{"", -1, 16}}},
    {"fp8e4m3", &mpx_format_fp8e4m3_sat, 1, {{"", -1, 16}}},
    {"fp8e4m3nan", &mpx_format_fp8e4m3_nan, 1, {{"", -1, 16}}},
    {"fp8e5m2", &mpx_format_fp8e5m2, 1, {{"", -1, 16}}},
};
#define N_SUITES (sizeof suites / sizeof suites[0])

typedef struct mismatch {
    uint64_t count;
    uint32_t in, got, want;   /* the first one */
} mismatch;

typedef struct job {
    const suite *s;
    uint64_t stride, n_inputs;   /* inputs are k * stride, k < n_inputs */
    int t;                       /* this worker's index */
    pthread_barrier_t *step;     /* NULL: one variant, no stepping */
    uint64_t checked, value_sampled[MAX_VARIANTS];
    mismatch bad_array[MAX_VARIANTS], bad_value[MAX_VARIANTS];
    int err;
} job;

static void compare(mismatch *m, const float *src, const float *got, const float *ref,
                    size_t n) {
    /* memcmp first: the element loop only runs on a mismatch. */
    if (memcmp(got, ref, n * sizeof *got) == 0) return;
    for (size_t i = 0; i < n; i++) {
        if (mpx_f32_bits(got[i]) == mpx_f32_bits(ref[i])) continue;
        if (m->count++ == 0) {
            m->in = mpx_f32_bits(src[i]);
            m->got = mpx_f32_bits(got[i]);
            m->want = mpx_f32_bits(ref[i]);
        }
    }
}

/* Both threads wait; then thread 0 sets the F16C switch while no rounding
 * runs; then both go on. */
static void set_hw_in_step(job *j, int hw) {
    pthread_barrier_wait(j->step);
    if (j->t == 0) mpx_fp16_use_hw(hw == 1);
    pthread_barrier_wait(j->step);
}

static void *worker(void *arg) {
    job *j = arg;
    const suite *s = j->s;
    const mpx_format *f = s->fmt;
    float *src = malloc(CHUNK * sizeof *src), *ref = malloc(CHUNK * sizeof *ref);
    float *got = malloc(CHUNK * sizeof *got);
    bool ok = src && ref && got;
    if (!ok) j->err = 1;
    uint64_t n_chunks = (j->n_inputs + CHUNK - 1) / CHUNK;
    uint64_t rounds = (n_chunks + N_THREADS - 1) / N_THREADS;
    /* Interleaved chunks keep the threads' loads alike (NaN and huge inputs
     * are cheaper than the rest). Every thread goes through every round so
     * the stepping barriers always see both. */
    for (uint64_t r = 0; r < rounds; r++) {
        uint64_t c = r * N_THREADS + (uint64_t)j->t;
        size_t n = 0;
        if (ok && c < n_chunks) {
            uint64_t k0 = c * CHUNK;
            n = (size_t)(j->n_inputs - k0 < CHUNK ? j->n_inputs - k0 : CHUNK);
            for (size_t i = 0; i < n; i++)
                src[i] = mpx_f32_of_bits((uint32_t)((k0 + i) * j->stride));
            mpx_round_reference_array(f, ref, src, n);
        }
        for (int v = 0; v < s->n_variants; v++) {
            if (j->step && v > 0) set_hw_in_step(j, s->v[v].hw);
            if (!n) continue;
            mpx_round_array(f, got, src, n);
            compare(&j->bad_array[v], src, got, ref, n);
            unsigned every = s->v[v].value_every;
            if (every == 1) {
                for (size_t i = 0; i < n; i++) got[i] = mpx_round_value(f, src[i]);
                compare(&j->bad_value[v], src, got, ref, n);
            } else if (every > 1) {
                for (size_t i = 0; i < n; i += every) {
                    got[0] = mpx_round_value(f, src[i]);
                    compare(&j->bad_value[v], &src[i], got, &ref[i], 1);
                }
                j->value_sampled[v] += (n + every - 1) / every;
            }
        }
        if (j->step) set_hw_in_step(j, s->v[0].hw);
        j->checked += n;
    }
    free(src);
    free(ref);
    free(got);
    return NULL;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void report(const suite *s, int v, bool value, const job *jobs) {
    const char *what = value ? "mpx_round_value" : "mpx_round_array";
    const char *vn = s->v[v].name;
    uint64_t count = 0;
    for (int t = 0; t < N_THREADS; t++) {
        const mismatch *m = value ? &jobs[t].bad_value[v] : &jobs[t].bad_array[v];
        if (m->count && !count)
            fprintf(stderr, "%s%s%s: %s(0x%08" PRIx32 ") = 0x%08" PRIx32
                    ", mpx_round_scalar gives 0x%08" PRIx32 "\n", s->name, *vn ? " " : "", vn,
                    what, m->in, m->got, m->want);
        count += m->count;
    }
    CHECK_MSG(count == 0, "%s%s%s: %s differs from mpx_round_scalar on %" PRIu64 " inputs",
              s->name, *vn ? " " : "", vn, what, count);
}

static uint64_t run_suite(const suite *s, uint64_t stride) {
    uint64_t n_inputs = (((uint64_t)1 << 32) + stride - 1) / stride;
    bool stepped = s->n_variants > 1;
    pthread_barrier_t step;
    if (s->v[0].hw >= 0) {
        bool on = mpx_fp16_use_hw(s->v[0].hw == 1);
        if (s->v[0].hw == 1 && !on)
            printf("%s: this CPU has no F16C; its checks run the portable path\n", s->name);
    }
    if (stepped && pthread_barrier_init(&step, NULL, N_THREADS) != 0) {
        CHECK_MSG(0, "%s: cannot create a barrier", s->name);
        return 0;
    }
    job jobs[N_THREADS];
    pthread_t th[N_THREADS];
    for (int t = 0; t < N_THREADS; t++) {
        memset(&jobs[t], 0, sizeof jobs[t]);
        jobs[t].s = s;
        jobs[t].stride = stride;
        jobs[t].n_inputs = n_inputs;
        jobs[t].t = t;
        jobs[t].step = stepped ? &step : NULL;
    }
    double t0 = now_s();
    for (int t = 0; t < N_THREADS; t++) {
        if (pthread_create(&th[t], NULL, worker, &jobs[t]) != 0) {
            /* The others would wait at the barrier for ever: give up. */
            fprintf(stderr, "%s: cannot start a thread\n", s->name);
            exit(1);
        }
    }
    for (int t = 0; t < N_THREADS; t++) pthread_join(th[t], NULL);
    double secs = now_s() - t0;
    if (stepped) pthread_barrier_destroy(&step);
    mpx_fp16_use_hw(true);

    uint64_t checked = 0;
    for (int t = 0; t < N_THREADS; t++) {
        CHECK_MSG(!jobs[t].err, "%s: out of memory", s->name);
        checked += jobs[t].checked;
    }
    CHECK_MSG(checked == n_inputs, "%s: %" PRIu64 " of %" PRIu64 " inputs checked", s->name,
              checked, n_inputs);
    for (int v = 0; v < s->n_variants; v++) {
        report(s, v, false, jobs);
        if (s->v[v].value_every) report(s, v, true, jobs);
    }
    char every[40] = "all";
    if (stride > 1) snprintf(every, sizeof every, "every %" PRIu64 "th", stride);
    printf("%-10s %10" PRIu64 " inputs (%s) in %.1f s:", s->name, checked, every, secs);
    for (int v = 0; v < s->n_variants; v++) {
        const variant *va = &s->v[v];
        printf(" %s%sarray", va->name, *va->name ? " " : "");
        if (va->value_every == 1) printf("+value");
        if (va->value_every > 1) {
            uint64_t sampled = 0;
            for (int t = 0; t < N_THREADS; t++) sampled += jobs[t].value_sampled[v];
            printf(" (value on %" PRIu64 ")", sampled);
        }
        printf(v + 1 < s->n_variants ? "," : "\n");
    }
    return checked;
}

static bool parse_stride(const char *s, uint64_t *out) {
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || v == 0 || v > ((uint64_t)1 << 32)) return false;
    *out = v;
    return true;
}

int main(int argc, char **argv) {
    uint64_t stride = 1;
    const char *env = getenv("MPX_FORMATS_STRIDE");
    if (env && *env && !parse_stride(env, &stride)) {
        fprintf(stderr, "MPX_FORMATS_STRIDE=%s: expected a positive integer\n", env);
        return 2;
    }
    bool want[N_SUITES] = {false};
    bool any = false;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--stride") == 0 && a + 1 < argc) {
            if (!parse_stride(argv[++a], &stride)) {
                fprintf(stderr, "--stride %s: expected a positive integer\n", argv[a]);
                return 2;
            }
            continue;
        }
        size_t i = 0;
        while (i < N_SUITES && strcmp(argv[a], suites[i].name) != 0) i++;
        if (i == N_SUITES) {
            fprintf(stderr, "unknown format \"%s\"; known:", argv[a]);
            for (size_t k = 0; k < N_SUITES; k++) fprintf(stderr, " %s", suites[k].name);
            fputc('\n', stderr);
            return 2;
        }
        want[i] = any = true;
    }
    double t0 = now_s();
    uint64_t total = 0;
    for (size_t i = 0; i < N_SUITES; i++)
        if (!any || want[i]) total += run_suite(&suites[i], stride);
    printf("%" PRIu64 " inputs checked in %.1f s\n", total, now_s() - t0);
    return check_report("test_formats_all");
}
