/* Criterion's parameterized tests on the plain harness (criterion.h says
 * why it exists): each parameter runs in a process of its own. */
#ifndef FFNRT_PLAIN_CRITERION_PARAMETERIZED_H
#define FFNRT_PLAIN_CRITERION_PARAMETERIZED_H

#include "criterion.h"

#define cr_make_param_array(Type, array, count, ...)                                              \
    ((struct criterion_test_params){sizeof(Type), (void *)(array), (size_t)(count)})

#define ParameterizedTestParameters(suite, name) static struct criterion_test_params CR_PLAIN_ID(suite, name, params)(void)

/* The body takes its parameter as declared (Type holds the name, as in
 * Criterion), so the runner calls it through a void * one: every ABI
 * passes the two pointers alike. Through void (*)(void), which GCC's
 * -Wcast-function-type accepts as the neutral type. */
#define ParameterizedTest(Type, suite, name, ...)                                                 \
    static struct criterion_test_params CR_PLAIN_ID(suite, name, params)(void);                   \
    static void CR_PLAIN_ID(suite, name, body)(Type);                                              \
    CR_PLAIN_ENTRY(suite, name, NULL, (void (*)(void *))(void (*)(void))CR_PLAIN_ID(suite, name, body), \
                   CR_PLAIN_ID(suite, name, params), __VA_ARGS__)                                   \
    static void CR_PLAIN_ID(suite, name, body)(Type)

#endif
