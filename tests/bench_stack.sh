#!/usr/bin/env bash
# `ffnrt bench --only stack --gguf MODEL` (SmolLM2-135M, the fixture's
# file) at 1 token, one run a row: on every device a row of the model's
# whole FFN stack as the dispatcher chooses and one with the integer path,
# each a rate in tokens a second and the weights' megabytes in the JSON;
# without --gguf the part has nothing to run and says so by its absence.
# Never a speed.
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
    rows=$(grep -cE "^stack +llama ffn x30 +fwd q4_1 $path *576x1536 t1 .* [0-9.]+ tok/s" "$dir/out")
    [ "$rows" = "$devices" ] && [ "$devices" -ge 2 ] ||
        { echo "FAIL: expected a \"$path\" stack row a device ($rows rows, $devices devices)"; cat "$dir/out"; fail=1; }
done
grep -q '"weight_mb": 49\.' "$dir/run/bench.json" || { echo "FAIL: no weight_mb of 49.x MB in the JSON"; fail=1; }
"$ffnrt" bench --only stack --no-progress --no-plots --out "$dir/none" >"$dir/out2" 2>&1 ||
    { echo "FAIL: the stack part without a model"; cat "$dir/out2"; fail=1; }
grep -q '^stack ' "$dir/out2" && { echo "FAIL: stack rows without a model"; cat "$dir/out2"; fail=1; }
[ $fail = 0 ] && echo "ok: the FFN stack on $devices devices"
exit $fail
