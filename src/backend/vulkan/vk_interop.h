/* The Vulkan backend's interop entry points (src/api/interop_vulkan.c
 * calls them): a device from the app's handles, wrapped buffers, and
 * recording into the app's command buffer. */
#ifndef FFNRT_VK_INTEROP_H
#define FFNRT_VK_INTEROP_H

#include "backend/backend.h"
#include "backend/vulkan/vk_api.h"
#include "ffnrt_vulkan.h"

ffnrt_status ffnrt_vk_open_external(const ffnrt_vulkan_device *app, const ffnrt_open_options *opts,
                                    ffnrt_bdevice **out, ffnrt_device_info *info, ffnrt_limits *limits,
                                    ffnrt_error *err);
ffnrt_status ffnrt_vk_buffer_wrap(ffnrt_bdevice *dev, VkBuffer buffer, ffnrt_bbuffer **out, ffnrt_error *err);
ffnrt_status ffnrt_vk_record_begin(ffnrt_bdevice *dev, VkCommandBuffer cmd, ffnrt_error *err);
void ffnrt_vk_record_end(ffnrt_bdevice *dev);

#endif
