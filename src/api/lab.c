/* The lab's doors into the library (include/ffnrt_lab.h): how a call of a
 * library built on ffnrt ends, and the SHA-256 of a buffer in hex. */
#include "core/context.h"
#include "core/sha256.h"

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
