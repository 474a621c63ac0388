/* Kernel shapes per device, looked up by device traits (kernel_params.inc). */
#include "dispatch/dispatch.h"

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
