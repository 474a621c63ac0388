/* Whether an op runs its statistics variant, and whether its result is
 * checked for non-finite outputs: the options in effect (a layer's own,
 * else the context's) and the check.finite knob, by the one precedence. */
#include "dispatch/dispatch.h"

#include <math.h>
#include <stdio.h>

ffnrt_status ffnrt_stats_options_check(const ffnrt_stats_options *o, const char *fn, ffnrt_error *err)
{
    if (o->enabled != 0 && o->enabled != 1)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: options.enabled is %d (1 or 0)", fn, o->enabled);
    if (o->bins > FFNRT_STATS_MAX_BINS)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: options.bins is %u, at most %d", fn, o->bins,
                          FFNRT_STATS_MAX_BINS);
    struct {
        const char *name;
        float lo, hi;
    } ranges[2] = {{"lo, hi", o->lo, o->hi}, {"gate_lo, gate_hi", o->gate_lo, o->gate_hi}};
    for (int i = 0; i < 2 && o->bins; i++) {
        float scale = (float)o->bins / (ranges[i].hi - ranges[i].lo);
        if (!isfinite(ranges[i].lo) || !isfinite(ranges[i].hi) || !(ranges[i].lo < ranges[i].hi) || !isfinite(scale) ||
            !(scale > 0))
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                              "%s: options.%s = %g, %g: a histogram range needs finite lo < hi (and bins / (hi - lo) "
                              "finite)",
                              fn, ranges[i].name, (double)ranges[i].lo, (double)ranges[i].hi);
    }
    if (!isfinite(o->saturation) || o->saturation < 0)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: options.saturation is %g (finite, >= 0)", fn,
                          (double)o->saturation);
    if (o->check_finite < -1 || o->check_finite > 1)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: options.check_finite is %d (-1 unset, 0, 1)", fn,
                          o->check_finite);
    return FFNRT_OK;
}

void ffnrt_choose_stats(const ffnrt_context *ctx, const ffnrt_stats_options *layer, ffnrt_stats_choice *c,
                        ffnrt_plan *plan)
{
    static const ffnrt_stats_options none = FFNRT_STATS_OPTIONS_INIT;
    const ffnrt_stats_options *o = layer ? layer : ctx->stats_set ? &ctx->stats_options : NULL;
    const char *from = layer ? "the layer's ffnrt_ffn_set_stats" : "ffnrt_context_set_stats";
    c->options = o ? *o : none;
    c->on = o && o->enabled;
    /* The finite check: the options' field is the op's own (descriptor) layer. */
    ffnrt_setting desc = {0};
    if (o && o->check_finite >= 0) {
        desc.source = FFNRT_FROM_DESC;
        desc.v[0] = (uint64_t)o->check_finite;
        snprintf(desc.from, sizeof desc.from, "options.check_finite");
    }
    const ffnrt_setting *s = ffnrt_setting_get(&ctx->settings, FFNRT_KNOB_CHECK_FINITE, &desc, NULL);
    c->check_finite = s && s->v[0];
    ffnrt_kernel_params kp;
    ffnrt_kernel_params_for(&ctx->info, &kp, NULL, 0);
    c->serial = kp.stats_serial != 0;
    c->hist_stash = c->serial && kp.stats_hist_stash != 0;
    c->items = kp.stats_items;
    if (c->check_finite && !c->on) {
        /* The check needs the counts: the variant runs, without histograms. */
        c->on = 1;
        c->options.bins = 0;
    }
    if (!plan)
        return;
    if (!c->on) {
        ffnrt_plan_add(plan, "stats", "off", "the kernels without statistics, which cost nothing (ffnrt_context_set_stats "
                       "or ffnrt_ffn_set_stats turn them on)");
    } else {
        char hist[96] = "no histograms";
        if (c->options.bins)
            snprintf(hist, sizeof hist, "histograms of %u bins over [%g, %g)%s", c->options.bins, (double)c->options.lo,
                     (double)c->options.hi, c->hist_stash ? ", counted after the loop" : ", counted with local atomics");
        ffnrt_plan_add(plan, "stats", "on: the statistics variant of each kernel",
                       "%s; %s; reduced on the device, read back after the call%s", o && o->enabled ? from
                       : "asked by the finite check", hist,
                       c->hist_stash && c->options.bins
                           ? " (this driver runs work-items as vector code: an atomic per element would make the "
                             "loop scalar)"
                           : "");
    }
    ffnrt_plan_add(plan, "check.finite", c->check_finite ? "on" : "off", "%s",
                   s ? s->from : "the default: non-finite outputs are counted, not refused");
}
