/* Gradients of every activation and GLU kind: the analytic derivatives of
 * the reference agree with finite differences, and the devices agree with
 * the analytic derivatives in double. */
#include "device_fixture.h"
#include "contract.h"
#include "reference.h"
#include "reference16.h"
#include "reference_grad.h"

#include <criterion/parameterized.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* fp32 bound, in ULP of max(|dx|, |dy| * the derivative's term scale). */
#define GRAD_BOUND 4.0



/* The reference's derivatives are the derivatives of its forward functions. */
Test(gradients, analytic_matches_finite_differences)
{
    for (int a = 0; a < FFNRT_ACT_COUNT; a++) {
        ffnrt_activation act = (ffnrt_activation)a;
        for (double x = -12.0; x <= 12.0; x += 0.0625 + 1.0 / 1024) {
            double h = 1e-6 * fmax(1.0, fabs(x));
            if (fabs(x) < 2 * h)
                continue; /* the kinks of relu, leaky relu and elu at 0 */
            double fd = (ref_forward(act, x + h, contract_alpha(act), SWISH_BETA) -
                         ref_forward(act, x - h, contract_alpha(act), SWISH_BETA)) / (2 * h);
            double g = ref_grad(act, x, contract_alpha(act), SWISH_BETA);
            double scale = ref_grad_scale(act, x, contract_alpha(act), SWISH_BETA);
            /* The difference quotient itself is off by about eps |f| / h. */
            double fd_noise = 4 * DBL_EPSILON * fmax(1.0, fabs(ref_forward(act, x, contract_alpha(act), SWISH_BETA))) / h;
            cr_assert(fabs(fd - g) <= 1e-6 * scale + fd_noise, "%s'(%g): analytic %.12g, finite difference %.12g",
                      ffnrt_activation_name(act), x, g, fd);
        }
    }
}

/* The seed's values and the conventions at the kinks. */
Test(gradients, seed_values_and_conventions)
{
    cr_assert_float_eq(ref_grad(FFNRT_ACT_SILU, -1.0, 0, 1), 0.0723, 1e-4);
    cr_assert_float_eq(ref_forward(FFNRT_ACT_SILU, -1.0, 0, 1), -0.2689, 1e-4);
    cr_assert_eq(ref_grad(FFNRT_ACT_GELU, 0.0, 0, 1), 0.5);
    cr_assert_eq(ref_grad(FFNRT_ACT_SILU, 0.0, 0, 1), 0.5);
    cr_assert_eq(ref_grad(FFNRT_ACT_RELU, 0.0, 0, 1), 0.0, "relu'(0) = 0 by convention");
    cr_assert_eq(ref_grad(FFNRT_ACT_LEAKY_RELU, 0.0, 0.1, 1), 0.1, "leaky'(0) is the negative side's slope");
}

static size_t make_inputs(float **xs, float **dys)
{
    size_t n_sweep = 65536, n_dense = 16384, n = n_sweep + n_dense + 8;
    float *x = malloc(n * sizeof *x), *dy = malloc(n * sizeof *dy);
    cr_assert(x && dy);
    size_t k = 0;
    static const float edges[8] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -1.0f, 1e-30f, -100.0f};
    for (int i = 0; i < 8; i++)
        x[k++] = edges[i];
    for (size_t i = 0; i < n_sweep; i++) {
        uint32_t bits = (uint32_t)(i * 65537u + 777u);
        memcpy(&x[k++], &bits, 4);
    }
    for (size_t i = 0; i < n_dense; i++) /* where the derivatives have their roots and tails */
        x[k++] = -16.0f + 24.0f * (float)i / (float)n_dense;
    uint32_t state = 5u;
    for (size_t i = 0; i < n; i++) {
        state = state * 1664525u + 1013904223u;
        dy[i] = i % 2 ? 1.0f : ((float)(state >> 8) / 16777216.0f - 0.5f) * 8.0f;
    }
    *xs = x;
    *dys = dy;
    return n;
}

typedef struct grad_case {
    ffnrt_backend backend;
    ffnrt_activation act;
} grad_case;

ParameterizedTestParameters(gradients, activations)
{
    static grad_case cases[TEST_BACKENDS * FFNRT_ACT_COUNT];
    int k = 0;
    for (int b = 0; b < TEST_BACKENDS; b++)
        for (int a = 0; a < FFNRT_ACT_COUNT; a++)
            cases[k++] = (grad_case){test_backends[b], (ffnrt_activation)a};
    return cr_make_param_array(grad_case, cases, k);
}

ParameterizedTest(grad_case *c, gradients, activations)
{
    ffnrt_context *ctx = test_context(c->backend, NULL);
    float *x, *dy;
    size_t n = make_inputs(&x, &dy);
    ffnrt_tensor *tx = test_tensor_1d(ctx, n, x), *tdy = test_tensor_1d(ctx, n, dy);
    ffnrt_tensor *tdx = test_tensor_1d(ctx, n, NULL);
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(c->act);
    d.alpha = (float)contract_alpha(c->act);
    d.beta = SWISH_BETA;
    float slope = LEAKY_SLOPE;
    if (c->act == FFNRT_ACT_PRELU)
        d.slopes = test_tensor_1d(ctx, 1, &slope);
    cr_assert_eq(ffnrt_activation_backward(ctx, &d, tx, tdy, tdx), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    float *dx = malloc(n * sizeof *dx);
    cr_assert_not_null(dx);
    test_read(tdx, dx, n);
    int keeps = test_keeps_subnormals(ctx);
    double worst = 0;
    size_t worst_i = 0;
    for (size_t i = 0; i < n; i++) {
        double g = ref_grad(c->act, x[i], contract_alpha(c->act), SWISH_BETA);
        double ref = (double)dy[i] * g;
        if (isnan(ref)) {
            cr_assert(isnan(dx[i]), "%s'(%a) = %a, expected NaN", ffnrt_activation_name(c->act), x[i], dx[i]);
            continue;
        }
        cr_assert(isfinite(dx[i]), "%s'(%a) * %a = %a, expected %a", ffnrt_activation_name(c->act), x[i], dy[i],
                  dx[i], ref);
        double scale = fmax(fabs(ref), fabs(dy[i]) * ref_grad_scale(c->act, x[i], contract_alpha(c->act), SWISH_BETA));
        double e = fabs((double)dx[i] - ref) / ulp_of_type(FFNRT_DTYPE_F32, scale);
        /* A subnormal f'(x) is rounded before it is scaled by dy, which
         * scales its absolute error too. */
        if (fabs(g) < FLT_MIN && fabs(dy[i]) > 1 && e > GRAD_BOUND && e <= GRAD_BOUND * fabs(dy[i]))
            continue;
        if (!keeps && e > GRAD_BOUND && (fabs(ref) < FLT_MIN || fpclassify(x[i]) == FP_SUBNORMAL))
            continue; /* a flushed subnormal, on a device that flushes */
        if (e > worst) {
            worst = e;
            worst_i = i;
        }
    }
    cr_log_info("%s' on %s: max %.3f ULP (of the term scale) at x = %a", ffnrt_activation_name(c->act),
                ffnrt_backend_name(c->backend), worst, x[worst_i]);
    cr_assert(worst <= GRAD_BOUND, "%s' on %s: %.3f ULP at x = %a, dy = %a (got %a, reference %a)",
              ffnrt_activation_name(c->act), ffnrt_backend_name(c->backend), worst, x[worst_i], dy[worst_i],
              dx[worst_i], (double)dy[worst_i] * ref_grad(c->act, x[worst_i], contract_alpha(c->act), SWISH_BETA));
    free(x);
    free(dy);
    free(dx);
    test_context_done(ctx);
}

/* -------------------------------------------------------------- GLU */

typedef struct glu_grad_case {
    ffnrt_backend backend;
    ffnrt_glu kind;
} glu_grad_case;

ParameterizedTestParameters(gradients, glu)
{
    static glu_grad_case cases[TEST_BACKENDS * FFNRT_GLU_COUNT];
    int k = 0;
    for (int b = 0; b < TEST_BACKENDS; b++)
        for (int g = 0; g < FFNRT_GLU_COUNT; g++)
            cases[k++] = (glu_grad_case){test_backends[b], (ffnrt_glu)g};
    return cr_make_param_array(glu_grad_case, cases, k);
}

/* dvalue = dy * phi(gate), dgate = dy * value * phi'(gate), in the halves
 * and split layouts, which must agree bit for bit. */
ParameterizedTest(glu_grad_case *c, gradients, glu)
{
    ffnrt_context *ctx = test_context(c->backend, NULL);
    const int64_t rows = 97, h = 41;
    size_t n = (size_t)(rows * h);
    float *x = malloc(2 * n * 4), *gate = malloc(n * 4), *value = malloc(n * 4), *dy = malloc(n * 4);
    float *dx = malloc(2 * n * 4), *dg = malloc(n * 4), *dv = malloc(n * 4);
    cr_assert(x && gate && value && dy && dx && dg && dv);
    uint32_t state = 11u;
    for (size_t i = 0; i < n; i++) {
        float r[3];
        for (int j = 0; j < 3; j++) {
            state = state * 1664525u + 1013904223u;
            r[j] = ((float)(state >> 8) / 16777216.0f - 0.5f) * 16.0f;
        }
        value[i] = r[0];
        gate[i] = r[1];
        dy[i] = r[2];
        size_t row = i / (size_t)h, col = i % (size_t)h;
        x[row * 2 * h + col] = value[i];
        x[row * 2 * h + h + col] = gate[i];
    }
    int64_t xs[2] = {rows, 2 * h}, ys[2] = {rows, h};
    ffnrt_tensor *tx, *tdx, *tg, *tv, *tdy, *tdg, *tdv;
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, xs, &tx), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, xs, &tdx), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, ys, &tg), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, ys, &tv), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, ys, &tdy), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, ys, &tdg), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, ys, &tdv), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(tx, x, 2 * n * 4), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(tg, gate, n * 4), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(tv, value, n * 4), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(tdy, dy, n * 4), FFNRT_OK);
    ffnrt_glu_desc d = FFNRT_GLU_DESC_INIT(c->kind);
    d.beta = SWISH_BETA;
    cr_assert_eq(ffnrt_glu_backward(ctx, &d, tx, tdy, tdx), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    cr_assert_eq(ffnrt_glu_backward_split(ctx, &d, tg, tv, tdy, tdg, tdv), FFNRT_OK, "%s",
                 ffnrt_context_last_error(ctx));
    test_read(tdx, dx, 2 * n);
    test_read(tdg, dg, n);
    test_read(tdv, dv, n);
    ffnrt_activation act = ffnrt_glu_gate_activation(c->kind);
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        size_t row = i / (size_t)h, col = i % (size_t)h;
        cr_assert_eq(dx[row * 2 * h + col], dv[i], "dvalue differs between layouts at %zu", i);
        cr_assert_eq(dx[row * 2 * h + h + col], dg[i], "dgate differs between layouts at %zu", i);
        double phi = ref_forward(act, gate[i], 0, SWISH_BETA);
        double dphi = ref_grad(act, gate[i], 0, SWISH_BETA);
        double ref_v = (double)dy[i] * phi, ref_g = (double)dy[i] * value[i] * dphi;
        double scale_v = fabs(ref_v), scale_g = fmax(fabs(ref_g), fabs((double)dy[i] * value[i]) *
                                                                      ref_grad_scale(act, gate[i], 0, SWISH_BETA));
        /* value * phi(gate) goes through one more product than f(x) does. */
        double ev = fabs(dv[i] - ref_v) / ulp_of_type(FFNRT_DTYPE_F32, scale_v);
        double eg = fabs(dg[i] - ref_g) / ulp_of_type(FFNRT_DTYPE_F32, scale_g);
        if (fabs(phi) < FLT_MIN) /* phi(gate) subnormal: only an absolute accuracy */
            ev = fabs(dv[i] - ref_v) <= (fabs(dy[i]) + 1) * 0x1p-149 ? 0 : ev;
        worst = fmax(worst, fmax(ev, eg));
    }
    cr_log_info("%s backward on %s: max %.3f ULP", ffnrt_glu_name(c->kind), ffnrt_backend_name(c->backend), worst);
    cr_assert(worst <= GRAD_BOUND + 1.5, "%s backward on %s: %.3f ULP", ffnrt_glu_name(c->kind),
              ffnrt_backend_name(c->backend), worst);
    free(x);
    free(gate);
    free(value);
    free(dy);
    free(dx);
    free(dg);
    free(dv);
    test_context_done(ctx);
}

/* -------------------------------------------------- 16-bit storage */

typedef struct grad16_case {
    ffnrt_backend backend;
    ffnrt_dtype dtype;
    ffnrt_activation act;
} grad16_case;

ParameterizedTestParameters(gradients, storage_16bit)
{
    static grad16_case cases[TEST_BACKENDS * 2 * FFNRT_ACT_COUNT];
    int k = 0;
    for (int b = 0; b < TEST_BACKENDS; b++)
        for (int t = 0; t < 2; t++)
            for (int a = 0; a < FFNRT_ACT_COUNT; a++)
                cases[k++] = (grad16_case){test_backends[b], t ? FFNRT_DTYPE_BF16 : FFNRT_DTYPE_F16,
                                           (ffnrt_activation)a};
    return cr_make_param_array(grad16_case, cases, k);
}

/* Every 16-bit x with dy cycling through a few values: within 1 ULP of
 * the storage type at the term scale (the fp32 math, then one rounding). */
ParameterizedTest(grad16_case *c, gradients, storage_16bit)
{
    ffnrt_context *ctx = test_context(c->backend, NULL);
    const size_t n = 65536;
    int f16 = c->dtype == FFNRT_DTYPE_F16;
    uint16_t *x = malloc(n * 2), *dy = malloc(n * 2), *dx = malloc(n * 2);
    cr_assert(x && dy && dx);
    static const float dys[4] = {1.0f, -0.75f, 3.0f, 0.125f};
    for (size_t i = 0; i < n; i++) {
        x[i] = (uint16_t)i;
        dy[i] = f16 ? ffnrt_f32_to_f16(dys[i % 4]) : ffnrt_f32_to_bf16(dys[i % 4]);
    }
    int64_t shape = (int64_t)n;
    ffnrt_tensor *tx, *tdy, *tdx, *slopes = NULL;
    cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 1, &shape, &tx), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 1, &shape, &tdy), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 1, &shape, &tdx), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(tx, x, n * 2), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(tdy, dy, n * 2), FFNRT_OK);
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(c->act);
    uint16_t slope_bits = f16 ? ffnrt_f32_to_f16(LEAKY_SLOPE) : ffnrt_f32_to_bf16(LEAKY_SLOPE);
    double slope = f16 ? ffnrt_f16_to_f32(slope_bits) : ffnrt_bf16_to_f32(slope_bits);
    d.alpha = c->act == FFNRT_ACT_ELU ? ELU_ALPHA : LEAKY_SLOPE;
    d.beta = SWISH_BETA;
    if (c->act == FFNRT_ACT_PRELU) {
        int64_t one = 1;
        cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 1, &one, &slopes), FFNRT_OK);
        cr_assert_eq(ffnrt_tensor_write(slopes, &slope_bits, 2), FFNRT_OK);
        d.slopes = slopes;
    }
    cr_assert_eq(ffnrt_activation_backward(ctx, &d, tx, tdy, tdx), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    cr_assert_eq(ffnrt_tensor_read(tdx, dx, n * 2), FFNRT_OK);
    int flush_ok = !test_keeps_subnormals(ctx);
    double alpha = c->act == FFNRT_ACT_PRELU ? slope : contract_alpha(c->act);
    double worst = 0;
    size_t worst_i = 0;
    for (size_t i = 0; i < n; i++) {
        double xv = f16 ? ffnrt_f16_to_f32(x[i]) : ffnrt_bf16_to_f32(x[i]);
        double dyv = f16 ? ffnrt_f16_to_f32(dy[i]) : ffnrt_bf16_to_f32(dy[i]);
        double ref = dyv * ref_grad(c->act, xv, alpha, SWISH_BETA);
        double got = f16 ? ffnrt_f16_to_f32(dx[i]) : ffnrt_bf16_to_f32(dx[i]);
        if (isnan(ref)) {
            cr_assert(isnan(got), "%s'(%a): %a, expected NaN", ffnrt_activation_name(c->act), xv, got);
            continue;
        }
        double scale = fmax(fabs(ref), fabs(dyv) * ref_grad_scale(c->act, xv, alpha, SWISH_BETA));
        double e = fabs(got - ref) / ulp_of_type(c->dtype, scale);
        if (flush_ok && !f16 && e > 1 && (fabs(ref) < 0x1p-126 || fpclassify((float)xv) == FP_SUBNORMAL))
            continue; /* bf16 subnormals are fp32 subnormals: flushed here */
        if (e > worst) {
            worst = e;
            worst_i = i;
        }
    }
    double xw = f16 ? ffnrt_f16_to_f32(x[worst_i]) : ffnrt_bf16_to_f32(x[worst_i]);
    cr_log_info("%s %s' on %s: max %.3f ULP at x = %a", ffnrt_dtype_name(c->dtype), ffnrt_activation_name(c->act),
                ffnrt_backend_name(c->backend), worst, xw);
    cr_assert(worst <= 1.0, "%s %s' on %s: %.3f ULP at x = %a", ffnrt_dtype_name(c->dtype),
              ffnrt_activation_name(c->act), ffnrt_backend_name(c->backend), worst, xw);
    free(x);
    free(dy);
    free(dx);
    test_context_done(ctx);
}
