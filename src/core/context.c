/* Context: device choice, limits, error state and the kernel cache. */
#include "core/context.h"
#include "core/shader_sources.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

ffnrt_status ffnrt_context_finish_call(ffnrt_context *ctx, ffnrt_status status)
{
    if (status == FFNRT_OK)
        ffnrt_error_clear(&ctx->error);
    else if (ctx->error.status != status) /* a path that set no message */
        ffnrt_fail(&ctx->error, status, "%s", ffnrt_status_string(status));
    ffnrt_error_publish(&ctx->error);
    return status;
}

/* ---------------------------------------------------------- device choice */

static int type_rank(ffnrt_device_type t)
{
    switch (t) {
    case FFNRT_DEVICE_TYPE_DISCRETE_GPU: return 4;
    case FFNRT_DEVICE_TYPE_INTEGRATED_GPU: return 3;
    case FFNRT_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case FFNRT_DEVICE_TYPE_CPU: return 1;
    default: return 0;
    }
}

static int name_matches(const char *name, const char *pattern)
{
    size_t n = strlen(pattern);
    for (const char *s = name; *s; s++)
        if (strncasecmp(s, pattern, n) == 0)
            return 1;
    return n == 0;
}

typedef struct device_request {
    ffnrt_backend backend;
    long index;       /* -1: any */
    const char *name; /* NULL: any */
} device_request;

/* Parses FFNRT_DEVICE: "opencl", "vulkan:1", "vulkan:llvmpipe" or a name
 * substring such as "pocl". */
static void parse_device_env(const char *spec, device_request *req, char *name_buf, size_t cap)
{
    const char *colon = strchr(spec, ':');
    size_t head = colon ? (size_t)(colon - spec) : strlen(spec);
    ffnrt_backend b = FFNRT_BACKEND_ANY;
    if (head == 6 && strncasecmp(spec, "opencl", 6) == 0)
        b = FFNRT_BACKEND_OPENCL;
    else if (head == 6 && strncasecmp(spec, "vulkan", 6) == 0)
        b = FFNRT_BACKEND_VULKAN;
    const char *rest = b == FFNRT_BACKEND_ANY ? spec : colon ? colon + 1 : "";
    req->backend = b;
    if (*rest) {
        char *end;
        long idx = strtol(rest, &end, 10);
        if (*end == '\0' && end != rest) {
            req->index = idx;
        } else {
            snprintf(name_buf, cap, "%s", rest);
            req->name = name_buf;
        }
    }
}

static ffnrt_status choose_device(const device_request *req, const ffnrt_device_info **chosen,
                                  ffnrt_error *err)
{
    const ffnrt_device_info *infos;
    size_t count;
    ffnrt_status st = ffnrt_registry_devices(&infos, &count, err);
    if (st != FFNRT_OK)
        return st;
    if (req->backend != FFNRT_BACKEND_ANY) {
        const ffnrt_backend_ops *ops = ffnrt_registry_backend(req->backend);
        ffnrt_error why;
        ffnrt_error_clear(&why);
        if (ops->load(&why) != FFNRT_OK)
            return ffnrt_fail(err, FFNRT_ERROR_BACKEND_UNAVAILABLE, "%s", why.message);
    }
    const ffnrt_device_info *best = NULL;
    for (size_t i = 0; i < count; i++) {
        const ffnrt_device_info *d = &infos[i];
        if (req->backend != FFNRT_BACKEND_ANY && d->backend != req->backend)
            continue;
        if (req->index >= 0 && (long)d->index != req->index)
            continue;
        if (req->name && !name_matches(d->name, req->name))
            continue;
        /* Best type first; among equals the first found (OpenCL before Vulkan). */
        if (!best || type_rank(d->type) > type_rank(best->type))
            best = d;
    }
    if (!best)
        return ffnrt_fail(err, count ? FFNRT_ERROR_DEVICE_NOT_FOUND : FFNRT_ERROR_BACKEND_UNAVAILABLE,
                          "no device matches backend=%s index=%ld name=%s (%zu devices found)",
                          ffnrt_backend_name(req->backend), req->index,
                          req->name ? req->name : "any", count);
    *chosen = best;
    return FFNRT_OK;
}

/* ---------------------------------------------------------------- limits */

static ffnrt_status lower_limit64(uint64_t *limit, uint64_t want, const char *what, ffnrt_error *err)
{
    if (want == 0)
        return FFNRT_OK;
    if (want > *limit)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                          "%s=%" PRIu64 " is above the device's %" PRIu64 " (limits can only be lowered)",
                          what, want, *limit);
    *limit = want;
    return FFNRT_OK;
}

static ffnrt_status apply_limits(ffnrt_limits *lim, uint64_t range, uint64_t count, uint64_t wg,
                                 ffnrt_error *err)
{
    ffnrt_status st = lower_limit64(&lim->max_buffer_range, range, "max_buffer_range", err);
    uint64_t c0 = lim->max_workgroup_count[0], c1 = lim->max_workgroup_count[1];
    uint64_t w = lim->max_workgroup_size;
    if (st == FFNRT_OK && count) {
        uint64_t smaller = c0 < c1 ? c0 : c1;
        st = lower_limit64(&smaller, count, "max_workgroup_count", err);
        lim->max_workgroup_count[0] = lim->max_workgroup_count[1] = (uint32_t)smaller;
    }
    if (st == FFNRT_OK && wg) {
        st = lower_limit64(&w, wg, "max_workgroup_size", err);
        lim->max_workgroup_size = (uint32_t)w;
    }
    if (st == FFNRT_OK && lim->max_buffer_range < lim->buffer_offset_alignment)
        st = ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                        "max_buffer_range %" PRIu64 " is below the offset alignment %" PRIu64,
                        lim->max_buffer_range, lim->buffer_offset_alignment);
    return st;
}

/* FFNRT_LIMITS="max_buffer_range=65536,max_workgroup_count=64,max_workgroup_size=32,max_memory=1048576" */
static ffnrt_status parse_limits_env(const char *spec, uint64_t *range, uint64_t *count,
                                     uint64_t *wg, uint64_t *memory, ffnrt_error *err)
{
    const char *s = spec;
    while (*s) {
        const char *eq = strchr(s, '=');
        if (!eq)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "FFNRT_LIMITS: expected key=value in \"%s\"", s);
        char *end;
        unsigned long long v = strtoull(eq + 1, &end, 0);
        size_t klen = (size_t)(eq - s);
        if (end == eq + 1 || (*end && *end != ','))
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "FFNRT_LIMITS: bad number in \"%s\"", s);
        if (klen == 16 && strncmp(s, "max_buffer_range", 16) == 0)
            *range = v;
        else if (klen == 19 && strncmp(s, "max_workgroup_count", 19) == 0)
            *count = v;
        else if (klen == 18 && strncmp(s, "max_workgroup_size", 18) == 0)
            *wg = v;
        else if (klen == 10 && strncmp(s, "max_memory", 10) == 0)
            *memory = v;
        else
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "FFNRT_LIMITS: unknown limit \"%.*s\"",
                              (int)klen, s);
        s = *end ? end + 1 : end;
    }
    return FFNRT_OK;
}

/* --------------------------------------------------------------- context */

static int env_true(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

ffnrt_status ffnrt_context_create(const ffnrt_context_options *options, ffnrt_context **out)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    ffnrt_context_options defaults = FFNRT_CONTEXT_OPTIONS_INIT;
    const ffnrt_context_options *o = options ? options : &defaults;
    ffnrt_context *ctx = NULL;
    char env_name[256];
    device_request req = {o->backend, o->device_index, o->device_name};
    uint64_t range = o->max_buffer_range, count = o->max_workgroup_count, wg = o->max_workgroup_size;
    uint64_t memory = 0;
    const ffnrt_device_info *chosen = NULL;

    if (!out) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_context_create: out is NULL");
        goto done;
    }
    *out = NULL;
    if (o->backend != FFNRT_BACKEND_ANY && o->backend != FFNRT_BACKEND_OPENCL &&
        o->backend != FFNRT_BACKEND_VULKAN) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_context_create: %d is not a backend",
                   (int)o->backend);
        goto done;
    }
    const char *env_device = getenv("FFNRT_DEVICE");
    if (o->backend == FFNRT_BACKEND_ANY && o->device_index < 0 && !o->device_name && env_device &&
        *env_device)
        parse_device_env(env_device, &req, env_name, sizeof env_name);
    const char *env_limits = getenv("FFNRT_LIMITS");
    if (env_limits && parse_limits_env(env_limits, &range, &count, &wg, &memory, &err) != FFNRT_OK)
        goto done;
    if (choose_device(&req, &chosen, &err) != FFNRT_OK)
        goto done;

    ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        ffnrt_fail(&err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "ffnrt_context_create: out of host memory");
        goto done;
    }
    ctx->ops = ffnrt_registry_backend(chosen->backend);
    ctx->max_memory = memory;
    ffnrt_open_options open_opts = {o->validation || env_true("FFNRT_VALIDATION")};
    if (ctx->ops->open(chosen->index, &open_opts, &ctx->dev, &ctx->info, &ctx->limits, &err) != FFNRT_OK)
        goto done;
    if (apply_limits(&ctx->limits, range, count, wg, &err) != FFNRT_OK)
        goto done;
    /* The info users see reports the limits ffnrt plans with. */
    ctx->info.max_buffer_range = ctx->limits.max_buffer_range;
    ctx->info.max_workgroup_size = ctx->limits.max_workgroup_size;
    for (int i = 0; i < 3; i++)
        ctx->info.max_workgroup_count[i] = ctx->limits.max_workgroup_count[i];
    *out = ctx;
    ctx = NULL;
done:
    ffnrt_context_destroy(ctx);
    ffnrt_error_publish(&err);
    return err.status;
}

void ffnrt_context_destroy(ffnrt_context *ctx)
{
    if (!ctx)
        return;
    while (ctx->tensors)
        ffnrt_tensor_destroy(ctx->tensors);
    for (size_t i = 0; i < ctx->kernel_count; i++) {
        ctx->ops->kernel_destroy(ctx->dev, ctx->kernels[i].kernel);
        free(ctx->kernels[i].key);
    }
    free(ctx->kernels);
    free(ctx->build_log);
    if (ctx->dev)
        ctx->ops->close(ctx->dev);
    free(ctx);
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

/* ----------------------------------------------------------- kernel cache */

/* Kernel text: the API's prelude, the build defines, then the shared
 * files every kernel may use, then the op's own file. */
static char *concat_source(const ffnrt_context *ctx, const char *file, const char *defines,
                           uint32_t workgroup_size, int inject_error)
{
    int vulkan = ctx->ops->kind == FFNRT_BACKEND_VULKAN;
    const char *parts[] = {
        vulkan ? "#version 450\n" : "",
        NULL, /* defines, below */
        inject_error ? "#error FFNRT_INJECT_COMPILE_ERROR is set\n" : "",
        ffnrt_shader_source(vulkan ? "prelude_glsl.glsl" : "prelude_opencl.cl"),
        ffnrt_shader_source("math.inc"),
        ffnrt_shader_source("math_grad.inc"),
        ffnrt_shader_source("storage.inc"),
        ffnrt_shader_source(file),
    };
    char head[64];
    snprintf(head, sizeof head, "#define WG_SIZE %u\n", workgroup_size);
    size_t len = strlen(head) + strlen(defines) + 2;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (i != 1 && !parts[i])
            return NULL;
        len += i == 1 ? 0 : strlen(parts[i]) + 1;
    }
    char *src = malloc(len);
    if (!src)
        return NULL;
    char *at = src;
    at += sprintf(at, "%s%s%s\n", parts[0], head, defines);
    for (size_t i = 2; i < sizeof parts / sizeof parts[0]; i++)
        at += sprintf(at, "%s\n", parts[i]);
    return src;
}

ffnrt_status ffnrt_context_kernel(ffnrt_context *ctx, const char *file, const char *entry,
                                  const char *defines, uint32_t buffer_count,
                                  uint32_t params_size, uint32_t workgroup_size,
                                  ffnrt_bkernel **out)
{
    /* The key is the whole build: file, entry, workgroup size and defines
     * (never truncated: two builds must not share a key). */
    size_t key_len = strlen(file) + strlen(entry) + strlen(defines) + 16;
    char *key_copy = malloc(key_len);
    if (!key_copy)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "kernel cache: out of host memory");
    snprintf(key_copy, key_len, "%s|%s|%u|%s", file, entry, workgroup_size, defines);
    for (size_t i = 0; i < ctx->kernel_count; i++)
        if (strcmp(ctx->kernels[i].key, key_copy) == 0) {
            free(key_copy);
            *out = ctx->kernels[i].kernel;
            return FFNRT_OK;
        }
    if (ctx->kernel_count == ctx->kernel_capacity) {
        size_t cap = ctx->kernel_capacity ? 2 * ctx->kernel_capacity : 16;
        ffnrt_kernel_entry *grown = realloc(ctx->kernels, cap * sizeof *grown);
        if (!grown) {
            free(key_copy);
            return ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "kernel cache: out of host memory");
        }
        ctx->kernels = grown;
        ctx->kernel_capacity = cap;
    }
    /* Read at each build, not at context creation, so a test can make one
     * build fail and then check that the same context still builds it. */
    char *source = concat_source(ctx, file, defines, workgroup_size, env_true("FFNRT_INJECT_COMPILE_ERROR"));
    if (!key_copy || !source) {
        free(key_copy);
        free(source);
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "building %s: out of host memory", file);
    }
    ffnrt_kernel_source ks = {source, entry, buffer_count, params_size, workgroup_size};
    char *log = NULL;
    ffnrt_bkernel *kernel = NULL;
    ffnrt_status st = ctx->ops->kernel_build(ctx->dev, &ks, &kernel, &log, &ctx->error);
    free(source);
    if (st != FFNRT_OK) {
        free(key_copy);
        if (log) {
            free(ctx->build_log);
            ctx->build_log = log;
        }
        return st;
    }
    free(log);
    ctx->kernels[ctx->kernel_count].key = key_copy;
    ctx->kernels[ctx->kernel_count].kernel = kernel;
    ctx->kernel_count++;
    *out = kernel;
    return FFNRT_OK;
}
