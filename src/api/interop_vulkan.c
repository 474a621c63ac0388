/* The app's Vulkan device, buffers and command buffers (ffnrt_vulkan.h). */
#include "backend/vulkan/vk_interop.h"
#include "tune/tune.h"

#include <stdlib.h>

/* The context must be one made from the app's Vulkan handles. */
static ffnrt_status check_app_vulkan(ffnrt_context *ctx, const char *fn)
{
    if (ctx->ops->kind != FFNRT_BACKEND_VULKAN)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_WRONG_CONTEXT, "%s: the context is an %s context, not Vulkan", fn,
                          ffnrt_backend_name(ctx->ops->kind));
    if (!ctx->app_handles)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_WRONG_CONTEXT,
                          "%s: the context runs on ffnrt's own VkDevice; create it with ffnrt_context_create_vulkan "
                          "from the app's device",
                          fn);
    return FFNRT_OK;
}

ffnrt_status ffnrt_context_create_vulkan(const ffnrt_vulkan_device *device, const ffnrt_context_options *options,
                                         ffnrt_context **out)
{
    static const char fn[] = "ffnrt_context_create_vulkan";
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (out)
        *out = NULL;
    if (!out || !device)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, out ? "device" : "out");
    else if (!device->instance || !device->physical_device || !device->device || !device->queue)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: device->%s is VK_NULL_HANDLE", fn,
                   !device->instance ? "instance" : !device->physical_device ? "physical_device"
                                                   : !device->device         ? "device"
                                                                             : "queue");
    ffnrt_settings *settings = err.status == FFNRT_OK ? ffnrt_settings_new(options, fn, &err) : NULL;
    if (settings) {
        ffnrt_bdevice *dev;
        ffnrt_device_info info;
        ffnrt_limits limits;
        ffnrt_open_options open_opts = ffnrt_open_options_of(settings);
        if (ffnrt_vk_open_external(device, &open_opts, &dev, &info, &limits, &err) == FFNRT_OK)
            ffnrt_context_adopt(ffnrt_vulkan_backend(), dev, &info, &limits, settings, out, &err);
    }
    free(settings);
    ffnrt_error_publish(&err);
    return err.status;
}

ffnrt_status ffnrt_tensor_wrap_vulkan_buffer(ffnrt_context *ctx, VkBuffer buffer, VkDeviceSize offset,
                                             VkDeviceSize range, ffnrt_dtype dtype, size_t ndim,
                                             const int64_t *shape, ffnrt_tensor **out)
{
    static const char fn[] = "ffnrt_tensor_wrap_vulkan_buffer";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_error *err = &ctx->error;
    ffnrt_status st = FFNRT_OK;
    if (!out)
        return ffnrt_context_finish_call(ctx, ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: out is NULL", fn));
    *out = NULL;
    st = check_app_vulkan(ctx, fn);
    if (st == FFNRT_OK && buffer == VK_NULL_HANDLE)
        st = ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: buffer is VK_NULL_HANDLE", fn);
    if (st == FFNRT_OK && range == VK_WHOLE_SIZE)
        st = ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                        "%s: range is VK_WHOLE_SIZE; give the bytes the tensor may use", fn);
    uint64_t align = ctx->limits.buffer_offset_alignment ? ctx->limits.buffer_offset_alignment : 1;
    if (st == FFNRT_OK && offset % align)
        st = ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                        "%s: offset %llu is not a multiple of minStorageBufferOffsetAlignment (%llu)", fn,
                        (unsigned long long)offset, (unsigned long long)align);
    ffnrt_tensor *t = NULL;
    if (st == FFNRT_OK)
        st = ffnrt_tensor_new(ctx, dtype, ndim, shape, fn, &t);
    uint64_t padded = t ? (t->bytes + 3) & ~(uint64_t)3 : 0;
    if (st == FFNRT_OK && range < padded)
        st = ffnrt_fail(err, FFNRT_ERROR_SHAPE_MISMATCH,
                        "%s: range is %llu bytes; the %s tensor needs %llu (%zu bytes rounded up to 32-bit words)",
                        fn, (unsigned long long)range, ffnrt_dtype_name(dtype), (unsigned long long)padded, t->bytes);
    if (st == FFNRT_OK)
        st = ffnrt_vk_buffer_wrap(ctx->dev, buffer, &t->buffer, err);
    if (st != FFNRT_OK) {
        free(t);
        return ffnrt_context_finish_call(ctx, st);
    }
    t->offset = offset;
    t->app_memory = (uint64_t)buffer;
    ffnrt_tensor_link(ctx, t);
    *out = t;
    return ffnrt_context_finish_call(ctx, FFNRT_OK);
}

ffnrt_status ffnrt_vulkan_record_begin(ffnrt_context *ctx, VkCommandBuffer cmd)
{
    static const char fn[] = "ffnrt_vulkan_record_begin";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_status st = check_app_vulkan(ctx, fn);
    if (st == FFNRT_OK && cmd == VK_NULL_HANDLE)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: cmd is VK_NULL_HANDLE", fn);
    if (st == FFNRT_OK && ctx->external)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT,
                        "%s: already recording; call ffnrt_vulkan_record_end first", fn);
    if (st == FFNRT_OK)
        st = ffnrt_context_settle(ctx);
    if (st == FFNRT_OK)
        st = ffnrt_vk_record_begin(ctx->dev, cmd, &ctx->error);
    if (st == FFNRT_OK)
        ctx->external = 1;
    return ffnrt_context_finish_call(ctx, st);
}

ffnrt_status ffnrt_vulkan_record_end(ffnrt_context *ctx)
{
    static const char fn[] = "ffnrt_vulkan_record_end";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_status st = check_app_vulkan(ctx, fn);
    if (st == FFNRT_OK && !ctx->external)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: not recording", fn);
    if (st == FFNRT_OK) {
        ffnrt_vk_record_end(ctx->dev);
        ctx->external = 0;
    }
    return ffnrt_context_finish_call(ctx, st);
}
