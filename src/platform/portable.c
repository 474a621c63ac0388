/* The platform layer's parts that need no OS (platform.h), or only its
 * other calls. */
#include "platform/platform.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int lower(unsigned char c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

int ffnrt_strncasecmp(const char *a, const char *b, size_t n)
{
    for (; n; n--, a++, b++) {
        int d = lower((unsigned char)*a) - lower((unsigned char)*b);
        if (d || !*a)
            return d;
    }
    return 0;
}

int ffnrt_strcasecmp(const char *a, const char *b) { return ffnrt_strncasecmp(a, b, (size_t)-1); }

/* rm -rf over the layer's own calls: each entry of a folder by name
 * (ffnrt_path_stat does not follow links, so a link is removed, never
 * entered), then the folder. */
typedef struct remove_walk {
    int failed, error;
} remove_walk;

static void remove_entry(const char *dir, const char *name, void *arg)
{
    remove_walk *w = arg;
    size_t n = strlen(dir) + strlen(name) + 2;
    char *path = malloc(n);
    if (!path) {
        w->failed = 1;
        w->error = ENOMEM;
        return;
    }
    snprintf(path, n, "%s/%s", dir, name);
    if (ffnrt_remove_tree(path) != 0 && !w->failed) {
        w->failed = 1;
        w->error = errno;
    }
    free(path);
}

int ffnrt_remove_tree(const char *path)
{
    ffnrt_file_info info;
    if (ffnrt_path_stat(path, &info) != 0)
        return errno == ENOENT ? 0 : -1;
    if (info.kind != FFNRT_FILE_DIRECTORY)
        return ffnrt_path_remove(path);
    remove_walk w = {0, 0};
    if (ffnrt_dir_each(path, remove_entry, &w) != 0)
        return -1;
    if (ffnrt_dir_remove(path) != 0) {
        if (w.failed) /* the first failure says why the folder is not empty */
            errno = w.error;
        return -1;
    }
    return 0;
}
