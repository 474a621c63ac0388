/* Running out of resources: allocations past what the device allows, a
 * device-memory budget that runs out, kernels that fail to build. Each
 * failure gives a clear status and message, leaves nothing allocated
 * (the sanitizer run checks leaks, the validation layer unfreed Vulkan
 * objects), and the context stays usable for a normal op afterwards. */
#include "device_fixture.h"
#include "ffnrt_lab.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifndef _WIN32
#include <unistd.h>
#endif

#define EXPECT(call, status)                                                                                  \
    do {                                                                                                      \
        ffnrt_status st_ = (call);                                                                            \
        cr_assert_eq(st_, (status), "%s returned %s, expected %s (%s)", #call, ffnrt_status_string(st_),     \
                     ffnrt_status_string(status), ffnrt_last_error_message());                                \
        cr_assert(strlen(ffnrt_last_error_message()) > 0, "%s gave no message", #call);                      \
    } while (0)

/* A normal op still works: SiLU of 4 values. */
static void still_usable(ffnrt_context *ctx)
{
    float v[4] = {-2, -0.5f, 0.5f, 2}, out[4];
    ffnrt_tensor *x = test_tensor_1d(ctx, 4, v);
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_SILU);
    cr_assert_eq(ffnrt_activation_forward(ctx, &d, x, x), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    test_read(x, out, 4);
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(out[i], v[i] / (1.0 + exp(-v[i])), 1e-6, "silu(%g) = %g", v[i], out[i]);
    cr_assert_str_empty(ffnrt_context_last_error(ctx));
    ffnrt_tensor_destroy(x);
}

BACKEND_PARAMETERS(resources, past_largest_allocation)

/* One byte past the device's largest allocation is refused before the
 * driver is asked; the largest shapes that overflow 64 bits too. */
ParameterizedTest(ffnrt_backend *b, resources, past_largest_allocation)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    ffnrt_device_info info;
    cr_assert_eq(ffnrt_context_get_device_info(ctx, &info), FFNRT_OK);
    cr_assert_gt(info.max_allocation, 0);
    ffnrt_tensor *t = NULL;
    int64_t past = (int64_t)(info.max_allocation / 4 + 1); /* f32 elements */
    if (past <= UINT32_MAX) {
        EXPECT(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &past, &t), FFNRT_ERROR_LIMIT_EXCEEDED);
        cr_assert_null(t);
    }
    int64_t overflow[3] = {INT64_MAX, INT64_MAX, 2};
    EXPECT(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 3, overflow, &t), FFNRT_ERROR_LIMIT_EXCEEDED);
    int64_t over_u32 = (int64_t)UINT32_MAX + 1;
    EXPECT(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F16, 1, &over_u32, &t), FFNRT_ERROR_LIMIT_EXCEEDED);
    cr_assert_null(t);
    /* An FFN whose weights cannot be allocated: nothing is left behind. */
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_DENSE, INT64_C(1) << 20, INT64_C(1) << 20);
    ffnrt_tensor *w = NULL;
    ffnrt_ffn_weight_tensors wt = {0};
    ffnrt_ffn *layer = NULL;
    int64_t small[2] = {2, 2};
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, small, &w), FFNRT_OK);
    wt.w_in = w;
    wt.w_out = w;
    cr_assert_neq(ffnrt_ffn_create_from_tensors(ctx, &desc, &wt, &layer), FFNRT_OK);
    cr_assert_null(layer);
    ffnrt_tensor_destroy(w);
    still_usable(ctx);
    test_context_done(ctx);
}

BACKEND_PARAMETERS(resources, memory_budget)

/* FFNRT_LIMITS=max_memory=B caps the context's device memory: tensors are
 * allocated until the budget is spent, the next one fails with
 * FFNRT_ERROR_OUT_OF_DEVICE_MEMORY, and freeing one makes room again. An
 * FFN layer that does not fit fails cleanly midway through its weights. */
ParameterizedTest(ffnrt_backend *b, resources, memory_budget)
{
    enum { BUDGET = 1 << 20, CHUNK = 64 << 10, MAX_TENSORS = 64 };
    setenv("FFNRT_LIMITS", "max_memory=1048576", 1);
    ffnrt_context *ctx = test_context(*b, NULL);
    unsetenv("FFNRT_LIMITS");
    ffnrt_tensor *t[MAX_TENSORS] = {0};
    int64_t n = CHUNK / 4;
    int made = 0;
    ffnrt_status st = FFNRT_OK;
    while (made < MAX_TENSORS && (st = ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &n, &t[made])) == FFNRT_OK)
        made++;
    cr_assert_eq(made, BUDGET / CHUNK, "%d tensors of %d bytes fit a budget of %d", made, CHUNK, BUDGET);
    cr_assert_eq(st, FFNRT_ERROR_OUT_OF_DEVICE_MEMORY, "%s", ffnrt_status_string(st));
    cr_assert(strstr(ffnrt_last_error_message(), "max_memory"), "%s", ffnrt_last_error_message());
    cr_assert_null(t[made]);

    /* No room for even the small op's tensor; then free one and it runs. */
    int64_t four = 4;
    ffnrt_tensor *x = NULL;
    EXPECT(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &four, &x), FFNRT_ERROR_OUT_OF_DEVICE_MEMORY);
    ffnrt_tensor_destroy(t[--made]);
    still_usable(ctx);

    /* A 256 x 520 dense layer needs just over 1 MiB of weights: it fails
     * partway and frees what it had allocated. */
    for (int i = 0; i < made; i++)
        ffnrt_tensor_destroy(t[i]);
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_DENSE, 256, 520);
    float *weights = calloc(256 * 520, sizeof *weights);
    ffnrt_ffn_weights w = {0};
    w.w_in = weights;
    w.w_out = weights;
    ffnrt_ffn *layer = NULL;
    EXPECT(ffnrt_ffn_create(ctx, &desc, &w, &layer), FFNRT_ERROR_OUT_OF_DEVICE_MEMORY);
    cr_assert_null(layer);
    /* The whole budget is free again: half the layer's width fits. */
    desc.hidden = 256;
    cr_assert_eq(ffnrt_ffn_create(ctx, &desc, &w, &layer), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    ffnrt_ffn_destroy(layer);
    free(weights);
    still_usable(ctx);
    test_context_done(ctx);
}

BACKEND_PARAMETERS(resources, compile_failure_recovers)

/* A kernel that fails to build is not cached as built or as failed: once
 * the cause is gone, the same context builds and runs it. */
ParameterizedTest(ffnrt_backend *b, resources, compile_failure_recovers)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    float v[4] = {1, 2, 3, 4};
    ffnrt_tensor *x = test_tensor_1d(ctx, 4, v);
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_SILU);
    setenv("FFNRT_INJECT_COMPILE_ERROR", "1", 1);
    EXPECT(ffnrt_activation_forward(ctx, &d, x, x), FFNRT_ERROR_COMPILE_FAILED);
    cr_assert_str_not_empty(ffnrt_context_build_log(ctx));
    unsetenv("FFNRT_INJECT_COMPILE_ERROR");
    ffnrt_tensor_destroy(x);
    still_usable(ctx);
    test_context_done(ctx);
}

/* What a lost device looks like cannot be produced on the CPU drivers; the
 * backends map VK_ERROR_DEVICE_LOST and OpenCL's execution errors to
 * FFNRT_ERROR_DEVICE_FAILURE (with the API's code in the message),
 * CL_OUT_OF_RESOURCES / CL_MEM_OBJECT_ALLOCATION_FAILURE and
 * VK_ERROR_OUT_OF_DEVICE_MEMORY to FFNRT_ERROR_OUT_OF_DEVICE_MEMORY. The
 * status names stay distinct so callers can tell them apart. */
/* Waits (ffnrt_context_wait, again and again) until work that ran past the
 * device timeout has finished; fails the test after two minutes. */
static void wait_until_finished(ffnrt_context *ctx)
{
    for (int i = 0; i < 24000; i++) {
        if (ffnrt_context_wait(ctx) == FFNRT_OK)
            return;
        cr_assert(strstr(ffnrt_context_last_error(ctx), "timeout"), "%s", ffnrt_context_last_error(ctx));
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
    cr_assert_fail("the work did not finish in two minutes");
}

/* After a timeout, ordinary calls (a layer created, a tensor written, an
 * op run; no ffnrt_context_wait) each wait for the unfinished work again,
 * for one more timeout, and fail only while it still runs, naming the
 * timeout: the context recovers by itself once the work has finished (it
 * used to refuse every call until ffnrt_context_wait). Under a 1 ms
 * timeout a small op may itself run past it on a busy machine, so a
 * failure naming the timeout is retried. Fails the test after two
 * minutes. */
static void recovers_by_itself(ffnrt_context *ctx)
{
    float v[4] = {-2, -0.5f, 0.5f, 2}, out[4], w[4 * 8] = {0};
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_DENSE, 4, 8);
    ffnrt_ffn_weights weights = {0};
    weights.w_in = weights.w_out = w;
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_SILU);
    int64_t n = 4;
    for (int i = 0; i < 24000; i++) {
        ffnrt_ffn *layer = NULL;
        ffnrt_tensor *t = NULL;
        ffnrt_status st = ffnrt_ffn_create(ctx, &desc, &weights, &layer);
        if (st == FFNRT_OK)
            st = ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &n, &t);
        if (st == FFNRT_OK)
            st = ffnrt_tensor_write(t, v, sizeof v);
        if (st == FFNRT_OK)
            st = ffnrt_activation_forward(ctx, &d, t, t);
        if (st == FFNRT_OK)
            st = ffnrt_tensor_read(t, out, sizeof out);
        ffnrt_ffn_destroy(layer);
        ffnrt_tensor_destroy(t);
        if (st == FFNRT_OK) {
            for (int j = 0; j < 4; j++)
                cr_assert_float_eq(out[j], v[j] / (1.0 + exp(-v[j])), 1e-6, "silu(%g) = %g", v[j], out[j]);
            return;
        }
        cr_assert_eq(st, FFNRT_ERROR_DEVICE_FAILURE, "%s", ffnrt_status_string(st));
        cr_assert(strstr(ffnrt_context_last_error(ctx), "timeout"), "%s", ffnrt_context_last_error(ctx));
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
    cr_assert_fail("the context did not recover in two minutes");
}

/* A dense layer of 4 MFLOP a token (1 GFLOP at 256 tokens: about 50 ms
 * on lavapipe here, far past a 1 ms timeout); weights and input zeros. */
static ffnrt_status long_forward(ffnrt_context *ctx, int64_t T, ffnrt_ffn **layer, ffnrt_tensor **x,
                                 ffnrt_tensor **y)
{
    enum { D = 512, H = 2048 };
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_DENSE, D, H);
    float *w = calloc((size_t)D * H, sizeof *w);
    ffnrt_ffn_weights weights = {0};
    weights.w_in = weights.w_out = w;
    cr_assert_eq(ffnrt_ffn_create(ctx, &desc, &weights, layer), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    free(w);
    int64_t shape[2] = {T, D};
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, x), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, y), FFNRT_OK);
    return ffnrt_ffn_forward(*layer, *x, *y);
}

BACKEND_PARAMETERS(resources, device_timeout)

/* Work that runs past the device timeout (1 ms here): Vulkan fails the
 * call with FFNRT_ERROR_DEVICE_FAILURE, naming the timeout, and keeps what
 * the unfinished work uses, so a layer and tensors destroyed meanwhile are
 * freed only after it finishes (the validation layer flags a buffer
 * destroyed while in use; freeing it early was a use after free in
 * lavapipe's threads); the next calls wait for it again and the context
 * recovers by itself (recovers_by_itself), as it does after
 * ffnrt_context_wait; and a context destroyed right after a timeout
 * waits for the work before freeing anything (the sanitizer run checks).
 * OpenCL waits in clFinish without a limit: the same layer just runs. */
ParameterizedTest(ffnrt_backend *b, resources, device_timeout, .timeout = 300)
{
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.backend = *b;
    ffnrt_context *ctx = NULL;
    static const char *const bad[] = {"abc", "0", "-5", "10x", "99999999999"};
    for (int i = 0; i < 5; i++) { /* the environment's setting is checked whole */
        setenv("FFNRT_DEVICE_TIMEOUT_MS", bad[i], 1);
        EXPECT(ffnrt_context_create(&o, &ctx), FFNRT_ERROR_INVALID_ARGUMENT);
        cr_assert(strstr(ffnrt_last_error_message(), "FFNRT_DEVICE_TIMEOUT_MS"), "%s", ffnrt_last_error_message());
    }
    unsetenv("FFNRT_DEVICE_TIMEOUT_MS");
    o.device_timeout_ms = 1;
    ctx = test_context(*b, &o);
    ffnrt_ffn *layer;
    ffnrt_tensor *x, *y;
    ffnrt_status st = long_forward(ctx, 256, &layer, &x, &y);
    /* A GPU may finish 1 GFLOP within 1 ms: more tokens until it cannot. */
    for (int64_t tokens = 2048; *b == FFNRT_BACKEND_VULKAN && st == FFNRT_OK && tokens <= 65536; tokens *= 2) {
        ffnrt_ffn_destroy(layer);
        ffnrt_tensor_destroy(x);
        ffnrt_tensor_destroy(y);
        st = long_forward(ctx, tokens, &layer, &x, &y);
    }
    if (*b == FFNRT_BACKEND_OPENCL) {
        cr_assert_eq(st, FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    } else {
        cr_assert_eq(st, FFNRT_ERROR_DEVICE_FAILURE, "%s", ffnrt_status_string(st));
        cr_assert(strstr(ffnrt_context_last_error(ctx), "1 ms timeout"), "%s", ffnrt_context_last_error(ctx));
    }
    ffnrt_ffn_destroy(layer);
    ffnrt_tensor_destroy(x);
    ffnrt_tensor_destroy(y);
    recovers_by_itself(ctx);

    /* Again, now waited for with ffnrt_context_wait. */
    st = long_forward(ctx, 256, &layer, &x, &y);
    cr_assert(st == FFNRT_OK || st == FFNRT_ERROR_DEVICE_FAILURE, "%s", ffnrt_context_last_error(ctx));
    ffnrt_ffn_destroy(layer);
    ffnrt_tensor_destroy(x);
    ffnrt_tensor_destroy(y);
    wait_until_finished(ctx);
    recovers_by_itself(ctx);
    uint64_t messages = ffnrt_context_validation_messages(ctx);
    cr_assert_eq(messages, 0, "the validation layer reported %llu messages", (unsigned long long)messages);

    /* Destroyed right after a timeout, with the layer and tensors alive. */
    st = long_forward(ctx, 256, &layer, &x, &y);
    cr_assert(st == FFNRT_OK || st == FFNRT_ERROR_DEVICE_FAILURE, "%s", ffnrt_context_last_error(ctx));
    ffnrt_ffn_destroy(layer);
    ffnrt_context_destroy(ctx);
}

Test(resources, failure_statuses_are_distinct)
{
    cr_assert_str_eq(ffnrt_status_string(FFNRT_ERROR_DEVICE_FAILURE), "device failure");
    cr_assert_str_eq(ffnrt_status_string(FFNRT_ERROR_OUT_OF_DEVICE_MEMORY), "out of device memory");
    cr_assert_str_eq(ffnrt_status_string(FFNRT_ERROR_OUT_OF_HOST_MEMORY), "out of host memory");
}

/* A CPU busy with other work: more spinning threads than cores, until
 * cpu_load_stop. */
typedef struct cpu_load {
    pthread_t threads[64];
    int count;
    atomic_int stop;
} cpu_load;

static void *spin(void *arg)
{
    cpu_load *load = arg;
    volatile unsigned x = 0;
    while (!atomic_load_explicit(&load->stop, memory_order_relaxed))
        x = x * 1664525u + 1013904223u;
    return NULL;
}

static void cpu_load_start(cpu_load *load)
{
#ifdef _WIN32
    long cores = pthread_num_processors_np(); /* winpthreads; mingw-w64 has no sysconf */
#else
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
#endif
    load->count = (int)(cores < 1 ? 2 : cores > 63 ? 64 : cores + 1);
    atomic_init(&load->stop, 0);
    for (int i = 0; i < load->count; i++)
        cr_assert_eq(pthread_create(&load->threads[i], NULL, spin, load), 0);
}

static void cpu_load_stop(cpu_load *load)
{
    atomic_store(&load->stop, 1);
    for (int i = 0; i < load->count; i++)
        pthread_join(load->threads[i], NULL);
}

BACKEND_PARAMETERS(resources, first_use_under_load)

/* The layer an app timed out on (a gated GEGLU, 32 x 48, 37 tokens, f16,
 * fused), on a CPU with more spinning threads than cores and every cache
 * cold (ffnrt's, Mesa's, PoCL's), under a 500 ms device timeout. (One
 * layer: each cold kernel costs seconds under this load; scripts/test's
 * busy step runs a whole suite's FFN layers so, tests/busy.sh.) lavapipe
 * compiles a pipeline to machine code at its first dispatch, seconds here
 * and minutes on a busy slow CPU; that used to happen inside the timed
 * fence wait, so the first forward failed with a timeout (and on a busy
 * machine, with the default 120 s, in CI). Now a pipeline's first, empty dispatch at creation takes
 * the compile and the timeout sees execution only: every call succeeds,
 * and a second forward gives the same bits. (Under Wine the drivers'
 * variables set here never reach the host's PoCL and Mesa:
 * scripts/windows-check sets them where they do.) */
ParameterizedTest(ffnrt_backend *b, resources, first_use_under_load, .timeout = 900)
{
    char dir[1024];
    cr_assert_eq(ffnrt_lab_make_temp_dir("ffnrt-cold-", dir, sizeof dir), 0);
    setenv("FFNRT_CACHE_DIR", dir, 1);
    setenv("POCL_CACHE_DIR", dir, 1);
    setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
    cpu_load load;
    cpu_load_start(&load);
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.device_timeout_ms = 500;
    ffnrt_context *ctx = test_context(*b, &o);
    enum { D = 32, H = 48, T = 37 };
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, D, H);
    desc.glu = (ffnrt_glu_desc)FFNRT_GLU_DESC_INIT(FFNRT_GEGLU);
    desc.dtype = FFNRT_DTYPE_F16;
    desc.path = FFNRT_FFN_PATH_FUSED;
    static uint16_t w[3 * H * D], x[T * D], y1[T * D], y2[T * D];
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        w[i] = (uint16_t)(0x2000 + i % 997); /* small positive and varied */
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        x[i] = (uint16_t)((i % 2 ? 0xb400 : 0x3400) + i % 251); /* about -0.25 and 0.25 */
    ffnrt_ffn_weights weights = {0};
    weights.w_gate = w;
    weights.w_value = w + H * D;
    weights.w_out = w + 2 * H * D;
    ffnrt_ffn *layer;
    cr_assert_eq(ffnrt_ffn_create(ctx, &desc, &weights, &layer), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    int64_t shape[2] = {T, D};
    ffnrt_tensor *tx, *ty;
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F16, 2, shape, &tx), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F16, 2, shape, &ty), FFNRT_OK);
    cr_assert_eq(ffnrt_tensor_write(tx, x, sizeof x), FFNRT_OK);
    cr_assert_eq(ffnrt_ffn_forward(layer, tx, ty), FFNRT_OK, "first forward: %s", ffnrt_context_last_error(ctx));
    cr_assert_eq(ffnrt_tensor_read(ty, y1, sizeof y1), FFNRT_OK);
    cr_assert_eq(ffnrt_ffn_forward(layer, tx, ty), FFNRT_OK, "second forward: %s", ffnrt_context_last_error(ctx));
    cr_assert_eq(ffnrt_tensor_read(ty, y2, sizeof y2), FFNRT_OK);
    cr_assert_eq(memcmp(y1, y2, sizeof y1), 0, "two forwards differ");
    ffnrt_tensor_destroy(tx);
    ffnrt_tensor_destroy(ty);
    ffnrt_ffn_destroy(layer);
    uint64_t messages = ffnrt_context_validation_messages(ctx);
    cr_assert_eq(messages, 0, "the validation layer reported %llu messages", (unsigned long long)messages);
    ffnrt_context_destroy(ctx);
    cpu_load_stop(&load);
    cr_assert_eq(ffnrt_lab_remove_tree(dir), 0);
}
