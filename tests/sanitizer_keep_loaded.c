/* Linked into every executable of the ASan build (FFNRT_SANITIZE) and the
 * fuzz targets, and exported from them, so that it takes the place of
 * libc's dlclose for every library in the process: nothing is unloaded.
 *
 * Why: LeakSanitizer looks for leaks at exit. A driver unloaded before
 * then (the Vulkan loader dlcloses its ICDs and layers at
 * vkDestroyInstance) leaves behind what its globals still pointed to,
 * which LSan then reports as a direct leak from an "<unknown module>": the
 * library that made it is no longer mapped, so no suppression can name
 * it. Mesa's CPU detection is one: on AMD Zen CPUs it reallocs an L3
 * affinity mask (128 bytes per L3 cache) into a global of lavapipe, once
 * per load, so every Vulkan test failed on some machines and not others.
 * With every library kept mapped such state stays reachable (not a leak),
 * and a real driver leak names the driver's module. ffnrt's own
 * allocations are unaffected: they are made and freed by libffnrt. */
#define KEEP_EXPORTED __attribute__((visibility("default"))) /* the build hides symbols by default */

KEEP_EXPORTED int dlclose(void *handle);

KEEP_EXPORTED int dlclose(void *handle)
{
    (void)handle;
    return 0;
}
