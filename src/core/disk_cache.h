/* Persistent on-disk cache of compiled kernels and measured results.
 *
 * One file per entry, named after a 64-bit hash of its full key and kind.
 * The file holds a fixed header, the full key string and the payload:
 *
 *   offset size
 *        0    8  magic "FFNRTKC\0"
 *        8    4  format version (FFNRT_DISK_CACHE_FORMAT)
 *       12    4  kind (ffnrt_cache_kind)
 *       16    4  ffnrt version (major << 16 | minor << 8 | patch)
 *       20    4  key length in bytes
 *       24    8  FNV-1a 64 of the key (a quick test for a foreign entry)
 *       32    8  payload length in bytes
 *       40   32  SHA-256 of the payload
 *       72    8  FNV-1a 64 of bytes 0..71 and the key (the header's own check)
 *       80       key, then payload; the file ends exactly there
 *
 * All integers little-endian. The reader trusts nothing before every field
 * checks out, and a file that fails a check is reported and ignored; the
 * caller rebuilds and overwrites it. The payload (program binaries the
 * process will run among them) is checked with a cryptographic digest, so
 * no payload but the one written passes for it (FNV-1a, which the header
 * uses against accidents, is easy to forge). Writes go to a temporary
 * file in the same directory and are renamed over the final name, so a
 * concurrent reader sees the old file or the new one, never a part.
 *
 * This file and disk_cache.c depend on libc only (with sha256.c; the fuzz
 * target and fuzz/make_corpus.c link them alone). */
#ifndef FFNRT_DISK_CACHE_H
#define FFNRT_DISK_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define FFNRT_DISK_CACHE_FORMAT 2u
#define FFNRT_DISK_CACHE_HEADER_SIZE 80u
#define FFNRT_DISK_CACHE_HEADER_CHECK_AT 72u /* where the header's own check lies */
/* Bounds on what the reader accepts (a larger file is refused unread):
 * compiled code up to MAX_PAYLOAD, measured results (calibration, tuning:
 * text parsed at every context creation) up to MAX_RESULTS. */
#define FFNRT_DISK_CACHE_MAX_KEY (1u << 20)
#define FFNRT_DISK_CACHE_MAX_PAYLOAD ((uint64_t)1 << 28)
#define FFNRT_DISK_CACHE_MAX_RESULTS ((uint64_t)1 << 20)

#include "base/cache_kind.h"

const char *ffnrt_cache_kind_name(ffnrt_cache_kind kind);
/* The largest payload an entry of this kind may hold. */
uint64_t ffnrt_disk_cache_max_payload(ffnrt_cache_kind kind);

/* FNV-1a, 64 bits, continuing from h (start with FFNRT_FNV64_INIT). */
#define FFNRT_FNV64_INIT 0xcbf29ce484222325ull
uint64_t ffnrt_fnv1a64(const void *data, size_t n, uint64_t h);

/* The ffnrt version the files carry: (major << 16) | (minor << 8) | patch. */
uint32_t ffnrt_disk_cache_version(void);

/* Validates a whole file's bytes against the key and kind expected. On
 * success returns 1 with *payload pointing into bytes. Otherwise returns 0
 * and *why says what was wrong (a static string). Pure: no I/O, no
 * allocation; any input is safe. */
int ffnrt_disk_cache_parse(const void *bytes, size_t n, const char *expected_key, ffnrt_cache_kind kind,
                           const void **payload, size_t *payload_len, const char **why);

/* Serialises an entry with an explicit ffnrt version (tests forge other
 * versions with it). Returns a malloc'd buffer of *n bytes, NULL when out
 * of memory or past the bounds above. */
void *ffnrt_disk_cache_format_version(const char *key, ffnrt_cache_kind kind, const void *payload,
                                      size_t payload_len, uint32_t version, size_t *n);
void *ffnrt_disk_cache_format(const char *key, ffnrt_cache_kind kind, const void *payload, size_t payload_len,
                              size_t *n);

/* --------------------------------------------------------- the directory */

#define FFNRT_DISK_CACHE_PATH 4096
#define FFNRT_DISK_CACHE_NOTE 256

typedef struct ffnrt_disk_cache {
    int enabled;
    char dir[FFNRT_DISK_CACHE_PATH];
    char status[FFNRT_DISK_CACHE_NOTE];    /* "on" or why it is off */
    char last_note[FFNRT_DISK_CACHE_NOTE]; /* the last rejection or write failure */
    uint64_t hits, misses, rejected, writes, write_failures;
} ffnrt_disk_cache;

/* Chooses the directory: option_dir if non-NULL and non-empty, else
 * $FFNRT_CACHE_DIR, else the user's cache folder (platform.h's
 * ffnrt_user_cache_dir: $XDG_CACHE_HOME/ffnrt, else $HOME/.cache/ffnrt on
 * Linux; ~/Library/Caches/ffnrt on macOS; %LOCALAPPDATA%\ffnrt on Windows).
 * Off when disable is set or FFNRT_CACHE is "0", "off", "false" or "no".
 * Creates the directory (and parents); when that fails the cache is off
 * and status says why. Never fails otherwise. */
void ffnrt_disk_cache_open(ffnrt_disk_cache *c, const char *option_dir, int disable);

/* The full path of an entry's file (for tests and messages). */
void ffnrt_disk_cache_path(const ffnrt_disk_cache *c, const char *key, ffnrt_cache_kind kind, char *out,
                           size_t cap);

/* Reads the entry for key and kind: returns a malloc'd copy of its payload
 * (*len bytes, at least one byte allocated) or NULL on a miss, an invalid
 * file (counted in rejected, with last_note saying why) or when the cache
 * is off. */
void *ffnrt_disk_cache_get(ffnrt_disk_cache *c, const char *key, ffnrt_cache_kind kind, size_t *len);

/* Writes the entry atomically (temporary file, then rename). Returns 1 on
 * success; failures are counted and noted, never fatal. */
int ffnrt_disk_cache_put(ffnrt_disk_cache *c, const char *key, ffnrt_cache_kind kind, const void *payload,
                         size_t len);

/* Records that a payload that parsed was still unusable (a driver refused
 * it): moves the hit to rejected so the counters tell the truth. */
void ffnrt_disk_cache_note_unusable(ffnrt_disk_cache *c, const char *why);

#endif
