/* The optimizer's norm pass (shaders/optimizer.kernel built with SUMSQ):
 * each of `groups` groups writes its sum of squares of a gradient's
 * elements to partials[out_at + group]. */
#include "launch/launch.h"

#define SUMSQ_WORKGROUP 256u

static uint32_t tree_top(uint32_t wg)
{
    uint32_t p = 1;
    while (p < wg)
        p *= 2;
    return p / 2;
}

uint32_t ffnrt_sumsq_groups(const ffnrt_context *ctx)
{
    /* Enough groups to spread one tensor over a GPU's compute units, few
     * enough that the host's sum stays small. */
    uint32_t g = 64;
    return g < ctx->limits.max_workgroup_count[0] ? g : ctx->limits.max_workgroup_count[0];
}

ffnrt_status ffnrt_launch_sumsq(ffnrt_context *ctx, const ffnrt_tensor *g, const ffnrt_tensor *partials,
                                uint32_t out_at)
{
    if (g->bytes > ctx->limits.max_buffer_range || g->numel > UINT32_MAX)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_LIMIT_EXCEEDED,
                          "a %zu-byte gradient passes the device's buffer range of %llu bytes (its norm reads it "
                          "in one binding)",
                          g->bytes, (unsigned long long)ctx->limits.max_buffer_range);
    uint32_t wg = ctx->limits.max_workgroup_size < SUMSQ_WORKGROUP ? ctx->limits.max_workgroup_size : SUMSQ_WORKGROUP;
    ffnrt_defines defines = {0};
    ffnrt_defines_add(&defines, "#define SUMSQ 1");
    ffnrt_defines_add(&defines, "#define TREE_TOP %uu", tree_top(wg));
    ffnrt_defines_storage(&defines, g->dtype, ctx->half_conversion.kind);
    ffnrt_bkernel *kernel = NULL;
    uint32_t params[2] = {(uint32_t)g->numel, out_at};
    ffnrt_status st = ffnrt_context_kernel(ctx, "optimizer.kernel", NULL, "ffnrt_sumsq", FFNRT_KERNEL_PLAIN,
                                           defines.text, 2, sizeof params, wg, &kernel);
    if (st != FFNRT_OK)
        return st;
    ffnrt_binding b[2] = {{g->buffer, g->offset, (g->bytes + 3) & ~(uint64_t)3},
                          {partials->buffer, partials->offset, (partials->bytes + 3) & ~(uint64_t)3}};
    uint32_t groups[2] = {ffnrt_sumsq_groups(ctx), 1};
    return ctx->ops->dispatch(ctx->dev, kernel, b, 2, params, groups, &ctx->error);
}
