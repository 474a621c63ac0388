/* Splits an element-wise pass into dispatches that fit the device. */
#include "ops/ops.h"

#include <stdio.h>
#include <string.h>

/* Output words per work-item in shaders/storage.inc (ITEMS there). */
#define ITEMS_PER_ITEM 4u
#define PREFERRED_WORKGROUP 256u

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static const char *storage_define(ffnrt_dtype dtype)
{
    switch (dtype) {
    case FFNRT_DTYPE_F16: return "#define STORAGE_F16 1";
    case FFNRT_DTYPE_BF16: return "#define STORAGE_BF16 1";
    default: return "#define STORAGE_F32 1";
    }
}

ffnrt_status ffnrt_run_elementwise(ffnrt_context *ctx, const ffnrt_ew_launch *l)
{
    const ffnrt_limits *lim = &ctx->limits;
    uint32_t wg = lim->max_workgroup_size < PREFERRED_WORKGROUP ? lim->max_workgroup_size : PREFERRED_WORKGROUP;
    char defines[512];
    snprintf(defines, sizeof defines, "%s\n%s", storage_define(l->dtype), l->defines);
    ffnrt_bkernel *kernel = NULL;
    ffnrt_status st = FFNRT_OK;
    if (!ctx->plan_sink)
        st = ffnrt_context_kernel(ctx, l->file, "ffnrt_elementwise", defines, l->binding_count, l->params_size, wg,
                                  &kernel);
    if (st != FFNRT_OK)
        return st;
    ctx->last_op_ns = 0;
    if (l->rows == 0 || l->row_elems == 0)
        return FFNRT_OK;

    /* Rows per dispatch: each ranged binding must fit the buffer range and
     * start at an aligned offset; the output words must fit the 2-D grid of
     * workgroups; element indices stay 32-bit. */
    uint64_t esize = ffnrt_dtype_size(l->dtype);
    uint64_t epw = esize == 4 ? 1 : 2; /* elements per 32-bit word */
    uint64_t align = lim->buffer_offset_alignment < 4 ? 4 : lim->buffer_offset_alignment;
    uint64_t per_group = (uint64_t)wg * ITEMS_PER_ITEM;
    uint64_t grid = (uint64_t)lim->max_workgroup_count[0] * lim->max_workgroup_count[1];
    uint64_t max_rows = (grid * per_group * epw) / l->row_elems;
    if (max_rows > UINT32_MAX / l->row_elems)
        max_rows = UINT32_MAX / l->row_elems;
    uint64_t row_step = 1;
    for (uint32_t b = 0; b < l->binding_count; b++) {
        const ffnrt_ew_binding *eb = &l->bindings[b];
        if (eb->per_row == 0) {
            if (eb->tensor->bytes > lim->max_buffer_range)
                return ffnrt_fail(&ctx->error, FFNRT_ERROR_LIMIT_EXCEEDED,
                                  "a %zu-byte parameter tensor exceeds the device's buffer range of %llu bytes",
                                  eb->tensor->bytes, (unsigned long long)lim->max_buffer_range);
            continue;
        }
        uint64_t row_bytes = eb->per_row * esize;
        uint64_t fit = lim->max_buffer_range / row_bytes;
        if (fit < max_rows)
            max_rows = fit;
        uint64_t step = align / gcd64(align, row_bytes);
        row_step = row_step / gcd64(row_step, step) * step;
    }
    uint64_t chunk = l->rows;
    if (chunk > max_rows) {
        chunk = max_rows / row_step * row_step;
        if (chunk == 0)
            return ffnrt_fail(&ctx->error, FFNRT_ERROR_LIMIT_EXCEEDED,
                              "rows of %llu elements do not fit the device's buffer range (%llu bytes), "
                              "offset alignment (%llu) and workgroup counts",
                              (unsigned long long)l->row_elems, (unsigned long long)lim->max_buffer_range,
                              (unsigned long long)align);
    }

    if (ctx->plan_sink) {
        char choice[160];
        snprintf(choice, sizeof choice, "%s, %u work-items a group, %u words a work-item", l->file, wg,
                 ITEMS_PER_ITEM);
        ffnrt_plan_add(ctx->plan_sink, "kernel", choice,
                       "element-wise: %u work-items (the device allows %u) of %u 32-bit words each, so 16-bit "
                       "values are read and written as whole words",
                       wg, lim->max_workgroup_size, ITEMS_PER_ITEM);
        uint64_t dispatches = (l->rows + chunk - 1) / chunk;
        snprintf(choice, sizeof choice, "%llu dispatch%s of up to %llu elements", (unsigned long long)dispatches,
                 dispatches == 1 ? "" : "es", (unsigned long long)(chunk * l->row_elems));
        ffnrt_plan_add(ctx->plan_sink, "dispatches", choice,
                       "every binding within the %llu B buffer range at %llu-byte aligned offsets, groups within "
                       "%u x %u, element indices within 32 bits",
                       (unsigned long long)lim->max_buffer_range, (unsigned long long)align,
                       lim->max_workgroup_count[0], lim->max_workgroup_count[1]);
        return FFNRT_OK;
    }
    if ((st = ffnrt_batch_begin(ctx)) != FFNRT_OK)
        return st;
    ffnrt_binding bind[8];
    for (uint64_t row = 0; row < l->rows && st == FFNRT_OK; row += chunk) {
        uint64_t rows = l->rows - row < chunk ? l->rows - row : chunk;
        uint64_t n = rows * l->row_elems;
        for (uint32_t b = 0; b < l->binding_count; b++) {
            const ffnrt_ew_binding *eb = &l->bindings[b];
            uint64_t offset = eb->tensor->offset + (eb->per_row ? row * eb->per_row * esize : 0);
            uint64_t size = eb->per_row ? rows * eb->per_row * esize : eb->tensor->bytes;
            size = (size + 3) & ~(uint64_t)3; /* whole words; buffers are padded to them */
            bind[b] = (ffnrt_binding){eb->tensor->buffer, offset, size ? size : 4};
        }
        uint32_t head[2] = {(uint32_t)n, (uint32_t)(row * l->row_elems)};
        memcpy(l->params, head, sizeof head);
        uint64_t words = (n + epw - 1) / epw;
        uint64_t groups = (words + per_group - 1) / per_group;
        uint32_t gx = (uint32_t)(groups < lim->max_workgroup_count[0] ? groups : lim->max_workgroup_count[0]);
        uint32_t grid_groups[2] = {gx, (uint32_t)((groups + gx - 1) / gx)};
        st = ctx->ops->dispatch(ctx->dev, kernel, bind, l->binding_count, l->params, grid_groups, &ctx->error);
    }
    /* Submit even after a failed dispatch so the batch is closed. */
    return ffnrt_batch_end(ctx, st, &ctx->last_op_ns);
}

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

ffnrt_status ffnrt_compute_define(ffnrt_context *ctx, ffnrt_compute compute, ffnrt_dtype dtype, const char *fn,
                                  const char **define)
{
    *define = "";
    int automatic = compute == FFNRT_COMPUTE_AUTO;
    if (automatic) /* the policy, which already knows what the device has */
        compute = ctx->precision.fp16_arithmetic && dtype == FFNRT_DTYPE_F16 ? FFNRT_COMPUTE_F16 : FFNRT_COMPUTE_F32;
    if (ctx->plan_sink && (compute == FFNRT_COMPUTE_F32 || compute == FFNRT_COMPUTE_F16))
        ffnrt_plan_add(ctx->plan_sink, "compute", compute == FFNRT_COMPUTE_F16 ? "fp16" : "fp32", "%s",
                       !automatic ? "forced by the descriptor's compute"
                       : compute == FFNRT_COMPUTE_F16 ? "AUTO under the fast policy, on f16 tensors"
                       : ctx->policy == FFNRT_PRECISION_FAST && dtype == FFNRT_DTYPE_F16
                           ? "AUTO: the fast policy fell back (see precision)"
                           : "AUTO: fp32 arithmetic, rounded once to the storage type");
    if (compute == FFNRT_COMPUTE_F32)
        return FFNRT_OK;
    if (compute != FFNRT_COMPUTE_F16)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not a compute precision", fn,
                          (int)compute);
    if (!ctx->info.fp16_arithmetic)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_UNSUPPORTED,
                          "%s: fp16 arithmetic asked for, but %s has none (no %s); use FFNRT_COMPUTE_F32", fn,
                          ctx->info.name, ctx->info.backend == FFNRT_BACKEND_VULKAN ? "shaderFloat16" : "cl_khr_fp16");
    if (ctx->vetoes & FFNRT_QUIRK_FP16_ARITHMETIC)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_UNSUPPORTED,
                          "%s: fp16 arithmetic asked for, but the quirk table vetoes it on %s (%s); "
                          "FFNRT_QUIRKS=ignore or the ignore_quirks option overrides", fn, ctx->info.name,
                          ctx->quirk_notes);
    if (dtype != FFNRT_DTYPE_F16)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_UNSUPPORTED,
                          "%s: fp16 arithmetic works on f16 tensors, these are %s", fn, ffnrt_dtype_name(dtype));
    *define = "#define ARITH_F16 1";
    return FFNRT_OK;
}

ffnrt_status ffnrt_null_context(const char *fn)
{
    ffnrt_error err;
    ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    ffnrt_error_publish(&err);
    return err.status;
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
