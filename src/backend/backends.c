/* The backend table: every backend this build has, in listing order. A
 * new backend is a folder with its row (an ffnrt_backend_ops), a prelude
 * in shaders/, an ffnrt_backend value and a line here. */
#include "backend/backend.h"
#include "platform/platform.h"

#include <string.h>

static const ffnrt_backend_ops *(*const backend_rows[])(void) = {
    ffnrt_opencl_backend,
    ffnrt_vulkan_backend,
};

size_t ffnrt_backend_count(void) { return sizeof backend_rows / sizeof backend_rows[0]; }

const ffnrt_backend_ops *ffnrt_backend_at(size_t i) { return i < ffnrt_backend_count() ? backend_rows[i]() : NULL; }

const ffnrt_backend_ops *ffnrt_backend_find(ffnrt_backend kind)
{
    for (size_t i = 0; i < ffnrt_backend_count(); i++)
        if (backend_rows[i]()->kind == kind)
            return backend_rows[i]();
    return NULL;
}

const ffnrt_backend_ops *ffnrt_backend_named(const char *name, size_t len)
{
    for (size_t i = 0; i < ffnrt_backend_count(); i++) {
        const ffnrt_backend_ops *ops = backend_rows[i]();
        if (strlen(ops->name) == len && ffnrt_strncasecmp(ops->name, name, len) == 0)
            return ops;
    }
    return NULL;
}
