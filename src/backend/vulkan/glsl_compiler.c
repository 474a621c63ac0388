#include "backend/vulkan/glsl_compiler.h"
#include "backend/vulkan/cxx_guard.h"
#include "platform/platform.h"

#include <glslang/Include/glslang_c_interface.h>
#include <glslang/build_info.h>
#include <glslang/Public/resource_limits_c.h>
#include <spirv-tools/libspirv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* glslang's process-wide set-up, once it has succeeded: under a mutex
 * rather than a once, since it may throw (a failed allocation), which a
 * once-routine must not. */
static ffnrt_mutex glslang_lock = FFNRT_MUTEX_INIT;
static int glslang_ready;

static void glslang_init(void *ok) { *(int *)ok = glslang_initialize_process(); }

static char *join_logs(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s", a, *a && *b ? "\n" : "", b);
    return s;
}

#define FFNRT_STR2(x) #x
#define FFNRT_STR(x) FFNRT_STR2(x)
const char *ffnrt_glsl_compiler_identity(void)
{
    /* Must change whenever the settings below change. */
    return "glslang " FFNRT_STR(GLSLANG_VERSION_MAJOR) "." FFNRT_STR(GLSLANG_VERSION_MINOR) "." FFNRT_STR(
        GLSLANG_VERSION_PATCH) GLSLANG_VERSION_FLAVOR " glsl450 vulkan1.1 spv1.3";
}

/* One compile, run inside ffnrt_cxx_guarded: what it creates stays here
 * for the caller to release, however far it got. */
typedef struct glsl_job {
    const glslang_input_t *input;
    glslang_shader_t *shader;
    glslang_program_t *program;
    enum { GLSL_NO_SHADER, GLSL_NOT_COMPILED, GLSL_NOT_LINKED, GLSL_NO_MEMORY, GLSL_DONE } result;
    char *log;
    uint32_t *words;
    size_t word_count;
} glsl_job;

static void glsl_compile(void *arg)
{
    glsl_job *j = arg;
    j->result = GLSL_NO_SHADER;
    if (!(j->shader = glslang_shader_create(j->input)))
        return;
    if (!glslang_shader_preprocess(j->shader, j->input) || !glslang_shader_parse(j->shader, j->input)) {
        j->result = GLSL_NOT_COMPILED;
        j->log = join_logs(glslang_shader_get_info_log(j->shader), glslang_shader_get_info_debug_log(j->shader));
        return;
    }
    j->program = glslang_program_create();
    glslang_program_add_shader(j->program, j->shader);
    if (!glslang_program_link(j->program, GLSLANG_MSG_SPV_RULES_BIT | GLSLANG_MSG_VULKAN_RULES_BIT)) {
        j->result = GLSL_NOT_LINKED;
        j->log = join_logs(glslang_program_get_info_log(j->program), glslang_program_get_info_debug_log(j->program));
        return;
    }
    glslang_program_SPIRV_generate(j->program, GLSLANG_STAGE_COMPUTE);
    size_t n = glslang_program_SPIRV_get_size(j->program);
    j->result = GLSL_NO_MEMORY;
    if (!(j->words = malloc(n * sizeof *j->words)))
        return;
    glslang_program_SPIRV_get(j->program, j->words);
    j->word_count = n;
    j->result = GLSL_DONE;
}

static ffnrt_status threw(ffnrt_error *err, ffnrt_cxx_outcome what, const char *who)
{
    if (what == FFNRT_CXX_OUT_OF_MEMORY)
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", who);
    return ffnrt_fail(err, FFNRT_ERROR_COMPILE_FAILED, "%s threw an exception", who);
}

ffnrt_status ffnrt_glsl_to_spirv(const char *source, uint32_t max_workgroup_size, uint32_t **words,
                                 size_t *word_count, char **log, ffnrt_error *err)
{
    ffnrt_mutex_lock(&glslang_lock);
    ffnrt_cxx_outcome init = FFNRT_CXX_RETURNED;
    if (!glslang_ready)
        init = ffnrt_cxx_guarded(glslang_init, &glslang_ready);
    int ready = glslang_ready;
    ffnrt_mutex_unlock(&glslang_lock);
    if (init != FFNRT_CXX_RETURNED)
        return threw(err, init, "glslang");
    if (!ready)
        return ffnrt_fail(err, FFNRT_ERROR_COMPILE_FAILED, "glslang: its process set-up failed");
    /* The default limits, with the compute ones taken from the device. */
    glslang_resource_t limits = *glslang_default_resource();
    limits.max_compute_work_group_size_x = (int)max_workgroup_size;
    const glslang_input_t input = {
        .language = GLSLANG_SOURCE_GLSL,
        .stage = GLSLANG_STAGE_COMPUTE,
        .client = GLSLANG_CLIENT_VULKAN,
        .client_version = GLSLANG_TARGET_VULKAN_1_1,
        .target_language = GLSLANG_TARGET_SPV,
        .target_language_version = GLSLANG_TARGET_SPV_1_3,
        .code = source,
        .default_version = 450,
        .default_profile = GLSLANG_NO_PROFILE,
        .force_default_version_and_profile = 0,
        .forward_compatible = 0,
        .messages = GLSLANG_MSG_DEFAULT_BIT,
        .resource = &limits,
    };
    glsl_job j = {.input = &input};
    ffnrt_cxx_outcome how = ffnrt_cxx_guarded(glsl_compile, &j);
    ffnrt_status st = FFNRT_OK;
    if (how != FFNRT_CXX_RETURNED) {
        st = threw(err, how, "glslang");
    } else if (j.result == GLSL_NOT_COMPILED || j.result == GLSL_NOT_LINKED) {
        *log = j.log;
        j.log = NULL;
        st = ffnrt_fail(err, FFNRT_ERROR_COMPILE_FAILED, "glslang: the shader did not %s; see ffnrt_context_build_log",
                        j.result == GLSL_NOT_COMPILED ? "compile" : "link");
    } else if (j.result != GLSL_DONE) {
        st = ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "glslang: %s",
                        j.result == GLSL_NO_SHADER ? "could not create a shader" : "out of host memory");
    } else {
        *words = j.words;
        *word_count = j.word_count;
        j.words = NULL;
    }
    free(j.words);
    free(j.log);
    if (j.program)
        glslang_program_delete(j.program);
    if (j.shader)
        glslang_shader_delete(j.shader);
    return st;
}

/* One validation, run inside ffnrt_cxx_guarded (as glsl_job). */
typedef struct spirv_job {
    const uint32_t *words;
    size_t word_count;
    spv_context context;
    spv_diagnostic diagnostic;
    spv_result_t rc;
    char *why;
    size_t cap;
} spirv_job;

static void spirv_validate(void *arg)
{
    spirv_job *j = arg;
    j->rc = SPV_ERROR_OUT_OF_MEMORY;
    /* The environment glslang targets (vulkan1.1, SPIR-V 1.3, above). */
    if (!(j->context = spvContextCreate(SPV_ENV_VULKAN_1_1))) {
        snprintf(j->why, j->cap, "SPIRV-Tools could not start");
        return;
    }
    j->rc = spvValidateBinary(j->context, j->words, j->word_count, &j->diagnostic);
    if (j->rc != SPV_SUCCESS)
        snprintf(j->why, j->cap, "invalid SPIR-V (%s)",
                 j->diagnostic && j->diagnostic->error ? j->diagnostic->error : "no detail");
}

int ffnrt_spirv_valid(const uint32_t *words, size_t word_count, char *why, size_t cap)
{
    spirv_job j = {.words = words, .word_count = word_count, .why = why, .cap = cap};
    ffnrt_cxx_outcome how = ffnrt_cxx_guarded(spirv_validate, &j);
    spvDiagnosticDestroy(j.diagnostic);
    spvContextDestroy(j.context);
    if (how == FFNRT_CXX_OUT_OF_MEMORY || (how == FFNRT_CXX_RETURNED && j.rc == SPV_ERROR_OUT_OF_MEMORY)) {
        snprintf(why, cap, "SPIRV-Tools: out of host memory");
        return -1;
    }
    if (how != FFNRT_CXX_RETURNED) {
        snprintf(why, cap, "SPIRV-Tools threw an exception");
        return -1;
    }
    return j.rc == SPV_SUCCESS;
}
