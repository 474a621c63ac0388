/* The parameters the accuracy contract is stated for, shared by the tests
 * and `ffnrt check`: leaky/PReLU slope, ELU alpha, swish beta; and the
 * contract's bounds (docs/accuracy.md's table, the FFN suites' normwise
 * bounds) as functions, which the conformance matrix (src/lab/conformance.c)
 * reads rather than stating them again. */
#ifndef FFNRT_TESTS_CONTRACT_H
#define FFNRT_TESTS_CONTRACT_H

#include "ffnrt.h"

#include <math.h>
#include <stdint.h>

#define LEAKY_SLOPE 0.1f
#define ELU_ALPHA 1.5f
#define SWISH_BETA 1.7f

/* The alpha an activation runs with under the contract. */
static inline float contract_alpha(ffnrt_activation act) { return act == FFNRT_ACT_ELU ? ELU_ALPHA : LEAKY_SLOPE; }

/* An activation's forward bound in ULP of the storage type, fp32 arithmetic:
 * fp32 relu 0, leaky/prelu 0.5 (one rounding of slope*x), the rest 4; fp16
 * and bf16 storage 1 (docs/accuracy.md, "The contract"). */
static inline double contract_ulp_bound(ffnrt_activation act, ffnrt_dtype t)
{
    if (t != FFNRT_DTYPE_F32)
        return 1.0;
    return act == FFNRT_ACT_RELU ? 0.0 : act == FFNRT_ACT_LEAKY_RELU || act == FFNRT_ACT_PRELU ? 0.5 : 4.0;
}

/* A GLU kind's forward bound: fp32 5 ULP (one more product), 16-bit 1. */
static inline double contract_glu_ulp_bound(ffnrt_dtype t) { return t == FFNRT_DTYPE_F32 ? 5.0 : 1.0; }

/* An FFN layer's normwise relative error bound against the double reference
 * of the weights the device holds (dequantized, for block formats), as
 * tests/test_ffn.c derives it: fp32 4(sqrt(d) + sqrt(h) + 2)u, u = 2^-24;
 * fp16 / bf16 storage 4 u16 (2^-11, 2^-8). */
static inline double contract_ffn_bound(ffnrt_dtype t, int64_t d_model, int64_t hidden)
{
    if (t == FFNRT_DTYPE_F16)
        return 4.0 * ldexp(1.0, -11);
    if (t == FFNRT_DTYPE_BF16)
        return 4.0 * ldexp(1.0, -8);
    return 4.0 * (sqrt((double)d_model) + sqrt((double)hidden) + 2.0) * ldexp(1.0, -24);
}

#endif
