/* The gated family, element-wise: GLU, ReGLU, GEGLU, SwiGLU. */
#include "ops/ops.h"
#include "ops/stats.h"
#include "ffnrt_op_table.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Parameters of shaders/glu.kernel, in its Params order. */
typedef struct glu_params {
    uint32_t n, base, h;
    float alpha, beta;
} glu_params;

const char *ffnrt_glu_name(ffnrt_glu kind)
{
    const char *name = ffnrt_glu_row_name(kind);
    return name ? name : "unknown";
}

ffnrt_status ffnrt_glu_from_name(const char *name, ffnrt_glu *out)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!name || !out) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_glu_from_name: %s is NULL", name ? "out" : "name");
    } else {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "\"%s\" is not a GLU kind", name);
        for (int i = 0; i < FFNRT_GLU_COUNT; i++)
            if (strcmp(name, ffnrt_glu_row_name((ffnrt_glu)i)) == 0) {
                *out = (ffnrt_glu)i;
                ffnrt_error_clear(&err);
            }
    }
    ffnrt_error_publish(&err);
    return err.status;
}

ffnrt_activation ffnrt_glu_gate_activation(ffnrt_glu kind) { return ffnrt_glu_row_gate(kind); }

static ffnrt_status check_desc(ffnrt_context *ctx, const ffnrt_glu_desc *desc, const char *fn)
{
    if (!desc)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: desc is NULL", fn);
    if ((unsigned)desc->kind >= FFNRT_GLU_COUNT)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not a GLU kind", fn, (int)desc->kind);
    if (!isfinite(desc->beta))
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: beta must be finite", fn);
    return FFNRT_OK;
}

/* x is [..., 2h] and y [..., h] with the same leading dimensions. */
static ffnrt_status check_halves(ffnrt_context *ctx, const ffnrt_tensor *x, const ffnrt_tensor *y, const char *fn,
                                 const char *y_name)
{
    ffnrt_status st = ffnrt_check_tensor(ctx, x, fn, "x");
    if (st == FFNRT_OK)
        st = ffnrt_check_tensor(ctx, y, fn, y_name);
    if (st != FFNRT_OK)
        return st;
    if (x->dtype != y->dtype)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_DTYPE_MISMATCH, "%s: x is %s, %s is %s", fn,
                          ffnrt_dtype_name(x->dtype), y_name, ffnrt_dtype_name(y->dtype));
    if (x->ndim == 0 || x->shape[x->ndim - 1] % 2 != 0)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH,
                          "%s: x's last dimension must be even to split in halves", fn);
    /* Halve x's (even) dimension rather than double y's: an empty tensor
     * may have a huge dimension, and doubling it overflowed (found by
     * fuzz/fuzz_api.c). */
    int ok = y->ndim == x->ndim && y->shape[y->ndim - 1] == x->shape[x->ndim - 1] / 2;
    for (size_t i = 0; ok && i + 1 < x->ndim; i++)
        ok = x->shape[i] == y->shape[i];
    if (!ok)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH,
                          "%s: %s must be x's shape with the last dimension halved", fn, y_name);
    return FFNRT_OK;
}

/* The split layouts read gate, value (and dy) at the output's own index,
 * every input before any output (shaders/storage.inc, TWO_OUTPUTS). */
#define GLU_SPLIT_ALIASING "an output may be exactly one of the inputs (in place), never part of one or another output"

/* The layouts: halves of one row (x, dx) or two tensors (gate and value),
 * forward, or backward with one output or two. */
enum { GLU_SPLIT = 0, GLU_HALVES = 1, GLU_BACKWARD = 2, GLU_TWO_OUTPUTS = 4 };

static ffnrt_status launch(ffnrt_context *ctx, const ffnrt_glu_desc *desc, int layout, ffnrt_dtype dtype,
                           uint64_t rows, uint64_t row_elems, uint32_t h, const ffnrt_ew_binding *b, uint32_t nb,
                           const char *fn, ffnrt_stats_call *stats)
{
    ffnrt_ew_op op = {.family = FFNRT_EW_GLU, .act = ffnrt_glu_row_gate(desc->kind),
                      .backward = (layout & GLU_BACKWARD) != 0, .halves = (layout & GLU_HALVES) != 0,
                      .two_outputs = (layout & GLU_TWO_OUTPUTS) != 0, .dtype = dtype, .arithmetic = 1,
                      .compute = desc->compute, .fn = fn};
    ffnrt_ew_variant v;
    ffnrt_status st = ffnrt_choose_ew_variant(ctx, &op, &v);
    if (st != FFNRT_OK)
        return st;
    if (stats)
        stats->fp16 = v.fp16;
    glu_params p = {0, 0, h, 0.0f, desc->beta}; /* no GLU kind takes alpha */
    ffnrt_ew_launch l = {&v, rows, row_elems, b, nb, &p, sizeof p, stats && stats->choice.on ? &stats->run : NULL};
    return ffnrt_run_elementwise(ctx, &l);
}

/* A public call's statistics: begun before its launch (sizes from its
 * tensors when they are usable; a bad one fails the launch's checks), the
 * gate's activation the saturating one, the tokens the output's rows. */
static ffnrt_status stats_begin(ffnrt_context *ctx, const ffnrt_glu_desc *desc, const ffnrt_tensor *out, int backward,
                                uint64_t inputs, uint64_t pre, uint64_t row_len, const char *fn, ffnrt_stats_call *sc)
{
    int known = desc && (unsigned)desc->kind < FFNRT_GLU_COUNT;
    uint64_t n = out && out->ctx == ctx ? out->numel : 0;
    memset(sc, 0, sizeof *sc);
    sc->fn = fn;
    snprintf(sc->op, sizeof sc->op, "%s%s", known ? ffnrt_glu_name(desc->kind) : "?", backward ? " backward" : "");
    sc->dtype = out && out->ctx == ctx ? out->dtype : FFNRT_DTYPE_F32;
    sc->act = known ? ffnrt_glu_row_gate(desc->kind) : FFNRT_ACT_COUNT;
    sc->inputs = inputs;
    sc->outputs = sc->activations = n;
    sc->pre = pre;
    sc->tokens = !backward && row_len ? n / row_len : 0;
    ffnrt_status st = ffnrt_stats_begin(ctx, NULL, sc);
    sc->run.roles |= FFNRT_STATS_INPUTS | FFNRT_STATS_PRE | FFNRT_STATS_OUTPUT | (backward ? 0u : FFNRT_STATS_GATE);
    sc->run.row_len = row_len;
    return st;
}

/* The last dimension of a usable tensor (the tokens' length), else 0. */
static uint64_t last_dim(ffnrt_context *ctx, const ffnrt_tensor *t)
{
    return t && t->ctx == ctx && t->ndim ? (uint64_t)t->shape[t->ndim - 1] : 0;
}

static uint64_t numel_of(ffnrt_context *ctx, const ffnrt_tensor *t) { return t && t->ctx == ctx ? t->numel : 0; }

ffnrt_status ffnrt_glu_forward(ffnrt_context *ctx, const ffnrt_glu_desc *desc, const ffnrt_tensor *x,
                               ffnrt_tensor *y)
{
    static const char fn[] = "ffnrt_glu_forward";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_stats_call sc;
    ffnrt_status st = stats_begin(ctx, desc, y, 0, numel_of(ctx, x), numel_of(ctx, y), last_dim(ctx, y), fn, &sc);
    if (st == FFNRT_OK)
        st = check_desc(ctx, desc, fn);
    if (st == FFNRT_OK)
        st = check_halves(ctx, x, y, fn, "y");
    ffnrt_op_arg args[2] = {{x, "x", 0}, {y, "y", 1}};
    if (st == FFNRT_OK)
        st = ffnrt_check_aliasing(ctx, fn, args, 2, 0, "y must not overlap x (each output reads two elements of x)");
    if (st == FFNRT_OK) {
        uint64_t h = (uint64_t)y->shape[y->ndim - 1];
        ffnrt_ew_binding b[2] = {{x, 2 * h}, {y, h}};
        st = launch(ctx, desc, GLU_HALVES, x->dtype, h ? y->numel / h : 0, h, (uint32_t)h, b, 2, fn, &sc);
    }
    return ffnrt_context_finish_call(ctx, ffnrt_stats_end(ctx, &sc, st, NULL, NULL));
}

ffnrt_status ffnrt_op_glu_split(ffnrt_context *ctx, const ffnrt_glu_desc *desc, const ffnrt_tensor *gate,
                                const ffnrt_tensor *value, ffnrt_tensor *y, const char *fn, ffnrt_stats_call *stats)
{
    ffnrt_status st = check_desc(ctx, desc, fn);
    if (st == FFNRT_OK)
        st = ffnrt_check_same_layout(ctx, gate, value, fn, "gate", "value");
    if (st == FFNRT_OK)
        st = ffnrt_check_same_layout(ctx, gate, y, fn, "gate", "y");
    ffnrt_op_arg args[3] = {{gate, "gate", 0}, {value, "value", 0}, {y, "y", 1}};
    if (st == FFNRT_OK)
        st = ffnrt_check_aliasing(ctx, fn, args, 3, 1, GLU_SPLIT_ALIASING);
    if (st == FFNRT_OK) {
        ffnrt_ew_binding b[3] = {{gate, 1}, {y, 1}, {value, 1}};
        st = launch(ctx, desc, GLU_SPLIT, gate->dtype, gate->numel, 1, 0, b, 3, fn, stats);
    }
    return st;
}

ffnrt_status ffnrt_glu_forward_split(ffnrt_context *ctx, const ffnrt_glu_desc *desc, const ffnrt_tensor *gate,
                                     const ffnrt_tensor *value, ffnrt_tensor *y)
{
    static const char fn[] = "ffnrt_glu_forward_split";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_stats_call sc;
    ffnrt_status st = stats_begin(ctx, desc, y, 0, numel_of(ctx, gate) + numel_of(ctx, value), numel_of(ctx, gate),
                                  last_dim(ctx, y), fn, &sc);
    if (st == FFNRT_OK)
        st = ffnrt_op_glu_split(ctx, desc, gate, value, y, fn, &sc);
    return ffnrt_context_finish_call(ctx, ffnrt_stats_end(ctx, &sc, st, NULL, NULL));
}

ffnrt_status ffnrt_glu_backward(ffnrt_context *ctx, const ffnrt_glu_desc *desc, const ffnrt_tensor *x,
                                const ffnrt_tensor *dy, ffnrt_tensor *dx)
{
    static const char fn[] = "ffnrt_glu_backward";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_stats_call sc;
    ffnrt_status st = stats_begin(ctx, desc, dx, 1, numel_of(ctx, x) + numel_of(ctx, dy), numel_of(ctx, dy), 0, fn,
                                  &sc);
    if (st == FFNRT_OK)
        st = check_desc(ctx, desc, fn);
    if (st == FFNRT_OK)
        st = check_halves(ctx, x, dy, fn, "dy");
    if (st == FFNRT_OK)
        st = ffnrt_check_same_layout(ctx, x, dx, fn, "x", "dx");
    ffnrt_op_arg args[3] = {{x, "x", 0}, {dy, "dy", 0}, {dx, "dx", 1}};
    if (st == FFNRT_OK)
        st = ffnrt_check_aliasing(ctx, fn, args, 3, 0,
                                  "dx must not overlap x or dy (each gradient reads both halves of its row of x)");
    if (st == FFNRT_OK) {
        uint64_t h = (uint64_t)dy->shape[dy->ndim - 1];
        ffnrt_ew_binding b[3] = {{x, 2 * h}, {dx, 2 * h}, {dy, h}};
        st = launch(ctx, desc, GLU_HALVES | GLU_BACKWARD, x->dtype, h ? dy->numel / h : 0, 2 * h,
                    (uint32_t)h, b, 3, fn, &sc);
    }
    return ffnrt_context_finish_call(ctx, ffnrt_stats_end(ctx, &sc, st, NULL, NULL));
}

ffnrt_status ffnrt_op_glu_backward_split(ffnrt_context *ctx, const ffnrt_glu_desc *desc, const ffnrt_tensor *gate,
                                         const ffnrt_tensor *value, const ffnrt_tensor *dy, ffnrt_tensor *dgate,
                                         ffnrt_tensor *dvalue, const char *fn, ffnrt_stats_call *stats)
{
    ffnrt_status st = check_desc(ctx, desc, fn);
    if (st == FFNRT_OK)
        st = ffnrt_check_same_layout(ctx, gate, value, fn, "gate", "value");
    if (st == FFNRT_OK)
        st = ffnrt_check_same_layout(ctx, gate, dy, fn, "gate", "dy");
    if (st == FFNRT_OK)
        st = ffnrt_check_same_layout(ctx, gate, dgate, fn, "gate", "dgate");
    if (st == FFNRT_OK)
        st = ffnrt_check_same_layout(ctx, gate, dvalue, fn, "gate", "dvalue");
    ffnrt_op_arg args[5] = {{gate, "gate", 0}, {value, "value", 0}, {dy, "dy", 0}, {dgate, "dgate", 1},
                            {dvalue, "dvalue", 1}};
    if (st == FFNRT_OK)
        st = ffnrt_check_aliasing(ctx, fn, args, 5, 1, GLU_SPLIT_ALIASING);
    if (st == FFNRT_OK) {
        ffnrt_ew_binding b[5] = {{gate, 1}, {dgate, 1}, {value, 1}, {dy, 1}, {dvalue, 1}};
        st = launch(ctx, desc, GLU_BACKWARD | GLU_TWO_OUTPUTS, gate->dtype, gate->numel, 1, 0, b, 5, fn, stats);
    }
    return st;
}

ffnrt_status ffnrt_glu_backward_split(ffnrt_context *ctx, const ffnrt_glu_desc *desc, const ffnrt_tensor *gate,
                                      const ffnrt_tensor *value, const ffnrt_tensor *dy, ffnrt_tensor *dgate,
                                      ffnrt_tensor *dvalue)
{
    static const char fn[] = "ffnrt_glu_backward_split";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_stats_call sc;
    ffnrt_status st = stats_begin(ctx, desc, dgate, 1, 3 * numel_of(ctx, gate), numel_of(ctx, gate), 0, fn, &sc);
    sc.outputs = sc.activations = 2 * numel_of(ctx, gate);
    if (st == FFNRT_OK)
        st = ffnrt_op_glu_backward_split(ctx, desc, gate, value, dy, dgate, dvalue, fn, &sc);
    return ffnrt_context_finish_call(ctx, ffnrt_stats_end(ctx, &sc, st, NULL, NULL));
}

typedef struct glu_plan_arg {
    const ffnrt_glu_desc *desc;
    ffnrt_dtype dtype;
    size_t rows, width;
} glu_plan_arg;

static ffnrt_status plan_glu(ffnrt_context *ctx, const void *arg)
{
    const glu_plan_arg *a = arg;
    int64_t xs[2] = {(int64_t)a->rows, 2 * (int64_t)a->width}, ys[2] = {(int64_t)a->rows, (int64_t)a->width};
    ffnrt_tensor x, y;
    ffnrt_plan_tensor(ctx, a->dtype, 2, xs, &x);
    ffnrt_plan_tensor(ctx, a->dtype, 2, ys, &y);
    ffnrt_ew_binding b[2] = {{&x, 2 * a->width}, {&y, a->width}};
    ffnrt_stats_call sc;
    ffnrt_status st = stats_begin(ctx, a->desc, &y, 0, x.numel, y.numel, a->width, "ffnrt_glu_plan", &sc);
    if (st == FFNRT_OK)
        st = launch(ctx, a->desc, GLU_HALVES, a->dtype, a->width ? a->rows : 0, a->width, (uint32_t)a->width,
                    b, 2, "ffnrt_glu_plan", &sc);
    return st;
}

ffnrt_status ffnrt_glu_plan(ffnrt_context *ctx, const ffnrt_glu_desc *desc, ffnrt_dtype dtype, size_t rows,
                            size_t width, ffnrt_plan **out)
{
    static const char fn[] = "ffnrt_glu_plan";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_status st = check_desc(ctx, desc, fn);
    if (st == FFNRT_OK && ffnrt_dtype_size(dtype) == 0)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not a dtype", fn, (int)dtype);
    if (st == FFNRT_OK && (width > UINT32_MAX || rows > SIZE_MAX / 2 / (width ? width : 1)))
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_LIMIT_EXCEEDED, "%s: %zu x %zu is too large", fn, rows, width);
    if (st == FFNRT_OK)
        st = ffnrt_tensor_check_size(ctx, dtype, (uint64_t)rows * 2 * width, fn);
    if (st != FFNRT_OK)
        return ffnrt_context_finish_call(ctx, st);
    char text[96];
    snprintf(text, sizeof text, "%s forward, [%zu, 2 x %zu] %s", ffnrt_glu_name(desc->kind), rows, width,
             ffnrt_dtype_name(dtype));
    glu_plan_arg a = {desc, dtype, rows, width};
    return ffnrt_plan_op(ctx, fn, out, text, plan_glu, &a);
}
