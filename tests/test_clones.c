/* test_clones.c - the loops compiled as target clones with fused
 * multiply-adds (kern_internal.h's MPX_K_CLONES_FMA: Sigmoid, Softmax's
 * exponentials, the unary functions such as Erf, the contrib GELUs) run
 * their vector copies on a CPU that has the instructions.
 *
 * Every copy computes the same bits, so no value can show which one ran;
 * the baseline copy alone calls libm's fmaf or fma (no x86-64 baseline
 * instruction fuses a multiply-add). This program defines both itself,
 * counting the calls and passing them on to libm's, so a kernel that calls
 * them is seen. An "arch=haswell" clone list once left every AMD CPU on the
 * baseline copy (EfficientNet-B0's forward 7.5x slower), with every other
 * test passing. */
#define _GNU_SOURCE /* RTLD_NEXT */
#include "check.h"
#include "kern_elem.h"
#include "kern_internal.h"
#include "mpx_numerics.h"

#include <dlfcn.h>
#include <string.h>

static long fmaf_calls; /* fmaf and fma (Softmax's exponential is double) */

float fmaf(float a, float b, float c) {
    static float (*libm_fmaf)(float, float, float);
    if (!libm_fmaf) *(void **)&libm_fmaf = dlsym(RTLD_NEXT, "fmaf");
    fmaf_calls++;
    return libm_fmaf(a, b, c);
}
double fma(double a, double b, double c) {
    static double (*libm_fma)(double, double, double);
    if (!libm_fma) *(void **)&libm_fma = dlsym(RTLD_NEXT, "fma");
    fmaf_calls++;
    return libm_fma(a, b, c);
}

static mpx_error err;

/* Runs the one-input op on x (n floats) into y; MPX_OK or the kernel's error. */
static mpx_status run_unary(const char *op, const float *x, float *y, int64_t n) {
    mpx_node node = {.name = "n1", .op_type = op, .op = mpx_op_from_name(op), .domain = "", .opset = 13};
    const int64_t dims[1] = {n};
    mpx_value in, out;
    memset(&out, 0, sizeof out);
    if (mpx_value_alloc(&in, MPX_DT_FLOAT, 1, dims, NULL) != MPX_OK) return MPX_E_NOMEM;
    memcpy(in.f, x, (size_t)n * sizeof *x);
    const mpx_value *ins[1] = {&in};
    mpx_kctx c = {.node = &node, .err = &err};
    mpx_status st = mpx_kernel_for(node.op)(&c, ins, 1, &out, 1);
    if (st == MPX_OK) memcpy(y, out.f, (size_t)n * sizeof *y);
    mpx_value_free(&in);
    mpx_value_free(&out);
    return st;
}

int main(void) {
    mpx_numerics_init();
    enum { N = 256 };
    float x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = (float)(i - N / 2) / 16.0f;

    /* The counter works: this file's own call is seen. */
    volatile float a = 1.5f;
    CHECK(fmaf(a, 2.0f, 0.25f) == 3.25f && fmaf_calls == 1);

    /* An unoptimised build (the sanitizer one) calls fmaf from every copy:
     * GCC turns it into the instruction only when optimising. */
#ifdef __OPTIMIZE__
    const bool optimised = true;
#else
    const bool optimised = false;
#endif
    const bool avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    bool vector_cpu = MPX_K_CLONED && optimised && avx2_fma;
    const char *ops[] = {"Sigmoid", "Tanh", "Erf", "Gelu", "QuickGelu"};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        fmaf_calls = 0;
        CHECK_MSG(run_unary(ops[k], x, y, N) == MPX_OK, "%s: %s", ops[k], err.msg);
        /* Sigmoid's and Tanh's AVX2 forms are written with intrinsics
         * (kern_elem.c, sigmoid_avx2 and tanh_avx2), not cloned: every build
         * takes them on such a CPU (these inputs are all in their ranges,
         * |x| <= 80 and 40, in whole blocks) */
        const bool intrinsics = strcmp(ops[k], "Sigmoid") == 0 || strcmp(ops[k], "Tanh") == 0;
        /* Erf's AVX-512 and AVX2 forms likewise (erf_avx512, erf_avx2), on a
         * CPU with AVX2 and FMA unless MPX_KERN_PORTABLE asks for less */
        const bool erfv = strcmp(ops[k], "Erf") == 0 && ke_vec_now() != KE_VEC_NONE;
        if (vector_cpu || (intrinsics && avx2_fma) || erfv)
            CHECK_MSG(fmaf_calls == 0, "%s called libm's fmaf %ld times: the baseline copy ran on a CPU with AVX2 and FMA",
                      ops[k], fmaf_calls);
        else /* the baseline copy (or any, unoptimised): the counter must see its calls */
            CHECK_MSG(fmaf_calls > 0, "%s: no fmaf call seen from the baseline copy", ops[k]);
    }
    /* Softmax's exponentials: written with intrinsics on a CPU with AVX2 and
     * FMA (kern_elem.c, exp_neg_avx2 and exp_neg_avx512), in every build;
     * the cloned loop elsewhere */
    fmaf_calls = 0;
    ke_exp_neg_map(x, 8.0f, y, N, ke_vec_now());
    CHECK_MSG(avx2_fma ? fmaf_calls == 0 : fmaf_calls > 0, "Softmax's exponentials: %ld fmaf calls", fmaf_calls);
    return check_report("test_clones");
}
