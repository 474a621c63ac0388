/* Host tests of shaders/math.inc against the double references of
 * tests/reference.c.
 *
 * BUILD REQUIREMENT: this translation unit MUST be compiled with
 * -ffp-contract=off (and without -ffast-math): math.inc relies on every
 * + - * rounding as written (FMA-exact residuals, Fast2Sum, the 1.5*2^23
 * rounding shifter).  Use C11 or gnu99/gnu11 (prelude_host.h typedefs 'uint',
 * which glibc's <sys/types.h> may also declare).  E.g.
 *   cc -std=gnu11 -O2 -ffp-contract=off tests/test_math_host.c tests/reference.c \
 *      -lcriterion -lm
 *
 * Each function is checked over every 4099th fp32 bit pattern, a list of edge
 * values, and (GELU, tanh-GELU, SiLU, sigmoid, swish) every float in
 * [-20, -1], the negative tails and the binades where the worst cases of the
 * cheaper sigmoid core lie (SiLU near -3.2, tanh-GELU near -2.75: results
 * just below a power of two).  The contract is <= 4 ulp everywhere; the
 * bounds below are tighter, with a little margin over the max this sweep
 * and sampled runs of tools/math_exhaustive.c found (fused FMA / the
 * unfused model, -DFFNRT_HOST_UNFUSED_FMA, built as test_math_host_unfused):
 *
 *   function      max ulp fused / unfused            bound fused / unfused
 *   exp                 0.83 / 1.15                      1.5
 *   expm1               1.43 / 1.49                      2.0
 *   erf                 1.29 / 1.38                      2.0
 *   erfc                2.42 / 3.30                      3.0 / 4.0
 *   sigmoid             1.60 / 1.62                      2.5 / 3.0
 *   tanh                1.87 / 2.35                      2.5
 *   gelu                2.79 / 3.63  (x = -7.417)        3.0 / 4.0
 *   gelu_tanh           2.24 / 2.49  (x = -2.7466)       2.5 / 3.0
 *   silu                1.95 / 2.12  (x = -3.21)         2.5 / 3.0
 *   swish (12 betas)    2.10 / 2.32                      2.5 / 3.0
 *   elu a=1.6733        1.70 / 1.55                      2.5
 *   relu, leaky 0.01    0, 0.5                           0, 0.5
 */
#include "../shaders/prelude_host.h"
#include "../shaders/math.inc"
#include "../shaders/math_grad.inc"
#include "reference.h"
#include "reference_grad.h"

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define STRIDE 4099u

/* With -DFFNRT_HOST_UNFUSED_FMA (prelude_host.h models a device whose fma()
 * rounds twice, like llvmpipe) the erfc-based functions lose up to ~1.4 ulp;
 * the 4-ulp contract still holds. */
#ifdef FFNRT_HOST_UNFUSED_FMA
#define BOUND_ERFC 4.0
#define BOUND_SIG 3.0
#else
#define BOUND_ERFC 3.0
#define BOUND_SIG 2.5
#endif

typedef float (*f1_t)(float, float);
typedef double (*r1_t)(double, double);

static float f_exp(float x, float a) { (void)a; return ffn_exp(x); }
static float f_expm1(float x, float a) { (void)a; return ffn_expm1(x); }
static float f_erf(float x, float a) { (void)a; return ffn_erf(x); }
static float f_erfc(float x, float a) { (void)a; return ffn_erfc(x); }
static float f_sigmoid(float x, float a) { (void)a; return ffn_sigmoid(x); }
static float f_tanh(float x, float a) { (void)a; return ffn_tanh(x); }
static float f_gelu(float x, float a) { (void)a; return ffn_gelu(x); }
static float f_gelu_tanh(float x, float a) { (void)a; return ffn_gelu_tanh(x); }
static float f_silu(float x, float a) { (void)a; return ffn_silu(x); }
static float f_swish(float x, float a) { return ffn_swish(x, a); }
static float f_elu(float x, float a) { return ffn_elu(x, a); }
static float f_relu(float x, float a) { (void)a; return ffn_relu(x); }
static float f_leaky(float x, float a) { return ffn_leaky_relu(x, a); }

static double r_exp(double x, double a) { (void)a; return exp(x); }
static double r_expm1(double x, double a) { (void)a; return expm1(x); }
static double r_erf(double x, double a) { (void)a; return erf(x); }
static double r_erfc(double x, double a) { (void)a; return erfc(x); }
static double r_sigmoid(double x, double a) { (void)a; return ref_sigmoid(x); }
static double r_tanh(double x, double a) { (void)a; return ref_tanh(x); }
static double r_gelu(double x, double a) { (void)a; return ref_gelu(x); }
static double r_gelu_tanh(double x, double a) { (void)a; return ref_gelu_tanh(x); }
static double r_silu(double x, double a) { (void)a; return ref_silu(x); }
static double r_swish(double x, double a) { return ref_swish(x, a); }
static double r_elu(double x, double a) { return ref_elu(x, a); }
static double r_relu(double x, double a) { (void)a; return ref_relu(x); }
static double r_leaky(double x, double a) { return ref_leaky_relu(x, a); }

static float as_f(uint32_t u) { return ffnrt_host_as_float(u); }

/* Under the sanitizers (FFNRT_SANITIZE builds, scripts/test's second pass)
 * the dense sweeps take every 61st float: ASan and UBSan look for undefined
 * operations on the code's paths, which the sample takes as the full sweep
 * does, at a 61st of the time (the full sweeps took 80 s each there); the
 * bounds are checked over every float by the first pass's build. */
#ifdef FFNRT_TEST_SAMPLED
#define DENSE_STEP 61u
#else
#define DENSE_STEP 1u
#endif

/* The next float up, DENSE_STEP floats at a time. */
static float dense_next(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if (!(x < 0.0f))
        return as_f(u + DENSE_STEP);
    return u - 0x80000000u > DENSE_STEP ? as_f(u - DENSE_STEP) : 0.0f;
}

static const uint32_t edge_bits[] = {
    0x00000000u, 0x80000000u,             /* +-0 */
    0x00000001u, 0x80000001u,             /* +-min subnormal */
    0x007fffffu, 0x807fffffu,             /* +-max subnormal */
    0x00800000u, 0x80800000u,             /* +-FLT_MIN */
    0x7f7fffffu, 0xff7fffffu,             /* +-FLT_MAX */
    0x7f800000u, 0xff800000u,             /* +-inf */
    0x7fc00000u, 0xffc00000u, 0x7f800001u, /* NaNs (quiet, negative, signalling) */
    0x7149f2cau, 0xf149f2cau,             /* +-1e30 */
    0x3f800000u, 0xbf800000u,             /* +-1 */
    0x33800000u, 0xb3800000u,             /* +-2^-24 */
};

typedef struct {
    double max;
    float worst;
} acc_t;

static void acc_one(acc_t *a, f1_t f, r1_t r, float x, float p)
{
    float got = f(x, p);
    double e = ulp_error_f32(got, r((double)x, (double)p));
    if (!(e <= a->max)) { /* also catches NaN */
        a->max = e;
        a->worst = x;
    }
}

/* strided sweep of all bit patterns + edges (+ dense [lo, hi] if lo < hi) */
static acc_t sweep(f1_t f, r1_t r, float p, float lo, float hi)
{
    acc_t a = {0.0, 0.0f};
    for (uint64_t u = 0; u < (1ull << 32); u += STRIDE)
        acc_one(&a, f, r, as_f((uint32_t)u), p);
    for (size_t i = 0; i < sizeof edge_bits / sizeof edge_bits[0]; i++)
        acc_one(&a, f, r, as_f(edge_bits[i]), p);
    if (lo < hi)
        for (float x = lo; x <= hi; x = dense_next(x))
            acc_one(&a, f, r, x, p);
    return a;
}

static void check(const char *name, f1_t f, r1_t r, float p, float lo, float hi, double bound)
{
    acc_t a = sweep(f, r, p, lo, hi);
    cr_expect(a.max <= bound, "%s(param %g): max error %.3f ulp at x = %.9g (bound %.2f)", name,
              (double)p, a.max, (double)a.worst, bound);
    cr_log_info("%s(param %g): max %.3f ulp at %.9g", name, (double)p, a.max, (double)a.worst);
}

/* ---- accuracy ------------------------------------------------------------- */

Test(accuracy, exp) { check("exp", f_exp, r_exp, 0, 0, 0, 1.5); }
Test(accuracy, expm1) { check("expm1", f_expm1, r_expm1, 0, 0, 0, 2.0); }
Test(accuracy, erf) { check("erf", f_erf, r_erf, 0, 0, 0, 2.0); }
Test(accuracy, erfc) { check("erfc", f_erfc, r_erfc, 0, 0, 0, BOUND_ERFC); }
Test(accuracy, sigmoid) { check("sigmoid", f_sigmoid, r_sigmoid, 0, -8.0f, -1.0f, BOUND_SIG); }
Test(accuracy, tanh) { check("tanh", f_tanh, r_tanh, 0, 0, 0, 2.5); }
Test(accuracy, gelu) { check("gelu", f_gelu, r_gelu, 0, -20.0f, -1.0f, BOUND_ERFC); }
Test(accuracy, gelu_tanh) { check("gelu_tanh", f_gelu_tanh, r_gelu_tanh, 0, -20.0f, -1.0f, BOUND_SIG); }
Test(accuracy, silu) { check("silu", f_silu, r_silu, 0, -20.0f, -1.0f, BOUND_SIG); }
Test(accuracy, silu_far_tail)
{
    /* x*e^x near and below FLT_MIN: x in [-110, -80] densely */
    check("silu", f_silu, r_silu, 0, -110.0f, -80.0f, BOUND_SIG);
}
Test(accuracy, swish)
{
    const float betas[] = {1.0f, 1.702f, 0.5f, 2.0f, -1.0f, -0.75f, 0.0f, -0.0f, 1e-3f, 37.5f,
                           3e-20f, 1e20f};
    for (size_t i = 0; i < sizeof betas / sizeof betas[0]; i++)
        check("swish", f_swish, r_swish, betas[i], 0, 0, BOUND_SIG);
    check("swish", f_swish, r_swish, 1.702f, -20.0f, -1.0f, BOUND_SIG);
}
Test(accuracy, elu)
{
    const float alphas[] = {1.0f, 0.5f, 1.6732632f, 2.0f};
    for (size_t i = 0; i < sizeof alphas / sizeof alphas[0]; i++)
        check("elu", f_elu, r_elu, alphas[i], 0, 0, 2.5);
}
Test(accuracy, relu) { check("relu", f_relu, r_relu, 0, 0, 0, 0.0); }
Test(accuracy, leaky_relu)
{
    const float slopes[] = {0.01f, 0.2f, 0.0f, -0.3f, 1.0f};
    for (size_t i = 0; i < sizeof slopes / sizeof slopes[0]; i++)
        check("leaky_relu", f_leaky, r_leaky, slopes[i], 0, 0, 0.5);
}

/* ---- derivatives ---------------------------------------------------------
 * The same sweeps for math_grad.inc, the error in ULP of the terms' scale
 * (max(|f'|, the sum of the terms' magnitudes), as ffnrt check counts it),
 * densely over [-20, -1]: the negative roots and tails.
 * Max over these sweeps, fused / unfused: GELU' 2.36 / 2.79 (the same as
 * all 2^32 inputs), tanh-GELU' 2.45 / 3.40 (4.36 unfused before x t' came
 * from t's two floats: over the contract), SiLU' 2.38 / 2.75, swish' 2.96 /
 * 3.39, sigmoid' and tanh' 2.40; the contract is 4. */
#ifdef FFNRT_HOST_UNFUSED_FMA
#define BOUND_GRAD 4.0
#else
#define BOUND_GRAD 3.5
#endif
typedef float (*g1_t)(float);
static float g_gelu(float x) { return ffn_gelu_grad(x); }
static float g_gelu_tanh(float x) { return ffn_gelu_tanh_grad(x); }
static float g_silu(float x) { return ffn_silu_grad(x); }
static float g_swish(float x) { return ffn_swish_grad(x, 1.702f); }
static float g_sigmoid(float x) { return ffn_sigmoid_grad(x); }
static float g_tanh(float x) { return ffn_tanh_grad(x); }

static void acc_grad(acc_t *a, g1_t f, ffnrt_activation act, float x)
{
    float got = f(x);
    double ref = ref_grad(act, (double)x, 1.0, (double)1.702f);
    double scale = fmax(fabs(ref), ref_grad_scale(act, (double)x, 1.0, (double)1.702f));
    double e = ulp_error_f32(got, ref);
    if (isfinite(e) && isfinite(ref) && scale > fabs(ref) && scale >= (double)FLT_MIN) {
        int ex;
        frexp(scale, &ex);
        e = fabs((double)got - ref) / ldexp(1.0, ex - 24);
    }
    if (!(e <= a->max)) {
        a->max = e;
        a->worst = x;
    }
}

static void check_grad(const char *name, g1_t f, ffnrt_activation act, double bound)
{
    acc_t a = {0.0, 0.0f};
    for (uint64_t u = 0; u < (1ull << 32); u += STRIDE)
        acc_grad(&a, f, act, as_f((uint32_t)u));
    for (size_t i = 0; i < sizeof edge_bits / sizeof edge_bits[0]; i++)
        acc_grad(&a, f, act, as_f(edge_bits[i]));
    for (float x = -20.0f; x <= -1.0f; x = dense_next(x))
        acc_grad(&a, f, act, x);
    cr_expect(a.max <= bound, "%s': max error %.3f ulp at x = %.9g (bound %.2f)", name, a.max, (double)a.worst,
              bound);
    cr_log_info("%s': max %.3f ulp at %.9g", name, a.max, (double)a.worst);
}

Test(gradient_accuracy, gelu) { check_grad("gelu", g_gelu, FFNRT_ACT_GELU, BOUND_SIG); }
Test(gradient_accuracy, gelu_tanh) { check_grad("gelu_tanh", g_gelu_tanh, FFNRT_ACT_GELU_TANH, BOUND_GRAD); }
Test(gradient_accuracy, silu) { check_grad("silu", g_silu, FFNRT_ACT_SILU, BOUND_SIG); }
Test(gradient_accuracy, swish) { check_grad("swish", g_swish, FFNRT_ACT_SWISH, BOUND_GRAD); }
Test(gradient_accuracy, sigmoid) { check_grad("sigmoid", g_sigmoid, FFNRT_ACT_SIGMOID, 3.0); }
Test(gradient_accuracy, tanh) { check_grad("tanh", g_tanh, FFNRT_ACT_TANH, 3.0); }

/* ---- special values ----------------------------------------------------- */

#define NEG0 (-0.0f)
static int is_pos0(float v) { return v == 0.0f && !signbit(v); }
static int is_neg0(float v) { return v == 0.0f && signbit(v); }

Test(special, nan_in_nan_out)
{
    const float nans[] = {as_f(0x7fc00000u), as_f(0xffc00000u), as_f(0x7f800001u),
                          as_f(0x7fffffffu)};
    for (size_t i = 0; i < 4; i++) {
        float n = nans[i];
        cr_expect(isnan(ffn_exp(n)));
        cr_expect(isnan(ffn_expm1(n)));
        cr_expect(isnan(ffn_erf(n)));
        cr_expect(isnan(ffn_erfc(n)));
        cr_expect(isnan(ffn_sigmoid(n)));
        cr_expect(isnan(ffn_tanh(n)));
        cr_expect(isnan(ffn_relu(n)));
        cr_expect(isnan(ffn_leaky_relu(n, 0.01f)));
        cr_expect(isnan(ffn_elu(n, 1.0f)));
        cr_expect(isnan(ffn_gelu(n)));
        cr_expect(isnan(ffn_gelu_tanh(n)));
        cr_expect(isnan(ffn_silu(n)));
        cr_expect(isnan(ffn_swish(n, 1.0f)));
        cr_expect(isnan(ffn_swish(1.0f, n)));
    }
}

Test(special, infinities)
{
    const float inf = INFINITY;
    cr_expect(ffn_exp(inf) == inf);
    cr_expect(is_pos0(ffn_exp(-inf)));
    cr_expect(ffn_expm1(inf) == inf);
    cr_expect(ffn_expm1(-inf) == -1.0f);
    cr_expect(ffn_erf(inf) == 1.0f && ffn_erf(-inf) == -1.0f);
    cr_expect(is_pos0(ffn_erfc(inf)) && ffn_erfc(-inf) == 2.0f);
    cr_expect(ffn_gelu(inf) == inf);
    cr_expect(is_neg0(ffn_gelu(-inf)));
    cr_expect(ffn_gelu_tanh(inf) == inf);
    cr_expect(is_neg0(ffn_gelu_tanh(-inf)));
    cr_expect(ffn_silu(inf) == inf);
    cr_expect(is_neg0(ffn_silu(-inf)));
    cr_expect(ffn_swish(inf, 1.5f) == inf);
    cr_expect(is_neg0(ffn_swish(-inf, 1.5f)));
    cr_expect(is_neg0(ffn_swish(-inf, 1e-30f)));
    cr_expect(ffn_swish(-inf, -2.0f) == -inf);
    cr_expect(is_pos0(ffn_swish(inf, -2.0f)));
    cr_expect(is_pos0(ffn_sigmoid(-inf)));
    cr_expect(ffn_sigmoid(inf) == 1.0f);
    cr_expect(ffn_tanh(inf) == 1.0f && ffn_tanh(-inf) == -1.0f);
    cr_expect(ffn_elu(-inf, 1.0f) == -1.0f && ffn_elu(-inf, 0.5f) == -0.5f);
    cr_expect(ffn_elu(inf, 1.0f) == inf);
    cr_expect(is_pos0(ffn_relu(-inf)) && ffn_relu(inf) == inf);
    cr_expect(ffn_leaky_relu(-inf, 0.01f) == -inf);
    cr_expect(ffn_leaky_relu(-inf, -0.5f) == inf);
    cr_expect(isnan(ffn_leaky_relu(-inf, 0.0f))); /* IEEE -inf * 0 */
}

Test(special, signed_zeros)
{
    cr_expect(is_neg0(ffn_gelu(NEG0)) && is_pos0(ffn_gelu(0.0f)));
    cr_expect(is_neg0(ffn_gelu_tanh(NEG0)) && is_pos0(ffn_gelu_tanh(0.0f)));
    cr_expect(is_neg0(ffn_silu(NEG0)) && is_pos0(ffn_silu(0.0f)));
    cr_expect(is_neg0(ffn_swish(NEG0, 1.0f)) && is_neg0(ffn_swish(NEG0, -1.0f)));
    cr_expect(is_neg0(ffn_swish(NEG0, 0.0f)) && is_pos0(ffn_swish(0.0f, 2.0f)));
    cr_expect(is_neg0(ffn_tanh(NEG0)) && is_pos0(ffn_tanh(0.0f)));
    cr_expect(is_neg0(ffn_erf(NEG0)) && is_pos0(ffn_erf(0.0f)));
    cr_expect(is_neg0(ffn_expm1(NEG0)) && is_pos0(ffn_expm1(0.0f)));
    cr_expect(is_neg0(ffn_elu(NEG0, 1.0f)) && is_pos0(ffn_elu(0.0f, 1.0f)));
    cr_expect(is_neg0(ffn_relu(NEG0)) && is_pos0(ffn_relu(0.0f)));
    cr_expect(is_neg0(ffn_leaky_relu(NEG0, 0.01f)));
    cr_expect(is_pos0(ffn_leaky_relu(NEG0, -0.5f))); /* -0 * slope */
    cr_expect(is_pos0(ffn_leaky_relu(0.0f, -0.5f)));
    cr_expect(ffn_exp(NEG0) == 1.0f && ffn_erfc(NEG0) == 1.0f && ffn_sigmoid(NEG0) == 0.5f);
}

Test(special, finite_in_finite_out)
{
    /* sigmoid/silu/gelu/tanh never produce NaN/inf for finite inputs */
    for (uint64_t u = 0; u < (1ull << 32); u += 65521u) {
        float x = as_f((uint32_t)u);
        if (!isfinite(x))
            continue;
        cr_expect(isfinite(ffn_sigmoid(x)) && isfinite(ffn_tanh(x)) && isfinite(ffn_erf(x)) &&
                      isfinite(ffn_erfc(x)) && isfinite(ffn_gelu(x)) && isfinite(ffn_gelu_tanh(x)) &&
                      isfinite(ffn_silu(x)) && isfinite(ffn_swish(x, 1.702f)) &&
                      isfinite(ffn_swish(x, -1.0f)) && isfinite(ffn_elu(x, 1.0f)),
                  "non-finite result at x = %.9g", (double)x);
        cr_expect(FABS(ffn_tanh(x)) <= 1.0f && ffn_sigmoid(x) >= 0.0f && ffn_sigmoid(x) <= 1.0f);
    }
    cr_expect(isfinite(ffn_swish(FLT_MAX, 1e-38f)) && isfinite(ffn_swish(-FLT_MAX, 1e30f)));
    cr_expect(isfinite(ffn_expm1(88.7f)) && isinf(ffn_expm1(88.73f)));
    cr_expect(isfinite(ffn_exp(88.72f)) && isinf(ffn_exp(88.73f)));
}

Test(special, subnormals)
{
    /* tiny inputs: x/2-like results and x*e^x in the subnormal range */
    float tiny = as_f(0x00000001u);
    cr_expect(ffn_gelu(as_f(0x00000002u)) == tiny);
    cr_expect(ffn_silu(as_f(0x00000002u)) == tiny);
    cr_expect(ffn_tanh(tiny) == tiny && ffn_erf(tiny) == tiny);
    cr_expect(ffn_expm1(-tiny) == -tiny && ffn_elu(-tiny, 1.0f) == -tiny);
    cr_expect(ffn_sigmoid(-103.5f) > 0.0f && ffn_sigmoid(-103.5f) < FLT_MIN);
}

/* ---- the error measure itself ------------------------------------------- */

Test(ulp, measure)
{
    cr_expect(ulp_error_f32(1.0f, 1.0) == 0.0);
    cr_expect(ulp_error_f32(nextafterf(1.0f, 2.0f), 1.0) == 1.0);
    cr_expect(ulp_error_f32(nextafterf(1.0f, 0.0f), 1.0) == 0.5); /* ulp at ref = 1 is 2^-23 */
    cr_expect(ulp_error_f32(0.0f, ldexp(1.0, -149)) == 1.0);
    cr_expect(ulp_error_f32(0.0f, ldexp(1.0, -150)) == 0.5);
    cr_expect(ulp_error_f32(NAN, NAN) == 0.0);
    cr_expect(isinf(ulp_error_f32(1.0f, NAN)) && isinf(ulp_error_f32(NAN, 1.0)));
    cr_expect(ulp_error_f32(INFINITY, INFINITY) == 0.0);
    cr_expect(isinf(ulp_error_f32(-INFINITY, INFINITY)));
    cr_expect(ulp_error_f32(INFINITY, 1e39) == 0.0);          /* rounds to inf */
    cr_expect(ulp_error_f32(FLT_MAX, (double)FLT_MAX) == 0.0);
    cr_expect(ulp_error_f32(FLT_MAX, 4e38) > 1.0);             /* FLT_MAX's ulp */
    cr_expect(isinf(ulp_error_f32(1.0f, INFINITY)));
}

Test(ulp, measure_ftz)
{
    double sub = ldexp(1.0, -140);
    cr_expect(ulp_error_f32_ftz(0.0f, sub, sub) == 0.0);
    cr_expect(ulp_error_f32_ftz(-0.0f, -sub, -sub) == 0.0);
    cr_expect(ulp_error_f32_ftz(0.0f, 1e-30, 1e-30) > 1.0);
    /* flushed input: got matches the reference at 0 */
    cr_expect(ulp_error_f32_ftz(0.5f, 0.5 + 1e-40, 0.5) == 0.0);
}
