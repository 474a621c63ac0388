/* ffnrt bench: the same work on every device found, each result reported
 * against a limit measured on the same device in the same run.
 *
 * Parts (bench_parts.h): the element-wise ops (every activation and GLU
 * kind, forward and backward, fp32, fp16 and bf16 storage and fp16
 * arithmetic) against a copy kernel of the same storage type and size;
 * the FFN layers (bench_ffn.c) against the copy kernel (decode) or a
 * GEMM-rate probe (prefill), with CLBlast beside them on OpenCL; the host
 * C loop (peer_host.c) as the CPU reference for activations. Every row
 * goes to one list (bench_row.h) that the table, CSV, JSON and plots
 * (bench_output.c) are written from; --compare (bench_compare.c) reads two
 * JSON files back. */
#include "args.h"
#include "bench.h"
#include "bench_parts.h"
#include "bench_report.h"
#include "lab.h"
#include "ffnrt.h"
#include "numbers.h"
#include "ffnrt_op_table.h"
#include "op_counts.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__has_include)
#if __has_include("bench_commit.h")
#include "bench_commit.h" /* written at build time by bench/bench_commit.cmake */
#endif
#endif
#ifndef FFNRT_BENCH_COMMIT
#define FFNRT_BENCH_COMMIT "unknown"
#endif

/* ------------------------------------------------------------- measuring */

#define MAX_RUNS 200

static double warmup_total_s; /* the run's warm-up calls, reported apart from measuring */
static double measure_total_s; /* the run's measured calls */

void bench_warmup_add(double seconds)
{
    warmup_total_s += seconds;
}

void bench_measure_add(double seconds)
{
    measure_total_s += seconds;
}

int bench_measure(ffnrt_context *ctx, bench_call call, void *arg, const bench_config *cfg, bench_row *r)
{
    double dev[MAX_RUNS], host[MAX_RUNS];
    int have_dev = 1;
    bench_progress(r);
    double w0 = lab_now_s();
    ffnrt_status warm = call(arg); /* warm-up: builds the kernels */
    bench_warmup_add(lab_now_s() - w0);
    if (warm != FFNRT_OK) {
        fprintf(stderr, "\nffnrt bench: %s %s: %s\n", r->group, r->op, ffnrt_last_error_message());
        return -1;
    }
    int max_runs = cfg->max_runs < MAX_RUNS ? cfg->max_runs : MAX_RUNS;
    int n = 0;
    double start = lab_now_s();
    while (n < max_runs && (n < cfg->min_runs || lab_now_s() - start < cfg->budget_s)) {
        double t0 = lab_now_s();
        if (call(arg) != FFNRT_OK) {
            fprintf(stderr, "\nffnrt bench: %s %s: %s\n", r->group, r->op, ffnrt_last_error_message());
            return -1;
        }
        host[n] = lab_now_s() - t0;
        bench_measure_add(host[n]);
        uint64_t ns = 0;
        if (ctx)
            ffnrt_context_last_op_time(ctx, &ns);
        if (!ns)
            have_dev = 0;
        dev[n] = 1e-9 * (double)ns;
        n++;
    }
    bench_row_times(r, have_dev ? dev : NULL, host, n);
    return 0;
}

/* One call with the context's statistics as given (NULL: off): its host
 * and device seconds. */
static int timed_call(ffnrt_context *ctx, bench_call call, void *arg, const ffnrt_stats_options *o, double *host,
                      double *dev)
{
    if (ffnrt_context_set_stats(ctx, o) != FFNRT_OK)
        return -1;
    double t0 = lab_now_s();
    ffnrt_status st = call(arg);
    *host = lab_now_s() - t0;
    uint64_t ns = 0;
    ffnrt_context_last_op_time(ctx, &ns);
    *dev = 1e-9 * (double)ns;
    return st == FFNRT_OK ? 0 : -1;
}

int bench_stats_row(ffnrt_context *ctx, bench_call call, void *arg, const bench_config *cfg, bench_rows *rows,
                    size_t k, int done)
{
    if (!cfg->stats)
        return 0;
    bench_row *r = bench_rows_push(rows);
    if (!r)
        return -1;
    *r = rows->v[k]; /* after the push: the off row may have moved */
    char path[40];
    snprintf(path, sizeof path, "%s%sstats", r->path, *r->path ? "+" : "");
    BENCH_SET(r->path, path);
    bench_progress(r);
    /* Off and on alternate, call by call, so that both see the same load
     * (the machine's other work moves a row's time by tens of percent
     * here): the ratio is of these medians, not of the off row's. */
    ffnrt_stats_options o = FFNRT_STATS_OPTIONS_INIT;
    o.bins = cfg->stats_bins;
    double on_dev[MAX_RUNS], on_host[MAX_RUNS], off_dev[MAX_RUNS], off_host[MAX_RUNS];
    double w0 = lab_now_s();
    int failed = timed_call(ctx, call, arg, &o, &on_host[0], &on_dev[0]) != 0; /* warm-up: builds the variant */
    bench_warmup_add(lab_now_s() - w0);
    int max_runs = cfg->max_runs < MAX_RUNS ? cfg->max_runs : MAX_RUNS;
    int n = 0, have_dev = 1;
    double start = lab_now_s();
    while (!failed && n < max_runs && (n < cfg->min_runs || lab_now_s() - start < 2 * cfg->budget_s)) {
        failed = timed_call(ctx, call, arg, NULL, &off_host[n], &off_dev[n]) != 0 ||
                 timed_call(ctx, call, arg, &o, &on_host[n], &on_dev[n]) != 0;
        bench_measure_add(off_host[n] + on_host[n]);
        have_dev &= off_dev[n] > 0 && on_dev[n] > 0;
        n++;
    }
    ffnrt_context_set_stats(ctx, NULL);
    if (failed || n == 0) {
        fprintf(stderr, "\nffnrt bench: %s %s with statistics: %s\n", r->group, r->op, ffnrt_last_error_message());
        rows->n--;
        return -1;
    }
    const bench_row *off = &rows->v[k];
    double off_ns = 1e9 * (have_dev ? lab_median(off_dev, n) : lab_median(off_host, n));
    double off_host_ns = 1e9 * lab_median(off_host, n);
    bench_row_times(r, have_dev ? on_dev : NULL, on_host, n);
    r->rate = off->rate * off->median_ns / r->median_ns;
    r->ratio = off_ns / r->median_ns;
    BENCH_SET(r->ratio_to, "stats-off");
    snprintf(r->note, sizeof r->note, "%u bins; off %.3f ms interleaved; host %.2fx", cfg->stats_bins, off_ns * 1e-6,
             off_host_ns / r->host_ns);
    if (done)
        bench_row_done(cfg, r);
    return 0;
}

void bench_row_device(bench_row *r, const bench_device *dev, const char *group)
{
    BENCH_SET(r->group, group);
    BENCH_SET(r->backend, ffnrt_backend_name(dev->info.backend));
    BENCH_SET(r->device, dev->info.name);
}

int bench_wants_op(const bench_config *cfg, const char *name)
{
    if (cfg->nops == 0)
        return 1;
    for (int i = 0; i < cfg->nops; i++)
        if (strcmp(cfg->ops[i], name) == 0)
            return 1;
    return 0;
}

/* -------------------------------------------------------------- progress */

static struct {
    int on;
    double start;
    int rows;
    int dirty;
    /* Kernels: the context of the device running now, what it held when
     * its current part began, what the devices before it built, and the
     * estimates of the current part and of everything after it. */
    ffnrt_context *ctx;
    uint64_t part_start, done_before, loaded_before;
    double part_estimate, later_estimate;
} progress;

static void kernels_of(ffnrt_context *ctx, uint64_t *built, uint64_t *loaded)
{
    ffnrt_kernel_stats k;
    *built = *loaded = 0;
    if (ctx && ffnrt_context_kernel_stats(ctx, &k) == FFNRT_OK)
        *built = k.built, *loaded = k.loaded;
}

/* "[1:02, 40 rows] 61 kernels built, ~95 to go; warm-up 48 s | opencl ffn:
 * swiglu 512x1376 fwd f32 fused t64": the kernels built so far on every
 * device, an estimate of those still to build (bench_kernel_estimate), and
 * the time in warm-up calls (compiling) so far. */
void bench_progress(const bench_row *r)
{
    if (!progress.on)
        return;
    int s = (int)(lab_now_s() - progress.start);
    uint64_t built, loaded;
    kernels_of(progress.ctx, &built, &loaded);
    double in_part = (double)(built - progress.part_start);
    double to_go = (progress.part_estimate > in_part ? progress.part_estimate - in_part : 0) + progress.later_estimate;
    char cached[40] = "";
    if (loaded + progress.loaded_before)
        snprintf(cached, sizeof cached, " (%llu from cache)", (unsigned long long)(loaded + progress.loaded_before));
    fprintf(stderr, "\r\033[K[%d:%02d, %d rows] %llu kernels built%s, ~%.0f to go; warm-up %.0f s | %s %s: %s %s %s %s %s",
            s / 60, s % 60, progress.rows, (unsigned long long)(progress.done_before + built), cached, to_go,
            warmup_total_s, r->backend, r->group, r->op, r->dir, r->dtype, r->path, r->shape);
    fflush(stderr);
    progress.dirty = 1;
}

static void progress_clear(void)
{
    if (progress.on && progress.dirty) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
        progress.dirty = 0;
    }
}

void bench_row_done(const bench_config *cfg, const bench_row *r)
{
    progress.rows++;
    if (cfg->verbose_rows) {
        progress_clear();
        bench_print_row(stdout, r);
        fflush(stdout);
    }
}

/* ---------------------------------------------------------- element-wise */

/* One element-wise workload: the copy kernel, an activation or a GLU kind
 * (split layout: gate and value tensors), forward or backward. */
typedef enum work_kind { WORK_COPY, WORK_ACTIVATION, WORK_GLU } work_kind;

typedef struct ew_tensors {
    ffnrt_tensor *x, *value, *dy, *y, *y2, *slopes;
} ew_tensors;

typedef struct ew_work {
    work_kind kind;
    int id; /* ffnrt_activation or ffnrt_glu */
    int backward;
    ffnrt_compute compute;
    ffnrt_context *ctx;
    const ew_tensors *t;
} ew_work;

static const char *work_name(const ew_work *w)
{
    return w->kind == WORK_COPY ? "copy"
         : w->kind == WORK_ACTIVATION ? ffnrt_activation_name((ffnrt_activation)w->id)
                                      : ffnrt_glu_name((ffnrt_glu)w->id);
}

/* Tensors read and written, in units of one tensor's bytes. */
static int work_traffic(const ew_work *w)
{
    if (w->kind == WORK_GLU)
        return w->backward ? 5 : 3;
    return w->backward ? 3 : 2;
}

static ffnrt_status ew_call(void *arg)
{
    const ew_work *w = arg;
    const ew_tensors *t = w->t;
    if (w->kind == WORK_COPY)
        return ffnrt_copy(w->ctx, t->x, t->y);
    if (w->kind == WORK_ACTIVATION) {
        ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT((ffnrt_activation)w->id);
        d.slopes = t->slopes;
        d.compute = w->compute;
        return w->backward ? ffnrt_activation_backward(w->ctx, &d, t->x, t->dy, t->y)
                           : ffnrt_activation_forward(w->ctx, &d, t->x, t->y);
    }
    ffnrt_glu_desc d = FFNRT_GLU_DESC_INIT((ffnrt_glu)w->id);
    d.compute = w->compute;
    /* gate = x; the gradients land in y (dgate) and y2 (dvalue). */
    return w->backward ? ffnrt_glu_backward_split(w->ctx, &d, t->x, t->value, t->dy, t->y, t->y2)
                       : ffnrt_glu_forward_split(w->ctx, &d, t->x, t->value, t->y);
}

/* Fills t with n values of U[-10, 10) from a fixed seed (the same inputs
 * on every device), in its dtype. */
static ffnrt_status fill(ffnrt_tensor *t, uint32_t seed)
{
    size_t n = ffnrt_tensor_numel(t);
    ffnrt_dtype dtype = ffnrt_tensor_dtype(t);
    float *v = malloc(n * sizeof *v);
    uint16_t *h = dtype == FFNRT_DTYPE_F32 ? NULL : malloc(n * sizeof *h);
    if (!v || (dtype != FFNRT_DTYPE_F32 && !h)) {
        free(v);
        free(h);
        return FFNRT_ERROR_OUT_OF_HOST_MEMORY;
    }
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 20.0f;
    }
    if (dtype == FFNRT_DTYPE_F16)
        ffnrt_f32_to_f16_array(v, h, n);
    else if (dtype == FFNRT_DTYPE_BF16)
        ffnrt_f32_to_bf16_array(v, h, n);
    ffnrt_status st = ffnrt_tensor_write(t, h ? (void *)h : (void *)v, ffnrt_tensor_bytes(t));
    free(v);
    free(h);
    return st;
}

static void size_label(char *out, size_t len, size_t n)
{
    snprintf(out, len, "%zu", n);
}

/* Which element-wise rows run, shared by the rows and the kernel estimate:
 * a (size, storage type) pair of the part, and within it one op in one
 * direction and arithmetic (compute c: 0 the storage's, 1 fp16). */
static int ew_pair_runs(const bench_device *dev, const bench_config *cfg, size_t n, ffnrt_dtype dtype)
{
    int wanted = 0;
    for (int j = 0; j < cfg->ndtypes; j++)
        wanted |= cfg->dtypes[j] == dtype;
    if (dtype != FFNRT_DTYPE_F32 && cfg->f32_only_above && n > (size_t)cfg->f32_only_above)
        return 0;
    /* f16 storage also runs for the f16a rows' copy limit. */
    return wanted || (dtype == FFNRT_DTYPE_F16 && cfg->f16_arithmetic && dev->info.fp16_arithmetic);
}

static int ew_row_runs(const bench_config *cfg, ffnrt_dtype dtype, size_t n, const ew_work *w);

/* The rows of one size and storage type: the copy kernel first (the
 * limit), then every selected activation and GLU kind forward and
 * backward, and for fp16 the same in fp16 arithmetic where the device has
 * it (against the same copy). */
static int ew_size_dtype(const bench_device *dev, const bench_config *cfg, ffnrt_dtype dtype, size_t n,
                         bench_rows *rows)
{
    ffnrt_context *ctx = dev->ctx;
    int64_t shape[2] = {(int64_t)(n / 1024), 1024}, channels = 1024;
    ew_tensors t = {0};
    ffnrt_tensor **all[5] = {&t.x, &t.value, &t.dy, &t.y, &t.y2};
    int failed = 0;
    for (int i = 0; i < 5 && !failed; i++)
        failed = ffnrt_tensor_create(ctx, dtype, 2, shape, all[i]) != FFNRT_OK ||
                 fill(*all[i], 12345u + 7u * (uint32_t)i) != FFNRT_OK;
    if (!failed)
        failed = ffnrt_tensor_create(ctx, dtype, 1, &channels, &t.slopes) != FFNRT_OK || fill(t.slopes, 99u) != FFNRT_OK;
    if (failed)
        fprintf(stderr, "ffnrt bench: %s: %s\n", dev->info.name, ffnrt_last_error_message());
    double copy_gbps = 0;
    int computes = dtype == FFNRT_DTYPE_F16 && cfg->f16_arithmetic ? 2 : 1;
    int plain = 0;
    for (int k = 0; k < cfg->ndtypes; k++)
        plain |= cfg->dtypes[k] == dtype;
    for (int c = 0; c < computes && !failed; c++) {
        ffnrt_compute compute = c ? FFNRT_COMPUTE_F16 : FFNRT_COMPUTE_F32;
        if (compute == FFNRT_COMPUTE_F16 && !dev->info.fp16_arithmetic)
            break; /* reported once per device by the caller */
        for (int kind = c ? WORK_ACTIVATION : WORK_COPY; kind <= WORK_GLU && !failed; kind++) {
            if (kind != WORK_COPY && c == 0 && !plain)
                break; /* only the copy, as the limit of the f16a rows */
            int ids = kind == WORK_COPY ? 1 : kind == WORK_ACTIVATION ? FFNRT_ACT_COUNT : FFNRT_GLU_COUNT;
            for (int id = 0; id < ids && !failed; id++)
                for (int backward = 0; backward < (kind == WORK_COPY ? 1 : 2) && !failed; backward++) {
                    ew_work w = {(work_kind)kind, id, backward, compute, ctx, &t};
                    if (!ew_row_runs(cfg, dtype, n, &w))
                        continue;
                    bench_row *r = bench_rows_push(rows);
                    if (!r) {
                        failed = 1;
                        break;
                    }
                    bench_row_device(r, dev, kind == WORK_COPY ? "limit" : "elementwise");
                    BENCH_SET(r->op, work_name(&w));
                    BENCH_SET(r->dir, backward ? "bwd" : "fwd");
                    BENCH_SET(r->dtype, compute == FFNRT_COMPUTE_F16 ? "f16a" : ffnrt_dtype_name(dtype));
                    size_label(r->shape, sizeof r->shape, n);
                    r->size = (double)n;
                    if (bench_measure(ctx, ew_call, &w, cfg, r) != 0) {
                        rows->n--;
                        failed = 1;
                        break;
                    }
                    double bytes = (double)work_traffic(&w) * (double)ffnrt_tensor_bytes(t.x);
                    r->rate = bytes / (r->median_ns * 1e-9) * 1e-9;
                    BENCH_SET(r->rate_unit, "GB/s");
                    if (kind == WORK_COPY)
                        copy_gbps = r->rate;
                    r->ratio = copy_gbps > 0 ? r->rate / copy_gbps : 0;
                    BENCH_SET(r->ratio_to, "copy");
                    bench_row_done(cfg, r);
                    if (kind != WORK_COPY && bench_stats_row(ctx, ew_call, &w, cfg, rows, rows->n - 1, 1) != 0)
                        failed = 1;
                }
        }
    }
    for (int i = 0; i < 5; i++)
        ffnrt_tensor_destroy(*all[i]);
    ffnrt_tensor_destroy(t.slopes);
    return failed ? -1 : 0;
}

static int ew_row_runs(const bench_config *cfg, ffnrt_dtype dtype, size_t n, const ew_work *w)
{
    if (w->kind != WORK_COPY && (!bench_wants_op(cfg, work_name(w)) || !(cfg->directions & (1 << w->backward))))
        return 0;
    return !(w->backward && cfg->bwd_only_f32_at && (n != cfg->bwd_only_f32_at || dtype != FFNRT_DTYPE_F32));
}

/* The element-wise kernels a run builds on a device: one per storage type,
 * arithmetic, op and direction, whatever the size (a size is the same
 * kernel over more groups), with a statistics variant of each op's under
 * --stats. */
double bench_part_elementwise_kernels(const bench_device *dev, const bench_config *cfg)
{
    static const ffnrt_dtype order[3] = {FFNRT_DTYPE_F32, FFNRT_DTYPE_F16, FFNRT_DTYPE_BF16};
    double kernels = 0;
    int any_op = 0;
    for (int k = 0; k < 3; k++) {
        /* The first size of the type that runs carries its kernels; the
         * backward rows may run at one size only. */
        unsigned char seen[2][WORK_GLU + 1][64][2];
        memset(seen, 0, sizeof seen);
        for (int si = 0; si < cfg->nsizes; si++) {
            size_t n = cfg->sizes[si];
            if (!ew_pair_runs(dev, cfg, n, order[k]))
                continue;
            int plain = 0;
            for (int j = 0; j < cfg->ndtypes; j++)
                plain |= cfg->dtypes[j] == order[k];
            int computes = order[k] == FFNRT_DTYPE_F16 && cfg->f16_arithmetic && dev->info.fp16_arithmetic ? 2 : 1;
            for (int c = 0; c < computes; c++)
                for (int kind = c ? WORK_ACTIVATION : WORK_COPY; kind <= WORK_GLU; kind++) {
                    if (kind != WORK_COPY && c == 0 && !plain)
                        break;
                    int ids = kind == WORK_COPY ? 1 : kind == WORK_ACTIVATION ? FFNRT_ACT_COUNT : FFNRT_GLU_COUNT;
                    for (int id = 0; id < ids && id < 64; id++)
                        for (int backward = 0; backward < (kind == WORK_COPY ? 1 : 2); backward++) {
                            ew_work w = {(work_kind)kind, id, backward, c ? FFNRT_COMPUTE_F16 : FFNRT_COMPUTE_F32,
                                         NULL, NULL};
                            if (!ew_row_runs(cfg, order[k], n, &w) || seen[c][kind][id][backward])
                                continue;
                            seen[c][kind][id][backward] = 1;
                            kernels += kind != WORK_COPY && cfg->stats ? 2 : 1;
                            any_op |= kind != WORK_COPY;
                        }
                }
        }
    }
    return kernels + (any_op ? 2 : 0); /* the op-rate roofs' probes (ew_roof_notes) */
}

/* Floating-point operations an element costs (bench/op_counts.h, counted
 * from the math by tools/math_ops.sh: adds, multiplies, FMAs, divides,
 * negations, the FMA pipes' work; compares, selects and integer steps
 * issue beside them): on OpenCL, where fma() is one rounding; on Vulkan,
 * where GLSL's exact products are Dekker's. */
static const struct op_count {
    const char *name;
    int fused_fp, dekker_fp;
} op_counts[] = {
#define OP_COUNT_ROW_(name, fused, unfused, fused_fp, unfused_fp) {#name, fused_fp, unfused_fp},
    BENCH_OP_COUNTS(OP_COUNT_ROW_)
#undef OP_COUNT_ROW_
};

static int op_count(const char *name, int dekker)
{
    for (size_t i = 0; i < sizeof op_counts / sizeof op_counts[0]; i++)
        if (strcmp(op_counts[i].name, name) == 0)
            return dekker ? op_counts[i].dekker_fp : op_counts[i].fused_fp;
    return -1;
}

/* An element-wise row's floating-point operations an element: its op's
 * math, and the products that join it (a backward's dy, a gated kind's
 * value); -1 for rows it does not know (the copy, fp16 arithmetic's). */
static int row_ops(const bench_row *r, int dekker)
{
    ffnrt_activation act;
    ffnrt_glu glu;
    char name[48];
    int bwd = strcmp(r->dir, "bwd") == 0;
    if (strcmp(r->group, "elementwise") != 0 || strcmp(r->dtype, "f16a") == 0)
        return -1;
    if (ffnrt_activation_from_name(r->op, &act) == FFNRT_OK) {
        /* PReLU is leaky ReLU with a slope loaded per channel. */
        snprintf(name, sizeof name, "%s%s", act == FFNRT_ACT_PRELU ? "leaky_relu" : r->op, bwd ? "_grad" : "");
        int ops = op_count(name, dekker);
        return ops < 0 ? -1 : ops + bwd; /* dy * f'(x) */
    }
    if (ffnrt_glu_from_name(r->op, &glu) != FFNRT_OK)
        return -1;
    if (bwd) { /* dvalue = dy phi(g), dgate = dy value phi'(g) */
        snprintf(name, sizeof name, "%s_grad", r->op);
        int ops = op_count(name, dekker);
        return ops < 0 ? -1 : ops + 3;
    }
    int ops = op_count(ffnrt_activation_name(ffnrt_glu_row_gate(glu)), dekker);
    return ops < 0 ? -1 : ops + 1; /* value * phi(g) */
}

/* Each element-wise row of this device against its two roofs: its bytes at
 * the copy kernel's rate (its ratio) and its floating-point operations at
 * the FMA probe's (an FMA's two flops are one operation, as a multiply or
 * an add is). Metrics: "fp_ops" an element, "op_roof" the share of its
 * time the operations explain, "of_roof" the larger of the two shares
 * (1: at a roof). */
static void ew_roof_notes(const bench_device *dev, const bench_config *cfg, bench_rows *rows, size_t first)
{
    double fma_gflops = 0, int8_gops = 0;
    size_t end = rows->n, known = 0;
    int dekker = dev->info.backend == FFNRT_BACKEND_VULKAN;
    for (size_t i = first; i < end; i++)
        known += row_ops(&rows->v[i], dekker) >= 0;
    if (known == 0)
        return; /* the copy alone: no roof to measure */
    bench_roofs(dev, cfg, rows, &fma_gflops, &int8_gops);
    for (size_t i = first; i < end && fma_gflops > 0; i++) {
        bench_row *r = &rows->v[i];
        int ops = row_ops(r, dekker);
        if (ops < 0 || r->median_ns <= 0)
            continue;
        double op_share = 2.0 * ops * r->size / (fma_gflops * r->median_ns);
        bench_row_metric(r, "fp_ops", ops);
        bench_row_metric(r, "op_roof", op_share);
        bench_row_metric(r, "of_roof", op_share > r->ratio ? op_share : r->ratio);
        if (!r->note[0])
            snprintf(r->note, sizeof r->note, "%d fp op/elem, %.2f of the op roof", ops, op_share);
    }
}

int bench_part_elementwise(const bench_device *dev, const bench_config *cfg, bench_rows *rows)
{
    size_t first = rows->n;
    int want_f16 = 0;
    for (int k = 0; k < cfg->ndtypes; k++)
        want_f16 |= cfg->dtypes[k] == FFNRT_DTYPE_F16;
    if (cfg->f16_arithmetic && !dev->info.fp16_arithmetic) {
        char peer[160];
        snprintf(peer, sizeof peer, "f16a on %.100s: the device has no fp16 arithmetic", dev->info.name);
        bench_meta_add_peer(dev->meta, peer);
    }
    static const ffnrt_dtype order[3] = {FFNRT_DTYPE_F32, FFNRT_DTYPE_F16, FFNRT_DTYPE_BF16};
    int failed = 0;
    for (int s = 0; s < cfg->nsizes; s++)
        for (int k = 0; k < 3; k++)
            if (ew_pair_runs(dev, cfg, cfg->sizes[s], order[k]))
                failed |= ew_size_dtype(dev, cfg, order[k], cfg->sizes[s], rows) != 0;
    (void)want_f16;
    if (!failed)
        ew_roof_notes(dev, cfg, rows, first);
    return failed ? -1 : 0;
}

/* ------------------------------------------------------------ the run */

typedef struct bench_part {
    const char *group;
    int (*run)(const bench_device *dev, const bench_config *cfg, bench_rows *rows);
    /* An estimate of the kernels it builds in the device's context, for the
     * progress line (NULL: none there; the start rows build theirs in
     * contexts of their own). */
    double (*kernels)(const bench_device *dev, const bench_config *cfg);
} bench_part;

/* Every device part, in the order they run on each device. Others add
 * theirs here (cold/warm start, dispatcher regret). */
static const bench_part parts[] = {
    {"elementwise", bench_part_elementwise, bench_part_elementwise_kernels},
    {"ffn", bench_part_ffn, bench_part_ffn_kernels},
    {"start", bench_part_start, NULL},
    {"stack", bench_part_stack, NULL},
};
#define NPARTS (sizeof parts / sizeof parts[0])

/* The kernels part p builds on selected device d, as known when device
 * `now` runs: what the devices before `now` built for it (their mean:
 * every device runs the same work), else the estimate from the selection. */
static double kernel_estimate(double est[][NPARTS], uint64_t built[][NPARTS], int d, size_t p, int now)
{
    double sum = 0;
    int n = 0;
    for (int j = 0; j < now && j < BENCH_MAX_DEVICES; j++)
        sum += (double)built[j][p], n++;
    (void)d;
    return n ? sum / n : est[d][p];
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ffnrt bench [--quick | --full] [selection] [method] [output]\n"
            "       ffnrt bench --compare OLD.json NEW.json [--threshold F] [--all] [--by time|ratio]\n"
            "       ffnrt bench --plot RUN.json [DIR]   (the table and plots again from a saved run)\n"
            "presets: --quick (scripts/bench's default; about a minute here with its ~155 kernels in the disk cache, minutes\n"
            "         more the first time, compiling them): element-wise ops forward and backward in f32 at 1M\n"
            "         and 4M elements and f16 at 1M; FFN 768x3072 and 512x1376 at 1 and 64 tokens, f32 and f16;\n"
            "         the host C loop at 1M. --full: 1M, 4M, 16M and 64M in f32, f16, bf16 and fp16 arithmetic,\n"
            "         every FFN shape at 1, 8, 64 and 512 tokens, f32 and f16, the host C loop at every size (the default)\n"
            "selection (comma-separated lists; each replaces the preset's choice):\n"
            "  --only PARTS       elementwise,ffn,start,peer,stack (start: cold and warm start of a gated layer;\n"
            "                     peer: the host C loop; CLBlast, ggml and PyTorch (the train rows' step)\n"
            "                     run with ffn; stack: --gguf's FFN stack)\n"
            "  --gguf FILE        a GGUF model: its every FFN layer in sequence per token (norm, FFN, residual)\n"
            "                     at 1 and 64 tokens (--tokens), group \"stack\" (scripts/bench passes SmolLM2's)\n"
            "  --op NAMES         activations and GLU kinds (gelu,swiglu), FFN workloads (dense-gelu,swiglu)\n"
            "  --device NAMES     backend (opencl, vulkan) or a substring of the device's name, vendor or API (pocl)\n"
            "  --precision LIST   f32,f16,bf16,f16a (f16a: fp16 arithmetic on f16 storage)\n"
            "  --size LIST        element-wise sizes: 1M,4M,16M,64M or numbers (multiples of 1024)\n"
            "  --dir LIST         fwd,bwd\n"
            "  --shape LIST       FFN d_model x hidden: 768x3072,512x1376,2048x5632,4096x14336\n"
            "  --tokens LIST      FFN token counts: 1,8,64,512\n"
            "  --path LIST        FFN paths: fused,unfused\n"
            "  --weights LIST     FFN weights in block formats: q8_0,q4_0,q4_1,q4_k,q6_k (f32 activations; none: no\n"
            "                     quantized rows); presets: quick q4_0 at 512x1376, full q8_0,q4_0,q4_1 (and the\n"
            "                     K-quants at decode) at 576x1536, 2048x5632 and 4096x14336\n"
            "  --no-regret        FFN rows without the dispatcher's regret (every candidate path and kernel timed,\n"
            "                     then the automatic and the tuned choice: group \"dispatch\")\n"
            "  --stats            element-wise and FFN rows again with statistics on (path \"stats\"), their ratio\n"
            "                     to the same row off in this run; --stats-bins N: with N-bin histograms (default 0)\n"
            "method: --repeats N (most runs per row), --min-runs N, --budget SECONDS (per row)\n"
            "output: --out DIR (default bench-results: bench.json, bench.csv, table.txt, plots), --no-plots,\n"
            "        --json FILE, --csv FILE (extra copies), --progress / --no-progress (default: on a terminal: what runs,\n"
            "        kernels built and an estimate of those to go, time in warm-up calls so far),\n"
            "        --quiet (no rows while running, only the final table)\n");
}

/* Splits a comma-separated list in place into out[]. */
static int split_list(char *s, const char **out, int max)
{
    int n = 0;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ","))
        if (*tok && n < max)
            out[n++] = tok;
    return n;
}

/* An element count: a multiple of 1024, at most the largest a tensor may
 * hold (2^32 - 1 elements), checked before any scaling can wrap. */
#define BENCH_MAX_SIZE ((uint64_t)UINT32_MAX / 1024 * 1024)

static int parse_size(const char *s, size_t *out)
{
    uint64_t v;
    if (cli_parse_count(s, 1024, BENCH_MAX_SIZE, &v) != 0 || v % 1024)
        return -1;
    *out = (size_t)v;
    return 0;
}

/* An option's whole value as an integer in [min, max], or a message. */
static int option_int(const char *opt, const char *v, int64_t min, int64_t max, int64_t *out)
{
    if (cli_parse_int(v, min, max, out) == 0)
        return 0;
    fprintf(stderr, "ffnrt bench: %s %s: not an integer in [%lld, %lld]\n", opt, v, (long long)min, (long long)max);
    return -1;
}

int bench_mkdir_p(const char *dir) { return ffnrt_lab_make_dirs(dir, 1); }

int bench_device_selected(const ffnrt_device_info *info, const char *const *names, int n)
{
    if (n == 0)
        return 1;
    for (int i = 0; i < n; i++) {
        if (strcmp(names[i], ffnrt_backend_name(info->backend)) == 0)
            return 1;
        /* case-insensitive substring of the name, vendor or API version
         * ("pocl" is in PoCL's, "llvmpipe" in lavapipe's name) */
        size_t ln = strlen(names[i]);
        const char *fields[3] = {info->name, info->vendor, info->api_version};
        for (int f = 0; f < 3; f++)
            for (const char *p = fields[f]; *p; p++)
                if (strncasecmp(p, names[i], ln) == 0)
                    return 1;
    }
    return 0;
}

void bench_meta_init(bench_meta *m, const char *format, const char *preset)
{
    memset(m, 0, sizeof *m);
    snprintf(m->format, sizeof m->format, "%s", format);
    snprintf(m->version, sizeof m->version, "%s", FFNRT_VERSION_STRING);
    snprintf(m->commit, sizeof m->commit, "%s", FFNRT_BENCH_COMMIT);
    snprintf(m->preset, sizeof m->preset, "%s", preset);
    struct tm tm;
    int ms = 0;
    if (ffnrt_lab_utc_now(&tm, &ms) == 0)
        strftime(m->date, sizeof m->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (ffnrt_lab_host_name(m->host, sizeof m->host) != 0)
        snprintf(m->host, sizeof m->host, "unknown");
}

void bench_meta_add_device(bench_meta *m, const ffnrt_device_info *info)
{
    if (m->ndevices >= BENCH_MAX_DEVICES)
        return;
    bench_device_meta *d = &m->devices[m->ndevices++];
    snprintf(d->backend, sizeof d->backend, "%s", ffnrt_backend_name(info->backend));
    bench_row_set(d->name, sizeof d->name, info->name);
    snprintf(d->driver, sizeof d->driver, "%s", info->driver_version);
    snprintf(d->api, sizeof d->api, "%s", info->api_version);
}

/* The bench; the option values it copies (split in place) go to lists,
 * which the caller frees whatever the way out. */
static int bench_main(int argc, char **argv, char **lists, int *nlists)
{
    if (argc >= 1 && strcmp(argv[0], "--compare") == 0)
        return bench_compare_main(argc - 1, argv + 1);
    if (argc >= 1 && strcmp(argv[0], "--plot") == 0) {
        /* Table and plots again from a saved run, no device needed. */
        const char *files[2] = {NULL, NULL};
        int nfiles = cli_args_operands(argc - 1, argv + 1, files, 2);
        if (nfiles < 1) {
            fprintf(stderr, "usage: ffnrt bench --plot [--] RUN.json [DIR]\n");
            return 2;
        }
        const char *dir = nfiles == 2 ? files[1] : "bench-results";
        bench_rows rows = {0};
        bench_meta meta;
        char err[512];
        if (bench_read_json(files[0], &rows, &meta, err, sizeof err) != 0) {
            fprintf(stderr, "ffnrt bench --plot: %s\n", err);
            return 2;
        }
        int rc = 0;
        if (bench_mkdir_p(dir) != 0) {
            fprintf(stderr, "ffnrt bench --plot: cannot create %s\n", dir);
            rc = 1;
        } else {
            bench_print_table(stdout, &rows, &meta);
            if (bench_write_plots(dir, &rows, &meta, err, sizeof err) != 0) {
                fprintf(stderr, "ffnrt bench --plot: %s\n", err);
                rc = 1;
            } else {
                printf("wrote the plots of %s into %s/\n", files[0], dir);
            }
        }
        bench_rows_free(&rows);
        return rc;
    }
    bench_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = "full"; /* scripts/bench passes --quick unless told --full */
    cfg.quick = 0;
    cfg.verbose_rows = 1;
    cfg.dispatch_regret = 1;
    int explicit_preset = 0, plots = 1, progress_mode = -1; /* -1: on a terminal */
    int do_parts = 0;                                    /* bit i: parts[i]; bit NPARTS: host peer; 0: all */
    const char *out_dir = "bench-results", *json_extra = NULL, *csv_extra = NULL;
    const char *devices[BENCH_MAX_LIST];
    int ndevices = 0, repeats = 0, min_runs = 0;
    double budget = -1;
    const char *precisions[8];
    int nprec = -1, ndir = -1;
    const char *dirs[4];
    cli_args args;
    cli_args_init(&args, argc, argv);
    const char *a;
    cli_arg_kind kind;
    while ((kind = cli_args_next(&args, &a)) != CLI_END) {
        char *v = NULL;
        if (kind == CLI_OPERAND) {
            fprintf(stderr, "ffnrt bench: unexpected argument %s (ffnrt bench --help)\n", a);
            return 2;
        }
        int takes = strcmp(a, "--op") == 0 || strcmp(a, "--device") == 0 || strcmp(a, "--precision") == 0 ||
                    strcmp(a, "--size") == 0 || strcmp(a, "--dir") == 0 || strcmp(a, "--shape") == 0 ||
                    strcmp(a, "--tokens") == 0 || strcmp(a, "--path") == 0 || strcmp(a, "--only") == 0 ||
                    strcmp(a, "--repeats") == 0 || strcmp(a, "--min-runs") == 0 || strcmp(a, "--budget") == 0 ||
                    strcmp(a, "--out") == 0 || strcmp(a, "--json") == 0 || strcmp(a, "--csv") == 0 ||
                    strcmp(a, "--stats-bins") == 0 || strcmp(a, "--weights") == 0 || strcmp(a, "--gguf") == 0;
        if (takes) {
            const char *value = cli_args_value(&args);
            if (!value || *nlists >= 16) {
                fprintf(stderr, "ffnrt bench: %s%s\n", a, !value ? " needs a value" : ": too many options");
                return 2;
            }
            v = lists[(*nlists)++] = strdup(value);
            if (!v) {
                fprintf(stderr, "ffnrt bench: out of memory\n");
                return 1;
            }
        }
        if (strcmp(a, "--quick") == 0) {
            cfg.preset = "quick", cfg.quick = 1, explicit_preset = 1;
        } else if (strcmp(a, "--full") == 0) {
            cfg.preset = "full", cfg.quick = 0, explicit_preset = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--op") == 0) {
            cfg.nops = split_list(v, cfg.ops, BENCH_MAX_LIST);
        } else if (strcmp(a, "--device") == 0) {
            ndevices = split_list(v, devices, BENCH_MAX_LIST);
        } else if (strcmp(a, "--precision") == 0) {
            nprec = split_list(v, precisions, 8);
        } else if (strcmp(a, "--dir") == 0) {
            ndir = split_list(v, dirs, 4);
        } else if (strcmp(a, "--size") == 0) {
            const char *items[BENCH_MAX_LIST];
            int n = split_list(v, items, BENCH_MAX_LIST);
            for (int k = 0; k < n && cfg.nsizes < BENCH_MAX_LIST; k++)
                if (parse_size(items[k], &cfg.sizes[cfg.nsizes++]) != 0) {
                    fprintf(stderr, "ffnrt bench: --size %s: a positive multiple of 1024 (1M, 4096, ...), at most "
                                    "%lluK\n", items[k], (unsigned long long)(BENCH_MAX_SIZE >> 10));
                    return 2;
                }
        } else if (strcmp(a, "--shape") == 0) {
            cfg.nshapes = split_list(v, cfg.shapes, BENCH_MAX_LIST);
        } else if (strcmp(a, "--tokens") == 0) {
            const char *items[BENCH_MAX_LIST];
            int n = split_list(v, items, BENCH_MAX_LIST);
            for (int k = 0; k < n && cfg.ntokens < BENCH_MAX_LIST; k++)
                if (option_int("--tokens", items[k], 1, UINT32_MAX, &cfg.tokens[cfg.ntokens++]) != 0)
                    return 2;
        } else if (strcmp(a, "--path") == 0) {
            const char *items[4];
            int n = split_list(v, items, 4);
            for (int k = 0; k < n; k++) {
                int bit = strcmp(items[k], "fused") == 0 ? 1 : strcmp(items[k], "unfused") == 0 ? 2 : 0;
                if (!bit) {
                    fprintf(stderr, "ffnrt bench: --path %s: fused or unfused\n", items[k]);
                    return 2;
                }
                cfg.paths |= bit;
            }
        } else if (strcmp(a, "--only") == 0) {
            const char *items[8];
            int n = split_list(v, items, 8);
            for (int k = 0; k < n; k++) {
                int found = 0;
                for (size_t p = 0; p < NPARTS; p++)
                    if (strcmp(items[k], parts[p].group) == 0)
                        do_parts |= 1 << p, found = 1;
                if (strcmp(items[k], "peer") == 0)
                    do_parts |= 1 << NPARTS, found = 1;
                if (!found) {
                    fprintf(stderr, "ffnrt bench: --only %s: one of", items[k]);
                    for (size_t p = 0; p < NPARTS; p++)
                        fprintf(stderr, " %s,", parts[p].group);
                    fprintf(stderr, " peer\n");
                    return 2;
                }
            }
        } else if (strcmp(a, "--repeats") == 0 || strcmp(a, "--min-runs") == 0) {
            int64_t runs;
            if (option_int(a, v, 1, 1000000, &runs) != 0)
                return 2;
            *(strcmp(a, "--repeats") == 0 ? &repeats : &min_runs) = (int)runs;
        } else if (strcmp(a, "--stats-bins") == 0) {
            int64_t bins;
            if (option_int(a, v, 0, FFNRT_STATS_MAX_BINS, &bins) != 0)
                return 2;
            cfg.stats = 1;
            cfg.stats_bins = (uint32_t)bins;
        } else if (strcmp(a, "--budget") == 0) {
            if (cli_parse_double(v, 0, 86400, &budget) != 0) {
                fprintf(stderr, "ffnrt bench: --budget %s: seconds a row, a number in [0, 86400]\n", v);
                return 2;
            }
        } else if (strcmp(a, "--out") == 0) {
            out_dir = v;
        } else if (strcmp(a, "--json") == 0) {
            json_extra = v;
        } else if (strcmp(a, "--csv") == 0) {
            csv_extra = v;
        } else if (strcmp(a, "--no-plots") == 0) {
            plots = 0;
        } else if (strcmp(a, "--progress") == 0) {
            progress_mode = 1;
        } else if (strcmp(a, "--no-progress") == 0) {
            progress_mode = 0;
        } else if (strcmp(a, "--quiet") == 0) {
            cfg.verbose_rows = 0;
        } else if (strcmp(a, "--weights") == 0) {
            const char *items[8];
            int n = split_list(v, items, 8);
            cfg.formats_given = 1;
            for (int k = 0; k < n; k++) {
                ffnrt_weight_format f;
                if (strcmp(items[k], "none") == 0)
                    continue;
                if (ffnrt_weight_format_from_name(items[k], &f) != FFNRT_OK || f < FFNRT_WEIGHT_Q8_0) {
                    fprintf(stderr, "ffnrt bench: --weights %s: q8_0, q4_0, q4_1, q4_k, q6_k or none\n", items[k]);
                    return 2;
                }
                cfg.formats[cfg.nformats++] = f;
            }
        } else if (strcmp(a, "--gguf") == 0) {
            cfg.gguf_path = v;
        } else if (strcmp(a, "--no-regret") == 0) {
            cfg.dispatch_regret = 0;
        } else if (strcmp(a, "--stats") == 0) {
            cfg.stats = 1;
        } else if (strcmp(a, "--no-ffn") == 0) { /* older spellings */
            do_parts |= 1 << 0 | 1 << NPARTS;
        } else if (strcmp(a, "--ffn-only") == 0) {
            do_parts |= 1 << 1;
        } else {
            fprintf(stderr, "ffnrt bench: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    (void)explicit_preset;
    /* Names must be known ones, so a typo selects nothing silently never. */
    for (int i = 0; i < cfg.nops; i++) {
        ffnrt_activation act;
        ffnrt_glu glu;
        if (strcmp(cfg.ops[i], "copy") != 0 && strcmp(cfg.ops[i], "dense-gelu") != 0 &&
            ffnrt_activation_from_name(cfg.ops[i], &act) != FFNRT_OK && ffnrt_glu_from_name(cfg.ops[i], &glu) != FFNRT_OK) {
            fprintf(stderr, "ffnrt bench: --op %s: not an activation, GLU kind or FFN workload\n", cfg.ops[i]);
            return 2;
        }
    }
    /* Preset defaults for what was not chosen. */
    int preset_sizes = cfg.nsizes == 0;
    if (preset_sizes) {
        static const size_t quick[] = {1u << 20, 4u << 20}, full[] = {1u << 20, 4u << 20, 16u << 20, 64u << 20};
        const size_t *s = cfg.quick ? quick : full;
        cfg.nsizes = cfg.quick ? 2 : 4;
        memcpy(cfg.sizes, s, (size_t)cfg.nsizes * sizeof *s);
        /* quick: 16-bit storage at 1M only (4M adds a second point to the fp32 curves) */
        if (cfg.quick && nprec < 0)
            cfg.f32_only_above = 1 << 20;
    }
    if (nprec < 0) {
        cfg.dtypes[cfg.ndtypes++] = FFNRT_DTYPE_F32;
        cfg.dtypes[cfg.ndtypes++] = FFNRT_DTYPE_F16;
        if (!cfg.quick) {
            cfg.dtypes[cfg.ndtypes++] = FFNRT_DTYPE_BF16;
            cfg.f16_arithmetic = 1;
        }
    } else {
        cfg.precision_given = 1;
        for (int k = 0; k < nprec; k++) {
            if (strcmp(precisions[k], "f32") == 0)
                cfg.dtypes[cfg.ndtypes++] = FFNRT_DTYPE_F32;
            else if (strcmp(precisions[k], "f16") == 0)
                cfg.dtypes[cfg.ndtypes++] = FFNRT_DTYPE_F16;
            else if (strcmp(precisions[k], "bf16") == 0)
                cfg.dtypes[cfg.ndtypes++] = FFNRT_DTYPE_BF16;
            else if (strcmp(precisions[k], "f16a") == 0)
                cfg.f16_arithmetic = 1;
            else {
                fprintf(stderr, "ffnrt bench: --precision %s: f32, f16, bf16 or f16a\n", precisions[k]);
                return 2;
            }
            if (cfg.ndtypes > 3)
                cfg.ndtypes = 3;
        }
    }
    cfg.directions = ndir < 0 ? 3 : 0;
    /* quick: backward rows in f32 at 1M only (their kernels are the forward
     * ones' siblings; the full preset runs them everywhere), which keeps the
     * preset at about 25 s of CPU on a 2-core AVX-512 EPYC with a warm
     * cache, within 90 s on CI's 3x slower CPUs. */
    if (cfg.quick && ndir < 0 && nprec < 0 && preset_sizes)
        cfg.bwd_only_f32_at = 1u << 20;
    for (int k = 0; k < ndir; k++) {
        int bit = strcmp(dirs[k], "fwd") == 0 ? 1 : strcmp(dirs[k], "bwd") == 0 ? 2 : 0;
        if (!bit) {
            fprintf(stderr, "ffnrt bench: --dir %s: fwd or bwd\n", dirs[k]);
            return 2;
        }
        cfg.directions |= bit;
    }
    if (!cfg.paths)
        cfg.paths = 3;
    if (!cfg.formats_given) {
        static const ffnrt_weight_format quick_formats[] = {FFNRT_WEIGHT_Q4_0};
        static const ffnrt_weight_format full_formats[] = {FFNRT_WEIGHT_Q8_0, FFNRT_WEIGHT_Q4_0, FFNRT_WEIGHT_Q4_1,
                                                           FFNRT_WEIGHT_Q4_K, FFNRT_WEIGHT_Q6_K};
        cfg.nformats = cfg.quick ? 1 : 5;
        memcpy(cfg.formats, cfg.quick ? quick_formats : full_formats, sizeof cfg.formats[0] * (size_t)cfg.nformats);
    }
    cfg.min_runs = min_runs > 0 ? min_runs : 3;
    cfg.max_runs = repeats > 0 ? repeats : cfg.quick ? 5 : 25;
    if (cfg.max_runs < cfg.min_runs)
        cfg.min_runs = cfg.max_runs;
    cfg.budget_s = budget >= 0 ? budget : cfg.quick ? 0.15 : 1.0;
    if (!do_parts)
        do_parts = ~0;
    progress.on = progress_mode < 0 ? ffnrt_lab_isatty(2) : progress_mode;
    progress.start = lab_now_s();

    bench_meta meta;
    bench_meta_init(&meta, "ffnrt-bench-1", cfg.preset);

    size_t count = 0;
    int device_parts = do_parts & ((1 << NPARTS) - 1);
    if (device_parts && (ffnrt_device_count(&count) != FFNRT_OK || count == 0))
        fprintf(stderr, "ffnrt bench: no device found (%s)\n", ffnrt_last_error_message());
    printf("ffnrt %s (commit %s) bench, preset %s: device-time medians of repeated runs after a warm-up;\n"
           "ratio is the row's rate over the limit it names, measured on the same device in this run (copy: the copy\n"
           "kernel of the same storage type and size, or of the FFN weights' bytes; gemm: the best GFLOP/s on the device)\n",
           meta.version, meta.commit, meta.preset);
    bench_rows rows = {0};
    int rc = 0, ran = 0;
    /* The CPU drivers' thread settings as this run found them: pinning
     * PoCL's workers moved a decode row 1.7-1.9x on a 2-vCPU VM, in some
     * processes and not others (docs/speed.md, "PoCL's workers"), so a run
     * says which it measured. */
    char threads[160];
    const char *affinity = getenv("POCL_AFFINITY"), *pocl_count = getenv("POCL_MAX_PTHREAD_COUNT"),
               *lp = getenv("LP_NUM_THREADS");
    snprintf(threads, sizeof threads, "POCL_AFFINITY %.8s, POCL_MAX_PTHREAD_COUNT %.8s, LP_NUM_THREADS %.8s",
             affinity ? affinity : "unset", pocl_count ? pocl_count : "unset", lp ? lp : "unset");
    bench_meta_set_field(&meta, "driver_threads", threads);
    /* The kernels each part builds on each device: estimated before the run
     * from the selection (a part that already ran on a device of this run
     * counts what it built there instead), for the progress line's "to go";
     * the counts built are reported beside the estimates. */
    static double estimate[BENCH_MAX_DEVICES][NPARTS];
    static uint64_t built_by[BENCH_MAX_DEVICES][NPARTS];
    int nsel = 0;
    for (size_t i = 0; i < count && nsel < BENCH_MAX_DEVICES; i++) {
        bench_device d = {NULL, {0}, &meta};
        if (ffnrt_device_get_info(i, &d.info) != FFNRT_OK || !bench_device_selected(&d.info, devices, ndevices))
            continue;
        for (size_t p = 0; p < NPARTS; p++)
            estimate[nsel][p] = (do_parts & (1 << p)) && parts[p].kernels ? parts[p].kernels(&d, &cfg) : 0;
        nsel++;
    }
    char kernel_text[1200] = "";
    int di = -1;
    for (size_t i = 0; i < count; i++) {
        bench_device dev = {NULL, {0}, &meta};
        if (ffnrt_device_get_info(i, &dev.info) != FFNRT_OK || !bench_device_selected(&dev.info, devices, ndevices))
            continue;
        if (++di >= BENCH_MAX_DEVICES)
            di = BENCH_MAX_DEVICES - 1;
        ffnrt_context_options co = FFNRT_CONTEXT_OPTIONS_INIT;
        co.backend = dev.info.backend;
        co.device_index = (int)dev.info.index;
        if (ffnrt_context_create(&co, &dev.ctx) != FFNRT_OK) {
            fprintf(stderr, "ffnrt bench: %s: %s\n", dev.info.name, ffnrt_last_error_message());
            rc = 1;
            continue;
        }
        ran++;
        if (meta.ndevices < BENCH_MAX_DEVICES) {
            bench_meta_add_device(&meta, &dev.info);
            bench_device_meta *d = &meta.devices[meta.ndevices - 1];
            bench_row_set(dev.info.name, sizeof dev.info.name, dev.info.name); /* rows hold the cleaned name */
            if (cfg.verbose_rows) {
                progress_clear();
                printf("\n== %s (%s, %s, driver %s)\n", d->name, d->backend, d->api, d->driver);
                bench_print_header(stdout);
            }
        }
        char line[400];
        int at = snprintf(line, sizeof line, "%s%s", kernel_text[0] ? "; " : "", dev.info.name), listed = 0;
        for (size_t p = 0; p < NPARTS; p++) {
            if (!(do_parts & (1 << p)))
                continue;
            uint64_t b0, l0, b1, l1;
            kernels_of(dev.ctx, &b0, &l0);
            progress.ctx = dev.ctx;
            progress.part_start = b0;
            progress.part_estimate = kernel_estimate(estimate, built_by, di, p, di);
            progress.later_estimate = 0;
            for (int d = di; d < nsel; d++)
                for (size_t q = d == di ? p + 1 : 0; q < NPARTS; q++)
                    progress.later_estimate += (do_parts & (1 << q)) ? kernel_estimate(estimate, built_by, d, q, di) : 0;
            if (parts[p].run(&dev, &cfg, &rows) != 0)
                rc = 1;
            kernels_of(dev.ctx, &b1, &l1);
            built_by[di][p] = b1 - b0;
            if (parts[p].kernels && at > 0 && (size_t)at < sizeof line)
                at += snprintf(line + at, sizeof line - (size_t)at, "%s %s %llu (estimated %.0f)",
                               listed++ ? "," : ":", parts[p].group, (unsigned long long)(b1 - b0), estimate[di][p]);
        }
        if (strlen(kernel_text) + strlen(line) < sizeof kernel_text)
            strcat(kernel_text, line);
        ffnrt_kernel_stats ks;
        if (ffnrt_context_kernel_stats(dev.ctx, &ks) == FFNRT_OK) {
            meta.kernels_built += ks.compiled;
            meta.kernels_cached += ks.loaded;
            progress.done_before += ks.built;
            progress.loaded_before += ks.loaded;
        }
        progress.ctx = NULL;
        ffnrt_context_destroy(dev.ctx);
    }
    if (kernel_text[0])
        bench_meta_set_field(&meta, "kernels", kernel_text);
    if (ndevices && !ran)
        fprintf(stderr, "ffnrt bench: no device matches --device\n");
    if (do_parts & (1 << NPARTS)) {
        if (cfg.verbose_rows) {
            progress_clear();
            printf("\n== host C loop (the CPU reference for activations)\n");
            bench_print_header(stdout);
        }
        if (bench_part_host_peer(&cfg, &meta, &rows) != 0)
            rc = 1;
    }
    progress_clear();
    meta.wall_s = lab_now_s() - progress.start;
    meta.warmup_s = warmup_total_s;
    meta.measure_s = measure_total_s;

    /* Outputs: the table (stdout and table.txt), JSON, CSV, plots. */
    if (!cfg.verbose_rows)
        bench_print_table(stdout, &rows, &meta);
    else {
        printf("\n");
        for (int p = 0; p < meta.npeers; p++)
            printf("peer %s\n", meta.peers[p]);
        for (int p = 0; p < meta.nnotes; p++)
            printf("note %s\n", meta.notes[p]);
        printf("%s\n", bench_time_split(&meta));
        if (bench_meta_field(&meta, "kernels"))
            printf("kernels: %s\n", bench_meta_field(&meta, "kernels"));
    }
    if (out_dir && *out_dir) {
        char path[1200];
        if (bench_mkdir_p(out_dir) != 0) {
            fprintf(stderr, "ffnrt bench: cannot create %s\n", out_dir);
            rc = 1;
        } else {
            snprintf(path, sizeof path, "%s/table.txt", out_dir);
            FILE *f = ffnrt_lab_fopen(path, "w");
            if (f) {
                bench_print_table(f, &rows, &meta);
                fclose(f);
            }
            snprintf(path, sizeof path, "%s/bench.json", out_dir);
            if (bench_write_json(path, &rows, &meta) != 0)
                fprintf(stderr, "ffnrt bench: cannot write %s\n", path), rc = 1;
            snprintf(path, sizeof path, "%s/bench.csv", out_dir);
            if (bench_write_csv(path, &rows, &meta) != 0)
                fprintf(stderr, "ffnrt bench: cannot write %s\n", path), rc = 1;
            char why[200] = "";
            if (plots && bench_write_plots(out_dir, &rows, &meta, why, sizeof why) != 0)
                printf("plots: %s\n", why);
            printf("wrote %s/: table.txt, bench.json, bench.csv%s (%zu rows, %.0f s)\n", out_dir,
                   plots && !why[0] ? ", plots (PNG and SVG)" : "", rows.n, meta.wall_s);
        }
    }
    if (json_extra && bench_write_json(json_extra, &rows, &meta) != 0)
        fprintf(stderr, "ffnrt bench: cannot write %s\n", json_extra), rc = 1;
    if (csv_extra && bench_write_csv(csv_extra, &rows, &meta) != 0)
        fprintf(stderr, "ffnrt bench: cannot write %s\n", csv_extra), rc = 1;
    bench_rows_free(&rows);
    if (device_parts && count == 0)
        return 1;
    return rc;
}

int ffnrt_bench_main(int argc, char **argv)
{
    char *lists[16];
    int nlists = 0;
    int rc = bench_main(argc, argv, lists, &nlists);
    for (int i = 0; i < nlists; i++)
        free(lists[i]);
    return rc;
}
