/* ffnrt check --quant: what quantizing a layer's weights costs, measured on
 * the device (the seed's "degradation after quantization: evaluate the
 * quantized model on the target hardware").
 *
 * The layer's fp32 weights come from a GGUF file (any format it holds,
 * dequantized: ffnrt_gguf_ffn_desc says the layer's kind and activation),
 * from raw little-endian fp32 files, or are random. Each format quantizes
 * them (ffnrt_quantize, GGUF's reference rounding), the device runs the
 * layer on the same inputs, and two errors are reported, normwise over
 * every output:
 *   - against the fp32 layer in double: the format's loss, as the app
 *     sees it (reported, not bounded);
 *   - against the same quantized weights dequantized, in double: the
 *     device's own error (accumulation only), checked against the bound
 *     of fp32 layers, 4 (sqrt(d) + sqrt(h) + 2) 2^-24 (f16 storage: 4 2^-11).
 * Exit status 1 when a device error passes its bound. */
#include "check_quant.h"
#include "args.h"
#include "numbers.h"

#include "ffnrt.h"
#include "ffnrt_gguf.h"
#include "ffnrt_lab.h" /* ffnrt_lab_fopen: UTF-8 paths on every OS */
#include "reference_ffn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every way out with status 1 says why on stderr: a failed allocation
 * (a layer's sizes come from a file, and its fp32 copy can be far larger
 * than the file) included. */
static const char me[] = "ffnrt check --quant";

/* n elements of size bytes, or NULL with the message naming what. */
static void *alloc_n(int64_t n, size_t size, const char *what)
{
    void *p = n >= 1 && (uint64_t)n <= SIZE_MAX / size ? malloc((size_t)n * size) : NULL;
    if (!p)
        fprintf(stderr, "%s: no memory for %s (%lld x %zu bytes)\n", me, what, (long long)n, size);
    return p;
}

/* A layer's fp32 weights and what it computes. */
typedef struct layer_f32 {
    ffnrt_ffn_desc desc; /* f32, dense formats, no path chosen */
    float *w[3];         /* gate or in [h, d]; value [h, d] (gated); out [d, h] */
    float *b[3];         /* biases, or NULL */
    char what[160];
} layer_f32;

static void free_layer(layer_f32 *l)
{
    for (int i = 0; i < 3; i++) {
        free(l->w[i]);
        free(l->b[i]);
    }
}

static double phi(const ffnrt_ffn_desc *d, double v)
{
    ffnrt_activation a = d->kind == FFNRT_FFN_GATED ? ffnrt_glu_gate_activation(d->glu.kind) : d->activation.kind;
    double beta = d->kind == FFNRT_FFN_GATED ? d->glu.beta : d->activation.beta;
    double u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
    switch (a) {
    case FFNRT_ACT_RELU: return v > 0 ? v : 0;
    case FFNRT_ACT_SIGMOID: return 1.0 / (1.0 + exp(-v));
    case FFNRT_ACT_SILU: return v / (1.0 + exp(-v));
    case FFNRT_ACT_SWISH: return v / (1.0 + exp(-beta * v));
    case FFNRT_ACT_GELU: return 0.5 * v * erfc(-v / sqrt(2.0));
    case FFNRT_ACT_GELU_TANH: return v / (1.0 + exp(-2.0 * u));
    case FFNRT_ACT_TANH: return tanh(v);
    default: return NAN;
    }
}

/* y [t, d] of the layer with weights w (doubles of any precision) in
 * double; -1 (said) when out of memory. */
static int reference(const ffnrt_ffn_desc *d, float *const w[3], float *const b[3], const float *x, int64_t t, double *y)
{
    int64_t dm = d->d_model, h = d->hidden;
    int gated = d->kind == FFNRT_FFN_GATED;
    double *a = alloc_n(h, sizeof *a, "the reference's hidden activations");
    for (int64_t i = 0; a && i < t; i++) {
        const float *xi = x + i * dm;
        for (int64_t r = 0; r < h; r++) {
            double g = b[0] ? b[0][r] : 0, v = gated && b[1] ? b[1][r] : 0;
            for (int64_t k = 0; k < dm; k++) {
                g += (double)w[0][r * dm + k] * xi[k];
                if (gated)
                    v += (double)w[1][r * dm + k] * xi[k];
            }
            a[r] = gated ? phi(d, g) * v : phi(d, g);
        }
        for (int64_t o = 0; o < dm; o++) {
            double s = b[2] ? b[2][o] : 0;
            for (int64_t r = 0; r < h; r++)
                s += (double)w[2][o * h + r] * a[r];
            y[i * dm + o] = s;
        }
    }
    free(a);
    return a ? 0 : -1;
}

/* ------------------------------------------------------------ the layer */

/* rows x k of format f as floats, or NULL (said). */
static float *dequantized(ffnrt_weight_format f, const void *data, int64_t rows, int64_t k, const char *what)
{
    size_t bytes;
    char text[200];
    snprintf(text, sizeof text, "%s dequantized", what);
    float *out = alloc_n(rows * k, sizeof *out, text);
    if (out && (ffnrt_weight_bytes(f, rows, k, &bytes) != FFNRT_OK ||
                ffnrt_dequantize(f, data, bytes, rows, k, out) != FFNRT_OK)) {
        fprintf(stderr, "%s: %s: %s\n", me, what, ffnrt_last_error_message());
        free(out);
        return NULL;
    }
    return out;
}

static int from_gguf(const char *path, int64_t index, layer_f32 *l)
{
    ffnrt_gguf *g = NULL;
    ffnrt_gguf_ffn gl;
    ffnrt_ffn_weights w;
    int rc = -1;
    if (ffnrt_gguf_open(path, &g) != FFNRT_OK || ffnrt_gguf_ffn_layer(g, index, &gl) != FFNRT_OK ||
        ffnrt_gguf_ffn_desc(g, &gl, &l->desc, &w) != FFNRT_OK) {
        /* ffnrt_gguf_open's own messages name the file; the later calls' do not. */
        fprintf(stderr, "%s: %s%s%s\n", me, g ? path : "", g ? ": " : "", ffnrt_last_error_message());
    } else {
        int gated = gl.gated;
        const ffnrt_gguf_tensor_info *m[3] = {gated ? &gl.gate : &gl.up, &gl.up, &gl.down};
        const ffnrt_gguf_tensor_info *b[3] = {gated ? &gl.gate_bias : &gl.up_bias, &gl.up_bias, &gl.down_bias};
        rc = 0;
        for (int i = 0; i < 3 && rc == 0; i++) {
            if (i == 1 && !gated)
                continue;
            l->w[i] = dequantized(m[i]->format, m[i]->data, m[i]->ne[1], m[i]->ne[0], m[i]->name);
            if (l->w[i] && gl.bias)
                l->b[i] = dequantized(b[i]->format, b[i]->data, 1, b[i]->ne[0], b[i]->name);
            rc = l->w[i] && (!gl.bias || l->b[i]) ? 0 : -1;
        }
        snprintf(l->what, sizeof l->what, "%s layer %lld (stored %s, %s, %s)", path, (long long)index,
                 m[0]->type_name, m[1]->type_name, m[2]->type_name);
        l->desc.dtype = FFNRT_DTYPE_F32;
        l->desc.format_in = l->desc.format_value = l->desc.format_out = FFNRT_WEIGHT_F32;
    }
    ffnrt_gguf_close(g);
    return rc;
}

static float *read_f32(const char *path, int64_t n)
{
    float *v = alloc_n(n, sizeof *v, path);
    if (!v)
        return NULL;
    FILE *f = ffnrt_lab_fopen(path, "rb");
    size_t got = f ? fread(v, sizeof *v, (size_t)n, f) : 0;
    int extra = f ? fgetc(f) != EOF : 1;
    if (f)
        fclose(f);
    if (got != (size_t)n || extra) {
        fprintf(stderr, "%s: %s: not %lld little-endian floats\n", me, path, (long long)n);
        free(v);
        return NULL;
    }
    return v;
}

/* Random weights: uniform of the variance of N(0, 1/fan-in), or, heavy,
 * Student-t with 3 degrees of freedom (outlier-heavy blocks). */
static float *random_f32(int64_t n, int64_t fan_in, uint32_t seed, int heavy, const char *what)
{
    float *v = alloc_n(n, sizeof *v, what);
    double s = 1.0 / sqrt((double)fan_in);
    for (int64_t i = 0; v && i < n; i++) {
        double u[4];
        for (int j = 0; j < 4; j++) {
            seed = seed * 1664525u + 1013904223u;
            u[j] = ((double)(seed >> 8) + 0.5) / 16777216.0;
        }
        double z = sqrt(-2 * log(u[0])) * cos(6.283185307179586 * u[1]);
        if (heavy) { /* t3 = z / sqrt(chi2_3 / 3), chi2_3 from three normals' worth: -2 ln(u2 u3) + z'^2 */
            double z2 = sqrt(-2 * log(u[2])) * cos(6.283185307179586 * u[3]);
            double chi = -2.0 * log(u[2] * u[3] + 1e-300) + z2 * z2;
            z = z / sqrt(chi / 3.0);
        }
        v[i] = (float)(z * s);
    }
    return v;
}

/* -------------------------------------------------------------- running */

/* Runs the layer with every matrix in format f (dense f32 / f16: the
 * layer in that dtype) on x; *loss against the fp32 layer, *dev against
 * the same quantized weights dequantized. Returns 0, 1 if f does not
 * apply to these widths, -1 on an error. */
static int run_format(ffnrt_context *ctx, const layer_f32 *l, ffnrt_weight_format f, const float *x, int64_t t,
                      const double *y_f32, double *loss, double *dev, double *bpw)
{
    const ffnrt_ffn_desc *d0 = &l->desc;
    int gated = d0->kind == FFNRT_FFN_GATED;
    int64_t dm = d0->d_model, h = d0->hidden;
    uint32_t block = 1, block_bytes = 4;
    ffnrt_weight_format_block(f, &block, &block_bytes);
    if (dm % block || h % block)
        return 1;
    *bpw = 8.0 * block_bytes / block;
    ffnrt_ffn_desc d = *d0;
    int dense16 = f == FFNRT_WEIGHT_F16 || f == FFNRT_WEIGHT_BF16;
    d.dtype = dense16 ? (ffnrt_dtype)f : FFNRT_DTYPE_F32;
    d.format_in = d.format_out = f;
    d.format_value = gated ? f : FFNRT_WEIGHT_F32;
    int64_t rows[3] = {h, h, dm}, cols[3] = {dm, dm, h};
    void *q[3] = {NULL, NULL, NULL}, *qb[3] = {NULL, NULL, NULL};
    float *deq[3] = {NULL, NULL, NULL}, *bq[3] = {NULL, NULL, NULL};
    size_t n = (size_t)(t * dm);
    const char *fname = ffnrt_weight_format_name(f);
    static const char *const names[3] = {"W_in or W_gate", "W_value", "W_out"};
    char what[160];
    float *y = alloc_n(t * dm, sizeof *y, "the layer's output");
    double *y_deq = y ? alloc_n(t * dm, sizeof *y_deq, "the reference output") : NULL;
    void *xs = y_deq ? alloc_n(t * dm, 4, "the input") : NULL, *ys = xs ? alloc_n(t * dm, 4, "the output") : NULL;
    float *xr = ys ? alloc_n(t * dm, sizeof *xr, "the input as the device sees it") : NULL;
    int rc = xr ? 0 : -1;
    /* Quantize (or round) each matrix and bias; the device's exact weights back. */
    for (int i = 0; i < 3 && rc == 0; i++) {
        if (i == 1 && !gated)
            continue;
        size_t bytes;
        snprintf(what, sizeof what, "%s in %s", names[i], fname);
        rc = -1;
        if (ffnrt_weight_bytes(f, rows[i], cols[i], &bytes) != FFNRT_OK ||
            ((q[i] = alloc_n((int64_t)bytes, 1, what)) &&
             ffnrt_quantize(f, l->w[i], rows[i], cols[i], q[i], bytes) != FFNRT_OK))
            fprintf(stderr, "%s: %s: %s\n", me, what, ffnrt_last_error_message());
        else if (q[i] && (deq[i] = dequantized(f, q[i], rows[i], cols[i], what)))
            rc = 0;
        if (rc == 0 && l->b[i]) { /* biases in the layer's dtype */
            ffnrt_weight_format bf = (ffnrt_weight_format)d.dtype;
            snprintf(what, sizeof what, "the bias of %s in %s", names[i], ffnrt_weight_format_name(bf));
            rc = -1;
            if (ffnrt_weight_bytes(bf, 1, rows[i], &bytes) != FFNRT_OK ||
                ((qb[i] = alloc_n((int64_t)bytes, 1, what)) &&
                 ffnrt_quantize(bf, l->b[i], 1, rows[i], qb[i], bytes) != FFNRT_OK))
                fprintf(stderr, "%s: %s: %s\n", me, what, ffnrt_last_error_message());
            else if (qb[i] && (bq[i] = dequantized(bf, qb[i], 1, rows[i], what)))
                rc = 0;
        }
    }
    /* x in the layer's dtype; the references from the x the device sees. */
    if (rc == 0) {
        if (dense16) {
            ffnrt_quantize(f, x, t, dm, xs, 2 * n);
            ffnrt_dequantize(f, xs, 2 * n, t, dm, xr);
        } else {
            memcpy(xs, x, 4 * n);
            memcpy(xr, x, 4 * n);
        }
        rc = reference(&d, deq, bq, xr, t, y_deq);
    }
    ffnrt_ffn_weights w;
    memset(&w, 0, sizeof w);
    if (gated)
        w.w_gate = q[0], w.w_value = q[1], w.b_gate = qb[0], w.b_value = qb[1];
    else
        w.w_in = q[0], w.b_in = qb[0];
    w.w_out = q[2], w.b_out = qb[2];
    ffnrt_ffn *layer = NULL;
    ffnrt_tensor *tx = NULL, *ty = NULL;
    int64_t shape[2] = {t, dm};
    size_t es = ffnrt_dtype_size(d.dtype);
    if (rc == 0 && (ffnrt_ffn_create(ctx, &d, &w, &layer) != FFNRT_OK ||
                    ffnrt_tensor_create(ctx, d.dtype, 2, shape, &tx) != FFNRT_OK ||
                    ffnrt_tensor_create(ctx, d.dtype, 2, shape, &ty) != FFNRT_OK ||
                    ffnrt_tensor_write(tx, xs, es * n) != FFNRT_OK || ffnrt_ffn_forward(layer, tx, ty) != FFNRT_OK ||
                    ffnrt_tensor_read(ty, ys, es * n) != FFNRT_OK)) {
        fprintf(stderr, "%s: %s: %s\n%s", me, fname, ffnrt_last_error_message(), ffnrt_context_build_log(ctx));
        rc = -1;
    }
    if (rc == 0) {
        if (dense16)
            ffnrt_dequantize(f, ys, 2 * n, t, dm, y);
        else
            memcpy(y, ys, 4 * n);
        *loss = ref_normwise_error(y, y_f32, (int64_t)n);
        *dev = ref_normwise_error(y, y_deq, (int64_t)n);
    }
    ffnrt_tensor_destroy(tx);
    ffnrt_tensor_destroy(ty);
    ffnrt_ffn_destroy(layer);
    for (int i = 0; i < 3; i++) {
        free(q[i]);
        free(qb[i]);
        free(deq[i]);
        free(bq[i]);
    }
    free(xr);
    free(y);
    free(y_deq);
    free(xs);
    free(ys);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: ffnrt check --quant [--gguf MODEL.gguf [--layer N]] [--f32 W1,W2[,W3] --d N --hidden N]\n"
               "                          [--d N --hidden N [--heavy]] [--formats LIST] [--tokens N] [--device SPEC]\n"
               "  the layer's fp32 weights: a GGUF layer (dequantized; its architecture gives the activation), raw\n"
               "  little-endian fp32 files ([out, in] as nn.Linear: gate, value, out for a SwiGLU layer; in, out\n"
               "  for a dense GELU one), or random (N(0, 1/fan-in); --heavy: Student-t with 3 degrees of freedom)\n"
               "  --formats: f32,f16,bf16,q8_0,q6_k,q4_1,q4_k,q4_0 (the default: all); --tokens: 8\n");
}

int ffnrt_check_quant_main(int argc, char **argv)
{
    const char *gguf = NULL, *device = NULL, *files = NULL, *formats = "f32,f16,bf16,q8_0,q6_k,q4_1,q4_k,q4_0";
    int64_t index = 0, d = 0, hidden = 0, tokens = 8;
    int heavy = 0;
    cli_args args;
    cli_args_init(&args, argc, argv);
    const char *a;
    cli_arg_kind kind;
    while ((kind = cli_args_next(&args, &a)) != CLI_END) {
        if (kind == CLI_OPERAND) {
            fprintf(stderr, "%s: unexpected argument %s\n", me, a);
            usage(stderr);
            return 2;
        }
        int64_t *num = strcmp(a, "--layer") == 0 ? &index : strcmp(a, "--d") == 0 ? &d
                     : strcmp(a, "--hidden") == 0 ? &hidden : strcmp(a, "--tokens") == 0 ? &tokens : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--heavy") == 0) {
            heavy = 1;
            continue;
        } else if (!num && strcmp(a, "--gguf") != 0 && strcmp(a, "--f32") != 0 && strcmp(a, "--formats") != 0 &&
                   strcmp(a, "--device") != 0) {
            fprintf(stderr, "%s: unknown option %s\n", me, a);
            usage(stderr);
            return 2;
        }
        const char *v = cli_args_value(&args);
        if (!v) {
            fprintf(stderr, "%s: %s needs a value\n", me, a);
            return 2;
        } else if (num) {
            if (cli_parse_int(v, strcmp(a, "--layer") == 0 ? 0 : 1, strcmp(a, "--tokens") == 0 ? 4096 : 65536, num) != 0) {
                fprintf(stderr, "%s: %s %s: not an integer in range\n", me, a, v);
                return 2;
            }
        } else if (strcmp(a, "--gguf") == 0) {
            gguf = v;
        } else if (strcmp(a, "--f32") == 0) {
            files = v;
        } else if (strcmp(a, "--formats") == 0) {
            formats = v;
        } else {
            device = v;
        }
    }
    layer_f32 l;
    memset(&l, 0, sizeof l);
    if (gguf) {
        if (from_gguf(gguf, index, &l) != 0) {
            free_layer(&l);
            return 1;
        }
    } else {
        if (!d || !hidden) {
            fprintf(stderr, "%s: give --gguf, or --d and --hidden\n", me);
            usage(stderr);
            return 2;
        }
        char paths[3][512] = {"", "", ""};
        int nfiles = 0;
        if (files) {
            char buf[1600];
            snprintf(buf, sizeof buf, "%s", files);
            char *save = NULL;
            for (char *p = strtok_r(buf, ",", &save); p && nfiles < 3; p = strtok_r(NULL, ",", &save))
                snprintf(paths[nfiles++], sizeof paths[0], "%s", p);
            if (nfiles < 2) {
                fprintf(stderr, "%s: --f32 takes 2 (dense) or 3 (gated) files\n", me);
                return 2;
            }
        }
        int gated = !files || nfiles == 3;
        l.desc = (ffnrt_ffn_desc)FFNRT_FFN_DESC_INIT(gated ? FFNRT_FFN_GATED : FFNRT_FFN_DENSE, d, hidden);
        static const char *const names[3] = {"W_in or W_gate", "W_value", "W_out"};
        for (int i = 0; i < 3; i++) {
            if (i == 1 && !gated)
                continue;
            int fi = gated ? i : i ? 1 : 0;
            l.w[i] = files ? read_f32(paths[fi], d * hidden)
                           : random_f32(d * hidden, i == 2 ? hidden : d, 7u + (uint32_t)i, heavy, names[i]);
            if (!l.w[i]) {
                free_layer(&l);
                return 1;
            }
        }
        snprintf(l.what, sizeof l.what, "%s %s", files ? "the fp32 files" : "random weights",
                 files ? files : heavy ? "(Student-t, 3 degrees of freedom)" : "(normal)");
    }
    /* Inputs: a normalized residual stream, about N(0, 1). */
    int64_t dm = l.desc.d_model;
    float *x = random_f32(tokens * dm, 1, 99u, 0, "the input");
    double *y_f32 = x ? alloc_n(tokens * dm, sizeof *y_f32, "the fp32 layer's output") : NULL;
    if (!y_f32 || reference(&l.desc, l.w, l.b, x, tokens, y_f32) != 0) {
        free_layer(&l);
        free(x);
        free(y_f32);
        return 1;
    }
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.device = device; /* NULL: FFNRT_DEVICE, else ffnrt's choice */
    ffnrt_context *ctx = NULL;
    if (ffnrt_context_create(&o, &ctx) != FFNRT_OK) {
        fprintf(stderr, "%s: %s\n", me, ffnrt_last_error_message());
        free_layer(&l);
        free(x);
        free(y_f32);
        return 1;
    }
    ffnrt_device_info info;
    ffnrt_context_get_device_info(ctx, &info);
    int gated = l.desc.kind == FFNRT_FFN_GATED;
    printf("%s: %s %s %lld x %lld, %lld tokens on %s (%s)\n", l.what, gated ? "gated" : "dense",
           gated ? ffnrt_glu_name(l.desc.glu.kind) : ffnrt_activation_name(l.desc.activation.kind), (long long)dm,
           (long long)l.desc.hidden, (long long)tokens, info.name, ffnrt_backend_name(info.backend));
    printf("| format | bits a weight | error against the fp32 layer (the format's loss) | device error against its "
           "dequantized weights | bound |\n|---|---|---|---|---|\n");
    double bound32 = 4.0 * (sqrt((double)dm) + sqrt((double)l.desc.hidden) + 2.0) * ldexp(1.0, -24);
    int rc = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", formats);
    char *save = NULL;
    for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        ffnrt_weight_format f;
        if (ffnrt_weight_format_from_name(name, &f) != FFNRT_OK) {
            fprintf(stderr, "%s: --formats %s: not a weight format\n", me, name);
            rc = 2;
            break;
        }
        double loss = 0, dev = 0, bpw = 0;
        int r = run_format(ctx, &l, f, x, tokens, y_f32, &loss, &dev, &bpw);
        double bound = f == FFNRT_WEIGHT_F16 ? 4.0 * ldexp(1.0, -11) : f == FFNRT_WEIGHT_BF16 ? 4.0 * ldexp(1.0, -8) : bound32;
        if (r == 1) {
            uint32_t block;
            ffnrt_weight_format_block(f, &block, NULL);
            printf("| %s | | n/a: d_model and hidden must be multiples of %u | | |\n", name, block);
        } else if (r < 0) {
            rc = 1;
        } else {
            printf("| %s | %.4g | %.3e | %.3e | %.2e%s |\n", ffnrt_weight_format_name(f), bpw, loss, dev, bound,
                   dev <= bound ? "" : " EXCEEDED");
            if (dev > bound)
                rc = 1;
        }
    }
    ffnrt_context_destroy(ctx);
    free_layer(&l);
    free(x);
    free(y_f32);
    return rc;
}
