/* The lab's shared code (src/lab/): what the ffnrt command (src/cli), the
 * bench harness (bench/) and the compare harness (src/compare) all need
 * and would otherwise each write again: clocks, the time of day as text,
 * medians. Like the rest of the lab it uses the public API only (here:
 * nothing of ffnrt at all); args.h and numbers.h beside it read the
 * command line. */
#ifndef FFNRT_LAB_SHARED_H
#define FFNRT_LAB_SHARED_H

#include <stddef.h>

/* A monotonic clock, in seconds and in milliseconds. */
double lab_now_s(void);
static inline double lab_now_ms(void) { return 1e3 * lab_now_s(); }

/* The processors this program may run on now, at least 1 (the default
 * thread count of a peer that threads). */
int lab_online_cpus(void);

/* The time of day in UTC with milliseconds: "2026-12-02T04:30:57.123Z". */
void lab_now_iso(char *out, size_t len);

/* qsort's comparison of doubles, ascending (NaN compares equal to all). */
int lab_cmp_double(const void *a, const void *b);
/* Sorts v[0..n) and returns its median: the middle value, or the mean of
 * the two middle ones for an even n. n > 0. */
double lab_median(double *v, int n);

#endif
