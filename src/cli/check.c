/* ffnrt check: runs fp32 inputs through an op on a device and measures the
 * error against the double-precision reference of tests/reference.c, in
 * ULP. The README's accuracy table is this command's output. */
#include "check.h"
#include "ffnrt.h"
#include "reference.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The parameters the contract is stated for (as in the tests). */
#define CHECK_LEAKY_SLOPE 0.1f
#define CHECK_ELU_ALPHA 1.5f
#define CHECK_SWISH_BETA 1.7f
#define CHUNK (1u << 24)

static double reference(ffnrt_activation act, double x)
{
    switch (act) {
    case FFNRT_ACT_RELU: return ref_relu(x);
    case FFNRT_ACT_LEAKY_RELU:
    case FFNRT_ACT_PRELU: return ref_leaky_relu(x, CHECK_LEAKY_SLOPE);
    case FFNRT_ACT_ELU: return ref_elu(x, CHECK_ELU_ALPHA);
    case FFNRT_ACT_GELU: return ref_gelu(x);
    case FFNRT_ACT_GELU_TANH: return ref_gelu_tanh(x);
    case FFNRT_ACT_SILU: return ref_silu(x);
    case FFNRT_ACT_SWISH: return ref_swish(x, CHECK_SWISH_BETA);
    case FFNRT_ACT_SIGMOID: return ref_sigmoid(x);
    case FFNRT_ACT_TANH: return ref_tanh(x);
    default: return NAN;
    }
}

/* Histogram buckets of the ULP error. */
static const double bucket_edges[] = {0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 64.0};
#define BUCKETS (sizeof bucket_edges / sizeof bucket_edges[0] + 1)

typedef struct check_result {
    double max_ulp;
    float worst_x, worst_got;
    uint64_t inputs, flushed, bad_special; /* NaN lost, or finite became Inf/NaN */
    uint64_t hist[BUCKETS];
} check_result;

typedef struct check_device {
    ffnrt_context *ctx;
    ffnrt_tensor *x, *y, *slopes;
    int keeps_subnormals;
    ffnrt_device_info info;
} check_device;

static int open_device(const char *spec, check_device *d)
{
    memset(d, 0, sizeof *d);
    if (spec)
        setenv("FFNRT_DEVICE", spec, 1);
    ffnrt_status st = ffnrt_context_create(NULL, &d->ctx);
    if (st != FFNRT_OK) {
        fprintf(stderr, "ffnrt check: %s\n", ffnrt_last_error_message());
        return -1;
    }
    ffnrt_context_get_device_info(d->ctx, &d->info);
    d->keeps_subnormals = d->info.denormals_preserved == 1;
    int64_t n = CHUNK, one = 1;
    float slope = CHECK_LEAKY_SLOPE;
    if (ffnrt_tensor_create(d->ctx, FFNRT_DTYPE_F32, 1, &n, &d->x) != FFNRT_OK ||
        ffnrt_tensor_create(d->ctx, FFNRT_DTYPE_F32, 1, &n, &d->y) != FFNRT_OK ||
        ffnrt_tensor_create(d->ctx, FFNRT_DTYPE_F32, 1, &one, &d->slopes) != FFNRT_OK ||
        ffnrt_tensor_write(d->slopes, &slope, sizeof slope) != FFNRT_OK) {
        fprintf(stderr, "ffnrt check: %s\n", ffnrt_last_error_message());
        return -1;
    }
    return 0;
}

static void close_device(check_device *d) { ffnrt_context_destroy(d->ctx); }

static int run_chunk(check_device *d, ffnrt_activation act, const float *in, float *out)
{
    ffnrt_activation_desc desc = FFNRT_ACTIVATION_DESC_INIT(act);
    desc.alpha = act == FFNRT_ACT_ELU ? CHECK_ELU_ALPHA : CHECK_LEAKY_SLOPE;
    desc.beta = CHECK_SWISH_BETA;
    desc.slopes = d->slopes;
    if (ffnrt_tensor_write(d->x, in, CHUNK * sizeof *in) != FFNRT_OK ||
        ffnrt_activation_forward(d->ctx, &desc, d->x, d->y) != FFNRT_OK ||
        ffnrt_tensor_read(d->y, out, CHUNK * sizeof *out) != FFNRT_OK) {
        fprintf(stderr, "ffnrt check: %s\n", ffnrt_last_error_message());
        return -1;
    }
    return 0;
}

static void account(check_result *r, ffnrt_activation act, int keeps_subnormals, float x, float got)
{
    double ref = reference(act, (double)x);
    r->inputs++;
    if (isnan(ref) != isnan(got) || (fabs(ref) <= FLT_MAX && !isfinite(got)))
        r->bad_special++;
    double e = ulp_error_f32(got, ref);
    if (!keeps_subnormals && e > 0.5) {
        double flushed_ref = fpclassify(x) == FP_SUBNORMAL ? reference(act, copysign(0.0, x)) : ref;
        if (ulp_error_f32_ftz(got, ref, flushed_ref) <= 0.5) {
            r->flushed++; /* counted apart, as the contract says */
            return;
        }
    }
    size_t b = 0;
    while (b < BUCKETS - 1 && e > bucket_edges[b])
        b++;
    r->hist[b]++;
    if (e > r->max_ulp || (isnan(e) && !isnan(r->max_ulp))) {
        r->max_ulp = e;
        r->worst_x = x;
        r->worst_got = got;
    }
}

static const float edge_values[] = {0.0f, -0.0f, 1e-45f, -1e-45f, FLT_MIN, -FLT_MIN, FLT_MAX, -FLT_MAX,
                                    INFINITY, -INFINITY, NAN, -NAN, 1.0f, -1.0f, -10.0f, -13.0f, -88.0f, -100.0f};

/* Inputs: every stride-th bit pattern (stride 1: all 2^32). */
static int sweep(check_device *d, check_device *other, ffnrt_activation act, uint64_t stride, check_result *r,
                 uint64_t *identical)
{
    float *in = malloc(CHUNK * sizeof *in), *out = malloc(CHUNK * sizeof *out);
    float *out2 = other ? malloc(CHUNK * sizeof *out2) : NULL;
    int rc = (in && out && (!other || out2)) ? 0 : -1;
    memset(r, 0, sizeof *r);
    uint64_t total = ((1ull << 32) + stride - 1) / stride;
    for (uint64_t done = 0; rc == 0 && done < total; done += CHUNK) {
        uint64_t n = total - done < CHUNK ? total - done : CHUNK;
        for (uint64_t i = 0; i < CHUNK; i++) {
            uint32_t bits = (uint32_t)((done + (i < n ? i : 0)) * stride);
            memcpy(&in[i], &bits, 4);
        }
        if (done == 0 && stride > 1) /* a sparse sweep still sees every edge value */
            for (size_t e = 0; e < sizeof edge_values / sizeof edge_values[0]; e++)
                in[e] = edge_values[e];
        if (run_chunk(d, act, in, out) != 0 || (other && run_chunk(other, act, in, out2) != 0)) {
            rc = -1;
            break;
        }
        for (uint64_t i = 0; i < n; i++) {
            account(r, act, d->keeps_subnormals, in[i], out[i]);
            if (other && (memcmp(&out[i], &out2[i], 4) == 0 || (isnan(out[i]) && isnan(out2[i]))))
                (*identical)++;
        }
        if (stride == 1)
            fprintf(stderr, "\r%s: %3.0f%%", ffnrt_activation_name(act), 100.0 * (double)(done + n) / (double)total);
    }
    if (stride == 1)
        fprintf(stderr, "\n");
    free(in);
    free(out);
    free(out2);
    return rc;
}

static void print_result(const check_device *d, ffnrt_activation act, const check_result *r)
{
    printf("%s on %s:%u %s\n", ffnrt_activation_name(act), ffnrt_backend_name(d->info.backend), d->info.index,
           d->info.name);
    printf("  inputs %llu, max error %.3f ULP at x = %a (got %a, reference %a)\n", (unsigned long long)r->inputs,
           r->max_ulp, r->worst_x, r->worst_got, reference(act, r->worst_x));
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

/* The README's table: every op on every device over a 2^24-input sweep. */
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
    printf("| op | fp32 bound (tests) |");
    for (size_t i = 0; i < opened; i++)
        printf(" %s max ULP (worst x) |", ffnrt_backend_name(devs[i].info.backend));
    printf(" flushed subnormals |\n|---|---|");
    for (size_t i = 0; i < opened; i++)
        printf("---|");
    printf("---|\n");
    int rc = 0;
    for (int a = 0; a < FFNRT_ACT_COUNT && rc == 0; a++) {
        ffnrt_activation act = (ffnrt_activation)a;
        double bound = act == FFNRT_ACT_RELU ? 0 : (act == FFNRT_ACT_LEAKY_RELU || act == FFNRT_ACT_PRELU) ? 0.5 : 4;
        printf("| %s | %g |", ffnrt_activation_name(act), bound);
        char flushed[256] = "";
        for (size_t i = 0; i < opened && rc == 0; i++) {
            check_result r;
            rc = sweep(&devs[i], NULL, act, stride, &r, NULL);
            printf(" %.2f (%a)%s |", r.max_ulp, r.worst_x, r.bad_special ? " NaN/Inf VIOLATION" : "");
            size_t len = strlen(flushed);
            snprintf(flushed + len, sizeof flushed - len, "%s%s %llu", len ? ", " : "",
                     ffnrt_backend_name(devs[i].info.backend), (unsigned long long)r.flushed);
        }
        printf(" %s |\n", flushed);
        fflush(stdout);
    }
    for (size_t i = 0; i < opened; i++)
        close_device(&devs[i]);
    return rc;
}

int ffnrt_check_main(int argc, char **argv)
{
    const char *op = NULL, *device = NULL, *compare = NULL;
    int exhaustive = 0, table = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--exhaustive") == 0)
            exhaustive = 1;
        else if (strcmp(argv[i], "--table") == 0)
            table = 1;
        else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
            device = argv[++i];
        else if (strcmp(argv[i], "--compare") == 0 && i + 1 < argc)
            compare = argv[++i];
        else if (argv[i][0] != '-' && !op)
            op = argv[i];
        else {
            op = NULL;
            table = 0;
            break;
        }
    }
    uint64_t stride = exhaustive ? 1 : 257; /* 257: 16.7M inputs over every exponent and sign */
    if (table)
        return check_table(stride) == 0 ? 0 : 1;
    ffnrt_activation act;
    if (!op || ffnrt_activation_from_name(op, &act) != FFNRT_OK) {
        fprintf(stderr, "usage: ffnrt check OP [--device SPEC] [--exhaustive] [--compare SPEC]\n"
                        "       ffnrt check --table [--exhaustive]\n"
                        "SPEC as FFNRT_DEVICE takes it (\"opencl\", \"vulkan:0\", \"llvmpipe\")\n");
        return 2;
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
    int rc = sweep(&d, have_other ? &other : NULL, act, stride, &r, &identical);
    if (rc == 0) {
        print_result(&d, act, &r);
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
