/* The compare harness (src/compare/, libffnrt_compare): part of the lab,
 * a client of the public API only. It times real layers through
 * ffnrt.h's calls and reports its errors through ffnrt_lab.h's, as the
 * library's own calls do. criteria.c reads and writes the criteria,
 * compare.c builds the candidates and runs them, measure.c times them,
 * stability.c asks the layers' in-kernel diagnostics for the stability
 * figures. */
#ifndef FFNRT_COMPARE_INTERNAL_H
#define FFNRT_COMPARE_INTERNAL_H

#include "ffnrt_compare.h"
#include "ffnrt_lab.h"

/* criteria.c: the text form, errors into err. */
ffnrt_status ffnrt_criteria_parse_text(const char *text, ffnrt_compare_criteria *out, ffnrt_error *err);
ffnrt_status ffnrt_criteria_set_one(ffnrt_compare_criteria *c, const char *key, const char *value, ffnrt_error *err);
/* Canonical text (buf may be NULL) and its SHA-256 in hex (hex may be NULL);
 * refuses criteria whose values are out of range. */
ffnrt_status ffnrt_criteria_canonical(const ffnrt_compare_criteria *c, char *buf, size_t len, char hex[65],
                                      ffnrt_error *err);

typedef enum compare_step_kind {
    COMPARE_STEP_TIMING = 0,
    COMPARE_STEP_STABILITY = 1,
    COMPARE_STEP_TRAINING = 2, /* a candidate's training runs: its first step builds the training kernels */
    COMPARE_STEP_KINDS
} compare_step_kind;

struct ffnrt_comparison {
    ffnrt_context *ctx;
    ffnrt_error err; /* the error of the call in progress, which ffnrt_lab_end_call ends */
    ffnrt_compare_spec spec;
    int64_t dense_hidden, gated_hidden, multiple;
    ffnrt_compare_criteria criteria;
    int sealed;
    char criteria_text[1024];
    char criteria_sha256[65];
    char sealed_at[40];
    int64_t tokens[FFNRT_COMPARE_MAX_TOKENS]; /* resolved at the run: ascending, 1 first */
    size_t ntokens;
    ffnrt_compare_result *results;
    size_t nresults;
    /* The run's accounting (ffnrt_compare_get_progress): steps by kind
     * (compare_step_kind), the kernels they built, and where the time went. */
    int started;
    double start_ms, end_ms, compile_ms, measure_ms;
    uint32_t steps_total[COMPARE_STEP_KINDS], steps_done[COMPARE_STEP_KINDS];
    uint64_t step_kernels[COMPARE_STEP_KINDS];
    uint64_t kernels_at_start, loaded_at_start;
};

/* A step: one layer's first call, which builds its kernels (compiling). */

typedef struct compare_step {
    compare_step_kind kind;
    double t0;
    uint64_t kernels0;
    int open;
} compare_step;

void compare_step_begin(ffnrt_comparison *cmp, compare_step *s, compare_step_kind kind);
/* Ends an open step (a no-op on one ended already). */
void compare_step_end(ffnrt_comparison *cmp, compare_step *s);
/* A step that will not run (its candidate could not): no longer counted. */
void compare_step_skip(ffnrt_comparison *cmp, compare_step_kind kind);
/* Host time of measured calls. */
void compare_measured(ffnrt_comparison *cmp, double ms);

/* The dtype dimension: one row per weight format the comparison can run.
 * A row says which storage type the layer's inputs, outputs and biases
 * take, how a weight matrix of fp32 host values becomes a device tensor of
 * the format, and (describe, NULL for the dense dtypes) what a layer's
 * descriptor must say about it. The quantized formats join as rows once
 * layers take them: their upload quantizes with ffnrt_quantize, their
 * describe sets the descriptor's weight formats. */
typedef struct compare_format {
    ffnrt_weight_format format;
    ffnrt_dtype dtype;
    ffnrt_status (*upload)(ffnrt_context *ctx, const struct compare_format *f, const float *w, int64_t rows, int64_t k,
                           ffnrt_tensor **out, ffnrt_error *err);
    /* NULL for the dense dtypes. Set for the block formats, whose layers
     * repack the uploaded GGUF bytes into buffers of their own at creation:
     * their weight bytes and peak are the layer's, not the upload's. */
    void (*describe)(const struct compare_format *f, ffnrt_ffn_desc *desc);
} compare_format;

/* Progress text for the spec's callback. */
void compare_progress(ffnrt_comparison *cmp, const char *fmt, ...) FFNRT_PRINTF_FORMAT(2, 3);
/* Measures and fills the results of one format (measure.c). */
ffnrt_status compare_run_format(ffnrt_comparison *cmp, const compare_format *f, ffnrt_compare_result *res, size_t n);

/* A host generator of the weights and inputs: xorshift64*, so every
 * device gets the same numbers for a seed. */
typedef struct compare_rng {
    uint64_t s;
} compare_rng;

void compare_rng_seed(compare_rng *r, uint64_t seed, uint64_t stream);
double compare_rng_uniform(compare_rng *r); /* [0, 1) */
/* n weights of nn.Linear's initialisation for fan_in inputs. */
void compare_fill_linear(compare_rng *r, float *out, size_t n, int64_t fan_in);
/* Device memory the context holds now. */
uint64_t compare_in_use(ffnrt_context *ctx);
/* n values of the criteria's input distribution. */
void compare_fill_input(compare_rng *r, const ffnrt_compare_criteria *c, float *out, size_t n);

/* A [rows, cols] device tensor of `dtype` holding fp32 host values,
 * rounded once to the dtype (v NULL: left as made, for outputs). */
ffnrt_status compare_upload(ffnrt_context *ctx, ffnrt_dtype dtype, const float *v, int64_t rows, int64_t cols,
                            ffnrt_tensor **out, ffnrt_error *err);

/* The status of a public call on ctx: FFNRT_OK, or the call's error (the
 * context's last) recorded in err too. */
ffnrt_status compare_called(ffnrt_context *ctx, ffnrt_status st, ffnrt_error *err);

/* train.c: the seed's training protocol for every f32 result (the others
 * say they are inference-only), when the criteria ask for training. */
void compare_train_all(ffnrt_comparison *cmp);

/* stability.c: the stability figures of one layer over the criteria's
 * seeds, from the ops' in-kernel diagnostics; fills the result's
 * stability fields (stability_measured 0, with the reason, where the
 * diagnostics cannot say). Ends the step (begun before the layer was
 * made) after the first seed's call. */
void compare_stability(ffnrt_comparison *cmp, ffnrt_ffn *layer, ffnrt_compare_result *r, compare_step *step);

#endif
