/* Start-up time of a gated FFN layer, for the bench and the disk cache. */
#ifndef FFNRT_BENCH_START_H
#define FFNRT_BENCH_START_H

#include "ffnrt.h"

/* Milliseconds from ffnrt_context_create through creating a gated SwiGLU
 * layer (d_model 512, hidden 1376, fp32) and running its forward once at
 * 1 token, reading the result back, on the backend's first device with
 * the disk cache in cache_dir (NULL: the cache off). Making the host
 * weights and destroying the context (which saves the Vulkan pipeline
 * cache) are not timed. Negative when a call fails (the message is
 * ffnrt_last_error_message). hits, if not NULL, gets the cache's hits. */
double bench_start_ms(ffnrt_backend backend, uint32_t index, const char *cache_dir, uint64_t *hits);

#endif
