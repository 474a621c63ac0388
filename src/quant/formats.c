/* The weight formats' table and the public host functions over it:
 * names, block sizes, matrix sizes, quantize and dequantize. */
#include "quant/quant.h"

#include "base/error.h"
#include "platform/platform.h"

#include <stdint.h>
#include <string.h>

#define Q(name, ggml, id, elements, bytes, quantize, dequantize) \
    { name, ggml, id, elements, bytes, quantize, dequantize }

static const ffnrt_format_traits formats[FFNRT_WEIGHT_FORMAT_COUNT] = {
    [FFNRT_WEIGHT_F32] = Q("f32", "F32", 0, 1, 4, ffnrt_quantize_f32, ffnrt_dequantize_f32),
    [FFNRT_WEIGHT_F16] = Q("f16", "F16", 1, 1, 2, ffnrt_quantize_f16, ffnrt_dequantize_f16),
    [FFNRT_WEIGHT_BF16] = Q("bf16", "BF16", 30, 1, 2, ffnrt_quantize_bf16, ffnrt_dequantize_bf16),
    [FFNRT_WEIGHT_Q8_0] = Q("q8_0", "Q8_0", 8, 32, 34, ffnrt_quantize_q8_0, ffnrt_dequantize_q8_0),
    [FFNRT_WEIGHT_Q4_0] = Q("q4_0", "Q4_0", 2, 32, 18, ffnrt_quantize_q4_0, ffnrt_dequantize_q4_0),
    [FFNRT_WEIGHT_Q4_1] = Q("q4_1", "Q4_1", 3, 32, 20, ffnrt_quantize_q4_1, ffnrt_dequantize_q4_1),
    [FFNRT_WEIGHT_Q4_K] = Q("q4_k", "Q4_K", 12, 256, 144, ffnrt_quantize_q4_k, ffnrt_dequantize_q4_k),
    [FFNRT_WEIGHT_Q6_K] = Q("q6_k", "Q6_K", 14, 256, 210, ffnrt_quantize_q6_k, ffnrt_dequantize_q6_k),
};

/* The largest block, for the scratch block the checking pass writes. */
#define MAX_BLOCK_BYTES 256
#define MAX_BLOCK_ELEMENTS 256

const ffnrt_format_traits *ffnrt_format_traits_of(ffnrt_weight_format format)
{
    if ((unsigned)format >= FFNRT_WEIGHT_FORMAT_COUNT)
        return NULL;
    return &formats[format];
}

int ffnrt_format_from_ggml_type(uint32_t ggml_type, ffnrt_weight_format *out)
{
    for (int f = 0; f < FFNRT_WEIGHT_FORMAT_COUNT; f++)
        if (formats[f].ggml_type == ggml_type) {
            *out = (ffnrt_weight_format)f;
            return 1;
        }
    return 0;
}

const char *ffnrt_weight_format_name(ffnrt_weight_format format)
{
    const ffnrt_format_traits *t = ffnrt_format_traits_of(format);
    return t ? t->name : "unknown";
}

ffnrt_status ffnrt_weight_format_from_name(const char *name, ffnrt_weight_format *out)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!name || !out) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_weight_format_from_name: name or out is NULL");
    } else {
        int f = 0;
        while (f < FFNRT_WEIGHT_FORMAT_COUNT && ffnrt_strcasecmp(name, formats[f].name) != 0)
            f++;
        if (f < FFNRT_WEIGHT_FORMAT_COUNT)
            *out = (ffnrt_weight_format)f;
        else
            ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT,
                       "ffnrt_weight_format_from_name: unknown format \"%s\" (f32, f16, bf16, q8_0, q4_0, q4_1, "
                       "q4_k, q6_k)", name);
    }
    ffnrt_error_publish(&err);
    return err.status;
}

ffnrt_status ffnrt_weight_format_block(ffnrt_weight_format format, uint32_t *elements, uint32_t *bytes)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    const ffnrt_format_traits *t = ffnrt_format_traits_of(format);
    if (!t) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_weight_format_block: unknown format %d", (int)format);
    } else {
        if (elements)
            *elements = t->block_elements;
        if (bytes)
            *bytes = t->block_bytes;
    }
    ffnrt_error_publish(&err);
    return err.status;
}

/* Bytes of [rows, k] in format t, checked: shape, block multiple, size_t. */
static ffnrt_status matrix_bytes(const ffnrt_format_traits *t, int64_t rows, int64_t k, size_t *bytes,
                                 const char *fn, ffnrt_error *err)
{
    if (rows < 0 || k < 0)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: rows %lld and k %lld must not be negative", fn,
                          (long long)rows, (long long)k);
    if (k % t->block_elements != 0)
        return ffnrt_fail(err, FFNRT_ERROR_SHAPE_MISMATCH,
                          "%s: k = %lld is not a multiple of %s's block of %u elements along k", fn, (long long)k,
                          t->name, t->block_elements);
    uint64_t row_bytes = (uint64_t)(k / t->block_elements) * t->block_bytes; /* < 2^63 / 32 * 256 fits */
    if ((uint64_t)k > UINT64_MAX / t->block_bytes || (rows && row_bytes > SIZE_MAX / (uint64_t)rows) ||
        (rows && (uint64_t)k > SIZE_MAX / sizeof(float) / (uint64_t)rows))
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: a [%lld, %lld] %s matrix is past SIZE_MAX bytes", fn,
                          (long long)rows, (long long)k, t->name);
    *bytes = (size_t)(row_bytes * (uint64_t)rows);
    return FFNRT_OK;
}

static ffnrt_status check_format(ffnrt_weight_format format, const ffnrt_format_traits **t, const char *fn,
                                 ffnrt_error *err)
{
    *t = ffnrt_format_traits_of(format);
    if (!*t)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: unknown format %d", fn, (int)format);
    return FFNRT_OK;
}

ffnrt_status ffnrt_weight_bytes(ffnrt_weight_format format, int64_t rows, int64_t k, size_t *bytes)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    const ffnrt_format_traits *t;
    size_t n = 0;
    if (check_format(format, &t, "ffnrt_weight_bytes", &err) == FFNRT_OK) {
        if (!bytes)
            ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_weight_bytes: bytes is NULL");
        else if (matrix_bytes(t, rows, k, &n, "ffnrt_weight_bytes", &err) == FFNRT_OK)
            *bytes = n;
    }
    ffnrt_error_publish(&err);
    return err.status;
}

/* Shared argument checks of quantize and dequantize: format, shape, the
 * byte count given, and the pointers (NULL only for an empty matrix). */
static ffnrt_status check_transfer(ffnrt_weight_format format, int64_t rows, int64_t k, const void *floats,
                                   const void *blocks, size_t given, const ffnrt_format_traits **t, const char *fn,
                                   ffnrt_error *err)
{
    size_t need = 0; /* set by matrix_bytes on success (GCC -O3 cannot tell) */
    ffnrt_status st = check_format(format, t, fn, err);
    if (st == FFNRT_OK)
        st = matrix_bytes(*t, rows, k, &need, fn, err);
    if (st != FFNRT_OK)
        return st;
    if (given != need)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %zu bytes given, a [%lld, %lld] %s matrix is %zu", fn,
                          given, (long long)rows, (long long)k, (*t)->name, need);
    if (need && (!floats || !blocks))
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: a NULL array for a non-empty matrix", fn);
    return FFNRT_OK;
}

ffnrt_status ffnrt_quantize(ffnrt_weight_format format, const float *src, int64_t rows, int64_t k, void *dst,
                            size_t dst_bytes)
{
    static const char fn[] = "ffnrt_quantize";
    ffnrt_error err;
    ffnrt_error_clear(&err);
    const ffnrt_format_traits *t;
    if (check_transfer(format, rows, k, src, dst, dst_bytes, &t, fn, &err) == FFNRT_OK && !t->quantize_block)
        ffnrt_fail(&err, FFNRT_ERROR_UNSUPPORTED, "%s: ffnrt reads %s but does not quantize to it", fn, t->name);
    if (err.status == FFNRT_OK) {
        const size_t blocks = (size_t)rows * (size_t)(k / t->block_elements);
        const size_t per_row = (size_t)(k / t->block_elements);
        /* Pass 1 checks every block into a scratch block, so a refused
         * weight leaves dst untouched; pass 2 writes. */
        uint8_t scratch[MAX_BLOCK_BYTES];
        ffnrt_block_problem problem;
        for (size_t b = 0; b < blocks; b++)
            if (t->quantize_block(src + b * t->block_elements, scratch, &problem)) {
                size_t row = b / per_row, column = (b % per_row) * t->block_elements + (size_t)problem.column;
                ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s: row %zu, column %zu (%g): %s", fn, t->name,
                           row, column, (double)problem.value, problem.why);
                break;
            }
        uint8_t *out = dst;
        for (size_t b = 0; err.status == FFNRT_OK && b < blocks; b++)
            (void)t->quantize_block(src + b * t->block_elements, out + b * t->block_bytes, &problem);
    }
    ffnrt_error_publish(&err);
    return err.status;
}

ffnrt_status ffnrt_dequantize(ffnrt_weight_format format, const void *src, size_t src_bytes, int64_t rows,
                              int64_t k, float *dst)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    const ffnrt_format_traits *t;
    if (check_transfer(format, rows, k, dst, src, src_bytes, &t, "ffnrt_dequantize", &err) == FFNRT_OK) {
        const size_t blocks = src_bytes / t->block_bytes;
        const uint8_t *in = src;
        for (size_t b = 0; b < blocks; b++)
            t->dequantize_block(in + b * t->block_bytes, dst + b * t->block_elements);
    }
    ffnrt_error_publish(&err);
    return err.status;
}

_Static_assert(MAX_BLOCK_ELEMENTS >= 256 && MAX_BLOCK_BYTES >= 210, "scratch block too small for a K-quant");
