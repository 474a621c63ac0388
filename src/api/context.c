/* The public edge of context creation: ffnrt_context_create (the
 * settings, the device choice, measuring the devices whose speed decides
 * it once per device and driver, then the context on the chosen device)
 * and ffnrt_context_calibrate. */
#include "tune/tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Chooses a device for the settings: figures for the devices that tie on
 * type come from the disk cache, or are measured now (once per device and
 * driver, kept for later processes). */
static ffnrt_status choose(const ffnrt_settings *s, const ffnrt_device_info **chosen, char *reason, size_t cap,
                           ffnrt_error *err)
{
    ffnrt_device_request req;
    char name[256];
    ffnrt_device_request_of(s, &req, name, sizeof name);
    const ffnrt_device_info *infos;
    size_t count;
    if (ffnrt_registry_backend_devices(req.backend, &infos, &count, err) != FFNRT_OK)
        return err->status;
    if (req.backend != FFNRT_BACKEND_ANY) {
        ffnrt_error why;
        ffnrt_error_clear(&why);
        if (ffnrt_registry_backend(req.backend)->load(&why) != FFNRT_OK)
            return ffnrt_fail(err, FFNRT_ERROR_BACKEND_UNAVAILABLE, "%s", why.message);
    }
    if (count > 64)
        count = 64; /* the choice weighs at most 64 devices */
    ffnrt_calibration figures[64];
    int need[64] = {0};
    memset(figures, 0, sizeof figures);
    long pick = -1;
    if (ffnrt_choose_device(&req, infos, count, NULL, &pick, need, reason, cap, err) != FFNRT_OK)
        return err->status;
    if (pick < 0) {
        /* A tie of type: the figures decide. */
        const ffnrt_setting *off = ffnrt_setting_get(s, FFNRT_KNOB_CACHE, NULL, NULL);
        const ffnrt_setting *dir = ffnrt_setting_get(s, FFNRT_KNOB_CACHE_DIR, NULL, NULL);
        ffnrt_disk_cache disk;
        ffnrt_disk_cache_open(&disk, dir ? dir->text : NULL, off && off->v[0]);
        for (size_t i = 0; i < count; i++) {
            if (!need[i])
                continue;
            if (!ffnrt_figures_for_choice(&disk, &infos[i], &figures[i])) {
                ffnrt_error why;
                ffnrt_error_clear(&why);
                if (ffnrt_calibrate_device(s, &infos[i], &figures[i], &why) != FFNRT_OK)
                    figures[i].valid = -1; /* not measurable: capability decides */
            }
            if (figures[i].valid == 0)
                figures[i].valid = -1;
        }
        memset(need, 0, sizeof need);
        if (ffnrt_choose_device(&req, infos, count, figures, &pick, need, reason, cap, err) != FFNRT_OK)
            return err->status;
    }
    *chosen = &infos[pick];
    return FFNRT_OK;
}

ffnrt_status ffnrt_context_create(const ffnrt_context_options *options, ffnrt_context **out)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    ffnrt_context_options defaults = FFNRT_CONTEXT_OPTIONS_INIT;
    const ffnrt_context_options *o = options ? options : &defaults;
    ffnrt_settings *s = malloc(sizeof *s);
    char reason[1536];
    const ffnrt_device_info *chosen = NULL;
    if (!out)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_context_create: out is NULL");
    else if (!s)
        ffnrt_fail(&err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "ffnrt_context_create: out of host memory");
    else if (ffnrt_settings_init(s, o, &err) == FFNRT_OK && choose(s, &chosen, reason, sizeof reason, &err) == FFNRT_OK)
        ffnrt_context_open_device(chosen, s, reason, out, &err);
    if (out && err.status != FFNRT_OK)
        *out = NULL;
    free(s);
    ffnrt_error_publish(&err);
    return err.status;
}

ffnrt_status ffnrt_context_calibrate(ffnrt_context *ctx, double *copy_gbps, double *gemm_gflops, double *dispatch_us)
{
    if (!ctx)
        return ffnrt_null_handle("ffnrt_context_calibrate", "ctx");
    ffnrt_calibration cal;
    ffnrt_status st = ffnrt_calibrate(ctx, &cal);
    if (st == FFNRT_OK) {
        if (copy_gbps)
            *copy_gbps = cal.copy_gbps;
        if (gemm_gflops)
            *gemm_gflops = cal.gemm_gflops;
        if (dispatch_us)
            *dispatch_us = cal.dispatch_us;
    }
    return ffnrt_context_finish_call(ctx, st);
}
