/* The on-disk cache: file format, validation, atomic writes. The OS's
 * part (files, folders, the trust rules, the user's cache folder) is the
 * platform layer's (platform/platform.h). */
#include "core/disk_cache.h"
#include "core/sha256.h"
#include "ffnrt.h" /* the version macros only */
#include "platform/platform.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* ------------------------------------------------------------- trust */

/* The folder and its entries are trusted by the platform's rules
 * (ffnrt_trusted_directory, ffnrt_trusted_file: as ssh trusts a user's
 * files, no other user may have planted or swapped what the cache reads,
 * since PoCL's entries are native code this process runs). */

/* Temporary files whose writer died (a crash between create and rename)
 * are removed once they are old enough not to belong to a live writer. */
static void remove_if_stale(const char *dir, const char *name, void *arg)
{
    time_t now = *(const time_t *)arg;
    if (!strstr(name, ".tmp."))
        return;
    char path[FFNRT_DISK_CACHE_PATH + 256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ffnrt_file_info info;
    if (ffnrt_path_stat(path, &info) == 0 && info.kind == FFNRT_FILE_REGULAR &&
        (int64_t)now - info.mtime > STALE_TMP_SECONDS)
        ffnrt_path_remove(path);
}

static void remove_stale_tmp(const char *dir)
{
    time_t now = time(NULL);
    ffnrt_dir_each(dir, remove_if_stale, &now);
}

static int env_off(const char *v)
{
    return v && (strcmp(v, "0") == 0 || ffnrt_strcasecmp(v, "off") == 0 || ffnrt_strcasecmp(v, "false") == 0 ||
                 ffnrt_strcasecmp(v, "no") == 0);
}

void ffnrt_disk_cache_open(ffnrt_disk_cache *c, const char *option_dir, int disable)
{
    memset(c, 0, sizeof *c);
    if (disable) {
        note(c->status, "off (%s%s)", "disable_disk_cache is set", "");
        return;
    }
    char off[16];
    int n = ffnrt_env_get("FFNRT_CACHE", off, sizeof off);
    if (n >= 0 && n < (int)sizeof off && env_off(off)) {
        note(c->status, "off (%s%s)", "FFNRT_CACHE=", off);
        return;
    }
    /* The environment as UTF-8 on every OS (Windows' getenv gives the ANSI
     * code page); a value too long for c->dir is refused below. */
    if (option_dir && *option_dir)
        n = snprintf(c->dir, sizeof c->dir, "%s", option_dir);
    else if ((n = ffnrt_env_get("FFNRT_CACHE_DIR", c->dir, sizeof c->dir)) <= 0) {
        /* The user's cache folder: XDG_CACHE_HOME or ~/.cache on Linux,
         * ~/Library/Caches on macOS, %LOCALAPPDATA% on Windows. */
        const char *why = "";
        n = ffnrt_user_cache_dir("ffnrt", c->dir, sizeof c->dir, &why);
        if (n < 0) {
            note(c->status, "off (%s%s)", why, "");
            c->dir[0] = '\0';
            return;
        }
    }
    if (n < 0 || (size_t)n >= sizeof c->dir - 64) {
        note(c->status, "off (%s%s)", "the cache directory's path is too long", "");
        c->dir[0] = '\0';
        return;
    }
    while (n > 1 && c->dir[n - 1] == '/')
        c->dir[--n] = '\0';
    if (ffnrt_make_dirs(c->dir) != 0) {
        note(c->status, "off (cannot create %s: %s)", c->dir, strerror(errno));
        return;
    }
    char why[FFNRT_DISK_CACHE_NOTE];
    if (!ffnrt_trusted_directory(c->dir, why, sizeof why)) {
        note(c->status, "off (%s: another user could plant entries there)", why, "");
        return;
    }
    if (ffnrt_dir_writable(c->dir) != 0) {
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
    /* Opened without blocking: a FIFO planted at the path must not hang
     * the reader; nor may a symbolic link send it elsewhere. */
    ffnrt_file f;
    if (ffnrt_file_open_read(path, FFNRT_OPEN_NO_FOLLOW, &f) != 0) {
        if (errno == ENOENT)
            c->misses++;
        else
            reject(c, path, strerror(errno));
        return NULL;
    }
    ffnrt_file_info info;
    unsigned char *bytes = NULL;
    void *out = NULL;
    const char *why = NULL;
    uint64_t limit = FFNRT_DISK_CACHE_HEADER_SIZE + (uint64_t)FFNRT_DISK_CACHE_MAX_KEY + ffnrt_disk_cache_max_payload(kind);
    char untrusted[FFNRT_DISK_CACHE_NOTE];
    if (ffnrt_file_stat(f, &info) != 0 || info.kind != FFNRT_FILE_REGULAR) {
        why = "not a regular file";
    } else if (!ffnrt_trusted_file(f, untrusted, sizeof untrusted)) {
        why = untrusted;
    } else if (info.size > limit) {
        why = "larger than any valid entry";
    } else {
        size_t size = (size_t)info.size;
        bytes = malloc(size ? size : 1);
        if (!bytes) {
            why = "out of host memory";
        } else {
            size_t got = ffnrt_file_read(f, bytes, size);
            const void *payload;
            size_t pay_len;
            /* A file shorter than its size said (replaced meanwhile) parses as truncated. */
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
    ffnrt_file_close(f);
    free(bytes);
    if (out)
        c->hits++;
    else
        reject(c, path, why ? why : "unreadable");
    return out;
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
    ffnrt_file f;
    int created = 0;
    for (int attempt = 0; attempt < 8 && !created; attempt++) {
        uint64_t now = ffnrt_monotonic_ns();
        long pid = ffnrt_process_id();
        uint64_t r = ffnrt_fnv1a64(&now, sizeof now, (uint64_t)pid * 0x9e3779b97f4a7c15ull + (uint64_t)attempt);
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%08llx", path, pid, (unsigned long long)(r & 0xffffffffu));
        created = ffnrt_file_create_exclusive(tmp, &f) == 0;
        if (!created && errno != EEXIST)
            break;
    }
    int ok = created && ffnrt_file_write(f, bytes, n) == 0;
    int saved = errno;
    if (created && ffnrt_file_close(f) != 0)
        ok = 0;
    /* Atomic replacement: a reader sees the old entry or the new one. */
    if (ok && ffnrt_path_replace(tmp, path) != 0) {
        saved = errno;
        ok = 0;
    }
    if (!ok) {
        if (created)
            ffnrt_path_remove(tmp);
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
