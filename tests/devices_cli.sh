#!/usr/bin/env bash
# `ffnrt devices --no-calibration` on the devices: every device listed,
# none measured (each says so, and the cache gains no calibration), and no
# default chosen, since between devices of one type that choice measures
# them.
# Usage: devices_cli.sh path/to/ffnrt
set -u
ffnrt=${1:?usage: devices_cli.sh path/to/ffnrt}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
FFNRT_CACHE_DIR=$dir/cache "$ffnrt" devices --no-calibration >"$dir/out" 2>"$dir/err"
rc=$?
[ $rc = 0 ] || { echo "FAIL: exited $rc"; fail=1; }
devices=$(grep -cE '^(opencl|vulkan):[0-9]+ ' "$dir/out")
unmeasured=$(grep -c '^    calibration: not measured (--no-calibration)$' "$dir/out")
[ "$devices" -ge 1 ] && [ "$devices" = "$unmeasured" ] ||
    { echo "FAIL: $devices devices listed, $unmeasured said unmeasured"; fail=1; }
grep -q '^default device: not chosen (--no-calibration' "$dir/out" || { echo "FAIL: a default device chosen"; fail=1; }
if [ -n "$(find "$dir/cache" -name 'calibration-*' 2>/dev/null)" ]; then
    echo "FAIL: calibration figures written:"; ls "$dir/cache"; fail=1
fi
[ $fail = 0 ] || { cat "$dir/out" "$dir/err"; exit 1; }
echo "devices --no-calibration: $devices devices listed, none measured"
