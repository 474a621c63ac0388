/* The optimizer: SGD (with momentum) and AdamW on the device, global
 * gradient-norm clipping and dynamic loss scaling.
 *
 * A step is two passes. The norm pass (shaders/sumsq.kernel) writes each
 * gradient's partial sums of squares (and its near-zero and non-finite
 * counts, the statistics); the host reads them (a few hundred words),
 * adds them in a fixed order, and decides: skip the
 * step (a non-finite norm), clip (the joint norm past max_grad_norm), and
 * the loss scale's next value. The update pass then runs once per
 * parameter with one factor for its gradient (clip / loss scale), so no
 * kernel reads a decision from the device and the same gradients give the
 * same bits. */
#include "ops/ffn_internal.h"
#include "dispatch/dispatch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_SCALE_WINDOW 2000u
/* The loss scale never falls below this: a gradient that overflows at
 * 2^-24 is not an fp16 range problem. */
#define MIN_LOSS_SCALE 0x1p-24f

typedef struct opt_param {
    ffnrt_tensor *w;
    const ffnrt_tensor *g;
    ffnrt_tensor *m, *v, *master; /* fp32 state, NULL where the rule keeps none */
    ffnrt_grad_stats stats;       /* the last step's */
} opt_param;

struct ffnrt_optimizer {
    ffnrt_context *ctx;
    ffnrt_optimizer_desc desc;
    opt_param *params;
    size_t count, cap;
    ffnrt_tensor *partials; /* f32 [partials_for x groups] */
    size_t partials_for;
    uint64_t steps, skipped;
    float scale;
    uint32_t clean; /* finite steps in a row since the scale last moved */
};

static ffnrt_status check_desc(ffnrt_context *ctx, const ffnrt_optimizer_desc *d, const char *fn)
{
    if (!d)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: desc is NULL", fn);
    if ((unsigned)d->kind > FFNRT_OPTIMIZER_ADAMW)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %d is not an optimizer kind", fn,
                          (int)d->kind);
    const float values[] = {d->lr, d->momentum, d->beta1, d->beta2, d->eps, d->weight_decay, d->max_grad_norm,
                            d->loss_scale};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        if (!isfinite(values[i]) || values[i] < 0)
            return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT,
                              "%s: lr, momentum, beta1, beta2, eps, weight_decay, max_grad_norm and loss_scale must "
                              "be finite and not negative",
                              fn);
    if (d->momentum >= 1 || d->beta1 >= 1 || d->beta2 >= 1)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: momentum, beta1 and beta2 must be below 1",
                          fn);
    if (d->kind == FFNRT_OPTIMIZER_ADAMW && d->eps == 0)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: AdamW's eps must be positive", fn);
    return FFNRT_OK;
}

ffnrt_status ffnrt_optimizer_create(ffnrt_context *ctx, const ffnrt_optimizer_desc *desc, ffnrt_optimizer **out)
{
    static const char fn[] = "ffnrt_optimizer_create";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_status st = check_desc(ctx, desc, fn);
    if (st == FFNRT_OK && !out)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: out is NULL", fn);
    ffnrt_optimizer *o = st == FFNRT_OK ? calloc(1, sizeof *o) : NULL;
    if (st == FFNRT_OK && !o)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if (st == FFNRT_OK) {
        o->ctx = ctx;
        o->desc = *desc;
        o->scale = desc->loss_scale > 0 ? desc->loss_scale : 1.0f;
        *out = o;
    }
    return ffnrt_context_finish_call(ctx, st);
}

void ffnrt_optimizer_destroy(ffnrt_optimizer *opt)
{
    if (!opt)
        return;
    for (size_t i = 0; i < opt->count; i++) {
        ffnrt_tensor_free(opt->params[i].m);
        ffnrt_tensor_free(opt->params[i].v);
        ffnrt_tensor_free(opt->params[i].master);
    }
    ffnrt_tensor_free(opt->partials);
    free(opt->params);
    free(opt);
}

/* An fp32 state tensor of t's shape: zeros, or t's values (from NULL:
 * zeros; else fp32 values of t's elements). */
static ffnrt_status state_tensor(ffnrt_context *ctx, const ffnrt_tensor *t, const float *values, const char *fn,
                                 ffnrt_tensor **out)
{
    ffnrt_status st = ffnrt_tensor_alloc(ctx, FFNRT_DTYPE_F32, t->ndim, t->shape, fn, out);
    float *zeros = NULL;
    if (st == FFNRT_OK && !values) {
        zeros = calloc(t->numel ? t->numel : 1, sizeof *zeros);
        if (!zeros)
            st = ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    if (st == FFNRT_OK)
        st = ffnrt_tensor_upload(*out, values ? values : zeros, t->numel * sizeof(float));
    free(zeros);
    if (st != FFNRT_OK) {
        ffnrt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

/* A 16-bit tensor's elements as floats, read from the device. */
static ffnrt_status read_floats(ffnrt_context *ctx, const ffnrt_tensor *t, float *out, const char *fn)
{
    uint16_t *bits = malloc(t->bytes + 2);
    if (!bits)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    ffnrt_status st = ffnrt_context_settle(ctx);
    if (st == FFNRT_OK)
        st = ctx->ops->buffer_read(ctx->dev, t->buffer, t->offset, bits, t->bytes, &ctx->error);
    if (st == FFNRT_OK && t->dtype == FFNRT_DTYPE_F16)
        ffnrt_f16_to_f32_array(bits, out, t->numel);
    else if (st == FFNRT_OK)
        ffnrt_bf16_to_f32_array(bits, out, t->numel);
    free(bits);
    return st;
}

static ffnrt_status add_param(ffnrt_optimizer *o, ffnrt_tensor *w, const ffnrt_tensor *g, const char *fn,
                              const char *w_name, const char *g_name)
{
    ffnrt_context *ctx = o->ctx;
    ffnrt_status st = ffnrt_check_same_layout(ctx, w, g, fn, w_name, g_name);
    ffnrt_op_arg args[2] = {{g, g_name, 0}, {w, w_name, 1}};
    if (st == FFNRT_OK)
        st = ffnrt_check_aliasing(ctx, fn, args, 2, 0, "a parameter and its gradient must not share memory");
    for (size_t i = 0; i < o->count && st == FFNRT_OK; i++)
        if (ffnrt_tensor_overlap(o->params[i].w, w) != FFNRT_OVERLAP_NONE)
            st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT,
                            "%s: %s overlaps parameter %zu, which the optimizer already updates", fn, w_name, i);
    if (st == FFNRT_OK && o->count == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 8;
        opt_param *p = realloc(o->params, cap * sizeof *p);
        if (!p)
            return ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        o->params = p, o->cap = cap;
    }
    if (st != FFNRT_OK)
        return st;
    opt_param p = {w, g, NULL, NULL, NULL, {0, 0, 0, 0}};
    int adamw = o->desc.kind == FFNRT_OPTIMIZER_ADAMW;
    if (adamw || o->desc.momentum > 0)
        st = state_tensor(ctx, w, NULL, "optimizer state", &p.m);
    if (st == FFNRT_OK && adamw)
        st = state_tensor(ctx, w, NULL, "optimizer state", &p.v);
    if (st == FFNRT_OK && w->dtype != FFNRT_DTYPE_F32) {
        float *values = malloc((w->numel ? w->numel : 1) * sizeof *values);
        st = values ? read_floats(ctx, w, values, fn)
                    : ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        if (st == FFNRT_OK)
            st = state_tensor(ctx, w, values, "fp32 master weights", &p.master);
        free(values);
    }
    if (st != FFNRT_OK) {
        ffnrt_tensor_free(p.m);
        ffnrt_tensor_free(p.v);
        return st;
    }
    o->params[o->count++] = p;
    return FFNRT_OK;
}

ffnrt_status ffnrt_optimizer_add(ffnrt_optimizer *opt, ffnrt_tensor *param, const ffnrt_tensor *grad)
{
    static const char fn[] = "ffnrt_optimizer_add";
    if (!opt)
        return ffnrt_null_handle(fn, "opt");
    ffnrt_status st = ffnrt_check_tensor(opt->ctx, param, fn, "param");
    if (st == FFNRT_OK)
        st = add_param(opt, param, grad, fn, "param", "grad");
    return ffnrt_context_finish_call(opt->ctx, st);
}

ffnrt_status ffnrt_optimizer_add_ffn(ffnrt_optimizer *opt, ffnrt_ffn *layer, const ffnrt_ffn_gradients *grads)
{
    static const char fn[] = "ffnrt_optimizer_add_ffn";
    if (!opt)
        return ffnrt_null_handle(fn, "opt");
    ffnrt_context *ctx = opt->ctx;
    ffnrt_status st = FFNRT_OK;
    if (!layer || !grads)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, layer ? "grads" : "layer");
    else if (layer->ctx != ctx)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_WRONG_CONTEXT, "%s: the layer belongs to another context", fn);
    else if (ffnrt_ffn_quantized(&layer->desc))
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_UNSUPPORTED, "%s: quantized layers are inference-only", fn);
    if (st != FFNRT_OK)
        return ffnrt_context_finish_call(ctx, st);
    /* Each gradient slot with the layer's tensor it updates; the layer's
     * weights are its own or the app's, used in place either way. */
    int stacked = ffnrt_ffn_gated(&layer->desc) && layer->gate.w == layer->value.w;
    const ffnrt_ffn_gradients *g = grads;
    struct {
        ffnrt_tensor *grad;
        const ffnrt_tensor *param;
        const char *name;
        int wrong_form;
    } pairs[] = {
        {g->w_in, layer->in.w, "w_in", 0},
        {g->b_in, layer->in.b, "b_in", 0},
        {g->w_gate, layer->gate.w, "w_gate", stacked},
        {g->b_gate, layer->gate.b, "b_gate", stacked},
        {g->w_value, layer->value.w, "w_value", stacked},
        {g->b_value, layer->value.b, "b_value", stacked},
        {g->w_gate_value, layer->gate.w, "w_gate_value", !stacked},
        {g->b_gate_value, layer->gate.b, "b_gate_value", !stacked},
        {g->w_out, layer->out.w, "w_out", 0},
        {g->b_out, layer->out.b, "b_out", 0},
    };
    size_t first = opt->count;
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0] && st == FFNRT_OK; i++) {
        if (!pairs[i].grad)
            continue;
        char gname[32];
        snprintf(gname, sizeof gname, "grads.%s", pairs[i].name);
        if (!pairs[i].param || pairs[i].wrong_form)
            st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s has no parameter in this layer%s", fn,
                            gname,
                            pairs[i].wrong_form ? (stacked ? " (its gate and value weights are stacked: give "
                                                             "w_gate_value's gradient)"
                                                           : " (its gate and value weights are separate)")
                                                : "");
        else
            st = add_param(opt, (ffnrt_tensor *)pairs[i].param, pairs[i].grad, fn, pairs[i].name, gname);
    }
    /* All or nothing: the pairs added before a refusal are taken back. */
    while (st != FFNRT_OK && opt->count > first) {
        opt_param *p = &opt->params[--opt->count];
        ffnrt_tensor_free(p->m);
        ffnrt_tensor_free(p->v);
        ffnrt_tensor_free(p->master);
    }
    return ffnrt_context_finish_call(ctx, st);
}

ffnrt_status ffnrt_optimizer_set_lr(ffnrt_optimizer *opt, float lr)
{
    static const char fn[] = "ffnrt_optimizer_set_lr";
    if (!opt)
        return ffnrt_null_handle(fn, "opt");
    ffnrt_status st = FFNRT_OK;
    if (!isfinite(lr) || lr < 0)
        st = ffnrt_fail(&opt->ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: lr %g must be finite and not negative",
                        fn, (double)lr);
    else
        opt->desc.lr = lr;
    return ffnrt_context_finish_call(opt->ctx, st);
}

float ffnrt_optimizer_loss_scale(const ffnrt_optimizer *opt) { return opt ? opt->scale : 1.0f; }

ffnrt_status ffnrt_optimizer_grad_stats(const ffnrt_optimizer *opt, size_t i, ffnrt_grad_stats *out)
{
    static const char fn[] = "ffnrt_optimizer_grad_stats";
    if (!opt)
        return ffnrt_null_handle(fn, "opt");
    ffnrt_status st = FFNRT_OK;
    if (!out || i >= opt->count)
        st = ffnrt_fail(&opt->ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s", fn,
                        out ? "no parameter of that index" : "out is NULL");
    else
        *out = opt->params[i].stats;
    return ffnrt_context_finish_call(opt->ctx, st);
}

/* ------------------------------------------------------------------ step */

/* optimizer.kernel's update Params. */
typedef struct update_params {
    uint32_t n, base;
    float lr, gscale, weight_decay, momentum, beta1, beta2, eps, step_size, inv_sqrt_bc2;
} update_params;

/* Every gradient's figures (sumsq.kernel), reduced in a fixed order. */
static ffnrt_status gradient_figures(ffnrt_optimizer *o, ffnrt_sumsq_result *out)
{
    ffnrt_context *ctx = o->ctx;
    ffnrt_status st = FFNRT_OK;
    if (o->partials_for != o->count) {
        ffnrt_tensor_free(o->partials);
        o->partials = NULL;
        int64_t n = (int64_t)ffnrt_sumsq_words(ctx, o->count);
        st = ffnrt_tensor_alloc(ctx, FFNRT_DTYPE_F32, 1, &n, "optimizer norms", &o->partials);
        o->partials_for = st == FFNRT_OK ? o->count : 0;
    }
    if (st == FFNRT_OK)
        st = ffnrt_batch_begin(ctx);
    if (st != FFNRT_OK)
        return st;
    float near_zero = o->desc.grad_zero_threshold * o->scale;
    for (size_t i = 0; i < o->count && st == FFNRT_OK; i++)
        st = ffnrt_launch_sumsq(ctx, o->params[i].g, NULL, o->partials, (uint32_t)i, near_zero);
    uint64_t ns = 0;
    st = ffnrt_batch_end(ctx, st, &ns);
    if (st == FFNRT_OK)
        st = ffnrt_sumsq_collect(ctx, o->partials, o->count, out);
    ctx->last_op_ns = ns;
    return st;
}

static ffnrt_status update(ffnrt_optimizer *o, const opt_param *p, float gscale, const char *fn)
{
    ffnrt_context *ctx = o->ctx;
    const ffnrt_optimizer_desc *d = &o->desc;
    int adamw = d->kind == FFNRT_OPTIMIZER_ADAMW;
    ffnrt_ew_op op = {.family = FFNRT_EW_OPTIMIZER, .act = FFNRT_ACT_COUNT, .dtype = p->w->dtype,
                      .compute = FFNRT_COMPUTE_AUTO, .fn = fn, .update = d->kind,
                      .momentum = !adamw && d->momentum > 0, .master = p->master != NULL};
    ffnrt_ew_variant v;
    ffnrt_status st = ffnrt_choose_ew_variant(ctx, &op, &v);
    if (st != FFNRT_OK)
        return st;
    double t = (double)o->steps;
    double bc1 = 1.0 - pow(d->beta1, t), bc2 = 1.0 - pow(d->beta2, t);
    update_params up = {0, 0, d->lr, gscale, d->weight_decay, d->momentum, d->beta1, d->beta2, d->eps,
                        adamw ? (float)(d->lr / bc1) : 0.0f, adamw ? (float)(1.0 / sqrt(bc2)) : 0.0f};
    /* State is fp32: a binding of a 16-bit parameter's dtype takes two of
     * its elements per state element. */
    uint64_t state_per = p->w->dtype == FFNRT_DTYPE_F32 ? 1 : 2;
    ffnrt_ew_binding b[5] = {{p->w, 1}, {p->g, 1}};
    uint32_t n = 2;
    if (p->m)
        b[n++] = (ffnrt_ew_binding){p->m, state_per};
    if (p->v)
        b[n++] = (ffnrt_ew_binding){p->v, state_per};
    if (p->master)
        b[n++] = (ffnrt_ew_binding){p->master, state_per};
    ffnrt_ew_launch launch = {&v, p->w->numel, 1, b, n, &up, sizeof up, NULL};
    return ffnrt_run_elementwise(ctx, &launch);
}

ffnrt_status ffnrt_optimizer_step(ffnrt_optimizer *opt, ffnrt_step_report *report)
{
    static const char fn[] = "ffnrt_optimizer_step";
    if (!opt)
        return ffnrt_null_handle(fn, "opt");
    ffnrt_context *ctx = opt->ctx;
    const ffnrt_optimizer_desc *d = &opt->desc;
    ffnrt_step_report r = {opt->steps, opt->skipped, 0, 0, 1, opt->scale, opt->scale};
    ffnrt_status st = FFNRT_OK;
    if (opt->count == 0)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: no parameters (ffnrt_optimizer_add)", fn);
    ffnrt_sumsq_result *figures = st == FFNRT_OK ? calloc(opt->count, sizeof *figures) : NULL;
    if (st == FFNRT_OK && !figures)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if (st == FFNRT_OK)
        st = gradient_figures(opt, figures);
    uint64_t ns = ctx->last_op_ns;
    if (st == FFNRT_OK) {
        double total = 0;
        for (size_t i = 0; i < opt->count; i++) {
            opt_param *p = &opt->params[i];
            uint64_t n = p->g->numel;
            p->stats = (ffnrt_grad_stats){sqrt(figures[i].sumsq) / opt->scale,
                                          n ? (double)figures[i].near_zero / (double)n : 0, figures[i].non_finite, n};
            total += figures[i].sumsq;
        }
        r.grad_norm = sqrt(total) / opt->scale;
        if (!isfinite(r.grad_norm)) {
            /* Nothing changes but the scale: the gradients overflowed (or
             * are NaN). Without loss scaling that is an error to report. */
            r.skipped_now = 1;
            r.skipped = ++opt->skipped;
            if (d->loss_scale > 0) {
                opt->scale = opt->scale / 2 > MIN_LOSS_SCALE ? opt->scale / 2 : MIN_LOSS_SCALE;
                opt->clean = 0;
            } else {
                st = ffnrt_fail(&ctx->error, FFNRT_ERROR_NON_FINITE,
                                "%s: the gradients hold a NaN or an infinity (norm %g); the step was skipped and "
                                "nothing changed (loss scaling, desc.loss_scale, skips such steps by itself)",
                                fn, r.grad_norm);
            }
        } else {
            if (d->max_grad_norm > 0 && r.grad_norm > d->max_grad_norm)
                r.clip = d->max_grad_norm / (r.grad_norm + 1e-6); /* torch.nn.utils.clip_grad_norm_'s */
            opt->steps++;
            float gscale = (float)(r.clip / opt->scale);
            /* Every parameter's update in one submission (batches nest). */
            uint64_t update_ns = 0;
            if ((st = ffnrt_batch_begin(ctx)) == FFNRT_OK) {
                for (size_t i = 0; i < opt->count && st == FFNRT_OK; i++)
                    st = update(opt, &opt->params[i], gscale, fn);
                st = ffnrt_batch_end(ctx, st, &update_ns);
            }
            ns += update_ns;
            if (st == FFNRT_OK && d->loss_scale > 0 &&
                ++opt->clean >= (d->scale_window ? d->scale_window : DEFAULT_SCALE_WINDOW)) {
                opt->scale = opt->scale * 2 < 0x1p100f ? opt->scale * 2 : opt->scale;
                opt->clean = 0;
            }
            r.steps = opt->steps;
        }
    }
    free(figures);
    r.next_loss_scale = opt->scale;
    if (report)
        *report = r;
    ctx->last_op_ns = ns;
    return ffnrt_context_finish_call(ctx, st);
}
