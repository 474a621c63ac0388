/* The plain harness behind tests/plain_criterion/criterion/criterion.h:
 * lists the registered tests, runs each (each parameter of a
 * parameterized one) in a process of its own, a few at a time, and
 * prints a line per test and Criterion's synthesis line.
 *
 *   SUITE [--jobs N] [--filter GLOB] [--list]
 *
 * GLOB matches "suite/name" (* and ?), as Criterion's --filter does.
 * A test's process is this program again on Windows (CreateProcessW with
 * "--run-one suite/name INDEX"), a fork on POSIX; its exit code says how
 * it ended: 0 passed, 1 failed, 2 skipped, anything else a crash. The
 * runner ends a test's process past its .timeout. A process that will
 * not start (Wine's CreateProcessW has failed once on a loaded machine)
 * is tried again after a pause, four times; a case that never starts is
 * a crash, and the others still run.
 * PLAIN_CRITERION_REFUSE_STARTS=N makes the first N starts fail, so that
 * the harness's own test reaches that path. */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _WIN32
#include <windows.h>
#else
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

enum { EXIT_PASSED = 0, EXIT_FAILED = 1, EXIT_SKIPPED = 2 };

static const struct cr_plain_test **tests;
static size_t test_count;

void cr_plain_register(const struct cr_plain_test *test)
{
    const struct cr_plain_test **grown = realloc(tests, (test_count + 1) * sizeof *tests);
    if (!grown) {
        fputs("plain_criterion: out of memory registering tests\n", stderr);
        abort();
    }
    tests = grown;
    tests[test_count++] = test;
}

/* ------------------------------------------------ inside a test's process */

static int expectations_failed;

void cr_plain_fail(int fatal, const char *file, int line, const char *check, const char *format, ...)
{
    fprintf(stderr, "[----] %s:%d: %s failed: %s", file, line, fatal ? "assertion" : "expectation", check);
    if (format[0]) {
        va_list args;
        va_start(args, format);
        fputs(": ", stderr);
        vfprintf(stderr, format, args);
        va_end(args);
    }
    fputc('\n', stderr);
    if (!fatal) {
        expectations_failed = 1;
        return;
    }
    /* The process ends here, whatever thread failed; no fini, as nothing
     * outlives the process. */
    fflush(NULL);
    _Exit(EXIT_FAILED);
}

void cr_plain_skip(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fputs("[----] skipped: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    fflush(NULL);
    _Exit(EXIT_SKIPPED);
}

void cr_plain_log(const char *level, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fprintf(stderr, "[----] %s: ", level);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
}

static int run_test(const struct cr_plain_test *t, size_t index)
{
    if (t->extra.init)
        t->extra.init();
    if (t->run_param) {
        struct criterion_test_params p = t->params();
        t->run_param((char *)p.params + index * p.size);
    } else {
        t->run();
    }
    if (t->extra.fini)
        t->extra.fini();
    fflush(NULL);
    return expectations_failed ? EXIT_FAILED : EXIT_PASSED;
}

/* ------------------------------------------------ the runner */

typedef struct {
    const struct cr_plain_test *test;
    size_t index, of; /* the parameter, and how many (0: not parameterized) */
} test_case;

typedef struct {
    const test_case *c;
    double started;
#ifdef _WIN32
    HANDLE process;
#else
    pid_t pid;
#endif
} running_case;

static double now_seconds(void)
{
#ifdef _WIN32
    return (double)GetTickCount64() * 1e-3;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
#endif
}

static void pause_ms(unsigned ms)
{
#ifdef _WIN32
    Sleep(ms);
#else
    nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000L}, NULL);
#endif
}

static int glob_match(const char *glob, const char *s)
{
    for (; *glob; glob++, s++) {
        if (*glob == '*') {
            for (;; s++) {
                if (glob_match(glob + 1, s))
                    return 1;
                if (!*s)
                    return 0;
            }
        }
        if (!*s || (*glob != '?' && *glob != *s))
            return 0;
    }
    return *s == '\0';
}

static int by_suite_and_name(const void *a, const void *b)
{
    const struct cr_plain_test *x = *(const struct cr_plain_test *const *)a;
    const struct cr_plain_test *y = *(const struct cr_plain_test *const *)b;
    int c = strcmp(x->suite, y->suite);
    return c ? c : strcmp(x->name, y->name);
}

static const struct cr_plain_test *find_test(const char *id)
{
    char full[512];
    for (size_t i = 0; i < test_count; i++) {
        snprintf(full, sizeof full, "%s/%s", tests[i]->suite, tests[i]->name);
        if (strcmp(full, id) == 0)
            return tests[i];
    }
    return NULL;
}

/* Starts the case's process; 0 where it could not, with why in
 * why[why_size]. */
static int start_case(running_case *r, const test_case *c, char *why, size_t why_size)
{
    static long refused = -1;
    if (refused < 0) {
        const char *n = getenv("PLAIN_CRITERION_REFUSE_STARTS");
        refused = n ? strtol(n, NULL, 10) : 0;
    }
    r->c = c;
    r->started = now_seconds();
    if (refused > 0) {
        refused--;
        snprintf(why, why_size, "refused (PLAIN_CRITERION_REFUSE_STARTS)");
        return 0;
    }
#ifdef _WIN32
    wchar_t self[32768];
    DWORD len = GetModuleFileNameW(NULL, self, 32768);
    if (len == 0 || len >= 32768) {
        snprintf(why, why_size, "GetModuleFileNameW failed (error %lu)", (unsigned long)GetLastError());
        return 0;
    }
    /* "self" --run-one suite/name INDEX: the names are C identifiers. */
    char tail[600];
    snprintf(tail, sizeof tail, " --run-one %s/%s %zu", c->test->suite, c->test->name, c->index);
    wchar_t line[32768 + 640];
    size_t n = 0;
    line[n++] = L'"';
    for (DWORD i = 0; i < len; i++)
        line[n++] = self[i];
    line[n++] = L'"';
    for (const char *t = tail; *t; t++)
        line[n++] = (wchar_t)(unsigned char)*t;
    line[n] = 0;
    STARTUPINFOW si = {.cb = sizeof si};
    PROCESS_INFORMATION pi;
    if (!CreateProcessW(self, line, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi)) {
        snprintf(why, why_size, "CreateProcessW failed (error %lu)", (unsigned long)GetLastError());
        return 0;
    }
    CloseHandle(pi.hThread);
    r->process = pi.hProcess;
    return 1;
#else
    fflush(NULL);
    r->pid = fork();
    if (r->pid < 0) {
        snprintf(why, why_size, "fork failed (%s)", strerror(errno));
        return 0;
    }
    if (r->pid == 0)
        _exit(run_test(c->test, c->index));
    return 1;
#endif
}

/* How the case ended: 1 with *how set (an exit code, or -1 - signal on
 * POSIX), 0 while it runs. */
static int case_ended(running_case *r, long *how)
{
#ifdef _WIN32
    DWORD waited = WaitForSingleObject(r->process, 0), code = 0;
    if (waited == WAIT_TIMEOUT)
        return 0;
    if (waited != WAIT_OBJECT_0 || !GetExitCodeProcess(r->process, &code))
        code = 0xFFFFFFFFu; /* lost track of it: a crash, not a pass */
    CloseHandle(r->process);
    *how = (long)code;
    return 1;
#else
    int status = 0;
    pid_t waited = waitpid(r->pid, &status, WNOHANG);
    if (waited == 0)
        return 0;
    if (waited != r->pid) { /* lost track of it: a crash, not a pass */
        *how = -1;
        return 1;
    }
    *how = WIFEXITED(status) ? WEXITSTATUS(status) : -1 - (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return 1;
#endif
}

static void end_case(running_case *r)
{
#ifdef _WIN32
    TerminateProcess(r->process, 124);
    WaitForSingleObject(r->process, INFINITE);
    CloseHandle(r->process);
#else
    kill(r->pid, SIGKILL);
    waitpid(r->pid, NULL, 0);
#endif
}

typedef struct {
    size_t tested, passed, failed, crashed, skipped;
} synthesis;

enum { START_ATTEMPTS = 5 }; /* pauses of 0.5, 1, 2 and 4 s between them */

/* "suite::name", with " [i of n]" for a parameter. */
static void case_label(const test_case *c, char *out, size_t size)
{
    int n = snprintf(out, size, "%s::%s", c->test->suite, c->test->name);
    if (c->of && n > 0 && (size_t)n < size)
        snprintf(out + n, size - (size_t)n, " [%zu of %zu]", c->index + 1, c->of);
}

static void report(const running_case *r, long how, int timed_out, synthesis *s)
{
    char label[600];
    case_label(r->c, label, sizeof label);
    double seconds = now_seconds() - r->started;
    s->tested++;
    if (timed_out) {
        s->crashed++;
        printf("[TIMEOUT] %s: past its %.0f s\n", label, r->c->test->extra.timeout);
    } else if (how == EXIT_PASSED) {
        s->passed++;
        printf("[PASS] %s (%.1f s)\n", label, seconds);
    } else if (how == EXIT_SKIPPED) {
        s->skipped++;
        printf("[SKIP] %s\n", label);
    } else if (how == EXIT_FAILED) {
        s->failed++;
        printf("[FAIL] %s (%.1f s)\n", label, seconds);
    } else {
        s->crashed++;
        if (how < 0)
            printf("[CRASH] %s: signal %ld\n", label, -1 - how);
        else
            printf("[CRASH] %s: exit code %ld (0x%lx)\n", label, how, (unsigned long)how);
    }
    fflush(stdout);
}

static int usage(const char *self)
{
    fprintf(stderr, "usage: %s [--jobs N] [--filter GLOB] [--list]\n", self);
    return 2;
}

int main(int argc, char **argv)
{
    qsort(tests, test_count, sizeof *tests, by_suite_and_name);
    long jobs = 1;
    const char *filter = NULL;
    int list = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--run-one") == 0 && i + 2 < argc) {
            const struct cr_plain_test *t = find_test(argv[i + 1]);
            char *end;
            unsigned long long index = strtoull(argv[i + 2], &end, 10);
            size_t cases = t && t->run_param ? t->params().length : 1;
            if (!t || *end || index >= cases) {
                fprintf(stderr, "plain_criterion: no test %s [%s]\n", argv[i + 1], argv[i + 2]);
                return 3;
            }
            return run_test(t, (size_t)index);
        } else if ((strcmp(a, "--jobs") == 0 || strcmp(a, "-j") == 0) && i + 1 < argc) {
            jobs = strtol(argv[++i], NULL, 10);
        } else if (strncmp(a, "--jobs=", 7) == 0) {
            jobs = strtol(a + 7, NULL, 10);
        } else if (strcmp(a, "--filter") == 0 && i + 1 < argc) {
            filter = argv[++i];
        } else if (strncmp(a, "--filter=", 9) == 0) {
            filter = a + 9;
        } else if (strcmp(a, "--list") == 0) {
            list = 1;
        } else {
            return usage(argv[0]);
        }
    }
    if (jobs < 1 || jobs > 64)
        return usage(argv[0]);

    /* Every case the filter keeps, parameters expanded. */
    test_case *cases = NULL;
    size_t count = 0;
    for (size_t i = 0; i < test_count; i++) {
        const struct cr_plain_test *t = tests[i];
        char full[512];
        snprintf(full, sizeof full, "%s/%s", t->suite, t->name);
        if (t->extra.disabled || (filter && !glob_match(filter, full)))
            continue;
        size_t of = t->run_param ? t->params().length : 0;
        test_case *grown = realloc(cases, (count + (of ? of : 1)) * sizeof *cases);
        if (!grown) {
            fputs("plain_criterion: out of memory\n", stderr);
            return 3;
        }
        cases = grown;
        for (size_t k = 0; k < (of ? of : 1); k++)
            cases[count++] = (test_case){t, k, of};
        if (list)
            printf("%s: %zu case%s\n", full, of ? of : 1, of > 1 ? "s" : "");
    }
    if (list) {
        free(cases);
        return 0;
    }

    synthesis s = {0};
    running_case running[64];
    int active = 0;
    size_t next = 0;
    while (next < count || active > 0) {
        while (active < jobs && next < count) {
            const test_case *c = &cases[next++];
            char why[160], label[600];
            case_label(c, label, sizeof label);
            /* Refused on purpose, the pauses are a hundredth as long: the
             * harness's own test checks the tries, not the waiting. */
            const unsigned pause = getenv("PLAIN_CRITERION_REFUSE_STARTS") ? 5u : 500u;
            int started = 0;
            for (unsigned attempt = 1; attempt <= START_ATTEMPTS && !started; attempt++) {
                started = start_case(&running[active], c, why, sizeof why);
                if (!started && attempt < START_ATTEMPTS) {
                    fprintf(stderr, "plain_criterion: could not start %s: %s; again in %u ms\n", label, why,
                            pause << (attempt - 1));
                    pause_ms(pause << (attempt - 1));
                }
            }
            if (started) {
                active++;
            } else {
                s.tested++;
                s.crashed++;
                printf("[CRASH] %s: never started, %u tries: %s\n", label, START_ATTEMPTS, why);
                fflush(stdout);
            }
        }
        pause_ms(20);
        for (int k = 0; k < active;) {
            long how = 0;
            double timeout = running[k].c->test->extra.timeout;
            int timed_out = 0;
            if (!case_ended(&running[k], &how)) {
                if (timeout <= 0 || now_seconds() - running[k].started <= timeout) {
                    k++;
                    continue;
                }
                end_case(&running[k]);
                timed_out = 1;
            }
            report(&running[k], how, timed_out, &s);
            running[k] = running[--active];
        }
    }
    free(cases);
    printf("[====] Synthesis: Tested: %zu | Passing: %zu | Failing: %zu | Crashing: %zu | Skipped: %zu\n", s.tested,
           s.passed, s.failed, s.crashed, s.skipped);
    return s.passed + s.skipped == s.tested ? 0 : 1;
}
