/* A GGUF model's whole FFN stack on a device, as the model runs it
 * between its attention blocks: for every layer l,
 *
 *     x <- x + FFN_l(RMSNorm(x) * norm_l)
 *
 * with the file's norm weights and epsilon: two ffnrt calls a layer
 * (ffnrt_rms_norm, ffnrt_ffn_forward_residual) submitted asynchronously,
 * one wait at the end. Checks the result against a double-precision
 * reference of the dequantized weights and prints tokens a second.
 *
 *   ffn_stack MODEL.gguf [TOKENS]      (FFNRT_DEVICE=opencl|vulkan picks the device)
 *
 * Exit status 0 when the normwise relative error is within the layers'
 * fp32 bound times the layer count: each layer adds at most its FFN's
 * bound 4 (sqrt(d_model) + sqrt(hidden) + 2) 2^-24 and its norm's
 * 4 (sqrt(d_model) + 4) 2^-24, relative to the stream it updates. */
#include <ffnrt.h>
#include <ffnrt_gguf.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct layer {
    ffnrt_ffn_desc desc;
    ffnrt_ffn *ffn;
    ffnrt_tensor *norm;
    float *wg, *wv, *wo; /* dequantized [hidden, d], [hidden, d], [d, hidden] for the reference */
    const float *norm_host;
} layer;

static float *dequantized(ffnrt_weight_format f, const void *bytes, int64_t rows, int64_t k)
{
    size_t size;
    float *out = rows > 0 && k > 0 ? malloc((size_t)(rows * k) * sizeof *out) : NULL;
    if (!out || ffnrt_weight_bytes(f, rows, k, &size) != FFNRT_OK ||
        ffnrt_dequantize(f, bytes, size, rows, k, out) != FFNRT_OK) {
        free(out);
        return NULL;
    }
    return out;
}

/* One layer of the reference in double, in place on x [tokens, d]. */
static void reference_layer(const layer *L, double eps, double *x, int64_t tokens)
{
    int64_t d = L->desc.d_model, h = L->desc.hidden;
    double *xn = malloc((size_t)d * sizeof *xn), *a = malloc((size_t)h * sizeof *a);
    for (int64_t t = 0; xn && a && t < tokens; t++) {
        double *row = x + t * d, s = 0;
        for (int64_t i = 0; i < d; i++)
            s += row[i] * row[i];
        double r = 1.0 / sqrt(s / (double)d + eps);
        for (int64_t i = 0; i < d; i++)
            xn[i] = row[i] * r * L->norm_host[i];
        for (int64_t j = 0; j < h; j++) {
            double g = 0, v = 0;
            for (int64_t i = 0; i < d; i++) {
                g += (double)L->wg[j * d + i] * xn[i];
                v += (double)L->wv[j * d + i] * xn[i];
            }
            a[j] = g / (1.0 + exp(-g)) * v; /* SwiGLU */
        }
        for (int64_t i = 0; i < d; i++) {
            double y = 0;
            for (int64_t j = 0; j < h; j++)
                y += (double)L->wo[i * h + j] * a[j];
            row[i] += y;
        }
    }
    free(xn);
    free(a);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [TOKENS]   (FFNRT_DEVICE picks the device)\n", argv[0]);
        return 2;
    }
    char *end = NULL;
    int64_t tokens = argc > 2 ? strtoll(argv[2], &end, 10) : 1;
    if (argc > 2 && (tokens < 1 || tokens > 512 || end == argv[2] || *end)) {
        fprintf(stderr, "TOKENS %s: 1 to 512\n", argv[2]);
        return 2;
    }
    ffnrt_gguf *g = NULL;
    ffnrt_context *ctx = NULL;
    layer *L = NULL;
    int64_t n_layers = 0, d = 0;
    ffnrt_tensor *tx = NULL, *txn = NULL;
    float *x = NULL;
    double *ref = NULL;
    int rc = 1;
    const char *arch = NULL;
    size_t arch_len = 0;
    uint64_t blocks = 0;
    double eps = 1e-5;
    char key[128];
    if (ffnrt_gguf_open(argv[1], &g) != FFNRT_OK ||
        ffnrt_gguf_get_string(g, "general.architecture", &arch, &arch_len) != FFNRT_OK ||
        ffnrt_context_create(NULL, &ctx) != FFNRT_OK) {
        /* ffnrt_gguf_open's own messages name the file. */
        fprintf(stderr, "%s%s%s\n", g ? argv[1] : "", g ? ": " : "", ffnrt_last_error_message());
        goto done;
    }
    snprintf(key, sizeof key, "%.*s.block_count", (int)arch_len, arch);
    if (ffnrt_gguf_get_uint(g, key, &blocks) != FFNRT_OK || blocks == 0 || blocks > 1024) {
        fprintf(stderr, "%s: no usable %s\n", argv[1], key);
        goto done;
    }
    snprintf(key, sizeof key, "%.*s.attention.layer_norm_rms_epsilon", (int)arch_len, arch);
    ffnrt_gguf_get_float(g, key, &eps); /* llama.cpp's 1e-5 where the file has none */
    L = calloc(blocks, sizeof *L);
    if (!L)
        goto done;
    /* Every layer: its FFN (the file's bytes, unchanged) and its norm. */
    for (n_layers = 0; n_layers < (int64_t)blocks; n_layers++) {
        layer *l = &L[n_layers];
        ffnrt_gguf_ffn gl;
        ffnrt_ffn_weights w;
        ffnrt_gguf_tensor_info ni;
        snprintf(key, sizeof key, "blk.%lld.ffn_norm.weight", (long long)n_layers);
        int64_t at = ffnrt_gguf_find_tensor(g, key);
        if (ffnrt_gguf_ffn_layer(g, n_layers, &gl) != FFNRT_OK || ffnrt_gguf_ffn_desc(g, &gl, &l->desc, &w) != FFNRT_OK ||
            at < 0 || ffnrt_gguf_tensor_at(g, (size_t)at, &ni) != FFNRT_OK) {
            fprintf(stderr, "%s: layer %lld: %s\n", argv[1], (long long)n_layers,
                    at < 0 ? "no ffn_norm.weight" : ffnrt_last_error_message());
            goto done;
        }
        d = l->desc.d_model;
        int64_t h = l->desc.hidden;
        if (l->desc.kind != FFNRT_FFN_GATED || l->desc.glu.kind != FFNRT_SWIGLU || l->desc.dtype != FFNRT_DTYPE_F32 ||
            ni.format != FFNRT_WEIGHT_F32 || ni.ne[0] != d) {
            fprintf(stderr, "%s: layer %lld: this example takes SwiGLU layers with f32 norms\n", argv[1],
                    (long long)n_layers);
            goto done;
        }
        l->norm_host = ni.data;
        l->wg = dequantized(l->desc.format_in, w.w_gate, h, d);
        l->wv = dequantized(l->desc.format_value, w.w_value, h, d);
        l->wo = dequantized(l->desc.format_out, w.w_out, d, h);
        if (!l->wg || !l->wv || !l->wo || ffnrt_ffn_create(ctx, &l->desc, &w, &l->ffn) != FFNRT_OK ||
            ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &d, &l->norm) != FFNRT_OK ||
            ffnrt_tensor_write(l->norm, ni.data, (size_t)d * sizeof(float)) != FFNRT_OK) {
            fprintf(stderr, "layer %lld: %s\n", (long long)n_layers, ffnrt_last_error_message());
            n_layers++;
            goto done;
        }
    }
    /* The residual stream: about N(0, 1). */
    int64_t n = tokens * d, shape[2] = {tokens, d};
    x = malloc((size_t)n * sizeof *x);
    ref = malloc((size_t)n * sizeof *ref);
    if (!x || !ref)
        goto done;
    unsigned seed = 12345;
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 3.4f;
        ref[i] = x[i];
    }
    if (ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &tx) != FFNRT_OK ||
        ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &txn) != FFNRT_OK) {
        fprintf(stderr, "ffnrt: %s\n", ffnrt_last_error_message());
        goto done;
    }
    /* Twice from the same x: the first pass compiles (or loads) the
     * kernels, the second is timed and checked. */
    struct timespec t0, t1;
    ffnrt_status st = FFNRT_OK;
    for (int pass = 0; pass < 2 && st == FFNRT_OK; pass++) {
        st = ffnrt_tensor_write(tx, x, (size_t)n * sizeof *x);
        if (st == FFNRT_OK)
            st = ffnrt_context_set_async(ctx, 1);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int64_t l = 0; l < n_layers && st == FFNRT_OK; l++) {
            st = ffnrt_rms_norm(ctx, tx, L[l].norm, (float)eps, txn);
            if (st == FFNRT_OK)
                st = ffnrt_ffn_forward_residual(L[l].ffn, txn, tx);
        }
        if (st == FFNRT_OK)
            st = ffnrt_context_wait(ctx);
        clock_gettime(CLOCK_MONOTONIC, &t1);
    }
    if (st != FFNRT_OK || ffnrt_tensor_read(tx, x, (size_t)n * sizeof *x) != FFNRT_OK) {
        fprintf(stderr, "ffnrt: %s\n", ffnrt_last_error_message());
        goto done;
    }
    for (int64_t l = 0; l < n_layers; l++)
        reference_layer(&L[l], eps, ref, tokens);
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num += (x[i] - ref[i]) * (x[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    double err = den > 0 ? sqrt(num / den) : sqrt(num);
    double u = ldexp(1.0, -24), dd = (double)d, hh = (double)L[0].desc.hidden;
    double bound = (double)n_layers * (4.0 * (sqrt(dd) + sqrt(hh) + 2.0) * u + 4.0 * (sqrt(dd) + 4.0) * u);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    ffnrt_device_info info;
    ffnrt_context_get_device_info(ctx, &info);
    printf("%s: %lld FFN layers of %lld x %lld, %lld token%s on %s (%s): %.1f tokens/s (host clock, one "
           "forward after a first that built the kernels)\n",
           argv[1], (long long)n_layers, (long long)d, (long long)L[0].desc.hidden, (long long)tokens,
           tokens > 1 ? "s" : "", info.name, ffnrt_backend_name(info.backend), (double)tokens / s);
    printf("relative error against the double reference: %.3g (bound %.3g): %s\n", err, bound,
           err <= bound ? "ok" : "TOO LARGE");
    rc = err <= bound ? 0 : 1;
done:
    for (int64_t l = 0; L && l < n_layers; l++) {
        ffnrt_ffn_destroy(L[l].ffn);
        ffnrt_tensor_destroy(L[l].norm);
        free(L[l].wg);
        free(L[l].wv);
        free(L[l].wo);
    }
    free(L);
    ffnrt_tensor_destroy(tx);
    ffnrt_tensor_destroy(txn);
    ffnrt_context_destroy(ctx);
    ffnrt_gguf_close(g);
    free(x);
    free(ref);
    return rc;
}
