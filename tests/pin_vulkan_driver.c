/* Linked into every test program that may open a Vulkan device (the device
 * suites, and in the sanitizer build the Vulkan examples). */
#include <dlfcn.h>

/* Keeps the CPU Vulkan driver (lavapipe, with the libLLVM it loads) mapped
 * for the whole process, before any test makes an instance: the loader
 * unloads it at each vkDestroyInstance, after which LeakSanitizer cannot
 * name the module of a driver's allocation (tests/lsan.supp could not
 * match it), and each reload repeats its one-time allocations. Where it
 * is absent this does nothing. */
__attribute__((constructor)) static void pin_vulkan_driver(void)
{
    (void)dlopen("libvulkan_lvp.so", RTLD_NOW); /* a reference never dropped */
}
