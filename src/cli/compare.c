/* ffnrt compare: the seed's controlled comparison of FFN forms on every
 * device found (or those --device names), judged against criteria fixed
 * before anything runs. The library (ffnrt_compare.h) measures and
 * judges; the report is the bench's rows and outputs (compare_report.h). */
#include "args.h"
#include "compare_cli.h"
#include "compare_report.h"
#include "lab.h"
#include "numbers.h"

#include "ffnrt_compare.h"
#include "ffnrt_lab.h" /* the terminal's width */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ffnrt compare --d N (--m N | --budget N) [--multiple N] [criteria] [options]\n"
            "       ffnrt compare --plot REPORT.json [DIR]     (the table and plots again; no criteria)\n"
            "       ffnrt compare --compare OLD.json NEW.json [--threshold F] [--all]\n"
            "dense relu, gelu (erf), gelu_tanh and silu at width m against reglu, geglu and swiglu at the gated\n"
            "width g = ffnrt_ffn_gated_hidden(m, multiple) (3dg ~ 2dm weights), without biases unless --bias asks\n"
            "  --d N              d_model\n"
            "  --m N              the dense width; or --budget N: m is the largest multiple of --multiple with\n"
            "                     2·d·m <= N weights\n"
            "  --multiple N       g = 2m/3 rounded down, then up to a multiple of N (default 1; Llama: 256)\n"
            "criteria, fixed before anything runs and recorded with their SHA-256 and time; a candidate passes\n"
            "when every criterion given passes and none of its calls failed:\n"
            "  --criteria FILE    \"key = value\" lines (# comments): the keys below without the dashes\n"
            "  --max-latency-ms X        mean end-to-end time of a 1-token call\n"
            "  --max-memory-mib X        peak device memory at --memory-tokens N (default: the largest count)\n"
            "  --min-tokens-per-s X      mean throughput at --throughput-tokens N (default: the largest count)\n"
            "  --finite                  no NaN or Inf in any output on the stability inputs\n"
            "  --max-dead-fraction X     at most this share of hidden features dead for every token of a call\n"
            "  --input \"normal M S\" | \"uniform LO HI\"   the stability inputs' distribution (default normal 0 1)\n"
            "  --stability-tokens N, --seeds N           tokens a call (64) and input seeds (3 when a stability key is\n"
            "                            given; 0: no stability figures)\n"
            "  (stability figures are measured when any of the last five is given; else none: each candidate's\n"
            "   statistics variant is one more kernel to compile)\n"            "training (the seed's protocol; --train, or any key below): each f32 candidate learns a fixed random\n"
            "SwiGLU teacher over several seeds with AdamW, judged on the validation MSE over the teacher's mean square\n"
            "  --train                   train with the defaults below (train_steps = 200)\n"
            "  --task \"gguf N\" --gguf FILE   distil layer N of a GGUF model (its FFN the teacher, its token\n"
            "                            embeddings RMS-normalised the inputs, rows r %% 10 == 8 for validation);\n"
            "                            default synthetic: a fixed random SwiGLU teacher on the --input inputs\n"
            "  --train-steps N, --train-seeds N, --train-tokens N, --validation-tokens N   (200, 3, 64, 256)\n"
            "  --train-lr X, --train-weight-decay X, --train-max-grad-norm X|none, --train-patience N\n"
            "                            (0.01, 0.01, 1, 0: every step runs; N: stop after N evaluations of 16\n"
            "                            without a better validation loss)\n"
            "  --max-val-rel-mse X       the quality criterion: the mean over the runs (a failed run counts as inf)\n"
            "  --max-step-ms X, --max-train-memory-mib X   a median step; the device memory a run holds\n"
            "options (the defaults suit a first try; the plan printed before the run says what was chosen, and why):\n"
            "  --only LIST        dense-relu,dense-gelu,dense-gelu_tanh,dense-silu,reglu,geglu,swiglu (default all)\n"
            "  --bias no|yes|both (default no: the seed's 2dm = 3dg counts weights only; the +bias column gives\n"
            "                     every candidate's count with biases either way)\n"
            "  --tokens LIST      token counts (default from the layer's size: 1, and each of 8, 64 and 512 whose\n"
            "                     call does 1 MFLOP to 20 GFLOP, 4dm FLOP a token; 1 is always measured)\n"
            "  --precision LIST   weight formats: f32,f16,bf16 or q8_0,q4_0,q4_1,q4_k,q6_k (GGUF's blocks, fp32\n"
            "                     activations; widths a multiple of the block) (default f32)\n"
            "  --rounds N         interleaved timing rounds after a warm-up round (default 5)\n"
            "  --device NAMES     backend (opencl, vulkan) or part of a device's name, or all (default: the device\n"
            "                     ffnrt chooses, as an app's context would: FFNRT_DEVICE, else its ranking)\n"
            "  --weight-seed N    the weights' seed (default 1)\n"
            "  --out DIR          compare.json, compare.csv, table.txt, plots (default compare-results)\n"
            "  --json F, --csv F  extra copies; --no-plots\n"
            "  --plan-only        fix and print the criteria and the plan, then stop (no device is opened)\n"
            "  --progress / --no-progress   what runs now, kernels built and still to build, time compiling and\n"
            "                     measuring, on stderr (default: on a terminal)\n");
}

/* The criteria flags and the keys of the criteria text they stand for. */
static const struct {
    const char *flag, *key;
    int takes_value;
} criteria_flags[] = {
    {"--max-latency-ms", "max_latency_ms", 1},       {"--max-memory-mib", "max_memory_mib", 1},
    {"--memory-tokens", "memory_tokens", 1},         {"--min-tokens-per-s", "min_tokens_per_s", 1},
    {"--throughput-tokens", "throughput_tokens", 1}, {"--finite", "finite", 0},
    {"--max-dead-fraction", "max_dead_fraction", 1}, {"--input", "input", 1},
    {"--stability-tokens", "stability_tokens", 1},   {"--seeds", "seeds", 1},
    {"--train-steps", "train_steps", 1},             {"--train-seeds", "train_seeds", 1},
    {"--train-tokens", "train_tokens", 1},           {"--validation-tokens", "validation_tokens", 1},
    {"--train-lr", "train_lr", 1},                   {"--train-weight-decay", "train_weight_decay", 1},
    {"--train-max-grad-norm", "train_max_grad_norm", 1}, {"--train-patience", "train_patience", 1},
    {"--max-val-rel-mse", "max_val_rel_mse", 1},     {"--max-step-ms", "max_step_ms", 1},
    {"--max-train-memory-mib", "max_train_memory_mib", 1}, {"--task", "task", 1},
};
#define NCRITERIA_FLAGS (sizeof criteria_flags / sizeof criteria_flags[0])

static int criteria_flag(const char *a)
{
    for (size_t i = 0; i < NCRITERIA_FLAGS; i++)
        if (strcmp(a, criteria_flags[i].flag) == 0)
            return (int)i;
    return -1;
}

/* A small text file, whole (criteria files are a few lines). */
static char *read_small_file(const char *path)
{
    FILE *f = ffnrt_lab_fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(65537);
    size_t n = buf ? fread(buf, 1, 65536, f) : 0;
    int more = buf && fgetc(f) != EOF;
    fclose(f);
    if (!buf || more) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    return buf;
}

typedef struct progress_state {
    int on;
    int tty;      /* rewrite one line; else a line each report */
    double start;
    const char *backend;
    const ffnrt_comparison *cmp; /* the one running, for its figures */
} progress_state;

/* The terminal's width, so the rewritten line never wraps (a wrapped line
 * is not erased by the next). */
static int terminal_width(void)
{
    int cols = ffnrt_lab_terminal_columns(2);
    if (cols >= 40)
        return cols;
    const char *c = getenv("COLUMNS");
    int n = c ? atoi(c) : 0;
    return n >= 40 ? n : 120;
}

/* "[0:12] opencl: 9 kernels built, ~6 to go; compiling 10.2 s, measuring
 * 0.3 s | f32 swiglu t8 first call (compiling)" on stderr: one line
 * rewritten on a terminal, else (--progress into a file) a line a step. */
static void on_progress(void *user, const char *what)
{
    progress_state *p = user;
    if (!p->on || (!p->tty && strstr(what, " round ")))
        return;
    int s = (int)(lab_now_s() - p->start);
    char line[400];
    int n = snprintf(line, sizeof line, "[%d:%02d] %s: ", s / 60, s % 60, p->backend);
    ffnrt_compare_progress pr;
    if (p->cmp && ffnrt_compare_get_progress(p->cmp, &pr) == FFNRT_OK && n > 0 && (size_t)n < sizeof line) {
        char cached[48] = "";
        if (pr.kernels_cached)
            snprintf(cached, sizeof cached, " (%llu from cache)", (unsigned long long)pr.kernels_cached);
        n += snprintf(line + n, sizeof line - (size_t)n, "%llu kernels built%s, ~%llu to go; compiling %.1f s, "
                      "measuring %.1f s | ", (unsigned long long)pr.kernels_built, cached,
                      (unsigned long long)pr.kernels_to_go, pr.compile_s, pr.measure_s);
    }
    if (n > 0 && (size_t)n < sizeof line)
        snprintf(line + n, sizeof line - (size_t)n, "%s", what);
    if (p->tty)
        fprintf(stderr, "\r\033[K%.*s", terminal_width() - 1, line);
    else
        fprintf(stderr, "%s\n", line);
    fflush(stderr);
}

static int split_list(char *s, char **out, int max)
{
    int n = 0;
    for (char *save = NULL, *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (*t && n < max)
            out[n++] = t;
    return n;
}

/* Reports are judged by the criteria fixed before they ran: none may come
 * with --plot or --compare. 1 (and the refusal on stderr) when one does. */
static int criteria_after_run(const char *mode, int argc, char **argv)
{
    cli_args args;
    cli_args_init(&args, argc, argv);
    const char *a;
    cli_arg_kind kind;
    while ((kind = cli_args_next(&args, &a)) != CLI_END) {
        if (kind != CLI_OPTION)
            continue;
        if (criteria_flag(a) >= 0 || strcmp(a, "--criteria") == 0) {
            fprintf(stderr,
                    "ffnrt compare %s: %s: criteria cannot be given after the run; a report is judged by the "
                    "criteria fixed before it ran (its table shows them with their SHA-256): run again with new ones\n",
                    mode, a);
            return 1;
        }
        if (strcmp(a, "--threshold") == 0) /* --compare's one valued option */
            cli_args_value(&args);
    }
    return 0;
}

/* `ffnrt compare --plot REPORT [DIR]`. */
static int plot_main(int argc, char **argv)
{
    if (criteria_after_run("--plot", argc, argv))
        return 2;
    const char *files[2] = {NULL, NULL};
    int nfiles = cli_args_operands(argc, argv, files, 2);
    if (nfiles < 1) {
        fprintf(stderr, "usage: ffnrt compare --plot [--] REPORT.json [DIR]\n");
        return 2;
    }
    bench_rows rows = {0};
    bench_meta *meta = calloc(1, sizeof *meta);
    char err[600];
    int rc = 0;
    if (!meta || compare_read_report(files[0], &rows, meta, err, sizeof err) != 0) {
        fprintf(stderr, "ffnrt compare --plot: %s\n", meta ? err : "out of memory");
        rc = 2;
    } else {
        compare_print_table(stdout, &rows, meta);
        const char *dir = nfiles == 2 ? files[1] : "compare-results";
        char why[200];
        if (bench_mkdir_p(dir) != 0 || compare_write_plots(dir, &rows, meta, why, sizeof why) != 0) {
            fprintf(stderr, "ffnrt compare --plot: %s\n", bench_mkdir_p(dir) != 0 ? "cannot create the directory" : why);
            rc = 1;
        } else {
            printf("wrote the plots of %s into %s/\n", files[0], dir);
        }
    }
    bench_rows_free(&rows);
    free(meta);
    return rc;
}

typedef struct options {
    ffnrt_compare_spec spec;
    const char *criteria_file;
    char flag_text[2048]; /* the criteria flags as criteria lines */
    char *devices[16];
    int ndevices;
    int all_devices;      /* --device all; neither: the default device */
    int bias_given;
    int stability_default; /* no stability key given: seeds = 0 was added */
    const char *out_dir, *json, *csv;
    int plots, progress;
    int plan_only;        /* --plan-only: the criteria and the plan, nothing run */
    int train;            /* --train: the training protocol (train_steps = 200 unless given) */
} options;

static int parse_options(int argc, char **argv, options *o, char *lists)
{
    size_t used = 0, lists_used = 0;
    int have_d = 0;
    cli_args args;
    cli_args_init(&args, argc, argv);
    const char *a;
    cli_arg_kind kind;
    while ((kind = cli_args_next(&args, &a)) != CLI_END) {
        if (kind == CLI_OPERAND) {
            fprintf(stderr, "ffnrt compare: unexpected argument %s (ffnrt compare --help)\n", a);
            return 2;
        }
        int cf = criteria_flag(a);
        if (cf >= 0) {
            const char *v = "yes";
            if (criteria_flags[cf].takes_value && !(v = cli_args_value(&args))) {
                fprintf(stderr, "ffnrt compare: %s needs a value\n", a);
                return 2;
            }
            char line[256];
            snprintf(line, sizeof line, "%s = %s\n", criteria_flags[cf].key, v);
            /* "normal:0,1" reads as "normal 0 1" */
            if (strcmp(criteria_flags[cf].key, "input") == 0)
                for (char *p = line; *p; p++)
                    if (*p == ':' || *p == ',')
                        *p = ' ';
            if (strchr(v, '\n') || strchr(v, '#') || used + strlen(line) >= sizeof o->flag_text) {
                fprintf(stderr, "ffnrt compare: %s %s: not a single value\n", a, v);
                return 2;
            }
            memcpy(o->flag_text + used, line, strlen(line) + 1);
            used += strlen(line);
            continue;
        }
        static const char *const valued[] = {"--d", "--m", "--budget", "--multiple", "--only", "--bias", "--tokens",
                                             "--precision", "--rounds", "--device", "--weight-seed", "--out", "--json",
                                             "--csv", "--criteria", "--gguf"};
        int takes = 0;
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
            takes |= strcmp(a, valued[k]) == 0;
        const char *v = NULL;
        if (takes && !(v = cli_args_value(&args))) {
            fprintf(stderr, "ffnrt compare: %s needs a value\n", a);
            return 2;
        }
        int64_t n;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 3;
        } else if (strcmp(a, "--d") == 0 || strcmp(a, "--m") == 0 || strcmp(a, "--budget") == 0 ||
                   strcmp(a, "--multiple") == 0 || strcmp(a, "--rounds") == 0 || strcmp(a, "--weight-seed") == 0) {
            int64_t max = strcmp(a, "--budget") == 0 ? INT64_MAX / 4 : strcmp(a, "--rounds") == 0 ? 10000 : UINT32_MAX;
            if (cli_parse_int(v, 1, max, &n) != 0) {
                fprintf(stderr, "ffnrt compare: %s %s: a whole number in [1, %lld]\n", a, v, (long long)max);
                return 2;
            }
            if (strcmp(a, "--d") == 0)
                o->spec.d_model = n, have_d = 1;
            else if (strcmp(a, "--m") == 0)
                o->spec.dense_hidden = n;
            else if (strcmp(a, "--budget") == 0)
                o->spec.parameter_budget = n;
            else if (strcmp(a, "--multiple") == 0)
                o->spec.multiple = n;
            else if (strcmp(a, "--rounds") == 0)
                o->spec.rounds = (uint32_t)n;
            else
                o->spec.weight_seed = (uint32_t)n;
        } else if (strcmp(a, "--only") == 0 || strcmp(a, "--tokens") == 0 || strcmp(a, "--precision") == 0 ||
                   strcmp(a, "--device") == 0) {
            size_t len = strlen(v) + 1;
            if (lists_used + len > 4096) {
                fprintf(stderr, "ffnrt compare: %s: too long\n", a);
                return 2;
            }
            char *copy = memcpy(lists + lists_used, v, len);
            lists_used += len;
            char *items[16];
            int k = split_list(copy, items, 16);
            if (strcmp(a, "--device") == 0) {
                o->all_devices = k == 1 && strcmp(items[0], "all") == 0;
                memcpy(o->devices, items, (size_t)k * sizeof items[0]);
                o->ndevices = o->all_devices ? 0 : k;
                if (k == 0) {
                    fprintf(stderr, "ffnrt compare: --device %s: a backend, part of a device's name, or all\n", v);
                    return 2;
                }
            }
            for (int j = 0; j < k && strcmp(a, "--device") != 0; j++) {
                if (strcmp(a, "--only") == 0) {
                    ffnrt_compare_candidate c;
                    if (ffnrt_compare_candidate_from_name(items[j], &c) != FFNRT_OK) {
                        fprintf(stderr, "ffnrt compare: --only: %s\n", ffnrt_last_error_message());
                        return 2;
                    }
                    o->spec.candidates |= 1u << c;
                } else if (strcmp(a, "--precision") == 0) {
                    ffnrt_weight_format f;
                    if (ffnrt_weight_format_from_name(items[j], &f) != FFNRT_OK) {
                        fprintf(stderr, "ffnrt compare: --precision %s: f32, f16, bf16, q8_0, q4_0, q4_1, q4_k or q6_k\n", items[j]);
                        return 2;
                    }
                    o->spec.formats |= 1u << f;
                } else {
                    if (o->spec.ntokens == FFNRT_COMPARE_MAX_TOKENS || cli_parse_int(items[j], 1, 1 << 24, &n) != 0) {
                        fprintf(stderr, "ffnrt compare: --tokens %s: at most %d counts, each in [1, 2^24]\n", items[j],
                                FFNRT_COMPARE_MAX_TOKENS);
                        return 2;
                    }
                    o->spec.tokens[o->spec.ntokens++] = n;
                }
            }
        } else if (strcmp(a, "--bias") == 0) {
            o->bias_given = 1;
            o->spec.biases = strcmp(v, "no") == 0 ? 1 : strcmp(v, "yes") == 0 ? 2 : strcmp(v, "both") == 0 ? 3 : 0;
            if (!o->spec.biases) {
                fprintf(stderr, "ffnrt compare: --bias %s: no, yes or both\n", v);
                return 2;
            }
        } else if (strcmp(a, "--criteria") == 0) {
            o->criteria_file = v;
        } else if (strcmp(a, "--out") == 0) {
            o->out_dir = v;
        } else if (strcmp(a, "--json") == 0) {
            o->json = v;
        } else if (strcmp(a, "--csv") == 0) {
            o->csv = v;
        } else if (strcmp(a, "--no-plots") == 0) {
            o->plots = 0;
        } else if (strcmp(a, "--train") == 0) {
            o->train = 1;
        } else if (strcmp(a, "--gguf") == 0) {
            o->spec.gguf_path = v;
        } else if (strcmp(a, "--plan-only") == 0) {
            o->plan_only = 1;
        } else if (strcmp(a, "--progress") == 0 || strcmp(a, "--no-progress") == 0) {
            o->progress = strcmp(a, "--progress") == 0;
        } else {
            fprintf(stderr, "ffnrt compare: unknown option %s (ffnrt compare --help)\n", a);
            return 2;
        }
    }
    if (!have_d || (!o->spec.dense_hidden == !o->spec.parameter_budget)) {
        fprintf(stderr, "ffnrt compare: give --d and one of --m and --budget (ffnrt compare --help)\n");
        return 2;
    }
    if (!o->bias_given)
        o->spec.biases = 1; /* without biases (the plan says why) */
    return 0;
}

/* 1 when the criteria text names one of keys on a line of its own
 * (comments and blank lines aside). */
static int mentions(const char *text, const char *const *keys, size_t nkeys)
{
    for (const char *p = text; p && *p;) {
        size_t n = strcspn(p, "\n");
        const char *q = p;
        while (q < p + n && (*q == ' ' || *q == '\t'))
            q++;
        for (size_t k = 0; k < nkeys; k++) {
            size_t kl = strlen(keys[k]);
            if ((size_t)(p + n - q) >= kl && strncmp(q, keys[k], kl) == 0 &&
                (q[kl] == ' ' || q[kl] == '\t' || q[kl] == '='))
                return 1;
        }
        p += n + (p[n] == '\n');
    }
    return 0;
}

/* text with line added (a default the criteria take as their own line);
 * NULL, with text freed, when out of memory. */
static char *append_line(char *text, const char *line)
{
    char *more = realloc(text, strlen(text) + strlen(line) + 1);
    if (!more) {
        free(text);
        return NULL;
    }
    return strcat(more, line);
}

/* The criteria: the file's lines, then the flags' (a key given twice is
 * refused), read and fixed before any device is opened. */
static int fix_criteria(options *o, ffnrt_compare_criteria *c, bench_meta *meta)
{
    char *file = NULL;
    if (o->criteria_file && !(file = read_small_file(o->criteria_file))) {
        fprintf(stderr, "ffnrt compare: --criteria %s: cannot read it (a text file under 64 KiB)\n", o->criteria_file);
        return 2;
    }
    size_t n = (file ? strlen(file) : 0) + strlen(o->flag_text) + 2;
    char *text = malloc(n);
    if (!text) {
        free(file);
        return 1;
    }
    snprintf(text, n, "%s%s%s", file ? file : "", file && *file && file[strlen(file) - 1] != '\n' ? "\n" : "",
             o->flag_text);
    free(file);
    /* Stability figures cost each candidate a statistics variant of its
     * kernels to compile (seconds each on CPU drivers): measured when the
     * criteria ask for them (any of their keys), else seeds = 0, a line of
     * the criteria like any other, so it is fixed, hashed and printed. */
    static const char *const stability_keys[] = {"finite", "max_dead_fraction", "input", "stability_tokens", "seeds"};
    static const char *const training_keys[] = {"task", "train_seeds", "train_tokens", "validation_tokens", "train_lr",
                                                "train_weight_decay", "train_max_grad_norm", "train_patience",
                                                "max_val_rel_mse", "max_step_ms", "max_train_memory_mib"};
    static const char *const steps_key[] = {"train_steps"};
    /* Training runs with --train or any training key; its length is a
     * line of the criteria like any other (200 steps unless given). */
    if ((o->train || mentions(text, training_keys, sizeof training_keys / sizeof training_keys[0])) &&
        !mentions(text, steps_key, 1)) {
        if (!(text = append_line(text, "train_steps = 200\n")))
            return 1;
    }
    o->stability_default = !mentions(text, stability_keys, sizeof stability_keys / sizeof stability_keys[0]);
    if (o->stability_default) {
        if (!(text = append_line(text, "seeds = 0\n")))
            return 1;
    }
    ffnrt_status st = ffnrt_compare_criteria_parse(text, c);
    free(text);
    if (st != FFNRT_OK) {
        fprintf(stderr, "ffnrt compare: %s%s\n", ffnrt_last_error_message(),
                o->criteria_file && o->flag_text[0] ? " (the file's lines come first, then the flags')" : "");
        return 2;
    }
    char canon[1024], sha[65], at[40];
    if (ffnrt_compare_criteria_text(c, canon, sizeof canon, sha) != FFNRT_OK) {
        fprintf(stderr, "ffnrt compare: %s\n", ffnrt_last_error_message());
        return 2;
    }
    lab_now_iso(at, sizeof at);
    bench_meta_set_field(meta, "report", COMPARE_REPORT);
    bench_meta_set_field(meta, "criteria", canon);
    bench_meta_set_field(meta, "criteria_sha256", sha);
    bench_meta_set_field(meta, "criteria_fixed_at", at);
    char source[600];
    snprintf(source, sizeof source, "%s%s%s%s", o->criteria_file ? o->criteria_file : "",
             o->criteria_file && o->flag_text[0] ? " and " : "", o->flag_text[0] ? "flags" : o->criteria_file ? "" : "none given",
             o->stability_default ? "; seeds = 0, the default when no stability key is given" : "");
    bench_meta_set_field(meta, "criteria_source", source);
    printf("criteria fixed at %s (sha256 %s), before any device runs:\n%s", at, sha, canon);
    fflush(stdout);
    return 0;
}

static void describe_run(bench_meta *meta, const ffnrt_comparison *cmp, const options *o,
                         const ffnrt_compare_criteria *c)
{
    int64_t m = 0, g = 0, mult = 1, d = o->spec.d_model;
    ffnrt_compare_widths(cmp, &m, &g, &mult);
    char text[1200];
    if (o->spec.parameter_budget)
        snprintf(text, sizeof text, "d_model %lld; dense width m = %lld, the largest multiple of %lld with 2dm <= the "
                 "budget of %lld weights; gated width g = ffnrt_ffn_gated_hidden(%lld, %lld) = %lld; weights 2dm = "
                 "%lld dense, 3dg = %lld gated", (long long)d, (long long)m, (long long)mult,
                 (long long)o->spec.parameter_budget, (long long)m, (long long)mult, (long long)g,
                 (long long)(2 * d * m), (long long)(3 * d * g));
    else
        snprintf(text, sizeof text, "d_model %lld; dense width m = %lld; gated width g = ffnrt_ffn_gated_hidden(%lld, "
                 "%lld) = %lld; weights 2dm = %lld dense, 3dg = %lld gated", (long long)d, (long long)m, (long long)m,
                 (long long)mult, (long long)g, (long long)(2 * d * m), (long long)(3 * d * g));
    bench_meta_set_field(meta, "shape", text);
    snprintf(text, sizeof text, "%u interleaved rounds after a warm-up round at each token count, every candidate "
             "of a format in turn; host end to end (what the caller waits for), mean ± sample sd; the device's own "
             "time is the device_ms metric", o->spec.rounds ? o->spec.rounds : 5);
    bench_meta_set_field(meta, "timing", text);
    snprintf(text, sizeof text, "nn.Linear's U(±1/sqrt(fan-in)) from seed %u, one set per kind shared by its "
             "candidates; biases likewise", o->spec.weight_seed ? o->spec.weight_seed : 1);
    bench_meta_set_field(meta, "weights", text);
    if (c->seeds)
        snprintf(text, sizeof text, "%s(%g, %g) inputs on the weights above, %lld tokens a call, seeds 1 to %u; the "
                 "layer's own statistics (non-finite outputs; hidden features zero for every token of a call)",
                 c->input == FFNRT_INPUT_UNIFORM ? "uniform" : "normal", c->input_a, c->input_b,
                 (long long)c->stability_tokens, c->seeds);
    else
        snprintf(text, sizeof text, "not measured (seeds = 0)");
    bench_meta_set_field(meta, "stability", text);
}

/* The plan: what the run measures, fixed with the criteria before any
 * device is opened (every default is a function of the command line and
 * the layer's shape, never of a measurement), printed, and recorded in the
 * report ("plan"). 0, or 2 when the spec cannot be planned. */
static int fix_plan(const options *o, const ffnrt_compare_criteria *c, bench_meta *meta)
{
    int64_t t[FFNRT_COMPARE_MAX_TOKENS];
    size_t nt = 0;
    char tokens[700], plan[2000], list[200] = "";
    if (ffnrt_compare_plan_tokens(&o->spec, c, t, &nt, tokens, sizeof tokens) != FFNRT_OK) {
        fprintf(stderr, "ffnrt compare: %s\n", ffnrt_last_error_message());
        return 2;
    }
    int at = 0;
    if (!o->spec.candidates)
        snprintf(list, sizeof list, "all seven");
    for (int k = 0; k < FFNRT_CANDIDATE_COUNT && o->spec.candidates; k++)
        if (o->spec.candidates >> k & 1u)
            at += snprintf(list + at, sizeof list - (size_t)at, "%s%s", at ? ", " : "",
                           ffnrt_compare_candidate_name((ffnrt_compare_candidate)k));
    char formats[120] = "";
    at = 0;
    for (int f = 0; f < FFNRT_WEIGHT_FORMAT_COUNT; f++)
        if ((o->spec.formats ? o->spec.formats : 1u << FFNRT_WEIGHT_F32) >> f & 1u)
            at += snprintf(formats + at, sizeof formats - (size_t)at, "%s%s", at ? ", " : "",
                           ffnrt_weight_format_name((ffnrt_weight_format)f));
    char devices[300];
    if (o->all_devices)
        snprintf(devices, sizeof devices, "every device found (--device all)");
    else if (o->ndevices) {
        at = snprintf(devices, sizeof devices, "those --device names:");
        for (int i = 0; i < o->ndevices && at > 0 && (size_t)at < sizeof devices; i++)
            at += snprintf(devices + at, sizeof devices - (size_t)at, " %s", o->devices[i]);
    } else
        snprintf(devices, sizeof devices, "the one ffnrt chooses, as an app's context would (FFNRT_DEVICE, else its "
                 "ranking: ffnrt plan says why); --device all for every device");
    const char *biases = o->spec.biases == 2 ? "with biases (--bias yes)"
                         : o->spec.biases == 3 ? "without and with (--bias both)"
                         : o->bias_given ? "none (--bias no)"
                                         : "none, the default: the seed's 2dm = 3dg counts weights only, and the "
                                           "+bias column gives each candidate's count with biases; --bias both "
                                           "measures them too";
    char stability[300];
    if (c->seeds)
        snprintf(stability, sizeof stability, "%u seeds of %lld tokens, from the criteria", c->seeds,
                 (long long)c->stability_tokens);
    else if (o->stability_default)
        snprintf(stability, sizeof stability, "none, the default when the criteria name no stability key: each "
                 "candidate's statistics variant is one more kernel to compile; --seeds 3, --finite or "
                 "--max-dead-fraction ask for them");
    else
        snprintf(stability, sizeof stability, "none (seeds = 0 in the criteria)");
    snprintf(plan, sizeof plan, "  devices: %s\n  candidates: %s; weights: %s\n  biases: %s\n  tokens: %s\n"
             "  rounds: %u timed calls a layer and token count after its first\n  stability: %s\n", devices, list,
             formats, biases, tokens, o->spec.rounds ? o->spec.rounds : 5, stability);
    bench_meta_set_field(meta, "plan", plan);
    printf("plan, fixed with the criteria before any device runs:\n%s", plan);
    fflush(stdout);
    return 0;
}

/* Seconds as people read them: 0.004 s, 1.7 s, 25 s. */
static const char *secs(char *buf, size_t len, double s)
{
    snprintf(buf, len, s >= 10 ? "%.0f s" : s >= 0.1 ? "%.1f s" : "%.3f s", s);
    return buf;
}

/* One device's comparison into the report: 0, or 1 with the reason on stderr. */
static int run_device(const options *o, const ffnrt_compare_criteria *criteria, ffnrt_context *ctx,
                      ffnrt_device_info *info, double open_s, progress_state *prog, bench_meta *meta, bench_rows *rows,
                      int first)
{
    ffnrt_comparison *cmp = NULL;
    prog->backend = ffnrt_backend_name(info->backend);
    int rc = 0;
    if (ffnrt_compare_create(ctx, &o->spec, criteria, &cmp) != FFNRT_OK) {
        rc = 1;
    } else {
        prog->cmp = cmp;
        if (ffnrt_compare_run(cmp) != FFNRT_OK)
            rc = 1;
        prog->cmp = NULL;
    }
    if (rc) {
        fprintf(stderr, "%sffnrt compare: %s: %s\n", prog->on && prog->tty ? "\r\033[K" : "", info->name,
                ffnrt_last_error_message());
        ffnrt_compare_destroy(cmp);
        return 1;
    }
    bench_row_set(info->name, sizeof info->name, info->name); /* as rows hold it */
    bench_meta_add_device(meta, info);
    if (first)
        describe_run(meta, cmp, o, criteria);
    if (compare_report_add(rows, meta, cmp, info) != 0)
        rc = 1;
    /* Where the time went: compiling (each layer's first call) apart from
     * the measured calls, so neither is taken for the other. */
    ffnrt_compare_progress pr;
    if (ffnrt_compare_get_progress(cmp, &pr) == FFNRT_OK) {
        char text[1200], line[400], a[16], b[16], c[16], d[16], e[16];
        const char *before = bench_meta_field(meta, "time");
        snprintf(line, sizeof line, "%s %s: %s choosing and opening the device, %s compiling (the first call of "
                 "each of %u layers: %llu kernels built, %llu of them from ffnrt's disk cache), %s in measured "
                 "calls, %s other (weights, inputs)", ffnrt_backend_name(info->backend),
                 secs(a, sizeof a, open_s + pr.elapsed_s), secs(b, sizeof b, open_s), secs(c, sizeof c, pr.compile_s),
                 pr.steps_done, (unsigned long long)pr.kernels_built, (unsigned long long)pr.kernels_cached,
                 secs(d, sizeof d, pr.measure_s), secs(e, sizeof e, pr.elapsed_s - pr.compile_s - pr.measure_s));
        snprintf(text, sizeof text, "%s%s%s", before ? before : "", before ? "; " : "", line);
        bench_meta_set_field(meta, "time", text);
        meta->warmup_s += pr.compile_s;
        meta->measure_s += pr.measure_s;
        meta->kernels_built += pr.kernels_built - pr.kernels_cached;
        meta->kernels_cached += pr.kernels_cached;
    }
    ffnrt_compare_destroy(cmp);
    return rc;
}

static int run_main(int argc, char **argv)
{
    options o;
    memset(&o, 0, sizeof o);
    o.spec = (ffnrt_compare_spec)FFNRT_COMPARE_SPEC_INIT(0, 0);
    o.spec.multiple = 0;
    o.out_dir = "compare-results";
    o.plots = 1;
    o.progress = ffnrt_lab_isatty(2);
    char *lists = malloc(4096);
    if (!lists)
        return 1;
    int rc = parse_options(argc, argv, &o, lists);
    bench_meta *meta = rc == 0 ? calloc(1, sizeof *meta) : NULL;
    if (rc == 0 && !meta)
        rc = 1;
    ffnrt_compare_criteria criteria;
    if (rc == 0) {
        bench_meta_init(meta, "ffnrt-compare-1", "compare");
        rc = fix_criteria(&o, &criteria, meta);
    }
    if (rc == 0)
        rc = fix_plan(&o, &criteria, meta);
    if (rc == 0 && o.plan_only)
        rc = 3; /* done: nothing runs */
    bench_rows rows = {0};
    size_t count = 0;
    if (rc == 0 && (ffnrt_device_count(&count) != FFNRT_OK || count == 0)) {
        fprintf(stderr, "ffnrt compare: no device found (%s)\n", ffnrt_last_error_message());
        rc = 1;
    }
    progress_state prog = {o.progress, ffnrt_lab_isatty(2), lab_now_s(), "", NULL};
    o.spec.progress = on_progress;
    o.spec.progress_user = &prog;
    int ran = 0;
    if (rc == 0 && !o.all_devices && o.ndevices == 0) {
        /* The default: the device an app's context gets. */
        ffnrt_context *ctx = NULL;
        ffnrt_device_info info;
        if (prog.on)
            fprintf(stderr, "[0:00] choosing the device as an app's context would (the first time on a machine, "
                    "ffnrt measures the devices that tie on type, once)%s", prog.tty ? "" : "\n");
        double t0 = lab_now_s();
        if (ffnrt_context_create(NULL, &ctx) != FFNRT_OK || ffnrt_context_get_device_info(ctx, &info) != FFNRT_OK) {
            fprintf(stderr, "%sffnrt compare: the default device: %s\n", prog.on && prog.tty ? "\r\033[K" : "",
                    ffnrt_last_error_message());
            rc = 1;
        } else {
            rc = run_device(&o, &criteria, ctx, &info, lab_now_s() - t0, &prog, meta, &rows, 1);
            ran += rc == 0;
        }
        ffnrt_context_destroy(ctx);
    }
    for (size_t i = 0; i < count && rc == 0 && (o.all_devices || o.ndevices); i++) {
        ffnrt_device_info info;
        if (ffnrt_device_get_info(i, &info) != FFNRT_OK ||
            !bench_device_selected(&info, (const char *const *)o.devices, o.ndevices))
            continue;
        ffnrt_context_options co = FFNRT_CONTEXT_OPTIONS_INIT;
        co.backend = info.backend;
        co.device_index = (int)info.index;
        ffnrt_context *ctx = NULL;
        double t0 = lab_now_s();
        if (ffnrt_context_create(&co, &ctx) != FFNRT_OK) {
            fprintf(stderr, "%sffnrt compare: %s: %s\n", prog.on && prog.tty ? "\r\033[K" : "", info.name,
                    ffnrt_last_error_message());
            rc = 1;
        } else if (run_device(&o, &criteria, ctx, &info, lab_now_s() - t0, &prog, meta, &rows, !ran) != 0) {
            rc = 1;
        } else {
            ran++;
        }
        ffnrt_context_destroy(ctx);
    }
    if (prog.on && prog.tty)
        fprintf(stderr, "\r\033[K");
    if (rc == 0 && !ran) {
        fprintf(stderr, "ffnrt compare: no device matches --device\n");
        rc = 1;
    }
    if (ran) {
        meta->wall_s = lab_now_s() - prog.start;
        compare_report_ratios(&rows);
        compare_print_table(stdout, &rows, meta);
        if (o.out_dir && *o.out_dir && compare_write_all(o.out_dir, &rows, meta, o.plots) != 0)
            rc = 1;
        if (o.json && bench_write_json(o.json, &rows, meta) != 0)
            fprintf(stderr, "ffnrt compare: cannot write %s\n", o.json), rc = 1;
        if (o.csv && bench_write_csv(o.csv, &rows, meta) != 0)
            fprintf(stderr, "ffnrt compare: cannot write %s\n", o.csv), rc = 1;
    }
    bench_rows_free(&rows);
    free(meta);
    free(lists);
    return rc == 3 ? 0 : rc;
}

int ffnrt_compare_main(int argc, char **argv)
{
    if (argc >= 1 && strcmp(argv[0], "--compare") == 0)
        return criteria_after_run("--compare", argc - 1, argv + 1) ? 2 : compare_compare_main(argc - 1, argv + 1);
    if (argc >= 1 && strcmp(argv[0], "--plot") == 0)
        return plot_main(argc - 1, argv + 1);
    if (argc == 0) {
        usage(stderr);
        return 2;
    }
    return run_main(argc, argv);
}
