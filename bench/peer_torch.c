/* PyTorch's CPU training step as the bench's peer (peer_torch.h).
 *
 * The script bench/peers/torch_train.py (copied beside the ffnrt command
 * in a build tree, installed in libexec/ffnrt) builds each train row's
 * layer in PyTorch and times the train row's step: forward, backward of y
 * against a fixed dy (dx and every weight gradient), torch.optim.AdamW
 * (lr 1e-5, weight decay 0), with os.cpu_count() threads, one warm-up
 * step, then runs as bench_measure makes them (--runs MIN MAX, --budget).
 * It prints JSON lines, in a fixed key order that is read here:
 *   {"torch": VERSION, "threads": N, "python": PATH, "blas": LIBRARY}
 *   {"layer": SPEC, "runs": N, "median_ns": M, "min_ns": A, "max_ns": B}
 *   {"layer": SPEC, "skip": REASON}
 *   {"absent": REASON}            (exit 3: this python cannot import torch)
 * PyTorch runs on the host CPU whatever ffnrt's device is, so its row
 * stands beside the device's train row as a time ratio, host clock against
 * host clock; the CPU drivers (PoCL, lavapipe) share those cores with it,
 * one after the other. */
#include "peer_torch.h"
#include "lab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ffnrt.h"

#define TORCH_SCRIPT "torch_train.py"
#define MAX_LAYERS 32


/* Which python imports torch, found once a process: 1 found (python set),
 * -1 none (why set: later devices are not tried again), 0 not looked yet. */
static int torch_state;
static char torch_python[256], torch_why[160], torch_version[48], torch_blas[80];
static int torch_threads;

/* One script run over argv (argv[0] a python); calls line_fn on each line.
 * The exit status, or -1 when it could not start or ended by a signal. */
static int run_script(char **argv, void (*line_fn)(const char *line, void *ctx), void *ctx)
{
    ffnrt_lab_child child;
    FILE *out = bench_spawn_reading(argv, NULL, &child);
    if (!out)
        return -1;
    char line[512];
    while (fgets(line, sizeof line, out)) {
        line[strcspn(line, "\n")] = 0;
        line_fn(line, ctx);
    }
    fclose(out);
    char how[64];
    return bench_wait_helper(child, how, sizeof how);
}

/* The train rows the peer stands beside, and the script's name of their
 * layer: "dense-gelu 768x3072" -> gelu:768x3072:T (the bench's dense
 * workloads use exact GELU, no bias), "swiglu 512x1376" -> swiglu:... */
static int train_layer(const bench_row *r, char *spec, size_t cap)
{
    char name[24];
    long long d, h, t;
    if (strcmp(r->group, "ffn") != 0 || strcmp(r->dir, "train") != 0 || strcmp(r->path, "step") != 0 ||
        strcmp(r->dtype, "f32") != 0 ||
        sscanf(r->op, "%23s %lldx%lld", name, &d, &h) != 3 || sscanf(r->shape, "t%lld", &t) != 1)
        return 0;
    const char *kind = strncmp(name, "dense-", 6) == 0 ? name + 6 : name;
    snprintf(spec, cap, "%s:%lldx%lld:%lld", kind, d, h, t);
    return 1;
}

typedef struct rows_ctx {
    const bench_device *dev;
    size_t first, end;
    bench_rows *rows;
    int started, done, skips;
    char skipped[160];
} rows_ctx;

static void row_line(const char *line, void *arg)
{
    rows_ctx *c = arg;
    char spec[64];
    int runs = 0;
    double med, lo, hi;
    const char *at;
    if ((at = strstr(line, "{\"absent\": \"")) == line) {
        snprintf(torch_why, sizeof torch_why, "%.*s", (int)strcspn(at + 12, "\""), at + 12);
    } else if (sscanf(line, "{\"torch\": \"%47[^\"]\", \"threads\": %d", torch_version, &torch_threads) == 2) {
        c->started = 1;
        if (!(at = strstr(line, "\"blas\": \"")) || sscanf(at, "\"blas\": \"%79[^\"]", torch_blas) != 1)
            snprintf(torch_blas, sizeof torch_blas, "unknown");
    } else if (sscanf(line, "{\"layer\": \"%63[^\"]\", \"runs\": %d, \"median_ns\": %lf, \"min_ns\": %lf, \"max_ns\": %lf", spec,
               &runs, &med, &lo, &hi) == 5 &&
        med > 0) {
        for (size_t i = c->first; i < c->end; i++) {
            bench_row ffn = c->rows->v[i]; /* a copy: pushing may move the array */
            char s[64];
            if (!train_layer(&ffn, s, sizeof s) || strcmp(s, spec) != 0)
                continue;
            bench_row *r = bench_rows_push(c->rows);
            if (!r)
                return;
            bench_row_device(r, c->dev, "peer");
            snprintf(r->op, sizeof r->op, "pytorch-cpu-%.27s", ffn.op);
            BENCH_SET(r->dir, "train");
            BENCH_SET(r->dtype, "f32");
            BENCH_SET(r->path, "step");
            BENCH_SET(r->shape, ffn.shape);
            r->size = ffn.size;
            r->runs = runs;
            r->median_ns = r->host_ns = med;
            r->min_ns = lo;
            r->max_ns = hi;
            r->spread = (hi - lo) / med;
            BENCH_SET(r->timing, "host");
            /* The train row's rate is 3x the forward's FLOPs over its time:
             * the same count over PyTorch's. */
            r->rate = ffn.rate * ffn.median_ns / med;
            BENCH_SET(r->rate_unit, "GFLOP/s");
            /* PyTorch's rate over ffnrt's: ffnrt's step time over PyTorch's. */
            r->ratio = ffn.median_ns / med;
            BENCH_SET(r->ratio_to, "ffnrt-step");
            bench_row_metric(r, "ffnrt_over_torch", r->ratio);
            snprintf(r->note, sizeof r->note, "ffnrt's step %.2fx PyTorch's time (host clocks)", r->ratio);
            c->done++;
            break;
        }
    } else if ((at = strstr(line, "\"skip\": \"")) != NULL) {
        if (c->skips++ == 0)
            snprintf(c->skipped, sizeof c->skipped, "pytorch: skipped %.*s", (int)strcspn(at + 9, "\""), at + 9);
    }
}

int bench_peer_torch_rows(const bench_device *dev, const bench_config *cfg, size_t first, bench_rows *rows)
{
    char specs[MAX_LAYERS][64], script[1024], runs_lo[16], runs_hi[16], budget[32];
    int nl = 0;
    size_t end = rows->n;
    for (size_t i = first; i < end && nl < MAX_LAYERS; i++)
        nl += train_layer(&rows->v[i], specs[nl], sizeof specs[0]);
    if (nl == 0)
        return 0;
    char why[1200];
    if (bench_find_helper(TORCH_SCRIPT, 0, script, sizeof script, why, sizeof why) != 0) {
        char line[1300];
        snprintf(line, sizeof line, "pytorch: absent (%s)", why);
        bench_meta_add_peer(dev->meta, line);
        return 0;
    }
    bench_row probe = {0};
    bench_row_device(&probe, dev, "peer");
    BENCH_SET(probe.op, "pytorch-cpu");
    bench_progress(&probe);
    snprintf(runs_lo, sizeof runs_lo, "%d", cfg->min_runs);
    snprintf(runs_hi, sizeof runs_hi, "%d", cfg->max_runs);
    snprintf(budget, sizeof budget, "%g", cfg->budget_s);
    char *argv[MAX_LAYERS + 10];
    int na = 1;
    argv[na++] = script;
    argv[na++] = "--runs";
    argv[na++] = runs_lo;
    argv[na++] = runs_hi;
    argv[na++] = "--budget";
    argv[na++] = budget;
    for (int i = 0; i < nl; i++)
        argv[na++] = specs[i];
    argv[na] = NULL;
    /* The python: the one found before in this process, else FFNRT_PYTHON
     * (alone), else python3 on PATH, then the distribution's
     * /usr/bin/python3 (python3-torch's). A python without torch says so
     * at once (exit 3) and the next is tried. */
    const char *env = getenv("FFNRT_PYTHON");
    const char *candidates[2] = {env && *env ? env : "python3", env && *env ? NULL : "/usr/bin/python3"};
    rows_ctx c = {dev, first, end, rows, 0, 0, 0, ""};
    int rc = -1;
    char first_why[160] = "";
    double t0 = lab_now_s();
    for (int i = 0; i < 2 && torch_state >= 0; i++) {
        if (torch_state == 1 ? i > 0 : !candidates[i])
            break;
        argv[0] = torch_state == 1 ? torch_python : (char *)candidates[i];
        torch_why[0] = 0;
        rc = run_script(argv, row_line, &c);
        if (c.started) {
            if (torch_state == 0) /* argv[0] is torch_python itself once found */
                snprintf(torch_python, sizeof torch_python, "%s", argv[0]);
            torch_state = 1;
            break;
        }
        if (!first_why[0])
            snprintf(first_why, sizeof first_why, "%s",
                     torch_why[0] ? torch_why : rc < 0 ? "cannot run python3" : "python3 gave no torch line");
    }
    bench_measure_add(lab_now_s() - t0);
    if (!c.started && torch_state == 0) {
        torch_state = -1;
        snprintf(torch_why, sizeof torch_why, "%s", first_why);
    }
    if (torch_state < 0) {
        char peer[400];
        snprintf(peer, sizeof peer, "pytorch: absent (%.90s; apt-get install python3-torch, or FFNRT_PYTHON)",
                 torch_why);
        bench_meta_add_peer(dev->meta, peer);
        return 0;
    }
    char peer[400];
    if (rc != 0) {
        snprintf(peer, sizeof peer, "pytorch: %s failed (%s %d) after %d row(s)", TORCH_SCRIPT,
                 rc < 0 ? "signal or no start" : "status", rc, c.done);
        bench_meta_add_peer(dev->meta, peer);
    }
    if (c.done) {
        snprintf(peer, sizeof peer,
                 "pytorch: ok (torch %s, %d threads, BLAS %.40s, %.40s: f32 train steps on the host CPU, host time)",
                 torch_version, torch_threads, torch_blas, torch_python);
        bench_meta_add_peer(dev->meta, peer);
    }
    if (c.skips)
        bench_meta_add_peer(dev->meta, c.skipped);
    return 0;
}
