/* Exhaustive accuracy check of shaders/math.inc and math_grad.inc on the
 * host: every one of the 2^32 fp32 inputs against the double references of
 * tools/reference/ (reference.c; reference_grad.c for the derivatives, whose
 * error is in ULP of the terms' scale, as ffnrt check measures it).
 *
 *   cmake --build build --target math_exhaustive math_exhaustive_unfused
 *   (or: cc -O2 -fopenmp -ffp-contract=off -std=gnu99 tools/math_exhaustive.c \
 *      tools/reference/reference.c -lm -o /tmp/math_exhaustive, plus
 *      -DFFNRT_HOST_UNFUSED_FMA for the model of a device whose fma() rounds
 *      twice, like llvmpipe)
 *   build/math_exhaustive            # all functions (~1.5 h on 2 cores)
 *   build/math_exhaustive gelu silu  # some of them (derivatives: gelu_grad, ...)
 *   build/math_exhaustive -s 17 ...  # only every 17th bit pattern
 *
 * Prints, per function, the max ULP error, the worst input, and the number
 * of inputs with error > 1 and > 2 ULP.  -ffp-contract=off is required. */
#include "../shaders/prelude_host.h"
#include "../shaders/math.inc"
#include "../shaders/math_grad.inc"
#include "reference/reference.h"
#include "reference/reference_grad.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    float (*f)(float);
    double (*ref)(double);
    double (*scale)(double); /* derivatives: the error is in ULP of this; NULL: |ref| */
} fn_t;

static float swish_b(float x) { return ffn_swish(x, 1.702f); }
static double rswish_b(double x) { return ref_swish(x, (double)1.702f); }
static float swish_m(float x) { return ffn_swish(x, -0.75f); }
static double rswish_m(double x) { return ref_swish(x, -0.75); }
static float swish_h(float x) { return ffn_swish(x, 3.0e-20f); }
static double rswish_h(double x) { return ref_swish(x, (double)3.0e-20f); }
static float elu1(float x) { return ffn_elu(x, 1.0f); }
static double relu1(double x) { return ref_elu(x, 1.0); }
static float elu2(float x) { return ffn_elu(x, 1.6732632f); }
static double relu2(double x) { return ref_elu(x, (double)1.6732632f); }
static float leaky(float x) { return ffn_leaky_relu(x, 0.01f); }
static double rleaky(double x) { return ref_leaky_relu(x, (double)0.01f); }
static double rexp(double x) { return exp(x); }
static double rexpm1(double x) { return expm1(x); }
static double rerf(double x) { return erf(x); }
static double rerfc(double x) { return erfc(x); }

/* The derivatives, with ffnrt check's parameters (swish beta 1.702, ELU
 * alpha 1). */
#define GRAD_ROW(name, act, expr)                                                                          \
    static float name##_grad_f(float x) { return expr; }                                                   \
    static double name##_grad_r(double x) { return ref_grad(act, x, 1.0, (double)1.702f); }                \
    static double name##_grad_s(double x) { return ref_grad_scale(act, x, 1.0, (double)1.702f); }
GRAD_ROW(gelu, FFNRT_ACT_GELU, ffn_gelu_grad(x))
GRAD_ROW(gelu_tanh, FFNRT_ACT_GELU_TANH, ffn_gelu_tanh_grad(x))
GRAD_ROW(silu, FFNRT_ACT_SILU, ffn_silu_grad(x))
GRAD_ROW(swish, FFNRT_ACT_SWISH, ffn_swish_grad(x, 1.702f))
GRAD_ROW(sigmoid, FFNRT_ACT_SIGMOID, ffn_sigmoid_grad(x))
GRAD_ROW(tanh, FFNRT_ACT_TANH, ffn_tanh_grad(x))
GRAD_ROW(elu, FFNRT_ACT_ELU, ffn_elu_grad(x, 1.0f))
#define GRAD_FN(name) {#name "_grad", name##_grad_f, name##_grad_r, name##_grad_s}

static const fn_t fns[] = {
    {"gelu", ffn_gelu, ref_gelu, NULL},
    {"silu", ffn_silu, ref_silu, NULL},
    {"gelu_tanh", ffn_gelu_tanh, ref_gelu_tanh, NULL},
    {"sigmoid", ffn_sigmoid, ref_sigmoid, NULL},
    {"tanh", ffn_tanh, ref_tanh, NULL},
    {"erfc", ffn_erfc, rerfc, NULL},
    {"erf", ffn_erf, rerf, NULL},
    {"swish1.702", swish_b, rswish_b, NULL},
    {"expm1", ffn_expm1, rexpm1, NULL},
    {"exp", ffn_exp, rexp, NULL},
    {"elu1", elu1, relu1, NULL},
    {"swish-0.75", swish_m, rswish_m, NULL},
    {"swish3e-20", swish_h, rswish_h, NULL},
    {"elu1.67", elu2, relu2, NULL},
    {"relu", ffn_relu, ref_relu, NULL},
    {"leaky0.01", leaky, rleaky, NULL},
    GRAD_FN(gelu),
    GRAD_FN(gelu_tanh),
    GRAD_FN(silu),
    GRAD_FN(swish),
    GRAD_FN(sigmoid),
    GRAD_FN(tanh),
    GRAD_FN(elu),
};

/* |got - ref| in ULP of scale (>= |ref|), for a finite got and ref. */
static double ulp_error_scaled(float got, double ref, double scale)
{
    double e = ulp_error_f32(got, ref);
    if (!(scale > fabs(ref)) || isinf(e) || isnan(e) || isinf(ref) || isinf(scale))
        return e;
    int ex;
    frexp(scale, &ex);
    double ulp = scale < (double)FLT_MIN ? ldexp(1.0, -149) : ldexp(1.0, ex - 1 - 23);
    return fabs((double)got - ref) / ulp;
}

static void run(const fn_t *fn, unsigned stride)
{
    double gmax = 0;
    uint32_t gworst = 0;
    unsigned long long n1 = 0, n2 = 0, nsign = 0;
#pragma omp parallel
    {
        double lmax = 0;
        uint32_t lworst = 0;
        unsigned long long l1 = 0, l2 = 0, ls = 0;
#pragma omp for schedule(dynamic, 1024)
        for (long long hi = 0; hi < (1LL << 16); hi++) {
            uint32_t base = (uint32_t)hi << 16;
            uint32_t lo0 = stride > 1 ? (uint32_t)((stride - base % stride) % stride) : 0;
            for (uint32_t lo = lo0; lo < (1u << 16); lo += stride) {
                uint32_t u = base | lo;
                float x = ffnrt_host_as_float(u);
                float got = fn->f(x);
                double ref = fn->ref((double)x);
                double e = fn->scale ? ulp_error_scaled(got, ref, fmax(fabs(ref), fn->scale((double)x)))
                                     : ulp_error_f32(got, ref);
                if (e > lmax || (e != e)) {
                    lmax = e;
                    lworst = u;
                }
                l1 += e > 1.0;
                l2 += e > 2.0;
                /* sign of zero (forward only: a derivative's reference is
                 * +0 where its terms underflowed, whatever the sign below) */
                if (!fn->scale && ref == 0.0 && got == 0.0f && (!signbit(ref) != !signbit(got))) {
                    if (!ls)
                        printf("  %s: zero sign mismatch at %g (0x%08x): got %g ref %g\n", fn->name, x, u, got, ref);
                    ls++;
                }
            }
        }
#pragma omp critical
        {
            if (lmax > gmax || (lmax == gmax && lworst < gworst)) {
                gmax = lmax;
                gworst = lworst;
            }
            n1 += l1;
            n2 += l2;
            nsign += ls;
        }
    }
    float wx = ffnrt_host_as_float(gworst);
    printf("%-12s max %8.4f ulp at x = %-15.9g (0x%08x) got %-15.9g ref %-20.12g  >1ulp: %llu  >2ulp: %llu  zero-sign: %llu\n",
           fn->name, gmax, wx, gworst, fn->f(wx), fn->ref(wx), n1, n2, nsign);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    unsigned stride = 1;
    int first = 1;
    if (argc > 2 && !strcmp(argv[1], "-s")) {
        stride = (unsigned)atoi(argv[2]);
        first = 3;
    }
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        int want = first >= argc;
        for (int a = first; a < argc; a++)
            want |= !strcmp(argv[a], fns[i].name);
        if (want)
            run(&fns[i], stride);
    }
    return 0;
}
