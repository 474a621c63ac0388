/* The training backward's transposes by tiles (shaders/transpose.kernel's
 * TILES): one dispatch, a group a tile, the groups on a 2-D grid within
 * the device's groups a dimension. */
#include "launch/launch.h"

#define TILE_R 64u /* the kernel's tile (passed to it as defines): x's rows */
#define TILE_C 16u /* and columns */
#define TRANSPOSE_WORKGROUP 64u

/* The bindings and grid of a tiled transpose; 0 where they do not fit. */
static int tiles_plan(const ffnrt_context *ctx, const ffnrt_tensor *x, uint64_t x_first, uint64_t rows,
                      uint64_t cols, const ffnrt_tensor *y, ffnrt_binding b[2], uint32_t params[5],
                      uint32_t groups[2])
{
    const ffnrt_limits *lim = &ctx->limits;
    ffnrt_kernel_params kp;
    ffnrt_kernel_params_for(&ctx->info, &kp, NULL, 0);
    uint64_t esize = ffnrt_dtype_size(y->dtype), n = rows * cols;
    if (!kp.transpose_tiles || n == 0 || rows > UINT32_MAX || cols > UINT32_MAX || n > UINT32_MAX ||
        x_first > UINT32_MAX - n || (esize == 2 && rows % 2 != 0) || x->dtype != y->dtype)
        return 0;
    uint64_t tiles_c = (cols + TILE_C - 1) / TILE_C, tiles = tiles_c * ((rows + TILE_R - 1) / TILE_R);
    uint64_t gx = tiles < lim->max_workgroup_count[0] ? tiles : lim->max_workgroup_count[0];
    uint64_t gy = (tiles + gx - 1) / gx;
    if (gy > lim->max_workgroup_count[1])
        return 0;
    uint32_t y_base;
    b[0] = ffnrt_bind_elements(ctx, x, x_first, n, &params[2]);
    b[1] = ffnrt_bind_elements(ctx, y, 0, n, &y_base);
    if (b[0].size > lim->max_buffer_range || b[1].size > lim->max_buffer_range || y_base != 0)
        return 0;
    params[0] = (uint32_t)rows;
    params[1] = (uint32_t)cols;
    params[3] = (uint32_t)tiles_c;
    params[4] = (uint32_t)tiles;
    groups[0] = (uint32_t)gx;
    groups[1] = (uint32_t)gy;
    return 1;
}

int ffnrt_transpose_tiles_fit(const ffnrt_context *ctx, const ffnrt_tensor *x, uint64_t x_first, uint64_t rows,
                              uint64_t cols, const ffnrt_tensor *y)
{
    ffnrt_binding b[2];
    uint32_t params[5], groups[2];
    return tiles_plan(ctx, x, x_first, rows, cols, y, b, params, groups);
}

ffnrt_status ffnrt_launch_transpose_tiles(ffnrt_context *ctx, const ffnrt_tensor *x, uint64_t x_first, uint64_t rows,
                                          uint64_t cols, ffnrt_tensor *y)
{
    ffnrt_binding b[2];
    uint32_t params[5], groups[2];
    if (!tiles_plan(ctx, x, x_first, rows, cols, y, b, params, groups))
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_UNSUPPORTED, "the tiled transpose does not serve a %llu x %llu %s",
                          (unsigned long long)rows, (unsigned long long)cols, ffnrt_dtype_name(y->dtype));
    uint32_t wg = ctx->limits.max_workgroup_size < TRANSPOSE_WORKGROUP ? ctx->limits.max_workgroup_size
                                                                       : TRANSPOSE_WORKGROUP;
    ffnrt_defines defines = {0};
    ffnrt_defines_add(&defines, "#define TILES 1");
    ffnrt_defines_add(&defines, "#define TILE_R %uu", TILE_R);
    ffnrt_defines_add(&defines, "#define TILE_C %uu", TILE_C);
    ffnrt_defines_storage(&defines, y->dtype, ctx->half_conversion.kind);
    ffnrt_bkernel *kernel = NULL;
    ffnrt_status st = ffnrt_context_kernel(ctx, "transpose.kernel", NULL, "ffnrt_transpose_tiles", FFNRT_KERNEL_PLAIN,
                                           defines.text, 2, 5 * sizeof(uint32_t), wg, &kernel);
    return st == FFNRT_OK ? ctx->ops->dispatch(ctx->dev, kernel, b, 2, params, groups, &ctx->error) : st;
}
