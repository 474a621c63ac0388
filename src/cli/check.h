#ifndef FFNRT_CLI_CHECK_H
#define FFNRT_CLI_CHECK_H
/* `ffnrt check`: accuracy of an op on a device against the double reference. */
int ffnrt_check_main(int argc, char **argv);
#endif
