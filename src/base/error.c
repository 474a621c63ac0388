#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char thread_last_error[FFNRT_ERROR_MESSAGE_SIZE];

static const char *const status_strings[FFNRT_STATUS_COUNT] = {
    [FFNRT_OK] = "ok",
    [FFNRT_ERROR_INVALID_ARGUMENT] = "invalid argument",
    [FFNRT_ERROR_SHAPE_MISMATCH] = "shape mismatch",
    [FFNRT_ERROR_DTYPE_MISMATCH] = "dtype mismatch",
    [FFNRT_ERROR_WRONG_CONTEXT] = "tensor belongs to another context",
    [FFNRT_ERROR_UNSUPPORTED] = "unsupported on this device",
    [FFNRT_ERROR_BACKEND_UNAVAILABLE] = "backend unavailable",
    [FFNRT_ERROR_DEVICE_NOT_FOUND] = "device not found",
    [FFNRT_ERROR_LIMIT_EXCEEDED] = "device limit exceeded",
    [FFNRT_ERROR_OUT_OF_HOST_MEMORY] = "out of host memory",
    [FFNRT_ERROR_OUT_OF_DEVICE_MEMORY] = "out of device memory",
    [FFNRT_ERROR_COMPILE_FAILED] = "kernel compilation failed",
    [FFNRT_ERROR_DEVICE_FAILURE] = "device failure",
    [FFNRT_ERROR_INVALID_FILE] = "invalid file",
    [FFNRT_ERROR_NON_FINITE] = "non-finite output from finite inputs",
};

const char *ffnrt_status_string(ffnrt_status status)
{
    if ((unsigned)status >= FFNRT_STATUS_COUNT)
        return "unknown status";
    return status_strings[status];
}

const char *ffnrt_last_error_message(void) { return thread_last_error; }

ffnrt_status ffnrt_fail(ffnrt_error *err, ffnrt_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->status = status;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return status;
}

void ffnrt_error_clear(ffnrt_error *err)
{
    err->status = FFNRT_OK;
    err->message[0] = '\0';
}

void ffnrt_error_publish(const ffnrt_error *err)
{
    snprintf(thread_last_error, sizeof thread_last_error, "%s", err->message);
}
