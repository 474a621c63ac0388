#ifndef FFNRT_GLSL_COMPILER_H
#define FFNRT_GLSL_COMPILER_H

#include "base/error.h"
#include <stddef.h>
#include <stdint.h>

/* Compiles a GLSL compute shader to SPIR-V in process with glslang's C API.
 * On success *words (malloc'd) holds *word_count words. On a compile error
 * returns FFNRT_ERROR_COMPILE_FAILED with the compiler's log in *log
 * (malloc'd). max_workgroup_size bounds local_size_x as the device does. */
ffnrt_status ffnrt_glsl_to_spirv(const char *source, uint32_t max_workgroup_size, uint32_t **words,
                                 size_t *word_count, char **log, ffnrt_error *err);

/* Whether words are valid SPIR-V for the environment ffnrt compiles for
 * (SPIRV-Tools' validator, as the validation layer runs it): what came
 * from the disk cache is checked before a driver sees it, since a driver
 * given invalid SPIR-V may do anything. 1 valid, 0 not (*why says what is
 * wrong), -1 when it could not be checked (out of host memory: *why). */
int ffnrt_spirv_valid(const uint32_t *words, size_t word_count, char *why, size_t cap);

/* The compiler and its settings, for cache keys: "glslang 12.0.0 ...". */
const char *ffnrt_glsl_compiler_identity(void);

#endif
