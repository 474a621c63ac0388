#!/bin/sh
# Scripts reach package registries through their ordinary clients by
# package name (apt-get, pip), so that a machine's own configuration
# (proxies, local mirrors) applies: no script, CI file or CMake file names
# a host. Comments may cite a page; code may not.
set -eu
root=${1:?usage: no_hardcoded_hosts.sh SOURCE_DIR}
cd "$root"
found=$(grep -nE '[a-z]+://' .ci/run scripts/* tests/*.sh CMakeLists.txt cmake/* tests/CMakeLists.txt 2>/dev/null |
  grep -vE '^[^:]+:[0-9]+:[[:space:]]*#' || true)
if [ -n "$found" ]; then
  echo "no_hardcoded_hosts: these lines name a host (use apt-get or pip by package name):"
  echo "$found"
  exit 1
fi
echo "no_hardcoded_hosts: no script names a host"
