/* ffnrt_compare.h: the seed's controlled comparison of FFN forms.
 *
 * Dense ReLU, GELU (erf and tanh) and SiLU layers of width m against
 * ReGLU, GEGLU and SwiGLU layers of the gated width with the same weight
 * count (g = ffnrt_ffn_gated_hidden(m, multiple)), with and without
 * biases, in each weight format asked for, measured on one context's
 * device: widths, parameters, FLOPs and bytes moved per token, peak device
 * memory, end-to-end latency at 1 token and throughput at each token count
 * (interleaved rounds: mean, spread, failed runs), the dispatcher's path,
 * and stability figures on a stated input distribution over several seeds.
 *
 * Thresholds first: the criteria are given when the comparison is created
 * (or set one by one before it runs); ffnrt_compare_run seals them,
 * recording their canonical text, its SHA-256 and the time, before it
 * measures anything, and judges every candidate against them. A criterion
 * given after the run is refused. `ffnrt compare` is the command on top. */
#ifndef FFNRT_COMPARE_H
#define FFNRT_COMPARE_H

#include "ffnrt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ffnrt_compare_candidate {
    FFNRT_CANDIDATE_DENSE_RELU = 0, /* "dense-relu": W2·relu(W1·x) at width m */
    FFNRT_CANDIDATE_DENSE_GELU,     /* "dense-gelu": exact GELU (erf) */
    FFNRT_CANDIDATE_DENSE_GELU_TANH,/* "dense-gelu_tanh" */
    FFNRT_CANDIDATE_DENSE_SILU,     /* "dense-silu" */
    FFNRT_CANDIDATE_REGLU,          /* "reglu": Wo·(relu(Wg·x) ⊙ Wv·x) at width g */
    FFNRT_CANDIDATE_GEGLU,          /* "geglu": exact GELU gate */
    FFNRT_CANDIDATE_SWIGLU,         /* "swiglu": SiLU gate (swish, beta = 1) */
    FFNRT_CANDIDATE_COUNT
} ffnrt_compare_candidate;

FFNRT_API const char *ffnrt_compare_candidate_name(ffnrt_compare_candidate c); /* "unknown" past the end */
FFNRT_API ffnrt_status ffnrt_compare_candidate_from_name(const char *name, ffnrt_compare_candidate *out);

/* The criteria, judged per candidate (each variant of bias and format).
 * A field at its FFNRT_COMPARE_CRITERIA_INIT value is not a criterion. The
 * stability figures are measured whether or not they are criteria, on the
 * stated input distribution. The criteria file names each field by the
 * key in quotes. */
typedef enum ffnrt_compare_input {
    FFNRT_INPUT_NORMAL = 0,  /* N(a, b²): mean a, standard deviation b */
    FFNRT_INPUT_UNIFORM      /* U[a, b) */
} ffnrt_compare_input;

typedef enum ffnrt_compare_task {
    FFNRT_TASK_SYNTHETIC = 0,
    FFNRT_TASK_GGUF
} ffnrt_compare_task;

typedef struct ffnrt_compare_criteria {
    double max_latency_ms;     /* "max_latency_ms": mean end-to-end time of a 1-token forward; 0: none */
    double max_memory_mib;     /* "max_memory_mib": peak device memory at memory_tokens, MiB; 0: none */
    int64_t memory_tokens;     /* "memory_tokens": 0: the largest token count */
    double min_tokens_per_s;   /* "min_tokens_per_s": mean throughput at throughput_tokens; 0: none */
    int64_t throughput_tokens; /* "throughput_tokens": 0: the largest token count */
    int require_finite;        /* "finite": 1: no NaN or Inf in any output on the stability inputs */
    double max_dead_fraction;  /* "max_dead_fraction": at most this share of hidden features dead for
                                  every token of a call, on every seed; < 0: none */
    /* The stated input distribution of the stability figures. */
    ffnrt_compare_input input; /* "input": "normal A B" or "uniform A B" */
    double input_a, input_b;
    int64_t stability_tokens;  /* "stability_tokens": tokens per call */
    uint32_t seeds;            /* "seeds": input seeds, each a call per candidate; 0: no stability figures
                                  (then neither "finite" nor "max_dead_fraction" may be set) */
    /* Training (the seed's protocol: ffnrt compare --train): each f32
     * candidate learns a fixed random teacher (a SwiGLU layer of the gated
     * width, its own weight streams) from fresh inputs of the stated
     * distribution, train_seeds times (student initialisation and training
     * inputs from the seed; the validation inputs from a stream no seed
     * uses), with AdamW. 0 steps: no training. */
    ffnrt_compare_task task;       /* "task": "synthetic" (the fixed random teacher above), or "gguf N": the
                                      distillation of layer N of the spec's GGUF model (ffnrt_compare_spec
                                      .gguf_path): its FFN (dequantized) is the teacher, the inputs are the
                                      RMS-normalised rows of its token_embd.weight, row r for validation when
                                      r % 10 == 8, held out when r % 10 == 9, else for training */
    int64_t task_layer;
    uint32_t train_steps;          /* "train_steps": steps a run (the most, with patience) */
    uint32_t train_seeds;          /* "train_seeds": runs a candidate, 1 to 64 */
    int64_t train_tokens;          /* "train_tokens": inputs a step */
    int64_t validation_tokens;     /* "validation_tokens": the validation set's inputs */
    double train_lr;               /* "train_lr": AdamW's learning rate, > 0 (0.01: the synthetic teacher
                                      is learnt to 0.2-0.4 of its mean square in 200 steps) */
    double train_weight_decay;     /* "train_weight_decay": AdamW's decoupled decay, >= 0 */
    double train_max_grad_norm;    /* "train_max_grad_norm": global clipping; 0 (none): off */
    uint32_t train_patience;       /* "train_patience": stop after this many evaluations (16 a run) without a
                                      better validation loss; 0: every step runs */
    double max_val_rel_mse;        /* "max_val_rel_mse": the quality criterion, the mean over runs of the
                                      validation MSE over the teacher's mean square; 0: none */
    double max_step_ms;            /* "max_step_ms": median training step (forward, backward, AdamW); 0: none */
    double max_train_memory_mib;   /* "max_train_memory_mib": device memory a run holds (layer, gradients,
                                      optimizer state, kept intermediates, inputs); 0: none */
} ffnrt_compare_criteria;

#define FFNRT_COMPARE_CRITERIA_INIT                                                                              \
    { 0.0, 0.0, 0, 0.0, 0, 0, -1.0, FFNRT_INPUT_NORMAL, 0.0, 1.0, 64, 3, FFNRT_TASK_SYNTHETIC, 0, 0, 3, 64, 256,    \
      1e-2, 0.01, 1.0, 0, 0.0, 0.0, 0.0 }

/* Reads criteria text: one "key = value" a line, '#' starts a comment,
 * keys as above, each at most once; starts from FFNRT_COMPARE_CRITERIA_INIT.
 * An unknown key, a repeated one or a bad value is
 * FFNRT_ERROR_INVALID_ARGUMENT naming the line. */
FFNRT_API ffnrt_status ffnrt_compare_criteria_parse(const char *text, ffnrt_compare_criteria *out);
/* Sets one criterion by its key, as a line of the text would. */
FFNRT_API ffnrt_status ffnrt_compare_criteria_set(ffnrt_compare_criteria *c, const char *key, const char *value);
/* The canonical text (every field, one line each, in a fixed order and
 * format, so equal criteria give equal text) into buf, and its SHA-256 as
 * 64 hex digits into sha256_hex (either may be NULL). A buffer too small
 * is FFNRT_ERROR_INVALID_ARGUMENT; 1024 bytes always suffice. */
FFNRT_API ffnrt_status ffnrt_compare_criteria_text(const ffnrt_compare_criteria *c, char *buf, size_t len,
                                                   char sha256_hex[65]);

/* What to compare. */
#define FFNRT_COMPARE_MAX_TOKENS 8
#define FFNRT_COMPARE_MAX_CURVE 17 /* evaluations of a training run: before it, then 16 */

typedef struct ffnrt_compare_spec {
    int64_t d_model;
    /* The dense width m; or 0, and m is the largest multiple of `multiple`
     * with 2·d_model·m <= parameter_budget (weights, biases aside). */
    int64_t dense_hidden;
    int64_t parameter_budget;
    /* g = ffnrt_ffn_gated_hidden(m, multiple): 2m/3 rounded down, then up to
     * a multiple of this (Llama: 256). 0: 1. */
    int64_t multiple;
    uint32_t candidates;   /* bits 1 << ffnrt_compare_candidate; 0: all */
    uint32_t biases;       /* bit 0: without biases, bit 1: with; 0: both */
    uint32_t formats;      /* bits 1 << ffnrt_weight_format; 0: f32 only. The block formats (Q8_0 ...)
                              run with fp32 activations; d_model and both widths must be multiples of
                              their block (refused here otherwise) */
    /* Token counts, ascending or not; 1 and the criteria's memory and
     * throughput counts are added when missing. ntokens 0: the defaults for
     * the layer's size (ffnrt_compare_plan_tokens). */
    int64_t tokens[FFNRT_COMPARE_MAX_TOKENS];
    size_t ntokens;
    uint32_t rounds;       /* interleaved timing rounds after a warm-up round; 0: 5 */
    uint32_t weight_seed;  /* the weights: nn.Linear's U(±1/sqrt(fan-in)) from this seed; 0: 1 */
    /* Called as the run goes ("f32 t64 round 3/5"), may be NULL; the
     * callback may ask ffnrt_compare_get_progress for the figures so far. */
    void (*progress)(void *user, const char *what);
    void *progress_user;
    /* The GGUF model of the training task "gguf N" (criteria.task); its
     * d_model must be the spec's. */
    const char *gguf_path;
} ffnrt_compare_spec;

#define FFNRT_COMPARE_SPEC_INIT(d_model_, dense_hidden_) \
    { (d_model_), (dense_hidden_), 0, 1, 0, 0, 0, {0}, 0, 0, 0, NULL, NULL, NULL }

typedef struct ffnrt_comparison ffnrt_comparison;

/* The token counts a comparison of this spec measures, known before any
 * device runs (a function of the spec and the criteria alone, never of a
 * measurement): the spec's counts, or when it gives none the defaults for
 * the layer's size; then 1 (the latency) and the criteria's memory and
 * throughput counts; ascending, each once. criteria may be NULL (none).
 * why (may be NULL) gets a sentence saying how they were chosen.
 *
 * The defaults: 1 always (decode: the latency), then each of 8, 64 and 512
 * whose call does at least 1 MFLOP (2 FLOPs a weight, 4dm a token: below
 * that a call's time is mostly its dispatches' overhead on any device,
 * which the 1-token call measures already, while each count is more
 * kernels to build) and at most 20 GFLOP (about a second a call on a CPU
 * driver). So the seed's 6 x 12 gets 1 alone; 64 x 256 gets 1, 64, 512;
 * BERT's 768 x 3072 all four; an 8B-class 4096 x 16384 gets 1, 8, 64. */
FFNRT_API ffnrt_status ffnrt_compare_plan_tokens(const ffnrt_compare_spec *spec, const ffnrt_compare_criteria *criteria,
                                                 int64_t tokens[FFNRT_COMPARE_MAX_TOKENS], size_t *ntokens, char *why,
                                                 size_t why_len);

/* A comparison on ctx's device. criteria may be NULL (none); they are
 * copied. The spec is checked here (widths, token counts, formats). */
FFNRT_API ffnrt_status ffnrt_compare_create(ffnrt_context *ctx, const ffnrt_compare_spec *spec,
                                            const ffnrt_compare_criteria *criteria, ffnrt_comparison **out);
/* Sets one criterion (as ffnrt_compare_criteria_set) before the run. Once
 * ffnrt_compare_run has started the criteria are sealed, and this is
 * FFNRT_ERROR_INVALID_ARGUMENT: no criterion can be added after the run. */
FFNRT_API ffnrt_status ffnrt_compare_set_criterion(ffnrt_comparison *cmp, const char *key, const char *value);
/* Seals the criteria, then measures every candidate and judges it. Once
 * per comparison. A candidate that cannot run (a format the device or the
 * shape cannot take) is a result with its status and message; the run
 * itself fails only on bad state or host memory. */
FFNRT_API ffnrt_status ffnrt_compare_run(ffnrt_comparison *cmp);
/* The sealed criteria: their values, canonical text, SHA-256 and when they
 * were sealed (UTC, ISO 8601 with milliseconds); the strings live as long
 * as cmp. Before the run: FFNRT_ERROR_INVALID_ARGUMENT. Any pointer may be
 * NULL. */
FFNRT_API ffnrt_status ffnrt_compare_sealed(const ffnrt_comparison *cmp, ffnrt_compare_criteria *criteria,
                                            const char **text, const char **sha256_hex, const char **sealed_at);
/* The widths compared: the dense m (given, or from the budget), the gated
 * g and the multiple g was rounded to. Any pointer may be NULL. */
FFNRT_API ffnrt_status ffnrt_compare_widths(const ffnrt_comparison *cmp, int64_t *dense_hidden, int64_t *gated_hidden,
                                            int64_t *multiple);
FFNRT_API void ffnrt_compare_destroy(ffnrt_comparison *cmp); /* NULL is a no-op */

/* Where a run stands, during it (from the progress callback) or after it.
 * A step is a layer's first call: each candidate at each token count, then
 * each candidate's stability layer. A first call builds the kernels the
 * layer needs (or loads them from ffnrt's disk cache), and drivers that
 * generate code at a kernel's first dispatch (PoCL, llvmpipe) do it then:
 * its time is compiling, reported apart from the timed calls so nobody
 * takes one for the other. */
typedef struct ffnrt_compare_progress {
    uint32_t steps_done, steps_total;
    uint64_t kernels_built;    /* kernels this run built so far (the context's kernels from before it not counted) */
    uint64_t kernels_cached;   /* of them, loaded from ffnrt's disk cache */
    uint64_t kernels_to_go;    /* an estimate of the kernels the remaining steps build: each kind of step (timing,
                                  stability) at the kernels a step of its kind built so far on average, or at the
                                  cost model's kernels a call before one ran */
    double compile_s;          /* in the first calls (and the layers' creation) */
    double measure_s;          /* in the timed calls and the stability calls after each layer's first */
    double elapsed_s;          /* since the run started: the rest is weights, inputs and bookkeeping */
} ffnrt_compare_progress;

/* FFNRT_ERROR_INVALID_ARGUMENT before the run has started. */
FFNRT_API ffnrt_status ffnrt_compare_get_progress(const ffnrt_comparison *cmp, ffnrt_compare_progress *out);

/* ------------------------------------------------------------- results */

typedef enum ffnrt_compare_criterion {
    FFNRT_CRITERION_LATENCY = 0, /* judged: mean 1-token latency, ms */
    FFNRT_CRITERION_MEMORY,      /* peak device memory at memory_tokens, MiB */
    FFNRT_CRITERION_THROUGHPUT,  /* mean tokens per second at throughput_tokens */
    FFNRT_CRITERION_FINITE,      /* non-finite outputs over every seed */
    FFNRT_CRITERION_DEAD,        /* the largest dead fraction over the seeds */
    FFNRT_CRITERION_QUALITY,     /* training: mean validation relative MSE over the runs (a failed run: inf) */
    FFNRT_CRITERION_STEP_TIME,   /* training: median step, ms */
    FFNRT_CRITERION_TRAIN_MEMORY,/* training: device memory a run holds, MiB */
    FFNRT_CRITERION_COUNT
} ffnrt_compare_criterion;

FFNRT_API const char *ffnrt_compare_criterion_name(ffnrt_compare_criterion c); /* "latency", ... */

typedef enum ffnrt_compare_verdict {
    FFNRT_VERDICT_NONE = 0,   /* not a criterion */
    FFNRT_VERDICT_PASS,
    FFNRT_VERDICT_FAIL,
    FFNRT_VERDICT_UNMEASURED  /* a criterion whose figure could not be measured: not a pass */
} ffnrt_compare_verdict;

FFNRT_API const char *ffnrt_compare_verdict_name(ffnrt_compare_verdict v); /* "-", "pass", "FAIL", "unmeasured" */

/* Times of repeated calls, host end to end (what the caller waits for). */
typedef struct ffnrt_compare_timing {
    uint32_t runs;        /* calls that succeeded */
    uint32_t failed;      /* calls that returned an error */
    double mean_ms, stdev_ms, min_ms, median_ms, max_ms;
    double device_mean_ms; /* the device's own time of the same calls; 0 where it gave none */
} ffnrt_compare_timing;

/* One token count. */
typedef struct ffnrt_compare_point {
    int64_t tokens;
    ffnrt_ffn_path path;        /* the dispatcher's choice (FUSED or UNFUSED) */
    uint64_t flops;             /* ffnrt_ffn_cost_of on that path, for the whole call */
    uint64_t bytes_moved;
    uint64_t peak_bytes_model;  /* ffnrt_ffn_cost_of's peak_bytes */
    uint64_t peak_bytes;        /* measured (ffnrt_context_memory): weights, biases, x, y, intermediates */
    ffnrt_compare_timing time;
    double tokens_per_s;        /* tokens / mean time; 0 when no call succeeded */
} ffnrt_compare_point;

typedef struct ffnrt_compare_result {
    ffnrt_compare_candidate candidate;
    ffnrt_weight_format format;
    int bias;
    ffnrt_ffn_desc desc;              /* the layer measured (kind, widths, dtype, function) */
    uint64_t parameters;              /* this variant's: weights, and biases if it has them */
    uint64_t parameters_without_bias; /* 2dm dense, 3dg gated */
    uint64_t parameters_with_bias;    /* + m + d dense, + 2g + d gated */
    uint64_t weight_bytes;            /* weights and biases as allocated in `format` (after the run); a block
                                         format's as its layer holds them (repacked codes and scales) */
    size_t npoints;
    ffnrt_compare_point points[FFNRT_COMPARE_MAX_TOKENS];
    /* Stability, from the ops' in-kernel diagnostics on the criteria's
     * input distribution, one call of stability_tokens per seed. */
    int stability_measured;
    uint32_t seeds;
    uint64_t nonfinite_outputs;      /* NaN and ±Inf over every seed's output */
    uint64_t nonfinite_hidden;       /* NaN and ±Inf in the hidden activations as stored, every seed */
    double dead_fraction_max;        /* hidden features dead for every token of a call: the worst seed */
    double dead_fraction_mean;
    char stability_note[160];        /* why not measured, or what was measured */
    /* Training (criteria.train_steps > 0; f32 candidates: the others are
     * inference-only and say so in train_note). */
    int train_measured;
    uint32_t train_runs, train_failed;      /* runs made; of them failed (an error, a non-finite loss) */
    uint32_t train_steps_run;               /* steps a run took, the most over the runs */
    double val_rel_mse_mean, val_rel_mse_stdev, val_rel_mse_min, val_rel_mse_max; /* over the runs that finished */
    double step_ms;                         /* median host time of a step, over every run's steps */
    double train_tokens_per_s;              /* train_tokens / step_ms */
    uint64_t train_bytes;                   /* device memory a run holds */
    uint64_t skipped_steps;                 /* steps skipped for non-finite gradients, every run */
    double grad_norm_max;                   /* the largest global gradient norm seen */
    double train_dead_fraction;             /* hidden features dead on the validation inputs after training,
                                               the worst run */
    uint32_t curve_points;                  /* the validation curve: mean over the runs at each evaluation */
    uint32_t curve_step[FFNRT_COMPARE_MAX_CURVE];
    double curve[FFNRT_COMPARE_MAX_CURVE];
    char train_note[160];
    ffnrt_compare_verdict verdict[FFNRT_CRITERION_COUNT];
    double judged[FFNRT_CRITERION_COUNT]; /* the figure each verdict compared */
    int pass;                        /* every criterion set passed */
    ffnrt_status status;             /* FFNRT_OK, or why the candidate could not run */
    char message[256];
} ffnrt_compare_result;

/* The results exist from creation, one per format, bias variant and
 * candidate (in that order), with their widths and parameter counts: the
 * seed's accounting needs no run. ffnrt_compare_run fills in the token
 * counts, measurements, stability figures and verdicts. */
FFNRT_API size_t ffnrt_compare_result_count(const ffnrt_comparison *cmp);
/* Result i, valid as long as cmp; NULL past the end. */
FFNRT_API const ffnrt_compare_result *ffnrt_compare_result_get(const ffnrt_comparison *cmp, size_t i);
/* A result's point at `tokens` tokens, or NULL where it has none (r NULL
 * included): the points the criteria judge (1 token for latency, the
 * memory and throughput counts), for a report as for the verdicts. */
FFNRT_API const ffnrt_compare_point *ffnrt_compare_result_point(const ffnrt_compare_result *r, int64_t tokens);

#ifdef __cplusplus
}
#endif
#endif /* FFNRT_COMPARE_H */
