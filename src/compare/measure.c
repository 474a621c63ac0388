/* Measuring the candidates of one weight format on the device: the host
 * numbers (weights and inputs from seeds), the weight sets every candidate
 * of a kind shares, the token counts in interleaved rounds with each
 * layer's memory peak, then the stability figures. */
#include "compare_internal.h"
#include "lab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------- host numbers */

void compare_rng_seed(compare_rng *r, uint64_t seed, uint64_t stream)
{
    /* splitmix64 of (seed, stream): distinct, never-zero states */
    uint64_t z = seed * 0x9e3779b97f4a7c15ull + stream * 0xbf58476d1ce4e5b9ull + 0x94d049bb133111ebull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    r->s = (z ^ (z >> 31)) | 1;
}

double compare_rng_uniform(compare_rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return (double)((r->s * 0x2545f4914f6cdd1dull) >> 11) * 0x1.0p-53;
}

void compare_fill_input(compare_rng *r, const ffnrt_compare_criteria *c, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (c->input == FFNRT_INPUT_UNIFORM) {
            out[i] = (float)(c->input_a + (c->input_b - c->input_a) * compare_rng_uniform(r));
        } else {
            /* Box-Muller; u1 in (0, 1] keeps the log finite */
            double u1 = 1.0 - compare_rng_uniform(r), u2 = compare_rng_uniform(r);
            out[i] = (float)(c->input_a + c->input_b * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
        }
    }
}

/* nn.Linear's default initialisation: U(-1/sqrt(fan_in), 1/sqrt(fan_in)). */
void compare_fill_linear(compare_rng *r, float *out, size_t n, int64_t fan_in)
{
    double bound = 1.0 / sqrt((double)fan_in);
    for (size_t i = 0; i < n; i++)
        out[i] = (float)(bound * (2.0 * compare_rng_uniform(r) - 1.0));
}

ffnrt_status compare_called(ffnrt_context *ctx, ffnrt_status st, ffnrt_error *err)
{
    return st == FFNRT_OK ? FFNRT_OK : ffnrt_fail(err, st, "%s", ffnrt_context_last_error(ctx));
}

ffnrt_status compare_upload(ffnrt_context *ctx, ffnrt_dtype dtype, const float *v, int64_t rows, int64_t cols,
                            ffnrt_tensor **out, ffnrt_error *err)
{
    int64_t shape[2] = {rows, cols};
    size_t n = (size_t)rows * (size_t)(cols ? cols : 1);
    ffnrt_tensor *t = NULL;
    ffnrt_status st = compare_called(ctx, ffnrt_tensor_create(ctx, dtype, cols ? 2 : 1, shape, &t), err);
    if (st != FFNRT_OK)
        return st;
    if (!v) {
        /* A tensor the caller fills (outputs, gradients). */
    } else if (dtype == FFNRT_DTYPE_F32) {
        st = compare_called(ctx, ffnrt_tensor_write(t, v, n * sizeof(float)), err);
    } else {
        uint16_t *bits = malloc(n * sizeof *bits + 1);
        if (!bits) {
            st = ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "ffnrt_compare_run: out of host memory");
        } else {
            (dtype == FFNRT_DTYPE_F16 ? ffnrt_f32_to_f16_array : ffnrt_f32_to_bf16_array)(v, bits, n);
            st = compare_called(ctx, ffnrt_tensor_write(t, bits, n * sizeof *bits), err);
            free(bits);
        }
    }
    if (st != FFNRT_OK) {
        ffnrt_tensor_destroy(t);
        return st;
    }
    *out = t;
    return FFNRT_OK;
}

/* Device memory the context holds now. */
uint64_t compare_in_use(ffnrt_context *ctx)
{
    uint64_t bytes = 0;
    ffnrt_context_memory(ctx, &bytes, NULL, 0);
    return bytes;
}

typedef struct weight_set {
    ffnrt_tensor *up, *down;       /* W1 [m, d] or Wg;Wv stacked [2g, d]; W2 / Wo [d, hidden] */
    ffnrt_tensor *b_up, *b_down;
    uint64_t weight_bytes, bias_bytes; /* as allocated */
    ffnrt_status status;
    char message[256];
} weight_set;

static void weight_set_free(weight_set *w)
{
    ffnrt_tensor_destroy(w->up);
    ffnrt_tensor_destroy(w->down);
    ffnrt_tensor_destroy(w->b_up);
    ffnrt_tensor_destroy(w->b_down);
    memset(w, 0, sizeof *w);
}

static void weight_set_make(ffnrt_comparison *cmp, const compare_format *f, int gated, weight_set *w)
{
    ffnrt_context *ctx = cmp->ctx;
    int64_t d = cmp->spec.d_model, h = gated ? cmp->gated_hidden : cmp->dense_hidden, up_rows = gated ? 2 * h : h;
    memset(w, 0, sizeof *w);
    size_t n_up = (size_t)(up_rows * d), n_down = (size_t)(d * h);
    float *v = malloc((n_up > n_down ? n_up : n_down) * sizeof *v + sizeof *v);
    compare_rng r;
    ffnrt_error err;
    ffnrt_error_clear(&err);
    ffnrt_status st = v ? FFNRT_OK : ffnrt_fail(&err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "ffnrt_compare_run: out of host memory");
    uint64_t before = compare_in_use(ctx);
    /* Streams per matrix, so a dense and a gated set differ, and one's
     * numbers do not depend on the other's size. */
    uint64_t seed = cmp->spec.weight_seed ? cmp->spec.weight_seed : 1;
    if (st == FFNRT_OK) {
        compare_rng_seed(&r, seed, gated ? 11 : 1);
        compare_fill_linear(&r, v, n_up, d);
        st = f->upload(ctx, f, v, up_rows, d, &w->up, &err);
    }
    if (st == FFNRT_OK) {
        compare_rng_seed(&r, seed, gated ? 12 : 2);
        compare_fill_linear(&r, v, n_down, h);
        st = f->upload(ctx, f, v, d, h, &w->down, &err);
    }
    w->weight_bytes = compare_in_use(ctx) - before;
    before = compare_in_use(ctx);
    if (st == FFNRT_OK && (cmp->spec.biases == 0 || (cmp->spec.biases & 2))) {
        compare_rng_seed(&r, seed, gated ? 13 : 3);
        compare_fill_linear(&r, v, (size_t)up_rows, d);
        st = compare_upload(ctx, f->dtype, v, up_rows, 0, &w->b_up, &err);
        if (st == FFNRT_OK) {
            compare_rng_seed(&r, seed, gated ? 14 : 4);
            compare_fill_linear(&r, v, (size_t)d, h);
            st = compare_upload(ctx, f->dtype, v, d, 0, &w->b_down, &err);
        }
    }
    w->bias_bytes = compare_in_use(ctx) - before;
    free(v);
    w->status = st;
    if (st != FFNRT_OK)
        snprintf(w->message, sizeof w->message, "%.240s", err.message);
}

static ffnrt_ffn_weight_tensors tensors_of(const weight_set *w, int gated, int bias)
{
    ffnrt_ffn_weight_tensors t = {0};
    if (gated) {
        t.w_gate_value = w->up;
        t.b_gate_value = bias ? w->b_up : NULL;
    } else {
        t.w_in = w->up;
        t.b_in = bias ? w->b_up : NULL;
    }
    t.w_out = w->down;
    t.b_out = bias ? w->b_down : NULL;
    return t;
}

/* Times of one candidate at one token count, over the rounds. */
typedef struct sample {
    double *host_ms, *device_ms;
    uint32_t n, failed;
    int device_times; /* every call gave a device time */
} sample;

static void summarise(sample *s, ffnrt_compare_timing *t)
{
    memset(t, 0, sizeof *t);
    t->runs = s->n;
    t->failed = s->failed;
    if (s->n == 0)
        return;
    double sum = 0, dev = 0;
    for (uint32_t i = 0; i < s->n; i++)
        sum += s->host_ms[i], dev += s->device_ms[i];
    t->mean_ms = sum / s->n;
    double var = 0;
    for (uint32_t i = 0; i < s->n; i++)
        var += (s->host_ms[i] - t->mean_ms) * (s->host_ms[i] - t->mean_ms);
    t->stdev_ms = s->n > 1 ? sqrt(var / (s->n - 1)) : 0;
    t->median_ms = lab_median(s->host_ms, (int)s->n); /* sorted now */
    t->min_ms = s->host_ms[0];
    t->max_ms = s->host_ms[s->n - 1];
    t->device_mean_ms = s->device_times ? dev / s->n : 0;
}

static void note_failure(ffnrt_compare_result *r, const char *message, int64_t tokens)
{
    if (r->message[0])
        return; /* the first failure says the most */
    snprintf(r->message, sizeof r->message, "t%lld: %.220s", (long long)tokens, message);
}

/* The path the dispatcher takes for a layer of this desc at this token
 * count, as its plan says. */
static ffnrt_status planned_path(ffnrt_context *ctx, const ffnrt_ffn_desc *desc, int64_t tokens, ffnrt_ffn_path *out)
{
    ffnrt_plan *plan = NULL;
    ffnrt_status st = ffnrt_ffn_plan(ctx, desc, tokens, &plan);
    const char *path = st == FFNRT_OK ? ffnrt_plan_choice(plan, "ffn.path") : NULL;
    *out = path && strcmp(path, "unfused") == 0 ? FFNRT_FFN_PATH_UNFUSED : FFNRT_FFN_PATH_FUSED;
    ffnrt_plan_destroy(plan);
    return st;
}

/* A layer over shared weights for timing: plain calls, without the
 * statistics or the finite check an app may have set on the context. */
static ffnrt_status timing_layer(ffnrt_context *ctx, const ffnrt_ffn_desc *desc, const ffnrt_ffn_weight_tensors *w,
                                 ffnrt_ffn **out)
{
    ffnrt_stats_options plain = FFNRT_STATS_OPTIONS_INIT;
    plain.enabled = 0;
    plain.check_finite = 0;
    ffnrt_status st = ffnrt_ffn_create_from_tensors(ctx, desc, w, out);
    if (st == FFNRT_OK && (st = ffnrt_ffn_set_stats(*out, &plain)) != FFNRT_OK) {
        ffnrt_ffn_destroy(*out);
        *out = NULL;
    }
    return st;
}

/* Every candidate of one format at one token count: a fresh layer each
 * over the shared weights (its intermediates start empty, so its peak is
 * its own), the warm-up call with the memory peak, then interleaved rounds. */
static ffnrt_status measure_tokens(ffnrt_comparison *cmp, const compare_format *f, ffnrt_compare_result *res, size_t n,
                                   const weight_set sets[2], size_t ti)
{
    ffnrt_context *ctx = cmp->ctx;
    int64_t tokens = cmp->tokens[ti], d = cmp->spec.d_model;
    uint32_t rounds = cmp->spec.rounds ? cmp->spec.rounds : 5;
    ffnrt_ffn **layers = calloc(n, sizeof *layers);
    sample *samples = calloc(n, sizeof *samples);
    double *times = malloc(2 * n * rounds * sizeof *times + 1);
    float *xv = malloc((size_t)(tokens * d) * sizeof *xv);
    ffnrt_tensor *x = NULL, *y = NULL;
    ffnrt_status st = layers && samples && times && xv
                          ? FFNRT_OK
                          : ffnrt_fail(&cmp->err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "ffnrt_compare_run: out of host memory");
    uint64_t io_bytes = 0;
    if (st == FFNRT_OK) {
        compare_rng r;
        compare_rng_seed(&r, 0, 100 + (uint64_t)tokens);
        compare_fill_input(&r, &cmp->criteria, xv, (size_t)(tokens * d));
        uint64_t before = compare_in_use(ctx);
        int64_t shape[2] = {tokens, d};
        /* A failure here (a size past the device) is every candidate's. */
        ffnrt_error io;
        ffnrt_error_clear(&io);
        if (compare_upload(ctx, f->dtype, xv, tokens, d, &x, &io) == FFNRT_OK)
            compare_called(ctx, ffnrt_tensor_create(ctx, f->dtype, 2, shape, &y), &io);
        io_bytes = compare_in_use(ctx) - before;
        for (size_t i = 0; i < n && io.status != FFNRT_OK; i++)
            note_failure(&res[i], io.message, tokens);
    }
    for (size_t i = 0; i < n && st == FFNRT_OK; i++) {
        samples[i].host_ms = times + 2 * i * rounds;
        samples[i].device_ms = times + (2 * i + 1) * rounds;
        samples[i].device_times = 1;
        ffnrt_compare_result *r = &res[i];
        ffnrt_compare_point *p = &r->points[ti];
        p->tokens = tokens;
        int gated = r->desc.kind == FFNRT_FFN_GATED;
        const weight_set *w = &sets[gated];
        if (r->status != FFNRT_OK || !x || !y) {
            samples[i].failed = rounds;
            compare_step_skip(cmp, COMPARE_STEP_TIMING);
            continue;
        }
        ffnrt_ffn_cost cost;
        ffnrt_ffn_weight_tensors wt = tensors_of(w, gated, r->bias);
        uint64_t held = 0, peak = 0;
        ffnrt_context_memory(ctx, &held, NULL, 1); /* the peak of this layer's creation and first call */
        compare_progress(cmp, "%s %s%s t%lld first call (compiling)", ffnrt_weight_format_name(f->format),
                         ffnrt_compare_candidate_name(r->candidate), r->bias ? "+bias" : "", (long long)tokens);
        compare_step step;
        compare_step_begin(cmp, &step, COMPARE_STEP_TIMING);
        ffnrt_status cs = timing_layer(ctx, &r->desc, &wt, &layers[i]);
        if (cs == FFNRT_OK)
            cs = ffnrt_ffn_forward(layers[i], x, y);
        compare_step_end(cmp, &step);
        if (cs == FFNRT_OK)
            cs = ffnrt_context_memory(ctx, NULL, &peak, 0);
        if (cs == FFNRT_OK)
            cs = planned_path(ctx, &r->desc, tokens, &p->path);
        if (cs != FFNRT_OK) {
            note_failure(r, ffnrt_context_last_error(ctx), tokens);
            samples[i].failed = rounds;
            ffnrt_ffn_destroy(layers[i]);
            layers[i] = NULL;
            continue;
        }
        /* A block format's layer holds its own repacked copy (counted in the
         * peak since `held`); the uploaded GGUF bytes are only its source. */
        p->peak_bytes = (peak - held) + io_bytes + (f->describe ? 0 : w->weight_bytes) + (r->bias ? w->bias_bytes : 0);
        if (ffnrt_ffn_cost_of(&r->desc, tokens, p->path, &cost) == FFNRT_OK) {
            p->flops = cost.flops;
            p->bytes_moved = cost.bytes_moved;
            p->peak_bytes_model = cost.peak_bytes;
            if (f->describe) /* the layer's repacked blocks and its biases, as it holds them */
                r->weight_bytes = cost.weight_bytes;
        }
    }
    /* Interleaved rounds: load on the machine falls on every candidate alike. */
    for (uint32_t round = 0; round < rounds && st == FFNRT_OK; round++) {
        compare_progress(cmp, "%s t%lld round %u/%u", ffnrt_weight_format_name(f->format), (long long)tokens, round + 1,
                 rounds);
        for (size_t i = 0; i < n; i++) {
            if (!layers[i])
                continue;
            sample *s = &samples[i];
            double t0 = lab_now_ms();
            ffnrt_status cs = ffnrt_ffn_forward(layers[i], x, y);
            double ms = lab_now_ms() - t0;
            compare_measured(cmp, ms);
            if (cs != FFNRT_OK) {
                s->failed++;
                note_failure(&res[i], ffnrt_context_last_error(ctx), tokens);
                continue;
            }
            uint64_t ns = 0;
            ffnrt_context_last_op_time(ctx, &ns);
            s->host_ms[s->n] = ms;
            s->device_ms[s->n] = 1e-6 * (double)ns;
            if (!ns)
                s->device_times = 0;
            s->n++;
        }
    }
    for (size_t i = 0; i < n && st == FFNRT_OK; i++) {
        ffnrt_compare_point *p = &res[i].points[ti];
        summarise(&samples[i], &p->time);
        p->tokens_per_s = p->time.runs && p->time.mean_ms > 0 ? (double)tokens / (1e-3 * p->time.mean_ms) : 0;
    }
    for (size_t i = 0; layers && i < n; i++)
        ffnrt_ffn_destroy(layers[i]);
    ffnrt_tensor_destroy(x);
    ffnrt_tensor_destroy(y);
    free(layers);
    free(samples);
    free(times);
    free(xv);
    return st;
}

ffnrt_status compare_run_format(ffnrt_comparison *cmp, const compare_format *f, ffnrt_compare_result *res, size_t n)
{
    ffnrt_context *ctx = cmp->ctx;
    weight_set sets[2];
    memset(sets, 0, sizeof sets);
    int want[2] = {0, 0};
    for (size_t i = 0; i < n; i++)
        want[res[i].desc.kind == FFNRT_FFN_GATED] = 1;
    for (int k = 0; k < 2; k++)
        if (want[k]) {
            compare_progress(cmp, "%s: %s weights", ffnrt_weight_format_name(f->format), k ? "gated" : "dense");
            weight_set_make(cmp, f, k, &sets[k]);
        }
    for (size_t i = 0; i < n; i++) {
        const weight_set *w = &sets[res[i].desc.kind == FFNRT_FFN_GATED];
        res[i].weight_bytes = w->weight_bytes + (res[i].bias ? w->bias_bytes : 0);
        if (w->status != FFNRT_OK) {
            res[i].status = w->status;
            snprintf(res[i].message, sizeof res[i].message, "weights: %s", w->message);
        }
    }
    ffnrt_status st = FFNRT_OK;
    for (size_t ti = 0; ti < cmp->ntokens && st == FFNRT_OK; ti++)
        st = measure_tokens(cmp, f, res, n, sets, ti);
    for (size_t i = 0; i < n && st == FFNRT_OK; i++) {
        ffnrt_compare_result *r = &res[i];
        r->seeds = cmp->criteria.seeds;
        if (r->status != FFNRT_OK) {
            snprintf(r->stability_note, sizeof r->stability_note, "not measured: the candidate could not run");
            if (cmp->criteria.seeds)
                compare_step_skip(cmp, COMPARE_STEP_STABILITY);
            continue;
        }
        if (cmp->criteria.seeds == 0) {
            snprintf(r->stability_note, sizeof r->stability_note, "not measured: seeds = 0 in the criteria");
            continue;
        }
        int gated = r->desc.kind == FFNRT_FFN_GATED;
        ffnrt_ffn_weight_tensors wt = tensors_of(&sets[gated], gated, r->bias);
        ffnrt_ffn *layer = NULL;
        compare_progress(cmp, "%s %s%s stability, first call (compiling its statistics variant)",
                         ffnrt_weight_format_name(f->format), ffnrt_compare_candidate_name(r->candidate),
                         r->bias ? "+bias" : "");
        compare_step step;
        compare_step_begin(cmp, &step, COMPARE_STEP_STABILITY);
        if (ffnrt_ffn_create_from_tensors(ctx, &r->desc, &wt, &layer) == FFNRT_OK)
            compare_stability(cmp, layer, r, &step);
        else
            snprintf(r->stability_note, sizeof r->stability_note, "not measured: %.140s", ffnrt_context_last_error(ctx));
        compare_step_end(cmp, &step);
        ffnrt_ffn_destroy(layer);
    }
    weight_set_free(&sets[0]);
    weight_set_free(&sets[1]);
    return st;
}

