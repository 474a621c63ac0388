/* FFN layers with weights in GGUF's block formats (Q8_0, Q4_0, Q4_1, Q4_K,
 * Q6_K): every format, dense and gated, fused and unfused, on each product
 * kernel (register-blocked, matrix-vector, tiled), on both backends,
 * against a double-precision reference of the dequantized weights.
 *
 * Weights are random, quantized by ffnrt_quantize (so each matrix is
 * GGUF's bytes), and the reference dequantizes those bytes with
 * tools/reference/reference_quant.c's decoder, written from GGUF's block layouts and
 * independent of src/quant/. Dequantization is exact in both (every
 * weight is code * s + m, rounded once, as ggml's), so the error is the
 * accumulation's and the bound is test_ffn.c's for the same storage type:
 * fp32 4·(sqrt(d) + sqrt(h) + 2)·2^-24, fp16 storage 4·2^-11.
 *
 * Kernel builds cost about a second each on PoCL and Criterion runs each
 * test in its own process, so the cases are grouped by backend and product
 * kernel (forced with ffnrt_context_force), each group covering every
 * format with few distinct builds; the disk cache carries them between
 * processes. */
#include "device_fixture.h"
#include "reference_grad.h"
#include "reference_quant.h"
#include "contract.h"

#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F32_ ((ffnrt_weight_format)0)

typedef struct qcase {
    ffnrt_ffn_kind kind;
    ffnrt_weight_format f_in, f_value, f_out; /* F32_: the dtype */
    ffnrt_dtype dtype;
    int d_model, hidden, tokens;
    int bias, stacked, from_tensors;
    int x_codes; /* x exactly 8-bit codes a block of 32: q / 128 with |q| <= 127, each block's max 127 / 128 */
} qcase;

/* The error bound in force: 0, the accumulation's (bound_for); else this
 * normwise one (the integer path's). */
static double integer_path_bound;

static uint32_t rng_state;
static float uniform(float lo, float hi)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(rng_state >> 8) / 16777216.0f;
}

/* A [rows, k] matrix stored in format (or the dtype): its bytes as the
 * layer takes them, and the values the device computes with, in double. */
typedef struct qmatrix {
    void *bytes;
    size_t size;
    double *values;
} qmatrix;

static qmatrix make_matrix(ffnrt_weight_format f, ffnrt_dtype dtype, int64_t rows, int64_t k, float scale)
{
    qmatrix m = {0};
    size_t n = (size_t)(rows * k);
    float *w = malloc((n ? n : 1) * sizeof *w);
    m.values = malloc((n ? n : 1) * sizeof *m.values);
    cr_assert(w && m.values);
    for (size_t i = 0; i < n; i++)
        w[i] = uniform(-scale, scale);
    ffnrt_weight_format stored = f ? f : (ffnrt_weight_format)dtype;
    cr_assert_eq(ffnrt_weight_bytes(stored, rows, k, &m.size), FFNRT_OK, "%s", ffnrt_last_error_message());
    m.bytes = malloc(m.size ? m.size : 1);
    cr_assert(m.bytes);
    cr_assert_eq(ffnrt_quantize(stored, w, rows, k, m.bytes, m.size), FFNRT_OK, "%s", ffnrt_last_error_message());
    size_t row_bytes = m.size / (size_t)(rows ? rows : 1);
    for (int64_t r = 0; r < rows; r++)
        cr_assert_eq(ref_dequantize_row(stored, (const uint8_t *)m.bytes + (size_t)r * row_bytes, k, m.values + r * k), 0);
    free(w);
    return m;
}

static void free_matrix(qmatrix *m)
{
    free(m->bytes);
    free(m->values);
}

enum { X, W_IN, B_IN, W_VALUE, B_VALUE, W_OUT, B_OUT, ARRAYS };

typedef struct qdata {
    qmatrix a[ARRAYS]; /* W_IN: w_in or the gate (stacked: gate and value, [2h, d]) */
    double *y_ref;
} qdata;

static double act(const qcase *c, double v)
{
    return c->kind == FFNRT_FFN_GATED ? ref_forward(FFNRT_ACT_SWISH, v, 0, 1.0) : ref_forward(FFNRT_ACT_GELU, v, 0, 0);
}

static qdata make_data(const qcase *c)
{
    qdata q;
    memset(&q, 0, sizeof q);
    int64_t d = c->d_model, h = c->hidden, t = c->tokens;
    int gated = c->kind == FFNRT_FFN_GATED;
    rng_state = 0x2545f491u ^ (uint32_t)(d * 131 + h * 7 + t + 1000 * c->f_in + 100 * c->f_out);
    float sd = 2.0f / sqrtf((float)d), sh = 2.0f / sqrtf((float)h);
    ffnrt_dtype dt = c->dtype;
    q.a[X] = make_matrix(F32_, dt, t, d, 1.0f);
    if (c->x_codes) {
        /* The integer path's codes of these are the values themselves:
         * max|x| = 127/128 a block, so d = 1/128 and x / d are integers. */
        float *xs = malloc((size_t)(t * d) * sizeof *xs);
        cr_assert(xs);
        for (int64_t i = 0; i < t * d; i++)
            xs[i] = i % 32 == 5 ? (i % 64 == 5 ? 127.0f : -127.0f) / 128.0f : rintf(uniform(-127.0f, 127.0f)) / 128.0f;
        cr_assert_eq(ffnrt_quantize((ffnrt_weight_format)dt, xs, t, d, q.a[X].bytes, q.a[X].size), FFNRT_OK);
        for (int64_t i = 0; i < t * d; i++)
            q.a[X].values[i] = xs[i];
        free(xs);
    }
    q.a[W_IN] = make_matrix(c->f_in, dt, gated && c->stacked ? 2 * h : h, d, sd);
    q.a[B_IN] = make_matrix(F32_, dt, 1, gated && c->stacked ? 2 * h : h, 0.5f);
    q.a[W_VALUE] = make_matrix(c->f_value, dt, gated && !c->stacked ? h : 0, d, sd);
    q.a[B_VALUE] = make_matrix(F32_, dt, 1, gated && !c->stacked ? h : 0, 0.5f);
    q.a[W_OUT] = make_matrix(c->f_out, dt, d, h, sh);
    q.a[B_OUT] = make_matrix(F32_, dt, 1, d, 0.5f);

    const double *wg = q.a[W_IN].values, *wv = c->stacked ? wg + h * d : q.a[W_VALUE].values;
    const double *bg = q.a[B_IN].values, *bv = c->stacked ? bg + h : q.a[B_VALUE].values;
    double *hid = malloc((size_t)(t * h) * sizeof *hid);
    q.y_ref = malloc((size_t)(t * d) * sizeof *q.y_ref);
    cr_assert(hid && q.y_ref);
    const double *x = q.a[X].values;
    for (int64_t i = 0; i < t; i++) {
        for (int64_t r = 0; r < h; r++) {
            double g = c->bias ? bg[r] : 0, v = c->bias && gated ? bv[r] : 0;
            for (int64_t k = 0; k < d; k++) {
                g += wg[r * d + k] * x[i * d + k];
                if (gated)
                    v += wv[r * d + k] * x[i * d + k];
            }
            hid[i * h + r] = gated ? act(c, g) * v : act(c, g);
        }
        for (int64_t o = 0; o < d; o++) {
            double s = c->bias ? q.a[B_OUT].values[o] : 0;
            for (int64_t r = 0; r < h; r++)
                s += q.a[W_OUT].values[o * h + r] * hid[i * h + r];
            q.y_ref[i * d + o] = s;
        }
    }
    free(hid);
    return q;
}

static void free_data(qdata *q)
{
    for (int i = 0; i < ARRAYS; i++)
        free_matrix(&q->a[i]);
    free(q->y_ref);
}

static ffnrt_ffn_desc case_desc(const qcase *c, ffnrt_ffn_path path)
{
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(c->kind, c->d_model, c->hidden);
    desc.dtype = c->dtype;
    desc.bias = c->bias;
    desc.path = path;
    desc.format_in = c->f_in;
    desc.format_value = c->kind == FFNRT_FFN_GATED ? (c->stacked ? c->f_in : c->f_value) : F32_;
    desc.format_out = c->f_out;
    if (c->kind == FFNRT_FFN_GATED)
        desc.glu = (ffnrt_glu_desc)FFNRT_GLU_DESC_INIT(FFNRT_SWIGLU);
    else
        desc.activation = (ffnrt_activation_desc)FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_GELU);
    return desc;
}

static double bound_for(const qcase *c)
{
    const char *scale_env = getenv("FFNRT_TEST_BOUND_SCALE");
    double scale = scale_env ? atof(scale_env) : 1.0;
    if (integer_path_bound > 0)
        return scale * integer_path_bound;
    return scale * contract_ffn_bound(c->dtype, c->d_model, c->hidden);
}

/* A device tensor of a matrix: its bytes in f16 [bytes / 2] for a block
 * format (every block is of even size), the dtype's [rows, k] else, or
 * [k] for a bias (rows 0). */
static ffnrt_tensor *device_matrix(ffnrt_context *ctx, const qmatrix *m, ffnrt_weight_format f, ffnrt_dtype dtype,
                                   int64_t rows, int64_t k)
{
    int64_t shape[2] = {f ? (int64_t)(m->size / 2) : rows ? rows : k, k};
    ffnrt_tensor *t = NULL;
    cr_assert_eq(ffnrt_tensor_create(ctx, f ? FFNRT_DTYPE_F16 : dtype, f || !rows ? 1 : 2, shape, &t), FFNRT_OK, "%s",
                 ffnrt_last_error_message());
    cr_assert_eq(ffnrt_tensor_write(t, m->bytes, m->size), FFNRT_OK, "%s", ffnrt_last_error_message());
    return t;
}

static const char *fname(ffnrt_weight_format f) { return f ? ffnrt_weight_format_name(f) : "dtype"; }

/* Runs the case on both paths (unfused only, where gate and value differ
 * in format) and checks each against the reference. */
static void run_case(ffnrt_context *ctx, const qcase *c, const char *kernel)
{
    ffnrt_device_info info;
    cr_assert_eq(ffnrt_context_get_device_info(ctx, &info), FFNRT_OK);
    qdata q = make_data(c);
    size_t n = (size_t)(c->tokens * c->d_model);
    int gated = c->kind == FFNRT_FFN_GATED;
    int64_t x_shape[2] = {c->tokens, c->d_model};
    ffnrt_tensor *x = NULL, *y = NULL;
    cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 2, x_shape, &x), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, c->dtype, 2, x_shape, &y), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(x, q.a[X].bytes, q.a[X].size), FFNRT_OK);

    ffnrt_ffn_weights hw = {0};
    ffnrt_ffn_weight_tensors tw = {0};
    ffnrt_tensor *owned[ARRAYS] = {0};
    const void *bytes[ARRAYS];
    int64_t h = c->hidden, d = c->d_model, up = gated && c->stacked ? 2 * h : h;
    /* rows (0: a bias) and k of each array, and its format */
    const int64_t rows[ARRAYS] = {0, up, 0, h, 0, d, 0}, cols[ARRAYS] = {0, d, up, d, h, h, d};
    const ffnrt_weight_format fmt[ARRAYS] = {F32_, c->f_in, F32_, c->f_value, F32_, c->f_out, F32_};
    for (int i = 0; i < ARRAYS; i++) {
        int is_bias = i == B_IN || i == B_VALUE || i == B_OUT;
        bytes[i] = (is_bias && !c->bias) || !q.a[i].size ? NULL : q.a[i].bytes;
        if (c->from_tensors && bytes[i] && i != X)
            owned[i] = device_matrix(ctx, &q.a[i], fmt[i], c->dtype, rows[i], cols[i]);
    }
    if (!gated)
        hw.w_in = bytes[W_IN], hw.b_in = bytes[B_IN], tw.w_in = owned[W_IN], tw.b_in = owned[B_IN];
    else if (c->stacked)
        hw.w_gate_value = bytes[W_IN], hw.b_gate_value = bytes[B_IN], tw.w_gate_value = owned[W_IN],
        tw.b_gate_value = owned[B_IN];
    else
        hw.w_gate = bytes[W_IN], hw.b_gate = bytes[B_IN], hw.w_value = bytes[W_VALUE], hw.b_value = bytes[B_VALUE],
        tw.w_gate = owned[W_IN], tw.b_gate = owned[B_IN], tw.w_value = owned[W_VALUE], tw.b_value = owned[B_VALUE];
    hw.w_out = bytes[W_OUT], hw.b_out = bytes[B_OUT], tw.w_out = owned[W_OUT], tw.b_out = owned[B_OUT];

    double bound = bound_for(c);
    int fusable = !gated || c->stacked || c->f_in == c->f_value;
    ffnrt_ffn *layers[2] = {NULL, NULL};
    for (int path = fusable ? 0 : 1; path < 2; path++) {
        ffnrt_ffn_desc desc = case_desc(c, path ? FFNRT_FFN_PATH_UNFUSED : FFNRT_FFN_PATH_FUSED);
        ffnrt_status st = c->from_tensors ? ffnrt_ffn_create_from_tensors(ctx, &desc, &tw, &layers[path])
                                          : ffnrt_ffn_create(ctx, &desc, &hw, &layers[path]);
        cr_assert_eq(st, FFNRT_OK, "create: %s", ffnrt_last_error_message());
    }
    /* The layers repacked the block formats' bytes: those tensors may go. */
    for (int i = W_IN; c->from_tensors && i < ARRAYS; i += 2)
        if (owned[i] && fmt[i]) {
            ffnrt_tensor_destroy(owned[i]);
            owned[i] = NULL;
        }
    for (int path = fusable ? 0 : 1; path < 2; path++) {
        ffnrt_ffn_desc desc = case_desc(c, path ? FFNRT_FFN_PATH_UNFUSED : FFNRT_FFN_PATH_FUSED);
        ffnrt_ffn *layer = layers[path];
        cr_assert_eq(ffnrt_ffn_forward(layer, x, y), FFNRT_OK, "forward: %s", ffnrt_last_error_message());
        float *out = malloc(n * sizeof *out);
        cr_assert(out);
        if (c->dtype == FFNRT_DTYPE_F32) {
            cr_assert_eq(ffnrt_tensor_read(y, out, n * 4), FFNRT_OK);
        } else {
            uint16_t *bits = malloc(n * 2);
            cr_assert(bits);
            cr_assert_eq(ffnrt_tensor_read(y, bits, n * 2), FFNRT_OK);
            ffnrt_f16_to_f32_array(bits, out, n);
            free(bits);
        }
        double err = test_rel_error(out, q.y_ref, n);
        cr_expect_leq(err, bound, "%s %s %s %s/%s/%s %s d=%d h=%d t=%d bias=%d stacked=%d tensors=%d %s: error %.3g > %.3g",
                      ffnrt_backend_name(info.backend), kernel, gated ? "gated" : "dense", fname(c->f_in),
                      fname(c->f_value), fname(c->f_out), ffnrt_dtype_name(c->dtype), c->d_model, c->hidden,
                      c->tokens, c->bias, c->stacked, c->from_tensors, path ? "unfused" : "fused", err, bound);
        free(out);
        /* The plan says what runs: the formats, and the kernel dequantizing them. */
        ffnrt_plan *plan = NULL;
        cr_assert_eq(ffnrt_ffn_plan(ctx, &desc, c->tokens, &plan), FFNRT_OK, "%s", ffnrt_last_error_message());
        const char *weights = ffnrt_plan_choice(plan, "ffn.weights");
        cr_assert_not_null(weights, "%s", ffnrt_plan_text(plan));
        if (c->f_in)
            cr_expect(strstr(weights, ffnrt_weight_format_name(c->f_in)) != NULL, "ffn.weights: %s", weights);
        cr_expect(strstr(ffnrt_plan_text(plan), "dequantized in") != NULL, "%s", ffnrt_plan_text(plan));
        cr_expect_str_eq(ffnrt_plan_choice(plan, "ffn.kernel"), kernel);
        cr_expect_str_eq(ffnrt_plan_choice(plan, "ffn.path"), path ? "unfused" : "fused");
        ffnrt_plan_destroy(plan);
        ffnrt_ffn_destroy(layer);
    }
    for (int i = 0; i < ARRAYS; i++)
        ffnrt_tensor_destroy(owned[i]);
    ffnrt_tensor_destroy(x);
    ffnrt_tensor_destroy(y);
    free_data(&q);
}

/* ---------------------------------------------------------------- tests */

typedef struct kernel_group {
    ffnrt_backend backend;
    int kernel; /* 0 blocked, 1 matvec, 2 tiled */
} kernel_group;

static const char *const kernel_names[3] = {"blocked", "matvec", "tiled"};

static ffnrt_context *group_context(const kernel_group *g, const ffnrt_context_options *o)
{
    ffnrt_context *ctx = test_context(g->backend, o);
    if (ctx)
        cr_assert_eq(ffnrt_context_force(ctx, "ffn.kernel", kernel_names[g->kernel]), FFNRT_OK);
    return ctx;
}

ParameterizedTestParameters(ffn_quant, formats)
{
    static kernel_group groups[TEST_BACKENDS * 3];
    for (int b = 0; b < TEST_BACKENDS; b++)
        for (int k = 0; k < 3; k++)
            groups[b * 3 + k] = (kernel_group){test_backends[b], k};
    return cr_make_param_array(kernel_group, groups, TEST_BACKENDS * 3);
}

/* Every format on one kernel: gated (fused and unfused) and dense layers,
 * decode and prefill token counts (the matrix-vector kernel's 19 tokens run
 * in chunks), biases, stacked gate/value, fp16 storage, weights from device
 * tensors, K-quants at their 256-wide blocks, and a layer mixing formats
 * (which the dispatcher runs unfused). Row counts are odd in blocks (h = 96
 * is 3 blocks: Q8_0 and Q4_0 rows pad their scales). */
ParameterizedTest(kernel_group *g, ffn_quant, formats)
{
    const ffnrt_ffn_kind D = FFNRT_FFN_DENSE, G = FFNRT_FFN_GATED;
    const ffnrt_weight_format Q8 = FFNRT_WEIGHT_Q8_0, Q40 = FFNRT_WEIGHT_Q4_0, Q41 = FFNRT_WEIGHT_Q4_1;
    const ffnrt_weight_format Q4K = FFNRT_WEIGHT_Q4_K, Q6K = FFNRT_WEIGHT_Q6_K;
    const ffnrt_dtype F32 = FFNRT_DTYPE_F32, F16 = FFNRT_DTYPE_F16;
    int t1 = g->kernel == 1 ? 3 : 1, tp = 19;
    qcase cases[] = {
        {G, Q8, Q8, Q8, F32, 64, 96, t1, 0, 0, 0, 0},
        {G, Q40, Q40, Q40, F32, 64, 96, tp, 1, 0, 0, 0},
        {G, Q41, Q41, Q41, F32, 96, 64, t1, 0, 1, 0, 0},
        {D, Q40, F32_, Q41, F32, 96, 64, tp, 1, 0, 0, 0},
        {D, Q8, F32_, F32_, F32, 64, 32, t1, 0, 0, 1, 0},
        {G, Q4K, Q4K, Q6K, F32, 256, 256, 2, 0, 0, 0, 0},
        {G, Q6K, Q6K, Q4K, F32, 256, 256, tp, 0, 1, 0, 0},
        {G, Q40, Q8, Q41, F32, 64, 96, t1, 1, 0, 1, 0}, /* gate and value differ: unfused */
        {G, Q41, Q41, Q8, F16, 64, 96, tp, 1, 0, 0, 0},
    };
    ffnrt_context *ctx = group_context(g, NULL);
    if (!ctx)
        return;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(ctx, &cases[i], kernel_names[g->kernel]);
    test_context_done(ctx);
}

/* A small GPU's limits: a 4 KiB buffer range splits the code and scale
 * bindings by rows at unaligned word offsets (many dispatches), 4
 * workgroups a dimension split them further, 32-item groups shrink the
 * tiles and lanes. */
ParameterizedTestParameters(ffn_quant, lowered_limits)
{
    static kernel_group groups[TEST_BACKENDS * 3];
    for (int b = 0; b < TEST_BACKENDS; b++)
        for (int k = 0; k < 3; k++)
            groups[b * 3 + k] = (kernel_group){test_backends[b], k};
    return cr_make_param_array(kernel_group, groups, TEST_BACKENDS * 3);
}

ParameterizedTest(kernel_group *g, ffn_quant, lowered_limits)
{
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.max_buffer_range = 4096;
    o.max_workgroup_count = 4;
    o.max_workgroup_size = 32;
    qcase cases[] = {
        {FFNRT_FFN_GATED, FFNRT_WEIGHT_Q4_0, FFNRT_WEIGHT_Q4_0, FFNRT_WEIGHT_Q8_0, FFNRT_DTYPE_F32, 160, 224, 5, 1, 1, 0, 0},
    };
    ffnrt_context *ctx = group_context(g, &o);
    if (!ctx)
        return;
    run_case(ctx, &cases[0], kernel_names[g->kernel]);
    test_context_done(ctx);
}

/* Whether the plan of c's layer at its token count says `what` (its codes
 * read 4 words at a time, say). */
static int plan_says(ffnrt_context *ctx, const qcase *c, const char *what)
{
    ffnrt_ffn_desc desc = case_desc(c, FFNRT_FFN_PATH_FUSED);
    ffnrt_plan *plan = NULL;
    cr_assert_eq(ffnrt_ffn_plan(ctx, &desc, c->tokens, &plan), FFNRT_OK, "%s", ffnrt_last_error_message());
    int says = strstr(ffnrt_plan_text(plan), what) != NULL;
    ffnrt_plan_destroy(plan);
    return says;
}

static int plans_vector_codes(ffnrt_context *ctx, const qcase *c) { return plan_says(ctx, c, "4 words at a time"); }

/* The integer path (ffn.int_dot forced on, decode on the register-blocked
 * kernel and on the matrix-vector one, GPUs' decode): Q8_0, Q4_0, Q4_1,
 * Q4_K and Q6_K products quantize x to 8 bits a block and take integer dot
 * products. Two contracts, two tests:
 * - integer_path, exact: with x already 8-bit codes (x_codes) and the down
 *   matrix dense, the quantized x is x itself, so the integer products
 *   must meet the fp32 accumulation bound: codes, pairing, offsets, the
 *   nibble sums, each format's minimum and Q6_K's signed codes and two
 *   scales a block all enter that bound. The layout errors a new CPU or
 *   device would show (aarch64's run of this suite keeps this test).
 * - integer_path_rounded, against the exact x: x's rounding (at most
 *   max|x|/254 a block of 32) bounds a product normwise by
 *   sqrt(32)/254 |W|_F |x|; over a layer's two products, with random
 *   weights and inputs, the layer's normwise error stays under 2^-5 (seen
 *   0.012, as ggml's 0.0096).
 * The plan names the path and its bound; the exact policy never takes it
 * unless forced. */
#define D FFNRT_FFN_DENSE
#define G FFNRT_FFN_GATED
#define Q40 FFNRT_WEIGHT_Q4_0
#define Q41 FFNRT_WEIGHT_Q4_1
#define Q8 FFNRT_WEIGHT_Q8_0
#define Q4K FFNRT_WEIGHT_Q4_K
#define Q6K FFNRT_WEIGHT_Q6_K
#define F32 FFNRT_DTYPE_F32
#define F16 FFNRT_DTYPE_F16
static const qcase integer_exact[] = {
    {G, Q40, Q40, F32_, F32, 64, 96, 1, 0, 0, 0, 1},
    {G, Q41, Q41, F32_, F32, 96, 64, 3, 1, 1, 0, 1},
    {D, Q41, F32_, F32_, F32, 64, 32, 2, 1, 0, 0, 1},
    {D, Q40, F32_, F32_, F16, 128, 64, 1, 0, 0, 0, 1},
    {G, Q8, Q8, F32_, F32, 96, 64, 1, 1, 0, 0, 1},
    {D, Q8, F32_, F32_, F16, 64, 96, 3, 1, 0, 0, 1},
    {G, Q8, Q8, F32_, F32, 64, 32, 2, 0, 1, 1, 1},
    {G, Q4K, Q4K, F32_, F32, 256, 64, 1, 1, 0, 0, 1}, /* Q4_K: (s, m) a group of 32, as Q4_1 */
    {G, Q6K, Q6K, F32_, F32, 256, 64, 1, 1, 0, 0, 1}, /* Q6_K: signed 6-bit codes, a scale a 16 */
    {D, Q6K, F32_, F32_, F16, 512, 64, 3, 0, 0, 0, 1},
    {G, Q6K, Q6K, F32_, F32, 256, 32, 2, 0, 1, 1, 1},
};
static const qcase integer_rounded[] = {
    {G, Q40, Q40, Q40, F32, 64, 96, 1, 1, 0, 0, 0},
    {G, Q41, Q41, Q41, F32, 96, 64, 4, 0, 1, 0, 0},
    {D, Q40, F32_, Q41, F32, 96, 64, 2, 1, 0, 0, 0},
    {G, Q40, Q8, Q41, F32, 64, 96, 1, 1, 0, 1, 0}, /* unfused: Q4_0 gate, Q8_0 value */
    {G, Q8, Q8, Q8, F32, 96, 64, 1, 1, 0, 0, 0},
    {D, Q8, F32_, Q8, F16, 64, 96, 4, 0, 0, 0, 0},
    {G, Q41, Q41, Q40, F16, 64, 96, 1, 1, 0, 0, 0},
    {G, Q4K, Q4K, Q4K, F32, 256, 256, 1, 0, 0, 0, 0},
    {G, Q6K, Q6K, Q6K, F32, 256, 256, 1, 1, 0, 0, 0},
    {D, Q6K, F32_, Q4K, F16, 256, 256, 4, 0, 0, 0, 0},
};
#undef D
#undef G
#undef Q40
#undef Q41
#undef Q8
#undef Q4K
#undef Q6K
#undef F32
#undef F16
#define COUNT_OF(a) (sizeof(a) / sizeof(a)[0])

BACKEND_PARAMETERS(ffn_quant, integer_path_rounded)
ParameterizedTest(ffnrt_backend *b, ffn_quant, integer_path_rounded)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    if (!ctx)
        return;
    cr_assert_eq(ffnrt_context_force(ctx, "ffn.int_dot", "on"), FFNRT_OK);
    integer_path_bound = 1.0 / 32;
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(ffnrt_context_force(ctx, "ffn.kernel", kernel_names[k]), FFNRT_OK);
        for (size_t i = 0; i < COUNT_OF(integer_rounded); i++)
            run_case(ctx, &integer_rounded[i], kernel_names[k]);
        /* With statistics on, the products that compute them read x itself
         * (its non-finite counts) and take the float path; the rest stay
         * integer, and the layer within the same bound. */
        ffnrt_stats_options so = FFNRT_STATS_OPTIONS_INIT;
        cr_assert_eq(ffnrt_context_set_stats(ctx, &so), FFNRT_OK);
        run_case(ctx, &integer_rounded[0], kernel_names[k]);
        cr_assert_eq(ffnrt_context_set_stats(ctx, NULL), FFNRT_OK);
    }
    integer_path_bound = 0;
    test_context_done(ctx);
}

BACKEND_PARAMETERS(ffn_quant, integer_path)
ParameterizedTest(ffnrt_backend *b, ffn_quant, integer_path)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    if (!ctx)
        return;
    cr_assert_eq(ffnrt_context_force(ctx, "ffn.int_dot", "on"), FFNRT_OK);
    integer_path_bound = 0;
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(ffnrt_context_force(ctx, "ffn.kernel", kernel_names[k]), FFNRT_OK);
        for (size_t i = 0; i < COUNT_OF(integer_exact); i++)
            run_case(ctx, &integer_exact[i], kernel_names[k]);
    }
    /* The plan: the path on, in each product's kernel, and its bound; the
     * tiled kernel has none. */
    ffnrt_ffn_desc desc = case_desc(&integer_rounded[0], FFNRT_FFN_PATH_FUSED);
    ffnrt_plan *plan = NULL;
    cr_assert_eq(ffnrt_ffn_plan(ctx, &desc, 1, &plan), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_expect_str_eq(ffnrt_plan_choice(plan, "ffn.int_dot"), "on");
    cr_expect(strstr(ffnrt_plan_text(plan), "sqrt(32)/254") != NULL, "%s", ffnrt_plan_text(plan));
    cr_expect(strstr(ffnrt_plan_choice(plan, "ffn.gate_value"), "integer dot products") != NULL, "%s",
              ffnrt_plan_text(plan));
    ffnrt_plan_destroy(plan);
    cr_assert_eq(ffnrt_context_force(ctx, "ffn.kernel", "tiled"), FFNRT_OK);
    cr_assert_eq(ffnrt_ffn_plan(ctx, &desc, 1, &plan), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_expect_str_eq(ffnrt_plan_choice(plan, "ffn.int_dot"), "off", "%s", ffnrt_plan_text(plan));
    ffnrt_plan_destroy(plan);
    /* Where the matrix-vector kernel takes packed 4 x 8-bit dot products
     * (a Vulkan device with shaderIntegerDotProduct: lavapipe lists it,
     * not accelerated), the plan says so; the matrix-vector runs above
     * took them. */
    ffnrt_device_info info;
    cr_assert_eq(ffnrt_context_get_device_info(ctx, &info), FFNRT_OK);
    cr_assert_eq(ffnrt_context_force(ctx, "ffn.kernel", "matvec"), FFNRT_OK);
    cr_assert_eq(ffnrt_ffn_plan(ctx, &desc, 1, &plan), FFNRT_OK, "%s", ffnrt_last_error_message());
    int packed = strstr(ffnrt_plan_choice(plan, "ffn.gate_value"), "packed 4 x 8-bit integer dot products") != NULL;
    cr_expect_eq(packed, *b == FFNRT_BACKEND_VULKAN && info.int_dot_packed != 0, "int_dot_packed %d: %s",
                 info.int_dot_packed, ffnrt_plan_text(plan));
    ffnrt_plan_destroy(plan);
    if (!packed)
        cr_log_info("%s: the matrix-vector kernel's integer path takes 16-bit pairs here (no packed dot products)",
                    ffnrt_backend_name(*b));
    /* Where the blocked kernel takes byte products (CPU drivers running
     * work-items as vector code: PoCL), the plain-vector form that every
     * CPU but x86 with AVX2 runs, through FFNRT_LIMITS byte_dot=0: the
     * exact cases again (it once summed Q6_K's two halves together, seen
     * only on aarch64). The same limit turns the packed products off: the
     * matrix-vector kernel's 16-bit pairs then run on that device too. */
    cr_assert_eq(ffnrt_context_force(ctx, "ffn.kernel", "blocked"), FFNRT_OK);
    cr_assert_eq(ffnrt_ffn_plan(ctx, &desc, 1, &plan), FFNRT_OK, "%s", ffnrt_last_error_message());
    const char *blocked = ffnrt_plan_choice(plan, "ffn.gate_value");
    int byte_products = strstr(blocked, "integer dot products of bytes") != NULL;
    /* An OpenCL CPU driver on a host without AVX2 (aarch64) runs the plain
     * vectors by default: the exact cases above were that form. */
    int plain_by_default = strstr(blocked, "plain vectors (the host CPU has no AVX2)") != NULL;
    ffnrt_plan_destroy(plan);
    test_context_done(ctx);
    if (!byte_products && !packed) {
        cr_log_info("%s: the blocked kernel's integer path takes 16-bit pairs here, not bytes: no plain-vector "
                    "form to check", ffnrt_backend_name(*b));
    } else if (plain_by_default && !packed) {
        cr_log_info("%s: the blocked kernel's byte products are the plain vectors here by default (no AVX2): "
                    "checked above", ffnrt_backend_name(*b));
    } else {
        ctx = test_context_with_limits(*b, "byte_dot=0");
        cr_assert_not_null(ctx);
        cr_assert_eq(ffnrt_context_force(ctx, "ffn.int_dot", "on"), FFNRT_OK);
        const char *kernel = packed ? "matvec" : "blocked";
        cr_assert_eq(ffnrt_context_force(ctx, "ffn.kernel", kernel), FFNRT_OK);
        cr_assert_eq(ffnrt_ffn_plan(ctx, &desc, 1, &plan), FFNRT_OK, "%s", ffnrt_last_error_message());
        const char *gv = ffnrt_plan_choice(plan, "ffn.gate_value");
        if (packed)
            cr_expect(strstr(gv, "integer dot products") && !strstr(gv, "packed"), "%s", ffnrt_plan_text(plan));
        else
            cr_expect(strstr(gv, "of bytes in plain vectors") != NULL, "%s", ffnrt_plan_text(plan));
        ffnrt_plan_destroy(plan);
        for (size_t i = 0; i < COUNT_OF(integer_exact); i++)
            run_case(ctx, &integer_exact[i], kernel); /* a failure here: the fallback form (the one above passed) */
        test_context_done(ctx);
    }

    /* Unforced: never under the exact policy; not at prefill. */
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.precision = FFNRT_PRECISION_EXACT;
    ctx = test_context(*b, &o);
    cr_assert_not_null(ctx);
    cr_assert_eq(ffnrt_ffn_plan(ctx, &desc, 1, &plan), FFNRT_OK, "%s", ffnrt_last_error_message());
    if (ffnrt_plan_choice(plan, "ffn.int_dot")) /* absent where the kernel is not the blocked one (GPU profiles) */
        cr_expect_str_eq(ffnrt_plan_choice(plan, "ffn.int_dot"), "off", "%s", ffnrt_plan_text(plan));
    ffnrt_plan_destroy(plan);
    test_context_done(ctx);
}

/* Block formats' code words read word by word (FFNRT_LIMITS
 * vector_codes=0), the form devices with binding offsets finer than 16
 * bytes take where these drivers read 4-word vectors (quant.inc's
 * QUANT_VEC4): the float path on the blocked kernel (4-bit, 8-bit and
 * Q6_K's 16-element groups, decode and a small prefill block) and the
 * integer path's exact cases on the blocked and matrix-vector kernels,
 * each against the same reference as with vectors; and Q8_0's groups as
 * one 64-bit access (QUANT_W8), and lavapipe's 4-word loads as two 64-bit
 * words (VIEWS_64), against the 4-word forms of a device without 64-bit
 * words (int64_words=0). */
BACKEND_PARAMETERS(ffn_quant, word_codes)
ParameterizedTest(ffnrt_backend *b, ffn_quant, word_codes)
{
    const ffnrt_ffn_kind D = FFNRT_FFN_DENSE, G = FFNRT_FFN_GATED;
    const ffnrt_weight_format Q40 = FFNRT_WEIGHT_Q4_0, Q41 = FFNRT_WEIGHT_Q4_1, Q8 = FFNRT_WEIGHT_Q8_0;
    const ffnrt_weight_format Q6K = FFNRT_WEIGHT_Q6_K;
    const ffnrt_dtype F32 = FFNRT_DTYPE_F32;
    qcase floats[] = {
        {G, Q40, Q40, Q40, F32, 64, 96, 1, 1, 0, 0, 0},
        {D, Q8, F32_, Q8, F32, 96, 64, 3, 0, 0, 0, 0},
        {G, Q6K, Q6K, F32_, F32, 256, 64, 1, 0, 1, 0, 0},
    };
    qcase exact[] = {
        {G, Q41, Q41, F32_, F32, 96, 64, 3, 1, 1, 0, 1},
        {D, Q8, F32_, F32_, F32, 64, 96, 1, 1, 0, 0, 1},
    };
    ffnrt_context *vec_ctx = test_context(*b, NULL);
    if (!vec_ctx)
        return;
    ffnrt_context *ctx = test_context_with_limits(*b, "vector_codes=0");
    cr_assert_not_null(ctx);
    cr_assert_eq(ffnrt_context_force(vec_ctx, "ffn.kernel", "blocked"), FFNRT_OK);
    cr_assert_eq(ffnrt_context_force(ctx, "ffn.kernel", "blocked"), FFNRT_OK);
    /* Where the vectors are taken: every Vulkan device here (offsets of 16
     * bytes or coarser); PoCL's blocked float path reads 16-wide codes. */
    if (*b == FFNRT_BACKEND_VULKAN)
        cr_expect(plans_vector_codes(vec_ctx, &floats[0]), "the blocked kernel's float path reads codes word by word");
    else if (!plans_vector_codes(vec_ctx, &floats[0]))
        cr_log_info("%s: the blocked kernel's float path reads codes word by word here anyway", ffnrt_backend_name(*b));
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++) {
        cr_expect(!plans_vector_codes(ctx, &floats[i]), "vector_codes=0, yet the plan reads 4 words at a time");
        run_case(ctx, &floats[i], "blocked");
    }
    /* Q8_0's 8-word groups as one 64-bit access, on a CPU driver running
     * invocations as SIMD lanes with shaderInt64 (lavapipe); without 64-bit
     * words (int64_words=0) the same layer reads them as 4-word vectors. */
    ffnrt_device_info info;
    cr_assert_eq(ffnrt_context_get_device_info(vec_ctx, &info), FFNRT_OK);
    const qcase *q8 = &floats[1];
    int w8 = plan_says(vec_ctx, q8, "8 words at a time");
    if (*b == FFNRT_BACKEND_VULKAN && info.type == FFNRT_DEVICE_TYPE_CPU && info.subgroup_size > 1)
        cr_expect(w8, "%s: Q8_0's blocked float path does not read a group as one 64-bit access", info.name);
    else
        cr_log_info("%s: Q8_0's blocked float path %s 64-bit accesses", info.name, w8 ? "takes" : "takes no");
    if (w8) {
        run_case(vec_ctx, q8, "blocked");
        ffnrt_context *narrow = test_context_with_limits(*b, "int64_words=0");
        cr_assert_not_null(narrow);
        cr_assert_eq(ffnrt_context_force(narrow, "ffn.kernel", "blocked"), FFNRT_OK);
        cr_expect(!plan_says(narrow, q8, "8 words at a time") && plans_vector_codes(narrow, q8),
                  "int64_words=0: the plan should read Q8_0's codes 4 words at a time");
        run_case(narrow, q8, "blocked");
        /* The same drivers take every 4-word load as two 64-bit words
         * (VIEWS_64); int64_words=0 keeps the 4-word views, which GPUs
         * without shaderInt64 read: both against the reference. */
        cr_expect(plan_says(vec_ctx, &floats[0], "two 64-bit words"),
                  "%s: the product's 4-word loads are not read as 64-bit words", info.name);
        cr_expect(!plan_says(narrow, &floats[0], "two 64-bit words"),
                  "int64_words=0, yet the plan reads 4-word loads as 64-bit words");
        run_case(narrow, &floats[0], "blocked");
        test_context_done(narrow);
    }
    cr_assert_eq(ffnrt_context_force(vec_ctx, "ffn.int_dot", "on"), FFNRT_OK);
    cr_assert_eq(ffnrt_context_force(ctx, "ffn.int_dot", "on"), FFNRT_OK);
    integer_path_bound = 0;
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(ffnrt_context_force(vec_ctx, "ffn.kernel", kernel_names[k]), FFNRT_OK);
        cr_assert_eq(ffnrt_context_force(ctx, "ffn.kernel", kernel_names[k]), FFNRT_OK);
        if (!plans_vector_codes(vec_ctx, &exact[0]))
            cr_log_info("%s: the %s kernel's integer path reads codes word by word here anyway (byte or packed "
                        "products)", ffnrt_backend_name(*b), kernel_names[k]);
        for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
            cr_expect(!plans_vector_codes(ctx, &exact[i]), "vector_codes=0, yet the plan reads 4 words at a time");
            run_case(ctx, &exact[i], kernel_names[k]);
        }
    }
    test_context_done(ctx);
    test_context_done(vec_ctx);
}

/* ----------------------------------------------------------- bad input */

#define EXPECT_FAIL(call, status, needle)                                                              \
    do {                                                                                               \
        ffnrt_status st_ = (call);                                                                     \
        cr_expect_eq(st_, status, "%s gave %s: %s", #call, ffnrt_status_string(st_),                   \
                     ffnrt_last_error_message());                                                      \
        cr_expect(strstr(ffnrt_last_error_message(), needle) != NULL, "%s: message \"%s\" lacks \"%s\"", \
                  #call, ffnrt_last_error_message(), needle);                                          \
    } while (0)

/* What the formats cost: the bytes the device holds, GGUF's for Q4_0 but
 * for its rows padded to whole words. */
Test(ffn_quant, accounting)
{
    ffnrt_ffn_desc d = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, 64, 96);
    d.format_in = d.format_value = d.format_out = FFNRT_WEIGHT_Q4_0;
    ffnrt_ffn_cost c;
    cr_assert_eq(ffnrt_ffn_cost_of(&d, 1, FFNRT_FFN_PATH_FUSED, &c), FFNRT_OK);
    cr_assert_eq(c.parameters, 3 * 64 * 96);
    /* gate, value: 96 rows of 2 blocks (18 B each); down: 64 rows of 3 blocks and 2 B of padding */
    cr_assert_eq(c.weight_bytes, 2 * 96 * 2 * 18 + 64 * (3 * 18 + 2));
    d.format_out = FFNRT_WEIGHT_F32; /* down in the dtype */
    cr_assert_eq(ffnrt_ffn_cost_of(&d, 1, FFNRT_FFN_PATH_FUSED, &c), FFNRT_OK);
    cr_assert_eq(c.weight_bytes, 2 * 96 * 2 * 18 + 64 * 96 * 4);
    d.format_in = d.format_value = FFNRT_WEIGHT_Q4_K; /* 148 B a 256-block on the device (GGUF: 144) */
    d.d_model = 256;
    cr_assert_eq(ffnrt_ffn_cost_of(&d, 1, FFNRT_FFN_PATH_FUSED, &c), FFNRT_OK);
    cr_assert_eq(c.weight_bytes, 2 * 96 * 148 + 256 * 96 * 4);
}

BACKEND_PARAMETERS(ffn_quant, bad_input)
ParameterizedTest(ffnrt_backend *b, ffn_quant, bad_input)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    if (!ctx)
        return;
    static uint8_t bytes[4 * 96 * 64]; /* room for any of the matrices below */
    ffnrt_ffn_desc d = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, 64, 96);
    d.format_in = d.format_value = d.format_out = FFNRT_WEIGHT_Q4_0;
    ffnrt_ffn_weights w = {0};
    w.w_gate = w.w_value = w.w_out = bytes;
    ffnrt_ffn *layer = NULL;
    ffnrt_ffn_desc bad = d;
    bad.d_model = 48;
    EXPECT_FAIL(ffnrt_ffn_create(ctx, &bad, &w, &layer), FFNRT_ERROR_SHAPE_MISMATCH, "d_model) is 48");
    bad = d;
    bad.format_out = FFNRT_WEIGHT_Q4_K; /* hidden 96: not a multiple of 256 */
    EXPECT_FAIL(ffnrt_ffn_create(ctx, &bad, &w, &layer), FFNRT_ERROR_SHAPE_MISMATCH, "blocks of 256");
    bad = d;
    bad.format_in = FFNRT_WEIGHT_F16; /* a dense format other than the dtype's */
    EXPECT_FAIL(ffnrt_ffn_create(ctx, &bad, &w, &layer), FFNRT_ERROR_UNSUPPORTED, "desc.format_in is f16");
    bad = d;
    bad.format_value = (ffnrt_weight_format)42;
    EXPECT_FAIL(ffnrt_ffn_create(ctx, &bad, &w, &layer), FFNRT_ERROR_INVALID_ARGUMENT, "not a weight format");
    bad = d;
    bad.kind = FFNRT_FFN_DENSE;
    ffnrt_ffn_weights dense = {0};
    dense.w_in = dense.w_out = bytes;
    EXPECT_FAIL(ffnrt_ffn_create(ctx, &bad, &dense, &layer), FFNRT_ERROR_INVALID_ARGUMENT, "no value matrix");
    bad = d;
    bad.format_value = FFNRT_WEIGHT_Q8_0;
    bad.path = FFNRT_FFN_PATH_FUSED;
    EXPECT_FAIL(ffnrt_ffn_create(ctx, &bad, &w, &layer), FFNRT_ERROR_UNSUPPORTED, "reads both in one format");
    ffnrt_plan *plan = NULL;
    EXPECT_FAIL(ffnrt_ffn_plan(ctx, &bad, 1, &plan), FFNRT_ERROR_UNSUPPORTED, "reads both in one format");
    ffnrt_ffn_weights stacked = {0};
    stacked.w_gate_value = stacked.w_out = bytes;
    bad.path = FFNRT_FFN_PATH_AUTO;
    EXPECT_FAIL(ffnrt_ffn_create(ctx, &bad, &stacked, &layer), FFNRT_ERROR_INVALID_ARGUMENT, "give them equal");
    /* Tensors of the wrong byte size. */
    int64_t n = 96 * 2 * 18 / 2 - 1;
    ffnrt_tensor *t = NULL;
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F16, 1, &n, &t), FFNRT_OK);
    ffnrt_ffn_weight_tensors tw = {0};
    tw.w_gate = tw.w_value = tw.w_out = t;
    EXPECT_FAIL(ffnrt_ffn_create_from_tensors(ctx, &d, &tw, &layer), FFNRT_ERROR_SHAPE_MISMATCH,
                "holds 3454 bytes; a [96, 64] q4_0 matrix is 3456");
    cr_expect_null(layer);
    /* Mixed formats: the dispatcher runs them unfused and says why. */
    bad = d;
    bad.format_value = FFNRT_WEIGHT_Q8_0;
    cr_assert_eq(ffnrt_ffn_plan(ctx, &bad, 1, &plan), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_expect_str_eq(ffnrt_plan_choice(plan, "ffn.path"), "unfused");
    cr_expect_str_eq(ffnrt_plan_choice(plan, "ffn.weights"), "gate q4_0, value q8_0, down q4_0");
    const char *cands = ffnrt_plan_choice(plan, "ffn.candidates");
    for (const char *c = cands; c && *c; c = strchr(c, ',') ? strchr(c, ',') + 1 : c + strlen(c))
        cr_expect(strncmp(c, "unfused/", 8) == 0, "a fused candidate: %s", cands);
    ffnrt_plan_destroy(plan);
    ffnrt_tensor_destroy(t);
    test_context_done(ctx);
}

/* The default path: fused at decode on every device; above 4 tokens, the
 * measured exception of a driver that runs work-items as vector code
 * (PoCL: its blocked kernel runs a gated block-format layer's two products
 * apart faster than together), said in the plan. */
BACKEND_PARAMETERS(ffn_quant, default_path)
ParameterizedTest(ffnrt_backend *b, ffn_quant, default_path)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    if (!ctx)
        return;
    ffnrt_device_info info;
    cr_assert_eq(ffnrt_context_get_device_info(ctx, &info), FFNRT_OK);
    ffnrt_ffn_desc d = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, 64, 96);
    d.format_in = d.format_value = d.format_out = FFNRT_WEIGHT_Q4_0;
    const int cpu_vector_items = info.backend == FFNRT_BACKEND_OPENCL && info.type == FFNRT_DEVICE_TYPE_CPU;
    const int64_t tokens[] = {1, 4, 64};
    for (size_t i = 0; i < 3; i++) {
        ffnrt_plan *plan = NULL;
        cr_assert_eq(ffnrt_ffn_plan(ctx, &d, tokens[i], &plan), FFNRT_OK, "%s", ffnrt_last_error_message());
        /* (Or unfused at decode where this device's calibration, read from
         * the tests' shared cache, measured the fused path slower.) */
        int unfused = (cpu_vector_items && tokens[i] > 4) ||
                      strstr(ffnrt_plan_text(plan), "calibration measured the fused path") != NULL;
        cr_expect_str_eq(ffnrt_plan_choice(plan, "ffn.path"), unfused ? "unfused" : "fused", "%lld tokens:\n%s",
                         (long long)tokens[i], ffnrt_plan_text(plan));
        if (cpu_vector_items && tokens[i] > 4)
            cr_expect(strstr(ffnrt_plan_text(plan), "apart faster than together") != NULL, "%s", ffnrt_plan_text(plan));
        ffnrt_plan_destroy(plan);
    }
    /* Dense-weight layers keep the fused default. */
    ffnrt_ffn_desc f = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, 64, 96);
    ffnrt_plan *plan = NULL;
    cr_assert_eq(ffnrt_ffn_plan(ctx, &f, 64, &plan), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_expect_str_eq(ffnrt_plan_choice(plan, "ffn.path"), "fused", "%s", ffnrt_plan_text(plan));
    ffnrt_plan_destroy(plan);
    test_context_done(ctx);
}
