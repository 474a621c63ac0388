#!/bin/sh
# Operations per element of every activation in shaders/math.inc and
# shaders/math_grad.inc, counted from the math itself: each op is compiled
# from the host mapping of the dialect (prelude_host.h) to LLVM IR with
# clang -O2 (no vectorisation, no contraction), and the IR instructions of
# each function are counted. Bit casts, returns and calls' glue are free.
#
#   tools/math_ops.sh            # table: fused FMA (OpenCL, PoCL) and
#                                # unfused (Vulkan/llvmpipe: fma() is a multiply
#                                # and an add, exact products are Dekker's)
#
# Columns: ops (every arithmetic, compare, select and conversion), of them
# div (divisions, the costly one on CPUs) and sel (compares and selects).
# The fp16 and bf16 storage paths run the same fp32 math (their load/store
# conversion is the kernel's, not counted here).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/ops.c" <<'EOF'
#include "shaders/prelude_host.h"
/* GPUs convert float to int in one instruction; the host mapping's NaN and
 * range guards are not part of the device's work. */
#undef I32
#define I32(v) ((int)(v))
#undef FN_ALWAYS_INLINE
#define FN_ALWAYS_INLINE __attribute__((always_inline)) /* as on the devices: all inlined */
#include "shaders/math.inc"
#include "shaders/math_grad.inc"
#define OP1(name, expr) __attribute__((flatten)) float op_##name(float v) { return expr; }
OP1(relu, ffn_relu(v))
OP1(leaky_relu, ffn_leaky_relu(v, 0.01f))
OP1(elu, ffn_elu(v, 1.0f))
OP1(gelu, ffn_gelu(v))
OP1(gelu_tanh, ffn_gelu_tanh(v))
OP1(silu, ffn_silu(v))
OP1(swish, ffn_swish(v, 1.702f))
OP1(sigmoid, ffn_sigmoid(v))
OP1(tanh, ffn_tanh(v))
OP1(exp, ffn_exp(v))
OP1(erfc, ffn_erfc(v))
OP1(elu_grad, ffn_elu_grad(v, 1.0f))
OP1(gelu_grad, ffn_gelu_grad(v))
OP1(gelu_tanh_grad, ffn_gelu_tanh_grad(v))
OP1(silu_grad, ffn_silu_grad(v))
OP1(swish_grad, ffn_swish_grad(v, 1.702f))
OP1(sigmoid_grad, ffn_sigmoid_grad(v))
OP1(tanh_grad, ffn_tanh_grad(v))
/* A gated gradient evaluates the gate's activation and its derivative of
 * one input (glu.kernel): both, plus the one add that joins them here. */
OP1(glu_grad, ffn_sigmoid(v) + ffn_sigmoid_grad(v))
OP1(geglu_grad, ffn_gelu(v) + ffn_gelu_grad(v))
OP1(geglu_tanh_grad, ffn_gelu_tanh(v) + ffn_gelu_tanh_grad(v))
OP1(swiglu_grad, ffn_swish(v, 1.702f) + ffn_swish_grad(v, 1.702f))
EOF
count() { # $1: extra flags; prints "name ops div sel" per function
    clang -O2 -std=gnu11 -ffp-contract=off -fno-math-errno -fno-vectorize -fno-slp-vectorize \
        -mllvm -inline-threshold=100000 \
        -I"$here" $1 -S -emit-llvm -o "$tmp/ops.ll" "$tmp/ops.c"
    awk '
    /^define .*@op_/ { match($0, /@op_[a-z_0-9]+/); name = substr($0, RSTART + 4, RLENGTH - 4); ops = div = sel = 0; next }
    name != "" && /^}/ { print name, ops, div, sel; name = ""; next }
    name != "" && /=|call|store/ {
        if ($0 ~ / bitcast | phi | alloca | load | getelementptr /) next
        if ($0 ~ /call .*@llvm\.(lifetime|dbg)/) next
        ops++
        if ($0 ~ / fdiv /) div++
        if ($0 ~ / (select|fcmp|icmp) /) sel++
    }' "$tmp/ops.ll"
}
count "" | sort >"$tmp/fused"
count "-DFFNRT_HOST_UNFUSED_FMA" | sort >"$tmp/unfused"
printf '%-15s %22s %22s\n' "op" "fused FMA: ops div sel" "unfused: ops div sel"
join "$tmp/fused" "$tmp/unfused" | awk '{ printf "%-15s %14d %3d %4d %14d %3d %4d\n", $1, $2, $3, $4, $5, $6, $7 }'
