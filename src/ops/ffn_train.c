/* FFN layers, training: the forward that keeps the hidden intermediates,
 * and the backward (the layer's gradients).
 *
 * Every product runs through the forward's GEMM (shaders/gemm.kernel,
 * y = x·Wᵀ on K-contiguous operands, at the level and tiles the dispatcher
 * chooses for its rows), so the backward's products take their operands
 * transposed by shaders/transpose.kernel:
 *   dx = dz·W      as dz · (Wᵀ)ᵀ        (Wᵀ: the weight, transposed; K =
 *                                        d_model or hidden, an odd one in
 *                                        16-bit storage padded, dz too)
 *   dW = dzᵀ·in    as dzᵀ · (inᵀ)ᵀ      (K = tokens, made even in 16-bit
 *                                        storage: a zero pads both rows)
 *   db = dzᵀ·1     as dzᵀ · (1ᵀ)ᵀ       (one output column)
 * A transpose moves a matrix once (a copy's cost); the product it feeds
 * costs tokens times more arithmetic, so it is the cheap way to one kernel
 * source for every layout, on every level and both APIs, with the
 * forward's splits at the device's limits. Where the device's kernels take
 * K-major operands (ffnrt_outer_fits: llvmpipe, widths multiples of 4), dW
 * runs as outer products on dz and in as they lie instead (gemm_outer.inc):
 * there the transposed form's output, not its inputs, bound it. Each
 * product reduces within one work-item in a fixed order, so a backward's
 * bits are deterministic. */
#include "ops/ffn_internal.h"
#include "dispatch/dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const bw_names[FFN_BW_COUNT] = {
    [FFN_BW_TD] = "FFN backward, xᵀ and dyᵀ",
    [FFN_BW_TH] = "FFN backward, hidden gradients transposed",
    [FFN_BW_WT] = "FFN backward, a weight transposed",
    [FFN_BW_DH] = "FFN backward, hidden gradients",
    [FFN_BW_DV] = "FFN backward, value gradients",
    [FFN_BW_ONES] = "FFN backward, ones",
    [FFN_BW_DZ_PAD] = "FFN backward, output gradients padded",
};

void ffnrt_ffn_drop_backward(ffnrt_ffn *l)
{
    for (int i = 0; i < FFN_BW_COUNT; i++) {
        ffnrt_tensor_free(l->bw[i]);
        l->bw[i] = NULL;
    }
    l->bw_tokens = 0;
}

/* The backward's buffers for `tokens` tokens, made or remade as needed. */
static ffnrt_status backward_buffers(ffnrt_ffn *l, uint64_t tokens)
{
    if (l->bw_tokens != tokens)
        ffnrt_ffn_drop_backward(l);
    int64_t t = (int64_t)tokens, dm = l->desc.d_model, h = l->desc.hidden;
    int64_t kt = (int64_t)ffnrt_ffn_gradient_k(&l->desc, tokens); /* the transposes' rows */
    /* 16-bit storage with d_model or hidden odd: the input gradients' K is
     * padded (input_gradient), Wᵀ's rows and dz's with it. */
    int64_t pad = (int64_t)ffnrt_ffn_gradient_k(&l->desc, (uint64_t)dm) != dm ||
                  (int64_t)ffnrt_ffn_gradient_k(&l->desc, (uint64_t)h) != h;
    int64_t shapes[FFN_BW_COUNT][2] = {{dm, kt}, {h, kt}, {h + pad, dm + pad}, {t, h}, {t, h}, {1, kt},
                                       {kt, (dm > h ? dm : h) + 1}};
    ffnrt_status st = FFNRT_OK;
    for (int i = 0; i < FFN_BW_COUNT && st == FFNRT_OK; i++) {
        if (l->bw[i] || (i == FFN_BW_DV && !ffnrt_ffn_gated(&l->desc)) || (i == FFN_BW_DZ_PAD && !pad))
            continue;
        st = ffnrt_tensor_alloc(l->ctx, l->desc.dtype, 2, shapes[i], bw_names[i], &l->bw[i]);
        if (st == FFNRT_OK && i == FFN_BW_ONES) {
            /* 1.0 in the dtype: fp32 bits, or two 16-bit ones a word. */
            uint32_t one = l->desc.dtype == FFNRT_DTYPE_F32   ? 0x3f800000u
                           : l->desc.dtype == FFNRT_DTYPE_F16 ? 0x3c003c00u
                                                              : 0x3f803f80u;
            size_t words = (l->bw[i]->bytes + 3) / 4;
            uint32_t *host = malloc(words * 4);
            if (!host)
                return ffnrt_fail(&l->ctx->error, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory",
                                  bw_names[i]);
            for (size_t w = 0; w < words; w++)
                host[w] = one;
            st = ffnrt_tensor_upload(l->bw[i], host, l->bw[i]->bytes);
            free(host);
        }
    }
    if (st == FFNRT_OK)
        l->bw_tokens = tokens;
    return st;
}

/* -------------------------------------------------------------- forward */

static ffnrt_status check_trainable(ffnrt_ffn *layer, const char *fn)
{
    if (ffnrt_ffn_quantized(&layer->desc))
        return ffnrt_fail(&layer->ctx->error, FFNRT_ERROR_UNSUPPORTED,
                          "%s: the layer's weights are in a block format (%s, %s, %s): quantized layers are "
                          "inference-only; train a layer of f32, f16 or bf16 weights",
                          fn, ffnrt_weight_format_name(ffnrt_ffn_format(&layer->desc, FFNRT_FFN_MATRIX_IN)),
                          ffnrt_weight_format_name(ffnrt_ffn_format(&layer->desc, FFNRT_FFN_MATRIX_VALUE)),
                          ffnrt_weight_format_name(ffnrt_ffn_format(&layer->desc, FFNRT_FFN_MATRIX_OUT)));
    return FFNRT_OK;
}

/* The products' choice for `rows` rows of x: the forward's dispatcher on
 * the unfused path (the level follows the rows: a weight gradient has
 * d_model or hidden of them, whatever the tokens). */
static ffnrt_status product_choice(ffnrt_context *ctx, const ffnrt_ffn_desc *desc, uint64_t rows,
                                   ffnrt_ffn_choice *c)
{
    ffnrt_ffn_desc d = *desc;
    d.path = FFNRT_FFN_PATH_UNFUSED;
    ffnrt_status st = ffnrt_choose_ffn(ctx, &d, rows, NULL, c, NULL, &ctx->error);
    c->unfused = 1;
    return st;
}

int ffnrt_ffn_outer_gradients(ffnrt_context *ctx, const ffnrt_ffn_desc *d, uint64_t tokens)
{
    ffnrt_ffn_choice c;
    uint64_t dm = (uint64_t)d->d_model, h = (uint64_t)d->hidden;
    ffnrt_error kept = ctx->error; /* a refused choice is an answer here, not the call's error */
    int outer = product_choice(ctx, d, dm < h ? dm : h, &c) == FFNRT_OK &&
                ffnrt_outer_shape_fits(ctx, &c, dm, h, tokens, d->dtype) &&
                ffnrt_outer_shape_fits(ctx, &c, h, dm, tokens, d->dtype);
    ctx->error = kept;
    return outer;
}

ffnrt_status ffnrt_ffn_forward_train(ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y)
{
    static const char fn[] = "ffnrt_ffn_forward_train";
    if (!layer)
        return ffnrt_null_handle(fn, "layer");
    layer->saved_tokens = 0;
    ffnrt_status st = check_trainable(layer, fn);
    if (st == FFNRT_OK)
        st = ffnrt_ffn_run_training(layer, x, y, fn);
    return ffnrt_context_finish_call(layer->ctx, st);
}

/* ------------------------------------------------------------- backward */

typedef struct bw_run {
    ffnrt_context *ctx;
    ffnrt_ffn *l;
    uint64_t t, dm, h;
    uint64_t kt; /* the weight gradients' K: t, made even in 16-bit storage */
    ffnrt_ffn_choice by_tokens, by_features; /* products with tokens rows; with d_model or hidden rows */
    int accumulate;
    uint64_t ns;
    const char *fn;
    int fused; /* the activation's (gating's) gradient in dy·W_out's epilogue (ffnrt_choose_backward_fused) */
} bw_run;

/* The fused backward's epilogue on the product du = dy·W_out: act's
 * gradient at pre, or the gating's (dgate into the product's y, dvalue
 * into y2); NULL where the product has none. */
typedef struct bw_epilogue {
    ffnrt_grad_epilogue grad;
    ffnrt_activation act;
    float alpha, beta;
    const ffnrt_tensor *pre, *value;
    ffnrt_tensor *y2;
} bw_epilogue;

/* y [cols, y_stride] = xᵀ for x [rows, cols] from element x_first of x;
 * y_stride is rows, or rows + 1 with a zero at each row's end. */
static ffnrt_status transpose(bw_run *r, const ffnrt_tensor *x, uint64_t x_first, uint64_t rows, uint64_t cols,
                              ffnrt_tensor *y, uint64_t y_stride)
{
    if (rows > UINT32_MAX || rows * cols > UINT32_MAX || x_first > UINT32_MAX - rows * cols)
        return ffnrt_fail(&r->ctx->error, FFNRT_ERROR_LIMIT_EXCEEDED,
                          "%s: a %llu x %llu transpose passes 32-bit element indices", r->fn,
                          (unsigned long long)rows, (unsigned long long)cols);
    ffnrt_context *ctx = r->ctx;
    if (ffnrt_transpose_tiles_fit(ctx, x, x_first, rows, cols, y, y_stride)) { /* by tiles: cache-friendly reads */
        ffnrt_status st = ffnrt_batch_begin(ctx);
        if (st == FFNRT_OK)
            st = ffnrt_batch_end(ctx, ffnrt_launch_transpose_tiles(ctx, x, x_first, rows, cols, y, y_stride),
                                 &ctx->last_op_ns);
        r->ns += ctx->last_op_ns;
        return st;
    }
    uint32_t base;
    if (y_stride != rows || ffnrt_bind_elements(ctx, x, 0, x->numel, &base).size > ctx->limits.max_buffer_range)
        return ffnrt_fail(&ctx->error, FFNRT_ERROR_LIMIT_EXCEEDED,
                          "%s: a %llu x %llu %s transpose (rows of %llu) passes the device's buffer range of %llu "
                          "bytes, and no block of it fits one",
                          r->fn, (unsigned long long)rows, (unsigned long long)cols, ffnrt_dtype_name(y->dtype),
                          (unsigned long long)y_stride, (unsigned long long)ctx->limits.max_buffer_range);
    ffnrt_ew_op op = {.family = FFNRT_EW_TRANSPOSE, .act = FFNRT_ACT_COUNT, .dtype = y->dtype,
                      .compute = FFNRT_COMPUTE_AUTO, .fn = r->fn};
    ffnrt_ew_variant v;
    ffnrt_status st = ffnrt_choose_ew_variant(r->ctx, &op, &v);
    if (st != FFNRT_OK)
        return st;
    uint32_t params[7] = {0, 0, (uint32_t)rows, (uint32_t)cols, (uint32_t)x_first, 0, 0};
    ffnrt_divisor((uint32_t)rows, &params[5], &params[6]);
    ffnrt_ew_binding b[2] = {{x, 0}, {y, 1}};
    ffnrt_ew_launch launch = {&v, rows * cols, 1, b, 2, params, sizeof params, NULL};
    st = ffnrt_run_elementwise(r->ctx, &launch);
    r->ns += r->ctx->last_op_ns;
    return st;
}

/* y [m, n] (from element y_first; += when accumulate) = a [m, k] · w [n, k]ᵀ,
 * with epilogue e where not NULL, one product in its own batch. */
static ffnrt_status product(bw_run *r, const ffnrt_ffn_choice *c, const ffnrt_tensor *a, uint64_t m, uint64_t k,
                            const ffnrt_tensor *w, uint64_t n, ffnrt_tensor *y, uint64_t y_first, int accumulate,
                            const bw_epilogue *e, const char *name)
{
    ffnrt_context *ctx = r->ctx;
    ffnrt_gemm_operand wo = {w, 0, NULL, 0, NULL, FFNRT_WEIGHT_F32}, none = {0};
    ffnrt_gemm_launch g = {a, m, k, wo, none, n, y, FFNRT_ACT_COUNT, 0, 0, r->l->desc.dtype, 0, 0, NULL,
                           accumulate, y_first, NULL, FFNRT_GRAD_NONE, NULL, NULL, NULL};
    if (e) {
        g.grad = e->grad, g.act = e->act, g.alpha = e->alpha, g.beta = e->beta;
        g.pre = e->pre, g.value = e->value, g.y2 = e->y2;
    }
    ffnrt_status st = ffnrt_batch_begin(ctx);
    if (st != FFNRT_OK)
        return st;
    st = ffnrt_batch_end(ctx, ffnrt_launch_gemm(ctx, c, &g, NULL, name), &ctx->last_op_ns);
    r->ns += ctx->last_op_ns;
    return st;
}

/* A weight gradient y [m, n] (+)= aᵀ · w on a [k, m] and w [k, n] as they
 * lie, where the device's kernels take it (ffnrt_outer_fits): no
 * transpose. 0 where they do not. */
static int product_outer(bw_run *r, const ffnrt_ffn_choice *c, const ffnrt_tensor *a, uint64_t m, uint64_t k,
                         const ffnrt_tensor *w, uint64_t n, ffnrt_tensor *y, uint64_t y_first, int accumulate,
                         ffnrt_status *st)
{
    ffnrt_context *ctx = r->ctx;
    ffnrt_outer_launch o = {a, 0, w, 0, m, n, k, y, y_first, r->l->desc.dtype, accumulate};
    if (!ffnrt_outer_fits(ctx, c, &o))
        return 0;
    *st = ffnrt_batch_begin(ctx);
    if (*st == FFNRT_OK)
        *st = ffnrt_batch_end(ctx, ffnrt_launch_outer(ctx, c, &o), &ctx->last_op_ns);
    r->ns += ctx->last_op_ns;
    return 1;
}

/* Where one weight's gradients go: its matrix (from element w_first) and
 * bias (from b_first), either NULL when not wanted. */
typedef struct grad_target {
    ffnrt_tensor *w, *b;
    uint64_t w_first, b_first;
} grad_target;

/* dW [n_out, k_in] = dzᵀ·in and db = dzᵀ·1, for dz [t, n_out] and in
 * [t, k_in]: dzᵀ into TH or TD (by its rows), inᵀ into the other. inT may
 * already hold inᵀ (*in_ready). */
static ffnrt_status weight_gradients(bw_run *r, const ffnrt_tensor *dz, uint64_t n_out, const ffnrt_tensor *in,
                                     uint64_t k_in, ffnrt_tensor *dzT, ffnrt_tensor *inT, int *in_ready,
                                     const grad_target *g, const char *name)
{
    if (!g->w && !g->b)
        return FFNRT_OK;
    char what[48];
    ffnrt_status st = FFNRT_OK;
    /* dW as dzᵀ·in on the operands as they lie, where the kernels take it;
     * the bias's product then still takes dzᵀ. */
    grad_target bias_only = {NULL, g->b, 0, g->b_first};
    if (g->w && product_outer(r, &r->by_features, dz, n_out, r->t, in, k_in, g->w, g->w_first, r->accumulate, &st)) {
        if (st != FFNRT_OK || !g->b)
            return st;
        g = &bias_only;
    }
    st = transpose(r, dz, 0, r->t, n_out, dzT, r->kt);
    if (st == FFNRT_OK && g->w && !*in_ready) {
        st = transpose(r, in, 0, r->t, k_in, inT, r->kt);
        *in_ready = st == FFNRT_OK;
    }
    snprintf(what, sizeof what, "%s.weight_gradient", name);
    if (st == FFNRT_OK && g->w)
        st = product(r, &r->by_features, dzT, n_out, r->kt, inT, k_in, g->w, g->w_first, r->accumulate, NULL, what);
    snprintf(what, sizeof what, "%s.bias_gradient", name);
    if (st == FFNRT_OK && g->b)
        st = product(r, &r->by_features, dzT, n_out, r->kt, r->l->bw[FFN_BW_ONES], 1, g->b, g->b_first,
                     r->accumulate, NULL, what);
    return st;
}

/* dx [t, k_in] (+= when accumulate) = dz [t, n_out] · W [n_out, k_in], W
 * being operand o's rows, with epilogue e (or NULL). In 16-bit storage an
 * odd n_out is padded to whole words, K = n_out + 1 with a zero in both
 * operands: Wᵀ takes the pad as it is transposed, dz by two transposes
 * through dzT (its [n_out, kt] scratch, free here), as the transposes by
 * tiles split at the buffer range where the element-wise one, unpadded,
 * binds W whole. */
static ffnrt_status input_gradient(bw_run *r, const ffnrt_tensor *dz, ffnrt_tensor *dzT, const ffnrt_gemm_operand *o,
                                   uint64_t n_out, uint64_t k_in, ffnrt_tensor *dx, int accumulate,
                                   const bw_epilogue *e, const char *name)
{
    ffnrt_tensor *wt = r->l->bw[FFN_BW_WT];
    uint64_t k = ffnrt_ffn_gradient_k(&r->l->desc, n_out);
    ffnrt_status st = FFNRT_OK;
    if (k != n_out) {
        ffnrt_tensor *padded = r->l->bw[FFN_BW_DZ_PAD];
        st = transpose(r, dz, 0, r->t, n_out, dzT, r->kt);
        if (st == FFNRT_OK)
            st = transpose(r, dzT, 0, n_out, r->kt, padded, k);
        dz = padded;
    }
    if (st == FFNRT_OK)
        st = transpose(r, o->w, o->w_row0 * k_in, n_out, k_in, wt, k);
    return st == FFNRT_OK ? product(r, &r->by_tokens, dz, r->t, k, wt, k_in, dx, 0, accumulate, e, name) : st;
}

static ffnrt_status backward_dense(bw_run *r, const ffnrt_tensor *x, const ffnrt_tensor *dy, ffnrt_tensor *dx,
                                   const grad_target *g_in, const grad_target *g_out)
{
    ffnrt_ffn *l = r->l;
    ffnrt_tensor *td = l->bw[FFN_BW_TD], *th = l->bw[FFN_BW_TH], *dh = l->bw[FFN_BW_DH];
    int a_ready = 0, x_ready = 0;
    /* W_out's: dy against a = phi(pre), which h holds. */
    ffnrt_status st = weight_gradients(r, dy, r->dm, l->h, r->h, td, th, &a_ready, g_out, "down");
    if (st != FFNRT_OK || (!g_in->w && !g_in->b && !dx))
        return st;
    /* dh = (dy·W_out) * phi'(pre): in the product's epilogue, or in place
     * after it. */
    const ffnrt_activation_desc *a = &l->desc.activation;
    bw_epilogue e = {FFNRT_GRAD_ACT, a->kind, a->alpha, a->beta, l->pre, NULL, NULL};
    st = input_gradient(r, dy, td, &l->out, r->dm, r->h, dh, 0, r->fused ? &e : NULL, "down.input_gradient");
    if (st == FFNRT_OK && !r->fused) {
        st = ffnrt_op_activation(r->ctx, a, l->pre, dh, dh, r->fn, NULL);
        r->ns += r->ctx->last_op_ns;
    }
    if (st == FFNRT_OK)
        st = weight_gradients(r, dh, r->h, x, r->dm, th, td, &x_ready, g_in, "up");
    if (st == FFNRT_OK && dx)
        st = input_gradient(r, dh, th, &l->in, r->h, r->dm, dx, 0, NULL, "up.input_gradient");
    return st;
}

static ffnrt_status backward_gated(bw_run *r, const ffnrt_tensor *x, const ffnrt_tensor *dy, ffnrt_tensor *dx,
                                   const grad_target *g_gate, const grad_target *g_value, const grad_target *g_out)
{
    ffnrt_ffn *l = r->l;
    ffnrt_tensor *td = l->bw[FFN_BW_TD], *th = l->bw[FFN_BW_TH], *dg = l->bw[FFN_BW_DH], *dv = l->bw[FFN_BW_DV];
    int u_ready = 0, x_ready = 0;
    /* W_out's: dy against u = phi(g) * v, which h holds. */
    ffnrt_status st = weight_gradients(r, dy, r->dm, l->h, r->h, td, th, &u_ready, g_out, "down");
    if (st != FFNRT_OK || (!g_gate->w && !g_gate->b && !g_value->w && !g_value->b && !dx))
        return st;
    /* du = dy·W_out, and dg, dv = the gating's gradients: in the
     * product's epilogue, or after it from du in dg. */
    bw_epilogue e = {FFNRT_GRAD_GLU, ffnrt_glu_gate_activation(l->desc.glu.kind), 0.0f, l->desc.glu.beta, l->g, l->v,
                     dv};
    st = input_gradient(r, dy, td, &l->out, r->dm, r->h, dg, 0, r->fused ? &e : NULL, "down.input_gradient");
    if (st == FFNRT_OK && !r->fused) {
        st = ffnrt_op_glu_backward_split(r->ctx, &l->desc.glu, l->g, l->v, dg, dg, dv, r->fn, NULL);
        r->ns += r->ctx->last_op_ns;
    }
    if (st == FFNRT_OK)
        st = weight_gradients(r, dg, r->h, x, r->dm, th, td, &x_ready, g_gate, "gate");
    if (st == FFNRT_OK)
        st = weight_gradients(r, dv, r->h, x, r->dm, th, td, &x_ready, g_value, "value");
    if (st == FFNRT_OK && dx)
        st = input_gradient(r, dg, th, &l->gate, r->h, r->dm, dx, 0, NULL, "gate.input_gradient");
    if (st == FFNRT_OK && dx)
        st = input_gradient(r, dv, th, &l->value, r->h, r->dm, dx, 1, NULL, "value.input_gradient");
    return st;
}

/* The gradient slots in ffnrt_ffn_weights' order. */
static void gradient_slots(const ffnrt_ffn_gradients *g, const ffnrt_tensor *s[FFN_SLOT_COUNT])
{
    const ffnrt_ffn_gradients none = {0};
    if (!g)
        g = &none;
    const ffnrt_tensor *slots[FFN_SLOT_COUNT] = {g->w_in,  g->b_in,         g->w_gate,       g->b_gate, g->w_value,
                                                 g->b_value, g->w_gate_value, g->b_gate_value, g->w_out, g->b_out};
    memcpy(s, slots, sizeof slots);
}

ffnrt_status ffnrt_ffn_backward(ffnrt_ffn *layer, const ffnrt_tensor *x, const ffnrt_tensor *dy, ffnrt_tensor *dx,
                                const ffnrt_ffn_gradients *grads, unsigned flags)
{
    static const char fn[] = "ffnrt_ffn_backward";
    if (!layer)
        return ffnrt_null_handle(fn, "layer");
    ffnrt_context *ctx = layer->ctx;
    const ffnrt_ffn_desc *d = &layer->desc;
    const ffnrt_ffn_gradients none = {0};
    const ffnrt_ffn_gradients *g = grads ? grads : &none;
    const unsigned known = FFNRT_GRADIENTS_ACCUMULATE | FFNRT_GRADIENTS_RECOMPUTE;
    int recompute = (flags & FFNRT_GRADIENTS_RECOMPUTE) != 0;
    ffnrt_status st = check_trainable(layer, fn);
    if (st == FFNRT_OK && (flags & ~known))
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: unknown flags 0x%x", fn, flags & ~known);
    if (st == FFNRT_OK)
        st = ffnrt_ffn_check_pair(layer, x, dy, fn, "dy");
    if (st == FFNRT_OK && dx)
        st = ffnrt_check_same_layout(ctx, x, dx, fn, "x", "dx");
    const ffnrt_tensor *slots[FFN_SLOT_COUNT];
    gradient_slots(g, slots);
    if (st == FFNRT_OK)
        st = ffnrt_ffn_check_gradients(ctx, d, slots, fn);
    /* Outputs: dx and every gradient, apart from each other and from x, dy
     * and the weights (the products read those while they write). */
    if (st == FFNRT_OK) {
        static const char *const names[FFN_SLOT_COUNT] = {"grads.w_in", "grads.b_in", "grads.w_gate",
                                                          "grads.b_gate", "grads.w_value", "grads.b_value",
                                                          "grads.w_gate_value", "grads.b_gate_value",
                                                          "grads.w_out", "grads.b_out"};
        const ffnrt_gemm_operand *p[4] = {&layer->in, &layer->gate, &layer->value, &layer->out};
        ffnrt_op_arg args[3 + FFN_SLOT_COUNT + 8] = {{x, "x", 0}, {dy, "dy", 0}, {dx, "dx", 1}};
        size_t n = 3;
        for (int s = 0; s < FFN_SLOT_COUNT; s++)
            args[n++] = (ffnrt_op_arg){slots[s], names[s], 1};
        for (int i = 0; i < 4; i++) {
            args[n++] = (ffnrt_op_arg){p[i]->w, "a weight of the layer", 0};
            args[n++] = (ffnrt_op_arg){p[i]->b, "a bias of the layer", 0};
        }
        st = ffnrt_check_aliasing(ctx, fn, args, n, 0,
                                  "dx and the gradients must not overlap each other, x, dy or the layer's weights");
    }
    uint64_t tokens = st == FFNRT_OK ? x->numel / (uint64_t)d->d_model : 0;
    if (st == FFNRT_OK && tokens == 0)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT, "%s: x holds no token", fn);
    if (st == FFNRT_OK && !recompute && tokens != layer->saved_tokens)
        st = ffnrt_fail(&ctx->error, FFNRT_ERROR_INVALID_ARGUMENT,
                        "%s: no training forward of these %llu tokens to differentiate%s: call "
                        "ffnrt_ffn_forward_train(layer, x, y) first (any later forward replaces what it kept), "
                        "or pass FFNRT_GRADIENTS_RECOMPUTE",
                        fn, (unsigned long long)tokens,
                        layer->saved_tokens ? "" : " (the layer keeps none now)");
    int checked = st == FFNRT_OK; /* a refused call changes nothing the layer holds */
    bw_run r = {ctx, layer, tokens, (uint64_t)d->d_model, (uint64_t)d->hidden, ffnrt_ffn_gradient_k(d, tokens), {0}, {0},
                (flags & FFNRT_GRADIENTS_ACCUMULATE) != 0, 0, fn, ffnrt_choose_backward_fused(ctx, d, NULL)};
    if (st == FFNRT_OK)
        st = backward_buffers(layer, tokens);
    if (st == FFNRT_OK)
        st = product_choice(ctx, d, tokens, &r.by_tokens);
    if (st == FFNRT_OK)
        st = product_choice(ctx, d, r.dm < r.h ? r.dm : r.h, &r.by_features);
    /* One submission: the products, transposes and element-wise passes
     * record into one batch (ffnrt_batch_begin nests), one wait. */
    int open = st == FFNRT_OK && (st = ffnrt_batch_begin(ctx)) == FFNRT_OK;
    if (st == FFNRT_OK && recompute) {
        uint64_t ns = 0;
        st = ffnrt_ffn_recompute_hidden(layer, x, tokens, &ns);
        r.ns += ns;
    }
    if (st == FFNRT_OK) {
        grad_target out = {g->w_out, g->b_out, 0, 0};
        if (!ffnrt_ffn_gated(d)) {
            grad_target in = {g->w_in, g->b_in, 0, 0};
            st = backward_dense(&r, x, dy, dx, &in, &out);
        } else {
            /* Stacked: the value's rows follow the gate's. */
            int stacked = g->w_gate_value || g->b_gate_value;
            grad_target gate = {stacked ? g->w_gate_value : g->w_gate, stacked ? g->b_gate_value : g->b_gate, 0, 0};
            grad_target value = {stacked ? g->w_gate_value : g->w_value, stacked ? g->b_gate_value : g->b_value,
                                 stacked ? r.h * r.dm : 0, stacked ? r.h : 0};
            st = backward_gated(&r, x, dy, dx, &gate, &value, &out);
        }
    }
    if (open)
        st = ffnrt_batch_end(ctx, st, &r.ns);
    if (recompute && checked) { /* holds nothing past the call, whatever happened after the checks */
        ffnrt_ffn_drop_scratch(layer);
        ffnrt_ffn_drop_backward(layer);
    }
    ctx->last_op_ns = r.ns;
    return ffnrt_context_finish_call(ctx, st);
}
