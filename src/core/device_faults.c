/* FFNRT_INJECT_DEVICE_FAILURE=N, a fault-injection hook for tests (as
 * FFNRT_INJECT_COMPILE_ERROR): a context opened while it is set sees its
 * device fail as a lost one does, from its Nth call that uses memory or
 * the queue on, and at every such call after (a lost device stays lost).
 * The CPU drivers cannot lose a device, and the paths after a failure
 * must still give clear errors, keep what was not touched and tear down
 * cleanly.
 *
 * A buffer made, a write, a read, a batch begun, a dispatch recorded and a
 * submission fail before they reach the driver, as a call the driver
 * refused; a wait first waits (work submitted before the failure really
 * runs on a CPU driver, and must end before what it uses is freed), then
 * fails. Everything else (kernels, freeing, closing) passes through. */
#include "core/device_faults.h"
#include "platform/platform.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BACKENDS 8
#define MAX_DEVICES 64

static ffnrt_mutex faults_lock = FFNRT_MUTEX_INIT;
static ffnrt_backend_ops wrapped[MAX_BACKENDS];
static const ffnrt_backend_ops *wrapped_of[MAX_BACKENDS];
static struct {
    ffnrt_bdevice *dev;
    const ffnrt_backend_ops *real;
    unsigned long long calls, fail_at;
} devices[MAX_DEVICES];

/* The real table of dev, and whether this call fails. */
static int this_call_fails(ffnrt_bdevice *dev, const ffnrt_backend_ops **real, unsigned long long *at)
{
    int fails = 0;
    *real = NULL;
    ffnrt_mutex_lock(&faults_lock);
    for (size_t i = 0; i < MAX_DEVICES; i++)
        if (devices[i].dev == dev) {
            *real = devices[i].real;
            *at = devices[i].fail_at;
            fails = ++devices[i].calls >= devices[i].fail_at;
            break;
        }
    ffnrt_mutex_unlock(&faults_lock);
    return fails;
}

static ffnrt_status lost(ffnrt_error *err, unsigned long long at)
{
    return ffnrt_fail(err, FFNRT_ERROR_DEVICE_FAILURE,
                      "the device is lost (injected: FFNRT_INJECT_DEVICE_FAILURE=%llu): destroy this context and "
                      "create a new one", at);
}

/* Each wrapped entry: the call refused before the driver, or passed on. */
#define REFUSED_BEFORE(name, params, args)                                                                         \
    static ffnrt_status faulty_##name params                                                                       \
    {                                                                                                              \
        const ffnrt_backend_ops *real;                                                                             \
        unsigned long long at = 0;                                                                                 \
        if (this_call_fails(dev, &real, &at) || !real)                                                            \
            return lost(err, at);                                                                                  \
        return real->name args;                                                                                    \
    }
REFUSED_BEFORE(buffer_create, (ffnrt_bdevice * dev, uint64_t bytes, ffnrt_bbuffer **out, ffnrt_error *err),
               (dev, bytes, out, err))
REFUSED_BEFORE(buffer_write,
               (ffnrt_bdevice * dev, ffnrt_bbuffer *buf, uint64_t offset, const void *src, uint64_t bytes,
                ffnrt_error *err),
               (dev, buf, offset, src, bytes, err))
REFUSED_BEFORE(buffer_read,
               (ffnrt_bdevice * dev, ffnrt_bbuffer *buf, uint64_t offset, void *dst, uint64_t bytes, ffnrt_error *err),
               (dev, buf, offset, dst, bytes, err))
REFUSED_BEFORE(begin, (ffnrt_bdevice * dev, ffnrt_error *err), (dev, err))
REFUSED_BEFORE(dispatch,
               (ffnrt_bdevice * dev, ffnrt_bkernel *kernel, const ffnrt_binding *bindings, uint32_t binding_count,
                const void *params, const uint32_t groups[2], ffnrt_error *err),
               (dev, kernel, bindings, binding_count, params, groups, err))
REFUSED_BEFORE(submit, (ffnrt_bdevice * dev, uint64_t *device_ns, ffnrt_error *err), (dev, device_ns, err))
REFUSED_BEFORE(submit_async, (ffnrt_bdevice * dev, ffnrt_error *err), (dev, err))
#undef REFUSED_BEFORE

static ffnrt_status faulty_wait(ffnrt_bdevice *dev, uint64_t *device_ns, ffnrt_error *err)
{
    const ffnrt_backend_ops *real;
    unsigned long long at = 0;
    int fails = this_call_fails(dev, &real, &at);
    if (!real)
        return lost(err, at);
    ffnrt_error ignored;
    ffnrt_error_clear(&ignored);
    ffnrt_status st = real->wait(dev, device_ns, fails ? &ignored : err);
    return fails ? lost(err, at) : st;
}

static void faulty_close(ffnrt_bdevice *dev)
{
    const ffnrt_backend_ops *real = NULL;
    ffnrt_mutex_lock(&faults_lock);
    for (size_t i = 0; i < MAX_DEVICES; i++)
        if (devices[i].dev == dev) {
            real = devices[i].real;
            memset(&devices[i], 0, sizeof devices[i]);
            break;
        }
    ffnrt_mutex_unlock(&faults_lock);
    if (real)
        real->close(dev);
}

ffnrt_status ffnrt_device_faults_wrap(const ffnrt_backend_ops *ops, ffnrt_bdevice *dev,
                                      const ffnrt_backend_ops **out, ffnrt_error *err)
{
    *out = ops;
    char value[32];
    int len = ffnrt_env_get("FFNRT_INJECT_DEVICE_FAILURE", value, sizeof value);
    if (len <= 0 || strcmp(value, "0") == 0)
        return FFNRT_OK;
    char *end = NULL;
    unsigned long long at = (size_t)len < sizeof value ? strtoull(value, &end, 10) : 0;
    if (!end || *end || at == 0 || value[0] == '-')
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                          "FFNRT_INJECT_DEVICE_FAILURE=%.31s: expected N > 0, the call that fails first (0: off)",
                          (size_t)len < sizeof value ? value : "(too long)");
    ffnrt_status st = FFNRT_ERROR_LIMIT_EXCEEDED;
    ffnrt_mutex_lock(&faults_lock);
    size_t b = 0;
    while (b < MAX_BACKENDS && wrapped_of[b] && wrapped_of[b] != ops)
        b++;
    size_t d = 0;
    while (d < MAX_DEVICES && devices[d].dev)
        d++;
    if (b < MAX_BACKENDS && d < MAX_DEVICES) {
        if (!wrapped_of[b]) {
            wrapped[b] = *ops;
            wrapped[b].buffer_create = faulty_buffer_create;
            wrapped[b].buffer_write = faulty_buffer_write;
            wrapped[b].buffer_read = faulty_buffer_read;
            wrapped[b].begin = faulty_begin;
            wrapped[b].dispatch = faulty_dispatch;
            wrapped[b].submit = faulty_submit;
            wrapped[b].submit_async = faulty_submit_async;
            wrapped[b].wait = faulty_wait;
            wrapped[b].close = faulty_close;
            wrapped_of[b] = ops;
        }
        devices[d].dev = dev;
        devices[d].real = ops;
        devices[d].calls = 0;
        devices[d].fail_at = at;
        *out = &wrapped[b];
        st = FFNRT_OK;
    }
    ffnrt_mutex_unlock(&faults_lock);
    if (st != FFNRT_OK)
        return ffnrt_fail(err, st, "FFNRT_INJECT_DEVICE_FAILURE: at most %d contexts at once", MAX_DEVICES);
    return FFNRT_OK;
}
