/* The context and tensor objects behind the public handles. */
#ifndef FFNRT_CONTEXT_H
#define FFNRT_CONTEXT_H

#include "backend/backend.h"
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
    /* FFNRT_LIMITS=max_memory=B: a device-memory budget over the context's
     * tensors (0: none), so running out of memory can be tested anywhere. */
    uint64_t max_memory;
    uint64_t allocated; /* bytes of the live tensors' buffers */
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

/* The device list over every available backend, enumerated once per process. */
ffnrt_status ffnrt_registry_devices(const ffnrt_device_info **infos, size_t *count,
                                    ffnrt_error *err);
const ffnrt_backend_ops *ffnrt_registry_backend(ffnrt_backend kind);

#endif
