/* Losses with their gradients: mean squared error (an element-wise
 * gradient, the value by sumsq.kernel's DIFF) and softmax cross-entropy
 * from logits (loss.kernel, a workgroup a row). Each value is a fixed
 * reduction on the device, its partials added in order on the host. */
#include "ops/ops.h"

#include <math.h>
#include <stdlib.h>

/* Reads an f32 tensor's n floats and sums them in order. */
static ffnrt_status sum_floats(ffnrt_context *ctx, const ffnrt_tensor *t, size_t n, double *out, const char *fn)
{
    float *host = malloc((n ? n : 1) * sizeof *host);
    if (!host)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    ffnrt_status st = ffnrt_context_settle(ctx);
    if (st == FFNRT_OK)
        st = ctx->ops->buffer_read(ctx->dev, t->buffer, t->offset, host, n * sizeof *host, &ctx->error);
    double s = 0;
    for (size_t i = 0; i < n && st == FFNRT_OK; i++)
        s += host[i];
    free(host);
    *out = s;
    return st;
}

static ffnrt_status check_scale(ffnrt_context *ctx, float scale, const char *fn)
{
    if (!isfinite(scale) || scale <= 0)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: scale %g must be finite and positive", fn,
                          (double)scale);
    return FFNRT_OK;
}

ffnrt_status ffnrt_loss_mse(ffnrt_context *ctx, const ffnrt_tensor *y, const ffnrt_tensor *target, float scale,
                            ffnrt_tensor *dy, double *loss)
{
    static const char fn[] = "ffnrt_loss_mse";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_status st = check_scale(ctx, scale, fn);
    if (st == FFNRT_OK)
        st = ffnrt_check_same_layout(ctx, y, target, fn, "y", "target");
    if (st == FFNRT_OK && dy)
        st = ffnrt_check_same_layout(ctx, y, dy, fn, "y", "dy");
    ffnrt_op_arg args[3] = {{y, "y", 0}, {target, "target", 0}, {dy, "dy", 1}};
    if (st == FFNRT_OK)
        st = ffnrt_check_aliasing(ctx, fn, args, 3, 1, "dy may be y or target, and must not overlap them otherwise");
    uint64_t ns = 0;
    if (st == FFNRT_OK && loss && y->numel) {
        /* The value first: dy may be y or target. */
        int64_t n = (int64_t)ffnrt_sumsq_words(ctx, 1);
        ffnrt_tensor *partials = NULL;
        st = ffnrt_tensor_alloc(ctx, FFNRT_DTYPE_F32, 1, &n, fn, &partials);
        if (st == FFNRT_OK)
            st = ffnrt_batch_begin(ctx);
        if (st == FFNRT_OK)
            st = ffnrt_batch_end(ctx, ffnrt_launch_sumsq(ctx, y, target, partials, 0, 0.0f), &ns);
        ffnrt_sumsq_result sum = {0, 0, 0};
        if (st == FFNRT_OK)
            st = ffnrt_sumsq_collect(ctx, partials, 1, &sum);
        ffnrt_tensor_free(partials);
        *loss = sum.sumsq / (double)y->numel;
    } else if (st == FFNRT_OK && loss) {
        *loss = 0;
    }
    if (st == FFNRT_OK && dy && y->numel) {
        ffnrt_ew_op op = {.family = FFNRT_EW_MSE, .act = FFNRT_ACT_COUNT, .dtype = y->dtype,
                          .compute = FFNRT_COMPUTE_AUTO, .fn = fn};
        ffnrt_ew_variant v;
        st = ffnrt_choose_ew_variant(ctx, &op, &v);
        struct {
            uint32_t n, base;
            float factor;
        } params = {0, 0, (float)(2.0 * scale / (double)y->numel)};
        ffnrt_ew_binding b[3] = {{y, 1}, {dy, 1}, {target, 1}};
        ffnrt_ew_launch launch = {&v, y->numel, 1, b, 3, &params, sizeof params, NULL};
        if (st == FFNRT_OK)
            st = ffnrt_run_elementwise(ctx, &launch);
        ns += ctx->last_op_ns;
    }
    ctx->last_op_ns = ns;
    return ffnrt_context_finish_call(ctx, st);
}

ffnrt_status ffnrt_loss_cross_entropy(ffnrt_context *ctx, const ffnrt_tensor *logits, const int32_t *labels,
                                      float scale, ffnrt_tensor *dlogits, double *loss)
{
    static const char fn[] = "ffnrt_loss_cross_entropy";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_status st = check_scale(ctx, scale, fn);
    if (st == FFNRT_OK)
        st = ffnrt_check_tensor(ctx, logits, fn, "logits");
    if (st == FFNRT_OK && dlogits)
        st = ffnrt_check_same_layout(ctx, logits, dlogits, fn, "logits", "dlogits");
    ffnrt_op_arg args[2] = {{logits, "logits", 0}, {dlogits, "dlogits", 1}};
    if (st == FFNRT_OK)
        st = ffnrt_check_aliasing(ctx, fn, args, 2, 0,
                                  "dlogits must not overlap logits (each gradient reads its whole row)");
    uint64_t classes = st == FFNRT_OK && logits->ndim ? (uint64_t)logits->shape[logits->ndim - 1] : 0;
    uint64_t rows = classes ? logits->numel / classes : 0;
    if (st == FFNRT_OK && (logits->ndim == 0 || classes == 0))
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH, "%s: logits need a last axis of classes", fn);
    if (st == FFNRT_OK && rows && !labels)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: labels is NULL", fn);
    for (uint64_t r = 0; st == FFNRT_OK && r < rows; r++)
        if (labels[r] < 0 || (uint64_t)labels[r] >= classes)
            st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: labels[%llu] = %d is not a class of %llu",
                            fn, (unsigned long long)r, labels[r], (unsigned long long)classes);
    if (st != FFNRT_OK || rows == 0 || (!dlogits && !loss)) {
        if (st == FFNRT_OK && loss)
            *loss = 0;
        return ffnrt_context_finish_call(ctx, st);
    }
    int64_t n = (int64_t)rows;
    ffnrt_tensor *label_t = NULL, *rowloss = NULL;
    st = ffnrt_tensor_alloc(ctx, FFNRT_DTYPE_F32, 1, &n, fn, &label_t); /* 32-bit words: the class indices */
    if (st == FFNRT_OK)
        st = ffnrt_tensor_upload(label_t, labels, rows * sizeof *labels);
    if (st == FFNRT_OK)
        st = ffnrt_tensor_alloc(ctx, FFNRT_DTYPE_F32, 1, &n, fn, &rowloss);
    uint64_t ns = 0;
    if (st == FFNRT_OK)
        st = ffnrt_batch_begin(ctx);
    if (st == FFNRT_OK)
        st = ffnrt_batch_end(ctx,
                             ffnrt_launch_cross_entropy(ctx, logits, label_t, dlogits, rowloss,
                                                        (float)(scale / (double)rows)),
                             &ns);
    double sum = 0;
    if (st == FFNRT_OK && loss)
        st = sum_floats(ctx, rowloss, rows, &sum, fn);
    if (st == FFNRT_OK && loss)
        *loss = sum / (double)rows;
    ffnrt_tensor_free(label_t);
    ffnrt_tensor_free(rowloss);
    ctx->last_op_ns = ns;
    return ffnrt_context_finish_call(ctx, st);
}
