/* What every op shares: argument checks, the compute precision, and plans
 * made by running an op against the context's plan sink. */
#include "ops/ops.h"
#include "dispatch/dispatch.h"

#include <stdio.h>
#include <string.h>

ffnrt_status ffnrt_check_tensor(ffnrt_context *ctx, const ffnrt_tensor *t, const char *fn, const char *name)
{
    if (!t)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, name);
    if (t->ctx != ctx)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_WRONG_CONTEXT, "%s: %s was created in another context", fn, name);
    return FFNRT_OK;
}

ffnrt_status ffnrt_check_same_layout(ffnrt_context *ctx, const ffnrt_tensor *a, const ffnrt_tensor *b,
                                     const char *fn, const char *a_name, const char *b_name)
{
    ffnrt_status st = ffnrt_check_tensor(ctx, a, fn, a_name);
    if (st == FFNRT_OK)
        st = ffnrt_check_tensor(ctx, b, fn, b_name);
    if (st != FFNRT_OK)
        return st;
    if (a->dtype != b->dtype)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_DTYPE_MISMATCH, "%s: %s is %s, %s is %s", fn, a_name,
                          ffnrt_dtype_name(a->dtype), b_name, ffnrt_dtype_name(b->dtype));
    int same = a->ndim == b->ndim;
    for (size_t i = 0; same && i < a->ndim; i++)
        same = a->shape[i] == b->shape[i];
    if (!same)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH,
                          "%s: %s and %s differ in shape (%zu and %zu elements, %zu and %zu dims)", fn, a_name,
                          b_name, a->numel, b->numel, a->ndim, b->ndim);
    return FFNRT_OK;
}

ffnrt_status ffnrt_check_aliasing(ffnrt_context *ctx, const char *fn, const ffnrt_op_arg *args, size_t n,
                                  int same_ok, const char *rule)
{
    for (size_t i = 0; i < n; i++) {
        if (!args[i].output || !args[i].tensor)
            continue;
        for (size_t j = 0; j < n; j++) {
            if (j == i || !args[j].tensor || (args[j].output && j < i))
                continue; /* each pair of outputs once */
            ffnrt_overlap o = ffnrt_tensor_overlap(args[i].tensor, args[j].tensor);
            if (o == FFNRT_OVERLAP_NONE || (o == FFNRT_OVERLAP_SAME && same_ok && !args[j].output))
                continue;
            return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s and %s %s; %s", fn, args[i].name,
                              args[j].name, o == FFNRT_OVERLAP_SAME ? "are the same memory" : "overlap in memory",
                              rule);
        }
    }
    return FFNRT_OK;
}

void ffnrt_plan_tensor(ffnrt_context *ctx, ffnrt_dtype dtype, size_t ndim, const int64_t *shape, ffnrt_tensor *t)
{
    memset(t, 0, sizeof *t);
    t->ctx = ctx;
    t->dtype = dtype;
    t->ndim = ndim;
    t->numel = 1;
    for (size_t i = 0; i < ndim; i++) {
        t->shape[i] = shape[i];
        t->numel *= (size_t)shape[i];
    }
    t->bytes = t->numel * ffnrt_dtype_size(dtype);
}

ffnrt_status ffnrt_plan_op(ffnrt_context *ctx, const char *fn, ffnrt_plan **out, const char *op_text,
                           ffnrt_status (*run)(ffnrt_context *ctx, const void *arg), const void *arg)
{
    if (!out)
        return ffnrt_context_finish_call(ctx, ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT,
                                                         "%s: out is NULL", fn));
    *out = NULL;
    ffnrt_plan *plan = ffnrt_plan_new();
    if (!plan)
        return ffnrt_context_finish_call(ctx, ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY,
                                                         "%s: out of host memory", fn));
    ffnrt_plan_add_context(plan, ctx);
    ffnrt_plan_add(plan, "op", op_text, "as asked");
    ctx->plan_sink = plan;
    ffnrt_status st = run(ctx, arg);
    ctx->plan_sink = NULL;
    if (st == FFNRT_OK)
        *out = plan;
    else
        ffnrt_plan_destroy(plan);
    return ffnrt_context_finish_call(ctx, st);
}
