#include "bench_row.h"
#include "bench_report.h"
#include "lab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bench_row *bench_rows_push(bench_rows *rs)
{
    if (rs->n == rs->cap) {
        size_t cap = rs->cap ? 2 * rs->cap : 128;
        bench_row *v = realloc(rs->v, cap * sizeof *v);
        if (!v)
            return NULL;
        rs->v = v;
        rs->cap = cap;
    }
    bench_row *r = &rs->v[rs->n++];
    memset(r, 0, sizeof *r);
    return r;
}

void bench_rows_free(bench_rows *rs)
{
    free(rs->v);
    rs->v = NULL;
    rs->n = rs->cap = 0;
}

void bench_row_key(const bench_row *r, char *out, size_t len)
{
    snprintf(out, len, "%s|%s|%s|%s|%s|%s|%s|%s", r->group, r->op, r->dir, r->backend, r->device, r->dtype, r->path,
             r->shape);
}

void bench_row_set(char *field, size_t len, const char *src)
{
    size_t i = 0;
    for (; src && src[i] && i + 1 < len; i++) {
        unsigned char c = (unsigned char)src[i];
        field[i] = (c < 0x20 || c == '"' || c == '\\' || c == 0x7f) ? ' ' : (char)c;
    }
    field[i] = 0;
}

void bench_row_metric(bench_row *r, const char *name, double value)
{
    if (!isfinite(value))
        return;
    for (int i = 0; i < r->nmetrics; i++)
        if (strcmp(r->metrics[i].name, name) == 0) {
            r->metrics[i].value = value;
            return;
        }
    if (r->nmetrics < BENCH_MAX_METRICS) {
        BENCH_SET(r->metrics[r->nmetrics].name, name);
        r->metrics[r->nmetrics++].value = value;
    } else { /* a kind of row outgrew the table: say so, never drop a figure silently */
        fprintf(stderr, "ffnrt: bench row %s %s has more than %d figures: %s left out (raise BENCH_MAX_METRICS)\n",
                r->group, r->op, BENCH_MAX_METRICS, name);
    }
}

double bench_row_get(const bench_row *r, const char *name)
{
    for (int i = 0; i < r->nmetrics; i++)
        if (strcmp(r->metrics[i].name, name) == 0)
            return r->metrics[i].value;
    return NAN;
}

void bench_row_times(bench_row *r, double *dev, double *host, int n)
{
    if (n <= 0)
        return;
    double hm = lab_median(host, n);
    double dm = dev ? lab_median(dev, n) : hm;
    double *d = dev ? dev : host;
    r->runs = n;
    r->median_ns = dm * 1e9;
    r->min_ns = d[0] * 1e9;
    r->max_ns = d[n - 1] * 1e9;
    r->spread = dm > 0 ? (d[n - 1] - d[0]) / dm : 0;
    r->host_ns = hm * 1e9;
    BENCH_SET(r->timing, dev ? "device" : "host");
}

const char *bench_time_split(const bench_meta *m)
{
    static char text[400];
    int n;
    if (m->measure_s > 0)
        n = snprintf(text, sizeof text, "time: %.1f s in warm-up calls (compiling: kernel builds or disk-cache loads, "
                     "drivers' first calls), %.1f s in measured calls, %.1f s other (start rows, peers, inputs)",
                     m->warmup_s, m->measure_s,
                     m->wall_s - m->warmup_s - m->measure_s);
    else
        n = snprintf(text, sizeof text, "time: %.1f s in warm-up calls (kernel builds or disk-cache loads, drivers' "
                     "first calls), %.1f s measuring", m->warmup_s, m->wall_s - m->warmup_s);
    if (n > 0 && (size_t)n < sizeof text && (m->kernels_built || m->kernels_cached))
        snprintf(text + n, sizeof text - (size_t)n, "; kernels: %llu compiled, %llu from ffnrt's disk cache",
                 m->kernels_built, m->kernels_cached);
    return text;
}

void bench_meta_add_note(bench_meta *m, const char *text)
{
    fprintf(stderr, "ffnrt bench: %s\n", text);
    bench_meta_keep_note(m, text);
}

void bench_meta_keep_note(bench_meta *m, const char *text)
{
    for (int i = 0; i < m->nnotes; i++)
        if (strcmp(m->notes[i], text) == 0)
            return;
    if (m->nnotes < BENCH_MAX_NOTES)
        snprintf(m->notes[m->nnotes++], sizeof m->notes[0], "%s", text);
}

void bench_meta_add_peer(bench_meta *m, const char *text)
{
    for (int i = 0; i < m->npeers; i++)
        if (strcmp(m->peers[i], text) == 0)
            return;
    if (m->npeers < BENCH_MAX_PEERS)
        snprintf(m->peers[m->npeers++], sizeof m->peers[0], "%s", text);
}

void bench_meta_set_field(bench_meta *m, const char *name, const char *value)
{
    int i = 0;
    while (i < m->nfields && strcmp(m->fields[i].name, name) != 0)
        i++;
    if (i == BENCH_MAX_FIELDS)
        return;
    if (i == m->nfields)
        m->nfields++;
    bench_row_set(m->fields[i].name, sizeof m->fields[i].name, name); /* written into JSON unescaped */
    snprintf(m->fields[i].value, sizeof m->fields[i].value, "%s", value);
}

const char *bench_meta_field(const bench_meta *m, const char *name)
{
    for (int i = 0; i < m->nfields; i++)
        if (strcmp(m->fields[i].name, name) == 0)
            return m->fields[i].value;
    return NULL;
}
