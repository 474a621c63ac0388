/* fp16 and bf16 storage: the host conversions round to nearest even, and
 * every activation and GLU kind, over all 65,536 inputs of the type, is
 * within 1 ULP of the storage type on both backends. */
#include "device_fixture.h"
#include "contract.h"
#include "reference.h"
#include "reference_grad.h"
#include "reference16.h"

#include <criterion/parameterized.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static double act_reference(ffnrt_activation act, double x)
{
    return ref_forward(act, x, contract_alpha(act), SWISH_BETA);
}

static double glu_gate_reference(ffnrt_glu kind, double g)
{
    return ref_forward(ffnrt_glu_gate_activation(kind), g, 0, SWISH_BETA);
}

static float decode(ffnrt_dtype t, uint16_t bits)
{
    return t == FFNRT_DTYPE_F16 ? ffnrt_f16_to_f32(bits) : ffnrt_bf16_to_f32(bits);
}

static double ulp16(ffnrt_dtype t, uint16_t got, double ref, int flush_ok)
{
    return t == FFNRT_DTYPE_F16 ? ulp_error_f16(got, ref) : ulp_error_bf16(got, ref, flush_ok);
}

/* ------------------------------------------------------ host conversions */

Test(precisions, host_conversions_round_to_nearest_even)
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = ffnrt_f16_to_f32((uint16_t)h);
        if (isnan(f)) {
            cr_assert(isnan(ffnrt_f16_to_f32(ffnrt_f32_to_f16(f))), "f16 NaN %04x lost", h);
            continue;
        }
        cr_assert_eq(ffnrt_f32_to_f16(f), h, "f16 %04x does not round-trip", h);
        float b = ffnrt_bf16_to_f32((uint16_t)h);
        if (!isnan(b))
            cr_assert_eq(ffnrt_f32_to_bf16(b), h, "bf16 %04x does not round-trip", h);
        /* Between two neighbours of one sign: below, at and above the midpoint. */
        if ((h & 0x7fff) < 0x7bff) {
            float next = ffnrt_f16_to_f32((uint16_t)(h + 1));
            float mid = (float)(((double)f + (double)next) / 2);
            uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
            cr_assert_eq(ffnrt_f32_to_f16(mid), even, "f16 tie between %04x and %04x", h, h + 1);
            cr_assert_eq(ffnrt_f32_to_f16(nextafterf(mid, f)), h);
            cr_assert_eq(ffnrt_f32_to_f16(nextafterf(mid, next)), h + 1);
        }
        if ((h & 0x7fff) < 0x7f7f) {
            float next = ffnrt_bf16_to_f32((uint16_t)(h + 1));
            float mid = (float)(((double)b + (double)next) / 2);
            uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
            cr_assert_eq(ffnrt_f32_to_bf16(mid), even, "bf16 tie between %04x and %04x", h, h + 1);
            cr_assert_eq(ffnrt_f32_to_bf16(nextafterf(mid, b)), h);
            cr_assert_eq(ffnrt_f32_to_bf16(nextafterf(mid, next)), h + 1);
        }
    }
    cr_assert_eq(ffnrt_f32_to_f16(65519.0f), 0x7bff);
    cr_assert_eq(ffnrt_f32_to_f16(65520.0f), 0x7c00, "65520 rounds to +inf");
    cr_assert_eq(ffnrt_f32_to_f16(-1e30f), 0xfc00);
    cr_assert_eq(ffnrt_f32_to_f16(ldexpf(1.0f, -25)), 0x0000, "half the smallest subnormal ties to 0");
    cr_assert_eq(ffnrt_f32_to_f16(ldexpf(3.0f, -26)), 0x0001);
    cr_assert_eq(ffnrt_f32_to_bf16(3.4e38f), 0x7f80, "rounds past bf16's max to +inf");
    cr_assert(isnan(ffnrt_bf16_to_f32(ffnrt_f32_to_bf16(NAN))));
}

/* ------------------------------------------------- activations, 16-bit */

typedef struct storage_case {
    ffnrt_backend backend;
    ffnrt_dtype dtype;
    int op; /* ffnrt_activation or ffnrt_glu */
} storage_case;

static ffnrt_tensor *tensor16(ffnrt_context *ctx, ffnrt_dtype t, size_t n, const uint16_t *bits)
{
    int64_t shape = (int64_t)n;
    ffnrt_tensor *x = NULL;
    cr_assert_eq(ffnrt_tensor_create(ctx, t, 1, &shape, &x), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    if (bits)
        cr_assert_eq(ffnrt_tensor_write(x, bits, n * 2), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    return x;
}

ParameterizedTestParameters(precisions, activations_all_inputs)
{
    static storage_case cases[TEST_BACKENDS * 2 * FFNRT_ACT_COUNT];
    int k = 0;
    for (int b = 0; b < TEST_BACKENDS; b++)
        for (int t = 0; t < 2; t++)
            for (int a = 0; a < FFNRT_ACT_COUNT; a++)
                cases[k++] = (storage_case){test_backends[b], t ? FFNRT_DTYPE_BF16 : FFNRT_DTYPE_F16, a};
    return cr_make_param_array(storage_case, cases, k);
}

ParameterizedTest(storage_case *c, precisions, activations_all_inputs)
{
    ffnrt_context *ctx = test_context(c->backend, NULL);
    const size_t n = 65536 + 1; /* every bit pattern, and an odd count */
    uint16_t *in = malloc(n * 2), *out = malloc(n * 2);
    cr_assert(in && out);
    for (size_t i = 0; i < n; i++)
        in[i] = (uint16_t)i;
    ffnrt_tensor *x = tensor16(ctx, c->dtype, n, in);
    ffnrt_tensor *y = tensor16(ctx, c->dtype, n, NULL);
    ffnrt_activation act = (ffnrt_activation)c->op;
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(act);
    d.alpha = act == FFNRT_ACT_ELU ? ELU_ALPHA : LEAKY_SLOPE;
    d.beta = SWISH_BETA;
    ffnrt_tensor *slopes = NULL;
    if (act == FFNRT_ACT_PRELU) {
        uint16_t s = c->dtype == FFNRT_DTYPE_F16 ? ffnrt_f32_to_f16(LEAKY_SLOPE) : ffnrt_f32_to_bf16(LEAKY_SLOPE);
        slopes = tensor16(ctx, c->dtype, 1, &s);
        d.slopes = slopes;
    }
    cr_assert_eq(ffnrt_activation_forward(ctx, &d, x, y), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    cr_assert_eq(ffnrt_tensor_read(y, out, n * 2), FFNRT_OK);
    int flush_ok = !test_keeps_subnormals(ctx);
    double worst = 0;
    size_t worst_i = 0;
    for (size_t i = 0; i < n; i++) {
        double xin = decode(c->dtype, in[i]);
        /* The slope itself is stored in the 16-bit type. */
        double ref = act == FFNRT_ACT_PRELU || act == FFNRT_ACT_LEAKY_RELU
                         ? ref_leaky_relu(xin, act == FFNRT_ACT_PRELU ? decode(c->dtype, c->dtype == FFNRT_DTYPE_F16
                                                                                              ? ffnrt_f32_to_f16(LEAKY_SLOPE)
                                                                                              : ffnrt_f32_to_bf16(LEAKY_SLOPE))
                                                                      : LEAKY_SLOPE)
                         : act_reference(act, xin);
        if (flush_ok && c->dtype == FFNRT_DTYPE_BF16 && fpclassify((float)xin) == FP_SUBNORMAL) {
            /* A flushed input is a zero input. */
            double r0 = act_reference(act, copysign(0.0, xin));
            if (ulp16(c->dtype, out[i], r0, 1) <= 1.0)
                continue;
        }
        double e = ulp16(c->dtype, out[i], ref, flush_ok);
        if (e > worst) {
            worst = e;
            worst_i = i;
        }
    }
    cr_log_info("%s %s on %s: max %.3f ULP at x = %a", ffnrt_dtype_name(c->dtype), ffnrt_activation_name(act),
                ffnrt_backend_name(c->backend), worst, decode(c->dtype, in[worst_i]));
    cr_assert(worst <= 1.0, "%s %s on %s: %.3f ULP at x = %a (got %a)", ffnrt_dtype_name(c->dtype),
              ffnrt_activation_name(act), ffnrt_backend_name(c->backend), worst, decode(c->dtype, in[worst_i]),
              decode(c->dtype, out[worst_i]));
    free(in);
    free(out);
    test_context_done(ctx);
}

/* ------------------------------------------------------------ GLU family */

typedef struct glu_case {
    ffnrt_backend backend;
    ffnrt_dtype dtype;
    ffnrt_glu kind;
} glu_case;

ParameterizedTestParameters(precisions, glu_forward)
{
    static glu_case cases[TEST_BACKENDS * 3 * FFNRT_GLU_COUNT];
    static const ffnrt_dtype types[3] = {FFNRT_DTYPE_F32, FFNRT_DTYPE_F16, FFNRT_DTYPE_BF16};
    int k = 0;
    for (int b = 0; b < TEST_BACKENDS; b++)
        for (int t = 0; t < 3; t++)
            for (int g = 0; g < FFNRT_GLU_COUNT; g++)
                cases[k++] = (glu_case){test_backends[b], types[t], (ffnrt_glu)g};
    return cr_make_param_array(glu_case, cases, k);
}

/* Halves and split layouts, rows of an odd half width, against the
 * reference value * phi(gate): fp32 within 5 ULP (where phi(gate) is
 * subnormal, within |value| subnormal ULPs), 16-bit within 1 ULP. */
ParameterizedTest(glu_case *c, precisions, glu_forward)
{
    ffnrt_context *ctx = test_context(c->backend, NULL);
    const int64_t rows = 301, h = 37;
    size_t n = (size_t)(rows * h), esize = c->dtype == FFNRT_DTYPE_F32 ? 4 : 2;
    float *xf = malloc(2 * n * sizeof *xf);
    unsigned char *xbuf = malloc(2 * n * esize), *gbuf = malloc(n * esize), *vbuf = malloc(n * esize);
    unsigned char *y1 = malloc(n * esize), *y2 = malloc(n * esize);
    cr_assert(xf && xbuf && gbuf && vbuf && y1 && y2);
    uint32_t state = 99u;
    for (size_t i = 0; i < 2 * n; i++) {
        state = state * 1664525u + 1013904223u;
        float v = ((float)(state >> 8) / 16777216.0f - 0.5f) * 24.0f; /* U[-12, 12) */
        if (c->dtype == FFNRT_DTYPE_F16)
            v = ffnrt_f16_to_f32(ffnrt_f32_to_f16(v));
        else if (c->dtype == FFNRT_DTYPE_BF16)
            v = ffnrt_bf16_to_f32(ffnrt_f32_to_bf16(v));
        xf[i] = v;
    }
    /* x = [value | gate] per row; the split tensors hold the same numbers. */
    for (size_t r = 0; r < (size_t)rows; r++)
        for (size_t j = 0; j < (size_t)h; j++) {
            size_t xi = r * 2 * h + j, yi = r * h + j;
            float value = xf[xi], gate = xf[xi + h];
            if (esize == 4) {
                memcpy(xbuf + 4 * xi, &value, 4);
                memcpy(xbuf + 4 * (xi + h), &gate, 4);
                memcpy(vbuf + 4 * yi, &value, 4);
                memcpy(gbuf + 4 * yi, &gate, 4);
            } else {
                uint16_t vb = c->dtype == FFNRT_DTYPE_F16 ? ffnrt_f32_to_f16(value) : ffnrt_f32_to_bf16(value);
                uint16_t gb = c->dtype == FFNRT_DTYPE_F16 ? ffnrt_f32_to_f16(gate) : ffnrt_f32_to_bf16(gate);
                memcpy(xbuf + 2 * xi, &vb, 2);
                memcpy(xbuf + 2 * (xi + h), &gb, 2);
                memcpy(vbuf + 2 * yi, &vb, 2);
                memcpy(gbuf + 2 * yi, &gb, 2);
            }
        }
    int64_t xshape[2] = {rows, 2 * h}, yshape[2] = {rows, h};
    ffnrt_tensor *x, *g, *v, *ya, *yb;
    cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 2, xshape, &x), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 2, yshape, &g), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 2, yshape, &v), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 2, yshape, &ya), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 2, yshape, &yb), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(x, xbuf, 2 * n * esize), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(g, gbuf, n * esize), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(v, vbuf, n * esize), FFNRT_OK);
    ffnrt_glu_desc d = FFNRT_GLU_DESC_INIT(c->kind);
    d.beta = SWISH_BETA;
    cr_assert_eq(ffnrt_glu_forward(ctx, &d, x, ya), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    cr_assert_eq(ffnrt_glu_forward_split(ctx, &d, g, v, yb), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    cr_assert_eq(ffnrt_tensor_read(ya, y1, n * esize), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_read(yb, y2, n * esize), FFNRT_OK);
    cr_assert_arr_eq(y1, y2, n * esize, "halves and split layouts disagree");
    double worst = 0, bound = esize == 4 ? 5.0 : 1.0;
    for (size_t r = 0; r < (size_t)rows; r++)
        for (size_t j = 0; j < (size_t)h; j++) {
            size_t xi = r * 2 * h + j, yi = r * h + j;
            double phi = glu_gate_reference(c->kind, xf[xi + h]);
            double ref = (double)xf[xi] * phi;
            double e;
            if (esize == 4) {
                float got;
                memcpy(&got, y1 + 4 * yi, 4);
                e = ulp_error_f32(got, ref);
                /* phi(gate) itself subnormal: its half-ULP rounding, scaled
                 * by the value, is all fp32 can promise. */
                if (fabs(phi) < 0x1p-126 && fabs((double)got - ref) <= (fabs(xf[xi]) + bound) * 0x1p-149)
                    e = 0;
            } else {
                uint16_t got;
                memcpy(&got, y1 + 2 * yi, 2);
                e = ulp16(c->dtype, got, ref, !test_keeps_subnormals(ctx));
            }
            if (e > worst)
                worst = e;
        }
    cr_log_info("%s %s on %s: max %.3f ULP", ffnrt_dtype_name(c->dtype), ffnrt_glu_name(c->kind),
                ffnrt_backend_name(c->backend), worst);
    cr_assert(worst <= bound, "%s %s on %s: %.3f ULP, bound %.1f", ffnrt_dtype_name(c->dtype),
              ffnrt_glu_name(c->kind), ffnrt_backend_name(c->backend), worst, bound);
    free(xf);
    free(xbuf);
    free(gbuf);
    free(vbuf);
    free(y1);
    free(y2);
    test_context_done(ctx);
}

ParameterizedTestParameters(precisions, glu_backward)
{
    static glu_case cases[TEST_BACKENDS * 2 * FFNRT_GLU_COUNT];
    static const ffnrt_dtype types[2] = {FFNRT_DTYPE_F16, FFNRT_DTYPE_BF16};
    int k = 0;
    for (int b = 0; b < TEST_BACKENDS; b++)
        for (int t = 0; t < 2; t++)
            for (int g = 0; g < FFNRT_GLU_COUNT; g++)
                cases[k++] = (glu_case){test_backends[b], types[t], (ffnrt_glu)g};
    return cr_make_param_array(glu_case, cases, k);
}

/* The gated gradients in 16-bit storage (fp32: test_gradients): the halves
 * and split layouts agree bit for bit, and dvalue = dy phi(gate), dgate =
 * dy value phi'(gate) are within 1 ULP of the storage type of the double
 * reference on the stored inputs, dgate's ULP taken at max(|dgate|, |dy
 * value| times the derivative's term scale) as in test_gradients (phi' has
 * roots). An odd element count ends the split tensors in half a word; the
 * second halves are computed in a block of their own on PoCL (storage.inc). */
ParameterizedTest(glu_case *c, precisions, glu_backward)
{
    ffnrt_context *ctx = test_context(c->backend, NULL);
    const int64_t rows = 301, h = 37;
    size_t n = (size_t)(rows * h);
    float *f = malloc(3 * n * sizeof *f); /* value, gate, dy */
    uint16_t *xb = malloc(2 * n * 2), *in = malloc(3 * n * 2), *dx = malloc(2 * n * 2), *out = malloc(2 * n * 2);
    cr_assert(f && xb && in && dx && out);
    uint32_t state = 7u;
    for (size_t i = 0; i < 3 * n; i++) {
        state = state * 1664525u + 1013904223u;
        float v = ((float)(state >> 8) / 16777216.0f - 0.5f) * 24.0f; /* U[-12, 12) */
        in[i] = c->dtype == FFNRT_DTYPE_F16 ? ffnrt_f32_to_f16(v) : ffnrt_f32_to_bf16(v);
        f[i] = decode(c->dtype, in[i]);
    }
    for (size_t i = 0; i < n; i++) { /* x = [value | gate] per row */
        size_t r = i / (size_t)h, j = i % (size_t)h;
        xb[r * 2 * h + j] = in[i];
        xb[r * 2 * h + h + j] = in[n + i];
    }
    int64_t xshape[2] = {rows, 2 * h}, yshape[2] = {rows, h};
    ffnrt_tensor *x, *tdx, *v, *g, *dy, *dg, *dv;
    cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 2, xshape, &x), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 2, xshape, &tdx), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 2, yshape, &v), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 2, yshape, &g), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 2, yshape, &dy), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 2, yshape, &dg), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 2, yshape, &dv), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(x, xb, 2 * n * 2), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(v, in, n * 2), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(g, in + n, n * 2), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(dy, in + 2 * n, n * 2), FFNRT_OK);
    ffnrt_glu_desc d = FFNRT_GLU_DESC_INIT(c->kind);
    d.beta = SWISH_BETA;
    cr_assert_eq(ffnrt_glu_backward(ctx, &d, x, dy, tdx), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    cr_assert_eq(ffnrt_glu_backward_split(ctx, &d, g, v, dy, dg, dv), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    cr_assert_eq(ffnrt_tensor_read(tdx, dx, 2 * n * 2), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_read(dg, out, n * 2), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_read(dv, out + n, n * 2), FFNRT_OK);
    ffnrt_activation act = ffnrt_glu_gate_activation(c->kind);
    int flush_ok = !test_keeps_subnormals(ctx);
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        size_t r = i / (size_t)h, j = i % (size_t)h;
        cr_assert_eq(dx[r * 2 * h + j], out[n + i], "dvalue differs between layouts at %zu", i);
        cr_assert_eq(dx[r * 2 * h + h + j], out[i], "dgate differs between layouts at %zu", i);
        double value = f[i], gate = f[n + i], dyv = f[2 * n + i];
        double ref_v = dyv * ref_forward(act, gate, 0, SWISH_BETA);
        double ref_g = dyv * value * ref_grad(act, gate, 0, SWISH_BETA);
        double scale_g = fmax(fabs(ref_g), fabs(dyv * value) * ref_grad_scale(act, gate, 0, SWISH_BETA));
        double ev = ulp16(c->dtype, out[n + i], ref_v, flush_ok);
        double got_g = decode(c->dtype, out[i]);
        double eg = fabs(got_g - ref_g) / ulp_of_type(c->dtype, scale_g);
        if (flush_ok && got_g == 0 && fabs(ref_g) < 0x1p-126)
            eg = 0;
        worst = fmax(worst, fmax(ev, eg));
    }
    cr_log_info("%s %s backward on %s: max %.3f ULP", ffnrt_dtype_name(c->dtype), ffnrt_glu_name(c->kind),
                ffnrt_backend_name(c->backend), worst);
    cr_assert(worst <= 1.0, "%s %s backward on %s: %.3f ULP", ffnrt_dtype_name(c->dtype), ffnrt_glu_name(c->kind),
              ffnrt_backend_name(c->backend), worst);
    /* In place (dgate over gate, dvalue over dy): the same bits. Both
     * output words are formed before either is stored. */
    cr_assert_eq(ffnrt_glu_backward_split(ctx, &d, g, v, dy, g, dy), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    cr_assert_eq(ffnrt_tensor_read(g, dx, n * 2), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_read(dy, dx + n, n * 2), FFNRT_OK);
    cr_assert_arr_eq(dx, out, 2 * n * 2, "in place differs from out of place");
    ffnrt_tensor *all[7] = {x, tdx, v, g, dy, dg, dv};
    for (int k = 0; k < 7; k++)
        ffnrt_tensor_destroy(all[k]);
    free(f);
    free(xb);
    free(in);
    free(dx);
    free(out);
    test_context_done(ctx);
}

/* ---------------------------------------------------- fp16 arithmetic */

/* Bound for FFNRT_COMPUTE_F16, in ULP of fp16, over all 65,536 inputs:
 * the special function is rounded to fp16 (0.5), then the product is
 * rounded again (0.5), with the fp32 math's error beneath that. Where the
 * special function's value falls below fp16's normal range (2^-14) it
 * keeps only an absolute accuracy of 2^-25, which the product scales by
 * |x|: there the bound is |x| * 2^-25 absolute, plus 1 ULP. */
#define F16_ARITH_BOUND 1.5

typedef struct arith_case {
    ffnrt_backend backend;
    int op;
} arith_case;

ParameterizedTestParameters(precisions, f16_arithmetic)
{
    static arith_case cases[TEST_BACKENDS * FFNRT_ACT_COUNT];
    int k = 0;
    for (int b = 0; b < TEST_BACKENDS; b++)
        for (int a = 0; a < FFNRT_ACT_COUNT; a++)
            cases[k++] = (arith_case){test_backends[b], a};
    return cr_make_param_array(arith_case, cases, k);
}

ParameterizedTest(arith_case *c, precisions, f16_arithmetic)
{
    ffnrt_context *ctx = test_context(c->backend, NULL);
    ffnrt_device_info info;
    cr_assert_eq(ffnrt_context_get_device_info(ctx, &info), FFNRT_OK);
    const size_t n = 65536;
    uint16_t *in = malloc(n * 2), *out = malloc(n * 2);
    cr_assert(in && out);
    for (size_t i = 0; i < n; i++)
        in[i] = (uint16_t)i;
    ffnrt_tensor *x = tensor16(ctx, FFNRT_DTYPE_F16, n, in);
    ffnrt_tensor *y = tensor16(ctx, FFNRT_DTYPE_F16, n, NULL);
    ffnrt_activation act = (ffnrt_activation)c->op;
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(act);
    d.alpha = act == FFNRT_ACT_ELU ? ELU_ALPHA : LEAKY_SLOPE;
    d.beta = SWISH_BETA;
    d.compute = FFNRT_COMPUTE_F16;
    uint16_t slope_bits = ffnrt_f32_to_f16(LEAKY_SLOPE);
    if (act == FFNRT_ACT_PRELU)
        d.slopes = tensor16(ctx, FFNRT_DTYPE_F16, 1, &slope_bits);
    ffnrt_status st = ffnrt_activation_forward(ctx, &d, x, y);
    if (!info.fp16_arithmetic) {
        /* The device says it has none: a clear refusal, nothing run. */
        cr_assert_eq(st, FFNRT_ERROR_UNSUPPORTED, "%s", ffnrt_status_string(st));
        cr_assert(strstr(ffnrt_context_last_error(ctx), "fp16 arithmetic") != NULL, "%s",
                  ffnrt_context_last_error(ctx));
    } else {
        cr_assert_eq(st, FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
        cr_assert_eq(ffnrt_tensor_read(y, out, n * 2), FFNRT_OK);
        double worst = 0;
        size_t worst_i = 0;
        double slope = act == FFNRT_ACT_PRELU ? ffnrt_f16_to_f32(slope_bits) : LEAKY_SLOPE;
        for (size_t i = 0; i < n; i++) {
            double xin = ffnrt_f16_to_f32(in[i]);
            double ref = act == FFNRT_ACT_PRELU || act == FFNRT_ACT_LEAKY_RELU ? ref_leaky_relu(xin, slope)
                                                                                 : act_reference(act, xin);
            double e = ulp_error_f16(out[i], ref);
            double factor = xin != 0 && isfinite(xin) ? fabs(ref / xin) : 1.0; /* Phi(x), sigmoid(x), ... */
            double ulp = ulp_of_type(FFNRT_DTYPE_F16, ref);
            if (e > F16_ARITH_BOUND && factor < 0x1p-14 && e <= 1.0 + fabs(xin) * 0x1p-25 / ulp)
                e = 0;
            if (e > worst) {
                worst = e;
                worst_i = i;
            }
        }
        cr_log_info("f16 arithmetic %s on %s: max %.3f ULP at x = %a", ffnrt_activation_name(act),
                    ffnrt_backend_name(c->backend), worst, ffnrt_f16_to_f32(in[worst_i]));
        cr_assert(worst <= F16_ARITH_BOUND, "f16 arithmetic %s: %.3f ULP at x = %a (got %a)",
                  ffnrt_activation_name(act), worst, ffnrt_f16_to_f32(in[worst_i]), ffnrt_f16_to_f32(out[worst_i]));
    }
    /* f16 arithmetic on f32 tensors is refused wherever it runs. */
    ffnrt_tensor *xf = test_tensor_1d(ctx, 4, NULL);
    ffnrt_activation_desc relu16 = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_RELU);
    relu16.compute = FFNRT_COMPUTE_F16;
    cr_assert_eq(ffnrt_activation_forward(ctx, &relu16, xf, xf), FFNRT_ERROR_UNSUPPORTED);
    free(in);
    free(out);
    test_context_done(ctx);
}

/* The device's conversions are bit-exact, whichever it uses (a hardware
 * one where the plan's "f16 conversion" line names it, and the bit
 * arithmetic forced by disable_half_conversion): leaky ReLU with slopes
 * 3/4 and 3/2 over every 16-bit input gives products exact in fp32 that
 * need rounding to the storage type, ties (to even) and subnormals
 * included, -65504 * 3/2 overflows to -Inf, and NaN stays NaN; -0 stays
 * -0. Each output must equal the host's conversion of the same product. */
BACKEND_PARAMETERS(precisions, conversions_bit_exact)

ParameterizedTest(ffnrt_backend *b, precisions, conversions_bit_exact)
{
    const size_t n = 65536;
    uint16_t *in = malloc(n * 2), *out = malloc(n * 2);
    cr_assert(in && out);
    for (size_t i = 0; i < n; i++)
        in[i] = (uint16_t)i;
    for (int forced = 0; forced < 2; forced++) {
        ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
        o.disable_half_conversion = forced;
        ffnrt_context *ctx = test_context(*b, &o);
        ffnrt_plan *plan = NULL;
        cr_assert_eq(ffnrt_context_plan(ctx, &plan), FFNRT_OK);
        const char *conversion = ffnrt_plan_choice(plan, "f16 conversion");
        cr_assert(conversion, "the plan names the f16 conversion");
        if (forced)
            cr_assert_str_eq(conversion, "bit arithmetic");
        cr_log_info("%s, f16 conversion: %s", ffnrt_backend_name(*b), conversion);
        for (int t = 0; t < 2; t++) {
            ffnrt_dtype dtype = t ? FFNRT_DTYPE_BF16 : FFNRT_DTYPE_F16;
            ffnrt_tensor *x = tensor16(ctx, dtype, n, in), *y = tensor16(ctx, dtype, n, NULL);
            static const float slopes[] = {0.75f, 1.5f};
            for (int s = 0; s < 2; s++) {
                ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_LEAKY_RELU);
                d.alpha = slopes[s];
                cr_assert_eq(ffnrt_activation_forward(ctx, &d, x, y), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
                cr_assert_eq(ffnrt_tensor_read(y, out, n * 2), FFNRT_OK);
                int flush_ok = !test_keeps_subnormals(ctx);
                for (size_t i = 0; i < n; i++) {
                    float xin = decode(dtype, in[i]);
                    float v = signbit(xin) ? slopes[s] * xin : xin;
                    if (isnan(v)) {
                        cr_assert(isnan(decode(dtype, out[i])), "%s NaN %04zx came out %04x", ffnrt_dtype_name(dtype),
                                  i, out[i]);
                        continue;
                    }
                    if (flush_ok && dtype == FFNRT_DTYPE_BF16 && fpclassify(xin) == FP_SUBNORMAL)
                        continue; /* fp32 subnormals may be flushed on such a device */
                    uint16_t want = dtype == FFNRT_DTYPE_F16 ? ffnrt_f32_to_f16(v) : ffnrt_f32_to_bf16(v);
                    cr_assert_eq(out[i], want, "%s (%s, %s) leaky %.2f of %04zx: got %04x, want %04x",
                                 ffnrt_backend_name(*b), conversion, ffnrt_dtype_name(dtype), slopes[s], i, out[i],
                                 want);
                }
            }
            ffnrt_tensor_destroy(x);
            ffnrt_tensor_destroy(y);
        }
        ffnrt_plan_destroy(plan);
        test_context_done(ctx);
    }
    free(in);
    free(out);
}

/* ffnrt_copy moves 16-bit tensors bit for bit, NaN payloads included. */
BACKEND_PARAMETERS(precisions, copy_exact)

ParameterizedTest(ffnrt_backend *b, precisions, copy_exact)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    const size_t n = 65537;
    uint16_t *in = malloc(n * 2), *out = malloc(n * 2);
    cr_assert(in && out);
    for (size_t i = 0; i < n; i++)
        in[i] = (uint16_t)(i * 40503u);
    for (int t = 0; t < 2; t++) {
        ffnrt_dtype dtype = t ? FFNRT_DTYPE_BF16 : FFNRT_DTYPE_F16;
        ffnrt_tensor *x = tensor16(ctx, dtype, n, in), *y = tensor16(ctx, dtype, n, NULL);
        cr_assert_eq(ffnrt_copy(ctx, x, y), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
        cr_assert_eq(ffnrt_tensor_read(y, out, n * 2), FFNRT_OK);
        cr_assert_arr_eq(in, out, n * 2, "%s copy is not bit-exact", ffnrt_dtype_name(dtype));
    }
    free(in);
    free(out);
    test_context_done(ctx);
}
