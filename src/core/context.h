/* The context and tensor objects behind the public handles. */
#ifndef FFNRT_CONTEXT_H
#define FFNRT_CONTEXT_H

#include "backend/backend.h"
#include "base/error.h"
#include "core/disk_cache.h"
#include "core/settings.h"

typedef struct ffnrt_kernel_entry {
    char *key;
    ffnrt_bkernel *kernel;
} ffnrt_kernel_entry;

/* A device's figures for the cost model and the device choice: copy
 * bandwidth (read + write), GEMM rate, the cost of one dispatch; measured
 * with ffnrt's own kernels (tune/calibrate.c). */
typedef struct ffnrt_calibration {
    double copy_gbps, gemm_gflops, dispatch_us;
    /* A decode layer's time on the float path over the integer path's, per
     * weight format measured (ffnrt_ffn_int_dot_figure: each integer format's
     * own layer but Q4_1's, which follows Q4_0's); 0 where not measured. */
    double int_dot_speedup[FFNRT_WEIGHT_FORMAT_COUNT];
    double fused_speedup;   /* an f32 SwiGLU decode layer's time unfused over fused */
    int valid;
} ffnrt_calibration;

/* What a kernel build costs on this device, in milliseconds: from source,
 * and with its code from ffnrt's disk cache (the driver's own caches as
 * they were); each a running mean over the last builds (n counts to 64).
 * A new process pays one build per kernel an op uses, at its first call:
 * the plan states it. Kept per device and driver in the disk cache. */
typedef struct ffnrt_build_times {
    double source_ms, cached_ms;
    uint32_t source_n, cached_n;
} ffnrt_build_times;

/* One tuning result (dispatch/tuning.c): the winner for a shape class. */
typedef struct ffnrt_tuning_entry {
    char key[160];
    int value;
    double ms[2]; /* the winner's time and the runner-up's */
} ffnrt_tuning_entry;

/* What the precision policy gives on the device (dispatch/precision.c). */
typedef struct ffnrt_precision_choice {
    ffnrt_dtype storage;
    int fp16_arithmetic;
    char reason[320];
} ffnrt_precision_choice;

/* How kernels convert fp16 values (dispatch/kernel_params.inc): with the
 * bit arithmetic of shaders/storage.inc, or with a hardware conversion. */
typedef enum ffnrt_half_conversion {
    FFNRT_HALF_CONVERSION_BITS,
    FFNRT_HALF_CONVERSION_F16C, /* x86 F16C, through the OpenCL C compiler's _Float16 */
    FFNRT_HALF_CONVERSION_COUNT
} ffnrt_half_conversion;

typedef struct ffnrt_half_conversion_choice {
    ffnrt_half_conversion kind;
    char reason[320];
} ffnrt_half_conversion_choice;

struct ffnrt_profile; /* dispatch/dispatch.h */

/* Tuning results by key: an array and an open-addressed index of it, so a
 * lookup takes constant time and loading n results linear time. At most
 * FFNRT_TUNING_MAX_ENTRIES (the file read back is bounded too, by the disk
 * cache: FFNRT_DISK_CACHE_MAX_RESULTS bytes). core/tuning_table.c. */
#define FFNRT_TUNING_MAX_ENTRIES 4096u
typedef struct ffnrt_tuning_table {
    ffnrt_tuning_entry *entries;
    size_t count, capacity;
    uint32_t *index;   /* an entry's position + 1, 0 when empty */
    size_t index_size; /* a power of two, at least twice count */
} ffnrt_tuning_table;

/* The entry for key, or NULL. */
const ffnrt_tuning_entry *ffnrt_tuning_find(const ffnrt_tuning_table *t, const char *key);
/* The entry for key, added (zeroed but for its key) if missing; NULL when
 * the key is too long, the table full or memory short. */
ffnrt_tuning_entry *ffnrt_tuning_insert(ffnrt_tuning_table *t, const char *key);
void ffnrt_tuning_table_free(ffnrt_tuning_table *t);
/* Adds the results of a tuning file's text (lines "key value ms ms"; n
 * bytes, no terminator needed) that the table lacks; a line that does not
 * parse, or holds a value out of range, is skipped (it is re-measured).
 * Returns the lines taken. */
size_t ffnrt_tuning_parse(ffnrt_tuning_table *t, const char *text, size_t n);
/* The table as a tuning file's text (malloc'd, *n bytes), NULL when out
 * of memory. */
char *ffnrt_tuning_format(const ffnrt_tuning_table *t, size_t *n);

struct ffnrt_tensor {
    ffnrt_context *ctx;
    ffnrt_bbuffer *buffer;
    uint64_t offset; /* bytes into buffer (an app's buffer wrapped at an offset); 0 otherwise */
    /* The app's VkBuffer or cl_mem (a sub-buffer's parent) for a wrapped
     * buffer, else 0: two wraps of one buffer may overlap. */
    uint64_t app_memory;
    ffnrt_dtype dtype;
    size_t ndim;
    int64_t shape[FFNRT_MAX_DIMS];
    size_t numel;
    size_t bytes;
    uint64_t charged; /* bytes counted against FFNRT_LIMITS=max_memory */
    struct ffnrt_tensor *prev, *next; /* the context's live tensors */
};

/* Features a quirk can veto (the table is dispatch/quirks.inc). */
enum {
    FFNRT_QUIRK_FP16_ARITHMETIC = 1,
    FFNRT_QUIRK_STORAGE_16BIT = 2,
    FFNRT_QUIRK_TWO_ITEM_TILES = 4,
    FFNRT_QUIRK_PROGRAM_BINARY = 8 /* the disk cache keeps no driver binary (it would cost a second compile) */
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
    /* Of the kernels built: from ffnrt's disk cache, and the host time
     * spent inside the builds (ffnrt_context_kernel_stats). */
    uint64_t kernels_loaded;
    double kernel_build_ms;
    struct ffnrt_tensor *tensors;
    uint64_t last_op_ns;
    /* The settings (core/settings.h) and the dispatcher's context-wide
     * choices, shown by ffnrt_context_plan; dispatch fills them. */
    ffnrt_settings settings;
    ffnrt_device_info device_as_found; /* before limits and profile */
    char device_reason[1536];          /* why this device (with the figures behind the choice) */
    const struct ffnrt_profile *profile;
    char limit_notes[512];
    ffnrt_precision policy;
    ffnrt_precision_choice precision;
    ffnrt_half_conversion_choice half_conversion;
    int plain_byte_dot; /* the prelude's portable byte products: 1 asked (FFNRT_LIMITS byte_dot=0, a fallback tested
                         * on x86), 2 an OpenCL CPU driver on a host without AVX2 */
    int word_codes;     /* FFNRT_LIMITS vector_codes=0: block formats' codes read word by word (QUANT_VEC4 off), as
                         * devices with binding offsets under 16 bytes read them (a fallback tested on both drivers) */
    unsigned vetoes;                   /* FFNRT_QUIRK_* */
    char quirk_notes[384];
    int autotune;
    ffnrt_tuning_table tuning;
    ffnrt_calibration calibration;     /* valid once measured or loaded */
    ffnrt_build_times build_times;     /* this context's builds (merged into the device's at destroy) */
    ffnrt_plan *plan_sink;             /* non-NULL: launches describe themselves here and run nothing */
    /* Non-NULL: a plan's launches also hand it the source of every kernel
     * they would build (ffnrt_context_plan_kernel), so that a test can
     * compile each variant the dispatcher reaches (tests/test_variants.c). */
    void (*source_sink)(void *user, const char *key, const char *source);
    void *source_sink_user;
    /* Interop (src/core/interop_*.c). */
    int app_handles; /* made from the app's device/context: its buffers may be wrapped */
    int async;       /* ffnrt_context_set_async: batches are submitted without waiting */
    int external;    /* recording into the app's command buffer / enqueueing with its events */
    int batch_depth; /* batches open: an inner one records into the outer (ffnrt_batch_begin) */
    uint64_t async_ns; /* device time of async batches finished before ffnrt_context_wait */
    ffnrt_disk_cache disk;
    char *cache_identity; /* the device part of every disk-cache key */
    /* FFNRT_LIMITS=max_memory=B: a device-memory budget over the context's
     * tensors (0: none), so running out of memory can be tested anywhere. */
    uint64_t max_memory;
    uint64_t allocated; /* bytes of the live tensors' buffers */
    uint64_t allocated_peak; /* the most `allocated` reached since creation or ffnrt_context_memory's reset */
    /* Statistics (ops/stats.c): ffnrt_context_set_stats's options
     * (stats_set: given), the buffer the statistics kernels add into and
     * the zeros it starts each call from, the last call's statistics. */
    int stats_set;
    ffnrt_stats_options stats_options;
    struct ffnrt_tensor *stats_buffer;
    /* Shared memory a product kernel's statistics variant takes while an
     * FFN forward or plan runs it (ops/stats.c sets it around them, 0
     * otherwise): a + b·(work-items) + c·(rows of the group's tile) bytes,
     * which the kernel shapes leave free (dispatch/ffn_choice.c). */
    void *stats_zeros;
    size_t stats_zeros_bytes;
    ffnrt_stats *last_stats;
};

/* Timing for the calibration and the tuner: a monotonic clock, the median
 * of n > 0 values (sorted in place) and their minimum. */
double ffnrt_now_ms(void);
double ffnrt_median(double *v, int n);
double ffnrt_minimum(const double *v, int n);

/* Returns status after publishing ctx->error as the thread's last error;
 * every public entry point ends through it, and only public entry points
 * call it (internal work leaves its error in ctx->error). */
ffnrt_status ffnrt_context_finish_call(ffnrt_context *ctx, ffnrt_status status);
/* Publishes and returns the error of a public call given a NULL handle. */
ffnrt_status ffnrt_null_handle(const char *fn, const char *what);

/* Every batch of dispatches an op runs goes between these two: they pick
 * the synchronous, asynchronous or external (app-recorded) path. end closes
 * the batch even when st (the recording's status) is an error and returns
 * the first error; *device_ns gets the batch's device time (0 when it is
 * not known yet). Batches nest: one begun inside another records into it
 * and its end submits nothing (device time 0), so a caller can make one
 * submission of several ops' batches (the training backward: one wait
 * instead of twenty). Nothing inside may read a buffer back. */
ffnrt_status ffnrt_batch_begin(ffnrt_context *ctx);
ffnrt_status ffnrt_batch_end(ffnrt_context *ctx, ffnrt_status st, uint64_t *device_ns);
/* Waits for the context's asynchronous batches, keeping their device time
 * for ffnrt_context_wait. */
ffnrt_status ffnrt_context_settle(ffnrt_context *ctx);

/* A context object around an open device (ffnrt's own or the app's); the
 * caller configures it (dispatch) and opens its disk cache. Closes dev on
 * failure. */
ffnrt_status ffnrt_context_new(const ffnrt_backend_ops *ops, ffnrt_bdevice *dev, const ffnrt_device_info *info,
                               const ffnrt_limits *limits, ffnrt_context **out, ffnrt_error *err);
/* Opens the disk cache (dir NULL or "": the default directory; off: none)
 * and the driver's own cache from it. */
void ffnrt_context_open_disk_cache(ffnrt_context *ctx, const char *dir, int off);

/* A tensor object with a checked shape and no buffer yet (fn names the
 * caller in messages); ffnrt_tensor_link adds it, with its buffer set, to
 * the context's live tensors. */
ffnrt_status ffnrt_tensor_new(ffnrt_context *ctx, ffnrt_dtype dtype, size_t ndim, const int64_t *shape,
                              const char *fn, ffnrt_tensor **out);
void ffnrt_tensor_link(ffnrt_context *ctx, ffnrt_tensor *t);
/* The internal forms of ffnrt_tensor_create, _write and _destroy: the
 * error stays in ctx->error (nothing is published). */
ffnrt_status ffnrt_tensor_alloc(ffnrt_context *ctx, ffnrt_dtype dtype, size_t ndim, const int64_t *shape,
                                const char *fn, ffnrt_tensor **out);
ffnrt_status ffnrt_tensor_upload(ffnrt_tensor *t, const void *host, size_t bytes);
void ffnrt_tensor_free(ffnrt_tensor *t);

/* FFNRT_ERROR_LIMIT_EXCEEDED (with the message) when a tensor of numel
 * elements could not exist on the context's device; plans check the
 * tensors an op would need with it. */
ffnrt_status ffnrt_tensor_check_size(ffnrt_context *ctx, ffnrt_dtype dtype, uint64_t numel, const char *fn);

/* Whether two tensors' bytes overlap: NONE, SAME (the very same bytes: one
 * tensor, or two wraps of one range) or PARTIAL. Wraps of one app buffer
 * are compared by handle and range; two VkBuffers bound to the same memory
 * are not seen. */
typedef enum ffnrt_overlap { FFNRT_OVERLAP_NONE, FFNRT_OVERLAP_SAME, FFNRT_OVERLAP_PARTIAL } ffnrt_overlap;
ffnrt_overlap ffnrt_tensor_overlap(const ffnrt_tensor *a, const ffnrt_tensor *b);

/* The shared files a kernel's text takes beyond those every kernel has
 * (the prelude, math, storage, quant): the statistics' files go only to
 * the builds that use them, so every other kernel's text is what it was
 * without them. The launcher says which; nothing reads the defines back. */
typedef enum ffnrt_kernel_parts {
    FFNRT_KERNEL_PLAIN,
    FFNRT_KERNEL_STATS_LAYOUT, /* + stats_layout.h: the statistics' finish pass */
    FFNRT_KERNEL_STATS,        /* + stats_layout.h and stats.inc: a statistics variant */
} ffnrt_kernel_parts;

/* Gets the kernel built from the shader file `file`, then `level` (a file
 * with the body of one of its levels, as gemm.kernel's; NULL: none), with
 * its `parts` and `defines` (newline-separated "#define" lines), building
 * it on first use. */
ffnrt_status ffnrt_context_kernel(ffnrt_context *ctx, const char *file, const char *level, const char *entry,
                                  ffnrt_kernel_parts parts, const char *defines, uint32_t buffer_count,
                                  uint32_t params_size, uint32_t workgroup_size,
                                  ffnrt_bkernel **out);
/* A plan's stand-in for ffnrt_context_kernel: builds nothing, and hands
 * the source the build would compile to ctx->source_sink where one is set. */
ffnrt_status ffnrt_context_plan_kernel(ffnrt_context *ctx, const char *file, const char *level, const char *entry,
                                       ffnrt_kernel_parts parts, const char *defines, uint32_t workgroup_size);

/* Calibration and tuning results: an opaque blob per (kind, name) and
 * device, kept in the disk cache (kind FFNRT_CACHE_CALIBRATION or
 * FFNRT_CACHE_TUNING). get returns a malloc'd copy or NULL (a miss, an
 * invalid file or the cache off); put returns 1 when written. Neither
 * ever fails the caller. The context's blobs are keyed by its whole cache
 * identity; a device's (ffnrt_device_blob_*) by the device and driver as
 * ffnrt_device_info says them, so that they are found before any device
 * is opened (the device choice reads them). */
void *ffnrt_context_blob_get(ffnrt_context *ctx, ffnrt_cache_kind kind, const char *name, size_t *len);
int ffnrt_context_blob_put(ffnrt_context *ctx, ffnrt_cache_kind kind, const char *name, const void *data,
                           size_t len);
void *ffnrt_device_blob_get(ffnrt_disk_cache *disk, const ffnrt_device_info *info, ffnrt_cache_kind kind,
                            const char *name, size_t *len);
int ffnrt_device_blob_put(ffnrt_disk_cache *disk, const ffnrt_device_info *info, ffnrt_cache_kind kind,
                          const char *name, const void *data, size_t len);

/* The device's kernel-build times: earlier processes' (the disk cache)
 * with this context's builds merged in. */
ffnrt_build_times ffnrt_build_times_of(ffnrt_context *ctx);

/* The device list over every available backend, enumerated once per process. */
ffnrt_status ffnrt_registry_devices(const ffnrt_device_info **infos, size_t *count,
                                    ffnrt_error *err);
/* One backend's devices (listed on first use, without starting the
 * others); ANY is every backend's. */
ffnrt_status ffnrt_registry_backend_devices(ffnrt_backend kind, const ffnrt_device_info **infos, size_t *count,
                                            ffnrt_error *err);
/* Why kind's backends (ANY: each backend) have no device, as they said it,
 * joined by "; " into out; 1 when some backend has none, else 0 (out ""). */
int ffnrt_registry_why_none(ffnrt_backend kind, char *out, size_t cap);
const ffnrt_backend_ops *ffnrt_registry_backend(ffnrt_backend kind);

/* Figures measured in this process, by device (for a cache that is off:
 * the device choice measures each device once per process). get returns 1
 * when known. */
int ffnrt_registry_figures_get(const ffnrt_device_info *info, const char *variant, ffnrt_calibration *out);
void ffnrt_registry_figures_put(const ffnrt_device_info *info, const char *variant, const ffnrt_calibration *c);

#endif
