/* sleef_ref.c - Sleef's expf8_u10 on one value, for test_kern_nn's check of
 * the accum option sleef-lanes (kern_sleef.c). Compiled with -mavx2 -mfma
 * (tests/CMakeLists.txt): Sleef's header declares its 256-bit functions only
 * under __AVX__. An element-wise function: the value's lane and its
 * neighbours change nothing, so one lane is the vector's value there. */
#include <immintrin.h>
#include <sleef.h>

float sleef_ref_expf8(float x);

float sleef_ref_expf8(float x) {
    return _mm256_cvtss_f32(Sleef_expf8_u10(_mm256_set_ps(0, 0, 0, 0, 0, 0, 0, x)));
}
