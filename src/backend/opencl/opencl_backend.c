/* OpenCL backend: every platform and device the ICD loader finds. */
#include "backend/backend.h"
#include "backend/opencl/cl_api.h"
#include "backend/opencl/cl_interop.h"

#include "platform/platform.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ffnrt_cl_api cl;
static ffnrt_once cl_once = FFNRT_ONCE_INIT;
static char cl_load_error[256];

static void cl_load_once(void)
{
    /* The OS's names for the ICD loader (libOpenCL.so.1 on Linux,
     * OpenCL.dll on Windows, ...: platform.h). Every entry point loaded is
     * OpenCL 1.2's (cl_api.h), so a 1.2 loader (Wine's opencl.dll) serves. */
    const char *const *names = ffnrt_opencl_loader_names();
    void *lib = NULL;
    char why[160] = "";
    for (size_t i = 0; names[i] && !lib; i++)
        lib = ffnrt_library_open(names[i], why, sizeof why);
    if (!lib) {
        snprintf(cl_load_error, sizeof cl_load_error, "OpenCL ICD loader not found (%s)", why);
        return;
    }
#define FFNRT_CL_LOAD(name)                                                                        \
    if (!(cl.name = (__typeof__(&name))ffnrt_library_symbol(lib, #name))) {                        \
        snprintf(cl_load_error, sizeof cl_load_error, "OpenCL loader lacks %s", #name);             \
        return;                                                                                     \
    }
    FFNRT_CL_FUNCTIONS(FFNRT_CL_LOAD)
#undef FFNRT_CL_LOAD
    /* The library stays loaded for the life of the process. */
}

static ffnrt_status cl_load(ffnrt_error *err)
{
    ffnrt_call_once(&cl_once, cl_load_once);
    if (cl_load_error[0])
        return ffnrt_fail(err, FFNRT_ERROR_BACKEND_UNAVAILABLE, "%s", cl_load_error);
    return FFNRT_OK;
}

static ffnrt_status cl_fail(ffnrt_error *err, cl_int code, const char *what)
{
    ffnrt_status st = FFNRT_ERROR_DEVICE_FAILURE;
    if (code == CL_OUT_OF_HOST_MEMORY)
        st = FFNRT_ERROR_OUT_OF_HOST_MEMORY;
    else if (code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_RESOURCES)
        st = FFNRT_ERROR_OUT_OF_DEVICE_MEMORY;
    else if (code == CL_INVALID_BUFFER_SIZE)
        st = FFNRT_ERROR_LIMIT_EXCEEDED;
    return ffnrt_fail(err, st, "OpenCL: %s failed with error %d", what, (int)code);
}

/* ------------------------------------------------------------- devices */

/* All devices of all platforms, in one flat list. */
static ffnrt_status cl_all_devices(cl_device_id **out, cl_uint *count, ffnrt_error *err)
{
    cl_uint np = 0;
    *out = NULL;
    *count = 0;
    cl_int rc = cl.clGetPlatformIDs(0, NULL, &np);
    if (rc == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || np == 0)
        return FFNRT_OK; /* a loader with no driver: no devices */
    if (rc != CL_SUCCESS)
        return cl_fail(err, rc, "clGetPlatformIDs");
    cl_platform_id *plats = calloc(np, sizeof *plats);
    if (!plats)
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "OpenCL: out of host memory");
    cl.clGetPlatformIDs(np, plats, NULL);
    cl_uint total = 0;
    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        if (cl.clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) == CL_SUCCESS)
            total += nd;
    }
    cl_device_id *devs = calloc(total ? total : 1, sizeof *devs);
    if (!devs) {
        free(plats);
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "OpenCL: out of host memory");
    }
    cl_uint at = 0;
    for (cl_uint p = 0; p < np && at < total; p++) {
        cl_uint nd = 0;
        if (cl.clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, total - at, devs + at, &nd) == CL_SUCCESS)
            at += nd;
    }
    free(plats);
    *out = devs;
    *count = at;
    return FFNRT_OK;
}

/* A device string, cut to fit buf (the API refuses a buffer too small). */
static void cl_string(cl_device_id d, cl_device_info what, char *buf, size_t cap)
{
    size_t size = 0;
    buf[0] = '\0';
    if (cl.clGetDeviceInfo(d, what, 0, NULL, &size) != CL_SUCCESS || size == 0)
        return;
    char *full = malloc(size + 1);
    if (full && cl.clGetDeviceInfo(d, what, size, full, NULL) == CL_SUCCESS) {
        full[size] = '\0';
        snprintf(buf, cap, "%s", full);
    }
    free(full);
}

static uint64_t cl_u64(cl_device_id d, cl_device_info what)
{
    cl_ulong v = 0;
    cl.clGetDeviceInfo(d, what, sizeof v, &v, NULL);
    return v;
}

static uint32_t cl_u32(cl_device_id d, cl_device_info what)
{
    cl_uint v = 0;
    cl.clGetDeviceInfo(d, what, sizeof v, &v, NULL);
    return v;
}

static size_t cl_size(cl_device_id d, cl_device_info what)
{
    size_t v = 0;
    cl.clGetDeviceInfo(d, what, sizeof v, &v, NULL);
    return v;
}

static void cl_fill_info(cl_device_id d, uint32_t index, ffnrt_device_info *info, ffnrt_limits *lim)
{
    memset(info, 0, sizeof *info);
    info->backend = FFNRT_BACKEND_OPENCL;
    info->index = index;
    cl_string(d, CL_DEVICE_NAME, info->name, sizeof info->name);
    cl_string(d, CL_DEVICE_VENDOR, info->vendor, sizeof info->vendor);
    cl_string(d, CL_DRIVER_VERSION, info->driver_version, sizeof info->driver_version);
    cl_string(d, CL_DEVICE_VERSION, info->api_version, sizeof info->api_version);
    info->vendor_id = cl_u32(d, CL_DEVICE_VENDOR_ID);
    cl_device_type type = 0;
    cl.clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    cl_bool unified = CL_FALSE;
    cl.clGetDeviceInfo(d, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
    if (type & CL_DEVICE_TYPE_CPU)
        info->type = FFNRT_DEVICE_TYPE_CPU;
    else if (type & CL_DEVICE_TYPE_GPU)
        info->type = unified ? FFNRT_DEVICE_TYPE_INTEGRATED_GPU : FFNRT_DEVICE_TYPE_DISCRETE_GPU;
    else
        info->type = FFNRT_DEVICE_TYPE_OTHER;
    info->compute_units = cl_u32(d, CL_DEVICE_MAX_COMPUTE_UNITS);
    info->max_workgroup_size = (uint32_t)cl_size(d, CL_DEVICE_MAX_WORK_GROUP_SIZE);
    /* OpenCL has no workgroup-count limit; ffnrt indexes groups in 32 bits. */
    info->max_workgroup_count[0] = info->max_workgroup_count[1] = info->max_workgroup_count[2] = 65535u;
    info->shared_memory_size = cl_u64(d, CL_DEVICE_LOCAL_MEM_SIZE);
    info->max_allocation = cl_u64(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    info->max_buffer_range = info->max_allocation;
    info->memory_size = cl_u64(d, CL_DEVICE_GLOBAL_MEM_SIZE);
    info->subgroup_size = 0; /* not queryable without a kernel in OpenCL 1.2 */
    char ext[4096];
    cl_string(d, CL_DEVICE_EXTENSIONS, ext, sizeof ext);
    info->fp16_arithmetic = strstr(ext, "cl_khr_fp16") != NULL;
    info->storage_16bit = 0; /* halves are packed through vload_half/vstore_half */
    cl_device_fp_config fp = 0;
    cl.clGetDeviceInfo(d, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
    info->denormals_preserved = (fp & CL_FP_DENORM) ? 1 : 0;
    /* Identity extensions; the tokens are from cl_ext.h, spelled out so
     * that older headers build. */
    if (strstr(ext, "cl_khr_device_uuid") &&
        cl.clGetDeviceInfo(d, 0x106A /* CL_DEVICE_UUID_KHR */, sizeof info->uuid, info->uuid, NULL) == CL_SUCCESS)
        info->has_uuid = 1;
    cl_uint pci[4]; /* cl_device_pci_bus_info_khr: domain, bus, device, function */
    if (strstr(ext, "cl_khr_pci_bus_info") &&
        cl.clGetDeviceInfo(d, 0x410F /* CL_DEVICE_PCI_BUS_INFO_KHR */, sizeof pci, pci, NULL) == CL_SUCCESS) {
        info->pci_domain = pci[0], info->pci_bus = pci[1], info->pci_device = pci[2], info->pci_function = pci[3];
        info->has_pci_address = 1;
    }
    if (lim) {
        lim->max_buffer_range = info->max_buffer_range;
        lim->max_allocation = info->max_allocation;
        uint32_t align_bits = cl_u32(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN);
        lim->buffer_offset_alignment = align_bits >= 32 ? align_bits / 8 : 4;
        lim->max_workgroup_size = info->max_workgroup_size;
        for (int i = 0; i < 3; i++)
            lim->max_workgroup_count[i] = info->max_workgroup_count[i];
        lim->int64_words = 0; /* prelude_opencl.cl has no 8-word views */
        lim->max_bindings = 32; /* OpenCL has no such limit: buffers are kernel arguments */
    }
}

/* Counts the .icd files of the loader's folder, naming them in names. */
typedef struct icd_names {
    char *text;
    size_t cap, len;
    int count;
} icd_names;

static void add_icd_name(const char *dir, const char *name, void *arg)
{
    (void)dir;
    icd_names *l = arg;
    size_t n = strlen(name);
    if (n < 4 || strcmp(name + n - 4, ".icd") != 0)
        return;
    l->count++;
    if (l->len < l->cap) {
        int w = snprintf(l->text + l->len, l->cap - l->len, "%s%s", l->count > 1 ? ", " : "", name);
        l->len = w < 0 ? l->cap : l->len + (size_t)w;
    }
}

/* Why the ICD loader found no device, as far as ffnrt can tell: which
 * drivers it knows of, and that one which fails to start is left out
 * without a word (PoCL where it cannot make its kernel cache: an app whose
 * HOME is read-only, a service, a sandbox). */
static ffnrt_status cl_no_device(ffnrt_error *err)
{
    char dir[256], names[160] = "";
    icd_names l = {names, sizeof names, 0, 0};
    const char *where = ffnrt_opencl_vendors_dir(dir, sizeof dir);
    if (!where || ffnrt_dir_each(where, add_icd_name, &l) != 0)
        l.count = -1;
    if (l.count == 0)
        return ffnrt_fail(err, FFNRT_ERROR_BACKEND_UNAVAILABLE,
                          "OpenCL: the loader found no device: no driver is registered in %s (a GPU vendor's "
                          "OpenCL driver; on the CPU, PoCL: Debian's pocl-opencl-icd)", where);
    char known[256] = "";
    if (l.count > 0)
        snprintf(known, sizeof known, " of the drivers in %s (%s%s)", where, names, l.len >= l.cap ? "..." : "");
    return ffnrt_fail(err, FFNRT_ERROR_BACKEND_UNAVAILABLE,
                      "OpenCL: the loader found no device: none%s started, and the loader leaves out one that fails "
                      "without a word (PoCL does where it cannot create its kernel cache: POCL_CACHE_DIR, else "
                      "XDG_CACHE_HOME or HOME, must lead to a folder it can write; POCL_DEBUG=1 says why)",
                      known);
}

static ffnrt_status cl_list_devices(ffnrt_device_info *infos, size_t cap, size_t *count, ffnrt_error *err)
{
    cl_device_id *devs;
    cl_uint n;
    ffnrt_status st = cl_all_devices(&devs, &n, err);
    if (st != FFNRT_OK)
        return st;
    if (n == 0) {
        free(devs);
        return cl_no_device(err);
    }
    for (cl_uint i = 0; i < n && i < cap; i++)
        cl_fill_info(devs[i], i, &infos[i], NULL);
    free(devs);
    *count = n;
    return FFNRT_OK;
}

/* -------------------------------------------------------------- device */

#define CL_MAX_BATCH_EVENTS 64

struct ffnrt_bdevice {
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    /* The open batch: profiling events and sub-buffers made for offsets. */
    cl_event first_event, last_event;
    cl_mem *temporaries;
    size_t temp_count, temp_capacity;
    /* Asynchronous batches not waited for: their (first, last) events. */
    cl_event *pending;
    size_t pending_count, pending_capacity;
};

static void cl_release_pending(ffnrt_bdevice *dev);

struct ffnrt_bbuffer {
    cl_mem mem;
};

struct ffnrt_bkernel {
    cl_program program;
    cl_kernel kernel;
    uint32_t buffer_count, params_size, workgroup_size;
};

static void cl_close(ffnrt_bdevice *dev)
{
    if (!dev)
        return;
    cl_release_pending(dev);
    if (dev->queue)
        cl.clReleaseCommandQueue(dev->queue);
    if (dev->context)
        cl.clReleaseContext(dev->context);
    free(dev->temporaries);
    free(dev);
}

static ffnrt_status cl_open(uint32_t index, const ffnrt_open_options *opts, ffnrt_bdevice **out,
                            ffnrt_device_info *info, ffnrt_limits *limits, ffnrt_error *err)
{
    (void)opts; /* validation is a Vulkan feature */
    cl_device_id *devs;
    cl_uint n;
    ffnrt_status st = cl_all_devices(&devs, &n, err);
    if (st != FFNRT_OK)
        return st;
    if (index >= n) {
        free(devs);
        return ffnrt_fail(err, FFNRT_ERROR_DEVICE_NOT_FOUND, "OpenCL: device %u requested, %u found", index, n);
    }
    ffnrt_bdevice *dev = calloc(1, sizeof *dev);
    if (!dev) {
        free(devs);
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "OpenCL: out of host memory");
    }
    dev->device = devs[index];
    free(devs);
    cl_fill_info(dev->device, index, info, limits);
    cl_int rc;
    dev->context = cl.clCreateContext(NULL, 1, &dev->device, NULL, NULL, &rc);
    if (rc != CL_SUCCESS) {
        cl_close(dev);
        return cl_fail(err, rc, "clCreateContext");
    }
    dev->queue = cl.clCreateCommandQueue(dev->context, dev->device, CL_QUEUE_PROFILING_ENABLE, &rc);
    if (rc != CL_SUCCESS) {
        cl_close(dev);
        return cl_fail(err, rc, "clCreateCommandQueue");
    }
    *out = dev;
    return FFNRT_OK;
}

static ffnrt_status cl_buffer_create(ffnrt_bdevice *dev, uint64_t bytes, ffnrt_bbuffer **out, ffnrt_error *err)
{
    ffnrt_bbuffer *buf = calloc(1, sizeof *buf);
    if (!buf)
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "OpenCL: out of host memory");
    cl_int rc;
    buf->mem = cl.clCreateBuffer(dev->context, CL_MEM_READ_WRITE, bytes, NULL, &rc);
    if (rc != CL_SUCCESS) {
        free(buf);
        return cl_fail(err, rc, "clCreateBuffer");
    }
    *out = buf;
    return FFNRT_OK;
}

static void cl_buffer_destroy(ffnrt_bdevice *dev, ffnrt_bbuffer *buf)
{
    (void)dev;
    if (!buf)
        return;
    cl.clReleaseMemObject(buf->mem);
    free(buf);
}

static ffnrt_status cl_buffer_write(ffnrt_bdevice *dev, ffnrt_bbuffer *buf, uint64_t offset,
                                    const void *src, uint64_t bytes, ffnrt_error *err)
{
    cl_int rc = cl.clEnqueueWriteBuffer(dev->queue, buf->mem, CL_TRUE, offset, bytes, src, 0, NULL, NULL);
    return rc == CL_SUCCESS ? FFNRT_OK : cl_fail(err, rc, "clEnqueueWriteBuffer");
}

static ffnrt_status cl_buffer_read(ffnrt_bdevice *dev, ffnrt_bbuffer *buf, uint64_t offset, void *dst,
                                   uint64_t bytes, ffnrt_error *err)
{
    cl_int rc = cl.clEnqueueReadBuffer(dev->queue, buf->mem, CL_TRUE, offset, bytes, dst, 0, NULL, NULL);
    return rc == CL_SUCCESS ? FFNRT_OK : cl_fail(err, rc, "clEnqueueReadBuffer");
}

/* ------------------------------------------------------------- kernels */

static void cl_kernel_destroy(ffnrt_bdevice *dev, ffnrt_bkernel *k)
{
    (void)dev;
    if (!k)
        return;
    if (k->kernel)
        cl.clReleaseKernel(k->kernel);
    if (k->program)
        cl.clReleaseProgram(k->program);
    free(k);
}

static char *cl_build_log(ffnrt_bdevice *dev, cl_program program)
{
    size_t size = 0;
    cl.clGetProgramBuildInfo(program, dev->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size);
    char *log = malloc(size + 1);
    if (!log)
        return NULL;
    if (cl.clGetProgramBuildInfo(program, dev->device, CL_PROGRAM_BUILD_LOG, size, log, NULL) != CL_SUCCESS)
        size = 0;
    log[size] = '\0';
    return log;
}

/* No fast-math options: the kernels' accuracy relies on IEEE rounding
 * and on subnormals where the device keeps them. Part of the cache key. */
static const char cl_build_options[] = "-cl-std=CL1.2";

/* A program from a cached binary; 0 (and the cache told why) when the
 * driver refuses it, so the caller builds from source. clBuildProgram is
 * required for binaries too. */
static int cl_program_from_binary(ffnrt_bdevice *dev, const ffnrt_kernel_source *src, ffnrt_bkernel *k)
{
    const ffnrt_kernel_cache *c = src->cache;
    size_t len = 0;
    unsigned char *bin = c->load(c->user, FFNRT_CACHE_CL_BINARY, &len);
    if (!bin)
        return 0;
    char why[96] = "";
    cl_int rc, status = CL_SUCCESS;
    const unsigned char *bins[1] = {bin};
    cl_program p = cl.clCreateProgramWithBinary(dev->context, 1, &dev->device, &len, bins, &status, &rc);
    if (rc != CL_SUCCESS || status != CL_SUCCESS) {
        snprintf(why, sizeof why, "clCreateProgramWithBinary refused it (%d, %d)", (int)rc, (int)status);
        p = NULL;
    } else if ((rc = cl.clBuildProgram(p, 1, &dev->device, cl_build_options, NULL, NULL)) != CL_SUCCESS) {
        snprintf(why, sizeof why, "clBuildProgram of the binary failed (%d)", (int)rc);
    } else {
        k->kernel = cl.clCreateKernel(p, src->entry, &rc);
        if (rc != CL_SUCCESS) {
            k->kernel = NULL;
            snprintf(why, sizeof why, "clCreateKernel on the binary failed (%d)", (int)rc);
        }
    }
    free(bin);
    if (why[0]) {
        if (p)
            cl.clReleaseProgram(p);
        c->unusable(c->user, FFNRT_CACHE_CL_BINARY, why);
        return 0;
    }
    k->program = p;
    return 1;
}

/* Stores the program's binary for the next process; failures only lose
 * the cache entry. */
static void cl_store_binary(ffnrt_bdevice *dev, const ffnrt_kernel_source *src, cl_program p)
{
    (void)dev;
    size_t size = 0;
    if (cl.clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS || size == 0)
        return;
    unsigned char *bin = malloc(size);
    unsigned char *bins[1] = {bin};
    if (bin && cl.clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS)
        src->cache->store(src->cache->user, FFNRT_CACHE_CL_BINARY, bin, size);
    free(bin);
}

static ffnrt_status cl_kernel_build(ffnrt_bdevice *dev, const ffnrt_kernel_source *src, ffnrt_bkernel **out,
                                    char **log, ffnrt_error *err)
{
    ffnrt_bkernel *k = calloc(1, sizeof *k);
    if (!k)
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "OpenCL: out of host memory");
    k->buffer_count = src->buffer_count;
    k->params_size = src->params_size;
    k->workgroup_size = src->workgroup_size;
    if (src->cache && src->cache->driver_binary && cl_program_from_binary(dev, src, k)) {
        *out = k;
        return FFNRT_OK;
    }
    cl_int rc;
    const char *text = src->source;
    k->program = cl.clCreateProgramWithSource(dev->context, 1, (const char **)&text, NULL, &rc);
    if (rc != CL_SUCCESS) {
        cl_kernel_destroy(dev, k);
        return cl_fail(err, rc, "clCreateProgramWithSource");
    }
    rc = cl.clBuildProgram(k->program, 1, &dev->device, cl_build_options, NULL, NULL);
    if (rc != CL_SUCCESS) {
        *log = cl_build_log(dev, k->program);
        cl_kernel_destroy(dev, k);
        return ffnrt_fail(err, FFNRT_ERROR_COMPILE_FAILED,
                          "OpenCL: building kernel %s failed (error %d); see ffnrt_context_build_log",
                          src->entry, (int)rc);
    }
    k->kernel = cl.clCreateKernel(k->program, src->entry, &rc);
    if (rc != CL_SUCCESS) {
        cl_kernel_destroy(dev, k);
        return cl_fail(err, rc, "clCreateKernel");
    }
    if (src->cache && src->cache->driver_binary)
        cl_store_binary(dev, src, k->program);
    *out = k;
    return FFNRT_OK;
}

/* The platform (name and version) and the build options: what, beyond
 * the device's name and driver version, decides the binary. */
static void cl_cache_identity(ffnrt_bdevice *dev, char *buf, size_t cap)
{
    char name[256] = "", version[256] = "";
    cl_platform_id plat = NULL;
    if (cl.clGetDeviceInfo(dev->device, CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL) == CL_SUCCESS && plat) {
        cl.clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof name - 1, name, NULL);
        cl.clGetPlatformInfo(plat, CL_PLATFORM_VERSION, sizeof version - 1, version, NULL);
    }
    snprintf(buf, cap, "platform %s\nplatform version %s\noptions %s\npointer bits %zu\n", name, version,
             cl_build_options, sizeof(void *) * 8);
}

/* ------------------------------------------------------------ dispatch */

static void cl_release_batch(ffnrt_bdevice *dev)
{
    if (dev->first_event)
        cl.clReleaseEvent(dev->first_event);
    if (dev->last_event && dev->last_event != dev->first_event)
        cl.clReleaseEvent(dev->last_event);
    dev->first_event = dev->last_event = NULL;
    for (size_t i = 0; i < dev->temp_count; i++)
        cl.clReleaseMemObject(dev->temporaries[i]);
    dev->temp_count = 0;
}

static ffnrt_status cl_begin(ffnrt_bdevice *dev, ffnrt_error *err)
{
    (void)err;
    cl_release_batch(dev);
    return FFNRT_OK;
}

/* A binding at an offset becomes a sub-buffer kept until the batch ends. */
static ffnrt_status cl_binding_mem(ffnrt_bdevice *dev, const ffnrt_binding *b, cl_mem *out, ffnrt_error *err)
{
    if (b->offset == 0) {
        *out = b->buffer->mem;
        return FFNRT_OK;
    }
    if (dev->temp_count == dev->temp_capacity) {
        size_t cap = dev->temp_capacity ? dev->temp_capacity * 2 : 16;
        cl_mem *grown = realloc(dev->temporaries, cap * sizeof *grown);
        if (!grown)
            return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "OpenCL: out of host memory");
        dev->temporaries = grown;
        dev->temp_capacity = cap;
    }
    cl_buffer_region region = {b->offset, b->size};
    cl_int rc;
    cl_mem sub = cl.clCreateSubBuffer(b->buffer->mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &rc);
    if (rc != CL_SUCCESS)
        return cl_fail(err, rc, "clCreateSubBuffer");
    dev->temporaries[dev->temp_count++] = sub;
    *out = sub;
    return FFNRT_OK;
}

static ffnrt_status cl_dispatch(ffnrt_bdevice *dev, ffnrt_bkernel *k, const ffnrt_binding *bindings,
                                uint32_t binding_count, const void *params, const uint32_t groups[2],
                                ffnrt_error *err)
{
    if (binding_count != k->buffer_count)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "OpenCL: %u bindings for a kernel of %u",
                          binding_count, k->buffer_count);
    for (uint32_t i = 0; i < binding_count; i++) {
        cl_mem mem;
        ffnrt_status st = cl_binding_mem(dev, &bindings[i], &mem, err);
        if (st != FFNRT_OK)
            return st;
        cl_int rc = cl.clSetKernelArg(k->kernel, i, sizeof mem, &mem);
        if (rc != CL_SUCCESS)
            return cl_fail(err, rc, "clSetKernelArg");
    }
    cl_int rc = cl.clSetKernelArg(k->kernel, binding_count, k->params_size, params);
    if (rc != CL_SUCCESS)
        return cl_fail(err, rc, "clSetKernelArg(params)");
    size_t global[2] = {(size_t)groups[0] * k->workgroup_size, groups[1]};
    size_t local[2] = {k->workgroup_size, 1};
    cl_event ev = NULL;
    rc = cl.clEnqueueNDRangeKernel(dev->queue, k->kernel, 2, NULL, global, local, 0, NULL, &ev);
    if (rc != CL_SUCCESS)
        return cl_fail(err, rc, "clEnqueueNDRangeKernel");
    /* Only the batch's first and last events are kept, for its device time. */
    if (!dev->first_event) {
        dev->first_event = ev;
    } else {
        if (dev->last_event && dev->last_event != dev->first_event)
            cl.clReleaseEvent(dev->last_event);
    }
    dev->last_event = ev;
    return FFNRT_OK;
}

static ffnrt_status cl_submit(ffnrt_bdevice *dev, uint64_t *device_ns, ffnrt_error *err)
{
    cl_int rc = cl.clFinish(dev->queue);
    *device_ns = 0;
    if (rc == CL_SUCCESS && dev->first_event) {
        cl_ulong start = 0, end = 0;
        if (cl.clGetEventProfilingInfo(dev->first_event, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) ==
                CL_SUCCESS &&
            cl.clGetEventProfilingInfo(dev->last_event, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) ==
                CL_SUCCESS &&
            end > start)
            *device_ns = end - start;
    }
    cl_release_batch(dev);
    return rc == CL_SUCCESS ? FFNRT_OK : cl_fail(err, rc, "clFinish");
}

static ffnrt_status cl_submit_async(ffnrt_bdevice *dev, ffnrt_error *err);
static ffnrt_status cl_wait(ffnrt_bdevice *dev, uint64_t *device_ns, ffnrt_error *err);
static ffnrt_status cl_external_end(ffnrt_bdevice *dev, ffnrt_error *err);

const ffnrt_backend_ops *ffnrt_opencl_backend(void)
{
    static const ffnrt_backend_ops ops = {
        .kind = FFNRT_BACKEND_OPENCL,
        .name = "opencl",
        .prelude = "prelude_opencl.cl",
        .version_line = "",
        .fp16_feature = "cl_khr_fp16",
        .items_consecutive = 0, /* prelude_opencl.cl */
        .load = cl_load,
        .list_devices = cl_list_devices,
        .open = cl_open,
        .close = cl_close,
        .buffer_create = cl_buffer_create,
        .buffer_destroy = cl_buffer_destroy,
        .buffer_write = cl_buffer_write,
        .buffer_read = cl_buffer_read,
        .kernel_build = cl_kernel_build,
        .kernel_destroy = cl_kernel_destroy,
        .begin = cl_begin,
        .dispatch = cl_dispatch,
        .submit = cl_submit,
        .submit_async = cl_submit_async,
        .wait = cl_wait,
        .external_begin = cl_begin,
        .external_end = cl_external_end,
        .validation_messages = NULL,
        .cache_identity = cl_cache_identity,
    };
    return &ops;
}

/* ------------------------------------------------------------ interop */

static void cl_release_pending(ffnrt_bdevice *dev)
{
    for (size_t i = 0; i < dev->pending_count; i++)
        if (dev->pending[i] && (i % 2 == 0 || dev->pending[i] != dev->pending[i - 1]))
            cl.clReleaseEvent(dev->pending[i]);
    dev->pending_count = 0;
    free(dev->pending);
    dev->pending = NULL;
    dev->pending_capacity = 0;
}

/* Flushes the batch; its events are kept for the device time at cl_wait.
 * Sub-buffers may be released while kernels use them (OpenCL keeps them
 * until the commands finish). */
static ffnrt_status cl_submit_async(ffnrt_bdevice *dev, ffnrt_error *err)
{
    if (dev->first_event) {
        if (dev->pending_count + 2 > dev->pending_capacity) {
            size_t cap = dev->pending_capacity ? 2 * dev->pending_capacity : 16;
            cl_event *grown = realloc(dev->pending, cap * sizeof *grown);
            if (!grown) {
                cl_release_batch(dev);
                cl.clFlush(dev->queue);
                return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "OpenCL: out of host memory");
            }
            dev->pending = grown;
            dev->pending_capacity = cap;
        }
        dev->pending[dev->pending_count++] = dev->first_event;
        dev->pending[dev->pending_count++] = dev->last_event;
        dev->first_event = dev->last_event = NULL;
    }
    cl_release_batch(dev);
    cl_int rc = cl.clFlush(dev->queue);
    return rc == CL_SUCCESS ? FFNRT_OK : cl_fail(err, rc, "clFlush");
}

static ffnrt_status cl_wait(ffnrt_bdevice *dev, uint64_t *device_ns, ffnrt_error *err)
{
    *device_ns = 0;
    cl_int rc = cl.clFinish(dev->queue);
    for (size_t i = 0; rc == CL_SUCCESS && i + 1 < dev->pending_count; i += 2) {
        cl_ulong start = 0, end = 0;
        if (cl.clGetEventProfilingInfo(dev->pending[i], CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) ==
                CL_SUCCESS &&
            cl.clGetEventProfilingInfo(dev->pending[i + 1], CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) ==
                CL_SUCCESS &&
            end > start)
            *device_ns += end - start;
    }
    cl_release_pending(dev);
    return rc == CL_SUCCESS ? FFNRT_OK : cl_fail(err, rc, "clFinish");
}

static ffnrt_status cl_external_end(ffnrt_bdevice *dev, ffnrt_error *err)
{
    cl_release_batch(dev);
    cl_int rc = cl.clFlush(dev->queue);
    return rc == CL_SUCCESS ? FFNRT_OK : cl_fail(err, rc, "clFlush");
}

ffnrt_status ffnrt_cl_enqueue_begin(ffnrt_bdevice *dev, cl_uint n, const cl_event *wait_list, ffnrt_error *err)
{
    if (n == 0)
        return FFNRT_OK;
    /* On the in-order queue, everything after the marker waits for the list. */
    cl_int rc = cl.clEnqueueMarkerWithWaitList(dev->queue, n, wait_list, NULL);
    return rc == CL_SUCCESS ? FFNRT_OK : cl_fail(err, rc, "clEnqueueMarkerWithWaitList (the wait list)");
}

ffnrt_status ffnrt_cl_enqueue_end(ffnrt_bdevice *dev, cl_event *out_event, ffnrt_error *err)
{
    cl_int rc = CL_SUCCESS;
    if (out_event)
        rc = cl.clEnqueueMarkerWithWaitList(dev->queue, 0, NULL, out_event);
    if (rc != CL_SUCCESS)
        return cl_fail(err, rc, "clEnqueueMarkerWithWaitList (the out event)");
    rc = cl.clFlush(dev->queue);
    return rc == CL_SUCCESS ? FFNRT_OK : cl_fail(err, rc, "clFlush");
}

ffnrt_status ffnrt_cl_open_external(cl_context context, cl_device_id device, cl_command_queue queue,
                                    ffnrt_bdevice **out, ffnrt_device_info *info, ffnrt_limits *limits,
                                    ffnrt_error *err)
{
    static const char fn[] = "ffnrt_context_create_opencl";
    ffnrt_status st = cl_load(err);
    if (st != FFNRT_OK)
        return st;
    size_t size = 0;
    cl_int rc = cl.clGetContextInfo(context, CL_CONTEXT_DEVICES, 0, NULL, &size);
    if (rc != CL_SUCCESS)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: context is not a valid cl_context (error %d)", fn,
                          (int)rc);
    cl_device_id *devs = malloc(size ? size : 1);
    if (!devs)
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "OpenCL: out of host memory");
    int found = 0;
    if (cl.clGetContextInfo(context, CL_CONTEXT_DEVICES, size, devs, NULL) == CL_SUCCESS)
        for (size_t i = 0; i < size / sizeof *devs; i++)
            found |= devs[i] == device;
    free(devs);
    if (!found)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: device is not a device of the context", fn);
    cl_context qctx = NULL;
    cl_device_id qdev = NULL;
    cl_command_queue_properties props = 0;
    rc = cl.clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL);
    if (rc == CL_SUCCESS)
        rc = cl.clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof qdev, &qdev, NULL);
    if (rc == CL_SUCCESS)
        rc = cl.clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
    if (rc != CL_SUCCESS)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: queue is not a valid cl_command_queue (error %d)",
                          fn, (int)rc);
    if (qctx != context || qdev != device)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: queue belongs to another %s", fn,
                          qctx != context ? "context" : "device");
    if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
        return ffnrt_fail(err, FFNRT_ERROR_UNSUPPORTED,
                          "%s: the queue is out of order; ffnrt orders its kernels with an in-order queue", fn);
    /* ffnrt's index of the device, where its own enumeration finds it. */
    cl_device_id *all;
    cl_uint n = 0;
    uint32_t index = 0;
    if (cl_all_devices(&all, &n, err) == FFNRT_OK) {
        for (cl_uint i = 0; i < n; i++)
            if (all[i] == device)
                index = i;
        free(all);
    }
    ffnrt_bdevice *dev = calloc(1, sizeof *dev);
    if (!dev)
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "OpenCL: out of host memory");
    cl_fill_info(device, index, info, limits);
    /* Retained, not owned: cl_close releases exactly these references. */
    cl.clRetainContext(context);
    cl.clRetainCommandQueue(queue);
    dev->device = device;
    dev->context = context;
    dev->queue = queue;
    *out = dev;
    return FFNRT_OK;
}

ffnrt_status ffnrt_cl_buffer_wrap(ffnrt_bdevice *dev, cl_mem mem, uint64_t offset, uint64_t need,
                                  ffnrt_bbuffer **out, uint64_t *origin, cl_mem *memory, ffnrt_error *err)
{
    static const char fn[] = "ffnrt_tensor_wrap_opencl_buffer";
    cl_context mctx = NULL;
    cl_mem_object_type type = 0;
    cl_mem_flags flags = 0;
    size_t size = 0, sub_offset = 0;
    cl_mem parent = NULL;
    cl_int rc = cl.clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof mctx, &mctx, NULL);
    if (rc == CL_SUCCESS)
        rc = cl.clGetMemObjectInfo(mem, CL_MEM_TYPE, sizeof type, &type, NULL);
    if (rc == CL_SUCCESS)
        rc = cl.clGetMemObjectInfo(mem, CL_MEM_FLAGS, sizeof flags, &flags, NULL);
    if (rc == CL_SUCCESS)
        rc = cl.clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (rc == CL_SUCCESS)
        rc = cl.clGetMemObjectInfo(mem, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL);
    if (rc == CL_SUCCESS && parent)
        rc = cl.clGetMemObjectInfo(mem, CL_MEM_OFFSET, sizeof sub_offset, &sub_offset, NULL);
    if (rc != CL_SUCCESS)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: buffer is not a valid cl_mem (error %d)", fn,
                          (int)rc);
    if (mctx != dev->context)
        return ffnrt_fail(err, FFNRT_ERROR_WRONG_CONTEXT, "%s: buffer belongs to another cl_context", fn);
    if (type != CL_MEM_OBJECT_BUFFER)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: the cl_mem is an image, not a buffer", fn);
    if (flags & (CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY))
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                          "%s: the buffer is %s; ffnrt needs CL_MEM_READ_WRITE", fn,
                          flags & CL_MEM_READ_ONLY ? "CL_MEM_READ_ONLY" : "CL_MEM_WRITE_ONLY");
    if (offset > size || need > size - offset)
        return ffnrt_fail(err, FFNRT_ERROR_SHAPE_MISMATCH,
                          "%s: the tensor needs %llu bytes from offset %llu, the buffer holds %zu", fn,
                          (unsigned long long)need, (unsigned long long)offset, size);
    ffnrt_bbuffer *buf = calloc(1, sizeof *buf);
    if (!buf)
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "OpenCL: out of host memory");
    /* ffnrt binds sub-buffers at offsets, and OpenCL has no sub-buffer of a
     * sub-buffer: bind the parent at the sub-buffer's origin. */
    buf->mem = parent ? parent : mem;
    cl.clRetainMemObject(buf->mem); /* released by cl_buffer_destroy */
    *origin = parent ? sub_offset : 0;
    *memory = buf->mem;
    *out = buf;
    return FFNRT_OK;
}
