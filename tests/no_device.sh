#!/usr/bin/env bash
# A machine where a loader finds no device: ffnrt says which backend, what
# the loader knew of and where to look next, in `ffnrt devices` and in the
# error of a context asked for that backend, instead of a bare "no device".
# The loaders are pointed at folders made here (OCL_ICD_VENDORS: ocl-icd's
# and the Khronos loader's; VK_ICD_FILENAMES / VK_DRIVER_FILES: the Vulkan
# loader's), so nothing on the machine changes.
# Usage: no_device.sh path/to/ffnrt
set -u
ffnrt=${1:?usage: no_device.sh path/to/ffnrt}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { # description, expected exit status, text expected in stdout+stderr, env assignments..., --, command...
    local what=$1 want=$2 text=$3
    shift 3
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    env "${envs[@]}" "$@" >"$dir/out" 2>&1
    local got=$?
    if [ "$got" != "$want" ] || ! grep -qF -- "$text" "$dir/out"; then
        echo "FAIL: $what: exit $got (expected $want), expected: $text"
        cat "$dir/out"
        fail=1
    else
        echo "ok: $what"
    fi
}

mkdir -p "$dir/none" "$dir/broken" "$dir/ro"
echo "$dir/no-such-driver.so" >"$dir/broken/broken.icd"
nodriver="VK_ICD_FILENAMES=$dir/no-such.json"
nodriver2="VK_DRIVER_FILES=$dir/no-such.json"

check "no OpenCL driver registered: the folder is named, and what to install" 0 \
    "opencl: unavailable (OpenCL: the loader found no device: no driver is registered in $dir/none (a GPU vendor's" \
    "OCL_ICD_VENDORS=$dir/none" -- "$ffnrt" devices
check "a registered OpenCL driver that does not start: named, and why one may not" 0 \
    "OpenCL: the loader found no device: none of the drivers in $dir/broken (broken.icd) started" \
    "OCL_ICD_VENDORS=$dir/broken" -- "$ffnrt" devices
check "a context asked for OpenCL says the backend's reason" 1 \
    "no device found: OpenCL: the loader found no device: no driver is registered in $dir/none" \
    "OCL_ICD_VENDORS=$dir/none" -- "$ffnrt" run --device opencl relu 1
check "no Vulkan driver: the loader's own debug switch is named" 0 \
    "vulkan: unavailable (Vulkan: no compatible driver (VK_LOADER_DEBUG=driver shows each driver" \
    "$nodriver" "$nodriver2" -- "$ffnrt" devices
check "no device at all: each backend's reason, in one error" 1 \
    "no device found: OpenCL: the loader found no device: no driver is registered in $dir/none (a GPU vendor's OpenCL driver; on the CPU, PoCL: Debian's pocl-opencl-icd); Vulkan: no compatible driver (VK_LOADER_DEBUG=driver" \
    "OCL_ICD_VENDORS=$dir/none" "$nodriver" "$nodriver2" -- "$ffnrt" run relu 1

# PoCL under a read-only home (a service, a sandbox): PoCL 3.1 does not
# start without a kernel cache folder it can create, and ocl-icd then
# leaves it out without a word. Where this PoCL does start, nothing to say.
touch "$dir/file"
env -u POCL_CACHE_DIR HOME="$dir/file" XDG_CACHE_HOME="$dir/file" "$ffnrt" devices >"$dir/ro.out" 2>&1
if grep -q '^opencl: unavailable' "$dir/ro.out"; then
    check "PoCL without a cache folder: the reason PoCL gives none is named" 0 \
        "POCL_CACHE_DIR, else XDG_CACHE_HOME or HOME, must lead to a folder it can write; POCL_DEBUG=1 says why" \
        -u POCL_CACHE_DIR "HOME=$dir/file" "XDG_CACHE_HOME=$dir/file" -- "$ffnrt" devices
else
    echo "ok: PoCL starts without a cache folder here (ffnrt devices lists an OpenCL device)"
fi
exit $fail
