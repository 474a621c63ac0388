/* Host CPU features (platform.h), guarded by architecture: <cpuid.h> is
 * GCC's and clang's x86 header (mingw-w64's GCC has it too); other CPUs
 * report no x86 feature. */
#include "platform/platform.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

/* F16C and the AVX state its VEX encoding needs, enabled by the OS. */
int ffnrt_cpu_has_f16c(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_F16C) || !(c & bit_AVX) || !(c & bit_OSXSAVE))
        return 0;
    unsigned lo, hi;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 6u) == 6u; /* SSE and AVX state */
#else
    return 0;
#endif
}
