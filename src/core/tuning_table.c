/* The tuning table: results by shape-class key, an array with an
 * open-addressed index (constant-time lookups, linear-time loading), and
 * its text form on disk, "key value ms ms" a line, read with every field
 * checked (fuzz/fuzz_tuning.c). A container of the context's; what goes in
 * it is the dispatcher's business (dispatch/tuning.c). */
#include "core/context.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------- the table */

static size_t slot_of(const char *key, size_t size)
{
    return (size_t)ffnrt_fnv1a64(key, strlen(key), FFNRT_FNV64_INIT) & (size - 1);
}

/* The index slot holding key, or the empty slot where it would go. */
static size_t probe(const ffnrt_tuning_table *t, const char *key)
{
    size_t i = slot_of(key, t->index_size);
    while (t->index[i] && strcmp(t->entries[t->index[i] - 1].key, key) != 0)
        i = (i + 1) & (t->index_size - 1);
    return i;
}

const ffnrt_tuning_entry *ffnrt_tuning_find(const ffnrt_tuning_table *t, const char *key)
{
    if (!t->index_size)
        return NULL;
    uint32_t at = t->index[probe(t, key)];
    return at ? &t->entries[at - 1] : NULL;
}

/* Rebuilds the index at twice the size: at most half full, so probes stay
 * short. */
static int grow_index(ffnrt_tuning_table *t)
{
    size_t size = t->index_size ? 2 * t->index_size : 64;
    uint32_t *index = calloc(size, sizeof *index);
    if (!index)
        return 0;
    free(t->index);
    t->index = index;
    t->index_size = size;
    for (size_t e = 0; e < t->count; e++)
        t->index[probe(t, t->entries[e].key)] = (uint32_t)(e + 1);
    return 1;
}

ffnrt_tuning_entry *ffnrt_tuning_insert(ffnrt_tuning_table *t, const char *key)
{
    if (strlen(key) >= sizeof t->entries[0].key)
        return NULL;
    ffnrt_tuning_entry *known = (ffnrt_tuning_entry *)ffnrt_tuning_find(t, key);
    if (known)
        return known;
    if (t->count >= FFNRT_TUNING_MAX_ENTRIES)
        return NULL; /* a result not kept is re-measured, never wrong */
    if (2 * (t->count + 1) > t->index_size && !grow_index(t))
        return NULL;
    if (t->count == t->capacity) {
        size_t cap = t->capacity ? 2 * t->capacity : 16;
        ffnrt_tuning_entry *e = realloc(t->entries, cap * sizeof *e);
        if (!e)
            return NULL;
        t->entries = e;
        t->capacity = cap;
    }
    ffnrt_tuning_entry *e = &t->entries[t->count];
    memset(e, 0, sizeof *e);
    strcpy(e->key, key);
    t->index[probe(t, key)] = (uint32_t)++t->count;
    return e;
}

void ffnrt_tuning_table_free(ffnrt_tuning_table *t)
{
    free(t->entries);
    free(t->index);
    memset(t, 0, sizeof *t);
}

/* The next space-separated field of [*at, end) into buf (cap bytes): 0
 * when there is none or it does not fit. */
static int next_field(const char **at, const char *end, char *buf, size_t cap)
{
    const char *p = *at;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
        p++;
    const char *q = p;
    while (q < end && *q != ' ' && *q != '\t' && *q != '\r')
        q++;
    if (q == p || (size_t)(q - p) >= cap)
        return 0;
    memcpy(buf, p, (size_t)(q - p));
    buf[q - p] = '\0';
    *at = q;
    return 1;
}

static int parse_ms(const char *s, double *out)
{
    char *end;
    *out = strtod(s, &end);
    return end != s && *end == '\0' && isfinite(*out) && *out >= 0;
}

/* One line "key value ms ms" (len bytes, no newline): 1 when it parses,
 * the key is an FFN shape class and the value a path x kernel x integer-path code. */
static int parse_line(const char *line, size_t len, char key[160], int *value, double ms[2])
{
    const char *at = line, *end = line + len;
    char v[16], a[64], b[64];
    if (!next_field(&at, end, key, 160) || !next_field(&at, end, v, sizeof v) || !next_field(&at, end, a, sizeof a) ||
        !next_field(&at, end, b, sizeof b))
        return 0;
    while (at < end && (*at == ' ' || *at == '\t' || *at == '\r'))
        at++;
    if (at != end)
        return 0; /* more fields */
    /* integer path * 8 + unfused * 4 + kernel: kernel 0..2, the integer
     * path 0 (not timed), 1 (off) or 2 (on); no leading zero. */
    size_t digits = strlen(v);
    if (digits < 1 || digits > 2 || v[0] < '0' || v[0] > '9' || (digits == 2 && (v[0] == '0' || v[1] < '0' || v[1] > '9')))
        return 0;
    int code = digits == 1 ? v[0] - '0' : (v[0] - '0') * 10 + (v[1] - '0');
    if (code > 23 || code % 4 > 2)
        return 0;
    *value = code;
    return strncmp(key, "ffn/", 4) == 0 && parse_ms(a, &ms[0]) && parse_ms(b, &ms[1]);
}

size_t ffnrt_tuning_parse(ffnrt_tuning_table *t, const char *text, size_t n)
{
    size_t taken = 0;
    for (size_t at = 0; at < n && t->count < FFNRT_TUNING_MAX_ENTRIES;) {
        const char *nl = memchr(text + at, '\n', n - at);
        size_t len = nl ? (size_t)(nl - (text + at)) : n - at;
        char key[160];
        int value;
        double ms[2];
        /* The first line for a key wins, as the first result kept did. */
        if (parse_line(text + at, len, key, &value, ms) && !ffnrt_tuning_find(t, key)) {
            ffnrt_tuning_entry *e = ffnrt_tuning_insert(t, key);
            if (e) {
                e->value = value;
                e->ms[0] = ms[0];
                e->ms[1] = ms[1];
                taken++;
            }
        }
        at += len + 1;
    }
    return taken;
}

char *ffnrt_tuning_format(const ffnrt_tuning_table *t, size_t *n)
{
    size_t cap = t->count * (sizeof t->entries[0].key + 64) + 1, at = 0;
    char *text = malloc(cap);
    if (!text)
        return NULL;
    text[0] = '\0';
    for (size_t i = 0; i < t->count; i++)
        at += (size_t)snprintf(text + at, cap - at, "%s %d %.6g %.6g\n", t->entries[i].key, t->entries[i].value,
                               t->entries[i].ms[0], t->entries[i].ms[1]);
    *n = at;
    return text;
}
