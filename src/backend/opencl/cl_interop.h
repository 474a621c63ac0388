/* The OpenCL backend's interop entry points (src/api/interop_opencl.c
 * calls them): a device from the app's context and queue, wrapped buffers,
 * and enqueueing with the app's events. */
#ifndef FFNRT_CL_INTEROP_H
#define FFNRT_CL_INTEROP_H

#include "backend/backend.h"
#include "backend/opencl/cl_api.h"

ffnrt_status ffnrt_cl_open_external(cl_context context, cl_device_id device, cl_command_queue queue,
                                    ffnrt_bdevice **out, ffnrt_device_info *info, ffnrt_limits *limits,
                                    ffnrt_error *err);
/* Wraps (and retains) mem; *origin gets the byte offset of mem's data in
 * the buffer ffnrt binds (a sub-buffer's origin in its parent, else 0) and
 * *memory that buffer (the parent of a sub-buffer), so that tensors over
 * one buffer can be told to overlap. need: the bytes from offset the
 * tensor uses. */
ffnrt_status ffnrt_cl_buffer_wrap(ffnrt_bdevice *dev, cl_mem mem, uint64_t offset, uint64_t need,
                                  ffnrt_bbuffer **out, uint64_t *origin, cl_mem *memory, ffnrt_error *err);
ffnrt_status ffnrt_cl_enqueue_begin(ffnrt_bdevice *dev, cl_uint n, const cl_event *wait_list, ffnrt_error *err);
ffnrt_status ffnrt_cl_enqueue_end(ffnrt_bdevice *dev, cl_event *out_event, ffnrt_error *err);

#endif
