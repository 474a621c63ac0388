/* Vulkan backend: every physical device with a compute queue. GLSL is
 * compiled in process (glsl_compiler.c) and run as compute pipelines. */
#include "backend/backend.h"
#include "backend/vulkan/glsl_compiler.h"
#include "backend/vulkan/vk_api.h"
#include "backend/vulkan/vk_interop.h"
#include "platform/platform.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SETS_PER_POOL 64u
/* Storage buffers a kernel binds, at most: the gated, biased, block-format
 * product with statistics takes 9; a device may allow fewer a stage. */
#define MAX_BINDINGS 12u
#define STAGING_BYTES (16u << 20)
/* An asynchronous batch is submitted at once when the device is idle and
 * otherwise kept open for the next calls, up to this many dispatches. */
#define OPEN_BATCH_DISPATCHES 256u

/* Where the loader found no driver, or none that ffnrt can use. */
#define VK_LOADER_DEBUG_HINT "VK_LOADER_DEBUG=driver shows each driver the loader tried and why it was left out"

static ffnrt_once vk_once = FFNRT_ONCE_INIT;
static VkResult vk_load_result = VK_ERROR_INITIALIZATION_FAILED;
static void vk_load_once(void) { vk_load_result = volkInitialize(); }

static ffnrt_status vk_load(ffnrt_error *err)
{
    ffnrt_call_once(&vk_once, vk_load_once);
    if (vk_load_result != VK_SUCCESS)
        return ffnrt_fail(err, FFNRT_ERROR_BACKEND_UNAVAILABLE, "Vulkan: the loader is not installed (libvulkan.so.1; "
                                                                 "vulkan-1.dll on Windows, libvulkan.1.dylib on macOS)");
    if (volkGetInstanceVersion() < VK_API_VERSION_1_1)
        return ffnrt_fail(err, FFNRT_ERROR_BACKEND_UNAVAILABLE, "Vulkan loader older than 1.1");
    return FFNRT_OK;
}

static ffnrt_status vk_fail(ffnrt_error *err, VkResult rc, const char *what)
{
    ffnrt_status st = FFNRT_ERROR_DEVICE_FAILURE;
    if (rc == VK_ERROR_OUT_OF_HOST_MEMORY)
        st = FFNRT_ERROR_OUT_OF_HOST_MEMORY;
    else if (rc == VK_ERROR_OUT_OF_DEVICE_MEMORY)
        st = FFNRT_ERROR_OUT_OF_DEVICE_MEMORY;
    return ffnrt_fail(err, st, "Vulkan: %s failed with VkResult %d%s", what, (int)rc,
                      rc == VK_ERROR_DEVICE_LOST ? " (device lost)" : "");
}

/* ------------------------------------------------------------ instance */

typedef struct vk_instance {
    VkInstance instance;
    ffnrt_vk_instance_api api;
    VkDebugUtilsMessengerEXT messenger;
    atomic_uint_fast64_t *message_count; /* where validation messages are counted */
} vk_instance;

static VKAPI_ATTR VkBool32 VKAPI_CALL vk_debug_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                        VkDebugUtilsMessageTypeFlagsEXT types,
                                                        const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                        void *user)
{
    (void)types;
    atomic_uint_fast64_t *count = user;
    if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        atomic_fetch_add(count, 1);
        fprintf(stderr, "ffnrt: Vulkan validation: %s\n", data->pMessage);
    }
    return VK_FALSE;
}

static int instance_layer_present(const char *name)
{
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, NULL);
    VkLayerProperties *props = calloc(n ? n : 1, sizeof *props);
    int found = 0;
    if (props && vkEnumerateInstanceLayerProperties(&n, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = strcmp(props[i].layerName, name) == 0;
    free(props);
    return found;
}

static int instance_extension_present(const char *name)
{
    uint32_t n = 0;
    vkEnumerateInstanceExtensionProperties(NULL, &n, NULL);
    VkExtensionProperties *props = calloc(n ? n : 1, sizeof *props);
    int found = 0;
    if (props && vkEnumerateInstanceExtensionProperties(NULL, &n, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = strcmp(props[i].extensionName, name) == 0;
    free(props);
    return found;
}

static void vk_instance_destroy(vk_instance *vi)
{
    if (!vi->instance)
        return;
    if (vi->messenger)
        vi->api.vkDestroyDebugUtilsMessengerEXT(vi->instance, vi->messenger, NULL);
    vi->api.vkDestroyInstance(vi->instance, NULL);
    vi->instance = VK_NULL_HANDLE;
}

static ffnrt_status vk_instance_create(vk_instance *vi, int validation, atomic_uint_fast64_t *count,
                                       ffnrt_error *err)
{
    static const char layer[] = "VK_LAYER_KHRONOS_validation";
    memset(vi, 0, sizeof *vi);
    vi->message_count = count;
    if (validation && !instance_layer_present(layer))
        return ffnrt_fail(err, FFNRT_ERROR_UNSUPPORTED,
                          "Vulkan: validation was asked for but %s is not installed", layer);
    const char *exts[2];
    uint32_t n_ext = 0;
    VkInstanceCreateFlags flags = 0;
    if (validation)
        exts[n_ext++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    /* MoltenVK's devices are listed only with portability enumeration. */
    if (instance_extension_present(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        exts[n_ext++] = VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME;
        flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
    uint32_t version = volkGetInstanceVersion();
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "ffnrt",
        .pEngineName = "ffnrt",
        .apiVersion = version < VK_API_VERSION_1_3 ? version : VK_API_VERSION_1_3,
    };
    VkDebugUtilsMessengerCreateInfoEXT dbg = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
        .pfnUserCallback = vk_debug_callback,
        .pUserData = count,
    };
    const char *layers[] = {layer};
    VkInstanceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = validation ? &dbg : NULL, /* also catches messages of instance creation */
        .flags = flags,
        .pApplicationInfo = &app,
        .enabledLayerCount = validation ? 1 : 0,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = n_ext,
        .ppEnabledExtensionNames = exts,
    };
    VkResult rc = vkCreateInstance(&ci, NULL, &vi->instance);
    if (rc != VK_SUCCESS) {
        vi->instance = VK_NULL_HANDLE;
        if (rc == VK_ERROR_INCOMPATIBLE_DRIVER)
            return ffnrt_fail(err, FFNRT_ERROR_BACKEND_UNAVAILABLE,
                              "Vulkan: no compatible driver (" VK_LOADER_DEBUG_HINT ")");
        return vk_fail(err, rc, "vkCreateInstance");
    }
#define FFNRT_VK_LOAD(name) vi->api.name = (PFN_##name)vkGetInstanceProcAddr(vi->instance, #name);
    FFNRT_VK_INSTANCE_FUNCTIONS(FFNRT_VK_LOAD)
#undef FFNRT_VK_LOAD
    if (!vi->api.vkDestroyInstance || !vi->api.vkCreateDevice || !vi->api.vkGetPhysicalDeviceProperties2) {
        if (vi->api.vkDestroyInstance)
            vi->api.vkDestroyInstance(vi->instance, NULL);
        vi->instance = VK_NULL_HANDLE;
        return ffnrt_fail(err, FFNRT_ERROR_BACKEND_UNAVAILABLE, "Vulkan: the loader lacks 1.1 entry points");
    }
    if (validation) {
        vi->api.vkCreateDebugUtilsMessengerEXT = (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
            vi->instance, "vkCreateDebugUtilsMessengerEXT");
        vi->api.vkDestroyDebugUtilsMessengerEXT = (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
            vi->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (vi->api.vkCreateDebugUtilsMessengerEXT && vi->api.vkDestroyDebugUtilsMessengerEXT)
            vi->api.vkCreateDebugUtilsMessengerEXT(vi->instance, &dbg, NULL, &vi->messenger);
    }
    return FFNRT_OK;
}

/* Physical devices that have a compute queue, in the loader's order. */
static ffnrt_status vk_compute_devices(vk_instance *vi, VkPhysicalDevice **out, uint32_t *count,
                                       ffnrt_error *err)
{
    uint32_t n = 0;
    *out = NULL;
    *count = 0;
    VkResult rc = vi->api.vkEnumeratePhysicalDevices(vi->instance, &n, NULL);
    if (rc != VK_SUCCESS)
        return vk_fail(err, rc, "vkEnumeratePhysicalDevices");
    VkPhysicalDevice *all = calloc(n ? n : 1, sizeof *all);
    if (!all)
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "Vulkan: out of host memory");
    vi->api.vkEnumeratePhysicalDevices(vi->instance, &n, all);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t nq = 0;
        vi->api.vkGetPhysicalDeviceQueueFamilyProperties(all[i], &nq, NULL);
        VkQueueFamilyProperties q[16];
        nq = nq > 16 ? 16 : nq;
        vi->api.vkGetPhysicalDeviceQueueFamilyProperties(all[i], &nq, q);
        int compute = 0;
        for (uint32_t j = 0; j < nq; j++)
            compute |= (q[j].queueFlags & VK_QUEUE_COMPUTE_BIT) != 0;
        VkPhysicalDeviceProperties props;
        vi->api.vkGetPhysicalDeviceProperties(all[i], &props);
        if (compute && props.apiVersion >= VK_API_VERSION_1_1)
            all[kept++] = all[i];
    }
    *out = all;
    *count = kept;
    return FFNRT_OK;
}

static const char *vendor_name(uint32_t id)
{
    switch (id) {
    case 0x10DE: return "NVIDIA";
    case 0x1002: return "AMD";
    case 0x8086: return "Intel";
    case 0x13B5: return "ARM";
    case 0x5143: return "Qualcomm";
    case 0x106B: return "Apple";
    case 0x1010: return "Imagination";
    case 0x10005: return "Mesa";
    }
    return "unknown";
}

typedef struct vk_device_props {
    VkPhysicalDeviceProperties2 props;
    VkPhysicalDeviceSubgroupProperties subgroup;
    VkPhysicalDeviceMaintenance3Properties maint3;
    VkPhysicalDeviceDriverProperties driver;
    VkPhysicalDeviceFloatControlsProperties float_controls;
    VkPhysicalDeviceIDProperties id;
    VkPhysicalDevicePCIBusInfoPropertiesEXT pci;
    int has_pci; /* VK_EXT_pci_bus_info is supported, pci was filled */
    VkPhysicalDeviceFeatures2 features;
    VkPhysicalDevice16BitStorageFeatures storage16;
    VkPhysicalDeviceShaderFloat16Int8Features float16;
    VkPhysicalDeviceShaderIntegerDotProductFeatures int_dot;
    VkPhysicalDeviceShaderIntegerDotProductProperties int_dot_props;
    int has_12;      /* the 1.2 structures were filled */
    int has_int_dot; /* the integer dot product structures were filled (1.3, or the KHR extension) */
} vk_device_props;

static void vk_query(vk_instance *vi, VkPhysicalDevice pd, vk_device_props *p)
{
    memset(p, 0, sizeof *p);
    VkPhysicalDeviceProperties base;
    vi->api.vkGetPhysicalDeviceProperties(pd, &base);
    p->has_12 = base.apiVersion >= VK_API_VERSION_1_2;
    p->subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
    p->maint3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
    p->maint3.pNext = &p->subgroup;
    p->id.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES;
    p->subgroup.pNext = &p->id;
    p->pci.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT;
    uint32_t n_ext = 0;
    if (vi->api.vkEnumerateDeviceExtensionProperties(pd, NULL, &n_ext, NULL) == VK_SUCCESS && n_ext) {
        VkExtensionProperties *ext = calloc(n_ext, sizeof *ext);
        if (ext && vi->api.vkEnumerateDeviceExtensionProperties(pd, NULL, &n_ext, ext) == VK_SUCCESS)
            for (uint32_t i = 0; i < n_ext; i++) {
                p->has_pci |= strcmp(ext[i].extensionName, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME) == 0;
                p->has_int_dot |= strcmp(ext[i].extensionName, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME) == 0;
            }
        free(ext);
    }
    if (p->has_pci)
        p->id.pNext = &p->pci;
    p->driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
    p->float_controls.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES;
    p->props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    /* Core in 1.3, where the instance asked for 1.3 too. */
    p->has_int_dot = p->has_int_dot || (base.apiVersion >= VK_API_VERSION_1_3 &&
                                         volkGetInstanceVersion() >= VK_API_VERSION_1_3);
    p->int_dot_props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES;
    if (p->has_12) {
        p->float_controls.pNext = &p->maint3;
        p->driver.pNext = &p->float_controls;
        p->props.pNext = &p->driver;
    } else {
        p->props.pNext = &p->maint3;
    }
    if (p->has_int_dot) {
        p->int_dot_props.pNext = p->props.pNext;
        p->props.pNext = &p->int_dot_props;
    }
    vi->api.vkGetPhysicalDeviceProperties2(pd, &p->props);
    p->storage16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
    p->float16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
    p->features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    p->features.pNext = &p->storage16;
    if (p->has_12)
        p->storage16.pNext = &p->float16;
    p->int_dot.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
    if (p->has_int_dot) {
        p->int_dot.pNext = p->features.pNext;
        p->features.pNext = &p->int_dot;
    }
    vi->api.vkGetPhysicalDeviceFeatures2(pd, &p->features);
}

static void vk_fill_info(vk_instance *vi, VkPhysicalDevice pd, uint32_t index, ffnrt_device_info *info,
                         ffnrt_limits *lim)
{
    vk_device_props q;
    vk_query(vi, pd, &q);
    const VkPhysicalDeviceProperties *pr = &q.props.properties;
    const VkPhysicalDeviceLimits *l = &pr->limits;
    memset(info, 0, sizeof *info);
    info->backend = FFNRT_BACKEND_VULKAN;
    info->index = index;
    snprintf(info->name, sizeof info->name, "%s", pr->deviceName);
    snprintf(info->vendor, sizeof info->vendor, "%s", vendor_name(pr->vendorID));
    info->vendor_id = pr->vendorID;
    info->device_id = pr->deviceID;
    switch (pr->deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: info->type = FFNRT_DEVICE_TYPE_DISCRETE_GPU; break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: info->type = FFNRT_DEVICE_TYPE_INTEGRATED_GPU; break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: info->type = FFNRT_DEVICE_TYPE_VIRTUAL_GPU; break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: info->type = FFNRT_DEVICE_TYPE_CPU; break;
    default: info->type = FFNRT_DEVICE_TYPE_OTHER; break;
    }
    if (q.has_12)
        snprintf(info->driver_version, sizeof info->driver_version, "%.40s %.60s (0x%x)", q.driver.driverName,
                 q.driver.driverInfo, pr->driverVersion);
    else
        snprintf(info->driver_version, sizeof info->driver_version, "0x%x", pr->driverVersion);
    snprintf(info->api_version, sizeof info->api_version, "Vulkan %u.%u.%u", VK_API_VERSION_MAJOR(pr->apiVersion),
             VK_API_VERSION_MINOR(pr->apiVersion), VK_API_VERSION_PATCH(pr->apiVersion));
    uint32_t wg = l->maxComputeWorkGroupInvocations;
    info->max_workgroup_size = wg < l->maxComputeWorkGroupSize[0] ? wg : l->maxComputeWorkGroupSize[0];
    for (int i = 0; i < 3; i++)
        info->max_workgroup_count[i] = l->maxComputeWorkGroupCount[i];
    info->shared_memory_size = l->maxComputeSharedMemorySize;
    /* MoltenVK on Apple M1 reports 0 (MoltenVK#1245): fall back to 1 GiB,
     * which Metal buffers allow everywhere. */
    info->max_buffer_range = l->maxStorageBufferRange ? l->maxStorageBufferRange : (1u << 30);
    info->max_allocation = q.maint3.maxMemoryAllocationSize;
    VkPhysicalDeviceMemoryProperties mem;
    vi->api.vkGetPhysicalDeviceMemoryProperties(pd, &mem);
    for (uint32_t h = 0; h < mem.memoryHeapCount; h++)
        if ((mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) && mem.memoryHeaps[h].size > info->memory_size)
            info->memory_size = mem.memoryHeaps[h].size;
    if (info->max_allocation == 0 || info->max_allocation > info->memory_size)
        info->max_allocation = info->memory_size;
    info->subgroup_size = q.subgroup.subgroupSize;
    info->fp16_arithmetic = q.has_12 && q.float16.shaderFloat16;
    info->storage_16bit = q.storage16.storageBuffer16BitAccess != 0;
    info->int_dot_packed = !q.has_int_dot || !q.int_dot.shaderIntegerDotProduct         ? 0
                           : q.int_dot_props.integerDotProduct4x8BitPackedSignedAccelerated ? 2
                                                                                           : 1;
    info->denormals_preserved = q.has_12 && q.float_controls.shaderDenormPreserveFloat32 ? 1 : -1;
    memcpy(info->uuid, q.id.deviceUUID, sizeof info->uuid);
    info->has_uuid = 1; /* core since Vulkan 1.1, which ffnrt requires */
    if (q.has_pci) {
        info->pci_domain = q.pci.pciDomain;
        info->pci_bus = q.pci.pciBus;
        info->pci_device = q.pci.pciDevice;
        info->pci_function = q.pci.pciFunction;
        info->has_pci_address = 1;
    }
    if (lim) {
        lim->max_buffer_range = info->max_buffer_range;
        lim->max_allocation = info->max_allocation;
        lim->buffer_offset_alignment = l->minStorageBufferOffsetAlignment ? l->minStorageBufferOffsetAlignment : 4;
        lim->max_workgroup_size = info->max_workgroup_size;
        for (int i = 0; i < 3; i++)
            lim->max_workgroup_count[i] = info->max_workgroup_count[i];
        lim->int64_words = q.features.features.shaderInt64 != 0;
        uint32_t stage = l->maxPerStageDescriptorStorageBuffers;
        lim->max_bindings = stage && stage < MAX_BINDINGS ? stage : MAX_BINDINGS;
    }
}

static ffnrt_status vk_list_devices(ffnrt_device_info *infos, size_t cap, size_t *count, ffnrt_error *err)
{
    vk_instance vi;
    atomic_uint_fast64_t unused = 0;
    ffnrt_status st = vk_instance_create(&vi, 0, &unused, err);
    if (st != FFNRT_OK)
        return st;
    VkPhysicalDevice *pds;
    uint32_t n;
    st = vk_compute_devices(&vi, &pds, &n, err);
    if (st == FFNRT_OK && n == 0) {
        free(pds);
        st = ffnrt_fail(err, FFNRT_ERROR_BACKEND_UNAVAILABLE,
                        "Vulkan: the loader found no device with a compute queue and Vulkan 1.1 (" VK_LOADER_DEBUG_HINT
                        ")");
    } else if (st == FFNRT_OK) {
        for (uint32_t i = 0; i < n && i < cap; i++)
            vk_fill_info(&vi, pds[i], i, &infos[i], NULL);
        *count = n;
        free(pds);
    }
    vk_instance_destroy(&vi);
    return st;
}

/* -------------------------------------------------------------- device */

struct ffnrt_bbuffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    void *mapped; /* non-NULL when the host writes the buffer directly */
    uint64_t size;
    int wrapped; /* the app's buffer (ffnrt_tensor_wrap_vulkan_buffer): never destroyed here */
    struct ffnrt_bbuffer *next_kept; /* in dev->kept_buffers */
};

struct ffnrt_bkernel {
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    uint32_t buffer_count, params_size;
    struct ffnrt_bkernel *next_kept; /* in dev->kept_kernels */
};

/* A command buffer and what its batch uses. Two take turns: while one
 * batch runs, the next calls are recorded into the other (asynchronous
 * mode), so each submission carries as many calls as the device's
 * latency lets in, not one (lavapipe takes 0.2-0.3 ms a submission). */
typedef struct vk_slot {
    VkCommandBuffer cmd;
    VkFence fence;
    VkDescriptorPool *pools; /* grown when a batch needs more sets */
    uint32_t pool_count, pool_used;
    /* Destroyed while the batch was being recorded: freed once it ends. */
    struct ffnrt_bbuffer *garbage_buffers;
    struct ffnrt_bkernel *garbage_kernels;
} vk_slot;

/* The recording slot's state: nothing recorded, an op recording, or the
 * recorded calls of asynchronous ops waiting for their submission. */
typedef enum vk_rec_state { VK_REC_IDLE, VK_REC_ACTIVE, VK_REC_OPEN } vk_rec_state;

struct ffnrt_bdevice {
    vk_instance vi;
    int force_staging; /* ffnrt_open_options.staging: transfers through staging even where mapped in place */
    atomic_uint_fast64_t validation_messages;
    VkPhysicalDevice physical;
    VkPhysicalDeviceMemoryProperties memory;
    ffnrt_vk_device_api api;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    VkCommandPool command_pool;
    vk_slot slots[2];
    uint32_t rec;            /* the slot ffnrt records into */
    uint32_t flight;         /* the slot of the batch in flight, while pending */
    vk_rec_state rec_state;
    uint32_t open_dispatches; /* dispatches recorded into an open batch */
    VkQueryPool timestamps; /* VK_NULL_HANDLE when the queue has none; two a slot */
    double timestamp_period;
    uint64_t timestamp_mask;
    uint32_t max_workgroup_size;
    /* One pipeline cache per device, loaded from and saved to the disk
     * cache by the core (driver_cache_import / _export). */
    VkPipelineCache pipeline_cache;
    size_t pipeline_cache_size; /* bytes when imported or last exported */
    VkPhysicalDeviceIDProperties ids;
    VkPhysicalDeviceProperties props;
    int direct_mapping; /* buffers live in host-visible memory (CPU, UMA) */
    uint32_t direct_type, device_type, staging_type;
    ffnrt_bbuffer *staging;
    /* Interop (the end of this file). */
    int external;             /* instance, device and queue are the app's: never destroyed here */
    int pending;              /* a batch (slots[flight]) was submitted and not waited for */
    uint64_t pending_ns;      /* device time of finished asynchronous batches, until wait */
    VkCommandBuffer recording; /* the app's command buffer while it records ffnrt's dispatches */
    /* A wait for the fence gives up after timeout_ns. The batch may still
     * run then (stuck): slots[flight]'s fence is not reset, buffers and kernels
     * destroyed meanwhile are kept in these lists, and every use of the
     * queue fails until the fence signals (vk_unstick) or the device is
     * closed, which waits for it. */
    uint64_t timeout_ns;
    int stuck;
    struct ffnrt_bbuffer *kept_buffers;
    struct ffnrt_bkernel *kept_kernels;
    /* A new pipeline's first, empty dispatch (vk_warm_pipeline): its own
     * command buffer, fence and descriptor set over a small buffer, so it
     * can run while ffnrt's batch is being recorded. */
    VkCommandBuffer warm_cmd;
    VkFence warm_fence;
    VkDescriptorPool warm_pool;
    ffnrt_bbuffer *warm_buffer;
};

static ffnrt_status vk_finish_pending(ffnrt_bdevice *dev, ffnrt_error *err);
static ffnrt_status vk_wait_flight(ffnrt_bdevice *dev, ffnrt_error *err);
static void vk_free_kept(ffnrt_bdevice *dev);
static ffnrt_status vk_submit_async(ffnrt_bdevice *dev, ffnrt_error *err);
static ffnrt_status vk_wait_all(ffnrt_bdevice *dev, uint64_t *device_ns, ffnrt_error *err);
static ffnrt_status vk_external_begin(ffnrt_bdevice *dev, ffnrt_error *err);
static ffnrt_status vk_external_end(ffnrt_bdevice *dev, ffnrt_error *err);
static void vk_free_buffer(ffnrt_bdevice *dev, ffnrt_bbuffer *buf);
static void vk_free_garbage(ffnrt_bdevice *dev, vk_slot *sl);

static void vk_close(ffnrt_bdevice *dev)
{
    if (!dev)
        return;
    if (dev->device) {
        const ffnrt_vk_device_api *a = &dev->api;
        /* The app's device may be busy with its own work on other threads:
         * wait only for ffnrt's, a stuck batch without a limit. */
        if (dev->external && dev->stuck)
            a->vkWaitForFences(dev->device, 1, &dev->slots[dev->flight].fence, VK_TRUE, UINT64_MAX);
        else if (dev->external || dev->rec_state == VK_REC_OPEN)
            vk_finish_pending(dev, NULL); /* an open batch runs too: the app asked for it */
        if (!dev->external)
            a->vkDeviceWaitIdle(dev->device);
        dev->stuck = 0;
        vk_free_kept(dev);
        vk_free_garbage(dev, &dev->slots[0]);
        vk_free_garbage(dev, &dev->slots[1]);
        if (dev->warm_buffer)
            vk_free_buffer(dev, dev->warm_buffer);
        if (dev->warm_pool)
            a->vkDestroyDescriptorPool(dev->device, dev->warm_pool, NULL);
        if (dev->warm_fence)
            a->vkDestroyFence(dev->device, dev->warm_fence, NULL);
        if (dev->staging) {
            a->vkDestroyBuffer(dev->device, dev->staging->buffer, NULL);
            a->vkFreeMemory(dev->device, dev->staging->memory, NULL);
            free(dev->staging);
        }
        for (uint32_t s = 0; s < 2; s++) {
            for (uint32_t i = 0; i < dev->slots[s].pool_count; i++)
                a->vkDestroyDescriptorPool(dev->device, dev->slots[s].pools[i], NULL);
            if (dev->slots[s].fence)
                a->vkDestroyFence(dev->device, dev->slots[s].fence, NULL);
        }
        if (dev->timestamps)
            a->vkDestroyQueryPool(dev->device, dev->timestamps, NULL);
        if (dev->command_pool)
            a->vkDestroyCommandPool(dev->device, dev->command_pool, NULL);
        if (dev->pipeline_cache)
            a->vkDestroyPipelineCache(dev->device, dev->pipeline_cache, NULL);
        if (!dev->external)
            a->vkDestroyDevice(dev->device, NULL);
    }
    free(dev->slots[0].pools);
    free(dev->slots[1].pools);
    if (!dev->external)
        vk_instance_destroy(&dev->vi);
    free(dev);
}

static int find_memory_type(const VkPhysicalDeviceMemoryProperties *m, VkMemoryPropertyFlags want, uint32_t *out)
{
    for (uint32_t i = 0; i < m->memoryTypeCount; i++)
        if ((m->memoryTypes[i].propertyFlags & want) == want) {
            *out = i;
            return 1;
        }
    return 0;
}

/* ffnrt's own objects on an open device (its own or the app's): command
 * pool and buffer, fence, timestamp queries and the memory types of its
 * tensors and staging. Staging is needed where buffers are not mapped in
 * place, and always on the app's device (its wrapped buffers are read and
 * written through it). The caller closes the device on failure. */
static ffnrt_status vk_device_objects(ffnrt_bdevice *dev, const ffnrt_device_info *info, uint32_t timestamp_bits,
                                      ffnrt_error *err)
{
    const ffnrt_vk_device_api *a = &dev->api;
    const ffnrt_vk_instance_api *ia = &dev->vi.api;
    VkCommandPoolCreateInfo cpci = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = dev->queue_family,
    };
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkResult rc;
    if ((rc = a->vkCreateCommandPool(dev->device, &cpci, NULL, &dev->command_pool)) != VK_SUCCESS ||
        (rc = a->vkCreateFence(dev->device, &fci, NULL, &dev->slots[0].fence)) != VK_SUCCESS ||
        (rc = a->vkCreateFence(dev->device, &fci, NULL, &dev->slots[1].fence)) != VK_SUCCESS)
        return vk_fail(err, rc, "creating the command pool");
    VkCommandBufferAllocateInfo cbai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = dev->command_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    if ((rc = a->vkAllocateCommandBuffers(dev->device, &cbai, &dev->slots[0].cmd)) != VK_SUCCESS ||
        (rc = a->vkAllocateCommandBuffers(dev->device, &cbai, &dev->slots[1].cmd)) != VK_SUCCESS ||
        (rc = a->vkAllocateCommandBuffers(dev->device, &cbai, &dev->warm_cmd)) != VK_SUCCESS)
        return vk_fail(err, rc, "vkAllocateCommandBuffers");
    VkDescriptorPoolSize warm_size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, MAX_BINDINGS};
    VkDescriptorPoolCreateInfo wpci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = 1,
        .poolSizeCount = 1,
        .pPoolSizes = &warm_size,
    };
    if ((rc = a->vkCreateFence(dev->device, &fci, NULL, &dev->warm_fence)) != VK_SUCCESS ||
        (rc = a->vkCreateDescriptorPool(dev->device, &wpci, NULL, &dev->warm_pool)) != VK_SUCCESS)
        return vk_fail(err, rc, "creating the pipelines' first-dispatch objects");
    if (timestamp_bits) {
        VkQueryPoolCreateInfo qpci = {
            .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            .queryType = VK_QUERY_TYPE_TIMESTAMP,
            .queryCount = 4,
        };
        if (a->vkCreateQueryPool(dev->device, &qpci, NULL, &dev->timestamps) != VK_SUCCESS)
            dev->timestamps = VK_NULL_HANDLE;
        VkPhysicalDeviceProperties pr;
        ia->vkGetPhysicalDeviceProperties(dev->physical, &pr);
        dev->timestamp_period = pr.limits.timestampPeriod;
        dev->timestamp_mask = timestamp_bits >= 64 ? UINT64_MAX : ((1ull << timestamp_bits) - 1);
    }
    /* On CPUs and unified-memory GPUs the host reads and writes buffers in
     * place; elsewhere through a staging buffer. The staging option
     * (FFNRT_VULKAN_STAGING=1) forces staging so that path is tested on
     * such devices too. */
    ia->vkGetPhysicalDeviceMemoryProperties(dev->physical, &dev->memory);
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int uma = info->type == FFNRT_DEVICE_TYPE_CPU || info->type == FFNRT_DEVICE_TYPE_INTEGRATED_GPU;
    dev->direct_mapping = uma && !dev->force_staging &&
                          find_memory_type(&dev->memory, host | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &dev->direct_type);
    if (!find_memory_type(&dev->memory, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &dev->device_type))
        dev->device_type = 0;
    if ((dev->external || !dev->direct_mapping) && !find_memory_type(&dev->memory, host, &dev->staging_type))
        return ffnrt_fail(err, FFNRT_ERROR_UNSUPPORTED, "Vulkan: the device has no host-visible memory");
    return FFNRT_OK;
}

/* Whether the physical device lists extension name. */
static int vk_device_extension_present(const ffnrt_vk_instance_api *ia, VkPhysicalDevice pd, const char *name)
{
    uint32_t n = 0;
    int found = 0;
    if (ia->vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || !n)
        return 0;
    VkExtensionProperties *ext = calloc(n, sizeof *ext);
    if (ext && ia->vkEnumerateDeviceExtensionProperties(pd, NULL, &n, ext) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = strcmp(ext[i].extensionName, name) == 0;
    free(ext);
    return found;
}

static ffnrt_status vk_open(uint32_t index, const ffnrt_open_options *opts, ffnrt_bdevice **out,
                            ffnrt_device_info *info, ffnrt_limits *limits, ffnrt_error *err)
{
    ffnrt_bdevice *dev = calloc(1, sizeof *dev);
    if (!dev)
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "Vulkan: out of host memory");
    atomic_init(&dev->validation_messages, 0);
    dev->force_staging = opts->staging;
    ffnrt_status st = vk_instance_create(&dev->vi, opts->validation, &dev->validation_messages, err);
    VkPhysicalDevice *pds = NULL;
    uint32_t n = 0;
    if (st == FFNRT_OK)
        st = vk_compute_devices(&dev->vi, &pds, &n, err);
    if (st == FFNRT_OK && index >= n)
        st = ffnrt_fail(err, FFNRT_ERROR_DEVICE_NOT_FOUND, "Vulkan: device %u requested, %u found", index, n);
    if (st != FFNRT_OK) {
        free(pds);
        vk_close(dev);
        return st;
    }
    dev->physical = pds[index];
    free(pds);
    const ffnrt_vk_instance_api *ia = &dev->vi.api;
    vk_fill_info(&dev->vi, dev->physical, index, info, limits);
    dev->max_workgroup_size = info->max_workgroup_size;
    dev->timeout_ns = opts->timeout_ns;

    uint32_t nq = 0;
    VkQueueFamilyProperties qf[16];
    ia->vkGetPhysicalDeviceQueueFamilyProperties(dev->physical, &nq, NULL);
    nq = nq > 16 ? 16 : nq;
    ia->vkGetPhysicalDeviceQueueFamilyProperties(dev->physical, &nq, qf);
    dev->queue_family = UINT32_MAX;
    for (uint32_t i = 0; i < nq && dev->queue_family == UINT32_MAX; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
            dev->queue_family = i;
    uint32_t timestamp_bits = qf[dev->queue_family].timestampValidBits;

    float priority = 1.0f;
    VkDeviceQueueCreateInfo qci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = dev->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    /* fp16 arithmetic (the "f16 compute" kernels) where the device has it. */
    VkPhysicalDeviceShaderFloat16Int8Features float16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
        .shaderFloat16 = VK_TRUE,
    };
    /* A device that lists VK_KHR_portability_subset (MoltenVK: a Vulkan
     * layered over Metal) must have it enabled, the spec says; it lists
     * what such a device lacks. ffnrt's compute kernels use none of its
     * feature bits (no triangle fans, image views or events). The name is
     * spelled out: its macro is in vulkan_beta.h. */
    static const char *const portability[] = {"VK_KHR_portability_subset"};
    int needs_portability = vk_device_extension_present(ia, dev->physical, portability[0]);
    /* Packed integer dot products (the integer path's matrix-vector
     * kernel) where the device has them: the feature, and the extension
     * where the device lists it (a 1.2 device needs it; enabling a
     * promoted one on 1.3 is allowed). */
    VkPhysicalDeviceShaderIntegerDotProductFeatures int_dot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES,
        .pNext = info->fp16_arithmetic ? &float16 : NULL,
        .shaderIntegerDotProduct = VK_TRUE,
    };
    const char *extensions[2];
    uint32_t n_extensions = 0;
    if (needs_portability)
        extensions[n_extensions++] = portability[0];
    if (info->int_dot_packed &&
        vk_device_extension_present(ia, dev->physical, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME))
        extensions[n_extensions++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
    /* 64-bit integer words in kernels (the 8-word views: limits->int64_words). */
    VkPhysicalDeviceFeatures core_features = {.shaderInt64 = limits->int64_words ? VK_TRUE : VK_FALSE};
    VkDeviceCreateInfo dci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pEnabledFeatures = &core_features,
        .pNext = info->int_dot_packed ? (void *)&int_dot : info->fp16_arithmetic ? (void *)&float16 : NULL,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qci,
        .enabledExtensionCount = n_extensions,
        .ppEnabledExtensionNames = n_extensions ? extensions : NULL,
    };
    VkResult rc = ia->vkCreateDevice(dev->physical, &dci, NULL, &dev->device);
    if (rc != VK_SUCCESS) {
        dev->device = VK_NULL_HANDLE;
        vk_close(dev);
        return vk_fail(err, rc, "vkCreateDevice");
    }
#define FFNRT_VK_LOAD(name) dev->api.name = (PFN_##name)ia->vkGetDeviceProcAddr(dev->device, #name);
    FFNRT_VK_DEVICE_FUNCTIONS(FFNRT_VK_LOAD)
#undef FFNRT_VK_LOAD
    const ffnrt_vk_device_api *a = &dev->api;
    a->vkGetDeviceQueue(dev->device, dev->queue_family, 0, &dev->queue);
    dev->ids.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES;
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &dev->ids};
    ia->vkGetPhysicalDeviceProperties2(dev->physical, &p2);
    dev->props = p2.properties;
    dev->ids.pNext = NULL;
    VkPipelineCacheCreateInfo pcci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    if (a->vkCreatePipelineCache(dev->device, &pcci, NULL, &dev->pipeline_cache) != VK_SUCCESS)
        dev->pipeline_cache = VK_NULL_HANDLE; /* pipelines are then built without one */

    st = vk_device_objects(dev, info, timestamp_bits, err);
    if (st != FFNRT_OK) {
        vk_close(dev);
        return st;
    }
    *out = dev;
    return FFNRT_OK;
}

/* ------------------------------------------------------------- buffers */

static ffnrt_status vk_buffer_alloc(ffnrt_bdevice *dev, uint64_t bytes, uint32_t type_hint, int map,
                                    ffnrt_bbuffer **out, ffnrt_error *err)
{
    const ffnrt_vk_device_api *a = &dev->api;
    ffnrt_bbuffer *buf = calloc(1, sizeof *buf);
    if (!buf)
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "Vulkan: out of host memory");
    buf->size = bytes;
    VkBufferCreateInfo bci = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = bytes,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkResult rc = a->vkCreateBuffer(dev->device, &bci, NULL, &buf->buffer);
    if (rc != VK_SUCCESS) {
        free(buf);
        return vk_fail(err, rc, "vkCreateBuffer");
    }
    VkMemoryRequirements req;
    a->vkGetBufferMemoryRequirements(dev->device, buf->buffer, &req);
    uint32_t type = type_hint;
    if (!(req.memoryTypeBits & (1u << type))) {
        /* Another type with the same properties that the buffer accepts. */
        VkMemoryPropertyFlags want = dev->memory.memoryTypes[type_hint].propertyFlags;
        for (type = 0; type < dev->memory.memoryTypeCount; type++)
            if ((req.memoryTypeBits & (1u << type)) && (dev->memory.memoryTypes[type].propertyFlags & want) == want)
                break;
    }
    VkMemoryAllocateInfo mai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = type,
    };
    if (type >= dev->memory.memoryTypeCount)
        rc = VK_ERROR_OUT_OF_DEVICE_MEMORY;
    else if ((rc = a->vkAllocateMemory(dev->device, &mai, NULL, &buf->memory)) == VK_SUCCESS &&
             (rc = a->vkBindBufferMemory(dev->device, buf->buffer, buf->memory, 0)) == VK_SUCCESS && map)
        rc = a->vkMapMemory(dev->device, buf->memory, 0, VK_WHOLE_SIZE, 0, &buf->mapped);
    if (rc != VK_SUCCESS) {
        if (buf->memory)
            a->vkFreeMemory(dev->device, buf->memory, NULL);
        a->vkDestroyBuffer(dev->device, buf->buffer, NULL);
        free(buf);
        return vk_fail(err, rc, "allocating buffer memory");
    }
    *out = buf;
    return FFNRT_OK;
}

static ffnrt_status vk_buffer_create(ffnrt_bdevice *dev, uint64_t bytes, ffnrt_bbuffer **out, ffnrt_error *err)
{
    if (dev->direct_mapping)
        return vk_buffer_alloc(dev, bytes, dev->direct_type, 1, out, err);
    return vk_buffer_alloc(dev, bytes, dev->device_type, 0, out, err);
}

static void vk_free_buffer(ffnrt_bdevice *dev, ffnrt_bbuffer *buf);
static void vk_free_kernel(ffnrt_bdevice *dev, ffnrt_bkernel *k);
static int vk_unstuck(ffnrt_bdevice *dev);
static ffnrt_status vk_check_stuck(ffnrt_bdevice *dev, ffnrt_error *err);

/* Under a stuck batch the buffer is kept until it finishes. */
/* Under a batch being recorded, until that batch has run. */
static void vk_buffer_destroy(ffnrt_bdevice *dev, ffnrt_bbuffer *buf)
{
    if (!buf)
        return;
    if (!vk_unstuck(dev)) {
        buf->next_kept = dev->kept_buffers;
        dev->kept_buffers = buf;
        return;
    }
    if (dev->rec_state != VK_REC_IDLE) {
        buf->next_kept = dev->slots[dev->rec].garbage_buffers;
        dev->slots[dev->rec].garbage_buffers = buf;
        return;
    }
    vk_free_buffer(dev, buf);
}

/* ------------------------------------------- batches past the timeout */

static void vk_free_buffer(ffnrt_bdevice *dev, ffnrt_bbuffer *buf)
{
    /* Memory is unmapped implicitly when freed; the app's own buffers are
     * never destroyed here. */
    if (!buf->wrapped) {
        dev->api.vkDestroyBuffer(dev->device, buf->buffer, NULL);
        dev->api.vkFreeMemory(dev->device, buf->memory, NULL);
    }
    free(buf);
}

static void vk_free_kernel(ffnrt_bdevice *dev, ffnrt_bkernel *k)
{
    const ffnrt_vk_device_api *a = &dev->api;
    if (k->pipeline)
        a->vkDestroyPipeline(dev->device, k->pipeline, NULL);
    if (k->layout)
        a->vkDestroyPipelineLayout(dev->device, k->layout, NULL);
    if (k->set_layout)
        a->vkDestroyDescriptorSetLayout(dev->device, k->set_layout, NULL);
    if (k->module)
        a->vkDestroyShaderModule(dev->device, k->module, NULL);
    free(k);
}

/* Frees a list of buffers and one of kernels (linked by next_kept). */
static void vk_free_lists(ffnrt_bdevice *dev, ffnrt_bbuffer **buffers, ffnrt_bkernel **kernels)
{
    while (*buffers) {
        ffnrt_bbuffer *b = *buffers;
        *buffers = b->next_kept;
        vk_free_buffer(dev, b);
    }
    while (*kernels) {
        ffnrt_bkernel *k = *kernels;
        *kernels = k->next_kept;
        vk_free_kernel(dev, k);
    }
}

/* What a stuck batch kept alive, once it has finished. */
static void vk_free_kept(ffnrt_bdevice *dev) { vk_free_lists(dev, &dev->kept_buffers, &dev->kept_kernels); }

/* What was destroyed while slot sl's batch was recorded, once the batch
 * has run (or was never submitted). */
static void vk_free_garbage(ffnrt_bdevice *dev, vk_slot *sl)
{
    vk_free_lists(dev, &sl->garbage_buffers, &sl->garbage_kernels);
}

/* The recorded batch will not run: its slot is free again (the next begin
 * resets the command buffer), and what was destroyed meanwhile goes. */
static void vk_drop_rec(ffnrt_bdevice *dev)
{
    dev->rec_state = VK_REC_IDLE;
    dev->open_dispatches = 0;
    vk_free_garbage(dev, &dev->slots[dev->rec]);
}

/* A stuck batch that has finished since: the device is usable again. */
static void vk_unstick(ffnrt_bdevice *dev)
{
    dev->api.vkResetFences(dev->device, 1, &dev->slots[dev->flight].fence);
    dev->stuck = 0;
    vk_free_kept(dev);
    vk_free_garbage(dev, &dev->slots[dev->flight]);
}

/* 1 when no batch is stuck (any that was has finished since). */
static int vk_unstuck(ffnrt_bdevice *dev)
{
    if (dev->stuck && dev->api.vkGetFenceStatus(dev->device, dev->slots[dev->flight].fence) == VK_SUCCESS)
        vk_unstick(dev);
    return !dev->stuck;
}

/* Every use of the queue, the command buffer, the descriptor pools or
 * memory the device may write starts here. A stuck batch is waited for
 * again, for one more timeout: the new work would queue behind it anyway,
 * and a batch that was only slow lets the context recover by itself. */
static ffnrt_status vk_check_stuck(ffnrt_bdevice *dev, ffnrt_error *err)
{
    if (vk_unstuck(dev))
        return FFNRT_OK;
    VkResult rc = dev->api.vkWaitForFences(dev->device, 1, &dev->slots[dev->flight].fence, VK_TRUE,
                                           dev->timeout_ns);
    if (rc == VK_SUCCESS) {
        vk_unstick(dev);
        return FFNRT_OK;
    }
    if (rc != VK_TIMEOUT)
        return vk_fail(err, rc, "vkWaitForFences");
    return ffnrt_fail(err, FFNRT_ERROR_DEVICE_FAILURE,
                      "Vulkan: work submitted earlier is still running, after two waits of the %llu ms timeout "
                      "(device_timeout_ms, FFNRT_DEVICE_TIMEOUT_MS); what it uses is kept until it finishes: "
                      "the next call waits for it again, or destroy the context",
                      (unsigned long long)(dev->timeout_ns / 1000000));
}

/* Waits for the batch in flight's fence; on a timeout the batch is stuck
 * (see above). */
static ffnrt_status vk_wait_fence(ffnrt_bdevice *dev, ffnrt_error *err)
{
    VkFence fence = dev->slots[dev->flight].fence;
    VkResult rc = dev->api.vkWaitForFences(dev->device, 1, &fence, VK_TRUE, dev->timeout_ns);
    if (rc == VK_TIMEOUT) {
        dev->stuck = 1;
        return ffnrt_fail(err, FFNRT_ERROR_DEVICE_FAILURE,
                          "Vulkan: the device did not finish within the %llu ms timeout (device_timeout_ms, "
                          "FFNRT_DEVICE_TIMEOUT_MS); the work may still be running, so what it uses is kept until "
                          "it finishes: ffnrt_context_wait waits for it again, or destroy the context",
                          (unsigned long long)(dev->timeout_ns / 1000000));
    }
    dev->api.vkResetFences(dev->device, 1, &fence);
    if (rc == VK_SUCCESS)
        vk_free_garbage(dev, &dev->slots[dev->flight]);
    return rc == VK_SUCCESS ? FFNRT_OK : vk_fail(err, rc, "vkWaitForFences");
}

/* Submits the recording slot's command buffer; it is then the batch in
 * flight (the caller sets pending or waits). */
static ffnrt_status vk_submit_rec(ffnrt_bdevice *dev, ffnrt_error *err)
{
    vk_slot *sl = &dev->slots[dev->rec];
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &sl->cmd,
    };
    VkResult rc = dev->api.vkQueueSubmit(dev->queue, 1, &si, sl->fence);
    if (rc != VK_SUCCESS) {
        vk_drop_rec(dev);
        return vk_fail(err, rc, "vkQueueSubmit");
    }
    dev->rec_state = VK_REC_IDLE;
    dev->open_dispatches = 0;
    dev->flight = dev->rec;
    return FFNRT_OK;
}

/* Submits the recording slot and waits for it. */
static ffnrt_status vk_wait(ffnrt_bdevice *dev, ffnrt_error *err)
{
    ffnrt_status st = vk_submit_rec(dev, err);
    return st == FFNRT_OK ? vk_wait_fence(dev, err) : st;
}

/* One staged copy between a buffer and the staging buffer, synchronous. */
static ffnrt_status vk_staged_copy(ffnrt_bdevice *dev, ffnrt_bbuffer *buf, uint64_t offset, uint64_t bytes,
                                   int to_device, ffnrt_error *err)
{
    const ffnrt_vk_device_api *a = &dev->api;
    VkCommandBuffer cmd = dev->slots[dev->rec].cmd;
    VkCommandBufferBeginInfo bi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    a->vkResetCommandBuffer(cmd, 0);
    a->vkBeginCommandBuffer(cmd, &bi);
    VkBufferCopy region = {to_device ? 0 : offset, to_device ? offset : 0, bytes};
    if (to_device)
        a->vkCmdCopyBuffer(cmd, dev->staging->buffer, buf->buffer, 1, &region);
    else
        a->vkCmdCopyBuffer(cmd, buf->buffer, dev->staging->buffer, 1, &region);
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
    };
    a->vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                            VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL,
                            0, NULL);
    VkResult rc = a->vkEndCommandBuffer(cmd);
    if (rc != VK_SUCCESS)
        return vk_fail(err, rc, "vkEndCommandBuffer");
    return vk_wait(dev, err);
}

static ffnrt_status vk_transfer(ffnrt_bdevice *dev, ffnrt_bbuffer *buf, uint64_t offset, void *host,
                                uint64_t bytes, int to_device, ffnrt_error *err)
{
    /* Earlier work may still use the buffer: it finishes first, an open
     * batch submitted (host transfers keep call order). */
    ffnrt_status sst = vk_finish_pending(dev, err);
    if (sst != FFNRT_OK)
        return sst;
    if (!buf->mapped && dev->rec_state != VK_REC_IDLE)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                          "Vulkan: a staged transfer while an op is being recorded (internal ordering error)");
    if (buf->mapped) {
        if (to_device)
            memcpy((char *)buf->mapped + offset, host, bytes);
        else
            memcpy(host, (char *)buf->mapped + offset, bytes);
        return FFNRT_OK;
    }
    if (!dev->staging) {
        ffnrt_status st = vk_buffer_alloc(dev, STAGING_BYTES, dev->staging_type, 1, &dev->staging, err);
        if (st != FFNRT_OK)
            return st;
    }
    for (uint64_t done = 0; done < bytes; done += STAGING_BYTES) {
        uint64_t n = bytes - done < STAGING_BYTES ? bytes - done : STAGING_BYTES;
        if (to_device)
            memcpy(dev->staging->mapped, (char *)host + done, n);
        ffnrt_status st = vk_staged_copy(dev, buf, offset + done, n, to_device, err);
        if (st != FFNRT_OK)
            return st;
        if (!to_device)
            memcpy((char *)host + done, dev->staging->mapped, n);
    }
    return FFNRT_OK;
}

static ffnrt_status vk_buffer_write(ffnrt_bdevice *dev, ffnrt_bbuffer *buf, uint64_t offset, const void *src,
                                    uint64_t bytes, ffnrt_error *err)
{
    return vk_transfer(dev, buf, offset, (void *)src, bytes, 1, err);
}

static ffnrt_status vk_buffer_read(ffnrt_bdevice *dev, ffnrt_bbuffer *buf, uint64_t offset, void *dst,
                                   uint64_t bytes, ffnrt_error *err)
{
    return vk_transfer(dev, buf, offset, dst, bytes, 0, err);
}

/* ------------------------------------------------------------- kernels */

static void vk_kernel_destroy(ffnrt_bdevice *dev, ffnrt_bkernel *k)
{
    if (!k)
        return;
    if (!vk_unstuck(dev)) { /* a stuck batch may still run it */
        k->next_kept = dev->kept_kernels;
        dev->kept_kernels = k;
        return;
    }
    if (dev->rec_state != VK_REC_IDLE) { /* so may the batch being recorded */
        k->next_kept = dev->slots[dev->rec].garbage_kernels;
        dev->slots[dev->rec].garbage_kernels = k;
        return;
    }
    vk_free_kernel(dev, k);
}

/* SPIR-V from the disk cache, if it is valid SPIR-V (the file's digest
 * already held; this catches a blob that was never valid, which a driver
 * must not be given). */
static uint32_t *vk_cached_spirv(const ffnrt_kernel_cache *c, size_t *words)
{
    size_t len = 0;
    uint32_t *code = c->load(c->user, FFNRT_CACHE_SPIRV, &len);
    if (!code)
        return NULL;
    char why[256] = "not SPIR-V";
    int valid = len >= 20 && len % 4 == 0 && code[0] == 0x07230203u ? ffnrt_spirv_valid(code, len / 4, why, sizeof why)
                                                                   : 0;
    if (valid != 1) {
        free(code);
        if (valid == 0) /* not when it could not be checked: the entry may be good */
            c->unusable(c->user, FFNRT_CACHE_SPIRV, why);
        return NULL;
    }
    *words = len / 4;
    return code;
}

static ffnrt_status vk_kernel_from_spirv(ffnrt_bdevice *dev, const ffnrt_kernel_source *src, uint32_t *spirv,
                                         size_t words, ffnrt_bkernel **out, ffnrt_error *err);
static ffnrt_status vk_warm_pipeline(ffnrt_bdevice *dev, ffnrt_bkernel *k, ffnrt_error *err);

/* Binding i of set is the storage buffer range infos[i]. */
static void vk_write_set(ffnrt_bdevice *dev, VkDescriptorSet set, const VkDescriptorBufferInfo *infos,
                         uint32_t count)
{
    VkWriteDescriptorSet writes[MAX_BINDINGS];
    for (uint32_t i = 0; i < count; i++)
        writes[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = set,
            .dstBinding = i,
            .descriptorCount = 1,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .pBufferInfo = &infos[i],
        };
    dev->api.vkUpdateDescriptorSets(dev->device, count, writes, 0, NULL);
}

/* From the cached SPIR-V if there is one and the driver takes it; else (a
 * driver may still refuse valid SPIR-V) compiled from source, the cache
 * entry then overwritten. */
static ffnrt_status vk_kernel_build(ffnrt_bdevice *dev, const ffnrt_kernel_source *src, ffnrt_bkernel **out,
                                    char **log, ffnrt_error *err)
{
    /* The device's own limit (maxPerStageDescriptorStorageBuffers) is
     * planned with and checked before a build (limits.max_bindings,
     * ffnrt_context_kernel); this guards the backend's own arrays. */
    if (src->buffer_count > MAX_BINDINGS)
        return ffnrt_fail(err, FFNRT_ERROR_LIMIT_EXCEEDED,
                          "Vulkan: kernel %s binds %u storage buffers, past ffnrt's own most (%u)", src->entry,
                          src->buffer_count, MAX_BINDINGS);
    uint32_t *spirv = NULL;
    size_t words = 0;
    if (src->cache && (spirv = vk_cached_spirv(src->cache, &words)) != NULL) {
        ffnrt_error refused;
        ffnrt_error_clear(&refused);
        ffnrt_status st = vk_kernel_from_spirv(dev, src, spirv, words, out, &refused);
        if (st == FFNRT_OK || st == FFNRT_ERROR_OUT_OF_HOST_MEMORY)
            return st == FFNRT_OK ? st : ffnrt_fail(err, st, "%s", refused.message);
        src->cache->unusable(src->cache->user, FFNRT_CACHE_SPIRV, refused.message);
    }
    ffnrt_status st = ffnrt_glsl_to_spirv(src->source, dev->max_workgroup_size, &spirv, &words, log, err);
    if (st != FFNRT_OK)
        return st;
    if (src->cache)
        src->cache->store(src->cache->user, FFNRT_CACHE_SPIRV, spirv, words * sizeof *spirv);
    return vk_kernel_from_spirv(dev, src, spirv, words, out, err);
}

/* The module, layouts and pipeline of a kernel; frees spirv. */
static ffnrt_status vk_kernel_from_spirv(ffnrt_bdevice *dev, const ffnrt_kernel_source *src, uint32_t *spirv,
                                         size_t words, ffnrt_bkernel **out, ffnrt_error *err)
{
    const ffnrt_vk_device_api *a = &dev->api;
    ffnrt_bkernel *k = calloc(1, sizeof *k);
    if (!k) {
        free(spirv);
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "Vulkan: out of host memory");
    }
    k->buffer_count = src->buffer_count;
    k->params_size = src->params_size;
    VkShaderModuleCreateInfo smci = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = words * sizeof(uint32_t),
        .pCode = spirv,
    };
    VkResult rc = a->vkCreateShaderModule(dev->device, &smci, NULL, &k->module);
    free(spirv);
    VkDescriptorSetLayoutBinding bindings[MAX_BINDINGS];
    for (uint32_t i = 0; i < src->buffer_count; i++)
        bindings[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    VkDescriptorSetLayoutCreateInfo dslci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = src->buffer_count,
        .pBindings = bindings,
    };
    if (rc == VK_SUCCESS)
        rc = a->vkCreateDescriptorSetLayout(dev->device, &dslci, NULL, &k->set_layout);
    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, src->params_size};
    VkPipelineLayoutCreateInfo plci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &k->set_layout,
        .pushConstantRangeCount = src->params_size ? 1 : 0,
        .pPushConstantRanges = &pcr,
    };
    if (rc == VK_SUCCESS)
        rc = a->vkCreatePipelineLayout(dev->device, &plci, NULL, &k->layout);
    VkComputePipelineCreateInfo cpci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .stage = VK_SHADER_STAGE_COMPUTE_BIT,
            .module = k->module,
            .pName = "main",
        },
        .layout = k->layout,
    };
    if (rc == VK_SUCCESS)
        rc = a->vkCreateComputePipelines(dev->device, dev->pipeline_cache, 1, &cpci, NULL, &k->pipeline);
    if (rc != VK_SUCCESS) {
        vk_free_kernel(dev, k);
        return vk_fail(err, rc, "creating the compute pipeline");
    }
    ffnrt_status st = vk_warm_pipeline(dev, k, err);
    if (st != FFNRT_OK) {
        vk_kernel_destroy(dev, k);
        return st;
    }
    *out = k;
    return FFNRT_OK;
}

/* llvmpipe (lavapipe), and GPU drivers that specialise a pipeline at its
 * first use, compile it to machine code at its first dispatch, on the
 * queue: the fence wait of the first batch that runs it then times the
 * compiler, not the device (5 s for a small layer on a cold cache here,
 * minutes on a busy CPU), and the device timeout mistook that for a hang.
 * One empty dispatch (no workgroups) at creation moves that compile into
 * kernel building; its wait has no limit, as vkCreateComputePipelines has
 * none. Earlier work is waited for first (with the timeout), so that this
 * unlimited wait is never behind a batch that could hang. */
static ffnrt_status vk_warm_pipeline(ffnrt_bdevice *dev, ffnrt_bkernel *k, ffnrt_error *err)
{
    const ffnrt_vk_device_api *a = &dev->api;
    static const uint32_t zeros[64];
    if (k->params_size > sizeof zeros)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "Vulkan: %u bytes of parameters, at most %zu",
                          k->params_size, sizeof zeros);
    ffnrt_status st = vk_wait_flight(dev, err); /* an open batch is not queued yet */
    if (st == FFNRT_OK && !dev->warm_buffer)
        st = vk_buffer_create(dev, 256, &dev->warm_buffer, err);
    if (st != FFNRT_OK)
        return st;
    a->vkResetDescriptorPool(dev->device, dev->warm_pool, 0);
    VkDescriptorSetAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = dev->warm_pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &k->set_layout,
    };
    VkDescriptorSet set;
    VkResult rc = a->vkAllocateDescriptorSets(dev->device, &ai, &set);
    if (rc != VK_SUCCESS)
        return vk_fail(err, rc, "vkAllocateDescriptorSets");
    VkDescriptorBufferInfo infos[MAX_BINDINGS];
    for (uint32_t i = 0; i < k->buffer_count; i++)
        infos[i] = (VkDescriptorBufferInfo){dev->warm_buffer->buffer, 0, VK_WHOLE_SIZE};
    vk_write_set(dev, set, infos, k->buffer_count);
    VkCommandBufferBeginInfo bi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    a->vkResetCommandBuffer(dev->warm_cmd, 0);
    if ((rc = a->vkBeginCommandBuffer(dev->warm_cmd, &bi)) != VK_SUCCESS)
        return vk_fail(err, rc, "vkBeginCommandBuffer");
    a->vkCmdBindPipeline(dev->warm_cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->pipeline);
    a->vkCmdBindDescriptorSets(dev->warm_cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->layout, 0, 1, &set, 0, NULL);
    if (k->params_size)
        a->vkCmdPushConstants(dev->warm_cmd, k->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, k->params_size, zeros);
    a->vkCmdDispatch(dev->warm_cmd, 0, 0, 0);
    if ((rc = a->vkEndCommandBuffer(dev->warm_cmd)) != VK_SUCCESS)
        return vk_fail(err, rc, "vkEndCommandBuffer");
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &dev->warm_cmd,
    };
    if ((rc = a->vkQueueSubmit(dev->queue, 1, &si, dev->warm_fence)) != VK_SUCCESS)
        return vk_fail(err, rc, "vkQueueSubmit (a pipeline's first dispatch)");
    rc = a->vkWaitForFences(dev->device, 1, &dev->warm_fence, VK_TRUE, UINT64_MAX);
    a->vkResetFences(dev->device, 1, &dev->warm_fence);
    return rc == VK_SUCCESS ? FFNRT_OK : vk_fail(err, rc, "vkWaitForFences (a pipeline's first dispatch)");
}

/* ------------------------------------------------------------ dispatch */

/* An op's dispatches go on after the open batch's (asynchronous mode), or
 * start a batch in the recording slot, which no batch in flight uses. */
static ffnrt_status vk_begin(ffnrt_bdevice *dev, ffnrt_error *err)
{
    const ffnrt_vk_device_api *a = &dev->api;
    if (dev->rec_state == VK_REC_OPEN) {
        dev->rec_state = VK_REC_ACTIVE;
        return FFNRT_OK;
    }
    ffnrt_status pst = vk_check_stuck(dev, err);
    if (pst == FFNRT_OK && dev->pending && dev->flight == dev->rec)
        pst = vk_wait_flight(dev, err);
    if (pst != FFNRT_OK)
        return pst;
    vk_slot *sl = &dev->slots[dev->rec];
    for (uint32_t i = 0; i < sl->pool_used; i++)
        a->vkResetDescriptorPool(dev->device, sl->pools[i], 0);
    sl->pool_used = 0;
    VkCommandBufferBeginInfo bi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    a->vkResetCommandBuffer(sl->cmd, 0);
    VkResult rc = a->vkBeginCommandBuffer(sl->cmd, &bi);
    if (rc != VK_SUCCESS)
        return vk_fail(err, rc, "vkBeginCommandBuffer");
    if (dev->timestamps) {
        a->vkCmdResetQueryPool(sl->cmd, dev->timestamps, 2 * dev->rec, 2);
        a->vkCmdWriteTimestamp(sl->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, dev->timestamps, 2 * dev->rec);
    }
    dev->rec_state = VK_REC_ACTIVE;
    dev->open_dispatches = 0;
    return FFNRT_OK;
}

static ffnrt_status vk_allocate_set(ffnrt_bdevice *dev, ffnrt_bkernel *k, VkDescriptorSet *set, ffnrt_error *err)
{
    const ffnrt_vk_device_api *a = &dev->api;
    vk_slot *sl = &dev->slots[dev->rec];
    VkDescriptorSetAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorSetCount = 1,
        .pSetLayouts = &k->set_layout,
    };
    if (sl->pool_used > 0) {
        ai.descriptorPool = sl->pools[sl->pool_used - 1];
        if (a->vkAllocateDescriptorSets(dev->device, &ai, set) == VK_SUCCESS)
            return FFNRT_OK;
    }
    /* The current pool is full: take the next one, creating it if needed. */
    if (sl->pool_used == sl->pool_count) {
        VkDescriptorPool *grown = realloc(sl->pools, (sl->pool_count + 1) * sizeof *grown);
        if (!grown)
            return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "Vulkan: out of host memory");
        sl->pools = grown;
        VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, SETS_PER_POOL * MAX_BINDINGS};
        VkDescriptorPoolCreateInfo dpci = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
            .maxSets = SETS_PER_POOL,
            .poolSizeCount = 1,
            .pPoolSizes = &size,
        };
        VkResult rc = a->vkCreateDescriptorPool(dev->device, &dpci, NULL, &sl->pools[sl->pool_count]);
        if (rc != VK_SUCCESS)
            return vk_fail(err, rc, "vkCreateDescriptorPool");
        sl->pool_count++;
    }
    ai.descriptorPool = sl->pools[sl->pool_used++];
    VkResult rc = a->vkAllocateDescriptorSets(dev->device, &ai, set);
    return rc == VK_SUCCESS ? FFNRT_OK : vk_fail(err, rc, "vkAllocateDescriptorSets");
}

static ffnrt_status vk_dispatch(ffnrt_bdevice *dev, ffnrt_bkernel *k, const ffnrt_binding *bindings,
                                uint32_t binding_count, const void *params, const uint32_t groups[2],
                                ffnrt_error *err)
{
    const ffnrt_vk_device_api *a = &dev->api;
    if (binding_count != k->buffer_count)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "Vulkan: %u bindings for a kernel of %u",
                          binding_count, k->buffer_count);
    VkDescriptorSet set;
    ffnrt_status st = vk_allocate_set(dev, k, &set, err);
    if (st != FFNRT_OK)
        return st;
    VkDescriptorBufferInfo infos[MAX_BINDINGS];
    for (uint32_t i = 0; i < binding_count; i++)
        infos[i] = (VkDescriptorBufferInfo){bindings[i].buffer->buffer, bindings[i].offset, bindings[i].size};
    vk_write_set(dev, set, infos, binding_count);
    VkCommandBuffer cmd = dev->recording ? dev->recording : dev->slots[dev->rec].cmd;
    dev->open_dispatches += !dev->recording;
    a->vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->pipeline);
    a->vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->layout, 0, 1, &set, 0, NULL);
    if (k->params_size)
        a->vkCmdPushConstants(cmd, k->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, k->params_size, params);
    a->vkCmdDispatch(cmd, groups[0], groups[1], 1);
    /* Later dispatches of the batch may read what this one wrote. */
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
    };
    a->vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                            0, 1, &mb, 0, NULL, 0, NULL);
    return FFNRT_OK;
}

/* Closes ffnrt's batch: its shader writes made visible to the host and to
 * transfers, the end timestamp, and the command buffer ended. */
static ffnrt_status vk_end_batch(ffnrt_bdevice *dev, ffnrt_error *err)
{
    const ffnrt_vk_device_api *a = &dev->api;
    VkCommandBuffer cmd = dev->slots[dev->rec].cmd;
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT,
    };
    a->vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                            VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, NULL, 0,
                            NULL);
    if (dev->timestamps)
        a->vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, dev->timestamps, 2 * dev->rec + 1);
    VkResult rc = a->vkEndCommandBuffer(cmd);
    if (rc != VK_SUCCESS) {
        vk_drop_rec(dev);
        return vk_fail(err, rc, "vkEndCommandBuffer");
    }
    return FFNRT_OK;
}

static void vk_read_timestamps(ffnrt_bdevice *dev, uint32_t slot, uint64_t *device_ns);

/* A synchronous op: everything before it has run (vk_begin saw to the
 * batch in flight; an open batch is this one), so its batch is waited for
 * and its time is the op's. */
static ffnrt_status vk_submit(ffnrt_bdevice *dev, uint64_t *device_ns, ffnrt_error *err)
{
    *device_ns = 0;
    ffnrt_status st = vk_wait_flight(dev, err);
    if (st == FFNRT_OK)
        st = vk_end_batch(dev, err);
    else
        vk_drop_rec(dev);
    if (st != FFNRT_OK)
        return st;
    st = vk_wait(dev, err);
    if (st == FFNRT_OK)
        vk_read_timestamps(dev, dev->flight, device_ns);
    return st;
}

/* ---------------------------------------------------------- disk cache */

static void hex16(const uint8_t *b, char *out)
{
    for (int i = 0; i < 16; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

static void vk_cache_identity(ffnrt_bdevice *dev, char *buf, size_t cap)
{
    char cache[33], device[33], driver[33];
    hex16(dev->props.pipelineCacheUUID, cache);
    hex16(dev->ids.deviceUUID, device);
    hex16(dev->ids.driverUUID, driver);
    snprintf(buf, cap,
             "pipeline cache uuid %s\ndevice uuid %s\ndriver uuid %s\ndriver version 0x%x\n%s\n"
             "max local size %u\n",
             cache, device, driver, dev->props.driverVersion, ffnrt_glsl_compiler_identity(),
             dev->max_workgroup_size);
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Checks the header every pipeline cache starts with
 * (VkPipelineCacheHeaderVersionOne, little-endian on every platform we
 * run) against this device before the driver sees the data: drivers are
 * meant to refuse foreign data themselves, but not all do it safely. */
static int vk_driver_cache_import(ffnrt_bdevice *dev, const void *data, size_t len, const char **why)
{
    const unsigned char *b = data;
    if (len < 32)
        return (*why = "pipeline cache: shorter than its header"), 0;
    uint32_t header = le32(b), version = le32(b + 4);
    if (header < 32 || header > len)
        return (*why = "pipeline cache: bad header length"), 0;
    if (version != VK_PIPELINE_CACHE_HEADER_VERSION_ONE)
        return (*why = "pipeline cache: unknown header version"), 0;
    if (le32(b + 8) != dev->props.vendorID || le32(b + 12) != dev->props.deviceID)
        return (*why = "pipeline cache: another vendor or device"), 0;
    if (memcmp(b + 16, dev->props.pipelineCacheUUID, VK_UUID_SIZE) != 0)
        return (*why = "pipeline cache: another pipelineCacheUUID (driver changed)"), 0;
    const ffnrt_vk_device_api *a = &dev->api;
    VkPipelineCacheCreateInfo pcci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
        .initialDataSize = len,
        .pInitialData = data,
    };
    VkPipelineCache loaded;
    if (a->vkCreatePipelineCache(dev->device, &pcci, NULL, &loaded) != VK_SUCCESS)
        return (*why = "pipeline cache: the driver refused the data"), 0;
    /* No pipeline was built yet: the empty cache made at open is replaced. */
    if (dev->pipeline_cache)
        a->vkDestroyPipelineCache(dev->device, dev->pipeline_cache, NULL);
    dev->pipeline_cache = loaded;
    dev->pipeline_cache_size = len;
    return 1;
}

/* The pipeline cache's data when it grew since it was loaded or saved. */
static void *vk_driver_cache_export(ffnrt_bdevice *dev, size_t *len)
{
    const ffnrt_vk_device_api *a = &dev->api;
    size_t size = 0;
    *len = 0;
    if (!dev->pipeline_cache ||
        a->vkGetPipelineCacheData(dev->device, dev->pipeline_cache, &size, NULL) != VK_SUCCESS || size == 0 ||
        size == dev->pipeline_cache_size)
        return NULL;
    void *data = malloc(size);
    VkResult rc = data ? a->vkGetPipelineCacheData(dev->device, dev->pipeline_cache, &size, data)
                       : VK_ERROR_OUT_OF_HOST_MEMORY;
    if (rc != VK_SUCCESS) { /* VK_INCOMPLETE: it grew meanwhile; next time */
        free(data);
        return NULL;
    }
    dev->pipeline_cache_size = size;
    *len = size;
    return data;
}

static uint64_t vk_validation_messages(const ffnrt_bdevice *dev)
{
    return atomic_load(&((ffnrt_bdevice *)dev)->validation_messages);
}

const ffnrt_backend_ops *ffnrt_vulkan_backend(void)
{
    static const ffnrt_backend_ops ops = {
        .kind = FFNRT_BACKEND_VULKAN,
        .name = "vulkan",
        .prelude = "prelude_glsl.glsl",
        .version_line = "#version 450\n",
        .fp16_feature = "shaderFloat16",
        .items_consecutive = 1, /* prelude_glsl.glsl */
        .load = vk_load,
        .list_devices = vk_list_devices,
        .open = vk_open,
        .close = vk_close,
        .buffer_create = vk_buffer_create,
        .buffer_destroy = vk_buffer_destroy,
        .buffer_write = vk_buffer_write,
        .buffer_read = vk_buffer_read,
        .kernel_build = vk_kernel_build,
        .kernel_destroy = vk_kernel_destroy,
        .begin = vk_begin,
        .dispatch = vk_dispatch,
        .submit = vk_submit,
        .submit_async = vk_submit_async,
        .wait = vk_wait_all,
        .external_begin = vk_external_begin,
        .external_end = vk_external_end,
        .validation_messages = vk_validation_messages,
        .cache_identity = vk_cache_identity,
        .driver_cache_import = vk_driver_cache_import,
        .driver_cache_export = vk_driver_cache_export,
    };
    return &ops;
}

/* ------------------------------------------------------------ interop */

static void vk_read_timestamps(ffnrt_bdevice *dev, uint32_t slot, uint64_t *device_ns)
{
    uint64_t ts[2];
    *device_ns = 0;
    if (dev->timestamps &&
        dev->api.vkGetQueryPoolResults(dev->device, dev->timestamps, 2 * slot, 2, sizeof ts, ts, sizeof ts[0],
                                       VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS) {
        uint64_t ticks = (ts[1] - ts[0]) & dev->timestamp_mask;
        *device_ns = (uint64_t)((double)ticks * dev->timestamp_period);
    }
}

/* Waits for the batch in flight, if any, and adds its time. */
static ffnrt_status vk_wait_flight(ffnrt_bdevice *dev, ffnrt_error *err)
{
    ffnrt_status st = vk_check_stuck(dev, err);
    if (st != FFNRT_OK || !dev->pending)
        return st;
    dev->pending = 0;
    if ((st = vk_wait_fence(dev, err)) != FFNRT_OK)
        return st;
    uint64_t ns;
    vk_read_timestamps(dev, dev->flight, &ns);
    dev->pending_ns += ns;
    return FFNRT_OK;
}

/* Submits the open batch (the recorded asynchronous calls). */
static ffnrt_status vk_submit_open(ffnrt_bdevice *dev, ffnrt_error *err)
{
    ffnrt_status st = vk_end_batch(dev, err);
    if (st == FFNRT_OK)
        st = vk_submit_rec(dev, err);
    if (st == FFNRT_OK) {
        dev->pending = 1;
        dev->rec ^= 1u; /* the next calls record into the other slot */
    }
    return st;
}

/* Everything submitted or recorded has run: the batch in flight, then the
 * open batch (not one an op is still recording). */
static ffnrt_status vk_finish_pending(ffnrt_bdevice *dev, ffnrt_error *err)
{
    ffnrt_status st = vk_wait_flight(dev, err);
    if (st == FFNRT_OK && dev->rec_state == VK_REC_OPEN && (st = vk_submit_open(dev, err)) == FFNRT_OK)
        st = vk_wait_flight(dev, err);
    return st;
}

/* The end of an asynchronous op. An idle device gets the open batch now;
 * a busy one gets it when it is found idle at the end of a later op, at
 * OPEN_BATCH_DISPATCHES, or at the wait: one submission then carries many
 * ops (lavapipe takes 0.2-0.3 ms a submission, more than most decode ops'
 * kernels). */
static ffnrt_status vk_submit_async(ffnrt_bdevice *dev, ffnrt_error *err)
{
    dev->rec_state = VK_REC_OPEN;
    ffnrt_status st = FFNRT_OK;
    if (dev->pending && (dev->api.vkGetFenceStatus(dev->device, dev->slots[dev->flight].fence) == VK_SUCCESS ||
                         dev->open_dispatches >= OPEN_BATCH_DISPATCHES))
        st = vk_wait_flight(dev, err);
    if (st == FFNRT_OK && !dev->pending)
        st = vk_submit_open(dev, err);
    return st;
}

static ffnrt_status vk_wait_all(ffnrt_bdevice *dev, uint64_t *device_ns, ffnrt_error *err)
{
    ffnrt_status st = vk_finish_pending(dev, err); /* a stuck batch is waited for again there */
    *device_ns = dev->pending_ns;
    dev->pending_ns = 0;
    return st;
}

/* While recording, vk_dispatch writes into the app's command buffer and
 * the descriptor pools are kept (record_begin resets them). */
static ffnrt_status vk_external_begin(ffnrt_bdevice *dev, ffnrt_error *err)
{
    if (!dev->recording)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "Vulkan: not recording");
    return FFNRT_OK;
}

static ffnrt_status vk_external_end(ffnrt_bdevice *dev, ffnrt_error *err)
{
    (void)dev;
    (void)err;
    return FFNRT_OK;
}

ffnrt_status ffnrt_vk_record_begin(ffnrt_bdevice *dev, VkCommandBuffer cmd, ffnrt_error *err)
{
    ffnrt_status st = vk_finish_pending(dev, err);
    if (st != FFNRT_OK)
        return st;
    /* The sets of the previous recording are released now: the app has
     * waited for its submissions (documented in ffnrt_vulkan.h). */
    vk_slot *sl = &dev->slots[dev->rec];
    for (uint32_t i = 0; i < sl->pool_used; i++)
        dev->api.vkResetDescriptorPool(dev->device, sl->pools[i], 0);
    sl->pool_used = 0;
    dev->recording = cmd;
    return FFNRT_OK;
}

void ffnrt_vk_record_end(ffnrt_bdevice *dev) { dev->recording = VK_NULL_HANDLE; }

ffnrt_status ffnrt_vk_buffer_wrap(ffnrt_bdevice *dev, VkBuffer buffer, ffnrt_bbuffer **out, ffnrt_error *err)
{
    (void)dev;
    ffnrt_bbuffer *buf = calloc(1, sizeof *buf);
    if (!buf)
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "Vulkan: out of host memory");
    buf->buffer = buffer;
    buf->wrapped = 1;
    *out = buf;
    return FFNRT_OK;
}

ffnrt_status ffnrt_vk_open_external(const ffnrt_vulkan_device *app, const ffnrt_open_options *opts,
                                    ffnrt_bdevice **out, ffnrt_device_info *info, ffnrt_limits *limits,
                                    ffnrt_error *err)
{
    PFN_vkGetInstanceProcAddr gipa = app->get_instance_proc_addr;
    if (!gipa) {
        ffnrt_status st = vk_load(err);
        if (st != FFNRT_OK)
            return st;
        gipa = vkGetInstanceProcAddr; /* volk's, from the system loader */
    }
    ffnrt_bdevice *dev = calloc(1, sizeof *dev);
    if (!dev)
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "Vulkan: out of host memory");
    atomic_init(&dev->validation_messages, 0);
    dev->external = 1;
    dev->force_staging = opts->staging;
    dev->timeout_ns = opts->timeout_ns;
    dev->vi.instance = app->instance;
#define FFNRT_VK_LOAD(name) dev->vi.api.name = (PFN_##name)gipa(app->instance, #name);
    FFNRT_VK_INSTANCE_FUNCTIONS(FFNRT_VK_LOAD)
#undef FFNRT_VK_LOAD
    ffnrt_status st = FFNRT_OK;
#define FFNRT_VK_CHECK(name)                                                                                   \
    if (st == FFNRT_OK && !dev->vi.api.name)                                                                   \
        st = ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,                                                     \
                        "ffnrt_context_create_vulkan: the instance has no %s (is it a Vulkan >= 1.1 instance?)", \
                        #name);
    FFNRT_VK_INSTANCE_FUNCTIONS(FFNRT_VK_CHECK)
#undef FFNRT_VK_CHECK
    const ffnrt_vk_instance_api *ia = &dev->vi.api;
    /* physical_device must be one of the instance's devices that ffnrt can use. */
    VkPhysicalDevice *pds = NULL;
    uint32_t n = 0, index = UINT32_MAX;
    if (st == FFNRT_OK)
        st = vk_compute_devices(&dev->vi, &pds, &n, err);
    for (uint32_t i = 0; st == FFNRT_OK && i < n && index == UINT32_MAX; i++)
        if (pds[i] == app->physical_device)
            index = i;
    free(pds);
    if (st == FFNRT_OK && index == UINT32_MAX)
        st = ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                        "ffnrt_context_create_vulkan: physical_device is not a device of the instance with a "
                        "compute queue and Vulkan >= 1.1");
    uint32_t timestamp_bits = 0;
    if (st == FFNRT_OK) {
        dev->physical = app->physical_device;
        vk_fill_info(&dev->vi, dev->physical, index, info, limits);
        info->fp16_arithmetic = info->fp16_arithmetic && app->shader_float16;
        info->int_dot_packed = app->shader_integer_dot_product ? info->int_dot_packed : 0;
        if (limits)
            limits->int64_words = 0; /* the app's device may not have enabled shaderInt64 */
        dev->max_workgroup_size = info->max_workgroup_size;
        uint32_t nq = 0;
        ia->vkGetPhysicalDeviceQueueFamilyProperties(dev->physical, &nq, NULL);
        VkQueueFamilyProperties *qf = calloc(nq ? nq : 1, sizeof *qf);
        if (!qf)
            st = ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "Vulkan: out of host memory");
        else
            ia->vkGetPhysicalDeviceQueueFamilyProperties(dev->physical, &nq, qf);
        if (st == FFNRT_OK && (app->queue_family_index >= nq ||
                               !(qf[app->queue_family_index].queueFlags & VK_QUEUE_COMPUTE_BIT)))
            st = ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                            "ffnrt_context_create_vulkan: queue family %u %s", app->queue_family_index,
                            app->queue_family_index >= nq ? "does not exist" : "has no compute");
        if (st == FFNRT_OK)
            timestamp_bits = qf[app->queue_family_index].timestampValidBits;
        free(qf);
    }
    if (st != FFNRT_OK) {
        free(dev);
        return st;
    }
    dev->queue_family = app->queue_family_index;
    dev->device = app->device;
    dev->queue = app->queue;
#define FFNRT_VK_LOAD(name) dev->api.name = (PFN_##name)ia->vkGetDeviceProcAddr(dev->device, #name);
    FFNRT_VK_DEVICE_FUNCTIONS(FFNRT_VK_LOAD)
#undef FFNRT_VK_LOAD
#define FFNRT_VK_CHECK(name)                                                                                   \
    if (st == FFNRT_OK && !dev->api.name)                                                                      \
        st = ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_context_create_vulkan: the device has no %s", \
                        #name);
    FFNRT_VK_DEVICE_FUNCTIONS(FFNRT_VK_CHECK)
#undef FFNRT_VK_CHECK
    if (st != FFNRT_OK) {
        free(dev);
        return st;
    }
    st = vk_device_objects(dev, info, timestamp_bits, err);
    if (st != FFNRT_OK) {
        vk_close(dev);
        return st;
    }
    *out = dev;
    return FFNRT_OK;
}
