#!/usr/bin/env bash
# Runs a test program as a busy machine would: the drivers' caches cold
# (PoCL's and Mesa's, a fresh directory), more spinning processes than
# cores for as long as it runs, and a strict device timeout (5 s, against
# the default 120 s), so that any compile still timed as device work (on
# lavapipe, a pipeline's machine code is compiled at its first dispatch:
# seconds cold, and several times that on a busy CPU; ffnrt's own cache,
# as the environment names it, holds only SPIR-V and program binaries)
# fails the run rather than passing only on a quiet one. The program's own
# exit status is the result.
# Usage: busy.sh PROGRAM [ARGS...]
set -u
[ $# -ge 1 ] || { echo "usage: busy.sh PROGRAM [ARGS...]" >&2; exit 2; }
cold=$(mktemp -d)
spinners=()
stop() {
  [ ${#spinners[@]} -eq 0 ] || kill "${spinners[@]}" 2>/dev/null
  wait "${spinners[@]}" 2>/dev/null
  rm -rf "$cold"
}
trap stop EXIT
for _ in $(seq 0 "$(nproc)"); do
  (while :; do :; done) &
  spinners+=($!)
done
echo "busy: ${#spinners[@]} spinning processes on $(nproc) cores, the drivers' caches cold in $cold, device timeout 5000 ms"
XDG_CACHE_HOME=$cold FFNRT_DEVICE_TIMEOUT_MS=5000 "$@"
