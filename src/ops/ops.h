/* What the op files share: argument checks, the compute precision, plans. */
#ifndef FFNRT_OPS_H
#define FFNRT_OPS_H

#include "launch/launch.h"

/* FFNRT_OK when t is non-NULL and belongs to ctx; names the argument otherwise. */
ffnrt_status ffnrt_check_tensor(ffnrt_context *ctx, const ffnrt_tensor *t, const char *fn, const char *name);
/* FFNRT_OK when a and b have the same shape and dtype. */
ffnrt_status ffnrt_check_same_layout(ffnrt_context *ctx, const ffnrt_tensor *a, const ffnrt_tensor *b,
                                     const char *fn, const char *a_name, const char *b_name);
/* Checks that the device and dtype allow the compute precision; *define
 * gets the build define that selects it ("" for fp32). */
ffnrt_status ffnrt_compute_define(ffnrt_context *ctx, ffnrt_compute compute, ffnrt_dtype dtype, const char *fn,
                                  ffnrt_defines *defines);
/* Publishes and returns the error for a call made with a NULL context. */
ffnrt_status ffnrt_null_context(const char *fn);

/* A tensor with a shape and no memory, for plans (never registered). */
void ffnrt_plan_tensor(ffnrt_context *ctx, ffnrt_dtype dtype, size_t ndim, const int64_t *shape, ffnrt_tensor *t);
/* Makes a plan of the context's choices and `run`'s, run with the
 * context's plan sink set so that launches describe themselves instead. */
ffnrt_status ffnrt_plan_op(ffnrt_context *ctx, const char *fn, ffnrt_plan **out, const char *op_text,
                           ffnrt_status (*run)(ffnrt_context *ctx, const void *arg), const void *arg);

#endif
