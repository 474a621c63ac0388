/* Timing for the calibration and the tuner. */
#include "core/context.h"
#include "platform/platform.h"

#include <stdlib.h>

double ffnrt_now_ms(void) { return 1e-6 * (double)ffnrt_monotonic_ns(); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double ffnrt_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    return v[n / 2];
}

double ffnrt_minimum(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}
