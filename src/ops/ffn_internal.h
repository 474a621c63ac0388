/* The FFN layer object, shared by its files: ffn_layer.c (validation,
 * creation, accounting), ffn.c (the two paths, forward, plan) and
 * ffn_tune.c (autotune). */
#ifndef FFNRT_FFN_INTERNAL_H
#define FFNRT_FFN_INTERNAL_H

#include "ops/ops.h"

/* The weight slots of ffnrt_ffn_weights and ffnrt_ffn_weight_tensors, in
 * their field order. */
enum ffnrt_ffn_slot {
    FFN_W_IN, FFN_B_IN, FFN_W_GATE, FFN_B_GATE, FFN_W_VALUE, FFN_B_VALUE, FFN_W_GATE_VALUE, FFN_B_GATE_VALUE,
    FFN_W_OUT, FFN_B_OUT, FFN_SLOT_COUNT
};

struct ffnrt_ffn {
    ffnrt_context *ctx;
    ffnrt_ffn_desc desc;
    ffnrt_gemm_operand in, gate, value, out; /* in: dense; gate and value: gated */
    ffnrt_tensor *owned[FFN_SLOT_COUNT];     /* uploaded from host arrays; a block format's codes */
    ffnrt_tensor *scales[FFN_SLOT_COUNT];    /* a block format's scales (src/quant/layout.c) */
    ffnrt_tensor *h, *g, *v;                 /* intermediates, [scratch_tokens, hidden] */
    uint64_t scratch_tokens;
    /* Statistics (ops/stats.c): ffnrt_ffn_set_stats's options (stats_set:
     * given), the last forward's statistics and its feature bits. */
    int stats_set;
    ffnrt_stats_options stats_options;
    ffnrt_stats *last_stats;
    uint32_t *feature_bits;
};

static inline int ffnrt_ffn_gated(const ffnrt_ffn_desc *d) { return d->kind == FFNRT_FFN_GATED; }

/* Checks a forward's x and y against the layer. */
ffnrt_status ffnrt_ffn_check_io(ffnrt_ffn *layer, const ffnrt_tensor *x, const ffnrt_tensor *y, const char *fn);
/* The layer's intermediates for `tokens` tokens (g and v for the unfused
 * gated path), made or remade as needed. */
ffnrt_status ffnrt_ffn_scratch(ffnrt_ffn *l, uint64_t tokens, int need_gate_value);
void ffnrt_ffn_drop_scratch(ffnrt_ffn *l);
/* A forward with a given choice; *ns gets the device time of its batches.
 * stats: the forward's statistics (ops/stats.h), NULL when off. */
ffnrt_status ffnrt_ffn_forward_with(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y, uint64_t tokens,
                                    const ffnrt_ffn_choice *c, uint64_t *ns, struct ffnrt_stats_call *stats);
/* Times every candidate on x and keeps the fastest for the shape class. */
ffnrt_status ffnrt_ffn_tune(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y, uint64_t tokens);

#endif
