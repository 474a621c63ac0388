/* Start-up time of a gated FFN layer, for the bench and the disk cache. */
#ifndef FFNRT_BENCH_START_H
#define FFNRT_BENCH_START_H

#include "ffnrt.h"

/* A gated layer whose first call is timed: the row's op, the GLU kind,
 * d_model, hidden, tokens, storage type (and its name) and the row's shape. */
typedef struct bench_start_layer {
    const char *op;
    ffnrt_glu glu;
    uint32_t d, hidden, tokens;
    ffnrt_dtype dtype;
    const char *dtype_name, *shape;
} bench_start_layer;
#define BENCH_START_LAYERS 2
extern const bench_start_layer bench_start_layers[BENCH_START_LAYERS];

/* Milliseconds from ffnrt_context_create through creating layer l (random
 * weights) and running its forward once, reading the result back, on the
 * backend's device `index` with the disk cache in cache_dir (NULL: the
 * cache off). Making the host weights and destroying the context (which
 * saves the Vulkan pipeline cache) are not timed. Negative when a call
 * fails (the message is ffnrt_last_error_message). hits, if not NULL,
 * gets the cache's hits. */
double bench_start_ms(const bench_start_layer *l, ffnrt_backend backend, uint32_t index, const char *cache_dir,
                      uint64_t *hits);

#endif
