/* The launchers: kernel build defines assembled in one place, the
 * element-wise launcher and the GEMM launcher. Each takes a choice the
 * dispatcher made and turns it into builds and dispatches that fit the
 * device's limits; with the context's plan sink set, it describes them
 * instead of running them. */
#ifndef FFNRT_LAUNCH_H
#define FFNRT_LAUNCH_H

#include "core/context.h"

/* ------------------------------------------------------- build defines */

/* A kernel's build defines, newline-separated "#define" lines. */
typedef struct ffnrt_defines {
    char text[1024];
    int overflow; /* a line did not fit: the build must not run */
} ffnrt_defines;

/* Appends one line (printf-style, without the newline). */
void ffnrt_defines_add(ffnrt_defines *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* STORAGE_F32 / STORAGE_F16 / STORAGE_BF16: how the kernel loads and stores. */
void ffnrt_defines_storage(ffnrt_defines *d, ffnrt_dtype dtype);
/* The hooks a kernel calls for an activation, from the op table: ACT(v, i),
 * DACT(v, i), ACT_F16(v, i) and PARAM_SLOPES where it reads slopes;
 * FFNRT_ACT_COUNT gives the identity (no activation). */
void ffnrt_defines_activation(ffnrt_defines *d, ffnrt_activation act);

/* ------------------------------------------------------------ element-wise */

/* One tensor argument of an element-wise kernel. The launcher iterates over
 * rows x row_elems output elements; a binding holds per_row of its own
 * elements for each row (0: bound whole, e.g. PReLU's slopes). */
typedef struct ffnrt_ew_binding {
    const ffnrt_tensor *tensor;
    uint64_t per_row;
} ffnrt_ew_binding;

typedef struct ffnrt_ew_launch {
    const char *file;             /* the op's file in shaders/ */
    const ffnrt_defines *defines; /* the op's build defines; the storage type is added */
    ffnrt_dtype dtype;            /* storage type of every tensor argument */
    uint64_t rows;
    uint64_t row_elems;
    const ffnrt_ew_binding *bindings;
    uint32_t binding_count;
    /* The kernel's Params block; it starts with uint n (elements in the
     * dispatch's range) and uint base (index of its first element). */
    void *params;
    uint32_t params_size;
} ffnrt_ew_launch;

/* Runs an element-wise kernel over the whole iteration space, split into
 * dispatches that respect the device's buffer range, offset alignment and
 * workgroup counts. */
ffnrt_status ffnrt_run_elementwise(ffnrt_context *ctx, const ffnrt_ew_launch *launch);

#endif
