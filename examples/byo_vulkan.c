/* Bring your own Vulkan device: an app that owns its instance, device,
 * queue, buffers and command buffers hands them to ffnrt, which records a
 * gated (SwiGLU) FFN into the app's command buffer; the app submits, reads
 * its buffer back and checks the result against a CPU reference.
 *
 * FFNRT_VALIDATION=1 makes the app enable the Khronos validation layer;
 * any message fails the run. */
#include <ffnrt.h>
#include <ffnrt_vulkan.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define D_MODEL 256
#define HIDDEN 688
#define TOKENS 8

static unsigned validation_messages;

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)types;
    (void)user;
    if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        validation_messages++;
        fprintf(stderr, "byo_vulkan: Vulkan validation: %s\n", data->pMessage);
    }
    return VK_FALSE;
}

static float *random_matrix(size_t n, unsigned seed, float scale)
{
    float *m = malloc(n * sizeof *m);
    for (size_t i = 0; m && i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        m[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * scale;
    }
    return m;
}

/* y = Wo·(silu(Wg·x) ⊙ Wv·x), in double. */
static void reference(const float *wg, const float *wv, const float *wo, const float *x, double *y)
{
    static double h[HIDDEN];
    for (int t = 0; t < TOKENS; t++) {
        for (int j = 0; j < HIDDEN; j++) {
            double g = 0, v = 0;
            for (int k = 0; k < D_MODEL; k++) {
                g += (double)wg[j * D_MODEL + k] * x[t * D_MODEL + k];
                v += (double)wv[j * D_MODEL + k] * x[t * D_MODEL + k];
            }
            h[j] = g / (1.0 + exp(-g)) * v;
        }
        for (int i = 0; i < D_MODEL; i++) {
            double s = 0;
            for (int j = 0; j < HIDDEN; j++)
                s += (double)wo[i * HIDDEN + j] * h[j];
            y[t * D_MODEL + i] = s;
        }
    }
}

static void barrier(VkCommandBuffer cmd, VkPipelineStageFlags src, VkAccessFlags src_access, VkPipelineStageFlags dst,
                    VkAccessFlags dst_access)
{
    VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, src_access, dst_access};
    vkCmdPipelineBarrier(cmd, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

int main(void)
{
    int rc = 1;
    const char *v = getenv("FFNRT_VALIDATION");
    int validate = v && strcmp(v, "0") != 0;
    float *wg = random_matrix((size_t)HIDDEN * D_MODEL, 1, 0.1f);
    float *wv = random_matrix((size_t)HIDDEN * D_MODEL, 2, 0.1f);
    float *wo = random_matrix((size_t)D_MODEL * HIDDEN, 3, 0.05f);
    float *x = random_matrix((size_t)TOKENS * D_MODEL, 4, 2.0f);
    double *ref = malloc(sizeof(double) * TOKENS * D_MODEL);
    VkInstance instance = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkCommandPool pool = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    ffnrt_context *ctx = NULL;
    ffnrt_ffn *layer = NULL;
    if (!wg || !wv || !wo || !x || !ref)
        goto done;

    /* ---- the app's own Vulkan objects */
    VkDebugUtilsMessengerCreateInfoEXT dbg = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
        .pfnUserCallback = on_message,
    };
    const char *layer_name = "VK_LAYER_KHRONOS_validation", *ext_name = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkApplicationInfo app_info = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "byo_vulkan",
                                  .apiVersion = VK_API_VERSION_1_1};
    VkInstanceCreateInfo ici = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = validate ? &dbg : NULL,
        .pApplicationInfo = &app_info,
        .enabledLayerCount = validate ? 1 : 0,
        .ppEnabledLayerNames = &layer_name,
        .enabledExtensionCount = validate ? 1 : 0,
        .ppEnabledExtensionNames = &ext_name,
    };
    if (vkCreateInstance(&ici, NULL, &instance) != VK_SUCCESS) {
        fprintf(stderr, "byo_vulkan: no Vulkan instance\n");
        instance = VK_NULL_HANDLE;
        goto done;
    }
    if (validate) {
        PFN_vkCreateDebugUtilsMessengerEXT create =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT");
        if (create)
            create(instance, &dbg, NULL, &messenger);
    }
    uint32_t n = 1;
    VkPhysicalDevice physical;
    VkResult vr = vkEnumeratePhysicalDevices(instance, &n, &physical);
    if ((vr != VK_SUCCESS && vr != VK_INCOMPLETE) || n == 0) {
        fprintf(stderr, "byo_vulkan: no Vulkan device\n");
        goto done;
    }
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(physical, &props);
    uint32_t nq = 0, family = UINT32_MAX;
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &nq, NULL);
    VkQueueFamilyProperties qf[16];
    nq = nq > 16 ? 16 : nq;
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &nq, qf);
    for (uint32_t i = 0; i < nq && family == UINT32_MAX; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
            family = i;
    float priority = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &priority};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qci};
    if (family == UINT32_MAX || vkCreateDevice(physical, &dci, NULL, &device) != VK_SUCCESS) {
        fprintf(stderr, "byo_vulkan: no device with a compute queue\n");
        device = VK_NULL_HANDLE;
        goto done;
    }
    VkQueue queue;
    vkGetDeviceQueue(device, family, 0, &queue);

    /* One buffer for x and y, y at an offset the device accepts. */
    VkDeviceSize align = props.limits.minStorageBufferOffsetAlignment;
    VkDeviceSize io_bytes = sizeof(float) * TOKENS * D_MODEL;
    VkDeviceSize y_offset = (io_bytes + align - 1) / align * align;
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = y_offset + io_bytes,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT};
    if (vkCreateBuffer(device, &bci, NULL, &buffer) != VK_SUCCESS)
        goto done;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device, buffer, &req);
    VkPhysicalDeviceMemoryProperties mem;
    vkGetPhysicalDeviceMemoryProperties(physical, &mem);
    VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < mem.memoryTypeCount && type == UINT32_MAX; i++)
        if ((req.memoryTypeBits & (1u << i)) && (mem.memoryTypes[i].propertyFlags & want) == want)
            type = i;
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                                .memoryTypeIndex = type};
    void *mapped = NULL;
    if (type == UINT32_MAX || vkAllocateMemory(device, &mai, NULL, &memory) != VK_SUCCESS ||
        vkBindBufferMemory(device, buffer, memory, 0) != VK_SUCCESS ||
        vkMapMemory(device, memory, 0, VK_WHOLE_SIZE, 0, &mapped) != VK_SUCCESS)
        goto done;
    memcpy(mapped, x, io_bytes);

    /* ---- ffnrt on the app's device */
    ffnrt_vulkan_device app = FFNRT_VULKAN_DEVICE_INIT;
    app.instance = instance;
    app.physical_device = physical;
    app.device = device;
    app.queue_family_index = family;
    app.queue = queue;
    app.get_instance_proc_addr = vkGetInstanceProcAddr;
    if (ffnrt_context_create_vulkan(&app, NULL, &ctx) != FFNRT_OK)
        goto done;
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, D_MODEL, HIDDEN);
    desc.glu = (ffnrt_glu_desc)FFNRT_GLU_DESC_INIT(FFNRT_SWIGLU);
    ffnrt_ffn_weights weights = {0};
    weights.w_gate = wg;
    weights.w_value = wv;
    weights.w_out = wo;
    if (ffnrt_ffn_create(ctx, &desc, &weights, &layer) != FFNRT_OK)
        goto done;
    int64_t shape[2] = {TOKENS, D_MODEL};
    ffnrt_tensor *tx, *ty; /* wrappers: no copy; freed with the context */
    if (ffnrt_tensor_wrap_vulkan_buffer(ctx, buffer, 0, io_bytes, FFNRT_DTYPE_F32, 2, shape, &tx) != FFNRT_OK ||
        ffnrt_tensor_wrap_vulkan_buffer(ctx, buffer, y_offset, io_bytes, FFNRT_DTYPE_F32, 2, shape, &ty) != FFNRT_OK)
        goto done;

    /* ---- the app's command buffer: its barrier, ffnrt's dispatches, its barrier */
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, .queueFamilyIndex = family};
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkCommandBuffer cmd;
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1};
    VkCommandBufferBeginInfo cbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                    .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    if (vkCreateCommandPool(device, &pci, NULL, &pool) != VK_SUCCESS ||
        vkCreateFence(device, &fci, NULL, &fence) != VK_SUCCESS)
        goto done;
    cai.commandPool = pool;
    if (vkAllocateCommandBuffers(device, &cai, &cmd) != VK_SUCCESS || vkBeginCommandBuffer(cmd, &cbi) != VK_SUCCESS)
        goto done;
    barrier(cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    if (ffnrt_vulkan_record_begin(ctx, cmd) != FFNRT_OK || ffnrt_ffn_forward(layer, tx, ty) != FFNRT_OK ||
        ffnrt_vulkan_record_end(ctx) != FFNRT_OK)
        goto done;
    barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    if (vkEndCommandBuffer(cmd) != VK_SUCCESS || vkQueueSubmit(queue, 1, &si, fence) != VK_SUCCESS ||
        vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX) != VK_SUCCESS)
        goto done;

    /* ---- the app reads its own buffer */
    const float *y = (const float *)((const char *)mapped + y_offset);
    reference(wg, wv, wo, x, ref);
    double max_err = 0, max_ref = 0;
    for (int i = 0; i < TOKENS * D_MODEL; i++) {
        double e = fabs(y[i] - ref[i]);
        max_err = e > max_err ? e : max_err;
        max_ref = fabs(ref[i]) > max_ref ? fabs(ref[i]) : max_ref;
    }
    printf("byo_vulkan: SwiGLU %d x %d, %d tokens on %s, recorded into the app's command buffer: "
           "max |error| %.3g (max |y| %.3g)\n",
           D_MODEL, HIDDEN, TOKENS, props.deviceName, max_err, max_ref);
    rc = max_err <= 1e-4 * max_ref ? 0 : 1;
    if (rc)
        fprintf(stderr, "byo_vulkan: error too large\n");
done:
    if (rc && ffnrt_last_error_message()[0])
        fprintf(stderr, "byo_vulkan: %s\n", ffnrt_last_error_message());
    ffnrt_ffn_destroy(layer);
    ffnrt_context_destroy(ctx); /* ffnrt's objects only: everything below is still the app's */
    if (device) {
        vkDestroyFence(device, fence, NULL);
        vkDestroyCommandPool(device, pool, NULL);
        vkDestroyBuffer(device, buffer, NULL);
        vkFreeMemory(device, memory, NULL);
        vkDestroyDevice(device, NULL);
    }
    if (messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT");
        destroy(instance, messenger, NULL);
    }
    if (instance)
        vkDestroyInstance(instance, NULL);
    free(wg);
    free(wv);
    free(wo);
    free(x);
    free(ref);
    if (validation_messages) {
        fprintf(stderr, "byo_vulkan: %u validation messages\n", validation_messages);
        rc = 1;
    }
    return rc;
}
