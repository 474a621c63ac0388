/* The platform layer's parts that need no OS (platform.h). */
#include "platform/platform.h"

static int lower(unsigned char c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

int ffnrt_strncasecmp(const char *a, const char *b, size_t n)
{
    for (; n; n--, a++, b++) {
        int d = lower((unsigned char)*a) - lower((unsigned char)*b);
        if (d || !*a)
            return d;
    }
    return 0;
}

int ffnrt_strcasecmp(const char *a, const char *b) { return ffnrt_strncasecmp(a, b, (size_t)-1); }
