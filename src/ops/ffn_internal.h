/* The FFN layer object, shared by its files: ffn_layer.c (validation,
 * creation, accounting), ffn.c (the two paths, forward, plan),
 * ffn_tune.c (autotune) and ffn_train.c (the training forward and the
 * backward). */
#ifndef FFNRT_FFN_INTERNAL_H
#define FFNRT_FFN_INTERNAL_H

#include "ops/ops.h"

/* The weight slots of ffnrt_ffn_weights and ffnrt_ffn_weight_tensors, in
 * their field order. */
enum ffnrt_ffn_slot {
    FFN_W_IN, FFN_B_IN, FFN_W_GATE, FFN_B_GATE, FFN_W_VALUE, FFN_B_VALUE, FFN_W_GATE_VALUE, FFN_B_GATE_VALUE,
    FFN_W_OUT, FFN_B_OUT, FFN_SLOT_COUNT
};

/* The backward's buffers: the transposed operands (d_model x tokens,
 * hidden x tokens, a weight matrix), the hidden gradients (dh, and dv for
 * the value), a row of ones (the bias gradients' sums) and, in 16-bit
 * storage with an odd d_model or hidden, an output gradient padded. */
enum ffnrt_ffn_bw_slot {
    FFN_BW_TD, FFN_BW_TH, FFN_BW_WT, FFN_BW_DH, FFN_BW_DV, FFN_BW_ONES, FFN_BW_DZ_PAD, FFN_BW_COUNT
};

struct ffnrt_ffn {
    ffnrt_context *ctx;
    ffnrt_ffn_desc desc;
    ffnrt_gemm_operand in, gate, value, out; /* in: dense; gate and value: gated */
    ffnrt_tensor *owned[FFN_SLOT_COUNT];     /* uploaded from host arrays; a block format's codes */
    ffnrt_tensor *scales[FFN_SLOT_COUNT];    /* a block format's scales (src/quant/layout.c) */
    ffnrt_tensor *h, *g, *v;                 /* intermediates, [scratch_tokens, hidden] */
    ffnrt_tensor *pre;                       /* dense, training: W_in·x + b_in, kept beside h = phi(pre) */
    ffnrt_tensor *xq;                        /* the integer path's 8-bit x (or h), scratch_tokens rows */
    uint64_t scratch_tokens;
    /* Training (ffn_train.c): the tokens of the training forward whose
     * intermediates h (and pre, or g and v) are kept for the backward (0:
     * none; any other forward overwrites them), and the backward's own
     * buffers for bw_tokens tokens. */
    uint64_t saved_tokens;
    ffnrt_tensor *bw[FFN_BW_COUNT];
    uint64_t bw_tokens;
    /* Statistics (ops/stats.c): ffnrt_ffn_set_stats's options (stats_set:
     * given), the last forward's statistics and its feature bits. */
    int stats_set;
    ffnrt_stats_options stats_options;
    ffnrt_stats *last_stats;
    uint32_t *feature_bits;
    /* The training window (ffnrt_ffn_dead_window): the features nonzero in
     * any training forward with statistics since the last reset. */
    uint32_t *window_alive;
    uint64_t window_forwards;
};

static inline int ffnrt_ffn_gated(const ffnrt_ffn_desc *d) { return d->kind == FFNRT_FFN_GATED; }

/* Checks x and a tensor of its layout (named y_name) against the layer:
 * dtype and d_model. */
ffnrt_status ffnrt_ffn_check_pair(ffnrt_ffn *layer, const ffnrt_tensor *x, const ffnrt_tensor *y, const char *fn,
                                  const char *y_name);
/* Checks a forward's x and y against the layer (check_pair, and y apart
 * from x and the weights). */
ffnrt_status ffnrt_ffn_check_io(ffnrt_ffn *layer, const ffnrt_tensor *x, const ffnrt_tensor *y, const char *fn);
/* The layer's intermediates for `tokens` tokens (g and v for the unfused
 * gated path), made or remade as needed. */
/* The layer's intermediates for `tokens` tokens (gate and value apart for
 * the unfused gated path; the integer path's quantized input). */
ffnrt_status ffnrt_ffn_scratch(ffnrt_ffn *l, uint64_t tokens, int need_gate_value, int need_xq);
void ffnrt_ffn_drop_scratch(ffnrt_ffn *l);
/* A forward with a given choice; *ns gets the device time of its batches.
 * stats: the forward's statistics (ops/stats.h), NULL when off. It
 * overwrites what a training forward kept. residual: y += the output. */
ffnrt_status ffnrt_ffn_forward_with(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y, uint64_t tokens,
                                    const ffnrt_ffn_choice *c, uint64_t *ns, struct ffnrt_stats_call *stats,
                                    int residual);
/* The training forward (ffnrt_ffn_forward_train after its checks): the
 * unfused path keeping the intermediates the backward reads (dense pre
 * and h, gated g, v and h), with the layer's statistics when they are on,
 * whose feature bits join the training window. */
ffnrt_status ffnrt_ffn_run_training(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y, const char *fn);
/* What ffnrt_ffn_run_training keeps, computed again from x without y
 * (FFNRT_GRADIENTS_RECOMPUTE): the same choice, the same bits. */
ffnrt_status ffnrt_ffn_recompute_hidden(ffnrt_ffn *layer, const ffnrt_tensor *x, uint64_t tokens, uint64_t *ns);
void ffnrt_ffn_drop_backward(ffnrt_ffn *l);
/* Whether the backward takes both weight gradients of a layer of d at
 * `tokens` as outer products on their operands as they lie (the plan's
 * account; the backward asks ffnrt_outer_fits of each product). */
int ffnrt_ffn_outer_gradients(ffnrt_context *ctx, const ffnrt_ffn_desc *d, uint64_t tokens);
/* Checks gradient tensors given in the weight slots' order (NULL: not
 * wanted): each a slot the layer has, of its shape and dtype. */
ffnrt_status ffnrt_ffn_check_gradients(ffnrt_context *ctx, const ffnrt_ffn_desc *d,
                                       const ffnrt_tensor *const grads[FFN_SLOT_COUNT], const char *fn);
/* Times every candidate on x and keeps the fastest for the shape class. */
ffnrt_status ffnrt_ffn_tune(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y, uint64_t tokens);

#endif
