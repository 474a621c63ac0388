/* The conformance matrix: every op against the double reference on every
 * device, in the spirit of ggml's test-backend-ops, described once as data.
 * Axes (conformance.c holds them as tables):
 *   op       every activation and GLU kind of include/ffnrt_op_table.h
 *   dtype    storage f32, f16, bf16
 *   path     "op" (the element-wise call: ffnrt_activation_forward,
 *            ffnrt_glu_forward_split) or an FFN layer with that op as its
 *            activation (dense) or gate (gated): "fused", "unfused"
 *   weights  an FFN layer's weight format: "dense" (the dtype's own) and
 *            every block format the library lists (ffnrt_weight_format_block
 *            with more than one element); "-" for path op
 *   kernel   an FFN layer's product kernel: "matvec", "tiled"; "-" for op
 *   stats    "off", "on" (on: the statistics variant's output must be
 *            bit-identical to the plain one's, and its counts sane)
 *   device   every device found ("opencl:0", "vulkan:0", ...)
 *   profile  "none" and every ffnrt_profile_info name
 * Each case runs a small input on the device and measures its error against
 * the double reference (tools/reference) under the accuracy contract's
 * bound (tools/reference/contract.h): ULP of the storage type for the
 * element-wise ops, normwise relative error for layers. Uses the public
 * API only. */
#ifndef FFNRT_LAB_CONFORMANCE_H
#define FFNRT_LAB_CONFORMANCE_H

#include <stdio.h>

/* A selection: each field a comma-separated list of an axis's values, NULL
 * for the default (every value; profile: "none"; "all" takes every value of
 * any axis). device is a list of device specs as FFNRT_DEVICE takes them
 * ("opencl", "vulkan:0", "llvmpipe"), each matched against every device. */
typedef struct conf_selection {
    const char *op, *dtype, *path, *weights, *kernel, *stats, *device, *profile;
    double bound_scale; /* multiplies every bound (1: the contract; 0: any error fails) */
} conf_selection;

#define CONF_SELECTION_INIT { NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1.0 }

/* Checks the selection's lists: 0, or -1 with a message naming the axis and
 * the unknown value on err (and its values). */
int conf_validate(const conf_selection *s, FILE *err);

/* Runs the selection: one line per case on out (PASS, FAIL or skip, the
 * axes, the error and the bound), then a summary. Returns 0 when every case
 * ran passed (and at least one ran), 1 when one failed or none ran, 2 for a
 * bad selection (conf_validate's message). */
int conf_run(const conf_selection *s, FILE *out, FILE *err);

#endif
