/* Error state: a status plus a message, kept per context and per thread.
 * The type and ffnrt_fail are declared in include/ffnrt_lab.h, which the
 * lab shares; publishing stays the library's. */
#ifndef FFNRT_ERROR_H
#define FFNRT_ERROR_H

#include "ffnrt.h"
#include "ffnrt_lab.h"

/* Publishes err as this thread's last error message. */
void ffnrt_error_publish(const ffnrt_error *err);

#endif
