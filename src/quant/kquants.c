/* GGUF's K-quants: super-blocks of 256 weights with a fp16
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

#include <math.h>
#include <string.h>

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

/* ------------------------------------------------------------ quantizing
 *
 * As ggml's quantize_row_q4_K_ref and _q6_K_ref (no importance matrix):
 * per group, a search for the scale (and, Q4_K, the minimum) that
 * minimises a weighted squared error, then the group scales quantized to
 * 6 (Q4_K) or 8 (Q6_K) bits under one fp16 super-scale, then every weight
 * rounded again with the stored scales. Same operations in the same
 * order (this file is compiled with -ffp-contract=off), so the same bytes.
 * Rounding to an integer is to nearest, ties to even (ggml's nearest_int,
 * an add of 1.5 * 2^23), clamped so that no input is undefined. */

#define GROUP_MAX_EPS 1e-15f

static int nearest_int(float v)
{
    if (!(fabsf(v) <= 4194303.0f)) /* ggml asserts this range; NaN lands here too */
        return isnan(v) ? 0 : v > 0 ? 4194303 : -4194303;
    return (int)rintf(v); /* round to nearest even in the default mode, as the 1.5 * 2^23 add */
}

static int clamp_int(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Q4_K's per-group search (ggml's make_qkx2_quants with rmin = -1,
 * rdelta = 0.1, 20 steps, squared error): a scale and a minimum <= 0 for
 * x = scale * L + min, L in 0..nmax; returns the scale, *neg_min = -min. */
static float fit_scale_min(int n, int nmax, const float *x, const float *weights, uint8_t *L, float *neg_min)
{
    const float rmin = -1.0f, rdelta = 0.1f;
    const int nstep = 20;
    uint8_t Laux[32];
    float min = x[0], max = x[0], sum_w = weights[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min)
            min = x[i];
        if (x[i] > max)
            max = x[i];
        float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0)
        min = 0;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *neg_min = -min;
        return 0.0f;
    }
    float iscale = (float)nmax / (max - min), scale = 1 / iscale, best_error = 0;
    for (int i = 0; i < n; i++) {
        int l = nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)clamp_int(l, 0, nmax);
        float diff = scale * (float)L[i] + min - x[i];
        best_error += weights[i] * (diff * diff);
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t)l;
            float w = weights[i];
            sum_l += w * (float)l;
            sum_l2 += w * (float)l * (float)l;
            sum_xl += w * (float)l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float error = 0;
            for (int i = 0; i < n; i++) {
                float diff = this_scale * (float)Laux[i] + this_min - x[i];
                error += weights[i] * (diff * diff);
            }
            if (error < best_error) {
                memcpy(L, Laux, (size_t)n);
                best_error = error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *neg_min = -min;
    return scale;
}

/* Q6_K's per-group search (ggml's make_qx_quants, nmax = 32, weights
 * x^2): a signed scale for x = scale * l, l in -nmax..nmax-1, tried at 19
 * steps around -nmax / max; L holds l + nmax. */
static float fit_scale(int n, int nmax, const float *x, uint8_t *L)
{
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++) {
        float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = (float)-nmax / max, sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (uint8_t)(l + nmax);
        float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f, best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0)
            continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            float w = x[i] * x[i];
            sumlx += w * x[i] * (float)l;
            suml2 += w * (float)l * (float)l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++)
                L[i] = (uint8_t)(nmax + clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Refuses what the search cannot take: NaN or infinite weights, and
 * weights so large that its sums of x^3 could overflow fp32 (|x| past
 * 2^36, far beyond what an fp16 scale reaches: such a block would be
 * refused for its scale anyway). */
static int refuse_block(const float *x, ffnrt_block_problem *p)
{
    for (int j = 0; j < QK_K; j++)
        if (!isfinite(x[j]) || fabsf(x[j]) > 0x1p36f) {
            p->column = j;
            p->value = x[j];
            p->why = isfinite(x[j]) ? "a weight past 2^36 (whose scale would overflow fp16) has no K-quant form" : "a NaN or infinite weight has no quantized form";
            return 1;
        }
    return 0;
}

static int scale_overflows(uint16_t h) { return (h & 0x7fffu) == 0x7c00u; }

int ffnrt_quantize_q4_k(const float *x, uint8_t *out, ffnrt_block_problem *p)
{
    if (refuse_block(x, p))
        return 1;
    uint8_t L[QK_K], *scales = out + 4, *qs = out + 16;
    float mins[8], group_scales[8], weights[32], max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; j++) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; l++)
            sum_x2 += x[32 * j + l] * x[32 * j + l];
        float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; l++)
            weights[l] = av_x + fabsf(x[32 * j + l]);
        group_scales[j] = fit_scale_min(32, 15, x + 32 * j, weights, L + 32 * j, &mins[j]);
        if (group_scales[j] > max_scale)
            max_scale = group_scales[j];
        if (mins[j] > max_min)
            max_min = mins[j];
    }
    const uint16_t d16 = ffnrt_f32_to_f16(max_scale / 63.f), dmin16 = ffnrt_f32_to_f16(max_min / 63.f);
    if (scale_overflows(d16) || scale_overflows(dmin16)) {
        p->column = 0;
        p->value = x[0];
        p->why = "the super-block's scale or minimum overflows fp16";
        return 1;
    }
    float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f, inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < 8; j++) {
        /* ggml stores nearest_int into a uint8_t, then takes min(63, .) */
        uint8_t ls = (uint8_t)nearest_int(inv_scale * group_scales[j]), lm = (uint8_t)nearest_int(inv_min * mins[j]);
        ls = ls < 63 ? ls : 63;
        lm = lm < 63 ? lm : 63;
        if (j < 4) {
            scales[j] = ls;
            scales[j + 4] = lm;
        } else {
            scales[j + 4] = (uint8_t)((ls & 0x0f) | (lm & 0x0f) << 4);
            scales[j - 4] |= (uint8_t)((ls >> 4) << 6);
            scales[j] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    ffnrt_store_u16(out, d16);
    ffnrt_store_u16(out + 2, dmin16);
    const float d = ffnrt_f16_to_f32(d16), dmin = ffnrt_f16_to_f32(dmin16);
    for (int j = 0; j < 8; j++) {
        int sc, m;
        q4_k_scale_min(j, scales, &sc, &m);
        const float dj = d * (float)sc;
        if (!dj)
            continue;
        const float dm = dmin * (float)m;
        for (int i = 0; i < 32; i++)
            L[32 * j + i] = (uint8_t)clamp_int(nearest_int((x[32 * j + i] + dm) / dj), 0, 15);
    }
    for (int chunk = 0; chunk < 4; chunk++)
        for (int l = 0; l < 32; l++)
            qs[32 * chunk + l] = (uint8_t)(L[64 * chunk + l] | L[64 * chunk + l + 32] << 4);
    return 0;
}

int ffnrt_quantize_q6_k(const float *x, uint8_t *out, ffnrt_block_problem *p)
{
    if (refuse_block(x, p))
        return 1;
    uint8_t L[QK_K], *ql = out, *qh = out + 128;
    int8_t *sc = (int8_t *)(out + 192);
    float group_scales[16], max_scale = 0, max_abs_scale = 0;
    for (int g = 0; g < 16; g++) {
        group_scales[g] = fit_scale(16, 32, x + 16 * g, L + 16 * g);
        if (fabsf(group_scales[g]) > max_abs_scale) {
            max_abs_scale = fabsf(group_scales[g]);
            max_scale = group_scales[g];
        }
    }
    if (max_abs_scale < GROUP_MAX_EPS) { /* an all-zero super-block */
        memset(out, 0, 210);
        return 0;
    }
    const float iscale = -128.f / max_scale;
    const uint16_t d16 = ffnrt_f32_to_f16(1 / iscale);
    if (scale_overflows(d16)) {
        p->column = 0;
        p->value = x[0];
        p->why = "the super-block's scale overflows fp16";
        return 1;
    }
    for (int g = 0; g < 16; g++) {
        int s = nearest_int(iscale * group_scales[g]);
        sc[g] = (int8_t)(s < 127 ? s : 127);
    }
    out[208] = (uint8_t)d16;
    out[209] = (uint8_t)(d16 >> 8);
    const float d = ffnrt_f16_to_f32(d16);
    for (int g = 0; g < 16; g++) {
        const float dg = d * (float)sc[g];
        if (!dg)
            continue; /* L keeps the group's own search result, as in ggml */
        for (int i = 0; i < 16; i++)
            L[16 * g + i] = (uint8_t)(clamp_int(nearest_int(x[16 * g + i] / dg), -32, 31) + 32);
    }
    for (int half = 0; half < 2; half++, ql += 64, qh += 32) {
        const uint8_t *Lh = L + 128 * half;
        for (int l = 0; l < 32; l++) {
            ql[l] = (uint8_t)((Lh[l] & 0x0f) | (Lh[l + 64] & 0x0f) << 4);
            ql[l + 32] = (uint8_t)((Lh[l + 32] & 0x0f) | (Lh[l + 96] & 0x0f) << 4);
            qh[l] = (uint8_t)(Lh[l] >> 4 | (Lh[l + 32] >> 4) << 2 | (Lh[l + 64] >> 4) << 4 | (Lh[l + 96] >> 4) << 6);
        }
    }
    return 0;
}
