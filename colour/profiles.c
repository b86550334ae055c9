/* profiles.c - emulation profiles: a whole plan (target, keep-io, rules)
 * that mirrors what one runtime computes, set by `profile <name>`.
 *
 * Why a table: mirroring a runtime takes a target, keep-io and several rules
 * whose options each mirror one of the runtime's choices (docs/fidelity.md
 * measures every one against the runtime, element by element); typed by hand
 * it is one line easy to get slightly wrong, and a plan that is nearly the
 * runtime's gives a gap as large as the error it means to explain. A profile
 * is ordinary rules: `rules` lists them, later rules refine them, `save`
 * writes them, undo takes the whole profile back. */
#include "colour_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

enum { PROFILE_MAX_RULES = 16 };

static const struct profile {
    const char *name, *about;
    const char *target;
    int block;
    bool keep_io;
    const char *rules[PROFILE_MAX_RULES]; /* NULL-terminated */
} profiles[] = {
    /* PyTorch 1.13's CPU bf16 (model.to(torch.bfloat16)) on a CPU without
     * AVX512-BF16, op by op (docs/fidelity.md's table): every op in bf16 on
     * bf16 inputs and weights, the model's input and output held in bf16
     * (keep-io off); convolutions and products of two activations are
     * torch's scalar loop `c += a * b` in bf16, each product rounded, then
     * the running sum (block 1), a convolution's sum starting at its bias;
     * the product with a transposed second operand (attention's Q K^T:
     * k.transpose(-2, -1), exported as a Transpose) is an fp32 dot product
     * summed one term after another (sequential); products with a weight
     * (Linear: addmm) are such fp32 sums too, the bias added after them and
     * the whole rounded once (fuse linear); adaptive_avg_pool2d rounds its fp32 sum
     * before dividing; layer_norm's statistics are Welford's in bf16; silu is
     * x / (1 + exp(-x)), each step rounded (Sigmoid's steps, the division made
     * by the Mul after it: fuse silu); gelu multiplies by bf16(1/sqrt 2)
     * where the export divides by sqrt 2 (reciprocal); softmax is torch's
     * AVX2 kernel, fp32 inside: Sleef's exp, the sum in 8 lanes, times
     * 1/sum (sleef-lanes). */
    {"torch-cpu-bf16", "PyTorch 1.13's CPU bf16 (model.to(torch.bfloat16)) without AVX512-BF16", "bf16", 1, false,
     {"colour * green", "accum Conv bf16 bias-first", "accum MatMul bf16 when const_in == 0",
      "accum MatMul fp32 sequential when const_in == 0 and transposed_b == 1",
      "accum MatMul, Gemm fp32 sequential when const_in >= 1",
      "accum GlobalAveragePool fp32 round-sum",
      "accum LayerNormalization bf16 welford", "accum silu bf16 steps", "accum gelu bf16 reciprocal",
      "accum Softmax fp32 sleef-lanes", "fuse linear, silu", NULL}},
};

enum { N_PROFILES = (int)(sizeof profiles / sizeof profiles[0]) };

const char *mpx_profile_name(int k) { return k >= 0 && k < N_PROFILES ? profiles[k].name : NULL; }
const char *mpx_profile_about(int k) { return k >= 0 && k < N_PROFILES ? profiles[k].about : NULL; }

int mpx_profile_find(const char *name) {
    for (int k = 0; name && k < N_PROFILES; k++)
        if (strcasecmp(profiles[k].name, name) == 0) return k;
    return -1;
}

const char *mpx_profile_rule(int k, int i) {
    if (k < 0 || k >= N_PROFILES || i < 0 || i >= PROFILE_MAX_RULES) return NULL;
    return profiles[k].rules[i];
}

mpx_status mpx_profile_build(int k, const mpx_graph *g, const mpx_plan_opts *base, mpx_rules **rules,
                             mpx_plan_opts *opts, mpx_error *err) {
    *rules = NULL;
    if (k < 0 || k >= N_PROFILES) return mpx_error_set(err, MPX_E_ARG, "no profile %d", k);
    const struct profile *pr = &profiles[k];
    const mpx_format *f = mpx_format_by_name(pr->target);
    if (!f) return mpx_error_set(err, MPX_E_INVALID, "profile %s: no format %s", pr->name, pr->target);
    mpx_rules *r = mpx_rules_new();
    if (!r) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int i = 0; i < PROFILE_MAX_RULES && pr->rules[i]; i++) {
        mpx_status st = mpx_rules_add(r, pr->rules[i], g, err);
        if (st != MPX_OK) { /* the table's own rules are tested (test_colour): a bug here */
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            mpx_rules_free(r);
            err->column = 0;
            return mpx_error_set(err, st, "profile %s: rule \"%s\": %s", pr->name, pr->rules[i], msg);
        }
    }
    if (base) *opts = *base;
    else mpx_plan_opts_default(opts);
    opts->target = f;
    opts->accum_block = pr->block;
    opts->keep_io = pr->keep_io;
    *rules = r;
    return MPX_OK;
}
