/* Double-precision derivatives of the activations, and for each the scale
 * its error is measured against: derivatives with a root (SiLU, swish,
 * both GELUs) are sums of terms that cancel there, so no fp32 evaluation
 * can promise a relative error near the root; the error is counted in ULP
 * of the larger of |f'(x)| and the sum of the terms' magnitudes. */
#ifndef FFNRT_TESTS_REFERENCE_GRAD_H
#define FFNRT_TESTS_REFERENCE_GRAD_H

#include "ffnrt.h"

/* f'(x) for act with the given alpha (leaky slope, ELU alpha) and beta. */
double ref_grad(ffnrt_activation act, double x, double alpha, double beta);
/* The magnitude the error of f'(x) is measured in ULP of (see above). */
double ref_grad_scale(ffnrt_activation act, double x, double alpha, double beta);
/* f(x), the forward reference, for the same parameters. */
double ref_forward(ffnrt_activation act, double x, double alpha, double beta);

#endif
