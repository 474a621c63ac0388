/* The device choice: what the caller asked for, else a score per device
 * (type, then capability), one physical device seen through both APIs kept
 * once through its better backend, and, between devices of the best type,
 * the one expected to be fastest by its calibration figures. */
#include "dispatch/dispatch.h"
#include "platform/platform.h"

#include <stdio.h>
#include <string.h>

static long type_score(ffnrt_device_type t)
{
    switch (t) {
    case FFNRT_DEVICE_TYPE_DISCRETE_GPU: return 4000;
    case FFNRT_DEVICE_TYPE_INTEGRATED_GPU: return 3000;
    case FFNRT_DEVICE_TYPE_VIRTUAL_GPU: return 2000;
    case FFNRT_DEVICE_TYPE_CPU: return 1000;
    default: return 0;
    }
}

/* Capability within a type: what ffnrt's kernels use. Each term is small
 * next to a type step, so a CPU never outranks a GPU. */
static long capability_score(const ffnrt_device_info *d)
{
    long s = 0;
    s += d->fp16_arithmetic ? 40 : 0;                  /* the FAST policy */
    s += d->subgroup_size ? 20 : 0;                    /* the matrix-vector kernel sizes lanes by it */
    s += d->shared_memory_size >= 32768 ? 20 : 0;      /* full-size GEMM tiles */
    s += d->max_workgroup_size >= 256 ? 10 : 0;
    uint64_t gib = d->memory_size >> 30;
    s += gib > 64 ? 64 : (long)gib;                    /* room for bigger layers */
    return s;
}

/* Which API is better for one physical device, from its vendor (PCI ids):
 * NVIDIA's OpenCL lacks cl_khr_fp16, Apple reaches Vulkan only through
 * MoltenVK but its OpenCL is deprecated and frozen at 1.2; on Qualcomm,
 * OpenCL is the vendor's main compute API (Adreno's own tools and
 * documentation target it). Elsewhere: the more capable, then Vulkan. */
static ffnrt_backend vendor_preference(uint32_t vendor_id)
{
    switch (vendor_id) {
    case 0x10DE: return FFNRT_BACKEND_VULKAN; /* NVIDIA */
    case 0x106B: return FFNRT_BACKEND_VULKAN; /* Apple */
    case 0x5143: return FFNRT_BACKEND_OPENCL; /* Qualcomm */
    default: return FFNRT_BACKEND_ANY;
    }
}

static int same_device(const ffnrt_device_info *a, const ffnrt_device_info *b, const char **how)
{
    if (a->backend == b->backend)
        return 0; /* one API lists a device once */
    if (a->has_uuid && b->has_uuid) {
        *how = "same device UUID";
        return memcmp(a->uuid, b->uuid, sizeof a->uuid) == 0;
    }
    if (a->has_pci_address && b->has_pci_address) {
        *how = "same PCI address";
        return a->pci_domain == b->pci_domain && a->pci_bus == b->pci_bus && a->pci_device == b->pci_device &&
               a->pci_function == b->pci_function;
    }
    *how = "same vendor, device id and name";
    return a->vendor_id && a->vendor_id == b->vendor_id && a->device_id == b->device_id &&
           strcmp(a->name, b->name) == 0;
}

void ffnrt_rank_devices(const ffnrt_device_info *infos, size_t count, ffnrt_device_rank *ranks)
{
    for (size_t i = 0; i < count; i++) {
        const ffnrt_device_info *d = &infos[i];
        ffnrt_device_rank *r = &ranks[i];
        r->index = i;
        r->twin = -1;
        r->score = type_score(d->type) + capability_score(d);
        snprintf(r->reason, sizeof r->reason, "%s, score %ld (type %ld + capability %ld)",
                 ffnrt_device_type_name(d->type), r->score, type_score(d->type), capability_score(d));
    }
    /* Twins: the loser of each pair drops out, its reason says why. */
    for (size_t i = 0; i < count; i++)
        for (size_t j = i + 1; j < count; j++) {
            const char *how = "";
            if (!same_device(&infos[i], &infos[j], &how))
                continue;
            ranks[i].twin = (long)j;
            ranks[j].twin = (long)i;
            ffnrt_backend pref = vendor_preference(infos[i].vendor_id);
            size_t keep, drop;
            const char *why;
            if (pref != FFNRT_BACKEND_ANY) {
                keep = infos[i].backend == pref ? i : j;
                why = "the vendor's better API";
            } else if (ranks[i].score != ranks[j].score) {
                keep = ranks[i].score > ranks[j].score ? i : j;
                why = "more capable through it";
            } else {
                keep = infos[i].backend == FFNRT_BACKEND_VULKAN ? i : j;
                why = "equal capability: Vulkan";
            }
            drop = keep == i ? j : i;
            if (ranks[drop].score < 0)
                continue; /* already dropped for a third listing */
            ranks[drop].score = -1;
            snprintf(ranks[drop].reason, sizeof ranks[drop].reason,
                     "the same physical device as %.200s through %s (%s); ffnrt uses %s: %s", infos[keep].name,
                     ffnrt_backend_name(infos[keep].backend), how, ffnrt_backend_name(infos[keep].backend), why);
        }
}

/* ------------------------------------------------------------- the choice */

double ffnrt_expected_ms(const ffnrt_calibration *c)
{
    /* A decode pass over 100 MB of weights (read once: a copy's bandwidth
     * counts reads and writes), 10 GFLOP of prefill, 50 dispatches. */
    return 1e3 * (100e6 / (1e9 * c->copy_gbps) + 10e9 / (1e9 * c->gemm_gflops)) + 50.0 * c->dispatch_us / 1e3;
}

static int name_matches(const char *name, const char *pattern)
{
    size_t n = strlen(pattern);
    for (const char *s = name; *s; s++)
        if (ffnrt_strncasecmp(s, pattern, n) == 0)
            return 1;
    return n == 0;
}

void ffnrt_device_request_of(const ffnrt_settings *s, ffnrt_device_request *req, char *name_buf, size_t cap)
{
    const ffnrt_setting *d = ffnrt_setting_get(s, FFNRT_KNOB_DEVICE, NULL, NULL);
    req->backend = FFNRT_BACKEND_ANY;
    req->index = -1;
    req->name = NULL;
    req->from = NULL;
    if (!d)
        return;
    req->backend = (ffnrt_backend)d->v[0];
    req->index = d->v[1] ? (long)d->v[1] - 1 : -1;
    if (*d->text) {
        snprintf(name_buf, cap, "%s", d->text);
        req->name = name_buf;
    }
    req->from = d->from;
}

static int figures_known(const ffnrt_calibration *f) { return f && f->valid > 0; }

static void describe_figures(const ffnrt_calibration *f, char *out, size_t cap)
{
    if (figures_known(f))
        snprintf(out, cap, "%.0f ms expected (copy %.2f GB/s, GEMM %.1f GFLOP/s, dispatch %.0f us)",
                 ffnrt_expected_ms(f), f->copy_gbps, f->gemm_gflops, f->dispatch_us);
    else
        snprintf(out, cap, "no calibration figures");
}

/* The request as FFNRT_DEVICE spells it ("vulkan:1", "opencl:pocl",
 * "llvmpipe"), for messages. */
static void describe_request(const ffnrt_device_request *req, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s", req->backend != FFNRT_BACKEND_ANY ? ffnrt_backend_name(req->backend) : "");
    if (req->index >= 0 && n >= 0 && (size_t)n < cap)
        n += snprintf(out + n, cap - (size_t)n, "%s%ld", n ? ":" : "", req->index);
    if (req->name && n >= 0 && (size_t)n < cap)
        snprintf(out + n, cap - (size_t)n, "%s%s", n ? ":" : "", req->name);
}

/* "found: opencl:0 NAME, vulkan:0 NAME" (as many as fit, then "..."), or
 * "no device found". */
static void list_devices(const ffnrt_device_info *infos, size_t count, char *out, size_t cap)
{
    size_t len = (size_t)snprintf(out, cap, count ? "found:" : "no device found");
    for (size_t i = 0; i < count && len < cap; i++) {
        int n = snprintf(out + len, cap - len, "%s %s:%u %s", i ? "," : "", ffnrt_backend_name(infos[i].backend),
                         infos[i].index, infos[i].name);
        if (n < 0 || (size_t)n >= cap - len) {
            if (cap >= 4)
                memcpy(out + cap - 4, "...", 4);
            return;
        }
        len += (size_t)n;
    }
}

ffnrt_status ffnrt_choose_device(const ffnrt_device_request *req, const ffnrt_device_info *infos, size_t count,
                                 const ffnrt_calibration *figures, long *chosen, int *need, char *reason, size_t cap,
                                 ffnrt_error *err)
{
    *chosen = -1;
    reason[0] = '\0';
    ffnrt_device_rank ranks[64];
    if (count > sizeof ranks / sizeof ranks[0])
        count = sizeof ranks / sizeof ranks[0];
    ffnrt_rank_devices(infos, count, ranks);
    int asked = req->backend != FFNRT_BACKEND_ANY || req->index >= 0 || req->name;
    /* The candidates: what the request allows. A twin left out of the
     * ranking is still there when asked for by backend, index or name. */
    int ok[64] = {0};
    size_t matching = 0;
    long top_type = -1;
    for (size_t i = 0; i < count; i++) {
        const ffnrt_device_info *d = &infos[i];
        if (req->backend != FFNRT_BACKEND_ANY && d->backend != req->backend)
            continue;
        if (req->index >= 0 && (long)d->index != req->index)
            continue;
        /* A name pattern may name the device, its vendor or its driver's API
         * version string ("pocl": PoCL's devices are named after the CPU). */
        if (req->name && !name_matches(d->name, req->name) && !name_matches(d->vendor, req->name) &&
            !name_matches(d->api_version, req->name))
            continue;
        matching++;
        if (ranks[i].score < 0 && !asked)
            continue;
        ok[i] = 1;
        top_type = type_score(d->type) > top_type ? type_score(d->type) : top_type;
    }
    if (!matching) {
        char spec[160], found[320];
        describe_request(req, spec, sizeof spec);
        list_devices(infos, count, found, sizeof found);
        ffnrt_status st = count ? FFNRT_ERROR_DEVICE_NOT_FOUND : FFNRT_ERROR_BACKEND_UNAVAILABLE;
        if (!*spec)
            return ffnrt_fail(err, st, "no device found");
        return ffnrt_fail(err, st, "no device matches \"%s\"%s%s; %s", spec, req->from ? ", asked by " : "",
                          req->from ? req->from : "", found);
    }
    /* The tie: candidates of the best type. */
    size_t tie[64], nt = 0;
    for (size_t i = 0; i < count; i++)
        if (ok[i] && type_score(infos[i].type) == top_type)
            tie[nt++] = i;
    int missing = 0;
    for (size_t k = 0; k < nt && nt > 1; k++)
        if (!figures || figures[tie[k]].valid == 0) /* valid < 0: could not be measured */
            need[tie[k]] = 1, missing = 1;
    if (missing)
        return FFNRT_OK; /* the caller measures them and asks again */
    /* Fastest first; capability between devices within 10% of the fastest
     * or without figures. */
    long best = -1;
    double best_ms = 0;
    for (size_t k = 0; k < nt; k++)
        if (figures_known(figures ? &figures[tie[k]] : NULL)) {
            double ms = ffnrt_expected_ms(&figures[tie[k]]);
            if (best < 0 || ms < best_ms)
                best = (long)tie[k], best_ms = ms;
        }
    long pick = -1;
    for (size_t k = 0; k < nt; k++) {
        size_t i = tie[k];
        int near = best < 0 || !figures_known(&figures[i]) || ffnrt_expected_ms(&figures[i]) <= 1.1 * best_ms;
        if (near && (pick < 0 || ranks[i].score > ranks[pick].score))
            pick = (long)i;
    }
    *chosen = pick;
    char f[160];
    int n = snprintf(reason, cap, "%s: %s", asked ? "asked for (backend, index or name)" : "best of the ranking",
                     ranks[pick].reason);
    if (nt > 1 && best >= 0 && n >= 0 && (size_t)n < cap) {
        describe_figures(&figures[pick], f, sizeof f);
        n += snprintf(reason + n, cap - (size_t)n, "; %zu devices tie on type, %s: %s", nt,
                      pick == best ? "the fastest by calibration" : "as fast within 10%, then the more capable", f);
    }
    for (size_t i = 0; i < count && n >= 0 && (size_t)n < cap; i++)
        if ((long)i != pick) {
            int tied = 0;
            for (size_t k = 0; k < nt; k++)
                tied |= tie[k] == i;
            if (tied && figures)
                describe_figures(&figures[i], f, sizeof f);
            n += snprintf(reason + n, cap - (size_t)n, "; %s (%s): %s%s%s", infos[i].name,
                          ffnrt_backend_name(infos[i].backend), ranks[i].reason, tied && figures ? ", " : "",
                          tied && figures ? f : "");
        }
    return FFNRT_OK;
}
