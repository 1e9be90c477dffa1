/* Best-fit caching allocator over a backend's raw allocations, modelled on PyTorch's
 * CUDACachingAllocator: segments split into blocks, small and large pools, coalescing, and
 * PyTorch's settings: max_split_size_mb, garbage_collection_threshold, a memory fraction and
 * expandable segments. */
#ifndef RINGSIDE_BACKEND_MEMORY_MEM_POOL_H
#define RINGSIDE_BACKEND_MEMORY_MEM_POOL_H

#include "backend/memory/mem_conf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MEM_SMALL_LIMIT   (1u << 20)  /* requests <= 1 MiB use the small pool */
#define MEM_SMALL_SEGMENT (2u << 20)  /* small-pool segment size */
#define MEM_LARGE_SEGMENT (20u << 20) /* requests in (1 MiB, 10 MiB) share 20 MiB segments */
#define MEM_ROUND_LARGE   (2u << 20)  /* larger requests get their own segment, 2 MiB rounded */

/* Raw allocator underneath (hipMalloc/hipFree, or aligned host memory for the CPU backend). */
struct mem_raw_ops {
    /* Allocate bytes; 0 and *out set, or a negative error (-ENOMEM for out of memory). */
    int (*alloc)(void *ctx, size_t bytes, void **out);
    /* Release a pointer from alloc with its size. */
    void (*free)(void *ctx, void *ptr, size_t bytes);
    /* Expandable segments (all four, or none: NULL, and segments stay fixed). Reserve an
     * address range of bytes with no memory behind it: 0 and *base set, or a negative error. */
    int (*reserve)(void *ctx, size_t bytes, void **base);
    /* Put memory behind [ptr, ptr + bytes) of a reserved range, unmapped until now (whole
     * pages of the pool's): 0, -ENOMEM when the device is full, or another error. */
    int (*map)(void *ctx, void *ptr, size_t bytes);
    /* Take the memory behind [ptr, ptr + bytes) back (mapped, and no block there in use;
     * work already queued on it may still run: release it after that work). */
    void (*unmap)(void *ctx, void *ptr, size_t bytes);
    /* Give back a range from reserve, with its size (nothing in it mapped any more). */
    void (*unreserve)(void *ctx, void *base, size_t bytes);
    /* Optional (NULL: trim does nothing): the contents of [ptr, ptr + bytes), a free block, are
     * not needed; a backend whose device memory is the host's gives its whole pages back to
     * the kernel once the work queued on them has run, and the block stays the pool's,
     * reserved, to be used again as it is (what it reads there is undefined until written). */
    void (*discard)(void *ctx, void *ptr, size_t bytes);
};

struct mem_stats {
    uint64_t allocated_bytes;    /* sum of live blocks (rounded sizes) */
    uint64_t requested_bytes;    /* sum of live requests as asked */
    uint64_t reserved_bytes;     /* sum of segment sizes */
    uint64_t total_free_bytes;   /* reserved - allocated */
    uint64_t largest_free_bytes; /* largest single free block */
    uint32_t active_blocks, free_blocks, segments;
    double frag; /* 1 - largest_free / total_free; 0 when nothing is free */
    uint64_t peak_allocated_bytes, peak_reserved_bytes;
    uint64_t limit_bytes; /* the memory limit (per_process_memory_fraction of the device's
                             memory) reserved bytes stay under; 0: none */
    /* counters since creation */
    uint64_t n_alloc, n_free, n_cache_hits, n_raw_alloc, n_raw_free, n_oom_retries, n_oom;
    uint64_t n_gc_frees; /* cached segments garbage collection released */
};

/* One block of a segment, for the segment map. */
struct mem_block_info {
    uint64_t offset_bytes, size_bytes;
    bool allocated;
};

#define MEM_LAYOUT_MAX_SEGMENTS 32
#define MEM_LAYOUT_MAX_BLOCKS   48

/* A bounded copy of the segment layout (copied by value into UI snapshots). Segments beyond
 * MEM_LAYOUT_MAX_SEGMENTS are counted but not listed; a segment with more blocks than
 * MEM_LAYOUT_MAX_BLOCKS lists the first ones and sets truncated. Largest segments first. */
struct mem_layout {
    uint32_t n_segments, n_listed;
    struct {
        uint64_t size_bytes;
        bool small_pool, truncated;
        uint32_t n_blocks;
        struct mem_block_info blocks[MEM_LAYOUT_MAX_BLOCKS];
    } seg[MEM_LAYOUT_MAX_SEGMENTS];
};

struct mem_pool;

/* 0 or -ENOMEM. ops/ctx are borrowed and must outlive the pool. */
int mem_pool_create(struct mem_pool **out, const struct mem_conf *conf,
                    const struct mem_raw_ops *ops, void *ctx);
/* Frees every segment (live blocks included) through the raw ops. */
void mem_pool_destroy(struct mem_pool *p);

/* Allocate bytes (> 0). Best fit in the matching pool; else, past the garbage collection
 * threshold, cached segments are released oldest first; then a new segment (or more pages of
 * the expandable one); on raw OOM, or past the memory limit, free the cached segments and
 * retry once (counted as an OOM retry). 0 and *out set, -ENOMEM, or the raw allocator's own
 * error when it fails otherwise (not counted as an OOM). */
int mem_pool_alloc(struct mem_pool *p, size_t bytes, void **out);
/* Return a block to the cache, coalescing with free neighbours. NULL is a no-op.
 * A pointer that is not a live block returns -EINVAL (and changes nothing). */
int mem_pool_free(struct mem_pool *p, void *ptr);

/* Fault injection: the next mem_pool_alloc fails as it does when the device is full (the raw
 * allocator refuses, the cache is released and the retry is refused too): counted as an OOM
 * retry and an OOM, -ENOMEM. */
void mem_pool_refuse_next(struct mem_pool *p);

/* The device's memory in bytes (0: unknown), for the memory limit (the conf's
 * memory_fraction of it) and the address range of an expandable segment (9/8 of it, as
 * PyTorch reserves). Call before the first allocation. */
void mem_pool_set_device_bytes(struct mem_pool *p, uint64_t bytes);

/* Whether the pool's segments are expandable: asked for (expandable_segments:True) and the
 * raw allocator maps memory piecewise. */
bool mem_pool_expandable(const struct mem_pool *p);

/* Release every wholly free segment to the raw allocator, and unmap the free pages of an
 * expandable segment (giving it back once nothing in it is mapped); returns bytes released. */
uint64_t mem_pool_empty_cache(struct mem_pool *p);

/* Offer every free block of at least MEM_TRIM_MIN bytes to the raw allocator's discard, as
 * malloc_trim does for the heap: every number of the pool stays as it was (the blocks stay
 * cached and reserved), and a host-memory backend stops holding their pages. Returns the
 * free bytes offered (0 without discard). */
#define MEM_TRIM_MIN (64u << 10)
uint64_t mem_pool_trim(struct mem_pool *p);

void mem_pool_stats(const struct mem_pool *p, struct mem_stats *out);
void mem_pool_layout(const struct mem_pool *p, struct mem_layout *out);

/* Size a request is rounded to (512-byte multiples, as PyTorch). */
size_t mem_pool_round(size_t bytes);

/* Test/debug aid, O(blocks): verify the internal invariants (blocks tile each segment in
 * address order, no two adjacent free blocks, free lists sorted and complete, live lookup
 * complete, counters match). 0, or -EINVAL with err naming the first violation. */
int mem_pool_check(const struct mem_pool *p, char *err, size_t errlen);

#endif
