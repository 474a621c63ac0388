/* The precision policy (exact, balanced, fast) mapped to what the device
 * can do, and the driver quirk table that can veto a feature. */
#include "dispatch/dispatch.h"

#include <stdio.h>
#include <string.h>

/* A known driver problem: on matching devices, `veto` is not used.
 * name/driver/api are case-insensitive substrings ("" matches all). */
typedef struct quirk {
    uint32_t vendor_id; /* 0: any */
    ffnrt_backend backend;
    const char *name;
    const char *driver;
    unsigned veto;
    const char *why;
    const char *api; /* the API version string ("PoCL" is in PoCL's); NULL: any */
} quirk;

#include "dispatch/quirks.inc"
#include "platform/platform.h"

static int contains(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0)
        return 1;
    for (; *hay; hay++)
        if (ffnrt_strncasecmp(hay, needle, n) == 0)
            return 1;
    return 0;
}

static void append(char *buf, size_t cap, const char *text)
{
    size_t len = strlen(buf);
    if (len + 1 < cap)
        snprintf(buf + len, cap - len, "%s%s", len ? "; " : "", text);
}

unsigned ffnrt_quirks_for(const ffnrt_device_info *info, int ignore, unsigned asked, char *why, size_t cap)
{
    unsigned veto = 0;
    why[0] = '\0';
    for (size_t i = 0; i < sizeof quirks / sizeof quirks[0] && !ignore; i++) {
        const quirk *q = &quirks[i];
        if ((q->vendor_id && q->vendor_id != info->vendor_id) ||
            (q->backend != FFNRT_BACKEND_ANY && q->backend != info->backend) || !contains(info->name, q->name) ||
            !contains(info->driver_version, q->driver) || (q->api && !contains(info->api_version, q->api)))
            continue;
        veto |= q->veto;
        append(why, cap, q->why);
    }
    if (ignore)
        append(why, cap, "quirk table ignored (asked)");
    /* FFNRT_QUIRKS=veto=fp16_arithmetic: a veto for the device at hand,
     * which is how the tests check that a veto reaches the plan. */
    if (asked & FFNRT_QUIRK_FP16_ARITHMETIC)
        append(why, cap, "fp16 arithmetic vetoed, asked by FFNRT_QUIRKS");
    if (asked & FFNRT_QUIRK_STORAGE_16BIT)
        append(why, cap, "16-bit storage vetoed, asked by FFNRT_QUIRKS");
    return veto | asked;
}

ffnrt_status ffnrt_precision_parse(const char *name, ffnrt_precision *out)
{
    static const char *const names[] = {"exact", "balanced", "fast"};
    for (int i = 0; i < 3; i++)
        if (ffnrt_strcasecmp(name, names[i]) == 0) {
            *out = (ffnrt_precision)i;
            return FFNRT_OK;
        }
    return FFNRT_ERROR_INVALID_ARGUMENT;
}

void ffnrt_precision_resolve(ffnrt_precision policy, const ffnrt_device_info *info, unsigned vetoes,
                             ffnrt_precision_choice *out)
{
    int fp16 = info->fp16_arithmetic && !(vetoes & FFNRT_QUIRK_FP16_ARITHMETIC);
    out->fp16_arithmetic = 0;
    switch (policy) {
    case FFNRT_PRECISION_FAST:
        out->storage = FFNRT_DTYPE_F16;
        out->fp16_arithmetic = fp16;
        if (fp16)
            snprintf(out->reason, sizeof out->reason, "fast: f16 storage, fp16 arithmetic (the device has it)");
        else
            snprintf(out->reason, sizeof out->reason,
                     "fast asked; fell back to balanced (f16 storage, fp32 arithmetic): %s",
                     info->fp16_arithmetic ? "fp16 arithmetic vetoed by a quirk" : "the device has no fp16 arithmetic");
        break;
    case FFNRT_PRECISION_BALANCED:
        /* 16-bit values travel packed two to a 32-bit word, so a device
         * without 16-bit storage buffers (or with them vetoed) runs it too. */
        out->storage = FFNRT_DTYPE_F16;
        snprintf(out->reason, sizeof out->reason, "balanced: f16 storage, fp32 arithmetic%s",
                 info->storage_16bit && !(vetoes & FFNRT_QUIRK_STORAGE_16BIT)
                     ? ""
                     : " (packed in 32-bit words: no 16-bit storage buffers needed)");
        break;
    default:
        out->storage = FFNRT_DTYPE_F32;
        snprintf(out->reason, sizeof out->reason, "exact: f32 storage and arithmetic");
        break;
    }
}

ffnrt_status ffnrt_choose_compute(const ffnrt_context *ctx, ffnrt_compute compute, ffnrt_dtype dtype, const char *fn,
                                  int *fp16, char *why, size_t cap, ffnrt_error *err)
{
    *fp16 = 0;
    int automatic = compute == FFNRT_COMPUTE_AUTO;
    if (automatic) /* the policy, which already knows what the device has */
        compute = ctx->precision.fp16_arithmetic && dtype == FFNRT_DTYPE_F16 ? FFNRT_COMPUTE_F16 : FFNRT_COMPUTE_F32;
    snprintf(why, cap, "%s",
             !automatic ? "forced by the descriptor's compute"
             : compute == FFNRT_COMPUTE_F16 ? "AUTO under the fast policy, on f16 tensors"
             : ctx->policy == FFNRT_PRECISION_FAST && dtype == FFNRT_DTYPE_F16
                 ? "AUTO: the fast policy fell back (see precision)"
                 : "AUTO: fp32 arithmetic, rounded once to the storage type");
    if (compute == FFNRT_COMPUTE_F32)
        return FFNRT_OK;
    if (compute != FFNRT_COMPUTE_F16)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not a compute precision", fn, (int)compute);
    if (!ctx->info.fp16_arithmetic)
        return ffnrt_fail(err, FFNRT_ERROR_UNSUPPORTED,
                          "%s: fp16 arithmetic asked for, but %s has none (no %s); use FFNRT_COMPUTE_F32", fn,
                          ctx->info.name, ctx->ops->fp16_feature);
    if (ctx->vetoes & FFNRT_QUIRK_FP16_ARITHMETIC)
        return ffnrt_fail(err, FFNRT_ERROR_UNSUPPORTED,
                          "%s: fp16 arithmetic asked for, but the quirk table vetoes it on %s (%s); "
                          "FFNRT_QUIRKS=ignore or the ignore_quirks option overrides", fn, ctx->info.name,
                          ctx->quirk_notes);
    if (dtype != FFNRT_DTYPE_F16)
        return ffnrt_fail(err, FFNRT_ERROR_UNSUPPORTED, "%s: fp16 arithmetic works on f16 tensors, these are %s", fn,
                          ffnrt_dtype_name(dtype));
    *fp16 = 1;
    return FFNRT_OK;
}
