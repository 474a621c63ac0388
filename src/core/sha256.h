/* SHA-256 (FIPS 180-4), for the disk cache's payload digests. libc only. */
#ifndef FFNRT_SHA256_H
#define FFNRT_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define FFNRT_SHA256_BYTES 32

typedef struct ffnrt_sha256_ctx {
    uint32_t state[8];
    uint64_t length;       /* bytes hashed so far */
    unsigned char block[64];
    size_t used;           /* bytes waiting in block */
} ffnrt_sha256_ctx;

void ffnrt_sha256_init(ffnrt_sha256_ctx *s);
void ffnrt_sha256_update(ffnrt_sha256_ctx *s, const void *data, size_t n);
void ffnrt_sha256_final(ffnrt_sha256_ctx *s, unsigned char out[FFNRT_SHA256_BYTES]);
/* The digest of one buffer. */
void ffnrt_sha256(const void *data, size_t n, unsigned char out[FFNRT_SHA256_BYTES]);

#endif
