/* A tiny GGUF writer for the tests and the fuzz seeds: low-level pieces
 * (so a test can write a hostile file field by field) and a small
 * llama-like model with gated FFN layers. Little-endian, as GGUF. */
#ifndef FFNRT_TESTS_GGUF_WRITER_H
#define FFNRT_TESTS_GGUF_WRITER_H

#include <ffnrt.h>

#include <stddef.h>
#include <stdint.h>

typedef struct gw_buf {
    uint8_t *p;
    size_t n, cap;
} gw_buf;

void gw_raw(gw_buf *b, const void *data, size_t n);
void gw_u8(gw_buf *b, uint8_t v);
void gw_u32(gw_buf *b, uint32_t v);
void gw_u64(gw_buf *b, uint64_t v);
void gw_string(gw_buf *b, const char *s); /* u64 length, then the bytes */
void gw_header(gw_buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv);
void gw_kv_u32(gw_buf *b, const char *key, uint32_t v);
void gw_kv_string(gw_buf *b, const char *key, const char *v);
/* A key and an array's header; the elements follow (gw_u32, gw_string...). */
void gw_kv_array(gw_buf *b, const char *key, uint32_t element_type, uint64_t count);
void gw_tensor_info(gw_buf *b, const char *name, uint32_t n_dims, const int64_t *ne, uint32_t type, uint64_t offset);
void gw_align(gw_buf *b, size_t alignment); /* zero bytes up to a multiple */
void gw_free(gw_buf *b);
int gw_save(const gw_buf *b, const char *path); /* 0 on success */

/* GGUF's type id of an ffnrt weight format. */
uint32_t gw_ggml_type(ffnrt_weight_format f);

/* A model of `layers` gated FFN layers (llama names, arch "llama"): per
 * layer blk.N.ffn_gate/ffn_up.weight [hidden, d_model], ffn_down.weight
 * [d_model, hidden], quantized from gw_model_weight, an F32 norm between
 * them (so tensors of other kinds sit in the file), and biases if asked.
 * Metadata: general.architecture, llama.block_count, embedding_length,
 * feed_forward_length, a float, a bool, an array of strings and one of
 * int32, and general.alignment when alignment is not 0. */
typedef struct gw_model {
    uint32_t version;       /* 2 or 3 */
    uint32_t alignment;     /* 0: not written (GGUF's default, 32) */
    int layers;
    int64_t d_model, hidden;
    ffnrt_weight_format format; /* one ffnrt quantizes to */
    int bias;
} gw_model;

void gw_build_model(gw_buf *b, const gw_model *m);
/* The fp32 weight the model quantizes: which 0 gate, 1 up, 2 down;
 * bias values for which 3, 4, 5 (col ignored). */
float gw_model_weight(int layer, int which, int64_t row, int64_t col);

#endif
