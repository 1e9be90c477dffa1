/* The caching allocator's records, shared by its core (mem_pool.c) and its expandable
 * segments (mem_pool_expand.c). */
#ifndef RINGSIDE_BACKEND_MEMORY_MEM_POOL_INTERNAL_H
#define RINGSIDE_BACKEND_MEMORY_MEM_POOL_INTERNAL_H

#include "backend/memory/mem_pool.h"

#define MEM_POOL_MIN_BLOCK 512u           /* kMinBlockSize: rounding granularity */
#define MEM_POOL_LARGE_BUF (20ull << 20)  /* kLargeBuffer: oversize-block slack */
#define MEM_POOL_MIN_LARGE (10ull << 20)  /* kMinLargeAlloc: below this, share 20 MiB */
#define MEM_POOL_MAX_BYTES (SIZE_MAX / 2) /* larger requests cannot be rounded safely */
#define MEM_POOL_SPARES    4              /* block records one alloc or unmap may need */

struct mem_pool_seg;

struct mem_pool_block {
    char *ptr;
    size_t size_bytes, requested_bytes;
    struct mem_pool_seg *seg;
    /* Address-order neighbours inside the segment; next also links the spare list. */
    struct mem_pool_block *prev, *next;
    bool allocated;
    bool mapped;      /* memory behind it: always in a fixed segment; in an expandable one,
                         false for the address space between its mapped pages */
    uint64_t gc_base; /* its pool's lookup count when it was last listed free (its age's zero) */
};

struct mem_pool_seg {
    char *base;
    size_t size_bytes; /* the memory behind it: reserved bytes (an expandable one's mapped) */
    size_t va_bytes;   /* the address range its blocks tile (size_bytes for a fixed one) */
    bool small_pool, expandable;
    uint32_t n_blocks, n_allocated;
    struct mem_pool_block *head;      /* block at offset 0 */
    struct mem_pool_seg *prev, *next; /* creation order */
};

/* Free (mapped) blocks of one pool sorted by (size, address), so best fit is a lower bound.
 * The array capacity is kept >= every block of the pool, so freeing never has to allocate. */
struct mem_pool_freeset {
    struct mem_pool_block **v;
    size_t n, cap, n_blocks;
    uint64_t lookups;            /* best-fit searches so far: the clock blocks age by */
    struct mem_pool_seg *expand; /* the pool's expandable segment, or NULL */
};

struct mem_pool {
    struct mem_conf conf;
    const struct mem_raw_ops *ops;
    void *ctx;
    struct mem_pool_freeset pools[2]; /* [0] small, [1] large */
    struct mem_pool_block **live;     /* open-addressed hash of allocated blocks by ptr */
    size_t live_cap, live_n;
    struct mem_pool_block *spare; /* recycled block records */
    size_t n_spare;
    struct mem_pool_seg *seg_head, *seg_tail;
    struct mem_stats st;   /* incremental fields; the derived ones are filled in mem_pool_stats */
    uint64_t device_bytes; /* the device's memory (0: unknown) */
    bool refuse_next;      /* mem_pool_refuse_next: the next alloc meets a full device */
    bool expand_failed;    /* reserving an expandable segment's range failed: fixed ones */
};

/* Block records from the spare list (callers made sure of MEM_POOL_SPARES), and back. */
struct mem_pool_block *mem_pool_block_get(struct mem_pool *p);
void mem_pool_block_put(struct mem_pool *p, struct mem_pool_block *b);
/* Spare records and free-list room for `extra` more blocks in fs: 0 or -ENOMEM. */
int mem_pool_room(struct mem_pool *p, struct mem_pool_freeset *fs, size_t extra);

/* List / unlist a free mapped block (listing starts its age). */
void mem_pool_fs_insert(struct mem_pool_freeset *fs, struct mem_pool_block *b);
void mem_pool_fs_remove(struct mem_pool_freeset *fs, const struct mem_pool_block *b);
/* Merge b with its free neighbours of the same mapped state (unlisting mapped ones); returns
 * the surviving block, not listed. */
struct mem_pool_block *mem_pool_coalesce(struct mem_pool *p, struct mem_pool_freeset *fs,
                                         struct mem_pool_block *b);

/* Append s to the segment list / take it out. */
void mem_pool_seg_link(struct mem_pool *p, struct mem_pool_seg *s);
void mem_pool_seg_unlink(struct mem_pool *p, struct mem_pool_seg *s);
/* reserved_bytes grew by bytes: its peak follows. */
void mem_pool_reserved_add(struct mem_pool *p, uint64_t bytes);
/* Whether bytes more would take reserved bytes past the memory limit. */
bool mem_pool_over_limit(const struct mem_pool *p, uint64_t bytes);

/* Expandable segments (mem_pool_expand.c). A free mapped block of at least size bytes from
 * the pool's expandable segment (made on first use), unlisted, mapping pages as needed: 0,
 * -ENOMEM (device full, past the limit, or out of address space) or the raw error; -ENOSYS
 * when the segment's range cannot be reserved (the caller falls back to fixed segments). */
int mem_pool_expand_take(struct mem_pool *p, struct mem_pool_freeset *fs, bool small, size_t size,
                         struct mem_pool_block **out);
/* Unmap the free pages of every expandable segment and give back the ones left with nothing
 * mapped; returns bytes unmapped. */
uint64_t mem_pool_expand_release(struct mem_pool *p);
/* Free an expandable segment, live blocks included, through the raw ops. */
void mem_pool_expand_destroy(struct mem_pool *p, struct mem_pool_seg *s);

#endif
