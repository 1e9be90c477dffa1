/* Unit tests of the dense VPOC kernel on the CPU backend: its matrix and sums on a hand-made
 * chunk, its results against the packed kernel's on the default data, and what it does to the
 * memory pool: a working set that follows the chunk size and stays in the pool's cache until
 * it is emptied. */
#include "backend/compute/compute.h"
#include "backend/data/data_synth.h"
#include "backend/memory/mem_conf.h"
#include "backend/vpoc/vpoc.h"
#include "backend/vpoc/vpoc_dense.h"
#include "backend/vpoc/vpoc_pack.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VD_DAYS 60 /* the default data: 60 synthetic days of 1380 one-minute bars */
#define VD_MIB  ((uint64_t)1 << 20)

/* The CPU backend with the pool configured by alloc (PyTorch's syntax). */
static struct compute *vd_open_conf(const char *alloc) {
    struct compute_conf conf = {.device = 0, .threads = 1};
    char err[512] = "";
    cr_assert_eq(mem_conf_parse(alloc, &conf.alloc, err, sizeof(err)), 0, "%s", err);
    struct compute *c = NULL;
    char notice[256] = "";
    cr_assert_eq(compute_open("cpu", &conf, &c, notice, sizeof(notice), err, sizeof(err)), 0,
                 "cpu backend: %s", err);
    return c;
}

static struct compute *vd_open(void) {
    return vd_open_conf("");
}

/* The training loop's default data, in VPOC form. */
struct vd_data {
    struct data_series ds;
    struct data_sessions ss;
    struct vpoc_bar *bars;
};

static void vd_data_make(struct vd_data *d) {
    struct data_synth_opts o = {.days = VD_DAYS, .seed = 42, .start_hour = 18, .tick = 0.25};
    memset(d, 0, sizeof(*d));
    data_series_init(&d->ds);
    cr_assert_eq(data_synth_generate(&o, &d->ds), 0);
    cr_assert_eq(data_sessions_split(&d->ds, 18, &d->ss), 0);
    d->bars = malloc(d->ds.n * sizeof(*d->bars));
    cr_assert_not_null(d->bars);
    vpoc_bars_from_series(d->ds.bars, d->ds.n, d->bars);
}

static void vd_data_fini(struct vd_data *d) {
    free(d->bars);
    data_sessions_fini(&d->ss);
    data_series_fini(&d->ds);
}

/* The most levels a session spans and the most bars one has, by the reference's level
 * function. */
static void vd_data_shape(const struct vd_data *d, const struct vpoc_params *p, int64_t *levels,
                          size_t *longest) {
    *levels = 0;
    *longest = 0;
    for (size_t k = 0; k < d->ss.n; k++) {
        int64_t lo, hi;
        vpoc_level_range(d->bars + d->ss.s[k].first, d->ss.s[k].n, p, &lo, &hi);
        *levels = hi - lo + 1 > *levels ? hi - lo + 1 : *levels;
        *longest = d->ss.s[k].n > *longest ? d->ss.s[k].n : *longest;
    }
}

static const struct vpoc_params vd_close = {VPOC_CLOSE, 0.25, 0.70};

/* One pass of a fresh set on c: results into res (ss.n), the pool at the pass's peak into
 * *peak and as the pass began into *before. */
static void vd_pass(struct compute *c, const struct vd_data *d, const struct vpoc_params *p,
                    size_t chunk, enum compute_vpoc_kernel kernel, struct vpoc_result *res,
                    struct mem_stats *before, struct compute_pool_peek *peak) {
    char err[512] = "";
    struct compute_vpoc_set *s = NULL;
    cr_assert_eq(
        compute_vpoc_set_create(c, d->bars, &d->ss, 0, 1, p, chunk, kernel, &s, err, sizeof(err)),
        0, "%s", err);
    mem_pool_stats(c->pool, before);
    cr_assert_eq(compute_vpoc_set_run(c, s, res, NULL, peak, err, sizeof(err)), 0, "%s", err);
    compute_vpoc_set_destroy(c, s);
}

/* A chunk of three bars of one session 4 levels wide, by hand: the matrix and its sums. */
Test(vpoc_dense, fill_and_reduce_by_hand) {
    const uint64_t words[3] = {vpoc_pack_word(1, 2, 5),  /* levels 1..3, 5 each */
                               vpoc_pack_word(0, 0, 7),  /* level 0 */
                               vpoc_pack_word(3, 0, 2)}; /* level 3 */
    int64_t m[3 * 4];
    memset(m, 0x5A, sizeof(m)); /* every element is written */
    vpoc_dense_fill(words, 3, 4, m);
    const int64_t want[3 * 4] = {0, 5, 5, 5, 7, 0, 0, 0, 0, 0, 0, 2};
    for (size_t i = 0; i < 12; i++)
        cr_assert_eq(m[i], want[i], "element %zu: %lld, want %lld", i, (long long)m[i],
                     (long long)want[i]);
    int64_t hist[4] = {100, 0, 0, 0};
    vpoc_dense_reduce(m, 3, 4, 4, hist);
    cr_assert(hist[0] == 107 && hist[1] == 5 && hist[2] == 5 && hist[3] == 7);
    vpoc_dense_reduce(m + 4, 2, 4, 1, hist); /* rows 1..2, the first column only */
    cr_assert(hist[0] == 114 && hist[1] == 5 && hist[3] == 7);
}

/* On the default data, at every rung of the dashboard's chunk ladder and past a session's
 * length, with either profile: the dense kernel's results are the packed kernel's, field for
 * field. */
Test(vpoc_dense, equals_packed_on_the_default_data) {
    struct compute *c = vd_open();
    struct vd_data d;
    vd_data_make(&d);
    static const size_t chunks[] = {125, 250, 500, 1000, 2000, 3500, 0};
    static const enum vpoc_profile_kind kinds[] = {VPOC_CLOSE, VPOC_RANGE};
    struct vpoc_result *packed = calloc(d.ss.n, sizeof(*packed));
    struct vpoc_result *dense = calloc(d.ss.n, sizeof(*dense));
    struct mem_stats before;
    struct compute_pool_peek peak;
    for (size_t pk = 0; pk < 2; pk++)
        for (size_t ci = 0; ci < sizeof(chunks) / sizeof(chunks[0]); ci++) {
            struct vpoc_params p = {kinds[pk], 0.25, 0.70};
            vd_pass(c, &d, &p, chunks[ci], COMPUTE_VPOC_PACKED, packed, &before, &peak);
            vd_pass(c, &d, &p, chunks[ci], COMPUTE_VPOC_DENSE, dense, &before, &peak);
            for (size_t k = 0; k < d.ss.n; k++)
                cr_assert(memcmp(&packed[k], &dense[k], sizeof(packed[k])) == 0,
                          "%s profile, chunk %zu, session %s: dense POC %lld total %lld, packed "
                          "POC %lld total %lld",
                          pk ? "range" : "close", chunks[ci], d.ss.s[k].label,
                          (long long)dense[k].poc_level, (long long)dense[k].total_fix,
                          (long long)packed[k].poc_level, (long long)packed[k].total_fix);
        }
    free(packed);
    free(dense);
    vd_data_fini(&d);
    compute_close(c);
}

/* What one pass adds to a fresh pool at its high-water mark, over the pool as the pass began
 * (the set's own buffers): requested bytes and reserved bytes. */
struct vd_added {
    uint64_t requested_bytes, reserved_bytes;
};

static struct vd_added vd_added_at(const struct vd_data *d, size_t chunk,
                                   enum compute_vpoc_kernel kernel) {
    struct compute *c = vd_open();
    struct vpoc_result *res = calloc(d->ss.n, sizeof(*res));
    struct mem_stats before;
    struct compute_pool_peek peak;
    vd_pass(c, d, &vd_close, chunk, kernel, res, &before, &peak);
    free(res);
    compute_close(c);
    return (struct vd_added){peak.stats.requested_bytes - before.requested_bytes,
                             peak.stats.reserved_bytes - before.reserved_bytes};
}

/* The dense pass's working set is its largest launch's matrix: every session's chunk of bars
 * x the widest session's levels x 8 bytes, so it follows the chunk: 4x from 250 bars to 1000
 * (two presses of + in the dashboard), in what the pass asks for and in what the pool
 * reserves for it, and more again for whole sessions. The packed pass adds nothing. */
Test(vpoc_dense, working_set_follows_the_chunk) {
    struct vd_data d;
    vd_data_make(&d);
    int64_t levels;
    size_t longest;
    vd_data_shape(&d, &vd_close, &levels, &longest);
    cr_assert_eq(longest, 1380);
    static const size_t chunks[] = {250, 1000, 0};
    struct vd_added got[3];
    for (size_t i = 0; i < 3; i++) {
        size_t bars = chunks[i] ? chunks[i] : longest;
        got[i] = vd_added_at(&d, chunks[i], COMPUTE_VPOC_DENSE);
        uint64_t matrix = (uint64_t)d.ss.n * bars * (uint64_t)levels * sizeof(int64_t);
        cr_assert_eq(got[i].requested_bytes, matrix,
                     "chunk %zu: the pass asked for %llu bytes at its peak, want %zu sessions x "
                     "%zu bars x %lld levels x 8 = %llu",
                     chunks[i], (unsigned long long)got[i].requested_bytes, d.ss.n, bars,
                     (long long)levels, (unsigned long long)matrix);
        cr_assert_geq(got[i].reserved_bytes, matrix, "chunk %zu: reserved %llu", chunks[i],
                      (unsigned long long)got[i].reserved_bytes);
        struct vd_added packed = vd_added_at(&d, chunks[i], COMPUTE_VPOC_PACKED);
        cr_assert_eq(packed.requested_bytes + packed.reserved_bytes, 0,
                     "chunk %zu: a packed pass allocates nothing", chunks[i]);
    }
    cr_assert_geq(got[1].requested_bytes, 4 * got[0].requested_bytes);
    cr_assert_geq(got[1].reserved_bytes, 4 * got[0].reserved_bytes,
                  "reserved by the pass: %llu at chunk 1000, %llu at chunk 250",
                  (unsigned long long)got[1].reserved_bytes,
                  (unsigned long long)got[0].reserved_bytes);
    cr_assert_gt(got[2].requested_bytes, got[1].requested_bytes);
    cr_assert_gt(got[2].reserved_bytes, got[1].reserved_bytes);
    vd_data_fini(&d);
}

/* The matrices go back to the pool's cache, not to the device: after a pass at a large chunk
 * and one at a small chunk (which fits in the cached blocks), the pool still reserves the
 * large one's, and emptying the cache releases them. */
Test(vpoc_dense, cache_holds_the_large_chunk_until_emptied) {
    struct compute *c = vd_open();
    struct vd_data d;
    vd_data_make(&d);
    struct vpoc_result *res = calloc(d.ss.n, sizeof(*res));
    struct mem_stats before, after;
    struct compute_pool_peek peak;
    vd_pass(c, &d, &vd_close, 1000, COMPUTE_VPOC_DENSE, res, &before, &peak);
    uint64_t large = peak.stats.reserved_bytes;
    vd_pass(c, &d, &vd_close, 125, COMPUTE_VPOC_DENSE, res, &before, &peak);
    cr_assert_eq(peak.stats.reserved_bytes, large, "the small chunk's matrices fit in the cache");
    mem_pool_stats(c->pool, &after);
    cr_assert_eq(after.allocated_bytes, 0);
    cr_assert_eq(compute_sync(c, SYNC_OP_DEVICE), 0);
    uint64_t released = mem_pool_empty_cache(c->pool);
    cr_assert_gt(released, VD_MIB, "released %llu bytes", (unsigned long long)released);
    cr_assert_eq(released, after.reserved_bytes);
    mem_pool_stats(c->pool, &after);
    cr_assert_eq(after.reserved_bytes, 0);
    free(res);
    vd_data_fini(&d);
    compute_close(c);
}

/* expandable_segments on the CPU backend: the matrices of + + (250, 500, 1000 bars) tile one
 * large-pool segment that grows in 20 MiB pages (80 MiB) instead of leaving a segment of each
 * size (16 + 32 + 64 MiB); emptying the cache unmaps its pages, and memory mapped again after
 * that gives the packed kernel's results. */
Test(vpoc_dense, expandable_segments_on_the_cpu_backend) {
    struct compute *c = vd_open_conf("expandable_segments:True");
    cr_assert(mem_pool_expandable(c->pool));
    struct vd_data d;
    vd_data_make(&d);
    struct vpoc_result *dense = calloc(d.ss.n, sizeof(*dense));
    struct vpoc_result *packed = calloc(d.ss.n, sizeof(*packed));
    struct mem_stats before, after;
    struct compute_pool_peek peak;
    static const size_t up[] = {250, 500, 1000};
    for (size_t i = 0; i < 3; i++)
        vd_pass(c, &d, &vd_close, up[i], COMPUTE_VPOC_DENSE, dense, &before, &peak);
    mem_pool_stats(c->pool, &after);
    cr_assert_eq(after.reserved_bytes, 2 * VD_MIB + 80 * VD_MIB, "%llu bytes reserved",
                 (unsigned long long)after.reserved_bytes);
    cr_assert_eq(after.segments, 2);
    cr_assert_eq(compute_sync(c, SYNC_OP_DEVICE), 0);
    cr_assert_eq(mem_pool_empty_cache(c->pool), 82 * VD_MIB); /* nothing is live between passes */
    vd_pass(c, &d, &vd_close, 1000, COMPUTE_VPOC_DENSE, dense, &before, &peak);
    vd_pass(c, &d, &vd_close, 1000, COMPUTE_VPOC_PACKED, packed, &before, &peak);
    for (size_t k = 0; k < d.ss.n; k++)
        cr_assert(memcmp(&packed[k], &dense[k], sizeof(packed[k])) == 0, "session %s",
                  d.ss.s[k].label);
    free(dense);
    free(packed);
    vd_data_fini(&d);
    compute_close(c);
}
