/* The GEMM launcher: one product of an FFN layer, y = epilogue(x · Wᵀ), as
 * dispatches of shaders/gemm.kernel. It turns the dispatcher's choice
 * (kernel, tiles, arithmetic) and the product into build defines, splits
 * the product where a binding would pass the device's buffer range or the
 * groups its grid, and records the dispatches into the open batch; with a
 * plan, it only says what they would be (the plan and the run share this
 * code).
 *
 * Every projection is y = x·Wᵀ on K-contiguous operands. Large weights are
 * split by output features (rows of W) into dispatches whose bindings fit
 * the device's buffer range; each binding starts at an offset rounded down
 * to the device's alignment and the kernel is told where its first element
 * lies, so no split is ever refused for alignment.
 *
 * Weights in a block format (src/quant/layout.c) are two bindings, codes
 * and scales, split by rows alike; the kernel dequantizes them. */
#include "launch/launch.h"
#include "quant/quant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Element indices are 32-bit in the kernels: plan with at most 2 GiB a binding. */
#define MAX_PLANNED_RANGE (1ull << 31)

/* gemm.kernel's Params block. */
typedef struct gemm_params {
    uint32_t m, n, k, x_base, w_base, wv_base, y_base, ldy, bias_base, bv_base;
    float alpha, beta;
    uint32_t ws_base, wvs_base;
} gemm_params;

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

ffnrt_status ffnrt_launch_gemm(ffnrt_context *ctx, const ffnrt_ffn_choice *c, const ffnrt_gemm_launch *pr,
                               ffnrt_plan *plan, const char *name)
{
    const ffnrt_limits *lim = &ctx->limits;
    int gated = pr->gated, bias = pr->bias;
    int blocked = c->kernel == FFNRT_KERNEL_BLOCKED, matvec = c->kernel == FFNRT_KERNEL_MATVEC;
    uint32_t tokens = 0;
    ffnrt_matvec_shape mv = {0, 0};
    ffnrt_tiled_shape tl = c->tiled;
    ffnrt_defines defines = {0};
    char shape_text[160] = "";
    const ffnrt_quant_layout *ql = ffnrt_quant_layout_of(pr->w.format);
    if (gated && pr->wv.format != pr->w.format)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_UNSUPPORTED, "gemm.kernel: gate and value in two formats (%s, %s)",
                          ffnrt_weight_format_name(pr->w.format), ffnrt_weight_format_name(pr->wv.format));
    if (ql && pr->k % ql->k_multiple != 0)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH, "gemm.kernel: K %llu is not a multiple of %s's block",
                          (unsigned long long)pr->k, ffnrt_weight_format_name(pr->w.format));
    ffnrt_defines_storage(&defines, pr->dtype, ctx->half_conversion.kind);
    ffnrt_defines_weights(&defines, pr->w.format);
    ffnrt_defines_activation(&defines, pr->act);
    if (gated)
        ffnrt_defines_add(&defines, "#define GATED 1");
    if (bias)
        ffnrt_defines_add(&defines, "#define BIAS 1");
    /* The epilogue's activation and gating product in the layer's
     * arithmetic (a product with neither has none to choose). */
    int fp16 = c->fp16 && (gated || pr->act != FFNRT_ACT_COUNT);
    ffnrt_defines_arithmetic(&defines, fp16);
    uint64_t smem_floats, wg;
    uint64_t esize = ffnrt_dtype_size(pr->dtype);
    uint64_t align = lim->buffer_offset_alignment < 4 ? 4 : lim->buffer_offset_alignment;
    ffnrt_blocked_shape bs = {0, 0, 0, 0};
    ffnrt_kernel_params kp;
    ffnrt_kernel_params_for(&ctx->info, &kp, NULL, 0);
    /* Block formats on drivers that run a work-item as vector code: 16
     * weights a step (the prelude's 16-wide vectors, where it has them),
     * which dequantizing needs to keep up with the bytes. */
    int wide = blocked && ql && kp.blocked_wide_codes && pr->dtype != FFNRT_DTYPE_BF16;
    if (blocked) {
        /* One kernel for decode and prefill: the shape follows the rows. */
        bs = ffnrt_choose_blocked(ctx, &c->stats, pr->m, pr->n, gated, esize != 4, wide);
        /* Element offsets of x and W rows stay multiples of 4 (fp32: 16-byte
         * binding offsets) or 2 (16-bit words) when K is. */
        int aligned = esize == 4 ? pr->k % 4 == 0 && align % 16 == 0 : pr->k % 2 == 0 && align % 4 == 0;
        smem_floats = esize == 4 ? 1 : (uint64_t)bs.wg_n * bs.tn * bs.wg_m * bs.tm;
        wg = (uint64_t)bs.wg_n * bs.wg_m;
        ffnrt_defines_add(&defines, "#define BLOCKED %u", 1);
        if (kp.blocked_vec_acc)
            ffnrt_defines_add(&defines, "#define VEC_ACC 1");
        if (wide)
            ffnrt_defines_add(&defines, "#define WQ_WIDE 1");
        /* Elsewhere, at decode (few rows: registers for a group's sums),
         * each group's codes are dotted with x before they are scaled. */
        int sumx = ql && !wide && bs.tm <= 4;
        if (sumx)
            ffnrt_defines_add(&defines, "#define WQ_SUMX 1");
        if (aligned)
            ffnrt_defines_add(&defines, "#define ALIGNED4 %u", 1);
        ffnrt_defines_add(&defines, "#define TM %uu", bs.tm);
        ffnrt_defines_add(&defines, "#define TN %uu", bs.tn);
        ffnrt_defines_add(&defines, "#define WG_N %uu", bs.wg_n);
        ffnrt_defines_add(&defines, "#define WG_M %uu", bs.wg_m);
        snprintf(shape_text, sizeof shape_text, "blocked: %ux%u a work-item, %ux%u work-items%s%s", bs.tm, bs.tn,
                 bs.wg_n, bs.wg_m, aligned ? ", vector loads" : "",
                 wide ? ", 16 weights a step (16-wide vectors)" : sumx ? ", each group's codes dotted before scaling" : "");
    } else if (matvec) {
        tokens = (uint32_t)(pr->m < c->matvec_tokens ? pr->m : c->matvec_tokens);
        ffnrt_status mst = ffnrt_choose_matvec(ctx, &c->stats, tokens, &mv, &ctx->error);
        if (mst != FFNRT_OK)
            return mst;
        smem_floats = ffnrt_matvec_smem_floats(mv, tokens);
        wg = (uint64_t)mv.rows * mv.lanes;
        ffnrt_defines_add(&defines, "#define GEMV %u", 1);
        /* Quantized rows read x four elements at a time (K is a multiple of 32). */
        if (ql && (esize == 4 ? align % 16 == 0 : align % 4 == 0))
            ffnrt_defines_add(&defines, "#define ALIGNED4 %u", 1);
        ffnrt_defines_add(&defines, "#define TOKENS %uu", tokens);
        ffnrt_defines_add(&defines, "#define GEMV_ROWS %uu", mv.rows);
        ffnrt_defines_add(&defines, "#define GEMV_LANES %uu", mv.lanes);
        snprintf(shape_text, sizeof shape_text, "matvec: %u rows x %u lanes a group, %u tokens a dispatch", mv.rows,
                 mv.lanes, tokens);
    } else {
        smem_floats = ffnrt_tiled_smem_floats(tl);
        wg = (uint64_t)(tl.bm / tl.tm) * (tl.bn / tl.tn);
        ffnrt_defines_add(&defines, "#define BM %uu", tl.bm);
        ffnrt_defines_add(&defines, "#define BN %uu", tl.bn);
        ffnrt_defines_add(&defines, "#define BK %uu", tl.bk);
        ffnrt_defines_add(&defines, "#define TM %uu", tl.tm);
        ffnrt_defines_add(&defines, "#define TN %uu", tl.tn);
        snprintf(shape_text, sizeof shape_text, "tiled: %ux%ux%u, %ux%u a work-item", tl.bm, tl.bn, tl.bk, tl.tm,
                 tl.tn);
    }
    ffnrt_defines_add(&defines, "#define SMEM_FLOATS %uu", (unsigned)smem_floats);
    uint32_t buffers = 3 + (uint32_t)gated + (uint32_t)bias * (1 + (uint32_t)gated) + (ql ? 1 + (uint32_t)gated : 0);
    uint32_t bindings = buffers, params_size = sizeof(gemm_params);
    if (pr->stats) {
        /* The statistics variant: one more binding (after the scales), the
         * stats fields after the Params, and its rows a group (the token
         * norms' row sums). */
        uint32_t rows = blocked ? bs.wg_m * bs.tm : matvec ? tokens : tl.bm;
        ffnrt_stats_defines(pr->stats, &defines, buffers, (uint32_t)wg, 0, 0, 0, rows);
        bindings++;
        params_size += (uint32_t)sizeof(ffnrt_stats_params);
    }
    ffnrt_bkernel *kernel = NULL;
    ffnrt_status st = FFNRT_OK;
    if (defines.overflow)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "gemm.kernel: build defines too long");
    /* gemm.kernel, then the body of the level chosen (the define above
     * selects nothing more in it: each file holds one level). */
    const char *level = blocked ? "gemm_blocked.inc" : matvec ? "gemm_matvec.inc" : "gemm_tiled.inc";
    ffnrt_kernel_parts parts = defines.stats ? FFNRT_KERNEL_STATS : FFNRT_KERNEL_PLAIN;
    if (!plan)
        st = ffnrt_context_kernel(ctx, "gemm.kernel", level, "ffnrt_gemm", parts, defines.text, bindings, params_size,
                                  (uint32_t)wg, &kernel);
    else
        st = ffnrt_context_plan_kernel(ctx, "gemm.kernel", level, "ffnrt_gemm", parts, defines.text, (uint32_t)wg);
    if (st != FFNRT_OK)
        return st;

    /* Chunks: W rows (output features) and x rows (tokens) such that every
     * binding fits the buffer range (less the alignment slack) and the
     * workgroups fit the grid. */
    uint64_t range = lim->max_buffer_range < MAX_PLANNED_RANGE ? lim->max_buffer_range : MAX_PLANNED_RANGE;
    uint64_t usable_bytes = range > align + 4 ? range - align - 4 : 0; /* bytes a binding may span */
    uint64_t usable = usable_bytes / esize;                               /* elements of x or y */
    uint64_t n_per_group = blocked ? (uint64_t)bs.wg_n * bs.tn : matvec ? mv.rows : tl.bn;
    uint64_t m_per_group = blocked ? (uint64_t)bs.wg_m * bs.tm : tl.bm;
    /* W's bytes a row: its codes for a block format (its scales take fewer). */
    uint64_t code_words = ql ? ffnrt_quant_code_words(pr->w.format, pr->k) : 0;
    uint64_t scale_words = ql ? ffnrt_quant_scale_words(pr->w.format, pr->k) : 0;
    uint64_t w_row_bytes = ql ? 4 * code_words : pr->k * esize;
    uint64_t n_chunk = w_row_bytes ? usable_bytes / w_row_bytes : 0;
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
        snprintf(choice, sizeof choice, "%s%s%s; %llu dispatch%s", shape_text,
                 gated || pr->act != FFNRT_ACT_COUNT ? (fp16 ? ", fp16 epilogue" : ", fp32 epilogue") : "",
                 pr->stats ? ", statistics variant" : "", (unsigned long long)(splits_m * splits_n),
                 splits_m * splits_n > 1 ? "es" : "");
        ffnrt_plan_add(plan, what, choice,
                       "[%llu x %llu] x [%llu x %llu]^T%s%s%s%s%s; a dispatch takes at most %llu output features and "
                       "%llu tokens: bindings within the %llu B buffer range, groups within %u a dimension",
                       (unsigned long long)pr->m, (unsigned long long)pr->k, (unsigned long long)pr->n,
                       (unsigned long long)pr->k, ql ? ", " : "", ql ? ffnrt_weight_format_name(pr->w.format) : "",
                       ql ? (matvec || blocked ? " weights dequantized in registers" : " weights dequantized into the staged tiles")
                          : "",
                       gated ? ", gate and value in one kernel" : "",
                       bias ? ", bias in the epilogue" : "", (unsigned long long)n_chunk, (unsigned long long)m_chunk,
                       (unsigned long long)lim->max_buffer_range, lim->max_workgroup_count[0]);
        return FFNRT_OK;
    }

    for (uint64_t m0 = 0; m0 < pr->m && st == FFNRT_OK; m0 += m_chunk) {
        uint64_t mc = pr->m - m0 < m_chunk ? pr->m - m0 : m_chunk;
        for (uint64_t n0 = 0; n0 < pr->n && st == FFNRT_OK; n0 += n_chunk) {
            uint64_t nc = pr->n - n0 < n_chunk ? pr->n - n0 : n_chunk;
            gemm_params p = {(uint32_t)mc, (uint32_t)nc, (uint32_t)pr->k, 0, 0, 0, 0, (uint32_t)pr->n, 0, 0,
                                pr->alpha, pr->beta, 0, 0};
            /* W's words a row: its elements, or its code words (scales apart). */
            uint64_t wpr = ql ? code_words : pr->k;
            ffnrt_binding b[9];
            uint32_t nb = 0;
            b[nb++] = bind_elements(ctx, pr->x, m0 * pr->k, mc * pr->k, &p.x_base);
            b[nb++] = bind_elements(ctx, pr->w.w, (pr->w.w_row0 + n0) * wpr, nc * wpr, &p.w_base);
            b[nb++] = bind_elements(ctx, pr->y, m0 * pr->n + n0, (mc - 1) * pr->n + nc, &p.y_base);
            if (gated)
                b[nb++] = bind_elements(ctx, pr->wv.w, (pr->wv.w_row0 + n0) * wpr, nc * wpr, &p.wv_base);
            if (bias)
                b[nb++] = bind_elements(ctx, pr->w.b, pr->w.b_first + n0, nc, &p.bias_base);
            if (bias && gated)
                b[nb++] = bind_elements(ctx, pr->wv.b, pr->wv.b_first + n0, nc, &p.bv_base);
            if (ql)
                b[nb++] = bind_elements(ctx, pr->w.ws, (pr->w.w_row0 + n0) * scale_words, nc * scale_words, &p.ws_base);
            if (ql && gated)
                b[nb++] = bind_elements(ctx, pr->wv.ws, (pr->wv.w_row0 + n0) * scale_words, nc * scale_words,
                                        &p.wvs_base);
            struct {
                gemm_params g;
                ffnrt_stats_params s;
            } all = {p, {0}};
            if (pr->stats) {
                const ffnrt_tensor *sb = pr->stats->buffer;
                b[nb++] = (ffnrt_binding){sb->buffer, sb->offset, (sb->bytes + 3) & ~(uint64_t)3};
                all.s = ffnrt_stats_params_of(pr->stats, m0, n0);
            }
            uint32_t groups[2] = {(uint32_t)((nc + n_per_group - 1) / n_per_group),
                                  matvec ? 1 : (uint32_t)((mc + m_per_group - 1) / m_per_group)};
            st = ctx->ops->dispatch(ctx->dev, kernel, b, nb, &all, groups, &ctx->error);
        }
    }
    return st;
}

