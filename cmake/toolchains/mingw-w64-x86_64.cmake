# Cross-compiling for Windows x86-64 with Debian's mingw-w64 (the -posix
# compilers: winpthreads, which glslang's C++ std::thread/std::mutex and
# CMake's Threads need; the win32 thread model has neither).
#
#   FFNRT_MINGW_PREFIX=<a prefix with mingw builds of glslang and SPIRV-Tools, and the
#                       OpenCL, Vulkan and volk headers> \
#   cmake -S . -B build-windows -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/mingw-w64-x86_64.cmake
#
# scripts/windows-check does all of it (and runs the result under Wine).
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(FFNRT_MINGW_TRIPLE x86_64-w64-mingw32)
set(CMAKE_C_COMPILER ${FFNRT_MINGW_TRIPLE}-gcc-posix)
set(CMAKE_CXX_COMPILER ${FFNRT_MINGW_TRIPLE}-g++-posix)
set(CMAKE_RC_COMPILER ${FFNRT_MINGW_TRIPLE}-windres)
# Libraries and headers only from the mingw sysroot and the prefixes given
# (never the host's /usr/include, whose C library is glibc); programs from
# the host.
set(CMAKE_FIND_ROOT_PATH /usr/${FFNRT_MINGW_TRIPLE})
if(DEFINED ENV{FFNRT_MINGW_PREFIX})
  list(PREPEND CMAKE_FIND_ROOT_PATH $ENV{FFNRT_MINGW_PREFIX})
endif()
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The GCC runtime (libgcc, libstdc++) and winpthreads linked statically, so
# ffnrt.dll and ffnrt.exe need no mingw DLLs beside them (only Windows's
# own: KERNEL32, ADVAPI32, msvcrt).
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static")
