#include "reference_grad.h"
#include "reference.h"

#include <math.h>

static double sigmoid(double x) { return ref_sigmoid(x); }
static const double inv_sqrt_2pi = 0.39894228040143267794;
static const double gelu_tanh_c = 1.5957691216057307117; /* 2 sqrt(2/pi) */
static const double gelu_tanh_a = 0.044715;

double ref_forward(ffnrt_activation act, double x, double alpha, double beta)
{
    switch (act) {
    case FFNRT_ACT_RELU: return ref_relu(x);
    case FFNRT_ACT_LEAKY_RELU:
    case FFNRT_ACT_PRELU: return ref_leaky_relu(x, alpha);
    case FFNRT_ACT_ELU: return ref_elu(x, alpha);
    case FFNRT_ACT_GELU: return ref_gelu(x);
    case FFNRT_ACT_GELU_TANH: return ref_gelu_tanh(x);
    case FFNRT_ACT_SILU: return ref_silu(x);
    case FFNRT_ACT_SWISH: return ref_swish(x, beta);
    case FFNRT_ACT_SIGMOID: return ref_sigmoid(x);
    case FFNRT_ACT_TANH: return ref_tanh(x);
    default: return NAN;
    }
}

/* The terms of each derivative; their sum is f'(x). */
static void grad_terms(ffnrt_activation act, double x, double alpha, double beta, double *t1, double *t2)
{
    *t2 = 0;
    switch (act) {
    case FFNRT_ACT_RELU: *t1 = x > 0 ? 1.0 : 0.0; break; /* relu'(0) = 0 */
    case FFNRT_ACT_LEAKY_RELU:
    case FFNRT_ACT_PRELU: *t1 = x > 0 ? 1.0 : alpha; break; /* the negative side at 0 */
    case FFNRT_ACT_ELU: *t1 = x > 0 ? 1.0 : alpha * exp(x); break;
    case FFNRT_ACT_SIGMOID: *t1 = sigmoid(x) * sigmoid(-x); break;
    case FFNRT_ACT_TANH: {
        double e = exp(-2 * fabs(x));
        *t1 = 4 * e / ((1 + e) * (1 + e));
        break;
    }
    case FFNRT_ACT_SILU: beta = 1.0; /* fall through */
    case FFNRT_ACT_SWISH: {
        double z = beta * x;
        *t1 = sigmoid(z);
        *t2 = z * sigmoid(z) * sigmoid(-z);
        break;
    }
    case FFNRT_ACT_GELU:
        *t1 = 0.5 * erfc(-x / sqrt(2.0));
        *t2 = x * inv_sqrt_2pi * exp(-0.5 * x * x);
        break;
    case FFNRT_ACT_GELU_TANH: {
        double t = gelu_tanh_c * (x + gelu_tanh_a * x * x * x);
        double dt = gelu_tanh_c * (1 + 3 * gelu_tanh_a * x * x);
        *t1 = sigmoid(t);
        *t2 = x * sigmoid(t) * sigmoid(-t) * dt;
        break;
    }
    default: *t1 = NAN; break;
    }
}

double ref_grad(ffnrt_activation act, double x, double alpha, double beta)
{
    if (isnan(x))
        return x;
    double t1, t2;
    grad_terms(act, x, alpha, beta, &t1, &t2);
    if (isinf(x)) /* the limits, where x * (something -> 0) is 0 */
        return isnan(t2) || isinf(t2) ? t1 : t1 + t2;
    return t1 + t2;
}

double ref_grad_scale(ffnrt_activation act, double x, double alpha, double beta)
{
    double t1, t2;
    grad_terms(act, x, alpha, beta, &t1, &t2);
    if (isnan(t2) || isinf(t2))
        t2 = 0;
    return fabs(t1) + fabs(t2);
}
