/* libFuzzer target over the public API's descriptors: the input is a
 * sequence of calls (tensor create/destroy/write/read, activations, the GLU
 * family, FFN layers from host weights or tensors, cost accounting, name
 * parsing, contexts with lowered limits, the FFNRT_LIMITS and FFNRT_DEVICE
 * parsers) with shapes, dtypes, parameters
 * and descriptor fields drawn from the bytes, including 0, negative and
 * huge values, NaN and Inf. Every call must return a valid status and
 * leave a message on failure; ASan and UBSan catch the rest.
 *
 * Contexts are created once per process and kept (kernel builds are cached
 * per context; a fresh context per input would spend the run compiling):
 * two plain ones (tensors of the second are "foreign" to the first) and up
 * to four with lowered limits drawn from a small menu. All are on the
 * Vulkan device unless FFNRT_DEVICE=opencl; FFNRT_LIMITS gives them a
 * memory budget (32 MiB, 256 KiB with lowered limits) so huge-but-valid
 * shapes fail fast and no input runs long.
 *
 * Build: cmake -DFFNRT_FUZZ=ON with clang (scripts/fuzz). */
#include "ffnrt.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- input */

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

static uint8_t u8(reader *r)
{
    if (!r->n)
        return 0;
    r->n--;
    return *r->p++;
}

static uint32_t u32(reader *r)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = v << 8 | u8(r);
    return v;
}

static uint64_t u64(reader *r) { return (uint64_t)u32(r) << 32 | u32(r); }

/* A dimension or count: mostly small, sometimes an edge value. */
static int64_t dim(reader *r)
{
    static const int64_t edges[] = {0, 1, 2, 3, 4, 7, 8, 9, 16, 31, 33, 64, 255, 4096, 65536, -1, -2, -4096,
                                    INT64_C(1) << 31, (INT64_C(1) << 32) - 1, INT64_C(1) << 32, INT64_C(1) << 40,
                                    INT64_MAX, INT64_MAX / 2, INT64_MIN, INT64_MIN + 1, UINT32_MAX / 2 + 1};
    uint8_t b = u8(r);
    if (b < 160)
        return b % 40;
    if (b < 160 + sizeof edges / sizeof edges[0])
        return edges[b - 160];
    return (int64_t)u64(r);
}

static float param(reader *r)
{
    static const float edges[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.01f, 1.702f, 0.5f, NAN, -NAN, INFINITY, -INFINITY,
                                  1e30f, -1e30f, 1e-40f, 3.4028235e38f, 65504.0f, 1e-8f};
    uint8_t b = u8(r);
    if (b < sizeof edges / sizeof edges[0])
        return edges[b];
    uint32_t bits = u32(r);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* An enum value: usually valid, sometimes out of range or negative. */
static int enum_value(reader *r, int count)
{
    uint8_t b = u8(r);
    if (b < 224)
        return b % count;
    static const int bad[] = {-1, -100, 1000, INT32_MAX, INT32_MIN, 7, 42, 255};
    return bad[b % 8] == 7 ? count : bad[b % 8];
}

/* ------------------------------------------------------------- state */

#define CONTEXTS 6 /* 0, 1: plain; 2..5: lowered limits, created on demand */
#define TENSORS 8
#define LAYERS 2
#define HOST_FLOATS 16384 /* host arrays for writes, reads and weights */

static ffnrt_context *contexts[CONTEXTS];
static int context_tried[CONTEXTS];
static ffnrt_backend fuzz_backend = FFNRT_BACKEND_VULKAN;

typedef struct slot {
    ffnrt_tensor *t;
    int ctx;
    int pinned; /* in use by a layer made from tensors: must outlive it */
} slot;

typedef struct layer_slot {
    ffnrt_ffn *layer;
    int ctx;
    int pinned[TENSORS];
} layer_slot;

static slot tensors[TENSORS];
static layer_slot layers[LAYERS];
static float host_a[HOST_FLOATS], host_b[HOST_FLOATS];

static void check_status(ffnrt_status st)
{
    if ((unsigned)st >= FFNRT_STATUS_COUNT) {
        fprintf(stderr, "fuzz_api: status %d is not a status\n", (int)st);
        abort();
    }
    if (st != FFNRT_OK && !ffnrt_last_error_message()[0]) {
        fprintf(stderr, "fuzz_api: %s without a message\n", ffnrt_status_string(st));
        abort();
    }
}

static ffnrt_context *context(int i)
{
    if (contexts[i] || context_tried[i])
        return contexts[i];
    context_tried[i] = 1;
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.backend = fuzz_backend;
    /* Limits a small phone GPU might have, and the smallest that work. */
    static const uint64_t ranges[] = {0, 256, 4096, 65536};
    static const uint32_t counts[] = {0, 1, 3, 64};
    static const uint32_t sizes[] = {0, 1, 32, 64};
    if (i >= 2) {
        o.max_buffer_range = ranges[i - 2];
        o.max_workgroup_count = counts[(i + 1) % 4];
        o.max_workgroup_size = sizes[(i + 2) % 4];
    }
    /* With a 256-byte buffer range and 1-wide workgroups a big tensor
     * takes thousands of dispatches: a smaller budget keeps every input
     * quick there. */
    if (i >= 2)
        setenv("FFNRT_LIMITS", "max_memory=262144", 1);
    ffnrt_status st = ffnrt_context_create(&o, &contexts[i]);
    setenv("FFNRT_LIMITS", "max_memory=33554432", 1);
    check_status(st);
    return contexts[i];
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("FFNRT_LIMITS", "max_memory=33554432", 1);
    const char *device = getenv("FFNRT_DEVICE");
    if (device && strncmp(device, "opencl", 6) == 0)
        fuzz_backend = FFNRT_BACKEND_OPENCL;
    if (!context(0) || !context(1)) {
        fprintf(stderr, "fuzz_api: no %s device: %s\n", ffnrt_backend_name(fuzz_backend),
                ffnrt_last_error_message());
        exit(1);
    }
    for (int i = 0; i < HOST_FLOATS; i++)
        host_a[i] = (float)((i * 37) % 101) / 10.0f - 5.0f;
    return 0;
}

/* A tensor slot's tensor, or NULL (empty slot, or the input asks for NULL). */
static ffnrt_tensor *tensor(reader *r)
{
    uint8_t b = u8(r);
    return b == 0xff ? NULL : tensors[b % TENSORS].t;
}

static int ctx_index(reader *r)
{
    uint8_t b = u8(r);
    return b < 200 ? 0 : (int)(b % CONTEXTS);
}

static void destroy_tensor(int i)
{
    if (tensors[i].t && !tensors[i].pinned) {
        ffnrt_tensor_destroy(tensors[i].t);
        tensors[i].t = NULL;
    }
}

static void destroy_layer(int i)
{
    if (!layers[i].layer)
        return;
    ffnrt_ffn_destroy(layers[i].layer);
    layers[i].layer = NULL;
    for (int t = 0; t < TENSORS; t++)
        if (layers[i].pinned[t]) {
            tensors[t].pinned--;
            layers[i].pinned[t] = 0;
        }
}

static void activation_desc(reader *r, ffnrt_activation_desc *d)
{
    *d = (ffnrt_activation_desc)FFNRT_ACTIVATION_DESC_INIT((ffnrt_activation)enum_value(r, FFNRT_ACT_COUNT));
    uint8_t which = u8(r);
    if (which & 1)
        d->alpha = param(r);
    if (which & 2)
        d->beta = param(r);
    if (which & 4)
        d->slopes = tensor(r);
    if (which & 8)
        d->channel_axis = (int)(int8_t)u8(r);
    if (which & 16)
        d->compute = (ffnrt_compute)enum_value(r, 2);
}

static void glu_desc(reader *r, ffnrt_glu_desc *d)
{
    *d = (ffnrt_glu_desc)FFNRT_GLU_DESC_INIT((ffnrt_glu)enum_value(r, FFNRT_GLU_COUNT));
    uint8_t which = u8(r);
    if (which & 1)
        d->beta = param(r);
    if (which & 2)
        d->compute = (ffnrt_compute)enum_value(r, 2);
}

static void ffn_desc(reader *r, ffnrt_ffn_desc *d)
{
    *d = (ffnrt_ffn_desc)FFNRT_FFN_DESC_INIT((ffnrt_ffn_kind)enum_value(r, 2), dim(r), dim(r));
    uint8_t which = u8(r);
    if (which & 1)
        d->dtype = (ffnrt_dtype)enum_value(r, 3);
    if (which & 2)
        d->bias = u8(r) % 3 == 2 ? -1 : 1;
    if (which & 4)
        activation_desc(r, &d->activation);
    if (which & 8)
        glu_desc(r, &d->glu);
    if (which & 16)
        d->path = (ffnrt_ffn_path)enum_value(r, 3);
    if (which & 32)
        d->matmul = (ffnrt_matmul_kernel)enum_value(r, 3);
    if (which & 64)
        d->matvec_max_tokens = u8(r) < 200 ? u8(r) % 40 : u32(r);
    if (which & 128)
        d->allow_fp16_accumulation = (int)u8(r) - 1;
}

/* Host weights: NULL, or host_b when the slot's size fits it (a pointer to
 * a too-small array is the caller's bug, not one ffnrt can detect). */
static const void *host_weight(reader *r, const ffnrt_ffn_desc *d, int64_t rows, int64_t cols)
{
    if (u8(r) & 1)
        return NULL;
    size_t es = ffnrt_dtype_size(d->dtype);
    if (es == 0 || d->d_model < 1 || d->hidden < 1 || d->d_model > UINT32_MAX || d->hidden > UINT32_MAX)
        return host_b; /* an invalid desc: ffnrt must refuse it before reading */
    if (rows > 65536 || cols > 65536 || (uint64_t)rows * (uint64_t)(cols ? cols : 1) * es > sizeof host_b)
        return NULL;
    return host_b;
}

static void op_ffn_create(reader *r)
{
    int li = u8(r) % LAYERS;
    destroy_layer(li);
    int ci = ctx_index(r);
    ffnrt_context *ctx = context(ci);
    ffnrt_ffn_desc d;
    ffn_desc(r, &d);
    ffnrt_ffn *layer = NULL;
    ffnrt_status st;
    if (u8(r) & 1) {
        int64_t h = d.hidden, m = d.d_model;
        ffnrt_ffn_weights w = {0};
        int64_t h2 = h > INT64_MAX / 2 || h < INT64_MIN / 2 ? h : 2 * h;
        w.w_in = host_weight(r, &d, h, m);
        w.b_in = host_weight(r, &d, h, 0);
        w.w_gate = host_weight(r, &d, h, m);
        w.b_gate = host_weight(r, &d, h, 0);
        w.w_value = host_weight(r, &d, h, m);
        w.b_value = host_weight(r, &d, h, 0);
        w.w_gate_value = host_weight(r, &d, h2, m);
        w.b_gate_value = host_weight(r, &d, h2, 0);
        w.w_out = host_weight(r, &d, m, h);
        w.b_out = host_weight(r, &d, m, 0);
        st = ffnrt_ffn_create(ctx, &d, u8(r) == 0xff ? NULL : &w, &layer);
    } else {
        const ffnrt_tensor **f;
        ffnrt_ffn_weight_tensors w = {0};
        int used[10];
        f = &w.w_in;
        for (int i = 0; i < 10; i++) {
            uint8_t b = u8(r);
            used[i] = b % TENSORS;
            f[i] = b & 0x80 ? NULL : tensors[used[i]].t;
        }
        st = ffnrt_ffn_create_from_tensors(ctx, &d, &w, &layer);
        if (st == FFNRT_OK)
            for (int i = 0; i < 10; i++)
                if (f[i] && !layers[li].pinned[used[i]]) {
                    layers[li].pinned[used[i]] = 1;
                    tensors[used[i]].pinned++;
                }
    }
    check_status(st);
    if (st == FFNRT_OK) {
        if (!layer)
            abort();
        layers[li].layer = layer;
        layers[li].ctx = ci;
    }
}

static void one_call(reader *r)
{
    uint8_t op = u8(r);
    ffnrt_status st = FFNRT_OK;
    switch (op % 17) {
    case 0: { /* tensor create */
        int i = u8(r) % TENSORS;
        destroy_tensor(i);
        if (tensors[i].t)
            break; /* pinned */
        int ci = ctx_index(r);
        ffnrt_dtype dt = (ffnrt_dtype)enum_value(r, 3);
        size_t ndim = u8(r) % (FFNRT_MAX_DIMS + 2);
        int64_t shape[FFNRT_MAX_DIMS + 1];
        for (size_t k = 0; k < ndim; k++)
            shape[k] = dim(r);
        ffnrt_tensor *t = NULL;
        st = ffnrt_tensor_create(context(ci), dt, ndim, u8(r) == 0xff ? NULL : shape, &t);
        if (st == FFNRT_OK) {
            tensors[i].t = t;
            tensors[i].ctx = ci;
        } else if (t) {
            abort(); /* a failed create must leave *out NULL */
        }
        break;
    }
    case 1:
        destroy_tensor(u8(r) % TENSORS);
        break;
    case 2: { /* write: the right size or not */
        ffnrt_tensor *t = tensor(r);
        size_t bytes = ffnrt_tensor_bytes(t);
        uint8_t b = u8(r);
        if (b & 1)
            bytes += (size_t)(int8_t)u8(r);
        if (bytes > sizeof host_a && b & 2)
            bytes = sizeof host_a + 4; /* mismatched: must be refused */
        if (bytes <= sizeof host_a || bytes == sizeof host_a + 4)
            st = ffnrt_tensor_write(t, b & 4 ? NULL : host_a, bytes);
        break;
    }
    case 3: {
        ffnrt_tensor *t = tensor(r);
        size_t bytes = ffnrt_tensor_bytes(t);
        if (u8(r) & 1)
            bytes += (size_t)(int8_t)u8(r);
        if (bytes <= sizeof host_b)
            st = ffnrt_tensor_read(t, host_b, bytes);
        break;
    }
    case 4:
    case 5: {
        ffnrt_activation_desc d;
        int ci = ctx_index(r);
        activation_desc(r, &d);
        ffnrt_tensor *x = tensor(r), *y = tensor(r);
        if (op % 16 == 4)
            st = ffnrt_activation_forward(context(ci), u8(r) == 0xff ? NULL : &d, x, y);
        else
            st = ffnrt_activation_backward(context(ci), &d, x, tensor(r), y);
        break;
    }
    case 6:
    case 7: {
        ffnrt_glu_desc d;
        int ci = ctx_index(r);
        glu_desc(r, &d);
        ffnrt_tensor *a = tensor(r), *b = tensor(r), *c = tensor(r);
        switch (u8(r) % 4) {
        case 0: st = ffnrt_glu_forward(context(ci), &d, a, b); break;
        case 1: st = ffnrt_glu_forward_split(context(ci), &d, a, b, c); break;
        case 2: st = ffnrt_glu_backward(context(ci), &d, a, b, c); break;
        default: st = ffnrt_glu_backward_split(context(ci), &d, a, b, c, tensor(r), tensor(r)); break;
        }
        break;
    }
    case 8:
        op_ffn_create(r);
        break;
    case 9: {
        int li = u8(r) % LAYERS;
        ffnrt_tensor *x = tensor(r), *y = tensor(r);
        if (layers[li].layer)
            st = ffnrt_ffn_forward(layers[li].layer, x, y);
        break;
    }
    case 10:
        destroy_layer(u8(r) % LAYERS);
        break;
    case 11: {
        ffnrt_ffn_desc d;
        ffn_desc(r, &d);
        ffnrt_ffn_cost cost;
        st = ffnrt_ffn_cost_of(&d, dim(r), (ffnrt_ffn_path)enum_value(r, 3), u8(r) == 0xff ? NULL : &cost);
        (void)ffnrt_ffn_gated_hidden(dim(r), dim(r));
        break;
    }
    case 12: { /* names: a NUL-terminated string from the input */
        char name[32];
        size_t n = u8(r) % sizeof name;
        for (size_t k = 0; k < n; k++)
            name[k] = (char)u8(r);
        name[n] = '\0';
        ffnrt_activation act;
        ffnrt_glu glu;
        check_status(ffnrt_activation_from_name(name, &act));
        st = ffnrt_glu_from_name(name, &glu);
        (void)ffnrt_activation_name((ffnrt_activation)enum_value(r, FFNRT_ACT_COUNT));
        (void)ffnrt_glu_name((ffnrt_glu)enum_value(r, FFNRT_GLU_COUNT));
        (void)ffnrt_glu_gate_activation((ffnrt_glu)enum_value(r, FFNRT_GLU_COUNT));
        (void)ffnrt_dtype_name((ffnrt_dtype)enum_value(r, 3));
        (void)ffnrt_status_string((ffnrt_status)enum_value(r, FFNRT_STATUS_COUNT));
        (void)ffnrt_backend_name((ffnrt_backend)enum_value(r, 3));
        break;
    }
    case 13: {
        int ci = ctx_index(r);
        st = ffnrt_copy(context(ci), tensor(r), tensor(r));
        break;
    }
    case 14: { /* host conversions */
        size_t n = u8(r);
        uint16_t h[256];
        float f[256];
        for (size_t k = 0; k < n; k++)
            f[k] = param(r);
        ffnrt_f32_to_f16_array(f, h, n);
        ffnrt_f16_to_f32_array(h, f, n);
        ffnrt_f32_to_bf16_array(f, h, n);
        ffnrt_bf16_to_f32_array(h, f, n);
        break;
    }
    case 15: { /* the environment's parsers: FFNRT_LIMITS and FFNRT_DEVICE */
        char limits[48], device[24];
        size_t n = u8(r) % sizeof limits;
        for (size_t k = 0; k < n; k++)
            limits[k] = (char)u8(r);
        limits[n] = '\0';
        n = u8(r) % sizeof device;
        for (size_t k = 0; k < n; k++)
            device[k] = (char)u8(r);
        device[n] = '\0';
        setenv("FFNRT_LIMITS", limits, 1);
        setenv("FFNRT_DEVICE", device, 1);
        ffnrt_context *ctx = NULL;
        st = ffnrt_context_create(NULL, &ctx);
        if ((st == FFNRT_OK) != (ctx != NULL))
            abort();
        ffnrt_context_destroy(ctx);
        setenv("FFNRT_LIMITS", "max_memory=33554432", 1);
        unsetenv("FFNRT_DEVICE"); /* the fuzz contexts are already made */
        break;
    }
    default: { /* a tensor queried with any axis */
        ffnrt_tensor *t = tensor(r);
        (void)ffnrt_tensor_dim(t, (size_t)u64(r));
        (void)ffnrt_tensor_numel(t);
        (void)ffnrt_tensor_ndim(t);
        (void)ffnrt_tensor_dtype(t);
        break;
    }
    }
    check_status(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = {data, size};
    for (int calls = 0; r.n && calls < 64; calls++) {
        /* Contexts with lowered limits are skipped if they failed to open. */
        one_call(&r);
    }
    for (int i = 0; i < LAYERS; i++)
        destroy_layer(i);
    for (int i = 0; i < TENSORS; i++)
        destroy_tensor(i);
    return 0;
}
