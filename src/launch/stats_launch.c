/* The statistics variant of a launch: its defines, its Params fields, its
 * shared memory, and the finish pass. ops/stats.c decides what a call's
 * kernels compute; the launchers (elementwise.c, gemm_launch.c) call these
 * to turn it into the kernel's STATS build and arguments. */
#include "launch/launch.h"
#include "../../shaders/stats_layout.h"

#include <string.h>
#include <math.h>

static uint32_t tree_top(uint32_t wg)
{
    uint32_t p = 1;
    while (p < wg)
        p *= 2;
    return p / 2;
}

void ffnrt_stats_defines(const ffnrt_stats_run *r, ffnrt_defines *d, uint32_t bindings, uint32_t wg, uint32_t items,
                         int norms2, uint32_t stash, uint32_t gemm_rows)
{
    d->stats = 1;
    ffnrt_defines_add(d, "#define STATS 1");
    ffnrt_defines_add(d, "#define STATS_BINDING %u", bindings);
    if (r->serial)
        ffnrt_defines_add(d, "#define STATS_SERIAL 1");
    if (r->serial && r->hist_stash) /* no atomic before the barrier: stats.inc's STATS_RARE_SLOTS */
        ffnrt_defines_add(d, "#define STATS_RARE_SLOTS 1");
    (void)wg;
    if (items)
        ffnrt_defines_add(d, "#define STATS_ITEMS %uu", items);
    if (r->roles & FFNRT_STATS_INPUTS)
        ffnrt_defines_add(d, "#define STATS_COUNT_INPUTS 1");
    if (r->roles & FFNRT_STATS_PRE)
        ffnrt_defines_add(d, "#define STATS_ACTIVATION 1");
    if ((r->roles & FFNRT_STATS_PRE) && (r->roles & FFNRT_STATS_HIST))
        ffnrt_defines_add(d, "#define STATS_HIST 1");
    if ((r->roles & FFNRT_STATS_GATE) && (r->roles & FFNRT_STATS_HIST))
        ffnrt_defines_add(d, "#define STATS_GATE_HIST 1");
    if (gemm_rows) {
        ffnrt_defines_add(d, "#define STATS_GEMM 1");
        if ((r->roles & FFNRT_STATS_GATE) && r->rows) {
            ffnrt_defines_add(d, "#define STATS_GEMM_NORMS 1");
            ffnrt_defines_add(d, "#define STATS_GROUP_ROWS %uu", gemm_rows);
        }
    } else if ((r->roles & FFNRT_STATS_GATE) && r->rows) {
        ffnrt_defines_add(d, norms2 ? "#define STATS_NORMS2 1" : "#define STATS_NORMS 1");
        if (norms2 == 2)
            ffnrt_defines_add(d, "#define STATS_NORMS1 1");
    }
    if (r->roles & FFNRT_STATS_HIDDEN)
        ffnrt_defines_add(d, "#define STATS_HIDDEN 1");
    else if (r->roles & FFNRT_STATS_OUTPUT)
        ffnrt_defines_add(d, "#define STATS_COUNT_OUTPUTS 1");
    if (r->roles & FFNRT_STATS_FEATURES)
        ffnrt_defines_add(d, "#define STATS_FEATURES 1");
    if (stash && r->serial) {
        ffnrt_defines_add(d, "#define STATS_HIST_STASH 1");
        ffnrt_defines_add(d, "#define STATS_STASH %uu", stash);
    }
}

/* The bits of |x| from which x is saturated (|x| > cut): the next float
 * above the cut; 0 for a negative cut (all), past +inf for +inf (none). */
static uint32_t saturated_from(float cut)
{
    if (cut < 0)
        return 0;
    if (isinf(cut) || isnan(cut))
        return 0x7f800001u;
    uint32_t b;
    memcpy(&b, &cut, sizeof b);
    return b + 1;
}

ffnrt_stats_params ffnrt_stats_params_of(const ffnrt_stats_run *r, uint64_t row0, uint64_t col0)
{
    ffnrt_stats_params p = {r->rows_at, r->feat_at, (uint32_t)row0, (uint32_t)col0, (uint32_t)r->row_len, r->bins,
                            r->lo, r->scale, r->gate_lo, r->gate_scale, 0x80000000u - saturated_from(r->saturation_cut)};
    return p;
}

uint64_t ffnrt_stats_smem_bytes(const ffnrt_stats_run *r, uint32_t wg, int norms2, uint32_t stash, uint32_t gemm_rows)
{
    uint64_t slots = (norms2 ? 6 : 2) + (r->serial && r->hist_stash ? 8 : 3); /* stats.inc's ST_SLOTS */
    uint64_t words = slots * wg + (r->serial ? 0 : slots * 16);
    int hist = (r->roles & FFNRT_STATS_PRE) && (r->roles & FFNRT_STATS_HIST);
    int ghist = (r->roles & FFNRT_STATS_GATE) && (r->roles & FFNRT_STATS_HIST);
    uint64_t subhists = stash && r->serial ? 4 : 1; /* stats.inc's ST_SUBHISTS */
    words += (uint64_t)(hist + ghist) * (subhists * (STATS_HIST_WORDS + 1) + (r->serial ? stash : 0));
    if (gemm_rows && (r->roles & FFNRT_STATS_GATE) && r->rows)
        words += 2ull * gemm_rows;
    return 4 * words;
}

ffnrt_smem_reserve ffnrt_stats_gemm_smem(const ffnrt_stats_run *r)
{
    uint64_t base = ffnrt_stats_smem_bytes(r, 0, 0, 0, 0);
    ffnrt_smem_reserve out = {(uint32_t)base, (uint32_t)(ffnrt_stats_smem_bytes(r, 1, 0, 0, 0) - base),
                              (uint32_t)(ffnrt_stats_smem_bytes(r, 0, 0, 0, 1) - base)};
    return out;
}

/* shaders/stats.kernel's Params. */
typedef struct finish_params {
    uint32_t rows, rows_at;
} finish_params;

#define FINISH_WORKGROUP 64u

ffnrt_status ffnrt_stats_record_finish(ffnrt_context *ctx, const ffnrt_stats_run *r)
{
    if (!r || !r->rows || !(r->roles & FFNRT_STATS_GATE))
        return FFNRT_OK;
    uint32_t wg = ctx->limits.max_workgroup_size < FINISH_WORKGROUP ? ctx->limits.max_workgroup_size : FINISH_WORKGROUP;
    ffnrt_defines defines = {0};
    ffnrt_defines_storage(&defines, FFNRT_DTYPE_F32, FFNRT_HALF_CONVERSION_BITS); /* storage.inc wants one */
    ffnrt_defines_add(&defines, "#define STATS_TREE_TOP %uu", tree_top(wg));
    ffnrt_bkernel *kernel = NULL;
    ffnrt_status st = ffnrt_context_kernel(ctx, "stats.kernel", NULL, "ffnrt_stats_finish", FFNRT_KERNEL_STATS_LAYOUT,
                                           defines.text, 1,
                                           sizeof(finish_params), wg, &kernel);
    if (st != FFNRT_OK)
        return st;
    finish_params p = {(uint32_t)r->rows, r->rows_at};
    ffnrt_binding b = {r->buffer->buffer, r->buffer->offset, (r->buffer->bytes + 3) & ~(uint64_t)3};
    uint32_t groups[2] = {1, 1};
    return ctx->ops->dispatch(ctx->dev, kernel, &b, 1, &p, groups, &ctx->error);
}
