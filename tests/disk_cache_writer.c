/* One of the two writers of test_disk_cache's two_processes_at_once, a
 * process of its own on every OS (started by the suite through the lab's
 * child-process door: posix_spawn, or CreateProcessW under Windows):
 *
 *   disk_cache_writer BACKEND CACHE_DIR GO_FILE OUT_FILE [--validation]
 *
 * It opens a context on BACKEND (ffnrt_backend's number) with the disk
 * cache in CACHE_DIR, waits until GO_FILE exists so that both writers
 * build the same kernel at the same moment, runs the suite's SiLU and
 * writes its SILU_N results to OUT_FILE, and to stdout the disk cache's
 * counters: hits, misses, rejected, writes, write failures. Exit status 0,
 * or the step that failed, with its message on stderr. */
#include "disk_cache_silu.h"
#include "ffnrt.h"
#include "ffnrt_lab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _WIN32
#include <windows.h>
#else
#include <time.h>
#endif

static void pause_ms(unsigned ms)
{
#ifdef _WIN32
    Sleep(ms);
#else
    nanosleep(&(struct timespec){0, (long)ms * 1000000L}, NULL);
#endif
}

static int fail(int step, const char *what, const char *why)
{
    fprintf(stderr, "disk_cache_writer: %s: %s\n", what, why ? why : "");
    return step;
}

int main(int argc, char **argv)
{
    if (ffnrt_lab_arguments_utf8(&argc, &argv) != 0 || (argc != 5 && argc != 6) ||
        (argc == 6 && strcmp(argv[5], "--validation") != 0))
        return fail(2, "usage", "disk_cache_writer BACKEND CACHE_DIR GO_FILE OUT_FILE [--validation]");
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.backend = (ffnrt_backend)atoi(argv[1]);
    o.device_index = 0;
    o.validation = argc == 6;
    o.cache_dir = argv[2];
    o.ignore_quirks = 1; /* PoCL's binaries kept too, as in the suite */
    ffnrt_context *ctx;
    if (ffnrt_context_create(&o, &ctx) != FFNRT_OK)
        return fail(11, "context", ffnrt_last_error_message());
    /* Ten minutes at most: a suite that died leaves no writer behind. */
    for (int waited = 0; !ffnrt_lab_is_file(argv[3]); waited++) {
        if (waited == 600000) {
            ffnrt_context_destroy(ctx);
            return fail(10, "no go file", argv[3]);
        }
        pause_ms(1);
    }
    float x[SILU_N], y[SILU_N];
    inputs(x);
    int64_t shape = SILU_N;
    ffnrt_tensor *t;
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_SILU);
    int rc = 0;
    if (ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 1, &shape, &t) != FFNRT_OK) {
        rc = fail(12, "tensor", ffnrt_context_last_error(ctx));
    } else {
        if (ffnrt_tensor_write(t, x, sizeof x) != FFNRT_OK || ffnrt_activation_forward(ctx, &d, t, t) != FFNRT_OK ||
            ffnrt_tensor_read(t, y, sizeof y) != FFNRT_OK)
            rc = fail(13, "SiLU", ffnrt_context_last_error(ctx));
        ffnrt_tensor_destroy(t);
    }
    ffnrt_cache_stats st;
    if (!rc && ffnrt_context_cache_stats(ctx, &st) != FFNRT_OK)
        rc = fail(16, "cache stats", ffnrt_context_last_error(ctx));
    if (!rc) {
        /* What the cache saw, for the suite: a rejected entry would be one
         * the other writer had left half-written. */
        printf("%llu %llu %llu %llu %llu\n", (unsigned long long)st.hits, (unsigned long long)st.misses,
               (unsigned long long)st.rejected, (unsigned long long)st.writes,
               (unsigned long long)st.write_failures);
        if (st.last_note[0])
            fprintf(stderr, "disk_cache_writer: the cache's last note: %s\n", st.last_note);
        FILE *f = ffnrt_lab_fopen(argv[4], "wb");
        if (!f || fwrite(y, sizeof y, 1, f) != 1)
            rc = fail(14, "writing", argv[4]);
        if (f && fclose(f) != 0 && !rc)
            rc = fail(14, "writing", argv[4]);
    }
    if (ffnrt_context_validation_messages(ctx))
        rc = fail(15, "validation layer", "reported a message (above)");
    ffnrt_context_destroy(ctx);
    return rc;
}
