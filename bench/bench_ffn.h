/* The FFN rows of `ffnrt bench` (bench_ffn.c). */
#ifndef FFNRT_BENCH_FFN_H
#define FFNRT_BENCH_FFN_H

#include "ffnrt.h"
#include <stdio.h>

typedef struct bench_ffn_options {
    int quick;       /* the two small workloads, fp16 on the first only, tokens 1 and 64 */
    int repeats;     /* runs per measurement at most */
    double budget_s; /* per measurement, after the warm-up */
} bench_ffn_options;

/* Measures and prints the FFN table for ctx's device; appends CSV rows
 * (device,backend,workload,dtype,tokens,fused_s,unfused_s,gflops,weight_gbps,
 * x_copy,fused_over_unfused,x_best) to csv when non-NULL. 0 on success. */
int ffnrt_bench_ffn(ffnrt_context *ctx, const bench_ffn_options *o, FILE *csv);

#endif
