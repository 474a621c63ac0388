#!/usr/bin/env bash
# `ffnrt compare --train --task "gguf 0"` on SmolLM2-135M (the fixture's
# file), every device found, a few steps: the distillation task runs
# end to end (the teacher is the file's layer 0, the inputs its
# RMS-normalised token embeddings), each candidate trains on each device
# without a failed run, the task and its file are sealed and recorded, and
# a d_model that is not the file's is refused in every candidate's note.
# Usage: compare_train_gguf.sh path/to/ffnrt model.gguf
set -u
ffnrt=${1:?usage: compare_train_gguf.sh path/to/ffnrt model.gguf}
model=${2:?usage: compare_train_gguf.sh path/to/ffnrt model.gguf}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
run=(--only dense-relu,swiglu --bias no --tokens 1 --rounds 1 --no-progress --no-plots --device all
     --train --train-steps 6 --train-seeds 1 --train-tokens 16 --validation-tokens 64 --task "gguf 0")
"$ffnrt" compare --d 576 --m 1536 "${run[@]}" --gguf "$model" --out "$dir/r" >"$dir/out" 2>&1 ||
    { echo "FAIL: the distillation run"; cat "$dir/out"; fail=1; }
grep -q "task = gguf 0$" "$dir/out" || { echo "FAIL: the task is not in the sealed criteria"; cat "$dir/out"; fail=1; }
lines=$(grep -cE '^(dense-relu|swiglu) +f32 +[0-9.e+-]+±[0-9.e+-]+ \[[0-9.e+-]+,[0-9.e+-]+\] +0/1 +6 ' "$dir/out")
devices=$(grep -cE '^== .* \((opencl|vulkan)\)$' "$dir/out")
[ "$lines" = $((2 * devices)) ] && [ "$devices" -ge 2 ] ||
    { echo "FAIL: expected a finished training line a candidate and device ($lines lines, $devices devices)"; cat "$dir/out"; fail=1; }
"$ffnrt" compare --d 64 --m 96 "${run[@]}" --gguf "$model" --device opencl --out "$dir/r2" >"$dir/out2" 2>&1 ||
    { echo "FAIL: a mismatched run should still report"; cat "$dir/out2"; fail=1; }
grep -q "d_model 576, the candidates' 64 (give --d 576)" "$dir/out2" ||
    { echo "FAIL: the mismatch is not said"; cat "$dir/out2"; fail=1; }
[ $fail = 0 ] && echo "ok: the SmolLM2 distillation on $devices devices"
exit $fail
