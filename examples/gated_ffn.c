/* A gated (SwiGLU) feed-forward block with ffnrt: load weights, run the
 * layer on a batch of tokens, read the result. The README shows this file;
 * the test suite runs it. */
#include <ffnrt.h>

#include <stdio.h>
#include <stdlib.h>

#define D_MODEL 512
#define HIDDEN 1376 /* ffnrt_ffn_gated_hidden(2048, 32): 2/3 of a dense 4x width */
#define TOKENS 8

static float *random_matrix(size_t n, unsigned seed, float scale)
{
    float *m = malloc(n * sizeof *m);
    for (size_t i = 0; m && i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        m[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * scale;
    }
    return m;
}

int main(void)
{
    /* Weights as a checkpoint stores them: [out, in] row-major. */
    float *w_gate = random_matrix((size_t)HIDDEN * D_MODEL, 1, 0.1f);
    float *w_value = random_matrix((size_t)HIDDEN * D_MODEL, 2, 0.1f);
    float *w_out = random_matrix((size_t)D_MODEL * HIDDEN, 3, 0.05f);
    float *x = random_matrix((size_t)TOKENS * D_MODEL, 4, 2.0f);
    float *y = malloc((size_t)TOKENS * D_MODEL * sizeof *y);
    int rc = 1;
    ffnrt_context *ctx = NULL;
    ffnrt_ffn *layer = NULL;
    ffnrt_tensor *tx = NULL, *ty = NULL;
    if (!w_gate || !w_value || !w_out || !x || !y)
        goto done;

    if (ffnrt_context_create(NULL, &ctx) != FFNRT_OK) /* the best device, or FFNRT_DEVICE */
        goto done;
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, D_MODEL, HIDDEN);
    desc.glu = (ffnrt_glu_desc)FFNRT_GLU_DESC_INIT(FFNRT_SWIGLU);
    ffnrt_ffn_weights weights = {0};
    weights.w_gate = w_gate;
    weights.w_value = w_value;
    weights.w_out = w_out;
    if (ffnrt_ffn_create(ctx, &desc, &weights, &layer) != FFNRT_OK)
        goto done;

    int64_t shape[2] = {TOKENS, D_MODEL};
    if (ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &tx) != FFNRT_OK ||
        ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &ty) != FFNRT_OK ||
        ffnrt_tensor_write(tx, x, sizeof(float) * TOKENS * D_MODEL) != FFNRT_OK ||
        ffnrt_ffn_forward(layer, tx, ty) != FFNRT_OK ||
        ffnrt_tensor_read(ty, y, sizeof(float) * TOKENS * D_MODEL) != FFNRT_OK)
        goto done;

    ffnrt_device_info info;
    ffnrt_context_get_device_info(ctx, &info);
    printf("SwiGLU %d x %d, %d tokens on %s (%s): y[0][0..3] = %g %g %g %g\n", D_MODEL, HIDDEN, TOKENS, info.name,
           ffnrt_backend_name(info.backend), y[0], y[1], y[2], y[3]);
    rc = 0;
done:
    if (rc)
        fprintf(stderr, "gated_ffn: %s\n", ffnrt_last_error_message());
    ffnrt_ffn_destroy(layer); /* layers go before their context */
    ffnrt_context_destroy(ctx);
    free(w_gate);
    free(w_value);
    free(w_out);
    free(x);
    free(y);
    return rc;
}
