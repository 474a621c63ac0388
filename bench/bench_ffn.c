/* The FFN rows of `ffnrt bench`: dense GELU 768 x 3072 (BERT-base), gated
 * SwiGLU 512 x 1376, 2048 x 5632 and 4096 x 14336, at tokens 1, 8, 64 and
 * 512, fp32 and fp16 storage, fused and unfused on the same weights.
 *
 * Each row reports device-time medians, GFLOP/s (ffnrt_ffn_cost_of's
 * count), the weights' bandwidth (weight bytes over time: the decode
 * limit), its ratio to a copy kernel of 64 MiB measured on the same device
 * in the same run, the fused/unfused speed ratio, and the GFLOP/s ratio to
 * the best rate any row reached on the device in this run. */
#include "bench_ffn.h"
#include "bench_util.h"
#include "peer_clblast.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct ffn_workload {
    const char *name;
    ffnrt_ffn_kind kind;
    int64_t d_model, hidden;
    int quick; /* part of --quick */
} ffn_workload;

static const ffn_workload workloads[] = {
    {"dense-gelu", FFNRT_FFN_DENSE, 768, 3072, 1},
    {"swiglu", FFNRT_FFN_GATED, 512, 1376, 1},
    {"swiglu", FFNRT_FFN_GATED, 2048, 5632, 0},
    {"swiglu", FFNRT_FFN_GATED, 4096, 14336, 0},
};
static const int64_t token_counts[] = {1, 8, 64, 512};
static const int64_t quick_tokens[] = {1, 64};

/* Tuning filters (environment): FFNRT_BENCH_FFN_SHAPES="768x3072,512x1376"
 * keeps those d_model x hidden workloads, FFNRT_BENCH_FFN_TOKENS="1,512"
 * those token counts, FFNRT_BENCH_FFN_DTYPES="f32" those dtypes. */
static int env_keeps(const char *var, const char *item)
{
    const char *list = getenv(var);
    if (!list || !*list)
        return 1;
    size_t n = strlen(item);
    for (const char *s = list; (s = strstr(s, item)) != NULL; s += n)
        if ((s == list || s[-1] == ',') && (s[n] == ',' || s[n] == 0))
            return 1;
    return 0;
}

typedef struct ffn_row {
    char label[64];
    size_t workload; /* index in workloads[] */
    int64_t tokens;
    ffnrt_dtype dtype;
    double fused_s, unfused_s;
    double gflops, weight_gbps;
} ffn_row;


#define MAX_RUNS 25

/* Median device time of forward(x) after a warm-up (which builds kernels);
 * runs until `repeats` or the time budget, at least 2. */
static double time_forward(ffnrt_context *ctx, ffnrt_ffn *layer, const ffnrt_tensor *x, ffnrt_tensor *y, int repeats,
                           double budget_s)
{
    double t[MAX_RUNS];
    if (ffnrt_ffn_forward(layer, x, y) != FFNRT_OK)
        return -1;
    int n = 0;
    double start = bench_now_s();
    while (n < MAX_RUNS && (n < 2 || (n < repeats && bench_now_s() - start < budget_s))) {
        double h0 = bench_now_s();
        if (ffnrt_ffn_forward(layer, x, y) != FFNRT_OK)
            return -1;
        uint64_t ns = 0;
        ffnrt_context_last_op_time(ctx, &ns);
        t[n++] = ns ? 1e-9 * (double)ns : bench_now_s() - h0;
    }
    qsort(t, (size_t)n, sizeof t[0], bench_cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static double copy_gbps(ffnrt_context *ctx, size_t elements, int repeats)
{
    int64_t shape = (int64_t)elements;
    ffnrt_tensor *a = NULL, *b = NULL;
    double best = 0, t[MAX_RUNS];
    int n = 0;
    if (ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &shape, &a) == FFNRT_OK &&
        ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &shape, &b) == FFNRT_OK && ffnrt_copy(ctx, a, b) == FFNRT_OK) {
        for (; n < repeats && n < MAX_RUNS; n++) {
            uint64_t ns = 0;
            if (ffnrt_copy(ctx, a, b) != FFNRT_OK || ffnrt_context_last_op_time(ctx, &ns) != FFNRT_OK || !ns)
                break;
            t[n] = 1e-9 * (double)ns;
        }
        if (n) {
            qsort(t, (size_t)n, sizeof t[0], bench_cmp_double);
            best = 2.0 * 4.0 * (double)elements / t[n / 2] * 1e-9;
        }
    }
    ffnrt_tensor_destroy(a);
    ffnrt_tensor_destroy(b);
    return best;
}

/* Random weights in [-s, s], s = 1/sqrt(fan-in), in the dtype. */
static ffnrt_tensor *random_tensor(ffnrt_context *ctx, ffnrt_dtype dtype, int64_t rows, int64_t cols, uint32_t seed)
{
    int64_t shape[2] = {rows, cols};
    ffnrt_tensor *t = NULL;
    if (ffnrt_tensor_create(ctx, dtype, cols ? 2 : 1, shape, &t) != FFNRT_OK)
        return NULL;
    size_t n = ffnrt_tensor_numel(t);
    float *v = malloc(n * sizeof *v);
    uint16_t *bits = malloc(n * sizeof *bits);
    float scale = 1.0f / sqrtf((float)(cols ? cols : 1));
    ffnrt_status st = FFNRT_ERROR_OUT_OF_HOST_MEMORY;
    if (v && bits) {
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1664525u + 1013904223u;
            v[i] = ((float)(seed >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
        }
        if (dtype == FFNRT_DTYPE_F16) {
            ffnrt_f32_to_f16_array(v, bits, n);
            st = ffnrt_tensor_write(t, bits, n * 2);
        } else {
            st = ffnrt_tensor_write(t, v, n * 4);
        }
    }
    free(v);
    free(bits);
    if (st != FFNRT_OK) {
        ffnrt_tensor_destroy(t);
        return NULL;
    }
    return t;
}

/* Runs every token count of one workload and dtype; appends rows. */
static int bench_workload(ffnrt_context *ctx, const ffn_workload *w, ffnrt_dtype dtype, const bench_ffn_options *o,
                          ffn_row *rows, size_t *nrows)
{
    int gated = w->kind == FFNRT_FFN_GATED;
    ffnrt_ffn_weight_tensors wt = {0};
    ffnrt_tensor *up = random_tensor(ctx, dtype, gated ? 2 * w->hidden : w->hidden, w->d_model, 1);
    ffnrt_tensor *down = random_tensor(ctx, dtype, w->d_model, w->hidden, 2);
    ffnrt_ffn *layer[2] = {NULL, NULL};
    int rc = 0;
    if (!up || !down) {
        fprintf(stderr, "ffnrt bench: %s %lldx%lld: %s\n", w->name, (long long)w->d_model, (long long)w->hidden,
                ffnrt_last_error_message());
        rc = -1;
        goto done;
    }
    if (gated)
        wt.w_gate_value = up; /* stacked, as Phi-3 stores them */
    else
        wt.w_in = up;
    wt.w_out = down;
    for (int p = 0; p < 2; p++) {
        ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(w->kind, w->d_model, w->hidden);
        desc.dtype = dtype;
        desc.path = p ? FFNRT_FFN_PATH_UNFUSED : FFNRT_FFN_PATH_FUSED;
        if (ffnrt_ffn_create_from_tensors(ctx, &desc, &wt, &layer[p]) != FFNRT_OK) {
            fprintf(stderr, "ffnrt bench: %s\n", ffnrt_last_error_message());
            rc = -1;
            goto done;
        }
    }
    const int64_t *tokens = o->quick ? quick_tokens : token_counts;
    size_t count = o->quick ? sizeof quick_tokens / sizeof quick_tokens[0] : sizeof token_counts / sizeof token_counts[0];
    for (size_t i = 0; i < count && rc == 0; i++) {
        char tok[24];
        snprintf(tok, sizeof tok, "%lld", (long long)tokens[i]);
        if (!env_keeps("FFNRT_BENCH_FFN_TOKENS", tok))
            continue;
        ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(w->kind, w->d_model, w->hidden);
        desc.dtype = dtype;
        ffnrt_ffn_cost cost;
        ffnrt_ffn_cost_of(&desc, tokens[i], FFNRT_FFN_PATH_FUSED, &cost);
        ffnrt_tensor *x = random_tensor(ctx, dtype, tokens[i], w->d_model, 3), *y = NULL;
        int64_t shape[2] = {tokens[i], w->d_model};
        if (!x || ffnrt_tensor_create(ctx, dtype, 2, shape, &y) != FFNRT_OK) {
            rc = -1;
        } else {
            ffn_row *r = &rows[(*nrows)++];
            snprintf(r->label, sizeof r->label, "%s %lldx%lld", w->name, (long long)w->d_model, (long long)w->hidden);
            r->workload = (size_t)(w - workloads);
            r->tokens = tokens[i];
            r->dtype = dtype;
            /* Long rows (the 8B layer's prefill on lavapipe) get fewer runs. */
            int repeats = cost.flops > 20e9 ? 2 : o->repeats;
            r->fused_s = time_forward(ctx, layer[0], x, y, repeats, o->budget_s);
            r->unfused_s = r->fused_s > 0 ? time_forward(ctx, layer[1], x, y, repeats, o->budget_s) : -1;
            if (r->fused_s <= 0 || r->unfused_s <= 0) {
                fprintf(stderr, "ffnrt bench: %s: %s\n", r->label, ffnrt_last_error_message());
                rc = -1;
            } else {
                r->gflops = (double)cost.flops / r->fused_s * 1e-9;
                r->weight_gbps = (double)cost.weight_bytes / r->fused_s * 1e-9;
            }
        }
        ffnrt_tensor_destroy(x);
        ffnrt_tensor_destroy(y);
    }
done:
    ffnrt_ffn_destroy(layer[0]);
    ffnrt_ffn_destroy(layer[1]);
    ffnrt_tensor_destroy(up);
    ffnrt_tensor_destroy(down);
    return rc;
}

int ffnrt_bench_ffn(ffnrt_context *ctx, const bench_ffn_options *o, FILE *csv)
{
    ffnrt_device_info info;
    ffnrt_context_get_device_info(ctx, &info);
    size_t copy_elems = o->quick ? (4u << 20) : (16u << 20);
    double copy = copy_gbps(ctx, copy_elems, o->quick ? 5 : 11);
    ffn_row rows[64];
    size_t nrows = 0;
    int rc = 0;
    static const ffnrt_dtype dtypes[] = {FFNRT_DTYPE_F32, FFNRT_DTYPE_F16};
    for (size_t wi = 0; wi < sizeof workloads / sizeof workloads[0]; wi++) {
        if (o->quick && !workloads[wi].quick)
            continue;
        char shape[48];
        snprintf(shape, sizeof shape, "%lldx%lld", (long long)workloads[wi].d_model, (long long)workloads[wi].hidden);
        if (!env_keeps("FFNRT_BENCH_FFN_SHAPES", shape))
            continue;
        for (size_t di = 0; di < 2 && rc == 0; di++) {
            if (o->quick && dtypes[di] != FFNRT_DTYPE_F32 && wi > 0)
                continue; /* quick: fp16 on the first workload only */
            if (!env_keeps("FFNRT_BENCH_FFN_DTYPES", ffnrt_dtype_name(dtypes[di])))
                continue;
            rc = bench_workload(ctx, &workloads[wi], dtypes[di], o, rows, &nrows);
        }
    }
    double best = 0;
    for (size_t i = 0; i < nrows; i++)
        if (rows[i].gflops > best)
            best = rows[i].gflops;
    printf("\nFFN, %s (%s): copy kernel %.2f GB/s (%zu MiB); times are device medians of the whole block;\n"
           "w_GB/s is weight bytes over the fused time, x_copy its ratio to the copy kernel, f/u the fused speed over "
           "the unfused, x_best the GFLOP/s over the best of this device's rows\n",
           info.name, ffnrt_backend_name(info.backend), copy, copy_elems * 4 >> 20);
    printf("%-22s %-5s %6s %11s %11s %9s %8s %7s %6s %7s\n", "workload", "dtype", "tokens", "fused_ms", "unfused_ms",
           "GFLOP/s", "w_GB/s", "x_copy", "f/u", "x_best");
    for (size_t i = 0; i < nrows; i++) {
        const ffn_row *r = &rows[i];
        double fu = r->unfused_s / r->fused_s, xb = best > 0 ? r->gflops / best : 0, xc = copy > 0 ? r->weight_gbps / copy : 0;
        printf("%-22s %-5s %6lld %11.3f %11.3f %9.2f %8.2f %7.2f %6.2f %7.2f\n", r->label, ffnrt_dtype_name(r->dtype),
               (long long)r->tokens, r->fused_s * 1e3, r->unfused_s * 1e3, r->gflops, r->weight_gbps, xc, fu, xb);
        if (csv)
            fprintf(csv, "\"%s\",%s,\"%s\",%s,%lld,%.9g,%.9g,%.4f,%.4f,%.4f,%.4f,%.4f\n", info.name,
                    ffnrt_backend_name(info.backend), r->label, ffnrt_dtype_name(r->dtype), (long long)r->tokens,
                    r->fused_s, r->unfused_s, r->gflops, r->weight_gbps, xc, fu, xb);
    }
    /* The peer: CLBlast's SGEMM on the same OpenCL device for the first
     * projection of each fp32 prefill row, against ffnrt's whole block. */
    if (info.backend == FFNRT_BACKEND_OPENCL && rc == 0) {
        printf("\npeer: CLBlast SGEMM of the first projection (tokens x d_model times W^T) on %s\n", info.name);
        for (size_t i = 0; i < nrows; i++) {
            const ffn_row *r = &rows[i];
            if (r->dtype != FFNRT_DTYPE_F32 || r->tokens < 64)
                continue;
            const ffn_workload *w = &workloads[r->workload];
            double peer = 0;
            char why[160];
            int64_t n_out = w->kind == FFNRT_FFN_GATED ? 2 * w->hidden : w->hidden;
            if (peer_clblast_sgemm(info.name, r->tokens, n_out, w->d_model, o->quick ? 3 : 5, &peer, why,
                                   sizeof why) != 0) {
                printf("  CLBlast: %s\n", why);
                break;
            }
            printf("  %-22s tokens %4lld: CLBlast %7.2f GFLOP/s, ffnrt block %7.2f GFLOP/s, ffnrt/CLBlast %.2f\n",
                   r->label, (long long)r->tokens, peer, r->gflops, r->gflops / peer);
        }
    }
    fflush(stdout);
    return rc;
}
