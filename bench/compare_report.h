/* The report of `ffnrt compare`, written and read with the bench's own
 * outputs (bench_report.h): the library's results become bench rows (group
 * "compare": one a candidate and token count, with its times; group
 * "candidate": one a candidate, with its accounting, stability figures and
 * verdicts) and the run's fields (the widths, the sealed criteria with
 * their SHA-256 and time). */
#ifndef FFNRT_COMPARE_REPORT_H
#define FFNRT_COMPARE_REPORT_H

#include "bench_report.h"
#include "ffnrt_compare.h"

#define COMPARE_REPORT "ffnrt compare"

/* The rows of one device's comparison (after ffnrt_compare_run). */
int compare_report_add(bench_rows *rows, bench_meta *meta, const ffnrt_comparison *cmp,
                       const ffnrt_device_info *info);
/* Each compare row's ratio: its throughput over dense-relu's at the same
 * device, format, biases and token count (the seed's stable reference). */
void compare_report_ratios(bench_rows *rows);

/* The table for people: one line a candidate, per device and format. */
void compare_print_table(FILE *f, const bench_rows *rs, const bench_meta *m);
/* Throughput against parameters and latency against memory, per device,
 * with the criteria's limits as dashed lines. */
int compare_write_plots(const char *dir, const bench_rows *rs, const bench_meta *m, char *why, size_t why_len);
/* Table, JSON, CSV and plots into dir (compare.json, compare.csv,
 * table.txt); 0, or -1 with a message on stderr. */
int compare_write_all(const char *dir, const bench_rows *rs, const bench_meta *m, int plots);

/* Reads a report: a bench JSON file that is an ffnrt compare report whose
 * criteria still hash as recorded and were fixed before its runs. 0, or
 * -1 with the reason in err. */
int compare_read_report(const char *path, bench_rows *rs, bench_meta *m, char *err, size_t err_len);

/* `ffnrt compare --compare OLD.json NEW.json [--threshold F] [--all]`:
 * the criteria of both, the bench's time comparison of the measurements,
 * and every verdict that changed. 0: no regression and no verdict lost;
 * 1: regressions or a candidate that passed and now fails; 2: bad input. */
int compare_compare_main(int argc, char **argv);

#endif
