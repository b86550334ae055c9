/* kern_nn.h - what the kernel files of the kern_nn section share (kern_nn.c:
 * Conv, ConvTranspose, Gemm, MatMul; kern_pool.c: pooling; kern_norm.c:
 * normalisation, softmax, LRN; kern_resize.c: Resize, Upsample): input
 * checks, shape strings and sliding-window geometry. Private to numerics/. */
#ifndef MPX_KERN_NN_H
#define MPX_KERN_NN_H

#include "kern_internal.h"

/* Spatial dims of an N x C x D1 x ... x Dn tensor. */
enum { KN_MAX_SP = MPX_MAX_RANK - 2 };

/* Attribute values beyond this are refused, so window arithmetic on int64
 * cannot overflow (tensor dims are below 2^31 already). */
#define KN_ATTR_MAX MPX_WINDOW_ATTR_MAX

/* "1x3x640x640" (or "scalar"); buf must hold 160 bytes. Returns buf. */
const char *kn_shape(const mpx_value *v, char *buf);
/* in[i] when present (not NULL, not absent); else NULL. */
const mpx_value *kn_opt(const mpx_value *const *in, int n_in, int i);
/* in[i], required, with float values; the error names what (e.g. "X"). */
mpx_status kn_float_in(const mpx_kctx *c, const mpx_value *const *in, int n_in, int i,
                       const char *what, const mpx_value **v);
/* An optional float input: *v = NULL when omitted. */
mpx_status kn_float_opt(const mpx_kctx *c, const mpx_value *const *in, int n_in, int i,
                        const char *what, const mpx_value **v);
/* The same for float64 values (f64: v->d) or float ones (v->f). */
mpx_status kn_values_in(const mpx_kctx *c, const mpx_value *const *in, int n_in, int i, const char *what, bool f64,
                        const mpx_value **v);
mpx_status kn_values_opt(const mpx_kctx *c, const mpx_value *const *in, int n_in, int i, const char *what, bool f64,
                         const mpx_value **v);
mpx_status kn_need_out(const mpx_kctx *c, int n_out, int need);
int kn_opset(const mpx_kctx *c);
/* Whether the node lists output i (an omitted optional output is NULL). */
bool kn_wants_out(const mpx_kctx *c, int n_out, int i);
int64_t kn_floor_div(int64_t a, int64_t b); /* b > 0 */
int64_t kn_ceil_div(int64_t a, int64_t b);  /* b > 0 */
/* Allocate float scratch / zeroed scratch; errors name the node. */
mpx_status kn_scratch(const mpx_kctx *c, size_t n, size_t size, void **p);

/* One head of D values rotated by RotaryEmbedding's rule (kern_contrib.c):
 * the first rd in pairs (i, i + rd/2), or (2i, 2i + 1) when interleaved, by
 * the angles whose cos and sin are cr and sr (rd/2 each); the rest copied.
 * GroupQueryAttention's do_rotary uses it too. */
void kn_rotate(const float *xi, float *yo, int64_t D, int64_t rd, bool inter, const float *cr, const float *sr);

/* ---- sliding windows (Conv, ConvTranspose, pools) -------------------------- */

/* The geometry is graph/geom.c's (mpx_window), which shape inference
 * computes with too; these read it for a kernel, errors naming the node. */
typedef mpx_window kn_window;
enum {
    KN_NOTSET = MPX_AUTOPAD_NOTSET,
    KN_SAME_UPPER = MPX_AUTOPAD_SAME_UPPER,
    KN_SAME_LOWER = MPX_AUTOPAD_SAME_LOWER,
    KN_VALID = MPX_AUTOPAD_VALID
};

/* mpx_window_read for input x (rank >= 3): kernel_shape required when
 * kernel is NULL, else checked against it. */
mpx_status kn_window_attrs(const mpx_kctx *c, const mpx_value *x, const int64_t *kernel,
                           kn_window *w);
/* mpx_window_out: output lengths and the padding auto_pad implies. */
mpx_status kn_window_out(const mpx_kctx *c, kn_window *w, bool ceil_mode);
/* mpx_window_transpose_out: ConvTranspose's output lengths and pads. */
mpx_status kn_window_transpose_out(const mpx_kctx *c, kn_window *w);

/* ---- the integer core (kern_igemm.c) ------------------------------------- */

/* C[m * ldc + n] = sum over k < Kp of A[m * Kp + k] * B[n * Kp + k] modulo
 * 2^32 (Kp a multiple of 16; rows padded with zeros), m < M, n < N; the AVX2
 * build when avx2 (mpx_k_igemm_avx2 says whether to take it). */
void mpx_k_igemm_nt(const int16_t *A, const int16_t *B, int64_t M, int64_t N, int64_t Kp, int32_t *C, int64_t ldc,
                    bool avx2);
bool mpx_k_igemm_avx2(void);
/* The same sums of unsigned bytes A times signed bytes B (Kp a multiple of
 * 64), on the VNNI build path (1: AVX-VNNI, 2: AVX512-VNNI) that
 * mpx_k_igemm8_path gives (0: neither; then not to be called). On path 1 B
 * is N rows of Kp; on path 2 it is those rows in panels of 16
 * (mpx_k_igemm8_panels), and N columns from B's start are read, so a call on
 * columns from n0 passes B + n0 * Kp with n0 a multiple of 16. */
void mpx_k_igemm8_nt(const uint8_t *A, const int8_t *B, int64_t M, int64_t N, int64_t Kp, int32_t *C, int64_t ldc,
                     int path);
int mpx_k_igemm8_path(void);
/* N rows of Kp bytes (B^T) into path 2's panels at dst: panel p, the
 * rows 16p..16p+15, as [Kp/4][16][4] (four terms of a row in each 32-bit
 * lane; rows past N zeros); (N + 15) / 16 * 16 * Kp bytes. */
void mpx_k_igemm8_panels(const int8_t *rows, int64_t N, int64_t Kp, int8_t *dst);

#endif
