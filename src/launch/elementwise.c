/* Splits an element-wise pass into dispatches that fit the device. */
#include "launch/launch.h"

#include <stdio.h>
#include <string.h>

/* The statistics variant's shape: words a work-item, whether a group's
 * token norms fit registers (1: its span lies in at most two tokens; 2:
 * in one, the span dividing the token, which needs no choice of token per
 * element), and the elements a group stashes bins for (0: counted in the
 * loop). */
typedef struct stats_shape {
    uint32_t items;
    int norms2;
    uint32_t stash;
} stats_shape;

static stats_shape choose_stats_shape(const ffnrt_context *ctx, const ffnrt_stats_run *r, uint32_t wg, uint64_t epw)
{
    /* More words a work-item than the plain kernel's (the device's
     * figure, kernel_params.inc): a group's reduction is spread over more
     * elements. */
    stats_shape s = {r->items ? r->items : FFNRT_EW_ITEMS, 0, 0};
    uint32_t one = s.items; /* a group within one token: its span divides the token */
    while (one > 1 && r->row_len % ((uint64_t)one * wg * epw) != 0)
        one /= 2;
    if ((r->roles & FFNRT_STATS_GATE) && r->rows && r->row_len % ((uint64_t)one * wg * epw) == 0) {
        s.items = one;
        s.norms2 = 2;
    } else if ((r->roles & FFNRT_STATS_GATE) && r->rows) {
        while (s.items > 1 && (uint64_t)s.items * wg * epw > r->row_len)
            s.items /= 2;
        s.norms2 = (uint64_t)s.items * wg * epw <= r->row_len;
        if (!s.norms2)
            s.items = r->items ? r->items : FFNRT_EW_ITEMS;
    }
    uint32_t span = s.items * wg * (uint32_t)epw;
    if (r->hist_stash && (r->roles & FFNRT_STATS_HIST) &&
        ffnrt_stats_smem_bytes(r, wg, s.norms2, span, 0) <= ctx->info.shared_memory_size)
        s.stash = span;
    return s;
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

void ffnrt_divisor(uint32_t d, uint32_t *magic, uint32_t *shift)
{
    uint32_t l = 0; /* ceil(log2(d)) */
    while (l < 32 && ((uint64_t)1 << l) < d)
        l++;
    *magic = (uint32_t)(((((uint64_t)1 << l) - d) << 32) / (d ? d : 1) + 1);
    *shift = l ? 1u | ((l - 1) << 1) : 0u;
}

/* An element-wise variant's build defines: the one place it becomes text
 * (and so the kernel cache's key). */
static void variant_defines(const ffnrt_context *ctx, const ffnrt_ew_variant *v, ffnrt_defines *d)
{
    const ffnrt_ew_op *o = &v->op;
    if (o->family == FFNRT_EW_ACTIVATION || o->family == FFNRT_EW_GLU)
        ffnrt_defines_activation(d, o->act);
    if (o->halves)
        ffnrt_defines_add(d, "#define HALVES 1");
    if (o->backward)
        ffnrt_defines_add(d, "#define BACKWARD 1");
    if (o->two_outputs)
        ffnrt_defines_add(d, "#define TWO_OUTPUTS 1");
    if (v->slope_lookup)
        ffnrt_defines_add(d, "#define %s 1", v->slope_lookup);
    if (o->copy_words)
        ffnrt_defines_add(d, "#define COPY_WORDS 1");
    if (o->family == FFNRT_EW_OPTIMIZER && o->update == FFNRT_OPTIMIZER_ADAMW)
        ffnrt_defines_add(d, "#define ADAMW 1");
    if (o->family == FFNRT_EW_OPTIMIZER && o->momentum)
        ffnrt_defines_add(d, "#define MOMENTUM 1");
    if (o->master)
        ffnrt_defines_add(d, "#define MASTER 1");
    if (v->whole_only)
        ffnrt_defines_add(d, "#define EW_WHOLE_ONLY 1");
    if (v->items != FFNRT_EW_ITEMS && !v->stats) /* storage.inc's default (statistics: STATS_ITEMS) */
        ffnrt_defines_add(d, "#define ITEMS %uu%s", v->items, v->items == 8 ? "\n#define WIDE_WORDS 1" : "");
    if (v->views64)
        ffnrt_defines_add(d, "#define VIEWS_64 1");
    ffnrt_defines_arithmetic(d, v->fp16);
    ffnrt_defines_storage(d, o->dtype, ctx->half_conversion.kind);
}

/* Whether every group of every dispatch is whole (words a multiple of the
 * group's), at `items` words a work-item: the last chunk's, and any
 * other's. */
static int all_groups_whole(const ffnrt_ew_launch *l, uint64_t chunk, uint64_t epw, uint64_t group_words)
{
    uint64_t last = l->rows % chunk ? l->rows % chunk : chunk;
    uint64_t first_n = chunk * l->row_elems, last_n = last * l->row_elems;
    return l->rows > 0 && first_n % (group_words * epw) == 0 && last_n % (group_words * epw) == 0;
}

/* On drivers that run both sides of a uniform branch (llvmpipe masks its
 * SIMD lanes instead; kernel_params.inc's masked_branches), a launch whose
 * groups are all whole takes a variant without the bounds tests
 * (storage.inc's EW_WHOLE_ONLY), and the kernels with an 8-word form
 * (optimizer.kernel's, fp32 parameters without a master copy) take 8
 * words a work-item through 64-bit views where the device has them
 * (wide_words). Not for PReLU's slope lookups or the statistics
 * variant, whose loops branch by group. */
static void choose_whole_groups(const ffnrt_context *ctx, const ffnrt_ew_launch *l, uint64_t chunk, uint64_t epw,
                                ffnrt_ew_variant *v)
{
    ffnrt_kernel_params kp;
    ffnrt_kernel_params_for(&ctx->info, &kp, NULL, 0);
    if (!kp.masked_branches || l->stats || v->slope_lookup || v->row_multiple > 1 || chunk == 0)
        return;
    const ffnrt_ew_op *o = &v->op;
    int wide_form = o->family == FFNRT_EW_OPTIMIZER && o->dtype == FFNRT_DTYPE_F32 && !o->master;
    /* The views' 32-byte vectors start where the bindings do (a chunk's
     * offset is a whole number of groups past its tensor's). */
    for (uint32_t b = 0; b < l->binding_count; b++)
        wide_form = wide_form && l->bindings[b].tensor->offset % 32 == 0;
    if (kp.wide_words && ctx->limits.int64_words && wide_form &&
        all_groups_whole(l, chunk, epw, (uint64_t)v->workgroup * 8)) {
        v->items = 8, v->whole_only = 1;
    } else if (all_groups_whole(l, chunk, epw, (uint64_t)v->workgroup * v->items)) {
        v->whole_only = 1;
    }
}

ffnrt_status ffnrt_run_elementwise(ffnrt_context *ctx, const ffnrt_ew_launch *l)
{
    const ffnrt_limits *lim = &ctx->limits;
    ffnrt_ew_variant v = *l->variant;
    const char *file = ffnrt_ew_family_file(v.op.family);
    uint32_t wg = v.workgroup;
    uint64_t esize = ffnrt_dtype_size(v.op.dtype);
    uint64_t epw = esize == 4 ? 1 : 2; /* elements per 32-bit word */
    ffnrt_defines defines = {0};
    uint32_t bindings = l->binding_count, params_size = l->params_size;
    if (l->stats) {
        stats_shape ss = choose_stats_shape(ctx, l->stats, wg, epw);
        v.stats = 1, v.items = ss.items, v.stats_norms2 = ss.norms2, v.stats_stash = ss.stash;
        ffnrt_stats_defines(l->stats, &defines, l->binding_count, wg, ss.items, ss.norms2, ss.stash, 0);
        bindings++;
        params_size += (uint32_t)sizeof(ffnrt_stats_params);
    }

    /* Rows per dispatch: each ranged binding must fit the buffer range and
     * start at an aligned offset; the output words must fit the 2-D grid of
     * workgroups; element indices stay 32-bit. An empty launch builds its
     * kernel (the general one) and dispatches nothing. */
    int empty = l->rows == 0 || l->row_elems == 0;
    uint64_t align = lim->buffer_offset_alignment < 4 ? 4 : lim->buffer_offset_alignment;
    uint64_t per_group = (uint64_t)wg * v.items;
    uint64_t grid = (uint64_t)lim->max_workgroup_count[0] * lim->max_workgroup_count[1];
    uint64_t max_rows = empty ? 0 : (grid * per_group * epw) / l->row_elems;
    if (!empty && max_rows > UINT32_MAX / l->row_elems)
        max_rows = UINT32_MAX / l->row_elems;
    uint64_t row_step = 1;
    for (uint32_t b = 0; b < l->binding_count && !empty; b++) {
        const ffnrt_ew_binding *eb = &l->bindings[b];
        if (eb->per_row == 0) {
            if (eb->tensor->bytes > lim->max_buffer_range)
                return ffnrt_fail(&ctx->error, FFNRT_ERROR_LIMIT_EXCEEDED,
                                  "a %zu-byte parameter tensor exceeds the device's buffer range of %llu bytes",
                                  eb->tensor->bytes, (unsigned long long)lim->max_buffer_range);
            continue;
        }
        uint64_t row_bytes = eb->per_row * esize;
        uint64_t fit = lim->max_buffer_range / row_bytes;
        if (fit < max_rows)
            max_rows = fit;
        uint64_t step = align / gcd64(align, row_bytes);
        row_step = row_step / gcd64(row_step, step) * step;
    }
    if (v.row_multiple > 1) /* the kernel's lookups assume it (PReLU's slope units) */
        row_step = row_step / gcd64(row_step, v.row_multiple) * v.row_multiple;
    if (v.stats_norms2 == 2) {
        /* Groups within one token: every dispatch starts at a token. */
        uint64_t step = l->stats->row_len / gcd64(l->stats->row_len, l->row_elems);
        row_step = row_step / gcd64(row_step, step) * step;
    }
    uint64_t chunk = l->rows;
    if (!empty && chunk > max_rows) {
        chunk = max_rows / row_step * row_step;
        if (chunk == 0)
            return ffnrt_fail(&ctx->error, FFNRT_ERROR_LIMIT_EXCEEDED,
                              "rows of %llu elements do not fit the device's buffer range (%llu bytes), "
                              "offset alignment (%llu) and workgroup counts",
                              (unsigned long long)l->row_elems, (unsigned long long)lim->max_buffer_range,
                              (unsigned long long)align);
    }
    if (!empty)
        choose_whole_groups(ctx, l, chunk, epw, &v);
    per_group = (uint64_t)wg * v.items;

    variant_defines(ctx, &v, &defines);
    if (defines.overflow)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: build defines too long", file);
    ffnrt_bkernel *kernel = NULL;
    ffnrt_status st = FFNRT_OK;
    ffnrt_kernel_parts parts = defines.stats ? FFNRT_KERNEL_STATS : FFNRT_KERNEL_PLAIN;
    if (!ctx->plan_sink)
        st = ffnrt_context_kernel(ctx, file, NULL, "ffnrt_elementwise", parts, defines.text, bindings, params_size, wg,
                                  &kernel);
    else
        st = ffnrt_context_plan_kernel(ctx, file, NULL, "ffnrt_elementwise", parts, defines.text, wg);
    if (st != FFNRT_OK)
        return st;
    ctx->last_op_ns = 0;
    if (empty)
        return FFNRT_OK;

    if (ctx->plan_sink) {
        char choice[320];
        ffnrt_ew_variant_text(&v, choice, sizeof choice);
        ffnrt_plan_add(ctx->plan_sink, "kernel", choice,
                       "element-wise: %u work-items (the device allows %u) of %u 32-bit words each (strided by the "
                       "group on OpenCL, where CPU drivers vectorise across work-items; consecutive on Vulkan), so "
                       "16-bit values are read and written as whole words and converted as the f16 conversion "
                       "line says (bf16 by bit arithmetic; vstore_half and packHalf2x16 measured slower on the CPU "
                       "drivers)%s",
                       wg, lim->max_workgroup_size, v.items,
                       l->stats ? "; with statistics, more words a group (strided) to spread its reduction" : "");
        uint64_t dispatches = (l->rows + chunk - 1) / chunk;
        snprintf(choice, sizeof choice, "%llu dispatch%s of up to %llu elements", (unsigned long long)dispatches,
                 dispatches == 1 ? "" : "es", (unsigned long long)(chunk * l->row_elems));
        ffnrt_plan_add(ctx->plan_sink, "dispatches", choice,
                       "every binding within the %llu B buffer range at %llu-byte aligned offsets, groups within "
                       "%u x %u, element indices within 32 bits",
                       (unsigned long long)lim->max_buffer_range, (unsigned long long)align,
                       lim->max_workgroup_count[0], lim->max_workgroup_count[1]);
        return FFNRT_OK;
    }
    if ((st = ffnrt_batch_begin(ctx)) != FFNRT_OK)
        return st;
    ffnrt_binding bind[8];
    unsigned char params[256];
    if (params_size > sizeof params)
        return ffnrt_batch_end(ctx, ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: Params too large",
                                               file), &ctx->last_op_ns);
    for (uint64_t row = 0; row < l->rows && st == FFNRT_OK; row += chunk) {
        uint64_t rows = l->rows - row < chunk ? l->rows - row : chunk;
        uint64_t n = rows * l->row_elems;
        for (uint32_t b = 0; b < l->binding_count; b++) {
            const ffnrt_ew_binding *eb = &l->bindings[b];
            uint64_t offset = eb->tensor->offset + (eb->per_row ? row * eb->per_row * esize : 0);
            uint64_t size = eb->per_row ? rows * eb->per_row * esize : eb->tensor->bytes;
            size = (size + 3) & ~(uint64_t)3; /* whole words; buffers are padded to them */
            bind[b] = (ffnrt_binding){eb->tensor->buffer, offset, size ? size : 4};
        }
        uint32_t head[2] = {(uint32_t)n, (uint32_t)(row * l->row_elems)};
        memcpy(l->params, head, sizeof head);
        memcpy(params, l->params, l->params_size);
        if (l->stats) {
            const ffnrt_tensor *sb = l->stats->buffer;
            bind[l->binding_count] = (ffnrt_binding){sb->buffer, sb->offset, (sb->bytes + 3) & ~(uint64_t)3};
            ffnrt_stats_params sp = ffnrt_stats_params_of(l->stats, 0, 0);
            memcpy(params + l->params_size, &sp, sizeof sp);
        }
        uint64_t words = (n + epw - 1) / epw;
        uint64_t groups = (words + per_group - 1) / per_group;
        uint32_t gx = (uint32_t)(groups < lim->max_workgroup_count[0] ? groups : lim->max_workgroup_count[0]);
        uint32_t grid_groups[2] = {gx, (uint32_t)((groups + gx - 1) / gx)};
        st = ctx->ops->dispatch(ctx->dev, kernel, bind, bindings, params, grid_groups, &ctx->error);
    }
    if (st == FFNRT_OK && l->stats)
        st = ffnrt_stats_record_finish(ctx, l->stats);
    /* Submit even after a failed dispatch so the batch is closed. */
    return ffnrt_batch_end(ctx, st, &ctx->last_op_ns);
}

