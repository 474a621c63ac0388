/* GGUF v2/v3 (little-endian) parsing, checked as it goes: every length and
 * count is compared with the bytes left before anything is read or
 * allocated, so a hostile file ends in a message, never a read past its
 * end or an allocation larger than what it really holds.
 *
 *   "GGUF" u32 version, u64 n_tensors, u64 n_kv
 *   n_kv x   { string key, u32 type, value }
 *            value: fixed-size number or bool, string (u64 length + bytes),
 *                   or array (u32 element type, u64 count, elements; no
 *                   arrays of arrays, as ggml)
 *   n_tensors x { string name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset }
 *   padding to general.alignment, then the data section; each tensor at
 *   data + offset, offset a multiple of the alignment. */
#include "gguf/gguf_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ type table */

#define T(name_, elements, bytes) { name_, elements, bytes }
static const gguf_type_info types[] = {
    [0] = T("F32", 1, 4),         [1] = T("F16", 1, 2),         [2] = T("Q4_0", 32, 18),
    [3] = T("Q4_1", 32, 20),      [6] = T("Q5_0", 32, 22),      [7] = T("Q5_1", 32, 24),
    [8] = T("Q8_0", 32, 34),      [9] = T("Q8_1", 32, 36),      [10] = T("Q2_K", 256, 84),
    [11] = T("Q3_K", 256, 110),   [12] = T("Q4_K", 256, 144),   [13] = T("Q5_K", 256, 176),
    [14] = T("Q6_K", 256, 210),   [15] = T("Q8_K", 256, 292),   [16] = T("IQ2_XXS", 256, 66),
    [17] = T("IQ2_XS", 256, 74),  [18] = T("IQ3_XXS", 256, 98), [19] = T("IQ1_S", 256, 50),
    [20] = T("IQ4_NL", 32, 18),   [21] = T("IQ3_S", 256, 110),  [22] = T("IQ2_S", 256, 82),
    [23] = T("IQ4_XS", 256, 136), [24] = T("I8", 1, 1),         [25] = T("I16", 1, 2),
    [26] = T("I32", 1, 4),        [27] = T("I64", 1, 8),        [28] = T("F64", 1, 8),
    [29] = T("IQ1_M", 256, 56),   [30] = T("BF16", 1, 2),       [34] = T("TQ1_0", 256, 54),
    [35] = T("TQ2_0", 256, 66),   [39] = T("MXFP4", 32, 17),
};

const gguf_type_info *ffnrt_gguf_type_info(uint32_t type)
{
    if (type >= sizeof types / sizeof types[0] || !types[type].name)
        return NULL; /* 4, 5, 31-33, 36-38: removed from GGUF */
    return &types[type];
}

/* Sizes of the fixed-size metadata types (0: string, array, unknown). */
static size_t value_size(uint32_t type)
{
    static const uint8_t sizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return type < sizeof sizes ? sizes[type] : 0;
}

/* ---------------------------------------------------------------- cursor */

typedef struct cursor {
    const uint8_t *data;
    size_t size, pos;
    ffnrt_error *err;
} cursor;

static size_t left(const cursor *c) { return c->size - c->pos; }

static int truncated(cursor *c, const char *what, uint64_t need)
{
    ffnrt_fail(c->err, FFNRT_ERROR_INVALID_FILE, "GGUF: %s at byte %zu needs %llu bytes, the file has %zu left", what,
               c->pos, (unsigned long long)need, left(c));
    return 0;
}

static int read_bytes(cursor *c, uint64_t n, const uint8_t **out, const char *what)
{
    if (n > left(c))
        return truncated(c, what, n);
    *out = c->data + c->pos;
    c->pos += (size_t)n;
    return 1;
}

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static int read_u32(cursor *c, uint32_t *v, const char *what)
{
    const uint8_t *p;
    if (!read_bytes(c, 4, &p, what))
        return 0;
    *v = (uint32_t)le(p, 4);
    return 1;
}

static int read_u64(cursor *c, uint64_t *v, const char *what)
{
    const uint8_t *p;
    if (!read_bytes(c, 8, &p, what))
        return 0;
    *v = le(p, 8);
    return 1;
}

static int fail_at(cursor *c, size_t at, const char *fmt, const char *detail)
{
    ffnrt_fail(c->err, FFNRT_ERROR_INVALID_FILE, "GGUF: byte %zu: %s%s", at, fmt, detail);
    return 0;
}

/* A name (key or tensor name): u64 length + bytes, 1..max bytes, no NUL
 * (a NUL would make two names look alike to C). */
static int read_name(cursor *c, uint32_t max, const uint8_t **at, uint32_t *len, const char *what)
{
    size_t start = c->pos;
    uint64_t n;
    if (!read_u64(c, &n, what))
        return 0;
    if (n == 0 || n > max) {
        ffnrt_fail(c->err, FFNRT_ERROR_INVALID_FILE, "GGUF: byte %zu: %s of %llu bytes (1 to %u allowed)", start, what,
                   (unsigned long long)n, max);
        return 0;
    }
    if (!read_bytes(c, n, at, what))
        return 0;
    if (memchr(*at, 0, (size_t)n))
        return fail_at(c, start, what, " holds a NUL byte");
    *len = (uint32_t)n;
    return 1;
}

void ffnrt_gguf_escape(char *out, size_t cap, const void *bytes, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const uint8_t *s = bytes;
    size_t k = 0, i = 0;
    if (cap < 4) { /* no room for "..." */
        if (cap)
            out[0] = '\0';
        return;
    }
    for (; i < n; i++) {
        char e[4];
        size_t len = 1;
        e[0] = (char)s[i];
        if (s[i] == '"' || s[i] == '\\')
            e[0] = '\\', e[1] = (char)s[i], len = 2;
        else if (s[i] < 0x20 || s[i] >= 0x7f)
            e[0] = '\\', e[1] = 'x', e[2] = hex[s[i] >> 4], e[3] = hex[s[i] & 15], len = 4;
        if (k + len + 4 > cap) /* room for "..." and the NUL */
            break;
        memcpy(out + k, e, len);
        k += len;
    }
    if (i < n)
        memcpy(out + k, "...", 3), k += 3;
    out[k] = '\0';
}

/* A name from the file as message text: quoted, escaped, long names cut. */
static void describe(char *out, size_t cap, const char *what, const uint8_t *s, uint32_t n)
{
    char text[80];
    ffnrt_gguf_escape(text, sizeof text, s, n);
    snprintf(out, cap, "%s \"%s\"", what, text);
}

/* -------------------------------------------------------------- metadata */

/* Skips count values of a fixed size or strings, checking bools. */
static int read_values(cursor *c, uint32_t type, uint64_t count, const char *key)
{
    size_t size = value_size(type);
    if (type == FFNRT_GGUF_STRING) {
        for (uint64_t i = 0; i < count; i++) { /* each costs >= 8 bytes: bounded by the file */
            uint64_t n;
            const uint8_t *s;
            if (!read_u64(c, &n, key) || !read_bytes(c, n, &s, key))
                return 0;
        }
        return 1;
    }
    if (count > left(c) / size)
        return truncated(c, key, count > UINT64_MAX / size ? UINT64_MAX : count * size);
    const uint8_t *p = NULL;
    if (!read_bytes(c, count * size, &p, key))
        return 0;
    if (type == FFNRT_GGUF_BOOL)
        for (uint64_t i = 0; i < count; i++)
            if (p[i] > 1) {
                ffnrt_fail(c->err, FFNRT_ERROR_INVALID_FILE, "GGUF: byte %zu: %s: bool value %u (0 or 1 allowed)",
                           (size_t)(p + i - c->data), key, p[i]);
                return 0;
            }
    return 1;
}

static int valid_type(uint32_t t) { return t <= FFNRT_GGUF_FLOAT64; }

static int read_kv(cursor *c, gguf_kv *kv)
{
    if (!read_name(c, GGUF_MAX_KEY, &kv->key_at, &kv->key_len, "metadata key"))
        return 0;
    char key[96]; /* for messages */
    describe(key, sizeof key, "key", kv->key_at, kv->key_len);
    size_t at = c->pos;
    uint32_t type;
    if (!read_u32(c, &type, key))
        return 0;
    if (!valid_type(type)) {
        ffnrt_fail(c->err, FFNRT_ERROR_INVALID_FILE, "GGUF: byte %zu: %s has value type %u (0 to 12 exist)", at, key,
                   type);
        return 0;
    }
    kv->type = kv->element_type = (ffnrt_gguf_type)type;
    kv->count = 1;
    if (type == FFNRT_GGUF_ARRAY) {
        at = c->pos;
        if (!read_u32(c, &type, key) || !read_u64(c, &kv->count, key))
            return 0;
        if (!valid_type(type) || type == FFNRT_GGUF_ARRAY) {
            ffnrt_fail(c->err, FFNRT_ERROR_INVALID_FILE, "GGUF: byte %zu: %s is an array of %s %u", at, key,
                       type == FFNRT_GGUF_ARRAY ? "arrays (not supported, as in ggml): type" : "unknown type", type);
            return 0;
        }
        kv->element_type = (ffnrt_gguf_type)type;
    }
    size_t start = c->pos;
    if (!read_values(c, kv->element_type, kv->count, key))
        return 0;
    kv->value = c->data + start;
    kv->value_bytes = c->pos - start;
    return 1;
}

/* --------------------------------------------------------------- tensors */

static int read_tensor(cursor *c, gguf_tensor *t)
{
    if (!read_name(c, GGUF_MAX_TENSOR_NAME, &t->name_at, &t->name_len, "tensor name"))
        return 0;
    char name[96];
    describe(name, sizeof name, "tensor", t->name_at, t->name_len);
    size_t at = c->pos;
    if (!read_u32(c, &t->n_dims, name))
        return 0;
    if (t->n_dims > 4) {
        ffnrt_fail(c->err, FFNRT_ERROR_INVALID_FILE, "GGUF: byte %zu: %s has %u dimensions (at most 4)", at, name,
                   t->n_dims);
        return 0;
    }
    uint64_t elements = 1;
    for (uint32_t d = 0; d < 4; d++) {
        uint64_t ne = 1;
        at = c->pos;
        if (d < t->n_dims && !read_u64(c, &ne, name))
            return 0;
        if (ne > (uint64_t)INT64_MAX || (ne && elements > (uint64_t)INT64_MAX / ne)) {
            ffnrt_fail(c->err, FFNRT_ERROR_INVALID_FILE,
                       "GGUF: byte %zu: %s: dimension %u of %llu makes more than 2^63 elements", at, name, d,
                       (unsigned long long)ne);
            return 0;
        }
        t->ne[d] = (int64_t)ne;
        elements *= ne;
    }
    at = c->pos;
    if (!read_u32(c, &t->type, name) || !read_u64(c, &t->offset, name))
        return 0;
    const gguf_type_info *ti = ffnrt_gguf_type_info(t->type);
    if (!ti) {
        ffnrt_fail(c->err, FFNRT_ERROR_INVALID_FILE, "GGUF: byte %zu: %s has unknown tensor type %u", at, name, t->type);
        return 0;
    }
    if (t->ne[0] % ti->block_elements != 0) {
        ffnrt_fail(c->err, FFNRT_ERROR_INVALID_FILE,
                   "GGUF: %s: ne[0] = %lld is not a multiple of %s's block of %u elements", name,
                   (long long)t->ne[0], ti->name, ti->block_elements);
        return 0;
    }
    /* elements < 2^63 and block_bytes / block_elements <= 8 bytes an
     * element (I64, F64); quantized ones are far below, so this fits. */
    uint64_t blocks = elements / ti->block_elements;
    if (blocks > UINT64_MAX / ti->block_bytes) {
        ffnrt_fail(c->err, FFNRT_ERROR_INVALID_FILE, "GGUF: %s: its size overflows 64 bits", name);
        return 0;
    }
    t->bytes = blocks * ti->block_bytes;
    return 1;
}

/* ------------------------------------------------------------ the names */

typedef struct named {
    const char *name;
    size_t index;
} named;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const named *)a)->name, ((const named *)b)->name);
}

/* Sorts indices by name into *sorted; 0 with the message on a duplicate. */
static int sort_names(const char *const *names, size_t n, size_t **sorted, const char *what, ffnrt_error *err)
{
    named *v = malloc((n ? n : 1) * sizeof *v);
    *sorted = malloc((n ? n : 1) * sizeof **sorted);
    if (!v || !*sorted) {
        free(v);
        ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "GGUF: no memory to index %zu %ss", n, what);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = (named){names[i], i};
    qsort(v, n, sizeof *v, by_name);
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        if (i && strcmp(v[i - 1].name, v[i].name) == 0) {
            ffnrt_fail(err, FFNRT_ERROR_INVALID_FILE, "GGUF: the %s \"%s\" appears twice (entries %zu and %zu)", what,
                       v[i].name, v[i - 1].index < v[i].index ? v[i - 1].index : v[i].index,
                       v[i - 1].index < v[i].index ? v[i].index : v[i - 1].index);
            ok = 0;
            break;
        }
        (*sorted)[i] = v[i].index;
    }
    free(v);
    return ok;
}

/* Copies every key and tensor name into one NUL-terminated arena and
 * builds the sorted indices. */
static int index_names(ffnrt_gguf *g, ffnrt_error *err)
{
    size_t total = 0;
    for (size_t i = 0; i < g->n_kv; i++)
        total += g->kv[i].key_len + 1u;
    for (size_t i = 0; i < g->n_tensors; i++)
        total += g->tensors[i].name_len + 1u;
    size_t n_max = g->n_kv > g->n_tensors ? g->n_kv : g->n_tensors;
    g->names = malloc(total ? total : 1);
    const char **list = malloc((n_max ? n_max : 1) * sizeof *list);
    if (!g->names || !list) {
        free(list);
        ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "GGUF: no memory for %zu bytes of names", total);
        return 0;
    }
    char *p = g->names;
    for (size_t i = 0; i < g->n_kv; i++) {
        memcpy(p, g->kv[i].key_at, g->kv[i].key_len);
        p[g->kv[i].key_len] = '\0';
        g->kv[i].key = list[i] = p;
        p += g->kv[i].key_len + 1u;
    }
    int ok = sort_names(list, g->n_kv, &g->kv_by_key, "key", err);
    for (size_t i = 0; i < g->n_tensors; i++) {
        memcpy(p, g->tensors[i].name_at, g->tensors[i].name_len);
        p[g->tensors[i].name_len] = '\0';
        g->tensors[i].name = list[i] = p;
        p += g->tensors[i].name_len + 1u;
    }
    ok = ok && sort_names(list, g->n_tensors, &g->tensor_by_name, "tensor name", err);
    free(list);
    return ok;
}

int64_t ffnrt_gguf_lookup(const ffnrt_gguf *g, const char *name, int tensors)
{
    const size_t *order = tensors ? g->tensor_by_name : g->kv_by_key;
    size_t lo = 0, hi = tensors ? g->n_tensors : g->n_kv;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2, i = order[mid];
        int c = strcmp(name, tensors ? g->tensors[i].name : g->kv[i].key);
        if (c == 0)
            return (int64_t)i;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return -1;
}

/* ------------------------------------------------------------- the file */

/* Grows *array (of *cap elements) to hold one more; 0 when out of memory. */
static int grow(void **array, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 1;
    size_t next = *cap ? *cap * 2 : 16;
    void *p = realloc(*array, next * elem);
    if (!p)
        return 0;
    *array = p;
    *cap = next;
    return 1;
}

static int read_header(cursor *c, ffnrt_gguf *g, uint64_t *n_tensors, uint64_t *n_kv)
{
    const uint8_t *magic;
    if (!read_bytes(c, 4, &magic, "the magic"))
        return 0;
    if (memcmp(magic, "GGUF", 4) != 0) {
        ffnrt_fail(c->err, FFNRT_ERROR_INVALID_FILE, "GGUF: not a GGUF file (it starts with %02x %02x %02x %02x)",
                   magic[0], magic[1], magic[2], magic[3]);
        return 0;
    }
    if (!read_u32(c, &g->version, "the version"))
        return 0;
    if (g->version != 2 && g->version != 3) {
        const char *why = g->version == 1           ? " (v1's 32-bit counts: not read; convert it with a newer tool)"
                          : (g->version & 0xffff) == 0 ? " (a big-endian file? only little-endian is read)"
                                                     : " (versions 2 and 3 are read)";
        ffnrt_fail(c->err, FFNRT_ERROR_INVALID_FILE, "GGUF: version %u%s", g->version, why);
        return 0;
    }
    if (!read_u64(c, n_tensors, "the tensor count") || !read_u64(c, n_kv, "the key count"))
        return 0;
    /* Cheap bounds first: ffnrt's cap on entries, then the bytes there
     * are (a key takes at least 14 bytes: length, one byte, type, a
     * uint8; a tensor info at least 25). Each message says which. */
    if (*n_kv > GGUF_MAX_ENTRIES || *n_tensors > GGUF_MAX_ENTRIES) {
        ffnrt_fail(c->err, FFNRT_ERROR_INVALID_FILE,
                   "GGUF: the header claims %llu tensors and %llu keys; ffnrt reads at most %u (2^20) of each",
                   (unsigned long long)*n_tensors, (unsigned long long)*n_kv, GGUF_MAX_ENTRIES);
        return 0;
    }
    if (*n_kv > left(c) / 14 || *n_tensors > left(c) / 25) {
        ffnrt_fail(c->err, FFNRT_ERROR_INVALID_FILE,
                   "GGUF: the header claims %llu tensors and %llu keys; the %zu bytes after it cannot hold that many "
                   "(a key takes at least 14 bytes, a tensor info 25)",
                   (unsigned long long)*n_tensors, (unsigned long long)*n_kv, left(c));
        return 0;
    }
    return 1;
}

static int read_alignment(ffnrt_gguf *g, ffnrt_error *err)
{
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    int64_t i = ffnrt_gguf_lookup(g, "general.alignment", 0);
    if (i < 0)
        return 1;
    const gguf_kv *kv = &g->kv[i];
    if (kv->type != FFNRT_GGUF_UINT32) {
        ffnrt_fail(err, FFNRT_ERROR_INVALID_FILE, "GGUF: general.alignment has value type %d (uint32 expected)",
                   (int)kv->type);
        return 0;
    }
    g->alignment = le(kv->value, 4);
    if (g->alignment == 0 || (g->alignment & (g->alignment - 1)) != 0) {
        ffnrt_fail(err, FFNRT_ERROR_INVALID_FILE, "GGUF: general.alignment is %llu, not a power of two",
                   (unsigned long long)g->alignment);
        return 0;
    }
    return 1;
}

typedef struct span {
    uint64_t offset, bytes;
    size_t index;
} span;

static int by_offset(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset ? 1 : x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

/* Every tensor aligned and inside the data section; none overlapping. */
static int check_data(ffnrt_gguf *g, size_t infos_end, ffnrt_error *err)
{
    if (infos_end > UINT64_MAX - g->alignment) {
        ffnrt_fail(err, FFNRT_ERROR_INVALID_FILE, "GGUF: the data section's offset overflows");
        return 0;
    }
    g->data_offset = (infos_end + g->alignment - 1) / g->alignment * g->alignment;
    if (g->n_tensors == 0)
        return 1;
    uint64_t room = g->data_offset <= g->size ? g->size - g->data_offset : 0;
    if (g->data_offset > g->size) {
        ffnrt_fail(err, FFNRT_ERROR_INVALID_FILE, "GGUF: the data section would start at byte %llu, past the end (%zu)",
                   (unsigned long long)g->data_offset, g->size);
        return 0;
    }
    span *s = malloc(g->n_tensors * sizeof *s);
    if (!s) {
        ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "GGUF: no memory to check %zu tensors", g->n_tensors);
        return 0;
    }
    int ok = 1;
    for (size_t i = 0; ok && i < g->n_tensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        if (t->offset % g->alignment != 0) {
            ffnrt_fail(err, FFNRT_ERROR_INVALID_FILE, "GGUF: tensor \"%s\" at offset %llu is not aligned to %llu",
                       t->name, (unsigned long long)t->offset, (unsigned long long)g->alignment);
            ok = 0;
        } else if (t->offset > room || t->bytes > room - t->offset) {
            ffnrt_fail(err, FFNRT_ERROR_INVALID_FILE,
                       "GGUF: tensor \"%s\" (%llu bytes at offset %llu) ends past the data section's %llu bytes",
                       t->name, (unsigned long long)t->bytes, (unsigned long long)t->offset, (unsigned long long)room);
            ok = 0;
        }
        s[i] = (span){t->offset, t->bytes, i};
    }
    if (ok)
        qsort(s, g->n_tensors, sizeof *s, by_offset);
    for (size_t i = 1; ok && i < g->n_tensors; i++)
        if (s[i - 1].offset + s[i - 1].bytes > s[i].offset) { /* both inside the file: no overflow */
            ffnrt_fail(err, FFNRT_ERROR_INVALID_FILE, "GGUF: tensors \"%s\" and \"%s\" overlap (offsets %llu and %llu)",
                       g->tensors[s[i - 1].index].name, g->tensors[s[i].index].name,
                       (unsigned long long)s[i - 1].offset, (unsigned long long)s[i].offset);
            ok = 0;
        }
    free(s);
    return ok;
}

ffnrt_status ffnrt_gguf_parse(const uint8_t *data, size_t size, ffnrt_gguf *g, ffnrt_error *err)
{
    cursor c = {data, size, 0, err};
    g->base = data;
    g->size = size;
    uint64_t n_tensors, n_kv;
    if (!read_header(&c, g, &n_tensors, &n_kv))
        return err->status;
    size_t cap = 0;
    for (uint64_t i = 0; i < n_kv; i++) {
        if (!grow((void **)&g->kv, &cap, g->n_kv, sizeof *g->kv))
            return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "GGUF: no memory for key %llu", (unsigned long long)i);
        memset(&g->kv[g->n_kv], 0, sizeof *g->kv);
        if (!read_kv(&c, &g->kv[g->n_kv]))
            return err->status;
        g->n_kv++;
    }
    cap = 0;
    for (uint64_t i = 0; i < n_tensors; i++) {
        if (!grow((void **)&g->tensors, &cap, g->n_tensors, sizeof *g->tensors))
            return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "GGUF: no memory for tensor %llu",
                              (unsigned long long)i);
        memset(&g->tensors[g->n_tensors], 0, sizeof *g->tensors);
        if (!read_tensor(&c, &g->tensors[g->n_tensors]))
            return err->status;
        g->n_tensors++;
    }
    if (!index_names(g, err) || !read_alignment(g, err) || !check_data(g, c.pos, err))
        return err->status;
    return FFNRT_OK;
}

void ffnrt_gguf_release(ffnrt_gguf *g)
{
    free(g->kv);
    free(g->tensors);
    free(g->kv_by_key);
    free(g->tensor_by_name);
    free(g->names);
    g->kv = NULL;
    g->tensors = NULL;
    g->kv_by_key = g->tensor_by_name = NULL;
    g->names = NULL;
}
