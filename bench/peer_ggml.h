/* ggml's Vulkan backend as the bench's peer for gated FFN layers, on the
 * same Vulkan device in the same run. Optional at build time: the bench_ggml
 * helper is built only when CMake finds a ggml install (FFNRT_GGML_DIR). */
#ifndef FFNRT_BENCH_PEER_GGML_H
#define FFNRT_BENCH_PEER_GGML_H

#include "bench_parts.h"

#include <stddef.h>

/* Beside each fused SwiGLU row of rows[first, rows->n) on a Vulkan device,
 * the same layer (shape, tokens, weight format) as a ggml graph on ggml's
 * Vulkan backend, timed in the bench_ggml helper (a fresh process: ggml
 * aborts on what it cannot do). One peer row per FFN row it ran, noting
 * ffnrt's speed over it; what could not run goes to the run's peers line.
 * Returns 0 (an absent peer is not an error). */
int bench_peer_ggml_rows(const bench_device *dev, const bench_config *cfg, size_t first, bench_rows *rows);

#endif
