/* The training backward's transposes by tiles (shaders/transpose.kernel's
 * TILES): a group a tile, the groups on a 2-D grid within the device's
 * groups a dimension. The whole matrix is one dispatch where x's rows and
 * y fit a binding each; past the device's buffer range it goes in blocks
 * of x's rows by its columns whose reads and writes each fit one, a
 * dispatch a block (a phone GPU's 128 MiB range holds no 4096 x 14336
 * fp32 weight). y's rows may be one longer than x's, ending in a zero: the
 * backward pads an odd token count so that 16-bit rows are whole words. */
#include "launch/launch.h"

/* The kernel's tile (passed to it as defines): x's rows and columns. On
 * llvmpipe, where groups cost most, 64 x 32 moved a 3072 x 768 fp32 weight
 * in 1.8-2.0 ms against 4.0-4.3 at 64 x 16 (32 x 32 and 16 x 64: 4.1-5.2;
 * 64 x 64 and 128 x 32 matched 64 x 32, 128 x 64: 2.1-2.6); more rows would
 * leave 64-token matrices without a whole tile, and 32 columns divide
 * SwiGLU's 1376. */
#define TILE_R 64u
#define TILE_C 32u
#define TRANSPOSE_WORKGROUP 64u

static int prefers_tiles(const ffnrt_context *ctx)
{
    ffnrt_kernel_params kp;
    ffnrt_kernel_params_for(&ctx->info, &kp, NULL, 0);
    return kp.transpose_tiles != 0;
}

static uint64_t at_most(uint64_t v, uint64_t cap) { return v < cap ? v : cap; }

/* v rounded down to a multiple of m where that leaves at least one. */
static uint64_t whole_tiles(uint64_t v, uint64_t m) { return v >= m ? v / m * m : v; }

/* A block's extents: rb of x's rows by cb of its columns, so that its rows
 * of x ((rb - 1) strides and cb) and of y ((cb - 1) strides and rb) fit a
 * binding each and its tiles the grid; 0 where none does. */
static int block_extents(const ffnrt_context *ctx, uint64_t esize, uint64_t rows, uint64_t cols, uint64_t *rb,
                         uint64_t *cb)
{
    uint64_t elems = ffnrt_binding_elements(ctx, esize);
    if (elems == 0)
        return 0;
    uint64_t r = rows * cols <= elems ? rows : whole_tiles(at_most(rows, elems / cols ? elems / cols : 1), TILE_R);
    uint64_t c = rows * cols <= elems ? cols : whole_tiles(at_most(cols, elems / rows ? elems / rows : 1), TILE_C);
    if (esize == 2 && r % 2 != 0) /* 16-bit: a word of y holds rows r and r + 1 */
        r--;
    uint64_t grid = (uint64_t)ctx->limits.max_workgroup_count[0] * ctx->limits.max_workgroup_count[1];
    uint64_t tiles_c = (c + TILE_C - 1) / TILE_C;
    if (tiles_c > grid) {
        tiles_c = grid;
        c = grid * TILE_C;
    }
    uint64_t tiles_r = at_most((r + TILE_R - 1) / TILE_R, grid / tiles_c);
    if (tiles_r * TILE_R < r)
        r = tiles_r * TILE_R;
    *rb = r;
    *cb = c;
    return r > 0 && c > 0;
}

static int serves(const ffnrt_tensor *x, uint64_t x_first, uint64_t rows, uint64_t cols, const ffnrt_tensor *y,
                  uint64_t y_stride)
{
    uint64_t n = y_stride * cols;
    return rows > 0 && (y_stride == rows || y_stride == rows + 1) && y_stride <= UINT32_MAX && cols <= UINT32_MAX &&
           n <= UINT32_MAX && x_first <= UINT32_MAX - n && !(ffnrt_dtype_size(y->dtype) == 2 && y_stride % 2 != 0) &&
           x->dtype == y->dtype && y->numel >= n;
}

int ffnrt_transpose_tiles_fit(const ffnrt_context *ctx, const ffnrt_tensor *x, uint64_t x_first, uint64_t rows,
                              uint64_t cols, const ffnrt_tensor *y, uint64_t y_stride)
{
    uint64_t rb, cb;
    if (!serves(x, x_first, rows, cols, y, y_stride) ||
        !block_extents(ctx, ffnrt_dtype_size(y->dtype), y_stride, cols, &rb, &cb))
        return 0;
    uint32_t base;
    /* The element-wise form binds x whole, and pads nothing: past the range,
     * or padded, only blocks serve. */
    int x_whole = ffnrt_bind_elements(ctx, x, 0, x->numel, &base).size <= ctx->limits.max_buffer_range;
    return prefers_tiles(ctx) || !x_whole || y_stride != rows;
}

/* One block: y's columns r0.. (rb; those past x's rows are the zero pad)
 * by its rows c0.. (cb). */
static ffnrt_status transpose_block(ffnrt_context *ctx, ffnrt_bkernel *kernel, const ffnrt_tensor *x,
                                    uint64_t x_first, uint64_t rows, uint64_t cols, ffnrt_tensor *y,
                                    uint64_t y_stride, uint64_t r0, uint64_t c0, uint64_t rb, uint64_t cb)
{
    uint32_t params[9];
    uint64_t x_rows = at_most(rb, rows - r0); /* at least 1: a pad never starts a block (y_stride's blocks are even) */
    ffnrt_binding b[2];
    b[0] = ffnrt_bind_elements(ctx, x, x_first + r0 * cols + c0, (x_rows - 1) * cols + cb, &params[4]);
    b[1] = ffnrt_bind_elements(ctx, y, c0 * y_stride + r0, (cb - 1) * y_stride + rb, &params[5]);
    uint64_t tiles_c = (cb + TILE_C - 1) / TILE_C, tiles = tiles_c * ((rb + TILE_R - 1) / TILE_R);
    uint64_t gx = at_most(tiles, ctx->limits.max_workgroup_count[0]);
    uint32_t groups[2] = {(uint32_t)gx, (uint32_t)((tiles + gx - 1) / gx)};
    params[0] = (uint32_t)rb;
    params[1] = (uint32_t)cb;
    params[2] = (uint32_t)cols;
    params[3] = (uint32_t)y_stride;
    params[6] = (uint32_t)tiles_c;
    params[7] = (uint32_t)tiles;
    params[8] = (uint32_t)x_rows;
    return ctx->ops->dispatch(ctx->dev, kernel, b, 2, params, groups, &ctx->error);
}

ffnrt_status ffnrt_launch_transpose_tiles(ffnrt_context *ctx, const ffnrt_tensor *x, uint64_t x_first, uint64_t rows,
                                          uint64_t cols, ffnrt_tensor *y, uint64_t y_stride)
{
    uint64_t rb = 0, cb = 0;
    if (!serves(x, x_first, rows, cols, y, y_stride) ||
        !block_extents(ctx, ffnrt_dtype_size(y->dtype), y_stride, cols, &rb, &cb))
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_UNSUPPORTED,
                          "the tiled transpose does not serve a %llu x %llu %s (rows of %llu) within the device's "
                          "%llu-byte buffer range",
                          (unsigned long long)rows, (unsigned long long)cols, ffnrt_dtype_name(y->dtype),
                          (unsigned long long)y_stride, (unsigned long long)ctx->limits.max_buffer_range);
    uint32_t wg = ctx->limits.max_workgroup_size < TRANSPOSE_WORKGROUP ? ctx->limits.max_workgroup_size
                                                                       : TRANSPOSE_WORKGROUP;
    ffnrt_defines defines = {0};
    ffnrt_defines_add(&defines, "#define TILES 1");
    ffnrt_defines_add(&defines, "#define TILE_R %uu", TILE_R);
    ffnrt_defines_add(&defines, "#define TILE_C %uu", TILE_C);
    if (ffnrt_views64(ctx))
        ffnrt_defines_add(&defines, "#define VIEWS_64 1");
    ffnrt_defines_storage(&defines, y->dtype, ctx->half_conversion.kind);
    ffnrt_bkernel *kernel = NULL;
    ffnrt_status st = ffnrt_context_kernel(ctx, "transpose.kernel", NULL, "ffnrt_transpose_tiles", FFNRT_KERNEL_PLAIN,
                                           defines.text, 2, 9 * sizeof(uint32_t), wg, &kernel);
    for (uint64_t r0 = 0; r0 < y_stride && st == FFNRT_OK; r0 += rb)
        for (uint64_t c0 = 0; c0 < cols && st == FFNRT_OK; c0 += cb)
            st = transpose_block(ctx, kernel, x, x_first, rows, cols, y, y_stride, r0, c0, at_most(rb, y_stride - r0),
                                 at_most(cb, cols - c0));
    return st;
}
