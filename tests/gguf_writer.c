/* See gguf_writer.h. */
#include "gguf_writer.h"
#include "ffnrt_lab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gw_raw(gw_buf *b, const void *data, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p)
            abort();
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void le(gw_buf *b, uint64_t v, int n)
{
    uint8_t bytes[8];
    for (int i = 0; i < n; i++)
        bytes[i] = (uint8_t)(v >> (8 * i));
    gw_raw(b, bytes, (size_t)n);
}

void gw_u8(gw_buf *b, uint8_t v) { gw_raw(b, &v, 1); }
void gw_u32(gw_buf *b, uint32_t v) { le(b, v, 4); }
void gw_u64(gw_buf *b, uint64_t v) { le(b, v, 8); }

void gw_string(gw_buf *b, const char *s)
{
    gw_u64(b, strlen(s));
    gw_raw(b, s, strlen(s));
}

void gw_header(gw_buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    gw_raw(b, "GGUF", 4);
    gw_u32(b, version);
    gw_u64(b, n_tensors);
    gw_u64(b, n_kv);
}

void gw_kv_u32(gw_buf *b, const char *key, uint32_t v)
{
    gw_string(b, key);
    gw_u32(b, 4);
    gw_u32(b, v);
}

void gw_kv_string(gw_buf *b, const char *key, const char *v)
{
    gw_string(b, key);
    gw_u32(b, 8);
    gw_string(b, v);
}

void gw_kv_array(gw_buf *b, const char *key, uint32_t element_type, uint64_t count)
{
    gw_string(b, key);
    gw_u32(b, 9);
    gw_u32(b, element_type);
    gw_u64(b, count);
}

void gw_tensor_info(gw_buf *b, const char *name, uint32_t n_dims, const int64_t *ne, uint32_t type, uint64_t offset)
{
    gw_string(b, name);
    gw_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++)
        gw_u64(b, (uint64_t)ne[d]);
    gw_u32(b, type);
    gw_u64(b, offset);
}

void gw_align(gw_buf *b, size_t alignment)
{
    static const uint8_t zero = 0;
    while (b->n % alignment)
        gw_raw(b, &zero, 1);
}

void gw_free(gw_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

int gw_save(const gw_buf *b, const char *path)
{
    FILE *f = ffnrt_lab_fopen(path, "wb"); /* a UTF-8 path on every OS */
    if (!f)
        return -1;
    int ok = fwrite(b->p, 1, b->n, f) == b->n;
    return fclose(f) == 0 && ok ? 0 : -1;
}

uint32_t gw_ggml_type(ffnrt_weight_format f)
{
    static const uint32_t ids[FFNRT_WEIGHT_FORMAT_COUNT] = {
        [FFNRT_WEIGHT_F32] = 0,  [FFNRT_WEIGHT_F16] = 1,  [FFNRT_WEIGHT_BF16] = 30, [FFNRT_WEIGHT_Q8_0] = 8,
        [FFNRT_WEIGHT_Q4_0] = 2, [FFNRT_WEIGHT_Q4_1] = 3, [FFNRT_WEIGHT_Q4_K] = 12, [FFNRT_WEIGHT_Q6_K] = 14};
    return ids[f];
}

float gw_model_weight(int layer, int which, int64_t row, int64_t col)
{
    /* smooth and sign-changing, distinct per layer and matrix */
    double t = 0.37 * (double)row + 0.91 * (double)col + 1.3 * which + 2.1 * layer;
    return (float)(0.05 * sin(t) + 0.01 * cos(3.0 * t + (double)row));
}

/* One matrix [rows, cols] quantized to the model's format. */
static void matrix(gw_buf *b, const gw_model *m, int layer, int which, int64_t rows, int64_t cols)
{
    float *x = malloc((size_t)(rows * cols) * sizeof *x);
    size_t bytes;
    if (!x || ffnrt_weight_bytes(m->format, rows, cols, &bytes) != FFNRT_OK)
        abort();
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            x[r * cols + c] = gw_model_weight(layer, which, r, c);
    uint8_t *q = malloc(bytes);
    if (!q || ffnrt_quantize(m->format, x, rows, cols, q, bytes) != FFNRT_OK)
        abort();
    gw_raw(b, q, bytes);
    free(q);
    free(x);
}

static void vector(gw_buf *b, int layer, int which, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float v = which < 3 ? 1.0f : gw_model_weight(layer, which, i, 0);
        uint32_t bits;
        memcpy(&bits, &v, 4);
        gw_u32(b, bits);
    }
}

void gw_build_model(gw_buf *b, const gw_model *m)
{
    const uint64_t align = m->alignment ? m->alignment : 32;
    const int per_layer = m->bias ? 7 : 4;
    gw_header(b, m->version, (uint64_t)(m->layers * per_layer), m->alignment ? 10 : 9);
    gw_kv_string(b, "general.architecture", "llama");
    gw_kv_u32(b, "llama.block_count", (uint32_t)m->layers);
    gw_kv_u32(b, "llama.embedding_length", (uint32_t)m->d_model);
    gw_kv_u32(b, "llama.feed_forward_length", (uint32_t)m->hidden);
    gw_string(b, "llama.rope.freq_base"); /* float32 */
    gw_u32(b, 6);
    gw_u32(b, 0x47c35000u); /* 100000.0f */
    gw_string(b, "tokenizer.ggml.add_bos_token"); /* bool */
    gw_u32(b, 7);
    gw_u8(b, 1);
    gw_kv_array(b, "tokenizer.ggml.tokens", 8, 3);
    gw_string(b, "<s>");
    gw_string(b, "");
    gw_string(b, "ffn");
    gw_kv_array(b, "tokenizer.ggml.token_type", 5, 3);
    gw_u32(b, 1);
    gw_u32(b, (uint32_t)-2);
    gw_u32(b, 3);
    gw_string(b, "general.name"); /* a string with a NUL inside: read by length */
    gw_u32(b, 8);
    gw_u64(b, 5);
    gw_raw(b, "a\0b c", 5);
    if (m->alignment)
        gw_kv_u32(b, "general.alignment", m->alignment);

    /* Tensor infos, then the data in the same order, each padded. */
    size_t w_bytes, d_bytes;
    ffnrt_weight_bytes(m->format, m->hidden, m->d_model, &w_bytes);
    ffnrt_weight_bytes(m->format, m->d_model, m->hidden, &d_bytes);
    const char *parts[7] = {"ffn_gate.weight", "ffn_norm.weight", "ffn_up.weight", "ffn_down.weight",
                            "ffn_gate.bias", "ffn_up.bias", "ffn_down.bias"};
    uint64_t offset = 0;
    for (int l = 0; l < m->layers; l++)
        for (int p = 0; p < per_layer; p++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%d.%s", l, parts[p]);
            int64_t ne[2];
            uint32_t type = gw_ggml_type(m->format), dims = 2;
            uint64_t bytes;
            if (p == 0 || p == 2) {
                ne[0] = m->d_model, ne[1] = m->hidden, bytes = w_bytes;
            } else if (p == 3) {
                ne[0] = m->hidden, ne[1] = m->d_model, bytes = d_bytes;
            } else {
                dims = 1, type = 0;
                ne[0] = p == 6 || p == 1 ? m->d_model : m->hidden;
                bytes = (uint64_t)ne[0] * 4;
            }
            gw_tensor_info(b, name, dims, ne, type, offset);
            offset += (bytes + align - 1) / align * align;
        }
    gw_align(b, align);
    static const int which[7] = {0, -1, 1, 2, 3, 4, 5};
    for (int l = 0; l < m->layers; l++)
        for (int p = 0; p < per_layer; p++) {
            if (p == 0 || p == 2)
                matrix(b, m, l, which[p], m->hidden, m->d_model);
            else if (p == 3)
                matrix(b, m, l, 2, m->d_model, m->hidden);
            else
                vector(b, l, p == 1 ? 0 : which[p], p == 6 || p == 1 ? m->d_model : m->hidden);
            gw_align(b, align);
        }
}
