/* The one internal interface every backend implements. The core never sees
 * an OpenCL or Vulkan type: buffers, kernels and devices are opaque here. */
#ifndef FFNRT_BACKEND_H
#define FFNRT_BACKEND_H

#include "ffnrt.h"
#include "base/cache_kind.h"
#include "base/error.h"

typedef struct ffnrt_bdevice ffnrt_bdevice; /* an opened device with its queue */
typedef struct ffnrt_bbuffer ffnrt_bbuffer; /* device memory */
typedef struct ffnrt_bkernel ffnrt_bkernel; /* a compiled kernel or pipeline */

/* The disk cache as a kernel build sees it: blobs stored under this
 * kernel's full key (source, build options, device, driver, ffnrt version;
 * the core makes the key and owns the file format). A backend chooses what
 * to keep (SPIR-V, program binaries) and must treat a loaded blob as a
 * hint: if the driver refuses it, it reports that through unusable and
 * builds from source. */
typedef struct ffnrt_kernel_cache {
    void *user;
    /* A malloc'd copy of the stored blob (the caller frees it), or NULL. */
    void *(*load)(void *user, ffnrt_cache_kind kind, size_t *len);
    void (*store)(void *user, ffnrt_cache_kind kind, const void *data, size_t len);
    void (*unusable)(void *user, ffnrt_cache_kind kind, const char *why);
    /* 0 where the quirk table says the driver's compiled binary must not
     * be asked for (PoCL compiles the program a second time to make one):
     * a backend then keeps only what it makes itself (SPIR-V), and the
     * driver's own cache serves the next process. */
    int driver_binary;
} ffnrt_kernel_cache;

/* What a kernel build needs. The core assembles the source from the API's
 * prelude, the build defines and the shared kernel files. */
typedef struct ffnrt_kernel_source {
    const char *source;     /* complete source text for this API */
    const char *entry;      /* kernel function name (OpenCL) */
    uint32_t buffer_count;  /* bindings 0..buffer_count-1 */
    uint32_t params_size;   /* bytes of the Params block, multiple of 4 */
    uint32_t workgroup_size;
    const ffnrt_kernel_cache *cache; /* NULL: the disk cache is off */
} ffnrt_kernel_source;

/* One buffer argument: a byte range of a buffer. offset is a multiple of
 * the device's buffer_offset_alignment; size is at most max_buffer_range. */
typedef struct ffnrt_binding {
    ffnrt_bbuffer *buffer;
    uint64_t offset;
    uint64_t size;
} ffnrt_binding;

/* Limits the core plans dispatches with, possibly lowered by the caller. */
typedef struct ffnrt_limits {
    uint64_t max_buffer_range;
    uint64_t max_allocation;
    uint64_t buffer_offset_alignment;
    uint32_t max_workgroup_size;
    uint32_t max_workgroup_count[3];
    /* Kernels may use 64-bit integer words (Vulkan's shaderInt64, enabled
     * at device creation where the device has it): the GLSL prelude's
     * 8-word views (WIDE_WORDS). 0 on OpenCL, whose prelude has none. */
    int int64_words;
    /* Storage buffers one kernel may bind (Vulkan's
     * maxPerStageDescriptorStorageBuffers, which may be 4 on older mobile
     * drivers), within ffnrt's own most. */
    uint32_t max_bindings;
} ffnrt_limits;

typedef struct ffnrt_open_options {
    int validation; /* the API's validation layer, where it has one */
    int staging;    /* host transfers through a staging buffer even where memory maps in place */
    /* A wait for the device longer than this fails; what the unfinished
     * work may touch is kept until it finishes or the device is closed. */
    uint64_t timeout_ns;
} ffnrt_open_options;

/* A backend: what it is, then four groups of functions it must provide
 * (device, memory, kernels, queue) and optional hooks it may leave NULL
 * (validation, disk cache). Interop with an app's own handles is the
 * backend folder's business (vk_interop.h, cl_interop.h: called from the
 * public edge, src/api/interop_*.c), not the seam's. */
typedef struct ffnrt_backend_ops {
    /* ----- identity: its row of the backend table (backend/backends.c) */
    ffnrt_backend kind;
    const char *name;         /* as FFNRT_DEVICE and ffnrt_backend_name spell it */
    const char *prelude;      /* the kernel dialect's mapping for the API, in shaders/ */
    const char *version_line; /* placed before everything else in a kernel ("#version 450\n"), or "" */
    const char *fp16_feature; /* what the API calls fp16 arithmetic, for messages */
    /* The prelude's element-wise loop (ITEMS_CONSECUTIVE in shaders/): 1 when
     * a work-item takes consecutive words, 0 when its words are strided by
     * the workgroup; the host's choices that depend on which words a
     * work-item holds (PReLU's slope lookup) read it here. */
    int items_consecutive;

    /* ----- device */
    /* Load the API at run time; FFNRT_ERROR_BACKEND_UNAVAILABLE says why not. */
    ffnrt_status (*load)(ffnrt_error *err);
    /* Fill up to cap infos; *count is the number of devices. */
    ffnrt_status (*list_devices)(ffnrt_device_info *infos, size_t cap, size_t *count,
                                 ffnrt_error *err);
    ffnrt_status (*open)(uint32_t index, const ffnrt_open_options *opts, ffnrt_bdevice **out,
                         ffnrt_device_info *info, ffnrt_limits *limits, ffnrt_error *err);
    void (*close)(ffnrt_bdevice *dev);

    /* ----- memory */
    ffnrt_status (*buffer_create)(ffnrt_bdevice *dev, uint64_t bytes, ffnrt_bbuffer **out,
                                  ffnrt_error *err);
    void (*buffer_destroy)(ffnrt_bdevice *dev, ffnrt_bbuffer *buf);
    ffnrt_status (*buffer_write)(ffnrt_bdevice *dev, ffnrt_bbuffer *buf, uint64_t offset,
                                 const void *src, uint64_t bytes, ffnrt_error *err);
    ffnrt_status (*buffer_read)(ffnrt_bdevice *dev, ffnrt_bbuffer *buf, uint64_t offset,
                                void *dst, uint64_t bytes, ffnrt_error *err);

    /* ----- kernels */
    /* On failure with FFNRT_ERROR_COMPILE_FAILED, *log gets a malloc'd
     * compiler log (the caller frees it). */
    ffnrt_status (*kernel_build)(ffnrt_bdevice *dev, const ffnrt_kernel_source *src,
                                 ffnrt_bkernel **out, char **log, ffnrt_error *err);
    void (*kernel_destroy)(ffnrt_bdevice *dev, ffnrt_bkernel *kernel);

    /* ----- queue */
    /* Dispatches are recorded between begin and submit; submit waits for
     * completion and reports the device time of the batch (0 if unknown). */
    ffnrt_status (*begin)(ffnrt_bdevice *dev, ffnrt_error *err);
    ffnrt_status (*dispatch)(ffnrt_bdevice *dev, ffnrt_bkernel *kernel,
                             const ffnrt_binding *bindings, uint32_t binding_count,
                             const void *params, const uint32_t groups[2], ffnrt_error *err);
    ffnrt_status (*submit)(ffnrt_bdevice *dev, uint64_t *device_ns, ffnrt_error *err);
    /* Asynchronous batches: submit_async ends the batch and submits it
     * without waiting; the backend keeps later work (a new batch, host
     * transfers, freeing a buffer) ordered after it. wait blocks until
     * every submitted batch is done and gives the device time of the
     * batches finished since the previous wait (0 if unknown). */
    ffnrt_status (*submit_async)(ffnrt_bdevice *dev, ffnrt_error *err);
    ffnrt_status (*wait)(ffnrt_bdevice *dev, uint64_t *device_ns, ffnrt_error *err);
    /* External batches, while the app records or enqueues (interop): the
     * dispatches go to the app's command buffer or queue; nothing waits. */
    ffnrt_status (*external_begin)(ffnrt_bdevice *dev, ffnrt_error *err);
    ffnrt_status (*external_end)(ffnrt_bdevice *dev, ffnrt_error *err);

    /* ----- optional hooks (NULL: not provided) */
    uint64_t (*validation_messages)(const ffnrt_bdevice *dev);

    /* Disk-cache hooks, each optional (NULL). */
    /* What identifies compiled code on this device beyond ffnrt_device_info
     * (build options, compiler version, device and cache UUIDs); part of
     * every cache key. */
    void (*cache_identity)(ffnrt_bdevice *dev, char *buf, size_t cap);
    /* A device-wide driver cache (Vulkan's VkPipelineCache), called before
     * any kernel is built. The backend validates the data against the
     * device and returns 0 with *why when it refuses it (it then starts
     * empty). */
    int (*driver_cache_import)(ffnrt_bdevice *dev, const void *data, size_t len, const char **why);
    /* The driver cache's data (malloc'd) when kernels were built since the
     * import or the last export; NULL when there is nothing new. */
    void *(*driver_cache_export)(ffnrt_bdevice *dev, size_t *len);
} ffnrt_backend_ops;

/* The backend table (backend/backends.c): every backend ffnrt is built
 * with, in the order devices are listed. */
size_t ffnrt_backend_count(void);
const ffnrt_backend_ops *ffnrt_backend_at(size_t i);
/* The row of a backend kind; NULL for ANY or an unknown value. */
const ffnrt_backend_ops *ffnrt_backend_find(ffnrt_backend kind);
/* The row whose name is the first len characters of name (case-insensitive); NULL if none. */
const ffnrt_backend_ops *ffnrt_backend_named(const char *name, size_t len);

/* Each backend's row, defined in its folder. */
const ffnrt_backend_ops *ffnrt_opencl_backend(void);
const ffnrt_backend_ops *ffnrt_vulkan_backend(void);

#endif
