/* Runs layer N's feed-forward block of a GGUF model (its weights as the
 * file stores them: Q4_1, Q8_0, ...) on a device with ffnrt, and checks
 * the result against a double-precision reference computed on the host
 * from the same dequantized weights.
 *
 *   gguf_ffn MODEL.gguf [LAYER [TOKENS]]     (FFNRT_DEVICE=opencl|vulkan picks the device)
 *
 * Exit status 0 when the normwise relative error is within ffnrt's bound
 * for fp32 layers, 4 (sqrt(d_model) + sqrt(hidden) + 2) 2^-24: dequantizing
 * is exact on both sides, so what remains is the accumulation's error. */
#include <ffnrt.h>
#include <ffnrt_gguf.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The layer's activation in double (the kinds ffnrt_gguf_ffn_desc gives). */
static double phi(const ffnrt_ffn_desc *d, double v)
{
    ffnrt_activation a = d->kind == FFNRT_FFN_GATED ? ffnrt_glu_gate_activation(d->glu.kind) : d->activation.kind;
    double u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
    switch (a) {
    case FFNRT_ACT_SILU: return v / (1.0 + exp(-v));
    case FFNRT_ACT_SWISH: return v / (1.0 + exp(-d->glu.beta * v));
    case FFNRT_ACT_GELU: return 0.5 * v * erfc(-v / sqrt(2.0));
    case FFNRT_ACT_GELU_TANH: return v / (1.0 + exp(-2.0 * u));
    default: return NAN;
    }
}

/* Row r of a [rows, k] matrix in format f (GGUF's bytes, or the dtype's
 * values for a dense one) as doubles: ffnrt_dequantize is exact. */
static int row_values(ffnrt_weight_format f, const void *m, int64_t k, int64_t r, float *tmp, double *out)
{
    size_t row_bytes;
    if (ffnrt_weight_bytes(f, 1, k, &row_bytes) != FFNRT_OK ||
        ffnrt_dequantize(f, (const char *)m + (size_t)r * row_bytes, row_bytes, 1, k, tmp) != FFNRT_OK)
        return -1;
    for (int64_t i = 0; i < k; i++)
        out[i] = tmp[i];
    return 0;
}

static ffnrt_weight_format stored(const ffnrt_ffn_desc *d, ffnrt_weight_format f)
{
    return f ? f : (ffnrt_weight_format)d->dtype;
}

/* n elements of size bytes, or NULL with a message naming what: every way
 * out with a non-zero status says why. */
static void *alloc_n(int64_t n, size_t size, const char *what)
{
    void *p = n >= 1 && (uint64_t)n <= SIZE_MAX / size ? malloc((size_t)n * size) : NULL;
    if (!p)
        fprintf(stderr, "no memory for %s (%lld x %zu bytes)\n", what, (long long)n, size);
    return p;
}

/* y = W_out phi(W_in x + b) (gated: phi(W_gate x + b) * (W_value x + b)) + b, in double; -1 (said) on failure. */
static int reference(const ffnrt_ffn_desc *d, const ffnrt_ffn_weights *w, const float *x, int64_t tokens, double *y)
{
    int64_t dm = d->d_model, h = d->hidden;
    int gated = d->kind == FFNRT_FFN_GATED;
    double *row = alloc_n(dm > h ? dm : h, sizeof(double), "a row of the reference");
    double *a = row ? alloc_n(h * tokens, sizeof(double), "the reference's hidden activations") : NULL;
    float *tmp = a ? alloc_n(dm > h ? dm : h, sizeof(float), "a dequantized row") : NULL;
    double bias[3] = {0, 0, 0};
    int rc = tmp ? 0 : -1;
    const void *w_in = gated ? w->w_gate : w->w_in;
    for (int64_t r = 0; rc == 0 && r < h; r++) {
        double g[256], v[256]; /* tokens <= 256 */
        rc = row_values(stored(d, d->format_in), w_in, dm, r, tmp, row);
        for (int64_t t = 0; rc == 0 && t < tokens; t++) {
            g[t] = d->bias ? (double)((const float *)(gated ? w->b_gate : w->b_in))[r] : bias[0];
            for (int64_t k = 0; k < dm; k++)
                g[t] += row[k] * x[t * dm + k];
        }
        if (rc == 0 && gated)
            rc = row_values(stored(d, d->format_value), w->w_value, dm, r, tmp, row);
        for (int64_t t = 0; rc == 0 && t < tokens; t++) {
            v[t] = d->bias && gated ? (double)((const float *)w->b_value)[r] : bias[1];
            for (int64_t k = 0; gated && k < dm; k++)
                v[t] += row[k] * x[t * dm + k];
            a[t * h + r] = gated ? phi(d, g[t]) * v[t] : phi(d, g[t]);
        }
    }
    for (int64_t o = 0; rc == 0 && o < dm; o++) {
        rc = row_values(stored(d, d->format_out), w->w_out, h, o, tmp, row);
        for (int64_t t = 0; rc == 0 && t < tokens; t++) {
            double s = d->bias ? (double)((const float *)w->b_out)[o] : bias[2];
            for (int64_t k = 0; k < h; k++)
                s += row[k] * a[t * h + k];
            y[t * dm + o] = s;
        }
    }
    if (row && a && tmp && rc != 0)
        fprintf(stderr, "reference: %s\n", ffnrt_last_error_message());
    free(row);
    free(a);
    free(tmp);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [LAYER [TOKENS]]   (FFNRT_DEVICE picks the device)\n", argv[0]);
        return 2;
    }
    int64_t layer_index = 0, tokens = 1;
    char *end = NULL;
    if (argc > 2 && ((layer_index = strtoll(argv[2], &end, 10)) < 0 || end == argv[2] || *end)) {
        fprintf(stderr, "LAYER %s: a whole number >= 0\n", argv[2]);
        return 2;
    }
    if (argc > 3 && ((tokens = strtoll(argv[3], &end, 10)) < 1 || tokens > 256 || end == argv[3] || *end)) {
        fprintf(stderr, "TOKENS %s: 1 to 256\n", argv[3]);
        return 2;
    }
    ffnrt_gguf *g = NULL;
    ffnrt_gguf_ffn gl;
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, 1, 1);
    ffnrt_ffn_weights weights;
    ffnrt_context *ctx = NULL;
    ffnrt_ffn *layer = NULL;
    ffnrt_tensor *tx = NULL, *ty = NULL;
    float *x = NULL, *y = NULL;
    double *y_ref = NULL;
    int rc = 1;
    /* The file's layer as an ffnrt layer: descriptor and weights, bytes unchanged. */
    if (ffnrt_gguf_open(argv[1], &g) != FFNRT_OK || ffnrt_gguf_ffn_layer(g, layer_index, &gl) != FFNRT_OK ||
        ffnrt_gguf_ffn_desc(g, &gl, &desc, &weights) != FFNRT_OK || desc.dtype != FFNRT_DTYPE_F32) {
        /* ffnrt_gguf_open's own messages name the file. */
        if (g)
            fprintf(stderr, "%s: ", argv[1]);
        fprintf(stderr, "%s\n", desc.dtype != FFNRT_DTYPE_F32 ? "dense matrices in 16 bits: this example takes f32 "
                                                               "activations"
                                                             : ffnrt_last_error_message());
        goto done;
    }
    int64_t dm = desc.d_model, n = tokens * dm;
    x = alloc_n(n, sizeof *x, "the input");
    y = x ? alloc_n(n, sizeof *y, "the output") : NULL;
    y_ref = y ? alloc_n(n, sizeof *y_ref, "the reference output") : NULL;
    if (!y_ref)
        goto done;
    unsigned seed = 12345;
    for (int64_t i = 0; i < n; i++) { /* activations of a normalized residual stream: about N(0, 1) */
        seed = seed * 1664525u + 1013904223u;
        x[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 3.4f;
    }

    if (ffnrt_context_create(NULL, &ctx) != FFNRT_OK || ffnrt_ffn_create(ctx, &desc, &weights, &layer) != FFNRT_OK) {
        fprintf(stderr, "ffnrt: %s\n", ffnrt_last_error_message());
        goto done;
    }
    int64_t shape[2] = {tokens, dm};
    if (ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &tx) != FFNRT_OK ||
        ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &ty) != FFNRT_OK ||
        ffnrt_tensor_write(tx, x, sizeof *x * (size_t)n) != FFNRT_OK || ffnrt_ffn_forward(layer, tx, ty) != FFNRT_OK ||
        ffnrt_tensor_read(ty, y, sizeof *y * (size_t)n) != FFNRT_OK) {
        fprintf(stderr, "ffnrt: %s\n", ffnrt_last_error_message());
        goto done;
    }
    if (reference(&desc, &weights, x, tokens, y_ref) != 0)
        goto done;
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num += (y[i] - y_ref[i]) * (y[i] - y_ref[i]);
        den += y_ref[i] * y_ref[i];
    }
    double err = den > 0 ? sqrt(num / den) : sqrt(num);
    double bound = 4.0 * (sqrt((double)dm) + sqrt((double)desc.hidden) + 2.0) * ldexp(1.0, -24);
    ffnrt_plan *plan = NULL;
    ffnrt_device_info info;
    ffnrt_context_get_device_info(ctx, &info);
    ffnrt_ffn_plan(ctx, &desc, tokens, &plan);
    printf("%s layer %lld: %s %lld x %lld, weights %s, %lld token%s on %s (%s), kernel %s\n", argv[1],
           (long long)layer_index, desc.kind == FFNRT_FFN_GATED ? ffnrt_glu_name(desc.glu.kind) : ffnrt_activation_name(desc.activation.kind),
           (long long)dm, (long long)desc.hidden, plan ? ffnrt_plan_choice(plan, "ffn.weights") : "?", (long long)tokens,
           tokens > 1 ? "s" : "", info.name, ffnrt_backend_name(info.backend),
           plan ? ffnrt_plan_choice(plan, "ffn.kernel") : "?");
    printf("relative error against the double reference of the dequantized weights: %.3g (bound %.3g): %s\n", err,
           bound, err <= bound ? "ok" : "TOO LARGE");
    ffnrt_plan_destroy(plan);
    rc = err <= bound ? 0 : 1;
done:
    ffnrt_tensor_destroy(tx);
    ffnrt_tensor_destroy(ty);
    ffnrt_ffn_destroy(layer);
    ffnrt_context_destroy(ctx);
    ffnrt_gguf_close(g);
    free(x);
    free(y);
    free(y_ref);
    return rc;
}
