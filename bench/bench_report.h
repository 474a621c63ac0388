/* The outputs of `ffnrt bench`: a table for people, CSV and JSON for
 * machines, gnuplot plots, and reading a JSON file back for --compare. */
#ifndef FFNRT_BENCH_REPORT_H
#define FFNRT_BENCH_REPORT_H

#include "bench_row.h"
#include <stdio.h>

#define BENCH_MAX_DEVICES 16
#define BENCH_MAX_PEERS 12
#define BENCH_MAX_NOTES 8
#define BENCH_MAX_FIELDS 16

typedef struct bench_device_meta {
    char backend[16], name[128], driver[128], api[96];
} bench_device_meta;

/* What a run was: enough to tell two result files apart. */
typedef struct bench_meta {
    char format[24];   /* "ffnrt-bench-1" */
    char version[32];  /* FFNRT_VERSION_STRING */
    char commit[48];   /* git describe at configure time, or "unknown" */
    char preset[16];   /* "quick", "full", "custom" */
    char date[32];     /* UTC, ISO 8601 */
    char host[64];
    double wall_s;
    /* Of wall_s, the warm-up calls before each row's measured runs: building
     * kernels (or loading them from ffnrt's disk cache) and the drivers'
     * first-call work. The rest is measuring. */
    double warmup_s;
    /* Of wall_s, the measured calls (0 in files from before it was kept:
     * then the rest of wall_s after the warm-up is called measuring). */
    double measure_s;
    /* Kernels the run's device contexts compiled, and loaded from ffnrt's
     * disk cache instead (a warm cache compiles none). */
    unsigned long long kernels_built, kernels_cached;
    bench_device_meta devices[BENCH_MAX_DEVICES];
    int ndevices;
    char peers[BENCH_MAX_PEERS][160]; /* "clblast: ok", "host-c: ok (gcc -O3 ...)", "clblast: absent (...)" */
    int npeers;
    char notes[BENCH_MAX_NOTES][320]; /* what could not run, and why ("start: no cold rows: ...") */
    int nnotes;
    /* Named strings a kind of run adds to its identity (the compare
     * command's criteria, their SHA-256 and time, its widths): the JSON's
     * "fields" object, printed above the table. */
    struct {
        char name[32];
        char value[2048];
    } fields[BENCH_MAX_FIELDS];
    int nfields;
} bench_meta;

/* Sets (or adds) a field; ignored when full. */
void bench_meta_set_field(bench_meta *m, const char *name, const char *value);
/* A field's value, or NULL. */
const char *bench_meta_field(const bench_meta *m, const char *name);

/* A run's identity: format, ffnrt's version and commit, preset, date, host. */
void bench_meta_init(bench_meta *m, const char *format, const char *preset);
struct ffnrt_device_info;
/* Lists a device of the run (its name cleaned as rows hold it). */
void bench_meta_add_device(bench_meta *m, const struct ffnrt_device_info *info);
/* mkdir -p; 0 when dir is a directory afterwards. */
int bench_mkdir_p(const char *dir);
/* 1 when a device passes a --device list (backend, or a case-insensitive
 * substring of its name, vendor or API version); an empty list passes all. */
int bench_device_selected(const struct ffnrt_device_info *info, const char *const *names, int n);

void bench_meta_add_peer(bench_meta *m, const char *text);
/* Something that could not run: kept in the table and JSON, and printed on
 * stderr now. */
void bench_meta_add_note(bench_meta *m, const char *text);
/* The same without printing (once per distinct text). */
void bench_meta_keep_note(bench_meta *m, const char *text);

/* "time: X s in warm-up calls (kernel builds ...), Y s measuring[, Z s
 * other]; kernels: ...", one line (a static buffer). */
const char *bench_time_split(const bench_meta *m);

/* One row as a table line (also used while the bench runs). */
void bench_print_header(FILE *f);
void bench_print_row(FILE *f, const bench_row *r);
/* Every row, grouped by device, with the run's metadata on top. */
void bench_print_table(FILE *f, const bench_rows *rs, const bench_meta *m);

int bench_write_csv(const char *path, const bench_rows *rs, const bench_meta *m);
int bench_write_json(const char *path, const bench_rows *rs, const bench_meta *m);
/* Plots into dir as PNG and SVG through gnuplot; 0 on success, -1 with the
 * reason in why (gnuplot absent, nothing to plot, ...). */
int bench_write_plots(const char *dir, const bench_rows *rs, const bench_meta *m, char *why, size_t why_len);

/* The plot driver: each plot writes its data file(s) and gnuplot commands
 * into the script (returning 1 when it drew something), for PNG and SVG,
 * per device (file NAME_<backend><n>) or once (NAME); gnuplot then runs
 * once, and outputs it never drew are removed. */
typedef struct bench_plot {
    const char *name;
    int per_device;
    int (*draw)(FILE *gp, const char *dir, const char *file, const bench_rows *rs, const bench_meta *m, int device,
                const void *arg);
    const void *arg;
    const char *grid; /* the gnuplot grid command, NULL: "set grid" */
} bench_plot;
int bench_draw_plots(const char *dir, const bench_plot *plots, size_t nplots, const bench_rows *rs,
                     const bench_meta *m, char *why, size_t why_len);

/* A scatter plot (a bench_plot's draw with this as its arg): one point per
 * row of `group` on the device, x and y a metric's name or "rate" or
 * "size" (times the scale), each point its own legend entry (op and
 * dtype), and dashed lines at the limits where they are > 0 (in plotted
 * units). */
typedef struct bench_scatter {
    const char *group;
    const char *x, *y;
    double x_scale, y_scale;
    const char *title, *x_label, *y_label;
    int log_x, log_y;
    double x_limit, y_limit;
} bench_scatter;
int bench_plot_scatter(FILE *gp, const char *dir, const char *file, const bench_rows *rs, const bench_meta *m,
                       int device, const void *arg);

/* Reads a file bench_write_json wrote. 0 on success; -1 with a message in
 * err (file, line and what was expected) for anything else. */
int bench_read_json(const char *path, bench_rows *rs, bench_meta *m, char *err, size_t err_len);

/* `ffnrt bench --compare OLD NEW [--threshold F]`: per-row time ratios
 * new/old; a row is a regression when new is slower by more than the
 * larger of the two runs' own jitter ((median - min) / median) and at least
 * the threshold (0.05 by default). Returns 0 (no regression), 1 (regressions), 2 (bad input). */
int bench_compare_main(int argc, char **argv);
/* The same on two runs already read (names label them): prints the
 * comparison and returns 0, 1 or 2 (no row matched) likewise. */
int bench_compare_rows(const char *const names[2], const bench_rows rows[2], const bench_meta meta[2],
                       double threshold, int all, int by_ratio);

/* The arguments of a comparison of two saved runs, as `ffnrt bench
 * --compare` and `ffnrt compare --compare` take them: OLD NEW, --threshold
 * F (0.05 unless given), --all and, where takes_by, --by time|ratio. 0; -1
 * for a bad --threshold, said on stderr after `me`; -2 for anything else,
 * which the caller's usage answers. */
typedef struct bench_pair_args {
    const char *files[2];
    double threshold;
    int all, by_ratio;
} bench_pair_args;

int bench_pair_args_read(int argc, char **argv, const char *me, int takes_by, bench_pair_args *out);

#endif
