/* Lowered limits, as a phone GPU would report them: dispatches are split
 * over buffer ranges and workgroup counts, and results stay exact. */
#include "device_fixture.h"
#include "reference.h"

#include <criterion/parameterized.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct limits_case {
    ffnrt_backend backend;
    uint64_t range;
    uint32_t count;
    uint32_t workgroup;
} limits_case;

ParameterizedTestParameters(limits, split_dispatches)
{
    static limits_case cases[TEST_BACKENDS * 3];
    int k = 0;
    for (int b = 0; b < TEST_BACKENDS; b++) {
        cases[k++] = (limits_case){test_backends[b], 65536, 0, 0};  /* ranges bound the split */
        cases[k++] = (limits_case){test_backends[b], 0, 8, 32};     /* workgroup counts bound it */
        cases[k++] = (limits_case){test_backends[b], 4096, 3, 64};  /* both, and a tiny workgroup */
    }
    return cr_make_param_array(limits_case, cases, k);
}

ParameterizedTest(limits_case *c, limits, split_dispatches)
{
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.max_buffer_range = c->range;
    o.max_workgroup_count = c->count;
    o.max_workgroup_size = c->workgroup;
    ffnrt_context *ctx = test_context(c->backend, &o);
    ffnrt_device_info info;
    cr_assert_eq(ffnrt_context_get_device_info(ctx, &info), FFNRT_OK);
    if (c->range)
        cr_assert_eq(info.max_buffer_range, c->range, "the lowered range is what the context reports");
    /* A count that is not a multiple of anything, with per-channel PReLU
     * slopes so that every split must keep its place in the tensor. */
    const int64_t channels = 7;
    const int64_t shape[2] = {33001, channels};
    size_t n = 33001 * 7;
    float *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    cr_assert(in && out);
    for (size_t i = 0; i < n; i++)
        in[i] = (float)((int)(i % 23) - 11) * 0.5f;
    float slope[7] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f};
    ffnrt_tensor *x = NULL, *y = NULL;
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &x), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &y), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(x, in, n * sizeof *in), FFNRT_OK);
    ffnrt_tensor *s = test_tensor_1d(ctx, 7, slope);
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_PRELU);
    d.slopes = s;
    cr_assert_eq(ffnrt_activation_forward(ctx, &d, x, y), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    test_read(y, out, n);
    for (size_t i = 0; i < n; i++) {
        float want = in[i] >= 0 ? in[i] : slope[i % 7] * in[i];
        cr_assert_eq(out[i], want, "prelu at %zu: %g, expected %g", i, out[i], want);
    }
    ffnrt_activation_desc g = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_GELU);
    cr_assert_eq(ffnrt_activation_forward(ctx, &g, x, x), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    test_read(x, out, n);
    for (size_t i = 0; i < n; i++)
        cr_assert(ulp_error_f32(out[i], ref_gelu(in[i])) <= 4.0, "gelu at %zu: %a for %a", i, out[i], in[i]);
    free(in);
    free(out);
    test_context_done(ctx);
}

BACKEND_PARAMETERS(limits, too_large)

/* Past the device's largest allocation: a clear error, nothing allocated. */
ParameterizedTest(ffnrt_backend *b, limits, too_large)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    ffnrt_device_info info;
    cr_assert_eq(ffnrt_context_get_device_info(ctx, &info), FFNRT_OK);
    int64_t n = (int64_t)(info.max_allocation / 4 + 1);
    ffnrt_tensor *t = NULL;
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &n, &t), FFNRT_ERROR_LIMIT_EXCEEDED);
    cr_assert_null(t);
    cr_assert(strstr(ffnrt_context_last_error(ctx), "allocation") != NULL, "%s", ffnrt_context_last_error(ctx));
    test_context_done(ctx);
}

BACKEND_PARAMETERS(limits, workgroup_size_independent)

/* Results are bit-identical whatever workgroup size and split the device's
 * limits lead to: each element's value depends on its input alone. */
ParameterizedTest(ffnrt_backend *b, limits, workgroup_size_independent)
{
    const size_t n = 100003;
    float *in = malloc(n * sizeof *in), *out[2] = {malloc(n * sizeof(float)), malloc(n * sizeof(float))};
    cr_assert(in && out[0] && out[1]);
    for (size_t i = 0; i < n; i++) {
        uint32_t bits = (uint32_t)(i * 42949u + 17u);
        memcpy(&in[i], &bits, 4);
    }
    for (int v = 0; v < 2; v++) {
        ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
        if (v) {
            o.max_workgroup_size = 32;
            o.max_buffer_range = 16384;
        }
        ffnrt_context *ctx = test_context(*b, &o);
        ffnrt_tensor *x = test_tensor_1d(ctx, n, in);
        ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_GELU);
        cr_assert_eq(ffnrt_activation_forward(ctx, &d, x, x), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
        test_read(x, out[v], n);
        test_context_done(ctx);
    }
    for (size_t i = 0; i < n; i++)
        cr_assert(memcmp(&out[0][i], &out[1][i], 4) == 0 || (isnan(out[0][i]) && isnan(out[1][i])),
                  "gelu(%a): %a with the device's workgroup, %a with 32", in[i], out[0][i], out[1][i]);
    free(in);
    free(out[0]);
    free(out[1]);
}

/* Discrete GPUs reach their buffers through a staging buffer; lavapipe's
 * memory is host-visible, so FFNRT_VULKAN_STAGING=1 forces that path here.
 * 20 MB crosses the 16 MiB staging buffer more than once. */
Test(limits, vulkan_staging_path)
{
    setenv("FFNRT_VULKAN_STAGING", "1", 1);
    ffnrt_context *ctx = test_context(FFNRT_BACKEND_VULKAN, NULL);
    unsetenv("FFNRT_VULKAN_STAGING");
    const size_t n = 5u << 20;
    float *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    cr_assert(in && out);
    for (size_t i = 0; i < n; i++)
        in[i] = (float)((int)(i % 1999) - 999) * 0.01f;
    ffnrt_tensor *x = test_tensor_1d(ctx, n, in);
    ffnrt_tensor *y = test_tensor_1d(ctx, n, NULL);
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_GELU);
    cr_assert_eq(ffnrt_activation_forward(ctx, &d, x, y), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    test_read(y, out, n);
    for (size_t i = 0; i < n; i++)
        cr_assert(ulp_error_f32(out[i], ref_gelu(in[i])) <= 4.0, "gelu(%a) = %a at %zu", in[i], out[i], i);
    test_read(x, out, n); /* and back unchanged */
    cr_assert_arr_eq(in, out, n * sizeof *in);
    free(in);
    free(out);
    test_context_done(ctx);
}
