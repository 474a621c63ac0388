/* Autotune: times the FFN candidates the dispatcher lists (path x product
 * kernel, ffnrt_ffn_candidate; x the integer path on and off where
 * ffnrt_ffn_int_dot_tunable allows it) on the caller's input and keeps the
 * fastest for the shape class. It stays with the layer because a forward may start
 * it (options.autotune). Time is host end to end, what the caller waits
 * for: the unfused path's separate submissions count. */
#include "ops/ffn_internal.h"
#include "dispatch/dispatch.h"

#include <stdio.h>
#include <string.h>

#define TUNING_ROUNDS 5
#define TUNING_MAX_ROUNDS 31
#define MAX_CANDIDATES (2 * FFNRT_PRODUCT_KERNEL_COUNT * 2)

ffnrt_status ffnrt_ffn_tune(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y, uint64_t tokens)
{
    ffnrt_context *ctx = layer->ctx;
    const ffnrt_ffn_desc *d = &layer->desc;
    char key[160], why[160];
    ffnrt_ffn_tuning_key(d, tokens, key, sizeof key);
    int fp16 = 0;
    ffnrt_compute compute = ffnrt_ffn_gated(d) ? d->glu.compute : d->activation.compute;
    ffnrt_status st = ffnrt_choose_compute(ctx, compute, d->dtype, "ffnrt_ffn_autotune", &fp16, why, sizeof why,
                                           &ctx->error);
    if (st != FFNRT_OK)
        return st;
    /* The integer path: timed off and on for each blocked and matrix-vector
     * candidate where the dispatcher may take it; elsewhere as it takes it
     * (forced, or off). */
    ffnrt_ffn_choice base;
    st = ffnrt_choose_ffn(ctx, d, tokens, NULL, &base, NULL, &ctx->error);
    if (st != FFNRT_OK)
        return st;
    unsigned tunable = ffnrt_ffn_int_dot_tunable(ctx, d, tokens);
    ffnrt_ffn_choice cand[MAX_CANDIDATES];
    int int_state[MAX_CANDIDATES]; /* FFNRT_TUNING_CODE's: 0 not timed, 1 off, 2 on */
    double t[MAX_CANDIDATES][TUNING_MAX_ROUNDS];
    int nc = 0;
    for (int unfused = 0; unfused < 2; unfused++)
        for (int k = 0; k < FFNRT_PRODUCT_KERNEL_COUNT; k++) {
            if (!ffnrt_ffn_candidate(ctx, (ffnrt_product_kernel)k, tokens, d) || (!unfused && !ffnrt_ffn_fusable(d)))
                continue;
            int tiled = k == FFNRT_KERNEL_TILED;
            ffnrt_ffn_choice c = {unfused, (ffnrt_product_kernel)k, ffnrt_ffn_matvec_tokens(ctx, d), {0, 0, 0, 0, 0},
                                  fp16, {0, 0, 0}, tiled ? 0u : base.int_dot}; /* timed without statistics */
            ffnrt_error ignored;
            if (tiled && ffnrt_choose_tiled(ctx, NULL, &c.tiled, NULL, &ignored) != FFNRT_OK)
                continue;
            /* 0 (as the dispatcher takes it), or 1 (off) and 2 (on) */
            int first = tunable && !tiled ? 1 : 0, last = tunable && !tiled ? 2 : 0;
            for (int state = first; state <= last; state++) {
                if (state)
                    c.int_dot = state == 2 ? tunable : 0u;
                int_state[nc] = state;
                cand[nc++] = c;
            }
        }
    /* Rounds over every candidate in turn, so that whatever else loads the
     * device falls on all of them alike, each judged by its fastest round
     * (as calibration judges its pairs: tune/calibrate.c); round -1 builds
     * the kernels and sets the count: at least TUNING_ROUNDS, more for
     * short runs (decode), up to about 60 ms a candidate, since their
     * timings jitter most. */
    int rounds = TUNING_ROUNDS;
    for (int r = -1; r < rounds; r++) {
        double slowest = 0;
        for (int i = 0; i < nc; i++) {
            uint64_t ns;
            double t0 = ffnrt_now_ms();
            if (ffnrt_ffn_forward_with(layer, x, y, tokens, &cand[i], &ns, NULL, 0) != FFNRT_OK)
                return ffnrt_fail(&ctx->error, ctx->error.status, "autotune (%s, %s%s): %s",
                                  cand[i].unfused ? "unfused" : "fused", ffnrt_product_kernel_name(cand[i].kernel),
                                  cand[i].int_dot ? ", integer path" : "", ctx->error.message);
            double dt = ffnrt_now_ms() - t0;
            if (r >= 0)
                t[i][r] = dt;
            slowest = dt > slowest ? dt : slowest;
        }
        if (r < 0 && slowest > 0 && 60.0 / slowest > TUNING_ROUNDS)
            rounds = 60.0 / slowest < TUNING_MAX_ROUNDS ? (int)(60.0 / slowest) : TUNING_MAX_ROUNDS;
    }
    int best = -1, second = -1;
    double fastest[MAX_CANDIDATES];
    for (int i = 0; i < nc; i++) {
        fastest[i] = ffnrt_minimum(t[i], rounds);
        if (best < 0 || fastest[i] < fastest[best])
            second = best, best = i;
        else if (second < 0 || fastest[i] < fastest[second])
            second = i;
    }
    if (best >= 0) {
        double ms[2] = {fastest[best], second >= 0 ? fastest[second] : fastest[best]};
        ffnrt_tuning_put(ctx, key, FFNRT_TUNING_CODE(int_state[best], cand[best].unfused, cand[best].kernel), ms);
    }
    return FFNRT_OK;
}
