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
 * silently. */
#include "lab.h"

#ifdef PEER_GGML_MAIN

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-vulkan.h>
#include <ggml.h>

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
    ggml_gallocr_t galloc = NULL;
    float *xv = malloc((size_t)(l->d * l->t) * sizeof *xv), *yv = malloc((size_t)l->d * sizeof *yv);
    double times[MAX_RUNS];
    int runs = 0;
    for (int i = 0; i < ggml_graph_n_nodes(gf) && !why[0]; i++) {
        struct ggml_tensor *node = ggml_graph_node(gf, i);
        if (!ggml_backend_supports_op(backend, node)) /* its size said: ggml-vulkan refuses a tensor past the device's range */
            snprintf(why, sizeof why, "ggml's %s does not support %s of %s [%lld, %lld] (%.0f MiB) here",
                     ggml_backend_name(backend), ggml_op_desc(node), ggml_type_name(node->src[0]->type),
                     (long long)node->src[0]->ne[1], (long long)node->src[0]->ne[0],
                     (double)ggml_nbytes(node->src[0]) / 1048576.0);
    }
    if (!why[0] && (!xv || !yv))
        snprintf(why, sizeof why, "out of host memory");
    if (!why[0] && !xbuf)
        snprintf(why, sizeof why, "ggml could not allocate the input on the device");
    if (!why[0]) {
        galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
        if (!ggml_gallocr_alloc_graph(galloc, gf))
            snprintf(why, sizeof why, "ggml could not allocate the graph's activations");
    }
    if (!why[0]) {
        first_token(xv, l->d);
        uint32_t seed = 5;
        fill_random(xv + l->d, (size_t)(l->d * (l->t - 1)), 1.0f / sqrtf((float)l->d), &seed);
        ggml_backend_tensor_set(x, xv, 0, ggml_nbytes(x));
        double spent = 0;
        /* Warm-up (the first run builds ggml's pipelines); a layer whose
         * run takes past the budget warms up twice. */
        for (int i = 0; i < warmup && !why[0] && !(i >= 2 && spent > budget); i++) {
            double t0 = lab_now_s();
            if (ggml_backend_graph_compute(backend, gf) != GGML_STATUS_SUCCESS)
                snprintf(why, sizeof why, "ggml_backend_graph_compute failed");
            if (i > 0)
                spent += lab_now_s() - t0;
        }
        spent = 0;
        while (!why[0] && runs < max_runs && (runs < min_runs || spent < budget)) {
            double t0 = lab_now_s();
            if (ggml_backend_graph_compute(backend, gf) != GGML_STATUS_SUCCESS)
                snprintf(why, sizeof why, "ggml_backend_graph_compute failed");
            times[runs] = lab_now_s() - t0;
            spent += times[runs++];
        }
    }
    if (!why[0]) {
        ggml_backend_tensor_get(y, yv, 0, (size_t)l->d * sizeof *yv); /* the first token */
        double num = 0, den = 0;
        for (int64_t i = 0; i < l->d; i++) {
            num += (yv[i] - w->ref[i]) * (yv[i] - w->ref[i]);
            den += w->ref[i] * w->ref[i];
        }
        double median = lab_median(times, runs); /* sorts: times[0] and [runs - 1] are the extremes */
        size_t bytes = ggml_nbytes(w->wg) + ggml_nbytes(w->wu) + ggml_nbytes(w->wd);
        printf("row %s %lldx%lld %lld runs %d median_ns %.0f min_ns %.0f max_ns %.0f weight_bytes %zu relerr %.3g\n",
               l->format, (long long)l->d, (long long)l->g, (long long)l->t, runs, median * 1e9, times[0] * 1e9,
               times[runs - 1] * 1e9, bytes, den > 0 ? sqrt(num / den) : sqrt(num));
    } else {
        printf("skip %s %lldx%lld %lld %s\n", l->format, (long long)l->d, (long long)l->g, (long long)l->t, why);
    }
    fflush(stdout);
    /* The graph's device buffers (galloc's, xbuf) and their contexts stay
     * until the process exits: see keep_device_memory. */
    ggml_backend_synchronize(backend);
    (void)galloc, (void)xbuf;
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

int main(int argc, char **argv)
{
    const char *name = NULL;
    int cpu = 0, warmup = 3, min_runs = 3, max_runs = 10;
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
        else
            break;
    }
    if (a >= argc || min_runs < 1 || max_runs < min_runs || warmup < 1 || !(budget >= 0)) {
        fprintf(stderr,
                "usage: %s [--device-name NAME] [--runs MIN MAX] [--budget S] [--warmup N] [--prec f32] [--cpu] [-v]\n"
                "       FORMAT:DxG:T...\n"
                "  times ggml's Vulkan backend on a SwiGLU layer (gate, up [G, D], down [D, G]) at T tokens;\n"
                "  FORMAT: f32 f16 bf16 q8_0 q4_0 q4_1 q4_k q6_k. ggml skips CPU devices (lavapipe) unless\n"
                "  GGML_VK_VISIBLE_DEVICES names them. --prec f32: fp32 accumulation in every product (ggml's\n"
                "  default lets an fp16 device accumulate in fp16); --cpu: ggml's CPU backend instead.\n",
                argv[0]);
        return 2;
    }
    if (max_runs > MAX_RUNS)
        max_runs = MAX_RUNS;
    ggml_log_set(log_cb, NULL);
    int count = cpu ? 1 : ggml_backend_vk_get_device_count(), dev = -1;
    char desc[256] = "";
    for (int i = 0; i < count && dev < 0; i++) {
        if (cpu)
            snprintf(desc, sizeof desc, "ggml's CPU backend");
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
    ggml_backend_t backend =
        cpu ? ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL) : ggml_backend_vk_init((size_t)dev);
    if (!backend) {
        printf("none ggml_backend_vk_init(%d) failed\n", dev);
        return 3;
    }
    printf("ggml %s %s device %s\n", ggml_version(), ggml_commit(), desc);
    fflush(stdout);
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

int bench_peer_ggml_rows(const bench_device *dev, const bench_config *cfg, size_t first, bench_rows *rows)
{
    (void)cfg, (void)first, (void)rows;
    bench_meta_add_peer(dev->meta, "ggml: not found at build time (cmake -DFFNRT_GGML_DIR=PREFIX, a ggml install "
                                   "built with GGML_VULKAN=ON)");
    return 0;
}

#else

#include <sys/wait.h>
#include <unistd.h>

extern char **environ;


#define MAX_LAYERS 64

/* The FFN rows the peer stands beside: fused SwiGLU rows of this device. */
static int is_swiglu_row(const bench_row *r, long long *d, long long *g, long long *t)
{
    return strcmp(r->group, "ffn") == 0 && strcmp(r->path, "fused") == 0 &&
           sscanf(r->op, "swiglu %lldx%lld", d, g) == 2 && sscanf(r->shape, "t%lld", t) == 1;
}

/* Runs the helper over argv (its layers) with ggml's device list opened to
 * the ffnrt device's Vulkan index (ggml hides CPU devices such as lavapipe
 * otherwise), unless the environment already chooses. Its stdout, or NULL. */
static FILE *spawn_helper(char **argv, uint32_t index, pid_t *pid)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = malloc((n + 2) * sizeof *env);
    if (!env)
        return NULL;
    char visible[48];
    snprintf(visible, sizeof visible, "GGML_VK_VISIBLE_DEVICES=%u", (unsigned)index);
    memcpy(env, environ, n * sizeof *env);
    env[n] = getenv("GGML_VK_VISIBLE_DEVICES") ? NULL : visible;
    env[n + 1] = NULL;
    FILE *out = bench_spawn_reading(argv, env, pid);
    free(env);
    return out;
}

/* The peer row beside FFN row ffn, from a helper line's figures. */
static void push_row(const bench_device *dev, const bench_row *ffn, const char *format,
                     long long d, long long g, long long t, int runs, double med, double lo, double hi, double bytes,
                     double relerr, bench_rows *rows)
{
    bench_row *r = bench_rows_push(rows);
    if (!r)
        return;
    bench_row_device(r, dev, "peer");
    snprintf(r->op, sizeof r->op, "ggml-swiglu %lldx%lld", d, g);
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
    snprintf(r->note, sizeof r->note, "ffnrt fused %.2fx (host times); relerr %.1e",
             ffn->host_ns > 0 ? med / ffn->host_ns : 0, relerr);
}

/* What the helper runs said, gathered over its runs. */
typedef struct helper_report {
    char peer[160], skipped[160], failed[160];
    int skips, done;
} helper_report;

/* One helper run over argv's layers; its rows pushed beside their FFN rows
 * in rows[first, end). */
static void run_helper(const bench_device *dev, char **argv, size_t first, size_t end, bench_rows *rows,
                       helper_report *rep)
{
    pid_t pid = 0;
    FILE *out = spawn_helper(argv, dev->info.index, &pid);
    if (!out) {
        snprintf(rep->failed, sizeof rep->failed, "ggml: cannot start %s", argv[0]);
        return;
    }
    char line[512];
    int rows_seen = 0;
    while (fgets(line, sizeof line, out)) {
        char format[16], ver[24], commit[24];
        long long d, g, t;
        int runs, pos = 0;
        double med, mn, mx, bytes, relerr;
        line[strcspn(line, "\n")] = 0;
        if (sscanf(line, "ggml %23s %23s device %n", ver, commit, &pos) == 2 && pos > 0) {
            snprintf(rep->peer, sizeof rep->peer, "ggml: ok (ggml %s %s, Vulkan backend, %.40s: SwiGLU graphs, host time)",
                     ver, commit, line + pos);
        } else if (sscanf(line, "row %15s %lldx%lld %lld runs %d median_ns %lf min_ns %lf max_ns %lf weight_bytes %lf "
                                "relerr %lf",
                          format, &d, &g, &t, &runs, &med, &mn, &mx, &bytes, &relerr) == 10) {
            rows_seen++;
            for (size_t i = first; i < end; i++) {
                long long rd, rg, rt;
                bench_row ffn = rows->v[i]; /* a copy: pushing may move the array */
                if (is_swiglu_row(&ffn, &rd, &rg, &rt) && rd == d && rg == g && rt == t &&
                    strcmp(ffn.dtype, format) == 0) {
                    push_row(dev, &ffn, format, d, g, t, runs, med, mn, mx, bytes, relerr, rows);
                    rep->done++;
                    break;
                }
            }
        } else if (strncmp(line, "skip ", 5) == 0 || strncmp(line, "none ", 5) == 0) {
            if (rep->skips++ == 0)
                snprintf(rep->skipped, sizeof rep->skipped, "ggml: %.150s", line + 5);
        }
    }
    fclose(out);
    int status = 0;
    waitpid(pid, &status, 0);
    /* 3: no such device (said on a "none" line). Anything else is a crash or
     * an abort inside ggml or the driver: its rows are missing. */
    if ((!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 3)) && !rep->failed[0])
        snprintf(rep->failed, sizeof rep->failed, "ggml: the bench_ggml helper failed (%s %d) after %d row(s) of %s",
                 WIFSIGNALED(status) ? "signal" : "status", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
                 rows_seen, argv[8]);
}

int bench_peer_ggml_rows(const bench_device *dev, const bench_config *cfg, size_t first, bench_rows *rows)
{
    char exe[1024], layers[MAX_LAYERS][48], budget[32], lo[16], hi[16];
    int nl = 0;
    size_t end = rows->n;
    for (size_t i = first; i < end && nl < MAX_LAYERS; i++) {
        long long d, g, t;
        if (is_swiglu_row(&rows->v[i], &d, &g, &t))
            snprintf(layers[nl++], sizeof layers[0], "%s:%lldx%lld:%lld", rows->v[i].dtype, d, g, t);
    }
    if (nl == 0)
        return 0;
    char why[1200];
    if (bench_find_helper("bench_ggml", X_OK, exe, sizeof exe, why, sizeof why) != 0) {
        char line[1300];
        snprintf(line, sizeof line, "ggml: absent (%s)", why);
        bench_meta_add_peer(dev->meta, line);
        return 0;
    }
    snprintf(budget, sizeof budget, "%g", cfg->budget_s);
    snprintf(lo, sizeof lo, "%d", cfg->min_runs);
    snprintf(hi, sizeof hi, "%d", cfg->max_runs);
    bench_row probe = {0};
    bench_row_device(&probe, dev, "peer");
    BENCH_SET(probe.op, "ggml-vulkan");
    bench_progress(&probe);
    /* One helper per format and shape (its token counts together): the
     * helper frees no device memory (see weights_drop), so this bounds
     * what it holds to one layer's weights. */
    helper_report rep = {0};
    int taken[MAX_LAYERS] = {0};
    for (int i = 0; i < nl; i++) {
        if (taken[i])
            continue;
        char *argv[MAX_LAYERS + 10];
        int na = 0;
        argv[na++] = exe;
        argv[na++] = "--device-name";
        argv[na++] = (char *)dev->info.name;
        argv[na++] = "--runs";
        argv[na++] = lo;
        argv[na++] = hi;
        argv[na++] = "--budget";
        argv[na++] = budget;
        size_t group = strrchr(layers[i], ':') - layers[i]; /* "f16:512x1376" */
        for (int k = i; k < nl; k++)
            if (!taken[k] && strncmp(layers[k], layers[i], group + 1) == 0) {
                argv[na++] = layers[k];
                taken[k] = 1;
            }
        argv[na] = NULL;
        run_helper(dev, argv, first, end, rows, &rep);
    }
    if (rep.peer[0])
        bench_meta_add_peer(dev->meta, rep.peer);
    if (rep.skips) {
        if (rep.skips > 1)
            snprintf(rep.skipped + strlen(rep.skipped), sizeof rep.skipped - strlen(rep.skipped), " (and %d more)",
                     rep.skips - 1);
        bench_meta_add_peer(dev->meta, rep.skipped);
    }
    if (rep.failed[0])
        bench_meta_add_peer(dev->meta, rep.failed);
    return 0;
}

#endif
#endif
