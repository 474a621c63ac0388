#ifndef FFNRT_CLI_RUN_H
#define FFNRT_CLI_RUN_H
#include "ffnrt.h"
/* `ffnrt run`: an op on numbers from the command line, its statistics and
 * the fp32 control. */
int ffnrt_run_main(int argc, char **argv);
/* One call's statistics, for people. */
void ffnrt_cli_print_stats(const ffnrt_stats *s);
#endif
