/* The platform layer on POSIX systems: Linux, Android, macOS (platform.h). */
#if !defined(_WIN32)

#include "platform/platform.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__APPLE__)
#include <crt_externs.h> /* _NSGetEnviron: a shared library has no environ there */
#include <mach-o/dyld.h> /* _NSGetExecutablePath */
#define ffnrt_environ (*_NSGetEnviron())
#else
extern char **environ;
#define ffnrt_environ environ
#endif

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

const char *ffnrt_opencl_vendors_dir(char *buf, size_t cap)
{
#if defined(__APPLE__) || defined(__ANDROID__)
    (void)buf, (void)cap;
    return NULL;
#else
    struct stat st;
    const char *env = getenv("OCL_ICD_VENDORS");
    const char *dir = env && *env && stat(env, &st) == 0 && S_ISDIR(st.st_mode) ? env : "/etc/OpenCL/vendors";
    if (!buf || (size_t)snprintf(buf, cap, "%s", dir) >= cap)
        return NULL;
    return buf;
#endif
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

static int make_dirs(char *path, mode_t mode)
{
    for (char *s = path + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        int rc = mkdir(path, mode);
        *s = '/';
        if (rc != 0 && errno != EEXIST)
            return -1;
    }
    if (mkdir(path, mode) != 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

int ffnrt_make_dirs(char *path) { return make_dirs(path, 0700); }
int ffnrt_make_shared_dirs(char *path) { return make_dirs(path, 0777); }

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

/* ------------------------------------------------------- the lab's processes and folders */

/* Whether entry ("NAME=VALUE") sets the variable that set ("NAME=...") names. */
static int same_name(const char *entry, const char *set)
{
    size_t n = strcspn(set, "=");
    return strncmp(entry, set, n) == 0 && entry[n] == '=';
}

int ffnrt_child_start(char *const argv[], const char *const env_set[], ffnrt_child *child, FILE **out)
{
    size_t n_env = 0, n_set = 0;
    while (ffnrt_environ[n_env])
        n_env++;
    while (env_set && env_set[n_set])
        n_set++;
    char **env = malloc((n_env + n_set + 1) * sizeof *env);
    if (!env) {
        errno = ENOMEM;
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n_env; i++) {
        int replaced = 0;
        for (size_t j = 0; j < n_set && !replaced; j++)
            replaced = same_name(ffnrt_environ[i], env_set[j]);
        if (!replaced)
            env[k++] = ffnrt_environ[i];
    }
    for (size_t j = 0; j < n_set; j++)
        env[k++] = (char *)env_set[j];
    env[k] = NULL;

    int fd[2];
    if (pipe(fd) != 0) {
        free(env);
        return -1;
    }
    /* This process's end is not the child's: it would keep the pipe open
     * past the child's end. */
    fcntl(fd[0], F_SETFD, FD_CLOEXEC);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_addclose(&fa, fd[1]);
    pid_t pid = 0;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    close(fd[1]);
    FILE *f = rc == 0 ? fdopen(fd[0], "r") : NULL;
    if (!f) {
        int e = rc != 0 ? rc : errno;
        close(fd[0]);
        if (rc == 0)
            waitpid(pid, NULL, 0); /* started, but unreadable: do not leave it a zombie */
        errno = e;
        return -1;
    }
    child->h = (intptr_t)pid;
    *out = f;
    return 0;
}

int ffnrt_child_wait(ffnrt_child child, int *exit_code, int *signal_number)
{
    int status = 0;
    pid_t r;
    while ((r = waitpid((pid_t)child.h, &status, 0)) < 0 && errno == EINTR)
        ;
    if (r < 0)
        return -1;
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    *signal_number = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return 0;
}

int ffnrt_executable_path(char *out, size_t cap)
{
#if defined(__APPLE__)
    uint32_t size = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
    if (_NSGetExecutablePath(out, &size) != 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
#elif defined(__linux__)
    if (cap < 2) {
        errno = ENAMETOOLONG;
        return -1;
    }
    ssize_t n = readlink("/proc/self/exe", out, cap - 1);
    if (n < 0)
        return -1;
    if ((size_t)n >= cap - 1) { /* perhaps cut short */
        errno = ENAMETOOLONG;
        return -1;
    }
    out[n] = '\0';
    return 0;
#else
    (void)out;
    (void)cap;
    errno = ENOSYS;
    return -1;
#endif
}

int ffnrt_host_name(char *out, size_t cap)
{
    if (cap == 0 || gethostname(out, cap - 1) != 0)
        return -1;
    out[cap - 1] = '\0'; /* gethostname need not end a truncated name */
    return 0;
}

int ffnrt_online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 && n < 1 << 20 ? (int)n : 1;
}

const char *ffnrt_executable_suffix(void) { return ""; }

int ffnrt_make_temp_dir(const char *prefix, char *out, size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || tmp[0] != '/')
        tmp = "/tmp";
    int n = snprintf(out, cap, "%s/%sXXXXXX", tmp, prefix);
    if (n < 0 || (size_t)n >= cap) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return mkdtemp(out) ? 0 : -1; /* 0700 */
}

int ffnrt_dir_remove(const char *path) { return rmdir(path); }

/* ------------------------------------------------------- text in and out */

int ffnrt_env_get(const char *name, char *out, size_t cap)
{
    const char *v = getenv(name);
    return v ? snprintf(out, cap, "%s", v) : -1;
}

int ffnrt_arguments_utf8(int *argc, char ***argv) /* POSIX's argv is the bytes as given */
{
    (void)argc, (void)argv;
    return 0;
}

FILE *ffnrt_fopen(const char *path, const char *mode) { return fopen(path, mode); }

/* ------------------------------------------------------- terminals */

int ffnrt_isatty(int fd) { return isatty(fd); }

void ffnrt_console_utf8(void) {}

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
