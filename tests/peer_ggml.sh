#!/usr/bin/env bash
# The bench's ggml-vulkan peer (bench/peer_ggml.c), registered only when
# the bench_ggml helper is built (a ggml install found: FFNRT_GGML_DIR).
# The helper computes right on the Vulkan device (its first token against a
# double reference), says why it skips what it cannot run, and refuses a
# device it does not see; `ffnrt bench` puts its rows beside ffnrt's SwiGLU
# rows with ffnrt's ratio over them, and names the peer in the run.
# Usage: peer_ggml.sh path/to/ffnrt path/to/bench_ggml
set -u
ffnrt=${1:?usage: peer_ggml.sh path/to/ffnrt path/to/bench_ggml}
helper=${2:?usage: peer_ggml.sh path/to/ffnrt path/to/bench_ggml}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }

# Vulkan device 0, named as ggml must be told to see it (it hides CPU
# devices such as lavapipe unless GGML_VK_VISIBLE_DEVICES names them).
GGML_VK_VISIBLE_DEVICES=0 "$helper" --warmup 1 --runs 1 1 f32:64x128:1 q4_0:64x128:4 q5_0:64x128:1 q4_k:64x128:1 \
    >"$dir/out" 2>"$dir/err"
status=$?
[ "$status" = 0 ] && ok "helper exit 0" || { bad "helper exit $status"; cat "$dir/out" "$dir/err"; }
for layer in "f32 64x128 1" "q4_0 64x128 4"; do
    line=$(grep "^row $layer " "$dir/out")
    relerr=${line##* relerr }
    if [ -n "$line" ] && awk -v e="$relerr" 'BEGIN { exit !(e < 1e-4) }'; then
        ok "row $layer, relerr $relerr"
    else
        bad "row $layer: '${line}'"
    fi
done
grep -q "^skip q5_0 64x128 1 the ggml peer has no q5_0 row" "$dir/out" && ok "unknown format skipped" ||
    bad "no skip line for q5_0"
grep -q "^skip q4_k 64x128 1 q4_k needs both dimensions a multiple of 256" "$dir/out" &&
    ok "q4_k at k = 64 skipped" || bad "no skip line for q4_k at 64"

GGML_VK_VISIBLE_DEVICES=0 "$helper" --device-name "no such device" f32:64x128:1 >"$dir/out" 2>"$dir/err"
status=$?
[ "$status" = 3 ] && grep -q "^none .*not no such device" "$dir/out" && ok "an unseen device refused (exit 3)" ||
    { bad "unseen device: exit $status"; cat "$dir/out"; }

"$ffnrt" bench --quick --only ffn --device vulkan --op swiglu --shape 512x1376 --tokens 1 --precision f32 \
    --no-regret --no-progress --out "$dir/run" >"$dir/out" 2>"$dir/err"
status=$?
[ "$status" = 0 ] && ok "bench exit 0" || { bad "bench exit $status"; cat "$dir/err"; }
grep -q "^peer  *ggml-vulkan swiglu 512x1376 .* t1 .*ffnrt fused [0-9.]*x (host times); relerr" "$dir/out" &&
    ok "a ggml row beside the swiglu row, with ffnrt's ratio" || { bad "no ggml row"; cat "$dir/out"; }
grep -q '"ggml: ok (ggml ' "$dir/run/bench.json" && ok "bench.json names the peer" ||
    bad "bench.json has no ggml peer line"

# ggml's CPU backend beside an OpenCL CPU device's (PoCL's) quantized
# decode rows, on the same cores: ffnrt's speed over it on the fused and
# the integer path, and issue 25's target marked.
"$ffnrt" bench --only ffn --device opencl --op swiglu --shape 512x1376 --tokens 1 --precision f32 --weights q4_0 \
    --path fused --repeats 3 --min-runs 1 --no-regret --no-progress --no-plots --out "$dir/cpu" >"$dir/out" 2>"$dir/err"
status=$?
if ! "$ffnrt" devices 2>/dev/null | grep -A1 '^opencl:' | grep -q ', cpu, '; then
    ok "no OpenCL CPU device here: no ggml-cpu rows expected"
elif [ "$status" = 0 ] &&
    grep -qE "^peer +ggml-cpu swiglu 512x1376 +fwd +q4_0 .* t1 .*ffnrt fused [0-9.]+x, \+int8 [0-9.]+x, >=1x (met|missed); relerr [0-9]" "$dir/out"; then
    ok "a ggml-cpu row beside PoCL's Q4_0 decode row, both paths and the target"
else
    bad "no ggml-cpu row beside the OpenCL CPU device's rows (exit $status)"; cat "$dir/out" "$dir/err"
fi
exit $fail
