#ifndef FFNRT_CLI_CHECK_QUANT_H
#define FFNRT_CLI_CHECK_QUANT_H
/* `ffnrt check --quant`: a layer's output error on a device with its
 * weights quantized to each format, against the fp32 layer. */
int ffnrt_check_quant_main(int argc, char **argv);
#endif
