/* Element-wise activations: names, validation, and the kernel each runs. */
#include "ops/ops.h"
#include "ops/stats.h"
#include "ffnrt_op_table.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Parameters of shaders/activation.kernel, in its Params order. */
typedef struct activation_params {
    uint32_t n, base, inner, channels;
    uint32_t inner_magic, inner_shift, channels_magic, channels_shift;
    float alpha, beta;
} activation_params;

const char *ffnrt_activation_name(ffnrt_activation act)
{
    const ffnrt_op_row *row = ffnrt_op_row_of(act);
    return row ? row->name : "unknown";
}

ffnrt_status ffnrt_activation_from_name(const char *name, ffnrt_activation *out)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!name || !out) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_activation_from_name: %s is NULL",
                   name ? "out" : "name");
    } else {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "\"%s\" is not an activation", name);
        for (int i = 0; i < FFNRT_ACT_COUNT; i++)
            if (strcmp(name, ffnrt_op_row_of((ffnrt_activation)i)->name) == 0) {
                *out = (ffnrt_activation)i;
                ffnrt_error_clear(&err);
            }
    }
    ffnrt_error_publish(&err);
    return err.status;
}

static ffnrt_status check_desc(ffnrt_context *ctx, const ffnrt_activation_desc *desc, const char *fn)
{
    if (!desc)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: desc is NULL", fn);
    if ((unsigned)desc->kind >= FFNRT_ACT_COUNT)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not an activation", fn,
                          (int)desc->kind);
    if (!isfinite(desc->alpha) || !isfinite(desc->beta))
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: alpha and beta must be finite", fn);
    return FFNRT_OK;
}

/* PReLU: channels and the stride of the channel axis for the kernel. */
static ffnrt_status prelu_layout(ffnrt_context *ctx, const ffnrt_activation_desc *desc, const ffnrt_tensor *x,
                                 activation_params *p, const char *fn)
{
    const ffnrt_tensor *s = desc->slopes;
    ffnrt_status st = ffnrt_check_tensor(ctx, s, fn, "desc->slopes");
    if (st != FFNRT_OK)
        return st;
    if (s->dtype != x->dtype)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_DTYPE_MISMATCH, "%s: slopes are %s, x is %s", fn,
                          ffnrt_dtype_name(s->dtype), ffnrt_dtype_name(x->dtype));
    if (s->ndim != 1)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH, "%s: slopes must be 1-D, got %zu dims", fn,
                          s->ndim);
    p->inner = 1;
    p->channels = 1;
    if (s->numel == 1)
        return FFNRT_OK;
    long axis = desc->channel_axis < 0 ? (long)x->ndim + desc->channel_axis : desc->channel_axis;
    if (axis < 0 || axis >= (long)x->ndim)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: channel_axis %d is outside a %zu-D input",
                          fn, desc->channel_axis, x->ndim);
    if ((int64_t)s->numel != x->shape[axis])
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH, "%s: %zu slopes for a channel axis of %lld", fn,
                          s->numel, (long long)x->shape[axis]);
    uint64_t inner = 1;
    for (size_t i = (size_t)axis + 1; i < x->ndim; i++)
        inner *= (uint64_t)x->shape[i];
    p->inner = (uint32_t)(inner ? inner : 1);
    p->channels = (uint32_t)s->numel;
    ffnrt_divisor(p->inner, &p->inner_magic, &p->inner_shift);
    ffnrt_divisor(p->channels, &p->channels_magic, &p->channels_shift);
    return FFNRT_OK;
}

/* PReLU's slope lookup (shaders/activation.kernel): the first row of this
 * table whose condition the layout meets. A unit is the run of elements
 * the element-wise loop's work-items take together (ffnrt_elementwise_unit:
 * a group's row of words on OpenCL, a work-item's own words on Vulkan); a
 * span is a whole group's elements. Units start at multiples of the unit
 * from a dispatch's first element, and the launcher starts each dispatch
 * at a multiple of the unit where the row needs it (row_multiple). */
typedef struct slope_layout {
    uint32_t channels, inner, span, unit;
    int consecutive; /* the backend's items_consecutive */
} slope_layout;

static int one_slope(const slope_layout *l) { return l->channels == 1; }
static int last_axis_units(const slope_layout *l) { return l->inner == 1 && l->channels % l->unit == 0; }
static int inner_units(const slope_layout *l) { return l->inner % l->unit == 0; }
static int last_axis_wide(const slope_layout *l) { return l->inner == 1 && l->channels >= l->span; }
static int inner_wide(const slope_layout *l) { return l->inner >= l->span; }
/* Where a work-item's words are strided by the group, a group-wide
 * lookup that fits ran 10-20% faster than units on PoCL in fp32 (the same
 * loads and loop; the cause is not known) and within 7% in 16-bit. */
static int last_axis_wide_strided(const slope_layout *l) { return last_axis_wide(l) && !l->consecutive; }
static int inner_wide_strided(const slope_layout *l) { return inner_wide(l) && !l->consecutive; }
static int last_axis(const slope_layout *l) { return l->inner == 1; }
static int any_layout(const slope_layout *l) { return l != NULL; }

typedef struct slope_lookup_row {
    const char *define;
    int (*fits)(const slope_layout *);
    int per_unit; /* the condition depends on the unit: a smaller workgroup may meet it */
    const char *reason;
} slope_lookup_row;

#define LAST_AXIS_WIDE_WHY                                                                                     \
    "channels on the last axis, at least a group's span: one channel division a group, a group wraps at most "   \
    "once, and groups that do not read their slopes by vector loads"
#define INNER_WIDE_WHY "an inner axis at least a group's span: one channel division a group, which steps at most once"

static const slope_lookup_row slope_lookups[] = {
    {"SLOPES_SHARED", one_slope, 0, "one slope for every element: a uniform load"},
    {"SLOPES_LAST_AXIS_WIDE", last_axis_wide_strided, 0, LAST_AXIS_WIDE_WHY},
    {"SLOPES_INNER_WIDE", inner_wide_strided, 0, INNER_WIDE_WHY},
    {"SLOPES_LAST_AXIS_UNITS", last_axis_units, 1,
     "channels on the last axis, a whole number of units: a unit's channels never wrap, so its slopes are one "
     "run of consecutive words, read beside x's (vector loads), with one channel division a unit"},
    {"SLOPES_INNER_UNITS", inner_units, 1,
     "an inner axis a whole number of units long: a unit lies in one channel, one slope read a unit"},
    {"SLOPES_LAST_AXIS_WIDE", last_axis_wide, 0, LAST_AXIS_WIDE_WHY},
    {"SLOPES_INNER_WIDE", inner_wide, 0, INNER_WIDE_WHY},
    {"SLOPES_LAST_AXIS", last_axis, 0, "channels on the last axis, fewer than a group's span and not a whole "
     "number of units: the channel by a multiply-high per element, slopes gathered"},
    {"SLOPES_ANY_AXIS", any_layout, 0, "an inner axis shorter than a group's span and not a whole number of "
     "units: two multiply-high divisions per element, slopes gathered"},
};

typedef struct slope_choice {
    const slope_lookup_row *row;
    uint32_t workgroup, unit;
} slope_choice;

/* Workgroups from the launcher's default down to this size may be taken
 * to make a unit divide the layout (each halving doubles the groups). */
#define SLOPES_MIN_WORKGROUP 32u

static slope_choice choose_slope_lookup(const ffnrt_context *ctx, const activation_params *p, ffnrt_dtype dtype)
{
    uint32_t wg0 = ffnrt_elementwise_workgroup(ctx);
    slope_layout l = {p->channels, p->inner, ffnrt_elementwise_group_span(ctx, dtype, wg0),
                      ffnrt_elementwise_unit(ctx, dtype, wg0), ctx->ops->items_consecutive};
    slope_choice c = {NULL, wg0, l.unit};
    size_t rows = sizeof slope_lookups / sizeof slope_lookups[0];
    for (size_t r = 0; r < rows && !c.row; r++)
        if (slope_lookups[r].fits(&l))
            c.row = &slope_lookups[r];
    /* A row that needs the unit and did not fit, before the one taken: a
     * smaller group (on APIs whose unit is the group's row) may fit it. */
    for (uint32_t wg = wg0 / 2; wg >= SLOPES_MIN_WORKGROUP && !ctx->ops->items_consecutive; wg /= 2) {
        slope_layout s = {p->channels, p->inner, ffnrt_elementwise_group_span(ctx, dtype, wg),
                          ffnrt_elementwise_unit(ctx, dtype, wg), 0};
        for (const slope_lookup_row *r = slope_lookups; r < c.row; r++)
            if (r->per_unit && r->fits(&s))
                return (slope_choice){r, wg, s.unit};
    }
    return c;
}

/* Every output element reads its inputs at its own index (the slopes at its
 * channel, which equals its index when y can be the slopes tensor). */
#define ACTIVATION_ALIASING "an output may be exactly one of the inputs (in place), never part of one or another output"

/* Forward when dy is NULL, backward otherwise; out is y or dx. */
ffnrt_status ffnrt_op_activation(ffnrt_context *ctx, const ffnrt_activation_desc *desc, const ffnrt_tensor *x,
                                 const ffnrt_tensor *dy, ffnrt_tensor *out, const char *fn, ffnrt_stats_call *stats)
{
    ffnrt_status st = check_desc(ctx, desc, fn);
    if (st == FFNRT_OK)
        st = ffnrt_check_same_layout(ctx, x, out, fn, "x", dy ? "dx" : "y");
    if (st == FFNRT_OK && dy)
        st = ffnrt_check_same_layout(ctx, x, dy, fn, "x", "dy");
    activation_params p = {0, 0, 1, 1, 1, 0, 1, 0, 0.0f, 1.0f};
    int slopes = st == FFNRT_OK && (ffnrt_op_row_of(desc->kind)->params & FFNRT_OP_SLOPES);
    if (slopes)
        st = prelu_layout(ctx, desc, x, &p, fn);
    if (st == FFNRT_OK) {
        ffnrt_op_arg args[4] = {{x, "x", 0}, {dy, "dy", 0}, {desc->slopes, "desc->slopes", 0}, {out, dy ? "dx" : "y", 1}};
        if (!slopes)
            args[2].tensor = NULL;
        st = ffnrt_check_aliasing(ctx, fn, args, 4, 1, ACTIVATION_ALIASING);
    }
    ffnrt_defines defines = {0};
    ffnrt_defines_activation(&defines, st == FFNRT_OK ? desc->kind : FFNRT_ACT_COUNT);
    if (dy)
        ffnrt_defines_add(&defines, "#define BACKWARD 1");
    uint32_t workgroup = 0, row_multiple = 0;
    if (slopes && st == FFNRT_OK) {
        slope_choice c = choose_slope_lookup(ctx, &p, x->dtype);
        ffnrt_defines_add(&defines, "#define %s 1", c.row->define);
        workgroup = c.workgroup;
        row_multiple = c.row->per_unit ? c.unit : 0; /* a dispatch's range starts at a unit */
        if (ctx->plan_sink)
            ffnrt_plan_add(ctx->plan_sink, "prelu.slopes", c.row->define, "%s (%u channels, %u elements a step of the "
                           "channel axis, %u work-items a group, %u elements a unit)", c.row->reason, p.channels,
                           p.inner, c.workgroup, c.unit);
    }
    if (st == FFNRT_OK)
        st = ffnrt_compute_define(ctx, desc->compute, x->dtype, fn, &defines, stats ? &stats->fp16 : NULL);
    if (st != FFNRT_OK)
        return st;
    p.alpha = desc->alpha;
    p.beta = desc->beta;
    ffnrt_ew_binding b[4];
    uint32_t nb = 0;
    b[nb++] = (ffnrt_ew_binding){x, 1};
    b[nb++] = (ffnrt_ew_binding){out, 1};
    if (dy)
        b[nb++] = (ffnrt_ew_binding){dy, 1};
    if (slopes)
        b[nb++] = (ffnrt_ew_binding){desc->slopes, 0};
    ffnrt_ew_launch l = {"activation.kernel", &defines, x->dtype, x->numel, 1, b, nb, &p, sizeof p,
                         stats && stats->choice.on ? &stats->run : NULL, workgroup, row_multiple};
    return ffnrt_run_elementwise(ctx, &l);
}

/* The public calls: the op with its statistics, when they are on. */
static ffnrt_status run_activation(ffnrt_context *ctx, const ffnrt_activation_desc *desc, const ffnrt_tensor *x,
                                   const ffnrt_tensor *dy, ffnrt_tensor *out, const char *fn)
{
    ffnrt_stats_call sc = {0};
    int known = desc && (unsigned)desc->kind < FFNRT_ACT_COUNT;
    uint64_t n = x && x->ctx == ctx ? x->numel : 0;
    sc.fn = fn;
    snprintf(sc.op, sizeof sc.op, "%s%s", known ? ffnrt_activation_name(desc->kind) : "?", dy ? " backward" : "");
    sc.dtype = x && x->ctx == ctx ? x->dtype : FFNRT_DTYPE_F32;
    sc.act = known ? desc->kind : FFNRT_ACT_COUNT;
    sc.inputs = dy ? 2 * n : n;
    sc.outputs = sc.pre = sc.activations = n;
    ffnrt_status st = ffnrt_stats_begin(ctx, NULL, &sc);
    sc.run.roles |= FFNRT_STATS_INPUTS | FFNRT_STATS_PRE | FFNRT_STATS_OUTPUT;
    if (st == FFNRT_OK)
        st = ffnrt_op_activation(ctx, desc, x, dy, out, fn, &sc);
    return ffnrt_stats_end(ctx, &sc, st, NULL, NULL);
}

ffnrt_status ffnrt_activation_forward(ffnrt_context *ctx, const ffnrt_activation_desc *desc,
                                      const ffnrt_tensor *x, ffnrt_tensor *y)
{
    static const char fn[] = "ffnrt_activation_forward";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    return ffnrt_context_finish_call(ctx, run_activation(ctx, desc, x, NULL, y, fn));
}

ffnrt_status ffnrt_activation_backward(ffnrt_context *ctx, const ffnrt_activation_desc *desc,
                                       const ffnrt_tensor *x, const ffnrt_tensor *dy, ffnrt_tensor *dx)
{
    static const char fn[] = "ffnrt_activation_backward";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_status st = dy ? FFNRT_OK : ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: dy is NULL", fn);
    if (st == FFNRT_OK)
        st = run_activation(ctx, desc, x, dy, dx, fn);
    return ffnrt_context_finish_call(ctx, st);
}

ffnrt_status ffnrt_op_copy(ffnrt_context *ctx, const ffnrt_tensor *x, ffnrt_tensor *y, const char *fn)
{
    ffnrt_status st = ffnrt_check_same_layout(ctx, x, y, fn, "x", "y");
    ffnrt_op_arg args[2] = {{x, "x", 0}, {y, "y", 1}};
    if (st == FFNRT_OK)
        st = ffnrt_check_aliasing(ctx, fn, args, 2, 1, ACTIVATION_ALIASING);
    if (st != FFNRT_OK)
        return st;
    activation_params p = {0, 0, 1, 1, 1, 0, 1, 0, 0.0f, 1.0f};
    ffnrt_ew_binding b[2] = {{x, 1}, {y, 1}};
    ffnrt_defines defines = {0};
    ffnrt_defines_activation(&defines, FFNRT_ACT_COUNT);
    ffnrt_defines_add(&defines, "#define COPY_WORDS 1");
    ffnrt_ew_launch l = {"activation.kernel", &defines, x->dtype, x->numel, 1, b, 2, &p, sizeof p, NULL, 0, 0};
    return ffnrt_run_elementwise(ctx, &l);
}

ffnrt_status ffnrt_copy(ffnrt_context *ctx, const ffnrt_tensor *x, ffnrt_tensor *y)
{
    static const char fn[] = "ffnrt_copy";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    return ffnrt_context_finish_call(ctx, ffnrt_op_copy(ctx, x, y, fn));
}

typedef struct activation_plan_arg {
    const ffnrt_activation_desc *desc;
    ffnrt_dtype dtype;
    size_t numel;
} activation_plan_arg;

static ffnrt_status plan_activation(ffnrt_context *ctx, const void *arg)
{
    const activation_plan_arg *a = arg;
    ffnrt_tensor x, s;
    int64_t n = (int64_t)a->numel, one = 1;
    ffnrt_activation_desc d = *a->desc;
    int slopes = (ffnrt_op_row_of(d.kind)->params & FFNRT_OP_SLOPES) != 0;
    if (slopes && d.slopes && d.slopes->numel > 1) { /* C slopes: x as [numel / C, C] */
        int64_t c = (int64_t)d.slopes->numel, shape[2] = {n / c, c};
        if (n % c != 0)
            return ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH,
                              "ffnrt_activation_plan: %lld elements are not a whole number of rows of %lld slopes",
                              (long long)n, (long long)c);
        ffnrt_plan_tensor(ctx, a->dtype, 2, shape, &x);
        d.channel_axis = -1;
    } else {
        ffnrt_plan_tensor(ctx, a->dtype, 1, &n, &x);
    }
    if (slopes && !d.slopes) {
        ffnrt_plan_tensor(ctx, a->dtype, 1, &one, &s);
        d.slopes = &s;
    }
    return run_activation(ctx, &d, &x, NULL, &x, "ffnrt_activation_plan");
}

ffnrt_status ffnrt_activation_plan(ffnrt_context *ctx, const ffnrt_activation_desc *desc, ffnrt_dtype dtype,
                                   size_t numel, ffnrt_plan **out)
{
    static const char fn[] = "ffnrt_activation_plan";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_status st = check_desc(ctx, desc, fn);
    if (st == FFNRT_OK && ffnrt_dtype_size(dtype) == 0)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not a dtype", fn, (int)dtype);
    if (st == FFNRT_OK)
        st = ffnrt_tensor_check_size(ctx, dtype, numel, fn);
    if (st != FFNRT_OK)
        return ffnrt_context_finish_call(ctx, st);
    char text[96];
    snprintf(text, sizeof text, "%s forward, %zu %s elements", ffnrt_activation_name(desc->kind), numel,
             ffnrt_dtype_name(dtype));
    activation_plan_arg a = {desc, dtype, numel};
    return ffnrt_plan_op(ctx, fn, out, text, plan_activation, &a);
}
