/* The seed's controlled comparison (ffnrt_compare.h): the criteria's text
 * and hash, thresholds first (a criterion given after the run refused),
 * the seed's accounting (d = 6, m = 12: 144 weights dense and gated at
 * g = 8), measured peak memory against the cost model, failed runs
 * counted, verdicts, bad specs. Tiny shapes, two rounds and one pair of
 * candidates (the seed's GELU against SwiGLU) on the devices: the point is
 * the bookkeeping, speed is the bench's. */
#include "device_fixture.h"
#include "ffnrt_compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPECT(call, status)                                                                                  \
    do {                                                                                                      \
        ffnrt_status st_ = (call);                                                                            \
        cr_assert_eq(st_, (status), "%s returned %s, expected %s (%s)", #call, ffnrt_status_string(st_),     \
                     ffnrt_status_string(status), ffnrt_last_error_message());                                \
    } while (0)

/* ------------------------------------------------------------ criteria */

Test(compare, criteria_text_round_trip)
{
    const char *file = "# thresholds, fixed before the run\n"
                       "max_latency_ms = 2.5   # a 1-token call\n"
                       "\n"
                       "  min_tokens_per_s=1e4\n"
                       "throughput_tokens = 512\n"
                       "finite = yes\n"
                       "max_dead_fraction = 0.1\n"
                       "input = uniform -3 3\n"
                       "seeds = 5";
    ffnrt_compare_criteria c;
    EXPECT(ffnrt_compare_criteria_parse(file, &c), FFNRT_OK);
    cr_assert_eq(c.max_latency_ms, 2.5);
    cr_assert_eq(c.min_tokens_per_s, 1e4);
    cr_assert_eq(c.throughput_tokens, 512);
    cr_assert_eq(c.require_finite, 1);
    cr_assert_eq(c.max_dead_fraction, 0.1);
    cr_assert_eq(c.input, FFNRT_INPUT_UNIFORM);
    cr_assert_eq(c.input_a, -3);
    cr_assert_eq(c.input_b, 3);
    cr_assert_eq(c.seeds, 5);
    cr_assert_eq(c.max_memory_mib, 0, "a key not given keeps its default (no criterion)");
    cr_assert_eq(c.stability_tokens, 64);

    /* The canonical text reads back as the same criteria, and hashes alike. */
    char text[1024], again[1024], h1[65], h2[65];
    EXPECT(ffnrt_compare_criteria_text(&c, text, sizeof text, h1), FFNRT_OK);
    cr_assert(strstr(text, "max_latency_ms = 2.5\n"), "%s", text);
    cr_assert(strstr(text, "min_tokens_per_s = 10000\n"), "whole numbers as such: %s", text);
    cr_assert(strstr(text, "max_memory_mib = none\n"), "%s", text);
    cr_assert(strstr(text, "input = uniform -3 3\n"), "%s", text);
    ffnrt_compare_criteria back;
    EXPECT(ffnrt_compare_criteria_parse(text, &back), FFNRT_OK);
    EXPECT(ffnrt_compare_criteria_text(&back, again, sizeof again, h2), FFNRT_OK);
    cr_assert_str_eq(text, again);
    cr_assert_str_eq(h1, h2);
    cr_assert_eq(strlen(h1), 64);

    /* Any change moves the hash; a too-small buffer is refused. */
    EXPECT(ffnrt_compare_criteria_set(&back, "max_latency_ms", "2.6"), FFNRT_OK);
    EXPECT(ffnrt_compare_criteria_text(&back, NULL, 0, h2), FFNRT_OK);
    cr_assert_str_neq(h1, h2);
    EXPECT(ffnrt_compare_criteria_text(&back, text, 16, NULL), FFNRT_ERROR_INVALID_ARGUMENT);

    /* Defaults: nothing is a criterion, and the stated distribution is N(0, 1). */
    ffnrt_compare_criteria none = FFNRT_COMPARE_CRITERIA_INIT;
    EXPECT(ffnrt_compare_criteria_parse("# nothing\n", &c), FFNRT_OK);
    EXPECT(ffnrt_compare_criteria_text(&c, again, sizeof again, NULL), FFNRT_OK);
    EXPECT(ffnrt_compare_criteria_text(&none, text, sizeof text, NULL), FFNRT_OK);
    cr_assert_str_eq(text, again);
    cr_assert(strstr(text, "max_latency_ms = none\nmax_memory_mib = none\n"), "%s", text);
    cr_assert(strstr(text, "input = normal 0 1\n"), "%s", text);
}

Test(compare, criteria_refused)
{
    static const struct {
        const char *text, *says;
    } bad[] = {
        {"max_latency_ms = 2\nmax_latency = 3\n", "line 2"},          /* unknown key */
        {"seeds = 3\nseeds = 4\n", "twice"},                          /* a key twice */
        {"max_latency_ms = -1\n", "max_latency_ms"},                 /* out of range */
        {"max_latency_ms = 5ms\n", "max_latency_ms"},                /* trailing text */
        {"max_dead_fraction = 1.5\n", "max_dead_fraction"},
        {"input = normal 0 0\n", "input"},                           /* no spread */
        {"input = uniform 1 1\n", "input"},
        {"input = cauchy 0 1\n", "input"},
        {"seeds = 65\n", "seeds"},
        {"seeds = 0\nfinite = yes\n", "seeds = 0"},                  /* a stability criterion, no figures */
        {"max_dead_fraction = 0.1\nseeds = 0\n", "seeds = 0"},
        {"finite = maybe\n", "finite"},
        {"throughput_tokens = -8\n", "throughput_tokens"},
        {"max_memory_mib = inf\n", "max_memory_mib"},
        {"just some words\n", "key = value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ffnrt_compare_criteria c = FFNRT_COMPARE_CRITERIA_INIT;
        c.seeds = 7; /* untouched on failure */
        EXPECT(ffnrt_compare_criteria_parse(bad[i].text, &c), FFNRT_ERROR_INVALID_ARGUMENT);
        cr_assert(strstr(ffnrt_last_error_message(), bad[i].says), "\"%s\": the message \"%s\" does not say \"%s\"",
                  bad[i].text, ffnrt_last_error_message(), bad[i].says);
        cr_assert_eq(c.seeds, 7);
    }
    ffnrt_compare_criteria c = FFNRT_COMPARE_CRITERIA_INIT;
    EXPECT(ffnrt_compare_criteria_set(&c, "max_latency_ms", "none"), FFNRT_OK);
    EXPECT(ffnrt_compare_criteria_set(&c, NULL, "1"), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_compare_criteria_parse(NULL, &c), FFNRT_ERROR_INVALID_ARGUMENT);
    /* A struct filled by hand out of range has no canonical text. */
    c.seeds = 65;
    EXPECT(ffnrt_compare_criteria_text(&c, NULL, 0, NULL), FFNRT_ERROR_INVALID_ARGUMENT);
}

/* The default token counts: a function of the spec (and the criteria's
 * counts) alone, known before any device runs; 1 always, then each of 8,
 * 64 and 512 whose call does 1 MFLOP to 20 GFLOP (4dm FLOP a token). */
Test(compare, plan_tokens)
{
    static const struct {
        int64_t d, m, multiple;
        size_t n;
        int64_t t[4];
        const char *says;
    } cases[] = {
        {6, 12, 1, 1, {1}, "not 8, 64 and 512: a call does at most 147 kFLOP"}, /* the seed's: all overhead */
        {64, 256, 1, 3, {1, 64, 512}, "not 8: a call does at most 524 kFLOP"},
        {768, 3072, 1, 4, {1, 8, 64, 512}, "9.44 MFLOP a token"},                   /* BERT-base */
        {4096, 16384, 256, 3, {1, 8, 64}, "not 512: a call does 139 GFLOP"},      /* 8B-class, g = 11008 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ffnrt_compare_spec spec = FFNRT_COMPARE_SPEC_INIT(cases[i].d, cases[i].m);
        spec.multiple = cases[i].multiple;
        int64_t t[FFNRT_COMPARE_MAX_TOKENS];
        size_t n = 0;
        char why[700];
        EXPECT(ffnrt_compare_plan_tokens(&spec, NULL, t, &n, why, sizeof why), FFNRT_OK);
        cr_assert_eq(n, cases[i].n, "%lld x %lld: %s", (long long)cases[i].d, (long long)cases[i].m, why);
        for (size_t k = 0; k < n; k++)
            cr_assert_eq(t[k], cases[i].t[k], "%lld x %lld: %s", (long long)cases[i].d, (long long)cases[i].m, why);
        cr_assert(strstr(why, "the defaults for this layer"), "%s", why);
        cr_assert(strstr(why, cases[i].says), "\"%s\" does not say \"%s\"", why, cases[i].says);
    }
    /* From a budget: the width it gives. */
    ffnrt_compare_spec spec = FFNRT_COMPARE_SPEC_INIT(6, 0);
    spec.parameter_budget = 144;
    int64_t t[FFNRT_COMPARE_MAX_TOKENS];
    size_t n = 0;
    EXPECT(ffnrt_compare_plan_tokens(&spec, NULL, t, &n, NULL, 0), FFNRT_OK);
    cr_assert(n == 1 && t[0] == 1);
    /* Given counts win; 1 and the criteria's counts are added, and said. */
    spec = (ffnrt_compare_spec)FFNRT_COMPARE_SPEC_INIT(4096, 16384);
    spec.multiple = 256;
    spec.tokens[0] = 512;
    spec.ntokens = 1;
    char why[700];
    EXPECT(ffnrt_compare_plan_tokens(&spec, NULL, t, &n, why, sizeof why), FFNRT_OK);
    cr_assert(n == 2 && t[0] == 1 && t[1] == 512, "%s", why);
    cr_assert(strstr(why, "as given; 1 for the latency"), "%s", why);
    spec = (ffnrt_compare_spec)FFNRT_COMPARE_SPEC_INIT(6, 12);
    ffnrt_compare_criteria c = FFNRT_COMPARE_CRITERIA_INIT;
    c.min_tokens_per_s = 1;
    c.throughput_tokens = 64;
    EXPECT(ffnrt_compare_plan_tokens(&spec, &c, t, &n, why, sizeof why), FFNRT_OK);
    cr_assert(n == 2 && t[0] == 1 && t[1] == 64, "%s", why);
    cr_assert(strstr(why, "64 for the criteria's throughput count"), "%s", why);
    /* Bad specs are refused as ffnrt_compare_create refuses them. */
    EXPECT(ffnrt_compare_plan_tokens(NULL, NULL, t, &n, NULL, 0), FFNRT_ERROR_INVALID_ARGUMENT);
    spec = (ffnrt_compare_spec)FFNRT_COMPARE_SPEC_INIT(0, 12);
    EXPECT(ffnrt_compare_plan_tokens(&spec, NULL, t, &n, NULL, 0), FFNRT_ERROR_INVALID_ARGUMENT);
}

/* ------------------------------------------------------------ on devices */

static const ffnrt_compare_result *result_of(const ffnrt_comparison *cmp, ffnrt_compare_candidate c, int bias)
{
    for (size_t i = 0; i < ffnrt_compare_result_count(cmp); i++) {
        const ffnrt_compare_result *r = ffnrt_compare_result_get(cmp, i);
        if (r->candidate == c && r->bias == bias)
            return r;
    }
    cr_assert_fail("no result for %s%s", ffnrt_compare_candidate_name(c), bias ? "+bias" : "");
    return NULL;
}

/* Dense GELU against SwiGLU, with biases, at one token count: the pair
 * most tests compare (formats and criteria are each test's own). */
static ffnrt_compare_spec gelu_vs_swiglu(uint32_t d, uint32_t m, uint32_t tokens, uint32_t rounds)
{
    ffnrt_compare_spec spec = FFNRT_COMPARE_SPEC_INIT(d, m);
    spec.candidates = 1u << FFNRT_CANDIDATE_DENSE_GELU | 1u << FFNRT_CANDIDATE_SWIGLU;
    spec.biases = 1;
    spec.tokens[0] = tokens;
    spec.ntokens = 1;
    spec.rounds = rounds;
    return spec;
}

/* The seed's accounting, before anything runs: every candidate with and
 * without biases, d = 6, m = 12 against g = 8, 144 weights each. */
BACKEND_PARAMETERS(compare, seed_accounting)

ParameterizedTest(ffnrt_backend *b, compare, seed_accounting)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    ffnrt_compare_spec spec = FFNRT_COMPARE_SPEC_INIT(6, 12);
    ffnrt_comparison *cmp = NULL;
    EXPECT(ffnrt_compare_create(ctx, &spec, NULL, &cmp), FFNRT_OK);
    int64_t m, g, mult;
    EXPECT(ffnrt_compare_widths(cmp, &m, &g, &mult), FFNRT_OK);
    cr_assert(m == 12 && g == 8 && mult == 1, "m %lld g %lld multiple %lld", (long long)m, (long long)g,
              (long long)mult);
    EXPECT(ffnrt_compare_sealed(cmp, NULL, NULL, NULL, NULL), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(ffnrt_compare_result_count(cmp), 14, "7 candidates, with and without biases");
    cr_assert_null(ffnrt_compare_result_get(cmp, 14));
    for (int bias = 0; bias < 2; bias++)
        for (int k = 0; k < FFNRT_CANDIDATE_COUNT; k++) {
            const ffnrt_compare_result *r = result_of(cmp, (ffnrt_compare_candidate)k, bias);
            int gated = r->desc.kind == FFNRT_FFN_GATED;
            cr_assert_eq(gated, k >= FFNRT_CANDIDATE_REGLU);
            /* 2dm = 3dg = 144; biases add m + d dense, 2g + d gated. */
            cr_assert_eq(r->desc.d_model, 6);
            cr_assert_eq(r->desc.hidden, gated ? 8 : 12);
            cr_assert_eq(r->desc.bias, bias);
            cr_assert_eq(r->parameters_without_bias, 144);
            cr_assert_eq(r->parameters_with_bias, gated ? 144 + 16 + 6 : 144 + 12 + 6);
            cr_assert_eq(r->parameters, bias ? r->parameters_with_bias : 144);
            cr_assert_eq(r->npoints, 0, "no measurement before the run");
        }
    ffnrt_compare_destroy(cmp);
    test_context_done(ctx);
}

/* The seed's GELU against SwiGLU on the device, with and without biases,
 * at 1 and 8 tokens: FLOPs, bytes and memory as the report carries them,
 * and the run's bookkeeping. */
BACKEND_PARAMETERS(compare, seed_run)

ParameterizedTest(ffnrt_backend *b, compare, seed_run)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    ffnrt_compare_spec spec = FFNRT_COMPARE_SPEC_INIT(6, 12);
    spec.candidates = 1u << FFNRT_CANDIDATE_DENSE_GELU | 1u << FFNRT_CANDIDATE_SWIGLU;
    spec.tokens[0] = 1;
    spec.tokens[1] = 8;
    spec.ntokens = 2;
    spec.rounds = 2;
    ffnrt_compare_criteria c = FFNRT_COMPARE_CRITERIA_INIT;
    c.max_latency_ms = 10000;   /* generous: every candidate passes what was measured */
    c.max_memory_mib = 1;
    c.seeds = 0;                /* stability has tests of its own (each variant is a kernel to build) */
    ffnrt_comparison *cmp = NULL;
    EXPECT(ffnrt_compare_create(ctx, &spec, &c, &cmp), FFNRT_OK);
    EXPECT(ffnrt_compare_run(cmp), FFNRT_OK);
    cr_assert_eq(ffnrt_compare_result_count(cmp), 4);
    for (size_t i = 0; i < 4; i++) {
        const ffnrt_compare_result *r = ffnrt_compare_result_get(cmp, i);
        int gated = r->desc.kind == FFNRT_FFN_GATED, bias = r->bias;
        cr_assert_eq(r->weight_bytes, 4 * r->parameters, "f32 weights and biases as allocated");
        cr_assert_eq(r->status, FFNRT_OK, "%s", r->message);
        cr_assert_eq(r->npoints, 2);
        for (size_t p = 0; p < r->npoints; p++) {
            const ffnrt_compare_point *pt = &r->points[p];
            int64_t t = pt->tokens;
            cr_assert_eq(t, p ? 8 : 1);
            /* FLOPs: 2 a weight, 1 a bias, the activation (and the gating product) per hidden unit. */
            uint64_t per_token = 2 * 144 + (bias ? (gated ? 22 : 18) : 0) + (gated ? 16 : 12);
            cr_assert_eq(pt->flops, per_token * (uint64_t)t, "%s t%lld", ffnrt_compare_candidate_name(r->candidate),
                         (long long)t);
            /* Bytes and the model's peak are ffnrt_ffn_cost_of's on the path the dispatcher chose. */
            cr_assert(pt->path == FFNRT_FFN_PATH_FUSED || pt->path == FFNRT_FFN_PATH_UNFUSED);
            ffnrt_ffn_cost cost;
            EXPECT(ffnrt_ffn_cost_of(&r->desc, t, pt->path, &cost), FFNRT_OK);
            cr_assert_eq(pt->bytes_moved, cost.bytes_moved);
            cr_assert_eq(pt->peak_bytes_model, cost.peak_bytes);
            /* Measured: weights, biases, x, y and the path's intermediates, as allocated
             * (whole words; every f32 tensor here is). */
            cr_assert_eq(pt->peak_bytes, cost.peak_bytes, "%s t%lld: measured %llu, model %llu",
                         ffnrt_compare_candidate_name(r->candidate), (long long)t,
                         (unsigned long long)pt->peak_bytes, (unsigned long long)cost.peak_bytes);
            cr_assert_eq(pt->time.runs, 2);
            cr_assert_eq(pt->time.failed, 0);
            cr_assert(pt->time.mean_ms > 0 && pt->time.min_ms <= pt->time.median_ms &&
                      pt->time.median_ms <= pt->time.max_ms && pt->time.stdev_ms >= 0);
            cr_assert(pt->time.device_mean_ms > 0, "both devices time their work");
            cr_assert(fabs(pt->tokens_per_s - (double)t / (1e-3 * pt->time.mean_ms)) <= 1e-9 * pt->tokens_per_s);
        }
        cr_assert_eq(r->verdict[FFNRT_CRITERION_LATENCY], FFNRT_VERDICT_PASS);
        cr_assert_eq(r->verdict[FFNRT_CRITERION_MEMORY], FFNRT_VERDICT_PASS);
        cr_assert_eq(r->judged[FFNRT_CRITERION_MEMORY], (double)r->points[1].peak_bytes / 1048576.0,
                     "memory is judged at the largest count");
        cr_assert_eq(r->verdict[FFNRT_CRITERION_THROUGHPUT], FFNRT_VERDICT_NONE, "not a criterion");
        cr_assert_eq(r->pass, 1);
    }
    ffnrt_compare_destroy(cmp);
    test_context_done(ctx);
}

/* The dtype dimension: fp16 and bf16 weights, activations and biases,
 * each a result of its own, stored in two bytes a value. */
BACKEND_PARAMETERS(compare, precisions)

ParameterizedTest(ffnrt_backend *b, compare, precisions)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    ffnrt_compare_spec spec = gelu_vs_swiglu(6, 12, 1, 1);
    spec.formats = 1u << FFNRT_WEIGHT_F16 | 1u << FFNRT_WEIGHT_BF16;
    ffnrt_compare_criteria c = FFNRT_COMPARE_CRITERIA_INIT;
    c.seeds = 0;
    ffnrt_comparison *cmp = NULL;
    EXPECT(ffnrt_compare_create(ctx, &spec, &c, &cmp), FFNRT_OK);
    EXPECT(ffnrt_compare_run(cmp), FFNRT_OK);
    cr_assert_eq(ffnrt_compare_result_count(cmp), 4);
    for (size_t i = 0; i < 4; i++) {
        const ffnrt_compare_result *r = ffnrt_compare_result_get(cmp, i);
        cr_assert_eq(r->format, i < 2 ? FFNRT_WEIGHT_F16 : FFNRT_WEIGHT_BF16, "results by format first");
        cr_assert_eq(r->desc.dtype, i < 2 ? FFNRT_DTYPE_F16 : FFNRT_DTYPE_BF16);
        cr_assert_eq(r->weight_bytes, 2 * r->parameters);
        cr_assert_eq(r->points[0].time.runs, 1, "%s", r->message);
        ffnrt_ffn_cost cost;
        EXPECT(ffnrt_ffn_cost_of(&r->desc, 1, r->points[0].path, &cost), FFNRT_OK);
        cr_assert_eq(r->points[0].peak_bytes, cost.peak_bytes, "every tensor here is whole 32-bit words");
        cr_assert_eq(r->pass, 1);
    }
    ffnrt_compare_destroy(cmp);
    test_context_done(ctx);
}

/* The block formats are rows of their own: Q8_0 and Q4_K weights quantized
 * from the same fp32 numbers, fp32 activations, each matrix of the layer in
 * the format; the weight bytes are the layer's repacked blocks and the
 * measured peak is the cost model's. A width off the block is refused at
 * creation, naming the format. */
BACKEND_PARAMETERS(compare, block_formats)

ParameterizedTest(ffnrt_backend *b, compare, block_formats)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    ffnrt_compare_spec spec = gelu_vs_swiglu(256, 768, 1, 1); /* m = 3 and g = 2 Q4_K super-blocks */
    spec.formats = 1u << FFNRT_WEIGHT_Q8_0 | 1u << FFNRT_WEIGHT_Q4_K;
    ffnrt_compare_criteria c = FFNRT_COMPARE_CRITERIA_INIT;
    c.seeds = 0;
    ffnrt_comparison *cmp = NULL;
    EXPECT(ffnrt_compare_create(ctx, &spec, &c, &cmp), FFNRT_OK);
    EXPECT(ffnrt_compare_run(cmp), FFNRT_OK);
    cr_assert_eq(ffnrt_compare_result_count(cmp), 4);
    for (size_t i = 0; i < 4; i++) {
        const ffnrt_compare_result *r = ffnrt_compare_result_get(cmp, i);
        ffnrt_weight_format f = i < 2 ? FFNRT_WEIGHT_Q8_0 : FFNRT_WEIGHT_Q4_K;
        int gated = r->desc.kind == FFNRT_FFN_GATED;
        cr_assert_eq(r->format, f);
        cr_assert_eq(r->desc.dtype, FFNRT_DTYPE_F32);
        cr_assert_eq(r->desc.format_in, f);
        cr_assert_eq(r->desc.format_out, f);
        cr_assert_eq(r->desc.format_value, gated ? f : FFNRT_WEIGHT_F32, "a dense layer has no value matrix");
        cr_assert_eq(r->status, FFNRT_OK, "%s", r->message);
        cr_assert_eq(r->points[0].time.runs, 1, "%s", r->message);
        cr_assert_eq(r->parameters, gated ? 3u * 256 * 512 : 2u * 256 * 768);
        ffnrt_ffn_cost cost;
        EXPECT(ffnrt_ffn_cost_of(&r->desc, 1, r->points[0].path, &cost), FFNRT_OK);
        cr_assert_eq(r->weight_bytes, cost.weight_bytes, "%s: the layer's blocks", ffnrt_weight_format_name(f));
        cr_assert_lt(r->weight_bytes, r->parameters * (f == FFNRT_WEIGHT_Q8_0 ? 2 : 1), "fewer bytes than f16");
        cr_assert_eq(r->points[0].peak_bytes, cost.peak_bytes, "%s %s: measured %llu, model %llu",
                     ffnrt_weight_format_name(f), ffnrt_compare_candidate_name(r->candidate),
                     (unsigned long long)r->points[0].peak_bytes, (unsigned long long)cost.peak_bytes);
        cr_assert_eq(r->pass, 1);
    }
    ffnrt_compare_destroy(cmp);
    ffnrt_compare_spec off = FFNRT_COMPARE_SPEC_INIT(6, 12);
    off.formats = 1u << FFNRT_WEIGHT_Q8_0;
    EXPECT(ffnrt_compare_create(ctx, &off, NULL, &cmp), FFNRT_ERROR_SHAPE_MISMATCH);
    cr_assert(strstr(ffnrt_last_error_message(), "q8_0"), "%s", ffnrt_last_error_message());
    cr_assert_null(cmp);
    test_context_done(ctx);
}

/* Progress: the callback may ask where the run stands (steps, kernels
 * built and to go, time compiling apart from the measured calls), and the
 * figures only grow; after the run every step is done and nothing is left
 * to build. The default token counts for the seed's layer: 1 alone. */
typedef struct progress_seen {
    const ffnrt_comparison *cmp;
    int calls, queried, ordered;
    ffnrt_compare_progress last;
} progress_seen;

static void seen_progress(void *user, const char *what)
{
    progress_seen *s = user;
    s->calls++;
    cr_assert(what && *what);
    ffnrt_compare_progress p;
    if (!s->cmp || ffnrt_compare_get_progress(s->cmp, &p) != FFNRT_OK)
        return;
    if (s->queried)
        s->ordered &= p.steps_done >= s->last.steps_done && p.kernels_built >= s->last.kernels_built &&
                      p.compile_s >= s->last.compile_s && p.measure_s >= s->last.measure_s;
    s->ordered &= p.steps_done <= p.steps_total && p.kernels_cached <= p.kernels_built;
    s->queried++;
    s->last = p;
}

BACKEND_PARAMETERS(compare, progress)

ParameterizedTest(ffnrt_backend *b, compare, progress)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    ffnrt_compare_spec spec = FFNRT_COMPARE_SPEC_INIT(6, 12);
    spec.candidates = 1u << FFNRT_CANDIDATE_DENSE_GELU | 1u << FFNRT_CANDIDATE_SWIGLU;
    spec.biases = 1;
    spec.rounds = 2;
    progress_seen seen = {NULL, 0, 0, 1, {0}};
    spec.progress = seen_progress;
    spec.progress_user = &seen;
    ffnrt_compare_criteria c = FFNRT_COMPARE_CRITERIA_INIT;
    c.seeds = 0;
    ffnrt_comparison *cmp = NULL;
    EXPECT(ffnrt_compare_create(ctx, &spec, &c, &cmp), FFNRT_OK);
    ffnrt_compare_progress p;
    EXPECT(ffnrt_compare_get_progress(cmp, &p), FFNRT_ERROR_INVALID_ARGUMENT);
    seen.cmp = cmp;
    EXPECT(ffnrt_compare_run(cmp), FFNRT_OK);
    cr_assert_gt(seen.queried, 0);
    cr_assert(seen.ordered, "the figures only grow, and stay within their totals");
    EXPECT(ffnrt_compare_get_progress(cmp, &p), FFNRT_OK);
    cr_assert_eq(p.steps_total, 2, "two candidates at one token count, no stability");
    cr_assert_eq(p.steps_done, 2);
    cr_assert_eq(p.kernels_to_go, 0);
    cr_assert_geq(p.kernels_built, 2, "the two first products at least (%llu)", (unsigned long long)p.kernels_built);
    cr_assert_leq(p.kernels_cached, p.kernels_built);
    cr_assert_gt(p.compile_s, 0);
    cr_assert_gt(p.measure_s, 0);
    cr_assert_geq(p.elapsed_s, p.compile_s + p.measure_s);
    ffnrt_kernel_stats k;
    EXPECT(ffnrt_context_kernel_stats(ctx, &k), FFNRT_OK);
    cr_assert_geq(k.built, p.kernels_built, "the context's count includes the run's");
    cr_assert_eq(k.compiled + k.loaded, k.built);
    for (size_t i = 0; i < ffnrt_compare_result_count(cmp); i++) {
        const ffnrt_compare_result *r = ffnrt_compare_result_get(cmp, i);
        cr_assert_eq(r->npoints, 1, "a 6 x 12 layer is measured at 1 token by default");
        cr_assert_eq(r->points[0].tokens, 1);
        cr_assert_eq(r->points[0].time.runs, 2, "%s", r->message);
    }
    ffnrt_compare_destroy(cmp);
    EXPECT(ffnrt_context_kernel_stats(NULL, &k), FFNRT_ERROR_INVALID_ARGUMENT);
    test_context_done(ctx);
}

/* Thresholds first: criteria may be set until the run starts; the run
 * seals them (text, hash, time) and judges by them; afterwards a new one is
 * refused and changes nothing. */
BACKEND_PARAMETERS(compare, thresholds_first)

ParameterizedTest(ffnrt_backend *b, compare, thresholds_first)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    ffnrt_compare_spec spec = gelu_vs_swiglu(6, 12, 1, 2);
    ffnrt_comparison *cmp = NULL;
    EXPECT(ffnrt_compare_create(ctx, &spec, NULL, &cmp), FFNRT_OK);
    EXPECT(ffnrt_compare_set_criterion(cmp, "seeds", "0"), FFNRT_OK);
    EXPECT(ffnrt_compare_set_criterion(cmp, "min_tokens_per_s", "1"), FFNRT_OK);
    EXPECT(ffnrt_compare_set_criterion(cmp, "max_latency", "1"), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_compare_run(cmp), FFNRT_OK);

    ffnrt_compare_criteria sealed, expect = FFNRT_COMPARE_CRITERIA_INIT;
    const char *text, *sha, *at;
    EXPECT(ffnrt_compare_sealed(cmp, &sealed, &text, &sha, &at), FFNRT_OK);
    expect.min_tokens_per_s = 1;
    expect.seeds = 0;
    char want_text[1024], want_sha[65];
    EXPECT(ffnrt_compare_criteria_text(&expect, want_text, sizeof want_text, want_sha), FFNRT_OK);
    cr_assert_str_eq(text, want_text);
    cr_assert_str_eq(sha, want_sha);
    cr_assert_eq(strlen(at), 24, "an ISO 8601 time with milliseconds: %s", at);

    /* A criterion given after the run: refused, and nothing moves. */
    char sha_before[65];
    strcpy(sha_before, sha);
    EXPECT(ffnrt_compare_set_criterion(cmp, "max_latency_ms", "0.001"), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(ffnrt_last_error_message(), "after the run"), "%s", ffnrt_last_error_message());
    EXPECT(ffnrt_compare_sealed(cmp, &sealed, &text, &sha, NULL), FFNRT_OK);
    cr_assert_str_eq(sha, sha_before);
    cr_assert_eq(sealed.max_latency_ms, 0);
    for (size_t i = 0; i < ffnrt_compare_result_count(cmp); i++) {
        const ffnrt_compare_result *r = ffnrt_compare_result_get(cmp, i);
        cr_assert_eq(r->verdict[FFNRT_CRITERION_LATENCY], FFNRT_VERDICT_NONE);
        cr_assert_eq(r->verdict[FFNRT_CRITERION_THROUGHPUT], FFNRT_VERDICT_PASS);
        cr_assert_eq(r->pass, 1);
    }
    /* Nor can the comparison run again under other criteria. */
    EXPECT(ffnrt_compare_run(cmp), FFNRT_ERROR_INVALID_ARGUMENT);
    ffnrt_compare_destroy(cmp);
    test_context_done(ctx);
}

/* A criterion nothing passes fails every candidate, whatever the others
 * say. (seeds = 0: no stability figures, and none judged.) */
BACKEND_PARAMETERS(compare, verdicts)

ParameterizedTest(ffnrt_backend *b, compare, verdicts)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    ffnrt_compare_spec spec = gelu_vs_swiglu(6, 12, 8, 2);
    ffnrt_compare_criteria c = FFNRT_COMPARE_CRITERIA_INIT;
    c.max_latency_ms = 1e-9;
    c.max_memory_mib = 1;
    c.seeds = 0;
    ffnrt_comparison *cmp = NULL;
    EXPECT(ffnrt_compare_create(ctx, &spec, &c, &cmp), FFNRT_OK);
    EXPECT(ffnrt_compare_run(cmp), FFNRT_OK);
    for (size_t i = 0; i < ffnrt_compare_result_count(cmp); i++) {
        const ffnrt_compare_result *r = ffnrt_compare_result_get(cmp, i);
        cr_assert_eq(r->npoints, 2, "1 is measured for the latency though not asked for");
        cr_assert_eq(r->points[0].tokens, 1);
        cr_assert_eq(r->verdict[FFNRT_CRITERION_LATENCY], FFNRT_VERDICT_FAIL);
        cr_assert_eq(r->judged[FFNRT_CRITERION_LATENCY], r->points[0].time.mean_ms);
        cr_assert_eq(r->verdict[FFNRT_CRITERION_MEMORY], FFNRT_VERDICT_PASS, "the others are judged as usual");
        cr_assert_eq(r->stability_measured, 0, "seeds = 0: no stability figures");
        cr_assert(strstr(r->stability_note, "seeds = 0"), "%s", r->stability_note);
        cr_assert_eq(r->verdict[FFNRT_CRITERION_FINITE], FFNRT_VERDICT_NONE);
        cr_assert_eq(r->verdict[FFNRT_CRITERION_DEAD], FFNRT_VERDICT_NONE);
        cr_assert_eq(r->pass, 0);
    }
    ffnrt_compare_destroy(cmp);
    test_context_done(ctx);
}

/* Stability from the layer's own in-kernel statistics (ffnrt_ffn_set_stats),
 * one call per seed on the stated inputs, judged as sealed. One test (one
 * process) for every case, so the statistics variants are built once:
 * lavapipe compiles each pipeline again in every process.
 * - N(0, 1) inputs leave nothing non-finite and no feature dead: both
 *   criteria pass.
 * - Inputs near a constant +c kill exactly the ReLU features whose weight
 *   row sums below zero, and near -c the others: the two dead fractions of
 *   a ReLU candidate add up to 1 (so one of them fails a bound of 0.25),
 *   the same features on every seed, while SiLU keeps every feature.
 * - Inputs near fp32's largest overflow the pre-activations whose weight
 *   rows sum past about 1.1 in magnitude (here some of the 12), and every
 *   output sums every hidden feature: non-finite outputs, counted (the
 *   finite check is off for these calls, so the call does not fail), and
 *   `finite` fails. The shapes are the seed's, whose kernels the other
 *   tests build too. */
static ffnrt_comparison *stability_run(ffnrt_context *ctx, const char *input)
{
    ffnrt_compare_spec spec = FFNRT_COMPARE_SPEC_INIT(6, 12); /* g = 8 */
    spec.candidates = 1u << FFNRT_CANDIDATE_DENSE_RELU | 1u << FFNRT_CANDIDATE_DENSE_SILU | 1u << FFNRT_CANDIDATE_REGLU;
    spec.biases = 1;
    spec.tokens[0] = 1;
    spec.ntokens = 1;
    spec.rounds = 1;
    ffnrt_compare_criteria c;
    char text[256];
    snprintf(text, sizeof text, "finite = yes\nmax_dead_fraction = 0.25\ninput = %s\nstability_tokens = 16\nseeds = 3\n",
             input);
    EXPECT(ffnrt_compare_criteria_parse(text, &c), FFNRT_OK);
    ffnrt_comparison *cmp = NULL;
    EXPECT(ffnrt_compare_create(ctx, &spec, &c, &cmp), FFNRT_OK);
    EXPECT(ffnrt_compare_run(cmp), FFNRT_OK);
    cr_assert_eq(ffnrt_compare_result_count(cmp), 3);
    for (size_t i = 0; i < 3; i++) {
        const ffnrt_compare_result *r = ffnrt_compare_result_get(cmp, i);
        const char *name = ffnrt_compare_candidate_name(r->candidate);
        cr_assert_eq(r->status, FFNRT_OK, "%s", r->message);
        cr_assert_eq(r->stability_measured, 1, "%s, %s: %s", input, name, r->stability_note);
        cr_assert_eq(r->seeds, 3);
        cr_assert_eq(r->judged[FFNRT_CRITERION_DEAD], r->dead_fraction_max, "the worst seed is judged");
        cr_assert_eq(r->judged[FFNRT_CRITERION_FINITE], (double)r->nonfinite_outputs);
        cr_assert_eq(r->verdict[FFNRT_CRITERION_DEAD],
                     r->dead_fraction_max <= 0.25 ? FFNRT_VERDICT_PASS : FFNRT_VERDICT_FAIL);
        cr_assert_eq(r->verdict[FFNRT_CRITERION_FINITE],
                     r->nonfinite_outputs == 0 ? FFNRT_VERDICT_PASS : FFNRT_VERDICT_FAIL);
        cr_assert(r->dead_fraction_mean <= r->dead_fraction_max);
        cr_assert_leq(r->nonfinite_outputs, 3 * 16 * 6, "at most every output of every seed");
        double k = r->dead_fraction_max * (double)r->desc.hidden; /* whole features of the hidden width */
        cr_assert_eq(k, floor(k), "%s: dead %g of %lld", name, r->dead_fraction_max, (long long)r->desc.hidden);
    }
    return cmp;
}

BACKEND_PARAMETERS(compare, stability)

ParameterizedTest(ffnrt_backend *b, compare, stability)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    ffnrt_comparison *normal = stability_run(ctx, "normal 0 1");
    ffnrt_compare_progress p;
    EXPECT(ffnrt_compare_get_progress(normal, &p), FFNRT_OK);
    cr_assert(p.steps_total == 6 && p.steps_done == 6, "3 first calls to time, 3 stability layers: %u of %u",
              p.steps_done, p.steps_total);
    cr_assert_eq(p.kernels_to_go, 0);
    for (size_t i = 0; i < 3; i++) {
        const ffnrt_compare_result *r = ffnrt_compare_result_get(normal, i);
        cr_assert_eq(r->nonfinite_outputs, 0);
        cr_assert_eq(r->nonfinite_hidden, 0);
        cr_assert_eq(r->dead_fraction_max, 0, "%s: a feature dead for 16 N(0, 1) tokens (p = 2^-16)",
                     ffnrt_compare_candidate_name(r->candidate));
        cr_assert_eq(r->verdict[FFNRT_CRITERION_DEAD], FFNRT_VERDICT_PASS);
        cr_assert_eq(r->verdict[FFNRT_CRITERION_FINITE], FFNRT_VERDICT_PASS);
        cr_assert_eq(r->pass, 1);
    }
    ffnrt_compare_destroy(normal);

    ffnrt_comparison *pos = stability_run(ctx, "uniform 2 2.0001");
    ffnrt_comparison *neg = stability_run(ctx, "uniform -2.0001 -2");
    for (size_t i = 0; i < 3; i++) {
        const ffnrt_compare_result *p = ffnrt_compare_result_get(pos, i), *n = ffnrt_compare_result_get(neg, i);
        const char *name = ffnrt_compare_candidate_name(p->candidate);
        cr_assert_eq(p->candidate, n->candidate);
        cr_assert_eq(p->nonfinite_outputs + n->nonfinite_outputs, 0);
        if (p->candidate == FFNRT_CANDIDATE_DENSE_SILU) {
            cr_assert_eq(p->dead_fraction_max + n->dead_fraction_max, 0, "SiLU is zero only at zero");
            cr_assert(p->pass && n->pass);
            continue;
        }
        /* ReLU features: dead on one side or the other, the same on every seed */
        cr_assert_eq(p->dead_fraction_max + n->dead_fraction_max, 1, "%s: %g + %g", name, p->dead_fraction_max,
                     n->dead_fraction_max);
        cr_assert_eq(p->dead_fraction_mean, p->dead_fraction_max, "%s", name);
        cr_assert_eq(n->dead_fraction_mean, n->dead_fraction_max, "%s", name);
        const ffnrt_compare_result *worse = p->dead_fraction_max >= 0.5 ? p : n;
        cr_assert_eq(worse->verdict[FFNRT_CRITERION_DEAD], FFNRT_VERDICT_FAIL, "%s", name);
        cr_assert_eq(worse->verdict[FFNRT_CRITERION_FINITE], FFNRT_VERDICT_PASS, "%s", name);
        cr_assert_eq(worse->pass, 0, "%s: a dead layer does not pass", name);
    }
    ffnrt_compare_destroy(pos);
    ffnrt_compare_destroy(neg);

    ffnrt_comparison *huge = stability_run(ctx, "uniform 3e38 3.4e38");
    for (size_t i = 0; i < 3; i++) {
        const ffnrt_compare_result *r = ffnrt_compare_result_get(huge, i);
        cr_assert_gt(r->nonfinite_outputs, 0, "%s", ffnrt_compare_candidate_name(r->candidate));
        cr_assert_eq(r->verdict[FFNRT_CRITERION_FINITE], FFNRT_VERDICT_FAIL);
        cr_assert_eq(r->pass, 0);
    }
    ffnrt_compare_destroy(huge);
    test_context_done(ctx);
}

/* Calls that fail are counted, not hidden: under a device-memory budget
 * that 1 token fits and 64 do not, the 64-token calls fail with the
 * reason, the 1-token figures stand, and no candidate passes. */
BACKEND_PARAMETERS(compare, failed_runs)

ParameterizedTest(ffnrt_backend *b, compare, failed_runs)
{
    setenv("FFNRT_LIMITS", "max_memory=2400", 1); /* this test's own process */
    ffnrt_context *ctx = test_context(*b, NULL);
    unsetenv("FFNRT_LIMITS");
    ffnrt_compare_spec spec = gelu_vs_swiglu(6, 12, 1, 2);
    spec.tokens[1] = 64;
    spec.ntokens = 2;
    ffnrt_compare_criteria c = FFNRT_COMPARE_CRITERIA_INIT;
    c.max_latency_ms = 10000;
    c.seeds = 0;
    ffnrt_comparison *cmp = NULL;
    EXPECT(ffnrt_compare_create(ctx, &spec, &c, &cmp), FFNRT_OK);
    EXPECT(ffnrt_compare_run(cmp), FFNRT_OK);
    cr_assert_eq(ffnrt_compare_result_count(cmp), 2);
    for (size_t i = 0; i < 2; i++) {
        const ffnrt_compare_result *r = ffnrt_compare_result_get(cmp, i);
        cr_assert_eq(r->points[0].time.runs, 2, "%s", r->message);
        cr_assert_eq(r->points[0].time.failed, 0);
        cr_assert_eq(r->points[1].time.runs, 0);
        cr_assert_eq(r->points[1].time.failed, 2);
        cr_assert_eq(r->points[1].tokens_per_s, 0);
        cr_assert(strstr(r->message, "t64") && strstr(r->message, "max_memory"), "%s", r->message);
        cr_assert_eq(r->verdict[FFNRT_CRITERION_LATENCY], FFNRT_VERDICT_PASS);
        cr_assert_eq(r->pass, 0, "a candidate whose calls fail does not pass");
    }
    ffnrt_compare_destroy(cmp);
    test_context_done(ctx);
}

/* Widths from a budget or m, and specs refused before anything runs. */
BACKEND_PARAMETERS(compare, specs)

ParameterizedTest(ffnrt_backend *b, compare, specs)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    ffnrt_comparison *cmp = NULL;
    int64_t m, g;
    /* The seed's example from a budget: 2·6·m <= 144 gives m = 12, g = 8. */
    ffnrt_compare_spec s = FFNRT_COMPARE_SPEC_INIT(6, 0);
    s.parameter_budget = 144;
    EXPECT(ffnrt_compare_create(ctx, &s, NULL, &cmp), FFNRT_OK);
    EXPECT(ffnrt_compare_widths(cmp, &m, &g, NULL), FFNRT_OK);
    cr_assert(m == 12 && g == 8, "m %lld g %lld", (long long)m, (long long)g);
    ffnrt_compare_destroy(cmp);
    /* Llama's: d = 4096, m = 4d = 16384 at multiple 256 gives g = 11008, from m or its budget. */
    for (int budget = 0; budget < 2; budget++) {
        s = (ffnrt_compare_spec)FFNRT_COMPARE_SPEC_INIT(4096, budget ? 0 : 16384);
        s.parameter_budget = budget ? 2 * 4096 * 16384 + 100 : 0;
        s.multiple = 256;
        EXPECT(ffnrt_compare_create(ctx, &s, NULL, &cmp), FFNRT_OK);
        EXPECT(ffnrt_compare_widths(cmp, &m, &g, NULL), FFNRT_OK);
        cr_assert(m == 16384 && g == 11008, "m %lld g %lld", (long long)m, (long long)g);
        ffnrt_compare_destroy(cmp);
    }

    static const struct {
        int64_t d, m, budget;
        uint32_t candidates, biases, formats;
        int64_t token;
        ffnrt_status want;
    } bad[] = {
        {0, 12, 0, 0, 0, 0, 1, FFNRT_ERROR_INVALID_ARGUMENT},         /* d_model 0 */
        {6, 12, 144, 0, 0, 0, 1, FFNRT_ERROR_INVALID_ARGUMENT},       /* m and a budget */
        {6, 0, 0, 0, 0, 0, 1, FFNRT_ERROR_INVALID_ARGUMENT},          /* neither */
        {6, 0, 11, 0, 0, 0, 1, FFNRT_ERROR_INVALID_ARGUMENT},         /* a budget too small for m = 1 */
        {6, 12, 0, 1u << 9, 0, 0, 1, FFNRT_ERROR_INVALID_ARGUMENT},   /* no such candidate */
        {6, 12, 0, 0, 4, 0, 1, FFNRT_ERROR_INVALID_ARGUMENT},         /* biases */
        {6, 12, 0, 0, 0, 1u << FFNRT_WEIGHT_FORMAT_COUNT, 1, FFNRT_ERROR_INVALID_ARGUMENT},
        {6, 12, 0, 0, 0, 0, 0, FFNRT_ERROR_INVALID_ARGUMENT},         /* 0 tokens */
        {6, 12, 0, 0, 0, 0, (1 << 24) + 1, FFNRT_ERROR_INVALID_ARGUMENT},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        s = (ffnrt_compare_spec)FFNRT_COMPARE_SPEC_INIT(bad[i].d, bad[i].m);
        s.parameter_budget = bad[i].budget;
        s.candidates = bad[i].candidates;
        s.biases = bad[i].biases;
        s.formats = bad[i].formats;
        s.tokens[0] = bad[i].token;
        s.ntokens = 1;
        cmp = (ffnrt_comparison *)&s; /* must come back NULL */
        EXPECT(ffnrt_compare_create(ctx, &s, NULL, &cmp), bad[i].want);
        cr_assert_null(cmp, "case %zu", i);
        cr_assert(strlen(ffnrt_last_error_message()) > 0);
    }
    /* Widths whose figures pass 64 bits are refused at creation, before any buffer is sized. */
    s = (ffnrt_compare_spec)FFNRT_COMPARE_SPEC_INIT(UINT32_MAX, UINT32_MAX);
    cmp = NULL;
    ffnrt_status huge = ffnrt_compare_create(ctx, &s, NULL, &cmp);
    cr_assert(huge == FFNRT_ERROR_LIMIT_EXCEEDED || huge == FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s",
              ffnrt_status_string(huge), ffnrt_last_error_message());
    cr_assert_null(cmp);
    s = (ffnrt_compare_spec)FFNRT_COMPARE_SPEC_INIT(6, 12);
    s.ntokens = FFNRT_COMPARE_MAX_TOKENS + 1;
    EXPECT(ffnrt_compare_create(ctx, &s, NULL, &cmp), FFNRT_ERROR_INVALID_ARGUMENT);
    /* Criteria out of range, and null arguments. */
    ffnrt_compare_criteria c = FFNRT_COMPARE_CRITERIA_INIT;
    c.max_dead_fraction = 2;
    s.ntokens = 0;
    EXPECT(ffnrt_compare_create(ctx, &s, &c, &cmp), FFNRT_ERROR_INVALID_ARGUMENT);
    c = (ffnrt_compare_criteria)FFNRT_COMPARE_CRITERIA_INIT;
    c.seeds = 0;
    c.require_finite = 1;
    EXPECT(ffnrt_compare_create(ctx, &s, &c, &cmp), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(ffnrt_last_error_message(), "seeds = 0"), "%s", ffnrt_last_error_message());
    /* Set one by one, the two meet at the run: refused there, before anything is sealed. */
    c.require_finite = 0;
    EXPECT(ffnrt_compare_create(ctx, &s, &c, &cmp), FFNRT_OK);
    EXPECT(ffnrt_compare_set_criterion(cmp, "max_dead_fraction", "0.5"), FFNRT_OK);
    EXPECT(ffnrt_compare_run(cmp), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_compare_sealed(cmp, NULL, NULL, NULL, NULL), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_compare_set_criterion(cmp, "seeds", "2"), FFNRT_OK);
    ffnrt_compare_destroy(cmp);
    cmp = NULL;
    EXPECT(ffnrt_compare_create(ctx, NULL, NULL, &cmp), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_compare_create(NULL, &s, NULL, &cmp), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_compare_run(NULL), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_compare_set_criterion(NULL, "seeds", "2"), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_null(ffnrt_compare_result_get(NULL, 0));
    ffnrt_compare_destroy(NULL);
    test_context_done(ctx);
}

/* The training protocol (criteria.train_steps): each f32 candidate learns
 * the teacher over two seeds; the figures are there and sane (the
 * validation loss falls, the curve starts at step 0 and ends at the last
 * step, memory counted), the run is deterministic (a second comparison
 * gives the same losses to the bit), block formats say they are
 * inference-only, and the quality verdict follows the threshold. */
BACKEND_PARAMETERS(compare, training)

ParameterizedTest(ffnrt_backend *b, compare, training)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    ffnrt_compare_spec spec = FFNRT_COMPARE_SPEC_INIT(32, 96); /* g = 64: Q8_0's blocks fit both widths */
    spec.candidates = 1u << FFNRT_CANDIDATE_DENSE_RELU | 1u << FFNRT_CANDIDATE_SWIGLU;
    spec.biases = 1;
    spec.formats = 1u << FFNRT_WEIGHT_F32 | 1u << FFNRT_WEIGHT_Q8_0;
    spec.tokens[0] = 1;
    spec.ntokens = 1;
    spec.rounds = 1;
    ffnrt_compare_criteria c = FFNRT_COMPARE_CRITERIA_INIT;
    c.seeds = 0;
    c.train_steps = 30;
    c.train_seeds = 2;
    c.train_tokens = 16;
    c.validation_tokens = 32;
    c.max_val_rel_mse = 1e6; /* every finished run passes */
    c.max_train_memory_mib = 1e-6; /* and none fits this */
    double losses[2][2];
    for (int pass = 0; pass < 2; pass++) {
        ffnrt_comparison *cmp = NULL;
        EXPECT(ffnrt_compare_create(ctx, &spec, &c, &cmp), FFNRT_OK);
        EXPECT(ffnrt_compare_run(cmp), FFNRT_OK);
        const char *text;
        EXPECT(ffnrt_compare_sealed(cmp, NULL, &text, NULL, NULL), FFNRT_OK);
        cr_assert(strstr(text, "train_steps = 30\n") && strstr(text, "train_lr = 0.01\n"), "%s", text);
        cr_assert_eq(ffnrt_compare_result_count(cmp), 4);
        for (size_t i = 0; i < 4; i++) {
            const ffnrt_compare_result *r = ffnrt_compare_result_get(cmp, i);
            const char *name = ffnrt_compare_candidate_name(r->candidate);
            if (r->format != FFNRT_WEIGHT_F32) {
                cr_assert(!r->train_measured && strstr(r->train_note, "inference-only"), "%s: %s", name, r->train_note);
                cr_assert_eq(r->verdict[FFNRT_CRITERION_QUALITY], FFNRT_VERDICT_UNMEASURED);
                continue;
            }
            cr_assert(r->train_measured, "%s: %s", name, r->train_note);
            cr_assert_eq(r->train_runs, 2);
            cr_assert_eq(r->train_failed, 0, "%s: %s", name, r->train_note);
            cr_assert_eq(r->train_steps_run, 30);
            cr_assert(r->step_ms > 0 && r->train_tokens_per_s > 0 && r->train_bytes > 0 && r->grad_norm_max > 0);
            /* Every run's state: the layer, its gradients, AdamW's two moments, the kept intermediates. */
            ffnrt_ffn_cost cost;
            EXPECT(ffnrt_ffn_cost_of(&r->desc, 16, FFNRT_FFN_PATH_UNFUSED, &cost), FFNRT_OK);
            cr_assert(r->train_bytes >= 4 * cost.weight_bytes, "%s: %llu bytes", name,
                      (unsigned long long)r->train_bytes);
            cr_assert(r->curve_points >= 3 && r->curve_step[0] == 0 && r->curve_step[r->curve_points - 1] == 30);
            cr_assert(r->curve[r->curve_points - 1] < r->curve[0], "%s: %.4g -> %.4g", name, r->curve[0],
                      r->curve[r->curve_points - 1]);
            cr_assert(isfinite(r->val_rel_mse_mean) && r->val_rel_mse_min <= r->val_rel_mse_mean &&
                      r->val_rel_mse_mean <= r->val_rel_mse_max && r->val_rel_mse_stdev >= 0);
            cr_assert_eq(r->verdict[FFNRT_CRITERION_QUALITY], FFNRT_VERDICT_PASS);
            cr_assert_eq(r->judged[FFNRT_CRITERION_QUALITY], r->val_rel_mse_mean);
            cr_assert_eq(r->verdict[FFNRT_CRITERION_TRAIN_MEMORY], FFNRT_VERDICT_FAIL);
            cr_assert_eq(r->verdict[FFNRT_CRITERION_STEP_TIME], FFNRT_VERDICT_NONE);
            cr_assert_eq(r->pass, 0);
            losses[pass][r->candidate == FFNRT_CANDIDATE_SWIGLU] = r->val_rel_mse_mean;
        }
        ffnrt_compare_destroy(cmp);
    }
    cr_assert(losses[0][0] == losses[1][0] && losses[0][1] == losses[1][1],
              "two comparisons give other losses: %.17g %.17g, %.17g %.17g", losses[0][0], losses[1][0], losses[0][1],
              losses[1][1]);
    test_context_done(ctx);
}

/* A training criterion needs training. */
Test(compare_criteria, training_keys)
{
    ffnrt_compare_criteria c;
    EXPECT(ffnrt_compare_criteria_parse("max_val_rel_mse = 0.3\n", &c), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(ffnrt_last_error_message(), "train_steps"), "%s", ffnrt_last_error_message());
    EXPECT(ffnrt_compare_criteria_parse("train_steps = 50\nmax_val_rel_mse = 0.3\ntrain_lr = 0.003\n"
                                        "train_max_grad_norm = none\ntrain_patience = 4\n", &c), FFNRT_OK);
    cr_assert(c.train_steps == 50 && c.max_val_rel_mse == 0.3 && c.train_lr == 0.003 && c.train_max_grad_norm == 0 &&
              c.train_patience == 4);
    EXPECT(ffnrt_compare_criteria_parse("train_steps = 5\ntrain_lr = 0\n", &c), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_compare_criteria_parse("train_steps = 5\ntrain_seeds = 0\n", &c), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_compare_criteria_parse("train_steps = 5\ntrain_weight_decay = -1\n", &c),
           FFNRT_ERROR_INVALID_ARGUMENT);
}
