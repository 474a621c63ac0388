#ifndef FFNRT_CXX_GUARD_H
#define FFNRT_CXX_GUARD_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ffnrt_cxx_outcome {
    FFNRT_CXX_RETURNED,      /* fn returned */
    FFNRT_CXX_OUT_OF_MEMORY, /* it threw std::bad_alloc */
    FFNRT_CXX_THREW          /* it threw something else */
} ffnrt_cxx_outcome;

/* Runs fn(arg), which calls glslang or SPIRV-Tools, and catches what they
 * throw (cxx_guard.cpp). fn's own frames are unwound without cleanup, so
 * it keeps what it creates in arg for the caller to release. Its file is
 * built with -fexceptions, so that an exception can pass through it. */
ffnrt_cxx_outcome ffnrt_cxx_guarded(void (*fn)(void *), void *arg);

#ifdef __cplusplus
}
#endif
#endif
