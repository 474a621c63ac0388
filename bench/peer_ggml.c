/* ggml's Vulkan backend as the bench's peer for gated FFN layers
 * (peer_ggml.h): the SwiGLU layer y = Wd·(silu(Wg·x) ⊙ Wu·x) as a ggml
 * graph (two mul_mat, ggml_swiglu_split, one mul_mat, as llama.cpp builds
 * its FFN), weights in one of the formats both sides have, timed as ggml
 * times its backends (test-backend-ops --perf): host time of
 * ggml_backend_graph_compute, after warm-up runs, median of the runs.
 *
 * Two programs in one file, as bench_start.c: built with -DPEER_GGML_MAIN
 * it is the bench_ggml helper, which links ggml and the lab's clock, never
 * ffnrt (and is built only when CMake finds a ggml install); without, it
 * is the client in the ffnrt command, which runs the helper in a fresh
 * process (ggml aborts on what it cannot do, and keeps its Vulkan instance
 * for the process's life) and turns its lines into rows. The helper's
 * lines, on stdout:
 *   ggml VERSION COMMIT device DESCRIPTION
 *   row FORMAT DxG T runs N median_ns M min_ns A max_ns B weight_bytes W relerr E
 *   skip FORMAT DxG T REASON
 * relerr: ||y - ref|| / ||ref|| of the first token against a double
 * reference of the dequantized weights, so a wrong result is never timed
 * silently. With --stack MODEL.gguf, the model's whole FFN stack instead
 * (bench_stack.c's rows: every layer's RMSNorm with the file's weights and
 * epsilon, the gated FFN, the residual, as llama.cpp builds them, one graph
 * a token count), the weights read by ggml's own gguf reader:
 *   stack T runs N median_ns M min_ns A max_ns B layers L relerr E
 *   skip stack T REASON
 * relerr there: ||x - ref|| / ||ref - x0|| of the first token, against the
 * change the stack makes to its input x0, in double from the weights as
 * ggml's to_float gives them. */
#include "lab.h"

#ifdef PEER_GGML_MAIN

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-vulkan.h>
#include <ggml.h>
#include <gguf.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The weight formats of the peer, by ffnrt's names (ffnrt_dtype_name,
 * ffnrt_weight_format_name) with their ggml type: a format is one row. */
static const struct {
    const char *name;
    enum ggml_type type;
} formats[] = {
    {"f32", GGML_TYPE_F32},   {"f16", GGML_TYPE_F16},   {"bf16", GGML_TYPE_BF16}, {"q8_0", GGML_TYPE_Q8_0},
    {"q4_0", GGML_TYPE_Q4_0}, {"q4_1", GGML_TYPE_Q4_1}, {"q4_k", GGML_TYPE_Q4_K}, {"q6_k", GGML_TYPE_Q6_K},
};

typedef struct layer {
    char format[16];
    enum ggml_type type;
    int known;
    int64_t d, g, t;
} layer;

/* One format and shape's weights on the device, kept across token counts,
 * and the reference output of the first token. */
typedef struct weights {
    struct ggml_context *ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor *wg, *wu, *wd;
    enum ggml_type type;
    int64_t d, g;
    double *ref; /* [d] */
} weights;

static int verbose;
static int prec_f32; /* --prec f32: ggml_mul_mat_set_prec(GGML_PREC_F32) on every product */

static void log_cb(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    if (verbose || level >= GGML_LOG_LEVEL_WARN)
        fputs(text, stderr);
}

/* Values in [-s, s], s = 1/sqrt(fan-in), as the bench's ffnrt layers. */
static void fill_random(float *v, size_t n, float scale, uint32_t *seed)
{
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        v[i] = ((float)(*seed >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
    }
}

/* The first token's input: the same for every token count. */
static void first_token(float *x, int64_t d)
{
    uint32_t seed = 3;
    fill_random(x, (size_t)d, 1.0f / sqrtf((float)d), &seed);
}

/* Fills w [rows, k] chunk by chunk: random fp32, quantized by ggml, copied
 * to the device; out[r] = dequantized row r · in, in double. */
static int fill_matrix(struct ggml_tensor *w, int64_t rows, int64_t k, uint32_t seed, const double *in, double *out)
{
    const int64_t chunk = 64;
    enum ggml_type type = w->type;
    size_t row_bytes = ggml_row_size(type, k);
    float *f = malloc((size_t)(chunk * k) * sizeof *f), *deq = malloc((size_t)(chunk * k) * sizeof *deq);
    void *q = malloc((size_t)chunk * row_bytes);
    const struct ggml_type_traits *tr = ggml_get_type_traits(type);
    int rc = f && deq && q ? 0 : -1;
    for (int64_t r0 = 0; r0 < rows && rc == 0; r0 += chunk) {
        int64_t nr = rows - r0 < chunk ? rows - r0 : chunk;
        fill_random(f, (size_t)(nr * k), 1.0f / sqrtf((float)k), &seed);
        size_t bytes = ggml_quantize_chunk(type, f, q, 0, nr, k, NULL);
        ggml_backend_tensor_set(w, q, (size_t)r0 * row_bytes, bytes);
        if (type == GGML_TYPE_F32)
            memcpy(deq, f, (size_t)(nr * k) * sizeof *deq);
        else
            tr->to_float(q, deq, nr * k);
        for (int64_t r = 0; r < nr; r++) {
            double s = 0;
            for (int64_t j = 0; j < k; j++)
                s += (double)deq[r * k + j] * in[j];
            out[r0 + r] = s;
        }
    }
    free(f);
    free(deq);
    free(q);
    return rc;
}

/* Device memory is never freed before the process exits. On lavapipe 22.3
 * (Debian 12's Mesa), freeing a ggml buffer that earlier graphs used
 * corrupts the heap a few graphs later (valgrind: its queue thread frees a
 * buffer's memory twice), even after ggml_backend_synchronize; with no
 * buffer freed, every run here passed. So a layer's weights and graph
 * buffers are dropped, not freed, and the client runs one helper per
 * format and shape, which bounds what a process holds. */
static void weights_drop(weights *w)
{
    free(w->ref);
    memset(w, 0, sizeof *w);
}

/* Gate and up [g, d], down [d, g] (ggml: ne0 = d is the input dimension,
 * nn.Linear's layout), on the backend. 0, or -1 with why. */
static int weights_make(ggml_backend_t backend, const layer *l, weights *w, char *why, size_t why_len)
{
    struct ggml_init_params p = {4 * ggml_tensor_overhead(), NULL, true};
    memset(w, 0, sizeof *w);
    w->ctx = ggml_init(p);
    w->type = l->type;
    w->d = l->d;
    w->g = l->g;
    w->wg = ggml_new_tensor_2d(w->ctx, l->type, l->d, l->g);
    w->wu = ggml_new_tensor_2d(w->ctx, l->type, l->d, l->g);
    w->wd = ggml_new_tensor_2d(w->ctx, l->type, l->g, l->d);
    w->buf = ggml_backend_alloc_ctx_tensors(w->ctx, backend);
    if (!w->buf) {
        snprintf(why, why_len, "ggml could not allocate the weights on the device");
        return -1;
    }
    double *x = malloc((size_t)l->d * sizeof *x), *gate = malloc((size_t)l->g * sizeof *gate),
           *up = malloc((size_t)l->g * sizeof *up);
    float *xf = malloc((size_t)l->d * sizeof *xf);
    w->ref = malloc((size_t)l->d * sizeof *w->ref);
    int rc = -1;
    if (x && gate && up && xf && w->ref) {
        first_token(xf, l->d);
        for (int64_t i = 0; i < l->d; i++)
            x[i] = xf[i];
        rc = fill_matrix(w->wg, l->g, l->d, 1, x, gate);
        if (rc == 0)
            rc = fill_matrix(w->wu, l->g, l->d, 2, x, up);
        for (int64_t i = 0; i < l->g && rc == 0; i++) /* the hidden activation: silu(gate) * up */
            gate[i] = gate[i] / (1.0 + exp(-gate[i])) * up[i];
        if (rc == 0)
            rc = fill_matrix(w->wd, l->d, l->g, 4, gate, w->ref);
    }
    if (rc != 0)
        snprintf(why, why_len, "out of host memory");
    free(x);
    free(gate);
    free(up);
    free(xf);
    return rc;
}

#define MAX_RUNS 64

/* Gets graph gf ready to run: every node supported by the backend (its
 * size said: ggml-vulkan refuses a tensor past the device's range), the
 * host buffers there (host_ok), the input's device buffer (xbuf), the
 * graph's activations allocated. Else why, in why. */
static void graph_ready(ggml_backend_t backend, struct ggml_cgraph *gf, int host_ok, ggml_backend_buffer_t xbuf,
                        char *why, size_t why_len)
{
    for (int i = 0; i < ggml_graph_n_nodes(gf) && !why[0]; i++) {
        struct ggml_tensor *node = ggml_graph_node(gf, i);
        if (!ggml_backend_supports_op(backend, node))
            snprintf(why, why_len, "ggml's %s does not support %s of %s [%lld, %lld] (%.0f MiB) here",
                     ggml_backend_name(backend), ggml_op_desc(node), ggml_type_name(node->src[0]->type),
                     (long long)node->src[0]->ne[1], (long long)node->src[0]->ne[0],
                     (double)ggml_nbytes(node->src[0]) / 1048576.0);
    }
    if (!why[0] && !host_ok)
        snprintf(why, why_len, "out of host memory");
    if (!why[0] && !xbuf)
        snprintf(why, why_len, "ggml could not allocate the input on the device");
    /* The allocator and its buffers stay until the process exits: see
     * weights_drop. */
    if (!why[0] && !ggml_gallocr_alloc_graph(ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend)), gf))
        snprintf(why, why_len, "ggml could not allocate the graph's activations");
}

/* ||y - ref|| / ||ref - base|| over n values (base NULL: / ||ref||). */
static double rel_error(const float *y, const double *ref, const double *base, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double r = ref[i] - (base ? base[i] : 0);
        num += (y[i] - ref[i]) * (y[i] - ref[i]);
        den += r * r;
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Times gf as ggml times its backends (test-backend-ops --perf): warm-up
 * runs (the first builds ggml's pipelines; a graph whose run takes past
 * the budget warms up twice), then host times of ggml_backend_graph_compute
 * until max_runs, or the budget once min_runs are done. The runs in times,
 * their count returned; why set on a failure. */
static int time_graph(ggml_backend_t backend, struct ggml_cgraph *gf, int warmup, int min_runs, int max_runs,
                      double budget, double *times, char *why, size_t why_len)
{
    double spent = 0;
    int runs = 0;
    for (int i = 0; i < warmup && !why[0] && !(i >= 2 && spent > budget); i++) {
        double t0 = lab_now_s();
        if (ggml_backend_graph_compute(backend, gf) != GGML_STATUS_SUCCESS)
            snprintf(why, why_len, "ggml_backend_graph_compute failed");
        if (i > 0)
            spent += lab_now_s() - t0;
    }
    spent = 0;
    while (!why[0] && runs < max_runs && (runs < min_runs || spent < budget)) {
        double t0 = lab_now_s();
        if (ggml_backend_graph_compute(backend, gf) != GGML_STATUS_SUCCESS)
            snprintf(why, why_len, "ggml_backend_graph_compute failed");
        times[runs] = lab_now_s() - t0;
        spent += times[runs++];
    }
    return runs;
}

/* Builds the layer's graph over w, checks that the backend supports every
 * node, times it and checks the first token. Prints its line. */
static void run_layer(ggml_backend_t backend, const layer *l, const weights *w, int warmup, int min_runs,
                      int max_runs, double budget)
{
    char why[200] = "";
    struct ggml_init_params p = {8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true};
    struct ggml_init_params px = {ggml_tensor_overhead(), NULL, true};
    struct ggml_context *ctx = ggml_init(p), *xctx = ggml_init(px);
    /* x in a buffer of its own, as the weights: the graph allocator would
     * give its memory to a later node (y), and every run after the first
     * would read that node's values. */
    struct ggml_tensor *x = ggml_new_tensor_2d(xctx, GGML_TYPE_F32, l->d, l->t);
    ggml_backend_buffer_t xbuf = ggml_backend_alloc_ctx_tensors(xctx, backend);
    struct ggml_tensor *gate = ggml_mul_mat(ctx, w->wg, x), *up = ggml_mul_mat(ctx, w->wu, x);
    struct ggml_tensor *h = ggml_swiglu_split(ctx, gate, up);
    struct ggml_tensor *y = ggml_mul_mat(ctx, w->wd, h);
    if (prec_f32) { /* ggml's default lets a device with fp16 accumulate products in fp16 */
        /* Deprecated in 0.25 (ggml_prec_set_acc), but older ggml has only this. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        ggml_mul_mat_set_prec(gate, GGML_PREC_F32);
        ggml_mul_mat_set_prec(up, GGML_PREC_F32);
        ggml_mul_mat_set_prec(y, GGML_PREC_F32);
#pragma GCC diagnostic pop
    }
    ggml_set_output(y);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, y);
    float *xv = malloc((size_t)(l->d * l->t) * sizeof *xv), *yv = malloc((size_t)l->d * sizeof *yv);
    double times[MAX_RUNS];
    int runs = 0;
    graph_ready(backend, gf, xv && yv, xbuf, why, sizeof why);
    if (!why[0]) {
        first_token(xv, l->d);
        uint32_t seed = 5;
        fill_random(xv + l->d, (size_t)(l->d * (l->t - 1)), 1.0f / sqrtf((float)l->d), &seed);
        ggml_backend_tensor_set(x, xv, 0, ggml_nbytes(x));
        runs = time_graph(backend, gf, warmup, min_runs, max_runs, budget, times, why, sizeof why);
    }
    if (!why[0]) {
        ggml_backend_tensor_get(y, yv, 0, (size_t)l->d * sizeof *yv); /* the first token */
        double median = lab_median(times, runs); /* sorts: times[0] and [runs - 1] are the extremes */
        size_t bytes = ggml_nbytes(w->wg) + ggml_nbytes(w->wu) + ggml_nbytes(w->wd);
        printf("row %s %lldx%lld %lld runs %d median_ns %.0f min_ns %.0f max_ns %.0f weight_bytes %zu relerr %.3g\n",
               l->format, (long long)l->d, (long long)l->g, (long long)l->t, runs, median * 1e9, times[0] * 1e9,
               times[runs - 1] * 1e9, bytes, rel_error(yv, w->ref, NULL, l->d));
    } else {
        printf("skip %s %lldx%lld %lld %s\n", l->format, (long long)l->d, (long long)l->g, (long long)l->t, why);
    }
    fflush(stdout);
    /* The graph's device buffers (galloc's, xbuf) and their contexts stay
     * until the process exits: see weights_drop. */
    ggml_backend_synchronize(backend);
    free(xv);
    free(yv);
}

/* "q4_0:576x1536:1" */
static int parse_layer(const char *s, layer *l)
{
    long long d, g, t;
    char fmt[16];
    if (sscanf(s, "%15[^:]:%lldx%lld:%lld", fmt, &d, &g, &t) != 4 || d < 1 || g < 1 || t < 1 || d > (1 << 20) ||
        g > (1 << 20) || t > 65536)
        return -1;
    memset(l, 0, sizeof *l);
    snprintf(l->format, sizeof l->format, "%s", fmt);
    l->d = d, l->g = g, l->t = t;
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (strcmp(formats[i].name, fmt) == 0)
            l->type = formats[i].type, l->known = 1;
    return 0;
}

/* ---------------------------------------------- a GGUF model's FFN stack */

/* A layer's FFN tensors, blk.N.NAME.weight: the norm [d], gate and up
 * [d, g] (ne0 = d, the input dimension), down [g, d]. */
enum { ST_NORM, ST_GATE, ST_UP, ST_DOWN, ST_TENSORS };
static const char *const stack_names[ST_TENSORS] = {"ffn_norm", "ffn_gate", "ffn_up", "ffn_down"};

/* Every FFN layer of a model on the backend, and the double reference of
 * the first token through all of them. */
typedef struct stack {
    struct ggml_context *ctx; /* the layers' tensors, in one backend buffer */
    struct ggml_tensor *(*t)[ST_TENSORS];
    int64_t layers, d, g;
    float eps;
    double *x0, *ref; /* [d]: the first token in, and out of the reference */
} stack;

/* The stack's input, token after token, as ffnrt's stack rows
 * (bench_stack.c): uniform in [-1.7, 1.7], about a residual stream's
 * scale, the first token the same at every token count. */
static void stack_input(float *x, int64_t n)
{
    uint32_t seed = 7;
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 3.4f;
    }
}

/* One layer of the reference in double, from the layer's weights as
 * floats (w, ST_ order): x <- x + down(silu(gate(n)) * up(n)), n = x /
 * sqrt(mean(x^2) + eps) * norm, as ggml's rms_norm and llama.cpp's block.
 * xn [d] and h [g] are scratch. */
static void stack_ref_layer(double *x, float *const w[ST_TENSORS], int64_t d, int64_t g, double eps, double *xn,
                            double *h)
{
    double ss = 0;
    for (int64_t i = 0; i < d; i++)
        ss += x[i] * x[i];
    double r = 1.0 / sqrt(ss / (double)d + eps);
    for (int64_t i = 0; i < d; i++)
        xn[i] = x[i] * r * w[ST_NORM][i];
    for (int64_t j = 0; j < g; j++) {
        const float *gr = w[ST_GATE] + j * d, *ur = w[ST_UP] + j * d;
        double a = 0, b = 0;
        for (int64_t i = 0; i < d; i++)
            a += gr[i] * xn[i], b += ur[i] * xn[i];
        h[j] = a / (1.0 + exp(-a)) * b;
    }
    for (int64_t i = 0; i < d; i++) {
        const float *dr = w[ST_DOWN] + i * g;
        double y = 0;
        for (int64_t j = 0; j < g; j++)
            y += dr[j] * h[j];
        x[i] += y;
    }
}

/* The layers' tensors found in the file's metadata (meta: gguf's no_alloc
 * context), their shapes checked, described in s->ctx. 0, or -1 with why. */
static int stack_tensors(struct ggml_context *meta, stack *s, char *why, size_t why_len)
{
    for (int64_t l = 0; l < s->layers; l++)
        for (int k = 0; k < ST_TENSORS; k++) {
            char name[GGML_MAX_NAME];
            snprintf(name, sizeof name, "blk.%lld.%s.weight", (long long)l, stack_names[k]);
            struct ggml_tensor *m = ggml_get_tensor(meta, name);
            if (!m) {
                snprintf(why, why_len, "no tensor %s", name);
                return -1;
            }
            if (l == 0 && k == ST_NORM)
                s->d = m->ne[0];
            if (l == 0 && k == ST_GATE)
                s->g = m->ne[1];
            int64_t in = k == ST_DOWN ? s->g : s->d, out = k == ST_NORM ? 1 : k == ST_DOWN ? s->d : s->g;
            if (m->ne[0] != in || m->ne[1] != out || m->ne[2] != 1 || m->ne[3] != 1) {
                snprintf(why, why_len, "%s is [%lld, %lld], not [%lld, %lld] as layer 0's", name, (long long)m->ne[1],
                         (long long)m->ne[0], (long long)out, (long long)in);
                return -1;
            }
            if (m->type != GGML_TYPE_F32 && !ggml_get_type_traits(m->type)->to_float) {
                snprintf(why, why_len, "%s: ggml has no to_float for %s", name, ggml_type_name(m->type));
                return -1;
            }
            s->t[l][k] = ggml_dup_tensor(s->ctx, m);
            ggml_set_name(s->t[l][k], name);
        }
    return 0;
}

/* Reads the layers' bytes from the file onto the backend, and runs the
 * reference over them as floats (ggml's to_float), layer after layer. */
static int stack_fill(const char *path, struct gguf_context *gg, stack *s, char *why, size_t why_len)
{
    size_t most = 0;
    for (int k = 0; k < ST_TENSORS; k++)
        if (ggml_nbytes(s->t[0][k]) > most)
            most = ggml_nbytes(s->t[0][k]);
    FILE *f = fopen(path, "rb");
    void *bytes = malloc(most);
    float *w[ST_TENSORS] = {NULL}, *x0 = malloc((size_t)s->d * sizeof *x0);
    double *xn = malloc((size_t)s->d * sizeof *xn), *h = malloc((size_t)s->g * sizeof *h);
    s->x0 = malloc((size_t)s->d * sizeof *s->x0);
    s->ref = malloc((size_t)s->d * sizeof *s->ref);
    int rc = f && bytes && x0 && xn && h && s->x0 && s->ref ? 0 : -1;
    for (int k = 0; k < ST_TENSORS && rc == 0; k++)
        if (!(w[k] = malloc((size_t)ggml_nelements(s->t[0][k]) * sizeof *w[k])))
            rc = -1;
    if (rc != 0)
        snprintf(why, why_len, f ? "out of host memory" : "cannot open the file");
    if (rc == 0) {
        stack_input(x0, s->d);
        for (int64_t i = 0; i < s->d; i++)
            s->x0[i] = s->ref[i] = x0[i];
    }
    for (int64_t l = 0; l < s->layers && rc == 0; l++) {
        for (int k = 0; k < ST_TENSORS && rc == 0; k++) {
            struct ggml_tensor *t = s->t[l][k];
            size_t n = ggml_nbytes(t);
            int64_t id = gguf_find_tensor(gg, ggml_get_name(t));
            off_t at = (off_t)(gguf_get_data_offset(gg) + gguf_get_tensor_offset(gg, id));
            if (fseeko(f, at, SEEK_SET) != 0 || fread(bytes, 1, n, f) != n) {
                snprintf(why, why_len, "cannot read %s from the file", ggml_get_name(t));
                rc = -1;
                break;
            }
            ggml_backend_tensor_set(t, bytes, 0, n);
            if (t->type == GGML_TYPE_F32)
                memcpy(w[k], bytes, n);
            else
                ggml_get_type_traits(t->type)->to_float(bytes, w[k], ggml_nelements(t));
        }
        if (rc == 0)
            stack_ref_layer(s->ref, w, s->d, s->g, s->eps, xn, h);
    }
    if (f)
        fclose(f);
    for (int k = 0; k < ST_TENSORS; k++)
        free(w[k]);
    free(bytes);
    free(x0);
    free(xn);
    free(h);
    return rc;
}

/* Opens the model with ggml's gguf reader: the architecture, its layer
 * count and RMS epsilon, every layer's FFN tensors on the backend. 0, or -1
 * with why. */
static int stack_load(ggml_backend_t backend, const char *path, stack *s, char *why, size_t why_len)
{
    struct ggml_context *meta = NULL;
    struct gguf_init_params gp = {true, &meta};
    struct gguf_context *gg = gguf_init_from_file(path, gp);
    char arch[64] = "", key[128];
    int rc = -1;
    memset(s, 0, sizeof *s);
    int64_t k = gg ? gguf_find_key(gg, "general.architecture") : -1;
    if (!gg)
        snprintf(why, why_len, "ggml's gguf_init_from_file cannot read %s", path);
    else if (k < 0 || gguf_get_kv_type(gg, k) != GGUF_TYPE_STRING)
        snprintf(why, why_len, "%s has no general.architecture", path);
    else {
        snprintf(arch, sizeof arch, "%s", gguf_get_val_str(gg, k));
        snprintf(key, sizeof key, "%s.block_count", arch);
        k = gguf_find_key(gg, key);
        s->layers = k >= 0 && gguf_get_kv_type(gg, k) == GGUF_TYPE_UINT32 ? gguf_get_val_u32(gg, k) : 0;
        snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", arch);
        k = gguf_find_key(gg, key);
        s->eps = k >= 0 && gguf_get_kv_type(gg, k) == GGUF_TYPE_FLOAT32 ? gguf_get_val_f32(gg, k) : 1e-5f; /* llama.cpp's default */
        if (s->layers < 1 || s->layers > 4096)
            snprintf(why, why_len, "%s has no %s.block_count", path, arch);
        else {
            struct ggml_init_params p = {(size_t)(s->layers * ST_TENSORS) * ggml_tensor_overhead(), NULL, true};
            s->ctx = ggml_init(p);
            s->t = calloc((size_t)s->layers, sizeof *s->t);
            if (!s->ctx || !s->t)
                snprintf(why, why_len, "out of host memory");
            else if (stack_tensors(meta, s, why, why_len) == 0) {
                if (!ggml_backend_alloc_ctx_tensors(s->ctx, backend)) /* kept to the end (see weights_drop) */
                    snprintf(why, why_len, "ggml could not allocate the weights on the device");
                else
                    rc = stack_fill(path, gg, s, why, why_len);
            }
        }
    }
    if (gg)
        gguf_free(gg);
    if (meta)
        ggml_free(meta);
    return rc;
}

/* The whole stack at t tokens as one graph, each layer as llama.cpp builds
 * its FFN block: x + down(swiglu(gate(n), up(n))), n = rms_norm(x) * norm.
 * Checked, timed as run_layer times a layer, the first token checked
 * against the reference. Prints its line. */
static void run_stack(ggml_backend_t backend, const stack *s, int64_t t, int warmup, int min_runs, int max_runs,
                      double budget)
{
    char why[200] = "";
    size_t nodes = (size_t)(8 * s->layers + 16);
    struct ggml_init_params p = {nodes * ggml_tensor_overhead() + ggml_graph_overhead_custom(nodes, false), NULL, true};
    struct ggml_init_params px = {ggml_tensor_overhead(), NULL, true};
    struct ggml_context *ctx = ggml_init(p), *xctx = ggml_init(px);
    /* x in a buffer of its own, as in run_layer. */
    struct ggml_tensor *x = ggml_new_tensor_2d(xctx, GGML_TYPE_F32, s->d, t), *cur = x;
    ggml_backend_buffer_t xbuf = ggml_backend_alloc_ctx_tensors(xctx, backend);
    for (int64_t l = 0; l < s->layers; l++) {
        struct ggml_tensor *const *w = s->t[l];
        struct ggml_tensor *n = ggml_mul(ctx, ggml_rms_norm(ctx, cur, s->eps), w[ST_NORM]);
        struct ggml_tensor *h = ggml_swiglu_split(ctx, ggml_mul_mat(ctx, w[ST_GATE], n), ggml_mul_mat(ctx, w[ST_UP], n));
        cur = ggml_add(ctx, cur, ggml_mul_mat(ctx, w[ST_DOWN], h));
    }
    ggml_set_output(cur);
    struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, nodes, false);
    ggml_build_forward_expand(gf, cur);
    float *xv = malloc((size_t)(s->d * t) * sizeof *xv);
    double times[MAX_RUNS];
    int runs = 0;
    graph_ready(backend, gf, xv != NULL, xbuf, why, sizeof why);
    if (!why[0]) {
        stack_input(xv, s->d * t);
        ggml_backend_tensor_set(x, xv, 0, ggml_nbytes(x));
        runs = time_graph(backend, gf, warmup, min_runs, max_runs, budget, times, why, sizeof why);
    }
    if (!why[0]) {
        ggml_backend_tensor_get(cur, xv, 0, (size_t)s->d * sizeof *xv); /* the first token */
        double median = lab_median(times, runs);
        /* Against the stack's change to x (ref - x0), not x itself, which
         * the residual would let dominate: a wrong layer shows. */
        printf("stack %lld runs %d median_ns %.0f min_ns %.0f max_ns %.0f layers %lld relerr %.3g\n", (long long)t, runs,
               median * 1e9, times[0] * 1e9, times[runs - 1] * 1e9, (long long)s->layers,
               rel_error(xv, s->ref, s->x0, s->d));
    } else {
        printf("skip stack %lld %s\n", (long long)t, why);
    }
    fflush(stdout);
    ggml_backend_synchronize(backend); /* the graph's device buffers stay: see weights_drop */
    free(xv);
}

int main(int argc, char **argv)
{
    const char *name = NULL, *model = NULL;
    int cpu = 0, warmup = 3, min_runs = 3, max_runs = 10, threads = lab_online_cpus();
    double budget = 1.0;
    int a = 1;
    /* As every ffnrt command reads them (src/lab/args.h): "--" ends the
     * options. */
    for (; a < argc && argv[a][0] == '-'; a++) {
        if (strcmp(argv[a], "--") == 0) {
            a++;
            break;
        }
        if (strcmp(argv[a], "--device-name") == 0 && a + 1 < argc)
            name = argv[++a];
        else if (strcmp(argv[a], "--runs") == 0 && a + 2 < argc)
            min_runs = atoi(argv[a + 1]), max_runs = atoi(argv[a + 2]), a += 2;
        else if (strcmp(argv[a], "--budget") == 0 && a + 1 < argc)
            budget = atof(argv[++a]);
        else if (strcmp(argv[a], "--warmup") == 0 && a + 1 < argc)
            warmup = atoi(argv[++a]);
        else if (strcmp(argv[a], "-v") == 0)
            verbose = 1;
        else if (strcmp(argv[a], "--prec") == 0 && a + 1 < argc && strcmp(argv[a + 1], "f32") == 0)
            prec_f32 = 1, a++;
        else if (strcmp(argv[a], "--cpu") == 0) /* ggml's CPU backend instead: checks this driver */
            cpu = 1;
        else if (strcmp(argv[a], "--threads") == 0 && a + 1 < argc)
            threads = atoi(argv[++a]);
        else if (strcmp(argv[a], "--stack") == 0 && a + 1 < argc)
            model = argv[++a];
        else
            break;
    }
    if (a >= argc || min_runs < 1 || max_runs < min_runs || warmup < 1 || !(budget >= 0) || threads < 1) {
        fprintf(stderr,
                "usage: %s [--device-name NAME] [--runs MIN MAX] [--budget S] [--warmup N] [--prec f32] [--cpu]\n"
                "       [--threads N] [-v] FORMAT:DxG:T...\n"
                "       %s [options] --stack MODEL.gguf T...\n"
                "  times ggml's Vulkan backend on a SwiGLU layer (gate, up [G, D], down [D, G]) at T tokens;\n"
                "  FORMAT: f32 f16 bf16 q8_0 q4_0 q4_1 q4_k q6_k. ggml skips CPU devices (lavapipe) unless\n"
                "  GGML_VK_VISIBLE_DEVICES names them. --prec f32: fp32 accumulation in every product (ggml's\n"
                "  default lets an fp16 device accumulate in fp16); --cpu: ggml's CPU backend instead, on\n"
                "  --threads threads (default: every online CPU). --stack: every FFN layer of the model in\n"
                "  sequence (RMSNorm with its weights, the gated FFN, the residual) as one graph at T tokens.\n",
                argv[0], argv[0]);
        return 2;
    }
    if (max_runs > MAX_RUNS)
        max_runs = MAX_RUNS;
    ggml_log_set(log_cb, NULL);
    int count = cpu ? 1 : ggml_backend_vk_get_device_count(), dev = -1;
    char desc[256] = "";
    for (int i = 0; i < count && dev < 0; i++) {
        if (cpu) /* the SIMD it was built for: the ggml-cpu row's speed depends on it */
            snprintf(desc, sizeof desc, "ggml's CPU backend, %d thread%s, %s", threads, threads > 1 ? "s" : "",
                     ggml_cpu_has_avx512() ? "AVX-512"
                     : ggml_cpu_has_avx2() ? "AVX2"
                     : ggml_cpu_has_neon() ? "NEON"
                                           : "no AVX2 or NEON");
        else
            ggml_backend_vk_get_device_description(i, desc, sizeof desc);
        if (!name || cpu || strncmp(desc, name, strlen(desc)) == 0)
            dev = i;
    }
    if (dev < 0) {
        printf("none ggml's Vulkan backend sees %d device(s)%s%s%s, not %s\n", count, count ? " (the last: " : "",
               desc, count ? ")" : " (it skips CPU devices such as lavapipe unless GGML_VK_VISIBLE_DEVICES names them)",
               name ? name : "any");
        return 3;
    }
    /* The CPU backend directly, not through ggml's registry, which would
     * open a Vulkan instance too. */
    ggml_backend_t backend = cpu ? ggml_backend_cpu_init() : ggml_backend_vk_init((size_t)dev);
    if (!backend) {
        printf("none ggml_backend_vk_init(%d) failed\n", dev);
        return 3;
    }
    if (cpu) /* ggml's default is GGML_DEFAULT_N_THREADS (4), whatever the machine */
        ggml_backend_cpu_set_n_threads(backend, threads);
    printf("ggml %s %s device %s\n", ggml_version(), ggml_commit(), desc);
    fflush(stdout);
    if (model) {
        stack s;
        char why[300] = "";
        int loaded = stack_load(backend, model, &s, why, sizeof why) == 0;
        for (; a < argc; a++) {
            char *end;
            long long t = strtoll(argv[a], &end, 10);
            if (*end || t < 1 || t > 65536)
                printf("skip stack %s not a token count in [1, 65536]\n", argv[a]);
            else if (!loaded)
                printf("skip stack %lld %s\n", t, why);
            else
                run_stack(backend, &s, t, warmup, min_runs, max_runs, budget);
            fflush(stdout);
        }
        return 0; /* as below: the backend and its buffers end with the process */
    }
    weights w = {0};
    for (; a < argc; a++) {
        layer l;
        char why[200] = "";
        if (parse_layer(argv[a], &l) != 0) {
            printf("skip %s ? ? not FORMAT:DxG:T\n", argv[a]);
            continue;
        }
        if (!l.known)
            snprintf(why, sizeof why, "the ggml peer has no %s row", l.format);
        else if (l.d % ggml_blck_size(l.type) || l.g % ggml_blck_size(l.type))
            snprintf(why, sizeof why, "%s needs both dimensions a multiple of %lld", l.format,
                     (long long)ggml_blck_size(l.type));
        else if (!(w.ctx && w.type == l.type && w.d == l.d && w.g == l.g)) {
            weights_drop(&w);
            weights_make(backend, &l, &w, why, sizeof why);
        }
        if (why[0]) {
            weights_drop(&w);
            printf("skip %s %lldx%lld %lld %s\n", l.format, (long long)l.d, (long long)l.g, (long long)l.t, why);
            fflush(stdout);
            continue;
        }
        run_layer(backend, &l, &w, warmup, min_runs, max_runs, budget);
    }
    weights_drop(&w);
    return 0; /* the backend and its buffers end with the process (see weights_drop) */
}

#else /* the client, in the ffnrt command */

#include "peer_ggml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FFNRT_HAVE_GGML

/* One line for the layer rows' peer and the stack's (ggml-cpu, ggml-vulkan):
 * the run's peer lines keep one copy. */
static void ggml_absent(const bench_device *dev)
{
    bench_meta_add_peer(dev->meta, "ggml: not found at build time (cmake -DFFNRT_GGML_DIR=PREFIX, a ggml install "
                                   "built with GGML_VULKAN=ON)");
}

int bench_peer_ggml_rows(const bench_device *dev, const bench_config *cfg, size_t first, bench_rows *rows)
{
    (void)cfg, (void)first, (void)rows;
    ggml_absent(dev);
    return 0;
}

int bench_peer_ggml_stack_rows(const bench_device *dev, const bench_config *cfg, size_t first, bench_rows *rows)
{
    (void)cfg, (void)first, (void)rows;
    ggml_absent(dev);
    return 0;
}

#else


#define MAX_LAYERS 64

/* The FFN rows the peer stands beside: fused SwiGLU rows of this device. */
static int is_swiglu_row(const bench_row *r, long long *d, long long *g, long long *t)
{
    return strcmp(r->group, "ffn") == 0 && strcmp(r->path, "fused") == 0 &&
           sscanf(r->op, "swiglu %lldx%lld", d, g) == 2 && sscanf(r->shape, "t%lld", t) == 1;
}

/* Runs the helper over argv (its layers, or the stack) with ggml's device
 * list opened to the ffnrt device's Vulkan index (ggml hides CPU devices
 * such as lavapipe otherwise), unless the environment already chooses. Its
 * stdout, or NULL. */
static FILE *spawn_helper(char **argv, uint32_t index, ffnrt_lab_child *child)
{
    char visible[48];
    snprintf(visible, sizeof visible, "GGML_VK_VISIBLE_DEVICES=%u", (unsigned)index);
    const char *const env_set[] = {getenv("GGML_VK_VISIBLE_DEVICES") ? NULL : visible, NULL};
    return bench_spawn_reading(argv, env_set, child);
}

/* Issue 25's targets for ffnrt's tokens a second over ggml's on the same
 * layer, or 0: on the CPU's cores (ggml-cpu) at least 1x at decode in the
 * 4-bit formats; on a Vulkan device at least 2x on Q4_0 layers. */
static double layer_target(int cpu, const char *format, long long t)
{
    if (cpu)
        return t == 1 && (strcmp(format, "q4_0") == 0 || strcmp(format, "q4_1") == 0) ? 1 : 0;
    return strcmp(format, "q4_0") == 0 ? 2 : 0;
}

/* The peer row beside FFN row ffn (and int8, the same layer's integer-path
 * row, or NULL), from a helper line's figures: named ggml-cpu or
 * ggml-vulkan, its note ffnrt's speed over ggml's on each path (host
 * times, like for like) and the target met or missed by the faster, the
 * relative error last (within the note's 63 characters). */
static void push_row(const bench_device *dev, int cpu, const bench_row *ffn, const bench_row *int8,
                     const char *format, long long d, long long g, long long t, int runs, double med, double lo,
                     double hi, double bytes, double relerr, bench_rows *rows)
{
    bench_row *r = bench_rows_push(rows);
    if (!r)
        return;
    bench_row_device(r, dev, "peer");
    snprintf(r->op, sizeof r->op, "ggml-%s swiglu %lldx%lld", cpu ? "cpu" : "vulkan", d, g);
    BENCH_SET(r->dir, "fwd");
    BENCH_SET(r->dtype, format);
    snprintf(r->shape, sizeof r->shape, "t%lld", t);
    r->size = (double)t;
    r->runs = runs;
    r->median_ns = r->host_ns = med;
    r->min_ns = lo;
    r->max_ns = hi;
    r->spread = med > 0 ? (hi - lo) / med : 0;
    BENCH_SET(r->timing, "host"); /* ggml's own measure: graph compute, host time */
    if (t <= 8) {
        r->rate = bytes / med;
        BENCH_SET(r->rate_unit, "GB/s");
        r->ratio = ffn->ratio > 0 ? r->rate / (ffn->rate / ffn->ratio) : 0; /* the FFN row's copy limit */
        BENCH_SET(r->ratio_to, "copy");
    } else {
        ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, d, g);
        ffnrt_ffn_cost cost;
        ffnrt_ffn_cost_of(&desc, t, FFNRT_FFN_PATH_FUSED, &cost);
        r->rate = (double)cost.flops / med;
        BENCH_SET(r->rate_unit, "GFLOP/s");
        BENCH_SET(r->ratio_to, "gemm"); /* the caller divides by the device's GEMM rate */
    }
    /* Like for like: ffnrt's host end-to-end time against ggml's. */
    double fused = ffn->host_ns > 0 ? med / ffn->host_ns : 0;
    double with_int8 = int8 && int8->host_ns > 0 ? med / int8->host_ns : 0;
    double best = with_int8 > fused ? with_int8 : fused, target = layer_target(cpu, format, t);
    bench_row_metric(r, "ffnrt_over_ggml", best);
    char paths[48], goal[32] = "";
    if (int8 && with_int8 > 0)
        snprintf(paths, sizeof paths, "fused %.2fx, +int8 %.2fx", fused, with_int8);
    else
        snprintf(paths, sizeof paths, "fused %.2fx (host times)", fused);
    if (target > 0)
        snprintf(goal, sizeof goal, ", >=%gx %s", target, best >= target ? "met" : "missed");
    char note[128];
    snprintf(note, sizeof note, "ffnrt %s%s; relerr %.1e", paths, goal, relerr);
    BENCH_SET(r->note, note); /* cut to the note's 63 characters */
}

/* What the helper runs said, gathered over its runs. */
typedef struct helper_report {
    char version[24], commit[24], device[128]; /* its "ggml VERSION COMMIT device DESCRIPTION" line */
    char skipped[160], failed[160];
    int skips, done;
} helper_report;

/* A mode's row lines: 1 when line is one (its row pushed where it has an
 * ffnrt row to stand beside), else 0. */
typedef int (*helper_row_fn)(const char *line, void *arg);

/* One helper run over argv, its row lines to row(line, arg); what else it
 * says (its version and device, skips, a failure) in rep, named peer
 * ("ggml", "ggml-cpu"), the failure's rows counted over what ("q4_0:...",
 * "the stack"). */
static void run_helper(const bench_device *dev, char **argv, const char *peer, const char *what, helper_row_fn row,
                       void *arg, helper_report *rep)
{
    ffnrt_lab_child child;
    FILE *out = spawn_helper(argv, dev->info.index, &child);
    if (!out) {
        snprintf(rep->failed, sizeof rep->failed, "%s: cannot start %s", peer, argv[0]);
        return;
    }
    char line[512];
    int rows_seen = 0;
    while (fgets(line, sizeof line, out)) {
        char ver[24], commit[24];
        int pos = 0;
        line[strcspn(line, "\n")] = 0;
        if (sscanf(line, "ggml %23s %23s device %n", ver, commit, &pos) == 2 && pos > 0) {
            snprintf(rep->version, sizeof rep->version, "%s", ver);
            snprintf(rep->commit, sizeof rep->commit, "%s", commit);
            snprintf(rep->device, sizeof rep->device, "%s", line + pos);
        } else if (row(line, arg)) {
            rows_seen++;
        } else if (strncmp(line, "skip ", 5) == 0 || strncmp(line, "none ", 5) == 0) {
            if (rep->skips++ == 0) {
                char skip[1100];
                snprintf(skip, sizeof skip, "%s: %s", peer, line + 5);
                BENCH_SET(rep->skipped, skip); /* cut to the report's line */
            }
        }
    }
    fclose(out);
    char how[64];
    int status = bench_wait_helper(child, how, sizeof how);
    /* 3: no such device (said on a "none" line). Anything else is a crash or
     * an abort inside ggml or the driver: its rows are missing. */
    if (status != 0 && status != 3 && !rep->failed[0])
        snprintf(rep->failed, sizeof rep->failed, "%s: the bench_ggml helper failed (%s) after %d row(s) of %s", peer,
                 how, rows_seen, what);
}

/* The run's peer lines from rep: ok (the backend, its device and what
 * ran, where rep->version says the helper started), skips, failure. */
static void report_peer(const bench_device *dev, const char *peer, const char *backend, const char *ran,
                        helper_report *rep)
{
    char line[160];
    if (rep->version[0]) {
        snprintf(line, sizeof line, "%s: ok (ggml %s %s, %s%.40s: %s, host time)", peer, rep->version, rep->commit,
                 backend, rep->device, ran);
        bench_meta_add_peer(dev->meta, line);
    }
    if (rep->skips) {
        if (rep->skips > 1)
            snprintf(rep->skipped + strlen(rep->skipped), sizeof rep->skipped - strlen(rep->skipped), " (and %d more)",
                     rep->skips - 1);
        bench_meta_add_peer(dev->meta, rep->skipped);
    }
    if (rep->failed[0])
        bench_meta_add_peer(dev->meta, rep->failed);
}

/* The helper's first arguments: its path, the run's method, the device
 * (ggml's CPU backend, or the Vulkan device of ffnrt's name). */
typedef struct helper_args {
    char exe[1024], budget[32], lo[16], hi[16];
    char *argv[10];
    int n;
} helper_args;

/* Finds the helper for peer (else its absent line, and -1), its first
 * arguments in h, and says on the progress line that op runs. */
static int helper_find(const bench_device *dev, const bench_config *cfg, const char *peer, const char *op, int cpu,
                       helper_args *h)
{
    char why[1200];
    if (bench_find_helper("bench_ggml", 1, h->exe, sizeof h->exe, why, sizeof why) != 0) {
        char line[1300];
        snprintf(line, sizeof line, "%s: absent (%s)", peer, why);
        bench_meta_add_peer(dev->meta, line);
        return -1;
    }
    snprintf(h->budget, sizeof h->budget, "%g", cfg->budget_s);
    snprintf(h->lo, sizeof h->lo, "%d", cfg->min_runs);
    snprintf(h->hi, sizeof h->hi, "%d", cfg->max_runs);
    h->n = 0;
    h->argv[h->n++] = h->exe;
    h->argv[h->n++] = "--runs";
    h->argv[h->n++] = h->lo;
    h->argv[h->n++] = h->hi;
    h->argv[h->n++] = "--budget";
    h->argv[h->n++] = h->budget;
    if (cpu) {
        h->argv[h->n++] = "--cpu"; /* on every online CPU, the helper's default */
    } else {
        h->argv[h->n++] = "--device-name";
        h->argv[h->n++] = (char *)dev->info.name;
    }
    bench_row probe = {0};
    bench_row_device(&probe, dev, "peer");
    BENCH_SET(probe.op, op);
    bench_progress(&probe);
    return 0;
}

/* The layer mode's row lines: "row FORMAT DxG T ...", beside the fused
 * SwiGLU row of the same layer in rows[first, end). */
typedef struct layer_rows {
    const bench_device *dev;
    int cpu;
    size_t first, end;
    bench_rows *rows;
    helper_report *rep;
} layer_rows;

static int layer_line(const char *line, void *arg)
{
    layer_rows *c = arg;
    char format[16];
    long long d, g, t;
    int runs;
    double med, mn, mx, bytes, relerr;
    if (sscanf(line, "row %15s %lldx%lld %lld runs %d median_ns %lf min_ns %lf max_ns %lf weight_bytes %lf relerr %lf",
               format, &d, &g, &t, &runs, &med, &mn, &mx, &bytes, &relerr) != 10)
        return 0;
    for (size_t i = c->first; i < c->end; i++) {
        long long rd, rg, rt;
        bench_row ffn = c->rows->v[i]; /* a copy: pushing may move the array */
        if (is_swiglu_row(&ffn, &rd, &rg, &rt) && rd == d && rg == g && rt == t && strcmp(ffn.dtype, format) == 0) {
            const bench_row *int8 = NULL;
            for (size_t j = c->first; j < c->end && !int8; j++) {
                const bench_row *q = &c->rows->v[j];
                if (strcmp(q->group, "ffn") == 0 && strcmp(q->path, "fused+int8") == 0 && strcmp(q->op, ffn.op) == 0 &&
                    strcmp(q->shape, ffn.shape) == 0 && strcmp(q->dtype, ffn.dtype) == 0)
                    int8 = q;
            }
            bench_row int8_copy; /* pushing may move the array */
            if (int8)
                int8_copy = *int8;
            push_row(c->dev, c->cpu, &ffn, int8 ? &int8_copy : NULL, format, d, g, t, runs, med, mn, mx, bytes, relerr,
                     c->rows);
            c->rep->done++;
            break;
        }
    }
    return 1;
}

int bench_peer_ggml_rows(const bench_device *dev, const bench_config *cfg, size_t first, bench_rows *rows)
{
    /* ggml-vulkan beside every Vulkan device; ggml-cpu once a run, beside
     * the first OpenCL CPU device (PoCL: the same cores). */
    static int cpu_ran;
    int cpu = dev->info.backend != FFNRT_BACKEND_VULKAN;
    if (cpu && (dev->info.backend != FFNRT_BACKEND_OPENCL || dev->info.type != FFNRT_DEVICE_TYPE_CPU || cpu_ran))
        return 0;
    const char *peer = cpu ? "ggml-cpu" : "ggml";
    char layers[MAX_LAYERS][48];
    int nl = 0;
    size_t end = rows->n;
    for (size_t i = first; i < end && nl < MAX_LAYERS; i++) {
        long long d, g, t;
        if (is_swiglu_row(&rows->v[i], &d, &g, &t))
            snprintf(layers[nl++], sizeof layers[0], "%s:%lldx%lld:%lld", rows->v[i].dtype, d, g, t);
    }
    if (nl == 0)
        return 0;
    cpu_ran |= cpu;
    helper_args h;
    if (helper_find(dev, cfg, peer, cpu ? "ggml-cpu" : "ggml-vulkan", cpu, &h) != 0)
        return 0;
    /* One helper per format and shape (its token counts together): the
     * helper frees no device memory (see weights_drop), so this bounds
     * what it holds to one layer's weights. */
    helper_report rep = {0};
    int taken[MAX_LAYERS] = {0};
    for (int i = 0; i < nl; i++) {
        if (taken[i])
            continue;
        char *argv[MAX_LAYERS + 12];
        int na = h.n;
        memcpy(argv, h.argv, (size_t)h.n * sizeof *argv);
        size_t group = strrchr(layers[i], ':') - layers[i]; /* "f16:512x1376" */
        for (int k = i; k < nl; k++)
            if (!taken[k] && strncmp(layers[k], layers[i], group + 1) == 0) {
                argv[na++] = layers[k];
                taken[k] = 1;
            }
        argv[na] = NULL;
        layer_rows c = {dev, cpu, first, end, rows, &rep};
        run_helper(dev, argv, peer, argv[h.n], layer_line, &c, &rep);
    }
    report_peer(dev, peer, cpu ? "" : "Vulkan backend, ", "SwiGLU graphs", &rep);
    return 0;
}

/* ------------------------------------------------------ the stack's peers */

/* The stack rows the peers stand beside: this device's rows of the
 * dispatcher's choice (path "auto"), shape "DxG tT". */
static int is_stack_row(const bench_row *r, long long *t)
{
    const char *at = strrchr(r->shape, ' ');
    return strcmp(r->group, "stack") == 0 && strcmp(r->path, "auto") == 0 && at && sscanf(at, " t%lld", t) == 1;
}

typedef struct stack_rows {
    const bench_device *dev;
    const bench_config *cfg;
    size_t first, end;
    bench_rows *rows;
    int cpu;
    helper_report *rep;
} stack_rows;

/* "stack T runs N median_ns ... layers L relerr E": a peer row beside the
 * stack row at T tokens, its ratio ffnrt's tokens a second over ggml's. */
static int stack_line(const char *line, void *arg)
{
    stack_rows *c = arg;
    long long t, layers;
    int runs;
    double med, lo, hi, relerr;
    if (sscanf(line, "stack %lld runs %d median_ns %lf min_ns %lf max_ns %lf layers %lld relerr %lf", &t, &runs, &med,
               &lo, &hi, &layers, &relerr) != 7)
        return 0;
    for (size_t i = c->first; i < c->end && med > 0; i++) {
        long long rt;
        bench_row ffn = c->rows->v[i]; /* a copy: pushing may move the array */
        if (!is_stack_row(&ffn, &rt) || rt != t)
            continue;
        bench_row *r = bench_rows_push(c->rows);
        if (!r)
            break;
        bench_row_device(r, c->dev, "peer");
        snprintf(r->op, sizeof r->op, "ggml-%s %.26s", c->cpu ? "cpu" : "vulkan", ffn.op);
        BENCH_SET(r->dir, "fwd");
        BENCH_SET(r->dtype, ffn.dtype);
        BENCH_SET(r->shape, ffn.shape);
        r->size = (double)t;
        r->runs = runs;
        r->median_ns = r->host_ns = med;
        r->min_ns = lo;
        r->max_ns = hi;
        r->spread = (hi - lo) / med;
        BENCH_SET(r->timing, "host"); /* ggml's own measure: graph compute, host time */
        r->rate = (double)t * 1e9 / med;
        BENCH_SET(r->rate_unit, "tok/s");
        /* Like for like: ffnrt's host end-to-end time against ggml's. */
        r->ratio = med / (ffn.host_ns > 0 ? ffn.host_ns : ffn.median_ns);
        BENCH_SET(r->ratio_to, "ffnrt-auto");
        bench_row_metric(r, "tokens_per_s", r->rate);
        bench_row_metric(r, "ffnrt_over_ggml", r->ratio);
        bench_row_metric(r, "relerr", relerr);
        /* The same stack with the integer path (row "auto+int8"): x
         * rounded to 8 bits before each product, as ggml's CPU backend
         * does (Q8_1), so like for like there. */
        double int8 = 0;
        for (size_t j = c->first; j < c->end; j++) {
            const bench_row *q = &c->rows->v[j];
            const char *at = strrchr(q->shape, ' ');
            long long qt;
            if (strcmp(q->group, "stack") == 0 && strcmp(q->path, "auto+int8") == 0 && at &&
                sscanf(at, " t%lld", &qt) == 1 && qt == t && (q->host_ns > 0 || q->median_ns > 0))
                int8 = med / (q->host_ns > 0 ? q->host_ns : q->median_ns);
        }
        if (int8 > 0)
            bench_row_metric(r, "ffnrt_int8_over_ggml", int8);
        /* Issue 25's targets, at decode: ffnrt on PoCL at least ggml-cpu's
         * tokens a second, on lavapipe at least twice ggml-vulkan's, by
         * the faster of the two paths. */
        double target = c->cpu ? 1 : 2, best = int8 > r->ratio ? int8 : r->ratio;
        char goal[32] = "", with_int8[24] = "";
        if (t == 1)
            snprintf(goal, sizeof goal, ", >=%gx %s", target, best >= target ? "met" : "missed");
        if (int8 > 0)
            snprintf(with_int8, sizeof with_int8, ", +int8 %.2fx", int8);
        char note[128];
        snprintf(note, sizeof note, "ffnrt auto %.2fx%s%s; relerr %.1e", r->ratio, with_int8, goal, relerr);
        BENCH_SET(r->note, note);
        bench_row_done(c->cfg, r);
        c->rep->done++;
        break;
    }
    return 1;
}

int bench_peer_ggml_stack_rows(const bench_device *dev, const bench_config *cfg, size_t first, bench_rows *rows)
{
    /* ggml-cpu once a run, beside the first OpenCL CPU device (PoCL: the
     * same cores); ggml-vulkan beside every Vulkan device. */
    static int cpu_ran;
    int cpu = dev->info.backend != FFNRT_BACKEND_VULKAN;
    if (cpu && (dev->info.backend != FFNRT_BACKEND_OPENCL || dev->info.type != FFNRT_DEVICE_TYPE_CPU || cpu_ran))
        return 0;
    const char *peer = cpu ? "ggml-cpu" : "ggml-vulkan";
    char tokens[BENCH_MAX_LIST][24];
    int nt = 0;
    size_t end = rows->n;
    for (size_t i = first; i < end && nt < BENCH_MAX_LIST; i++) {
        long long t;
        if (is_stack_row(&rows->v[i], &t))
            snprintf(tokens[nt++], sizeof tokens[0], "%lld", t);
    }
    if (nt == 0 || !cfg->gguf_path)
        return 0;
    cpu_ran |= cpu;
    helper_args h;
    if (helper_find(dev, cfg, peer, peer, cpu, &h) != 0)
        return 0;
    char *argv[BENCH_MAX_LIST + 14];
    int na = h.n;
    memcpy(argv, h.argv, (size_t)h.n * sizeof *argv);
    argv[na++] = "--stack";
    argv[na++] = (char *)cfg->gguf_path;
    for (int i = 0; i < nt; i++)
        argv[na++] = tokens[i];
    argv[na] = NULL;
    helper_report rep = {0};
    stack_rows c = {dev, cfg, first, end, rows, cpu, &rep};
    run_helper(dev, argv, peer, "the stack", stack_line, &c, &rep);
    report_peer(dev, peer, cpu ? "" : "Vulkan backend, ", "the FFN stack as one graph", &rep);
    return 0;
}

#endif
#endif
