/* Shared by the device suites: which devices to run on, contexts with the
 * validation layer, and helpers to move floats in and out. */
#ifndef FFNRT_TEST_DEVICE_FIXTURE_H
#define FFNRT_TEST_DEVICE_FIXTURE_H

#include "ffnrt.h"
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
/* The C library of mingw-w64 has no setenv: these set the variable
 * through the CRT's _putenv, which getenv and _wgetenv (ffnrt's
 * ffnrt_env_get) both read. */
int setenv(const char *name, const char *value, int overwrite);
int unsetenv(const char *name);
#endif

/* Every test runs on the first device of each backend. A backend with no
 * device fails the suite unless FFNRT_TEST_ALLOW_MISSING=1 (for machines
 * that truly lack one); CI never sets it. */
#define TEST_BACKENDS (FFNRT_BACKEND_COUNT - 1)
extern ffnrt_backend test_backends[TEST_BACKENDS];

/* The parameters of a test that runs once per backend (its argument is an
 * ffnrt_backend *). */
#define BACKEND_PARAMETERS(suite, test)                                          \
    ParameterizedTestParameters(suite, test)                                     \
    {                                                                            \
        static ffnrt_backend cases[TEST_BACKENDS];                               \
        memcpy(cases, test_backends, sizeof cases);                              \
        return cr_make_param_array(ffnrt_backend, cases, TEST_BACKENDS);         \
    }

/* Whether the layer is enabled from outside the process, where no test
 * can turn it off (FFNRT_TEST_VALIDATION=outside: scripts/windows-check
 * enables the host's for everything under Wine and reads its messages in
 * the logs). A test that feeds the driver what the layer must report (a
 * cache entry of valid SPIR-V the driver refuses) skips there; the script
 * runs it again without the layer. */
static inline int test_validation_from_outside(void)
{
    const char *v = getenv("FFNRT_TEST_VALIDATION");
    return v && strcmp(v, "outside") == 0;
}

/* Whether the suites ask for the Khronos validation layer (Vulkan): yes,
 * unless FFNRT_TEST_VALIDATION=0 or =outside says it cannot be asked for
 * there: Wine's vulkan-1.dll offers no layers. Every Linux run asks for
 * it, over the same kernels. */
static inline int test_validation_wanted(void)
{
    const char *v = getenv("FFNRT_TEST_VALIDATION");
    return !(v && strcmp(v, "0") == 0) && !test_validation_from_outside();
}

/* A context on the backend's first device, Vulkan with validation on
 * (test_validation_wanted);
 * NULL (with the test skipped) only where a missing backend is allowed.
 * extra may be NULL; it sets limits and other options. */
ffnrt_context *test_context(ffnrt_backend backend, const ffnrt_context_options *extra);
/* test_context with FFNRT_LIMITS extended by extra ("int64_words=0"): the
 * variable as it was is kept (the profile runs set it) and restored. */
ffnrt_context *test_context_with_limits(ffnrt_backend backend, const char *extra);
/* Asserts the validation layer stayed silent, then destroys the context. */
void test_context_done(ffnrt_context *ctx);

ffnrt_tensor *test_tensor_1d(ffnrt_context *ctx, size_t n, const float *values);
void test_read(const ffnrt_tensor *t, float *out, size_t n);

/* Normwise relative error ||y - ref||_2 / ||ref||_2 (||y||_2 where ref
 * is zero; infinite when y holds a NaN): the FFN and gradient suites'
 * measure. */
double test_rel_error(const float *y, const double *ref, size_t n);

/* Whether fp32 subnormals must come out exactly on this device. */
int test_keeps_subnormals(ffnrt_context *ctx);

#endif
