/* Double-precision references for the ffnrt activations; see reference.h. */
#include "reference.h"

#include <float.h>
#include <math.h>

double ref_sigmoid(double x)
{
    if (isnan(x))
        return x;
    if (x >= 0.0)
        return 1.0 / (1.0 + exp(-x));
    double t = exp(x);
    return t / (1.0 + t);
}

double ref_tanh(double x) { return tanh(x); }

double ref_relu(double x) { return x < 0.0 ? 0.0 : x; }

double ref_leaky_relu(double x, double a) { return signbit(x) ? a * x : x; }

double ref_elu(double x, double alpha) { return x > 0.0 ? x : alpha * expm1(x); }

double ref_gelu(double x)
{
    if (isinf(x))
        return x > 0.0 ? x : -0.0;
    return 0.5 * x * erfc(-x / sqrt(2.0));
}

double ref_gelu_tanh(double x)
{
    if (isinf(x))
        return x > 0.0 ? x : -0.0;
    const double k = sqrt(2.0 / 3.14159265358979323846);
    double u = k * (x + 0.044715 * x * x * x);
    return x * ref_sigmoid(2.0 * u);
}

double ref_silu(double x) { return ref_swish(x, 1.0); }

double ref_swish(double x, double beta)
{
    double z = beta * x;
    if (isnan(z) || isnan(x))
        return NAN;
    if (isinf(x)) /* x * sigmoid(z): limits, inf * 0 -> signed 0 */
        return z > 0.0 ? x : (x > 0.0 ? 0.0 : -0.0);
    return x * ref_sigmoid(z);
}

double ulp_error_f32(float got, double ref)
{
    if (isnan(ref))
        return isnan(got) ? 0.0 : INFINITY;
    if (isnan(got))
        return INFINITY;
    double g = got;
    double a = fabs(ref);
    const double two128 = ldexp(1.0, 128);
    if (isinf(got)) {
        if ((got > 0) != (ref > 0))
            return INFINITY;
        if (a >= two128)
            return 0.0;
        g = got > 0 ? two128 : -two128;
    }
    double ulp;
    if (a < (double)FLT_MIN) {
        ulp = ldexp(1.0, -149);
    } else if (a >= two128) {
        ulp = ldexp(1.0, 104);
    } else {
        int e;
        frexp(a, &e); /* a = m 2^e, m in [0.5, 1): binade e-1 */
        ulp = ldexp(1.0, e - 1 - 23);
    }
    if (isinf(ref)) /* finite got vs infinite ref */
        return INFINITY;
    return fabs(g - ref) / ulp;
}

double ulp_error_f32_ftz(float got, double ref, double ref_flushed)
{
    double e = ulp_error_f32(got, ref);
    double e2 = ulp_error_f32(got, ref_flushed);
    if (e2 < e)
        e = e2;
    if (got == 0.0f && (fabs(ref) < (double)FLT_MIN || fabs(ref_flushed) < (double)FLT_MIN))
        e = 0.0;
    return e;
}
