/* Every kernel variant the dispatcher reaches compiles, whether or not a
 * device suite runs it. The device suites run what their shapes and
 * devices choose; a variant only a phone, a block format at decode on a
 * GPU, or the tiled level with statistics would build is compiled here.
 *
 * Plans (which run nothing) walk a grid on each device as found and under
 * GPU profiles, with a sink that receives the source of every kernel the
 * plan would build (core/context.h, source_sink): activation and GLU ops
 * over every kind, storage, arithmetic and statistics; FFN layers over
 * every storage x weight format x product level (blocked, matrix-vector,
 * tiled) x tokens, with the epilogue (every dense activation and gate),
 * bias, path, statistics and fp16 arithmetic cycling through them. Each
 * distinct source then goes through the front end of its API on the host:
 * GLSL through glslang to SPIR-V and SPIRV-Tools' validator (what the
 * Vulkan backend runs before a driver sees it), OpenCL C through clang's
 * OpenCL front end (FFNRT_CLANG, -fsyntax-only, OpenCL C 1.2 as the OpenCL
 * backend builds it). The backward kernels are not plannable and are
 * compiled by the suites that run them (test_activations, test_gradients). */
#include "backend/vulkan/glsl_compiler.h"
#include "core/context.h"
#include "device_fixture.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The distinct sources the plans reached on one backend, over every
 * profile (the key is the whole build), with the workgroup limit of the
 * context each came from. */
typedef struct variant_set {
    char **keys;
    char **sources;
    uint32_t *max_workgroup;
    uint32_t current_max_workgroup;
    size_t count, cap;
} variant_set;

static void collect(void *user, const char *key, const char *source)
{
    variant_set *vs = user;
    for (size_t i = 0; i < vs->count; i++)
        if (strcmp(vs->keys[i], key) == 0)
            return;
    if (vs->count == vs->cap) {
        vs->cap = vs->cap ? 2 * vs->cap : 256;
        vs->keys = realloc(vs->keys, vs->cap * sizeof *vs->keys);
        vs->sources = realloc(vs->sources, vs->cap * sizeof *vs->sources);
        vs->max_workgroup = realloc(vs->max_workgroup, vs->cap * sizeof *vs->max_workgroup);
        cr_assert(vs->keys && vs->sources && vs->max_workgroup);
    }
    vs->keys[vs->count] = strdup(key);
    vs->sources[vs->count] = strdup(source);
    cr_assert(vs->keys[vs->count] && vs->sources[vs->count]);
    vs->max_workgroup[vs->count] = vs->current_max_workgroup;
    vs->count++;
}

static void plan_ok(ffnrt_status st, ffnrt_plan *plan, const char *what)
{
    cr_assert_eq(st, FFNRT_OK, "planning %s: %s", what, ffnrt_last_error_message());
    ffnrt_plan_destroy(plan);
}

static const ffnrt_dtype dtypes[] = {FFNRT_DTYPE_F32, FFNRT_DTYPE_F16, FFNRT_DTYPE_BF16};
#define DTYPES (sizeof dtypes / sizeof dtypes[0])

static void set_stats(ffnrt_context *ctx, int on, uint32_t bins)
{
    ffnrt_stats_options so = FFNRT_STATS_OPTIONS_INIT;
    so.enabled = on;
    so.bins = bins;
    cr_assert_eq(ffnrt_context_set_stats(ctx, &so), FFNRT_OK, "%s", ffnrt_last_error_message());
}

/* fp16 arithmetic where the device has it, on 16-bit storage. */
static int fp16_arithmetic(ffnrt_context *ctx, ffnrt_dtype dtype)
{
    ffnrt_device_info info;
    ffnrt_context_get_device_info(ctx, &info);
    return info.fp16_arithmetic && dtype == FFNRT_DTYPE_F16;
}

/* Element-wise ops: every kind x storage x arithmetic x statistics. */
static void plan_elementwise(ffnrt_context *ctx)
{
    /* PReLU's slopes: one shared (the first pass of the arithmetic loop),
     * or one a channel (the second: the lookup table's other variants),
     * 3 channels of 1000 elements. */
    ffnrt_tensor *slopes[DTYPES];
    int64_t three = 3;
    for (size_t d = 0; d < DTYPES; d++)
        cr_assert_eq(ffnrt_tensor_create(ctx, dtypes[d], 1, &three, &slopes[d]), FFNRT_OK, "%s",
                     ffnrt_last_error_message());
    for (int stats = 0; stats < 2; stats++) {
        set_stats(ctx, stats, stats ? 16 : 0);
        for (size_t d = 0; d < DTYPES; d++)
            for (int f16 = 0; f16 < 2; f16++) {
                ffnrt_compute compute = f16 && fp16_arithmetic(ctx, dtypes[d]) ? FFNRT_COMPUTE_F16 : FFNRT_COMPUTE_AUTO;
                for (int a = 0; a < FFNRT_ACT_COUNT; a++) {
                    ffnrt_activation_desc ad = FFNRT_ACTIVATION_DESC_INIT((ffnrt_activation)a);
                    ad.compute = compute;
                    if (a == FFNRT_ACT_PRELU && f16)
                        ad.slopes = slopes[d];
                    ffnrt_plan *plan = NULL;
                    plan_ok(ffnrt_activation_plan(ctx, &ad, dtypes[d], 3 * 1000, &plan), plan, "an activation");
                }
                for (int g = 0; g < FFNRT_GLU_COUNT; g++) {
                    ffnrt_glu_desc gd = FFNRT_GLU_DESC_INIT((ffnrt_glu)g);
                    gd.compute = compute;
                    ffnrt_plan *plan = NULL;
                    plan_ok(ffnrt_glu_plan(ctx, &gd, dtypes[d], 7, 96, &plan), plan, "a GLU");
                }
            }
    }
    set_stats(ctx, 0, 0);
    for (size_t d = 0; d < DTYPES; d++)
        ffnrt_tensor_destroy(slopes[d]);
}

/* The product levels a plan can be steered to: the device's own choice,
 * then each level forced. */
static const char *const levels[] = {NULL, "blocked", "tiled", "matvec"};
#define LEVELS (sizeof levels / sizeof levels[0])

static void plan_ffn(ffnrt_context *ctx)
{
    static const ffnrt_weight_format quant[] = {FFNRT_WEIGHT_Q8_0, FFNRT_WEIGHT_Q4_0, FFNRT_WEIGHT_Q4_1,
                                                FFNRT_WEIGHT_Q4_K, FFNRT_WEIGHT_Q6_K};
    static const int64_t tokens[] = {1, 5, 64};
    unsigned cycle = 0;
    for (size_t lv = 0; lv < LEVELS; lv++) {
        if (levels[lv])
            cr_assert_eq(ffnrt_context_force(ctx, "ffn.kernel", levels[lv]), FFNRT_OK, "%s",
                         ffnrt_last_error_message());
        for (size_t d = 0; d < DTYPES; d++)
            for (int fmt = -1; fmt < (int)(sizeof quant / sizeof quant[0]); fmt++)
                for (size_t t = 0; t < sizeof tokens / sizeof tokens[0]; t++, cycle++) {
                    /* The epilogue, bias, path, statistics and arithmetic
                     * cycle with their own periods (14 at most) over the
                     * 54 consecutive plans of each level, so every value
                     * of each is planned at every level. */
                    int epilogue = (int)(cycle % (FFNRT_ACT_COUNT + FFNRT_GLU_COUNT));
                    int gated = epilogue >= FFNRT_ACT_COUNT;
                    if (!gated && epilogue == FFNRT_ACT_PRELU)
                        epilogue = FFNRT_ACT_SWISH; /* no PReLU in a layer */
                    ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(gated ? FFNRT_FFN_GATED : FFNRT_FFN_DENSE, 256, 512);
                    if (fmt < 0 && cycle % 2) /* K not a multiple of 4: the scalar loads */
                        desc.d_model = 250, desc.hidden = 254;
                    desc.dtype = dtypes[d];
                    if (gated)
                        desc.glu = (ffnrt_glu_desc)FFNRT_GLU_DESC_INIT((ffnrt_glu)(epilogue - FFNRT_ACT_COUNT));
                    else
                        desc.activation = (ffnrt_activation_desc)FFNRT_ACTIVATION_DESC_INIT((ffnrt_activation)epilogue);
                    desc.bias = (int)(cycle % 3 != 0);
                    desc.path = cycle % 5 == 4 ? FFNRT_FFN_PATH_UNFUSED : FFNRT_FFN_PATH_FUSED;
                    if (cycle % 7 >= 4 && fp16_arithmetic(ctx, desc.dtype))
                        desc.activation.compute = desc.glu.compute = FFNRT_COMPUTE_F16;
                    if (fmt >= 0)
                        desc.format_in = desc.format_out = quant[fmt];
                    if (fmt >= 0 && gated)
                        desc.format_value = quant[fmt];
                    set_stats(ctx, cycle % 4 == 1, cycle % 8 == 1 ? 16 : 0);
                    /* The integer path (Q8_0, Q4_0, Q4_1 on the blocked
                     * and matrix-vector kernels) every other plan. */
                    cr_assert_eq(ffnrt_context_force(ctx, "ffn.int_dot", cycle % 2 ? NULL : "on"), FFNRT_OK);
                    ffnrt_plan *plan = NULL;
                    plan_ok(ffnrt_ffn_plan(ctx, &desc, tokens[t], &plan), plan, "an FFN layer");
                }
    }
    set_stats(ctx, 0, 0);
    ffnrt_context_force(ctx, "ffn.int_dot", NULL);
}

/* GLSL: glslang to SPIR-V, then the validator. */
static int compile_glsl(const variant_set *vs)
{
    int failed = 0;
    for (size_t i = 0; i < vs->count; i++) {
        uint32_t *words = NULL;
        size_t n = 0;
        char *log = NULL;
        ffnrt_error err = {0};
        ffnrt_status st = ffnrt_glsl_to_spirv(vs->sources[i], vs->max_workgroup[i], &words, &n, &log, &err);
        char why[512] = "";
        if (st == FFNRT_OK && ffnrt_spirv_valid(words, n, why, sizeof why) != 1)
            st = FFNRT_ERROR_COMPILE_FAILED;
        if (st != FFNRT_OK && failed++ < 3)
            cr_log_error("GLSL variant %.600s\ndoes not compile: %.2000s%s", vs->keys[i], log ? log : "", why);
        free(words);
        free(log);
    }
    return failed;
}

/* OpenCL C: clang's OpenCL front end over the sources, written to a
 * temporary folder, a few dozen files a run. SPIR's target has _Float16;
 * __F16C__ models PoCL on an x86 host with F16C, which takes the prelude's
 * hardware fp16 conversion. */
static int compile_opencl(const variant_set *vs)
{
    const char *clang = getenv("FFNRT_CLANG") ? getenv("FFNRT_CLANG") : FFNRT_TEST_CLANG;
    char dir[] = "/tmp/ffnrt_variants_XXXXXX";
    cr_assert(mkdtemp(dir), "mkdtemp");
    int failed = 0;
    const size_t batch = 48;
    for (size_t first = 0; first < vs->count; first += batch) {
        size_t last = first + batch < vs->count ? first + batch : vs->count;
        char *argv[16 + 48] = {(char *)clang, "-x", "cl", "-cl-std=CL1.2", "-target", "spir64", "-Xclang",
                               "-finclude-default-header", "-fsyntax-only", "-w", "-ferror-limit=5", "-D__F16C__"};
        int argc = 12;
        char names[48][64];
        for (size_t i = first; i < last; i++) {
            snprintf(names[i - first], sizeof names[0], "%s/v%05zu.cl", dir, i);
            FILE *f = fopen(names[i - first], "w");
            cr_assert(f, "writing %s", names[i - first]);
            fputs(vs->sources[i], f);
            fclose(f);
            argv[argc++] = names[i - first];
        }
        argv[argc] = NULL;
        pid_t pid = fork();
        cr_assert(pid >= 0, "fork");
        if (pid == 0) {
            execvp(clang, argv);
            _exit(127);
        }
        int status = 0;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) != 127, "%s could not be run (FFNRT_CLANG names it)", clang);
        if (WEXITSTATUS(status) != 0) {
            /* Which files failed: clang names them on stderr, above. */
            failed++;
            cr_log_error("OpenCL C variants %zu..%zu (%s/v*.cl): clang's front end refused one; the first key: %.600s",
                         first, last - 1, dir, vs->keys[first]);
        } else {
            for (size_t i = first; i < last; i++)
                unlink(names[i - first]);
        }
    }
    if (!failed)
        rmdir(dir);
    return failed;
}

/* The device as found, then GPU profiles: the smallest limits, and two
 * with fp16 arithmetic and other subgroups. */
static const char *const profiles[] = {NULL, "vulkan-minimum", "adreno-640", "apple-m1-moltenvk"};
#define PROFILES (sizeof profiles / sizeof profiles[0])

BACKEND_PARAMETERS(variants, compile)

ParameterizedTest(ffnrt_backend *backend, variants, compile, .timeout = 1800)
{
    variant_set vs = {0};
    int seen[3] = {0, 0, 0}, stats = 0, half_f16c = 0;
    for (size_t p = 0; p < PROFILES; p++) {
        ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
        o.profile = profiles[p];
        ffnrt_context *ctx = test_context(*backend, &o);
        if (!ctx)
            return;
        size_t before = vs.count;
        vs.current_max_workgroup = ctx->limits.max_workgroup_size;
        ctx->source_sink = collect;
        ctx->source_sink_user = &vs;
        plan_elementwise(ctx);
        size_t elementwise = vs.count - before;
        plan_ffn(ctx);
        ctx->source_sink = NULL;
        cr_log_info("%s%s%s: %zu new element-wise and %zu new product variants", ffnrt_backend_name(*backend),
                    profiles[p] ? " as " : "", profiles[p] ? profiles[p] : "", elementwise,
                    vs.count - before - elementwise);
        test_context_done(ctx);
    }
    /* The grid reaches every level and the statistics. */
    for (size_t i = 0; i < vs.count; i++) {
        seen[0] |= strstr(vs.keys[i], "gemm_blocked.inc") != NULL;
        seen[1] |= strstr(vs.keys[i], "gemm_matvec.inc") != NULL;
        seen[2] |= strstr(vs.keys[i], "gemm_tiled.inc") != NULL;
        stats |= strstr(vs.keys[i], "#define STATS 1") != NULL;
        half_f16c |= strstr(vs.keys[i], "HALF_CONVERSION_F16C") != NULL;
    }
    cr_expect(seen[0] && seen[1] && seen[2] && stats, "levels blocked %d, matrix-vector %d, tiled %d; statistics %d",
              seen[0], seen[1], seen[2], stats);
    int failed = *backend == FFNRT_BACKEND_VULKAN ? compile_glsl(&vs) : compile_opencl(&vs);
    cr_expect_eq(failed, 0, "%d of %zu variants (or batches of them) failed to compile", failed, vs.count);
    cr_log_info("%s: %zu variants compiled%s", ffnrt_backend_name(*backend), vs.count,
                half_f16c ? " (the F16C conversions among them)" : "");
    for (size_t i = 0; i < vs.count; i++) {
        free(vs.keys[i]);
        free(vs.sources[i]);
    }
    free(vs.keys);
    free(vs.sources);
    free(vs.max_workgroup);
}
