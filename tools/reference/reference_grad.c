#include "reference_grad.h"
#include "reference.h"
#include "ffnrt_op_table.h"

#include <math.h>

static double sigmoid(double x) { return ref_sigmoid(x); }
static const double inv_sqrt_2pi = 0.39894228040143267794;
static const double gelu_tanh_c = 1.5957691216057307117; /* 2 sqrt(2/pi) */
static const double gelu_tanh_a = 0.044715;

/* Each op-table row's reference (include/ffnrt_op_table.h): f(x), and the terms
 * of f'(x), whose sum is the derivative, with the row's parameters a (the
 * leaky slope or ELU alpha) and b (beta). A new row needs ref_op_<name>
 * and ref_op_<name>_grad here; a missing one is a compile error. */
static double ref_op_relu(double x, double a, double b) { (void)a, (void)b; return ref_relu(x); }
static double ref_op_leaky_relu(double x, double a, double b) { (void)b; return ref_leaky_relu(x, a); }
static double ref_op_prelu(double x, double a, double b) { (void)b; return ref_leaky_relu(x, a); }
static double ref_op_elu(double x, double a, double b) { (void)b; return ref_elu(x, a); }
static double ref_op_gelu(double x, double a, double b) { (void)a, (void)b; return ref_gelu(x); }
static double ref_op_gelu_tanh(double x, double a, double b) { (void)a, (void)b; return ref_gelu_tanh(x); }
static double ref_op_silu(double x, double a, double b) { (void)a, (void)b; return ref_silu(x); }
static double ref_op_swish(double x, double a, double b) { (void)a; return ref_swish(x, b); }
static double ref_op_sigmoid(double x, double a, double b) { (void)a, (void)b; return ref_sigmoid(x); }
static double ref_op_tanh(double x, double a, double b) { (void)a, (void)b; return ref_tanh(x); }

static void ref_op_relu_grad(double x, double a, double b, double *t1, double *t2)
{
    (void)a, (void)b, (void)t2;
    *t1 = x > 0 ? 1.0 : 0.0; /* relu'(0) = 0 */
}
static void ref_op_leaky_relu_grad(double x, double a, double b, double *t1, double *t2)
{
    (void)b, (void)t2;
    *t1 = x > 0 ? 1.0 : a; /* the negative side at 0 */
}
static void ref_op_prelu_grad(double x, double a, double b, double *t1, double *t2)
{
    ref_op_leaky_relu_grad(x, a, b, t1, t2);
}
static void ref_op_elu_grad(double x, double a, double b, double *t1, double *t2)
{
    (void)b, (void)t2;
    *t1 = x > 0 ? 1.0 : a * exp(x);
}
static void ref_op_sigmoid_grad(double x, double a, double b, double *t1, double *t2)
{
    (void)a, (void)b, (void)t2;
    *t1 = sigmoid(x) * sigmoid(-x);
}
static void ref_op_tanh_grad(double x, double a, double b, double *t1, double *t2)
{
    (void)a, (void)b, (void)t2;
    double e = exp(-2 * fabs(x));
    *t1 = 4 * e / ((1 + e) * (1 + e));
}
static void ref_op_swish_grad(double x, double a, double b, double *t1, double *t2)
{
    (void)a;
    double z = b * x;
    *t1 = sigmoid(z);
    *t2 = z * sigmoid(z) * sigmoid(-z);
}
static void ref_op_silu_grad(double x, double a, double b, double *t1, double *t2)
{
    (void)b;
    ref_op_swish_grad(x, a, 1.0, t1, t2);
}
static void ref_op_gelu_grad(double x, double a, double b, double *t1, double *t2)
{
    (void)a, (void)b;
    *t1 = 0.5 * erfc(-x / sqrt(2.0));
    *t2 = x * inv_sqrt_2pi * exp(-0.5 * x * x);
}
static void ref_op_gelu_tanh_grad(double x, double a, double b, double *t1, double *t2)
{
    (void)a, (void)b;
    double t = gelu_tanh_c * (x + gelu_tanh_a * x * x * x);
    double dt = gelu_tanh_c * (1 + 3 * gelu_tanh_a * x * x);
    *t1 = sigmoid(t);
    *t2 = x * sigmoid(t) * sigmoid(-t) * dt;
}

typedef struct ref_row {
    double (*forward)(double x, double a, double b);
    void (*grad_terms)(double x, double a, double b, double *t1, double *t2);
} ref_row;

#define REF_ROW_(E, name, ...) [FFNRT_ACT_##E] = {ref_op_##name, ref_op_##name##_grad},
static const ref_row ref_rows[FFNRT_ACT_COUNT] = {FFNRT_ACTIVATIONS(REF_ROW_)};
#undef REF_ROW_

double ref_forward(ffnrt_activation act, double x, double alpha, double beta)
{
    return (unsigned)act < FFNRT_ACT_COUNT ? ref_rows[act].forward(x, alpha, beta) : NAN;
}

/* The terms of each derivative; their sum is f'(x). */
static void grad_terms(ffnrt_activation act, double x, double alpha, double beta, double *t1, double *t2)
{
    *t1 = NAN;
    *t2 = 0;
    if ((unsigned)act < FFNRT_ACT_COUNT)
        ref_rows[act].grad_terms(x, alpha, beta, t1, t2);
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
