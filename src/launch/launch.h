/* The launchers: kernel build defines assembled in one place, the
 * element-wise launcher and the GEMM launcher. Each takes a choice the
 * dispatcher made and turns it into builds and dispatches that fit the
 * device's limits; with the context's plan sink set, it describes them
 * instead of running them. */
#ifndef FFNRT_LAUNCH_H
#define FFNRT_LAUNCH_H

#include "dispatch/dispatch.h"

/* ------------------------------------------------------- build defines */

/* Kernel variants. A kernel's variant is one typed value the dispatcher
 * chooses whole (ffnrt_ew_variant, ffnrt_gemm_variant in dispatch.h); each
 * launcher turns it into build defines in one function, from one helper
 * per dimension here: the storage type (ffnrt_defines_storage), the
 * activation's hooks from the op table (ffnrt_defines_activation), the
 * arithmetic (ffnrt_defines_arithmetic), a weight format
 * (ffnrt_defines_weights), the statistics (ffnrt_stats_defines, STATS with
 * one more binding for the reduced struct). A new dimension is a field of
 * the variant, its choice in dispatch/, a line in the launcher's
 * conversion, and its kernel code under its define. Nothing reads a
 * define back; the defines are part of the kernel cache's key, so every
 * variant is built once and kept. */

/* A kernel's build defines, newline-separated "#define" lines. */
typedef struct ffnrt_defines {
    char text[1024];
    int overflow; /* a line did not fit: the build must not run */
    int stats;    /* a statistics variant (ffnrt_stats_defines): its text takes stats.inc */
} ffnrt_defines;

/* Appends one line (printf-style, without the newline). */
void ffnrt_defines_add(ffnrt_defines *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* STORAGE_F32 / STORAGE_F16 / STORAGE_BF16: how the kernel loads and stores;
 * for f16, the define of the conversion the context's kernels use
 * (ctx->half_conversion), where it is a hardware one. */
void ffnrt_defines_storage(ffnrt_defines *d, ffnrt_dtype dtype, ffnrt_half_conversion conversion);
/* The hooks a kernel calls for an activation, from the op table: ACT(v, i),
 * DACT(v, i), ACT_F16(v, i) and PARAM_SLOPES where it reads slopes;
 * FFNRT_ACT_COUNT gives the identity (no activation). */
void ffnrt_defines_activation(ffnrt_defines *d, ffnrt_activation act);
/* ARITH_F16 when fp16 is set: the op's products in fp16 registers (MUL_F16,
 * ACT_F16), the special functions in fp32. */
void ffnrt_defines_arithmetic(ffnrt_defines *d, int fp16);
/* The weights' format: nothing for a dense one (W in the storage type);
 * WEIGHTS_QUANT, the format's WEIGHTS_ define and its code width
 * (WQ_CODES4 / WQ_CODES8) for a block format, whose loaders are
 * shaders/quant.inc's. */
void ffnrt_defines_weights(ffnrt_defines *d, ffnrt_weight_format format);

/* ------------------------------------------------------------- statistics */

/* What a kernel of a call computes statistics for (ops/stats.c chooses per
 * kernel; shaders/stats.inc has the variant). */
enum {
    FFNRT_STATS_INPUTS = 1,    /* count NaN and Inf in the kernel's inputs (the call's own) */
    FFNRT_STATS_PRE = 2,       /* its activation's pre-activations (a GEMM: its epilogue's) */
    FFNRT_STATS_OUTPUT = 4,    /* its outputs are the call's: non-finite ones and the first index */
    FFNRT_STATS_HIDDEN = 8,    /* its outputs are an FFN's hidden activations */
    FFNRT_STATS_HIST = 16,     /* the pre-activations' histogram */
    FFNRT_STATS_GATE = 32,     /* gated: the gate activation's histogram (with HIST) and the token norms */
    FFNRT_STATS_FEATURES = 64, /* FFN: the hidden features' "ever nonzero" bits */
};

/* The statistics a launch adds to its kernel: the STATS variant, with one
 * more binding (the statistics buffer, shaders/stats_layout.h) and the
 * stats fields at the end of the kernel's Params. */
typedef struct ffnrt_stats_run {
    ffnrt_tensor *buffer;
    unsigned roles;            /* FFNRT_STATS_* for this launch */
    uint32_t bins;
    float lo, scale, gate_lo, gate_scale;
    float saturation_cut;      /* |x| above it is saturated; +inf: never */
    uint32_t rows_at, feat_at; /* word offsets of the token norms and the feature bits */
    uint64_t rows;             /* tokens whose norms the finish pass reduces (0: none) */
    uint64_t row_len;          /* element-wise: elements a token (norms, features) */
    int serial;                /* one work-item reduces a group's figures (a device trait) */
    int hist_stash;            /* histograms counted after the loop, by that work-item (a device trait) */
    uint32_t items;            /* element-wise: words a work-item (a device trait) */
} ffnrt_stats_run;

/* The stats fields every kernel's Params block ends with (STATS_PARAMS). */
typedef struct ffnrt_stats_params {
    uint32_t rows_at, feat_at, row0, col0, row_len, bins;
    float lo, scale, gate_lo, gate_scale;
    uint32_t saturated_add;  /* 2^31 - the bits of |x| from which it is saturated (stats.inc's st_sat) */
} ffnrt_stats_params;

/* The STATS defines of a kernel with `bindings` bindings of its own and
 * workgroup size wg. Element-wise (gemm_rows 0): items, STATS_ITEMS;
 * norms2, the token norms summed in registers; stash, elements a group
 * stashes bins for (0: none). A GEMM: gemm_rows, the rows of a group's
 * tile. */
void ffnrt_stats_defines(const ffnrt_stats_run *r, ffnrt_defines *d, uint32_t bindings, uint32_t wg, uint32_t items,
                         int norms2, uint32_t stash, uint32_t gemm_rows);
/* The stats fields for a dispatch whose first row and column are row0, col0. */
ffnrt_stats_params ffnrt_stats_params_of(const ffnrt_stats_run *r, uint64_t row0, uint64_t col0);
/* Shared memory (bytes) the STATS variant of a kernel adds: element-wise
 * with its stash of `stash` elements, a GEMM's (stash 0) with gemm_rows
 * rows a group. */
uint64_t ffnrt_stats_smem_bytes(const ffnrt_stats_run *r, uint32_t wg, int norms2, uint32_t stash, uint32_t gemm_rows);
/* The same for a GEMM as base + per_item·wg + per_row·rows (the room the
 * FFN choice's kernel shapes leave it: ffnrt_ffn_choice.stats). */
ffnrt_smem_reserve ffnrt_stats_gemm_smem(const ffnrt_stats_run *r);
/* Records the finish pass (shaders/stats.kernel: the token norms' sums and
 * maxima) into the open batch; nothing when the run has no token norms. */
ffnrt_status ffnrt_stats_record_finish(ffnrt_context *ctx, const ffnrt_stats_run *r);

/* ------------------------------------------------------------ element-wise */

/* Magic number and shifts for DIV_BY(n, magic, shift) in shaders/storage.inc:
 * n / d exactly for every uint32 n, d >= 1, by a multiply-high, an add and
 * two shifts. */
void ffnrt_divisor(uint32_t d, uint32_t *magic, uint32_t *shift);


/* One tensor argument of an element-wise kernel. The launcher iterates over
 * rows x row_elems output elements; a binding holds per_row of its own
 * elements for each row (0: bound whole, e.g. PReLU's slopes). */
typedef struct ffnrt_ew_binding {
    const ffnrt_tensor *tensor;
    uint64_t per_row;
} ffnrt_ew_binding;

typedef struct ffnrt_ew_launch {
    const ffnrt_ew_variant *variant; /* the kernel (its op's dtype is every tensor argument's) */
    uint64_t rows;
    uint64_t row_elems;
    const ffnrt_ew_binding *bindings;
    uint32_t binding_count;
    /* The kernel's Params block; it starts with uint n (elements in the
     * dispatch's range) and uint base (index of its first element). */
    void *params;
    uint32_t params_size;
    const ffnrt_stats_run *stats; /* NULL: the kernel without statistics */
} ffnrt_ew_launch;

/* Runs an element-wise kernel over the whole iteration space, split into
 * dispatches that respect the device's buffer range, offset alignment and
 * workgroup counts. */
ffnrt_status ffnrt_run_elementwise(ffnrt_context *ctx, const ffnrt_ew_launch *launch);

/* -------------------------------------------------------------------- GEMM */

/* One operand of a product: rows [w_row0, w_row0 + n) of w, and its bias
 * from element b_first (b NULL: none). Stacked gate/value weights are two
 * operands over one tensor. A block format (format, chosen when the layer
 * is made) keeps w's codes in w and its scales in ws, as src/quant/layout.c
 * lays them out; a dense one (0) is w in the product's storage type. */
typedef struct ffnrt_gemm_operand {
    const ffnrt_tensor *w;
    uint64_t w_row0;
    const ffnrt_tensor *b;
    uint64_t b_first;
    const ffnrt_tensor *ws;
    ffnrt_weight_format format;
} ffnrt_gemm_operand;

/* y[m, n] = epilogue(sum_k x[m, k] · W[n, k]) for an m x k slice of x and
 * the n output features of one (or, gated, two) operands; y's row stride
 * is n. The tensors may be NULL when only planning. */
typedef struct ffnrt_gemm_launch {
    const ffnrt_tensor *x;
    uint64_t m, k;
    ffnrt_gemm_operand w, wv; /* wv used when gated */
    uint64_t n;
    ffnrt_tensor *y;
    ffnrt_activation act; /* the epilogue's; FFNRT_ACT_COUNT: none */
    float alpha, beta;
    ffnrt_dtype dtype;
    int gated, bias;
    const ffnrt_stats_run *stats; /* NULL: the kernel without statistics */
    int accumulate;               /* y += the product */
    uint64_t y_first;             /* element index of y[0][0] in y (rows of a stacked matrix) */
    ffnrt_tensor *xq;             /* the integer path's scratch: ffnrt_xq_words(m, k) words at least */
    /* The backward's fused epilogue (act's gradient; y_first 0): pre, and
     * for the gating value and y2, [m, n] each as y. */
    ffnrt_grad_epilogue grad;
    const ffnrt_tensor *pre, *value;
    ffnrt_tensor *y2;
} ffnrt_gemm_launch;

/* A binding of `count` elements of t from element `first`: the offset is
 * rounded down to the device's alignment and *base is where `first` lies. */
ffnrt_binding ffnrt_bind_elements(const ffnrt_context *ctx, const ffnrt_tensor *t, uint64_t first, uint64_t count,
                                  uint32_t *base);
/* Elements of esize bytes that one such binding holds wherever they start
 * (the offset's rounding and whole words included); 0 where none. */
uint64_t ffnrt_binding_elements(const ffnrt_context *ctx, uint64_t esize);

/* Records y [cols, y_stride] = xᵀ for x [rows, cols] from element x_first
 * of x, by tiles (shaders/transpose.kernel's TILES), into the open batch,
 * in one dispatch where x's rows and y fit a binding each and the tiles
 * the grid, else a dispatch per block that does. y_stride is rows, or
 * rows + 1 with a zero in each row's last element: 16-bit rows must be
 * whole words, so an odd count of rows is padded (a product over them
 * adds 0 · 0). ffnrt_transpose_tiles_fit says where they serve: on the
 * devices whose kernel params ask for them (transpose_tiles), on every
 * device where x passes the buffer range (the element-wise transpose,
 * which binds x whole, serves the rest), and wherever y is padded. */
int ffnrt_transpose_tiles_fit(const ffnrt_context *ctx, const ffnrt_tensor *x, uint64_t x_first, uint64_t rows,
                              uint64_t cols, const ffnrt_tensor *y, uint64_t y_stride);
ffnrt_status ffnrt_launch_transpose_tiles(ffnrt_context *ctx, const ffnrt_tensor *x, uint64_t x_first, uint64_t rows,
                                          uint64_t cols, ffnrt_tensor *y, uint64_t y_stride);

/* The integer path's x block of 32 in words: shaders/quant.inc's
 * XQ_BLOCK_WORDS (codes, d, the code sum, two zero words to a 16-byte
 * boundary). */
#define FFNRT_XQ_BLOCK_WORDS 20
/* 32-bit words of the integer path's quantized x for rows x k elements
 * (shaders/quant.inc's X_Q8 layout). */
uint64_t ffnrt_xq_words(uint64_t rows, uint64_t k);

/* Records one product's dispatches into the open batch, with the kernel,
 * tiles and arithmetic of the choice; with plan non-NULL, adds "ffn.<name>"
 * saying what they would be, and dispatches nothing. */
ffnrt_status ffnrt_launch_gemm(ffnrt_context *ctx, const ffnrt_ffn_choice *c, const ffnrt_gemm_launch *g,
                               ffnrt_plan *plan, const char *name);

/* The training backward's weight gradient on K-major operands
 * (gemm_outer.inc): y [m, n] (from element y_first; += when accumulate) =
 * xᵀ · w, for x [k, m] from element x_first and w [k, n] from w_first. */
typedef struct ffnrt_outer_launch {
    const ffnrt_tensor *x;
    uint64_t x_first;
    const ffnrt_tensor *w;
    uint64_t w_first;
    uint64_t m, n, k;
    ffnrt_tensor *y;
    uint64_t y_first;
    ffnrt_dtype dtype;
    int accumulate;
} ffnrt_outer_launch;

/* Whether the device's kernels take that product in one dispatch: the
 * driver has them (kernel_params.inc's blocked_outer), the choice's level
 * is blocked, rows and bases are whole vectors, and the bindings and
 * groups fit the device. Elsewhere the caller transposes its operands. */
int ffnrt_outer_fits(const ffnrt_context *ctx, const ffnrt_ffn_choice *c, const ffnrt_outer_launch *o);
/* The same for its shape alone, bases apart (the plan's account). */
int ffnrt_outer_shape_fits(const ffnrt_context *ctx, const ffnrt_ffn_choice *c, uint64_t m, uint64_t n, uint64_t k,
                           ffnrt_dtype dtype);
/* Records it into the open batch (where ffnrt_outer_fits). */
ffnrt_status ffnrt_launch_outer(ffnrt_context *ctx, const ffnrt_ffn_choice *c, const ffnrt_outer_launch *o);

/* ------------------------------------------------------------- reductions */

/* Groups of the sums-of-squares pass, and the 32-bit words its partials
 * take for `tensors` tensors (an f32 tensor of that many holds them). */
uint32_t ffnrt_sumsq_groups(const ffnrt_context *ctx);
uint64_t ffnrt_sumsq_words(const ffnrt_context *ctx, size_t tensors);
/* Records the pass over tensor a (a - b when b is given: the same shape
 * and dtype) into the open batch, as the index-th tensor of partials
 * (shaders/sumsq.kernel): its sum of squares, its elements of magnitude
 * at most near_zero, its non-finite ones. */
ffnrt_status ffnrt_launch_sumsq(ffnrt_context *ctx, const ffnrt_tensor *a, const ffnrt_tensor *b,
                                const ffnrt_tensor *partials, uint32_t index, float near_zero);
/* One tensor's figures, its groups' partials added in order. */
typedef struct ffnrt_sumsq_result {
    double sumsq;
    uint64_t near_zero, non_finite;
} ffnrt_sumsq_result;
/* Reads the partials of the first `tensors` tensors (after their batch). */
ffnrt_status ffnrt_sumsq_collect(ffnrt_context *ctx, const ffnrt_tensor *partials, size_t tensors,
                                 ffnrt_sumsq_result *out);
/* Records softmax cross-entropy over the rows of logits (last axis the
 * classes) into the open batch: rowloss (f32, a row each) gets each row's
 * loss, dlogits (NULL: none) factor · (softmax - one-hot). labels holds a
 * uint32 class a row, checked by the caller. Logits past the buffer range
 * go in blocks of rows; a row past it is refused. */
ffnrt_status ffnrt_launch_cross_entropy(ffnrt_context *ctx, const ffnrt_tensor *logits, const ffnrt_tensor *labels,
                                        ffnrt_tensor *dlogits, const ffnrt_tensor *rowloss, float factor);
/* Records the roof kernel (shaders/roof.kernel) over out's elements, a
 * work-item each (whole groups of up to 64): fp32 FMA, or integer (the
 * integer path's products); *ops gets the flops or code products it does. */
ffnrt_status ffnrt_launch_roof(ffnrt_context *ctx, int integer, const ffnrt_tensor *out, double *ops);
/* Records y = RMSNorm(x) · w over x's rows (shaders/rms_norm.kernel) into
 * the open batch, in blocks of rows past the buffer range. */
ffnrt_status ffnrt_launch_rms_norm(ffnrt_context *ctx, const ffnrt_tensor *x, const ffnrt_tensor *w, float eps,
                                   ffnrt_tensor *y);

#endif
