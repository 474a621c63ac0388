/* Device tensors: a buffer with a dtype and a row-major shape. */
#include "core/context.h"

#include <stdlib.h>
#include <string.h>

size_t ffnrt_dtype_size(ffnrt_dtype dtype)
{
    switch (dtype) {
    case FFNRT_DTYPE_F32: return 4;
    case FFNRT_DTYPE_F16: return 2;
    case FFNRT_DTYPE_BF16: return 2;
    }
    return 0;
}

const char *ffnrt_dtype_name(ffnrt_dtype dtype)
{
    switch (dtype) {
    case FFNRT_DTYPE_F32: return "f32";
    case FFNRT_DTYPE_F16: return "f16";
    case FFNRT_DTYPE_BF16: return "bf16";
    }
    return "unknown";
}

ffnrt_status ffnrt_tensor_check_size(ffnrt_context *ctx, ffnrt_dtype dtype, uint64_t numel, const char *fn)
{
    /* Element indices travel to kernels as 32-bit values. */
    if (numel > UINT32_MAX || numel * ffnrt_dtype_size(dtype) > ctx->limits.max_allocation)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_LIMIT_EXCEEDED,
                          "%s: %s tensor of %llu elements is past the device's largest allocation (%llu bytes)", fn,
                          ffnrt_dtype_name(dtype), (unsigned long long)numel,
                          (unsigned long long)ctx->limits.max_allocation);
    return FFNRT_OK;
}

ffnrt_status ffnrt_tensor_new(ffnrt_context *ctx, ffnrt_dtype dtype, size_t ndim, const int64_t *shape,
                              const char *fn, ffnrt_tensor **out)
{
    ffnrt_error *err = &ctx->error;
    *out = NULL;
    if (ndim > 0 && !shape)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: shape is NULL", fn);
    if (ndim > FFNRT_MAX_DIMS)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %zu dimensions, at most %d", fn, ndim,
                          FFNRT_MAX_DIMS);
    size_t elem = ffnrt_dtype_size(dtype);
    if (elem == 0)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not a dtype", fn, (int)dtype);
    const uint64_t max_numel = UINT32_MAX;
    uint64_t numel = 1;
    for (size_t i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: dimension %zu is %lld", fn, i,
                              (long long)shape[i]);
        if (shape[i] != 0 && numel > max_numel / (uint64_t)shape[i])
            numel = max_numel + 1;
        else
            numel *= (uint64_t)shape[i];
    }
    ffnrt_status st = ffnrt_tensor_check_size(ctx, dtype, numel, fn);
    if (st != FFNRT_OK)
        return st;
    ffnrt_tensor *t = calloc(1, sizeof *t);
    if (!t)
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    t->ctx = ctx;
    t->dtype = dtype;
    t->ndim = ndim;
    for (size_t i = 0; i < ndim; i++)
        t->shape[i] = shape[i];
    t->numel = (size_t)numel;
    t->bytes = (size_t)numel * elem;
    *out = t;
    return FFNRT_OK;
}

void ffnrt_tensor_link(ffnrt_context *ctx, ffnrt_tensor *t)
{
    t->next = ctx->tensors;
    if (ctx->tensors)
        ctx->tensors->prev = t;
    ctx->tensors = t;
}

ffnrt_status ffnrt_tensor_alloc(ffnrt_context *ctx, ffnrt_dtype dtype, size_t ndim, const int64_t *shape,
                                const char *fn, ffnrt_tensor **out)
{
    ffnrt_error *err = &ctx->error;
    ffnrt_tensor *t;
    ffnrt_status st = ffnrt_tensor_new(ctx, dtype, ndim, shape, fn, &t);
    if (st != FFNRT_OK)
        return st;
    /* Kernels access 32-bit words (16-bit types packed two a word), so the
     * buffer is padded to whole words; empty tensors still get one word,
     * as APIs refuse size 0. */
    uint64_t padded = (t->bytes + 3) & ~(uint64_t)3;
    if (padded == 0)
        padded = 4;
    /* FFNRT_LIMITS=max_memory: a budget, so running out can be tested. */
    if (ctx->max_memory && padded > ctx->max_memory - ctx->allocated) {
        free(t);
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_DEVICE_MEMORY,
                          "%s: %llu more bytes would pass the context's max_memory budget (%llu of %llu bytes in use)",
                          fn, (unsigned long long)padded, (unsigned long long)ctx->allocated,
                          (unsigned long long)ctx->max_memory);
    }
    st = ctx->ops->buffer_create(ctx->dev, padded, &t->buffer, err);
    if (st != FFNRT_OK) {
        free(t);
        return st;
    }
    t->charged = padded;
    ctx->allocated += padded;
    if (ctx->allocated > ctx->allocated_peak)
        ctx->allocated_peak = ctx->allocated;
    ffnrt_tensor_link(ctx, t);
    *out = t;
    return FFNRT_OK;
}

ffnrt_status ffnrt_tensor_create(ffnrt_context *ctx, ffnrt_dtype dtype, size_t ndim,
                                 const int64_t *shape, ffnrt_tensor **out)
{
    if (!ctx)
        return ffnrt_null_handle("ffnrt_tensor_create", "ctx");
    if (!out)
        return ffnrt_context_finish_call(ctx, ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT,
                                                         "ffnrt_tensor_create: out is NULL"));
    return ffnrt_context_finish_call(ctx, ffnrt_tensor_alloc(ctx, dtype, ndim, shape, "ffnrt_tensor_create", out));
}

void ffnrt_tensor_destroy(ffnrt_tensor *t) { ffnrt_tensor_free(t); }

void ffnrt_tensor_free(ffnrt_tensor *t)
{
    if (!t)
        return;
    ffnrt_context *ctx = t->ctx;
    ffnrt_context_settle(ctx); /* a pending asynchronous batch may use the buffer */
    if (t->prev)
        t->prev->next = t->next;
    else
        ctx->tensors = t->next;
    if (t->next)
        t->next->prev = t->prev;
    ctx->ops->buffer_destroy(ctx->dev, t->buffer);
    ctx->allocated -= t->charged; /* 0 for the app's wrapped buffers */
    free(t);
}

ffnrt_overlap ffnrt_tensor_overlap(const ffnrt_tensor *a, const ffnrt_tensor *b)
{
    if (a == b)
        return FFNRT_OVERLAP_SAME;
    /* ffnrt's own tensors each have a buffer of their own. */
    if (!a->app_memory || a->app_memory != b->app_memory || a->bytes == 0 || b->bytes == 0)
        return FFNRT_OVERLAP_NONE;
    if (a->offset + a->bytes <= b->offset || b->offset + b->bytes <= a->offset)
        return FFNRT_OVERLAP_NONE;
    return a->offset == b->offset && a->bytes == b->bytes ? FFNRT_OVERLAP_SAME : FFNRT_OVERLAP_PARTIAL;
}

static ffnrt_status check_transfer(const ffnrt_tensor *t, const void *host, size_t bytes,
                                   const char *fn)
{
    ffnrt_error err;
    if (!t) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: tensor is NULL", fn);
        ffnrt_error_publish(&err);
        return err.status;
    }
    if (!host && bytes)
        return ffnrt_fail(&t->ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: host pointer is NULL", fn);
    if (bytes != t->bytes)
        return ffnrt_fail(&t->ctx->error, FFNRT_ERROR_SHAPE_MISMATCH,
                          "%s: %zu bytes given, the tensor holds %zu", fn, bytes, t->bytes);
    return FFNRT_OK;
}

ffnrt_status ffnrt_tensor_upload(ffnrt_tensor *t, const void *host, size_t bytes)
{
    ffnrt_status st = bytes ? ffnrt_context_settle(t->ctx) : FFNRT_OK; /* after pending asynchronous work */
    if (st == FFNRT_OK && bytes)
        st = t->ctx->ops->buffer_write(t->ctx->dev, t->buffer, t->offset, host, bytes, &t->ctx->error);
    return st;
}

ffnrt_status ffnrt_tensor_write(ffnrt_tensor *t, const void *host, size_t bytes)
{
    ffnrt_status st = check_transfer(t, host, bytes, "ffnrt_tensor_write");
    if (!t)
        return st;
    if (st == FFNRT_OK)
        st = ffnrt_tensor_upload(t, host, bytes);
    return ffnrt_context_finish_call(t->ctx, st);
}

ffnrt_status ffnrt_tensor_read(const ffnrt_tensor *t, void *host, size_t bytes)
{
    ffnrt_status st = check_transfer(t, host, bytes, "ffnrt_tensor_read");
    if (!t)
        return st;
    if (st == FFNRT_OK && bytes)
        st = ffnrt_context_settle(t->ctx); /* after pending asynchronous work */
    if (st == FFNRT_OK && bytes)
        st = t->ctx->ops->buffer_read(t->ctx->dev, t->buffer, t->offset, host, bytes, &t->ctx->error);
    return ffnrt_context_finish_call(t->ctx, st);
}

ffnrt_dtype ffnrt_tensor_dtype(const ffnrt_tensor *t) { return t ? t->dtype : FFNRT_DTYPE_F32; }
size_t ffnrt_tensor_ndim(const ffnrt_tensor *t) { return t ? t->ndim : 0; }
int64_t ffnrt_tensor_dim(const ffnrt_tensor *t, size_t axis)
{
    return t && axis < t->ndim ? t->shape[axis] : -1;
}
size_t ffnrt_tensor_numel(const ffnrt_tensor *t) { return t ? t->numel : 0; }
size_t ffnrt_tensor_bytes(const ffnrt_tensor *t) { return t ? t->bytes : 0; }
