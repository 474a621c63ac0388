/* Host allocation failure: the Nth allocation that libffnrt's code asks
 * for (malloc, calloc, realloc) returns NULL, for N = 1, 2, ... until a
 * whole sequence of calls (context, tensors, an activation with its
 * kernel, a gated FFN layer and its forward) runs without reaching N. Each
 * call must then return OK or a failure status with a message, never
 * crash, and what succeeded must still work and tear down cleanly (the
 * Vulkan validation layer reports unfreed objects at vkDestroyDevice).
 *
 * How the allocations are caught differs by OS:
 * - Linux: this test's own malloc, calloc and realloc, which libffnrt.so
 *   binds to, fail only calls whose caller lies in libffnrt.so. glslang
 *   and SPIRV-Tools (linked into it) allocate through operator new, whose
 *   caller of malloc is libstdc++: those are failed apart, by this test's
 *   operator new throwing std::bad_alloc for a caller in libffnrt.so
 *   (cxx_allocation_fails), which ffnrt must catch before it reaches its
 *   C code (src/backend/vulkan/cxx_guard.h). Not built in the sanitizer
 *   build: ASan owns malloc there.
 * - Windows: ffnrt.dll's own import table is rewritten, so every
 *   allocation ffnrt.dll's code makes comes here, and only those: the C++
 *   libraries, linked into the DLL with the C++ runtime, share the table,
 *   so their allocations fail too (operator new then throws). On Vulkan,
 *   where those are thousands, the first 64 allocations fail one by one
 *   and then one in every 1.25x. */
#define _GNU_SOURCE
#include "device_fixture.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#ifdef _WIN32
#include <windows.h>
#else
#include <dlfcn.h>
#include <link.h>
#endif

static atomic_long countdown;       /* fail when it reaches 0; negative: off */
static atomic_long cxx_countdown;   /* the same for operator new (Linux) */
static atomic_long failures;        /* allocations failed so far */

static int should_fail_on(atomic_long *c, int from_ffnrt)
{
    if (atomic_load(c) < 0 || !from_ffnrt)
        return 0;
    if (atomic_fetch_sub(c, 1) == 1) {
        atomic_fetch_add(&failures, 1);
        return 1;
    }
    return 0;
}

static int should_fail(int from_ffnrt) { return should_fail_on(&countdown, from_ffnrt); }

#ifdef _WIN32
static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);

static void *failing_malloc(size_t n) { return should_fail(1) ? NULL : real_malloc(n); }
static void *failing_calloc(size_t n, size_t size) { return should_fail(1) ? NULL : real_calloc(n, size); }
static void *failing_realloc(void *p, size_t n) { return should_fail(1) ? NULL : real_realloc(p, n); }

/* Points ffnrt.dll's imports of malloc, calloc and realloc (from whichever
 * C runtime DLL) here. */
static void catch_ffnrt_allocations(void)
{
    static int found;
    if (found)
        return;
    unsigned char *base = (unsigned char *)GetModuleHandleW(L"ffnrt.dll");
    cr_assert_not_null(base, "ffnrt.dll is not loaded");
    const IMAGE_NT_HEADERS *nt = (const IMAGE_NT_HEADERS *)(base + ((const IMAGE_DOS_HEADER *)base)->e_lfanew);
    IMAGE_DATA_DIRECTORY dir = nt->OptionalHeader.DataDirectory[IMAGE_DIRECTORY_ENTRY_IMPORT];
    cr_assert_gt(dir.Size, 0, "ffnrt.dll imports nothing");
    for (const IMAGE_IMPORT_DESCRIPTOR *imp = (const IMAGE_IMPORT_DESCRIPTOR *)(base + dir.VirtualAddress); imp->Name;
         imp++) {
        const IMAGE_THUNK_DATA *names = (const IMAGE_THUNK_DATA *)(base + imp->OriginalFirstThunk);
        IMAGE_THUNK_DATA *slots = (IMAGE_THUNK_DATA *)(base + imp->FirstThunk);
        for (; imp->OriginalFirstThunk && names->u1.AddressOfData; names++, slots++) {
            if (IMAGE_SNAP_BY_ORDINAL(names->u1.Ordinal))
                continue;
            const char *name = (const char *)((const IMAGE_IMPORT_BY_NAME *)(base + names->u1.AddressOfData))->Name;
            void *mine = strcmp(name, "malloc") == 0    ? (void *)failing_malloc
                         : strcmp(name, "calloc") == 0  ? (void *)failing_calloc
                         : strcmp(name, "realloc") == 0 ? (void *)failing_realloc
                                                        : NULL;
            if (!mine)
                continue;
            void *real = (void *)(uintptr_t)slots->u1.Function;
            if (name[0] == 'm')
                real_malloc = (void *(*)(size_t))real;
            else if (name[0] == 'c')
                real_calloc = (void *(*)(size_t, size_t))real;
            else
                real_realloc = (void *(*)(void *, size_t))real;
            DWORD old;
            cr_assert(VirtualProtect(slots, sizeof *slots, PAGE_READWRITE, &old), "VirtualProtect: %lu",
                      GetLastError());
            slots->u1.Function = (uintptr_t)mine;
            VirtualProtect(slots, sizeof *slots, old, &old);
            found++;
        }
    }
    cr_assert_eq(found, 3, "ffnrt.dll's imports of malloc, calloc and realloc: %d found", found);
}
#else
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

/* libffnrt.so's loaded address range, found once (no loader calls, and so
 * no loader lock, inside malloc). */
static uintptr_t ffnrt_lo, ffnrt_hi;

static int find_range(struct dl_phdr_info *info, size_t size, void *base)
{
    (void)size;
    if ((void *)info->dlpi_addr != base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (!ffnrt_lo || lo < ffnrt_lo)
            ffnrt_lo = lo;
        if (hi > ffnrt_hi)
            ffnrt_hi = hi;
    }
    return 1;
}

static int from_ffnrt(void *caller)
{
    return (uintptr_t)caller >= ffnrt_lo && (uintptr_t)caller < ffnrt_hi;
}

/* Exported (the build hides symbols by default) so libffnrt.so binds to them. */
#define EXPORT __attribute__((visibility("default")))

EXPORT void *malloc(size_t n)
{
    return should_fail(from_ffnrt(__builtin_return_address(0))) ? NULL : __libc_malloc(n);
}

EXPORT void *calloc(size_t n, size_t size)
{
    return should_fail(from_ffnrt(__builtin_return_address(0))) ? NULL : __libc_calloc(n, size);
}

EXPORT void *realloc(void *p, size_t n)
{
    return should_fail(from_ffnrt(__builtin_return_address(0))) ? NULL : __libc_realloc(p, n);
}

/* operator new and new[] (libstdc++'s, which the C++ code in libffnrt.so
 * calls): to fail one, the real one is asked for more than can exist and
 * throws std::bad_alloc itself. This file is built with -fexceptions, so
 * that the exception passes through these frames. */
static void *(*real_new)(size_t), *(*real_new_array)(size_t);

EXPORT void *_Znwm(size_t n)
{
    if (!real_new)
        real_new = (void *(*)(size_t))dlsym(RTLD_NEXT, "_Znwm");
    return real_new(should_fail_on(&cxx_countdown, from_ffnrt(__builtin_return_address(0))) ? SIZE_MAX : n);
}

EXPORT void *_Znam(size_t n)
{
    if (!real_new_array)
        real_new_array = (void *(*)(size_t))dlsym(RTLD_NEXT, "_Znam");
    return real_new_array(should_fail_on(&cxx_countdown, from_ffnrt(__builtin_return_address(0))) ? SIZE_MAX : n);
}

static void catch_ffnrt_allocations(void)
{
    Dl_info info;
    cr_assert(dladdr((void *)ffnrt_context_create, &info), "libffnrt.so not found");
    dl_iterate_phdr(find_range, info.dli_fbase);
    cr_assert_gt(ffnrt_hi, ffnrt_lo, "libffnrt.so's address range not found");
}
#endif

/* The sequence; returns 1 if every call succeeded. Failed calls must give
 * a status and message; the rest of the sequence is skipped. With the
 * disk cache off, every kernel goes through glslang. */
static int run_sequence(ffnrt_backend backend, int disk_cache_off)
{
    ffnrt_context_options o = FFNRT_CONTEXT_OPTIONS_INIT;
    o.backend = backend;
    o.device_index = 0;
    o.validation = test_validation_wanted();
    o.disable_disk_cache = disk_cache_off;
    ffnrt_context *ctx = NULL;
    ffnrt_ffn *layer = NULL;
    ffnrt_tensor *x = NULL, *y = NULL;
    float v[16], out[16], w[16 * 8];
    for (int i = 0; i < 16; i++)
        v[i] = (float)i - 8;
    for (int i = 0; i < 16 * 8; i++)
        w[i] = (float)(i % 7) / 7.0f;
    int64_t shape[2] = {2, 8};
    ffnrt_activation_desc d = FFNRT_ACTIVATION_DESC_INIT(FFNRT_ACT_GELU);
    ffnrt_ffn_desc fd = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, 8, 16);
    ffnrt_ffn_weights fw = {0};
    fw.w_gate = w;
    fw.w_value = w;
    fw.w_out = w;
    ffnrt_status st;
    int ok = 0;
#define STEP(call)                                                                                      \
    do {                                                                                                \
        st = (call);                                                                                    \
        if (st != FFNRT_OK) {                                                                           \
            cr_assert(strlen(ffnrt_last_error_message()) > 0, "%s failed without a message", #call);    \
            goto done;                                                                                  \
        }                                                                                               \
    } while (0)
    STEP(ffnrt_context_create(&o, &ctx));
    STEP(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &x));
    STEP(ffnrt_tensor_create(ctx, FFNRT_DTYPE_F32, 2, shape, &y));
    STEP(ffnrt_tensor_write(x, v, sizeof v));
    STEP(ffnrt_activation_forward(ctx, &d, x, y));
    STEP(ffnrt_ffn_create(ctx, &fd, &fw, &layer));
    STEP(ffnrt_ffn_forward(layer, x, y));
    STEP(ffnrt_tensor_read(y, out, sizeof out));
    ok = 1;
done:
    /* Tear-down allocates nothing that may fail; check the context is
     * still sound after the failure: a copy still runs. */
    atomic_store(&countdown, -1);
    atomic_store(&cxx_countdown, -1);
    if (ctx && x && y)
        cr_assert_eq(ffnrt_copy(ctx, x, y), FFNRT_OK, "after an allocation failure: %s",
                     ffnrt_context_last_error(ctx));
    ffnrt_ffn_destroy(layer);
    uint64_t messages = ffnrt_context_validation_messages(ctx);
    ffnrt_context_destroy(ctx);
    cr_assert_eq(messages, 0, "the validation layer reported %llu messages", (unsigned long long)messages);
    return ok;
}

BACKEND_PARAMETERS(host_alloc, nth_allocation_fails)

/* Fails the Nth allocation for N = 1, 2, ... (sampled: from 64 on, every
 * 1.25x) until the sequence runs without reaching N; returns that N. */
static long fail_each(ffnrt_backend b, atomic_long *c, int disk_cache_off, int sampled)
{
    long n;
    for (n = 1; n < 1000000; n = sampled && n >= 64 ? n + n / 4 : n + 1) {
        long before = atomic_load(&failures);
        atomic_store(c, n);
        int ok = run_sequence(b, disk_cache_off);
        if (atomic_load(&failures) == before) {
            cr_assert(ok, "the sequence failed at N = %ld without an injected failure: %s", n,
                      ffnrt_last_error_message());
            return n;
        }
        cr_assert(sampled || n < 2000, "more than 2000 allocations");
    }
    cr_assert_fail("no end to the allocations");
    return n;
}

ParameterizedTest(ffnrt_backend *b, host_alloc, nth_allocation_fails)
{
    atomic_store(&countdown, -1);
    atomic_store(&cxx_countdown, -1);
    catch_ffnrt_allocations();
    test_context_done(test_context(*b, NULL)); /* devices listed, kernels in the drivers' caches */
#ifdef _WIN32
    int sampled = *b == FFNRT_BACKEND_VULKAN; /* glslang's and SPIRV-Tools' allocations among them */
#else
    int sampled = 0;
#endif
    long n = fail_each(*b, &countdown, 0, sampled);
    cr_log_info("%s: %ld allocations, %s", ffnrt_backend_name(*b), n - 1,
                sampled ? "the first 64 failed one by one, then one in every 1.25x" : "each failed once");
}

#ifndef _WIN32
/* glslang's and SPIRV-Tools' allocations (operator new, called from their
 * code in libffnrt.so) failed: the std::bad_alloc they throw must come
 * back as a status with a message (never end the process), and the next
 * calls must work. Vulkan only (OpenCL's path has no C++); the disk cache
 * off, so that every kernel goes through glslang as well as SPIRV-Tools;
 * the first 64 failed one by one, then one in every 1.25x. */
Test(host_alloc, cxx_allocation_fails)
{
    atomic_store(&countdown, -1);
    atomic_store(&cxx_countdown, -1);
    catch_ffnrt_allocations();
    test_context_done(test_context(FFNRT_BACKEND_VULKAN, NULL));
    long n = fail_each(FFNRT_BACKEND_VULKAN, &cxx_countdown, 1, 1);
    cr_assert_gt(n, 1, "no C++ allocation was failed: glslang and SPIRV-Tools were not reached");
    cr_log_info("vulkan: %ld C++ allocations, the first 64 failed one by one, then one in every 1.25x", n - 1);
}
#endif

/* The first listing of the devices (once per process, cached) with each
 * of its allocations failed in turn: a failure is reported, not cached as
 * a shorter device list, and the next call lists every device. */
Test(host_alloc, first_device_listing)
{
    atomic_store(&countdown, -1);
    catch_ffnrt_allocations();
    size_t count = 0;
    long n;
    for (n = 1; n < 1000; n++) {
        long before = atomic_load(&failures);
        atomic_store(&countdown, n);
        ffnrt_status st = ffnrt_device_count(&count);
        atomic_store(&countdown, -1);
        if (atomic_load(&failures) == before) {
            cr_assert_eq(st, FFNRT_OK, "%s", ffnrt_last_error_message());
            break;
        }
        if (st != FFNRT_OK) {
            cr_assert_eq(st, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "%s", ffnrt_status_string(st));
            cr_assert_str_not_empty(ffnrt_last_error_message());
        }
    }
    ffnrt_device_info d;
    size_t backends_seen = 0;
    for (int b = 0; b < TEST_BACKENDS; b++)
        for (size_t i = 0; i < count; i++)
            if (ffnrt_device_get_info(i, &d) == FFNRT_OK && d.backend == test_backends[b]) {
                backends_seen++;
                break;
            }
    cr_assert_eq(backends_seen, TEST_BACKENDS, "after %ld injected failures the list lacks a backend", n - 1);
}
