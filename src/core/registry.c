/* Finds the devices of every backend whose API loads on this machine. */
#include "core/context.h"
#include "platform/platform.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static ffnrt_mutex registry_lock = FFNRT_MUTEX_INIT;

/* Each backend is listed once per process, when first needed: a context
 * on a named backend does not pay for starting the other API's drivers
 * (PoCL's start alone is about 30 ms here), which matters for a start-up
 * whose kernels come from the disk cache. */
#define REGISTRY_BACKENDS 8 /* at most; the backend table (backend/backends.c) has the list */
static struct {
    int done;
    ffnrt_device_info *infos;
    size_t count;
    ffnrt_error why_none; /* where count is 0: the backend's own status and reason */
} registry_lists[REGISTRY_BACKENDS];
/* Every backend's devices in the table's order, made once all are listed. */
static int registry_done;
static ffnrt_device_info *registry_infos;
static size_t registry_count;

const ffnrt_backend_ops *ffnrt_registry_backend(ffnrt_backend kind) { return ffnrt_backend_find(kind); }

static size_t registry_backends(void)
{
    size_t n = ffnrt_backend_count();
    return n < REGISTRY_BACKENDS ? n : REGISTRY_BACKENDS;
}

/* Keeps why backend i has no device: its own error, or that its loader
 * listed none. */
static void registry_none(size_t i, const ffnrt_error *why)
{
    registry_lists[i].why_none = *why;
    if (why->status == FFNRT_OK || !why->message[0])
        ffnrt_fail(&registry_lists[i].why_none, FFNRT_ERROR_BACKEND_UNAVAILABLE, "%s: the loader found no device",
                   ffnrt_backend_at(i)->name);
}

/* Lists backend i; called with registry_lock held. One listing in the
 * usual case (a Vulkan listing creates an instance); a second only when
 * the backend has more devices than fit here. Running out of host memory
 * is not kept: the backend is listed again on the next call (a backend
 * that fails otherwise simply has no devices). */
static ffnrt_status registry_scan(size_t i, ffnrt_error *err)
{
    if (registry_lists[i].done)
        return FFNRT_OK;
    const ffnrt_backend_ops *ops = ffnrt_backend_at(i);
    ffnrt_device_info first[8];
    size_t cap = sizeof first / sizeof first[0], n = 0;
    ffnrt_error why;
    ffnrt_error_clear(&why);
    if (ops->load(&why) != FFNRT_OK || ops->list_devices(first, cap, &n, &why) != FFNRT_OK || n == 0) {
        if (why.status == FFNRT_ERROR_OUT_OF_HOST_MEMORY)
            return ffnrt_fail(err, why.status, "listing devices: %s", why.message);
        registry_none(i, &why);
        registry_lists[i].done = 1;
        return FFNRT_OK;
    }
    ffnrt_device_info *infos = malloc(n * sizeof *infos);
    if (!infos)
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "listing devices: out of host memory");
    size_t got = n;
    if (n <= cap) {
        memcpy(infos, first, n * sizeof *first);
    } else if (ops->list_devices(infos, n, &got, &why) != FFNRT_OK) {
        free(infos);
        if (why.status == FFNRT_ERROR_OUT_OF_HOST_MEMORY)
            return ffnrt_fail(err, why.status, "listing devices: %s", why.message);
        infos = NULL;
        got = 0;
        registry_none(i, &why);
    }
    registry_lists[i].infos = infos;
    registry_lists[i].count = got < n ? got : n;
    registry_lists[i].done = 1;
    return FFNRT_OK;
}

ffnrt_status ffnrt_registry_backend_devices(ffnrt_backend kind, const ffnrt_device_info **infos, size_t *count,
                                            ffnrt_error *err)
{
    if (kind == FFNRT_BACKEND_ANY)
        return ffnrt_registry_devices(infos, count, err);
    *infos = NULL;
    *count = 0;
    ffnrt_status st = FFNRT_OK;
    for (size_t i = 0; i < registry_backends(); i++)
        if (ffnrt_backend_at(i)->kind == kind) {
            ffnrt_mutex_lock(&registry_lock);
            st = registry_scan(i, err);
            *infos = registry_lists[i].infos;
            *count = registry_lists[i].count;
            ffnrt_mutex_unlock(&registry_lock);
        }
    return st;
}

int ffnrt_registry_why_none(ffnrt_backend kind, char *out, size_t cap)
{
    int none = 0;
    out[0] = '\0';
    for (size_t i = 0; i < registry_backends(); i++) {
        if (kind != FFNRT_BACKEND_ANY && ffnrt_backend_at(i)->kind != kind)
            continue;
        ffnrt_error ignored;
        ffnrt_error_clear(&ignored);
        ffnrt_mutex_lock(&registry_lock);
        registry_scan(i, &ignored);
        if (registry_lists[i].done && registry_lists[i].count == 0) {
            size_t len = strlen(out);
            if (len < cap)
                snprintf(out + len, cap - len, "%s%s", none ? "; " : "", registry_lists[i].why_none.message);
            none = 1;
        }
        ffnrt_mutex_unlock(&registry_lock);
    }
    return none;
}

ffnrt_status ffnrt_registry_devices(const ffnrt_device_info **infos, size_t *count,
                                    ffnrt_error *err)
{
    ffnrt_status st = FFNRT_OK;
    ffnrt_mutex_lock(&registry_lock);
    if (!registry_done) {
        size_t total = 0;
        for (size_t i = 0; i < registry_backends() && st == FFNRT_OK; i++) {
            st = registry_scan(i, err);
            total += registry_lists[i].count;
        }
        ffnrt_device_info *all = st == FFNRT_OK ? malloc((total ? total : 1) * sizeof *all) : NULL;
        if (st == FFNRT_OK && !all)
            st = ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "listing devices: out of host memory");
        if (all) {
            size_t at = 0;
            for (size_t i = 0; i < registry_backends(); i++) {
                if (!registry_lists[i].count) /* its infos may be NULL */
                    continue;
                memcpy(all + at, registry_lists[i].infos, registry_lists[i].count * sizeof *all);
                at += registry_lists[i].count;
            }
            registry_infos = all;
            registry_count = at;
            registry_done = 1;
        }
    }
    /* Read under the lock: another thread may be filling them. */
    *infos = registry_done ? registry_infos : NULL;
    *count = registry_done ? registry_count : 0;
    ffnrt_mutex_unlock(&registry_lock);
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
    const ffnrt_device_info *infos;
    size_t n = 0;
    if (!ffnrt_registry_backend(backend)) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_backend_available: %d is not a backend",
                   (int)backend);
    } else if (ffnrt_registry_backend_devices(backend, &infos, &n, &err) == FFNRT_OK && n == 0) {
        /* The listing contexts choose from, and the backend's own reason. */
        for (size_t i = 0; i < registry_backends(); i++)
            if (ffnrt_backend_at(i)->kind == backend) {
                ffnrt_mutex_lock(&registry_lock);
                err = registry_lists[i].why_none;
                ffnrt_mutex_unlock(&registry_lock);
            }
    }
    ffnrt_error_publish(&err);
    return err.status;
}

const char *ffnrt_backend_name(ffnrt_backend backend)
{
    const ffnrt_backend_ops *ops = ffnrt_backend_find(backend);
    return backend == FFNRT_BACKEND_ANY ? "any" : ops ? ops->name : "unknown";
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

/* ------------------------------------------------- figures of this process */

/* Calibration figures measured or read in this process, by device and
 * variant: a disk cache that is off still measures each device once. */
typedef struct known_figures {
    ffnrt_backend backend;
    char name[256], driver[128];
    char variant[640];
    ffnrt_calibration figures;
} known_figures;

static known_figures *figures_list;
static size_t figures_count, figures_capacity;

static int same_figures_key(const known_figures *k, const ffnrt_device_info *info, const char *variant)
{
    return k->backend == info->backend && strcmp(k->name, info->name) == 0 &&
           strcmp(k->driver, info->driver_version) == 0 && strcmp(k->variant, variant) == 0;
}

int ffnrt_registry_figures_get(const ffnrt_device_info *info, const char *variant, ffnrt_calibration *out)
{
    int found = 0;
    ffnrt_mutex_lock(&registry_lock);
    for (size_t i = 0; i < figures_count && !found; i++)
        if (same_figures_key(&figures_list[i], info, variant)) {
            *out = figures_list[i].figures;
            found = 1;
        }
    ffnrt_mutex_unlock(&registry_lock);
    return found;
}

void ffnrt_registry_figures_put(const ffnrt_device_info *info, const char *variant, const ffnrt_calibration *c)
{
    ffnrt_mutex_lock(&registry_lock);
    known_figures *k = NULL;
    for (size_t i = 0; i < figures_count && !k; i++)
        if (same_figures_key(&figures_list[i], info, variant))
            k = &figures_list[i];
    if (!k && figures_count == figures_capacity) {
        size_t cap = figures_capacity ? 2 * figures_capacity : 8;
        known_figures *grown = realloc(figures_list, cap * sizeof *grown);
        if (grown) {
            figures_list = grown;
            figures_capacity = cap;
        }
    }
    if (!k && figures_count < figures_capacity) { /* else not kept: measured again, never wrong */
        k = &figures_list[figures_count++];
        memset(k, 0, sizeof *k);
        k->backend = info->backend;
        snprintf(k->name, sizeof k->name, "%s", info->name);
        snprintf(k->driver, sizeof k->driver, "%s", info->driver_version);
        snprintf(k->variant, sizeof k->variant, "%s", variant);
    }
    if (k)
        k->figures = *c;
    ffnrt_mutex_unlock(&registry_lock);
}
