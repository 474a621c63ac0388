/* A feed-forward layer in double precision, dense or gated, from double
 * weights (the values the device holds: rounded to the storage type, or a
 * block format's dequantized values), with the op table's activation
 * reference. Host only. */
#ifndef FFNRT_REFERENCE_FFN_H
#define FFNRT_REFERENCE_FFN_H

#include "ffnrt.h"

#include <stdint.h>

/* y[t] = W_out·hid + b_out for each of `tokens` rows x[t] of d_model, with
 * dense: hid = phi(W_in·x + b_in); gated: hid = phi(W_in·x + b_in) *
 * (W_value·x + b_value) (W_in is the gate). phi = ref_forward(act, ., alpha,
 * beta). Weights [out, in] row-major; any bias may be NULL. */
void ref_ffn(int gated, ffnrt_activation act, double alpha, double beta, int64_t d_model, int64_t hidden,
             int64_t tokens, const double *x, const double *w_in, const double *b_in, const double *w_value,
             const double *b_value, const double *w_out, const double *b_out, double *y);

/* ||y - ref||_2 / ||ref||_2 (||y - ref|| where ref is 0); INFINITY when a
 * value of y is NaN or infinite. */
double ref_normwise_error(const float *y, const double *ref, int64_t n);

#endif
