#include "backend/vulkan/glsl_compiler.h"
#include "platform/platform.h"

#include <glslang/Include/glslang_c_interface.h>
#include <glslang/build_info.h>
#include <glslang/Public/resource_limits_c.h>
#include <spirv-tools/libspirv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ffnrt_once glslang_once = FFNRT_ONCE_INIT;
static void glslang_init(void) { glslang_initialize_process(); }

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

ffnrt_status ffnrt_glsl_to_spirv(const char *source, uint32_t max_workgroup_size, uint32_t **words,
                                 size_t *word_count, char **log, ffnrt_error *err)
{
    ffnrt_call_once(&glslang_once, glslang_init);
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
    ffnrt_status st = FFNRT_OK;
    glslang_program_t *program = NULL;
    glslang_shader_t *shader = glslang_shader_create(&input);
    if (!shader)
        return ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "glslang: could not create a shader");
    if (!glslang_shader_preprocess(shader, &input) || !glslang_shader_parse(shader, &input)) {
        *log = join_logs(glslang_shader_get_info_log(shader), glslang_shader_get_info_debug_log(shader));
        st = ffnrt_fail(err, FFNRT_ERROR_COMPILE_FAILED,
                        "glslang: the shader did not compile; see ffnrt_context_build_log");
        goto done;
    }
    program = glslang_program_create();
    glslang_program_add_shader(program, shader);
    if (!glslang_program_link(program, GLSLANG_MSG_SPV_RULES_BIT | GLSLANG_MSG_VULKAN_RULES_BIT)) {
        *log = join_logs(glslang_program_get_info_log(program), glslang_program_get_info_debug_log(program));
        st = ffnrt_fail(err, FFNRT_ERROR_COMPILE_FAILED,
                        "glslang: the shader did not link; see ffnrt_context_build_log");
        goto done;
    }
    glslang_program_SPIRV_generate(program, GLSLANG_STAGE_COMPUTE);
    size_t n = glslang_program_SPIRV_get_size(program);
    uint32_t *spirv = malloc(n * sizeof *spirv);
    if (!spirv) {
        st = ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "glslang: out of host memory");
        goto done;
    }
    glslang_program_SPIRV_get(program, spirv);
    *words = spirv;
    *word_count = n;
done:
    if (program)
        glslang_program_delete(program);
    glslang_shader_delete(shader);
    return st;
}

int ffnrt_spirv_valid(const uint32_t *words, size_t word_count, char *why, size_t cap)
{
    /* The environment glslang targets (vulkan1.1, SPIR-V 1.3, above). */
    spv_context context = spvContextCreate(SPV_ENV_VULKAN_1_1);
    if (!context) {
        snprintf(why, cap, "SPIRV-Tools could not start");
        return 0;
    }
    spv_diagnostic diagnostic = NULL;
    spv_result_t rc = spvValidateBinary(context, words, word_count, &diagnostic);
    if (rc != SPV_SUCCESS)
        snprintf(why, cap, "invalid SPIR-V (%s)", diagnostic && diagnostic->error ? diagnostic->error : "no detail");
    spvDiagnosticDestroy(diagnostic);
    spvContextDestroy(context);
    return rc == SPV_SUCCESS;
}
