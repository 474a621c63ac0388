/* Weight formats (ffnrt_weight_format): one table of traits, read by the
 * public host functions (formats.c), the GGUF reader (src/gguf/) and, in
 * time, the layers that stream these formats to the device. */
#ifndef FFNRT_QUANT_H
#define FFNRT_QUANT_H

#include "ffnrt.h"

#include <stdint.h>

/* A block that has no form in its format: the column inside the block and
 * why ("NaN weight", "scale overflows fp16"). */
typedef struct ffnrt_block_problem {
    int column;
    const char *why;
    float value;
} ffnrt_block_problem;

typedef struct ffnrt_format_traits {
    const char *name;         /* ffnrt's: "q4_1" */
    const char *ggml_name;    /* GGUF's: "Q4_1" */
    uint32_t ggml_type;       /* the GGUF tensor type id */
    uint32_t block_elements;  /* along k */
    uint32_t block_bytes;
    /* One block of block_elements floats to block_bytes bytes; returns 0,
     * or 1 with *problem filled (out then holds nothing useful). NULL:
     * quantizing to this format is not offered. */
    int (*quantize_block)(const float *x, uint8_t *out, ffnrt_block_problem *problem);
    /* One block back to floats; never fails. */
    void (*dequantize_block)(const uint8_t *in, float *y);
} ffnrt_format_traits;

/* The traits of a format, NULL for a value out of range. */
const ffnrt_format_traits *ffnrt_format_traits_of(ffnrt_weight_format format);
/* The format of a GGUF tensor type id; 0 if ffnrt has none (*out untouched). */
int ffnrt_format_from_ggml_type(uint32_t ggml_type, ffnrt_weight_format *out);

/* Blocks (blocks.c, kquants.c). */
int ffnrt_quantize_f32(const float *x, uint8_t *out, ffnrt_block_problem *p);
int ffnrt_quantize_f16(const float *x, uint8_t *out, ffnrt_block_problem *p);
int ffnrt_quantize_bf16(const float *x, uint8_t *out, ffnrt_block_problem *p);
int ffnrt_quantize_q8_0(const float *x, uint8_t *out, ffnrt_block_problem *p);
int ffnrt_quantize_q4_0(const float *x, uint8_t *out, ffnrt_block_problem *p);
int ffnrt_quantize_q4_1(const float *x, uint8_t *out, ffnrt_block_problem *p);
int ffnrt_quantize_q4_k(const float *x, uint8_t *out, ffnrt_block_problem *p);
int ffnrt_quantize_q6_k(const float *x, uint8_t *out, ffnrt_block_problem *p);
void ffnrt_dequantize_f32(const uint8_t *in, float *y);
void ffnrt_dequantize_f16(const uint8_t *in, float *y);
void ffnrt_dequantize_bf16(const uint8_t *in, float *y);
void ffnrt_dequantize_q8_0(const uint8_t *in, float *y);
void ffnrt_dequantize_q4_0(const uint8_t *in, float *y);
void ffnrt_dequantize_q4_1(const uint8_t *in, float *y);
void ffnrt_dequantize_q4_k(const uint8_t *in, float *y);
void ffnrt_dequantize_q6_k(const uint8_t *in, float *y);

/* ffnrt's device layout of the block formats (layout.c, which says it in
 * full; shaders/quant.inc reads it): codes and scales, each as 32-bit
 * words row after row. */
typedef struct ffnrt_quant_layout {
    ffnrt_weight_format format;
    const char *define;       /* the kernels' WEIGHTS_ define */
    uint32_t code_bits;       /* 4 or 8 */
    uint32_t group;           /* elements that share one (s, m) */
    uint32_t k_multiple;      /* GGUF's block: k must be a multiple */
    uint32_t dequant_ops;     /* operations a weight to dequantize (extract, convert, scale), for the cost model */
} ffnrt_quant_layout;

/* NULL for a dense format. */
const ffnrt_quant_layout *ffnrt_quant_layout_of(ffnrt_weight_format format);
/* Words of codes and of scales in one row of k elements. */
uint64_t ffnrt_quant_code_words(ffnrt_weight_format format, uint64_t k);
uint64_t ffnrt_quant_scale_words(ffnrt_weight_format format, uint64_t k);
/* GGUF's bytes of a [rows, k] matrix (k a multiple of the block) into
 * rows * code_words codes and rows * scale_words scales. */
void ffnrt_quant_repack(ffnrt_weight_format format, const uint8_t *src, uint64_t rows, uint64_t k, uint32_t *codes,
                        uint32_t *scales);
/* Element e of a repacked row as the kernels compute it. */
float ffnrt_quant_weight(ffnrt_weight_format format, const uint32_t *codes, const uint32_t *scales, uint64_t k,
                         uint64_t e);

/* Little-endian fp16 at p, as a float (blocks are byte arrays: no alignment). */
static inline float ffnrt_load_f16(const uint8_t *p) { return ffnrt_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }
static inline void ffnrt_store_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

#endif
