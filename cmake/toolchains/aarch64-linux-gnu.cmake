# Cross-compiling for Linux aarch64 with Debian's gcc-aarch64-linux-gnu,
# against an arm64 Debian root as the sysroot (its libc, OpenCL and Vulkan
# loaders and headers, volk, glslang, Criterion):
#
#   FFNRT_ARM64_ROOT=<an arm64 root, e.g. from mmdebstrap --arch=arm64> \
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
#
# scripts/aarch64-check makes the root and runs the result in it under
# qemu-user (docs/platforms.md).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
if(NOT DEFINED ENV{FFNRT_ARM64_ROOT})
  message(FATAL_ERROR "aarch64: set FFNRT_ARM64_ROOT to an arm64 Debian root (scripts/aarch64-check makes one)")
endif()
set(CMAKE_SYSROOT $ENV{FFNRT_ARM64_ROOT})
# Libraries and headers only from the root (never the host's amd64 ones);
# programs (glslang is linked, not run) from the host.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
