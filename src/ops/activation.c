/* Element-wise activations: names, validation, and the kernel each runs. */
#include "ops/ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const activation_names[FFNRT_ACT_COUNT] = {
    [FFNRT_ACT_RELU] = "relu",         [FFNRT_ACT_LEAKY_RELU] = "leaky_relu",
    [FFNRT_ACT_PRELU] = "prelu",       [FFNRT_ACT_ELU] = "elu",
    [FFNRT_ACT_GELU] = "gelu",         [FFNRT_ACT_GELU_TANH] = "gelu_tanh",
    [FFNRT_ACT_SILU] = "silu",         [FFNRT_ACT_SWISH] = "swish",
    [FFNRT_ACT_SIGMOID] = "sigmoid",   [FFNRT_ACT_TANH] = "tanh",
};

/* The build define that selects each activation in activation.kernel. */
static const char *const activation_defines[FFNRT_ACT_COUNT] = {
    [FFNRT_ACT_RELU] = "#define ACT_RELU 1",         [FFNRT_ACT_LEAKY_RELU] = "#define ACT_LEAKY_RELU 1",
    [FFNRT_ACT_PRELU] = "#define ACT_PRELU 1",       [FFNRT_ACT_ELU] = "#define ACT_ELU 1",
    [FFNRT_ACT_GELU] = "#define ACT_GELU 1",         [FFNRT_ACT_GELU_TANH] = "#define ACT_GELU_TANH 1",
    [FFNRT_ACT_SILU] = "#define ACT_SILU 1",         [FFNRT_ACT_SWISH] = "#define ACT_SWISH 1",
    [FFNRT_ACT_SIGMOID] = "#define ACT_SIGMOID 1",   [FFNRT_ACT_TANH] = "#define ACT_TANH 1",
};

const char *ffnrt_activation_name(ffnrt_activation act)
{
    return (unsigned)act < FFNRT_ACT_COUNT ? activation_names[act] : "unknown";
}

ffnrt_status ffnrt_activation_from_name(const char *name, ffnrt_activation *out)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!name || !out) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_activation_from_name: %s is NULL",
                   name ? "out" : "name");
    } else {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "\"%s\" is not an activation", name);
        for (int i = 0; i < FFNRT_ACT_COUNT; i++)
            if (strcmp(name, activation_names[i]) == 0) {
                *out = (ffnrt_activation)i;
                ffnrt_error_clear(&err);
            }
    }
    ffnrt_error_publish(&err);
    return err.status;
}

static ffnrt_status check_same_layout(ffnrt_context *ctx, const ffnrt_tensor *x,
                                      const ffnrt_tensor *y, const char *fn)
{
    if (!x || !y)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, x ? "y" : "x");
    if (x->ctx != ctx || y->ctx != ctx)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_WRONG_CONTEXT, "%s: %s was created in another context",
                          fn, x->ctx != ctx ? "x" : "y");
    if (x->dtype != y->dtype)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_DTYPE_MISMATCH, "%s: x is %s, y is %s", fn,
                          ffnrt_dtype_name(x->dtype), ffnrt_dtype_name(y->dtype));
    int same = x->ndim == y->ndim;
    for (size_t i = 0; same && i < x->ndim; i++)
        same = x->shape[i] == y->shape[i];
    if (!same)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH,
                          "%s: x and y differ in shape (%zu and %zu elements, %zu and %zu dims)", fn,
                          x->numel, y->numel, x->ndim, y->ndim);
    if (x->dtype != FFNRT_DTYPE_F32)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_UNSUPPORTED, "%s: %s element-wise ops are not available yet; use f32",
                          fn, ffnrt_dtype_name(x->dtype));
    return FFNRT_OK;
}

static ffnrt_error null_context_error(const char *fn)
{
    ffnrt_error err;
    ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    ffnrt_error_publish(&err);
    return err;
}

/* PReLU: channels and the stride of the channel axis for the kernel. */
static ffnrt_status prelu_layout(ffnrt_context *ctx, const ffnrt_activation_desc *desc,
                                 const ffnrt_tensor *x, ffnrt_activation_params *p)
{
    const ffnrt_tensor *s = desc->slopes;
    if (!s)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "prelu: desc->slopes is NULL");
    if (s->ctx != ctx)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_WRONG_CONTEXT, "prelu: slopes were created in another context");
    if (s->dtype != x->dtype)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_DTYPE_MISMATCH, "prelu: slopes are %s, x is %s",
                          ffnrt_dtype_name(s->dtype), ffnrt_dtype_name(x->dtype));
    if (s->ndim != 1)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH, "prelu: slopes must be 1-D, got %zu dims", s->ndim);
    p->inner = 1;
    p->channels = 1;
    if (s->numel == 1)
        return FFNRT_OK;
    long axis = desc->channel_axis < 0 ? (long)x->ndim + desc->channel_axis : desc->channel_axis;
    if (axis < 0 || axis >= (long)x->ndim)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT,
                          "prelu: channel_axis %d is outside a %zu-D input", desc->channel_axis, x->ndim);
    if ((int64_t)s->numel != x->shape[axis])
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH,
                          "prelu: %zu slopes for a channel axis of %lld", s->numel, (long long)x->shape[axis]);
    uint64_t inner = 1;
    for (size_t i = (size_t)axis + 1; i < x->ndim; i++)
        inner *= (uint64_t)x->shape[i];
    p->inner = (uint32_t)(inner ? inner : 1);
    p->channels = (uint32_t)s->numel;
    return FFNRT_OK;
}

ffnrt_status ffnrt_activation_forward(ffnrt_context *ctx, const ffnrt_activation_desc *desc,
                                      const ffnrt_tensor *x, ffnrt_tensor *y)
{
    static const char fn[] = "ffnrt_activation_forward";
    if (!ctx)
        return null_context_error(fn).status;
    ffnrt_status st = FFNRT_OK;
    ffnrt_activation_params p = {0, 0, 1, 1, 0.0f, 1.0f};
    if (!desc)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: desc is NULL", fn);
    else if ((unsigned)desc->kind >= FFNRT_ACT_COUNT)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not an activation", fn, (int)desc->kind);
    else if (!isfinite(desc->alpha) || !isfinite(desc->beta))
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: alpha and beta must be finite", fn);
    if (st == FFNRT_OK)
        st = check_same_layout(ctx, x, y, fn);
    if (st == FFNRT_OK && desc->kind == FFNRT_ACT_PRELU)
        st = prelu_layout(ctx, desc, x, &p);
    if (st == FFNRT_OK) {
        p.alpha = desc->alpha;
        p.beta = desc->beta;
        st = ffnrt_run_elementwise(ctx, "activation.kernel", activation_defines[desc->kind], x, y,
                                   desc->kind == FFNRT_ACT_PRELU ? desc->slopes : NULL, &p);
    }
    return ffnrt_context_finish_call(ctx, st);
}

ffnrt_status ffnrt_copy(ffnrt_context *ctx, const ffnrt_tensor *x, ffnrt_tensor *y)
{
    if (!ctx)
        return null_context_error("ffnrt_copy").status;
    ffnrt_status st = check_same_layout(ctx, x, y, "ffnrt_copy");
    ffnrt_activation_params p = {0, 0, 1, 1, 0.0f, 1.0f};
    if (st == FFNRT_OK)
        st = ffnrt_run_elementwise(ctx, "activation.kernel", "#define ACT_COPY 1", x, y, NULL, &p);
    return ffnrt_context_finish_call(ctx, st);
}
