/* The op table: every activation and every gated (GLU) kind, once. The
 * host code (names, validation, the kernel hooks), the double reference,
 * the tests and the bench all read these lists; no other file lists the
 * ops. It sits in include/ so that the lab (the double reference, the
 * bench) reads it as the library does, without src/ headers, but it is
 * not installed: the kernel expressions are the library's business, and
 * an app has ffnrt_activation_name and friends.
 *
 * FFNRT_ACTIVATIONS(X) calls, per activation, in ffnrt_activation's order:
 *   X(ENUM, name, params, forward, gradient, forward_f16)
 *   ENUM         FFNRT_ACT_<ENUM> of ffnrt.h
 *   name         the name ffnrt_activation_name prints (a C token: the
 *                double reference defines ref_op_<name> and ref_op_<name>_grad)
 *   params       which parameters it reads: FFNRT_OP_ALPHA (desc.alpha),
 *                FFNRT_OP_BETA (desc.beta), FFNRT_OP_SLOPES (a tensor of
 *                per-channel slopes; such an op cannot be fused into a
 *                GEMM epilogue), or 0
 *   forward      the kernel expression of f(v): v the input, i its element
 *                index; ALPHA, BETA and SLOPE(i) its parameters; the
 *                functions of shaders/math.inc
 *   gradient     f'(v), from shaders/math_grad.inc
 *   forward_f16  f(v) under fp16 arithmetic (ARITH_F16): the op's own
 *                products in fp16 registers (MUL_F16), the special
 *                functions from the fp32 math; x = +-inf keeps the fp32
 *                limit (inf * 0 would be NaN)
 * The host turns a row into the hooks every kernel calls: ACT(v, i),
 * DACT(v, i) and ACT_F16(v, i) (launch/kernel_defines.c).
 *
 * FFNRT_GLU_KINDS(X) calls, per gated kind, in ffnrt_glu's order:
 *   X(ENUM, name, GATE)   FFNRT_<ENUM>, its name, and FFNRT_ACT_<GATE>, the
 *                         activation applied to the gate: y = value * gate(g)
 *
 * Adding an activation: a row here (and its enum value in ffnrt.h), its
 * math in math.inc and math_grad.inc, its double reference in
 * tools/reference (ref_op_<name>, ref_op_<name>_grad). */
#ifndef FFNRT_OP_TABLE_H
#define FFNRT_OP_TABLE_H

#include "ffnrt.h"

enum { FFNRT_OP_ALPHA = 1, FFNRT_OP_BETA = 2, FFNRT_OP_SLOPES = 4 };

#define FFNRT_ACTIVATIONS(X)                                                                                         \
    X(RELU, relu, 0, "ffn_relu(v)", "ffn_relu_grad(v)", "ffn_relu(v)")                                              \
    X(LEAKY_RELU, leaky_relu, FFNRT_OP_ALPHA, "ffn_leaky_relu(v, ALPHA)", "ffn_leaky_relu_grad(v, ALPHA)",          \
      "((AS_UINT(v) & 0x80000000u) != 0u ? MUL_F16(ALPHA, v) : (v))")                                               \
    X(PRELU, prelu, FFNRT_OP_SLOPES, "ffn_leaky_relu(v, SLOPE(i))", "ffn_leaky_relu_grad(v, SLOPE(i))",             \
      "((AS_UINT(v) & 0x80000000u) != 0u ? MUL_F16(SLOPE(i), v) : (v))")                                            \
    X(ELU, elu, FFNRT_OP_ALPHA, "ffn_elu(v, ALPHA)", "ffn_elu_grad(v, ALPHA)",                                      \
      "((v) > 0.0f ? (v) : MUL_F16(ALPHA, ffn_expm1(v)))")                                                          \
    X(GELU, gelu, 0, "ffn_gelu(v)", "ffn_gelu_grad(v)",                                                              \
      "(ISINF(v) ? ffn_gelu(v) : MUL_F16(v, 0.5f * ffn_erfc((v) * -0.70710678118654752f)))")                        \
    X(GELU_TANH, gelu_tanh, 0, "ffn_gelu_tanh(v)", "ffn_gelu_tanh_grad(v)",                                          \
      "(ISINF(v) ? ffn_gelu_tanh(v) : MUL_F16(v, ffn_sigmoid(1.5957691216f * ((v) + 0.044715f * (v) * (v) * (v)))))") \
    X(SILU, silu, 0, "ffn_silu(v)", "ffn_silu_grad(v)", "(ISINF(v) ? ffn_silu(v) : MUL_F16(v, ffn_sigmoid(v)))")    \
    X(SWISH, swish, FFNRT_OP_BETA, "ffn_swish(v, BETA)", "ffn_swish_grad(v, BETA)",                                 \
      "(ISINF(v) ? ffn_swish(v, BETA) : MUL_F16(v, ffn_sigmoid(BETA * (v))))")                                      \
    X(SIGMOID, sigmoid, 0, "ffn_sigmoid(v)", "ffn_sigmoid_grad(v)", "ffn_sigmoid(v)")                               \
    X(TANH, tanh, 0, "ffn_tanh(v)", "ffn_tanh_grad(v)", "ffn_tanh(v)")

#define FFNRT_GLU_KINDS(X)        \
    X(GLU, glu, SIGMOID)          \
    X(REGLU, reglu, RELU)         \
    X(GEGLU, geglu, GELU)         \
    X(GEGLU_TANH, geglu_tanh, GELU_TANH) \
    X(SWIGLU, swiglu, SWISH)

/* One activation's row as data. */
typedef struct ffnrt_op_row {
    const char *name;
    unsigned params;
    const char *forward, *gradient, *forward_f16;
} ffnrt_op_row;

/* The row of act, or NULL for a value outside the enum. */
static inline const ffnrt_op_row *ffnrt_op_row_of(ffnrt_activation act)
{
#define FFNRT_OP_ROW_(E, n, p, f, g, h) [FFNRT_ACT_##E] = {#n, p, f, g, h},
    static const ffnrt_op_row rows[] = {FFNRT_ACTIVATIONS(FFNRT_OP_ROW_)};
#undef FFNRT_OP_ROW_
    return (unsigned)act < sizeof rows / sizeof rows[0] ? &rows[act] : NULL;
}

/* A gated kind's name and gate activation; NULL name for a value outside the enum. */
static inline const char *ffnrt_glu_row_name(ffnrt_glu kind)
{
#define FFNRT_GLU_NAME_(E, n, G) [FFNRT_##E] = #n,
    static const char *const names[] = {FFNRT_GLU_KINDS(FFNRT_GLU_NAME_)};
#undef FFNRT_GLU_NAME_
    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : NULL;
}

static inline ffnrt_activation ffnrt_glu_row_gate(ffnrt_glu kind)
{
#define FFNRT_GLU_GATE_(E, n, G) [FFNRT_##E] = FFNRT_ACT_##G,
    static const ffnrt_activation gates[] = {FFNRT_GLU_KINDS(FFNRT_GLU_GATE_)};
#undef FFNRT_GLU_GATE_
    return (unsigned)kind < sizeof gates / sizeof gates[0] ? gates[kind] : FFNRT_ACT_COUNT;
}

/* One row per enum value (rows are placed by their enum, so a duplicate is
 * a compiler warning and a missing one fails here). */
#define FFNRT_OP_COUNT_(...) +1
_Static_assert(0 FFNRT_ACTIVATIONS(FFNRT_OP_COUNT_) == FFNRT_ACT_COUNT, "one op-table row per ffnrt_activation");
_Static_assert(0 FFNRT_GLU_KINDS(FFNRT_OP_COUNT_) == FFNRT_GLU_COUNT, "one op-table row per ffnrt_glu");

#endif
