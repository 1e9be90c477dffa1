/* Caching-allocator configuration in PyTorch's PYTORCH_HIP_ALLOC_CONF syntax. */
#ifndef RINGSIDE_BACKEND_MEMORY_MEM_CONF_H
#define RINGSIDE_BACKEND_MEMORY_MEM_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mem_conf {
    uint64_t max_split_size_bytes; /* blocks larger than this are never split, and cached ones
                                      serve only requests within 20 MiB of them; UINT64_MAX = off */
    double gc_threshold;           /* garbage_collection_threshold in (0,1): past this share of the
                                      memory limit, cached blocks are released, oldest first, before a
                                      new segment; 0 = off (and off without a memory fraction) */
    double memory_fraction;        /* per_process_memory_fraction in (0,1]: the pool's memory limit
                                      is this share of the device's memory; 0 = not set, no limit */
    bool expandable_segments;      /* one segment a pool that grows and shrinks in pages, where the
                                      backend can map memory piecewise; fixed segments otherwise */
    uint64_t round_bytes;          /* allocation granularity, 512 */
};

/* PyTorch's defaults: no max split, no GC, no memory fraction, 512-byte rounding. */
void mem_conf_default(struct mem_conf *c);

/* Parse "key:value,key:value" (max_split_size_mb:128,garbage_collection_threshold:0.8,
 * per_process_memory_fraction:0.5, expandable_segments:True; roundup_power2_divisions:N
 * accepted and ignored).
 * Whitespace around tokens is allowed; empty string = defaults.
 * 0, or -EINVAL with err = "alloc-conf: key 'x': reason". c is untouched on error. */
int mem_conf_parse(const char *s, struct mem_conf *c, char *err, size_t errlen);

#endif
