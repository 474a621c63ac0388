#!/usr/bin/env bash
# `ffnrt bench --only stack --gguf MODEL` (SmolLM2-135M, the fixture's
# file) at 1 token, one run a row: on every device a row of the model's
# whole FFN stack as the dispatcher chooses and one with the integer path,
# each a rate in tokens a second and the weights' megabytes in the JSON;
# without --gguf the part has nothing to run and says so by its absence.
# Where ggml was built (FFNRT_GGML_DIR), its peers beside them: one
# ggml-cpu row a run (beside PoCL's) and one ggml-vulkan row a Vulkan
# device, the same stack from the same file, each with ffnrt's speed over
# it and its first token's relative error (against the change the stack
# makes to x, in the helper's double reference) below 0.1: ggml's CPU path
# quantizes the activations to 8 bits before each product (Q8_1), about
# 1e-2 a product, 2.3e-2 measured through the 30 layers, while a wrong
# layer (gate and up swapped, a norm left out) is of order 1. Without
# ggml, the run says why. Never a speed.
# Usage: bench_stack.sh path/to/ffnrt model.gguf
set -u
ffnrt=${1:?usage: bench_stack.sh path/to/ffnrt model.gguf}
model=${2:?usage: bench_stack.sh path/to/ffnrt model.gguf}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
"$ffnrt" bench --only stack --gguf "$model" --tokens 1 --repeats 1 --min-runs 1 --no-progress --no-plots \
    --out "$dir/run" >"$dir/out" 2>&1 || { echo "FAIL: the stack run"; cat "$dir/out"; fail=1; }
devices=$(grep -cE '^== ' "$dir/out")
for path in "auto    " "auto\+int8"; do
    rows=$(grep -cE "^stack +llama ffn x30 +fwd +q4_1 +$path *576x1536 t1 .* [0-9.]+ tok/s" "$dir/out")
    [ "$rows" = "$devices" ] && [ "$devices" -ge 2 ] ||
        { echo "FAIL: expected a \"$path\" stack row a device ($rows rows, $devices devices)"; cat "$dir/out"; fail=1; }
done
grep -q '"weight_mb": 49\.' "$dir/run/bench.json" || { echo "FAIL: no weight_mb of 49.x MB in the JSON"; fail=1; }
if grep -q '"ggml: not found at build time' "$dir/run/bench.json"; then
    echo "ok: ggml not built, and the run says so"
else
    vulkan=$(grep -cE '^== .*\(vulkan,' "$dir/out")
    for peer in "ggml-cpu 1" "ggml-vulkan $vulkan"; do
        lines=$(grep -E "^peer +${peer% *} llama ffn x30 +fwd +q4_1 .* 576x1536 t1 .* tok/s .* ffnrt-auto .*relerr " "$dir/out")
        bad=$(printf '%s\n' "$lines" | awk '{ e = $NF } !(e ~ /^[0-9.]+(e[-+][0-9]+)?$/ && e + 0 < 0.1) { n++ } END { print n + 0 }')
        if [ -n "$lines" ] && [ "$(printf '%s\n' "$lines" | wc -l)" = "${peer#* }" ] && [ "$bad" = 0 ]; then
            echo "ok: ${peer% *}: ${peer#* } row(s), relerr $(printf '%s\n' "$lines" | awk '{ printf "%s ", $NF }')"
        else
            echo "FAIL: expected ${peer#* } ${peer% *} row(s) with relerr < 0.1"; printf '%s\n' "$lines"
            grep '^peer ' "$dir/out"; fail=1
        fi
    done
fi
"$ffnrt" bench --only stack --no-progress --no-plots --out "$dir/none" >"$dir/out2" 2>&1 ||
    { echo "FAIL: the stack part without a model"; cat "$dir/out2"; fail=1; }
grep -q '^stack ' "$dir/out2" && { echo "FAIL: stack rows without a model"; cat "$dir/out2"; fail=1; }
[ $fail = 0 ] && echo "ok: the FFN stack on $devices devices"
exit $fail
