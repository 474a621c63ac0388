// glslang and SPIRV-Tools are C++ behind their C APIs: an allocation that
// fails inside them throws std::bad_alloc, which must neither unwind
// through ffnrt's C frames nor leave its C API (either ends the process).
// The one C++ source of the library; glsl_compiler.c runs each call into
// them through here.
#include "backend/vulkan/cxx_guard.h"

#include <new>

extern "C" ffnrt_cxx_outcome ffnrt_cxx_guarded(void (*fn)(void *), void *arg)
{
    try {
        fn(arg);
        return FFNRT_CXX_RETURNED;
    } catch (const std::bad_alloc &) {
        return FFNRT_CXX_OUT_OF_MEMORY;
    } catch (...) {
        return FFNRT_CXX_THREW;
    }
}
