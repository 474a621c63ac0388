/* The public GGUF reader (include/ffnrt_gguf.h): opening a file or bytes,
 * metadata and tensor look-ups, and a layer's FFN tensors. Parsing and
 * every check of the file are in gguf_parse.c. */
#include "gguf/gguf_internal.h"

#include "quant/quant.h"

#include "platform/platform.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ffnrt_status finish(ffnrt_error *err)
{
    ffnrt_error_publish(err);
    return err->status;
}

/* Parses bytes into a new handle; frees everything on failure. */
static ffnrt_status open_bytes(const uint8_t *data, size_t size, void *map, ffnrt_gguf **out, ffnrt_error *err)
{
    ffnrt_gguf *g = calloc(1, sizeof *g);
    if (!g) {
        ffnrt_mapping m = {map, size};
        ffnrt_unmap(&m);
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "GGUF: no memory for the handle");
    }
    g->map = map;
    g->map_size = size;
    if (ffnrt_gguf_parse(data, size, g, err) != FFNRT_OK) {
        ffnrt_gguf_close(g);
        return err->status;
    }
    *out = g;
    return FFNRT_OK;
}

/* What a path that is not a regular file is, for the message. */
static const char *file_kind(ffnrt_file_kind kind)
{
    switch (kind) {
    case FFNRT_FILE_DIRECTORY: return "a directory";
    case FFNRT_FILE_FIFO: return "a FIFO (named pipe)";
    case FFNRT_FILE_CHARACTER_DEVICE: return "a character device";
    case FFNRT_FILE_BLOCK_DEVICE: return "a block device";
    case FFNRT_FILE_SOCKET: return "a socket";
    case FFNRT_FILE_LINK: return "a link";
    default: return "of an unknown kind";
    }
}

ffnrt_status ffnrt_gguf_open(const char *path, ffnrt_gguf **out)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!path || !out) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_gguf_open: path or out is NULL");
        return finish(&err);
    }
    *out = NULL;
    /* Opened without blocking: opening a FIFO would otherwise wait for a
     * writer, for ever; this way the open returns at once, and the file's
     * kind is known before anything is read. */
    ffnrt_file f;
    ffnrt_file_info st;
    int opened = ffnrt_file_open_read(path, 0, &f) == 0;
    if (!opened || ffnrt_file_stat(f, &st) != 0) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_gguf_open: %s: %s", path, strerror(errno));
    } else if (st.kind != FFNRT_FILE_REGULAR) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_gguf_open: %s is %s, not a regular file", path,
                   file_kind(st.kind));
    } else if (st.size > SIZE_MAX) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_gguf_open: %s is too large to map", path);
    } else if (st.size == 0) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_FILE, "ffnrt_gguf_open: %s is empty", path);
    } else {
        size_t size = (size_t)st.size;
        ffnrt_mapping map;
        if (ffnrt_map_file(f, size, &map) != 0)
            ffnrt_fail(&err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "ffnrt_gguf_open: mapping %s (%zu bytes): %s", path, size,
                       strerror(errno));
        else if (open_bytes(map.data, size, map.data, out, &err) != FFNRT_OK) {
            /* open_bytes unmapped it; name the file in the message */
            char message[FFNRT_ERROR_MESSAGE_SIZE];
            memcpy(message, err.message, sizeof message);
            snprintf(err.message, sizeof err.message, "%.160s: %.340s", path, message);
        }
    }
    if (opened)
        ffnrt_file_close(f);
    return finish(&err);
}

ffnrt_status ffnrt_gguf_open_memory(const void *data, size_t size, ffnrt_gguf **out)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!out || (!data && size))
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_gguf_open_memory: out is NULL, or data is NULL with "
                                                       "%zu bytes", size);
    else {
        *out = NULL;
        open_bytes(data, size, NULL, out, &err);
    }
    return finish(&err);
}

void ffnrt_gguf_close(ffnrt_gguf *g)
{
    if (!g)
        return;
    ffnrt_gguf_release(g);
    if (g->map) {
        ffnrt_mapping m = {g->map, g->map_size};
        ffnrt_unmap(&m);
    }
    free(g);
}

uint32_t ffnrt_gguf_version(const ffnrt_gguf *g) { return g ? g->version : 0; }
uint64_t ffnrt_gguf_alignment(const ffnrt_gguf *g) { return g ? g->alignment : 0; }
uint64_t ffnrt_gguf_data_offset(const ffnrt_gguf *g) { return g ? g->data_offset : 0; }
size_t ffnrt_gguf_kv_count(const ffnrt_gguf *g) { return g ? g->n_kv : 0; }
size_t ffnrt_gguf_tensor_count(const ffnrt_gguf *g) { return g ? g->n_tensors : 0; }

int64_t ffnrt_gguf_find_key(const ffnrt_gguf *g, const char *key)
{
    return g && key ? ffnrt_gguf_lookup(g, key, 0) : -1;
}

int64_t ffnrt_gguf_find_tensor(const ffnrt_gguf *g, const char *name)
{
    return g && name ? ffnrt_gguf_lookup(g, name, 1) : -1;
}

ffnrt_status ffnrt_gguf_kv_at(const ffnrt_gguf *g, size_t i, ffnrt_gguf_kv_info *out)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!g || !out || i >= g->n_kv)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_gguf_kv_at: %s",
                   !g || !out ? "gguf or out is NULL" : "index past the last key");
    else
        *out = (ffnrt_gguf_kv_info){g->kv[i].key, g->kv[i].type, g->kv[i].element_type, g->kv[i].count};
    return finish(&err);
}

/* ---------------------------------------------------------------- values */

static const char *const type_names[] = {"uint8", "int8",   "uint16", "int16", "uint32", "int32",  "float32",
                                         "bool",  "string", "array",  "uint64", "int64", "float64"};

/* The key's entry, or NULL with the error. */
static const gguf_kv *find_kv(const ffnrt_gguf *g, const char *key, const void *out, const char *fn, ffnrt_error *err)
{
    if (!g || !key || !out) {
        ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: gguf, key or out is NULL", fn);
        return NULL;
    }
    int64_t i = ffnrt_gguf_lookup(g, key, 0);
    if (i < 0) {
        ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: the file has no key \"%s\"", fn, key);
        return NULL;
    }
    return &g->kv[i];
}

static ffnrt_status wrong_type(const gguf_kv *kv, const char *wanted, const char *fn, ffnrt_error *err)
{
    return ffnrt_fail(err, FFNRT_ERROR_DTYPE_MISMATCH, "%s: \"%s\" is %s%s%s, not %s", fn, kv->key,
                      type_names[kv->type], kv->type == FFNRT_GGUF_ARRAY ? " of " : "",
                      kv->type == FFNRT_GGUF_ARRAY ? type_names[kv->element_type] : "", wanted);
}

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* An integer value as int64 (*negative set when it is below 0), or 0. */
static int integer(const gguf_kv *kv, uint64_t *magnitude, int *negative)
{
    static const int8_t width[] = {1, -1, 2, -2, 4, -4, 0, 1, 0, 0, 8, -8, 0}; /* <0: signed */
    int w = width[kv->type];
    if (!w)
        return 0;
    int n = w < 0 ? -w : w;
    uint64_t v = le(kv->value, n);
    *negative = 0;
    if (w < 0 && (v >> (8 * n - 1)) & 1) { /* sign-extend, then negate into a magnitude */
        uint64_t ext = n == 8 ? v : v | ~((UINT64_C(1) << (8 * n)) - 1);
        *magnitude = ~ext + 1;
        *negative = 1;
    } else {
        *magnitude = v;
    }
    return 1;
}

ffnrt_status ffnrt_gguf_get_uint(const ffnrt_gguf *g, const char *key, uint64_t *out)
{
    static const char fn[] = "ffnrt_gguf_get_uint";
    ffnrt_error err;
    ffnrt_error_clear(&err);
    const gguf_kv *kv = find_kv(g, key, out, fn, &err);
    uint64_t v;
    int negative;
    if (kv && !integer(kv, &v, &negative))
        wrong_type(kv, "an integer", fn, &err);
    else if (kv && negative && v)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: \"%s\" is negative", fn, key);
    else if (kv)
        *out = v;
    return finish(&err);
}

ffnrt_status ffnrt_gguf_get_int(const ffnrt_gguf *g, const char *key, int64_t *out)
{
    static const char fn[] = "ffnrt_gguf_get_int";
    ffnrt_error err;
    ffnrt_error_clear(&err);
    const gguf_kv *kv = find_kv(g, key, out, fn, &err);
    uint64_t v;
    int negative;
    if (kv && !integer(kv, &v, &negative))
        wrong_type(kv, "an integer", fn, &err);
    else if (kv && !negative && v > (uint64_t)INT64_MAX)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: \"%s\" = %llu does not fit int64", fn, key,
                   (unsigned long long)v);
    else if (kv)
        *out = negative ? (v == (UINT64_C(1) << 63) ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    return finish(&err);
}

ffnrt_status ffnrt_gguf_get_float(const ffnrt_gguf *g, const char *key, double *out)
{
    static const char fn[] = "ffnrt_gguf_get_float";
    ffnrt_error err;
    ffnrt_error_clear(&err);
    const gguf_kv *kv = find_kv(g, key, out, fn, &err);
    if (kv && kv->type == FFNRT_GGUF_FLOAT32) {
        uint32_t bits = (uint32_t)le(kv->value, 4);
        float f;
        memcpy(&f, &bits, 4);
        *out = f;
    } else if (kv && kv->type == FFNRT_GGUF_FLOAT64) {
        uint64_t bits = le(kv->value, 8);
        memcpy(out, &bits, 8);
    } else if (kv) {
        wrong_type(kv, "float32 or float64", fn, &err);
    }
    return finish(&err);
}

ffnrt_status ffnrt_gguf_get_string(const ffnrt_gguf *g, const char *key, const char **str, size_t *length)
{
    static const char fn[] = "ffnrt_gguf_get_string";
    ffnrt_error err;
    ffnrt_error_clear(&err);
    const gguf_kv *kv = find_kv(g, key, str && length ? str : NULL, fn, &err);
    if (kv && kv->type != FFNRT_GGUF_STRING) {
        wrong_type(kv, "string", fn, &err);
    } else if (kv) {
        *length = (size_t)le(kv->value, 8); /* checked against the file when parsed */
        *str = (const char *)kv->value + 8;
    }
    return finish(&err);
}

ffnrt_status ffnrt_gguf_get_array(const ffnrt_gguf *g, const char *key, ffnrt_gguf_type *element_type,
                                  uint64_t *count, const void **data, size_t *bytes)
{
    static const char fn[] = "ffnrt_gguf_get_array";
    ffnrt_error err;
    ffnrt_error_clear(&err);
    const gguf_kv *kv = find_kv(g, key, element_type && count && data && bytes ? data : NULL, fn, &err);
    if (kv && kv->type != FFNRT_GGUF_ARRAY) {
        wrong_type(kv, "an array", fn, &err);
    } else if (kv) {
        *element_type = kv->element_type;
        *count = kv->count;
        *data = kv->value;
        *bytes = kv->value_bytes;
    }
    return finish(&err);
}

/* --------------------------------------------------------------- tensors */

static void tensor_info(const ffnrt_gguf *g, size_t i, ffnrt_gguf_tensor_info *out)
{
    const gguf_tensor *t = &g->tensors[i];
    memset(out, 0, sizeof *out);
    out->name = t->name;
    out->ggml_type = t->type;
    out->type_name = ffnrt_gguf_type_info(t->type)->name;
    out->format = FFNRT_WEIGHT_FORMAT_COUNT;
    ffnrt_format_from_ggml_type(t->type, &out->format);
    out->n_dims = t->n_dims;
    memcpy(out->ne, t->ne, sizeof out->ne);
    out->offset = g->data_offset + t->offset;
    out->bytes = t->bytes;
    out->data = g->base + out->offset;
}

ffnrt_status ffnrt_gguf_tensor_at(const ffnrt_gguf *g, size_t i, ffnrt_gguf_tensor_info *out)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!g || !out || i >= g->n_tensors)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_gguf_tensor_at: %s",
                   !g || !out ? "gguf or out is NULL" : "index past the last tensor");
    else
        tensor_info(g, i, out);
    return finish(&err);
}

/* ------------------------------------------------------------ FFN layers */

/* Looks up blk.<layer>.<part>.<kind>; 0 if absent. */
static int layer_tensor(const ffnrt_gguf *g, int64_t layer, const char *part, const char *kind,
                        ffnrt_gguf_tensor_info *out)
{
    char name[96];
    snprintf(name, sizeof name, "blk.%lld.%s.%s", (long long)layer, part, kind);
    int64_t i = ffnrt_gguf_lookup(g, name, 1);
    if (i < 0) {
        memset(out, 0, sizeof *out);
        return 0;
    }
    tensor_info(g, (size_t)i, out);
    return 1;
}

static ffnrt_status check_weight(const ffnrt_gguf_tensor_info *t, int64_t in, int64_t out, ffnrt_error *err)
{
    if (t->n_dims != 2 || t->ne[0] != in || t->ne[1] != out)
        return ffnrt_fail(err, FFNRT_ERROR_SHAPE_MISMATCH,
                          "GGUF: %s has ne = {%lld, %lld, %lld, %lld} (%u dimensions); {%lld, %lld} expected", t->name,
                          (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
                          t->n_dims, (long long)in, (long long)out);
    if (t->format == FFNRT_WEIGHT_FORMAT_COUNT)
        return ffnrt_fail(err, FFNRT_ERROR_UNSUPPORTED,
                          "GGUF: %s is %s; ffnrt layers take F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K and Q6_K", t->name,
                          t->type_name);
    return FFNRT_OK;
}

static ffnrt_status check_bias(const ffnrt_gguf_tensor_info *t, int64_t n, ffnrt_error *err)
{
    if (t->n_dims != 1 || t->ne[0] != n)
        return ffnrt_fail(err, FFNRT_ERROR_SHAPE_MISMATCH, "GGUF: %s has %u dimensions, ne[0] = %lld; 1 of %lld expected",
                          t->name, t->n_dims, (long long)t->ne[0], (long long)n);
    if (t->format != FFNRT_WEIGHT_F32 && t->format != FFNRT_WEIGHT_F16 && t->format != FFNRT_WEIGHT_BF16)
        return ffnrt_fail(err, FFNRT_ERROR_UNSUPPORTED, "GGUF: %s is %s; biases are F32, F16 or BF16", t->name,
                          t->type_name);
    return FFNRT_OK;
}

/* The "{arch}.<what>" metadata integer, if the file has it and it is one. */
static int arch_value(const ffnrt_gguf *g, const char *what, uint64_t *out)
{
    int64_t a = ffnrt_gguf_lookup(g, "general.architecture", 0);
    if (a < 0 || g->kv[a].type != FFNRT_GGUF_STRING)
        return 0;
    char key[160];
    uint64_t len = le(g->kv[a].value, 8);
    if (len > 100)
        return 0;
    snprintf(key, sizeof key, "%.*s.%s", (int)len, (const char *)g->kv[a].value + 8, what);
    int64_t i = strlen(key) == len + 1 + strlen(what) ? ffnrt_gguf_lookup(g, key, 0) : -1; /* no NUL in arch */
    int negative;
    return i >= 0 && integer(&g->kv[i], out, &negative) && !negative;
}

static ffnrt_status find_layer(const ffnrt_gguf *g, int64_t layer, ffnrt_gguf_ffn *f, ffnrt_error *err)
{
    uint64_t blocks;
    char have[64] = "";
    if (arch_value(g, "block_count", &blocks))
        snprintf(have, sizeof have, " (block_count: %llu)", (unsigned long long)blocks);
    int up = layer_tensor(g, layer, "ffn_up", "weight", &f->up), down = layer_tensor(g, layer, "ffn_down", "weight", &f->down);
    if (!up || !down)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_gguf_ffn_layer: the file has no blk.%lld.%s.weight%s",
                          (long long)layer, up ? "ffn_down" : "ffn_up", have);
    f->gated = layer_tensor(g, layer, "ffn_gate", "weight", &f->gate);
    /* ffn_up says the layer's sizes, so it is checked first: 2-D (a scalar
     * or a vector has ne 1 past n_dims, which would read as a size), and
     * each size one an ffnrt layer can have. */
    if (f->up.n_dims != 2)
        return ffnrt_fail(err, FFNRT_ERROR_SHAPE_MISMATCH,
                          "GGUF: %s has %u dimension%s (ne = {%lld, %lld, %lld, %lld}); 2 expected, {d_model, "
                          "hidden}",
                          f->up.name, f->up.n_dims, f->up.n_dims == 1 ? "" : "s", (long long)f->up.ne[0], (long long)f->up.ne[1],
                          (long long)f->up.ne[2], (long long)f->up.ne[3]);
    for (int d = 0; d < 2; d++)
        if (f->up.ne[d] < 1 || f->up.ne[d] > (int64_t)GGUF_MAX_LAYER_SIZE)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                              "GGUF: %s has %s (ne[%d]) %lld; an ffnrt layer's d_model and hidden are 1 to %llu "
                              "(2^32 - 1)",
                              f->up.name, d ? "hidden" : "d_model", d, (long long)f->up.ne[d],
                              (unsigned long long)GGUF_MAX_LAYER_SIZE);
    f->d_model = f->up.ne[0];
    f->hidden = f->up.ne[1];
    uint64_t v;
    if (arch_value(g, "embedding_length", &v) && v != (uint64_t)f->d_model)
        return ffnrt_fail(err, FFNRT_ERROR_SHAPE_MISMATCH, "GGUF: %s has d_model %lld, the file's embedding_length is %llu",
                          f->up.name, (long long)f->d_model, (unsigned long long)v);
    if (arch_value(g, "feed_forward_length", &v) && v != (uint64_t)f->hidden)
        return ffnrt_fail(err, FFNRT_ERROR_SHAPE_MISMATCH,
                          "GGUF: %s has hidden %lld, the file's feed_forward_length is %llu", f->up.name,
                          (long long)f->hidden, (unsigned long long)v);
    ffnrt_status st = check_weight(&f->up, f->d_model, f->hidden, err);
    if (st == FFNRT_OK && f->gated)
        st = check_weight(&f->gate, f->d_model, f->hidden, err);
    if (st == FFNRT_OK)
        st = check_weight(&f->down, f->hidden, f->d_model, err);
    if (st != FFNRT_OK)
        return st;
    int biases = layer_tensor(g, layer, "ffn_up", "bias", &f->up_bias) +
                 layer_tensor(g, layer, "ffn_down", "bias", &f->down_bias) +
                 (f->gated ? layer_tensor(g, layer, "ffn_gate", "bias", &f->gate_bias) : 0);
    if (biases == 0)
        return FFNRT_OK;
    if (biases != 2 + f->gated)
        return ffnrt_fail(err, FFNRT_ERROR_UNSUPPORTED,
                          "GGUF: layer %lld has biases on %d of its %d projections; ffnrt layers take all or none",
                          (long long)layer, biases, 2 + f->gated);
    f->bias = 1;
    st = check_bias(&f->up_bias, f->hidden, err);
    if (st == FFNRT_OK && f->gated)
        st = check_bias(&f->gate_bias, f->hidden, err);
    if (st == FFNRT_OK)
        st = check_bias(&f->down_bias, f->d_model, err);
    return st;
}

ffnrt_status ffnrt_gguf_ffn_layer(const ffnrt_gguf *g, int64_t layer, ffnrt_gguf_ffn *out)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!g || !out || layer < 0) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_gguf_ffn_layer: %s",
                   !g || !out ? "gguf or out is NULL" : "negative layer");
    } else {
        ffnrt_gguf_ffn f;
        memset(&f, 0, sizeof f);
        if (find_layer(g, layer, &f, &err) == FFNRT_OK)
            *out = f;
    }
    return finish(&err);
}
