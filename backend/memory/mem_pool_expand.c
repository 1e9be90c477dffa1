/* Expandable segments (expandable_segments:True), as PyTorch's CUDACachingAllocator makes
 * them: one segment a pool, an address range as large as the device's memory and then some,
 * with memory mapped behind it in pages as requests need it (2 MiB pages in the small pool,
 * 20 MiB in the large one) and unmapped when the cache is emptied. A request that misses the
 * cache takes the lowest run of free and unmapped space that holds it, so blocks of changing
 * sizes tile one segment instead of leaving a segment of each size behind. */
#include "backend/memory/mem_pool_internal.h"

#include <errno.h>
#include <stdlib.h>

#define MEM_EXPAND_VA_UNKNOWN                                                                      \
    ((uint64_t)64 << 30) /* the range when the device's size is not known */

static size_t mem_expand_page(bool small) {
    return small ? MEM_SMALL_SEGMENT : MEM_LARGE_SEGMENT; /* kSmallBuffer, kLargeBuffer */
}

static size_t mem_expand_up(size_t v, size_t page) {
    return (v + page - 1) / page * page;
}

/* The pool's segment: its address range reserved, one unmapped block spanning it. 0, -ENOMEM,
 * or -ENOSYS when the range cannot be reserved. */
static int mem_expand_create(struct mem_pool *p, struct mem_pool_freeset *fs, bool small) {
    uint64_t dev = p->device_bytes ? p->device_bytes : MEM_EXPAND_VA_UNKNOWN;
    size_t page = mem_expand_page(small), va = mem_expand_up((size_t)(dev + dev / 8), page);
    struct mem_pool_seg *s = calloc(1, sizeof(*s));
    void *base = NULL;
    if (!s)
        return -ENOMEM;
    if (p->ops->reserve(p->ctx, va, &base) != 0) {
        free(s);
        return -ENOSYS;
    }
    struct mem_pool_block *b = mem_pool_block_get(p);
    *b = (struct mem_pool_block){.ptr = base, .size_bytes = va, .seg = s};
    *s = (struct mem_pool_seg){.base = base,
                               .va_bytes = va,
                               .small_pool = small,
                               .expandable = true,
                               .n_blocks = 1,
                               .head = b};
    mem_pool_seg_link(p, s);
    fs->n_blocks++;
    fs->expand = s;
    p->st.segments++;
    return 0;
}

/* The lowest run of free space (a free mapped block, then unmapped space, ...) of at least
 * size bytes, from its first block; NULL when the range has none. */
static struct mem_pool_block *mem_expand_find(const struct mem_pool_seg *s, size_t size) {
    for (struct mem_pool_block *u = s->head; u; u = u->next) {
        if (u->mapped)
            continue;
        struct mem_pool_block *c = u->prev && !u->prev->allocated ? u->prev : u;
        size_t bytes = 0;
        for (const struct mem_pool_block *x = c; x && !x->allocated && bytes < size; x = x->next)
            bytes += x->size_bytes;
        if (bytes >= size)
            return c;
    }
    return NULL;
}

/* Map the first bytes of unmapped block b, whole pages and at most all of it (the rest stays
 * an unmapped block after it); the mapped block joins its free neighbours and is listed; the
 * block holding it into *out. 0, -ENOMEM (device full, or past the memory limit) or the raw
 * error. */
static int mem_expand_map(struct mem_pool *p, struct mem_pool_freeset *fs, struct mem_pool_block *b,
                          size_t bytes, struct mem_pool_block **out) {
    size_t want = mem_expand_up(bytes, mem_expand_page(b->seg->small_pool));
    want = want < b->size_bytes ? want : b->size_bytes;
    if (mem_pool_over_limit(p, want))
        return -ENOMEM;
    int rc = p->ops->map(p->ctx, b->ptr, want);
    if (rc != 0)
        return rc;
    if (want < b->size_bytes) {
        struct mem_pool_block *r = mem_pool_block_get(p);
        *r = (struct mem_pool_block){.ptr = b->ptr + want,
                                     .size_bytes = b->size_bytes - want,
                                     .seg = b->seg,
                                     .prev = b,
                                     .next = b->next};
        if (b->next)
            b->next->prev = r;
        b->next = r;
        b->size_bytes = want;
        b->seg->n_blocks++;
        fs->n_blocks++;
    }
    b->mapped = true;
    b->seg->size_bytes += want;
    mem_pool_reserved_add(p, want);
    p->st.n_raw_alloc++;
    *out = mem_pool_coalesce(p, fs, b);
    mem_pool_fs_insert(fs, *out);
    return 0;
}

int mem_pool_expand_take(struct mem_pool *p, struct mem_pool_freeset *fs, bool small, size_t size,
                         struct mem_pool_block **out) {
    int rc = fs->expand ? 0 : mem_expand_create(p, fs, small);
    struct mem_pool_block *c = rc ? NULL : mem_expand_find(fs->expand, size);
    if (rc != 0)
        return rc;
    if (!c)
        return -ENOMEM; /* no room left in the range: the device's memory and more */
    if (!c->mapped)
        rc = mem_expand_map(p, fs, c, size, &c);
    while (rc == 0 && c->size_bytes < size) { /* free, then unmapped space after it */
        struct mem_pool_block *u = c->next;
        if (!u || u->allocated || u->mapped)
            return -ENOMEM; /* cannot happen: the run was measured */
        size_t more = size - c->size_bytes;
        rc = mem_expand_map(p, fs, u, more < u->size_bytes ? more : u->size_bytes, &c);
    }
    if (rc != 0)
        return rc; /* what was mapped stays, free and listed */
    mem_pool_fs_remove(fs, c);
    *out = c;
    return 0;
}

/* A new free mapped block of bytes at ptr, before or after b in its segment, listed. */
static void mem_expand_cut(struct mem_pool *p, struct mem_pool_freeset *fs,
                           struct mem_pool_block *b, char *ptr, size_t bytes, bool before) {
    struct mem_pool_block *r = mem_pool_block_get(p);
    *r = (struct mem_pool_block){.ptr = ptr, .size_bytes = bytes, .seg = b->seg, .mapped = true};
    if (before) {
        r->prev = b->prev;
        r->next = b;
        if (b->prev)
            b->prev->next = r;
        else
            b->seg->head = r;
        b->prev = r;
    } else {
        r->prev = b;
        r->next = b->next;
        if (b->next)
            b->next->prev = r;
        b->next = r;
    }
    b->seg->n_blocks++;
    fs->n_blocks++;
    mem_pool_fs_insert(fs, r);
}

/* Unmap the whole pages inside free mapped block b (what is left of it at either end stays a
 * free mapped block); returns bytes unmapped (0 when it holds no whole page, or when the host
 * cannot spare the records), and in *last the block where b's space ends now (b, or the
 * unmapped block it joined). */
static uint64_t mem_expand_unmap(struct mem_pool *p, struct mem_pool_freeset *fs,
                                 struct mem_pool_block *b, struct mem_pool_block **last) {
    struct mem_pool_seg *s = b->seg;
    size_t page = mem_expand_page(s->small_pool), off = (size_t)(b->ptr - s->base);
    size_t lo = mem_expand_up(off, page), hi = (off + b->size_bytes) / page * page;
    *last = b;
    if (hi <= lo || mem_pool_room(p, fs, MEM_POOL_SPARES + 2) != 0)
        return 0;
    mem_pool_fs_remove(fs, b);
    size_t end = off + b->size_bytes;
    if (lo > off)
        mem_expand_cut(p, fs, b, b->ptr, lo - off, true);
    if (end > hi)
        mem_expand_cut(p, fs, b, s->base + hi, end - hi, false);
    b->ptr = s->base + lo;
    b->size_bytes = hi - lo;
    p->ops->unmap(p->ctx, b->ptr, b->size_bytes);
    b->mapped = false;
    s->size_bytes -= hi - lo;
    p->st.reserved_bytes -= hi - lo;
    p->st.n_raw_free++;
    *last = mem_pool_coalesce(p, fs, b); /* joins unmapped neighbours, which are not listed */
    return hi - lo;
}

/* Give back a segment left with nothing mapped: one unmapped block spanning it. */
static void mem_expand_drop(struct mem_pool *p, struct mem_pool_freeset *fs) {
    struct mem_pool_seg *s = fs->expand;
    mem_pool_block_put(p, s->head);
    fs->n_blocks--;
    fs->expand = NULL;
    mem_pool_seg_unlink(p, s);
    p->st.segments--;
    p->ops->unreserve(p->ctx, s->base, s->va_bytes);
    free(s);
}

uint64_t mem_pool_expand_release(struct mem_pool *p) {
    uint64_t released = 0;
    for (int k = 0; k < 2; k++) {
        struct mem_pool_freeset *fs = &p->pools[k];
        if (!fs->expand)
            continue;
        for (struct mem_pool_block *b = fs->expand->head; b; b = b->next)
            if (b->mapped && !b->allocated)
                released += mem_expand_unmap(p, fs, b, &b); /* b: where its space ends now */
        if (fs->expand->n_blocks == 1 && !fs->expand->head->mapped)
            mem_expand_drop(p, fs);
    }
    return released;
}

void mem_pool_expand_destroy(struct mem_pool *p, struct mem_pool_seg *s) {
    char *run = NULL; /* the start of the mapped run the blocks walked so far end in */
    struct mem_pool_block *b = s->head, *next;
    for (; b; b = next) {
        next = b->next;
        if (b->mapped && !run)
            run = b->ptr;
        if (run && (!next || !next->mapped)) { /* a run of whole pages ends here */
            p->ops->unmap(p->ctx, run, (size_t)(b->ptr + b->size_bytes - run));
            run = NULL;
        }
        free(b);
    }
    p->ops->unreserve(p->ctx, s->base, s->va_bytes);
    free(s);
}
