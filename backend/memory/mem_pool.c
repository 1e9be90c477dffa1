/* Best-fit caching allocator: raw segments split into blocks, free blocks kept per pool in
 * (size, address) order for O(log n) best fit, live blocks in a pointer hash for O(1) free;
 * garbage collection and the memory limit. */
#include "backend/memory/mem_pool.h"

#include "backend/core/errbuf.h"
#include "backend/memory/mem_pool_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

size_t mem_pool_round(size_t bytes) {
    if (bytes < MEM_POOL_MIN_BLOCK)
        return MEM_POOL_MIN_BLOCK;
    if (bytes > SIZE_MAX - (MEM_POOL_MIN_BLOCK - 1))
        return 0; /* would wrap */
    return (bytes + MEM_POOL_MIN_BLOCK - 1) & ~(size_t)(MEM_POOL_MIN_BLOCK - 1);
}

/* ---- live-block hash (linear probing, backward-shift deletion) ---- */

static size_t mem_pool_hash(const void *ptr, size_t cap) {
    uint64_t k = (uint64_t)(uintptr_t)ptr >> 9; /* blocks are 512-aligned relative to segments */
    return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 29) & (cap - 1);
}

static void mem_pool_live_put(struct mem_pool_block **tab, size_t cap, struct mem_pool_block *b) {
    size_t i = mem_pool_hash(b->ptr, cap);
    while (tab[i])
        i = (i + 1) & (cap - 1);
    tab[i] = b;
}

/* Keep the load factor <= 1/2 after one more insert. */
static int mem_pool_live_reserve(struct mem_pool *p) {
    if ((p->live_n + 1) * 2 <= p->live_cap)
        return 0;
    size_t cap = p->live_cap ? p->live_cap * 2 : 64;
    struct mem_pool_block **tab = calloc(cap, sizeof(*tab));
    if (!tab)
        return -ENOMEM;
    for (size_t i = 0; i < p->live_cap; i++)
        if (p->live[i])
            mem_pool_live_put(tab, cap, p->live[i]);
    free(p->live);
    p->live = tab;
    p->live_cap = cap;
    return 0;
}

static size_t mem_pool_live_find(const struct mem_pool *p, const void *ptr) {
    if (p->live_cap == 0)
        return SIZE_MAX;
    for (size_t i = mem_pool_hash(ptr, p->live_cap);; i = (i + 1) & (p->live_cap - 1)) {
        if (!p->live[i])
            return SIZE_MAX;
        if (p->live[i]->ptr == ptr)
            return i;
    }
}

static void mem_pool_live_remove(struct mem_pool *p, size_t i) {
    size_t mask = p->live_cap - 1, j = i;
    p->live[i] = NULL;
    p->live_n--;
    for (;;) {
        j = (j + 1) & mask;
        if (!p->live[j])
            return;
        size_t k = mem_pool_hash(p->live[j]->ptr, p->live_cap);
        /* An entry whose home lies cyclically in (i, j] is still reachable; leave it. */
        bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stays)
            continue;
        p->live[i] = p->live[j];
        p->live[j] = NULL;
        i = j;
    }
}

/* ---- free sets ---- */

static size_t mem_pool_fs_lower(const struct mem_pool_freeset *fs, size_t size, const char *ptr) {
    size_t lo = 0, hi = fs->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct mem_pool_block *b = fs->v[mid];
        if (b->size_bytes < size || (b->size_bytes == size && b->ptr < ptr))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void mem_pool_fs_insert(struct mem_pool_freeset *fs, struct mem_pool_block *b) {
    size_t i = mem_pool_fs_lower(fs, b->size_bytes, b->ptr);
    b->gc_base = fs->lookups;
    memmove(fs->v + i + 1, fs->v + i, (fs->n - i) * sizeof(*fs->v));
    fs->v[i] = b;
    fs->n++;
}

void mem_pool_fs_remove(struct mem_pool_freeset *fs, const struct mem_pool_block *b) {
    size_t i = mem_pool_fs_lower(fs, b->size_bytes, b->ptr);
    memmove(fs->v + i, fs->v + i + 1, (fs->n - i - 1) * sizeof(*fs->v));
    fs->n--;
}

static int mem_pool_fs_reserve(struct mem_pool_freeset *fs, size_t need) {
    if (need <= fs->cap)
        return 0;
    size_t cap = fs->cap * 2 > need ? fs->cap * 2 : need + 16;
    struct mem_pool_block **v = realloc(fs->v, cap * sizeof(*v));
    if (!v)
        return -ENOMEM;
    fs->v = v;
    fs->cap = cap;
    return 0;
}

/* ---- block records ---- */

struct mem_pool_block *mem_pool_block_get(struct mem_pool *p) {
    struct mem_pool_block *b = p->spare;
    p->spare = b->next;
    p->n_spare--;
    return b;
}

void mem_pool_block_put(struct mem_pool *p, struct mem_pool_block *b) {
    b->next = p->spare;
    p->spare = b;
    p->n_spare++;
}

/* Drop a block record that was merged into a neighbour. */
static void mem_pool_block_drop(struct mem_pool *p, struct mem_pool_freeset *fs,
                                struct mem_pool_block *b) {
    b->seg->n_blocks--;
    fs->n_blocks--;
    mem_pool_block_put(p, b);
}

static struct mem_pool_freeset *mem_pool_fs_of(struct mem_pool *p, const struct mem_pool_seg *s) {
    return &p->pools[s->small_pool ? 0 : 1];
}

/* ---- segments ---- */

/* get_allocation_size in PyTorch. */
static size_t mem_pool_segment_size(size_t size, bool small) {
    if (small)
        return MEM_SMALL_SEGMENT;
    if (size < MEM_POOL_MIN_LARGE)
        return MEM_LARGE_SEGMENT;
    return (size + MEM_ROUND_LARGE - 1) / MEM_ROUND_LARGE * MEM_ROUND_LARGE;
}

void mem_pool_seg_link(struct mem_pool *p, struct mem_pool_seg *s) {
    s->prev = p->seg_tail;
    s->next = NULL;
    if (p->seg_tail)
        p->seg_tail->next = s;
    else
        p->seg_head = s;
    p->seg_tail = s;
}

void mem_pool_seg_unlink(struct mem_pool *p, struct mem_pool_seg *s) {
    if (s->prev)
        s->prev->next = s->next;
    else
        p->seg_head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else
        p->seg_tail = s->prev;
}

/* A wholly free fixed segment holds exactly one free block (coalescing guarantees it). */
static uint64_t mem_pool_seg_release(struct mem_pool *p, struct mem_pool_seg *s) {
    struct mem_pool_freeset *fs = mem_pool_fs_of(p, s);
    mem_pool_fs_remove(fs, s->head);
    fs->n_blocks--;
    mem_pool_block_put(p, s->head);
    mem_pool_seg_unlink(p, s);
    p->ops->free(p->ctx, s->base, s->size_bytes);
    uint64_t bytes = s->size_bytes;
    p->st.reserved_bytes -= bytes;
    p->st.segments--;
    p->st.n_raw_free++;
    free(s);
    return bytes;
}

void mem_pool_refuse_next(struct mem_pool *p) {
    p->refuse_next = true;
}

uint64_t mem_pool_empty_cache(struct mem_pool *p) {
    uint64_t released = 0;
    struct mem_pool_seg *s = p->seg_head, *next;
    for (; s; s = next) {
        next = s->next;
        if (!s->expandable && s->n_allocated == 0)
            released += mem_pool_seg_release(p, s);
    }
    return released + mem_pool_expand_release(p);
}

uint64_t mem_pool_trim(struct mem_pool *p) {
    uint64_t offered = 0;
    for (struct mem_pool_seg *s = p->ops->discard ? p->seg_head : NULL; s; s = s->next)
        for (struct mem_pool_block *b = s->head; b; b = b->next)
            if (!b->allocated && b->mapped && b->size_bytes >= MEM_TRIM_MIN) {
                p->ops->discard(p->ctx, b->ptr, b->size_bytes);
                offered += b->size_bytes;
            }
    return offered;
}

void mem_pool_reserved_add(struct mem_pool *p, uint64_t bytes) {
    p->st.reserved_bytes += bytes;
    if (p->st.reserved_bytes > p->st.peak_reserved_bytes)
        p->st.peak_reserved_bytes = p->st.reserved_bytes;
}

bool mem_pool_over_limit(const struct mem_pool *p, uint64_t bytes) {
    return p->st.limit_bytes && p->st.reserved_bytes + bytes > p->st.limit_bytes;
}

/* ---- garbage collection (garbage_collection_threshold) ---- */

/* A cached block garbage collection may release: a whole fixed segment of the large pool. */
static bool mem_pool_gc_whole(const struct mem_pool_block *b) {
    return !b->prev && !b->next && !b->seg->expandable;
}

/* Past the threshold's share of the memory limit, release cached whole segments until the
 * pool is back under it: those at least as old as the average first, again with the rest
 * until one round frees nothing (PyTorch's garbage_collect_cached_blocks; ages count the
 * pool's best-fit searches since a block was last listed free). As PyTorch, it acts only
 * with a memory limit (per_process_memory_fraction). */
static void mem_pool_gc(struct mem_pool *p) {
    if (!(p->conf.gc_threshold > 0.0) || !p->st.limit_bytes)
        return;
    uint64_t at = (uint64_t)(p->conf.gc_threshold * (double)p->st.limit_bytes);
    if (p->st.reserved_bytes <= at)
        return;
    struct mem_pool_freeset *fs = &p->pools[1];
    uint64_t target = p->st.reserved_bytes - at, reclaimed = 0, total_age = 0;
    size_t count = 0;
    for (size_t i = 0; i < fs->n; i++)
        if (mem_pool_gc_whole(fs->v[i])) {
            total_age += fs->lookups - fs->v[i]->gc_base;
            count++;
        }
    for (bool freed = true; reclaimed < target && freed && count > 0;) {
        double age_at = (double)total_age / (double)count;
        freed = false;
        for (size_t i = 0; i < fs->n;) { /* a release takes v[i] out: v[i] is the next then */
            struct mem_pool_block *b = fs->v[i];
            uint64_t age = fs->lookups - b->gc_base;
            if (!mem_pool_gc_whole(b) || (double)age < age_at) {
                i++;
                continue;
            }
            reclaimed += mem_pool_seg_release(p, b->seg);
            total_age -= age;
            count--;
            freed = true;
            p->st.n_gc_frees++;
        }
    }
}

/* ---- growing ---- */

/* Raw-allocate with one retry after dropping the cache when the device is full or the memory
 * limit is reached; any other error is the raw allocator's own and is passed on as it is (no
 * cache would cure it). */
static int mem_pool_raw_alloc(struct mem_pool *p, size_t bytes, void **base) {
    int rc = mem_pool_over_limit(p, bytes) ? -ENOMEM : p->ops->alloc(p->ctx, bytes, base);
    if (rc != -ENOMEM)
        return rc < 0 ? rc : 0;
    p->st.n_oom_retries++;
    mem_pool_empty_cache(p);
    rc = mem_pool_over_limit(p, bytes) ? -ENOMEM : p->ops->alloc(p->ctx, bytes, base);
    return rc < 0 ? rc : 0;
}

/* New fixed segment for a request of size; returns its single (free, unlisted) block. */
static int mem_pool_grow_fixed(struct mem_pool *p, size_t size, bool small,
                               struct mem_pool_block **out) {
    size_t bytes = mem_pool_segment_size(size, small);
    struct mem_pool_seg *s = calloc(1, sizeof(*s));
    void *base;
    if (!s)
        return -ENOMEM;
    int rc = mem_pool_raw_alloc(p, bytes, &base);
    if (rc < 0) {
        free(s);
        return rc;
    }
    struct mem_pool_block *b = mem_pool_block_get(p);
    *b = (struct mem_pool_block){.ptr = base, .size_bytes = bytes, .seg = s, .mapped = true};
    *s = (struct mem_pool_seg){.base = base,
                               .size_bytes = bytes,
                               .va_bytes = bytes,
                               .small_pool = small,
                               .n_blocks = 1,
                               .head = b};
    mem_pool_seg_link(p, s);
    mem_pool_fs_of(p, s)->n_blocks++;
    mem_pool_reserved_add(p, bytes);
    p->st.segments++;
    p->st.n_raw_alloc++;
    *out = b;
    return 0;
}

/* More memory for a request of size: pages of the pool's expandable segment (with one retry
 * after dropping the cache, as for a raw allocation), or a fixed segment. */
static int mem_pool_grow(struct mem_pool *p, struct mem_pool_freeset *fs, size_t size, bool small,
                         struct mem_pool_block **out) {
    if (!mem_pool_expandable(p))
        return mem_pool_grow_fixed(p, size, small, out);
    int rc = mem_pool_expand_take(p, fs, small, size, out);
    if (rc == -ENOMEM) {
        p->st.n_oom_retries++;
        mem_pool_empty_cache(p);
        rc = mem_pool_room(p, fs, MEM_POOL_SPARES);
        rc = rc ? rc : mem_pool_expand_take(p, fs, small, size, out);
    }
    if (rc == -ENOSYS) { /* no address range for it: fixed segments from now on */
        p->expand_failed = true;
        return mem_pool_grow_fixed(p, size, small, out);
    }
    return rc;
}

/* ---- alloc / free ---- */

/* Smallest fitting free block, subject to PyTorch's max_split_size oversize rules; every
 * search ticks the pool's clock, which garbage collection ages blocks by. */
static struct mem_pool_block *mem_pool_best_fit(struct mem_pool *p, struct mem_pool_freeset *fs,
                                                size_t size) {
    fs->lookups++;
    size_t i = mem_pool_fs_lower(fs, size, NULL);
    if (i == fs->n)
        return NULL;
    struct mem_pool_block *b = fs->v[i];
    uint64_t max_split = p->conf.max_split_size_bytes;
    if (size < max_split && b->size_bytes >= max_split)
        return NULL; /* don't carve small requests out of oversize blocks */
    if (size >= max_split && b->size_bytes >= size + MEM_POOL_LARGE_BUF)
        return NULL; /* an oversize block may be used only if it wastes < 20 MiB */
    return b;
}

/* PyTorch's should_split: small-pool blocks and every block of expandable segments split
 * whenever a minimum block is left over; large blocks only below max_split_size and when more
 * than 1 MiB is left. */
static void mem_pool_split(struct mem_pool *p, struct mem_pool_freeset *fs,
                           struct mem_pool_block *b, size_t size) {
    size_t rem = b->size_bytes - size;
    bool split = b->seg->small_pool || b->seg->expandable
                     ? rem >= MEM_POOL_MIN_BLOCK
                     : size < p->conf.max_split_size_bytes && rem > MEM_SMALL_LIMIT;
    if (!split)
        return;
    struct mem_pool_block *r = mem_pool_block_get(p);
    *r = (struct mem_pool_block){.ptr = b->ptr + size,
                                 .size_bytes = rem,
                                 .seg = b->seg,
                                 .prev = b,
                                 .next = b->next,
                                 .mapped = true};
    if (b->next)
        b->next->prev = r;
    b->next = r;
    b->size_bytes = size;
    b->seg->n_blocks++;
    fs->n_blocks++;
    mem_pool_fs_insert(fs, r);
}

int mem_pool_room(struct mem_pool *p, struct mem_pool_freeset *fs, size_t extra) {
    if (mem_pool_fs_reserve(fs, fs->n_blocks + extra) < 0)
        return -ENOMEM;
    while (p->n_spare < extra) {
        struct mem_pool_block *b = malloc(sizeof(*b));
        if (!b)
            return -ENOMEM;
        mem_pool_block_put(p, b);
    }
    return 0;
}

/* Everything alloc may need from the host, taken before anything changes. */
static int mem_pool_reserve(struct mem_pool *p, struct mem_pool_freeset *fs) {
    if (mem_pool_live_reserve(p) < 0)
        return -ENOMEM;
    return mem_pool_room(p, fs, MEM_POOL_SPARES);
}

/* A block of at least size for the request: from the cache, or after garbage collection
 * from new memory. */
static int mem_pool_find(struct mem_pool *p, struct mem_pool_freeset *fs, size_t size, bool small,
                         struct mem_pool_block **out) {
    struct mem_pool_block *b = mem_pool_best_fit(p, fs, size);
    if (b) {
        mem_pool_fs_remove(fs, b);
        p->st.n_cache_hits++;
        *out = b;
        return 0;
    }
    mem_pool_gc(p);
    return mem_pool_grow(p, fs, size, small, out);
}

int mem_pool_alloc(struct mem_pool *p, size_t bytes, void **out) {
    if (bytes == 0)
        return -EINVAL;
    size_t size = mem_pool_round(bytes);
    bool small = size <= MEM_SMALL_LIMIT;
    struct mem_pool_freeset *fs = &p->pools[small ? 0 : 1];
    struct mem_pool_block *b;
    if (p->refuse_next) { /* what a full device does to the request: see mem_pool_raw_alloc */
        p->refuse_next = false;
        p->st.n_oom_retries++;
        mem_pool_empty_cache(p);
        p->st.n_oom++;
        return -ENOMEM;
    }
    if (bytes > MEM_POOL_MAX_BYTES || mem_pool_reserve(p, fs) < 0) {
        p->st.n_oom++;
        return -ENOMEM;
    }
    int rc = mem_pool_find(p, fs, size, small, &b);
    if (rc < 0) {
        p->st.n_oom += rc == -ENOMEM;
        return rc;
    }
    mem_pool_split(p, fs, b, size);
    b->allocated = true;
    b->requested_bytes = bytes;
    b->seg->n_allocated++;
    p->live_n++;
    mem_pool_live_put(p->live, p->live_cap, b);
    p->st.allocated_bytes += b->size_bytes;
    p->st.requested_bytes += bytes;
    p->st.active_blocks++;
    p->st.n_alloc++;
    if (p->st.allocated_bytes > p->st.peak_allocated_bytes)
        p->st.peak_allocated_bytes = p->st.allocated_bytes;
    *out = b->ptr;
    return 0;
}

/* Whether b can absorb its neighbour n: n free and of the same kind (mapped or not). */
static bool mem_pool_mergeable(const struct mem_pool_block *b, const struct mem_pool_block *n) {
    return n && !n->allocated && n->mapped == b->mapped;
}

struct mem_pool_block *mem_pool_coalesce(struct mem_pool *p, struct mem_pool_freeset *fs,
                                         struct mem_pool_block *b) {
    struct mem_pool_block *n = b->next, *pr = b->prev;
    if (mem_pool_mergeable(b, n)) {
        if (n->mapped)
            mem_pool_fs_remove(fs, n);
        b->size_bytes += n->size_bytes;
        b->next = n->next;
        if (n->next)
            n->next->prev = b;
        mem_pool_block_drop(p, fs, n);
    }
    if (mem_pool_mergeable(b, pr)) {
        if (pr->mapped)
            mem_pool_fs_remove(fs, pr);
        pr->size_bytes += b->size_bytes;
        pr->next = b->next;
        if (b->next)
            b->next->prev = pr;
        mem_pool_block_drop(p, fs, b);
        b = pr;
    }
    return b;
}

int mem_pool_free(struct mem_pool *p, void *ptr) {
    if (!ptr)
        return 0;
    size_t i = mem_pool_live_find(p, ptr);
    if (i == SIZE_MAX)
        return -EINVAL;
    struct mem_pool_block *b = p->live[i];
    struct mem_pool_freeset *fs = mem_pool_fs_of(p, b->seg);
    mem_pool_live_remove(p, i);
    p->st.allocated_bytes -= b->size_bytes;
    p->st.requested_bytes -= b->requested_bytes;
    p->st.active_blocks--;
    p->st.n_free++;
    b->allocated = false;
    b->requested_bytes = 0;
    b->seg->n_allocated--;
    mem_pool_fs_insert(fs, mem_pool_coalesce(p, fs, b));
    return 0;
}

/* ---- lifetime ---- */

int mem_pool_create(struct mem_pool **out, const struct mem_conf *conf,
                    const struct mem_raw_ops *ops, void *ctx) {
    struct mem_pool *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    if (conf)
        p->conf = *conf;
    else
        mem_conf_default(&p->conf);
    p->ops = ops;
    p->ctx = ctx;
    *out = p;
    return 0;
}

void mem_pool_set_device_bytes(struct mem_pool *p, uint64_t bytes) {
    p->device_bytes = bytes;
    double f = p->conf.memory_fraction;
    p->st.limit_bytes = f > 0.0 && bytes ? (uint64_t)(f * (double)bytes) : 0;
}

bool mem_pool_expandable(const struct mem_pool *p) {
    const struct mem_raw_ops *o = p->ops;
    return p->conf.expandable_segments && !p->expand_failed && o->reserve && o->map && o->unmap &&
           o->unreserve;
}

void mem_pool_destroy(struct mem_pool *p) {
    if (!p)
        return;
    struct mem_pool_seg *s = p->seg_head, *next_seg;
    for (; s; s = next_seg) {
        next_seg = s->next;
        if (s->expandable) {
            mem_pool_expand_destroy(p, s);
            continue;
        }
        struct mem_pool_block *b = s->head, *next_b;
        for (; b; b = next_b) {
            next_b = b->next;
            free(b);
        }
        p->ops->free(p->ctx, s->base, s->size_bytes);
        free(s);
    }
    while (p->spare)
        free(mem_pool_block_get(p));
    free(p->pools[0].v);
    free(p->pools[1].v);
    free(p->live);
    free(p);
}

/* ---- introspection ---- */

void mem_pool_stats(const struct mem_pool *p, struct mem_stats *out) {
    *out = p->st;
    out->total_free_bytes = p->st.reserved_bytes - p->st.allocated_bytes;
    out->largest_free_bytes = 0;
    out->free_blocks = 0;
    for (int k = 0; k < 2; k++) {
        const struct mem_pool_freeset *fs = &p->pools[k];
        out->free_blocks += (uint32_t)fs->n;
        if (fs->n && fs->v[fs->n - 1]->size_bytes > out->largest_free_bytes)
            out->largest_free_bytes = fs->v[fs->n - 1]->size_bytes;
    }
    out->frag = out->total_free_bytes
                    ? 1.0 - (double)out->largest_free_bytes / (double)out->total_free_bytes
                    : 0.0;
}

/* Insert s into top[] (size descending, creation order among equals), capped at the max. */
static void mem_pool_layout_rank(const struct mem_pool_seg **top, uint32_t *n,
                                 const struct mem_pool_seg *s) {
    uint32_t i = *n;
    while (i > 0 && top[i - 1]->size_bytes < s->size_bytes)
        i--;
    if (i >= MEM_LAYOUT_MAX_SEGMENTS)
        return;
    uint32_t last = *n < MEM_LAYOUT_MAX_SEGMENTS ? *n : MEM_LAYOUT_MAX_SEGMENTS - 1;
    memmove(top + i + 1, top + i, (last - i) * sizeof(*top));
    top[i] = s;
    if (*n < MEM_LAYOUT_MAX_SEGMENTS)
        (*n)++;
}

void mem_pool_layout(const struct mem_pool *p, struct mem_layout *out) {
    const struct mem_pool_seg *top[MEM_LAYOUT_MAX_SEGMENTS];
    memset(out, 0, sizeof(*out));
    for (const struct mem_pool_seg *s = p->seg_head; s; s = s->next) {
        out->n_segments++;
        if (s->size_bytes) /* an expandable segment with nothing mapped has nothing to draw */
            mem_pool_layout_rank(top, &out->n_listed, s);
    }
    for (uint32_t i = 0; i < out->n_listed; i++) {
        const struct mem_pool_seg *s = top[i];
        out->seg[i].size_bytes = s->size_bytes;
        out->seg[i].small_pool = s->small_pool;
        uint32_t n = 0;
        uint64_t off = 0; /* an expandable segment's mapped blocks, end to end */
        const struct mem_pool_block *b = s->head;
        for (; b && n < MEM_LAYOUT_MAX_BLOCKS; b = b->next) {
            if (!b->mapped)
                continue;
            out->seg[i].blocks[n++] = (struct mem_block_info){
                .offset_bytes = off, .size_bytes = b->size_bytes, .allocated = b->allocated};
            off += b->size_bytes;
        }
        while (b && !b->mapped)
            b = b->next;
        out->seg[i].truncated = b != NULL;
        out->seg[i].n_blocks = n;
    }
}

/* ---- self-check ---- */

struct mem_pool_tally {
    uint64_t alloc_bytes, reserved_bytes;
    size_t n_blocks[2], n_free[2], n_live, n_segs;
};

/* Where b must be: the live hash when allocated, its pool's free list when free and mapped,
 * neither when unmapped. */
static bool mem_pool_listed(const struct mem_pool *p, const struct mem_pool_block *b) {
    if (b->allocated) {
        size_t i = mem_pool_live_find(p, b->ptr);
        return b->mapped && i != SIZE_MAX && p->live[i] == b;
    }
    const struct mem_pool_freeset *fs = &p->pools[b->seg->small_pool ? 0 : 1];
    size_t i = mem_pool_fs_lower(fs, b->size_bytes, b->ptr);
    return (i < fs->n && fs->v[i] == b) == b->mapped;
}

static int mem_pool_check_seg(const struct mem_pool *p, const struct mem_pool_seg *s,
                              struct mem_pool_tally *t, char *err, size_t errlen) {
    const struct mem_pool_block *prev = NULL, *b = s->head;
    size_t off = 0, n = 0, n_alloc = 0, mapped = 0, k = s->small_pool ? 0 : 1;
    for (; b; prev = b, b = b->next, n++) {
        if (b->seg != s || b->prev != prev || (size_t)(b->ptr - s->base) != off ||
            b->size_bytes == 0 || b->size_bytes % MEM_POOL_MIN_BLOCK != 0 ||
            (!b->mapped && !s->expandable))
            return errbuf_set(err, errlen, -EINVAL, "mem_pool: segment %p: block %zu misplaced",
                              (void *)s->base, n);
        if (prev && !prev->allocated && !b->allocated && prev->mapped == b->mapped)
            return errbuf_set(err, errlen, -EINVAL, "mem_pool: segment %p: adjacent free blocks",
                              (void *)s->base);
        if (!mem_pool_listed(p, b))
            return errbuf_set(err, errlen, -EINVAL, "mem_pool: segment %p: block %zu unlisted",
                              (void *)s->base, n);
        off += b->size_bytes;
        mapped += b->mapped ? b->size_bytes : 0;
        n_alloc += b->allocated;
        t->alloc_bytes += b->allocated ? b->size_bytes : 0;
        t->n_free[k] += !b->allocated && b->mapped;
    }
    if (off != s->va_bytes || mapped != s->size_bytes || n != s->n_blocks ||
        n_alloc != s->n_allocated || (s->expandable && p->pools[k].expand != s))
        return errbuf_set(err, errlen, -EINVAL, "mem_pool: segment %p: blocks do not tile it",
                          (void *)s->base);
    t->n_blocks[k] += n;
    t->n_live += n_alloc;
    t->reserved_bytes += s->size_bytes;
    t->n_segs++;
    return 0;
}

static int mem_pool_check_fs(const struct mem_pool_freeset *fs, size_t n_free, size_t n_blocks,
                             char *err, size_t errlen) {
    if (fs->n != n_free || fs->n_blocks != n_blocks || fs->cap < n_blocks)
        return errbuf_set(err, errlen, -EINVAL, "mem_pool: free list count %zu, expected %zu",
                          fs->n, n_free);
    for (size_t i = 1; i < fs->n; i++) {
        const struct mem_pool_block *a = fs->v[i - 1], *b = fs->v[i];
        if (a->size_bytes > b->size_bytes || (a->size_bytes == b->size_bytes && a->ptr >= b->ptr))
            return errbuf_set(err, errlen, -EINVAL, "mem_pool: free list unsorted at %zu", i);
    }
    return 0;
}

int mem_pool_check(const struct mem_pool *p, char *err, size_t errlen) {
    struct mem_pool_tally t = {0};
    for (const struct mem_pool_seg *s = p->seg_head; s; s = s->next) {
        int rc = mem_pool_check_seg(p, s, &t, err, errlen);
        if (rc < 0)
            return rc;
    }
    for (int k = 0; k < 2; k++) {
        int rc = mem_pool_check_fs(&p->pools[k], t.n_free[k], t.n_blocks[k], err, errlen);
        if (rc < 0)
            return rc;
    }
    if (t.alloc_bytes != p->st.allocated_bytes || t.reserved_bytes != p->st.reserved_bytes ||
        t.n_live != p->live_n || t.n_live != p->st.active_blocks || t.n_segs != p->st.segments)
        return errbuf_set(err, errlen, -EINVAL, "mem_pool: counters disagree with the blocks");
    return 0;
}
