/* The app's OpenCL context, queue, buffers and events (ffnrt_opencl.h). */
#include "backend/opencl/cl_interop.h"
#include "tune/tune.h"
#include "ffnrt_opencl.h"

#include <stdlib.h>

static ffnrt_status check_app_opencl(ffnrt_context *ctx, const char *fn)
{
    if (ctx->ops->kind != FFNRT_BACKEND_OPENCL)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_WRONG_CONTEXT, "%s: the context is a %s context, not OpenCL", fn,
                          ffnrt_backend_name(ctx->ops->kind));
    return FFNRT_OK;
}

ffnrt_status ffnrt_context_create_opencl(cl_context context, cl_device_id device, cl_command_queue queue,
                                         const ffnrt_context_options *options, ffnrt_context **out)
{
    static const char fn[] = "ffnrt_context_create_opencl";
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (out)
        *out = NULL;
    if (!out)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: out is NULL", fn);
    else if (!context || !device || !queue)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                   !context ? "context" : !device ? "device" : "queue");
    ffnrt_settings *settings = err.status == FFNRT_OK ? ffnrt_settings_new(options, fn, &err) : NULL;
    if (settings) {
        ffnrt_bdevice *dev;
        ffnrt_device_info info;
        ffnrt_limits limits;
        if (ffnrt_cl_open_external(context, device, queue, &dev, &info, &limits, &err) == FFNRT_OK)
            ffnrt_context_adopt(ffnrt_opencl_backend(), dev, &info, &limits, settings, out, &err);
    }
    free(settings);
    ffnrt_error_publish(&err);
    return err.status;
}

ffnrt_status ffnrt_tensor_wrap_opencl_buffer(ffnrt_context *ctx, cl_mem buffer, size_t offset, ffnrt_dtype dtype,
                                             size_t ndim, const int64_t *shape, ffnrt_tensor **out)
{
    static const char fn[] = "ffnrt_tensor_wrap_opencl_buffer";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_error *err = &ctx->error;
    if (!out)
        return ffnrt_context_finish_call(ctx, ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: out is NULL", fn));
    *out = NULL;
    ffnrt_status st = check_app_opencl(ctx, fn);
    if (st == FFNRT_OK && !buffer)
        st = ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: buffer is NULL", fn);
    ffnrt_tensor *t = NULL;
    if (st == FFNRT_OK)
        st = ffnrt_tensor_new(ctx, dtype, ndim, shape, fn, &t);
    uint64_t origin = 0;
    cl_mem memory = NULL;
    if (st == FFNRT_OK)
        st = ffnrt_cl_buffer_wrap(ctx->dev, buffer, offset, (t->bytes + 3) & ~(uint64_t)3, &t->buffer, &origin,
                                  &memory, err);
    uint64_t align = ctx->limits.buffer_offset_alignment ? ctx->limits.buffer_offset_alignment : 1;
    if (st == FFNRT_OK && (origin + offset) % align) {
        st = ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                        "%s: offset %zu (at %llu in the parent buffer) is not a multiple of the device's "
                        "CL_DEVICE_MEM_BASE_ADDR_ALIGN (%llu bytes)",
                        fn, offset, (unsigned long long)(origin + offset), (unsigned long long)align);
        ctx->ops->buffer_destroy(ctx->dev, t->buffer);
    }
    if (st != FFNRT_OK) {
        free(t);
        return ffnrt_context_finish_call(ctx, st);
    }
    t->offset = origin + offset;
    t->app_memory = (uint64_t)(uintptr_t)memory;
    ffnrt_tensor_link(ctx, t);
    *out = t;
    return ffnrt_context_finish_call(ctx, FFNRT_OK);
}

ffnrt_status ffnrt_opencl_enqueue_begin(ffnrt_context *ctx, cl_uint n, const cl_event *wait_list)
{
    static const char fn[] = "ffnrt_opencl_enqueue_begin";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_status st = check_app_opencl(ctx, fn);
    if (st == FFNRT_OK && n > 0 && !wait_list)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %u events but wait_list is NULL", fn, n);
    if (st == FFNRT_OK && ctx->external)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT,
                        "%s: already enqueueing; call ffnrt_opencl_enqueue_end first", fn);
    if (st == FFNRT_OK)
        st = ffnrt_cl_enqueue_begin(ctx->dev, n, wait_list, &ctx->error);
    if (st == FFNRT_OK)
        ctx->external = 1;
    return ffnrt_context_finish_call(ctx, st);
}

ffnrt_status ffnrt_opencl_enqueue_end(ffnrt_context *ctx, cl_event *out_event)
{
    static const char fn[] = "ffnrt_opencl_enqueue_end";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    if (out_event)
        *out_event = NULL;
    ffnrt_status st = check_app_opencl(ctx, fn);
    if (st == FFNRT_OK && !ctx->external)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: not enqueueing", fn);
    if (st == FFNRT_OK) {
        ctx->external = 0;
        st = ffnrt_cl_enqueue_end(ctx->dev, out_event, &ctx->error);
    }
    return ffnrt_context_finish_call(ctx, st);
}
