/* The host C loop: the CPU reference for the activations and GLU kinds,
 * forward, fp32, one thread, a plain loop over libm (erfcf, expf, tanhf,
 * expm1f) left to the compiler's vectoriser. Built with a portable flag set
 * (CMakeLists.txt: -O3 -fno-math-errno for the build's default target, no
 * -march=native, no -ffast-math), which PEER_HOST_FLAGS names in the
 * results. Its limit is the same loop copying the bytes ("host-copy").
 * Devices that are CPUs (PoCL, lavapipe) share these cores: a row's note
 * gives each device's ffnrt speed over this loop's. For the FFN rows, a
 * blocked C SGEMM of each fp32 prefill layer's first projection. */
#include "bench_parts.h"
#include "bench_util.h"
#include "base/op_table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PEER_HOST_FLAGS
#define PEER_HOST_FLAGS "the build's own flags"
#endif

/* The ops of the op table (src/base/op_table.h), after the copy. */
#define HOST_ACT_(E, name, ...) H_##E,
#define HOST_GLU_(E, name, G) H_##E,
typedef enum host_op { H_COPY, FFNRT_ACTIVATIONS(HOST_ACT_) FFNRT_GLU_KINDS(HOST_GLU_) H_COUNT } host_op;
#define H_FIRST_GLU (1 + FFNRT_ACT_COUNT)
#undef HOST_ACT_
#undef HOST_GLU_

#define HOST_NAME_(E, name, ...) [H_##E] = #name,
static const char *const names[H_COUNT] = {[H_COPY] = "copy", FFNRT_ACTIVATIONS(HOST_NAME_) FFNRT_GLU_KINDS(HOST_NAME_)};
#undef HOST_NAME_

static inline float sigmoidf(float x)
{
    return 1.0f / (1.0f + expf(-x));
}
static inline float gelu(float x)
{
    return 0.5f * x * erfcf(-x * 0.70710678118654752f);
}
static inline float gelu_tanh(float x)
{
    float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}

/* One pass of op over n elements (value, slopes: GLU and PReLU operands);
 * 0 for an op the loop has no C form of (it is then left out). */
static int run(host_op op, const float *restrict x, const float *restrict value, const float *restrict slopes,
                float *restrict y, size_t n)
{
    switch (op) {
    case H_COPY: for (size_t i = 0; i < n; i++) y[i] = x[i]; break;
    case H_RELU: for (size_t i = 0; i < n; i++) y[i] = x[i] < 0 ? 0.0f : x[i]; break;
    case H_LEAKY_RELU: for (size_t i = 0; i < n; i++) y[i] = x[i] >= 0 ? x[i] : 0.01f * x[i]; break;
    case H_PRELU: for (size_t i = 0; i < n; i++) y[i] = x[i] >= 0 ? x[i] : slopes[i & 1023] * x[i]; break;
    case H_ELU: for (size_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : expm1f(x[i]); break;
    case H_GELU: for (size_t i = 0; i < n; i++) y[i] = gelu(x[i]); break;
    case H_GELU_TANH: for (size_t i = 0; i < n; i++) y[i] = gelu_tanh(x[i]); break;
    case H_SILU: case H_SWISH: for (size_t i = 0; i < n; i++) y[i] = x[i] * sigmoidf(x[i]); break;
    case H_SIGMOID: for (size_t i = 0; i < n; i++) y[i] = sigmoidf(x[i]); break;
    case H_TANH: for (size_t i = 0; i < n; i++) y[i] = tanhf(x[i]); break;
    case H_GLU: for (size_t i = 0; i < n; i++) y[i] = value[i] * sigmoidf(x[i]); break;
    case H_REGLU: for (size_t i = 0; i < n; i++) y[i] = value[i] * (x[i] < 0 ? 0.0f : x[i]); break;
    case H_GEGLU: for (size_t i = 0; i < n; i++) y[i] = value[i] * gelu(x[i]); break;
    case H_GEGLU_TANH: for (size_t i = 0; i < n; i++) y[i] = value[i] * gelu_tanh(x[i]); break;
    case H_SWIGLU: for (size_t i = 0; i < n; i++) y[i] = value[i] * x[i] * sigmoidf(x[i]); break;
    default: return 0;
    }
    return 1;
}

typedef struct host_arg {
    host_op op;
    const float *x, *value, *slopes;
    float *y;
    size_t n;
} host_arg;

static ffnrt_status host_call(void *p)
{
    host_arg *a = p;
    return run(a->op, a->x, a->value, a->slopes, a->y, a->n) ? FFNRT_OK : FFNRT_ERROR_UNSUPPORTED;
}

/* ffnrt's speed over this row's, on each device that ran the same row. */
static void note_devices(bench_row *peer, const bench_rows *rows, size_t end)
{
    size_t len = 0;
    peer->note[0] = 0;
    for (size_t i = 0; i < end; i++) {
        const bench_row *r = &rows->v[i];
        if (strcmp(r->group, "elementwise") != 0 || strcmp(r->op, peer->op) != 0 || strcmp(r->dir, "fwd") != 0 ||
            strcmp(r->dtype, "f32") != 0 || strcmp(r->shape, peer->shape) != 0 || !(r->median_ns > 0))
            continue;
        int w = snprintf(peer->note + len, sizeof peer->note - len, "%sffnrt %s %.2fx", len ? ", " : "", r->backend,
                         peer->median_ns / r->median_ns);
        if (w < 0 || (size_t)w >= sizeof peer->note - len)
            break;
        len += (size_t)w;
    }
}

/* y[m,n] = x[m,k] * w[n,k]^T, blocked for the caches: 4 rows of x against
 * 4 rows of w at a time over a k-panel, the inner loop a dot product the
 * vectoriser takes. The CPU reference for an FFN projection. */
static void host_sgemm(const float *restrict x, const float *restrict w, float *restrict y, int64_t m, int64_t n,
                       int64_t k)
{
    const int64_t kb = 256;
    for (int64_t i = 0; i < m * n; i++)
        y[i] = 0;
    for (int64_t k0 = 0; k0 < k; k0 += kb) {
        int64_t k1 = k0 + kb < k ? k0 + kb : k;
        for (int64_t i = 0; i < m; i += 4)
            for (int64_t j = 0; j < n; j += 4)
                for (int64_t ii = i; ii < i + 4 && ii < m; ii++)
                    for (int64_t jj = j; jj < j + 4 && jj < n; jj++) {
                        const float *a = x + ii * k, *b = w + jj * k;
                        float acc = 0;
                        for (int64_t kk = k0; kk < k1; kk++)
                            acc += a[kk] * b[kk];
                        y[ii * n + jj] += acc;
                    }
    }
}

typedef struct gemm_arg {
    const float *x, *w;
    float *y;
    int64_t m, n, k;
} gemm_arg;

static ffnrt_status gemm_call(void *p)
{
    gemm_arg *a = p;
    host_sgemm(a->x, a->w, a->y, a->m, a->n, a->k);
    return FFNRT_OK;
}

/* The first projection of each fp32 prefill FFN row the devices ran, on
 * the host; its note gives each device's whole-block GFLOP/s over it. */
static int host_gemm_rows(const bench_config *cfg, bench_rows *rows, size_t end)
{
    for (size_t i = 0; i < end; i++) {
        bench_row ffn = rows->v[i]; /* a copy: pushing may move the array */
        long long d = 0, h = 0;
        if (strcmp(ffn.group, "ffn") != 0 || strcmp(ffn.dtype, "f32") != 0 || strcmp(ffn.path, "fused") != 0 ||
            ffn.size <= 8 || sscanf(strchr(ffn.op, ' ') ? strchr(ffn.op, ' ') : "", " %lldx%lld", &d, &h) != 2)
            continue;
        int64_t m = (int64_t)ffn.size, n = strncmp(ffn.op, "swiglu", 6) == 0 ? 2 * h : h, k = d;
        char op[40];
        snprintf(op, sizeof op, "host-sgemm %lldx%lld", (long long)k, (long long)n);
        int seen = 0;
        for (size_t j = end; j < rows->n && !seen; j++)
            seen = strcmp(rows->v[j].op, op) == 0 && strcmp(rows->v[j].shape, ffn.shape) == 0;
        if (seen) /* measured for the other device already: add its note */
            continue;
        float *x = malloc((size_t)(m * k) * sizeof *x), *w = malloc((size_t)(n * k) * sizeof *w),
              *y = malloc((size_t)(m * n) * sizeof *y);
        if (!x || !w || !y) {
            free(x), free(w), free(y);
            return -1;
        }
        for (int64_t t = 0; t < m * k; t++)
            x[t] = (float)((int)(t % 17) - 8) * 0.01f;
        for (int64_t t = 0; t < n * k; t++)
            w[t] = (float)((int)(t % 13) - 6) * 0.01f;
        bench_row *r = bench_rows_push(rows);
        int rc = 0;
        if (!r) {
            rc = -1;
        } else {
            BENCH_SET(r->group, "peer");
            BENCH_SET(r->backend, "host");
            BENCH_SET(r->device, "host C loop (1 thread)");
            BENCH_SET(r->op, op);
            BENCH_SET(r->dir, "fwd");
            BENCH_SET(r->dtype, "f32");
            BENCH_SET(r->shape, ffn.shape);
            r->size = ffn.size;
            gemm_arg a = {x, w, y, m, n, k};
            bench_config c = *cfg;
            c.min_runs = 2; /* one projection takes a while on one core */
            if (bench_measure(NULL, gemm_call, &a, &c, r) != 0) {
                rows->n--;
                rc = -1;
            } else {
                r->rate = 2.0 * (double)m * (double)n * (double)k / r->median_ns;
                BENCH_SET(r->rate_unit, "GFLOP/s");
                size_t len = 0;
                for (size_t j = 0; j < end; j++) {
                    const bench_row *f = &rows->v[j];
                    double g = 0;
                    if (strcmp(f->group, "ffn") == 0 && strcmp(f->op, ffn.op) == 0 && strcmp(f->dtype, "f32") == 0 &&
                        strcmp(f->path, "fused") == 0 && strcmp(f->shape, ffn.shape) == 0 &&
                        sscanf(f->note, "%lf", &g) == 1 && len < sizeof r->note) {
                        int wr = snprintf(r->note + len, sizeof r->note - len, "%sffnrt %s block %.2fx", len ? ", " : "",
                                          f->backend, r->rate > 0 ? g / r->rate : 0);
                        len += wr > 0 ? (size_t)wr : 0;
                    }
                }
                bench_row_done(cfg, r);
            }
        }
        free(x), free(w), free(y);
        if (rc)
            return rc;
    }
    return 0;
}

int bench_part_host_peer(const bench_config *cfg, bench_meta *meta, bench_rows *rows)
{
    char peer[160];
    snprintf(peer, sizeof peer, "host-c: ok (C loop, 1 thread, %s %s)", "cc " __VERSION__, PEER_HOST_FLAGS);
    bench_meta_add_peer(meta, peer);
    if (!(cfg->directions & 1))
        return 0;
    int f32 = 0;
    for (int k = 0; k < cfg->ndtypes; k++)
        f32 |= cfg->dtypes[k] == FFNRT_DTYPE_F32;
    if (!f32)
        return 0;
    size_t end = rows->n;
    int rc = 0;
    /* quick: the first size only (the reference, not a curve) */
    for (int s = 0; s < (cfg->quick ? 1 : cfg->nsizes) && rc == 0; s++) {
        size_t n = cfg->sizes[s];
        float *x = malloc(n * sizeof *x), *value = malloc(n * sizeof *value), *y = malloc(n * sizeof *y);
        float slopes[1024];
        if (!x || !value || !y) {
            free(x), free(value), free(y);
            fprintf(stderr, "ffnrt bench: host peer: out of memory at %zu elements\n", n);
            return -1;
        }
        uint32_t seed = 12345u;
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1664525u + 1013904223u;
            x[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 20.0f;
            value[i] = ((float)(seed & 0xffff) / 65536.0f - 0.5f) * 20.0f;
            y[i] = 0;
        }
        for (int i = 0; i < 1024; i++)
            slopes[i] = 0.01f * (float)(i % 7 + 1);
        double copy_gbps = 0;
        for (int op = 0; op < H_COUNT && rc == 0; op++) {
            if (op != H_COPY && !bench_wants_op(cfg, names[op]))
                continue;
            if (!run((host_op)op, x, value, slopes, y, 0)) { /* no C form: say so, once */
                if (s == 0) {
                    char note[96];
                    snprintf(note, sizeof note, "host-c: no C loop for %s", names[op]);
                    bench_meta_add_peer(meta, note);
                }
                continue;
            }
            bench_row *r = bench_rows_push(rows);
            if (!r) {
                rc = -1;
                break;
            }
            BENCH_SET(r->group, op == H_COPY ? "limit" : "peer");
            BENCH_SET(r->backend, "host");
            BENCH_SET(r->device, "host C loop (1 thread)");
            BENCH_SET(r->op, op == H_COPY ? "host-copy" : names[op]);
            BENCH_SET(r->dir, "fwd");
            BENCH_SET(r->dtype, "f32");
            snprintf(r->shape, sizeof r->shape, "%zu", n);
            r->size = (double)n;
            host_arg a = {(host_op)op, x, value, slopes, y, n};
            if (bench_measure(NULL, host_call, &a, cfg, r) != 0) {
                rows->n--;
                rc = -1;
                break;
            }
            double bytes = (op >= H_FIRST_GLU ? 3.0 : 2.0) * 4.0 * (double)n;
            r->rate = bytes / r->median_ns;
            BENCH_SET(r->rate_unit, "GB/s");
            if (op == H_COPY)
                copy_gbps = r->rate;
            r->ratio = copy_gbps > 0 ? r->rate / copy_gbps : 0;
            BENCH_SET(r->ratio_to, "host-copy");
            if (op != H_COPY)
                note_devices(r, rows, end);
            bench_row_done(cfg, r);
        }
        free(x), free(value), free(y);
    }
    if (rc == 0)
        rc = host_gemm_rows(cfg, rows, end);
    return rc;
}
