/* The element-wise kernels' variant, chosen whole: the arithmetic, PReLU's
 * slope lookup and the workgroup it takes, over the launcher's geometry
 * (how many words a work-item and a group take, which the lookups and the
 * splits both depend on). launch/elementwise.c turns the variant into
 * defines and dispatches. */
#include "dispatch/dispatch.h"
#include "ffnrt_op_table.h"

#include <stdio.h>

#define PREFERRED_WORKGROUP 256u

uint32_t ffnrt_elementwise_workgroup(const ffnrt_context *ctx)
{
    return ctx->limits.max_workgroup_size < PREFERRED_WORKGROUP ? ctx->limits.max_workgroup_size : PREFERRED_WORKGROUP;
}

uint32_t ffnrt_elementwise_group_span(const ffnrt_context *ctx, ffnrt_dtype dtype, uint32_t wg)
{
    return (wg ? wg : ffnrt_elementwise_workgroup(ctx)) * FFNRT_EW_ITEMS * (ffnrt_dtype_size(dtype) == 4 ? 1u : 2u);
}

uint32_t ffnrt_elementwise_unit(const ffnrt_context *ctx, ffnrt_dtype dtype, uint32_t wg)
{
    uint32_t words = ctx->ops->items_consecutive ? FFNRT_EW_ITEMS : (wg ? wg : ffnrt_elementwise_workgroup(ctx));
    return words * (ffnrt_dtype_size(dtype) == 4 ? 1u : 2u);
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

static slope_choice choose_slope_lookup(const ffnrt_context *ctx, uint32_t channels, uint32_t inner, ffnrt_dtype dtype)
{
    uint32_t wg0 = ffnrt_elementwise_workgroup(ctx);
    slope_layout l = {channels, inner, ffnrt_elementwise_group_span(ctx, dtype, wg0),
                      ffnrt_elementwise_unit(ctx, dtype, wg0), ctx->ops->items_consecutive};
    slope_choice c = {NULL, wg0, l.unit};
    size_t rows = sizeof slope_lookups / sizeof slope_lookups[0];
    for (size_t r = 0; r < rows && !c.row; r++)
        if (slope_lookups[r].fits(&l))
            c.row = &slope_lookups[r];
    /* A row that needs the unit and did not fit, before the one taken: a
     * smaller group (on APIs whose unit is the group's row) may fit it. */
    for (uint32_t wg = wg0 / 2; wg >= SLOPES_MIN_WORKGROUP && !ctx->ops->items_consecutive; wg /= 2) {
        slope_layout s = {channels, inner, ffnrt_elementwise_group_span(ctx, dtype, wg),
                          ffnrt_elementwise_unit(ctx, dtype, wg), 0};
        for (const slope_lookup_row *r = slope_lookups; r < c.row; r++)
            if (r->per_unit && r->fits(&s))
                return (slope_choice){r, wg, s.unit};
    }
    return c;
}

/* Each family's kernel file in shaders/. */
static const char *const family_files[FFNRT_EW_FAMILY_COUNT] = {
    [FFNRT_EW_ACTIVATION] = "activation.kernel",
    [FFNRT_EW_GLU] = "glu.kernel",
    [FFNRT_EW_BIAS] = "bias.kernel",
    [FFNRT_EW_TRANSPOSE] = "transpose.kernel",
    [FFNRT_EW_OPTIMIZER] = "optimizer.kernel",
    [FFNRT_EW_MSE] = "loss.kernel",
};

const char *ffnrt_ew_family_file(ffnrt_ew_family f) { return (unsigned)f < FFNRT_EW_FAMILY_COUNT ? family_files[f] : NULL; }

ffnrt_status ffnrt_choose_ew_variant(ffnrt_context *ctx, const ffnrt_ew_op *op, ffnrt_ew_variant *out)
{
    ffnrt_ew_variant v = {0};
    v.op = *op;
    v.workgroup = ffnrt_elementwise_workgroup(ctx);
    v.items = FFNRT_EW_ITEMS;
    v.views64 = ffnrt_views64(ctx); /* the 4-word loads and stores as two 64-bit words */
    if (op->slope_channels) {
        slope_choice c = choose_slope_lookup(ctx, op->slope_channels, op->slope_inner, op->dtype);
        v.slope_lookup = c.row->define;
        v.workgroup = c.workgroup;
        v.row_multiple = c.row->per_unit ? c.unit : 0; /* a dispatch's range starts at a unit */
        ffnrt_plan_add(ctx->plan_sink, "prelu.slopes", c.row->define, "%s (%u channels, %u elements a step of the "
                       "channel axis, %u work-items a group, %u elements a unit)", c.row->reason, op->slope_channels,
                       op->slope_inner, c.workgroup, c.unit);
    }
    if (op->arithmetic) {
        char why[160];
        ffnrt_status st = ffnrt_choose_compute(ctx, op->compute, op->dtype, op->fn, &v.fp16, why, sizeof why,
                                               &ctx->error);
        if (st != FFNRT_OK)
            return st;
        ffnrt_plan_add(ctx->plan_sink, "compute", v.fp16 ? "fp16" : "fp32", "%s", why);
    }
    *out = v;
    return FFNRT_OK;
}

void ffnrt_ew_variant_text(const ffnrt_ew_variant *v, char *buf, size_t cap)
{
    const ffnrt_ew_op *o = &v->op;
    const ffnrt_op_row *row = ffnrt_op_row_of(o->act); /* the op table, not ops/: dispatch sits below them */
    const char *act = row ? row->name : NULL;
    const char *rule = o->family != FFNRT_EW_OPTIMIZER    ? ""
                       : o->update == FFNRT_OPTIMIZER_ADAMW ? ", AdamW"
                       : o->momentum                        ? ", SGD with momentum"
                                                            : ", SGD";
    snprintf(buf, cap, "%s%s%s%s%s%s%s%s%s%s; %s storage%s%s%s; %u work-items a group, %u words a work-item%s%s",
             ffnrt_ew_family_file(o->family), rule, o->master ? ", fp32 master weights" : "",
             o->copy_words ? ", a copy of words" : "", act ? ", " : "",
             act ? act : "", o->family == FFNRT_EW_GLU ? " gate" : "", o->backward ? ", backward" : "",
             o->halves ? ", halves of one row" : o->family == FFNRT_EW_GLU ? ", two tensors" : "",
             o->two_outputs ? " and two outputs" : "", ffnrt_dtype_name(o->dtype),
             o->arithmetic ? (v->fp16 ? ", fp16 arithmetic" : ", fp32 arithmetic") : "",
             v->slope_lookup ? ", slopes " : "", v->slope_lookup ? v->slope_lookup : "", v->workgroup, v->items,
             v->items == 8 ? " (64-bit views)" : v->views64 ? " (4-word accesses as two 64-bit words)" : "",
             v->whole_only ? ", whole groups (no bounds tests)"
             : v->stats ? (v->stats_norms2 ? ", statistics variant (token norms in registers)" : ", statistics variant")
                      : "");
}
