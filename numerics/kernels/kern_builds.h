/* kern_builds.h - the per-build code KG_BODY names (a file of functions
 * written with KG_F, KG_SIMD and KG_TARGET), instantiated once per code path:
 * portable, AVX2 (with F16C and FMA) and AVX-512. The CPU picks one at run
 * time (kg_use_avx2, kg_use_avx512). Included by the files that hold such
 * bodies (kern_gemm.c, kern_depthwise.c), after defining KG_BODY. */
/* The portable build. */
#define KG_F(x) x##_gen
#define KG_SIMD 0
#define KG_TARGET
#include "kern_gemm_vec.h"
#include KG_BODY
#undef KG_F
#undef KG_SIMD
#undef KG_TARGET

/* The AVX2 build (F16C for fp16 rounding); used only when the CPU has both.
 * Every function of it carries the target attribute (GCC and Clang), so the
 * build needs no -m flags. */
#if KG_HAVE_X86
#define KG_F(x) x##_avx2
#define KG_SIMD 1
#define KG_TARGET __attribute__((target("avx2,f16c,fma")))
#include "kern_gemm_vec.h"
#include KG_BODY
#undef KG_F
#undef KG_SIMD
#undef KG_TARGET
#endif

/* The AVX-512 build: the AVX2 build's code with the fp32 micro-kernel on
 * 16-lane vectors (one register per row of the 6 x 16 tile instead of two).
 * The same products and sums per lane, so the same bits; CPUs with AVX-512
 * run 16-lane multiplies and adds at well above the 8-lane ones' rate. */
#if KG_HAVE_X86
#define KG_F(x) x##_avx512
#define KG_SIMD 2
#define KG_TARGET __attribute__((target("avx512f,avx2,f16c,fma")))
#include "kern_gemm_vec.h"
#include KG_BODY
#undef KG_F
#undef KG_SIMD
#undef KG_TARGET
#endif
#undef KG_BODY
