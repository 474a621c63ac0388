/* The one row model every part of `ffnrt bench` fills and every output
 * (table, CSV, JSON, plots, --compare) reads.
 *
 * A row is one measured thing: a kernel on a device at one size, shape,
 * precision and path, or a limit (the copy kernel, the GEMM-rate probe), or
 * a peer (CLBlast, the host C loop). New kinds of rows (cold and warm start,
 * dispatcher regret) need no change here or in the outputs: fill a row
 * with a new `group` and push it with bench_rows_push; its key
 * (bench_row_key) is what --compare matches rows by, so keep the
 * identifying fields stable from run to run. */
#ifndef FFNRT_BENCH_ROW_H
#define FFNRT_BENCH_ROW_H

#include <stddef.h>

/* A named figure a kind of row adds beside the common ones (the compare
 * command's parameters, FLOPs and bytes per token, memory, verdicts). A
 * trained compare candidate with stability figures carries 34. */
#define BENCH_MAX_METRICS 48
typedef struct bench_metric {
    char name[20];
    double value;
} bench_metric;

typedef struct bench_row {
    /* Identity (strings, printed as-is; bench_row_set keeps quotes out). */
    char group[24];    /* "limit", "elementwise", "ffn", "peer", "start", ... */
    char op[40];       /* "copy", "gemm", "gelu", "swiglu 512x1376", "clblast-sgemm", ... */
    char dir[8];       /* "fwd", "bwd" or "" */
    char backend[16];  /* "opencl", "vulkan", "host" */
    char device[128];  /* the device's name */
    char dtype[8];     /* "f32", "f16", "bf16", "f16a" (fp16 arithmetic on f16 storage), or "" */
    char path[16];     /* "fused", "unfused", "" (a dispatcher row: "auto", "forced-...") */
    char shape[40];    /* "16777216" elements, "768x3072 t64" (d_model x hidden, tokens), ... */
    double size;       /* the x axis of plots: elements, or tokens */
    /* Measurement. Times are nanoseconds; `timing` says where they come
     * from: "device" (timestamp queries, profiling events) or "host". */
    int runs;
    double median_ns, min_ns, max_ns;
    double spread;     /* (max - min) / median of the runs */
    double host_ns;    /* host end-to-end median, beside the device time */
    char timing[8];
    double rate;       /* work per second in rate_unit (0: none) */
    char rate_unit[12];/* "GB/s", "GFLOP/s", or "" */
    double ratio;      /* rate over the limit named by ratio_to (0: none) */
    char ratio_to[24]; /* "copy", "gemm", "host-copy", ... measured in the same run, same device */
    char note[64];     /* free text for people; not compared */
    /* Named figures of this kind of row: JSON writes them as the row's
     * "metrics" object, CSV as one column each (the union of the rows'
     * names); --compare leaves them alone. Non-finite values are not kept. */
    bench_metric metrics[BENCH_MAX_METRICS];
    int nmetrics;
} bench_row;

typedef struct bench_rows {
    bench_row *v;
    size_t n, cap;
} bench_rows;

/* A zeroed row appended to rs (NULL when out of memory). */
bench_row *bench_rows_push(bench_rows *rs);
void bench_rows_free(bench_rows *rs);
/* "group|op|dir|backend|device|dtype|path|shape": what --compare matches. */
void bench_row_key(const bench_row *r, char *out, size_t len);
/* Copies src into a fixed field, truncating, replacing quotes, backslashes
 * and control characters (which tables and plot scripts cannot take). */
void bench_row_set(char *field, size_t len, const char *src);
#define BENCH_SET(field, src) bench_row_set((field), sizeof(field), (src))

/* Sets (or adds) a metric; ignored when full or not finite. */
void bench_row_metric(bench_row *r, const char *name, double value);
/* A metric's value, or NAN when the row has none of that name. */
double bench_row_get(const bench_row *r, const char *name);

/* Fills the measurement fields from n device times and n host times
 * (seconds; both arrays are sorted). dev may equal NULL: host timing. */
void bench_row_times(bench_row *r, double *dev, double *host, int n);

#endif
