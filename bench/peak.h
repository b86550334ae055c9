/* peak.h - the machine's multiply-add peak (bench/peak.c), for mpx_bench's
 * peak mode. No state: each call starts and joins its own threads. */
#ifndef MPX_BENCH_PEAK_H
#define MPX_BENCH_PEAK_H

enum { BENCH_PEAK_MAX_THREADS = 64 };

typedef struct bench_peak_result {
    const char *isa; /* the vectors the loop used: "avx512f", "avx2+fma", "scalar fmaf" */
    int threads, lanes;
    double seconds; /* wall time of the threads' loops, the best of several */
    double gmacs;   /* fused multiply-add lanes a second, all threads, in 1e9 */
    float sink;     /* the loops' results, so the compiler keeps them */
} bench_peak_result;

/* Runs the register-only loop on `threads` threads at once. 0, or -1 when
 * threads is out of range or they could not be started. */
int bench_peak(int threads, bench_peak_result *r);

#endif
