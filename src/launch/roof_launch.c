/* The arithmetic roofs' kernel (shaders/roof.kernel), for the bench's
 * limit rows: one dispatch over out's elements, a work-item each. */
#include "launch/launch.h"

#define ROOF_CHAINS 8u
#define ROOF_STEPS 512u
#define ROOF_WORKGROUP 64u

ffnrt_status ffnrt_launch_roof(ffnrt_context *ctx, int integer, const ffnrt_tensor *out, double *ops)
{
    uint32_t wg = ctx->limits.max_workgroup_size < ROOF_WORKGROUP ? ctx->limits.max_workgroup_size : ROOF_WORKGROUP;
    uint64_t groups = out->numel / wg;
    if (groups == 0 || groups > ctx->limits.max_workgroup_count[0] || out->bytes > ctx->limits.max_buffer_range)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_LIMIT_EXCEEDED,
                          "the roof kernel: %zu work-items do not make 1 to %u groups of %u in one binding",
                          out->numel, ctx->limits.max_workgroup_count[0], wg);
    ffnrt_defines defines = {0};
    if (integer)
        ffnrt_defines_add(&defines, "#define ROOF_INT 1");
    ffnrt_defines_add(&defines, "#define ROOF_CHAINS %uu", ROOF_CHAINS);
    ffnrt_defines_storage(&defines, FFNRT_DTYPE_F32, ctx->half_conversion.kind);
    ffnrt_bkernel *kernel = NULL;
    struct {
        uint32_t steps;
        float a;
        uint32_t m;
    } params = {ROOF_STEPS, 0.999f, 2654435761u};
    ffnrt_status st = ffnrt_context_kernel(ctx, "roof.kernel", NULL, "ffnrt_roof", FFNRT_KERNEL_PLAIN, defines.text, 1,
                                           sizeof params, wg, &kernel);
    if (st != FFNRT_OK)
        return st;
    ffnrt_binding b = {out->buffer, out->offset, (out->bytes + 3) & ~(uint64_t)3};
    uint32_t grid[2] = {(uint32_t)groups, 1};
    /* 8 flops (FMA) or 8 code products (INT) a chain a step. */
    *ops = 8.0 * ROOF_CHAINS * ROOF_STEPS * (double)(groups * wg);
    return ctx->ops->dispatch(ctx->dev, kernel, &b, 1, &params, grid, &ctx->error);
}
