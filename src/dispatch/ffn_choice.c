/* The FFN dispatcher: which path (fused or unfused), which product kernel
 * and which tiles a layer's forward runs with, each chosen by one function
 * of the device's traits and limits, the settings (descriptor, forced,
 * environment), the calibration and the tuning table, which writes its
 * reason into the plan. Also the layer's cost model (the accounting behind
 * ffnrt_ffn_cost_of) and the shape classes tuning keeps results for. */
#include "dispatch/dispatch.h"
#include "ffnrt_op_table.h"
#include "quant/quant.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const kernel_names[FFNRT_PRODUCT_KERNEL_COUNT] = {"blocked", "matvec", "tiled"};

const char *ffnrt_product_kernel_name(ffnrt_product_kernel k)
{
    return (unsigned)k < FFNRT_PRODUCT_KERNEL_COUNT ? kernel_names[k] : "unknown";
}

static int is_gated(const ffnrt_ffn_desc *d) { return d->kind == FFNRT_FFN_GATED; }

/* Shared memory to plan with: what the device reports, else Vulkan's least. */
static uint64_t shared_memory(const ffnrt_context *ctx)
{
    return ctx->info.shared_memory_size ? ctx->info.shared_memory_size : 16384;
}

/* What a kernel of wg work-items and a tile of `rows` rows has for its own
 * shared memory: all of it, less what its statistics variant takes when
 * that runs (r; NULL: none). */
static uint64_t shared_for(const ffnrt_context *ctx, const ffnrt_smem_reserve *r, uint64_t wg, uint64_t rows)
{
    uint64_t stats = r ? r->base + (uint64_t)r->per_item * wg + (uint64_t)r->per_row * rows : 0;
    uint64_t all = shared_memory(ctx);
    return stats < all ? all - stats : 0;
}

/* "forced by FFNRT_GEMM_KERNEL" / "by desc.path" / ... for a setting. */
static const char *why_set(const ffnrt_setting *s)
{
    return s->source == FFNRT_FROM_TUNED ? "tuned" : s->from;
}

/* ------------------------------------------------------------------ tiles */

uint64_t ffnrt_tiled_smem_floats(ffnrt_tiled_shape t)
{
    uint64_t staged = (uint64_t)t.bk * ((t.bm + 1) + 2 * (t.bn + 1)); /* gated: two W slices */
    return staged > (uint64_t)t.bm * t.bn ? staged : (uint64_t)t.bm * t.bn;
}

static int tiled_fits(const ffnrt_context *ctx, const ffnrt_smem_reserve *r, ffnrt_tiled_shape t)
{
    uint64_t wg = (uint64_t)(t.bm / t.tm) * (t.bn / t.tn);
    if (wg == 2 && (ctx->vetoes & FFNRT_QUIRK_TWO_ITEM_TILES))
        return 0; /* the quirk table: the driver's compiler aborts on it */
    return wg <= ctx->limits.max_workgroup_size && 4 * ffnrt_tiled_smem_floats(t) <= shared_for(ctx, r, wg, t.bm);
}

ffnrt_status ffnrt_choose_tiled(const ffnrt_context *ctx, const ffnrt_smem_reserve *stats, ffnrt_tiled_shape *out,
                                ffnrt_plan *plan, ffnrt_error *err)
{
    ffnrt_kernel_params kp;
    ffnrt_kernel_params_for(&ctx->info, &kp, NULL, 0);
    ffnrt_tiled_shape t = {kp.tiled_bm, kp.tiled_bn, kp.tiled_bk, kp.tiled_tm, kp.tiled_tn};
    uint64_t shared = shared_memory(ctx);
    const ffnrt_setting *forced = ffnrt_setting_get(&ctx->settings, FFNRT_KNOB_FFN_TILES, NULL, NULL);
    if (forced) {
        t = (ffnrt_tiled_shape){(uint32_t)forced->v[0], (uint32_t)forced->v[1], (uint32_t)forced->v[2],
                                (uint32_t)forced->v[3], (uint32_t)forced->v[4]};
        if (!tiled_fits(ctx, stats, t))
            return ffnrt_fail(err, FFNRT_ERROR_LIMIT_EXCEEDED,
                              "%s=%s does not fit %s: %u work-items (limit %u%s) or its staged slices in %llu bytes of "
                              "shared memory",
                              forced->from, forced->text, ctx->info.name, (t.bm / t.tm) * (t.bn / t.tn),
                              ctx->limits.max_workgroup_size,
                              ctx->vetoes & FFNRT_QUIRK_TWO_ITEM_TILES ? ", and not 2: see the plan's quirks" : "",
                              (unsigned long long)shared);
        *out = t;
        ffnrt_plan_add(plan, "ffn.tiles", forced->text, "forced by %s (bm,bn,bk,tm,tn)", forced->from);
        return FFNRT_OK;
    }
    int halved = 0;
    while (!tiled_fits(ctx, stats, t)) {
        halved++;
        if (4 * ffnrt_tiled_smem_floats(t) > shared_for(ctx, stats, (uint64_t)(t.bm / t.tm) * (t.bn / t.tn), t.bm) && t.bk > 4)
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
    ffnrt_plan_add(plan, "ffn.tiles", choice, "%s %ux%ux%u until the staged slices and the workgroup fit "
                   "(%u work-items allowed, %llu B shared memory%s)", halved ? "halved from" : "the start fits:",
                   kp.tiled_bm, kp.tiled_bn, kp.tiled_bk, ctx->limits.max_workgroup_size, (unsigned long long)shared,
                   stats && stats->base ? ", less what the statistics variant takes" : "");
    return FFNRT_OK;
}

/* ---------------------------------------------------------- matrix-vector */

uint64_t ffnrt_matvec_smem_floats(ffnrt_matvec_shape s, uint32_t tokens)
{
    return (uint64_t)tokens * s.rows * (2ull * s.lanes + 1); /* gated partials, then the output tile */
}

/* Lanes along K: one subgroup per row where the device reports its size
 * (its reads are contiguous, and few lanes mean few reduction steps, whose
 * barriers are costly on CPU drivers), else 4; 256 work-items, halved to
 * fit. Measured here: lavapipe (subgroup 8) 32 x 8 is 2.5x faster than
 * 4 x 64; PoCL 64 x 4 is 1.6x faster. Lanes stay a power of two. */
ffnrt_status ffnrt_choose_matvec(const ffnrt_context *ctx, const ffnrt_smem_reserve *stats, uint32_t tokens,
                                 ffnrt_matvec_shape *out, ffnrt_error *err)
{
    uint32_t sub = ctx->info.subgroup_size;
    uint32_t lanes = sub >= 2 && sub <= 64 && (sub & (sub - 1)) == 0 ? sub : 4;
    ffnrt_matvec_shape s = {256 / lanes, lanes};
    uint64_t shared = shared_memory(ctx);
    const ffnrt_setting *forced = ffnrt_setting_get(&ctx->settings, FFNRT_KNOB_FFN_MATVEC, NULL, NULL);
    if (forced) {
        s = (ffnrt_matvec_shape){(uint32_t)forced->v[0], (uint32_t)forced->v[1]};
        if ((uint64_t)s.rows * s.lanes > ctx->limits.max_workgroup_size ||
            4 * ffnrt_matvec_smem_floats(s, tokens) > shared_for(ctx, stats, (uint64_t)s.rows * s.lanes, tokens))
            return ffnrt_fail(err, FFNRT_ERROR_LIMIT_EXCEEDED, "%s=%s does not fit %s (%u work-items, %llu B shared memory)",
                              forced->from, forced->text, ctx->info.name, ctx->limits.max_workgroup_size,
                              (unsigned long long)shared);
        *out = s;
        return FFNRT_OK;
    }
    while ((uint64_t)s.rows * s.lanes > ctx->limits.max_workgroup_size ||
           4 * ffnrt_matvec_smem_floats(s, tokens) > shared_for(ctx, stats, (uint64_t)s.rows * s.lanes, tokens)) {
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

/* ---------------------------------------------------------------- blocked */

uint32_t ffnrt_rows_class(uint64_t m, uint32_t cap)
{
    uint32_t rows = 1;
    while (rows < m && rows < cap)
        rows *= 2;
    return rows < cap ? rows : cap;
}

/* 4 of llvmpipe's groups of 16 (8 vectors of its 8 lanes). PoCL's blocks
 * (4 rows, 6 columns, gated 3) are at the floor the shrinking stops at. */
#define BLOCKED_MIN_ITEMS 64u

static uint64_t blocked_items(ffnrt_blocked_shape b, uint64_t m, uint64_t n)
{
    return ((m + b.tm - 1) / b.tm) * ((n + b.tn - 1) / b.tn);
}

/* BLOCKED shape for m rows of x and n outputs, from the device's kernel
 * params (dispatch/kernel_params.inc says what bounds it on each kind of
 * driver), or from the forced start (ffn.block). TM takes every row up to
 * tm_max (decode reads W once), rounded up to a power of two: each TM is
 * another kernel to compile (lavapipe's 16 x 16 block 1-2 s, 7 s before
 * its outputs were staged), so 5 to 8 rows share the 8-row kernel rather
 * than building four, and the rows
 * past m cost arithmetic only, not another read of W. TN the decode width
 * at 4 rows or fewer (the 4-row kernel's own where the device has one,
 * block-format weights their own up to `streamed`).
 * Groups narrowed while that leaves fewer than 16 groups so every core
 * gets work; then fitted to the workgroup size and to the shared memory
 * that the outputs staged there take (ffnrt_blocked_smem_floats). */
ffnrt_blocked_shape ffnrt_choose_blocked(const ffnrt_context *ctx, const ffnrt_smem_reserve *stats, uint64_t m,
                                         uint64_t n, int gated, int sixteen_bit, int wide, uint32_t streamed)
{
    ffnrt_kernel_params kp;
    ffnrt_kernel_params_for(&ctx->info, &kp, NULL, 0);
    ffnrt_blocked_shape b;
    b.tm = ffnrt_rows_class(m, kp.blocked_tm_max);
    /* At decode the 4-row kernel takes its own columns where the device's
     * row has them (kernel_params.inc's tn_decode4). */
    if (m <= 4) {
        b.tn = b.tm == 4 && kp.blocked_tn_decode4 ? kp.blocked_tn_decode4 : kp.blocked_tn_decode;
        b.wg_n = kp.blocked_wg_n_decode, b.wg_m = kp.blocked_wg_m_decode;
    } else {
        b.tn = gated ? kp.blocked_tn_gated : kp.blocked_tn, b.wg_n = kp.blocked_wg_n, b.wg_m = kp.blocked_wg_m;
    }
    /* Block-format weights at up to `streamed` rows: fewer weight rows a
     * work-item streams at once (kernel_params.inc's tn_decode_streamed). */
    if (m <= streamed && kp.blocked_tn_decode_streamed)
        b.tn = kp.blocked_tn_decode_streamed;
    /* 16-wide accumulators take a vector register each. */
    if (m > 4 && wide && (gated ? kp.blocked_tn_gated_wide : kp.blocked_tn_wide))
        b.tn = gated ? kp.blocked_tn_gated_wide : kp.blocked_tn_wide;
    /* Small layers take smaller blocks, as ggml-vulkan picks its small,
     * medium or large matmul by size: while the outputs would give fewer
     * than BLOCKED_MIN_ITEMS work-items, TN halves down to the decode
     * width, then TM down to 4. A big block on a small layer leaves lanes
     * idle, and it is the costly one to compile (llvmpipe, cold: 2.5-2.9 s
     * for 16 x 16, 0.5-0.6 for 8 x 8, 0.3 for 4 x 4). */
    while (m > 4 && blocked_items(b, m, n) < BLOCKED_MIN_ITEMS) {
        if (b.tn / 2 >= kp.blocked_tn_decode)
            b.tn /= 2;
        else if (b.tm > 4)
            b.tm /= 2;
        else
            break;
    }
    const ffnrt_setting *forced = ffnrt_setting_get(&ctx->settings, FFNRT_KNOB_FFN_BLOCK, NULL, NULL);
    if (forced)
        b = (ffnrt_blocked_shape){(uint32_t)forced->v[0], (uint32_t)forced->v[1], (uint32_t)forced->v[2],
                                  (uint32_t)forced->v[3]};
    while (b.wg_n > 1 && (n + (uint64_t)b.wg_n * b.tn - 1) / ((uint64_t)b.wg_n * b.tn) *
                                 ((m + (uint64_t)b.wg_m * b.tm - 1) / ((uint64_t)b.wg_m * b.tm)) < 16)
        b.wg_n /= 2;
    while (b.wg_m > 1 && (m + (uint64_t)b.wg_m * b.tm - 1) / ((uint64_t)b.wg_m * b.tm) < 2 && b.wg_n * b.wg_m > 8)
        b.wg_m /= 2;
    while ((uint64_t)b.wg_n * b.wg_m > ctx->limits.max_workgroup_size ||
           4 * ffnrt_blocked_smem_floats(b, gated, sixteen_bit) >
               shared_for(ctx, stats, (uint64_t)b.wg_n * b.wg_m, (uint64_t)b.wg_m * b.tm) ||
           shared_for(ctx, stats, (uint64_t)b.wg_n * b.wg_m, (uint64_t)b.wg_m * b.tm) == 0) {
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

/* A work-item with more outputs than this (llvmpipe's 16 x 16 and 16 x 8
 * blocks; PoCL's are 4 x 6 at most) keeps only its products' loop in
 * registers: its sums go to shared memory and one rolled loop runs the
 * epilogue and the statistics over them, and its block-format quads loop
 * stays rolled. Code unrolled once an output made those kernels slow to
 * compile, the driver's own compile at a first call: on llvmpipe a dense
 * GELU 16 x 16 block took 4.5 s (0.9 s staged, without the K % 4 tail
 * loop that a K multiple of 4 does not need), a Q4_0 one 7.4 s (2.2 s with
 * the quads loop rolled), at no cost to speed (docs/speed.md). */
#define BLOCKED_STAGE_OUTPUTS 32u

int ffnrt_blocked_large(ffnrt_blocked_shape b) { return b.tm * b.tn > BLOCKED_STAGE_OUTPUTS; }

uint64_t ffnrt_blocked_smem_floats(ffnrt_blocked_shape b, int gated, int sixteen_bit)
{
    uint64_t tile = (uint64_t)b.wg_n * b.tn * b.wg_m * b.tm;
    if (ffnrt_blocked_large(b))
        return gated ? 2 * tile : tile; /* the gate's sums, then the value's */
    return sixteen_bit ? tile : 1;      /* 16-bit outputs written as whole words; 1: no empty arrays */
}

static uint64_t mul(uint64_t a, uint64_t b, int *ok);

/* --------------------------------------------------------------- formats */

ffnrt_weight_format ffnrt_ffn_format(const ffnrt_ffn_desc *d, ffnrt_ffn_matrix m)
{
    ffnrt_weight_format f = m == FFNRT_FFN_MATRIX_IN ? d->format_in
                          : m == FFNRT_FFN_MATRIX_VALUE ? d->format_value : d->format_out;
    if (m == FFNRT_FFN_MATRIX_VALUE && !is_gated(d))
        return FFNRT_WEIGHT_F32;
    return ffnrt_quant_layout_of(f) ? f : FFNRT_WEIGHT_F32;
}

int ffnrt_ffn_quantized(const ffnrt_ffn_desc *d)
{
    return ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_IN) || ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_VALUE) ||
           ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_OUT);
}

int ffnrt_ffn_fusable(const ffnrt_ffn_desc *d)
{
    return !is_gated(d) || ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_IN) == ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_VALUE);
}

ffnrt_status ffnrt_ffn_check_formats(ffnrt_error *err, const ffnrt_ffn_desc *d, const char *fn)
{
    static const char *const names[3] = {"format_in", "format_value", "format_out"};
    const ffnrt_weight_format given[3] = {d->format_in, d->format_value, d->format_out};
    for (int m = 0; m < 3; m++) {
        ffnrt_weight_format f = given[m];
        if ((unsigned)f >= FFNRT_WEIGHT_FORMAT_COUNT)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: desc.%s is %d, not a weight format", fn,
                              names[m], (int)f);
        const ffnrt_quant_layout *l = ffnrt_quant_layout_of(f);
        if (!l) {
            /* Dense formats' values equal the dtypes'. */
            if (f != FFNRT_WEIGHT_F32 && (int)f != (int)d->dtype)
                return ffnrt_fail(err, FFNRT_ERROR_UNSUPPORTED,
                                  "%s: desc.%s is %s but the layer is %s: a dense matrix is stored in the layer's "
                                  "dtype (leave the format at f32, its default)",
                                  fn, names[m], ffnrt_weight_format_name(f), ffnrt_dtype_name(d->dtype));
            continue;
        }
        if (m == FFNRT_FFN_MATRIX_VALUE && !is_gated(d))
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                              "%s: desc.format_value is %s, but a dense layer has no value matrix", fn,
                              ffnrt_weight_format_name(f));
        int64_t k = m == FFNRT_FFN_MATRIX_OUT ? d->hidden : d->d_model;
        if (k % l->k_multiple != 0)
            return ffnrt_fail(err, FFNRT_ERROR_SHAPE_MISMATCH,
                              "%s: desc.%s is %s, whose blocks of %u run along the input width, but that width (%s) "
                              "is %lld",
                              fn, names[m], ffnrt_weight_format_name(f), l->k_multiple,
                              m == FFNRT_FFN_MATRIX_OUT ? "hidden" : "d_model", (long long)k);
    }
    if (d->path == FFNRT_FFN_PATH_FUSED && !ffnrt_ffn_fusable(d))
        return ffnrt_fail(err, FFNRT_ERROR_UNSUPPORTED,
                          "%s: desc.path is fused, but the gate is %s and the value %s: the fused kernel reads both "
                          "in one format (take path AUTO or UNFUSED)",
                          fn, ffnrt_weight_format_name(ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_IN)),
                          ffnrt_weight_format_name(ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_VALUE)));
    return FFNRT_OK;
}

/* Bytes of a [rows, k] matrix as the device holds it. */
static uint64_t matrix_bytes(const ffnrt_ffn_desc *d, ffnrt_ffn_matrix m, uint64_t rows, uint64_t k, int *ok)
{
    ffnrt_weight_format f = ffnrt_ffn_format(d, m);
    if (!f)
        return mul(mul(rows, k, ok), ffnrt_dtype_size(d->dtype), ok);
    return mul(rows, 4 * (ffnrt_quant_code_words(f, k) + ffnrt_quant_scale_words(f, k)), ok);
}

/* Operations a weight takes to dequantize, averaged over the layer's
 * weights (0 for dense ones): the cost model's extra arithmetic. */
static double dequant_ops(const ffnrt_ffn_desc *d)
{
    double dm = (double)d->d_model, h = (double)d->hidden, ops = 0, n = 0;
    const ffnrt_ffn_matrix ms[3] = {FFNRT_FFN_MATRIX_IN, FFNRT_FFN_MATRIX_VALUE, FFNRT_FFN_MATRIX_OUT};
    for (int i = 0; i < (is_gated(d) ? 3 : 2); i++) {
        ffnrt_ffn_matrix m = is_gated(d) ? ms[i] : i ? FFNRT_FFN_MATRIX_OUT : FFNRT_FFN_MATRIX_IN;
        const ffnrt_quant_layout *l = ffnrt_quant_layout_of(ffnrt_ffn_format(d, m));
        ops += (l ? l->dequant_ops : 0) * dm * h;
        n += dm * h;
    }
    return n > 0 ? ops / n : 0;
}

/* ------------------------------------------------------------------ cost */

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

uint64_t ffnrt_ffn_gradient_k(const ffnrt_ffn_desc *d, uint64_t n)
{
    return ffnrt_dtype_size(d->dtype) == 2 ? n + (n & 1u) : n;
}

int ffnrt_ffn_cost_model(const ffnrt_ffn_desc *desc, uint64_t t, int unfused, ffnrt_ffn_cost *out)
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
    /* As the device holds them: block formats as repacked (layout.c). */
    uint64_t matrices = gated ? add(add(matrix_bytes(desc, FFNRT_FFN_MATRIX_IN, h, d, &ok),
                                        matrix_bytes(desc, FFNRT_FFN_MATRIX_VALUE, h, d, &ok), &ok),
                                    matrix_bytes(desc, FFNRT_FFN_MATRIX_OUT, d, h, &ok), &ok)
                              : add(matrix_bytes(desc, FFNRT_FFN_MATRIX_IN, h, d, &ok),
                                    matrix_bytes(desc, FFNRT_FFN_MATRIX_OUT, d, h, &ok), &ok);
    out->weight_bytes = add(matrices, mul(biases, es, &ok), &ok);
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
    /* Training: the backward's products are two a matrix (dx and dW), the
     * bias gradients a sum a bias per token, the activation's (gating's)
     * gradient 2 (4) a hidden unit. */
    int tok = ok; /* the training figures saturate where they pass 64 bits: the forward's still hold */
    out->train_flops = add(add(out->flops, mul(mul(4, t, &tok), weights, &tok), &tok),
                           add(mul(t, biases, &tok), mul(th, gated ? 4 : 2, &tok), &tok), &tok);
    out->saved_bytes = mul(gated ? 3 : 2, act, &tok);
    /* ffn_train.c's buffers: x or dy transposed [d, kt], a hidden gradient
     * transposed [h, kt], a weight transposed [h, d], the hidden gradients
     * (2 gated), a row of ones [kt] (kt: t, made even in 16-bit storage).
     * In 16-bit storage with d or h odd, the input gradients' K is padded
     * too: the weight transposed is [h + 1, d + 1] and an output gradient
     * padded [kt, max(d, h) + 1] joins them. */
    uint64_t kt = ffnrt_ffn_gradient_k(desc, t);
    uint64_t pad = ffnrt_ffn_gradient_k(desc, d) != d || ffnrt_ffn_gradient_k(desc, h) != h;
    uint64_t wide = (d > h ? d : h) + 1;
    uint64_t backward =
        mul(es,
            add(add(add(mul(kt, d, &tok), mul(kt, h, &tok), &tok), mul(h + pad, d + pad, &tok), &tok),
                add(add(mul(th, gated ? 2 : 1, &tok), kt, &tok), mul(pad, mul(kt, wide, &tok), &tok), &tok), &tok),
            &tok);
    out->train_peak_bytes = add(add(mul(2, out->weight_bytes, &tok), mul(2, io, &tok), &tok),
                                add(out->saved_bytes, backward, &tok), &tok);
    /* FFNRT_GRADIENTS_RECOMPUTE: the first products, biases and the
     * activation (phi and the gating product) again. */
    out->recompute_flops = add(add(mul(mul(2, t, &tok), mul(up_rows, d, &tok), &tok), mul(t, bias * up_rows, &tok),
                                   &tok),
                               mul(th, gated ? 2 : 1, &tok), &tok);
    if (!tok)
        out->train_flops = out->saved_bytes = out->train_peak_bytes = out->recompute_flops = UINT64_MAX;
    if (ffnrt_ffn_quantized(desc)) /* inference-only */
        out->train_flops = out->saved_bytes = out->train_peak_bytes = out->recompute_flops = 0;
    return ok;
}

/* ----------------------------------------------------------------- tuning */

void ffnrt_ffn_tuning_key(const ffnrt_ffn_desc *d, uint64_t tokens, char *key, size_t cap)
{
    unsigned bucket = tokens <= 1 ? 1 : tokens <= 8 ? 8 : tokens <= 64 ? 64 : 512;
    char formats[48] = "";
    if (ffnrt_ffn_quantized(d)) /* weights in block formats: a class of their own */
        snprintf(formats, sizeof formats, "/w=%s,%s,%s", ffnrt_weight_format_name(ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_IN)),
                 ffnrt_weight_format_name(ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_VALUE)),
                 ffnrt_weight_format_name(ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_OUT)));
    snprintf(key, cap, "ffn/%s/%s/%s/%s/%lldx%lld%s/t%u", is_gated(d) ? "gated" : "dense",
             is_gated(d) ? ffnrt_glu_row_name(d->glu.kind) : ffnrt_op_row_of(d->activation.kind)->name,
             ffnrt_dtype_name(d->dtype), d->bias ? "bias" : "nobias", (long long)d->d_model, (long long)d->hidden,
             formats, bucket);
}

uint32_t ffnrt_ffn_matvec_tokens(const ffnrt_context *ctx, const ffnrt_ffn_desc *d)
{
    ffnrt_kernel_params kp;
    ffnrt_kernel_params_for(&ctx->info, &kp, NULL, 0);
    return d->matvec_max_tokens ? d->matvec_max_tokens : kp.matvec_tokens;
}

/* The kernels worth timing: on CPU devices the blocked one, and for
 * decode the matrix-vector one (the tiled kernel's barriers and shared
 * memory only cost there); on GPUs all three, matvec up to 4x its tokens a
 * dispatch (past that it rereads the weights too often). Plans list the
 * set ("ffn.candidates"), which ffnrt bench's regret rows time. */
int ffnrt_ffn_candidate(const ffnrt_context *ctx, ffnrt_product_kernel k, uint64_t tokens, const ffnrt_ffn_desc *d)
{
    int cpu = ctx->info.type == FFNRT_DEVICE_TYPE_CPU;
    uint64_t mv = ffnrt_ffn_matvec_tokens(ctx, d);
    if (k == FFNRT_KERNEL_MATVEC)
        return tokens <= (cpu ? mv : 4 * mv);
    return !cpu || k == FFNRT_KERNEL_BLOCKED;
}

/* ------------------------------------------------------------- the choice */

int ffnrt_choose_backward_fused(const ffnrt_context *ctx, const ffnrt_ffn_desc *d, ffnrt_plan *plan)
{
    /* Its own knob: desc.path is the inference forward's (the training
     * forward is always unfused). */
    const ffnrt_setting *s = ffnrt_setting_get(&ctx->settings, FFNRT_KNOB_FFN_BACKWARD, NULL, NULL);
    const char *what = is_gated(d) ? "the gating's gradients" : "the activation's gradient";
    if (s) {
        int fused = s->v[0] != FFNRT_FFN_PATH_UNFUSED;
        ffnrt_plan_add(plan, "ffn.training.backward", fused ? "fused" : "unfused", "forced by %s: %s %s",
                       why_set(s), what,
                       fused ? "in the epilogue of the product dy·W_out" : "in an element-wise pass after dy·W_out");
        return fused;
    }
    /* Measured on CPU drivers (one process alternating both, dense GELU
     * 768 x 3072 and SwiGLU 512 x 1376, 64 and 512 tokens, f32 and f16):
     * fused ran at 0.80-0.94x the unfused speed on PoCL and 0.90-1.10x on
     * lavapipe: PoCL runs the pass 8 work-items a vector, and the
     * register-blocked product's epilogue one element at a time
     * (docs/training.md, "The fused backward"). GPUs save the pass's
     * bytes and a dispatch. */
    int fused = ctx->info.type != FFNRT_DEVICE_TYPE_CPU;
    if (fused)
        ffnrt_plan_add(plan, "ffn.training.backward", "fused",
                       "%s in the epilogue of the product dy·W_out: the same arithmetic, without the element-wise "
                       "pass that reads dy·W_out back with the saved pre-activation%s and writes the result",
                       what, is_gated(d) ? "s" : "");
    else
        ffnrt_plan_add(plan, "ffn.training.backward", "unfused",
                       "%s in an element-wise pass after dy·W_out: measured on CPU drivers, the backward with "
                       "the fused epilogue ran at 0.80-0.94x this one's speed (PoCL) and 0.90-1.10x (lavapipe)",
                       what);
    return fused;
}

/* The path: a descriptor's, forced or environment's choice, else a tuned
 * winner for this device and shape class, else fused, which moves fewer
 * bytes in fewer kernels (ffnrt_ffn_cost's figures, quoted in the plan). */
static void choose_path(const ffnrt_context *ctx, const ffnrt_ffn_desc *d, uint64_t tokens,
                        const ffnrt_setting *tuned, ffnrt_ffn_choice *c, ffnrt_plan *plan)
{
    ffnrt_setting desc = {0};
    if (d->path != FFNRT_FFN_PATH_AUTO) {
        desc.source = FFNRT_FROM_DESC;
        desc.v[0] = (uint64_t)d->path;
        snprintf(desc.from, sizeof desc.from, "desc.path");
    }
    const ffnrt_setting *s = ffnrt_setting_get(&ctx->settings, FFNRT_KNOB_FFN_PATH, &desc, tuned);
    if (!ffnrt_ffn_fusable(d)) {
        /* (desc.path fused was refused when the layer was checked.) */
        c->unfused = 1;
        char asked[96] = "";
        if (s && s->v[0] == FFNRT_FFN_PATH_FUSED)
            snprintf(asked, sizeof asked, " (fused, asked by %s, cannot run)", why_set(s));
        ffnrt_plan_add(plan, "ffn.path", "unfused", "the gate is %s and the value %s: the fused kernel reads both in "
                       "one format%s", ffnrt_weight_format_name(ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_IN)),
                       ffnrt_weight_format_name(ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_VALUE)), asked);
        return;
    }
    /* The fused gated kernel binds both weights (and both biases, both
     * scales); a device whose binding limit is below that (4 on some older
     * mobile drivers) runs the two products apart, each within it. */
    uint32_t fused_bindings = ffnrt_gemm_forward_bindings(
        is_gated(d), d->bias, ffnrt_quant_layout_of(ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_IN)) != NULL, 0);
    if (is_gated(d) && ctx->limits.max_bindings && fused_bindings > ctx->limits.max_bindings) {
        c->unfused = 1;
        char asked[96] = "";
        if (s && s->v[0] == FFNRT_FFN_PATH_FUSED)
            snprintf(asked, sizeof asked, " (fused, asked by %s, cannot run)", why_set(s));
        ffnrt_plan_add(plan, "ffn.path", "unfused", "the fused gated kernel binds %u storage buffers and the device "
                       "allows %u (max_bindings)%s", fused_bindings, ctx->limits.max_bindings, asked);
        return;
    }
    if (s) {
        c->unfused = s->v[0] == FFNRT_FFN_PATH_UNFUSED;
        if (s->source == FFNRT_FROM_TUNED)
            ffnrt_plan_add(plan, "ffn.path", c->unfused ? "unfused" : "fused", "%s", tuned->text);
        else
            ffnrt_plan_add(plan, "ffn.path", c->unfused ? "unfused" : "fused", "forced by %s", why_set(s));
        return;
    }
    ffnrt_ffn_cost fused, unfused;
    ffnrt_ffn_cost_model(d, tokens, 0, &fused);
    ffnrt_ffn_cost_model(d, tokens, 1, &unfused);
    /* A measured exception, from the device's row of the kernel-shape
     * table: there, the blocked kernel's gate and value of block-format
     * weights together lose to the two products apart at prefill. */
    ffnrt_kernel_params kp;
    ffnrt_kernel_params_for(&ctx->info, &kp, NULL, 0);
    if (is_gated(d) && ffnrt_ffn_quantized(d) && tokens > 4 && c->kernel == FFNRT_KERNEL_BLOCKED &&
        kp.blocked_gated_quant_unfused) {
        c->unfused = 1;
        ffnrt_plan_add(plan, "ffn.path", "unfused",
                       "block-format gate and value above 4 tokens on this driver: its register-blocked kernel "
                       "runs the two products apart faster than together (measured 1.2-1.3x; kernel_params.inc), "
                       "though fused moves %.2f MB in %u kernels against %.2f MB in %u",
                       1e-6 * (double)fused.bytes_moved, fused.kernels, 1e-6 * (double)unfused.bytes_moved,
                       unfused.kernels);
        return;
    }
    /* Measured: at decode the fused kernel's one pass won on some CPUs
     * (1.07-1.18x on an AVX-512 EPYC) and lost on others (0.46-0.58x on an
     * AVX2 one, PoCL): calibration's figure for this device decides. */
    if (tokens <= 8 && ctx->calibration.valid && ctx->calibration.fused_speedup > 0 &&
        ctx->calibration.fused_speedup < 0.95) {
        c->unfused = 1;
        ffnrt_plan_add(plan, "ffn.path", "unfused", "decode: calibration measured the fused path at %.2fx the "
                       "unfused one's speed on this device (a SwiGLU layer at 1 token; fused from 0.95x), though "
                       "fused moves %.2f MB in %u kernels against %.2f MB in %u",
                       ctx->calibration.fused_speedup, 1e-6 * (double)fused.bytes_moved, fused.kernels,
                       1e-6 * (double)unfused.bytes_moved, unfused.kernels);
        return;
    }
    c->unfused = 0;
    ffnrt_plan_add(plan, "ffn.path", "fused",
                   "moves %.2f MB in %u kernels against %.2f MB in %u unfused, and writes no intermediate "
                   "(no tuning result for this shape class: ffnrt_ffn_autotune or FFNRT_AUTOTUNE=1 times both)",
                   1e-6 * (double)fused.bytes_moved, fused.kernels, 1e-6 * (double)unfused.bytes_moved,
                   unfused.kernels);
}

/* Which product kernel: a descriptor's, forced or environment's choice,
 * else a tuned winner; else on CPUs the register-blocked one, where shared
 * memory is ordinary memory and barriers cost (llvmpipe runs them as
 * coroutine switches); on GPUs the lane-reduced matrix-vector kernel or
 * the shared-memory tiled one, by the calibrated cost model, or by the
 * token count before calibration. */
static void choose_kernel(const ffnrt_context *ctx, const ffnrt_ffn_desc *d, uint64_t tokens,
                          const ffnrt_setting *tuned, ffnrt_ffn_choice *c, ffnrt_plan *plan)
{
    c->matvec_tokens = ffnrt_ffn_matvec_tokens(ctx, d);
    ffnrt_setting desc = {0};
    if (d->matmul != FFNRT_MATMUL_AUTO) {
        desc.source = FFNRT_FROM_DESC;
        desc.v[0] = d->matmul == FFNRT_MATMUL_MATVEC ? FFNRT_KERNEL_MATVEC : FFNRT_KERNEL_TILED;
        snprintf(desc.from, sizeof desc.from, "desc.matmul");
    }
    ffnrt_setting tuned_kernel;
    if (tuned) {
        tuned_kernel = *tuned;
        tuned_kernel.v[0] = tuned->v[1];
    }
    const ffnrt_setting *s =
        ffnrt_setting_get(&ctx->settings, FFNRT_KNOB_FFN_KERNEL, &desc, tuned ? &tuned_kernel : NULL);
    if (s) {
        c->kernel = (ffnrt_product_kernel)s->v[0];
        if (s->source == FFNRT_FROM_TUNED)
            ffnrt_plan_add(plan, "ffn.kernel", kernel_names[c->kernel], "%s", tuned->text);
        else
            ffnrt_plan_add(plan, "ffn.kernel", kernel_names[c->kernel], "forced by %s%s", why_set(s),
                           c->kernel == FFNRT_KERNEL_MATVEC && tokens > c->matvec_tokens ? " (tokens run in chunks)"
                                                                                         : "");
    } else if (ctx->info.type == FFNRT_DEVICE_TYPE_CPU) {
        c->kernel = FFNRT_KERNEL_BLOCKED;
        ffnrt_plan_add(plan, "ffn.kernel", "blocked",
                       "a CPU device: register blocks over the whole of K, no shared memory or barriers "
                       "(shared memory is ordinary memory there and barriers cost)");
    } else if (ctx->calibration.valid && ctx->calibration.copy_gbps > 0 && ctx->calibration.gemm_gflops > 0) {
        /* The cost model: matvec streams the weights once per chunk of
         * matvec_tokens tokens; tiled is bound by the GEMM rate or by one
         * pass over the weights, whichever is slower. */
        ffnrt_ffn_cost cost;
        ffnrt_ffn_cost_model(d, tokens, 0, &cost);
        double chunks = (double)((tokens + c->matvec_tokens - 1) / c->matvec_tokens);
        double stream_ms = 1e3 * (double)cost.weight_bytes / (1e9 * ctx->calibration.copy_gbps);
        double compute_ms = 1e3 * (double)cost.flops / (1e9 * ctx->calibration.gemm_gflops);
        /* Block formats: each pass over the weights dequantizes them again
         * (matvec once per chunk, tiled once per BM-token tile, 64 here),
         * counted as operations at the GEMM rate. */
        double weights = (double)(is_gated(d) ? 3 : 2) * (double)d->d_model * (double)d->hidden;
        double dq_ms = 1e3 * dequant_ops(d) * weights / (1e9 * ctx->calibration.gemm_gflops);
        double mv_compute = compute_ms + chunks * dq_ms, tl_compute = compute_ms + ceil((double)tokens / 64.0) * dq_ms;
        double mv_ms = chunks * stream_ms > mv_compute ? chunks * stream_ms : mv_compute;
        double tiled_ms = tl_compute > stream_ms ? tl_compute : stream_ms;
        c->kernel = mv_ms <= tiled_ms ? FFNRT_KERNEL_MATVEC : FFNRT_KERNEL_TILED;
        ffnrt_plan_add(plan, "ffn.kernel", kernel_names[c->kernel],
                       "cost model from this device's calibration (%.1f GB/s, %.1f GFLOP/s): matvec %.3f ms "
                       "(%.0f pass%s over the weights%s), tiled %.3f ms",
                       ctx->calibration.copy_gbps, ctx->calibration.gemm_gflops, mv_ms, chunks,
                       chunks == 1 ? "" : "es", dq_ms > 0 ? ", each dequantizing them" : "", tiled_ms);
    } else if (tokens <= c->matvec_tokens) {
        c->kernel = FFNRT_KERNEL_MATVEC;
        ffnrt_plan_add(plan, "ffn.kernel", "matvec",
                       "%llu tokens <= %u (matvec_max_tokens): bandwidth-bound, the weights are streamed once "
                       "(no calibration yet: ffnrt_context_calibrate gives the cost model)",
                       (unsigned long long)tokens, c->matvec_tokens);
    } else {
        c->kernel = FFNRT_KERNEL_TILED;
        ffnrt_plan_add(plan, "ffn.kernel", "tiled", "%llu tokens > %u (matvec_max_tokens): compute-bound, "
                       "shared-memory tiles reuse each weight across tokens (no calibration yet)",
                       (unsigned long long)tokens, c->matvec_tokens);
    }
}

/* "ffn.weights": how the weights are stored and the bytes a forward
 * streams, against the same layer in f16. */
static void plan_weights(const ffnrt_ffn_desc *d, uint64_t tokens, ffnrt_plan *plan)
{
    const ffnrt_ffn_matrix ms[3] = {FFNRT_FFN_MATRIX_IN, FFNRT_FFN_MATRIX_VALUE, FFNRT_FFN_MATRIX_OUT};
    static const char *const gated_names[3] = {"gate", "value", "down"}, *const dense_names[3] = {"up", "", "down"};
    char choice[96] = "", detail[320] = "";
    for (int i = 0; i < 3; i++) {
        if (i == 1 && !is_gated(d))
            continue;
        ffnrt_weight_format f = ffnrt_ffn_format(d, ms[i]);
        size_t len = strlen(choice);
        snprintf(choice + len, sizeof choice - len, "%s%s %s", len ? ", " : "", (is_gated(d) ? gated_names : dense_names)[i],
                 f ? ffnrt_weight_format_name(f) : ffnrt_dtype_name(d->dtype));
        const ffnrt_quant_layout *l = ffnrt_quant_layout_of(f);
        if (l && !strstr(detail, ffnrt_weight_format_name(f))) {
            uint64_t k = ffnrt_quant_layout_of(f)->k_multiple * 8; /* a row long enough to average the padding */
            double bpw = 4.0 * (double)(ffnrt_quant_code_words(f, k) + ffnrt_quant_scale_words(f, k)) / (double)k;
            uint32_t gg_bytes = 0, gg_elems = 0;
            ffnrt_weight_format_block(f, &gg_elems, &gg_bytes);
            len = strlen(detail);
            snprintf(detail + len, sizeof detail - len, "%s%s: GGUF's %u-byte blocks of %u repacked into %u-bit codes "
                     "and scales, %.4g B a weight (GGUF %.4g)", len ? "; " : "", ffnrt_weight_format_name(f), gg_bytes,
                     gg_elems, l->code_bits, bpw, (double)gg_bytes / gg_elems);
        }
    }
    ffnrt_ffn_cost cost, f16;
    ffnrt_ffn_desc half = *d;
    half.dtype = FFNRT_DTYPE_F16;
    half.format_in = half.format_value = half.format_out = FFNRT_WEIGHT_F32;
    ffnrt_ffn_cost_model(d, tokens, 0, &cost);
    ffnrt_ffn_cost_model(&half, tokens, 0, &f16);
    ffnrt_plan_add(plan, "ffn.weights", choice,
                   "%s%s%.3f MB of weights and biases streamed a pass (%.2fx fewer bytes than f16 weights' %.3f MB); "
                   "decode reads them once a forward",
                   detail, *detail ? "; dequantized in the product kernels (exactly, fp32 accumulation); " : "",
                   1e-6 * (double)cost.weight_bytes, (double)f16.weight_bytes / (double)cost.weight_bytes,
                   1e-6 * (double)f16.weight_bytes);
}

/* The integer path (gemm.kernel's X_Q8): a Q8_0, Q4_0, Q4_1, Q4_K or Q6_K product on the
 * register-blocked or matrix-vector kernel quantizes its input to 8-bit codes a block of 32
 * (shaders/quantize.kernel) and takes integer dot products of codes with
 * codes, scaled once a block. x's rounding adds error, |x - d q| <= d / 2
 * with d = max|x| / 127 over the block: ggml's Q8_0 rule, which its CPU and
 * Vulkan backends take by default. So: forced either way by ffn.int_dot;
 * never under the exact policy (the products then see x as given); under
 * balanced and fast, for each format where calibration measured it 5%
 * faster than the float path on this device by that format's figure
 * (ffnrt_ffn_int_dot_figure: measured on PoCL, Q6_K's integer path ran
 * 1.8x its float path where Q8_0's ran 0.9x, and lavapipe the other way
 * round for Q4_K). c->int_dot is the set of formats that take it. */
static unsigned int_dot_eligible(const ffnrt_ffn_desc *d)
{
    unsigned eligible = 0;
    const ffnrt_ffn_matrix ms[3] = {FFNRT_FFN_MATRIX_IN, FFNRT_FFN_MATRIX_VALUE, FFNRT_FFN_MATRIX_OUT};
    for (int i = 0; i < 3; i++) {
        ffnrt_weight_format f = ffnrt_ffn_format(d, ms[i]);
        if (ffnrt_ffn_int_dot_format(f))
            eligible |= 1u << f;
    }
    return eligible;
}

/* printf onto text[*len..cap), *len kept within it (a cut text stays terminated). */
static void text_add(char *text, size_t cap, size_t *len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void text_add(char *text, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n > 0)
        *len = *len + (size_t)n < cap ? *len + (size_t)n : cap - 1;
}

/* A tuning result for the shape (ffnrt_ffn_tune times the integer path on
 * and off where ffnrt_ffn_int_dot_tunable says) comes after the rules and
 * before calibration: the device-wide figure is one layer's, the tuned one
 * this shape's. */
static void choose_int_dot(const ffnrt_context *ctx, const ffnrt_ffn_desc *d, uint64_t tokens,
                           const ffnrt_setting *tuned, ffnrt_ffn_choice *c, ffnrt_plan *plan)
{
    unsigned eligible = int_dot_eligible(d);
    if (!eligible)
        return;
    static const char bound[] = "x's 8-bit codes err by at most half a step, max|x|/254 a block of 32, so a "
                                "product errs normwise by at most sqrt(32)/254 |W|_F |x| against the exact x's";
    if (c->kernel == FFNRT_KERNEL_TILED) {
        ffnrt_plan_add(plan, "ffn.int_dot", "off", "the tiled kernel dequantizes the weights to fp32 (the integer "
                       "path is the register-blocked and matrix-vector kernels')");
        return;
    }
    const ffnrt_setting *s = ffnrt_setting_get(&ctx->settings, FFNRT_KNOB_FFN_INT_DOT, NULL, NULL);
    if (s) {
        c->int_dot = s->v[0] != 0 ? eligible : 0u;
        ffnrt_plan_add(plan, "ffn.int_dot", c->int_dot ? "on" : "off", "forced by %s%s%s", why_set(s),
                       c->int_dot ? "; " : "", c->int_dot ? bound : "");
    } else if (tokens > 4) {
        /* Measured: at 64 tokens the float path's register blocks, each
         * weight dequantized once for 8 rows, ran 1.2-1.9x faster. */
        ffnrt_plan_add(plan, "ffn.int_dot", "off", "%llu tokens: the integer path is decode's (4 tokens or fewer); "
                       "above, each dequantized weight serves several rows", (unsigned long long)tokens);
    } else if (ctx->policy == FFNRT_PRECISION_EXACT) {
        ffnrt_plan_add(plan, "ffn.int_dot", "off", "precision exact: the products take x as given (the integer "
                       "path rounds it to 8 bits)");
    } else if (tuned && tuned->v[2]) {
        c->int_dot = tuned->v[2] == 2 ? eligible : 0u;
        ffnrt_plan_add(plan, "ffn.int_dot", c->int_dot ? "on" : "off", "%s%s%s", tuned->text, c->int_dot ? "; " : "",
                       c->int_dot ? bound : "");
    } else if (!ctx->calibration.valid) {
        ffnrt_plan_add(plan, "ffn.int_dot", "off", "not calibrated: the integer path runs where calibration "
                       "measures it faster (ffnrt_context_calibrate)");
    } else {
        /* Each measured figure the layer's formats follow, in enum order (a
         * layer has at most three formats, so the text fits). */
        const ffnrt_calibration *k = &ctx->calibration;
        char text[320] = "";
        size_t len = 0;
        for (int g = 0; g < FFNRT_WEIGHT_FORMAT_COUNT; g++) {
            unsigned follows = 0;
            for (int f = 0; f < FFNRT_WEIGHT_FORMAT_COUNT; f++)
                if ((eligible >> f & 1u) && ffnrt_ffn_int_dot_figure((ffnrt_weight_format)f) == (ffnrt_weight_format)g)
                    follows |= 1u << f;
            if (!follows)
                continue;
            int on = k->int_dot_speedup[g] >= 1.05;
            if (on)
                c->int_dot |= follows;
            text_add(text, sizeof text, &len, "%s%.2fx on a %s layer (%s", len ? ", " : "", k->int_dot_speedup[g],
                     ffnrt_format_traits_of((ffnrt_weight_format)g)->ggml_name, on ? "on" : "off");
            for (int f = 0; f < FFNRT_WEIGHT_FORMAT_COUNT; f++)
                if ((follows >> f & 1u) && f != g)
                    text_add(text, sizeof text, &len, "; %s follows it",
                             ffnrt_format_traits_of((ffnrt_weight_format)f)->ggml_name);
            text_add(text, sizeof text, &len, ")");
        }
        ffnrt_plan_add(plan, "ffn.int_dot", c->int_dot ? "on" : "off",
                       "calibration measured the integer path at decode against the float one: %s "
                       "(each on from 1.05x)%s%s",
                       text, c->int_dot ? "; " : "", c->int_dot ? bound : "");
    }
}

ffnrt_weight_format ffnrt_ffn_int_dot_figure(ffnrt_weight_format f)
{
    static const ffnrt_weight_format figure_of[FFNRT_WEIGHT_FORMAT_COUNT] = {
        [FFNRT_WEIGHT_Q8_0] = FFNRT_WEIGHT_Q8_0, [FFNRT_WEIGHT_Q4_0] = FFNRT_WEIGHT_Q4_0,
        [FFNRT_WEIGHT_Q4_1] = FFNRT_WEIGHT_Q4_0, [FFNRT_WEIGHT_Q4_K] = FFNRT_WEIGHT_Q4_K,
        [FFNRT_WEIGHT_Q6_K] = FFNRT_WEIGHT_Q6_K};
    return (unsigned)f < FFNRT_WEIGHT_FORMAT_COUNT ? figure_of[f] : FFNRT_WEIGHT_F32;
}

int ffnrt_ffn_int_dot_measured(ffnrt_weight_format f)
{
    return f != FFNRT_WEIGHT_F32 && ffnrt_ffn_int_dot_figure(f) == f;
}

int ffnrt_ffn_int_dot_format(ffnrt_weight_format f)
{
    return ffnrt_ffn_int_dot_figure(f) != FFNRT_WEIGHT_F32;
}

unsigned ffnrt_ffn_int_dot_tunable(const ffnrt_context *ctx, const ffnrt_ffn_desc *d, uint64_t tokens)
{
    if (tokens > 4 || ctx->policy == FFNRT_PRECISION_EXACT ||
        ffnrt_setting_get(&ctx->settings, FFNRT_KNOB_FFN_INT_DOT, NULL, NULL))
        return 0u;
    return int_dot_eligible(d);
}

ffnrt_status ffnrt_choose_ffn(const ffnrt_context *ctx, const ffnrt_ffn_desc *d, uint64_t tokens,
                              const ffnrt_smem_reserve *stats, ffnrt_ffn_choice *c, ffnrt_plan *plan,
                              ffnrt_error *err)
{
    memset(c, 0, sizeof *c);
    if (stats)
        c->stats = *stats;
    /* A stored tuning result, unless set aside (ffn.tuning off). */
    char key[160];
    ffnrt_ffn_tuning_key(d, tokens, key, sizeof key);
    const ffnrt_setting *off = ffnrt_setting_get(&ctx->settings, FFNRT_KNOB_FFN_TUNING, NULL, NULL);
    ffnrt_setting tuned = {0};
    int code;
    double ms[2];
    int have = !(off && off->v[0]) && ffnrt_tuning_get(ctx, key, &code, ms);
    if (have) {
        tuned.source = FFNRT_FROM_TUNED;
        tuned.v[0] = code / 4 % 2 ? FFNRT_FFN_PATH_UNFUSED : FFNRT_FFN_PATH_FUSED;
        tuned.v[1] = (uint64_t)(code % 4);
        tuned.v[2] = (uint64_t)(code / 8); /* the integer path: 0 not timed, 1 off, 2 on */
        snprintf(tuned.from, sizeof tuned.from, "tuned");
        snprintf(tuned.text, sizeof tuned.text,
                 "tuned for this device and shape class (%s): %.3f ms against %.3f ms for the next candidate", key,
                 ms[0], ms[1]);
    }
    if (plan)
        plan_weights(d, tokens, plan);
    /* The kernel first: it does not depend on the path, and the path's
     * measured exception for block formats depends on the kernel. */
    choose_kernel(ctx, d, tokens, have ? &tuned : NULL, c, plan);
    choose_path(ctx, d, tokens, have ? &tuned : NULL, c, plan);
    /* The arithmetic of the activation and gating: the layer's compute, by
     * the precision policy for AUTO; every kernel of either path computes
     * in it (the plan names it on each). */
    char why[160];
    ffnrt_compute compute = is_gated(d) ? d->glu.compute : d->activation.compute;
    ffnrt_status st = ffnrt_choose_compute(ctx, compute, d->dtype, "FFN layer", &c->fp16, why, sizeof why, err);
    if (st == FFNRT_OK)
        ffnrt_plan_add(plan, "ffn.arithmetic", c->fp16 ? "fp16" : "fp32",
                       "the activation%s in %s (%s); products accumulate in fp32 on every path",
                       is_gated(d) ? " and the gating product" : "", c->fp16 ? "fp16 registers" : "fp32", why);
    if (st == FFNRT_OK)
        choose_int_dot(ctx, d, tokens, have ? &tuned : NULL, c, plan);
    if (st == FFNRT_OK && c->kernel == FFNRT_KERNEL_TILED)
        st = ffnrt_choose_tiled(ctx, &c->stats, &c->tiled, plan, err);
    return st;
}
