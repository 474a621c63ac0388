/* The conformance matrix (conformance.h): the axes as tables, one loop over
 * their product, one runner per path kind (element-wise op, FFN layer), the
 * statistics check shared. A new op is a row of include/ffnrt_op_table.h
 * (and its math and reference); a new weight format is a value of
 * ffnrt_weight_format with its block size; both appear here without an
 * edit. */
#include "conformance.h"
#include "ffnrt.h"
#include "ffnrt_op_table.h"
#include "contract.h"
#include "reference16.h"
#include "reference_ffn.h"
#include "reference_grad.h"
#include "reference_quant.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ axes */

typedef struct conf_op {
    const char *name;
    int glu; /* 0: an activation, 1: a GLU kind */
    int id;  /* ffnrt_activation or ffnrt_glu */
} conf_op;

#define CONF_ACT_ROW_(E, n, p, f, g, h) {#n, 0, FFNRT_ACT_##E},
#define CONF_GLU_ROW_(E, n, G) {#n, 1, FFNRT_##E},
static const conf_op ops[] = {FFNRT_ACTIVATIONS(CONF_ACT_ROW_) FFNRT_GLU_KINDS(CONF_GLU_ROW_)};
#undef CONF_ACT_ROW_
#undef CONF_GLU_ROW_
#define N_OPS (sizeof ops / sizeof ops[0])

static const struct {
    const char *name;
    ffnrt_dtype dtype;
} dtypes[] = {{"f32", FFNRT_DTYPE_F32}, {"f16", FFNRT_DTYPE_F16}, {"bf16", FFNRT_DTYPE_BF16}};
#define N_DTYPES (sizeof dtypes / sizeof dtypes[0])

enum { PATH_OP, PATH_FUSED, PATH_UNFUSED };
static const struct {
    const char *name;
    ffnrt_ffn_path path;
} paths[] = {{"op", FFNRT_FFN_PATH_AUTO}, {"fused", FFNRT_FFN_PATH_FUSED}, {"unfused", FFNRT_FFN_PATH_UNFUSED}};
#define N_PATHS (sizeof paths / sizeof paths[0])

static const struct {
    const char *name;
    ffnrt_matmul_kernel kernel;
} kernels[] = {{"matvec", FFNRT_MATMUL_MATVEC}, {"tiled", FFNRT_MATMUL_TILED}};
#define N_KERNELS (sizeof kernels / sizeof kernels[0])

static const char *const stats_names[] = {"off", "on"};

/* Weight formats: "dense" (the dtype's own, FFNRT_WEIGHT_F32 in a desc)
 * and every block format of the library's enum. */
#define MAX_FORMATS 16
static int weight_formats(ffnrt_weight_format *out, const char **names)
{
    int n = 0;
    out[n] = FFNRT_WEIGHT_F32;
    names[n++] = "dense";
    for (int f = 0; f < FFNRT_WEIGHT_FORMAT_COUNT && n < MAX_FORMATS; f++) {
        uint32_t elements = 0;
        if (ffnrt_weight_format_block((ffnrt_weight_format)f, &elements, NULL) == FFNRT_OK && elements > 1) {
            out[n] = (ffnrt_weight_format)f;
            names[n++] = ffnrt_weight_format_name((ffnrt_weight_format)f);
        }
    }
    return n;
}

#define MAX_PROFILES 32
static int profile_names(const char **names)
{
    int n = 0;
    names[n++] = "none";
    const char *name, *text;
    for (size_t i = 0; n < MAX_PROFILES && ffnrt_profile_info(i, &name, &text) == FFNRT_OK; i++)
        names[n++] = name;
    return n;
}

/* The layers' shape: k = 256 is a whole super-block of the K formats for
 * both products; 3 tokens run in one matrix-vector chunk and in one tile. */
enum { FFN_D = 256, FFN_H = 256, FFN_TOKENS = 3 };
/* The element-wise ops' inputs: a grid over [-8, 8] and the edge values. */
enum { EW_N = 1024 };

/* ------------------------------------------------------------ selection */

/* Whether value is in the comma-separated list (NULL: dflt; "all": yes). */
static int in_list(const char *list, const char *value, int dflt)
{
    if (!list)
        return dflt;
    size_t n = strlen(value);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if ((len == 3 && strncmp(p, "all", 3) == 0) || (len == n && strncmp(p, value, n) == 0))
            return 1;
        p += len + (e != NULL);
    }
    return 0;
}

/* Every item of list is one of names[0..n) (or "all", or, with dash, "-"). */
static int check_list(const char *axis, const char *list, const char *const *names, size_t n, int dash, FILE *err)
{
    if (!list)
        return 0;
    for (const char *p = list;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int ok = len == 3 && strncmp(p, "all", 3) == 0;
        ok = ok || (dash && len == 1 && *p == '-');
        for (size_t i = 0; i < n && !ok; i++)
            ok = strlen(names[i]) == len && strncmp(p, names[i], len) == 0;
        if (!ok) {
            fprintf(err, "ffnrt check --matrix: unknown --%s value \"%.*s\"; values:", axis, (int)len, p);
            for (size_t i = 0; i < n; i++)
                fprintf(err, " %s", names[i]);
            fprintf(err, "%s all\n", dash ? " -" : "");
            return -1;
        }
        if (!e)
            return 0;
        p = e + 1;
    }
}

int conf_validate(const conf_selection *s, FILE *err)
{
    const char *names[64];
    size_t n = 0;
    for (size_t i = 0; i < N_OPS; i++)
        names[n++] = ops[i].name;
    if (check_list("op", s->op, names, n, 0, err))
        return -1;
    for (n = 0; n < N_DTYPES; n++)
        names[n] = dtypes[n].name;
    if (check_list("dtype", s->dtype, names, n, 0, err))
        return -1;
    for (n = 0; n < N_PATHS; n++)
        names[n] = paths[n].name;
    if (check_list("path", s->path, names, n, 0, err))
        return -1;
    ffnrt_weight_format formats[MAX_FORMATS];
    n = (size_t)weight_formats(formats, names);
    if (check_list("weights", s->weights, names, n, 1, err))
        return -1;
    for (n = 0; n < N_KERNELS; n++)
        names[n] = kernels[n].name;
    if (check_list("kernel", s->kernel, names, n, 1, err))
        return -1;
    if (check_list("stats", s->stats, stats_names, 2, 0, err))
        return -1;
    n = (size_t)profile_names(names);
    if (check_list("profile", s->profile, names, n, 0, err))
        return -1;
    if (!(s->bound_scale >= 0)) {
        fprintf(err, "ffnrt check --matrix: --bound-scale must be a number >= 0\n");
        return -1;
    }
    return 0;
}

/* ----------------------------------------------------------- host values */

static uint32_t rng;
static float uniform(float lo, float hi)
{
    rng = rng * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(rng >> 8) / 16777216.0f;
}

/* v rounded to t, its bits stored at buf[i]; returns the stored value. */
static float store(ffnrt_dtype t, void *buf, size_t i, float v)
{
    if (t == FFNRT_DTYPE_F32) {
        ((float *)buf)[i] = v;
        return v;
    }
    uint16_t b = t == FFNRT_DTYPE_F16 ? ffnrt_f32_to_f16(v) : ffnrt_f32_to_bf16(v);
    ((uint16_t *)buf)[i] = b;
    return t == FFNRT_DTYPE_F16 ? ffnrt_f16_to_f32(b) : ffnrt_bf16_to_f32(b);
}

static float load(ffnrt_dtype t, const void *buf, size_t i)
{
    if (t == FFNRT_DTYPE_F32)
        return ((const float *)buf)[i];
    uint16_t b = ((const uint16_t *)buf)[i];
    return t == FFNRT_DTYPE_F16 ? ffnrt_f16_to_f32(b) : ffnrt_bf16_to_f32(b);
}

static double min_normal(ffnrt_dtype t) { return ldexp(1.0, t == FFNRT_DTYPE_F16 ? -14 : -126); }

/* ------------------------------------------------------------- one case */

typedef struct conf_case {
    const conf_op *op;
    ffnrt_dtype dtype;
    int path; /* PATH_* */
    ffnrt_weight_format format;
    int kernel;
    int stats;
} conf_case;

typedef struct conf_result {
    int skipped; /* not run: note says why */
    double error, bound;
    const char *unit;
    char note[200];
} conf_result;

static ffnrt_tensor *tensor(ffnrt_context *ctx, ffnrt_dtype t, int64_t n, const void *data)
{
    ffnrt_tensor *x = NULL;
    if (ffnrt_tensor_create(ctx, t, 1, &n, &x) != FFNRT_OK)
        return NULL;
    if (data && ffnrt_tensor_write(x, data, ffnrt_tensor_bytes(x)) != FFNRT_OK) {
        ffnrt_tensor_destroy(x);
        return NULL;
    }
    return x;
}

/* An unsupported combination is a skip, anything else a failure. */
static void failed(conf_result *r, ffnrt_status st, const char *what)
{
    r->skipped = st == FFNRT_ERROR_UNSUPPORTED;
    r->error = INFINITY;
    snprintf(r->note, sizeof r->note, "%s: %s", what, ffnrt_last_error_message());
}

/* The statistics of a stats-on run: present, and counting what the inputs
 * and outputs hold. want_* are the expected counts. */
static void check_stats(conf_result *r, const ffnrt_stats *st, uint64_t outputs, uint64_t in_nan, uint64_t in_inf,
                        uint64_t out_nan, uint64_t out_inf, int layer)
{
    const char *bad = !st->valid                          ? "no statistics"
                      : st->outputs != outputs            ? "stats outputs count"
                      : st->input_nan != in_nan           ? "stats input NaN count"
                      : st->input_inf != in_inf           ? "stats input Inf count"
                      : st->output_nan != out_nan         ? "stats output NaN count"
                      : st->output_inf != out_inf         ? "stats output Inf count"
                      : layer && st->hidden_nonfinite != 0 ? "stats non-finite hidden values from finite inputs"
                                                          : NULL;
    if (bad) {
        r->error = INFINITY;
        snprintf(r->note, sizeof r->note, "%s wrong (outputs %llu, in NaN/Inf %llu/%llu, out NaN/Inf %llu/%llu)",
                 bad, (unsigned long long)st->outputs, (unsigned long long)st->input_nan,
                 (unsigned long long)st->input_inf, (unsigned long long)st->output_nan,
                 (unsigned long long)st->output_inf);
    }
}

/* An activation or GLU kind on EW_N inputs, against the reference in ULP of
 * the storage type. */
static void run_elementwise(ffnrt_context *ctx, int keeps_subnormals, const conf_case *c, double scale,
                            conf_result *r)
{
    static const float edges[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, NAN, INFINITY, -INFINITY};
    const size_t n = EW_N, nedges = sizeof edges / sizeof edges[0];
    size_t es = ffnrt_dtype_size(c->dtype);
    unsigned char *x = malloc(n * es), *v = malloc(n * es), *y = malloc(n * es), *y0 = malloc(n * es);
    float *xs = malloc(n * sizeof *xs), *vs = malloc(n * sizeof *vs);
    ffnrt_tensor *tx = NULL, *tv = NULL, *ty = NULL, *tslope = NULL;
    r->unit = "ULP";
    r->bound = scale * (c->op->glu ? contract_glu_ulp_bound(c->dtype)
                                    : contract_ulp_bound((ffnrt_activation)c->op->id, c->dtype));
    uint64_t in_nan = 0, in_inf = 0;
    for (size_t i = 0; x && v && xs && vs && i < n; i++) {
        /* GLU gates skip the infinities: value * phi(+-inf) is an
         * inf * 0 for some kinds, outside the contract's finite claims */
        size_t ne = c->op->glu ? nedges - 2 : nedges;
        float xi = i < ne ? edges[i] : -8.0f + 16.0f * (float)(i - ne) / (float)(n - ne - 1);
        xs[i] = store(c->dtype, x, i, xi);
        vs[i] = store(c->dtype, v, i, -3.0f + 6.0f * (float)((i * 37) % n) / (float)n);
        in_nan += isnan(xs[i]) != 0;
        in_inf += isinf(xs[i]) != 0;
    }
    ffnrt_activation act = c->op->glu ? ffnrt_glu_gate_activation((ffnrt_glu)c->op->id) : (ffnrt_activation)c->op->id;
    unsigned char slope[4];
    double alpha = act == FFNRT_ACT_PRELU ? store(c->dtype, slope, 0, LEAKY_SLOPE) : contract_alpha(act);
    ffnrt_status st = FFNRT_ERROR_OUT_OF_HOST_MEMORY;
    if (x && v && y && y0 && xs && vs && (tx = tensor(ctx, c->dtype, (int64_t)n, x)) &&
        (tv = tensor(ctx, c->dtype, (int64_t)n, v)) && (ty = tensor(ctx, c->dtype, (int64_t)n, NULL)) &&
        (tslope = tensor(ctx, c->dtype, 1, slope)))
        st = FFNRT_OK;
    ffnrt_activation_desc ad = FFNRT_ACTIVATION_DESC_INIT(act);
    ad.alpha = (float)contract_alpha(act);
    ad.beta = SWISH_BETA;
    ad.slopes = act == FFNRT_ACT_PRELU ? tslope : NULL;
    ad.compute = FFNRT_COMPUTE_F32;
    ffnrt_glu_desc gd = FFNRT_GLU_DESC_INIT((ffnrt_glu)c->op->id);
    gd.beta = SWISH_BETA;
    gd.compute = FFNRT_COMPUTE_F32;
    ffnrt_stats_options so = FFNRT_STATS_OPTIONS_INIT;
    /* stats on: a plain run first, whose output the statistics run must repeat bit for bit */
    for (int pass = c->stats ? 0 : 1; pass < 2 && st == FFNRT_OK; pass++) {
        st = ffnrt_context_set_stats(ctx, pass == 1 && c->stats ? &so : NULL);
        if (st == FFNRT_OK)
            st = c->op->glu ? ffnrt_glu_forward_split(ctx, &gd, tx, tv, ty) : ffnrt_activation_forward(ctx, &ad, tx, ty);
        if (st == FFNRT_OK)
            st = ffnrt_tensor_read(ty, pass == 0 ? y0 : y, n * es);
    }
    if (st != FFNRT_OK) {
        failed(r, st, c->op->glu ? "ffnrt_glu_forward_split" : "ffnrt_activation_forward");
    } else {
        r->error = 0.0;
        uint64_t out_nan = 0, out_inf = 0;
        for (size_t i = 0; i < n; i++) {
            double g = xs[i], ref = ref_forward(act, g, alpha, SWISH_BETA);
            if (c->op->glu)
                ref *= vs[i];
            float got = load(c->dtype, y, i);
            out_nan += isnan(got) != 0;
            out_inf += isinf(got) != 0;
            double e = ulp_error_of_type(c->dtype, got, ref, fabs(ref));
            if (!keeps_subnormals && got == 0 && fabs(ref) < min_normal(c->dtype))
                e = 0.0; /* a flushed subnormal result: counted apart, as the contract says */
            if (!(e <= r->error)) {
                r->error = e;
                snprintf(r->note, sizeof r->note, "worst at x = %a%s (got %a, reference %a)", (double)xs[i],
                         c->op->glu ? " (gate)" : "", (double)got, ref);
            }
        }
        if (c->stats) {
            if (memcmp(y, y0, n * es) != 0) {
                r->error = INFINITY;
                snprintf(r->note, sizeof r->note, "statistics changed the output");
            } else {
                ffnrt_stats s;
                if (ffnrt_context_last_stats(ctx, &s) != FFNRT_OK)
                    s.valid = 0;
                check_stats(r, &s, n, in_nan, in_inf, out_nan, out_inf, 0);
            }
        }
    }
    ffnrt_context_set_stats(ctx, NULL);
    ffnrt_tensor_destroy(tx);
    ffnrt_tensor_destroy(tv);
    ffnrt_tensor_destroy(ty);
    ffnrt_tensor_destroy(tslope);
    free(x);
    free(v);
    free(y);
    free(y0);
    free(xs);
    free(vs);
}

/* One [rows, k] weight matrix of uniform(-a, a): its bytes in the format
 * (dense: the dtype's) and the values the device holds, in double. */
static int make_matrix(ffnrt_dtype t, ffnrt_weight_format f, int64_t rows, int64_t k, float a, void **bytes,
                       double *values)
{
    size_t n = (size_t)(rows * k), size = n * ffnrt_dtype_size(t);
    float *w = malloc(n * sizeof *w);
    if (!w)
        return -1;
    for (size_t i = 0; i < n; i++)
        w[i] = uniform(-a, a);
    if (f != FFNRT_WEIGHT_F32 && ffnrt_weight_bytes(f, rows, k, &size) != FFNRT_OK)
        size = 0;
    *bytes = size ? malloc(size) : NULL;
    int rc = *bytes ? 0 : -1;
    if (rc == 0 && f == FFNRT_WEIGHT_F32) {
        for (size_t i = 0; i < n; i++)
            values[i] = store(t, *bytes, i, w[i]);
    } else if (rc == 0) {
        size_t row_bytes = size / (size_t)rows;
        rc = ffnrt_quantize(f, w, rows, k, *bytes, size) == FFNRT_OK ? 0 : -1;
        for (int64_t r = 0; rc == 0 && r < rows; r++) /* the reference decodes GGUF's bytes itself */
            rc = ref_dequantize_row(f, (const unsigned char *)*bytes + (size_t)r * row_bytes, k, values + r * k);
    }
    free(w);
    return rc;
}

/* A layer (dense with the activation, gated with the GLU kind) of FFN_D x
 * FFN_H with biases on FFN_TOKENS tokens, against ref_ffn in normwise
 * relative error. */
static void run_layer(ffnrt_context *ctx, const conf_case *c, double scale, conf_result *r)
{
    const int64_t d = FFN_D, h = FFN_H, t = FFN_TOKENS;
    int gated = c->op->glu;
    r->unit = "rel";
    r->bound = scale * contract_ffn_bound(c->dtype, d, h);
    if (!gated && c->op->id == FFNRT_ACT_PRELU) {
        r->skipped = 1;
        snprintf(r->note, sizeof r->note, "prelu has no layer form (per-channel slopes)");
        return;
    }
    ffnrt_activation act = gated ? ffnrt_glu_gate_activation((ffnrt_glu)c->op->id) : (ffnrt_activation)c->op->id;
    rng = 0x9e3779b9u ^ (uint32_t)(c->op - ops) * 977u ^ (uint32_t)c->format * 131u ^ (uint32_t)c->dtype;
    size_t es = ffnrt_dtype_size(c->dtype);
    double *dx = malloc((size_t)(t * d) * sizeof(double)), *dw[3], *db[3], *yref = malloc((size_t)(t * d) * sizeof(double));
    void *wb[3] = {NULL, NULL, NULL}, *bb[3] = {NULL, NULL, NULL};
    unsigned char *x = malloc((size_t)(t * d) * es), *y = malloc((size_t)(t * d) * es), *y0 = malloc((size_t)(t * d) * es);
    float *yf = malloc((size_t)(t * d) * sizeof *yf);
    const int64_t rows[3] = {h, h, d}, ks[3] = {d, d, h};
    int ok = dx && yref && x && y && y0 && yf;
    for (int m = 0; m < 3; m++) {
        dw[m] = malloc((size_t)(rows[m] * ks[m]) * sizeof(double));
        db[m] = malloc((size_t)rows[m] * sizeof(double));
        bb[m] = malloc((size_t)rows[m] * es);
        ok = ok && dw[m] && db[m] && bb[m];
    }
    for (int64_t i = 0; ok && i < t * d; i++)
        dx[i] = store(c->dtype, x, (size_t)i, uniform(-1.0f, 1.0f));
    for (int m = 0; ok && m < 3; m++) {
        if (m == 1 && !gated)
            continue;
        /* scaled so that pre-activations are O(1) whatever the widths */
        ok = make_matrix(c->dtype, c->format, rows[m], ks[m], 2.0f / sqrtf((float)ks[m]), &wb[m], dw[m]) == 0;
        for (int64_t i = 0; ok && i < rows[m]; i++)
            db[m][i] = store(c->dtype, bb[m], (size_t)i, uniform(-0.5f, 0.5f));
    }
    if (!ok) {
        r->error = INFINITY;
        snprintf(r->note, sizeof r->note, "out of host memory, or the weights did not quantize");
    } else {
        ref_ffn(gated, act, contract_alpha(act), SWISH_BETA, d, h, t, dx, dw[0], db[0], dw[1], db[1], dw[2], db[2],
                yref);
        ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(gated ? FFNRT_FFN_GATED : FFNRT_FFN_DENSE, d, h);
        desc.dtype = c->dtype;
        desc.bias = 1;
        desc.path = paths[c->path].path;
        desc.matmul = kernels[c->kernel].kernel;
        desc.format_in = desc.format_out = c->format;
        desc.format_value = gated ? c->format : FFNRT_WEIGHT_F32;
        if (gated) {
            desc.glu.kind = (ffnrt_glu)c->op->id;
            desc.glu.beta = SWISH_BETA;
        } else {
            ffnrt_activation_desc ad = FFNRT_ACTIVATION_DESC_INIT(act);
            ad.alpha = (float)contract_alpha(act);
            ad.beta = SWISH_BETA;
            desc.activation = ad;
        }
        ffnrt_ffn_weights w = {0};
        if (gated) {
            w.w_gate = wb[0], w.b_gate = bb[0], w.w_value = wb[1], w.b_value = bb[1];
        } else {
            w.w_in = wb[0], w.b_in = bb[0];
        }
        w.w_out = wb[2], w.b_out = bb[2];
        ffnrt_ffn *layer = NULL;
        ffnrt_tensor *tx = NULL, *ty = NULL;
        int64_t shape[2] = {t, d};
        ffnrt_status st = ffnrt_ffn_create(ctx, &desc, &w, &layer);
        const char *what = "ffnrt_ffn_create";
        if (st == FFNRT_OK && (st = ffnrt_tensor_create(ctx, c->dtype, 2, shape, &tx)) == FFNRT_OK &&
            (st = ffnrt_tensor_create(ctx, c->dtype, 2, shape, &ty)) == FFNRT_OK)
            st = ffnrt_tensor_write(tx, x, (size_t)(t * d) * es);
        ffnrt_stats_options so = FFNRT_STATS_OPTIONS_INIT;
        ffnrt_stats_options off = FFNRT_STATS_OPTIONS_INIT;
        off.enabled = 0;
        for (int pass = c->stats ? 0 : 1; pass < 2 && st == FFNRT_OK; pass++) {
            what = "ffnrt_ffn_forward";
            st = ffnrt_ffn_set_stats(layer, pass == 1 && c->stats ? &so : &off);
            if (st == FFNRT_OK)
                st = ffnrt_ffn_forward(layer, tx, ty);
            if (st == FFNRT_OK)
                st = ffnrt_tensor_read(ty, pass == 0 ? y0 : y, (size_t)(t * d) * es);
        }
        if (st != FFNRT_OK) {
            failed(r, st, what);
        } else {
            for (int64_t i = 0; i < t * d; i++)
                yf[i] = load(c->dtype, y, (size_t)i);
            r->error = ref_normwise_error(yf, yref, t * d);
            if (c->stats && memcmp(y, y0, (size_t)(t * d) * es) != 0) {
                r->error = INFINITY;
                snprintf(r->note, sizeof r->note, "statistics changed the output");
            } else if (c->stats) {
                ffnrt_stats s;
                if (ffnrt_ffn_last_stats(layer, &s) != FFNRT_OK)
                    s.valid = 0;
                check_stats(r, &s, (uint64_t)(t * d), 0, 0, 0, 0, 1);
            }
        }
        ffnrt_tensor_destroy(tx);
        ffnrt_tensor_destroy(ty);
        ffnrt_ffn_destroy(layer);
    }
    for (int m = 0; m < 3; m++) {
        free(dw[m]);
        free(db[m]);
        free(wb[m]);
        free(bb[m]);
    }
    free(dx);
    free(yref);
    free(x);
    free(y);
    free(y0);
    free(yf);
}

/* ------------------------------------------------------------- the loop */

typedef struct conf_counts {
    unsigned run, passed, failed, skipped;
} conf_counts;

static void run_device(ffnrt_context *ctx, const char *device, const char *profile, const conf_selection *s,
                       FILE *out, conf_counts *k)
{
    ffnrt_device_info info;
    ffnrt_context_get_device_info(ctx, &info);
    int keeps = info.denormals_preserved == 1;
    ffnrt_weight_format formats[MAX_FORMATS];
    const char *format_names[MAX_FORMATS];
    int nf = weight_formats(formats, format_names);
    for (size_t o = 0; o < N_OPS; o++) {
        if (!in_list(s->op, ops[o].name, 1))
            continue;
        for (size_t t = 0; t < N_DTYPES; t++) {
            if (!in_list(s->dtype, dtypes[t].name, 1))
                continue;
            for (int p = 0; p < (int)N_PATHS; p++) {
                if (!in_list(s->path, paths[p].name, 1))
                    continue;
                int layer = p != PATH_OP;
                for (int f = 0; f < (layer ? nf : 1); f++) {
                    if (!in_list(s->weights, layer ? format_names[f] : "-", 1))
                        continue;
                    for (int kn = 0; kn < (layer ? (int)N_KERNELS : 1); kn++) {
                        if (!in_list(s->kernel, layer ? kernels[kn].name : "-", 1))
                            continue;
                        for (int st = 0; st < 2; st++) {
                            if (!in_list(s->stats, stats_names[st], 1))
                                continue;
                            conf_case c = {&ops[o], dtypes[t].dtype, p, layer ? formats[f] : FFNRT_WEIGHT_F32, kn, st};
                            conf_result r;
                            memset(&r, 0, sizeof r);
                            if (layer)
                                run_layer(ctx, &c, s->bound_scale, &r);
                            else
                                run_elementwise(ctx, keeps, &c, s->bound_scale, &r);
                            int pass = !r.skipped && r.error <= r.bound;
                            k->run += !r.skipped;
                            k->passed += pass;
                            k->failed += !r.skipped && !pass;
                            k->skipped += r.skipped;
                            fprintf(out, "%-4s %-10s %-4s %-7s %-6s %-6s stats=%-3s %-9s %-17s error %-9.3g bound %-9.3g %s%s%s\n",
                                    r.skipped ? "skip" : pass ? "PASS" : "FAIL", ops[o].name, dtypes[t].name,
                                    paths[p].name, layer ? format_names[f] : "-", layer ? kernels[kn].name : "-",
                                    stats_names[st], device, profile, r.error, r.bound, r.unit ? r.unit : "",
                                    r.note[0] && (r.skipped || !pass) ? "  " : "",
                                    r.note[0] && (r.skipped || !pass) ? r.note : "");
                            fflush(out);
                        }
                    }
                }
            }
        }
    }
}

int conf_run(const conf_selection *s, FILE *out, FILE *err)
{
    if (conf_validate(s, err) != 0)
        return 2;
    /* The devices: every one found, or those the specs name (each once). */
    size_t count = 0;
    ffnrt_device_count(&count);
    const char *profiles[MAX_PROFILES];
    int np = profile_names(profiles);
    conf_counts k = {0, 0, 0, 0};
    int opened = 0, rc = 0;
    for (size_t i = 0; i < count; i++) {
        ffnrt_device_info info;
        if (ffnrt_device_get_info(i, &info) != FFNRT_OK)
            continue;
        char spec[64];
        snprintf(spec, sizeof spec, "%s:%u", ffnrt_backend_name(info.backend), info.index);
        int wanted = !s->device || in_list(s->device, "all", 0);
        for (const char *p = s->device; p && *p && !wanted;) { /* a spec selects the devices it would open */
            const char *e = strchr(p, ',');
            char one[64];
            snprintf(one, sizeof one, "%.*s", (int)(e ? (size_t)(e - p) : strlen(p)), p);
            ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
            o.device = one;
            ffnrt_context *probe = NULL;
            if (ffnrt_context_create(&o, &probe) == FFNRT_OK) {
                ffnrt_device_info pi;
                ffnrt_context_get_device_info(probe, &pi);
                wanted = pi.backend == info.backend && pi.index == info.index;
                ffnrt_context_destroy(probe);
            } else {
                fprintf(err, "ffnrt check --matrix: --device %s: %s\n", one, ffnrt_last_error_message());
                rc = 1;
            }
            p += strlen(one) + (e != NULL);
        }
        for (int pr = 0; wanted && pr < np; pr++) {
            if (!in_list(s->profile, profiles[pr], pr == 0))
                continue;
            ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
            o.device = spec;
            o.profile = pr == 0 ? NULL : profiles[pr];
            ffnrt_context *ctx = NULL;
            if (ffnrt_context_create(&o, &ctx) != FFNRT_OK) {
                fprintf(err, "ffnrt check --matrix: %s profile %s: %s\n", spec, profiles[pr], ffnrt_last_error_message());
                rc = 1;
                continue;
            }
            opened++;
            run_device(ctx, spec, profiles[pr], s, out, &k);
            ffnrt_context_destroy(ctx);
        }
    }
    fprintf(out, "matrix: %u cases run, %u passed, %u FAILED, %u skipped, on %d device/profile pairs\n", k.run,
            k.passed, k.failed, k.skipped, opened);
    if (k.run == 0)
        fprintf(err, "ffnrt check --matrix: no case ran\n");
    return rc || k.failed || k.run == 0 ? 1 : 0;
}
