/* A few AdamW training steps of one FFN layer on one device, from inputs a
 * driver wrote, for tests/peer_torch.py (the cross-check against PyTorch).
 *
 * Usage: torch_train_step BACKEND DIR KIND D H T BIAS STEPS LR
 *   BACKEND opencl | vulkan (its device 0); KIND an activation name
 *   (dense: down(act(W_in x + b_in)) + b_out) or a GLU name (gated, the
 *   up matrix stacked as w_gate_value [2H, D], gate rows first); BIAS 0|1.
 * DIR holds raw little-endian float32 files: x [T, D], target [T, D],
 * w_up [H or 2H, D], w_down [D, H], and with BIAS b_up, b_down. Each step:
 * ffnrt_ffn_forward_train, ffnrt_loss_mse against target (its gradient as
 * dy), ffnrt_ffn_backward, ffnrt_optimizer_step (AdamW, lr LR, betas
 * 0.9/0.999, eps 1e-8, weight decay 0.01: torch.optim.AdamW's defaults).
 * Writes DIR/BACKEND.loss (each step's loss, before its update, one a
 * line) and DIR/BACKEND.w_up, .w_down (.b_up, .b_down) after the steps.
 * Vulkan runs under the validation layer, whose messages fail the run.
 * Exit 0; 77 when the backend has no device here; 1 on an error. */
#include "ffnrt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what)
{
    fprintf(stderr, "torch_train_step: %s: %s\n", what, ffnrt_last_error_message());
    return 1;
}

/* A device tensor of shape filled from DIR/name (NULL on error). */
static ffnrt_tensor *load(ffnrt_context *ctx, const char *dir, const char *name, size_t rank, int64_t d0, int64_t d1)
{
    int64_t shape[2] = {d0, d1};
    size_t n = (size_t)d0 * (size_t)(rank == 2 ? d1 : 1);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    float *v = malloc(n * sizeof *v);
    FILE *f = fopen(path, "rb");
    ffnrt_tensor *t = NULL;
    if (v && f && fread(v, sizeof *v, n, f) == n && ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, rank, shape, &t) == FFNRT_OK &&
        ffnrt_tensor_write(t, v, n * sizeof *v) != FFNRT_OK) {
        ffnrt_tensor_destroy(t);
        t = NULL;
    }
    if (!t)
        fprintf(stderr, "torch_train_step: cannot load %s\n", path);
    if (f)
        fclose(f);
    free(v);
    return t;
}

static int save(const ffnrt_tensor *t, const char *dir, const char *backend, const char *name)
{
    if (!t)
        return 0;
    size_t n = (size_t)ffnrt_tensor_numel(t);
    float *v = malloc(n * sizeof *v);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.%s", dir, backend, name);
    FILE *f = v ? fopen(path, "wb") : NULL;
    int ok = f && ffnrt_tensor_read(t, v, n * sizeof *v) == FFNRT_OK && fwrite(v, sizeof *v, n, f) == n;
    if (f)
        ok &= fclose(f) == 0;
    free(v);
    return ok ? 0 : -1;
}

static ffnrt_tensor *zeros_like(ffnrt_context *ctx, const ffnrt_tensor *like)
{
    if (!like)
        return NULL;
    int64_t shape[2] = {ffnrt_tensor_dim(like, 0), ffnrt_tensor_ndim(like) == 2 ? ffnrt_tensor_dim(like, 1) : 1};
    ffnrt_tensor *t = NULL;
    ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, ffnrt_tensor_ndim(like), shape, &t);
    return t;
}

int main(int argc, char **argv)
{
    if (argc != 10) {
        fprintf(stderr, "usage: torch_train_step BACKEND DIR KIND D H T BIAS STEPS LR\n");
        return 2;
    }
    const char *backend = argv[1], *dir = argv[2], *kind = argv[3];
    int64_t d = atoll(argv[4]), h = atoll(argv[5]), t = atoll(argv[6]);
    int bias = atoi(argv[7]), steps = atoi(argv[8]);
    float lr = (float)atof(argv[9]);
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.backend = strcmp(backend, "opencl") == 0 ? FFNRT_BACKEND_OPENCL
                : strcmp(backend, "vulkan") == 0 ? FFNRT_BACKEND_VULKAN
                                                  : FFNRT_BACKEND_ANY;
    if (o.backend == FFNRT_BACKEND_ANY) {
        fprintf(stderr, "torch_train_step: no backend %s\n", backend);
        return 2;
    }
    o.device_index = 0;
    o.validation = 1; /* the Khronos layer on Vulkan, as the suites run: its messages fail the run */
    ffnrt_context *ctx = NULL;
    ffnrt_status st = ffnrt_context_create(&o, &ctx);
    if (st == FFNRT_ERROR_BACKEND_UNAVAILABLE || st == FFNRT_ERROR_DEVICE_NOT_FOUND) {
        fprintf(stderr, "torch_train_step: no %s device: %s\n", backend, ffnrt_last_error_message());
        return 77;
    }
    if (st != FFNRT_OK)
        return fail("context");
    ffnrt_glu glu;
    ffnrt_activation act;
    int gated = ffnrt_glu_from_name(kind, &glu) == FFNRT_OK;
    if (!gated && ffnrt_activation_from_name(kind, &act) != FFNRT_OK) {
        fprintf(stderr, "torch_train_step: no activation or GLU kind %s\n", kind);
        return 2;
    }
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(gated ? FFNRT_FFN_GATED : FFNRT_FFN_DENSE, d, h);
    desc.bias = bias;
    if (gated)
        desc.glu = (ffnrt_glu_desc)FFNRT_GLU_DESC_INIT(glu);
    else
        desc.activation = (ffnrt_activation_desc)FFNRT_ACTIVATION_DESC_INIT(act);
    int64_t up = gated ? 2 * h : h;
    ffnrt_tensor *x = load(ctx, dir, "x", 2, t, d), *target = load(ctx, dir, "target", 2, t, d);
    ffnrt_tensor *w_up = load(ctx, dir, "w_up", 2, up, d), *w_down = load(ctx, dir, "w_down", 2, d, h);
    ffnrt_tensor *b_up = bias ? load(ctx, dir, "b_up", 1, up, 0) : NULL;
    ffnrt_tensor *b_down = bias ? load(ctx, dir, "b_down", 1, d, 0) : NULL;
    if (!x || !target || !w_up || !w_down || (bias && (!b_up || !b_down)))
        return 1;
    ffnrt_ffn_weight_tensors wt;
    memset(&wt, 0, sizeof wt);
    ffnrt_ffn_gradients g;
    memset(&g, 0, sizeof g);
    if (gated) {
        wt.w_gate_value = w_up, wt.b_gate_value = b_up;
        g.w_gate_value = zeros_like(ctx, w_up), g.b_gate_value = zeros_like(ctx, b_up);
    } else {
        wt.w_in = w_up, wt.b_in = b_up;
        g.w_in = zeros_like(ctx, w_up), g.b_in = zeros_like(ctx, b_up);
    }
    wt.w_out = w_down, wt.b_out = b_down;
    g.w_out = zeros_like(ctx, w_down), g.b_out = zeros_like(ctx, b_down);
    ffnrt_ffn *layer = NULL;
    if (ffnrt_ffn_create_from_tensors(ctx, &desc, &wt, &layer) != FFNRT_OK)
        return fail("layer");
    ffnrt_tensor *y = zeros_like(ctx, x), *dy = zeros_like(ctx, x);
    ffnrt_optimizer_desc od = FFNRT_OPTIMIZER_DESC_INIT(FFNRT_OPTIMIZER_ADAMW);
    od.lr = lr;
    od.weight_decay = 0.01f;
    ffnrt_optimizer *opt = NULL;
    if (!y || !dy || ffnrt_optimizer_create(ctx, &od, &opt) != FFNRT_OK ||
        ffnrt_optimizer_add_ffn(opt, layer, &g) != FFNRT_OK)
        return fail("optimizer");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.loss", dir, backend);
    FILE *lf = fopen(path, "w");
    if (!lf)
        return fail("loss file");
    for (int s = 0; s < steps; s++) {
        double loss = 0;
        if (ffnrt_ffn_forward_train(layer, x, y) != FFNRT_OK)
            return fail("forward_train");
        if (ffnrt_loss_mse(ctx, y, target, 1.0f, dy, &loss) != FFNRT_OK)
            return fail("loss_mse");
        if (ffnrt_ffn_backward(layer, x, dy, NULL, &g, 0) != FFNRT_OK)
            return fail("backward");
        if (ffnrt_optimizer_step(opt, NULL) != FFNRT_OK)
            return fail("optimizer_step");
        fprintf(lf, "%.17g\n", loss);
    }
    fclose(lf);
    if (save(w_up, dir, backend, "w_up") || save(w_down, dir, backend, "w_down") || save(b_up, dir, backend, "b_up") ||
        save(b_down, dir, backend, "b_down"))
        return fail("saving the weights");
    ffnrt_optimizer_destroy(opt);
    ffnrt_ffn_destroy(layer);
    ffnrt_tensor *all[] = {x, target, w_up, w_down, b_up, b_down, y, dy, g.w_in, g.b_in, g.w_gate_value,
                           g.b_gate_value, g.w_out, g.b_out};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        ffnrt_tensor_destroy(all[i]);
    uint64_t messages = ffnrt_context_validation_messages(ctx);
    ffnrt_context_destroy(ctx);
    if (messages) {
        fprintf(stderr, "torch_train_step: the Vulkan validation layer reported %llu messages\n",
                (unsigned long long)messages);
        return 1;
    }
    return 0;
}
