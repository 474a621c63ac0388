/* Statistics computed in the ops' own kernels (shaders/stats.inc): the
 * public calls, and each call's preparation, read-back and finite check.
 * dispatch/stats_choice.c decides whether a call runs the statistics
 * variant; the launchers build it (launch/stats_launch.c). */
#include "ops/stats.h"
#include "ops/ffn_internal.h"
#include "../../shaders/stats_layout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- binning */

/* bins / (hi - lo) in fp32, as the kernels are given it. */
static float bin_scale(float lo, float hi, uint32_t bins) { return (float)bins / (hi - lo); }

uint32_t ffnrt_stats_bin(float x, float lo, float hi, uint32_t bins)
{
    if (isnan(x))
        return UINT32_MAX;
    if (!(x >= lo))
        return 0;
    volatile float t = (x - lo) * bin_scale(lo, hi, bins); /* rounded to fp32 as the kernels round it */
    return t >= (float)bins ? bins + 1 : (uint32_t)t + 1;
}

double ffnrt_stats_quantile(const uint32_t *hist, uint32_t bins, float lo, float hi, double q)
{
    if (!hist || bins == 0 || bins > FFNRT_STATS_MAX_BINS || !(q >= 0 && q <= 1))
        return NAN;
    double total = 0;
    for (uint32_t i = 0; i < bins + 2; i++)
        total += hist[i];
    if (total == 0)
        return NAN;
    double want = q * total, below = hist[0];
    if (want <= below)
        return lo;
    double w = ((double)hi - lo) / bins;
    for (uint32_t i = 0; i < bins; i++) {
        double in = hist[1 + i];
        if (want <= below + in && in > 0)
            return lo + w * (i + (want - below) / in);
        below += in;
    }
    return hi;
}

/* ------------------------------------------------------------- saturation */

static double sigmoid_grad(double x)
{
    double s = 1 / (1 + exp(-x));
    return s * (1 - s);
}

static double tanh_grad(double x)
{
    double t = tanh(x);
    return 1 - t * t;
}

/* The activations that saturate: |f'(x)| falls with |x| from its peak at 0. */
static const struct {
    ffnrt_activation act;
    double (*grad)(double);
} saturating[] = {{FFNRT_ACT_SIGMOID, sigmoid_grad}, {FFNRT_ACT_TANH, tanh_grad}};

/* |x| above which |f'(x)| < threshold, rounded to fp32: +inf where the op
 * does not saturate or nothing is below the threshold, -1 where all is. */
static float saturation_cut(ffnrt_activation act, float threshold)
{
    for (size_t i = 0; i < sizeof saturating / sizeof saturating[0]; i++) {
        if (saturating[i].act != act)
            continue;
        double (*g)(double) = saturating[i].grad;
        if (!(threshold > 0))
            return INFINITY;
        if (g(0) < threshold)
            return -1.0f;
        double a = 0, b = 1;
        while (g(b) >= threshold && b < 1e6)
            b *= 2;
        if (g(b) >= threshold)
            return INFINITY;
        for (int k = 0; k < 200; k++) { /* g(a) >= threshold > g(b) */
            double m = 0.5 * (a + b);
            if (g(m) >= threshold)
                a = m;
            else
                b = m;
        }
        return (float)a;
    }
    return INFINITY;
}

/* ------------------------------------------------------------ the buffer */

/* Words of the buffer a call uses: the header, its tokens' squared norms,
 * its feature bits. */
static uint64_t call_words(const ffnrt_stats_call *c)
{
    return SW_HEADER + 2 * c->tokens + (c->hidden + 31) / 32;
}

static ffnrt_status prepare_buffer(ffnrt_context *ctx, uint64_t words, const char *fn)
{
    if (ctx->stats_buffer && ctx->stats_buffer->numel < words) {
        ffnrt_tensor_free(ctx->stats_buffer);
        ctx->stats_buffer = NULL;
    }
    if (!ctx->stats_buffer) {
        int64_t n = (int64_t)(words < 4096 ? 4096 : words);
        ffnrt_status st = ffnrt_tensor_alloc(ctx, FFNRT_DTYPE_F32, 1, &n, fn, &ctx->stats_buffer);
        if (st != FFNRT_OK)
            return st;
    }
    size_t bytes = (size_t)words * 4;
    if (ctx->stats_zeros_bytes < bytes) {
        uint32_t *z = calloc(1, bytes);
        if (!z)
            return ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: statistics: out of host memory", fn);
        z[SW_FIRST] = 0xffffffffu;
        z[SW_MIN] = 0xffffffffu;
        free(ctx->stats_zeros);
        ctx->stats_zeros = z;
        ctx->stats_zeros_bytes = bytes;
    }
    return ffnrt_tensor_upload(ctx->stats_buffer, ctx->stats_zeros, bytes);
}

ffnrt_status ffnrt_stats_begin(ffnrt_context *ctx, const ffnrt_stats_options *layer, ffnrt_stats_call *c)
{
    memset(&c->run, 0, sizeof c->run);
    c->fp16 = 0;
    ffnrt_choose_stats(ctx, layer, &c->choice, ctx->plan_sink);
    if (!c->choice.on)
        return FFNRT_OK;
    if (ctx->external && !ctx->plan_sink)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_UNSUPPORTED,
                          "%s: statistics (and the finite check) read their results back, which the app's recording "
                          "(ffnrt_vulkan_record_begin, ffnrt_opencl_enqueue_begin) does not allow",
                          c->fn);
    const ffnrt_stats_options *o = &c->choice.options;
    ffnrt_stats_run *r = &c->run;
    r->bins = o->bins;
    if (o->bins) {
        r->roles |= FFNRT_STATS_HIST;
        r->lo = o->lo;
        r->scale = bin_scale(o->lo, o->hi, o->bins);
        r->gate_lo = o->gate_lo;
        r->gate_scale = bin_scale(o->gate_lo, o->gate_hi, o->bins);
    }
    r->saturation_cut = saturation_cut(c->act, o->saturation);
    r->serial = c->choice.serial;
    r->hist_stash = c->choice.hist_stash;
    r->items = c->choice.items;
    r->rows_at = SW_HEADER;
    r->rows = c->tokens;
    r->feat_at = (uint32_t)(SW_HEADER + 2 * c->tokens);
    if (ctx->plan_sink)
        return FFNRT_OK;
    ffnrt_status st = prepare_buffer(ctx, call_words(c), c->fn);
    r->buffer = ctx->stats_buffer;
    return st;
}

/* ------------------------------------------------------------- read-back */

static uint64_t counter(const uint32_t *w, unsigned c)
{
    return (uint64_t)w[SW_COUNTERS + 2 * c] | (uint64_t)w[SW_COUNTERS + 2 * c + 1] << 32;
}

static float key_value(uint32_t key)
{
    uint32_t b = key & 0x80000000u ? key ^ 0x80000000u : ~key;
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* Moment q: the exact sum of its buckets (stats_layout.h). */
static long double moment(const uint32_t *w, unsigned q)
{
    long double sum = 0;
    for (int e = 0; e < 256; e++) {
        const uint32_t *b = &w[SW_SUMS + (q * 256 + (unsigned)e) * 2];
        int64_t v = (int64_t)((uint64_t)b[0] | (uint64_t)b[1] << 32);
        if (v)
            sum += ldexpl((long double)v, (e ? e : 1) - 150);
    }
    return sum;
}

static void fill(const ffnrt_stats_call *c, const uint32_t *w, ffnrt_stats *s)
{
    memset(s, 0, sizeof *s);
    s->valid = 1;
    snprintf(s->op, sizeof s->op, "%s", c->op);
    s->dtype = c->dtype;
    s->fp16_arithmetic = c->fp16;
    s->inputs = c->inputs;
    s->input_nan = counter(w, SC_IN_NAN);
    s->input_inf = counter(w, SC_IN_INF);
    s->outputs = c->outputs;
    s->output_nan = counter(w, SC_OUT_NAN);
    s->output_inf = counter(w, SC_OUT_INF);
    s->first_nonfinite = w[SW_FIRST] == 0xffffffffu ? -1 : (int64_t)w[SW_FIRST];
    s->pre_count = c->pre;
    s->pre_nan = counter(w, SC_PRE_NAN);
    s->pre_inf = counter(w, SC_PRE_INF);
    uint64_t finite = s->pre_count - s->pre_nan - s->pre_inf;
    s->pre_min = w[SW_MIN] == 0xffffffffu ? NAN : key_value(w[SW_MIN]);
    s->pre_max = w[SW_MIN] == 0xffffffffu ? NAN : key_value(w[SW_MAX]);
    s->pre_mean = finite ? (double)(moment(w, SQ_SUM) / finite) : NAN;
    s->pre_rms = finite ? (double)sqrtl(moment(w, SQ_SUMSQ) / finite) : NAN;
    if (w[SW_FLAGS] & (1u << SQ_SUM))
        s->pre_mean = NAN;
    if (w[SW_FLAGS] & (1u << SQ_SUMSQ))
        s->pre_rms = INFINITY;
    const ffnrt_stats_options *o = &c->choice.options;
    s->bins = o->bins;
    s->lo = o->lo;
    s->hi = o->hi;
    s->gate_lo = o->gate_lo;
    s->gate_hi = o->gate_hi;
    if (o->bins) {
        memcpy(s->hist, &w[SW_HIST], (o->bins + 2) * sizeof(uint32_t));
        if (c->tokens)
            memcpy(s->gate_hist, &w[SW_GATE_HIST], (o->bins + 2) * sizeof(uint32_t));
    }
    s->activations = c->activations;
    s->zero = counter(w, SC_ZERO);
    s->dead_fraction = s->activations ? (double)s->zero / (double)s->activations : 0;
    s->saturated = counter(w, SC_SATURATED);
    s->saturated_fraction = s->pre_count ? (double)s->saturated / (double)s->pre_count : 0;
    s->saturation_cut = c->run.saturation_cut;
    s->hidden_nonfinite = counter(w, SC_HIDDEN_BAD);
    s->hidden_features = c->hidden;
    const uint32_t *bits = &w[c->run.feat_at];
    for (uint64_t f = 0; f < c->hidden; f++)
        s->dead_features += !(bits[f / 32] >> (f % 32) & 1);
    s->tokens = c->tokens;
    if (c->tokens) {
        float n[4];
        memcpy(n, &w[SW_NORMS], sizeof n);
        s->gate_norm_mean = n[0] / (double)c->tokens;
        s->gate_norm_max = n[1];
        s->value_norm_mean = n[2] / (double)c->tokens;
        s->value_norm_max = n[3];
    }
}

static ffnrt_status keep(ffnrt_context *ctx, ffnrt_stats **slot, const ffnrt_stats *s, const char *fn)
{
    if (!*slot && !(*slot = malloc(sizeof **slot)))
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: statistics: out of host memory", fn);
    **slot = *s;
    return FFNRT_OK;
}

/* The finite check's message: the op, its precision, the first index, and
 * how to tell the data from the kernel. */
static ffnrt_status non_finite(ffnrt_context *ctx, const ffnrt_stats_call *c, const ffnrt_stats *s)
{
    return ffnrt_fail(&ctx->error, FFNRT_ERROR_NON_FINITE,
                      "%s (%s, %s storage, %s arithmetic): %llu non-finite output%s (%llu NaN, %llu Inf) from "
                      "finite inputs, the first at flat index %lld; rerun the call in fp32 (f32 tensors, "
                      "FFNRT_COMPUTE_F32) as a control: finite there means the %s precision overflowed or lost "
                      "it (ffnrt check --fp32-control OP X... shows both), non-finite there means the data or the "
                      "op's math itself",
                      c->fn, c->op, ffnrt_dtype_name(c->dtype), c->fp16 ? "fp16" : "fp32",
                      (unsigned long long)(s->output_nan + s->output_inf), s->output_nan + s->output_inf == 1 ? "" : "s",
                      (unsigned long long)s->output_nan, (unsigned long long)s->output_inf,
                      (long long)s->first_nonfinite, ffnrt_dtype_name(c->dtype));
}

ffnrt_status ffnrt_stats_end(ffnrt_context *ctx, ffnrt_stats_call *c, ffnrt_status st, ffnrt_stats **layer_stats,
                             uint32_t **features)
{
    if (!c->choice.on || ctx->plan_sink || st != FFNRT_OK)
        return st;
    uint64_t words = call_words(c);
    uint32_t *w = malloc((size_t)words * 4);
    ffnrt_stats *s = malloc(sizeof *s);
    if (!w || !s)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: statistics: out of host memory", c->fn);
    if (st == FFNRT_OK)
        st = ffnrt_context_settle(ctx);
    if (st == FFNRT_OK)
        st = ctx->ops->buffer_read(ctx->dev, ctx->stats_buffer->buffer, ctx->stats_buffer->offset, w, words * 4,
                                   &ctx->error);
    if (st == FFNRT_OK) {
        fill(c, w, s);
        st = keep(ctx, &ctx->last_stats, s, c->fn);
    }
    if (st == FFNRT_OK && layer_stats)
        st = keep(ctx, layer_stats, s, c->fn);
    if (st == FFNRT_OK && features && c->hidden) {
        size_t n = (size_t)((c->hidden + 31) / 32);
        if (!*features && !(*features = malloc(n * sizeof **features)))
            st = ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: statistics: out of host memory", c->fn);
        else
            memcpy(*features, &w[c->run.feat_at], n * sizeof **features);
    }
    if (st == FFNRT_OK && c->choice.check_finite && s->input_nan + s->input_inf == 0 &&
        s->output_nan + s->output_inf > 0)
        st = non_finite(ctx, c, s);
    free(w);
    free(s);
    return st;
}

/* ----------------------------------------------------------- public calls */

ffnrt_status ffnrt_context_set_stats(ffnrt_context *ctx, const ffnrt_stats_options *options)
{
    static const char fn[] = "ffnrt_context_set_stats";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_status st = options ? ffnrt_stats_options_check(options, fn, &ctx->error) : FFNRT_OK;
    if (st == FFNRT_OK) {
        ctx->stats_set = options != NULL;
        if (options)
            ctx->stats_options = *options;
    }
    return ffnrt_context_finish_call(ctx, st);
}

static ffnrt_status copy_stats(const ffnrt_stats *from, ffnrt_stats *out, const char *fn)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!out)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: out is NULL", fn);
    else if (from)
        *out = *from;
    else
        memset(out, 0, sizeof *out);
    ffnrt_error_publish(&err);
    return err.status;
}

ffnrt_status ffnrt_context_last_stats(const ffnrt_context *ctx, ffnrt_stats *out)
{
    if (!ctx)
        return ffnrt_null_handle("ffnrt_context_last_stats", "ctx");
    return copy_stats(ctx->last_stats, out, "ffnrt_context_last_stats");
}

ffnrt_status ffnrt_ffn_set_stats(ffnrt_ffn *layer, const ffnrt_stats_options *options)
{
    static const char fn[] = "ffnrt_ffn_set_stats";
    if (!layer)
        return ffnrt_null_handle(fn, "layer");
    ffnrt_status st = options ? ffnrt_stats_options_check(options, fn, &layer->ctx->error) : FFNRT_OK;
    if (st == FFNRT_OK) {
        layer->stats_set = options != NULL;
        if (options)
            layer->stats_options = *options;
    }
    return ffnrt_context_finish_call(layer->ctx, st);
}

ffnrt_status ffnrt_ffn_last_stats(const ffnrt_ffn *layer, ffnrt_stats *out)
{
    if (!layer)
        return ffnrt_null_handle("ffnrt_ffn_last_stats", "layer");
    return copy_stats(layer->last_stats, out, "ffnrt_ffn_last_stats");
}

ffnrt_status ffnrt_ffn_dead_features(const ffnrt_ffn *layer, uint32_t *features, size_t cap, size_t *count)
{
    static const char fn[] = "ffnrt_ffn_dead_features";
    if (!layer)
        return ffnrt_null_handle(fn, "layer");
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!count || (cap && !features)) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, count ? "features" : "count");
    } else {
        size_t n = 0;
        uint64_t hidden = layer->last_stats && layer->feature_bits ? (uint64_t)layer->desc.hidden : 0;
        for (uint64_t f = 0; f < hidden; f++)
            if (!(layer->feature_bits[f / 32] >> (f % 32) & 1)) {
                if (n < cap)
                    features[n] = (uint32_t)f;
                n++;
            }
        *count = n;
    }
    ffnrt_error_publish(&err);
    return err.status;
}
