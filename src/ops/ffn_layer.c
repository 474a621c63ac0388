/* FFN layers: validation of descriptors and weights, creation from host
 * arrays or device tensors, and the accounting of ffnrt_ffn_cost_of.
 * Matrices in a block format arrive as GGUF's bytes and are repacked here
 * into the layer's own code and scale tensors (src/quant/layout.c). */
#include "ops/ffn_internal.h"
#include "dispatch/dispatch.h"
#include "quant/quant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MATVEC_TOKENS 32u /* registers per work-item grow with it */

static const char *const slot_names[FFN_SLOT_COUNT] = {"w_in",    "b_in",         "w_gate",       "b_gate", "w_value",
                                                       "b_value", "w_gate_value", "b_gate_value", "w_out",  "b_out"};

ffnrt_status ffnrt_ffn_check_desc(ffnrt_error *err, const ffnrt_ffn_desc *d, const char *fn)
{
    if (!d)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: desc is NULL", fn);
    if (d->kind != FFNRT_FFN_DENSE && d->kind != FFNRT_FFN_GATED)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not an FFN kind", fn, (int)d->kind);
    if (d->d_model < 1 || d->hidden < 1 || d->d_model > UINT32_MAX || d->hidden > UINT32_MAX)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: d_model %lld and hidden %lld must be in [1, 2^32)",
                          fn, (long long)d->d_model, (long long)d->hidden);
    if (ffnrt_dtype_size(d->dtype) == 0)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not a dtype", fn, (int)d->dtype);
    if (d->bias != 0 && d->bias != 1)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: bias must be 0 or 1", fn);
    if ((unsigned)d->path > FFNRT_FFN_PATH_UNFUSED || (unsigned)d->matmul > FFNRT_MATMUL_TILED)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: bad path (%d) or matmul kernel (%d)", fn,
                          (int)d->path, (int)d->matmul);
    if (d->matvec_max_tokens > MAX_MATVEC_TOKENS)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: matvec_max_tokens %u is above %u", fn,
                          d->matvec_max_tokens, MAX_MATVEC_TOKENS);
    if (ffnrt_ffn_gated(d)) {
        if ((unsigned)d->glu.kind >= FFNRT_GLU_COUNT)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not a GLU kind", fn, (int)d->glu.kind);
        if (!isfinite(d->glu.beta))
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: glu.beta must be finite", fn);
    } else {
        if ((unsigned)d->activation.kind >= FFNRT_ACT_COUNT)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not an activation", fn,
                              (int)d->activation.kind);
        if (d->activation.kind == FFNRT_ACT_PRELU)
            return ffnrt_fail(err, FFNRT_ERROR_UNSUPPORTED,
                              "%s: PReLU's learned slopes are not supported in an FFN layer", fn);
        if (!isfinite(d->activation.alpha) || !isfinite(d->activation.beta))
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: activation alpha and beta must be finite", fn);
    }
    return ffnrt_ffn_check_formats(err, d, fn);
}

/* The block format a weight slot holds, FFNRT_WEIGHT_F32 for the dtype. */
static ffnrt_weight_format slot_format(const ffnrt_ffn_desc *d, int slot)
{
    switch (slot) {
    case FFN_W_IN: case FFN_W_GATE: case FFN_W_GATE_VALUE: return ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_IN);
    case FFN_W_VALUE: return ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_VALUE);
    case FFN_W_OUT: return ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_OUT);
    default: return FFNRT_WEIGHT_F32;
    }
}

/* Expected shape of a slot: rows x cols, cols 0 for a 1-D bias. */
static void slot_shape(const ffnrt_ffn_desc *d, int slot, int64_t *rows, int64_t *cols)
{
    int64_t h = d->hidden, m = d->d_model;
    switch (slot) {
    case FFN_W_IN: case FFN_W_GATE: case FFN_W_VALUE: *rows = h, *cols = m; break;
    case FFN_W_GATE_VALUE: *rows = 2 * h, *cols = m; break;
    case FFN_B_GATE_VALUE: *rows = 2 * h, *cols = 0; break;
    case FFN_W_OUT: *rows = m, *cols = h; break;
    case FFN_B_OUT: *rows = m, *cols = 0; break;
    default: *rows = h, *cols = 0; break; /* b_in, b_gate, b_value */
    }
}

/* Whether the desc has slot s (stacked: a gated layer's gate and value in
 * one matrix); why, when it has not. */
static int slot_wanted(const ffnrt_ffn_desc *d, int s, int stacked, const char **why)
{
    int bias = s == FFN_B_IN || s == FFN_B_GATE || s == FFN_B_VALUE || s == FFN_B_GATE_VALUE || s == FFN_B_OUT;
    int wanted;
    *why = "";
    if (s == FFN_W_OUT || s == FFN_B_OUT) {
        wanted = 1;
    } else if (!ffnrt_ffn_gated(d)) {
        wanted = s == FFN_W_IN || s == FFN_B_IN, *why = "a dense layer has only w_in, w_out and their biases";
    } else if (s == FFN_W_IN || s == FFN_B_IN) {
        wanted = 0, *why = "a gated layer has gate and value weights, not w_in";
    } else {
        wanted = stacked == (s == FFN_W_GATE_VALUE || s == FFN_B_GATE_VALUE);
        *why = "give w_gate and w_value, or w_gate_value stacked, not both";
    }
    if (bias && wanted && !d->bias)
        wanted = 0, *why = "desc.bias is 0";
    return wanted;
}

static int slot_is_bias(int s)
{
    return s == FFN_B_IN || s == FFN_B_GATE || s == FFN_B_VALUE || s == FFN_B_GATE_VALUE || s == FFN_B_OUT;
}

/* Which slots the desc needs, given the slots present (NULL or not):
 * fails naming the first slot missing or given in excess. */
static ffnrt_status check_slots(ffnrt_error *err, const ffnrt_ffn_desc *d, const void *const present[FFN_SLOT_COUNT],
                                const char *fn)
{
    int stacked = ffnrt_ffn_gated(d) && present[FFN_W_GATE_VALUE] != NULL;
    for (int s = 0; s < FFN_SLOT_COUNT; s++) {
        const char *why;
        int wanted = slot_wanted(d, s, stacked, &why);
        if (wanted && !present[s])
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: weights.%s is NULL%s", fn, slot_names[s],
                              slot_is_bias(s) ? " (desc.bias is 1)" : "");
        if (!wanted && present[s])
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: weights.%s must be NULL: %s", fn,
                              slot_names[s], why);
    }
    /* Both halves of a stacked matrix share format_in. */
    if (stacked && ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_VALUE) != ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_IN))
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                          "%s: weights.w_gate_value holds gate and value in format_in (%s), but desc.format_value is "
                          "%s: give them equal",
                          fn, ffnrt_weight_format_name(ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_IN)),
                          ffnrt_weight_format_name(ffnrt_ffn_format(d, FFNRT_FFN_MATRIX_VALUE)));
    return FFNRT_OK;
}

/* A block-format slot's bytes: GGUF's blocks of its [rows, k] matrix. */
static size_t block_bytes(const ffnrt_ffn_desc *d, int slot)
{
    int64_t rows, cols;
    slot_shape(d, slot, &rows, &cols);
    size_t bytes = 0;
    ffnrt_weight_bytes(slot_format(d, slot), rows, cols, &bytes); /* k checked with the desc */
    return bytes;
}

/* GGUF's bytes of a block-format slot repacked into two new tensors of
 * words: its codes and its scales. */
static ffnrt_status upload_blocks(ffnrt_context *ctx, const ffnrt_ffn_desc *d, int slot, const void *bytes,
                                  const char *fn, ffnrt_tensor **codes, ffnrt_tensor **scales)
{
    ffnrt_weight_format f = slot_format(d, slot);
    int64_t rows, k;
    slot_shape(d, slot, &rows, &k);
    int64_t cw = (int64_t)ffnrt_quant_code_words(f, (uint64_t)k) * rows;
    int64_t sw = (int64_t)ffnrt_quant_scale_words(f, (uint64_t)k) * rows;
    uint32_t *host = malloc((size_t)(cw + sw) * sizeof *host);
    if (!host)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory repacking weights.%s",
                          fn, slot_names[slot]);
    ffnrt_quant_repack(f, bytes, (uint64_t)rows, (uint64_t)k, host, host + cw);
    ffnrt_status st = ffnrt_tensor_alloc(ctx, FFNRT_DTYPE_F32, 1, &cw, fn, codes);
    if (st == FFNRT_OK)
        st = ffnrt_tensor_alloc(ctx, FFNRT_DTYPE_F32, 1, &sw, fn, scales);
    if (st == FFNRT_OK)
        st = ffnrt_tensor_upload(*codes, host, (size_t)cw * 4);
    if (st == FFNRT_OK)
        st = ffnrt_tensor_upload(*scales, host + cw, (size_t)sw * 4);
    free(host);
    if (st != FFNRT_OK) {
        ffnrt_tensor_free(*codes);
        ffnrt_tensor_free(*scales);
        *codes = *scales = NULL;
    }
    return st;
}

static ffnrt_status check_slot_tensor(ffnrt_context *ctx, const ffnrt_ffn_desc *d, const ffnrt_tensor *t, int slot,
                                      const char *what, const char *fn)
{
    char name[32];
    snprintf(name, sizeof name, "%s.%s", what, slot_names[slot]);
    ffnrt_status st = ffnrt_check_tensor(ctx, t, fn, name);
    if (st != FFNRT_OK)
        return st;
    if (t->dtype != d->dtype)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_DTYPE_MISMATCH, "%s: %s is %s, the layer is %s", fn, name,
                          ffnrt_dtype_name(t->dtype), ffnrt_dtype_name(d->dtype));
    int64_t rows, cols;
    slot_shape(d, slot, &rows, &cols);
    int ok = cols ? t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols : t->ndim == 1 && t->shape[0] == rows;
    if (!ok) {
        char got[64] = "";
        for (size_t i = 0; i < t->ndim && i < 4; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", i ? ", " : "", (long long)t->shape[i]);
        if (cols)
            return ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH,
                              "%s: %s is [%s], expected [%lld, %lld] ([out, in] as nn.Linear)", fn, name, got,
                              (long long)rows, (long long)cols);
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH, "%s: %s is [%s], expected [%lld]", fn, name,
                          got, (long long)rows);
    }
    return FFNRT_OK;
}

ffnrt_status ffnrt_ffn_check_gradients(ffnrt_context *ctx, const ffnrt_ffn_desc *d,
                                       const ffnrt_tensor *const grads[FFN_SLOT_COUNT], const char *fn)
{
    int stacked = grads[FFN_W_GATE_VALUE] || grads[FFN_B_GATE_VALUE];
    for (int s = 0; s < FFN_SLOT_COUNT; s++) {
        const char *why;
        if (!grads[s])
            continue;
        if (!slot_wanted(d, s, stacked, &why))
            return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: grads.%s must be NULL: %s", fn,
                              slot_names[s], why);
        ffnrt_status st = check_slot_tensor(ctx, d, grads[s], s, "grads", fn);
        if (st != FFNRT_OK)
            return st;
    }
    return FFNRT_OK;
}

void ffnrt_ffn_drop_scratch(ffnrt_ffn *l)
{
    ffnrt_tensor_free(l->h);
    ffnrt_tensor_free(l->g);
    ffnrt_tensor_free(l->v);
    ffnrt_tensor_free(l->pre);
    ffnrt_tensor_free(l->xq);
    l->h = l->g = l->v = l->pre = l->xq = NULL;
    l->scratch_tokens = 0;
    l->saved_tokens = 0;
}

void ffnrt_ffn_destroy(ffnrt_ffn *layer)
{
    if (!layer)
        return;
    ffnrt_ffn_drop_scratch(layer);
    ffnrt_ffn_drop_backward(layer);
    for (int s = 0; s < FFN_SLOT_COUNT; s++) {
        ffnrt_tensor_free(layer->owned[s]);
        ffnrt_tensor_free(layer->scales[s]);
    }
    free(layer->last_stats);
    free(layer->feature_bits);
    free(layer->window_alive);
    free(layer);
}

/* Checks the tensors and builds the layer over them (not owned). Block
 * format slots hold their codes, already checked, with their scales in sc. */
static ffnrt_status create_layer(ffnrt_context *ctx, const ffnrt_ffn_desc *desc, const ffnrt_tensor *const t[FFN_SLOT_COUNT],
                                 ffnrt_tensor *const sc[FFN_SLOT_COUNT], const char *fn, ffnrt_ffn **out)
{
    ffnrt_status st = check_slots(&ctx->error, desc, (const void *const *)t, fn);
    for (int s = 0; s < FFN_SLOT_COUNT && st == FFNRT_OK; s++)
        if (t[s] && !slot_format(desc, s))
            st = check_slot_tensor(ctx, desc, t[s], s, "weights", fn);
    if (st != FFNRT_OK)
        return st;
    ffnrt_ffn *l = calloc(1, sizeof *l);
    if (!l)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    l->ctx = ctx;
    l->desc = *desc;
    l->desc.activation.slopes = NULL;
    uint64_t h = (uint64_t)desc->hidden;
#define OPERAND(w, row0, b, b0) (ffnrt_gemm_operand){t[w], row0, t[b], b0, sc[w], slot_format(desc, w)}
    l->in = OPERAND(FFN_W_IN, 0, FFN_B_IN, 0);
    if (t[FFN_W_GATE_VALUE]) {
        l->gate = OPERAND(FFN_W_GATE_VALUE, 0, FFN_B_GATE_VALUE, 0);
        l->value = OPERAND(FFN_W_GATE_VALUE, h, FFN_B_GATE_VALUE, h);
    } else {
        l->gate = OPERAND(FFN_W_GATE, 0, FFN_B_GATE, 0);
        l->value = OPERAND(FFN_W_VALUE, 0, FFN_B_VALUE, 0);
    }
    l->out = OPERAND(FFN_W_OUT, 0, FFN_B_OUT, 0);
#undef OPERAND
    *out = l;
    return FFNRT_OK;
}

ffnrt_status ffnrt_ffn_create_from_tensors(ffnrt_context *ctx, const ffnrt_ffn_desc *desc,
                                           const ffnrt_ffn_weight_tensors *weights, ffnrt_ffn **out)
{
    static const char fn[] = "ffnrt_ffn_create_from_tensors";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    return ffnrt_context_finish_call(ctx, ffnrt_ffn_build_on_tensors(ctx, desc, weights, fn, out));
}

ffnrt_status ffnrt_ffn_build_on_tensors(ffnrt_context *ctx, const ffnrt_ffn_desc *desc,
                                        const ffnrt_ffn_weight_tensors *weights, const char *fn, ffnrt_ffn **out)
{
    if (out)
        *out = NULL;
    ffnrt_status st = ffnrt_ffn_check_desc(&ctx->error, desc, fn);
    if (st == FFNRT_OK && (!weights || !out))
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, weights ? "out" : "weights");
    const ffnrt_tensor *t[FFN_SLOT_COUNT] = {0};
    ffnrt_tensor *codes[FFN_SLOT_COUNT] = {0}, *scales[FFN_SLOT_COUNT] = {0};
    if (st == FFNRT_OK) {
        const ffnrt_tensor *given[FFN_SLOT_COUNT] = {weights->w_in,         weights->b_in,         weights->w_gate,
                                                 weights->b_gate,       weights->w_value,      weights->b_value,
                                                 weights->w_gate_value, weights->b_gate_value, weights->w_out,
                                                 weights->b_out};
        memcpy(t, given, sizeof t);
        st = check_slots(&ctx->error, desc, (const void *const *)t, fn);
    }
    /* Block formats: the tensor's bytes, read back and repacked. */
    for (int s = 0; s < FFN_SLOT_COUNT && st == FFNRT_OK; s++) {
        if (!t[s] || !slot_format(desc, s))
            continue;
        char name[32];
        snprintf(name, sizeof name, "weights.%s", slot_names[s]);
        st = ffnrt_check_tensor(ctx, t[s], fn, name);
        size_t want = block_bytes(desc, s);
        if (st == FFNRT_OK && t[s]->bytes != want) {
            int64_t rows, k;
            slot_shape(desc, s, &rows, &k);
            st = ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH,
                            "%s: %s holds %zu bytes; a [%lld, %lld] %s matrix is %zu (ffnrt_weight_bytes)", fn, name,
                            t[s]->bytes, (long long)rows, (long long)k, ffnrt_weight_format_name(slot_format(desc, s)),
                            want);
        }
        void *bytes = st == FFNRT_OK ? malloc(want) : NULL;
        if (st == FFNRT_OK && !bytes)
            st = ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        if (st == FFNRT_OK)
            st = ffnrt_context_settle(ctx);
        if (st == FFNRT_OK)
            st = ctx->ops->buffer_read(ctx->dev, t[s]->buffer, t[s]->offset, bytes, want, &ctx->error);
        if (st == FFNRT_OK)
            st = upload_blocks(ctx, desc, s, bytes, fn, &codes[s], &scales[s]);
        free(bytes);
        t[s] = codes[s];
    }
    if (st == FFNRT_OK)
        st = create_layer(ctx, desc, t, scales, fn, out);
    if (st == FFNRT_OK) {
        memcpy((*out)->owned, codes, sizeof codes);
        memcpy((*out)->scales, scales, sizeof scales);
    } else {
        for (int s = 0; s < FFN_SLOT_COUNT; s++) {
            ffnrt_tensor_free(codes[s]);
            ffnrt_tensor_free(scales[s]);
        }
    }
    return st;
}

ffnrt_status ffnrt_ffn_build(ffnrt_context *ctx, const ffnrt_ffn_desc *desc, const ffnrt_ffn_weights *weights,
                             const char *fn, ffnrt_ffn **out)
{
    if (out)
        *out = NULL;
    ffnrt_status st = ffnrt_ffn_check_desc(&ctx->error, desc, fn);
    if (st == FFNRT_OK && (!weights || !out))
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, weights ? "out" : "weights");
    const void *host[FFN_SLOT_COUNT] = {0};
    if (st == FFNRT_OK) {
        const void *h[FFN_SLOT_COUNT] = {weights->w_in,         weights->b_in,         weights->w_gate,
                                         weights->b_gate,       weights->w_value,      weights->b_value,
                                         weights->w_gate_value, weights->b_gate_value, weights->w_out,
                                         weights->b_out};
        memcpy(host, h, sizeof host);
        st = check_slots(&ctx->error, desc, host, fn);
    }
    /* Upload every given array into a tensor of its slot's shape (a block
     * format's bytes repacked into codes and scales). */
    ffnrt_tensor *t[FFN_SLOT_COUNT] = {0}, *scales[FFN_SLOT_COUNT] = {0};
    for (int s = 0; s < FFN_SLOT_COUNT && st == FFNRT_OK; s++) {
        if (!host[s])
            continue;
        if (slot_format(desc, s)) {
            st = upload_blocks(ctx, desc, s, host[s], fn, &t[s], &scales[s]);
            continue;
        }
        int64_t shape[2];
        slot_shape(desc, s, &shape[0], &shape[1]);
        st = ffnrt_tensor_alloc(ctx, desc->dtype, shape[1] ? 2 : 1, shape, fn, &t[s]);
        if (st == FFNRT_OK)
            st = ffnrt_tensor_upload(t[s], host[s], t[s]->bytes);
    }
    if (st == FFNRT_OK)
        st = create_layer(ctx, desc, (const ffnrt_tensor *const *)t, scales, fn, out);
    if (st == FFNRT_OK) {
        memcpy((*out)->owned, t, sizeof t);
        memcpy((*out)->scales, scales, sizeof scales);
    } else {
        for (int s = 0; s < FFN_SLOT_COUNT; s++) {
            ffnrt_tensor_free(t[s]);
            ffnrt_tensor_free(scales[s]);
        }
    }
    return st;
}

ffnrt_status ffnrt_ffn_create(ffnrt_context *ctx, const ffnrt_ffn_desc *desc, const ffnrt_ffn_weights *weights,
                              ffnrt_ffn **out)
{
    static const char fn[] = "ffnrt_ffn_create";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    return ffnrt_context_finish_call(ctx, ffnrt_ffn_build(ctx, desc, weights, fn, out));
}

/* ----------------------------------------------------------- accounting */

ffnrt_status ffnrt_ffn_cost_of(const ffnrt_ffn_desc *desc, int64_t tokens, ffnrt_ffn_path path, ffnrt_ffn_cost *out)
{
    static const char fn[] = "ffnrt_ffn_cost_of";
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (ffnrt_ffn_check_desc(&err, desc, fn) == FFNRT_OK) {
        if (!out)
            ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: out is NULL", fn);
        else if (tokens < 0)
            ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: tokens is %lld", fn, (long long)tokens);
        else if ((unsigned)path > FFNRT_FFN_PATH_UNFUSED)
            ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not a path", fn, (int)path);
    }
    if (err.status == FFNRT_OK) {
        ffnrt_ffn_cost c;
        if (ffnrt_ffn_cost_model(desc, (uint64_t)tokens, path == FFNRT_FFN_PATH_UNFUSED, &c))
            *out = c;
        else
            ffnrt_fail(&err, FFNRT_ERROR_LIMIT_EXCEEDED,
                       "%s: %lld tokens through d_model %lld, hidden %lld: the figures pass 64 bits", fn,
                       (long long)tokens, (long long)desc->d_model, (long long)desc->hidden);
    }
    ffnrt_error_publish(&err);
    return err.status;
}

int64_t ffnrt_ffn_gated_hidden(int64_t dense_hidden, int64_t multiple)
{
    if (dense_hidden < 1 || multiple < 1 || dense_hidden > INT64_MAX / 2)
        return 0;
    int64_t g = 2 * dense_hidden / 3;
    /* Rounded up without forming g + multiple - 1, which overflows for a
     * huge multiple (found by fuzz/fuzz_api.c); the result always fits. */
    int64_t r = g % multiple;
    return r ? g + (multiple - r) : g;
}
