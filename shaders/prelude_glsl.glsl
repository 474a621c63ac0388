/* ffnrt kernel dialect, GLSL 4.50 (Vulkan) mapping. #version and the build
 * defines are placed before this by the library. */
#extension GL_EXT_control_flow_attributes : enable
#ifdef ARITH_F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define AFP float16_t
#define AFP_FROM_BITS(b) unpackFloat2x16(b).x /* exact: the rounding is storage.inc's */
#endif

#if defined(WIDE_WORDS) || defined(VIEWS_64)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#ifdef WIDE_WORDS
/* 8-word views of a binding (WORDS8: a u64vec4, 32 bytes an access), where
 * the device has 64-bit integers (shaderInt64): llvmpipe loads and stores
 * a storage buffer lane by lane, one pass an access, and a pass costs
 * about the same for 4 bytes, 16 or 32 (kernel_params.inc's
 * ew_wide_words). W8_LO and W8_HI: words 0..3 and 4..7 as a uvec4 (each
 * 64-bit component is two words, the lower first); W8_OF joins them. */
#define WORDS8 u64vec4
#define BUFFER_RO_W8(binding_, name) layout(std430, set = 0, binding = binding_) readonly buffer BufferW8_##binding_ { u64vec4 name##_w8[]; };
#define BUFFER_RW_W8(binding_, name) layout(std430, set = 0, binding = binding_) buffer BufferW8_##binding_ { u64vec4 name##_w8[]; };
#define LOAD_W8(name, i8) name##_w8[(i8)]
#define STORE_W8(name, i8, v) name##_w8[(i8)] = (v)
#define W8_LO(v) uvec4(unpack32((v).x), unpack32((v).y))
#define W8_HI(v) uvec4(unpack32((v).z), unpack32((v).w))
#define W8_OF(lo, hi) u64vec4(pack64((lo).xy), pack64((lo).zw), pack64((hi).xy), pack64((hi).zw))
#endif

#ifdef XQ_PACKED_DOT
/* The integer path's packed 4 x 8-bit dot product: a word of four signed
 * bytes by another, summed into an int (SPIR-V's OpSDot with the packed
 * vector format, VK_KHR_shader_integer_dot_product; the device enables
 * shaderIntegerDotProduct). Debian's glslang 12 has no
 * GL_EXT_integer_dot_product, so the instruction is declared through
 * GL_EXT_spirv_intrinsics: opcode 4450 (OpSDot), capabilities 6019
 * (DotProduct) and 6018 (DotProductInput4x8BitPacked), and the literal 0
 * (PackedVectorFormat4x8Bit). */
#extension GL_EXT_spirv_intrinsics : require
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int ffn_sdot_4x8_packed(uint a, uint b, spirv_literal int packed_vector_format);
#define SDOT_4X8(a, b) ffn_sdot_4x8_packed((a), (b), 0)
#endif

#define FN
#define FN_ALWAYS_INLINE /* after FN; GLSL compilers inline anyway */
#define PRECISE precise
#define F32(v) float(v)
#define I32(v) int(v)
#define U32(v) uint(v)
#define AS_UINT(v) floatBitsToUint(v)
#define AS_INT(v) floatBitsToInt(v)
#define AS_FLOAT(v) uintBitsToFloat(v)
/* FMA may round twice in Vulkan: GLSL leaves fma() unfused outside
 * 'precise' uses, and llvmpipe computes it as a multiply and an add even
 * then. Use it for polynomials; exact products go through TWO_PROD_ERR. */
#define FMA(a, b, c) fma((a), (b), (c))
/* a*b - p exactly, for p = a*b rounded (Dekker's product with Veltkamp's
 * split, exact for |a|, |b| < 2^115 without any fused operation). */
float ffn_two_prod_err(float a, float b, float p)
{
    precise float ca = a * 4097.0f;
    precise float ah = ca - (ca - a);
    precise float al = a - ah;
    precise float cb = b * 4097.0f;
    precise float bh = cb - (cb - b);
    precise float bl = b - bh;
    precise float e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    return e;
}
#define TWO_PROD_ERR(a, b, p) ffn_two_prod_err((a), (b), (p))
/* a*b - c exactly when it is a float (c close to a*b: Sterbenz), the
 * residual of a quotient; one fma() where it is fused. */
float ffn_prod_diff(float a, float b, float c)
{
    precise float p = a * b;
    precise float e = (p - c) + ffn_two_prod_err(a, b, p);
    return e;
}
#define PROD_DIFF(a, b, c) ffn_prod_diff((a), (b), (c))
#define FABS(v) abs(v)
/* The high half from 16-bit halves, 32-bit products only: llvmpipe ran
 * umulExtended at about the cost of copying an element (one a work-item
 * made PReLU 0.55x copy, this 0.9x). Exact: the middle sum stays below
 * 3 * 2^16, and the result is the 64-bit product's (checked against it on
 * 2e9 random and edge pairs when written). */
uint ffn_mulhi(uint a, uint b)
{
    uint al = a & 0xffffu, ah = a >> 16u, bl = b & 0xffffu, bh = b >> 16u;
    uint lh = al * bh, hl = ah * bl;
    uint carry = ((al * bl >> 16u) + (lh & 0xffffu) + (hl & 0xffffu)) >> 16u;
    return ah * bh + (lh >> 16u) + (hl >> 16u) + carry;
}
#define MULHI(a, b) ffn_mulhi((a), (b)) /* high 32 bits of a uint product */
#define FLOOR(v) floor(v)
#define RINT(v) roundEven(v)
#define ISNAN(v) isnan(v)
#define ISINF(v) isinf(v)
#define FMIN(a, b) min((a), (b))
#define FMAX(a, b) max((a), (b))
#define f2 vec2
#define F2(a, b) vec2((a), (b))
#define f4 vec4
#define F4(a, b, c, d) vec4((a), (b), (c), (d))
#define DOT4(a, b) dot((a), (b))
#define UNROLL [[unroll]] /* see prelude_opencl.cl */
#define UNROLL_BY2 /* GLSL has no unroll count */
/* Element-wise loop (storage.inc): each invocation takes ITEMS consecutive
 * words. llvmpipe reads a storage buffer lane by lane whatever the
 * addresses, and neighbouring words in one invocation cost it 10 to 30%
 * less CPU time than words strided by the workgroup (PoCL, which vectorises
 * across work-items, wants the stride). */
#define ITEMS_CONSECUTIVE 1
#define ITEMS_VEC4 1 /* storage.inc: EW_WHOLE_ITEMS_VEC4; transpose.kernel, sumsq.kernel */
/* Vector loads, see prelude_opencl.cl: a vec4 view of the same binding
 * (descriptor aliasing). llvmpipe loads a vec4 in one pass over its SIMD
 * lanes where four floats take four.
 *
 * VIEWS_64 (llvmpipe with shaderInt64: dispatch/kernel_params.c's
 * ffnrt_views64): the same 16 bytes as two 64-bit words. Each pass of
 * llvmpipe's lane loop (Mesa 22.3's emit_load_mem) loads and
 * bounds-checks the access component by component, so two components
 * cost about half of four for the same bytes. */
#ifdef VIEWS_64
uvec4 ffn_words_of_64(u64vec2 v) { return uvec4(unpack32(v.x), unpack32(v.y)); }
u64vec2 ffn_64_of_words(uvec4 v) { return u64vec2(pack64(v.xy), pack64(v.zw)); }
#define BUFFER_RO_F4(binding_, name) layout(std430, set = 0, binding = binding_) readonly buffer BufferF4_##binding_ { u64vec2 name##_f4[]; };
#define LOAD_F4(name, i4) uintBitsToFloat(ffn_words_of_64(name##_f4[(i4)]))
#define BUFFER_RO_U4(binding_, name) layout(std430, set = 0, binding = binding_) readonly buffer BufferU4_##binding_ { u64vec2 name##_u4[]; };
#define LOAD_U4(name, i4) ffn_words_of_64(name##_u4[(i4)])
#define BUFFER_RW_F4(binding_, name) layout(std430, set = 0, binding = binding_) buffer BufferF4_##binding_ { u64vec2 name##_f4[]; };
#define BUFFER_RW_U4(binding_, name) layout(std430, set = 0, binding = binding_) buffer BufferU4_##binding_ { u64vec2 name##_u4[]; };
#define STORE_F4(name, i4, v) name##_f4[(i4)] = ffn_64_of_words(floatBitsToUint(v))
#define STORE_U4(name, i4, v) name##_u4[(i4)] = ffn_64_of_words(v)
#else
#define BUFFER_RO_F4(binding_, name) layout(std430, set = 0, binding = binding_) readonly buffer BufferF4_##binding_ { vec4 name##_f4[]; };
#define LOAD_F4(name, i4) name##_f4[(i4)]
/* The same for a binding of 32-bit words (packed 16-bit storage). */
#define BUFFER_RO_U4(binding_, name) layout(std430, set = 0, binding = binding_) readonly buffer BufferU4_##binding_ { uvec4 name##_u4[]; };
#define LOAD_U4(name, i4) name##_u4[(i4)]
/* Writable views, for 4-word stores (storage.inc's EW_WHOLE_ITEMS_VEC4). */
#define BUFFER_RW_F4(binding_, name) layout(std430, set = 0, binding = binding_) buffer BufferF4_##binding_ { vec4 name##_f4[]; };
#define BUFFER_RW_U4(binding_, name) layout(std430, set = 0, binding = binding_) buffer BufferU4_##binding_ { uvec4 name##_u4[]; };
#define STORE_F4(name, i4, v) name##_f4[(i4)] = (v)
#define STORE_U4(name, i4, v) name##_u4[(i4)] = (v)
#endif
/* 2-word views (a 16-bit binding's four elements: transpose.kernel). */
#define BUFFER_RO_U2(binding_, name) layout(std430, set = 0, binding = binding_) readonly buffer BufferU2_##binding_ { uvec2 name##_u2[]; };
#define BUFFER_RW_U2(binding_, name) layout(std430, set = 0, binding = binding_) buffer BufferU2_##binding_ { uvec2 name##_u2[]; };
#define LOAD_U2(name, i2) name##_u2[(i2)]
#define STORE_U2(name, i2, v) name##_u2[(i2)] = (v)
#define u2 uvec2
#define U2(a, b) uvec2((a), (b))
#define u4 uvec4 /* a 4-word vector, as f4 */
#define U4(a, b, c, d) uvec4((a), (b), (c), (d))
#define U4_SPLAT(s) uvec4(s)
#define F4_OF_INT4(u) vec4(ivec4(u)) /* the words of u as signed integers, to floats */
#define U4_SBYTE(u, sh) uvec4(ivec4((u) << uvec4(24u - (sh))) >> 24) /* see prelude_opencl.cl */
/* No native half loads (see LOAD_HALF4 in prelude_opencl.cl). */
/* See prelude_opencl.cl. */
#define NIBBLES4(w, sh) vec4((uvec4(w) >> uvec4((sh), (sh) + 4u, (sh) + 8u, (sh) + 12u)) & uvec4(15u))
#define BYTES4(w) vec4((uvec4(w) >> uvec4(0u, 8u, 16u, 24u)) & uvec4(255u))
#define SBYTES4(w) vec4(ivec4(uvec4(w) << uvec4(24u, 16u, 8u, 0u)) >> 24) /* GLSL's >> of int is arithmetic */
/* 32-bit atomics, see prelude_opencl.cl. */
#define ATOMIC_AND(buf, i, v) atomicAnd(buf[i], v)
#define ATOMIC_OR(buf, i, v) atomicOr(buf[i], v)
#define ATOMIC_ADD(buf, i, v) atomicAdd(buf[i], v)
#define ATOMIC_MIN(buf, i, v) atomicMin(buf[i], v)
#define ATOMIC_MAX(buf, i, v) atomicMax(buf[i], v)
#define ATOMIC_CAS(buf, i, expected, desired) atomicCompSwap(buf[i], expected, desired)

/* Kernel signature: buffers are descriptor bindings in set 0, Params is the
 * push-constant block. */
#define PARAMS_BEGIN layout(push_constant) uniform Params {
#define PARAMS_END } p;
#define KERNEL_BEGIN(name) layout(local_size_x = WG_SIZE, local_size_y = 1, local_size_z = 1) in;
#define BUFFER_RO(binding_, type, name) layout(std430, set = 0, binding = binding_) readonly buffer Buffer##binding_ { type name[]; };
#define BUFFER_RW(binding_, type, name) layout(std430, set = 0, binding = binding_) buffer Buffer##binding_ { type name[]; };
#define KERNEL_END void main()

#define LOCAL_ID gl_LocalInvocationID.x
#define GROUP_ID_X gl_WorkGroupID.x
#define GROUP_ID_Y gl_WorkGroupID.y
#define GROUP_COUNT_X gl_NumWorkGroups.x

/* Workgroup-shared arrays: see prelude_opencl.cl. */
#define SHARED(type, name, size) shared type name[size];
#define SHARED_GLOBAL_SCOPE(list) list
#define SHARED_KERNEL_SCOPE(list)
#define BARRIER() barrier()
#define GROUP_LINEAR_ID (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x)
