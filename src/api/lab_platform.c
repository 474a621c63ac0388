/* The lab's doors into the platform layer (include/ffnrt_lab.h): the few
 * OS calls the lab needs, which it cannot include itself (it includes no
 * OS header and no src/ header). */
#include "ffnrt_lab.h"
#include "platform/platform.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint64_t ffnrt_lab_monotonic_ns(void) { return ffnrt_monotonic_ns(); }
int ffnrt_lab_utc_now(struct tm *out, int *milliseconds) { return ffnrt_utc_now(out, milliseconds); }
int ffnrt_lab_strcasecmp(const char *a, const char *b) { return ffnrt_strcasecmp(a, b); }
int ffnrt_lab_isatty(int fd) { return ffnrt_isatty(fd); }
int ffnrt_lab_terminal_columns(int fd) { return ffnrt_terminal_columns(fd); }
void ffnrt_lab_console_utf8(void) { ffnrt_console_utf8(); }
int ffnrt_lab_arguments_utf8(int *argc, char ***argv) { return ffnrt_arguments_utf8(argc, argv); }
FILE *ffnrt_lab_fopen(const char *path, const char *mode) { return ffnrt_fopen(path, mode); }

int ffnrt_lab_child_start(char *const argv[], const char *const env_set[], ffnrt_lab_child *child, FILE **out)
{
    ffnrt_child c;
    if (ffnrt_child_start(argv, env_set, &c, out) != 0)
        return -1;
    child->h = c.h;
    return 0;
}

int ffnrt_lab_child_wait(ffnrt_lab_child child, int *exit_code, int *signal_number)
{
    ffnrt_child c = {child.h};
    return ffnrt_child_wait(c, exit_code, signal_number);
}

int ffnrt_lab_executable_path(char *out, size_t cap) { return ffnrt_executable_path(out, cap); }
int ffnrt_lab_host_name(char *out, size_t cap) { return ffnrt_host_name(out, cap); }
int ffnrt_lab_online_cpus(void) { return ffnrt_online_cpus(); }
const char *ffnrt_lab_executable_suffix(void) { return ffnrt_executable_suffix(); }
int ffnrt_lab_make_temp_dir(const char *prefix, char *out, size_t cap) { return ffnrt_make_temp_dir(prefix, out, cap); }
int ffnrt_lab_remove_tree(const char *path) { return ffnrt_remove_tree(path); }
int ffnrt_lab_dir_each(const char *dir, void (*fn)(const char *dir, const char *name, void *arg), void *arg)
{
    return ffnrt_dir_each(dir, fn, arg);
}

int ffnrt_lab_make_dirs(const char *path, int shared)
{
    size_t n = strlen(path) + 1;
    char *copy = malloc(n); /* ffnrt_make_dirs writes into its path while it runs */
    if (!copy) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(copy, path, n);
    int rc = shared ? ffnrt_make_shared_dirs(copy) : ffnrt_make_dirs(copy);
    int e = errno;
    free(copy);
    errno = e;
    return rc;
}

int ffnrt_lab_is_file(const char *path)
{
    ffnrt_file_info info;
    return ffnrt_path_stat(path, &info) == 0 && (info.kind == FFNRT_FILE_REGULAR || info.kind == FFNRT_FILE_LINK);
}
