/* Numbers on the ffnrt command line: a whole argument or nothing. Each
 * parser takes the entire string (no leading blanks, no trailing text),
 * checks for overflow and the range given, and returns 0 with *out set, or
 * -1 with *out untouched. cli_number_rule says what was expected, for the
 * message. fuzz/fuzz_cli_numbers.c checks them. */
#ifndef FFNRT_CLI_NUMBERS_H
#define FFNRT_CLI_NUMBERS_H

#include <stdint.h>

/* A decimal integer in [min, max] ("-5", "+7", "4096"). */
int cli_parse_int(const char *s, int64_t min, int64_t max, int64_t *out);
/* A count with an optional binary suffix K, M or G (case-insensitive):
 * "4096", "16M", in [min, max] after scaling, without wrapping. */
int cli_parse_count(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* A float as strtof reads it ("0.5", "-1e3", "inf", "nan", "0x1p-3"); a
 * finite number past the float range is refused, not made infinite. */
int cli_parse_float(const char *s, float *out);
/* A finite double in [min, max]. */
int cli_parse_double(const char *s, double min, double max, double *out);

#endif
