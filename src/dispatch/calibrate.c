/* Calibration: the few device figures the cost model needs (copy
 * bandwidth, GEMM rate, the cost of a dispatch), measured once per device
 * with ffnrt's own kernels and kept for the context (and, where the disk
 * cache is on, for the device and driver). */
#include "ops/ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Median seconds of `runs` calls of op (device time where the API has it). */
static ffnrt_status time_op(ffnrt_context *ctx, int runs, ffnrt_status (*op)(void *), void *arg, double *out)
{
    double t[9];
    ffnrt_status st = op(arg); /* warm-up: builds the kernel */
    for (int i = 0; i < runs && st == FFNRT_OK; i++) {
        double t0 = ffnrt_now_ms();
        st = op(arg);
        t[i] = ctx->last_op_ns ? 1e-9 * (double)ctx->last_op_ns : 1e-3 * (ffnrt_now_ms() - t0);
    }
    if (st == FFNRT_OK) {
        *out = ffnrt_median(t, runs);
    }
    return st;
}

typedef struct copy_arg {
    ffnrt_context *ctx;
    ffnrt_tensor *a, *b;
} copy_arg;

static ffnrt_status run_copy(void *p)
{
    copy_arg *c = p;
    return ffnrt_copy(c->ctx, c->a, c->b);
}

typedef struct ffn_arg {
    ffnrt_ffn *layer;
    ffnrt_tensor *x, *y;
} ffn_arg;

static ffnrt_status run_ffn(void *p)
{
    ffn_arg *f = p;
    return ffnrt_ffn_forward(f->layer, f->x, f->y);
}

ffnrt_status ffnrt_calibrate(ffnrt_context *ctx, ffnrt_calibration *out)
{
    if (ctx->calibration.valid) {
        *out = ctx->calibration;
        return FFNRT_OK;
    }
    ffnrt_calibration cal = {0, 0, 0, 1};
    /* Copy: 16 MiB each way (within every device's buffer range). */
    int64_t n = 4 << 20, one = 1;
    copy_arg c = {ctx, NULL, NULL};
    ffnrt_status st = ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &n, &c.a);
    if (st == FFNRT_OK)
        st = ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &n, &c.b);
    double t = 0;
    if (st == FFNRT_OK && (st = time_op(ctx, 5, run_copy, &c, &t)) == FFNRT_OK)
        cal.copy_gbps = 2.0 * 4.0 * (double)n / t * 1e-9;
    ffnrt_tensor_destroy(c.a);
    ffnrt_tensor_destroy(c.b);
    /* A dispatch: the copy of one element. */
    c.a = c.b = NULL;
    if (st == FFNRT_OK)
        st = ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &one, &c.a);
    if (st == FFNRT_OK)
        st = ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &one, &c.b);
    if (st == FFNRT_OK && (st = time_op(ctx, 9, run_copy, &c, &t)) == FFNRT_OK)
        cal.dispatch_us = 1e6 * t;
    ffnrt_tensor_destroy(c.a);
    ffnrt_tensor_destroy(c.b);
    /* GEMM: a dense layer's products, 256 tokens x 256 x 1024, with the
     * kernel the dispatcher picks for prefill on this device. */
    const int64_t d = 256, h = 1024, tokens = 256;
    float *w = st == FFNRT_OK ? calloc((size_t)(2 * d * h), sizeof *w) : NULL;
    ffn_arg f = {NULL, NULL, NULL};
    if (st == FFNRT_OK && !w)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "calibration: out of host memory");
    if (st == FFNRT_OK) {
        ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_DENSE, d, h);
        desc.activation.kind = FFNRT_ACT_RELU;
        desc.path = FFNRT_FFN_PATH_FUSED;
        desc.matmul = ctx->info.type == FFNRT_DEVICE_TYPE_CPU ? FFNRT_MATMUL_AUTO : FFNRT_MATMUL_TILED;
        ffnrt_ffn_weights wt = {0};
        wt.w_in = w;
        wt.w_out = w + d * h;
        int64_t shape[2] = {tokens, d};
        st = ffnrt_ffn_create(ctx, &desc, &wt, &f.layer);
        if (st == FFNRT_OK)
            st = ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &f.x);
        if (st == FFNRT_OK)
            st = ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &f.y);
        if (st == FFNRT_OK && (st = time_op(ctx, 3, run_ffn, &f, &t)) == FFNRT_OK)
            cal.gemm_gflops = 2.0 * 2.0 * (double)(tokens * d * h) / t * 1e-9;
    }
    ffnrt_tensor_destroy(f.x);
    ffnrt_tensor_destroy(f.y);
    ffnrt_ffn_destroy(f.layer);
    free(w);
    if (st != FFNRT_OK)
        return st;
    ctx->calibration = cal;
    *out = cal;
    char text[128];
    int len = snprintf(text, sizeof text, "%.6g %.6g %.6g\n", cal.copy_gbps, cal.gemm_gflops, cal.dispatch_us);
    ffnrt_context_blob_put(ctx, FFNRT_CACHE_CALIBRATION, "calibration", text, (size_t)len);
    return FFNRT_OK;
}

/* A calibration measured earlier on this device and driver, if the disk
 * cache has a well-formed one (three positive finite figures). */
void ffnrt_calibration_load(ffnrt_context *ctx)
{
    size_t len = 0;
    char *blob = ffnrt_context_blob_get(ctx, FFNRT_CACHE_CALIBRATION, "calibration", &len);
    char text[128];
    if (blob && len < sizeof text) {
        memcpy(text, blob, len);
        text[len] = '\0';
        ffnrt_calibration c = {0, 0, 0, 1};
        if (sscanf(text, "%lf %lf %lf", &c.copy_gbps, &c.gemm_gflops, &c.dispatch_us) == 3 && c.copy_gbps > 0 &&
            c.gemm_gflops > 0 && c.dispatch_us > 0 && c.copy_gbps < 1e6 && c.gemm_gflops < 1e7 && c.dispatch_us < 1e7)
            ctx->calibration = c;
    }
    free(blob);
}

ffnrt_status ffnrt_context_calibrate(ffnrt_context *ctx, double *copy_gbps, double *gemm_gflops, double *dispatch_us)
{
    if (!ctx)
        return ffnrt_null_context("ffnrt_context_calibrate");
    ffnrt_calibration cal;
    ffnrt_status st = ffnrt_calibrate(ctx, &cal);
    if (st == FFNRT_OK) {
        if (copy_gbps)
            *copy_gbps = cal.copy_gbps;
        if (gemm_gflops)
            *gemm_gflops = cal.gemm_gflops;
        if (dispatch_us)
            *dispatch_us = cal.dispatch_us;
    }
    return ffnrt_context_finish_call(ctx, st);
}
