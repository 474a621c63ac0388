/* Tuning results: the winner of timed candidates per shape class, kept for
 * the context's device and driver. */
#include "core/context.h"

#include <stdlib.h>
#include <string.h>

int ffnrt_tuning_get(const ffnrt_context *ctx, const char *key, int *value, double ms[2])
{
    for (size_t i = 0; i < ctx->tuning_count; i++)
        if (strcmp(ctx->tuning[i].key, key) == 0) {
            *value = ctx->tuning[i].value;
            if (ms)
                ms[0] = ctx->tuning[i].ms[0], ms[1] = ctx->tuning[i].ms[1];
            return 1;
        }
    return 0;
}

void ffnrt_tuning_put(ffnrt_context *ctx, const char *key, int value, const double ms[2])
{
    ffnrt_tuning_entry *e = NULL;
    for (size_t i = 0; i < ctx->tuning_count && !e; i++)
        if (strcmp(ctx->tuning[i].key, key) == 0)
            e = &ctx->tuning[i];
    if (!e) {
        if (ctx->tuning_count == ctx->tuning_capacity) {
            size_t cap = ctx->tuning_capacity ? 2 * ctx->tuning_capacity : 16;
            ffnrt_tuning_entry *t = realloc(ctx->tuning, cap * sizeof *t);
            if (!t)
                return; /* a result not kept is re-measured, never wrong */
            ctx->tuning = t;
            ctx->tuning_capacity = cap;
        }
        e = &ctx->tuning[ctx->tuning_count++];
        memset(e, 0, sizeof *e);
        strncpy(e->key, key, sizeof e->key - 1);
    }
    e->value = value;
    e->ms[0] = ms[0];
    e->ms[1] = ms[1];
    ctx->tuning_dirty = 1;
}
