/* ffnrt bench: the same element-wise work on every device found, each
 * result reported against the copy kernel measured on the same device in
 * the same run. Times are device timestamps (Vulkan timestamp queries,
 * OpenCL profiling events), medians of repeated runs after a warm-up; the
 * host's end-to-end time is reported beside them. */
#include "bench.h"
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
    size_t elements;
    int runs;
    double device_median_s, device_min_s, device_spread; /* spread: (max-min)/median */
    double host_median_s;
    double gbps;
    double copy_ratio;
} bench_row;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* kind < 0 is the copy kernel. */
static ffnrt_status run_once(ffnrt_context *ctx, int kind, ffnrt_tensor *x, ffnrt_tensor *y,
                             ffnrt_tensor *slopes)
{
    if (kind < 0)
        return ffnrt_copy(ctx, x, y);
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT((ffnrt_activation)kind);
    d.slopes = slopes;
    return ffnrt_activation_forward(ctx, &d, x, y);
}

#define MAX_RUNS 200

static int measure(ffnrt_context *ctx, int kind, ffnrt_tensor *x, ffnrt_tensor *y, ffnrt_tensor *slopes,
                   const bench_options *o, bench_row *row)
{
    double dev[MAX_RUNS], host[MAX_RUNS];
    if (run_once(ctx, kind, x, y, slopes) != FFNRT_OK) { /* warm-up: builds the kernel */
        fprintf(stderr, "ffnrt bench: %s\n", ffnrt_context_last_error(ctx));
        return -1;
    }
    int n = 0;
    double start = now_s();
    while (n < MAX_RUNS && (n < 3 || (n < o->repeats && now_s() - start < o->budget_s))) {
        double t0 = now_s();
        if (run_once(ctx, kind, x, y, slopes) != FFNRT_OK) {
            fprintf(stderr, "ffnrt bench: %s\n", ffnrt_context_last_error(ctx));
            return -1;
        }
        host[n] = now_s() - t0;
        uint64_t ns = 0;
        ffnrt_context_last_op_time(ctx, &ns);
        dev[n] = ns ? 1e-9 * (double)ns : host[n];
        n++;
    }
    row->runs = n;
    row->host_median_s = median(host, n);
    row->device_median_s = median(dev, n); /* sorts dev */
    row->device_min_s = dev[0];
    row->device_spread = (dev[n - 1] - dev[0]) / row->device_median_s;
    size_t bytes = 2 * ffnrt_tensor_bytes(x); /* read x, write y */
    row->gbps = (double)bytes / row->device_median_s * 1e-9;
    return 0;
}

static void print_row(const bench_row *r)
{
    printf("%-10s %-10s %10zu %5d %10.3f %10.3f %7.1f%% %10.3f %8.2f %7.2f\n", r->backend, r->op, r->elements,
           r->runs, r->device_median_s * 1e3, r->device_min_s * 1e3, 100.0 * r->device_spread,
           r->host_median_s * 1e3, r->gbps, r->copy_ratio);
}

static void write_outputs(const bench_row *rows, size_t n, const bench_options *o)
{
    if (o->csv_path) {
        FILE *f = fopen(o->csv_path, "w");
        if (!f) {
            fprintf(stderr, "ffnrt bench: cannot write %s\n", o->csv_path);
        } else {
            fprintf(f, "ffnrt_version,device,backend,op,elements,runs,device_median_s,device_min_s,spread,host_median_s,gbps,copy_ratio\n");
            for (size_t i = 0; i < n; i++)
                fprintf(f, "%s,\"%s\",%s,%s,%zu,%d,%.9g,%.9g,%.4f,%.9g,%.4f,%.4f\n", FFNRT_VERSION_STRING,
                        rows[i].device, rows[i].backend, rows[i].op, rows[i].elements, rows[i].runs,
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
                        "    {\"device\": \"%s\", \"backend\": \"%s\", \"op\": \"%s\", \"elements\": %zu, "
                        "\"runs\": %d, \"device_median_s\": %.9g, \"device_min_s\": %.9g, \"spread\": %.4f, "
                        "\"host_median_s\": %.9g, \"gbps\": %.4f, \"copy_ratio\": %.4f}%s\n",
                        rows[i].device, rows[i].backend, rows[i].op, rows[i].elements, rows[i].runs,
                        rows[i].device_median_s, rows[i].device_min_s, rows[i].device_spread,
                        rows[i].host_median_s, rows[i].gbps, rows[i].copy_ratio, i + 1 < n ? "," : "");
            fprintf(f, "  ]\n}\n");
            fclose(f);
        }
    }
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
    printf("%-10s %-10s %10s %5s %10s %10s %8s %10s %8s %7s\n", "backend", "op", "elements", "runs", "dev_ms",
           "min_ms", "spread", "host_ms", "GB/s", "x_copy");
    int failed = 0;
    for (int s = 0; s < o->size_count && !failed && o->elementwise; s++) {
        size_t n = o->sizes[s];
        int64_t shape[2] = {(int64_t)(n / 1024), 1024};
        ffnrt_tensor *x = NULL, *y = NULL, *slopes = NULL;
        int64_t channels = 1024;
        if (ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &x) != FFNRT_OK ||
            ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &y) != FFNRT_OK ||
            ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &channels, &slopes) != FFNRT_OK) {
            fprintf(stderr, "ffnrt bench: %s\n", ffnrt_context_last_error(ctx));
            failed = 1;
            break;
        }
        float *host = malloc(ffnrt_tensor_bytes(x));
        uint32_t state = 12345u; /* fixed seed: the same inputs on every device */
        for (size_t i = 0; host && i < ffnrt_tensor_numel(x); i++) {
            state = state * 1664525u + 1013904223u;
            host[i] = ((float)(state >> 8) / 16777216.0f - 0.5f) * 20.0f; /* U[-10, 10) */
        }
        float slope_values[1024];
        for (int i = 0; i < 1024; i++)
            slope_values[i] = 0.01f * (float)(i % 7 + 1);
        if (!host || ffnrt_tensor_write(x, host, ffnrt_tensor_bytes(x)) != FFNRT_OK ||
            ffnrt_tensor_write(slopes, slope_values, sizeof slope_values) != FFNRT_OK)
            failed = 1;
        free(host);
        double copy_gbps = 0;
        for (int kind = -1; kind < FFNRT_ACT_COUNT && !failed; kind++) {
            const char *name = kind < 0 ? "copy" : ffnrt_activation_name((ffnrt_activation)kind);
            if (o->only_op && kind >= 0 && strcmp(o->only_op, name) != 0)
                continue;
            if (*nrows == *cap) {
                *cap = *cap ? 2 * *cap : 64;
                bench_row *grown = realloc(*rows, *cap * sizeof *grown);
                if (!grown) {
                    failed = 1;
                    break;
                }
                *rows = grown;
            }
            bench_row *r = &(*rows)[*nrows];
            memset(r, 0, sizeof *r);
            snprintf(r->device, sizeof r->device, "%s", info->name);
            r->backend = ffnrt_backend_name(info->backend);
            r->op = name;
            r->elements = ffnrt_tensor_numel(x);
            if (measure(ctx, kind, x, y, slopes, o, r) != 0) {
                failed = 1;
                break;
            }
            if (kind < 0)
                copy_gbps = r->gbps;
            r->copy_ratio = copy_gbps > 0 ? r->gbps / copy_gbps : 0;
            print_row(r);
            fflush(stdout);
            (*nrows)++;
        }
        ffnrt_tensor_destroy(x);
        ffnrt_tensor_destroy(y);
        ffnrt_tensor_destroy(slopes);
    }
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
        if (strcmp(o.only_op, "copy") != 0 && ffnrt_activation_from_name(o.only_op, &act) != FFNRT_OK) {
            fprintf(stderr, "ffnrt bench: %s\n", ffnrt_last_error_message());
            return 2;
        }
    }
    if (o.size_count == 0) {
        o.sizes[o.size_count++] = 1u << 20;
        o.sizes[o.size_count++] = 16u << 20;
        if (!o.quick)
            o.sizes[o.size_count++] = 64u << 20;
    }
    for (int s = 0; s < o.size_count; s++)
        if (o.sizes[s] < 1024 || o.sizes[s] % 1024) {
            fprintf(stderr, "ffnrt bench: --size must be a positive multiple of 1024\n");
            return 2;
        }
    if (o.quick) {
        o.repeats = 7;
        o.budget_s = 0.5;
    }
    size_t count = 0;
    if (ffnrt_device_count(&count) != FFNRT_OK || count == 0) {
        fprintf(stderr, "ffnrt bench: no device found (%s)\n", ffnrt_last_error_message());
        return 1;
    }
    printf("ffnrt %s bench: element-wise ops, fp32; times are device medians, x_copy is the op's GB/s over the "
           "copy kernel's on the same device\n", FFNRT_VERSION_STRING);
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
