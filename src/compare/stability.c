/* The stability figures of a candidate: non-finite outputs and hidden
 * features dead for every token of a call, on the criteria's input
 * distribution, one call per seed. They come from the ops' in-kernel
 * diagnostics (issue 15: a statistics variant of every kernel, reduced on
 * the device), never from reading outputs back and counting on the host,
 * which would be a second, slower copy of that work. */
#include "compare/compare_internal.h"

#include <stdio.h>

void compare_stability(ffnrt_comparison *cmp, ffnrt_ffn *layer, ffnrt_compare_result *r)
{
    (void)cmp;
    (void)layer;
    r->stability_measured = 0;
    snprintf(r->stability_note, sizeof r->stability_note,
             "not measured: this build has no in-kernel diagnostics (issue 15)");
}
