#include "device_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
int setenv(const char *name, const char *value, int overwrite)
{
    if (!overwrite && getenv(name))
        return 0;
    size_t n = strlen(name) + strlen(value) + 2;
    char *assignment = malloc(n);
    if (!assignment)
        return -1;
    snprintf(assignment, n, "%s=%s", name, value);
    int rc = _putenv(assignment); /* copies it */
    free(assignment);
    return rc;
}

int unsetenv(const char *name)
{
    return setenv(name, "", 1); /* "NAME=" removes it */
}
#endif

/* Every backend of the public enum, in order (filled before the tests
 * are listed, so a new backend needs no change here). */
ffnrt_backend test_backends[TEST_BACKENDS];

__attribute__((constructor)) static void list_test_backends(void)
{
    for (int i = 0; i < TEST_BACKENDS; i++)
        test_backends[i] = (ffnrt_backend)(i + 1);
}

/* Whether FFNRT_TEST_BACKENDS (a comma list of backend names; unset or
 * empty: all) lists the backend: tests/CMakeLists.txt sets it where a
 * profile run leaves a device out, and says why. A name that is no
 * backend's fails the test, so a typo cannot skip a device unseen. */
static int backend_listed(ffnrt_backend backend)
{
    const char *list = getenv("FFNRT_TEST_BACKENDS");
    if (!list || !*list)
        return 1;
    int listed = 0;
    for (const char *at = list; *at;) {
        size_t len = strcspn(at, ",");
        int known = 0;
        for (int b = 0; b < TEST_BACKENDS; b++) {
            const char *name = ffnrt_backend_name(test_backends[b]);
            if (len == strlen(name) && strncmp(at, name, len) == 0) {
                known = 1;
                listed |= test_backends[b] == backend;
            }
        }
        cr_assert(known, "FFNRT_TEST_BACKENDS=%s: \"%.*s\" is no backend's name", list, (int)len, at);
        at += len + (at[len] == ',');
    }
    return listed;
}

ffnrt_context *test_context(ffnrt_backend backend, const ffnrt_context_options *extra)
{
    if (!backend_listed(backend)) {
        cr_skip_test("%s is not in FFNRT_TEST_BACKENDS=%s (this run covers the other devices: tests/CMakeLists.txt "
                     "says why)",
                     ffnrt_backend_name(backend), getenv("FFNRT_TEST_BACKENDS"));
        return NULL;
    }
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    if (extra)
        o = *extra;
    o.backend = backend;
    o.device_index = 0;
    o.validation = test_validation_wanted(); /* the Khronos layer where the API has one (Vulkan) */
    ffnrt_context *ctx = NULL;
    ffnrt_status st = ffnrt_context_create(&o, &ctx);
    if (st == FFNRT_ERROR_BACKEND_UNAVAILABLE || st == FFNRT_ERROR_DEVICE_NOT_FOUND) {
        const char *allow = getenv("FFNRT_TEST_ALLOW_MISSING");
        if (allow && strcmp(allow, "1") == 0) {
            cr_skip_test("%s has no device here (%s); allowed by FFNRT_TEST_ALLOW_MISSING",
                         ffnrt_backend_name(backend), ffnrt_last_error_message());
            return NULL;
        }
    }
    cr_assert_eq(st, FFNRT_OK, "no %s device: %s", ffnrt_backend_name(backend), ffnrt_last_error_message());
    return ctx;
}

ffnrt_context *test_context_with_limits(ffnrt_backend backend, const char *extra)
{
    const char *limits = getenv("FFNRT_LIMITS");
    char *kept = limits ? strdup(limits) : NULL, spec[512];
    snprintf(spec, sizeof spec, "%s%s%s", kept ? kept : "", kept && *kept ? "," : "", extra);
    cr_assert_eq(setenv("FFNRT_LIMITS", spec, 1), 0);
    ffnrt_context *ctx = test_context(backend, NULL);
    kept ? setenv("FFNRT_LIMITS", kept, 1) : unsetenv("FFNRT_LIMITS");
    free(kept);
    return ctx;
}

void test_context_done(ffnrt_context *ctx)
{
    uint64_t messages = ffnrt_context_validation_messages(ctx);
    ffnrt_context_destroy(ctx);
    cr_assert_eq(messages, 0, "the Vulkan validation layer reported %llu messages (see stderr)",
                 (unsigned long long)messages);
}

ffnrt_tensor *test_tensor_1d(ffnrt_context *ctx, size_t n, const float *values)
{
    int64_t shape = (int64_t)n;
    ffnrt_tensor *t = NULL;
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &shape, &t), FFNRT_OK, "%s",
                 ffnrt_context_last_error(ctx));
    if (values)
        cr_assert_eq(ffnrt_tensor_write(t, values, n * sizeof(float)), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    return t;
}

void test_read(const ffnrt_tensor *t, float *out, size_t n)
{
    cr_assert_eq(ffnrt_tensor_read(t, out, n * sizeof(float)), FFNRT_OK, "%s", ffnrt_last_error_message());
}

int test_keeps_subnormals(ffnrt_context *ctx)
{
    ffnrt_device_info info;
    cr_assert_eq(ffnrt_context_get_device_info(ctx, &info), FFNRT_OK);
    return info.denormals_preserved == 1;
}

double test_rel_error(const float *y, const double *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)y[i] - ref[i];
        num += e * e;
        den += ref[i] * ref[i];
    }
    if (isnan(num))
        return INFINITY;
    return den > 0 ? sqrt(num / den) : sqrt(num);
}
