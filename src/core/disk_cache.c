/* The on-disk cache: file format, validation, atomic writes. libc only. */
#include "core/disk_cache.h"
#include "core/sha256.h"
#include "ffnrt.h" /* the version macros only */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const unsigned char magic[8] = {'F', 'F', 'N', 'R', 'T', 'K', 'C', 0};

/* A temporary file older than this was left by a process that died. */
#define STALE_TMP_SECONDS (10 * 60)

const char *ffnrt_cache_kind_name(ffnrt_cache_kind kind)
{
    switch (kind) {
    case FFNRT_CACHE_SPIRV: return "spirv";
    case FFNRT_CACHE_PIPELINE_CACHE: return "pipeline-cache";
    case FFNRT_CACHE_CL_BINARY: return "cl-binary";
    case FFNRT_CACHE_CALIBRATION: return "calibration";
    case FFNRT_CACHE_TUNING: return "tuning";
    default: return "unknown";
    }
}

uint64_t ffnrt_disk_cache_max_payload(ffnrt_cache_kind kind)
{
    return kind == FFNRT_CACHE_CALIBRATION || kind == FFNRT_CACHE_TUNING ? FFNRT_DISK_CACHE_MAX_RESULTS
                                                                         : FFNRT_DISK_CACHE_MAX_PAYLOAD;
}

uint64_t ffnrt_fnv1a64(const void *data, size_t n, uint64_t h)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint32_t ffnrt_disk_cache_version(void)
{
    return ((uint32_t)FFNRT_VERSION_MAJOR << 16) | ((uint32_t)FFNRT_VERSION_MINOR << 8) |
           (uint32_t)FFNRT_VERSION_PATCH;
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

static int fail(const char **why, const char *reason)
{
    if (why)
        *why = reason;
    return 0;
}

int ffnrt_disk_cache_parse(const void *bytes, size_t n, const char *expected_key, ffnrt_cache_kind kind,
                           const void **payload, size_t *payload_len, const char **why)
{
    const unsigned char *b = bytes;
    if (payload)
        *payload = NULL;
    if (payload_len)
        *payload_len = 0;
    if (!expected_key)
        return fail(why, "no key given");
    if (!b || n < FFNRT_DISK_CACHE_HEADER_SIZE)
        return fail(why, n == 0 ? "empty file" : "truncated header");
    if (memcmp(b, magic, sizeof magic) != 0)
        return fail(why, "bad magic (not an ffnrt cache file)");
    if (get32(b + 8) != FFNRT_DISK_CACHE_FORMAT)
        return fail(why, "another cache format version");
    if (get32(b + 12) != (uint32_t)kind)
        return fail(why, "another kind of entry");
    if (get32(b + 16) != ffnrt_disk_cache_version())
        return fail(why, "written by another ffnrt version");
    uint64_t key_len = get32(b + 20);
    uint64_t pay_len = get64(b + 32);
    size_t body = n - FFNRT_DISK_CACHE_HEADER_SIZE;
    if (key_len > FFNRT_DISK_CACHE_MAX_KEY || pay_len > ffnrt_disk_cache_max_payload(kind))
        return fail(why, "lengths out of bounds");
    if (key_len > body || pay_len > body - key_len)
        return fail(why, "truncated (shorter than its header says)");
    if (pay_len != body - key_len)
        return fail(why, "trailing bytes after the payload");
    /* The header's own checksum first: a flipped length or hash is caught
     * here rather than misread below. */
    uint64_t h = ffnrt_fnv1a64(b, FFNRT_DISK_CACHE_HEADER_CHECK_AT, FFNRT_FNV64_INIT);
    h = ffnrt_fnv1a64(b + FFNRT_DISK_CACHE_HEADER_SIZE, (size_t)key_len, h);
    if (h != get64(b + FFNRT_DISK_CACHE_HEADER_CHECK_AT))
        return fail(why, "header checksum mismatch (corrupted)");
    size_t want_len = strlen(expected_key);
    if (get64(b + 24) != ffnrt_fnv1a64(expected_key, want_len, FFNRT_FNV64_INIT))
        return fail(why, "key hash differs (a foreign entry: another device, driver, source or options)");
    if (key_len != want_len || memcmp(b + FFNRT_DISK_CACHE_HEADER_SIZE, expected_key, want_len) != 0)
        return fail(why, "key differs though its hash matches (collision)");
    const unsigned char *p = b + FFNRT_DISK_CACHE_HEADER_SIZE + key_len;
    unsigned char digest[FFNRT_SHA256_BYTES];
    ffnrt_sha256(p, (size_t)pay_len, digest);
    if (memcmp(digest, b + 40, sizeof digest) != 0)
        return fail(why, "payload digest mismatch (corrupted or altered)");
    if (payload)
        *payload = p;
    if (payload_len)
        *payload_len = (size_t)pay_len;
    if (why)
        *why = "valid";
    return 1;
}

void *ffnrt_disk_cache_format_version(const char *key, ffnrt_cache_kind kind, const void *payload,
                                      size_t payload_len, uint32_t version, size_t *n)
{
    size_t key_len = strlen(key);
    if (key_len > FFNRT_DISK_CACHE_MAX_KEY || payload_len > ffnrt_disk_cache_max_payload(kind))
        return NULL;
    size_t total = FFNRT_DISK_CACHE_HEADER_SIZE + key_len + payload_len;
    unsigned char *b = malloc(total);
    if (!b)
        return NULL;
    memcpy(b, magic, sizeof magic);
    put32(b + 8, FFNRT_DISK_CACHE_FORMAT);
    put32(b + 12, (uint32_t)kind);
    put32(b + 16, version);
    put32(b + 20, (uint32_t)key_len);
    put64(b + 24, ffnrt_fnv1a64(key, key_len, FFNRT_FNV64_INIT));
    put64(b + 32, payload_len);
    ffnrt_sha256(payload, payload_len, b + 40);
    memcpy(b + FFNRT_DISK_CACHE_HEADER_SIZE, key, key_len);
    if (payload_len)
        memcpy(b + FFNRT_DISK_CACHE_HEADER_SIZE + key_len, payload, payload_len);
    uint64_t h = ffnrt_fnv1a64(b, FFNRT_DISK_CACHE_HEADER_CHECK_AT, FFNRT_FNV64_INIT);
    put64(b + FFNRT_DISK_CACHE_HEADER_CHECK_AT, ffnrt_fnv1a64(key, key_len, h));
    *n = total;
    return b;
}

void *ffnrt_disk_cache_format(const char *key, ffnrt_cache_kind kind, const void *payload, size_t payload_len,
                              size_t *n)
{
    return ffnrt_disk_cache_format_version(key, kind, payload, payload_len, ffnrt_disk_cache_version(), n);
}

/* ---------------------------------------------------------- the directory */

/* A note cut to fit its buffer (paths may be long). */
static void note(char *buf, const char *fmt, const char *a, const char *b)
{
    size_t cap = FFNRT_DISK_CACHE_NOTE, at = 0;
    for (const char *f = fmt; *f && at + 1 < cap; f++) {
        const char *arg = NULL;
        if (f[0] == '%' && f[1] == 's') {
            arg = a ? a : "";
            a = b;
            b = NULL;
            f++;
            for (; *arg && at + 1 < cap; arg++)
                buf[at++] = *arg;
        } else {
            buf[at++] = *f;
        }
    }
    buf[at] = '\0';
}

/* mkdir -p, 0700 for the directories it creates (a per-user cache). */
static int make_dirs(char *path)
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

/* ------------------------------------------------------------- trust */

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

/* A directory the cache may trust, as ssh trusts a user's files: it and
 * every directory above it (after resolving links) are the user's (the
 * ones above may be root's) and writable by no one else, so no other user
 * can plant an entry (PoCL's are native code this process runs) or swap
 * the directory. */
static int trusted_directory(const char *dir, char *why, size_t cap)
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

/* Temporary files whose writer died (a crash between create and rename)
 * are removed once they are old enough not to belong to a live writer. */
static void remove_stale_tmp(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    time_t now = time(NULL);
    struct dirent *e;
    char path[FFNRT_DISK_CACHE_PATH + 256];
    while ((e = readdir(d)) != NULL) {
        if (!strstr(e->d_name, ".tmp."))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && now - st.st_mtime > STALE_TMP_SECONDS)
            unlink(path);
    }
    closedir(d);
}

static int env_off(const char *v)
{
    return v && (strcmp(v, "0") == 0 || strcasecmp(v, "off") == 0 || strcasecmp(v, "false") == 0 ||
                 strcasecmp(v, "no") == 0);
}

void ffnrt_disk_cache_open(ffnrt_disk_cache *c, const char *option_dir, int disable)
{
    memset(c, 0, sizeof *c);
    if (disable) {
        note(c->status, "off (%s%s)", "disable_disk_cache is set", "");
        return;
    }
    if (env_off(getenv("FFNRT_CACHE"))) {
        note(c->status, "off (%s%s)", "FFNRT_CACHE=", getenv("FFNRT_CACHE"));
        return;
    }
    const char *env_dir = getenv("FFNRT_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (option_dir && *option_dir)
        n = snprintf(c->dir, sizeof c->dir, "%s", option_dir);
    else if (env_dir && *env_dir)
        n = snprintf(c->dir, sizeof c->dir, "%s", env_dir);
    else if (xdg && xdg[0] == '/') /* the XDG spec ignores relative paths */
        n = snprintf(c->dir, sizeof c->dir, "%s/ffnrt", xdg);
    else if (home && *home)
        n = snprintf(c->dir, sizeof c->dir, "%s/.cache/ffnrt", home);
    else {
        note(c->status, "off (%s%s)",
             xdg && *xdg ? "no cache directory: FFNRT_CACHE_DIR and HOME are not set, and XDG_CACHE_HOME is "
                           "relative, which the XDG spec says to ignore"
                         : "no cache directory: neither FFNRT_CACHE_DIR, XDG_CACHE_HOME nor HOME is set",
             "");
        c->dir[0] = '\0';
        return;
    }
    if (n < 0 || (size_t)n >= sizeof c->dir - 64) {
        note(c->status, "off (%s%s)", "the cache directory's path is too long", "");
        c->dir[0] = '\0';
        return;
    }
    while (n > 1 && c->dir[n - 1] == '/')
        c->dir[--n] = '\0';
    if (make_dirs(c->dir) != 0) {
        note(c->status, "off (cannot create %s: %s)", c->dir, strerror(errno));
        return;
    }
    char why[FFNRT_DISK_CACHE_NOTE];
    if (!trusted_directory(c->dir, why, sizeof why)) {
        note(c->status, "off (%s: another user could plant entries there)", why, "");
        return;
    }
    if (access(c->dir, W_OK | X_OK) != 0) {
        note(c->status, "off (%s is not writable: %s)", c->dir, strerror(errno));
        return;
    }
    remove_stale_tmp(c->dir);
    c->enabled = 1;
    note(c->status, "on%s%s", "", "");
}

void ffnrt_disk_cache_path(const ffnrt_disk_cache *c, const char *key, ffnrt_cache_kind kind, char *out,
                           size_t cap)
{
    uint32_t k = (uint32_t)kind;
    uint64_t h = ffnrt_fnv1a64(&k, sizeof k, FFNRT_FNV64_INIT);
    h = ffnrt_fnv1a64(key, strlen(key), h);
    snprintf(out, cap, "%s/%s-%016llx.bin", c->dir, ffnrt_cache_kind_name(kind), (unsigned long long)h);
}

static void reject(ffnrt_disk_cache *c, const char *path, const char *why)
{
    c->rejected++;
    const char *base = strrchr(path, '/');
    note(c->last_note, "ignored %s: %s", base ? base + 1 : path, why);
}

void *ffnrt_disk_cache_get(ffnrt_disk_cache *c, const char *key, ffnrt_cache_kind kind, size_t *len)
{
    *len = 0;
    if (!c || !c->enabled)
        return NULL;
    char path[FFNRT_DISK_CACHE_PATH + 64];
    ffnrt_disk_cache_path(c, key, kind, path, sizeof path);
    /* O_NONBLOCK: a FIFO planted at the path must not hang the reader;
     * O_NOFOLLOW: nor may a symbolic link send it elsewhere. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            c->misses++;
        else
            reject(c, path, strerror(errno));
        return NULL;
    }
    struct stat st;
    unsigned char *bytes = NULL;
    void *out = NULL;
    const char *why = NULL;
    uint64_t limit = FFNRT_DISK_CACHE_HEADER_SIZE + (uint64_t)FFNRT_DISK_CACHE_MAX_KEY + ffnrt_disk_cache_max_payload(kind);
    char untrusted[FFNRT_DISK_CACHE_NOTE];
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        why = "not a regular file";
    } else if (foreign(&st, "the entry", "", 0, untrusted, sizeof untrusted)) {
        why = untrusted;
    } else if ((uint64_t)st.st_size > limit) {
        why = "larger than any valid entry";
    } else {
        size_t size = (size_t)st.st_size, got = 0;
        bytes = malloc(size ? size : 1);
        if (!bytes) {
            why = "out of host memory";
        } else {
            while (got < size) {
                ssize_t r = read(fd, bytes + got, size - got);
                if (r < 0 && errno == EINTR)
                    continue;
                if (r <= 0)
                    break;
                got += (size_t)r;
            }
            const void *payload;
            size_t pay_len;
            /* A file shorter than fstat said (replaced meanwhile) parses as truncated. */
            if (ffnrt_disk_cache_parse(bytes, got, key, kind, &payload, &pay_len, &why)) {
                out = malloc(pay_len ? pay_len : 1);
                if (out) {
                    memcpy(out, payload, pay_len);
                    *len = pay_len;
                } else {
                    why = "out of host memory";
                }
            }
        }
    }
    close(fd);
    free(bytes);
    if (out)
        c->hits++;
    else
        reject(c, path, why ? why : "unreadable");
    return out;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int ffnrt_disk_cache_put(ffnrt_disk_cache *c, const char *key, ffnrt_cache_kind kind, const void *payload,
                         size_t len)
{
    if (!c || !c->enabled)
        return 0;
    char path[FFNRT_DISK_CACHE_PATH + 64], tmp[FFNRT_DISK_CACHE_PATH + 128];
    ffnrt_disk_cache_path(c, key, kind, path, sizeof path);
    size_t n;
    unsigned char *bytes = ffnrt_disk_cache_format(key, kind, payload, len, &n);
    if (!bytes) {
        c->write_failures++;
        note(c->last_note, "not written: %s%s", "out of memory or too large", "");
        return 0;
    }
    /* A name no other writer uses: the pid plus a clock-derived value,
     * created exclusively (retried on the unlikely clash). */
    int fd = -1;
    for (int attempt = 0; attempt < 8 && fd < 0; attempt++) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t r = ffnrt_fnv1a64(&ts, sizeof ts, (uint64_t)getpid() * 0x9e3779b97f4a7c15ull + (uint64_t)attempt);
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%08llx", path, (long)getpid(), (unsigned long long)(r & 0xffffffffu));
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    int ok = fd >= 0 && write_all(fd, bytes, n) == 0;
    int saved = errno;
    if (fd >= 0 && close(fd) != 0)
        ok = 0;
    if (ok && rename(tmp, path) != 0) {
        saved = errno;
        ok = 0;
    }
    if (!ok) {
        if (fd >= 0)
            unlink(tmp);
        c->write_failures++;
        note(c->last_note, "not written: %s (%s)", path, strerror(saved));
    } else {
        c->writes++;
    }
    free(bytes);
    return ok;
}

void ffnrt_disk_cache_note_unusable(ffnrt_disk_cache *c, const char *why)
{
    if (!c)
        return;
    if (c->hits)
        c->hits--;
    c->rejected++;
    note(c->last_note, "ignored: %s%s", why, "");
}
