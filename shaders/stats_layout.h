/* The statistics buffer's layout, in 32-bit words: one file read by the
 * kernels (embedded before stats.inc) and by the host (ops/stats.c), so
 * the two cannot disagree. Only #defines, valid C, OpenCL C and GLSL.
 *
 * Every count is 64 bits kept as two words (low, high) and added with
 * 32-bit atomics and a carry, so no count wraps whatever the call's size.
 * Histogram bins are single words: a histogram bins the values of one
 * tensor, and ffnrt caps a tensor below 2^32 elements. */
#ifndef FFNRT_STATS_LAYOUT_H
#define FFNRT_STATS_LAYOUT_H

#define STATS_MAX_BINS 256u                    /* bins in [lo, hi) */
#define STATS_HIST_WORDS (STATS_MAX_BINS + 2u) /* + underflow (first) and overflow (last) */

/* Counters (64-bit, word pairs at SW_COUNTERS + 2 * SC_*). */
#define SC_IN_NAN 0u        /* NaN in the call's inputs */
#define SC_IN_INF 1u        /* +-Inf in the call's inputs */
#define SC_OUT_NAN 2u       /* NaN in the call's outputs, as stored */
#define SC_OUT_INF 3u
#define SC_PRE_NAN 4u       /* NaN among the pre-activations */
#define SC_PRE_INF 5u
#define SC_ZERO 6u          /* activation outputs (backward: gradients) exactly +-0, as stored */
#define SC_SATURATED 7u     /* pre-activations with |x| > the saturation cut */
#define SC_HIDDEN_BAD 8u    /* FFN: non-finite hidden activations, as stored */
#define SC_COUNT 9u

#define SW_COUNTERS 0u
#define SW_FIRST 18u   /* smallest flat index of a non-finite output; 0xffffffff: none */
#define SW_MIN 19u     /* smallest finite pre-activation, as an ordered key (-0 below +0); 0xffffffff: none */
#define SW_MAX 20u     /* largest, as an ordered key; 0: none */
#define SW_FLAGS 21u   /* bit q: a partial of moment q was not finite (the moment overflowed fp32) */
#define SW_NORMS 22u   /* the finish pass (stats.kernel): sums and maxima of the token norms, 4 floats */
#define SW_HIST 32u                                /* pre-activation histogram */
#define SW_GATE_HIST (SW_HIST + STATS_HIST_WORDS)  /* gated: the gate activation's histogram */
/* Moments: the sum and the sum of squares of the finite pre-activations,
 * exactly, as the sum of the workgroups' partials (each a float): partial
 * m * 2^(e - 150) is added, as a signed 64-bit integer, to the bucket of
 * its exponent field e. Integer additions commute, so the result does not
 * depend on the order workgroups finish in. */
#define SQ_SUM 0u
#define SQ_SUMSQ 1u
#define SW_SUMS (SW_GATE_HIST + STATS_HIST_WORDS)
#define SW_HEADER (SW_SUMS + 2u * 256u * 2u)       /* words every call zeroes and reads back */

#endif
