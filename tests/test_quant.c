/* Weight formats on the host (no device): hand-worked blocks of every
 * format, byte for byte; the rounding rules of ggml's reference quantizers
 * at their edges; round trips; refused input; and the quantization loss,
 * measured and printed per format (docs/quantized.md quotes it).
 *
 * Hand-worked blocks use scales that are powers of two, so every product
 * in the comments is exact and can be checked by hand. */
#include "reference_quant.h"

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void quantize_ok(ffnrt_weight_format f, const float *x, int64_t rows, int64_t k, void *out, size_t bytes)
{
    ffnrt_status st = ffnrt_quantize(f, x, rows, k, out, bytes);
    cr_assert_eq(st, FFNRT_OK, "quantize %s: %s", ffnrt_weight_format_name(f), ffnrt_last_error_message());
}

static void dequantize_ok(ffnrt_weight_format f, const void *q, size_t bytes, int64_t rows, int64_t k, float *y)
{
    ffnrt_status st = ffnrt_dequantize(f, q, bytes, rows, k, y);
    cr_assert_eq(st, FFNRT_OK, "dequantize %s: %s", ffnrt_weight_format_name(f), ffnrt_last_error_message());
}

static void assert_bytes(const uint8_t *got, const uint8_t *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "%s: byte %zu is 0x%02x, 0x%02x expected", what, i, got[i], want[i]);
}

/* --------------------------------------------------------- hand-worked */

Test(quant, q8_0_hand_worked)
{
    /* amax = 7.9375 = 127/16, so d = amax/127 = 1/16 exactly: fp16 0x2c00
     * (exponent -4 + 15 = 11 -> 0b01011 << 10), id = 16, q = roundf(16x). */
    float x[32] = {
        7.9375f,   /* 127 -> 0x7f */
        -7.9375f,  /* -127 -> 0x81 */
        0.03125f,  /* 16x = 0.5: roundf halves away from zero -> 1 */
        -0.03125f, /* -0.5 -> -1 (0xff) */
        0.09375f,  /* 1.5 -> 2 */
        1.0f,      /* 16 -> 0x10 */
        -2.5f,     /* -40 -> 0xd8 */
        0.01f,     /* 0.16 -> 0 */
    };             /* the rest 0 -> 0 */
    const uint8_t want[34] = {0x00, 0x2c, 0x7f, 0x81, 0x01, 0xff, 0x02, 0x10, 0xd8, 0x00};
    uint8_t q[34];
    quantize_ok(FFNRT_WEIGHT_Q8_0, x, 1, 32, q, sizeof q);
    assert_bytes(q, want, 34, "q8_0");
    /* back: x = q / 16 */
    const float back[8] = {7.9375f, -7.9375f, 0.0625f, -0.0625f, 0.125f, 1.0f, -2.5f, 0.0f};
    float y[32];
    dequantize_ok(FFNRT_WEIGHT_Q8_0, q, sizeof q, 1, 32, y);
    for (int j = 0; j < 32; j++)
        cr_assert_eq(y[j], j < 8 ? back[j] : 0.0f, "q8_0 element %d: %g", j, (double)y[j]);
}

Test(quant, q4_0_hand_worked)
{
    /* The first element of largest |x| is x1 = -1 (x2 = +1 comes later), so
     * max = -1, d = max / -8 = 0.125 (fp16 0x3000), id = 8, and
     * q = min(15, trunc(8x + 8.5)), x = 0.125 (q - 8). */
    float x[32] = {
        0.5f,     /* 4 + 8.5 = 12.5 -> 12 */
        -1.0f,    /* 0.5 -> 0: the max maps to q = 0, value -8d = -1 */
        1.0f,     /* 16.5 -> 16, clipped to 15: value 0.875, 1/8 short */
        0.0625f,  /* 9.0 -> 9 (value 0.125): a half rounds up */
        -0.0625f, /* 8.0 -> 8 (value 0): a half rounds up, toward +inf */
        -0.1875f, /* 7.0 -> 7 (value -0.125) */
        0.3f,     /* 10.9 -> 10 (value 0.25) */
        [16] = -0.875f, /* 1.5 -> 1 */
        [17] = 0.875f,  /* 15.5 -> 15 */
        [18] = 0.0625f, /* 9.0 -> 9: the high nibbles round alike */
    };                  /* the rest 0 -> 8 */
    /* byte j = q[j] | q[j + 16] << 4 */
    const uint8_t want[18] = {0x00, 0x30, 0x1c, 0xf0, 0x9f, 0x89, 0x88, 0x87, 0x8a, 0x88,
                              0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88};
    uint8_t q[18];
    quantize_ok(FFNRT_WEIGHT_Q4_0, x, 1, 32, q, sizeof q);
    assert_bytes(q, want, 18, "q4_0");
    const float back[19] = {0.5f, -1.0f, 0.875f, 0.125f, 0.0f, -0.125f, 0.25f, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                            -0.875f, 0.875f, 0.125f};
    float y[32];
    dequantize_ok(FFNRT_WEIGHT_Q4_0, q, sizeof q, 1, 32, y);
    for (int j = 0; j < 32; j++)
        cr_assert_eq(y[j], j < 19 ? back[j] : 0.0f, "q4_0 element %d: %g", j, (double)y[j]);
}

Test(quant, q4_1_hand_worked)
{
    /* min = -1, max = 0.875: d = 1.875 / 15 = 0.125 (0x3000), m = -1
     * (0xbc00), id = 8, q = min(15, trunc(8(x + 1) + 0.5)), x = q/8 - 1. */
    float x[32] = {
        -1.0f,    /* 0.5 -> 0 */
        0.875f,   /* 15.5 -> 15 */
        0.0f,     /* 8.5 -> 8 */
        -0.9375f, /* 8 * 0.0625 = 0.5, + 0.5 = 1.0 -> 1: a half rounds up (value -0.875) */
        0.3f,     /* 10.4 + 0.5 -> 10 (value 0.25) */
        [5 ... 15] = 0.0f,
        [16] = 0.5f,     /* 12.5 -> 12 */
        [17] = -0.5f,    /* 4.5 -> 4 */
        [18] = -0.9375f, /* 1.0 -> 1 */
    };                   /* the rest 0 -> 8 */
    /* byte j = q[j] | q[j + 16] << 4 */
    const uint8_t want[20] = {0x00, 0x30, 0x00, 0xbc, 0xc0, 0x4f, 0x18, 0x81, 0x8a, 0x88,
                              0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88};
    uint8_t q[20];
    quantize_ok(FFNRT_WEIGHT_Q4_1, x, 1, 32, q, sizeof q);
    assert_bytes(q, want, 20, "q4_1");
    const float back[19] = {-1.0f, 0.875f, 0.0f, -0.875f, 0.25f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.5f, -0.5f, -0.875f};
    float y[32];
    dequantize_ok(FFNRT_WEIGHT_Q4_1, q, sizeof q, 1, 32, y);
    for (int j = 0; j < 32; j++)
        cr_assert_eq(y[j], j < 19 ? back[j] : 0.0f, "q4_1 element %d: %g", j, (double)y[j]);
}

Test(quant, q4_k_hand_worked)
{
    /* d = 1 (0x3c00), dmin = 0.5 (0x3800). Groups of 32: scales
     * {1, 2, 3, 4, 17, 33, 63, 5}, mins {0, 1, 2, 3, 16, 0, 48, 1}.
     * Groups 0-3: scale in bytes 0-3, min in bytes 4-7 (low 6 bits).
     * Groups 4-7 (j = 4..7): low 4 bits of the scale and of the min in the
     * low and high nibble of byte j + 4, their top 2 bits in the top bits
     * of bytes j - 4 and j:
     *   17 = 0b01_0001, 16 = 0b01_0000: byte 8 = 0x01, byte 0 = 1 | 1 << 6 = 0x41, byte 4 = 0 | 1 << 6 = 0x40
     *   33 = 0b10_0001, 0:              byte 9 = 0x01, byte 1 = 2 | 2 << 6 = 0x82, byte 5 = 1
     *   63 = 0b11_1111, 48 = 0b11_0000: byte 10 = 0x0f, byte 2 = 3 | 3 << 6 = 0xc3, byte 6 = 2 | 3 << 6 = 0xc2
     *   5, 1:                           byte 11 = 0x15, byte 3 = 4, byte 7 = 3 */
    uint8_t b[144] = {0x00, 0x3c, 0x00, 0x38, 0x41, 0x82, 0xc3, 0x04, 0x40, 0x01, 0xc2, 0x03, 0x01, 0x01, 0x0f, 0x15};
    /* Nibbles: qs byte 32c + l holds group 2c (low) and 2c + 1 (high), element l. */
    b[16 + 0] = 0x3a;       /* e0 (group 0): 1*10 - 0.5*0 = 10; e32 (group 1): 2*3 - 0.5*1 = 5.5 */
    b[16 + 64 + 5] = 0xf7;  /* e133 (group 4): 17*7 - 0.5*16 = 111; e165 (group 5): 33*15 - 0 = 495 */
    b[16 + 96 + 31] = 0x21; /* e223 (group 6): 63*1 - 0.5*48 = 39; e255 (group 7): 5*2 - 0.5*1 = 9.5 */
    const double zero_q[8] = {0, -0.5, -1, -1.5, -8, 0, -24, -0.5}; /* -dmin * min where q = 0 */
    float y[256];
    dequantize_ok(FFNRT_WEIGHT_Q4_K, b, sizeof b, 1, 256, y);
    for (int e = 0; e < 256; e++) {
        double want = e == 0 ? 10 : e == 32 ? 5.5 : e == 133 ? 111 : e == 165 ? 495 : e == 223 ? 39
                    : e == 255 ? 9.5 : zero_q[e / 32];
        cr_assert_eq((double)y[e], want, "q4_k element %d: %g, %g expected", e, (double)y[e], want);
    }
}

Test(quant, q6_k_hand_worked)
{
    /* d = 0.25 (0x3400) at byte 208; int8 scales at 192..207, one per 16
     * elements: {1, -2, 3, 4, 5, 6, 7, -128, 127, 10, 11, 12, 13, 14, 15, 16}.
     * q = low 4 bits | top 2 bits << 4, minus 32; all-zero bits give -32,
     * so element e is 0.25 * sc[e/16] * -32 = -8 sc[e/16] unless set here.
     * Element e = 128h + 32r + l: low bits in ql[64h + l + 32(r & 1)]
     * (low nibble for r < 2, high for r >= 2), top bits qh[32h + l] >> 2r. */
    const int8_t sc[16] = {1, -2, 3, 4, 5, 6, 7, -128, 127, 10, 11, 12, 13, 14, 15, 16};
    uint8_t b[210] = {0};
    memcpy(b + 192, sc, 16);
    b[208] = 0x00;
    b[209] = 0x34;
    b[0] = 0x5f;        /* e0 low = 15, e64 low = 5 */
    b[128 + 0] = 0x1b;  /* qh[0] = 0b00_01_10_11: e0 top 3, e32 top 2, e64 top 1, e96 top 0 */
    b[64 + 19] = 0x0a;  /* e147 (h 1, r 0, l 19): low 10 */
    b[128 + 51] = 0x02; /* qh[32 + 19]: e147 top 2 -> q = 10 + 32 - 32 = 10 */
    float y[256];
    dequantize_ok(FFNRT_WEIGHT_Q6_K, b, sizeof b, 1, 256, y);
    for (int e = 0; e < 256; e++) {
        double want = e == 0     ? 0.25 * 1 * 31     /* 15 | 3 << 4 = 63, - 32 = 31: 7.75 */
                      : e == 32  ? 0.0               /* 0 | 2 << 4 = 32: 0 */
                      : e == 64  ? 0.25 * 5 * -11    /* 5 | 1 << 4 = 21: -11 -> -13.75 */
                      : e == 147 ? 0.25 * 10 * 10    /* 25 */
                                 : -8.0 * sc[e / 16]; /* e 112..127: -8 * -128 = 1024 */
        cr_assert_eq((double)y[e], want, "q6_k element %d: %g, %g expected", e, (double)y[e], want);
    }
}

/* K-quant quantizing, against bytes from ggml's own quantize_row_q4_K_ref
 * and quantize_row_q6_K_ref (the ggml vendored in llama-cpp-python 0.3.36,
 * compiled with -ffp-contract=off) for two super-blocks of exactly
 * representable weights, the second with a group of tiny weights, an
 * outlier and an all-zero group. ffnrt's quantizer was also compared with
 * it on 15 kinds of input x 400 super-blocks: every byte equal. */
static void k_quant_input(float *x)
{
    for (int i = 0; i < 512; i++)
        x[i] = (float)(((i * 37 + 11) % 97) - 48) / 256.0f * (float)(1 + i % 5);
    for (int i = 256 + 16; i < 256 + 32; i++)
        x[i] /= 1024.0f;
    x[256 + 100] = 3.0f;
    for (int i = 256 + 200; i < 256 + 232; i++)
        x[i] = 0.0f;
}

Test(quant, k_quants_quantize_as_ggml)
{
    static const uint8_t q4_k[288] = {
    0xb0, 0x17, 0x4b, 0x23, 0xef, 0xfd, 0xfc, 0xf1, 0xeb, 0xf5, 0xf7, 0xf3, 0x9c, 0x34, 0xcf, 0xfe, 0x55, 0x97, 0x0c,
    0x63, 0x9a, 0x45, 0x86, 0xfb, 0x61, 0x88, 0x39, 0x75, 0xd9, 0x60, 0x86, 0x28, 0x65, 0xc8, 0x6f, 0x74, 0xb8, 0x44,
    0xa7, 0x5e, 0x62, 0xa8, 0x33, 0x96, 0x5c, 0x60, 0x97, 0x2b, 0xa7, 0x38, 0x86, 0xf9, 0x71, 0x96, 0x28, 0x65, 0xe8,
    0x7d, 0x84, 0xd8, 0x54, 0xc7, 0x6c, 0x83, 0xc7, 0x34, 0xa6, 0xab, 0x71, 0xb7, 0x2a, 0x85, 0xa9, 0x60, 0xa7, 0x09,
    0x64, 0x98, 0x5f, 0x96, 0x6d, 0x84, 0xc8, 0x44, 0xb7, 0x6c, 0x73, 0xb8, 0x3b, 0x96, 0x9b, 0x61, 0xa7, 0x1a, 0x75,
    0x99, 0x60, 0x97, 0x09, 0x54, 0x98, 0x5f, 0x87, 0xe9, 0x43, 0x87, 0x4d, 0x76, 0xd8, 0x22, 0x86, 0xbc, 0x96, 0x9a,
    0x71, 0xa7, 0x2a, 0x75, 0x99, 0x60, 0x97, 0xe9, 0x64, 0x98, 0x5e, 0x87, 0xd8, 0x43, 0x87, 0x5d, 0x76, 0xc8, 0x3c,
    0x86, 0xbb, 0x66, 0xb7, 0x1b, 0x84, 0xaa, 0x56, 0x97, 0x0a, 0x73, 0x2c, 0x1c, 0x32, 0x23, 0x55, 0x5c, 0x56, 0x7f,
    0xe4, 0xb7, 0xef, 0xbd, 0xfa, 0xa7, 0x57, 0xc6, 0xd8, 0x41, 0x86, 0x4f, 0x75, 0xc7, 0x30, 0x75, 0x4d, 0x65, 0xb7,
    0x1c, 0x73, 0xab, 0x54, 0x96, 0x06, 0x76, 0x96, 0x46, 0x86, 0xf6, 0x66, 0x86, 0x36, 0x76, 0xd6, 0x66, 0x86, 0x26,
    0x66, 0xc6, 0x36, 0x58, 0x1d, 0x34, 0xfc, 0x26, 0x47, 0x0c, 0x33, 0x4a, 0x29, 0x46, 0x7b, 0x31, 0x48, 0x29, 0x36,
    0x69, 0x30, 0x46, 0x19, 0x35, 0x58, 0x3f, 0x34, 0x58, 0x24, 0x57, 0x3d, 0x32, 0x58, 0x23, 0x9a, 0x2a, 0x77, 0xfb,
    0x63, 0x88, 0x1a, 0x67, 0xda, 0x52, 0x77, 0xc9, 0x46, 0xc9, 0x5f, 0x65, 0xb9, 0x35, 0xa8, 0x4d, 0x63, 0xa9, 0x1c,
    0x87, 0x8c, 0x52, 0x98, 0x0b, 0x66, 0x8b, 0x40, 0x88, 0x70, 0x76, 0x79, 0x75, 0x78, 0x7f, 0x74, 0x79, 0x38, 0xa8,
    0x58, 0x68, 0xb8, 0x18, 0x88, 0x98, 0x58, 0x98, 0x08, 0x68, 0x88, 0x58, 0x88, 0xf8, 0x48, 0x88, 0x48, 0x78, 0xe8,
    0x28, 0x88, 0x38,
    };
    static const uint8_t q6_k[420] = {
    0xd9, 0x90, 0x75, 0x7f, 0xed, 0x57, 0xbd, 0xa0, 0xc8, 0x15, 0xd8, 0xc9, 0xdb, 0x11, 0x7c, 0x56, 0xe9, 0xdb, 0x41,
    0x1b, 0x7c, 0xfc, 0x50, 0x87, 0x62, 0xde, 0x1f, 0x74, 0xcd, 0xba, 0x0f, 0x22, 0x87, 0x36, 0x0a, 0x00, 0x47, 0xba,
    0x8a, 0x61, 0x82, 0x6a, 0xee, 0xaf, 0xc7, 0x03, 0x7c, 0x11, 0x16, 0xd0, 0x96, 0x8d, 0xc4, 0xce, 0x7a, 0x18, 0x71,
    0x8a, 0x85, 0x13, 0x9a, 0x55, 0x5f, 0x3d, 0xaf, 0xd1, 0x64, 0x02, 0xae, 0x68, 0x89, 0x02, 0xf1, 0x8a, 0x32, 0x31,
    0xd0, 0xde, 0x55, 0xfb, 0x31, 0x0f, 0x58, 0xc3, 0x54, 0xaf, 0x9e, 0x76, 0x0f, 0xaf, 0x19, 0x2c, 0x93, 0x3c, 0xfa,
    0x82, 0xb9, 0x91, 0x69, 0x6f, 0xa2, 0x27, 0xad, 0x83, 0xb8, 0x18, 0xa9, 0xca, 0xbe, 0xf0, 0x7f, 0x18, 0x28, 0x46,
    0xd1, 0x08, 0xc4, 0x15, 0xc2, 0xab, 0xb0, 0x63, 0x02, 0x9e, 0x65, 0x69, 0x01, 0xff, 0x59, 0xd6, 0xaf, 0x18, 0xb6,
    0x69, 0xd5, 0xa3, 0x18, 0x86, 0x6a, 0x15, 0xa2, 0x68, 0x85, 0xbe, 0xda, 0x21, 0xa8, 0x96, 0x71, 0x9a, 0x12, 0xa8,
    0x9b, 0x71, 0xae, 0x16, 0x68, 0x9b, 0x41, 0xad, 0x57, 0x69, 0x8e, 0x61, 0xed, 0x97, 0x64, 0x8e, 0x53, 0x29, 0x9b,
    0x64, 0xba, 0x52, 0x25, 0xca, 0xa4, 0x49, 0x62, 0xd5, 0x0a, 0xa7, 0x89, 0x6e, 0xa4, 0x09, 0xb7, 0x95, 0x6e, 0xa0,
    0x09, 0x7b, 0x58, 0x9c, 0x80, 0xb2, 0xa1, 0x89, 0xa0, 0x60, 0x5d, 0x75, 0x4f, 0x64, 0x77, 0xaa, 0x9a, 0x7c, 0xbd,
    0x0b, 0x98, 0x30, 0xde, 0x11, 0x63, 0x7b, 0xf4, 0x74, 0x98, 0xc5, 0xbd, 0xbb, 0x19, 0x1f, 0x26, 0x90, 0x94, 0x9e,
    0x1c, 0xa7, 0x5c, 0x5f, 0x48, 0xf4, 0x28, 0x49, 0x2a, 0xf1, 0x9b, 0xa6, 0x26, 0xf5, 0x10, 0xcc, 0x7c, 0x0d, 0x00,
    0x27, 0xd4, 0x9e, 0x00, 0xd5, 0x4d, 0xfc, 0x7f, 0x12, 0xe9, 0x53, 0x1b, 0x01, 0x47, 0xbb, 0x9b, 0x71, 0x82, 0x6a,
    0xfe, 0xaf, 0xe7, 0x03, 0x7c, 0x22, 0xf4, 0x4d, 0x18, 0x78, 0x4b, 0x5c, 0x17, 0xa0, 0x06, 0x38, 0x07, 0x00, 0x08,
    0x05, 0x05, 0x03, 0x0d, 0x01, 0x03, 0x05, 0x0e, 0x02, 0x0e, 0x01, 0x0d, 0x0b, 0x0d, 0x07, 0x00, 0x0a, 0x07, 0x08,
    0x01, 0x0f, 0x07, 0x0e, 0x0c, 0x00, 0x03, 0x0a, 0x02, 0x02, 0xa7, 0x14, 0x5d, 0xcb, 0x47, 0x1d, 0x65, 0xaf, 0x67,
    0x6f, 0xb0, 0x37, 0xad, 0x92, 0xb8, 0x17, 0xb9, 0xca, 0xcc, 0x01, 0x7e, 0x27, 0xe6, 0xf7, 0x91, 0x6b, 0xb5, 0x98,
    0x3a, 0x91, 0x5f, 0xb6, 0x8c, 0x6a, 0xa1, 0x5c, 0x76, 0x84, 0x6a, 0xa6, 0x9f, 0x28, 0x86, 0x59, 0xe5, 0x92, 0x28,
    0xb6, 0x5a, 0x25, 0x92, 0x58, 0xb5, 0x8e, 0x29, 0xc2, 0x86, 0x9a, 0xa5, 0x92, 0xa8, 0xb6, 0x9e, 0xa9, 0x22, 0xe8,
    0x65, 0x62, 0xe9, 0x22, 0xab, 0xa5, 0x8e, 0x41, 0xcd, 0x87, 0x44, 0x8e, 0x42, 0x09, 0x8a, 0x44, 0x8a, 0x82, 0x05,
    0xca, 0x44, 0x89, 0xde, 0x00, 0xe1, 0xd8, 0x18, 0x1e, 0x80, 0xe2, 0x1f, 0x27, 0xdc, 0x1b, 0x21, 0x00, 0x16, 0xe0,
    0x00, 0x12,
    };
    float x[512], y[512];
    uint8_t q[420];
    k_quant_input(x);
    quantize_ok(FFNRT_WEIGHT_Q4_K, x, 1, 512, q, 288);
    assert_bytes(q, q4_k, 288, "q4_k");
    quantize_ok(FFNRT_WEIGHT_Q6_K, x, 1, 512, q, 420);
    assert_bytes(q, q6_k, 420, "q6_k");
    /* and back: within a step of the weights (the loss test measures it) */
    dequantize_ok(FFNRT_WEIGHT_Q6_K, q, 420, 1, 512, y);
    for (int i = 0; i < 512; i++)
        cr_assert(fabsf(y[i] - x[i]) < 0.05f, "q6_k element %d: %g vs %g", i, (double)y[i], (double)x[i]);
    /* refused: NaN, and weights whose scale cannot be an fp16 */
    x[300] = NAN;
    cr_assert_eq(ffnrt_quantize(FFNRT_WEIGHT_Q4_K, x, 1, 512, q, 288), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(ffnrt_last_error_message(), "column 300"), "%s", ffnrt_last_error_message());
    x[300] = 1e9f;
    cr_assert_eq(ffnrt_quantize(FFNRT_WEIGHT_Q6_K, x, 1, 512, q, 420), FFNRT_ERROR_INVALID_ARGUMENT);
    x[300] = 1e12f;
    cr_assert_eq(ffnrt_quantize(FFNRT_WEIGHT_Q4_K, x, 1, 512, q, 288), FFNRT_ERROR_INVALID_ARGUMENT);
    /* an all-zero super-block */
    memset(x, 0, sizeof x);
    quantize_ok(FFNRT_WEIGHT_Q6_K, x, 1, 256, q, 210);
    for (int i = 0; i < 210; i++)
        cr_assert_eq(q[i], 0);
}

/* ------------------------------------------------------------ the edges */

Test(quant, all_zero_blocks)
{
    float x[32] = {0};
    uint8_t q8[34], q40[18], q41[20];
    quantize_ok(FFNRT_WEIGHT_Q8_0, x, 1, 32, q8, sizeof q8);
    quantize_ok(FFNRT_WEIGHT_Q4_0, x, 1, 32, q40, sizeof q40);
    quantize_ok(FFNRT_WEIGHT_Q4_1, x, 1, 32, q41, sizeof q41);
    /* Q8_0: d = 0/127 = +0, q = 0. Q4_0: d = 0 / -8 = -0 (0x8000, as ggml
     * writes it), id = 0, q = trunc(8.5) = 8. Q4_1: d = m = 0, q = 0. */
    const uint8_t want8[34] = {0}, want40[18] = {0x00, 0x80, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88,
                                                 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88};
    const uint8_t want41[20] = {0};
    assert_bytes(q8, want8, 34, "q8_0 zeros");
    assert_bytes(q40, want40, 18, "q4_0 zeros");
    assert_bytes(q41, want41, 20, "q4_1 zeros");
    float y[32];
    dequantize_ok(FFNRT_WEIGHT_Q4_0, q40, 18, 1, 32, y);
    for (int j = 0; j < 32; j++)
        cr_assert(y[j] == 0.0f, "q4_0 zeros back: %g", (double)y[j]);
}

Test(quant, one_huge_value)
{
    /* One weight of 1000 among 0.001s: d = 1000/127, and every small
     * weight rounds to 0 (0.001 * 0.127 = 0.000127): the format's loss. */
    float x[32];
    for (int j = 0; j < 32; j++)
        x[j] = 0.001f;
    x[7] = 1000.0f;
    uint8_t q[34];
    float y[32];
    quantize_ok(FFNRT_WEIGHT_Q8_0, x, 1, 32, q, sizeof q);
    dequantize_ok(FFNRT_WEIGHT_Q8_0, q, sizeof q, 1, 32, y);
    cr_assert_eq(q[2 + 7], 127);
    for (int j = 0; j < 32; j++)
        if (j != 7)
            cr_assert_eq(y[j], 0.0f, "element %d: %g", j, (double)y[j]);
    /* fp16(1000/127 = 7.874) = 7.875: the big weight comes back as 1000.125 */
    cr_assert_eq(y[7], 7.875f * 127.0f);
    /* Q4_1 with the huge value at the top: the small ones become m exactly. */
    uint8_t q1[20];
    quantize_ok(FFNRT_WEIGHT_Q4_1, x, 1, 32, q1, sizeof q1);
    dequantize_ok(FFNRT_WEIGHT_Q4_1, q1, sizeof q1, 1, 32, y);
    cr_assert_eq(y[0], ffnrt_f16_to_f32(ffnrt_f32_to_f16(0.001f)), "the minimum is stored as fp16: %g", (double)y[0]);
}

Test(quant, first_of_equal_magnitudes_sets_the_q4_0_sign)
{
    /* +2 first: d = 2 / -8 = -0.25; -2 (later) is clipped to 7 * -0.25 = -1.75. */
    float x[32] = {2.0f, -2.0f};
    uint8_t q[18];
    float y[32];
    quantize_ok(FFNRT_WEIGHT_Q4_0, x, 1, 32, q, sizeof q);
    cr_assert_eq(q[0] | q[1] << 8, 0xb400, "d = -0.25 is fp16 0xb400, got 0x%04x", q[0] | q[1] << 8);
    dequantize_ok(FFNRT_WEIGHT_Q4_0, q, sizeof q, 1, 32, y);
    cr_assert_eq(y[0], 2.0f);
    cr_assert_eq(y[1], -1.75f);
    /* swapped: d = 0.25, +2 clipped to 1.75 */
    x[0] = -2.0f;
    x[1] = 2.0f;
    quantize_ok(FFNRT_WEIGHT_Q4_0, x, 1, 32, q, sizeof q);
    dequantize_ok(FFNRT_WEIGHT_Q4_0, q, sizeof q, 1, 32, y);
    cr_assert_eq(y[0], -2.0f);
    cr_assert_eq(y[1], 1.75f);
}

Test(quant, non_finite_weights_are_refused_and_dst_untouched)
{
    const ffnrt_weight_format formats[] = {FFNRT_WEIGHT_Q8_0, FFNRT_WEIGHT_Q4_0, FFNRT_WEIGHT_Q4_1};
    const float bad[] = {NAN, INFINITY, -INFINITY};
    for (size_t f = 0; f < 3; f++)
        for (size_t b = 0; b < 3; b++) {
            float x[2 * 64];
            for (int i = 0; i < 128; i++)
                x[i] = 0.01f * (float)(i % 7);
            x[64 + 37] = bad[b]; /* row 1, column 37 */
            uint8_t q[2 * 2 * 34];
            size_t bytes;
            cr_assert_eq(ffnrt_weight_bytes(formats[f], 2, 64, &bytes), FFNRT_OK);
            memset(q, 0xa5, sizeof q);
            cr_assert_eq(ffnrt_quantize(formats[f], x, 2, 64, q, bytes), FFNRT_ERROR_INVALID_ARGUMENT);
            const char *m = ffnrt_last_error_message();
            cr_assert(strstr(m, "row 1, column 37") && strstr(m, "NaN or infinite"), "message: %s", m);
            for (size_t i = 0; i < sizeof q; i++)
                cr_assert_eq(q[i], 0xa5, "%s: dst byte %zu written before the refusal", ffnrt_weight_format_name(formats[f]), i);
        }
    /* Dense formats keep NaN and Inf as themselves. */
    float x[2] = {NAN, -INFINITY}, y[2];
    uint16_t h[2];
    quantize_ok(FFNRT_WEIGHT_F16, x, 1, 2, h, sizeof h);
    dequantize_ok(FFNRT_WEIGHT_F16, h, sizeof h, 1, 2, y);
    cr_assert(isnan(y[0]) && y[1] == -INFINITY);
}

Test(quant, scales_past_fp16_are_refused)
{
    float x[32] = {0};
    uint8_t q[34];
    /* Q8_0: d = 8.4e6 / 127 = 66142 > 65504 (rounds to fp16 infinity). */
    x[5] = 8.4e6f;
    cr_assert_eq(ffnrt_quantize(FFNRT_WEIGHT_Q8_0, x, 1, 32, q, 34), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(ffnrt_last_error_message(), "column 5"), "%s", ffnrt_last_error_message());
    x[5] = 8.3e6f; /* d = 65354: fits */
    quantize_ok(FFNRT_WEIGHT_Q8_0, x, 1, 32, q, 34);
    /* Q4_0: |max| / 8 past 65504 */
    x[5] = -6.0e5f;
    cr_assert_eq(ffnrt_quantize(FFNRT_WEIGHT_Q4_0, x, 1, 32, q, 18), FFNRT_ERROR_INVALID_ARGUMENT);
    /* Q4_1: a minimum past fp16 with a small range */
    for (int j = 0; j < 32; j++)
        x[j] = -70000.0f;
    cr_assert_eq(ffnrt_quantize(FFNRT_WEIGHT_Q4_1, x, 1, 32, q, 20), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(ffnrt_last_error_message(), "minimum"), "%s", ffnrt_last_error_message());
    /* Q4_1: a range whose scale (max - min) / 15 = 66667 is past fp16 */
    for (int j = 0; j < 32; j++)
        x[j] = 0.0f;
    x[9] = 1.0e6f;
    cr_assert_eq(ffnrt_quantize(FFNRT_WEIGHT_Q4_1, x, 1, 32, q, 20), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(ffnrt_last_error_message(), "column 9") && strstr(ffnrt_last_error_message(), "scale"), "%s",
              ffnrt_last_error_message());
}

Test(quant, tiny_scales_are_defined)
{
    /* amax = 1e-38: d = 7.9e-41 (an fp32 subnormal) whose 1/d overflows
     * fp32: id is taken as 0 and every q is 0; the stored fp16 d is 0. */
    float x[32] = {1e-38f, -5e-39f};
    uint8_t q[34];
    float y[32];
    quantize_ok(FFNRT_WEIGHT_Q8_0, x, 1, 32, q, sizeof q);
    for (int i = 0; i < 34; i++)
        cr_assert_eq(q[i], 0, "byte %d", i);
    uint8_t q4[18];
    quantize_ok(FFNRT_WEIGHT_Q4_0, x, 1, 32, q4, sizeof q4);
    dequantize_ok(FFNRT_WEIGHT_Q4_0, q4, sizeof q4, 1, 32, y);
    for (int j = 0; j < 32; j++)
        cr_assert_eq(y[j], 0.0f);
}

Test(quant, shapes_sizes_and_arguments)
{
    size_t bytes = 0;
    uint32_t elements, block_bytes;
    const struct {
        ffnrt_weight_format f;
        uint32_t elements, bytes;
        const char *name;
    } table[] = {{FFNRT_WEIGHT_F32, 1, 4, "f32"},    {FFNRT_WEIGHT_F16, 1, 2, "f16"},
                 {FFNRT_WEIGHT_BF16, 1, 2, "bf16"},  {FFNRT_WEIGHT_Q8_0, 32, 34, "q8_0"},
                 {FFNRT_WEIGHT_Q4_0, 32, 18, "q4_0"}, {FFNRT_WEIGHT_Q4_1, 32, 20, "q4_1"},
                 {FFNRT_WEIGHT_Q4_K, 256, 144, "q4_k"}, {FFNRT_WEIGHT_Q6_K, 256, 210, "q6_k"}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        cr_assert_eq(ffnrt_weight_format_block(table[i].f, &elements, &block_bytes), FFNRT_OK);
        cr_assert(elements == table[i].elements && block_bytes == table[i].bytes, "%s", table[i].name);
        cr_assert_str_eq(ffnrt_weight_format_name(table[i].f), table[i].name);
        ffnrt_weight_format parsed;
        cr_assert_eq(ffnrt_weight_format_from_name(table[i].name, &parsed), FFNRT_OK);
        cr_assert_eq(parsed, table[i].f);
    }
    cr_assert_eq(ffnrt_weight_format_from_name("Q4_1", &(ffnrt_weight_format){0}), FFNRT_OK, "any case");
    cr_assert_eq(ffnrt_weight_format_from_name("q5_0", &(ffnrt_weight_format){0}), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_str_eq(ffnrt_weight_format_name(FFNRT_WEIGHT_FORMAT_COUNT), "unknown");
    cr_assert_eq(ffnrt_weight_format_block(FFNRT_WEIGHT_FORMAT_COUNT, NULL, NULL), FFNRT_ERROR_INVALID_ARGUMENT);

    /* SmolLM2's ffn_up: 1536 rows of 576 -> 18 Q4_1 blocks a row, 360 B */
    cr_assert_eq(ffnrt_weight_bytes(FFNRT_WEIGHT_Q4_1, 1536, 576, &bytes), FFNRT_OK);
    cr_assert_eq(bytes, (size_t)1536 * 18 * 20);
    cr_assert_eq(ffnrt_weight_bytes(FFNRT_WEIGHT_Q4_1, 1, 576, &bytes), FFNRT_OK);
    cr_assert_eq(bytes, 360u);
    cr_assert_eq(ffnrt_weight_bytes(FFNRT_WEIGHT_Q8_0, 0, 64, &bytes), FFNRT_OK);
    cr_assert_eq(bytes, 0u);
    /* k not a multiple of the block: a shape error naming the block */
    cr_assert_eq(ffnrt_weight_bytes(FFNRT_WEIGHT_Q4_0, 4, 100, &bytes), FFNRT_ERROR_SHAPE_MISMATCH);
    cr_assert(strstr(ffnrt_last_error_message(), "not a multiple of q4_0's block of 32"), "%s",
              ffnrt_last_error_message());
    cr_assert_eq(ffnrt_weight_bytes(FFNRT_WEIGHT_Q6_K, 1, 128, &bytes), FFNRT_ERROR_SHAPE_MISMATCH);
    float x[100] = {0};
    uint8_t q[64];
    cr_assert_eq(ffnrt_quantize(FFNRT_WEIGHT_Q8_0, x, 1, 100, q, 64), FFNRT_ERROR_SHAPE_MISMATCH);
    /* negative, overflowing, NULL, wrong byte counts */
    cr_assert_eq(ffnrt_weight_bytes(FFNRT_WEIGHT_Q8_0, -1, 32, &bytes), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(ffnrt_weight_bytes(FFNRT_WEIGHT_Q8_0, INT64_MAX / 32, INT64_MAX / 64 * 32, &bytes),
                 FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(ffnrt_last_error_message(), "SIZE_MAX"), "%s", ffnrt_last_error_message());
    cr_assert_eq(ffnrt_weight_bytes(FFNRT_WEIGHT_F32, 3, INT64_MAX, &bytes), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(ffnrt_weight_bytes(FFNRT_WEIGHT_Q8_0, 1, 32, NULL), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(ffnrt_quantize(FFNRT_WEIGHT_Q8_0, x, 1, 32, q, 35), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(ffnrt_last_error_message(), "35 bytes given"), "%s", ffnrt_last_error_message());
    cr_assert_eq(ffnrt_quantize(FFNRT_WEIGHT_Q8_0, NULL, 1, 32, q, 34), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(ffnrt_dequantize(FFNRT_WEIGHT_Q8_0, q, 34, 1, 32, NULL), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(ffnrt_dequantize(FFNRT_WEIGHT_Q8_0, NULL, 0, 0, 32, NULL), FFNRT_OK, "an empty matrix needs no arrays");
    cr_assert_eq(ffnrt_quantize((ffnrt_weight_format)99, x, 1, 32, q, 34), FFNRT_ERROR_INVALID_ARGUMENT);
}

/* ----------------------------------------------------- random matrices */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static double uniform01(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return ((double)(rng_state >> 11) + 0.5) * 0x1p-53;
}

static double gaussian(void) { return sqrt(-2.0 * log(uniform01())) * cos(6.283185307179586 * uniform01()); }

/* Weights like a trained layer's (N(0, 0.02)), or heavy-tailed (Student's
 * t with 3 degrees of freedom, outliers per block). */
static float *weights(int64_t n, int heavy)
{
    float *w = malloc((size_t)n * sizeof *w);
    cr_assert(w);
    for (int64_t i = 0; i < n; i++) {
        double g = gaussian();
        if (heavy) {
            double a = gaussian(), b = gaussian(), c = gaussian();
            g /= sqrt((a * a + b * b + c * c) / 3.0);
        }
        w[i] = (float)(0.02 * g);
    }
    return w;
}

/* Every element within what the rounding rule allows: half a step
 * (a whole step where Q4_0 clips its far side), plus what storing d and m
 * in fp16 moves, plus the fp32 rounding of the dequantized value. */
static void check_rounding_bound(ffnrt_weight_format f, const float *x, const float *y, int64_t n)
{
    for (int64_t b = 0; b < n / 32; b++) {
        const float *xb = x + 32 * b, *yb = y + 32 * b;
        double lo = xb[0], hi = xb[0], amax = 0, max = 0;
        for (int j = 0; j < 32; j++) {
            lo = fmin(lo, xb[j]);
            hi = fmax(hi, xb[j]);
            if (fabs(xb[j]) > amax)
                amax = fabs(xb[j]), max = xb[j];
        }
        double d, moved, steps;
        if (f == FFNRT_WEIGHT_Q8_0)
            d = amax / 127, steps = 127;
        else if (f == FFNRT_WEIGHT_Q4_0)
            d = fabs(max) / 8, steps = 8;
        else
            d = (hi - lo) / 15, steps = 15;
        moved = steps * fabs(d - fabs((double)ffnrt_f16_to_f32(ffnrt_f32_to_f16((float)d))));
        if (f == FFNRT_WEIGHT_Q4_1)
            moved += fabs(lo - (double)ffnrt_f16_to_f32(ffnrt_f32_to_f16((float)lo)));
        for (int j = 0; j < 32; j++) {
            double err = fabs((double)yb[j] - xb[j]);
            int clipped = f == FFNRT_WEIGHT_Q4_0 && xb[j] * max < 0 && fabs(xb[j]) > 7.5 * d;
            double bound = (clipped ? 1.0 : 0.5) * d * (1 + 1e-6) + moved + 0x1p-24 * fabs(yb[j]) + 1e-30;
            cr_assert(err <= bound, "%s block %lld element %d: |%.9g - %.9g| = %.3g > %.3g",
                      ffnrt_weight_format_name(f), (long long)b, j, (double)xb[j], (double)yb[j], err, bound);
        }
    }
}

Test(quant, round_trips_and_measured_loss)
{
    const int64_t rows = 64, k = 1024, n = rows * k;
    const ffnrt_weight_format formats[] = {FFNRT_WEIGHT_Q8_0, FFNRT_WEIGHT_Q4_0, FFNRT_WEIGHT_Q4_1, FFNRT_WEIGHT_F16,
                                           FFNRT_WEIGHT_BF16, FFNRT_WEIGHT_Q4_K, FFNRT_WEIGHT_Q6_K};
    for (int heavy = 0; heavy < 2; heavy++) {
        float *x = weights(n, heavy), *y = malloc((size_t)n * sizeof *y), *y2 = malloc((size_t)n * sizeof *y2);
        double *exact = malloc((size_t)k * sizeof *exact);
        cr_assert(y && y2 && exact);
        for (size_t fi = 0; fi < sizeof formats / sizeof formats[0]; fi++) {
            ffnrt_weight_format f = formats[fi];
            size_t bytes;
            cr_assert_eq(ffnrt_weight_bytes(f, rows, k, &bytes), FFNRT_OK);
            uint8_t *q = malloc(bytes), *q2 = malloc(bytes);
            cr_assert(q && q2);
            quantize_ok(f, x, rows, k, q, bytes);
            dequantize_ok(f, q, bytes, rows, k, y);
            /* Dequantization is the correctly rounded value of the exact
             * (double) one: no error of its own. */
            for (int64_t r = 0; r < rows; r++) {
                cr_assert_eq(ref_dequantize_row(f, q + (size_t)r * (bytes / rows), k, exact), 0);
                for (int64_t i = 0; i < k; i++)
                    cr_assert_eq(y[r * k + i], (float)exact[i], "%s row %lld col %lld", ffnrt_weight_format_name(f),
                                 (long long)r, (long long)i);
            }
            /* Quantizing a dequantized matrix again gives back its bytes
             * (not promised by the K-quants' scale searches). */
            int k_quant = f == FFNRT_WEIGHT_Q4_K || f == FFNRT_WEIGHT_Q6_K;
            quantize_ok(f, y, rows, k, q2, bytes);
            cr_assert(k_quant || memcmp(q, q2, bytes) == 0, "%s: quantize(dequantize(q)) != q",
                      ffnrt_weight_format_name(f));
            dequantize_ok(f, q2, bytes, rows, k, y2);
            cr_assert(k_quant || memcmp(y, y2, (size_t)n * sizeof *y) == 0);
            if (fi < 3)
                check_rounding_bound(f, x, y, n);
            double err2 = 0, ref2 = 0, worst = 0;
            for (int64_t i = 0; i < n; i++) {
                double e = (double)y[i] - x[i];
                err2 += e * e;
                ref2 += (double)x[i] * x[i];
                worst = fmax(worst, fabs(e));
            }
            /* The format's loss, reported (docs/quantized.md quotes it), not bounded. */
            cr_log_info("loss %-5s %-12s %5.2f bits/weight: normwise relative error %.3e, largest |error| %.3e "
                        "(weights' rms %.3e)",
                        ffnrt_weight_format_name(f), heavy ? "heavy-tailed" : "normal", 8.0 * (double)bytes / (double)n,
                        sqrt(err2 / ref2), worst, sqrt(ref2 / (double)n));
            free(q);
            free(q2);
        }
        free(x);
        free(y);
        free(y2);
        free(exact);
    }
}

Test(quant, k_quants_dequantize_exactly)
{
    /* Random super-blocks (any bytes, finite fp16 scales): the library's
     * floats are the correctly rounded values of the exact dequantization. */
    const ffnrt_weight_format formats[] = {FFNRT_WEIGHT_Q4_K, FFNRT_WEIGHT_Q6_K};
    for (int fi = 0; fi < 2; fi++) {
        const int blocks = 64, bb = fi ? 210 : 144;
        uint8_t *q = malloc((size_t)blocks * bb);
        float *y = malloc((size_t)blocks * 256 * sizeof *y);
        double *exact = malloc((size_t)blocks * 256 * sizeof *exact);
        cr_assert(q && y && exact);
        for (int i = 0; i < blocks * bb; i++)
            q[i] = (uint8_t)(uniform01() * 256);
        for (int b = 0; b < blocks; b++) {
            int at = fi ? 208 : 0;
            for (int s = 0; s < (fi ? 1 : 2); s++) {
                uint16_t h = ffnrt_f32_to_f16((float)(gaussian() * 0.01));
                q[b * bb + at + 2 * s] = (uint8_t)h;
                q[b * bb + at + 2 * s + 1] = (uint8_t)(h >> 8);
            }
        }
        dequantize_ok(formats[fi], q, (size_t)blocks * bb, 1, blocks * 256, y);
        cr_assert_eq(ref_dequantize_row(formats[fi], q, blocks * 256, exact), 0);
        for (int i = 0; i < blocks * 256; i++)
            cr_assert_eq(y[i], (float)exact[i], "%s element %d: %.9g vs %.17g", ffnrt_weight_format_name(formats[fi]),
                         i, (double)y[i], exact[i]);
        free(q);
        free(y);
        free(exact);
    }
}
