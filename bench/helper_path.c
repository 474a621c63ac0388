/* Where the bench finds its helpers (bench_start, bench_ggml, the PyTorch
 * script): beside this ffnrt in a build tree, or where an installed one
 * keeps them (libexec/ffnrt, FFNRT_BENCH_HELPER_REL from bin/). */
#include "bench_parts.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef FFNRT_BENCH_HELPER_REL
#define FFNRT_BENCH_HELPER_REL "../libexec/ffnrt"
#endif

int bench_find_helper(const char *name, int mode, char *path, size_t cap, char *why, size_t why_len)
{
    char self[512];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        snprintf(why, why_len, "cannot read /proc/self/exe");
        return -1;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash) {
        snprintf(why, why_len, "/proc/self/exe names no folder");
        return -1;
    }
    *slash = '\0';
    snprintf(path, cap, "%s/%s", self, name);
    if (access(path, mode) == 0)
        return 0;
    snprintf(path, cap, "%s/%s/%s", self, FFNRT_BENCH_HELPER_REL, name);
    if (access(path, mode) == 0)
        return 0;
    snprintf(why, why_len, "no %s in %s/ or %s/%s/", name, self, self, FFNRT_BENCH_HELPER_REL);
    return -1;
}
