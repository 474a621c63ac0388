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
    uint32_t add_bias, accumulate; /* parameters, not defines: one kernel for both of each */
} gemm_params;

ffnrt_binding ffnrt_bind_elements(const ffnrt_context *ctx, const ffnrt_tensor *t, uint64_t first, uint64_t count,
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

uint64_t ffnrt_binding_elements(const ffnrt_context *ctx, uint64_t esize)
{
    uint64_t align = ctx->limits.buffer_offset_alignment < 4 ? 4 : ctx->limits.buffer_offset_alignment;
    uint64_t range = ctx->limits.max_buffer_range;
    return range > align + 4 ? (range - align - 4) / esize : 0;
}

uint64_t ffnrt_xq_words(uint64_t rows, uint64_t k) { return rows * (k / 32) * FFNRT_XQ_BLOCK_WORDS; }

/* The integer path's input: x's rows m0.. (rows of them) quantized into
 * xq from its first word (shaders/quantize.kernel), in dispatches of at
 * most the grid's groups. */
static ffnrt_status quantize_rows(ffnrt_context *ctx, const ffnrt_gemm_launch *pr, int x_bytes, uint64_t m0,
                                  uint64_t rows)
{
    uint32_t wg = ctx->limits.max_workgroup_size < 64 ? ctx->limits.max_workgroup_size : 64;
    ffnrt_defines defines = {0};
    ffnrt_defines_storage(&defines, pr->dtype, ctx->half_conversion.kind);
    if (x_bytes) { /* quant.inc's XQ_BYTES: the codes in the weights' byte order */
        ffnrt_defines_add(&defines, "#define XQ_BYTES 1");
        const ffnrt_quant_layout *l = ffnrt_quant_layout_of(pr->w.format);
        if (l && l->code_bits == 4) /* 8-bit codes (Q8_0, Q6_K) come in element order */
            ffnrt_defines_add(&defines, "#define XQ_EVEN_ODD 1");
    }
    ffnrt_bkernel *kernel = NULL;
    ffnrt_status st = ffnrt_context_kernel(ctx, "quantize.kernel", NULL, "ffnrt_quantize_x", FFNRT_KERNEL_PLAIN,
                                           defines.text, 2, 3 * sizeof(uint32_t), wg, &kernel);
    uint64_t blocks = rows * (pr->k / 32), per_dispatch = (uint64_t)wg * ctx->limits.max_workgroup_count[0];
    for (uint64_t b0 = 0; b0 < blocks && st == FFNRT_OK; b0 += per_dispatch) {
        uint64_t nb = blocks - b0 < per_dispatch ? blocks - b0 : per_dispatch;
        uint32_t params[3] = {(uint32_t)nb, 0, 0};
        ffnrt_binding b[2] = {ffnrt_bind_elements(ctx, pr->x, m0 * pr->k + 32 * b0, 32 * nb, &params[1]),
                              ffnrt_bind_elements(ctx, pr->xq, FFNRT_XQ_BLOCK_WORDS * b0,
                                                    FFNRT_XQ_BLOCK_WORDS * nb, &params[2])};
        uint32_t groups[2] = {(uint32_t)((nb + wg - 1) / wg), 1};
        st = ctx->ops->dispatch(ctx->dev, kernel, b, 2, params, groups, &ctx->error);
    }
    return st;
}

/* gemm.kernel's build defines for a variant: the one place a variant
 * becomes text (and so the kernel cache's key). */
static void variant_defines(const ffnrt_context *ctx, const ffnrt_gemm_variant *v, ffnrt_defines *d)
{
    ffnrt_defines_storage(d, v->storage, ctx->half_conversion.kind);
    ffnrt_defines_weights(d, v->weights);
    ffnrt_defines_activation(d, v->act);
    if (v->gated)
        ffnrt_defines_add(d, "#define GATED 1");
    if (v->grad)
        ffnrt_defines_add(d, v->grad == FFNRT_GRAD_GLU ? "#define GLU_GRAD 1" : "#define ACT_GRAD 1");
    if (v->no_bias_bindings)
        ffnrt_defines_add(d, "#define NO_BIAS_BINDINGS 1");
    if (v->fixed_epilogue)
        ffnrt_defines_add(d, "#define FIXED_EPILOGUE 1%s%s", v->bias ? "\n#define BIAS 1" : "",
                          v->accumulate ? "\n#define ACCUMULATE 1" : "");
    ffnrt_defines_arithmetic(d, v->fp16_epilogue);
    if (v->x_q8)
        ffnrt_defines_add(d, "#define X_Q8 1");
    if (v->x_bytes)
        ffnrt_defines_add(d, "#define XQ_BYTES 1");
    if (v->x_bytes_plain)
        ffnrt_defines_add(d, "#define XQ_BYTE_DOT_PLAIN 1");
    if (v->x_packed)
        ffnrt_defines_add(d, "#define XQ_PACKED_DOT 1");
    if (v->quant_vec4)
        ffnrt_defines_add(d, "#define QUANT_VEC4 1");
    if (v->quant_w8)
        ffnrt_defines_add(d, "#define WIDE_WORDS 1\n#define QUANT_W8 1");
    if (v->views64)
        ffnrt_defines_add(d, "#define VIEWS_64 1");
    switch (v->level) {
    case FFNRT_KERNEL_BLOCKED:
        ffnrt_defines_add(d, "#define BLOCKED %u", 1);
        if (v->outer)
            ffnrt_defines_add(d, "#define OUTER 1");
        if (v->vec_acc)
            ffnrt_defines_add(d, "#define VEC_ACC 1");
        if (v->wide_codes)
            ffnrt_defines_add(d, "#define WQ_WIDE 1");
        if (v->sum_x)
            ffnrt_defines_add(d, "#define WQ_SUMX 1");
        if (v->aligned4)
            ffnrt_defines_add(d, "#define ALIGNED4 %u", 1);
        if (v->large_block)
            ffnrt_defines_add(d, "#define LARGE_BLOCK 1");
        if (v->k_tail)
            ffnrt_defines_add(d, "#define K_TAIL 1");
        ffnrt_defines_add(d, "#define TM %uu", v->blocked.tm);
        ffnrt_defines_add(d, "#define TN %uu", v->blocked.tn);
        ffnrt_defines_add(d, "#define WG_N %uu", v->blocked.wg_n);
        ffnrt_defines_add(d, "#define WG_M %uu", v->blocked.wg_m);
        break;
    case FFNRT_KERNEL_MATVEC:
        ffnrt_defines_add(d, "#define GEMV %u", 1);
        if (v->aligned4)
            ffnrt_defines_add(d, "#define ALIGNED4 %u", 1);
        ffnrt_defines_add(d, "#define TOKENS %uu", v->tokens);
        ffnrt_defines_add(d, "#define GEMV_ROWS %uu", v->matvec.rows);
        ffnrt_defines_add(d, "#define GEMV_LANES %uu", v->matvec.lanes);
        break;
    default:
        ffnrt_defines_add(d, "#define BM %uu", v->tiled.bm);
        ffnrt_defines_add(d, "#define BN %uu", v->tiled.bn);
        ffnrt_defines_add(d, "#define BK %uu", v->tiled.bk);
        ffnrt_defines_add(d, "#define TM %uu", v->tiled.tm);
        ffnrt_defines_add(d, "#define TN %uu", v->tiled.tn);
        break;
    }
    ffnrt_defines_add(d, "#define SMEM_FLOATS %uu", (unsigned)v->smem_floats);
}

/* The body file of each level (gemm.kernel's header says which holds what). */
static const char *const level_files[FFNRT_PRODUCT_KERNEL_COUNT] = {
    [FFNRT_KERNEL_BLOCKED] = "gemm_blocked.inc",
    [FFNRT_KERNEL_MATVEC] = "gemm_matvec.inc",
    [FFNRT_KERNEL_TILED] = "gemm_tiled.inc",
};

ffnrt_status ffnrt_launch_gemm(ffnrt_context *ctx, const ffnrt_ffn_choice *c, const ffnrt_gemm_launch *pr,
                               ffnrt_plan *plan, const char *name)
{
    const ffnrt_limits *lim = &ctx->limits;
    int gated = pr->gated, bias = pr->bias;
    /* A plan's tensors (NULL) would be new ones, which start buffers. */
    int codes_align32 = (!pr->w.w || pr->w.w->offset % 32 == 0) && (!gated || !pr->wv.w || pr->wv.w->offset % 32 == 0);
    const ffnrt_gemm_problem problem = {.m = pr->m,
                                        .n = pr->n,
                                        .k = pr->k,
                                        .dtype = pr->dtype,
                                        .format = pr->w.format,
                                        .value_format = pr->wv.format,
                                        .act = pr->act,
                                        .gated = pr->gated,
                                        .bias = pr->bias,
                                        .stats = pr->stats != NULL,
                                        .accumulate = pr->accumulate,
                                        .codes_align32 = codes_align32,
                                        .grad = pr->grad};
    ffnrt_gemm_variant v;
    ffnrt_status st = ffnrt_choose_gemm_variant(ctx, c, &problem, &v, &ctx->error);
    if (st != FFNRT_OK)
        return st;
    if (v.x_q8 && !plan && (!pr->xq || pr->xq->bytes / 4 < ffnrt_xq_words(pr->m, pr->k)))
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "gemm.kernel: the integer path without its scratch (an internal error)");
    int matvec = v.level == FFNRT_KERNEL_MATVEC;
    const ffnrt_quant_layout *ql = ffnrt_quant_layout_of(pr->w.format);
    uint64_t esize = ffnrt_dtype_size(pr->dtype);
    uint64_t align = lim->buffer_offset_alignment < 4 ? 4 : lim->buffer_offset_alignment;
    ffnrt_defines defines = {0};
    variant_defines(ctx, &v, &defines);
    if (pr->grad && !plan && (pr->y_first || !pr->pre || (pr->grad == FFNRT_GRAD_GLU && (!pr->value || !pr->y2))))
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT,
                          "gemm.kernel: the backward's epilogue without its operands (an internal error)");
    /* A forward product's bindings (its biases bound whether used or not,
     * but for no_bias_bindings), or x, W, y and the backward epilogue's
     * operands. */
    int bias_bound = !pr->grad && !v.no_bias_bindings;
    uint32_t buffers = pr->grad ? 3 + (pr->grad == FFNRT_GRAD_GLU ? 3 : 1)
                                : ffnrt_gemm_forward_bindings(gated, bias_bound, ql != NULL, 0);
    uint32_t bindings = buffers, params_size = sizeof(gemm_params);
    if (pr->stats) {
        /* The statistics variant: one more binding (after the scales), the
         * stats fields after the Params, and its rows a group (the token
         * norms' row sums). */
        ffnrt_stats_defines(pr->stats, &defines, buffers, v.workgroup, 0, 0, 0, v.rows_per_group);
        bindings++;
        params_size += (uint32_t)sizeof(ffnrt_stats_params);
    }
    ffnrt_bkernel *kernel = NULL;
    if (defines.overflow)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "gemm.kernel: build defines too long");
    /* gemm.kernel, then the body of the variant's level. */
    ffnrt_kernel_parts parts = defines.stats ? FFNRT_KERNEL_STATS : FFNRT_KERNEL_PLAIN;
    if (!plan)
        st = ffnrt_context_kernel(ctx, "gemm.kernel", level_files[v.level], "ffnrt_gemm", parts, defines.text, bindings,
                                  params_size, v.workgroup, &kernel);
    else
        st = ffnrt_context_plan_kernel(ctx, "gemm.kernel", level_files[v.level], "ffnrt_gemm", parts, defines.text,
                                       v.workgroup);
    if (st != FFNRT_OK)
        return st;

    /* Chunks: W rows (output features) and x rows (tokens) such that every
     * binding fits the buffer range (less the alignment slack) and the
     * workgroups fit the grid. */
    uint64_t range = lim->max_buffer_range < MAX_PLANNED_RANGE ? lim->max_buffer_range : MAX_PLANNED_RANGE;
    uint64_t usable_bytes = range > align + 4 ? range - align - 4 : 0; /* bytes a binding may span */
    uint64_t usable = usable_bytes / esize;                               /* elements of x or y */
    uint64_t n_per_group = v.columns_per_group, m_per_group = v.rows_per_group;
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
    uint64_t m_cap = matvec ? v.tokens : (uint64_t)lim->max_workgroup_count[1] * m_per_group;
    if (m_chunk > m_cap)
        m_chunk = m_cap;
    if (v.x_q8 && m_chunk > usable_bytes / (4 * ffnrt_xq_words(1, pr->k)))
        m_chunk = usable_bytes / (4 * ffnrt_xq_words(1, pr->k)); /* x's 8-bit blocks in one binding */
    if (n_chunk == 0 || m_chunk == 0)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_LIMIT_EXCEEDED,
                          "an FFN row of %llu %s elements does not fit the device's buffer range of %llu bytes",
                          (unsigned long long)(pr->k > pr->n ? pr->k : pr->n), ffnrt_dtype_name(pr->dtype),
                          (unsigned long long)lim->max_buffer_range);
    if (plan) {
        uint64_t splits_m = (pr->m + m_chunk - 1) / m_chunk, splits_n = (pr->n + n_chunk - 1) / n_chunk;
        char what[64], variant[384], choice[448];
        snprintf(what, sizeof what, "ffn.%s", name);
        ffnrt_gemm_variant_text(&v, variant, sizeof variant);
        snprintf(choice, sizeof choice, "%s; %llu dispatch%s%s", variant,
                 (unsigned long long)(splits_m * splits_n), splits_m * splits_n > 1 ? "es" : "",
                 v.x_q8 ? ", after quantize.kernel's" : "");
        ffnrt_plan_add(plan, what, choice,
                       "[%llu x %llu] x [%llu x %llu]^T%s; a dispatch takes at most %llu output features and %llu "
                       "tokens: bindings within the %llu B buffer range, groups within %u a dimension",
                       (unsigned long long)pr->m, (unsigned long long)pr->k, (unsigned long long)pr->n,
                       (unsigned long long)pr->k, gated ? ", gate and value in one kernel" : "",
                       (unsigned long long)n_chunk, (unsigned long long)m_chunk,
                       (unsigned long long)lim->max_buffer_range, lim->max_workgroup_count[0]);
        return FFNRT_OK;
    }

    for (uint64_t m0 = 0; m0 < pr->m && st == FFNRT_OK; m0 += m_chunk) {
        uint64_t mc = pr->m - m0 < m_chunk ? pr->m - m0 : m_chunk;
        if (v.x_q8)
            st = quantize_rows(ctx, pr, v.x_bytes, m0, mc);
        for (uint64_t n0 = 0; n0 < pr->n && st == FFNRT_OK; n0 += n_chunk) {
            uint64_t nc = pr->n - n0 < n_chunk ? pr->n - n0 : n_chunk;
            gemm_params p = {(uint32_t)mc, (uint32_t)nc, (uint32_t)pr->k, 0, 0, 0, 0, (uint32_t)pr->n, 0, 0,
                                pr->alpha, pr->beta, 0, 0, (uint32_t)bias, (uint32_t)pr->accumulate};
            /* W's words a row: its elements, or its code words (scales apart). */
            uint64_t wpr = ql ? code_words : pr->k;
            ffnrt_binding b[9];
            uint32_t nb = 0;
            if (v.x_q8)
                b[nb++] = ffnrt_bind_elements(ctx, pr->xq, 0, ffnrt_xq_words(mc, pr->k), &p.x_base);
            else
                b[nb++] = ffnrt_bind_elements(ctx, pr->x, m0 * pr->k, mc * pr->k, &p.x_base);
            b[nb++] = ffnrt_bind_elements(ctx, pr->w.w, (pr->w.w_row0 + n0) * wpr, nc * wpr, &p.w_base);
            b[nb++] = ffnrt_bind_elements(ctx, pr->y, pr->y_first + m0 * pr->n + n0, (mc - 1) * pr->n + nc, &p.y_base);
            if (gated)
                b[nb++] = ffnrt_bind_elements(ctx, pr->wv.w, (pr->wv.w_row0 + n0) * wpr, nc * wpr, &p.wv_base);
            /* Without a bias, x's binding stands in (never read). */
            if (bias_bound)
                b[nb++] = bias ? ffnrt_bind_elements(ctx, pr->w.b, pr->w.b_first + n0, nc, &p.bias_base) : b[0];
            if (bias_bound && gated)
                b[nb++] = bias ? ffnrt_bind_elements(ctx, pr->wv.b, pr->wv.b_first + n0, nc, &p.bv_base) : b[0];
            if (ql)
                b[nb++] = ffnrt_bind_elements(ctx, pr->w.ws, (pr->w.w_row0 + n0) * scale_words, nc * scale_words, &p.ws_base);
            if (ql && gated)
                b[nb++] = ffnrt_bind_elements(ctx, pr->wv.ws, (pr->wv.w_row0 + n0) * scale_words, nc * scale_words,
                                              &p.wvs_base);
            /* The backward epilogue's operands, bound from y's element
             * (y_first is 0), so their base is y's: the kernel indexes
             * them as it indexes y. */
            const ffnrt_tensor *like_y[3] = {pr->pre, pr->value, pr->y2};
            for (int g = 0; g < (pr->grad == FFNRT_GRAD_GLU ? 3 : pr->grad ? 1 : 0); g++) {
                uint32_t base;
                b[nb++] = ffnrt_bind_elements(ctx, like_y[g], m0 * pr->n + n0, (mc - 1) * pr->n + nc, &base);
                if (base != p.y_base)
                    return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT,
                                      "gemm.kernel: the backward's epilogue operands bound unlike y (an internal "
                                      "error)");
            }
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

/* The K-major product's variant and groups where the kernel takes its
 * shape in one dispatch, else 0. */
static int outer_shape(const ffnrt_context *ctx, const ffnrt_ffn_choice *c, uint64_t m, uint64_t n, uint64_t k,
                       ffnrt_dtype dtype, int accumulate, ffnrt_gemm_variant *v, uint32_t groups[2])
{
    const ffnrt_gemm_problem problem = {.m = m,
                                        .n = n,
                                        .k = k,
                                        .dtype = dtype,
                                        .act = FFNRT_ACT_COUNT,
                                        .accumulate = accumulate,
                                        .kmajor = 1};
    ffnrt_error ignored;
    if (ffnrt_choose_gemm_variant(ctx, c, &problem, v, &ignored) != FFNRT_OK || !v->outer)
        return 0;
    /* Whole vectors along the rows of x (M), W and y (N). */
    if (m % 4 != 0 || n % 4 != 0)
        return 0;
    uint64_t esize = ffnrt_dtype_size(dtype), room = ffnrt_binding_elements(ctx, esize);
    if (room > MAX_PLANNED_RANGE / esize)
        room = MAX_PLANNED_RANGE / esize; /* 32-bit element indices */
    if (m * k > room || k * n > room || m * n > room)
        return 0;
    uint64_t gx = (n + v->columns_per_group - 1) / v->columns_per_group;
    uint64_t gy = (m + v->rows_per_group - 1) / v->rows_per_group;
    if (gx > ctx->limits.max_workgroup_count[0] || gy > ctx->limits.max_workgroup_count[1])
        return 0;
    groups[0] = (uint32_t)gx;
    groups[1] = (uint32_t)gy;
    return 1;
}

int ffnrt_outer_shape_fits(const ffnrt_context *ctx, const ffnrt_ffn_choice *c, uint64_t m, uint64_t n, uint64_t k,
                           ffnrt_dtype dtype)
{
    ffnrt_gemm_variant v;
    uint32_t groups[2];
    return outer_shape(ctx, c, m, n, k, dtype, 0, &v, groups);
}

/* ... and its bindings and parameters: 0 also where a base is not a whole
 * vector. */
static int outer_setup(const ffnrt_context *ctx, const ffnrt_ffn_choice *c, const ffnrt_outer_launch *o,
                       ffnrt_gemm_variant *v, ffnrt_binding b[3], gemm_params *p, uint32_t groups[2])
{
    if (!outer_shape(ctx, c, o->m, o->n, o->k, o->dtype, o->accumulate, v, groups))
        return 0;
    *p = (gemm_params){(uint32_t)o->m, (uint32_t)o->n, (uint32_t)o->k, 0, 0, 0, 0, (uint32_t)o->n, 0, 0,
                       0.0f, 0.0f, 0, 0, 0, (uint32_t)o->accumulate};
    b[0] = ffnrt_bind_elements(ctx, o->x, o->x_first, o->m * o->k, &p->x_base);
    b[1] = ffnrt_bind_elements(ctx, o->w, o->w_first, o->k * o->n, &p->w_base);
    b[2] = ffnrt_bind_elements(ctx, o->y, o->y_first, o->m * o->n, &p->y_base);
    return (p->x_base | p->w_base | p->y_base) % 4 == 0;
}

int ffnrt_outer_fits(const ffnrt_context *ctx, const ffnrt_ffn_choice *c, const ffnrt_outer_launch *o)
{
    ffnrt_gemm_variant v;
    ffnrt_binding b[3];
    gemm_params p;
    uint32_t groups[2];
    return outer_setup(ctx, c, o, &v, b, &p, groups);
}

ffnrt_status ffnrt_launch_outer(ffnrt_context *ctx, const ffnrt_ffn_choice *c, const ffnrt_outer_launch *o)
{
    ffnrt_gemm_variant v;
    ffnrt_binding b[3];
    gemm_params p;
    uint32_t groups[2];
    if (!outer_setup(ctx, c, o, &v, b, &p, groups))
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT,
                          "gemm.kernel: a K-major product it does not take (an internal error)");
    ffnrt_defines defines = {0};
    variant_defines(ctx, &v, &defines);
    if (defines.overflow)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "gemm.kernel: build defines too long");
    ffnrt_bkernel *kernel = NULL;
    ffnrt_status st = ffnrt_context_kernel(ctx, "gemm.kernel", "gemm_outer.inc", "ffnrt_gemm", FFNRT_KERNEL_PLAIN,
                                           defines.text, 3, sizeof p, v.workgroup, &kernel);
    return st == FFNRT_OK ? ctx->ops->dispatch(ctx->dev, kernel, b, 3, &p, groups, &ctx->error) : st;
}
