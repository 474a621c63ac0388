/* ffnrt: transformer activations and feed-forward blocks on any GPU through
 * OpenCL or Vulkan.
 *
 * The whole public API. Handles are opaque; every call returns an
 * ffnrt_status; option structs are initialised with their *_INIT macro so
 * that fields added later get defaults.
 *
 * Threads: a context and its tensors are used by one thread at a time;
 * separate contexts are independent. */
#ifndef FFNRT_H
#define FFNRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* FFNRT_API: exported from ffnrt.dll (and libffnrt_compare's DLL) while
 * they are built (FFNRT_BUILDING_LIBRARY, set by ffnrt's CMake build), and
 * a plain declaration for their users: the API is functions only, which
 * link through the import library (libffnrt.dll.a) or libffnrt.a alike,
 * so one header serves both without a define on the app's side. */
#if defined(_WIN32)
#if defined(FFNRT_BUILDING_LIBRARY)
#define FFNRT_API __declspec(dllexport)
#else
#define FFNRT_API
#endif
#else
#define FFNRT_API __attribute__((visibility("default")))
#endif

#define FFNRT_VERSION_MAJOR 0
#define FFNRT_VERSION_MINOR 1
#define FFNRT_VERSION_PATCH 0
#define FFNRT_VERSION_STRING "0.1.0"

/* ---------------------------------------------------------------- status */

typedef enum ffnrt_status {
    FFNRT_OK = 0,
    FFNRT_ERROR_INVALID_ARGUMENT,    /* a null pointer, a bad enum, a bad parameter */
    FFNRT_ERROR_SHAPE_MISMATCH,      /* tensors whose shapes do not fit the op */
    FFNRT_ERROR_DTYPE_MISMATCH,      /* tensors whose dtypes do not fit the op */
    FFNRT_ERROR_WRONG_CONTEXT,       /* a tensor used with a context it was not made in */
    FFNRT_ERROR_UNSUPPORTED,         /* valid request the chosen device cannot do */
    FFNRT_ERROR_BACKEND_UNAVAILABLE, /* the API's loader or driver is missing */
    FFNRT_ERROR_DEVICE_NOT_FOUND,    /* no device matches the request */
    FFNRT_ERROR_LIMIT_EXCEEDED,      /* a size past what the device allows */
    FFNRT_ERROR_OUT_OF_HOST_MEMORY,
    FFNRT_ERROR_OUT_OF_DEVICE_MEMORY,
    FFNRT_ERROR_COMPILE_FAILED,      /* a kernel did not build; see ffnrt_context_build_log */
    FFNRT_ERROR_DEVICE_FAILURE,      /* the driver reported an error or lost the device */
    FFNRT_ERROR_INVALID_FILE,        /* a file (GGUF) that is truncated, corrupt or not of its format */
    FFNRT_ERROR_NON_FINITE,          /* the finite check: finite inputs gave a non-finite output (the
                                        outputs hold what was computed; the message names the op, the
                                        precision and the first index) */
    FFNRT_STATUS_COUNT
} ffnrt_status;

/* Short fixed text for a status code; never NULL. */
FFNRT_API const char *ffnrt_status_string(ffnrt_status status);

/* Message of the last failed call made by this thread (any context);
 * "" if none. Valid until this thread's next ffnrt call. */
FFNRT_API const char *ffnrt_last_error_message(void);

/* --------------------------------------------------------------- devices */

typedef enum ffnrt_backend {
    FFNRT_BACKEND_ANY = 0,
    FFNRT_BACKEND_OPENCL = 1,
    FFNRT_BACKEND_VULKAN = 2,
    FFNRT_BACKEND_COUNT      /* backends are 1 .. FFNRT_BACKEND_COUNT - 1 */
} ffnrt_backend;

typedef enum ffnrt_device_type {
    FFNRT_DEVICE_TYPE_OTHER = 0,
    FFNRT_DEVICE_TYPE_CPU,
    FFNRT_DEVICE_TYPE_VIRTUAL_GPU,
    FFNRT_DEVICE_TYPE_INTEGRATED_GPU,
    FFNRT_DEVICE_TYPE_DISCRETE_GPU
} ffnrt_device_type;

typedef struct ffnrt_device_info {
    ffnrt_backend backend;
    uint32_t index;                  /* index within its backend, as FFNRT_DEVICE takes it */
    char name[256];
    char vendor[128];
    uint32_t vendor_id;              /* PCI vendor id where known, else 0 */
    uint32_t device_id;
    ffnrt_device_type type;
    char driver_version[128];
    char api_version[64];            /* "OpenCL 3.0 ..." or "Vulkan 1.3.239" */
    uint32_t compute_units;          /* 0 where the API does not say (Vulkan) */
    uint32_t max_workgroup_size;     /* invocations per workgroup */
    uint32_t max_workgroup_count[3]; /* per dimension */
    uint64_t shared_memory_size;     /* local / shared memory per workgroup, bytes */
    uint64_t max_buffer_range;       /* largest range one kernel argument can address, bytes */
    uint64_t max_allocation;         /* largest single allocation, bytes */
    uint64_t memory_size;            /* device memory, bytes */
    uint32_t subgroup_size;          /* 0 where unknown */
    int fp16_arithmetic;             /* shaderFloat16 / cl_khr_fp16 */
    int storage_16bit;               /* native 16-bit storage buffers */
    int denormals_preserved;         /* fp32 subnormals kept (1), flushed (0), unknown (-1) */
    /* Identity, to recognise one physical device seen through both APIs:
     * Vulkan's deviceUUID and OpenCL's cl_khr_device_uuid agree by design,
     * as do VK_EXT_pci_bus_info and cl_khr_pci_bus_info. */
    uint8_t uuid[16];
    int has_uuid;
    uint32_t pci_domain, pci_bus, pci_device, pci_function;
    int has_pci_address;
    /* Packed 4 x 8-bit integer dot products (Vulkan's shaderIntegerDotProduct,
     * VK_KHR_shader_integer_dot_product, core in 1.3): 0 none, 1 supported
     * (the driver may lower them to plain arithmetic), 2 accelerated (its
     * integerDotProduct4x8BitPackedSignedAccelerated). The integer path's
     * matrix-vector kernel takes them where present. */
    int int_dot_packed;
} ffnrt_device_info;

/* Number of devices found over every available backend. A backend whose
 * loader is missing contributes none; ffnrt_backend_available says why. */
FFNRT_API ffnrt_status ffnrt_device_count(size_t *count);
/* Info for device i of the list ffnrt_device_count counted. */
FFNRT_API ffnrt_status ffnrt_device_get_info(size_t i, ffnrt_device_info *info);
/* FFNRT_OK when the backend's loader and at least one driver load;
 * otherwise an error whose message says what is missing. */
FFNRT_API ffnrt_status ffnrt_backend_available(ffnrt_backend backend);
FFNRT_API const char *ffnrt_backend_name(ffnrt_backend backend);
FFNRT_API const char *ffnrt_device_type_name(ffnrt_device_type type);

/* --------------------------------------------------------------- context */

typedef struct ffnrt_context ffnrt_context;

/* Precision policy: what the caller trades for speed. EXACT: fp32 storage
 * and arithmetic. BALANCED: 16-bit storage, fp32 arithmetic. FAST: 16-bit
 * storage and fp16 arithmetic where the device has it (else BALANCED, and
 * the plan says so). ffnrt_context_precision tells the storage type to use;
 * ops whose compute is FFNRT_COMPUTE_AUTO follow the policy. */
typedef enum ffnrt_precision {
    FFNRT_PRECISION_DEFAULT = -1, /* options: not set (FFNRT_PRECISION, else EXACT) */
    FFNRT_PRECISION_EXACT = 0,
    FFNRT_PRECISION_BALANCED,
    FFNRT_PRECISION_FAST
} ffnrt_precision;

/* Every option has an environment variable; a field left at its
 * FFNRT_CONTEXT_OPTIONS_INIT value is not set, and the variable (read once,
 * when the context is created) applies. One precedence for every knob:
 * an op's descriptor field > ffnrt_context_force or an option > the
 * environment > a tuned result > ffnrt's default. A malformed value,
 * wherever it comes from, is FFNRT_ERROR_INVALID_ARGUMENT naming it. */
typedef struct ffnrt_context_options {
    /* Device choice. backend ANY with device_index < 0 and device_name NULL
     * (and `device` below NULL) is not set: FFNRT_DEVICE ("opencl",
     * "vulkan:1", "vulkan:llvmpipe", "pocl") applies, else the best device
     * found (ffnrt plan shows the ranking, and the calibration figures that
     * break a tie of type). */
    ffnrt_backend backend;
    int device_index;        /* index within the backend, or -1 */
    const char *device_name; /* case-insensitive substring of the name, vendor or API version, or NULL */
    /* Vulkan: enable the Khronos validation layer and count its messages
     * (ffnrt_context_validation_messages). Unset: FFNRT_VALIDATION=1|0. */
    int validation;
    /* Lower the device's limits to test the paths a smaller GPU takes
     * (0 keeps the device's own; a value above it is an error). Each one
     * left at 0 may come from FFNRT_LIMITS="max_buffer_range=65536,
     * max_workgroup_count=64,max_workgroup_size=32,max_shared_memory=16384,
     * fp16_arithmetic=0,storage_16bit=0,half_conversion=0" (the last one:
     * disable_half_conversion, below); FFNRT_LIMITS alone also takes
     * max_memory (a device-memory budget), byte_dot=0 (the integer
     * path's byte products in plain vectors, as on CPUs other than x86),
     * vector_codes=0 (block formats' codes read word by word),
     * int64_words=0 (no 64-bit words in kernels, as without shaderInt64)
     * and max_bindings (storage buffers a kernel may bind: 4 on some
     * mobile drivers). */
    uint64_t max_buffer_range;
    uint32_t max_workgroup_count;
    uint32_t max_workgroup_size;
    uint64_t max_shared_memory;
    int disable_fp16_arithmetic;
    int disable_16bit_storage;
    /* A named limit profile modelled on a real GPU ("adreno-640",
     * "mali-g52", "apple-m1-moltenvk", "intel-uhd-620"; ffnrt_profile_info
     * lists them), applied on top of the device's limits. Unset (NULL):
     * FFNRT_PROFILE. */
    const char *profile;
    /* The precision policy. Unset (FFNRT_PRECISION_DEFAULT):
     * FFNRT_PRECISION=exact|balanced|fast, else exact. */
    ffnrt_precision precision;
    /* Ignore the built-in driver quirk table. Unset (0): FFNRT_QUIRKS
     * ("ignore", "veto=fp16_arithmetic", "veto=storage_16bit", comma-separated). */
    int ignore_quirks;
    /* Time the FFN candidates (path x kernel) the first time a layer runs a
     * shape class and keep the fastest; see ffnrt_ffn_autotune. Unset (0):
     * FFNRT_AUTOTUNE=1|0. */
    int autotune;
    /* The disk cache of compiled kernels (OpenCL program binaries, SPIR-V,
     * the Vulkan pipeline cache) and measured results. Its directory is
     * cache_dir if set, else $FFNRT_CACHE_DIR, else $XDG_CACHE_HOME/ffnrt,
     * else $HOME/.cache/ffnrt (%LOCALAPPDATA%\ffnrt on Windows,
     * ~/Library/Caches/ffnrt on macOS), created if missing; a UTF-8 path
     * on every OS (ffnrt reads Windows' variables as UTF-16). disable_disk_cache = 1
     * (unset: FFNRT_CACHE=0|off|1|on) turns it off. Entries are keyed by source,
     * build options, device, driver and ffnrt version; a stale, foreign or
     * corrupt file is ignored and rebuilt, and a directory that cannot be
     * used turns the cache off (ffnrt_context_cache_stats says why); the
     * cache never makes a call fail. */
    const char *cache_dir;
    int disable_disk_cache;
    /* How long a wait for the device may last before the call fails with
     * FFNRT_ERROR_DEVICE_FAILURE, in milliseconds; 0: FFNRT_DEVICE_TIMEOUT_MS,
     * else 120000. Work that ran past it may still be running: the context
     * keeps whatever it may touch (tensors and layers destroyed meanwhile
     * included) until it finishes, which ffnrt_context_wait waits for again
     * (and any later call notices), or until the context is destroyed,
     * which waits for it without a limit. Vulkan; OpenCL waits in clFinish,
     * without a limit, and keeps buffers alive for enqueued work itself. */
    uint32_t device_timeout_ms;
    /* Convert fp16 values with the kernels' own bit arithmetic even where
     * the device has a hardware conversion the kernels would use (the
     * plan's "f16 conversion" line says which; the results are the same
     * bits): the path every other device takes, kept testable on this one.
     * Unset (0): FFNRT_LIMITS half_conversion=0. */
    int disable_half_conversion;
    /* The device choice as one text, spelled as FFNRT_DEVICE spells it (a
     * command line's --device passes it through): a backend ("opencl",
     * "vulkan"), a backend and its device index or a name pattern
     * ("vulkan:1", "vulkan:llvmpipe"), or a name pattern alone ("pocl",
     * "llvmpipe": a case-insensitive substring of the device's name, vendor
     * or API version). Set (not NULL, not ""), it is this context's device
     * choice, over FFNRT_DEVICE, and the plan names it "options.device";
     * it cannot be combined with backend, device_index or device_name, and
     * a malformed one ("vulkan:", "opencl:-1") is
     * FFNRT_ERROR_INVALID_ARGUMENT naming it. */
    const char *device;
} ffnrt_context_options;

#define FFNRT_CONTEXT_OPTIONS_INIT \
    { FFNRT_BACKEND_ANY, -1, NULL, 0, 0, 0, 0, 0, 0, 0, NULL, FFNRT_PRECISION_DEFAULT, 0, 0, NULL, 0, 0, 0, NULL }

/* Profile i's name and a line saying what it models and where its figures
 * come from; FFNRT_ERROR_INVALID_ARGUMENT past the end. */
FFNRT_API ffnrt_status ffnrt_profile_info(size_t i, const char **name, const char **description);

FFNRT_API ffnrt_status ffnrt_context_create(const ffnrt_context_options *options,
                                            ffnrt_context **out);
/* Destroys the context; its tensors must be destroyed first (they are
 * freed here if not, and their handles become invalid). NULL is a no-op. */
FFNRT_API void ffnrt_context_destroy(ffnrt_context *ctx);
FFNRT_API ffnrt_status ffnrt_context_get_device_info(const ffnrt_context *ctx,
                                                     ffnrt_device_info *info);
/* Message of the context's last error, "" if none. */
FFNRT_API const char *ffnrt_context_last_error(const ffnrt_context *ctx);
/* Compiler log of the last kernel build that failed, "" if none. */
FFNRT_API const char *ffnrt_context_build_log(const ffnrt_context *ctx);
/* Validation-layer messages (warnings and errors) seen so far; 0 when
 * validation is off. */
FFNRT_API uint64_t ffnrt_context_validation_messages(const ffnrt_context *ctx);
/* Device time of the last op, in nanoseconds, from timestamp queries or
 * profiling events; 0 if the device gave none. */
FFNRT_API ffnrt_status ffnrt_context_last_op_time(const ffnrt_context *ctx,
                                                  uint64_t *device_ns);
/* Device memory held by the context's own tensors (weights, inputs,
 * outputs and FFN layers' intermediates, as allocated: whole 32-bit words;
 * the app's wrapped buffers are not counted), now and at most since the
 * context was created or the peak was last reset. reset_peak = 1 first
 * sets the peak to what is held now, so a peak read later is that of the
 * calls in between. in_use and peak may be NULL. */
FFNRT_API ffnrt_status ffnrt_context_memory(ffnrt_context *ctx, uint64_t *in_use, uint64_t *peak, int reset_peak);

/* Asynchronous mode. With async on, ops submit their work to the device and
 * return without waiting; ffnrt_context_wait blocks until everything
 * submitted is done. Work stays in call order, and ffnrt_tensor_read,
 * _write and _destroy (and ffnrt_context_destroy) wait for the pending
 * work first, so results read are always complete. Errors the device
 * reports late come from ffnrt_context_wait. ffnrt_context_last_op_time
 * after ffnrt_context_wait gives the device time of all the work since
 * the previous wait (0 right after an asynchronous op). On Vulkan an op
 * is submitted at once when the device is idle; while a batch runs, the
 * next ops are recorded into one more and submitted together when it has
 * finished (at the end of a later op, at 256 dispatches, or at the wait
 * or a transfer), so a loop of small ops costs few submissions. Turning
 * async off waits. Off by default;
 * the app's recording (ffnrt_vulkan.h) and event (ffnrt_opencl.h) modes
 * take precedence while active. */
FFNRT_API ffnrt_status ffnrt_context_set_async(ffnrt_context *ctx, int async);
FFNRT_API ffnrt_status ffnrt_context_wait(ffnrt_context *ctx);

/* Interop with an app's own Vulkan device or OpenCL context, buffers and
 * command buffers / queues: ffnrt_vulkan.h and ffnrt_opencl.h. */

/* What the disk cache did for this context. A hit is a kernel (or the
 * pipeline cache) loaded from disk; a miss found no file; rejected counts
 * files ignored as stale, foreign, truncated or corrupt (or refused by the
 * driver), each then rebuilt and rewritten. The strings belong to the
 * context (valid until it is destroyed; their text may change with later
 * calls). */
typedef struct ffnrt_cache_stats {
    int enabled;
    const char *directory;  /* "" when no directory was chosen */
    const char *status;     /* "on", or "off (why)" */
    const char *last_note;  /* the last rejection or write failure, "" if none */
    uint64_t hits, misses, rejected, writes, write_failures;
} ffnrt_cache_stats;

FFNRT_API ffnrt_status ffnrt_context_cache_stats(const ffnrt_context *ctx, ffnrt_cache_stats *out);

/* The kernels this context has built so far: each distinct kernel (source,
 * defines, workgroup size) is built once, at its first use, and kept in
 * memory for the context's life. A tool that reports times says with these
 * how much of a first call was building, not running. */
typedef struct ffnrt_kernel_stats {
    uint64_t built;    /* distinct kernels built */
    uint64_t compiled; /* of them, compiled from source (no usable entry in ffnrt's disk cache) */
    uint64_t loaded;   /* of them, loaded from ffnrt's disk cache */
    /* Host seconds inside those builds. On Vulkan a build includes the
     * pipeline's first, empty dispatch, where llvmpipe compiles its machine
     * code (also for a kernel loaded from the disk cache); OpenCL drivers
     * that finish code generation at a kernel's first launch (PoCL, per
     * workgroup size) spend that in the first call that runs it. */
    double build_s;
} ffnrt_kernel_stats;

FFNRT_API ffnrt_status ffnrt_context_kernel_stats(const ffnrt_context *ctx, ffnrt_kernel_stats *out);

/* --------------------------------------------------------------- tensors */

typedef enum ffnrt_dtype {
    FFNRT_DTYPE_F32 = 0,
    FFNRT_DTYPE_F16 = 1,
    FFNRT_DTYPE_BF16 = 2
} ffnrt_dtype;

#define FFNRT_MAX_DIMS 8

typedef struct ffnrt_tensor ffnrt_tensor;

FFNRT_API size_t ffnrt_dtype_size(ffnrt_dtype dtype); /* 0 for an unknown dtype */
FFNRT_API const char *ffnrt_dtype_name(ffnrt_dtype dtype);

/* A device tensor, row-major (last dimension contiguous). ndim 0 is a
 * scalar; a dimension may be 0 (an empty tensor). */
FFNRT_API ffnrt_status ffnrt_tensor_create(ffnrt_context *ctx, ffnrt_dtype dtype,
                                           size_t ndim, const int64_t *shape,
                                           ffnrt_tensor **out);
FFNRT_API void ffnrt_tensor_destroy(ffnrt_tensor *t);
/* Copy bytes from / to host memory; bytes must equal the tensor's size. */
FFNRT_API ffnrt_status ffnrt_tensor_write(ffnrt_tensor *t, const void *host, size_t bytes);
FFNRT_API ffnrt_status ffnrt_tensor_read(const ffnrt_tensor *t, void *host, size_t bytes);
FFNRT_API ffnrt_dtype ffnrt_tensor_dtype(const ffnrt_tensor *t);
FFNRT_API size_t ffnrt_tensor_ndim(const ffnrt_tensor *t);
FFNRT_API int64_t ffnrt_tensor_dim(const ffnrt_tensor *t, size_t axis);
FFNRT_API size_t ffnrt_tensor_numel(const ffnrt_tensor *t);
FFNRT_API size_t ffnrt_tensor_bytes(const ffnrt_tensor *t);

/* The storage type the context's precision policy chose (F32 for EXACT,
 * F16 otherwise) and whether FFNRT_COMPUTE_AUTO runs fp16 arithmetic. */
FFNRT_API ffnrt_status ffnrt_context_precision(const ffnrt_context *ctx, ffnrt_dtype *storage,
                                               int *fp16_arithmetic);

/* The cost model's figures for the context's device, measured on first
 * call with ffnrt's own kernels (about a second; kept afterwards): copy
 * bandwidth in GB/s (read + write), GEMM rate in GFLOP/s, and the cost of
 * one dispatch in microseconds. Any pointer may be NULL. */
FFNRT_API ffnrt_status ffnrt_context_calibrate(ffnrt_context *ctx, double *copy_gbps, double *gemm_gflops,
                                               double *dispatch_us);

/* ------------------------------------------------------------------ plans */

/* A plan lists every choice the dispatcher makes for an op (device,
 * limits, precision, path, kernel, tile and workgroup sizes, splits) with
 * its reason. It is made by the same code that chooses when the op runs,
 * so it describes what runs. Every choice can be forced (op descriptors,
 * options, environment: see docs/dispatcher.md); a forced choice the device cannot
 * do is an error. */
typedef struct ffnrt_plan ffnrt_plan;

FFNRT_API ffnrt_status ffnrt_context_plan(ffnrt_context *ctx, ffnrt_plan **out);
FFNRT_API size_t ffnrt_plan_size(const ffnrt_plan *plan);
/* Item i: what is chosen ("device", "ffn.path", ...), the choice, and why. */
FFNRT_API ffnrt_status ffnrt_plan_item(const ffnrt_plan *plan, size_t i, const char **what,
                                       const char **choice, const char **reason);
/* The choice for `what`, or NULL. */
FFNRT_API const char *ffnrt_plan_choice(const ffnrt_plan *plan, const char *what);
/* The whole plan as text, one "what: choice (reason)" line per item. */
FFNRT_API const char *ffnrt_plan_text(const ffnrt_plan *plan);
FFNRT_API void ffnrt_plan_destroy(ffnrt_plan *plan); /* NULL is a no-op */

/* Forces a choice for the context's later ops, as the matching environment
 * variable does (and before it; an op descriptor's own field comes first):
 * "ffn.path" ("fused", "unfused"; FFNRT_FFN_PATH), "ffn.kernel" ("blocked",
 * "matvec", "tiled"; FFNRT_GEMM_KERNEL), "ffn.tiles" ("bm,bn,bk,tm,tn";
 * FFNRT_GEMM_TILES), "ffn.matvec" ("rows,lanes"; FFNRT_GEMV_SHAPE),
 * "ffn.block" ("tm,tn,wg_n,wg_m": a start, fitted to the device;
 * FFNRT_GEMM_BLOCK), "ffn.tuning" ("off": stored tuning results are not
 * used, "on"; FFNRT_TUNING), "ffn.int_dot" ("on": Q8_0, Q4_0, Q4_1, Q4_K
 * and Q6_K products round x to 8 bits and take integer dot products, "off";
 * FFNRT_FFN_INT_DOT), "ffn.backward" ("fused": ffnrt_ffn_backward applies
 * the activation's gradient in the epilogue of the product dy·W_out,
 * "unfused": in a pass after it; FFNRT_FFN_BACKWARD).
 * NULL or "" lifts it. A malformed value is
 * FFNRT_ERROR_INVALID_ARGUMENT here; a value the device cannot run makes
 * the op fail with the reason. Device, precision and limits are set
 * through ffnrt_context_options. */
FFNRT_API ffnrt_status ffnrt_context_force(ffnrt_context *ctx, const char *what, const char *value);

/* Setting i (every knob of the precedence above): its name as the plan
 * shows it, the environment variable that sets it, and whether
 * ffnrt_context_force takes it (1) or only the options and the
 * environment do (0); FFNRT_ERROR_INVALID_ARGUMENT past the end. For help
 * texts and tools that list what can be set. */
FFNRT_API ffnrt_status ffnrt_setting_info(size_t i, const char **name, const char **env, int *forceable);

/* ----------------------------------------------------------- activations */

typedef enum ffnrt_activation {
    FFNRT_ACT_RELU = 0,   /* x < 0 ? 0 : x (relu(-0) = -0, NaN passes) */
    FFNRT_ACT_LEAKY_RELU, /* x >= 0 ? x : alpha*x */
    FFNRT_ACT_PRELU,      /* x >= 0 ? x : slope[c]*x, c the channel of x */
    FFNRT_ACT_ELU,        /* x > 0 ? x : alpha*(exp(x) - 1) */
    FFNRT_ACT_GELU,       /* exact: x*Phi(x) = 0.5*x*erfc(-x/sqrt(2)) */
    FFNRT_ACT_GELU_TANH,  /* x*sigmoid(2u), u = sqrt(2/pi)*(x + 0.044715x^3) */
    FFNRT_ACT_SILU,       /* x*sigmoid(x) */
    FFNRT_ACT_SWISH,      /* x*sigmoid(beta*x) */
    FFNRT_ACT_SIGMOID,    /* 1/(1 + exp(-x)) */
    FFNRT_ACT_TANH,
    FFNRT_ACT_COUNT
} ffnrt_activation;

FFNRT_API const char *ffnrt_activation_name(ffnrt_activation act);
/* Parses a name as ffnrt_activation_name prints it ("gelu_tanh"). */
FFNRT_API ffnrt_status ffnrt_activation_from_name(const char *name, ffnrt_activation *out);

/* The arithmetic precision of an element-wise op. F32: the portable math
 * in fp32, rounded once to the storage type. F16 ("fast"): needs f16
 * tensors and a device with fp16 arithmetic (shaderFloat16 / cl_khr_fp16);
 * the op's products (x * Phi(x), value * phi(gate), slope * x, dy * f'(x))
 * are computed in fp16 registers and the special functions (sigmoid, erfc,
 * tanh, exp) come from the fp32 math rounded to fp16. Elsewhere it is
 * FFNRT_ERROR_UNSUPPORTED. */
typedef enum ffnrt_compute {
    FFNRT_COMPUTE_F32 = 0,
    FFNRT_COMPUTE_F16 = 1,
    /* The context's precision policy: F16 under FAST on f16 tensors where
     * the device has fp16 arithmetic, F32 otherwise. The default. */
    FFNRT_COMPUTE_AUTO = 2
} ffnrt_compute;

typedef struct ffnrt_activation_desc {
    ffnrt_activation kind;
    float alpha;  /* LEAKY_RELU slope (default 0.01), ELU alpha (default 1) */
    float beta;   /* SWISH beta (default 1) */
    /* PRELU: per-channel slopes, a 1-D tensor of the input's dtype with 1
     * element (shared) or as many as the channel axis has. */
    const ffnrt_tensor *slopes;
    /* PRELU: the channel axis, negative counts from the end. The default -1
     * is the feature axis of a tokens x features activation; use 1 for NCHW
     * images (PyTorch's nn.PReLU). */
    int channel_axis;
    ffnrt_compute compute;
} ffnrt_activation_desc;

#define FFNRT_ACTIVATION_DESC_INIT(kind_) \
    { (kind_), (kind_) == FFNRT_ACT_ELU ? 1.0f : 0.01f, 1.0f, NULL, -1, FFNRT_COMPUTE_AUTO }

/* y = act(x), element-wise. x and y have the same shape and dtype (f32,
 * f16 or bf16: arithmetic is fp32 and the result is rounded once to the
 * storage type); y may be x (in place).
 *
 * Aliasing, for every element-wise op (activations, ffnrt_copy, the split
 * GLU calls, forward and backward): an output may be exactly one of the
 * inputs (each output element reads its inputs, at its own index, before it
 * is written); an output that shares memory with an input any other way
 * (two wraps of one app buffer at overlapping ranges), or with another
 * output, is FFNRT_ERROR_INVALID_ARGUMENT. The halves layouts
 * (ffnrt_glu_forward, ffnrt_glu_backward) read two elements per output, so
 * their output must not overlap an input at all. */
FFNRT_API ffnrt_status ffnrt_activation_forward(ffnrt_context *ctx,
                                                const ffnrt_activation_desc *desc,
                                                const ffnrt_tensor *x, ffnrt_tensor *y);
/* dx = dy * act'(x). Conventions at the kinks: relu'(0) = 0, leaky/prelu'(0)
 * = alpha (the negative side), elu'(0) = alpha. PReLU's gradient with
 * respect to its slopes is not computed. dx may be x or dy (in place). */
/* The plan of ffnrt_activation_forward on `numel` elements of `dtype`
 * (PReLU: with desc->slopes NULL, one shared slope is assumed; with C > 1
 * slopes, x is taken as [numel / C, C], the slopes on its last axis, and
 * numel must be a multiple of C). */
FFNRT_API ffnrt_status ffnrt_activation_plan(ffnrt_context *ctx, const ffnrt_activation_desc *desc,
                                             ffnrt_dtype dtype, size_t numel, ffnrt_plan **out);
FFNRT_API ffnrt_status ffnrt_activation_backward(ffnrt_context *ctx,
                                                 const ffnrt_activation_desc *desc,
                                                 const ffnrt_tensor *x, const ffnrt_tensor *dy,
                                                 ffnrt_tensor *dx);

/* ------------------------------------------------------- gated (GLU) ops */

typedef enum ffnrt_glu {
    FFNRT_GLU = 0,        /* value * sigmoid(gate) */
    FFNRT_REGLU,          /* value * relu(gate) */
    FFNRT_GEGLU,          /* value * gelu(gate), exact */
    FFNRT_GEGLU_TANH,     /* value * gelu_tanh(gate) */
    FFNRT_SWIGLU,         /* value * swish(gate, beta); beta = 1 is SiLU */
    FFNRT_GLU_COUNT
} ffnrt_glu;

FFNRT_API const char *ffnrt_glu_name(ffnrt_glu kind);
FFNRT_API ffnrt_status ffnrt_glu_from_name(const char *name, ffnrt_glu *out);
/* The activation a kind applies to its gate (SWIGLU: FFNRT_ACT_SWISH with
 * the desc's beta); FFNRT_ACT_COUNT for an unknown kind. */
FFNRT_API ffnrt_activation ffnrt_glu_gate_activation(ffnrt_glu kind);

typedef struct ffnrt_glu_desc {
    ffnrt_glu kind;
    float beta; /* SWIGLU */
    ffnrt_compute compute;
} ffnrt_glu_desc;

#define FFNRT_GLU_DESC_INIT(kind_) { (kind_), 1.0f, FFNRT_COMPUTE_AUTO }

/* One tensor split in halves along its last dimension, [..., 2h] -> [..., h]:
 * the first half is the value and the second the gate, as in
 * torch.nn.functional.glu (a * sigmoid(b) for x = [a, b]). */
FFNRT_API ffnrt_status ffnrt_glu_forward(ffnrt_context *ctx, const ffnrt_glu_desc *desc,
                                         const ffnrt_tensor *x, ffnrt_tensor *y);
/* Gate and value as separate tensors of one shape: y = value * phi(gate). */
/* The plan of ffnrt_glu_forward on a [rows, 2 * width] input. */
FFNRT_API ffnrt_status ffnrt_glu_plan(ffnrt_context *ctx, const ffnrt_glu_desc *desc, ffnrt_dtype dtype,
                                      size_t rows, size_t width, ffnrt_plan **out);
FFNRT_API ffnrt_status ffnrt_glu_forward_split(ffnrt_context *ctx, const ffnrt_glu_desc *desc,
                                               const ffnrt_tensor *gate, const ffnrt_tensor *value,
                                               ffnrt_tensor *y);
/* Gradients: dx has x's shape ([..., 2h], value half then gate half). */
FFNRT_API ffnrt_status ffnrt_glu_backward(ffnrt_context *ctx, const ffnrt_glu_desc *desc,
                                          const ffnrt_tensor *x, const ffnrt_tensor *dy,
                                          ffnrt_tensor *dx);
FFNRT_API ffnrt_status ffnrt_glu_backward_split(ffnrt_context *ctx, const ffnrt_glu_desc *desc,
                                                const ffnrt_tensor *gate, const ffnrt_tensor *value,
                                                const ffnrt_tensor *dy, ffnrt_tensor *dgate,
                                                ffnrt_tensor *dvalue);

/* ------------------------------------------------------------ statistics */

/* Statistics an op computes in its own kernels, on request: each kernel
 * has a statistics variant (the kernels without it are unchanged, so
 * statistics off cost nothing), reduced on the device and read back after
 * the call as one ffnrt_stats. Asked for per context
 * (ffnrt_context_set_stats: every later op) or per layer
 * (ffnrt_ffn_set_stats: that layer's forwards, over the context's). The
 * docs/diagnostics.md maps each figure to the failure it detects.
 * A call with statistics waits for its results (in async mode too); while
 * the app records (ffnrt_vulkan.h, ffnrt_opencl.h) statistics are
 * FFNRT_ERROR_UNSUPPORTED. */
#define FFNRT_STATS_MAX_BINS 256

typedef struct ffnrt_stats_options {
    int enabled;            /* 1: compute statistics; 0: not (a layer's 0 overrides the context's 1) */
    /* Histograms: bins between lo and hi, plus an underflow and an overflow
     * bin; 0 bins: none (the cheapest variant). The pre-activations' range,
     * then the gate activation's (gated layers and GLU ops). */
    uint32_t bins;
    float lo, hi;
    float gate_lo, gate_hi;
    /* Saturation (sigmoid, tanh, GLU's sigmoid gate): a pre-activation x
     * with |f'(x)| below this counts as saturated. */
    float saturation;
    /* The finite check for ops run with these options: 1 on, 0 off, -1
     * unset (then ffnrt_context_force(ctx, "check.finite", "on"), else
     * FFNRT_CHECK_FINITE=1, else off). On, a call whose inputs are all
     * finite and whose outputs are not fails with FFNRT_ERROR_NON_FINITE
     * (even with enabled = 0). */
    int check_finite;
} ffnrt_stats_options;

#define FFNRT_STATS_OPTIONS_INIT { 1, 0, -8.0f, 8.0f, -4.0f, 4.0f, 1e-3f, -1 }

/* One call's statistics. Counts and histograms are exact; min and max are
 * exact; mean and RMS are within 1e-5 relative of the exact ones (of
 * mean |x| for the mean); token norms within 1e-5 relative. Values are
 * classified as the call stored them (a device that flushes subnormals to
 * zero stores zeros, and they count as zeros). */
typedef struct ffnrt_stats {
    int valid;              /* 1: filled by a call with statistics */
    char op[48];            /* "gelu", "geglu backward", "ffn swiglu", ... */
    ffnrt_dtype dtype;      /* the call's storage type */
    int fp16_arithmetic;
    /* Non-finite values. Inputs: the call's own (x, gate, value, dy; an
     * FFN's x, not its weights). Outputs: y, dx (dgate and dvalue), an
     * FFN's y. */
    uint64_t inputs, input_nan, input_inf;
    uint64_t outputs, output_nan, output_inf;
    int64_t first_nonfinite; /* flat index of the first non-finite output; -1: none */
    /* Pre-activations: an activation's x, a GLU's gate, an FFN's
     * W_in·x + b_in (gated: W_gate·x + b_gate) in fp32 as its epilogue
     * computes it. min, max, mean and RMS are over the finite ones (NaN
     * when there are none; RMS +Inf when a square overflowed fp32); min
     * orders -0 below +0. */
    uint64_t pre_count, pre_nan, pre_inf;
    float pre_min, pre_max;
    double pre_mean, pre_rms;
    /* hist[0]: below lo (and -Inf); hist[1 + i]: bin i, from lo + i·w to
     * lo + (i+1)·w (w = (hi - lo) / bins); hist[bins + 1]: from hi up (and
     * +Inf); NaN in none. ffnrt_stats_bin gives a value's bin. */
    uint32_t bins;
    float lo, hi;
    uint32_t hist[FFNRT_STATS_MAX_BINS + 2];
    /* Dead and saturated units. activations: the activation's (or gating's)
     * outputs, backward their gradients; zero: those exactly +-0 as stored. */
    uint64_t activations, zero;
    double dead_fraction;   /* zero / activations */
    uint64_t saturated;     /* pre-activations with |x| > saturation_cut */
    double saturated_fraction; /* saturated / pre_count */
    float saturation_cut;   /* where |f'(x)| falls below options.saturation (rounded to fp32); +Inf: the op does
                               not saturate */
    /* FFN layers: non-finite hidden activations (as stored), and the hidden
     * features that were exactly zero for every token of the call
     * (ffnrt_ffn_dead_features lists them). */
    uint64_t hidden_nonfinite;
    uint64_t hidden_features, dead_features;
    /* Gated layers and GLU ops: per token (a row of the output), the L2
     * norms of the gate branch (the gate's activation) and of the value
     * branch, their mean and maximum over the call's tokens (both NaN when
     * a token's norm is); and the gate activation's histogram over
     * [gate_lo, gate_hi) (bins as above). */
    uint64_t tokens;
    double gate_norm_mean, gate_norm_max, value_norm_mean, value_norm_max;
    float gate_lo, gate_hi;
    uint32_t gate_hist[FFNRT_STATS_MAX_BINS + 2];
} ffnrt_stats;

/* Statistics for every later op of the context (NULL: off). The options
 * are checked here (FFNRT_ERROR_INVALID_ARGUMENT names a bad field). */
FFNRT_API ffnrt_status ffnrt_context_set_stats(ffnrt_context *ctx, const ffnrt_stats_options *options);
/* The statistics of the context's last op that computed them (valid = 0
 * before any). */
FFNRT_API ffnrt_status ffnrt_context_last_stats(const ffnrt_context *ctx, ffnrt_stats *out);
/* The bin of x in a histogram of `bins` bins over [lo, hi), exactly as the
 * kernels count it: 0 below lo, 1 + floor((x - lo) * s) with
 * s = (float)bins / (hi - lo) computed in fp32, bins + 1 from there up;
 * UINT32_MAX for NaN. */
FFNRT_API uint32_t ffnrt_stats_bin(float x, float lo, float hi, uint32_t bins);
/* The value below which a fraction q (0..1) of a histogram's binned values
 * lie, interpolated within its bin (lo or hi for q in the outer bins): a
 * clip range for quantizing activations from calibration batches (sum
 * their hist first). NaN for an empty histogram or q outside [0, 1]. */
FFNRT_API double ffnrt_stats_quantile(const uint32_t *hist, uint32_t bins, float lo, float hi, double q);

/* y = x / sqrt(mean(x²) + eps) · weight over x's rows (its last axis):
 * Llama's RMSNorm, the pre-norm of a transformer block, with the mean in
 * fp32 as llama.cpp computes it. weight has a row's elements in x's
 * dtype; y has x's shape and may be x (in place). 16-bit rows must have an
 * even length (FFNRT_ERROR_UNSUPPORTED otherwise). x past the device's
 * buffer range runs in blocks of rows; one row past it is
 * FFNRT_ERROR_LIMIT_EXCEEDED. */
FFNRT_API ffnrt_status ffnrt_rms_norm(ffnrt_context *ctx, const ffnrt_tensor *x, const ffnrt_tensor *weight,
                                      float eps, ffnrt_tensor *y);

/* ------------------------------------------------------ weight formats */

/* How a weight matrix [rows, k] (row-major, [out, in] as nn.Linear) is
 * stored: the dense dtypes, or GGUF's block formats byte for byte, so a
 * GGUF tensor's bytes are handed over unchanged. Blocks run along k (the
 * input dimension, GGUF's ne0); a row is k / block_elements blocks.
 *   Q8_0: fp16 d, 32 x int8 q                      x = d*q          34 B / 32
 *   Q4_0: fp16 d, 16 B nibbles                     x = d*(q - 8)    18 B / 32
 *   Q4_1: fp16 d, fp16 m, 16 B nibbles             x = d*q + m      20 B / 32
 *         (nibbles: byte j holds element j in its low half and
 *          element j + 16 in its high half)
 *   Q4_K: 256-element super-blocks of 8 x 32, 6-bit scales and mins  144 B
 *   Q6_K: 256-element super-blocks of 16 x 16, int8 scales           210 B
 * The dense values equal ffnrt_dtype's, so a dtype converts to its format. */
typedef enum ffnrt_weight_format {
    FFNRT_WEIGHT_F32 = 0,
    FFNRT_WEIGHT_F16 = 1,
    FFNRT_WEIGHT_BF16 = 2,
    FFNRT_WEIGHT_Q8_0 = 3,
    FFNRT_WEIGHT_Q4_0 = 4,
    FFNRT_WEIGHT_Q4_1 = 5,
    FFNRT_WEIGHT_Q4_K = 6,
    FFNRT_WEIGHT_Q6_K = 7,
    FFNRT_WEIGHT_FORMAT_COUNT
} ffnrt_weight_format;

/* ------------------------------------------------------------ FFN layers */

/* A feed-forward block on tokens x d_model inputs (row-major):
 *   dense: y = W_out·phi(W_in·x + b_in) + b_out
 *   gated: y = W_out·(phi(W_gate·x + b_gate) * (W_value·x + b_value)) + b_out
 * Weights are [out, in] row-major like PyTorch's nn.Linear.weight, so a
 * state dict loads without transposing. x, the weights, the biases and y
 * share one dtype; products accumulate in fp32. */
typedef struct ffnrt_ffn ffnrt_ffn;

typedef enum ffnrt_ffn_kind {
    FFNRT_FFN_DENSE = 0,
    FFNRT_FFN_GATED
} ffnrt_ffn_kind;

/* Fused: bias and activation in the matrix product's epilogue and, gated,
 * gate and value products in one kernel that writes only phi(g)*v.
 * Unfused: separate product, bias, activation and gating kernels with
 * intermediates in device memory. Both give the same results within the
 * stated error bound; AUTO is fused. */
typedef enum ffnrt_ffn_path {
    FFNRT_FFN_PATH_AUTO = 0,
    FFNRT_FFN_PATH_FUSED,
    FFNRT_FFN_PATH_UNFUSED
} ffnrt_ffn_path;

/* The product kernel: matrix-vector (streams the weights once; decode) up
 * to matvec_max_tokens tokens, tiled above. AUTO chooses by token count;
 * MATVEC runs larger inputs as chunks of matvec_max_tokens tokens. */
typedef enum ffnrt_matmul_kernel {
    FFNRT_MATMUL_AUTO = 0,
    FFNRT_MATMUL_MATVEC,
    FFNRT_MATMUL_TILED
} ffnrt_matmul_kernel;

typedef struct ffnrt_ffn_desc {
    ffnrt_ffn_kind kind;
    int64_t d_model;
    int64_t hidden;           /* m (dense) or g (gated) */
    ffnrt_dtype dtype;
    int bias;                 /* 1: every projection has a bias, 0: none has */
    ffnrt_activation_desc activation; /* dense: phi, any kind but PRELU */
    ffnrt_glu_desc glu;       /* gated: phi of the gate, as ffnrt_glu_forward */
    ffnrt_ffn_path path;
    ffnrt_matmul_kernel matmul;
    uint32_t matvec_max_tokens; /* 0: 8 */
    /* Accumulate in fp16 where the device has fp16 arithmetic; a
     * permission, not a demand. Not used yet: accumulation is fp32. */
    int allow_fp16_accumulation;
    /* How each weight matrix is stored, each its own: format_in is W_in
     * (dense) or W_gate (gated; both halves of a stacked w_gate_value),
     * format_value W_value, format_out W_out. FFNRT_WEIGHT_F32 (0, the
     * default) or the dtype's own format: the matrix is in dtype, as above.
     * A block format (Q8_0, Q4_0, Q4_1, Q4_K, Q6_K): the matrix is GGUF's
     * bytes of that type, [rows][k / block] blocks (ffnrt_weight_bytes), k
     * its input width (d_model, or hidden for W_out) a multiple of the
     * block; a stacked w_gate_value is both halves in format_in
     * (format_value the same or left at its default). Biases, x and y stay
     * in dtype; products accumulate in fp32 from the exact dequantized
     * weights. Gate and value in different formats run unfused. */
    ffnrt_weight_format format_in, format_value, format_out;
} ffnrt_ffn_desc;

#define FFNRT_FFN_DESC_INIT(kind_, d_model_, hidden_)                                              \
    { (kind_), (d_model_), (hidden_), FFNRT_DTYPE_F32, 0, FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_GELU), \
      FFNRT_GLU_DESC_INIT(FFNRT_SWIGLU), FFNRT_FFN_PATH_AUTO, FFNRT_MATMUL_AUTO, 0, 0,                \
      FFNRT_WEIGHT_F32, FFNRT_WEIGHT_F32, FFNRT_WEIGHT_F32 }

/* Weights as host arrays of the desc's dtype (float, or uint16_t bits for
 * f16 and bf16), or, for a matrix in a block format, GGUF's bytes of it
 * (ffnrt_weight_bytes of its rows and k; a GGUF tensor's data unchanged).
 * Dense: w_in [hidden, d_model], b_in [hidden]. Gated:
 * w_gate and w_value [hidden, d_model] with b_gate, b_value [hidden], or
 * both stacked as w_gate_value [2*hidden, d_model] (gate rows first, as
 * Phi-3's gate_up_proj) with b_gate_value [2*hidden]. Both: w_out
 * [d_model, hidden], b_out [d_model]. Biases are given iff desc.bias;
 * unused fields stay NULL. */
typedef struct ffnrt_ffn_weights {
    const void *w_in, *b_in;
    const void *w_gate, *b_gate, *w_value, *b_value;
    const void *w_gate_value, *b_gate_value;
    const void *w_out, *b_out;
} ffnrt_ffn_weights;

/* The same as device tensors of those shapes (biases 1-D). The layer uses
 * them in place: they must outlive it. A matrix in a block format is a
 * tensor of any dtype and shape holding GGUF's bytes of it (its byte size
 * ffnrt_weight_bytes: e.g. f16 [bytes / 2]); the layer repacks those
 * bytes at creation into device buffers of its own, so that tensor need
 * not outlive the layer. */
typedef struct ffnrt_ffn_weight_tensors {
    const ffnrt_tensor *w_in, *b_in;
    const ffnrt_tensor *w_gate, *b_gate, *w_value, *b_value;
    const ffnrt_tensor *w_gate_value, *b_gate_value;
    const ffnrt_tensor *w_out, *b_out;
} ffnrt_ffn_weight_tensors;

/* Creates a layer, copying host weights to the device. Layers must be
 * destroyed before their context. */
FFNRT_API ffnrt_status ffnrt_ffn_create(ffnrt_context *ctx, const ffnrt_ffn_desc *desc,
                                        const ffnrt_ffn_weights *weights, ffnrt_ffn **out);
FFNRT_API ffnrt_status ffnrt_ffn_create_from_tensors(ffnrt_context *ctx, const ffnrt_ffn_desc *desc,
                                                     const ffnrt_ffn_weight_tensors *weights,
                                                     ffnrt_ffn **out);
FFNRT_API void ffnrt_ffn_destroy(ffnrt_ffn *layer); /* NULL is a no-op */
/* y = ffn(x): x and y are [..., d_model] of the layer's dtype and one shape;
 * the leading dimensions are the tokens. y must not be x, nor overlap x or
 * the layer's weight and bias tensors (FFNRT_ERROR_INVALID_ARGUMENT). The device time of
 * the whole block (every kernel) is ffnrt_context_last_op_time's. */
FFNRT_API ffnrt_status ffnrt_ffn_forward(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y);
/* y += ffn(x): a transformer block's residual update, in the same pass:
 * the down product (its bias too) is added to y's values where it is
 * written, one rounding an output, no extra kernel or tensor. As
 * ffnrt_ffn_forward otherwise (autotuning, which would overwrite y, takes
 * stored results only). */
FFNRT_API ffnrt_status ffnrt_ffn_forward_residual(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y);

/* The plan of a forward of `tokens` tokens through a layer of this desc
 * (no weights needed): path, product kernel, tiles, splits, with reasons.
 * `ffnrt plan` prints it. */
FFNRT_API ffnrt_status ffnrt_ffn_plan(ffnrt_context *ctx, const ffnrt_ffn_desc *desc, int64_t tokens,
                                      ffnrt_plan **out);
/* Times every path and product kernel the device can run on x (y gets the
 * result) and keeps the fastest for this device and shape class (kind,
 * function, dtype, biases, sizes, token bucket 1 / 2-8 / 9-64 / more);
 * later forwards with path and matmul AUTO use it, and the plan says so. */
FFNRT_API ffnrt_status ffnrt_ffn_autotune(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y);

/* Statistics for this layer's forwards (ffnrt_stats below), over the
 * context's; NULL: follow the context's. */
FFNRT_API ffnrt_status ffnrt_ffn_set_stats(ffnrt_ffn *layer, const ffnrt_stats_options *options);
/* The statistics of this layer's last forward that computed them. */
FFNRT_API ffnrt_status ffnrt_ffn_last_stats(const ffnrt_ffn *layer, ffnrt_stats *out);
/* The hidden features dead (exactly zero for every token) in that
 * forward, in increasing order: up to cap of them into features, and
 * their number in *count. */
FFNRT_API ffnrt_status ffnrt_ffn_dead_features(const ffnrt_ffn *layer, uint32_t *features, size_t cap,
                                               size_t *count);

/* ------------------------------------------------------------ training */

/* A forward that keeps what ffnrt_ffn_backward reads: the hidden
 * intermediates, in the layer's own device memory, [tokens, hidden] each
 * (dense: W_in·x + b_in and phi of it; gated: gate, value and phi(gate) *
 * value). It runs the unfused path (the fused one writes none of them),
 * with results within the forward's bound. Any later forward of the layer
 * replaces what it kept. Layers with block-format weights are
 * inference-only (FFNRT_ERROR_UNSUPPORTED). */
FFNRT_API ffnrt_status ffnrt_ffn_forward_train(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y);

/* The hidden features dead (exactly zero for every token) in every
 * training forward that computed statistics (ffnrt_ffn_set_stats or the
 * context's) since the window was last reset: the failure-mode table's
 * units stuck at zero, across steps rather than one batch. Up to cap of
 * them in increasing order into features, their number in *count, the
 * forwards the window holds in *forwards; reset: empty the window after. */
FFNRT_API ffnrt_status ffnrt_ffn_dead_window(ffnrt_ffn *layer, int reset, uint32_t *features, size_t cap,
                                            size_t *count, uint64_t *forwards);

/* Where ffnrt_ffn_backward writes the layer's gradients: device tensors of
 * the layer's dtype shaped as ffnrt_ffn_weights' matrices and biases
 * ([out, in] and 1-D). A NULL field is a gradient not wanted (a frozen
 * matrix costs no product). Gated layers take w_gate and w_value (and
 * their biases), or both stacked in w_gate_value [2*hidden, d_model] (gate
 * rows first), whichever the layer was made with or not. Bias fields only
 * when the layer has biases. */
typedef struct ffnrt_ffn_gradients {
    ffnrt_tensor *w_in, *b_in;
    ffnrt_tensor *w_gate, *b_gate, *w_value, *b_value;
    ffnrt_tensor *w_gate_value, *b_gate_value;
    ffnrt_tensor *w_out, *b_out;
} ffnrt_ffn_gradients;

/* Add the gradients to what the tensors hold (accumulation over
 * micro-batches); without it they are overwritten. dx is always
 * overwritten. */
#define FFNRT_GRADIENTS_ACCUMULATE 1u
/* Recompute the hidden intermediates from x instead of reading a training
 * forward's: the backward first runs the forward's first products (up, or
 * gate and value), their biases and the activation (gating) again, so any
 * forward or none may come before it (ffnrt_ffn_forward's fused path
 * included), and it frees those intermediates and its own buffers before
 * it returns. The layer then holds nothing but its weights between steps,
 * where a training forward keeps saved_bytes until its backward: the
 * choice for a stack of layers whose intermediates do not all fit at once.
 * It costs ffnrt_ffn_cost's recompute_flops more a step, and the
 * allocations each call. The gradients are the same bits as after a
 * training forward of the same x. */
#define FFNRT_GRADIENTS_RECOMPUTE 2u

/* The backward of the last ffnrt_ffn_forward_train, which must have run
 * on this x (the same values: the weight gradients read it) and as many
 * tokens (or of x itself, with FFNRT_GRADIENTS_RECOMPUTE): given dy = dL/dy ([..., d_model], x's shape), writes dx = dL/dx
 * (NULL: not wanted) and the gradients asked for in grads (NULL: none).
 * Products accumulate in fp32 and every reduction has a fixed order, so
 * the same inputs give the same bits on a device (no atomics). The
 * activation's (gating's) gradient runs in the epilogue of dy·W_out on
 * GPUs, in a pass after it on CPU devices (the plan's
 * "ffn.training.backward"; ffn.backward forces either). 16-bit
 * layers round dx, the gradients and the hidden gradients to their dtype
 * (docs/training.md states the bounds). The outputs must not overlap each
 * other, x, dy or the layer's weights. Tensors past the device's buffer
 * range go in blocks; only a 16-bit weight of an odd count of rows (an
 * odd d_model or hidden) past it is refused (FFNRT_ERROR_LIMIT_EXCEEDED).
 * The device time of the whole backward is ffnrt_context_last_op_time's. */
FFNRT_API ffnrt_status ffnrt_ffn_backward(ffnrt_ffn *layer, const ffnrt_tensor *x, const ffnrt_tensor *dy,
                                          ffnrt_tensor *dx, const ffnrt_ffn_gradients *grads, unsigned flags);

/* An optimizer on the device: it updates parameter tensors in place from
 * their gradients, keeps its state (momentum, AdamW's moments, the fp32
 * master copy of a 16-bit parameter) in fp32 device memory, clips the
 * global gradient norm and scales the loss for fp16 training. The rules
 * are PyTorch's (torch.optim.SGD, torch.optim.AdamW), so hyper-parameters
 * carry over. */
typedef struct ffnrt_optimizer ffnrt_optimizer;

typedef enum ffnrt_optimizer_kind {
    FFNRT_OPTIMIZER_SGD = 0, /* g += wd·w; m = momentum·m + g; w -= lr·m (m = g without momentum) */
    FFNRT_OPTIMIZER_ADAMW    /* w *= 1 - lr·wd; Adam's moments, bias-corrected; w -= lr·m̂ / (√v̂ + eps) */
} ffnrt_optimizer_kind;

typedef struct ffnrt_optimizer_desc {
    ffnrt_optimizer_kind kind;
    float lr;
    float momentum;          /* SGD; 0: none */
    float beta1, beta2, eps; /* AdamW */
    float weight_decay;      /* SGD: added to the gradient (L2); AdamW: decoupled */
    /* Global gradient-norm clipping: gradients scaled by max / norm when
     * their joint L2 norm passes max (torch.nn.utils.clip_grad_norm_); 0:
     * no clipping. */
    float max_grad_norm;
    /* Dynamic loss scaling (fp16 training; 0: off, the scale is 1). The
     * caller multiplies the loss's gradient by ffnrt_optimizer_loss_scale
     * before the backward; a step divides it out. Gradients with a NaN or
     * an infinity skip the step (nothing changes) and halve the scale;
     * scale_window clean steps in a row (0: 2000) double it. */
    float loss_scale;
    uint32_t scale_window;
    /* The statistics' near-zero gradients: |g| at most this (loss scale
     * divided out) counts; 0: exactly zero. */
    float grad_zero_threshold;
} ffnrt_optimizer_desc;

#define FFNRT_OPTIMIZER_DESC_INIT(kind_) { (kind_), 1e-3f, 0.0f, 0.9f, 0.999f, 1e-8f, 0.0f, 0.0f, 0.0f, 0, 0.0f }

FFNRT_API ffnrt_status ffnrt_optimizer_create(ffnrt_context *ctx, const ffnrt_optimizer_desc *desc,
                                              ffnrt_optimizer **out);
FFNRT_API void ffnrt_optimizer_destroy(ffnrt_optimizer *opt); /* NULL is a no-op; before the context */
/* A parameter (updated in place) and its gradient: same shape and dtype,
 * distinct tensors of the optimizer's context. A 16-bit parameter's fp32
 * master copy is made from its values now. Both must outlive the
 * optimizer. */
FFNRT_API ffnrt_status ffnrt_optimizer_add(ffnrt_optimizer *opt, ffnrt_tensor *param, const ffnrt_tensor *grad);
/* Every gradient given in grads (NULL fields: frozen) with the layer's
 * matching weight or bias as its parameter. The forms must match the
 * layer's: a layer made with w_gate_value takes w_gate_value's gradient. */
FFNRT_API ffnrt_status ffnrt_optimizer_add_ffn(ffnrt_optimizer *opt, ffnrt_ffn *layer,
                                               const ffnrt_ffn_gradients *grads);
FFNRT_API ffnrt_status ffnrt_optimizer_set_lr(ffnrt_optimizer *opt, float lr);
/* The scale the next backward's loss gradient takes (1 when off). */
FFNRT_API float ffnrt_optimizer_loss_scale(const ffnrt_optimizer *opt);

typedef struct ffnrt_step_report {
    uint64_t steps;         /* updates made, this one included */
    uint64_t skipped;       /* steps skipped for non-finite gradients, ever */
    int skipped_now;        /* this one was skipped: no parameter or state changed */
    double grad_norm;       /* joint L2 norm of the gradients, loss scale divided out, before clipping */
    double clip;            /* the factor clipping applied (1: none) */
    float loss_scale;       /* the scale this step's gradients carried */
    float next_loss_scale;  /* the scale for the next backward */
} ffnrt_step_report;

/* One update of every parameter from its gradient. The norms are reduced
 * on the device in a fixed order (the same gradients give the same bits)
 * and read back to decide clipping and skipping. report may be NULL. */
FFNRT_API ffnrt_status ffnrt_optimizer_step(ffnrt_optimizer *opt, ffnrt_step_report *report);
/* The last step's figures of parameter i's gradient (in the order added;
 * ffnrt_optimizer_add_ffn adds a layer's in ffnrt_ffn_gradients' field
 * order): the failure-mode table's near-zero gradients and non-finite
 * values, per matrix. */
typedef struct ffnrt_grad_stats {
    double norm;         /* L2, loss scale divided out, before clipping */
    double near_zero;    /* fraction of elements with |g| <= desc.grad_zero_threshold */
    uint64_t non_finite; /* NaN and infinite elements */
    uint64_t elements;
} ffnrt_grad_stats;
FFNRT_API ffnrt_status ffnrt_optimizer_grad_stats(const ffnrt_optimizer *opt, size_t i, ffnrt_grad_stats *out);

/* Losses, computed on the device with their gradients, for training and
 * validation. scale multiplies the gradient (the optimizer's loss scale;
 * 1 without). The loss's value is reduced on the device in a fixed order
 * and read back into *loss (NULL: not wanted; with dy NULL too, nothing
 * runs). The gradient tensor must not overlap the inputs. */

/* L = mean((y - target)^2) over every element; dy = scale · 2(y - target) / n
 * (NULL: the value only). y, target and dy share shape and dtype. */
FFNRT_API ffnrt_status ffnrt_loss_mse(ffnrt_context *ctx, const ffnrt_tensor *y, const ffnrt_tensor *target,
                                      float scale, ffnrt_tensor *dy, double *loss);
/* Softmax cross-entropy taken from logits [..., classes] (never from
 * probabilities: the seed's rule, for stability), one class index a row
 * in labels (host memory, rows = numel / classes of them, each below
 * classes): L = mean over rows of logsumexp(z) - z[label];
 * dlogits = scale · (softmax(z) - onehot(label)) / rows (NULL: the value
 * only), logits' shape and dtype. Logits past the device's buffer range
 * run in blocks of rows; one row past it is FFNRT_ERROR_LIMIT_EXCEEDED. */
FFNRT_API ffnrt_status ffnrt_loss_cross_entropy(ffnrt_context *ctx, const ffnrt_tensor *logits,
                                                const int32_t *labels, float scale, ffnrt_tensor *dlogits,
                                                double *loss);

/* The cost of one forward of `tokens` tokens on a path (AUTO: fused).
 * flops: 2 per multiply-add, plus 1 per bias add, activation and gating
 * product. bytes_moved: compulsory device-memory traffic, every kernel
 * reading its inputs and writing its outputs once. peak_bytes: weights,
 * biases, x, y and the path's intermediates. */
typedef struct ffnrt_ffn_cost {
    uint64_t parameters;
    uint64_t weight_bytes;   /* weights and biases as the device holds them: dtype size each, block
                                formats' blocks as repacked (scales included; = GGUF's bytes for
                                Q8_0, Q4_0, Q4_1 but rows padded to whole words) */
    uint64_t flops;
    uint64_t bytes_moved;
    uint64_t peak_bytes;
    uint32_t kernels;        /* dispatches launched (before splitting for limits) */
    /* A training step's (ffnrt_ffn_forward_train, then ffnrt_ffn_backward
     * with dx and every gradient), whatever the path asked; UINT64_MAX
     * where they pass 64 bits and the forward's do not, 0 for quantized
     * layers (inference-only): */
    uint64_t train_flops;      /* the forward's, plus 4 per multiply-add (the dx and dW products), the bias
                                  sums and the activation's gradient */
    uint64_t saved_bytes;      /* what the training forward keeps: 2 (dense) or 3 (gated) [tokens, hidden];
                                  held until the backward, or only inside it with FFNRT_GRADIENTS_RECOMPUTE */
    uint64_t train_peak_bytes; /* weights, gradients, x, y, dy, dx, saved_bytes and the backward's own buffers;
                                  an optimizer's state is its own (ffnrt_optimizer: 0-2 fp32 copies of the
                                  parameters, 1 more for 16-bit ones) */
    uint64_t recompute_flops;  /* what FFNRT_GRADIENTS_RECOMPUTE adds to a step: the first products, their
                                  biases and the activation (gating) again */
} ffnrt_ffn_cost;

FFNRT_API ffnrt_status ffnrt_ffn_cost_of(const ffnrt_ffn_desc *desc, int64_t tokens, ffnrt_ffn_path path,
                                         ffnrt_ffn_cost *out);

/* The gated width whose 3·d·g weights match a dense FFN's 2·d·m: g = 2m/3
 * (rounded down), then up to a multiple of `multiple` (Llama: 256, so
 * m = 4·4096 gives 11008). 0 if m < 1 or multiple < 1. */
FFNRT_API int64_t ffnrt_ffn_gated_hidden(int64_t dense_hidden, int64_t multiple);

/* --------------------------------------------------- host conversions */

/* fp32 to and from fp16 and bf16 bits, rounding to nearest even; NaN stays
 * NaN. The same rounding the kernels use. */
FFNRT_API uint16_t ffnrt_f32_to_f16(float v);
FFNRT_API float ffnrt_f16_to_f32(uint16_t bits);
FFNRT_API uint16_t ffnrt_f32_to_bf16(float v);
FFNRT_API float ffnrt_bf16_to_f32(uint16_t bits);
FFNRT_API void ffnrt_f32_to_f16_array(const float *src, uint16_t *dst, size_t n);
FFNRT_API void ffnrt_f16_to_f32_array(const uint16_t *src, float *dst, size_t n);
FFNRT_API void ffnrt_f32_to_bf16_array(const float *src, uint16_t *dst, size_t n);
FFNRT_API void ffnrt_bf16_to_f32_array(const uint16_t *src, float *dst, size_t n);

/* y = x, through the same element-wise machinery; the bench's bandwidth
 * limit and a device sanity check. */
FFNRT_API ffnrt_status ffnrt_copy(ffnrt_context *ctx, const ffnrt_tensor *x, ffnrt_tensor *y);

/* ------------------------------------------------------ weight formats */

/* Host conversions between fp32 and the formats (ffnrt_weight_format is
 * defined before the FFN layers, which take it). */
/* "f32", "q4_1", ...; "unknown" for a value out of range. */
FFNRT_API const char *ffnrt_weight_format_name(ffnrt_weight_format format);
/* Parses a name as ffnrt_weight_format_name prints it (any case). */
FFNRT_API ffnrt_status ffnrt_weight_format_from_name(const char *name, ffnrt_weight_format *out);
/* Elements one block holds along k and its bytes (dense: 1 and the dtype's
 * size). Either pointer may be NULL. */
FFNRT_API ffnrt_status ffnrt_weight_format_block(ffnrt_weight_format format, uint32_t *elements,
                                                 uint32_t *bytes);
/* Bytes of a [rows, k] matrix (rows = 1: one row). k must be a multiple of
 * the block (FFNRT_ERROR_SHAPE_MISMATCH otherwise); a size past SIZE_MAX is
 * FFNRT_ERROR_INVALID_ARGUMENT. */
FFNRT_API ffnrt_status ffnrt_weight_bytes(ffnrt_weight_format format, int64_t rows, int64_t k, size_t *bytes);
/* fp32 [rows, k] -> format, with the reference rounding of GGUF's tools
 * (ggml's quantize_row_*_ref, byte for byte; for Q4_K and Q6_K their
 * scale searches; docs/quantized.md gives each rule); dst_bytes must equal
 * ffnrt_weight_bytes. A NaN or infinite weight, or a block whose scale or
 * minimum overflows fp16, is FFNRT_ERROR_INVALID_ARGUMENT naming the row
 * and column, and dst is left untouched. Dense formats round to nearest
 * even (NaN and Inf pass through as themselves). */
FFNRT_API ffnrt_status ffnrt_quantize(ffnrt_weight_format format, const float *src, int64_t rows, int64_t k,
                                      void *dst, size_t dst_bytes);
/* format -> fp32 [rows, k]; src_bytes must equal ffnrt_weight_bytes. Pure
 * arithmetic on the stored scales, never an error on content: a NaN or
 * infinite stored scale gives NaN or infinite weights. */
FFNRT_API ffnrt_status ffnrt_dequantize(ffnrt_weight_format format, const void *src, size_t src_bytes,
                                        int64_t rows, int64_t k, float *dst);

#ifdef __cplusplus
}
#endif
#endif /* FFNRT_H */
