/* Splits an element-wise pass into dispatches that fit the device. */
#include "ops/ops.h"

#include <string.h>

/* Elements per work-item in the element-wise kernels (ITEMS there). */
#define ITEMS_PER_ITEM 4u
#define PREFERRED_WORKGROUP 256u

static uint64_t round_down(uint64_t v, uint64_t m) { return v / m * m; }

ffnrt_status ffnrt_run_elementwise(ffnrt_context *ctx, const char *file, const char *defines,
                                   const ffnrt_tensor *x, ffnrt_tensor *y,
                                   const ffnrt_tensor *extra,
                                   const ffnrt_activation_params *params)
{
    const ffnrt_limits *lim = &ctx->limits;
    uint32_t wg = lim->max_workgroup_size < PREFERRED_WORKGROUP ? lim->max_workgroup_size : PREFERRED_WORKGROUP;
    uint32_t buffers = extra ? 3 : 2;
    ffnrt_bkernel *kernel;
    ffnrt_status st = ffnrt_context_kernel(ctx, file, "ffnrt_activation", defines, buffers,
                                           sizeof *params, wg, &kernel);
    if (st != FFNRT_OK)
        return st;
    ctx->last_op_ns = 0;
    uint64_t total = x->numel;
    if (total == 0)
        return FFNRT_OK;

    uint64_t elem = ffnrt_dtype_size(x->dtype);
    if (extra && extra->bytes > lim->max_buffer_range)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_LIMIT_EXCEEDED,
                          "%zu parameter bytes exceed the device's buffer range of %llu", extra->bytes,
                          (unsigned long long)lim->max_buffer_range);
    /* A dispatch covers at most one buffer range and the 2-D grid of
     * workgroups the device allows; later ranges start at aligned offsets. */
    uint64_t align = lim->buffer_offset_alignment > elem ? lim->buffer_offset_alignment / elem : 1;
    uint64_t per_group = (uint64_t)wg * ITEMS_PER_ITEM;
    uint64_t grid = (uint64_t)lim->max_workgroup_count[0] * lim->max_workgroup_count[1];
    uint64_t chunk = lim->max_buffer_range / elem;
    if (chunk > grid * per_group)
        chunk = grid * per_group;
    if (chunk > UINT32_MAX)
        chunk = UINT32_MAX;
    if (chunk < total) {
        chunk = round_down(chunk, align);
        if (chunk == 0)
            return ffnrt_fail(&ctx->error, FFNRT_ERROR_LIMIT_EXCEEDED,
                              "the device's limits leave no room for one aligned range of elements");
    }

    if ((st = ctx->ops->begin(ctx->dev, &ctx->error)) != FFNRT_OK)
        return st;
    for (uint64_t start = 0; start < total; start += chunk) {
        uint64_t n = total - start < chunk ? total - start : chunk;
        uint64_t groups = (n + per_group - 1) / per_group;
        uint32_t gx = (uint32_t)(groups < lim->max_workgroup_count[0] ? groups : lim->max_workgroup_count[0]);
        uint32_t grid_groups[2] = {gx, (uint32_t)((groups + gx - 1) / gx)};
        ffnrt_binding bind[3] = {
            {x->buffer, start * elem, n * elem},
            {y->buffer, start * elem, n * elem},
            {extra ? extra->buffer : NULL, 0, extra ? extra->bytes : 0},
        };
        ffnrt_activation_params p = *params;
        p.n = (uint32_t)n;
        p.base = (uint32_t)start;
        st = ctx->ops->dispatch(ctx->dev, kernel, bind, buffers, &p, grid_groups, &ctx->error);
        if (st != FFNRT_OK)
            break;
    }
    /* Submit even after a failed dispatch so the batch is closed. */
    ffnrt_status sst = ctx->ops->submit(ctx->dev, &ctx->last_op_ns, st == FFNRT_OK ? &ctx->error : NULL);
    return st != FFNRT_OK ? st : sst;
}
