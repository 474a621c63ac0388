/* See reference_quant.h. Each format is decoded element by element from
 * its definition (GGUF's block layouts), independently of src/quant/. */
#include "reference_quant.h"
#include "reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double ref_f16(uint16_t bits)
{
    int sign = bits >> 15, exponent = (bits >> 10) & 31, mantissa = bits & 1023;
    double v;
    if (exponent == 31)
        v = mantissa ? NAN : INFINITY;
    else if (exponent == 0)
        v = ldexp(mantissa, -24); /* subnormal: mantissa * 2^-24 */
    else
        v = ldexp(1024 + mantissa, exponent - 25);
    return sign ? -v : v;
}

static double f16_at(const uint8_t *p) { return ref_f16((uint16_t)(p[0] | p[1] << 8)); }

/* Element e (0..255) of a Q4_K super-block: group g = e / 32 has scale
 * d * sc[g] and minimum dmin * mn[g] (6-bit, packed in 12 bytes); its
 * nibble is in byte 32 * (g / 2) + e % 32 of qs, low for even g. */
static double q4_k_element(const uint8_t *b, int e)
{
    const uint8_t *s = b + 4, *qs = b + 16;
    int g = e / 32, sc, mn;
    if (g < 4) {
        sc = s[g] & 63;
        mn = s[g + 4] & 63;
    } else { /* low 4 bits in byte g + 4, top 2 bits in bytes g - 4 (sc) and g (mn) */
        sc = (s[g + 4] & 15) + 16 * (s[g - 4] >> 6);
        mn = (s[g + 4] >> 4) + 16 * (s[g] >> 6);
    }
    uint8_t byte = qs[32 * (g / 2) + e % 32];
    int q = g % 2 == 0 ? byte & 15 : byte >> 4;
    return f16_at(b) * sc * q - f16_at(b + 2) * mn;
}

/* Element e of a Q6_K super-block: half h = e / 128, p = e % 128, r = p /
 * 32, l = p % 32; low 4 bits from ql[64h + l + 32(r & 1)] (low nibble for
 * r < 2), top 2 bits from qh[32h + l] >> 2r; scale int8 sc[e / 16]. */
static double q6_k_element(const uint8_t *b, int e)
{
    const uint8_t *ql = b, *qh = b + 128;
    int h = e / 128, p = e % 128, r = p / 32, l = p % 32;
    int low = (ql[64 * h + l + 32 * (r & 1)] >> (4 * (r >> 1))) & 15;
    int high = (qh[32 * h + l] >> (2 * r)) & 3;
    int q = low + 16 * high - 32;
    return f16_at(b + 208) * (int8_t)b[192 + e / 16] * q;
}

int ref_dequantize_row(ffnrt_weight_format format, const void *row, int64_t k, double *out)
{
    const uint8_t *b = row;
    for (int64_t i = 0; i < k; i++) {
        switch (format) {
        case FFNRT_WEIGHT_F32: {
            float f;
            memcpy(&f, b + 4 * i, 4);
            out[i] = f;
            break;
        }
        case FFNRT_WEIGHT_F16:
            out[i] = f16_at(b + 2 * i);
            break;
        case FFNRT_WEIGHT_BF16: {
            uint32_t bits = (uint32_t)(b[2 * i] | b[2 * i + 1] << 8) << 16;
            float f;
            memcpy(&f, &bits, 4);
            out[i] = f;
            break;
        }
        case FFNRT_WEIGHT_Q8_0: { /* 34 bytes: d, then 32 int8 */
            const uint8_t *blk = b + 34 * (i / 32);
            out[i] = f16_at(blk) * (int8_t)blk[2 + i % 32];
            break;
        }
        case FFNRT_WEIGHT_Q4_0: /* 18 bytes: d, 16 bytes; element j < 16 low nibble of byte j, else high of j - 16 */
        case FFNRT_WEIGHT_Q4_1: { /* 20 bytes: d, m, 16 bytes */
            int q1 = format == FFNRT_WEIGHT_Q4_1;
            const uint8_t *blk = b + (q1 ? 20 : 18) * (i / 32), *qs = blk + (q1 ? 4 : 2);
            int j = (int)(i % 32);
            int q = j < 16 ? qs[j] & 15 : qs[j - 16] >> 4;
            out[i] = q1 ? f16_at(blk) * q + f16_at(blk + 2) : f16_at(blk) * (q - 8);
            break;
        }
        case FFNRT_WEIGHT_Q4_K:
            out[i] = q4_k_element(b + 144 * (i / 256), (int)(i % 256));
            break;
        case FFNRT_WEIGHT_Q6_K:
            out[i] = q6_k_element(b + 210 * (i / 256), (int)(i % 256));
            break;
        default:
            return -1;
        }
    }
    return 0;
}

static double dot(const double *a, const double *b, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

void ref_swiglu(const double *w_gate, const double *w_up, const double *w_down, int64_t d_model, int64_t hidden,
                const double *x, double *y)
{
    double *a = malloc((size_t)hidden * sizeof *a);
    if (!a)
        abort();
    for (int64_t h = 0; h < hidden; h++)
        a[h] = ref_silu(dot(w_gate + h * d_model, x, d_model)) * dot(w_up + h * d_model, x, d_model);
    for (int64_t o = 0; o < d_model; o++)
        y[o] = dot(w_down + o * hidden, a, hidden);
    free(a);
}

/* Row r of a GGUF weight (ne = {in, out}) dequantized into out[in]. */
static int weight_row(const ffnrt_gguf_tensor_info *t, int64_t r, double *out)
{
    size_t row_bytes;
    if (ffnrt_weight_bytes(t->format, 1, t->ne[0], &row_bytes) != FFNRT_OK)
        return -1;
    return ref_dequantize_row(t->format, (const uint8_t *)t->data + (size_t)r * row_bytes, t->ne[0], out);
}

int ref_gguf_swiglu(const ffnrt_gguf_ffn *layer, const double *x, double *y)
{
    if (!layer->gated)
        return -1;
    const int64_t d = layer->d_model, n = layer->hidden;
    double *row = malloc((size_t)(d > n ? d : n) * sizeof *row), *a = malloc((size_t)n * sizeof *a);
    double *bias_gate = malloc((size_t)n * sizeof *bias_gate), *bias_up = malloc((size_t)n * sizeof *bias_up);
    double *bias_down = malloc((size_t)d * sizeof *bias_down);
    int st = row && a && bias_gate && bias_up && bias_down ? 0 : -1;
    if (st == 0 && layer->bias)
        st = ref_dequantize_row(layer->gate_bias.format, layer->gate_bias.data, n, bias_gate) |
             ref_dequantize_row(layer->up_bias.format, layer->up_bias.data, n, bias_up) |
             ref_dequantize_row(layer->down_bias.format, layer->down_bias.data, d, bias_down);
    for (int64_t h = 0; st == 0 && h < n; h++) {
        double g, u;
        st = weight_row(&layer->gate, h, row);
        g = dot(row, x, d) + (layer->bias ? bias_gate[h] : 0.0);
        st |= weight_row(&layer->up, h, row);
        u = dot(row, x, d) + (layer->bias ? bias_up[h] : 0.0);
        a[h] = ref_silu(g) * u;
    }
    for (int64_t o = 0; st == 0 && o < d; o++) {
        st = weight_row(&layer->down, o, row);
        y[o] = dot(row, a, n) + (layer->bias ? bias_down[o] : 0.0);
    }
    free(row);
    free(a);
    free(bias_gate);
    free(bias_up);
    free(bias_down);
    return st;
}
