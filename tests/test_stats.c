/* Statistics computed in the ops' kernels (ffnrt_context_set_stats,
 * ffnrt_ffn_set_stats) against the host's figures for the same values: the
 * inputs as written, the pre-activations as the kernels see them, the
 * outputs as read back (what the device stored, so a device that flushes
 * subnormals is measured on what it stored). Counts, histograms, min, max
 * and the first index exactly; moments and norms within their stated bound.
 * Each test runs a list of calls on one context, so a process builds a
 * kernel once; under a GPU profile (FFNRT_PROFILE) the list is shorter:
 * it is there for the parallel reduction and the local-atomic histograms
 * a GPU plan takes, not for every op again. */
#include "device_fixture.h"
#include "core/context.h"
#include "ops/stats.h"
#include "../shaders/stats_layout.h"

#include <criterion/parameterized.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ host side */

static int profiled(void)
{
    const char *p = getenv("FFNRT_PROFILE");
    return p && *p && strcmp(p, "none") != 0;
}

static uint16_t encode16(ffnrt_dtype t, float v) { return t == FFNRT_DTYPE_F16 ? ffnrt_f32_to_f16(v) : ffnrt_f32_to_bf16(v); }
static float decode16(ffnrt_dtype t, uint16_t b) { return t == FFNRT_DTYPE_F16 ? ffnrt_f16_to_f32(b) : ffnrt_bf16_to_f32(b); }

/* The value a tensor of dtype t holds for v. */
static float stored(ffnrt_dtype t, float v) { return t == FFNRT_DTYPE_F32 ? v : decode16(t, encode16(t, v)); }

static ffnrt_tensor *tensor(ffnrt_context *ctx, ffnrt_dtype t, size_t ndim, const int64_t *shape, const float *v)
{
    ffnrt_tensor *x = NULL;
    cr_assert_eq(ffnrt_tensor_create(ctx, t, ndim, shape, &x), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    size_t n = ffnrt_tensor_numel(x);
    if (t == FFNRT_DTYPE_F32) {
        cr_assert_eq(ffnrt_tensor_write(x, v, n * 4), FFNRT_OK);
    } else {
        uint16_t *b = malloc(n * 2 + 2);
        for (size_t i = 0; i < n; i++)
            b[i] = encode16(t, v[i]);
        cr_assert_eq(ffnrt_tensor_write(x, b, n * 2), FFNRT_OK);
        free(b);
    }
    return x;
}

static void read_back(const ffnrt_tensor *x, float *out)
{
    size_t n = ffnrt_tensor_numel(x);
    ffnrt_dtype t = ffnrt_tensor_dtype(x);
    if (t == FFNRT_DTYPE_F32) {
        cr_assert_eq(ffnrt_tensor_read(x, out, n * 4), FFNRT_OK);
        return;
    }
    uint16_t *b = malloc(n * 2 + 2);
    cr_assert_eq(ffnrt_tensor_read(x, b, n * 2), FFNRT_OK);
    for (size_t i = 0; i < n; i++)
        out[i] = decode16(t, b[i]);
    free(b);
}

/* The host's figures, fed value by value. */
typedef struct host_stats {
    uint64_t in_nan, in_inf, out_nan, out_inf, pre, pre_nan, pre_inf, zero, sat, outputs;
    int64_t first;
    uint32_t kmin, kmax;
    double sum, sumsq, sumabs;
    int big; /* a finite pre-activation whose square, or a sum, may pass fp32 */
    uint32_t hist[FFNRT_STATS_MAX_BINS + 2], ghist[FFNRT_STATS_MAX_BINS + 2];
} host_stats;

static void host_init(host_stats *h)
{
    memset(h, 0, sizeof *h);
    h->first = -1;
    h->kmin = 0xffffffffu;
}

static uint32_t key_of(float v)
{
    uint32_t b;
    memcpy(&b, &v, 4);
    return b & 0x80000000u ? ~b : b | 0x80000000u;
}

static void host_in(host_stats *h, float v)
{
    h->in_nan += isnan(v);
    h->in_inf += isinf(v) != 0;
}

static void host_pre(host_stats *h, float v, const ffnrt_stats *s)
{
    h->pre++;
    h->pre_nan += isnan(v);
    h->pre_inf += isinf(v) != 0;
    if (isfinite(v)) {
        uint32_t k = key_of(v);
        h->kmin = k < h->kmin ? k : h->kmin;
        h->kmax = k > h->kmax ? k : h->kmax;
        h->sum += v;
        h->sumsq += (double)v * v;
        h->sumabs += fabs(v);
        h->big |= fabs(v) > 1e18;
    }
    h->sat += !isnan(v) && fabsf(v) > s->saturation_cut;
    if (s->bins) {
        uint32_t b = ffnrt_stats_bin(v, s->lo, s->hi, s->bins);
        if (b != UINT32_MAX)
            h->hist[b]++;
    }
}

static void host_gate(host_stats *h, float a, const ffnrt_stats *s)
{
    if (s->bins) {
        uint32_t b = ffnrt_stats_bin(a, s->gate_lo, s->gate_hi, s->bins);
        if (b != UINT32_MAX)
            h->ghist[b]++;
    }
}

static void host_out(host_stats *h, float v, int64_t index, int activations)
{
    h->outputs++;
    h->out_nan += isnan(v);
    h->out_inf += isinf(v) != 0;
    if (!isfinite(v) && (h->first < 0 || index < h->first))
        h->first = index;
    h->zero += activations && v == 0;
}

static float key_value(uint32_t key)
{
    uint32_t b = key & 0x80000000u ? key ^ 0x80000000u : ~key;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* The moments' bound (docs/diagnostics.md, ffnrt.h): 1e-5 relative (of mean |x|). */
#define MOMENT_BOUND 1e-5

static void check(const ffnrt_stats *s, const host_stats *h, const char *what)
{
    cr_assert(s->valid, "%s: no statistics", what);
    cr_expect_eq(s->input_nan, h->in_nan, "%s: input NaN %llu, host %llu", what, (unsigned long long)s->input_nan,
                 (unsigned long long)h->in_nan);
    cr_expect_eq(s->input_inf, h->in_inf, "%s: input Inf", what);
    cr_expect_eq(s->output_nan, h->out_nan, "%s: output NaN %llu, host %llu", what, (unsigned long long)s->output_nan,
                 (unsigned long long)h->out_nan);
    cr_expect_eq(s->output_inf, h->out_inf, "%s: output Inf %llu, host %llu", what, (unsigned long long)s->output_inf,
                 (unsigned long long)h->out_inf);
    cr_expect_eq(s->first_nonfinite, h->first, "%s: first non-finite %lld, host %lld", what,
                 (long long)s->first_nonfinite, (long long)h->first);
    cr_expect_eq(s->outputs, h->outputs, "%s: outputs", what);
    cr_expect_eq(s->pre_count, h->pre, "%s: pre-activations %llu, host %llu", what, (unsigned long long)s->pre_count,
                 (unsigned long long)h->pre);
    cr_expect_eq(s->pre_nan, h->pre_nan, "%s: pre NaN", what);
    cr_expect_eq(s->pre_inf, h->pre_inf, "%s: pre Inf", what);
    cr_expect_eq(s->zero, h->zero, "%s: zeros %llu, host %llu", what, (unsigned long long)s->zero,
                 (unsigned long long)h->zero);
    cr_expect_eq(s->saturated, h->sat, "%s: saturated %llu, host %llu", what, (unsigned long long)s->saturated,
                 (unsigned long long)h->sat);
    uint64_t finite = h->pre - h->pre_nan - h->pre_inf;
    if (!finite) {
        cr_expect(isnan(s->pre_min) && isnan(s->pre_max) && isnan(s->pre_mean), "%s: no finite value", what);
    } else {
        float mn = key_value(h->kmin), mx = key_value(h->kmax);
        cr_expect(memcmp(&s->pre_min, &mn, 4) == 0, "%s: min %a, host %a", what, (double)s->pre_min, (double)mn);
        cr_expect(memcmp(&s->pre_max, &mx, 4) == 0, "%s: max %a, host %a", what, (double)s->pre_max, (double)mx);
        double mean = h->sum / (double)finite, rms = sqrt(h->sumsq / (double)finite);
        if (h->big) { /* fp32 partials may overflow: documented as NaN / +Inf */
            cr_expect(isnan(s->pre_mean) || fabs(s->pre_mean - mean) <= MOMENT_BOUND * h->sumabs / (double)finite,
                      "%s: mean", what);
            cr_expect(isinf(s->pre_rms) || fabs(s->pre_rms - rms) <= MOMENT_BOUND * rms, "%s: rms", what);
        } else {
            cr_expect(fabs(s->pre_mean - mean) <= MOMENT_BOUND * h->sumabs / (double)finite + 1e-300,
                      "%s: mean %.12g, host %.12g", what, s->pre_mean, mean);
            cr_expect(fabs(s->pre_rms - rms) <= MOMENT_BOUND * rms + 1e-300, "%s: rms %.12g, host %.12g", what,
                      s->pre_rms, rms);
        }
    }
    for (uint32_t b = 0; s->bins && b < s->bins + 2; b++)
        cr_expect_eq(s->hist[b], h->hist[b], "%s: bin %u holds %u, host %u", what, b, s->hist[b], h->hist[b]);
}

/* -------------------------------------------------------------- inputs */

/* Edge values (both zeros, subnormals, infinities, NaN, the extremes, every
 * bin edge of [-4, 4) in 16 bins and just beside them, hi itself), then a
 * sweep. */
static size_t edge_inputs(float *v, size_t cap)
{
    static const float edges[] = {0.0f, -0.0f, 1e-45f, -1e-45f, 1e-40f, -1e-40f, FLT_MIN, -FLT_MIN,
                                  INFINITY, -INFINITY, NAN, -NAN, FLT_MAX, -FLT_MAX, 1e20f, -1e20f,
                                  4.0f, -4.0f, 30.0f, -30.0f, 6.90575f, -6.90575f, 1e-3f};
    size_t n = 0;
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        v[n++] = edges[i];
    for (int k = 0; k <= 16; k++) {
        float e = -4.0f + 0.5f * (float)k;
        v[n++] = e;
        v[n++] = nextafterf(e, -INFINITY);
        v[n++] = nextafterf(e, INFINITY);
    }
    for (uint32_t i = 0; n < cap; i++)
        v[n++] = (float)((int)((i * 2654435761u) % 20001u) - 10000) / 1250.0f; /* [-8, 8] in steps of 1/1250 */
    return n;
}

static void options(ffnrt_stats_options *o, uint32_t bins)
{
    ffnrt_stats_options d = FFNRT_STATS_OPTIONS_INIT;
    *o = d;
    o->bins = bins;
    o->lo = -4.0f;
    o->hi = 4.0f;
    o->gate_lo = -2.0f;
    o->gate_hi = 6.0f;
}

/* -------------------------------------------------------- activations */

typedef struct act_case {
    ffnrt_activation act;
    int backward;
    ffnrt_dtype dtype;
    ffnrt_compute compute;
    uint32_t bins;
} act_case;

static void run_activation(ffnrt_context *ctx, const act_case *c, size_t n)
{
    float *x = malloc(n * 4), *dy = malloc(n * 4), *out = malloc(n * 4);
    edge_inputs(x, n);
    for (size_t i = 0; i < n; i++) {
        dy[i] = stored(c->dtype, i % 7 == 3 ? 0.0f : (float)(i % 13) - 6.0f);
        x[i] = stored(c->dtype, x[i]);
    }
    dy[5] = NAN; /* a NaN gradient in */
    int64_t shape = (int64_t)n;
    ffnrt_tensor *tx = tensor(ctx, c->dtype, 1, &shape, x), *tdy = tensor(ctx, c->dtype, 1, &shape, dy);
    ffnrt_tensor *ty = tensor(ctx, c->dtype, 1, &shape, x);
    ffnrt_stats_options o;
    options(&o, c->bins);
    cr_assert_eq(ffnrt_context_set_stats(ctx, &o), FFNRT_OK);
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(c->act);
    d.compute = c->compute;
    ffnrt_status st = c->backward ? ffnrt_activation_backward(ctx, &d, tx, tdy, ty) : ffnrt_activation_forward(ctx, &d, tx, ty);
    cr_assert_eq(st, FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    ffnrt_stats s;
    cr_assert_eq(ffnrt_context_last_stats(ctx, &s), FFNRT_OK);
    read_back(ty, out);
    host_stats h;
    host_init(&h);
    for (size_t i = 0; i < n; i++) {
        host_in(&h, x[i]);
        if (c->backward)
            host_in(&h, dy[i]);
        host_pre(&h, x[i], &s);
        host_out(&h, out[i], (int64_t)i, 1);
    }
    char what[96];
    snprintf(what, sizeof what, "%s%s %s%s %u bins", ffnrt_activation_name(c->act), c->backward ? "'" : "",
             ffnrt_dtype_name(c->dtype), c->compute == FFNRT_COMPUTE_F16 ? " fp16 arithmetic" : "", c->bins);
    check(&s, &h, what);
    cr_expect_eq(s.inputs, (uint64_t)(c->backward ? 2 : 1) * n, "%s: inputs", what);
    cr_expect_eq(s.activations, (uint64_t)n, "%s", what);
    cr_expect_eq(s.dtype, c->dtype);
    cr_expect_eq(s.fp16_arithmetic, c->compute == FFNRT_COMPUTE_F16);
    cr_expect(fabs(s.dead_fraction - (double)s.zero / (double)n) < 1e-12);
    /* Saturation: sigmoid and tanh only, where |f'| falls to the threshold. */
    if (c->act == FFNRT_ACT_SIGMOID || c->act == FFNRT_ACT_TANH) {
        double x0 = s.saturation_cut, t = c->act == FFNRT_ACT_TANH ? tanh(x0) : 1 / (1 + exp(-x0));
        double g = c->act == FFNRT_ACT_TANH ? 1 - t * t : t * (1 - t);
        cr_expect(fabs(g - o.saturation) < 1e-6 * o.saturation, "%s: f'(%g) = %g", what, x0, g);
        cr_expect_gt(s.saturated, 0, "%s", what);
    } else {
        cr_expect(isinf(s.saturation_cut) && s.saturated == 0, "%s: no saturation", what);
    }
    ffnrt_tensor_destroy(tx);
    ffnrt_tensor_destroy(tdy);
    ffnrt_tensor_destroy(ty);
    free(x);
    free(dy);
    free(out);
}

BACKEND_PARAMETERS(stats, activations)
ParameterizedTest(ffnrt_backend *backend, stats, activations)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    ffnrt_device_info info;
    ffnrt_context_get_device_info(ctx, &info);
    act_case cases[32];
    size_t nc = 0;
    for (int a = 0; a < FFNRT_ACT_COUNT; a++) /* every activation, forward, with a histogram */
        if (a != FFNRT_ACT_PRELU && (!profiled() || a == FFNRT_ACT_SIGMOID))
            cases[nc++] = (act_case){(ffnrt_activation)a, 0, FFNRT_DTYPE_F32, FFNRT_COMPUTE_F32, 16};
    cases[nc++] = (act_case){FFNRT_ACT_RELU, 0, FFNRT_DTYPE_F32, FFNRT_COMPUTE_F32, 0}; /* no histogram */
    cases[nc++] = (act_case){FFNRT_ACT_TANH, 1, FFNRT_DTYPE_F32, FFNRT_COMPUTE_F32, 16};
    if (!profiled()) {
        cases[nc++] = (act_case){FFNRT_ACT_RELU, 1, FFNRT_DTYPE_F32, FFNRT_COMPUTE_F32, 16};
        cases[nc++] = (act_case){FFNRT_ACT_GELU, 0, FFNRT_DTYPE_BF16, FFNRT_COMPUTE_F32, 16};
        cases[nc++] = (act_case){FFNRT_ACT_RELU, 1, FFNRT_DTYPE_BF16, FFNRT_COMPUTE_F32, 16};
    }
    cases[nc++] = (act_case){FFNRT_ACT_GELU, 0, FFNRT_DTYPE_F16, FFNRT_COMPUTE_F32, 16};
    if (info.fp16_arithmetic)
        cases[nc++] = (act_case){FFNRT_ACT_SILU, 0, FFNRT_DTYPE_F16, FFNRT_COMPUTE_F16, 16};
    for (size_t i = 0; i < nc; i++)
        run_activation(ctx, &cases[i], 6001); /* odd: 16-bit outputs end on half a word */
    test_context_done(ctx);
}

/* ---------------------------------------------------------- GLU family */

typedef struct glu_case {
    ffnrt_glu kind;
    int halves, backward;
    ffnrt_dtype dtype;
    int64_t rows, h;
    int unit_value; /* value = 1: the gate's activation is the output, so its histogram is exact */
} glu_case;

static void run_glu(ffnrt_context *ctx, const glu_case *c)
{
    int64_t rows = c->rows, h = c->h, n = rows * h;
    float *g = malloc((size_t)n * 4), *v = malloc((size_t)n * 4), *dy = malloc((size_t)n * 4);
    float *x = malloc((size_t)n * 8), *out = malloc((size_t)n * 8), *out2 = malloc((size_t)n * 4);
    edge_inputs(g, (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        g[i] = stored(c->dtype, g[i]);
        v[i] = c->unit_value ? 1.0f : stored(c->dtype, (float)(i % 29) / 7.0f - 2.0f);
        dy[i] = stored(c->dtype, (float)(i % 5) - 2.0f);
    }
    for (int64_t r = 0; r < rows; r++) /* halves: [value | gate] a row */
        for (int64_t j = 0; j < h; j++) {
            x[r * 2 * h + j] = v[r * h + j];
            x[r * 2 * h + h + j] = g[r * h + j];
        }
    int64_t s1[2] = {rows, h}, s2[2] = {rows, 2 * h};
    ffnrt_tensor *tg = tensor(ctx, c->dtype, 2, s1, g), *tv = tensor(ctx, c->dtype, 2, s1, v);
    ffnrt_tensor *tdy = tensor(ctx, c->dtype, 2, s1, dy), *tx = tensor(ctx, c->dtype, 2, s2, x);
    ffnrt_tensor *ty = tensor(ctx, c->dtype, 2, c->halves && c->backward ? s2 : s1, x);
    ffnrt_tensor *ty2 = tensor(ctx, c->dtype, 2, s1, v);
    ffnrt_stats_options o;
    options(&o, 16);
    cr_assert_eq(ffnrt_context_set_stats(ctx, &o), FFNRT_OK);
    ffnrt_glu_desc d = FFNRT_GLU_DESC_INIT(c->kind);
    d.compute = FFNRT_COMPUTE_F32;
    ffnrt_status st = c->halves ? (c->backward ? ffnrt_glu_backward(ctx, &d, tx, tdy, ty) : ffnrt_glu_forward(ctx, &d, tx, ty))
                                : (c->backward ? ffnrt_glu_backward_split(ctx, &d, tg, tv, tdy, ty, ty2)
                                               : ffnrt_glu_forward_split(ctx, &d, tg, tv, ty));
    cr_assert_eq(st, FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    ffnrt_stats s;
    cr_assert_eq(ffnrt_context_last_stats(ctx, &s), FFNRT_OK);
    read_back(ty, out);
    if (c->backward && !c->halves)
        read_back(ty2, out2);
    host_stats hs;
    host_init(&hs);
    char what[96];
    snprintf(what, sizeof what, "%s%s %s %s [%lld, %lld]", ffnrt_glu_name(c->kind), c->backward ? "'" : "",
             c->halves ? "halves" : "split", ffnrt_dtype_name(c->dtype), (long long)rows, (long long)h);
    double gsum = 0, gmax = 0, vsum = 0, vmax = 0;
    for (int64_t r = 0; r < rows; r++) {
        double g2 = 0, v2 = 0;
        for (int64_t j = 0; j < h; j++) {
            int64_t i = r * h + j;
            if (c->halves) {
                host_in(&hs, v[i]);
                host_in(&hs, g[i]);
            } else {
                host_in(&hs, g[i]);
                host_in(&hs, v[i]);
            }
            if (c->backward)
                host_in(&hs, dy[i]);
            host_pre(&hs, g[i], &s);
            if (!c->backward) {
                host_out(&hs, out[i], i, 1);
                if (c->unit_value) /* f32: the output is the gate's activation as computed */
                    host_gate(&hs, out[i], &s);
                g2 += (double)out[i] * out[i];
                v2 += (double)v[i] * v[i];
            } else if (!c->halves) {
                host_out(&hs, out[i], i, 1);
                host_out(&hs, out2[i], i, 1);
            }
        }
        if (c->backward && c->halves)
            for (int64_t j = 0; j < 2 * h; j++)
                host_out(&hs, out[r * 2 * h + j], r * 2 * h + j, 1);
        gsum += sqrt(g2);
        vsum += sqrt(v2);
        /* A NaN token norm makes the maximum NaN (stats.kernel's NAN_MAX). */
        gmax = isnan(g2) || isnan(gmax) ? NAN : fmax(gmax, sqrt(g2));
        vmax = isnan(v2) || isnan(vmax) ? NAN : fmax(vmax, sqrt(v2));
    }
    check(&s, &hs, what);
    if (!c->backward) {
        cr_expect_eq(s.tokens, (uint64_t)rows, "%s: tokens", what);
        if (c->unit_value) {
            for (uint32_t b = 0; b < s.bins + 2; b++)
                cr_expect_eq(s.gate_hist[b], hs.ghist[b], "%s: gate bin %u holds %u, host %u", what, b, s.gate_hist[b],
                             hs.ghist[b]);
            /* Norms (with value 1, from the output): NaN where a gate was. */
            double bound = 1e-5;
            if (isnan(gsum))
                cr_expect(isnan(s.gate_norm_mean), "%s: gate norm NaN", what);
            else
                cr_expect(fabs(s.gate_norm_mean - gsum / rows) <= bound * gsum / rows, "%s: gate norm mean %.9g, host %.9g",
                          what, s.gate_norm_mean, gsum / rows);
            if (isnan(gmax))
                cr_expect(isnan(s.gate_norm_max), "%s: gate norm max %.9g, host NaN", what, s.gate_norm_max);
            else if (isfinite(gmax))
                cr_expect(fabs(s.gate_norm_max - gmax) <= bound * gmax, "%s: gate norm max %.9g, host %.9g", what,
                          s.gate_norm_max, gmax);
            cr_expect(fabs(s.value_norm_mean - vsum / rows) <= bound * vsum / rows, "%s: value norm", what);
            cr_expect(fabs(s.value_norm_max - vmax) <= bound * vmax, "%s: value norm max", what);
        }
    } else {
        cr_expect_eq(s.tokens, 0, "%s: no norms backward", what);
    }
    ffnrt_tensor *all[] = {tg, tv, tdy, tx, ty, ty2};
    for (size_t i = 0; i < 6; i++)
        ffnrt_tensor_destroy(all[i]);
    free(g), free(v), free(dy), free(x), free(out), free(out2);
}

BACKEND_PARAMETERS(stats, glu)
ParameterizedTest(ffnrt_backend *backend, stats, glu)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    glu_case cases[16];
    size_t nc = 0;
    for (int k = 0; k < FFNRT_GLU_COUNT; k++) /* every kind, forward; a row long and short next to a group */
        if (!profiled() || k == FFNRT_SWIGLU)
            cases[nc++] = (glu_case){(ffnrt_glu)k, 0, 0, FFNRT_DTYPE_F32, k % 2 ? 3 : 37, k % 2 ? 5003 : 129, 1};
    cases[nc++] = (glu_case){FFNRT_GEGLU, 1, 0, FFNRT_DTYPE_F32, 5, 2049, 1};
    cases[nc++] = (glu_case){FFNRT_SWIGLU, 0, 1, FFNRT_DTYPE_F32, 7, 301, 0};
    cases[nc++] = (glu_case){FFNRT_GLU, 1, 1, FFNRT_DTYPE_F32, 7, 301, 0};
    /* Rows a power of two: a group's span divides the row, each group in
     * one token (the variant without a per-element choice of token). */
    cases[nc++] = (glu_case){FFNRT_SWIGLU, 0, 0, FFNRT_DTYPE_F32, 3, 4096, 1};
    if (!profiled()) {
        cases[nc++] = (glu_case){FFNRT_GEGLU, 1, 0, FFNRT_DTYPE_F16, 3, 2048, 0};
        cases[nc++] = (glu_case){FFNRT_GLU, 0, 0, FFNRT_DTYPE_BF16, 5, 512, 0};
        cases[nc++] = (glu_case){FFNRT_GEGLU, 0, 0, FFNRT_DTYPE_F16, 11, 1001, 0};
        cases[nc++] = (glu_case){FFNRT_REGLU, 1, 0, FFNRT_DTYPE_BF16, 4, 999, 0};
    }
    for (size_t i = 0; i < nc; i++)
        run_glu(ctx, &cases[i]);
    test_context_done(ctx);
}

/* ------------------------------------------------------- the finite check */

/* A GEGLU whose product passes fp16's 65504 (300 * gelu(300) = 90000): the
 * finite check refuses it in f16 storage, naming the op, the precision and
 * the first index, and passes the same call in fp32 (the control). */
static char geglu_message[1024];

static ffnrt_status geglu_call(ffnrt_context *ctx, ffnrt_dtype t, float gate, float value, float *y0)
{
    float g[6] = {1, 2, gate, gate, 0, -1}, v[6] = {1, 1, value, value, 5, 1};
    int64_t shape[2] = {2, 3};
    ffnrt_tensor *tg = tensor(ctx, t, 2, shape, g), *tv = tensor(ctx, t, 2, shape, v), *ty = tensor(ctx, t, 2, shape, g);
    ffnrt_glu_desc d = FFNRT_GLU_DESC_INIT(FFNRT_GEGLU);
    d.compute = FFNRT_COMPUTE_F32;
    ffnrt_status st = ffnrt_glu_forward_split(ctx, &d, tg, tv, ty);
    snprintf(geglu_message, sizeof geglu_message, "%s", st ? ffnrt_last_error_message() : "");
    float out[6];
    read_back(ty, out);
    *y0 = out[2];
    ffnrt_tensor_destroy(tg);
    ffnrt_tensor_destroy(tv);
    ffnrt_tensor_destroy(ty);
    return st;
}

BACKEND_PARAMETERS(stats, finite_check)
ParameterizedTest(ffnrt_backend *backend, stats, finite_check)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    float y;
    /* Off by default: the overflow is stored, and counted only when asked. */
    cr_assert_eq(geglu_call(ctx, FFNRT_DTYPE_F16, 300.0f, 300.0f, &y), FFNRT_OK);
    cr_assert(isinf(y), "f16 storage overflows: %g", (double)y);
    ffnrt_stats s;
    cr_assert_eq(ffnrt_context_last_stats(ctx, &s), FFNRT_OK);
    cr_assert_eq(s.valid, 0, "no statistics were asked for");

    cr_assert_eq(ffnrt_context_force(ctx, "check.finite", "on"), FFNRT_OK);
    ffnrt_status st = geglu_call(ctx, FFNRT_DTYPE_F16, 300.0f, 300.0f, &y);
    cr_assert_eq(st, FFNRT_ERROR_NON_FINITE, "%s", ffnrt_status_string(st));
    const char *msg = geglu_message;
    cr_expect(strstr(msg, "ffnrt_glu_forward_split") && strstr(msg, "geglu") && strstr(msg, "f16 storage") &&
                  strstr(msg, "fp32 arithmetic") && strstr(msg, "flat index 2") && strstr(msg, "fp32"),
              "message: %s", msg);
    cr_assert(isinf(y), "the output holds what was computed");
    cr_assert_eq(ffnrt_context_last_stats(ctx, &s), FFNRT_OK);
    cr_expect(s.valid && s.output_inf == 2 && s.first_nonfinite == 2 && s.input_nan + s.input_inf == 0,
              "the check's counts: %llu Inf from index %lld", (unsigned long long)s.output_inf,
              (long long)s.first_nonfinite);
    cr_expect_eq(s.bins, 0, "the check alone takes no histogram");
    /* The fp32 control: the same call passes. */
    cr_assert_eq(geglu_call(ctx, FFNRT_DTYPE_F32, 300.0f, 300.0f, &y), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_expect_eq(y, 90000.0f);
    /* Non-finite inputs are the data's: not refused. */
    cr_assert_eq(geglu_call(ctx, FFNRT_DTYPE_F16, NAN, 1.0f, &y), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_assert_eq(geglu_call(ctx, FFNRT_DTYPE_F16, INFINITY, 300.0f, &y), FFNRT_OK);
    /* The options' own field first: 0 turns it off over the forced on. */
    ffnrt_stats_options o = FFNRT_STATS_OPTIONS_INIT;
    o.check_finite = 0;
    cr_assert_eq(ffnrt_context_set_stats(ctx, &o), FFNRT_OK);
    cr_assert_eq(geglu_call(ctx, FFNRT_DTYPE_F16, 300.0f, 300.0f, &y), FFNRT_OK);
    cr_assert_eq(ffnrt_context_last_stats(ctx, &s), FFNRT_OK);
    cr_expect(s.valid && s.output_inf == 2, "statistics on, the check off");
    /* An activation too: relu on f16 never overflows, sigmoid(NaN) is the data's. */
    o.check_finite = 1;
    cr_assert_eq(ffnrt_context_set_stats(ctx, &o), FFNRT_OK);
    float x[3] = {1e30f, -1, NAN};
    int64_t n = 3;
    ffnrt_tensor *tx = tensor(ctx, FFNRT_DTYPE_F32, 1, &n, x), *t16 = tensor(ctx, FFNRT_DTYPE_F16, 1, &n, x);
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_SIGMOID);
    cr_expect_eq(ffnrt_activation_forward(ctx, &d, tx, tx), FFNRT_OK, "NaN in: %s", ffnrt_last_error_message());
    /* tanh' of a finite input overflowing in dy * f'(x)? No: an exp overflow instead. */
    float big[3] = {100, 1, 2};
    ffnrt_tensor *tb = tensor(ctx, FFNRT_DTYPE_F32, 1, &n, big);
    ffnrt_activation_desc e = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_ELU);
    e.alpha = 1e38f;
    float neg[3] = {-100, -1, 2};
    ffnrt_tensor *tn = tensor(ctx, FFNRT_DTYPE_F32, 1, &n, neg);
    cr_expect_eq(ffnrt_activation_forward(ctx, &e, tn, tb), FFNRT_OK, "alpha * expm1 stays finite");
    ffnrt_tensor_destroy(tx);
    ffnrt_tensor_destroy(t16);
    ffnrt_tensor_destroy(tb);
    ffnrt_tensor_destroy(tn);
    test_context_done(ctx);
}

/* The knob by the one precedence: FFNRT_CHECK_FINITE, read when the
 * context is created, under ffnrt_context_force, under the options. */
BACKEND_PARAMETERS(stats, finite_check_precedence)
ParameterizedTest(ffnrt_backend *backend, stats, finite_check_precedence)
{
    setenv("FFNRT_CHECK_FINITE", "1", 1);
    ffnrt_context *ctx = test_context(*backend, NULL);
    unsetenv("FFNRT_CHECK_FINITE");
    float y;
    cr_expect_eq(geglu_call(ctx, FFNRT_DTYPE_F16, 300.0f, 300.0f, &y), FFNRT_ERROR_NON_FINITE, "from the environment");
    ffnrt_plan *plan = NULL;
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_GELU);
    cr_assert_eq(ffnrt_activation_plan(ctx, &d, FFNRT_DTYPE_F16, 100, &plan), FFNRT_OK);
    cr_expect_str_eq(ffnrt_plan_choice(plan, "check.finite"), "on");
    cr_expect(strstr(ffnrt_plan_text(plan), "FFNRT_CHECK_FINITE") != NULL, "%s", ffnrt_plan_text(plan));
    cr_expect(strstr(ffnrt_plan_choice(plan, "stats"), "on") != NULL, "the check runs the statistics variant");
    ffnrt_plan_destroy(plan);
    cr_assert_eq(ffnrt_context_force(ctx, "check.finite", "off"), FFNRT_OK);
    cr_expect_eq(geglu_call(ctx, FFNRT_DTYPE_F16, 300.0f, 300.0f, &y), FFNRT_OK, "forced off over the environment");
    cr_assert_eq(ffnrt_activation_plan(ctx, &d, FFNRT_DTYPE_F16, 100, &plan), FFNRT_OK);
    cr_expect_str_eq(ffnrt_plan_choice(plan, "check.finite"), "off");
    cr_expect_str_eq(ffnrt_plan_choice(plan, "stats"), "off");
    ffnrt_plan_destroy(plan);
    ffnrt_stats_options o = FFNRT_STATS_OPTIONS_INIT;
    o.enabled = 0;
    o.check_finite = 1;
    cr_assert_eq(ffnrt_context_set_stats(ctx, &o), FFNRT_OK);
    cr_expect_eq(geglu_call(ctx, FFNRT_DTYPE_F16, 300.0f, 300.0f, &y), FFNRT_ERROR_NON_FINITE, "the options over force");
    cr_assert_eq(ffnrt_context_force(ctx, "check.finite", "garbage"), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_expect(strstr(ffnrt_last_error_message(), "check.finite") != NULL);
    test_context_done(ctx);
}

/* ------------------------------------------------------------ exactness */

/* The moments are the exact sum of the groups' fp32 partials: on integers
 * (every partial exact) the mean is exactly the true one, negative and
 * positive partials alike, and two runs agree bit for bit. */
BACKEND_PARAMETERS(stats, moments_exact)
ParameterizedTest(ffnrt_backend *backend, stats, moments_exact)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    size_t n = 300001;
    float *x = malloc(n * 4);
    double sum = 0, sumsq = 0;
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)((int)((i * 2654435761u) % 2001u) - 1000 - (i < 1000 ? 3000 : 0));
        sum += x[i];
        sumsq += (double)x[i] * x[i];
    }
    ffnrt_tensor *t = test_tensor_1d(ctx, n, x), *y = test_tensor_1d(ctx, n, NULL);
    ffnrt_stats_options o = FFNRT_STATS_OPTIONS_INIT;
    cr_assert_eq(ffnrt_context_set_stats(ctx, &o), FFNRT_OK);
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_RELU);
    ffnrt_stats a, b;
    cr_assert_eq(ffnrt_activation_forward(ctx, &d, t, y), FFNRT_OK);
    cr_assert_eq(ffnrt_context_last_stats(ctx, &a), FFNRT_OK);
    cr_assert_eq(ffnrt_activation_forward(ctx, &d, t, y), FFNRT_OK);
    cr_assert_eq(ffnrt_context_last_stats(ctx, &b), FFNRT_OK);
    cr_expect_eq(a.pre_mean, sum / (double)n, "mean %.17g, exact %.17g", a.pre_mean, sum / (double)n);
    cr_expect(fabs(a.pre_rms - sqrt(sumsq / (double)n)) <= MOMENT_BOUND * a.pre_rms, "rms %.17g", a.pre_rms);
    cr_expect(memcmp(&a, &b, sizeof a) == 0, "two runs, one result");
    ffnrt_tensor_destroy(t);
    ffnrt_tensor_destroy(y);
    free(x);
    test_context_done(ctx);
}

/* Counts past 2^32: a 64-bit count is two words added with 32-bit atomics
 * and a carry. The buffer is preset just below 2^32 (through the internal
 * calls, as no test can run 4G elements) and the call's counts carry. */
BACKEND_PARAMETERS(stats, counts_carry)
ParameterizedTest(ffnrt_backend *backend, stats, counts_carry)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    size_t n = 5000;
    float *x = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        x[i] = i % 10 == 0 ? NAN : i % 10 == 1 ? -INFINITY : i % 10 < 6 ? -1.0f : 1.0f;
    ffnrt_tensor *t = test_tensor_1d(ctx, n, x), *y = test_tensor_1d(ctx, n, NULL);
    ffnrt_stats_options o = FFNRT_STATS_OPTIONS_INIT;
    cr_assert_eq(ffnrt_context_set_stats(ctx, &o), FFNRT_OK);
    ffnrt_stats_call sc = {0};
    sc.fn = "counts_carry";
    snprintf(sc.op, sizeof sc.op, "relu");
    sc.dtype = FFNRT_DTYPE_F32;
    sc.act = FFNRT_ACT_RELU;
    sc.inputs = sc.outputs = sc.pre = sc.activations = n;
    cr_assert_eq(ffnrt_stats_begin(ctx, NULL, &sc), FFNRT_OK);
    sc.run.roles |= FFNRT_STATS_INPUTS | FFNRT_STATS_PRE | FFNRT_STATS_OUTPUT;
    uint32_t preset[2 * SC_COUNT];
    for (unsigned c = 0; c < SC_COUNT; c++) {
        preset[2 * c] = 0xffffffffu - 7u * c; /* within n of the carry */
        preset[2 * c + 1] = c;
    }
    cr_assert_eq(ctx->ops->buffer_write(ctx->dev, ctx->stats_buffer->buffer, 0, preset, sizeof preset, &ctx->error),
                 FFNRT_OK);
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_RELU);
    ffnrt_status st = ffnrt_op_activation(ctx, &d, t, NULL, y, "counts_carry", &sc);
    cr_assert_eq(ffnrt_stats_end(ctx, &sc, st, NULL, NULL), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    ffnrt_stats s;
    cr_assert_eq(ffnrt_context_last_stats(ctx, &s), FFNRT_OK);
    uint64_t base[SC_COUNT];
    for (unsigned c = 0; c < SC_COUNT; c++)
        base[c] = (uint64_t)preset[2 * c] | (uint64_t)c << 32;
    cr_expect_eq(s.input_nan, base[SC_IN_NAN] + 500);
    cr_expect_eq(s.input_inf, base[SC_IN_INF] + 500);
    cr_expect_eq(s.output_nan, base[SC_OUT_NAN] + 500);
    cr_expect_eq(s.output_inf, base[SC_OUT_INF], "relu(-inf) = -0: no Inf out");
    cr_expect_eq(s.pre_nan, base[SC_PRE_NAN] + 500);
    cr_expect_eq(s.zero, base[SC_ZERO] + 2500, "zeros %llu", (unsigned long long)s.zero);
    cr_expect_gt(s.zero, UINT32_MAX, "past 2^32");
    ffnrt_tensor_destroy(t);
    ffnrt_tensor_destroy(y);
    free(x);
    test_context_done(ctx);
}

/* ------------------------------------------------------ options, errors */

Test(stats, bins_and_quantiles)
{
    /* The kernels' binning on the host: edges fall in the bin above. */
    cr_expect_eq(ffnrt_stats_bin(-4.0f, -4, 4, 16), 1);
    cr_expect_eq(ffnrt_stats_bin(nextafterf(-4.0f, -5), -4, 4, 16), 0);
    cr_expect_eq(ffnrt_stats_bin(-INFINITY, -4, 4, 16), 0);
    cr_expect_eq(ffnrt_stats_bin(-3.5f, -4, 4, 16), 2);
    cr_expect_eq(ffnrt_stats_bin(0.0f, -4, 4, 16), 9);
    cr_expect_eq(ffnrt_stats_bin(-0.0f, -4, 4, 16), 9);
    cr_expect_eq(ffnrt_stats_bin(3.9f, -4, 4, 16), 16);
    /* Just below hi the product rounds up to bins: the formula decides. */
    cr_expect_eq(ffnrt_stats_bin(nextafterf(4.0f, 0), -4, 4, 16), 17);
    cr_expect_eq(ffnrt_stats_bin(4.0f, -4, 4, 16), 17);
    cr_expect_eq(ffnrt_stats_bin(INFINITY, -4, 4, 16), 17);
    cr_expect_eq(ffnrt_stats_bin(NAN, -4, 4, 16), UINT32_MAX);
    uint32_t hist[6] = {1, 2, 3, 2, 1, 1}; /* 4 bins over [0, 4) */
    cr_expect(isnan(ffnrt_stats_quantile(hist, 4, 0, 4, 1.5)));
    cr_expect_eq(ffnrt_stats_quantile(hist, 4, 0, 4, 0.05), 0.0, "in the underflow bin: lo");
    /* 5 of 10: 3 below bin 1, 2 of its 3 in: 1 + 2/3. */
    cr_expect(fabs(ffnrt_stats_quantile(hist, 4, 0, 4, 0.5) - 5.0 / 3) < 1e-12, "%g",
              ffnrt_stats_quantile(hist, 4, 0, 4, 0.5));
    cr_expect_eq(ffnrt_stats_quantile(hist, 4, 0, 4, 1.0), 4.0);
}

BACKEND_PARAMETERS(stats, bad_options)
ParameterizedTest(ffnrt_backend *backend, stats, bad_options)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    struct {
        const char *field;
        ffnrt_stats_options o;
    } bad[7];
    for (int i = 0; i < 7; i++) {
        ffnrt_stats_options d = FFNRT_STATS_OPTIONS_INIT;
        bad[i].o = d;
        bad[i].o.bins = 8;
    }
    bad[0].field = "bins", bad[0].o.bins = FFNRT_STATS_MAX_BINS + 1;
    bad[1].field = "lo, hi", bad[1].o.lo = 1, bad[1].o.hi = 1;
    bad[2].field = "lo, hi", bad[2].o.hi = NAN;
    bad[3].field = "gate_lo", bad[3].o.gate_lo = INFINITY;
    bad[4].field = "saturation", bad[4].o.saturation = -1;
    bad[5].field = "enabled", bad[5].o.enabled = 2;
    bad[6].field = "check_finite", bad[6].o.check_finite = 3;
    for (int i = 0; i < 7; i++) {
        cr_expect_eq(ffnrt_context_set_stats(ctx, &bad[i].o), FFNRT_ERROR_INVALID_ARGUMENT, "%s", bad[i].field);
        cr_expect(strstr(ffnrt_last_error_message(), bad[i].field) != NULL, "%s: %s", bad[i].field,
                  ffnrt_last_error_message());
    }
    /* Refused options change nothing; stats stay off. */
    float y;
    cr_assert_eq(geglu_call(ctx, FFNRT_DTYPE_F32, 1, 1, &y), FFNRT_OK);
    ffnrt_stats s;
    cr_assert_eq(ffnrt_context_last_stats(ctx, &s), FFNRT_OK);
    cr_expect_eq(s.valid, 0);
    cr_expect_eq(ffnrt_context_last_stats(ctx, NULL), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_expect_eq(ffnrt_context_set_stats(NULL, NULL), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_expect_eq(ffnrt_context_last_stats(NULL, &s), FFNRT_ERROR_INVALID_ARGUMENT);
    /* Off again with NULL. */
    ffnrt_stats_options o = FFNRT_STATS_OPTIONS_INIT;
    cr_assert_eq(ffnrt_context_set_stats(ctx, &o), FFNRT_OK);
    cr_assert_eq(ffnrt_context_set_stats(ctx, NULL), FFNRT_OK);
    cr_assert_eq(geglu_call(ctx, FFNRT_DTYPE_F32, 2, 1, &y), FFNRT_OK);
    cr_assert_eq(ffnrt_context_last_stats(ctx, &s), FFNRT_OK);
    cr_expect_eq(s.valid, 0, "off: the last statistics stay as they were (none)");
    test_context_done(ctx);
}

/* ------------------------------------------------------------ FFN layers */

/* A layer whose products are exact in fp32: inputs in {0, 1}, weights and
 * biases small integers, so every pre-activation is an integer the host
 * knows, and ReLU / ReGLU hidden activations are too. Every 7th hidden
 * feature has only -1 weights in (and no bias): dead for every token. */
typedef struct ffn_case {
    int gated, bias, unfused;
    ffnrt_matmul_kernel matmul;
    ffnrt_dtype dtype;
    int64_t tokens;
    int edge; /* x holds a NaN, a +Inf and a -Inf (tokens 0, 1 and the last) */
} ffn_case;

#define FFN_D 24
#define FFN_H 37

static float w_in(int64_t n, int64_t k) { return n % 7 == 0 ? -1.0f : (float)((n * 5 + k) % 3) - 1.0f; }
static float w_value(int64_t n, int64_t k) { return (float)((n + 2 * k) % 3) - 1.0f; }
static float w_out(int64_t i, int64_t n) { return (float)((i * 3 + n) % 3) - 1.0f; }
static float b_in(int64_t n) { return n % 7 == 0 ? 0.0f : (float)(n % 4) - 1.0f; }

static void run_ffn(ffnrt_context *ctx, const ffn_case *c)
{
    int64_t t = c->tokens, d = FFN_D, hd = FFN_H;
    float *wg = malloc(sizeof(float) * hd * d), *wv = malloc(sizeof(float) * hd * d), *wo = malloc(sizeof(float) * hd * d);
    float bg[FFN_H], bv[FFN_H], bo[FFN_D];
    for (int64_t n = 0; n < hd; n++) {
        for (int64_t k = 0; k < d; k++) {
            wg[n * d + k] = w_in(n, k);
            wv[n * d + k] = w_value(n, k);
            wo[k * hd + n] = w_out(k, n);
        }
        bg[n] = b_in(n);
        bv[n] = (float)(n % 3);
    }
    for (int64_t k = 0; k < d; k++)
        bo[k] = (float)(k % 5) - 2.0f;
    /* Host weights in the layer's dtype (integers: exact in every one). */
    size_t es = ffnrt_dtype_size(c->dtype);
    void *hg = malloc(es * hd * d), *hv = malloc(es * hd * d), *ho = malloc(es * hd * d);
    void *hbg = malloc(es * hd), *hbv = malloc(es * hd), *hbo = malloc(es * d);
    struct {
        const float *f;
        void *h;
        size_t n;
    } conv[] = {{wg, hg, (size_t)(hd * d)}, {wv, hv, (size_t)(hd * d)}, {wo, ho, (size_t)(hd * d)},
                {bg, hbg, (size_t)hd},     {bv, hbv, (size_t)hd},     {bo, hbo, (size_t)d}};
    for (size_t i = 0; i < 6; i++)
        for (size_t j = 0; j < conv[i].n; j++)
            if (c->dtype == FFNRT_DTYPE_F32)
                ((float *)conv[i].h)[j] = conv[i].f[j];
            else
                ((uint16_t *)conv[i].h)[j] = encode16(c->dtype, conv[i].f[j]);
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(c->gated ? FFNRT_FFN_GATED : FFNRT_FFN_DENSE, d, hd);
    desc.dtype = c->dtype;
    desc.bias = c->bias;
    desc.activation = (ffnrt_activation_desc)FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_RELU);
    desc.glu = (ffnrt_glu_desc)FFNRT_GLU_DESC_INIT(FFNRT_REGLU);
    desc.path = c->unfused ? FFNRT_FFN_PATH_UNFUSED : FFNRT_FFN_PATH_FUSED;
    desc.matmul = c->matmul;
    ffnrt_ffn_weights w = {0};
    if (c->gated) {
        w.w_gate = hg, w.w_value = hv;
        w.b_gate = c->bias ? hbg : NULL, w.b_value = c->bias ? hbv : NULL;
    } else {
        w.w_in = hg, w.b_in = c->bias ? hbg : NULL;
    }
    w.w_out = ho, w.b_out = c->bias ? hbo : NULL;
    ffnrt_ffn *layer = NULL;
    cr_assert_eq(ffnrt_ffn_create(ctx, &desc, &w, &layer), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    float *x = malloc(sizeof(float) * t * d), *y = malloc(sizeof(float) * t * d);
    for (int64_t i = 0; i < t * d; i++)
        x[i] = (float)((i * 7 + i / d) % 3 != 0);
    if (c->edge) { /* Inf times a zero weight gives NaN, +Inf and -Inf meet: every class */
        x[3] = NAN;
        x[(t > 1 ? d : 0) + 5] = INFINITY;
        x[(t - 1) * d + 11] = -INFINITY;
    }
    int64_t shape[2] = {t, d};
    ffnrt_tensor *tx = tensor(ctx, c->dtype, 2, shape, x), *ty = tensor(ctx, c->dtype, 2, shape, x);
    ffnrt_stats_options o;
    options(&o, 32);
    o.lo = -24, o.hi = 24, o.gate_lo = 0, o.gate_hi = 32;
    cr_assert_eq(ffnrt_ffn_set_stats(layer, &o), FFNRT_OK);
    cr_assert_eq(ffnrt_ffn_forward(layer, tx, ty), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    ffnrt_stats s, sc;
    cr_assert_eq(ffnrt_ffn_last_stats(layer, &s), FFNRT_OK);
    cr_assert_eq(ffnrt_context_last_stats(ctx, &sc), FFNRT_OK);
    cr_expect(memcmp(&s, &sc, sizeof s) == 0, "the layer's and the context's last statistics");
    read_back(ty, y);
    char what[128];
    snprintf(what, sizeof what, "ffn %s %s%s %s %s %lld tokens%s", c->gated ? "reglu" : "relu",
             c->unfused ? "unfused" : "fused", c->bias ? " bias" : "",
             c->matmul == FFNRT_MATMUL_MATVEC ? "matvec" : c->matmul == FFNRT_MATMUL_TILED ? "tiled" : "auto kernel",
             ffnrt_dtype_name(c->dtype), (long long)t, c->edge ? " NaN/Inf in x" : "");
    host_stats hs;
    host_init(&hs);
    uint64_t zero = 0, dead = 0, hidden_bad = 0;
    double gsum = 0, gmax = 0, vsum = 0, vmax = 0;
    int alive[FFN_H] = {0};
    for (int64_t i = 0; i < t * d; i++) {
        host_in(&hs, x[i]);
        host_out(&hs, y[i], i, 0);
    }
    for (int64_t tk = 0; tk < t; tk++) {
        double g2 = 0, v2 = 0;
        for (int64_t n = 0; n < hd; n++) {
            float pre = c->bias ? bg[n] : 0.0f, val = c->bias ? bv[n] : 0.0f;
            for (int64_t k = 0; k < d; k++) {
                pre += x[tk * d + k] * wg[n * d + k];
                val += x[tk * d + k] * wv[n * d + k];
            }
            float a = isnan(pre) ? pre : pre > 0 ? pre : 0.0f, hval = c->gated ? stored(c->dtype, a * val) : stored(c->dtype, a);
            host_pre(&hs, pre, &s);
            if (c->gated) {
                host_gate(&hs, a, &s);
                g2 += (double)a * a;
                v2 += (double)val * val;
            }
            zero += hval == 0;
            hidden_bad += !isfinite(hval);
            alive[n] |= hval != 0;
        }
        gsum += sqrt(g2), vsum += sqrt(v2), gmax = fmax(gmax, sqrt(g2)), vmax = fmax(vmax, sqrt(v2));
    }
    for (int64_t n = 0; n < hd; n++)
        dead += !alive[n];
    hs.zero = zero;
    check(&s, &hs, what);
    cr_expect_eq(s.inputs, (uint64_t)(t * d), "%s", what);
    cr_expect_eq(s.activations, (uint64_t)(t * hd), "%s", what);
    cr_expect_eq(s.hidden_features, (uint64_t)hd, "%s", what);
    cr_expect_eq(s.dead_features, dead, "%s: dead features %llu, host %llu", what, (unsigned long long)s.dead_features,
                 (unsigned long long)dead);
    if (!c->edge)
        cr_expect_geq(dead, (uint64_t)(hd + 6) / 7, "%s: the layer has its dead features", what);
    cr_expect_eq(s.hidden_nonfinite, hidden_bad, "%s: non-finite hidden %llu, host %llu", what,
                 (unsigned long long)s.hidden_nonfinite, (unsigned long long)hidden_bad);
    if (c->edge)
        cr_expect(s.input_nan == 1 && s.input_inf == 2 && hidden_bad > 0 && s.output_nan + s.output_inf > 0,
                  "%s: the edge inputs reach the figures", what);
    uint32_t list[FFN_H];
    size_t count = 0;
    cr_assert_eq(ffnrt_ffn_dead_features(layer, list, FFN_H, &count), FFNRT_OK);
    cr_expect_eq(count, dead, "%s", what);
    for (size_t i = 0; i < count && i < FFN_H; i++)
        cr_expect(!alive[list[i]] && (i == 0 || list[i] > list[i - 1]), "%s: feature %u listed dead", what, list[i]);
    if (c->gated) {
        cr_expect_eq(s.tokens, (uint64_t)t, "%s", what);
        for (uint32_t b = 0; b < s.bins + 2; b++)
            cr_expect_eq(s.gate_hist[b], hs.ghist[b], "%s: gate bin %u holds %u, host %u", what, b, s.gate_hist[b],
                         hs.ghist[b]);
        if (isfinite(gsum)) {
            cr_expect(fabs(s.gate_norm_mean - gsum / t) <= 1e-5 * gsum / t + 1e-30, "%s: gate norm %.9g, host %.9g",
                      what, s.gate_norm_mean, gsum / t);
            cr_expect(fabs(s.gate_norm_max - gmax) <= 1e-5 * gmax, "%s: gate norm max", what);
        } else {
            cr_expect(!isfinite(s.gate_norm_mean) && !isfinite(s.gate_norm_max), "%s: a non-finite gate norm %g, max %g",
                      what, s.gate_norm_mean, s.gate_norm_max);
        }
        if (isfinite(vsum)) {
            cr_expect(fabs(s.value_norm_mean - vsum / t) <= 1e-5 * vsum / t + 1e-30, "%s: value norm %.9g, host %.9g",
                      what, s.value_norm_mean, vsum / t);
            cr_expect(fabs(s.value_norm_max - vmax) <= 1e-5 * vmax, "%s: value norm max", what);
        } else {
            cr_expect(!isfinite(s.value_norm_mean) && !isfinite(s.value_norm_max),
                      "%s: a non-finite value norm %g, max %g", what, s.value_norm_mean, s.value_norm_max);
        }
    } else {
        cr_expect_eq(s.tokens, 0, "%s", what);
    }
    ffnrt_tensor_destroy(tx);
    ffnrt_tensor_destroy(ty);
    ffnrt_ffn_destroy(layer);
    free(wg), free(wv), free(wo), free(hg), free(hv), free(ho), free(hbg), free(hbv), free(hbo), free(x), free(y);
}

BACKEND_PARAMETERS(stats, ffn)
ParameterizedTest(ffnrt_backend *backend, stats, ffn)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    ffn_case cases[] = {
        {1, 1, 0, FFNRT_MATMUL_AUTO, FFNRT_DTYPE_F32, 1, 0},    {1, 1, 0, FFNRT_MATMUL_AUTO, FFNRT_DTYPE_F32, 70, 0},
        {1, 0, 1, FFNRT_MATMUL_AUTO, FFNRT_DTYPE_F16, 3, 0},    {0, 1, 1, FFNRT_MATMUL_AUTO, FFNRT_DTYPE_F32, 5, 0},
        {0, 0, 0, FFNRT_MATMUL_AUTO, FFNRT_DTYPE_F16, 9, 0},    {1, 0, 0, FFNRT_MATMUL_MATVEC, FFNRT_DTYPE_F32, 3, 0},
        {0, 1, 0, FFNRT_MATMUL_TILED, FFNRT_DTYPE_BF16, 70, 0}, {1, 1, 0, FFNRT_MATMUL_TILED, FFNRT_DTYPE_F16, 20, 1},
        {1, 0, 0, FFNRT_MATMUL_MATVEC, FFNRT_DTYPE_BF16, 2, 1}, {0, 1, 0, FFNRT_MATMUL_AUTO, FFNRT_DTYPE_F32, 40, 1},
        {1, 1, 1, FFNRT_MATMUL_AUTO, FFNRT_DTYPE_BF16, 6, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!profiled() || i % 2 == 0)
            run_ffn(ctx, &cases[i]);
    test_context_done(ctx);
}

/* The finite check on a layer: a GEGLU layer whose hidden product passes
 * 65504 (gelu(400) * 400) stores Inf in f16 and gives a non-finite y from
 * a finite x; the same layer in f32 (the control) is finite. */
static ffnrt_status geglu_layer(ffnrt_context *ctx, ffnrt_dtype t, int check, float *y0)
{
    enum { D = 4, H = 4 };
    float wg[H * D], wo[D * H], x[2 * D];
    for (int i = 0; i < H * D; i++)
        wg[i] = 100.0f, wo[i] = 0.001f;
    for (int i = 0; i < 2 * D; i++)
        x[i] = 1.0f;
    uint16_t hg[H * D], ho[D * H];
    for (int i = 0; i < H * D; i++)
        hg[i] = encode16(FFNRT_DTYPE_F16, wg[i]), ho[i] = encode16(FFNRT_DTYPE_F16, wo[i]);
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, D, H);
    desc.dtype = t;
    desc.glu = (ffnrt_glu_desc)FFNRT_GLU_DESC_INIT(FFNRT_GEGLU);
    desc.glu.compute = FFNRT_COMPUTE_F32;
    ffnrt_ffn_weights w = {0};
    w.w_gate = w.w_value = t == FFNRT_DTYPE_F32 ? (const void *)wg : (const void *)hg;
    w.w_out = t == FFNRT_DTYPE_F32 ? (const void *)wo : (const void *)ho;
    ffnrt_ffn *layer = NULL;
    cr_assert_eq(ffnrt_ffn_create(ctx, &desc, &w, &layer), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    ffnrt_stats_options o = FFNRT_STATS_OPTIONS_INIT;
    o.enabled = 0;
    o.check_finite = check;
    cr_assert_eq(ffnrt_ffn_set_stats(layer, &o), FFNRT_OK);
    int64_t shape[2] = {2, D};
    ffnrt_tensor *tx = tensor(ctx, t, 2, shape, x), *ty = tensor(ctx, t, 2, shape, x);
    ffnrt_status st = ffnrt_ffn_forward(layer, tx, ty);
    snprintf(geglu_message, sizeof geglu_message, "%s", st ? ffnrt_last_error_message() : "");
    float y[2 * D];
    read_back(ty, y);
    *y0 = y[0];
    ffnrt_tensor_destroy(tx);
    ffnrt_tensor_destroy(ty);
    ffnrt_ffn_destroy(layer);
    return st;
}

BACKEND_PARAMETERS(stats, ffn_finite_check)
ParameterizedTest(ffnrt_backend *backend, stats, ffn_finite_check)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    float y;
    cr_assert_eq(geglu_layer(ctx, FFNRT_DTYPE_F16, 0, &y), FFNRT_OK, "off: stored as computed");
    cr_expect(!isfinite(y), "%g", (double)y);
    cr_assert_eq(geglu_layer(ctx, FFNRT_DTYPE_F16, 1, &y), FFNRT_ERROR_NON_FINITE);
    cr_expect(strstr(geglu_message, "ffnrt_ffn_forward") && strstr(geglu_message, "ffn geglu") &&
                  strstr(geglu_message, "f16 storage") && strstr(geglu_message, "flat index 0"),
              "%s", geglu_message);
    ffnrt_stats s;
    cr_assert_eq(ffnrt_context_last_stats(ctx, &s), FFNRT_OK);
    cr_expect(s.hidden_nonfinite == 8 && s.output_nan + s.output_inf == 8, "hidden %llu, y %llu",
              (unsigned long long)s.hidden_nonfinite, (unsigned long long)(s.output_nan + s.output_inf));
    cr_assert_eq(geglu_layer(ctx, FFNRT_DTYPE_F32, 1, &y), FFNRT_OK, "the fp32 control: %s", geglu_message);
    cr_expect(fabsf(y - 640.0f) < 0.01f, "%g", (double)y);
    test_context_done(ctx);
}

/* A layer with block-format weights (Q8_0, gated, fused and unfused): the
 * statistics variant of the kernels that dequantize builds and leaves y
 * as the kernels without it compute it, bit for bit; its figures count
 * the layer's tensors, and a NaN in x reaches the input count and y's
 * first non-finite index as read back. */
BACKEND_PARAMETERS(stats, ffn_quantized)
ParameterizedTest(ffnrt_backend *backend, stats, ffn_quantized)
{
    enum { D = 64, H = 96, T = 3 };
    ffnrt_context *ctx = test_context(*backend, NULL);
    float *w = malloc(sizeof(float) * D * H), x[T * D], y0[T * D], y1[T * D];
    for (int i = 0; i < D * H; i++)
        w[i] = (float)((i * 7919) % 201 - 100) * 1e-2f;
    for (int i = 0; i < T * D; i++)
        x[i] = (float)((i * 31) % 17 - 8) * 0.25f;
    x[D + 5] = NAN;
    size_t bin, bout;
    cr_assert_eq(ffnrt_weight_bytes(FFNRT_WEIGHT_Q8_0, H, D, &bin), FFNRT_OK);
    cr_assert_eq(ffnrt_weight_bytes(FFNRT_WEIGHT_Q8_0, D, H, &bout), FFNRT_OK);
    void *qi = malloc(bin), *qo = malloc(bout);
    cr_assert_eq(ffnrt_quantize(FFNRT_WEIGHT_Q8_0, w, H, D, qi, bin), FFNRT_OK);
    cr_assert_eq(ffnrt_quantize(FFNRT_WEIGHT_Q8_0, w, D, H, qo, bout), FFNRT_OK);
    int64_t shape[2] = {T, D};
    ffnrt_tensor *tx = tensor(ctx, FFNRT_DTYPE_F32, 2, shape, x), *ty = tensor(ctx, FFNRT_DTYPE_F32, 2, shape, x);
    for (int unfused = 0; unfused < 2; unfused++) {
        ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, D, H);
        desc.format_in = desc.format_value = desc.format_out = FFNRT_WEIGHT_Q8_0;
        desc.path = unfused ? FFNRT_FFN_PATH_UNFUSED : FFNRT_FFN_PATH_FUSED;
        ffnrt_ffn_weights wt = {0};
        wt.w_gate = wt.w_value = qi;
        wt.w_out = qo;
        ffnrt_ffn *layer = NULL;
        cr_assert_eq(ffnrt_ffn_create(ctx, &desc, &wt, &layer), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
        cr_assert_eq(ffnrt_ffn_forward(layer, tx, ty), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
        read_back(ty, y0);
        ffnrt_stats_options o;
        options(&o, 16);
        cr_assert_eq(ffnrt_ffn_set_stats(layer, &o), FFNRT_OK);
        cr_assert_eq(ffnrt_ffn_forward(layer, tx, ty), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
        read_back(ty, y1);
        cr_expect(memcmp(y0, y1, sizeof y0) == 0, "q8_0 %s: y with statistics differs", unfused ? "unfused" : "fused");
        ffnrt_stats s;
        cr_assert_eq(ffnrt_ffn_last_stats(layer, &s), FFNRT_OK);
        int64_t first = -1;
        uint64_t bad = 0;
        for (int i = 0; i < T * D; i++)
            if (!isfinite(y1[i])) {
                bad++;
                first = first < 0 ? i : first;
            }
        cr_expect(s.valid && s.inputs == T * D && s.input_nan == 1 && s.input_inf == 0 && s.pre_count == T * H &&
                      s.activations == T * H && s.hidden_features == H && s.tokens == T,
                  "q8_0 %s: counts", unfused ? "unfused" : "fused");
        cr_expect(s.output_nan + s.output_inf == bad && s.first_nonfinite == first && bad > 0,
                  "q8_0 %s: y's non-finite %llu first %lld, read back %llu first %lld", unfused ? "unfused" : "fused",
                  (unsigned long long)(s.output_nan + s.output_inf), (long long)s.first_nonfinite,
                  (unsigned long long)bad, (long long)first);
        ffnrt_ffn_destroy(layer);
    }
    ffnrt_tensor_destroy(tx);
    ffnrt_tensor_destroy(ty);
    free(w), free(qi), free(qo);
    test_context_done(ctx);
}
