#!/usr/bin/env bash
# The conformance matrix's CI selection (ffnrt check --matrix, src/lab/conformance.c)
# on every device found, and a run that must fail.
#
# Why this subset: the full product (15 ops x 3 storage types x (the call +
# 6 weight formats x 2 paths x 2 kernels) x 2 statistics x 7 profiles) is
# thousands of cases, each a kernel variant that costs 0.1-3 s to compile
# the first time (lavapipe compiles every pipeline again in each process),
# and the Criterion suites already sweep each axis in depth. This selection
# touches every value of every axis at least once, in one small shape each:
#   - every activation and GLU kind, element-wise, at f32 and f16 storage
#     (a new op row of include/ffnrt_op_table.h shows up here by itself);
#     bf16 on two ops (its conversion is the same for every op);
#   - every weight format once, in a gated (SwiGLU) fused matrix-vector
#     layer (a new format of ffnrt_weight_format shows up here by itself);
#   - the other path and kernel on a dense GELU layer, at f32 and f16;
#   - statistics on for an op and a layer (the output bit-identical to
#     statistics off, the counts sane);
#   - one GPU profile, vulkan-minimum (the smallest workgroup, tiles and
#     lanes, 16-bit off), on an op and a quantized layer.
# `ffnrt check --matrix` runs the rest by hand (ffnrt check --matrix --help).
# Usage: matrix.sh path/to/ffnrt
set -u
ffnrt=${1:?usage: matrix.sh path/to/ffnrt}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
devices=$("$ffnrt" devices | grep -c -E '^[a-z]+:[0-9]+ ')
if [ "$devices" -lt 1 ]; then
    echo "FAIL: no device found"
    exit 1
fi

# Runs one selection; every case must pass, none skip, on every device.
selection() { # description, then the options
    local what=$1
    shift
    local t0=$SECONDS
    "$ffnrt" check --matrix "$@" >"$dir/out" 2>"$dir/err"
    local rc=$?
    cat "$dir/out"
    cat "$dir/err" >&2 # ctest looks for validation messages in it
    if [ "$rc" != 0 ] || grep -q -E '^(FAIL|skip) ' "$dir/out" ||
       ! grep -q -E "^matrix: [1-9][0-9]* cases run, [0-9]+ passed, 0 FAILED, 0 skipped, on ([0-9]+) device" "$dir/out" ||
       [ "$(sed -n 's/.* on \([0-9]*\) device\/profile pairs$/\1/p' "$dir/out")" != "$devices" ]; then
        echo "FAIL: $what: exit $rc"
        fail=1
    else
        echo "ok: $what ($((SECONDS - t0)) s)"
    fi
}

selection "every op and GLU kind, f32 and f16" --path op --dtype f32,f16 --stats off
selection "bf16 storage" --path op --op gelu,geglu --dtype bf16 --stats off
selection "every weight format" --op swiglu --path fused --kernel matvec --dtype f32 --stats off
selection "unfused tiled dense layer, f32 and f16" --op gelu --path unfused --kernel tiled --weights dense --dtype f32,f16 --stats off
selection "statistics on" --op gelu,swiglu --path op,fused --kernel -,tiled --weights -,dense --dtype f32 --stats on
selection "a GPU profile" --profile vulkan-minimum --op swiglu --path op,fused --kernel -,tiled --weights -,q4_0 --dtype f32 --stats off

# The runner can fail: every bound scaled to 0, GELU's few-ULP error fails.
"$ffnrt" check --matrix --op gelu --path op --dtype f32 --stats off --bound-scale 0 >"$dir/out" 2>"$dir/err"
rc=$?
cat "$dir/err" >&2
if [ "$rc" = 1 ] && grep -q '^FAIL gelu ' "$dir/out" && grep -q ' [1-9][0-9]* FAILED' "$dir/out"; then
    echo "ok: --bound-scale 0 fails (exit 1, FAIL lines)"
else
    echo "FAIL: --bound-scale 0 did not fail: exit $rc"
    cat "$dir/out" "$dir/err"
    fail=1
fi
exit $fail
