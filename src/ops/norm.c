/* RMSNorm (shaders/rms_norm.kernel): a transformer block's pre-norm, so a
 * model's FFN stack runs on the device end to end (x, its norm, the FFN,
 * the residual) without a trip to the host between layers. */
#include "ops/ops.h"

#include <math.h>

ffnrt_status ffnrt_rms_norm(ffnrt_context *ctx, const ffnrt_tensor *x, const ffnrt_tensor *weight, float eps,
                            ffnrt_tensor *y)
{
    static const char fn[] = "ffnrt_rms_norm";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_status st = ffnrt_check_same_layout(ctx, x, y, fn, "x", "y");
    if (st == FFNRT_OK)
        st = ffnrt_check_tensor(ctx, weight, fn, "weight");
    if (st != FFNRT_OK)
        return ffnrt_context_finish_call(ctx, st);
    int64_t n = x->ndim ? x->shape[x->ndim - 1] : 0;
    if (weight->dtype != x->dtype)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_DTYPE_MISMATCH, "%s: weight is %s but x is %s", fn,
                        ffnrt_dtype_name(weight->dtype), ffnrt_dtype_name(x->dtype));
    else if (weight->numel != (size_t)n)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH, "%s: weight has %zu elements, x's rows %lld", fn,
                        weight->numel, (long long)n);
    else if (!isfinite(eps) || eps < 0)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: eps %g must be finite and not negative", fn,
                        (double)eps);
    else if (x->dtype != FFNRT_DTYPE_F32 && n % 2 != 0)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_UNSUPPORTED,
                        "%s: rows of %lld %s elements: 16-bit rows must have an even length (each row is written "
                        "in whole 32-bit words)", fn, (long long)n, ffnrt_dtype_name(x->dtype));
    ffnrt_op_arg args[3] = {{x, "x", 0}, {weight, "weight", 0}, {y, "y", 1}};
    if (st == FFNRT_OK)
        st = ffnrt_check_aliasing(ctx, fn, args, 3, 1, "y may be x (in place), and must not overlap x or weight otherwise");
    if (st == FFNRT_OK && x->numel) {
        st = ffnrt_batch_begin(ctx);
        if (st == FFNRT_OK)
            st = ffnrt_batch_end(ctx, ffnrt_launch_rms_norm(ctx, x, weight, eps, y), &ctx->last_op_ns);
    }
    return ffnrt_context_finish_call(ctx, st);
}
