#!/usr/bin/env bash
# `ffnrt compare` on every device found, the seed's d = 6, m = 12 with its
# GELU against SwiGLU pair (two token counts, two rounds: bookkeeping, not
# speed): criteria from a file and flags fixed before any device opens and
# refused when they are bad; the seed's 144 = 144; stability measured; the report read back
# (the same table from its JSON), criteria given after the run refused, a
# report whose criteria were edited refused; --compare of two reports
# (same criteria: clean; a run under a criterion nothing meets: the
# verdicts it lost, exit 1; an injected slowdown: REGRESSION).
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

small=(--d 6 --m 12 --only dense-gelu,swiglu --bias no --tokens 1,8 --rounds 2 --no-progress)
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
exit $fail
