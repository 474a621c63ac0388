#include "peer_clblast.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FFNRT_HAVE_CLBLAST

int peer_clblast_sgemm(const char *device_name, int64_t m, int64_t n, int64_t k, int repeats, double *times, int *runs,
                       char *why, size_t why_len)
{
    (void)device_name, (void)m, (void)n, (void)k, (void)repeats, (void)times, (void)runs;
    snprintf(why, why_len, "CLBlast was not found at build time (Debian: libclblast-dev)");
    return -1;
}

#else
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <clblast_c.h>


static cl_device_id find_device(const char *name)
{
    cl_platform_id plats[8];
    cl_uint np = 0;
    if (clGetPlatformIDs(8, plats, &np) != CL_SUCCESS)
        return NULL;
    for (cl_uint p = 0; p < np && p < 8; p++) {
        cl_device_id devs[16];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < nd && d < 16; d++) {
            char dn[256] = "";
            clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof dn - 1, dn, NULL);
            if (strncmp(dn, name, strlen(dn)) == 0 && dn[0])
                return devs[d];
        }
    }
    return NULL;
}

int peer_clblast_sgemm(const char *device_name, int64_t m, int64_t n, int64_t k, int repeats, double *times, int *runs,
                       char *why, size_t why_len)
{
    cl_device_id dev = find_device(device_name);
    if (!dev) {
        snprintf(why, why_len, "no OpenCL device named %s", device_name);
        return -1;
    }
    cl_int rc;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
    cl_command_queue q = rc == CL_SUCCESS ? clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &rc) : NULL;
    size_t sizes[3] = {(size_t)(m * k), (size_t)(n * k), (size_t)(m * n)};
    cl_mem buf[3] = {NULL, NULL, NULL};
    float *host = malloc((sizes[1] > sizes[0] ? sizes[1] : sizes[0]) * sizeof *host);
    int result = -1;
    if (rc != CL_SUCCESS || !host) {
        snprintf(why, why_len, "OpenCL setup failed (%d)", (int)rc);
        goto done;
    }
    for (size_t i = 0; i < (sizes[1] > sizes[0] ? sizes[1] : sizes[0]); i++)
        host[i] = (float)((int)(i % 17) - 8) * 0.01f; /* no subnormals, no overflow */
    for (int b = 0; b < 3; b++) {
        buf[b] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizes[b] * sizeof(float), NULL, &rc);
        if (rc == CL_SUCCESS && b < 2)
            rc = clEnqueueWriteBuffer(q, buf[b], CL_TRUE, 0, sizes[b] * sizeof(float), host, 0, NULL, NULL);
        if (rc != CL_SUCCESS) {
            snprintf(why, why_len, "OpenCL buffers failed (%d)", (int)rc);
            goto done;
        }
    }
    int count = repeats < 1 ? 1 : repeats > 64 ? 64 : repeats;
    for (int r = -1; r < count; r++) { /* r = -1: warm-up, CLBlast compiles its kernels */
        /* CLBlast may run several kernels (transposes and pads around the
         * GEMM for large shapes) and its event is the last one's: time the
         * span from a marker enqueued before it (the queue is in order). */
        cl_event ev = NULL, before = NULL;
        if (clEnqueueMarkerWithWaitList(q, 0, NULL, &before) != CL_SUCCESS) {
            snprintf(why, why_len, "clEnqueueMarkerWithWaitList failed");
            goto done;
        }
        CLBlastStatusCode st = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeYes, (size_t)m,
                                            (size_t)n, (size_t)k, 1.0f, buf[0], 0, (size_t)k, buf[1], 0, (size_t)k,
                                            0.0f, buf[2], 0, (size_t)n, &q, &ev);
        if (st != CLBlastSuccess) {
            clReleaseEvent(before);
            snprintf(why, why_len, "CLBlastSgemm failed (%d)", (int)st);
            goto done;
        }
        clWaitForEvents(1, &ev);
        cl_ulong start = 0, end = 0;
        clGetEventProfilingInfo(before, CL_PROFILING_COMMAND_END, sizeof start, &start, NULL);
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
        clReleaseEvent(ev);
        clReleaseEvent(before);
        if (r >= 0)
            times[r] = (double)(end - start) * 1e-9;
    }
    *runs = count;
    result = 0;
done:
    for (int b = 0; b < 3; b++)
        if (buf[b])
            clReleaseMemObject(buf[b]);
    if (q)
        clReleaseCommandQueue(q);
    if (ctx)
        clReleaseContext(ctx);
    free(host);
    return result;
}
#endif
