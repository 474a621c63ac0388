/* Bring your own OpenCL context and queue: an app that owns its context,
 * queue and buffers hands them to ffnrt, which enqueues a gated (SwiGLU)
 * FFN on the app's queue after the app's upload event and gives back an
 * event; the app waits for it, reads its buffer and checks the result
 * against a CPU reference. */
#define CL_TARGET_OPENCL_VERSION 120
#include <ffnrt.h>
#include <ffnrt_opencl.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define D_MODEL 256
#define HIDDEN 688
#define TOKENS 8

static float *random_matrix(size_t n, unsigned seed, float scale)
{
    float *m = malloc(n * sizeof *m);
    for (size_t i = 0; m && i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        m[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * scale;
    }
    return m;
}

/* y = Wo·(silu(Wg·x) ⊙ Wv·x), in double. */
static void reference(const float *wg, const float *wv, const float *wo, const float *x, double *y)
{
    static double h[HIDDEN];
    for (int t = 0; t < TOKENS; t++) {
        for (int j = 0; j < HIDDEN; j++) {
            double g = 0, v = 0;
            for (int k = 0; k < D_MODEL; k++) {
                g += (double)wg[j * D_MODEL + k] * x[t * D_MODEL + k];
                v += (double)wv[j * D_MODEL + k] * x[t * D_MODEL + k];
            }
            h[j] = g / (1.0 + exp(-g)) * v;
        }
        for (int i = 0; i < D_MODEL; i++) {
            double s = 0;
            for (int j = 0; j < HIDDEN; j++)
                s += (double)wo[i * HIDDEN + j] * h[j];
            y[t * D_MODEL + i] = s;
        }
    }
}

int main(void)
{
    int rc = 1;
    float *wg = random_matrix((size_t)HIDDEN * D_MODEL, 1, 0.1f);
    float *wv = random_matrix((size_t)HIDDEN * D_MODEL, 2, 0.1f);
    float *wo = random_matrix((size_t)D_MODEL * HIDDEN, 3, 0.05f);
    float *x = random_matrix((size_t)TOKENS * D_MODEL, 4, 2.0f);
    float *y = malloc(sizeof(float) * TOKENS * D_MODEL);
    double *ref = malloc(sizeof(double) * TOKENS * D_MODEL);
    cl_context context = NULL;
    cl_command_queue queue = NULL;
    cl_mem buffer = NULL;
    cl_event uploaded = NULL, done = NULL;
    ffnrt_context *ctx = NULL;
    ffnrt_ffn *layer = NULL;
    if (!wg || !wv || !wo || !x || !y || !ref)
        goto out;

    /* ---- the app's own OpenCL objects */
    cl_platform_id platform;
    cl_device_id device;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &platform, &n) != CL_SUCCESS || n == 0 ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, &n) != CL_SUCCESS || n == 0) {
        fprintf(stderr, "byo_opencl: no OpenCL device\n");
        goto out;
    }
    char name[256] = "";
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name, name, NULL);
    cl_int err;
    context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    if (err != CL_SUCCESS)
        goto out;
    queue = clCreateCommandQueue(context, device, 0, &err); /* in order */
    if (err != CL_SUCCESS)
        goto out;
    /* One buffer for x and y, y at an offset the device accepts. */
    cl_uint align_bits = 0;
    clGetDeviceInfo(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
    size_t align = align_bits >= 32 ? align_bits / 8 : 4;
    size_t io_bytes = sizeof(float) * TOKENS * D_MODEL, y_offset = (io_bytes + align - 1) / align * align;
    buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, y_offset + io_bytes, NULL, &err);
    if (err != CL_SUCCESS)
        goto out;

    /* ---- ffnrt on the app's context and queue */
    if (ffnrt_context_create_opencl(context, device, queue, NULL, &ctx) != FFNRT_OK)
        goto out;
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, D_MODEL, HIDDEN);
    desc.glu = (ffnrt_glu_desc)FFNRT_GLU_DESC_INIT(FFNRT_SWIGLU);
    ffnrt_ffn_weights weights = {0};
    weights.w_gate = wg;
    weights.w_value = wv;
    weights.w_out = wo;
    if (ffnrt_ffn_create(ctx, &desc, &weights, &layer) != FFNRT_OK)
        goto out;
    int64_t shape[2] = {TOKENS, D_MODEL};
    ffnrt_tensor *tx, *ty; /* wrappers: no copy; freed with the context */
    if (ffnrt_tensor_wrap_opencl_buffer(ctx, buffer, 0, FFNRT_DTYPE_F32, 2, shape, &tx) != FFNRT_OK ||
        ffnrt_tensor_wrap_opencl_buffer(ctx, buffer, y_offset, FFNRT_DTYPE_F32, 2, shape, &ty) != FFNRT_OK)
        goto out;

    /* ---- the app's upload, then ffnrt's FFN after its event, then its read */
    if (clEnqueueWriteBuffer(queue, buffer, CL_FALSE, 0, io_bytes, x, 0, NULL, &uploaded) != CL_SUCCESS)
        goto out;
    if (ffnrt_opencl_enqueue_begin(ctx, 1, &uploaded) != FFNRT_OK || ffnrt_ffn_forward(layer, tx, ty) != FFNRT_OK ||
        ffnrt_opencl_enqueue_end(ctx, &done) != FFNRT_OK)
        goto out;
    if (clEnqueueReadBuffer(queue, buffer, CL_TRUE, y_offset, io_bytes, y, 1, &done, NULL) != CL_SUCCESS)
        goto out;

    reference(wg, wv, wo, x, ref);
    double max_err = 0, max_ref = 0;
    for (int i = 0; i < TOKENS * D_MODEL; i++) {
        double e = fabs(y[i] - ref[i]);
        max_err = e > max_err ? e : max_err;
        max_ref = fabs(ref[i]) > max_ref ? fabs(ref[i]) : max_ref;
    }
    printf("byo_opencl: SwiGLU %d x %d, %d tokens on %s, enqueued on the app's queue: "
           "max |error| %.3g (max |y| %.3g)\n",
           D_MODEL, HIDDEN, TOKENS, name, max_err, max_ref);
    rc = max_err <= 1e-4 * max_ref ? 0 : 1;
    if (rc)
        fprintf(stderr, "byo_opencl: error too large\n");
out:
    if (rc && ffnrt_last_error_message()[0])
        fprintf(stderr, "byo_opencl: %s\n", ffnrt_last_error_message());
    ffnrt_ffn_destroy(layer);
    ffnrt_context_destroy(ctx); /* releases ffnrt's references; the objects stay the app's */
    if (done)
        clReleaseEvent(done);
    if (uploaded)
        clReleaseEvent(uploaded);
    if (buffer)
        clReleaseMemObject(buffer);
    if (queue)
        clReleaseCommandQueue(queue);
    if (context)
        clReleaseContext(context);
    free(wg);
    free(wv);
    free(wo);
    free(x);
    free(y);
    free(ref);
    return rc;
}
