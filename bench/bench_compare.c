/* `ffnrt bench --compare OLD.json NEW.json`: what a change did. Rows are
 * matched by their key (bench_row_key); each matched row gets the time
 * ratio new/old of the medians. A row is a regression when new is slower
 * than old by more than the noise both runs measured on that row:
 *   new/old > 1 + max(jitter_old, jitter_new, threshold),
 * jitter being (median - min) / median of a row's runs. Interference on a
 * shared machine only ever slows a run, so the slow tail (max) holds
 * outliers while the fast half says how much the row itself wanders; a
 * single slow outlier cannot hide a regression this way. The same rule,
 * mirrored, marks improvements.
 * Needs no device: it only reads the two files. */
#include "bench_report.h"
#include "args.h"
#include "numbers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ matching */

/* A row's match key and place, sorted by key, then place. */
typedef struct keyed_row {
    char key[400];
    size_t row;
} keyed_row;

static int cmp_keyed(const void *a, const void *b)
{
    const keyed_row *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->row > y->row) - (x->row < y->row);
}

/* The key without the device: a run from another machine names its CPU
 * driver's device after that CPU. */
static void key_without_device(const bench_row *r, char *out, size_t len)
{
    snprintf(out, len, "%s|%s|%s|%s|%s|%s|%s", r->group, r->op, r->dir, r->backend, r->dtype, r->path, r->shape);
}

/* Pairs each old row without a match (match[i] == SIZE_MAX) with the first
 * unused new row of the same key, in order: sorted keys and a cursor per
 * run of equal keys, so n rows take O(n log n), not O(n^2). */
static int match_rows(const bench_rows *old, const bench_rows *new, size_t *match, char *used, int with_device)
{
    keyed_row *k = malloc((new->n + 1) * sizeof *k);
    size_t *cursor = malloc((new->n + 1) * sizeof *cursor);
    keyed_row probe;
    if (!k || !cursor) {
        free(k);
        free(cursor);
        return -1;
    }
    size_t n = 0;
    for (size_t j = 0; j < new->n; j++)
        if (!used[j]) {
            (with_device ? bench_row_key : key_without_device)(&new->v[j], k[n].key, sizeof k[n].key);
            k[n].row = j;
            cursor[n] = n;
            n++;
        }
    qsort(k, n, sizeof *k, cmp_keyed);
    for (size_t i = 0; i < old->n; i++) {
        if (match[i] != SIZE_MAX)
            continue;
        (with_device ? bench_row_key : key_without_device)(&old->v[i], probe.key, sizeof probe.key);
        size_t lo = 0, hi = n; /* the first key >= probe's */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (strcmp(k[mid].key, probe.key) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == n || strcmp(k[lo].key, probe.key) != 0)
            continue;
        size_t at = cursor[lo];
        if (at < n && strcmp(k[at].key, probe.key) == 0) {
            match[i] = k[at].row;
            used[k[at].row] = 1;
            cursor[lo] = at + 1;
        }
    }
    free(k);
    free(cursor);
    return 0;
}

int bench_compare_rows(const char *const names[2], const bench_rows rows[2], const bench_meta meta[2],
                       double threshold, int all, int by_ratio)
{
    printf("old: %s  ffnrt %s (commit %s), preset %s, %s\n", names[0], meta[0].version, meta[0].commit,
           meta[0].preset, meta[0].date);
    printf("new: %s  ffnrt %s (commit %s), preset %s, %s\n", names[1], meta[1].version, meta[1].commit,
           meta[1].preset, meta[1].date);
    printf("%s (> 1: slower); a row is flagged when it moves by more than\n",
           by_ratio ? "new/old is old ratio-to-limit over new (--by ratio)" : "new/old is the ratio of median times");
    printf(
           "max(old jitter, new jitter, %.2f), jitter = (median - min)/median of a row's runs%s\n\n", threshold, all ? "" : "; unchanged rows are hidden (--all shows them)");
    printf("%-8s %-11s %-22s %-5s %-4s %-14s %-15s %10s %10s %7s %7s  %s\n", "backend", "group", "op", "dir", "prec",
           "path", "shape", "old_ms", "new_ms", "new/old", "noise", "verdict");
    size_t matched = 0, regressions = 0, improvements = 0, only_old = 0, only_new = 0, across = 0;
    char *used = calloc(rows[1].n + 1, 1);
    size_t *match = malloc((rows[0].n + 1) * sizeof *match);
    for (size_t i = 0; match && i < rows[0].n; i++)
        match[i] = SIZE_MAX;
    /* Same device first; then rows left over by backend and op, whatever
     * their device is called (another machine's CPU names PoCL's). */
    if (!used || !match || match_rows(&rows[0], &rows[1], match, used, 1) != 0 ||
        match_rows(&rows[0], &rows[1], match, used, 0) != 0) {
        free(used);
        free(match);
        fprintf(stderr, "ffnrt bench --compare: out of memory\n");
        return 2;
    }
    for (size_t i = 0; i < rows[0].n; i++)
        across += match[i] != SIZE_MAX && strcmp(rows[0].v[i].device, rows[1].v[match[i]].device) != 0;
    if (across || strcmp(meta[0].host, meta[1].host) != 0)
        printf("note: these runs come from different machines or devices (hosts \"%s\" and \"%s\"; %zu rows matched "
               "by backend and op across device names, marked *): new/old compares the machines as much as the "
               "code. A baseline is one machine's run: to see what a change did, compare two runs on one machine "
               "(scripts/bench before and after).\n\n",
               meta[0].host, meta[1].host, across);
    for (size_t i = 0; i < rows[0].n; i++) {
        const bench_row *o = &rows[0].v[i], *n = match[i] != SIZE_MAX ? &rows[1].v[match[i]] : NULL;
        if (!n) {
            only_old++;
            if (all)
                printf("%-8s %-11s %-22s %-5s %-4s %-14s %-15s  only in old\n", o->backend, o->group, o->op, o->dir,
                       o->dtype, o->path, o->shape);
            continue;
        }
        if (!(o->median_ns > 0) || !(n->median_ns > 0))
            continue; /* a row without a time (none yet) cannot be compared */
        if (by_ratio && (!(o->ratio > 0) || !(n->ratio > 0) || strcmp(o->group, "limit") == 0))
            continue; /* no limit to normalise by, or the limit itself */
        matched++;
        /* > 1: slower. By ratio: the old ratio to the limit over the new. */
        double ratio = by_ratio ? o->ratio / n->ratio : n->median_ns / o->median_ns;
        double jo = o->median_ns > o->min_ns && o->min_ns > 0 ? (o->median_ns - o->min_ns) / o->median_ns : 0;
        double jn = n->median_ns > n->min_ns && n->min_ns > 0 ? (n->median_ns - n->min_ns) / n->median_ns : 0;
        double noise = fmax(fmax(jo, jn), threshold);
        const char *verdict = "";
        if (ratio > 1.0 + noise) {
            verdict = "REGRESSION";
            regressions++;
        } else if (ratio < 1.0 / (1.0 + noise)) {
            verdict = "faster";
            improvements++;
        }
        if (all || verdict[0])
            printf("%-8s %-11s %-22s %-5s %-4s %-14s %-15s %10.3f %10.3f %7.2f %6.0f%%  %s%s\n", o->backend, o->group,
                   o->op, o->dir[0] ? o->dir : "-", o->dtype[0] ? o->dtype : "-", o->path[0] ? o->path : "-",
                   o->shape, o->median_ns * 1e-6, n->median_ns * 1e-6, ratio, 100.0 * noise, verdict,
                   strcmp(o->device, n->device) != 0 ? " *" : "");
    }
    for (size_t j = 0; j < rows[1].n; j++)
        if (!used[j]) {
            only_new++;
            if (all) {
                const bench_row *n = &rows[1].v[j];
                printf("%-8s %-11s %-22s %-5s %-4s %-14s %-15s  only in new\n", n->backend, n->group, n->op, n->dir,
                       n->dtype, n->path, n->shape);
            }
        }
    printf("\n%zu rows compared: %zu regressions, %zu faster, %zu only in old, %zu only in new\n", matched,
           regressions, improvements, only_old, only_new);
    free(used);
    free(match);
    if (matched == 0) {
        fprintf(stderr, "ffnrt bench --compare: no row of %s matches a row of %s\n", names[0], names[1]);
        return 2;
    }
    return regressions ? 1 : 0;
}

static void compare_usage(void)
{
    fprintf(stderr, "usage: ffnrt bench --compare [--threshold F] [--all] [--by time|ratio] [--] OLD.json NEW.json\n"
                    "  --by ratio compares each row's ratio to its same-run limit instead of its time: a machine\n"
                    "  that is busier in one run slows the limits too, so ratios keep only what the change did\n"
                    "  exit status 0: no regression, 1: regressions (flagged REGRESSION), 2: bad input\n");
}

int bench_pair_args_read(int argc, char **argv, const char *me, int takes_by, bench_pair_args *out)
{
    bench_pair_args p = {{NULL, NULL}, 0.05, 0, 0};
    int nfiles = 0;
    cli_args args;
    cli_args_init(&args, argc, argv);
    const char *a, *v;
    cli_arg_kind kind;
    while ((kind = cli_args_next(&args, &a)) != CLI_END) {
        if (kind == CLI_OPTION && strcmp(a, "--threshold") == 0 && (v = cli_args_value(&args))) {
            if (cli_parse_double(v, 0, 1e6, &p.threshold) != 0) {
                fprintf(stderr, "%s: --threshold %s: a finite number >= 0\n", me, v);
                return -1;
            }
        } else if (takes_by && kind == CLI_OPTION && strcmp(a, "--by") == 0 && (v = cli_args_value(&args)) &&
                   (strcmp(v, "time") == 0 || strcmp(v, "ratio") == 0)) {
            p.by_ratio = strcmp(v, "ratio") == 0;
        } else if (kind == CLI_OPTION && strcmp(a, "--all") == 0) {
            p.all = 1;
        } else if (kind == CLI_OPERAND && nfiles < 2) {
            p.files[nfiles++] = a;
        } else {
            return -2;
        }
    }
    if (nfiles != 2)
        return -2;
    *out = p;
    return 0;
}

int bench_compare_main(int argc, char **argv)
{
    bench_pair_args p;
    if (bench_pair_args_read(argc, argv, "ffnrt bench --compare", 1, &p) != 0) {
        compare_usage();
        return 2;
    }
    bench_rows rows[2] = {{0}, {0}};
    bench_meta meta[2];
    char err[512];
    for (int k = 0; k < 2; k++)
        if (bench_read_json(p.files[k], &rows[k], &meta[k], err, sizeof err) != 0) {
            fprintf(stderr, "ffnrt bench --compare: %s\n", err);
            bench_rows_free(&rows[0]);
            bench_rows_free(&rows[1]);
            return 2;
        }
    int rc = bench_compare_rows(p.files, rows, meta, p.threshold, p.all, p.by_ratio);
    bench_rows_free(&rows[0]);
    bench_rows_free(&rows[1]);
    return rc;
}
