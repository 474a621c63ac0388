#define _GNU_SOURCE /* strcasestr */
/* libFuzzer target over the command line's number parsers (src/lab/
 * numbers.c: ffnrt run, plan and bench take every number through them).
 *
 * Built and run with the other targets by scripts/fuzz (seeds in
 * fuzz/corpus/cli_numbers/):
 *   scripts/fuzz 60 cli_numbers
 *
 * The first byte picks the parser and its range, the rest is the argument.
 * Each answer is checked against an independent reading of the argument:
 * an integer or count is accepted exactly when it is digits (a sign for
 * integers; a K, M or G suffix for counts) whose exact value, computed
 * here in 128 bits, lies in the range, and then the value is that one; a
 * float or double accepted consumed the whole argument, is finite where it
 * must be, and lies in its range. The parsers are the lab's (ffnrt_lab),
 * not the library's, so the file is included here. */
#include "lab/numbers.c"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const int64_t int_bounds[4][2] = {
    {1, UINT32_MAX}, {0, INT64_MAX}, {INT64_MIN, INT64_MAX}, {-5, 5}};
static const uint64_t count_bounds[3][2] = {{1024, (uint64_t)UINT32_MAX / 1024 * 1024}, {0, UINT64_MAX}, {1, 1}};

/* The exact value of [sign]digits[suffix], or 0 when s is not that. */
static int exact(const char *s, int sign_ok, int suffix_ok, __int128 *out)
{
    int neg = 0;
    if (sign_ok && (*s == '+' || *s == '-'))
        neg = *s++ == '-';
    if (!isdigit((unsigned char)*s))
        return 0;
    __int128 v = 0;
    for (; isdigit((unsigned char)*s); s++)
        if ((v = v * 10 + (*s - '0')) > ((__int128)1 << 90))
            v = (__int128)1 << 90; /* past every bound (and times 2^30 still fits) */
    int shift = 0;
    if (suffix_ok && *s) {
        char c = (char)tolower((unsigned char)*s++);
        shift = c == 'k' ? 10 : c == 'm' ? 20 : c == 'g' ? 30 : -1;
        if (shift < 0)
            return 0;
    }
    if (*s)
        return 0;
    *out = (neg ? -v : v) * ((__int128)1 << shift);
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *s = malloc(size);
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    int which = data[0] % 4, range = data[0] / 4;
    __int128 v;
    if (which == 0) {
        const int64_t *b = int_bounds[range % 4];
        int64_t got = 42;
        int ok = cli_parse_int(s, b[0], b[1], &got) == 0;
        int want = exact(s, 1, 0, &v) && v >= b[0] && v <= b[1];
        if (ok != want || (ok && got != (int64_t)v) || (!ok && got != 42))
            abort();
    } else if (which == 1) {
        const uint64_t *b = count_bounds[range % 3];
        uint64_t got = 42;
        int ok = cli_parse_count(s, b[0], b[1], &got) == 0;
        int want = exact(s, 0, 1, &v) && v >= (__int128)b[0] && v <= (__int128)b[1];
        if (ok != want || (ok && got != (uint64_t)v) || (!ok && got != 42))
            abort();
    } else if (which == 2) {
        float f;
        if (cli_parse_float(s, &f) == 0) {
            if (!*s || isspace((unsigned char)*s))
                abort();
            if (isinf(f) && !strcasestr(s, "inf"))
                abort(); /* a finite number made infinite */
        }
    } else {
        double d, lo = range % 2 ? 0 : -1e300, hi = range % 3 ? 1e6 : 1e300;
        if (cli_parse_double(s, lo, hi, &d) == 0 && (!isfinite(d) || d < lo || d > hi || !*s))
            abort();
    }
    free(s);
    return 0;
}
