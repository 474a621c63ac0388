/* The parts of `ffnrt bench` and what they share: the run's configuration,
 * the measuring loop and the progress line.
 *
 * A part measures one kind of work on one device and appends bench_rows;
 * bench.c runs every selected part on every selected device, in the order
 * of its parts table. To add a kind of row (cold and warm start, dispatcher
 * regret): write `int bench_part_NAME(const bench_device *dev, const
 * bench_config *cfg, bench_rows *rows)`, add it to that table under a group
 * name (`--only NAME` then selects it), and fill rows with that group. */
#ifndef FFNRT_BENCH_PARTS_H
#define FFNRT_BENCH_PARTS_H

#include "bench_report.h"
#include "bench_row.h"
#include "ffnrt.h"
#include "ffnrt_lab.h"

#include <stdio.h>

#define BENCH_MAX_LIST 16

typedef struct bench_config {
    const char *preset;                 /* "quick", "full" */
    int quick;
    /* Selections; an empty list keeps everything the preset runs. */
    const char *ops[BENCH_MAX_LIST];    /* activation, GLU or FFN workload names ("gelu", "swiglu", "dense-gelu") */
    int nops;
    ffnrt_dtype dtypes[4];              /* storage types */
    int ndtypes;
    int f16_arithmetic;                 /* also fp16 arithmetic on f16 storage */
    int precision_given;                /* --precision chose them (else the preset did) */
    int f32_only_above;                 /* sizes past this many elements run f32 only (0: no such rule) */
    size_t bwd_only_f32_at;             /* backward rows only in f32 at this size (0: no such rule) */
    size_t sizes[BENCH_MAX_LIST];       /* element-wise sizes, elements */
    int nsizes;
    int64_t tokens[BENCH_MAX_LIST];     /* FFN token counts */
    int ntokens;
    const char *shapes[BENCH_MAX_LIST]; /* FFN "d_modelxhidden" */
    int nshapes;
    int paths;                          /* bit 0: fused, bit 1: unfused */
    int directions;                     /* bit 0: forward, bit 1: backward */
    /* Method. */
    int min_runs, max_runs;             /* after the warm-up */
    double budget_s;                    /* per row: stop after this much time once min_runs are done */
    int verbose_rows;                   /* print rows as they are measured */
    int dispatch_regret;                /* FFN rows: also the dispatcher's regret (every candidate timed) */
    int stats;                          /* element-wise and FFN rows: also with statistics on (path "stats") */
    uint32_t stats_bins;                /* their histograms' bins (0: counts and moments only) */
    ffnrt_weight_format formats[8];     /* FFN weights in block formats (f32 activations), beside the dtypes' rows */
    int nformats;
    int formats_given;                  /* --weights chose them (else the preset did) */
    const char *gguf_path;              /* --gguf: the model whose FFN stack the stack part runs (NULL: none) */
} bench_config;

typedef struct bench_device {
    ffnrt_context *ctx;
    ffnrt_device_info info;
    bench_meta *meta;                   /* to report peers */
} bench_device;

/* 1 when the op name passes --op. */
int bench_wants_op(const bench_config *cfg, const char *name);

/* The measuring loop: one warm-up call (builds kernels), then calls until
 * max_runs, or the budget once min_runs are done. Device time per call
 * from ffnrt_context_last_op_time (host time where the device gives none),
 * host end-to-end time beside it. Fills the measurement fields of r;
 * returns 0, or -1 when a call fails (its message on stderr). */
typedef ffnrt_status (*bench_call)(void *arg);
int bench_measure(ffnrt_context *ctx, bench_call call, void *arg, const bench_config *cfg, bench_row *r);
/* --stats: row k of rows measured again with the context's statistics on
 * (path "stats", or "fused+stats"), its ratio the off row's time over its
 * own (0.9: 10% slower), in the same run. The statistics are off after.
 * done: the row is reported now (else the caller does it). 0, or -1 with
 * the row dropped. */
int bench_stats_row(ffnrt_context *ctx, bench_call call, void *arg, const bench_config *cfg, bench_rows *rows,
                    size_t k, int done);
/* Time spent in a warm-up call outside bench_measure (the run reports it
 * apart from measuring), and in measured calls outside it. */
void bench_warmup_add(double seconds);
void bench_measure_add(double seconds);

/* The identity fields every device row shares. */
void bench_row_device(bench_row *r, const bench_device *dev, const char *group);

/* The progress line (stderr; on a terminal or with --progress): what runs
 * now, rows done, time so far. */
void bench_progress(const bench_row *r);
/* A row is done: prints it when asked, advances the progress count. */
void bench_row_done(const bench_config *cfg, const bench_row *r);

/* The parts. */
int bench_part_elementwise(const bench_device *dev, const bench_config *cfg, bench_rows *rows);
int bench_part_ffn(const bench_device *dev, const bench_config *cfg, bench_rows *rows);
/* Estimates of the kernels those two build in the device's context (the
 * progress line's "to go"; dev's ctx may be NULL, its info is read). */
double bench_part_elementwise_kernels(const bench_device *dev, const bench_config *cfg);
double bench_part_ffn_kernels(const bench_device *dev, const bench_config *cfg);
/* A GGUF model's whole FFN stack per token (bench_stack.c), with --gguf. */
int bench_part_stack(const bench_device *dev, const bench_config *cfg, bench_rows *rows);
/* The f32 copy kernel of `elements` elements as a limit row (measured once
 * a run and device per size); its GB/s, 0 when it failed. */
double bench_copy_limit(const bench_device *dev, const bench_config *cfg, bench_rows *rows, size_t elements);
/* Cold and warm start of a gated layer (bench_start.c). */
int bench_part_start(const bench_device *dev, const bench_config *cfg, bench_rows *rows);
/* The host C loop peer for activations (peer_host.c); runs once per run. */
int bench_part_host_peer(const bench_config *cfg, bench_meta *meta, bench_rows *rows);

/* The device's op-rate roofs, fp32 FMA (GFLOP/s) and 8-bit code products
 * (Gop/s): measured once a device and run, each a limit row (bench_ffn.c),
 * later calls reading them from those rows; 0 where a probe failed. */
void bench_roofs(const bench_device *dev, const bench_config *cfg, bench_rows *rows, double *fma, double *int8);

/* A helper of the bench named name: a program (program 1: the OS's
 * suffix appended, ".exe" on Windows) or a script (0), beside this ffnrt
 * (a build tree) or in an installed one's libexec/ffnrt. 0 with its path
 * in path, or -1 with what was looked for in why (helper_path.c). */
int bench_find_helper(const char *name, int program, char *path, size_t cap, char *why, size_t why_len);
/* Starts argv (argv[0] searched on PATH unless it holds a folder) with
 * this process's environment and env_set's "NAME=VALUE" variables (NULL:
 * none) set, its stdout a stream (NULL: it could not start); the caller
 * closes it and then waits for *child with bench_wait_helper, which
 * returns its exit status (-1: a signal ended it, or it could not be
 * waited for) and says which in how ("status 3", "signal 11"). */
FILE *bench_spawn_reading(char **argv, const char *const *env_set, ffnrt_lab_child *child);
int bench_wait_helper(ffnrt_lab_child child, char *how, size_t cap);

#endif
