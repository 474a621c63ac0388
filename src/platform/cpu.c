/* Host CPU features (platform.h), guarded by architecture: <cpuid.h> is
 * GCC's and clang's x86 header (mingw-w64's GCC has it too); other CPUs
 * report no x86 feature. */
#include "platform/platform.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
/* AVX with its state enabled by the OS (SSE and AVX registers saved). */
static int has_avx_state(unsigned leaf1_ecx)
{
    if (!(leaf1_ecx & bit_AVX) || !(leaf1_ecx & bit_OSXSAVE))
        return 0;
    unsigned lo, hi;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 6u) == 6u;
}
#endif

/* F16C and the AVX state its VEX encoding needs, enabled by the OS. */
int ffnrt_cpu_has_f16c(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) && has_avx_state(c);
#else
    return 0;
#endif
}

/* AVX2 (leaf 7's EBX) and the AVX state. */
int ffnrt_cpu_has_avx2(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d, c1;
    if (!__get_cpuid(1, &a, &b, &c1, &d) || !has_avx_state(c1))
        return 0;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX2);
#else
    return 0;
#endif
}
