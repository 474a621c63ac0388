/* ffnrt kernel dialect, GLSL 4.50 (Vulkan) mapping. #version and the build
 * defines are placed before this by the library. */
#extension GL_EXT_control_flow_attributes : enable

#define FN
#define PRECISE precise
#define F32(v) float(v)
#define I32(v) int(v)
#define U32(v) uint(v)
#define AS_UINT(v) floatBitsToUint(v)
#define AS_INT(v) floatBitsToInt(v)
#define AS_FLOAT(v) uintBitsToFloat(v)
/* GLSL only promises fma() a single rounding where its result feeds a
 * 'precise' variable; the two-float arithmetic in math.inc needs that. */
float ffn_fma_precise(float a, float b, float c)
{
    precise float r = fma(a, b, c);
    return r;
}
#define FMA(a, b, c) ffn_fma_precise((a), (b), (c))
#define FABS(v) abs(v)
#define FLOOR(v) floor(v)
#define RINT(v) roundEven(v)
#define ISNAN(v) isnan(v)
#define ISINF(v) isinf(v)
#define FMIN(a, b) min((a), (b))
#define FMAX(a, b) max((a), (b))
#define f2 vec2
#define F2(a, b) vec2((a), (b))

/* Kernel signature: buffers are descriptor bindings in set 0, Params is the
 * push-constant block. */
#define PARAMS_BEGIN layout(push_constant) uniform Params {
#define PARAMS_END } p;
#define KERNEL_BEGIN(name) layout(local_size_x = WG_SIZE, local_size_y = 1, local_size_z = 1) in;
#define BUFFER_RO(binding_, type, name) layout(std430, set = 0, binding = binding_) readonly buffer Buffer##binding_ { type name[]; };
#define BUFFER_RW(binding_, type, name) layout(std430, set = 0, binding = binding_) buffer Buffer##binding_ { type name[]; };
#define KERNEL_END void main()

#define LOCAL_ID gl_LocalInvocationID.x
#define GROUP_LINEAR_ID (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x)
