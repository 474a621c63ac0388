#!/usr/bin/env bash
# `ffnrt compare` on every device found, the seed's d = 6, m = 12 with its
# GELU against SwiGLU pair (two token counts, two rounds: bookkeeping, not
# speed): the plan's defaults (token counts from the layer's size, no
# biases, the default device, no stability unless asked) and a first try's
# progress and time split (never its speed); criteria from a file and flags fixed before any device opens and
# refused when they are bad; the seed's 144 = 144; stability measured; the report read back
# (the same table from its JSON), criteria given after the run refused, a
# report whose criteria were edited refused; --compare of two reports
# (same criteria: clean; a run under a criterion nothing meets: the
# verdicts it lost, exit 1; an injected slowdown: REGRESSION); the
# training protocol (--train: its criteria, table, verdict and curves).
# Usage: compare_cli.sh path/to/ffnrt
set -u
ffnrt=${1:?usage: compare_cli.sh path/to/ffnrt}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { # description, expected exit status, command...
    local what=$1 want=$2
    shift 2
    "$@" >"$dir/out" 2>"$dir/err"
    local got=$?
    if [ "$got" != "$want" ]; then
        echo "FAIL: $what: exit $got, expected $want"
        cat "$dir/out" "$dir/err"
        fail=1
    else
        echo "ok: $what"
    fi
}
says() { # file, text, what
    grep -q -- "$2" "$1" || { echo "FAIL: $3: \"$2\" not in $1:"; cat "$1"; fail=1; }
}

small=(--d 6 --m 12 --only dense-gelu,swiglu --bias no --tokens 1,8 --rounds 2 --no-progress --device all)
cat >"$dir/criteria.txt" <<'EOF'
# fixed before the run
max_latency_ms = 1000      # a 1-token call, end to end
max_memory_mib = 1
finite = yes               # stability on N(0, 1) inputs, 3 seeds (the defaults)
max_dead_fraction = 0.25
EOF

# Refused before any device is opened (exit 2).
check "no arguments" 2 "$ffnrt" compare
check "no width" 2 "$ffnrt" compare --d 6
check "a width and a budget" 2 "$ffnrt" compare --d 6 --m 12 --budget 144
check "an unknown candidate" 2 "$ffnrt" compare "${small[@]}" --only dense-mish
check "a criteria file that is not there" 2 "$ffnrt" compare "${small[@]}" --criteria "$dir/none.txt"
printf 'max_latency_ms = 2\nmax_latncy_ms = 3\n' >"$dir/typo.txt"
check "a criteria file with an unknown key" 2 "$ffnrt" compare "${small[@]}" --criteria "$dir/typo.txt"
says "$dir/err" "line 2" "the message names the line"
check "a key in the file and a flag" 2 "$ffnrt" compare "${small[@]}" --criteria "$dir/criteria.txt" --max-latency-ms 5
says "$dir/err" "twice" "the message says it is given twice"
check "a negative latency" 2 "$ffnrt" compare "${small[@]}" --max-latency-ms -1
check "a help text" 0 "$ffnrt" compare --help
says "$dir/out" "thresholds\|criteria" "the help names the criteria"

# The plan, fixed with the criteria before any device opens (--plan-only
# stops there): token counts from the layer's size, with the reason; no
# biases, the default device and no stability figures unless asked.
check "the seed's plan" 0 "$ffnrt" compare --d 6 --m 12 --plan-only
says "$dir/out" "^  tokens: 1: the defaults for this layer (144 weights, 288 FLOP a token); not 8, 64 and 512" \
    "a 6 x 12 layer is measured at 1 token only, and the plan says why"
says "$dir/out" "^  biases: none, the default" "no biases by default"
says "$dir/out" "^  devices: the one ffnrt chooses" "the default device"
says "$dir/out" "^  stability: none, the default" "no stability figures unless asked"
says "$dir/out" "^seeds = 0$" "that default is a line of the fixed criteria"
check "a 64 x 256 plan" 0 "$ffnrt" compare --d 64 --m 256 --plan-only
says "$dir/out" "^  tokens: 1, 64 and 512: the defaults for this layer (32768 weights" "64 x 256: 8 tokens is overhead"
check "BERT's plan" 0 "$ffnrt" compare --d 768 --m 3072 --plan-only
says "$dir/out" "^  tokens: 1, 8, 64 and 512: the defaults for this layer" "768 x 3072: every count"
check "an 8B-class plan" 0 "$ffnrt" compare --d 4096 --m 16384 --multiple 256 --plan-only
says "$dir/out" "^  tokens: 1, 8 and 64: the defaults for this layer.*not 512: a call does 139 GFLOP" \
    "4096 x 16384: no 512-token calls of seconds each"
check "explicit token counts" 0 "$ffnrt" compare --d 4096 --m 16384 --multiple 256 --tokens 512 --plan-only
says "$dir/out" "^  tokens: 1 and 512: as given; 1 for the latency" "--tokens wins, 1 added"
check "a stability criterion" 0 "$ffnrt" compare --d 6 --m 12 --finite --plan-only
says "$dir/out" "^  stability: 3 seeds of 64 tokens" "a stability key measures them"
says "$dir/out" "^seeds = 3$" "with the criteria's default seeds"
check "biases and devices asked for" 0 "$ffnrt" compare --d 6 --m 12 --bias both --device all --plan-only
says "$dir/out" "^  biases: without and with (--bias both)" "--bias both"
says "$dir/out" "^  devices: every device found (--device all)" "--device all"

# A first try's defaults on the default device (two candidates to keep it
# short): progress on stderr (a line a step when not a terminal) with
# kernels built and to go, and the report's time split with compile time
# apart from the measured calls, in the table and the JSON.
check "a first try" 0 "$ffnrt" compare --d 6 --m 12 --only dense-gelu,swiglu --rounds 2 --progress --out "$dir/r0" \
    --no-plots
says "$dir/err" "choosing the device as an app's context would" "progress: the device choice"
says "$dir/err" "kernels built[^~]*~[0-9]* to go; compiling [0-9.]* s, measuring [0-9.]* s | f32 swiglu t1 first call (compiling)" \
    "progress: kernels built and to go, time compiling and measuring, what runs"
says "$dir/out" "^time: [a-z]* [0-9.]* s: [0-9.]* s choosing and opening the device, [0-9.]* s compiling (the first call of each of 2 layers: [0-9]* kernels built" \
    "the report's time split"
grep -q "tok/s@" "$dir/out" && { echo "FAIL: a 6 x 12 first try measured more than 1 token"; cat "$dir/out"; fail=1; }
[ "$(grep -cE '^(dense-gelu|swiglu) +f32 ' "$dir/out")" = 2 ] || { echo "FAIL: expected 2 candidate lines"; cat "$dir/out"; fail=1; }
for key in warmup_s measure_s kernels_built kernels_cached; do
    says "$dir/r0/compare.json" "\"$key\": [0-9]" "the JSON's $key"
done
says "$dir/r0/compare.json" '"plan": "  devices: the one ffnrt chooses' "the JSON keeps the plan"
check "the first try read back" 0 "$ffnrt" compare --plot "$dir/r0/compare.json" "$dir/replot0"
grep -v '^wrote ' "$dir/out" >"$dir/replot0.txt"
diff "$dir/r0/table.txt" "$dir/replot0.txt" >/dev/null ||
    { echo "FAIL: the first try's table read back differs"; diff "$dir/r0/table.txt" "$dir/replot0.txt"; fail=1; }
check "no progress when asked" 0 "$ffnrt" compare --d 6 --m 12 --only swiglu --rounds 1 --no-progress --out "$dir/r00" \
    --no-plots
[ -s "$dir/err" ] && { echo "FAIL: --no-progress wrote on stderr:"; cat "$dir/err"; fail=1; }

# A run: the file's criteria and one flag.
check "the seed's example on every device" 0 "$ffnrt" compare "${small[@]}" --criteria "$dir/criteria.txt" \
    --min-tokens-per-s 1 --out "$dir/r1"
cp "$dir/out" "$dir/run1.txt"
says "$dir/run1.txt" "criteria fixed at" "the criteria are printed before the run"
says "$dir/run1.txt" "weights 2dm = 144 dense, 3dg = 144 gated" "the seed's accounting"
says "$dir/run1.txt" "gated width g = ffnrt_ffn_gated_hidden(12, 1) = 8" "the gated width and its rule"
says "$dir/run1.txt" "min_tokens_per_s = 1$" "the flag joined the file's criteria"
for f in compare.json compare.csv table.txt; do
    [ -s "$dir/r1/$f" ] || { echo "FAIL: $f not written"; fail=1; }
done
for dev in opencl vulkan; do
    grep -q "^== .*($dev," "$dir/run1.txt" || { echo "FAIL: no $dev section"; fail=1; }
done
# One line a candidate and device: params 144 and 162 or 166 with biases, every verdict a pass.
[ "$(grep -cE '^(dense-gelu|swiglu) +f32 +(12|8) +144 +(162|166) ' "$dir/run1.txt")" = 4 ] ||
    { echo "FAIL: expected 4 candidate lines with 144 parameters"; cat "$dir/run1.txt"; fail=1; }
[ "$(grep -cE ' pass$' "$dir/run1.txt")" = 4 ] || { echo "FAIL: expected 4 passes"; cat "$dir/run1.txt"; fail=1; }
# Stability from the layers' own statistics: nothing non-finite, no feature dead on every seed.
[ "$(grep -cE ' nf 0 dead 0\.000 +pass$' "$dir/run1.txt")" = 4 ] ||
    { echo "FAIL: expected 4 measured stability figures"; cat "$dir/run1.txt"; fail=1; }
says "$dir/r1/compare.csv" ",nonfinite,nonfinite_hidden,dead_max,dead_mean," "the CSV's stability columns"
says "$dir/r1/compare.csv" ",params_nobias,params_bias," "the CSV's metric columns"
says "$dir/r1/compare.json" '"criteria_sha256": "[0-9a-f]\{64\}"' "the JSON records the criteria's hash"

# Read back: the same table from the JSON; no criteria after the run.
check "the report read back" 0 "$ffnrt" compare --plot "$dir/r1/compare.json" "$dir/replot"
grep -v '^wrote ' "$dir/out" >"$dir/replot.txt"
diff "$dir/r1/table.txt" "$dir/replot.txt" >/dev/null ||
    { echo "FAIL: the table read back differs"; diff "$dir/r1/table.txt" "$dir/replot.txt"; fail=1; }
check "a criterion given after the run" 2 "$ffnrt" compare --plot "$dir/r1/compare.json" --max-latency-ms 0.5
says "$dir/err" "after the run" "the refusal says why"
check "a criteria file given after the run" 2 "$ffnrt" compare --plot "$dir/r1/compare.json" --criteria "$dir/criteria.txt"
sed 's/max_latency_ms = 1000/max_latency_ms = 2000/' "$dir/r1/compare.json" >"$dir/edited.json"
check "a report whose criteria were edited" 2 "$ffnrt" compare --plot "$dir/edited.json"
says "$dir/err" "changed after the run" "the refusal says the criteria changed"
sed 's/\("criteria_fixed_at": "\)[0-9]\{4\}/\19999/' "$dir/r1/compare.json" >"$dir/late.json"
check "criteria dated after the run" 2 "$ffnrt" compare --plot "$dir/late.json"
check "a bench run is not a report" 2 "$ffnrt" compare --plot "$(dirname "$0")/../bench/baseline/quick.json"

# Two reports.
check "a report against itself" 0 "$ffnrt" compare --compare "$dir/r1/compare.json" "$dir/r1/compare.json"
says "$dir/out" "criteria: the same" "same criteria"
check "a run under a latency nothing meets" 0 "$ffnrt" compare "${small[@]}" --max-latency-ms 0.000001 --seeds 0 \
    --out "$dir/r2"
[ "$(grep -cE ' FAIL latency' "$dir/out")" = 4 ] || { echo "FAIL: expected 4 latency failures"; cat "$dir/out"; fail=1; }
check "verdicts lost between two reports" 1 "$ffnrt" compare --compare "$dir/r1/compare.json" "$dir/r2/compare.json"
says "$dir/out" "criteria: DIFFERENT" "different criteria are flagged"
[ "$(grep -cE 'pass +-> FAIL latency' "$dir/out")" = 4 ] || { echo "FAIL: expected 4 lost verdicts"; cat "$dir/out"; fail=1; }
says "$dir/out" "4 verdicts changed; 4 candidates that passed now fail" "the count of verdicts lost"

# A tenfold slower 8-token row (its median and minimum) is a regression.
awk '!done && /"group": "compare"/ && /t8"/ { sub(/"median_ns": [0-9.e+-]+/, "\"median_ns\": 1e12"); sub(/"min_ns": [0-9.e+-]+/, "\"min_ns\": 1e12"); done = 1 } { print }' \
    "$dir/r1/compare.json" >"$dir/slow.json"
check "an injected slowdown" 1 "$ffnrt" compare --compare "$dir/r1/compare.json" "$dir/slow.json"
[ "$(grep -c REGRESSION "$dir/out")" = 1 ] || { echo "FAIL: expected one regression"; cat "$dir/out"; fail=1; }
check "criteria given to --compare" 2 "$ffnrt" compare --compare "$dir/r1/compare.json" "$dir/r2/compare.json" --finite
says "$dir/err" "after the run" "the refusal says why"
check "a missing report" 2 "$ffnrt" compare --compare "$dir/r1/compare.json" "$dir/none.json"

# Training: --train fixes train_steps in the sealed criteria, the training
# table has a line a candidate and device, every figure of it measured
# (with the stability figures beside, a candidate carries 34), the quality
# verdict is judged, the curves are in the report, and a training
# criterion alone implies training.
check "the training protocol" 0 "$ffnrt" compare "${small[@]}" --train --train-steps 20 --train-seeds 2 \
    --max-val-rel-mse 1000 --finite --out "$dir/r3"
says "$dir/out" "train_steps = 20$" "--train-steps in the sealed criteria"
says "$dir/out" "^training (the seed's protocol" "the training table"
[ "$(grep -cE '^(dense-gelu|swiglu) +f32 +[0-9.e+-]+±' "$dir/out")" = 4 ] ||
    { echo "FAIL: expected 4 training lines"; cat "$dir/out"; fail=1; }
[ "$(grep -cE ' pass$' "$dir/out")" = 4 ] || { echo "FAIL: expected 4 passes"; cat "$dir/out"; fail=1; }
says "$dir/r3/compare.csv" ",val_rel_mse," "the CSV's training columns"
says "$dir/r3/compare.csv" ",grad_norm_max,skipped_steps" "the CSV's last training columns, beside stability's"
if grep -E '^(dense-gelu|swiglu) +f32 +[0-9.e+-]+±' "$dir/out" | grep -qw nan; then
    echo "FAIL: a training figure is missing (nan)"; cat "$dir/out"; fail=1
fi
says "$dir/r3/compare.json" '"group": "curve"' "the curves in the JSON"
check "a training criterion implies training" 0 "$ffnrt" compare "${small[@]}" --max-val-rel-mse 1000 \
    --train-steps 5 --train-seeds 1 --plan-only
says "$dir/out" "train_steps = 5$" "the steps given"
check "training criteria with --train-steps 0" 2 "$ffnrt" compare "${small[@]}" --max-val-rel-mse 1 \
    --train-steps 0 --plan-only
says "$dir/err" "train_steps" "the refusal says why"
exit $fail
