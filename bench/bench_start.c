/* Cold and warm start of a gated FFN layer (see bench_start.h).
 *
 * Also a small command when built with -DBENCH_START_MAIN (the bench_start
 * target): bench_start opencl|vulkan CACHE_DIR|off [runs] prints one
 * line per run with the time and the cache's hits. */
#include "bench_start.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define START_D 512
#define START_HIDDEN 1376

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void fill(float *w, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        w[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 0.05f;
    }
}

double bench_start_ms(ffnrt_backend backend, const char *cache_dir, uint64_t *hits)
{
    size_t wn = (size_t)START_D * START_HIDDEN;
    float *wg = malloc(wn * sizeof *wg), *wv = malloc(wn * sizeof *wv), *wo = malloc(wn * sizeof *wo);
    float x[START_D], y[START_D];
    double ms = -1;
    if (!wg || !wv || !wo)
        goto out;
    fill(wg, wn, 1);
    fill(wv, wn, 2);
    fill(wo, wn, 3);
    fill(x, START_D, 4);

    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.backend = backend;
    o.device_index = 0;
    o.cache_dir = cache_dir;
    o.disable_disk_cache = cache_dir == NULL;
    ffnrt_context *ctx = NULL;
    ffnrt_ffn *layer = NULL;
    ffnrt_tensor *tx = NULL, *ty = NULL;
    double t0 = now_ms();
    if (ffnrt_context_create(&o, &ctx) != FFNRT_OK)
        goto out;
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, START_D, START_HIDDEN);
    desc.glu = (ffnrt_glu_desc)FFNRT_GLU_DESC_INIT(FFNRT_SWIGLU);
    ffnrt_ffn_weights w = {0};
    w.w_gate = wg;
    w.w_value = wv;
    w.w_out = wo;
    int64_t shape[2] = {1, START_D};
    int ok = ffnrt_ffn_create(ctx, &desc, &w, &layer) == FFNRT_OK &&
             ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &tx) == FFNRT_OK &&
             ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &ty) == FFNRT_OK &&
             ffnrt_tensor_write(tx, x, sizeof x) == FFNRT_OK && ffnrt_ffn_forward(layer, tx, ty) == FFNRT_OK &&
             ffnrt_tensor_read(ty, y, sizeof y) == FFNRT_OK;
    if (ok)
        ms = now_ms() - t0;
    if (hits) {
        ffnrt_cache_stats s;
        *hits = ffnrt_context_cache_stats(ctx, &s) == FFNRT_OK ? s.hits : 0;
    }
    ffnrt_tensor_destroy(tx);
    ffnrt_tensor_destroy(ty);
    ffnrt_ffn_destroy(layer);
    ffnrt_context_destroy(ctx);
out:
    free(wg);
    free(wv);
    free(wo);
    return ms;
}

#ifdef BENCH_START_MAIN
int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s opencl|vulkan CACHE_DIR|off [runs]\n", argv[0]);
        return 2;
    }
    ffnrt_backend b = strcmp(argv[1], "vulkan") == 0 ? FFNRT_BACKEND_VULKAN : FFNRT_BACKEND_OPENCL;
    const char *dir = strcmp(argv[2], "off") == 0 ? NULL : argv[2];
    int runs = argc > 3 ? atoi(argv[3]) : 1;
    for (int i = 0; i < runs; i++) {
        uint64_t hits = 0;
        double ms = bench_start_ms(b, dir, &hits);
        if (ms < 0) {
            fprintf(stderr, "bench_start: %s\n", ffnrt_last_error_message());
            return 1;
        }
        printf("%s start %.1f ms (cache %s, %llu hits)\n", argv[1], ms, dir ? dir : "off",
               (unsigned long long)hits);
    }
    return 0;
}
#endif
