/* The lab's doors into the library (include/ffnrt_lab.h): how a call of a
 * library built on ffnrt ends, the SHA-256 of a buffer in hex, and the
 * platform layer's calls the lab needs. */
#include "core/context.h"
#include "core/sha256.h"
#include "platform/platform.h"

#include <stdio.h>

ffnrt_status ffnrt_lab_end_call(ffnrt_context *ctx, const ffnrt_error *err)
{
    ffnrt_error e = *err;
    if (e.status == FFNRT_OK)
        ffnrt_error_clear(&e);
    else if (!e.message[0])
        ffnrt_fail(&e, e.status, "%s", ffnrt_status_string(e.status));
    if (ctx)
        ctx->error = e;
    ffnrt_error_publish(&e);
    return e.status;
}

void ffnrt_lab_sha256_hex(const void *data, size_t n, char hex[65])
{
    unsigned char d[FFNRT_SHA256_BYTES];
    ffnrt_sha256(data, n, d);
    for (int i = 0; i < FFNRT_SHA256_BYTES; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

uint64_t ffnrt_lab_monotonic_ns(void) { return ffnrt_monotonic_ns(); }
int ffnrt_lab_utc_now(struct tm *out, int *milliseconds) { return ffnrt_utc_now(out, milliseconds); }
int ffnrt_lab_strcasecmp(const char *a, const char *b) { return ffnrt_strcasecmp(a, b); }
int ffnrt_lab_isatty(int fd) { return ffnrt_isatty(fd); }
int ffnrt_lab_terminal_columns(int fd) { return ffnrt_terminal_columns(fd); }
