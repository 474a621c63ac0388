/* What the op files share: argument checks, the compute precision, plans. */
#ifndef FFNRT_OPS_H
#define FFNRT_OPS_H

#include "launch/launch.h"

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

/* A tensor with a shape and no memory, for plans (never registered). */
void ffnrt_plan_tensor(ffnrt_context *ctx, ffnrt_dtype dtype, size_t ndim, const int64_t *shape, ffnrt_tensor *t);
/* Makes a plan of the context's choices and `run`'s, run with the
 * context's plan sink set so that launches describe themselves instead. */
ffnrt_status ffnrt_plan_op(ffnrt_context *ctx, const char *fn, ffnrt_plan **out, const char *op_text,
                           ffnrt_status (*run)(ffnrt_context *ctx, const void *arg), const void *arg);

/* ------------------------------------------------ internal run functions */

struct ffnrt_stats_call; /* ops/stats.h */

/* What the public entry points do, without publishing: the error stays in
 * ctx->error. Internal work (the unfused FFN path, calibration, the tuner)
 * calls these, never the public wrappers. fn names the caller in messages.
 * stats: the call's statistics (ops/stats.h) when they are on, whose run
 * the op's kernels take (and whose fp16 the op sets); NULL: none. */
ffnrt_status ffnrt_op_activation(ffnrt_context *ctx, const ffnrt_activation_desc *desc, const ffnrt_tensor *x,
                                 const ffnrt_tensor *dy, ffnrt_tensor *out, const char *fn,
                                 struct ffnrt_stats_call *stats); /* dy NULL: forward */
ffnrt_status ffnrt_op_copy(ffnrt_context *ctx, const ffnrt_tensor *x, ffnrt_tensor *y, const char *fn);
ffnrt_status ffnrt_op_glu_split(ffnrt_context *ctx, const ffnrt_glu_desc *desc, const ffnrt_tensor *gate,
                                const ffnrt_tensor *value, ffnrt_tensor *y, const char *fn,
                                struct ffnrt_stats_call *stats);
ffnrt_status ffnrt_op_glu_backward_split(ffnrt_context *ctx, const ffnrt_glu_desc *desc, const ffnrt_tensor *gate,
                                         const ffnrt_tensor *value, const ffnrt_tensor *dy, ffnrt_tensor *dgate,
                                         ffnrt_tensor *dvalue, const char *fn, struct ffnrt_stats_call *stats);
/* An FFN layer from host weights, and one forward through it (which also
 * sets ctx->last_op_ns to the block's device time). */
ffnrt_status ffnrt_ffn_build(ffnrt_context *ctx, const ffnrt_ffn_desc *desc, const ffnrt_ffn_weights *weights,
                             const char *fn, ffnrt_ffn **out);
/* Checks an FFN descriptor as ffnrt_ffn_create does (err: the context's,
 * or a call's own). */
ffnrt_status ffnrt_ffn_check_desc(ffnrt_error *err, const ffnrt_ffn_desc *d, const char *fn);
/* A layer over device tensors it does not own (ffnrt_ffn_create_from_tensors). */
ffnrt_status ffnrt_ffn_build_on_tensors(ffnrt_context *ctx, const ffnrt_ffn_desc *desc,
                                        const ffnrt_ffn_weight_tensors *weights, const char *fn, ffnrt_ffn **out);
/* A forward after the checks of the call that runs it (residual: y += the
 * layer's output). */
ffnrt_status ffnrt_ffn_run(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y, const char *fn,
                           struct ffnrt_stats_call *stats, int residual);

#endif
