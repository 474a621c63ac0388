#!/usr/bin/env bash
# Proves that the sanitizer pass catches ffnrt's own leaks: the drivers'
# suppressions (tests/lsan.supp) and the libraries kept loaded
# (tests/sanitizer_keep_loaded.c) must not hide them. Runs PROGRAM twice in
# the sanitizer build, with the sanitizer options of every other test:
#   - with FFNRT_TEST_LEAK=1 (src/core/context.c then forgets to free each
#     kernel's key): it must fail, with LeakSanitizer's report naming a
#     function in ffnrt's sources;
#   - without it: it must pass, so the failure above is that leak.
# Usage: expect_leak.sh PROGRAM [ARGS...]
set -u
[ $# -ge 1 ] || { echo "usage: expect_leak.sh PROGRAM [ARGS...]" >&2; exit 2; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT

(FFNRT_TEST_LEAK=1 "$@"; exit $?) >"$log" 2>&1 # a subshell that waits, so its "Aborted" goes to the log
status=$?
if [ "$status" -eq 0 ]; then
  cat "$log"
  echo "expect_leak: $1 passed with FFNRT_TEST_LEAK=1: the sanitizer pass did not catch ffnrt's leak" >&2
  exit 1
fi
if ! grep -q "ERROR: LeakSanitizer: detected memory leaks" "$log"; then
  cat "$log"
  echo "expect_leak: $1 failed (status $status) without LeakSanitizer's report" >&2
  exit 1
fi
# A frame of the leak's stack in ffnrt's own code, e.g.
#   #1 0x7f.. in ffnrt_context_kernel /path/src/core/context.c:561
if ! grep -Eq "#[0-9]+ 0x[0-9a-f]+ in [A-Za-z_][A-Za-z0-9_]* [^ ]*/src/[a-z]+/[A-Za-z0-9_]+\.c:[0-9]+" "$log"; then
  cat "$log"
  echo "expect_leak: LeakSanitizer's report names no function of ffnrt's sources" >&2
  exit 1
fi
echo "expect_leak: with FFNRT_TEST_LEAK=1, LeakSanitizer reported ffnrt's leak:"
grep -E "^(Direct|Indirect) leak|in [A-Za-z_][A-Za-z0-9_]* [^ ]*/src/" "$log" | head -n 6

"$@" >"$log" 2>&1
status=$?
if [ "$status" -ne 0 ] || grep -q "Vulkan validation" "$log"; then
  cat "$log"
  echo "expect_leak: $1 failed (status $status) without the leak switch too" >&2
  exit 1
fi
echo "expect_leak: without it, $1 passed"
