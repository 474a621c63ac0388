/* The context and tensor objects behind the public handles. */
#ifndef FFNRT_CONTEXT_H
#define FFNRT_CONTEXT_H

#include "backend/backend.h"
#include "core/disk_cache.h"
#include "core/error.h"

typedef struct ffnrt_kernel_entry {
    char *key;
    ffnrt_bkernel *kernel;
} ffnrt_kernel_entry;

struct ffnrt_tensor {
    ffnrt_context *ctx;
    ffnrt_bbuffer *buffer;
    ffnrt_dtype dtype;
    size_t ndim;
    int64_t shape[FFNRT_MAX_DIMS];
    size_t numel;
    size_t bytes;
    struct ffnrt_tensor *prev, *next; /* the context's live tensors */
};

struct ffnrt_context {
    const ffnrt_backend_ops *ops;
    ffnrt_bdevice *dev;
    ffnrt_device_info info;
    ffnrt_limits limits; /* the device's, possibly lowered by the caller */
    ffnrt_error error;
    char *build_log;
    ffnrt_kernel_entry *kernels; /* compiled once per context, by key */
    size_t kernel_count, kernel_capacity;
    struct ffnrt_tensor *tensors;
    uint64_t last_op_ns;
    int inject_compile_error; /* FFNRT_INJECT_COMPILE_ERROR: tests the failure path */
    ffnrt_disk_cache disk;
    char *cache_identity; /* the device part of every disk-cache key */
};

/* Returns status after publishing ctx->error as the thread's last error;
 * every public entry point ends through it. */
ffnrt_status ffnrt_context_finish_call(ffnrt_context *ctx, ffnrt_status status);

/* Gets the kernel built from the shader file `file` with `defines`
 * (newline-separated "#define" lines), building it on first use. */
ffnrt_status ffnrt_context_kernel(ffnrt_context *ctx, const char *file, const char *entry,
                                  const char *defines, uint32_t buffer_count,
                                  uint32_t params_size, uint32_t workgroup_size,
                                  ffnrt_bkernel **out);

/* Calibration and tuning results: an opaque blob per (kind, name) and
 * device, kept in the disk cache (kind FFNRT_CACHE_CALIBRATION or
 * FFNRT_CACHE_TUNING). get returns a malloc'd copy or NULL (a miss, an
 * invalid file or the cache off); put returns 1 when written. Neither
 * ever fails the caller. */
void *ffnrt_context_blob_get(ffnrt_context *ctx, ffnrt_cache_kind kind, const char *name, size_t *len);
int ffnrt_context_blob_put(ffnrt_context *ctx, ffnrt_cache_kind kind, const char *name, const void *data,
                           size_t len);

/* The device list over every available backend, enumerated once per process. */
ffnrt_status ffnrt_registry_devices(const ffnrt_device_info **infos, size_t *count,
                                    ffnrt_error *err);
/* One backend's devices (listed on first use, without starting the
 * others); ANY is every backend's. */
ffnrt_status ffnrt_registry_backend_devices(ffnrt_backend kind, const ffnrt_device_info **infos, size_t *count,
                                            ffnrt_error *err);
const ffnrt_backend_ops *ffnrt_registry_backend(ffnrt_backend kind);

#endif
