/* ffnrt kernel dialect, OpenCL C 1.2 mapping.
 * Kernels and math in shaders/ are written once against these macros; see
 * prelude_glsl.glsl for the Vulkan mapping and prelude_host.h for the C one
 * used to test the math on the host. */
#pragma OPENCL FP_CONTRACT OFF /* the two-float tricks in math.inc need exact roundings */
#ifdef ARITH_F16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#define AFP half
#define AFP_FROM_BITS(b) as_half((ushort)(b)) /* exact: the rounding is storage.inc's */
#endif

#define FN                      /* function definition prefix */
#define FN_ALWAYS_INLINE __attribute__((always_inline)) /* after FN: big math helpers must be
                                 inlined or PoCL cannot vectorise across work items */
#define PRECISE                 /* GLSL needs 'precise' to forbid contraction; OpenCL has the pragma */
#define F32(v) ((float)(v))
#define I32(v) ((int)(v))
#define U32(v) ((uint)(v))
#define AS_UINT(v) as_uint(v)
#define AS_INT(v) as_int(v)
#define AS_FLOAT(v) as_float(v)
#define FMA(a, b, c) fma((a), (b), (c)) /* correctly rounded in OpenCL's full profile */
#define TWO_PROD_ERR(a, b, p) fma((a), (b), -(p)) /* a*b - p exactly, p = a*b rounded */
#define PROD_DIFF(a, b, c) fma((a), (b), -(c)) /* a*b - c exactly when it is a float (c ~ a*b) */
#define FABS(v) fabs(v)
#define MULHI(a, b) ((uint)(((ulong)(a) * (ulong)(b)) >> 32)) /* high 32 bits of a uint product (mul_hi is a library call in PoCL) */
#define FLOOR(v) floor(v)
#define RINT(v) rint(v)               /* round half to even */
#define ISNAN(v) isnan(v)
#define ISINF(v) isinf(v)
#define FMIN(a, b) fmin((a), (b))
#define FMAX(a, b) fmax((a), (b))
typedef float2 f2;
#define F2(a, b) ((float2)((a), (b)))
typedef float4 f4;
#define F4(a, b, c, d) ((float4)((a), (b), (c), (d)))
#define DOT4(a, b) dot((a), (b))
#define UNROLL _Pragma("unroll") /* before a loop with a constant trip count: unroll it fully (register arrays) */
#define UNROLL_BY2 _Pragma("unroll 2") /* before a loop whose body is short beside its loop overhead */
/* Vector loads from an fp32 binding: BUFFER_RO_F4(binding, name) after the
 * binding's BUFFER_RO lets LOAD_F4(name, i4) read elements 4*i4 .. 4*i4+3
 * (OpenCL needs no declaration: vload4 reads the float pointer). */
#define BUFFER_RO_F4(binding, name)
#define LOAD_F4(name, i4) vload4((i4), (name))
#define BUFFER_RW_F4(binding, name) /* and stores: STORE_F4(name, i4, v) */
#define STORE_F4(name, i4, v) vstore4((v), (i4), (name))
#define BUFFER_RO_U4(binding, name) /* the same for a binding of 32-bit words */
#define LOAD_U4(name, i4) vload4((i4), (name))
typedef uint4 u4;
#define U4(a, b, c, d) ((uint4)((a), (b), (c), (d)))
#define U4_SPLAT(s) ((uint4)(s))
/* 2-word views (a 16-bit binding's four elements: transpose.kernel). */
#define BUFFER_RO_U2(binding, name)
#define BUFFER_RW_U2(binding, name)
#define LOAD_U2(name, i2) vload2((i2), (name))
#define STORE_U2(name, i2, v) vstore2((v), (i2), (name))
typedef uint2 u2;
#define U2(a, b) ((uint2)((a), (b)))
#define F4_OF_INT4(u) convert_float4(as_int4(u)) /* the words of u as signed integers, to floats */
/* Each word of u's signed byte at bit sh, sign-extended to a word (two's complement). */
#define U4_SBYTE(u, sh) as_uint4(as_int4((u) << (uint4)(24u - (sh))) >> 24)
/* Four halves from element i of a packed 16-bit binding, converted
 * natively (vload_half is core OpenCL, no cl_khr_fp16 needed); a prelude
 * without it leaves LOAD_HALF4 undefined and kernels unpack the bits. */
#define LOAD_HALF4(buf, i) vload_half4(0, (const __global half *)(buf) + (i))
/* One 16-bit element's bits, read or stored by itself: OpenCL's stores are
 * byte-addressable, so work-items may own neighbouring halves of a word
 * (optimizer.kernel's state-ordered update). GLSL has no such store
 * without a 16-bit storage feature, and leaves these undefined. */
#define LOAD_BITS16(buf, e) ((uint)((const __global ushort *)(buf))[(e)])
#define STORE_BITS16(buf, e, bits) ((__global ushort *)(buf))[(e)] = (ushort)(bits)
/* The element-wise loop (storage.inc) converts 16-bit values itself, from
 * whole words: PoCL 3.1 runs vstore_half one element at a time (60x slower
 * than the integer rounding there), vload_half is no faster than the bit
 * conversion, and a ushort view of the words made bf16 9x slower. Where
 * the host chose it (HALF_CONVERSION_F16C, dispatch/kernel_params.inc) and
 * the compiler targets F16C, it converts the halves of a word in hardware
 * instead: clang's _Float16 needs no cl_khr_fp16 (PoCL has none), and its
 * fpext / fptrunc are plain scalar operations that PoCL's vectoriser
 * widens across work-items into vcvtph2ps / vcvtps2ph (exact widening;
 * rounding to nearest even, NaN kept quiet, like storage.inc's). A vector
 * builtin per work-item would instead stop the whole kernel vectorising.
 * The widened value is XORed with an opaque zero (no dispatch has 2^48
 * groups): without it LLVM narrows a compare of it with a constant (ReLU's
 * x < 0.0f) to a half compare, which x86 runs lane by lane (4x slower). */
#if defined(HALF_CONVERSION_F16C) && defined(__F16C__) && defined(__FLT16_MAX__) && defined(__has_builtin)
#if __has_builtin(__builtin_bit_cast) /* nested: a compiler without __has_builtin never parses it */
#define HALF_BITS_TO_F32(h) \
    as_float(as_uint((float)__builtin_bit_cast(_Float16, (ushort)(h))) ^ (uint)(get_num_groups(0) >> 48))
#define F32_TO_HALF_BITS(v) ((uint)__builtin_bit_cast(ushort, (_Float16)(v)))
#endif
#endif
/* The element-wise loop computes the two halves of a 16-bit word in
 * separate blocks, the second under a condition that always holds (an
 * element-wise dispatch has p.n > 0; storage.inc's SECOND_HALF): in one
 * block LLVM's SLP vectoriser pairs their identical computations into
 * 2-wide vectors, and PoCL's work-group vectoriser then refuses the whole
 * loop ("instruction return type cannot be vectorized"): SwiGLU' in 16-bit
 * storage ran scalar, 10x slower than in fp32. */
#define SECOND_HALF if (p.n != 0u)
/* Four unsigned codes of a 32-bit word as floats (quant.inc): 4-bit ones
 * from bit sh on (sh, sh + 4, sh + 8, sh + 12), or its four bytes. */
#define NIBBLES4(w, sh) convert_float4(((uint4)(w) >> (uint4)((sh), (sh) + 4u, (sh) + 8u, (sh) + 12u)) & (uint4)(15u))
#define BYTES4(w) convert_float4(((uint4)(w) >> (uint4)(0u, 8u, 16u, 24u)) & (uint4)(255u))
/* ... or as signed bytes (two's complement; >> of a negative int is
 * arithmetic in every OpenCL compiler, Clang's included). */
#define SBYTES4(w) convert_float4(as_int4((uint4)(w) << (uint4)(24u, 16u, 8u, 0u)) >> 24)
/* Halves 2j and 2j + 1 of a 16-bit binding as a float2, converted exactly
 * (subnormals included; vload_half2 is core OpenCL). */
#define LOAD_HALF2(buf, j) vload_half2((j), (const __global half *)(buf))
/* PoCL 3.1's vload_half2/4/16 convert in bit arithmetic even where the CPU
 * has F16C: some nine vector operations per conversion, 40% of the
 * integer path's block loop. Where the host chose F16C (as for storage.inc's
 * HALF_BITS_TO_F32) the words are read as _Float16 vectors and widened
 * instead: LLVM's fpext, which x86 runs as one vcvtph2ps, exact. */
#if defined(HALF_CONVERSION_F16C) && defined(__F16C__) && defined(__FLT16_MAX__) && defined(__has_builtin)
#if __has_builtin(__builtin_convertvector)
typedef _Float16 f16c_h2 __attribute__((ext_vector_type(2)));
typedef _Float16 f16c_h4 __attribute__((ext_vector_type(4)));
typedef _Float16 f16c_h16 __attribute__((ext_vector_type(16)));
#undef LOAD_HALF2
#undef LOAD_HALF4
#define LOAD_HALF2(buf, j) __builtin_convertvector(__builtin_astype(vload2((j), (const __global ushort *)(buf)), f16c_h2), float2)
#define LOAD_HALF4(buf, i) \
    __builtin_convertvector(__builtin_astype(vload4(0, (const __global ushort *)(buf) + (i)), f16c_h4), float4)
#define LOAD_HALF16(buf, i) \
    __builtin_convertvector(__builtin_astype(vload16(0, (const __global ushort *)(buf) + (i)), f16c_h16), float16)
#endif
#endif
/* Sixteen-wide vectors, for drivers that run each work-item as vector code
 * (quant.inc's WQ_WIDE): 16 floats of a binding from element i, 16 codes
 * of 2 words (4 bits) or 4 words (8 bits), and the sum of 16 lanes as 4.
 * A prelude without them (HAVE_V16 undefined) takes four at a time. */
#define HAVE_V16 1
typedef float16 v16;
#define V16_ZERO ((float16)(0.0f))
#define V16_SPLAT(s) ((float16)(s))
#define V16_FMA(a, b, c) fma((a), (b), (c))
#define V16_SUM4(v) (((v).s0123 + (v).s4567) + ((v).s89ab + (v).scdef))
#define V16_LOAD(buf, i) vload16(0, (buf) + (i))
#ifdef LOAD_HALF16
#define V16_LOAD_HALF(buf, i) LOAD_HALF16(buf, i)
#else
#define V16_LOAD_HALF(buf, i) vload_half16(0, (const __global half *)(buf) + (i))
#endif
#define V16_NIBBLES(buf, i) convert_float16((vload2(0, (buf) + (i)).s0000000011111111 >> \
    (uint16)(0u, 4u, 8u, 12u, 16u, 20u, 24u, 28u, 0u, 4u, 8u, 12u, 16u, 20u, 24u, 28u)) & (uint16)(15u))
#define V16_BYTES(buf, i) convert_float16((vload4(0, (buf) + (i)).s0000111122223333 >> \
    (uint16)(0u, 8u, 16u, 24u, 0u, 8u, 16u, 24u, 0u, 8u, 16u, 24u, 0u, 8u, 16u, 24u)) & (uint16)(255u))
#define V16_SBYTES(buf, i) convert_float16(as_int16(vload4(0, (buf) + (i)).s0000111122223333 << \
    (uint16)(24u, 16u, 8u, 0u, 24u, 16u, 8u, 0u, 24u, 16u, 8u, 0u, 24u, 16u, 8u, 0u)) >> 24)
/* The integer path's byte dot products (quant.inc's XQ_BYTES layout): a
 * block's 32 weight codes (a uint8 of bytes) times x's 32 signed codes
 * (the same), the products summed in fours into an int8. Where the kernel
 * compiler targets x86 with AVX2 (PoCL builds for the host CPU), AVX2's
 * own: vpmaddubsw (unsigned by signed bytes, pairs summed into 16 bits
 * with saturation, never reached: at most 2 x 15 x 127 for 4-bit codes,
 * 2 x 128 x 127 for Q8_0's magnitudes) and vpmaddwd by ones, two
 * instructions for 32 products where the pair trick of X_Q8's 16-bit
 * layout takes 16 in 4-wide vectors. Signed weights (Q8_0) go through
 * their magnitudes, with x's signs flipped where theirs are negative
 * (vpabsb, vpsignb; |-128| is 128 unsigned). Elsewhere, and under
 * FFNRT_LIMITS byte_dot=0 (XQ_BYTE_DOT_PLAIN, so that x86 tests the form
 * other CPUs run), plain vectors, summed in the same fours. Clang 15 and
 * later spell vpabsb __builtin_elementwise_abs. */
#define HAVE_XQ_BYTE_DOT 1
#if defined(__x86_64__) && defined(__AVX2__) && defined(__has_builtin) && !defined(XQ_BYTE_DOT_PLAIN)
#if __has_builtin(__builtin_ia32_pmaddubsw256) && __has_builtin(__builtin_ia32_pmaddwd256) && \
    __has_builtin(__builtin_elementwise_abs) && __has_builtin(__builtin_ia32_psignb256)
#define XQ_BYTE_DOT_X86 1
#endif
#endif
#ifdef XQ_BYTE_DOT_X86
typedef char xq_c32 __attribute__((ext_vector_type(32)));
#define XQ_BYTE_DOT_U(w8, x8) __builtin_ia32_pmaddwd256(__builtin_ia32_pmaddubsw256( \
    __builtin_astype((w8), xq_c32), __builtin_astype((x8), xq_c32)), (short16)(1))
#define XQ_BYTE_DOT_S(w8, x8) __builtin_ia32_pmaddwd256(__builtin_ia32_pmaddubsw256( \
    __builtin_elementwise_abs(__builtin_astype((w8), xq_c32)), \
    __builtin_ia32_psignb256(__builtin_astype((x8), xq_c32), __builtin_astype((w8), xq_c32))), (short16)(1))
#else
/* Lane k sums bytes 4k..4k+3, as vpmaddwd's does: Q6_K's two scales a
 * block of 32 take lanes 0..3 and 4..7 apart. */
FN int8 xq_byte_dot(short16 w0, short16 w1, uint8 x8)
{
    short16 p0 = w0 * convert_short16(as_char16(x8.s0123)), p1 = w1 * convert_short16(as_char16(x8.s4567));
    int8 a0 = convert_int8(p0.even) + convert_int8(p0.odd), a1 = convert_int8(p1.even) + convert_int8(p1.odd);
    return (int8)(a0.even + a0.odd, a1.even + a1.odd);
}
#define XQ_BYTE_DOT_U(w8, x8) xq_byte_dot(convert_short16(as_uchar16((w8).s0123)), \
    convert_short16(as_uchar16((w8).s4567)), (x8))
#define XQ_BYTE_DOT_S(w8, x8) xq_byte_dot(convert_short16(as_char16((w8).s0123)), \
    convert_short16(as_char16((w8).s4567)), (x8))
#endif
/* 32-bit atomics on a uint word of a binding or of a shared array (the
 * statistics variant, shaders/stats.inc; no 64-bit atomics are assumed).
 * ADD and CAS return the word's previous value. */
#define ATOMIC_AND(buf, i, v) atomic_and(&buf[i], v)
#define ATOMIC_OR(buf, i, v) atomic_or(&buf[i], v)
#define ATOMIC_ADD(buf, i, v) atomic_add(&buf[i], v)
#define ATOMIC_MIN(buf, i, v) atomic_min(&buf[i], v)
#define ATOMIC_MAX(buf, i, v) atomic_max(&buf[i], v)
#define ATOMIC_CAS(buf, i, expected, desired) atomic_cmpxchg(&buf[i], expected, desired)

/* Kernel signature: buffers and the Params struct are kernel arguments. */
#define PARAMS_BEGIN typedef struct {
#define PARAMS_END } Params;
#define KERNEL_BEGIN(name) __kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void name(
#define BUFFER_RO(binding, type, name) __global const type *name,
#define BUFFER_RW(binding, type, name) __global type *name,
#define KERNEL_END const Params p)

#define LOCAL_ID ((uint)get_local_id(0))
#define GROUP_ID_X ((uint)get_group_id(0))
#define GROUP_ID_Y ((uint)get_group_id(1))
#define GROUP_COUNT_X ((uint)get_num_groups(0))

/* Workgroup-shared arrays: GLSL declares them at global scope, OpenCL in
 * the kernel's outermost scope, so a kernel lists them once in a macro and
 * places both SHARED_GLOBAL_SCOPE(list) before KERNEL_BEGIN and
 * SHARED_KERNEL_SCOPE(list) first in its body. */
#define SHARED(type, name, size) __local type name[size];
#define SHARED_GLOBAL_SCOPE(list)
#define SHARED_KERNEL_SCOPE(list) list
#define BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
/* Large dispatches use a 2-D grid of workgroups to stay under the
 * per-dimension workgroup-count limit. */
#define GROUP_LINEAR_ID ((uint)get_group_id(0) + (uint)get_group_id(1) * (uint)get_num_groups(0))
