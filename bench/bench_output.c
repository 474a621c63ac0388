/* The outputs of `ffnrt bench`: the table, CSV, JSON and gnuplot plots,
 * all from the same rows (bench_row.h). */
#include "bench_parts.h"
#include "bench_report.h"
#include "ffnrt_lab.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ table */

void bench_print_header(FILE *f)
{
    fprintf(f, "%-11s %-22s %-5s %-4s %-14s %-14s %4s %10s %10s %7s %10s %10s %-7s %6s %s\n", "group", "op", "dir",
            "prec", "path", "shape", "runs", "median_ms", "min_ms", "spread", "host_ms", "rate", "unit", "ratio",
            "(to)");
}

void bench_print_row(FILE *f, const bench_row *r)
{
    /* Rows that time without a rate (start-up) show "-" for it and its ratio. */
    char rate[24] = "-", ratio[24] = "-";
    if (r->rate_unit[0]) {
        snprintf(rate, sizeof rate, "%.2f", r->rate);
        snprintf(ratio, sizeof ratio, "%.2f", r->ratio);
    }
    fprintf(f, "%-11s %-22s %-5s %-4s %-14s %-14s %4d %10.3f %10.3f %6.1f%% %10.3f %10s %-7s %6s %s%s%s%s\n",
            r->group, r->op, r->dir[0] ? r->dir : "-", r->dtype[0] ? r->dtype : "-", r->path[0] ? r->path : "-",
            r->shape, r->runs, r->median_ns * 1e-6, r->min_ns * 1e-6, 100.0 * r->spread, r->host_ns * 1e-6, rate,
            r->rate_unit[0] ? r->rate_unit : "-", ratio, r->ratio_to[0] ? r->ratio_to : "-",
            strcmp(r->timing, "host") == 0 ? " [host timing]" : "", r->note[0] ? "  " : "", r->note);
}

static int same_device(const bench_row *r, const bench_device_meta *d)
{
    return strcmp(r->backend, d->backend) == 0 && strcmp(r->device, d->name) == 0;
}

void bench_print_table(FILE *f, const bench_rows *rs, const bench_meta *m)
{
    fprintf(f, "\nffnrt %s (commit %s), preset %s, %s on %s, %.1f s\n", m->version, m->commit, m->preset, m->date,
            m->host, m->wall_s);
    if (m->warmup_s > 0)
        fprintf(f, "%s\n", bench_time_split(m));
    for (int p = 0; p < m->npeers; p++)
        fprintf(f, "peer %s\n", m->peers[p]);
    for (int p = 0; p < m->nnotes; p++)
        fprintf(f, "note %s\n", m->notes[p]);
    for (int p = 0; p < m->nfields; p++)
        fprintf(f, "%s: %s%s", m->fields[p].name, m->fields[p].value,
                strchr(m->fields[p].value, '\n') ? "" : "\n");
    /* Devices first, then rows of no listed device (the host peer). */
    for (int d = 0; d <= m->ndevices; d++) {
        int header = 0;
        for (size_t i = 0; i < rs->n; i++) {
            const bench_row *r = &rs->v[i];
            int mine = d < m->ndevices ? same_device(r, &m->devices[d]) : 1;
            if (d == m->ndevices)
                for (int e = 0; e < m->ndevices && mine; e++)
                    mine = !same_device(r, &m->devices[e]);
            if (!mine)
                continue;
            if (!header) {
                if (d < m->ndevices)
                    fprintf(f, "\n== %s (%s, %s, driver %s)\n", m->devices[d].name, m->devices[d].backend,
                            m->devices[d].api, m->devices[d].driver);
                else
                    fprintf(f, "\n== %s (%s)\n", r->device, r->backend);
                bench_print_header(f);
                header = 1;
            }
            bench_print_row(f, r);
        }
    }
}

/* -------------------------------------------------------------------- CSV */

#define CSV_COLUMNS                                                                                                 \
    "ffnrt_version,commit,preset,group,op,dir,backend,device,driver,api,dtype,path,shape,size,runs,median_ns,min_ns," \
    "max_ns,spread,host_ns,timing,rate,rate_unit,ratio,ratio_to,note"

static const bench_device_meta *device_of(const bench_row *r, const bench_meta *m)
{
    for (int d = 0; d < m->ndevices; d++)
        if (same_device(r, &m->devices[d]))
            return &m->devices[d];
    return NULL;
}

/* A number for CSV and JSON: non-finite values (which JSON lacks) as 0. */
static double fin(double v)
{
    return isfinite(v) ? v : 0.0;
}

static void csv_string(FILE *f, const char *s, char sep)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
    fputc(sep, f);
}

/* The metric names of the rows, in first-seen order (at most max). */
static int metric_names(const bench_rows *rs, const char **names, int max)
{
    int n = 0;
    for (size_t i = 0; i < rs->n; i++)
        for (int k = 0; k < rs->v[i].nmetrics; k++) {
            const char *name = rs->v[i].metrics[k].name;
            int seen = 0;
            for (int j = 0; j < n && !seen; j++)
                seen = strcmp(names[j], name) == 0;
            if (!seen && n < max)
                names[n++] = name;
        }
    return n;
}

int bench_write_csv(const char *path, const bench_rows *rs, const bench_meta *m)
{
    FILE *f = ffnrt_lab_fopen(path, "w");
    if (!f)
        return -1;
    const char *metrics[64];
    int nmetrics = metric_names(rs, metrics, 64);
    fprintf(f, "%s", CSV_COLUMNS);
    for (int k = 0; k < nmetrics; k++)
        fprintf(f, ",%s", metrics[k]);
    fprintf(f, "\n");
    for (size_t i = 0; i < rs->n; i++) {
        const bench_row *r = &rs->v[i];
        const bench_device_meta *d = device_of(r, m);
        /* Strings quoted (device names and driver strings hold commas). */
        const char *text[13] = {m->version, m->commit, m->preset, r->group, r->op, r->dir, r->backend, r->device,
                                d ? d->driver : "", d ? d->api : "", r->dtype, r->path, r->shape};
        for (int k = 0; k < 13; k++)
            csv_string(f, text[k], ',');
        fprintf(f, "%.17g,%d,%.9g,%.9g,%.9g,%.6f,%.9g,%s,%.6g,%s,%.6f,%s,", fin(r->size), r->runs, fin(r->median_ns),
                fin(r->min_ns), fin(r->max_ns), fin(r->spread), fin(r->host_ns), r->timing, fin(r->rate), r->rate_unit,
                fin(r->ratio), r->ratio_to);
        csv_string(f, r->note, nmetrics ? ',' : '\n');
        for (int k = 0; k < nmetrics; k++) {
            double v = bench_row_get(r, metrics[k]);
            if (isfinite(v))
                fprintf(f, "%.17g", v);
            fputc(k + 1 < nmetrics ? ',' : '\n', f);
        }
    }
    return fclose(f) == 0 ? 0 : -1;
}

/* ------------------------------------------------------------------- JSON */

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_field_s(FILE *f, const char *name, const char *v, int comma)
{
    fprintf(f, "\"%s\": ", name);
    json_string(f, v);
    if (comma)
        fputs(", ", f);
}

static void json_field_n(FILE *f, const char *name, double v, int comma)
{
    fprintf(f, "\"%s\": %.17g%s", name, fin(v), comma ? ", " : "");
}

int bench_write_json(const char *path, const bench_rows *rs, const bench_meta *m)
{
    FILE *f = ffnrt_lab_fopen(path, "w");
    if (!f)
        return -1;
    fputs("{\n  ", f);
    json_field_s(f, "format", m->format, 1);
    json_field_s(f, "ffnrt_version", m->version, 1);
    json_field_s(f, "commit", m->commit, 1);
    fputs("\n  ", f);
    json_field_s(f, "preset", m->preset, 1);
    json_field_s(f, "date", m->date, 1);
    json_field_s(f, "host", m->host, 1);
    json_field_n(f, "wall_s", m->wall_s, 1);
    json_field_n(f, "warmup_s", m->warmup_s, 1);
    json_field_n(f, "measure_s", m->measure_s, 1);
    json_field_n(f, "kernels_built", (double)m->kernels_built, 1);
    json_field_n(f, "kernels_cached", (double)m->kernels_cached, 0);
    fputs(",\n  \"devices\": [", f);
    for (int d = 0; d < m->ndevices; d++) {
        fputs(d ? ",\n    {" : "\n    {", f);
        json_field_s(f, "backend", m->devices[d].backend, 1);
        json_field_s(f, "name", m->devices[d].name, 1);
        json_field_s(f, "driver", m->devices[d].driver, 1);
        json_field_s(f, "api", m->devices[d].api, 0);
        fputc('}', f);
    }
    fputs("\n  ],\n  \"peers\": [", f);
    for (int p = 0; p < m->npeers; p++) {
        fputs(p ? ", " : "", f);
        json_string(f, m->peers[p]);
    }
    fputs("],\n  \"notes\": [", f);
    for (int p = 0; p < m->nnotes; p++) {
        fputs(p ? ", " : "", f);
        json_string(f, m->notes[p]);
    }
    fputs("],\n  \"fields\": {", f);
    for (int p = 0; p < m->nfields; p++) {
        fputs(p ? ",\n    " : "\n    ", f);
        json_field_s(f, m->fields[p].name, m->fields[p].value, 0);
    }
    fputs(m->nfields ? "\n  }" : "}", f);
    fputs(",\n  \"rows\": [", f);
    for (size_t i = 0; i < rs->n; i++) {
        const bench_row *r = &rs->v[i];
        fputs(i ? ",\n    {" : "\n    {", f);
        json_field_s(f, "group", r->group, 1);
        json_field_s(f, "op", r->op, 1);
        json_field_s(f, "dir", r->dir, 1);
        json_field_s(f, "backend", r->backend, 1);
        json_field_s(f, "device", r->device, 1);
        json_field_s(f, "dtype", r->dtype, 1);
        json_field_s(f, "path", r->path, 1);
        json_field_s(f, "shape", r->shape, 1);
        json_field_n(f, "size", r->size, 1);
        json_field_n(f, "runs", r->runs, 1);
        json_field_n(f, "median_ns", r->median_ns, 1);
        json_field_n(f, "min_ns", r->min_ns, 1);
        json_field_n(f, "max_ns", r->max_ns, 1);
        json_field_n(f, "spread", r->spread, 1);
        json_field_n(f, "host_ns", r->host_ns, 1);
        json_field_s(f, "timing", r->timing, 1);
        json_field_n(f, "rate", r->rate, 1);
        json_field_s(f, "rate_unit", r->rate_unit, 1);
        json_field_n(f, "ratio", r->ratio, 1);
        json_field_s(f, "ratio_to", r->ratio_to, 1);
        json_field_s(f, "note", r->note, 0);
        if (r->nmetrics) {
            fputs(", \"metrics\": {", f);
            for (int k = 0; k < r->nmetrics; k++)
                json_field_n(f, r->metrics[k].name, r->metrics[k].value, k + 1 < r->nmetrics);
            fputc('}', f);
        }
        fputc('}', f);
    }
    fputs("\n  ]\n}\n", f);
    return fclose(f) == 0 ? 0 : -1;
}

/* ------------------------------------------------------------------ plots */

/* A file-name-safe tag for device d: backend and its ordinal in the run. */
static void device_tag(const bench_meta *m, int d, char *out, size_t len)
{
    int k = 0;
    for (int e = 0; e < d; e++)
        k += strcmp(m->devices[e].backend, m->devices[d].backend) == 0;
    snprintf(out, len, "%s%d", m->devices[d].backend, k);
}

/* Whether gnuplot runs here: `gnuplot --version` started (PATH searched)
 * and ending well. */
static int gnuplot_present(void)
{
    char *argv[] = {"gnuplot", "--version", NULL}, line[256], how[64];
    ffnrt_lab_child child;
    FILE *out = bench_spawn_reading(argv, NULL, &child);
    if (!out)
        return 0;
    while (fgets(line, sizeof line, out))
        ;
    fclose(out);
    return bench_wait_helper(child, how, sizeof how) == 0;
}

/* The largest element-wise size present. */
static double largest_size(const bench_rows *rs, const char *group)
{
    double s = 0;
    for (size_t i = 0; i < rs->n; i++)
        if (strcmp(rs->v[i].group, group) == 0 && rs->v[i].size > s)
            s = rs->v[i].size;
    return s;
}

static int is_ew(const bench_row *r)
{
    return strcmp(r->group, "elementwise") == 0 || (strcmp(r->group, "limit") == 0 && strcmp(r->op, "copy") == 0);
}

static int cmp_point(const void *a, const void *b)
{
    double x = ((const double *)a)[0], y = ((const double *)b)[0];
    return (x > y) - (x < y);
}

/* Writes dir/NAME.dat and appends the plot commands for one terminal
 * setting to the script. Returns the number of plots written. */
static int plot_throughput(FILE *gp, const char *dir, const bench_rows *rs, const bench_meta *m, int d)
{
    char tag[40], path[1024];
    device_tag(m, d, tag, sizeof tag);
    /* Series: each op's f32 forward (the copy kernel first), by size; the
     * copy alone (a run of FFN rows only) has no size of an op to show. */
    const char *ops[64];
    int nops = 0, any_op = 0;
    for (size_t i = 0; i < rs->n; i++) {
        const bench_row *r = &rs->v[i];
        if (!is_ew(r) || !same_device(r, &m->devices[d]) || strcmp(r->dtype, "f32") != 0 ||
            strcmp(r->dir, "bwd") == 0 || r->rate <= 0)
            continue;
        any_op |= strcmp(r->group, "elementwise") == 0;
        int seen = 0;
        for (int k = 0; k < nops && !seen; k++)
            seen = strcmp(ops[k], r->op) == 0;
        if (!seen && nops < 64)
            ops[nops++] = r->op;
    }
    if (nops == 0 || !any_op)
        return 0;
    snprintf(path, sizeof path, "%s/throughput_%s.dat", dir, tag);
    FILE *f = ffnrt_lab_fopen(path, "w");
    if (!f)
        return 0;
    double (*pts)[2] = malloc(rs->n * sizeof *pts);
    for (int k = 0; k < nops && pts; k++) {
        int np = 0;
        for (size_t i = 0; i < rs->n; i++) {
            const bench_row *r = &rs->v[i];
            if (!is_ew(r) || !same_device(r, &m->devices[d]) || strcmp(r->dtype, "f32") != 0 ||
                strcmp(r->dir, "bwd") == 0 || strcmp(r->op, ops[k]) != 0)
                continue;
            /* The copy only at sizes the ops ran (not the FFN part's copies). */
            int at_op_size = strcmp(r->group, "elementwise") == 0;
            for (size_t j = 0; j < rs->n && !at_op_size; j++)
                at_op_size = strcmp(rs->v[j].group, "elementwise") == 0 && same_device(&rs->v[j], &m->devices[d]) &&
                             rs->v[j].size == r->size;
            if (at_op_size) {
                pts[np][0] = r->size;
                pts[np++][1] = r->rate;
            }
        }
        qsort(pts, (size_t)np, sizeof pts[0], cmp_point);
        fprintf(f, "# %s\n", ops[k]);
        for (int i = 0; i < np; i++)
            fprintf(f, "%.0f %.6g\n", pts[i][0], pts[i][1]);
        fprintf(f, "\n\n");
    }
    free(pts);
    fclose(f);
    fprintf(gp, "set title \"%s (%s): element-wise fp32 forward, GB/s against size\" noenhanced\n",
            m->devices[d].name, m->devices[d].backend);
    fprintf(gp, "set logscale x 2\nset logscale y\nset xlabel \"elements\"\nset ylabel \"GB/s (tensors read + written), log scale\"\n"
                "set key below\nset format x \"%%.0s%%c\"\nset yrange [*:*]\nset style data linespoints\n");
    fprintf(gp, "plot ");
    for (int k = 0; k < nops; k++)
        fprintf(gp, "%s'%s' index %d using 1:2 title \"%s\" noenhanced%s", k ? ", " : "", path, k, ops[k],
                strcmp(ops[k], "copy") == 0 ? " lw 3 lc rgb \"black\" dt 2" : " lw 1.5");
    fprintf(gp, "\n");
    return 1;
}

static int plot_ffn(FILE *gp, const char *dir, const bench_rows *rs, const bench_meta *m, int d)
{
    char tag[40], path[1024];
    device_tag(m, d, tag, sizeof tag);
    char series[32][64];
    int ns = 0;
    double gemm = 0;
    for (size_t i = 0; i < rs->n; i++) {
        const bench_row *r = &rs->v[i];
        if (!same_device(r, &m->devices[d]))
            continue;
        if (strcmp(r->group, "limit") == 0 && strcmp(r->op, "gemm") == 0)
            gemm = r->rate;
        if (strcmp(r->group, "ffn") != 0 || strcmp(r->path, "fused") != 0)
            continue;
        char s[64];
        snprintf(s, sizeof s, "%s %s", r->op, r->dtype);
        int seen = 0;
        for (int k = 0; k < ns && !seen; k++)
            seen = strcmp(series[k], s) == 0;
        if (!seen && ns < 32)
            snprintf(series[ns++], sizeof series[0], "%s", s);
    }
    if (ns == 0)
        return 0;
    snprintf(path, sizeof path, "%s/ffn_%s.dat", dir, tag);
    FILE *f = ffnrt_lab_fopen(path, "w");
    if (!f)
        return 0;
    for (int k = 0; k < ns; k++) {
        fprintf(f, "# %s\n", series[k]);
        for (size_t i = 0; i < rs->n; i++) {
            const bench_row *r = &rs->v[i];
            char s[64];
            snprintf(s, sizeof s, "%s %s", r->op, r->dtype);
            if (same_device(r, &m->devices[d]) && strcmp(r->group, "ffn") == 0 && strcmp(r->path, "fused") == 0 &&
                strcmp(s, series[k]) == 0 && r->median_ns > 0) {
                /* GFLOP/s whatever the row's own rate unit (decode rows report GB/s). */
                double gflops = 0;
                if (sscanf(r->note, "%lf GFLOP/s", &gflops) != 1)
                    gflops = strcmp(r->rate_unit, "GFLOP/s") == 0 ? r->rate : 0;
                fprintf(f, "%.0f %.6g\n", r->size, gflops);
            }
        }
        fprintf(f, "\n\n");
    }
    fclose(f);
    fprintf(gp, "set title \"%s (%s): FFN forward (fused), GFLOP/s against tokens\" noenhanced\n", m->devices[d].name,
            m->devices[d].backend);
    fprintf(gp, "set logscale x 2\nunset logscale y\nset xlabel \"tokens\"\nset ylabel \"GFLOP/s\"\nset key below\n"
                "set format x \"%%g\"\nset yrange [0:*]\nset style data linespoints\n");
    fprintf(gp, "plot ");
    for (int k = 0; k < ns; k++)
        fprintf(gp, "%s'%s' index %d using 1:2 title \"%s\" noenhanced lw 1.5", k ? ", " : "", path, k, series[k]);
    if (gemm > 0)
        fprintf(gp, ", %.6g title \"GEMM probe\" lw 3 lc rgb \"black\" dt 2", gemm);
    fprintf(gp, "\n");
    return 1;
}

/* Fraction of the limit per op: element-wise rows (f32, largest size,
 * forward and backward) against the copy kernel, one cluster per op and a
 * bar per device; then the FFN rows against their limit. */
static int plot_roofline(FILE *gp, const char *dir, const bench_rows *rs, const bench_meta *m, const char *group)
{
    int ffn = strcmp(group, "ffn") == 0;
    double size = ffn ? 0 : largest_size(rs, "elementwise");
    char labels[128][96];
    int nl = 0;
    for (size_t i = 0; i < rs->n; i++) {
        const bench_row *r = &rs->v[i];
        if (strcmp(r->group, group) != 0 || strcmp(r->dtype, "f32") != 0 || r->ratio <= 0)
            continue;
        if (!ffn && r->size != size)
            continue;
        if (ffn && strcmp(r->path, "fused") != 0)
            continue;
        char l[96];
        if (ffn)
            snprintf(l, sizeof l, "%s %s", r->op, strchr(r->shape, 't') ? strchr(r->shape, 't') : r->shape);
        else
            snprintf(l, sizeof l, "%s%s", r->op, strcmp(r->dir, "bwd") == 0 ? "'" : "");
        int seen = 0;
        for (int k = 0; k < nl && !seen; k++)
            seen = strcmp(labels[k], l) == 0;
        if (!seen && nl < 128)
            snprintf(labels[nl++], sizeof labels[0], "%s", l);
    }
    if (nl == 0)
        return 0;
    char path[1024];
    snprintf(path, sizeof path, "%s/roofline_%s.dat", dir, ffn ? "ffn" : "elementwise");
    FILE *f = ffnrt_lab_fopen(path, "w");
    if (!f)
        return 0;
    fprintf(f, "# label");
    for (int d = 0; d < m->ndevices; d++) {
        char tag[40];
        device_tag(m, d, tag, sizeof tag);
        fprintf(f, " %s", tag);
    }
    fprintf(f, "\n");
    for (int k = 0; k < nl; k++) {
        fprintf(f, "\"%s\"", labels[k]);
        for (int d = 0; d < m->ndevices; d++) {
            double v = 0;
            for (size_t i = 0; i < rs->n; i++) {
                const bench_row *r = &rs->v[i];
                char l[96];
                if (ffn)
                    snprintf(l, sizeof l, "%s %s", r->op, strchr(r->shape, 't') ? strchr(r->shape, 't') : r->shape);
                else
                    snprintf(l, sizeof l, "%s%s", r->op, strcmp(r->dir, "bwd") == 0 ? "'" : "");
                if (strcmp(r->group, group) == 0 && same_device(r, &m->devices[d]) && strcmp(r->dtype, "f32") == 0 &&
                    (ffn ? strcmp(r->path, "fused") == 0 : r->size == size) && strcmp(l, labels[k]) == 0)
                    v = r->ratio;
            }
            fprintf(f, " %.4f", v);
        }
        fprintf(f, "\n");
    }
    fclose(f);
    if (ffn)
        fprintf(gp, "set title \"FFN forward, fp32, fused: fraction of the limit\\n(up to 8 tokens: weight GB/s over the "
                    "copy kernel's; more: GFLOP/s over the device's best GEMM rate)\" noenhanced\n");
    else
        fprintf(gp, "set title \"Element-wise fp32 at %.0fM elements: GB/s over the copy kernel's\\n(same device, same "
                    "run; ' marks the backward pass)\" noenhanced\n",
                size / 1048576.0);
    fprintf(gp, "unset logscale\nset style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.8 "
                "border -1\nset boxwidth 0.9\nset xtics rotate by -45 noenhanced\nset xlabel \"\"\nset ylabel \"fraction of "
                "the limit\"\nset yrange [0:*]\nset key below\nset format x \"%%g\"\n");
    fprintf(gp, "plot ");
    for (int d = 0; d < m->ndevices; d++)
        fprintf(gp, "%s'%s' using %d:xtic(1) title \"%s (%s)\" noenhanced", d ? ", " : "", path, d + 2,
                m->devices[d].backend, m->devices[d].name);
    fprintf(gp, ", 1 with lines lw 2 lc rgb \"black\" dt 2 title \"the limit\"\n");
    fprintf(gp, "set xtics norotate\nunset style\n");
    return 1;
}

/* A plot of the scatter kind (bench_report.h): one point per row of the
 * group on device d that has both figures, each its own series (the
 * legend names it), the criteria's limits as dashed lines. */
static double scatter_value(const bench_row *r, const char *name, double scale)
{
    if (strcmp(name, "rate") == 0)
        return r->rate * scale;
    if (strcmp(name, "size") == 0)
        return r->size * scale;
    return bench_row_get(r, name) * scale;
}

int bench_plot_scatter(FILE *gp, const char *dir, const char *file, const bench_rows *rs, const bench_meta *m, int d,
                       const void *arg)
{
    const bench_scatter *sc = arg;
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.dat", dir, file);
    /* The ranges: the points and the limits (gnuplot's autoscale would
     * leave a limit outside the frame). */
    int n = 0;
    double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY}, lim[2] = {sc->x_limit, sc->y_limit};
    for (size_t i = 0; i < rs->n; i++) {
        const bench_row *r = &rs->v[i];
        double v[2] = {scatter_value(r, sc->x, sc->x_scale), scatter_value(r, sc->y, sc->y_scale)};
        if (strcmp(r->group, sc->group) != 0 || !same_device(r, &m->devices[d]) || !isfinite(v[0]) || !isfinite(v[1]))
            continue;
        n++;
        for (int a = 0; a < 2; a++)
            lo[a] = fmin(lo[a], v[a]), hi[a] = fmax(hi[a], v[a]);
    }
    if (n == 0)
        return 0;
    for (int a = 0; a < 2; a++) {
        if (lim[a] > 0)
            lo[a] = fmin(lo[a], lim[a]), hi[a] = fmax(hi[a], lim[a]);
        double span = hi[a] - lo[a] > 0 ? hi[a] - lo[a] : fabs(hi[a]) > 0 ? fabs(hi[a]) : 1;
        lo[a] -= 0.08 * span;
        hi[a] += 0.08 * span;
        if (lo[a] < 0 && hi[a] - 0.08 * span >= 0 && lo[a] + 0.08 * span >= 0)
            lo[a] = 0; /* no negative axis for figures that cannot be negative */
    }
    FILE *f = ffnrt_lab_fopen(path, "w");
    if (!f)
        return 0;
    fprintf(gp, "set title \"%s (%s): %s\" noenhanced\n", m->devices[d].name, m->devices[d].backend, sc->title);
    fprintf(gp, "set xlabel \"%s\" noenhanced\nset ylabel \"%s\" noenhanced\nset key below\n", sc->x_label,
            sc->y_label);
    fprintf(gp, "%s\n%s\n", sc->log_x ? "set logscale x" : "unset logscale x",
            sc->log_y ? "set logscale y" : "unset logscale y");
    if (!sc->log_x)
        fprintf(gp, "set xrange [%.9g:%.9g]\n", lo[0], hi[0]);
    if (!sc->log_y)
        fprintf(gp, "set yrange [%.9g:%.9g]\n", lo[1], hi[1]);
    if (sc->x_limit > 0)
        fprintf(gp, "set arrow from %.9g, graph 0 to %.9g, graph 1 nohead lw 2 lc rgb \"black\" dt 2\n", sc->x_limit,
                sc->x_limit);
    if (sc->y_limit > 0)
        fprintf(gp, "set arrow from graph 0, first %.9g to graph 1, first %.9g nohead lw 2 lc rgb \"black\" dt 2\n",
                sc->y_limit, sc->y_limit);
    fprintf(gp, "plot ");
    /* An op "NAME+VARIANT" takes NAME's colour and VARIANT's point shape,
     * so the variants of one function read as one family. */
    static const int filled[] = {5, 7, 9, 11, 13}, open[] = {4, 6, 8, 10, 12};
    char bases[32][40], variants[8][40];
    int nb = 0, nv = 0, k = 0;
    for (size_t i = 0; i < rs->n; i++) {
        const bench_row *r = &rs->v[i];
        double x = scatter_value(r, sc->x, sc->x_scale), y = scatter_value(r, sc->y, sc->y_scale);
        if (strcmp(r->group, sc->group) != 0 || !same_device(r, &m->devices[d]) || !isfinite(x) || !isfinite(y))
            continue;
        char base[40], *plus;
        snprintf(base, sizeof base, "%s", r->op);
        const char *variant = (plus = strchr(base, '+')) ? r->op + (plus - base) + 1 : "";
        if (plus)
            *plus = 0;
        int b = 0, v = 0;
        while (b < nb && strcmp(bases[b], base) != 0)
            b++;
        if (b == nb && nb < 32)
            snprintf(bases[nb++], sizeof bases[0], "%s", base);
        while (v < nv && strcmp(variants[v], variant) != 0)
            v++;
        if (v == nv && nv < 8)
            snprintf(variants[nv++], sizeof variants[0], "%s", variant);
        fprintf(f, "# %s %s\n%.9g %.9g\n\n\n", r->op, r->dtype, x, y);
        fprintf(gp, "%s'%s' index %d using 1:2 with points pt %d ps 1.8 lc %d title \"%s %s\" noenhanced",
                k ? ", " : "", path, k, (v % 2 ? open : filled)[(v / 2) % 5], b + 1, r->op, r->dtype);
        k++;
    }
    fprintf(gp, "\n");
    fclose(f);
    return 1;
}

static const char *const plot_terms[2][2] = {{"pngcairo size 1100,600 font \"sans,10\"", "png"},
                                             {"svg size 1100,600 dynamic font \"sans,10\"", "svg"}};

static void plot_file(const bench_plot *p, const bench_meta *m, int d, char *out, size_t len)
{
    char tag[40] = "";
    if (p->per_device)
        device_tag(m, d, tag, sizeof tag);
    snprintf(out, len, "%s%s%s", p->name, p->per_device ? "_" : "", tag);
}

int bench_draw_plots(const char *dir, const bench_plot *plots, size_t nplots, const bench_rows *rs,
                     const bench_meta *m, char *why, size_t why_len)
{
    if (!gnuplot_present()) {
        snprintf(why, why_len, "gnuplot not found (Debian: apt-get install gnuplot-nox); no plots");
        return -1;
    }
    char script[1024];
    snprintf(script, sizeof script, "%s/plots.gp", dir);
    FILE *gp = ffnrt_lab_fopen(script, "w");
    if (!gp) {
        snprintf(why, why_len, "cannot write %s", script);
        return -1;
    }
    int drawn = 0;
    for (int t = 0; t < 2; t++) {
        fprintf(gp, "set terminal %s\n", plot_terms[t][0]);
        for (size_t p = 0; p < nplots; p++)
            for (int d = 0; d < (plots[p].per_device ? m->ndevices : 1); d++) {
                char file[200];
                plot_file(&plots[p], m, d, file, sizeof file);
                fprintf(gp, "reset\nset output '%s/%s.%s'\n%s\n", dir, file, plot_terms[t][1],
                        plots[p].grid ? plots[p].grid : "set grid");
                drawn += plots[p].draw(gp, dir, file, rs, m, d, plots[p].arg);
            }
        fprintf(gp, "unset output\n");
    }
    fclose(gp);
    if (drawn == 0) {
        snprintf(why, why_len, "nothing to plot");
        return -1;
    }
    /* gnuplot in a process of its own: its messages on this stderr, what
     * it prints on stdout passed on there too. */
    char *argv[] = {"gnuplot", script, NULL}, line[512], how[96];
    ffnrt_lab_child child;
    FILE *out = bench_spawn_reading(argv, NULL, &child);
    if (!out) {
        snprintf(why, why_len, "cannot start gnuplot (%s)", strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof line, out))
        fputs(line, stderr);
    fclose(out);
    if (bench_wait_helper(child, how, sizeof how) != 0) {
        snprintf(why, why_len, "gnuplot failed on %s (%s; its messages are above)", script, how);
        return -1;
    }
    /* gnuplot leaves an empty file behind for an output it never drew. */
    for (size_t p = 0; p < nplots; p++)
        for (int d = 0; d < (plots[p].per_device ? m->ndevices : 1); d++)
            for (int t = 0; t < 2; t++) {
                char file[200], path[1400];
                plot_file(&plots[p], m, d, file, sizeof file);
                snprintf(path, sizeof path, "%s/%s.%s", dir, file, plot_terms[t][1]);
                FILE *f = ffnrt_lab_fopen(path, "rb");
                int empty = f && fgetc(f) == EOF;
                if (f)
                    fclose(f);
                if (empty)
                    remove(path);
            }
    return 0;
}

/* The bench's own plots, as the table the driver walks. */
static int draw_throughput(FILE *gp, const char *dir, const char *file, const bench_rows *rs, const bench_meta *m,
                           int d, const void *arg)
{
    (void)file, (void)arg;
    return plot_throughput(gp, dir, rs, m, d);
}

static int draw_ffn(FILE *gp, const char *dir, const char *file, const bench_rows *rs, const bench_meta *m, int d,
                    const void *arg)
{
    (void)file, (void)arg;
    return plot_ffn(gp, dir, rs, m, d);
}

static int draw_roofline(FILE *gp, const char *dir, const char *file, const bench_rows *rs, const bench_meta *m,
                         int d, const void *arg)
{
    (void)file, (void)d;
    return plot_roofline(gp, dir, rs, m, arg);
}

int bench_write_plots(const char *dir, const bench_rows *rs, const bench_meta *m, char *why, size_t why_len)
{
    static const bench_plot plots[] = {
        {"throughput", 1, draw_throughput, NULL, NULL},
        {"ffn", 1, draw_ffn, NULL, NULL},
        {"roofline_elementwise", 0, draw_roofline, "elementwise", "set grid ytics"},
        {"roofline_ffn", 0, draw_roofline, "ffn", "set grid ytics"},
    };
    return bench_draw_plots(dir, plots, sizeof plots / sizeof plots[0], rs, m, why, why_len);
}
