/* Error state: a status plus a message, kept per context and per thread. */
#ifndef FFNRT_ERROR_H
#define FFNRT_ERROR_H

#include "ffnrt.h"

#define FFNRT_ERROR_MESSAGE_SIZE 512

typedef struct ffnrt_error {
    ffnrt_status status;
    char message[FFNRT_ERROR_MESSAGE_SIZE];
} ffnrt_error;

/* Records status and a printf-style message in err (which may be NULL) and
 * returns status, so callers can write `return ffnrt_fail(err, ...)`. */
ffnrt_status ffnrt_fail(ffnrt_error *err, ffnrt_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ffnrt_error_clear(ffnrt_error *err);
/* Publishes err as this thread's last error message. */
void ffnrt_error_publish(const ffnrt_error *err);

#endif
