/* GGUF files on disk, read through the platform layer (open, size, mapping)
 * by ffnrt_gguf_open, as a plain program: no Criterion, so that it also
 * runs where Criterion does not (scripts/windows-check runs it under Wine;
 * ctest runs it here, and under the sanitizers).
 *
 *   test_gguf_files SCRATCH_DIR     (created; its "gguf-files" folder is
 *                                    replaced; UTF-8 on every OS)
 *
 * A valid model (GGUF v3, Q4_1, biases) and a v2 one aligned to 64 bytes are
 * written, opened and their layer read back: sizes, formats and the first
 * weight bytes as written. Then hostile files, each refused with a message
 * naming what is wrong: empty, a bad magic, versions 1 and 4, a header cut
 * short, counts past the reader's caps, a string longer than the file, a
 * duplicate key, a tensor with five dimensions, of an unknown type, at a
 * misaligned offset, past the end of the file, with a size past 64 bits, a
 * folder. Last, 300 corruptions of the valid file (bytes set, runs zeroed,
 * cuts, drawn from a fixed seed): each one opens, or is refused with a
 * message; a crash, a hang or a refusal without a message fails (the
 * sanitizer run catches a read out of bounds). The Criterion suite
 * test_gguf checks the reader in depth; this program checks it on every
 * platform's file layer. Prints each failure and ends with
 * "N passed, N failed". */
#include "gguf_writer.h"
#include "plain_check.h"
#include "platform/platform.h"

#include <ffnrt_gguf.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[1024];

static const char *path_of(const char *name)
{
    static char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static void save(const char *name, const void *data, size_t n)
{
    gw_buf b = {(uint8_t *)data, n, n};
    if (gw_save(&b, path_of(name)) != 0) {
        printf("FAILED: writing %s: %s\n", path_of(name), strerror(errno));
        exit(1);
    }
}

/* The file refused, with a message that contains `want`. */
static void expect_refused(const char *name, const char *want)
{
    ffnrt_gguf *g = NULL;
    ffnrt_status st = ffnrt_gguf_open(path_of(name), &g);
    const char *msg = ffnrt_last_error_message();
    CHECK(st != FFNRT_OK && !g && strstr(msg, want), "%s: status %d, message \"%s\" (expected one with \"%s\")", name,
          (int)st, msg, want);
    ffnrt_gguf_close(g);
}

/* A file opened: every layer it says it has read whole, or refused with a
 * message (a corrupted size or format may make a layer unusable). */
static int read_layers(ffnrt_gguf *g)
{
    int64_t i = 0;
    for (;; i++) {
        ffnrt_gguf_ffn layer;
        ffnrt_ffn_desc desc;
        ffnrt_ffn_weights w;
        if (ffnrt_gguf_ffn_layer(g, i, &layer) != FFNRT_OK || ffnrt_gguf_ffn_desc(g, &layer, &desc, &w) != FFNRT_OK)
            return ffnrt_last_error_message()[0] != '\0';
    }
}

static void valid_models(const gw_buf *v3)
{
    save("v3.gguf", v3->p, v3->n);
    gw_buf v2 = {0};
    gw_model m2 = {2, 64, 1, 64, 32, FFNRT_WEIGHT_Q8_0, 0};
    gw_build_model(&v2, &m2);
    save("v2-align64.gguf", v2.p, v2.n);
    gw_free(&v2);

    const struct {
        const char *name;
        uint32_t version;
        uint64_t alignment;
        int64_t d, h;
        ffnrt_weight_format format;
        int bias;
    } want[2] = {{"v3.gguf", 3, 32, 32, 64, FFNRT_WEIGHT_Q4_1, 1}, {"v2-align64.gguf", 2, 64, 64, 32, FFNRT_WEIGHT_Q8_0, 0}};
    for (int i = 0; i < 2; i++) {
        ffnrt_gguf *g = NULL;
        ffnrt_status st = ffnrt_gguf_open(path_of(want[i].name), &g);
        CHECK(st == FFNRT_OK && g, "%s: %s", want[i].name, ffnrt_last_error_message());
        if (!g)
            continue;
        CHECK(ffnrt_gguf_version(g) == want[i].version && ffnrt_gguf_alignment(g) == want[i].alignment,
              "%s: version %u, alignment %llu", want[i].name, ffnrt_gguf_version(g),
              (unsigned long long)ffnrt_gguf_alignment(g));
        ffnrt_gguf_ffn layer;
        ffnrt_ffn_desc desc;
        ffnrt_ffn_weights w;
        st = ffnrt_gguf_ffn_layer(g, 0, &layer);
        if (st == FFNRT_OK)
            st = ffnrt_gguf_ffn_desc(g, &layer, &desc, &w);
        CHECK(st == FFNRT_OK, "%s layer 0: %s", want[i].name, ffnrt_last_error_message());
        if (st == FFNRT_OK) {
            CHECK(desc.kind == FFNRT_FFN_GATED && desc.glu.kind == FFNRT_SWIGLU && desc.d_model == want[i].d &&
                      desc.hidden == want[i].h && desc.bias == want[i].bias && desc.format_in == want[i].format &&
                      desc.format_out == want[i].format,
                  "%s: kind %d glu %d d %lld h %lld bias %d formats %d/%d", want[i].name, (int)desc.kind,
                  (int)desc.glu.kind, (long long)desc.d_model, (long long)desc.hidden, desc.bias, (int)desc.format_in,
                  (int)desc.format_out);
            /* The mapping holds the file's bytes where the tensor says. */
            const uint8_t *file = i == 0 ? v3->p : NULL;
            if (file)
                CHECK(layer.up.offset + layer.up.bytes <= v3->n &&
                          memcmp(layer.up.data, file + layer.up.offset, (size_t)layer.up.bytes) == 0,
                      "%s: ffn_up's mapped bytes differ from those written", want[i].name);
        }
        ffnrt_gguf_close(g);
    }
}

static void hostile_files(const gw_buf *v3)
{
    save("empty.gguf", "", 0);
    expect_refused("empty.gguf", "empty");
    uint8_t *copy = malloc(v3->n);
    if (!copy)
        exit(1);
    memcpy(copy, v3->p, v3->n);
    memcpy(copy, "GGUX", 4);
    save("magic.gguf", copy, v3->n);
    expect_refused("magic.gguf", "magic");
    free(copy);

    gw_buf b = {0};
    gw_header(&b, 1, 0, 0);
    save("version1.gguf", b.p, b.n);
    expect_refused("version1.gguf", "version");
    gw_free(&b);
    gw_header(&b, 4, 0, 0);
    save("version4.gguf", b.p, b.n);
    expect_refused("version4.gguf", "version");
    gw_free(&b);
    save("header-cut.gguf", v3->p, 12);
    expect_refused("header-cut.gguf", "GGUF");
    gw_header(&b, 3, 1ull << 40, 0);
    save("tensor-count.gguf", b.p, b.n);
    expect_refused("tensor-count.gguf", "tensor");
    gw_free(&b);
    gw_header(&b, 3, 0, (1ull << 20) + 1);
    save("key-count.gguf", b.p, b.n);
    expect_refused("key-count.gguf", "2^20");
    gw_free(&b);
    gw_header(&b, 3, 0, 1);
    gw_u64(&b, 1ull << 62); /* a key's length */
    gw_raw(&b, "abc", 3);
    save("long-string.gguf", b.p, b.n);
    expect_refused("long-string.gguf", "GGUF");
    gw_free(&b);
    gw_header(&b, 3, 0, 2);
    gw_kv_u32(&b, "same", 1);
    gw_kv_u32(&b, "same", 2);
    save("duplicate-key.gguf", b.p, b.n);
    expect_refused("duplicate-key.gguf", "twice");
    gw_free(&b);

    /* One tensor each, 32 f32 (128 bytes) of data after it unless said. */
    const struct {
        const char *name, *want;
        uint32_t dims, type;
        int64_t ne[5];
        uint64_t offset;
    } tensors[] = {
        {"five-dims.gguf", "dimension", 5, 0, {2, 2, 2, 2, 2}, 0},
        {"unknown-type.gguf", "type", 1, 99, {32}, 0},
        {"misaligned.gguf", "align", 1, 0, {32}, 4},
        {"past-end.gguf", "past", 1, 0, {32}, 1u << 20},
        {"size-overflow.gguf", "2^63", 2, 0, {1ll << 40, 1ll << 40}, 0},
    };
    for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++) {
        gw_header(&b, 3, 1, 0);
        gw_string(&b, "t");
        gw_u32(&b, tensors[i].dims);
        for (uint32_t d = 0; d < tensors[i].dims; d++)
            gw_u64(&b, (uint64_t)tensors[i].ne[d]);
        gw_u32(&b, tensors[i].type);
        gw_u64(&b, tensors[i].offset);
        gw_align(&b, 32);
        for (int k = 0; k < 32; k++)
            gw_u32(&b, 0x3f800000u);
        save(tensors[i].name, b.p, b.n);
        expect_refused(tensors[i].name, tensors[i].want);
        gw_free(&b);
    }
    expect_refused(".", "directory");
}

/* Corruptions of the valid file: each opens (and its layers read or are
 * refused with a message) or is refused with a message. */
static void corruptions(const gw_buf *v3)
{
    uint8_t *copy = malloc(v3->n);
    if (!copy)
        exit(1);
    uint32_t seed = 0x9e3779b9u;
    int opened = 0, refused = 0, silent = 0;
    for (int i = 0; i < 300; i++) {
        memcpy(copy, v3->p, v3->n);
        size_t n = v3->n;
        seed = seed * 1664525u + 1013904223u;
        size_t at = (seed >> 8) % v3->n;
        switch (i % 3) {
        case 0: /* a few bytes set (most of the header and infos are in the first 1.5 KB) */
            for (int k = 0; k < 1 + i % 4; k++)
                copy[(at + (size_t)k * 7) % v3->n] = (uint8_t)(seed >> (k * 8));
            break;
        case 1: /* a run zeroed */
            memset(copy + at, 0, (v3->n - at) < 16 ? v3->n - at : 16);
            break;
        default: /* cut */
            n = at;
        }
        save("corrupt.gguf", copy, n);
        ffnrt_gguf *g = NULL;
        if (ffnrt_gguf_open(path_of("corrupt.gguf"), &g) == FFNRT_OK) {
            opened++;
            silent += !read_layers(g);
            ffnrt_gguf_close(g);
        } else {
            refused++;
            silent += ffnrt_last_error_message()[0] == '\0';
        }
    }
    free(copy);
    CHECK(silent == 0, "%d of 300 corrupted files failed without a message", silent);
    CHECK(refused > 50 && opened + refused == 300, "%d refused, %d opened", refused, opened);
    printf("test_gguf_files: 300 corrupted files: %d refused with a message, %d opened (their layers read or "
           "refused with a message)\n",
           refused, opened);
}

int main(int argc, char **argv)
{
    /* SCRATCH_DIR as UTF-8 (scripts/windows-check gives one named beyond
     * ASCII: Windows' char argv is in the ANSI code page). */
    CHECK(ffnrt_arguments_utf8(&argc, &argv) == 0, "the arguments as UTF-8: %s", strerror(errno));
    if (argc != 2) {
        fprintf(stderr, "usage: test_gguf_files SCRATCH_DIR\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s/gguf-files", argv[1]);
    if (ffnrt_make_dirs(dir) != 0) {
        printf("FAILED: make_dirs %s: %s\n", dir, strerror(errno));
        return 1;
    }
    gw_buf v3 = {0};
    gw_model m3 = {3, 0, 2, 32, 64, FFNRT_WEIGHT_Q4_1, 1};
    gw_build_model(&v3, &m3);
    valid_models(&v3);
    hostile_files(&v3);
    corruptions(&v3);
    gw_free(&v3);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
