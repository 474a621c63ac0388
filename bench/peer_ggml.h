/* ggml's backends as the bench's peers for gated FFN layers and a model's
 * FFN stack: its Vulkan backend on the same Vulkan device, its CPU backend
 * on the cores PoCL runs on, in the same run. Optional at build time: the
 * bench_ggml helper is built only when CMake finds a ggml install
 * (FFNRT_GGML_DIR). */
#ifndef FFNRT_BENCH_PEER_GGML_H
#define FFNRT_BENCH_PEER_GGML_H

#include "bench_parts.h"

#include <stddef.h>

/* Beside each fused SwiGLU row of rows[first, rows->n), the same layer
 * (shape, tokens, weight format) as a ggml graph, timed in the bench_ggml
 * helper (a fresh process: ggml aborts on what it cannot do): on a Vulkan
 * device ggml's Vulkan backend on it (rows "ggml-vulkan swiglu DxG"); on
 * the run's first OpenCL CPU device ggml's CPU backend on every core
 * (rows "ggml-cpu swiglu DxG"). One peer row per FFN row it ran, noting
 * ffnrt's speed over it on the fused path and, where the row has one, the
 * integer path's (host times), with issue 25's target marked; what could
 * not run goes to the run's peers line.
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
