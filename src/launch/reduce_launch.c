/* The reductions' launchers, each a fixed tree a group (the same inputs
 * give the same bits): sums of squares (shaders/sumsq.kernel: gradient
 * norms, the mean squared error's value) and the cross-entropy rows
 * (shaders/loss.kernel, CROSS_ENTROPY), and RMSNorm's rows. Each takes a
 * tensor past the device's buffer range in pieces that a binding holds
 * (chunks of elements, blocks of rows), a dispatch each. */
#include "launch/launch.h"

#include <stdlib.h>
#include <string.h>

#define REDUCE_WORKGROUP 256u

static uint32_t tree_top(uint32_t wg)
{
    uint32_t p = 1;
    while (p < wg)
        p *= 2;
    return p / 2;
}

static uint32_t reduce_workgroup(const ffnrt_context *ctx)
{
    return ctx->limits.max_workgroup_size < REDUCE_WORKGROUP ? ctx->limits.max_workgroup_size : REDUCE_WORKGROUP;
}

/* The group of the reductions that take one a row (RMSNorm, softmax
 * cross-entropy), from the device's row of kernel_params.inc: 256 on
 * GPUs, fewer on CPU drivers, where the tree's barriers cost. */
static uint32_t row_workgroup(const ffnrt_context *ctx)
{
    ffnrt_kernel_params kp;
    ffnrt_kernel_params_for(&ctx->info, &kp, NULL, 0);
    return kp.row_reduce_wg < ctx->limits.max_workgroup_size ? kp.row_reduce_wg : ctx->limits.max_workgroup_size;
}

/* *rows: rows of n elements of esize bytes in a block that one binding
 * holds wherever it starts (and whose indices fit 32 bits), at most cap;
 * LIMIT_EXCEEDED where one row does not fit. */
static ffnrt_status rows_a_block(ffnrt_context *ctx, uint64_t n, uint64_t esize, uint64_t cap, const char *what,
                                 uint64_t *rows)
{
    uint64_t elements = ffnrt_binding_elements(ctx, esize);
    if (elements > UINT32_MAX)
        elements = UINT32_MAX;
    *rows = n ? elements / n : 0;
    if (*rows == 0)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_LIMIT_EXCEEDED,
                          "a row of %llu %s elements passes the device's buffer range of %llu bytes (a row is reduced "
                          "in one binding)",
                          (unsigned long long)n, what, (unsigned long long)ctx->limits.max_buffer_range);
    if (*rows > cap)
        *rows = cap;
    return FFNRT_OK;
}

uint32_t ffnrt_sumsq_groups(const ffnrt_context *ctx)
{
    /* Enough groups to spread one tensor over a GPU's compute units, few
     * enough that the host's sum stays small. */
    uint32_t g = 64;
    return g < ctx->limits.max_workgroup_count[0] ? g : ctx->limits.max_workgroup_count[0];
}

uint64_t ffnrt_sumsq_words(const ffnrt_context *ctx, size_t tensors)
{
    return 3 * (uint64_t)ffnrt_sumsq_groups(ctx) * tensors;
}

ffnrt_status ffnrt_launch_sumsq(ffnrt_context *ctx, const ffnrt_tensor *a, const ffnrt_tensor *b,
                                const ffnrt_tensor *partials, uint32_t index, float near_zero)
{
    /* Chunks that a binding holds wherever they start, a dispatch each. */
    uint64_t chunk = ffnrt_binding_elements(ctx, ffnrt_dtype_size(a->dtype)), range = ctx->limits.max_buffer_range;
    if (chunk == 0 || a->numel > UINT32_MAX || ffnrt_binding_elements(ctx, 4) < 3 * (uint64_t)ffnrt_sumsq_groups(ctx))
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_LIMIT_EXCEEDED,
                          "a sum of squares of %zu elements does not fit the device's buffer range of %llu bytes",
                          a->numel, (unsigned long long)range);
    ffnrt_kernel_params kp;
    ffnrt_kernel_params_for(&ctx->info, &kp, NULL, 0);
    uint32_t wg = reduce_workgroup(ctx), sub = ctx->info.subgroup_size;
    if (kp.sumsq_subgroup && sub >= 1 && sub < wg)
        wg = sub;
    ffnrt_defines defines = {0};
    if (b)
        ffnrt_defines_add(&defines, "#define DIFF 1");
    if (kp.sumsq_runs)
        ffnrt_defines_add(&defines, "#define SUMSQ_RUNS 1");
    if (ffnrt_views64(ctx))
        ffnrt_defines_add(&defines, "#define VIEWS_64 1");
    ffnrt_defines_add(&defines, "#define TREE_TOP %uu", tree_top(wg));
    ffnrt_defines_storage(&defines, a->dtype, ctx->half_conversion.kind);
    ffnrt_bkernel *kernel = NULL;
    struct {
        uint32_t n, out_at;
        float near_zero;
        uint32_t a_base, b_base, accumulate;
    } params = {0, 0, near_zero, 0, 0, 0};
    ffnrt_status st = ffnrt_context_kernel(ctx, "sumsq.kernel", NULL, "ffnrt_sumsq", FFNRT_KERNEL_PLAIN, defines.text,
                                           b ? 3 : 2, sizeof params, wg, &kernel);
    uint32_t g = ffnrt_sumsq_groups(ctx), groups[2] = {g, 1};
    /* A tensor with no elements still writes its (zero) partials. */
    for (uint64_t first = 0; st == FFNRT_OK && (first < a->numel || first == 0); first += chunk) {
        uint64_t n = a->numel - first < chunk ? a->numel - first : chunk;
        /* this tensor's partials only: 3 words a group */
        ffnrt_binding bind[3] = {ffnrt_bind_elements(ctx, a, first, n, &params.a_base),
                                 ffnrt_bind_elements(ctx, partials, 3 * (uint64_t)index * g, 3 * (uint64_t)g, &params.out_at),
                                 ffnrt_bind_elements(ctx, b ? b : a, first, n, &params.b_base)};
        params.n = (uint32_t)n;
        params.accumulate = first > 0;
        st = ctx->ops->dispatch(ctx->dev, kernel, bind, b ? 3 : 2, &params, groups, &ctx->error);
        if (n == 0)
            break;
    }
    return st;
}

ffnrt_status ffnrt_sumsq_collect(ffnrt_context *ctx, const ffnrt_tensor *partials, size_t tensors,
                                 ffnrt_sumsq_result *out)
{
    uint32_t groups = ffnrt_sumsq_groups(ctx);
    size_t words = (size_t)ffnrt_sumsq_words(ctx, tensors);
    uint32_t *host = malloc((words ? words : 1) * sizeof *host);
    if (!host)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "sums of squares: out of host memory");
    ffnrt_status st = ffnrt_context_settle(ctx);
    if (st == FFNRT_OK)
        st = ctx->ops->buffer_read(ctx->dev, partials->buffer, partials->offset, host, words * sizeof *host,
                                   &ctx->error);
    for (size_t t = 0; t < tensors && st == FFNRT_OK; t++) {
        ffnrt_sumsq_result r = {0, 0, 0};
        for (uint32_t g = 0; g < groups; g++) {
            const uint32_t *w = host + 3 * ((size_t)t * groups + g);
            float f;
            memcpy(&f, &w[0], sizeof f);
            r.sumsq += f;
            r.near_zero += w[1];
            r.non_finite += w[2];
        }
        out[t] = r;
    }
    free(host);
    return st;
}

ffnrt_status ffnrt_launch_cross_entropy(ffnrt_context *ctx, const ffnrt_tensor *logits, const ffnrt_tensor *labels,
                                        ffnrt_tensor *dlogits, const ffnrt_tensor *rowloss, float factor)
{
    uint64_t classes = (uint64_t)logits->shape[logits->ndim - 1], rows = classes ? logits->numel / classes : 0;
    uint32_t gx_max = ctx->limits.max_workgroup_count[0], gy_max = ctx->limits.max_workgroup_count[1];
    /* One group a row, over a 2-D grid past the first dimension's limit. */
    uint64_t block = 0;
    ffnrt_status st = rows_a_block(ctx, classes, ffnrt_dtype_size(logits->dtype), (uint64_t)gx_max * gy_max, "logit",
                                   &block);
    if (st != FFNRT_OK)
        return st;
    uint32_t wg = row_workgroup(ctx);
    ffnrt_defines defines = {0};
    ffnrt_defines_add(&defines, "#define CROSS_ENTROPY 1");
    ffnrt_defines_add(&defines, "#define TREE_TOP %uu", tree_top(wg));
    ffnrt_defines_storage(&defines, logits->dtype, ctx->half_conversion.kind);
    ffnrt_bkernel *kernel = NULL;
    struct {
        uint32_t rows, classes;
        float factor;
        uint32_t grad, z_base, dz_base, label_base, loss_base;
    } params = {0, (uint32_t)classes, factor, dlogits != NULL, 0, 0, 0, 0};
    st = ffnrt_context_kernel(ctx, "loss.kernel", NULL, "ffnrt_cross_entropy", FFNRT_KERNEL_PLAIN, defines.text, 4,
                              sizeof params, wg, &kernel);
    for (uint64_t r0 = 0; st == FFNRT_OK && r0 < rows; r0 += block) {
        uint64_t rc = rows - r0 < block ? rows - r0 : block;
        /* Without dlogits the gradient's binding holds the row losses,
         * never written through it (grad 0). */
        ffnrt_binding bind[4] = {
            ffnrt_bind_elements(ctx, logits, r0 * classes, rc * classes, &params.z_base),
            dlogits ? ffnrt_bind_elements(ctx, dlogits, r0 * classes, rc * classes, &params.dz_base)
                    : ffnrt_bind_elements(ctx, rowloss, r0, rc, &params.dz_base),
            ffnrt_bind_elements(ctx, labels, r0, rc, &params.label_base),
            ffnrt_bind_elements(ctx, rowloss, r0, rc, &params.loss_base)};
        params.rows = (uint32_t)rc;
        uint32_t gx = rc < gx_max ? (uint32_t)rc : gx_max;
        uint32_t groups[2] = {gx, (uint32_t)((rc + gx - 1) / gx)};
        st = ctx->ops->dispatch(ctx->dev, kernel, bind, 4, &params, groups, &ctx->error);
    }
    return st;
}

ffnrt_status ffnrt_launch_rms_norm(ffnrt_context *ctx, const ffnrt_tensor *x, const ffnrt_tensor *w, float eps,
                                   ffnrt_tensor *y)
{
    uint64_t n = (uint64_t)x->shape[x->ndim - 1], rows = n ? x->numel / n : 0;
    /* One group a row, in blocks of the grid's first dimension that a
     * binding holds. */
    uint64_t block = 0;
    ffnrt_status st = rows_a_block(ctx, n, ffnrt_dtype_size(x->dtype), ctx->limits.max_workgroup_count[0], "x", &block);
    if (st != FFNRT_OK)
        return st;
    uint32_t wg = row_workgroup(ctx);
    ffnrt_defines defines = {0};
    ffnrt_defines_add(&defines, "#define TREE_TOP %uu", tree_top(wg));
    ffnrt_defines_storage(&defines, x->dtype, ctx->half_conversion.kind);
    ffnrt_bkernel *kernel = NULL;
    struct {
        uint32_t n, x_base, y_base;
        float eps;
    } params = {(uint32_t)n, 0, 0, eps};
    st = ffnrt_context_kernel(ctx, "rms_norm.kernel", NULL, "ffnrt_rms_norm", FFNRT_KERNEL_PLAIN, defines.text, 3,
                              sizeof params, wg, &kernel);
    uint32_t w_base = 0; /* the weight, one row, starts its binding */
    for (uint64_t r0 = 0; r0 < rows && st == FFNRT_OK; r0 += block) {
        uint64_t rc = rows - r0 < block ? rows - r0 : block;
        ffnrt_binding bind[3] = {ffnrt_bind_elements(ctx, x, r0 * n, rc * n, &params.x_base),
                                 ffnrt_bind_elements(ctx, w, 0, n, &w_base),
                                 ffnrt_bind_elements(ctx, y, r0 * n, rc * n, &params.y_base)};
        uint32_t groups[2] = {(uint32_t)rc, 1};
        st = ctx->ops->dispatch(ctx->dev, kernel, bind, 3, &params, groups, &ctx->error);
    }
    return st;
}
