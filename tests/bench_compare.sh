#!/usr/bin/env bash
# `ffnrt bench --compare` without devices: an injected 2x slowdown in one
# row is flagged (exit 1) and no other row is; equal files pass (exit 0);
# a faster row is not a regression; malformed, truncated, foreign and
# missing files are refused with a message (exit 2), never a crash. Then
# the writer and the reader together: the host C loop peer (no device
# needed) writes real JSON, which compares clean against itself and flags
# a copy with one row's time doubled.
# Usage: bench_compare.sh path/to/ffnrt
set -u
ffnrt=${1:?usage: bench_compare.sh path/to/ffnrt}
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

row() { # op median_ns min_ns
    printf '    {"group": "elementwise", "op": "%s", "dir": "fwd", "backend": "opencl", "device": "Test Device, rev 1", "dtype": "f32", "path": "", "shape": "1048576", "size": 1048576, "runs": 5, "median_ns": %s, "min_ns": %s, "max_ns": %s, "spread": 0.1, "host_ns": %s, "timing": "device", "rate": 1, "rate_unit": "GB/s", "ratio": 0.5, "ratio_to": "copy", "note": ""}' "$1" "$2" "$3" "$2" "$2"
}
doc() { # rows...
    printf '{\n  "format": "ffnrt-bench-1", "ffnrt_version": "0.1.0", "commit": "abc \\"quoted\\" \\u00e9", "preset": "quick",\n'
    printf '  "date": "2026-01-01T00:00:00Z", "host": "test", "wall_s": 1.5,\n  "devices": [{"backend": "opencl", "name": "Test Device, rev 1", "driver": "1", "api": "OpenCL 3.0"}],\n'
    printf '  "peers": [],\n  "rows": [\n'
    local first=1
    for r in "$@"; do
        [ $first = 1 ] || printf ',\n'
        printf '%s' "$r"
        first=0
    done
    printf '\n  ]\n}\n'
}

doc "$(row relu 1000000 950000)" "$(row gelu 4000000 3900000)" "$(row silu 3000000 2900000)" >"$dir/old.json"
doc "$(row relu 1010000 960000)" "$(row gelu 8000000 7800000)" "$(row silu 2990000 2900000)" >"$dir/slow.json"
doc "$(row relu 1000000 950000)" "$(row gelu 2000000 1950000)" "$(row silu 3000000 2900000)" >"$dir/fast.json"

check "2x slowdown flagged" 1 "$ffnrt" bench --compare "$dir/old.json" "$dir/slow.json"
if [ "$(grep -c REGRESSION "$dir/out")" != 1 ] || ! grep REGRESSION "$dir/out" | grep -q ' gelu '; then
    echo "FAIL: expected exactly the gelu row flagged"; cat "$dir/out"; fail=1
fi
grep -q "3 rows compared: 1 regressions" "$dir/out" || { echo "FAIL: summary line"; cat "$dir/out"; fail=1; }
check "same file: no regression" 0 "$ffnrt" bench --compare "$dir/old.json" "$dir/old.json"
check "a faster row is not a regression" 0 "$ffnrt" bench --compare "$dir/old.json" "$dir/fast.json"
grep -q faster "$dir/out" || { echo "FAIL: the faster row is not reported"; fail=1; }
check "--by ratio: the rows' ratios to their limits did not move" 0 "$ffnrt" bench --compare "$dir/old.json" "$dir/slow.json" --by ratio
check "--threshold above the slowdown hides it" 0 "$ffnrt" bench --compare "$dir/old.json" "$dir/slow.json" --threshold 1.5
# "--" ends the options: a file whose name starts with '-' follows it.
cp "$dir/old.json" "$dir/-old.json"
check "-- then -old.json: read as a file" 0 sh -c 'cd "$1" && exec "$2" bench --compare --threshold 1.5 -- -old.json slow.json' \
    sh "$dir" "$(realpath "$ffnrt")"

# Rows noisier than the slowdown are not flagged: jitter (median - min) / median of 60%.
doc "$(row gelu 4000000 1600000)" >"$dir/noisy_old.json"
doc "$(row gelu 6000000 5800000)" >"$dir/noisy_new.json"
check "a slowdown within the row's own jitter is not flagged" 0 "$ffnrt" bench --compare "$dir/noisy_old.json" "$dir/noisy_new.json"

# Bad input: exit 2 with a message naming the file, and no crash.
head -c 300 "$dir/old.json" >"$dir/truncated.json"
printf '{"rows": [{"group": "x", "op": "y", "median_ns": 1e}]}' >"$dir/badnum.json"
printf '{"format": "something else"}' >"$dir/norows.json"
printf '[1, 2, 3]' >"$dir/array.json"
printf '' >"$dir/empty.json"
printf '{"rows": [%s]}' "$(printf '[%.0s' $(seq 1 200))" >"$dir/deep.json"
printf '{"rows": []} trailing' >"$dir/trailing.json"
printf '{"rows": [{"group": "a\x01b", "op": "c"}]}' >"$dir/control.json"
printf '{"rows": [{"group": "x", "op": "y", "runs": 1e300}]}' >"$dir/runs.json" # was a float-cast UB
for bad in truncated badnum norows array empty deep trailing control runs; do
    check "malformed ($bad) refused" 2 "$ffnrt" bench --compare "$dir/old.json" "$dir/$bad.json"
    grep -q "$bad.json" "$dir/err" || { echo "FAIL: the message does not name $bad.json"; cat "$dir/err"; fail=1; }
done
check "missing file refused" 2 "$ffnrt" bench --compare "$dir/old.json" "$dir/none.json"
check "an infinite threshold refused" 2 "$ffnrt" bench --compare "$dir/old.json" "$dir/old.json" --threshold inf

# Another machine's run (its CPU names PoCL's device): rows match by backend
# and op, marked, under a note that the runs come from different machines.
sed 's/Test Device, rev 1/Another CPU/g; s/"host": "test"/"host": "other"/' "$dir/slow.json" >"$dir/other.json"
check "another machine's run: matched, the slowdown flagged" 1 "$ffnrt" bench --compare "$dir/old.json" "$dir/other.json"
grep -q "3 rows compared" "$dir/out" && grep -q "different machines" "$dir/out" && grep REGRESSION "$dir/out" | grep -q ' \*$' ||
    { echo "FAIL: rows of another device not matched, marked and explained"; cat "$dir/out"; fail=1; }

# Large files match in O(n log n): 20,000 rows of another device's run took
# minutes when each old row searched (and formatted the key of) every new
# one; the bound is far above the time it takes (well under a second).
big() { # file device
    { printf '{"host": "test", "rows": [\n'
      awk -v d="$2" 'BEGIN { for (i = 0; i < 20000; i++) printf "%s{\"group\": \"elementwise\", \"op\": \"op%d\", \"backend\": \"opencl\", \"device\": \"%s\", \"shape\": \"%d\", \"runs\": 5, \"median_ns\": 1000, \"min_ns\": 1000}\n", i ? "," : "", i % 997, d, i }'
      printf ']}\n'; } >"$1"
}
big "$dir/big_old.json" "CPU A"
big "$dir/big_new.json" "CPU B"
check "20,000 rows against 20,000 of another device compare in seconds" 0 timeout 30 "$ffnrt" bench --compare "$dir/big_old.json" "$dir/big_new.json"
grep -q "20000 rows compared: 0 regressions" "$dir/out" || { echo "FAIL: large files"; tail -3 "$dir/out"; fail=1; }
check "one file is a usage error" 2 "$ffnrt" bench --compare "$dir/old.json"

# The writer and the reader: the host peer needs no device.
check "host peer run writes JSON" 0 "$ffnrt" bench --only peer --op relu,gelu --size 64K --no-plots --out "$dir/run" --no-progress
check "a run compares clean against itself" 0 "$ffnrt" bench --compare "$dir/run/bench.json" "$dir/run/bench.json"
awk '/"op": "gelu"/ { match($0, /"median_ns": [0-9.e+-]+/); v = substr($0, RSTART + 13, RLENGTH - 13);
     match($0, /"min_ns": [0-9.e+-]+/); m = substr($0, RSTART + 10, RLENGTH - 10);
     sub(/"median_ns": [0-9.e+-]+/, sprintf("\"median_ns\": %.17g", 2 * v)); sub(/"min_ns": [0-9.e+-]+/, sprintf("\"min_ns\": %.17g", 2 * m)) }
     { print }' "$dir/run/bench.json" >"$dir/run/slow.json"
check "a written run with gelu doubled is flagged" 1 "$ffnrt" bench --compare "$dir/run/bench.json" "$dir/run/slow.json"
if [ "$(grep -c REGRESSION "$dir/out")" != 1 ] || ! grep REGRESSION "$dir/out" | grep -q ' gelu '; then
    echo "FAIL: expected exactly the gelu row flagged"; cat "$dir/out"; fail=1
fi
if command -v gnuplot >/dev/null; then # optional: without it --plot says so and fails
    check "--plot redraws a saved run" 0 "$ffnrt" bench --plot "$dir/old.json" "$dir/replot"
    [ -s "$dir/replot/throughput_opencl0.png" ] && [ -s "$dir/replot/roofline_elementwise.svg" ] ||
        { echo "FAIL: --plot wrote no PNG or SVG"; ls "$dir/replot"; fail=1; }
fi
if command -v gnuplot >/dev/null; then # a run of FFN rows only: the copy row alone draws no element-wise plot
    ffn_only=$(printf '    {"group": "limit", "op": "copy", "dir": "fwd", "backend": "opencl", "device": "Test Device, rev 1", "dtype": "f32", "path": "", "shape": "663552", "size": 663552, "runs": 5, "median_ns": 43119, "min_ns": 31266, "max_ns": 101542, "spread": 1.6, "host_ns": 73459, "timing": "device", "rate": 123.1, "rate_unit": "GB/s", "ratio": 1, "ratio_to": "copy", "note": ""},\n    {"group": "ffn", "op": "swiglu 576x1536", "dir": "fwd", "backend": "opencl", "device": "Test Device, rev 1", "dtype": "f32", "path": "fused", "shape": "t1", "size": 1, "runs": 5, "median_ns": 119718, "min_ns": 100149, "max_ns": 3305175, "spread": 2.6, "host_ns": 168180, "timing": "device", "rate": 44.3, "rate_unit": "GB/s", "ratio": 0.36, "ratio_to": "copy", "note": ""}')
    doc "$ffn_only" >"$dir/ffn_only.json"
    check "--plot of FFN rows only" 0 "$ffnrt" bench --plot "$dir/ffn_only.json" "$dir/replot_ffn"
    [ -s "$dir/replot_ffn/ffn_opencl0.png" ] && [ ! -e "$dir/replot_ffn/throughput_opencl0.png" ] ||
        { echo "FAIL: FFN-only --plot: expected the FFN plot and no throughput plot"; ls "$dir/replot_ffn"; fail=1; }
fi
check "--plot refuses a malformed file" 2 "$ffnrt" bench --plot "$dir/truncated.json" "$dir/replot"
head -1 "$dir/run/bench.csv" | grep -q '^ffnrt_version,commit,preset,group,op,' || { echo "FAIL: CSV header"; fail=1; }

exit $fail
