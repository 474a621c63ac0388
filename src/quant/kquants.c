/* GGUF's K-quants, read side: super-blocks of 256 weights with a fp16
 * scale over small per-group scales. Layouts and arithmetic as ggml's
 * dequantize_row_q4_K / _q6_K (block_q4_K, block_q6_K in ggml-common.h),
 * in the same order of operations, so the floats are the same.
 *
 * Q4_K, 144 bytes: fp16 d, fp16 dmin, 12 bytes holding eight 6-bit
 * scales and eight 6-bit mins, 128 bytes of nibbles. Group g (32 weights)
 * has x = (d * sc[g]) * q - (dmin * mn[g]). Its nibbles: chunk c = g / 2
 * of 32 bytes, low nibbles for even g, high nibbles for odd g.
 *
 * Q6_K, 210 bytes: 128 bytes of low nibbles (ql), 64 bytes of 2-bit high
 * parts (qh), 16 int8 scales, fp16 d. Group g (16 weights) has
 * x = (d * sc[g]) * (q - 32), q = 6 bits. */
#include "quant/quant.h"

#define QK_K 256

/* Scale and min of group j (0..7) from the 12 packed bytes: groups 0-3
 * keep theirs in the low 6 bits of bytes j and j + 4; groups 4-7 keep
 * their low 4 bits in byte j + 4 and their top 2 bits in the top bits of
 * bytes j - 4 (scale) and j (min). */
static void q4_k_scale_min(int j, const uint8_t *s, int *scale, int *min)
{
    if (j < 4) {
        *scale = s[j] & 63;
        *min = s[j + 4] & 63;
    } else {
        *scale = (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
        *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

void ffnrt_dequantize_q4_k(const uint8_t *in, float *y)
{
    const float d = ffnrt_load_f16(in), dmin = ffnrt_load_f16(in + 2);
    const uint8_t *scales = in + 4, *q = in + 16;
    for (int chunk = 0; chunk < 4; chunk++, q += 32) {
        int sc0, m0, sc1, m1;
        q4_k_scale_min(2 * chunk, scales, &sc0, &m0);
        q4_k_scale_min(2 * chunk + 1, scales, &sc1, &m1);
        const float d0 = d * (float)sc0, min0 = dmin * (float)m0;
        const float d1 = d * (float)sc1, min1 = dmin * (float)m1;
        for (int l = 0; l < 32; l++)
            *y++ = d0 * (float)(q[l] & 0x0f) - min0;
        for (int l = 0; l < 32; l++)
            *y++ = d1 * (float)(q[l] >> 4) - min1;
    }
}

/* Each half (128 weights) uses 64 bytes of ql, 32 of qh and 8 scales:
 * weight l + 32 * r (r = 0..3, l = 0..31) takes its low 4 bits from
 * ql[l + 32 * (r & 1)] (low nibble for r < 2, high for r >= 2) and its top
 * 2 bits from qh[l] >> (2 * r); its group is l / 16 + 2 * r. */
void ffnrt_dequantize_q6_k(const uint8_t *in, float *y)
{
    const uint8_t *ql = in, *qh = in + 128;
    const int8_t *sc = (const int8_t *)(in + 192);
    const float d = ffnrt_load_f16(in + 208);
    for (int half = 0; half < 2; half++, y += 128, ql += 64, qh += 32, sc += 8)
        for (int l = 0; l < 32; l++)
            for (int r = 0; r < 4; r++) {
                int low = (r < 2 ? ql[l + 32 * r] : ql[l + 32 * (r - 2)] >> 4) & 0x0f;
                int q = (low | ((qh[l] >> (2 * r)) & 3) << 4) - 32;
                y[l + 32 * r] = d * (float)sc[l / 16 + 2 * r] * (float)q;
            }
}
