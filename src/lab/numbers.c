/* Whole-argument number parsing for the command line (numbers.h). */
#include "numbers.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* strto* skip leading blanks and take a prefix: an argument is a number
 * only if it starts like one and is consumed whole. */
static int starts_like_a_number(const char *s)
{
    return s && *s && !isspace((unsigned char)*s);
}

int cli_parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!starts_like_a_number(s) || !(isdigit((unsigned char)s[0]) || ((s[0] == '-' || s[0] == '+') &&
                                                                        isdigit((unsigned char)s[1]))))
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno == ERANGE || v < min || v > max)
        return -1;
    *out = (int64_t)v;
    return 0;
}

int cli_parse_count(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    if (!starts_like_a_number(s) || !isdigit((unsigned char)s[0]))
        return -1; /* no sign: strtoull would wrap "-1" */
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE)
        return -1;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10, end++;
    else if (*end == 'M' || *end == 'm')
        shift = 20, end++;
    else if (*end == 'G' || *end == 'g')
        shift = 30, end++;
    if (*end || v > (UINT64_MAX >> shift))
        return -1;
    v <<= shift;
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_float(const char *s, float *out)
{
    if (!starts_like_a_number(s))
        return -1;
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (end == s || *end)
        return -1;
    /* ERANGE is also set on underflow, whose rounded result is the right
     * answer; only a finite input made infinite is refused. */
    if (errno == ERANGE && isinf(v))
        return -1;
    *out = v;
    return 0;
}

int cli_parse_double(const char *s, double min, double max, double *out)
{
    if (!starts_like_a_number(s))
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || !(v >= min && v <= max))
        return -1;
    *out = v;
    return 0;
}
