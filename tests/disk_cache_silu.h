/* The SiLU that test_disk_cache's device cases build and run, shared with
 * its writer processes (tests/disk_cache_writer.c), whose results the
 * suite compares bit for bit with its own. */
#ifndef FFNRT_TESTS_DISK_CACHE_SILU_H
#define FFNRT_TESTS_DISK_CACHE_SILU_H

#define SILU_N 257 /* more than one workgroup, and not a multiple of one */

static inline void inputs(float *x)
{
    for (int i = 0; i < SILU_N; i++)
        x[i] = -8.0f + 16.0f * (float)i / (SILU_N - 1);
}

#endif
