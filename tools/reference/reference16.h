/* ULP error in the 16-bit storage types, against a double reference. */
#ifndef FFNRT_TESTS_REFERENCE16_H
#define FFNRT_TESTS_REFERENCE16_H

#include "ffnrt.h"
#include <stdint.h>

/* The ULP of storage type t at magnitude a: 2^(e - mantissa bits) in binade
 * e, the smallest subnormal step below the normal range (and for NaN), the
 * largest finite value's ULP above it. */
double ulp_of_type(ffnrt_dtype t, double a);
/* The largest finite value of t. */
double max_finite_of_type(ffnrt_dtype t);

/* |got - ref| in ULP of t at scale (>= |ref|), any storage type: NaN vs
 * NaN 0; a lost NaN, or a finite result that became Inf or NaN, INFINITY;
 * an infinite got of ref's sign 0 where ref rounds to it. */
double ulp_error_of_type(ffnrt_dtype t, double got, double ref, double scale);

/* |got - ref| in ULP of fp16 (binade e: 2^(e-10); 2^-24 below 2^-14;
 * a result past 65504 counts against 65536, so +inf for ref >= 65520 is 0).
 * NaN vs NaN: 0; NaN mismatch: INFINITY. */
double ulp_error_f16(uint16_t got, double ref);
/* The same for bf16 (binade e: 2^(e-7); 2^-133 below 2^-126). With
 * flush_ok, a zero where |ref| < 2^-126 counts as 0 (devices that flush). */
double ulp_error_bf16(uint16_t got, double ref, int flush_ok);

#endif
