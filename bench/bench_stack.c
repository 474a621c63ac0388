/* A real model's FFN stack per token (`ffnrt bench --only stack --gguf
 * MODEL`): every FFN layer of a GGUF model in sequence, as the model runs
 * them, x <- x + FFN_l(RMSNorm(x) · w_l) with the file's norm weights and
 * epsilon, on the device end to end: two calls a layer (ffnrt_rms_norm,
 * ffnrt_ffn_forward_residual) submitted asynchronously and one wait a
 * forward, so the time is the stack's, not 2 x layers host round trips.
 * Rows: tokens a second at 1 and 64 tokens (or --tokens), and the bytes of
 * weights a forward streams over the copy kernel's rate; beside them,
 * where ggml was built, ggml's CPU and Vulkan backends running the same
 * stack from the same file (peer_ggml.c). SmolLM2-135M
 * (scripts/fetch-smollm2) is 30 SwiGLU layers of 576 x 1536 in Q4_1 and
 * Q8_0 (its file's own mix). */
#include "bench_parts.h"
#include "ffnrt_gguf.h"
#include "peer_ggml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct stack {
    ffnrt_context *ctx;
    int64_t layers, d_model, hidden;
    ffnrt_ffn **ffn;
    ffnrt_tensor **norm;
    float eps;
    ffnrt_tensor *x, *xn;
    uint64_t weight_bytes;
    char arch[24], formats[24];
    int int8_able; /* some matrix in Q4_0 or Q4_1: the integer path's formats */
} stack;

static void stack_close(stack *s)
{
    for (int64_t l = 0; l < s->layers; l++) {
        if (s->ffn)
            ffnrt_ffn_destroy(s->ffn[l]);
        if (s->norm)
            ffnrt_tensor_destroy(s->norm[l]);
    }
    free(s->ffn);
    free(s->norm);
    ffnrt_tensor_destroy(s->x);
    ffnrt_tensor_destroy(s->xn);
    memset(s, 0, sizeof *s);
}

/* Opens every FFN layer of the model and its norm; 0, or -1 with why. */
static int stack_open(ffnrt_context *ctx, const char *path, stack *s, char *why, size_t cap)
{
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    ffnrt_gguf *g = NULL;
    const char *arch = NULL;
    size_t arch_len = 0;
    uint64_t blocks = 0;
    char key[96];
    double eps = 1e-5;
    int rc = -1;
    if (ffnrt_gguf_open(path, &g) != FFNRT_OK ||
        ffnrt_gguf_get_string(g, "general.architecture", &arch, &arch_len) != FFNRT_OK) {
        /* ffnrt_gguf_open's own messages name the file. */
        snprintf(why, cap, "%s%s%s", g ? path : "", g ? ": " : "", ffnrt_last_error_message());
        goto done;
    }
    snprintf(s->arch, sizeof s->arch, "%.*s", (int)(arch_len < sizeof s->arch ? arch_len : sizeof s->arch - 1), arch);
    snprintf(key, sizeof key, "%s.block_count", s->arch);
    if (ffnrt_gguf_get_uint(g, key, &blocks) != FFNRT_OK || blocks == 0 || blocks > 4096) {
        snprintf(why, cap, "%s: no %s", path, key);
        goto done;
    }
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", s->arch);
    ffnrt_gguf_get_float(g, key, &eps); /* llama.cpp's default where the file has none */
    s->eps = (float)eps;
    s->ffn = calloc(blocks, sizeof *s->ffn);
    s->norm = calloc(blocks, sizeof *s->norm);
    if (!s->ffn || !s->norm) {
        snprintf(why, cap, "out of memory");
        goto done;
    }
    for (uint64_t l = 0; l < blocks; l++, s->layers++) {
        ffnrt_gguf_ffn gl;
        ffnrt_ffn_desc desc;
        ffnrt_ffn_weights w;
        ffnrt_gguf_tensor_info norm;
        snprintf(key, sizeof key, "blk.%llu.ffn_norm.weight", (unsigned long long)l);
        int64_t ni = ffnrt_gguf_find_tensor(g, key);
        if (ffnrt_gguf_ffn_layer(g, (int64_t)l, &gl) != FFNRT_OK || ffnrt_gguf_ffn_desc(g, &gl, &desc, &w) != FFNRT_OK ||
            ni < 0 || ffnrt_gguf_tensor_at(g, (size_t)ni, &norm) != FFNRT_OK) {
            snprintf(why, cap, "%s: layer %llu: %s", path, (unsigned long long)l,
                     ni < 0 ? "no ffn_norm.weight" : ffnrt_last_error_message());
            goto done;
        }
        if (desc.dtype != FFNRT_DTYPE_F32 || norm.format != FFNRT_WEIGHT_F32 || norm.ne[0] != desc.d_model ||
            (l > 0 && (desc.d_model != s->d_model))) {
            snprintf(why, cap, "%s: layer %llu: f32 activations and f32 norms of d_model only", path,
                     (unsigned long long)l);
            goto done;
        }
        s->d_model = desc.d_model, s->hidden = desc.hidden;
        ffnrt_ffn_cost cost;
        if (ffnrt_ffn_cost_of(&desc, 1, FFNRT_FFN_PATH_AUTO, &cost) == FFNRT_OK)
            s->weight_bytes += cost.weight_bytes;
        s->int8_able |= desc.format_in == FFNRT_WEIGHT_Q4_0 || desc.format_in == FFNRT_WEIGHT_Q4_1 ||
                        desc.format_out == FFNRT_WEIGHT_Q4_0 || desc.format_out == FFNRT_WEIGHT_Q4_1;
        const char *f = ffnrt_weight_format_name(desc.format_in ? desc.format_in : FFNRT_WEIGHT_F32);
        const char *fo = ffnrt_weight_format_name(desc.format_out ? desc.format_out : FFNRT_WEIGHT_F32);
        char fs[24];
        snprintf(fs, sizeof fs, strcmp(f, fo) ? "%s+%s" : "%s", f, fo);
        if (!*s->formats)
            snprintf(s->formats, sizeof s->formats, "%s", fs);
        else if (strcmp(s->formats, fs) != 0)
            snprintf(s->formats, sizeof s->formats, "mixed");
        int64_t n = desc.d_model;
        if (ffnrt_ffn_create(ctx, &desc, &w, &s->ffn[l]) != FFNRT_OK ||
            ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &n, &s->norm[l]) != FFNRT_OK ||
            ffnrt_tensor_write(s->norm[l], norm.data, (size_t)n * 4) != FFNRT_OK) {
            snprintf(why, cap, "layer %llu: %s", (unsigned long long)l, ffnrt_last_error_message());
            s->layers++;
            goto done;
        }
    }
    rc = 0;
done:
    ffnrt_gguf_close(g);
    if (rc != 0)
        stack_close(s);
    return rc;
}

/* x and its norm for `tokens` tokens, x about N(0, 1) (a residual stream). */
static int stack_tokens(stack *s, int64_t tokens)
{
    ffnrt_tensor_destroy(s->x);
    ffnrt_tensor_destroy(s->xn);
    s->x = s->xn = NULL;
    int64_t shape[2] = {tokens, s->d_model}, n = tokens * s->d_model;
    float *x = malloc((size_t)n * sizeof *x);
    int rc = x && ffnrt_tensor_create(s->ctx, FFNRT_DTYPE_F32, 2, shape, &s->x) == FFNRT_OK &&
                     ffnrt_tensor_create(s->ctx, FFNRT_DTYPE_F32, 2, shape, &s->xn) == FFNRT_OK
                 ? 0
                 : -1;
    unsigned seed = 7;
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 3.4f;
    }
    if (rc == 0 && ffnrt_tensor_write(s->x, x, (size_t)n * 4) != FFNRT_OK)
        rc = -1;
    free(x);
    return rc;
}

/* One forward through every layer, submitted in the context's async mode
 * (set for the part), then one wait: its device time is the forward's. */
static ffnrt_status stack_call(void *arg)
{
    stack *s = arg;
    ffnrt_status st = FFNRT_OK;
    for (int64_t l = 0; l < s->layers && st == FFNRT_OK; l++) {
        st = ffnrt_rms_norm(s->ctx, s->x, s->norm[l], s->eps, s->xn);
        if (st == FFNRT_OK)
            st = ffnrt_ffn_forward_residual(s->ffn[l], s->xn, s->x);
    }
    ffnrt_status waited = ffnrt_context_wait(s->ctx);
    return st != FFNRT_OK ? st : waited;
}

int bench_part_stack(const bench_device *dev, const bench_config *cfg, bench_rows *rows)
{
    if (!cfg->gguf_path)
        return 0; /* the part needs a model: --gguf (scripts/bench passes SmolLM2 where it is installed) */
    stack s;
    char why[320];
    if (stack_open(dev->ctx, cfg->gguf_path, &s, why, sizeof why) != 0) {
        fprintf(stderr, "ffnrt bench: the FFN stack on %s: %s\n", dev->info.name, why);
        return -1;
    }
    static const int64_t default_tokens[2] = {1, 64};
    const int64_t *tokens = cfg->ntokens ? cfg->tokens : default_tokens;
    int ntokens = cfg->ntokens ? cfg->ntokens : 2;
    /* The copy kernel over the weights' bytes, read and written once each. */
    double copy_gbps = bench_copy_limit(dev, cfg, rows, ((size_t)s.weight_bytes / 8 + 1023) / 1024 * 1024);
    size_t first = rows->n;
    int rc = ffnrt_context_set_async(dev->ctx, 1) == FFNRT_OK ? 0 : -1;
    for (int i = 0; i < ntokens && rc == 0; i++) {
        if (stack_tokens(&s, tokens[i]) != 0) {
            fprintf(stderr, "ffnrt bench: the FFN stack: %s\n", ffnrt_last_error_message());
            rc = -1;
            break;
        }
        /* As the dispatcher chooses (the exact policy: the float path),
         * then at decode with the integer path forced, where the file's
         * formats have one (Q4_0, Q4_1). */
        for (int int8 = 0; int8 < 1 + (s.int8_able && tokens[i] <= 4) && rc == 0; int8++) {
            if (ffnrt_context_force(dev->ctx, "ffn.int_dot", int8 ? "on" : NULL) != FFNRT_OK) {
                rc = -1;
                break;
            }
            bench_row *r = bench_rows_push(rows);
            if (!r) {
                rc = -1;
                break;
            }
            char op[40], shape[40];
            snprintf(op, sizeof op, "%s ffn x%lld", s.arch, (long long)s.layers);
            snprintf(shape, sizeof shape, "%lldx%lld t%lld", (long long)s.d_model, (long long)s.hidden,
                     (long long)tokens[i]);
            bench_row_device(r, dev, "stack");
            BENCH_SET(r->op, op);
            BENCH_SET(r->dir, "fwd");
            BENCH_SET(r->dtype, s.formats);
            BENCH_SET(r->path, int8 ? "auto+int8" : "auto");
            BENCH_SET(r->shape, shape);
            r->size = (double)tokens[i];
            bench_config c = *cfg;
            if (tokens[i] > 8 && c.max_runs > 5)
                c.max_runs = 5; /* 30 layers of prefill on lavapipe take a while */
            if (bench_measure(dev->ctx, stack_call, &s, &c, r) != 0) {
                rows->n--;
                rc = -1;
                break;
            }
            r->rate = (double)tokens[i] * 1e9 / r->median_ns;
            BENCH_SET(r->rate_unit, "tok/s");
            double gbps = (double)s.weight_bytes / r->median_ns;
            r->ratio = copy_gbps > 0 ? gbps / copy_gbps : 0;
            BENCH_SET(r->ratio_to, copy_gbps > 0 ? "copy" : "");
            char note[64];
            snprintf(note, sizeof note, "%.1f MB of weights a forward, %.2f GB/s, norm+ffn+residual", 1e-6 * (double)s.weight_bytes, gbps);
            BENCH_SET(r->note, note);
            bench_row_metric(r, "tokens_per_s", r->rate);
            bench_row_metric(r, "weight_mb", 1e-6 * (double)s.weight_bytes);
            bench_row_done(cfg, r);
        }
        ffnrt_context_force(dev->ctx, "ffn.int_dot", NULL);
    }
    ffnrt_context_set_async(dev->ctx, 0);
    stack_close(&s);
    bench_peer_ggml_stack_rows(dev, cfg, first, rows); /* ggml-cpu (once a run), ggml-vulkan beside the auto rows */
    return rc;
}
