/* Writes the seed corpus of fuzz_gguf into the directory given:
 *   cc -I include -I tests fuzz/make_gguf_corpus.c tests/gguf_writer.c \
 *      build/libffnrt.a -lstdc++ -lm -ldl -lpthread -o /tmp/mgc
 *   /tmp/mgc fuzz/corpus/gguf
 * Small valid models (each weight format, v2 and v3, an alignment of 64,
 * biases, a row of each K-quant) and a few broken files. */
#include "gguf_writer.h"

#include <stdio.h>
#include <stdlib.h>

static void save(const char *dir, const char *name, const gw_buf *b)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (gw_save(b, path) != 0) {
        perror(path);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    const char *dir = argv[1];
    const struct {
        const char *name;
        gw_model m;
    } models[] = {
        {"q4_1-v3", {3, 0, 1, 32, 32, FFNRT_WEIGHT_Q4_1, 0}},
        {"q4_0-v2-align64", {2, 64, 1, 32, 32, FFNRT_WEIGHT_Q4_0, 0}},
        {"q8_0-bias", {3, 0, 1, 32, 32, FFNRT_WEIGHT_Q8_0, 1}},
        {"f16-two-layers", {3, 0, 2, 16, 16, FFNRT_WEIGHT_F16, 0}},
    };
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        gw_buf b = {0};
        gw_build_model(&b, &models[i].m);
        save(dir, models[i].name, &b);
        if (i == 0) {
            b.n -= 100;
            save(dir, "truncated", &b);
        }
        gw_free(&b);
    }
    /* one row of each K-quant (256 weights) */
    gw_buf b = {0};
    const ffnrt_weight_format kq[2] = {FFNRT_WEIGHT_Q4_K, FFNRT_WEIGHT_Q6_K};
    const int64_t ne[2] = {256, 1};
    uint8_t q[2][210];
    float x[256];
    for (int i = 0; i < 256; i++)
        x[i] = (float)((i * 37) % 97 - 48) / 64.0f;
    gw_header(&b, 3, 2, 0);
    gw_tensor_info(&b, "q4_k", 2, ne, gw_ggml_type(kq[0]), 0);
    gw_tensor_info(&b, "q6_k", 2, ne, gw_ggml_type(kq[1]), 160);
    gw_align(&b, 32);
    for (int k = 0; k < 2; k++) {
        size_t bytes = k ? 210 : 144;
        if (ffnrt_quantize(kq[k], x, 1, 256, q[k], bytes) != FFNRT_OK)
            return 1;
        gw_raw(&b, q[k], bytes);
        gw_align(&b, 32);
    }
    save(dir, "k-quants", &b);
    gw_free(&b);
    gw_header(&b, 3, 0, 2);
    gw_kv_u32(&b, "same", 1);
    gw_kv_u32(&b, "same", 2);
    save(dir, "duplicate-key", &b);
    gw_free(&b);
    gw_header(&b, 3, 0, 1);
    gw_kv_array(&b, "tokens", 8, 2);
    gw_string(&b, "a");
    gw_string(&b, "bc");
    save(dir, "string-array", &b);
    gw_free(&b);
    return 0;
}
