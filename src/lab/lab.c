/* The lab's shared code: clocks, the time of day, medians (lab.h). */
#include "lab.h"

#include "ffnrt_lab.h" /* the platform layer's clock and UTC time */

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

double lab_now_s(void) { return 1e-9 * (double)ffnrt_lab_monotonic_ns(); }

int lab_online_cpus(void) { return ffnrt_lab_online_cpus(); }

void lab_now_iso(char *out, size_t len)
{
    struct tm tm;
    int ms = 0;
    ffnrt_lab_utc_now(&tm, &ms);
    char day[24];
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, len, "%s.%03dZ", day, ms);
}

int lab_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double lab_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, lab_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
