/* The report of `ffnrt compare` (compare_report.h): rows, table, plots,
 * reading back and comparing two reports, all through the bench's row
 * model and outputs. */
#include "compare_report.h"
#include "ffnrt_lab.h" /* ffnrt_lab_fopen: UTF-8 paths on every OS */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- rows */

static const char *const verdict_metric[FFNRT_CRITERION_COUNT] = {"v_latency", "v_memory", "v_throughput",
                                                                   "v_finite", "v_dead", "v_quality", "v_step",
                                                                   "v_train_memory"};

static void identity(bench_row *r, const char *group, const ffnrt_compare_result *res, const ffnrt_device_info *info)
{
    BENCH_SET(r->group, group);
    BENCH_SET(r->backend, ffnrt_backend_name(info->backend));
    BENCH_SET(r->device, info->name);
    snprintf(r->op, sizeof r->op, "%s%s", ffnrt_compare_candidate_name(res->candidate), res->bias ? "+bias" : "");
    BENCH_SET(r->dir, "fwd");
    BENCH_SET(r->dtype, ffnrt_weight_format_name(res->format));
    /* The dispatcher chooses the path (a metric and the note say which);
     * "auto" keeps a row's identity when its choice changes. */
    BENCH_SET(r->path, "auto");
}

static void add_note(bench_meta *meta, const ffnrt_device_info *info, const ffnrt_compare_result *res, const char *what)
{
    char text[320];
    snprintf(text, sizeof text, "%s %s%s %s: %.220s", ffnrt_backend_name(info->backend),
             ffnrt_compare_candidate_name(res->candidate), res->bias ? "+bias" : "",
             ffnrt_weight_format_name(res->format), what);
    bench_meta_keep_note(meta, text);
}

static int add_point_row(bench_rows *rows, const ffnrt_compare_result *res, const ffnrt_compare_point *p,
                         const ffnrt_device_info *info)
{
    bench_row *r = bench_rows_push(rows);
    if (!r)
        return -1;
    identity(r, "compare", res, info);
    snprintf(r->shape, sizeof r->shape, "%lldx%lld t%lld", (long long)res->desc.d_model, (long long)res->desc.hidden,
             (long long)p->tokens);
    r->size = (double)p->tokens;
    const ffnrt_compare_timing *t = &p->time;
    r->runs = (int)t->runs;
    r->median_ns = 1e6 * t->median_ms;
    r->min_ns = 1e6 * t->min_ms;
    r->max_ns = 1e6 * t->max_ms;
    r->spread = t->median_ms > 0 ? (t->max_ms - t->min_ms) / t->median_ms : 0;
    r->host_ns = r->median_ns;
    BENCH_SET(r->timing, "host");
    r->rate = p->tokens_per_s;
    BENCH_SET(r->rate_unit, "tok/s");
    BENCH_SET(r->note, t->runs ? (p->path == FFNRT_FFN_PATH_UNFUSED ? "unfused" : "fused") : "no call succeeded");
    bench_row_metric(r, "tokens", (double)p->tokens);
    bench_row_metric(r, "hidden", (double)res->desc.hidden);
    bench_row_metric(r, "params", (double)res->parameters);
    if (t->runs) {
        bench_row_metric(r, "mean_ms", t->mean_ms);
        bench_row_metric(r, "stdev_ms", t->stdev_ms);
        if (t->device_mean_ms > 0)
            bench_row_metric(r, "device_ms", t->device_mean_ms);
        bench_row_metric(r, "unfused", p->path == FFNRT_FFN_PATH_UNFUSED);
        bench_row_metric(r, "flops", (double)p->flops);
        bench_row_metric(r, "bytes_moved", (double)p->bytes_moved);
        bench_row_metric(r, "flops_per_token", (double)p->flops / (double)p->tokens);
        bench_row_metric(r, "bytes_per_token", (double)p->bytes_moved / (double)p->tokens);
        bench_row_metric(r, "peak_bytes", (double)p->peak_bytes);
        bench_row_metric(r, "peak_bytes_model", (double)p->peak_bytes_model);
    }
    bench_row_metric(r, "failed", t->failed);
    return 0;
}

/* A trained candidate's figures on its row, and its validation curve as
 * rows of group "curve" (one an evaluation: step, relative MSE). */
static int add_training(bench_rows *rows, bench_row *r, const ffnrt_compare_result *res, const ffnrt_device_info *info)
{
    bench_row_metric(r, "train_runs", res->train_runs);
    bench_row_metric(r, "train_failed", res->train_failed);
    bench_row_metric(r, "train_steps", res->train_steps_run);
    bench_row_metric(r, "val_rel_mse", res->val_rel_mse_mean);
    bench_row_metric(r, "val_rel_mse_sd", res->val_rel_mse_stdev);
    bench_row_metric(r, "val_rel_mse_min", res->val_rel_mse_min);
    bench_row_metric(r, "val_rel_mse_max", res->val_rel_mse_max);
    bench_row_metric(r, "step_ms", res->step_ms);
    bench_row_metric(r, "train_tokens_per_s", res->train_tokens_per_s);
    bench_row_metric(r, "train_mib", (double)res->train_bytes / 1048576.0);
    bench_row_metric(r, "train_dead", res->train_dead_fraction);
    bench_row_metric(r, "grad_norm_max", res->grad_norm_max);
    bench_row_metric(r, "skipped_steps", (double)res->skipped_steps);
    for (uint32_t k = 0; k < res->curve_points; k++) {
        bench_row *c = bench_rows_push(rows);
        if (!c)
            return -1;
        identity(c, "curve", res, info);
        BENCH_SET(c->dir, "train");
        snprintf(c->shape, sizeof c->shape, "s%u", res->curve_step[k]);
        c->size = (double)res->curve_step[k];
        bench_row_metric(c, "step", res->curve_step[k]);
        bench_row_metric(c, "val_rel_mse", res->curve[k]);
    }
    return 0;
}

int compare_report_add(bench_rows *rows, bench_meta *meta, const ffnrt_comparison *cmp, const ffnrt_device_info *info)
{
    ffnrt_compare_criteria c;
    const char *text, *sha, *sealed_at;
    if (ffnrt_compare_sealed(cmp, &c, &text, &sha, &sealed_at) != FFNRT_OK)
        return -1;
    const char *had = bench_meta_field(meta, "criteria_sha256");
    if (had && strcmp(had, sha) != 0) {
        fprintf(stderr, "ffnrt compare: %s ran under other criteria (sha256 %s, the report's %s)\n", info->name, sha,
                had);
        return -1;
    }
    bench_meta_set_field(meta, "criteria", text);
    bench_meta_set_field(meta, "criteria_sha256", sha);
    char sealed[1200];
    const char *before = bench_meta_field(meta, "criteria_sealed");
    snprintf(sealed, sizeof sealed, "%s%s%s %s", before ? before : "", before ? "; " : "",
             ffnrt_backend_name(info->backend), sealed_at);
    bench_meta_set_field(meta, "criteria_sealed", sealed);
    for (size_t i = 0; i < ffnrt_compare_result_count(cmp); i++) {
        const ffnrt_compare_result *res = ffnrt_compare_result_get(cmp, i);
        int64_t largest = res->npoints ? res->points[res->npoints - 1].tokens : 0;
        for (size_t k = 0; k < res->npoints; k++)
            if (add_point_row(rows, res, &res->points[k], info) != 0)
                return -1;
        bench_row *r = bench_rows_push(rows);
        if (!r)
            return -1;
        identity(r, "candidate", res, info);
        snprintf(r->shape, sizeof r->shape, "%lldx%lld", (long long)res->desc.d_model, (long long)res->desc.hidden);
        r->size = (double)res->parameters;
        bench_row_metric(r, "d_model", (double)res->desc.d_model);
        bench_row_metric(r, "hidden", (double)res->desc.hidden);
        bench_row_metric(r, "params", (double)res->parameters);
        bench_row_metric(r, "params_nobias", (double)res->parameters_without_bias);
        bench_row_metric(r, "params_bias", (double)res->parameters_with_bias);
        bench_row_metric(r, "weight_bytes", (double)res->weight_bytes);
        const ffnrt_compare_point *p1 = ffnrt_compare_result_point(res, 1);
        const ffnrt_compare_point *pm = ffnrt_compare_result_point(res, c.memory_tokens ? c.memory_tokens : largest);
        const ffnrt_compare_point *pt = ffnrt_compare_result_point(res, c.throughput_tokens ? c.throughput_tokens : largest);
        uint32_t failed = 0;
        for (size_t k = 0; k < res->npoints; k++)
            failed += res->points[k].time.failed;
        if (p1 && p1->time.runs) {
            bench_row_metric(r, "flops_per_token", (double)p1->flops);
            bench_row_metric(r, "bytes_per_token", (double)p1->bytes_moved);
            bench_row_metric(r, "latency_ms", p1->time.mean_ms);
            bench_row_metric(r, "latency_sd_ms", p1->time.stdev_ms);
        }
        if (pm && pm->peak_bytes) {
            bench_row_metric(r, "memory_mib", (double)pm->peak_bytes / 1048576.0);
            bench_row_metric(r, "memory_tokens", (double)pm->tokens);
        }
        if (pt && pt->time.runs) {
            r->rate = pt->tokens_per_s;
            BENCH_SET(r->rate_unit, "tok/s");
            bench_row_metric(r, "throughput", pt->tokens_per_s);
            bench_row_metric(r, "throughput_tokens", (double)pt->tokens);
        }
        bench_row_metric(r, "failed", failed);
        bench_row_metric(r, "stability", res->stability_measured);
        bench_row_metric(r, "seeds", res->seeds);
        if (res->stability_measured) {
            bench_row_metric(r, "nonfinite", (double)res->nonfinite_outputs);
            bench_row_metric(r, "nonfinite_hidden", (double)res->nonfinite_hidden);
            bench_row_metric(r, "dead_max", res->dead_fraction_max);
            bench_row_metric(r, "dead_mean", res->dead_fraction_mean);
        } else {
            /* one note for all when the reason is the same */
            char text[320];
            snprintf(text, sizeof text, "%s: stability %s", ffnrt_backend_name(info->backend), res->stability_note);
            bench_meta_keep_note(meta, text);
        }
        if (res->train_measured && add_training(rows, r, res, info) != 0)
            return -1;
        r = &rows->v[rows->n - 1 - (res->train_measured ? res->curve_points : 0)]; /* the pushes may move it */
        if (res->train_note[0])
            add_note(meta, info, res, res->train_note);
        char failing[64] = "";
        for (int k = 0; k < FFNRT_CRITERION_COUNT; k++) {
            if (res->verdict[k] == FFNRT_VERDICT_NONE)
                continue;
            bench_row_metric(r, verdict_metric[k], res->verdict[k]);
            if (res->verdict[k] != FFNRT_VERDICT_PASS)
                snprintf(failing + strlen(failing), sizeof failing - strlen(failing), "%s%s%s",
                         failing[0] ? "," : "", ffnrt_compare_criterion_name((ffnrt_compare_criterion)k),
                         res->verdict[k] == FFNRT_VERDICT_UNMEASURED ? "?" : "");
        }
        bench_row_metric(r, "pass", res->pass);
        if (res->pass) {
            BENCH_SET(r->note, "pass");
        } else if (!failing[0]) {
            BENCH_SET(r->note, "FAIL: failed runs");
        } else {
            int n = snprintf(r->note, sizeof r->note, "FAIL %s%s", failing, failed || res->status ? " +failed runs" : "");
            if (n >= (int)sizeof r->note) /* a long list cut, and said to be */
                memcpy(r->note + sizeof r->note - 4, "...", 4);
        }
        if (res->status != FFNRT_OK || res->message[0])
            add_note(meta, info, res, res->message);
    }
    return 0;
}

void compare_report_ratios(bench_rows *rows)
{
    for (size_t i = 0; i < rows->n; i++) {
        bench_row *r = &rows->v[i];
        if (strcmp(r->group, "compare") != 0)
            continue;
        const char *base = strncmp(r->op + strcspn(r->op, "+"), "+bias", 5) == 0 ? "dense-relu+bias" : "dense-relu";
        for (size_t j = 0; j < rows->n; j++) {
            const bench_row *b = &rows->v[j];
            if (strcmp(b->group, "compare") == 0 && strcmp(b->op, base) == 0 && strcmp(b->backend, r->backend) == 0 &&
                strcmp(b->device, r->device) == 0 && strcmp(b->dtype, r->dtype) == 0 && b->size == r->size &&
                b->rate > 0) {
                r->ratio = r->rate / b->rate;
                BENCH_SET(r->ratio_to, "dense-relu");
            }
        }
    }
}

/* -------------------------------------------------------------- table */

/* 1536 -> "1.5Ki", for counts (k = 1000) or bytes (k = 1024). */
static const char *human(char *buf, size_t len, double v, double k)
{
    static const char *const si[] = {"", "k", "M", "G", "T"}, *const bin[] = {"", "Ki", "Mi", "Gi", "Ti"};
    int e = 0;
    if (!isfinite(v))
        return snprintf(buf, len, "-"), buf;
    while (fabs(v) >= k && e < 4)
        v /= k, e++;
    snprintf(buf, len, e == 0 ? "%.0f" : v < 10 ? "%.2f%s" : v < 100 ? "%.1f%s" : "%.0f%s", v,
             k == 1024 ? bin[e] : si[e]);
    return buf;
}

static const bench_row *find_row(const bench_rows *rs, const char *group, const bench_row *like, double size)
{
    for (size_t i = 0; i < rs->n; i++) {
        const bench_row *r = &rs->v[i];
        if (strcmp(r->group, group) == 0 && strcmp(r->backend, like->backend) == 0 &&
            strcmp(r->device, like->device) == 0 && strcmp(r->op, like->op) == 0 &&
            strcmp(r->dtype, like->dtype) == 0 && (size < 0 || r->size == size))
            return r;
    }
    return NULL;
}

/* The token counts of the compare rows, ascending. */
static int token_counts(const bench_rows *rs, double *t, int max)
{
    int n = 0;
    for (size_t i = 0; i < rs->n; i++) {
        if (strcmp(rs->v[i].group, "compare") != 0)
            continue;
        int seen = 0;
        for (int k = 0; k < n && !seen; k++)
            seen = t[k] == rs->v[i].size;
        if (!seen && n < max)
            t[n++] = rs->v[i].size;
    }
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (t[b] < t[a]) {
                double x = t[a];
                t[a] = t[b];
                t[b] = x;
            }
    return n;
}

static void print_criteria(FILE *f, const bench_meta *m)
{
    const char *text = bench_meta_field(m, "criteria");
    fprintf(f, "criteria, fixed at %s before any run (sha256 %s; sealed by each device's run: %s):\n",
            bench_meta_field(m, "criteria_fixed_at") ? bench_meta_field(m, "criteria_fixed_at") : "?",
            bench_meta_field(m, "criteria_sha256") ? bench_meta_field(m, "criteria_sha256") : "?",
            bench_meta_field(m, "criteria_sealed") ? bench_meta_field(m, "criteria_sealed") : "?");
    for (const char *p = text ? text : ""; *p;) {
        size_t n = strcspn(p, "\n");
        fprintf(f, "    %.*s\n", (int)n, p);
        p += n + (p[n] == '\n');
    }
}

/* The training table, when any candidate trained. */
static void print_training(FILE *f, const bench_rows *rs, const bench_meta *m)
{
    int any = 0;
    for (size_t i = 0; i < rs->n && !any; i++)
        any = strcmp(rs->v[i].group, "candidate") == 0 && isfinite(bench_row_get(&rs->v[i], "train_runs"));
    if (!any)
        return;
    fprintf(f, "\ntraining (the seed's protocol: each candidate learns the fixed teacher over the criteria's seeds):\n");
    for (int d = 0; d < m->ndevices; d++) {
        const bench_device_meta *dm = &m->devices[d];
        fprintf(f, "== %s (%s)\n%-20s %-4s %30s %6s %6s %9s %10s %9s %6s %9s %5s\n", dm->name, dm->backend, "candidate",
                "prec", "val rel MSE mean±sd [min,max]", "failed", "steps", "step ms", "tok/s", "MiB", "dead",
                "|g| max", "skip");
        for (size_t i = 0; i < rs->n; i++) {
            const bench_row *c = &rs->v[i];
            if (strcmp(c->group, "candidate") != 0 || strcmp(c->backend, dm->backend) != 0 ||
                strcmp(c->device, dm->name) != 0 || !isfinite(bench_row_get(c, "train_runs")))
                continue;
            char q[64];
            snprintf(q, sizeof q, "%.4g±%.2g [%.4g,%.4g]", bench_row_get(c, "val_rel_mse"),
                     bench_row_get(c, "val_rel_mse_sd"), bench_row_get(c, "val_rel_mse_min"),
                     bench_row_get(c, "val_rel_mse_max"));
            fprintf(f, "%-20s %-4s %30s %3.0f/%-2.0f %6.0f %9.3f %10.0f %9.2f %6.3f %9.3g %5.0f\n", c->op, c->dtype, q,
                    bench_row_get(c, "train_failed"), bench_row_get(c, "train_runs"), bench_row_get(c, "train_steps"),
                    bench_row_get(c, "step_ms"), bench_row_get(c, "train_tokens_per_s"), bench_row_get(c, "train_mib"),
                    bench_row_get(c, "train_dead"), bench_row_get(c, "grad_norm_max"),
                    bench_row_get(c, "skipped_steps"));
        }
    }
    fprintf(f, "val rel MSE: the validation MSE over the teacher's mean square after training, over the runs that "
               "finished; failed: runs that did not (an error, a non-finite loss); step: training forward, MSE, "
               "backward and AdamW, median host time; MiB: device memory a run holds; dead: hidden features dead on "
               "the validation inputs after training, worst run; |g| max: the largest global gradient norm; skip: "
               "steps skipped for non-finite gradients\n");
}

void compare_print_table(FILE *f, const bench_rows *rs, const bench_meta *m)
{
    fprintf(f, "\nffnrt %s (commit %s) compare, %s on %s, %.1f s\n", m->version, m->commit, m->date, m->host,
            m->wall_s);
    static const char *const spec_fields[] = {"shape", "timing", "weights", "stability", "time"};
    if (bench_meta_field(m, "plan"))
        fprintf(f, "plan, fixed with the criteria before any device ran:\n%s", bench_meta_field(m, "plan"));
    for (size_t i = 0; i < sizeof spec_fields / sizeof spec_fields[0]; i++)
        if (bench_meta_field(m, spec_fields[i]))
            fprintf(f, "%s: %s\n", spec_fields[i], bench_meta_field(m, spec_fields[i]));
    print_criteria(f, m);
    for (int p = 0; p < m->nnotes; p++)
        fprintf(f, "note %s\n", m->notes[p]);
    double tok[FFNRT_COMPARE_MAX_TOKENS];
    int nt = token_counts(rs, tok, FFNRT_COMPARE_MAX_TOKENS);
    for (int d = 0; d < m->ndevices; d++) {
        const bench_device_meta *dm = &m->devices[d];
        fprintf(f, "\n== %s (%s, %s, driver %s: the compiler)\n", dm->name, dm->backend, dm->api, dm->driver);
        fprintf(f, "%-20s %-4s %6s %7s %7s %8s %8s %8s %-5s %16s", "candidate", "prec", "width", "params", "+bias",
                "FLOP/tok", "B/tok@1", "peak mem", "path", "latency@1 ms");
        for (int k = 0; k < nt; k++)
            if (tok[k] > 1) {
                char label[24];
                snprintf(label, sizeof label, "tok/s@%.0f", tok[k]);
                fprintf(f, " %9s", label);
            }
        fprintf(f, "  fail  stability          verdict\n");
        for (size_t i = 0; i < rs->n; i++) {
            const bench_row *c = &rs->v[i];
            if (strcmp(c->group, "candidate") != 0 || strcmp(c->backend, dm->backend) != 0 ||
                strcmp(c->device, dm->name) != 0)
                continue;
            char b1[16], b2[16], b3[16], b4[16], b5[16], lat[40] = "-", paths[12] = "";
            double peak = bench_row_get(c, "memory_mib");
            for (int k = 0; k < nt && k < 8; k++) {
                const bench_row *p = find_row(rs, "compare", c, tok[k]);
                double unf = p ? bench_row_get(p, "unfused") : NAN;
                paths[k] = isnan(unf) ? '-' : unf > 0 ? 'U' : 'F';
                paths[k + 1] = 0;
            }
            if (isfinite(bench_row_get(c, "latency_ms")))
                snprintf(lat, sizeof lat, "%.4f±%.4f", bench_row_get(c, "latency_ms"), bench_row_get(c, "latency_sd_ms"));
            fprintf(f, "%-20s %-4s %6.0f %7s %7s %8s %8s %8s %-5s %16s", c->op, c->dtype, bench_row_get(c, "hidden"),
                    human(b1, sizeof b1, bench_row_get(c, "params_nobias"), 1000),
                    human(b2, sizeof b2, bench_row_get(c, "params_bias"), 1000),
                    human(b3, sizeof b3, bench_row_get(c, "flops_per_token"), 1000),
                    human(b4, sizeof b4, bench_row_get(c, "bytes_per_token"), 1024),
                    human(b5, sizeof b5, peak * 1048576.0, 1024), paths, lat);
            for (int k = 0; k < nt; k++) {
                if (tok[k] <= 1)
                    continue;
                const bench_row *p = find_row(rs, "compare", c, tok[k]);
                char v[16];
                fprintf(f, " %9s", p && p->rate > 0 ? human(v, sizeof v, p->rate, 1000) : "-");
            }
            char stab[24] = "unmeasured";
            if (bench_row_get(c, "stability") > 0)
                snprintf(stab, sizeof stab, "nf %.0f dead %.3f", bench_row_get(c, "nonfinite"),
                         bench_row_get(c, "dead_max"));
            fprintf(f, "  %4.0f  %-18s %s\n", bench_row_get(c, "failed"), stab, c->note);
        }
    }
    print_training(f, rs, m);
    fprintf(f, "\ncolumns: width m or g; params without and with biases; FLOP and bytes moved per token at 1 token "
               "(ffnrt_ffn_cost_of on the chosen path); peak mem: measured device memory at the memory criterion's "
               "token count (else the largest); path per token count (");
    for (int k = 0; k < nt; k++)
        fprintf(f, "%s%.0f", k ? "," : "", tok[k]);
    fprintf(f, "): F fused, U unfused, as the dispatcher chose; latency: mean ± sd of a 1-token call, host end to end; "
               "then tokens/s at");
    for (int k = 0; k < nt; k++)
        if (tok[k] > 1)
            fprintf(f, " t%.0f", tok[k]);
    fprintf(f, "; fail: failed calls; stability: non-finite outputs and the worst dead fraction over the seeds; "
               "verdict: pass when every criterion set passes and no call failed (? = could not be measured)\n");
}

/* -------------------------------------------------------------- plots */

/* The validation curves: one line a candidate (op and format), the mean
 * over the runs at each evaluation, log scale; dashed: the criterion. */
static int plot_curves(FILE *gp, const char *dir, const char *file, const bench_rows *rs, const bench_meta *m, int d,
                       const void *arg)
{
    const ffnrt_compare_criteria *c = arg;
    const bench_device_meta *dm = &m->devices[d];
    char path[1200], series[32][48];
    int ns = 0;
    for (size_t i = 0; i < rs->n; i++) {
        const bench_row *r = &rs->v[i];
        if (strcmp(r->group, "curve") != 0 || strcmp(r->backend, dm->backend) != 0 || strcmp(r->device, dm->name) != 0)
            continue;
        char name[48];
        snprintf(name, sizeof name, "%s %s", r->op, r->dtype);
        int k = 0;
        while (k < ns && strcmp(series[k], name) != 0)
            k++;
        if (k == ns && ns < 32)
            snprintf(series[ns++], sizeof series[0], "%s", name);
    }
    if (!ns)
        return 0;
    snprintf(path, sizeof path, "%s/%s.dat", dir, file);
    FILE *f = ffnrt_lab_fopen(path, "w");
    if (!f)
        return 0;
    fprintf(gp, "set title \"%s (%s): validation MSE over the teacher's mean square while training (mean over the "
                "runs)\" noenhanced\n", dm->name, dm->backend);
    fprintf(gp, "set xlabel \"step\"\nset ylabel \"validation relative MSE\"\nset logscale y\nset key below\n");
    if (c->max_val_rel_mse > 0)
        fprintf(gp, "set arrow from graph 0, first %.9g to graph 1, first %.9g nohead lw 2 lc rgb \"black\" dt 2\n",
                c->max_val_rel_mse, c->max_val_rel_mse);
    fprintf(gp, "plot ");
    for (int k = 0; k < ns; k++) {
        fprintf(f, "# %s\n", series[k]);
        for (size_t i = 0; i < rs->n; i++) {
            const bench_row *r = &rs->v[i];
            char name[48];
            snprintf(name, sizeof name, "%s %s", r->op, r->dtype);
            double y = bench_row_get(r, "val_rel_mse");
            if (strcmp(r->group, "curve") == 0 && strcmp(r->backend, dm->backend) == 0 &&
                strcmp(r->device, dm->name) == 0 && strcmp(name, series[k]) == 0 && isfinite(y) && y > 0)
                fprintf(f, "%.9g %.9g\n", bench_row_get(r, "step"), y);
        }
        fprintf(f, "\n\n");
        fprintf(gp, "%s'%s' index %d using 1:2 with linespoints lw 2 pt %d lc %d title \"%s\" noenhanced", k ? ", " : "",
                path, k, 5 + 2 * (k % 5), k + 1, series[k]);
    }
    fprintf(gp, "\n");
    fclose(f);
    return 1;
}

int compare_write_plots(const char *dir, const bench_rows *rs, const bench_meta *m, char *why, size_t why_len)
{
    ffnrt_compare_criteria c = FFNRT_COMPARE_CRITERIA_INIT;
    const char *text = bench_meta_field(m, "criteria");
    if (text)
        ffnrt_compare_criteria_parse(text, &c);
    char t_title[160], l_title[160], t_label[64], m_label[64];
    double tok[FFNRT_COMPARE_MAX_TOKENS];
    int nt = token_counts(rs, tok, FFNRT_COMPARE_MAX_TOKENS);
    double largest = nt ? tok[nt - 1] : 0;
    snprintf(t_title, sizeof t_title, "throughput at %.0f tokens against parameters (dashed: the criterion)",
             c.throughput_tokens ? (double)c.throughput_tokens : largest);
    snprintf(t_label, sizeof t_label, "tokens per second at t%.0f (mean, host end to end)",
             c.throughput_tokens ? (double)c.throughput_tokens : largest);
    snprintf(l_title, sizeof l_title, "1-token latency against peak device memory at %.0f tokens (dashed: criteria)",
             c.memory_tokens ? (double)c.memory_tokens : largest);
    snprintf(m_label, sizeof m_label, "peak device memory at t%.0f, MiB (measured)",
             c.memory_tokens ? (double)c.memory_tokens : largest);
    bench_scatter tp = {"candidate", "params", "throughput", 1, 1, t_title, "parameters (this variant's)", t_label,
                        0, 0, 0, c.min_tokens_per_s};
    bench_scatter lm = {"candidate", "memory_mib", "latency_ms", 1, 1, l_title, m_label,
                        "latency at 1 token, ms (mean, host end to end)", 0, 0, c.max_memory_mib, c.max_latency_ms};
    bench_plot plots[] = {
        {"throughput_params", 1, bench_plot_scatter, &tp, NULL},
        {"latency_memory", 1, bench_plot_scatter, &lm, NULL},
        {"training_curves", 1, plot_curves, &c, NULL},
    };
    return bench_draw_plots(dir, plots, 3, rs, m, why, why_len);
}

int compare_write_all(const char *dir, const bench_rows *rs, const bench_meta *m, int plots)
{
    if (bench_mkdir_p(dir) != 0) {
        fprintf(stderr, "ffnrt compare: cannot create %s\n", dir);
        return -1;
    }
    char path[1200];
    int rc = 0;
    snprintf(path, sizeof path, "%s/table.txt", dir);
    FILE *f = ffnrt_lab_fopen(path, "w");
    if (f) {
        compare_print_table(f, rs, m);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/compare.json", dir);
    if (bench_write_json(path, rs, m) != 0)
        fprintf(stderr, "ffnrt compare: cannot write %s\n", path), rc = -1;
    snprintf(path, sizeof path, "%s/compare.csv", dir);
    if (bench_write_csv(path, rs, m) != 0)
        fprintf(stderr, "ffnrt compare: cannot write %s\n", path), rc = -1;
    char why[200] = "";
    if (plots && compare_write_plots(dir, rs, m, why, sizeof why) != 0)
        printf("plots: %s\n", why);
    printf("wrote %s/: table.txt, compare.json, compare.csv%s\n", dir,
           plots && !why[0] ? ", plots (throughput_params_*, latency_memory_*, training_curves_* when trained; PNG and SVG)" : "");
    return rc;
}

/* ----------------------------------------------------------- reading */

int compare_read_report(const char *path, bench_rows *rs, bench_meta *m, char *err, size_t err_len)
{
    if (bench_read_json(path, rs, m, err, err_len) != 0)
        return -1;
    const char *kind = bench_meta_field(m, "report"), *text = bench_meta_field(m, "criteria");
    const char *sha = bench_meta_field(m, "criteria_sha256"), *fixed = bench_meta_field(m, "criteria_fixed_at");
    const char *sealed = bench_meta_field(m, "criteria_sealed");
    if (!kind || strcmp(kind, COMPARE_REPORT) != 0) {
        snprintf(err, err_len, "%s: not an ffnrt compare report (an ffnrt bench run?)", path);
        return -1;
    }
    if (!text || !sha || !fixed || !sealed) {
        snprintf(err, err_len, "%s: the report records no criteria, hash or time (every report has them)", path);
        return -1;
    }
    /* The criteria must be the ones the run was judged by: their canonical
     * text again, and its hash the one recorded. */
    ffnrt_compare_criteria c;
    char canon[1024], hex[65];
    if (ffnrt_compare_criteria_parse(text, &c) != FFNRT_OK ||
        ffnrt_compare_criteria_text(&c, canon, sizeof canon, hex) != FFNRT_OK) {
        snprintf(err, err_len, "%s: its criteria do not read: %.300s", path, ffnrt_last_error_message());
        return -1;
    }
    if (strcmp(canon, text) != 0 || strcmp(hex, sha) != 0) {
        snprintf(err, err_len,
                 "%s: its criteria were changed after the run: they hash to %.16s..., the run recorded %.16s... "
                 "(criteria are fixed before a run; run again with new ones)",
                 path, hex, sha);
        return -1;
    }
    /* Fixed before every run that sealed them (ISO 8601 UTC sorts as text). */
    for (const char *p = sealed; *p;) {
        size_t n = strcspn(p, ";");
        const char *sp = memchr(p, ' ', n);
        if (!sp || strncmp(sp + 1, fixed, (size_t)(p + n - sp - 1)) < 0) {
            snprintf(err, err_len, "%s: criteria fixed at %s, after the run they judge (%.*s)", path, fixed, (int)n, p);
            return -1;
        }
        p += n;
        while (*p == ';' || *p == ' ')
            p++;
    }
    return 0;
}

/* ----------------------------------------------------------- --compare */

static void compare_usage(void)
{
    fprintf(stderr, "usage: ffnrt compare --compare [--threshold F] [--all] [--] OLD.json NEW.json\n"
                    "  exit status 0: no regression and no verdict lost, 1: regressions or a candidate that passed\n"
                    "  and now fails, 2: bad input (not a report, or criteria changed after its run)\n");
}

int compare_compare_main(int argc, char **argv)
{
    bench_pair_args p;
    int bad = bench_pair_args_read(argc, argv, "ffnrt compare --compare", 0, &p);
    if (bad) {
        if (bad == -2)
            compare_usage();
        return 2;
    }
    bench_rows rows[2] = {{0}, {0}};
    bench_meta *meta = calloc(2, sizeof *meta);
    char err[600];
    int rc = meta ? 0 : 2;
    for (int k = 0; k < 2 && rc == 0; k++)
        if (compare_read_report(p.files[k], &rows[k], &meta[k], err, sizeof err) != 0) {
            fprintf(stderr, "ffnrt compare --compare: %s\n", err);
            rc = 2;
        }
    if (rc == 0) {
        const char *s0 = bench_meta_field(&meta[0], "criteria_sha256"), *s1 = bench_meta_field(&meta[1], "criteria_sha256");
        if (strcmp(s0, s1) == 0)
            printf("criteria: the same in both (sha256 %s)\n", s0);
        else
            printf("criteria: DIFFERENT (old sha256 %.16s..., new %.16s...): verdicts below were judged against "
                   "different thresholds\n  old:\n    %s\n  new:\n    %s\n",
                   s0, s1, bench_meta_field(&meta[0], "criteria"), bench_meta_field(&meta[1], "criteria"));
        rc = bench_compare_rows(p.files, rows, meta, p.threshold, p.all, 0);
        /* Verdicts: every candidate whose verdict changed. */
        int lost = 0, changed = 0;
        printf("\nverdicts that changed (old -> new):\n");
        for (size_t i = 0; i < rows[0].n; i++) {
            const bench_row *o = &rows[0].v[i];
            if (strcmp(o->group, "candidate") != 0)
                continue;
            char key[400], k2[400];
            bench_row_key(o, key, sizeof key);
            for (size_t j = 0; j < rows[1].n; j++) {
                const bench_row *n = &rows[1].v[j];
                bench_row_key(n, k2, sizeof k2);
                if (strcmp(key, k2) != 0 || strcmp(o->note, n->note) == 0)
                    continue;
                changed++;
                lost += bench_row_get(o, "pass") > 0 && !(bench_row_get(n, "pass") > 0);
                printf("  %-8s %-20s %-4s %-10s -> %s\n", o->backend, o->op, o->dtype, o->note, n->note);
            }
        }
        if (!changed)
            printf("  none\n");
        printf("%d verdicts changed; %d candidates that passed now fail\n", changed, lost);
        if (lost && rc == 0)
            rc = 1;
    }
    bench_rows_free(&rows[0]);
    bench_rows_free(&rows[1]);
    free(meta);
    return rc;
}
