/* Writes the seed corpus of fuzz_gguf into the directory given:
 *   cc -I include -I tests fuzz/make_gguf_corpus.c tests/gguf_writer.c \
 *      build/libffnrt.a -lstdc++ -lm -ldl -lpthread -o /tmp/mgc
 *   /tmp/mgc fuzz/corpus/gguf
 * Small valid models (each weight format, v2 and v3, an alignment of 64,
 * biases) and a few broken files. */
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
    gw_buf b = {0};
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
