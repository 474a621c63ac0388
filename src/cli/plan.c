/* ffnrt plan: what the dispatcher chooses for an op on a device, and why. */
#include "plan_cli.h"
#include "args.h"
#include "numbers.h"

#include "ffnrt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ffnrt plan [--op NAME] [--device SPEC] [--dtype f32|f16|bf16] [--precision exact|balanced|fast]\n"
            "                  [--profile NAME] [--calibrate]\n"
            "  FFN layers:  --op dense-ACT | GLU (glu, reglu, geglu, geglu_tanh, swiglu) --d N --hidden N --tokens N\n"
            "               [--bias] [--path fused|unfused] [--matmul matvec|tiled]\n"
            "               [--weights FMT | IN,VALUE,OUT] (q8_0, q4_0, q4_1, q4_k, q6_k; f32: the dtype)\n"
            "  activations: --op ACT (relu, gelu, silu, ...) --elements N [--channels N (prelu: slopes on the last axis)]\n"
            "  GLU alone:   --op GLU --rows N --width N --glu-only\n"
            "  no --op: the device, limits, precision and quirks alone\n"
            "every setting can also be given through the environment (the library's own list):\n");
    const char *name, *env;
    int forceable;
    for (size_t i = 0; ffnrt_setting_info(i, &name, &env, &forceable) == FFNRT_OK; i++)
        fprintf(f, "  %-24s %s%s\n", env, name, forceable ? " (also ffnrt_context_force)" : "");
}

static int parse_dtype(const char *s, ffnrt_dtype *out)
{
    if (strcmp(s, "f32") == 0)
        *out = FFNRT_DTYPE_F32;
    else if (strcmp(s, "f16") == 0)
        *out = FFNRT_DTYPE_F16;
    else if (strcmp(s, "bf16") == 0)
        *out = FFNRT_DTYPE_BF16;
    else
        return 0;
    return 1;
}

/* The numeric options: each value whole, in its range (d_model and hidden
 * as an FFN layer takes them), so a typo is an error and not a default. */
typedef struct number_option {
    const char *name;
    int64_t min, max;
} number_option;

static const number_option number_options[] = {
    {"--d", 1, UINT32_MAX},     {"--hidden", 1, UINT32_MAX}, {"--tokens", 0, INT64_MAX},
    {"--elements", 0, INT64_MAX}, {"--rows", 0, INT64_MAX},  {"--width", 1, UINT32_MAX},
    {"--channels", 1, UINT32_MAX},
};

/* "q4_0" (every matrix) or "q4_0,q8_0,q4_1" (in or gate, value, out). */
static int parse_formats(const char *v, ffnrt_weight_format out[3])
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s", v);
    char *save = NULL;
    int n = 0;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        if (n == 3 || ffnrt_weight_format_from_name(item, &out[n]) != FFNRT_OK)
            return 0;
        n++;
    }
    if (n == 1)
        out[1] = out[2] = out[0];
    return n == 1 || n == 3;
}

int ffnrt_plan_main(int argc, char **argv)
{
    const char *op = NULL, *device = NULL;
    int64_t numbers[7] = {0, 0, 1, 1 << 24, 1, 0, 1}; /* in number_options' order */
    int64_t *d_model = &numbers[0], *hidden = &numbers[1], *tokens = &numbers[2], *elements = &numbers[3],
            *rows = &numbers[4], *width = &numbers[5], *channels = &numbers[6];
    int bias = 0, glu_only = 0, calibrate = 0;
    ffnrt_dtype dtype = FFNRT_DTYPE_F32;
    ffnrt_ffn_path path = FFNRT_FFN_PATH_AUTO;
    ffnrt_matmul_kernel matmul = FFNRT_MATMUL_AUTO;
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    ffnrt_weight_format formats[3] = {FFNRT_WEIGHT_F32, FFNRT_WEIGHT_F32, FFNRT_WEIGHT_F32};
    static const char *const valued[] = {"--op",     "--device", "--profile", "--dtype",
                                         "--precision", "--path", "--matmul",  "--weights"};
    cli_args args;
    cli_args_init(&args, argc, argv);
    const char *a;
    cli_arg_kind kind;
    while ((kind = cli_args_next(&args, &a)) != CLI_END) {
        if (kind == CLI_OPERAND) {
            fprintf(stderr, "ffnrt plan: unexpected argument %s\n", a);
            usage(stderr);
            return 2;
        }
        int takes = 0, number = -1;
        for (int k = 0; k < (int)(sizeof number_options / sizeof number_options[0]); k++)
            if (strcmp(a, number_options[k].name) == 0)
                number = k, takes = 1;
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
            takes |= strcmp(a, valued[k]) == 0;
        const char *v = takes ? cli_args_value(&args) : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (takes && !v) {
            fprintf(stderr, "ffnrt plan: %s needs a value\n", a);
            usage(stderr);
            return 2;
        }
        if (number >= 0) {
            if (cli_parse_int(v, number_options[number].min, number_options[number].max, &numbers[number]) != 0) {
                fprintf(stderr, "ffnrt plan: %s %s: not an integer in [%lld, %lld]\n", a, v,
                        (long long)number_options[number].min, (long long)number_options[number].max);
                return 2;
            }
        } else if (strcmp(a, "--op") == 0)
            op = v;
        else if (strcmp(a, "--device") == 0)
            device = v;
        else if (strcmp(a, "--profile") == 0)
            o.profile = v;
        else if (strcmp(a, "--dtype") == 0 && parse_dtype(v, &dtype))
            ;
        else if (strcmp(a, "--precision") == 0 && strcmp(v, "exact") == 0)
            o.precision = FFNRT_PRECISION_EXACT;
        else if (strcmp(a, "--precision") == 0 && strcmp(v, "balanced") == 0)
            o.precision = FFNRT_PRECISION_BALANCED;
        else if (strcmp(a, "--precision") == 0 && strcmp(v, "fast") == 0)
            o.precision = FFNRT_PRECISION_FAST;
        else if (strcmp(a, "--path") == 0 && (strcmp(v, "fused") == 0 || strcmp(v, "unfused") == 0))
            path = strcmp(v, "fused") == 0 ? FFNRT_FFN_PATH_FUSED : FFNRT_FFN_PATH_UNFUSED;
        else if (strcmp(a, "--matmul") == 0 && (strcmp(v, "matvec") == 0 || strcmp(v, "tiled") == 0))
            matmul = strcmp(v, "matvec") == 0 ? FFNRT_MATMUL_MATVEC : FFNRT_MATMUL_TILED;
        else if (strcmp(a, "--weights") == 0 && parse_formats(v, formats))
            ;
        else if (strcmp(a, "--bias") == 0)
            bias = 1;
        else if (strcmp(a, "--glu-only") == 0)
            glu_only = 1;
        else if (strcmp(a, "--calibrate") == 0)
            calibrate = 1;
        else {
            if (takes)
                fprintf(stderr, "ffnrt plan: %s %s: unknown value\n", a, v);
            else
                fprintf(stderr, "ffnrt plan: %s: unknown option\n", a);
            usage(stderr);
            return 2;
        }
    }
    o.device = device; /* NULL: FFNRT_DEVICE, else ffnrt's choice */
    ffnrt_context *ctx = NULL;
    if (ffnrt_context_create(&o, &ctx) != FFNRT_OK) {
        fprintf(stderr, "ffnrt plan: %s\n", ffnrt_last_error_message());
        return 1;
    }
    ffnrt_plan *plan = NULL;
    ffnrt_status st;
    if (calibrate && ffnrt_context_calibrate(ctx, NULL, NULL, NULL) != FFNRT_OK) {
        fprintf(stderr, "ffnrt plan: calibration: %s\n", ffnrt_context_last_error(ctx));
        ffnrt_context_destroy(ctx);
        return 1;
    }
    ffnrt_activation act;
    ffnrt_glu glu;
    if (!op) {
        st = ffnrt_context_plan(ctx, &plan);
    } else if (ffnrt_glu_from_name(op, &glu) == FFNRT_OK && glu_only) {
        ffnrt_glu_desc gd = FFNRT_GLU_DESC_INIT(glu);
        st = ffnrt_glu_plan(ctx, &gd, dtype, (size_t)*rows, (size_t)(*width ? *width : 4096), &plan);
    } else if (ffnrt_glu_from_name(op, &glu) == FFNRT_OK ||
               (strncmp(op, "dense-", 6) == 0 && ffnrt_activation_from_name(op + 6, &act) == FFNRT_OK)) {
        int gated = strncmp(op, "dense-", 6) != 0;
        int64_t d = *d_model ? *d_model : 4096; /* at most 2^32 - 1: 4 d fits */
        ffnrt_ffn_desc fd = FFNRT_FFN_DESC_INIT(gated ? FFNRT_FFN_GATED : FFNRT_FFN_DENSE, d, *hidden ? *hidden : 4 * d);
        if (gated)
            fd.glu.kind = glu;
        else
            fd.activation = (ffnrt_activation_desc)FFNRT_ACTIVATION_DESC_INIT(act);
        fd.dtype = dtype;
        fd.bias = bias;
        fd.path = path;
        fd.matmul = matmul;
        fd.format_in = formats[0];
        fd.format_value = gated ? formats[1] : FFNRT_WEIGHT_F32;
        fd.format_out = formats[2];
        st = ffnrt_ffn_plan(ctx, &fd, *tokens, &plan);
    } else if (ffnrt_activation_from_name(op, &act) == FFNRT_OK) {
        ffnrt_activation_desc ad = FFNRT_ACTIVATION_DESC_INIT(act);
        ffnrt_tensor *slopes = NULL; /* PReLU: --channels slopes on the last axis */
        st = *channels > 1 && act == FFNRT_ACT_PRELU ? ffnrt_tensor_create(ctx, dtype, 1, channels, &slopes) : FFNRT_OK;
        ad.slopes = slopes;
        if (st == FFNRT_OK)
            st = ffnrt_activation_plan(ctx, &ad, dtype, (size_t)*elements, &plan);
        ffnrt_tensor_destroy(slopes);
    } else {
        fprintf(stderr, "ffnrt plan: unknown op \"%s\"\n", op);
        ffnrt_context_destroy(ctx);
        return 2;
    }
    int rc = 0;
    if (st == FFNRT_OK) {
        fputs(ffnrt_plan_text(plan), stdout);
    } else {
        fprintf(stderr, "ffnrt plan: %s\n", ffnrt_context_last_error(ctx));
        rc = 1;
    }
    ffnrt_plan_destroy(plan);
    ffnrt_context_destroy(ctx);
    return rc;
}
