/* FFN layers: the fused and unfused paths, the forward and its plan. The
 * dispatcher (dispatch/ffn_choice.c) chooses path, kernel, arithmetic and
 * tiles; the GEMM launcher (launch/gemm_launch.c) turns each product into
 * dispatches; the unfused path's bias, activation and gating passes are the
 * element-wise ops' internal run functions. */
#include "ops/ffn_internal.h"
#include "ops/stats.h"
#include "dispatch/dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ffnrt_status ffnrt_ffn_check_pair(ffnrt_ffn *layer, const ffnrt_tensor *x, const ffnrt_tensor *y, const char *fn,
                                  const char *y_name)
{
    ffnrt_context *ctx = layer->ctx;
    const ffnrt_ffn_desc *d = &layer->desc;
    ffnrt_status st = ffnrt_check_same_layout(ctx, x, y, fn, "x", y_name);
    if (st == FFNRT_OK && x->dtype != d->dtype)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_DTYPE_MISMATCH, "%s: x is %s, the layer is %s", fn,
                        ffnrt_dtype_name(x->dtype), ffnrt_dtype_name(d->dtype));
    if (st == FFNRT_OK && (x->ndim == 0 || x->shape[x->ndim - 1] != d->d_model))
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_SHAPE_MISMATCH, "%s: x's last dimension is %lld, d_model is %lld",
                        fn, x->ndim ? (long long)x->shape[x->ndim - 1] : 0LL, (long long)d->d_model);
    return st;
}

ffnrt_status ffnrt_ffn_check_io(ffnrt_ffn *layer, const ffnrt_tensor *x, const ffnrt_tensor *y, const char *fn)
{
    ffnrt_context *ctx = layer->ctx;
    ffnrt_status st = ffnrt_ffn_check_pair(layer, x, y, fn, "y");
    /* A forward may run the layer several times (autotuning) and reads x and
     * the weights while it writes y: y is refused as any of them. */
    const ffnrt_gemm_operand *p[4] = {&layer->in, &layer->gate, &layer->value, &layer->out};
    ffnrt_op_arg args[10] = {{x, "x", 0}, {y, "y", 1}};
    static const char *const names[4][2] = {{"weights.w_in", "weights.b_in"}, {"the gate weights", "the gate bias"},
                                            {"the value weights", "the value bias"},
                                            {"weights.w_out", "weights.b_out"}};
    for (int i = 0; i < 4; i++) {
        args[2 + 2 * i] = (ffnrt_op_arg){p[i]->w, names[i][0], 0};
        args[3 + 2 * i] = (ffnrt_op_arg){p[i]->b, names[i][1], 0};
    }
    if (st == FFNRT_OK)
        st = ffnrt_check_aliasing(ctx, fn, args, 10, 0,
                                  "y must not be x nor overlap it or the layer's weights and biases");
    return st;
}

ffnrt_status ffnrt_ffn_scratch(ffnrt_ffn *l, uint64_t tokens, int need_gate_value, int need_xq)
{
    if (l->scratch_tokens != tokens || (need_gate_value && !l->g) || (need_xq && !l->xq))
        ffnrt_ffn_drop_scratch(l);
    int64_t shape[2] = {(int64_t)tokens, l->desc.hidden};
    static const char fn[] = "FFN intermediates";
    ffnrt_status st = FFNRT_OK;
    if (!l->h)
        st = ffnrt_tensor_alloc(l->ctx, l->desc.dtype, 2, shape, fn, &l->h);
    if (st == FFNRT_OK && need_gate_value && !l->g)
        st = ffnrt_tensor_alloc(l->ctx, l->desc.dtype, 2, shape, fn, &l->g);
    if (st == FFNRT_OK && need_gate_value && !l->v)
        st = ffnrt_tensor_alloc(l->ctx, l->desc.dtype, 2, shape, fn, &l->v);
    if (st == FFNRT_OK && need_xq && !l->xq) {
        uint64_t k = l->desc.d_model > l->desc.hidden ? (uint64_t)l->desc.d_model : (uint64_t)l->desc.hidden;
        int64_t words = (int64_t)ffnrt_xq_words(tokens, k);
        st = ffnrt_tensor_alloc(l->ctx, FFNRT_DTYPE_F32, 1, &words, fn, &l->xq);
    }
    if (st == FFNRT_OK)
        l->scratch_tokens = tokens;
    return st;
}

/* ---------------------------------------------------------------- paths */

/* A path's run: the layer's tensors (NULL when only planning), the choice,
 * and the plan being written (NULL when running). */
typedef struct ffn_run {
    ffnrt_context *ctx;
    const ffnrt_ffn_desc *d;
    ffnrt_ffn *l;
    const ffnrt_ffn_choice *c;
    ffnrt_plan *plan;
    uint64_t tokens;
    uint64_t ns; /* device time of every batch */
    ffnrt_stats_call *stats; /* the forward's statistics when on, else NULL */
    int keep;    /* training: the dense pre-activations go to l->pre, kept beside h */
    int residual; /* y += the layer's output: the down product adds into y */
    int hidden_only; /* the backward's recompute: up to the hidden intermediates, no down product */
} ffn_run;

/* The statistics of one kernel of the path: the call's, with its roles
 * (FFNRT_STATS_*; the histogram as the call asks). NULL when off. */
typedef struct ffn_kernel_stats {
    ffnrt_stats_call call;
    const ffnrt_stats_run *run;
} ffn_kernel_stats;

static void kernel_stats(const ffn_run *r, unsigned roles, ffn_kernel_stats *k)
{
    k->run = NULL;
    if (!r->stats || !r->stats->choice.on || !roles)
        return;
    k->call = *r->stats;
    k->call.run.roles = roles | (r->stats->run.roles & FFNRT_STATS_HIST);
    k->call.run.row_len = (uint64_t)r->d->hidden;
    k->run = &k->call.run;
}

/* The layer's roles: the first product counts x; the kernel that applies
 * the activation (or gating) sees the pre-activations and the hidden
 * layer; the last pass over y counts the outputs. */
#define FFN_FIRST FFNRT_STATS_INPUTS
#define FFN_HIDDEN(gated) \
    (FFNRT_STATS_PRE | FFNRT_STATS_HIDDEN | FFNRT_STATS_FEATURES | ((gated) ? FFNRT_STATS_GATE : 0u))
#define FFN_LAST FFNRT_STATS_OUTPUT

static const ffnrt_gemm_operand no_operand = {0};

/* An operand of the layer, with or without its bias; when planning, one
 * without tensors in the desc's format of that matrix. */
static ffnrt_gemm_operand operand(const ffn_run *r, const ffnrt_gemm_operand *pj, ffnrt_ffn_matrix m, int bias)
{
    ffnrt_gemm_operand o = no_operand;
    if (!r->l) {
        o.format = ffnrt_ffn_format(r->d, m);
        return o;
    }
    o = *pj;
    if (!bias)
        o.b = NULL, o.b_first = 0;
    return o;
}

static ffnrt_gemm_operand weights_only(const ffn_run *r, const ffnrt_gemm_operand *pj, ffnrt_ffn_matrix m)
{
    return operand(r, pj, m, 0);
}

static ffnrt_gemm_launch product(const ffn_run *r, const ffnrt_tensor *x, uint64_t k, ffnrt_gemm_operand w,
                                 ffnrt_gemm_operand wv, int gated, int bias, uint64_t n, ffnrt_tensor *y,
                                 ffnrt_activation act, float alpha, float beta, const ffn_kernel_stats *ks)
{
    ffnrt_gemm_launch g = {x,    r->tokens, k,     w,    wv, n, y, act, alpha, beta, r->d->dtype, gated,
                           bias, ks ? ks->run : NULL, 0, 0, r->l ? r->l->xq : NULL, FFNRT_GRAD_NONE, NULL, NULL,
                           NULL};
    return g;
}

/* One product as its own batch (the unfused path's kernels are separate
 * launches). */
static ffnrt_status run_product(ffn_run *r, const ffnrt_gemm_launch *g, const char *name)
{
    ffnrt_context *ctx = r->ctx;
    if (r->plan)
        return ffnrt_launch_gemm(ctx, r->c, g, r->plan, name);
    ffnrt_status st = ffnrt_batch_begin(ctx);
    if (st != FFNRT_OK)
        return st;
    st = ffnrt_batch_end(ctx, ffnrt_launch_gemm(ctx, r->c, g, NULL, name), &ctx->last_op_ns);
    r->ns += ctx->last_op_ns;
    return st;
}

/* y += bias, row-broadcast, in place (the unfused bias kernel). */
static ffnrt_status run_bias(ffn_run *r, ffnrt_tensor *y, const ffnrt_gemm_operand *pj, const char *name,
                             const ffn_kernel_stats *ks)
{
    if (!r->d->bias)
        return FFNRT_OK;
    if (r->plan) {
        char what[64];
        snprintf(what, sizeof what, "ffn.%s", name);
        ffnrt_plan_add(r->plan, what, "bias.kernel, element-wise", "unfused: the bias is its own pass over the "
                       "product, in place (a sum rounded once: the same in either arithmetic)");
        return FFNRT_OK;
    }
    /* One flat range: the kernel finds each element's bias from its index,
     * so a split may fall inside a row, which keeps wide rows splittable
     * under a small buffer range and a coarse offset alignment. */
    uint64_t width = (uint64_t)y->shape[y->ndim - 1];
    uint32_t params[4] = {0, 0, (uint32_t)width, (uint32_t)pj->b_first};
    ffnrt_ew_binding b[3] = {{y, 1}, {y, 1}, {pj->b, 0}};
    ffnrt_ew_op op = {.family = FFNRT_EW_BIAS, .act = FFNRT_ACT_COUNT, .dtype = y->dtype, .compute = FFNRT_COMPUTE_AUTO,
                      .fn = name};
    ffnrt_ew_variant v;
    ffnrt_status st = ffnrt_choose_ew_variant(r->ctx, &op, &v);
    if (st != FFNRT_OK)
        return st;
    ffnrt_ew_launch launch = {&v, y->numel, 1, b, 3, params, sizeof params, ks ? ks->run : NULL};
    st = ffnrt_run_elementwise(r->ctx, &launch);
    r->ns += r->ctx->last_op_ns;
    return st;
}

static ffnrt_status forward_unfused(ffn_run *r, const ffnrt_tensor *x, ffnrt_tensor *y)
{
    static const char fn[] = "FFN layer, unfused";
    ffnrt_context *ctx = r->ctx;
    const ffnrt_ffn_desc *d = r->d;
    ffnrt_ffn *l = r->l;
    uint64_t dm = (uint64_t)d->d_model, h = (uint64_t)d->hidden;
    ffnrt_tensor *lh = l ? l->h : NULL, *lg = l ? l->g : NULL, *lv = l ? l->v : NULL;
    const char *arith = r->c->fp16 ? "fp16 arithmetic" : "fp32 arithmetic";
    int gated = ffnrt_ffn_gated(d);
    ffn_kernel_stats first, hidden, last;
    kernel_stats(r, FFN_FIRST, &first);
    kernel_stats(r, FFN_HIDDEN(gated), &hidden);
    kernel_stats(r, FFN_LAST, &last);
    ffnrt_status st;
    if (!gated) {
        ffnrt_tensor *pre = r->keep ? l->pre : lh; /* else the activation runs in place */
        ffnrt_gemm_launch up = product(r, x, dm, weights_only(r, l ? &l->in : NULL, FFNRT_FFN_MATRIX_IN), no_operand,
                                       0, 0, h, pre, FFNRT_ACT_COUNT, 0, 0, &first);
        st = run_product(r, &up, "up");
        if (st == FFNRT_OK)
            st = run_bias(r, pre, l ? &l->in : NULL, "up.bias", NULL);
        if (st == FFNRT_OK && r->plan) {
            ffnrt_plan_add(r->plan, "ffn.activation", ffnrt_activation_name(d->activation.kind),
                           "unfused: activation.kernel in place on the [tokens, hidden] intermediate, %s", arith);
        } else if (st == FFNRT_OK) {
            st = ffnrt_op_activation(ctx, &d->activation, pre, NULL, lh, fn, hidden.run ? &hidden.call : NULL);
            r->ns += ctx->last_op_ns;
        }
    } else {
        ffnrt_gemm_launch gate = product(r, x, dm, weights_only(r, l ? &l->gate : NULL, FFNRT_FFN_MATRIX_IN),
                                         no_operand, 0, 0, h, lg, FFNRT_ACT_COUNT, 0, 0, &first);
        st = run_product(r, &gate, "gate");
        if (st == FFNRT_OK)
            st = run_bias(r, lg, l ? &l->gate : NULL, "gate.bias", NULL);
        ffnrt_gemm_launch value = product(r, x, dm, weights_only(r, l ? &l->value : NULL, FFNRT_FFN_MATRIX_VALUE),
                                          no_operand, 0, 0, h, lv, FFNRT_ACT_COUNT, 0, 0, NULL);
        if (st == FFNRT_OK)
            st = run_product(r, &value, "value");
        if (st == FFNRT_OK)
            st = run_bias(r, lv, l ? &l->value : NULL, "value.bias", NULL);
        if (st == FFNRT_OK && r->plan) {
            ffnrt_plan_add(r->plan, "ffn.gating", ffnrt_glu_name(d->glu.kind),
                           "unfused: glu.kernel over the gate and value intermediates, %s", arith);
        } else if (st == FFNRT_OK) {
            st = ffnrt_op_glu_split(ctx, &d->glu, lg, lv, lh, fn, hidden.run ? &hidden.call : NULL);
            r->ns += ctx->last_op_ns;
        }
    }
    if (r->hidden_only)
        return st;
    ffnrt_gemm_launch down = product(r, lh, h, weights_only(r, l ? &l->out : NULL, FFNRT_FFN_MATRIX_OUT), no_operand,
                                     0, 0, dm, y, FFNRT_ACT_COUNT, 0, 0, d->bias ? NULL : &last);
    down.accumulate = r->residual;
    if (st == FFNRT_OK)
        st = run_product(r, &down, "down");
    if (st == FFNRT_OK)
        st = run_bias(r, y, l ? &l->out : NULL, "down.bias", &last);
    return st;
}

static ffnrt_status forward_fused(ffn_run *r, const ffnrt_tensor *x, ffnrt_tensor *y)
{
    ffnrt_context *ctx = r->ctx;
    const ffnrt_ffn_desc *d = r->d;
    ffnrt_ffn *l = r->l;
    uint64_t dm = (uint64_t)d->d_model, h = (uint64_t)d->hidden;
    ffnrt_tensor *lh = l ? l->h : NULL;
    int gated = ffnrt_ffn_gated(d);
    ffn_kernel_stats first, last;
    kernel_stats(r, FFN_FIRST | FFN_HIDDEN(gated), &first);
    kernel_stats(r, FFN_LAST, &last);
    ffnrt_gemm_launch up;
    if (gated)
        up = product(r, x, dm, operand(r, l ? &l->gate : NULL, FFNRT_FFN_MATRIX_IN, 1),
                     operand(r, l ? &l->value : NULL, FFNRT_FFN_MATRIX_VALUE, 1), 1, d->bias, h, lh,
                     ffnrt_glu_gate_activation(d->glu.kind), 0, d->glu.beta, &first);
    else
        up = product(r, x, dm, operand(r, l ? &l->in : NULL, FFNRT_FFN_MATRIX_IN, 1), no_operand, 0, d->bias, h, lh,
                     d->activation.kind, d->activation.alpha, d->activation.beta, &first);
    ffnrt_gemm_launch down =
        product(r, lh, h, operand(r, l ? &l->out : NULL, FFNRT_FFN_MATRIX_OUT, 1), no_operand, 0, d->bias, dm, y,
                FFNRT_ACT_COUNT, 0, 0, &last);
    down.accumulate = r->residual;
    if (r->plan) {
        ffnrt_status st = ffnrt_launch_gemm(ctx, r->c, &up, r->plan, gated ? "gate_value" : "up");
        return st == FFNRT_OK ? ffnrt_launch_gemm(ctx, r->c, &down, r->plan, "down") : st;
    }
    ffnrt_status st = ffnrt_batch_begin(ctx);
    if (st != FFNRT_OK)
        return st;
    st = ffnrt_launch_gemm(ctx, r->c, &up, NULL, "up");
    if (st == FFNRT_OK)
        st = ffnrt_launch_gemm(ctx, r->c, &down, NULL, "down");
    if (st == FFNRT_OK && first.run)
        st = ffnrt_stats_record_finish(ctx, first.run); /* the token norms' sums and maxima */
    /* Closes the batch even after a failed dispatch. */
    st = ffnrt_batch_end(ctx, st, &ctx->last_op_ns);
    r->ns = ctx->last_op_ns;
    return st;
}

/* -------------------------------------------------------------- forward */

ffnrt_status ffnrt_ffn_forward_with(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y, uint64_t tokens,
                                    const ffnrt_ffn_choice *c, uint64_t *ns, ffnrt_stats_call *stats, int residual)
{
    ffn_run r = {layer->ctx, &layer->desc, layer, c, NULL, tokens, 0, stats, 0, residual, 0};
    layer->saved_tokens = 0; /* its intermediates are overwritten */
    ffnrt_status st = ffnrt_ffn_scratch(layer, tokens, c->unfused && ffnrt_ffn_gated(&layer->desc), c->int_dot != 0);
    if (st == FFNRT_OK)
        st = c->unfused ? forward_unfused(&r, x, y) : forward_fused(&r, x, y);
    *ns = r.ns;
    return st;
}

/* The unfused forward keeping the intermediates the backward reads; with
 * hidden_only, no y (the backward's recompute). */
static ffnrt_status forward_keeping(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y, uint64_t tokens,
                                    const ffnrt_ffn_choice *c, uint64_t *ns, ffnrt_stats_call *stats, int hidden_only)
{
    ffn_run r = {layer->ctx, &layer->desc, layer, c, NULL, tokens, 0, stats, 1, 0, hidden_only};
    int gated = ffnrt_ffn_gated(&layer->desc);
    layer->saved_tokens = 0;
    ffnrt_status st = ffnrt_ffn_scratch(layer, tokens, gated, c->int_dot != 0);
    if (st == FFNRT_OK && !gated && !layer->pre) {
        int64_t shape[2] = {(int64_t)tokens, layer->desc.hidden};
        st = ffnrt_tensor_alloc(layer->ctx, layer->desc.dtype, 2, shape, "FFN pre-activations", &layer->pre);
    }
    /* One submission for the path's kernels (batches nest). */
    if (st == FFNRT_OK && (st = ffnrt_batch_begin(layer->ctx)) == FFNRT_OK)
        st = ffnrt_batch_end(layer->ctx, forward_unfused(&r, x, y), &r.ns);
    if (st == FFNRT_OK)
        layer->saved_tokens = tokens;
    *ns = r.ns;
    return st;
}

/* The shared memory the product kernels' statistics variant takes, which
 * their shapes leave it (the first product's, the larger): zeros when the
 * call has no statistics. */
static ffnrt_smem_reserve stats_reserve(const ffnrt_ffn_desc *d, const ffnrt_stats_call *sc)
{
    ffnrt_smem_reserve none = {0, 0, 0};
    if (!sc || !sc->choice.on)
        return none;
    ffnrt_stats_run up = sc->run;
    up.roles |= FFN_FIRST | FFN_HIDDEN(ffnrt_ffn_gated(d));
    return ffnrt_stats_gemm_smem(&up);
}

ffnrt_status ffnrt_ffn_run(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y, const char *fn,
                           ffnrt_stats_call *stats, int residual)
{
    ffnrt_context *ctx = layer->ctx;
    const ffnrt_ffn_desc *d = &layer->desc;
    ffnrt_status st = ffnrt_ffn_check_io(layer, x, y, fn);
    uint64_t tokens = st == FFNRT_OK ? x->numel / (uint64_t)d->d_model : 0;
    uint64_t ns = 0;
    /* (Tuning runs forwards into y: a residual forward takes stored
     * results only, and leaves y's other value alone.) */
    if (st == FFNRT_OK && tokens > 0 && ctx->autotune && !residual && d->path == FFNRT_FFN_PATH_AUTO &&
        d->matmul == FFNRT_MATMUL_AUTO) {
        char key[160];
        int code;
        ffnrt_ffn_tuning_key(d, tokens, key, sizeof key);
        if (!ffnrt_tuning_get(ctx, key, &code, NULL))
            st = ffnrt_ffn_tune(layer, x, y, tokens);
    }
    if (st == FFNRT_OK && tokens > 0) {
        ffnrt_ffn_choice c;
        ffnrt_smem_reserve reserve = stats_reserve(d, stats);
        st = ffnrt_choose_ffn(ctx, d, tokens, &reserve, &c, NULL, &ctx->error);
        if (stats)
            stats->fp16 = c.fp16;
        if (st == FFNRT_OK)
            st = ffnrt_ffn_forward_with(layer, x, y, tokens, &c, &ns, stats, residual);
    }
    ctx->last_op_ns = ns;
    return st;
}

/* A forward's (or plan's) statistics: begun with the layer's options over
 * the context's. */
static ffnrt_status stats_begin(ffnrt_context *ctx, const ffnrt_ffn_desc *d, const ffnrt_ffn *layer, uint64_t tokens,
                                const char *fn, ffnrt_stats_call *sc)
{
    int gated = ffnrt_ffn_gated(d);
    memset(sc, 0, sizeof *sc);
    sc->fn = fn;
    snprintf(sc->op, sizeof sc->op, "ffn %s",
             gated ? ffnrt_glu_name(d->glu.kind) : ffnrt_activation_name(d->activation.kind));
    sc->dtype = d->dtype;
    sc->act = gated ? ffnrt_glu_gate_activation(d->glu.kind) : d->activation.kind;
    sc->inputs = sc->outputs = tokens * (uint64_t)d->d_model;
    sc->pre = sc->activations = tokens * (uint64_t)d->hidden;
    sc->tokens = gated ? tokens : 0;
    sc->hidden = (uint64_t)d->hidden;
    return ffnrt_stats_begin(ctx, layer && layer->stats_set ? &layer->stats_options : NULL, sc);
}

static ffnrt_status stats_done(ffnrt_context *ctx, ffnrt_stats_call *sc, ffnrt_status st, ffnrt_ffn *layer)
{
    return ffnrt_stats_end(ctx, sc, st, layer ? &layer->last_stats : NULL, layer ? &layer->feature_bits : NULL);
}

static ffnrt_status forward_call(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y, const char *fn,
                                 int residual)
{
    if (!layer)
        return ffnrt_null_handle(fn, "layer");
    ffnrt_context *ctx = layer->ctx;
    uint64_t tokens = x && x->ctx == ctx && layer->desc.d_model ? x->numel / (uint64_t)layer->desc.d_model : 0;
    ffnrt_stats_call sc;
    ffnrt_status st = stats_begin(ctx, &layer->desc, layer, tokens, fn, &sc);
    if (st == FFNRT_OK)
        st = ffnrt_ffn_run(layer, x, y, fn, sc.choice.on ? &sc : NULL, residual);
    return ffnrt_context_finish_call(ctx, stats_done(ctx, &sc, st, layer));
}

ffnrt_status ffnrt_ffn_forward(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y)
{
    return forward_call(layer, x, y, "ffnrt_ffn_forward", 0);
}

ffnrt_status ffnrt_ffn_forward_residual(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y)
{
    return forward_call(layer, x, y, "ffnrt_ffn_forward_residual", 1);
}

/* ORs the last forward's "ever nonzero" feature bits into the training
 * window's (ffnrt_ffn_dead_window). */
static void window_add(ffnrt_ffn *l)
{
    size_t words = ((size_t)l->desc.hidden + 31) / 32;
    if (!l->feature_bits || !l->last_stats)
        return;
    if (!l->window_alive && !(l->window_alive = calloc(words ? words : 1, sizeof *l->window_alive)))
        return; /* the window is a statistic: it is left unchanged, never a failure */
    for (size_t i = 0; i < words; i++)
        l->window_alive[i] |= l->feature_bits[i];
    l->window_forwards++;
}

ffnrt_status ffnrt_ffn_run_training(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y, const char *fn)
{
    ffnrt_context *ctx = layer->ctx;
    ffnrt_ffn_desc d = layer->desc;
    d.path = FFNRT_FFN_PATH_UNFUSED;
    uint64_t tokens = x && x->ctx == ctx && d.d_model ? x->numel / (uint64_t)d.d_model : 0, ns = 0;
    ffnrt_stats_call sc;
    layer->saved_tokens = 0;
    ffnrt_status st = stats_begin(ctx, &d, layer, tokens, fn, &sc);
    ffnrt_stats_call *stats = st == FFNRT_OK && sc.choice.on ? &sc : NULL;
    if (st == FFNRT_OK)
        st = ffnrt_ffn_check_io(layer, x, y, fn);
    ffnrt_ffn_choice c;
    ffnrt_smem_reserve reserve = stats_reserve(&d, stats);
    if (st == FFNRT_OK && tokens > 0)
        st = ffnrt_choose_ffn(ctx, &d, tokens, &reserve, &c, NULL, &ctx->error);
    if (st == FFNRT_OK && tokens > 0) {
        c.unfused = 1;
        if (stats)
            stats->fp16 = c.fp16;
        st = forward_keeping(layer, x, y, tokens, &c, &ns, stats, 0);
    }
    ctx->last_op_ns = ns;
    st = stats_done(ctx, &sc, st, layer);
    if (st == FFNRT_OK && stats)
        window_add(layer);
    return st;
}

ffnrt_status ffnrt_ffn_recompute_hidden(ffnrt_ffn *layer, const ffnrt_tensor *x, uint64_t tokens, uint64_t *ns)
{
    /* The training forward's choice (no statistics: the caller's forward
     * took them), so the intermediates are the same bits. */
    ffnrt_ffn_desc d = layer->desc;
    d.path = FFNRT_FFN_PATH_UNFUSED;
    ffnrt_ffn_choice c;
    ffnrt_smem_reserve none = {0, 0, 0};
    ffnrt_status st = ffnrt_choose_ffn(layer->ctx, &d, tokens, &none, &c, NULL, &layer->ctx->error);
    *ns = 0;
    if (st != FFNRT_OK)
        return st;
    c.unfused = 1;
    return forward_keeping(layer, x, NULL, tokens, &c, ns, NULL, 1);
}

ffnrt_status ffnrt_ffn_dead_window(ffnrt_ffn *layer, int reset, uint32_t *features, size_t cap, size_t *count,
                                   uint64_t *forwards)
{
    static const char fn[] = "ffnrt_ffn_dead_window";
    if (!layer)
        return ffnrt_null_handle(fn, "layer");
    ffnrt_status st = FFNRT_OK;
    if (!count || !forwards || (cap && !features)) {
        st = ffnrt_fail(&layer->ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                        !count ? "count" : !forwards ? "forwards" : "features");
    } else {
        size_t n = 0;
        uint64_t hidden = layer->window_alive && layer->window_forwards ? (uint64_t)layer->desc.hidden : 0;
        for (uint64_t f = 0; f < hidden; f++)
            if (!(layer->window_alive[f / 32] >> (f % 32) & 1)) {
                if (n < cap)
                    features[n] = (uint32_t)f;
                n++;
            }
        *count = n;
        *forwards = layer->window_forwards;
        if (reset && layer->window_alive) {
            memset(layer->window_alive, 0, ((size_t)layer->desc.hidden + 31) / 32 * sizeof *layer->window_alive);
            layer->window_forwards = 0;
        }
    }
    return ffnrt_context_finish_call(layer->ctx, st);
}

ffnrt_status ffnrt_ffn_autotune(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y)
{
    static const char fn[] = "ffnrt_ffn_autotune";
    if (!layer)
        return ffnrt_null_handle(fn, "layer");
    ffnrt_status st = ffnrt_ffn_check_io(layer, x, y, fn);
    if (st == FFNRT_OK && x->numel)
        st = ffnrt_ffn_tune(layer, x, y, x->numel / (uint64_t)layer->desc.d_model);
    return ffnrt_context_finish_call(layer->ctx, st);
}

/* ----------------------------------------------------------------- plan */

ffnrt_status ffnrt_ffn_plan(ffnrt_context *ctx, const ffnrt_ffn_desc *desc, int64_t tokens, ffnrt_plan **out)
{
    static const char fn[] = "ffnrt_ffn_plan";
    if (!ctx)
        return ffnrt_null_handle(fn, "ctx");
    ffnrt_status st = ffnrt_ffn_check_desc(&ctx->error, desc, fn);
    if (st == FFNRT_OK && (!out || tokens < 1))
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %s", fn, out ? "tokens < 1" : "out is NULL");
    /* x and the [tokens, hidden] intermediate must be tensors the device can hold. */
    uint64_t widest = st == FFNRT_OK ? (uint64_t)(desc->hidden > desc->d_model ? desc->hidden : desc->d_model) : 1;
    if (st == FFNRT_OK)
        st = ffnrt_tensor_check_size(ctx, desc->dtype, (uint64_t)tokens > UINT32_MAX / widest ? UINT64_MAX
                                                                                              : (uint64_t)tokens * widest,
                                     fn);
    ffnrt_plan *plan = NULL;
    if (st == FFNRT_OK && !(plan = ffnrt_plan_new()))
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if (st == FFNRT_OK) {
        ffnrt_plan_add_context(plan, ctx);
        char choice[160];
        int gated = ffnrt_ffn_gated(desc);
        snprintf(choice, sizeof choice, "%s %s, d_model %lld, hidden %lld, %lld tokens, %s%s", gated ? "gated" : "dense",
                 gated ? ffnrt_glu_name(desc->glu.kind) : ffnrt_activation_name(desc->activation.kind),
                 (long long)desc->d_model, (long long)desc->hidden, (long long)tokens, ffnrt_dtype_name(desc->dtype),
                 desc->bias ? ", biases" : "");
        ffnrt_plan_add(plan, "op", choice, "as asked");
        ffnrt_plan_add(plan, "ffn.accumulation", "fp32",
                       "%s", desc->allow_fp16_accumulation
                                 ? "fp16 accumulation is allowed but not implemented: every product accumulates in fp32"
                                 : "every product accumulates in fp32 (fp16 accumulation not allowed)");
        /* The statistics choice (its plan items), and the room its
         * variant takes from the kernel shapes, before they are chosen. */
        ffnrt_stats_call sc;
        ctx->plan_sink = plan;
        st = stats_begin(ctx, desc, NULL, (uint64_t)tokens, fn, &sc);
        ctx->plan_sink = NULL;
        ffnrt_ffn_choice c;
        ffnrt_smem_reserve reserve = stats_reserve(desc, &sc);
        if (st == FFNRT_OK)
            st = ffnrt_choose_ffn(ctx, desc, (uint64_t)tokens, &reserve, &c, plan, &ctx->error);
        char list[128] = "";
        for (int unfused = 0; unfused < 2; unfused++)
            for (int k = 0; k < FFNRT_PRODUCT_KERNEL_COUNT; k++)
                if (ffnrt_ffn_candidate(ctx, (ffnrt_product_kernel)k, (uint64_t)tokens, desc) &&
                    (unfused || ffnrt_ffn_fusable(desc))) {
                    size_t len = strlen(list);
                    snprintf(list + len, sizeof list - len, "%s%s/%s", len ? "," : "", unfused ? "unfused" : "fused",
                             ffnrt_product_kernel_name((ffnrt_product_kernel)k));
                }
        ffnrt_plan_add(plan, "ffn.candidates", list,
                       "what ffnrt_ffn_autotune times for this device and token count (path/kernel)");
        ffnrt_ffn_cost cost;
        if (ffnrt_ffn_quantized(desc)) {
            ffnrt_plan_add(plan, "ffn.training", "none", "quantized layers are inference-only");
        } else if (ffnrt_ffn_cost_model(desc, (uint64_t)tokens, 1, &cost)) {
            char what[96];
            int outer = ffnrt_ffn_outer_gradients(ctx, desc, (uint64_t)tokens);
            snprintf(what, sizeof what, "%.3g GFLOP a step, %.3g MB kept, %.3g MB at the peak", 1e-9 * (double)cost.train_flops,
                     1e-6 * (double)cost.saved_bytes, 1e-6 * (double)cost.train_peak_bytes);
            ffnrt_plan_add(plan, "ffn.training", what,
                           "ffnrt_ffn_forward_train runs the unfused path keeping %s [tokens, hidden]; ffnrt_ffn_backward "
                           "runs each product through the forward's GEMM on operands transposed by transpose.kernel "
                           "(dx = dz·W, dW = dzᵀ·in over the tokens, db = dzᵀ·1)%s, one submission, fixed reductions",
                           ffnrt_ffn_gated(desc) ? "the gate, the value and their product" : "the pre-activation and phi of it",
                           outer ? "; here dW runs as outer products on dz and in as they lie (gemm_outer.inc), without "
                                   "their transposes" : "");
            ffnrt_choose_backward_fused(ctx, desc, plan);
            snprintf(what, sizeof what, "+%.3g GFLOP a step, 0 MB kept", 1e-9 * (double)cost.recompute_flops);
            ffnrt_plan_add(plan, "ffn.training.recompute", what,
                           "with FFNRT_GRADIENTS_RECOMPUTE the backward runs the first product%s and the %s again "
                           "from x, biases included, and frees them and its buffers when done: any forward may "
                           "precede it, and the layer holds only its weights between steps",
                           ffnrt_ffn_gated(desc) ? "s" : "", ffnrt_ffn_gated(desc) ? "gating" : "activation");
        }
        ffn_run r = {ctx, desc, NULL, &c, plan, (uint64_t)tokens, 0, sc.choice.on ? &sc : NULL, 0, 0, 0};
        if (st == FFNRT_OK)
            st = c.unfused ? forward_unfused(&r, NULL, NULL) : forward_fused(&r, NULL, NULL);
    }
    if (st == FFNRT_OK)
        *out = plan;
    else
        ffnrt_plan_destroy(plan);
    return ffnrt_context_finish_call(ctx, st);
}
