/* What a disk-cache entry holds: shared by the cache (core) and the
 * backends, which choose what to keep. */
#ifndef FFNRT_CACHE_KIND_H
#define FFNRT_CACHE_KIND_H

typedef enum ffnrt_cache_kind {
    FFNRT_CACHE_SPIRV = 1,          /* glslang output for one kernel */
    FFNRT_CACHE_PIPELINE_CACHE = 2, /* a device's VkPipelineCache data */
    FFNRT_CACHE_CL_BINARY = 3,      /* CL_PROGRAM_BINARIES of one program */
    FFNRT_CACHE_CALIBRATION = 4,    /* measured numbers (opaque to the cache) */
    FFNRT_CACHE_TUNING = 5,         /* tuned parameters (opaque to the cache) */
    FFNRT_CACHE_KIND_END
} ffnrt_cache_kind;

#endif
