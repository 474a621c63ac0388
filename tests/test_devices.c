/* Both test devices are found, described, and chosen as asked. */
#include "device_fixture.h"

#include <stdlib.h>
#include <string.h>

Test(devices, every_backend_has_a_device)
{
    for (int b = 0; b < TEST_BACKENDS; b++) {
        ffnrt_status st = ffnrt_backend_available(test_backends[b]);
        const char *allow = getenv("FFNRT_TEST_ALLOW_MISSING");
        if (st != FFNRT_OK && allow && strcmp(allow, "1") == 0)
            continue;
        cr_assert_eq(st, FFNRT_OK, "%s: %s", ffnrt_backend_name(test_backends[b]), ffnrt_last_error_message());
    }
}

Test(devices, info_is_complete)
{
    size_t n = 0;
    cr_assert_eq(ffnrt_device_count(&n), FFNRT_OK);
    cr_assert_gt(n, 0, "no device found");
    for (size_t i = 0; i < n; i++) {
        ffnrt_device_info d;
        cr_assert_eq(ffnrt_device_get_info(i, &d), FFNRT_OK);
        cr_assert(d.backend > FFNRT_BACKEND_ANY && d.backend < FFNRT_BACKEND_COUNT);
        cr_assert_str_not_empty(d.name);
        cr_assert_str_not_empty(d.vendor);
        cr_assert_str_not_empty(d.driver_version);
        cr_assert_str_not_empty(d.api_version);
        cr_assert_gt(d.max_workgroup_size, 0);
        cr_assert_gt(d.max_workgroup_count[0], 0);
        cr_assert_gt(d.max_buffer_range, 0);
        cr_assert_geq(d.max_allocation, 4096);
        cr_assert_gt(d.memory_size, 0);
        cr_assert_gt(d.shared_memory_size, 0);
        if (d.backend == FFNRT_BACKEND_VULKAN)
            cr_assert_gt(d.subgroup_size, 0, "Vulkan 1.1 reports a subgroup size");
    }
    ffnrt_device_info d;
    cr_assert_eq(ffnrt_device_get_info(n, &d), FFNRT_ERROR_DEVICE_NOT_FOUND);
    cr_assert_eq(ffnrt_device_get_info(0, NULL), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(ffnrt_device_count(NULL), FFNRT_ERROR_INVALID_ARGUMENT);
}

/* The backend of the context a device text chooses, given as FFNRT_DEVICE
 * or as options.device (a command line's --device), which wins over
 * FFNRT_DEVICE and names itself in errors and in the plan. */
static ffnrt_backend backend_for(const char *spec, int as_option)
{
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    if (as_option)
        o.device = spec;
    else
        setenv("FFNRT_DEVICE", spec, 1);
    ffnrt_context *ctx = NULL;
    ffnrt_status st = ffnrt_context_create(&o, &ctx);
    if (!as_option)
        unsetenv("FFNRT_DEVICE");
    cr_assert_eq(st, FFNRT_OK, "%s=%s: %s", as_option ? "options.device" : "FFNRT_DEVICE", spec,
                 ffnrt_last_error_message());
    ffnrt_device_info info;
    cr_assert_eq(ffnrt_context_get_device_info(ctx, &info), FFNRT_OK);
    ffnrt_plan *plan = NULL;
    cr_assert_eq(ffnrt_context_plan(ctx, &plan), FFNRT_OK);
    const char *asker = as_option ? "options.device" : "FFNRT_DEVICE";
    cr_expect(strstr(ffnrt_plan_text(plan), asker) != NULL, "%s", ffnrt_plan_text(plan));
    ffnrt_plan_destroy(plan);
    ffnrt_context_destroy(ctx);
    return info.backend;
}

Test(devices, chosen_by_environment)
{
    cr_assert_eq(backend_for("vulkan", 0), FFNRT_BACKEND_VULKAN);
    cr_assert_eq(backend_for("opencl:0", 0), FFNRT_BACKEND_OPENCL);
    cr_assert_eq(backend_for("vulkan:llvmpipe", 0), FFNRT_BACKEND_VULKAN);
    cr_assert_eq(backend_for("LLVMPIPE", 0), FFNRT_BACKEND_VULKAN); /* a name, any case */
    /* PoCL's devices are named after the CPU; "pocl" is in their API version. */
    ffnrt_device_info first_cl;
    size_t n = 0;
    cr_assert_eq(ffnrt_device_count(&n), FFNRT_OK);
    for (size_t i = 0; i < n; i++)
        if (ffnrt_device_get_info(i, &first_cl) == FFNRT_OK && first_cl.backend == FFNRT_BACKEND_OPENCL &&
            strstr(first_cl.api_version, "PoCL"))
            cr_assert_eq(backend_for("pocl", 0), FFNRT_BACKEND_OPENCL);
    setenv("FFNRT_DEVICE", "no-such-gpu", 1);
    ffnrt_context *ctx = NULL;
    cr_assert_eq(ffnrt_context_create(NULL, &ctx), FFNRT_ERROR_DEVICE_NOT_FOUND);
    cr_assert(strstr(ffnrt_last_error_message(), "no-such-gpu") != NULL, "%s", ffnrt_last_error_message());
    /* The caller's explicit choice wins over the environment. */
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.backend = FFNRT_BACKEND_OPENCL;
    cr_assert_eq(ffnrt_context_create(&o, &ctx), FFNRT_OK, "%s", ffnrt_last_error_message());
    ffnrt_device_info info;
    ffnrt_context_get_device_info(ctx, &info);
    cr_assert_eq(info.backend, FFNRT_BACKEND_OPENCL);
    ffnrt_context_destroy(ctx);
    unsetenv("FFNRT_DEVICE");
}

Test(devices, chosen_by_device_option)
{
    cr_assert_eq(backend_for("vulkan", 1), FFNRT_BACKEND_VULKAN);
    cr_assert_eq(backend_for("opencl:0", 1), FFNRT_BACKEND_OPENCL);
    cr_assert_eq(backend_for("vulkan:llvmpipe", 1), FFNRT_BACKEND_VULKAN);
    cr_assert_eq(backend_for("LLVMPIPE", 1), FFNRT_BACKEND_VULKAN);
    /* Over the environment, as every option is. */
    setenv("FFNRT_DEVICE", "opencl", 1);
    cr_assert_eq(backend_for("vulkan", 1), FFNRT_BACKEND_VULKAN);
    unsetenv("FFNRT_DEVICE");
    /* "" is not set: the best device, as with NULL. */
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.device = "";
    ffnrt_context *ctx = NULL;
    cr_assert_eq(ffnrt_context_create(&o, &ctx), FFNRT_OK, "%s", ffnrt_last_error_message());
    ffnrt_context_destroy(ctx);
    /* Refused, each naming the option. */
    static const struct {
        const char *spec;
        ffnrt_status status;
        const char *says;
    } bad[] = {{"no-such-gpu", FFNRT_ERROR_DEVICE_NOT_FOUND, "options.device"},
               {"vulkan:", FFNRT_ERROR_INVALID_ARGUMENT, "options.device=vulkan:"},
               {"opencl:-1", FFNRT_ERROR_INVALID_ARGUMENT, "options.device=opencl:-1"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.device = bad[i].spec;
        ctx = NULL;
        cr_assert_eq(ffnrt_context_create(&o, &ctx), bad[i].status, "%s", bad[i].spec);
        cr_assert_null(ctx);
        cr_assert(strstr(ffnrt_last_error_message(), bad[i].says) != NULL, "%s: %s", bad[i].spec,
                  ffnrt_last_error_message());
    }
    /* One device choice at a time: the text or the fields, not both. */
    o.device = "vulkan";
    o.backend = FFNRT_BACKEND_OPENCL;
    cr_assert_eq(ffnrt_context_create(&o, &ctx), FFNRT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(ffnrt_last_error_message(), "not both") != NULL, "%s", ffnrt_last_error_message());
}

/* The expected time of the device choice's reference work on a device
 * (its calibration: measured once, then read from the disk cache). */
static double expected_ms(ffnrt_backend backend, uint32_t index)
{
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.backend = backend;
    o.device_index = (int)index;
    ffnrt_context *ctx = NULL;
    cr_assert_eq(ffnrt_context_create(&o, &ctx), FFNRT_OK, "%s", ffnrt_last_error_message());
    double gbps, gflops, us;
    cr_assert_eq(ffnrt_context_calibrate(ctx, &gbps, &gflops, &us), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    ffnrt_context_destroy(ctx);
    return 1e3 * (100e6 / (1e9 * gbps) + 10e9 / (1e9 * gflops)) + 50.0 * us / 1e3;
}

Test(devices, chosen_by_name_and_automatically)
{
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.device_name = "llvmpipe";
    ffnrt_context *ctx = NULL;
    cr_assert_eq(ffnrt_context_create(&o, &ctx), FFNRT_OK, "%s", ffnrt_last_error_message());
    ffnrt_device_info info;
    ffnrt_context_get_device_info(ctx, &info);
    cr_assert(strstr(info.name, "llvmpipe") != NULL);
    ffnrt_context_destroy(ctx);
    /* The automatic choice: both CPU drivers tie on type, and the one
     * expected to be faster by the figures (here PoCL, about 5x on this
     * machine) is opened; the plan shows the figures behind it. */
    cr_assert_eq(ffnrt_context_create(NULL, &ctx), FFNRT_OK, "%s", ffnrt_last_error_message());
    ffnrt_context_get_device_info(ctx, &info);
    ffnrt_plan *plan = NULL;
    cr_assert_eq(ffnrt_context_plan(ctx, &plan), FFNRT_OK);
    size_t n = 0;
    cr_assert_eq(ffnrt_device_count(&n), FFNRT_OK);
    int cpus = 0;
    for (size_t i = 0; i < n; i++) {
        ffnrt_device_info d;
        cr_assert_eq(ffnrt_device_get_info(i, &d), FFNRT_OK);
        cpus += d.type == FFNRT_DEVICE_TYPE_CPU;
    }
    if (info.type == FFNRT_DEVICE_TYPE_CPU && cpus > 1) {
        const char *why = ffnrt_plan_text(plan);
        cr_expect(strstr(why, "fastest by calibration") != NULL || strstr(why, "within 10%") != NULL, "%s", why);
        double chosen = expected_ms(info.backend, info.index);
        for (size_t i = 0; i < n; i++) {
            ffnrt_device_info d;
            ffnrt_device_get_info(i, &d);
            if (d.type == FFNRT_DEVICE_TYPE_CPU && (d.backend != info.backend || d.index != info.index))
                cr_expect_leq(chosen, 1.1 * expected_ms(d.backend, d.index),
                              "%s was opened, but %s is expected to be faster:\n%s", info.name, d.name, why);
        }
    }
    ffnrt_plan_destroy(plan);
    ffnrt_context_destroy(ctx);
}
