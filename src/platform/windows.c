/* The platform layer on Windows (platform.h), written for mingw-w64 (and
 * compiled only on WIN32). Paths arrive as UTF-8 and go to the W functions
 * as UTF-16; Windows errors are mapped to errno values. */
#if defined(_WIN32)

#define WIN32_LEAN_AND_MEAN
#include "platform/platform.h"

#include <windows.h>

#include <aclapi.h>
#include <shellapi.h> /* CommandLineToArgvW */
#include <sddl.h>
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

_Static_assert(sizeof(SRWLOCK) == sizeof(void *), "ffnrt_mutex holds an SRWLOCK");
_Static_assert(sizeof(INIT_ONCE) == sizeof(void *), "ffnrt_once holds an INIT_ONCE");

/* ------------------------------------------------------- errors, paths */

static int set_errno_from(DWORD e)
{
    switch (e) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND:
    case ERROR_INVALID_DRIVE:
    case ERROR_BAD_NETPATH:
        errno = ENOENT;
        break;
    case ERROR_ACCESS_DENIED:
    case ERROR_SHARING_VIOLATION:
    case ERROR_LOCK_VIOLATION:
        errno = EACCES;
        break;
    case ERROR_FILE_EXISTS:
    case ERROR_ALREADY_EXISTS:
        errno = EEXIST;
        break;
    case ERROR_DIRECTORY:
        errno = ENOTDIR;
        break;
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_OUTOFMEMORY:
        errno = ENOMEM;
        break;
    case ERROR_FILENAME_EXCED_RANGE:
        errno = ENAMETOOLONG;
        break;
    case ERROR_DISK_FULL:
    case ERROR_HANDLE_DISK_FULL:
        errno = ENOSPC;
        break;
    default:
        errno = EIO;
    }
    return -1;
}

/* UTF-8 to a new UTF-16 string (free it), or NULL with errno set. */
static wchar_t *wide(const char *utf8)
{
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8, -1, NULL, 0);
    if (n <= 0) {
        errno = EINVAL;
        return NULL;
    }
    wchar_t *w = malloc((size_t)n * sizeof *w);
    if (!w) {
        errno = ENOMEM;
        return NULL;
    }
    MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8, -1, w, n);
    return w;
}

/* UTF-16 to UTF-8 into out; the length, or -1. */
static int narrow(const wchar_t *w, char *out, size_t cap)
{
    int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, out, (int)(cap > INT_MAX ? INT_MAX : cap), NULL, NULL);
    return n > 0 ? n - 1 : -1;
}

/* ------------------------------------------------------- mutex and once */

void ffnrt_mutex_lock(ffnrt_mutex *m) { AcquireSRWLockExclusive((PSRWLOCK)&m->opaque); }
void ffnrt_mutex_unlock(ffnrt_mutex *m) { ReleaseSRWLockExclusive((PSRWLOCK)&m->opaque); }

static BOOL CALLBACK run_once(PINIT_ONCE once, PVOID fn, PVOID *context)
{
    (void)once;
    (void)context;
    void (*f)(void);
    memcpy(&f, &fn, sizeof f);
    f();
    return TRUE;
}

void ffnrt_call_once(ffnrt_once *once, void (*fn)(void))
{
    void *arg;
    memcpy(&arg, &fn, sizeof arg);
    InitOnceExecuteOnce((PINIT_ONCE)&once->opaque, run_once, arg, NULL);
}

/* ------------------------------------------------------- shared libraries */

void *ffnrt_library_open(const char *name, char *why, size_t cap)
{
    /* The name converted on the stack: the backends load their API's
     * loader once a process, so a failed allocation here would hide the
     * API until exit (test_host_alloc found it). */
    wchar_t w[MAX_PATH];
    int converted = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, name, -1, w, MAX_PATH) > 0;
    HMODULE lib = converted ? LoadLibraryExW(w, NULL, 0) : NULL;
    DWORD e = GetLastError(); /* a name too long or not UTF-8, or the loader's */
    if (!lib && why && cap)
        snprintf(why, cap, "%s: LoadLibrary error %lu", name, (unsigned long)e);
    return (void *)lib;
}

void *ffnrt_library_symbol(void *lib, const char *name)
{
    FARPROC p = GetProcAddress((HMODULE)lib, name);
    void *v;
    memcpy(&v, &p, sizeof v);
    return v;
}

const char *const *ffnrt_opencl_loader_names(void)
{
    static const char *const names[] = {"OpenCL.dll", NULL};
    return names;
}

/* The Khronos loader reads its drivers from the registry
 * (HKLM\SOFTWARE\Khronos\OpenCL\Vendors and the display adapters' keys). */
const char *ffnrt_opencl_vendors_dir(char *buf, size_t cap)
{
    (void)buf, (void)cap;
    return NULL;
}

/* ------------------------------------------------------- clocks, process */

uint64_t ffnrt_monotonic_ns(void)
{
    static LARGE_INTEGER freq;
    LARGE_INTEGER now;
    if (!freq.QuadPart)
        QueryPerformanceFrequency(&freq); /* fixed at boot; a race writes the same value */
    QueryPerformanceCounter(&now);
    uint64_t q = (uint64_t)now.QuadPart, f = (uint64_t)freq.QuadPart;
    return q / f * 1000000000u + q % f * 1000000000u / f;
}

long ffnrt_process_id(void) { return (long)GetCurrentProcessId(); }

int ffnrt_utc_now(struct tm *out, int *milliseconds)
{
    FILETIME ft;
    GetSystemTimeAsFileTime(&ft);
    uint64_t t = (uint64_t)ft.dwHighDateTime << 32 | ft.dwLowDateTime; /* 100 ns since 1601 */
    *milliseconds = (int)(t / 10000u % 1000u);
    time_t s = (time_t)(t / 10000000u - 11644473600ULL);
    return gmtime_s(out, &s) == 0 ? 0 : -1;
}

/* ------------------------------------------------------- files */

/* FILETIME (100 ns since 1601) to seconds since 1970. */
static int64_t unix_seconds(FILETIME ft)
{
    uint64_t t = (uint64_t)ft.dwHighDateTime << 32 | ft.dwLowDateTime;
    return (int64_t)(t / 10000000u) - 11644473600LL;
}

static ffnrt_file_kind kind_of(DWORD attributes, DWORD type)
{
    if (type == FILE_TYPE_PIPE)
        return FFNRT_FILE_FIFO;
    if (type == FILE_TYPE_CHAR)
        return FFNRT_FILE_CHARACTER_DEVICE;
    if (attributes & FILE_ATTRIBUTE_REPARSE_POINT)
        return FFNRT_FILE_LINK;
    if (attributes & FILE_ATTRIBUTE_DIRECTORY)
        return FFNRT_FILE_DIRECTORY;
    return type == FILE_TYPE_DISK ? FFNRT_FILE_REGULAR : FFNRT_FILE_OTHER;
}

int ffnrt_file_open_read(const char *path, int flags, ffnrt_file *f)
{
    f->h = (intptr_t)INVALID_HANDLE_VALUE;
    wchar_t *w = wide(path);
    if (!w)
        return -1;
    /* FILE_FLAG_BACKUP_SEMANTICS opens a folder too, so that the caller
     * can say what it is; with FILE_FLAG_OPEN_REPARSE_POINT a link is
     * opened itself and then reported as a link. Named pipes live under
     * \\.\pipe\ only and do not block an open. */
    DWORD extra = FILE_FLAG_BACKUP_SEMANTICS | (flags & FFNRT_OPEN_NO_FOLLOW ? FILE_FLAG_OPEN_REPARSE_POINT : 0);
    HANDLE h = CreateFileW(w, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                           OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL | extra, NULL);
    DWORD e = GetLastError();
    free(w);
    if (h == INVALID_HANDLE_VALUE)
        return set_errno_from(e);
    f->h = (intptr_t)h;
    return 0;
}

int ffnrt_file_create_exclusive(const char *path, ffnrt_file *f)
{
    f->h = (intptr_t)INVALID_HANDLE_VALUE;
    wchar_t *w = wide(path);
    if (!w)
        return -1;
    /* Not inherited by child processes (close-on-exec); the new file
     * inherits its folder's ACL, which is the user's own under
     * %LOCALAPPDATA%. */
    HANDLE h = CreateFileW(w, GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_DELETE, NULL, CREATE_NEW,
                           FILE_ATTRIBUTE_NORMAL, NULL);
    DWORD e = GetLastError();
    free(w);
    if (h == INVALID_HANDLE_VALUE)
        return set_errno_from(e);
    f->h = (intptr_t)h;
    return 0;
}

int ffnrt_file_stat(ffnrt_file f, ffnrt_file_info *info)
{
    HANDLE h = (HANDLE)f.h;
    DWORD type = GetFileType(h);
    memset(info, 0, sizeof *info);
    if (type != FILE_TYPE_DISK) {
        info->kind = kind_of(0, type);
        return 0;
    }
    BY_HANDLE_FILE_INFORMATION bh;
    if (!GetFileInformationByHandle(h, &bh))
        return set_errno_from(GetLastError());
    info->kind = kind_of(bh.dwFileAttributes, type);
    info->size = (uint64_t)bh.nFileSizeHigh << 32 | bh.nFileSizeLow;
    info->mtime = unix_seconds(bh.ftLastWriteTime);
    return 0;
}

size_t ffnrt_file_read(ffnrt_file f, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        DWORD want = n - got > 0x40000000u ? 0x40000000u : (DWORD)(n - got), r = 0;
        if (!ReadFile((HANDLE)f.h, (char *)buf + got, want, &r, NULL) || r == 0)
            break;
        got += r;
    }
    return got;
}

int ffnrt_file_write(ffnrt_file f, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        DWORD want = n > 0x40000000u ? 0x40000000u : (DWORD)n, w = 0;
        if (!WriteFile((HANDLE)f.h, p, want, &w, NULL) || w == 0)
            return set_errno_from(GetLastError());
        p += w;
        n -= w;
    }
    return 0;
}

int ffnrt_file_close(ffnrt_file f) { return CloseHandle((HANDLE)f.h) ? 0 : set_errno_from(GetLastError()); }

int ffnrt_path_stat(const char *path, ffnrt_file_info *info)
{
    wchar_t *w = wide(path);
    if (!w)
        return -1;
    WIN32_FILE_ATTRIBUTE_DATA a;
    BOOL ok = GetFileAttributesExW(w, GetFileExInfoStandard, &a);
    DWORD e = GetLastError();
    free(w);
    if (!ok)
        return set_errno_from(e);
    memset(info, 0, sizeof *info);
    info->kind = kind_of(a.dwFileAttributes, FILE_TYPE_DISK);
    info->size = (uint64_t)a.nFileSizeHigh << 32 | a.nFileSizeLow;
    info->mtime = unix_seconds(a.ftLastWriteTime);
    return 0;
}

int ffnrt_path_remove(const char *path)
{
    wchar_t *w = wide(path);
    if (!w)
        return -1;
    BOOL ok = DeleteFileW(w);
    DWORD e = GetLastError();
    /* A link to a folder (a symbolic link or a junction) is itself a
     * folder entry: removed as one, never what it names. */
    DWORD a = ok ? 0 : GetFileAttributesW(w);
    if (!ok && a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_DIRECTORY) && (a & FILE_ATTRIBUTE_REPARSE_POINT)) {
        ok = RemoveDirectoryW(w);
        e = GetLastError();
    }
    free(w);
    return ok ? 0 : set_errno_from(e);
}

int ffnrt_path_replace(const char *from, const char *to)
{
    wchar_t *wf = wide(from), *wt = wf ? wide(to) : NULL;
    BOOL ok = wt && MoveFileExW(wf, wt, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH);
    DWORD e = GetLastError();
    free(wf);
    free(wt);
    if (!wt)
        return -1;
    return ok ? 0 : set_errno_from(e);
}

static int is_separator(char c) { return c == '/' || c == '\\'; }

static int make_dir(const char *path)
{
    wchar_t *w = wide(path);
    if (!w)
        return -1;
    BOOL ok = CreateDirectoryW(w, NULL); /* the parent's inheritable ACL */
    DWORD e = GetLastError();
    free(w);
    return ok ? 0 : set_errno_from(e);
}

int ffnrt_make_dirs(char *path)
{
    /* Skip a drive ("C:\") or a UNC prefix ("\\server\share\"). */
    char *s = path;
    if (s[0] && s[1] == ':')
        s += 2;
    else if (is_separator(s[0]) && is_separator(s[1])) {
        s += 2;
        for (int parts = 0; *s && parts < 2; s++)
            if (is_separator(*s))
                parts++;
    }
    for (s = *s ? s + 1 : s; *s; s++) {
        if (!is_separator(*s))
            continue;
        char c = *s;
        *s = '\0';
        int rc = make_dir(path);
        *s = c;
        if (rc != 0 && errno != EEXIST && errno != EACCES) /* EACCES: a drive's root */
            return -1;
    }
    if (make_dir(path) != 0 && errno != EEXIST)
        return -1;
    ffnrt_file_info info;
    if (ffnrt_path_stat(path, &info) != 0 || info.kind != FFNRT_FILE_DIRECTORY) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

int ffnrt_make_shared_dirs(char *path) { return ffnrt_make_dirs(path); }

int ffnrt_dir_writable(const char *dir)
{
    (void)dir;
    return 0;
}

int ffnrt_dir_each(const char *dir, void (*fn)(const char *dir, const char *name, void *arg), void *arg)
{
    char pattern[4096];
    if (snprintf(pattern, sizeof pattern, "%s/*", dir) >= (int)sizeof pattern) {
        errno = ENAMETOOLONG;
        return -1;
    }
    wchar_t *w = wide(pattern);
    if (!w)
        return -1;
    WIN32_FIND_DATAW fd;
    HANDLE h = FindFirstFileW(w, &fd);
    DWORD e = GetLastError();
    free(w);
    if (h == INVALID_HANDLE_VALUE)
        return set_errno_from(e);
    do {
        char name[1024];
        if (narrow(fd.cFileName, name, sizeof name) > 0 && strcmp(name, ".") != 0 && strcmp(name, "..") != 0)
            fn(dir, name, arg);
    } while (FindNextFileW(h, &fd));
    FindClose(h);
    return 0;
}

int ffnrt_map_file(ffnrt_file f, size_t size, ffnrt_mapping *m)
{
    uint64_t s = size;
    HANDLE map = CreateFileMappingW((HANDLE)f.h, NULL, PAGE_READONLY, (DWORD)(s >> 32), (DWORD)s, NULL);
    if (!map)
        return set_errno_from(GetLastError());
    void *p = MapViewOfFile(map, FILE_MAP_READ, 0, 0, size);
    DWORD e = GetLastError();
    CloseHandle(map); /* the view keeps the mapping */
    if (!p)
        return set_errno_from(e);
    m->data = p;
    m->size = size;
    return 0;
}

void ffnrt_unmap(ffnrt_mapping *m)
{
    if (m->data)
        UnmapViewOfFile(m->data);
    m->data = NULL;
    m->size = 0;
}

/* ------------------------------------------------------- the cache folder */

int ffnrt_user_cache_dir(const char *app, char *out, size_t cap, const char **why)
{
    /* The W environment, so that a non-ASCII user name survives. */
    const wchar_t *local = _wgetenv(L"LOCALAPPDATA");
    char dir[4096];
    if (!local || !*local || narrow(local, dir, sizeof dir) <= 0) {
        *why = "no cache directory: neither FFNRT_CACHE_DIR nor LOCALAPPDATA is set";
        return -1;
    }
    return snprintf(out, cap, "%s/%s", dir, app);
}

/* This process's user SID (from its token), into buf. */
static PSID user_sid(unsigned char *buf, DWORD cap)
{
    HANDLE token;
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token))
        return NULL;
    DWORD len = 0;
    BOOL ok = GetTokenInformation(token, TokenUser, buf, cap, &len);
    CloseHandle(token);
    return ok ? ((TOKEN_USER *)buf)->User.Sid : NULL;
}

static void sid_text(PSID sid, char *out, size_t cap)
{
    LPSTR s = NULL;
    if (sid && ConvertSidToStringSidA(sid, &s)) {
        snprintf(out, cap, "%s", s);
        LocalFree(s);
    } else {
        snprintf(out, cap, "an unknown owner");
    }
}

/* Whether owner (of what, at path) is this user, or for a folder above
 * the cache's (parent) the Administrators group or SYSTEM. */
static int owner_trusted(PSID owner, const char *what, const char *path, int parent, char *why, size_t cap)
{
    unsigned char buf[256];
    PSID me = user_sid(buf, sizeof buf);
    if (!me) {
        snprintf(why, cap, "cannot read this process's user (error %lu)", (unsigned long)GetLastError());
        return 0;
    }
    if (owner && EqualSid(owner, me))
        return 1;
    if (parent && owner &&
        (IsWellKnownSid(owner, WinBuiltinAdministratorsSid) || IsWellKnownSid(owner, WinLocalSystemSid)))
        return 1;
    char o[96], m[96];
    sid_text(owner, o, sizeof o);
    sid_text(me, m, sizeof m);
    snprintf(why, cap, "%s%s%s is owned by %s, not by this user (%s)", what, *path ? " " : "", path, o, m);
    return 0;
}

/* What another principal may not hold on the cache folder or an entry:
 * writing or adding files, removing what is inside or the object itself,
 * changing its ACL or owner. */
#define WRITE_RIGHTS                                                                                            \
    (FILE_WRITE_DATA | FILE_APPEND_DATA | FILE_DELETE_CHILD | WRITE_DAC | WRITE_OWNER | DELETE | GENERIC_WRITE | \
     GENERIC_ALL)
/* And on a folder above it: whatever would let them move the path below
 * aside and put their own in its place (removing or renaming an entry, the
 * folder itself, its ACL or owner). Adding new entries is allowed, as a
 * sticky /tmp allows it on POSIX: C:\ grants it to every signed-in user. */
#define REPLACE_RIGHTS (FILE_DELETE_CHILD | WRITE_DAC | WRITE_OWNER | DELETE | GENERIC_ALL)

/* Whether dacl grants a principal other than this user, SYSTEM or the
 * Administrators one of rights. who names the first such SID. A NULL
 * DACL grants everything to everyone. Inherit-only entries are skipped:
 * they apply to what the folder holds, not to it. */
static int others_may_write(PACL dacl, PSID me, DWORD rights, char *who, size_t cap)
{
    if (!dacl) {
        snprintf(who, cap, "every user (it has no DACL)");
        return 1;
    }
    ACL_SIZE_INFORMATION size;
    if (!GetAclInformation(dacl, &size, sizeof size, AclSizeInformation)) {
        snprintf(who, cap, "someone (its DACL is unreadable)");
        return 1;
    }
    for (DWORD i = 0; i < size.AceCount; i++) {
        ACE_HEADER *h;
        if (!GetAce(dacl, i, (void **)&h) || h->AceType != ACCESS_ALLOWED_ACE_TYPE || (h->AceFlags & INHERIT_ONLY_ACE))
            continue;
        ACCESS_ALLOWED_ACE *ace = (ACCESS_ALLOWED_ACE *)h;
        PSID sid = (PSID)&ace->SidStart;
        if (!(ace->Mask & rights) || EqualSid(sid, me) || IsWellKnownSid(sid, WinLocalSystemSid) ||
            IsWellKnownSid(sid, WinBuiltinAdministratorsSid) || IsWellKnownSid(sid, WinCreatorOwnerSid))
            continue;
        sid_text(sid, who, cap);
        return 1;
    }
    return 0;
}

/* The DACL check of one object: the cache folder or an entry (parent 0),
 * or a folder above the cache's (1). */
static int dacl_trusted(PACL dacl, const char *what, const char *path, int parent, char *why, size_t cap)
{
    unsigned char buf[256];
    PSID me = user_sid(buf, sizeof buf);
    char who[96];
    if (me && !others_may_write(dacl, me, parent ? REPLACE_RIGHTS : WRITE_RIGHTS, who, sizeof who))
        return 1;
    if (!me)
        snprintf(why, cap, "cannot read this process's user (error %lu)", (unsigned long)GetLastError());
    else if (parent)
        snprintf(why, cap, "%s%s%s lets %s remove or rename what it holds", what, *path ? " " : "", path, who);
    else
        snprintf(why, cap, "%s%s%s is writable by %s", what, *path ? " " : "", path, who);
    return 0;
}

/* The owners and DACLs of the cache folder and of every folder above it,
 * by name (GetNamedSecurityInfoW). */
int ffnrt_trusted_directory(const char *dir, char *why, size_t cap)
{
    wchar_t *w = wide(dir);
    wchar_t full[4096];
    DWORD n = w ? GetFullPathNameW(w, sizeof full / sizeof full[0], full, NULL) : 0;
    free(w);
    if (n == 0 || n >= sizeof full / sizeof full[0]) {
        snprintf(why, cap, "cannot resolve %.160s", dir);
        return 0;
    }
    for (int parent = 0;; parent = 1) {
        PSID owner = NULL;
        PACL dacl = NULL;
        PSECURITY_DESCRIPTOR sd = NULL;
        char path[4096];
        if (narrow(full, path, sizeof path) < 0)
            snprintf(path, sizeof path, "%.160s", dir);
        DWORD rc = GetNamedSecurityInfoW(full, SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
                                         &owner, NULL, &dacl, NULL, &sd);
        if (rc != ERROR_SUCCESS) {
            snprintf(why, cap, "cannot read the owner of %.160s (error %lu)", path, (unsigned long)rc);
            return 0;
        }
        const char *what = parent ? "a directory above it," : "the directory";
        int ok = owner_trusted(owner, what, path, parent, why, cap) && dacl_trusted(dacl, what, path, parent, why, cap);
        LocalFree(sd);
        if (!ok)
            return 0;
        /* Up one folder; stop at the drive's root ("C:\") or a share's. */
        wchar_t *slash = NULL;
        for (wchar_t *p = full; *p; p++)
            if ((*p == L'\\' || *p == L'/') && p[1])
                slash = p;
        if (!slash || slash <= full + 2)
            return 1;
        *slash = L'\0';
    }
}

int ffnrt_trusted_file(ffnrt_file f, char *why, size_t cap)
{
    PSID owner = NULL;
    PACL dacl = NULL;
    PSECURITY_DESCRIPTOR sd = NULL;
    DWORD rc = GetSecurityInfo((HANDLE)f.h, SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
                               &owner, NULL, &dacl, NULL, &sd);
    if (rc != ERROR_SUCCESS) {
        snprintf(why, cap, "cannot read the entry's owner (error %lu)", (unsigned long)rc);
        return 0;
    }
    int ok = owner_trusted(owner, "the entry", "", 0, why, cap) && dacl_trusted(dacl, "the entry", "", 0, why, cap);
    LocalFree(sd);
    return ok;
}

/* ------------------------------------------------------- the lab's processes and folders */

/* Appends s to the growing UTF-16 buffer *buf (length *len, capacity
 * *cap); 0, or -1 when out of memory. */
static int append_wide(wchar_t **buf, size_t *len, size_t *cap, const wchar_t *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t c = (*len + n + 1) * 2;
        wchar_t *b = realloc(*buf, c * sizeof *b);
        if (!b)
            return -1;
        *buf = b;
        *cap = c;
    }
    memcpy(*buf + *len, s, n * sizeof *s);
    *len += n;
    (*buf)[*len] = 0;
    return 0;
}

/* One argument as the C runtime's parser reads it back
 * (CommandLineToArgvW's rules): in quotes, a run of backslashes doubled
 * where a quote follows it (an inner one, or the closing one), and an
 * inner quote escaped. */
static int append_quoted(wchar_t **buf, size_t *len, size_t *cap, const wchar_t *arg)
{
    static const wchar_t quote = L'"', backslash = L'\\';
    if (append_wide(buf, len, cap, &quote, 1) != 0)
        return -1;
    for (const wchar_t *p = arg;; p++) {
        size_t slashes = 0;
        while (*p == backslash) {
            slashes++;
            p++;
        }
        size_t times = *p == 0 || *p == quote ? 2 * slashes : slashes;
        for (size_t i = 0; i < times; i++)
            if (append_wide(buf, len, cap, &backslash, 1) != 0)
                return -1;
        if (*p == 0)
            break;
        if ((*p == quote && append_wide(buf, len, cap, &backslash, 1) != 0) || append_wide(buf, len, cap, p, 1) != 0)
            return -1;
    }
    return append_wide(buf, len, cap, &quote, 1);
}

/* The variable's name length of a "NAME=VALUE" entry (a leading '=' is
 * part of the name: "=C:=C:\\x", the current folder of drive C). */
static size_t name_length(const wchar_t *entry)
{
    const wchar_t *eq = wcschr(entry + 1, L'=');
    return eq ? (size_t)(eq - entry) : wcslen(entry);
}

static int compare_names(const void *a, const void *b)
{
    const wchar_t *x = *(const wchar_t *const *)a, *y = *(const wchar_t *const *)b;
    int r = CompareStringOrdinal(x, (int)name_length(x), y, (int)name_length(y), TRUE);
    return r == CSTR_LESS_THAN ? -1 : r == CSTR_GREATER_THAN ? 1 : 0;
}

/* This process's environment with env_set's variables added or replaced,
 * as CreateProcessW's UTF-16 block: entries sorted by name, case
 * ignored, as its documentation asks. NULL when out of memory. */
static wchar_t *environment_block(const char *const env_set[])
{
    size_t n_set = 0;
    while (env_set && env_set[n_set])
        n_set++;
    wchar_t **set = calloc(n_set + 1, sizeof *set);
    wchar_t *current = GetEnvironmentStringsW();
    size_t n_current = 0;
    for (const wchar_t *p = current; p && *p; p += wcslen(p) + 1)
        n_current++;
    const wchar_t **entries = calloc(n_current + n_set + 1, sizeof *entries);
    wchar_t *block = NULL;
    size_t len = 0, cap = 0, n = 0;
    int ok = set && entries && current;
    for (size_t j = 0; ok && j < n_set; j++)
        ok = (set[j] = wide(env_set[j])) != NULL;
    for (const wchar_t *p = current; ok && *p; p += wcslen(p) + 1) {
        int replaced = 0;
        for (size_t j = 0; j < n_set && !replaced; j++)
            replaced = compare_names(&p, &set[j]) == 0;
        if (!replaced)
            entries[n++] = p;
    }
    for (size_t j = 0; ok && j < n_set; j++)
        entries[n++] = set[j];
    if (ok)
        qsort(entries, n, sizeof *entries, compare_names);
    for (size_t i = 0; ok && i < n; i++)
        ok = append_wide(&block, &len, &cap, entries[i], wcslen(entries[i]) + 1) == 0; /* with its NUL */
    static const wchar_t end = 0;
    ok = ok && append_wide(&block, &len, &cap, &end, 1) == 0; /* the block's closing NUL */
    if (!ok) {
        free(block);
        block = NULL;
    }
    if (current)
        FreeEnvironmentStringsW(current);
    for (size_t j = 0; set && j < n_set; j++)
        free(set[j]);
    free(set);
    free(entries);
    return block;
}

/* An inheritable copy of this process's standard handle (the child's
 * stdin or stderr), or NULL where there is none. */
static HANDLE inheritable_std(DWORD which)
{
    HANDLE h = GetStdHandle(which), dup = NULL;
    if (h == NULL || h == INVALID_HANDLE_VALUE ||
        !DuplicateHandle(GetCurrentProcess(), h, GetCurrentProcess(), &dup, 0, TRUE, DUPLICATE_SAME_ACCESS))
        return NULL;
    return dup;
}

int ffnrt_child_start(char *const argv[], const char *const env_set[], ffnrt_child *child, FILE **out)
{
    wchar_t *cmd = NULL, *env = environment_block(env_set);
    size_t len = 0, cap = 0;
    int ok = env != NULL;
    for (size_t i = 0; ok && argv[i]; i++) {
        wchar_t *w = wide(argv[i]);
        static const wchar_t space = L' ';
        ok = w && (i == 0 || append_wide(&cmd, &len, &cap, &space, 1) == 0) &&
             append_quoted(&cmd, &len, &cap, w) == 0;
        free(w);
    }
    if (!ok || !cmd) {
        free(cmd);
        free(env);
        errno = ENOMEM;
        return -1;
    }
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, TRUE};
    HANDLE rd = NULL, wr = NULL;
    if (!CreatePipe(&rd, &wr, &sa, 0)) {
        DWORD e = GetLastError();
        free(cmd);
        free(env);
        return set_errno_from(e);
    }
    SetHandleInformation(rd, HANDLE_FLAG_INHERIT, 0); /* this process's end stays here */
    STARTUPINFOW si;
    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdInput = inheritable_std(STD_INPUT_HANDLE);
    si.hStdOutput = wr;
    si.hStdError = inheritable_std(STD_ERROR_HANDLE);
    PROCESS_INFORMATION pi;
    /* A NULL application name: the first argument is looked up as the
     * command line's first word (.exe appended, the PATH searched). */
    BOOL started = CreateProcessW(NULL, cmd, NULL, NULL, TRUE, CREATE_UNICODE_ENVIRONMENT, env, NULL, &si, &pi);
    DWORD e = GetLastError();
    free(cmd);
    free(env);
    CloseHandle(wr);
    if (si.hStdInput)
        CloseHandle(si.hStdInput);
    if (si.hStdError)
        CloseHandle(si.hStdError);
    if (!started) {
        CloseHandle(rd);
        return set_errno_from(e);
    }
    CloseHandle(pi.hThread);
    int fd = _open_osfhandle((intptr_t)rd, _O_RDONLY | _O_TEXT);
    FILE *f = fd >= 0 ? _fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0)
            _close(fd);
        else
            CloseHandle(rd);
        WaitForSingleObject(pi.hProcess, INFINITE); /* it ends once its stdout breaks */
        CloseHandle(pi.hProcess);
        errno = EIO;
        return -1;
    }
    child->h = (intptr_t)pi.hProcess;
    *out = f;
    return 0;
}

int ffnrt_child_wait(ffnrt_child child, int *exit_code, int *signal_number)
{
    HANDLE p = (HANDLE)child.h;
    DWORD code = 0;
    BOOL ok = WaitForSingleObject(p, INFINITE) == WAIT_OBJECT_0 && GetExitCodeProcess(p, &code);
    DWORD e = GetLastError();
    CloseHandle(p);
    if (!ok)
        return set_errno_from(e);
    *exit_code = (int)code;
    *signal_number = 0;
    return 0;
}

int ffnrt_executable_path(char *out, size_t cap)
{
    wchar_t w[32768];
    DWORD n = GetModuleFileNameW(NULL, w, (DWORD)(sizeof w / sizeof w[0]));
    if (n == 0 || n >= sizeof w / sizeof w[0])
        return set_errno_from(GetLastError());
    if (narrow(w, out, cap) < 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

int ffnrt_host_name(char *out, size_t cap)
{
    wchar_t w[256];
    DWORD n = sizeof w / sizeof w[0];
    if (!GetComputerNameExW(ComputerNameDnsHostname, w, &n))
        return set_errno_from(GetLastError());
    if (narrow(w, out, cap) < 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

int ffnrt_online_cpus(void)
{
    DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    return n > 0 && n < 1u << 20 ? (int)n : 1;
}

const char *ffnrt_executable_suffix(void) { return ".exe"; }

int ffnrt_make_temp_dir(const char *prefix, char *out, size_t cap)
{
    wchar_t w[MAX_PATH + 1];
    DWORD n = GetTempPathW(MAX_PATH + 1, w); /* $TMP, $TEMP, the profile's; ends in '\\' */
    char tmp[3 * MAX_PATH + 1];
    if (n == 0 || n > MAX_PATH || narrow(w, tmp, sizeof tmp) < 0)
        return set_errno_from(n == 0 ? GetLastError() : ERROR_FILENAME_EXCED_RANGE);
    /* The process id and the clock make a name no other process picks;
     * a name taken all the same is skipped. */
    uint64_t t = ffnrt_monotonic_ns();
    for (unsigned attempt = 0; attempt < 100; attempt++) {
        int k = snprintf(out, cap, "%s%s%lx-%llx", tmp, prefix, (unsigned long)GetCurrentProcessId(),
                         (unsigned long long)(t + attempt) & 0xffffffffffULL);
        if (k < 0 || (size_t)k >= cap) {
            errno = ENAMETOOLONG;
            return -1;
        }
        if (make_dir(out) == 0) /* the Temp folder's ACL: this user's */
            return 0;
        if (errno != EEXIST)
            return -1;
    }
    return -1;
}

int ffnrt_dir_remove(const char *path)
{
    wchar_t *w = wide(path);
    if (!w)
        return -1;
    BOOL ok = RemoveDirectoryW(w);
    DWORD e = GetLastError();
    free(w);
    return ok ? 0 : set_errno_from(e);
}

/* ------------------------------------------------------- text in and out */

int ffnrt_env_get(const char *name, char *out, size_t cap)
{
    wchar_t *w = wide(name);
    const wchar_t *v = w ? _wgetenv(w) : NULL;
    free(w);
    if (!v)
        return -1;
    int n = WideCharToMultiByte(CP_UTF8, 0, v, -1, NULL, 0, NULL, NULL); /* with its NUL */
    if (n <= 0)
        return -1;
    if ((size_t)n <= cap)
        WideCharToMultiByte(CP_UTF8, 0, v, -1, out, n, NULL, NULL);
    else if (cap > 0)
        out[0] = '\0';
    return n - 1;
}

/* The arguments as UTF-8: one block, the pointers then the strings, kept
 * for the life of the process (main's argv lives as long). */
static char **utf8_arguments;
static int utf8_count;
static ffnrt_mutex arguments_lock = FFNRT_MUTEX_INIT;

static char **arguments_from(wchar_t **w, int n)
{
    size_t bytes = (size_t)(n + 1) * sizeof(char *);
    for (int i = 0; i < n; i++) {
        int len = WideCharToMultiByte(CP_UTF8, 0, w[i], -1, NULL, 0, NULL, NULL);
        if (len <= 0)
            return NULL;
        bytes += (size_t)len;
    }
    char **a = malloc(bytes);
    if (!a)
        return NULL;
    char *s = (char *)(a + n + 1), *end = (char *)a + bytes;
    for (int i = 0; i < n; i++) {
        a[i] = s;
        s += WideCharToMultiByte(CP_UTF8, 0, w[i], -1, s, (int)(end - s), NULL, NULL);
    }
    a[n] = NULL;
    return a;
}

int ffnrt_arguments_utf8(int *argc, char ***argv)
{
    ffnrt_mutex_lock(&arguments_lock);
    if (!utf8_arguments) {
        int n = 0;
        wchar_t **w = CommandLineToArgvW(GetCommandLineW(), &n);
        utf8_arguments = w ? arguments_from(w, n) : NULL;
        utf8_count = n;
        if (w)
            LocalFree(w);
    }
    char **a = utf8_arguments;
    int n = utf8_count;
    ffnrt_mutex_unlock(&arguments_lock);
    if (!a) {
        errno = ENOMEM;
        return -1;
    }
    *argc = n;
    *argv = a;
    return 0;
}

FILE *ffnrt_fopen(const char *path, const char *mode)
{
    wchar_t *wp = wide(path), *wm = wp ? wide(mode) : NULL;
    FILE *f = wm ? _wfopen(wp, wm) : NULL;
    int e = errno;
    free(wp);
    free(wm);
    errno = e;
    return f;
}

/* ------------------------------------------------------- terminals */

int ffnrt_isatty(int fd) { return _isatty(fd); }

static UINT console_code_page; /* the console's own, put back at exit */

static void console_code_page_back(void) { SetConsoleOutputCP(console_code_page); }

static int is_console(int fd)
{
    DWORD mode;
    return GetConsoleMode((HANDLE)_get_osfhandle(fd), &mode) != 0;
}

void ffnrt_console_utf8(void)
{
    int out = is_console(1), err = is_console(2);
    if (console_code_page || (!out && !err))
        return;
    UINT own = GetConsoleOutputCP();
    if (own != CP_UTF8) {
        if (own == 0 || !SetConsoleOutputCP(CP_UTF8))
            return;
        console_code_page = own;
        atexit(console_code_page_back);
    }
    /* In text mode the C runtime writes to a console through WriteConsoleW,
     * decoding the bytes in its locale's code page first (measured under
     * Wine: "·" as "Â·"); in binary mode the bytes reach the console as
     * they are, which decodes them as UTF-8 now. The console ends a line
     * at '\n' by itself. A console cannot join a character split between
     * two writes (Wine's; older Windows consoles'), and Microsoft's C
     * runtime writes each printf to an unbuffered console whole (a buffer
     * for the call) but Wine's writes it a byte at a time ("·" as two
     * U+FFFD): stdout is buffered (the lab flushes where it reports
     * progress); stderr stays unbuffered, so that an error shows at once. */
    fflush(stdout);
    fflush(stderr);
    if (out) {
        _setmode(1, _O_BINARY);
        setvbuf(stdout, NULL, _IOFBF, 1 << 14);
    }
    if (err)
        _setmode(2, _O_BINARY);
}

int ffnrt_terminal_columns(int fd)
{
    HANDLE h = GetStdHandle(fd == 1 ? STD_OUTPUT_HANDLE : fd == 2 ? STD_ERROR_HANDLE : STD_INPUT_HANDLE);
    CONSOLE_SCREEN_BUFFER_INFO info;
    if (h == INVALID_HANDLE_VALUE || !GetConsoleScreenBufferInfo(h, &info))
        return 0;
    return info.srWindow.Right - info.srWindow.Left + 1;
}

#endif /* _WIN32 */
