/* The tune floor: clients of the ops. Calibration measures devices with
 * the ops' own kernels; opening a context on a device (for the device
 * choice's measurements, for the device it chose, for the app's own) needs
 * it, so it lives here too. The public calls that use them
 * (ffnrt_context_create, ffnrt_context_calibrate, interop) are src/api/'s. */
#ifndef FFNRT_TUNE_H
#define FFNRT_TUNE_H

#include "dispatch/dispatch.h"
#include "ops/ops.h"

/* Measures the context's calibration once (then returns the kept one) and
 * keeps it on disk for its device, driver, profile and limits. */
ffnrt_status ffnrt_calibrate(ffnrt_context *ctx, ffnrt_calibration *out);
/* The context's calibration from the disk cache or this process, if known
 * and well formed (a malformed entry is set aside: measured again). */
void ffnrt_calibration_load(ffnrt_context *ctx);
/* The disk cache's name for the context's figures (the version, the
 * profile and the lowered limits they were measured under). */
void ffnrt_calibration_variant(const ffnrt_context *ctx, char *out, size_t cap);
/* A device's own figures (no profile, no lowered limits) as the device
 * choice weighs them: known (1) or not (0); measured by calibrate_device,
 * on a context of its own, with the base settings' disk cache. */
int ffnrt_figures_for_choice(ffnrt_disk_cache *disk, const ffnrt_device_info *info, ffnrt_calibration *out);
ffnrt_status ffnrt_calibrate_device(const ffnrt_settings *base, const ffnrt_device_info *info,
                                    ffnrt_calibration *out, ffnrt_error *err);

/* A context on one listed device with these settings: opened, configured,
 * its disk cache open and its calibration and tuning results loaded.
 * reason says why this device. */
ffnrt_status ffnrt_context_open_device(const ffnrt_device_info *info, const ffnrt_settings *settings,
                                       const char *reason, ffnrt_context **out, ffnrt_error *err);
/* The same for a device the backend opened from the app's own handles
 * (interop), with settings from ffnrt_settings_init; closes dev on failure. */
ffnrt_status ffnrt_context_adopt(const ffnrt_backend_ops *ops, ffnrt_bdevice *dev, const ffnrt_device_info *info,
                                 const ffnrt_limits *limits, const ffnrt_settings *settings, ffnrt_context **out,
                                 ffnrt_error *err);
/* The open options (validation, staging) the settings give. */
ffnrt_open_options ffnrt_open_options_of(const ffnrt_settings *settings);

#endif
