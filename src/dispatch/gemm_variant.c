/* The product kernel's variant, chosen whole: the level the FFN choice
 * took, and everything else shaders/gemm.kernel is built with for one
 * product: storage, the weight format and its code path, the epilogue and
 * its arithmetic, the loads, the accumulator, the shape, the workgroup,
 * the shared memory and the statistics. Each choice is made here once;
 * launch/gemm_launch.c only turns the value into defines and dispatches. */
#include "dispatch/dispatch.h"
#include "ffnrt_op_table.h"
#include "quant/quant.h"

#include <stdio.h>

uint32_t ffnrt_gemm_forward_bindings(int gated, int bias_bound, int quant, int stats)
{
    /* x, W, y; then Wv, the biases, the scales, the statistics buffer (the
     * order of gemm.kernel's bindings). */
    uint32_t products = gated ? 2 : 1;
    return 3 + (products - 1) + (bias_bound ? products : 0) + (quant ? products : 0) + (stats ? 1 : 0);
}

ffnrt_status ffnrt_choose_gemm_variant(const ffnrt_context *ctx, const ffnrt_ffn_choice *c,
                                       const ffnrt_gemm_problem *pr, ffnrt_gemm_variant *out, ffnrt_error *err)
{
    const ffnrt_quant_layout *ql = ffnrt_quant_layout_of(pr->format);
    if (pr->gated && pr->value_format != pr->format)
        return ffnrt_fail(err, FFNRT_ERROR_UNSUPPORTED, "gemm.kernel: gate and value in two formats (%s, %s)",
                          ffnrt_weight_format_name(pr->format), ffnrt_weight_format_name(pr->value_format));
    if (ql && pr->k % ql->k_multiple != 0)
        return ffnrt_fail(err, FFNRT_ERROR_SHAPE_MISMATCH, "gemm.kernel: K %llu is not a multiple of %s's block",
                          (unsigned long long)pr->k, ffnrt_weight_format_name(pr->format));
    if (pr->kmajor && (c->kernel != FFNRT_KERNEL_BLOCKED || ql || pr->gated || pr->bias || pr->stats ||
                         pr->act != FFNRT_ACT_COUNT))
        return ffnrt_fail(err, FFNRT_ERROR_UNSUPPORTED,
                          "gemm.kernel: K-major operands take the blocked level and no epilogue (an internal error)");
    if (pr->grad && (pr->gated || pr->bias || pr->stats || pr->accumulate || pr->kmajor || ql ||
                     pr->act == FFNRT_ACT_COUNT || pr->act == FFNRT_ACT_PRELU))
        return ffnrt_fail(err, FFNRT_ERROR_UNSUPPORTED,
                          "gemm.kernel: the backward's epilogue takes one dense product and an activation without "
                          "slopes (an internal error)");
    ffnrt_gemm_variant v = {0};
    v.level = c->kernel;
    v.storage = pr->dtype;
    v.weights = pr->format;
    v.act = pr->act;
    v.gated = pr->gated;
    v.bias = pr->bias;
    v.stats = pr->stats;
    v.accumulate = pr->accumulate;
    v.grad = pr->grad;
    ffnrt_kernel_params kp;
    ffnrt_kernel_params_for(&ctx->info, &kp, NULL, 0);
    /* The bias and the accumulation: parameters, so that products with and
     * without share a kernel, but compiled in on drivers that run both
     * sides of a uniform branch (kernel_params.inc's masked_branches says
     * what the tests cost there). The bias bindings: a forward product's,
     * but where nothing would be bound to them (compiled in without a
     * bias) or where they would pass the device's binding limit. */
    v.fixed_epilogue = kp.masked_branches != 0;
    if (!pr->grad && !pr->kmajor && !pr->bias) {
        uint32_t with_bias = ffnrt_gemm_forward_bindings(pr->gated, 1, ql != NULL, pr->stats);
        v.no_bias_bindings =
            v.fixed_epilogue || (ctx->limits.max_bindings && with_bias > ctx->limits.max_bindings);
    }
    /* The epilogue's activation and gating product in the layer's
     * arithmetic (a product with neither has none to choose). The
     * backward's gradients stay fp32: the product's sum is rounded once,
     * after them. */
    v.fp16_epilogue = c->fp16 && !pr->grad && (pr->gated || pr->act != FFNRT_ACT_COUNT);
    uint64_t esize = ffnrt_dtype_size(pr->dtype);
    uint64_t align = ctx->limits.buffer_offset_alignment < 4 ? 4 : ctx->limits.buffer_offset_alignment;
    /* Element offsets of x and W rows stay multiples of 4 (fp32: 16-byte
     * binding offsets) or 2 (16-bit words) when K is. */
    int aligned_bases = esize == 4 ? align % 16 == 0 : align % 4 == 0;
    /* The integer path (the choice's, for the blocked and matrix-vector
     * levels); products with statistics keep the float path, since those
     * read x itself for its non-finite counts. */
    v.x_q8 = ((c->int_dot >> pr->format) & 1u) && c->kernel != FFNRT_KERNEL_TILED &&
             ffnrt_ffn_int_dot_format(pr->format) && !pr->stats;
    switch (c->kernel) {
    case FFNRT_KERNEL_BLOCKED: {
        /* Block formats on drivers that run a work-item as vector code: 16
         * weights a step (the prelude's 16-wide vectors, where it has
         * them), which dequantizing needs to keep up with the bytes. */
        v.wide_codes = !v.x_q8 && ql && kp.blocked_wide_codes && pr->dtype != FFNRT_DTYPE_BF16;
        /* The integer path's codes as bytes where the driver multiplies
         * bytes best (dispatch/kernel_params.inc, int_dot_bytes). */
        v.x_bytes = v.x_q8 && kp.blocked_int_dot_bytes;
        v.x_bytes_plain = v.x_bytes ? ctx->plain_byte_dot : 0;
        /* One kernel for decode and prefill: the shape follows the rows. */
        /* Rows up to which the weights are streamed in narrow columns
         * (kernel_params.inc's tn_decode_streamed says which and why):
         * 4-bit codes on either path at 1 and 2 rows, the integer path's
         * 8-bit ones at 1 (the float path's measured even or slower). */
        uint32_t streamed = 0;
        if ((v.x_bytes || v.wide_codes) && ql->code_bits == 4)
            streamed = 2;
        else if (v.x_bytes)
            streamed = 1;
        ffnrt_blocked_shape b =
            ffnrt_choose_blocked(ctx, &c->stats, pr->m, pr->n, pr->gated, esize != 4, v.wide_codes, streamed);
        v.blocked = b;
        v.aligned4 = aligned_bases && pr->k % (esize == 4 ? 4 : 2) == 0;
        if (pr->kmajor) {
            /* The backward's K-major products (gemm_outer.inc), where the
             * driver has them: whole vectors along M and N; ffnrt_outer_fits
             * checks the rest. No block to stage. */
            v.outer = kp.blocked_outer && b.tn % 4 == 0 && b.tm % 4 == 0;
            v.aligned4 = 1;
            v.workgroup = b.wg_n * b.wg_m;
            v.rows_per_group = b.wg_m * b.tm;
            v.columns_per_group = b.wg_n * b.tn;
            v.smem_floats = 1;
            break;
        }
        v.vec_acc = kp.blocked_vec_acc != 0;
        /* Elsewhere, at decode (few rows: registers for a group's sums),
         * each group's codes are dotted with x before they are scaled. */
        v.sum_x = ql && !v.x_q8 && !v.wide_codes && b.tm <= 4;
        v.large_block = ffnrt_blocked_large(b);
        v.k_tail = !ql && pr->k % 4 != 0;
        v.smem_floats = ffnrt_blocked_smem_floats(b, pr->gated, esize != 4);
        v.workgroup = b.wg_n * b.wg_m;
        v.rows_per_group = b.wg_m * b.tm;
        v.columns_per_group = b.wg_n * b.tn;
        break;
    }
    case FFNRT_KERNEL_MATVEC: {
        /* Tokens a dispatch: every row up to matvec_tokens, in the same
         * power-of-two classes as the blocked TM: each TOKENS is another
         * kernel to compile (a first-use cost on every device), while the
         * rows past p.M cost a register and a shared-memory slot each,
         * never another read of W. So 3 tokens share the 4-token kernel
         * and 5 to 8 the 8-token one. */
        v.tokens = ffnrt_rows_class(pr->m, c->matvec_tokens);
        /* The integer path by packed 4 x 8-bit dot products where the
         * device has them (Vulkan's shaderIntegerDotProduct: the GLSL
         * prelude's SDOT_4X8), on x's codes as bytes. Taken wherever
         * supported: calibration then times the integer path as it runs,
         * and decides it against the float path per format. */
        v.x_packed = v.x_q8 && ctx->info.backend == FFNRT_BACKEND_VULKAN ? ctx->info.int_dot_packed : 0;
        v.x_bytes = v.x_packed != 0;
        ffnrt_status st = ffnrt_choose_matvec(ctx, &c->stats, v.tokens, &v.matvec, err);
        if (st != FFNRT_OK)
            return st;
        /* Block-format rows read x four elements at a time (K is a multiple
         * of 32). */
        v.aligned4 = ql && aligned_bases;
        v.smem_floats = ffnrt_matvec_smem_floats(v.matvec, v.tokens);
        v.workgroup = v.matvec.rows * v.matvec.lanes;
        v.rows_per_group = v.tokens;
        v.columns_per_group = v.matvec.rows;
        break;
    }
    default:
        v.tiled = c->tiled;
        v.smem_floats = ffnrt_tiled_smem_floats(v.tiled);
        v.workgroup = (v.tiled.bm / v.tiled.tm) * (v.tiled.bn / v.tiled.tn);
        v.rows_per_group = v.tiled.bm;
        v.columns_per_group = v.tiled.bn;
        break;
    }
    /* Block formats' code words as 4-word vectors (quant.inc's
     * QUANT_VEC4), with the integer path's x blocks (20 words): a group's
     * words (4 or 8, from a row start of K/8 or K/4 words) and x's blocks
     * begin on 16-byte boundaries where binding offsets do. llvmpipe loads
     * a lane's vector in one pass where four words take four: a SwiGLU
     * 2048 x 5632 decode there at 3.3-4.1 ms against 6.7-7.7 on the float
     * path (Q4_0, Q4_1; Q8_0 4.4-5.2) and 3.3-3.7 against 4.9-6.8 on the
     * integer path. Taken in the large blocks' rolled loops (words picked
     * by a run-time index) it made lavapipe's 64-token Q4_0 and Q8_0 layers
     * 1.2-1.4x slower. Where the codes stay words: the byte dot products
     * (their own layout), the 16-wide codes, the matrix-vector kernel's
     * float path (a quad a lane) and the large blocks' rolled loops. */
    v.quant_vec4 = ql && align % 16 == 0 && !ctx->word_codes && !v.x_bytes && !v.wide_codes &&
                   (v.x_q8 || (v.level == FFNRT_KERNEL_BLOCKED && !v.large_block));
    /* The blocked float path's codes 8 words an access through 64-bit
     * views (QUANT_W8), where a group is 8 code words (Q8_0), the device
     * has 64-bit integers and its lane loops cost the same for 16 bytes or
     * 32 (kernel_params.inc's wide_words), and the code bindings' tensors
     * start on 32-byte boundaries (rows of K/4 words then keep every
     * group's). On lavapipe the SwiGLU layer's Q8_0 decode ran 1.04-1.31x
     * the 4-word form's speed (576 x 1536 to 4096 x 14336, one process
     * alternating both). The 4-bit formats' two groups an access measured
     * 0.92-1.03x: both groups' codes live at once, for 8 columns (gate and
     * value), spill. */
    v.quant_w8 = v.quant_vec4 && !v.x_q8 && ql->group * ql->code_bits / 32 == 8 && kp.wide_words &&
                 ctx->limits.int64_words && pr->codes_align32;
    /* Every 4-word load (x's and the dense weights' vectors, the code
     * words, the integer path's x blocks) as two 64-bit words where the
     * device takes them (ffnrt_views64). The backward's outer products,
     * whose y is read and written through the views, keep 4 words: with
     * them the fp32 training step was no faster on lavapipe. */
    v.views64 = ffnrt_views64(ctx) && !v.outer;
    *out = v;
    return FFNRT_OK;
}

/* How the integer path multiplies, after "x quantized to 8 bits a block
 * of 32 (quantize.kernel), ": one phrase a form, blocked and matvec alike. */
static const char *integer_products_text(const ffnrt_gemm_variant *v)
{
    return v->x_bytes_plain == 2 ? "integer dot products of bytes in plain vectors (the host CPU has no AVX2)"
           : v->x_bytes_plain ? "integer dot products of bytes in plain vectors (FFNRT_LIMITS byte_dot=0)"
           : v->x_packed == 2 ? "packed 4 x 8-bit integer dot products (OpSDot, accelerated by the device)"
           : v->x_packed      ? "packed 4 x 8-bit integer dot products (OpSDot; the device does not accelerate "
                                "them: its driver lowers them)"
           : v->x_bytes       ? "integer dot products of bytes (AVX2's vpmaddubsw where the kernel compiler "
                                "targets it)"
                              : "integer dot products";
}

void ffnrt_gemm_variant_text(const ffnrt_gemm_variant *v, char *buf, size_t cap)
{
    char shape[320], int_path[200] = "";
    if (v->x_q8)
        snprintf(int_path, sizeof int_path, ", x quantized to 8 bits a block of 32 (quantize.kernel), %s",
                 integer_products_text(v));
    const ffnrt_quant_layout *ql = ffnrt_quant_layout_of(v->weights);
    if (v->outer)
        snprintf(shape, sizeof shape, "blocked outer products: %ux%u a work-item, %ux%u work-items (n x m), x [K, M] "
                 "and W [K, N]", v->blocked.tm, v->blocked.tn, v->blocked.wg_n, v->blocked.wg_m);
    else if (v->level == FFNRT_KERNEL_BLOCKED)
        snprintf(shape, sizeof shape, "blocked: %ux%u a work-item, %ux%u work-items (n x m)%s%s%s%s", v->blocked.tm,
                 v->blocked.tn, v->blocked.wg_n, v->blocked.wg_m, v->aligned4 ? ", vector loads" : "",
                 v->x_q8         ? int_path
                 : v->wide_codes ? ", 16 weights a step (16-wide vectors)"
                 : v->sum_x      ? ", each group's codes dotted before scaling"
                                 : "",
                 v->vec_acc ? ", vector accumulators" : "",
                 v->large_block ? ", outputs staged in shared memory" : "");
    else if (v->level == FFNRT_KERNEL_MATVEC)
        snprintf(shape, sizeof shape, "matvec: %u rows x %u lanes a group, at most %u token%s a dispatch%s",
                 v->matvec.rows, v->matvec.lanes, v->tokens, v->tokens == 1 ? "" : "s",
                 v->x_q8       ? int_path
                 : v->aligned4 ? ", vector loads"
                               : "");
    else
        snprintf(shape, sizeof shape, "tiled: %ux%ux%u, %ux%u a work-item", v->tiled.bm, v->tiled.bn, v->tiled.bk,
                 v->tiled.tm, v->tiled.tn);
    int has_epilogue = v->gated || v->act != FFNRT_ACT_COUNT;
    const char *act_name = ffnrt_op_row_of(v->act) ? ffnrt_op_row_of(v->act)->name : "none";
    char epilogue[96];
    if (v->grad == FFNRT_GRAD_ACT)
        snprintf(epilogue, sizeof epilogue, "times %s'(pre)", act_name);
    else if (v->grad == FFNRT_GRAD_GLU)
        snprintf(epilogue, sizeof epilogue, "the gating's gradients by %s (gate and value)", act_name);
    else
        snprintf(epilogue, sizeof epilogue, "%s%s", act_name, v->gated ? " x value" : "");
    /* The bias: compiled in (fixed_epilogue), a parameter, or left out
     * with its bindings (the binding limit). */
    int forward = !v->grad && !v->outer;
    const char *bias = !forward            ? ""
                       : v->fixed_epilogue ? (v->bias ? ", bias (compiled in)" : ", no bias (compiled in)")
                       : v->bias           ? ", bias"
                       : v->no_bias_bindings ? ", no bias bindings (max_bindings)"
                                             : "";
    snprintf(buf, cap, "%s; %s storage, %s weights%s%s%s; epilogue %s%s%s%s; %u work-items, %llu float%s of shared memory%s",
             shape,
             ffnrt_dtype_name(v->storage), ql ? ffnrt_weight_format_name(v->weights) : "dense",
             ql ? (v->level == FFNRT_KERNEL_TILED ? " dequantized into the staged tiles"
                   : v->x_q8                    ? " as integer codes, scaled once a block"
                                                : " dequantized in registers")
                : "",
             v->quant_w8     ? ", codes read 8 words at a time (64-bit views)"
             : v->quant_vec4 ? (v->x_q8 ? ", codes and x's blocks read 4 words at a time" : ", codes read 4 words at a time")
                             : "",
             v->views64 ? ", 4-word accesses as two 64-bit words" : "",
             epilogue, bias, has_epilogue ? (v->fp16_epilogue ? ", fp16 epilogue" : ", fp32 epilogue") : "",
             v->accumulate ? ", added to y" : "",
             v->workgroup, (unsigned long long)v->smem_floats, v->smem_floats == 1 ? "" : "s",
             v->stats ? ", statistics variant" : "");
}
