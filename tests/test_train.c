/* FFN layer training: ffnrt_ffn_forward_train and ffnrt_ffn_backward on
 * both backends, against a double-precision reference of every gradient.
 *
 * Error measure: normwise relative error ||g - g_ref||_2 / ||g_ref||_2 per
 * output (dx and each weight and bias gradient), g_ref computed in double
 * from the very values the device holds. Bounds:
 *  - fp32: each gradient is at most two chained products (dh = (dy·W_out)
 *    * phi'(pre), then dW_in = dhᵀ·x over the tokens or dx = dh·W_in), each
 *    of K roundings of random sign, about sqrt(K)·u in norm (u = 2^-24),
 *    plus the derivative's few ULP. Bound: 4·(sqrt(d) + sqrt(h) +
 *    sqrt(tokens) + 4)·u; the worst seen is 35 times smaller (1.5e-7 at
 *    d 24, h 40, 33 tokens), an indexing error gives O(1).
 *  - 16-bit storage, fp32 accumulation: the hidden intermediates (pre or g
 *    and v, phi of them, dy·W_out, dh) and the outputs are rounded to the
 *    dtype, up to 5 roundings of u16 (2^-11 fp16, 2^-8 bf16) on a path,
 *    and phi' amplifies a rounded pre-activation's error where it turns.
 *    Measured up to 1.3·u16 (fp16) and 1.05·u16 (bf16). Bound: 4·u16.
 * The reference itself is checked against central finite differences of
 * the double forward (train_reference::finite_differences).
 *
 * llvmpipe compiles every kernel at its first dispatch in each process, so
 * each test runs many kinds through one context: the products' variants
 * are shared, only the activation's element-wise kernels differ. */
#include "device_fixture.h"
#include "contract.h"
#include "reference_grad.h"

#include <criterion/parameterized.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct train_case {
    ffnrt_ffn_kind kind;
    int phi; /* ffnrt_activation (dense) or ffnrt_glu (gated) */
    ffnrt_dtype dtype;
    int d, h, t;
    int bias;
    int stacked; /* gated: weights and gradients as one [2h, d] matrix */
} train_case;

/* --------------------------------------------------------- host reference */

static ffnrt_activation case_act(const train_case *c)
{
    return c->kind == FFNRT_FFN_GATED ? ffnrt_glu_gate_activation((ffnrt_glu)c->phi) : (ffnrt_activation)c->phi;
}

static double phi(const train_case *c, double v)
{
    ffnrt_activation a = case_act(c);
    return ref_forward(a, v, contract_alpha(a), SWISH_BETA);
}

static double dphi(const train_case *c, double v)
{
    ffnrt_activation a = case_act(c);
    return ref_grad(a, v, contract_alpha(a), SWISH_BETA);
}

/* Values as the device holds them (rounded to the dtype). */
static uint32_t rng_state;
static float uniform(float lo, float hi)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(rng_state >> 8) / 16777216.0f;
}

static float round_to(ffnrt_dtype dtype, float v)
{
    if (dtype == FFNRT_DTYPE_F16)
        return ffnrt_f16_to_f32(ffnrt_f32_to_f16(v));
    if (dtype == FFNRT_DTYPE_BF16)
        return ffnrt_bf16_to_f32(ffnrt_f32_to_bf16(v));
    return v;
}

/* The layer's data: weights (gated: gate rows then value rows, as stacked),
 * x and dy; and the reference gradients in double. */
enum { X, DY, W_IN, B_IN, W_OUT, B_OUT, ARRAYS };
enum { G_DX, G_W_IN, G_B_IN, G_W_OUT, G_B_OUT, GRADS };

typedef struct train_data {
    float *a[ARRAYS];
    size_t n[ARRAYS];
    double *g[GRADS];
    size_t gn[GRADS];
} train_data;

/* Gated layers keep gate and value as rows [0, h) and [h, 2h) of W_IN. */
static size_t in_rows(const train_case *c) { return (size_t)c->h * (c->kind == FFNRT_FFN_GATED ? 2 : 1); }

/* y = W_out·phi(...) + b_out for x, in double (the forward's reference),
 * with the hidden values kept (pre: rows of in_rows). */
static void ref_forward_pass(const train_case *c, float *const a[ARRAYS], const double *x, double *pre, double *u,
                             double *y)
{
    size_t d = (size_t)c->d, h = (size_t)c->h, t = (size_t)c->t, r = in_rows(c);
    for (size_t i = 0; i < t; i++) {
        for (size_t j = 0; j < r; j++) {
            double s = c->bias ? a[B_IN][j] : 0.0;
            for (size_t k = 0; k < d; k++)
                s += x[i * d + k] * a[W_IN][j * d + k];
            pre[i * r + j] = s;
        }
        for (size_t j = 0; j < h; j++)
            u[i * h + j] = c->kind == FFNRT_FFN_GATED ? phi(c, pre[i * r + j]) * pre[i * r + h + j]
                                                       : phi(c, pre[i * r + j]);
        for (size_t j = 0; j < d; j++) {
            double s = c->bias ? a[B_OUT][j] : 0.0;
            for (size_t k = 0; k < h; k++)
                s += u[i * h + k] * a[W_OUT][j * h + k];
            y[i * d + j] = s;
        }
    }
}

static void ref_backward(const train_case *c, float *const a[ARRAYS], double *const g[GRADS])
{
    size_t d = (size_t)c->d, h = (size_t)c->h, t = (size_t)c->t, r = in_rows(c);
    double *x = malloc(t * d * sizeof *x), *pre = malloc(t * r * sizeof *pre), *u = malloc(t * h * sizeof *u);
    double *y = malloc(t * d * sizeof *y), *dz = calloc(t * r, sizeof *dz);
    cr_assert(x && pre && u && y && dz);
    for (size_t i = 0; i < t * d; i++)
        x[i] = a[X][i];
    ref_forward_pass(c, a, x, pre, u, y);
    for (int k = 0; k < GRADS; k++)
        memset(g[k], 0, sizeof(double) * (k == G_DX ? t * d : k == G_W_IN ? r * d : k == G_B_IN ? r
                                                              : k == G_W_OUT ? d * h : d));
    for (size_t i = 0; i < t; i++)
        for (size_t j = 0; j < h; j++) {
            double du = 0;
            for (size_t k = 0; k < d; k++)
                du += (double)a[DY][i * d + k] * a[W_OUT][k * h + j];
            if (c->kind == FFNRT_FFN_GATED) {
                double gv = pre[i * r + j], vv = pre[i * r + h + j];
                dz[i * r + j] = du * vv * dphi(c, gv);
                dz[i * r + h + j] = du * phi(c, gv);
            } else {
                dz[i * r + j] = du * dphi(c, pre[i * r + j]);
            }
        }
    for (size_t i = 0; i < t; i++) {
        for (size_t k = 0; k < d; k++) {
            double dyv = a[DY][i * d + k];
            g[G_B_OUT][k] += dyv;
            for (size_t j = 0; j < h; j++)
                g[G_W_OUT][k * h + j] += dyv * u[i * h + j];
        }
        for (size_t j = 0; j < r; j++) {
            g[G_B_IN][j] += dz[i * r + j];
            for (size_t k = 0; k < d; k++) {
                g[G_W_IN][j * d + k] += dz[i * r + j] * x[i * d + k];
                g[G_DX][i * d + k] += dz[i * r + j] * a[W_IN][j * d + k];
            }
        }
    }
    free(x);
    free(pre);
    free(u);
    free(y);
    free(dz);
}

static train_data make_data(const train_case *c)
{
    train_data f;
    memset(&f, 0, sizeof f);
    size_t d = (size_t)c->d, h = (size_t)c->h, t = (size_t)c->t, r = in_rows(c);
    rng_state = 0x2545f491u ^ (uint32_t)(d * 131 + h * 7 + t + (size_t)c->phi * 977);
    size_t n[ARRAYS] = {t * d, t * d, r * d, r, d * h, d};
    /* Pre-activations O(1) whatever the widths. */
    float scale[ARRAYS] = {1.0f, 1.0f, 2.0f / sqrtf((float)d), 0.5f, 2.0f / sqrtf((float)h), 0.5f};
    for (int k = 0; k < ARRAYS; k++) {
        f.n[k] = n[k];
        f.a[k] = malloc(n[k] * sizeof(float));
        cr_assert(f.a[k]);
        for (size_t i = 0; i < n[k]; i++)
            f.a[k][i] = round_to(c->dtype, uniform(-scale[k], scale[k]));
    }
    size_t gn[GRADS] = {t * d, r * d, r, d * h, d};
    for (int k = 0; k < GRADS; k++) {
        f.gn[k] = gn[k];
        f.g[k] = malloc(gn[k] * sizeof(double));
        cr_assert(f.g[k]);
    }
    ref_backward(c, f.a, f.g);
    return f;
}

static void free_data(train_data *f)
{
    for (int k = 0; k < ARRAYS; k++)
        free(f->a[k]);
    for (int k = 0; k < GRADS; k++)
        free(f->g[k]);
}

/* ------------------------------------------------------------ device side */

/* Writes n floats to t in its dtype. */
static void upload_into(ffnrt_tensor *t, ffnrt_dtype dtype, const float *v, size_t n)
{
    void *bits = malloc(n * 4 + 4);
    cr_assert(bits);
    if (dtype == FFNRT_DTYPE_F32)
        memcpy(bits, v, n * 4);
    else if (dtype == FFNRT_DTYPE_F16)
        ffnrt_f32_to_f16_array(v, bits, n);
    else
        ffnrt_f32_to_bf16_array(v, bits, n);
    cr_assert_eq(ffnrt_tensor_write(t, bits, ffnrt_tensor_bytes(t)), FFNRT_OK, "%s", ffnrt_last_error_message());
    free(bits);
}

static ffnrt_tensor *upload(ffnrt_context *ctx, ffnrt_dtype dtype, const float *v, size_t n, int64_t rows,
                            int64_t cols)
{
    int64_t shape[2] = {rows, cols};
    ffnrt_tensor *t = NULL;
    cr_assert_eq(ffnrt_tensor_create(ctx, dtype, cols ? 2 : 1, shape, &t), FFNRT_OK, "%s", ffnrt_last_error_message());
    if (v)
        upload_into(t, dtype, v, n);
    return t;
}

static void download(const ffnrt_tensor *t, float *out, size_t n)
{
    ffnrt_dtype dtype = ffnrt_tensor_dtype(t);
    if (dtype == FFNRT_DTYPE_F32) {
        cr_assert_eq(ffnrt_tensor_read(t, out, n * 4), FFNRT_OK, "%s", ffnrt_last_error_message());
        return;
    }
    uint16_t *bits = malloc(n * 2 + 2);
    cr_assert(bits);
    cr_assert_eq(ffnrt_tensor_read(t, bits, n * 2), FFNRT_OK, "%s", ffnrt_last_error_message());
    if (dtype == FFNRT_DTYPE_F16)
        ffnrt_f16_to_f32_array(bits, out, n);
    else
        ffnrt_bf16_to_f32_array(bits, out, n);
    free(bits);
}

static double bound_for(const train_case *c)
{
    const char *scale_env = getenv("FFNRT_TEST_BOUND_SCALE");
    double scale = scale_env ? atof(scale_env) : 1.0;
    if (c->dtype == FFNRT_DTYPE_F16)
        return scale * 4.0 * ldexp(1.0, -11);
    if (c->dtype == FFNRT_DTYPE_BF16)
        return scale * 4.0 * ldexp(1.0, -8);
    return scale * 4.0 * (sqrt((double)c->d) + sqrt((double)c->h) + sqrt((double)c->t) + 4.0) * ldexp(1.0, -24);
}

static ffnrt_ffn_desc case_desc(const train_case *c)
{
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(c->kind, c->d, c->h);
    desc.dtype = c->dtype;
    desc.bias = c->bias;
    if (c->kind == FFNRT_FFN_GATED) {
        desc.glu.kind = (ffnrt_glu)c->phi;
        desc.glu.beta = SWISH_BETA;
    } else {
        ffnrt_activation_desc a = FFNRT_ACTIVATION_DESC_INIT((ffnrt_activation)c->phi);
        a.alpha = contract_alpha((ffnrt_activation)c->phi);
        a.beta = SWISH_BETA;
        desc.activation = a;
    }
    return desc;
}

/* A case's layer, inputs and gradient tensors on one context. */
typedef struct train_run {
    ffnrt_ffn *layer;
    ffnrt_tensor *x, *y, *dy, *dx;
    ffnrt_tensor *gw_in, *gb_in, *gw_value, *gb_value, *gw_out, *gb_out;
    ffnrt_ffn_gradients grads;
} train_run;

static train_run make_run(ffnrt_context *ctx, const train_case *c, const train_data *f)
{
    train_run r;
    memset(&r, 0, sizeof r);
    size_t d = (size_t)c->d, h = (size_t)c->h;
    int gated = c->kind == FFNRT_FFN_GATED;
    ffnrt_dtype dt = c->dtype;
    void *conv[ARRAYS] = {0};
    for (int k = W_IN; k < ARRAYS; k++) {
        conv[k] = malloc(f->n[k] * 4 + 4);
        cr_assert(conv[k]);
        if (dt == FFNRT_DTYPE_F32)
            memcpy(conv[k], f->a[k], f->n[k] * 4);
        else if (dt == FFNRT_DTYPE_F16)
            ffnrt_f32_to_f16_array(f->a[k], conv[k], f->n[k]);
        else
            ffnrt_f32_to_bf16_array(f->a[k], conv[k], f->n[k]);
    }
    size_t es = dt == FFNRT_DTYPE_F32 ? 4 : 2;
    ffnrt_ffn_weights w = {0};
    if (!gated) {
        w.w_in = conv[W_IN], w.b_in = c->bias ? conv[B_IN] : NULL;
    } else if (c->stacked) {
        w.w_gate_value = conv[W_IN], w.b_gate_value = c->bias ? conv[B_IN] : NULL;
    } else {
        w.w_gate = conv[W_IN], w.w_value = (char *)conv[W_IN] + h * d * es;
        w.b_gate = c->bias ? conv[B_IN] : NULL, w.b_value = c->bias ? (char *)conv[B_IN] + h * es : NULL;
    }
    w.w_out = conv[W_OUT], w.b_out = c->bias ? conv[B_OUT] : NULL;
    ffnrt_ffn_desc desc = case_desc(c);
    cr_assert_eq(ffnrt_ffn_create(ctx, &desc, &w, &r.layer), FFNRT_OK, "%s", ffnrt_last_error_message());
    for (int k = W_IN; k < ARRAYS; k++)
        free(conv[k]);
    r.x = upload(ctx, dt, f->a[X], f->n[X], c->t, c->d);
    r.dy = upload(ctx, dt, f->a[DY], f->n[DY], c->t, c->d);
    r.y = upload(ctx, dt, NULL, 0, c->t, c->d);
    r.dx = upload(ctx, dt, NULL, 0, c->t, c->d);
    int split = gated && !c->stacked;
    r.gw_in = upload(ctx, dt, NULL, 0, (int64_t)(split ? h : in_rows(c)), c->d);
    r.gw_out = upload(ctx, dt, NULL, 0, c->d, c->h);
    if (split)
        r.gw_value = upload(ctx, dt, NULL, 0, c->h, c->d);
    if (c->bias) {
        r.gb_in = upload(ctx, dt, NULL, 0, (int64_t)(split ? h : in_rows(c)), 0);
        r.gb_out = upload(ctx, dt, NULL, 0, c->d, 0);
        if (split)
            r.gb_value = upload(ctx, dt, NULL, 0, c->h, 0);
    }
    if (!gated) {
        r.grads.w_in = r.gw_in, r.grads.b_in = r.gb_in;
    } else if (c->stacked) {
        r.grads.w_gate_value = r.gw_in, r.grads.b_gate_value = r.gb_in;
    } else {
        r.grads.w_gate = r.gw_in, r.grads.b_gate = r.gb_in;
        r.grads.w_value = r.gw_value, r.grads.b_value = r.gb_value;
    }
    r.grads.w_out = r.gw_out, r.grads.b_out = r.gb_out;
    return r;
}

static void free_run(train_run *r)
{
    ffnrt_ffn_destroy(r->layer);
    ffnrt_tensor *ts[] = {r->x, r->y, r->dy, r->dx, r->gw_in, r->gb_in, r->gw_value, r->gb_value, r->gw_out, r->gb_out};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        ffnrt_tensor_destroy(ts[i]);
}

/* The device's gradients, in the reference's layout (gated: gate rows then
 * value rows). */
static void read_gradients(const train_case *c, const train_run *r, float *const out[GRADS])
{
    size_t d = (size_t)c->d, h = (size_t)c->h;
    int split = c->kind == FFNRT_FFN_GATED && !c->stacked;
    download(r->dx, out[G_DX], (size_t)c->t * d);
    download(r->gw_in, out[G_W_IN], (split ? h : in_rows(c)) * d);
    if (split)
        download(r->gw_value, out[G_W_IN] + h * d, h * d);
    download(r->gw_out, out[G_W_OUT], d * h);
    if (c->bias) {
        download(r->gb_in, out[G_B_IN], split ? h : in_rows(c));
        if (split)
            download(r->gb_value, out[G_B_IN] + h, h);
        download(r->gb_out, out[G_B_OUT], d);
    }
}

static const char *const grad_names[GRADS] = {"dx", "dW_in (gate, value)", "db_in", "dW_out", "db_out"};

/* The device's gradients against the reference, each within its bound. */
static void expect_gradients(ffnrt_backend backend, const train_case *c, const train_run *r, const train_data *f)
{
    float *got[GRADS];
    for (int k = 0; k < GRADS; k++) {
        got[k] = malloc(f->gn[k] * sizeof(float));
        cr_assert(got[k]);
    }
    read_gradients(c, r, got);
    double bound = bound_for(c);
    for (int k = 0; k < GRADS; k++) {
        if (!c->bias && (k == G_B_IN || k == G_B_OUT))
            continue;
        double err = test_rel_error(got[k], f->g[k], f->gn[k]);
        cr_expect_leq(err, bound, "%s %s phi=%d %s d=%d h=%d t=%d bias=%d stacked=%d: %s error %.3g > bound %.3g",
                      ffnrt_backend_name(backend), c->kind == FFNRT_FFN_GATED ? "gated" : "dense",
                      c->phi, ffnrt_dtype_name(c->dtype), c->d, c->h, c->t, c->bias, c->stacked, grad_names[k], err,
                      bound);
    }
    for (int k = 0; k < GRADS; k++)
        free(got[k]);
}

static void run_case(ffnrt_context *ctx, ffnrt_backend backend, const train_case *c)
{
    train_data f = make_data(c);
    train_run r = make_run(ctx, c, &f);
    cr_assert_eq(ffnrt_ffn_forward_train(r.layer, r.x, r.y), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_assert_eq(ffnrt_ffn_backward(r.layer, r.x, r.dy, r.dx, &r.grads, 0), FFNRT_OK, "%s",
                 ffnrt_last_error_message());
    expect_gradients(backend, c, &r, &f);
    free_run(&r);
    free_data(&f);
}

/* ------------------------------------------------------------------ tests */

/* Every dense activation (PReLU's learned slopes are not a layer's),
 * biases on and off, tokens 5 and 33. */
static void every_dense_fp32(ffnrt_context *ctx, ffnrt_backend backend)
{
    int n = 0;
    for (int a = 0; a < FFNRT_ACT_COUNT; a++) {
        if (a == FFNRT_ACT_PRELU)
            continue;
        train_case c = {FFNRT_FFN_DENSE, a, FFNRT_DTYPE_F32, 24, 40, n % 2 ? 5 : 33, n % 2, 0};
        run_case(ctx, backend, &c);
        n++;
    }
}

/* Every GLU kind; biases, stacked weights and tokens cycling. */
static void every_gated_fp32(ffnrt_context *ctx, ffnrt_backend backend)
{
    for (int k = 0; k < FFNRT_GLU_COUNT; k++) {
        train_case c = {FFNRT_FFN_GATED, k, FFNRT_DTYPE_F32, 24, 40, k % 2 ? 5 : 33, (k + 1) % 2, k % 3 == 1};
        run_case(ctx, backend, &c);
    }
}

BACKEND_PARAMETERS(train, dense_fp32)
ParameterizedTest(ffnrt_backend *backend, train, dense_fp32, .timeout = 900)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    if (!ctx)
        return;
    every_dense_fp32(ctx, *backend);
    test_context_done(ctx);
}

BACKEND_PARAMETERS(train, gated_fp32)
ParameterizedTest(ffnrt_backend *backend, train, gated_fp32, .timeout = 900)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    if (!ctx)
        return;
    every_gated_fp32(ctx, *backend);
    /* Widths past a transpose's tile, whole tiles and partial ones: rows
     * of a multiple of 4 elements (moved as 4 x 4 blocks where the driver
     * prefers them) and not; and matrices of whole tiles only (64 x 32). */
    static const train_case wide[] = {
        {FFNRT_FFN_GATED, FFNRT_SWIGLU, FFNRT_DTYPE_F32, 200, 132, 64, 1, 1},
        {FFNRT_FFN_GATED, FFNRT_SWIGLU, FFNRT_DTYPE_F32, 128, 64, 64, 0, 0},
        {FFNRT_FFN_DENSE, FFNRT_ACT_GELU, FFNRT_DTYPE_F32, 64, 128, 64, 1, 0},
        {FFNRT_FFN_DENSE, FFNRT_ACT_GELU, FFNRT_DTYPE_F32, 200, 132, 33, 0, 0},
        {FFNRT_FFN_DENSE, FFNRT_ACT_RELU, FFNRT_DTYPE_F32, 198, 130, 17, 1, 0},
    };
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
        run_case(ctx, *backend, &wide[i]);
    test_context_done(ctx);
}

BACKEND_PARAMETERS(train, sixteen_bit)
ParameterizedTest(ffnrt_backend *backend, train, sixteen_bit, .timeout = 900)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    if (!ctx)
        return;
    /* fp16 and bf16 storage, odd widths (16-bit words shared across rows
     * in every transpose and product), and widths past a product's tile
     * (whole 16-bit tiles stored from registers, a partial one after). */
    static const train_case cases[] = {
        {FFNRT_FFN_DENSE, FFNRT_ACT_GELU, FFNRT_DTYPE_F16, 24, 40, 33, 1, 0},
        {FFNRT_FFN_GATED, FFNRT_SWIGLU, FFNRT_DTYPE_F16, 23, 41, 7, 1, 1},
        {FFNRT_FFN_DENSE, FFNRT_ACT_SILU, FFNRT_DTYPE_BF16, 23, 41, 7, 0, 0},
        {FFNRT_FFN_GATED, FFNRT_GEGLU, FFNRT_DTYPE_BF16, 24, 40, 33, 1, 0},
        {FFNRT_FFN_GATED, FFNRT_SWIGLU, FFNRT_DTYPE_F16, 200, 130, 33, 1, 0},
        {FFNRT_FFN_DENSE, FFNRT_ACT_GELU, FFNRT_DTYPE_BF16, 200, 130, 64, 0, 0},
        {FFNRT_FFN_DENSE, FFNRT_ACT_SILU, FFNRT_DTYPE_F16, 64, 128, 64, 1, 0}, /* whole tiles only */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(ctx, *backend, &cases[i]);
    test_context_done(ctx);
}

/* The plan's "ffn.training.backward" choice for case c: "fused" or
 * "unfused" (the caller frees nothing; NULL: no such item). */
static int plan_backward_fused(ffnrt_context *ctx, const train_case *c)
{
    ffnrt_ffn_desc desc = case_desc(c);
    ffnrt_plan *plan = NULL;
    cr_assert_eq(ffnrt_ffn_plan(ctx, &desc, c->t, &plan), FFNRT_OK, "%s", ffnrt_last_error_message());
    const char *choice = ffnrt_plan_choice(plan, "ffn.training.backward");
    cr_assert(choice, "the plan has no ffn.training.backward item:\n%s", ffnrt_plan_text(plan));
    int fused = strcmp(choice, "fused") == 0;
    cr_assert(fused || strcmp(choice, "unfused") == 0, "ffn.training.backward: %s", choice);
    ffnrt_plan_destroy(plan);
    return fused;
}

/* The fused backward (ffn.backward forced fused): the activation's or the
 * gating's gradient applied in the epilogue of dy·W_out (gemm.kernel's
 * ACT_GRAD, GLU_GRAD), for every dense activation and every GLU kind, and
 * in 16-bit storage: odd widths, whose output words are shared between a
 * tile's rows (the atomic halves, both outputs of the gating), and widths
 * past a tile (whole words from registers, then a partial tile). CPU
 * devices take the element-wise pass by default (the plan says why), GPUs
 * and the GPU profiles the epilogue; forcing either is the plan's word. */
BACKEND_PARAMETERS(train, fused_backward)
ParameterizedTest(ffnrt_backend *backend, train, fused_backward, .timeout = 900)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    if (!ctx)
        return;
    const train_case probe = {FFNRT_FFN_GATED, FFNRT_SWIGLU, FFNRT_DTYPE_F32, 24, 40, 33, 0, 0};
    ffnrt_device_info info;
    cr_assert_eq(ffnrt_context_get_device_info(ctx, &info), FFNRT_OK);
    cr_expect_eq(plan_backward_fused(ctx, &probe), info.type != FFNRT_DEVICE_TYPE_CPU,
                 "%s: the unforced choice is the element-wise pass on CPU devices only", ffnrt_backend_name(*backend));
    cr_assert_eq(ffnrt_context_force(ctx, "ffn.backward", "unfused"), FFNRT_OK);
    cr_expect(!plan_backward_fused(ctx, &probe), "forced unfused");
    cr_assert_eq(ffnrt_context_force(ctx, "ffn.backward", "fused"), FFNRT_OK);
    cr_expect(plan_backward_fused(ctx, &probe), "forced fused");
    every_dense_fp32(ctx, *backend);
    every_gated_fp32(ctx, *backend);
    static const train_case sixteen[] = {
        {FFNRT_FFN_DENSE, FFNRT_ACT_GELU, FFNRT_DTYPE_F16, 23, 41, 7, 1, 0},
        {FFNRT_FFN_GATED, FFNRT_SWIGLU, FFNRT_DTYPE_F16, 23, 41, 7, 1, 1},
        {FFNRT_FFN_GATED, FFNRT_GEGLU, FFNRT_DTYPE_BF16, 200, 130, 33, 0, 0},
    };
    for (size_t i = 0; i < sizeof sixteen / sizeof sixteen[0]; i++)
        run_case(ctx, *backend, &sixteen[i]);
    test_context_done(ctx);
}

/* ffnrt_loss_cross_entropy of the rows x classes logits z (zt on the
 * device) against a double reference: the value within 1e-6, the
 * gradient (into dz) normwise within 1e-5 in fp32 and 4 u16 in fp16. */
static void check_cross_entropy(ffnrt_context *ctx, ffnrt_dtype dt, const ffnrt_tensor *zt, const float *z,
                                const int32_t *labels, int rows, int classes, float scale, ffnrt_tensor *dz,
                                double *loss)
{
    size_t n = (size_t)rows * (size_t)classes;
    double *want = malloc(n * sizeof *want), ref = 0;
    float *got = malloc(n * sizeof *got);
    cr_assert(want && got);
    cr_assert_eq(ffnrt_loss_cross_entropy(ctx, zt, labels, scale, dz, loss), FFNRT_OK, "%s",
                 ffnrt_last_error_message());
    for (int r = 0; r < rows; r++) {
        const float *zr = z + (size_t)r * classes;
        double mx = -INFINITY, s = 0;
        for (int c = 0; c < classes; c++)
            mx = fmax(mx, zr[c]);
        for (int c = 0; c < classes; c++)
            s += exp(zr[c] - mx);
        double lse = mx + log(s);
        ref += lse - zr[labels[r]];
        for (int c = 0; c < classes; c++)
            want[(size_t)r * classes + c] = scale * (exp(zr[c] - lse) - (c == labels[r])) / rows;
    }
    ref /= rows;
    cr_expect(fabs(*loss - ref) <= 1e-6 * ref, "%s %d x %d cross-entropy %.9g, reference %.9g", ffnrt_dtype_name(dt),
              rows, classes, *loss, ref);
    download(dz, got, n);
    double gbound = dt == FFNRT_DTYPE_F16 ? 4 * ldexp(1.0, -11) : 1e-5;
    cr_expect_leq(test_rel_error(got, want, n), gbound, "%s %d x %d: cross-entropy gradient", ffnrt_dtype_name(dt),
                  rows, classes);
    free(want);
    free(got);
}

/* Under a phone GPU's small buffer range, here lowered to 2 KiB so that
 * every weight, activation and gradient passes it: the transposes go in
 * blocks and the products in splits, and the gradients stay within their
 * bounds; an optimizer step with clipping sums its squares in chunks and
 * reports the host's norm; cross-entropy takes its logits in blocks of
 * rows. An odd token count in 16-bit storage pads the transposes' rows to
 * whole words (a zero in both operands of the weight gradients), and so
 * does an odd d_model or hidden (of the input gradients). A row of logits
 * past the range cannot split: a clear error. */
BACKEND_PARAMETERS(train, past_the_buffer_range)
ParameterizedTest(ffnrt_backend *backend, train, past_the_buffer_range, .timeout = 900)
{
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.max_buffer_range = 2048;
    ffnrt_context *ctx = test_context(*backend, &o);
    if (!ctx)
        return;
    static const train_case cases[] = {
        {FFNRT_FFN_DENSE, FFNRT_ACT_GELU, FFNRT_DTYPE_F32, 24, 40, 33, 1, 0},
        {FFNRT_FFN_GATED, FFNRT_SWIGLU, FFNRT_DTYPE_F32, 24, 40, 5, 0, 1},
        {FFNRT_FFN_GATED, FFNRT_GEGLU, FFNRT_DTYPE_F16, 24, 72, 34, 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(ctx, *backend, &cases[i]);

    /* Odd token counts in 16-bit storage: dense with biases, gated apart
     * (GELU: ReLU's step at 0 would flip its gradient where a
     * pre-activation rounds across 0 in fp16). */
    static const train_case odd_tokens[] = {
        {FFNRT_FFN_DENSE, FFNRT_ACT_GELU, FFNRT_DTYPE_F16, 24, 40, 33, 1, 0},
        {FFNRT_FFN_GATED, FFNRT_SWIGLU, FFNRT_DTYPE_BF16, 24, 40, 35, 0, 0},
    };
    for (size_t i = 0; i < sizeof odd_tokens / sizeof odd_tokens[0]; i++)
        run_case(ctx, *backend, &odd_tokens[i]);

    /* An odd hidden or d_model in 16-bit storage, its weights past the
     * range (W_in of 41 rows in fp16: 3280 bytes; the stacked [80, 33]
     * bf16 weight: 5280): the input gradients' K padded to whole words, Wᵀ
     * and dz transposed by blocks with the pad. */
    static const train_case odd_features[] = {
        {FFNRT_FFN_DENSE, FFNRT_ACT_GELU, FFNRT_DTYPE_F16, 40, 41, 34, 1, 0},
        {FFNRT_FFN_GATED, FFNRT_SWIGLU, FFNRT_DTYPE_BF16, 33, 40, 33, 1, 1},
    };
    for (size_t i = 0; i < sizeof odd_features / sizeof odd_features[0]; i++)
        run_case(ctx, *backend, &odd_features[i]);

    /* Cross-entropy over logits past the range: blocks of rows, a 16-bit
     * block's last word shared with the next block's first row (37
     * classes); a row past the range is refused. */
    for (int half = 0; half < 2; half++) {
        ffnrt_dtype dt = half ? FFNRT_DTYPE_F16 : FFNRT_DTYPE_F32;
        enum { R = 61, C = 37 }; /* 9 KB of fp32 logits: 5 blocks of 13 rows */
        static float z[R * C];
        int32_t labels[R];
        rng_state = 0xce5u + (uint32_t)half;
        for (int i = 0; i < R * C; i++)
            z[i] = round_to(dt, uniform(-6, 6));
        for (int r = 0; r < R; r++)
            labels[r] = (r * 7) % C;
        ffnrt_tensor *zt = upload(ctx, dt, z, R * C, R, C), *dz = upload(ctx, dt, NULL, 0, R, C);
        double loss = -1;
        check_cross_entropy(ctx, dt, zt, z, labels, R, C, 4.0f, dz, &loss);
        ffnrt_tensor_destroy(zt);
        ffnrt_tensor_destroy(dz);
    }
    ffnrt_tensor *wide = upload(ctx, FFNRT_DTYPE_F32, NULL, 0, 2, 600), *dwide = upload(ctx, FFNRT_DTYPE_F32, NULL, 0, 2, 600);
    int32_t two[2] = {0, 1};
    double wl = -1;
    cr_expect_eq(ffnrt_loss_cross_entropy(ctx, wide, two, 1.0f, dwide, &wl), FFNRT_ERROR_LIMIT_EXCEEDED);
    cr_expect(strstr(ffnrt_last_error_message(), "a row of 600 logit elements passes the device's buffer range") != NULL,
              "%s", ffnrt_last_error_message());
    ffnrt_tensor_destroy(wide);
    ffnrt_tensor_destroy(dwide);

    enum { N = 3001 }; /* 12 KB of fp32: six chunks of the lowered range */
    static float w0[N], g[N];
    double sq = 0;
    rng_state = 0x5eedu;
    for (int i = 0; i < N; i++) {
        w0[i] = uniform(-1, 1);
        g[i] = uniform(-1, 1);
        sq += (double)g[i] * g[i];
    }
    ffnrt_tensor *w = upload(ctx, FFNRT_DTYPE_F32, w0, N, N, 0), *gt = upload(ctx, FFNRT_DTYPE_F32, g, N, N, 0);
    ffnrt_optimizer_desc d = FFNRT_OPTIMIZER_DESC_INIT(FFNRT_OPTIMIZER_SGD);
    d.lr = 0.1f;
    d.max_grad_norm = 1.0f;
    ffnrt_optimizer *opt = NULL;
    cr_assert_eq(ffnrt_optimizer_create(ctx, &d, &opt), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_assert_eq(ffnrt_optimizer_add(opt, w, gt), FFNRT_OK, "%s", ffnrt_last_error_message());
    ffnrt_step_report rep;
    cr_assert_eq(ffnrt_optimizer_step(opt, &rep), FFNRT_OK, "%s", ffnrt_last_error_message());
    double norm = sqrt(sq), clip = d.max_grad_norm / (norm + 1e-6);
    cr_expect(fabs(rep.grad_norm - norm) <= 1e-6 * norm, "%s: norm %.9g in chunks, host %.9g",
              ffnrt_backend_name(*backend), rep.grad_norm, norm);
    float got[N];
    download(w, got, N);
    int wrong = 0;
    for (int i = 0; i < N; i++) {
        double want = w0[i] - 0.1 * (double)(float)clip * g[i];
        wrong += !(fabs(got[i] - want) <= 1e-6 * fabs(want) + 1e-7);
    }
    cr_expect_eq(wrong, 0, "%s: %d of %d parameters off after a clipped step", ffnrt_backend_name(*backend), wrong, N);
    ffnrt_optimizer_destroy(opt);
    ffnrt_tensor_destroy(w);
    ffnrt_tensor_destroy(gt);
    test_context_done(ctx);
}

/* The same inputs give the same bits; FFNRT_GRADIENTS_ACCUMULATE adds to
 * the gradients (twice one gradient is exact) and leaves dx overwritten. */
static void read_bits(const ffnrt_tensor *t, uint32_t **out)
{
    size_t bytes = ffnrt_tensor_bytes(t);
    *out = malloc(bytes + 4);
    cr_assert(*out);
    cr_assert_eq(ffnrt_tensor_read(t, *out, bytes), FFNRT_OK, "%s", ffnrt_last_error_message());
}

BACKEND_PARAMETERS(train, deterministic_and_accumulating)
ParameterizedTest(ffnrt_backend *backend, train, deterministic_and_accumulating, .timeout = 900)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    if (!ctx)
        return;
    /* fp32, and fp16, whose products store 16-bit words: whole ones from
     * registers or a tile where its columns are all in range, else word by
     * word through shared memory; 200 x 130 has whole tiles and a partial
     * last one on every device's blocks. 24 x 40 in fp16 takes the weight
     * gradients on K-major operands where the device has them (lavapipe:
     * gemm_outer.inc, its 16-bit stores), 200 x 130 the transposes.
     * Accumulating rounds v + r (r the first gradient, v its fp32 sum) to
     * 2r exactly, so twice the gradient holds to the bit in both. */
    static const train_case cases[] = {{FFNRT_FFN_GATED, FFNRT_SWIGLU, FFNRT_DTYPE_F32, 24, 40, 33, 1, 0},
                                       {FFNRT_FFN_GATED, FFNRT_SWIGLU, FFNRT_DTYPE_F16, 200, 130, 33, 1, 0},
                                       {FFNRT_FFN_GATED, FFNRT_SWIGLU, FFNRT_DTYPE_F16, 24, 40, 33, 1, 0}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        train_case c = cases[ci];
        train_data f = make_data(&c);
        train_run r = make_run(ctx, &c, &f);
        ffnrt_tensor *outs[] = {r.dx, r.gw_in, r.gb_in, r.gw_value, r.gb_value, r.gw_out, r.gb_out};
        enum { OUTS = sizeof outs / sizeof outs[0] };
        uint32_t *first[OUTS], *again[OUTS];
        for (int pass = 0; pass < 2; pass++) {
            cr_assert_eq(ffnrt_ffn_forward_train(r.layer, r.x, r.y), FFNRT_OK, "%s", ffnrt_last_error_message());
            cr_assert_eq(ffnrt_ffn_backward(r.layer, r.x, r.dy, r.dx, &r.grads, 0), FFNRT_OK, "%s",
                         ffnrt_last_error_message());
            for (int i = 0; i < OUTS; i++)
                read_bits(outs[i], pass ? &again[i] : &first[i]);
        }
        for (int i = 0; i < OUTS; i++) {
            cr_expect(memcmp(first[i], again[i], ffnrt_tensor_bytes(outs[i])) == 0,
                      "%s %s: output %d differs between two backwards of the same inputs", ffnrt_backend_name(*backend),
                      ffnrt_dtype_name(c.dtype), i);
            free(again[i]);
            free(first[i]);
        }
        float *once[OUTS];
        for (int i = 0; i < OUTS; i++) {
            size_t n = ffnrt_tensor_numel(outs[i]);
            once[i] = malloc(n * sizeof *once[i] + 4);
            cr_assert(once[i]);
            download(outs[i], once[i], n);
        }
        cr_assert_eq(ffnrt_ffn_backward(r.layer, r.x, r.dy, r.dx, &r.grads, FFNRT_GRADIENTS_ACCUMULATE), FFNRT_OK,
                     "%s", ffnrt_last_error_message());
        for (int i = 0; i < OUTS; i++) {
            size_t n = ffnrt_tensor_numel(outs[i]), wrong = 0;
            float *twice = malloc(n * sizeof *twice + 4);
            cr_assert(twice);
            download(outs[i], twice, n);
            for (size_t j = 0; j < n; j++)
                wrong += i == 0 ? twice[j] != once[i][j] : twice[j] != 2.0f * once[i][j];
            cr_expect_eq(wrong, 0, "%s %s: output %d: %zu of %zu elements are not %s", ffnrt_backend_name(*backend),
                         ffnrt_dtype_name(c.dtype), i, wrong, n, i == 0 ? "dx again (never accumulated)" : "twice the gradient");
            free(twice);
            free(once[i]);
        }
        free_run(&r);
        free_data(&f);
    }
    test_context_done(ctx);
}

/* FFNRT_GRADIENTS_RECOMPUTE: after a plain (fused where chosen) forward or
 * none, the backward recomputes the intermediates; its gradients are the
 * bits a training forward's backward gives, and the layer holds no device
 * memory past the call (the context's in-use bytes come back exactly to
 * what the weights and the caller's tensors take). */
BACKEND_PARAMETERS(train, recompute)
ParameterizedTest(ffnrt_backend *backend, train, recompute, .timeout = 900)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    if (!ctx)
        return;
    static const train_case cases[] = {
        {FFNRT_FFN_DENSE, FFNRT_ACT_GELU, FFNRT_DTYPE_F32, 24, 40, 33, 1, 0},
        {FFNRT_FFN_GATED, FFNRT_SWIGLU, FFNRT_DTYPE_F32, 24, 40, 5, 0, 0},
        {FFNRT_FFN_GATED, FFNRT_GEGLU, FFNRT_DTYPE_F16, 23, 41, 7, 1, 1},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const train_case *c = &cases[ci];
        train_data f = make_data(c);
        train_run r = make_run(ctx, c, &f);
        ffnrt_tensor *outs[] = {r.dx, r.gw_in, r.gb_in, r.gw_value, r.gb_value, r.gw_out, r.gb_out};
        enum { OUTS = sizeof outs / sizeof outs[0] };
        uint32_t *recomputed[OUTS] = {0}, *kept[OUTS] = {0};
        uint64_t held = 0, after = 0, peak = 0;
        cr_assert_eq(ffnrt_context_memory(ctx, &held, &peak, 0), FFNRT_OK);
        for (int pass = 0; pass < 2; pass++) {
            /* pass 0: no forward at all; pass 1: after the plain forward. */
            if (pass)
                cr_assert_eq(ffnrt_ffn_forward(r.layer, r.x, r.y), FFNRT_OK, "%s", ffnrt_last_error_message());
            cr_assert_eq(ffnrt_ffn_backward(r.layer, r.x, r.dy, r.dx, &r.grads, FFNRT_GRADIENTS_RECOMPUTE),
                         FFNRT_OK, "%s", ffnrt_last_error_message());
            cr_assert_eq(ffnrt_context_memory(ctx, &after, &peak, 0), FFNRT_OK);
            cr_expect_eq(after, held, "%s case %zu pass %d: %llu bytes in use after a recomputing backward, "
                         "%llu before it: the layer kept something", ffnrt_backend_name(*backend), ci, pass,
                         (unsigned long long)after, (unsigned long long)held);
        }
        cr_expect_gt(peak, held, "the backward's buffers count at the peak");
        /* Nothing kept: a backward that reads a training forward's has none. */
        cr_expect_eq(ffnrt_ffn_backward(r.layer, r.x, r.dy, r.dx, &r.grads, 0), FFNRT_ERROR_INVALID_ARGUMENT);
        cr_expect(strstr(ffnrt_last_error_message(), "FFNRT_GRADIENTS_RECOMPUTE"), "%s", ffnrt_last_error_message());
        for (int i = 0; i < OUTS; i++)
            if (outs[i])
                read_bits(outs[i], &recomputed[i]);
        expect_gradients(*backend, c, &r, &f);
        cr_assert_eq(ffnrt_ffn_forward_train(r.layer, r.x, r.y), FFNRT_OK, "%s", ffnrt_last_error_message());
        cr_assert_eq(ffnrt_ffn_backward(r.layer, r.x, r.dy, r.dx, &r.grads, 0), FFNRT_OK, "%s",
                     ffnrt_last_error_message());
        for (int i = 0; i < OUTS; i++) {
            if (!outs[i])
                continue;
            read_bits(outs[i], &kept[i]);
            cr_expect(memcmp(recomputed[i], kept[i], ffnrt_tensor_bytes(outs[i])) == 0,
                      "%s case %zu: output %d differs between the recomputing and the keeping backward",
                      ffnrt_backend_name(*backend), ci, i);
            free(recomputed[i]);
            free(kept[i]);
        }
        free_run(&r);
        free_data(&f);
    }
    test_context_done(ctx);
}

/* Refusals, each with its message and nothing written. */
BACKEND_PARAMETERS(train, errors)
ParameterizedTest(ffnrt_backend *backend, train, errors, .timeout = 900)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    if (!ctx)
        return;
    train_case c = {FFNRT_FFN_DENSE, FFNRT_ACT_RELU, FFNRT_DTYPE_F32, 24, 40, 5, 0, 0};
    train_data f = make_data(&c);
    train_run r = make_run(ctx, &c, &f);
    /* No training forward yet, then a plain forward that replaced it. */
    cr_expect_eq(ffnrt_ffn_backward(r.layer, r.x, r.dy, r.dx, &r.grads, 0), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_expect(strstr(ffnrt_last_error_message(), "ffnrt_ffn_forward_train"), "%s", ffnrt_last_error_message());
    cr_assert_eq(ffnrt_ffn_forward_train(r.layer, r.x, r.y), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_assert_eq(ffnrt_ffn_forward(r.layer, r.x, r.y), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_expect_eq(ffnrt_ffn_backward(r.layer, r.x, r.dy, r.dx, &r.grads, 0), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(ffnrt_ffn_forward_train(r.layer, r.x, r.y), FFNRT_OK, "%s", ffnrt_last_error_message());
    /* Other token counts than the forward's. */
    int64_t shape2[2] = {4, c.d};
    ffnrt_tensor *x4 = NULL, *dy4 = NULL;
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape2, &x4), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape2, &dy4), FFNRT_OK);
    cr_expect_eq(ffnrt_ffn_backward(r.layer, x4, dy4, NULL, NULL, 0), FFNRT_ERROR_INVALID_ARGUMENT);
    /* Bad arguments. */
    cr_expect_eq(ffnrt_ffn_backward(NULL, r.x, r.dy, r.dx, &r.grads, 0), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_expect_eq(ffnrt_ffn_backward(r.layer, NULL, r.dy, r.dx, &r.grads, 0), FFNRT_ERROR_INVALID_ARGUMENT);
    /* A refused recomputing call keeps the training forward's intermediates
     * (the good call below reads them). */
    cr_expect_eq(ffnrt_ffn_backward(r.layer, r.x, r.dy, r.x, &r.grads, FFNRT_GRADIENTS_RECOMPUTE),
                 FFNRT_ERROR_INVALID_ARGUMENT);
    cr_expect_eq(ffnrt_ffn_backward(r.layer, r.x, r.dy, r.dx, &r.grads, 0x80u), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_expect(strstr(ffnrt_last_error_message(), "unknown flags 0x80"), "%s", ffnrt_last_error_message());
    cr_expect_eq(ffnrt_ffn_backward(r.layer, r.x, r.dy, r.x, &r.grads, 0), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_expect(strstr(ffnrt_last_error_message(), "overlap"), "%s", ffnrt_last_error_message());
    ffnrt_ffn_gradients g = r.grads;
    g.w_out = r.gw_in; /* [h, d] where [d, h] is due */
    cr_expect_eq(ffnrt_ffn_backward(r.layer, r.x, r.dy, r.dx, &g, 0), FFNRT_ERROR_SHAPE_MISMATCH);
    g = r.grads;
    g.b_out = x4; /* the layer has no biases */
    cr_expect_eq(ffnrt_ffn_backward(r.layer, r.x, r.dy, r.dx, &g, 0), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_expect(strstr(ffnrt_last_error_message(), "desc.bias is 0"), "%s", ffnrt_last_error_message());
    g = r.grads;
    g.w_gate = r.gw_in; /* a dense layer has no gate */
    cr_expect_eq(ffnrt_ffn_backward(r.layer, r.x, r.dy, r.dx, &g, 0), FFNRT_ERROR_INVALID_ARGUMENT);
    g = r.grads;
    g.w_out = r.gw_in; /* two outputs in one tensor */
    g.w_in = r.gw_in;
    cr_expect_neq(ffnrt_ffn_backward(r.layer, r.x, r.dy, r.dx, &g, 0), FFNRT_OK);
    /* Still whole: a good call after the refusals gives the reference. */
    cr_assert_eq(ffnrt_ffn_backward(r.layer, r.x, r.dy, r.dx, &r.grads, 0), FFNRT_OK, "%s", ffnrt_last_error_message());
    float *dx = malloc(f.gn[G_DX] * sizeof(float));
    cr_assert(dx);
    download(r.dx, dx, f.gn[G_DX]);
    cr_expect_leq(test_rel_error(dx, f.g[G_DX], f.gn[G_DX]), bound_for(&c));
    free(dx);
    ffnrt_tensor_destroy(x4);
    ffnrt_tensor_destroy(dy4);
    free_run(&r);
    free_data(&f);

    /* Quantized layers are inference-only. */
    ffnrt_ffn_desc qd = FFNRT_FFN_DESC_INIT(FFNRT_FFN_DENSE, 32, 32);
    qd.format_in = qd.format_out = FFNRT_WEIGHT_Q8_0;
    float wf[32 * 32];
    for (int i = 0; i < 32 * 32; i++)
        wf[i] = (float)((i * 37) % 17 - 8) / 64.0f;
    size_t qb = 0;
    cr_assert_eq(ffnrt_weight_bytes(FFNRT_WEIGHT_Q8_0, 32, 32, &qb), FFNRT_OK);
    void *q = malloc(qb);
    cr_assert(q);
    cr_assert_eq(ffnrt_quantize(FFNRT_WEIGHT_Q8_0, wf, 32, 32, q, qb), FFNRT_OK);
    ffnrt_ffn_weights qw = {0};
    qw.w_in = qw.w_out = q;
    ffnrt_ffn *ql = NULL;
    cr_assert_eq(ffnrt_ffn_create(ctx, &qd, &qw, &ql), FFNRT_OK, "%s", ffnrt_last_error_message());
    int64_t qs[2] = {2, 32};
    ffnrt_tensor *qx = NULL, *qy = NULL;
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, qs, &qx), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, qs, &qy), FFNRT_OK);
    cr_expect_eq(ffnrt_ffn_forward_train(ql, qx, qy), FFNRT_ERROR_UNSUPPORTED);
    cr_expect(strstr(ffnrt_last_error_message(), "inference-only"), "%s", ffnrt_last_error_message());
    cr_expect_eq(ffnrt_ffn_backward(ql, qx, qy, NULL, NULL, 0), FFNRT_ERROR_UNSUPPORTED);
    ffnrt_tensor_destroy(qx);
    ffnrt_tensor_destroy(qy);
    ffnrt_ffn_destroy(ql);
    free(q);
    test_context_done(ctx);
}

/* The reference's analytic gradients against central differences of its
 * own double forward, for L = sum(dy * y): a few elements of every output,
 * every kind (host only). */
Test(train_reference, finite_differences)
{
    for (int kind = 0; kind < 2; kind++) {
        int kinds = kind ? FFNRT_GLU_COUNT : FFNRT_ACT_COUNT;
        for (int p = 0; p < kinds; p++) {
            if (!kind && p == FFNRT_ACT_PRELU)
                continue;
            train_case c = {kind ? FFNRT_FFN_GATED : FFNRT_FFN_DENSE, p, FFNRT_DTYPE_F32, 6, 10, 3, 1, 0};
            train_data f = make_data(&c);
            size_t d = 6, h = 10, t = 3, r = in_rows(&c);
            double *x = malloc(t * d * sizeof *x), *pre = malloc(t * r * sizeof *pre), *u = malloc(t * h * sizeof *u);
            double *y = malloc(t * d * sizeof *y);
            cr_assert(x && pre && u && y);
            /* Perturbs one value (an input or a parameter), returns L. */
            int arrays[GRADS] = {X, W_IN, B_IN, W_OUT, B_OUT};
            for (int k = 0; k < GRADS; k++)
                for (size_t e = 0; e < f.gn[k]; e += f.gn[k] / 3 + 1) {
                    float *v = &f.a[arrays[k]][e];
                    float keep = *v;
                    /* The steps as the floats take them. */
                    double step = 1e-3, loss[2], taken[2];
                    for (int s = 0; s < 2; s++) {
                        *v = (float)(keep + (s ? -step : step));
                        taken[s] = (double)*v - keep;
                        for (size_t i = 0; i < t * d; i++)
                            x[i] = f.a[X][i];
                        ref_forward_pass(&c, f.a, x, pre, u, y);
                        loss[s] = 0;
                        for (size_t i = 0; i < t * d; i++)
                            loss[s] += (double)f.a[DY][i] * y[i];
                    }
                    *v = keep;
                    double fd = (loss[0] - loss[1]) / (taken[0] - taken[1]);
                    cr_expect(fabs(fd - f.g[k][e]) <= 2e-3 * (1 + fabs(f.g[k][e])),
                              "%s %d: %s[%zu]: finite difference %.6g, reference %.6g", kind ? "glu" : "act", p,
                              grad_names[k], e, fd, f.g[k][e]);
                }
            free(x);
            free(pre);
            free(u);
            free(y);
            free_data(&f);
        }
    }
}

/* ------------------------------------------------------------- optimizer */

/* PyTorch's rules in double, one element. */
typedef struct ref_state {
    double w, m, v;
} ref_state;

static void ref_update(const ffnrt_optimizer_desc *d, ref_state *s, double g, uint64_t t)
{
    if (d->kind == FFNRT_OPTIMIZER_ADAMW) {
        s->w *= 1.0 - (double)d->lr * d->weight_decay;
        s->m = d->beta1 * s->m + (1.0 - d->beta1) * g;
        s->v = d->beta2 * s->v + (1.0 - d->beta2) * g * g;
        double bc1 = 1.0 - pow(d->beta1, (double)t), bc2 = 1.0 - pow(d->beta2, (double)t);
        s->w -= (double)d->lr / bc1 * s->m / (sqrt(s->v) / sqrt(bc2) + d->eps);
    } else {
        g += (double)d->weight_decay * s->w;
        s->m = d->momentum > 0 ? d->momentum * s->m + g : g;
        s->w -= (double)d->lr * s->m;
    }
}

/* The optimizer tests' three rules: SGD with momentum and weight decay,
 * plain SGD, AdamW with weight decay. */
static void three_rules(ffnrt_optimizer_desc d[3])
{
    d[0] = (ffnrt_optimizer_desc)FFNRT_OPTIMIZER_DESC_INIT(FFNRT_OPTIMIZER_SGD);
    d[1] = (ffnrt_optimizer_desc)FFNRT_OPTIMIZER_DESC_INIT(FFNRT_OPTIMIZER_SGD);
    d[2] = (ffnrt_optimizer_desc)FFNRT_OPTIMIZER_DESC_INIT(FFNRT_OPTIMIZER_ADAMW);
    d[0].lr = 0.1f, d[0].momentum = 0.9f, d[0].weight_decay = 0.01f;
    d[1].lr = 0.05f;
    d[2].lr = 0.01f, d[2].weight_decay = 0.1f;
}

/* Three steps of each rule on a parameter in fp32, fp16 and bf16 (master
 * weights), the second step clipped: parameters against the reference
 * (fp32: relative 1e-5, the state's fp32 roundings over three steps;
 * 16-bit: within one ulp of the reference rounded), the report's norm
 * and clip factor against the host's. */
BACKEND_PARAMETERS(train, optimizer_steps)
ParameterizedTest(ffnrt_backend *backend, train, optimizer_steps, .timeout = 900)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    if (!ctx)
        return;
    /* Odd: a 16-bit parameter's last word is half. Past a whole group's
     * words in 16-bit storage too (4 a work-item, up to 1024 work-items
     * a group), so that whole groups run beside the last, partial one. */
    enum { N = 8195 };
    ffnrt_optimizer_desc descs[3];
    three_rules(descs);
    static const ffnrt_dtype dtypes[] = {FFNRT_DTYPE_F32, FFNRT_DTYPE_F16, FFNRT_DTYPE_BF16};
    for (int k = 0; k < 3; k++)
        for (size_t di = 0; di < sizeof dtypes / sizeof dtypes[0]; di++) {
            ffnrt_optimizer_desc d = descs[k];
            /* Between the norms of the small steps' gradients (about
             * 0.06 sqrt(N)) and the large one's (about 1.2 sqrt(N)). */
            d.max_grad_norm = 0.1f * sqrtf((float)N);
            d.grad_zero_threshold = 0.05f;
            ffnrt_dtype dt = dtypes[di];
            int half = dt != FFNRT_DTYPE_F32;
            rng_state = 0x1234u + (uint32_t)k;
            float w0[N], g[N];
            ref_state ref[N];
            for (int i = 0; i < N; i++) {
                w0[i] = round_to(dt, uniform(-1, 1));
                ref[i] = (ref_state){w0[i], 0, 0};
            }
            ffnrt_tensor *w = upload(ctx, dt, w0, N, N, 0), *gt = upload(ctx, dt, NULL, 0, N, 0);
            ffnrt_optimizer *opt = NULL;
            cr_assert_eq(ffnrt_optimizer_create(ctx, &d, &opt), FFNRT_OK, "%s", ffnrt_last_error_message());
            cr_assert_eq(ffnrt_optimizer_add(opt, w, gt), FFNRT_OK, "%s", ffnrt_last_error_message());
            for (uint64_t t = 1; t <= 3; t++) {
                /* The second step's gradient is large: clipped. */
                double sq = 0;
                for (int i = 0; i < N; i++) {
                    g[i] = round_to(dt, uniform(-1, 1) * (t == 2 ? 2.0f : 0.1f));
                    sq += (double)g[i] * g[i];
                }
                double norm = sqrt(sq), clip = norm > d.max_grad_norm ? d.max_grad_norm / (norm + 1e-6) : 1.0;
                cr_assert_eq(t == 2, clip < 1.0, "the test's clipping premise");
                upload_into(gt, dt, g, N);
                ffnrt_step_report r;
                cr_assert_eq(ffnrt_optimizer_step(opt, &r), FFNRT_OK, "%s", ffnrt_last_error_message());
                cr_expect_eq(r.steps, t);
                cr_expect(fabs(r.grad_norm - norm) <= 1e-6 * norm, "norm %.9g, host %.9g", r.grad_norm, norm);
                cr_expect(fabs(r.clip - clip) <= 1e-6, "clip %.9g, host %.9g", r.clip, clip);
                /* The statistics: this matrix's norm and near-zero share. */
                ffnrt_grad_stats gs;
                cr_assert_eq(ffnrt_optimizer_grad_stats(opt, 0, &gs), FFNRT_OK);
                size_t small = 0;
                for (int i = 0; i < N; i++)
                    small += fabsf(g[i]) <= 0.05f;
                cr_expect(fabs(gs.norm - norm) <= 1e-6 * norm && gs.elements == N && gs.non_finite == 0);
                cr_expect(fabs(gs.near_zero - (double)small / N) < 1e-12, "near zero %g, host %g", gs.near_zero,
                          (double)small / N);
                for (int i = 0; i < N; i++)
                    ref_update(&d, &ref[i], g[i] * (double)(float)clip, t);
            }
            /* Non-finite gradients, counted (every sums-of-squares form:
             * PoCL's runs count fp32 ones without branches), and refused
             * without loss scaling: nothing changes. */
            float before[N], got[N];
            download(w, before, N);
            g[3] = INFINITY, g[100] = -INFINITY, g[N - 1] = NAN;
            upload_into(gt, dt, g, N);
            ffnrt_step_report bad;
            cr_expect_eq(ffnrt_optimizer_step(opt, &bad), FFNRT_ERROR_NON_FINITE);
            ffnrt_grad_stats gs;
            cr_assert_eq(ffnrt_optimizer_grad_stats(opt, 0, &gs), FFNRT_OK);
            cr_expect_eq(gs.non_finite, 3, "%s %s: %llu non-finite gradients counted of 3", ffnrt_backend_name(*backend),
                         ffnrt_dtype_name(dt), (unsigned long long)gs.non_finite);
            download(w, got, N);
            cr_expect(memcmp(before, got, sizeof got) == 0, "a refused step changed the parameters");
            int wrong = 0;
            for (int i = 0; i < N; i++) {
                double want = half ? (double)round_to(dt, (float)ref[i].w) : ref[i].w;
                /* 16-bit: one unit in the last place (the fp32 master and the
                 * fp64 reference may round to neighbours). */
                double tol = dt == FFNRT_DTYPE_F16    ? ldexp(fabs(want) > 0x1p-14 ? fabs(want) : 0x1p-14, -10)
                             : dt == FFNRT_DTYPE_BF16 ? ldexp(fabs(want), -7)
                                                      : 1e-5 * fabs(want) + 1e-7;
                if (!(fabs(got[i] - want) <= tol) && wrong++ < 5)
                    cr_expect(0, "%s rule %d %s: w[%d] = %.9g, reference %.9g", ffnrt_backend_name(*backend), k,
                              ffnrt_dtype_name(dt), i, got[i], want);
            }
            cr_expect_eq(wrong, 0, "%d of %d parameters off", wrong, N);
            ffnrt_optimizer_destroy(opt);
            ffnrt_tensor_destroy(w);
            ffnrt_tensor_destroy(gt);
        }
    test_context_done(ctx);
}

/* Whole groups: on drivers that run both sides of a uniform branch
 * (llvmpipe) a parameter of whole groups is updated by a variant without
 * bounds tests, fp32 ones 8 words a work-item through 64-bit views
 * (int64_words=0 turns those off); elsewhere by the general one. Each rule
 * over N elements (whole groups on every device) and over N + 5 (a partial
 * last group) with the same first N parameters and gradients, the rest's
 * gradients 0 and no clipping: three steps give the same first N
 * parameters to the bit, with the 64-bit views and without, and the f16
 * parameters' master weights too. */
BACKEND_PARAMETERS(train, optimizer_whole_groups)
ParameterizedTest(ffnrt_backend *backend, train, optimizer_whole_groups, .timeout = 900)
{
    enum { N = 16384, EXTRA = 5, FORMS = 3 };
    static const char *const limits[FORMS] = {NULL, "int64_words=0", NULL};
    ffnrt_optimizer_desc descs[3];
    three_rules(descs);
    static const ffnrt_dtype dtypes[] = {FFNRT_DTYPE_F32, FFNRT_DTYPE_F16};
    static float w0[N + EXTRA], g[3][N + EXTRA], got[FORMS][N + EXTRA];
    for (int k = 0; k < 3; k++)
        for (size_t di = 0; di < sizeof dtypes / sizeof dtypes[0]; di++) {
            ffnrt_dtype dt = dtypes[di];
            rng_state = 0x5678u + (uint32_t)k;
            for (int i = 0; i < N + EXTRA; i++) {
                w0[i] = round_to(dt, uniform(-1, 1));
                for (int t = 0; t < 3; t++)
                    g[t][i] = i < N ? round_to(dt, uniform(-1, 1) * 0.1f) : 0.0f;
            }
            /* Forms: whole groups (as the device plans them), whole groups
             * without 64-bit words, a partial last group. */
            for (int form = 0; form < FORMS; form++) {
                size_t n = form == 2 ? N + EXTRA : N;
                ffnrt_context *ctx =
                    limits[form] ? test_context_with_limits(*backend, limits[form]) : test_context(*backend, NULL);
                if (!ctx)
                    return;
                ffnrt_tensor *w = upload(ctx, dt, w0, n, (int64_t)n, 0), *gt = upload(ctx, dt, NULL, 0, (int64_t)n, 0);
                ffnrt_optimizer *opt = NULL;
                cr_assert_eq(ffnrt_optimizer_create(ctx, &descs[k], &opt), FFNRT_OK, "%s",
                             ffnrt_last_error_message());
                cr_assert_eq(ffnrt_optimizer_add(opt, w, gt), FFNRT_OK, "%s", ffnrt_last_error_message());
                for (int t = 0; t < 3; t++) {
                    upload_into(gt, dt, g[t], n);
                    cr_assert_eq(ffnrt_optimizer_step(opt, NULL), FFNRT_OK, "%s", ffnrt_last_error_message());
                }
                download(w, got[form], n);
                ffnrt_optimizer_destroy(opt);
                ffnrt_tensor_destroy(w);
                ffnrt_tensor_destroy(gt);
                test_context_done(ctx);
            }
            for (int form = 1; form < FORMS; form++)
                cr_expect(memcmp(got[0], got[form], N * sizeof got[0][0]) == 0,
                          "%s rule %d %s: whole groups%s and %s differ", ffnrt_backend_name(*backend), k,
                          ffnrt_dtype_name(dt), "", form == 1 ? "without 64-bit words" : "a partial last group");
            /* And they moved: the update ran. */
            cr_expect(memcmp(got[0], w0, N * sizeof w0[0]) != 0, "no parameter changed");
        }
}

/* Loss scaling, by an injected overflow: a step whose gradients hold an
 * infinity changes nothing (parameters, master copy and moments, to the
 * bit) but halves the scale; scale_window clean steps double it; the
 * scale is divided out of the update. Without loss scaling the same step
 * is FFNRT_ERROR_NON_FINITE and changes nothing either. */
BACKEND_PARAMETERS(train, loss_scaling)
ParameterizedTest(ffnrt_backend *backend, train, loss_scaling, .timeout = 900)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    if (!ctx)
        return;
    enum { N = 64 };
    ffnrt_optimizer_desc d = FFNRT_OPTIMIZER_DESC_INIT(FFNRT_OPTIMIZER_ADAMW);
    d.lr = 0.01f;
    d.loss_scale = 1024.0f;
    d.scale_window = 2;
    float w0[N], g[N], ones[N];
    rng_state = 77;
    for (int i = 0; i < N; i++) {
        w0[i] = round_to(FFNRT_DTYPE_F16, uniform(-1, 1));
        ones[i] = 1.0f;
    }
    ffnrt_tensor *w = upload(ctx, FFNRT_DTYPE_F16, w0, N, N, 0), *gt = upload(ctx, FFNRT_DTYPE_F16, NULL, 0, N, 0);
    ffnrt_optimizer *opt = NULL;
    cr_assert_eq(ffnrt_optimizer_create(ctx, &d, &opt), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_assert_eq(ffnrt_optimizer_add(opt, w, gt), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_expect_eq(ffnrt_optimizer_loss_scale(opt), 1024.0f);
    /* A clean step: gradients of 1 carried at the scale; AdamW's first step
     * moves each weight by lr (m̂/√v̂ = 1), whatever the scale. */
    for (int i = 0; i < N; i++)
        g[i] = 1024.0f;
    upload_into(gt, FFNRT_DTYPE_F16, g, N);
    ffnrt_step_report r;
    cr_assert_eq(ffnrt_optimizer_step(opt, &r), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_expect(!r.skipped_now && r.loss_scale == 1024.0f && fabs(r.grad_norm - 8.0) < 1e-6, "norm %g", r.grad_norm);
    float after[N], again[N];
    download(w, after, N);
    for (int i = 0; i < N; i++)
        cr_expect(fabs(after[i] - round_to(FFNRT_DTYPE_F16, w0[i] - 0.01f)) <= ldexp(1.0, -10),
                  "w[%d] %g after one step from %g", i, after[i], w0[i]);
    /* The overflow: one infinite gradient. */
    g[5] = INFINITY;
    upload_into(gt, FFNRT_DTYPE_F16, g, N);
    cr_assert_eq(ffnrt_optimizer_step(opt, &r), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_expect(r.skipped_now && r.skipped == 1 && r.steps == 1, "skipped %d, %llu in all, %llu steps", r.skipped_now,
              (unsigned long long)r.skipped, (unsigned long long)r.steps);
    cr_expect(!isfinite(r.grad_norm));
    ffnrt_grad_stats gs;
    cr_assert_eq(ffnrt_optimizer_grad_stats(opt, 0, &gs), FFNRT_OK);
    cr_expect_eq(gs.non_finite, 1);
    cr_expect_eq(r.next_loss_scale, 512.0f);
    cr_expect_eq(ffnrt_optimizer_loss_scale(opt), 512.0f);
    download(w, again, N);
    cr_expect(memcmp(after, again, sizeof after) == 0, "a skipped step changed the parameters");
    /* The state did not move either: the next clean step, with the
     * gradients of the first, moves as AdamW's second step does. */
    for (int i = 0; i < N; i++)
        g[i] = 512.0f;
    upload_into(gt, FFNRT_DTYPE_F16, g, N);
    cr_assert_eq(ffnrt_optimizer_step(opt, &r), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_expect(!r.skipped_now && r.steps == 2 && r.next_loss_scale == 512.0f);
    download(w, again, N);
    for (int i = 0; i < N; i++)
        cr_expect(fabs(again[i] - round_to(FFNRT_DTYPE_F16, w0[i] - 0.02f)) <= ldexp(1.0, -9),
                  "w[%d] %g after two steps from %g", i, again[i], w0[i]);
    /* The second clean step in a row doubles the scale. */
    for (int i = 0; i < N; i++)
        g[i] = 512.0f;
    upload_into(gt, FFNRT_DTYPE_F16, g, N);
    cr_assert_eq(ffnrt_optimizer_step(opt, &r), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_expect_eq(r.next_loss_scale, 1024.0f);
    ffnrt_optimizer_destroy(opt);

    /* Without loss scaling: an error, and nothing changes. */
    d.loss_scale = 0;
    cr_assert_eq(ffnrt_optimizer_create(ctx, &d, &opt), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_assert_eq(ffnrt_optimizer_add(opt, w, gt), FFNRT_OK, "%s", ffnrt_last_error_message());
    download(w, after, N);
    g[0] = NAN;
    upload_into(gt, FFNRT_DTYPE_F16, g, N);
    cr_expect_eq(ffnrt_optimizer_step(opt, &r), FFNRT_ERROR_NON_FINITE);
    cr_expect(r.skipped_now);
    download(w, again, N);
    cr_expect(memcmp(after, again, sizeof after) == 0, "a refused step changed the parameters");
    /* Refusals. */
    cr_expect_eq(ffnrt_optimizer_add(opt, w, gt), FFNRT_ERROR_INVALID_ARGUMENT); /* twice the same parameter */
    cr_expect_eq(ffnrt_optimizer_add(opt, gt, gt), FFNRT_ERROR_INVALID_ARGUMENT);
    ffnrt_tensor *g32 = upload(ctx, FFNRT_DTYPE_F32, ones, N, N, 0);
    cr_expect_eq(ffnrt_optimizer_add(opt, w, g32), FFNRT_ERROR_DTYPE_MISMATCH);
    ffnrt_tensor_destroy(g32);
    cr_expect_eq(ffnrt_optimizer_set_lr(opt, -1.0f), FFNRT_ERROR_INVALID_ARGUMENT);
    ffnrt_optimizer_destroy(opt);
    ffnrt_optimizer_desc bad = FFNRT_OPTIMIZER_DESC_INIT(FFNRT_OPTIMIZER_ADAMW);
    bad.beta2 = 1.0f;
    cr_expect_eq(ffnrt_optimizer_create(ctx, &bad, &opt), FFNRT_ERROR_INVALID_ARGUMENT);
    bad = (ffnrt_optimizer_desc)FFNRT_OPTIMIZER_DESC_INIT(FFNRT_OPTIMIZER_SGD);
    bad.lr = NAN;
    cr_expect_eq(ffnrt_optimizer_create(ctx, &bad, &opt), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_expect_eq(ffnrt_optimizer_step(NULL, &r), FFNRT_ERROR_INVALID_ARGUMENT);
    ffnrt_tensor_destroy(w);
    ffnrt_tensor_destroy(gt);
    test_context_done(ctx);
}

/* ----------------------------------------------------------------- losses */

/* MSE and cross-entropy against double references: values within 1e-6
 * (fp32 sums of a few thousand terms), gradients normwise within 1e-5
 * (fp32) or 4 u16 (fp16: the stored logits and gradients' rounding);
 * logits of +-90 (exp overflows fp32 past 88.7: taken from the logits,
 * nothing overflows); 16-bit rows of odd length (words shared by two
 * rows); labels out of range refused. */
BACKEND_PARAMETERS(train, losses)
ParameterizedTest(ffnrt_backend *backend, train, losses, .timeout = 900)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    if (!ctx)
        return;
    for (int half = 0; half < 2; half++) {
        ffnrt_dtype dt = half ? FFNRT_DTYPE_F16 : FFNRT_DTYPE_F32;
        enum { R = 7, C = 37 };
        float z[R * C], tg[R * C], got[R * C];
        double want[R * C];
        int32_t labels[R];
        rng_state = 99u + (uint32_t)half;
        for (int i = 0; i < R * C; i++) {
            z[i] = round_to(dt, uniform(-4, 4));
            tg[i] = round_to(dt, uniform(-4, 4));
        }
        z[2 * C + 5] = 90.0f, z[2 * C + 6] = -90.0f; /* a row with logits past exp's range */
        for (int r = 0; r < R; r++)
            labels[r] = (r * 11) % C;
        labels[2] = 5;
        ffnrt_tensor *zt = upload(ctx, dt, z, R * C, R, C), *tt = upload(ctx, dt, tg, R * C, R, C);
        ffnrt_tensor *dt_ = upload(ctx, dt, NULL, 0, R, C);
        const float scale = 8.0f;
        double gbound = half ? 4 * ldexp(1.0, -11) : 1e-5;
        /* MSE. */
        double loss = -1, ref = 0;
        cr_assert_eq(ffnrt_loss_mse(ctx, zt, tt, scale, dt_, &loss), FFNRT_OK, "%s", ffnrt_last_error_message());
        for (int i = 0; i < R * C; i++) {
            double e = (double)z[i] - tg[i];
            ref += e * e;
            want[i] = scale * 2.0 * e / (R * C);
        }
        ref /= R * C;
        cr_expect(fabs(loss - ref) <= 1e-6 * ref, "%s mse %.9g, reference %.9g", ffnrt_dtype_name(dt), loss, ref);
        download(dt_, got, R * C);
        cr_expect_leq(test_rel_error(got, want, R * C), gbound, "%s: mse gradient", ffnrt_dtype_name(dt));
        /* Cross-entropy. */
        check_cross_entropy(ctx, dt, zt, z, labels, R, C, scale, dt_, &loss);
        /* The value alone, and refusals. */
        double alone = -1;
        cr_assert_eq(ffnrt_loss_cross_entropy(ctx, zt, labels, 1.0f, NULL, &alone), FFNRT_OK, "%s",
                     ffnrt_last_error_message());
        cr_expect_eq(alone, loss);
        labels[3] = C;
        cr_expect_eq(ffnrt_loss_cross_entropy(ctx, zt, labels, 1.0f, dt_, &loss), FFNRT_ERROR_INVALID_ARGUMENT);
        labels[3] = -1;
        cr_expect_eq(ffnrt_loss_cross_entropy(ctx, zt, labels, 1.0f, dt_, &loss), FFNRT_ERROR_INVALID_ARGUMENT);
        cr_expect_eq(ffnrt_loss_cross_entropy(ctx, zt, labels, 1.0f, zt, &loss), FFNRT_ERROR_INVALID_ARGUMENT);
        cr_expect_eq(ffnrt_loss_mse(ctx, zt, tt, 0.0f, dt_, &loss), FFNRT_ERROR_INVALID_ARGUMENT);
        ffnrt_tensor_destroy(zt);
        ffnrt_tensor_destroy(tt);
        ffnrt_tensor_destroy(dt_);
    }
    test_context_done(ctx);
}

/* ------------------------------------------------------------- training */

/* K steps of a layer learning a fixed random teacher's outputs: forward,
 * MSE, backward, AdamW, all on the device. Twice from the same start, the
 * weights come out the same to the bit; the loss falls by at least 10x in
 * 40 steps, in fp32 and in fp16 (loss-scaled, with master weights): here
 * 0.43 to 0.0081 on both devices, either dtype. */
static void train_run_k(ffnrt_context *ctx, ffnrt_dtype dt, int steps, uint32_t **weights, size_t *bytes,
                        double *first_loss, double *last_loss)
{
    train_case c = {FFNRT_FFN_GATED, FFNRT_SWIGLU, dt, 16, 24, 32, 1, 1};
    train_data f = make_data(&c); /* the student's start and x */
    train_case tc = c;
    tc.phi = FFNRT_GEGLU; /* the teacher: another layer, other weights */
    train_data teacher = make_data(&tc);
    double *tx = calloc(f.n[X], sizeof *tx), *pre = malloc((size_t)c.t * in_rows(&c) * sizeof *pre);
    double *u = malloc((size_t)c.t * c.h * sizeof *u), *ty = malloc(f.n[X] * sizeof *ty);
    float *target = malloc(f.n[X] * sizeof *target);
    cr_assert(tx && pre && u && ty && target);
    for (size_t i = 0; i < f.n[X]; i++)
        tx[i] = f.a[X][i];
    ref_forward_pass(&tc, teacher.a, tx, pre, u, ty);
    for (size_t i = 0; i < f.n[X]; i++)
        target[i] = round_to(dt, (float)ty[i]);
    train_run r = make_run(ctx, &c, &f);
    ffnrt_tensor *tt = upload(ctx, dt, target, f.n[X], c.t, c.d);
    ffnrt_optimizer_desc d = FFNRT_OPTIMIZER_DESC_INIT(FFNRT_OPTIMIZER_ADAMW);
    d.lr = 0.02f;
    d.weight_decay = 0.01f;
    d.max_grad_norm = 1.0f;
    d.loss_scale = dt == FFNRT_DTYPE_F16 ? 256.0f : 0.0f;
    ffnrt_optimizer *opt = NULL;
    cr_assert_eq(ffnrt_optimizer_create(ctx, &d, &opt), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_assert_eq(ffnrt_optimizer_add_ffn(opt, r.layer, &r.grads), FFNRT_OK, "%s", ffnrt_last_error_message());
    for (int s = 0; s < steps; s++) {
        double loss;
        cr_assert_eq(ffnrt_ffn_forward_train(r.layer, r.x, r.y), FFNRT_OK, "%s", ffnrt_last_error_message());
        cr_assert_eq(ffnrt_loss_mse(ctx, r.y, tt, ffnrt_optimizer_loss_scale(opt), r.dy, &loss), FFNRT_OK, "%s",
                     ffnrt_last_error_message());
        cr_assert_eq(ffnrt_ffn_backward(r.layer, r.x, r.dy, NULL, &r.grads, 0), FFNRT_OK, "%s",
                     ffnrt_last_error_message());
        cr_assert_eq(ffnrt_optimizer_step(opt, NULL), FFNRT_OK, "%s", ffnrt_last_error_message());
        if (s == 0)
            *first_loss = loss;
        *last_loss = loss;
    }
    /* The layer's weights as they are now: a forward's outputs on x. */
    cr_assert_eq(ffnrt_ffn_forward(r.layer, r.x, r.y), FFNRT_OK, "%s", ffnrt_last_error_message());
    *bytes = ffnrt_tensor_bytes(r.y);
    read_bits(r.y, weights);
    ffnrt_optimizer_destroy(opt);
    ffnrt_tensor_destroy(tt);
    free_run(&r);
    free(tx), free(pre), free(u), free(ty), free(target);
    free_data(&f);
    free_data(&teacher);
}

BACKEND_PARAMETERS(train, a_run_reproduces_and_learns)
ParameterizedTest(ffnrt_backend *backend, train, a_run_reproduces_and_learns, .timeout = 900)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    if (!ctx)
        return;
    for (int half = 0; half < 2; half++) {
        ffnrt_dtype dt = half ? FFNRT_DTYPE_F16 : FFNRT_DTYPE_F32;
        uint32_t *a, *b;
        size_t bytes;
        double l0, l1, m0, m1;
        train_run_k(ctx, dt, 40, &a, &bytes, &l0, &l1);
        train_run_k(ctx, dt, 40, &b, &bytes, &m0, &m1);
        cr_expect(memcmp(a, b, bytes) == 0, "%s %s: two runs of 40 steps from one start differ",
                  ffnrt_backend_name(*backend), ffnrt_dtype_name(dt));
        cr_expect(l1 * 10 <= l0, "%s %s: the loss went from %.4g to %.4g in 40 steps",
                  ffnrt_backend_name(*backend), ffnrt_dtype_name(dt), l0, l1);
        cr_expect(l0 == m0 && l1 == m1);
        cr_log_info("%s %s: loss %.4g -> %.4g in 40 steps", ffnrt_backend_name(*backend), ffnrt_dtype_name(dt), l0, l1);
        free(a);
        free(b);
    }
    test_context_done(ctx);
}

/* The training forward's statistics: with statistics on, each training
 * forward's feature bits join the window, and ffnrt_ffn_dead_window lists
 * the units dead in every forward since the last reset: here the ReLU
 * units whose bias is -100 (dead for any input), and none else. The
 * forward's own statistics (ffnrt_ffn_last_stats) are there too, and the
 * gradients are still the reference's. */
BACKEND_PARAMETERS(train, dead_units_window)
ParameterizedTest(ffnrt_backend *backend, train, dead_units_window, .timeout = 900)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    if (!ctx)
        return;
    train_case c = {FFNRT_FFN_DENSE, FFNRT_ACT_RELU, FFNRT_DTYPE_F32, 24, 40, 33, 1, 0};
    train_data f = make_data(&c);
    static const int dead[] = {3, 17, 39};
    for (size_t i = 0; i < sizeof dead / sizeof dead[0]; i++)
        f.a[B_IN][dead[i]] = -100.0f;
    for (int k = 0; k < GRADS; k++)
        free(f.g[k]);
    for (int k = 0; k < GRADS; k++)
        f.g[k] = malloc(f.gn[k] * sizeof(double));
    ref_backward(&c, f.a, f.g);
    train_run r = make_run(ctx, &c, &f);
    ffnrt_stats_options so = FFNRT_STATS_OPTIONS_INIT;
    cr_assert_eq(ffnrt_ffn_set_stats(r.layer, &so), FFNRT_OK, "%s", ffnrt_last_error_message());
    uint32_t list[8];
    size_t count = 99;
    uint64_t forwards = 99;
    cr_assert_eq(ffnrt_ffn_dead_window(r.layer, 0, list, 8, &count, &forwards), FFNRT_OK);
    cr_expect(count == 0 && forwards == 0, "an empty window: %zu dead over %llu forwards", count,
              (unsigned long long)forwards);
    for (int step = 0; step < 2; step++) {
        cr_assert_eq(ffnrt_ffn_forward_train(r.layer, r.x, r.y), FFNRT_OK, "%s", ffnrt_last_error_message());
        cr_assert_eq(ffnrt_ffn_backward(r.layer, r.x, r.dy, r.dx, &r.grads, 0), FFNRT_OK, "%s",
                     ffnrt_last_error_message());
    }
    ffnrt_stats st;
    cr_assert_eq(ffnrt_ffn_last_stats(r.layer, &st), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_expect_eq(st.dead_features, 3);
    cr_assert_eq(ffnrt_ffn_dead_window(r.layer, 1, list, 8, &count, &forwards), FFNRT_OK);
    cr_expect_eq(forwards, 2);
    cr_assert_eq(count, 3, "%zu units dead over the window", count);
    for (size_t i = 0; i < 3; i++)
        cr_expect_eq(list[i], (uint32_t)dead[i]);
    cr_assert_eq(ffnrt_ffn_dead_window(r.layer, 0, list, 8, &count, &forwards), FFNRT_OK);
    cr_expect(count == 0 && forwards == 0, "reset: %zu over %llu", count, (unsigned long long)forwards);
    float *dx = malloc(f.gn[G_DX] * sizeof(float));
    cr_assert(dx);
    download(r.dx, dx, f.gn[G_DX]);
    cr_expect_leq(test_rel_error(dx, f.g[G_DX], f.gn[G_DX]), bound_for(&c));
    free(dx);
    free_run(&r);
    free_data(&f);
    test_context_done(ctx);
}

/* The training figures of ffnrt_ffn_cost_of, by hand for one gated layer
 * with biases, and none for a quantized one. */
Test(train_reference, cost)
{
    ffnrt_ffn_desc d = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, 24, 40);
    d.bias = 1;
    ffnrt_ffn_cost c;
    cr_assert_eq(ffnrt_ffn_cost_of(&d, 33, FFNRT_FFN_PATH_AUTO, &c), FFNRT_OK);
    uint64_t t = 33, weights = 3 * 24 * 40, biases = 2 * 40 + 24, th = t * 40;
    cr_expect_eq(c.train_flops, c.flops + 4 * t * weights + t * biases + 4 * th);
    cr_expect_eq(c.saved_bytes, 3 * th * 4);
    uint64_t backward = 4 * (24 * t + th + 40 * 24 + 2 * th + t);
    cr_expect_eq(c.train_peak_bytes, 2 * c.weight_bytes + 4 * t * 24 * 4 + c.saved_bytes + backward);
    /* Recompute: gate and value products, their biases, phi and the product. */
    cr_expect_eq(c.recompute_flops, 2 * t * 2 * 40 * 24 + t * 2 * 40 + 2 * th);
    /* fp16 with hidden odd: kt = 34, Wᵀ [42, 25], the output gradients
     * padded [34, 42]. */
    d.dtype = FFNRT_DTYPE_F16, d.hidden = 41;
    cr_assert_eq(ffnrt_ffn_cost_of(&d, 33, FFNRT_FFN_PATH_AUTO, &c), FFNRT_OK);
    uint64_t kt = 34;
    backward = 2 * (24 * kt + 41 * kt + 42 * 25 + 2 * t * 41 + kt + kt * 42);
    cr_expect_eq(c.train_peak_bytes, 2 * c.weight_bytes + 4 * t * 24 * 2 + c.saved_bytes + backward);
    d.dtype = FFNRT_DTYPE_F32;
    d.format_in = d.format_value = d.format_out = FFNRT_WEIGHT_Q8_0;
    d.d_model = 32, d.hidden = 64;
    cr_assert_eq(ffnrt_ffn_cost_of(&d, 33, FFNRT_FFN_PATH_AUTO, &c), FFNRT_OK);
    cr_expect(c.train_flops == 0 && c.saved_bytes == 0 && c.train_peak_bytes == 0);
}
