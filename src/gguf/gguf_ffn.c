/* ffnrt_gguf_ffn_desc: a GGUF layer's FFN as an ffnrt layer's descriptor
 * and weights. The weights stay GGUF's bytes (pointers into the file); the
 * activation, which no tensor records, comes from the architecture. */
#include "gguf/gguf_internal.h"

#include <stdio.h>
#include <string.h>

/* What each architecture's FFN computes. No tensor records the
 * activation, so it comes from this table. ffnrt follows each model's own
 * definition (its reference implementation, or the Hugging Face config it
 * was released with); every row was checked against llama.cpp's graph for
 * the architecture (src/models/<arch>.cpp: build_ffn with LLM_FFN_SILU or
 * LLM_FFN_GELU, LLM_FFN_PAR for gated, LLM_FFN_SEQ for dense; ggml_gelu
 * and ggml_geglu are the tanh GELU), and `llama_cpp` says where ffnrt
 * differs from it, on purpose. Gated rows are act(W_gate x) * (W_up x):
 * ffn_gate carries the activation, ffn_up the value (LLM_FFN_PAR). Rows
 * of one kind stay together: the message for an unknown architecture
 * lists them by kind. */
typedef struct arch_ffn {
    const char *arch;      /* general.architecture */
    int gated;
    ffnrt_glu glu;         /* gated */
    ffnrt_activation act;  /* dense */
    const char *kind;      /* for messages */
    const char *reference; /* the definition ffnrt follows */
    const char *llama_cpp; /* NULL: llama.cpp computes the same; else what it computes instead */
} arch_ffn;

#define SWIGLU 1, FFNRT_SWIGLU, FFNRT_ACT_COUNT, "gated SwiGLU"
#define GEGLU_TANH 1, FFNRT_GEGLU_TANH, FFNRT_ACT_COUNT, "gated GEGLU with the tanh GELU"
#define DENSE(act_, kind_) 0, FFNRT_SWIGLU, act_, kind_

static const arch_ffn arches[] = {
    {"llama", SWIGLU, "Llama's MLP, silu(gate_proj x) * up_proj x (Mistral 7B's and Mixtral's files say llama too)",
     NULL},
    {"mistral3", SWIGLU, "Mistral's MLP, silu(w1 x) * w3 x", NULL},
    {"qwen2", SWIGLU, "Qwen2's MLP, hidden_act silu", NULL},
    {"qwen3", SWIGLU, "Qwen3's MLP, hidden_act silu", NULL},
    {"granite", SWIGLU, "Granite's MLP, hidden_act silu (its residual scale is outside the FFN)", NULL},
    {"olmo2", SWIGLU, "OLMo 2's MLP, hidden_act silu", NULL},
    {"smollm3", SWIGLU, "SmolLM3's MLP, hidden_act silu", NULL},
    {"internlm2", SWIGLU, "InternLM2's feed_forward, silu(w1 x) * w3 x", NULL},
    {"nomic-bert", SWIGLU,
     "nomic-bert's gated MLP, fc11 x * silu(fc12 x) (fc12 is ffn_gate, fc11 ffn_up); llama.cpp's loader requires "
     "ffn_gate too", NULL},
    {"gemma", GEGLU_TANH, "Gemma's gelu_pytorch_tanh (its reference runs GELU with approximate=tanh)", NULL},
    {"gemma2", GEGLU_TANH, "Gemma 2's hidden_activation gelu_pytorch_tanh", NULL},
    {"gemma3", GEGLU_TANH, "Gemma 3's hidden_activation gelu_pytorch_tanh", NULL},
    {"gpt2", DENSE(FFNRT_ACT_GELU_TANH, "dense, tanh GELU"), "GPT-2's gelu_new (OpenAI's tanh form)", NULL},
    {"starcoder", DENSE(FFNRT_ACT_GELU_TANH, "dense, tanh GELU"), "StarCoder's gelu_pytorch_tanh", NULL},
    {"phi2", DENSE(FFNRT_ACT_GELU_TANH, "dense, tanh GELU"), "Phi-2's gelu_new", NULL},
    {"bert", DENSE(FFNRT_ACT_GELU, "dense, erf GELU"),
     "BERT's gelu, x Phi(x) with erf, in Google's reference and Hugging Face's hidden_act gelu",
     "the tanh GELU (ggml_gelu), up to 4.7e-4 from the erf form (at x = -2.7)"},
};

#undef SWIGLU
#undef GEGLU_TANH
#undef DENSE

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
        char known[400];
        size_t k = 0, n = sizeof arches / sizeof arches[0];
        for (size_t i = 0; i < n && k < sizeof known; i++) {
            int first = i == 0 || strcmp(arches[i - 1].kind, arches[i].kind) != 0;
            int last = i + 1 == n || strcmp(arches[i + 1].kind, arches[i].kind) != 0;
            int w = snprintf(known + k, sizeof known - k, "%s%s%s%s%s", first ? (i ? "; " : "") : ", ",
                             arches[i].arch, last ? " (" : "", last ? arches[i].kind : "", last ? ")" : "");
            k += w > 0 ? (size_t)w : 0;
        }
        ffnrt_fail(&err, FFNRT_ERROR_UNSUPPORTED,
                   "%s: general.architecture is %s, whose FFN activation ffnrt does not know (it knows %s): fill the "
                   "desc by hand", fn, name, known);
        return finish(&err);
    }
    if (a->gated != layer->gated) {
        /* blk.N.ffn_gate.weight, from ffn_up's name where it is GGUF's */
        char gate[96] = "blk.N.ffn_gate.weight";
        const char *up = layer->up.name, *at = up ? strstr(up, ".ffn_up.weight") : NULL;
        if (at && strncmp(up, "blk.", 4) == 0 && at[14] == '\0' && at - up < 64)
            snprintf(gate, sizeof gate, "%.*s.ffn_gate.weight", (int)(at - up), up);
        if (a->gated)
            ffnrt_fail(&err, FFNRT_ERROR_UNSUPPORTED, "%s: a %s layer is %s, but its gate, %s, is missing", fn,
                       a->arch, a->kind, gate);
        else
            ffnrt_fail(&err, FFNRT_ERROR_UNSUPPORTED, "%s: a %s layer is %s, with no gate, but this one has %s", fn,
                       a->arch, a->kind, gate);
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
