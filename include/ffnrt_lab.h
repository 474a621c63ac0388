/* ffnrt_lab.h: the few doors ffnrt's lab has into the library beyond the
 * public headers. The lab (the compare harness libffnrt_compare, the ffnrt
 * command, the bench harness, the double reference) is built over the
 * public API only; where it needs something of the library's own (its
 * error type and the way a call ends, its SHA-256), it comes through here
 * instead of through src/ headers, and the library keeps the one
 * definition.
 *
 * Not installed, and no promise of stability: an app uses ffnrt.h. */
#ifndef FFNRT_LAB_H
#define FFNRT_LAB_H

#include "ffnrt.h"

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* printf-style format checks with C99's conversions (%zu, %lld) on every
 * OS: mingw-w64's "printf" archetype is msvcrt's, so there the check is
 * gnu_printf's (ffnrt builds with __USE_MINGW_ANSI_STDIO, whose printf
 * family has C99's conversions). */
#if defined(__MINGW32__)
#define FFNRT_PRINTF_FORMAT(fmt, args) __attribute__((format(gnu_printf, fmt, args)))
#else
#define FFNRT_PRINTF_FORMAT(fmt, args) __attribute__((format(printf, fmt, args)))
#endif

/* ---------------------------------------------------------------- errors */

/* An error as the library keeps it, per context and per call: a status and
 * a message. The library's own code builds its errors with these too. */
#define FFNRT_ERROR_MESSAGE_SIZE 512

typedef struct ffnrt_error {
    ffnrt_status status;
    char message[FFNRT_ERROR_MESSAGE_SIZE];
} ffnrt_error;

/* Records status and a printf-style message in err (which may be NULL) and
 * returns status, so callers can write `return ffnrt_fail(err, ...)`. */
FFNRT_API ffnrt_status ffnrt_fail(ffnrt_error *err, ffnrt_status status, const char *fmt, ...)
    FFNRT_PRINTF_FORMAT(3, 4);
FFNRT_API void ffnrt_error_clear(ffnrt_error *err);

/* Ends a public call of a library built on ffnrt (libffnrt_compare) as
 * ffnrt's own calls end: err FFNRT_OK clears ctx's last error
 * (ffnrt_context_last_error; ctx may be NULL) and this thread's
 * (ffnrt_last_error_message); an error becomes both (its status's text
 * where it has no message). Returns err's status. */
FFNRT_API ffnrt_status ffnrt_lab_end_call(ffnrt_context *ctx, const ffnrt_error *err);

/* ------------------------------------------------------------------ roofs */

/* One dispatch of the arithmetic roof kernel (shaders/roof.kernel) over
 * out's elements (an f32 tensor: a work-item each, whole groups of up to
 * 64): chains of fp32 FMAs, or (integer) of the integer path's 32-bit
 * products. *ops gets the flops, or the 8-bit code products, it did; its
 * device time is ffnrt_context_last_op_time's. The bench's op-rate roofs. */
FFNRT_API ffnrt_status ffnrt_lab_roof(ffnrt_context *ctx, int integer, ffnrt_tensor *out, double *ops);

/* ---------------------------------------------------------------- SHA-256 */

/* SHA-256 (FIPS 180-4) of n bytes, as 64 lowercase hex digits and a NUL:
 * the disk cache's digest, for the compare harness's sealed criteria. */
FFNRT_API void ffnrt_lab_sha256_hex(const void *data, size_t n, char hex[65]);

/* ---------------------------------------------------------------- the OS */

/* The platform layer's calls the lab needs (src/platform/platform.h: the
 * lab includes no OS header either, and no src/ header): a monotonic
 * clock in nanoseconds, the time of day in UTC with its milliseconds (0
 * on success), an ASCII
 * case-insensitive compare, and whether a file descriptor is a terminal
 * and how wide (0 when unknown). */
FFNRT_API uint64_t ffnrt_lab_monotonic_ns(void);
FFNRT_API int ffnrt_lab_utc_now(struct tm *out, int *milliseconds);
FFNRT_API int ffnrt_lab_strcasecmp(const char *a, const char *b);
FFNRT_API int ffnrt_lab_isatty(int fd);
FFNRT_API int ffnrt_lab_terminal_columns(int fd);
/* A console shows this program's UTF-8 text as it is (Windows: the
 * console's output code page is UTF-8 until exit; elsewhere nothing). */
FFNRT_API void ffnrt_lab_console_utf8(void);

/* Paths as UTF-8 on every OS: main's arguments replaced by the command
 * line's in UTF-8 (Windows gives a char argv in the ANSI code page, where
 * "José" or "日本" does not survive; elsewhere nothing changes; 0, or -1
 * with errno set and the arguments left), and fopen of a UTF-8 path. */
FFNRT_API int ffnrt_lab_arguments_utf8(int *argc, char ***argv);
FFNRT_API FILE *ffnrt_lab_fopen(const char *path, const char *mode);

/* The bench's helpers in processes of their own, and their scratch
 * folders (platform.h says each one's rules): a child started with
 * variables added to this process's environment, its stdout read through
 * *out (which the caller closes) and then waited for; this program's
 * path, this machine's name and the suffix of a program's name (".exe" on
 * Windows); a new private folder in the OS's temporary one; mkdir -p;
 * rm -rf. Each returns 0, or -1 with errno set. And whether path names a
 * file (or a link, which is not followed): 1 or 0. */
typedef struct ffnrt_lab_child {
    intptr_t h;
} ffnrt_lab_child;
FFNRT_API int ffnrt_lab_child_start(char *const argv[], const char *const env_set[], ffnrt_lab_child *child,
                                    FILE **out);
/* *exit_code: the exit status, or -1 when signal *signal_number ended it. */
FFNRT_API int ffnrt_lab_child_wait(ffnrt_lab_child child, int *exit_code, int *signal_number);
FFNRT_API int ffnrt_lab_executable_path(char *out, size_t cap);
FFNRT_API int ffnrt_lab_host_name(char *out, size_t cap);
/* The processors this program may run on now, at least 1. */
FFNRT_API int ffnrt_lab_online_cpus(void);
FFNRT_API const char *ffnrt_lab_executable_suffix(void);
FFNRT_API int ffnrt_lab_make_temp_dir(const char *prefix, char *out, size_t cap);
/* shared: the new folders as the umask makes them (results), else private
 * to this user (scratch). */
FFNRT_API int ffnrt_lab_make_dirs(const char *path, int shared);
FFNRT_API int ffnrt_lab_remove_tree(const char *path);
FFNRT_API int ffnrt_lab_is_file(const char *path);
/* Calls fn(dir, name, arg) for each entry of dir but "." and ".."; 0, or
 * -1 when dir cannot be read. */
FFNRT_API int ffnrt_lab_dir_each(const char *dir, void (*fn)(const char *dir, const char *name, void *arg), void *arg);

#ifdef __cplusplus
}
#endif
#endif /* FFNRT_LAB_H */
