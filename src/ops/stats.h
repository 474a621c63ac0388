/* One call's statistics, for the ops: chosen and prepared before the
 * call's kernels (which the op launches with the run, setting its roles
 * per kernel), read back and checked after them. */
#ifndef FFNRT_OPS_STATS_H
#define FFNRT_OPS_STATS_H

#include "ops/ops.h"

typedef struct ffnrt_stats_call {
    ffnrt_stats_choice choice;
    ffnrt_stats_run run;     /* what the launchers read; run.buffer is NULL while planning */
    /* Set by the op before ffnrt_stats_begin: */
    const char *fn;          /* the public call, for messages */
    char op[48];             /* "gelu", "geglu backward", "ffn swiglu" */
    ffnrt_dtype dtype;
    ffnrt_activation act;    /* the activation applied (its saturation); FFNRT_ACT_COUNT: none */
    uint64_t inputs, outputs, pre, activations;
    uint64_t tokens;         /* gated: tokens whose norms are taken (0: none) */
    uint64_t hidden;         /* FFN: hidden features (0: none) */
    /* Set by the op once it knows (its variant's arithmetic): */
    int fp16;
} ffnrt_stats_call;

/* Chooses (layer: a layer's own options, or NULL) and, when on, prepares
 * the statistics buffer, zeroed. Off (c->choice.on == 0): nothing else. */
ffnrt_status ffnrt_stats_begin(ffnrt_context *ctx, const ffnrt_stats_options *layer, ffnrt_stats_call *c);
/* After the call's kernels, whose status is st: reads the statistics into
 * the context's last statistics (and *layer_stats, *features: the feature
 * bits, each malloc'd on first use, when given), then applies the finite
 * check. Returns st, or the check's or the read-back's error. */
ffnrt_status ffnrt_stats_end(ffnrt_context *ctx, ffnrt_stats_call *c, ffnrt_status st, ffnrt_stats **layer_stats,
                             uint32_t **features);

#endif
