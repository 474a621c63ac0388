/* Where the bench finds its helpers (bench_start, bench_ggml, the PyTorch
 * script): beside this ffnrt in a build tree, or where an installed one
 * keeps them (libexec/ffnrt, FFNRT_BENCH_HELPER_REL from bin/); and how it
 * starts one and reads what it prints. */
#include "bench_parts.h"

#include <spawn.h>
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

FILE *bench_spawn_reading(char **argv, char **envp, pid_t *pid)
{
    int fd[2];
    if (pipe(fd) != 0)
        return NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    posix_spawn_file_actions_addclose(&fa, fd[1]);
    int rc = posix_spawnp(pid, argv[0], &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    FILE *out = rc == 0 ? fdopen(fd[0], "r") : NULL;
    if (!out)
        close(fd[0]);
    return out;
}
