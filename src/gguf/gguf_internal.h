/* The GGUF reader's internals: the parsed form of a file (gguf_parse.c
 * builds it from bytes, checking everything; gguf.c serves the public
 * API from it). */
#ifndef FFNRT_GGUF_INTERNAL_H
#define FFNRT_GGUF_INTERNAL_H

#include "ffnrt_gguf.h"

#include "base/error.h"

#include <stddef.h>
#include <stdint.h>

#define GGUF_MAX_ENTRIES (1u << 20)  /* keys, and tensors: real models have thousands */
#define GGUF_MAX_KEY 65535u          /* the spec's limit */
#define GGUF_MAX_TENSOR_NAME 64u     /* the spec's limit */
#define GGUF_DEFAULT_ALIGNMENT 32u
#define GGUF_MAX_LAYER_SIZE UINT32_MAX /* d_model and hidden: ffnrt_ffn_create's limit */

typedef struct gguf_kv {
    const char *key;          /* into names */
    const uint8_t *key_at;    /* the key in the file (not NUL-terminated) */
    uint32_t key_len;
    ffnrt_gguf_type type, element_type;
    uint64_t count;
    const uint8_t *value;     /* the encoded value (an array's: its elements) */
    size_t value_bytes;
} gguf_kv;

typedef struct gguf_tensor {
    const char *name;         /* into names */
    const uint8_t *name_at;   /* the name in the file */
    uint32_t name_len;
    uint32_t type;
    uint32_t n_dims;
    int64_t ne[4];
    uint64_t offset;          /* from the start of the data section */
    uint64_t bytes;
} gguf_tensor;

struct ffnrt_gguf {
    const uint8_t *base;      /* the file's bytes */
    size_t size;
    void *map;                /* the mapping ffnrt_gguf_open made, else NULL */
    size_t map_size;
    uint32_t version;
    uint64_t alignment;
    uint64_t data_offset;
    size_t n_kv, n_tensors;
    gguf_kv *kv;
    gguf_tensor *tensors;
    size_t *kv_by_key;        /* indices sorted by key, for lookups */
    size_t *tensor_by_name;   /* indices sorted by name */
    char *names;              /* every key and tensor name, NUL-terminated */
};

/* A GGUF tensor type: name, elements a block, bytes a block. */
typedef struct gguf_type_info {
    const char *name;
    uint32_t block_elements, block_bytes;
} gguf_type_info;

/* The type's info, NULL for a type id GGUF does not define (or has removed). */
const gguf_type_info *ffnrt_gguf_type_info(uint32_t type);

/* Parses and checks size bytes at data into g (zeroed by the caller); on
 * failure g holds nothing to free beyond what ffnrt_gguf_release frees. */
ffnrt_status ffnrt_gguf_parse(const uint8_t *data, size_t size, ffnrt_gguf *g, ffnrt_error *err);
/* Frees what ffnrt_gguf_parse allocated (not the mapping). */
void ffnrt_gguf_release(ffnrt_gguf *g);
/* n bytes from a file as message text, NUL-terminated in cap bytes:
 * printable ASCII as it is, '"' and '\\' escaped with a backslash, every
 * other byte as \xHH (a NUL included, so "llama\0x" never reads as
 * "llama"), "..." where it is cut. */
void ffnrt_gguf_escape(char *out, size_t cap, const void *bytes, size_t n);
/* Index by binary search over a sorted index, -1 if absent. */
int64_t ffnrt_gguf_lookup(const ffnrt_gguf *g, const char *name, int tensors);

#endif
