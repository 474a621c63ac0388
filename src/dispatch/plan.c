/* The plan object: the dispatcher's choices, each with its reason. */
#include "ops/ops.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct plan_item {
    char *what, *choice, *reason;
} plan_item;

struct ffnrt_plan {
    plan_item *items;
    size_t count, capacity;
    char *text; /* built on demand */
    int out_of_memory;
};

ffnrt_plan *ffnrt_plan_new(void) { return calloc(1, sizeof(ffnrt_plan)); }

void ffnrt_plan_add(ffnrt_plan *plan, const char *what, const char *choice, const char *reason_fmt, ...)
{
    if (!plan || plan->out_of_memory)
        return;
    char reason[1024];
    va_list ap;
    va_start(ap, reason_fmt);
    vsnprintf(reason, sizeof reason, reason_fmt, ap);
    va_end(ap);
    if (plan->count == plan->capacity) {
        size_t cap = plan->capacity ? 2 * plan->capacity : 16;
        plan_item *items = realloc(plan->items, cap * sizeof *items);
        if (!items) {
            plan->out_of_memory = 1;
            return;
        }
        plan->items = items;
        plan->capacity = cap;
    }
    plan_item *it = &plan->items[plan->count];
    it->what = strdup(what);
    it->choice = strdup(choice);
    it->reason = strdup(reason);
    if (!it->what || !it->choice || !it->reason) {
        free(it->what), free(it->choice), free(it->reason);
        plan->out_of_memory = 1;
        return;
    }
    plan->count++;
    free(plan->text);
    plan->text = NULL;
}

void ffnrt_plan_destroy(ffnrt_plan *plan)
{
    if (!plan)
        return;
    for (size_t i = 0; i < plan->count; i++) {
        free(plan->items[i].what);
        free(plan->items[i].choice);
        free(plan->items[i].reason);
    }
    free(plan->items);
    free(plan->text);
    free(plan);
}

size_t ffnrt_plan_size(const ffnrt_plan *plan) { return plan ? plan->count : 0; }

ffnrt_status ffnrt_plan_item(const ffnrt_plan *plan, size_t i, const char **what, const char **choice,
                             const char **reason)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!plan || i >= plan->count)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_plan_item: %s", plan ? "no such item" : "plan is NULL");
    else {
        if (what)
            *what = plan->items[i].what;
        if (choice)
            *choice = plan->items[i].choice;
        if (reason)
            *reason = plan->items[i].reason;
    }
    ffnrt_error_publish(&err);
    return err.status;
}

const char *ffnrt_plan_choice(const ffnrt_plan *plan, const char *what)
{
    if (!plan || !what)
        return NULL;
    for (size_t i = 0; i < plan->count; i++)
        if (strcmp(plan->items[i].what, what) == 0)
            return plan->items[i].choice;
    return NULL;
}

const char *ffnrt_plan_text(const ffnrt_plan *plan)
{
    if (!plan)
        return "";
    ffnrt_plan *p = (ffnrt_plan *)plan; /* the text is a cache */
    if (p->text)
        return p->text;
    size_t len = 1;
    for (size_t i = 0; i < p->count; i++)
        len += 2 * strlen(p->items[i].what) + strlen(p->items[i].choice) + strlen(p->items[i].reason) + 64;
    p->text = malloc(len);
    if (!p->text)
        return "(out of host memory)";
    size_t at = 0;
    for (size_t i = 0; i < p->count; i++)
        at += (size_t)snprintf(p->text + at, len - at, "%-22s %s\n%-22s   because %s\n", p->items[i].what,
                               p->items[i].choice, "", p->items[i].reason);
    p->text[at] = '\0';
    return p->text;
}

/* ------------------------------------------------------- context choices */

void ffnrt_plan_add_context(ffnrt_plan *plan, const ffnrt_context *ctx)
{
    const ffnrt_device_info *d = &ctx->info;
    char choice[512];
    snprintf(choice, sizeof choice, "%s (%s %u, %s)", d->name, ffnrt_backend_name(d->backend), d->index,
             d->driver_version);
    ffnrt_plan_add(plan, "device", choice, "%s", ctx->device_reason);
    snprintf(choice, sizeof choice, "%s", ctx->profile ? ctx->profile->name : "none");
    ffnrt_plan_add(plan, "profile", choice, "%s",
                   ctx->profile ? ctx->profile->models : "the device's own limits (FFNRT_PROFILE or options.profile to model a GPU)");
    snprintf(choice, sizeof choice,
             "range %" PRIu64 " B, shared %" PRIu64 " B, workgroup %u, groups %u, align %" PRIu64 ", subgroup %u",
             ctx->limits.max_buffer_range, d->shared_memory_size, ctx->limits.max_workgroup_size,
             ctx->limits.max_workgroup_count[0], ctx->limits.buffer_offset_alignment, d->subgroup_size);
    ffnrt_plan_add(plan, "limits", choice, "%s", ctx->limit_notes[0] ? ctx->limit_notes : "the device's own");
    static const char *const policy_names[] = {"exact", "balanced", "fast"};
    snprintf(choice, sizeof choice, "%s: storage %s, arithmetic %s", policy_names[ctx->policy],
             ffnrt_dtype_name(ctx->precision.storage), ctx->precision.fp16_arithmetic ? "fp16" : "fp32");
    ffnrt_plan_add(plan, "precision", choice, "%s", ctx->precision.reason);
    char vetoes[96];
    snprintf(vetoes, sizeof vetoes, "%s%s%s", ctx->vetoes & FFNRT_QUIRK_FP16_ARITHMETIC ? "veto fp16 arithmetic " : "",
             ctx->vetoes & FFNRT_QUIRK_STORAGE_16BIT ? "veto 16-bit storage " : "",
             ctx->vetoes & FFNRT_QUIRK_TWO_ITEM_TILES ? "veto 2-item GEMM tiles" : "");
    if (ctx->calibration.valid)
        snprintf(choice, sizeof choice, "copy %.2f GB/s, GEMM %.2f GFLOP/s, dispatch %.1f us",
                 ctx->calibration.copy_gbps, ctx->calibration.gemm_gflops, ctx->calibration.dispatch_us);
    ffnrt_plan_add(plan, "calibration", ctx->calibration.valid ? choice : "not measured", "%s",
                   ctx->calibration.valid ? "measured once on this device with ffnrt's copy and GEMM kernels"
                                          : "ffnrt_context_calibrate (ffnrt plan --calibrate) measures it; until "
                                            "then the kernel choice uses the token threshold");
    ffnrt_plan_add(plan, "quirks", ctx->vetoes ? vetoes : "none", "%s",
                   ctx->quirk_notes[0] ? ctx->quirk_notes : "no entry of the quirk table matches this device");
}

ffnrt_status ffnrt_context_plan(ffnrt_context *ctx, ffnrt_plan **out)
{
    if (!ctx)
        return ffnrt_null_context("ffnrt_context_plan");
    ffnrt_status st = FFNRT_OK;
    if (!out)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_context_plan: out is NULL");
    else if (!(*out = ffnrt_plan_new()))
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "ffnrt_context_plan: out of host memory");
    else
        ffnrt_plan_add_context(*out, ctx);
    return ffnrt_context_finish_call(ctx, st);
}

ffnrt_status ffnrt_context_precision(const ffnrt_context *ctx, ffnrt_dtype *storage, int *fp16_arithmetic)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!ctx)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_context_precision: ctx is NULL");
    else {
        if (storage)
            *storage = ctx->precision.storage;
        if (fp16_arithmetic)
            *fp16_arithmetic = ctx->precision.fp16_arithmetic;
    }
    ffnrt_error_publish(&err);
    return err.status;
}

/* --------------------------------------------------------- forced choices */

/* What ffnrt_context_force accepts, and the environment variable that
 * forces the same choice. */
#define FORCE_COUNT 6
static const char *const force_names[FORCE_COUNT][2] = {
    {"ffn.path", "FFNRT_FFN_PATH"},     {"ffn.kernel", "FFNRT_GEMM_KERNEL"}, {"ffn.tiles", "FFNRT_GEMM_TILES"},
    {"ffn.matvec", "FFNRT_GEMV_SHAPE"}, {"ffn.block", "FFNRT_GEMM_BLOCK"},   {"ffn.tuning", "FFNRT_TUNING"},
};

const char *ffnrt_context_forced(const ffnrt_context *ctx, const char *env)
{
    for (int i = 0; i < FORCE_COUNT; i++)
        if (strcmp(force_names[i][1], env) == 0 && ctx->forced[i][0])
            return ctx->forced[i];
    const char *v = getenv(env);
    return v && *v ? v : NULL;
}

ffnrt_status ffnrt_context_force(ffnrt_context *ctx, const char *what, const char *value)
{
    if (!ctx)
        return ffnrt_null_context("ffnrt_context_force");
    ffnrt_status st = FFNRT_OK;
    int at = -1;
    for (int i = 0; i < FORCE_COUNT && what; i++)
        if (strcmp(force_names[i][0], what) == 0)
            at = i;
    if (at < 0)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT,
                        "ffnrt_context_force: \"%s\" is not a choice (ffn.path, ffn.kernel, ffn.tiles, ffn.matvec, "
                        "ffn.block, ffn.tuning)", what ? what : "(null)");
    else if (value && strlen(value) >= sizeof ctx->forced[at])
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_context_force: value too long");
    else
        snprintf(ctx->forced[at], sizeof ctx->forced[at], "%s", value ? value : "");
    return ffnrt_context_finish_call(ctx, st);
}
