/* Host fp16 / bf16 conversions: the kernels' own code from
 * shaders/storage.inc, compiled for the host so both round alike. */
#include "ffnrt.h"

#define STORAGE_F32 1
#include "../../shaders/prelude_host.h"
#include "../../shaders/storage.inc"

uint16_t ffnrt_f32_to_f16(float v) { return (uint16_t)ffn_f32_to_f16(v); }
float ffnrt_f16_to_f32(uint16_t bits) { return ffn_f16_to_f32(bits); }
uint16_t ffnrt_f32_to_bf16(float v) { return (uint16_t)ffn_f32_to_bf16(v); }
float ffnrt_bf16_to_f32(uint16_t bits) { return ffn_bf16_to_f32(bits); }

void ffnrt_f32_to_f16_array(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (uint16_t)ffn_f32_to_f16(src[i]);
}

void ffnrt_f16_to_f32_array(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = ffn_f16_to_f32(src[i]);
}

void ffnrt_f32_to_bf16_array(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (uint16_t)ffn_f32_to_bf16(src[i]);
}

void ffnrt_bf16_to_f32_array(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = ffn_bf16_to_f32(src[i]);
}
