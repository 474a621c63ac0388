/* Bad input gets a clear status and message, never a crash; the context
 * stays usable afterwards. Leaks are caught by the sanitizer run. */
#include "device_fixture.h"

#include <criterion/parameterized.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

BACKEND_PARAMETERS(errors, api)

#define EXPECT(call, status)                                                                                  \
    do {                                                                                                      \
        ffnrt_status st_ = (call);                                                                            \
        cr_assert_eq(st_, (status), "%s returned %s, expected %s (%s)", #call, ffnrt_status_string(st_),     \
                     ffnrt_status_string(status), ffnrt_last_error_message());                                \
        cr_assert(strlen(ffnrt_last_error_message()) > 0, "%s gave no message", #call);                      \
    } while (0)

ParameterizedTest(ffnrt_backend *b, errors, api)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    ffnrt_context *other = test_context(*b, NULL);
    int64_t shape[2] = {4, 8}, other_shape[2] = {8, 4}, neg[1] = {-1};
    ffnrt_tensor *x, *y, *z, *h, *hy, *foreign, *t = NULL;
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &x), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &y), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, other_shape, &z), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F16, 2, shape, &h), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F16, 2, shape, &hy), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(other, FFNRT_DTYPE_F32, 2, shape, &foreign), FFNRT_OK);
    float data[32];
    for (int i = 0; i < 32; i++)
        data[i] = (float)i - 16.0f;
    cr_assert_eq(ffnrt_tensor_write(x, data, sizeof data), FFNRT_OK);

    /* Tensors. */
    EXPECT(ffnrt_tensor_create(NULL, FFNRT_DTYPE_F32, 2, shape, &t), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, NULL), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, NULL, &t), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, neg, &t), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, FFNRT_MAX_DIMS + 1, shape, &t), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_tensor_create(ctx, (ffnrt_dtype)77, 2, shape, &t), FFNRT_ERROR_INVALID_ARGUMENT);
    int64_t huge[2] = {INT64_C(1) << 31, INT64_C(1) << 31};
    EXPECT(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, huge, &t), FFNRT_ERROR_LIMIT_EXCEEDED);
    cr_assert_null(t);
    EXPECT(ffnrt_tensor_write(NULL, data, sizeof data), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_tensor_write(x, NULL, sizeof data), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_tensor_write(x, data, sizeof data - 4), FFNRT_ERROR_SHAPE_MISMATCH);
    EXPECT(ffnrt_tensor_read(x, data, sizeof data + 4), FFNRT_ERROR_SHAPE_MISMATCH);
    EXPECT(ffnrt_tensor_read(NULL, data, sizeof data), FFNRT_ERROR_INVALID_ARGUMENT);

    /* Activations. */
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_GELU);
    EXPECT(ffnrt_activation_forward(NULL, &d, x, y), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_activation_forward(ctx, NULL, x, y), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_activation_forward(ctx, &d, NULL, y), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_activation_forward(ctx, &d, x, NULL), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_activation_forward(ctx, &d, x, z), FFNRT_ERROR_SHAPE_MISMATCH);
    EXPECT(ffnrt_activation_forward(ctx, &d, x, h), FFNRT_ERROR_DTYPE_MISMATCH);
    cr_assert_eq(ffnrt_activation_forward(ctx, &d, h, hy), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    EXPECT(ffnrt_activation_forward(ctx, &d, x, foreign), FFNRT_ERROR_WRONG_CONTEXT);
    ffnrt_activation_desc bad = FFNRT_ACTIVATION_DESC_INIT((ffnrt_activation)99);
    EXPECT(ffnrt_activation_forward(ctx, &bad, x, y), FFNRT_ERROR_INVALID_ARGUMENT);
    ffnrt_activation_desc nan_alpha = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_ELU);
    nan_alpha.alpha = NAN;
    EXPECT(ffnrt_activation_forward(ctx, &nan_alpha, x, y), FFNRT_ERROR_INVALID_ARGUMENT);
    ffnrt_activation_desc prelu = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_PRELU);
    EXPECT(ffnrt_activation_forward(ctx, &prelu, x, y), FFNRT_ERROR_INVALID_ARGUMENT); /* no slopes */
    int64_t three = 3;
    ffnrt_tensor *s3;
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &three, &s3), FFNRT_OK);
    prelu.slopes = s3;
    EXPECT(ffnrt_activation_forward(ctx, &prelu, x, y), FFNRT_ERROR_SHAPE_MISMATCH); /* 3 slopes, 8 channels */
    prelu.channel_axis = 5;
    EXPECT(ffnrt_activation_forward(ctx, &prelu, x, y), FFNRT_ERROR_INVALID_ARGUMENT);
    prelu.slopes = h;
    EXPECT(ffnrt_activation_forward(ctx, &prelu, x, y), FFNRT_ERROR_DTYPE_MISMATCH);
    EXPECT(ffnrt_copy(ctx, x, z), FFNRT_ERROR_SHAPE_MISMATCH);
    ffnrt_activation act;
    EXPECT(ffnrt_activation_from_name("geluu", &act), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_activation_from_name(NULL, &act), FFNRT_ERROR_INVALID_ARGUMENT);

    /* Gradients and the GLU family. */
    EXPECT(ffnrt_activation_backward(ctx, &d, x, NULL, y), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_activation_backward(ctx, &d, x, z, y), FFNRT_ERROR_SHAPE_MISMATCH);
    EXPECT(ffnrt_activation_backward(ctx, &d, x, h, y), FFNRT_ERROR_DTYPE_MISMATCH);
    ffnrt_activation_desc bad_compute = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_GELU);
    bad_compute.compute = (ffnrt_compute)7;
    EXPECT(ffnrt_activation_forward(ctx, &bad_compute, h, hy), FFNRT_ERROR_INVALID_ARGUMENT);
    ffnrt_glu_desc g = FFNRT_GLU_DESC_INIT(FFNRT_SWIGLU);
    int64_t half_shape[2] = {4, 4}, odd_shape[2] = {4, 7};
    ffnrt_tensor *half, *odd;
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, half_shape, &half), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, odd_shape, &odd), FFNRT_OK);
    cr_assert_eq(ffnrt_glu_forward(ctx, &g, x, half), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    EXPECT(ffnrt_glu_forward(NULL, &g, x, half), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_glu_forward(ctx, NULL, x, half), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_glu_forward(ctx, &g, odd, half), FFNRT_ERROR_SHAPE_MISMATCH); /* odd: no halves */
    EXPECT(ffnrt_glu_forward(ctx, &g, x, y), FFNRT_ERROR_SHAPE_MISMATCH);      /* y not halved */
    EXPECT(ffnrt_glu_forward(ctx, &g, x, foreign), FFNRT_ERROR_WRONG_CONTEXT);
    EXPECT(ffnrt_glu_forward_split(ctx, &g, x, z, y), FFNRT_ERROR_SHAPE_MISMATCH);
    EXPECT(ffnrt_glu_forward_split(ctx, &g, x, h, y), FFNRT_ERROR_DTYPE_MISMATCH);
    EXPECT(ffnrt_glu_backward(ctx, &g, x, half, x), FFNRT_ERROR_INVALID_ARGUMENT); /* dx aliases x */
    EXPECT(ffnrt_glu_backward_split(ctx, &g, x, x, x, y, y), FFNRT_ERROR_INVALID_ARGUMENT); /* dgate = dvalue */
    ffnrt_glu_desc bad_glu = FFNRT_GLU_DESC_INIT((ffnrt_glu)42);
    EXPECT(ffnrt_glu_forward(ctx, &bad_glu, x, half), FFNRT_ERROR_INVALID_ARGUMENT);
    ffnrt_glu kind;
    EXPECT(ffnrt_glu_from_name("swiglu2", &kind), FFNRT_ERROR_INVALID_ARGUMENT);

    /* Nothing above changed y or broke the context: a good call still works. */
    float out[32];
    cr_assert_eq(ffnrt_activation_forward(ctx, &d, x, y), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    cr_assert_eq(ffnrt_tensor_read(y, out, sizeof out), FFNRT_OK);
    cr_assert_eq(out[16], 0.0f);
    cr_assert_float_eq(out[17], 0.841344746f, 1e-6f);
    cr_assert_str_empty(ffnrt_context_last_error(ctx));

    ffnrt_tensor_destroy(foreign);
    test_context_done(other);
    /* x, y, ... are freed with their context. */
    test_context_done(ctx);
}

BACKEND_PARAMETERS(errors, context)

ParameterizedTest(ffnrt_backend *b, errors, context)
{
    ffnrt_context *ctx = NULL;
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    EXPECT(ffnrt_context_create(&o, NULL), FFNRT_ERROR_INVALID_ARGUMENT);
    o.backend = (ffnrt_backend)9;
    EXPECT(ffnrt_context_create(&o, &ctx), FFNRT_ERROR_INVALID_ARGUMENT);
    o.backend = *b;
    o.device_name = "no such device anywhere";
    EXPECT(ffnrt_context_create(&o, &ctx), FFNRT_ERROR_DEVICE_NOT_FOUND);
    o.device_name = NULL;
    o.device_index = 4096;
    EXPECT(ffnrt_context_create(&o, &ctx), FFNRT_ERROR_DEVICE_NOT_FOUND);
    o.device_index = 0;
    o.max_workgroup_size = 1u << 30; /* limits can only be lowered */
    EXPECT(ffnrt_context_create(&o, &ctx), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_null(ctx);
    setenv("FFNRT_LIMITS", "max_buffer_range=abc", 1);
    o.max_workgroup_size = 0;
    EXPECT(ffnrt_context_create(&o, &ctx), FFNRT_ERROR_INVALID_ARGUMENT);
    setenv("FFNRT_LIMITS", "no_such_limit=4", 1);
    EXPECT(ffnrt_context_create(&o, &ctx), FFNRT_ERROR_INVALID_ARGUMENT);
    unsetenv("FFNRT_LIMITS");
    cr_assert_null(ctx);
    /* NULL handles are harmless where the API says so. */
    ffnrt_context_destroy(NULL);
    ffnrt_tensor_destroy(NULL);
    cr_assert_str_not_empty(ffnrt_context_last_error(NULL));
    EXPECT(ffnrt_context_get_device_info(NULL, NULL), FFNRT_ERROR_INVALID_ARGUMENT);
    EXPECT(ffnrt_context_last_op_time(NULL, NULL), FFNRT_ERROR_INVALID_ARGUMENT);
}

BACKEND_PARAMETERS(errors, compile_failure)

/* A kernel that does not compile: a status, the compiler's log, and a
 * context that still tears down cleanly. */
ParameterizedTest(ffnrt_backend *b, errors, compile_failure)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    float v[4] = {1, 2, 3, 4};
    ffnrt_tensor *x = test_tensor_1d(ctx, 4, v);
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_SILU);
    setenv("FFNRT_INJECT_COMPILE_ERROR", "1", 1); /* read at each kernel build */
    EXPECT(ffnrt_activation_forward(ctx, &d, x, x), FFNRT_ERROR_COMPILE_FAILED);
    unsetenv("FFNRT_INJECT_COMPILE_ERROR");
    cr_assert(strstr(ffnrt_context_build_log(ctx), "FFNRT_INJECT_COMPILE_ERROR") != NULL,
              "the build log does not show the compiler's message: \"%s\"", ffnrt_context_build_log(ctx));
    float out[4];
    test_read(x, out, 4);
    cr_assert_arr_eq(out, v, sizeof v, "a failed op changed its input");
    test_context_done(ctx);
}

Test(errors, status_strings)
{
    for (int s = 0; s < FFNRT_STATUS_COUNT; s++) {
        cr_assert_not_null(ffnrt_status_string((ffnrt_status)s));
        for (int t = 0; t < s; t++)
            cr_assert_str_neq(ffnrt_status_string((ffnrt_status)s), ffnrt_status_string((ffnrt_status)t));
    }
    cr_assert_str_eq(ffnrt_status_string((ffnrt_status)1000), "unknown status");
    cr_assert_eq(ffnrt_dtype_size((ffnrt_dtype)9), 0);
}

/* With no driver installed a backend is reported unavailable, and the
 * library still loads and serves the other one. */
Test(errors, backend_without_driver)
{
#ifdef _WIN32
    /* Here the loaders find drivers in the registry, and under Wine the
     * host's loaders read the variables this process started with, which
     * setenv cannot change: scripts/windows-check starts this test with
     * them set and FFNRT_TEST_DRIVERS_HIDDEN=1; the suite's run says so. */
    const char *hidden = getenv("FFNRT_TEST_DRIVERS_HIDDEN");
    if (!hidden || strcmp(hidden, "1") != 0)
        cr_skip_test("the drivers are hidden at the process's start on Windows (FFNRT_TEST_DRIVERS_HIDDEN=1)");
#endif
    setenv("OCL_ICD_VENDORS", "/nonexistent-ffnrt-test", 1);
    setenv("OPENCL_VENDOR_PATH", "/nonexistent-ffnrt-test", 1);
    setenv("VK_ICD_FILENAMES", "/nonexistent-ffnrt-test.json", 1);
    setenv("VK_DRIVER_FILES", "/nonexistent-ffnrt-test.json", 1);
    for (int b = 0; b < TEST_BACKENDS; b++) {
        EXPECT(ffnrt_backend_available(test_backends[b]), FFNRT_ERROR_BACKEND_UNAVAILABLE);
        ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
        o.backend = test_backends[b];
        ffnrt_context *ctx = NULL;
        EXPECT(ffnrt_context_create(&o, &ctx), FFNRT_ERROR_BACKEND_UNAVAILABLE);
        cr_assert_null(ctx);
    }
    size_t n = 99;
    cr_assert_eq(ffnrt_device_count(&n), FFNRT_OK);
    cr_assert_eq(n, 0);
}

/* Found by fuzz/fuzz_api.c: converting a float of magnitude 256 or more
 * (or Inf, NaN) to fp16 on the host converted |f| * 2^24 to uint, which
 * overflows (undefined; UBSan's float-cast-overflow, on in the sanitizer
 * run). The results must be the rounded halves. */
Test(errors, f16_conversion_of_large_values)
{
    cr_assert_eq(ffnrt_f32_to_f16(300.0f), 0x5cb0);
    cr_assert_eq(ffnrt_f32_to_f16(-300.0f), 0xdcb0);
    cr_assert_eq(ffnrt_f32_to_f16(65504.0f), 0x7bff);
    cr_assert_eq(ffnrt_f32_to_f16(1e30f), 0x7c00);
    cr_assert_eq(ffnrt_f32_to_f16(INFINITY), 0x7c00);
    cr_assert_eq(ffnrt_f32_to_f16(-INFINITY), 0xfc00);
    cr_assert_eq(ffnrt_f32_to_f16(NAN) & 0x7e00, 0x7e00);
    cr_assert_eq(ffnrt_f32_to_f16(0x1p-24f), 0x0001);
    cr_assert_eq(ffnrt_f32_to_f16(-0x1p-15f), 0x8200);
    float big[4] = {1e30f, -INFINITY, 512.0f, 3.4028235e38f};
    uint16_t h[4];
    ffnrt_f32_to_f16_array(big, h, 4);
    cr_assert_eq(h[0], 0x7c00);
    cr_assert_eq(h[1], 0xfc00);
    cr_assert_eq(h[2], 0x6000);
    cr_assert_eq(h[3], 0x7c00);
}

/* Found by fuzz/fuzz_api.c: rounding up to a huge multiple overflowed
 * int64 (g + multiple - 1). */
Test(errors, gated_hidden_huge_multiple)
{
    cr_assert_eq(ffnrt_ffn_gated_hidden(16384, 256), 11008);
    cr_assert_eq(ffnrt_ffn_gated_hidden(12, 1), 8);
    cr_assert_eq(ffnrt_ffn_gated_hidden(11, INT64_MAX), INT64_MAX);
    cr_assert_eq(ffnrt_ffn_gated_hidden(INT64_MAX / 2, INT64_MAX - 1), INT64_MAX - 1);
    cr_assert_eq(ffnrt_ffn_gated_hidden(INT64_MAX / 2, 1), (INT64_MAX - 1) / 3);
    cr_assert_eq(ffnrt_ffn_gated_hidden(INT64_MAX, 256), 0);
    cr_assert_eq(ffnrt_ffn_gated_hidden(1, 1), 0);
}

/* Figures past 64 bits are refused, not wrapped: d = h = 2^32 - 1 with
 * INT64_MAX tokens returned OK with wrapped numbers. */
Test(errors, ffn_cost_overflow)
{
    ffnrt_ffn_desc d = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, UINT32_MAX, UINT32_MAX);
    ffnrt_ffn_cost c;
    memset(&c, 0x5a, sizeof c);
    ffnrt_ffn_cost before = c;
    EXPECT(ffnrt_ffn_cost_of(&d, INT64_MAX, FFNRT_FFN_PATH_UNFUSED, &c), FFNRT_ERROR_LIMIT_EXCEEDED);
    cr_assert(strstr(ffnrt_last_error_message(), "64 bits"), "%s", ffnrt_last_error_message());
    cr_assert_eq(memcmp(&c, &before, sizeof c), 0, "out changed on failure");
    EXPECT(ffnrt_ffn_cost_of(&d, INT64_C(1) << 31, FFNRT_FFN_PATH_FUSED, &c), FFNRT_ERROR_LIMIT_EXCEEDED);
    /* Near the edge, exact: 3 * 2^60 weights, 12 * 2^60 bytes at one token. */
    d.d_model = d.hidden = INT64_C(1) << 30;
    uint64_t m = UINT64_C(1) << 30;
    cr_assert_eq(ffnrt_ffn_cost_of(&d, 1, FFNRT_FFN_PATH_FUSED, &c), FFNRT_OK, "%s", ffnrt_last_error_message());
    cr_assert_eq(c.parameters, 3 * m * m);
    cr_assert_eq(c.weight_bytes, 12 * m * m);
    cr_assert_eq(c.flops, 2 * 3 * m * m + 2 * m);
    /* A training step's figures pass 64 bits there: saturated, not wrapped. */
    cr_assert_eq(c.train_peak_bytes, UINT64_MAX);
}

BACKEND_PARAMETERS(errors, empty_tensors_with_huge_dimensions)

/* Found by fuzz/fuzz_api.c: a tensor with a 0 dimension is empty whatever
 * its other dimensions, so those may be huge; shape checks must not
 * overflow on them (the GLU halves check doubled y's last dimension). */
ParameterizedTest(ffnrt_backend *b, errors, empty_tensors_with_huge_dimensions)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    int64_t xs[2] = {0, INT64_C(1) << 62}, ys[2] = {0, (INT64_C(1) << 62) + 3}, hs[2] = {0, INT64_C(1) << 61};
    ffnrt_tensor *x, *y, *h;
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, xs, &x), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, ys, &y), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, hs, &h), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    ffnrt_glu_desc g = FFNRT_GLU_DESC_INIT(FFNRT_GEGLU);
    EXPECT(ffnrt_glu_forward(ctx, &g, x, y), FFNRT_ERROR_SHAPE_MISMATCH);
    EXPECT(ffnrt_glu_backward(ctx, &g, x, y, h), FFNRT_ERROR_SHAPE_MISMATCH);
    cr_assert_eq(ffnrt_glu_forward(ctx, &g, x, h), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_GELU);
    cr_assert_eq(ffnrt_activation_forward(ctx, &d, x, x), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    test_context_done(ctx);
}

/* ------------------------------------------------------------- aliasing */

/* Every op with more than one tensor argument, with each output in turn
 * made the very tensor of another argument. Where the op allows it (an
 * output that is exactly an input, for kernels that read each element's
 * inputs before writing it) the results must equal those of separate
 * tensors bit for bit; elsewhere the call is refused with a clear status
 * and leaves every tensor unchanged. The table says what each op allows;
 * the library is checked against it, forward and backward. Partial
 * overlaps (two wraps of one app buffer) are in test_interop. */

enum { ALIAS_MAX_ARGS = 6, ALIAS_N = 1001, ALIAS_ROWS = 7, ALIAS_W = 11, ALIAS_D = 8 };

/* Argument shapes. */
typedef enum alias_shape {
    SH_N,     /* [ALIAS_N]: the element-wise ops, PReLU's per-element slopes */
    SH_X2,    /* [ALIAS_ROWS, 2 * ALIAS_W]: the GLU halves layout */
    SH_X1,    /* [ALIAS_ROWS, ALIAS_W] */
    SH_DD,    /* [ALIAS_D, ALIAS_D]: an FFN with tokens = d_model = hidden */
    SH_D      /* [ALIAS_D]: one token, a bias */
} alias_shape;

typedef struct alias_op {
    const char *name;
    int nin, nout; /* args: inputs first, then outputs */
    alias_shape shape[ALIAS_MAX_ARGS];
    int same_ok;   /* an output may be exactly an input */
    int f32_only;
    ffnrt_status (*run)(ffnrt_context *ctx, ffnrt_tensor *const *a);
} alias_op;

static ffnrt_status run_gelu(ffnrt_context *ctx, ffnrt_tensor *const *a)
{
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_GELU);
    return ffnrt_activation_forward(ctx, &d, a[0], a[1]);
}

static ffnrt_status run_prelu(ffnrt_context *ctx, ffnrt_tensor *const *a)
{
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_PRELU);
    d.slopes = a[1];
    return ffnrt_activation_forward(ctx, &d, a[0], a[2]);
}

static ffnrt_status run_silu_backward(ffnrt_context *ctx, ffnrt_tensor *const *a)
{
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_SILU);
    return ffnrt_activation_backward(ctx, &d, a[0], a[1], a[2]);
}

static ffnrt_status run_prelu_backward(ffnrt_context *ctx, ffnrt_tensor *const *a)
{
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_PRELU);
    d.slopes = a[2];
    return ffnrt_activation_backward(ctx, &d, a[0], a[1], a[3]);
}

static ffnrt_status run_copy(ffnrt_context *ctx, ffnrt_tensor *const *a) { return ffnrt_copy(ctx, a[0], a[1]); }

static ffnrt_status run_swiglu_split(ffnrt_context *ctx, ffnrt_tensor *const *a)
{
    ffnrt_glu_desc g = FFNRT_GLU_DESC_INIT(FFNRT_SWIGLU);
    return ffnrt_glu_forward_split(ctx, &g, a[0], a[1], a[2]);
}

static ffnrt_status run_geglu_split_backward(ffnrt_context *ctx, ffnrt_tensor *const *a)
{
    ffnrt_glu_desc g = FFNRT_GLU_DESC_INIT(FFNRT_GEGLU);
    return ffnrt_glu_backward_split(ctx, &g, a[0], a[1], a[2], a[3], a[4]);
}

static ffnrt_status run_glu_halves(ffnrt_context *ctx, ffnrt_tensor *const *a)
{
    ffnrt_glu_desc g = FFNRT_GLU_DESC_INIT(FFNRT_GLU);
    return ffnrt_glu_forward(ctx, &g, a[0], a[1]);
}

static ffnrt_status run_reglu_halves_backward(ffnrt_context *ctx, ffnrt_tensor *const *a)
{
    ffnrt_glu_desc g = FFNRT_GLU_DESC_INIT(FFNRT_REGLU);
    return ffnrt_glu_backward(ctx, &g, a[0], a[1], a[2]);
}

/* A dense layer over the tensors (x, w_in, b_in, w_out, b_out; y), made
 * for the call; autotune takes the same checks as forward. */
static ffnrt_status run_ffn(ffnrt_context *ctx, ffnrt_tensor *const *a, int autotune)
{
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_DENSE, ALIAS_D, ALIAS_D);
    desc.bias = 1;
    ffnrt_ffn_weight_tensors w = {0};
    w.w_in = a[1], w.b_in = a[2], w.w_out = a[3], w.b_out = a[4];
    ffnrt_ffn *layer;
    ffnrt_status st = ffnrt_ffn_create_from_tensors(ctx, &desc, &w, &layer);
    cr_assert_eq(st, FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    st = autotune ? ffnrt_ffn_autotune(layer, a[0], a[5]) : ffnrt_ffn_forward(layer, a[0], a[5]);
    ffnrt_ffn_destroy(layer);
    return st;
}

static ffnrt_status run_ffn_forward(ffnrt_context *ctx, ffnrt_tensor *const *a) { return run_ffn(ctx, a, 0); }
static ffnrt_status run_ffn_autotune(ffnrt_context *ctx, ffnrt_tensor *const *a) { return run_ffn(ctx, a, 1); }

static const alias_op alias_ops[] = {
    {"activation_forward", 1, 1, {SH_N, SH_N}, 1, 0, run_gelu},
    {"activation_forward prelu", 2, 1, {SH_N, SH_N, SH_N}, 1, 0, run_prelu},
    {"activation_backward", 2, 1, {SH_N, SH_N, SH_N}, 1, 0, run_silu_backward},
    {"activation_backward prelu", 3, 1, {SH_N, SH_N, SH_N, SH_N}, 1, 0, run_prelu_backward},
    {"copy", 1, 1, {SH_N, SH_N}, 1, 0, run_copy},
    {"glu_forward_split", 2, 1, {SH_N, SH_N, SH_N}, 1, 0, run_swiglu_split},
    {"glu_backward_split", 3, 2, {SH_N, SH_N, SH_N, SH_N, SH_N}, 1, 0, run_geglu_split_backward},
    {"glu_forward", 1, 1, {SH_X2, SH_X1}, 0, 0, run_glu_halves},
    {"glu_backward", 2, 1, {SH_X2, SH_X1, SH_X2}, 0, 0, run_reglu_halves_backward},
    {"ffn_forward", 5, 1, {SH_DD, SH_DD, SH_D, SH_DD, SH_D, SH_DD}, 0, 1, run_ffn_forward},
    {"ffn_forward one token", 5, 1, {SH_D, SH_DD, SH_D, SH_DD, SH_D, SH_D}, 0, 1, run_ffn_forward},
    {"ffn_autotune", 5, 1, {SH_DD, SH_DD, SH_D, SH_DD, SH_D, SH_DD}, 0, 1, run_ffn_autotune},
};

static ffnrt_tensor *alias_tensor(ffnrt_context *ctx, alias_shape s, ffnrt_dtype dtype, int seed)
{
    static const int64_t shapes[][2] = {
        [SH_N] = {ALIAS_N, 0}, [SH_X2] = {ALIAS_ROWS, 2 * ALIAS_W}, [SH_X1] = {ALIAS_ROWS, ALIAS_W},
        [SH_DD] = {ALIAS_D, ALIAS_D}, [SH_D] = {ALIAS_D, 0}};
    ffnrt_tensor *t;
    size_t ndim = shapes[s][1] ? 2 : 1;
    cr_assert_eq(ffnrt_tensor_create(ctx, dtype, ndim, shapes[s], &t), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    size_t n = ffnrt_tensor_numel(t);
    float *v = malloc(n * sizeof *v);
    uint16_t *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++)
        v[i] = (float)((int)((i * 37u + (size_t)seed * 101u) % 200u) - 100) / 25.0f;
    if (dtype == FFNRT_DTYPE_F16)
        ffnrt_f32_to_f16_array(v, h, n);
    cr_assert_eq(ffnrt_tensor_write(t, dtype == FFNRT_DTYPE_F16 ? (void *)h : (void *)v, ffnrt_tensor_bytes(t)),
                 FFNRT_OK);
    free(v);
    free(h);
    return t;
}

static void *alias_read(const ffnrt_tensor *t)
{
    void *b = malloc(ffnrt_tensor_bytes(t) + 1);
    cr_assert_eq(ffnrt_tensor_read(t, b, ffnrt_tensor_bytes(t)), FFNRT_OK);
    return b;
}

/* Runs op with output `out` made the tensor of argument `target`; ref
 * holds the outputs of a run with separate tensors (NULL when every case
 * of the op is refused). */
static void alias_case(ffnrt_context *ctx, const alias_op *op, ffnrt_dtype dtype, int out, int target, void **ref)
{
    int n = op->nin + op->nout;
    ffnrt_tensor *a[ALIAS_MAX_ARGS] = {0};
    for (int k = 0; k < n; k++)
        if (k != out)
            a[k] = alias_tensor(ctx, op->shape[k], dtype, k);
    a[out] = a[target];
    void *before[ALIAS_MAX_ARGS] = {0};
    for (int k = 0; k < n; k++)
        if (k != out)
            before[k] = alias_read(a[k]);
    int same_shape = op->shape[out] == op->shape[target];
    int allowed = same_shape && op->same_ok && target < op->nin;
    ffnrt_status want = !same_shape ? FFNRT_ERROR_SHAPE_MISMATCH : allowed ? FFNRT_OK : FFNRT_ERROR_INVALID_ARGUMENT;
    ffnrt_status st = op->run(ctx, a);
    const char *msg = ffnrt_context_last_error(ctx);
    ffnrt_device_info info;
    ffnrt_context_get_device_info(ctx, &info);
    cr_assert_eq(st, want, "%s (%s, %s): output %d as argument %d: %s, expected %s (%s)", op->name,
                 ffnrt_backend_name(info.backend), ffnrt_dtype_name(dtype), out, target, ffnrt_status_string(st),
                 ffnrt_status_string(want), msg);
    if (want == FFNRT_ERROR_INVALID_ARGUMENT)
        cr_assert(strstr(msg, "memory"), "%s: the refusal does not say why: %s", op->name, msg);
    for (int k = 0; k < n; k++) {
        if (k == out)
            continue;
        void *now = alias_read(a[k]);
        size_t bytes = ffnrt_tensor_bytes(a[k]);
        if (st != FFNRT_OK || k < op->nin) {
            if (k != target || st != FFNRT_OK)
                cr_assert_eq(memcmp(now, before[k], bytes), 0, "%s: argument %d changed", op->name, k);
        } else {
            cr_assert_eq(memcmp(now, ref[k - op->nin], bytes), 0, "%s: output %d differs with output %d aliased",
                         op->name, k, out);
        }
        if (st == FFNRT_OK && k == target)
            cr_assert_eq(memcmp(now, ref[out - op->nin], bytes), 0,
                         "%s (%s): output %d made argument %d gives other results", op->name,
                         ffnrt_dtype_name(dtype), out, target);
        free(now);
        free(before[k]);
    }
    for (int k = 0; k < n; k++)
        if (k != out)
            ffnrt_tensor_destroy(a[k]);
}

/* The outputs of op with a tensor for each argument. */
static void alias_reference(ffnrt_context *ctx, const alias_op *op, ffnrt_dtype dtype, void **ref)
{
    int n = op->nin + op->nout;
    ffnrt_tensor *a[ALIAS_MAX_ARGS];
    for (int k = 0; k < n; k++)
        a[k] = alias_tensor(ctx, op->shape[k], dtype, k);
    cr_assert_eq(op->run(ctx, a), FFNRT_OK, "%s: %s", op->name, ffnrt_context_last_error(ctx));
    for (int k = op->nin; k < n; k++)
        ref[k - op->nin] = alias_read(a[k]);
    for (int k = 0; k < n; k++)
        ffnrt_tensor_destroy(a[k]);
}

BACKEND_PARAMETERS(errors, aliasing)
ParameterizedTest(ffnrt_backend *b, errors, aliasing)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    static const ffnrt_dtype dtypes[2] = {FFNRT_DTYPE_F32, FFNRT_DTYPE_F16};
    for (size_t i = 0; i < sizeof alias_ops / sizeof alias_ops[0]; i++) {
        const alias_op *op = &alias_ops[i];
        int n = op->nin + op->nout;
        for (int d = 0; d < (op->f32_only ? 1 : 2); d++) {
            int any_allowed = 0;
            for (int out = op->nin; out < n; out++)
                for (int t = 0; t < op->nin; t++)
                    any_allowed |= op->same_ok && op->shape[out] == op->shape[t];
            void *ref[2] = {NULL, NULL};
            if (any_allowed)
                alias_reference(ctx, op, dtypes[d], ref);
            /* Each output as each other argument (a pair of outputs once). */
            for (int out = op->nin; out < n; out++)
                for (int t = 0; t < n; t++)
                    if (t != out && !(t >= op->nin && t < out))
                        alias_case(ctx, op, dtypes[d], out, t, ref);
            free(ref[0]);
            free(ref[1]);
        }
    }
    test_context_done(ctx);
}
