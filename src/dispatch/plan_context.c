/* The context's choices in a plan (device, profile, limits, precision,
 * f16 conversion, calibration, quirks, settings), which ffnrt_context_plan
 * (src/api/context.c) and every op's plan begin with. */
#include "dispatch/dispatch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------- context choices */

void ffnrt_plan_add_context(ffnrt_plan *plan, ffnrt_context *ctx)
{
    const ffnrt_device_info *d = &ctx->info;
    char choice[512];
    snprintf(choice, sizeof choice, "%s (%s %u, %s)", d->name, ffnrt_backend_name(d->backend), d->index,
             d->driver_version);
    ffnrt_plan_add(plan, "device", choice, "%s", ctx->device_reason);
    snprintf(choice, sizeof choice, "%s", ctx->profile ? ctx->profile->name : "none");
    ffnrt_plan_add(plan, "profile", choice, "%s",
                   ctx->profile ? ctx->profile->models : "the device's own limits (FFNRT_PROFILE or options.profile to model a GPU)");
    snprintf(choice, sizeof choice,
             "range %" PRIu64 " B, shared %" PRIu64 " B, workgroup %u, groups %u, align %" PRIu64
             ", subgroup %u, bindings %u",
             ctx->limits.max_buffer_range, d->shared_memory_size, ctx->limits.max_workgroup_size,
             ctx->limits.max_workgroup_count[0], ctx->limits.buffer_offset_alignment, d->subgroup_size,
             ctx->limits.max_bindings);
    ffnrt_plan_add(plan, "limits", choice, "%s", ctx->limit_notes[0] ? ctx->limit_notes : "the device's own");
    static const char *const policy_names[] = {"exact", "balanced", "fast"};
    snprintf(choice, sizeof choice, "%s: storage %s, arithmetic %s", policy_names[ctx->policy],
             ffnrt_dtype_name(ctx->precision.storage), ctx->precision.fp16_arithmetic ? "fp16" : "fp32");
    ffnrt_plan_add(plan, "precision", choice, "%s", ctx->precision.reason);
    ffnrt_plan_add(plan, "f16 conversion", ffnrt_half_conversion_name(ctx->half_conversion.kind), "%s",
                   ctx->half_conversion.reason);
    static const struct {
        unsigned bit;
        const char *name;
    } veto_names[] = {{FFNRT_QUIRK_FP16_ARITHMETIC, "fp16 arithmetic"},
                      {FFNRT_QUIRK_STORAGE_16BIT, "16-bit storage"},
                      {FFNRT_QUIRK_TWO_ITEM_TILES, "2-item GEMM tiles"},
                      {FFNRT_QUIRK_PROGRAM_BINARY, "driver binaries in the disk cache"}};
    char vetoes[160] = "";
    for (size_t i = 0; i < sizeof veto_names / sizeof veto_names[0]; i++)
        if (ctx->vetoes & veto_names[i].bit) {
            size_t len = strlen(vetoes);
            snprintf(vetoes + len, sizeof vetoes - len, "%s%s", len ? ", " : "veto ", veto_names[i].name);
        }
    if (ctx->calibration.valid) {
        const ffnrt_calibration *k = &ctx->calibration;
        int len = snprintf(choice, sizeof choice, "copy %.2f GB/s, GEMM %.2f GFLOP/s, dispatch %.1f us; at decode "
                           "fused %.2fx unfused, integer path", k->copy_gbps, k->gemm_gflops, k->dispatch_us,
                           k->fused_speedup);
        for (int f = 0; f < FFNRT_WEIGHT_FORMAT_COUNT && len > 0 && (size_t)len < sizeof choice; f++)
            if (k->int_dot_speedup[f] > 0)
                len += snprintf(choice + len, sizeof choice - (size_t)len, " %s %.2fx",
                                ffnrt_weight_format_name((ffnrt_weight_format)f), k->int_dot_speedup[f]);
    }
    ffnrt_plan_add(plan, "calibration", ctx->calibration.valid ? choice : "not measured", "%s",
                   ctx->calibration.valid ? "measured once on this device with ffnrt's copy and GEMM kernels, and a "
                                            "gated layer at decode each way (kept in the disk cache for the device "
                                            "and driver)"
                                          : "ffnrt_context_calibrate (ffnrt plan --calibrate) measures it; until "
                                            "then the kernel choice uses the token threshold");
    /* The first call's cost in a new process: kernels are built then. */
    ffnrt_build_times times = ffnrt_build_times_of(ctx);
    const ffnrt_build_times *bt = &times;
    if (bt->source_n || bt->cached_n)
        snprintf(choice, sizeof choice, "%.0f ms a kernel from source (n = %u), %.0f ms from the disk cache (n = %u)",
                 bt->source_ms, bt->source_n, bt->cached_ms, bt->cached_n);
    ffnrt_plan_add(plan, "first call", bt->source_n || bt->cached_n ? choice : "not measured yet", "%s",
                   "each new process builds the kernels an op uses at its first call (one for each dispatch row "
                   "of its plan; every later call reuses them), the driver's own compile included (llvmpipe's "
                   "happens at a pipeline's first, empty dispatch, outside the device timeout); means of the last "
                   "builds on this device, kept in the disk cache");
    ffnrt_plan_add(plan, "quirks", ctx->vetoes ? vetoes : "none", "%s",
                   ctx->quirk_notes[0] ? ctx->quirk_notes : "no entry of the quirk table matches this device");
    char settings[1024];
    ffnrt_settings_describe(&ctx->settings, settings, sizeof settings);
    ffnrt_plan_add(plan, "settings", settings,
                   "every knob not listed is at its default; one precedence: descriptor > ffnrt_context_force or "
                   "options > environment (read when the context was created) > tuned > default");
}
