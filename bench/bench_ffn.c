/* The FFN rows of `ffnrt bench`: dense GELU 768 x 3072 (BERT-base), gated
 * SwiGLU 512 x 1376, 2048 x 5632 and 4096 x 14336, at tokens 1, 8, 64 and
 * 512, fp32 and fp16 storage, fused and unfused on the same weights.
 *
 * Limits, measured on the same device in the same run: a copy kernel whose
 * reads and writes add up to the layer's weight bytes (so both fit in, or
 * leave, the caches alike) and the GEMM rate: the best GFLOP/s of the device's rows,
 * of which the GEMM-rate probe (a dense ReLU layer of 1024 x 4096 at 256
 * tokens, 4.3 GFLOP, two GEMMs and a cheap epilogue) is one. Decode rows
 * (up to 8 tokens, where a layer streams its weights once) report weight
 * bytes over time against the copy kernel; prefill rows report GFLOP/s
 * (ffnrt_ffn_cost_of's count) against the GEMM rate. CLBlast's SGEMM of each fp32 prefill row's first projection runs
 * beside it on OpenCL devices; ggml's Vulkan backend runs each SwiGLU layer
 * beside it on Vulkan devices (peer_ggml.c); PyTorch's CPU training step
 * runs beside each f32 train row where a python3 imports torch
 * (peer_torch.c).
 *
 * Quantized rows (dtype: the weights' block format, f32 activations): the
 * same layer with every matrix in Q8_0, Q4_0, Q4_1 (and the K-quants at
 * decode), made from ffnrt_quantize's GGUF bytes. Their decode rate is the
 * quantized bytes streamed (ffnrt_ffn_cost_of's weight_bytes, the bytes the
 * kernels read) against the copy kernel; the note compares them with the
 * fp16 layer of the same shape, tokens and path in the same run (time
 * ratio: tokens/s, or GFLOP/s) and, at decode, gives the operations a
 * weight (a multiply-add and the dequantization: the dispatcher's count)
 * and the rate they reach against the device's best GFLOP/s (the
 * arithmetic roof).
 *
 * Training rows (fp32 and 16-bit layers, 64 tokens and more): one step,
 * training forward, backward and AdamW, end to end on the host clock,
 * against the forward of the same layer on the same clock. */
#include "bench_ffn.h"
#include "bench_parts.h"
#include "ffnrt_lab.h"
#include "lab.h"
#include "peer_clblast.h"
#include "peer_ggml.h"
#include "peer_torch.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ffn_workload {
    const char *name;
    ffnrt_ffn_kind kind;
    int64_t d_model, hidden;
    int quick; /* part of --quick */
    int quant; /* quantized rows: 1 in both presets, 2 in --full, 0 none */
    int quant_prefill_max; /* the largest token count of its quantized rows in --full */
} ffn_workload;

static const ffn_workload workloads[] = {
    {"dense-gelu", FFNRT_FFN_DENSE, 768, 3072, 1, 0, 0},
    {"swiglu", FFNRT_FFN_GATED, 512, 1376, 1, 1, 64},
    {"swiglu", FFNRT_FFN_GATED, 576, 1536, 0, 2, 512}, /* SmolLM2-135M */
    {"swiglu", FFNRT_FFN_GATED, 2048, 5632, 0, 2, 512},
    {"swiglu", FFNRT_FFN_GATED, 4096, 14336, 0, 2, 64},
};
static const int64_t full_tokens[] = {1, 8, 64, 512};
static const int64_t quick_tokens[] = {1, 64};
static const int64_t quant_tokens[] = {1, 64, 512};

/* Older tuning filters (environment), used when the options do not say:
 * FFNRT_BENCH_FFN_SHAPES="768x3072,512x1376", FFNRT_BENCH_FFN_TOKENS="1,512",
 * FFNRT_BENCH_FFN_DTYPES="f32". */
static int env_keeps(const char *var, const char *item)
{
    const char *list = getenv(var);
    if (!list || !*list)
        return 1;
    size_t n = strlen(item);
    for (const char *s = list; (s = strstr(s, item)) != NULL; s += n)
        if ((s == list || s[-1] == ',') && (s[n] == ',' || s[n] == 0))
            return 1;
    return 0;
}

static int keeps_shape(const bench_config *cfg, const char *shape)
{
    if (cfg->nshapes == 0)
        return env_keeps("FFNRT_BENCH_FFN_SHAPES", shape);
    for (int i = 0; i < cfg->nshapes; i++)
        if (strcmp(cfg->shapes[i], shape) == 0)
            return 1;
    return 0;
}

/* Random values in [-s, s], s = 1/sqrt(fan-in), in the dtype. */
static ffnrt_tensor *random_tensor(ffnrt_context *ctx, ffnrt_dtype dtype, int64_t rows, int64_t cols, uint32_t seed)
{
    int64_t shape[2] = {rows, cols};
    ffnrt_tensor *t = NULL;
    if (ffnrt_tensor_create(ctx, dtype, cols ? 2 : 1, shape, &t) != FFNRT_OK)
        return NULL;
    size_t n = ffnrt_tensor_numel(t);
    float *v = malloc(n * sizeof *v);
    uint16_t *bits = malloc(n * sizeof *bits);
    float scale = 1.0f / sqrtf((float)(cols ? cols : 1));
    ffnrt_status st = FFNRT_ERROR_OUT_OF_HOST_MEMORY;
    if (v && bits) {
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1664525u + 1013904223u;
            v[i] = ((float)(seed >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
        }
        if (dtype == FFNRT_DTYPE_F16) {
            ffnrt_f32_to_f16_array(v, bits, n);
            st = ffnrt_tensor_write(t, bits, n * 2);
        } else if (dtype == FFNRT_DTYPE_BF16) {
            ffnrt_f32_to_bf16_array(v, bits, n);
            st = ffnrt_tensor_write(t, bits, n * 2);
        } else {
            st = ffnrt_tensor_write(t, v, n * 4);
        }
    }
    free(v);
    free(bits);
    if (st != FFNRT_OK) {
        ffnrt_tensor_destroy(t);
        return NULL;
    }
    return t;
}

/* A [rows, cols] matrix of random values in [-s, s], s = 1/sqrt(cols),
 * as GGUF's bytes of format f (quantized a few rows at a time). */
static void *random_blocks(ffnrt_weight_format f, int64_t rows, int64_t cols, uint32_t seed)
{
    size_t bytes, row_bytes;
    if (ffnrt_weight_bytes(f, rows, cols, &bytes) != FFNRT_OK || ffnrt_weight_bytes(f, 1, cols, &row_bytes) != FFNRT_OK)
        return NULL;
    const int64_t chunk = 256;
    uint8_t *out = malloc(bytes);
    float *v = malloc((size_t)(chunk * cols) * sizeof *v);
    float scale = 1.0f / sqrtf((float)cols);
    int ok = out && v;
    for (int64_t r0 = 0; r0 < rows && ok; r0 += chunk) {
        int64_t n = rows - r0 < chunk ? rows - r0 : chunk;
        for (int64_t i = 0; i < n * cols; i++) {
            seed = seed * 1664525u + 1013904223u;
            v[i] = ((float)(seed >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
        }
        ok = ffnrt_quantize(f, v, n, cols, out + (size_t)r0 * row_bytes, (size_t)n * row_bytes) == FFNRT_OK;
    }
    free(v);
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

/* The layer's weights: device tensors (dense rows share them), or host
 * arrays (quantized rows: GGUF's bytes, which each layer repacks). */
typedef struct ffn_weights {
    ffnrt_ffn_weight_tensors wt;
    ffnrt_ffn_weights hw;
    int host;
} ffn_weights;

static ffnrt_status make_layer(ffnrt_context *ctx, const ffnrt_ffn_desc *desc, const ffn_weights *w, ffnrt_ffn **out)
{
    return w->host ? ffnrt_ffn_create(ctx, desc, &w->hw, out) : ffnrt_ffn_create_from_tensors(ctx, desc, &w->wt, out);
}

/* The desc of a workload's layer in dtype, or with every matrix in block
 * format f (then f32 activations). */
static ffnrt_ffn_desc workload_desc(const ffn_workload *w, ffnrt_dtype dtype, ffnrt_weight_format f)
{
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(w->kind, w->d_model, w->hidden);
    desc.dtype = f ? FFNRT_DTYPE_F32 : dtype;
    desc.format_in = desc.format_out = f;
    desc.format_value = w->kind == FFNRT_FFN_GATED ? f : FFNRT_WEIGHT_F32;
    return desc;
}

/* A new row of the layer w: its group, direction, type, path and token
 * count; NULL when out of host memory. */
static bench_row *layer_row(bench_rows *rows, const bench_device *dev, const char *group, const ffn_workload *w,
                            const char *dir, const char *dtype, const char *path, int64_t tokens)
{
    bench_row *r = bench_rows_push(rows);
    if (!r)
        return NULL;
    bench_row_device(r, dev, group);
    snprintf(r->op, sizeof r->op, "%s %lldx%lld", w->name, (long long)w->d_model, (long long)w->hidden);
    BENCH_SET(r->dir, dir);
    BENCH_SET(r->dtype, dtype);
    BENCH_SET(r->path, path);
    snprintf(r->shape, sizeof r->shape, "t%lld", (long long)tokens);
    r->size = (double)tokens;
    return r;
}

typedef struct ffn_call_arg {
    ffnrt_ffn *layer;
    const ffnrt_tensor *x;
    ffnrt_tensor *y;
} ffn_call_arg;

static ffnrt_status ffn_call(void *arg)
{
    ffn_call_arg *a = arg;
    return ffnrt_ffn_forward(a->layer, a->x, a->y);
}

typedef struct copy_arg {
    ffnrt_context *ctx;
    ffnrt_tensor *a, *b;
} copy_arg;

static ffnrt_status copy_call(void *arg)
{
    copy_arg *c = arg;
    return ffnrt_copy(c->ctx, c->a, c->b);
}

/* The copy limit's GB/s for n fp32 elements: the row of that size when one
 * ran (the element-wise part's, or another workload's), else measured here
 * and added as a limit row. */
double bench_copy_limit(const bench_device *dev, const bench_config *cfg, bench_rows *rows, size_t elements)
{
    char shape[32];
    snprintf(shape, sizeof shape, "%zu", elements);
    for (size_t i = 0; i < rows->n; i++) {
        const bench_row *r = &rows->v[i];
        if (strcmp(r->group, "limit") == 0 && strcmp(r->op, "copy") == 0 && strcmp(r->dtype, "f32") == 0 &&
            strcmp(r->shape, shape) == 0 && strcmp(r->device, dev->info.name) == 0 &&
            strcmp(r->backend, ffnrt_backend_name(dev->info.backend)) == 0)
            return r->rate;
    }
    int64_t n = (int64_t)elements;
    copy_arg c = {dev->ctx, NULL, NULL};
    double gbps = 0;
    if (ffnrt_tensor_create(dev->ctx, FFNRT_DTYPE_F32, 1, &n, &c.a) == FFNRT_OK &&
        ffnrt_tensor_create(dev->ctx, FFNRT_DTYPE_F32, 1, &n, &c.b) == FFNRT_OK) {
        bench_row *r = bench_rows_push(rows);
        if (r) {
            bench_row_device(r, dev, "limit");
            BENCH_SET(r->op, "copy");
            BENCH_SET(r->dir, "fwd");
            BENCH_SET(r->dtype, "f32");
            BENCH_SET(r->shape, shape);
            r->size = (double)n;
            if (bench_measure(dev->ctx, copy_call, &c, cfg, r) == 0) {
                r->rate = gbps = 2.0 * 4.0 * (double)n / r->median_ns;
                BENCH_SET(r->rate_unit, "GB/s");
                r->ratio = 1;
                BENCH_SET(r->ratio_to, "copy");
                bench_row_done(cfg, r);
            } else {
                rows->n--;
            }
        }
    }
    ffnrt_tensor_destroy(c.a);
    ffnrt_tensor_destroy(c.b);
    return gbps;
}

/* The GEMM-rate probe: GFLOP/s of a dense ReLU layer 1024 x 4096 at 256
 * tokens, fused, on the product kernel ffnrt picks; added as a limit row. */
static double gemm_limit(const bench_device *dev, const bench_config *cfg, bench_rows *rows)
{
    const int64_t d = 1024, h = 4096, tokens = 256;
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_DENSE, d, h);
    desc.activation = (ffnrt_activation_desc)FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_RELU);
    desc.path = FFNRT_FFN_PATH_FUSED;
    ffnrt_ffn_weight_tensors wt = {0};
    ffnrt_tensor *w1 = random_tensor(dev->ctx, FFNRT_DTYPE_F32, h, d, 11);
    ffnrt_tensor *w2 = random_tensor(dev->ctx, FFNRT_DTYPE_F32, d, h, 12);
    ffnrt_tensor *x = random_tensor(dev->ctx, FFNRT_DTYPE_F32, tokens, d, 13), *y = NULL;
    int64_t shape[2] = {tokens, d};
    ffn_call_arg a = {NULL, x, NULL};
    double gflops = 0;
    wt.w_in = w1;
    wt.w_out = w2;
    if (w1 && w2 && x && ffnrt_tensor_create(dev->ctx, FFNRT_DTYPE_F32, 2, shape, &y) == FFNRT_OK &&
        ffnrt_ffn_create_from_tensors(dev->ctx, &desc, &wt, &a.layer) == FFNRT_OK) {
        a.y = y;
        ffnrt_ffn_cost cost;
        ffnrt_ffn_cost_of(&desc, tokens, FFNRT_FFN_PATH_FUSED, &cost);
        bench_row *r = bench_rows_push(rows);
        if (r) {
            bench_row_device(r, dev, "limit");
            BENCH_SET(r->op, "gemm");
            BENCH_SET(r->dir, "fwd");
            BENCH_SET(r->dtype, "f32");
            BENCH_SET(r->path, "fused");
            BENCH_SET(r->shape, "1024x4096 t256");
            r->size = (double)tokens;
            if (bench_measure(dev->ctx, ffn_call, &a, cfg, r) == 0) {
                r->rate = gflops = (double)cost.flops / r->median_ns;
                BENCH_SET(r->rate_unit, "GFLOP/s");
                r->ratio = 1;
                BENCH_SET(r->ratio_to, "gemm");
                BENCH_SET(r->note, "the probe: a dense relu layer");
                bench_row_done(cfg, r);
            } else {
                rows->n--;
            }
        }
    } else {
        fprintf(stderr, "ffnrt bench: GEMM probe on %s: %s\n", dev->info.name, ffnrt_last_error_message());
    }
    ffnrt_ffn_destroy(a.layer);
    ffnrt_tensor_destroy(w1);
    ffnrt_tensor_destroy(w2);
    ffnrt_tensor_destroy(x);
    ffnrt_tensor_destroy(y);
    return gflops;
}

/* The op-rate roofs (ffnrt_lab_roof): fp32 FMA (GFLOP/s) and the integer
 * path's 8-bit code products (Gop/s), each a limit row; *fma and *int8 get
 * their rates (0 where a probe failed). A roof this device already
 * measured in this run (the element-wise part's) is read from its row. */
typedef struct roof_arg {
    ffnrt_context *ctx;
    ffnrt_tensor *out;
    int integer;
    double ops;
} roof_arg;

static ffnrt_status roof_call(void *p)
{
    roof_arg *a = p;
    return ffnrt_lab_roof(a->ctx, a->integer, a->out, &a->ops);
}

void bench_roofs(const bench_device *dev, const bench_config *cfg, bench_rows *rows, double *fma, double *int8)
{
    int64_t items = 64 * 1024;
    roof_arg a = {dev->ctx, NULL, 0, 0};
    *fma = *int8 = 0;
    for (size_t i = 0; i < rows->n; i++) {
        const bench_row *r = &rows->v[i];
        if (strcmp(r->group, "limit") != 0 || strcmp(r->device, dev->info.name) != 0 ||
            strcmp(r->backend, ffnrt_backend_name(dev->info.backend)) != 0)
            continue;
        if (strcmp(r->op, "fma") == 0)
            *fma = r->rate;
        else if (strcmp(r->op, "int8-dot") == 0)
            *int8 = r->rate;
    }
    if ((*fma > 0 && *int8 > 0) || ffnrt_tensor_create(dev->ctx, FFNRT_DTYPE_F32, 1, &items, &a.out) != FFNRT_OK)
        return;
    for (a.integer = 0; a.integer < 2; a.integer++) {
        if (*(a.integer ? int8 : fma) > 0)
            continue;
        bench_row *r = bench_rows_push(rows);
        if (!r)
            break;
        bench_row_device(r, dev, "limit");
        BENCH_SET(r->op, a.integer ? "int8-dot" : "fma");
        BENCH_SET(r->dir, "fwd");
        BENCH_SET(r->dtype, a.integer ? "i32" : "f32");
        BENCH_SET(r->shape, "65536 items");
        r->size = (double)items;
        if (bench_measure(dev->ctx, roof_call, &a, cfg, r) != 0) {
            rows->n--;
            continue;
        }
        r->rate = a.ops / r->median_ns;
        BENCH_SET(r->rate_unit, a.integer ? "Gop/s" : "GFLOP/s");
        r->ratio = 1;
        BENCH_SET(r->ratio_to, a.integer ? "int8-dot" : "fma");
        BENCH_SET(r->note, a.integer ? "the probe: 8-bit code products (32-bit pairs)" : "the probe: fp32 FMA chains");
        *(a.integer ? int8 : fma) = r->rate;
    }
    ffnrt_tensor_destroy(a.out);
}

/* Runs every token count of one workload and dtype. */

/* The dispatcher's regret on one FFN row. Every candidate the dispatcher
 * weighs on this device (fused and unfused paths; the blocked,
 * matrix-vector and tiled kernels as ffnrt_ffn_autotune times them) is
 * timed in interleaved rounds, so that load on the machine falls on all of
 * them alike; the automatic choice (the cost model, stored tuning results
 * ignored) and the tuned choice (after ffnrt_ffn_autotune) are candidates,
 * and their regret is their median over the best median. Times are host
 * end to end, what the caller waits for (the unfused path's separate
 * submissions count). Rows: group "dispatch", path "auto" / "tuned",
 * ratio = best / choice (1 = no regret). */
#define MAX_CANDIDATES 6
#define MAX_ROUNDS 15

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int dispatch_rows(const bench_device *dev, const bench_config *cfg, const ffn_workload *w, ffnrt_dtype dtype,
                         ffnrt_weight_format wf, const ffn_weights *wt, const ffnrt_tensor *x, ffnrt_tensor *y,
                         int64_t tokens, bench_rows *rows)
{
    ffnrt_context *ctx = dev->ctx;
    static const char *const kernels[] = {"blocked", "matvec", "tiled"};
    struct {
        ffnrt_ffn *layer;
        int unfused, kernel;
        char name[24];
        double t[MAX_ROUNDS];
        double median;
    } cand[MAX_CANDIDATES];
    int nc = 0, rc = 0;
    /* The candidates are the library's own list (what ffnrt_ffn_autotune
     * times), read from the layer's plan. */
    ffnrt_ffn_desc desc = workload_desc(w, dtype, wf);
    ffnrt_plan *plan = NULL;
    char list[128] = "";
    if (ffnrt_ffn_plan(ctx, &desc, tokens, &plan) == FFNRT_OK && ffnrt_plan_choice(plan, "ffn.candidates"))
        snprintf(list, sizeof list, "%s", ffnrt_plan_choice(plan, "ffn.candidates"));
    ffnrt_plan_destroy(plan);
    char *save = NULL;
    for (char *item = strtok_r(list, ",", &save); item && nc < MAX_CANDIDATES && rc == 0;
         item = strtok_r(NULL, ",", &save)) {
        char *slash = strchr(item, '/');
        int k = -1;
        for (int j = 0; slash && j < 3; j++)
            if (strcmp(slash + 1, kernels[j]) == 0)
                k = j;
        if (k < 0)
            continue;
        int p = strncmp(item, "unfused", 7) == 0;
        ffnrt_ffn_desc cd = desc;
        cd.path = p ? FFNRT_FFN_PATH_UNFUSED : FFNRT_FFN_PATH_FUSED;
        cand[nc].layer = NULL;
        if (make_layer(ctx, &cd, wt, &cand[nc].layer) != FFNRT_OK) {
            rc = -1;
            break;
        }
        cand[nc].unfused = p;
        cand[nc].kernel = k;
        snprintf(cand[nc].name, sizeof cand[nc].name, "%s/%s", p ? "unfused" : "fused", kernels[k]);
        nc++;
    }
    if (nc == 0 && rc == 0) {
        fprintf(stderr, "ffnrt bench: the plan lists no candidates\n");
        return -1;
    }
    int rounds = cfg->max_runs < MAX_ROUNDS ? cfg->max_runs : MAX_ROUNDS;
    if (rounds < 3)
        rounds = 3;
    for (int r = -1; r < rounds && rc == 0; r++) /* round -1: warm-up, builds the kernels */
        for (int i = 0; i < nc && rc == 0; i++) {
            if (ffnrt_context_force(ctx, "ffn.kernel", kernels[cand[i].kernel]) != FFNRT_OK)
                rc = -1;
            double t0 = lab_now_s();
            if (rc == 0 && ffnrt_ffn_forward(cand[i].layer, x, y) != FFNRT_OK) {
                fprintf(stderr, "ffnrt bench: dispatch %s: %s\n", cand[i].name, ffnrt_last_error_message());
                rc = -1;
            }
            if (r >= 0)
                bench_measure_add(cand[i].t[r] = lab_now_s() - t0);
            else
                bench_warmup_add(lab_now_s() - t0);
        }
    ffnrt_context_force(ctx, "ffn.kernel", NULL);
    int best = -1;
    for (int i = 0; i < nc && rc == 0; i++) {
        qsort(cand[i].t, (size_t)rounds, sizeof cand[i].t[0], cmp_dbl);
        cand[i].median = cand[i].t[rounds / 2];
        if (best < 0 || cand[i].median < cand[best].median)
            best = i;
    }
    /* The two choices, read from plans: without tuning, then tuned. */
    ffnrt_ffn *tuned_layer = NULL;
    for (int tuned = 0; tuned < 2 && rc == 0 && best >= 0; tuned++) {
        if (tuned && (make_layer(ctx, &desc, wt, &tuned_layer) != FFNRT_OK ||
                      ffnrt_ffn_autotune(tuned_layer, x, y) != FFNRT_OK)) {
            fprintf(stderr, "ffnrt bench: autotune: %s\n", ffnrt_last_error_message());
            rc = -1;
            break;
        }
        ffnrt_context_force(ctx, "ffn.tuning", tuned ? NULL : "off");
        plan = NULL;
        int chose = -1;
        if (ffnrt_ffn_plan(ctx, &desc, tokens, &plan) == FFNRT_OK) {
            const char *path = ffnrt_plan_choice(plan, "ffn.path"), *kernel = ffnrt_plan_choice(plan, "ffn.kernel");
            for (int i = 0; i < nc; i++)
                if (path && kernel && strcmp(path, cand[i].unfused ? "unfused" : "fused") == 0 &&
                    strcmp(kernel, kernels[cand[i].kernel]) == 0)
                    chose = i;
        }
        ffnrt_plan_destroy(plan);
        ffnrt_context_force(ctx, "ffn.tuning", NULL);
        if (chose < 0) {
            fprintf(stderr, "ffnrt bench: the dispatcher chose outside the candidates\n");
            rc = -1;
            break;
        }
        bench_row *r = layer_row(rows, dev, "dispatch", w, "fwd",
                                 wf ? ffnrt_weight_format_name(wf) : ffnrt_dtype_name(dtype), tuned ? "tuned" : "auto",
                                 tokens);
        if (!r) {
            rc = -1;
            break;
        }
        bench_row_times(r, NULL, cand[chose].t, rounds);
        ffnrt_ffn_cost cost;
        ffnrt_ffn_cost_of(&desc, tokens, FFNRT_FFN_PATH_FUSED, &cost);
        r->rate = (double)cost.flops / r->host_ns;
        BENCH_SET(r->rate_unit, "GFLOP/s");
        r->ratio = cand[best].median / cand[chose].median;
        BENCH_SET(r->ratio_to, "best");
        /* The same kernel on the other path: fused over unfused speed, interleaved. */
        double fu = 0;
        for (int i = 0; i < nc; i++)
            if (cand[i].kernel == cand[chose].kernel && cand[i].unfused != cand[chose].unfused)
                fu = cand[chose].unfused ? cand[chose].median / cand[i].median : cand[i].median / cand[chose].median;
        if (chose == best)
            snprintf(r->note, sizeof r->note, "regret 0%%: chose %s, the best; f/u %.2f", cand[chose].name, fu);
        else
            snprintf(r->note, sizeof r->note, "regret %.1f%%: chose %s, best %s", 100.0 * (1.0 / r->ratio - 1.0),
                     cand[chose].name, cand[best].name);
    }
    ffnrt_ffn_destroy(tuned_layer);
    for (int i = 0; i < nc; i++)
        ffnrt_ffn_destroy(cand[i].layer);
    return rc;
}

/* The token counts of a workload's rows: the selection's, or the preset's. */
static size_t token_list(const bench_config *cfg, ffnrt_weight_format wf, const int64_t **tokens)
{
    *tokens = cfg->ntokens ? cfg->tokens : cfg->quick ? quick_tokens : wf ? quant_tokens : full_tokens;
    return cfg->ntokens ? (size_t)cfg->ntokens : cfg->quick ? 2 : wf ? 3 : 4;
}

static int token_runs(const bench_config *cfg, const ffn_workload *w, ffnrt_weight_format wf, int64_t tokens)
{
    char tok[24];
    snprintf(tok, sizeof tok, "%lld", (long long)tokens);
    if (!cfg->ntokens && !env_keeps("FFNRT_BENCH_FFN_TOKENS", tok))
        return 0;
    /* The full preset's quantized prefill: up to the workload's largest
     * count; K-quants at decode only. */
    return !(wf && !cfg->ntokens && !cfg->quick &&
             (tokens > w->quant_prefill_max || (tokens > 1 && wf >= FFNRT_WEIGHT_Q4_K)));
}

/* Runs every token count of one workload, in dtype or (wf a block format)
 * with quantized weights and f32 activations. */
/* A training step: the training forward, the backward (dx and every
 * weight gradient) and an AdamW step, timed on the host end to end (its
 * calls' device times are not one batch). Its rate counts 3x the
 * forward's FLOPs (the backward's two products a matrix), against the
 * forward row fwd_row's rate on the host clock in the same run. A second
 * row (path step-recompute) takes the other side of the memory trade:
 * the plain forward (fused where the dispatcher says), then a backward
 * with FFNRT_GRADIENTS_RECOMPUTE, which keeps nothing between steps. */
typedef struct train_arg {
    ffnrt_ffn *layer;
    const ffnrt_tensor *x;
    ffnrt_tensor *y, *dy, *dx;
    ffnrt_ffn_gradients g;
    ffnrt_optimizer *opt;
    int recompute;
} train_arg;

static ffnrt_status train_call(void *arg)
{
    train_arg *a = arg;
    ffnrt_status st = a->recompute ? ffnrt_ffn_forward(a->layer, a->x, a->y)
                                   : ffnrt_ffn_forward_train(a->layer, a->x, a->y);
    if (st == FFNRT_OK)
        st = ffnrt_ffn_backward(a->layer, a->x, a->dy, a->dx, &a->g, a->recompute ? FFNRT_GRADIENTS_RECOMPUTE : 0);
    return st == FFNRT_OK ? ffnrt_optimizer_step(a->opt, NULL) : st;
}

static int train_row(const bench_device *dev, const bench_config *cfg, const ffn_workload *w, ffnrt_dtype dtype,
                     ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_ffn_cost cost, size_t fwd_row, bench_rows *rows)
{
    ffnrt_context *ctx = dev->ctx;
    int gated = w->kind == FFNRT_FFN_GATED;
    int64_t t = ffnrt_tensor_dim(x, 0), up_shape[2] = {gated ? 2 * w->hidden : w->hidden, w->d_model},
            down_shape[2] = {w->d_model, w->hidden}, io[2] = {t, w->d_model};
    train_arg a = {layer, x, NULL, random_tensor(ctx, dtype, t, w->d_model, 4), NULL, {0}, NULL, 0};
    ffnrt_tensor *gup = NULL, *gdown = NULL;
    ffnrt_optimizer_desc od = FFNRT_OPTIMIZER_DESC_INIT(FFNRT_OPTIMIZER_ADAMW);
    od.lr = 1e-5f;
    int rc = a.dy && ffnrt_tensor_create(ctx, dtype, 2, io, &a.y) == FFNRT_OK &&
                     ffnrt_tensor_create(ctx, dtype, 2, io, &a.dx) == FFNRT_OK &&
                     ffnrt_tensor_create(ctx, dtype, 2, up_shape, &gup) == FFNRT_OK &&
                     ffnrt_tensor_create(ctx, dtype, 2, down_shape, &gdown) == FFNRT_OK &&
                     ffnrt_optimizer_create(ctx, &od, &a.opt) == FFNRT_OK
                 ? 0
                 : -1;
    if (gated)
        a.g.w_gate_value = gup;
    else
        a.g.w_in = gup;
    a.g.w_out = gdown;
    if (rc == 0 && ffnrt_optimizer_add_ffn(a.opt, layer, &a.g) != FFNRT_OK)
        rc = -1;
    for (a.recompute = 0; a.recompute < 2 && rc == 0; a.recompute++) {
        bench_row *r = layer_row(rows, dev, "ffn", w, "train", ffnrt_dtype_name(dtype),
                                 a.recompute ? "step-recompute" : "step", t);
        if (!r) {
            rc = -1;
            break;
        }
        if (bench_measure(NULL, train_call, &a, cfg, r) != 0) {
            rows->n--;
            rc = -1;
            break;
        }
        double flops = 3.0 * (double)cost.flops, fwd_host = (double)cost.flops / rows->v[fwd_row].host_ns;
        r->rate = flops / r->median_ns;
        BENCH_SET(r->rate_unit, "GFLOP/s");
        r->ratio = fwd_host > 0 ? r->rate / fwd_host : 0;
        BENCH_SET(r->ratio_to, "fwd-host");
        /* What the layer holds between the forward and the backward. */
        bench_row_metric(r, "kept_mb", a.recompute ? 0.0 : 1e-6 * (double)cost.saved_bytes);
        snprintf(r->note, sizeof r->note, "%s+AdamW (host); %.3gx the %.8s fwd's",
                 a.recompute ? "fwd+recompute+bwd" : "fwd+bwd", r->ratio, rows->v[fwd_row].path);
    }
    if (rc != 0)
        fprintf(stderr, "ffnrt bench: %s training step: %s\n", w->name, ffnrt_last_error_message());
    ffnrt_optimizer_destroy(a.opt);
    ffnrt_tensor_destroy(a.y);
    ffnrt_tensor_destroy(a.dy);
    ffnrt_tensor_destroy(a.dx);
    ffnrt_tensor_destroy(gup);
    ffnrt_tensor_destroy(gdown);
    return rc;
}

static int bench_workload(const bench_device *dev, const bench_config *cfg, const ffn_workload *w, ffnrt_dtype dtype,
                          ffnrt_weight_format wf, double gemm_gflops, bench_rows *rows)
{
    double copy_gbps = 0; /* measured on first need: a copy moving the weights' bytes */
    ffnrt_context *ctx = dev->ctx;
    int gated = w->kind == FFNRT_FFN_GATED;
    if (wf)
        dtype = FFNRT_DTYPE_F32;
    ffn_weights wt;
    memset(&wt, 0, sizeof wt);
    int64_t up_rows = gated ? 2 * w->hidden : w->hidden;
    ffnrt_tensor *up = NULL, *down = NULL;
    void *up_host = NULL, *down_host = NULL;
    ffnrt_ffn *layer[2] = {NULL, NULL};
    int rc = 0;
    if (wf) {
        up_host = random_blocks(wf, up_rows, w->d_model, 1);
        down_host = random_blocks(wf, w->d_model, w->hidden, 2);
    } else {
        up = random_tensor(ctx, dtype, up_rows, w->d_model, 1);
        down = random_tensor(ctx, dtype, w->d_model, w->hidden, 2);
    }
    if (wf ? !up_host || !down_host : !up || !down) {
        fprintf(stderr, "ffnrt bench: %s %lldx%lld: %s\n", w->name, (long long)w->d_model, (long long)w->hidden,
                ffnrt_last_error_message());
        rc = -1;
        goto done;
    }
    wt.host = wf != 0;
    if (gated) /* stacked, as Phi-3 stores them */
        wt.wt.w_gate_value = up, wt.hw.w_gate_value = up_host;
    else
        wt.wt.w_in = up, wt.hw.w_in = up_host;
    wt.wt.w_out = down, wt.hw.w_out = down_host;
    for (int p = 0; p < 2; p++) {
        if (!(cfg->paths & (1 << p)))
            continue;
        ffnrt_ffn_desc desc = workload_desc(w, dtype, wf);
        desc.path = p ? FFNRT_FFN_PATH_UNFUSED : FFNRT_FFN_PATH_FUSED;
        if (make_layer(ctx, &desc, &wt, &layer[p]) != FFNRT_OK) {
            fprintf(stderr, "ffnrt bench: %s\n", ffnrt_last_error_message());
            rc = -1;
            goto done;
        }
    }
    const int64_t *tokens;
    size_t count = token_list(cfg, wf, &tokens);
    for (size_t i = 0; i < count && rc == 0; i++) {
        if (!token_runs(cfg, w, wf, tokens[i]))
            continue;
        ffnrt_ffn_desc desc = workload_desc(w, dtype, wf);
        ffnrt_ffn_cost cost;
        ffnrt_ffn_cost_of(&desc, tokens[i], FFNRT_FFN_PATH_FUSED, &cost);
        ffnrt_tensor *x = random_tensor(ctx, dtype, tokens[i], w->d_model, 3), *y = NULL;
        int64_t shape[2] = {tokens[i], w->d_model};
        if (!x || ffnrt_tensor_create(ctx, dtype, 2, shape, &y) != FFNRT_OK) {
            fprintf(stderr, "ffnrt bench: %s\n", ffnrt_last_error_message());
            rc = -1;
        }
        /* Long rows (the 8B layer's prefill on lavapipe) get fewer runs. */
        bench_config c = *cfg;
        if (cost.flops > 20e9)
            c.min_runs = c.max_runs = 2;
        int decode = tokens[i] <= 8;
        if (decode && copy_gbps == 0 && rc == 0) {
            /* Reads and writes of the copy add up to the weights' bytes, so
             * both stay in (or leave) the caches alike. */
            size_t elements = ((size_t)cost.weight_bytes / 8 + 1023) / 1024 * 1024;
            copy_gbps = bench_copy_limit(dev, cfg, rows, elements);
        }
        double t[2] = {0, 0};
        size_t first = rows->n;
        for (int p = 0; p < 2 && rc == 0; p++) {
            if (!layer[p])
                continue;
            bench_row *r = layer_row(rows, dev, "ffn", w, "fwd",
                                     wf ? ffnrt_weight_format_name(wf) : ffnrt_dtype_name(dtype),
                                     p ? "unfused" : "fused", tokens[i]);
            if (!r) {
                rc = -1;
                break;
            }
            ffn_call_arg a = {layer[p], x, y};
            if (bench_measure(ctx, ffn_call, &a, &c, r) != 0) {
                rows->n--;
                rc = -1;
                break;
            }
            double gflops = (double)cost.flops / r->median_ns;
            if (decode) {
                r->rate = (double)cost.weight_bytes / r->median_ns;
                BENCH_SET(r->rate_unit, "GB/s");
                r->ratio = copy_gbps > 0 ? r->rate / copy_gbps : 0;
                BENCH_SET(r->ratio_to, "copy");
            } else {
                r->rate = gflops;
                BENCH_SET(r->rate_unit, "GFLOP/s");
                r->ratio = gemm_gflops > 0 ? r->rate / gemm_gflops : 0;
                BENCH_SET(r->ratio_to, "gemm");
            }
            snprintf(r->note, sizeof r->note, "%.2f GFLOP/s", gflops);
            t[p] = r->median_ns;
        }
        /* Fused against unfused, on the fused row: device time, and host
         * end to end (the unfused path's separate submissions count). */
        if (rc == 0 && t[0] > 0 && t[1] > 0)
            snprintf(rows->v[first].note, sizeof rows->v[first].note,
                     "%.2f GFLOP/s, fused/unfused %.2f device, %.2f host", (double)cost.flops / t[0], t[1] / t[0],
                     rows->v[first + 1].host_ns / rows->v[first].host_ns);
        /* The integer path (ffn.int_dot) beside the fused row at decode,
         * forced on whatever the dispatcher would choose: its speed against
         * the float path's, on every device. */
        if (rc == 0 && layer[0] && tokens[i] <= 4 &&
            (wf == FFNRT_WEIGHT_Q8_0 || wf == FFNRT_WEIGHT_Q4_0 || wf == FFNRT_WEIGHT_Q4_1 || wf == FFNRT_WEIGHT_Q4_K ||
             wf == FFNRT_WEIGHT_Q6_K)) {
            bench_row *r = bench_rows_push(rows);
            if (!r) {
                rc = -1;
            } else {
                *r = rows->v[first];
                BENCH_SET(r->path, "fused+int8");
                ffn_call_arg a = {layer[0], x, y};
                rc = ffnrt_context_force(ctx, "ffn.int_dot", "on") == FFNRT_OK ? bench_measure(ctx, ffn_call, &a, &c, r)
                                                                                : -1;
                ffnrt_context_force(ctx, "ffn.int_dot", NULL);
                if (rc != 0) {
                    rows->n--;
                } else {
                    r->rate = (double)cost.weight_bytes / r->median_ns;
                    r->ratio = copy_gbps > 0 ? r->rate / copy_gbps : 0;
                    double over_float = t[0] > 0 ? t[0] / r->median_ns : 0;
                    bench_row_metric(r, "over_float", over_float);
                    snprintf(r->note, sizeof r->note, "integer path %.2fx the float path's speed", over_float);
                }
            }
        }
        if (rc == 0 && !wf && tokens[i] >= 64 && (layer[0] || layer[1]))
            rc = train_row(dev, &c, w, dtype, layer[0] ? layer[0] : layer[1], x, cost, t[0] > 0 ? first : first + 1,
                           rows);
        for (int p = 0, k = 0; p < 2 && rc == 0 && cfg->stats; p++) {
            ffn_call_arg a = {layer[p], x, y};
            if (layer[p])
                rc = bench_stats_row(ctx, ffn_call, &a, &c, rows, first + (size_t)k++, 0);
        }
        if (rc == 0 && cfg->dispatch_regret)
            rc = dispatch_rows(dev, &c, w, dtype, wf, &wt, x, y, tokens[i], rows);
        for (size_t k = first; k < rows->n; k++)
            bench_row_done(cfg, &rows->v[k]);
        ffnrt_tensor_destroy(x);
        ffnrt_tensor_destroy(y);
    }
done:
    ffnrt_ffn_destroy(layer[0]);
    ffnrt_ffn_destroy(layer[1]);
    ffnrt_tensor_destroy(up);
    ffnrt_tensor_destroy(down);
    free(up_host);
    free(down_host);
    return rc;
}

/* Issue 25's target for a format at 1 token: tokens a second at least
 * this many times the fp16 layer's (2.5 for Q4_0 and Q4_1, 1.6 for Q8_0),
 * or 0. */
static double f16_speedup_target(ffnrt_weight_format wf)
{
    return wf == FFNRT_WEIGHT_Q4_0 || wf == FFNRT_WEIGHT_Q4_1 ? 2.5 : wf == FFNRT_WEIGHT_Q8_0 ? 1.6 : 0;
}

/* The fp16 row of the layer quantized row r stands for (same op, shape
 * and path, "fused+int8" standing for "fused"), in rows[first..), and its
 * time over r's into out (at most 32 bytes: "2.45x f16 >=2.5 met"), with
 * the target marked at 1 token, where the issue sets it; "no f16 row"
 * where there is none. */
static void versus_f16(bench_rows *rows, size_t first, bench_row *r, ffnrt_weight_format wf, char out[32])
{
    char path[sizeof r->path];
    snprintf(path, sizeof path, "%s", r->path);
    char *plus = strstr(path, "+int8");
    if (plus)
        *plus = '\0';
    const bench_row *half = NULL;
    for (size_t j = first; j < rows->n && !half; j++) {
        const bench_row *h = &rows->v[j];
        if (strcmp(h->group, "ffn") == 0 && strcmp(h->dtype, "f16") == 0 && strcmp(h->op, r->op) == 0 &&
            strcmp(h->shape, r->shape) == 0 && strcmp(h->path, path) == 0)
            half = h;
    }
    if (!half || !(r->median_ns > 0)) {
        snprintf(out, 32, "no f16 row");
        return;
    }
    double x = half->median_ns / r->median_ns, target = f16_speedup_target(wf);
    bench_row_metric(r, "over_f16", x);
    if (target > 0 && r->size == 1)
        snprintf(out, 32, "%.2fx f16 >=%g %s", x, target, x >= target ? "met" : "missed");
    else
        snprintf(out, 32, "%.2fx f16", x);
}

/* A quantized row's notes, once every row of the device is in: its time
 * against the fp16 layer's (same shape, tokens and path), and at decode
 * the operations a weight and their rate against the op-rate roof (the
 * FMA probe's: ops counted as flops), with its time over the lower of the
 * two roofs' bound (bytes at the copy rate, operations at the op rate) as
 * the metric "of_roof". The integer path's rows: a code product a weight
 * a token at the int8 probe's rate. */
static void quant_notes(bench_rows *rows, size_t first, double best_gflops, double int8_gops)
{
    for (size_t i = first; i < rows->n; i++) {
        bench_row *r = &rows->v[i];
        ffnrt_weight_format wf;
        if (strcmp(r->group, "ffn") != 0 || ffnrt_weight_format_from_name(r->dtype, &wf) != FFNRT_OK ||
            wf < FFNRT_WEIGHT_Q8_0)
            continue;
        char vs_half[32];
        versus_f16(rows, first, r, wf, vs_half);
        if (strstr(r->path, "int8")) {
            double weights = 0;
            int64_t d, h;
            if (r->size <= 8 && sscanf(strchr(r->op, ' ') ? strchr(r->op, ' ') + 1 : "", "%" SCNd64 "x%" SCNd64, &d, &h) == 2)
                weights = 3.0 * (double)d * (double)h;
            double ops_s = int8_gops > 0 && weights > 0 ? weights * r->size / r->median_ns / int8_gops : 0;
            double bound = ops_s > r->ratio ? ops_s : r->ratio; /* the time's share the slower roof explains */
            bench_row_metric(r, "of_roof", bound);
            /* The measuring loop's note, shortened to make room for the
             * fp16 ratio. */
            double over_float = bench_row_get(r, "over_float");
            if (over_float == over_float)
                snprintf(r->note, sizeof r->note, "%.2fx the float path; %s", over_float, vs_half);
            continue;
        }
        char keep[64];
        snprintf(keep, sizeof keep, "%s", r->note);
        const char *fu = strstr(keep, "fused/unfused");
        if (r->size <= 8) {
            /* Decode: a multiply-add and the dequantization a weight a token. */
            int64_t d, h;
            ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, 1, 1);
            if (sscanf(strchr(r->op, ' ') ? strchr(r->op, ' ') + 1 : "", "%" SCNd64 "x%" SCNd64, &d, &h) != 2)
                continue;
            desc.d_model = d, desc.hidden = h;
            desc.format_in = desc.format_value = desc.format_out = wf;
            ffnrt_ffn_cost cost;
            ffnrt_ffn_cost_of(&desc, (int64_t)r->size, FFNRT_FFN_PATH_FUSED, &cost);
            double weights = (double)(cost.parameters), ops = 2.0 * r->size + (wf == FFNRT_WEIGHT_Q8_0 || wf == FFNRT_WEIGHT_Q6_K ? 2 : 3);
            double roof = best_gflops > 0 ? weights * ops / r->median_ns / best_gflops : 0;
            bench_row_metric(r, "of_roof", roof > r->ratio ? roof : r->ratio);
            snprintf(r->note, sizeof r->note, "%s; %.0f op/w %.2f of roof%s%.20s", vs_half, ops, roof, fu ? "; " : "",
                     fu ? fu + 8 : "");
        } else {
            snprintf(r->note, sizeof r->note, "%.23s; %.38s", vs_half, keep);
        }
    }
}

/* CLBlast's SGEMM of the first projection of each fp32 prefill workload,
 * on the same OpenCL device; one peer row per FFN row it stands beside. */
static void clblast_rows(const bench_device *dev, const bench_config *cfg, size_t first, bench_rows *rows,
                         double gemm_gflops)
{
    size_t end = rows->n;
    for (size_t i = first; i < end; i++) {
        bench_row ffn = rows->v[i]; /* a copy: pushing may move the array */
        if (strcmp(ffn.group, "ffn") != 0 || strcmp(ffn.dtype, "f32") != 0 || strcmp(ffn.path, "fused") != 0 ||
            ffn.size <= 8)
            continue;
        const ffn_workload *w = NULL;
        for (size_t k = 0; k < sizeof workloads / sizeof workloads[0] && !w; k++) {
            char name[40];
            snprintf(name, sizeof name, "%s %lldx%lld", workloads[k].name, (long long)workloads[k].d_model,
                     (long long)workloads[k].hidden);
            if (strcmp(name, ffn.op) == 0)
                w = &workloads[k];
        }
        if (!w)
            continue;
        int64_t m = (int64_t)ffn.size, n_out = w->kind == FFNRT_FFN_GATED ? 2 * w->hidden : w->hidden;
        double t[64];
        int runs = 0;
        char why[160];
        bench_row probe = {0};
        bench_row_device(&probe, dev, "peer");
        BENCH_SET(probe.op, "clblast-sgemm");
        bench_progress(&probe);
        if (peer_clblast_sgemm(dev->info.name, m, n_out, w->d_model, cfg->max_runs, t, &runs, why, sizeof why) != 0) {
            char peer[160];
            snprintf(peer, sizeof peer, "clblast: %.140s", why);
            bench_meta_add_peer(dev->meta, peer);
            return;
        }
        bench_meta_add_peer(dev->meta, "clblast: ok (SGEMM of each fp32 prefill row's first projection, OpenCL)");
        bench_row *r = bench_rows_push(rows);
        if (!r)
            return;
        *r = probe;
        snprintf(r->op, sizeof r->op, "clblast-sgemm %lldx%lld", (long long)w->d_model, (long long)n_out);
        BENCH_SET(r->dir, "fwd");
        BENCH_SET(r->dtype, "f32");
        BENCH_SET(r->shape, ffn.shape);
        r->size = ffn.size;
        double host[64];
        memcpy(host, t, sizeof(double) * (size_t)runs);
        bench_row_times(r, t, host, runs);
        r->host_ns = 0; /* CLBlast's own call; only its device time is known */
        r->rate = 2.0 * (double)m * (double)n_out * (double)w->d_model / r->median_ns;
        BENCH_SET(r->rate_unit, "GFLOP/s");
        r->ratio = gemm_gflops > 0 ? r->rate / gemm_gflops : 0;
        BENCH_SET(r->ratio_to, "gemm");
        double ffn_gflops = 0;
        sscanf(ffn.note, "%lf", &ffn_gflops);
        snprintf(r->note, sizeof r->note, "ffnrt's whole block %.2fx its GFLOP/s", r->rate > 0 ? ffn_gflops / r->rate : 0);
        bench_row_done(cfg, r);
    }
}

/* Which workloads, storage types and block formats the part runs, shared
 * by the rows and the kernel estimate. */
static int workload_runs(const bench_config *cfg, const ffn_workload *w)
{
    char shape[48];
    snprintf(shape, sizeof shape, "%lldx%lld", (long long)w->d_model, (long long)w->hidden);
    return !(cfg->quick && !w->quick && w->quant != 1 && cfg->nshapes == 0) && keeps_shape(cfg, shape) &&
           bench_wants_op(cfg, w->name);
}

static const ffnrt_dtype ffn_dtypes[] = {FFNRT_DTYPE_F32, FFNRT_DTYPE_F16, FFNRT_DTYPE_BF16};

static int dtype_runs(const bench_config *cfg, ffnrt_dtype dtype)
{
    int wanted = 0;
    for (int k = 0; k < cfg->ndtypes; k++)
        wanted |= cfg->dtypes[k] == dtype;
    /* bf16 FFN rows only when --precision names it (the presets run f32 and f16). */
    return wanted && !(dtype == FFNRT_DTYPE_BF16 && !cfg->precision_given) &&
           env_keeps("FFNRT_BENCH_FFN_DTYPES", ffnrt_dtype_name(dtype));
}

/* Quantized weights: the preset's shapes, or every one --shape names. */
static int quant_runs(const bench_config *cfg, const ffn_workload *w)
{
    return cfg->nshapes ? w->kind == FFNRT_FFN_GATED : w->quant == 1 || (w->quant == 2 && !cfg->quick);
}

/* Elements a block of format f holds along k (0: not a format). */
static uint32_t block_elements(ffnrt_weight_format f)
{
    uint32_t elements = 0, bytes = 0;
    return ffnrt_weight_format_block(f, &elements, &bytes) == FFNRT_OK ? elements : 0;
}

/* Whether format f's blocks divide both of the workload's widths (the
 * K-quants' 256 do not divide 1376): rows it cannot hold are not run. */
static int format_fits(const ffn_workload *w, ffnrt_weight_format f)
{
    uint32_t elements = block_elements(f);
    return elements && w->d_model % elements == 0 && w->hidden % elements == 0;
}

/* The kernels the part builds on a device, estimated: the GEMM-rate probe's
 * two, then about 3 a workload, storage type (or block format) and token
 * count: the fused path's two products, and what the unfused path and the
 * dispatcher's other candidates add (measured: 30 kernels for the quick
 * preset's 10 such rows on PoCL, 31 on lavapipe; the bench then counts
 * what the first device built for the devices after it). */
double bench_part_ffn_kernels(const bench_device *dev, const bench_config *cfg)
{
    (void)dev;
    double steps = 0;
    for (size_t wi = 0; wi < sizeof workloads / sizeof workloads[0]; wi++) {
        const ffn_workload *w = &workloads[wi];
        if (!workload_runs(cfg, w))
            continue;
        const int64_t *tokens;
        for (size_t di = 0; di < 3; di++) {
            if (!dtype_runs(cfg, ffn_dtypes[di]))
                continue;
            size_t n = token_list(cfg, FFNRT_WEIGHT_F32, &tokens);
            for (size_t i = 0; i < n; i++)
                steps += token_runs(cfg, w, FFNRT_WEIGHT_F32, tokens[i]);
        }
        for (int fi = 0; quant_runs(cfg, w) && fi < cfg->nformats; fi++) {
            if (!format_fits(w, cfg->formats[fi]))
                continue;
            size_t n = token_list(cfg, cfg->formats[fi], &tokens);
            for (size_t i = 0; i < n; i++)
                steps += token_runs(cfg, w, cfg->formats[fi], tokens[i]);
        }
    }
    return steps ? 2 + 2.8 * steps * (cfg->stats ? 1.5 : 1) : 0;
}

int bench_part_ffn(const bench_device *dev, const bench_config *cfg_in, bench_rows *rows)
{
    int any = 0;
    for (size_t wi = 0; wi < sizeof workloads / sizeof workloads[0]; wi++)
        any |= bench_wants_op(cfg_in, workloads[wi].name);
    if (!any)
        return 0;
    /* Rows are printed at the end, once the device's best GEMM rate is known. */
    bench_config quiet = *cfg_in;
    const bench_config *cfg = &quiet;
    quiet.verbose_rows = 0;
    size_t first = rows->n;
    double gemm = gemm_limit(dev, cfg, rows);
    double fma_gflops = 0, int8_gops = 0;
    bench_roofs(dev, cfg, rows, &fma_gflops, &int8_gops);
    int rc = 0;
    for (size_t wi = 0; wi < sizeof workloads / sizeof workloads[0]; wi++) {
        const ffn_workload *w = &workloads[wi];
        if (!workload_runs(cfg, w))
            continue;
        for (size_t di = 0; di < 3; di++)
            if (dtype_runs(cfg, ffn_dtypes[di]) &&
                bench_workload(dev, cfg, w, ffn_dtypes[di], FFNRT_WEIGHT_F32, gemm, rows) != 0)
                rc = -1;
        for (int fi = 0; quant_runs(cfg, w) && fi < cfg->nformats; fi++) {
            if (!format_fits(w, cfg->formats[fi])) {
                fprintf(stderr, "ffnrt bench: %s %lldx%lld: no %s rows (its blocks of %u elements do not divide "
                        "d_model and hidden)\n", w->name, (long long)w->d_model, (long long)w->hidden,
                        ffnrt_weight_format_name(cfg->formats[fi]), block_elements(cfg->formats[fi]));
                continue;
            }
            if (bench_workload(dev, cfg, w, FFNRT_DTYPE_F32, cfg->formats[fi], gemm, rows) != 0)
                rc = -1;
        }
    }
    if (dev->info.backend == FFNRT_BACKEND_OPENCL)
        clblast_rows(dev, cfg, first, rows, gemm);
    bench_peer_ggml_rows(dev, cfg, first, rows); /* ggml-vulkan or ggml-cpu beside each fused SwiGLU row */
    bench_peer_torch_rows(dev, cfg, first, rows);    /* PyTorch's CPU step beside each f32 train row */
    /* The GEMM limit is the best rate measured on the device in this run:
     * the probe, or any layer or peer that beat it (not PyTorch's, which
     * runs on the host CPU). */
    double best = 0;
    for (size_t i = first; i < rows->n; i++)
        if (strcmp(rows->v[i].rate_unit, "GFLOP/s") == 0 && strcmp(rows->v[i].op, "fma") != 0 &&
            strncmp(rows->v[i].op, "pytorch", 7) != 0 && rows->v[i].rate > best)
            best = rows->v[i].rate;
    quant_notes(rows, first, fma_gflops > best ? fma_gflops : best, int8_gops);
    for (size_t i = first; i < rows->n; i++) {
        bench_row *r = &rows->v[i];
        if (strcmp(r->ratio_to, "gemm") == 0)
            r->ratio = best > 0 ? r->rate / best : 0;
        if (cfg_in->verbose_rows)
            bench_print_row(stdout, r);
    }
    fflush(stdout);
    return rc;
}
