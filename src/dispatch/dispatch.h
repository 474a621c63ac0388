/* The dispatcher: which device, precision and kernels an op runs with, and
 * why. Every choice is made by one function that can also write it, with
 * its reason, into a plan (ffnrt_plan), so the plan never differs from what
 * runs. */
#ifndef FFNRT_DISPATCH_H
#define FFNRT_DISPATCH_H

#include "backend/backend.h"

#include <stddef.h>

/* ------------------------------------------------------------ device rank */

/* One device's place in the automatic choice. */
typedef struct ffnrt_device_rank {
    size_t index;       /* into the list ranked */
    long score;         /* higher is better; < 0: the same device as `twin` through another API, not chosen */
    long twin;          /* index of the same physical device via the other API, or -1 */
    char reason[512];
} ffnrt_device_rank;

/* Ranks devices: discrete, integrated, virtual GPU, then CPU; then
 * capability. One physical device seen through both APIs (same UUID, else
 * same PCI address, else same vendor, device id and name) keeps only its
 * better backend. Pure: tests call it on made-up lists. */
void ffnrt_rank_devices(const ffnrt_device_info *infos, size_t count, ffnrt_device_rank *ranks);

/* -------------------------------------------------------- limits, profiles */

/* A named set of limits modelled on a real GPU: tests run ffnrt on the CPU
 * drivers as if on that GPU. 0 leaves a limit as the device has it. */
typedef struct ffnrt_profile {
    const char *name;
    const char *models;       /* the GPU it stands for */
    ffnrt_device_type type;   /* ffnrt plans as for this device type */
    uint64_t max_shared_memory;
    uint32_t max_workgroup_size;
    uint32_t max_workgroup_count;
    uint64_t max_buffer_range;
    uint64_t buffer_offset_alignment;
    uint32_t subgroup_size;
    int fp16_arithmetic;      /* 0: the profile has none */
    int storage_16bit;
    const char *source;       /* where the figures come from */
} ffnrt_profile;

const ffnrt_profile *ffnrt_profile_find(const char *name);
size_t ffnrt_profile_count(void);
const ffnrt_profile *ffnrt_profile_at(size_t i);

/* Limits a caller lowers (options or FFNRT_LIMITS); 0 keeps. */
typedef struct ffnrt_limit_request {
    uint64_t max_buffer_range, max_shared_memory, max_workgroup_count, max_workgroup_size;
    int no_fp16_arithmetic, no_16bit_storage;
    uint64_t max_memory; /* a device-memory budget over the context's tensors (tests running out) */
} ffnrt_limit_request;

/* FFNRT_LIMITS="max_buffer_range=65536,max_shared_memory=16384,
 * max_workgroup_count=64,max_workgroup_size=32,fp16_arithmetic=0,
 * storage_16bit=0,max_memory=1048576": merged into req. */
ffnrt_status ffnrt_limits_parse(const char *spec, ffnrt_limit_request *req, ffnrt_error *err);

/* Lowers info/limits by the caller's request (a value above the device's
 * own is an error), then by the profile (which only lowers; its device type
 * and subgroup size replace the device's). notes gets one line per change. */
ffnrt_status ffnrt_limits_apply(ffnrt_device_info *info, ffnrt_limits *lim, const ffnrt_limit_request *req,
                                const ffnrt_profile *profile, char *notes, size_t cap, ffnrt_error *err);

/* -------------------------------------------------------------- precision */

/* Features a quirk can veto. */
enum { FFNRT_QUIRK_FP16_ARITHMETIC = 1, FFNRT_QUIRK_STORAGE_16BIT = 2, FFNRT_QUIRK_TWO_ITEM_TILES = 4 };

/* The quirk table's vetoes for a device, with their reasons (one per
 * line). FFNRT_QUIRKS: "ignore" drops the table's vetoes; "veto=fp16_arithmetic"
 * (or storage_16bit) adds one for the device at hand. */
unsigned ffnrt_quirks_for(const ffnrt_device_info *info, int ignore_table, const char *env, char *why, size_t cap);

/* What a precision policy gives on a device: the storage type apps should
 * use and whether compute AUTO runs fp16 arithmetic; reason says what was
 * asked, what was taken and why. */
typedef struct ffnrt_precision_choice {
    ffnrt_dtype storage;
    int fp16_arithmetic;
    char reason[320];
} ffnrt_precision_choice;

void ffnrt_precision_resolve(ffnrt_precision policy, const ffnrt_device_info *info, unsigned vetoes,
                             ffnrt_precision_choice *out);
ffnrt_status ffnrt_precision_parse(const char *name, ffnrt_precision *out);

/* ------------------------------------------------------------------- plan */

/* Appends a choice to a plan; plan may be NULL (nothing is recorded), so
 * the code that chooses runs the same with and without one. */
void ffnrt_plan_add(ffnrt_plan *plan, const char *what, const char *choice, const char *reason_fmt, ...)
    __attribute__((format(printf, 4, 5)));
ffnrt_plan *ffnrt_plan_new(void);
/* The context's items: device (and the ranking), limits, precision, quirks, caches. */
void ffnrt_plan_add_context(ffnrt_plan *plan, const ffnrt_context *ctx);

#endif
