/* ffnrt check: runs inputs through an op on a device and measures the
 * error against the double-precision reference (tools/reference), in ULP of the
 * storage type. fp32 inputs are every 257th bit pattern (2^24 of them,
 * every sign and exponent) plus the edge values, or all 2^32 with
 * --exhaustive; fp16 and bf16 inputs are all 65,536 bit patterns.
 * Gradients are run with dy = 1 and measured in ULP of
 * max(|f'(x)|, the sum of its terms' magnitudes), as the tests do.
 * docs/accuracy.md's measured table is `ffnrt check --table`. */
#include "check.h"
#include "args.h"
#include "run.h"
#include "check_quant.h"
#include "conformance.h"
#include "numbers.h"
#include "ffnrt.h"
#include "contract.h"
#include "reference.h"
#include "reference16.h"
#include "reference_grad.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK (1u << 24)

typedef struct check_case {
    ffnrt_activation act;
    int backward;
    ffnrt_dtype dtype;
    ffnrt_compute compute;
} check_case;

/* Histogram buckets of the ULP error. */
static const double bucket_edges[] = {0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 64.0};
#define BUCKETS (sizeof bucket_edges / sizeof bucket_edges[0] + 1)

typedef struct check_result {
    double max_ulp;
    float worst_x, worst_got;
    uint64_t inputs, flushed, bad_special; /* NaN lost, or a finite result became Inf/NaN */
    uint64_t hist[BUCKETS];
} check_result;

typedef struct check_device {
    ffnrt_context *ctx;
    ffnrt_tensor *x[3], *y[3], *dy[3], *slopes[3]; /* per dtype */
    int keeps_subnormals;
    ffnrt_device_info info;
} check_device;

static const float edge_values[] = {0.0f, -0.0f, 1e-45f, -1e-45f, FLT_MIN, -FLT_MIN, FLT_MAX, -FLT_MAX,
                                    INFINITY, -INFINITY, NAN, -NAN, 1.0f, -1.0f, -10.0f, -13.0f, -88.0f, -100.0f};

/* --------------------------------------------------------- storage types */

static float decode(ffnrt_dtype t, const void *buf, size_t i)
{
    if (t == FFNRT_DTYPE_F32)
        return ((const float *)buf)[i];
    uint16_t b = ((const uint16_t *)buf)[i];
    return t == FFNRT_DTYPE_F16 ? ffnrt_f16_to_f32(b) : ffnrt_bf16_to_f32(b);
}

static void encode(ffnrt_dtype t, void *buf, size_t i, float v)
{
    if (t == FFNRT_DTYPE_F32)
        ((float *)buf)[i] = v;
    else
        ((uint16_t *)buf)[i] = t == FFNRT_DTYPE_F16 ? ffnrt_f32_to_f16(v) : ffnrt_f32_to_bf16(v);
}

static int min_exponent(ffnrt_dtype t) { return t == FFNRT_DTYPE_F16 ? -14 : -126; }

/* |got - ref| in ULP of t at scale (>= |ref|): tools/reference's measure. */
static double error_ulp(ffnrt_dtype t, double got, double ref, double scale)
{
    return ulp_error_of_type(t, got, ref, scale);
}

/* ------------------------------------------------------------ reference */

/* The slope as the device holds it (rounded to the storage type). */
static double stored_alpha(const check_case *c)
{
    if (c->act != FFNRT_ACT_PRELU)
        return contract_alpha(c->act);
    unsigned char b[4];
    encode(c->dtype, b, 0, LEAKY_SLOPE);
    return decode(c->dtype, b, 0);
}

static void reference(const check_case *c, double x, double *ref, double *scale)
{
    double a = stored_alpha(c);
    if (c->backward) {
        *ref = ref_grad(c->act, x, a, SWISH_BETA);
        *scale = fmax(fabs(*ref), ref_grad_scale(c->act, x, a, SWISH_BETA));
    } else {
        *ref = ref_forward(c->act, x, a, SWISH_BETA);
        *scale = fabs(*ref);
    }
}

/* --------------------------------------------------------------- device */

static int dtype_index(ffnrt_dtype t) { return t == FFNRT_DTYPE_F32 ? 0 : t == FFNRT_DTYPE_F16 ? 1 : 2; }

static int open_device(const char *spec, check_device *d)
{
    memset(d, 0, sizeof *d);
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.device = spec; /* NULL: FFNRT_DEVICE, else ffnrt's choice */
    if (ffnrt_context_create(&o, &d->ctx) != FFNRT_OK) {
        fprintf(stderr, "ffnrt check: %s\n", ffnrt_last_error_message());
        return -1;
    }
    ffnrt_context_get_device_info(d->ctx, &d->info);
    d->keeps_subnormals = d->info.denormals_preserved == 1;
    static const ffnrt_dtype types[3] = {FFNRT_DTYPE_F32, FFNRT_DTYPE_F16, FFNRT_DTYPE_BF16};
    for (int t = 0; t < 3; t++) {
        int64_t n = t == 0 ? CHUNK : 65536, one = 1;
        unsigned char slope[4], ones[4];
        encode(types[t], slope, 0, LEAKY_SLOPE);
        encode(types[t], ones, 0, 1.0f);
        void *dy = malloc((size_t)n * ffnrt_dtype_size(types[t]));
        for (int64_t i = 0; dy && i < n; i++)
            memcpy((char *)dy + i * ffnrt_dtype_size(types[t]), ones, ffnrt_dtype_size(types[t]));
        int ok = dy && ffnrt_tensor_create(d->ctx, types[t], 1, &n, &d->x[t]) == FFNRT_OK &&
                 ffnrt_tensor_create(d->ctx, types[t], 1, &n, &d->y[t]) == FFNRT_OK &&
                 ffnrt_tensor_create(d->ctx, types[t], 1, &n, &d->dy[t]) == FFNRT_OK &&
                 ffnrt_tensor_create(d->ctx, types[t], 1, &one, &d->slopes[t]) == FFNRT_OK &&
                 ffnrt_tensor_write(d->slopes[t], slope, ffnrt_dtype_size(types[t])) == FFNRT_OK &&
                 ffnrt_tensor_write(d->dy[t], dy, (size_t)n * ffnrt_dtype_size(types[t])) == FFNRT_OK;
        free(dy);
        if (!ok) {
            fprintf(stderr, "ffnrt check: %s\n", ffnrt_last_error_message());
            return -1;
        }
    }
    return 0;
}

static void close_device(check_device *d) { ffnrt_context_destroy(d->ctx); }

/* Runs the case over in[0..n) (encoded in the storage type) into out. */
static ffnrt_status run_chunk(check_device *d, const check_case *c, const void *in, void *out, size_t n)
{
    int t = dtype_index(c->dtype);
    size_t bytes = n * ffnrt_dtype_size(c->dtype);
    ffnrt_activation_desc desc = FFNRT_ACTIVATION_DESC_INIT(c->act);
    desc.alpha = (float)contract_alpha(c->act);
    desc.beta = SWISH_BETA;
    desc.slopes = d->slopes[t];
    desc.compute = c->compute;
    ffnrt_status st = ffnrt_tensor_write(d->x[t], in, bytes);
    if (st == FFNRT_OK)
        st = c->backward ? ffnrt_activation_backward(d->ctx, &desc, d->x[t], d->dy[t], d->y[t])
                         : ffnrt_activation_forward(d->ctx, &desc, d->x[t], d->y[t]);
    if (st == FFNRT_OK)
        st = ffnrt_tensor_read(d->y[t], out, bytes);
    return st;
}

static void account(check_result *r, const check_case *c, int keeps_subnormals, float x, float got)
{
    double ref, scale;
    reference(c, x, &ref, &scale);
    r->inputs++;
    double e = error_ulp(c->dtype, got, ref, scale);
    if (isinf(e)) {
        r->bad_special++;
    } else if (!keeps_subnormals && e > 0.5 &&
               (fpclassify(x) == FP_SUBNORMAL || fabs(ref) < ldexp(1.0, min_exponent(c->dtype)))) {
        /* A device that flushes subnormals: right for a flushed input or a
         * flushed result? Counted apart, as the contract says. */
        double ref0, scale0;
        reference(c, copysign(0.0, x), &ref0, &scale0);
        if ((got == 0 && fabs(ref) < ldexp(1.0, min_exponent(c->dtype))) ||
            error_ulp(c->dtype, got, ref0, fmax(scale0, fabs(ref0))) <= 0.5) {
            r->flushed++;
            return;
        }
    }
    size_t b = 0;
    while (b < BUCKETS - 1 && e > bucket_edges[b])
        b++;
    r->hist[b]++;
    if (e > r->max_ulp) {
        r->max_ulp = e;
        r->worst_x = x;
        r->worst_got = got;
    }
}

/* Sweeps the case's inputs; with other, counts results bit-identical there. */
static int sweep(check_device *d, check_device *other, const check_case *c, uint64_t stride, check_result *r,
                 uint64_t *identical)
{
    memset(r, 0, sizeof *r);
    size_t esize = ffnrt_dtype_size(c->dtype);
    int f32 = c->dtype == FFNRT_DTYPE_F32;
    uint64_t total = f32 ? ((1ull << 32) + stride - 1) / stride : 65536;
    size_t cap = f32 ? CHUNK : 65536;
    unsigned char *in = malloc(cap * esize), *out = malloc(cap * esize);
    unsigned char *out2 = other ? malloc(cap * esize) : NULL;
    int rc = in && out && (!other || out2) ? 0 : -1;
    for (uint64_t done = 0; rc == 0 && done < total; done += cap) {
        size_t n = total - done < cap ? (size_t)(total - done) : cap;
        for (size_t i = 0; i < cap; i++) { /* the tensors hold cap; the tail repeats input 0 */
            if (f32) {
                uint32_t bits = (uint32_t)((done + (i < n ? i : 0)) * stride);
                memcpy(in + 4 * i, &bits, 4);
            } else {
                uint16_t bits = (uint16_t)i;
                memcpy(in + 2 * i, &bits, 2);
            }
        }
        if (f32 && done == 0 && stride > 1) /* a sparse sweep still sees every edge value */
            for (size_t e = 0; e < sizeof edge_values / sizeof edge_values[0]; e++)
                memcpy(in + 4 * e, &edge_values[e], 4);
        ffnrt_status st = run_chunk(d, c, in, out, cap);
        if (st == FFNRT_OK && other)
            st = run_chunk(other, c, in, out2, cap);
        if (st != FFNRT_OK) {
            rc = st == FFNRT_ERROR_UNSUPPORTED ? 1 : -1;
            if (rc < 0)
                fprintf(stderr, "ffnrt check: %s\n", ffnrt_last_error_message());
            break;
        }
        for (size_t i = 0; i < n; i++) {
            float x = decode(c->dtype, in, i), got = decode(c->dtype, out, i);
            account(r, c, d->keeps_subnormals, x, got);
            if (other) {
                float got2 = decode(c->dtype, out2, i);
                if (memcmp(out + i * esize, out2 + i * esize, esize) == 0 || (isnan(got) && isnan(got2)))
                    (*identical)++;
            }
        }
        if (stride == 1)
            fprintf(stderr, "\r%s: %3.0f%%", ffnrt_activation_name(c->act),
                    100.0 * (double)(done + n) / (double)total);
    }
    if (f32 && stride == 1)
        fprintf(stderr, "\n");
    free(in);
    free(out);
    free(out2);
    return rc;
}

static void print_result(const check_device *d, const check_case *c, const check_result *r)
{
    printf("%s%s, %s storage, %s arithmetic, on %s:%u %s\n", ffnrt_activation_name(c->act), c->backward ? "'" : "",
           ffnrt_dtype_name(c->dtype), c->compute == FFNRT_COMPUTE_F16 ? "f16" : "f32",
           ffnrt_backend_name(d->info.backend), d->info.index, d->info.name);
    printf("  inputs %llu, max error %.3f ULP at x = %a (got %a)\n", (unsigned long long)r->inputs, r->max_ulp,
           r->worst_x, r->worst_got);
    printf("  NaN/Inf violations %llu, results accepted as flushed subnormals %llu\n",
           (unsigned long long)r->bad_special, (unsigned long long)r->flushed);
    printf("  histogram:");
    for (size_t b = 0; b < BUCKETS; b++) {
        if (b < BUCKETS - 1)
            printf(" <=%g: %llu", bucket_edges[b], (unsigned long long)r->hist[b]);
        else
            printf(" >%g: %llu", bucket_edges[b - 1], (unsigned long long)r->hist[b]);
    }
    printf("\n");
}

/* docs/accuracy.md's measured table: every op, forward and backward, in every precision,
 * on every device. */
static int check_table(uint64_t stride)
{
    size_t n = 0;
    ffnrt_device_count(&n);
    check_device devs[8];
    size_t opened = 0;
    for (size_t i = 0; i < n && opened < 8; i++) {
        ffnrt_device_info info;
        ffnrt_device_get_info(i, &info);
        char spec[64];
        snprintf(spec, sizeof spec, "%s:%u", ffnrt_backend_name(info.backend), info.index);
        if (open_device(spec, &devs[opened]) == 0)
            opened++;
    }
    static const struct {
        ffnrt_dtype dtype;
        ffnrt_compute compute;
        const char *name;
    } precisions[] = {{FFNRT_DTYPE_F32, FFNRT_COMPUTE_F32, "f32"},
                      {FFNRT_DTYPE_F16, FFNRT_COMPUTE_F32, "f16 storage"},
                      {FFNRT_DTYPE_BF16, FFNRT_COMPUTE_F32, "bf16 storage"},
                      {FFNRT_DTYPE_F16, FFNRT_COMPUTE_F16, "f16 arithmetic"}};
    printf("| op | device |");
    for (size_t p = 0; p < 4; p++)
        printf(" %s |", precisions[p].name);
    printf("\n|---|---|---|---|---|---|\n");
    int rc = 0;
    for (int a = 0; a < FFNRT_ACT_COUNT && rc == 0; a++)
        for (int backward = 0; backward < 2 && rc == 0; backward++)
            for (size_t i = 0; i < opened && rc == 0; i++) {
                printf("| %s%s | %s |", ffnrt_activation_name((ffnrt_activation)a), backward ? "'" : "",
                       ffnrt_backend_name(devs[i].info.backend));
                for (size_t p = 0; p < 4 && rc == 0; p++) {
                    check_case c = {(ffnrt_activation)a, backward, precisions[p].dtype, precisions[p].compute};
                    check_result r;
                    int s = sweep(&devs[i], NULL, &c, stride, &r, NULL);
                    if (s == 1) {
                        printf(" unsupported |");
                        continue;
                    }
                    rc = s;
                    printf(" %.2f", r.max_ulp);
                    if (r.bad_special)
                        printf(" (%llu NaN/Inf violations)", (unsigned long long)r.bad_special);
                    if (r.flushed)
                        printf(" (+%llu flushed)", (unsigned long long)r.flushed);
                    printf(" |");
                }
                printf("\n");
                fflush(stdout);
            }
    for (size_t i = 0; i < opened; i++)
        close_device(&devs[i]);
    return rc;
}

static int parse_dtype(const char *s, ffnrt_dtype *t)
{
    if (strcmp(s, "f32") == 0)
        *t = FFNRT_DTYPE_F32;
    else if (strcmp(s, "f16") == 0)
        *t = FFNRT_DTYPE_F16;
    else if (strcmp(s, "bf16") == 0)
        *t = FFNRT_DTYPE_BF16;
    else
        return -1;
    return 0;
}

/* The options of ffnrt check and ffnrt run that take a value, for the
 * scan for --fp32-control (which hands the arguments to ffnrt run). */
static int takes_value(const char *option)
{
    return strcmp(option, "--dtype") == 0 || strcmp(option, "--device") == 0 || strcmp(option, "--compare") == 0 ||
           strcmp(option, "--bins") == 0 || strcmp(option, "--range") == 0;
}

static const char matrix_usage[] =
    "usage: ffnrt check --matrix [--op LIST] [--dtype LIST] [--path LIST] [--weights LIST] [--kernel LIST]\n"
    "                   [--stats LIST] [--device LIST] [--profile LIST] [--bound-scale S]\n"
    "  every op (activation, GLU kind) x storage (f32,f16,bf16) x path (op = the element-wise call;\n"
    "  fused,unfused = an FFN layer with that op) x weights (dense = the dtype's own, or any block format\n"
    "  of the library, as ffnrt_weight_format_name spells it) x kernel (matvec,tiled) x stats (off,on:\n"
    "  bit-identical output, sane counts) x device x profile (none, or ffnrt devices --profiles'\n"
    "  names) against the double reference under the accuracy contract's bounds (docs/accuracy.md);\n"
    "  one line per case, then a summary.\n"
    "  LIST: comma-separated values, or all (an unknown value's message lists an axis's values);\n"
    "  by default every value of every axis, profile none\n"
    "  (the element-wise rows take weights and kernel \"-\"). --bound-scale multiplies every bound\n"
    "  (0: any error fails). Exit 0 when every case run passed, 1 otherwise, 2 for bad arguments.\n";

static int matrix_takes_value(const char *o)
{
    static const char *const names[] = {"--op", "--dtype", "--path", "--weights", "--kernel",
                                        "--stats", "--device", "--profile", "--bound-scale"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(o, names[i]) == 0)
            return 1;
    return 0;
}

/* ffnrt check --matrix: the conformance matrix (src/lab/conformance.c). */
static int check_matrix_main(int argc, char **argv)
{
    conf_selection s = CONF_SELECTION_INIT;
    const char **fields[] = {&s.op, &s.dtype, &s.path, &s.weights, &s.kernel, &s.stats, &s.device, &s.profile};
    static const char *const names[] = {"--op", "--dtype", "--path", "--weights", "--kernel",
                                        "--stats", "--device", "--profile"};
    const char *arg;
    int bad = 0, help = 0;
    cli_args args;
    cli_args_init(&args, argc, argv);
    cli_arg_kind kind;
    while (!bad && (kind = cli_args_next(&args, &arg)) != CLI_END) {
        if (kind != CLI_OPTION) {
            fprintf(stderr, "ffnrt check --matrix: unexpected argument %s\n", arg);
            bad = 1;
            break;
        }
        if (strcmp(arg, "--matrix") == 0)
            continue;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            help = 1;
            continue;
        }
        const char *v = matrix_takes_value(arg) ? cli_args_value(&args) : NULL;
        if (!v) {
            fprintf(stderr, "ffnrt check --matrix: %s %s\n", matrix_takes_value(arg) ? "a value is missing after" : "unknown option", arg);
            bad = 1;
            break;
        }
        if (strcmp(arg, "--bound-scale") == 0) {
            if (cli_parse_double(v, 0.0, 1e9, &s.bound_scale) != 0) {
                fprintf(stderr, "ffnrt check --matrix: --bound-scale %s: a number in [0, 1e9]\n", v);
                bad = 1;
            }
            continue;
        }
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strcmp(arg, names[i]) == 0)
                *fields[i] = v;
    }
    if (help || bad) {
        fputs(matrix_usage, help && !bad ? stdout : stderr);
        return help && !bad ? 0 : 2;
    }
    return conf_run(&s, stdout, stderr);
}

int ffnrt_check_main(int argc, char **argv)
{
    if (cli_args_has_option(argc, argv, "--matrix", matrix_takes_value))
        return check_matrix_main(argc, argv);
    /* The fp32 control checks a given call, not a sweep: `ffnrt run`'s. */
    if (cli_args_has_option(argc, argv, "--fp32-control", takes_value))
        return ffnrt_run_main(argc, argv);
    if (argc >= 1 && strcmp(argv[0], "--quant") == 0)
        return ffnrt_check_quant_main(argc - 1, argv + 1);
    const char *op = NULL, *device = NULL, *compare = NULL, *arg;
    int exhaustive = 0, table = 0, bad = 0, help = 0;
    check_case c = {FFNRT_ACT_RELU, 0, FFNRT_DTYPE_F32, FFNRT_COMPUTE_F32};
    cli_args args;
    cli_args_init(&args, argc, argv);
    cli_arg_kind kind;
    while (!bad && (kind = cli_args_next(&args, &arg)) != CLI_END) {
        const char *v = kind == CLI_OPTION && takes_value(arg) ? cli_args_value(&args) : NULL;
        if (kind == CLI_OPERAND)
            bad = op != NULL, op = op ? op : arg;
        else if (strcmp(arg, "--exhaustive") == 0)
            exhaustive = 1;
        else if (strcmp(arg, "--table") == 0)
            table = 1;
        else if (strcmp(arg, "--backward") == 0)
            c.backward = 1;
        else if (strcmp(arg, "--f16-arithmetic") == 0)
            c.compute = FFNRT_COMPUTE_F16;
        else if (strcmp(arg, "--dtype") == 0 && v)
            bad = parse_dtype(v, &c.dtype) != 0;
        else if (strcmp(arg, "--device") == 0 && v)
            device = v;
        else if (strcmp(arg, "--compare") == 0 && v)
            compare = v;
        else if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
            help = 1;
        else
            bad = 1;
    }
    uint64_t stride = exhaustive ? 1 : 257; /* 257: 16.7M inputs over every exponent and sign */
    if (table && !bad && !help)
        return check_table(stride) == 0 ? 0 : 1;
    if (help || bad || !op || ffnrt_activation_from_name(op, &c.act) != FFNRT_OK) {
        /* --help: the usage on stdout, and success, as every command's --help */
        fprintf(help ? stdout : stderr, "usage: ffnrt check [--device SPEC] [--dtype f32|f16|bf16] [--f16-arithmetic]\n"
                        "                   [--backward] [--exhaustive] [--compare SPEC] [--] OP\n"
                        "       ffnrt check --table [--exhaustive]\n"
                        "       ffnrt check --fp32-control [--dtype f16|bf16] [--f16-arithmetic] OP X [X...]\n"
                        "           the call on these numbers in that precision and again in fp32 (ffnrt run --help)\n"
                        "       ffnrt check --quant ... (a layer's loss with quantized weights: ffnrt check --quant --help)\n"
                        "       ffnrt check --matrix [--op LIST] [--dtype LIST] [--path LIST] [--weights LIST] [--kernel LIST]\n"
                        "                   [--stats LIST] [--device LIST] [--profile LIST] [--bound-scale S]\n"
                        "           every op x storage x weight format x path x kernel x statistics x device x profile\n"
                        "           against the double reference (ffnrt check --matrix --help)\n"
                        "SPEC as FFNRT_DEVICE takes it (\"opencl\", \"vulkan:0\", \"llvmpipe\")\n");
        return help ? 0 : 2;
    }
    check_device d, other;
    if (open_device(device, &d) != 0)
        return 1;
    int have_other = compare && open_device(compare, &other) == 0;
    if (compare && !have_other) {
        close_device(&d);
        return 1;
    }
    check_result r;
    uint64_t identical = 0;
    int rc = sweep(&d, have_other ? &other : NULL, &c, stride, &r, &identical);
    if (rc == 1)
        fprintf(stderr, "ffnrt check: %s\n", ffnrt_last_error_message());
    if (rc == 0) {
        print_result(&d, &c, &r);
        if (have_other)
            printf("  bit-identical with %s:%u %s: %.4f%% of %llu inputs\n", ffnrt_backend_name(other.info.backend),
                   other.info.index, other.info.name, 100.0 * (double)identical / (double)r.inputs,
                   (unsigned long long)r.inputs);
    }
    if (have_other)
        close_device(&other);
    close_device(&d);
    return rc == 0 ? 0 : 1;
}
