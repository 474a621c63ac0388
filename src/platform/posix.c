/* The platform layer on POSIX systems: Linux, Android, macOS (platform.h). */
#if !defined(_WIN32)

#include "platform/platform.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

/* ------------------------------------------------------- mutex and once */

void ffnrt_mutex_lock(ffnrt_mutex *m) { pthread_mutex_lock(&m->m); }
void ffnrt_mutex_unlock(ffnrt_mutex *m) { pthread_mutex_unlock(&m->m); }
void ffnrt_call_once(ffnrt_once *once, void (*fn)(void)) { pthread_once(&once->o, fn); }

/* ------------------------------------------------------- shared libraries */

void *ffnrt_library_open(const char *name, char *why, size_t cap)
{
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib && why && cap) {
        const char *e = dlerror();
        snprintf(why, cap, "%s", e ? e : name);
    }
    return lib;
}

void *ffnrt_library_symbol(void *lib, const char *name) { return dlsym(lib, name); }

const char *const *ffnrt_opencl_loader_names(void)
{
#if defined(__APPLE__)
    static const char *const names[] = {"/System/Library/Frameworks/OpenCL.framework/OpenCL", NULL};
#elif defined(__ANDROID__)
    /* Vendors ship libOpenCL.so in /vendor/lib64; an app's linker
     * namespace may still refuse it (docs/platforms.md). */
    static const char *const names[] = {"libOpenCL.so", NULL};
#else
    /* libOpenCL.so.1 is the loader's SONAME; the unversioned name is only
     * present with the -dev package. */
    static const char *const names[] = {"libOpenCL.so.1", "libOpenCL.so", NULL};
#endif
    return names;
}

/* ------------------------------------------------------- clocks, process */

uint64_t ffnrt_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

long ffnrt_process_id(void) { return (long)getpid(); }

int ffnrt_utc_now(struct tm *out, int *milliseconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    *milliseconds = (int)(ts.tv_nsec / 1000000);
    return gmtime_r(&ts.tv_sec, out) ? 0 : -1;
}

/* ------------------------------------------------------- files */

static ffnrt_file_kind kind_of(mode_t mode)
{
    return S_ISREG(mode)    ? FFNRT_FILE_REGULAR
           : S_ISDIR(mode)  ? FFNRT_FILE_DIRECTORY
           : S_ISFIFO(mode) ? FFNRT_FILE_FIFO
           : S_ISCHR(mode)  ? FFNRT_FILE_CHARACTER_DEVICE
           : S_ISBLK(mode)  ? FFNRT_FILE_BLOCK_DEVICE
           : S_ISSOCK(mode) ? FFNRT_FILE_SOCKET
           : S_ISLNK(mode)  ? FFNRT_FILE_LINK
                            : FFNRT_FILE_OTHER;
}

static void fill_info(const struct stat *st, ffnrt_file_info *info)
{
    info->kind = kind_of(st->st_mode);
    info->size = st->st_size > 0 ? (uint64_t)st->st_size : 0;
    info->mtime = (int64_t)st->st_mtime;
}

int ffnrt_file_open_read(const char *path, int flags, ffnrt_file *f)
{
    /* O_NONBLOCK: opening a FIFO without it waits for a writer, for ever;
     * with it the open returns at once, and fstat says what the path is
     * before anything is read. A regular file ignores the flag. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (flags & FFNRT_OPEN_NO_FOLLOW ? O_NOFOLLOW : 0));
    f->h = fd;
    return fd < 0 ? -1 : 0;
}

int ffnrt_file_create_exclusive(const char *path, ffnrt_file *f)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    f->h = fd;
    return fd < 0 ? -1 : 0;
}

int ffnrt_file_stat(ffnrt_file f, ffnrt_file_info *info)
{
    struct stat st;
    if (fstat((int)f.h, &st) != 0)
        return -1;
    fill_info(&st, info);
    return 0;
}

size_t ffnrt_file_read(ffnrt_file f, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read((int)f.h, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    return got;
}

int ffnrt_file_write(ffnrt_file f, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write((int)f.h, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int ffnrt_file_close(ffnrt_file f) { return close((int)f.h); }

int ffnrt_path_stat(const char *path, ffnrt_file_info *info)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return -1;
    fill_info(&st, info);
    return 0;
}

int ffnrt_path_remove(const char *path) { return unlink(path); }

int ffnrt_path_replace(const char *from, const char *to) { return rename(from, to); }

int ffnrt_make_dirs(char *path)
{
    for (char *s = path + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        int rc = mkdir(path, 0700);
        *s = '/';
        if (rc != 0 && errno != EEXIST)
            return -1;
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

int ffnrt_dir_writable(const char *dir) { return access(dir, W_OK | X_OK); }

int ffnrt_dir_each(const char *dir, void (*fn)(const char *dir, const char *name, void *arg), void *arg)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            fn(dir, e->d_name, arg);
    closedir(d);
    return 0;
}

int ffnrt_map_file(ffnrt_file f, size_t size, ffnrt_mapping *m)
{
    void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, (int)f.h, 0);
    if (p == MAP_FAILED)
        return -1;
    m->data = p;
    m->size = size;
    return 0;
}

void ffnrt_unmap(ffnrt_mapping *m)
{
    if (m->data)
        munmap(m->data, m->size);
    m->data = NULL;
    m->size = 0;
}

/* ------------------------------------------------------- the cache folder */

int ffnrt_user_cache_dir(const char *app, char *out, size_t cap, const char **why)
{
    const char *home = getenv("HOME");
#if defined(__APPLE__)
    if (home && *home)
        return snprintf(out, cap, "%s/Library/Caches/%s", home, app);
    *why = "no cache directory: neither FFNRT_CACHE_DIR nor HOME is set";
    return -1;
#else
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0] == '/') /* the XDG spec ignores relative paths */
        return snprintf(out, cap, "%s/%s", xdg, app);
    if (home && *home)
        return snprintf(out, cap, "%s/.cache/%s", home, app);
    *why = xdg && *xdg ? "no cache directory: FFNRT_CACHE_DIR and HOME are not set, and XDG_CACHE_HOME is "
                         "relative, which the XDG spec says to ignore"
                       : "no cache directory: neither FFNRT_CACHE_DIR, XDG_CACHE_HOME nor HOME is set";
    return -1;
#endif
}

/* Whether another user could have written what st describes: it is owned
 * by someone else, or writable by its group or everyone. Parents may be
 * owned by root, and world-writable if sticky (/tmp: no one may rename or
 * remove what is not theirs there). why gets the reason. */
static int foreign(const struct stat *st, const char *what, const char *path, int parent, char *why, size_t cap)
{
    uid_t me = geteuid();
    if (st->st_uid != me && !(parent && st->st_uid == 0)) {
        snprintf(why, cap, "%s%s%s is owned by uid %u, not by this user (uid %u)", what, *path ? " " : "", path,
                 (unsigned)st->st_uid, (unsigned)me);
        return 1;
    }
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(parent && (st->st_mode & S_ISVTX))) {
        snprintf(why, cap, "%s%s%s is writable by %s", what, *path ? " " : "", path,
                 st->st_mode & S_IWOTH ? "every user" : "its group");
        return 1;
    }
    return 0;
}

/* As ssh trusts a user's files: the folder and every folder above it
 * (after resolving links) are the user's (the ones above may be root's)
 * and writable by no one else, so no other user can plant an entry or swap
 * the folder. */
int ffnrt_trusted_directory(const char *dir, char *why, size_t cap)
{
    char real[PATH_MAX];
    if (!realpath(dir, real)) {
        snprintf(why, cap, "cannot resolve %.160s: %s", dir, strerror(errno));
        return 0;
    }
    struct stat st;
    for (int parent = 0;; parent = 1) {
        if (stat(real, &st) != 0) {
            snprintf(why, cap, "cannot stat %.160s: %s", real, strerror(errno));
            return 0;
        }
        if (foreign(&st, parent ? "a directory above it," : "the directory", real, parent, why, cap))
            return 0;
        char *slash = strrchr(real, '/');
        if (!slash || real[1] == '\0')
            return 1; /* checked "/" */
        slash[slash == real ? 1 : 0] = '\0';
    }
}

int ffnrt_trusted_file(ffnrt_file f, char *why, size_t cap)
{
    struct stat st;
    if (fstat((int)f.h, &st) != 0) {
        snprintf(why, cap, "cannot stat: %s", strerror(errno));
        return 0;
    }
    return !foreign(&st, "the entry", "", 0, why, cap);
}

/* ------------------------------------------------------- terminals */

int ffnrt_isatty(int fd) { return isatty(fd); }

int ffnrt_terminal_columns(int fd)
{
#if defined(TIOCGWINSZ)
    struct winsize ws;
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0)
        return ws.ws_col;
#else
    (void)fd;
#endif
    return 0;
}

#endif /* !_WIN32 */
