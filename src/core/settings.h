/* Settings: every knob a user can turn, as typed values with where each
 * came from. The context carries them; dispatch/settings.c owns the knob
 * table, parses and checks every value once (when the context is created,
 * or when ffnrt_context_force sets it) and resolves them with one
 * precedence:
 *
 *   descriptor field > context (ffnrt_context_force, or an option of
 *   ffnrt_context_options) > environment > tuned result > default
 *
 * (no knob is both an option and forced). The environment is read once,
 * when the context is created. */
#ifndef FFNRT_SETTINGS_H
#define FFNRT_SETTINGS_H

#include "ffnrt.h"

typedef enum ffnrt_setting_source {
    FFNRT_FROM_DEFAULT = 0, /* not set: the dispatcher's own choice */
    FFNRT_FROM_TUNED,       /* a stored tuning result */
    FFNRT_FROM_ENV,         /* the environment variable */
    FFNRT_FROM_OPTION,      /* a field of ffnrt_context_options */
    FFNRT_FROM_FORCE,       /* ffnrt_context_force */
    FFNRT_FROM_DESC         /* a field of the op's descriptor */
} ffnrt_setting_source;

/* The knobs (dispatch/settings.c has each one's name, variable and type). */
typedef enum ffnrt_knob {
    FFNRT_KNOB_DEVICE,      /* v[0] backend, v[1] index + 1 (0: any), text: a name pattern or "" */
    FFNRT_KNOB_VALIDATION,  /* v[0] 0/1 */
    FFNRT_KNOB_PROFILE,     /* text: a profile name ("" or "none": none) */
    FFNRT_KNOB_PRECISION,   /* v[0] ffnrt_precision */
    FFNRT_KNOB_QUIRKS,      /* v[0] 1: ignore the table; v[1] vetoes asked (FFNRT_QUIRK_*) */
    FFNRT_KNOB_LIMITS,      /* v[FFNRT_LIMIT_*]: 0 keeps the device's */
    FFNRT_KNOB_AUTOTUNE,    /* v[0] 0/1 */
    FFNRT_KNOB_CACHE,       /* v[0] 1: the disk cache is off */
    FFNRT_KNOB_CACHE_DIR,   /* text: its directory */
    FFNRT_KNOB_STAGING,     /* v[0] 1: Vulkan transfers through a staging buffer */
    FFNRT_KNOB_TIMEOUT,     /* v[0] the device-wait timeout in ms (default FFNRT_DEFAULT_DEVICE_TIMEOUT_MS) */
    FFNRT_KNOB_FFN_PATH,    /* v[0] ffnrt_ffn_path (FUSED or UNFUSED) */
    FFNRT_KNOB_FFN_KERNEL,  /* v[0] 0 blocked, 1 matvec, 2 tiled */
    FFNRT_KNOB_FFN_TILES,   /* v[0..4] bm, bn, bk, tm, tn */
    FFNRT_KNOB_FFN_MATVEC,  /* v[0..1] rows, lanes */
    FFNRT_KNOB_FFN_BLOCK,   /* v[0..3] tm, tn, wg_n, wg_m: a start, fitted to the device */
    FFNRT_KNOB_FFN_TUNING,  /* v[0] 1: stored tuning results are not used */
    FFNRT_KNOB_FFN_INT_DOT,  /* v[0] 1: block-format products quantize x to 8 bits (integer dot products); 0: never */
    FFNRT_KNOB_CHECK_FINITE, /* v[0] 1: a call whose finite inputs give a non-finite output fails */
    FFNRT_KNOB_FFN_BACKWARD, /* v[0] ffnrt_ffn_path: the training backward's activation gradient (FUSED or UNFUSED) */
    FFNRT_KNOB_COUNT
} ffnrt_knob;

#define FFNRT_DEFAULT_DEVICE_TIMEOUT_MS 120000u

/* The limits a caller may lower, in FFNRT_KNOB_LIMITS's v[]. */
enum {
    FFNRT_LIMIT_BUFFER_RANGE, FFNRT_LIMIT_SHARED_MEMORY, FFNRT_LIMIT_WORKGROUP_COUNT, FFNRT_LIMIT_WORKGROUP_SIZE,
    FFNRT_LIMIT_NO_FP16_ARITHMETIC, FFNRT_LIMIT_NO_16BIT_STORAGE, FFNRT_LIMIT_MAX_MEMORY, FFNRT_LIMIT_NO_HALF_CONVERSION,
    FFNRT_LIMIT_NO_BYTE_DOT, FFNRT_LIMIT_NO_VECTOR_CODES, FFNRT_LIMIT_NO_INT64_WORDS, FFNRT_LIMIT_MAX_BINDINGS,
    FFNRT_LIMIT_COUNT
};

/* One knob's value. */
typedef struct ffnrt_setting {
    ffnrt_setting_source source; /* FFNRT_FROM_DEFAULT: not set in this layer */
    uint64_t v[FFNRT_LIMIT_COUNT];
    char text[256];              /* the value as given (messages, plans, names) */
    char from[48];               /* who set it: "FFNRT_FFN_PATH", "desc.path", ... */
} ffnrt_setting;

/* The context's layers: the environment as read at creation, and the
 * context's own (options at creation, ffnrt_context_force later). */
typedef struct ffnrt_settings {
    ffnrt_setting env[FFNRT_KNOB_COUNT];
    ffnrt_setting ctx[FFNRT_KNOB_COUNT];
} ffnrt_settings;

#endif
