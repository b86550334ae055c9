/* kern_kept.h - derived forms of a constant's values kept on its tensor
 * (mpx_tensor.derived): the GEMM core's packings and the values rounded to
 * a low format (kern_kept.c keeps the list; kern_gemm.c and
 * kern_rounded.c add to it). Private to kernels/. */
#ifndef MPX_KERN_KEPT_H
#define MPX_KERN_KEPT_H

#include "kern_internal.h"

#include <stdatomic.h>

/* ---- packed weights kept on their tensor ------------------------------------------------------
 * A constant's A packed once (mpx_tensor.derived): a list of packings, one
 * per layout a node reads it in (almost always one). The packing is a copy
 * of the values in the micro-kernel's order, so a kept one is the same bits
 * as a fresh one; an entry remembers the source pointer and layout and is
 * used only for the same. Packing afresh would be a large share of a
 * convolution with many weights (a ResNet's last stage repacks 9 MB a
 * call). A lock guards the lists
 * (a comparison's two threads may run the same node); a packing made while
 * another thread kept one is used once and freed. */
typedef struct kg_kept {
    int kind;           /* KG_KEPT_PANELS (the GEMM's [g][panel][K][6]), KG_KEPT_ROWS16 (the mv's
                         * [g][panel][K][16]), KG_KEPT_BPANELS (B's [K block][panel][kc][16]),
                         * KG_KEPT_BTPANELS (the same, of B given transposed: kg_gemm.b_ldt),
                         * KG_KEPT_RNN_RT (a recurrent op's R transposed per direction,
                         * kern_rnn.c: M rows of K), KG_KEPT_IGEMM_BT (an integer B's
                         * matrix at offset ga transposed to 16-bit rows, kern_qint.c: M rows
                         * of K values, each padded to a multiple of 16), KG_KEPT_IGEMM_BT8
                         * (the same as 8-bit rows less aks, padded to 64, then the rows'
                         * sums, uint32), KG_KEPT_IGEMM_BT8P (the same with the rows in
                         * AVX512-VNNI's panels of 16, mpx_k_igemm8_panels), KG_KEPT_QCONV_W
                         * (an integer convolution's weights less their zero point, ga, as
                         * 16-bit rows: kern_qint.c, M rows of K values padded to 16),
                         * KG_KEPT_ROUNDED
                         * (the tensor's values rounded to fmt), KG_KEPT_FINITE (no values:
                         * whether A's panels rounded to fmt are all finite, in `finite`;
                         * kern_gemm.c) or KG_KEPT_PREPARED (no
                         * values: mpx_k_prepare_reads made node M's forms, below) */
    const void *a;      /* the values packed (A's, or B's for KG_KEPT_BPANELS; the tensor's own
                         * for KG_KEPT_ROUNDED; its int64 values for KG_KEPT_IGEMM_BT) */
    int64_t M, K, G, ams, aks, ga; /* their layout (for B: N, K, 1, ldb, 1, 0) */
    const mpx_format *fmt; /* KG_KEPT_ROUNDED: the format; a packing: the format its values
                            * were rounded to as packed (kg_gemm.a_fmt: A's panels), or NULL
                            * (B's packings are fp32 only: kern_gemm_core.h, kb_fmt) */
    bool checked, finite; /* whether the finite check ran, and its verdict */
    float *ap;
    struct kg_kept *next;
} kg_kept;

/* Rows of A from which a Gemm's constant transB weights are kept packed
 * as B^T (kern_matmul.c: mpx_k_gemm; below, the product is taken as
 * Y^T = B A'^T), and so made before the first run (mpx_k_prepare_node). */
enum { GEMM_KEPT_T_MIN_M = 16 };

enum { KG_KEPT_PANELS = 0, KG_KEPT_ROWS16 = 1, KG_KEPT_BPANELS = 2, KG_KEPT_ROUNDED = 3, KG_KEPT_BTPANELS = 4,
       KG_KEPT_RNN_RT = 5, KG_KEPT_IGEMM_BT = 6, KG_KEPT_IGEMM_BT8 = 7, KG_KEPT_IGEMM_BT8P = 8,
       KG_KEPT_PREPARED = 9, KG_KEPT_FINITE = 10, KG_KEPT_QCONV_W = 11 };

/* What a packing is looked up by: its kind, values and layout, the tensor
 * that owns the values, and whether it must have been checked finite. */
typedef struct kg_key {
    kg_kept k;
    mpx_tensor *owner;
    bool check;
} kg_key;

/* The entry matching q kept on q->owner, or NULL. */
const kg_kept *kg_kept_find(const kg_key *q);
/* Keep ap on q->owner (true: the tensor owns it now; false: another thread
 * kept one meanwhile, or the tensor's derived slot is not this list's). */
bool kg_kept_add(const kg_key *q, float *ap, bool finite);
/* Whether p is t's own values (float or integer) or a rounded copy of them
 * kept on t. */
bool kg_kept_holds(const mpx_tensor *t, const void *p);
/* Bytes of the KG_KEPT_ROUNDED entries alive (kern_rounded.c adds, the
 * list's deletion subtracts). */
extern atomic_llong kg_rounded_bytes;
/* n floats, 64-byte aligned (packings and kept copies); free() them. */
float *kg_alloc(size_t n);

/* ---- made before the first run (mpx_k_prepare_node) ------------------------------------------
 * The graph's tensor whose own values input k of n reads (a constant's,
 * through the Identity nodes a run passes them on by, as
 * mpx_k_value_owner finds it), or NULL. */
mpx_tensor *kg_prep_owner(const mpx_node *n, int k);
/* The kept forms a fp32 run of n would make: a recurrent op's R transposed
 * (kern_rnn.c), a MatMulInteger's B in the integer core's rows, a
 * ConvInteger's or QLinearConv's weights (input w, zero point input zp)
 * less their zero point (kern_qint.c). Bytes made (0: none, kept already,
 * or no memory). */
size_t kg_prep_rnn(const mpx_node *n);
size_t kg_prep_qmm(const mpx_node *n);
size_t kg_prep_qconv(const mpx_node *n, int w, int zp);

#endif
