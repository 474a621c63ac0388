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
#define I32(v) ((int)(v))
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
#else
#define FMA(a, b, c) fmaf((a), (b), (c))
#define TWO_PROD_ERR(a, b, p) fmaf((a), (b), -(p)) /* a*b - p exactly, p = a*b rounded */
#endif
#define FABS(v) fabsf(v)
#define FLOOR(v) floorf(v)
#define RINT(v) rintf(v)
#define ISNAN(v) isnan(v)
#define ISINF(v) isinf(v)
#define FMIN(a, b) fminf((a), (b))
#define FMAX(a, b) fmaxf((a), (b))
typedef struct { float x, y; } f2;
#define F2(a, b) ((f2){(a), (b)})
#endif
