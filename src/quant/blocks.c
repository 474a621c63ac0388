/* One block at a time: the dense formats, Q8_0, Q4_0 and Q4_1.
 *
 * Quantizing follows ggml's reference quantizers (quantize_row_q8_0_ref,
 * _q4_0_ref, _q4_1_ref in ggml-quants.c, which GGUF's tools use without an
 * importance matrix), operation for operation, so the same fp32 weights give
 * the same bytes. The float scale d is computed in fp32 and its reciprocal
 * id = 1/d (0 when d is 0) multiplies each weight; only the stored d (and
 * m) are rounded to fp16, with ffnrt's round-to-nearest-even:
 *   Q8_0: amax = max |x|;  d = amax / 127;  q = roundf(x * id)
 *         (roundf: halves away from zero)
 *   Q4_0: max = the first x of largest |x| (sign kept);  d = max / -8;
 *         q = min(15, trunc(x * id + 8.5))   (so x = max gives q = 0,
 *         x = -max is clipped to q = 15, i.e. 7/8 of its size)
 *   Q4_1: min, max over the block;  d = (max - min) / 15;  m = min;
 *         q = min(15, trunc((x - min) * id + 0.5))
 * The unrounded d and min are used for q (as ggml does), not their fp16.
 * This file is compiled with -ffp-contract=off: a fused x * id + 8.5 would
 * round differently from the reference.
 *
 * Beyond ggml (where its arithmetic is undefined): a NaN or infinite weight,
 * and a scale or minimum that overflows fp16, are refused (the caller
 * reports the column); where 1/d overflows fp32 (d below ~3e-39, whose fp16
 * is 0 anyway) id is taken as 0; and q is clamped to its range before the
 * conversion to an integer, which changes nothing for finite d above fp32's
 * subnormals. */
#include "quant/quant.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define QK 32

static int refuse(ffnrt_block_problem *p, int column, float value, const char *why)
{
    p->column = column;
    p->value = value;
    p->why = why;
    return 1;
}

static int first_non_finite(const float *x, int n)
{
    for (int j = 0; j < n; j++)
        if (!isfinite(x[j]))
            return j;
    return -1;
}

static float reciprocal_or_zero(float d)
{
    if (d == 0.0f)
        return 0.0f;
    float id = 1.0f / d;
    return isinf(id) ? 0.0f : id;
}

/* trunc toward zero (C's float -> int), clamped; NaN cannot reach here. */
static int trunc_clamped(float v, int lo, int hi)
{
    if (!(v > (float)lo))
        return lo;
    if (v >= (float)hi)
        return hi;
    return (int)v;
}

/* ---------------------------------------------------------------- dense */

int ffnrt_quantize_f32(const float *x, uint8_t *out, ffnrt_block_problem *p)
{
    (void)p;
    memcpy(out, x, 4);
    return 0;
}

int ffnrt_quantize_f16(const float *x, uint8_t *out, ffnrt_block_problem *p)
{
    (void)p;
    ffnrt_store_u16(out, ffnrt_f32_to_f16(x[0]));
    return 0;
}

int ffnrt_quantize_bf16(const float *x, uint8_t *out, ffnrt_block_problem *p)
{
    (void)p;
    ffnrt_store_u16(out, ffnrt_f32_to_bf16(x[0]));
    return 0;
}

void ffnrt_dequantize_f32(const uint8_t *in, float *y) { memcpy(y, in, 4); }
void ffnrt_dequantize_f16(const uint8_t *in, float *y) { y[0] = ffnrt_load_f16(in); }
void ffnrt_dequantize_bf16(const uint8_t *in, float *y) { y[0] = ffnrt_bf16_to_f32((uint16_t)(in[0] | in[1] << 8)); }

/* ----------------------------------------------------------------- Q8_0 */

int ffnrt_quantize_q8_0(const float *x, uint8_t *out, ffnrt_block_problem *p)
{
    int bad = first_non_finite(x, QK);
    if (bad >= 0)
        return refuse(p, bad, x[bad], "a NaN or infinite weight has no quantized form");
    float amax = 0.0f;
    int at = 0;
    for (int j = 0; j < QK; j++)
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            at = j;
        }
    const float d = amax / 127.0f;
    const uint16_t d16 = ffnrt_f32_to_f16(d);
    if ((d16 & 0x7fffu) == 0x7c00u)
        return refuse(p, at, x[at], "the block's scale |x|max/127 overflows fp16 (|x| must stay below about 8.3e6)");
    const float id = reciprocal_or_zero(d);
    ffnrt_store_u16(out, d16);
    for (int j = 0; j < QK; j++) {
        float r = roundf(x[j] * id);
        out[2 + j] = (uint8_t)(int8_t)(r > 127.0f ? 127 : r < -127.0f ? -127 : (int)r);
    }
    return 0;
}

void ffnrt_dequantize_q8_0(const uint8_t *in, float *y)
{
    const float d = ffnrt_load_f16(in);
    for (int j = 0; j < QK; j++)
        y[j] = (float)(int8_t)in[2 + j] * d;
}

/* ----------------------------------------------------------------- Q4_0 */

int ffnrt_quantize_q4_0(const float *x, uint8_t *out, ffnrt_block_problem *p)
{
    int bad = first_non_finite(x, QK);
    if (bad >= 0)
        return refuse(p, bad, x[bad], "a NaN or infinite weight has no quantized form");
    float amax = 0.0f, max = 0.0f;
    int at = 0;
    for (int j = 0; j < QK; j++)
        if (amax < fabsf(x[j])) { /* strict: the first of equal magnitudes wins */
            amax = fabsf(x[j]);
            max = x[j];
            at = j;
        }
    const float d = max / -8.0f; /* -0.0 for an all-zero block, as in ggml (fp16 0x8000) */
    const uint16_t d16 = ffnrt_f32_to_f16(d);
    if ((d16 & 0x7fffu) == 0x7c00u)
        return refuse(p, at, x[at], "the block's scale |x|max/8 overflows fp16 (|x| must stay below about 524000)");
    const float id = reciprocal_or_zero(d);
    ffnrt_store_u16(out, d16);
    for (int j = 0; j < QK / 2; j++) {
        int lo = trunc_clamped(x[j] * id + 8.5f, 0, 15);
        int hi = trunc_clamped(x[j + QK / 2] * id + 8.5f, 0, 15);
        out[2 + j] = (uint8_t)(lo | hi << 4);
    }
    return 0;
}

void ffnrt_dequantize_q4_0(const uint8_t *in, float *y)
{
    const float d = ffnrt_load_f16(in);
    for (int j = 0; j < QK / 2; j++) {
        y[j] = (float)((in[2 + j] & 0x0f) - 8) * d;
        y[j + QK / 2] = (float)((in[2 + j] >> 4) - 8) * d;
    }
}

/* ----------------------------------------------------------------- Q4_1 */

int ffnrt_quantize_q4_1(const float *x, uint8_t *out, ffnrt_block_problem *p)
{
    int bad = first_non_finite(x, QK);
    if (bad >= 0)
        return refuse(p, bad, x[bad], "a NaN or infinite weight has no quantized form");
    float min = FLT_MAX, max = -FLT_MAX;
    int at_min = 0, at_max = 0;
    for (int j = 0; j < QK; j++) {
        if (x[j] < min) {
            min = x[j];
            at_min = j;
        }
        if (x[j] > max) {
            max = x[j];
            at_max = j;
        }
    }
    const float d = (max - min) / 15.0f;
    const uint16_t d16 = ffnrt_f32_to_f16(d), m16 = ffnrt_f32_to_f16(min);
    if ((m16 & 0x7fffu) == 0x7c00u)
        return refuse(p, at_min, min, "the block's minimum overflows fp16 (largest 65504)");
    if ((d16 & 0x7fffu) == 0x7c00u)
        return refuse(p, at_max, max, "the block's scale (max - min)/15 overflows fp16 (the range must stay below about 983000)");
    const float id = reciprocal_or_zero(d);
    ffnrt_store_u16(out, d16);
    ffnrt_store_u16(out + 2, m16);
    for (int j = 0; j < QK / 2; j++) {
        int lo = trunc_clamped((x[j] - min) * id + 0.5f, 0, 15);
        int hi = trunc_clamped((x[j + QK / 2] - min) * id + 0.5f, 0, 15);
        out[4 + j] = (uint8_t)(lo | hi << 4);
    }
    return 0;
}

void ffnrt_dequantize_q4_1(const uint8_t *in, float *y)
{
    const float d = ffnrt_load_f16(in), m = ffnrt_load_f16(in + 2);
    for (int j = 0; j < QK / 2; j++) {
        y[j] = (float)(in[4 + j] & 0x0f) * d + m;
        y[j + QK / 2] = (float)(in[4 + j] >> 4) * d + m;
    }
}
