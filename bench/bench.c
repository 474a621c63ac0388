/* ffnrt bench: the same work on every device found, each result reported
 * against a limit measured on the same device in the same run: element-wise
 * ops (every activation and GLU kind, forward and backward, in fp32, fp16
 * and bf16 storage and fp16 arithmetic) against the copy kernel of the same
 * storage type, FFN layers (bench_ffn.c) against the best GEMM rate. Times are device timestamps (Vulkan timestamp queries,
 * OpenCL profiling events), medians of repeated runs after a warm-up; the
 * host's end-to-end time is reported beside them. */
#include "bench.h"
#include "bench_util.h"
#include "bench_ffn.h"
#include "ffnrt.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct bench_options {
    int quick;
    const char *only_op;     /* NULL: all */
    const char *only_device; /* NULL: all; else a FFNRT_DEVICE-style substring */
    size_t sizes[8];
    int size_count;
    int repeats;
    double budget_s; /* per row, after warm-up */
    const char *csv_path;
    const char *json_path;
    int ffn;           /* 0: no FFN rows (--no-ffn) */
    int elementwise;   /* 0: FFN rows only (--ffn-only) */
    const char *ffn_csv_path;
} bench_options;

typedef struct bench_row {
    char device[300];
    const char *backend;
    const char *op;
    const char *direction; /* fwd or bwd */
    const char *precision; /* f32, f16, bf16 (storage, fp32 arithmetic) or f16a (fp16 arithmetic) */
    size_t elements;
    int runs;
    double device_median_s, device_min_s, device_spread; /* spread: (max-min)/median */
    double host_median_s;
    double gbps;
    double copy_ratio;
} bench_row;



/* One element-wise workload: the copy kernel, an activation or a GLU kind
 * (split layout: gate and value tensors), forward or backward. */
typedef enum work_kind { WORK_COPY, WORK_ACTIVATION, WORK_GLU } work_kind;

typedef struct ew_work {
    work_kind kind;
    int id; /* ffnrt_activation or ffnrt_glu */
    int backward;
    ffnrt_compute compute;
} ew_work;

/* The tensors a device's element-wise rows run on, all of one dtype. */
typedef struct ew_tensors {
    ffnrt_tensor *x, *value, *dy, *y, *y2, *slopes;
} ew_tensors;

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

static ffnrt_status run_once(ffnrt_context *ctx, const ew_work *w, const ew_tensors *t)
{
    if (w->kind == WORK_COPY)
        return ffnrt_copy(ctx, t->x, t->y);
    if (w->kind == WORK_ACTIVATION) {
        ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT((ffnrt_activation)w->id);
        d.slopes = t->slopes;
        d.compute = w->compute;
        return w->backward ? ffnrt_activation_backward(ctx, &d, t->x, t->dy, t->y)
                           : ffnrt_activation_forward(ctx, &d, t->x, t->y);
    }
    ffnrt_glu_desc d = FFNRT_GLU_DESC_INIT((ffnrt_glu)w->id);
    d.compute = w->compute;
    /* gate = x; the gradients land in y (dgate) and y2 (dvalue). */
    return w->backward ? ffnrt_glu_backward_split(ctx, &d, t->x, t->value, t->dy, t->y, t->y2)
                       : ffnrt_glu_forward_split(ctx, &d, t->x, t->value, t->y);
}

#define MAX_RUNS 200

static int measure(ffnrt_context *ctx, const ew_work *w, const ew_tensors *t, const bench_options *o,
                   bench_row *row)
{
    double dev[MAX_RUNS], host[MAX_RUNS];
    if (run_once(ctx, w, t) != FFNRT_OK) { /* warm-up: builds the kernel */
        fprintf(stderr, "ffnrt bench: %s\n", ffnrt_context_last_error(ctx));
        return -1;
    }
    int n = 0;
    double start = bench_now_s();
    while (n < MAX_RUNS && (n < 3 || (n < o->repeats && bench_now_s() - start < o->budget_s))) {
        double t0 = bench_now_s();
        if (run_once(ctx, w, t) != FFNRT_OK) {
            fprintf(stderr, "ffnrt bench: %s\n", ffnrt_context_last_error(ctx));
            return -1;
        }
        host[n] = bench_now_s() - t0;
        uint64_t ns = 0;
        ffnrt_context_last_op_time(ctx, &ns);
        dev[n] = ns ? 1e-9 * (double)ns : host[n];
        n++;
    }
    row->runs = n;
    row->host_median_s = bench_median(host, n);
    row->device_median_s = bench_median(dev, n); /* sorts dev */
    row->device_min_s = dev[0];
    row->device_spread = (dev[n - 1] - dev[0]) / row->device_median_s;
    double bytes = (double)work_traffic(w) * (double)ffnrt_tensor_bytes(t->x);
    row->gbps = bytes / row->device_median_s * 1e-9;
    return 0;
}

static void print_row(const bench_row *r)
{
    printf("%-8s %-11s %-4s %-5s %10zu %5d %10.3f %10.3f %7.1f%% %10.3f %8.2f %7.2f\n", r->backend, r->op,
           r->direction, r->precision, r->elements, r->runs, r->device_median_s * 1e3, r->device_min_s * 1e3,
           100.0 * r->device_spread, r->host_median_s * 1e3, r->gbps, r->copy_ratio);
}

static void write_outputs(const bench_row *rows, size_t n, const bench_options *o)
{
    if (o->csv_path) {
        FILE *f = fopen(o->csv_path, "w");
        if (!f) {
            fprintf(stderr, "ffnrt bench: cannot write %s\n", o->csv_path);
        } else {
            fprintf(f, "ffnrt_version,device,backend,op,direction,precision,elements,runs,device_median_s,"
                       "device_min_s,spread,host_median_s,gbps,copy_ratio\n");
            for (size_t i = 0; i < n; i++)
                fprintf(f, "%s,\"%s\",%s,%s,%s,%s,%zu,%d,%.9g,%.9g,%.4f,%.9g,%.4f,%.4f\n", FFNRT_VERSION_STRING,
                        rows[i].device, rows[i].backend, rows[i].op, rows[i].direction, rows[i].precision,
                        rows[i].elements, rows[i].runs,
                        rows[i].device_median_s, rows[i].device_min_s, rows[i].device_spread,
                        rows[i].host_median_s, rows[i].gbps, rows[i].copy_ratio);
            fclose(f);
        }
    }
    if (o->json_path) {
        FILE *f = fopen(o->json_path, "w");
        if (!f) {
            fprintf(stderr, "ffnrt bench: cannot write %s\n", o->json_path);
        } else {
            fprintf(f, "{\n  \"ffnrt_version\": \"%s\",\n  \"rows\": [\n", FFNRT_VERSION_STRING);
            for (size_t i = 0; i < n; i++)
                fprintf(f,
                        "    {\"device\": \"%s\", \"backend\": \"%s\", \"op\": \"%s\", \"direction\": \"%s\", "
                        "\"precision\": \"%s\", \"elements\": %zu, "
                        "\"runs\": %d, \"device_median_s\": %.9g, \"device_min_s\": %.9g, \"spread\": %.4f, "
                        "\"host_median_s\": %.9g, \"gbps\": %.4f, \"copy_ratio\": %.4f}%s\n",
                        rows[i].device, rows[i].backend, rows[i].op, rows[i].direction, rows[i].precision,
                        rows[i].elements, rows[i].runs, rows[i].device_median_s, rows[i].device_min_s,
                        rows[i].device_spread, rows[i].host_median_s, rows[i].gbps, rows[i].copy_ratio,
                        i + 1 < n ? "," : "");
            fprintf(f, "  ]\n}\n");
            fclose(f);
        }
    }
}

static bench_row *next_row(bench_row **rows, size_t *nrows, size_t *cap)
{
    if (*nrows == *cap) {
        size_t grown_cap = *cap ? 2 * *cap : 64;
        bench_row *grown = realloc(*rows, grown_cap * sizeof *grown);
        if (!grown)
            return NULL;
        *rows = grown;
        *cap = grown_cap;
    }
    bench_row *r = &(*rows)[*nrows];
    memset(r, 0, sizeof *r);
    return r;
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

/* The element-wise rows of one size and storage type: the copy kernel
 * first (the limit), then every activation and GLU kind forward and
 * backward, and for fp16 the same again in fp16 arithmetic where the
 * device has it. */
static int bench_elementwise(ffnrt_context *ctx, const ffnrt_device_info *info, ffnrt_dtype dtype, size_t n,
                             const bench_options *o, bench_row **rows, size_t *nrows, size_t *cap)
{
    int64_t shape[2] = {(int64_t)(n / 1024), 1024}, channels = 1024;
    ew_tensors t = {0};
    ffnrt_tensor **all[5] = {&t.x, &t.value, &t.dy, &t.y, &t.y2};
    int failed = 0;
    for (int i = 0; i < 5 && !failed; i++)
        failed = ffnrt_tensor_create(ctx, dtype, 2, shape, all[i]) != FFNRT_OK || fill(*all[i], 12345u + 7u * (uint32_t)i) != FFNRT_OK;
    if (!failed)
        failed = ffnrt_tensor_create(ctx, dtype, 1, &channels, &t.slopes) != FFNRT_OK || fill(t.slopes, 99u) != FFNRT_OK;
    if (failed)
        fprintf(stderr, "ffnrt bench: %s\n", ffnrt_context_last_error(ctx));
    double copy_gbps = 0;
    int computes = dtype == FFNRT_DTYPE_F16 ? 2 : 1;
    for (int c = 0; c < computes && !failed; c++) {
        ffnrt_compute compute = c ? FFNRT_COMPUTE_F16 : FFNRT_COMPUTE_F32;
        if (compute == FFNRT_COMPUTE_F16 && !info->fp16_arithmetic) {
            printf("%-8s (fp16 arithmetic: the device has none)\n", ffnrt_backend_name(info->backend));
            break;
        }
        for (int kind = c ? WORK_ACTIVATION : WORK_COPY; kind <= WORK_GLU && !failed; kind++) {
            int ids = kind == WORK_COPY ? 1 : kind == WORK_ACTIVATION ? FFNRT_ACT_COUNT : FFNRT_GLU_COUNT;
            for (int id = 0; id < ids && !failed; id++)
                for (int backward = 0; backward < (kind == WORK_COPY ? 1 : 2) && !failed; backward++) {
                    ew_work w = {(work_kind)kind, id, backward, compute};
                    if (o->only_op && kind != WORK_COPY && strcmp(o->only_op, work_name(&w)) != 0)
                        continue;
                    bench_row *r = next_row(rows, nrows, cap);
                    if (!r) {
                        failed = 1;
                        break;
                    }
                    snprintf(r->device, sizeof r->device, "%s", info->name);
                    r->backend = ffnrt_backend_name(info->backend);
                    r->op = work_name(&w);
                    r->direction = backward ? "bwd" : "fwd";
                    r->precision = compute == FFNRT_COMPUTE_F16 ? "f16a" : ffnrt_dtype_name(dtype);
                    r->elements = n;
                    if (measure(ctx, &w, &t, o, r) != 0) {
                        failed = 1;
                        break;
                    }
                    if (kind == WORK_COPY)
                        copy_gbps = r->gbps;
                    r->copy_ratio = copy_gbps > 0 ? r->gbps / copy_gbps : 0;
                    print_row(r);
                    fflush(stdout);
                    (*nrows)++;
                }
        }
    }
    for (int i = 0; i < 5; i++)
        ffnrt_tensor_destroy(*all[i]);
    ffnrt_tensor_destroy(t.slopes);
    return failed ? -1 : 0;
}

static int bench_device(size_t index, const ffnrt_device_info *info, const bench_options *o, bench_row **rows,
                        size_t *nrows, size_t *cap)
{
    ffnrt_context_options co = FFNRT_CONTEXT_OPTIONS_INIT;
    co.backend = info->backend;
    co.device_index = (int)info->index;
    ffnrt_context *ctx;
    (void)index;
    if (ffnrt_context_create(&co, &ctx) != FFNRT_OK) {
        fprintf(stderr, "ffnrt bench: %s: %s\n", info->name, ffnrt_last_error_message());
        return -1;
    }
    printf("\n== %s (%s, %s, driver %s)\n", info->name, ffnrt_backend_name(info->backend), info->api_version,
           info->driver_version);
    printf("%-8s %-11s %-4s %-5s %10s %5s %10s %10s %8s %10s %8s %7s\n", "backend", "op", "dir", "prec",
           "elements", "runs", "dev_ms", "min_ms", "spread", "host_ms", "GB/s", "x_copy");
    int failed = 0;
    static const ffnrt_dtype dtypes[3] = {FFNRT_DTYPE_F32, FFNRT_DTYPE_F16, FFNRT_DTYPE_BF16};
    for (int s = 0; s < o->size_count && !failed && o->elementwise; s++)
        for (int t = 0; t < 3 && !failed; t++)
            failed = bench_elementwise(ctx, info, dtypes[t], o->sizes[s], o, rows, nrows, cap) != 0;
    if (o->ffn && !failed) {
        bench_ffn_options fo = {o->quick, o->quick ? 3 : 7, o->quick ? 0.3 : 2.0};
        FILE *csv = o->ffn_csv_path ? fopen(o->ffn_csv_path, "a") : NULL;
        failed = ffnrt_bench_ffn(ctx, &fo, csv) != 0;
        if (csv)
            fclose(csv);
    }
    ffnrt_context_destroy(ctx);
    return failed ? -1 : 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: ffnrt bench [--quick] [--op NAME] [--device SUBSTRING] [--size N]... [--repeats N]\n"
            "                   [--csv FILE] [--json FILE] [--no-ffn | --ffn-only] [--ffn-csv FILE]\n");
}

int ffnrt_bench_main(int argc, char **argv)
{
    bench_options o = {0};
    o.repeats = 25;
    o.budget_s = 2.0;
    o.ffn = o.elementwise = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            o.quick = 1;
        } else if (strcmp(a, "--op") == 0 && v) {
            o.only_op = v, i++;
        } else if (strcmp(a, "--device") == 0 && v) {
            o.only_device = v, i++;
        } else if (strcmp(a, "--size") == 0 && v && o.size_count < 8) {
            o.sizes[o.size_count++] = strtoull(v, NULL, 0), i++;
        } else if (strcmp(a, "--repeats") == 0 && v) {
            o.repeats = atoi(v), i++;
        } else if (strcmp(a, "--csv") == 0 && v) {
            o.csv_path = v, i++;
        } else if (strcmp(a, "--json") == 0 && v) {
            o.json_path = v, i++;
        } else if (strcmp(a, "--no-ffn") == 0) {
            o.ffn = 0;
        } else if (strcmp(a, "--ffn-only") == 0) {
            o.elementwise = 0;
        } else if (strcmp(a, "--ffn-csv") == 0 && v) {
            o.ffn_csv_path = v, i++;
        } else {
            usage();
            return 2;
        }
    }
    if (o.only_op) {
        ffnrt_activation act;
        ffnrt_glu glu;
        if (strcmp(o.only_op, "copy") != 0 && ffnrt_activation_from_name(o.only_op, &act) != FFNRT_OK &&
            ffnrt_glu_from_name(o.only_op, &glu) != FFNRT_OK) {
            fprintf(stderr, "ffnrt bench: %s\n", ffnrt_last_error_message());
            return 2;
        }
    }
    if (o.size_count == 0) {
        if (!o.quick)
            o.sizes[o.size_count++] = 1u << 20;
        o.sizes[o.size_count++] = 16u << 20; /* the size the speed targets are stated at */
        if (!o.quick)
            o.sizes[o.size_count++] = 64u << 20;
    }
    for (int s = 0; s < o.size_count; s++)
        if (o.sizes[s] < 1024 || o.sizes[s] % 1024) {
            fprintf(stderr, "ffnrt bench: --size must be a positive multiple of 1024\n");
            return 2;
        }
    if (o.quick) {
        o.repeats = 5;
        o.budget_s = 0.25;
    }
    size_t count = 0;
    if (ffnrt_device_count(&count) != FFNRT_OK || count == 0) {
        fprintf(stderr, "ffnrt bench: no device found (%s)\n", ffnrt_last_error_message());
        return 1;
    }
    printf("ffnrt %s bench: times are device medians; x_copy is an element-wise op's GB/s over the copy kernel's\n"
           "(same device, same storage type, same run); prec f16a is fp16 arithmetic on f16 storage\n",
           FFNRT_VERSION_STRING);
    bench_row *rows = NULL;
    size_t nrows = 0, cap = 0;
    int rc = 0;
    for (size_t i = 0; i < count; i++) {
        ffnrt_device_info info;
        if (ffnrt_device_get_info(i, &info) != FFNRT_OK)
            continue;
        if (o.only_device && !strstr(info.name, o.only_device) &&
            strcmp(o.only_device, ffnrt_backend_name(info.backend)) != 0)
            continue;
        if (bench_device(i, &info, &o, &rows, &nrows, &cap) != 0)
            rc = 1;
    }
    write_outputs(rows, nrows, &o);
    free(rows);
    return rc;
}
