/* Kernel build defines: the storage type and the activation hooks, from
 * the op table, for every kernel alike. */
#include "launch/launch.h"
#include "ffnrt_op_table.h"
#include "quant/quant.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void ffnrt_defines_add(ffnrt_defines *d, const char *fmt, ...)
{
    size_t len = strlen(d->text);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(d->text + len, sizeof d->text - len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n + 2 > sizeof d->text - len) {
        d->overflow = 1;
        d->text[len] = '\0';
        return;
    }
    d->text[len + (size_t)n] = '\n';
    d->text[len + (size_t)n + 1] = '\0';
}

void ffnrt_defines_storage(ffnrt_defines *d, ffnrt_dtype dtype, ffnrt_half_conversion conversion)
{
    ffnrt_defines_add(d, "#define STORAGE_%s 1", dtype == FFNRT_DTYPE_F16 ? "F16" : dtype == FFNRT_DTYPE_BF16 ? "BF16" : "F32");
    /* Not f16 storage only: block-format weights of any storage type
     * carry f16 scales (the prelude's LOAD_HALF2). */
    const char *hw = ffnrt_half_conversion_define(conversion);
    if (hw)
        ffnrt_defines_add(d, "#define %s", hw);
}

void ffnrt_defines_activation(ffnrt_defines *d, ffnrt_activation act)
{
    const ffnrt_op_row *row = ffnrt_op_row_of(act);
    if (!row) {
        ffnrt_defines_add(d, "#define ACT(v, i) (v)");
        ffnrt_defines_add(d, "#define ACT_F16(v, i) (v)");
        return;
    }
    ffnrt_defines_add(d, "#define ACT(v, i) %s", row->forward);
    ffnrt_defines_add(d, "#define DACT(v, i) %s", row->gradient);
    ffnrt_defines_add(d, "#define ACT_F16(v, i) %s", row->forward_f16);
    if (row->params & FFNRT_OP_SLOPES)
        ffnrt_defines_add(d, "#define PARAM_SLOPES 1");
}

void ffnrt_defines_arithmetic(ffnrt_defines *d, int fp16)
{
    if (fp16)
        ffnrt_defines_add(d, "#define ARITH_F16 1");
}

void ffnrt_defines_weights(ffnrt_defines *d, ffnrt_weight_format format)
{
    const ffnrt_quant_layout *l = ffnrt_quant_layout_of(format);
    if (!l)
        return;
    ffnrt_defines_add(d, "#define WEIGHTS_QUANT 1");
    ffnrt_defines_add(d, "#define %s 1", l->define);
    ffnrt_defines_add(d, "#define WQ_CODES%u 1", l->code_bits);
}
