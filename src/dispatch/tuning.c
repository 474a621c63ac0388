/* Tuning results: the winner of timed candidates per shape class, kept for
 * the context's device and driver. */
#include "dispatch/dispatch.h"

#include <math.h>
#include <stdio.h>
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

/* Keeps a result in memory only. */
static void remember(ffnrt_context *ctx, const char *key, int value, const double ms[2], int save);

void ffnrt_tuning_remember(ffnrt_context *ctx, const char *key, int value, const double ms[2])
{
    remember(ctx, key, value, ms, 0);
}

void ffnrt_tuning_put(ffnrt_context *ctx, const char *key, int value, const double ms[2])
{
    remember(ctx, key, value, ms, 1);
}

static void remember(ffnrt_context *ctx, const char *key, int value, const double ms[2], int save)
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
    if (save)
        ffnrt_tuning_save(ctx);
}

/* On disk the results are text, a line each: "key value ms ms". A line that
 * does not parse, or a value out of range, is dropped (it is re-measured). */
void ffnrt_tuning_save(ffnrt_context *ctx)
{
    size_t cap = ctx->tuning_count * (sizeof ctx->tuning[0].key + 64) + 1, at = 0;
    char *text = malloc(cap);
    if (!text)
        return;
    text[0] = '\0';
    for (size_t i = 0; i < ctx->tuning_count; i++)
        at += (size_t)snprintf(text + at, cap - at, "%s %d %.6g %.6g\n", ctx->tuning[i].key, ctx->tuning[i].value,
                               ctx->tuning[i].ms[0], ctx->tuning[i].ms[1]);
    ffnrt_context_blob_put(ctx, FFNRT_CACHE_TUNING, "ffn-tuning", text, at);
    free(text);
}

void ffnrt_tuning_load(ffnrt_context *ctx)
{
    size_t len = 0;
    char *blob = ffnrt_context_blob_get(ctx, FFNRT_CACHE_TUNING, "ffn-tuning", &len);
    if (!blob)
        return;
    char *text = malloc(len + 1);
    if (text) {
        memcpy(text, blob, len);
        text[len] = '\0';
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            char key[sizeof ctx->tuning[0].key];
            int value;
            double ms[2];
            if (sscanf(line, "%159s %d %lf %lf", key, &value, &ms[0], &ms[1]) == 4 && value >= 0 && value < 8 &&
                value % 4 < 3 && isfinite(ms[0]) && isfinite(ms[1]) && strncmp(key, "ffn/", 4) == 0) {
                int known;
                if (!ffnrt_tuning_get(ctx, key, &known, NULL))
                    ffnrt_tuning_remember(ctx, key, value, ms);
            }
        }
        free(text);
    }
    free(blob);
}
