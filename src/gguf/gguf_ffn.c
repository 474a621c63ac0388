/* ffnrt_gguf_ffn_desc: a GGUF layer's FFN as an ffnrt layer's descriptor
 * and weights. The weights stay GGUF's bytes (pointers into the file); the
 * activation, which no tensor records, comes from the architecture. */
#include "gguf/gguf_internal.h"

#include <stdio.h>
#include <string.h>

/* What each architecture's FFN computes (llama.cpp's graph for it). */
typedef struct arch_ffn {
    const char *arch;
    int gated;
    ffnrt_glu glu;         /* gated */
    ffnrt_activation act;  /* dense */
} arch_ffn;

static const arch_ffn arches[] = {
    /* SwiGLU: silu(W_gate x) * (W_up x) */
    {"llama", 1, FFNRT_SWIGLU, FFNRT_ACT_COUNT},   {"mistral", 1, FFNRT_SWIGLU, FFNRT_ACT_COUNT},
    {"qwen2", 1, FFNRT_SWIGLU, FFNRT_ACT_COUNT},   {"qwen3", 1, FFNRT_SWIGLU, FFNRT_ACT_COUNT},
    {"granite", 1, FFNRT_SWIGLU, FFNRT_ACT_COUNT}, {"olmo2", 1, FFNRT_SWIGLU, FFNRT_ACT_COUNT},
    {"smollm3", 1, FFNRT_SWIGLU, FFNRT_ACT_COUNT}, {"internlm2", 1, FFNRT_SWIGLU, FFNRT_ACT_COUNT},
    /* GEGLU with the tanh GELU (Gemma's gelu_pytorch_tanh) */
    {"gemma", 1, FFNRT_GEGLU_TANH, FFNRT_ACT_COUNT},  {"gemma2", 1, FFNRT_GEGLU_TANH, FFNRT_ACT_COUNT},
    {"gemma3", 1, FFNRT_GEGLU_TANH, FFNRT_ACT_COUNT},
    /* dense */
    {"gpt2", 0, FFNRT_SWIGLU, FFNRT_ACT_GELU_TANH}, {"starcoder", 0, FFNRT_SWIGLU, FFNRT_ACT_GELU_TANH},
    {"phi2", 0, FFNRT_SWIGLU, FFNRT_ACT_GELU_TANH}, {"bert", 0, FFNRT_SWIGLU, FFNRT_ACT_GELU},
    {"nomic-bert", 0, FFNRT_SWIGLU, FFNRT_ACT_GELU},
};

static ffnrt_status finish(ffnrt_error *err)
{
    ffnrt_error_publish(err);
    return err->status;
}

ffnrt_status ffnrt_gguf_ffn_desc(const ffnrt_gguf *g, const ffnrt_gguf_ffn *layer, ffnrt_ffn_desc *desc,
                                 ffnrt_ffn_weights *weights)
{
    static const char fn[] = "ffnrt_gguf_ffn_desc";
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!g || !layer || !desc || !weights) {
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: gguf, layer, desc or weights is NULL", fn);
        return finish(&err);
    }
    /* A layer filled by hand may hold any sizes: the limits of
     * ffnrt_gguf_ffn_layer, said here too. */
    const int64_t sizes[2] = {layer->d_model, layer->hidden};
    for (int i = 0; i < 2; i++)
        if (sizes[i] < 1 || sizes[i] > (int64_t)GGUF_MAX_LAYER_SIZE) {
            ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT,
                       "%s: the layer%s%s has %s %lld; an ffnrt layer's d_model and hidden are 1 to %llu (2^32 - 1)",
                       fn, layer->up.name ? " of " : "", layer->up.name ? layer->up.name : "",
                       i ? "hidden" : "d_model", (long long)sizes[i], (unsigned long long)GGUF_MAX_LAYER_SIZE);
            return finish(&err);
        }
    const char *arch = NULL;
    size_t len = 0;
    char name[112] = "absent", text[100];
    if (ffnrt_gguf_get_string(g, "general.architecture", &arch, &len) == FFNRT_OK) {
        ffnrt_gguf_escape(text, sizeof text, arch, len); /* "llama\0x" is not llama */
        snprintf(name, sizeof name, "\"%s\"", text);
    }
    ffnrt_error_clear(&err); /* a missing key is answered below */
    const arch_ffn *a = NULL;
    for (size_t i = 0; i < sizeof arches / sizeof arches[0] && !a; i++)
        if (arch && strlen(arches[i].arch) == len && memcmp(arches[i].arch, arch, len) == 0)
            a = &arches[i];
    if (!a) {
        ffnrt_fail(&err, FFNRT_ERROR_UNSUPPORTED,
                   "%s: general.architecture is %s, whose FFN activation ffnrt does not know (it knows llama, mistral, "
                   "qwen2, qwen3, granite, olmo2, smollm3, internlm2: SwiGLU; gemma, gemma2, gemma3: GEGLU with tanh "
                   "GELU; gpt2, starcoder, phi2: dense tanh GELU; bert, nomic-bert: dense GELU): fill the desc by hand",
                   fn, name);
        return finish(&err);
    }
    if (a->gated != layer->gated) {
        ffnrt_fail(&err, FFNRT_ERROR_UNSUPPORTED, "%s: a %s layer %s blk.N.ffn_gate.weight, but this one %s", fn, a->arch,
                   a->gated ? "has" : "has no", layer->gated ? "has one" : "has none");
        return finish(&err);
    }
    /* Dense matrices set the layer's dtype (all of one type); block ones keep their format. */
    const ffnrt_gguf_tensor_info *m[3] = {layer->gated ? &layer->gate : &layer->up, &layer->up, &layer->down};
    ffnrt_weight_format f[3];
    int dense = -1;
    for (int i = 0; i < 3; i++) {
        f[i] = m[i]->format;
        if (f[i] <= FFNRT_WEIGHT_BF16) {
            if (dense >= 0 && dense != (int)f[i]) {
                ffnrt_fail(&err, FFNRT_ERROR_UNSUPPORTED, "%s: %s is %s and another matrix %s: ffnrt's dense matrices "
                           "share the layer's dtype", fn, m[i]->name, m[i]->type_name,
                           ffnrt_weight_format_name((ffnrt_weight_format)dense));
                return finish(&err);
            }
            dense = (int)f[i];
            f[i] = FFNRT_WEIGHT_F32; /* "in the dtype" */
        }
    }
    ffnrt_ffn_desc d = FFNRT_FFN_DESC_INIT(a->gated ? FFNRT_FFN_GATED : FFNRT_FFN_DENSE, layer->d_model, layer->hidden);
    d.dtype = dense >= 0 ? (ffnrt_dtype)dense : FFNRT_DTYPE_F32;
    d.bias = layer->bias;
    if (a->gated)
        d.glu = (ffnrt_glu_desc)FFNRT_GLU_DESC_INIT(a->glu);
    else
        d.activation = (ffnrt_activation_desc)FFNRT_ACTIVATION_DESC_INIT(a->act);
    d.format_in = f[0];
    d.format_value = a->gated ? f[1] : FFNRT_WEIGHT_F32;
    d.format_out = f[2];
    const ffnrt_gguf_tensor_info *b[3] = {layer->gated ? &layer->gate_bias : &layer->up_bias, &layer->up_bias,
                                          &layer->down_bias};
    for (int i = 0; i < 3 && layer->bias; i++)
        if ((int)b[i]->format != (int)d.dtype) {
            ffnrt_fail(&err, FFNRT_ERROR_UNSUPPORTED, "%s: %s is %s, the layer's dtype %s: convert it "
                       "(ffnrt_f16_to_f32_array, ...) and set the weights' bias yourself", fn, b[i]->name,
                       b[i]->type_name, ffnrt_dtype_name(d.dtype));
            return finish(&err);
        }
    ffnrt_ffn_weights w;
    memset(&w, 0, sizeof w);
    if (a->gated) {
        w.w_gate = layer->gate.data, w.w_value = layer->up.data;
        if (layer->bias)
            w.b_gate = layer->gate_bias.data, w.b_value = layer->up_bias.data;
    } else {
        w.w_in = layer->up.data;
        if (layer->bias)
            w.b_in = layer->up_bias.data;
    }
    w.w_out = layer->down.data;
    if (layer->bias)
        w.b_out = layer->down_bias.data;
    *desc = d;
    *weights = w;
    return finish(&err);
}
