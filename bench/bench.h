/* The device bench harness behind `ffnrt bench`. */
#ifndef FFNRT_BENCH_H
#define FFNRT_BENCH_H

int ffnrt_bench_main(int argc, char **argv);

#endif
