/* ffnrt kernel dialect, C mapping: lets tests run shaders/math.inc on the
 * host. Compile with -ffp-contract=off so the compiler keeps the roundings
 * the GPU code relies on. */
#ifndef FFNRT_PRELUDE_HOST_H
#define FFNRT_PRELUDE_HOST_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <stdbool.h>

typedef uint32_t uint;
#define FN static inline
#define FN_ALWAYS_INLINE /* after FN; see prelude_opencl.cl */
#define PRECISE
#define F32(v) ((float)(v))
/* GPUs convert NaN and out-of-range floats to some int and wrap int
 * arithmetic; C calls both undefined. The host mapping saturates to +-2^30
 * and maps NaN to 0, so the exponent arithmetic after it stays defined. */
static inline int ffnrt_host_i32(float v)
{
    return isnan(v) ? 0 : v > 1073741824.0f ? 1073741824 : v < -1073741824.0f ? -1073741824 : (int)v;
}
#define I32(v) ffnrt_host_i32(v)
#define U32(v) ((uint)(v))
static inline uint ffnrt_host_as_uint(float f) { uint u; memcpy(&u, &f, 4); return u; }
static inline int ffnrt_host_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static inline float ffnrt_host_as_float(uint u) { float f; memcpy(&f, &u, 4); return f; }
#define AS_UINT(v) ffnrt_host_as_uint(v)
#define AS_INT(v) ffnrt_host_as_int(v)
#define AS_FLOAT(v) ffnrt_host_as_float(v)
#ifdef FFNRT_HOST_UNFUSED_FMA
/* Models Vulkan drivers (llvmpipe) whose fma() rounds twice, so the math
 * can be checked on the host for both kinds of device. */
#define FMA(a, b, c) ((a) * (b) + (c))
static inline float ffnrt_host_two_prod_err(float a, float b, float p)
{
    float ca = a * 4097.0f, ah = ca - (ca - a), al = a - ah;
    float cb = b * 4097.0f, bh = cb - (cb - b), bl = b - bh;
    return ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}
#define TWO_PROD_ERR(a, b, p) ffnrt_host_two_prod_err((a), (b), (p))
static inline float ffnrt_host_prod_diff(float a, float b, float c)
{
    float p = a * b;
    return (p - c) + ffnrt_host_two_prod_err(a, b, p);
}
#define PROD_DIFF(a, b, c) ffnrt_host_prod_diff((a), (b), (c))
#else
#ifdef __MINGW32__
/* mingw-w64's fmaf does not fuse: under Wine 17.5 % of the residuals
 * fmaf(a, b, -a*b) of random floats came out wrong. So it is done here:
 * a float product is exact in double, the sum rounds once and is made
 * round-to-odd (its TwoSum error sets the last bit), and a double with
 * 53 >= 24 + 2 bits rounded to odd then rounds to float as the fused
 * operation does. */
static inline float ffnrt_host_fmaf(float a, float b, float c)
{
    double p = (double)a * (double)b, s = p + (double)c;
    double sc = s - p, err = (p - (s - sc)) + ((double)c - sc);
    if (err != 0 && isfinite(s)) {
        if ((err < 0) != (s < 0))
            s = nextafter(s, 0.0); /* the exact sum truncated toward zero */
        uint64_t bits;
        memcpy(&bits, &s, sizeof bits);
        bits |= 1;
        memcpy(&s, &bits, sizeof s);
    }
    return (float)s;
}
#define fmaf ffnrt_host_fmaf
#endif
#define FMA(a, b, c) fmaf((a), (b), (c))
#define TWO_PROD_ERR(a, b, p) fmaf((a), (b), -(p)) /* a*b - p exactly, p = a*b rounded */
#define PROD_DIFF(a, b, c) fmaf((a), (b), -(c)) /* a*b - c exactly when it is a float */
#endif
#define FABS(v) fabsf(v)
#define MULHI(a, b) ((uint)(((uint64_t)(a) * (b)) >> 32)) /* high 32 bits of a uint product */
#define FLOOR(v) floorf(v)
#define RINT(v) rintf(v)
#define ISNAN(v) isnan(v)
#define ISINF(v) isinf(v)
#define FMIN(a, b) fminf((a), (b))
#define FMAX(a, b) fmaxf((a), (b))
typedef struct { float x, y; } f2;
#define F2(a, b) ((f2){(a), (b)})
typedef struct { float x, y, z, w; } f4;
#define F4(a, b, c, d) ((f4){(a), (b), (c), (d)})
static inline float ffnrt_host_dot4(f4 a, f4 b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }
#define DOT4(a, b) ffnrt_host_dot4((a), (b))
#define UNROLL /* see prelude_opencl.cl */
#define UNROLL_BY2 /* see prelude_opencl.cl */
/* Buffers (BUFFER_RO, BUFFER_RO_F4, LOAD_F4) exist only in kernels. */
#endif
