/* The automatic device choice: a score per device, and one physical device
 * seen through both APIs kept once, through its better backend. */
#include "dispatch/dispatch.h"

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
