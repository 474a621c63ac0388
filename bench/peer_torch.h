/* PyTorch's CPU training step as the bench's peer for the FFN train rows:
 * the same layer and step (training forward, backward against the row's
 * fixed dy, AdamW) in PyTorch on the host CPU, timed by
 * bench/peers/torch_train.py in a python3 that can import torch, in the
 * same run. Optional at run time: absent (with the reason on the run's
 * peers line) when no python3 imports torch. */
#ifndef FFNRT_BENCH_PEER_TORCH_H
#define FFNRT_BENCH_PEER_TORCH_H

#include "bench_parts.h"

#include <stddef.h>

/* Beside each f32 train row of rows[first, rows->n), a peer row
 * "pytorch-cpu-OP" with PyTorch's step time, its ratio ffnrt's step time
 * over PyTorch's (ratio_to "ffnrt-step"). The interpreter is FFNRT_PYTHON,
 * else python3 on PATH, else the distribution's /usr/bin/python3 (where
 * python3-torch installs); which one imports torch is found once a
 * process. Returns 0 (an absent peer is not an error). */
int bench_peer_torch_rows(const bench_device *dev, const bench_config *cfg, size_t first, bench_rows *rows);

#endif
