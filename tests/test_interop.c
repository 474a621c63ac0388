/* Interop: ffnrt on the app's own Vulkan device and OpenCL context, the
 * app's buffers as tensors, ops recorded into the app's command buffer or
 * enqueued with its events, asynchronous submission on ffnrt's own queue,
 * and "ffnrt never destroys what it did not create".
 *
 * The tests play the app: they create their own VkInstance (with the
 * validation layer, counting its messages, unless FFNRT_TEST_VALIDATION
 * is 0 or outside: Wine's vulkan-1.dll has none) and VkDevice, and their
 * own cl_context and queue, linking the loaders directly as an app would
 * (on Windows through import libraries for vulkan-1.dll and OpenCL.dll,
 * cmake/windows). */
#define CL_TARGET_OPENCL_VERSION 120
#include "ffnrt_opencl.h"
#include "ffnrt_vulkan.h"

#include "device_fixture.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the app */

static atomic_uint app_messages;

static VKAPI_ATTR VkBool32 VKAPI_CALL app_debug(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT types,
                                                const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)types;
    (void)user;
    if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        atomic_fetch_add(&app_messages, 1);
        fprintf(stderr, "app: Vulkan validation: %s\n", data->pMessage);
    }
    return VK_FALSE;
}

typedef struct app_vk {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice physical;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memory;
    VkDevice device;
    uint32_t family;
    VkQueue queue;
    VkCommandPool pool;
    VkFence fence;
} app_vk;

typedef struct app_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    void *mapped;
    VkDeviceSize size;
} app_buffer;

/* enable_f16: enable shaderFloat16 where the device has it; *has_f16 says
 * whether it did (may be NULL). */
static void app_vk_create_f16(app_vk *app, int enable_f16, int *has_f16)
{
    memset(app, 0, sizeof *app);
    VkDebugUtilsMessengerCreateInfoEXT dbg = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
        .pfnUserCallback = app_debug,
    };
    const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
    const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkApplicationInfo ai = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "test_interop",
                            .apiVersion = VK_API_VERSION_1_1};
    VkInstanceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = &dbg,
        .pApplicationInfo = &ai,
        .enabledLayerCount = 1,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = 1,
        .ppEnabledExtensionNames = exts,
    };
    if (!test_validation_wanted()) {
        ci.pNext = NULL;
        ci.enabledLayerCount = ci.enabledExtensionCount = 0;
    }
    cr_assert_eq(vkCreateInstance(&ci, NULL, &app->instance), VK_SUCCESS, "the app's instance (validation layer?)");
    if (test_validation_wanted()) {
        PFN_vkCreateDebugUtilsMessengerEXT create_messenger =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(app->instance, "vkCreateDebugUtilsMessengerEXT");
        cr_assert(create_messenger);
        cr_assert_eq(create_messenger(app->instance, &dbg, NULL, &app->messenger), VK_SUCCESS);
    }
    uint32_t n = 8;
    VkPhysicalDevice pds[8];
    vkEnumeratePhysicalDevices(app->instance, &n, pds);
    cr_assert_gt(n, 0, "the app finds no Vulkan device");
    app->physical = pds[0];
    vkGetPhysicalDeviceProperties(app->physical, &app->props);
    vkGetPhysicalDeviceMemoryProperties(app->physical, &app->memory);
    uint32_t nq = 16;
    VkQueueFamilyProperties qf[16];
    vkGetPhysicalDeviceQueueFamilyProperties(app->physical, &nq, qf);
    app->family = UINT32_MAX;
    for (uint32_t i = 0; i < nq && app->family == UINT32_MAX; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
            app->family = i;
    cr_assert_neq(app->family, UINT32_MAX);
    float priority = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = app->family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &priority};
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f16};
    int use_f16 = 0;
    if (enable_f16 && app->props.apiVersion >= VK_API_VERSION_1_2) {
        vkGetPhysicalDeviceFeatures2(app->physical, &f2);
        use_f16 = f16.shaderFloat16 == VK_TRUE;
        f16 = (VkPhysicalDeviceShaderFloat16Int8Features){
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES, .shaderFloat16 = VK_TRUE};
    }
    if (has_f16)
        *has_f16 = use_f16;
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = use_f16 ? &f16 : NULL,
                              .queueCreateInfoCount = 1, .pQueueCreateInfos = &qci};
    cr_assert_eq(vkCreateDevice(app->physical, &dci, NULL, &app->device), VK_SUCCESS);
    vkGetDeviceQueue(app->device, app->family, 0, &app->queue);
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = app->family};
    cr_assert_eq(vkCreateCommandPool(app->device, &pci, NULL, &app->pool), VK_SUCCESS);
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    cr_assert_eq(vkCreateFence(app->device, &fci, NULL, &app->fence), VK_SUCCESS);
}

static void app_vk_create(app_vk *app) { app_vk_create_f16(app, 0, NULL); }

static ffnrt_vulkan_device app_vk_handles(const app_vk *app)
{
    ffnrt_vulkan_device d = FFNRT_VULKAN_DEVICE_INIT;
    d.instance = app->instance;
    d.physical_device = app->physical;
    d.device = app->device;
    d.queue_family_index = app->family;
    d.queue = app->queue;
    d.get_instance_proc_addr = vkGetInstanceProcAddr; /* the app's loader */
    return d;
}

/* Destroys the app's objects in order (the layer reports any object left
 * on the device, ffnrt's included) and asserts the layer stayed silent. */
static void app_vk_destroy(app_vk *app)
{
    vkDestroyFence(app->device, app->fence, NULL);
    vkDestroyCommandPool(app->device, app->pool, NULL);
    vkDestroyDevice(app->device, NULL);
    if (app->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(app->instance, "vkDestroyDebugUtilsMessengerEXT");
        destroy_messenger(app->instance, app->messenger, NULL);
    }
    vkDestroyInstance(app->instance, NULL);
    cr_assert_eq(atomic_load(&app_messages), 0, "the validation layer reported %u messages (see stderr)",
                 atomic_load(&app_messages));
}

static void app_buffer_create(app_vk *app, VkDeviceSize size, app_buffer *b)
{
    memset(b, 0, sizeof *b);
    b->size = size;
    VkBufferCreateInfo bci = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
    };
    cr_assert_eq(vkCreateBuffer(app->device, &bci, NULL, &b->buffer), VK_SUCCESS);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(app->device, b->buffer, &req);
    VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < app->memory.memoryTypeCount && type == UINT32_MAX; i++)
        if ((req.memoryTypeBits & (1u << i)) && (app->memory.memoryTypes[i].propertyFlags & want) == want)
            type = i;
    cr_assert_neq(type, UINT32_MAX);
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                                .memoryTypeIndex = type};
    cr_assert_eq(vkAllocateMemory(app->device, &mai, NULL, &b->memory), VK_SUCCESS);
    cr_assert_eq(vkBindBufferMemory(app->device, b->buffer, b->memory, 0), VK_SUCCESS);
    cr_assert_eq(vkMapMemory(app->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped), VK_SUCCESS);
}

static void app_buffer_destroy(app_vk *app, app_buffer *b)
{
    vkDestroyBuffer(app->device, b->buffer, NULL);
    vkFreeMemory(app->device, b->memory, NULL);
}

static VkCommandBuffer app_begin(app_vk *app)
{
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = app->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkCommandBuffer cmd;
    cr_assert_eq(vkAllocateCommandBuffers(app->device, &ai, &cmd), VK_SUCCESS);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    cr_assert_eq(vkBeginCommandBuffer(cmd, &bi), VK_SUCCESS);
    return cmd;
}

static void app_barrier(VkCommandBuffer cmd, VkPipelineStageFlags src, VkAccessFlags src_access,
                        VkPipelineStageFlags dst, VkAccessFlags dst_access)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = src_access,
                          .dstAccessMask = dst_access};
    vkCmdPipelineBarrier(cmd, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* Ends, submits, waits for and frees the command buffer. */
static void app_submit(app_vk *app, VkCommandBuffer cmd)
{
    cr_assert_eq(vkEndCommandBuffer(cmd), VK_SUCCESS);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    cr_assert_eq(vkQueueSubmit(app->queue, 1, &si, app->fence), VK_SUCCESS);
    cr_assert_eq(vkWaitForFences(app->device, 1, &app->fence, VK_TRUE, UINT64_MAX), VK_SUCCESS);
    vkResetFences(app->device, 1, &app->fence);
    vkFreeCommandBuffers(app->device, app->pool, 1, &cmd);
}

/* The app still owns a working device, queue and buffer: it fills the
 * buffer on its queue and reads the value back. */
static void app_vk_still_works(app_vk *app, app_buffer *b)
{
    VkCommandBuffer cmd = app_begin(app);
    vkCmdFillBuffer(cmd, b->buffer, 0, 64, 0x3f800000u); /* 1.0f */
    app_barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                VK_ACCESS_HOST_READ_BIT);
    app_submit(app, cmd);
    cr_assert_eq(((float *)b->mapped)[15], 1.0f, "the app's buffer no longer works");
}

static VkDeviceSize round_up(VkDeviceSize v, VkDeviceSize a) { return (v + a - 1) / a * a; }

/* ------------------------------------------------- data and references */

static void fill(float *v, size_t n, unsigned seed, float scale)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * scale;
    }
}

static double gelu_ref(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }

static void check_gelu(const float *x, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double r = gelu_ref(x[i]);
        cr_assert(fabs(y[i] - r) <= 1e-6 + 1e-5 * fabs(r), "gelu(%g) = %g, expected %g (element %zu)", x[i], y[i], r,
                  i);
    }
}

#define D_MODEL 32
#define HIDDEN 48
#define TOKENS 5

typedef struct ffn_case {
    float wg[HIDDEN * D_MODEL], wv[HIDDEN * D_MODEL], wo[D_MODEL * HIDDEN];
    float x[TOKENS * D_MODEL];
    double y[TOKENS * D_MODEL];
} ffn_case;

/* SwiGLU FFN weights, input and its double-precision output. */
static ffn_case *ffn_case_make(void)
{
    ffn_case *c = calloc(1, sizeof *c);
    cr_assert(c);
    fill(c->wg, HIDDEN * D_MODEL, 11, 0.5f);
    fill(c->wv, HIDDEN * D_MODEL, 12, 0.5f);
    fill(c->wo, D_MODEL * HIDDEN, 13, 0.3f);
    fill(c->x, TOKENS * D_MODEL, 14, 2.0f);
    for (int t = 0; t < TOKENS; t++) {
        double h[HIDDEN];
        for (int j = 0; j < HIDDEN; j++) {
            double g = 0, v = 0;
            for (int k = 0; k < D_MODEL; k++) {
                g += (double)c->wg[j * D_MODEL + k] * c->x[t * D_MODEL + k];
                v += (double)c->wv[j * D_MODEL + k] * c->x[t * D_MODEL + k];
            }
            h[j] = g / (1.0 + exp(-g)) * v;
        }
        for (int i = 0; i < D_MODEL; i++) {
            double s = 0;
            for (int j = 0; j < HIDDEN; j++)
                s += (double)c->wo[i * HIDDEN + j] * h[j];
            c->y[t * D_MODEL + i] = s;
        }
    }
    return c;
}

static ffnrt_ffn *ffn_layer(ffnrt_context *ctx, const ffn_case *c)
{
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, D_MODEL, HIDDEN);
    desc.glu = (ffnrt_glu_desc)FFNRT_GLU_DESC_INIT(FFNRT_SWIGLU);
    ffnrt_ffn_weights w = {0};
    w.w_gate = c->wg;
    w.w_value = c->wv;
    w.w_out = c->wo;
    ffnrt_ffn *layer = NULL;
    cr_assert_eq(ffnrt_ffn_create(ctx, &desc, &w, &layer), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    return layer;
}

static void check_ffn(const ffn_case *c, const float *y)
{
    double num = 0, den = 0;
    for (int i = 0; i < TOKENS * D_MODEL; i++) {
        num += (y[i] - c->y[i]) * (y[i] - c->y[i]);
        den += c->y[i] * c->y[i];
    }
    cr_assert(sqrt(num / den) < 1e-5, "FFN normwise relative error %g", sqrt(num / den));
}

#define OK(ctx, call) cr_assert_eq((call), FFNRT_OK, "%s: %s", #call, ffnrt_last_error_message())
#define EXPECT(call, status)                                                                                   \
    do {                                                                                                       \
        ffnrt_status st_ = (call);                                                                             \
        cr_assert_eq(st_, (status), "%s gave %s, expected %s (%s)", #call, ffnrt_status_string(st_),         \
                     ffnrt_status_string(status), ffnrt_last_error_message());                               \
        cr_assert_neq(ffnrt_last_error_message()[0], '\0', "%s: no message", #call);                        \
    } while (0)

/* -------------------------------------------------------------- Vulkan */

Test(vulkan, context_from_app_handles)
{
    app_vk app;
    app_vk_create(&app);
    ffnrt_vulkan_device d = app_vk_handles(&app);
    ffnrt_context *ctx = NULL;
    OK(ctx, ffnrt_context_create_vulkan(&d, NULL, &ctx));
    ffnrt_device_info info;
    OK(ctx, ffnrt_context_get_device_info(ctx, &info));
    cr_assert_eq(info.backend, FFNRT_BACKEND_VULKAN);
    cr_assert_str_eq(info.name, app.props.deviceName);
    cr_assert_eq(info.fp16_arithmetic, 0, "the app did not say it enabled shaderFloat16");
    /* Nor packed dot products, which lavapipe has but the app did not
     * enable: the integer path must not emit OpSDot on this device. */
    cr_assert_eq(info.int_dot_packed, 0, "the app did not say it enabled shaderIntegerDotProduct");

    /* ffnrt's own tensors on the app's device, with ffnrt submitting. */
    float x[1000], y[1000];
    fill(x, 1000, 1, 12.0f);
    ffnrt_tensor *tx = test_tensor_1d(ctx, 1000, x), *ty = test_tensor_1d(ctx, 1000, NULL);
    ffnrt_activation_desc gelu = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_GELU);
    OK(ctx, ffnrt_activation_forward(ctx, &gelu, tx, ty));
    test_read(ty, y, 1000);
    check_gelu(x, y, 1000);
    uint64_t ns = 0;
    OK(ctx, ffnrt_context_last_op_time(ctx, &ns));
    cr_assert_gt(ns, 0, "no device time on the app's queue");

    /* And without the app's loader entry point: ffnrt's own loader. */
    ffnrt_context *ctx2 = NULL;
    d.get_instance_proc_addr = NULL;
    OK(ctx2, ffnrt_context_create_vulkan(&d, NULL, &ctx2));
    ffnrt_context_destroy(ctx2);

    /* Never destroys what it did not create: the app's device, queue and
     * a buffer keep working, and destroying them later raises nothing. */
    ffnrt_context_destroy(ctx);
    app_buffer b;
    app_buffer_create(&app, 256, &b);
    app_vk_still_works(&app, &b);
    app_buffer_destroy(&app, &b);
    app_vk_destroy(&app);
}

/* fp16 arithmetic only where the app says it enabled shaderFloat16. */
Test(vulkan, float16_as_the_app_enabled_it)
{
    app_vk app;
    int has_f16 = 0;
    app_vk_create_f16(&app, 1, &has_f16);
    if (!has_f16) {
        app_vk_destroy(&app);
        cr_skip_test("the device has no shaderFloat16");
    }
    ffnrt_vulkan_device d = app_vk_handles(&app);
    int64_t shape[1] = {256};
    uint16_t x[256], y[256];
    for (int i = 0; i < 256; i++)
        x[i] = ffnrt_f32_to_f16((float)(i - 128) / 16.0f);
    ffnrt_activation_desc silu = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_SILU);
    silu.compute = FFNRT_COMPUTE_F16;
    for (int say = 0; say < 2; say++) {
        d.shader_float16 = say ? VK_TRUE : VK_FALSE;
        ffnrt_context *ctx = NULL;
        OK(ctx, ffnrt_context_create_vulkan(&d, NULL, &ctx));
        ffnrt_device_info info;
        OK(ctx, ffnrt_context_get_device_info(ctx, &info));
        cr_assert_eq(info.fp16_arithmetic, say);
        ffnrt_tensor *t;
        OK(ctx, ffnrt_tensor_create(ctx, FFNRT_DTYPE_F16, 1, shape, &t));
        OK(ctx, ffnrt_tensor_write(t, x, sizeof x));
        if (!say) {
            EXPECT(ffnrt_activation_forward(ctx, &silu, t, t), FFNRT_ERROR_UNSUPPORTED);
        } else {
            OK(ctx, ffnrt_activation_forward(ctx, &silu, t, t));
            OK(ctx, ffnrt_tensor_read(t, y, sizeof y));
            for (int i = 0; i < 256; i++) {
                double v = ffnrt_f16_to_f32(x[i]), r = v / (1.0 + exp(-v));
                cr_assert(fabs(ffnrt_f16_to_f32(y[i]) - r) <= 2e-3 * fabs(r) + 1e-6, "silu(%g) = %g, expected %g", v,
                          ffnrt_f16_to_f32(y[i]), r);
            }
        }
        ffnrt_context_destroy(ctx);
    }
    app_vk_destroy(&app);
}

/* An activation and a gated FFN on the app's buffers at nonzero offsets,
 * recorded into the app's command buffer and submitted by the app. */
static void vulkan_recorded(const ffnrt_context_options *options)
{
    app_vk app;
    app_vk_create(&app);
    ffnrt_vulkan_device d = app_vk_handles(&app);
    ffnrt_context *ctx = NULL;
    OK(ctx, ffnrt_context_create_vulkan(&d, options, &ctx));
    ffn_case *c = ffn_case_make();
    ffnrt_ffn *layer = ffn_layer(ctx, c); /* weights in ffnrt's own tensors */

    /* One app buffer holds four tensors, each at an aligned, nonzero offset. */
    VkDeviceSize align = app.props.limits.minStorageBufferOffsetAlignment;
    enum { N = 777 };
    VkDeviceSize act_bytes = N * sizeof(float), ffn_bytes = sizeof c->x;
    VkDeviceSize off_x = round_up(64, align), off_y = round_up(off_x + act_bytes + 4, align);
    VkDeviceSize off_fx = round_up(off_y + act_bytes, align), off_fy = round_up(off_fx + ffn_bytes, align);
    app_buffer b;
    app_buffer_create(&app, off_fy + ffn_bytes + 64, &b);
    memset(b.mapped, 0xff, b.size);
    float x[N];
    fill(x, N, 2, 10.0f);
    memcpy((char *)b.mapped + off_x, x, act_bytes);
    memcpy((char *)b.mapped + off_fx, c->x, ffn_bytes);

    int64_t act_shape[2] = {7, 111}, ffn_shape[2] = {TOKENS, D_MODEL};
    ffnrt_tensor *tx, *ty, *fx, *fy;
    OK(ctx, ffnrt_tensor_wrap_vulkan_buffer(ctx, b.buffer, off_x, act_bytes, FFNRT_DTYPE_F32, 2, act_shape, &tx));
    OK(ctx, ffnrt_tensor_wrap_vulkan_buffer(ctx, b.buffer, off_y, act_bytes, FFNRT_DTYPE_F32, 2, act_shape, &ty));
    OK(ctx, ffnrt_tensor_wrap_vulkan_buffer(ctx, b.buffer, off_fx, ffn_bytes, FFNRT_DTYPE_F32, 2, ffn_shape, &fx));
    OK(ctx, ffnrt_tensor_wrap_vulkan_buffer(ctx, b.buffer, off_fy, ffn_bytes, FFNRT_DTYPE_F32, 2, ffn_shape, &fy));

    VkCommandBuffer cmd = app_begin(&app);
    /* The app's writes (here the host's) before ffnrt's shader reads. */
    app_barrier(cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    OK(ctx, ffnrt_vulkan_record_begin(ctx, cmd));
    ffnrt_activation_desc gelu = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_GELU);
    OK(ctx, ffnrt_activation_forward(ctx, &gelu, tx, ty));
    OK(ctx, ffnrt_ffn_forward(layer, fx, fy));
    OK(ctx, ffnrt_vulkan_record_end(ctx));
    /* Nothing ran yet: the app submits. */
    cr_assert_eq(((uint32_t *)((char *)b.mapped + off_y))[0], 0xffffffffu, "the op ran before the app submitted");
    uint64_t ns = 1;
    OK(ctx, ffnrt_context_last_op_time(ctx, &ns));
    cr_assert_eq(ns, 0);
    /* ffnrt's shader writes before the app's reads (here the host's). */
    app_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                VK_ACCESS_HOST_READ_BIT);
    app_submit(&app, cmd);

    check_gelu(x, (const float *)((char *)b.mapped + off_y), N);
    check_ffn(c, (const float *)((char *)b.mapped + off_fy));
    /* The bytes between and around the tensors are untouched. */
    cr_assert_eq(((uint32_t *)b.mapped)[0], 0xffffffffu);
    cr_assert_eq(*(uint32_t *)((char *)b.mapped + off_y + act_bytes), 0xffffffffu);
    /* ffnrt's host reads of a wrapped tensor go through its staging copy. */
    float y[N];
    test_read(ty, y, N);
    cr_assert_eq(memcmp(y, (char *)b.mapped + off_y, act_bytes), 0);
    OK(ctx, ffnrt_tensor_write(ty, x, act_bytes));
    cr_assert_eq(memcmp(x, (char *)b.mapped + off_y, act_bytes), 0);

    /* A second recording reuses ffnrt's descriptor pools (the app waited). */
    cmd = app_begin(&app);
    OK(ctx, ffnrt_vulkan_record_begin(ctx, cmd));
    OK(ctx, ffnrt_activation_forward(ctx, &gelu, tx, ty));
    OK(ctx, ffnrt_vulkan_record_end(ctx));
    app_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                VK_ACCESS_HOST_READ_BIT);
    app_submit(&app, cmd);
    check_gelu(x, (const float *)((char *)b.mapped + off_y), N);

    ffnrt_tensor_destroy(tx); /* the wrapper only */
    ffnrt_ffn_destroy(layer);
    ffnrt_context_destroy(ctx); /* frees the other wrappers, never the buffer */
    app_vk_still_works(&app, &b);
    app_buffer_destroy(&app, &b);
    app_vk_destroy(&app);
    free(c);
}

Test(vulkan, wrapped_buffers_recorded) { vulkan_recorded(NULL); }

/* A phone's limits: every op split over many dispatches, each binding at
 * an aligned offset past the wrapped tensor's own. */
Test(vulkan, wrapped_buffers_recorded_split)
{
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.max_buffer_range = 1024;
    o.max_workgroup_count = 2;
    vulkan_recorded(&o);
}

Test(vulkan, bad_input)
{
    app_vk app;
    app_vk_create(&app);
    ffnrt_vulkan_device d = app_vk_handles(&app);
    ffnrt_context *ctx = NULL;
    EXPECT(ffnrt_context_create_vulkan(NULL, NULL, &ctx), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_context_create_vulkan(&d, NULL, NULL), FFNRT_ERROR_INVALID_ARGUMENT);
    ffnrt_vulkan_device bad = d;
    bad.device = VK_NULL_HANDLE;
    EXPECT(ffnrt_context_create_vulkan(&bad, NULL, &ctx), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_null(ctx);
    bad = d;
    bad.queue_family_index = 99;
    EXPECT(ffnrt_context_create_vulkan(&bad, NULL, &ctx), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_null(ctx);

    OK(ctx, ffnrt_context_create_vulkan(&d, NULL, &ctx));
    VkDeviceSize align = app.props.limits.minStorageBufferOffsetAlignment;
    app_buffer b;
    app_buffer_create(&app, 4096, &b);
    int64_t shape[1] = {100};
    ffnrt_tensor *t = NULL;
    EXPECT(ffnrt_tensor_wrap_vulkan_buffer(NULL, b.buffer, 0, 400, FFNRT_DTYPE_F32, 1, shape, &t),
           FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_tensor_wrap_vulkan_buffer(ctx, VK_NULL_HANDLE, 0, 400, FFNRT_DTYPE_F32, 1, shape, &t),
           FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_tensor_wrap_vulkan_buffer(ctx, b.buffer, 0, 396, FFNRT_DTYPE_F32, 1, shape, &t),
           FFNRT_ERROR_SHAPE_MISMATCH); /* range too small for the shape */
    shape[0] = 101;
    EXPECT(ffnrt_tensor_wrap_vulkan_buffer(ctx, b.buffer, 0, 202, FFNRT_DTYPE_F16, 1, shape, &t),
           FFNRT_ERROR_SHAPE_MISMATCH); /* 202 bytes, but kernels touch 204 */
    shape[0] = 100;
    if (align > 1)
        EXPECT(ffnrt_tensor_wrap_vulkan_buffer(ctx, b.buffer, align / 2, 400, FFNRT_DTYPE_F32, 1, shape, &t),
               FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_tensor_wrap_vulkan_buffer(ctx, b.buffer, 0, VK_WHOLE_SIZE, FFNRT_DTYPE_F32, 1, shape, &t),
           FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_tensor_wrap_vulkan_buffer(ctx, b.buffer, 0, 400, (ffnrt_dtype)7, 1, shape, &t),
           FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_null(t);
    /* Two wraps of one buffer: the same range is the same tensor (in place
     * is fine), a range that overlaps another way is refused. */
    ffnrt_tensor *wx = NULL, *same = NULL, *shifted = NULL;
    VkDeviceSize shift = round_up(4, align);
    cr_assert_lt(shift, 400);
    OK(ctx, ffnrt_tensor_wrap_vulkan_buffer(ctx, b.buffer, 0, 400, FFNRT_DTYPE_F32, 1, shape, &wx));
    OK(ctx, ffnrt_tensor_wrap_vulkan_buffer(ctx, b.buffer, 0, 400, FFNRT_DTYPE_F32, 1, shape, &same));
    OK(ctx, ffnrt_tensor_wrap_vulkan_buffer(ctx, b.buffer, shift, 400, FFNRT_DTYPE_F32, 1, shape, &shifted));
    float xv[100], yv[100];
    fill(xv, 100, 5, 6.0f);
    OK(ctx, ffnrt_tensor_write(wx, xv, sizeof xv));
    ffnrt_activation_desc gelu = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_GELU);
    EXPECT(ffnrt_activation_forward(ctx, &gelu, wx, shifted), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(ffnrt_last_error_message(), "overlap in memory"), "%s", ffnrt_last_error_message());
    ffnrt_glu_desc swiglu = FFNRT_GLU_DESC_INIT(FFNRT_SWIGLU);
    EXPECT(ffnrt_glu_backward_split(ctx, &swiglu, wx, wx, wx, same, shifted), FFNRT_ERROR_INVALID_ARGUMENT);
    OK(ctx, ffnrt_tensor_read(wx, yv, sizeof yv));
    cr_assert_eq(memcmp(xv, yv, sizeof xv), 0, "a refused call changed its input");
    OK(ctx, ffnrt_activation_forward(ctx, &gelu, wx, same));
    OK(ctx, ffnrt_tensor_read(wx, yv, sizeof yv));
    check_gelu(xv, yv, 100);
    ffnrt_tensor_destroy(wx);
    ffnrt_tensor_destroy(same);
    ffnrt_tensor_destroy(shifted);
    EXPECT(ffnrt_vulkan_record_end(ctx), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_vulkan_record_begin(ctx, VK_NULL_HANDLE), FFNRT_ERROR_INVALID_ARGUMENT);
    VkCommandBuffer cmd = app_begin(&app);
    OK(ctx, ffnrt_vulkan_record_begin(ctx, cmd));
    EXPECT(ffnrt_vulkan_record_begin(ctx, cmd), FFNRT_ERROR_INVALID_ARGUMENT);
    OK(ctx, ffnrt_vulkan_record_end(ctx));
    app_submit(&app, cmd); /* empty */

    /* A VkBuffer can only be wrapped by a context on the app's device. */
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.backend = FFNRT_BACKEND_VULKAN;
    o.device_index = 0;
    ffnrt_context *own = NULL;
    OK(own, ffnrt_context_create(&o, &own));
    EXPECT(ffnrt_tensor_wrap_vulkan_buffer(own, b.buffer, 0, 400, FFNRT_DTYPE_F32, 1, shape, &t),
           FFNRT_ERROR_WRONG_CONTEXT);
    EXPECT(ffnrt_vulkan_record_begin(own, cmd), FFNRT_ERROR_WRONG_CONTEXT);
    ffnrt_context_destroy(own);
    o.backend = FFNRT_BACKEND_OPENCL;
    OK(own, ffnrt_context_create(&o, &own));
    EXPECT(ffnrt_tensor_wrap_vulkan_buffer(own, b.buffer, 0, 400, FFNRT_DTYPE_F32, 1, shape, &t),
           FFNRT_ERROR_WRONG_CONTEXT);
    EXPECT(ffnrt_opencl_enqueue_begin(ctx, 0, NULL), FFNRT_ERROR_WRONG_CONTEXT);
    ffnrt_context_destroy(own);

    ffnrt_context_destroy(ctx);
    app_vk_still_works(&app, &b);
    app_buffer_destroy(&app, &b);
    app_vk_destroy(&app);
}

/* -------------------------------------------------------------- OpenCL */

typedef struct app_cl {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    size_t align; /* CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes */
} app_cl;

static void app_cl_create(app_cl *app)
{
    memset(app, 0, sizeof *app);
    cl_uint np = 0;
    cl_platform_id plats[8];
    cr_assert_eq(clGetPlatformIDs(8, plats, &np), CL_SUCCESS, "the app finds no OpenCL platform");
    for (cl_uint p = 0; p < np && !app->device; p++) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 1, &app->device, &nd) != CL_SUCCESS)
            app->device = NULL;
    }
    cr_assert(app->device, "the app finds no OpenCL device");
    cl_int rc;
    app->context = clCreateContext(NULL, 1, &app->device, NULL, NULL, &rc);
    cr_assert_eq(rc, CL_SUCCESS);
    app->queue = clCreateCommandQueue(app->context, app->device, CL_QUEUE_PROFILING_ENABLE, &rc);
    cr_assert_eq(rc, CL_SUCCESS);
    cl_uint bits = 0;
    clGetDeviceInfo(app->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits, NULL);
    app->align = bits >= 32 ? bits / 8 : 4;
}

static void app_cl_destroy(app_cl *app)
{
    cr_assert_eq(clReleaseCommandQueue(app->queue), CL_SUCCESS);
    cr_assert_eq(clReleaseContext(app->context), CL_SUCCESS);
}

static cl_uint refcount_context(cl_context c)
{
    cl_uint n = 0;
    clGetContextInfo(c, CL_CONTEXT_REFERENCE_COUNT, sizeof n, &n, NULL);
    return n;
}
static cl_uint refcount_queue(cl_command_queue q)
{
    cl_uint n = 0;
    clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof n, &n, NULL);
    return n;
}
static cl_uint refcount_mem(cl_mem m)
{
    cl_uint n = 0;
    clGetMemObjectInfo(m, CL_MEM_REFERENCE_COUNT, sizeof n, &n, NULL);
    return n;
}

/* The app's queue and buffer still work: write and read back. */
static void app_cl_still_works(app_cl *app, cl_mem mem)
{
    float v = 42.0f, back = 0;
    cr_assert_eq(clEnqueueWriteBuffer(app->queue, mem, CL_TRUE, 0, sizeof v, &v, 0, NULL, NULL), CL_SUCCESS);
    cr_assert_eq(clEnqueueReadBuffer(app->queue, mem, CL_TRUE, 0, sizeof back, &back, 0, NULL, NULL), CL_SUCCESS);
    cr_assert_eq(back, 42.0f);
}

Test(opencl, context_from_app_handles_and_refcounts)
{
    app_cl app;
    app_cl_create(&app);
    cl_int rc;
    cl_mem mem = clCreateBuffer(app.context, CL_MEM_READ_WRITE, 8192, NULL, &rc);
    cr_assert_eq(rc, CL_SUCCESS);
    /* PoCL keeps a reference to the queue for the last command enqueued on
     * it: the app has enqueued one before counting, as it does after. */
    app_cl_still_works(&app, mem);
    cl_uint ctx_refs = refcount_context(app.context), queue_refs = refcount_queue(app.queue);
    cl_uint mem_refs = refcount_mem(mem);

    ffnrt_context *ctx = NULL;
    OK(ctx, ffnrt_context_create_opencl(app.context, app.device, app.queue, NULL, &ctx));
    ffnrt_device_info info;
    OK(ctx, ffnrt_context_get_device_info(ctx, &info));
    cr_assert_eq(info.backend, FFNRT_BACKEND_OPENCL);
    int64_t shape[1] = {1000};
    ffnrt_tensor *tx = NULL, *ty = NULL;
    OK(ctx, ffnrt_tensor_wrap_opencl_buffer(ctx, mem, 0, FFNRT_DTYPE_F32, 1, shape, &tx));
    OK(ctx, ffnrt_tensor_wrap_opencl_buffer(ctx, mem, 4096, FFNRT_DTYPE_F32, 1, shape, &ty));
    float x[1000], y[1000];
    fill(x, 1000, 3, 12.0f);
    OK(ctx, ffnrt_tensor_write(tx, x, sizeof x));
    ffnrt_activation_desc gelu = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_GELU);
    OK(ctx, ffnrt_activation_forward(ctx, &gelu, tx, ty));
    /* The app reads its own buffer. */
    cr_assert_eq(clEnqueueReadBuffer(app.queue, mem, CL_TRUE, 4096, sizeof y, y, 0, NULL, NULL), CL_SUCCESS);
    check_gelu(x, y, 1000);
    uint64_t ns = 0;
    OK(ctx, ffnrt_context_last_op_time(ctx, &ns));
    cr_assert_gt(ns, 0, "no device time from the app's profiling queue");
    cr_assert_gt(refcount_context(app.context), ctx_refs, "ffnrt holds a reference while it uses the context");

    /* A wrap that overlaps another part of one buffer is refused as an
     * output (the same range would be in place). */
    ffnrt_tensor *tz = NULL;
    OK(ctx, ffnrt_tensor_wrap_opencl_buffer(ctx, mem, app.align, FFNRT_DTYPE_F32, 1, shape, &tz));
    EXPECT(ffnrt_activation_forward(ctx, &gelu, tx, tz), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(ffnrt_last_error_message(), "overlap in memory"), "%s", ffnrt_last_error_message());
    ffnrt_tensor_destroy(tz);

    ffnrt_tensor_destroy(tx);
    ffnrt_context_destroy(ctx); /* also frees ty's wrapper */
    cr_assert_eq(refcount_context(app.context), ctx_refs);
    cr_assert_eq(refcount_mem(mem), mem_refs);
    /* The queue is counted as before: after a command of the app's (PoCL
     * may still hold ffnrt's last command, and its queue reference, until
     * a later command replaces it). */
    app_cl_still_works(&app, mem);
    cr_assert_eq(refcount_queue(app.queue), queue_refs, "queue refs %u, before %u", refcount_queue(app.queue), queue_refs);
    cr_assert_eq(clReleaseMemObject(mem), CL_SUCCESS);
    app_cl_destroy(&app);
}

/* Ops enqueued on the app's queue after the app's (user) event, with an
 * event out that the app waits for; wrapped buffers at nonzero offsets,
 * one of them a sub-buffer. */
static void opencl_event_chain(const ffnrt_context_options *options)
{
    app_cl app;
    app_cl_create(&app);
    ffnrt_context *ctx = NULL;
    OK(ctx, ffnrt_context_create_opencl(app.context, app.device, app.queue, options, &ctx));
    ffn_case *c = ffn_case_make();
    ffnrt_ffn *layer = ffn_layer(ctx, c);

    enum { N = 777 };
    size_t a = app.align, act_bytes = N * sizeof(float), ffn_bytes = sizeof c->x;
    size_t off_x = a, off_y = (off_x + act_bytes + a) / a * a, off_fx = (off_y + act_bytes + a) / a * a;
    size_t off_fy = (off_fx + ffn_bytes + a) / a * a, total = off_fy + ffn_bytes + a;
    cl_int rc;
    cl_mem mem = clCreateBuffer(app.context, CL_MEM_READ_WRITE, total, NULL, &rc);
    cr_assert_eq(rc, CL_SUCCESS);
    cl_buffer_region region = {off_fx, total - off_fx};
    cl_mem sub = clCreateSubBuffer(mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &rc);
    cr_assert_eq(rc, CL_SUCCESS);
    float x[N];
    fill(x, N, 4, 10.0f);
    cr_assert_eq(clEnqueueWriteBuffer(app.queue, mem, CL_TRUE, off_x, act_bytes, x, 0, NULL, NULL), CL_SUCCESS);
    cr_assert_eq(clEnqueueWriteBuffer(app.queue, mem, CL_TRUE, off_fx, ffn_bytes, c->x, 0, NULL, NULL), CL_SUCCESS);

    int64_t act_shape[1] = {N}, ffn_shape[2] = {TOKENS, D_MODEL};
    ffnrt_tensor *tx, *ty, *fx, *fy;
    OK(ctx, ffnrt_tensor_wrap_opencl_buffer(ctx, mem, off_x, FFNRT_DTYPE_F32, 1, act_shape, &tx));
    OK(ctx, ffnrt_tensor_wrap_opencl_buffer(ctx, mem, off_y, FFNRT_DTYPE_F32, 1, act_shape, &ty));
    OK(ctx, ffnrt_tensor_wrap_opencl_buffer(ctx, sub, 0, FFNRT_DTYPE_F32, 2, ffn_shape, &fx));
    OK(ctx, ffnrt_tensor_wrap_opencl_buffer(ctx, sub, off_fy - off_fx, FFNRT_DTYPE_F32, 2, ffn_shape, &fy));

    cl_event gate = clCreateUserEvent(app.context, &rc), done = NULL;
    cr_assert_eq(rc, CL_SUCCESS);
    OK(ctx, ffnrt_opencl_enqueue_begin(ctx, 1, &gate));
    ffnrt_activation_desc gelu = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_GELU);
    OK(ctx, ffnrt_activation_forward(ctx, &gelu, tx, ty));
    OK(ctx, ffnrt_ffn_forward(layer, fx, fy));
    OK(ctx, ffnrt_opencl_enqueue_end(ctx, &done));
    cr_assert(done);
    /* Nothing may run before the app's event. */
    cl_int status = CL_QUEUED;
    clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    cr_assert_neq(status, CL_COMPLETE, "ffnrt's work finished before the event it waits for");
    cr_assert_eq(clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    cr_assert_eq(clWaitForEvents(1, &done), CL_SUCCESS);
    clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    cr_assert_eq(status, CL_COMPLETE);

    float y[N], fyv[TOKENS * D_MODEL];
    cr_assert_eq(clEnqueueReadBuffer(app.queue, mem, CL_TRUE, off_y, act_bytes, y, 0, NULL, NULL), CL_SUCCESS);
    cr_assert_eq(clEnqueueReadBuffer(app.queue, mem, CL_TRUE, off_fy, ffn_bytes, fyv, 0, NULL, NULL), CL_SUCCESS);
    check_gelu(x, y, N);
    check_ffn(c, fyv);
    test_read(fy, fyv, TOKENS * D_MODEL); /* ffnrt's read of a wrapped sub-buffer */
    check_ffn(c, fyv);

    /* No wait list: the out event alone. */
    OK(ctx, ffnrt_opencl_enqueue_begin(ctx, 0, NULL));
    OK(ctx, ffnrt_activation_forward(ctx, &gelu, tx, ty));
    cl_event done2 = NULL;
    OK(ctx, ffnrt_opencl_enqueue_end(ctx, &done2));
    cr_assert_eq(clWaitForEvents(1, &done2), CL_SUCCESS);

    clReleaseEvent(done);
    clReleaseEvent(done2);
    clReleaseEvent(gate);
    ffnrt_ffn_destroy(layer);
    ffnrt_context_destroy(ctx);
    cr_assert_eq(refcount_mem(mem), 2, "the app's buffer and its sub-buffer hold it"); /* mem + sub */
    cr_assert_eq(refcount_mem(sub), 1);
    app_cl_still_works(&app, mem);
    clReleaseMemObject(sub);
    clReleaseMemObject(mem);
    app_cl_destroy(&app);
    free(c);
}

Test(opencl, event_chain) { opencl_event_chain(NULL); }

Test(opencl, event_chain_split)
{
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.max_buffer_range = 1024;
    o.max_workgroup_count = 2;
    opencl_event_chain(&o);
}

Test(opencl, bad_input)
{
    app_cl app;
    app_cl_create(&app);
    ffnrt_context *ctx = NULL;
    EXPECT(ffnrt_context_create_opencl(NULL, app.device, app.queue, NULL, &ctx), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_context_create_opencl(app.context, NULL, app.queue, NULL, &ctx), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_context_create_opencl(app.context, app.device, NULL, NULL, &ctx), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_context_create_opencl(app.context, app.device, app.queue, NULL, NULL), FFNRT_ERROR_INVALID_ARGUMENT);
    /* A queue of another context. */
    cl_int rc;
    cl_context other = clCreateContext(NULL, 1, &app.device, NULL, NULL, &rc);
    cl_command_queue other_q = clCreateCommandQueue(other, app.device, 0, &rc);
    EXPECT(ffnrt_context_create_opencl(app.context, app.device, other_q, NULL, &ctx), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_null(ctx);

    OK(ctx, ffnrt_context_create_opencl(app.context, app.device, app.queue, NULL, &ctx));
    cl_mem mem = clCreateBuffer(app.context, CL_MEM_READ_WRITE, 1024, NULL, &rc);
    cl_mem foreign = clCreateBuffer(other, CL_MEM_READ_WRITE, 1024, NULL, &rc);
    cl_mem read_only = clCreateBuffer(app.context, CL_MEM_READ_ONLY, 1024, NULL, &rc);
    int64_t shape[1] = {256};
    ffnrt_tensor *t = NULL;
    EXPECT(ffnrt_tensor_wrap_opencl_buffer(NULL, mem, 0, FFNRT_DTYPE_F32, 1, shape, &t), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_tensor_wrap_opencl_buffer(ctx, NULL, 0, FFNRT_DTYPE_F32, 1, shape, &t), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_tensor_wrap_opencl_buffer(ctx, foreign, 0, FFNRT_DTYPE_F32, 1, shape, &t), FFNRT_ERROR_WRONG_CONTEXT);
    EXPECT(ffnrt_tensor_wrap_opencl_buffer(ctx, read_only, 0, FFNRT_DTYPE_F32, 1, shape, &t),
           FFNRT_ERROR_INVALID_ARGUMENT);
    shape[0] = 257; /* too big for the buffer */
    EXPECT(ffnrt_tensor_wrap_opencl_buffer(ctx, mem, 0, FFNRT_DTYPE_F32, 1, shape, &t), FFNRT_ERROR_SHAPE_MISMATCH);
    shape[0] = 16;
    if (app.align > 4)
        EXPECT(ffnrt_tensor_wrap_opencl_buffer(ctx, mem, 4, FFNRT_DTYPE_F32, 1, shape, &t),
               FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_null(t);
    cr_assert_eq(refcount_mem(mem), 1, "a refused wrap keeps no reference");
    EXPECT(ffnrt_opencl_enqueue_end(ctx, NULL), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_opencl_enqueue_begin(ctx, 2, NULL), FFNRT_ERROR_INVALID_ARGUMENT);
    OK(ctx, ffnrt_opencl_enqueue_begin(ctx, 0, NULL));
    EXPECT(ffnrt_opencl_enqueue_begin(ctx, 0, NULL), FFNRT_ERROR_INVALID_ARGUMENT);
    OK(ctx, ffnrt_opencl_enqueue_end(ctx, NULL));
    EXPECT(ffnrt_vulkan_record_begin(ctx, (VkCommandBuffer)(uintptr_t)1), FFNRT_ERROR_WRONG_CONTEXT);
    EXPECT(ffnrt_tensor_wrap_vulkan_buffer(ctx, (VkBuffer)(uintptr_t)1, 0, 64, FFNRT_DTYPE_F32, 1, shape, &t),
           FFNRT_ERROR_WRONG_CONTEXT);
    ffnrt_context_destroy(ctx);
    clReleaseMemObject(mem);
    clReleaseMemObject(foreign);
    clReleaseMemObject(read_only);
    clReleaseCommandQueue(other_q);
    clReleaseContext(other);
    app_cl_destroy(&app);
}

/* ------------------------------------------- async on ffnrt's own queue */

BACKEND_PARAMETERS(async, submit_and_wait)
ParameterizedTest(ffnrt_backend *backend, async, submit_and_wait)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    if (!ctx)
        return;
    enum { N = 100003 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    cr_assert(x && y);
    fill(x, N, 5, 12.0f);
    ffnrt_tensor *tx = test_tensor_1d(ctx, N, x), *ty = test_tensor_1d(ctx, N, NULL), *tz = test_tensor_1d(ctx, N, NULL);
    OK(ctx, ffnrt_context_set_async(ctx, 1));
    ffnrt_activation_desc gelu = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_GELU);
    ffnrt_activation_desc relu = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_RELU);
    /* Two dependent ops, then a third, without waiting in between. */
    OK(ctx, ffnrt_activation_forward(ctx, &relu, tx, ty));
    OK(ctx, ffnrt_activation_forward(ctx, &gelu, ty, ty));
    OK(ctx, ffnrt_copy(ctx, ty, tz));
    uint64_t ns = 1;
    OK(ctx, ffnrt_context_last_op_time(ctx, &ns));
    cr_assert_eq(ns, 0, "an asynchronous op has no time before the wait");
    OK(ctx, ffnrt_context_wait(ctx));
    OK(ctx, ffnrt_context_last_op_time(ctx, &ns));
    cr_assert_gt(ns, 0, "no device time after the wait");
    test_read(tz, y, N);
    for (size_t i = 0; i < N; i++)
        x[i] = x[i] < 0 ? 0 : x[i];
    check_gelu(x, y, N);

    /* A read right after an asynchronous op waits for it. */
    fill(x, N, 6, 12.0f);
    OK(ctx, ffnrt_tensor_write(tx, x, N * sizeof *x));
    OK(ctx, ffnrt_activation_forward(ctx, &gelu, tx, ty));
    test_read(ty, y, N);
    check_gelu(x, y, N);

    /* A gated FFN, asynchronously; its scratch is freed under no pending work. */
    ffn_case *c = ffn_case_make();
    ffnrt_ffn *layer = ffn_layer(ctx, c);
    int64_t shape[2] = {TOKENS, D_MODEL};
    ffnrt_tensor *fx, *fy;
    OK(ctx, ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &fx));
    OK(ctx, ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &fy));
    OK(ctx, ffnrt_tensor_write(fx, c->x, sizeof c->x));
    OK(ctx, ffnrt_ffn_forward(layer, fx, fy));
    OK(ctx, ffnrt_context_wait(ctx));
    float fyv[TOKENS * D_MODEL];
    test_read(fy, fyv, TOKENS * D_MODEL);
    check_ffn(c, fyv);
    OK(ctx, ffnrt_ffn_forward(layer, fx, fy));
    ffnrt_ffn_destroy(layer); /* with the forward possibly in flight */
    OK(ctx, ffnrt_context_set_async(ctx, 0));
    OK(ctx, ffnrt_context_wait(ctx)); /* nothing pending: fine */
    free(c);
    free(x);
    free(y);
    test_context_done(ctx);
}

/* A model's loop of many small dependent ops (RMSNorm, then a gated FFN
 * added to x, STEPS times, and every 40 steps a forward at one token,
 * which regrows the layer's scratch between asynchronous calls). Vulkan
 * records asynchronous calls into an open batch while another runs and
 * submits many in one (at most 256 dispatches, so this run crosses that
 * bound). The results must be those of the same calls made synchronously,
 * bit for bit: every batch boundary keeps the calls' order. */
static void run_model_loop(ffnrt_context *ctx, const ffn_case *c, int async, float *out, float *out1)
{
    enum { STEPS = 150 };
    ffnrt_ffn *layer = ffn_layer(ctx, c);
    int64_t shape[2] = {TOKENS, D_MODEL}, one[2] = {1, D_MODEL};
    float w[D_MODEL];
    fill(w, D_MODEL, 15, 1.0f);
    ffnrt_tensor *x, *xn, *x1, *y1, *norm = test_tensor_1d(ctx, D_MODEL, w);
    OK(ctx, ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &x));
    OK(ctx, ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &xn));
    OK(ctx, ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, one, &x1));
    OK(ctx, ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, one, &y1));
    OK(ctx, ffnrt_tensor_write(x, c->x, sizeof c->x));
    OK(ctx, ffnrt_tensor_write(x1, c->x, D_MODEL * sizeof(float)));
    OK(ctx, ffnrt_context_set_async(ctx, async));
    for (int i = 0; i < STEPS; i++) {
        OK(ctx, ffnrt_rms_norm(ctx, x, norm, 1e-5f, xn));
        OK(ctx, ffnrt_ffn_forward_residual(layer, xn, x));
        if (i % 40 == 39) {
            OK(ctx, ffnrt_ffn_forward(layer, x1, y1));
            OK(ctx, ffnrt_copy(ctx, y1, x1));
        }
    }
    OK(ctx, ffnrt_context_wait(ctx));
    uint64_t ns = 0;
    OK(ctx, ffnrt_context_last_op_time(ctx, &ns));
    cr_assert(ns > 0 || !async, "no device time for the asynchronous calls");
    OK(ctx, ffnrt_context_set_async(ctx, 0));
    test_read(x, out, TOKENS * D_MODEL);
    test_read(x1, out1, D_MODEL);
    ffnrt_ffn_destroy(layer);
    ffnrt_tensor_destroy(x);
    ffnrt_tensor_destroy(xn);
    ffnrt_tensor_destroy(x1);
    ffnrt_tensor_destroy(y1);
    ffnrt_tensor_destroy(norm);
}

BACKEND_PARAMETERS(async, many_ops_keep_their_order)
ParameterizedTest(ffnrt_backend *backend, async, many_ops_keep_their_order, .timeout = 600)
{
    ffnrt_context *ctx = test_context(*backend, NULL);
    if (!ctx)
        return;
    ffn_case *c = ffn_case_make();
    float sync_x[TOKENS * D_MODEL], sync_x1[D_MODEL], async_x[TOKENS * D_MODEL], async_x1[D_MODEL];
    run_model_loop(ctx, c, 0, sync_x, sync_x1);
    run_model_loop(ctx, c, 1, async_x, async_x1);
    for (int i = 0; i < TOKENS * D_MODEL; i++)
        cr_assert(isfinite(sync_x[i]), "x[%d] = %g: the loop is not a test of anything", i, sync_x[i]);
    cr_assert(memcmp(sync_x, c->x, sizeof sync_x) != 0, "the loop changed nothing");
    cr_assert(memcmp(sync_x, async_x, sizeof sync_x) == 0, "asynchronous calls gave other bits than synchronous ones");
    cr_assert(memcmp(sync_x1, async_x1, sizeof sync_x1) == 0,
              "the one-token forwards gave other bits asynchronously");
    free(c);
    test_context_done(ctx);
}
