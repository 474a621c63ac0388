#define _GNU_SOURCE /* memmem */
/* libFuzzer target over the tuning file's reader (ffnrt_tuning_parse), the
 * text every context creation reads back from the disk cache.
 *
 * Built and run with the other targets by scripts/fuzz (seeds in
 * fuzz/corpus/tuning/):
 *   scripts/fuzz 60 tuning
 *
 * Checks, beyond "no crash, no sanitizer report, no timeout" (the reader
 * is linear: a quadratic one would time out on long inputs): the table
 * stays within its bound; every result kept is found by its key, is an FFN
 * shape class with a valid path x kernel x integer-path code and finite, non-negative
 * times, and its key is in the input; and the text the table writes back
 * reads back to the same table, written again byte for byte. */
#include "core/context.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_table(const ffnrt_tuning_table *t, const uint8_t *data, size_t size)
{
    if (t->count > FFNRT_TUNING_MAX_ENTRIES)
        abort();
    for (size_t i = 0; i < t->count; i++) {
        const ffnrt_tuning_entry *e = &t->entries[i];
        if (ffnrt_tuning_find(t, e->key) != e || strncmp(e->key, "ffn/", 4) != 0)
            abort();
        if (e->value < 0 || e->value > 23 || e->value % 4 > 2) /* FFNRT_TUNING_CODE's range */
            abort();
        if (!isfinite(e->ms[0]) || !isfinite(e->ms[1]) || e->ms[0] < 0 || e->ms[1] < 0)
            abort();
        if (data && !memmem(data, size, e->key, strlen(e->key)))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ffnrt_tuning_table t = {0}, u = {0};
    size_t taken = ffnrt_tuning_parse(&t, (const char *)data, size);
    if (taken != t.count)
        abort();
    check_table(&t, data, size);
    size_t n = 0, m = 0;
    char *text = ffnrt_tuning_format(&t, &n);
    if (!text)
        abort();
    if (ffnrt_tuning_parse(&u, text, n) != t.count)
        abort();
    check_table(&u, NULL, 0);
    char *again = ffnrt_tuning_format(&u, &m);
    if (!again || m != n || memcmp(text, again, n) != 0)
        abort();
    free(text);
    free(again);
    ffnrt_tuning_table_free(&t);
    ffnrt_tuning_table_free(&u);
    return 0;
}
