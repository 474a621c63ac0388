/* The thread rule (README): a context is used by one thread at a time;
 * separate contexts are independent. These tests run contexts on several
 * threads at once, the process-wide first use (device registry, API
 * loading, glslang) from many threads at once, and one context shared by
 * threads that serialise on their own mutex. scripts/test also runs this
 * suite under ThreadSanitizer. Worker threads never call cr_assert (it is
 * not thread-safe); they report a message and the main thread asserts.
 *
 * Built with -DFFNRT_THREADS_MAIN the same checks are a plain program
 * (Criterion's process arena cannot start under ThreadSanitizer): the
 * TSan pass of scripts/test runs that. */
#ifdef FFNRT_THREADS_MAIN
#include "ffnrt.h"
#define TEST_BACKENDS 2
static const ffnrt_backend test_backends[TEST_BACKENDS] = {FFNRT_BACKEND_OPENCL, FFNRT_BACKEND_VULKAN};
static int test_validation_wanted(void) { return 1; } /* the TSan pass runs on Linux, where the layer loads */
#else
#include "device_fixture.h"
#endif

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define ROUNDS 2
#define N 256
#define D_MODEL 16
#define HIDDEN 24
#define TOKENS 3

/* All threads leave together (macOS has no pthread_barrier_t). Used once. */
typedef struct start_line {
    pthread_mutex_t lock;
    pthread_cond_t open;
    int waiting, count;
} start_line;

static void start_line_init(start_line *s, int count)
{
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->open, NULL);
    s->waiting = 0;
    s->count = count;
}

static void start_line_wait(start_line *s)
{
    pthread_mutex_lock(&s->lock);
    if (++s->waiting == s->count)
        pthread_cond_broadcast(&s->open);
    while (s->waiting < s->count)
        pthread_cond_wait(&s->open, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

static void start_line_destroy(start_line *s)
{
    pthread_cond_destroy(&s->open);
    pthread_mutex_destroy(&s->lock);
}

typedef struct worker {
    ffnrt_backend backend;
    ffnrt_context *shared;    /* NULL: the worker creates its own context */
    pthread_mutex_t *lock;    /* the user's lock around a shared context */
    start_line *start;        /* all workers start together */
    int id;
    char failure[512];        /* "" when everything matched */
} worker;

static float lcg(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / 16777216.0f - 0.5f;
}

static void fail(worker *w, const char *what, ffnrt_context *ctx)
{
    if (!w->failure[0])
        snprintf(w->failure, sizeof w->failure, "thread %d: %s (%s)", w->id, what,
                 ctx ? ffnrt_context_last_error(ctx) : ffnrt_last_error_message());
}

static void lock(worker *w)
{
    if (w->lock)
        pthread_mutex_lock(w->lock);
}

static void unlock(worker *w)
{
    if (w->lock)
        pthread_mutex_unlock(w->lock);
}

/* GELU on N values and a small gated FFN, checked against double math.
 * Each worker uses its own inputs so results cannot be confused. */
static void run_ops(worker *w, ffnrt_context *ctx, unsigned seed)
{
    float x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = 8.0f * lcg(&seed);
    float wg[HIDDEN * D_MODEL], wv[HIDDEN * D_MODEL], wo[D_MODEL * HIDDEN];
    float fx[TOKENS * D_MODEL], fy[TOKENS * D_MODEL];
    for (int i = 0; i < HIDDEN * D_MODEL; i++) {
        wg[i] = lcg(&seed);
        wv[i] = lcg(&seed);
        wo[i] = lcg(&seed);
    }
    for (int i = 0; i < TOKENS * D_MODEL; i++)
        fx[i] = 2.0f * lcg(&seed);

    int64_t n = N, fshape[2] = {TOKENS, D_MODEL};
    ffnrt_tensor *t = NULL, *tx = NULL, *ty = NULL;
    ffnrt_ffn *layer = NULL;
    ffnrt_activation_desc gelu = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_GELU);
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, D_MODEL, HIDDEN);
    desc.glu = (ffnrt_glu_desc)FFNRT_GLU_DESC_INIT(FFNRT_SWIGLU);
    ffnrt_ffn_weights weights = {0};
    weights.w_gate = wg;
    weights.w_value = wv;
    weights.w_out = wo;

    lock(w);
    int ok = ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &n, &t) == FFNRT_OK &&
             ffnrt_tensor_write(t, x, sizeof x) == FFNRT_OK &&
             ffnrt_activation_forward(ctx, &gelu, t, t) == FFNRT_OK &&
             ffnrt_tensor_read(t, y, sizeof y) == FFNRT_OK;
    if (!ok)
        fail(w, "gelu", ctx);
    ok = ok && ffnrt_ffn_create(ctx, &desc, &weights, &layer) == FFNRT_OK &&
         ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, fshape, &tx) == FFNRT_OK &&
         ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, fshape, &ty) == FFNRT_OK &&
         ffnrt_tensor_write(tx, fx, sizeof fx) == FFNRT_OK && ffnrt_ffn_forward(layer, tx, ty) == FFNRT_OK &&
         ffnrt_tensor_read(ty, fy, sizeof fy) == FFNRT_OK;
    if (!ok)
        fail(w, "gated ffn", ctx);
    /* An error on this thread is this thread's message, whatever the
     * others are doing. */
    ffnrt_status st = ffnrt_tensor_write(t, x, 3);
    if (st != FFNRT_ERROR_SHAPE_MISMATCH || !strstr(ffnrt_last_error_message(), "bytes"))
        fail(w, "this thread's last error is not its own", NULL);
    ffnrt_ffn_destroy(layer);
    ffnrt_tensor_destroy(t);
    ffnrt_tensor_destroy(tx);
    ffnrt_tensor_destroy(ty);
    unlock(w);
    if (!ok)
        return;

    for (int i = 0; i < N; i++) {
        double ref = 0.5 * x[i] * erfc(-x[i] / sqrt(2.0));
        if (fabs(y[i] - ref) > 1e-6 * fabs(ref) + 1e-30) {
            char m[128];
            snprintf(m, sizeof m, "gelu(%a) = %a, expected %a", x[i], y[i], ref);
            fail(w, m, ctx);
            return;
        }
    }
    for (int tok = 0; tok < TOKENS; tok++) {
        double h[HIDDEN];
        for (int j = 0; j < HIDDEN; j++) {
            double g = 0, v = 0;
            for (int k = 0; k < D_MODEL; k++) {
                g += (double)wg[j * D_MODEL + k] * fx[tok * D_MODEL + k];
                v += (double)wv[j * D_MODEL + k] * fx[tok * D_MODEL + k];
            }
            h[j] = g / (1.0 + exp(-g)) * v;
        }
        for (int i = 0; i < D_MODEL; i++) {
            double ref = 0, scale = 0;
            for (int j = 0; j < HIDDEN; j++) {
                ref += (double)wo[i * HIDDEN + j] * h[j];
                scale += fabs((double)wo[i * HIDDEN + j] * h[j]);
            }
            if (fabs(fy[tok * D_MODEL + i] - ref) > 1e-5 * scale + 1e-30) {
                char m[128];
                snprintf(m, sizeof m, "ffn y[%d][%d] = %g, expected %g", tok, i, fy[tok * D_MODEL + i], ref);
                fail(w, m, ctx);
                return;
            }
        }
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    start_line_wait(w->start);
    for (int round = 0; round < ROUNDS && !w->failure[0]; round++) {
        ffnrt_context *ctx = w->shared;
        if (!ctx) {
            ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
            o.backend = w->backend;
            o.device_index = 0;
            o.validation = w->backend == FFNRT_BACKEND_VULKAN && test_validation_wanted();
            if (ffnrt_context_create(&o, &ctx) != FFNRT_OK) {
                fail(w, "ffnrt_context_create", NULL);
                break;
            }
        }
        run_ops(w, ctx, 1000u * (unsigned)w->id + (unsigned)round);
        if (!w->shared) {
            if (ffnrt_context_validation_messages(ctx))
                fail(w, "the Vulkan validation layer reported messages (see stderr)", NULL);
            ffnrt_context_destroy(ctx);
        }
    }
    return NULL;
}

/* Runs THREADS workers on backend (on `shared` under `lock` when given);
 * returns "" or the first failure, in msg. */
static const char *run_workers(ffnrt_backend backend, ffnrt_context *shared, pthread_mutex_t *lock,
                               char *msg, size_t cap)
{
    pthread_t threads[THREADS];
    worker workers[THREADS];
    start_line start;
    start_line_init(&start, THREADS);
    msg[0] = '\0';
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (worker){backend, shared, lock, &start, i, ""};
        if (pthread_create(&threads[i], NULL, worker_main, &workers[i]) != 0)
            abort(); /* the start line would never open */
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    start_line_destroy(&start);
    for (int i = 0; i < THREADS && !msg[0]; i++)
        if (workers[i].failure[0])
            snprintf(msg, cap, "%s on %s", workers[i].failure, ffnrt_backend_name(backend));
    return msg;
}

#ifndef FFNRT_THREADS_MAIN
BACKEND_PARAMETERS(threads, own_contexts)

/* THREADS threads, each creating, using and destroying its own contexts,
 * all at once. */
ParameterizedTest(ffnrt_backend *b, threads, own_contexts)
{
    /* Skips (where allowed) or fails here if the backend is missing. */
    test_context_done(test_context(*b, NULL));
    char msg[600];
    cr_assert_str_empty(run_workers(*b, NULL, NULL, msg, sizeof msg), "%s", msg);
}

BACKEND_PARAMETERS(threads, shared_context)

/* The documented way to share a context: the user's mutex around each use. */
ParameterizedTest(ffnrt_backend *b, threads, shared_context)
{
    ffnrt_context *ctx = test_context(*b, NULL);
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    char msg[600];
    cr_assert_str_empty(run_workers(*b, ctx, &lock, msg, sizeof msg), "%s", msg);
    test_context_done(ctx);
}
#endif

typedef struct first_use {
    start_line *start;
    size_t count;
    ffnrt_status available[TEST_BACKENDS];
} first_use;

static void *first_use_main(void *arg)
{
    first_use *f = arg;
    start_line_wait(f->start);
    if (ffnrt_device_count(&f->count) != FFNRT_OK)
        f->count = (size_t)-1;
    for (int b = 0; b < TEST_BACKENDS; b++)
        f->available[b] = ffnrt_backend_available(test_backends[b]);
    return NULL;
}

/* The process-wide state (loading both APIs, the device registry) is built
 * on first use; many threads making that first call at once must all see
 * the same devices. Call it before anything else in the process. */
static const char *first_use_check(char *msg, size_t cap)
{
    enum { CALLERS = 8 };
    pthread_t threads[CALLERS];
    first_use f[CALLERS];
    start_line start;
    start_line_init(&start, CALLERS);
    msg[0] = '\0';
    for (int i = 0; i < CALLERS; i++) {
        f[i] = (first_use){&start, 0, {0}};
        if (pthread_create(&threads[i], NULL, first_use_main, &f[i]) != 0)
            abort();
    }
    for (int i = 0; i < CALLERS; i++)
        pthread_join(threads[i], NULL);
    start_line_destroy(&start);
    size_t count = 0;
    if (ffnrt_device_count(&count) != FFNRT_OK || count == 0)
        snprintf(msg, cap, "no device found");
    for (int i = 0; i < CALLERS && !msg[0]; i++) {
        if (f[i].count != count)
            snprintf(msg, cap, "thread %d saw %zu devices, then %zu", i, f[i].count, count);
        for (int b = 0; b < TEST_BACKENDS && !msg[0]; b++)
            if (f[i].available[b] != ffnrt_backend_available(test_backends[b]))
                snprintf(msg, cap, "thread %d: %s availability %s, then %s", i,
                         ffnrt_backend_name(test_backends[b]), ffnrt_status_string(f[i].available[b]),
                         ffnrt_status_string(ffnrt_backend_available(test_backends[b])));
    }
    return msg;
}


#ifdef FFNRT_THREADS_MAIN
/* Leaves a tuning result in the disk cache for backend's device, so that
 * contexts created at once on many threads each read it back (a parser
 * with hidden state raced there once). Returns 0 on success. */
static int seed_tuning(ffnrt_backend backend)
{
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.backend = backend;
    o.device_index = 0;
    ffnrt_context *ctx = NULL;
    if (ffnrt_context_create(&o, &ctx) != FFNRT_OK)
        return -1;
    float w[3 * 8 * 12];
    for (int i = 0; i < 3 * 8 * 12; i++)
        w[i] = (float)(i % 5 - 2) / 16.0f;
    ffnrt_ffn_desc d = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, 8, 12);
    ffnrt_ffn_weights wt = {0};
    wt.w_gate_value = w;
    wt.w_out = w + 2 * 8 * 12;
    ffnrt_ffn *layer = NULL;
    ffnrt_tensor *x = NULL, *y = NULL;
    int64_t shape[2] = {1, 8};
    int rc = ffnrt_ffn_create(ctx, &d, &wt, &layer) == FFNRT_OK &&
                     ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &x) == FFNRT_OK &&
                     ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &y) == FFNRT_OK &&
                     ffnrt_tensor_write(x, w, 8 * sizeof(float)) == FFNRT_OK &&
                     ffnrt_ffn_autotune(layer, x, y) == FFNRT_OK
                 ? 0
                 : -1;
    ffnrt_ffn_destroy(layer);
    ffnrt_context_destroy(ctx);
    return rc;
}
#endif

#ifndef FFNRT_THREADS_MAIN
/* Criterion runs each test in a fresh process: this is its first call. */
Test(threads, first_use)
{
    char msg[256];
    cr_assert_str_empty(first_use_check(msg, sizeof msg), "%s", msg);
}
#else
int main(void)
{
    char msg[600];
    int failed = 0;
    if (*first_use_check(msg, sizeof msg)) {
        fprintf(stderr, "threads first_use: %s\n", msg);
        failed = 1;
    }
    for (int b = 0; b < TEST_BACKENDS; b++) {
        if (seed_tuning(test_backends[b]) != 0) {
            fprintf(stderr, "threads seed_tuning: %s\n", ffnrt_last_error_message());
            failed = 1;
        }
        if (*run_workers(test_backends[b], NULL, NULL, msg, sizeof msg)) {
            fprintf(stderr, "threads own_contexts: %s\n", msg);
            failed = 1;
        }
        ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
        o.backend = test_backends[b];
        o.device_index = 0;
        o.validation = test_backends[b] == FFNRT_BACKEND_VULKAN && test_validation_wanted();
        ffnrt_context *ctx = NULL;
        pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
        if (ffnrt_context_create(&o, &ctx) != FFNRT_OK) {
            fprintf(stderr, "threads shared_context: %s\n", ffnrt_last_error_message());
            failed = 1;
        } else if (*run_workers(test_backends[b], ctx, &lock, msg, sizeof msg)) {
            fprintf(stderr, "threads shared_context: %s\n", msg);
            failed = 1;
        }
        ffnrt_context_destroy(ctx);
    }
    printf("threads: %s\n", failed ? "FAILED" : "ok");
    return failed;
}
#endif
