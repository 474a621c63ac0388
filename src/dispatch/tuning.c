/* Tuning results of the context: the winner of timed candidates per shape
 * class, kept for the context's device and driver in the disk cache (the
 * table itself is core/tuning_table.c). */
#include "dispatch/dispatch.h"

#include <stdlib.h>

/* --------------------------------------------------- the context's table */

int ffnrt_tuning_get(const ffnrt_context *ctx, const char *key, int *value, double ms[2])
{
    const ffnrt_tuning_entry *e = ffnrt_tuning_find(&ctx->tuning, key);
    if (!e)
        return 0;
    *value = e->value;
    if (ms)
        ms[0] = e->ms[0], ms[1] = e->ms[1];
    return 1;
}

static void remember(ffnrt_context *ctx, const char *key, int value, const double ms[2], int save)
{
    ffnrt_tuning_entry *e = ffnrt_tuning_insert(&ctx->tuning, key);
    if (!e)
        return; /* a result not kept is re-measured, never wrong */
    e->value = value;
    e->ms[0] = ms[0];
    e->ms[1] = ms[1];
    if (save)
        ffnrt_tuning_save(ctx);
}

void ffnrt_tuning_remember(ffnrt_context *ctx, const char *key, int value, const double ms[2])
{
    remember(ctx, key, value, ms, 0);
}

void ffnrt_tuning_put(ffnrt_context *ctx, const char *key, int value, const double ms[2])
{
    remember(ctx, key, value, ms, 1);
}

/* On disk the results are text, a line each: "key value ms ms". */
void ffnrt_tuning_save(ffnrt_context *ctx)
{
    size_t n = 0;
    char *text = ffnrt_tuning_format(&ctx->tuning, &n);
    if (text)
        ffnrt_context_blob_put(ctx, FFNRT_CACHE_TUNING, "ffn-tuning", text, n);
    free(text);
}

void ffnrt_tuning_load(ffnrt_context *ctx)
{
    size_t len = 0;
    char *blob = ffnrt_context_blob_get(ctx, FFNRT_CACHE_TUNING, "ffn-tuning", &len);
    if (blob)
        ffnrt_tuning_parse(&ctx->tuning, blob, len);
    free(blob);
}
