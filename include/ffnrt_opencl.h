/* ffnrt on the app's own OpenCL context and queue: a context from the
 * app's handles, the app's cl_mem buffers as tensors, and ops enqueued on
 * the app's queue with event wait lists in and an event out.
 *
 * The app includes this header with its OpenCL headers (define
 * CL_TARGET_OPENCL_VERSION as usual; ffnrt needs OpenCL 1.2). ffnrt.h
 * stays free of OpenCL types. ffnrt never destroys what it did not create:
 * it retains the app's context, queue and buffers while it uses them
 * (clRetain*) and releases exactly those references (clRelease*), so the
 * app's own references and objects are left as they were. */
#ifndef FFNRT_OPENCL_H
#define FFNRT_OPENCL_H

#include <CL/cl.h>

#include "ffnrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A context on the app's device and in-order queue (an out-of-order queue
 * is refused). device is one of the context's devices; queue belongs to
 * both. The context and queue are retained until ffnrt_context_destroy.
 * options may be NULL; only the limit fields are used. Device times
 * (ffnrt_context_last_op_time) come from profiling events when the queue
 * has CL_QUEUE_PROFILING_ENABLE, else they are 0. */
FFNRT_API ffnrt_status ffnrt_context_create_opencl(cl_context context, cl_device_id device,
                                                   cl_command_queue queue, const ffnrt_context_options *options,
                                                   ffnrt_context **out);

/* The bytes of the app's buffer from `offset` as a tensor, without copying;
 * the buffer belongs to the ffnrt context's cl_context (any ffnrt OpenCL
 * context made by ffnrt_context_create_opencl), is CL_MEM_READ_WRITE, and
 * holds offset + the tensor's bytes rounded up to a multiple of 4. offset
 * is a multiple of CL_DEVICE_MEM_BASE_ADDR_ALIGN (in bytes; ffnrt binds
 * sub-buffers). A sub-buffer is accepted (ffnrt uses its parent at the
 * sub-buffer's origin). The buffer is retained until ffnrt_tensor_destroy. */
FFNRT_API ffnrt_status ffnrt_tensor_wrap_opencl_buffer(ffnrt_context *ctx, cl_mem buffer, size_t offset,
                                                       ffnrt_dtype dtype, size_t ndim, const int64_t *shape,
                                                       ffnrt_tensor **out);

/* Enqueueing with the app's events. Between ffnrt_opencl_enqueue_begin and
 * _end, ops enqueue their kernels on the context's queue and return without
 * waiting (clFlush, no clFinish); the first waits for wait_list (n events,
 * which may be 0 / NULL), through a marker enqueued by _begin.
 * ffnrt_opencl_enqueue_end gives in *out_event (if not NULL) a marker event
 * that completes when every command ffnrt enqueued since _begin has; the
 * app releases it with clReleaseEvent. Tensor reads and writes in between
 * are blocking and, on the in-order queue, come after the wait list and
 * the kernels before them: like ffnrt_context_wait (a clFinish of the
 * queue), they block until the wait list completes, so signal user events
 * first. ffnrt_context_last_op_time gives 0 for these ops. A second _begin
 * before _end is an error. */
FFNRT_API ffnrt_status ffnrt_opencl_enqueue_begin(ffnrt_context *ctx, cl_uint n, const cl_event *wait_list);
FFNRT_API ffnrt_status ffnrt_opencl_enqueue_end(ffnrt_context *ctx, cl_event *out_event);

#ifdef __cplusplus
}
#endif
#endif /* FFNRT_OPENCL_H */
