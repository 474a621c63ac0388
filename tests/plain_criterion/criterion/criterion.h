/* The part of Criterion's API the suites use, on a plain harness
 * (tests/plain_criterion/runner.c): for platforms Criterion is not built
 * for (Windows through mingw-w64: Debian has no mingw Criterion). The
 * suites compile unchanged against either.
 *
 * As in Criterion, every test (every parameter of a parameterized test)
 * runs in a process of its own: the runner starts this program again for
 * each one, so a crash, a leak of global state or an exit ends only that
 * test. An assertion (cr_assert*) ends the test at the first failure; an
 * expectation (cr_expect*) records it and goes on. The message arguments
 * are optional, a format string literal and its values, as in Criterion. */
#ifndef FFNRT_PLAIN_CRITERION_H
#define FFNRT_PLAIN_CRITERION_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#if defined(__MINGW32__) && !defined(__clang__)
#define CR_PLAIN_FORMAT(f, a) __attribute__((format(gnu_printf, f, a)))
#else
#define CR_PLAIN_FORMAT(f, a) __attribute__((format(printf, f, a)))
#endif

/* What a test's trailing designated initializers may set. */
struct criterion_test_extra_data {
    void (*init)(void);
    void (*fini)(void);
    double timeout; /* seconds; 0: none. The runner ends the test's process past it. */
    bool disabled;
    const char *description;
};

/* A parameterized test's parameters (cr_make_param_array). */
struct criterion_test_params {
    size_t size;   /* of one parameter */
    void *params;  /* the first */
    size_t length; /* how many */
};

/* One registered test: exactly one of run and run_param is set. */
struct cr_plain_test {
    const char *suite, *name;
    void (*run)(void);
    void (*run_param)(void *param);
    struct criterion_test_params (*params)(void);
    struct criterion_test_extra_data extra;
};

void cr_plain_register(const struct cr_plain_test *test);
/* A failed check: fatal ends the test (the process) at once. */
void cr_plain_fail(int fatal, const char *file, int line, const char *check, const char *format, ...)
    CR_PLAIN_FORMAT(5, 6);
void cr_plain_skip(const char *format, ...) CR_PLAIN_FORMAT(1, 2) __attribute__((noreturn));
void cr_plain_log(const char *level, const char *format, ...) CR_PLAIN_FORMAT(2, 3);

#define CR_PLAIN_ID(suite, name, part) cr_plain_##suite##_##name##_##part
#define CR_PLAIN_ENTRY(suite, name, run, run_param, params, ...)                                   \
    static const struct cr_plain_test CR_PLAIN_ID(suite, name, entry) = {                        \
        #suite, #name, run, run_param, params, {__VA_ARGS__}};                                    \
    __attribute__((constructor)) static void CR_PLAIN_ID(suite, name, register)(void)             \
    {                                                                                             \
        cr_plain_register(&CR_PLAIN_ID(suite, name, entry));                                      \
    }

#define Test(suite, name, ...)                                                                   \
    static void CR_PLAIN_ID(suite, name, body)(void);                                             \
    CR_PLAIN_ENTRY(suite, name, CR_PLAIN_ID(suite, name, body), NULL, NULL, __VA_ARGS__)          \
    static void CR_PLAIN_ID(suite, name, body)(void)

/* The message of a check: "" makes a missing one an empty format. */
#define CR_PLAIN_CHECK(fatal, cond, check, ...)                                                   \
    do {                                                                                          \
        if (!(cond))                                                                              \
            cr_plain_fail(fatal, __FILE__, __LINE__, check, "" __VA_ARGS__);                      \
    } while (0)
#define CR_PLAIN_CMP(fatal, a, op, b, ...) CR_PLAIN_CHECK(fatal, (a)op(b), #a " " #op " " #b, __VA_ARGS__)
#define CR_PLAIN_FLOAT_EQ(fatal, a, b, eps, ...)                                                  \
    CR_PLAIN_CHECK(fatal, (a) - (b) <= (eps) && (b) - (a) <= (eps), #a " == " #b " within " #eps, __VA_ARGS__)

#define cr_assert(cond, ...) CR_PLAIN_CHECK(1, cond, #cond, __VA_ARGS__)
#define cr_expect(cond, ...) CR_PLAIN_CHECK(0, cond, #cond, __VA_ARGS__)
#define cr_assert_not(cond, ...) CR_PLAIN_CHECK(1, !(cond), "!(" #cond ")", __VA_ARGS__)
#define cr_expect_not(cond, ...) CR_PLAIN_CHECK(0, !(cond), "!(" #cond ")", __VA_ARGS__)
#define cr_assert_fail(...) cr_plain_fail(1, __FILE__, __LINE__, "cr_assert_fail", "" __VA_ARGS__)
#define cr_skip_test(...) cr_plain_skip("" __VA_ARGS__)

#define cr_assert_eq(a, b, ...) CR_PLAIN_CMP(1, a, ==, b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...) CR_PLAIN_CMP(1, a, !=, b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...) CR_PLAIN_CMP(1, a, <, b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...) CR_PLAIN_CMP(1, a, <=, b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...) CR_PLAIN_CMP(1, a, >, b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...) CR_PLAIN_CMP(1, a, >=, b, __VA_ARGS__)
#define cr_expect_eq(a, b, ...) CR_PLAIN_CMP(0, a, ==, b, __VA_ARGS__)
#define cr_expect_neq(a, b, ...) CR_PLAIN_CMP(0, a, !=, b, __VA_ARGS__)
#define cr_expect_lt(a, b, ...) CR_PLAIN_CMP(0, a, <, b, __VA_ARGS__)
#define cr_expect_leq(a, b, ...) CR_PLAIN_CMP(0, a, <=, b, __VA_ARGS__)
#define cr_expect_gt(a, b, ...) CR_PLAIN_CMP(0, a, >, b, __VA_ARGS__)
#define cr_expect_geq(a, b, ...) CR_PLAIN_CMP(0, a, >=, b, __VA_ARGS__)

#define cr_assert_null(p, ...) CR_PLAIN_CHECK(1, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...) CR_PLAIN_CHECK(1, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_expect_null(p, ...) CR_PLAIN_CHECK(0, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_expect_not_null(p, ...) CR_PLAIN_CHECK(0, (p) != NULL, #p " != NULL", __VA_ARGS__)

#define cr_assert_str_eq(a, b, ...) CR_PLAIN_CHECK(1, strcmp(a, b) == 0, #a " == " #b " (strings)", __VA_ARGS__)
#define cr_assert_str_neq(a, b, ...) CR_PLAIN_CHECK(1, strcmp(a, b) != 0, #a " != " #b " (strings)", __VA_ARGS__)
#define cr_expect_str_eq(a, b, ...) CR_PLAIN_CHECK(0, strcmp(a, b) == 0, #a " == " #b " (strings)", __VA_ARGS__)
#define cr_expect_str_neq(a, b, ...) CR_PLAIN_CHECK(0, strcmp(a, b) != 0, #a " != " #b " (strings)", __VA_ARGS__)
#define cr_assert_str_empty(s, ...) CR_PLAIN_CHECK(1, (s)[0] == '\0', #s " is empty", __VA_ARGS__)
#define cr_assert_str_not_empty(s, ...) CR_PLAIN_CHECK(1, (s)[0] != '\0', #s " is not empty", __VA_ARGS__)

#define cr_assert_float_eq(a, b, eps, ...) CR_PLAIN_FLOAT_EQ(1, a, b, eps, __VA_ARGS__)
#define cr_expect_float_eq(a, b, eps, ...) CR_PLAIN_FLOAT_EQ(0, a, b, eps, __VA_ARGS__)
#define cr_assert_arr_eq(a, b, bytes, ...)                                                        \
    CR_PLAIN_CHECK(1, memcmp(a, b, bytes) == 0, #a " == " #b " (" #bytes " bytes)", __VA_ARGS__)

#define cr_log_info(...) cr_plain_log("info", __VA_ARGS__)
#define cr_log_warn(...) cr_plain_log("warn", __VA_ARGS__)
#define cr_log_error(...) cr_plain_log("error", __VA_ARGS__)

#endif
