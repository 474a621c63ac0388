/* The dispatcher: which device, precision and kernels an op runs with, and
 * why. Every choice is a function of device traits, limits, settings,
 * calibration and tuning that returns the choice and its reason, and can
 * write both into a plan (ffnrt_plan), so the plan never differs from what
 * runs. Nothing here runs a kernel. */
#ifndef FFNRT_DISPATCH_H
#define FFNRT_DISPATCH_H

#include "core/context.h"
#include "core/plan.h"

#include <stddef.h>

/* ------------------------------------------------------------- settings */

/* Reads and checks every knob's environment variable (once) and the
 * options into s; a malformed value is FFNRT_ERROR_INVALID_ARGUMENT naming
 * the variable or option and the value. */
ffnrt_status ffnrt_settings_init(ffnrt_settings *s, const ffnrt_context_options *o, ffnrt_error *err);
/* The same on the heap, o NULL for the defaults (the interop entry points);
 * NULL with err set (fn names the caller) when memory or a value fails.
 * The caller frees it. */
ffnrt_settings *ffnrt_settings_new(const ffnrt_context_options *o, const char *fn, ffnrt_error *err);
/* ffnrt_context_force's knob `what` set to value (NULL or "" lifts it),
 * checked now. */
ffnrt_status ffnrt_settings_force(ffnrt_settings *s, const char *what, const char *value, ffnrt_error *err);
/* A knob's value by the one precedence: desc (the op's descriptor layer,
 * may be NULL) > the context's > the environment's > tuned (may be NULL);
 * NULL when none is set (the dispatcher's default applies). */
const ffnrt_setting *ffnrt_setting_get(const ffnrt_settings *s, ffnrt_knob k, const ffnrt_setting *desc,
                                       const ffnrt_setting *tuned);
/* The lowered limits asked for, key by key (an option's over
 * FFNRT_LIMITS's), and where each came from ("" for none). */
void ffnrt_settings_limits(const ffnrt_settings *s, uint64_t out[FFNRT_LIMIT_COUNT],
                           const char *from[FFNRT_LIMIT_COUNT]);
/* "name=value (where from), ..." for every knob set, or "all defaults". */
void ffnrt_settings_describe(const ffnrt_settings *s, char *buf, size_t cap);
void ffnrt_settings_device_text(const ffnrt_setting *device, char *buf, size_t cap);
const char *ffnrt_knob_name(ffnrt_knob k);
const char *ffnrt_knob_env(ffnrt_knob k);
int ffnrt_knob_forceable(ffnrt_knob k);

/* Applies the settings to a context whose device is open: limits and a
 * profile, quirk vetoes, the precision policy, autotuning. */
ffnrt_status ffnrt_configure(ffnrt_context *ctx, ffnrt_error *err);

/* ------------------------------------------------------- product kernels */

typedef enum ffnrt_product_kernel {
    FFNRT_KERNEL_BLOCKED, /* register blocks over the whole of K (CPU devices) */
    FFNRT_KERNEL_MATVEC,  /* lanes along K, weights streamed once (decode) */
    FFNRT_KERNEL_TILED,   /* shared-memory tiles (GPUs) */
    FFNRT_PRODUCT_KERNEL_COUNT
} ffnrt_product_kernel;

const char *ffnrt_product_kernel_name(ffnrt_product_kernel k);

/* ----------------------------------------------------------- FFN layers */

/* The tiles and workgroups of each product kernel. */
typedef struct ffnrt_tiled_shape {
    uint32_t bm, bn, bk, tm, tn; /* a BM x BN tile of y, BK-deep slices, TM x TN a work-item */
} ffnrt_tiled_shape;
typedef struct ffnrt_matvec_shape {
    uint32_t rows, lanes; /* rows of W a group, work-items along K a row */
} ffnrt_matvec_shape;
typedef struct ffnrt_blocked_shape {
    uint32_t tm, tn, wg_n, wg_m; /* a TM x TN block of y a work-item, WG_N x WG_M work-items */
} ffnrt_blocked_shape;

/* What one FFN forward runs (dispatch/ffn_choice.c); its plan says why. */
/* Shared memory a product kernel's statistics variant takes (bytes: base
 * + per_item x work-items + per_row x the tile's rows), left out of what
 * its shape may use; zeros when statistics are off. */
typedef struct ffnrt_smem_reserve {
    uint32_t base, per_item, per_row;
} ffnrt_smem_reserve;

typedef struct ffnrt_ffn_choice {
    int unfused;
    ffnrt_product_kernel kernel;
    uint32_t matvec_tokens;  /* MATVEC: tokens a dispatch takes */
    ffnrt_tiled_shape tiled; /* TILED */
    int fp16;                /* the activation and gating in fp16 arithmetic, on every path */
    ffnrt_smem_reserve stats; /* what the products' statistics variant takes (the launches' shapes too) */
    unsigned int_dot;         /* blocked, matvec: the weight formats (bit 1u << format) whose products quantize
                                 their input to 8 bits and take integer dot products (Q8_0, Q4_0, Q4_1, Q4_K, Q6_K) */
} ffnrt_ffn_choice;

/* The path, kernel, arithmetic and tiles of a forward of `tokens` tokens,
 * leaving `stats` (NULL: none) of shared memory to the statistics. */
/* Whether products in format f can take the integer path (Q8_0, Q4_0, Q4_1, Q4_K:
 * the formats of one (s, m) a group of 32, the quantized x's block; and
 * Q6_K, whose two scales a block of 32 scale its halves). */
int ffnrt_ffn_int_dot_format(ffnrt_weight_format f);
/* The format whose calibration layer decides f's integer path: f's own
 * (their float paths decode their codes at unlike costs, so one format's
 * ratio says little of another's), but Q4_1 takes Q4_0's (the same
 * products, one offset term more a block); FFNRT_WEIGHT_F32 for a format
 * without the integer path. Calibration measures the formats that are
 * their own. */
ffnrt_weight_format ffnrt_ffn_int_dot_figure(ffnrt_weight_format f);
/* Whether calibration measures a layer in f (f's figure is its own). */
int ffnrt_ffn_int_dot_measured(ffnrt_weight_format f);
ffnrt_status ffnrt_choose_ffn(const ffnrt_context *ctx, const ffnrt_ffn_desc *d, uint64_t tokens,
                              const ffnrt_smem_reserve *stats, ffnrt_ffn_choice *c, ffnrt_plan *plan,
                              ffnrt_error *err);
/* Whether ffnrt_ffn_backward applies the activation's (gating's) gradient
 * in the epilogue of the product dy·W_out (1) or in its own element-wise
 * pass after it (0); the plan's "ffn.training.backward" says why. */
int ffnrt_choose_backward_fused(const ffnrt_context *ctx, const ffnrt_ffn_desc *d, ffnrt_plan *plan);
/* The largest tiles that fit the device, less `stats`, from its start (or
 * the forced ones, an error if they do not fit). */
ffnrt_status ffnrt_choose_tiled(const ffnrt_context *ctx, const ffnrt_smem_reserve *stats, ffnrt_tiled_shape *out,
                                ffnrt_plan *plan, ffnrt_error *err);
ffnrt_status ffnrt_choose_matvec(const ffnrt_context *ctx, const ffnrt_smem_reserve *stats, uint32_t tokens,
                                 ffnrt_matvec_shape *out, ffnrt_error *err);
/* BLOCKED's shape for m rows and n outputs (sixteen_bit: 16-bit outputs,
 * which go through shared memory; wide: block-format weights 16 a step;
 * streamed: the rows up to which block-format weights take the narrow
 * columns, kernel_params.inc's tn_decode_streamed). */
ffnrt_blocked_shape ffnrt_choose_blocked(const ffnrt_context *ctx, const ffnrt_smem_reserve *stats, uint64_t m,
                                         uint64_t n, int gated, int sixteen_bit, int wide, uint32_t streamed);
/* Whether a block has so many outputs a work-item that they are staged in
 * shared memory and its loops over them rolled (LARGE_BLOCK), and the
 * floats of shared memory its outputs take. */
int ffnrt_blocked_large(ffnrt_blocked_shape b);
uint64_t ffnrt_blocked_smem_floats(ffnrt_blocked_shape b, int gated, int sixteen_bit);
uint64_t ffnrt_tiled_smem_floats(ffnrt_tiled_shape t);

/* One product y = epilogue(x · Wᵀ) of a layer, as the variant depends on
 * it: x [m, k], W [n, k] in `format` (its dtype's own for a dense one). */
typedef enum ffnrt_grad_epilogue { FFNRT_GRAD_NONE = 0, FFNRT_GRAD_ACT, FFNRT_GRAD_GLU } ffnrt_grad_epilogue;

typedef struct ffnrt_gemm_problem {
    uint64_t m, n, k;
    ffnrt_dtype dtype;
    ffnrt_weight_format format, value_format; /* value_format: Wv's, when gated */
    ffnrt_activation act;                     /* the epilogue's; FFNRT_ACT_COUNT: none */
    int gated, bias, stats;
    int accumulate;                           /* y += the product (training's sums) */
    /* The training backward's weight gradients y = xᵀ·W on operands as
     * stored, x [K, M] and W [K, N] (gemm_outer.inc); no epilogue. */
    int kmajor;
    /* W's (and Wv's) code bindings start on 32-byte boundaries (their
     * tensors' offsets: the 8-word views, quant_w8). */
    int codes_align32;
    /* The training backward's fused epilogue on du = dy·W_out, by act's
     * gradient (gemm.kernel's ACT_GRAD, GLU_GRAD): none, y = du * phi'(pre),
     * or the gating's two gradients. */
    ffnrt_grad_epilogue grad;
} ffnrt_gemm_problem;

/* gemm.kernel's variant for one product, chosen whole here
 * (dispatch/gemm_variant.c) from the FFN choice, the device and the
 * problem: launch/ turns it into build defines (and so the cache key) and
 * dispatches, and the plan prints it (ffnrt_gemm_variant_text). */
typedef struct ffnrt_gemm_variant {
    ffnrt_product_kernel level; /* the body file: blocked, matrix-vector or tiled */
    ffnrt_dtype storage;
    ffnrt_weight_format weights;
    ffnrt_activation act; /* FFNRT_ACT_COUNT: no activation */
    int gated, bias;
    int fp16_epilogue; /* the activation and gating product in fp16 arithmetic */
    int aligned4;      /* vector loads: K and every base a multiple of 4 (fp32) or 2 (16-bit) */
    int vec_acc;       /* blocked: a vector of partial sums per output (else dot()) */
    int wide_codes;    /* blocked, block formats: 16 weights a step in 16-wide vectors */
    int sum_x;         /* blocked, block formats: each group's codes dotted with x before scaling */
    int x_q8;          /* the integer path: x quantized to 8 bits a block, integer dot products */
    int x_bytes;       /* integer path: x's codes as bytes (XQ_BYTES): the blocked kernel's byte dot products,
                        * the matvec kernel's packed ones */
    int x_bytes_plain; /* ... in plain vectors (XQ_BYTE_DOT_PLAIN): 1 FFNRT_LIMITS byte_dot=0, 2 a host without AVX2 */
    int x_packed;      /* matvec, integer path: x's codes as bytes, packed 4 x 8-bit dot products (XQ_PACKED_DOT):
                        * the device info's int_dot_packed, 1 supported or 2 accelerated */
    int quant_vec4;    /* block formats: the code words (and the integer path's x blocks) read as 4-word vectors
                        * (QUANT_VEC4), where binding offsets keep them 16-byte aligned */
    int quant_w8;      /* blocked float path, 8 code words a group (Q8_0): a group's words read as one access
                        * through a 64-bit view (QUANT_W8) */
    int views64;       /* the 4-word views (vector loads and stores) as two 64-bit words (VIEWS_64) */
    int large_block;   /* blocked: outputs staged in shared memory, their loops rolled (LARGE_BLOCK) */
    int k_tail;        /* blocked, dense weights: K is not a multiple of 4 (K_TAIL) */
    ffnrt_blocked_shape blocked;
    ffnrt_matvec_shape matvec;
    uint32_t tokens; /* matrix-vector: the most tokens a dispatch takes (rounded up to a power of two) */
    ffnrt_tiled_shape tiled;
    uint32_t workgroup;        /* work-items a group */
    uint32_t rows_per_group;   /* rows of x (tokens) a group covers (the statistics' row sums) */
    uint32_t columns_per_group; /* outputs a group covers */
    uint64_t smem_floats;
    int stats;      /* the statistics variant */
    int accumulate; /* y += the product (p.accumulate, or ACCUMULATE under fixed_epilogue) */
    /* A forward product without a bias and without the bias bindings
     * (NO_BIAS_BINDINGS), under fixed_epilogue or where they would pass
     * the device's max_bindings; elsewhere every forward product has them,
     * and p.add_bias says whether they hold a bias, so layers with and
     * without share kernels. */
    int no_bias_bindings;
    /* The bias and the accumulation compiled in (FIXED_EPILOGUE, BIAS,
     * ACCUMULATE) rather than parameters: kernel_params' masked_branches. */
    int fixed_epilogue;
    int outer;      /* blocked: K-major operands as outer products (OUTER, gemm_outer.inc) */
    ffnrt_grad_epilogue grad; /* the backward's epilogue by act's gradient (ACT_GRAD, GLU_GRAD) */
} ffnrt_gemm_variant;

ffnrt_status ffnrt_choose_gemm_variant(const ffnrt_context *ctx, const ffnrt_ffn_choice *c,
                                       const ffnrt_gemm_problem *pr, ffnrt_gemm_variant *out, ffnrt_error *err);
/* Storage buffers gemm.kernel binds for a forward product. */
uint32_t ffnrt_gemm_forward_bindings(int gated, int bias_bound, int quant, int stats);
/* The whole variant in words, for the plan (no "fp16" unless the epilogue
 * runs in fp16: the plan's arithmetic claim is read from it). */
void ffnrt_gemm_variant_text(const ffnrt_gemm_variant *v, char *buf, size_t cap);
uint64_t ffnrt_matvec_smem_floats(ffnrt_matvec_shape s, uint32_t tokens);
/* The rows (tokens) a product kernel is compiled for: m rounded up to a
 * power of two, at most cap, so nearby counts share one kernel (the
 * kernels skip the rows past p.M). */
uint32_t ffnrt_rows_class(uint64_t m, uint32_t cap);
uint32_t ffnrt_ffn_matvec_tokens(const ffnrt_context *ctx, const ffnrt_ffn_desc *d);
/* A layer's weight matrices, and the block format each is stored in:
 * FFNRT_WEIGHT_F32 (0) for one in the layer's dtype. */
typedef enum ffnrt_ffn_matrix { FFNRT_FFN_MATRIX_IN, FFNRT_FFN_MATRIX_VALUE, FFNRT_FFN_MATRIX_OUT } ffnrt_ffn_matrix;
ffnrt_weight_format ffnrt_ffn_format(const ffnrt_ffn_desc *d, ffnrt_ffn_matrix m);
/* Whether any matrix is in a block format. */
int ffnrt_ffn_quantized(const ffnrt_ffn_desc *d);
/* Whether the fused path can run it (gated: gate and value in one format). */
int ffnrt_ffn_fusable(const ffnrt_ffn_desc *d);
/* Checks the desc's formats (err names fn): each a format, a dense one
 * F32 or the dtype's own, a block one with its k (d_model, or hidden for
 * W_out) a multiple of its block. */
ffnrt_status ffnrt_ffn_check_formats(ffnrt_error *err, const ffnrt_ffn_desc *d, const char *fn);
/* The backward's K over n, a product's transposed operands' row length:
 * n, made even in 16-bit storage, whose rows must be whole 32-bit words;
 * the pad is a zero in both operands. n is the tokens for the weight
 * gradients, d_model or hidden for the input gradients. */
uint64_t ffnrt_ffn_gradient_k(const ffnrt_ffn_desc *d, uint64_t n);
/* The cost model of ffnrt_ffn_cost_of, for a checked desc; 0 when a
 * figure would pass 64 bits. */
int ffnrt_ffn_cost_model(const ffnrt_ffn_desc *d, uint64_t tokens, int unfused, ffnrt_ffn_cost *out);
/* The shape class a tuning result holds for: kind, function, dtype,
 * biases, sizes and the token count's bucket (1, 2-8, 9-64, more). */
void ffnrt_ffn_tuning_key(const ffnrt_ffn_desc *d, uint64_t tokens, char *key, size_t cap);
/* Whether autotune (and the bench's regret) times kernel k. */
int ffnrt_ffn_candidate(const ffnrt_context *ctx, ffnrt_product_kernel k, uint64_t tokens, const ffnrt_ffn_desc *d);
/* The weight formats (ffnrt_ffn_choice's int_dot bits) whose integer path
 * autotune times on and off for this shape: 0 where the dispatcher never
 * takes it (above 4 tokens, the exact policy, forced by ffn.int_dot, no
 * Q8_0, Q4_0, Q4_1, Q4_K or Q6_K matrix). */
unsigned ffnrt_ffn_int_dot_tunable(const ffnrt_context *ctx, const ffnrt_ffn_desc *d, uint64_t tokens);
/* A tuning result's code: the integer path (0 not timed, 1 off, 2 on) * 8
 * + unfused * 4 + the kernel. */
#define FFNRT_TUNING_CODE(int_state, unfused, kernel) ((int_state) * 8 + (unfused) * 4 + (int)(kernel))

/* ------------------------------------------------------------ device choice */

/* One device's place in the automatic choice. */
typedef struct ffnrt_device_rank {
    size_t index;       /* into the list ranked */
    long score;         /* higher is better; < 0: the same device as `twin` through another API, not chosen */
    long twin;          /* index of the same physical device via the other API, or -1 */
    char reason[512];
} ffnrt_device_rank;

/* Ranks devices: discrete, integrated, virtual GPU, then CPU; then
 * capability. One physical device seen through both APIs (same UUID, else
 * same PCI address, else same vendor, device id and name) keeps only its
 * better backend. Pure: tests call it on made-up lists. */
void ffnrt_rank_devices(const ffnrt_device_info *infos, size_t count, ffnrt_device_rank *ranks);

/* What the caller asked for (options or FFNRT_DEVICE): any of them may be unset. */
typedef struct ffnrt_device_request {
    ffnrt_backend backend; /* ANY: any */
    long index;            /* -1: any */
    const char *name;      /* a pattern of the name, vendor or API version; NULL: any */
    const char *from;      /* who asked ("FFNRT_DEVICE", "options..."), NULL: nobody */
} ffnrt_device_request;

/* The request from the settings (the device knob, by the precedence). */
void ffnrt_device_request_of(const ffnrt_settings *s, ffnrt_device_request *req, char *name_buf, size_t cap);

/* Chooses among infos: the device asked for, else the best of the
 * ranking; where the best type has several devices that tie on type, the
 * one expected to be fastest by its calibration figures (figures[i], valid
 * or not; NULL: none known) wins, capability deciding only between devices
 * without figures or within 10% of each other. Pure: tests give made-up
 * lists and figures.
 * Returns FFNRT_OK with *chosen and the reason; or, when figures are
 * missing that would decide, FFNRT_OK with *chosen = -1 and need[i] = 1 for
 * each device to measure first; or an error (nothing matches). */
ffnrt_status ffnrt_choose_device(const ffnrt_device_request *req, const ffnrt_device_info *infos, size_t count,
                                 const ffnrt_calibration *figures, long *chosen, int *need, char *reason, size_t cap,
                                 ffnrt_error *err);
/* The time a device is expected to take for the reference work the
 * device choice weighs (a decode pass over 100 MB of weights, 10 GFLOP of
 * prefill and 50 dispatches), in ms. */
double ffnrt_expected_ms(const ffnrt_calibration *c);

/* -------------------------------------------------------- limits, profiles */

/* A named set of limits modelled on a real GPU: tests run ffnrt on the CPU
 * drivers as if on that GPU. 0 leaves a limit as the device has it. */
typedef struct ffnrt_profile {
    const char *name;
    const char *models;       /* the GPU it stands for */
    ffnrt_device_type type;   /* ffnrt plans as for this device type */
    uint64_t max_shared_memory;
    uint32_t max_workgroup_size;
    uint32_t max_workgroup_count;
    uint64_t max_buffer_range;
    uint64_t buffer_offset_alignment;
    uint32_t subgroup_size;
    int fp16_arithmetic;      /* 0: the profile has none */
    int storage_16bit;
    const char *source;       /* where the figures come from */
} ffnrt_profile;

const ffnrt_profile *ffnrt_profile_find(const char *name);
size_t ffnrt_profile_count(void);
const ffnrt_profile *ffnrt_profile_at(size_t i);

/* Limits a caller lowers (options or FFNRT_LIMITS); 0 keeps. */
typedef struct ffnrt_limit_request {
    uint64_t max_buffer_range, max_shared_memory, max_workgroup_count, max_workgroup_size;
    int no_fp16_arithmetic, no_16bit_storage;
    uint64_t max_memory; /* a device-memory budget over the context's tensors (tests running out) */
    int no_half_conversion; /* 16-bit values converted by storage.inc's bit arithmetic, never by hardware */
    int no_byte_dot;        /* the integer path's byte products in plain vectors, never the CPU's own instructions,
                             * nor a GPU's packed dot products (int_dot_packed) */
    int no_vector_codes;    /* block formats' code words read word by word, never as 4-word vectors (QUANT_VEC4),
                             * as on devices whose binding offsets are not 16-byte aligned */
    int no_int64_words;     /* no 64-bit words in kernels (the 8-word views), as on devices without shaderInt64 */
    uint64_t max_bindings;  /* storage buffers a kernel may bind (4 on some mobile drivers) */
} ffnrt_limit_request;

/* FFNRT_LIMITS="max_buffer_range=65536,max_shared_memory=16384,
 * max_workgroup_count=64,max_workgroup_size=32,fp16_arithmetic=0,
 * storage_16bit=0,max_memory=1048576,half_conversion=0,byte_dot=0,
 * vector_codes=0,int64_words=0,max_bindings=4": merged
 * into req. */
ffnrt_status ffnrt_limits_parse(const char *spec, ffnrt_limit_request *req, ffnrt_error *err);

/* Lowers info/limits by the caller's request (a value above the device's
 * own is an error), then by the profile (which only lowers; its device type
 * and subgroup size replace the device's). notes gets one line per change. */
ffnrt_status ffnrt_limits_apply(ffnrt_device_info *info, ffnrt_limits *lim, const ffnrt_limit_request *req,
                                const ffnrt_profile *profile, char *notes, size_t cap, ffnrt_error *err);

/* ---------------------------------------------------------- kernel shapes */

/* The kernel shapes a device starts from (dispatch/kernel_params.inc):
 * data keyed by device traits, with defaults at each level. */
typedef struct ffnrt_kernel_params {
    uint32_t matvec_tokens;                 /* tokens the matrix-vector kernel takes a dispatch */
    uint32_t tiled_bm, tiled_bn, tiled_bk, tiled_tm, tiled_tn; /* TILED's start */
    uint32_t blocked_tm_max;                /* BLOCKED: rows of x a work-item takes */
    uint32_t blocked_tn, blocked_tn_gated;  /* its columns (output features), prefill */
    uint32_t blocked_tn_decode;             /* at 4 rows or fewer */
    uint32_t blocked_wg_n, blocked_wg_m;    /* work-items a group, prefill */
    uint32_t blocked_wg_n_decode, blocked_wg_m_decode;
    uint32_t blocked_vec_acc;               /* a vector of partial sums per output (else dot()) */
    uint32_t stats_serial;                  /* statistics: one work-item reduces a group's figures */
    uint32_t stats_hist_stash;              /* statistics: histograms counted after the loop (with serial) */
    uint32_t stats_items;                   /* statistics: words a work-item of the element-wise loop */
    uint32_t blocked_wide_codes;            /* block formats: 16 weights a step in 16-wide vectors */
    uint32_t blocked_tn_wide, blocked_tn_gated_wide; /* their columns, prefill (0: blocked_tn, _gated) */
    uint32_t blocked_gated_quant_unfused;   /* gated block-format layers above 4 tokens: unfused by default */
    uint32_t half_conversion;               /* ffnrt_half_conversion the device's compiler offers */
    uint32_t blocked_int_dot_bytes;         /* the integer path: x's codes as bytes (quant.inc's XQ_BYTES) */
    uint32_t transpose_tiles;               /* the training transposes by tiles (transpose.kernel's TILES) */
    uint32_t sumsq_runs;                    /* sums of squares: a run of elements a work-item (SUMSQ_RUNS) */
    uint32_t sumsq_subgroup;                /* sums of squares: a group of one subgroup, its SIMD vector */
    uint32_t blocked_outer;                 /* the backward's products on K-major operands (gemm_outer.inc) */
    uint32_t masked_branches;               /* the driver runs both sides of a uniform branch: element-wise
                                             * launches of whole groups take a variant without bounds tests
                                             * (EW_WHOLE_ONLY), products their epilogue's choices compiled in
                                             * (FIXED_EPILOGUE) */
    uint32_t wide_words;                    /* with it, 8 words an access through 64-bit views (WIDE_WORDS) */
    uint32_t row_reduce_wg;                 /* RMSNorm's and cross-entropy's group (one a row) */
    uint32_t blocked_tn_decode_streamed;    /* block-format weights at 1-2 rows: columns (0: tn_decode) */
    uint32_t blocked_tn_decode4;            /* at 3-4 rows (the 4-row kernel): columns (0: tn_decode) */
} ffnrt_kernel_params;

/* The params for a device; why (may be NULL) names the most specific row. */
void ffnrt_kernel_params_for(const ffnrt_device_info *info, ffnrt_kernel_params *out, char *why, size_t cap);
/* Whether kernels take their 4-word views as two 64-bit words (VIEWS_64,
 * the GLSL prelude): kernel_params.c says where and why. */
int ffnrt_views64(const ffnrt_context *ctx);

/* How the device's kernels convert fp16 values (bit arithmetic where
 * turned_off, FFNRT_LIMITS half_conversion=0), and why. */
void ffnrt_half_conversion_for(const ffnrt_device_info *info, int turned_off, ffnrt_half_conversion_choice *out);
/* Its name for a plan, and the kernel define that selects it (NULL: none). */
const char *ffnrt_half_conversion_name(ffnrt_half_conversion kind);
const char *ffnrt_half_conversion_define(ffnrt_half_conversion kind);

/* -------------------------------------------------------------- precision */

/* The features a quirk can veto (FFNRT_QUIRK_*) are in core/context.h,
 * beside the context's vetoes, which the core's kernel cache reads too. */

/* The quirk table's vetoes for a device, with their reasons; ignore drops
 * the table's, asked adds vetoes for the device at hand (FFNRT_QUIRKS). */
unsigned ffnrt_quirks_for(const ffnrt_device_info *info, int ignore, unsigned asked, char *why, size_t cap);

/* What a precision policy gives on a device: the storage type apps should
 * use and whether compute AUTO runs fp16 arithmetic; reason says what was
 * asked, what was taken and why. */
void ffnrt_precision_resolve(ffnrt_precision policy, const ffnrt_device_info *info, unsigned vetoes,
                             ffnrt_precision_choice *out);
ffnrt_status ffnrt_precision_parse(const char *name, ffnrt_precision *out);

/* The arithmetic an op computes in: compute as asked (AUTO: the policy's,
 * on f16 tensors where the device has fp16 arithmetic), checked against the
 * device, the quirk vetoes and the dtype. *fp16 is 1 for fp16 arithmetic;
 * why says where the choice came from. Errors name fn. */
ffnrt_status ffnrt_choose_compute(const ffnrt_context *ctx, ffnrt_compute compute, ffnrt_dtype dtype, const char *fn,
                                  int *fp16, char *why, size_t cap, ffnrt_error *err);

/* --------------------------------------------------- element-wise kernels */

/* The element-wise launcher's geometry (shaders/storage.inc's loop): its
 * default workgroup, the elements of dtype one group covers (a kernel may
 * make a division once a group instead of per element), and a "unit", the
 * run of consecutive elements work-items take together (the group's row
 * of wg words at one step where a work-item's words are strided by the
 * group, a work-item's own words where they are consecutive: the
 * backend's items_consecutive). wg 0: the default. */
uint32_t ffnrt_elementwise_workgroup(const ffnrt_context *ctx);
uint32_t ffnrt_elementwise_group_span(const ffnrt_context *ctx, ffnrt_dtype dtype, uint32_t wg);
uint32_t ffnrt_elementwise_unit(const ffnrt_context *ctx, ffnrt_dtype dtype, uint32_t wg);
#define FFNRT_EW_ITEMS 4u /* output words a work-item (ITEMS in storage.inc) */

typedef enum ffnrt_ew_family {
    FFNRT_EW_ACTIVATION, /* shaders/activation.kernel (and its word copy) */
    FFNRT_EW_GLU,        /* shaders/glu.kernel */
    FFNRT_EW_BIAS,       /* shaders/bias.kernel, the unfused layer's bias pass */
    FFNRT_EW_TRANSPOSE,  /* shaders/transpose.kernel, the training backward's operand layouts */
    FFNRT_EW_OPTIMIZER,  /* shaders/optimizer.kernel, a parameter's update */
    FFNRT_EW_MSE,        /* shaders/loss.kernel, the mean squared error's gradient */
    FFNRT_EW_FAMILY_COUNT
} ffnrt_ew_family;

/* An element-wise kernel as its op asks for it. */
typedef struct ffnrt_ew_op {
    ffnrt_ew_family family;
    ffnrt_activation act; /* its hooks (a GLU's gate); FFNRT_ACT_COUNT: none */
    int backward;
    int halves;      /* GLU: gate and value halves of one row (else two tensors) */
    int two_outputs; /* GLU backward on two tensors: dgate and dvalue */
    int copy_words;  /* the activation kernel as a copy of words */
    ffnrt_dtype dtype;
    int arithmetic;          /* the op has arithmetic to choose (not the bias pass, not the copy) */
    ffnrt_compute compute;   /* as asked */
    uint32_t slope_channels; /* PReLU: channels of its slopes (0: no slopes), */
    uint32_t slope_inner;    /* and elements a step of the channel axis */
    const char *fn;          /* the public call, for errors */
    ffnrt_optimizer_kind update; /* the optimizer family: its rule */
    int momentum;                /* SGD with momentum (a state tensor) */
    int master;                  /* a 16-bit parameter's fp32 master copy */
} ffnrt_ew_op;

/* The variant the dispatcher chooses for it (ffnrt_choose_ew_variant,
 * dispatch/ew_variant.c): the arithmetic, PReLU's slope lookup and the
 * workgroup it takes. launch/elementwise.c adds the statistics' shape
 * (items, norms2, stash: it depends on the run's statistics), turns the
 * variant into defines in one function, and the plan prints it. */
typedef struct ffnrt_ew_variant {
    ffnrt_ew_op op;
    int fp16;                  /* fp16 arithmetic */
    const char *slope_lookup;  /* PReLU: the lookup's define (NULL: none) */
    uint32_t workgroup;        /* work-items a group */
    uint32_t row_multiple;     /* every dispatch starts at a multiple of this many elements (0: any) */
    uint32_t items;            /* words a work-item */
    int views64;               /* the 4-word views as two 64-bit words (VIEWS_64: ffnrt_views64) */
    int whole_only;            /* every group whole: no bounds tests compiled (EW_WHOLE_ONLY) */
    int stats, stats_norms2;   /* the statistics variant, and its token norms in registers (1, 2) */
    uint32_t stats_stash;      /* elements a group stashes bins for (0: counted in the loop) */
} ffnrt_ew_variant;

const char *ffnrt_ew_family_file(ffnrt_ew_family f);
/* Chooses the arithmetic (ffnrt_choose_compute; the plan's "compute"
 * line), PReLU's slope lookup (the plan's "prelu.slopes") and the
 * workgroup. Errors name op->fn. */
ffnrt_status ffnrt_choose_ew_variant(ffnrt_context *ctx, const ffnrt_ew_op *op, ffnrt_ew_variant *out);
/* The whole variant in words, for the plan. */
void ffnrt_ew_variant_text(const ffnrt_ew_variant *v, char *buf, size_t cap);

/* ------------------------------------------------------------- statistics */

/* Whether an op's kernels run their statistics variant, with which
 * options, and whether its result is checked for non-finite outputs
 * (dispatch/stats_choice.c). */
typedef struct ffnrt_stats_choice {
    int on;                      /* the statistics variant runs */
    int check_finite;            /* finite inputs giving a non-finite output fail the call */
    ffnrt_stats_options options; /* checked */
    int serial;                  /* one work-item reduces a group's figures (kernel_params.inc) */
    int hist_stash;              /* histograms counted after the loop (with serial) */
    uint32_t items;              /* words a work-item of the element-wise loop */
} ffnrt_stats_choice;

/* Checks statistics options; an error names the field (fn: the caller). */
ffnrt_status ffnrt_stats_options_check(const ffnrt_stats_options *o, const char *fn, ffnrt_error *err);
/* The choice for an op: layer (a layer's own options, may be NULL) over
 * the context's (ffnrt_context_set_stats); the finite check by the one
 * precedence: the options' check_finite > ffnrt_context_force
 * ("check.finite") > FFNRT_CHECK_FINITE > off. Plan items "stats" and
 * "check.finite" say why. */
void ffnrt_choose_stats(const ffnrt_context *ctx, const ffnrt_stats_options *layer, ffnrt_stats_choice *c,
                        ffnrt_plan *plan);

/* ------------------------------------------------------------------- plan */

/* The context's items: device (and the ranking), limits, precision, quirks, settings. */
void ffnrt_plan_add_context(ffnrt_plan *plan, ffnrt_context *ctx); /* reads the disk cache (first-call costs) */

/* ----------------------------------------------------------------- tuning */

/* Tuning results by shape-class key; get returns 1 when one is kept. */
int ffnrt_tuning_get(const ffnrt_context *ctx, const char *key, int *value, double ms[2]);
void ffnrt_tuning_put(ffnrt_context *ctx, const char *key, int value, const double ms[2]);
void ffnrt_tuning_remember(ffnrt_context *ctx, const char *key, int value, const double ms[2]); /* memory only */
/* The context's results to and from the disk cache (per device and driver). */
void ffnrt_tuning_save(ffnrt_context *ctx);
void ffnrt_tuning_load(ffnrt_context *ctx);

#endif
