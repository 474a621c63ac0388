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

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void compare_usage(void)
{
    fprintf(stderr, "usage: ffnrt bench --compare OLD.json NEW.json [--threshold F] [--all] [--by time|ratio]\n"
                    "  --by ratio compares each row's ratio to its same-run limit instead of its time: a machine\n"
                    "  that is busier in one run slows the limits too, so ratios keep only what the change did\n"
                    "  exit status 0: no regression, 1: regressions (flagged REGRESSION), 2: bad input\n");
}

int bench_compare_main(int argc, char **argv)
{
    const char *files[2] = {NULL, NULL};
    double threshold = 0.05;
    int all = 0, nfiles = 0, by_ratio = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--threshold") == 0 && i + 1 < argc) {
            char *e;
            threshold = strtod(argv[++i], &e);
            if (*e || !(threshold >= 0)) {
                compare_usage();
                return 2;
            }
        } else if (strcmp(argv[i], "--by") == 0 && i + 1 < argc &&
                   (strcmp(argv[i + 1], "time") == 0 || strcmp(argv[i + 1], "ratio") == 0)) {
            by_ratio = strcmp(argv[++i], "ratio") == 0;
        } else if (strcmp(argv[i], "--all") == 0) {
            all = 1;
        } else if (argv[i][0] != '-' && nfiles < 2) {
            files[nfiles++] = argv[i];
        } else {
            compare_usage();
            return 2;
        }
    }
    if (nfiles != 2) {
        compare_usage();
        return 2;
    }
    bench_rows rows[2] = {{0}, {0}};
    bench_meta meta[2];
    char err[512];
    for (int k = 0; k < 2; k++)
        if (bench_read_json(files[k], &rows[k], &meta[k], err, sizeof err) != 0) {
            fprintf(stderr, "ffnrt bench --compare: %s\n", err);
            bench_rows_free(&rows[0]);
            bench_rows_free(&rows[1]);
            return 2;
        }
    printf("old: %s  ffnrt %s (commit %s), preset %s, %s\n", files[0], meta[0].version, meta[0].commit,
           meta[0].preset, meta[0].date);
    printf("new: %s  ffnrt %s (commit %s), preset %s, %s\n", files[1], meta[1].version, meta[1].commit,
           meta[1].preset, meta[1].date);
    printf("%s (> 1: slower); a row is flagged when it moves by more than\n",
           by_ratio ? "new/old is old ratio-to-limit over new (--by ratio)" : "new/old is the ratio of median times");
    printf(
           "max(old jitter, new jitter, %.2f), jitter = (median - min)/median of a row's runs%s\n\n", threshold, all ? "" : "; unchanged rows are hidden (--all shows them)");
    printf("%-8s %-11s %-22s %-3s %-4s %-7s %-15s %10s %10s %7s %7s  %s\n", "backend", "group", "op", "dir", "prec",
           "path", "shape", "old_ms", "new_ms", "new/old", "noise", "verdict");
    size_t matched = 0, regressions = 0, improvements = 0, only_old = 0, only_new = 0;
    char *used = calloc(rows[1].n + 1, 1);
    if (!used) {
        bench_rows_free(&rows[0]);
        bench_rows_free(&rows[1]);
        return 2;
    }
    for (size_t i = 0; i < rows[0].n; i++) {
        const bench_row *o = &rows[0].v[i], *n = NULL;
        char ko[400], kn[400];
        bench_row_key(o, ko, sizeof ko);
        for (size_t j = 0; j < rows[1].n && !n; j++) {
            if (used[j])
                continue;
            bench_row_key(&rows[1].v[j], kn, sizeof kn);
            if (strcmp(ko, kn) == 0) {
                n = &rows[1].v[j];
                used[j] = 1;
            }
        }
        if (!n) {
            only_old++;
            if (all)
                printf("%-8s %-11s %-22s %-3s %-4s %-7s %-15s  only in old\n", o->backend, o->group, o->op, o->dir,
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
            printf("%-8s %-11s %-22s %-3s %-4s %-7s %-15s %10.3f %10.3f %7.2f %6.0f%%  %s\n", o->backend, o->group,
                   o->op, o->dir[0] ? o->dir : "-", o->dtype[0] ? o->dtype : "-", o->path[0] ? o->path : "-",
                   o->shape, o->median_ns * 1e-6, n->median_ns * 1e-6, ratio, 100.0 * noise, verdict);
    }
    for (size_t j = 0; j < rows[1].n; j++)
        if (!used[j]) {
            only_new++;
            if (all) {
                const bench_row *n = &rows[1].v[j];
                printf("%-8s %-11s %-22s %-3s %-4s %-7s %-15s  only in new\n", n->backend, n->group, n->op, n->dir,
                       n->dtype, n->path, n->shape);
            }
        }
    printf("\n%zu rows compared: %zu regressions, %zu faster, %zu only in old, %zu only in new\n", matched,
           regressions, improvements, only_old, only_new);
    free(used);
    bench_rows_free(&rows[0]);
    bench_rows_free(&rows[1]);
    if (matched == 0) {
        fprintf(stderr, "ffnrt bench --compare: no row of %s matches a row of %s\n", files[0], files[1]);
        return 2;
    }
    return regressions ? 1 : 0;
}
