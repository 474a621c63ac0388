/* ffnrt compare: the seed's controlled comparison (src/cli/compare.c). */
#ifndef FFNRT_COMPARE_CLI_H
#define FFNRT_COMPARE_CLI_H

int ffnrt_compare_main(int argc, char **argv);

#endif
