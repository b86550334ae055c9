/* peak.c - the machine's multiply-add peak, for bench/run.sh's floor column.
 *
 * A report (issue 20's (4)) multiplies and adds every term of the fp32
 * reference's dot products, and again of each candidate's low nodes, on
 * rounded operands. Exact emulation gives those terms no cheaper path on a
 * CPU without narrow arithmetic that rounds as the format does (the
 * product of two fp16 or bf16 values is exact in fp32, the sum is an fp32
 * addition), so each term costs at least one lane of a multiply, and the
 * FMA pipes are the vector multipliers. The peak rate of fused multiply-add
 * lanes, measured here on the threads the runs use, turns a model's terms
 * into a time no such implementation on this machine can beat; bench.js
 * divides it by ONNX Runtime's all-outputs time.
 *
 * The loop: independent accumulators in registers (more than the FMA
 * latency times the FMA pipes, 4 x 2 on current x86 cores: no chain
 * waits), nothing
 * loaded or stored, widest vectors the CPU has (AVX-512, else AVX2 with
 * FMA, else C99 fmaf). Written by hand: it measures the CPU, not a library.
 * The best of TRIALS timings: a peak is what the machine can do, and a
 * shared machine's noise only ever lowers a rate. */
#include "peak.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

enum { ACC = 12, TRIALS = 5 };
static const int64_t ITERS = 20 * 1000 * 1000;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The threads start together: each waits for go to turn 1 (or -1: not all
 * of them could be started, none runs the loop). */
typedef struct job {
    int lanes; /* 16, 8 or 1 */
    float sink;
    atomic_int *go;
} job;

/* The accumulators are named variables, one statement each (ACCS), not an
 * array with a loop over it: GCC keeps such an array on the stack, and every
 * multiply-add then waits for a load and a store (10.7 G/s on two Zen 3
 * cores, whose two FMA pipes of 8 lanes at 2.9 GHz give 93). Check with
 * objdump -d: loop256 has ACC vfmadd on registers, no memory operand. */
#define ACCS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

#if defined(__x86_64__) || defined(__i386__)

__attribute__((target("avx512f"))) static float loop512(void) {
    const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
#define DECL(k) __m512 a##k = _mm512_set1_ps((float)k);
    ACCS(DECL)
#undef DECL
    for (int64_t i = 0; i < ITERS; i++) {
#define STEP(k) a##k = _mm512_fmadd_ps(a##k, x, y);
        ACCS(STEP)
#undef STEP
    }
    __m512 s = _mm512_setzero_ps();
#define SUM(k) s = _mm512_add_ps(s, a##k);
    ACCS(SUM)
#undef SUM
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static float loop256(void) {
    const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
#define DECL(k) __m256 a##k = _mm256_set1_ps((float)k);
    ACCS(DECL)
#undef DECL
    for (int64_t i = 0; i < ITERS; i++) {
#define STEP(k) a##k = _mm256_fmadd_ps(a##k, x, y);
        ACCS(STEP)
#undef STEP
    }
    __m256 s = _mm256_setzero_ps();
#define SUM(k) s = _mm256_add_ps(s, a##k);
    ACCS(SUM)
#undef SUM
    float v[8];
    _mm256_storeu_ps(v, s);
    return v[0] + v[7];
}
#endif

static float loop1(void) {
#define DECL(k) float a##k = (float)k;
    ACCS(DECL)
#undef DECL
    for (int64_t i = 0; i < ITERS; i++) {
#define STEP(k) a##k = fmaf(a##k, 0.999999f, 1e-7f);
        ACCS(STEP)
#undef STEP
    }
    float s = 0;
#define SUM(k) s += a##k;
    ACCS(SUM)
#undef SUM
    return s;
}

static void *run(void *p) {
    job *j = p;
    int g;
    while ((g = atomic_load(j->go)) == 0) continue;
    if (g < 0) return NULL;
#if defined(__x86_64__) || defined(__i386__)
    if (j->lanes == 16) j->sink = loop512();
    else if (j->lanes == 8) j->sink = loop256();
    else
#endif
        j->sink = loop1();
    return NULL;
}

static int trial(int threads, int lanes, double *seconds, float *sink) {
    pthread_t th[BENCH_PEAK_MAX_THREADS];
    job jobs[BENCH_PEAK_MAX_THREADS];
    atomic_int go = 0;
    int started = 0;
    for (; started < threads; started++) {
        jobs[started] = (job){.lanes = lanes, .go = &go};
        if (pthread_create(&th[started], NULL, run, &jobs[started])) break;
    }
    atomic_store(&go, started == threads ? 1 : -1);
    const double t0 = now_s();
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    const double dt = now_s() - t0;
    if (started < threads) return -1;
    *seconds = dt;
    *sink = 0;
    for (int i = 0; i < threads; i++) *sink += jobs[i].sink;
    return 0;
}

int bench_peak(int threads, bench_peak_result *r) {
    if (threads < 1 || threads > BENCH_PEAK_MAX_THREADS) return -1;
    int lanes = 1;
    r->isa = "scalar fmaf";
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) lanes = 16, r->isa = "avx512f";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) lanes = 8, r->isa = "avx2+fma";
#endif
    r->seconds = INFINITY;
    for (int t = 0; t < TRIALS; t++) {
        double dt;
        float sink;
        if (trial(threads, lanes, &dt, &sink)) return -1;
        if (dt < r->seconds) r->seconds = dt;
        r->sink = sink;
    }
    r->threads = threads;
    r->lanes = lanes;
    r->gmacs = (double)threads * (double)ITERS * ACC * lanes / r->seconds / 1e9;
    return 0;
}
