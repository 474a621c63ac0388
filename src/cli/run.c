/* ffnrt run: an activation or a GLU kind applied to numbers given on the
 * command line, on the device --device or FFNRT_DEVICE names (or the best
 * one), with the call's statistics (--stats) and the fp32 control
 * (--fp32-control: the same call in the given precision and again in fp32,
 * with the finite check on, to tell a precision problem from a data or
 * kernel one). */
#include "run.h"
#include "args.h"
#include "numbers.h"
#include "ffnrt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct run_args {
    const char *op;
    const char *device;    /* --device SPEC; NULL: FFNRT_DEVICE, else ffnrt's choice */
    int glu;               /* a GLU kind: the numbers are GATE:VALUE pairs */
    ffnrt_activation act;
    ffnrt_glu glu_kind;
    ffnrt_dtype dtype;
    ffnrt_compute compute;
    int stats, check_finite, fp32_control;
    uint32_t bins;
    float lo, hi;
    int64_t n;
    float *x, *value;      /* n each (value: GLU only) */
    const char **text;     /* the numbers as given, for the output */
} run_args;

static void usage(FILE *f)
{
    fprintf(f, "usage: ffnrt run [options] [--] OP X [X...]\n"
               "  OP: an activation (relu, gelu, gelu_tanh, silu, ...; X a number) or a GLU kind\n"
               "      (glu, reglu, geglu, swiglu; X a GATE:VALUE pair)\n"
               "  --device SPEC          the device, as FFNRT_DEVICE takes it (\"opencl\", \"vulkan:0\", \"pocl\")\n"
               "  --dtype f32|f16|bf16   storage type (default f32)\n"
               "  --f16-arithmetic       fp16 arithmetic (f16 storage, where the device has it)\n"
               "  --stats                print the call's statistics (ffnrt_stats)\n"
               "  --bins N --range LO,HI their pre-activation histogram (N bins, 0: none)\n"
               "  --check-finite         fail when finite inputs give a non-finite output\n"
               "  --fp32-control         the call as asked with the finite check, then again in fp32:\n"
               "                         non-finite only in the narrow precision means it overflowed\n"
               "                         (a precision problem); in fp32 too, the data or the op's math\n");
}

static int parse_dtype(const char *s, ffnrt_dtype *t)
{
    static const struct {
        const char *name;
        ffnrt_dtype dtype;
    } names[] = {{"f32", FFNRT_DTYPE_F32}, {"f16", FFNRT_DTYPE_F16}, {"bf16", FFNRT_DTYPE_BF16}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i].name) == 0) {
            *t = names[i].dtype;
            return 0;
        }
    return -1;
}

static int parse_range(const char *s, float *lo, float *hi)
{
    char buf[64];
    const char *comma = strchr(s, ',');
    if (!comma || (size_t)(comma - s) >= sizeof buf)
        return -1;
    memcpy(buf, s, (size_t)(comma - s));
    buf[comma - s] = 0;
    return cli_parse_float(buf, lo) != 0 || cli_parse_float(comma + 1, hi) != 0 ? -1 : 0;
}

/* Options, then OP and its numbers (the first operand ends the options,
 * so "-2" after OP is a number; "--" may stand anywhere: args.h). 0, 1
 * for help (printed), or 2 for a usage error (said). */
static int parse(int argc, char **argv, run_args *a)
{
    memset(a, 0, sizeof *a);
    a->dtype = FFNRT_DTYPE_F32;
    a->compute = FFNRT_COMPUTE_AUTO;
    a->lo = -8, a->hi = 8;
    a->text = malloc((size_t)(argc > 0 ? argc : 1) * sizeof *a->text);
    if (!a->text) {
        fprintf(stderr, "ffnrt run: out of memory\n");
        return 2;
    }
    cli_args args;
    cli_args_init(&args, argc, argv);
    const char *o;
    cli_arg_kind kind;
    while ((kind = cli_args_next(&args, &o)) != CLI_END) {
        if (kind == CLI_OPERAND) {
            if (!a->op) {
                a->op = o;
                cli_args_end_options(&args);
            } else {
                a->text[a->n++] = o;
            }
            continue;
        }
        int takes = strcmp(o, "--dtype") == 0 || strcmp(o, "--bins") == 0 || strcmp(o, "--range") == 0 ||
                    strcmp(o, "--device") == 0;
        const char *v = takes ? cli_args_value(&args) : NULL;
        int64_t bins;
        if (strcmp(o, "--stats") == 0)
            a->stats = 1;
        else if (strcmp(o, "--check-finite") == 0)
            a->check_finite = 1;
        else if (strcmp(o, "--fp32-control") == 0)
            a->fp32_control = 1;
        else if (strcmp(o, "--f16-arithmetic") == 0)
            a->compute = FFNRT_COMPUTE_F16, a->dtype = FFNRT_DTYPE_F16;
        else if (strcmp(o, "--dtype") == 0 && v && parse_dtype(v, &a->dtype) == 0)
            ;
        else if (strcmp(o, "--device") == 0 && v && *v)
            a->device = v;
        else if (strcmp(o, "--bins") == 0 && v && cli_parse_int(v, 0, FFNRT_STATS_MAX_BINS, &bins) == 0)
            a->bins = (uint32_t)bins, a->stats = 1;
        else if (strcmp(o, "--range") == 0 && v && parse_range(v, &a->lo, &a->hi) == 0)
            ;
        else if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            usage(stdout);
            return 1;
        } else {
            fprintf(stderr, "ffnrt run: bad option %s%s%s\n", o, takes ? " " : "",
                    takes ? (v ? v : "(its value is missing)") : "");
            usage(stderr);
            return 2;
        }
    }
    if (!a->op || a->n == 0) {
        usage(stderr);
        return 2;
    }
    if (ffnrt_glu_from_name(a->op, &a->glu_kind) == FFNRT_OK) {
        a->glu = 1;
    } else if (ffnrt_activation_from_name(a->op, &a->act) != FFNRT_OK) {
        fprintf(stderr, "ffnrt run: \"%s\" is not an activation or a GLU kind\n", a->op);
        return 2;
    } else if (a->act == FFNRT_ACT_PRELU) {
        fprintf(stderr, "ffnrt run: prelu needs a slope tensor; use leaky_relu\n");
        return 2;
    }
    a->x = malloc((size_t)a->n * sizeof *a->x);
    a->value = malloc((size_t)a->n * sizeof *a->value);
    if (!a->x || !a->value)
        return 2;
    for (int64_t k = 0; k < a->n; k++) {
        char buf[128];
        const char *s = a->text[k], *colon = strchr(s, ':');
        int bad = (colon != NULL) != a->glu || strlen(s) >= sizeof buf;
        if (!bad && a->glu) {
            memcpy(buf, s, (size_t)(colon - s));
            buf[colon - s] = 0;
            bad = cli_parse_float(buf, &a->x[k]) != 0 || cli_parse_float(colon + 1, &a->value[k]) != 0;
        } else if (!bad) {
            bad = cli_parse_float(s, &a->x[k]) != 0;
        }
        if (bad) {
            fprintf(stderr, "ffnrt run: \"%s\" is not %s\n", s,
                    a->glu ? "a number pair GATE:VALUE (400:400, -1e3:inf)" : "a number (a float: 0.5, -1e3, inf, nan)");
            return 2;
        }
    }
    return 0;
}

/* ------------------------------------------------------------- printing */

static void print_hist(const char *name, const uint32_t *h, uint32_t bins, float lo, float hi)
{
    printf("  %s histogram [%g, %g) in %u bins: below %u |", name, (double)lo, (double)hi, bins, h[0]);
    for (uint32_t b = 0; b < bins; b++)
        printf(" %u", h[1 + b]);
    printf(" | from hi %u\n", h[bins + 1]);
}

void ffnrt_cli_print_stats(const ffnrt_stats *s)
{
    if (!s->valid) {
        printf("statistics: none\n");
        return;
    }
    printf("statistics of %s (%s storage, %s arithmetic):\n", s->op, ffnrt_dtype_name(s->dtype),
           s->fp16_arithmetic ? "fp16" : "fp32");
    printf("  inputs %llu: NaN %llu, Inf %llu\n", (unsigned long long)s->inputs, (unsigned long long)s->input_nan,
           (unsigned long long)s->input_inf);
    printf("  outputs %llu: NaN %llu, Inf %llu, first non-finite at %lld\n", (unsigned long long)s->outputs,
           (unsigned long long)s->output_nan, (unsigned long long)s->output_inf, (long long)s->first_nonfinite);
    printf("  pre-activations %llu: NaN %llu, Inf %llu; min %g, max %g, mean %.9g, rms %.9g\n",
           (unsigned long long)s->pre_count, (unsigned long long)s->pre_nan, (unsigned long long)s->pre_inf,
           (double)s->pre_min, (double)s->pre_max, s->pre_mean, s->pre_rms);
    if (s->bins)
        print_hist("pre-activation", s->hist, s->bins, s->lo, s->hi);
    printf("  activations %llu: exact zeros %llu (dead fraction %.6f)\n", (unsigned long long)s->activations,
           (unsigned long long)s->zero, s->dead_fraction);
    if (isinf(s->saturation_cut))
        printf("  saturated: the op does not saturate\n");
    else
        printf("  saturated (|x| > %g): %llu (fraction %.6f)\n", (double)s->saturation_cut,
               (unsigned long long)s->saturated, s->saturated_fraction);
    if (s->hidden_features)
        printf("  hidden: non-finite %llu; features %llu, dead for every token %llu\n",
               (unsigned long long)s->hidden_nonfinite, (unsigned long long)s->hidden_features,
               (unsigned long long)s->dead_features);
    if (s->tokens) {
        printf("  tokens %llu: gate norm mean %.9g max %.9g; value norm mean %.9g max %.9g\n",
               (unsigned long long)s->tokens, s->gate_norm_mean, s->gate_norm_max, s->value_norm_mean,
               s->value_norm_max);
        if (s->bins)
            print_hist("gate activation", s->gate_hist, s->bins, s->gate_lo, s->gate_hi);
    }
}

/* -------------------------------------------------------------- the call */

static ffnrt_status tensor_of(ffnrt_context *ctx, ffnrt_dtype t, const float *v, int64_t n, ffnrt_tensor **out)
{
    ffnrt_status st = ffnrt_tensor_create(ctx, t, 1, &n, out);
    if (st != FFNRT_OK)
        return st;
    if (t == FFNRT_DTYPE_F32)
        return ffnrt_tensor_write(*out, v, (size_t)n * sizeof *v);
    uint16_t *h = malloc((size_t)n * sizeof *h);
    if (!h)
        return FFNRT_ERROR_OUT_OF_HOST_MEMORY;
    if (t == FFNRT_DTYPE_F16)
        ffnrt_f32_to_f16_array(v, h, (size_t)n);
    else
        ffnrt_f32_to_bf16_array(v, h, (size_t)n);
    st = ffnrt_tensor_write(*out, h, (size_t)n * sizeof *h);
    free(h);
    return st;
}

static ffnrt_status read_floats(const ffnrt_tensor *t, float *out, int64_t n)
{
    ffnrt_dtype d = ffnrt_tensor_dtype(t);
    if (d == FFNRT_DTYPE_F32)
        return ffnrt_tensor_read(t, out, (size_t)n * sizeof *out);
    uint16_t *h = malloc((size_t)n * sizeof *h);
    if (!h)
        return FFNRT_ERROR_OUT_OF_HOST_MEMORY;
    ffnrt_status st = ffnrt_tensor_read(t, h, (size_t)n * sizeof *h);
    for (int64_t i = 0; st == FFNRT_OK && i < n; i++)
        out[i] = d == FFNRT_DTYPE_F16 ? ffnrt_f16_to_f32(h[i]) : ffnrt_bf16_to_f32(h[i]);
    free(h);
    return st;
}

/* The op once in (dtype, compute), its outputs into y; *call gets the
 * call's status (a failed finite check still leaves y as computed). */
static ffnrt_status run_once(ffnrt_context *ctx, const run_args *a, ffnrt_dtype dtype, ffnrt_compute compute,
                             int check, float *y, ffnrt_status *call, char *message, size_t len)
{
    ffnrt_stats_options o = FFNRT_STATS_OPTIONS_INIT;
    o.enabled = a->stats || a->fp32_control;
    o.bins = a->bins;
    o.lo = a->lo, o.hi = a->hi;
    o.check_finite = check;
    ffnrt_tensor *x = NULL, *v = NULL, *out = NULL;
    ffnrt_status st = ffnrt_context_set_stats(ctx, &o);
    if (st == FFNRT_OK)
        st = tensor_of(ctx, dtype, a->x, a->n, &x);
    if (st == FFNRT_OK && a->glu)
        st = tensor_of(ctx, dtype, a->value, a->n, &v);
    if (st == FFNRT_OK)
        st = ffnrt_tensor_create(ctx, dtype, 1, &a->n, &out);
    if (st == FFNRT_OK) {
        if (a->glu) {
            ffnrt_glu_desc d = FFNRT_GLU_DESC_INIT(a->glu_kind);
            d.compute = compute;
            *call = ffnrt_glu_forward_split(ctx, &d, x, v, out);
        } else {
            ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(a->act);
            d.compute = compute;
            *call = ffnrt_activation_forward(ctx, &d, x, out);
        }
        snprintf(message, len, "%s", *call == FFNRT_OK ? "" : ffnrt_last_error_message());
        if (*call == FFNRT_OK || *call == FFNRT_ERROR_NON_FINITE)
            st = read_floats(out, y, a->n);
        else
            st = *call;
    }
    ffnrt_tensor_destroy(x);
    ffnrt_tensor_destroy(v);
    ffnrt_tensor_destroy(out);
    return st;
}

static void print_values(const run_args *a, const float *y, const char *header)
{
    printf("%s\n", header);
    for (int64_t i = 0; i < a->n; i++)
        printf("%s\t%.9g\n", a->text[i], (double)y[i]);
}

static int nonfinite(const float *y, int64_t n)
{
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        k += !isfinite(y[i]);
    return (int)k;
}

int ffnrt_run_main(int argc, char **argv)
{
    run_args a;
    int rc = parse(argc, argv, &a);
    if (rc) {
        free(a.x);
        free(a.value);
        free(a.text);
        return rc == 1 ? 0 : 2;
    }
    ffnrt_context *ctx = NULL;
    float *y = malloc((size_t)a.n * sizeof *y), *y32 = malloc((size_t)a.n * sizeof *y32);
    char message[1024] = "", message32[1024] = "";
    ffnrt_status call = FFNRT_OK, call32 = FFNRT_OK;
    ffnrt_context_options options = FFNRT_CONTEXT_OPTIONS_INIT;
    options.device = a.device;
    ffnrt_status st = y && y32 ? ffnrt_context_create(&options, &ctx) : FFNRT_ERROR_OUT_OF_HOST_MEMORY;
    rc = 1;
    if (st == FFNRT_OK)
        st = run_once(ctx, &a, a.dtype, a.compute, a.check_finite || a.fp32_control ? 1 : 0, y, &call, message,
                      sizeof message);
    if (st == FFNRT_OK) {
        ffnrt_device_info info;
        ffnrt_context_get_device_info(ctx, &info);
        char header[512];
        snprintf(header, sizeof header, "# %s on %s:%u %s, %s storage%s", a.op, ffnrt_backend_name(info.backend),
                 info.index, info.name, ffnrt_dtype_name(a.dtype),
                 a.compute == FFNRT_COMPUTE_F16 ? ", fp16 arithmetic" : "");
        print_values(&a, y, header);
        ffnrt_stats s;
        if (a.stats && ffnrt_context_last_stats(ctx, &s) == FFNRT_OK)
            ffnrt_cli_print_stats(&s);
        if (call != FFNRT_OK)
            printf("the call failed: %s\n", message);
        rc = call == FFNRT_OK ? 0 : 1;
    }
    if (st == FFNRT_OK && a.fp32_control) {
        st = run_once(ctx, &a, FFNRT_DTYPE_F32, FFNRT_COMPUTE_F32, 1, y32, &call32, message32, sizeof message32);
        if (st == FFNRT_OK) {
            print_values(&a, y32, "# the fp32 control: the same call in f32 storage and fp32 arithmetic");
            int bad = nonfinite(y, a.n), bad32 = nonfinite(y32, a.n);
            if (call32 != FFNRT_OK)
                printf("verdict: non-finite in fp32 too (%s): the data (inputs whose true result is not finite "
                       "in fp32) or the op's math, not the precision\n", message32);
            else if (call != FFNRT_OK || bad > bad32)
                printf("verdict: finite in fp32, non-finite in %s%s: the precision overflowed (the true result "
                       "passes the storage type's range), not the kernel; keep this op in fp32 or scale its "
                       "inputs\n", ffnrt_dtype_name(a.dtype), a.compute == FFNRT_COMPUTE_F16 ? " with fp16 arithmetic" : "");
            else
                printf("verdict: finite in both (%d non-finite outputs, from non-finite inputs, in each)\n", bad);
            rc = call32 != FFNRT_OK ? 1 : call != FFNRT_OK ? 3 : 0;
        }
    }
    if (st != FFNRT_OK)
        fprintf(stderr, "ffnrt run: %s\n%s", ffnrt_last_error_message(), ctx ? ffnrt_context_build_log(ctx) : "");
    ffnrt_context_destroy(ctx);
    free(y);
    free(y32);
    free(a.x);
    free(a.value);
    free(a.text);
    return rc;
}
