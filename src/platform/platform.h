/* The platform layer: everything that differs by operating system, behind
 * one header. Nothing else in src/ includes an OS header (unistd.h, sys/...,
 * dlfcn.h, pthread.h, fcntl.h, dirent.h, strings.h, windows.h, cpuid.h:
 * tests/no_os_headers.sh checks it); it calls these instead.
 *
 *   posix.c     Linux, Android, macOS (and other POSIX systems)
 *   windows.c   Windows, written for mingw-w64 (compiled only on WIN32)
 *   portable.c  what needs no OS at all (ASCII case-insensitive compares)
 *   cpu.c       host CPU features, guarded by architecture
 *
 * Paths are UTF-8 everywhere; on Windows they are converted to UTF-16 and
 * passed to the W functions. '/' separates folders on every OS (Windows
 * accepts it as well as '\').
 *
 * Errors: functions returning int return 0 on success and -1 on failure
 * with errno set (Windows errors are mapped to the nearest errno value:
 * ENOENT, EACCES, EEXIST, ENOTDIR, ...), so callers keep one way to tell a
 * missing file from an unreadable one and strerror() names either. */
#ifndef FFNRT_PLATFORM_H
#define FFNRT_PLATFORM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* ------------------------------------------------------- mutex and once
 *
 * Mutexes and once-initialisation with static initialisers. POSIX wraps
 * pthread (its types need <pthread.h>, which this header therefore
 * includes there, and only there); Windows uses an SRWLOCK and
 * InitOnceExecuteOnce, both one pointer wide and zero-initialised, so no
 * <windows.h> leaks into the rest of the library. The library starts no
 * thread of its own: a context is used by one thread at a time, and these
 * guard what contexts share (the device registry, loading an API). */
#if defined(_WIN32)
typedef struct ffnrt_mutex {
    void *opaque; /* an SRWLOCK */
} ffnrt_mutex;
typedef struct ffnrt_once {
    void *opaque; /* an INIT_ONCE */
} ffnrt_once;
#define FFNRT_MUTEX_INIT {0}
#define FFNRT_ONCE_INIT {0}
#else
#include <pthread.h>
typedef struct ffnrt_mutex {
    pthread_mutex_t m;
} ffnrt_mutex;
typedef struct ffnrt_once {
    pthread_once_t o;
} ffnrt_once;
#define FFNRT_MUTEX_INIT {PTHREAD_MUTEX_INITIALIZER}
#define FFNRT_ONCE_INIT {PTHREAD_ONCE_INIT}
#endif

void ffnrt_mutex_lock(ffnrt_mutex *m);
void ffnrt_mutex_unlock(ffnrt_mutex *m);
/* Runs fn exactly once per ffnrt_once, however many threads call; every
 * caller returns after fn has finished. */
void ffnrt_call_once(ffnrt_once *once, void (*fn)(void));

/* ------------------------------------------------------- shared libraries */

/* Loads a shared library by file name (the OS's search rules) or path;
 * NULL on failure, with the loader's reason in why. Never unloaded by
 * ffnrt: an API's driver stays loaded for the life of the process. */
void *ffnrt_library_open(const char *name, char *why, size_t cap);
/* The address of symbol name in lib, or NULL. */
void *ffnrt_library_symbol(void *lib, const char *name);
/* The names under which this OS's OpenCL ICD loader is found, most
 * specific first, NULL-terminated: libOpenCL.so.1 then libOpenCL.so on
 * Linux (the SONAME; the unversioned name only comes with the -dev
 * package), libOpenCL.so on Android, the OpenCL framework on macOS,
 * OpenCL.dll on Windows. */
const char *const *ffnrt_opencl_loader_names(void);
/* The folder in which this OS's OpenCL ICD loader finds its drivers' .icd
 * files, written to buf: OCL_ICD_VENDORS where that names a folder, else
 * /etc/OpenCL/vendors (Linux, the BSDs). NULL where the loader keeps no
 * such folder (macOS's framework, Windows' registry, Android's vendor
 * library). */
const char *ffnrt_opencl_vendors_dir(char *buf, size_t cap);

/* ------------------------------------------------------- clocks, process */

/* A monotonic clock in nanoseconds (from an arbitrary start). */
uint64_t ffnrt_monotonic_ns(void);
/* This process's id (for names no other writer uses). */
long ffnrt_process_id(void);
/* The time of day in UTC into out, and its milliseconds; 0 on success. */
int ffnrt_utc_now(struct tm *out, int *milliseconds);

/* ------------------------------------------------------- files */

typedef enum ffnrt_file_kind {
    FFNRT_FILE_REGULAR,
    FFNRT_FILE_DIRECTORY,
    FFNRT_FILE_FIFO,
    FFNRT_FILE_CHARACTER_DEVICE,
    FFNRT_FILE_BLOCK_DEVICE,
    FFNRT_FILE_SOCKET,
    FFNRT_FILE_LINK,
    FFNRT_FILE_OTHER
} ffnrt_file_kind;

typedef struct ffnrt_file_info {
    ffnrt_file_kind kind;
    uint64_t size;
    int64_t mtime; /* seconds since the epoch, as time() counts */
} ffnrt_file_info;

/* An open file: a descriptor on POSIX, a HANDLE on Windows. */
typedef struct ffnrt_file {
    intptr_t h;
} ffnrt_file;

enum {
    /* Refuse a symbolic link at the last component (O_NOFOLLOW; on
     * Windows the reparse point itself is opened and reported as a link). */
    FFNRT_OPEN_NO_FOLLOW = 1
};

/* Opens path for reading without blocking on what is not a regular file:
 * a FIFO with no writer must not hang the caller (O_NONBLOCK; the caller
 * then asks ffnrt_file_stat what it opened and refuses it). Close-on-exec. */
int ffnrt_file_open_read(const char *path, int flags, ffnrt_file *f);
/* Creates path for writing, failing with EEXIST if it exists; readable
 * and writable by this user only (0600 on POSIX). Close-on-exec. */
int ffnrt_file_create_exclusive(const char *path, ffnrt_file *f);
int ffnrt_file_stat(ffnrt_file f, ffnrt_file_info *info);
/* Reads up to n bytes, retrying short reads and interruptions; returns
 * the bytes read (fewer only at the end of the file or on an error). */
size_t ffnrt_file_read(ffnrt_file f, void *buf, size_t n);
/* Writes all n bytes (retrying short writes); 0 or -1. */
int ffnrt_file_write(ffnrt_file f, const void *buf, size_t n);
int ffnrt_file_close(ffnrt_file f);

/* What path is, without opening it; a symbolic link is reported as one
 * (lstat). */
int ffnrt_path_stat(const char *path, ffnrt_file_info *info);
/* Removes a file. */
int ffnrt_path_remove(const char *path);
/* Replaces to with from in one step (rename on POSIX; MoveFileExW with
 * MOVEFILE_REPLACE_EXISTING on Windows): a reader sees the old file or the
 * new one, never a part. */
int ffnrt_path_replace(const char *from, const char *to);
/* mkdir -p: creates path and the folders above it that are missing, the
 * new ones private to this user (0700 on POSIX); fails with ENOTDIR if
 * path exists but is not a folder. path is modified while it runs and
 * restored. */
int ffnrt_make_dirs(char *path);
/* The same with the new folders' permissions as the user's umask makes
 * them (0777 & ~umask on POSIX; the parent's inherited ACL on Windows,
 * as both do): for results other users may read. */
int ffnrt_make_shared_dirs(char *path);
/* Whether this process may create and remove files in dir (access(W_OK |
 * X_OK) on POSIX; on Windows a folder's write access is its ACL's, which
 * the cache's trust check reads: 0 there). */
int ffnrt_dir_writable(const char *dir);
/* Calls fn(name, arg) for each entry of dir (not "." or ".."); -1 if dir
 * cannot be read. */
int ffnrt_dir_each(const char *dir, void (*fn)(const char *dir, const char *name, void *arg), void *arg);

/* A read-only mapping of a whole file (GGUF). */
typedef struct ffnrt_mapping {
    void *data;
    size_t size;
} ffnrt_mapping;
/* Maps the first size bytes of the open file f (size > 0) read-only and
 * private; the mapping outlives f. */
int ffnrt_map_file(ffnrt_file f, size_t size, ffnrt_mapping *m);
void ffnrt_unmap(ffnrt_mapping *m);

/* ------------------------------------------------------- the cache folder */

/* The user's cache folder for app, into out: on Linux (and other POSIX
 * systems but macOS) $XDG_CACHE_HOME/app when XDG_CACHE_HOME is absolute
 * (the XDG spec ignores relative paths), else $HOME/.cache/app; on macOS
 * $HOME/Library/Caches/app; on Windows %LOCALAPPDATA%\app. Returns the
 * length written (as snprintf: may exceed cap), or -1 with why saying
 * which variables are missing. */
int ffnrt_user_cache_dir(const char *app, char *out, size_t cap, const char **why);

/* The cache's trust rules: whether another user could have planted what
 * the cache reads (PoCL's entries are native code this process runs).
 *
 * POSIX: a folder is trusted when it and every folder above it (after
 * resolving links) are owned by this user (those above may be root's) and
 * writable by no one else (those above may be world-writable if sticky,
 * as /tmp is); an entry when it is owned by this user and writable by no
 * one else.
 *
 * Windows: the owner SID of the folder and of every folder above it (by
 * name, GetNamedSecurityInfoW) and of an entry (by handle,
 * GetSecurityInfo) must equal the SID of this process's token user, or,
 * for the folders above, be the Administrators group or SYSTEM; and the
 * DACL of the folder and of an entry may grant no write right (data,
 * append, delete, delete child, WRITE_DAC, WRITE_OWNER, generic write or
 * all) to anyone but this user, SYSTEM, the Administrators and CREATOR
 * OWNER (a NULL DACL grants everyone everything); the DACL of every folder
 * above may grant none of them the rights that would move the path below
 * aside (delete child, delete, WRITE_DAC, WRITE_OWNER, all), while adding
 * entries stays allowed, as a sticky /tmp allows it (C:\ grants it to
 * every signed-in user). Inherit-only entries are skipped: they apply to
 * what a folder holds. %LOCALAPPDATA% is private to its user by default.
 *
 * Each returns 1 when trusted, else 0 with why naming the file and the
 * reason ("... is owned by uid 65534, not by this user (uid 1000)", "...
 * is writable by every user"). */
int ffnrt_trusted_directory(const char *dir, char *why, size_t cap);
int ffnrt_trusted_file(ffnrt_file f, char *why, size_t cap);

/* ------------------------------------------------------- the lab's processes and folders
 *
 * What the bench needs to start its helpers (a cold start in a fresh
 * process, the peers) and keep their scratch files; the library itself
 * starts no process. */

/* A started child process: a pid on POSIX, a process HANDLE on Windows. */
typedef struct ffnrt_child {
    intptr_t h;
} ffnrt_child;

/* Starts argv[0] (a path, or a name looked up on PATH) with the arguments
 * argv (NULL-terminated), this process's environment with each
 * "NAME=VALUE" of env_set (NULL-terminated, or NULL) added or replacing
 * the variable of that name, stdin and stderr shared with this process,
 * and its stdout into *out, read in text mode (Windows' CRLF arrive as
 * '\n'). posix_spawnp on POSIX; CreateProcessW on Windows, each argument
 * quoted by the C runtime's rules. 0, or -1 with errno set. */
int ffnrt_child_start(char *const argv[], const char *const env_set[], ffnrt_child *child, FILE **out);
/* Waits for the child to end and releases it: *exit_code is its exit
 * status (Windows: the process's exit code, an exception's NTSTATUS
 * included), or -1 when a signal ended it, *signal_number that signal
 * (0 if none). 0, or -1 with errno set. */
int ffnrt_child_wait(ffnrt_child child, int *exit_code, int *signal_number);

/* The running program's file (UTF-8) into out; 0, or -1 with errno set
 * (/proc/self/exe on Linux and Android, _NSGetExecutablePath on macOS,
 * GetModuleFileNameW on Windows; ENOSYS elsewhere). */
int ffnrt_executable_path(char *out, size_t cap);
/* This machine's name (gethostname; GetComputerNameExW's DNS host name),
 * NUL-terminated in out; 0, or -1 with errno set. */
int ffnrt_host_name(char *out, size_t cap);
/* The processors this program may run on now (sysconf's online count;
 * GetActiveProcessorCount over every group), at least 1. */
int ffnrt_online_cpus(void);
/* What the OS appends to a program's name: ".exe" on Windows, "". */
const char *ffnrt_executable_suffix(void);
/* A new folder private to this user in the OS's temporary folder ($TMPDIR
 * or /tmp; GetTempPathW), its name prefix and a unique tail, into out. 0,
 * or -1 with errno set. */
int ffnrt_make_temp_dir(const char *prefix, char *out, size_t cap);
/* Removes an empty folder. */
int ffnrt_dir_remove(const char *path);
/* rm -rf: removes path and, if it is a folder, everything in it, never
 * following a link (a link is removed, not what it names). 0 when nothing
 * is left, or -1 with errno set by the first removal that failed (the rest
 * is still tried). In portable.c, over the calls above. */
int ffnrt_remove_tree(const char *path);

/* ------------------------------------------------------- text in and out
 *
 * Windows hands a program its char argv and getenv's values in the ANSI
 * code page (1252 and the like), so a folder named "José" or "日本" does
 * not arrive as UTF-8 (measured under Wine: "ï" as one byte 0xef, "日本語"
 * as "???"); and fopen reads its path in the same code page. These take
 * the UTF-16 side there and hand over UTF-8, as every other call here
 * does; on POSIX they pass the bytes through. */

/* The value of the environment variable name as UTF-8 into out
 * (NUL-terminated when it fits): its length, which may exceed cap - 1 as
 * snprintf's does (out then holds nothing usable), or -1 when it is
 * unset. Windows: _wgetenv. */
int ffnrt_env_get(const char *name, char *out, size_t cap);
/* Replaces main's argc and argv by the command line's arguments in UTF-8
 * (Windows: CommandLineToArgvW on GetCommandLineW; the strings are kept
 * for the life of the process, and a second call returns the first's);
 * elsewhere it changes nothing. 0, or -1 with errno set, the arguments
 * then left as they were. */
int ffnrt_arguments_utf8(int *argc, char ***argv);
/* fopen with a UTF-8 path (Windows: _wfopen). */
FILE *ffnrt_fopen(const char *path, const char *mode);

/* ------------------------------------------------------- text */

/* ASCII case-insensitive compares (strcasecmp and strncasecmp are POSIX's
 * strings.h; these also ignore the locale, as keywords should). */
int ffnrt_strcasecmp(const char *a, const char *b);
int ffnrt_strncasecmp(const char *a, const char *b, size_t n);

/* ------------------------------------------------------- terminals (the lab) */

/* Whether fd is a terminal, and its width in columns (0 when unknown). */
int ffnrt_isatty(int fd);
int ffnrt_terminal_columns(int fd);
/* Lets a console show the program's UTF-8 text as it is. Windows' console
 * decodes what a program writes in its output code page (437, 850 or
 * 1252 by default: "2·d·m" arrives as "2┬╖d┬╖m"), so where stdout or
 * stderr is a console this sets CP_UTF8 and puts the console's own code
 * page back at exit (the console outlives the program: cmd.exe would keep
 * it), and writes stdout in blocks (windows.c says why). Called before
 * anything is printed. Nothing where neither is a console (a pipe, a
 * file), nor on POSIX, whose terminals take the bytes as they come. */
void ffnrt_console_utf8(void);

/* ------------------------------------------------------- the CPU */

/* Whether the host CPU has F16C with the AVX state its encoding needs
 * enabled by the OS (x86 only: 0 on every other architecture). */
int ffnrt_cpu_has_f16c(void);
/* Whether it has AVX2, with the AVX state enabled (x86 only, as above). */
int ffnrt_cpu_has_avx2(void);

#endif /* FFNRT_PLATFORM_H */
