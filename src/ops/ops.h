/* Op descriptors and the element-wise launcher shared by the ops. */
#ifndef FFNRT_OPS_H
#define FFNRT_OPS_H

#include "core/context.h"

/* Parameters of shaders/activation.kernel, in its Params order. */
typedef struct ffnrt_activation_params {
    uint32_t n, base, inner, channels;
    float alpha, beta;
} ffnrt_activation_params;

/* One element-wise pass over `count` elements of x into y, split into
 * dispatches that respect the device's buffer range and workgroup counts.
 * extra (may be NULL) is bound whole as binding 2. */
ffnrt_status ffnrt_run_elementwise(ffnrt_context *ctx, const char *file, const char *defines,
                                   const ffnrt_tensor *x, ffnrt_tensor *y,
                                   const ffnrt_tensor *extra,
                                   const ffnrt_activation_params *params);

#endif
