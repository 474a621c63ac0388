#include "reference16.h"
#include "ffnrt.h"

#include <float.h>
#include <math.h>

static int mantissa_bits(ffnrt_dtype t) { return t == FFNRT_DTYPE_F32 ? 23 : t == FFNRT_DTYPE_F16 ? 10 : 7; }
static int min_exponent(ffnrt_dtype t) { return t == FFNRT_DTYPE_F16 ? -14 : -126; }

double max_finite_of_type(ffnrt_dtype t)
{
    return t == FFNRT_DTYPE_F32 ? FLT_MAX : t == FFNRT_DTYPE_F16 ? 65504.0 : ldexp(255.0, 120);
}

double ulp_of_type(ffnrt_dtype t, double a)
{
    a = fabs(a);
    if (!(a >= ldexp(1.0, min_exponent(t)))) /* NaN too */
        return ldexp(1.0, min_exponent(t) - mantissa_bits(t));
    if (a > max_finite_of_type(t))
        a = max_finite_of_type(t);
    return ldexp(1.0, ilogb(a) - mantissa_bits(t));
}

double ulp_error_of_type(ffnrt_dtype t, double got, double ref, double scale)
{
    if (isnan(ref) || isnan(got))
        return isnan(ref) && isnan(got) ? 0.0 : INFINITY;
    double overflow = max_finite_of_type(t) + ulp_of_type(t, max_finite_of_type(t)) / 2; /* rounds to inf from here */
    if (isinf(got))
        return (got > 0) == (ref > 0) && fabs(ref) >= overflow ? 0.0 : INFINITY;
    if (isinf(ref))
        return INFINITY;
    return fabs(got - ref) / ulp_of_type(t, scale);
}

static double ulp_error_16(double g, double ref, int mant_bits, int min_exp, double max_finite, double overflow)
{
    if (isnan(ref))
        return isnan(g) ? 0.0 : INFINITY;
    if (isnan(g))
        return INFINITY;
    double a = fabs(ref);
    if (isinf(g)) {
        if ((g > 0) != (ref > 0))
            return INFINITY;
        if (a >= overflow - ldexp(1.0, (int)log2(overflow) - mant_bits - 2)) /* rounds to inf */
            return 0.0;
        g = g > 0 ? overflow : -overflow;
    }
    if (isinf(ref))
        return INFINITY;
    double ulp;
    if (a < ldexp(1.0, min_exp)) {
        ulp = ldexp(1.0, min_exp - mant_bits);
    } else {
        int e;
        frexp(a > max_finite ? max_finite : a, &e);
        ulp = ldexp(1.0, e - 1 - mant_bits);
    }
    return fabs(g - ref) / ulp;
}

double ulp_error_f16(uint16_t got, double ref)
{
    return ulp_error_16(ffnrt_f16_to_f32(got), ref, 10, -14, 65504.0, 65536.0);
}

double ulp_error_bf16(uint16_t got, double ref, int flush_ok)
{
    double g = ffnrt_bf16_to_f32(got);
    if (flush_ok && g == 0.0 && fabs(ref) < ldexp(1.0, -126))
        return 0.0;
    return ulp_error_16(g, ref, 7, -126, ldexp(255.0, 120), ldexp(1.0, 128));
}
