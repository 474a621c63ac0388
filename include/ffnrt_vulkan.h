/* ffnrt on the app's own Vulkan device: a context from the app's handles,
 * the app's VkBuffers as tensors, and ffnrt's dispatches recorded into the
 * app's command buffers.
 *
 * The app includes this header with its Vulkan headers; ffnrt.h stays free
 * of Vulkan types. ffnrt never destroys what it did not create: the
 * instance, device, queue, buffers and command buffers stay the app's, and
 * ffnrt_context_destroy frees only ffnrt's own objects (command pool,
 * fence, query pool, descriptor pools, pipelines, the buffers of tensors it
 * created). */
#ifndef FFNRT_VULKAN_H
#define FFNRT_VULKAN_H

#include <vulkan/vulkan.h>

#include "ffnrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The app's device. Requirements:
 * - instance created with apiVersion >= 1.1 (ffnrt calls the 1.1 queries);
 *   physical_device one of its devices, with Vulkan >= 1.1;
 * - device created on physical_device with a queue of queue_family_index,
 *   a family with VK_QUEUE_COMPUTE_BIT; queue is a queue of that family.
 *   No feature or extension is required. fp16 arithmetic
 *   (FFNRT_COMPUTE_F16) needs VkPhysicalDeviceShaderFloat16Int8Features::
 *   shaderFloat16 (or VkPhysicalDeviceVulkan12Features::shaderFloat16)
 *   enabled at vkCreateDevice: say so in shader_float16, otherwise ffnrt
 *   assumes it is off and refuses FFNRT_COMPUTE_F16 with
 *   FFNRT_ERROR_UNSUPPORTED (Vulkan cannot be asked what a device enabled).
 * - get_instance_proc_addr: the app's loader entry point; NULL uses the
 *   system loader (libvulkan.so.1), which ffnrt loads at run time.
 * ffnrt submits its own work (ops outside recording, staged host copies)
 * to queue from the calling thread: as Vulkan requires, the app must not
 * use the queue from another thread at the same time. */
typedef struct ffnrt_vulkan_device {
    VkInstance instance;
    VkPhysicalDevice physical_device;
    VkDevice device;
    uint32_t queue_family_index;
    VkQueue queue;
    PFN_vkGetInstanceProcAddr get_instance_proc_addr;
    VkBool32 shader_float16;
    /* Likewise VkPhysicalDeviceShaderIntegerDotProductFeatures::
     * shaderIntegerDotProduct (or VkPhysicalDeviceVulkan13Features'):
     * where said, the integer path's matrix-vector kernel takes the packed
     * 4 x 8-bit dot products; else it multiplies in plain integers. */
    VkBool32 shader_integer_dot_product;
} ffnrt_vulkan_device;

#define FFNRT_VULKAN_DEVICE_INIT                                                                            \
    { VK_NULL_HANDLE, VK_NULL_HANDLE, VK_NULL_HANDLE, 0, VK_NULL_HANDLE, NULL, VK_FALSE, VK_FALSE }

/* A context on the app's device. options may be NULL; only the limit
 * fields are used (the device is given; validation is the app's instance's
 * business, and ffnrt_context_validation_messages stays 0). */
FFNRT_API ffnrt_status ffnrt_context_create_vulkan(const ffnrt_vulkan_device *device,
                                                   const ffnrt_context_options *options,
                                                   ffnrt_context **out);

/* The bytes [offset, offset + range) of the app's buffer as a tensor,
 * without copying; only for a context made by ffnrt_context_create_vulkan
 * on the buffer's device. The buffer needs VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
 * and bound memory; offset is a multiple of the device's
 * minStorageBufferOffsetAlignment; range (not VK_WHOLE_SIZE) holds the
 * tensor's bytes rounded up to a multiple of 4 (kernels access 32-bit
 * words). ffnrt_tensor_destroy frees the wrapper, never the buffer; the
 * buffer must outlive the wrapper.
 * ffnrt_tensor_read / _write on a wrapped tensor copy through ffnrt's own
 * staging buffer and command buffer on the context's queue and wait for
 * the copy: the buffer then also needs VK_BUFFER_USAGE_TRANSFER_SRC_BIT
 * (read) / VK_BUFFER_USAGE_TRANSFER_DST_BIT (write), and the app's own
 * pending work on it must be finished. */
FFNRT_API ffnrt_status ffnrt_tensor_wrap_vulkan_buffer(ffnrt_context *ctx, VkBuffer buffer, VkDeviceSize offset,
                                                       VkDeviceSize range, ffnrt_dtype dtype, size_t ndim,
                                                       const int64_t *shape, ffnrt_tensor **out);

/* Recording. Between ffnrt_vulkan_record_begin and _end, ops record their
 * dispatches into `cmd` and return without submitting; the app submits
 * (any number of times, after ffnrt_vulkan_record_end) and waits.
 * - cmd: a command buffer of the context's device in the recording state,
 *   from a pool of a compute-capable family, outside any render pass.
 * - Inside, ffnrt puts a compute-to-compute barrier (SHADER_WRITE to
 *   SHADER_READ | SHADER_WRITE) after each of its dispatches, so its ops
 *   see each other's results, and binds its own compute pipelines,
 *   descriptor sets and push constants: rebind the app's compute state
 *   after ffnrt's commands.
 * - Before ffnrt's commands, the app records a barrier from its writes of
 *   the inputs (e.g. TRANSFER / COMPUTE_SHADER / HOST stage, its write
 *   access) to VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT with
 *   VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT (outputs are
 *   written: also order the app's earlier reads of them). After them, a
 *   barrier from VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT /
 *   VK_ACCESS_SHADER_WRITE_BIT to the stage and access of its reads
 *   (TRANSFER_READ for a copy, HOST_READ for a mapped read after the wait,
 *   VERTEX_ATTRIBUTE_READ...).
 * - Lifetimes: the descriptor sets ffnrt writes while recording stay valid
 *   until the next ffnrt_vulkan_record_begin, the next op run outside
 *   recording, or ffnrt_context_destroy; before any of these the app must
 *   have waited for every submission of the recorded commands. The tensors
 *   used (and an FFN layer's internal scratch, kept until forward is called
 *   with another token count or the layer is destroyed) must also live
 *   until then. Parameters travel as push constants, in the command buffer.
 * - ffnrt_context_last_op_time gives 0 for recorded ops (the app may time
 *   its own submission). Tensor reads and writes are not recorded: they
 *   happen at once, as outside recording; ffnrt_context_wait waits only
 *   for ffnrt's own submissions, never for the app's.
 * A second record_begin before record_end is an error. */
FFNRT_API ffnrt_status ffnrt_vulkan_record_begin(ffnrt_context *ctx, VkCommandBuffer cmd);
FFNRT_API ffnrt_status ffnrt_vulkan_record_end(ffnrt_context *ctx);

#ifdef __cplusplus
}
#endif
#endif /* FFNRT_VULKAN_H */
