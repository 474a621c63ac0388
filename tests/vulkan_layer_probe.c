/* Makes one error the Khronos validation layer must report, a buffer of 0
 * bytes (VUID-VkBufferCreateInfo-size-00912), and asks for no layer
 * itself: it shows that a layer enabled from outside the program is there
 * and reports. scripts/windows-check enables the host's layer from the
 * Unix side (VK_INSTANCE_LAYERS; Wine's vulkan-1.dll lists no layers of
 * its own) for everything it runs under Wine, and runs this first, so
 * that the silence of the others means something. ctest runs it on Linux
 * the same way. Exits 0 once the bad call is made, 1 where no device is. */
#include <stdio.h>
#include <vulkan/vulkan.h>

int main(void)
{
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "vulkan_layer_probe",
                             .apiVersion = VK_API_VERSION_1_1};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkInstance instance;
    if (vkCreateInstance(&ici, NULL, &instance) != VK_SUCCESS) {
        puts("vulkan_layer_probe: no Vulkan instance");
        return 1;
    }
    uint32_t count = 1;
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    VkResult listed = vkEnumeratePhysicalDevices(instance, &count, &physical);
    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                     .queueFamilyIndex = 0,
                                     .queueCount = 1,
                                     .pQueuePriorities = &priority};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &queue};
    VkDevice device;
    if ((listed != VK_SUCCESS && listed != VK_INCOMPLETE) || count == 0 ||
        vkCreateDevice(physical, &dci, NULL, &device) != VK_SUCCESS) {
        puts("vulkan_layer_probe: no Vulkan device");
        vkDestroyInstance(instance, NULL);
        return 1;
    }
    VkBufferCreateInfo empty = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                .size = 0, /* the error */
                                .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT};
    VkBuffer buffer = VK_NULL_HANDLE;
    VkResult made = vkCreateBuffer(device, &empty, NULL, &buffer);
    printf("vulkan_layer_probe: a buffer of 0 bytes made (VkResult %d); the layer, where enabled, reported it above\n",
           (int)made);
    fflush(stdout);
    if (made == VK_SUCCESS && buffer != VK_NULL_HANDLE)
        vkDestroyBuffer(device, buffer, NULL);
    vkDestroyDevice(device, NULL);
    vkDestroyInstance(instance, NULL);
    return 0;
}
