/* The plain harness's own test: every way a test can end, counted. ctest
 * (Linux) and scripts/windows-check (Wine) expect exactly
 *   Tested: 10 | Passing: 3 | Failing: 3 | Crashing: 3 | Skipped: 1
 * so a harness that lets a failed assertion go on (fail_assert would then
 * crash), misses a crash or a hang, or runs a disabled test is caught. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <stdlib.h>

Test(harness, every_check_passing)
{
    int a[3] = {1, 2, 3}, b[3] = {1, 2, 3};
    const char *none = NULL;
    cr_assert(1);
    cr_assert_not(0);
    cr_assert_eq(2, 2, "with a message %d", 2);
    cr_assert_neq(2, 3);
    cr_assert_lt(2, 3);
    cr_assert_leq(3, 3);
    cr_assert_gt(3, 2);
    cr_assert_geq(3, 3);
    cr_assert_null(none);
    cr_assert_not_null(a);
    cr_assert_str_eq("ab", "ab");
    cr_assert_str_neq("ab", "ac");
    cr_assert_str_empty("");
    cr_assert_str_not_empty("x");
    cr_assert_float_eq(1.0, 1.05, 0.1);
    cr_assert_arr_eq(a, b, sizeof a);
    cr_expect(1);
    cr_expect_eq(1, 1);
    cr_expect_float_eq(1.0f, 1.0f, 0.0f);
    cr_log_info("all %d checks passed", 20);
}

Test(harness, fail_assert)
{
    cr_assert_eq(1, 2, "one is not %d", 2);
    abort(); /* never reached: the assertion ended the test */
}

Test(harness, fail_expect)
{
    cr_expect_str_eq("a", "b", "an expectation");
    cr_log_info("an expectation lets the test go on");
}

Test(harness, skip)
{
    cr_skip_test("skipped on purpose (%s)", "the harness's own test");
}

Test(harness, crash_abort)
{
    abort();
}

Test(harness, crash_unexpected_exit)
{
    exit(7);
}

Test(harness, hang, .timeout = 1)
{
    for (volatile int spin = 1; spin;)
        ;
}

Test(harness, disabled, .disabled = true)
{
    abort();
}

typedef struct {
    int a, b;
} pair;

ParameterizedTestParameters(harness, parameters)
{
    static pair pairs[] = {{1, 1}, {2, 3}, {4, 4}};
    return cr_make_param_array(pair, pairs, sizeof pairs / sizeof *pairs);
}

ParameterizedTest(pair *p, harness, parameters)
{
    cr_assert_eq(p->a, p->b, "parameter %d, %d", p->a, p->b); /* the second fails */
}
