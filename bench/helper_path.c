/* Where the bench finds its helpers (bench_start, bench_ggml, the PyTorch
 * script): beside this ffnrt in a build tree, or where an installed one
 * keeps them (libexec/ffnrt, FFNRT_BENCH_HELPER_REL from bin/); and how it
 * starts one and reads what it prints, through the platform layer's doors
 * (ffnrt_lab.h), so the bench includes no OS header. */
#include "bench_parts.h"
#include "ffnrt_lab.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifndef FFNRT_BENCH_HELPER_REL
#define FFNRT_BENCH_HELPER_REL "../libexec/ffnrt"
#endif

int bench_find_helper(const char *name, int program, char *path, size_t cap, char *why, size_t why_len)
{
    char self[1024];
    if (ffnrt_lab_executable_path(self, sizeof self) != 0) {
        snprintf(why, why_len, "cannot tell where this program is (%s)", strerror(errno));
        return -1;
    }
    char *slash = strrchr(self, '/'), *backslash = strrchr(self, '\\');
    if (backslash && (!slash || backslash > slash))
        slash = backslash; /* Windows names folders with either */
    if (!slash) {
        snprintf(why, why_len, "%s names no folder", self);
        return -1;
    }
    *slash = '\0';
    const char *suffix = program ? ffnrt_lab_executable_suffix() : "";
    snprintf(path, cap, "%s/%s%s", self, name, suffix);
    if (ffnrt_lab_is_file(path))
        return 0;
    snprintf(path, cap, "%s/%s/%s%s", self, FFNRT_BENCH_HELPER_REL, name, suffix);
    if (ffnrt_lab_is_file(path))
        return 0;
    snprintf(why, why_len, "no %s%s in %s/ or %s/%s/", name, suffix, self, self, FFNRT_BENCH_HELPER_REL);
    return -1;
}

FILE *bench_spawn_reading(char **argv, const char *const *env_set, ffnrt_lab_child *child)
{
    FILE *out = NULL;
    return ffnrt_lab_child_start(argv, env_set, child, &out) == 0 ? out : NULL;
}

int bench_wait_helper(ffnrt_lab_child child, char *how, size_t cap)
{
    int code = 0, sig = 0;
    if (ffnrt_lab_child_wait(child, &code, &sig) != 0) {
        snprintf(how, cap, "cannot wait for it (%s)", strerror(errno));
        return -1;
    }
    if (sig)
        snprintf(how, cap, "signal %d", sig);
    else
        snprintf(how, cap, "status %d", code);
    return sig ? -1 : code;
}
