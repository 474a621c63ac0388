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

/* Lists every backend's devices. Running out of host memory is not
 * cached: the partial list is dropped and the next call scans again (a
 * backend that fails otherwise simply has no devices). */
static ffnrt_status registry_scan(ffnrt_error *err)
{
    static const ffnrt_backend order[] = {FFNRT_BACKEND_OPENCL, FFNRT_BACKEND_VULKAN};
    ffnrt_status st = FFNRT_OK;
    for (size_t b = 0; b < sizeof order / sizeof order[0] && st == FFNRT_OK; b++) {
        const ffnrt_backend_ops *ops = ffnrt_registry_backend(order[b]);
        ffnrt_error why;
        ffnrt_error_clear(&why);
        size_t n = 0;
        if (ops->load(&why) != FFNRT_OK || ops->list_devices(NULL, 0, &n, &why) != FFNRT_OK || n == 0) {
            if (why.status == FFNRT_ERROR_OUT_OF_HOST_MEMORY)
                st = ffnrt_fail(err, why.status, "listing devices: %s", why.message);
            continue;
        }
        ffnrt_device_info *grown = realloc(registry_infos, (registry_count + n) * sizeof *grown);
        if (!grown) {
            st = ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "listing devices: out of host memory");
            continue;
        }
        registry_infos = grown;
        size_t got = n;
        if (ops->list_devices(registry_infos + registry_count, n, &got, &why) != FFNRT_OK) {
            if (why.status == FFNRT_ERROR_OUT_OF_HOST_MEMORY)
                st = ffnrt_fail(err, why.status, "listing devices: %s", why.message);
            continue;
        }
        registry_count += got < n ? got : n;
    }
    if (st != FFNRT_OK) {
        free(registry_infos);
        registry_infos = NULL;
        registry_count = 0;
    }
    return st;
}

ffnrt_status ffnrt_registry_devices(const ffnrt_device_info **infos, size_t *count,
                                    ffnrt_error *err)
{
    ffnrt_status st = FFNRT_OK;
    pthread_mutex_lock(&registry_lock);
    if (!registry_done) {
        st = registry_scan(err);
        registry_done = st == FFNRT_OK;
    }
    *infos = registry_infos; /* fixed once done; read under the lock until then */
    *count = registry_count;
    pthread_mutex_unlock(&registry_lock);
    return st;
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
    ffnrt_registry_devices(&infos, count, &err);
    ffnrt_error_publish(&err);
    return err.status;
}

ffnrt_status ffnrt_device_get_info(size_t i, ffnrt_device_info *info)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    const ffnrt_device_info *infos;
    size_t count;
    if (!info)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_device_get_info: info is NULL");
    else if (ffnrt_registry_devices(&infos, &count, &err) != FFNRT_OK)
        ; /* err says why */
    else if (i >= count)
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
