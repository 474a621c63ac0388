/* The FFN rows of `ffnrt bench` (bench_ffn.c): bench_part_ffn in bench_parts.h. */
#ifndef FFNRT_BENCH_FFN_H
#define FFNRT_BENCH_FFN_H

#include "bench_parts.h"

#endif
