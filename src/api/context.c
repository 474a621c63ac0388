/* The context's public calls: ffnrt_context_create (the settings, the
 * device choice, measuring the devices whose speed decides it once per
 * device and driver, then the context on the chosen device),
 * ffnrt_context_calibrate, the limit profiles, the plan and the forced
 * choices, and what the context tells (device, errors, caches, kernels,
 * memory, times, the asynchronous mode). Each checks its arguments, asks
 * the floor that knows and ends the call; the context itself is core's
 * (ffnrt_context_destroy with it). */
#include "tune/tune.h"

#include <inttypes.h>
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
    if (count == 0) {
        /* Nothing to choose from: each backend's own reason. */
        char why[FFNRT_ERROR_MESSAGE_SIZE];
        if (ffnrt_registry_why_none(req.backend, why, sizeof why - 20))
            return ffnrt_fail(err, FFNRT_ERROR_BACKEND_UNAVAILABLE, "no device found: %s", why);
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

/* ------------------------------------------------------------ the rest */

ffnrt_status ffnrt_context_cache_stats(const ffnrt_context *ctx, ffnrt_cache_stats *out)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!ctx || !out) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_context_cache_stats: %s is NULL",
                   ctx ? "out" : "ctx");
    } else {
        const ffnrt_disk_cache *c = &ctx->disk;
        out->enabled = c->enabled;
        out->directory = c->dir;
        out->status = c->status;
        out->last_note = c->last_note;
        out->hits = c->hits;
        out->misses = c->misses;
        out->rejected = c->rejected;
        out->writes = c->writes;
        out->write_failures = c->write_failures;
    }
    ffnrt_error_publish(&err);
    return err.status;
}

ffnrt_status ffnrt_context_kernel_stats(const ffnrt_context *ctx, ffnrt_kernel_stats *out)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!ctx || !out) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_context_kernel_stats: %s is NULL", ctx ? "out" : "ctx");
    } else {
        out->built = ctx->kernel_count;
        out->loaded = ctx->kernels_loaded;
        out->compiled = ctx->kernel_count - ctx->kernels_loaded;
        out->build_s = 1e-3 * ctx->kernel_build_ms;
    }
    ffnrt_error_publish(&err);
    return err.status;
}

ffnrt_status ffnrt_context_get_device_info(const ffnrt_context *ctx, ffnrt_device_info *info)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!ctx || !info)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_context_get_device_info: %s is NULL",
                   ctx ? "info" : "ctx");
    else
        *info = ctx->info;
    ffnrt_error_publish(&err);
    return err.status;
}

const char *ffnrt_context_last_error(const ffnrt_context *ctx)
{
    return ctx ? ctx->error.message : "ffnrt_context_last_error: ctx is NULL";
}

const char *ffnrt_context_build_log(const ffnrt_context *ctx)
{
    return ctx && ctx->build_log ? ctx->build_log : "";
}

uint64_t ffnrt_context_validation_messages(const ffnrt_context *ctx)
{
    if (!ctx || !ctx->ops->validation_messages)
        return 0;
    return ctx->ops->validation_messages(ctx->dev);
}

ffnrt_status ffnrt_context_last_op_time(const ffnrt_context *ctx, uint64_t *device_ns)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!ctx || !device_ns)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_context_last_op_time: %s is NULL",
                   ctx ? "device_ns" : "ctx");
    else
        *device_ns = ctx->last_op_ns;
    ffnrt_error_publish(&err);
    return err.status;
}

ffnrt_status ffnrt_context_memory(ffnrt_context *ctx, uint64_t *in_use, uint64_t *peak, int reset_peak)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!ctx) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_context_memory: ctx is NULL");
    } else {
        if (reset_peak)
            ctx->allocated_peak = ctx->allocated;
        if (in_use)
            *in_use = ctx->allocated;
        if (peak)
            *peak = ctx->allocated_peak;
    }
    ffnrt_error_publish(&err);
    return err.status;
}

ffnrt_status ffnrt_context_set_async(ffnrt_context *ctx, int async)
{
    if (!ctx)
        return ffnrt_null_handle("ffnrt_context_set_async", "ctx");
    ffnrt_status st = FFNRT_OK;
    if (ctx->async && !async)
        st = ffnrt_context_wait(ctx);
    if (st == FFNRT_OK)
        ctx->async = async != 0;
    return ffnrt_context_finish_call(ctx, st);
}

ffnrt_status ffnrt_context_wait(ffnrt_context *ctx)
{
    if (!ctx)
        return ffnrt_null_handle("ffnrt_context_wait", "ctx");
    uint64_t ns = 0;
    ffnrt_status st = ctx->ops->wait(ctx->dev, &ns, &ctx->error);
    /* After synchronous ops there is nothing to wait for: keep their time. */
    if (ctx->async || ns || ctx->async_ns)
        ctx->last_op_ns = ctx->async_ns + ns;
    ctx->async_ns = 0;
    return ffnrt_context_finish_call(ctx, st);
}

ffnrt_status ffnrt_context_plan(ffnrt_context *ctx, ffnrt_plan **out)
{
    if (!ctx)
        return ffnrt_null_handle("ffnrt_context_plan", "ctx");
    ffnrt_status st = FFNRT_OK;
    if (!out)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_context_plan: out is NULL");
    else if (!(*out = ffnrt_plan_new()))
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "ffnrt_context_plan: out of host memory");
    else
        ffnrt_plan_add_context(*out, ctx);
    return ffnrt_context_finish_call(ctx, st);
}

ffnrt_status ffnrt_context_precision(const ffnrt_context *ctx, ffnrt_dtype *storage, int *fp16_arithmetic)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!ctx)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_context_precision: ctx is NULL");
    else {
        if (storage)
            *storage = ctx->precision.storage;
        if (fp16_arithmetic)
            *fp16_arithmetic = ctx->precision.fp16_arithmetic;
    }
    ffnrt_error_publish(&err);
    return err.status;
}

ffnrt_status ffnrt_context_force(ffnrt_context *ctx, const char *what, const char *value)
{
    if (!ctx)
        return ffnrt_null_handle("ffnrt_context_force", "ctx");
    return ffnrt_context_finish_call(ctx, ffnrt_settings_force(&ctx->settings, what, value, &ctx->error));
}

ffnrt_status ffnrt_setting_info(size_t i, const char **name, const char **env, int *forceable)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (i >= FFNRT_KNOB_COUNT || !name || !env || !forceable) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_setting_info: %s",
                   i >= FFNRT_KNOB_COUNT ? "no such setting" : "name, env or forceable is NULL");
    } else {
        *name = ffnrt_knob_name((ffnrt_knob)i);
        *env = ffnrt_knob_env((ffnrt_knob)i);
        *forceable = ffnrt_knob_forceable((ffnrt_knob)i);
    }
    ffnrt_error_publish(&err);
    return err.status;
}

ffnrt_status ffnrt_profile_info(size_t i, const char **name, const char **description)
{
    static _Thread_local char text[640];
    ffnrt_error err;
    ffnrt_error_clear(&err);
    const ffnrt_profile *p = ffnrt_profile_at(i);
    if (!p || !name || !description) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_profile_info: %s",
                   p ? "name or description is NULL" : "no such profile");
    } else {
        snprintf(text, sizeof text,
                 "%s: shared memory %" PRIu64 " B, workgroup %u invocations, %u groups a dimension, "
                 "buffer range %" PRIu64 " MiB, subgroup %u, fp16 arithmetic %s, 16-bit storage %s. Source: %s",
                 p->models, p->max_shared_memory, p->max_workgroup_size, p->max_workgroup_count,
                 p->max_buffer_range >> 20, p->subgroup_size, p->fp16_arithmetic ? "yes" : "no",
                 p->storage_16bit ? "yes" : "no", p->source);
        *name = p->name;
        *description = text;
    }
    ffnrt_error_publish(&err);
    return err.status;
}
