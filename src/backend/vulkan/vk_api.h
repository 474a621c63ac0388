/* Vulkan entry points, resolved per instance and per device so that
 * several instances (with and without the validation layer) can live in
 * one process. Only the loader itself is global (volk). */
#ifndef FFNRT_VK_API_H
#define FFNRT_VK_API_H

#include <volk.h>

#define FFNRT_VK_INSTANCE_FUNCTIONS(X)          \
    X(vkDestroyInstance)                        \
    X(vkEnumeratePhysicalDevices)               \
    X(vkGetPhysicalDeviceProperties)            \
    X(vkGetPhysicalDeviceProperties2)           \
    X(vkGetPhysicalDeviceFeatures2)             \
    X(vkGetPhysicalDeviceQueueFamilyProperties) \
    X(vkGetPhysicalDeviceMemoryProperties)      \
    X(vkEnumerateDeviceExtensionProperties)     \
    X(vkCreateDevice)                           \
    X(vkGetDeviceProcAddr)

#define FFNRT_VK_DEVICE_FUNCTIONS(X)     \
    X(vkDestroyDevice)                   \
    X(vkGetDeviceQueue)                  \
    X(vkCreateBuffer)                    \
    X(vkDestroyBuffer)                   \
    X(vkGetBufferMemoryRequirements)     \
    X(vkAllocateMemory)                  \
    X(vkFreeMemory)                      \
    X(vkBindBufferMemory)                \
    X(vkMapMemory)                       \
    X(vkUnmapMemory)                     \
    X(vkCreateShaderModule)              \
    X(vkDestroyShaderModule)             \
    X(vkCreateDescriptorSetLayout)       \
    X(vkDestroyDescriptorSetLayout)      \
    X(vkCreatePipelineLayout)            \
    X(vkDestroyPipelineLayout)           \
    X(vkCreateComputePipelines)          \
    X(vkDestroyPipeline)                 \
    X(vkCreatePipelineCache)             \
    X(vkDestroyPipelineCache)            \
    X(vkGetPipelineCacheData)            \
    X(vkCreateDescriptorPool)            \
    X(vkDestroyDescriptorPool)           \
    X(vkResetDescriptorPool)             \
    X(vkAllocateDescriptorSets)          \
    X(vkUpdateDescriptorSets)            \
    X(vkCreateCommandPool)               \
    X(vkDestroyCommandPool)              \
    X(vkAllocateCommandBuffers)          \
    X(vkBeginCommandBuffer)              \
    X(vkEndCommandBuffer)                \
    X(vkResetCommandBuffer)              \
    X(vkCmdBindPipeline)                 \
    X(vkCmdBindDescriptorSets)           \
    X(vkCmdPushConstants)                \
    X(vkCmdDispatch)                     \
    X(vkCmdPipelineBarrier)              \
    X(vkCmdCopyBuffer)                   \
    X(vkCmdResetQueryPool)               \
    X(vkCmdWriteTimestamp)               \
    X(vkCreateQueryPool)                 \
    X(vkDestroyQueryPool)                \
    X(vkGetQueryPoolResults)             \
    X(vkCreateFence)                     \
    X(vkDestroyFence)                    \
    X(vkResetFences)                     \
    X(vkWaitForFences)                   \
    X(vkGetFenceStatus)                  \
    X(vkQueueSubmit)                     \
    X(vkDeviceWaitIdle)

#define FFNRT_VK_MEMBER(name) PFN_##name name;
typedef struct ffnrt_vk_instance_api {
    FFNRT_VK_INSTANCE_FUNCTIONS(FFNRT_VK_MEMBER)
    PFN_vkCreateDebugUtilsMessengerEXT vkCreateDebugUtilsMessengerEXT;
    PFN_vkDestroyDebugUtilsMessengerEXT vkDestroyDebugUtilsMessengerEXT;
} ffnrt_vk_instance_api;

typedef struct ffnrt_vk_device_api {
    FFNRT_VK_DEVICE_FUNCTIONS(FFNRT_VK_MEMBER)
} ffnrt_vk_device_api;
#undef FFNRT_VK_MEMBER

#endif
