/* FFN layers: dense and gated, fused and unfused, matrix-vector and tiled,
 * fp32/fp16/bf16, on both backends, against a double-precision reference.
 *
 * Error measure: normwise relative error ||y - y_ref||_2 / ||y_ref||_2,
 * y_ref computed in double from the very values the device holds (16-bit
 * inputs are rounded before both sides see them). Bounds:
 *  - fp32: each dot product of length K commits K roundings of random sign,
 *    about sqrt(K)·u with u = 2^-24 in norm; the two products add, and the
 *    activation and output rounding add a few ULP per element. Bound:
 *    4·(sqrt(d) + sqrt(h) + 2)·u (the worst seen here is 7 times smaller;
 *    an indexing error gives O(1)).
 *  - fp16 / bf16 storage, fp32 accumulation: dominated by the roundings to
 *    the storage type of the hidden activation and of the output (unfused:
 *    also of g, v and the biased intermediates, up to 5 roundings of
 *    u16 = 2^-11 or 2^-8 each); measured up to 1.2·u16. Bound: 4·u16.
 * Fused and unfused results must agree within the same bound.
 *
 * Kernel builds cost about a second each on PoCL and every test runs in its
 * own process, so the cases are spread: every activation once (cycling
 * through tokens 1, 7, 64 and bias on/off), precisions and odd shapes on a
 * few kinds, and lowered limits on small shapes. */
#include "device_fixture.h"
#include "contract.h"
#include "reference.h"
#include "reference_grad.h"

#include <criterion/parameterized.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


typedef struct ffn_case {
    ffnrt_backend backend;
    ffnrt_ffn_kind kind;
    int phi;             /* ffnrt_activation (dense) or ffnrt_glu (gated) */
    ffnrt_dtype dtype;
    int d_model, hidden, tokens;
    int bias;
    int stacked;         /* gated: one [2h, d] gate/value matrix */
    int from_tensors;    /* create from device tensors rather than host arrays */
    ffnrt_matmul_kernel matmul;
} ffn_case;

/* ------------------------------------------------------------ reference */

/* The layer's activation (gated: its gate's), from the op table's reference. */
static double phi_reference(const ffn_case *c, double v)
{
    ffnrt_activation act =
        c->kind == FFNRT_FFN_GATED ? ffnrt_glu_gate_activation((ffnrt_glu)c->phi) : (ffnrt_activation)c->phi;
    double alpha = act == FFNRT_ACT_ELU ? ELU_ALPHA : LEAKY_SLOPE;
    return ref_forward(act, v, alpha, SWISH_BETA);
}

/* Host weights as the device holds them: float values already rounded to
 * the dtype, plus their storage bits. */
typedef struct host_array {
    float *values;
    void *stored; /* float or uint16_t bits */
    size_t n;
} host_array;

static uint32_t rng_state;
static float uniform(float lo, float hi)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(rng_state >> 8) / 16777216.0f;
}

static host_array make_array(ffnrt_dtype dtype, size_t n, float scale)
{
    host_array a = {malloc((n ? n : 1) * sizeof(float)), malloc((n ? n : 1) * 4), n};
    cr_assert(a.values && a.stored);
    for (size_t i = 0; i < n; i++) {
        float v = uniform(-scale, scale);
        if (dtype == FFNRT_DTYPE_F16) {
            ((uint16_t *)a.stored)[i] = ffnrt_f32_to_f16(v);
            v = ffnrt_f16_to_f32(((uint16_t *)a.stored)[i]);
        } else if (dtype == FFNRT_DTYPE_BF16) {
            ((uint16_t *)a.stored)[i] = ffnrt_f32_to_bf16(v);
            v = ffnrt_bf16_to_f32(((uint16_t *)a.stored)[i]);
        } else {
            ((float *)a.stored)[i] = v;
        }
        a.values[i] = v;
    }
    return a;
}

static void free_array(host_array *a)
{
    free(a->values);
    free(a->stored);
}

/* out[t][r] = sum_k in[t][k] * w[row0 + r][k] (+ b[b0 + r]), in double. */
static void ref_linear(const double *in, size_t tokens, size_t k, const float *w, size_t row0, size_t rows,
                       const float *b, size_t b0, double *out)
{
    for (size_t t = 0; t < tokens; t++)
        for (size_t r = 0; r < rows; r++) {
            double s = b ? b[b0 + r] : 0.0;
            for (size_t i = 0; i < k; i++)
                s += in[t * k + i] * (double)w[(row0 + r) * k + i];
            out[t * rows + r] = s;
        }
}

/* --------------------------------------------------------------- runner */

enum { X, W_IN, B_IN, W_GATE, B_GATE, W_VALUE, B_VALUE, W_OUT, B_OUT, ARRAYS };

typedef struct ffn_data {
    host_array a[ARRAYS]; /* gated stacked: W_GATE holds [2h, d], W_VALUE unused */
    double *y_ref;
} ffn_data;

static ffn_data make_data(const ffn_case *c)
{
    ffn_data f;
    memset(&f, 0, sizeof f);
    size_t d = (size_t)c->d_model, h = (size_t)c->hidden, t = (size_t)c->tokens;
    int gated = c->kind == FFNRT_FFN_GATED;
    rng_state = 0x9e3779b9u ^ (uint32_t)(d * 131 + h * 7 + t);
    /* Scaled so that pre-activations are O(1) whatever the widths. */
    float sd = 1.0f / sqrtf((float)d), sh = 1.0f / sqrtf((float)h);
    f.a[X] = make_array(c->dtype, t * d, 1.0f);
    f.a[W_IN] = make_array(c->dtype, gated ? 0 : h * d, 2.0f * sd);
    f.a[B_IN] = make_array(c->dtype, gated ? 0 : h, 0.5f);
    f.a[W_GATE] = make_array(c->dtype, gated ? (c->stacked ? 2 : 1) * h * d : 0, 2.0f * sd);
    f.a[B_GATE] = make_array(c->dtype, gated ? (c->stacked ? 2 : 1) * h : 0, 0.5f);
    f.a[W_VALUE] = make_array(c->dtype, gated && !c->stacked ? h * d : 0, 2.0f * sd);
    f.a[B_VALUE] = make_array(c->dtype, gated && !c->stacked ? h : 0, 0.5f);
    f.a[W_OUT] = make_array(c->dtype, d * h, 2.0f * sh);
    f.a[B_OUT] = make_array(c->dtype, d, 0.5f);

    double *x = malloc(t * d * sizeof *x), *hid = malloc(t * h * sizeof *hid), *v = malloc(t * h * sizeof *v);
    f.y_ref = malloc(t * d * sizeof *f.y_ref);
    cr_assert(x && hid && v && f.y_ref);
    for (size_t i = 0; i < t * d; i++)
        x[i] = f.a[X].values[i];
    if (!gated) {
        ref_linear(x, t, d, f.a[W_IN].values, 0, h, c->bias ? f.a[B_IN].values : NULL, 0, hid);
        for (size_t i = 0; i < t * h; i++)
            hid[i] = phi_reference(c, hid[i]);
    } else {
        const float *wv = c->stacked ? f.a[W_GATE].values : f.a[W_VALUE].values;
        const float *bv = c->stacked ? f.a[B_GATE].values : f.a[B_VALUE].values;
        size_t v0 = c->stacked ? h : 0;
        ref_linear(x, t, d, f.a[W_GATE].values, 0, h, c->bias ? f.a[B_GATE].values : NULL, 0, hid);
        ref_linear(x, t, d, wv, v0, h, c->bias ? bv : NULL, v0, v);
        for (size_t i = 0; i < t * h; i++)
            hid[i] = phi_reference(c, hid[i]) * v[i];
    }
    ref_linear(hid, t, h, f.a[W_OUT].values, 0, d, c->bias ? f.a[B_OUT].values : NULL, 0, f.y_ref);
    free(x);
    free(hid);
    free(v);
    return f;
}

static void free_data(ffn_data *f)
{
    for (int i = 0; i < ARRAYS; i++)
        free_array(&f->a[i]);
    free(f->y_ref);
}

static ffnrt_ffn_desc case_desc(const ffn_case *c, ffnrt_ffn_path path)
{
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(c->kind, c->d_model, c->hidden);
    desc.dtype = c->dtype;
    desc.bias = c->bias;
    desc.path = path;
    desc.matmul = c->matmul;
    if (c->kind == FFNRT_FFN_GATED) {
        desc.glu.kind = (ffnrt_glu)c->phi;
        desc.glu.beta = SWISH_BETA;
    } else {
        ffnrt_activation_desc a = FFNRT_ACTIVATION_DESC_INIT((ffnrt_activation)c->phi);
        a.alpha = c->phi == FFNRT_ACT_ELU ? ELU_ALPHA : LEAKY_SLOPE;
        a.beta = SWISH_BETA;
        desc.activation = a;
    }
    return desc;
}

static ffnrt_tensor *device_array(ffnrt_context *ctx, ffnrt_dtype dtype, const host_array *a, int64_t rows,
                                  int64_t cols)
{
    int64_t shape[2] = {rows, cols};
    ffnrt_tensor *t = NULL;
    cr_assert_eq(ffnrt_tensor_create(ctx, dtype, cols ? 2 : 1, shape, &t), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_assert_eq(ffnrt_tensor_write(t, a->stored, ffnrt_tensor_bytes(t)), FFNRT_OK, "%s", ffnrt_last_error_message());
    return t;
}

/* FFNRT_TEST_BOUND_SCALE=0.001 makes every case fail and print its error:
 * a way to see the margins. */
static double bound_for(const ffn_case *c)
{
    const char *scale_env = getenv("FFNRT_TEST_BOUND_SCALE");
    double scale = scale_env ? atof(scale_env) : 1.0;
    return scale * contract_ffn_bound(c->dtype, c->d_model, c->hidden);
}

static void read_output(const ffnrt_tensor *y, ffnrt_dtype dtype, size_t n, float *out)
{
    uint16_t *bits = malloc(n * sizeof *bits + 1);
    cr_assert(bits);
    if (dtype == FFNRT_DTYPE_F32) {
        cr_assert_eq(ffnrt_tensor_read(y, out, n * 4), FFNRT_OK, "%s", ffnrt_last_error_message());
    } else {
        cr_assert_eq(ffnrt_tensor_read(y, bits, n * 2), FFNRT_OK, "%s", ffnrt_last_error_message());
        for (size_t i = 0; i < n; i++)
            out[i] = dtype == FFNRT_DTYPE_F16 ? ffnrt_f16_to_f32(bits[i]) : ffnrt_bf16_to_f32(bits[i]);
    }
    free(bits);
}

/* Runs the case on both paths in ctx; checks each against the reference
 * and against each other. */
/* 1: the cases run as ffnrt_ffn_forward_residual, y starting as x's
 * values (a residual stream), and are checked against x + the reference. */
static int residual_mode;

static void run_case(ffnrt_context *ctx, const ffn_case *c)
{
    ffn_data f = make_data(c);
    size_t d = (size_t)c->d_model, n = (size_t)c->tokens * d;
    int64_t h = c->hidden, dm = c->d_model;
    int gated = c->kind == FFNRT_FFN_GATED;
    int64_t x_shape[2] = {c->tokens, dm};
    ffnrt_tensor *x = NULL, *y = NULL;
    cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 2, x_shape, &x), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 2, x_shape, &y), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(x, f.a[X].stored, ffnrt_tensor_bytes(x)), FFNRT_OK);

    /* Weights: host arrays, or device tensors shared by both paths' layers. */
    ffnrt_ffn_weights hw = {0};
    ffnrt_ffn_weight_tensors tw = {0};
    ffnrt_tensor *owned[ARRAYS] = {0};
    const void *hb[ARRAYS];
    for (int i = 0; i < ARRAYS; i++)
        hb[i] = c->bias ? f.a[i].stored : NULL;
    if (!gated) {
        hw.w_in = f.a[W_IN].stored, hw.b_in = hb[B_IN];
    } else if (c->stacked) {
        hw.w_gate_value = f.a[W_GATE].stored, hw.b_gate_value = hb[B_GATE];
    } else {
        hw.w_gate = f.a[W_GATE].stored, hw.b_gate = hb[B_GATE];
        hw.w_value = f.a[W_VALUE].stored, hw.b_value = hb[B_VALUE];
    }
    hw.w_out = f.a[W_OUT].stored, hw.b_out = hb[B_OUT];
    if (c->from_tensors) {
        int64_t up = gated && c->stacked ? 2 * h : h;
        owned[W_OUT] = device_array(ctx, c->dtype, &f.a[W_OUT], dm, h);
        tw.w_out = owned[W_OUT];
        if (c->bias)
            tw.b_out = owned[B_OUT] = device_array(ctx, c->dtype, &f.a[B_OUT], dm, 0);
        int w = gated ? W_GATE : W_IN;
        owned[w] = device_array(ctx, c->dtype, &f.a[w], up, dm);
        if (c->bias)
            owned[w + 1] = device_array(ctx, c->dtype, &f.a[w + 1], up, 0);
        if (gated && !c->stacked) {
            owned[W_VALUE] = device_array(ctx, c->dtype, &f.a[W_VALUE], h, dm);
            if (c->bias)
                owned[B_VALUE] = device_array(ctx, c->dtype, &f.a[B_VALUE], h, 0);
        }
        if (!gated) {
            tw.w_in = owned[W_IN], tw.b_in = owned[B_IN];
        } else if (c->stacked) {
            tw.w_gate_value = owned[W_GATE], tw.b_gate_value = owned[B_GATE];
        } else {
            tw.w_gate = owned[W_GATE], tw.b_gate = owned[B_GATE];
            tw.w_value = owned[W_VALUE], tw.b_value = owned[B_VALUE];
        }
    }

    double bound = bound_for(c);
    if (residual_mode)
        for (size_t i = 0; i < n; i++)
            f.y_ref[i] += f.a[X].values[i];
    float *out[2];
    double err[2];
    for (int path = 0; path < 2; path++) {
        ffnrt_ffn_desc desc = case_desc(c, path ? FFNRT_FFN_PATH_UNFUSED : FFNRT_FFN_PATH_FUSED);
        ffnrt_ffn *layer = NULL;
        ffnrt_status st = c->from_tensors ? ffnrt_ffn_create_from_tensors(ctx, &desc, &tw, &layer)
                                          : ffnrt_ffn_create(ctx, &desc, &hw, &layer);
        cr_assert_eq(st, FFNRT_OK, "create: %s", ffnrt_last_error_message());
        if (residual_mode) {
            cr_assert_eq(ffnrt_tensor_write(y, f.a[X].stored, ffnrt_tensor_bytes(y)), FFNRT_OK);
            cr_assert_eq(ffnrt_ffn_forward_residual(layer, x, y), FFNRT_OK, "forward: %s", ffnrt_last_error_message());
        } else {
            cr_assert_eq(ffnrt_ffn_forward(layer, x, y), FFNRT_OK, "forward: %s", ffnrt_last_error_message());
        }
        out[path] = malloc((n ? n : 1) * sizeof(float));
        cr_assert(out[path]);
        read_output(y, c->dtype, n, out[path]);
        err[path] = test_rel_error(out[path], f.y_ref, n);
        ffnrt_ffn_destroy(layer);
    }
    const char *names[2] = {"fused", "unfused"};
    for (int path = 0; path < 2; path++)
        cr_expect_leq(err[path], bound,
                      "%s %s %s phi=%d d=%d h=%d tokens=%d bias=%d stacked=%d: %s error %.3g > bound %.3g",
                      ffnrt_backend_name(c->backend), c->kind ? "gated" : "dense", ffnrt_dtype_name(c->dtype), c->phi,
                      c->d_model, c->hidden, c->tokens, c->bias, c->stacked, names[path], err[path], bound);
    double *fused = malloc((n ? n : 1) * sizeof *fused);
    cr_assert(fused);
    for (size_t i = 0; i < n; i++)
        fused[i] = out[0][i];
    double agree = test_rel_error(out[1], fused, n);
    cr_expect_leq(agree, bound, "%s d=%d h=%d tokens=%d: fused and unfused differ by %.3g > %.3g",
                  ffnrt_backend_name(c->backend), c->d_model, c->hidden, c->tokens, agree, bound);
    free(fused);
    free(out[0]);
    free(out[1]);
    for (int i = 0; i < ARRAYS; i++)
        ffnrt_tensor_destroy(owned[i]);
    ffnrt_tensor_destroy(x);
    ffnrt_tensor_destroy(y);
    free_data(&f);
}

static void run_cases(const ffn_case *cases, size_t count, const ffnrt_context_options *options)
{
    ffnrt_context *ctx = test_context(cases[0].backend, options);
    if (!ctx)
        return;
    for (size_t i = 0; i < count; i++)
        run_case(ctx, &cases[i]);
    test_context_done(ctx);
}

/* ---------------------------------------------------------------- tests */

#define MAX_CASES 64
static const int token_cycle[3] = {1, 7, 64};

/* Every activation of the dense FFN and every gate of the gated one, fp32,
 * odd widths, cycling tokens, bias and weight layout. One test per backend
 * and kind so kernel builds are shared in one process. */
typedef struct phi_group {
    ffnrt_backend backend;
    ffnrt_ffn_kind kind;
} phi_group;

ParameterizedTestParameters(ffn, every_activation)
{
    static phi_group groups[TEST_BACKENDS * 2];
    for (int b = 0; b < TEST_BACKENDS; b++)
        for (int k = 0; k < 2; k++)
            groups[b * 2 + k] = (phi_group){test_backends[b], (ffnrt_ffn_kind)k};
    return cr_make_param_array(phi_group, groups, TEST_BACKENDS * 2);
}

ParameterizedTest(phi_group *g, ffn, every_activation)
{
    ffn_case cases[MAX_CASES];
    size_t n = 0;
    int kinds = g->kind == FFNRT_FFN_GATED ? FFNRT_GLU_COUNT : FFNRT_ACT_COUNT;
    for (int phi = 0; phi < kinds; phi++) {
        if (g->kind == FFNRT_FFN_DENSE && phi == FFNRT_ACT_PRELU)
            continue;
        int i = (int)n;
        cases[n++] = (ffn_case){g->backend, g->kind, phi, FFNRT_DTYPE_F32, 19, 37, token_cycle[i % 3],
                                i % 2 == 0, i % 4 == 1, i % 3 == 2, FFNRT_MATMUL_AUTO};
    }
    run_cases(cases, n, NULL);
}

/* fp16 and bf16 storage: both kinds, both kernels, bias and stacked
 * weights, even and odd output widths (odd ones write shared words). */
typedef struct precision_group {
    ffnrt_backend backend;
    ffnrt_dtype dtype;
} precision_group;

ParameterizedTestParameters(ffn, precisions)
{
    static precision_group groups[TEST_BACKENDS * 2];
    for (int b = 0; b < TEST_BACKENDS; b++) {
        groups[b * 2] = (precision_group){test_backends[b], FFNRT_DTYPE_F16};
        groups[b * 2 + 1] = (precision_group){test_backends[b], FFNRT_DTYPE_BF16};
    }
    return cr_make_param_array(precision_group, groups, TEST_BACKENDS * 2);
}

ParameterizedTest(precision_group *g, ffn, precisions)
{
    ffn_case cases[] = {
        {g->backend, FFNRT_FFN_DENSE, FFNRT_ACT_GELU, g->dtype, 24, 64, 1, 1, 0, 0, FFNRT_MATMUL_AUTO},
        {g->backend, FFNRT_FFN_DENSE, FFNRT_ACT_GELU, g->dtype, 13, 27, 64, 0, 0, 1, FFNRT_MATMUL_AUTO},
        {g->backend, FFNRT_FFN_GATED, FFNRT_SWIGLU, g->dtype, 13, 27, 7, 1, 1, 0, FFNRT_MATMUL_AUTO},
        {g->backend, FFNRT_FFN_GATED, FFNRT_SWIGLU, g->dtype, 32, 48, 64, 1, 0, 1, FFNRT_MATMUL_AUTO},
    };
    run_cases(cases, sizeof cases / sizeof cases[0], NULL);
}

/* Shapes: 1, primes, odd, K not a multiple of the tile, the seed's
 * d = 6 / m = 12 / g = 8, and each kernel forced outside its range. */
ParameterizedTestParameters(ffn, shapes)
{
    static ffnrt_backend backends[TEST_BACKENDS];
    memcpy(backends, test_backends, sizeof backends);
    return cr_make_param_array(ffnrt_backend, backends, TEST_BACKENDS);
}

ParameterizedTest(ffnrt_backend *b, ffn, shapes)
{
    ffnrt_ffn_kind D = FFNRT_FFN_DENSE, G = FFNRT_FFN_GATED;
    ffnrt_dtype F32 = FFNRT_DTYPE_F32;
    ffn_case cases[] = {
        {*b, D, FFNRT_ACT_GELU, F32, 1, 1, 1, 1, 0, 0, FFNRT_MATMUL_AUTO},
        {*b, D, FFNRT_ACT_GELU, F32, 6, 12, 7, 1, 0, 0, FFNRT_MATMUL_AUTO},
        {*b, G, FFNRT_SWIGLU, F32, 6, 8, 64, 1, 0, 0, FFNRT_MATMUL_AUTO},
        {*b, G, FFNRT_SWIGLU, F32, 1, 1, 1, 0, 1, 0, FFNRT_MATMUL_AUTO},
        {*b, D, FFNRT_ACT_GELU, F32, 67, 131, 65, 1, 0, 1, FFNRT_MATMUL_AUTO},
        {*b, G, FFNRT_SWIGLU, F32, 33, 70, 9, 1, 1, 0, FFNRT_MATMUL_AUTO},
        {*b, G, FFNRT_SWIGLU, F32, 29, 17, 23, 0, 0, 0, FFNRT_MATMUL_MATVEC}, /* tokens in chunks of 8 */
        {*b, D, FFNRT_ACT_GELU, F32, 29, 17, 2, 0, 0, 0, FFNRT_MATMUL_TILED},
    };
    run_cases(cases, sizeof cases / sizeof cases[0], NULL);
}

/* ffnrt_ffn_forward_residual: y += the layer's output, on both paths and
 * every product kernel the device runs (matvec's tokens in chunks, tiled's
 * split K-less store), biases on and off, dense and gated, fp16 storage;
 * within the forward's bound against x + the reference. */
BACKEND_PARAMETERS(ffn, residual)

ParameterizedTest(ffnrt_backend *b, ffn, residual)
{
    ffnrt_ffn_kind D = FFNRT_FFN_DENSE, G = FFNRT_FFN_GATED;
    ffnrt_dtype F32 = FFNRT_DTYPE_F32, F16 = FFNRT_DTYPE_F16;
    ffn_case cases[] = {
        {*b, D, FFNRT_ACT_GELU, F32, 6, 12, 7, 1, 0, 0, FFNRT_MATMUL_AUTO},
        {*b, G, FFNRT_SWIGLU, F32, 33, 70, 1, 1, 1, 0, FFNRT_MATMUL_AUTO},
        {*b, G, FFNRT_GEGLU, F16, 29, 17, 9, 0, 0, 0, FFNRT_MATMUL_AUTO},
        {*b, G, FFNRT_SWIGLU, F32, 29, 17, 23, 1, 0, 0, FFNRT_MATMUL_MATVEC},
        {*b, D, FFNRT_ACT_RELU, F16, 29, 17, 2, 1, 0, 0, FFNRT_MATMUL_TILED},
    };
    residual_mode = 1;
    run_cases(cases, sizeof cases / sizeof cases[0], NULL);
    residual_mode = 0;
}

/* Limits of a small GPU: a 64 KiB buffer range splits W (and x, y) over
 * dispatches at unaligned element offsets, a 16-workgroup grid splits
 * further, 32-item workgroups shrink the tiles. */
ParameterizedTestParameters(ffn, lowered_limits)
{
    static ffnrt_backend backends[TEST_BACKENDS];
    memcpy(backends, test_backends, sizeof backends);
    return cr_make_param_array(ffnrt_backend, backends, TEST_BACKENDS);
}

ParameterizedTest(ffnrt_backend *b, ffn, lowered_limits)
{
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.max_buffer_range = 65536;
    o.max_workgroup_count = 16;
    o.max_workgroup_size = 32;
    ffn_case cases[] = {
        {*b, FFNRT_FFN_GATED, FFNRT_SWIGLU, FFNRT_DTYPE_F32, 75, 301, 1, 1, 1, 1, FFNRT_MATMUL_AUTO},
        {*b, FFNRT_FFN_GATED, FFNRT_SWIGLU, FFNRT_DTYPE_F32, 75, 301, 70, 1, 0, 0, FFNRT_MATMUL_AUTO},
        {*b, FFNRT_FFN_DENSE, FFNRT_ACT_GELU, FFNRT_DTYPE_F16, 77, 433, 7, 1, 0, 1, FFNRT_MATMUL_AUTO},
    };
    run_cases(cases, sizeof cases / sizeof cases[0], &o);
}

/* A device that binds 4 storage buffers a kernel (Vulkan's minimum, and
 * older mobile drivers'; max_bindings lowers the CPU drivers' to it): the
 * product kernels leave out the bias bindings they would otherwise carry
 * for a layer without biases (lavapipe's never carry them: its bias is
 * compiled in), and a gated layer with biases runs its two products
 * apart, each within the limit. Both paths asked of each layer
 * still run and agree with the reference (a kernel past the limit is
 * refused), and the plan says why. */
ParameterizedTestParameters(ffn, binding_limit)
{
    static ffnrt_backend backends[TEST_BACKENDS];
    memcpy(backends, test_backends, sizeof backends);
    return cr_make_param_array(ffnrt_backend, backends, TEST_BACKENDS);
}

ParameterizedTest(ffnrt_backend *b, ffn, binding_limit)
{
    ffnrt_context *ctx = test_context_with_limits(*b, "max_bindings=4");
    if (!ctx)
        return;
    ffnrt_ffn_kind D = FFNRT_FFN_DENSE, G = FFNRT_FFN_GATED;
    ffn_case cases[] = {
        {*b, G, FFNRT_SWIGLU, FFNRT_DTYPE_F32, 32, 48, 9, 0, 0, 0, FFNRT_MATMUL_AUTO},
        {*b, G, FFNRT_GEGLU, FFNRT_DTYPE_F16, 32, 48, 1, 1, 1, 0, FFNRT_MATMUL_AUTO},
        {*b, D, FFNRT_ACT_GELU, FFNRT_DTYPE_F32, 33, 40, 5, 1, 0, 0, FFNRT_MATMUL_AUTO},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(ctx, &cases[i]);
    for (int bias = 0; bias < 2; bias++) {
        ffnrt_ffn_desc d = FFNRT_FFN_DESC_INIT(G, 32, 48);
        d.bias = bias;
        d.path = FFNRT_FFN_PATH_FUSED;
        ffnrt_plan *plan = NULL;
        cr_assert_eq(ffnrt_ffn_plan(ctx, &d, 9, &plan), FFNRT_OK, "%s", ffnrt_last_error_message());
        const char *text = ffnrt_plan_text(plan);
        if (bias)
            cr_expect(strstr(text, "binds 6 storage buffers and the device allows 4 (max_bindings) (fused, asked by "
                                   "desc.path, cannot run)"),
                      "%s", text);
        else
            cr_expect((strstr(text, "no bias bindings (max_bindings)") || strstr(text, "no bias (compiled in)")) &&
                          strstr(text, "because forced by desc.path"),
                      "%s", text);
        ffnrt_plan_destroy(plan);
    }
    test_context_done(ctx);
}

/* Both families of product kernels on every device, forced with
 * FFNRT_GEMM_KERNEL (read when a layer is created): the register-blocked
 * one (CPU devices' default) and the shared-memory tiled and lane-reduced
 * ones (GPUs'). K a multiple of 4 takes the vector loads (fp32) or paired
 * word loads (16-bit), odd K the scalar ones; tokens past 16 cover several
 * row blocks; a lowered buffer range splits aligned weights over
 * dispatches; large register blocks stage their outputs in shared memory
 * on both devices. */
typedef struct kernel_group {
    ffnrt_backend backend;
    int blocked;
} kernel_group;

ParameterizedTestParameters(ffn, kernels)
{
    static kernel_group groups[TEST_BACKENDS * 2];
    for (int b = 0; b < TEST_BACKENDS; b++)
        for (int k = 0; k < 2; k++)
            groups[b * 2 + k] = (kernel_group){test_backends[b], k};
    return cr_make_param_array(kernel_group, groups, TEST_BACKENDS * 2);
}

ParameterizedTest(kernel_group *g, ffn, kernels)
{
    cr_assert_eq(setenv("FFNRT_GEMM_KERNEL", g->blocked ? "blocked" : "tiled", 1), 0);
    ffnrt_ffn_kind D = FFNRT_FFN_DENSE, G = FFNRT_FFN_GATED;
    ffnrt_backend b = g->backend;
    ffn_case cases[] = {
        {b, D, FFNRT_ACT_GELU, FFNRT_DTYPE_F32, 64, 128, 1, 1, 0, 0, FFNRT_MATMUL_AUTO},
        {b, G, FFNRT_SWIGLU, FFNRT_DTYPE_F32, 64, 96, 37, 1, 1, 0, FFNRT_MATMUL_AUTO},
        {b, G, FFNRT_GEGLU, FFNRT_DTYPE_F32, 32, 44, 4, 0, 0, 1, FFNRT_MATMUL_AUTO},
        {b, D, FFNRT_ACT_SILU, FFNRT_DTYPE_F32, 67, 131, 5, 0, 0, 0, FFNRT_MATMUL_AUTO},
        {b, D, FFNRT_ACT_RELU, FFNRT_DTYPE_F32, 40, 36, 19, 1, 0, 0, FFNRT_MATMUL_TILED},
        {b, G, FFNRT_SWIGLU, FFNRT_DTYPE_F16, 32, 48, 20, 1, 1, 0, FFNRT_MATMUL_AUTO},
        {b, G, FFNRT_REGLU, FFNRT_DTYPE_BF16, 13, 27, 3, 1, 0, 1, FFNRT_MATMUL_AUTO},
    };
    run_cases(cases, sizeof cases / sizeof cases[0], NULL);
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.max_buffer_range = 65536;
    o.max_workgroup_count = 16;
    o.max_workgroup_size = 32;
    ffn_case limited[] = {
        {b, G, FFNRT_SWIGLU, FFNRT_DTYPE_F32, 76, 300, 1, 1, 1, 1, FFNRT_MATMUL_AUTO},
        {b, D, FFNRT_ACT_GELU, FFNRT_DTYPE_F32, 76, 300, 33, 1, 0, 0, FFNRT_MATMUL_AUTO},
    };
    run_cases(limited, sizeof limited / sizeof limited[0], &o);
    /* Register blocks of more than 32 outputs a work-item stage their sums
     * in shared memory (LARGE_BLOCK: lavapipe's own 16 x 16 and 16 x 8;
     * PoCL's are 4 x 6 at most, so forced here): dense and gated, with and
     * without a K % 4 tail, 16-bit words, and the plan says so. */
    if (g->blocked) {
        cr_assert_eq(setenv("FFNRT_GEMM_BLOCK", "8,8,4,2", 1), 0);
        ffn_case staged[] = {
            {b, D, FFNRT_ACT_GELU, FFNRT_DTYPE_F32, 67, 131, 19, 1, 0, 0, FFNRT_MATMUL_AUTO},
            {b, G, FFNRT_SWIGLU, FFNRT_DTYPE_F32, 64, 96, 37, 0, 1, 0, FFNRT_MATMUL_AUTO},
            {b, G, FFNRT_GEGLU, FFNRT_DTYPE_F16, 33, 48, 20, 1, 0, 0, FFNRT_MATMUL_AUTO},
        };
        run_cases(staged, sizeof staged / sizeof staged[0], NULL);
        ffnrt_context *ctx = test_context(b, NULL);
        if (ctx) {
            ffnrt_ffn_desc d = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, 64, 96);
            ffnrt_plan *plan = NULL;
            cr_assert_eq(ffnrt_ffn_plan(ctx, &d, 37, &plan), FFNRT_OK, "%s", ffnrt_last_error_message());
            cr_expect(strstr(ffnrt_plan_text(plan), "outputs staged in shared memory") != NULL, "%s",
                      ffnrt_plan_text(plan));
            ffnrt_plan_destroy(plan);
            test_context_done(ctx);
        }
        cr_assert_eq(unsetenv("FFNRT_GEMM_BLOCK"), 0);
    }
    /* Two work-items a group: PoCL 3.1's compiler aborted the process on
     * the tiled kernel's 2-item groups; the quirk table steers PoCL to 1. */
    if (!g->blocked) {
        ffnrt_context_options two = FFNRT_CONTEXT_OPTIONS_INIT;
        two.max_workgroup_size = 2;
        ffn_case tiny[] = {{b, G, FFNRT_SWIGLU, FFNRT_DTYPE_F32, 32, 48, 9, 1, 0, 0, FFNRT_MATMUL_TILED}};
        run_cases(tiny, 1, &two);
    }
}

/* The matrix-vector kernel is compiled for a power of two of tokens a
 * dispatch: 3 tokens run the 4-token kernel (the row past the count
 * skipped), 5 to 8 the 8-token one, so an app whose decode batch varies
 * builds a kernel a class, not a count. Each count is checked against the
 * reference on both paths (run_case); then a fused layer alone, in a
 * context of its own, counts the kernels each new count builds. */
BACKEND_PARAMETERS(ffn, matvec_token_classes)

ParameterizedTest(ffnrt_backend *b, ffn, matvec_token_classes)
{
    static const int tokens[] = {3, 4, 5, 7, 8};
    static const int builds[] = {1, 0, 1, 0, 0}; /* new kernels expected at each count */
    ffnrt_context *ctx = test_context(*b, NULL);
    if (!ctx)
        return;
    for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++) {
        ffn_case c = {*b, FFNRT_FFN_GATED, FFNRT_SWIGLU, FFNRT_DTYPE_F32, 32, 48, tokens[i], 1, 0, 0,
                      FFNRT_MATMUL_MATVEC};
        run_case(ctx, &c);
    }
    test_context_done(ctx);

    ctx = test_context(*b, NULL);
    cr_assert(ctx, "%s", ffnrt_last_error_message());
    ffn_case c = {*b, FFNRT_FFN_GATED, FFNRT_SWIGLU, FFNRT_DTYPE_F32, 32, 48, 8, 0, 0, 0, FFNRT_MATMUL_MATVEC};
    ffn_data f = make_data(&c);
    ffnrt_ffn_weights w = {0};
    w.w_gate = f.a[W_GATE].stored, w.w_value = f.a[W_VALUE].stored, w.w_out = f.a[W_OUT].stored;
    ffnrt_ffn_desc desc = case_desc(&c, FFNRT_FFN_PATH_FUSED);
    ffnrt_ffn *layer = NULL;
    cr_assert_eq(ffnrt_ffn_create(ctx, &desc, &w, &layer), FFNRT_OK, "%s", ffnrt_last_error_message());
    uint64_t built = 0;
    for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++) {
        int64_t shape[2] = {tokens[i], c.d_model};
        ffnrt_tensor *x = NULL, *y = NULL;
        cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &x), FFNRT_OK);
        cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &y), FFNRT_OK);
        cr_assert_eq(ffnrt_tensor_write(x, f.a[X].stored, ffnrt_tensor_bytes(x)), FFNRT_OK);
        cr_assert_eq(ffnrt_ffn_forward(layer, x, y), FFNRT_OK, "%s", ffnrt_last_error_message());
        ffnrt_kernel_stats k;
        cr_assert_eq(ffnrt_context_kernel_stats(ctx, &k), FFNRT_OK);
        if (i > 0)
            cr_expect(builds[i] ? k.built > built : k.built == built,
                      "%s: %d tokens built %llu kernels after %d tokens' %llu (expected %s)", ffnrt_backend_name(*b),
                      tokens[i], (unsigned long long)k.built, tokens[i - 1], (unsigned long long)built,
                      builds[i] ? "more" : "none new");
        built = k.built;
        ffnrt_tensor_destroy(x);
        ffnrt_tensor_destroy(y);
    }
    ffnrt_ffn_destroy(layer);
    free_data(&f);
    test_context_done(ctx);
}

/* ----------------------------------------------------------- accounting */

Test(ffn, accounting)
{
    /* The seed's example: d = 6, m = 12 dense and g = 8 gated both hold 144 weights. */
    cr_assert_eq(ffnrt_ffn_gated_hidden(12, 1), 8);
    cr_assert_eq(ffnrt_ffn_gated_hidden(4 * 4096, 256), 11008);
    cr_assert_eq(ffnrt_ffn_gated_hidden(0, 256), 0);
    cr_assert_eq(ffnrt_ffn_gated_hidden(12, 0), 0);
    ffnrt_ffn_desc dense = FFNRT_FFN_DESC_INIT(FFNRT_FFN_DENSE, 6, 12);
    ffnrt_ffn_desc gated = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, 6, 8);
    ffnrt_ffn_cost cd, cg, cu;
    cr_assert_eq(ffnrt_ffn_cost_of(&dense, 1, FFNRT_FFN_PATH_FUSED, &cd), FFNRT_OK);
    cr_assert_eq(ffnrt_ffn_cost_of(&gated, 1, FFNRT_FFN_PATH_FUSED, &cg), FFNRT_OK);
    cr_assert_eq(cd.parameters, 144);
    cr_assert_eq(cg.parameters, 144);
    cr_assert_eq(cd.weight_bytes, 144 * 4);
    /* 2 flops a weight a token, plus the activation (and gating) per hidden unit. */
    cr_assert_eq(cd.flops, 2 * 144 + 12);
    cr_assert_eq(cg.flops, 2 * 144 + 2 * 8);
    /* Fused: weights + x + y + h written and read once. */
    cr_assert_eq(cd.bytes_moved, 144 * 4 + 2 * 6 * 4 + 2 * 12 * 4);
    cr_assert_eq(cd.peak_bytes, 144 * 4 + 2 * 6 * 4 + 12 * 4);
    cr_assert_eq(cd.kernels, 2);
    /* Unfused gated: more traffic, more memory, more launches. */
    gated.bias = 1;
    cr_assert_eq(ffnrt_ffn_cost_of(&gated, 64, FFNRT_FFN_PATH_FUSED, &cg), FFNRT_OK);
    cr_assert_eq(ffnrt_ffn_cost_of(&gated, 64, FFNRT_FFN_PATH_UNFUSED, &cu), FFNRT_OK);
    cr_assert_eq(cg.parameters, 144 + 2 * 8 + 6);
    cr_assert_eq(cu.flops, cg.flops);
    cr_assert_gt(cu.bytes_moved, cg.bytes_moved);
    cr_assert_eq(cu.peak_bytes, cg.peak_bytes + 2 * 64 * 8 * 4);
    cr_assert_eq(cu.kernels, 7);
    gated.dtype = FFNRT_DTYPE_F16;
    cr_assert_eq(ffnrt_ffn_cost_of(&gated, 64, FFNRT_FFN_PATH_FUSED, &cu), FFNRT_OK);
    cr_assert_eq(cu.weight_bytes, cg.weight_bytes / 2);
    cr_assert_eq(ffnrt_ffn_cost_of(&gated, -1, FFNRT_FFN_PATH_FUSED, &cu), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(ffnrt_ffn_cost_of(NULL, 1, FFNRT_FFN_PATH_FUSED, &cu), FFNRT_ERROR_INVALID_ARGUMENT);
}

/* ------------------------------------------------------------ bad input */

#define EXPECT_FAIL(call, status, needle)                                                              \
    do {                                                                                               \
        ffnrt_status st_ = (call);                                                                     \
        cr_expect_eq(st_, status, "%s gave %s: %s", #call, ffnrt_status_string(st_),                   \
                     ffnrt_last_error_message());                                                      \
        cr_expect(strstr(ffnrt_last_error_message(), needle) != NULL, "%s: message \"%s\" lacks \"%s\"", \
                  #call, ffnrt_last_error_message(), needle);                                          \
    } while (0)

ParameterizedTestParameters(ffn, bad_input)
{
    static ffnrt_backend backends[TEST_BACKENDS];
    memcpy(backends, test_backends, sizeof backends);
    return cr_make_param_array(ffnrt_backend, backends, TEST_BACKENDS);
}

ParameterizedTest(ffnrt_backend *b, ffn, bad_input)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    if (!ctx)
        return;
    enum { D = 4, H = 6 };
    float w_in[H * D] = {0}, w_out[D * H] = {0}, b_in[H] = {0};
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_DENSE, D, H);
    ffnrt_ffn_weights w = {0};
    w.w_in = w_in, w.w_out = w_out;
    ffnrt_ffn *layer = NULL;

    EXPECT_FAIL(ffnrt_ffn_create(NULL, &desc, &w, &layer), FFNRT_ERROR_INVALID_ARGUMENT, "ctx is NULL");
    EXPECT_FAIL(ffnrt_ffn_create(ctx, NULL, &w, &layer), FFNRT_ERROR_INVALID_ARGUMENT, "desc is NULL");
    EXPECT_FAIL(ffnrt_ffn_create(ctx, &desc, NULL, &layer), FFNRT_ERROR_INVALID_ARGUMENT, "weights is NULL");
    ffnrt_ffn_weights missing = w;
    missing.w_out = NULL;
    EXPECT_FAIL(ffnrt_ffn_create(ctx, &desc, &missing, &layer), FFNRT_ERROR_INVALID_ARGUMENT, "w_out is NULL");
    ffnrt_ffn_weights with_bias = w;
    with_bias.b_in = b_in;
    EXPECT_FAIL(ffnrt_ffn_create(ctx, &desc, &with_bias, &layer), FFNRT_ERROR_INVALID_ARGUMENT, "desc.bias is 0");
    desc.bias = 1;
    EXPECT_FAIL(ffnrt_ffn_create(ctx, &desc, &w, &layer), FFNRT_ERROR_INVALID_ARGUMENT, "b_in is NULL");
    desc.bias = 0;
    ffnrt_ffn_weights gate_given = w;
    gate_given.w_gate = w_in;
    EXPECT_FAIL(ffnrt_ffn_create(ctx, &desc, &gate_given, &layer), FFNRT_ERROR_INVALID_ARGUMENT, "w_gate");
    ffnrt_ffn_desc bad = desc;
    bad.activation.kind = FFNRT_ACT_PRELU;
    EXPECT_FAIL(ffnrt_ffn_create(ctx, &bad, &w, &layer), FFNRT_ERROR_UNSUPPORTED, "PReLU");
    bad = desc;
    bad.activation.kind = (ffnrt_activation)99;
    EXPECT_FAIL(ffnrt_ffn_create(ctx, &bad, &w, &layer), FFNRT_ERROR_INVALID_ARGUMENT, "not an activation");
    bad = desc;
    bad.kind = FFNRT_FFN_GATED;
    bad.glu.kind = (ffnrt_glu)-1;
    EXPECT_FAIL(ffnrt_ffn_create(ctx, &bad, &w, &layer), FFNRT_ERROR_INVALID_ARGUMENT, "not a GLU kind");
    bad = desc;
    bad.d_model = 0;
    EXPECT_FAIL(ffnrt_ffn_create(ctx, &bad, &w, &layer), FFNRT_ERROR_INVALID_ARGUMENT, "d_model");
    bad = desc;
    bad.kind = FFNRT_FFN_GATED;
    ffnrt_ffn_weights both = {0};
    both.w_gate = w_in, both.w_value = w_in, both.w_gate_value = w_in, both.w_out = w_out;
    EXPECT_FAIL(ffnrt_ffn_create(ctx, &bad, &both, &layer), FFNRT_ERROR_INVALID_ARGUMENT, "not both");
    cr_expect_null(layer);

    /* Device tensors: wrong shape, wrong dtype, another layout. */
    int64_t hd[2] = {H, D}, dh[2] = {D, H}, dd[2] = {D, D};
    ffnrt_tensor *t_in, *t_out, *t_sq, *t_half;
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, hd, &t_in), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, dh, &t_out), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, dd, &t_sq), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F16, 2, dh, &t_half), FFNRT_OK);
    ffnrt_ffn_weight_tensors tw = {0};
    tw.w_in = t_in, tw.w_out = t_sq;
    EXPECT_FAIL(ffnrt_ffn_create_from_tensors(ctx, &desc, &tw, &layer), FFNRT_ERROR_SHAPE_MISMATCH, "w_out is [4, 4]");
    tw.w_out = t_half;
    EXPECT_FAIL(ffnrt_ffn_create_from_tensors(ctx, &desc, &tw, &layer), FFNRT_ERROR_DTYPE_MISMATCH, "f16");
    tw.w_out = t_in; /* [H, D] where [D, H] is expected */
    EXPECT_FAIL(ffnrt_ffn_create_from_tensors(ctx, &desc, &tw, &layer), FFNRT_ERROR_SHAPE_MISMATCH, "w_out");
    tw.w_out = t_out;
    cr_assert_eq(ffnrt_ffn_create_from_tensors(ctx, &desc, &tw, &layer), FFNRT_OK, "%s", ffnrt_last_error_message());

    /* Forward: x's width, dtype, aliasing, NULLs. */
    int64_t x_shape[2] = {3, D}, wrong_shape[2] = {3, H};
    ffnrt_tensor *x, *y, *x_wide, *x_half;
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, x_shape, &x), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, x_shape, &y), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, wrong_shape, &x_wide), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F16, 2, x_shape, &x_half), FFNRT_OK);
    EXPECT_FAIL(ffnrt_ffn_forward(NULL, x, y), FFNRT_ERROR_INVALID_ARGUMENT, "layer is NULL");
    EXPECT_FAIL(ffnrt_ffn_forward(layer, NULL, y), FFNRT_ERROR_INVALID_ARGUMENT, "x is NULL");
    EXPECT_FAIL(ffnrt_ffn_forward(layer, x, x_wide), FFNRT_ERROR_SHAPE_MISMATCH, "differ in shape");
    EXPECT_FAIL(ffnrt_ffn_forward(layer, x_wide, x_wide), FFNRT_ERROR_SHAPE_MISMATCH, "d_model");
    EXPECT_FAIL(ffnrt_ffn_forward(layer, x_half, x_half), FFNRT_ERROR_DTYPE_MISMATCH, "the layer is f32");
    EXPECT_FAIL(ffnrt_ffn_forward(layer, x, x), FFNRT_ERROR_INVALID_ARGUMENT, "y must not be x");
    cr_expect_eq(ffnrt_ffn_forward(layer, x, y), FFNRT_OK, "%s", ffnrt_last_error_message());
    ffnrt_ffn_destroy(layer);
    ffnrt_ffn_destroy(NULL);
    ffnrt_tensor_destroy(x);
    ffnrt_tensor_destroy(y);
    ffnrt_tensor_destroy(x_wide);
    ffnrt_tensor_destroy(x_half);
    ffnrt_tensor_destroy(t_in);
    ffnrt_tensor_destroy(t_out);
    ffnrt_tensor_destroy(t_sq);
    ffnrt_tensor_destroy(t_half);
    test_context_done(ctx);
}

/* The precision policy applies to every path alike, and the plan says what
 * each kernel computes in. Each layer (dense GELU, gated SwiGLU) under each
 * policy, on both paths, is built so that its result shows the arithmetic:
 * x holds fp16 values, W_gate = I and W_value a permutation (so g and v are
 * those values, exactly), W_out = I (so y is the hidden activation as
 * stored). In fp32 arithmetic each y is the exact result rounded once to
 * the storage type, but for the few within a few fp32 ULP of a rounding
 * boundary; fp16 arithmetic rounds phi's own product and the gating
 * product in fp16, and a large share of the results differ. The plan's
 * claim for the kernel that applies the activation must match. */
typedef struct policy_case {
    ffnrt_backend backend;
    ffnrt_precision policy;
} policy_case;

ParameterizedTestParameters(ffn, precision_policy_on_every_path)
{
    static policy_case cases[TEST_BACKENDS * 3];
    for (int b = 0; b < TEST_BACKENDS; b++)
        for (int p = 0; p < 3; p++)
            cases[b * 3 + p] = (policy_case){test_backends[b], (ffnrt_precision)p};
    return cr_make_param_array(policy_case, cases, TEST_BACKENDS * 3);
}

ParameterizedTest(policy_case *pc, ffn, precision_policy_on_every_path)
{
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.precision = pc->policy;
    ffnrt_context *ctx = test_context(pc->backend, &o);
    ffnrt_dtype dtype;
    int policy_fp16;
    cr_assert_eq(ffnrt_context_precision(ctx, &dtype, &policy_fp16), FFNRT_OK);
    enum { N = 64, T = 16 };
    static float eye[N * N], perm[N * N], xs[T * N];
    memset(eye, 0, sizeof eye);
    memset(perm, 0, sizeof perm);
    for (int i = 0; i < N; i++) {
        eye[i * N + i] = 1.0f;
        perm[i * N + (N - 1 - i)] = 1.0f;
    }
    for (int i = 0; i < T * N; i++) /* fp16 values in [-4, 4), none tiny */
        xs[i] = (float)(((i * 389) % 1021) - 510) / 128.0f + (((i * 389) % 1021) == 510 ? 0.5f : 0.0f);
    size_t es = ffnrt_dtype_size(dtype);
    uint16_t eye16[N * N], perm16[N * N], x16[T * N], y16[T * N];
    ffnrt_f32_to_f16_array(eye, eye16, N * N);
    ffnrt_f32_to_f16_array(perm, perm16, N * N);
    ffnrt_f32_to_f16_array(xs, x16, T * N);
    const void *w_eye = es == 4 ? (const void *)eye : eye16, *w_perm = es == 4 ? (const void *)perm : perm16;
    for (int tokens = 3; tokens <= T; tokens += T - 3) { /* decode (matvec on GPUs) and prefill */
    int64_t shape[2] = {tokens, N};
    ffnrt_tensor *x, *y;
    cr_assert_eq(ffnrt_tensor_create(ctx, dtype, 2, shape, &x), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, dtype, 2, shape, &y), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(x, es == 4 ? (const void *)xs : x16, (size_t)tokens * N * es), FFNRT_OK);
    for (int gated = 0; gated < 2; gated++)
        for (int unfused = 0; unfused < 2; unfused++) {
            ffnrt_ffn_desc d = FFNRT_FFN_DESC_INIT(gated ? FFNRT_FFN_GATED : FFNRT_FFN_DENSE, N, N);
            d.dtype = dtype;
            d.path = unfused ? FFNRT_FFN_PATH_UNFUSED : FFNRT_FFN_PATH_FUSED;
            ffnrt_ffn_weights w = {0};
            if (gated)
                w.w_gate = w_eye, w.w_value = w_perm;
            else
                w.w_in = w_eye;
            w.w_out = w_eye;
            ffnrt_ffn *layer;
            cr_assert_eq(ffnrt_ffn_create(ctx, &d, &w, &layer), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
            cr_assert_eq(ffnrt_ffn_forward(layer, x, y), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
            ffnrt_plan *plan;
            cr_assert_eq(ffnrt_ffn_plan(ctx, &d, tokens, &plan), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
            const char *claim = ffnrt_plan_choice(plan, "ffn.arithmetic");
            cr_assert_not_null(claim, "%s", ffnrt_plan_text(plan));
            int fp16 = strcmp(claim, "fp16") == 0;
            cr_expect_eq(fp16, policy_fp16, "the layer follows the policy: %s", ffnrt_plan_text(plan));
            /* The kernel that applies the activation says the same. */
            const char *kernel = unfused ? (gated ? "ffn.gating" : "ffn.activation") : (gated ? "ffn.gate_value" : "ffn.up");
            const char *what, *choice, *reason, *said = NULL;
            for (size_t i = 0; i < ffnrt_plan_size(plan); i++)
                if (ffnrt_plan_item(plan, i, &what, &choice, &reason) == FFNRT_OK && strcmp(what, kernel) == 0)
                    said = unfused ? reason : choice;
            cr_assert_not_null(said, "no %s in\n%s", kernel, ffnrt_plan_text(plan));
            cr_expect(strstr(said, fp16 ? "fp16" : "fp32") != NULL && strstr(said, fp16 ? "fp32 e" : "fp16") == NULL,
                      "%s says \"%s\", the layer %s", kernel, said, claim);
            /* The numerics. */
            float ys[T * N];
            if (es == 4)
                cr_assert_eq(ffnrt_tensor_read(y, ys, (size_t)tokens * N * 4), FFNRT_OK);
            else {
                cr_assert_eq(ffnrt_tensor_read(y, y16, (size_t)tokens * N * 2), FFNRT_OK);
                ffnrt_f16_to_f32_array(y16, ys, (size_t)tokens * N);
            }
            int differ = 0;
            double worst = 0;
            for (int t = 0; t < tokens; t++)
                for (int j = 0; j < N; j++) {
                    double g = xs[t * N + j], v = xs[t * N + (N - 1 - j)];
                    double want = gated ? ref_swish(g, 1.0) * v : ref_gelu(g);
                    float rounded = es == 4 ? (float)want : ffnrt_f16_to_f32(ffnrt_f32_to_f16((float)want));
                    differ += ys[t * N + j] != rounded;
                    double rel = fabs(ys[t * N + j] - want) / (fabs(want) + 1e-30);
                    worst = rel > worst ? rel : worst;
                }
            if (es == 4) {
                cr_expect_lt(worst, 1e-6, "fp32 storage and arithmetic: relative error %g", worst);
            } else if (fp16) {
                cr_expect_gt(differ, tokens * N / 10, "the plan says fp16 arithmetic, but only %d of %d results differ "
                             "from the exact ones rounded once (as fp32 arithmetic's would)", differ, tokens * N);
                cr_expect_lt(worst, 4e-3, "fp16 arithmetic, relative error %g", worst);
            } else {
                cr_expect_lt(differ, tokens * N / 50 + 1, "the plan says fp32 arithmetic, but %d of %d results differ from "
                             "the exact ones rounded once", differ, tokens * N);
            }
            ffnrt_plan_destroy(plan);
            ffnrt_ffn_destroy(layer);
        }
    ffnrt_tensor_destroy(x);
    ffnrt_tensor_destroy(y);
    }
    test_context_done(ctx);
}

/* ffnrt_rms_norm of rows x n elements (the last row zero: eps alone keeps
 * it finite), in place or apart, against a double reference of
 * llama.cpp's formula: normwise within 4 (sqrt(n) + 4) u in fp32 (the sum
 * of squares' rounding), 4 u16 in 16-bit storage (the output's). */
static void check_rms_norm(ffnrt_context *ctx, ffnrt_backend b, ffnrt_dtype dt, int64_t rows, int64_t n, int in_place,
                           uint32_t seed)
{
    const float eps = 1e-5f;
    int64_t shape[2] = {rows, n};
    rng_state = seed;
    host_array x = make_array(dt, (size_t)(rows * n), 3.0f), w = make_array(dt, (size_t)n, 1.5f);
    for (int64_t i = 0; i < n; i++)
        if (dt == FFNRT_DTYPE_F32)
            ((float *)x.stored)[(rows - 1) * n + i] = x.values[(rows - 1) * n + i] = 0.0f;
        else
            ((uint16_t *)x.stored)[(rows - 1) * n + i] = 0, x.values[(rows - 1) * n + i] = 0.0f;
    double *ref = malloc((size_t)(rows * n) * sizeof *ref);
    cr_assert(ref);
    for (int64_t r = 0; r < rows; r++) {
        double s = 0;
        for (int64_t i = 0; i < n; i++)
            s += (double)x.values[r * n + i] * x.values[r * n + i];
        double scale = 1.0 / sqrt(s / (double)n + eps);
        for (int64_t i = 0; i < n; i++)
            ref[r * n + i] = x.values[r * n + i] * scale * w.values[i];
    }
    ffnrt_tensor *tx = NULL, *tw = NULL, *ty = NULL;
    cr_assert_eq(ffnrt_tensor_create(ctx, dt, 2, shape, &tx), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, dt, 1, &n, &tw), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(tx, x.stored, ffnrt_tensor_bytes(tx)), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(tw, w.stored, ffnrt_tensor_bytes(tw)), FFNRT_OK);
    if (in_place)
        ty = tx;
    else
        cr_assert_eq(ffnrt_tensor_create(ctx, dt, 2, shape, &ty), FFNRT_OK);
    cr_assert_eq(ffnrt_rms_norm(ctx, tx, tw, eps, ty), FFNRT_OK, "%s", ffnrt_last_error_message());
    float *out = malloc((size_t)(rows * n) * sizeof *out);
    cr_assert(out);
    read_output(ty, dt, (size_t)(rows * n), out);
    double u = dt == FFNRT_DTYPE_F32 ? 0x1p-24 : dt == FFNRT_DTYPE_F16 ? 0x1p-11 : 0x1p-8;
    double bound = dt == FFNRT_DTYPE_F32 ? 4 * (sqrt((double)n) + 4) * u : 4 * u;
    double err = test_rel_error(out, ref, (size_t)(rows * n));
    cr_expect_leq(err, bound, "%s %s %lld x %lld: rms_norm error %.3g > %.3g", ffnrt_backend_name(b),
                  ffnrt_dtype_name(dt), (long long)rows, (long long)n, err, bound);
    for (int64_t i = 0; i < n; i++)
        cr_expect_eq(out[(rows - 1) * n + i], 0.0f, "the zero row stays zero");
    free(out);
    free(ref);
    if (ty != tx)
        ffnrt_tensor_destroy(ty);
    ffnrt_tensor_destroy(tx);
    ffnrt_tensor_destroy(tw);
    free_array(&x);
    free_array(&w);
}

/* ffnrt_rms_norm, the stack's pre-norm (check_rms_norm): rows of odd and
 * even length, in place and apart, fp32 and fp16 storage; under a 2 KiB
 * buffer range, rows in blocks (a row past the range refused). Bad input
 * gets its error. */
BACKEND_PARAMETERS(ffn, rms_norm)

ParameterizedTest(ffnrt_backend *b, ffn, rms_norm)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    if (!ctx)
        return;
    const struct {
        ffnrt_dtype dtype;
        int64_t rows, n;
        int in_place;
    } cases[] = {{FFNRT_DTYPE_F32, 5, 97, 0}, {FFNRT_DTYPE_F32, 3, 576, 1}, {FFNRT_DTYPE_F16, 4, 64, 0},
                 {FFNRT_DTYPE_BF16, 2, 130, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        check_rms_norm(ctx, *b, cases[c].dtype, cases[c].rows, cases[c].n, cases[c].in_place, 77u + (uint32_t)c);

    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.max_buffer_range = 2048;
    ffnrt_context *small = test_context(*b, &o);
    cr_assert(small, "%s", ffnrt_last_error_message());
    check_rms_norm(small, *b, FFNRT_DTYPE_F32, 11, 97, 0, 91u); /* 4.3 KB: blocks of 4-5 rows */
    check_rms_norm(small, *b, FFNRT_DTYPE_F16, 23, 130, 1, 92u);
    int64_t wide_shape[2] = {2, 600}, n600 = 600;
    ffnrt_tensor *wide = NULL, *wide_w = NULL;
    cr_assert_eq(ffnrt_tensor_create(small, FFNRT_DTYPE_F32, 2, wide_shape, &wide), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(small, FFNRT_DTYPE_F32, 1, &n600, &wide_w), FFNRT_OK);
    cr_expect_eq(ffnrt_rms_norm(small, wide, wide_w, 1e-5f, wide), FFNRT_ERROR_LIMIT_EXCEEDED);
    cr_expect(strstr(ffnrt_last_error_message(), "a row of 600 x elements passes the device's buffer range") != NULL,
              "%s", ffnrt_last_error_message());
    ffnrt_tensor_destroy(wide);
    ffnrt_tensor_destroy(wide_w);
    test_context_done(small);

    /* Bad input. */
    int64_t shape[2] = {2, 7}, n7 = 7, n6 = 6, shape16[2] = {2, 7};
    ffnrt_tensor *x = NULL, *y = NULL, *w = NULL, *w6 = NULL, *x16 = NULL, *w16 = NULL;
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &x), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &y), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &n7, &w), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &n6, &w6), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F16, 2, shape16, &x16), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F16, 1, &n7, &w16), FFNRT_OK);
    cr_expect_eq(ffnrt_rms_norm(NULL, x, w, 1e-5f, y), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_expect_eq(ffnrt_rms_norm(ctx, x, NULL, 1e-5f, y), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_expect_eq(ffnrt_rms_norm(ctx, x, w6, 1e-5f, y), FFNRT_ERROR_SHAPE_MISMATCH);
    cr_expect(strstr(ffnrt_last_error_message(), "weight has 6 elements") != NULL, "%s", ffnrt_last_error_message());
    cr_expect_eq(ffnrt_rms_norm(ctx, x, w16, 1e-5f, y), FFNRT_ERROR_DTYPE_MISMATCH);
    cr_expect_eq(ffnrt_rms_norm(ctx, x, w, NAN, y), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_expect_eq(ffnrt_rms_norm(ctx, x, w, -1.0f, y), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_expect_eq(ffnrt_rms_norm(ctx, x16, w16, 1e-5f, x16), FFNRT_ERROR_UNSUPPORTED);
    cr_expect(strstr(ffnrt_last_error_message(), "even length") != NULL, "%s", ffnrt_last_error_message());
    cr_expect_eq(ffnrt_rms_norm(ctx, x, w, 1e-5f, w), FFNRT_ERROR_SHAPE_MISMATCH);
    ffnrt_tensor *tensors[] = {x, y, w, w6, x16, w16};
    for (size_t i = 0; i < 6; i++)
        ffnrt_tensor_destroy(tensors[i]);
    test_context_done(ctx);
}
