/* The host C loop: the CPU reference for the activations and GLU kinds,
 * forward, fp32, one thread, a plain loop over libm (erfcf, tanhf, expm1f)
 * left to the compiler's vectoriser; the sigmoid family (sigmoid, SiLU,
 * Swish, GLU, SwiGLU) over an exp written to vectorise (vexpf below), as a
 * hand-vectorised CPU library would, its error against the double
 * reference measured and named in the row's note. Built with a portable flag set
 * (CMakeLists.txt: -O3 -fno-math-errno for the build's default target, no
 * -march=native, no -ffast-math), which PEER_HOST_FLAGS names in the
 * results. Its limit is the same loop copying the bytes ("host-copy").
 * Devices that are CPUs (PoCL, lavapipe) share these cores: a row's note
 * gives each device's ffnrt speed over this loop's. For the FFN rows, a
 * blocked C SGEMM of each fp32 prefill layer's first projection. */
#include "bench_parts.h"
#include "ffnrt_op_table.h"
#include "reference.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PEER_HOST_FLAGS
#define PEER_HOST_FLAGS "the build's own flags"
#endif

/* The ops of the op table (include/ffnrt_op_table.h), after the copy. */
#define HOST_ACT_(E, name, ...) H_##E,
#define HOST_GLU_(E, name, G) H_##E,
typedef enum host_op { H_COPY, FFNRT_ACTIVATIONS(HOST_ACT_) FFNRT_GLU_KINDS(HOST_GLU_) H_COUNT } host_op;
#define H_FIRST_GLU (1 + FFNRT_ACT_COUNT)
#undef HOST_ACT_
#undef HOST_GLU_

#define HOST_NAME_(E, name, ...) [H_##E] = #name,
static const char *const names[H_COUNT] = {[H_COPY] = "copy", FFNRT_ACTIVATIONS(HOST_NAME_) FFNRT_GLU_KINDS(HOST_NAME_)};
#undef HOST_NAME_

static inline float gelu(float x)
{
    return 0.5f * x * erfcf(-x * 0.70710678118654752f);
}
static inline float gelu_tanh(float x)
{
    float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}

/* The sigmoid family as a hand-vectorised CPU library writes it: GCC
 * vector extensions, 8 floats a step (two SSE registers on the default
 * target, one AVX register in the x86-64-v3 clone), selects instead of
 * branches. */
#pragma GCC diagnostic ignored "-Wpsabi" /* static functions: no ABI to keep */
typedef float vf8 __attribute__((vector_size(32)));
typedef int32_t vi8 __attribute__((vector_size(32)));

static inline vf8 vsel(vi8 m, vf8 a, vf8 b) /* m ? a : b, lane by lane (m is 0 or -1) */
{
    return (vf8)((m & (vi8)a) | (~m & (vi8)b));
}

/* e^-|x| = hi * scale, split so that a result below FLT_MIN rounds once, in
 * the caller's last product: -|x| = n ln2 + r with |r| <= ln2 / 2 (Cody and
 * Waite's two-part ln2), e^r by Cephes' degree-7 polynomial, 2^n as two
 * exponent factors. Past |x| = 150 (NaN too: the caller keeps NaN) e^-|x|
 * is 0.
 * Every test is an integer compare of the bits: GCC scalarises vector
 * float compares under the default -ftrapping-math. */
static inline vf8 vexp_neg_abs(vf8 x, vf8 *scale)
{
    vi8 a = (vi8)x & 0x7fffffff, big = a > 0x43160000; /* 0x43160000: 150.0f */
    vf8 t = -vsel(big, x * 0.0f + 150.0f, (vf8)a);
    vf8 n = (t * 1.44269504088896341f - 12582912.0f) + 12582912.0f; /* round to nearest */
    vf8 r = t - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    vf8 p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    vi8 ni = __builtin_convertvector(n, vi8), n1 = ni >> 1, n2 = ni - n1;
    *scale = (vf8)((n2 + 127) << 23);
    return (vf8)(~big & (vi8)(p * (vf8)((n1 + 127) << 23))); /* e^-150 * FLT_MAX is below half a subnormal */
}

/* sigmoid(x) times f, with f the factor SiLU and the gates add:
 * 1 / (1 + e^-x) at and above 0, e^x / (1 + e^x) below, so the negative
 * tail keeps its relative accuracy. */
static inline vf8 vsigmoid_times(vf8 x, vf8 f)
{
    vi8 neg = (vi8)x >> 31, nan = ((vi8)x & 0x7fffffff) > 0x7f800000;
    vf8 scale, hi = vexp_neg_abs(x, &scale);
    vf8 s = 1.0f / (1.0f + hi * scale);
    vf8 r = vsel(neg, ((f * hi) * s) * scale, f * s);
    return vsel(nan, x, r);
}

enum { VSIG, VSILU, VGLU, VSWIGLU };

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    defined(__ELF__)
/* Cloned for AVX2 + FMA and the default target, chosen at load time (no
 * -march flag): it runs on any x86-64 and uses the width the machine has.
 * An ELF ifunc: Windows' PE files have none, so there the default target
 * only. */
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
static void vsigmoid_loop(int kind, const float *restrict x, const float *restrict value, float *restrict y, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) { /* whole steps: fixed-size copies become vector loads */
        vf8 xv, vv = {0};
        memcpy(&xv, x + i, sizeof xv);
        if (value)
            memcpy(&vv, value + i, sizeof vv);
        vf8 f = kind == VSIG ? xv * 0.0f + 1.0f : kind == VSILU ? xv : kind == VGLU ? vv : vv * xv;
        vf8 r = vsigmoid_times(xv, f);
        memcpy(y + i, &r, sizeof r);
    }
    if (i < n) { /* the tail, through a zero-padded step */
        vf8 xv = {0}, vv = {0};
        memcpy(&xv, x + i, (n - i) * sizeof *x);
        if (value)
            memcpy(&vv, value + i, (n - i) * sizeof *value);
        vf8 f = kind == VSIG ? xv * 0.0f + 1.0f : kind == VSILU ? xv : kind == VGLU ? vv : vv * xv;
        vf8 r = vsigmoid_times(xv, f);
        memcpy(y + i, &r, (n - i) * sizeof *y);
    }
}

/* The sigmoid family over vsigmoid_loop; 0 for another op. */
static int run_sigmoid_family(int op, const float *restrict x, const float *restrict value, float *restrict y, size_t n)
{
    int kind = op == H_SIGMOID ? VSIG : op == H_SILU || op == H_SWISH ? VSILU : op == H_GLU ? VGLU
             : op == H_SWIGLU ? VSWIGLU : -1;
    if (kind < 0)
        return 0;
    vsigmoid_loop(kind, x, op == H_GLU || op == H_SWIGLU ? value : NULL, y, n);
    return 1;
}

/* The largest error of the vectorised loop for op (sigmoid or SiLU) in fp32
 * ULP against the double reference, over every 97th fp32 bit pattern (44
 * million inputs, both signs, subnormals and the tails; NaN and Inf left
 * out) and, separately, where the result is at least FLT_MIN. */
static void sigmoid_family_ulp(int op, double *all, double *normal)
{
    enum { CHUNK = 4096 };
    float in[CHUNK], out[CHUNK];
    *all = *normal = 0;
    uint64_t bits = 0;
    while (bits < 0x100000000ull) {
        int k = 0;
        for (; k < CHUNK && bits < 0x100000000ull; bits += 97) {
            uint32_t b = (uint32_t)bits;
            if ((b & 0x7f800000u) == 0x7f800000u)
                continue;
            memcpy(&in[k++], &b, sizeof b);
        }
        run_sigmoid_family(op, in, NULL, out, (size_t)k);
        for (int i = 0; i < k; i++) {
            double ref = op == H_SIGMOID ? ref_sigmoid(in[i]) : ref_silu(in[i]);
            double e = ulp_error_f32(out[i], ref);
            *all = e > *all ? e : *all;
            if (fabs(ref) >= 0x1p-126 && e > *normal)
                *normal = e;
        }
    }
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
    case H_SILU: case H_SWISH: case H_SIGMOID: case H_GLU: case H_SWIGLU:
        return run_sigmoid_family(op, x, value, y, n);
    case H_TANH: for (size_t i = 0; i < n; i++) y[i] = tanhf(x[i]); break;
    case H_REGLU: for (size_t i = 0; i < n; i++) y[i] = value[i] * (x[i] < 0 ? 0.0f : x[i]); break;
    case H_GEGLU: for (size_t i = 0; i < n; i++) y[i] = value[i] * gelu(x[i]); break;
    case H_GEGLU_TANH: for (size_t i = 0; i < n; i++) y[i] = value[i] * gelu_tanh(x[i]); break;
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
            if (op == H_SIGMOID || op == H_SILU || op == H_SWISH || op == H_GLU || op == H_SWIGLU) {
                static double ulp[2][2] = {{-1, -1}, {-1, -1}}; /* sigmoid, SiLU: all, normal results */
                int k = op == H_SIGMOID ? 0 : 1;
                if (ulp[k][0] < 0)
                    sigmoid_family_ulp(k ? H_SILU : H_SIGMOID, &ulp[k][0], &ulp[k][1]);
                size_t len = strlen(r->note);
                snprintf(r->note + len, sizeof r->note - len, "%svectorised exp: %s max %.1f ULP (%.1f where normal)",
                         len ? "; " : "", k ? "silu" : "sigmoid", ulp[k][0], ulp[k][1]);
            }
            bench_row_done(cfg, r);
        }
        free(x), free(value), free(y);
    }
    if (rc == 0)
        rc = host_gemm_rows(cfg, rows, end);
    return rc;
}
