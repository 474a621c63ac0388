/* Finds the devices of every backend whose API loads on this machine. */
#include "core/context.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static int registry_done;
static ffnrt_device_info *registry_infos;
static size_t registry_count;

const ffnrt_backend_ops *ffnrt_registry_backend(ffnrt_backend kind)
{
    switch (kind) {
    case FFNRT_BACKEND_OPENCL: return ffnrt_opencl_backend();
    case FFNRT_BACKEND_VULKAN: return ffnrt_vulkan_backend();
    default: return NULL;
    }
}

static void registry_scan(void)
{
    static const ffnrt_backend order[] = {FFNRT_BACKEND_OPENCL, FFNRT_BACKEND_VULKAN};
    /* One listing per backend in the usual case (a Vulkan listing creates
     * an instance, tens of milliseconds of every start); a second only
     * when a backend has more devices than fit here. */
    ffnrt_device_info first[8];
    for (size_t b = 0; b < sizeof order / sizeof order[0]; b++) {
        const ffnrt_backend_ops *ops = ffnrt_registry_backend(order[b]);
        ffnrt_error err;
        ffnrt_error_clear(&err);
        size_t n = 0;
        size_t cap = sizeof first / sizeof first[0];
        if (ops->load(&err) != FFNRT_OK || ops->list_devices(first, cap, &n, &err) != FFNRT_OK || n == 0)
            continue;
        ffnrt_device_info *grown = realloc(registry_infos, (registry_count + n) * sizeof *grown);
        if (!grown)
            continue;
        registry_infos = grown;
        size_t got = n;
        if (n <= cap)
            memcpy(registry_infos + registry_count, first, n * sizeof *first);
        else if (ops->list_devices(registry_infos + registry_count, n, &got, &err) != FFNRT_OK)
            continue;
        registry_count += got < n ? got : n;
    }
}

ffnrt_status ffnrt_registry_devices(const ffnrt_device_info **infos, size_t *count,
                                    ffnrt_error *err)
{
    (void)err;
    pthread_mutex_lock(&registry_lock);
    if (!registry_done) {
        registry_scan();
        registry_done = 1;
    }
    pthread_mutex_unlock(&registry_lock);
    *infos = registry_infos;
    *count = registry_count;
    return FFNRT_OK;
}

ffnrt_status ffnrt_device_count(size_t *count)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!count) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_device_count: count is NULL");
        ffnrt_error_publish(&err);
        return err.status;
    }
    const ffnrt_device_info *infos;
    return ffnrt_registry_devices(&infos, count, &err);
}

ffnrt_status ffnrt_device_get_info(size_t i, ffnrt_device_info *info)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    const ffnrt_device_info *infos;
    size_t count;
    if (!info)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_device_get_info: info is NULL");
    else if (ffnrt_registry_devices(&infos, &count, &err) == FFNRT_OK && i >= count)
        ffnrt_fail(&err, FFNRT_ERROR_DEVICE_NOT_FOUND,
                   "ffnrt_device_get_info: device %zu requested, %zu found", i, count);
    else
        *info = infos[i];
    ffnrt_error_publish(&err);
    return err.status;
}

ffnrt_status ffnrt_backend_available(ffnrt_backend backend)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    const ffnrt_backend_ops *ops = ffnrt_registry_backend(backend);
    size_t n = 0;
    if (!ops)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_backend_available: %d is not a backend",
                   (int)backend);
    else if (ops->load(&err) == FFNRT_OK && ops->list_devices(NULL, 0, &n, &err) == FFNRT_OK && n == 0)
        ffnrt_fail(&err, FFNRT_ERROR_BACKEND_UNAVAILABLE, "%s: the loader found no device", ops->name);
    ffnrt_error_publish(&err);
    return err.status;
}

const char *ffnrt_backend_name(ffnrt_backend backend)
{
    switch (backend) {
    case FFNRT_BACKEND_ANY: return "any";
    case FFNRT_BACKEND_OPENCL: return "opencl";
    case FFNRT_BACKEND_VULKAN: return "vulkan";
    }
    return "unknown";
}

const char *ffnrt_device_type_name(ffnrt_device_type type)
{
    switch (type) {
    case FFNRT_DEVICE_TYPE_CPU: return "cpu";
    case FFNRT_DEVICE_TYPE_VIRTUAL_GPU: return "virtual-gpu";
    case FFNRT_DEVICE_TYPE_INTEGRATED_GPU: return "integrated-gpu";
    case FFNRT_DEVICE_TYPE_DISCRETE_GPU: return "discrete-gpu";
    case FFNRT_DEVICE_TYPE_OTHER: break;
    }
    return "other";
}
