/* The lab's doors into the platform layer (include/ffnrt_lab.h): the few
 * OS calls the lab needs, which it cannot include itself (it includes no
 * OS header and no src/ header). */
#include "ffnrt_lab.h"
#include "platform/platform.h"

uint64_t ffnrt_lab_monotonic_ns(void) { return ffnrt_monotonic_ns(); }
int ffnrt_lab_utc_now(struct tm *out, int *milliseconds) { return ffnrt_utc_now(out, milliseconds); }
int ffnrt_lab_strcasecmp(const char *a, const char *b) { return ffnrt_strcasecmp(a, b); }
int ffnrt_lab_isatty(int fd) { return ffnrt_isatty(fd); }
int ffnrt_lab_terminal_columns(int fd) { return ffnrt_terminal_columns(fd); }
