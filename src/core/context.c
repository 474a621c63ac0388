/* Context: device choice, limits, error state and the kernel cache. */
#include "core/context.h"
#include "core/shader_sources.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ffnrt_status ffnrt_context_finish_call(ffnrt_context *ctx, ffnrt_status status)
{
    if (status == FFNRT_OK)
        ffnrt_error_clear(&ctx->error);
    else if (ctx->error.status != status) /* a path that set no message */
        ffnrt_fail(&ctx->error, status, "%s", ffnrt_status_string(status));
    ffnrt_error_publish(&ctx->error);
    return status;
}

ffnrt_status ffnrt_null_handle(const char *fn, const char *what)
{
    ffnrt_error err;
    ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, what);
    ffnrt_error_publish(&err);
    return err.status;
}

/* ------------------------------------------------------------ disk cache */

/* Everything about the device that compiled code depends on. */
static char *make_cache_identity(ffnrt_context *ctx)
{
    char backend_part[1024] = "";
    if (ctx->ops->cache_identity)
        ctx->ops->cache_identity(ctx->dev, backend_part, sizeof backend_part);
    const ffnrt_device_info *d = &ctx->info;
    size_t cap = 2048 + sizeof backend_part;
    char *id = malloc(cap);
    if (id)
        snprintf(id, cap,
                 "ffnrt %s\nbackend %s\ndevice %s\nvendor %s %08x:%08x\ndriver %s\napi %s\n%s",
                 FFNRT_VERSION_STRING, ctx->ops->name, d->name, d->vendor, d->vendor_id, d->device_id,
                 d->driver_version, d->api_version, backend_part);
    return id;
}

static char *join_key(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

void ffnrt_context_open_disk_cache(ffnrt_context *ctx, const char *dir, int off)
{
    ffnrt_disk_cache_open(&ctx->disk, dir, off);
    if (!ctx->disk.enabled)
        return;
    ctx->cache_identity = make_cache_identity(ctx);
    if (!ctx->cache_identity) {
        ctx->disk.enabled = 0;
        snprintf(ctx->disk.status, sizeof ctx->disk.status, "off (out of host memory)");
        return;
    }
    if (!ctx->ops->driver_cache_import)
        return;
    char *key = join_key(ctx->cache_identity, "driver cache", "");
    size_t len = 0;
    void *data = key ? ffnrt_disk_cache_get(&ctx->disk, key, FFNRT_CACHE_PIPELINE_CACHE, &len) : NULL;
    const char *why = NULL;
    if (data && !ctx->ops->driver_cache_import(ctx->dev, data, len, &why))
        ffnrt_disk_cache_note_unusable(&ctx->disk, why ? why : "the driver refused its pipeline cache");
    free(data);
    free(key);
}

static void save_driver_cache(ffnrt_context *ctx)
{
    if (!ctx->disk.enabled || !ctx->cache_identity || !ctx->ops->driver_cache_export)
        return;
    size_t len = 0;
    void *data = ctx->ops->driver_cache_export(ctx->dev, &len);
    char *key = data ? join_key(ctx->cache_identity, "driver cache", "") : NULL;
    if (key)
        ffnrt_disk_cache_put(&ctx->disk, key, FFNRT_CACHE_PIPELINE_CACHE, data, len);
    free(key);
    free(data);
}

void *ffnrt_context_blob_get(ffnrt_context *ctx, ffnrt_cache_kind kind, const char *name, size_t *len)
{
    *len = 0;
    if (!ctx || !ctx->disk.enabled || !ctx->cache_identity || !name)
        return NULL;
    char *key = join_key(ctx->cache_identity, "blob ", name);
    uint64_t misses = ctx->disk.misses;
    void *data = key ? ffnrt_disk_cache_get(&ctx->disk, key, kind, len) : NULL;
    /* Calibration and tuning are looked up at every context creation and
     * exist only once measured: their absence is not a miss of a kernel. */
    ctx->disk.misses = misses;
    free(key);
    return data;
}

int ffnrt_context_blob_put(ffnrt_context *ctx, ffnrt_cache_kind kind, const char *name, const void *data,
                           size_t len)
{
    if (!ctx || !ctx->disk.enabled || !ctx->cache_identity || !name)
        return 0;
    char *key = join_key(ctx->cache_identity, "blob ", name);
    int ok = key && ffnrt_disk_cache_put(&ctx->disk, key, kind, data, len);
    free(key);
    return ok;
}

/* A device and its driver as ffnrt_device_info says them (no device open). */
static void device_key(const ffnrt_device_info *d, const char *name, char *out, size_t cap)
{
    char uuid[33] = "";
    for (int i = 0; d->has_uuid && i < 16; i++)
        snprintf(uuid + 2 * i, 3, "%02x", d->uuid[i]);
    snprintf(out, cap, "ffnrt %s\nbackend %s\ndevice %s\nvendor %s %08x:%08x\ndriver %s\napi %s\nuuid %s\nblob %s",
             FFNRT_VERSION_STRING, ffnrt_backend_name(d->backend), d->name, d->vendor, d->vendor_id, d->device_id,
             d->driver_version, d->api_version, uuid, name);
}

void *ffnrt_device_blob_get(ffnrt_disk_cache *disk, const ffnrt_device_info *info, ffnrt_cache_kind kind,
                            const char *name, size_t *len)
{
    *len = 0;
    if (!disk || !disk->enabled)
        return NULL;
    char key[1536];
    device_key(info, name, key, sizeof key);
    uint64_t misses = disk->misses;
    void *data = ffnrt_disk_cache_get(disk, key, kind, len);
    disk->misses = misses; /* not a kernel's miss: see ffnrt_context_blob_get */
    return data;
}

int ffnrt_device_blob_put(ffnrt_disk_cache *disk, const ffnrt_device_info *info, ffnrt_cache_kind kind,
                          const char *name, const void *data, size_t len)
{
    if (!disk || !disk->enabled)
        return 0;
    char key[1536];
    device_key(info, name, key, sizeof key);
    return ffnrt_disk_cache_put(disk, key, kind, data, len);
}

/* A kernel's blobs, as the backend's build sees them. */
typedef struct kernel_cache_user {
    ffnrt_context *ctx;
    const char *key;
    int hits; /* blobs loaded and not refused: the build's code came from the cache */
} kernel_cache_user;

static void *kernel_cache_load(void *user, ffnrt_cache_kind kind, size_t *len)
{
    kernel_cache_user *u = user;
    void *blob = ffnrt_disk_cache_get(&u->ctx->disk, u->key, kind, len);
    u->hits += blob != NULL;
    return blob;
}

static void kernel_cache_store(void *user, ffnrt_cache_kind kind, const void *data, size_t len)
{
    kernel_cache_user *u = user;
    ffnrt_disk_cache_put(&u->ctx->disk, u->key, kind, data, len);
}

static void kernel_cache_unusable(void *user, ffnrt_cache_kind kind, const char *why)
{
    kernel_cache_user *u = user;
    u->hits--;
    char note[FFNRT_DISK_CACHE_NOTE];
    snprintf(note, sizeof note, "%s: %s", ffnrt_cache_kind_name(kind), why);
    ffnrt_disk_cache_note_unusable(&u->ctx->disk, note);
}

/* Two independent 64-bit hashes of the source text, so the key names the
 * source by 128 bits without storing it. */
static void source_digest(const char *source, char *out, size_t cap)
{
    size_t n = strlen(source);
    uint64_t h1 = ffnrt_fnv1a64(source, n, FFNRT_FNV64_INIT);
    uint64_t h2 = 0x9e3779b97f4a7c15ull ^ n;
    for (size_t i = 0; i < n; i++) {
        h2 = (h2 + (unsigned char)source[i]) * 0xff51afd7ed558ccdull;
        h2 ^= h2 >> 29;
    }
    snprintf(out, cap, "%zu:%016" PRIx64 "%016" PRIx64, n, h1, h2);
}

/* --------------------------------------------------------------- context */

ffnrt_status ffnrt_context_new(const ffnrt_backend_ops *ops, ffnrt_bdevice *dev, const ffnrt_device_info *info,
                               const ffnrt_limits *limits, ffnrt_context **out, ffnrt_error *err)
{
    ffnrt_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        ops->close(dev);
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "creating a context: out of host memory");
    }
    ctx->ops = ops;
    ctx->dev = dev;
    ctx->info = *info;
    ctx->device_as_found = *info;
    ctx->limits = *limits;
    *out = ctx;
    return FFNRT_OK;
}

#ifdef FFNRT_TEST_LEAK_SWITCH
/* Sanitizer builds only (FFNRT_SANITIZE): FFNRT_TEST_LEAK=1 forgets to free
 * each kernel's key, as a missing free() would, so that the ctest entries
 * sanitizer_catches_ffnrt_leak_* can prove LeakSanitizer still reports
 * ffnrt's own leaks through the drivers' suppressions. */
#define free_kernel_key(p) (getenv("FFNRT_TEST_LEAK") ? (void)0 : free(p))
#else
#define free_kernel_key(p) free(p)
#endif

/* ------------------------------------------------------ kernel-build times */

static const char build_times_name[] = "build-times";

/* The device's figures as earlier processes left them (zero if none).
 * Read only when needed, the plan or the save at destroy, so a context
 * that never asks reads nothing more from the cache. */
static ffnrt_build_times build_times_stored(ffnrt_context *ctx)
{
    size_t len = 0;
    char *blob = ffnrt_device_blob_get(&ctx->disk, &ctx->device_as_found, FFNRT_CACHE_CALIBRATION,
                                       build_times_name, &len);
    char text[128];
    ffnrt_build_times t = {0, 0, 0, 0};
    if (blob && len < sizeof text) {
        memcpy(text, blob, len);
        text[len] = '\0';
        if (sscanf(text, "%lf %u %lf %u", &t.source_ms, &t.source_n, &t.cached_ms, &t.cached_n) != 4 ||
            !(t.source_ms >= 0 && t.source_ms < 1e8 && t.cached_ms >= 0 && t.cached_ms < 1e8) || t.source_n > 64 ||
            t.cached_n > 64)
            t = (ffnrt_build_times){0, 0, 0, 0};
    }
    free(blob);
    return t;
}

/* Weighted means of two sets of figures, each count capped at 64 so that
 * recent builds keep moving them. */
static void merge_mean(double *mean, uint32_t *n, double other_mean, uint32_t other_n)
{
    if (other_n == 0)
        return;
    *mean = (*mean * *n + other_mean * other_n) / (*n + other_n);
    *n = *n + other_n > 64 ? 64 : *n + other_n;
}

ffnrt_build_times ffnrt_build_times_of(ffnrt_context *ctx)
{
    ffnrt_build_times t = build_times_stored(ctx);
    merge_mean(&t.source_ms, &t.source_n, ctx->build_times.source_ms, ctx->build_times.source_n);
    merge_mean(&t.cached_ms, &t.cached_n, ctx->build_times.cached_ms, ctx->build_times.cached_n);
    return t;
}

static void build_times_add(ffnrt_context *ctx, double ms, int cached)
{
    merge_mean(cached ? &ctx->build_times.cached_ms : &ctx->build_times.source_ms,
               cached ? &ctx->build_times.cached_n : &ctx->build_times.source_n, ms, 1);
}

static void build_times_save(ffnrt_context *ctx)
{
    if (!ctx->build_times.source_n && !ctx->build_times.cached_n)
        return;
    ffnrt_build_times t = ffnrt_build_times_of(ctx);
    char text[128];
    int len = snprintf(text, sizeof text, "%.6g %u %.6g %u\n", t.source_ms, t.source_n, t.cached_ms, t.cached_n);
    ffnrt_device_blob_put(&ctx->disk, &ctx->device_as_found, FFNRT_CACHE_CALIBRATION, build_times_name, text,
                          (size_t)len);
}

void ffnrt_context_destroy(ffnrt_context *ctx)
{
    if (!ctx)
        return;
    if (ctx->dev)
        ffnrt_context_settle(ctx); /* nothing may be freed under a pending batch */
    save_driver_cache(ctx);
    build_times_save(ctx);
    free(ctx->cache_identity);
    while (ctx->tensors)
        ffnrt_tensor_destroy(ctx->tensors);
    for (size_t i = 0; i < ctx->kernel_count; i++) {
        ctx->ops->kernel_destroy(ctx->dev, ctx->kernels[i].kernel);
        free_kernel_key(ctx->kernels[i].key);
    }
    free(ctx->kernels);
    free(ctx->build_log);
    free(ctx->stats_zeros);
    free(ctx->last_stats);
    ffnrt_tuning_table_free(&ctx->tuning);
    if (ctx->dev)
        ctx->ops->close(ctx->dev);
    free(ctx);
}

/* ----------------------------------------------------------- kernel cache */

/* Kernel text: the API's prelude, the build defines, then the shared
 * files every kernel may use (with the statistics' where `with` asks),
 * then the op's own file and its level's. */
static char *concat_source(const ffnrt_context *ctx, const char *file, const char *level, ffnrt_kernel_parts with,
                           const char *defines, uint32_t workgroup_size, int inject_error)
{
    const char *parts[] = {
        ctx->ops->version_line,
        NULL, /* defines, below */
        inject_error ? "#error FFNRT_INJECT_COMPILE_ERROR is set\n" : "",
        ffnrt_shader_source(ctx->ops->prelude),
        ffnrt_shader_source("math.inc"),
        ffnrt_shader_source("math_grad.inc"),
        ffnrt_shader_source("storage.inc"),
        with != FFNRT_KERNEL_PLAIN ? ffnrt_shader_source("stats_layout.h") : NULL,
        with == FFNRT_KERNEL_STATS ? ffnrt_shader_source("stats.inc") : NULL,
        ffnrt_shader_source("quant.inc"),
        ffnrt_shader_source(file),
        level ? ffnrt_shader_source(level) : "",
    };
    const size_t first_optional = 7, last_optional = 8; /* may be left out (NULL) */
    char head[64];
    snprintf(head, sizeof head, "#define WG_SIZE %u\n", workgroup_size);
    size_t len = strlen(head) + strlen(defines) + 2;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        int optional = i == 1 || (i >= first_optional && i <= last_optional);
        if (!optional && !parts[i])
            return NULL;
        len += parts[i] ? strlen(parts[i]) + 1 : 0;
    }
    char *src = malloc(len);
    if (!src)
        return NULL;
    char *at = src;
    at += sprintf(at, "%s%s%s\n", parts[0], head, defines);
    for (size_t i = 2; i < sizeof parts / sizeof parts[0]; i++)
        if (parts[i])
            at += sprintf(at, "%s\n", parts[i]);
    return src;
}

/* The key is the whole build: files, entry, workgroup size, parts and
 * defines (never truncated: two builds must not share a key). */
static char *kernel_key(const char *file, const char *level, const char *entry, uint32_t workgroup_size,
                        ffnrt_kernel_parts parts, const char *defines)
{
    size_t len = strlen(file) + (level ? strlen(level) : 0) + strlen(entry) + strlen(defines) + 25;
    char *key = malloc(len);
    if (key)
        snprintf(key, len, "%s+%s|%s|%u|%d|%s", file, level ? level : "", entry, workgroup_size, (int)parts, defines);
    return key;
}

ffnrt_status ffnrt_context_plan_kernel(ffnrt_context *ctx, const char *file, const char *level, const char *entry,
                                       ffnrt_kernel_parts parts, const char *defines, uint32_t workgroup_size)
{
    if (!ctx->source_sink)
        return FFNRT_OK;
    char *source = concat_source(ctx, file, level, parts, defines, workgroup_size, 0);
    char *key = kernel_key(file, level, entry, workgroup_size, parts, defines);
    if (!source || !key) {
        free(source);
        free(key);
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "planning %s: out of host memory", file);
    }
    ctx->source_sink(ctx->source_sink_user, key, source);
    free(key);
    free(source);
    return FFNRT_OK;
}

ffnrt_status ffnrt_context_kernel(ffnrt_context *ctx, const char *file, const char *level, const char *entry,
                                  ffnrt_kernel_parts parts, const char *defines, uint32_t buffer_count,
                                  uint32_t params_size, uint32_t workgroup_size,
                                  ffnrt_bkernel **out)
{
    char *key_copy = kernel_key(file, level, entry, workgroup_size, parts, defines);
    if (!key_copy)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "kernel cache: out of host memory");
    for (size_t i = 0; i < ctx->kernel_count; i++)
        if (strcmp(ctx->kernels[i].key, key_copy) == 0) {
            free(key_copy);
            *out = ctx->kernels[i].kernel;
            return FFNRT_OK;
        }
    /* The limit as lowered (max_bindings), so that a test on a device with
     * more sees what a device with fewer refuses. */
    if (ctx->limits.max_bindings && buffer_count > ctx->limits.max_bindings) {
        free(key_copy);
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_LIMIT_EXCEEDED,
                          "kernel %s binds %u storage buffers; the device allows %u (max_bindings)", entry,
                          buffer_count, ctx->limits.max_bindings);
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
    /* FFNRT_INJECT_COMPILE_ERROR, a fault-injection hook for tests, is the
     * one variable read at each build (not once at context creation), so a
     * test can make one build fail and then check that the same context
     * still builds it. */
    const char *inject = getenv("FFNRT_INJECT_COMPILE_ERROR");
    if (inject && *inject && strcmp(inject, "0") != 0 && strcmp(inject, "1") != 0) {
        free(key_copy);
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT,
                          "FFNRT_INJECT_COMPILE_ERROR=%s: expected 1 (every build fails) or 0", inject);
    }
    char *source = concat_source(ctx, file, level, parts, defines, workgroup_size,
                                 inject && strcmp(inject, "1") == 0);
    if (!key_copy || !source) {
        free(key_copy);
        free(source);
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "building %s: out of host memory", file);
    }
    ffnrt_kernel_source ks = {source, entry, buffer_count, params_size, workgroup_size, NULL};
    /* On disk the key is the device's identity, the build key and the
     * source's digest (the source also holds the build key, but the digest
     * alone would let a collision pass unseen). */
    char *disk_key = NULL;
    kernel_cache_user user = {ctx, NULL, 0};
    ffnrt_kernel_cache cache = {&user, kernel_cache_load, kernel_cache_store, kernel_cache_unusable,
                                !(ctx->vetoes & FFNRT_QUIRK_PROGRAM_BINARY)};
    if (ctx->disk.enabled && ctx->cache_identity) {
        char digest[64];
        source_digest(source, digest, sizeof digest);
        char *head = join_key(ctx->cache_identity, "kernel ", key_copy);
        disk_key = head ? join_key(head, "\nsource ", digest) : NULL;
        free(head);
        user.key = disk_key;
        ks.cache = disk_key ? &cache : NULL;
    }
    char *log = NULL;
    ffnrt_bkernel *kernel = NULL;
    double t0 = ffnrt_now_ms();
    ffnrt_status st = ctx->ops->kernel_build(ctx->dev, &ks, &kernel, &log, &ctx->error);
    double build_ms = ffnrt_now_ms() - t0;
    ctx->kernel_build_ms += build_ms;
    if (st == FFNRT_OK) {
        build_times_add(ctx, build_ms, user.hits > 0);
        ctx->kernels_loaded += user.hits > 0;
    }
    free(source);
    free(disk_key);
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

/* ------------------------------------------------- batches and interop */

ffnrt_status ffnrt_batch_begin(ffnrt_context *ctx)
{
    if (ctx->batch_depth++ > 0)
        return FFNRT_OK;
    ffnrt_status st = ctx->external ? ctx->ops->external_begin(ctx->dev, &ctx->error)
                                    : ctx->ops->begin(ctx->dev, &ctx->error);
    if (st != FFNRT_OK)
        ctx->batch_depth--; /* no batch is open: its caller ends none */
    return st;
}

ffnrt_status ffnrt_batch_end(ffnrt_context *ctx, ffnrt_status st, uint64_t *device_ns)
{
    ffnrt_error *err = st == FFNRT_OK ? &ctx->error : NULL;
    ffnrt_status sst;
    *device_ns = 0;
    if (--ctx->batch_depth > 0)
        return st;
    if (ctx->external)
        sst = ctx->ops->external_end(ctx->dev, err);
    else if (ctx->async)
        sst = ctx->ops->submit_async(ctx->dev, err);
    else
        sst = ctx->ops->submit(ctx->dev, device_ns, err);
    return st != FFNRT_OK ? st : sst;
}

ffnrt_status ffnrt_context_settle(ffnrt_context *ctx)
{
    if (!ctx->async)
        return FFNRT_OK;
    uint64_t ns = 0;
    ffnrt_status st = ctx->ops->wait(ctx->dev, &ns, &ctx->error);
    ctx->async_ns += ns;
    return st;
}
