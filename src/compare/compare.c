/* The seed's controlled comparison (ffnrt_compare.h): candidates at equal
 * weight counts, measured on one device in interleaved rounds, judged
 * against criteria sealed before anything runs.
 *
 * Every candidate of a kind shares one set of weights (the dense ones
 * W1, W2; the gated ones Wg, Wv, Wo), drawn once from the weight seed, so
 * the functions are compared on the same numbers and a large layer's
 * weights are in memory once per kind, not once per candidate. */
#include "compare_internal.h"
#include "lab.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------- the tables */

typedef struct candidate_row {
    const char *name;
    ffnrt_ffn_kind kind;
    int function; /* ffnrt_activation (dense) or ffnrt_glu (gated) */
} candidate_row;

static const candidate_row candidates[FFNRT_CANDIDATE_COUNT] = {
    [FFNRT_CANDIDATE_DENSE_RELU] = {"dense-relu", FFNRT_FFN_DENSE, FFNRT_ACT_RELU},
    [FFNRT_CANDIDATE_DENSE_GELU] = {"dense-gelu", FFNRT_FFN_DENSE, FFNRT_ACT_GELU},
    [FFNRT_CANDIDATE_DENSE_GELU_TANH] = {"dense-gelu_tanh", FFNRT_FFN_DENSE, FFNRT_ACT_GELU_TANH},
    [FFNRT_CANDIDATE_DENSE_SILU] = {"dense-silu", FFNRT_FFN_DENSE, FFNRT_ACT_SILU},
    [FFNRT_CANDIDATE_REGLU] = {"reglu", FFNRT_FFN_GATED, FFNRT_REGLU},
    [FFNRT_CANDIDATE_GEGLU] = {"geglu", FFNRT_FFN_GATED, FFNRT_GEGLU},
    [FFNRT_CANDIDATE_SWIGLU] = {"swiglu", FFNRT_FFN_GATED, FFNRT_SWIGLU},
};

/* The dtype dimension (compare_internal.h says what a row holds). */
static ffnrt_status upload_dense(ffnrt_context *ctx, const compare_format *f, const float *w, int64_t rows, int64_t k,
                                 ffnrt_tensor **out, ffnrt_error *err)
{
    return compare_upload(ctx, f->dtype, w, rows, k, out, err);
}

/* A block format (Q8_0, Q4_0, ...): the fp32 matrix quantized with GGUF's
 * reference rounding (ffnrt_quantize) and uploaded as GGUF's bytes, an f16
 * tensor of half as many elements (every block is an even count of bytes);
 * each layer repacks them at creation into buffers of its own. */
static ffnrt_status upload_blocks(ffnrt_context *ctx, const compare_format *f, const float *w, int64_t rows,
                                  int64_t k, ffnrt_tensor **out, ffnrt_error *err)
{
    static const char fn[] = "ffnrt_compare_run";
    size_t bytes = 0;
    if (ffnrt_weight_bytes(f->format, rows, k, &bytes) != FFNRT_OK)
        return ffnrt_fail(err, FFNRT_ERROR_SHAPE_MISMATCH, "%s: %s weights [%lld, %lld]: %s", fn,
                          ffnrt_weight_format_name(f->format), (long long)rows, (long long)k, ffnrt_last_error_message());
    void *q = malloc(bytes + 2);
    if (!q)
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    ffnrt_status st = ffnrt_quantize(f->format, w, rows, k, q, bytes);
    if (st != FFNRT_OK)
        st = ffnrt_fail(err, st, "%s: %s", fn, ffnrt_last_error_message());
    int64_t halves = (int64_t)(bytes / 2);
    ffnrt_tensor *t = NULL;
    if (st == FFNRT_OK)
        st = compare_called(ctx, ffnrt_tensor_create(ctx, FFNRT_DTYPE_F16, 1, &halves, &t), err);
    if (st == FFNRT_OK)
        st = compare_called(ctx, ffnrt_tensor_write(t, q, bytes), err);
    free(q);
    if (st != FFNRT_OK) {
        ffnrt_tensor_destroy(t);
        return st;
    }
    *out = t;
    return FFNRT_OK;
}

static void describe_blocks(const compare_format *f, ffnrt_ffn_desc *desc)
{
    desc->format_in = desc->format_out = f->format;
    if (desc->kind == FFNRT_FFN_GATED)
        desc->format_value = f->format; /* a dense layer has no value matrix */
}

/* Block formats run with fp32 activations, as GGUF models' layers do. */
static const compare_format formats[] = {
    {FFNRT_WEIGHT_F32, FFNRT_DTYPE_F32, upload_dense, NULL},
    {FFNRT_WEIGHT_F16, FFNRT_DTYPE_F16, upload_dense, NULL},
    {FFNRT_WEIGHT_BF16, FFNRT_DTYPE_BF16, upload_dense, NULL},
    {FFNRT_WEIGHT_Q8_0, FFNRT_DTYPE_F32, upload_blocks, describe_blocks},
    {FFNRT_WEIGHT_Q4_0, FFNRT_DTYPE_F32, upload_blocks, describe_blocks},
    {FFNRT_WEIGHT_Q4_1, FFNRT_DTYPE_F32, upload_blocks, describe_blocks},
    {FFNRT_WEIGHT_Q4_K, FFNRT_DTYPE_F32, upload_blocks, describe_blocks},
    {FFNRT_WEIGHT_Q6_K, FFNRT_DTYPE_F32, upload_blocks, describe_blocks},
};
#define NFORMATS (sizeof formats / sizeof formats[0])

static const compare_format *format_of(ffnrt_weight_format f)
{
    for (size_t i = 0; i < NFORMATS; i++)
        if (formats[i].format == f)
            return &formats[i];
    return NULL;
}

static const char *const criterion_names[FFNRT_CRITERION_COUNT] = {"latency", "memory", "throughput", "finite",
                                                                   "dead", "quality", "step_time", "train_memory"};
static const char *const verdict_names[] = {"-", "pass", "FAIL", "unmeasured"};

const char *ffnrt_compare_candidate_name(ffnrt_compare_candidate c)
{
    return (unsigned)c < FFNRT_CANDIDATE_COUNT ? candidates[c].name : "unknown";
}

ffnrt_status ffnrt_compare_candidate_from_name(const char *name, ffnrt_compare_candidate *out)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    int found = 0;
    for (int i = 0; name && out && i < FFNRT_CANDIDATE_COUNT && !found; i++)
        if (strcmp(name, candidates[i].name) == 0)
            *out = (ffnrt_compare_candidate)i, found = 1;
    if (!found)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT,
                   "ffnrt_compare_candidate_from_name: \"%.40s\" is not dense-relu, dense-gelu, dense-gelu_tanh, "
                   "dense-silu, reglu, geglu or swiglu", name ? name : "(null)");
    return ffnrt_lab_end_call(NULL, &err);
}

const char *ffnrt_compare_criterion_name(ffnrt_compare_criterion c)
{
    return (unsigned)c < FFNRT_CRITERION_COUNT ? criterion_names[c] : "unknown";
}

const char *ffnrt_compare_verdict_name(ffnrt_compare_verdict v)
{
    return (unsigned)v <= FFNRT_VERDICT_UNMEASURED ? verdict_names[v] : "unknown";
}

/* -------------------------------------------------------------- create */

/* The widths of a spec: m (given, or from the budget), g and the multiple. */
static ffnrt_status resolve_widths(const ffnrt_compare_spec *s, ffnrt_error *err, const char *fn, int64_t *m,
                                   int64_t *g, int64_t *mult)
{
    if (s->d_model < 1 || s->d_model > UINT32_MAX)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: d_model %lld is not in [1, 2^32 - 1]", fn,
                          (long long)s->d_model);
    *mult = s->multiple ? s->multiple : 1;
    if (*mult < 1 || *mult > UINT32_MAX)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: multiple %lld is not in [1, 2^32 - 1]", fn,
                          (long long)s->multiple);
    if (s->dense_hidden && s->parameter_budget)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                          "%s: give the dense width or a parameter budget, not both", fn);
    if (s->dense_hidden) {
        *m = s->dense_hidden;
    } else if (s->parameter_budget > 0) {
        /* the largest multiple of `multiple` with 2·d·m within the budget */
        *m = s->parameter_budget / (2 * s->d_model);
        *m -= *m % *mult;
        if (*m < 1)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                              "%s: a budget of %lld weights holds no dense layer of d_model %lld at a width that is "
                              "a multiple of %lld (2·d·m <= budget)", fn, (long long)s->parameter_budget,
                              (long long)s->d_model, (long long)*mult);
    } else {
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: dense_hidden %lld and parameter_budget %lld: one "
                          "must be positive", fn, (long long)s->dense_hidden, (long long)s->parameter_budget);
    }
    if (*m < 1 || *m > UINT32_MAX)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: the dense width %lld is not in [1, 2^32 - 1]", fn,
                          (long long)*m);
    *g = ffnrt_ffn_gated_hidden(*m, *mult);
    if (*g < 1 || *g > UINT32_MAX)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: no gated width for m = %lld at multiple %lld", fn,
                          (long long)*m, (long long)*mult);
    return FFNRT_OK;
}

static ffnrt_status check_spec(const ffnrt_compare_spec *s, ffnrt_error *err, int64_t *m, int64_t *g, int64_t *mult)
{
    static const char fn[] = "ffnrt_compare_create";
    ffnrt_status st = resolve_widths(s, err, fn, m, g, mult);
    if (st != FFNRT_OK)
        return st;
    if (s->candidates >> FFNRT_CANDIDATE_COUNT)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: candidates 0x%x names no candidate past bit %d", fn,
                          s->candidates, FFNRT_CANDIDATE_COUNT - 1);
    if (s->biases > 3)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: biases %u: 1 without, 2 with, 3 or 0 both", fn,
                          s->biases);
    for (int f = 0; f < 32; f++) {
        if (!(s->formats >> f & 1u))
            continue;
        if (f >= FFNRT_WEIGHT_FORMAT_COUNT)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: formats bit %d is no weight format", fn, f);
        if (!format_of((ffnrt_weight_format)f))
            return ffnrt_fail(err, FFNRT_ERROR_UNSUPPORTED, "%s: %s weights: the comparison has no row for this format",
                              fn, ffnrt_weight_format_name((ffnrt_weight_format)f));
    }
    if (s->ntokens > FFNRT_COMPARE_MAX_TOKENS)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %zu token counts, at most %d", fn, s->ntokens,
                          FFNRT_COMPARE_MAX_TOKENS);
    for (size_t i = 0; i < s->ntokens; i++)
        if (s->tokens[i] < 1 || s->tokens[i] > (1 << 24))
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: token count %lld is not in [1, 2^24]", fn,
                              (long long)s->tokens[i]);
    if (s->rounds > 10000)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %u rounds, at most 10000", fn, s->rounds);
    return FFNRT_OK;
}

/* The candidates and their accounting, known before anything runs. */
static ffnrt_status build_results(ffnrt_comparison *cmp)
{
    const ffnrt_compare_spec *s = &cmp->spec;
    uint32_t cand = s->candidates ? s->candidates : (1u << FFNRT_CANDIDATE_COUNT) - 1;
    uint32_t biases = s->biases ? s->biases : 3;
    uint32_t fmts = s->formats ? s->formats : 1u << FFNRT_WEIGHT_F32;
    size_t count = 0;
    for (size_t f = 0; f < NFORMATS; f++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < FFNRT_CANDIDATE_COUNT; c++)
                count += (fmts >> formats[f].format & 1u) && (biases >> b & 1u) && (cand >> c & 1u);
    cmp->results = calloc(count ? count : 1, sizeof *cmp->results);
    if (!cmp->results)
        return ffnrt_fail(&cmp->err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "ffnrt_compare_create: out of host memory");
    /* Results by format, then without and with biases, then candidate. */
    for (size_t f = 0; f < NFORMATS; f++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < FFNRT_CANDIDATE_COUNT; c++) {
                if (!((fmts >> formats[f].format & 1u) && (biases >> b & 1u) && (cand >> c & 1u)))
                    continue;
                ffnrt_compare_result *r = &cmp->results[cmp->nresults++];
                const candidate_row *row = &candidates[c];
                int gated = row->kind == FFNRT_FFN_GATED;
                r->candidate = (ffnrt_compare_candidate)c;
                r->format = formats[f].format;
                r->bias = b;
                r->desc = (ffnrt_ffn_desc)FFNRT_FFN_DESC_INIT(row->kind, s->d_model,
                                                              gated ? cmp->gated_hidden : cmp->dense_hidden);
                r->desc.dtype = formats[f].dtype;
                r->desc.bias = b;
                if (formats[f].describe)
                    formats[f].describe(&formats[f], &r->desc);
                if (gated)
                    r->desc.glu = (ffnrt_glu_desc)FFNRT_GLU_DESC_INIT((ffnrt_glu)row->function);
                else
                    r->desc.activation = (ffnrt_activation_desc)FFNRT_ACTIVATION_DESC_INIT((ffnrt_activation)row->function);
                ffnrt_ffn_cost c0, c1;
                ffnrt_ffn_desc d0 = r->desc, d1 = r->desc;
                d0.bias = 0;
                d1.bias = 1;
                /* The layer as ffnrt_ffn_create checks it (ffnrt_ffn_cost_of
                 * checks the desc alike), and its figures within 64 bits (so
                 * every host buffer's size is too). */
                ffnrt_status st = ffnrt_ffn_cost_of(&d1, 1 << 24, FFNRT_FFN_PATH_UNFUSED, &c1);
                if (st == FFNRT_OK)
                    st = ffnrt_ffn_cost_of(&d1, 1, FFNRT_FFN_PATH_FUSED, &c1);
                if (st == FFNRT_OK)
                    st = ffnrt_ffn_cost_of(&d0, 1, FFNRT_FFN_PATH_FUSED, &c0);
                if (st == FFNRT_ERROR_LIMIT_EXCEEDED)
                    return ffnrt_fail(&cmp->err, st,
                                      "ffnrt_compare_create: d_model %lld and width %lld: the layer's figures pass 64 "
                                      "bits", (long long)d1.d_model, (long long)d1.hidden);
                if (st != FFNRT_OK)
                    return ffnrt_fail(&cmp->err, st, "ffnrt_compare_create: %s", ffnrt_last_error_message());
                r->parameters_without_bias = c0.parameters;
                r->parameters_with_bias = c1.parameters;
                r->parameters = b ? c1.parameters : c0.parameters;
                r->status = FFNRT_OK;
            }
    return FFNRT_OK;
}

ffnrt_status ffnrt_compare_create(ffnrt_context *ctx, const ffnrt_compare_spec *spec,
                                  const ffnrt_compare_criteria *criteria, ffnrt_comparison **out)
{
    static const char fn[] = "ffnrt_compare_create";
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (out)
        *out = NULL;
    if (!ctx || !spec || !out) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !ctx ? "ctx" : spec ? "out" : "spec");
        return ffnrt_lab_end_call(ctx, &err);
    }
    int64_t m = 0, g = 0, mult = 1;
    ffnrt_compare_criteria c = FFNRT_COMPARE_CRITERIA_INIT;
    if (criteria)
        c = *criteria;
    ffnrt_status st = check_spec(spec, &err, &m, &g, &mult);
    if (st == FFNRT_OK)
        st = ffnrt_criteria_canonical(&c, NULL, 0, NULL, &err);
    ffnrt_comparison *cmp = NULL;
    if (st == FFNRT_OK && !(cmp = calloc(1, sizeof *cmp)))
        st = ffnrt_fail(&err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if (st == FFNRT_OK) {
        cmp->ctx = ctx;
        cmp->spec = *spec;
        cmp->dense_hidden = m;
        cmp->gated_hidden = g;
        cmp->multiple = mult;
        cmp->criteria = c;
        st = build_results(cmp);
        err = cmp->err;
    }
    if (st == FFNRT_OK)
        *out = cmp;
    else
        ffnrt_compare_destroy(cmp);
    return ffnrt_lab_end_call(ctx, &err);
}

ffnrt_status ffnrt_compare_set_criterion(ffnrt_comparison *cmp, const char *key, const char *value)
{
    static const char fn[] = "ffnrt_compare_set_criterion";
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!cmp)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: cmp is NULL", fn);
    else if (cmp->sealed)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT,
                   "%s: %.60s: the criteria were sealed when the run started (%s, sha256 %.16s...); no "
                   "criterion can be added after the run: fix them first and run again",
                   fn, key ? key : "(null)", cmp->sealed_at, cmp->criteria_sha256);
    else
        ffnrt_criteria_set_one(&cmp->criteria, key, value, &err);
    return ffnrt_lab_end_call(cmp ? cmp->ctx : NULL, &err);
}

void ffnrt_compare_destroy(ffnrt_comparison *cmp)
{
    if (!cmp)
        return;
    free(cmp->results);
    free(cmp);
}

ffnrt_status ffnrt_compare_sealed(const ffnrt_comparison *cmp, ffnrt_compare_criteria *criteria, const char **text,
                                  const char **sha256_hex, const char **sealed_at)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!cmp)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_compare_sealed: cmp is NULL");
    else if (!cmp->sealed)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_compare_sealed: the comparison has not run yet");
    else {
        if (criteria)
            *criteria = cmp->criteria;
        if (text)
            *text = cmp->criteria_text;
        if (sha256_hex)
            *sha256_hex = cmp->criteria_sha256;
        if (sealed_at)
            *sealed_at = cmp->sealed_at;
    }
    return ffnrt_lab_end_call(NULL, &err);
}

ffnrt_status ffnrt_compare_widths(const ffnrt_comparison *cmp, int64_t *dense_hidden, int64_t *gated_hidden,
                                  int64_t *multiple)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!cmp) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_compare_widths: cmp is NULL");
    } else {
        if (dense_hidden)
            *dense_hidden = cmp->dense_hidden;
        if (gated_hidden)
            *gated_hidden = cmp->gated_hidden;
        if (multiple)
            *multiple = cmp->multiple;
    }
    return ffnrt_lab_end_call(NULL, &err);
}

size_t ffnrt_compare_result_count(const ffnrt_comparison *cmp)
{
    return cmp ? cmp->nresults : 0;
}

const ffnrt_compare_result *ffnrt_compare_result_get(const ffnrt_comparison *cmp, size_t i)
{
    return cmp && i < cmp->nresults ? &cmp->results[i] : NULL;
}

/* ----------------------------------------------------------------- run */

void compare_progress(ffnrt_comparison *cmp, const char *fmt, ...)
{
    if (!cmp->spec.progress)
        return;
    char text[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    cmp->spec.progress(cmp->spec.progress_user, text);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The default token counts' bounds on a call's work (ffnrt_compare.h). */
#define DEFAULT_TOKENS_MIN_FLOP 1e6
#define DEFAULT_TOKENS_MAX_FLOP 2e10

/* Counts as "1, 8 and 64". */
static void list_counts(char *out, size_t len, const int64_t *t, size_t n)
{
    size_t at = 0;
    out[0] = 0;
    for (size_t i = 0; i < n && at < len; i++) {
        int w = snprintf(out + at, len - at, "%s%lld", i == 0 ? "" : i + 1 == n ? " and " : ", ", (long long)t[i]);
        if (w < 0)
            break;
        at += (size_t)w;
    }
}

/* A number of FLOPs as "18.4 kFLOP". */
static void flop_text(char *out, size_t len, double f)
{
    static const char *const unit[] = {"", "k", "M", "G", "T", "P"};
    int e = 0;
    while (f >= 1000 && e < 5)
        f /= 1000, e++;
    snprintf(out, len, e ? "%.3g %sFLOP" : "%.0f FLOP", f, unit[e]);
}

static ffnrt_status plan_tokens(const ffnrt_compare_spec *spec, const ffnrt_compare_criteria *criteria,
                                ffnrt_error *err, int64_t *out, size_t *nout, char *why, size_t why_len)
{
    static const char fn[] = "ffnrt_compare_plan_tokens";
    static const int64_t ladder[] = {1, 8, 64, 512};
    int64_t m = 0, g = 0, mult = 1;
    ffnrt_status st = resolve_widths(spec, err, fn, &m, &g, &mult);
    if (st != FFNRT_OK)
        return st;
    if (spec->ntokens > FFNRT_COMPARE_MAX_TOKENS)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %zu token counts, at most %d", fn, spec->ntokens,
                          FFNRT_COMPARE_MAX_TOKENS);
    int64_t t[FFNRT_COMPARE_MAX_TOKENS + 3];
    size_t n = 0;
    char reason[400] = "";
    if (spec->ntokens) {
        for (size_t i = 0; i < spec->ntokens; i++)
            t[n++] = spec->tokens[i];
        snprintf(reason, sizeof reason, "as given");
    } else {
        /* 2 FLOPs a weight: the larger of the dense 2dm and the gated 3dg. */
        double d = (double)spec->d_model, weights = 2 * d * (double)m > 3 * d * (double)g ? 2 * d * (double)m
                                                                                      : 3 * d * (double)g;
        double per_token = 2 * weights;
        int64_t low[4], high[4];
        size_t nlow = 0, nhigh = 0;
        for (size_t i = 0; i < 4; i++) {
            double work = per_token * (double)ladder[i];
            if (ladder[i] == 1 || (work >= DEFAULT_TOKENS_MIN_FLOP && work <= DEFAULT_TOKENS_MAX_FLOP))
                t[n++] = ladder[i];
            else if (work < DEFAULT_TOKENS_MIN_FLOP)
                low[nlow++] = ladder[i];
            else
                high[nhigh++] = ladder[i];
        }
        char lows[64], highs[64], f1[32], f2[32];
        list_counts(lows, sizeof lows, low, nlow);
        list_counts(highs, sizeof highs, high, nhigh);
        flop_text(f1, sizeof f1, per_token);
        int at = snprintf(reason, sizeof reason, "the defaults for this layer (%.0f weights, %s a token)", weights, f1);
        if (nlow && at > 0 && (size_t)at < sizeof reason) {
            flop_text(f2, sizeof f2, per_token * (double)low[nlow - 1]);
            at += snprintf(reason + at, sizeof reason - (size_t)at,
                           "; not %s: a call does at most %s, under the 1 MFLOP below which a call's time is mostly "
                           "its dispatches' overhead on any device, which the 1-token latency measures already", lows,
                           f2);
        }
        if (nhigh && at > 0 && (size_t)at < sizeof reason) {
            flop_text(f2, sizeof f2, per_token * (double)high[0]);
            snprintf(reason + at, sizeof reason - (size_t)at,
                     "; not %s: a call does %s or more, over the 20 GFLOP that take about a second a call on a CPU "
                     "driver", highs, f2);
        }
    }
    size_t given = n;
    t[n++] = 1;
    const ffnrt_compare_criteria none = FFNRT_COMPARE_CRITERIA_INIT;
    const ffnrt_compare_criteria *c = criteria ? criteria : &none;
    if (c->memory_tokens > 0)
        t[n++] = c->memory_tokens;
    if (c->throughput_tokens > 0)
        t[n++] = c->throughput_tokens;
    for (size_t i = 0; i < n; i++)
        if (t[i] < 1 || t[i] > (1 << 24))
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: token count %lld is not in [1, 2^24]", fn,
                              (long long)t[i]);
    /* What the latency and the criteria add to the counts chosen above. */
    static const char *const for_what[3] = {"the latency", "the criteria's memory count",
                                            "the criteria's throughput count"};
    char added[200] = "";
    size_t at = 0;
    for (size_t i = given; i < n; i++) {
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = t[j] == t[i];
        const char *what = for_what[i == given ? 0 : t[i] == c->memory_tokens && i == given + 1 ? 1 : 2];
        if (!seen && at < sizeof added) {
            int w = snprintf(added + at, sizeof added - at, "; %lld for %s", (long long)t[i], what);
            at += w > 0 ? (size_t)w : 0;
        }
    }
    qsort(t, n, sizeof t[0], cmp_i64);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || t[i] != t[u - 1])
            t[u++] = t[i];
    if (u > FFNRT_COMPARE_MAX_TOKENS)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %zu token counts with the criteria's, at most %d",
                          fn, u, FFNRT_COMPARE_MAX_TOKENS);
    if (out)
        memcpy(out, t, u * sizeof t[0]);
    if (nout)
        *nout = u;
    if (why && why_len) {
        char all[80];
        list_counts(all, sizeof all, t, u);
        snprintf(why, why_len, "%s: %s%s", all, reason, added);
    }
    return FFNRT_OK;
}

ffnrt_status ffnrt_compare_plan_tokens(const ffnrt_compare_spec *spec, const ffnrt_compare_criteria *criteria,
                                       int64_t tokens[FFNRT_COMPARE_MAX_TOKENS], size_t *ntokens, char *why,
                                       size_t why_len)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!spec || !tokens || !ntokens)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_compare_plan_tokens: %s is NULL",
                   !spec ? "spec" : !tokens ? "tokens" : "ntokens");
    else
        plan_tokens(spec, criteria, &err, tokens, ntokens, why, why_len);
    return ffnrt_lab_end_call(NULL, &err);
}

/* The token counts measured (ffnrt_compare_plan_tokens), with the criteria
 * as they stand when the run seals them. */
static ffnrt_status resolve_tokens(ffnrt_comparison *cmp)
{
    return plan_tokens(&cmp->spec, &cmp->criteria, &cmp->err, cmp->tokens, &cmp->ntokens, NULL, 0);
}

const ffnrt_compare_point *ffnrt_compare_result_point(const ffnrt_compare_result *r, int64_t tokens)
{
    for (size_t i = 0; r && i < r->npoints; i++)
        if (r->points[i].tokens == tokens)
            return &r->points[i];
    return NULL;
}

/* Judges one result against the sealed criteria. A candidate whose calls
 * failed fails every criterion of speed and memory; a stability criterion
 * whose figures could not be measured is "unmeasured", never a pass. */
static void judge(const ffnrt_comparison *cmp, ffnrt_compare_result *r)
{
    const ffnrt_compare_criteria *c = &cmp->criteria;
    int64_t largest = cmp->tokens[cmp->ntokens - 1];
    int failed_any = r->status != FFNRT_OK;
    for (size_t i = 0; i < r->npoints; i++)
        failed_any |= r->points[i].time.failed > 0 || r->points[i].time.runs == 0;
    for (int k = 0; k < FFNRT_CRITERION_COUNT; k++) {
        r->verdict[k] = FFNRT_VERDICT_NONE;
        r->judged[k] = 0;
    }
    const ffnrt_compare_point *p1 = ffnrt_compare_result_point(r, 1);
    const ffnrt_compare_point *pm = ffnrt_compare_result_point(r, c->memory_tokens ? c->memory_tokens : largest);
    const ffnrt_compare_point *pt = ffnrt_compare_result_point(r, c->throughput_tokens ? c->throughput_tokens : largest);
    int ok1 = p1 && p1->time.runs && !p1->time.failed && r->status == FFNRT_OK;
    int okm = pm && pm->peak_bytes && r->status == FFNRT_OK;
    int okt = pt && pt->time.runs && !pt->time.failed && r->status == FFNRT_OK;
    if (c->max_latency_ms > 0) {
        r->judged[FFNRT_CRITERION_LATENCY] = ok1 ? p1->time.mean_ms : NAN;
        r->verdict[FFNRT_CRITERION_LATENCY] = ok1 && p1->time.mean_ms <= c->max_latency_ms ? FFNRT_VERDICT_PASS
                                                                                            : FFNRT_VERDICT_FAIL;
    }
    if (c->max_memory_mib > 0) {
        double mib = okm ? (double)pm->peak_bytes / 1048576.0 : NAN;
        r->judged[FFNRT_CRITERION_MEMORY] = mib;
        r->verdict[FFNRT_CRITERION_MEMORY] = okm && mib <= c->max_memory_mib ? FFNRT_VERDICT_PASS : FFNRT_VERDICT_FAIL;
    }
    if (c->min_tokens_per_s > 0) {
        r->judged[FFNRT_CRITERION_THROUGHPUT] = okt ? pt->tokens_per_s : NAN;
        r->verdict[FFNRT_CRITERION_THROUGHPUT] = okt && pt->tokens_per_s >= c->min_tokens_per_s ? FFNRT_VERDICT_PASS
                                                                                                 : FFNRT_VERDICT_FAIL;
    }
    if (c->require_finite) {
        r->judged[FFNRT_CRITERION_FINITE] = r->stability_measured ? (double)r->nonfinite_outputs : NAN;
        r->verdict[FFNRT_CRITERION_FINITE] = !r->stability_measured     ? FFNRT_VERDICT_UNMEASURED
                                             : r->nonfinite_outputs == 0 ? FFNRT_VERDICT_PASS
                                                                         : FFNRT_VERDICT_FAIL;
    }
    if (c->max_dead_fraction >= 0) {
        r->judged[FFNRT_CRITERION_DEAD] = r->stability_measured ? r->dead_fraction_max : NAN;
        r->verdict[FFNRT_CRITERION_DEAD] = !r->stability_measured                          ? FFNRT_VERDICT_UNMEASURED
                                           : r->dead_fraction_max <= c->max_dead_fraction ? FFNRT_VERDICT_PASS
                                                                                           : FFNRT_VERDICT_FAIL;
    }
    /* Training: a run that failed counts as an infinite loss in the mean. */
    int trained = r->train_measured && r->train_runs > 0;
    if (c->max_val_rel_mse > 0) {
        double q = !trained ? NAN : r->train_failed ? INFINITY : r->val_rel_mse_mean;
        r->judged[FFNRT_CRITERION_QUALITY] = q;
        r->verdict[FFNRT_CRITERION_QUALITY] = !trained                     ? FFNRT_VERDICT_UNMEASURED
                                              : q <= c->max_val_rel_mse ? FFNRT_VERDICT_PASS
                                                                          : FFNRT_VERDICT_FAIL;
    }
    if (c->max_step_ms > 0) {
        r->judged[FFNRT_CRITERION_STEP_TIME] = trained ? r->step_ms : NAN;
        r->verdict[FFNRT_CRITERION_STEP_TIME] = !trained                       ? FFNRT_VERDICT_UNMEASURED
                                                : r->step_ms <= c->max_step_ms ? FFNRT_VERDICT_PASS
                                                                               : FFNRT_VERDICT_FAIL;
    }
    if (c->max_train_memory_mib > 0) {
        double mib = trained ? (double)r->train_bytes / 1048576.0 : NAN;
        r->judged[FFNRT_CRITERION_TRAIN_MEMORY] = mib;
        r->verdict[FFNRT_CRITERION_TRAIN_MEMORY] = !trained                           ? FFNRT_VERDICT_UNMEASURED
                                                   : mib <= c->max_train_memory_mib ? FFNRT_VERDICT_PASS
                                                                                    : FFNRT_VERDICT_FAIL;
    }
    r->pass = !failed_any;
    for (int k = 0; k < FFNRT_CRITERION_COUNT; k++)
        if (r->verdict[k] != FFNRT_VERDICT_NONE && r->verdict[k] != FFNRT_VERDICT_PASS)
            r->pass = 0;
}

/* ------------------------------------------------------------ progress */

/* A step's kernels before any of its kind ran: the fused path's two
 * products (a stability step adds the statistics' finishing pass; a
 * training step builds the unfused path, the backward's products and
 * transposes, the loss and the optimizer's passes). */
static const uint32_t prior_kernels[COMPARE_STEP_KINDS] = {2, 3, 20};

/* The context's kernels: built so far, or of them those its disk cache gave. */
static uint64_t kernels(const ffnrt_comparison *cmp, int loaded)
{
    ffnrt_kernel_stats ks = {0};
    ffnrt_context_kernel_stats(cmp->ctx, &ks);
    return loaded ? ks.loaded : ks.built;
}

void compare_step_begin(ffnrt_comparison *cmp, compare_step *s, compare_step_kind kind)
{
    s->kind = kind;
    s->t0 = lab_now_ms();
    s->kernels0 = kernels(cmp, 0);
    s->open = 1;
}

void compare_step_end(ffnrt_comparison *cmp, compare_step *s)
{
    if (!s->open)
        return;
    s->open = 0;
    cmp->compile_ms += lab_now_ms() - s->t0;
    cmp->step_kernels[s->kind] += kernels(cmp, 0) - s->kernels0;
    cmp->steps_done[s->kind]++;
}

void compare_step_skip(ffnrt_comparison *cmp, compare_step_kind kind)
{
    if (cmp->steps_total[kind] > cmp->steps_done[kind])
        cmp->steps_total[kind]--;
}

void compare_measured(ffnrt_comparison *cmp, double ms)
{
    cmp->measure_ms += ms;
}

ffnrt_status ffnrt_compare_get_progress(const ffnrt_comparison *cmp, ffnrt_compare_progress *out)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!cmp || !out) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_compare_get_progress: %s is NULL", cmp ? "out" : "cmp");
    } else if (!cmp->started) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_compare_get_progress: the comparison has not run yet");
    } else {
        memset(out, 0, sizeof *out);
        double to_go = 0;
        for (int k = 0; k < COMPARE_STEP_KINDS; k++) {
            out->steps_done += cmp->steps_done[k];
            out->steps_total += cmp->steps_total[k];
            double per_step = cmp->steps_done[k] ? (double)cmp->step_kernels[k] / cmp->steps_done[k] : prior_kernels[k];
            to_go += per_step * (double)(cmp->steps_total[k] - cmp->steps_done[k]);
        }
        out->kernels_built = kernels(cmp, 0) - cmp->kernels_at_start;
        out->kernels_cached = kernels(cmp, 1) - cmp->loaded_at_start;
        out->kernels_to_go = (uint64_t)(to_go + 0.5);
        out->compile_s = 1e-3 * cmp->compile_ms;
        out->measure_s = 1e-3 * cmp->measure_ms;
        out->elapsed_s = 1e-3 * ((cmp->end_ms > 0 ? cmp->end_ms : lab_now_ms()) - cmp->start_ms);
    }
    return ffnrt_lab_end_call(NULL, &err);
}

/* Every result of one format: weights, the token counts, stability. */
ffnrt_status ffnrt_compare_run(ffnrt_comparison *cmp)
{
    static const char fn[] = "ffnrt_compare_run";
    if (!cmp) {
        ffnrt_error err;
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: cmp is NULL", fn);
        return ffnrt_lab_end_call(NULL, &err);
    }
    ffnrt_context *ctx = cmp->ctx;
    ffnrt_error_clear(&cmp->err);
    if (cmp->sealed) {
        ffnrt_fail(&cmp->err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: this comparison already ran (%s)", fn, cmp->sealed_at);
        return ffnrt_lab_end_call(ctx, &cmp->err);
    }
    /* Thresholds first: the criteria are sealed before anything is measured. */
    ffnrt_status st = ffnrt_criteria_canonical(&cmp->criteria, cmp->criteria_text, sizeof cmp->criteria_text,
                                               cmp->criteria_sha256, &cmp->err);
    if (st == FFNRT_OK)
        st = resolve_tokens(cmp);
    if (st != FFNRT_OK)
        return ffnrt_lab_end_call(ctx, &cmp->err);
    lab_now_iso(cmp->sealed_at, sizeof cmp->sealed_at);
    cmp->sealed = 1;
    cmp->started = 1;
    cmp->start_ms = lab_now_ms();
    cmp->kernels_at_start = kernels(cmp, 0);
    cmp->loaded_at_start = kernels(cmp, 1);
    cmp->steps_total[COMPARE_STEP_TIMING] = (uint32_t)(cmp->nresults * cmp->ntokens);
    cmp->steps_total[COMPARE_STEP_STABILITY] = cmp->criteria.seeds ? (uint32_t)cmp->nresults : 0;
    uint32_t trainable = 0;
    for (size_t i = 0; i < cmp->nresults; i++)
        trainable += cmp->results[i].format == FFNRT_WEIGHT_F32;
    cmp->steps_total[COMPARE_STEP_TRAINING] = cmp->criteria.train_steps ? trainable : 0;

    for (size_t i = 0; i < cmp->nresults; i++) {
        ffnrt_compare_result *r = &cmp->results[i];
        r->npoints = cmp->ntokens;
        for (size_t t = 0; t < cmp->ntokens; t++)
            r->points[t].tokens = cmp->tokens[t];
    }
    size_t first = 0;
    for (size_t f = 0; f < NFORMATS && st == FFNRT_OK; f++) {
        size_t n = 0;
        while (first + n < cmp->nresults && cmp->results[first + n].format == formats[f].format)
            n++;
        if (n)
            st = compare_run_format(cmp, &formats[f], cmp->results + first, n);
        first += n;
    }
    if (st == FFNRT_OK && cmp->criteria.train_steps)
        compare_train_all(cmp);
    for (size_t i = 0; i < cmp->nresults; i++)
        judge(cmp, &cmp->results[i]);
    cmp->end_ms = lab_now_ms();
    if (st == FFNRT_OK) /* a candidate's own failures are in its result */
        ffnrt_error_clear(&cmp->err);
    return ffnrt_lab_end_call(ctx, &cmp->err);
}
