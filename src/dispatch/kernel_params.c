/* Kernel shapes per device, looked up by device traits (kernel_params.inc). */
#include "dispatch/dispatch.h"
#include "platform/platform.h"

#include <stdio.h>
#include <string.h>

enum { SUBGROUP_ANY, SUBGROUP_NONE, SUBGROUP_KNOWN };
#define KERNEL_PARAM_OFF 0xffffffffu /* an explicit 0 for a flag (0 inherits) */

typedef struct kernel_params_row {
    ffnrt_device_type type;
    int subgroup;
    const char *what;
    ffnrt_kernel_params p;
} kernel_params_row;

typedef struct half_conversion_row {
    const char *name;
    const char *define;                          /* "NAME VALUE", or NULL */
    int (*available)(const ffnrt_device_info *); /* NULL: always */
    const char *how;
} half_conversion_row;

/* F16C and the AVX state its VEX encoding needs, enabled by the OS (the
 * platform layer asks the CPU: 0 on every CPU but x86). */
static int host_has_f16c(const ffnrt_device_info *info)
{
    (void)info;
    return ffnrt_cpu_has_f16c();
}

#include "dispatch/kernel_params.inc"

static int row_matches(const kernel_params_row *r, const ffnrt_device_info *info)
{
    if (r->type != FFNRT_DEVICE_TYPE_OTHER && r->type != info->type)
        return 0;
    if (r->subgroup == SUBGROUP_NONE && info->subgroup_size > 1)
        return 0;
    if (r->subgroup == SUBGROUP_KNOWN && info->subgroup_size <= 1)
        return 0;
    return 1;
}

void ffnrt_kernel_params_for(const ffnrt_device_info *info, ffnrt_kernel_params *out, char *why, size_t cap)
{
    enum { FIELDS = sizeof(ffnrt_kernel_params) / sizeof(uint32_t) };
    uint32_t v[FIELDS] = {0};
    const char *last = "";
    for (size_t i = 0; i < sizeof kernel_param_rows / sizeof kernel_param_rows[0]; i++) {
        const kernel_params_row *r = &kernel_param_rows[i];
        if (!row_matches(r, info))
            continue;
        uint32_t f[FIELDS];
        memcpy(f, &r->p, sizeof f);
        for (int k = 0; k < FIELDS; k++)
            if (f[k])
                v[k] = f[k] == KERNEL_PARAM_OFF ? 0 : f[k];
        last = r->what;
    }
    memcpy(out, v, sizeof v);
    if (why)
        snprintf(why, cap, "%s", last);
}

/* llvmpipe (Mesa 22.3's emit_load_mem) loads and stores a storage buffer
 * lane by lane and, within a lane, component by component, each with its
 * own bounds test and branch: a vec4 access is four of those, the same 16
 * bytes as a u64vec2 two. So on the drivers with lane loops (the row's
 * wide_words) and 64-bit integers (shaderInt64, which ffnrt then enables)
 * every kernel's 4-word views are u64vec2 arrays. Measured, the builds
 * with and without alternated on lavapipe (docs/speed.md, "Two 64-bit
 * words for 16 bytes"): quantized SwiGLU layers 10-18% faster at 1 and 64
 * tokens, dense fp32 layers 5-13%, the fp32 training step 5-8%. The
 * backward's outer products keep 4-word views (gemm_variant.c). */
int ffnrt_views64(const ffnrt_context *ctx)
{
    ffnrt_kernel_params kp;
    ffnrt_kernel_params_for(&ctx->info, &kp, NULL, 0);
    return kp.wide_words && ctx->limits.int64_words;
}

const char *ffnrt_half_conversion_name(ffnrt_half_conversion kind)
{
    return kind < FFNRT_HALF_CONVERSION_COUNT ? half_conversions[kind].name : "?";
}

const char *ffnrt_half_conversion_define(ffnrt_half_conversion kind)
{
    return kind < FFNRT_HALF_CONVERSION_COUNT ? half_conversions[kind].define : NULL;
}

void ffnrt_half_conversion_for(const ffnrt_device_info *info, int turned_off, ffnrt_half_conversion_choice *out)
{
    ffnrt_kernel_params kp;
    char row[96];
    ffnrt_kernel_params_for(info, &kp, row, sizeof row);
    ffnrt_half_conversion offered =
        kp.half_conversion < FFNRT_HALF_CONVERSION_COUNT ? (ffnrt_half_conversion)kp.half_conversion
                                                         : FFNRT_HALF_CONVERSION_BITS;
    const half_conversion_row *h = &half_conversions[offered];
    const half_conversion_row *bits = &half_conversions[FFNRT_HALF_CONVERSION_BITS];
    out->kind = FFNRT_HALF_CONVERSION_BITS;
    if (offered == FFNRT_HALF_CONVERSION_BITS)
        snprintf(out->reason, sizeof out->reason, "%s: no hardware conversion that helps is known for %s", bits->how,
                 row[0] ? row : "this device");
    else if (turned_off)
        snprintf(out->reason, sizeof out->reason,
                 "%s: %s (%s) turned off (disable_half_conversion or FFNRT_LIMITS half_conversion=0)", bits->how,
                 h->name, row);
    else if (h->available && !h->available(info))
        snprintf(out->reason, sizeof out->reason, "%s: %s offered (%s), but the host CPU lacks it", bits->how,
                 h->name, row);
    else {
        out->kind = offered;
        snprintf(out->reason, sizeof out->reason, "%s, %s; bf16 by bit arithmetic", h->how, row);
    }
}
