/* Unit tests for the caching allocator (mem_pool) and its PyTorch-style config (mem_conf). */
#include "backend/memory/mem_conf.h"
#include "backend/memory/mem_pool.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

/* ---- fake raw allocator: real host memory, a byte budget, injectable failures ---- */

#define FAKE_MAX 512

struct fake_raw {
    size_t budget_bytes, in_use_bytes;
    int fail_next; /* fail this many upcoming allocations */
    int fail_rc;   /* with this error (0: -ENOMEM) */
    unsigned n_alloc, n_free, n_fail;
    size_t n_live;
    struct {
        char *ptr;
        size_t bytes;
    } live[FAKE_MAX];
};

static int fake_alloc(void *ctx, size_t bytes, void **out) {
    struct fake_raw *f = ctx;
    if (f->fail_next > 0 || f->in_use_bytes + bytes > f->budget_bytes || f->n_live == FAKE_MAX) {
        f->fail_next -= f->fail_next > 0;
        f->n_fail++;
        return f->fail_rc ? f->fail_rc : -ENOMEM;
    }
    char *p = malloc(bytes);
    cr_assert_not_null(p);
    f->live[f->n_live].ptr = p;
    f->live[f->n_live].bytes = bytes;
    f->n_live++;
    f->in_use_bytes += bytes;
    f->n_alloc++;
    *out = p;
    return 0;
}

static void fake_free(void *ctx, void *ptr, size_t bytes) {
    struct fake_raw *f = ctx;
    for (size_t i = 0; i < f->n_live; i++) {
        if (f->live[i].ptr != ptr)
            continue;
        cr_assert_eq(f->live[i].bytes, bytes, "raw free with the wrong size");
        f->live[i] = f->live[--f->n_live];
        f->in_use_bytes -= bytes;
        f->n_free++;
        free(ptr);
        return;
    }
    cr_assert_fail("raw free of a pointer the fake never handed out");
}

static const struct mem_raw_ops fake_ops = {.alloc = fake_alloc, .free = fake_free};

/* ---- fake address ranges (expandable segments): reserved without memory, mapped in 2 MiB
 * units, each unit checked to be mapped once and unmapped once, its bytes in the budget ---- */

#define FAKE_UNIT (2 * MIB)
#define FAKE_VMAX 4

struct fake_vm {
    struct fake_raw raw; /* first: the ops' ctx is either */
    unsigned n_reserve, n_map, n_unmap;
    size_t n_ranges;
    struct {
        char *base;
        size_t bytes;
        unsigned char *mapped; /* one byte a unit */
    } range[FAKE_VMAX];
};

static int fake_reserve(void *ctx, size_t bytes, void **base) {
    struct fake_vm *v = ctx;
    cr_assert_lt(v->n_ranges, FAKE_VMAX);
    cr_assert_eq(bytes % FAKE_UNIT, 0, "reserve of %zu bytes", bytes);
    void *b = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    cr_assert_neq(b, MAP_FAILED);
    v->range[v->n_ranges].base = b;
    v->range[v->n_ranges].bytes = bytes;
    v->range[v->n_ranges].mapped = calloc(bytes / FAKE_UNIT, 1);
    v->n_ranges++;
    v->n_reserve++;
    *base = b;
    return 0;
}

/* The units [ptr, ptr + bytes) cover in their range, checked to lie inside one. */
static unsigned char *fake_units(struct fake_vm *v, void *ptr, size_t bytes) {
    for (size_t i = 0; i < v->n_ranges; i++) {
        char *b = v->range[i].base, *q = ptr;
        if (q < b || q + bytes > b + v->range[i].bytes)
            continue;
        cr_assert_eq((size_t)(q - b) % FAKE_UNIT, 0, "a map or unmap off a page");
        cr_assert_eq(bytes % FAKE_UNIT, 0, "a map or unmap of %zu bytes at %zu", bytes,
                     (size_t)(q - b));
        return v->range[i].mapped + (size_t)(q - b) / FAKE_UNIT;
    }
    cr_assert_fail("map or unmap outside every reserved range");
    return NULL;
}

static int fake_map(void *ctx, void *ptr, size_t bytes) {
    struct fake_vm *v = ctx;
    struct fake_raw *f = &v->raw;
    if (f->fail_next > 0 || f->in_use_bytes + bytes > f->budget_bytes) {
        f->fail_next -= f->fail_next > 0;
        f->n_fail++;
        return -ENOMEM;
    }
    unsigned char *u = fake_units(v, ptr, bytes);
    for (size_t i = 0; i < bytes / FAKE_UNIT; i++) {
        cr_assert_eq(u[i], 0, "a page mapped twice");
        u[i] = 1;
    }
    f->in_use_bytes += bytes;
    v->n_map++;
    return 0;
}

static void fake_unmap(void *ctx, void *ptr, size_t bytes) {
    struct fake_vm *v = ctx;
    unsigned char *u = fake_units(v, ptr, bytes);
    for (size_t i = 0; i < bytes / FAKE_UNIT; i++) {
        cr_assert_eq(u[i], 1, "an unmapped page unmapped");
        u[i] = 0;
    }
    v->raw.in_use_bytes -= bytes;
    v->n_unmap++;
}

static void fake_unreserve(void *ctx, void *base, size_t bytes) {
    struct fake_vm *v = ctx;
    for (size_t i = 0; i < v->n_ranges; i++) {
        if (v->range[i].base != base)
            continue;
        cr_assert_eq(v->range[i].bytes, bytes);
        for (size_t k = 0; k < bytes / FAKE_UNIT; k++)
            cr_assert_eq(v->range[i].mapped[k], 0, "a range given back with pages mapped");
        munmap(base, bytes);
        free(v->range[i].mapped);
        v->range[i] = v->range[--v->n_ranges];
        return;
    }
    cr_assert_fail("unreserve of a range the fake never reserved");
}

/* pool_done for a pool over fake_vm_ops: every range given back too. */
static void vm_done(struct mem_pool *p, struct fake_vm *v) {
    mem_pool_destroy(p);
    cr_assert_eq(v->raw.n_live, 0, "destroy left raw segments behind");
    cr_assert_eq(v->raw.in_use_bytes, 0, "destroy left pages mapped");
    cr_assert_eq(v->n_ranges, 0, "destroy left an address range reserved");
    free(v);
}

static const struct mem_raw_ops fake_vm_ops = {.alloc = fake_alloc,
                                               .free = fake_free,
                                               .reserve = fake_reserve,
                                               .map = fake_map,
                                               .unmap = fake_unmap,
                                               .unreserve = fake_unreserve};

static struct fake_raw *fake_new(size_t budget_bytes) {
    struct fake_raw *f = calloc(1, sizeof(*f));
    cr_assert_not_null(f);
    f->budget_bytes = budget_bytes;
    return f;
}

/* A pool over the fake's raw ops (ctx: f, or the fake_vm it is the first member of), on a
 * device of 512 MiB (what the memory fraction and address ranges are shares of). */
static struct mem_pool *pool_new_ops(struct fake_raw *f, const char *conf,
                                     const struct mem_raw_ops *ops) {
    struct mem_conf c;
    char err[256];
    cr_assert_eq(mem_conf_parse(conf, &c, err, sizeof(err)), 0, "%s", err);
    struct mem_pool *p = NULL;
    cr_assert_eq(mem_pool_create(&p, &c, ops, f), 0);
    mem_pool_set_device_bytes(p, 512 * MIB);
    return p;
}

static struct mem_pool *pool_new(struct fake_raw *f, const char *conf) {
    return pool_new_ops(f, conf, &fake_ops);
}

static void pool_done(struct mem_pool *p, struct fake_raw *f) {
    mem_pool_destroy(p);
    cr_assert_eq(f->n_live, 0, "destroy left raw segments behind");
    cr_assert_eq(f->in_use_bytes, 0);
    free(f);
}

static void *xalloc(struct mem_pool *p, size_t bytes) {
    void *ptr = NULL;
    cr_assert_eq(mem_pool_alloc(p, bytes, &ptr), 0, "alloc of %zu failed", bytes);
    cr_assert_not_null(ptr);
    return ptr;
}

static struct mem_stats stats_of(const struct mem_pool *p) {
    struct mem_stats s;
    mem_pool_stats(p, &s);
    return s;
}

static void check_ok(const struct mem_pool *p) {
    char err[256] = "";
    cr_assert_eq(mem_pool_check(p, err, sizeof(err)), 0, "%s", err);
}

/* ---- rounding and pool selection ---- */

Test(memory, round_to_512) {
    cr_assert_eq(mem_pool_round(0), 512);
    cr_assert_eq(mem_pool_round(1), 512);
    cr_assert_eq(mem_pool_round(512), 512);
    cr_assert_eq(mem_pool_round(513), 1024);
    cr_assert_eq(mem_pool_round(1000), 1024);
    cr_assert_eq(mem_pool_round(MIB + 1), MIB + 512);
}

Test(memory, zero_bytes_is_einval) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, "");
    void *ptr = (void *)1;
    cr_assert_eq(mem_pool_alloc(p, 0, &ptr), -EINVAL);
    cr_assert_eq(f->n_alloc, 0);
    pool_done(p, f);
}

Test(memory, small_request_gets_2mib_segment) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, NULL);
    xalloc(p, 1000);
    struct mem_stats s = stats_of(p);
    cr_assert_eq(f->n_alloc, 1);
    cr_assert_eq(f->live[0].bytes, 2 * MIB);
    cr_assert_eq(s.reserved_bytes, 2 * MIB);
    cr_assert_eq(s.allocated_bytes, 1024);
    cr_assert_eq(s.requested_bytes, 1000);
    cr_assert_eq(s.total_free_bytes, 2 * MIB - 1024);
    cr_assert_eq(s.largest_free_bytes, 2 * MIB - 1024);
    cr_assert_eq(s.active_blocks, 1);
    cr_assert_eq(s.free_blocks, 1);
    cr_assert_eq(s.segments, 1);
    cr_assert_float_eq(s.frag, 0.0, 1e-12);
    cr_assert_eq(s.n_raw_alloc, 1);
    cr_assert_eq(s.n_cache_hits, 0);
    /* Exactly 1 MiB is still small: it fits the same 2 MiB segment's remainder. */
    xalloc(p, MIB);
    cr_assert_eq(f->n_alloc, 1);
    cr_assert_eq(stats_of(p).n_cache_hits, 1);
    pool_done(p, f);
}

/* Request -> expected raw segment size, per PyTorch's get_allocation_size. */
static const size_t large_cases[][2] = {
    {MIB + 1, 20 * MIB},        {10 * MIB - 512, 20 * MIB}, {10 * MIB, 10 * MIB},
    {12 * MIB, 12 * MIB},       {13 * MIB + 1, 14 * MIB},   {21 * MIB, 22 * MIB},
    {64 * MIB - 100, 64 * MIB},
};

Test(memory, large_request_segment_sizes) {
    for (size_t i = 0; i < sizeof(large_cases) / sizeof(large_cases[0]); i++) {
        struct fake_raw *f = fake_new(SIZE_MAX);
        struct mem_pool *p = pool_new(f, "");
        xalloc(p, large_cases[i][0]);
        cr_assert_eq(f->n_alloc, 1);
        cr_assert_eq(f->live[0].bytes, large_cases[i][1], "request %zu", large_cases[i][0]);
        check_ok(p);
        pool_done(p, f);
    }
}

Test(memory, large_split_rules) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, "");
    /* 1 MiB + 512 out of 20 MiB: remainder 19 MiB - 512 > 1 MiB, so it splits. */
    xalloc(p, MIB + 1);
    struct mem_stats s = stats_of(p);
    cr_assert_eq(s.allocated_bytes, MIB + 512);
    cr_assert_eq(s.free_blocks, 1);
    cr_assert_eq(s.largest_free_bytes, 19 * MIB - 512);
    /* 21 MiB + 512 (too big for that tail) in a 22 MiB segment: remainder 1 MiB - 512 is not
     * > 1 MiB: no split, and the whole block counts as allocated. */
    xalloc(p, 21 * MIB + 1);
    s = stats_of(p);
    cr_assert_eq(s.allocated_bytes, MIB + 512 + 22 * MIB);
    cr_assert_eq(s.requested_bytes, MIB + 1 + 21 * MIB + 1);
    cr_assert_eq(s.free_blocks, 1);
    cr_assert_eq(s.reserved_bytes, 42 * MIB);
    pool_done(p, f);
}

/* ---- split, coalesce, fragmentation ---- */

Test(memory, split_coalesce_and_frag) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, "");
    char *a = xalloc(p, 512 * KIB), *b = xalloc(p, 256 * KIB), *c = xalloc(p, 256 * KIB);
    cr_assert_eq(f->n_alloc, 1);
    cr_assert_eq(b, a + 512 * KIB);
    cr_assert_eq(c, a + 768 * KIB);
    /* Free the middle: holes of 256 KiB and the 1 MiB tail; 1 - 1024/1280 = 0.2. */
    cr_assert_eq(mem_pool_free(p, b), 0);
    struct mem_stats s = stats_of(p);
    cr_assert_eq(s.free_blocks, 2);
    cr_assert_eq(s.total_free_bytes, 1280 * KIB);
    cr_assert_eq(s.largest_free_bytes, MIB);
    cr_assert_float_eq(s.frag, 0.2, 1e-12);
    cr_assert_eq(s.active_blocks, 2);
    check_ok(p);
    /* Freeing c merges hole + c + tail into one 1.5 MiB block. */
    cr_assert_eq(mem_pool_free(p, c), 0);
    s = stats_of(p);
    cr_assert_eq(s.free_blocks, 1);
    cr_assert_eq(s.largest_free_bytes, 1536 * KIB);
    cr_assert_float_eq(s.frag, 0.0, 1e-12);
    cr_assert_eq(mem_pool_free(p, a), 0);
    s = stats_of(p);
    cr_assert_eq(s.free_blocks, 1);
    cr_assert_eq(s.largest_free_bytes, 2 * MIB);
    cr_assert_eq(s.segments, 1, "a free segment stays cached");
    cr_assert_eq(s.n_raw_free, 0);
    cr_assert_eq(s.n_alloc, 3);
    cr_assert_eq(s.n_free, 3);
    cr_assert_eq(s.peak_allocated_bytes, MIB);
    check_ok(p);
    pool_done(p, f);
}

Test(memory, best_fit_picks_smallest_hole) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, "");
    xalloc(p, 64 * KIB);
    char *h1 = xalloc(p, 128 * KIB);
    xalloc(p, 64 * KIB);
    char *h2 = xalloc(p, 32 * KIB);
    xalloc(p, 64 * KIB);
    char *h3 = xalloc(p, 256 * KIB);
    xalloc(p, 64 * KIB);
    mem_pool_free(p, h1);
    mem_pool_free(p, h2);
    mem_pool_free(p, h3);
    cr_assert_eq(stats_of(p).free_blocks, 4); /* three holes + tail */
    cr_assert_eq(xalloc(p, 30 * KIB), h2);
    cr_assert_eq(xalloc(p, 100 * KIB), h1);
    cr_assert_eq(xalloc(p, 200 * KIB), h3);
    cr_assert_eq(f->n_alloc, 1);
    cr_assert_eq(stats_of(p).n_cache_hits, 9);
    check_ok(p);
    pool_done(p, f);
}

Test(memory, best_fit_tie_takes_lowest_address) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, "");
    xalloc(p, 64 * KIB);
    char *g1 = xalloc(p, 64 * KIB);
    xalloc(p, 64 * KIB);
    char *g2 = xalloc(p, 64 * KIB);
    xalloc(p, 64 * KIB);
    mem_pool_free(p, g2);
    mem_pool_free(p, g1);
    cr_assert_eq(xalloc(p, 64 * KIB), g1);
    cr_assert_eq(xalloc(p, 64 * KIB), g2);
    pool_done(p, f);
}

/* ---- max_split_size ---- */

Test(memory, max_split_small_request_avoids_oversize_block) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, "max_split_size_mb:40");
    void *big = xalloc(p, 50 * MIB);
    mem_pool_free(p, big);
    /* 1.5 MiB < 40 MiB may not use the free 50 MiB block: a new 20 MiB segment. */
    xalloc(p, 1536 * KIB);
    cr_assert_eq(f->n_alloc, 2);
    cr_assert_eq(f->live[1].bytes, 20 * MIB);
    /* 45 MiB >= 40 MiB may use it (50 < 45 + 20) and does not split it. */
    cr_assert_eq(xalloc(p, 45 * MIB), big);
    struct mem_stats s = stats_of(p);
    cr_assert_eq(f->n_alloc, 2);
    cr_assert_eq(s.allocated_bytes, 50 * MIB + 1536 * KIB);
    cr_assert_eq(s.free_blocks, 1); /* only the 20 MiB segment's tail */
    check_ok(p);
    pool_done(p, f);
}

Test(memory, max_split_oversize_waste_limit) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, "max_split_size_mb:40");
    void *big = xalloc(p, 64 * MIB);
    mem_pool_free(p, big);
    /* 42 MiB: 64 >= 42 + 20, too wasteful: a fresh 42 MiB segment. */
    void *q = xalloc(p, 42 * MIB);
    cr_assert_neq(q, big);
    cr_assert_eq(f->n_alloc, 2);
    cr_assert_eq(f->live[1].bytes, 42 * MIB);
    /* 46 MiB: 64 < 66, takes the whole 64 MiB block without splitting. */
    cr_assert_eq(xalloc(p, 46 * MIB), big);
    struct mem_stats s = stats_of(p);
    cr_assert_eq(s.allocated_bytes, 106 * MIB);
    cr_assert_eq(s.free_blocks, 0);
    cr_assert_eq(s.n_cache_hits, 1);
    pool_done(p, f);
}

Test(memory, without_max_split_large_blocks_split) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, "");
    void *big = xalloc(p, 64 * MIB);
    mem_pool_free(p, big);
    cr_assert_eq(xalloc(p, 46 * MIB), big);
    struct mem_stats s = stats_of(p);
    cr_assert_eq(s.allocated_bytes, 46 * MIB);
    cr_assert_eq(s.largest_free_bytes, 18 * MIB);
    cr_assert_eq(f->n_alloc, 1);
    pool_done(p, f);
}

/* ---- trim ---- */

/* What the pool offered to discard, in order. */
static struct {
    char *ptr[8];
    size_t bytes[8];
    unsigned n;
} trimmed;

static void fake_discard(void *ctx, void *ptr, size_t bytes) {
    (void)ctx;
    cr_assert_lt(trimmed.n, 8);
    trimmed.ptr[trimmed.n] = ptr;
    trimmed.bytes[trimmed.n++] = bytes;
}

static const struct mem_raw_ops fake_trim_ops = {
    .alloc = fake_alloc, .free = fake_free, .discard = fake_discard};

/* Every free block of 64 KiB or more is offered whole, none that is live or smaller; the
 * pool's numbers do not move, and the blocks are used again from the cache. */
Test(memory, trim_offers_the_free_blocks_and_keeps_them_cached) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new_ops(f, "", &fake_trim_ops);
    memset(&trimmed, 0, sizeof(trimmed));
    void *live = xalloc(p, 4 * MIB);   /* a 20 MiB segment: 16 MiB free after it */
    void *gone = xalloc(p, 24 * MIB);  /* its own 24 MiB segment, freed below */
    void *tiny = xalloc(p, 4 * KIB);   /* a 2 MiB small segment */
    void *tiny2 = xalloc(p, 32 * KIB); /* beside it; freed: a 32 KiB block, too small */
    void *tiny3 = xalloc(p, 4 * KIB);  /* holds tiny2's block apart from the free tail */
    mem_pool_free(p, gone);
    mem_pool_free(p, tiny2);
    struct mem_stats before = stats_of(p);
    uint64_t offered = mem_pool_trim(p);
    size_t small_tail = 2 * MIB - 40 * KIB;
    cr_assert_eq(offered, 16 * MIB + 24 * MIB + small_tail, "%llu", (unsigned long long)offered);
    cr_assert_eq(trimmed.n, 3, "the three large enough free blocks, nothing live: %u", trimmed.n);
    bool saw_gone = false;
    for (unsigned k = 0; k < trimmed.n; k++) {
        saw_gone = saw_gone || (trimmed.ptr[k] == gone && trimmed.bytes[k] == 24 * MIB);
        cr_assert(trimmed.ptr[k] != live && trimmed.ptr[k] != tiny && trimmed.ptr[k] != tiny3);
        cr_assert_neq(trimmed.bytes[k], 32 * KIB, "a block under MEM_TRIM_MIN is not offered");
    }
    cr_assert(saw_gone);
    struct mem_stats after = stats_of(p);
    cr_assert_eq(after.reserved_bytes, before.reserved_bytes);
    cr_assert_eq(after.allocated_bytes, before.allocated_bytes);
    cr_assert_eq(after.free_blocks, before.free_blocks);
    cr_assert_eq(after.largest_free_bytes, before.largest_free_bytes);
    cr_assert_eq(after.n_raw_free, before.n_raw_free, "trimming releases no segment");
    check_ok(p);
    cr_assert_eq(xalloc(p, 24 * MIB), gone, "a trimmed block is used again from the cache");
    cr_assert_eq(stats_of(p).n_raw_alloc, before.n_raw_alloc);
    pool_done(p, f);
}

/* Without discard in the raw ops, trim offers nothing. */
Test(memory, trim_without_discard_does_nothing) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, "");
    mem_pool_free(p, xalloc(p, 12 * MIB));
    cr_assert_eq(mem_pool_trim(p), 0);
    cr_assert_eq(stats_of(p).reserved_bytes, 12 * MIB);
    pool_done(p, f);
}

/* ---- empty_cache and OOM ---- */

Test(memory, empty_cache_releases_only_free_segments) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, "");
    xalloc(p, 4 * KIB);              /* 2 MiB small segment, stays live */
    void *m = xalloc(p, 1536 * KIB); /* 20 MiB segment */
    void *l = xalloc(p, 24 * MIB);   /* 24 MiB segment */
    void *l2 = xalloc(p, 2 * MIB);   /* 20 MiB segment shared with m: 18.5 free */
    cr_assert_eq(stats_of(p).reserved_bytes, 46 * MIB);
    mem_pool_free(p, m);
    mem_pool_free(p, l);
    (void)l2;
    cr_assert_eq(mem_pool_empty_cache(p), 24 * MIB); /* the 20 MiB one still holds l2 */
    mem_pool_free(p, l2);
    cr_assert_eq(mem_pool_empty_cache(p), 20 * MIB);
    cr_assert_eq(mem_pool_empty_cache(p), 0);
    struct mem_stats s = stats_of(p);
    cr_assert_eq(s.reserved_bytes, 2 * MIB);
    cr_assert_eq(s.segments, 1);
    cr_assert_eq(s.n_raw_free, 2);
    cr_assert_eq(s.peak_reserved_bytes, 46 * MIB);
    cr_assert_eq(f->in_use_bytes, 2 * MIB);
    check_ok(p);
    pool_done(p, f);
}

Test(memory, oom_retry_after_freeing_cache) {
    struct fake_raw *f = fake_new(26 * MIB);
    struct mem_pool *p = pool_new(f, "");
    mem_pool_free(p, xalloc(p, 1536 * KIB)); /* cached 20 MiB segment */
    xalloc(p, 1000);                         /* 2 MiB: budget now full */
    /* 24 MiB fails the budget (46 > 26), the cached 20 MiB is dropped, the retry fits. */
    xalloc(p, 24 * MIB);
    struct mem_stats s = stats_of(p);
    cr_assert_eq(s.n_oom_retries, 1);
    cr_assert_eq(s.n_oom, 0);
    cr_assert_eq(s.n_raw_free, 1);
    cr_assert_eq(s.reserved_bytes, 26 * MIB);
    cr_assert_eq(f->n_fail, 1);
    check_ok(p);
    pool_done(p, f);
}

Test(memory, oom_retry_on_injected_failure) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, "");
    mem_pool_free(p, xalloc(p, 12 * MIB));
    f->fail_next = 1;
    xalloc(p, 4 * KIB);
    struct mem_stats s = stats_of(p);
    cr_assert_eq(s.n_oom_retries, 1);
    cr_assert_eq(s.n_raw_free, 1);
    cr_assert_eq(s.reserved_bytes, 2 * MIB);
    pool_done(p, f);
}

Test(memory, final_oom_leaves_stats_unchanged) {
    struct fake_raw *f = fake_new(2 * MIB);
    struct mem_pool *p = pool_new(f, "");
    xalloc(p, 100);
    struct mem_stats before = stats_of(p);
    void *ptr = NULL;
    cr_assert_eq(mem_pool_alloc(p, 1536 * KIB, &ptr), -ENOMEM);
    struct mem_stats after = stats_of(p);
    cr_assert_eq(after.n_oom_retries, 1);
    cr_assert_eq(after.n_oom, 1);
    cr_assert_eq(f->n_fail, 2);
    after.n_oom_retries = before.n_oom_retries;
    after.n_oom = before.n_oom;
    cr_assert_eq(memcmp(&before, &after, sizeof(before)), 0);
    check_ok(p);
    pool_done(p, f);
}

/* A raw allocator that fails for another reason than a full device (a runtime error): its own
 * error comes back as it is, with no retry and no OOM counted, and nothing changes. */
Test(memory, raw_error_other_than_oom_passes_through) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, "");
    mem_pool_free(p, xalloc(p, 12 * MIB)); /* a cached segment a retry would drop */
    struct mem_stats before = stats_of(p);
    f->fail_next = 1;
    f->fail_rc = -EIO;
    void *ptr = NULL;
    cr_assert_eq(mem_pool_alloc(p, 30 * MIB, &ptr), -EIO);
    cr_assert_null(ptr);
    struct mem_stats after = stats_of(p);
    cr_assert_eq(f->n_fail, 1, "tried %u times", f->n_fail);
    cr_assert_eq(memcmp(&before, &after, sizeof(before)), 0, "stats moved (oom %llu, retries %llu)",
                 (unsigned long long)after.n_oom, (unsigned long long)after.n_oom_retries);
    xalloc(p, 30 * MIB); /* the next one works */
    check_ok(p);
    pool_done(p, f);
}

Test(memory, free_bad_pointer) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, "");
    char *a = xalloc(p, 4 * KIB);
    int on_stack;
    struct mem_stats before = stats_of(p);
    cr_assert_eq(mem_pool_free(p, NULL), 0);
    cr_assert_eq(mem_pool_free(p, a + 512), -EINVAL);
    cr_assert_eq(mem_pool_free(p, a + 4 * KIB), -EINVAL); /* the free tail's start */
    cr_assert_eq(mem_pool_free(p, &on_stack), -EINVAL);
    struct mem_stats after = stats_of(p);
    cr_assert_eq(memcmp(&before, &after, sizeof(before)), 0);
    cr_assert_eq(mem_pool_free(p, a), 0);
    cr_assert_eq(mem_pool_free(p, a), -EINVAL, "double free");
    cr_assert_eq(stats_of(p).n_free, 1);
    pool_done(p, f);
}

Test(memory, destroy_with_live_blocks) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, "");
    for (int i = 0; i < 10; i++)
        xalloc(p, (size_t)(i + 1) * 300 * KIB);
    pool_done(p, f); /* asserts every raw segment came back */
}

/* ---- layout ---- */

Test(memory, layout_contents) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, "");
    void *a = xalloc(p, 512 * KIB);
    xalloc(p, 256 * KIB);
    mem_pool_free(p, a);
    xalloc(p, 1536 * KIB);
    xalloc(p, 24 * MIB);
    static struct mem_layout lay;
    mem_pool_layout(p, &lay);
    cr_assert_eq(lay.n_segments, 3);
    cr_assert_eq(lay.n_listed, 3);
    cr_assert_eq(lay.seg[0].size_bytes, 24 * MIB);
    cr_assert_eq(lay.seg[1].size_bytes, 20 * MIB);
    cr_assert_eq(lay.seg[2].size_bytes, 2 * MIB);
    cr_assert(!lay.seg[0].small_pool && !lay.seg[1].small_pool && lay.seg[2].small_pool);
    cr_assert_eq(lay.seg[0].n_blocks, 1);
    cr_assert(lay.seg[0].blocks[0].allocated);
    cr_assert_eq(lay.seg[1].n_blocks, 2);
    cr_assert_eq(lay.seg[1].blocks[0].offset_bytes, 0);
    cr_assert_eq(lay.seg[1].blocks[0].size_bytes, 1536 * KIB);
    cr_assert(lay.seg[1].blocks[0].allocated);
    cr_assert_eq(lay.seg[1].blocks[1].offset_bytes, 1536 * KIB);
    cr_assert_eq(lay.seg[1].blocks[1].size_bytes, 20 * MIB - 1536 * KIB);
    cr_assert(!lay.seg[1].blocks[1].allocated);
    const struct mem_block_info want[3] = {
        {0, 512 * KIB, false}, {512 * KIB, 256 * KIB, true}, {768 * KIB, 1280 * KIB, false}};
    cr_assert_eq(lay.seg[2].n_blocks, 3);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(lay.seg[2].blocks[i].offset_bytes, want[i].offset_bytes);
        cr_assert_eq(lay.seg[2].blocks[i].size_bytes, want[i].size_bytes);
        cr_assert_eq(lay.seg[2].blocks[i].allocated, want[i].allocated);
    }
    cr_assert(!lay.seg[2].truncated);
    pool_done(p, f);
}

Test(memory, layout_caps) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, "");
    for (int i = 0; i < 60; i++)
        xalloc(p, 512); /* 61 blocks in one small segment */
    for (int i = 0; i < 33; i++)
        xalloc(p, 10 * MIB);
    xalloc(p, 14 * MIB);
    static struct mem_layout lay;
    mem_pool_layout(p, &lay);
    cr_assert_eq(lay.n_segments, 35);
    cr_assert_eq(lay.n_listed, MEM_LAYOUT_MAX_SEGMENTS);
    cr_assert_eq(lay.seg[0].size_bytes, 14 * MIB);
    for (int i = 1; i < MEM_LAYOUT_MAX_SEGMENTS; i++)
        cr_assert_eq(lay.seg[i].size_bytes, 10 * MIB);
    pool_done(p, f);
    /* A segment with too many blocks lists the first 48. */
    f = fake_new(SIZE_MAX);
    p = pool_new(f, "");
    for (int i = 0; i < 60; i++)
        xalloc(p, 512);
    mem_pool_layout(p, &lay);
    cr_assert_eq(lay.n_listed, 1);
    cr_assert(lay.seg[0].truncated);
    cr_assert_eq(lay.seg[0].n_blocks, MEM_LAYOUT_MAX_BLOCKS);
    cr_assert_eq(lay.seg[0].blocks[47].offset_bytes, 47 * 512);
    cr_assert(lay.seg[0].blocks[47].allocated);
    pool_done(p, f);
}

/* ---- stress ---- */

struct stress_live {
    char *ptr;
    size_t bytes;
};

static uint64_t stress_rng(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static size_t stress_size(uint64_t *rng) {
    uint64_t r = stress_rng(rng);
    switch (r % 20) {
    case 0:
        return 10 * MIB + (size_t)(r >> 8) % (30 * MIB); /* own segment */
    case 1:
    case 2:
    case 3:
    case 4:
        return MIB + 1 + (size_t)(r >> 8) % (9 * MIB); /* shared 20 MiB segments */
    default:
        return 1 + (size_t)(r >> 8) % (128 * KIB);
    }
}

static int stress_cmp(const void *a, const void *b) {
    const struct stress_live *x = a, *y = b;
    return x->ptr < y->ptr ? -1 : x->ptr > y->ptr;
}

/* Whether [ptr, ptr + bytes) lies inside one of the fake's reserved ranges (none: NULL). */
static bool stress_in_range(const struct fake_vm *v, const char *ptr, size_t bytes) {
    for (size_t i = 0; v && i < v->n_ranges; i++)
        if (ptr >= v->range[i].base && ptr + bytes <= v->range[i].base + v->range[i].bytes)
            return true;
    return false;
}

/* Invariants visible from outside, plus the pool's own walk. v: the fake's ranges, when the
 * pool has expandable segments. */
static void stress_check(const struct mem_pool *p, const struct fake_raw *f,
                         const struct fake_vm *v, struct stress_live *live, size_t n) {
    struct mem_stats s = stats_of(p);
    uint64_t requested = 0;
    cr_assert_eq(s.allocated_bytes + s.total_free_bytes, s.reserved_bytes);
    cr_assert_eq(s.reserved_bytes, f->in_use_bytes);
    cr_assert_eq(s.segments, f->n_live + (v ? v->n_ranges : 0));
    cr_assert_eq(s.active_blocks, n);
    qsort(live, n, sizeof(*live), stress_cmp);
    for (size_t i = 0; i < n; i++) {
        size_t seg = 0;
        requested += live[i].bytes;
        if (i + 1 < n)
            cr_assert_leq(live[i].ptr + mem_pool_round(live[i].bytes), live[i + 1].ptr,
                          "live blocks overlap");
        while (seg < f->n_live &&
               !(live[i].ptr >= f->live[seg].ptr && live[i].ptr + mem_pool_round(live[i].bytes) <=
                                                        f->live[seg].ptr + f->live[seg].bytes))
            seg++;
        cr_assert(seg < f->n_live || stress_in_range(v, live[i].ptr, mem_pool_round(live[i].bytes)),
                  "block outside every segment");
    }
    cr_assert_eq(s.requested_bytes, requested);
    cr_assert_geq(s.allocated_bytes, requested);
    check_ok(p);
}

static void stress_run(const char *conf, uint64_t seed, bool vm) {
    enum { OPS = 6000, MAXLIVE = 200 };
    struct fake_vm *v = vm ? calloc(1, sizeof(*v)) : NULL;
    struct fake_raw *f = v ? &v->raw : fake_new(320 * MIB);
    f->budget_bytes = 320 * MIB;
    struct mem_pool *p = vm ? pool_new_ops(f, conf, &fake_vm_ops) : pool_new(f, conf);
    struct stress_live *live = calloc(MAXLIVE, sizeof(*live));
    size_t n = 0;
    uint64_t rng = seed, n_ok = 0, n_oom = 0;
    for (int op = 0; op < OPS; op++) {
        uint64_t r = stress_rng(&rng);
        if (r % 97 == 0) {
            mem_pool_empty_cache(p);
        } else if (n > 0 && (n == MAXLIVE || r % 2 == 0)) {
            size_t i = (size_t)(r >> 16) % n;
            cr_assert_eq(mem_pool_free(p, live[i].ptr), 0);
            live[i] = live[--n];
        } else {
            size_t bytes = stress_size(&rng);
            void *ptr;
            int rc = mem_pool_alloc(p, bytes, &ptr);
            cr_assert(rc == 0 || rc == -ENOMEM);
            if (rc == 0)
                live[n++] = (struct stress_live){ptr, bytes};
            n_ok += rc == 0;
            n_oom += rc != 0;
        }
        stress_check(p, f, v, live, n);
    }
    struct mem_stats s = stats_of(p);
    cr_assert_eq(s.n_alloc, n_ok);
    cr_assert_eq(s.n_oom, n_oom);
    cr_assert_gt(s.n_cache_hits, 0);
    cr_assert_geq(s.n_oom_retries, s.n_oom); /* every final OOM came after a retry */
    free(live);
    if (v)
        vm_done(p, v);
    else
        pool_done(p, f);
}

Test(memory, stress_default) {
    stress_run("", 0x9E3779B97F4A7C15ull, false);
}

Test(memory, stress_max_split) {
    stress_run("max_split_size_mb:24", 12345, false);
}

Test(memory, stress_expandable) {
    stress_run("expandable_segments:True", 777, true);
}

Test(memory, stress_gc_and_limit) {
    stress_run("garbage_collection_threshold:0.6,per_process_memory_fraction:0.5", 4242, false);
}

/* ---- the settings against a dense VPOC pass ----
 * A dense pass on the default data (60 sessions of 1380 bars, 137 levels) takes one volume
 * matrix a launch, 60 x its bars x 137 x 8 bytes, and gives it back before the next, beside
 * the set's own buffers (0.7 MiB, in the small pool). The dashboard's + and - move the chunk
 * through 125, 250, 500, 1000 bars and whole sessions. */

#define DP_ROW   ((size_t)60 * 137 * 8) /* bytes a bar of every session adds to a matrix */
#define DP_BARS  1380
#define DP_WHOLE 0

struct dp_pass {
    struct mem_stats peak, after; /* at the largest matrix, and once the pass is over */
};

static struct dp_pass dp_run(struct mem_pool *p, size_t chunk) {
    struct dp_pass r = {0};
    size_t step = chunk ? chunk : DP_BARS;
    for (size_t a = 0; a < DP_BARS; a += step) {
        size_t n = DP_BARS - a < step ? DP_BARS - a : step;
        void *m = xalloc(p, n * DP_ROW);
        struct mem_stats st = stats_of(p);
        if (st.allocated_bytes > r.peak.allocated_bytes)
            r.peak = st;
        cr_assert_eq(mem_pool_free(p, m), 0);
    }
    r.after = stats_of(p);
    check_ok(p);
    return r;
}

/* The set's buffers, then passes at each chunk of the list (0 ends it). */
static struct dp_pass dp_steps(struct mem_pool *p, const size_t *chunks, size_t n) {
    struct dp_pass r = {0};
    xalloc(p, 700 * KIB);
    for (size_t i = 0; i < n; i++)
        r = dp_run(p, chunks[i]);
    return r;
}

static const size_t dp_up[] = {250, 500, 1000}; /* + + from the dashboard's 250 */
static const size_t dp_up_down[] = {250, 500, 1000, 500, 250, 125}; /* then - - - */

/* Fixed segments: one a matrix size (16, 32 and 64 MiB, 2 MiB rounded), all cached, the
 * largest free block the 64 MiB one: 43% fragmented. expandable_segments: the large pool's one
 * segment grows in 20 MiB pages as the matrices grow (20, 40, 80 MiB) and holds them all:
 * reserved 82 MiB in 2 segments, one free block, no fragmentation. Down the ladder neither
 * grows; emptying the cache unmaps the free pages and gives the range back. */
Test(memory, expandable_segments_grow_one_segment) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, "");
    struct dp_pass fixed = dp_steps(p, dp_up, 3);
    cr_assert_eq(fixed.after.reserved_bytes, (2 + 16 + 32 + 64) * MIB);
    cr_assert_eq(fixed.after.segments, 4);
    cr_assert_eq(fixed.after.largest_free_bytes, 64 * MIB);
    cr_assert_gt(fixed.after.frag, 0.4);
    cr_assert_eq(fixed.peak.reserved_bytes, (2 + 16 + 32 + 64) * MIB);
    pool_done(p, f);

    struct fake_vm *v = calloc(1, sizeof(*v));
    v->raw.budget_bytes = SIZE_MAX;
    p = pool_new_ops(&v->raw, "expandable_segments:True", &fake_vm_ops);
    cr_assert(mem_pool_expandable(p));
    struct dp_pass grow = dp_steps(p, dp_up, 3);
    cr_assert_eq(grow.after.reserved_bytes, (2 + 80) * MIB);
    cr_assert_eq(grow.after.segments, 2);
    cr_assert_eq(grow.after.largest_free_bytes, 80 * MIB);
    cr_assert_lt(grow.after.frag, 0.05);
    cr_assert_eq(v->n_reserve, 2); /* a range a pool, never another */
    for (size_t i = 3; i < 6; i++)
        grow = dp_run(p, dp_up_down[i]);
    cr_assert_eq(grow.after.reserved_bytes, (2 + 80) * MIB, "nothing grows down the ladder");
    cr_assert_eq(mem_pool_empty_cache(p), 80 * MIB); /* the small pool's page holds the set */
    grow.after = stats_of(p);
    cr_assert_eq(grow.after.reserved_bytes, 2 * MIB);
    cr_assert_eq(grow.after.segments, 1);
    check_ok(p);
    grow = dp_run(p, 1000); /* mapped again as needed: 4 pages */
    cr_assert_eq(grow.after.reserved_bytes, (2 + 80) * MIB);
    vm_done(p, v);
}

/* max_split_size_mb:20 keeps the matrices' blocks whole: the 1000-bar pass's last launch (24
 * MiB) and the steps down cannot carve 24, 31 or 16 MiB out of the cached 64 MiB block (an
 * oversize block serves only requests within 20 MiB of it), so each takes a segment of its
 * own (64, 24, 32, 16 MiB: 138 MiB in 5 segments) where the default splits the 64 MiB block
 * and reserves nothing more (66 MiB). */
Test(memory, max_split_keeps_matrix_blocks_whole) {
    static const size_t down[] = {1000, 500, 250};
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, "");
    struct dp_pass split = dp_steps(p, down, 3);
    cr_assert_eq(split.after.reserved_bytes, (2 + 64) * MIB);
    cr_assert_eq(split.after.segments, 2);
    cr_assert_gt(split.peak.frag, 0.0); /* the 64 MiB block cut: its rest is free */
    pool_done(p, f);
    f = fake_new(SIZE_MAX);
    p = pool_new(f, "max_split_size_mb:20");
    struct dp_pass whole = dp_steps(p, down, 3);
    cr_assert_eq(whole.after.reserved_bytes, (2 + 64 + 24 + 32 + 16) * MIB, "%llu MiB",
                 (unsigned long long)(whole.after.reserved_bytes / MIB));
    cr_assert_eq(whole.after.segments, 5);
    cr_assert_eq(whole.after.largest_free_bytes, 64 * MIB);
    pool_done(p, f);
}

/* garbage_collection_threshold:0.5 with per_process_memory_fraction:0.25 of a 512 MiB device
 * (a 128 MiB limit, collection past 64 MiB): after + + the cache holds 16, 32 and 64 MiB
 * segments (114 MiB with the set's); a whole-session pass (88 MiB) misses it, and collection
 * releases the segments at least as old as the average: the 16 MiB one (unused since the
 * 250-bar pass), then the 64 MiB one, keeping the 32 MiB one the last launch used: 122 MiB
 * reserved. The threshold alone does nothing (as in PyTorch: no limit, no collection): 202
 * MiB. The fraction alone: the pass meets the limit and the whole cache goes first: 90 MiB. */
Test(memory, gc_threshold_releases_the_oldest_cached_segments) {
    static const size_t up_whole[] = {250, 500, 1000, DP_WHOLE};
    static const struct {
        const char *conf;
        size_t reserved_mib;
        uint64_t gc_frees, oom_retries;
    } cases[] = {
        {"garbage_collection_threshold:0.5,per_process_memory_fraction:0.25", 2 + 32 + 88, 2, 0},
        {"garbage_collection_threshold:0.5", 2 + 16 + 32 + 64 + 88, 0, 0},
        {"per_process_memory_fraction:0.25", 2 + 88, 0, 1},
    };
    for (size_t i = 0; i < 3; i++) {
        struct fake_raw *f = fake_new(SIZE_MAX);
        struct mem_pool *p = pool_new(f, cases[i].conf);
        struct dp_pass r = dp_steps(p, up_whole, 4);
        cr_assert_eq(r.after.reserved_bytes, cases[i].reserved_mib * MIB, "%s: %llu MiB reserved",
                     cases[i].conf, (unsigned long long)(r.after.reserved_bytes / MIB));
        cr_assert_eq(r.after.n_gc_frees, cases[i].gc_frees, "%s", cases[i].conf);
        cr_assert_eq(r.after.n_oom_retries, cases[i].oom_retries, "%s", cases[i].conf);
        cr_assert_eq(r.after.n_oom, 0);
        cr_assert_eq(r.after.limit_bytes, strstr(cases[i].conf, "fraction") ? 128 * MIB : 0);
        pool_done(p, f);
    }
}

/* The limit is a hard one: a matrix that cannot fit under it even with the cache emptied is
 * refused as out of memory, the raw allocator never asked. */
Test(memory, memory_fraction_refuses_past_the_limit) {
    struct fake_raw *f = fake_new(SIZE_MAX);
    struct mem_pool *p = pool_new(f, "per_process_memory_fraction:0.125"); /* 64 MiB */
    void *ptr = NULL;
    cr_assert_eq(mem_pool_alloc(p, 63 * MIB, &ptr), 0);
    cr_assert_eq(mem_pool_free(p, ptr), 0);
    cr_assert_eq(mem_pool_alloc(p, 65 * MIB, &ptr), -ENOMEM);
    struct mem_stats st = stats_of(p);
    cr_assert_eq(st.n_oom, 1);
    cr_assert_eq(st.reserved_bytes, 0, "the cache was emptied for the retry");
    cr_assert_eq(f->n_fail, 0);
    pool_done(p, f);
}

/* ---- alloc-conf parsing ---- */

static struct mem_conf conf_sentinel(void) {
    struct mem_conf c;
    memset(&c, 0, sizeof(c));
    c.max_split_size_bytes = 7;
    c.gc_threshold = 0.25;
    c.expandable_segments = true;
    c.round_bytes = 3;
    return c;
}

Test(memory, conf_defaults) {
    struct mem_conf c = conf_sentinel();
    mem_conf_default(&c);
    cr_assert_eq(c.max_split_size_bytes, UINT64_MAX);
    cr_assert_float_eq(c.gc_threshold, 0.0, 1e-12);
    cr_assert(!c.expandable_segments);
    cr_assert_eq(c.round_bytes, 512);
    const char *blank[] = {NULL, "", "   ", " \t "};
    for (size_t i = 0; i < sizeof(blank) / sizeof(blank[0]); i++) {
        c = conf_sentinel();
        cr_assert_eq(mem_conf_parse(blank[i], &c, NULL, 0), 0);
        cr_assert_eq(c.max_split_size_bytes, UINT64_MAX);
        cr_assert_float_eq(c.gc_threshold, 0.0, 1e-12);
        cr_assert(!c.expandable_segments);
        cr_assert_eq(c.round_bytes, 512);
    }
}

Test(memory, conf_valid) {
    struct mem_conf c;
    char err[256] = "";
    cr_assert_eq(mem_conf_parse("max_split_size_mb:128,garbage_collection_threshold:0.8,"
                                "expandable_segments:True",
                                &c, err, sizeof(err)),
                 0, "%s", err);
    cr_assert_eq(c.max_split_size_bytes, 128ull << 20);
    cr_assert_float_eq(c.gc_threshold, 0.8, 1e-12);
    cr_assert(c.expandable_segments);
    cr_assert_eq(c.round_bytes, 512);
    cr_assert_eq(mem_conf_parse("  max_split_size_mb : 20 ,\texpandable_segments:False , ", &c, err,
                                sizeof(err)),
                 0, "%s", err);
    cr_assert_eq(c.max_split_size_bytes, 20ull << 20);
    cr_assert(!c.expandable_segments);
    cr_assert_float_eq(c.gc_threshold, 0.0, 1e-12);
    cr_assert_eq(mem_conf_parse("roundup_power2_divisions:4,pinned_use_host_register:True,"
                                "release_lock_on_cudamalloc:False,garbage_collection_threshold:"
                                "0.5",
                                &c, err, sizeof(err)),
                 0, "%s", err);
    cr_assert_float_eq(c.gc_threshold, 0.5, 1e-12);
    cr_assert_eq(c.max_split_size_bytes, UINT64_MAX);
    cr_assert_float_eq(c.memory_fraction, 0.0, 1e-12);
    cr_assert_eq(mem_conf_parse("per_process_memory_fraction:0.25", &c, err, sizeof(err)), 0, "%s",
                 err);
    cr_assert_float_eq(c.memory_fraction, 0.25, 1e-12);
    cr_assert_eq(mem_conf_parse("per_process_memory_fraction:1", &c, err, sizeof(err)), 0, "%s",
                 err);
    cr_assert_float_eq(c.memory_fraction, 1.0, 1e-12);
    cr_assert_eq(mem_conf_parse("roundup_power2_divisions:[256:1, 512:2,>:4],"
                                "max_split_size_mb:99999999999999999999",
                                &c, err, sizeof(err)),
                 0, "%s", err);
    cr_assert_eq(c.max_split_size_bytes, (UINT64_MAX >> 20) << 20, "clamped as PyTorch");
}

struct conf_bad {
    const char *in, *msg;
};

static const struct conf_bad conf_bad_cases[] = {
    {"max_split_mb:128", "alloc-conf: unknown key 'max_split_mb' (known: max_split_size_mb, "
                         "garbage_collection_threshold, per_process_memory_fraction, "
                         "expandable_segments, "
                         "roundup_power2_divisions, pinned_use_host_register, "
                         "release_lock_on_cudamalloc)"},
    {"Max_Split_Size_MB:128", "alloc-conf: unknown key 'Max_Split_Size_MB' (known:"},
    {"max_split_size_mb:abc", "alloc-conf: max_split_size_mb: 'abc' is not a positive integer"},
    {"max_split_size_mb:-5", "alloc-conf: max_split_size_mb: '-5' is not a positive integer"},
    {"max_split_size_mb:0", "alloc-conf: max_split_size_mb: '0' is not a positive integer"},
    {"max_split_size_mb:12x", "alloc-conf: max_split_size_mb: '12x' is not a positive integer"},
    {"max_split_size_mb:", "alloc-conf: max_split_size_mb: '' is not a positive integer"},
    {"max_split_size_mb:19", "alloc-conf: max_split_size_mb: '19' is too small (must be >= 20)"},
    {"garbage_collection_threshold:1.0",
     "alloc-conf: garbage_collection_threshold: '1.0' is out of range"},
    {"garbage_collection_threshold:0", "alloc-conf: garbage_collection_threshold: '0' is out of"},
    {"garbage_collection_threshold:-0.5", "alloc-conf: garbage_collection_threshold: '-0.5' is"},
    {"garbage_collection_threshold:high",
     "alloc-conf: garbage_collection_threshold: 'high' is not a number"},
    {"garbage_collection_threshold:nan", "alloc-conf: garbage_collection_threshold: 'nan' is not"},
    {"per_process_memory_fraction:0", "alloc-conf: per_process_memory_fraction: '0' is out of"},
    {"per_process_memory_fraction:1.5", "alloc-conf: per_process_memory_fraction: '1.5' is out"},
    {"per_process_memory_fraction:half",
     "alloc-conf: per_process_memory_fraction: 'half' is not a number"},
    {"expandable_segments:true", "alloc-conf: expandable_segments: 'true' is not True or False"},
    {"expandable_segments:1", "alloc-conf: expandable_segments: '1' is not True or False"},
    {"pinned_use_host_register:yes", "alloc-conf: pinned_use_host_register: 'yes' is not True"},
    {"roundup_power2_divisions:3", "alloc-conf: roundup_power2_divisions: '3' is not a power"},
    {"roundup_power2_divisions:[256:3]", "alloc-conf: roundup_power2_divisions: '[256:3]' is"},
    {"roundup_power2_divisions:[256:1", "alloc-conf: roundup_power2_divisions: '[256:1' is"},
    {"max_split_size_mb", "alloc-conf: 'max_split_size_mb' has no ':' (expected key:value)"},
    {"max_split_size_mb:64,expandable_segments", "alloc-conf: 'expandable_segments' has no ':'"},
    {":64", "alloc-conf: empty key in ':64'"},
    {"  : 64", "alloc-conf: empty key in ': 64'"},
    {",", "alloc-conf: empty entry in ','"},
    {"max_split_size_mb:64,,expandable_segments:True", "alloc-conf: empty entry in "},
    {",max_split_size_mb:64", "alloc-conf: empty entry in "},
};

Test(memory, conf_errors_leave_conf_untouched) {
    for (size_t i = 0; i < sizeof(conf_bad_cases) / sizeof(conf_bad_cases[0]); i++) {
        const struct conf_bad *k = &conf_bad_cases[i];
        struct mem_conf c = conf_sentinel(), want = conf_sentinel();
        char err[512] = "";
        cr_assert_eq(mem_conf_parse(k->in, &c, err, sizeof(err)), -EINVAL, "'%s'", k->in);
        cr_assert_eq(strncmp(err, k->msg, strlen(k->msg)), 0, "'%s': got \"%s\"", k->in, err);
        cr_assert_eq(memcmp(&c, &want, sizeof(c)), 0, "'%s' changed the conf", k->in);
    }
    /* A later bad entry must not leave the earlier good one applied. */
    struct mem_conf c = conf_sentinel(), want = conf_sentinel();
    cr_assert_eq(mem_conf_parse("max_split_size_mb:64,bogus:1", &c, NULL, 0), -EINVAL);
    cr_assert_eq(memcmp(&c, &want, sizeof(c)), 0);
}
