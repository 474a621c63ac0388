/* The check of the plain test programs (test_platform, test_gguf_files):
 * no Criterion, so that they run wherever ffnrt builds (Windows under
 * Wine, aarch64 under qemu). CHECK counts a pass or prints the failure;
 * the program ends with "N passed, N failed" from the two counts. */
#ifndef FFNRT_TESTS_PLAIN_CHECK_H
#define FFNRT_TESTS_PLAIN_CHECK_H

#include <stdio.h>

static int passed, failed;

#define CHECK(cond, ...)                                                                                    \
    do {                                                                                                    \
        if (cond) {                                                                                         \
            passed++;                                                                                       \
        } else {                                                                                            \
            failed++;                                                                                       \
            printf("FAILED at line %d: %s: ", __LINE__, #cond);                                             \
            printf(__VA_ARGS__);                                                                            \
            printf("\n");                                                                                   \
        }                                                                                                   \
    } while (0)

#endif
