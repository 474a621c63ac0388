/* The ffnrt command: devices, plan, run, check, bench, compare. */
#include "args.h"
#if !defined(FFNRT_CLI_NO_BENCH)
#include "bench.h"
#include "compare_cli.h"
#endif
#include "check.h"
#include "numbers.h"
#include "plan_cli.h"
#include "run.h"
#include "ffnrt.h"
#include "ffnrt_lab.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_device(const ffnrt_device_info *d)
{
    printf("%s:%u  %s\n", ffnrt_backend_name(d->backend), d->index, d->name);
    printf("    vendor %s (0x%x), %s, driver %s, %s\n", d->vendor, d->vendor_id, ffnrt_device_type_name(d->type),
           d->driver_version, d->api_version);
    printf("    compute units %u, workgroup <= %u, workgroups <= %u x %u x %u, shared memory %" PRIu64 " B\n",
           d->compute_units, d->max_workgroup_size, d->max_workgroup_count[0], d->max_workgroup_count[1],
           d->max_workgroup_count[2], d->shared_memory_size);
    printf("    buffer range %" PRIu64 " B, allocation <= %" PRIu64 " B, memory %" PRIu64 " MiB, subgroup %s%u\n",
           d->max_buffer_range, d->max_allocation, d->memory_size >> 20, d->subgroup_size ? "" : "unknown ",
           d->subgroup_size);
    printf("    fp16 arithmetic %s, 16-bit storage %s, fp32 subnormals %s, packed int8 dot products %s\n",
           d->fp16_arithmetic ? "yes" : "no", d->storage_16bit ? "yes" : "no",
           d->denormals_preserved > 0 ? "kept" : d->denormals_preserved == 0 ? "flushed" : "not guaranteed",
           d->int_dot_packed == 2 ? "yes (accelerated)" : d->int_dot_packed ? "yes (not accelerated)" : "no");
}

static int cmd_profiles(void)
{
    const char *name, *text;
    for (size_t i = 0; ffnrt_profile_info(i, &name, &text) == FFNRT_OK; i++)
        printf("%-18s %s\n\n", name, text);
    return 0;
}

static int cmd_devices(int argc, char **argv)
{
    int profiles = 0, calibrate = 1;
    cli_args args;
    cli_args_init(&args, argc, argv);
    const char *a;
    cli_arg_kind kind;
    while ((kind = cli_args_next(&args, &a)) != CLI_END) {
        if (kind == CLI_OPTION && strcmp(a, "--profiles") == 0) {
            profiles = 1;
        } else if (kind == CLI_OPTION && strcmp(a, "--no-calibration") == 0) {
            calibrate = 0;
        } else if (kind == CLI_OPTION && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
            printf("usage: ffnrt devices [--profiles] [--no-calibration]\n"
                   "  --no-calibration   list the devices without measuring them (the measurement runs a\n"
                   "                     GEMM: minutes on an emulated or very slow device)\n");
            return 0;
        } else {
            fprintf(stderr, "ffnrt devices: unexpected argument %s\nusage: ffnrt devices [--profiles] [--no-calibration]\n",
                    a);
            return 2;
        }
    }
    if (profiles)
        return cmd_profiles();
    for (int b = 1; b < FFNRT_BACKEND_COUNT; b++)
        if (ffnrt_backend_available((ffnrt_backend)b) != FFNRT_OK)
            printf("%s: unavailable (%s)\n", ffnrt_backend_name((ffnrt_backend)b), ffnrt_last_error_message());
    size_t n = 0;
    if (ffnrt_device_count(&n) != FFNRT_OK) {
        fprintf(stderr, "ffnrt: %s\n", ffnrt_last_error_message());
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        ffnrt_device_info d;
        if (ffnrt_device_get_info(i, &d) != FFNRT_OK)
            continue;
        print_device(&d);
        if (!calibrate) {
            printf("    calibration: not measured (--no-calibration)\n");
            continue;
        }
        /* The figures the device choice and the cost model use: from the
         * disk cache, or measured now (a fraction of a second). */
        ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
        o.backend = d.backend;
        o.device_index = (int)d.index;
        ffnrt_context *ctx = NULL;
        double gbps, gflops, us;
        if (ffnrt_context_create(&o, &ctx) == FFNRT_OK && ffnrt_context_calibrate(ctx, &gbps, &gflops, &us) == FFNRT_OK)
            printf("    calibration: copy %.2f GB/s, GEMM %.1f GFLOP/s, dispatch %.1f us\n", gbps, gflops, us);
        else
            printf("    calibration: not measured (%s)\n", ffnrt_last_error_message());
        ffnrt_context_destroy(ctx);
    }
    if (n == 0) {
        printf("no device found\n");
        return 1;
    }
    /* Where compiled kernels are kept, as a context with the default
     * options (and this environment) would use it; without calibration, a
     * context on the first device, since the default choice between
     * devices of one type measures them. */
    ffnrt_context *ctx = NULL;
    ffnrt_context_options first = FFNRT_CONTEXT_OPTIONS_INIT;
    ffnrt_cache_stats cs;
    ffnrt_device_info chosen;
    if (!calibrate && ffnrt_device_get_info(0, &chosen) == FFNRT_OK) {
        first.backend = chosen.backend;
        first.device_index = (int)chosen.index;
    }
    if (ffnrt_context_create(calibrate ? NULL : &first, &ctx) == FFNRT_OK &&
        ffnrt_context_cache_stats(ctx, &cs) == FFNRT_OK && ffnrt_context_get_device_info(ctx, &chosen) == FFNRT_OK) {
        if (calibrate)
            printf("default device: %s:%u %s (ffnrt plan says why, with the time each device is expected to take)\n",
                   ffnrt_backend_name(chosen.backend), chosen.index, chosen.name);
        else
            printf("default device: not chosen (--no-calibration; between devices of one type the choice measures "
                   "them)\n");
        printf("disk cache: %s%s%s%s\n", cs.status, *cs.directory ? " (" : "", cs.directory,
               *cs.directory ? ")" : "");
    }
    ffnrt_context_destroy(ctx);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: ffnrt COMMAND\n"
                    "  devices [--profiles] list every device of every backend, with its limits and calibration\n"
                    "                       figures (or the named limit profiles of real GPUs; --no-calibration:\n"
                    "                       without measuring them)\n"
                    "  plan [options]       what the dispatcher chooses for an op, and why (ffnrt plan --help)\n"
                    "  run [options] OP X [X...]   apply an activation or GLU kind to numbers on the chosen device;\n"
                    "                       --stats prints the call's statistics, --fp32-control reruns it in\n"
                    "                       fp32 to tell a precision problem from a data one (ffnrt run --help)\n"
                    "  check OP [options]   accuracy of OP on a device, in ULP (ffnrt check --help)\n"
                    "  check --quant ...    a layer's error with its weights quantized to each format, on a device\n"
                    "  bench [options]      the device bench harness (ffnrt bench --help)\n"
                    "  bench --compare OLD.json NEW.json   per-row ratios of two runs, regressions flagged\n"
                    "  compare [options]    dense and gated FFNs at equal parameters, judged against criteria fixed\n"
                    "                       before the run (ffnrt compare --help)\n"
                    "in every command, \"--\" ends the options: what follows it is an operand, even \"-2\"\n"
                    "environment: FFNRT_DEVICE (\"opencl\", \"vulkan:0\", \"pocl\", ...), FFNRT_VALIDATION=1,\n"
                    "             FFNRT_LIMITS (\"max_buffer_range=65536,max_workgroup_count=64\")\n");
}

int main(int argc, char **argv)
{
    /* Paths in the arguments as UTF-8 (Windows' char argv is in the ANSI
     * code page); on failure the arguments stay, ASCII ones unharmed. */
    ffnrt_lab_arguments_utf8(&argc, &argv);
    /* And what it prints ("×", "±", "·", paths) shown as such in a
     * Windows console. */
    ffnrt_lab_console_utf8();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    /* Help asked for is a success, on stdout. */
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "devices") == 0)
        return cmd_devices(argc - 2, argv + 2);
    if (strcmp(argv[1], "plan") == 0)
        return ffnrt_plan_main(argc - 2, argv + 2);
    if (strcmp(argv[1], "run") == 0)
        return ffnrt_run_main(argc - 2, argv + 2);
    if (strcmp(argv[1], "check") == 0)
        return ffnrt_check_main(argc - 2, argv + 2);
#if defined(FFNRT_CLI_NO_BENCH)
    /* A build without the bench harness (Windows, for now: CMakeLists.txt). */
    if (strcmp(argv[1], "bench") == 0 || strcmp(argv[1], "compare") == 0) {
        fprintf(stderr, "ffnrt: %s is not in this build (the bench harness is not built for this OS)\n", argv[1]);
        return 2;
    }
#else
    if (strcmp(argv[1], "bench") == 0)
        return ffnrt_bench_main(argc - 2, argv + 2);
    if (strcmp(argv[1], "compare") == 0)
        return ffnrt_compare_main(argc - 2, argv + 2);
#endif
    if (strcmp(argv[1], "--version") == 0) {
        printf("ffnrt %s\n", FFNRT_VERSION_STRING);
        return 0;
    }
    fprintf(stderr, "ffnrt: unknown command %s\n", argv[1]);
    usage(stderr);
    return 2;
}
