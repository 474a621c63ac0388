/* Writes the seed corpus of fuzz_cache_reader into the directory given:
 *   cc -I src -I include fuzz/make_corpus.c src/core/disk_cache.c src/core/sha256.c -o /tmp/mc
 *   /tmp/mc fuzz/corpus/cache_reader */
#include "core/disk_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_KEY "ffnrt fuzz\nbackend test\ndevice fuzzer\nkernel a|b|64|\nsource 0:0\n"

static void save(const char *dir, const char *name, const void *b, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, n, f) != n) {
        perror(path);
        exit(1);
    }
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    const char *dir = argv[1];
    const uint32_t spirv[] = {0x07230203u, 0x00010300u, 0x0008000bu, 16u, 0u};
    const unsigned char pipeline[32] = {32, 0, 0, 0, 1, 0, 0, 0, 0x05, 0, 1, 0};
    size_t n;
    unsigned char *b;
    b = ffnrt_disk_cache_format(FUZZ_KEY, FFNRT_CACHE_SPIRV, spirv, sizeof spirv, &n);
    save(dir, "valid-spirv", b, n);
    free(b);
    b = ffnrt_disk_cache_format(FUZZ_KEY, FFNRT_CACHE_PIPELINE_CACHE, pipeline, sizeof pipeline, &n);
    save(dir, "valid-pipeline-cache", b, n);
    free(b);
    b = ffnrt_disk_cache_format(FUZZ_KEY, FFNRT_CACHE_TUNING, "", 0, &n);
    save(dir, "valid-empty-tuning", b, n);
    free(b);
    b = ffnrt_disk_cache_format("k", FFNRT_CACHE_CL_BINARY, "binary", 6, &n);
    save(dir, "valid-short-key-cl-binary", b, n);
    save(dir, "truncated", b, n - 3);
    b[n - 1] ^= 1;
    save(dir, "flipped-payload", b, n);
    free(b);
    b = ffnrt_disk_cache_format_version(FUZZ_KEY, FFNRT_CACHE_CALIBRATION, "1.5", 3,
                                        ffnrt_disk_cache_version() + 1, &n);
    save(dir, "other-version", b, n);
    free(b);
    save(dir, "garbage", "this is not a cache file at all, just text\n", 43);
    save(dir, "header-only", "FFNRTKC", 8);
    return 0;
}
