/* ffnrt's device layout of the block formats: what shaders/quant.inc reads.
 *
 * A [rows, k] matrix in a block format becomes two arrays of 32-bit words,
 * row after row: its codes and its scales. Codes are unsigned, 8 a word
 * (4-bit formats: element 8u + i of a row in bits 4i..4i+3 of the row's
 * word u) or 4 a word (8-bit: element 4u + i in bits 8i..8i+7; Q8_0's are
 * GGUF's signed bytes, two's complement), so a word
 * holds consecutive elements and a kernel reads x beside it in whole
 * vectors. Every weight is code * s + m with one (s, m) per group of
 * elements, both exact in fp32, and s * code + m rounds once, as ggml's
 * own dequantization does:
 *
 *   format  codes                      scale words a row               s, m
 *   Q8_0    q (GGUF's int8), 8 bits    ceil(k/64): d, fp16, two a word  d, 0
 *   Q4_0    q, 4 bits                  ceil(k/64): as Q8_0              d, -8 d
 *   Q4_1    q, 4 bits                  k/32: d | m << 16                d, m
 *   Q4_K    q, 4 bits                  k/256 words d | dmin << 16, then
 *                                      k/64 words sc | mn << 8, two a word   d sc, -dmin mn
 *   Q6_K    q (0..63), 8 bits          k/32: sc0 | sc1 << 8 | d << 16   d sc, -32 d sc (per 16)
 *
 * The Q8_0, Q4_0 and Q4_1 bytes equal GGUF's (18, 20, 34 a block, Q8_0 and
 * Q4_0 rows padded to an even block count); Q4_K takes 148 bytes where
 * GGUF takes 144 (the 6-bit scales unpacked to bytes) and Q6_K 288 where
 * GGUF takes 210 (6-bit codes in bytes): the cost model and the plan count
 * these bytes, the ones the kernels stream. */
#include "quant/quant.h"

#include <math.h>
#include <string.h>

static const ffnrt_quant_layout layouts[] = {
    /* format, define, code bits, group, k multiple, dequantizing operations a weight */
    {FFNRT_WEIGHT_Q8_0, "WEIGHTS_Q8_0", 8, 32, 32, 2},
    {FFNRT_WEIGHT_Q4_0, "WEIGHTS_Q4_0", 4, 32, 32, 3},
    {FFNRT_WEIGHT_Q4_1, "WEIGHTS_Q4_1", 4, 32, 32, 3},
    {FFNRT_WEIGHT_Q4_K, "WEIGHTS_Q4_K", 4, 32, 256, 3},
    {FFNRT_WEIGHT_Q6_K, "WEIGHTS_Q6_K", 8, 16, 256, 2},
};

const ffnrt_quant_layout *ffnrt_quant_layout_of(ffnrt_weight_format format)
{
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (layouts[i].format == format)
            return &layouts[i];
    return NULL;
}

uint64_t ffnrt_quant_code_words(ffnrt_weight_format format, uint64_t k)
{
    const ffnrt_quant_layout *l = ffnrt_quant_layout_of(format);
    return l ? k * l->code_bits / 32 : 0;
}

uint64_t ffnrt_quant_scale_words(ffnrt_weight_format format, uint64_t k)
{
    switch (format) {
    case FFNRT_WEIGHT_Q8_0:
    case FFNRT_WEIGHT_Q4_0: return (k / 32 + 1) / 2;
    case FFNRT_WEIGHT_Q4_1:
    case FFNRT_WEIGHT_Q6_K: return k / 32;
    case FFNRT_WEIGHT_Q4_K: return k / 256 + k / 64;
    default: return 0;
    }
}

static uint16_t u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* Codes of one row: n elements from the code values c[], into words. */
static void put_codes(uint32_t *words, const uint8_t *c, uint64_t n, uint32_t bits)
{
    uint32_t per = 32 / bits;
    for (uint64_t u = 0; u < n / per; u++) {
        uint32_t w = 0;
        for (uint32_t i = 0; i < per; i++)
            w |= (uint32_t)c[u * per + i] << (bits * i);
        words[u] = w;
    }
}

/* Q4_K's 6-bit scale and minimum of sub-block j (ggml's get_scale_min_k4). */
static void q4_k_scale_min(int j, const uint8_t *s, uint8_t *scale, uint8_t *min)
{
    if (j < 4) {
        *scale = s[j] & 63;
        *min = s[j + 4] & 63;
    } else {
        *scale = (uint8_t)((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4));
        *min = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

void ffnrt_quant_repack(ffnrt_weight_format format, const uint8_t *src, uint64_t rows, uint64_t k, uint32_t *codes,
                        uint32_t *scales)
{
    const ffnrt_format_traits *t = ffnrt_format_traits_of(format);
    const ffnrt_quant_layout *l = ffnrt_quant_layout_of(format);
    uint64_t blocks = k / t->block_elements, cw = ffnrt_quant_code_words(format, k);
    uint64_t sw = ffnrt_quant_scale_words(format, k);
    uint8_t c[256];
    for (uint64_t r = 0; r < rows; r++) {
        uint32_t *cr = codes + r * cw, *sr = scales + r * sw;
        memset(sr, 0, sw * sizeof *sr);
        for (uint64_t b = 0; b < blocks; b++) {
            const uint8_t *in = src + (r * blocks + b) * t->block_bytes;
            switch (format) {
            case FFNRT_WEIGHT_Q8_0:
                memcpy(c, in + 2, 32); /* GGUF's int8 q, as they are */
                sr[b / 2] |= (uint32_t)u16(in) << (16 * (b % 2));
                break;
            case FFNRT_WEIGHT_Q4_0:
            case FFNRT_WEIGHT_Q4_1: {
                const uint8_t *qs = in + (format == FFNRT_WEIGHT_Q4_0 ? 2 : 4);
                for (int j = 0; j < 16; j++) {
                    c[j] = qs[j] & 0x0f;
                    c[j + 16] = qs[j] >> 4;
                }
                if (format == FFNRT_WEIGHT_Q4_0)
                    sr[b / 2] |= (uint32_t)u16(in) << (16 * (b % 2));
                else
                    sr[b] = (uint32_t)u16(in) | (uint32_t)u16(in + 2) << 16;
                break;
            }
            case FFNRT_WEIGHT_Q4_K: {
                const uint8_t *qs = in + 16;
                for (int chunk = 0; chunk < 4; chunk++)
                    for (int i = 0; i < 32; i++) {
                        c[64 * chunk + i] = qs[32 * chunk + i] & 0x0f;
                        c[64 * chunk + 32 + i] = qs[32 * chunk + i] >> 4;
                    }
                sr[b] = (uint32_t)u16(in) | (uint32_t)u16(in + 2) << 16;
                for (int j = 0; j < 8; j++) {
                    uint8_t sc, mn;
                    q4_k_scale_min(j, in + 4, &sc, &mn);
                    sr[blocks + b * 4 + j / 2] |= ((uint32_t)sc | (uint32_t)mn << 8) << (16 * (j % 2));
                }
                break;
            }
            case FFNRT_WEIGHT_Q6_K: {
                const uint8_t *ql = in, *qh = in + 128, *sc = in + 192;
                for (int half = 0; half < 2; half++, ql += 64, qh += 32)
                    for (int i = 0; i < 32; i++)
                        for (int q = 0; q < 4; q++) {
                            int low = (q < 2 ? ql[i + 32 * q] : ql[i + 32 * (q - 2)] >> 4) & 0x0f;
                            c[128 * half + 32 * q + i] = (uint8_t)(low | ((qh[i] >> (2 * q)) & 3) << 4);
                        }
                for (int g = 0; g < 8; g++) /* a word for each 32 elements: its two 16-element scales, and d */
                    sr[b * 8 + g] = (uint32_t)sc[2 * g] | (uint32_t)sc[2 * g + 1] << 8 | (uint32_t)u16(in + 208) << 16;
                break;
            }
            default:
                return;
            }
            put_codes(cr + b * t->block_elements * l->code_bits / 32, c, t->block_elements, l->code_bits);
        }
    }
}

/* The weight the kernels compute for element e of a row (quant.inc's rule,
 * on the host): code * s + m, rounded once. */
float ffnrt_quant_weight(ffnrt_weight_format format, const uint32_t *codes, const uint32_t *scales, uint64_t k,
                         uint64_t e)
{
    const ffnrt_quant_layout *l = ffnrt_quant_layout_of(format);
    uint32_t per = 32 / l->code_bits;
    uint32_t bits = (codes[e / per] >> (l->code_bits * (e % per))) & ((1u << l->code_bits) - 1);
    float code = format == FFNRT_WEIGHT_Q8_0 ? (float)(int8_t)(uint8_t)bits : (float)bits;
    uint64_t b = e / 32;
    float s = 0, m = 0;
    switch (format) {
    case FFNRT_WEIGHT_Q8_0:
    case FFNRT_WEIGHT_Q4_0:
        s = ffnrt_f16_to_f32((uint16_t)(scales[b / 2] >> (16 * (b % 2))));
        m = format == FFNRT_WEIGHT_Q8_0 ? 0.0f : -8.0f * s;
        break;
    case FFNRT_WEIGHT_Q4_1:
        s = ffnrt_f16_to_f32((uint16_t)scales[b]);
        m = ffnrt_f16_to_f32((uint16_t)(scales[b] >> 16));
        break;
    case FFNRT_WEIGHT_Q4_K: {
        uint32_t super = scales[e / 256], sub = (scales[k / 256 + b / 2] >> (16 * (b % 2))) & 0xffff;
        s = ffnrt_f16_to_f32((uint16_t)super) * (float)(sub & 0xff);
        m = -(ffnrt_f16_to_f32((uint16_t)(super >> 16)) * (float)(sub >> 8));
        break;
    }
    case FFNRT_WEIGHT_Q6_K: {
        uint32_t w = scales[b];
        s = ffnrt_f16_to_f32((uint16_t)(w >> 16)) * (float)(int8_t)(uint8_t)(w >> (8 * ((e / 16) % 2)));
        m = -32.0f * s;
        break;
    }
    default:
        break;
    }
    return fmaf(code, s, m);
}
