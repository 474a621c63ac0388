/* The disk cache: the pure file parser, and on both devices a cold build
 * that writes, a warm one that hits with identical results, every kind of
 * bad file ignored and rebuilt, the cache off, an unusable directory, and
 * two processes filling one directory at once.
 *
 * Links the static library: the parser and the blob store are internal.
 * Runs on Windows too (the plain harness, under Wine): its scratch folders
 * through the lab's platform doors; the POSIX trust rules (modes, owners),
 * FIFOs, symbolic links and XDG's and HOME's folders are POSIX-only
 * (test_platform checks the Windows trust rules). Two processes at once
 * runs everywhere: its writers are tests/disk_cache_writer.c. */
#include "core/context.h"
#include "core/disk_cache.h"
#include "core/sha256.h"
#include "device_fixture.h"
#include "disk_cache_silu.h"
#include "reference.h"
#include "tune/tune.h"
#include "ffnrt_lab.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#ifdef _WIN32
#include <sys/utime.h>
#else
#include <fcntl.h>
#include <sys/time.h>
#include <unistd.h>
#endif

/* ------------------------------------------------------------ the parser */

static const char test_key[] = "ffnrt test\ndevice x\nkernel a|b|64|#define X 1\n";

static unsigned char *make(const char *key, ffnrt_cache_kind kind, const char *payload, size_t *n)
{
    unsigned char *b = ffnrt_disk_cache_format(key, kind, payload, strlen(payload), n);
    cr_assert_not_null(b);
    return b;
}

static void expect_reject(const void *b, size_t n, const char *key, ffnrt_cache_kind kind, const char *reason)
{
    const void *p = (const void *)1;
    size_t len = 99;
    const char *why = NULL;
    cr_assert_eq(ffnrt_disk_cache_parse(b, n, key, kind, &p, &len, &why), 0, "accepted; expected \"%s\"",
                 reason ? reason : "a refusal");
    cr_assert_null(p);
    cr_assert_eq(len, 0);
    cr_assert_not_null(why);
    if (reason)
        cr_assert(strstr(why, reason), "why = \"%s\", expected \"%s\"", why, reason);
}

Test(disk_cache_parse, round_trip)
{
    size_t n;
    unsigned char *b = make(test_key, FFNRT_CACHE_SPIRV, "payload bytes", &n);
    cr_assert_eq(n, FFNRT_DISK_CACHE_HEADER_SIZE + strlen(test_key) + 13);
    const void *p;
    size_t len;
    const char *why;
    cr_assert(ffnrt_disk_cache_parse(b, n, test_key, FFNRT_CACHE_SPIRV, &p, &len, &why), "%s", why);
    cr_assert_eq(len, 13);
    cr_assert_eq(memcmp(p, "payload bytes", 13), 0);
    free(b);
    b = make(test_key, FFNRT_CACHE_TUNING, "", &n); /* an empty payload is valid */
    cr_assert(ffnrt_disk_cache_parse(b, n, test_key, FFNRT_CACHE_TUNING, &p, &len, &why), "%s", why);
    cr_assert_eq(len, 0);
    free(b);
}

Test(disk_cache_parse, every_truncation_and_extension)
{
    size_t n;
    unsigned char *b = make(test_key, FFNRT_CACHE_CL_BINARY, "0123456789", &n);
    expect_reject(NULL, 0, test_key, FFNRT_CACHE_CL_BINARY, "empty");
    for (size_t cut = 0; cut < n; cut++)
        expect_reject(b, cut, test_key, FFNRT_CACHE_CL_BINARY, NULL);
    unsigned char *longer = malloc(n + 1);
    memcpy(longer, b, n);
    longer[n] = 0;
    expect_reject(longer, n + 1, test_key, FFNRT_CACHE_CL_BINARY, "trailing");
    free(longer);
    free(b);
}

Test(disk_cache_parse, every_bit_flip)
{
    size_t n;
    unsigned char *b = make(test_key, FFNRT_CACHE_SPIRV, "some payload", &n);
    for (size_t i = 0; i < n; i++)
        for (int bit = 0; bit < 8; bit++) {
            b[i] ^= (unsigned char)(1u << bit);
            expect_reject(b, n, test_key, FFNRT_CACHE_SPIRV, NULL);
            b[i] ^= (unsigned char)(1u << bit);
        }
    free(b);
}

Test(disk_cache_parse, foreign_entries)
{
    size_t n;
    unsigned char *b = make(test_key, FFNRT_CACHE_SPIRV, "x", &n);
    expect_reject(b, n, "ffnrt test\ndevice y\nkernel a|b|64|#define X 1\n", FFNRT_CACHE_SPIRV, "foreign");
    expect_reject(b, n, test_key, FFNRT_CACHE_CL_BINARY, "another kind");
    free(b);
    b = ffnrt_disk_cache_format_version(test_key, FFNRT_CACHE_SPIRV, "x", 1, ffnrt_disk_cache_version() + 1, &n);
    expect_reject(b, n, test_key, FFNRT_CACHE_SPIRV, "another ffnrt version");
    free(b);
    b = make(test_key, FFNRT_CACHE_SPIRV, "x", &n);
    b[8] = FFNRT_DISK_CACHE_FORMAT + 1; /* format version */
    expect_reject(b, n, test_key, FFNRT_CACHE_SPIRV, "format");
    memcpy(b, "GARBAGE!", 8);
    expect_reject(b, n, test_key, FFNRT_CACHE_SPIRV, "magic");
    free(b);
}

static void put64le(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void reseal_header(unsigned char *b, size_t key_len)
{
    uint64_t h = ffnrt_fnv1a64(b, FFNRT_DISK_CACHE_HEADER_CHECK_AT, FFNRT_FNV64_INIT);
    put64le(b + FFNRT_DISK_CACHE_HEADER_CHECK_AT, ffnrt_fnv1a64(b + FFNRT_DISK_CACHE_HEADER_SIZE, key_len, h));
}

/* A stored key whose hash matches the expected key's (a collision, forged
 * here) is still refused: the whole key is compared. */
Test(disk_cache_parse, hash_collision_is_caught)
{
    const char *other = "ffnrt test\ndevice z\n";
    size_t n;
    unsigned char *b = make(other, FFNRT_CACHE_SPIRV, "x", &n);
    put64le(b + 24, ffnrt_fnv1a64(test_key, strlen(test_key), FFNRT_FNV64_INIT));
    reseal_header(b, strlen(other));
    expect_reject(b, n, test_key, FFNRT_CACHE_SPIRV, "collision");
    free(b);
}

/* A payload altered under a resealed header (all an FNV checksum would
 * ask of a forger) fails the payload's SHA-256. */
Test(disk_cache_parse, altered_payload_is_caught)
{
    size_t n;
    unsigned char *b = make(test_key, FFNRT_CACHE_CL_BINARY, "the kernel the key names", &n);
    memcpy(b + n - 6, "other!", 6);
    reseal_header(b, strlen(test_key));
    expect_reject(b, n, test_key, FFNRT_CACHE_CL_BINARY, "digest");
    free(b);
}

static void expect_sha256(const void *data, size_t n, const char *hex)
{
    unsigned char d[FFNRT_SHA256_BYTES];
    char got[2 * FFNRT_SHA256_BYTES + 1];
    ffnrt_sha256(data, n, d);
    for (int i = 0; i < FFNRT_SHA256_BYTES; i++)
        sprintf(got + 2 * i, "%02x", d[i]);
    cr_assert_str_eq(got, hex, "SHA-256 of %zu bytes", n);
}

/* FIPS 180-4's examples, a million 'a's, and the same fed in uneven pieces
 * (every split of the 64-byte block boundary). */
Test(disk_cache_parse, sha256_known_answers)
{
    expect_sha256("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect_sha256("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    expect_sha256(m, strlen(m), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    size_t big = 1000000;
    char *a = malloc(big);
    memset(a, 'a', big);
    const char *million = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
    expect_sha256(a, big, million);
    ffnrt_sha256_ctx s;
    ffnrt_sha256_init(&s);
    for (size_t at = 0, step = 1; at < big; at += step, step = step % 131 + 1)
        ffnrt_sha256_update(&s, a + at, step < big - at ? step : big - at);
    unsigned char d[FFNRT_SHA256_BYTES], whole[FFNRT_SHA256_BYTES];
    ffnrt_sha256_final(&s, d);
    ffnrt_sha256(a, big, whole);
    cr_assert_eq(memcmp(d, whole, sizeof d), 0);
    free(a);
}

/* Lengths that would overflow or point past the end, with a header that
 * is otherwise consistent. */
Test(disk_cache_parse, hostile_lengths)
{
    size_t n;
    unsigned char *b = make(test_key, FFNRT_CACHE_SPIRV, "abc", &n);
    size_t key_len = strlen(test_key);
    uint64_t lengths[] = {UINT64_MAX, UINT64_MAX - 2, (uint64_t)1 << 31, (uint64_t)1 << 40, 4, 2};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        unsigned char *c = malloc(n);
        memcpy(c, b, n);
        put64le(c + 32, lengths[i]);
        reseal_header(c, key_len);
        expect_reject(c, n, test_key, FFNRT_CACHE_SPIRV, NULL);
        free(c);
    }
    unsigned char *c = malloc(n);
    memcpy(c, b, n);
    c[20] = c[21] = c[22] = c[23] = 0xff; /* key length */
    expect_reject(c, n, test_key, FFNRT_CACHE_SPIRV, "bounds");
    free(c);
    free(b);
}

/* ------------------------------------------------------ the tuning file */

/* Appends a line to a growing text. */
static void add_line(char **text, size_t *n, size_t *cap, const char *line)
{
    size_t len = strlen(line);
    if (*n + len + 1 > *cap) {
        *cap = 2 * (*n + len + 1);
        *text = realloc(*text, *cap);
    }
    memcpy(*text + *n, line, len);
    *n += len;
    (*text)[(*n)++] = '\n';
}

/* The reader takes valid lines only, keeps the first result of a key, and
 * stops at FFNRT_TUNING_MAX_ENTRIES: 100,000 lines (which took more than
 * 600 s when every line searched every result before it) load in
 * milliseconds. What it keeps it writes back as it read it. */
/* Every code a line may hold: integer path (0-2) * 8 + unfused * 4 + kernel (0-2). */
#define CODE(i) (((i) / 2 % 3) * 8 + ((i) % 2) * 4 + (i) % 3)

Test(tuning_file, bounded_linear_and_strict, .timeout = 30)
{
    char *text = NULL, line[512];
    size_t n = 0, cap = 0;
    static const char *const bad[] = {
        "ffn/x 3 1 1",              /* value 3: no such kernel */
        "ffn/x 11 1 1",             /* no such kernel either (11 % 4) */
        "ffn/x 24 1 1",             /* out of range: integer path 3 */
        "ffn/x 08 1 1",             /* a leading zero */
        "ffn/x 123 1 1",            /* three digits */
        "ffn/x 1 1",                /* a field short */
        "ffn/x 1 1 1 1",            /* a field more */
        "ffn/x 1 inf 1",            /* not finite */
        "ffn/x 1 -1 1",             /* negative */
        "ffn/x 1 1x 1",             /* trailing letters */
        "gemm/x 1 1 1",             /* not an FFN shape class */
        "",                         /* empty */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        add_line(&text, &n, &cap, bad[i]);
    memset(line, 'k', 300);
    memcpy(line, "ffn/", 4);
    snprintf(line + 300, sizeof line - 300, " 1 1 1"); /* a key too long */
    add_line(&text, &n, &cap, line);
    for (int i = 0; i < 100000; i++) {
        snprintf(line, sizeof line, "ffn/dense/gelu/f32/b0/768x3072/t%d %d %d.25 %d.5%s", i, CODE(i), i,
                 i + 1, i % 7 == 0 ? "\r" : "");
        add_line(&text, &n, &cap, line);
        if (i == 10)
            add_line(&text, &n, &cap, "ffn/dense/gelu/f32/b0/768x3072/t3 6 9 9"); /* a later duplicate */
    }
    ffnrt_tuning_table t = {0};
    cr_assert_eq(ffnrt_tuning_parse(&t, text, n), FFNRT_TUNING_MAX_ENTRIES);
    cr_assert_eq(t.count, FFNRT_TUNING_MAX_ENTRIES);
    for (int i = 0; i < (int)FFNRT_TUNING_MAX_ENTRIES; i++) {
        snprintf(line, sizeof line, "ffn/dense/gelu/f32/b0/768x3072/t%d", i);
        const ffnrt_tuning_entry *e = ffnrt_tuning_find(&t, line);
        cr_assert_not_null(e, "%s", line);
        cr_assert_eq(e->value, CODE(i));
        cr_assert_eq(e->ms[0], i + 0.25);
        cr_assert_eq(e->ms[1], i + 1.5);
    }
    cr_assert_null(ffnrt_tuning_find(&t, "ffn/x"));
    cr_assert_null(ffnrt_tuning_find(&t, "gemm/x"));
    cr_assert_null(ffnrt_tuning_insert(&t, "ffn/one/more"), "the table is full");
    size_t m;
    char *again = ffnrt_tuning_format(&t, &m);
    ffnrt_tuning_table u = {0};
    cr_assert_eq(ffnrt_tuning_parse(&u, again, m), FFNRT_TUNING_MAX_ENTRIES);
    size_t m2;
    char *third = ffnrt_tuning_format(&u, &m2);
    cr_assert_eq(m, m2);
    cr_assert_eq(memcmp(again, third, m), 0);
    free(again);
    free(third);
    ffnrt_tuning_table_free(&u);
    ffnrt_tuning_table_free(&t);
    free(text);
}

/* A results entry past FFNRT_DISK_CACHE_MAX_RESULTS is refused unread (it
 * is parsed at every context creation); compiled code may be larger. */
Test(tuning_file, results_entries_are_bounded)
{
    size_t big = (size_t)FFNRT_DISK_CACHE_MAX_RESULTS + 1, n;
    char *payload = malloc(big);
    memset(payload, '\n', big);
    unsigned char *b = ffnrt_disk_cache_format(test_key, FFNRT_CACHE_CL_BINARY, payload, big, &n);
    cr_assert_not_null(b);
    cr_assert_null(ffnrt_disk_cache_format(test_key, FFNRT_CACHE_TUNING, payload, big, &n));
    b[12] = FFNRT_CACHE_TUNING; /* the kind, resealed: a well-formed file but for its size */
    reseal_header(b, strlen(test_key));
    expect_reject(b, n, test_key, FFNRT_CACHE_TUNING, "out of bounds");
    free(b);
    free(payload);
}

/* ----------------------------------------------------- files on the host */

static char *temp_dir(void)
{
    char path[1024];
    cr_assert_eq(ffnrt_lab_make_temp_dir("ffnrt-cache-test-", path, sizeof path), 0, "a scratch folder: %s",
                 strerror(errno));
    return strdup(path);
}

static void remove_dir(char *dir)
{
    cr_expect_eq(ffnrt_lab_remove_tree(dir), 0, "removing %s: %s", dir, strerror(errno));
    free(dir);
}

static char *copy_of(const char *s, size_t n)
{
    char *c = malloc(n + 1);
    cr_assert_not_null(c);
    memcpy(c, s, n);
    c[n] = '\0';
    return c;
}

/* Sets a file's times to `ago` seconds before now (a writer's temporary
 * left that long). */
static void make_old(const char *path, time_t ago)
{
#ifdef _WIN32
    struct _utimbuf t = {time(NULL) - ago, time(NULL) - ago};
    cr_assert_eq(_utime(path, &t), 0, "%s: %s", path, strerror(errno));
#else
    struct timeval old[2] = {{time(NULL) - ago, 0}, {time(NULL) - ago, 0}};
    cr_assert_eq(utimes(path, old), 0, "%s: %s", path, strerror(errno));
#endif
}

/* The cache's files in dir: entries (*.bin) and temporaries (*.tmp.*). */
typedef struct file_list {
    char names[32][256];
    int count;
} file_list;

typedef struct file_lists {
    file_list *entries, *temps;
} file_lists;

static void list_one(const char *dir, const char *name, void *arg)
{
    (void)dir;
    file_lists *both = arg;
    file_list *l = strstr(name, ".tmp.") ? both->temps : strstr(name, ".bin") ? both->entries : NULL;
    if (l && l->count < 32)
        snprintf(l->names[l->count++], 256, "%s", name);
}

static void list_files(const char *dir, file_list *entries, file_list *temps)
{
    entries->count = temps->count = 0;
    file_lists both = {entries, temps};
    cr_assert_eq(ffnrt_lab_dir_each(dir, list_one, &both), 0, "listing %s", dir);
}

static unsigned char *read_file(const char *dir, const char *name, size_t *n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "open %s", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(size > 0 ? (size_t)size : 1);
    *n = fread(b, 1, (size_t)size, f);
    fclose(f);
    return b;
}

static void write_file(const char *dir, const char *name, const void *b, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "create %s", path);
    cr_assert_eq(fwrite(b, 1, n, f), n);
    fclose(f);
}

/* A file is a valid entry of the kind its name says, checked with the key
 * it stores itself (the parser then checks every checksum). */
static int file_is_valid(const char *dir, const char *name)
{
    size_t n;
    unsigned char *b = read_file(dir, name, &n);
    int ok = 0;
    if (n >= FFNRT_DISK_CACHE_HEADER_SIZE) {
        uint32_t key_len = (uint32_t)b[20] | (uint32_t)b[21] << 8 | (uint32_t)b[22] << 16 | (uint32_t)b[23] << 24;
        uint32_t kind = b[12];
        if (key_len <= n - FFNRT_DISK_CACHE_HEADER_SIZE) {
            char *key = copy_of((const char *)b + FFNRT_DISK_CACHE_HEADER_SIZE, key_len);
            ok = ffnrt_disk_cache_parse(b, n, key, (ffnrt_cache_kind)kind, NULL, NULL, NULL) &&
                 strncmp(name, ffnrt_cache_kind_name((ffnrt_cache_kind)kind),
                         strlen(ffnrt_cache_kind_name((ffnrt_cache_kind)kind))) == 0;
            free(key);
        }
    }
    free(b);
    return ok;
}

Test(disk_cache_files, put_get_and_replace)
{
    char *dir = temp_dir();
    ffnrt_disk_cache c;
    ffnrt_disk_cache_open(&c, dir, 0);
    cr_assert(c.enabled, "%s", c.status);
    size_t len;
    cr_assert_null(ffnrt_disk_cache_get(&c, "k", FFNRT_CACHE_CALIBRATION, &len));
    cr_assert_eq(c.misses, 1);
    cr_assert(ffnrt_disk_cache_put(&c, "k", FFNRT_CACHE_CALIBRATION, "first", 5));
    cr_assert(ffnrt_disk_cache_put(&c, "k", FFNRT_CACHE_CALIBRATION, "second!", 7));
    char *got = ffnrt_disk_cache_get(&c, "k", FFNRT_CACHE_CALIBRATION, &len);
    cr_assert_not_null(got);
    cr_assert_eq(len, 7);
    cr_assert_eq(memcmp(got, "second!", 7), 0);
    free(got);
    /* Another kind under the same key is another file. */
    cr_assert_null(ffnrt_disk_cache_get(&c, "k", FFNRT_CACHE_TUNING, &len));
    file_list entries, temps;
    list_files(dir, &entries, &temps);
    cr_assert_eq(entries.count, 1);
    cr_assert_eq(temps.count, 0, "a temporary file was left behind");
    cr_assert(file_is_valid(dir, entries.names[0]));
    remove_dir(dir);
}

Test(disk_cache_files, directory_choice)
{
    char *dir = temp_dir();
    char want[1024];
    ffnrt_disk_cache c;
    setenv("FFNRT_CACHE_DIR", dir, 1);
    unsetenv("FFNRT_CACHE");
    ffnrt_disk_cache_open(&c, NULL, 0);
    cr_assert_str_eq(c.dir, dir);
    unsetenv("FFNRT_CACHE_DIR");
#ifndef _WIN32 /* XDG's and HOME's folders: Windows takes LOCALAPPDATA */
    setenv("XDG_CACHE_HOME", dir, 1);
    ffnrt_disk_cache_open(&c, NULL, 0);
    snprintf(want, sizeof want, "%s/ffnrt", dir);
    cr_assert_str_eq(c.dir, want);
    cr_assert(c.enabled);
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", dir, 1);
    ffnrt_disk_cache_open(&c, NULL, 0);
    snprintf(want, sizeof want, "%s/.cache/ffnrt", dir);
    cr_assert_str_eq(c.dir, want, "%s", c.status);
    cr_assert(c.enabled, "nested directories are created: %s", c.status);
#endif
    snprintf(want, sizeof want, "%s/option/a/b", dir);
    ffnrt_disk_cache_open(&c, want, 0);
    cr_assert_str_eq(c.dir, want);
    cr_assert(c.enabled, "nested directories are created: %s", c.status);
    const char *offs[] = {"0", "off", "OFF", "false", "no"};
    for (int i = 0; i < 5; i++) {
        setenv("FFNRT_CACHE", offs[i], 1);
        ffnrt_disk_cache_open(&c, want, 0);
        cr_assert_not(c.enabled, "FFNRT_CACHE=%s", offs[i]);
        cr_assert(strstr(c.status, "off"));
    }
    unsetenv("FFNRT_CACHE");
    ffnrt_disk_cache_open(&c, want, 1);
    cr_assert_not(c.enabled);
    cr_assert_not(ffnrt_disk_cache_put(&c, "k", FFNRT_CACHE_TUNING, "x", 1));
#ifndef _WIN32
    /* A relative XDG_CACHE_HOME is ignored, as the spec says, and the
     * reason says so rather than "not set". */
    char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    unsetenv("HOME");
    setenv("XDG_CACHE_HOME", "relative/cache", 1);
    ffnrt_disk_cache_open(&c, NULL, 0);
    cr_assert_not(c.enabled);
    cr_assert(strstr(c.status, "XDG_CACHE_HOME is relative"), "%s", c.status);
    unsetenv("XDG_CACHE_HOME");
    if (home)
        setenv("HOME", home, 1);
    free(home);
#endif
    remove_dir(dir);
}

#ifndef _WIN32
static void expect_refused(const char *dir, const char *reason)
{
    ffnrt_disk_cache c;
    ffnrt_disk_cache_open(&c, dir, 0);
    cr_assert_not(c.enabled, "%s was trusted", dir);
    cr_assert(strstr(c.status, reason), "%s: \"%s\", expected \"%s\"", dir, c.status, reason);
    size_t len;
    cr_assert_null(ffnrt_disk_cache_get(&c, "k", FFNRT_CACHE_CL_BINARY, &len));
}

/* The cache trusts a directory as ssh trusts a user's files: the user's
 * own (root's for root), writable by no one else, under directories that
 * are the user's or root's and writable by no one else unless sticky
 * (/tmp). It creates its directories 0700 and its files 0600, and refuses
 * an entry another user owns or may write. */
Test(disk_cache_files, trust_rules)
{
    char *dir = temp_dir(); /* 0700, in the sticky /tmp (or $TMPDIR) */
    char path[1024], entry[1024];
    struct stat st;
    ffnrt_disk_cache c;
    snprintf(path, sizeof path, "%s/new/cache", dir);
    ffnrt_disk_cache_open(&c, path, 0);
    cr_assert(c.enabled, "%s", c.status);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0700, "created %o", (unsigned)(st.st_mode & 0777));
    cr_assert(ffnrt_disk_cache_put(&c, "k", FFNRT_CACHE_CL_BINARY, "code", 4));
    ffnrt_disk_cache_path(&c, "k", FFNRT_CACHE_CL_BINARY, entry, sizeof entry);
    cr_assert_eq(stat(entry, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "wrote %o", (unsigned)(st.st_mode & 0777));

    /* An entry others may write is refused, then rewritten as the user's. */
    cr_assert_eq(chmod(entry, 0666), 0);
    size_t len;
    cr_assert_null(ffnrt_disk_cache_get(&c, "k", FFNRT_CACHE_CL_BINARY, &len));
    cr_assert(strstr(c.last_note, "writable by every user"), "%s", c.last_note);
    cr_assert(ffnrt_disk_cache_put(&c, "k", FFNRT_CACHE_CL_BINARY, "code", 4));
    char *got = ffnrt_disk_cache_get(&c, "k", FFNRT_CACHE_CL_BINARY, &len);
    cr_assert_not_null(got, "%s", c.last_note);
    free(got);

    /* Directories others may write, and their contents. */
    cr_assert_eq(chmod(path, 0777), 0);
    expect_refused(path, "writable by every user");
    cr_assert_eq(chmod(path, 0770), 0);
    expect_refused(path, "writable by its group");
    cr_assert_eq(chmod(path, 0700), 0);
    snprintf(entry, sizeof entry, "%s/new", dir);
    cr_assert_eq(chmod(entry, 0777), 0); /* a parent without the sticky bit */
    expect_refused(path, "a directory above it");
    cr_assert_eq(chmod(entry, 01777), 0); /* sticky, as /tmp */
    ffnrt_disk_cache_open(&c, path, 0);
    cr_assert(c.enabled, "%s", c.status);
    cr_assert_eq(chmod(entry, 0700), 0);

    /* Owned by another user: chown needs root (CI runs as root, for whom
     * every directory is writable, so ownership is the whole check);
     * elsewhere a directory of root's stands in for it. */
    if (geteuid() == 0) {
        const uid_t nobody = 65534;
        ffnrt_disk_cache_open(&c, path, 0);
        ffnrt_disk_cache_path(&c, "k", FFNRT_CACHE_CL_BINARY, entry, sizeof entry);
        cr_assert_eq(chown(entry, nobody, nobody), 0, "%s", strerror(errno));
        cr_assert_null(ffnrt_disk_cache_get(&c, "k", FFNRT_CACHE_CL_BINARY, &len));
        cr_assert(strstr(c.last_note, "owned by uid 65534"), "%s", c.last_note);
        cr_assert_eq(chown(path, nobody, nobody), 0, "%s", strerror(errno));
        expect_refused(path, "owned by uid 65534, not by this user (uid 0)");
        snprintf(entry, sizeof entry, "%s/new", dir);
        cr_assert_eq(chown(path, 0, 0), 0);
        cr_assert_eq(chown(entry, nobody, nobody), 0);
        expect_refused(path, "a directory above it");
    } else {
        expect_refused("/", "owned by uid 0");
    }
    remove_dir(dir);
}
#endif

/* What is at an entry's path but not a file (a FIFO, a directory, a
 * symbolic link) is refused without blocking or following it, and a put
 * replaces a link rather than writing through it (the FIFO and the link
 * POSIX-only). */
Test(disk_cache_files, not_a_regular_file, .timeout = 20)
{
    char *dir = temp_dir();
    ffnrt_disk_cache c;
    ffnrt_disk_cache_open(&c, dir, 0);
    char path[1024];
    size_t len;
#ifndef _WIN32
    char target[1024];
    ffnrt_disk_cache_path(&c, "fifo", FFNRT_CACHE_TUNING, path, sizeof path);
    cr_assert_eq(mkfifo(path, 0600), 0);
    cr_assert_null(ffnrt_disk_cache_get(&c, "fifo", FFNRT_CACHE_TUNING, &len));
    cr_assert_eq(c.rejected, 1);
    cr_assert(ffnrt_disk_cache_put(&c, "fifo", FFNRT_CACHE_TUNING, "v", 1));
    free(ffnrt_disk_cache_get(&c, "fifo", FFNRT_CACHE_TUNING, &len));
    cr_assert_eq(c.hits, 1);

    ffnrt_disk_cache_path(&c, "link", FFNRT_CACHE_TUNING, path, sizeof path);
    snprintf(target, sizeof target, "%s/target", dir);
    write_file(dir, "target", "precious", 8);
    cr_assert_eq(symlink(target, path), 0);
    cr_assert_null(ffnrt_disk_cache_get(&c, "link", FFNRT_CACHE_TUNING, &len));
    cr_assert(ffnrt_disk_cache_put(&c, "link", FFNRT_CACHE_TUNING, "v", 1));
    size_t n;
    char *kept = (char *)read_file(dir, "target", &n);
    cr_assert_eq(n, 8);
    cr_assert_eq(memcmp(kept, "precious", 8), 0, "the put wrote through the link");
    free(kept);
#endif

    ffnrt_disk_cache_path(&c, "dir", FFNRT_CACHE_TUNING, path, sizeof path);
    cr_assert_eq(ffnrt_lab_make_dirs(path, 0), 0, "%s: %s", path, strerror(errno));
    cr_assert_null(ffnrt_disk_cache_get(&c, "dir", FFNRT_CACHE_TUNING, &len));
    cr_assert_not(ffnrt_disk_cache_put(&c, "dir", FFNRT_CACHE_TUNING, "v", 1), "rename over a directory");
    cr_assert_eq(c.write_failures, 1);
    remove_dir(dir);
}

/* A temporary file of a writer that died is removed once it is old; a
 * young one (a live writer's) is left alone. */
Test(disk_cache_files, stale_temporaries_are_removed)
{
    char *dir = temp_dir();
    write_file(dir, "spirv-0000000000000000.bin.tmp.1.deadbeef", "partial", 7);
    write_file(dir, "spirv-0000000000000001.bin.tmp.2.feedf00d", "partial", 7);
    char path[1024];
    snprintf(path, sizeof path, "%s/spirv-0000000000000000.bin.tmp.1.deadbeef", dir);
    make_old(path, 3600);
    ffnrt_disk_cache c;
    ffnrt_disk_cache_open(&c, dir, 0);
    file_list entries, temps;
    list_files(dir, &entries, &temps);
    cr_assert_eq(temps.count, 1);
    cr_assert_str_eq(temps.names[0], "spirv-0000000000000001.bin.tmp.2.feedf00d");
    remove_dir(dir);
}

/* ------------------------------------------------------- on the devices */

typedef struct run_result {
    float y[SILU_N];
    ffnrt_cache_stats stats; /* the strings are not kept */
    char status[256], note[256];
} run_result;

/* SiLU on SILU_N values with the cache in dir (NULL: off), checked against the
 * reference; the cache's counters after the op. */
static int without_validation; /* run_op's context without the validation layer */
/* The suite's contexts ignore the quirk table, so that on PoCL too the
 * disk cache keeps the driver's binaries (as on every driver the table
 * leaves alone) and their entries' handling is tested; the table's veto
 * is tested on its own (driver_binary_veto). */
static int honour_quirks;

static void run_op(ffnrt_backend backend, const char *dir, int disable, run_result *r)
{
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.cache_dir = dir;
    o.disable_disk_cache = disable;
    o.ignore_quirks = !honour_quirks;
    ffnrt_context *ctx = NULL;
    if (without_validation) {
        o.backend = backend;
        o.device_index = 0;
        cr_assert_eq(ffnrt_context_create(&o, &ctx), FFNRT_OK, "%s", ffnrt_last_error_message());
    } else {
        ctx = test_context(backend, &o);
    }
    float x[SILU_N];
    inputs(x);
    ffnrt_tensor *t = test_tensor_1d(ctx, SILU_N, x);
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_SILU);
    cr_assert_eq(ffnrt_activation_forward(ctx, &d, t, t), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    test_read(t, r->y, SILU_N);
    for (int i = 0; i < SILU_N; i++)
        cr_assert_leq(ulp_error_f32(r->y[i], ref_silu(x[i])), 4.0, "silu(%a) = %a", x[i], r->y[i]);
    ffnrt_tensor_destroy(t);
    cr_assert_eq(ffnrt_context_cache_stats(ctx, &r->stats), FFNRT_OK);
    snprintf(r->status, sizeof r->status, "%s", r->stats.status);
    snprintf(r->note, sizeof r->note, "%s", r->stats.last_note);
    r->stats.directory = r->stats.status = r->stats.last_note = NULL;
    test_context_done(ctx); /* saves the Vulkan pipeline cache */
}

static void expect_warm(ffnrt_backend backend, const char *dir, const float *cold)
{
    run_result w;
    run_op(backend, dir, 0, &w);
    cr_assert_eq(w.stats.rejected, 0, "%s", w.note);
    cr_assert_eq(w.stats.misses, 0);
    cr_assert_geq(w.stats.hits, 1);
    cr_assert_eq(memcmp(w.y, cold, sizeof w.y), 0, "a cached kernel gave other results");
}

BACKEND_PARAMETERS(disk_cache, cold_then_warm)
ParameterizedTest(ffnrt_backend *b, disk_cache, cold_then_warm)
{
    char *dir = temp_dir();
    run_result cold;
    run_op(*b, dir, 0, &cold);
    cr_assert(cold.stats.enabled, "%s", cold.status);
    cr_assert_eq(cold.stats.hits, 0);
    cr_assert_geq(cold.stats.misses, 1);
    cr_assert_geq(cold.stats.writes, 1);
    cr_assert_eq(cold.stats.write_failures, 0, "%s", cold.note);
    file_list entries, temps;
    list_files(dir, &entries, &temps);
    cr_assert_geq(entries.count, 1);
    cr_assert_eq(temps.count, 0);
    for (int i = 0; i < entries.count; i++)
        cr_assert(file_is_valid(dir, entries.names[i]), "%s", entries.names[i]);
    /* The kernel's entries, and beside them the context's build-time
     * record (a calibration entry), in whatever order the directory lists
     * them. */
    int spirv = 0, pipeline = 0, binary = 0, calibration = 0;
    for (int i = 0; i < entries.count; i++) {
        spirv += strncmp(entries.names[i], "spirv-", 6) == 0;
        pipeline += strncmp(entries.names[i], "pipeline-cache-", 15) == 0;
        binary += strncmp(entries.names[i], "cl-binary-", 10) == 0;
        calibration += strncmp(entries.names[i], "calibration-", 12) == 0;
    }
    cr_assert_eq(spirv + pipeline + binary + calibration, entries.count, "an entry of an unexpected kind");
    cr_assert_leq(calibration, 1);
    if (*b == FFNRT_BACKEND_VULKAN) {
        cr_assert_eq(spirv, 1);
        cr_assert_eq(pipeline, 1);
    } else {
        cr_assert_eq(binary, 1);
    }
    expect_warm(*b, dir, cold.y);
    remove_dir(dir);
}

/* With the quirk table honoured, a driver it vetoes keeping binaries for
 * (PoCL: asking for one compiles the program a second time) gets no
 * binary entry, says so in its plan and runs the same from its own cache
 * in the next process; every other device keeps its entries as above. */
BACKEND_PARAMETERS(disk_cache, driver_binary_veto)
ParameterizedTest(ffnrt_backend *b, disk_cache, driver_binary_veto)
{
    char *dir = temp_dir();
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.cache_dir = dir;
    ffnrt_context *ctx = test_context(*b, &o);
    ffnrt_plan *plan;
    cr_assert_eq(ffnrt_context_plan(ctx, &plan), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    const char *quirks = ffnrt_plan_choice(plan, "quirks");
    int vetoed = quirks && strstr(quirks, "driver binaries") != NULL;
    ffnrt_device_info info;
    cr_assert_eq(ffnrt_context_get_device_info(ctx, &info), FFNRT_OK);
    cr_expect_eq(vetoed, *b == FFNRT_BACKEND_OPENCL && strstr(info.api_version, "PoCL") != NULL,
                 "%s: quirks \"%s\"", info.name, quirks ? quirks : "");
    cr_log_info("%s: %s", info.name, vetoed ? "keeps no driver binary (quirk table)" : "keeps its binaries");
    ffnrt_plan_destroy(plan);
    test_context_done(ctx);

    honour_quirks = 1;
    run_result cold, warm;
    run_op(*b, dir, 0, &cold);
    run_op(*b, dir, 0, &warm);
    honour_quirks = 0;
    cr_assert_eq(memcmp(warm.y, cold.y, sizeof cold.y), 0);
    file_list entries, temps;
    list_files(dir, &entries, &temps);
    int binary = 0;
    for (int i = 0; i < entries.count; i++)
        binary += strncmp(entries.names[i], "cl-binary-", 10) == 0;
    if (vetoed) {
        cr_assert_eq(binary, 0, "a binary was kept although the quirk table vetoes it");
        cr_assert_eq(warm.stats.hits + warm.stats.rejected, 0, "%s", warm.note);
    } else {
        cr_assert_eq(binary, *b == FFNRT_BACKEND_OPENCL, "%d binaries", binary);
        cr_assert_geq(warm.stats.hits, 1, "%s", warm.note);
    }
    remove_dir(dir);
}

typedef enum damage {
    TRUNCATE,
    FLIP_PAYLOAD_BYTE,
    OTHER_VERSION,
    OTHER_DEVICE,
    GARBAGE,
    ZERO_LENGTH,
    VALID_FILE_BAD_CONTENT, /* a well-formed entry whose blob the driver must refuse */
    /* SPIR-V only (the other kinds are damaged as VALID_FILE_BAD_CONTENT): */
    SPIRV_BAD_BODY,        /* a valid SPIR-V header, then garbage: ffnrt's validator refuses it */
    SPIRV_DRIVER_REFUSES,  /* valid SPIR-V without the entry point ffnrt asks for: the driver refuses it */
    DAMAGE_COUNT
} damage;

static const char *const damage_names[] = {"truncated", "flipped payload byte", "another ffnrt version",
                                           "another device's key", "garbage", "zero length",
                                           "valid file, bad blob", "SPIR-V header, garbage body",
                                           "SPIR-V the driver refuses"};

/* The SPIR-V with its entry point "main" renamed "mxin" (still valid). */
static void rename_entry_point(unsigned char *spirv, size_t len)
{
    uint32_t *w = (uint32_t *)spirv;
    size_t n = len / 4;
    for (size_t i = 5; i < n;) {
        uint32_t count = w[i] >> 16, opcode = w[i] & 0xffffu;
        cr_assert_gt(count, 0);
        if (opcode == 15 /* OpEntryPoint */) {
            cr_assert_eq(memcmp(&w[i + 3], "main", 4), 0);
            memcpy(&w[i + 3], "mxin", 4);
            return;
        }
        i += count;
    }
    cr_assert_fail("no OpEntryPoint");
}

static void damage_file(const char *dir, const char *name, damage how)
{
    size_t n;
    unsigned char *b = read_file(dir, name, &n);
    cr_assert_gt(n, FFNRT_DISK_CACHE_HEADER_SIZE);
    uint32_t key_len = (uint32_t)b[20] | (uint32_t)b[21] << 8 | (uint32_t)b[22] << 16 | (uint32_t)b[23] << 24;
    ffnrt_cache_kind kind = (ffnrt_cache_kind)b[12];
    char *key = copy_of((const char *)b + FFNRT_DISK_CACHE_HEADER_SIZE, key_len);
    const unsigned char *payload = b + FFNRT_DISK_CACHE_HEADER_SIZE + key_len;
    size_t pay_len = n - FFNRT_DISK_CACHE_HEADER_SIZE - key_len, m = 0;
    unsigned char *out = NULL;
    switch (how) {
    case TRUNCATE:
        write_file(dir, name, b, n / 2);
        break;
    case FLIP_PAYLOAD_BYTE:
        b[n - 1 - pay_len / 2] ^= 0x10;
        write_file(dir, name, b, n);
        break;
    case OTHER_VERSION:
        out = ffnrt_disk_cache_format_version(key, kind, payload, pay_len, ffnrt_disk_cache_version() + 1, &m);
        break;
    case OTHER_DEVICE: {
        char *dev = strstr(key, "\ndevice ");
        cr_assert_not_null(dev, "the key names the device: %s", key);
        dev[8] ^= 1; /* another device's entry under this file name */
        out = ffnrt_disk_cache_format(key, kind, payload, pay_len, &m);
        break;
    }
    case GARBAGE: {
        unsigned char junk[3000];
        for (size_t i = 0; i < sizeof junk; i++)
            junk[i] = (unsigned char)(i * 131u + 7u);
        write_file(dir, name, junk, sizeof junk);
        break;
    }
    case ZERO_LENGTH:
        write_file(dir, name, "", 0);
        break;
    case SPIRV_BAD_BODY:
    case SPIRV_DRIVER_REFUSES:
    case VALID_FILE_BAD_CONTENT: {
        unsigned char *bad = malloc(pay_len);
        memcpy(bad, payload, pay_len);
        if (kind == FFNRT_CACHE_SPIRV && how == SPIRV_BAD_BODY)
            for (size_t i = 20; i < pay_len; i++)
                bad[i] = (unsigned char)(i * 29u + 3u);
        else if (kind == FFNRT_CACHE_SPIRV && how == SPIRV_DRIVER_REFUSES)
            rename_entry_point(bad, pay_len);
        else if (kind == FFNRT_CACHE_PIPELINE_CACHE)
            bad[16] ^= 1; /* its pipelineCacheUUID */
        else
            for (size_t i = 0; i < pay_len; i++)
                bad[i] = (unsigned char)(i * 29u + 3u);
        out = ffnrt_disk_cache_format(key, kind, bad, pay_len, &m);
        free(bad);
        break;
    }
    default:
        break;
    }
    if (out)
        write_file(dir, name, out, m);
    free(out);
    free(key);
    free(b);
}

typedef struct damage_case {
    ffnrt_backend backend;
    damage how;
} damage_case;

ParameterizedTestParameters(disk_cache, bad_files_are_rebuilt)
{
    static damage_case cases[TEST_BACKENDS * DAMAGE_COUNT];
    size_t n = 0;
    for (int b = 0; b < TEST_BACKENDS; b++)
        for (int d = 0; d < DAMAGE_COUNT; d++)
            if (d < SPIRV_BAD_BODY || test_backends[b] == FFNRT_BACKEND_VULKAN)
                cases[n++] = (damage_case){test_backends[b], (damage)d};
    return cr_make_param_array(damage_case, cases, n);
}

/* Each file of a cold build damaged one way: the next run ignores it,
 * rebuilds (same results) and rewrites it, and the run after hits. */
ParameterizedTest(damage_case *c, disk_cache, bad_files_are_rebuilt)
{
    if (c->how == SPIRV_DRIVER_REFUSES && test_validation_from_outside())
        cr_skip_test("valid SPIR-V the driver refuses: the layer enabled from outside the process would report it "
                     "(rightly), and cannot be turned off for this case; it runs without the layer apart");
    char *dir = temp_dir();
    run_result cold, again;
    run_op(c->backend, dir, 0, &cold);
    file_list entries, temps;
    list_files(dir, &entries, &temps);
    cr_assert_geq(entries.count, 1);
    for (int i = 0; i < entries.count; i++)
        damage_file(dir, entries.names[i], c->how);
    /* Valid SPIR-V whose entry point is missing is a driver's to refuse;
     * the validation layer would (rightly) report it first. */
    without_validation = c->how == SPIRV_DRIVER_REFUSES;
    run_op(c->backend, dir, 0, &again);
    without_validation = 0;
    cr_assert_geq(again.stats.rejected, 1, "%s: nothing was rejected", damage_names[c->how]);
    cr_assert_eq(again.stats.hits, 0, "%s: a damaged file was used (%s)", damage_names[c->how], again.note);
    cr_assert_geq(again.stats.writes, 1, "%s: not rewritten", damage_names[c->how]);
    cr_assert_str_not_empty(again.note);
    if (c->how == SPIRV_BAD_BODY)
        cr_assert(strstr(again.note, "invalid SPIR-V"), "%s", again.note);
    if (c->how == SPIRV_DRIVER_REFUSES)
        cr_assert(strstr(again.note, "VkResult"), "%s", again.note);
    cr_assert_eq(memcmp(again.y, cold.y, sizeof cold.y), 0);
    list_files(dir, &entries, &temps);
    for (int i = 0; i < entries.count; i++)
        cr_assert(file_is_valid(dir, entries.names[i]), "%s: %s not rewritten", damage_names[c->how],
                  entries.names[i]);
    expect_warm(c->backend, dir, cold.y);
    remove_dir(dir);
}

/* A crash between writing and renaming leaves a temporary file and no
 * entry: the next run ignores the temporary, builds and writes the entry. */
BACKEND_PARAMETERS(disk_cache, stale_temporary_file)
ParameterizedTest(ffnrt_backend *b, disk_cache, stale_temporary_file)
{
    char *dir = temp_dir();
    run_result cold, again;
    run_op(*b, dir, 0, &cold);
    file_list entries, temps;
    list_files(dir, &entries, &temps);
    for (int i = 0; i < entries.count; i++) {
        char tmp[400], path[1024];
        snprintf(tmp, sizeof tmp, "%s.tmp.999999.0badf00d", entries.names[i]);
        size_t n;
        unsigned char *bytes = read_file(dir, entries.names[i], &n);
        write_file(dir, tmp, bytes, n / 3);
        free(bytes);
        snprintf(path, sizeof path, "%s/%s", dir, entries.names[i]);
        cr_assert_eq(remove(path), 0, "%s: %s", path, strerror(errno));
        snprintf(path, sizeof path, "%s/%s", dir, tmp);
        make_old(path, 7200);
    }
    run_op(*b, dir, 0, &again);
    cr_assert_eq(again.stats.hits, 0);
    cr_assert_geq(again.stats.writes, 1);
    cr_assert_eq(memcmp(again.y, cold.y, sizeof cold.y), 0);
    list_files(dir, &entries, &temps);
    cr_assert_eq(temps.count, 0, "the stale temporary %s was not removed", temps.names[0]);
    for (int i = 0; i < entries.count; i++)
        cr_assert(file_is_valid(dir, entries.names[i]));
    expect_warm(*b, dir, cold.y);
    remove_dir(dir);
}

BACKEND_PARAMETERS(disk_cache, disabled_writes_nothing)
ParameterizedTest(ffnrt_backend *b, disk_cache, disabled_writes_nothing)
{
    char *dir = temp_dir();
    run_result r;
    run_op(*b, dir, 1, &r);
    cr_assert_not(r.stats.enabled);
    cr_assert(strstr(r.status, "off"), "%s", r.status);
    cr_assert_eq(r.stats.hits + r.stats.misses + r.stats.writes, 0);
    setenv("FFNRT_CACHE", "off", 1);
    run_op(*b, dir, 0, &r);
    unsetenv("FFNRT_CACHE");
    cr_assert_not(r.stats.enabled);
    cr_assert(strstr(r.status, "FFNRT_CACHE"), "%s", r.status);
    file_list entries, temps;
    list_files(dir, &entries, &temps);
    cr_assert_eq(entries.count + temps.count, 0, "the cache was off but wrote %s", entries.names[0]);
    remove_dir(dir);
}

/* A directory that cannot be created (under a regular file: root cannot
 * either), and one removed while the context lives: the ops still run. */
BACKEND_PARAMETERS(disk_cache, unusable_directory_is_not_fatal)
ParameterizedTest(ffnrt_backend *b, disk_cache, unusable_directory_is_not_fatal)
{
    char *dir = temp_dir();
    write_file(dir, "a-file", "x", 1);
    char bad[1024];
    snprintf(bad, sizeof bad, "%s/a-file/cache", dir);
    run_result r;
    run_op(*b, bad, 0, &r);
    cr_assert_not(r.stats.enabled);
    cr_assert(strstr(r.status, "cannot create"), "%s", r.status);

    char sub[1024];
    snprintf(sub, sizeof sub, "%s/gone", dir);
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.cache_dir = sub;
    o.ignore_quirks = 1; /* a binary to write on PoCL too (run_op says why) */
    ffnrt_context *ctx = test_context(*b, &o);
    cr_assert_eq(ffnrt_lab_remove_tree(sub), 0, "%s", strerror(errno));
    float x[SILU_N], y[SILU_N];
    inputs(x);
    ffnrt_tensor *t = test_tensor_1d(ctx, SILU_N, x);
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_SILU);
    cr_assert_eq(ffnrt_activation_forward(ctx, &d, t, t), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    test_read(t, y, SILU_N);
    ffnrt_cache_stats s;
    cr_assert_eq(ffnrt_context_cache_stats(ctx, &s), FFNRT_OK);
    cr_assert_geq(s.write_failures, 1);
    cr_assert(strstr(s.last_note, "not written"), "%s", s.last_note);
    ffnrt_tensor_destroy(t);
    test_context_done(ctx);
    remove_dir(dir);
}

/* The calibration and tuning store, per device. */
BACKEND_PARAMETERS(disk_cache, blobs)
ParameterizedTest(ffnrt_backend *b, disk_cache, blobs)
{
    char *dir = temp_dir();
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.cache_dir = dir;
    ffnrt_context *ctx = test_context(*b, &o);
    size_t len;
    cr_assert_null(ffnrt_context_blob_get(ctx, FFNRT_CACHE_TUNING, "gemm f32 512x1376", &len));
    const uint32_t tiles[4] = {64, 64, 8, 4};
    cr_assert(ffnrt_context_blob_put(ctx, FFNRT_CACHE_TUNING, "gemm f32 512x1376", tiles, sizeof tiles));
    cr_assert(ffnrt_context_blob_put(ctx, FFNRT_CACHE_CALIBRATION, "copy GB/s", "8.1", 3));
    test_context_done(ctx);

    ctx = test_context(*b, &o);
    uint32_t *got = ffnrt_context_blob_get(ctx, FFNRT_CACHE_TUNING, "gemm f32 512x1376", &len);
    cr_assert_not_null(got);
    cr_assert_eq(len, sizeof tiles);
    cr_assert_eq(memcmp(got, tiles, sizeof tiles), 0);
    free(got);
    char *cal = ffnrt_context_blob_get(ctx, FFNRT_CACHE_CALIBRATION, "copy GB/s", &len);
    cr_assert_not_null(cal);
    cr_assert_eq(len, 3);
    free(cal);
    cr_assert_null(ffnrt_context_blob_get(ctx, FFNRT_CACHE_CALIBRATION, "gemm f32 512x1376", &len));
    test_context_done(ctx);

    /* The other backend's device does not see them. */
    ffnrt_backend other = *b == FFNRT_BACKEND_OPENCL ? FFNRT_BACKEND_VULKAN : FFNRT_BACKEND_OPENCL;
    ctx = test_context(other, &o);
    if (ctx) {
        cr_assert_null(ffnrt_context_blob_get(ctx, FFNRT_CACHE_TUNING, "gemm f32 512x1376", &len));
        test_context_done(ctx);
    }
    remove_dir(dir);
}

/* Calibration figures read back from the disk cache: as many as
 * calibration writes, each positive and finite; anything else (short,
 * long, trailing text, zero, negative, NaN, Inf, no number, past the
 * reader's buffer) is set aside, so the device is measured again rather
 * than steered by a half-read entry. Loaded (and kept for the process)
 * only once well formed, so the malformed entries come first. */
BACKEND_PARAMETERS(disk_cache, calibration_figures_checked)
ParameterizedTest(ffnrt_backend *b, disk_cache, calibration_figures_checked)
{
    char *dir = temp_dir();
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.cache_dir = dir;
    ffnrt_context *ctx = test_context(*b, &o);
    if (!ctx) {
        remove_dir(dir);
        return;
    }
    char variant[640];
    ffnrt_calibration_variant(ctx, variant, sizeof variant);
    /* copy, GEMM, dispatch, fused, then one integer-path figure a format measured. */
    char figures[128] = "";
    int measured = 0;
    for (int f = 0; f < FFNRT_WEIGHT_FORMAT_COUNT; f++)
        if (ffnrt_ffn_int_dot_measured((ffnrt_weight_format)f)) {
            size_t len = strlen(figures);
            snprintf(figures + len, sizeof figures - len, " %d.25", 1 + measured++);
        }
    cr_assert_geq(measured, 4, "Q8_0, Q4_0, Q4_K and Q6_K each measured: %d", measured);
    char good[256], bad[12][256];
    snprintf(good, sizeof good, "12.5 30 4 1.1%s\n", figures);
    int n = 0;
    snprintf(bad[n++], sizeof bad[0], "12.5 30 4 1.1%.*s", (int)(strrchr(figures, ' ') - figures), figures);
    snprintf(bad[n++], sizeof bad[0], "12.5 30 4 1.1%s 1.5", figures);
    snprintf(bad[n++], sizeof bad[0], "12.5 30 4 1.1%s junk", figures);
    snprintf(bad[n++], sizeof bad[0], "0 30 4 1.1%s", figures);
    snprintf(bad[n++], sizeof bad[0], "12.5 -30 4 1.1%s", figures);
    snprintf(bad[n++], sizeof bad[0], "12.5 30 nan 1.1%s", figures);
    snprintf(bad[n++], sizeof bad[0], "12.5 30 4 inf%s", figures);
    snprintf(bad[n++], sizeof bad[0], "copy 30 4 1.1%s", figures);
    snprintf(bad[n++], sizeof bad[0], "%s", "");
    memset(bad[n], '1', 200);
    bad[n++][200] = '\0';
    for (int i = 0; i < n; i++) {
        cr_assert(ffnrt_device_blob_put(&ctx->disk, &ctx->device_as_found, FFNRT_CACHE_CALIBRATION, variant, bad[i],
                                        strlen(bad[i])));
        ctx->calibration.valid = 0;
        ffnrt_calibration_load(ctx);
        cr_expect_not(ctx->calibration.valid, "loaded \"%s\"", bad[i]);
    }
    cr_assert(ffnrt_device_blob_put(&ctx->disk, &ctx->device_as_found, FFNRT_CACHE_CALIBRATION, variant, good,
                                    strlen(good)));
    ffnrt_calibration_load(ctx);
    cr_assert(ctx->calibration.valid, "%s", good);
    cr_expect_float_eq(ctx->calibration.copy_gbps, 12.5, 1e-12);
    cr_expect_float_eq(ctx->calibration.fused_speedup, 1.1, 1e-12);
    cr_expect_float_eq(ctx->calibration.int_dot_speedup[FFNRT_WEIGHT_Q8_0], 1.25, 1e-12);
    cr_expect_float_eq(ctx->calibration.int_dot_speedup[FFNRT_WEIGHT_Q6_K], (double)measured + 0.25, 1e-12);
    cr_expect_float_eq(ctx->calibration.int_dot_speedup[FFNRT_WEIGHT_Q4_1], 0.0, 0.0, "Q4_1 follows Q4_0's");
    test_context_done(ctx);
    remove_dir(dir);
}

/* The first call's cost, as the plan states it: nothing measured in an
 * empty cache; after a kernel built from source and the same kernel built
 * again from the disk cache (a new context), each counted once, kept for
 * the next context of the device. */
static const char *first_call(ffnrt_context *ctx, ffnrt_plan **plan)
{
    cr_assert_eq(ffnrt_context_plan(ctx, plan), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    const char *choice = ffnrt_plan_choice(*plan, "first call");
    cr_assert_not_null(choice, "the plan has no first-call item:\n%s", ffnrt_plan_text(*plan));
    return choice;
}

static void one_silu(ffnrt_context *ctx)
{
    float x[SILU_N];
    inputs(x);
    ffnrt_tensor *t = test_tensor_1d(ctx, SILU_N, x);
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_SILU);
    cr_assert_eq(ffnrt_activation_forward(ctx, &d, t, t), FFNRT_OK, "%s", ffnrt_context_last_error(ctx));
    ffnrt_tensor_destroy(t);
}

BACKEND_PARAMETERS(disk_cache, first_call_cost)
ParameterizedTest(ffnrt_backend *b, disk_cache, first_call_cost)
{
    char *dir = temp_dir();
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.cache_dir = dir;
    o.ignore_quirks = 1; /* the driver's binary kept (from the disk cache: counted as such) */
    ffnrt_plan *plan;
    ffnrt_context *ctx = test_context(*b, &o);
    cr_assert_str_eq(first_call(ctx, &plan), "not measured yet");
    ffnrt_plan_destroy(plan);
    one_silu(ctx);
    test_context_done(ctx);

    ctx = test_context(*b, &o);
    const char *c = first_call(ctx, &plan);
    double source_ms = -1;
    unsigned source_n = 0, cached_n = 9;
    cr_assert_eq(sscanf(c, "%lf ms a kernel from source (n = %u), %*f ms from the disk cache (n = %u)", &source_ms,
                        &source_n, &cached_n), 3, "%s", c);
    cr_assert(source_ms > 0 && source_n == 1 && cached_n == 0, "%s", c);
    ffnrt_plan_destroy(plan);
    one_silu(ctx);
    test_context_done(ctx);

    ctx = test_context(*b, &o);
    c = first_call(ctx, &plan);
    cr_assert_eq(sscanf(c, "%*f ms a kernel from source (n = %u), %*f ms from the disk cache (n = %u)", &source_n,
                        &cached_n), 2, "%s", c);
    cr_assert(source_n == 1 && cached_n == 1, "%s", c);
    ffnrt_plan_destroy(plan);
    test_context_done(ctx);
    remove_dir(dir);
}

/* Two processes build into one empty folder at the same moment: both
 * succeed with this process's results, bit for bit, and what is left is
 * valid, without temporaries, and used by a third. The writers are
 * processes of their own (tests/disk_cache_writer.c), as two apps sharing
 * the user's cache folder are: under Windows too, where replacing a file
 * another process holds open has rules of its own. */
static void start_writer(ffnrt_backend b, const char *dir, const char *go, const char *out, ffnrt_lab_child *child,
                         FILE **counters)
{
    char self[1024], writer[1100], backend[8];
    cr_assert_eq(ffnrt_lab_executable_path(self, sizeof self), 0, "%s", strerror(errno));
    char *slash = strrchr(self, '/'), *back = strrchr(self, '\\');
    if (back && (!slash || back > slash))
        slash = back;
    cr_assert_not_null(slash, "%s", self);
    slash[1] = '\0';
    snprintf(writer, sizeof writer, "%sdisk_cache_writer%s", self, ffnrt_lab_executable_suffix());
    snprintf(backend, sizeof backend, "%d", (int)b);
    char *argv[] = {writer, backend, (char *)dir, (char *)go, (char *)out,
                    test_validation_wanted() ? "--validation" : NULL, NULL};
    cr_assert_eq(ffnrt_lab_child_start(argv, NULL, child, counters), 0, "starting %s: %s", writer, strerror(errno));
}

BACKEND_PARAMETERS(disk_cache, two_processes_at_once)
ParameterizedTest(ffnrt_backend *b, disk_cache, two_processes_at_once)
{
    run_result ref;
    run_op(*b, NULL, 1, &ref);
    char *dir = temp_dir(), *scratch = temp_dir();
    char go[1100], out[2][1100];
    snprintf(go, sizeof go, "%s/go", scratch);
    ffnrt_lab_child kids[2];
    FILE *counters[2];
    for (int i = 0; i < 2; i++) {
        snprintf(out[i], sizeof out[i], "%s/y%d", scratch, i);
        start_writer(*b, dir, go, out[i], &kids[i], &counters[i]);
    }
    FILE *f = fopen(go, "wb"); /* both build now */
    cr_assert_not_null(f, "%s", go);
    fclose(f);
    for (int i = 0; i < 2; i++) {
        unsigned long long hits = 0, misses = 0, rejected = 0, writes = 0, write_failures = 0;
        int got = fscanf(counters[i], "%llu %llu %llu %llu %llu", &hits, &misses, &rejected, &writes, &write_failures);
        fclose(counters[i]);
        int code, signal_number;
        cr_assert_eq(ffnrt_lab_child_wait(kids[i], &code, &signal_number), 0, "%s", strerror(errno));
        cr_assert(code == 0, "writer %d failed: exit status %d, signal %d (its stderr above)", i, code, signal_number);
        cr_assert_eq(got, 5, "writer %d printed no counters", i);
        cr_assert(hits + misses >= 1, "writer %d looked nothing up", i);
        cr_assert_eq(rejected, 0, "writer %d read an entry the other left half-written (its note above)", i);
#ifdef _WIN32
        /* Replacing an entry the other process holds open may be refused
         * by Windows (the write is then lost, never the entry): said, not
         * failed. */
        if (write_failures)
            cr_log_info("writer %d: %llu writes refused (its note above)", i, write_failures);
#else
        cr_assert_eq(write_failures, 0, "writer %d (its note above)", i);
#endif
        size_t n;
        float *y = (float *)read_file(scratch, i ? "y1" : "y0", &n);
        cr_assert_eq(n, sizeof ref.y);
        cr_assert_eq(memcmp(y, ref.y, sizeof ref.y), 0, "writer %d's results differ from this process's", i);
        free(y);
    }
    file_list entries, temps;
    list_files(dir, &entries, &temps);
    cr_assert_geq(entries.count, 1);
    cr_assert_eq(temps.count, 0, "%s left behind", temps.names[0]);
    for (int i = 0; i < entries.count; i++)
        cr_assert(file_is_valid(dir, entries.names[i]), "%s", entries.names[i]);
    expect_warm(*b, dir, ref.y);
    remove_dir(dir);
    remove_dir(scratch);
}
