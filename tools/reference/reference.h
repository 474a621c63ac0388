/* Double-precision reference implementations of the ffnrt activations and
 * the fp32 ULP error measure used by the tests.  Plain C99 + libm. */
#ifndef FFNRT_TESTS_REFERENCE_H
#define FFNRT_TESTS_REFERENCE_H

double ref_sigmoid(double x);            /* exp(x)/(1+exp(x)) for x < 0 */
double ref_tanh(double x);
double ref_relu(double x);               /* x < 0 ? 0 : x (relu(-0) = -0, NaN passes) */
double ref_leaky_relu(double x, double a); /* sign bit set ? a*x : x */
double ref_elu(double x, double alpha);  /* x > 0 ? x : alpha*expm1(x) */
double ref_gelu(double x);               /* 0.5*x*erfc(-x/sqrt(2)) */
double ref_gelu_tanh(double x);          /* x*sigmoid(2u), u = sqrt(2/pi)(x+0.044715x^3) */
double ref_silu(double x);               /* x*sigmoid(x) */
double ref_swish(double x, double beta); /* x*sigmoid(beta*x) */

/* |got - ref| in units of the fp32 ULP at ref: 2^(e-23) in binade e, 2^-149
 * below FLT_MIN, FLT_MAX's ULP (2^104) at and above 2^128.  NaN vs NaN -> 0,
 * NaN mismatch -> INFINITY; an infinite got of ref's sign counts as 2^128
 * (so 0 when ref itself is >= 2^128 or infinite). */
double ulp_error_f32(float got, double ref);

/* The same for a device that flushes subnormals: a +-0 result is accepted
 * (error 0) where |ref| < FLT_MIN, and a subnormal input may have been
 * flushed, so the error is the smaller of the errors against ref and against
 * ref_flushed, the reference at the flushed input (pass ref again when the
 * input is not subnormal). */
double ulp_error_f32_ftz(float got, double ref, double ref_flushed);

#endif
