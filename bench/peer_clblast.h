/* CLBlast as the bench's peer for the GEMM part of the FFN, on the same
 * OpenCL device in the same run. Optional at build time. */
#ifndef FFNRT_BENCH_PEER_CLBLAST_H
#define FFNRT_BENCH_PEER_CLBLAST_H

#include <stddef.h>
#include <stdint.h>

/* Device times (profiling events, seconds) of CLBlast's SGEMM for
 * y[m,n] = x[m,k] * W[n,k]^T (the layout of an FFN projection) on the
 * OpenCL device named device_name, after one warm-up call: min(repeats,
 * 64) runs into times[64]. Returns 0 and sets *runs, or -1 with the reason
 * in why. */
int peer_clblast_sgemm(const char *device_name, int64_t m, int64_t n, int64_t k, int repeats, double *times, int *runs,
                       char *why, size_t why_len);

#endif
