/* ffnrt_gguf: a small reader of GGUF files (the model format of llama.cpp
 * and ggml), to hand a model's FFN weights to ffnrt layers.
 *
 * Reads GGUF v2 and v3, little-endian: the header, the metadata keys and
 * values, the tensor infos and the data section. Everything is checked
 * when the file is opened, before any use: sizes, counts and lengths
 * against the bytes that are there, value and tensor types, shapes
 * (n_dims <= 4, ne[0] a multiple of the type's block, no overflow),
 * general.alignment (a power of two), tensor offsets (aligned, inside the
 * data section, not overlapping), unique keys and tensor names. A
 * truncated, corrupt or hostile file is FFNRT_ERROR_INVALID_FILE with a
 * message saying what and where; nothing is read outside the file, and
 * what is allocated grows only with entries actually read (at most
 * 1,048,576 keys and as many tensors).
 *
 * Tensor shapes are GGUF's: ne[0] is the contiguous dimension, so a weight
 * [out, in] (nn.Linear) has ne = {in, out}. Tensor data stays in the file's
 * mapping (or the caller's memory) and is returned as pointers into it;
 * for a mapped file, shrinking the file while it is open is the one thing
 * a reader cannot guard against (the OS then raises SIGBUS on access). */
#ifndef FFNRT_GGUF_H
#define FFNRT_GGUF_H

#include "ffnrt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ffnrt_gguf ffnrt_gguf;

/* Metadata value types, as GGUF numbers them. */
typedef enum ffnrt_gguf_type {
    FFNRT_GGUF_UINT8 = 0,
    FFNRT_GGUF_INT8 = 1,
    FFNRT_GGUF_UINT16 = 2,
    FFNRT_GGUF_INT16 = 3,
    FFNRT_GGUF_UINT32 = 4,
    FFNRT_GGUF_INT32 = 5,
    FFNRT_GGUF_FLOAT32 = 6,
    FFNRT_GGUF_BOOL = 7,
    FFNRT_GGUF_STRING = 8,
    FFNRT_GGUF_ARRAY = 9,
    FFNRT_GGUF_UINT64 = 10,
    FFNRT_GGUF_INT64 = 11,
    FFNRT_GGUF_FLOAT64 = 12
} ffnrt_gguf_type;

/* Maps the file read-only and checks it whole. path is UTF-8 on every OS
 * (on Windows, not the ANSI code page of a char argv: take it from
 * GetCommandLineW or wmain and convert). A path that is not a regular
 * file (a FIFO, a directory, a device) is refused at once, never waited
 * on, with FFNRT_ERROR_INVALID_ARGUMENT and a message naming the path and
 * what it is. */
FFNRT_API ffnrt_status ffnrt_gguf_open(const char *path, ffnrt_gguf **out);
/* The same over bytes in memory, which stay the caller's and must outlive
 * the handle. */
FFNRT_API ffnrt_status ffnrt_gguf_open_memory(const void *data, size_t size, ffnrt_gguf **out);
FFNRT_API void ffnrt_gguf_close(ffnrt_gguf *gguf); /* NULL is a no-op */

FFNRT_API uint32_t ffnrt_gguf_version(const ffnrt_gguf *gguf);     /* 2 or 3 */
FFNRT_API uint64_t ffnrt_gguf_alignment(const ffnrt_gguf *gguf);   /* general.alignment, else 32 */
FFNRT_API uint64_t ffnrt_gguf_data_offset(const ffnrt_gguf *gguf); /* the data section, from the file's start */

/* ---------------------------------------------------------------- metadata */

typedef struct ffnrt_gguf_kv_info {
    const char *key;              /* owned by the handle */
    ffnrt_gguf_type type;         /* FFNRT_GGUF_ARRAY for an array */
    ffnrt_gguf_type element_type; /* an array's elements' type; type otherwise */
    uint64_t count;               /* an array's length; 1 otherwise */
} ffnrt_gguf_kv_info;

FFNRT_API size_t ffnrt_gguf_kv_count(const ffnrt_gguf *gguf);
FFNRT_API ffnrt_status ffnrt_gguf_kv_at(const ffnrt_gguf *gguf, size_t i, ffnrt_gguf_kv_info *out);
/* Index of a key, -1 if absent (or gguf or key NULL). */
FFNRT_API int64_t ffnrt_gguf_find_key(const ffnrt_gguf *gguf, const char *key);

/* Scalar values by key. An absent key is FFNRT_ERROR_INVALID_ARGUMENT, a
 * value of another type FFNRT_ERROR_DTYPE_MISMATCH (the message names both
 * types). _uint takes any unsigned type, a non-negative signed one and
 * bool; _int any integer type whose value fits int64; _float FLOAT32 or
 * FLOAT64. A string's bytes are not NUL-terminated and may hold any byte:
 * use its length. */
FFNRT_API ffnrt_status ffnrt_gguf_get_uint(const ffnrt_gguf *gguf, const char *key, uint64_t *out);
FFNRT_API ffnrt_status ffnrt_gguf_get_int(const ffnrt_gguf *gguf, const char *key, int64_t *out);
FFNRT_API ffnrt_status ffnrt_gguf_get_float(const ffnrt_gguf *gguf, const char *key, double *out);
FFNRT_API ffnrt_status ffnrt_gguf_get_string(const ffnrt_gguf *gguf, const char *key, const char **str,
                                             size_t *length);
/* An array's element type, length and encoded bytes, as in the file:
 * numbers little-endian and unaligned (copy them out with memcpy),
 * strings as GGUF writes them (a uint64 length, then the bytes, each). */
FFNRT_API ffnrt_status ffnrt_gguf_get_array(const ffnrt_gguf *gguf, const char *key, ffnrt_gguf_type *element_type,
                                            uint64_t *count, const void **data, size_t *bytes);

/* ----------------------------------------------------------------- tensors */

typedef struct ffnrt_gguf_tensor_info {
    const char *name;            /* owned by the handle */
    uint32_t ggml_type;          /* GGUF's tensor type id (Q4_1 = 3, ...) */
    const char *type_name;       /* "Q4_1" */
    ffnrt_weight_format format;  /* ffnrt's format, FFNRT_WEIGHT_FORMAT_COUNT where it has none */
    uint32_t n_dims;             /* 0 to 4 */
    int64_t ne[4];               /* ne[0] contiguous; 1 past n_dims */
    uint64_t offset;             /* of the data, from the start of the file */
    uint64_t bytes;
    const void *data;            /* inside the mapping (or the caller's memory) */
} ffnrt_gguf_tensor_info;

FFNRT_API size_t ffnrt_gguf_tensor_count(const ffnrt_gguf *gguf);
FFNRT_API ffnrt_status ffnrt_gguf_tensor_at(const ffnrt_gguf *gguf, size_t i, ffnrt_gguf_tensor_info *out);
/* Index of a tensor, -1 if absent (or gguf or name NULL). */
FFNRT_API int64_t ffnrt_gguf_find_tensor(const ffnrt_gguf *gguf, const char *name);

/* ------------------------------------------------------------ FFN layers */

/* Layer N's feed-forward weights, by GGUF's names: blk.N.ffn_up.weight
 * (W_in, or the value W_value of a gated layer), blk.N.ffn_gate.weight
 * (W_gate; present iff gated), blk.N.ffn_down.weight (W_out), and the
 * matching .bias tensors if present. */
typedef struct ffnrt_gguf_ffn {
    int64_t d_model;   /* ffn_up's ne[0] */
    int64_t hidden;    /* ffn_up's ne[1] */
    int gated;         /* 1 if blk.N.ffn_gate.weight exists */
    int bias;          /* 1 if every projection has a bias, 0 if none has */
    ffnrt_gguf_tensor_info gate, up, down;                /* gate zeroed if not gated */
    ffnrt_gguf_tensor_info gate_bias, up_bias, down_bias; /* zeroed if no bias */
} ffnrt_gguf_ffn;

/* Finds and checks layer N's FFN tensors: weights 2-D with gate and up
 * [d_model -> hidden] (ne = {d_model, hidden}) and down ne = {hidden,
 * d_model}, each in one of ffnrt's weight formats (else
 * FFNRT_ERROR_UNSUPPORTED); biases 1-D f32, f16 or bf16 of hidden
 * (gate, up) and d_model (down), all or none; sizes agreeing with
 * {arch}.embedding_length and {arch}.feed_forward_length where the file
 * has them. A missing layer is FFNRT_ERROR_INVALID_ARGUMENT (the message
 * gives {arch}.block_count), a wrong shape FFNRT_ERROR_SHAPE_MISMATCH; a
 * d_model or hidden an ffnrt layer cannot have (0, or past 2^32 - 1) is
 * FFNRT_ERROR_INVALID_ARGUMENT, the message naming the tensor and size. */
FFNRT_API ffnrt_status ffnrt_gguf_ffn_layer(const ffnrt_gguf *gguf, int64_t layer, ffnrt_gguf_ffn *out);

/* The layer as an ffnrt FFN: fills *desc (kind, sizes, biases, each
 * matrix's format: a block format as in the file, dense matrices setting
 * the dtype, else f32) and *weights (pointers to the file's bytes, handed
 * to ffnrt_ffn_create unchanged: they must outlive that call only). The
 * activation comes from general.architecture, as the original model
 * defines it (each checked against llama.cpp's graph, which agrees except
 * for bert): llama, mistral3, qwen2, qwen3, granite, olmo2, smollm3,
 * internlm2, nomic-bert -> SwiGLU (gate ffn_gate, value ffn_up); gemma,
 * gemma2, gemma3 -> GEGLU with tanh GELU; gpt2, starcoder, phi2 -> dense
 * tanh GELU; bert -> dense erf GELU (BERT's own and Hugging Face's gelu;
 * llama.cpp runs the tanh form, up to 4.7e-4 apart). Another
 * architecture, a gate where it has none (or none where it has one: the
 * message names the missing gate), dense matrices of two types or biases
 * not in the dtype are FFNRT_ERROR_UNSUPPORTED (the message says what). */
FFNRT_API ffnrt_status ffnrt_gguf_ffn_desc(const ffnrt_gguf *gguf, const ffnrt_gguf_ffn *layer, ffnrt_ffn_desc *desc,
                                           ffnrt_ffn_weights *weights);

#ifdef __cplusplus
}
#endif
#endif /* FFNRT_GGUF_H */
