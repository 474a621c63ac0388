/* Device limits as ffnrt plans with them: the device's own, lowered by the
 * caller (options, FFNRT_LIMITS) and by a named profile of a real GPU, so
 * that the paths a phone or an integrated GPU takes run, and are tested, on
 * the CPU drivers here. */
#include "dispatch/dispatch.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/profiles.inc"
#include "platform/platform.h"

size_t ffnrt_profile_count(void) { return sizeof profiles / sizeof profiles[0]; }

const ffnrt_profile *ffnrt_profile_at(size_t i) { return i < ffnrt_profile_count() ? &profiles[i] : NULL; }

const ffnrt_profile *ffnrt_profile_find(const char *name)
{
    for (size_t i = 0; i < ffnrt_profile_count(); i++)
        if (ffnrt_strcasecmp(profiles[i].name, name) == 0)
            return &profiles[i];
    return NULL;
}

/* ------------------------------------------------------------ FFNRT_LIMITS */

typedef struct limit_key {
    const char *name;
    size_t offset; /* into ffnrt_limit_request */
    int is_flag;   /* fp16_arithmetic=0 means "no_fp16_arithmetic = 1" */
} limit_key;

static const limit_key limit_keys[] = {
    {"max_buffer_range", offsetof(ffnrt_limit_request, max_buffer_range), 0},
    {"max_shared_memory", offsetof(ffnrt_limit_request, max_shared_memory), 0},
    {"max_workgroup_count", offsetof(ffnrt_limit_request, max_workgroup_count), 0},
    {"max_workgroup_size", offsetof(ffnrt_limit_request, max_workgroup_size), 0},
    {"fp16_arithmetic", offsetof(ffnrt_limit_request, no_fp16_arithmetic), 1},
    {"storage_16bit", offsetof(ffnrt_limit_request, no_16bit_storage), 1},
    {"max_memory", offsetof(ffnrt_limit_request, max_memory), 0},
    {"half_conversion", offsetof(ffnrt_limit_request, no_half_conversion), 1},
    {"byte_dot", offsetof(ffnrt_limit_request, no_byte_dot), 1},
    {"vector_codes", offsetof(ffnrt_limit_request, no_vector_codes), 1},
    {"int64_words", offsetof(ffnrt_limit_request, no_int64_words), 1},
    {"max_bindings", offsetof(ffnrt_limit_request, max_bindings), 0},
};

ffnrt_status ffnrt_limits_parse(const char *spec, ffnrt_limit_request *req, ffnrt_error *err)
{
    const char *s = spec;
    while (*s) {
        const char *eq = strchr(s, '=');
        if (!eq)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "FFNRT_LIMITS: expected key=value in \"%s\"", s);
        char *end;
        unsigned long long v = strtoull(eq + 1, &end, 0);
        size_t klen = (size_t)(eq - s);
        if (end == eq + 1 || (*end && *end != ','))
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "FFNRT_LIMITS: bad number in \"%s\"", s);
        const limit_key *key = NULL;
        for (size_t i = 0; i < sizeof limit_keys / sizeof limit_keys[0]; i++)
            if (strlen(limit_keys[i].name) == klen && strncmp(s, limit_keys[i].name, klen) == 0)
                key = &limit_keys[i];
        if (!key)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "FFNRT_LIMITS: unknown limit \"%.*s\"", (int)klen, s);
        if (key->is_flag) {
            if (v > 1)
                return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "FFNRT_LIMITS: %s takes 0 (off) or 1", key->name);
            *(int *)((char *)req + key->offset) = v == 0;
        } else {
            *(uint64_t *)((char *)req + key->offset) = v;
        }
        s = *end ? end + 1 : end;
    }
    return FFNRT_OK;
}

/* ----------------------------------------------------------------- apply */

static void note(char *notes, size_t cap, const char *fmt, const char *what, uint64_t from, uint64_t to,
                 const char *by)
{
    size_t len = strlen(notes);
    if (len < cap)
        snprintf(notes + len, cap - len, fmt, what, from, to, by);
}

/* The caller lowers: above the device's own is an error. */
static ffnrt_status lower_by_caller(uint64_t *limit, uint64_t want, const char *what, char *notes, size_t cap,
                                    ffnrt_error *err)
{
    if (want == 0 || want == *limit)
        return FFNRT_OK;
    if (want > *limit)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                          "%s=%" PRIu64 " is above the device's %" PRIu64 " (limits can only be lowered)", what, want,
                          *limit);
    note(notes, cap, "%s %" PRIu64 " -> %" PRIu64 " (%s); ", what, *limit, want, "asked");
    *limit = want;
    return FFNRT_OK;
}

/* A profile lowers, never raises: a device smaller than the GPU modelled
 * keeps its own limit. */
static void lower_by_profile(uint64_t *limit, uint64_t want, const char *what, char *notes, size_t cap,
                             const char *profile)
{
    if (want && want < *limit) {
        note(notes, cap, "%s %" PRIu64 " -> %" PRIu64 " (profile %s); ", what, *limit, want, profile);
        *limit = want;
    }
}

ffnrt_status ffnrt_limits_apply(ffnrt_device_info *info, ffnrt_limits *lim, const ffnrt_limit_request *req,
                                const ffnrt_profile *profile, char *notes, size_t cap, ffnrt_error *err)
{
    notes[0] = '\0';
    uint64_t range = lim->max_buffer_range, smem = info->shared_memory_size;
    uint64_t count = lim->max_workgroup_count[0] < lim->max_workgroup_count[1] ? lim->max_workgroup_count[0]
                                                                              : lim->max_workgroup_count[1];
    uint64_t wg = lim->max_workgroup_size, align = lim->buffer_offset_alignment, bindings = lim->max_bindings;
    ffnrt_status st = lower_by_caller(&range, req->max_buffer_range, "max_buffer_range", notes, cap, err);
    if (st == FFNRT_OK)
        st = lower_by_caller(&smem, req->max_shared_memory, "max_shared_memory", notes, cap, err);
    if (st == FFNRT_OK)
        st = lower_by_caller(&count, req->max_workgroup_count, "max_workgroup_count", notes, cap, err);
    if (st == FFNRT_OK)
        st = lower_by_caller(&wg, req->max_workgroup_size, "max_workgroup_size", notes, cap, err);
    if (st == FFNRT_OK)
        st = lower_by_caller(&bindings, req->max_bindings, "max_bindings", notes, cap, err);
    if (st != FFNRT_OK)
        return st;
    if (req->no_fp16_arithmetic && info->fp16_arithmetic) {
        info->fp16_arithmetic = 0;
        strncat(notes, "fp16 arithmetic off (asked); ", cap - strlen(notes) - 1);
    }
    if (req->no_16bit_storage && info->storage_16bit) {
        info->storage_16bit = 0;
        strncat(notes, "16-bit storage off (asked); ", cap - strlen(notes) - 1);
    }
    if (req->no_byte_dot && info->int_dot_packed) {
        info->int_dot_packed = 0;
        strncat(notes, "packed integer dot products off (asked: byte_dot=0); ", cap - strlen(notes) - 1);
    }
    if (req->no_vector_codes)
        strncat(notes, "block formats' codes read word by word (asked: vector_codes=0); ", cap - strlen(notes) - 1);
    if (req->no_int64_words && lim->int64_words) {
        lim->int64_words = 0;
        strncat(notes, "no 64-bit words in kernels (asked: int64_words=0); ", cap - strlen(notes) - 1);
    }
    if (profile) {
        lower_by_profile(&range, profile->max_buffer_range, "max_buffer_range", notes, cap, profile->name);
        lower_by_profile(&smem, profile->max_shared_memory, "max_shared_memory", notes, cap, profile->name);
        lower_by_profile(&count, profile->max_workgroup_count, "max_workgroup_count", notes, cap, profile->name);
        lower_by_profile(&wg, profile->max_workgroup_size, "max_workgroup_size", notes, cap, profile->name);
        /* Alignment only grows: a coarser one is a lower limit. */
        if (profile->buffer_offset_alignment > align) {
            note(notes, cap, "%s %" PRIu64 " -> %" PRIu64 " (profile %s); ", "buffer_offset_alignment", align,
                 profile->buffer_offset_alignment, profile->name);
            align = profile->buffer_offset_alignment;
        }
        if (!profile->fp16_arithmetic && info->fp16_arithmetic) {
            info->fp16_arithmetic = 0;
            strncat(notes, "fp16 arithmetic off (profile); ", cap - strlen(notes) - 1);
        }
        if (!profile->storage_16bit && info->storage_16bit) {
            info->storage_16bit = 0;
            strncat(notes, "16-bit storage off (profile); ", cap - strlen(notes) - 1);
        }
        /* Not modelled: which of these GPUs' drivers expose packed dot
         * products varies by driver release, so a profile plans without. */
        if (info->int_dot_packed) {
            info->int_dot_packed = 0;
            strncat(notes, "packed integer dot products off (profile); ", cap - strlen(notes) - 1);
        }
        /* Planned as the GPU modelled: its kernels (shared-memory tiles,
         * lane-reduced matrix-vector) and its subgroup width. */
        info->type = profile->type;
        if (profile->subgroup_size)
            info->subgroup_size = profile->subgroup_size;
    }
    if (range < align)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                          "max_buffer_range %" PRIu64 " is below the offset alignment %" PRIu64, range, align);
    lim->max_buffer_range = range;
    lim->max_workgroup_count[0] = lim->max_workgroup_count[1] = (uint32_t)count;
    lim->max_workgroup_size = (uint32_t)wg;
    lim->buffer_offset_alignment = align;
    lim->max_bindings = (uint32_t)bindings;
    info->shared_memory_size = smem;
    /* The info users see reports the limits ffnrt plans with. */
    info->max_buffer_range = range;
    info->max_workgroup_size = (uint32_t)wg;
    info->max_workgroup_count[0] = info->max_workgroup_count[1] = (uint32_t)count;
    return FFNRT_OK;
}
