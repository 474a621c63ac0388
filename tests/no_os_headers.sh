#!/bin/sh
# No file of src/ outside src/platform, nor of bench/, includes an OS header: what differs
# by operating system lives in the platform layer (src/platform/platform.h),
# so the rest builds unchanged on Linux, Windows (mingw-w64), macOS and
# Android. A file may include the C11 standard headers (but <threads.h>,
# which not every C library has), the graphics APIs' and glslang's headers,
# and its own; anything else in angle brackets (unistd.h, sys/*, dlfcn.h,
# pthread.h, fcntl.h, dirent.h, strings.h, windows.h, io.h, cpuid.h,
# immintrin.h, ...) is refused, by name. The one C++ source may include
# <new> (std::bad_alloc) as well.
set -eu
root=${1:?usage: no_os_headers.sh SOURCE_DIR}
cd "$root"
standard='assert|complex|ctype|errno|fenv|float|inttypes|iso646|limits|locale|math|setjmp|signal|stdalign|stdarg|stdatomic|stdbool|stddef|stdint|stdio|stdlib|stdnoreturn|string|tgmath|time|uchar|wchar|wctype'
apis='CL/[a-z0-9_]+|vulkan/[a-z0-9_]+|volk|glslang/[A-Za-z/_]+|spirv-tools/[a-z_]+'
# The bench (bench/) too: it reaches the OS through ffnrt_lab.h's doors;
# its peers include their libraries' headers.
peers='clblast_c|ggml|ggml-[a-z]+|gguf'
found=$(find src bench -path src/platform -prune -o \( -name '*.c' -o -name '*.cpp' -o -name '*.h' -o -name '*.inc' \) -print |
  sort | xargs grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<' |
  grep -vE "<(($standard)|($apis)|($peers))\.h>|\.cpp:[0-9]+:#include <new>$" || true)
if [ -n "$found" ]; then
  echo "no_os_headers: these files include a header that is not standard C or a graphics API's;"
  echo "what differs by OS belongs in src/platform (platform.h):"
  echo "$found"
  exit 1
fi
echo "no_os_headers: only src/platform includes OS headers (src/ and bench/ checked)"
