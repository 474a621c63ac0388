/* The comparison's criteria as text: read from a small file or set key by
 * key, and written back in one canonical form whose SHA-256 a report
 * records, so equal criteria always hash alike and any change shows.
 * Every key is a row of one table (name, field, parser, printer). */
#include "compare_internal.h"
#include "numbers.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A finite double, the whole string. */
static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno == ERANGE || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* A count: the command line's whole integer (numbers.h), never with a
 * minus sign ("-0" included). */
static int parse_count(const char *s, int64_t min, int64_t max, int64_t *out)
{
    return *s == '-' ? -1 : cli_parse_int(s, min, max, out);
}

/* The shortest form that reads back as the same double: whole numbers
 * as such ("1000", not "1e+03"), others the shortest %g. */
static void print_double(char *out, size_t len, double v)
{
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(out, len, "%.0f", v);
        return;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(out, len, "%.*g", p, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

typedef enum key_kind { K_LIMIT, K_TOKENS, K_BOOL, K_FRACTION, K_INPUT, K_COUNT, K_RATE, K_NONNEG, K_TASK } key_kind;

typedef struct criteria_key {
    const char *name;
    key_kind kind;
    size_t offset;
    int64_t min, max; /* K_TOKENS, K_COUNT */
    const char *what; /* for messages */
} criteria_key;

#define AT(field) offsetof(ffnrt_compare_criteria, field)

static const criteria_key keys[] = {
    {"max_latency_ms", K_LIMIT, AT(max_latency_ms), 0, 0, "a latency in ms > 0, or none"},
    {"max_memory_mib", K_LIMIT, AT(max_memory_mib), 0, 0, "MiB > 0, or none"},
    {"memory_tokens", K_TOKENS, AT(memory_tokens), 0, 1 << 24, "a token count, or 0 for the largest run"},
    {"min_tokens_per_s", K_LIMIT, AT(min_tokens_per_s), 0, 0, "tokens per second > 0, or none"},
    {"throughput_tokens", K_TOKENS, AT(throughput_tokens), 0, 1 << 24, "a token count, or 0 for the largest run"},
    {"finite", K_BOOL, AT(require_finite), 0, 0, "yes or no"},
    {"max_dead_fraction", K_FRACTION, AT(max_dead_fraction), 0, 0, "a fraction in [0, 1], or none"},
    {"input", K_INPUT, AT(input), 0, 0, "\"normal MEAN STD\" (STD > 0) or \"uniform LO HI\" (LO < HI)"},
    {"stability_tokens", K_TOKENS, AT(stability_tokens), 1, 1 << 20, "a token count >= 1"},
    {"seeds", K_COUNT, AT(seeds), 0, 64, "a count of seeds, 1 to 64, or 0 for no stability figures"},
    {"task", K_TASK, AT(task), 0, 0, "\"synthetic\" or \"gguf LAYER\""},
    {"train_steps", K_COUNT, AT(train_steps), 0, 1 << 20, "a count of steps, or 0 for no training"},
    {"train_seeds", K_COUNT, AT(train_seeds), 1, 64, "a count of runs, 1 to 64"},
    {"train_tokens", K_TOKENS, AT(train_tokens), 1, 1 << 20, "a token count >= 1"},
    {"validation_tokens", K_TOKENS, AT(validation_tokens), 1, 1 << 20, "a token count >= 1"},
    {"train_lr", K_RATE, AT(train_lr), 0, 0, "a learning rate > 0"},
    {"train_weight_decay", K_NONNEG, AT(train_weight_decay), 0, 0, "a decay >= 0"},
    {"train_max_grad_norm", K_LIMIT, AT(train_max_grad_norm), 0, 0, "a norm > 0, or none"},
    {"train_patience", K_COUNT, AT(train_patience), 0, 16, "evaluations without improvement, 1 to 16, or 0"},
    {"max_val_rel_mse", K_LIMIT, AT(max_val_rel_mse), 0, 0, "a relative MSE > 0, or none"},
    {"max_step_ms", K_LIMIT, AT(max_step_ms), 0, 0, "a step time in ms > 0, or none"},
    {"max_train_memory_mib", K_LIMIT, AT(max_train_memory_mib), 0, 0, "MiB > 0, or none"},
};
#define NKEYS (sizeof keys / sizeof keys[0])

static const criteria_key *find_key(const char *name)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(keys[i].name, name) == 0)
            return &keys[i];
    return NULL;
}

/* Sets one key from its value text; -1 when the value is not of its kind. */
static int set_key(ffnrt_compare_criteria *c, const criteria_key *k, const char *v)
{
    char *base = (char *)c + k->offset;
    double d;
    int64_t n;
    switch (k->kind) {
    case K_LIMIT:
        if (strcmp(v, "none") == 0) {
            *(double *)base = 0;
            return 0;
        }
        if (parse_double(v, &d) != 0 || !(d > 0))
            return -1;
        *(double *)base = d;
        return 0;
    case K_TASK: {
        char kind[16], layer[32], extra;
        int got = sscanf(v, "%15s %31s %c", kind, layer, &extra);
        if (got == 1 && strcmp(kind, "synthetic") == 0) {
            c->task = FFNRT_TASK_SYNTHETIC, c->task_layer = 0;
            return 0;
        }
        if (got != 2 || strcmp(kind, "gguf") != 0 || parse_count(layer, 0, 1 << 20, &n) != 0)
            return -1;
        c->task = FFNRT_TASK_GGUF, c->task_layer = n;
        return 0;
    }
    case K_RATE:
    case K_NONNEG:
        if (parse_double(v, &d) != 0 || d < 0 || (k->kind == K_RATE && d == 0))
            return -1;
        *(double *)base = d;
        return 0;
    case K_FRACTION:
        if (strcmp(v, "none") == 0) {
            *(double *)base = -1;
            return 0;
        }
        if (parse_double(v, &d) != 0 || d < 0 || d > 1)
            return -1;
        *(double *)base = d;
        return 0;
    case K_TOKENS:
        if (parse_count(v, k->min, k->max, &n) != 0)
            return -1;
        *(int64_t *)base = n;
        return 0;
    case K_COUNT:
        if (parse_count(v, k->min, k->max, &n) != 0)
            return -1;
        *(uint32_t *)base = (uint32_t)n;
        return 0;
    case K_BOOL: {
        static const char *const yes[] = {"yes", "1", "on", "true"}, *const no[] = {"no", "0", "off", "false"};
        for (int i = 0; i < 4; i++) {
            if (ffnrt_lab_strcasecmp(v, yes[i]) == 0)
                return *(int *)base = 1, 0;
            if (ffnrt_lab_strcasecmp(v, no[i]) == 0)
                return *(int *)base = 0, 0;
        }
        return -1;
    }
    case K_INPUT: {
        char kind[16], a[64], b[64], extra;
        if (sscanf(v, "%15s %63s %63s %c", kind, a, b, &extra) != 3)
            return -1;
        double x, y;
        if (parse_double(a, &x) != 0 || parse_double(b, &y) != 0)
            return -1;
        if (strcmp(kind, "normal") == 0 && y > 0)
            c->input = FFNRT_INPUT_NORMAL;
        else if (strcmp(kind, "uniform") == 0 && x < y)
            c->input = FFNRT_INPUT_UNIFORM;
        else
            return -1;
        c->input_a = x;
        c->input_b = y;
        return 0;
    }
    }
    return -1;
}

static void print_key(const ffnrt_compare_criteria *c, const criteria_key *k, char *out, size_t len)
{
    const char *base = (const char *)c + k->offset;
    char a[40], b[40];
    switch (k->kind) {
    case K_LIMIT:
        if (*(const double *)base > 0)
            print_double(out, len, *(const double *)base);
        else
            snprintf(out, len, "none");
        return;
    case K_RATE:
    case K_NONNEG:
        print_double(out, len, *(const double *)base);
        return;
    case K_TASK:
        if (c->task == FFNRT_TASK_GGUF)
            snprintf(out, len, "gguf %lld", (long long)c->task_layer);
        else
            snprintf(out, len, "synthetic");
        return;
    case K_FRACTION:
        if (*(const double *)base >= 0)
            print_double(out, len, *(const double *)base);
        else
            snprintf(out, len, "none");
        return;
    case K_TOKENS:
        snprintf(out, len, "%lld", (long long)*(const int64_t *)base);
        return;
    case K_COUNT:
        snprintf(out, len, "%u", *(const uint32_t *)base);
        return;
    case K_BOOL:
        snprintf(out, len, "%s", *(const int *)base ? "yes" : "no");
        return;
    case K_INPUT:
        print_double(a, sizeof a, c->input_a);
        print_double(b, sizeof b, c->input_b);
        snprintf(out, len, "%s %s %s", c->input == FFNRT_INPUT_UNIFORM ? "uniform" : "normal", a, b);
        return;
    }
}

ffnrt_status ffnrt_criteria_set_one(ffnrt_compare_criteria *c, const char *key, const char *value, ffnrt_error *err)
{
    if (!c || !key || !value)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "criteria: %s is NULL",
                          !c ? "the criteria" : !key ? "key" : "value");
    const criteria_key *k = find_key(key);
    if (!k) {
        char known[256] = "";
        for (size_t i = 0; i < NKEYS; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", keys[i].name);
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "criteria: unknown key \"%.60s\" (known: %s)", key,
                          known);
    }
    ffnrt_compare_criteria tmp = *c; /* untouched on failure */
    if (set_key(&tmp, k, value) != 0)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "criteria: %s = \"%.60s\": expected %s", key, value,
                          k->what);
    *c = tmp;
    return FFNRT_OK;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    return s;
}

/* Keys that depend on each other: a stability criterion needs stability
 * figures, so seeds = 0 (none measured) cannot go with one; a training
 * criterion needs training (train_steps >= 1). */
static ffnrt_status check_together(const ffnrt_compare_criteria *c, const char *fn, ffnrt_error *err)
{
    if (c->train_steps == 0 && (c->max_val_rel_mse > 0 || c->max_step_ms > 0 || c->max_train_memory_mib > 0))
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                          "%s: %s is a training criterion and train_steps = 0 trains nothing: give train_steps >= 1 "
                          "(ffnrt compare --train) or drop the criterion", fn,
                          c->max_val_rel_mse > 0 ? "max_val_rel_mse" : c->max_step_ms > 0 ? "max_step_ms"
                                                                                          : "max_train_memory_mib");
    if (c->seeds == 0 && (c->require_finite || c->max_dead_fraction >= 0))
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                          "%s: %s is a stability criterion and seeds = 0 measures no stability figures: give seeds "
                          ">= 1 or drop the criterion", fn, c->require_finite ? "finite = yes" : "max_dead_fraction");
    return FFNRT_OK;
}

ffnrt_status ffnrt_criteria_parse_text(const char *text, ffnrt_compare_criteria *out, ffnrt_error *err)
{
    if (!text || !out)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_compare_criteria_parse: %s is NULL",
                          !text ? "text" : "out");
    ffnrt_compare_criteria c = FFNRT_COMPARE_CRITERIA_INIT;
    int seen[NKEYS] = {0};
    int line = 0;
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        line++;
        char buf[512];
        if (n >= sizeof buf)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "criteria line %d: longer than %zu bytes", line,
                              sizeof buf - 1);
        memcpy(buf, p, n);
        buf[n] = 0;
        p += n + (eol ? 1 : 0);
        char *hash = strchr(buf, '#');
        if (hash)
            *hash = 0;
        char *s = trim(buf);
        if (!*s)
            continue;
        char *eq = strchr(s, '=');
        if (!eq)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "criteria line %d: \"%.60s\" is not \"key = value\"",
                              line, s);
        *eq = 0;
        char *key = trim(s), *value = trim(eq + 1);
        const criteria_key *k = find_key(key);
        if (k && seen[k - keys]++)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "criteria line %d: %s given twice", line, key);
        if (ffnrt_criteria_set_one(&c, key, value, err) != FFNRT_OK) {
            char why[sizeof err->message];
            snprintf(why, sizeof why, "%s", err->message);
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "criteria line %d: %s", line, why);
        }
    }
    if (check_together(&c, "criteria", err) != FFNRT_OK)
        return err->status;
    *out = c;
    return FFNRT_OK;
}

ffnrt_status ffnrt_criteria_canonical(const ffnrt_compare_criteria *c, char *buf, size_t len, char hex[65],
                                      ffnrt_error *err)
{
    if (!c)
        return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_compare_criteria_text: the criteria are NULL");
    /* Values out of their ranges (a struct filled by hand) are refused: the
     * canonical text must read back as the same criteria. */
    char text[1024] = "";
    size_t used = 0;
    for (size_t i = 0; i < NKEYS; i++) {
        char v[160];
        print_key(c, &keys[i], v, sizeof v);
        ffnrt_compare_criteria back = FFNRT_COMPARE_CRITERIA_INIT;
        if (set_key(&back, &keys[i], v) != 0)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_compare_criteria_text: %s = %s: expected %s",
                              keys[i].name, v, keys[i].what);
        used += (size_t)snprintf(text + used, sizeof text - used, "%s = %s\n", keys[i].name, v);
    }
    if (check_together(c, "ffnrt_compare_criteria_text", err) != FFNRT_OK)
        return err->status;
    if (buf) {
        if (len <= used)
            return ffnrt_fail(err, FFNRT_ERROR_INVALID_ARGUMENT,
                              "ffnrt_compare_criteria_text: the buffer holds %zu bytes, the text needs %zu", len,
                              used + 1);
        memcpy(buf, text, used + 1);
    }
    if (hex)
        ffnrt_lab_sha256_hex(text, used, hex);
    return FFNRT_OK;
}

/* ------------------------------------------------------------ public */

ffnrt_status ffnrt_compare_criteria_parse(const char *text, ffnrt_compare_criteria *out)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    ffnrt_criteria_parse_text(text, out, &err);
    return ffnrt_lab_end_call(NULL, &err);
}

ffnrt_status ffnrt_compare_criteria_set(ffnrt_compare_criteria *c, const char *key, const char *value)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    ffnrt_criteria_set_one(c, key, value, &err);
    return ffnrt_lab_end_call(NULL, &err);
}

ffnrt_status ffnrt_compare_criteria_text(const ffnrt_compare_criteria *c, char *buf, size_t len, char sha256_hex[65])
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    ffnrt_criteria_canonical(c, buf, len, sha256_hex, &err);
    return ffnrt_lab_end_call(NULL, &err);
}
