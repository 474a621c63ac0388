/* ggml's Vulkan backend as the bench's peer for gated FFN layers, on the
 * same Vulkan device in the same run, and ggml's CPU and Vulkan backends
 * beside a model's FFN stack. Optional at build time: the bench_ggml
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

/* Beside the stack rows of rows[first, rows->n) (path "auto", group
 * "stack"), the same model's FFN stack (cfg->gguf_path) as one ggml graph
 * at the same token counts, in the bench_ggml helper: ggml's CPU backend on
 * every host core once a run, beside the first OpenCL CPU device's rows
 * (PoCL), and ggml's Vulkan backend on each Vulkan device. Rows "ggml-cpu
 * OP" and "ggml-vulkan OP" in tokens a second, each with ffnrt's speed over
 * ggml's (host times) as its ratio; an absent peer goes to the run's peers
 * line. Returns 0. */
int bench_peer_ggml_stack_rows(const bench_device *dev, const bench_config *cfg, size_t first, bench_rows *rows);

#endif
