/* libFuzzer target over the GGUF reader (include/ffnrt_gguf.h), built and
 * run with the other targets by scripts/fuzz (seeds in fuzz/corpus/gguf/,
 * written by fuzz/make_gguf_corpus.c):
 *   scripts/fuzz 60 gguf
 *
 * Beyond "no crash, no sanitizer report": a refusal is INVALID_FILE (or
 * out of memory) with a message; an accepted file is walked whole (every
 * key through every getter, every tensor, layers 0-3's FFN tensors, and
 * the first row of each tensor ffnrt can dequantize, quantized again), every tensor lies
 * inside the input, aligned, and the alignment is a power of two. */
#include <ffnrt.h>
#include <ffnrt_gguf.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void walk_values(const ffnrt_gguf *g)
{
    for (size_t i = 0; i < ffnrt_gguf_kv_count(g); i++) {
        ffnrt_gguf_kv_info kv;
        if (ffnrt_gguf_kv_at(g, i, &kv) != FFNRT_OK || !kv.key || ffnrt_gguf_find_key(g, kv.key) != (int64_t)i)
            abort();
        uint64_t u;
        int64_t s;
        double f;
        const char *str;
        size_t len;
        ffnrt_gguf_type et;
        uint64_t count;
        const void *data;
        (void)ffnrt_gguf_get_uint(g, kv.key, &u);
        (void)ffnrt_gguf_get_int(g, kv.key, &s);
        (void)ffnrt_gguf_get_float(g, kv.key, &f);
        if (ffnrt_gguf_get_string(g, kv.key, &str, &len) == FFNRT_OK && len) {
            volatile char last = str[len - 1];
            (void)last;
        }
        if (ffnrt_gguf_get_array(g, kv.key, &et, &count, &data, &len) == FFNRT_OK && len) {
            volatile uint8_t last = ((const uint8_t *)data)[len - 1];
            (void)last;
        }
    }
}

static void walk_tensors(const ffnrt_gguf *g, const uint8_t *input, size_t size)
{
    const uint64_t align = ffnrt_gguf_alignment(g);
    if (align == 0 || (align & (align - 1)) != 0)
        abort();
    for (size_t i = 0; i < ffnrt_gguf_tensor_count(g); i++) {
        ffnrt_gguf_tensor_info t;
        if (ffnrt_gguf_tensor_at(g, i, &t) != FFNRT_OK || ffnrt_gguf_find_tensor(g, t.name) != (int64_t)i)
            abort();
        const uint8_t *p = t.data;
        if (p < input || t.offset > size || t.bytes > size - t.offset || p != input + t.offset ||
            (t.offset - ffnrt_gguf_data_offset(g)) % align != 0 || t.n_dims > 4)
            abort();
        size_t row_bytes;
        if (t.format == FFNRT_WEIGHT_FORMAT_COUNT || t.ne[0] > 4096 ||
            ffnrt_weight_bytes(t.format, 1, t.ne[0], &row_bytes) != FFNRT_OK || row_bytes > t.bytes)
            continue;
        float *row = malloc((size_t)(t.ne[0] ? t.ne[0] : 1) * sizeof *row);
        if (!row)
            return;
        if (ffnrt_dequantize(t.format, t.data, row_bytes, 1, t.ne[0], row) != FFNRT_OK)
            abort();
        /* and quantized again: whatever floats a hostile block decodes to
         * (NaN, Inf, huge, subnormal) is a block or a refusal, never UB */
        uint8_t *again = malloc(row_bytes ? row_bytes : 1);
        if (again) {
            ffnrt_status st = ffnrt_quantize(t.format, row, 1, t.ne[0], again, row_bytes);
            if (st != FFNRT_OK && st != FFNRT_ERROR_INVALID_ARGUMENT)
                abort();
            free(again);
        }
        free(row);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly `size` bytes, so ASan sees any read past the end. */
    uint8_t *input = malloc(size ? size : 1);
    if (!input)
        return 0;
    if (size)
        memcpy(input, data, size);
    ffnrt_gguf *g = NULL;
    ffnrt_status st = ffnrt_gguf_open_memory(input, size, &g);
    if (st != FFNRT_OK) {
        if ((st != FFNRT_ERROR_INVALID_FILE && st != FFNRT_ERROR_OUT_OF_HOST_MEMORY) || g ||
            !*ffnrt_last_error_message())
            abort();
    } else {
        walk_values(g);
        walk_tensors(g, input, size);
        for (int layer = 0; layer < 4; layer++) {
            ffnrt_gguf_ffn ffn;
            if (ffnrt_gguf_ffn_layer(g, layer, &ffn) == FFNRT_OK &&
                (ffn.up.n_dims != 2 || ffn.up.ne[0] != ffn.d_model || ffn.down.ne[1] != ffn.d_model))
                abort();
        }
        ffnrt_gguf_close(g);
    }
    free(input);
    return 0;
}
