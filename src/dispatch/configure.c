/* What every context gets once its device is open, from its settings:
 * lowered limits and a profile, quirk vetoes, the precision policy,
 * autotuning. Shared by contexts ffnrt opens and those over the app's own
 * device. */
#include "dispatch/dispatch.h"
#include "platform/platform.h"

#include <stdio.h>
#include <string.h>

ffnrt_status ffnrt_configure(ffnrt_context *ctx, ffnrt_error *err)
{
    const ffnrt_settings *s = &ctx->settings;
    uint64_t lim[FFNRT_LIMIT_COUNT];
    const char *from[FFNRT_LIMIT_COUNT];
    ffnrt_settings_limits(s, lim, from);
    ffnrt_limit_request lreq = {lim[FFNRT_LIMIT_BUFFER_RANGE],
                                lim[FFNRT_LIMIT_SHARED_MEMORY],
                                lim[FFNRT_LIMIT_WORKGROUP_COUNT],
                                lim[FFNRT_LIMIT_WORKGROUP_SIZE],
                                (int)lim[FFNRT_LIMIT_NO_FP16_ARITHMETIC],
                                (int)lim[FFNRT_LIMIT_NO_16BIT_STORAGE],
                                lim[FFNRT_LIMIT_MAX_MEMORY],
                                (int)lim[FFNRT_LIMIT_NO_HALF_CONVERSION],
                                (int)lim[FFNRT_LIMIT_NO_BYTE_DOT],
                                (int)lim[FFNRT_LIMIT_NO_VECTOR_CODES],
                                (int)lim[FFNRT_LIMIT_NO_INT64_WORDS],
                                lim[FFNRT_LIMIT_MAX_BINDINGS]};
    const ffnrt_setting *p = ffnrt_setting_get(s, FFNRT_KNOB_PROFILE, NULL, NULL);
    const ffnrt_profile *profile = p && ffnrt_strcasecmp(p->text, "none") != 0 ? ffnrt_profile_find(p->text) : NULL;
    ctx->profile = profile;
    if (ffnrt_limits_apply(&ctx->info, &ctx->limits, &lreq, profile, ctx->limit_notes, sizeof ctx->limit_notes,
                           err) != FFNRT_OK)
        return err->status;
    const ffnrt_setting *q = ffnrt_setting_get(s, FFNRT_KNOB_QUIRKS, NULL, NULL);
    /* The option ignores the table; FFNRT_QUIRKS may also add vetoes, which
     * a forced ignore does not lift (they are asked for, not the table's). */
    int ignore = q && q->v[0];
    unsigned asked = (unsigned)s->env[FFNRT_KNOB_QUIRKS].v[1];
    ctx->vetoes = ffnrt_quirks_for(&ctx->info, ignore, asked, ctx->quirk_notes, sizeof ctx->quirk_notes);
    const ffnrt_setting *pr = ffnrt_setting_get(s, FFNRT_KNOB_PRECISION, NULL, NULL);
    ctx->policy = pr ? (ffnrt_precision)pr->v[0] : FFNRT_PRECISION_EXACT;
    ffnrt_precision_resolve(ctx->policy, &ctx->info, ctx->vetoes, &ctx->precision);
    ffnrt_half_conversion_for(&ctx->info, lreq.no_half_conversion, &ctx->half_conversion);
    /* An OpenCL CPU driver compiles for this host: without AVX2 (an
     * aarch64 host, say) the prelude's byte products are its plain
     * vectors anyway, so the plan names that form and the kernels are the
     * ones byte_dot=0 builds, not a second copy of them. */
    int host_plain = ctx->info.backend == FFNRT_BACKEND_OPENCL && ctx->info.type == FFNRT_DEVICE_TYPE_CPU &&
                     !ffnrt_cpu_has_avx2();
    ctx->plain_byte_dot = lreq.no_byte_dot ? 1 : host_plain ? 2 : 0;
    ctx->word_codes = lreq.no_vector_codes;
    const ffnrt_setting *a = ffnrt_setting_get(s, FFNRT_KNOB_AUTOTUNE, NULL, NULL);
    ctx->autotune = a && a->v[0];
    ctx->max_memory = lreq.max_memory;
    return FFNRT_OK;
}
