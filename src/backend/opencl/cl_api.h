/* The OpenCL entry points ffnrt uses, resolved from the ICD loader at run
 * time so that a machine without OpenCL still loads ffnrt. */
#ifndef FFNRT_CL_API_H
#define FFNRT_CL_API_H

#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#define FFNRT_CL_FUNCTIONS(X)          \
    X(clGetPlatformIDs)                \
    X(clGetPlatformInfo)               \
    X(clGetDeviceIDs)                  \
    X(clGetDeviceInfo)                 \
    X(clCreateContext)                 \
    X(clReleaseContext)                \
    X(clCreateCommandQueue)            \
    X(clReleaseCommandQueue)           \
    X(clCreateBuffer)                  \
    X(clCreateSubBuffer)               \
    X(clReleaseMemObject)              \
    X(clEnqueueWriteBuffer)            \
    X(clEnqueueReadBuffer)             \
    X(clCreateProgramWithSource)       \
    X(clBuildProgram)                  \
    X(clGetProgramBuildInfo)           \
    X(clGetProgramInfo)                \
    X(clCreateProgramWithBinary)       \
    X(clReleaseProgram)                \
    X(clCreateKernel)                  \
    X(clReleaseKernel)                 \
    X(clSetKernelArg)                  \
    X(clEnqueueNDRangeKernel)          \
    X(clGetEventProfilingInfo)         \
    X(clReleaseEvent)                  \
    X(clFinish)                        \
    X(clFlush)                         \
    X(clRetainContext)                 \
    X(clRetainCommandQueue)            \
    X(clRetainMemObject)               \
    X(clGetContextInfo)                \
    X(clGetCommandQueueInfo)           \
    X(clGetMemObjectInfo)              \
    X(clEnqueueMarkerWithWaitList)

typedef struct ffnrt_cl_api {
#define FFNRT_CL_MEMBER(name) __typeof__(&name) name;
    FFNRT_CL_FUNCTIONS(FFNRT_CL_MEMBER)
#undef FFNRT_CL_MEMBER
} ffnrt_cl_api;

#endif
