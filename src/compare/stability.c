/* The stability figures of a candidate: non-finite outputs and hidden
 * features dead for every token of a call, on the criteria's input
 * distribution, one call per seed. They come from the ops' in-kernel
 * diagnostics (ffnrt_ffn_set_stats: a statistics variant of the layer's
 * kernels, reduced on the device), never from reading outputs back and
 * counting on the host, which would be a second, slower copy of that work.
 *
 * The finite check is off for these calls (the options say 0, over
 * FFNRT_CHECK_FINITE): a call whose outputs overflow is a figure here,
 * counted, not an error that would hide how many. */
#include "compare_internal.h"
#include "lab.h"

#include <stdio.h>
#include <stdlib.h>

/* The input stream of stability seed s: apart from the timing inputs'. */
#define STABILITY_STREAM 1000

static void not_measured(ffnrt_compare_result *r, const char *why, const char *detail)
{
    r->stability_measured = 0;
    snprintf(r->stability_note, sizeof r->stability_note, "not measured: %s%s%.100s", why, detail ? ": " : "",
             detail ? detail : "");
}

void compare_stability(ffnrt_comparison *cmp, ffnrt_ffn *layer, ffnrt_compare_result *r, compare_step *step)
{
    ffnrt_context *ctx = cmp->ctx;
    const ffnrt_compare_criteria *c = &cmp->criteria;
    int64_t tokens = c->stability_tokens, d = cmp->spec.d_model;
    size_t n = (size_t)(tokens * d);
    r->seeds = c->seeds;
    ffnrt_stats_options o = FFNRT_STATS_OPTIONS_INIT;
    o.bins = 0;         /* counts only: the cheapest statistics variant */
    o.check_finite = 0; /* overflow is counted, not a failed call */
    float *xv = malloc(n * sizeof *xv + sizeof *xv);
    ffnrt_tensor *x = NULL, *y = NULL;
    int64_t shape[2] = {tokens, d};
    if (!xv) {
        not_measured(r, "out of host memory", NULL);
        return;
    }
    ffnrt_error err;
    ffnrt_error_clear(&err);
    ffnrt_status st = compare_called(ctx, ffnrt_ffn_set_stats(layer, &o), &err);
    if (st == FFNRT_OK)
        st = compare_called(ctx, ffnrt_tensor_create(ctx, r->desc.dtype, 2, shape, &y), &err);
    uint64_t nonfinite = 0, hidden_nonfinite = 0;
    double dead_sum = 0, dead_max = 0;
    for (uint32_t s = 1; s <= c->seeds && st == FFNRT_OK; s++) {
        compare_rng rng;
        compare_rng_seed(&rng, s, STABILITY_STREAM);
        compare_fill_input(&rng, c, xv, n);
        ffnrt_tensor_destroy(x);
        x = NULL;
        st = compare_upload(ctx, r->desc.dtype, xv, tokens, d, &x, &err);
        double t0 = lab_now_ms();
        if (st == FFNRT_OK)
            st = compare_called(ctx, ffnrt_ffn_forward(layer, x, y), &err);
        /* The first seed's call builds the statistics variant: compiling;
         * the others are measured calls. */
        if (s == 1)
            compare_step_end(cmp, step);
        else
            compare_measured(cmp, lab_now_ms() - t0);
        ffnrt_stats stats;
        if (st == FFNRT_OK)
            st = compare_called(ctx, ffnrt_ffn_last_stats(layer, &stats), &err);
        if (st != FFNRT_OK)
            break;
        if (!stats.valid || stats.hidden_features == 0) {
            not_measured(r, "the layer's forward gave no hidden-layer statistics (diagnostics without FFN layers)", NULL);
            goto done;
        }
        /* Non-finite inputs would make non-finite outputs the input's fault:
         * the stated distribution never draws them, so this is a bug. */
        if (stats.input_nan || stats.input_inf) {
            not_measured(r, "non-finite values in the stated inputs", NULL);
            goto done;
        }
        nonfinite += stats.output_nan + stats.output_inf;
        hidden_nonfinite += stats.hidden_nonfinite;
        double dead = (double)stats.dead_features / (double)stats.hidden_features;
        dead_sum += dead;
        if (dead > dead_max)
            dead_max = dead;
    }
    if (st != FFNRT_OK) {
        not_measured(r, "a call failed", err.message);
        goto done;
    }
    r->stability_measured = 1;
    r->nonfinite_outputs = nonfinite;
    r->nonfinite_hidden = hidden_nonfinite;
    r->dead_fraction_max = dead_max;
    r->dead_fraction_mean = c->seeds ? dead_sum / c->seeds : 0;
    snprintf(r->stability_note, sizeof r->stability_note,
             "%u seeds of %lld tokens: %llu non-finite outputs, %llu non-finite hidden values, dead fraction %.4f max, %.4f mean",
             c->seeds, (long long)tokens, (unsigned long long)nonfinite, (unsigned long long)hidden_nonfinite, dead_max,
             r->dead_fraction_mean);
done:
    ffnrt_tensor_destroy(x);
    ffnrt_tensor_destroy(y);
    free(xv);
}
