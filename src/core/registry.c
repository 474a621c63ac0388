/* Finds the devices of every backend whose API loads on this machine. */
#include "core/context.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

/* Each backend is listed once per process, when first needed: a context
 * on a named backend does not pay for starting the other API's drivers
 * (PoCL's start alone is about 30 ms here), which matters for a start-up
 * whose kernels come from the disk cache. */
#define REGISTRY_BACKENDS 2
static const ffnrt_backend registry_order[REGISTRY_BACKENDS] = {FFNRT_BACKEND_OPENCL, FFNRT_BACKEND_VULKAN};
static struct {
    int done;
    ffnrt_device_info *infos;
    size_t count;
} registry_lists[REGISTRY_BACKENDS];
/* Every backend's devices in registry_order, made once all are listed. */
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

/* Lists backend i; called with registry_lock held. One listing in the
 * usual case (a Vulkan listing creates an instance); a second only when
 * the backend has more devices than fit here. */
static void registry_scan(size_t i)
{
    if (registry_lists[i].done)
        return;
    registry_lists[i].done = 1;
    const ffnrt_backend_ops *ops = ffnrt_registry_backend(registry_order[i]);
    ffnrt_device_info first[8];
    size_t cap = sizeof first / sizeof first[0], n = 0;
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (ops->load(&err) != FFNRT_OK || ops->list_devices(first, cap, &n, &err) != FFNRT_OK || n == 0)
        return;
    ffnrt_device_info *infos = malloc(n * sizeof *infos);
    if (!infos)
        return;
    size_t got = n;
    if (n <= cap)
        memcpy(infos, first, n * sizeof *first);
    else if (ops->list_devices(infos, n, &got, &err) != FFNRT_OK)
        got = 0;
    registry_lists[i].infos = infos;
    registry_lists[i].count = got < n ? got : n;
}

ffnrt_status ffnrt_registry_backend_devices(ffnrt_backend kind, const ffnrt_device_info **infos, size_t *count,
                                            ffnrt_error *err)
{
    if (kind == FFNRT_BACKEND_ANY)
        return ffnrt_registry_devices(infos, count, err);
    *infos = NULL;
    *count = 0;
    for (size_t i = 0; i < REGISTRY_BACKENDS; i++)
        if (registry_order[i] == kind) {
            pthread_mutex_lock(&registry_lock);
            registry_scan(i);
            pthread_mutex_unlock(&registry_lock);
            *infos = registry_lists[i].infos;
            *count = registry_lists[i].count;
        }
    return FFNRT_OK;
}

ffnrt_status ffnrt_registry_devices(const ffnrt_device_info **infos, size_t *count,
                                    ffnrt_error *err)
{
    (void)err;
    pthread_mutex_lock(&registry_lock);
    if (!registry_done) {
        size_t total = 0;
        for (size_t i = 0; i < REGISTRY_BACKENDS; i++) {
            registry_scan(i);
            total += registry_lists[i].count;
        }
        registry_infos = malloc((total ? total : 1) * sizeof *registry_infos);
        if (registry_infos)
            for (size_t i = 0; i < REGISTRY_BACKENDS; i++) {
                if (!registry_lists[i].count) /* its infos may be NULL */
                    continue;
                memcpy(registry_infos + registry_count, registry_lists[i].infos,
                       registry_lists[i].count * sizeof *registry_infos);
                registry_count += registry_lists[i].count;
            }
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
