/* What the op files share: the element-wise launcher and dtype helpers. */
#ifndef FFNRT_OPS_H
#define FFNRT_OPS_H

#include "core/context.h"

/* One tensor argument of an element-wise kernel. The launcher iterates over
 * rows x row_elems output elements; a binding holds per_row of its own
 * elements for each row (0: bound whole, e.g. PReLU's slopes). */
typedef struct ffnrt_ew_binding {
    const ffnrt_tensor *tensor;
    uint64_t per_row;
} ffnrt_ew_binding;

typedef struct ffnrt_ew_launch {
    const char *file;    /* the op's file in shaders/ */
    const char *defines; /* the op's build defines; the storage type is added */
    ffnrt_dtype dtype;   /* storage type of every tensor argument */
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

/* FFNRT_OK when t is non-NULL and belongs to ctx; names the argument otherwise. */
ffnrt_status ffnrt_check_tensor(ffnrt_context *ctx, const ffnrt_tensor *t, const char *fn, const char *name);
/* FFNRT_OK when a and b have the same shape and dtype. */
ffnrt_status ffnrt_check_same_layout(ffnrt_context *ctx, const ffnrt_tensor *a, const ffnrt_tensor *b,
                                     const char *fn, const char *a_name, const char *b_name);
/* One tensor argument of an op, for ffnrt_check_aliasing. */
typedef struct ffnrt_op_arg {
    const ffnrt_tensor *tensor; /* NULL: absent */
    const char *name;
    int output;
} ffnrt_op_arg;

/* Refuses an output whose memory overlaps another argument's, except,
 * when same_ok, an output that is exactly an input (kernels whose every
 * output element reads the inputs at its own index, all before it writes:
 * in place). Two outputs never share memory. rule says what the op allows. */
ffnrt_status ffnrt_check_aliasing(ffnrt_context *ctx, const char *fn, const ffnrt_op_arg *args, size_t n,
                                  int same_ok, const char *rule);

/* Checks that the device and dtype allow the compute precision; *define
 * gets the build define that selects it ("" for fp32). */
ffnrt_status ffnrt_compute_define(ffnrt_context *ctx, ffnrt_compute compute, ffnrt_dtype dtype, const char *fn,
                                  const char **define);
/* Publishes and returns the error for a call made with a NULL context. */
ffnrt_status ffnrt_null_context(const char *fn);

/* A tensor with a shape and no memory, for plans (never registered). */
void ffnrt_plan_tensor(ffnrt_context *ctx, ffnrt_dtype dtype, size_t ndim, const int64_t *shape, ffnrt_tensor *t);
/* Makes a plan of the context's choices and `run`'s, run with the
 * context's plan sink set so that launches describe themselves instead. */
ffnrt_status ffnrt_plan_op(ffnrt_context *ctx, const char *fn, ffnrt_plan **out, const char *op_text,
                           ffnrt_status (*run)(ffnrt_context *ctx, const void *arg), const void *arg);

#endif
