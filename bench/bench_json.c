/* Reads the JSON that bench_write_json writes, for --compare. A small
 * recursive-descent parser of standard JSON (objects, arrays, strings with
 * escapes, numbers, true, false, null) into a tree; anything else is an
 * error with the line it was found on, never a crash: depth, sizes and
 * every read are bounded. Unknown fields are ignored, missing ones keep
 * their zero, so files of later versions with more fields still read. */
#include "bench_report.h"
#include "ffnrt_lab.h" /* ffnrt_lab_fopen: UTF-8 paths on every OS */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
    jtype type;
    double num;
    char *str;           /* J_STR */
    struct jval *items;  /* J_ARR, J_OBJ (values) */
    char **keys;         /* J_OBJ */
    size_t n;
} jval;

typedef struct jparser {
    const char *s, *end;
    int line;
    char *err;
    size_t err_len;
    const char *path;
} jparser;

#define JSON_MAX_DEPTH 32
#define JSON_MAX_FILE (256u << 20)

static int fail(jparser *p, const char *what)
{
    if (!p->err[0])
        snprintf(p->err, p->err_len, "%s:%d: %s", p->path, p->line, what);
    return -1;
}

static void skip_ws(jparser *p)
{
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r')) {
        if (*p->s == '\n')
            p->line++;
        p->s++;
    }
}

static void jfree(jval *v)
{
    if (!v)
        return;
    free(v->str);
    for (size_t i = 0; i < v->n; i++) {
        jfree(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    memset(v, 0, sizeof *v);
}

static int put_utf8(char *out, size_t *k, unsigned cp)
{
    if (cp < 0x80) {
        out[(*k)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*k)++] = (char)(0xc0 | (cp >> 6));
        out[(*k)++] = (char)(0x80 | (cp & 0x3f));
    } else {
        out[(*k)++] = (char)(0xe0 | (cp >> 12));
        out[(*k)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[(*k)++] = (char)(0x80 | (cp & 0x3f));
    }
    return 0;
}

static int parse_string(jparser *p, char **out)
{
    if (p->s >= p->end || *p->s != '"')
        return fail(p, "expected a string");
    p->s++;
    /* The decoded string is never longer than the source text. */
    const char *q = p->s;
    while (q < p->end && *q != '"') {
        if (*q == '\\')
            q++;
        q++;
    }
    if (q >= p->end)
        return fail(p, "unterminated string");
    char *buf = malloc((size_t)(q - p->s) + 1);
    if (!buf)
        return fail(p, "out of memory");
    size_t k = 0;
    while (p->s < q) {
        unsigned char c = (unsigned char)*p->s++;
        if (c < 0x20) {
            free(buf);
            return fail(p, "control character in a string");
        }
        if (c != '\\') {
            buf[k++] = (char)c;
            continue;
        }
        char e = *p->s++;
        switch (e) {
        case '"': buf[k++] = '"'; break;
        case '\\': buf[k++] = '\\'; break;
        case '/': buf[k++] = '/'; break;
        case 'b': buf[k++] = '\b'; break;
        case 'f': buf[k++] = '\f'; break;
        case 'n': buf[k++] = '\n'; break;
        case 'r': buf[k++] = '\r'; break;
        case 't': buf[k++] = '\t'; break;
        case 'u': {
            unsigned cp = 0;
            for (int i = 0; i < 4; i++, p->s++) {
                char h = p->s < q ? *p->s : 0;
                int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                      : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                if (d < 0) {
                    free(buf);
                    return fail(p, "bad \\u escape");
                }
                cp = cp * 16 + (unsigned)d;
            }
            /* \uXXXX takes 6 source bytes and at most 3 decoded: it fits.
             * Surrogates are kept as they come (this file never holds them). */
            put_utf8(buf, &k, cp);
            break;
        }
        default:
            free(buf);
            return fail(p, "bad escape in a string");
        }
    }
    buf[k] = 0;
    p->s = q + 1;
    *out = buf;
    return 0;
}

static int parse_value(jparser *p, jval *v, int depth);

static int push(jparser *p, jval *v, size_t *cap, char *key)
{
    if (v->n == *cap) {
        size_t c = *cap ? 2 * *cap : 8;
        jval *items = realloc(v->items, c * sizeof *items);
        if (!items)
            return fail(p, "out of memory");
        v->items = items;
        if (v->type == J_OBJ) {
            char **keys = realloc(v->keys, c * sizeof *keys);
            if (!keys)
                return fail(p, "out of memory");
            v->keys = keys;
        }
        *cap = c;
    }
    memset(&v->items[v->n], 0, sizeof v->items[0]);
    if (v->type == J_OBJ)
        v->keys[v->n] = key;
    v->n++;
    return 0;
}

static int parse_value(jparser *p, jval *v, int depth)
{
    memset(v, 0, sizeof *v);
    if (depth > JSON_MAX_DEPTH)
        return fail(p, "nested too deeply");
    skip_ws(p);
    if (p->s >= p->end)
        return fail(p, "unexpected end of file");
    char c = *p->s;
    if (c == '{' || c == '[') {
        v->type = c == '{' ? J_OBJ : J_ARR;
        char close = c == '{' ? '}' : ']';
        size_t cap = 0;
        p->s++;
        skip_ws(p);
        if (p->s < p->end && *p->s == close) {
            p->s++;
            return 0;
        }
        for (;;) {
            char *key = NULL;
            skip_ws(p);
            if (v->type == J_OBJ) {
                if (parse_string(p, &key) != 0)
                    return -1;
                skip_ws(p);
                if (p->s >= p->end || *p->s != ':') {
                    free(key);
                    return fail(p, "expected ':' after a key");
                }
                p->s++;
            }
            if (push(p, v, &cap, key) != 0) {
                free(key);
                return -1;
            }
            if (parse_value(p, &v->items[v->n - 1], depth + 1) != 0)
                return -1;
            skip_ws(p);
            if (p->s < p->end && *p->s == ',') {
                p->s++;
                continue;
            }
            if (p->s < p->end && *p->s == close) {
                p->s++;
                return 0;
            }
            return fail(p, v->type == J_OBJ ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
    if (c == '"') {
        v->type = J_STR;
        return parse_string(p, &v->str);
    }
    static const struct { const char *word; jtype type; double num; } words[] = {
        {"true", J_BOOL, 1}, {"false", J_BOOL, 0}, {"null", J_NULL, 0}};
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(words[i].word);
        if ((size_t)(p->end - p->s) >= n && strncmp(p->s, words[i].word, n) == 0) {
            v->type = words[i].type;
            v->num = words[i].num;
            p->s += n;
            return 0;
        }
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        char num[64];
        size_t k = 0;
        while (p->s < p->end && k + 1 < sizeof num && strchr("+-0123456789.eE", *p->s))
            num[k++] = *p->s++;
        num[k] = 0;
        char *e;
        errno = 0;
        v->type = J_NUM;
        v->num = strtod(num, &e);
        if (*e || k == 0)
            return fail(p, "bad number");
        return 0;
    }
    return fail(p, "expected a value");
}

static const jval *get(const jval *o, const char *key)
{
    if (!o || o->type != J_OBJ)
        return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->keys[i], key) == 0)
            return &o->items[i];
    return NULL;
}

static void get_s(const jval *o, const char *key, char *out, size_t len)
{
    const jval *v = get(o, key);
    bench_row_set(out, len, v && v->type == J_STR ? v->str : "");
}

static void get_meta_s(const jval *o, const char *key, char *out, size_t len)
{
    const jval *v = get(o, key);
    snprintf(out, len, "%s", v && v->type == J_STR ? v->str : "");
}

static double get_n(const jval *o, const char *key)
{
    const jval *v = get(o, key);
    return v && v->type == J_NUM ? v->num : 0.0;
}

int bench_read_json(const char *path, bench_rows *rs, bench_meta *m, char *err, size_t err_len)
{
    err[0] = 0;
    memset(m, 0, sizeof *m);
    FILE *f = ffnrt_lab_fopen(path, "rb");
    if (!f) {
        snprintf(err, err_len, "%s: cannot open (%s)", path, strerror(errno));
        return -1;
    }
    char *text = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 65536;
            char *t = cap <= JSON_MAX_FILE ? realloc(text, cap) : NULL;
            if (!t) {
                free(text);
                fclose(f);
                snprintf(err, err_len, "%s: too large or out of memory", path);
                return -1;
            }
            text = t;
        }
        size_t got = fread(text + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    jparser p = {text, text + n, 1, err, err_len, path};
    jval root;
    int rc = parse_value(&p, &root, 0);
    if (rc == 0) {
        skip_ws(&p);
        if (p.s != p.end)
            rc = fail(&p, "text after the end of the document");
    }
    if (rc == 0 && root.type != J_OBJ)
        rc = fail(&p, "the top level is not an object");
    const jval *rows = rc == 0 ? get(&root, "rows") : NULL;
    if (rc == 0 && (!rows || rows->type != J_ARR)) {
        snprintf(err, err_len, "%s: no \"rows\" array (not an ffnrt bench file?)", path);
        rc = -1;
    }
    if (rc == 0) {
        get_meta_s(&root, "format", m->format, sizeof m->format);
        get_meta_s(&root, "ffnrt_version", m->version, sizeof m->version);
        get_meta_s(&root, "commit", m->commit, sizeof m->commit);
        get_meta_s(&root, "preset", m->preset, sizeof m->preset);
        get_meta_s(&root, "date", m->date, sizeof m->date);
        get_meta_s(&root, "host", m->host, sizeof m->host);
        m->wall_s = get_n(&root, "wall_s");
        m->warmup_s = get_n(&root, "warmup_s");
        m->measure_s = get_n(&root, "measure_s");
        m->kernels_built = (unsigned long long)get_n(&root, "kernels_built");
        m->kernels_cached = (unsigned long long)get_n(&root, "kernels_cached");
        const jval *notes = get(&root, "notes");
        for (size_t i = 0; notes && notes->type == J_ARR && i < notes->n && m->nnotes < BENCH_MAX_NOTES; i++)
            if (notes->items[i].type == J_STR)
                snprintf(m->notes[m->nnotes++], sizeof m->notes[0], "%s", notes->items[i].str);
        const jval *fields = get(&root, "fields");
        for (size_t i = 0; fields && fields->type == J_OBJ && i < fields->n; i++)
            if (fields->items[i].type == J_STR)
                bench_meta_set_field(m, fields->keys[i], fields->items[i].str);
        const jval *devs = get(&root, "devices");
        for (size_t i = 0; devs && devs->type == J_ARR && i < devs->n && m->ndevices < BENCH_MAX_DEVICES; i++) {
            bench_device_meta *d = &m->devices[m->ndevices++];
            get_meta_s(&devs->items[i], "backend", d->backend, sizeof d->backend);
            get_s(&devs->items[i], "name", d->name, sizeof d->name);
            get_meta_s(&devs->items[i], "driver", d->driver, sizeof d->driver);
            get_meta_s(&devs->items[i], "api", d->api, sizeof d->api);
        }
        for (size_t i = 0; i < rows->n && rc == 0; i++) {
            const jval *o = &rows->items[i];
            if (o->type != J_OBJ) {
                snprintf(err, err_len, "%s: row %zu is not an object", path, i);
                rc = -1;
                break;
            }
            bench_row *r = bench_rows_push(rs);
            if (!r) {
                snprintf(err, err_len, "%s: out of memory", path);
                rc = -1;
                break;
            }
            get_s(o, "group", r->group, sizeof r->group);
            get_s(o, "op", r->op, sizeof r->op);
            get_s(o, "dir", r->dir, sizeof r->dir);
            get_s(o, "backend", r->backend, sizeof r->backend);
            get_s(o, "device", r->device, sizeof r->device);
            get_s(o, "dtype", r->dtype, sizeof r->dtype);
            get_s(o, "path", r->path, sizeof r->path);
            get_s(o, "shape", r->shape, sizeof r->shape);
            get_s(o, "timing", r->timing, sizeof r->timing);
            get_s(o, "rate_unit", r->rate_unit, sizeof r->rate_unit);
            get_s(o, "ratio_to", r->ratio_to, sizeof r->ratio_to);
            get_s(o, "note", r->note, sizeof r->note);
            r->size = get_n(o, "size");
            /* A count read as a double: converted only when it is one (a
             * cast of 1e300 to int is undefined). */
            double runs = get_n(o, "runs");
            if (!(runs >= 0 && runs <= 1e9) || runs != (double)(int)runs) {
                snprintf(err, err_len, "%s: row %zu: \"runs\" is %g, not a count of runs", path, i, runs);
                rc = -1;
                break;
            }
            r->runs = (int)runs;
            r->median_ns = get_n(o, "median_ns");
            r->min_ns = get_n(o, "min_ns");
            r->max_ns = get_n(o, "max_ns");
            r->spread = get_n(o, "spread");
            r->host_ns = get_n(o, "host_ns");
            r->rate = get_n(o, "rate");
            r->ratio = get_n(o, "ratio");
            const jval *metrics = get(o, "metrics");
            for (size_t k = 0; metrics && metrics->type == J_OBJ && k < metrics->n; k++)
                if (metrics->items[k].type == J_NUM)
                    bench_row_metric(r, metrics->keys[k], metrics->items[k].num);
            if (!r->group[0] || !r->op[0]) {
                snprintf(err, err_len, "%s: row %zu has no group or op", path, i);
                rc = -1;
            }
        }
    }
    jfree(&root);
    free(text);
    return rc;
}
