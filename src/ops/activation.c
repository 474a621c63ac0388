/* Element-wise activations: names, validation, and the kernel each runs. */
#include "ops/ops.h"
#include "ops/stats.h"
#include "ffnrt_op_table.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Parameters of shaders/activation.kernel, in its Params order. */
typedef struct activation_params {
    uint32_t n, base, inner, channels;
    uint32_t inner_magic, inner_shift, channels_magic, channels_shift;
    float alpha, beta;
} activation_params;

const char *ffnrt_activation_name(ffnrt_activation act)
{
    const ffnrt_op_row *row = ffnrt_op_row_of(act);
    return row ? row->name : "unknown";
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
            if (strcmp(name, ffnrt_op_row_of((ffnrt_activation)i)->name) == 0) {
                *out = (ffnrt_activation)i;
                ffnrt_error_clear(&err);
            }
    }
    ffnrt_error_publish(&err);
    return err.status;
}

static ffnrt_status check_desc(ffnrt_context *ctx, const ffnrt_activation_desc *desc, const char *fn)
{
    if (!desc)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: desc is NULL", fn);
    if ((unsigned)desc->kind >= FFNRT_ACT_COUNT)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not an activation", fn,
                          (int)desc->kind);
    if (!isfinite(desc->alpha) || !isfinite(desc->beta))
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: alpha and beta must be finite", fn);
    return FFNRT_OK;
}

/* PReLU: channels and the stride of the channel axis for the kernel. */
static ffnrt_status prelu_layout(ffnrt_context *ctx, const ffnrt_activation_desc *desc, const ffnrt_tensor *x,
                                 activation_params *p, const char *fn)
{
    const ffnrt_tensor *s = desc->slopes;
    ffnrt_status st = ffnrt_check_tensor(ctx, s, fn, "desc->slopes");
    if (st != FFNRT_OK)
        return st;
    if (s->dtype != x->dtype)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_DTYPE_MISMATCH, "%s: slopes are %s, x is %s", fn,
                          ffnrt_dtype_name(s->dtype), ffnrt_dtype_name(x->dtype));
    if (s->ndim != 1)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH, "%s: slopes must be 1-D, got %zu dims", fn,
                          s->ndim);
    p->inner = 1;
    p->channels = 1;
    if (s->numel == 1)
        return FFNRT_OK;
    long axis = desc->channel_axis < 0 ? (long)x->ndim + desc->channel_axis : desc->channel_axis;
    if (axis < 0 || axis >= (long)x->ndim)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: channel_axis %d is outside a %zu-D input",
                          fn, desc->channel_axis, x->ndim);
    if ((int64_t)s->numel != x->shape[axis])
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH, "%s: %zu slopes for a channel axis of %lld", fn,
                          s->numel, (long long)x->shape[axis]);
    uint64_t inner = 1;
    for (size_t i = (size_t)axis + 1; i < x->ndim; i++)
        inner *= (uint64_t)x->shape[i];
    p->inner = (uint32_t)(inner ? inner : 1);
    p->channels = (uint32_t)s->numel;
    ffnrt_divisor(p->inner, &p->inner_magic, &p->inner_shift);
    ffnrt_divisor(p->channels, &p->channels_magic, &p->channels_shift);
    return FFNRT_OK;
}

/* Every output element reads its inputs at its own index (the slopes at its
 * channel, which equals its index when y can be the slopes tensor). */
#define ACTIVATION_ALIASING "an output may be exactly one of the inputs (in place), never part of one or another output"

/* Forward when dy is NULL, backward otherwise; out is y or dx. */
ffnrt_status ffnrt_op_activation(ffnrt_context *ctx, const ffnrt_activation_desc *desc, const ffnrt_tensor *x,
                                 const ffnrt_tensor *dy, ffnrt_tensor *out, const char *fn, ffnrt_stats_call *stats)
{
    ffnrt_status st = check_desc(ctx, desc, fn);
    if (st == FFNRT_OK)
        st = ffnrt_check_same_layout(ctx, x, out, fn, "x", dy ? "dx" : "y");
    if (st == FFNRT_OK && dy)
        st = ffnrt_check_same_layout(ctx, x, dy, fn, "x", "dy");
    activation_params p = {0, 0, 1, 1, 1, 0, 1, 0, 0.0f, 1.0f};
    int slopes = st == FFNRT_OK && (ffnrt_op_row_of(desc->kind)->params & FFNRT_OP_SLOPES);
    if (slopes)
        st = prelu_layout(ctx, desc, x, &p, fn);
    if (st == FFNRT_OK) {
        ffnrt_op_arg args[4] = {{x, "x", 0}, {dy, "dy", 0}, {desc->slopes, "desc->slopes", 0}, {out, dy ? "dx" : "y", 1}};
        if (!slopes)
            args[2].tensor = NULL;
        st = ffnrt_check_aliasing(ctx, fn, args, 4, 1, ACTIVATION_ALIASING);
    }
    if (st != FFNRT_OK)
        return st;
    ffnrt_ew_op op = {.family = FFNRT_EW_ACTIVATION, .act = desc->kind, .backward = dy != NULL, .dtype = x->dtype,
                      .arithmetic = 1, .compute = desc->compute, .slope_channels = slopes ? p.channels : 0,
                      .slope_inner = slopes ? p.inner : 0, .fn = fn};
    ffnrt_ew_variant v;
    st = ffnrt_choose_ew_variant(ctx, &op, &v);
    if (st != FFNRT_OK)
        return st;
    if (stats)
        stats->fp16 = v.fp16;
    p.alpha = desc->alpha;
    p.beta = desc->beta;
    ffnrt_ew_binding b[4];
    uint32_t nb = 0;
    b[nb++] = (ffnrt_ew_binding){x, 1};
    b[nb++] = (ffnrt_ew_binding){out, 1};
    if (dy)
        b[nb++] = (ffnrt_ew_binding){dy, 1};
    if (slopes)
        b[nb++] = (ffnrt_ew_binding){desc->slopes, 0};
    ffnrt_ew_launch l = {&v, x->numel, 1, b, nb, &p, sizeof p, stats && stats->choice.on ? &stats->run : NULL};
    return ffnrt_run_elementwise(ctx, &l);
}

/* The public calls: the op with its statistics, when they are on. */
static ffnrt_status run_activation(ffnrt_context *ctx, const ffnrt_activation_desc *desc, const ffnrt_tensor *x,
                                   const ffnrt_tensor *dy, ffnrt_tensor *out, const char *fn)
{
    ffnrt_stats_call sc = {0};
    int known = desc && (unsigned)desc->kind < FFNRT_ACT_COUNT;
    uint64_t n = x && x->ctx == ctx ? x->numel : 0;
    sc.fn = fn;
    snprintf(sc.op, sizeof sc.op, "%s%s", known ? ffnrt_activation_name(desc->kind) : "?", dy ? " backward" : "");
    sc.dtype = x && x->ctx == ctx ? x->dtype : FFNRT_DTYPE_F32;
    sc.act = known ? desc->kind : FFNRT_ACT_COUNT;
    sc.inputs = dy ? 2 * n : n;
    sc.outputs = sc.pre = sc.activations = n;
    ffnrt_status st = ffnrt_stats_begin(ctx, NULL, &sc);
    sc.run.roles |= FFNRT_STATS_INPUTS | FFNRT_STATS_PRE | FFNRT_STATS_OUTPUT;
    if (st == FFNRT_OK)
        st = ffnrt_op_activation(ctx, desc, x, dy, out, fn, &sc);
    return ffnrt_stats_end(ctx, &sc, st, NULL, NULL);
}

ffnrt_status ffnrt_activation_forward(ffnrt_context *ctx, const ffnrt_activation_desc *desc,
                                      const ffnrt_tensor *x, ffnrt_tensor *y)
{
    static const char fn[] = "ffnrt_activation_forward";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    return ffnrt_context_finish_call(ctx, run_activation(ctx, desc, x, NULL, y, fn));
}

ffnrt_status ffnrt_activation_backward(ffnrt_context *ctx, const ffnrt_activation_desc *desc,
                                       const ffnrt_tensor *x, const ffnrt_tensor *dy, ffnrt_tensor *dx)
{
    static const char fn[] = "ffnrt_activation_backward";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_status st = dy ? FFNRT_OK : ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: dy is NULL", fn);
    if (st == FFNRT_OK)
        st = run_activation(ctx, desc, x, dy, dx, fn);
    return ffnrt_context_finish_call(ctx, st);
}

ffnrt_status ffnrt_op_copy(ffnrt_context *ctx, const ffnrt_tensor *x, ffnrt_tensor *y, const char *fn)
{
    ffnrt_status st = ffnrt_check_same_layout(ctx, x, y, fn, "x", "y");
    ffnrt_op_arg args[2] = {{x, "x", 0}, {y, "y", 1}};
    if (st == FFNRT_OK)
        st = ffnrt_check_aliasing(ctx, fn, args, 2, 1, ACTIVATION_ALIASING);
    if (st != FFNRT_OK)
        return st;
    activation_params p = {0, 0, 1, 1, 1, 0, 1, 0, 0.0f, 1.0f};
    ffnrt_ew_binding b[2] = {{x, 1}, {y, 1}};
    ffnrt_ew_op op = {.family = FFNRT_EW_ACTIVATION, .act = FFNRT_ACT_COUNT, .copy_words = 1, .dtype = x->dtype,
                      .compute = FFNRT_COMPUTE_AUTO, .fn = fn};
    ffnrt_ew_variant v;
    st = ffnrt_choose_ew_variant(ctx, &op, &v);
    if (st != FFNRT_OK)
        return st;
    ffnrt_ew_launch l = {&v, x->numel, 1, b, 2, &p, sizeof p, NULL};
    return ffnrt_run_elementwise(ctx, &l);
}

ffnrt_status ffnrt_copy(ffnrt_context *ctx, const ffnrt_tensor *x, ffnrt_tensor *y)
{
    static const char fn[] = "ffnrt_copy";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    return ffnrt_context_finish_call(ctx, ffnrt_op_copy(ctx, x, y, fn));
}

typedef struct activation_plan_arg {
    const ffnrt_activation_desc *desc;
    ffnrt_dtype dtype;
    size_t numel;
} activation_plan_arg;

static ffnrt_status plan_activation(ffnrt_context *ctx, const void *arg)
{
    const activation_plan_arg *a = arg;
    ffnrt_tensor x, s;
    int64_t n = (int64_t)a->numel, one = 1;
    ffnrt_activation_desc d = *a->desc;
    int slopes = (ffnrt_op_row_of(d.kind)->params & FFNRT_OP_SLOPES) != 0;
    if (slopes && d.slopes && d.slopes->numel > 1) { /* C slopes: x as [numel / C, C] */
        int64_t c = (int64_t)d.slopes->numel, shape[2] = {n / c, c};
        if (n % c != 0)
            return ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH,
                              "ffnrt_activation_plan: %lld elements are not a whole number of rows of %lld slopes",
                              (long long)n, (long long)c);
        ffnrt_plan_tensor(ctx, a->dtype, 2, shape, &x);
        d.channel_axis = -1;
    } else {
        ffnrt_plan_tensor(ctx, a->dtype, 1, &n, &x);
    }
    if (slopes && !d.slopes) {
        ffnrt_plan_tensor(ctx, a->dtype, 1, &one, &s);
        d.slopes = &s;
    }
    return run_activation(ctx, &d, &x, NULL, &x, "ffnrt_activation_plan");
}

ffnrt_status ffnrt_activation_plan(ffnrt_context *ctx, const ffnrt_activation_desc *desc, ffnrt_dtype dtype,
                                   size_t numel, ffnrt_plan **out)
{
    static const char fn[] = "ffnrt_activation_plan";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_status st = check_desc(ctx, desc, fn);
    if (st == FFNRT_OK && ffnrt_dtype_size(dtype) == 0)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not a dtype", fn, (int)dtype);
    if (st == FFNRT_OK)
        st = ffnrt_tensor_check_size(ctx, dtype, numel, fn);
    if (st != FFNRT_OK)
        return ffnrt_context_finish_call(ctx, st);
    char text[96];
    snprintf(text, sizeof text, "%s forward, %zu %s elements", ffnrt_activation_name(desc->kind), numel,
             ffnrt_dtype_name(dtype));
    activation_plan_arg a = {desc, dtype, numel};
    return ffnrt_plan_op(ctx, fn, out, text, plan_activation, &a);
}
