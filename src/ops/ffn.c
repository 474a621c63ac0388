/* FFN layers: dense and gated, fused and unfused paths, their accounting,
 * and the product kernels of shaders/gemm.kernel they launch.
 *
 * Every projection is y = x·Wᵀ on K-contiguous operands. Large weights are
 * split by output features (rows of W) into dispatches whose bindings fit
 * the device's buffer range; each binding starts at an offset rounded down
 * to the device's alignment and the kernel is told where its first element
 * lies, so no split is ever refused for alignment. */
#include "ops/ops.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MATVEC_TOKENS 8u
#define MAX_MATVEC_TOKENS 32u /* registers per work-item grow with it */
/* Element indices are 32-bit in the kernels: plan with at most 2 GiB a binding. */
#define MAX_PLANNED_RANGE (1ull << 31)

/* --------------------------------------------------------------- layers */

/* One projection: rows [w_row0, w_row0 + out) of w, and its bias from
 * element b_first (b NULL: none). Stacked gate/value weights are two
 * projections over one tensor. */
typedef struct projection {
    const ffnrt_tensor *w;
    uint64_t w_row0;
    const ffnrt_tensor *b;
    uint64_t b_first;
} projection;

/* Tile and workgroup sizes of the two product kernels, from the device's
 * limits (the dispatcher issue will tune them). */
typedef struct tiled_shape {
    uint32_t bm, bn, bk, tm, tn;
} tiled_shape;

typedef struct matvec_shape {
    uint32_t rows, lanes;
} matvec_shape;

/* The CPU kernel (BLOCKED in gemm.kernel): a TM x TN block of y per
 * work-item, WG_N x WG_M work-items a group. */
typedef struct blocked_shape {
    uint32_t tm, tn, wg_n, wg_m;
} blocked_shape;

/* The weight slots of ffnrt_ffn_weights and ffnrt_ffn_weight_tensors, in
 * their field order. */
enum slot { W_IN, B_IN, W_GATE, B_GATE, W_VALUE, B_VALUE, W_GATE_VALUE, B_GATE_VALUE, W_OUT, B_OUT, SLOT_COUNT };
static const char *const slot_names[SLOT_COUNT] = {"w_in",  "b_in",         "w_gate",       "b_gate", "w_value",
                                                   "b_value", "w_gate_value", "b_gate_value", "w_out",  "b_out"};

struct ffnrt_ffn {
    ffnrt_context *ctx;
    ffnrt_ffn_desc desc;
    projection in, gate, value, out; /* in: dense; gate and value: gated */
    ffnrt_tensor *owned[SLOT_COUNT]; /* uploaded from host arrays */
    ffnrt_tensor *h, *g, *v;         /* intermediates, [scratch_tokens, hidden] */
    uint64_t scratch_tokens;
};

/* The product kernels of gemm.kernel. */
typedef enum product_kernel { KERNEL_BLOCKED, KERNEL_MATVEC, KERNEL_TILED } product_kernel;
static const char *const kernel_names[] = {"blocked", "matvec", "tiled"};

/* What one forward runs, chosen by choose_ffn for a layer and a token
 * count; the plan shows the same choice. */
typedef struct ffn_choice {
    int unfused;
    product_kernel kernel;
    uint32_t matvec_tokens; /* MATVEC: tokens a dispatch takes */
    tiled_shape tiled;      /* TILED */
} ffn_choice;

static int is_gated(const ffnrt_ffn_desc *d) { return d->kind == FFNRT_FFN_GATED; }

static ffnrt_status check_desc(ffnrt_error *err, const ffnrt_ffn_desc *d, const char *fn)
{
    if (!d)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: desc is NULL", fn);
    if (d->kind != FFNRT_FFN_DENSE && d->kind != FFNRT_FFN_GATED)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not an FFN kind", fn, (int)d->kind);
    if (d->d_model < 1 || d->hidden < 1 || d->d_model > UINT32_MAX || d->hidden > UINT32_MAX)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: d_model %lld and hidden %lld must be in [1, 2^32)",
                          fn, (long long)d->d_model, (long long)d->hidden);
    if (ffnrt_dtype_size(d->dtype) == 0)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not a dtype", fn, (int)d->dtype);
    if (d->bias != 0 && d->bias != 1)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: bias must be 0 or 1", fn);
    if ((unsigned)d->path > FFNRT_FFN_PATH_UNFUSED || (unsigned)d->matmul > FFNRT_MATMUL_TILED)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: bad path (%d) or matmul kernel (%d)", fn,
                          (int)d->path, (int)d->matmul);
    if (d->matvec_max_tokens > MAX_MATVEC_TOKENS)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: matvec_max_tokens %u is above %u", fn,
                          d->matvec_max_tokens, MAX_MATVEC_TOKENS);
    if (is_gated(d)) {
        if ((unsigned)d->glu.kind >= FFNRT_GLU_COUNT)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not a GLU kind", fn, (int)d->glu.kind);
        if (!isfinite(d->glu.beta))
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: glu.beta must be finite", fn);
    } else {
        if ((unsigned)d->activation.kind >= FFNRT_ACT_COUNT)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not an activation", fn,
                              (int)d->activation.kind);
        if (d->activation.kind == FFNRT_ACT_PRELU)
            return ffnrt_fail(err, FFNRT_ERROR_UNSUPPORTED,
                              "%s: PReLU's learned slopes are not supported in an FFN layer", fn);
        if (!isfinite(d->activation.alpha) || !isfinite(d->activation.beta))
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: activation alpha and beta must be finite", fn);
    }
    return FFNRT_OK;
}

/* Expected shape of a slot: rows x cols, cols 0 for a 1-D bias. */
static void slot_shape(const ffnrt_ffn_desc *d, int slot, int64_t *rows, int64_t *cols)
{
    int64_t h = d->hidden, m = d->d_model;
    switch (slot) {
    case W_IN: case W_GATE: case W_VALUE: *rows = h, *cols = m; break;
    case W_GATE_VALUE: *rows = 2 * h, *cols = m; break;
    case B_GATE_VALUE: *rows = 2 * h, *cols = 0; break;
    case W_OUT: *rows = m, *cols = h; break;
    case B_OUT: *rows = m, *cols = 0; break;
    default: *rows = h, *cols = 0; break; /* b_in, b_gate, b_value */
    }
}

/* Which slots the desc needs, given the slots present (NULL or not):
 * fails naming the first slot missing or given in excess. */
static ffnrt_status check_slots(ffnrt_error *err, const ffnrt_ffn_desc *d, const void *const present[SLOT_COUNT],
                                const char *fn)
{
    int stacked = is_gated(d) && present[W_GATE_VALUE] != NULL;
    for (int s = 0; s < SLOT_COUNT; s++) {
        int bias = s == B_IN || s == B_GATE || s == B_VALUE || s == B_GATE_VALUE || s == B_OUT;
        int wanted;
        const char *why;
        if (s == W_OUT || s == B_OUT) {
            wanted = 1, why = "";
        } else if (!is_gated(d)) {
            wanted = s == W_IN || s == B_IN, why = "a dense layer has only w_in, w_out and their biases";
        } else if (s == W_IN || s == B_IN) {
            wanted = 0, why = "a gated layer has gate and value weights, not w_in";
        } else {
            wanted = stacked == (s == W_GATE_VALUE || s == B_GATE_VALUE);
            why = "give w_gate and w_value, or w_gate_value stacked, not both";
        }
        if (bias && wanted && !d->bias) {
            wanted = 0, why = "desc.bias is 0";
        }
        if (wanted && !present[s])
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: weights.%s is NULL%s", fn, slot_names[s],
                              bias ? " (desc.bias is 1)" : "");
        if (!wanted && present[s])
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: weights.%s must be NULL: %s", fn,
                              slot_names[s], why);
    }
    return FFNRT_OK;
}

static ffnrt_status check_weight(ffnrt_context *ctx, const ffnrt_ffn_desc *d, const ffnrt_tensor *t, int slot,
                                 const char *fn)
{
    char name[32];
    snprintf(name, sizeof name, "weights.%s", slot_names[slot]);
    ffnrt_status st = ffnrt_check_tensor(ctx, t, fn, name);
    if (st != FFNRT_OK)
        return st;
    if (t->dtype != d->dtype)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_DTYPE_MISMATCH, "%s: %s is %s, the layer is %s", fn, name,
                          ffnrt_dtype_name(t->dtype), ffnrt_dtype_name(d->dtype));
    int64_t rows, cols;
    slot_shape(d, slot, &rows, &cols);
    int ok = cols ? t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols : t->ndim == 1 && t->shape[0] == rows;
    if (!ok) {
        char got[64] = "";
        for (size_t i = 0; i < t->ndim && i < 4; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", i ? ", " : "", (long long)t->shape[i]);
        if (cols)
            return ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH,
                              "%s: %s is [%s], expected [%lld, %lld] ([out, in] as nn.Linear)", fn, name, got,
                              (long long)rows, (long long)cols);
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH, "%s: %s is [%s], expected [%lld]", fn, name,
                          got, (long long)rows);
    }
    return FFNRT_OK;
}

static int tiled_fits(const ffnrt_context *ctx, tiled_shape t, uint64_t shared)
{
    uint64_t wg = (uint64_t)(t.bm / t.tm) * (t.bn / t.tn);
    if (wg == 2 && (ctx->vetoes & FFNRT_QUIRK_TWO_ITEM_TILES))
        return 0; /* the quirk table: the driver's compiler aborts on it */
    uint64_t staged = (uint64_t)t.bk * ((t.bm + 1) + 2 * (t.bn + 1)); /* gated: two W slices */
    uint64_t floats = staged > (uint64_t)t.bm * t.bn ? staged : (uint64_t)t.bm * t.bn;
    return wg <= ctx->limits.max_workgroup_size && 4 * floats <= shared;
}

/* Largest tiles within the device's workgroup size and shared memory,
 * from a start that suits GPUs (64 x 64 x 16, 4 x 4 a work-item, 256
 * work-items), halved until they fit. FFNRT_GEMM_TILES="bm,bn,bk,tm,tn"
 * forces them: an error if they do not fit. */
static ffnrt_status choose_tiled(ffnrt_context *ctx, tiled_shape *out, ffnrt_plan *plan)
{
    tiled_shape t = {64, 64, 16, 4, 4};
    uint64_t shared = ctx->info.shared_memory_size ? ctx->info.shared_memory_size : 16384;
    const char *env = ffnrt_context_forced(ctx, "FFNRT_GEMM_TILES");
    if (env && *env) {
        if (sscanf(env, "%u,%u,%u,%u,%u", &t.bm, &t.bn, &t.bk, &t.tm, &t.tn) != 5 || !t.tm || !t.tn || !t.bk ||
            t.bm % t.tm || t.bn % t.tn)
            return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT,
                              "FFNRT_GEMM_TILES=%s: expected bm,bn,bk,tm,tn with tm | bm and tn | bn", env);
        if (!tiled_fits(ctx, t, shared))
            return ffnrt_fail(&ctx->error, FFNRT_ERROR_LIMIT_EXCEEDED,
                              "FFNRT_GEMM_TILES=%s does not fit %s: %u work-items (limit %u%s) or its staged slices "
                              "in %llu bytes of shared memory",
                              env, ctx->info.name, (t.bm / t.tm) * (t.bn / t.tn), ctx->limits.max_workgroup_size,
                              ctx->vetoes & FFNRT_QUIRK_TWO_ITEM_TILES ? ", and not 2: see the plan's quirks" : "",
                              (unsigned long long)shared);
        *out = t;
        ffnrt_plan_add(plan, "ffn.tiles", env, "forced by FFNRT_GEMM_TILES (bm,bn,bk,tm,tn)");
        return FFNRT_OK;
    }
    int halved = 0;
    while (!tiled_fits(ctx, t, shared)) {
        uint64_t staged = (uint64_t)t.bk * ((t.bm + 1) + 2 * (t.bn + 1));
        uint64_t floats = staged > (uint64_t)t.bm * t.bn ? staged : (uint64_t)t.bm * t.bn;
        halved++;
        if (4 * floats > shared && t.bk > 4)
            t.bk /= 2;
        else if (t.bm >= t.bn && t.bm > 1)
            t.bm /= 2, t.tm = t.tm > t.bm ? t.bm : t.tm;
        else if (t.bn > 1)
            t.bn /= 2, t.tn = t.tn > t.bn ? t.bn : t.tn;
        else
            break; /* 1 x 1: always fits */
    }
    *out = t;
    char choice[96];
    snprintf(choice, sizeof choice, "%ux%u tile, k-slice %u, %ux%u a work-item, %u work-items", t.bm, t.bn, t.bk,
             t.tm, t.tn, (t.bm / t.tm) * (t.bn / t.tn));
    ffnrt_plan_add(plan, "ffn.tiles", choice, "%s (%u work-items allowed, %llu B shared memory)",
                   halved ? "halved from 64x64x16 until the staged slices and the workgroup fit"
                          : "the 64x64x16 start fits",
                   ctx->limits.max_workgroup_size, (unsigned long long)shared);
    return FFNRT_OK;
}

static uint64_t matvec_smem_floats(matvec_shape s, uint32_t tokens)
{
    return (uint64_t)tokens * s.rows * (2ull * s.lanes + 1); /* gated partials, then the output tile */
}

/* Lanes along K: one subgroup per row where the device reports its size
 * (its reads are contiguous, and few lanes mean few reduction steps, whose
 * barriers are costly on CPU drivers), else 4; 256 work-items, halved to
 * fit. Measured here: lavapipe (subgroup 8) 32 x 8 is 2.5x faster than
 * 4 x 64; PoCL 64 x 4 is 1.6x faster. Lanes stay a power of two. */
static ffnrt_status choose_matvec(ffnrt_context *ctx, uint32_t tokens, matvec_shape *out)
{
    uint32_t sub = ctx->info.subgroup_size;
    uint32_t lanes = sub >= 2 && sub <= 64 && (sub & (sub - 1)) == 0 ? sub : 4;
    matvec_shape s = {256 / lanes, lanes};
    uint64_t shared = ctx->info.shared_memory_size ? ctx->info.shared_memory_size : 16384;
    /* FFNRT_GEMV_SHAPE="rows,lanes" forces it (for tuning): an error if it does not fit. */
    const char *env = ffnrt_context_forced(ctx, "FFNRT_GEMV_SHAPE");
    if (env && *env) {
        if (sscanf(env, "%u,%u", &s.rows, &s.lanes) != 2 || !s.rows || !s.lanes || (s.lanes & (s.lanes - 1)))
            return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT,
                              "FFNRT_GEMV_SHAPE=%s: expected rows,lanes with lanes a power of two", env);
        if ((uint64_t)s.rows * s.lanes > ctx->limits.max_workgroup_size || 4 * matvec_smem_floats(s, tokens) > shared)
            return ffnrt_fail(&ctx->error, FFNRT_ERROR_LIMIT_EXCEEDED,
                              "FFNRT_GEMV_SHAPE=%s does not fit %s (%u work-items, %llu B shared memory)", env,
                              ctx->info.name, ctx->limits.max_workgroup_size, (unsigned long long)shared);
        *out = s;
        return FFNRT_OK;
    }
    while ((uint64_t)s.rows * s.lanes > ctx->limits.max_workgroup_size ||
           4 * matvec_smem_floats(s, tokens) > shared) {
        if (s.rows > 1)
            s.rows /= 2;
        else if (s.lanes > 1)
            s.lanes /= 2;
        else
            break;
    }
    *out = s;
    return FFNRT_OK;
}

/* Which product kernel: the register-blocked one on CPUs, where shared
 * memory is ordinary memory and barriers cost (llvmpipe runs them as
 * coroutine switches); on GPUs the lane-reduced matrix-vector kernel up to
 * matvec_tokens tokens (it streams W once) and the shared-memory tiled one
 * above. Forced by desc.matmul or FFNRT_GEMM_KERNEL=blocked|matvec|tiled. */
static ffnrt_status choose_kernel(ffnrt_context *ctx, const ffnrt_ffn_desc *d, uint64_t tokens, ffn_choice *c,
                                  int tuned, const char *tuned_why, ffnrt_plan *plan)
{
    const char *env = ffnrt_context_forced(ctx, "FFNRT_GEMM_KERNEL");
    c->matvec_tokens = d->matvec_max_tokens ? d->matvec_max_tokens : DEFAULT_MATVEC_TOKENS;
    if (env && *env) {
        int found = 0;
        for (int k = 0; k < 3; k++)
            if (strcmp(env, kernel_names[k]) == 0)
                c->kernel = (product_kernel)k, found = 1;
        if (!found)
            return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT,
                              "FFNRT_GEMM_KERNEL=%s: expected blocked, matvec or tiled", env);
        ffnrt_plan_add(plan, "ffn.kernel", kernel_names[c->kernel], "forced by FFNRT_GEMM_KERNEL");
    } else if (d->matmul != FFNRT_MATMUL_AUTO) {
        c->kernel = d->matmul == FFNRT_MATMUL_MATVEC ? KERNEL_MATVEC : KERNEL_TILED;
        ffnrt_plan_add(plan, "ffn.kernel", kernel_names[c->kernel], "forced by desc.matmul%s",
                       c->kernel == KERNEL_MATVEC && tokens > c->matvec_tokens ? " (tokens run in chunks)" : "");
    } else if (tuned >= 0) {
        c->kernel = (product_kernel)(tuned % 4);
        ffnrt_plan_add(plan, "ffn.kernel", kernel_names[c->kernel], "%s", tuned_why);
    } else if (ctx->info.type == FFNRT_DEVICE_TYPE_CPU) {
        c->kernel = KERNEL_BLOCKED;
        ffnrt_plan_add(plan, "ffn.kernel", "blocked",
                       "a CPU device: register blocks over the whole of K, no shared memory or barriers "
                       "(shared memory is ordinary memory there and barriers cost)");
    } else if (ctx->calibration.valid && ctx->calibration.copy_gbps > 0 && ctx->calibration.gemm_gflops > 0) {
        /* The cost model: matvec streams the weights once per chunk of
         * matvec_tokens tokens; tiled is bound by the GEMM rate or by one
         * pass over the weights, whichever is slower. */
        ffnrt_ffn_cost cost;
        ffnrt_ffn_cost_of(d, (int64_t)tokens, FFNRT_FFN_PATH_FUSED, &cost);
        double chunks = (double)((tokens + c->matvec_tokens - 1) / c->matvec_tokens);
        double stream_ms = 1e3 * (double)cost.weight_bytes / (1e9 * ctx->calibration.copy_gbps);
        double compute_ms = 1e3 * (double)cost.flops / (1e9 * ctx->calibration.gemm_gflops);
        double mv_ms = chunks * stream_ms, tiled_ms = compute_ms > stream_ms ? compute_ms : stream_ms;
        c->kernel = mv_ms <= tiled_ms ? KERNEL_MATVEC : KERNEL_TILED;
        ffnrt_plan_add(plan, "ffn.kernel", kernel_names[c->kernel],
                       "cost model from this device's calibration (%.1f GB/s, %.1f GFLOP/s): matvec %.3f ms "
                       "(%.0f pass%s over the weights), tiled %.3f ms",
                       ctx->calibration.copy_gbps, ctx->calibration.gemm_gflops, mv_ms, chunks,
                       chunks == 1 ? "" : "es", tiled_ms);
    } else if (tokens <= c->matvec_tokens) {
        c->kernel = KERNEL_MATVEC;
        ffnrt_plan_add(plan, "ffn.kernel", "matvec",
                       "%llu tokens <= %u (matvec_max_tokens): bandwidth-bound, the weights are streamed once "
                       "(no calibration yet: ffnrt_context_calibrate gives the cost model)",
                       (unsigned long long)tokens, c->matvec_tokens);
    } else {
        c->kernel = KERNEL_TILED;
        ffnrt_plan_add(plan, "ffn.kernel", "tiled", "%llu tokens > %u (matvec_max_tokens): compute-bound, "
                       "shared-memory tiles reuse each weight across tokens (no calibration yet)",
                       (unsigned long long)tokens, c->matvec_tokens);
    }
    return FFNRT_OK;
}

/* BLOCKED shape for m rows of x and n outputs. What bounds it differs by
 * driver (measured on 2 cores, fp32, 512 tokens):
 *  - PoCL runs each work-item's float4 code as is (SSE/AVX): registers
 *    bound the block. 4 x 6 (gated 4 x 3: two products) fills the 32
 *    vector registers: 74 GFLOP/s against 62 for 4 x 4 and 55 for 4 x 2.
 *  - llvmpipe (Vulkan) loads every element lane by lane while arithmetic
 *    is 8 lanes wide, so loads per multiply-add bound it and the biggest
 *    block wins even with spills: 16 x 16 (gated 16 x 8) reach 20-22
 *    GFLOP/s against 9 for 4 x 4.
 * TM takes every row up to that (decode reads W once), TN 4 for decode.
 * Groups of 64 work-items (llvmpipe: 16 for decode, 8 x 2), narrowed while
 * that leaves fewer than 16 groups so every core gets work; then fitted to
 * the workgroup size and, for 16-bit outputs staged in shared memory, its
 * size. */
static blocked_shape choose_blocked_shape(const ffnrt_context *ctx, uint64_t m, uint64_t n, int gated, int staged)
{
    int lanes = ctx->info.backend == FFNRT_BACKEND_VULKAN; /* llvmpipe's model */
    uint32_t tm_max = lanes ? 16 : 4;
    blocked_shape b;
    b.tm = m < tm_max ? (uint32_t)m : tm_max;
    if (m <= 4)
        b.tn = 4, b.wg_n = lanes ? 16 : 64, b.wg_m = 1;
    else if (lanes)
        b.tn = gated ? 8 : 16, b.wg_n = 8, b.wg_m = 2;
    else
        b.tn = gated ? 3 : 6, b.wg_n = 16, b.wg_m = 4;
    /* FFNRT_GEMM_BLOCK="tm,tn,wg_n,wg_m" overrides the start (for tuning). */
    const char *env = ffnrt_context_forced(ctx, "FFNRT_GEMM_BLOCK");
    blocked_shape e;
    if (env && sscanf(env, "%u,%u,%u,%u", &e.tm, &e.tn, &e.wg_n, &e.wg_m) == 4 && e.tm && e.tn && e.wg_n && e.wg_m &&
        e.tm <= 16 && e.tn <= 16)
        b = e;
    while (b.wg_n > 1 && (n + (uint64_t)b.wg_n * b.tn - 1) / ((uint64_t)b.wg_n * b.tn) *
                                 ((m + (uint64_t)b.wg_m * b.tm - 1) / ((uint64_t)b.wg_m * b.tm)) < 16)
        b.wg_n /= 2;
    while (b.wg_m > 1 && (m + (uint64_t)b.wg_m * b.tm - 1) / ((uint64_t)b.wg_m * b.tm) < 2 && b.wg_n * b.wg_m > 8)
        b.wg_m /= 2;
    uint64_t shared = ctx->info.shared_memory_size ? ctx->info.shared_memory_size : 16384;
    while ((uint64_t)b.wg_n * b.wg_m > ctx->limits.max_workgroup_size ||
           (staged && 4ull * b.wg_n * b.tn * b.wg_m * b.tm > shared)) {
        if (b.wg_m > 1)
            b.wg_m /= 2;
        else if (b.wg_n > 1)
            b.wg_n /= 2;
        else if (b.tn > 1)
            b.tn /= 2;
        else if (b.tm > 1)
            b.tm /= 2;
        else
            break;
    }
    return b;
}

static void destroy_scratch(ffnrt_ffn *l)
{
    ffnrt_tensor_destroy(l->h);
    ffnrt_tensor_destroy(l->g);
    ffnrt_tensor_destroy(l->v);
    l->h = l->g = l->v = NULL;
    l->scratch_tokens = 0;
}

void ffnrt_ffn_destroy(ffnrt_ffn *layer)
{
    if (!layer)
        return;
    destroy_scratch(layer);
    for (int s = 0; s < SLOT_COUNT; s++)
        ffnrt_tensor_destroy(layer->owned[s]);
    free(layer);
}

/* Checks the tensors and builds the layer over them (not owned). */
static ffnrt_status create_layer(ffnrt_context *ctx, const ffnrt_ffn_desc *desc, const ffnrt_tensor *const t[SLOT_COUNT],
                                 const char *fn, ffnrt_ffn **out)
{
    ffnrt_status st = check_slots(&ctx->error, desc, (const void *const *)t, fn);
    for (int s = 0; s < SLOT_COUNT && st == FFNRT_OK; s++)
        if (t[s])
            st = check_weight(ctx, desc, t[s], s, fn);
    if (st != FFNRT_OK)
        return st;
    ffnrt_ffn *l = calloc(1, sizeof *l);
    if (!l)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    l->ctx = ctx;
    l->desc = *desc;
    l->desc.activation.slopes = NULL;
    uint64_t h = (uint64_t)desc->hidden;
    l->in = (projection){t[W_IN], 0, t[B_IN], 0};
    if (t[W_GATE_VALUE]) {
        l->gate = (projection){t[W_GATE_VALUE], 0, t[B_GATE_VALUE], 0};
        l->value = (projection){t[W_GATE_VALUE], h, t[B_GATE_VALUE], h};
    } else {
        l->gate = (projection){t[W_GATE], 0, t[B_GATE], 0};
        l->value = (projection){t[W_VALUE], 0, t[B_VALUE], 0};
    }
    l->out = (projection){t[W_OUT], 0, t[B_OUT], 0};
    *out = l;
    return FFNRT_OK;
}

ffnrt_status ffnrt_ffn_create_from_tensors(ffnrt_context *ctx, const ffnrt_ffn_desc *desc,
                                           const ffnrt_ffn_weight_tensors *weights, ffnrt_ffn **out)
{
    static const char fn[] = "ffnrt_ffn_create_from_tensors";
    if (!ctx)
        return ffnrt_null_context(fn);
    if (out)
        *out = NULL;
    ffnrt_status st = check_desc(&ctx->error, desc, fn);
    if (st == FFNRT_OK && (!weights || !out))
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, weights ? "out" : "weights");
    if (st == FFNRT_OK) {
        const ffnrt_tensor *t[SLOT_COUNT] = {weights->w_in,         weights->b_in,         weights->w_gate,
                                             weights->b_gate,       weights->w_value,      weights->b_value,
                                             weights->w_gate_value, weights->b_gate_value, weights->w_out,
                                             weights->b_out};
        st = create_layer(ctx, desc, t, fn, out);
    }
    return ffnrt_context_finish_call(ctx, st);
}

ffnrt_status ffnrt_ffn_create(ffnrt_context *ctx, const ffnrt_ffn_desc *desc, const ffnrt_ffn_weights *weights,
                              ffnrt_ffn **out)
{
    static const char fn[] = "ffnrt_ffn_create";
    if (!ctx)
        return ffnrt_null_context(fn);
    if (out)
        *out = NULL;
    ffnrt_status st = check_desc(&ctx->error, desc, fn);
    if (st == FFNRT_OK && (!weights || !out))
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, weights ? "out" : "weights");
    const void *host[SLOT_COUNT] = {0};
    if (st == FFNRT_OK) {
        const void *h[SLOT_COUNT] = {weights->w_in,         weights->b_in,         weights->w_gate,
                                     weights->b_gate,       weights->w_value,      weights->b_value,
                                     weights->w_gate_value, weights->b_gate_value, weights->w_out,
                                     weights->b_out};
        memcpy(host, h, sizeof host);
        st = check_slots(&ctx->error, desc, host, fn);
    }
    /* Upload every given array into a tensor of its slot's shape. */
    ffnrt_tensor *t[SLOT_COUNT] = {0};
    for (int s = 0; s < SLOT_COUNT && st == FFNRT_OK; s++) {
        if (!host[s])
            continue;
        int64_t shape[2];
        slot_shape(desc, s, &shape[0], &shape[1]);
        st = ffnrt_tensor_create(ctx, desc->dtype, shape[1] ? 2 : 1, shape, &t[s]);
        if (st == FFNRT_OK)
            st = ffnrt_tensor_write(t[s], host[s], t[s]->bytes);
    }
    if (st == FFNRT_OK)
        st = create_layer(ctx, desc, (const ffnrt_tensor *const *)t, fn, out);
    if (st == FFNRT_OK)
        memcpy((*out)->owned, t, sizeof t);
    else
        for (int s = 0; s < SLOT_COUNT; s++)
            ffnrt_tensor_destroy(t[s]);
    return ffnrt_context_finish_call(ctx, st);
}

/* ------------------------------------------------------------- products */

/* y[m, n] = epilogue(sum_k x[m, k] · W[n, k]) for an m x k slice of x and
 * the n output features of one (or, gated, two) projections; y's row
 * stride is n. */
typedef struct product {
    const ffnrt_tensor *x;
    uint64_t m, k;
    projection w, wv; /* wv.w non-NULL: gated */
    uint64_t n;
    ffnrt_tensor *y;
    ffnrt_activation act; /* FFNRT_ACT_COUNT: none */
    float alpha, beta;
    /* What the kernel build needs, set by make_product (a plan has no tensors). */
    ffnrt_dtype dtype;
    int gated, bias;
} product;

typedef struct product_params {
    uint32_t m, n, k, x_base, w_base, wv_base, y_base, ldy, bias_base, bv_base;
    float alpha, beta;
} product_params;

/* A binding of `count` elements of t from element `first`: the offset is
 * rounded down to the device's alignment and *base is where `first` lies. */
static ffnrt_binding bind_elements(const ffnrt_context *ctx, const ffnrt_tensor *t, uint64_t first, uint64_t count,
                                   uint32_t *base)
{
    uint64_t esize = ffnrt_dtype_size(t->dtype);
    uint64_t align = ctx->limits.buffer_offset_alignment < 4 ? 4 : ctx->limits.buffer_offset_alignment;
    uint64_t start = first * esize;
    uint64_t offset = start / align * align;
    uint64_t end = ((first + count) * esize + 3) & ~(uint64_t)3; /* whole words; buffers are padded to them */
    *base = (uint32_t)((start - offset) / esize);
    return (ffnrt_binding){t->buffer, t->offset + offset, end - offset};
}

static void append(char *buf, size_t cap, const char *fmt, unsigned v)
{
    size_t len = strlen(buf);
    snprintf(buf + len, cap - len, fmt, v);
}

static const char *storage_define(ffnrt_dtype dtype)
{
    switch (dtype) {
    case FFNRT_DTYPE_F16: return "#define STORAGE_F16 1\n";
    case FFNRT_DTYPE_BF16: return "#define STORAGE_BF16 1\n";
    default: return "#define STORAGE_F32 1\n";
    }
}

/* Records the dispatches of one product into the open batch; or, with
 * plan non-NULL, only says what they would be (shapes, kernel, splits),
 * dispatching nothing: the plan and the run share this code. */
static ffnrt_status record_product(ffnrt_context *ctx, const ffn_choice *c, const product *pr, ffnrt_plan *plan,
                                   const char *name)
{
    const ffnrt_limits *lim = &ctx->limits;
    int gated = pr->gated, bias = pr->bias;
    int blocked = c->kernel == KERNEL_BLOCKED, matvec = c->kernel == KERNEL_MATVEC;
    uint32_t tokens = 0;
    matvec_shape mv = {0, 0};
    tiled_shape tl = c->tiled;
    char defines[512] = "";
    char shape_text[160] = "";
    snprintf(defines, sizeof defines, "%s", storage_define(pr->dtype));
    if (pr->act == FFNRT_ACT_COUNT) {
        append(defines, sizeof defines, "#define ACT_NONE %u\n", 1);
    } else {
        char name[32];
        snprintf(name, sizeof name, "%s", ffnrt_activation_name(pr->act));
        for (char *c = name; *c; c++)
            *c = (char)toupper((unsigned char)*c);
        size_t len = strlen(defines);
        snprintf(defines + len, sizeof defines - len, "#define ACT_%s 1\n", name);
    }
    if (gated)
        append(defines, sizeof defines, "#define GATED %u\n", 1);
    if (bias)
        append(defines, sizeof defines, "#define BIAS %u\n", 1);
    uint64_t smem_floats, wg;
    uint64_t esize = ffnrt_dtype_size(pr->dtype);
    uint64_t align = lim->buffer_offset_alignment < 4 ? 4 : lim->buffer_offset_alignment;
    blocked_shape bs = {0, 0, 0, 0};
    if (blocked) {
        /* One kernel for decode and prefill: the shape follows the rows. */
        bs = choose_blocked_shape(ctx, pr->m, pr->n, gated, esize != 4);
        /* Element offsets of x and W rows stay multiples of 4 (fp32: 16-byte
         * binding offsets) or 2 (16-bit words) when K is. */
        int aligned = esize == 4 ? pr->k % 4 == 0 && align % 16 == 0 : pr->k % 2 == 0 && align % 4 == 0;
        smem_floats = esize == 4 ? 1 : (uint64_t)bs.wg_n * bs.tn * bs.wg_m * bs.tm;
        wg = (uint64_t)bs.wg_n * bs.wg_m;
        append(defines, sizeof defines, "#define BLOCKED %u\n", 1);
        if (aligned)
            append(defines, sizeof defines, "#define ALIGNED4 %u\n", 1);
        append(defines, sizeof defines, "#define TM %uu\n", bs.tm);
        append(defines, sizeof defines, "#define TN %uu\n", bs.tn);
        append(defines, sizeof defines, "#define WG_N %uu\n", bs.wg_n);
        append(defines, sizeof defines, "#define WG_M %uu\n", bs.wg_m);
        snprintf(shape_text, sizeof shape_text, "blocked: %ux%u a work-item, %ux%u work-items%s", bs.tm, bs.tn,
                 bs.wg_n, bs.wg_m, aligned ? ", vector loads" : "");
    } else if (matvec) {
        tokens = (uint32_t)(pr->m < c->matvec_tokens ? pr->m : c->matvec_tokens);
        ffnrt_status mst = choose_matvec(ctx, tokens, &mv);
        if (mst != FFNRT_OK)
            return mst;
        smem_floats = matvec_smem_floats(mv, tokens);
        wg = (uint64_t)mv.rows * mv.lanes;
        append(defines, sizeof defines, "#define GEMV %u\n", 1);
        append(defines, sizeof defines, "#define TOKENS %uu\n", tokens);
        append(defines, sizeof defines, "#define GEMV_ROWS %uu\n", mv.rows);
        append(defines, sizeof defines, "#define GEMV_LANES %uu\n", mv.lanes);
        snprintf(shape_text, sizeof shape_text, "matvec: %u rows x %u lanes a group, %u tokens a dispatch", mv.rows,
                 mv.lanes, tokens);
    } else {
        uint64_t staged = (uint64_t)tl.bk * ((tl.bm + 1) + 2 * (tl.bn + 1));
        smem_floats = staged > (uint64_t)tl.bm * tl.bn ? staged : (uint64_t)tl.bm * tl.bn;
        wg = (uint64_t)(tl.bm / tl.tm) * (tl.bn / tl.tn);
        append(defines, sizeof defines, "#define BM %uu\n", tl.bm);
        append(defines, sizeof defines, "#define BN %uu\n", tl.bn);
        append(defines, sizeof defines, "#define BK %uu\n", tl.bk);
        append(defines, sizeof defines, "#define TM %uu\n", tl.tm);
        append(defines, sizeof defines, "#define TN %uu\n", tl.tn);
        snprintf(shape_text, sizeof shape_text, "tiled: %ux%ux%u, %ux%u a work-item", tl.bm, tl.bn, tl.bk, tl.tm,
                 tl.tn);
    }
    append(defines, sizeof defines, "#define SMEM_FLOATS %uu", (unsigned)smem_floats);
    uint32_t buffers = 3 + (uint32_t)gated + (uint32_t)bias * (1 + (uint32_t)gated);
    ffnrt_bkernel *kernel = NULL;
    ffnrt_status st = FFNRT_OK;
    if (!plan)
        st = ffnrt_context_kernel(ctx, "gemm.kernel", "ffnrt_gemm", defines, buffers, sizeof(product_params),
                                  (uint32_t)wg, &kernel);
    if (st != FFNRT_OK)
        return st;

    /* Chunks: W rows (output features) and x rows (tokens) such that every
     * binding fits the buffer range (less the alignment slack) and the
     * workgroups fit the grid. */
    uint64_t range = lim->max_buffer_range < MAX_PLANNED_RANGE ? lim->max_buffer_range : MAX_PLANNED_RANGE;
    uint64_t usable = range > align + 4 ? (range - align - 4) / esize : 0; /* elements a binding may span */
    uint64_t n_per_group = blocked ? (uint64_t)bs.wg_n * bs.tn : matvec ? mv.rows : tl.bn;
    uint64_t m_per_group = blocked ? (uint64_t)bs.wg_m * bs.tm : tl.bm;
    uint64_t n_chunk = pr->k ? usable / pr->k : 0;
    if (n_chunk > (uint64_t)lim->max_workgroup_count[0] * n_per_group)
        n_chunk = (uint64_t)lim->max_workgroup_count[0] * n_per_group;
    if (n_chunk > pr->n)
        n_chunk = pr->n;
    uint64_t m_chunk = n_chunk ? usable / pr->k : 0;
    uint64_t y_rows = n_chunk && usable >= n_chunk ? (usable - n_chunk) / pr->n + 1 : 0;
    if (m_chunk > y_rows)
        m_chunk = y_rows;
    uint64_t m_cap = matvec ? tokens : (uint64_t)lim->max_workgroup_count[1] * m_per_group;
    if (m_chunk > m_cap)
        m_chunk = m_cap;
    if (n_chunk == 0 || m_chunk == 0)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_LIMIT_EXCEEDED,
                          "an FFN row of %llu %s elements does not fit the device's buffer range of %llu bytes",
                          (unsigned long long)(pr->k > pr->n ? pr->k : pr->n), ffnrt_dtype_name(pr->dtype),
                          (unsigned long long)lim->max_buffer_range);
    if (plan) {
        uint64_t splits_m = (pr->m + m_chunk - 1) / m_chunk, splits_n = (pr->n + n_chunk - 1) / n_chunk;
        char what[64], choice[256];
        snprintf(what, sizeof what, "ffn.%s", name);
        snprintf(choice, sizeof choice, "%s; %llu dispatch%s", shape_text,
                 (unsigned long long)(splits_m * splits_n), splits_m * splits_n > 1 ? "es" : "");
        ffnrt_plan_add(plan, what, choice,
                       "[%llu x %llu] x [%llu x %llu]^T%s%s; a dispatch takes at most %llu output features and %llu "
                       "tokens: bindings within the %llu B buffer range, groups within %u a dimension",
                       (unsigned long long)pr->m, (unsigned long long)pr->k, (unsigned long long)pr->n,
                       (unsigned long long)pr->k, gated ? ", gate and value in one kernel" : "",
                       bias ? ", bias in the epilogue" : "", (unsigned long long)n_chunk, (unsigned long long)m_chunk,
                       (unsigned long long)lim->max_buffer_range, lim->max_workgroup_count[0]);
        return FFNRT_OK;
    }

    for (uint64_t m0 = 0; m0 < pr->m && st == FFNRT_OK; m0 += m_chunk) {
        uint64_t mc = pr->m - m0 < m_chunk ? pr->m - m0 : m_chunk;
        for (uint64_t n0 = 0; n0 < pr->n && st == FFNRT_OK; n0 += n_chunk) {
            uint64_t nc = pr->n - n0 < n_chunk ? pr->n - n0 : n_chunk;
            product_params p = {(uint32_t)mc, (uint32_t)nc, (uint32_t)pr->k, 0, 0, 0, 0, (uint32_t)pr->n, 0, 0,
                                pr->alpha, pr->beta};
            ffnrt_binding b[6];
            uint32_t nb = 0;
            b[nb++] = bind_elements(ctx, pr->x, m0 * pr->k, mc * pr->k, &p.x_base);
            b[nb++] = bind_elements(ctx, pr->w.w, (pr->w.w_row0 + n0) * pr->k, nc * pr->k, &p.w_base);
            b[nb++] = bind_elements(ctx, pr->y, m0 * pr->n + n0, (mc - 1) * pr->n + nc, &p.y_base);
            if (gated)
                b[nb++] = bind_elements(ctx, pr->wv.w, (pr->wv.w_row0 + n0) * pr->k, nc * pr->k, &p.wv_base);
            if (bias)
                b[nb++] = bind_elements(ctx, pr->w.b, pr->w.b_first + n0, nc, &p.bias_base);
            if (bias && gated)
                b[nb++] = bind_elements(ctx, pr->wv.b, pr->wv.b_first + n0, nc, &p.bv_base);
            uint32_t groups[2] = {(uint32_t)((nc + n_per_group - 1) / n_per_group),
                                  matvec ? 1 : (uint32_t)((mc + m_per_group - 1) / m_per_group)};
            st = ctx->ops->dispatch(ctx->dev, kernel, b, nb, &p, groups, &ctx->error);
        }
    }
    return st;
}

/* ---------------------------------------------------------------- paths */

/* Publishes and returns the error for a call made with a NULL layer. */
static ffnrt_status null_layer(const char *fn)
{
    ffnrt_error err;
    ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: layer is NULL", fn);
    ffnrt_error_publish(&err);
    return err.status;
}

static ffnrt_status check_io(ffnrt_ffn *layer, const ffnrt_tensor *x, const ffnrt_tensor *y, const char *fn)
{
    ffnrt_context *ctx = layer->ctx;
    const ffnrt_ffn_desc *d = &layer->desc;
    ffnrt_status st = ffnrt_check_same_layout(ctx, x, y, fn, "x", "y");
    if (st == FFNRT_OK && x->dtype != d->dtype)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_DTYPE_MISMATCH, "%s: x is %s, the layer is %s", fn,
                        ffnrt_dtype_name(x->dtype), ffnrt_dtype_name(d->dtype));
    if (st == FFNRT_OK && (x->ndim == 0 || x->shape[x->ndim - 1] != d->d_model))
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH, "%s: x's last dimension is %lld, d_model is %lld",
                        fn, x->ndim ? (long long)x->shape[x->ndim - 1] : 0LL, (long long)d->d_model);
    /* A forward may run the layer several times (autotuning) and reads x and
     * the weights while it writes y: y is refused as any of them. */
    const projection *p[4] = {&layer->in, &layer->gate, &layer->value, &layer->out};
    ffnrt_op_arg args[10] = {{x, "x", 0}, {y, "y", 1}};
    static const char *const names[4][2] = {{"weights.w_in", "weights.b_in"}, {"the gate weights", "the gate bias"},
                                            {"the value weights", "the value bias"},
                                            {"weights.w_out", "weights.b_out"}};
    for (int i = 0; i < 4; i++) {
        args[2 + 2 * i] = (ffnrt_op_arg){p[i]->w, names[i][0], 0};
        args[3 + 2 * i] = (ffnrt_op_arg){p[i]->b, names[i][1], 0};
    }
    if (st == FFNRT_OK)
        st = ffnrt_check_aliasing(ctx, fn, args, 10, 0,
                                  "y must not be x nor overlap it or the layer's weights and biases");
    return st;
}



static ffnrt_status ensure_scratch(ffnrt_ffn *l, uint64_t tokens, int need_gate_value)
{
    if (l->scratch_tokens != tokens || (need_gate_value && !l->g))
        destroy_scratch(l);
    int64_t shape[2] = {(int64_t)tokens, l->desc.hidden};
    ffnrt_status st = FFNRT_OK;
    if (!l->h)
        st = ffnrt_tensor_create(l->ctx, l->desc.dtype, 2, shape, &l->h);
    if (st == FFNRT_OK && need_gate_value && !l->g)
        st = ffnrt_tensor_create(l->ctx, l->desc.dtype, 2, shape, &l->g);
    if (st == FFNRT_OK && need_gate_value && !l->v)
        st = ffnrt_tensor_create(l->ctx, l->desc.dtype, 2, shape, &l->v);
    if (st == FFNRT_OK)
        l->scratch_tokens = tokens;
    return st;
}

/* The path's run: the layer's tensors (NULL when only planning), the
 * choice, and the plan being written (NULL when running). */
typedef struct ffn_run {
    ffnrt_context *ctx;
    const ffnrt_ffn_desc *d;
    ffnrt_ffn *l;
    const ffn_choice *c;
    ffnrt_plan *plan;
    uint64_t tokens;
    uint64_t ns; /* device time of every batch */
} ffn_run;

static product make_product(const ffn_run *r, const ffnrt_tensor *x, uint64_t k, projection w, projection wv,
                            int gated, int bias, uint64_t n, ffnrt_tensor *y, ffnrt_activation act, float alpha,
                            float beta)
{
    product pr = {x, r->tokens, k, w, wv, n, y, act, alpha, beta, r->d->dtype, gated, bias};
    return pr;
}

/* One product as its own batch (the unfused path's kernels are separate
 * launches). */
static ffnrt_status run_product(ffn_run *r, const product *pr, const char *name)
{
    ffnrt_context *ctx = r->ctx;
    if (r->plan)
        return record_product(ctx, r->c, pr, r->plan, name);
    ffnrt_status st = ffnrt_batch_begin(ctx);
    if (st != FFNRT_OK)
        return st;
    st = ffnrt_batch_end(ctx, record_product(ctx, r->c, pr, NULL, name), &ctx->last_op_ns);
    r->ns += ctx->last_op_ns;
    return st;
}

/* y += bias, row-broadcast, in place (the unfused bias kernel). */
static ffnrt_status run_bias(ffn_run *r, ffnrt_tensor *y, const projection *pj, const char *name)
{
    if (!r->d->bias)
        return FFNRT_OK;
    if (r->plan) {
        char what[64];
        snprintf(what, sizeof what, "ffn.%s", name);
        ffnrt_plan_add(r->plan, what, "bias.kernel, element-wise", "unfused: the bias is its own pass over the "
                       "product, in place");
        return FFNRT_OK;
    }
    /* One flat range: the kernel finds each element's bias from its index,
     * so a split may fall inside a row, which keeps wide rows splittable
     * under a small buffer range and a coarse offset alignment. */
    uint64_t width = (uint64_t)y->shape[y->ndim - 1];
    uint32_t params[4] = {0, 0, (uint32_t)width, (uint32_t)pj->b_first};
    ffnrt_ew_binding b[3] = {{y, 1}, {y, 1}, {pj->b, 0}};
    ffnrt_ew_launch launch = {"bias.kernel", "", y->dtype, y->numel, 1, b, 3, params, sizeof params};
    ffnrt_status st = ffnrt_run_elementwise(r->ctx, &launch);
    r->ns += r->ctx->last_op_ns;
    return st;
}

static ffnrt_status forward_unfused(ffn_run *r, const ffnrt_tensor *x, ffnrt_tensor *y)
{
    ffnrt_context *ctx = r->ctx;
    const ffnrt_ffn_desc *d = r->d;
    ffnrt_ffn *l = r->l;
    uint64_t dm = (uint64_t)d->d_model, h = (uint64_t)d->hidden;
    projection none = {0}, w;
    ffnrt_tensor *lh = l ? l->h : NULL, *lg = l ? l->g : NULL, *lv = l ? l->v : NULL;
    ffnrt_status st;
    if (!is_gated(d)) {
        w = l ? (projection){l->in.w, l->in.w_row0, NULL, 0} : none;
        product up = make_product(r, x, dm, w, none, 0, 0, h, lh, FFNRT_ACT_COUNT, 0, 0);
        st = run_product(r, &up, "up");
        if (st == FFNRT_OK)
            st = run_bias(r, lh, l ? &l->in : NULL, "up.bias");
        if (st == FFNRT_OK && r->plan) {
            ffnrt_plan_add(r->plan, "ffn.activation", ffnrt_activation_name(d->activation.kind),
                           "unfused: ffnrt_activation_forward in place on the [tokens, hidden] intermediate");
        } else if (st == FFNRT_OK) {
            st = ffnrt_activation_forward(ctx, &d->activation, lh, lh);
            r->ns += ctx->last_op_ns;
        }
    } else {
        w = l ? (projection){l->gate.w, l->gate.w_row0, NULL, 0} : none;
        product gate = make_product(r, x, dm, w, none, 0, 0, h, lg, FFNRT_ACT_COUNT, 0, 0);
        st = run_product(r, &gate, "gate");
        if (st == FFNRT_OK)
            st = run_bias(r, lg, l ? &l->gate : NULL, "gate.bias");
        w = l ? (projection){l->value.w, l->value.w_row0, NULL, 0} : none;
        product value = make_product(r, x, dm, w, none, 0, 0, h, lv, FFNRT_ACT_COUNT, 0, 0);
        if (st == FFNRT_OK)
            st = run_product(r, &value, "value");
        if (st == FFNRT_OK)
            st = run_bias(r, lv, l ? &l->value : NULL, "value.bias");
        if (st == FFNRT_OK && r->plan) {
            ffnrt_plan_add(r->plan, "ffn.gating", ffnrt_glu_name(d->glu.kind),
                           "unfused: ffnrt_glu_forward_split over the gate and value intermediates");
        } else if (st == FFNRT_OK) {
            st = ffnrt_glu_forward_split(ctx, &d->glu, lg, lv, lh);
            r->ns += ctx->last_op_ns;
        }
    }
    w = l ? (projection){l->out.w, l->out.w_row0, NULL, 0} : none;
    product down = make_product(r, lh, h, w, none, 0, 0, dm, y, FFNRT_ACT_COUNT, 0, 0);
    if (st == FFNRT_OK)
        st = run_product(r, &down, "down");
    if (st == FFNRT_OK)
        st = run_bias(r, y, l ? &l->out : NULL, "down.bias");
    return st;
}

static ffnrt_status forward_fused(ffn_run *r, const ffnrt_tensor *x, ffnrt_tensor *y)
{
    ffnrt_context *ctx = r->ctx;
    const ffnrt_ffn_desc *d = r->d;
    ffnrt_ffn *l = r->l;
    uint64_t dm = (uint64_t)d->d_model, h = (uint64_t)d->hidden;
    projection none = {0};
    ffnrt_tensor *lh = l ? l->h : NULL;
    product up;
    if (is_gated(d))
        up = make_product(r, x, dm, l ? l->gate : none, l ? l->value : none, 1, d->bias, h, lh,
                          ffnrt_glu_gate_activation(d->glu.kind), 0, d->glu.beta);
    else
        up = make_product(r, x, dm, l ? l->in : none, none, 0, d->bias, h, lh, d->activation.kind,
                          d->activation.alpha, d->activation.beta);
    product down = make_product(r, lh, h, l ? l->out : none, none, 0, d->bias, dm, y, FFNRT_ACT_COUNT, 0, 0);
    if (r->plan) {
        ffnrt_status st = record_product(ctx, r->c, &up, r->plan, is_gated(d) ? "gate_value" : "up");
        return st == FFNRT_OK ? record_product(ctx, r->c, &down, r->plan, "down") : st;
    }
    ffnrt_status st = ffnrt_batch_begin(ctx);
    if (st != FFNRT_OK)
        return st;
    st = record_product(ctx, r->c, &up, NULL, "up");
    if (st == FFNRT_OK)
        st = record_product(ctx, r->c, &down, NULL, "down");
    /* Closes the batch even after a failed dispatch. */
    st = ffnrt_batch_end(ctx, st, &ctx->last_op_ns);
    r->ns = ctx->last_op_ns;
    return st;
}

/* The path: forced by desc.path or FFNRT_FFN_PATH, else a tuned winner for
 * this device and shape class, else fused, which moves fewer bytes in fewer
 * kernels (ffnrt_ffn_cost_of's figures, quoted in the plan). */
static ffnrt_status choose_path(ffnrt_context *ctx, const ffnrt_ffn_desc *d, uint64_t tokens, ffn_choice *c,
                                int tuned, const char *tuned_why, ffnrt_plan *plan)
{
    const char *env = ffnrt_context_forced(ctx, "FFNRT_FFN_PATH");
    if (d->path != FFNRT_FFN_PATH_AUTO) {
        c->unfused = d->path == FFNRT_FFN_PATH_UNFUSED;
        ffnrt_plan_add(plan, "ffn.path", c->unfused ? "unfused" : "fused", "forced by desc.path");
        return FFNRT_OK;
    }
    if (env && *env) {
        if (strcmp(env, "fused") != 0 && strcmp(env, "unfused") != 0)
            return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "FFNRT_FFN_PATH=%s: expected fused or unfused",
                              env);
        c->unfused = strcmp(env, "unfused") == 0;
        ffnrt_plan_add(plan, "ffn.path", env, "forced by FFNRT_FFN_PATH");
        return FFNRT_OK;
    }
    if (tuned >= 0) {
        c->unfused = tuned / 4;
        ffnrt_plan_add(plan, "ffn.path", c->unfused ? "unfused" : "fused", "%s", tuned_why);
        return FFNRT_OK;
    }
    ffnrt_ffn_cost fused, unfused;
    ffnrt_ffn_cost_of(d, (int64_t)tokens, FFNRT_FFN_PATH_FUSED, &fused);
    ffnrt_ffn_cost_of(d, (int64_t)tokens, FFNRT_FFN_PATH_UNFUSED, &unfused);
    c->unfused = 0;
    ffnrt_plan_add(plan, "ffn.path", "fused",
                   "moves %.2f MB in %u kernels against %.2f MB in %u unfused, and writes no intermediate "
                   "(no tuning result for this shape class: ffnrt_ffn_autotune or FFNRT_AUTOTUNE=1 times both)",
                   1e-6 * (double)fused.bytes_moved, fused.kernels, 1e-6 * (double)unfused.bytes_moved,
                   unfused.kernels);
    return FFNRT_OK;
}

static ffnrt_status forward_with(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y, uint64_t tokens,
                                 const ffn_choice *c, uint64_t *ns);

/* ---------------------------------------------------------------- tuning */

/* The shape class a tuning result holds for: the layer's kind, function,
 * dtype, biases and sizes, and the token count's bucket (1, 2-8, 9-64,
 * more), which is where the best path and kernel change. */
static void tuning_key(const ffnrt_context *ctx, const ffnrt_ffn_desc *d, uint64_t tokens, char *key, size_t cap)
{
    (void)ctx;
    unsigned bucket = tokens <= 1 ? 1 : tokens <= 8 ? 8 : tokens <= 64 ? 64 : 512;
    snprintf(key, cap, "ffn/%s/%s/%s/%s/%lldx%lld/t%u", is_gated(d) ? "gated" : "dense",
             is_gated(d) ? ffnrt_glu_name(d->glu.kind) : ffnrt_activation_name(d->activation.kind),
             ffnrt_dtype_name(d->dtype), d->bias ? "bias" : "nobias", (long long)d->d_model, (long long)d->hidden,
             bucket);
}

/* The kernels worth timing: on CPU devices the blocked one, and for
 * decode the matrix-vector one (the tiled kernel's barriers and shared
 * memory only cost there); on GPUs all three, matvec up to 4x its tokens a
 * dispatch (past that it rereads the weights too often). Plans list the
 * set ("ffn.candidates"), which ffnrt bench's regret rows time. */
static int tuning_candidate(int cpu, product_kernel k, uint64_t tokens, const ffnrt_ffn_desc *d)
{
    uint64_t mv = d->matvec_max_tokens ? d->matvec_max_tokens : DEFAULT_MATVEC_TOKENS;
    if (k == KERNEL_MATVEC)
        return tokens <= (cpu ? mv : 4 * mv);
    return !cpu || k == KERNEL_BLOCKED;
}

/* Times every candidate (path x kernel the device can run) on x, in
 * interleaved rounds, and keeps the one with the fastest median for this
 * shape class. Time is host end to end, what the caller waits for: the
 * unfused path's separate submissions count. */
#define TUNING_ROUNDS 5
#define TUNING_MAX_ROUNDS 31

static ffnrt_status ffn_autotune(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y, uint64_t tokens)
{
    ffnrt_context *ctx = layer->ctx;
    const ffnrt_ffn_desc *d = &layer->desc;
    char key[160];
    tuning_key(ctx, d, tokens, key, sizeof key);
    int cpu = ctx->info.type == FFNRT_DEVICE_TYPE_CPU;
    ffn_choice cand[6];
    double t[6][TUNING_MAX_ROUNDS];
    int nc = 0;
    for (int unfused = 0; unfused < 2; unfused++)
        for (int k = 0; k < 3; k++) {
            if (!tuning_candidate(cpu, (product_kernel)k, tokens, d))
                continue;
            ffn_choice c = {unfused, (product_kernel)k, d->matvec_max_tokens ? d->matvec_max_tokens : DEFAULT_MATVEC_TOKENS,
                            {0, 0, 0, 0, 0}};
            if (k == KERNEL_TILED && choose_tiled(ctx, &c.tiled, NULL) != FFNRT_OK)
                continue;
            cand[nc++] = c;
        }
    /* Rounds over every candidate in turn, so that whatever else loads the
     * device falls on all of them alike; round -1 builds the kernels and
     * sets the count: at least TUNING_ROUNDS, more for short runs (decode),
     * up to about 60 ms a candidate, since their timings jitter most. */
    int rounds = TUNING_ROUNDS;
    for (int r = -1; r < rounds; r++) {
        double slowest = 0;
        for (int i = 0; i < nc; i++) {
            uint64_t ns;
            double t0 = ffnrt_now_ms();
            if (forward_with(layer, x, y, tokens, &cand[i], &ns) != FFNRT_OK)
                return ffnrt_fail(&ctx->error, ctx->error.status, "autotune (%s, %s): %s",
                                  cand[i].unfused ? "unfused" : "fused", kernel_names[cand[i].kernel],
                                  ctx->error.message);
            double dt = ffnrt_now_ms() - t0;
            if (r >= 0)
                t[i][r] = dt;
            slowest = dt > slowest ? dt : slowest;
        }
        if (r < 0 && slowest > 0 && 60.0 / slowest > TUNING_ROUNDS)
            rounds = 60.0 / slowest < TUNING_MAX_ROUNDS ? (int)(60.0 / slowest) : TUNING_MAX_ROUNDS;
    }
    int best = -1, second = -1;
    double med[6];
    for (int i = 0; i < nc; i++) {
        med[i] = ffnrt_median(t[i], rounds);
        if (best < 0 || med[i] < med[best])
            second = best, best = i;
        else if (second < 0 || med[i] < med[second])
            second = i;
    }
    if (best >= 0) {
        double ms[2] = {med[best], second >= 0 ? med[second] : med[best]};
        ffnrt_tuning_put(ctx, key, cand[best].unfused * 4 + (int)cand[best].kernel, ms);
    }
    return FFNRT_OK;
}

ffnrt_status ffnrt_ffn_autotune(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y)
{
    static const char fn[] = "ffnrt_ffn_autotune";
    if (!layer)
        return null_layer(fn);
    ffnrt_context *ctx = layer->ctx;
    ffnrt_status st = check_io(layer, x, y, fn);
    if (st == FFNRT_OK && x->numel)
        st = ffn_autotune(layer, x, y, x->numel / (uint64_t)layer->desc.d_model);
    return ffnrt_context_finish_call(ctx, st);
}

static ffnrt_status choose_ffn(ffnrt_context *ctx, const ffnrt_ffn_desc *d, uint64_t tokens, ffn_choice *c,
                               ffnrt_plan *plan)
{
    memset(c, 0, sizeof *c);
    char key[160], why[400] = "";
    int tuned = -1;
    tuning_key(ctx, d, tokens, key, sizeof key);
    double ms[2];
    const char *tuning = ffnrt_context_forced(ctx, "FFNRT_TUNING");
    int use_tuning = !tuning || strcmp(tuning, "off") != 0;
    if (use_tuning && ffnrt_tuning_get(ctx, key, &tuned, ms))
        snprintf(why, sizeof why, "tuned for this device and shape class (%s): %.3f ms against %.3f ms for the next "
                 "candidate", key, ms[0], ms[1]);
    ffnrt_status st = choose_path(ctx, d, tokens, c, tuned, why, plan);
    if (st == FFNRT_OK)
        st = choose_kernel(ctx, d, tokens, c, tuned, why, plan);
    if (st == FFNRT_OK && c->kernel == KERNEL_TILED)
        st = choose_tiled(ctx, &c->tiled, plan);
    return st;
}

/* Runs a forward with a given choice (the tuner times each candidate). */
static ffnrt_status forward_with(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y, uint64_t tokens,
                                 const ffn_choice *c, uint64_t *ns)
{
    ffn_run r = {layer->ctx, &layer->desc, layer, c, NULL, tokens, 0};
    ffnrt_status st = ensure_scratch(layer, tokens, c->unfused && is_gated(&layer->desc));
    if (st == FFNRT_OK)
        st = c->unfused ? forward_unfused(&r, x, y) : forward_fused(&r, x, y);
    *ns = r.ns;
    return st;
}

ffnrt_status ffnrt_ffn_forward(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y)
{
    static const char fn[] = "ffnrt_ffn_forward";
    if (!layer)
        return null_layer(fn);
    ffnrt_context *ctx = layer->ctx;
    const ffnrt_ffn_desc *d = &layer->desc;
    ffnrt_status st = check_io(layer, x, y, fn);
    uint64_t tokens = st == FFNRT_OK ? x->numel / (uint64_t)d->d_model : 0;
    uint64_t ns = 0;
    if (st == FFNRT_OK && tokens > 0 && ctx->autotune && d->path == FFNRT_FFN_PATH_AUTO &&
        d->matmul == FFNRT_MATMUL_AUTO) {
        char key[160];
        int code;
        tuning_key(ctx, d, tokens, key, sizeof key);
        if (!ffnrt_tuning_get(ctx, key, &code, NULL))
            st = ffn_autotune(layer, x, y, tokens);
    }
    if (st == FFNRT_OK && tokens > 0) {
        ffn_choice c;
        st = choose_ffn(ctx, d, tokens, &c, NULL);
        if (st == FFNRT_OK)
            st = forward_with(layer, x, y, tokens, &c, &ns);
    }
    ctx->last_op_ns = ns;
    return ffnrt_context_finish_call(ctx, st);
}

ffnrt_status ffnrt_ffn_plan(ffnrt_context *ctx, const ffnrt_ffn_desc *desc, int64_t tokens, ffnrt_plan **out)
{
    static const char fn[] = "ffnrt_ffn_plan";
    if (!ctx)
        return ffnrt_null_context(fn);
    ffnrt_status st = check_desc(&ctx->error, desc, fn);
    if (st == FFNRT_OK && (!out || tokens < 1))
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s", fn, out ? "tokens < 1" : "out is NULL");
    /* x and the [tokens, hidden] intermediate must be tensors the device can hold. */
    uint64_t widest = st == FFNRT_OK ? (uint64_t)(desc->hidden > desc->d_model ? desc->hidden : desc->d_model) : 1;
    if (st == FFNRT_OK)
        st = ffnrt_tensor_check_size(ctx, desc->dtype, (uint64_t)tokens > UINT32_MAX / widest ? UINT64_MAX
                                                                                              : (uint64_t)tokens * widest,
                                     fn);
    ffnrt_plan *plan = NULL;
    if (st == FFNRT_OK && !(plan = ffnrt_plan_new()))
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if (st == FFNRT_OK) {
        ffnrt_plan_add_context(plan, ctx);
        char choice[160];
        snprintf(choice, sizeof choice, "%s %s, d_model %lld, hidden %lld, %lld tokens, %s%s",
                 is_gated(desc) ? "gated" : "dense",
                 is_gated(desc) ? ffnrt_glu_name(desc->glu.kind) : ffnrt_activation_name(desc->activation.kind),
                 (long long)desc->d_model, (long long)desc->hidden, (long long)tokens, ffnrt_dtype_name(desc->dtype),
                 desc->bias ? ", biases" : "");
        ffnrt_plan_add(plan, "op", choice, "as asked");
        ffnrt_plan_add(plan, "ffn.accumulation", "fp32",
                       "%s", desc->allow_fp16_accumulation
                                 ? "fp16 accumulation is allowed but not implemented: every product accumulates in fp32"
                                 : "every product accumulates in fp32 (fp16 accumulation not allowed)");
        ffn_choice c;
        st = choose_ffn(ctx, desc, (uint64_t)tokens, &c, plan);
        char list[128] = "";
        for (int unfused = 0; unfused < 2; unfused++)
            for (int k = 0; k < 3; k++)
                if (tuning_candidate(ctx->info.type == FFNRT_DEVICE_TYPE_CPU, (product_kernel)k, (uint64_t)tokens,
                                     desc)) {
                    size_t len = strlen(list);
                    snprintf(list + len, sizeof list - len, "%s%s/%s", len ? "," : "", unfused ? "unfused" : "fused",
                             kernel_names[k]);
                }
        ffnrt_plan_add(plan, "ffn.candidates", list,
                       "what ffnrt_ffn_autotune times for this device and token count (path/kernel)");
        ffn_run r = {ctx, desc, NULL, &c, plan, (uint64_t)tokens, 0};
        if (st == FFNRT_OK)
            st = c.unfused ? forward_unfused(&r, NULL, NULL) : forward_fused(&r, NULL, NULL);
    }
    if (st == FFNRT_OK)
        *out = plan;
    else
        ffnrt_plan_destroy(plan);
    return ffnrt_context_finish_call(ctx, st);
}

/* ----------------------------------------------------------- accounting */

/* uint64 arithmetic that notes an overflow in *ok instead of wrapping. */
static uint64_t mul(uint64_t a, uint64_t b, int *ok)
{
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        *ok = 0;
    return r;
}

static uint64_t add(uint64_t a, uint64_t b, int *ok)
{
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r))
        *ok = 0;
    return r;
}

/* ffnrt_ffn_cost_of's figures; 0 when one passes 64 bits. */
static int cost_figures(const ffnrt_ffn_desc *desc, uint64_t t, int unfused, ffnrt_ffn_cost *out)
{
    int ok = 1;
    uint64_t d = (uint64_t)desc->d_model, h = (uint64_t)desc->hidden;
    uint64_t es = ffnrt_dtype_size(desc->dtype), bias = (uint64_t)desc->bias;
    int gated = is_gated(desc);
    uint64_t up_rows = gated ? 2 * h : h; /* rows of the input projections (h < 2^32) */
    uint64_t weights = add(mul(up_rows, d, &ok), mul(d, h, &ok), &ok);
    uint64_t biases = bias * (up_rows + d);
    uint64_t td = mul(t, d, &ok), th = mul(t, h, &ok);
    uint64_t io = mul(2 * es, td, &ok), act = mul(th, es, &ok); /* x + y; one [tokens, hidden] tensor */
    memset(out, 0, sizeof *out);
    out->parameters = add(weights, biases, &ok);
    out->weight_bytes = mul(out->parameters, es, &ok);
    /* 2 per multiply-add, 1 per bias add, activation (and gating) per hidden unit. */
    out->flops = add(add(mul(mul(2, t, &ok), weights, &ok), mul(t, biases, &ok), &ok), mul(th, gated ? 2 : 1, &ok),
                     &ok);
    /* Multiples of act and of t·d·es (the small factors below), summed. */
    uint64_t acts, tds, peak_acts;
    if (!unfused) {
        /* up: reads x, weights and biases, writes h; down: reads h, writes y. */
        acts = 2, tds = 0, peak_acts = 1;
        out->kernels = 2;
    } else if (!gated) {
        /* products write h and y; bias passes read and write them; the
         * activation reads and writes h; the down product reads h. */
        acts = 4 + 2 * bias, tds = 2 * bias, peak_acts = 1;
        out->kernels = 3 + 2 * (uint32_t)bias;
    } else {
        /* x read twice; g and v written, biased (read + write), read by
         * the gating pass, which writes h; the down product reads h. */
        acts = 6 + 4 * bias, tds = 1 + 2 * bias, peak_acts = 3;
        out->kernels = 4 + 3 * (uint32_t)bias;
    }
    uint64_t fixed = add(out->weight_bytes, io, &ok);
    out->bytes_moved = add(add(fixed, mul(acts, act, &ok), &ok), mul(tds, mul(td, es, &ok), &ok), &ok);
    out->peak_bytes = add(fixed, mul(peak_acts, act, &ok), &ok);
    return ok;
}

ffnrt_status ffnrt_ffn_cost_of(const ffnrt_ffn_desc *desc, int64_t tokens, ffnrt_ffn_path path, ffnrt_ffn_cost *out)
{
    static const char fn[] = "ffnrt_ffn_cost_of";
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (check_desc(&err, desc, fn) == FFNRT_OK) {
        if (!out)
            ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: out is NULL", fn);
        else if (tokens < 0)
            ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: tokens is %lld", fn, (long long)tokens);
        else if ((unsigned)path > FFNRT_FFN_PATH_UNFUSED)
            ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not a path", fn, (int)path);
    }
    if (err.status == FFNRT_OK) {
        ffnrt_ffn_cost c;
        if (cost_figures(desc, (uint64_t)tokens, path == FFNRT_FFN_PATH_UNFUSED, &c))
            *out = c;
        else
            ffnrt_fail(&err, FFNRT_ERROR_LIMIT_EXCEEDED,
                       "%s: %lld tokens through d_model %lld, hidden %lld: the figures pass 64 bits", fn,
                       (long long)tokens, (long long)desc->d_model, (long long)desc->hidden);
    }
    ffnrt_error_publish(&err);
    return err.status;
}

int64_t ffnrt_ffn_gated_hidden(int64_t dense_hidden, int64_t multiple)
{
    if (dense_hidden < 1 || multiple < 1 || dense_hidden > INT64_MAX / 2)
        return 0;
    int64_t g = 2 * dense_hidden / 3;
    /* Rounded up without forming g + multiple - 1, which overflows for a
     * huge multiple (found by fuzz/fuzz_api.c); the result always fits. */
    int64_t r = g % multiple;
    return r ? g + (multiple - r) : g;
}
