/* The settings resolver: one table of knobs, each with its name, its
 * environment variable, whether ffnrt_context_force sets it, and its
 * parser. Every value is parsed and checked once, where it is given (the
 * environment and the options when the context is created, a forced value
 * when it is forced); a malformed one is an error that names it. Reading a
 * knob resolves it with the one precedence of core/settings.h. */
#include "dispatch/dispatch.h"
#include "platform/platform.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef ffnrt_status (*knob_parser)(const char *text, ffnrt_setting *out, char *why, size_t cap);

typedef struct knob_row {
    const char *name;    /* the plan's name, and ffnrt_context_force's for a forceable knob */
    const char *env;     /* its environment variable */
    int forceable;
    knob_parser parse;
} knob_row;

static ffnrt_status bad(char *why, size_t cap, const char *fmt, ...) FFNRT_PRINTF_FORMAT(3, 4);
static ffnrt_status bad(char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return FFNRT_ERROR_INVALID_ARGUMENT;
}

/* ----------------------------------------------------------------- parsers */

static int is_word(const char *text, const char *const *words)
{
    for (int i = 0; words[i]; i++)
        if (ffnrt_strcasecmp(text, words[i]) == 0)
            return 1;
    return 0;
}

static ffnrt_status parse_bool(const char *text, ffnrt_setting *out, char *why, size_t cap)
{
    static const char *const yes[] = {"1", "on", "true", "yes", NULL}, *const no[] = {"0", "off", "false", "no", NULL};
    if (is_word(text, yes))
        out->v[0] = 1;
    else if (is_word(text, no))
        out->v[0] = 0;
    else
        return bad(why, cap, "expected 1 or 0 (on/off, true/false, yes/no)");
    return FFNRT_OK;
}

/* "0", "off", ...: the cache is off (v[0] = 1); "1", "on", ...: on. */
static ffnrt_status parse_cache(const char *text, ffnrt_setting *out, char *why, size_t cap)
{
    ffnrt_status st = parse_bool(text, out, why, cap);
    out->v[0] = !out->v[0];
    return st;
}

/* A whole decimal number in [lo, hi]; *end after it. */
static int parse_number(const char *s, const char **end, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return 0;
    errno = 0;
    char *e;
    unsigned long long v = strtoull(s, &e, 10);
    if (errno || v < lo || v > hi)
        return 0;
    *end = e;
    *out = v;
    return 1;
}

/* Exactly n comma-separated numbers in [1, 2^16]. */
static ffnrt_status parse_sizes(const char *text, ffnrt_setting *out, int n, const char *names, char *why,
                                size_t cap)
{
    const char *s = text;
    for (int i = 0; i < n; i++) {
        if (!parse_number(s, &s, 1, 65536, &out->v[i]) || *s != (i + 1 < n ? ',' : '\0'))
            return bad(why, cap, "expected %s: %d whole numbers from 1 to 65536, comma-separated", names, n);
        s += i + 1 < n;
    }
    return FFNRT_OK;
}

static ffnrt_status parse_tiles(const char *text, ffnrt_setting *out, char *why, size_t cap)
{
    ffnrt_status st = parse_sizes(text, out, 5, "bm,bn,bk,tm,tn", why, cap);
    if (st == FFNRT_OK && (out->v[0] % out->v[3] || out->v[1] % out->v[4]))
        return bad(why, cap, "tm must divide bm and tn divide bn");
    return st;
}

static ffnrt_status parse_matvec(const char *text, ffnrt_setting *out, char *why, size_t cap)
{
    ffnrt_status st = parse_sizes(text, out, 2, "rows,lanes", why, cap);
    if (st == FFNRT_OK && (out->v[1] & (out->v[1] - 1)))
        return bad(why, cap, "lanes must be a power of two");
    return st;
}

static ffnrt_status parse_block(const char *text, ffnrt_setting *out, char *why, size_t cap)
{
    ffnrt_status st = parse_sizes(text, out, 4, "tm,tn,wg_n,wg_m", why, cap);
    if (st == FFNRT_OK && (out->v[0] > 16 || out->v[1] > 16))
        return bad(why, cap, "tm and tn are at most 16 (registers a work-item holds)");
    return st;
}

static ffnrt_status parse_path(const char *text, ffnrt_setting *out, char *why, size_t cap)
{
    if (strcmp(text, "fused") == 0)
        out->v[0] = FFNRT_FFN_PATH_FUSED;
    else if (strcmp(text, "unfused") == 0)
        out->v[0] = FFNRT_FFN_PATH_UNFUSED;
    else
        return bad(why, cap, "expected fused or unfused");
    return FFNRT_OK;
}

static ffnrt_status parse_kernel(const char *text, ffnrt_setting *out, char *why, size_t cap)
{
    for (uint64_t k = 0; k < FFNRT_PRODUCT_KERNEL_COUNT; k++)
        if (strcmp(text, ffnrt_product_kernel_name((ffnrt_product_kernel)k)) == 0) {
            out->v[0] = k;
            return FFNRT_OK;
        }
    return bad(why, cap, "expected blocked, matvec or tiled");
}

static ffnrt_status parse_tuning(const char *text, ffnrt_setting *out, char *why, size_t cap)
{
    if (strcmp(text, "off") == 0)
        out->v[0] = 1;
    else if (strcmp(text, "on") == 0)
        out->v[0] = 0;
    else
        return bad(why, cap, "expected off (stored tuning results are not used) or on");
    return FFNRT_OK;
}

static ffnrt_status parse_precision(const char *text, ffnrt_setting *out, char *why, size_t cap)
{
    ffnrt_precision p;
    if (ffnrt_precision_parse(text, &p) != FFNRT_OK)
        return bad(why, cap, "expected exact, balanced or fast");
    out->v[0] = (uint64_t)p;
    return FFNRT_OK;
}

static ffnrt_status parse_profile(const char *text, ffnrt_setting *out, char *why, size_t cap)
{
    (void)out;
    if (ffnrt_strcasecmp(text, "none") != 0 && !ffnrt_profile_find(text))
        return bad(why, cap, "no limit profile of that name (ffnrt devices --profiles lists them)");
    return FFNRT_OK;
}

/* "ignore", "veto=fp16_arithmetic", "veto=storage_16bit", comma-separated. */
static ffnrt_status parse_quirks(const char *text, ffnrt_setting *out, char *why, size_t cap)
{
    const char *s = text;
    while (*s) {
        size_t len = strcspn(s, ",");
        if (len == 6 && ffnrt_strncasecmp(s, "ignore", 6) == 0)
            out->v[0] = 1;
        else if (len == 20 && ffnrt_strncasecmp(s, "veto=fp16_arithmetic", 20) == 0)
            out->v[1] |= FFNRT_QUIRK_FP16_ARITHMETIC;
        else if (len == 18 && ffnrt_strncasecmp(s, "veto=storage_16bit", 18) == 0)
            out->v[1] |= FFNRT_QUIRK_STORAGE_16BIT;
        else
            return bad(why, cap, "\"%.*s\": expected ignore, veto=fp16_arithmetic or veto=storage_16bit", (int)len, s);
        s += len + (s[len] == ',');
    }
    return FFNRT_OK;
}

/* "opencl", "vulkan:1", "vulkan:llvmpipe", or a name pattern ("pocl"). */
static ffnrt_status parse_device(const char *text, ffnrt_setting *out, char *why, size_t cap)
{
    const char *colon = strchr(text, ':');
    size_t head = colon ? (size_t)(colon - text) : strlen(text);
    const ffnrt_backend_ops *named = ffnrt_backend_named(text, head);
    const char *rest = named ? (colon ? colon + 1 : "") : text;
    out->v[0] = named ? (uint64_t)named->kind : FFNRT_BACKEND_ANY;
    out->v[1] = 0;
    out->text[0] = '\0';
    if (named && colon && !*rest)
        return bad(why, cap, "nothing after \"%.*s:\" (an index or a name)", (int)head, text);
    int digits = *rest == '-' ? 1 : 0;
    while (rest[digits] >= '0' && rest[digits] <= '9')
        digits++;
    if (*rest && !rest[digits] && digits > (*rest == '-')) { /* an index, never negative */
        const char *end;
        uint64_t index;
        if (!parse_number(rest, &end, 0, 1u << 20, &index))
            return bad(why, cap, "\"%s\" is not a device index (0, 1, ...)", rest);
        out->v[1] = index + 1;
    } else if (*rest) {
        snprintf(out->text, sizeof out->text, "%s", rest);
    }
    return FFNRT_OK;
}

static ffnrt_status parse_limits(const char *text, ffnrt_setting *out, char *why, size_t cap)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    ffnrt_limit_request req = {0};
    if (ffnrt_limits_parse(text, &req, &err) != FFNRT_OK)
        return bad(why, cap, "%s", err.message);
    uint64_t v[FFNRT_LIMIT_COUNT] = {req.max_buffer_range,   req.max_shared_memory, req.max_workgroup_count,
                                     req.max_workgroup_size, (uint64_t)req.no_fp16_arithmetic,
                                     (uint64_t)req.no_16bit_storage, req.max_memory,
                                     (uint64_t)req.no_half_conversion, (uint64_t)req.no_byte_dot,
                                     (uint64_t)req.no_vector_codes, (uint64_t)req.no_int64_words,
                                     req.max_bindings};
    memcpy(out->v, v, sizeof v);
    return FFNRT_OK;
}

/* A whole count of milliseconds in [1, 2^32). */
static ffnrt_status parse_timeout(const char *text, ffnrt_setting *out, char *why, size_t cap)
{
    const char *end;
    if (!parse_number(text, &end, 1, UINT32_MAX, &out->v[0]) || *end)
        return bad(why, cap, "not a count of milliseconds in [1, %u]", UINT32_MAX);
    return FFNRT_OK;
}

static ffnrt_status parse_text(const char *text, ffnrt_setting *out, char *why, size_t cap)
{
    (void)text, (void)out, (void)why, (void)cap;
    return FFNRT_OK;
}

/* ------------------------------------------------------------------- table */

static const knob_row knobs[FFNRT_KNOB_COUNT] = {
    [FFNRT_KNOB_DEVICE] = {"device", "FFNRT_DEVICE", 0, parse_device},
    [FFNRT_KNOB_VALIDATION] = {"validation", "FFNRT_VALIDATION", 0, parse_bool},
    [FFNRT_KNOB_PROFILE] = {"profile", "FFNRT_PROFILE", 0, parse_profile},
    [FFNRT_KNOB_PRECISION] = {"precision", "FFNRT_PRECISION", 0, parse_precision},
    [FFNRT_KNOB_QUIRKS] = {"quirks", "FFNRT_QUIRKS", 0, parse_quirks},
    [FFNRT_KNOB_LIMITS] = {"limits", "FFNRT_LIMITS", 0, parse_limits},
    [FFNRT_KNOB_AUTOTUNE] = {"autotune", "FFNRT_AUTOTUNE", 0, parse_bool},
    [FFNRT_KNOB_CACHE] = {"cache", "FFNRT_CACHE", 0, parse_cache},
    [FFNRT_KNOB_CACHE_DIR] = {"cache.dir", "FFNRT_CACHE_DIR", 0, parse_text},
    [FFNRT_KNOB_STAGING] = {"vulkan.staging", "FFNRT_VULKAN_STAGING", 0, parse_bool},
    [FFNRT_KNOB_TIMEOUT] = {"device.timeout_ms", "FFNRT_DEVICE_TIMEOUT_MS", 0, parse_timeout},
    [FFNRT_KNOB_FFN_PATH] = {"ffn.path", "FFNRT_FFN_PATH", 1, parse_path},
    [FFNRT_KNOB_FFN_KERNEL] = {"ffn.kernel", "FFNRT_GEMM_KERNEL", 1, parse_kernel},
    [FFNRT_KNOB_FFN_TILES] = {"ffn.tiles", "FFNRT_GEMM_TILES", 1, parse_tiles},
    [FFNRT_KNOB_FFN_MATVEC] = {"ffn.matvec", "FFNRT_GEMV_SHAPE", 1, parse_matvec},
    [FFNRT_KNOB_FFN_BLOCK] = {"ffn.block", "FFNRT_GEMM_BLOCK", 1, parse_block},
    [FFNRT_KNOB_FFN_TUNING] = {"ffn.tuning", "FFNRT_TUNING", 1, parse_tuning},
    [FFNRT_KNOB_FFN_INT_DOT] = {"ffn.int_dot", "FFNRT_FFN_INT_DOT", 1, parse_bool},
    [FFNRT_KNOB_CHECK_FINITE] = {"check.finite", "FFNRT_CHECK_FINITE", 1, parse_bool},
    [FFNRT_KNOB_FFN_BACKWARD] = {"ffn.backward", "FFNRT_FFN_BACKWARD", 1, parse_path},
};

const char *ffnrt_knob_name(ffnrt_knob k) { return (unsigned)k < FFNRT_KNOB_COUNT ? knobs[k].name : "?"; }
const char *ffnrt_knob_env(ffnrt_knob k) { return (unsigned)k < FFNRT_KNOB_COUNT ? knobs[k].env : "?"; }
int ffnrt_knob_forceable(ffnrt_knob k) { return (unsigned)k < FFNRT_KNOB_COUNT && knobs[k].forceable; }

/* Parses text for knob k into out, from `from`; an error names both. */
static ffnrt_status set_from(ffnrt_setting *out, ffnrt_knob k, const char *text, ffnrt_setting_source source,
                             const char *from, ffnrt_error *err)
{
    ffnrt_setting s;
    memset(&s, 0, sizeof s);
    char why[200] = "";
    if (strlen(text) >= sizeof s.text)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: a value of %zu characters is too long", from,
                          strlen(text));
    snprintf(s.text, sizeof s.text, "%s", text);
    if (knobs[k].parse(text, &s, why, sizeof why) != FFNRT_OK)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s=%s: %s", from, text, why);
    if (k != FFNRT_KNOB_DEVICE) /* the device keeps only its name pattern */
        snprintf(s.text, sizeof s.text, "%s", text);
    s.source = source;
    snprintf(s.from, sizeof s.from, "%s", from);
    *out = s;
    return FFNRT_OK;
}

static void set_option(ffnrt_setting *out, const char *from, const char *text, uint64_t v0, uint64_t v1)
{
    memset(out, 0, sizeof *out);
    out->source = FFNRT_FROM_OPTION;
    out->v[0] = v0;
    out->v[1] = v1;
    snprintf(out->text, sizeof out->text, "%s", text);
    snprintf(out->from, sizeof out->from, "options.%s", from);
}

ffnrt_settings *ffnrt_settings_new(const ffnrt_context_options *o, const char *fn, ffnrt_error *err)
{
    ffnrt_context_options defaults = FFNRT_CONTEXT_OPTIONS_INIT;
    ffnrt_settings *s = malloc(sizeof *s);
    if (!s) {
        ffnrt_fail(err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        return NULL;
    }
    if (ffnrt_settings_init(s, o ? o : &defaults, err) != FFNRT_OK) {
        free(s);
        return NULL;
    }
    return s;
}

ffnrt_status ffnrt_settings_init(ffnrt_settings *s, const ffnrt_context_options *o, ffnrt_error *err)
{
    memset(s, 0, sizeof *s);
    /* The environment, read once, as UTF-8 (a cache folder's name on
     * Windows). */
    for (int k = 0; k < FFNRT_KNOB_COUNT; k++) {
        char v[sizeof s->env[k].text];
        int n = ffnrt_env_get(knobs[k].env, v, sizeof v);
        if (n >= (int)sizeof v)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: a value of %d bytes is too long", knobs[k].env,
                              n);
        if (n > 0 && set_from(&s->env[k], (ffnrt_knob)k, v, FFNRT_FROM_ENV, knobs[k].env, err) != FFNRT_OK)
            return err->status;
    }
    /* The options: a field at its FFNRT_CONTEXT_OPTIONS_INIT value is not set. */
    ffnrt_setting *c = s->ctx;
    if (o->backend != FFNRT_BACKEND_ANY && !ffnrt_backend_find(o->backend))
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "options.backend: %d is not a backend", (int)o->backend);
    if (o->device_index < -1)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "options.device_index: %d (a device index is 0 or "
                          "more, or -1 for any)", o->device_index);
    if (o->backend != FFNRT_BACKEND_ANY || o->device_index >= 0 || o->device_name) {
        if (o->device_name && strlen(o->device_name) >= sizeof c->text)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "options.device_name is too long");
        set_option(&c[FFNRT_KNOB_DEVICE], "backend/device_index/device_name", o->device_name ? o->device_name : "",
                   (uint64_t)o->backend, (uint64_t)(o->device_index + 1));
    }
    if (o->device && *o->device) { /* the same choice as one text, read as FFNRT_DEVICE is */
        if (c[FFNRT_KNOB_DEVICE].source != FFNRT_FROM_DEFAULT)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "options.device=%.64s: the device is chosen either "
                              "by options.device or by options.backend/device_index/device_name, not both", o->device);
        if (set_from(&c[FFNRT_KNOB_DEVICE], FFNRT_KNOB_DEVICE, o->device, FFNRT_FROM_OPTION, "options.device", err) !=
            FFNRT_OK)
            return err->status;
    }
    if (o->validation)
        set_option(&c[FFNRT_KNOB_VALIDATION], "validation", "1", 1, 0);
    if (o->profile) {
        char why[200];
        ffnrt_setting tmp;
        if (strlen(o->profile) >= sizeof tmp.text || parse_profile(o->profile, &tmp, why, sizeof why) != FFNRT_OK)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                              "options.profile: no limit profile named \"%.64s\" (ffnrt devices --profiles lists them)",
                              o->profile);
        set_option(&c[FFNRT_KNOB_PROFILE], "profile", o->profile, 0, 0);
    }
    if (o->precision != FFNRT_PRECISION_DEFAULT) {
        if ((unsigned)o->precision > FFNRT_PRECISION_FAST)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "options.precision: %d is not a precision policy",
                              (int)o->precision);
        static const char *const names[] = {"exact", "balanced", "fast"};
        set_option(&c[FFNRT_KNOB_PRECISION], "precision", names[o->precision], (uint64_t)o->precision, 0);
    }
    if (o->ignore_quirks)
        set_option(&c[FFNRT_KNOB_QUIRKS], "ignore_quirks", "ignore", 1, 0);
    uint64_t limits[FFNRT_LIMIT_COUNT] = {o->max_buffer_range,   o->max_shared_memory,
                                          o->max_workgroup_count, o->max_workgroup_size,
                                          (uint64_t)(o->disable_fp16_arithmetic != 0),
                                          (uint64_t)(o->disable_16bit_storage != 0), 0,
                                          (uint64_t)(o->disable_half_conversion != 0), 0, 0, 0, 0};
    for (int i = 0; i < FFNRT_LIMIT_COUNT; i++)
        if (limits[i]) {
            set_option(&c[FFNRT_KNOB_LIMITS], "max_* / disable_*", "", 0, 0);
            memcpy(c[FFNRT_KNOB_LIMITS].v, limits, sizeof limits);
            break;
        }
    if (o->autotune)
        set_option(&c[FFNRT_KNOB_AUTOTUNE], "autotune", "1", 1, 0);
    if (o->disable_disk_cache)
        set_option(&c[FFNRT_KNOB_CACHE], "disable_disk_cache", "1", 1, 0);
    if (o->device_timeout_ms) {
        char text[16];
        snprintf(text, sizeof text, "%u", o->device_timeout_ms);
        set_option(&c[FFNRT_KNOB_TIMEOUT], "device_timeout_ms", text, o->device_timeout_ms, 0);
    }
    if (o->cache_dir && *o->cache_dir) {
        if (strlen(o->cache_dir) >= sizeof c->text)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "options.cache_dir is too long");
        set_option(&c[FFNRT_KNOB_CACHE_DIR], "cache_dir", o->cache_dir, 0, 0);
    }
    return FFNRT_OK;
}

ffnrt_status ffnrt_settings_force(ffnrt_settings *s, const char *what, const char *value, ffnrt_error *err)
{
    for (int k = 0; k < FFNRT_KNOB_COUNT && what; k++) {
        if (!knobs[k].forceable || strcmp(knobs[k].name, what) != 0)
            continue;
        if (!value || !*value) {
            memset(&s->ctx[k], 0, sizeof s->ctx[k]);
            return FFNRT_OK;
        }
        char from[48];
        snprintf(from, sizeof from, "ffnrt_context_force(%s)", what);
        return set_from(&s->ctx[k], (ffnrt_knob)k, value, FFNRT_FROM_FORCE, from, err);
    }
    char list[160] = "";
    for (int k = 0; k < FFNRT_KNOB_COUNT; k++)
        if (knobs[k].forceable)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", *list ? ", " : "", knobs[k].name);
    return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_context_force: \"%s\" is not a choice (%s)",
                      what ? what : "(null)", list);
}

const ffnrt_setting *ffnrt_setting_get(const ffnrt_settings *s, ffnrt_knob k, const ffnrt_setting *desc,
                                       const ffnrt_setting *tuned)
{
    if (desc && desc->source != FFNRT_FROM_DEFAULT)
        return desc;
    if (s->ctx[k].source != FFNRT_FROM_DEFAULT)
        return &s->ctx[k];
    if (s->env[k].source != FFNRT_FROM_DEFAULT)
        return &s->env[k];
    if (tuned && tuned->source != FFNRT_FROM_DEFAULT)
        return tuned;
    return NULL;
}

void ffnrt_settings_limits(const ffnrt_settings *s, uint64_t out[FFNRT_LIMIT_COUNT], const char *from[FFNRT_LIMIT_COUNT])
{
    for (int i = 0; i < FFNRT_LIMIT_COUNT; i++) {
        const ffnrt_setting *c = &s->ctx[FFNRT_KNOB_LIMITS], *e = &s->env[FFNRT_KNOB_LIMITS];
        out[i] = c->v[i] ? c->v[i] : e->v[i];
        if (from)
            from[i] = c->v[i] ? "asked by the options" : e->v[i] ? "asked by FFNRT_LIMITS" : "";
    }
}

void ffnrt_settings_device_text(const ffnrt_setting *v, char *buf, size_t cap)
{
    ffnrt_backend b = (ffnrt_backend)v->v[0];
    const char *sep = b != FFNRT_BACKEND_ANY && (v->v[1] || *v->text) ? ":" : "";
    if (v->v[1])
        snprintf(buf, cap, "%s%s%llu", b != FFNRT_BACKEND_ANY ? ffnrt_backend_name(b) : "", sep,
                 (unsigned long long)(v->v[1] - 1));
    else
        snprintf(buf, cap, "%s%s%s", b != FFNRT_BACKEND_ANY ? ffnrt_backend_name(b) : "", sep, v->text);
}

void ffnrt_settings_describe(const ffnrt_settings *s, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int k = 0; k < FFNRT_KNOB_COUNT && at + 1 < cap; k++) {
        const ffnrt_setting *v = ffnrt_setting_get(s, (ffnrt_knob)k, NULL, NULL);
        if (!v)
            continue;
        char text[300];
        if (k == FFNRT_KNOB_DEVICE)
            ffnrt_settings_device_text(v, text, sizeof text);
        else
            snprintf(text, sizeof text, "%s", k == FFNRT_KNOB_LIMITS && !*v->text ? "lowered" : v->text);
        int n = snprintf(buf + at, cap - at, "%s%s=%s (%s)", at ? ", " : "", knobs[k].name, text, v->from);
        at += n > 0 ? (size_t)n : 0;
    }
    if (!at)
        snprintf(buf, cap, "all defaults");
}
