/* Opening a context on a device: on one the device choice picked
 * (ffnrt_context_create, src/api/context.c) or measures for it, or on the
 * app's own (interop): the settings applied, the disk cache open and what
 * it holds for the device loaded. */
#include "tune/tune.h"
#include "core/device_faults.h"

#include <stdio.h>

/* After the device is open: the settings applied, the disk cache and what
 * it holds for this device. */
static ffnrt_status setup(ffnrt_context *ctx, ffnrt_error *err)
{
    if (ffnrt_configure(ctx, err) != FFNRT_OK)
        return err->status;
    const ffnrt_setting *off = ffnrt_setting_get(&ctx->settings, FFNRT_KNOB_CACHE, NULL, NULL);
    const ffnrt_setting *dir = ffnrt_setting_get(&ctx->settings, FFNRT_KNOB_CACHE_DIR, NULL, NULL);
    ffnrt_context_open_disk_cache(ctx, dir ? dir->text : NULL, off && off->v[0]);
    if (off && off->v[0])
        snprintf(ctx->disk.status, sizeof ctx->disk.status, "off (%.48s=%.160s)", off->from, off->text);
    ffnrt_calibration_load(ctx);
    ffnrt_tuning_load(ctx);
    return FFNRT_OK;
}

ffnrt_status ffnrt_context_open_device(const ffnrt_device_info *info, const ffnrt_settings *settings,
                                       const char *reason, ffnrt_context **out, ffnrt_error *err)
{
    *out = NULL;
    const ffnrt_backend_ops *ops = ffnrt_registry_backend(info->backend);
    ffnrt_open_options open_opts = ffnrt_open_options_of(settings);
    ffnrt_bdevice *dev = NULL;
    ffnrt_device_info opened;
    ffnrt_limits limits;
    if (!ops)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%d is not a backend", (int)info->backend);
    if (ops->open(info->index, &open_opts, &dev, &opened, &limits, err) != FFNRT_OK)
        return err->status;
    const ffnrt_backend_ops *real = ops;
    if (ffnrt_device_faults_wrap(real, dev, &ops, err) != FFNRT_OK) {
        real->close(dev);
        return err->status;
    }
    ffnrt_context *ctx;
    if (ffnrt_context_new(ops, dev, &opened, &limits, &ctx, err) != FFNRT_OK)
        return err->status;
    ctx->settings = *settings;
    snprintf(ctx->device_reason, sizeof ctx->device_reason, "%s", reason);
    if (setup(ctx, err) != FFNRT_OK) {
        ffnrt_context_destroy(ctx);
        return err->status;
    }
    *out = ctx;
    return FFNRT_OK;
}

ffnrt_open_options ffnrt_open_options_of(const ffnrt_settings *settings)
{
    const ffnrt_setting *validation = ffnrt_setting_get(settings, FFNRT_KNOB_VALIDATION, NULL, NULL);
    const ffnrt_setting *staging = ffnrt_setting_get(settings, FFNRT_KNOB_STAGING, NULL, NULL);
    const ffnrt_setting *timeout = ffnrt_setting_get(settings, FFNRT_KNOB_TIMEOUT, NULL, NULL);
    ffnrt_open_options o = {validation && validation->v[0], staging && staging->v[0],
                            (timeout ? timeout->v[0] : FFNRT_DEFAULT_DEVICE_TIMEOUT_MS) * 1000000ull};
    return o;
}

ffnrt_status ffnrt_context_adopt(const ffnrt_backend_ops *ops, ffnrt_bdevice *dev, const ffnrt_device_info *info,
                                 const ffnrt_limits *limits, const ffnrt_settings *settings, ffnrt_context **out,
                                 ffnrt_error *err)
{
    ffnrt_context *ctx;
    if (ffnrt_context_new(ops, dev, info, limits, &ctx, err) != FFNRT_OK)
        return err->status;
    ctx->app_handles = 1;
    ctx->settings = *settings;
    snprintf(ctx->device_reason, sizeof ctx->device_reason, "the app's own device, handed to ffnrt");
    if (setup(ctx, err) != FFNRT_OK) {
        ffnrt_context_destroy(ctx);
        return err->status;
    }
    *out = ctx;
    return FFNRT_OK;
}
