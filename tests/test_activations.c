/* Every activation on every backend against the double-precision
 * reference, in ULP of fp32, over a sweep of the whole fp32 range plus the
 * edge values and the tails where formulas usually break. */
#include "device_fixture.h"
#include "contract.h"
#include "reference.h"
#include "reference_grad.h"
#include "ffnrt_op_table.h"

#include <criterion/parameterized.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The accuracy contract for fp32 storage and arithmetic (docs/accuracy.md's
 * table, tools/reference/contract.h). */
static double ulp_bound(ffnrt_activation act) { return contract_ulp_bound(act, FFNRT_DTYPE_F32); }

static double reference(ffnrt_activation act, double x)
{
    return ref_forward(act, x, contract_alpha(act), SWISH_BETA); /* PReLU: one shared slope here */
}

static float bits_to_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The inputs: edge values, every 65537th bit pattern (both signs, all
 * exponents), and dense sweeps of the tails. */
static size_t make_inputs(float **out)
{
    static const float edges[] = {0.0f, -0.0f, 1e-45f, -1e-45f, FLT_MIN, -FLT_MIN, 1e-30f, -1e-30f,
                                  1.0f, -1.0f, 0.5f, -0.5f, 2.0f, -2.0f, 1e30f, -1e30f, FLT_MAX, -FLT_MAX,
                                  INFINITY, -INFINITY, NAN, -10.0f, -13.0f, -14.0f, -88.0f, -100.0f, 9.0f, 10.0f};
    size_t n_edges = sizeof edges / sizeof edges[0];
    size_t n_sweep = 65536, n_tail = 8192, n_silu = 4096;
    float *v = malloc((n_edges + n_sweep + n_tail + n_silu) * sizeof *v);
    cr_assert_not_null(v);
    size_t n = 0;
    for (size_t i = 0; i < n_edges; i++)
        v[n++] = edges[i];
    for (size_t i = 0; i < n_sweep; i++)
        v[n++] = bits_to_float((uint32_t)(i * 65537u + 12345u));
    for (size_t i = 0; i < n_tail; i++) /* GELU's negative tail down to underflow */
        v[n++] = -20.0f + 16.0f * (float)i / (float)n_tail;
    for (size_t i = 0; i < n_silu; i++) /* SiLU's tail, where e^x leaves the normal range */
        v[n++] = -110.0f + 30.0f * (float)i / (float)n_silu;
    *out = v;
    return n;
}

typedef struct accuracy_case {
    ffnrt_backend backend;
    ffnrt_activation act;
} accuracy_case;

ParameterizedTestParameters(activations, accuracy)
{
    static accuracy_case cases[TEST_BACKENDS * FFNRT_ACT_COUNT];
    for (int b = 0; b < TEST_BACKENDS; b++)
        for (int a = 0; a < FFNRT_ACT_COUNT; a++)
            cases[b * FFNRT_ACT_COUNT + a] = (accuracy_case){test_backends[b], (ffnrt_activation)a};
    return cr_make_param_array(accuracy_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(accuracy_case *c, activations, accuracy)
{
    ffnrt_context *ctx = test_context(c->backend, NULL);
    float *in;
    size_t n = make_inputs(&in);
    ffnrt_tensor *x = test_tensor_1d(ctx, n, in);
    ffnrt_tensor *y = test_tensor_1d(ctx, n, NULL);
    ffnrt_tensor *slopes = NULL;
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(c->act);
    if (c->act == FFNRT_ACT_LEAKY_RELU)
        d.alpha = LEAKY_SLOPE;
    if (c->act == FFNRT_ACT_ELU)
        d.alpha = ELU_ALPHA;
    if (c->act == FFNRT_ACT_SWISH)
        d.beta = SWISH_BETA;
    if (c->act == FFNRT_ACT_PRELU) {
        float s = LEAKY_SLOPE;
        slopes = test_tensor_1d(ctx, 1, &s);
        d.slopes = slopes;
    }
    cr_assert_eq(ffnrt_activation_forward(ctx, &d, x, y), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    float *out = malloc(n * sizeof *out);
    cr_assert_not_null(out);
    test_read(y, out, n);

    int keeps = test_keeps_subnormals(ctx);
    double worst = 0;
    size_t worst_i = 0, flushed = 0;
    for (size_t i = 0; i < n; i++) {
        double ref = reference(c->act, (double)in[i]);
        if (isnan(ref)) {
            cr_assert(isnan(out[i]), "%s(%a) = %a, expected NaN", ffnrt_activation_name(c->act), in[i], out[i]);
            continue;
        }
        cr_assert(!isnan(out[i]), "%s(%a) = NaN, expected %a", ffnrt_activation_name(c->act), in[i], ref);
        if (isfinite(ref) && fabs(ref) <= FLT_MAX)
            cr_assert(isfinite(out[i]), "%s(%a) = %a, expected finite %a", ffnrt_activation_name(c->act), in[i],
                      out[i], ref);
        double e = ulp_error_f32(out[i], ref);
        if (!keeps && e > ulp_bound(c->act)) {
            /* A device that flushes subnormals: count the result if it is
             * right for a flushed input or output, separately. */
            double flushed_ref = fpclassify(in[i]) == FP_SUBNORMAL ? reference(c->act, copysign(0.0, in[i])) : ref;
            double e_ftz = ulp_error_f32_ftz(out[i], ref, flushed_ref);
            if (e_ftz <= ulp_bound(c->act)) {
                flushed++;
                continue;
            }
        }
        if (e > worst) {
            worst = e;
            worst_i = i;
        }
    }
    cr_log_info("%s on %s: max %.3f ULP at x = %a (bound %.1f); %zu results accepted as flushed subnormals",
                ffnrt_activation_name(c->act), ffnrt_backend_name(c->backend), worst, in[worst_i],
                ulp_bound(c->act), flushed);
    cr_assert(worst <= ulp_bound(c->act), "%s on %s: %.3f ULP at x = %a (got %a, reference %a), bound %.1f",
              ffnrt_activation_name(c->act), ffnrt_backend_name(c->backend), worst, in[worst_i], out[worst_i],
              reference(c->act, in[worst_i]), ulp_bound(c->act));
    free(out);
    free(in);
    test_context_done(ctx);
}

/* Counts that are not a multiple of the workgroup, 0, 1, and in place; and
 * one of whole groups (256 of 1,024 fp32 words), which a CPU driver
 * running invocations as SIMD lanes (llvmpipe, which runs both sides of a
 * uniform branch) takes without bounds tests, as its plan says. */
typedef struct count_case {
    ffnrt_backend backend;
    size_t n;
    int in_place;
} count_case;

ParameterizedTestParameters(activations, counts)
{
    static count_case cases[TEST_BACKENDS * 8];
    static const size_t sizes[] = {0, 1, 1000003, 262144};
    int k = 0;
    for (int b = 0; b < TEST_BACKENDS; b++)
        for (int s = 0; s < 4; s++)
            for (int ip = 0; ip < 2; ip++)
                cases[k++] = (count_case){test_backends[b], sizes[s], ip};
    return cr_make_param_array(count_case, cases, k);
}

ParameterizedTest(count_case *c, activations, counts)
{
    ffnrt_context *ctx = test_context(c->backend, NULL);
    float *in = malloc((c->n + 1) * sizeof *in), *out = malloc((c->n + 1) * sizeof *out);
    cr_assert(in && out);
    uint32_t state = 7u;
    for (size_t i = 0; i < c->n; i++) {
        state = state * 1664525u + 1013904223u;
        in[i] = ((float)(state >> 8) / 16777216.0f - 0.5f) * 16.0f;
    }
    ffnrt_tensor *x = test_tensor_1d(ctx, c->n, in);
    ffnrt_tensor *y = c->in_place ? x : test_tensor_1d(ctx, c->n, NULL);
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_GELU);
    cr_assert_eq(ffnrt_activation_forward(ctx, &d, x, y), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    test_read(y, out, c->n);
    for (size_t i = 0; i < c->n; i++)
        cr_assert(ulp_error_f32(out[i], ref_gelu(in[i])) <= 4.0, "gelu(%a) = %a at index %zu of %zu", in[i], out[i],
                  i, c->n);
    if (!c->in_place) { /* out of place leaves x as it was */
        test_read(x, out, c->n);
        cr_assert(c->n == 0 || memcmp(in, out, c->n * sizeof *in) == 0, "the input was modified");
    }
    ffnrt_device_info info;
    ffnrt_plan *plan = NULL;
    cr_assert_eq(ffnrt_context_get_device_info(ctx, &info), FFNRT_OK);
    cr_assert_eq(ffnrt_activation_plan(ctx, &d, FFNRT_DTYPE_F32, c->n, &plan), FFNRT_OK, "%s",
                 ffnrt_context_last_error(ctx));
    int lanes = info.type == FFNRT_DEVICE_TYPE_CPU && info.subgroup_size > 1;
    int whole = strstr(ffnrt_plan_text(plan), "whole groups (no bounds tests)") != NULL;
    cr_expect_eq(whole, lanes && c->n == 262144, "%s, %zu elements: the plan %s whole groups:\n%s", info.name, c->n,
                 whole ? "takes" : "does not take", ffnrt_plan_text(plan));
    ffnrt_plan_destroy(plan);
    free(in);
    free(out);
    test_context_done(ctx);
}

/* Where the driver runs invocations as SIMD lanes with a loop per access
 * and has 64-bit integers (lavapipe), element-wise kernels load and store
 * their 4-word vectors as two 64-bit words (VIEWS_64); int64_words=0
 * keeps the 4-word views that GPUs without shaderInt64 run. Both forms,
 * in and out of place, give the same bits, within the op's bound. */
BACKEND_PARAMETERS(activations, views64)
ParameterizedTest(ffnrt_backend *b, activations, views64)
{
    const size_t n = 262144;
    float *in = malloc(n * sizeof *in), *out[2] = {malloc(n * sizeof(float)), malloc(n * sizeof(float))};
    cr_assert(in && out[0] && out[1]);
    uint32_t state = 11u;
    for (size_t i = 0; i < n; i++) {
        state = state * 1664525u + 1013904223u;
        in[i] = ((float)(state >> 8) / 16777216.0f - 0.5f) * 16.0f;
    }
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_SILU);
    int narrow = 0;
    for (; narrow < 2; narrow++) {
        ffnrt_context *ctx = narrow ? test_context_with_limits(*b, "int64_words=0") : test_context(*b, NULL);
        if (!ctx)
            break; /* the backend is missing, and allowed to be (test_context says so) */
        ffnrt_device_info info;
        cr_assert_eq(ffnrt_context_get_device_info(ctx, &info), FFNRT_OK);
        ffnrt_plan *plan = NULL;
        cr_assert_eq(ffnrt_activation_plan(ctx, &d, FFNRT_DTYPE_F32, n, &plan), FFNRT_OK, "%s",
                     ffnrt_context_last_error(ctx));
        int says = strstr(ffnrt_plan_text(plan), "two 64-bit words") != NULL;
        if (narrow)
            cr_expect(!says, "int64_words=0, yet the plan takes 64-bit words:\n%s", ffnrt_plan_text(plan));
        else if (*b == FFNRT_BACKEND_VULKAN && info.type == FFNRT_DEVICE_TYPE_CPU && info.subgroup_size > 1)
            cr_expect(says, "%s: the element-wise kernel does not take 64-bit words:\n%s", info.name,
                      ffnrt_plan_text(plan));
        else
            cr_log_info("%s: element-wise 4-word views %s 64-bit words", info.name, says ? "as" : "not as");
        ffnrt_plan_destroy(plan);
        ffnrt_tensor *x = test_tensor_1d(ctx, n, in);
        ffnrt_tensor *y = test_tensor_1d(ctx, n, NULL);
        cr_assert_eq(ffnrt_activation_forward(ctx, &d, x, y), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
        cr_assert_eq(ffnrt_activation_forward(ctx, &d, x, x), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
        test_read(y, out[narrow], n);
        float *again = malloc(n * sizeof *again);
        cr_assert(again);
        test_read(x, again, n);
        cr_expect(memcmp(again, out[narrow], n * sizeof *again) == 0, "in place and out of place differ");
        free(again);
        for (size_t i = 0; i < n; i++)
            cr_assert(ulp_error_f32(out[narrow][i], ref_silu(in[i])) <= 4.0, "silu(%a) = %a", in[i],
                      out[narrow][i]);
        ffnrt_tensor_destroy(x);
        ffnrt_tensor_destroy(y);
        test_context_done(ctx);
    }
    if (narrow == 2)
        cr_expect(memcmp(out[0], out[1], n * sizeof(float)) == 0, "64-bit words and 4-word views differ");
    free(in);
    free(out[0]);
    free(out[1]);
}

/* PReLU's slope follows the channel axis: the last axis of tokens x
 * features, axis 1 of an NCHW image, or one shared slope. */
typedef struct prelu_case {
    ffnrt_backend backend;
    int axis;
    int shared;
} prelu_case;

ParameterizedTestParameters(activations, prelu_channels)
{
    static prelu_case cases[TEST_BACKENDS * 3];
    int k = 0;
    for (int b = 0; b < TEST_BACKENDS; b++) {
        cases[k++] = (prelu_case){test_backends[b], -1, 0};
        cases[k++] = (prelu_case){test_backends[b], 1, 0};
        cases[k++] = (prelu_case){test_backends[b], 1, 1};
    }
    return cr_make_param_array(prelu_case, cases, k);
}

ParameterizedTest(prelu_case *c, activations, prelu_channels)
{
    ffnrt_context *ctx = test_context(c->backend, NULL);
    const int64_t shape[4] = {2, 3, 5, 7}; /* N, C, H, W */
    size_t n = 2 * 3 * 5 * 7;
    size_t axis = c->axis < 0 ? 3 : (size_t)c->axis;
    size_t channels = c->shared ? 1 : (size_t)shape[axis];
    size_t inner = 1;
    for (size_t i = axis + 1; i < 4; i++)
        inner *= (size_t)shape[i];
    float in[210], out[210], slope[7];
    for (size_t i = 0; i < n; i++)
        in[i] = (float)((int)(i % 11) - 6) * 0.75f; /* negatives in every channel */
    for (size_t i = 0; i < channels; i++)
        slope[i] = 0.125f * (float)(i + 1);
    ffnrt_tensor *x = NULL, *y = NULL;
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 4, shape, &x), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 4, shape, &y), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(x, in, sizeof in), FFNRT_OK);
    ffnrt_tensor *s = test_tensor_1d(ctx, channels, slope);
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_PRELU);
    d.slopes = s;
    d.channel_axis = c->axis;
    cr_assert_eq(ffnrt_activation_forward(ctx, &d, x, y), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    test_read(y, out, n);
    for (size_t i = 0; i < n; i++) {
        float a = slope[c->shared ? 0 : (i / inner) % channels];
        float want = in[i] >= 0 ? in[i] : a * in[i];
        cr_assert_eq(out[i], want, "prelu at %zu: %g, expected %g", i, out[i], want);
    }
    test_context_done(ctx);
}

/* PReLU in every layout the kernel specialises (shaders/activation.kernel;
 * the table in src/ops/activation.c picks one per layout, storage type and
 * API): one slope; the last axis with channels below or above a group's
 * span, or a whole number of units (the run of words work-items take
 * together: a group's row on OpenCL, a work-item's 4 words on Vulkan), with
 * or without a smaller workgroup to make the unit fit; an inner axis
 * shorter or longer than the span, or a whole number of units. Groups
 * whose channels wrap or step and groups that do not both run, in every
 * storage type, forward and backward, odd sizes (a half-used last word)
 * included. Exact: the host's product of the same float values, rounded
 * once to the storage type (with 16-bit storage the fp32 product of two
 * 16-bit values is exact), within the 0.5-ULP contract by construction. */
typedef struct prelu_layout {
    int64_t shape[3];
    int ndim, axis, shared;
    int wide; /* also f16 backward and bf16 forward: the layouts where storage types differ in more than conversions */
} prelu_layout;

static float prelu_round(ffnrt_dtype dt, float v)
{
    return dt == FFNRT_DTYPE_F16    ? ffnrt_f16_to_f32(ffnrt_f32_to_f16(v))
         : dt == FFNRT_DTYPE_BF16   ? ffnrt_bf16_to_f32(ffnrt_f32_to_bf16(v))
                                    : v;
}

static ffnrt_tensor *prelu_tensor(ffnrt_context *ctx, ffnrt_dtype dt, int ndim, const int64_t *shape,
                                  const float *v, size_t n)
{
    ffnrt_tensor *t = NULL;
    cr_assert_eq(ffnrt_tensor_create(ctx, dt, (size_t)ndim, shape, &t), FFNRT_OK, "%s", ffnrt_last_error_message());
    uint16_t *h = malloc(n * sizeof *h);
    cr_assert_not_null(h);
    if (dt == FFNRT_DTYPE_F16)
        ffnrt_f32_to_f16_array(v, h, n);
    else if (dt == FFNRT_DTYPE_BF16)
        ffnrt_f32_to_bf16_array(v, h, n);
    cr_assert_eq(ffnrt_tensor_write(t, dt == FFNRT_DTYPE_F32 ? (const void *)v : h, ffnrt_tensor_bytes(t)), FFNRT_OK);
    free(h);
    return t;
}

static void prelu_read(const ffnrt_tensor *t, ffnrt_dtype dt, float *out, size_t n)
{
    if (dt == FFNRT_DTYPE_F32) {
        test_read(t, out, n);
        return;
    }
    uint16_t *h = malloc(n * sizeof *h);
    cr_assert_not_null(h);
    cr_assert_eq(ffnrt_tensor_read(t, h, n * sizeof *h), FFNRT_OK);
    for (size_t i = 0; i < n; i++)
        out[i] = dt == FFNRT_DTYPE_F16 ? ffnrt_f16_to_f32(h[i]) : ffnrt_bf16_to_f32(h[i]);
    free(h);
}

/* Every layout forward and backward in f32 and forward in f16; the wide
 * layouts also f16 backward and bf16 forward: each (storage, direction,
 * lookup) is a kernel build, and builds are what this test costs. */
static void check_prelu_layouts(ffnrt_context *ctx, const prelu_layout *layouts, size_t count, const char *what)
{
    static const ffnrt_dtype dtypes[] = {FFNRT_DTYPE_F32, FFNRT_DTYPE_F16, FFNRT_DTYPE_BF16};
    for (size_t l = 0; l < count; l++)
        for (size_t d = 0; d < 3; d++) {
            const prelu_layout *L = &layouts[l];
            ffnrt_dtype dt = dtypes[d];
            if (dt == FFNRT_DTYPE_BF16 && !L->wide)
                continue;
            size_t n = 1, axis = L->axis < 0 ? (size_t)(L->ndim - 1) : (size_t)L->axis, inner = 1;
            for (int k = 0; k < L->ndim; k++)
                n *= (size_t)L->shape[k];
            for (int k = (int)axis + 1; k < L->ndim; k++)
                inner *= (size_t)L->shape[k];
            size_t channels = L->shared ? 1 : (size_t)L->shape[axis];
            float *x = malloc(n * sizeof *x), *dy = malloc(n * sizeof *dy), *out = malloc(n * sizeof *out),
                  *slope = malloc(channels * sizeof *slope);
            cr_assert(x && dy && out && slope);
            for (size_t i = 0; i < n; i++) { /* nonzero, both signs, exact in every storage type */
                float v = (float)((int)(i * 7 % 23) - 11) * 0.25f;
                x[i] = v != 0.0f ? v : 0.125f;
                dy[i] = (float)((int)(i % 9) - 4) * 0.5f + 0.25f;
            }
            for (size_t c = 0; c < channels; c++) /* every channel's slope differs from its neighbours' */
                slope[c] = 0.0625f * (float)(c % 31 + 1) + (c % 62 >= 31 ? 0.03125f : 0.0f);
            int64_t one = (int64_t)channels;
            ffnrt_tensor *tx = prelu_tensor(ctx, dt, L->ndim, L->shape, x, n),
                         *tdy = prelu_tensor(ctx, dt, L->ndim, L->shape, dy, n),
                         *ts = prelu_tensor(ctx, dt, 1, &one, slope, channels), *ty = NULL;
            cr_assert_eq(ffnrt_tensor_create(ctx, dt, (size_t)L->ndim, L->shape, &ty), FFNRT_OK);
            ffnrt_activation_desc desc = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_PRELU);
            desc.slopes = ts;
            desc.channel_axis = L->axis;
            for (int backward = 0; backward < (dt == FFNRT_DTYPE_F32 || (dt == FFNRT_DTYPE_F16 && L->wide) ? 2 : 1); backward++) {
                ffnrt_status st = backward ? ffnrt_activation_backward(ctx, &desc, tx, tdy, ty)
                                           : ffnrt_activation_forward(ctx, &desc, tx, ty);
                cr_assert_eq(st, FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
                prelu_read(ty, dt, out, n);
                for (size_t i = 0; i < n; i++) {
                    float a = slope[L->shared ? 0 : (i / inner) % channels];
                    float want = backward ? prelu_round(dt, dy[i] * (x[i] > 0 ? 1.0f : a))
                                          : prelu_round(dt, x[i] >= 0 ? x[i] : a * x[i]);
                    cr_assert_eq(out[i], want, "prelu %s %s (%s), layout %zu, element %zu of %zu: %g, expected %g",
                                 backward ? "backward" : "forward", ffnrt_dtype_name(dt), what, l, i, n, out[i],
                                 want);
                }
            }
            ffnrt_tensor_destroy(tx), ffnrt_tensor_destroy(tdy), ffnrt_tensor_destroy(ts), ffnrt_tensor_destroy(ty);
            free(x), free(dy), free(out), free(slope);
        }
}

BACKEND_PARAMETERS(activations, prelu_layouts)

ParameterizedTest(ffnrt_backend *b, activations, prelu_layouts)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    /* The lookup each takes at the default 256 work-items a group, OpenCL / Vulkan. */
    static const prelu_layout layouts[] = {
        {{5, 7, 3}, 3, -1, 0, 0},    /* LAST_AXIS: few channels, the channel by division */
        {{3, 1500, 1}, 2, -1, 0, 0}, /* LAST_AXIS_WIDE / UNITS (f32), LAST_AXIS (16-bit: 8 does not divide 1500) */
        {{2, 2600, 1}, 2, -1, 0, 1}, /* LAST_AXIS_WIDE: straight and wrapping groups / UNITS */
        {{1, 3, 2101}, 3, 1, 0, 1},  /* INNER_WIDE, 6303 elements, odd / the same */
        {{2, 3, 1100}, 3, 1, 0, 0},  /* INNER_WIDE (f32), ANY_AXIS (16-bit) / INNER_UNITS (f32), ANY_AXIS */
        {{4, 5, 6}, 3, 1, 1, 0},     /* SHARED: one slope */
        {{7, 1024, 1}, 2, -1, 0, 1}, /* LAST_AXIS_WIDE (f32), UNITS (16-bit) / UNITS: the bench's layout,
                                      * 2048-element 16-bit groups over 1024 channels, a half last group */
        {{5, 768, 1}, 2, -1, 0, 1},  /* LAST_AXIS_UNITS on both; 16-bit on OpenCL with 128 work-items a group */
        {{3, 5, 512}, 3, 1, 0, 0},   /* INNER_UNITS on both */
        {{9, 12, 1}, 2, -1, 0, 0},   /* LAST_AXIS / UNITS (f32), LAST_AXIS (16-bit) */
    };
    check_prelu_layouts(ctx, layouts, sizeof layouts / sizeof layouts[0], "256 work-items");
    /* With statistics on, the kernel's own loop takes the unit lookups'
     * fallbacks, at the workgroup the table chose (768 channels, 16-bit:
     * 128 on OpenCL). */
    ffnrt_stats_options so = FFNRT_STATS_OPTIONS_INIT;
    cr_assert_eq(ffnrt_context_set_stats(ctx, &so), FFNRT_OK);
    static const prelu_layout with_stats[] = {{{5, 768, 1}, 2, -1, 0, 0}, {{3, 5, 512}, 3, 1, 0, 0}};
    check_prelu_layouts(ctx, with_stats, 2, "statistics on");
    test_context_done(ctx);
}

/* The same lookups under a device limit of 48 work-items a group (not a
 * power of two), as a small GPU would take them: units of 48 or 96
 * elements on OpenCL, which no smaller group may replace (24 is below the
 * table's floor of 32); and a buffer range of 2 KiB, so each tensor runs
 * as several dispatches whose ranges start inside groups (a unit's lookup
 * must hold from any dispatch's first element). */
BACKEND_PARAMETERS(activations, prelu_layouts_small_groups)

ParameterizedTest(ffnrt_backend *b, activations, prelu_layouts_small_groups)
{
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.max_workgroup_size = 48;
    o.max_buffer_range = 2048;
    ffnrt_context *ctx = test_context(*b, &o);
    static const prelu_layout layouts[] = {
        {{5, 288, 1}, 2, -1, 0, 1}, /* LAST_AXIS_WIDE (f32), UNITS (16-bit: 288 = 3 x 96) / UNITS */
        {{3, 200, 1}, 2, -1, 0, 0}, /* LAST_AXIS_WIDE (f32), LAST_AXIS (16-bit: 200 below a 384-element span) / UNITS */
        {{2, 3, 96}, 3, 1, 0, 0},   /* INNER_UNITS on both */
    };
    check_prelu_layouts(ctx, layouts, sizeof layouts / sizeof layouts[0], "48 work-items");
    test_context_done(ctx);
}

/* Signs of zero, the limits at infinity, and the seed's values. */
BACKEND_PARAMETERS(activations, special_values)

static float run_one(ffnrt_context *ctx, ffnrt_activation act, float v)
{
    ffnrt_tensor *x = test_tensor_1d(ctx, 1, &v);
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(act);
    cr_assert_eq(ffnrt_activation_forward(ctx, &d, x, x), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    float r;
    test_read(x, &r, 1);
    ffnrt_tensor_destroy(x);
    return r;
}

ParameterizedTest(ffnrt_backend *b, activations, special_values)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    static const ffnrt_activation odd_at_zero[] = {FFNRT_ACT_GELU, FFNRT_ACT_GELU_TANH, FFNRT_ACT_SILU,
                                                   FFNRT_ACT_SWISH, FFNRT_ACT_TANH, FFNRT_ACT_ELU, FFNRT_ACT_RELU};
    for (size_t i = 0; i < sizeof odd_at_zero / sizeof odd_at_zero[0]; i++) {
        float r = run_one(ctx, odd_at_zero[i], -0.0f);
        cr_assert(r == 0.0f && signbit(r), "%s(-0) = %g, expected -0", ffnrt_activation_name(odd_at_zero[i]), r);
    }
    cr_assert_eq(run_one(ctx, FFNRT_ACT_SIGMOID, 0.0f), 0.5f);
    cr_assert_eq(run_one(ctx, FFNRT_ACT_GELU, INFINITY), INFINITY);
    float g = run_one(ctx, FFNRT_ACT_GELU, -INFINITY);
    cr_assert(g == 0.0f && signbit(g), "gelu(-inf) = %g, expected -0", g);
    cr_assert_eq(run_one(ctx, FFNRT_ACT_TANH, INFINITY), 1.0f);
    cr_assert_eq(run_one(ctx, FFNRT_ACT_TANH, -INFINITY), -1.0f);
    cr_assert_eq(run_one(ctx, FFNRT_ACT_SIGMOID, -INFINITY), 0.0f);
    cr_assert_eq(run_one(ctx, FFNRT_ACT_ELU, -INFINITY), -1.0f);
    /* The seed: SiLU(-1) ~ -0.2689; GELU keeps its sign and precision far
     * into the negative tail, where 1 + erf cancels to 0. */
    cr_assert_float_eq(run_one(ctx, FFNRT_ACT_SILU, -1.0f), -0.268941421f, 1e-6f);
    float tail = run_one(ctx, FFNRT_ACT_GELU, -10.0f);
    cr_assert(tail < 0 && ulp_error_f32(tail, ref_gelu(-10.0)) <= 4.0, "gelu(-10) = %a", tail);
    test_context_done(ctx);
}

/* The op table is the one list of ops: every row's name reads back, every
 * GLU row names its gate, and a row's parameters are exactly those its
 * kernel hooks read (a changed alpha or beta changes the result of the
 * rows that say so, and only of those). */
BACKEND_PARAMETERS(activations, op_table_rows)
ParameterizedTest(ffnrt_backend *b, activations, op_table_rows)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    const float in[4] = {-1.5f, -0.25f, 0.75f, 2.0f};
    ffnrt_tensor *x = test_tensor_1d(ctx, 4, in), *y = test_tensor_1d(ctx, 4, NULL);
    ffnrt_tensor *slopes = test_tensor_1d(ctx, 1, (const float[]){0.2f});
#define CHECK_ROW(E, name, params, ...)                                                                            \
    {                                                                                                              \
        ffnrt_activation act;                                                                                      \
        cr_expect_eq(ffnrt_activation_from_name(#name, &act), FFNRT_OK);                                          \
        cr_expect_eq(act, FFNRT_ACT_##E);                                                                          \
        cr_expect_str_eq(ffnrt_activation_name(FFNRT_ACT_##E), #name);                                            \
        float base[4], other[4];                                                                                   \
        ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_##E);                                       \
        d.slopes = slopes;                                                                                         \
        cr_assert_eq(ffnrt_activation_forward(ctx, &d, x, y), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));     \
        test_read(y, base, 4);                                                                                     \
        d.alpha *= 3.0f;                                                                                           \
        cr_assert_eq(ffnrt_activation_forward(ctx, &d, x, y), FFNRT_OK);                                          \
        test_read(y, other, 4);                                                                                    \
        cr_expect_eq(memcmp(base, other, sizeof base) != 0, ((params) & FFNRT_OP_ALPHA) != 0, "%s and alpha", #name); \
        d.alpha /= 3.0f;                                                                                           \
        d.beta = 1.7f;                                                                                             \
        cr_assert_eq(ffnrt_activation_forward(ctx, &d, x, y), FFNRT_OK);                                          \
        test_read(y, other, 4);                                                                                    \
        cr_expect_eq(memcmp(base, other, sizeof base) != 0, ((params) & FFNRT_OP_BETA) != 0, "%s and beta", #name); \
    }
    FFNRT_ACTIVATIONS(CHECK_ROW)
#undef CHECK_ROW
#define CHECK_GLU_ROW(E, name, GATE)                                                                               \
    {                                                                                                              \
        ffnrt_glu kind;                                                                                            \
        cr_expect_eq(ffnrt_glu_from_name(#name, &kind), FFNRT_OK);                                                \
        cr_expect_eq(kind, FFNRT_##E);                                                                             \
        cr_expect_eq(ffnrt_glu_gate_activation(FFNRT_##E), FFNRT_ACT_##GATE);                                      \
    }
    FFNRT_GLU_KINDS(CHECK_GLU_ROW)
#undef CHECK_GLU_ROW
    ffnrt_tensor_destroy(x);
    ffnrt_tensor_destroy(y);
    ffnrt_tensor_destroy(slopes);
    test_context_done(ctx);
}
