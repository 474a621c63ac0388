/* Cold and warm start of gated FFN layers (see bench_start.h).
 *
 * Also a small command when built with -DBENCH_START_MAIN (the bench_start
 * target, which `ffnrt bench` runs for the starts in a fresh process):
 * bench_start opencl|vulkan CACHE_DIR|off [runs [device index [layer]]]
 * prints one line per run with the time and the cache's hits. */
#include "bench_start.h"
#include "ffnrt_lab.h"
#include "lab.h"
#ifndef BENCH_START_MAIN
#include "bench_parts.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The layers whose first call is timed: a model-sized SwiGLU in fp32 at
 * decode, and the tiny f16 GEGLU of the busy-machine report, whose first
 * call is nearly all kernel compilation (the README's first-call table). */
const bench_start_layer bench_start_layers[BENCH_START_LAYERS] = {
    {"swiglu 512x1376", FFNRT_SWIGLU, 512, 1376, 1, FFNRT_DTYPE_F32, "f32", "t1"},
    {"geglu 32x48", FFNRT_GEGLU, 32, 48, 37, FFNRT_DTYPE_F16, "f16", "t37"},
};

static void fill(float *w, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        w[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 0.05f;
    }
}

double bench_start_ms(const bench_start_layer *l, ffnrt_backend backend, uint32_t index, const char *cache_dir,
                      uint64_t *hits)
{
    size_t wn = (size_t)l->d * l->hidden, xn = (size_t)l->d * l->tokens;
    size_t esize = l->dtype == FFNRT_DTYPE_F32 ? 4 : 2, xbytes = xn * esize;
    float *wg = malloc(wn * sizeof *wg), *wv = malloc(wn * sizeof *wv), *wo = malloc(wn * sizeof *wo);
    float *x = malloc(xn * sizeof *x);
    void *xs = malloc(xbytes), *ys = malloc(xbytes); /* x and y as stored */
    double ms = -1;
    if (!wg || !wv || !wo || !x || !xs || !ys)
        goto out;
    fill(wg, wn, 1);
    fill(wv, wn, 2);
    fill(wo, wn, 3);
    fill(x, xn, 4);
    if (l->dtype == FFNRT_DTYPE_F32)
        memcpy(xs, x, xbytes);
    else
        ffnrt_f32_to_f16_array(x, xs, xn);

    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.backend = backend;
    o.device_index = (int)index;
    o.cache_dir = cache_dir;
    o.disable_disk_cache = cache_dir == NULL;
    ffnrt_context *ctx = NULL;
    ffnrt_ffn *layer = NULL;
    ffnrt_tensor *tx = NULL, *ty = NULL;
    double t0 = lab_now_ms();
    if (ffnrt_context_create(&o, &ctx) != FFNRT_OK)
        goto out;
    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, l->d, l->hidden);
    desc.glu = (ffnrt_glu_desc)FFNRT_GLU_DESC_INIT(l->glu);
    desc.dtype = l->dtype;
    ffnrt_ffn_weights w = {0};
    w.w_gate = wg;
    w.w_value = wv;
    w.w_out = wo;
    int64_t shape[2] = {(int64_t)l->tokens, (int64_t)l->d};
    int ok = ffnrt_ffn_create(ctx, &desc, &w, &layer) == FFNRT_OK &&
             ffnrt_tensor_create(ctx, l->dtype, 2, shape, &tx) == FFNRT_OK &&
             ffnrt_tensor_create(ctx, l->dtype, 2, shape, &ty) == FFNRT_OK &&
             ffnrt_tensor_write(tx, xs, xbytes) == FFNRT_OK && ffnrt_ffn_forward(layer, tx, ty) == FFNRT_OK &&
             ffnrt_tensor_read(ty, ys, xbytes) == FFNRT_OK;
    if (ok)
        ms = lab_now_ms() - t0;
    if (hits) {
        ffnrt_cache_stats s;
        *hits = ffnrt_context_cache_stats(ctx, &s) == FFNRT_OK ? s.hits : 0;
    }
    ffnrt_tensor_destroy(tx);
    ffnrt_tensor_destroy(ty);
    ffnrt_ffn_destroy(layer);
    ffnrt_context_destroy(ctx);
out:
    free(wg);
    free(wv);
    free(wo);
    free(x);
    free(xs);
    free(ys);
    return ms;
}

#ifndef BENCH_START_MAIN

/* Counts a folder's entries (ffnrt_lab_dir_each's callback). */
static void count_entry(const char *dir, const char *name, void *arg)
{
    (void)dir, (void)name;
    ++*(int *)arg;
}

/* A start in a fresh process whose drivers' caches (PoCL's, Mesa's, which
 * a process reads once) are empty directories under dir, with ffnrt's disk
 * cache in ffnrt_dir: the bench_start helper. Milliseconds, or a negative
 * number with the reason in why. *fresh_driver_cache: whether the driver
 * wrote into the empty folders it was given; one that did not kept its own
 * cache (a vendor's driver, or under Wine, where the Windows side's
 * variables never reach the host's driver). */
static double process_ms(const bench_device *dev, size_t layer, const char *exe, const char *dir, const char *ffnrt_dir,
                         int *fresh_driver_cache, char *why, size_t why_len)
{
    /* The drivers' cache directories exist and are empty (Mesa disables a
     * missing one with a message). */
    static const char *const subdirs[] = {"/pocl", "/mesa", "/xdg"};
    char env[3][700];
    for (size_t i = 0; i < 3; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s%s", dir, subdirs[i]);
        if (ffnrt_lab_make_dirs(path, 0) != 0) {
            snprintf(why, why_len, "cannot create %s (%s)", path, strerror(errno));
            return -1;
        }
        static const char *const names[3] = {"POCL_CACHE_DIR", "MESA_SHADER_CACHE_DIR", "XDG_CACHE_HOME"};
        snprintf(env[i], sizeof env[i], "%s=%s", names[i], path);
    }
    const char *const env_set[] = {env[0], env[1], env[2], NULL};
    char index[16], layer_text[16];
    snprintf(index, sizeof index, "%u", (unsigned)dev->info.index);
    snprintf(layer_text, sizeof layer_text, "%zu", layer);
    char *argv[] = {(char *)exe, (char *)ffnrt_backend_name(dev->info.backend), (char *)ffnrt_dir, "1", index,
                    layer_text, NULL};
    ffnrt_lab_child child;
    FILE *p = bench_spawn_reading(argv, env_set, &child);
    if (!p) {
        snprintf(why, why_len, "cannot start %s (%s)", exe, strerror(errno));
        return -1;
    }
    char line[256];
    double ms = -1;
    while (fgets(line, sizeof line, p)) {
        const char *at = strstr(line, " start ");
        if (at)
            ms = atof(at + 7);
    }
    fclose(p);
    char how[64];
    int status = bench_wait_helper(child, how, sizeof how);
    if (status != 0 || ms < 0) {
        snprintf(why, why_len, "%s failed (%s; its message is above)", exe, how);
        return -1;
    }
    int written = 0;
    for (size_t i = 0; i < 3; i++)
        ffnrt_lab_dir_each(env[i] + strcspn(env[i], "=") + 1, count_entry, &written);
    *fresh_driver_cache = written > 0;
    return ms;
}

/* The "start" rows of a start layer, host time from
 * ffnrt_context_create through the first result read back: cold (every
 * cache empty, in a fresh process), ffnrt-warm (a fresh process, ffnrt's
 * disk cache filled, the drivers' empty), ffnrt-cold (in this process:
 * ffnrt's cache empty, the drivers' as found) and warm (ffnrt's cache
 * filled, the drivers' as found: an app's second launch). */
static int start_rows(const bench_device *dev, const bench_config *cfg, bench_rows *rows, size_t li)
{
    const bench_start_layer *l = &bench_start_layers[li];
    char base[400];
    if (ffnrt_lab_make_temp_dir("ffnrt-bench-start-", base, sizeof base) != 0) {
        fprintf(stderr, "ffnrt bench: start: no temporary folder (%s)\n", strerror(errno));
        return -1;
    }
    int runs[2] = {3, 5};
    double t[2][8];
    uint64_t hits[2] = {0, 0};
    int rc = 0;
    char dir[600];
    /* In fresh processes: every cache empty, then ffnrt's filled by that
     * start while the drivers' are empty again. */
    static const char *const names[2] = {"cold", "ffnrt-warm"};
    static const char *const notes[2][2] = {
        {"ffnrt's cache empty; the driver kept its own", "every cache empty (ffnrt's, PoCL's, Mesa's)"},
        {"ffnrt's cache warm; the driver kept its own", "ffnrt's cache warm, the drivers' empty"}};
    char ffnrt_dir[620];
    snprintf(ffnrt_dir, sizeof ffnrt_dir, "%s/process-ffnrt", base);
    int process_runs = cfg->quick ? 1 : 3; /* a cold PoCL start is seconds */
    char exe[1024], why[1200] = "";
    int have_helper = bench_find_helper("bench_start", 1, exe, sizeof exe, why, sizeof why) == 0;
    for (int k = 0; k < 2 && have_helper; k++) {
        double ts[3];
        int nt = 0, fresh_driver_cache = 1;
        for (int i = 0; i < process_runs; i++) {
            char fresh[600];
            snprintf(fresh, sizeof fresh, "%s/%s%d", base, names[k], i);
            if (k == 0) /* each cold start its own ffnrt cache too; the last one's is kept for ffnrt-warm */
                snprintf(ffnrt_dir, sizeof ffnrt_dir, "%s/ffnrt", fresh);
            int fresh_cache = 0;
            double ms = process_ms(dev, li, exe, fresh, ffnrt_dir, &fresh_cache, why, sizeof why);
            if (ms >= 0) {
                ts[nt++] = 1e-3 * ms;
                fresh_driver_cache &= fresh_cache;
            }
        }
        if (nt == 0) {
            have_helper = 0;
            break;
        }
        qsort(ts, (size_t)nt, sizeof ts[0], lab_cmp_double);
        bench_row *r = bench_rows_push(rows);
        if (!r) {
            rc = -1;
            break;
        }
        bench_row_device(r, dev, "start");
        BENCH_SET(r->op, l->op);
        BENCH_SET(r->dtype, l->dtype_name);
        BENCH_SET(r->path, names[k]);
        BENCH_SET(r->shape, l->shape);
        r->size = 1;
        bench_row_times(r, NULL, ts, nt);
        BENCH_SET(r->note, notes[k][fresh_driver_cache]);
        bench_row_metric(r, "driver_cache_empty", fresh_driver_cache);
        bench_row_done(cfg, r);
    }
    if (!have_helper) { /* the rows are documented: say why they are missing */
        char text[sizeof dev->meta->notes[0]];
        snprintf(text, sizeof text, "start of %s on %s:%u: no cold or ffnrt-warm rows: %.250s", l->op,
                 ffnrt_backend_name(dev->info.backend), (unsigned)dev->info.index, why);
        bench_meta_add_note(dev->meta, text);
    }
    for (int warm = 0; warm < 2 && rc == 0; warm++) {
        if (warm) { /* fill the warm directory once */
            snprintf(dir, sizeof dir, "%s/warm", base);
            if (bench_start_ms(l, dev->info.backend, dev->info.index, dir, NULL) < 0)
                rc = -1;
        }
        for (int i = 0; i < runs[warm] && rc == 0; i++) {
            if (!warm)
                snprintf(dir, sizeof dir, "%s/cold%d", base, i);
            uint64_t h = 0;
            double ms = bench_start_ms(l, dev->info.backend, dev->info.index, dir, &h);
            if (ms < 0) {
                fprintf(stderr, "ffnrt bench: start: %s\n", ffnrt_last_error_message());
                rc = -1;
            }
            t[warm][i] = 1e-3 * ms;
            hits[warm] = h;
        }
        if (rc != 0)
            break;
        qsort(t[warm], (size_t)runs[warm], sizeof t[warm][0], lab_cmp_double);
        bench_row *r = bench_rows_push(rows);
        if (!r) {
            rc = -1;
            break;
        }
        bench_row_device(r, dev, "start");
        BENCH_SET(r->op, l->op);
        BENCH_SET(r->dtype, l->dtype_name);
        BENCH_SET(r->path, warm ? "warm" : "ffnrt-cold");
        BENCH_SET(r->shape, l->shape);
        r->size = 1;
        bench_row_times(r, NULL, t[warm], runs[warm]);
        snprintf(r->note, sizeof r->note, "ffnrt's cache %s, drivers' as found; %llu hits",
                 warm ? "warm" : "empty", (unsigned long long)hits[warm]);
        bench_row_done(cfg, r);
    }
    if (ffnrt_lab_remove_tree(base) != 0)
        fprintf(stderr, "ffnrt bench: could not remove %s (%s)\n", base, strerror(errno));
    return rc;
}

/* Every start layer that --op asks for (its GLU kind's name); --quick
 * times the first only, unless --op names the others. */
int bench_part_start(const bench_device *dev, const bench_config *cfg, bench_rows *rows)
{
    for (size_t li = 0; li < BENCH_START_LAYERS; li++) {
        const char *kind = ffnrt_glu_name(bench_start_layers[li].glu);
        if (!bench_wants_op(cfg, kind) || (li > 0 && cfg->quick && cfg->nops == 0))
            continue;
        if (start_rows(dev, cfg, rows, li) != 0)
            return -1;
    }
    return 0;
}
#endif

#ifdef BENCH_START_MAIN
int main(int argc, char **argv)
{
    ffnrt_lab_arguments_utf8(&argc, &argv); /* the scratch folder's path as UTF-8 on Windows */
    if (argc < 3) {
        fprintf(stderr, "usage: %s opencl|vulkan CACHE_DIR|off [runs [device index [layer]]]\n", argv[0]);
        return 2;
    }
    ffnrt_backend b = strcmp(argv[1], "vulkan") == 0 ? FFNRT_BACKEND_VULKAN : FFNRT_BACKEND_OPENCL;
    const char *dir = strcmp(argv[2], "off") == 0 ? NULL : argv[2];
    int runs = argc > 3 ? atoi(argv[3]) : 1;
    uint32_t index = argc > 4 ? (uint32_t)strtoul(argv[4], NULL, 10) : 0;
    size_t layer = argc > 5 ? (size_t)strtoul(argv[5], NULL, 10) : 0;
    if (layer >= BENCH_START_LAYERS) {
        fprintf(stderr, "bench_start: layer %zu: there are %d\n", layer, BENCH_START_LAYERS);
        return 2;
    }
    for (int i = 0; i < runs; i++) {
        uint64_t hits = 0;
        double ms = bench_start_ms(&bench_start_layers[layer], b, index, dir, &hits);
        if (ms < 0) {
            fprintf(stderr, "bench_start: %s\n", ffnrt_last_error_message());
            return 1;
        }
        printf("%s start %.1f ms (cache %s, %llu hits)\n", argv[1], ms, dir ? dir : "off",
               (unsigned long long)hits);
    }
    return 0;
}
#endif
