/* The GGUF reader on files this test writes (tests/gguf_writer.c): valid
 * v2 and v3 models read back whole (metadata, tensor infos, data, a
 * layer's FFN tensors), and hostile files, each refused with
 * FFNRT_ERROR_INVALID_FILE and a message that says what: every prefix of a
 * valid file, huge counts and lengths, bad types, shapes, offsets and
 * names, and random corruption (never a crash; the sanitizer build checks
 * that nothing is read out of bounds). Host only. */
#include "gguf_writer.h"
#include "reference_quant.h"

#include <criterion/criterion.h>
#include <ffnrt_gguf.h>
#include <ffnrt_lab.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <sys/stat.h> /* mkfifo */
#endif

static const gw_model small = {3, 0, 2, 64, 96, FFNRT_WEIGHT_Q4_1, 0};

static ffnrt_gguf *open_ok(const gw_buf *b)
{
    ffnrt_gguf *g = NULL;
    ffnrt_status st = ffnrt_gguf_open_memory(b->p, b->n, &g);
    cr_assert_eq(st, FFNRT_OK, "open: %s", ffnrt_last_error_message());
    return g;
}

/* Opens a copy of exactly n bytes (the writer's buffer has spare
 * capacity, where a read past the end would go unseen by ASan). */
static ffnrt_status open_exact(const uint8_t *p, size_t n, ffnrt_gguf **g)
{
    uint8_t *copy = malloc(n ? n : 1);
    cr_assert(copy);
    if (n)
        memcpy(copy, p, n);
    ffnrt_status st = ffnrt_gguf_open_memory(copy, n, g);
    if (st == FFNRT_OK)
        ffnrt_gguf_close(*g);
    free(copy);
    return st;
}

/* The file is refused as invalid, with `expect` in the message. */
static void refused(const gw_buf *b, const char *expect, const char *what)
{
    ffnrt_gguf *g = (ffnrt_gguf *)(uintptr_t)1;
    ffnrt_status st = open_exact(b->p, b->n, &g);
    cr_assert_eq(st, FFNRT_ERROR_INVALID_FILE, "%s: status %s (%s)", what, ffnrt_status_string(st),
                 ffnrt_last_error_message());
    cr_assert_null(g, "%s: the handle is not set on failure", what);
    cr_assert(strstr(ffnrt_last_error_message(), expect), "%s: message \"%s\" lacks \"%s\"", what,
              ffnrt_last_error_message(), expect);
}

/* -------------------------------------------------------- valid files */

static void check_model(ffnrt_gguf *g, const gw_model *m)
{
    cr_assert_eq(ffnrt_gguf_version(g), m->version);
    cr_assert_eq(ffnrt_gguf_alignment(g), m->alignment ? m->alignment : 32u);
    cr_assert_eq(ffnrt_gguf_data_offset(g) % ffnrt_gguf_alignment(g), 0u);
    cr_assert_eq(ffnrt_gguf_kv_count(g), m->alignment ? 10u : 9u);
    cr_assert_eq(ffnrt_gguf_tensor_count(g), (size_t)m->layers * 4);

    const char *s;
    size_t len;
    cr_assert_eq(ffnrt_gguf_get_string(g, "general.architecture", &s, &len), FFNRT_OK);
    cr_assert(len == 5 && memcmp(s, "llama", 5) == 0);
    cr_assert_eq(ffnrt_gguf_get_string(g, "general.name", &s, &len), FFNRT_OK);
    cr_assert(len == 5 && memcmp(s, "a\0b c", 5) == 0, "strings are read by length, NULs and all");
    uint64_t u;
    int64_t i;
    double f;
    cr_assert_eq(ffnrt_gguf_get_uint(g, "llama.block_count", &u), FFNRT_OK);
    cr_assert_eq(u, (uint64_t)m->layers);
    cr_assert_eq(ffnrt_gguf_get_int(g, "llama.feed_forward_length", &i), FFNRT_OK);
    cr_assert_eq(i, m->hidden);
    cr_assert_eq(ffnrt_gguf_get_float(g, "llama.rope.freq_base", &f), FFNRT_OK);
    cr_assert_eq(f, 100000.0);
    cr_assert_eq(ffnrt_gguf_get_uint(g, "tokenizer.ggml.add_bos_token", &u), FFNRT_OK);
    cr_assert_eq(u, 1u);
    ffnrt_gguf_type et;
    uint64_t count;
    const void *data;
    size_t bytes;
    cr_assert_eq(ffnrt_gguf_get_array(g, "tokenizer.ggml.token_type", &et, &count, &data, &bytes), FFNRT_OK);
    cr_assert(et == FFNRT_GGUF_INT32 && count == 3 && bytes == 12);
    int32_t second;
    memcpy(&second, (const uint8_t *)data + 4, 4);
    cr_assert_eq(second, -2);
    cr_assert_eq(ffnrt_gguf_get_array(g, "tokenizer.ggml.tokens", &et, &count, &data, &bytes), FFNRT_OK);
    cr_assert(et == FFNRT_GGUF_STRING && count == 3 && bytes == 3 * 8 + 3 + 0 + 3);
    int64_t k = ffnrt_gguf_find_key(g, "tokenizer.ggml.tokens");
    ffnrt_gguf_kv_info kv;
    cr_assert(k >= 0 && ffnrt_gguf_kv_at(g, (size_t)k, &kv) == FFNRT_OK);
    cr_assert(kv.type == FFNRT_GGUF_ARRAY && kv.element_type == FFNRT_GGUF_STRING && kv.count == 3);
    cr_assert_str_eq(kv.key, "tokenizer.ggml.tokens");

    for (int l = 0; l < m->layers; l++) {
        ffnrt_gguf_ffn ffn;
        cr_assert_eq(ffnrt_gguf_ffn_layer(g, l, &ffn), FFNRT_OK, "layer %d: %s", l, ffnrt_last_error_message());
        cr_assert(ffn.gated && !ffn.bias && ffn.d_model == m->d_model && ffn.hidden == m->hidden);
        const ffnrt_gguf_tensor_info *t[3] = {&ffn.gate, &ffn.up, &ffn.down};
        for (int w = 0; w < 3; w++) {
            cr_assert_eq(t[w]->format, m->format);
            cr_assert_eq(t[w]->ggml_type, gw_ggml_type(m->format));
            cr_assert_eq(t[w]->offset % ffnrt_gguf_alignment(g), 0u);
            int64_t rows = t[w]->ne[1], cols = t[w]->ne[0];
            float *x = malloc((size_t)(rows * cols) * sizeof *x), *y = malloc((size_t)(rows * cols) * sizeof *y);
            size_t need = 0;
            cr_assert(x && y && ffnrt_weight_bytes(m->format, rows, cols, &need) == FFNRT_OK);
            cr_assert_eq(t[w]->bytes, need);
            /* the data is the writer's quantization of the source weights */
            for (int64_t r = 0; r < rows; r++)
                for (int64_t c = 0; c < cols; c++)
                    x[r * cols + c] = gw_model_weight(l, w, r, c);
            uint8_t *q = malloc(need);
            cr_assert(q && ffnrt_quantize(m->format, x, rows, cols, q, need) == FFNRT_OK);
            cr_assert_eq(memcmp(q, t[w]->data, need), 0, "layer %d matrix %d: data differs", l, w);
            cr_assert_eq(ffnrt_dequantize(t[w]->format, t[w]->data, t[w]->bytes, rows, cols, y), FFNRT_OK);
            free(q);
            free(x);
            free(y);
        }
    }
}

Test(gguf, v3_and_v2_models_read_back)
{
    const ffnrt_weight_format formats[] = {FFNRT_WEIGHT_Q4_1, FFNRT_WEIGHT_Q4_0, FFNRT_WEIGHT_Q8_0,
                                           FFNRT_WEIGHT_F16, FFNRT_WEIGHT_F32};
    for (size_t fi = 0; fi < sizeof formats / sizeof formats[0]; fi++)
        for (uint32_t version = 2; version <= 3; version++) {
            gw_model m = small;
            m.version = version;
            m.format = formats[fi];
            m.alignment = version == 2 ? 64 : 0;
            gw_buf b = {0};
            gw_build_model(&b, &m);
            ffnrt_gguf *g = open_ok(&b);
            check_model(g, &m);
            ffnrt_gguf_close(g);
            gw_free(&b);
        }
}

Test(gguf, a_file_is_mapped_and_read)
{
    gw_buf b = {0};
    gw_build_model(&b, &small);
    char dir[1024], path[1100];
    cr_assert_eq(ffnrt_lab_make_temp_dir("ffnrt-gguf-", dir, sizeof dir), 0);
    snprintf(path, sizeof path, "%s/model.gguf", dir);
    cr_assert_eq(gw_save(&b, path), 0);
    ffnrt_gguf *g = NULL;
    cr_assert_eq(ffnrt_gguf_open(path, &g), FFNRT_OK, "%s", ffnrt_last_error_message());
    check_model(g, &small);
    ffnrt_gguf_close(g);
    /* cut short on disk, then empty: refused, and the message names the file */
    gw_buf cut = b;
    cut.n = b.n - 40;
    cr_assert_eq(gw_save(&cut, path), 0);
    cr_assert_eq(ffnrt_gguf_open(path, &g), FFNRT_ERROR_INVALID_FILE);
    cr_assert(strstr(ffnrt_last_error_message(), path), "%s", ffnrt_last_error_message());
    cut.n = 0;
    cr_assert_eq(gw_save(&cut, path), 0);
    cr_assert_eq(ffnrt_gguf_open(path, &g), FFNRT_ERROR_INVALID_FILE);
    cr_assert_eq(ffnrt_lab_remove_tree(dir), 0);
    cr_assert_eq(ffnrt_gguf_open(path, &g), FFNRT_ERROR_INVALID_ARGUMENT, "a missing file");
    cr_assert(strstr(ffnrt_last_error_message(), "No such file"), "%s", ffnrt_last_error_message());
    cr_assert_eq(ffnrt_gguf_open(NULL, &g), FFNRT_ERROR_INVALID_ARGUMENT);
    gw_free(&b);
}

/* What is not a regular file is refused at once, the message naming the
 * path and what it is: a directory; on POSIX a FIFO with no writer (an
 * open without O_NONBLOCK waits for one for ever: the timeout fails the
 * test then) and a character device. */
Test(gguf, not_a_regular_file_is_refused_without_blocking, .timeout = 20)
{
    char dir[1024];
    cr_assert_eq(ffnrt_lab_make_temp_dir("ffnrt-gguf-", dir, sizeof dir), 0);
#ifndef _WIN32
    char fifo[1100];
    snprintf(fifo, sizeof fifo, "%s/f.gguf", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
#endif
    const struct {
        const char *path, *kind;
    } cases[] = {{dir, "is a directory, not a regular file"},
#ifndef _WIN32
                 {fifo, "is a FIFO (named pipe), not a regular file"},
                 {"/dev/null", "is a character device, not a regular file"}
#endif
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ffnrt_gguf *g = (ffnrt_gguf *)(uintptr_t)1;
        cr_assert_eq(ffnrt_gguf_open(cases[i].path, &g), FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s", cases[i].path,
                     ffnrt_last_error_message());
        cr_assert_null(g);
        const char *m = ffnrt_last_error_message();
        cr_assert(strstr(m, cases[i].path) && strstr(m, cases[i].kind), "\"%s\" lacks %s and \"%s\"", m,
                  cases[i].path, cases[i].kind);
    }
    cr_assert_eq(ffnrt_lab_remove_tree(dir), 0);
}

Test(gguf, biases_and_layer_errors)
{
    gw_model m = small;
    m.bias = 1;
    m.format = FFNRT_WEIGHT_Q8_0;
    gw_buf b = {0};
    gw_build_model(&b, &m);
    ffnrt_gguf *g = open_ok(&b);
    ffnrt_gguf_ffn ffn;
    cr_assert_eq(ffnrt_gguf_ffn_layer(g, 1, &ffn), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_assert(ffn.bias && ffn.up_bias.ne[0] == m.hidden && ffn.down_bias.ne[0] == m.d_model);
    cr_assert_eq(ffn.gate_bias.format, FFNRT_WEIGHT_F32);
    /* the reference runs over this layer, biases included */
    double x[64], y[64];
    for (int i = 0; i < 64; i++)
        x[i] = sin(0.1 * i);
    cr_assert_eq(ref_gguf_swiglu(&ffn, x, y), 0);
    cr_assert(isfinite(y[0]));
    cr_assert_eq(ffnrt_gguf_ffn_layer(g, 2, &ffn), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(ffnrt_last_error_message(), "(block_count: 2)"), "%s", ffnrt_last_error_message());
    cr_assert_eq(ffnrt_gguf_ffn_layer(g, -1, &ffn), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(ffnrt_gguf_ffn_layer(NULL, 0, &ffn), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(ffnrt_gguf_find_tensor(g, "blk.0.ffn_up.weight") >= 0, 1);
    cr_assert_eq(ffnrt_gguf_find_tensor(g, "blk.0.ffn_up.weigh"), -1);
    cr_assert_eq(ffnrt_gguf_find_key(g, "nope"), -1);
    ffnrt_gguf_close(g);
    gw_free(&b);
}

/* A one-layer file whose tensors the caller describes: for checks of
 * ffnrt_gguf_ffn_layer on shapes, types and partial biases. */
typedef struct spec {
    const char *name;
    uint32_t dims, type;
    int64_t ne0, ne1;
} spec;

static const char *layer_arch = "llama"; /* what write_layer writes as general.architecture */
static size_t layer_arch_len;             /* its length, if not strlen's (a NUL inside) */

static void write_layer(gw_buf *b, const spec *t, int n, uint32_t feed_forward_length)
{
    gw_header(b, 3, (uint64_t)n, 2);
    gw_string(b, "general.architecture");
    gw_u32(b, 8); /* string */
    gw_u64(b, layer_arch_len ? layer_arch_len : strlen(layer_arch));
    gw_raw(b, layer_arch, layer_arch_len ? layer_arch_len : strlen(layer_arch));
    gw_kv_u32(b, "llama.feed_forward_length", feed_forward_length);
    uint64_t offset = 0, sizes[8];
    for (int i = 0; i < n; i++) {
        int64_t ne[2] = {t[i].ne0, t[i].ne1};
        uint32_t elements = 1, bytes = 4;
        ffnrt_weight_format f;
        if (t[i].type == 6) /* Q5_0: not an ffnrt format */
            elements = 32, bytes = 22;
        else
            for (f = 0; f < FFNRT_WEIGHT_FORMAT_COUNT; f++)
                if (gw_ggml_type(f) == t[i].type)
                    ffnrt_weight_format_block(f, &elements, &bytes);
        sizes[i] = (uint64_t)(t[i].ne0 / elements) * bytes * (uint64_t)(t[i].dims > 1 ? t[i].ne1 : 1);
        gw_tensor_info(b, t[i].name, t[i].dims, ne, t[i].type, offset);
        offset += (sizes[i] + 31) / 32 * 32;
    }
    gw_align(b, 32);
    for (int i = 0; i < n; i++) {
        for (uint64_t j = 0; j < sizes[i]; j++)
            gw_u8(b, 0);
        gw_align(b, 32);
    }
}

static void layer_refused(const spec *t, int n, uint32_t ffl, ffnrt_status want, const char *expect)
{
    gw_buf b = {0};
    write_layer(&b, t, n, ffl);
    ffnrt_gguf *g = open_ok(&b);
    ffnrt_gguf_ffn ffn;
    cr_assert_eq(ffnrt_gguf_ffn_layer(g, 0, &ffn), want, "%s: %s", expect, ffnrt_last_error_message());
    cr_assert(strstr(ffnrt_last_error_message(), expect), "message \"%s\" lacks \"%s\"", ffnrt_last_error_message(),
              expect);
    ffnrt_gguf_close(g);
    gw_free(&b);
}

Test(gguf, layer_shapes_types_and_biases_are_checked)
{
    const spec good[3] = {{"blk.0.ffn_up.weight", 2, 8, 64, 96},
                          {"blk.0.ffn_down.weight", 2, 8, 96, 64},
                          {"blk.0.ffn_gate.weight", 2, 8, 64, 96}};
    gw_buf b = {0};
    ffnrt_gguf_ffn ffn;
    for (int n = 2; n <= 3; n++) { /* dense (up, down), then gated */
        write_layer(&b, good, n, 96);
        ffnrt_gguf *g = open_ok(&b);
        cr_assert_eq(ffnrt_gguf_ffn_layer(g, 0, &ffn), FFNRT_OK, "%s", ffnrt_last_error_message());
        cr_assert(ffn.gated == (n == 3) && ffn.d_model == 64 && ffn.hidden == 96 && ffn.up.format == FFNRT_WEIGHT_Q8_0);
        ffnrt_gguf_close(g);
        gw_free(&b);
    }
    spec t[4];
    memcpy(t, good, sizeof good);
    layer_refused(t, 3, 100, FFNRT_ERROR_SHAPE_MISMATCH, "feed_forward_length is 100");
    t[1].ne0 = 64, t[1].ne1 = 96; /* down stored like up */
    layer_refused(t, 3, 96, FFNRT_ERROR_SHAPE_MISMATCH, "blk.0.ffn_down.weight has ne = {64, 96");
    memcpy(t, good, sizeof good);
    t[2].ne1 = 32;
    layer_refused(t, 3, 96, FFNRT_ERROR_SHAPE_MISMATCH, "blk.0.ffn_gate.weight");
    memcpy(t, good, sizeof good);
    t[2].type = 6;
    layer_refused(t, 3, 96, FFNRT_ERROR_UNSUPPORTED, "blk.0.ffn_gate.weight is Q5_0");
    memcpy(t, good, sizeof good);
    t[3] = (spec){"blk.0.ffn_up.bias", 1, 0, 96, 1};
    layer_refused(t, 4, 96, FFNRT_ERROR_UNSUPPORTED, "biases on 1 of its 3 projections");
    memcpy(t, good, sizeof good);
    layer_refused(t + 1, 2, 96, FFNRT_ERROR_INVALID_ARGUMENT, "no blk.0.ffn_up.weight");
    layer_refused(t, 1, 96, FFNRT_ERROR_INVALID_ARGUMENT, "no blk.0.ffn_down.weight");
}

/* Sizes an ffnrt layer cannot have, refused by name before anything is
 * sized from them: zero (a 0-byte F32 tensor passed every check, then a
 * tool allocated by the other size, up to 2^40 elements), past 2^32 - 1,
 * and an ffn_up that is not 2-D (its ne is 1 past n_dims: "d_model 1"). */
Test(gguf, layer_sizes_an_ffnrt_layer_cannot_have)
{
    const int64_t big = (int64_t)1 << 40, past = (int64_t)1 << 32;
    const struct {
        spec up, down;
        ffnrt_status want;
        const char *expect;
    } cases[] = {
        {{"blk.0.ffn_up.weight", 2, 0, 0, big}, {"blk.0.ffn_down.weight", 2, 0, big, 0}, FFNRT_ERROR_INVALID_ARGUMENT,
         "blk.0.ffn_up.weight has d_model (ne[0]) 0; an ffnrt layer's d_model and hidden are 1 to 4294967295"},
        {{"blk.0.ffn_up.weight", 2, 0, big, 0}, {"blk.0.ffn_down.weight", 2, 0, 0, big}, FFNRT_ERROR_INVALID_ARGUMENT,
         "blk.0.ffn_up.weight has d_model (ne[0]) 1099511627776;"},
        {{"blk.0.ffn_up.weight", 2, 0, 64, 0}, {"blk.0.ffn_down.weight", 2, 0, 0, 64}, FFNRT_ERROR_INVALID_ARGUMENT,
         "blk.0.ffn_up.weight has hidden (ne[1]) 0;"},
        {{"blk.0.ffn_up.weight", 2, 0, past, 0}, {"blk.0.ffn_down.weight", 2, 0, 0, past},
         FFNRT_ERROR_INVALID_ARGUMENT, "has d_model (ne[0]) 4294967296; an ffnrt layer's d_model and hidden are 1 to "
                                       "4294967295 (2^32 - 1)"},
        {{"blk.0.ffn_up.weight", 0, 0, 1, 1}, {"blk.0.ffn_down.weight", 2, 0, 1, 1}, FFNRT_ERROR_SHAPE_MISMATCH,
         "blk.0.ffn_up.weight has 0 dimensions (ne = {1, 1, 1, 1}); 2 expected"},
        {{"blk.0.ffn_up.weight", 1, 0, 64, 1}, {"blk.0.ffn_down.weight", 2, 0, 1, 64}, FFNRT_ERROR_SHAPE_MISMATCH,
         "blk.0.ffn_up.weight has 1 dimension (ne = {64, 1, 1, 1}); 2 expected"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const spec t[2] = {cases[i].up, cases[i].down};
        layer_refused(t, 2, 96, cases[i].want, cases[i].expect);
        cr_assert_null(strstr(ffnrt_last_error_message(), "d_model 1,"), "%s", ffnrt_last_error_message());
    }
    /* at the limit: 2^32 - 1 columns of an empty F32 matrix pass the size check (and fail the next one) */
    const spec edge[2] = {{"blk.0.ffn_up.weight", 2, 0, past - 1, 0}, {"blk.0.ffn_down.weight", 2, 0, 0, past - 1}};
    layer_refused(edge, 2, 96, FFNRT_ERROR_INVALID_ARGUMENT, "has hidden (ne[1]) 0;");

    /* ffnrt_gguf_ffn_desc on a layer filled by hand says the same */
    gw_buf b = {0};
    const spec good[2] = {{"blk.0.ffn_up.weight", 2, 8, 64, 96}, {"blk.0.ffn_down.weight", 2, 8, 96, 64}};
    layer_arch = "gpt2";
    write_layer(&b, good, 2, 96);
    layer_arch = "llama";
    ffnrt_gguf *g = open_ok(&b);
    ffnrt_gguf_ffn ffn;
    ffnrt_ffn_desc d;
    ffnrt_ffn_weights w;
    cr_assert_eq(ffnrt_gguf_ffn_layer(g, 0, &ffn), FFNRT_OK, "%s", ffnrt_last_error_message());
    const int64_t wrong[3][2] = {{0, 96}, {64, 0}, {past, 96}};
    for (int i = 0; i < 3; i++) {
        ffnrt_gguf_ffn bad = ffn;
        bad.d_model = wrong[i][0], bad.hidden = wrong[i][1];
        cr_assert_eq(ffnrt_gguf_ffn_desc(g, &bad, &d, &w), FFNRT_ERROR_INVALID_ARGUMENT);
        char expect[160];
        snprintf(expect, sizeof expect, "the layer of blk.0.ffn_up.weight has %s %lld", i == 1 ? "hidden" : "d_model",
                 (long long)(i == 1 ? 0 : wrong[i][0]));
        cr_assert(strstr(ffnrt_last_error_message(), expect), "\"%s\" lacks \"%s\"", ffnrt_last_error_message(),
                  expect);
    }
    cr_assert_eq(ffnrt_gguf_ffn_desc(g, &ffn, &d, &w), FFNRT_OK, "%s", ffnrt_last_error_message());
    ffnrt_gguf_close(g);
    gw_free(&b);
}

Test(gguf, values_of_the_wrong_type_or_absent)
{
    gw_buf b = {0};
    gw_build_model(&b, &small);
    ffnrt_gguf *g = open_ok(&b);
    uint64_t u;
    int64_t i;
    double f;
    const char *s;
    size_t len;
    cr_assert_eq(ffnrt_gguf_get_uint(g, "general.architecture", &u), FFNRT_ERROR_DTYPE_MISMATCH);
    cr_assert(strstr(ffnrt_last_error_message(), "is string, not an integer"), "%s", ffnrt_last_error_message());
    cr_assert_eq(ffnrt_gguf_get_string(g, "llama.block_count", &s, &len), FFNRT_ERROR_DTYPE_MISMATCH);
    cr_assert_eq(ffnrt_gguf_get_float(g, "llama.block_count", &f), FFNRT_ERROR_DTYPE_MISMATCH);
    cr_assert_eq(ffnrt_gguf_get_int(g, "tokenizer.ggml.tokens", &i), FFNRT_ERROR_DTYPE_MISMATCH);
    cr_assert(strstr(ffnrt_last_error_message(), "array of string"), "%s", ffnrt_last_error_message());
    cr_assert_eq(ffnrt_gguf_get_uint(g, "missing.key", &u), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(ffnrt_last_error_message(), "no key \"missing.key\""), "%s", ffnrt_last_error_message());
    cr_assert_eq(ffnrt_gguf_get_uint(g, NULL, &u), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(ffnrt_gguf_get_uint(g, "llama.block_count", NULL), FFNRT_ERROR_INVALID_ARGUMENT);
    ffnrt_gguf_kv_info kv;
    cr_assert_eq(ffnrt_gguf_kv_at(g, 99, &kv), FFNRT_ERROR_INVALID_ARGUMENT);
    ffnrt_gguf_tensor_info t;
    cr_assert_eq(ffnrt_gguf_tensor_at(g, 99, &t), FFNRT_ERROR_INVALID_ARGUMENT);
    ffnrt_gguf_close(g);
    gw_free(&b);
    /* signed and unsigned limits */
    gw_header(&b, 3, 0, 3);
    gw_string(&b, "neg");
    gw_u32(&b, 5); /* int32 */
    gw_u32(&b, (uint32_t)-7);
    gw_string(&b, "big");
    gw_u32(&b, 10); /* uint64 */
    gw_u64(&b, UINT64_MAX);
    gw_string(&b, "min");
    gw_u32(&b, 11); /* int64 */
    gw_u64(&b, (uint64_t)1 << 63);
    g = open_ok(&b);
    cr_assert_eq(ffnrt_gguf_get_int(g, "neg", &i), FFNRT_OK);
    cr_assert_eq(i, -7);
    cr_assert_eq(ffnrt_gguf_get_uint(g, "neg", &u), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(ffnrt_gguf_get_uint(g, "big", &u), FFNRT_OK);
    cr_assert_eq(u, UINT64_MAX);
    cr_assert_eq(ffnrt_gguf_get_int(g, "big", &i), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(ffnrt_gguf_get_int(g, "min", &i), FFNRT_OK);
    cr_assert_eq(i, INT64_MIN);
    cr_assert_eq(ffnrt_gguf_tensor_count(g), 0u);
    ffnrt_gguf_close(g);
    gw_free(&b);
}

/* ------------------------------------------------------- hostile files */

Test(gguf, every_prefix_of_a_valid_file_is_refused)
{
    gw_buf b = {0};
    gw_build_model(&b, &small);
    for (size_t n = 0; n < b.n; n++) {
        ffnrt_gguf *g = NULL;
        ffnrt_status st = open_exact(b.p, n, &g);
        cr_assert_eq(st, FFNRT_ERROR_INVALID_FILE, "prefix of %zu of %zu bytes: %s", n, b.n, ffnrt_last_error_message());
    }
    gw_free(&b);
}

Test(gguf, headers)
{
    gw_buf b = {0};
    refused(&b, "needs 4 bytes", "empty");
    gw_raw(&b, "GGML", 4);
    gw_u32(&b, 3);
    gw_u64(&b, 0);
    gw_u64(&b, 0);
    refused(&b, "not a GGUF file", "wrong magic");
    const struct {
        uint32_t version;
        const char *expect;
    } versions[] = {{0, "version 0"}, {1, "v1's 32-bit counts"}, {4, "versions 2 and 3"}, {0x03000000, "big-endian"}};
    for (size_t i = 0; i < 4; i++) {
        gw_free(&b);
        gw_header(&b, versions[i].version, 0, 0);
        refused(&b, versions[i].expect, versions[i].expect);
    }
    gw_free(&b);
    gw_header(&b, 3, 0, 0);
    ffnrt_gguf *g = open_ok(&b);
    cr_assert_eq(ffnrt_gguf_kv_count(g), 0u);
    ffnrt_gguf_close(g);
    /* past ffnrt's cap, the message says the cap; within it, the bytes */
    const uint64_t counts[][2] = {{UINT64_MAX, 0}, {0, UINT64_MAX}, {(uint64_t)1 << 62, 0}, {0, 1}, {1, 0}};
    for (size_t i = 0; i < 5; i++) {
        gw_free(&b);
        gw_header(&b, 3, counts[i][0], counts[i][1]);
        refused(&b, i < 3 ? "ffnrt reads at most 1048576 (2^20) of each" : "cannot hold that many", "huge counts");
    }
    gw_free(&b);
}

/* 2^20 keys are read; 2^20 + 1, all there, are refused by the cap, and
 * the message says so (it said the file's bytes "cannot hold that many"). */
Test(gguf, the_entry_cap_is_what_the_message_says)
{
    const uint32_t cap = 1u << 20;
    for (uint32_t n = cap; n <= cap + 1; n++) {
        gw_buf b = {0};
        gw_header(&b, 3, 0, n);
        for (uint32_t i = 0; i < n; i++) {
            char key[16];
            snprintf(key, sizeof key, "k%07u", i);
            gw_string(&b, key);
            gw_u32(&b, 0); /* uint8 */
            gw_u8(&b, 1);
        }
        if (n == cap) {
            ffnrt_gguf *g = open_ok(&b);
            cr_assert_eq(ffnrt_gguf_kv_count(g), cap);
            cr_assert_eq(ffnrt_gguf_find_key(g, "k1048575"), 1048575);
            ffnrt_gguf_close(g);
        } else {
            refused(&b, "the header claims 0 tensors and 1048577 keys; ffnrt reads at most 1048576 (2^20) of each",
                    "2^20 + 1 keys");
            cr_assert_null(strstr(ffnrt_last_error_message(), "cannot hold"), "%s", ffnrt_last_error_message());
        }
        gw_free(&b);
    }
}

/* A header of one key, then the key as the caller writes it. */
static void one_key(gw_buf *b) { gw_free(b), gw_header(b, 3, 0, 1); }

Test(gguf, keys_and_values)
{
    gw_buf b = {0};
    one_key(&b);
    gw_u64(&b, UINT64_MAX); /* a key of 2^64 - 1 bytes */
    gw_raw(&b, "abcdefgh", 8);
    refused(&b, "metadata key of 18446744073709551615 bytes", "huge key length");
    one_key(&b);
    gw_u64(&b, 0);
    gw_u32(&b, 4);
    gw_u32(&b, 1);
    refused(&b, "metadata key of 0 bytes", "empty key");
    one_key(&b);
    gw_u64(&b, 3);
    gw_raw(&b, "a\0b", 3);
    gw_u32(&b, 4);
    gw_u32(&b, 1);
    refused(&b, "holds a NUL byte", "NUL in a key");
    one_key(&b);
    gw_string(&b, "k");
    gw_u32(&b, 13);
    gw_u32(&b, 0);
    refused(&b, "value type 13", "unknown value type");
    one_key(&b); /* bytes a terminal would act on, and quotes, escaped in the message */
    gw_string(&b, "k\x01\x1b[2J\"\\\xff");
    gw_u32(&b, 13);
    gw_u32(&b, 0);
    refused(&b, "key \"k\\x01\\x1b[2J\\\"\\\\\\xff\" has value type 13", "escaped key");
    one_key(&b);
    gw_string(&b, "k");
    gw_u32(&b, 8);
    gw_u64(&b, UINT64_MAX);
    gw_u32(&b, 0);
    refused(&b, "needs 18446744073709551615 bytes", "string of 2^64 - 1 bytes");
    one_key(&b);
    gw_string(&b, "k");
    gw_u32(&b, 7);
    gw_u8(&b, 2);
    refused(&b, "bool value 2", "bool of 2");
    one_key(&b);
    gw_kv_array(&b, "k", 9, 1);
    gw_u32(&b, 4);
    gw_u64(&b, 0);
    refused(&b, "array of arrays", "nested array");
    one_key(&b);
    gw_kv_array(&b, "k", 99, 1);
    refused(&b, "array of unknown type 99", "array of an unknown type");
    one_key(&b);
    gw_kv_array(&b, "k", 4, UINT64_MAX);
    gw_u32(&b, 1);
    refused(&b, "needs 18446744073709551615 bytes", "array of 2^64 - 1 uint32");
    one_key(&b);
    gw_kv_array(&b, "k", 8, (uint64_t)1 << 40); /* strings: each at least 8 bytes */
    gw_string(&b, "only one");
    refused(&b, "needs 8 bytes", "array of 2^40 strings");
    one_key(&b);
    gw_kv_array(&b, "k", 7, 3);
    gw_raw(&b, "\x01\x00\x05", 3);
    refused(&b, "bool value 5", "bool array");
    /* duplicates */
    gw_free(&b);
    gw_header(&b, 3, 0, 3);
    gw_kv_u32(&b, "a", 1);
    gw_kv_u32(&b, "b", 2);
    gw_kv_u32(&b, "a", 3);
    refused(&b, "the key \"a\" appears twice (entries 0 and 2)", "duplicate key");
    /* general.alignment: uint32, a power of two */
    const uint32_t aligns[] = {0, 3, 48};
    for (int i = 0; i < 3; i++) {
        one_key(&b);
        gw_kv_u32(&b, "general.alignment", aligns[i]);
        refused(&b, "not a power of two", "bad alignment");
    }
    one_key(&b);
    gw_kv_string(&b, "general.alignment", "32");
    refused(&b, "uint32 expected", "alignment of the wrong type");
    gw_free(&b);
}

/* A file of tensors whose infos the caller writes through `info`; the data
 * section holds `data_bytes` zero bytes after 32-byte padding. */
static void tensors(gw_buf *b, uint64_t n, void (*info)(gw_buf *), size_t data_bytes)
{
    gw_free(b);
    gw_header(b, 3, n, 0);
    info(b);
    gw_align(b, 32);
    for (size_t i = 0; i < data_bytes; i++)
        gw_u8(b, 0);
}

static const int64_t ne_64x2[2] = {64, 2};
static void long_name(gw_buf *b) { gw_tensor_info(b, "this.name.is.sixty.five.bytes.long.which.is.one.more.than.allowed", 1, ne_64x2, 0, 0); }
static void five_dims(gw_buf *b)
{
    const int64_t ne[5] = {1, 1, 1, 1, 1};
    gw_tensor_info(b, "t", 5, ne, 0, 0);
}
static void huge_elements(gw_buf *b)
{
    const int64_t ne[3] = {(int64_t)1 << 32, (int64_t)1 << 32, 1};
    gw_tensor_info(b, "t", 3, ne, 0, 0);
}
static void negative_ne(gw_buf *b)
{
    const int64_t ne[1] = {-1};
    gw_tensor_info(b, "t", 1, ne, 0, 0);
}
static void removed_type(gw_buf *b) { gw_tensor_info(b, "t", 2, ne_64x2, 4, 0); }
static void unknown_type(gw_buf *b) { gw_tensor_info(b, "t", 2, ne_64x2, 99, 0); }
static void partial_block(gw_buf *b)
{
    const int64_t ne[2] = {100, 2};
    gw_tensor_info(b, "t", 2, ne, 2, 0);
}
static void misaligned(gw_buf *b) { gw_tensor_info(b, "t", 2, ne_64x2, 0, 16); }
static void past_end(gw_buf *b) { gw_tensor_info(b, "t", 2, ne_64x2, 0, 512); }
static void offset_wraps(gw_buf *b) { gw_tensor_info(b, "t", 2, ne_64x2, 0, UINT64_MAX - 31); }
static void overlapping(gw_buf *b)
{
    gw_tensor_info(b, "a", 2, ne_64x2, 0, 0);   /* 512 bytes at 0 */
    gw_tensor_info(b, "b", 2, ne_64x2, 0, 480); /* at 480 */
}
static void duplicate_names(gw_buf *b)
{
    gw_tensor_info(b, "same", 2, ne_64x2, 0, 0);
    gw_tensor_info(b, "same", 2, ne_64x2, 0, 512);
}
static void huge_q4_1(gw_buf *b)
{
    const int64_t ne[4] = {(int64_t)1 << 40, (int64_t)1 << 20, 2, 1}; /* 2^61 elements, 2^61 * 20/32 bytes */
    gw_tensor_info(b, "t", 4, ne, 3, 0);
}

Test(gguf, tensor_infos)
{
    gw_buf b = {0};
    const struct {
        void (*info)(gw_buf *);
        uint64_t n;
        size_t data;
        const char *expect;
    } cases[] = {
        {long_name, 1, 512, "tensor name of 65 bytes"},
        {five_dims, 1, 4, "has 5 dimensions (at most 4)"},
        {huge_elements, 1, 512, "makes more than 2^63 elements"},
        {negative_ne, 1, 512, "makes more than 2^63 elements"},
        {removed_type, 1, 512, "unknown tensor type 4"},
        {unknown_type, 1, 512, "unknown tensor type 99"},
        {partial_block, 1, 512, "ne[0] = 100 is not a multiple of Q4_0's block of 32"},
        {misaligned, 1, 1024, "at offset 16 is not aligned to 32"},
        {past_end, 1, 1000, "ends past the data section's 1000 bytes"},
        {offset_wraps, 1, 512, "ends past the data section"},
        {overlapping, 2, 1024, "tensors \"a\" and \"b\" overlap"},
        {duplicate_names, 2, 1024, "the tensor name \"same\" appears twice"},
        {huge_q4_1, 1, 64, "ends past the data section"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tensors(&b, cases[i].n, cases[i].info, cases[i].data);
        refused(&b, cases[i].expect, cases[i].expect);
    }
    /* and the data-section bound itself: 512 bytes fit, 511 do not */
    static const int64_t one[1] = {128};
    gw_free(&b);
    gw_header(&b, 3, 1, 0);
    gw_tensor_info(&b, "t", 1, one, 0, 0);
    gw_align(&b, 32);
    for (int i = 0; i < 512; i++)
        gw_u8(&b, 0);
    ffnrt_gguf *g = open_ok(&b);
    ffnrt_gguf_tensor_info t;
    cr_assert_eq(ffnrt_gguf_tensor_at(g, 0, &t), FFNRT_OK);
    cr_assert(t.n_dims == 1 && t.ne[0] == 128 && t.ne[1] == 1 && t.bytes == 512 && t.format == FFNRT_WEIGHT_F32);
    cr_assert_str_eq(t.type_name, "F32");
    ffnrt_gguf_close(g);
    b.n--;
    refused(&b, "ends past the data section's 511 bytes", "one byte short");
    gw_free(&b);
}

Test(gguf, random_corruption_never_crashes)
{
    gw_buf b = {0};
    gw_build_model(&b, &small);
    uint8_t *copy = malloc(b.n);
    cr_assert(copy);
    uint64_t s = 12345;
    size_t accepted = 0, refused_count = 0;
    /* Corrupt the header and infos (where the structure is), 1 to 4 bytes at a time. */
    size_t structure = 700 < b.n ? 700 : b.n;
    for (int round = 0; round < 20000; round++) {
        memcpy(copy, b.p, b.n);
        int flips = 1 + round % 4;
        for (int f = 0; f < flips; f++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            size_t at = (size_t)(s >> 33) % structure;
            copy[at] = (uint8_t)(s >> 20);
        }
        ffnrt_gguf *g = NULL;
        ffnrt_status st = ffnrt_gguf_open_memory(copy, b.n, &g);
        cr_assert(st == FFNRT_OK || st == FFNRT_ERROR_INVALID_FILE, "status %d: %s", st, ffnrt_last_error_message());
        if (st == FFNRT_OK) {
            accepted++;
            /* whatever was accepted is safe to walk */
            for (size_t i = 0; i < ffnrt_gguf_tensor_count(g); i++) {
                ffnrt_gguf_tensor_info t;
                cr_assert_eq(ffnrt_gguf_tensor_at(g, i, &t), FFNRT_OK);
                cr_assert(t.offset + t.bytes <= b.n);
                volatile uint8_t sink = t.bytes ? ((const uint8_t *)t.data)[t.bytes - 1] : 0;
                (void)sink;
            }
            ffnrt_gguf_ffn ffn;
            (void)ffnrt_gguf_ffn_layer(g, 0, &ffn);
            ffnrt_gguf_close(g);
        } else {
            refused_count++;
            cr_assert(strlen(ffnrt_last_error_message()) > 0);
        }
    }
    cr_log_info("random corruption: %zu accepted, %zu refused", accepted, refused_count);
    cr_assert(refused_count > 1000);
    free(copy);
    gw_free(&b);
}

/* ffnrt_gguf_ffn_desc: the layer as an ffnrt layer's desc and weights,
 * the bytes handed over unchanged, the activation from the architecture. */
Test(gguf, layer_as_an_ffnrt_desc)
{
    const ffnrt_weight_format formats[] = {FFNRT_WEIGHT_Q4_1, FFNRT_WEIGHT_Q8_0, FFNRT_WEIGHT_F16, FFNRT_WEIGHT_F32};
    for (size_t fi = 0; fi < sizeof formats / sizeof formats[0]; fi++)
        for (int bias = 0; bias < 2; bias++) {
            gw_model m = small;
            m.format = formats[fi];
            m.bias = bias;
            gw_buf b = {0};
            gw_build_model(&b, &m);
            ffnrt_gguf *g = open_ok(&b);
            ffnrt_gguf_ffn ffn;
            ffnrt_ffn_desc d;
            ffnrt_ffn_weights w;
            cr_assert_eq(ffnrt_gguf_ffn_layer(g, 1, &ffn), FFNRT_OK, "%s", ffnrt_last_error_message());
            ffnrt_status st = ffnrt_gguf_ffn_desc(g, &ffn, &d, &w);
            int block = m.format >= FFNRT_WEIGHT_Q8_0;
            if (bias && m.format == FFNRT_WEIGHT_F16) { /* f32 biases, f16 matrices: not one dtype */
                cr_assert_eq(st, FFNRT_ERROR_UNSUPPORTED, "%s", ffnrt_last_error_message());
                cr_assert(strstr(ffnrt_last_error_message(), "blk.1.ffn_gate.bias is F32"), "%s",
                          ffnrt_last_error_message());
            } else {
                cr_assert_eq(st, FFNRT_OK, "%s", ffnrt_last_error_message());
                cr_assert_eq(d.kind, FFNRT_FFN_GATED);
                cr_assert_eq(d.glu.kind, FFNRT_SWIGLU);
                cr_assert_eq(d.glu.beta, 1.0f);
                cr_assert(d.d_model == m.d_model && d.hidden == m.hidden && d.bias == bias);
                cr_assert_eq(d.dtype, m.format == FFNRT_WEIGHT_F16 ? FFNRT_DTYPE_F16 : FFNRT_DTYPE_F32);
                ffnrt_weight_format want = block ? m.format : FFNRT_WEIGHT_F32;
                cr_assert(d.format_in == want && d.format_value == want && d.format_out == want);
                cr_assert(w.w_gate == ffn.gate.data && w.w_value == ffn.up.data && w.w_out == ffn.down.data);
                cr_assert(!w.w_in && !w.w_gate_value && !w.b_in && !w.b_gate_value);
                cr_assert(bias ? w.b_gate == ffn.gate_bias.data && w.b_value == ffn.up_bias.data &&
                                     w.b_out == ffn.down_bias.data
                               : !w.b_gate && !w.b_value && !w.b_out);
            }
            ffnrt_gguf_close(g);
            gw_free(&b);
        }
    /* A dense layer of an architecture with gates; the gates of a dense one;
     * an architecture ffnrt does not know; what each known one runs. */
    const spec up_down[3] = {{"blk.0.ffn_up.weight", 2, 8, 64, 96},
                             {"blk.0.ffn_down.weight", 2, 8, 96, 64},
                             {"blk.0.ffn_gate.weight", 2, 8, 64, 96}};
    struct {
        const char *arch;
        int tensors;
        ffnrt_status want;
        const char *expect;
        int glu_or_act; /* what an FFNRT_OK case runs: a GLU kind (3 tensors) or an activation (2) */
    } cases[] = {
        {"llama", 2, FFNRT_ERROR_UNSUPPORTED,
         "a llama layer is gated SwiGLU, but its gate, blk.0.ffn_gate.weight, is missing", 0},
        {"gpt2", 3, FFNRT_ERROR_UNSUPPORTED,
         "a gpt2 layer is dense, tanh GELU, with no gate, but this one has blk.0.ffn_gate.weight", 0},
        {"mamba", 3, FFNRT_ERROR_UNSUPPORTED, "general.architecture is \"mamba\"", 0},
        /* the message lists what ffnrt knows, from its table */
        {"mamba", 3, FFNRT_ERROR_UNSUPPORTED, "smollm3, internlm2, nomic-bert (gated SwiGLU); gemma", 0},
        {"mamba", 3, FFNRT_ERROR_UNSUPPORTED, "; bert (dense, erf GELU)): fill the desc by hand", 0},
        /* llama.cpp names no architecture "mistral": Mistral 7B's files say llama, Mistral 3's mistral3 */
        {"mistral", 3, FFNRT_ERROR_UNSUPPORTED, "general.architecture is \"mistral\"", 0},
        {"gpt2", 2, FFNRT_OK, "", FFNRT_ACT_GELU_TANH},
        {"starcoder", 2, FFNRT_OK, "", FFNRT_ACT_GELU_TANH},
        {"phi2", 2, FFNRT_OK, "", FFNRT_ACT_GELU_TANH},
        {"gemma2", 3, FFNRT_OK, "", FFNRT_GEGLU_TANH},
        {"mistral3", 3, FFNRT_OK, "", FFNRT_SWIGLU},
        {"qwen3", 3, FFNRT_OK, "", FFNRT_SWIGLU},
        /* BERT's GELU is the erf form (Google's reference, Hugging Face's gelu); llama.cpp runs tanh */
        {"bert", 2, FFNRT_OK, "", FFNRT_ACT_GELU},
        {"bert", 3, FFNRT_ERROR_UNSUPPORTED, "a bert layer is dense, erf GELU, with no gate, but this one has", 0},
        /* nomic-bert is gated SwiGLU, as the original and llama.cpp (whose loader requires ffn_gate) agree */
        {"nomic-bert", 3, FFNRT_OK, "", FFNRT_SWIGLU},
        {"nomic-bert", 2, FFNRT_ERROR_UNSUPPORTED,
         "a nomic-bert layer is gated SwiGLU, but its gate, blk.0.ffn_gate.weight, is missing", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        layer_arch = cases[i].arch;
        gw_buf b = {0};
        write_layer(&b, up_down, cases[i].tensors, 96);
        layer_arch = "llama";
        ffnrt_gguf *g = open_ok(&b);
        ffnrt_gguf_ffn ffn;
        ffnrt_ffn_desc d;
        ffnrt_ffn_weights w;
        cr_assert_eq(ffnrt_gguf_ffn_layer(g, 0, &ffn), FFNRT_OK, "%s", ffnrt_last_error_message());
        cr_assert_eq(ffnrt_gguf_ffn_desc(g, &ffn, &d, &w), cases[i].want, "%s: %s", cases[i].arch,
                     ffnrt_last_error_message());
        cr_assert(strstr(ffnrt_last_error_message(), cases[i].expect), "\"%s\" lacks \"%s\"",
                  ffnrt_last_error_message(), cases[i].expect);
        if (cases[i].want == FFNRT_OK && cases[i].tensors == 2)
            cr_assert(d.kind == FFNRT_FFN_DENSE && (int)d.activation.kind == cases[i].glu_or_act &&
                          w.w_in == ffn.up.data && d.format_in == FFNRT_WEIGHT_Q8_0 && d.format_out == FFNRT_WEIGHT_Q8_0,
                      "%s: activation %s", cases[i].arch, ffnrt_activation_name(d.activation.kind));
        if (cases[i].want == FFNRT_OK && cases[i].tensors == 3)
            cr_assert(d.kind == FFNRT_FFN_GATED && (int)d.glu.kind == cases[i].glu_or_act && d.glu.beta == 1.0f &&
                          w.w_gate == ffn.gate.data && w.w_value == ffn.up.data && w.w_out == ffn.down.data,
                      "%s: GLU %s", cases[i].arch, ffnrt_glu_name(d.glu.kind));
        cr_assert_eq(ffnrt_gguf_ffn_desc(g, NULL, &d, &w), FFNRT_ERROR_INVALID_ARGUMENT);
        ffnrt_gguf_close(g);
        gw_free(&b);
    }
}

/* An architecture string is shown as the bytes it holds: "llama\0x" is not
 * llama, and the message does not call it that (it printed "llama"). */
Test(gguf, an_architecture_with_a_nul_is_shown_escaped)
{
    const spec t[3] = {{"blk.0.ffn_up.weight", 2, 8, 64, 96},
                       {"blk.0.ffn_down.weight", 2, 8, 96, 64},
                       {"blk.0.ffn_gate.weight", 2, 8, 64, 96}};
    gw_buf b = {0};
    layer_arch = "llama\0x";
    layer_arch_len = 7;
    write_layer(&b, t, 3, 96);
    layer_arch = "llama";
    layer_arch_len = 0;
    ffnrt_gguf *g = open_ok(&b);
    ffnrt_gguf_ffn ffn;
    ffnrt_ffn_desc d;
    ffnrt_ffn_weights w;
    cr_assert_eq(ffnrt_gguf_ffn_layer(g, 0, &ffn), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_assert_eq(ffnrt_gguf_ffn_desc(g, &ffn, &d, &w), FFNRT_ERROR_UNSUPPORTED);
    cr_assert(strstr(ffnrt_last_error_message(), "general.architecture is \"llama\\x00x\", whose FFN"), "%s",
              ffnrt_last_error_message());
    ffnrt_gguf_close(g);
    gw_free(&b);
}
