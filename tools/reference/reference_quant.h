/* Double-precision references for quantized weights: dequantization of
 * every ffnrt weight format written from the format definitions (not from
 * the library's code), exact in double for every format (fp16 scales
 * times small integers, one sum), and a gated FFN layer over dequantized
 * weights, the reference that layers with quantized weights are compared
 * against. Host only; plain C11 + libm (and ffnrt.h / ffnrt_gguf.h for
 * the format enum and the layer description). */
#ifndef FFNRT_REFERENCE_QUANT_H
#define FFNRT_REFERENCE_QUANT_H

#include <ffnrt.h>
#include <ffnrt_gguf.h>

#include <stddef.h>
#include <stdint.h>

/* An fp16 bit pattern's value, decoded with ldexp. */
double ref_f16(uint16_t bits);

/* One row of k weights (k a multiple of the format's block) to doubles;
 * -1 for an unknown format. */
int ref_dequantize_row(ffnrt_weight_format format, const void *row, int64_t k, double *out);

/* A gated (SwiGLU) FFN on one token in double over the dequantized
 * weights of a GGUF layer:
 *   y = W_down · (silu(W_gate·x + b_gate) ⊙ (W_up·x + b_up)) + b_down
 * with silu(g) = g·sigmoid(g); x is [d_model], y [d_model]. Rows are
 * dequantized one at a time, so memory stays O(hidden + d_model) whatever
 * the layer's size. Returns 0, or -1 for a dense layer or an unknown
 * format. */
int ref_gguf_swiglu(const ffnrt_gguf_ffn *layer, const double *x, double *y);

/* The same from double matrices [out, in] row-major (no biases). */
void ref_swiglu(const double *w_gate, const double *w_up, const double *w_down, int64_t d_model, int64_t hidden,
                const double *x, double *y);

#endif
