/* The VPOC path of whole data sets (compute_vpoc_set_*), with the packed kernel and the dense
 * one, against the CPU reference and against each other, on whichever backend the including
 * test opens: synthetic days plus sessions made to cross every edge of the packed format (a
 * long one, one that packs but is too wide for a one-warp block, one too wide to pack, one with
 * volumes too large to pack, one bar), both profiles, chunk sizes from 1 bar to whole sessions
 * and past them, every session or every other one. Header only: each test binary includes it
 * once, with Criterion. */
#ifndef RINGSIDE_TESTS_SUPPORT_VPOC_SET_CHECK_H
#define RINGSIDE_TESTS_SUPPORT_VPOC_SET_CHECK_H

#include "backend/compute/compute.h"
#include "backend/data/data_synth.h"
#include "backend/vpoc/vpoc.h"
#include "backend/vpoc/vpoc_pack.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VSC_TICK       0.25
#define VSC_LONG_BARS  4000 /* more bars than a device thread keeps in registers */
#define VSC_BROAD_BARS 1200 /* closes on 1500 ticks: packs, on the device in wider blocks */
#define VSC_WIDE_BARS  3000 /* closes on 3000 ticks: wider than a packed profile */
#define VSC_BIG_BARS   50

struct vsc_data {
    struct vpoc_bar *bars;
    struct data_sessions ss;
    size_t n_bars;
};

static void vsc_push_session(struct vsc_data *d, size_t n, const char *label) {
    struct data_session *s = &d->ss.s[d->ss.n++];
    s->first = d->n_bars;
    s->n = n;
    snprintf(s->label, sizeof(s->label), "%s", label);
    d->n_bars += n;
}

/* days synthetic sessions, then: long (many bars in 301 levels, ranges of six ticks,
 * fractional volumes), broad, wide, big volumes, one bar. */
static void vsc_data_make(struct vsc_data *d, int days, uint64_t seed) {
    struct data_series ds;
    struct data_sessions syn = {0};
    struct data_synth_opts so = {.days = days, .seed = seed, .start_hour = 18, .tick = VSC_TICK};
    data_series_init(&ds);
    cr_assert_eq(data_synth_generate(&so, &ds), 0);
    cr_assert_eq(data_sessions_split(&ds, 18, &syn), 0);
    size_t extra = VSC_LONG_BARS + VSC_BROAD_BARS + VSC_WIDE_BARS + VSC_BIG_BARS + 1;
    memset(d, 0, sizeof(*d));
    d->bars = malloc((ds.n + extra) * sizeof(*d->bars));
    d->ss.s = calloc(syn.n + 5, sizeof(*d->ss.s));
    cr_assert(d->bars && d->ss.s);
    vpoc_bars_from_series(ds.bars, ds.n, d->bars);
    for (size_t k = 0; k < syn.n; k++)
        vsc_push_session(d, syn.s[k].n, syn.s[k].label);
    cr_assert_eq(d->n_bars, ds.n);
    struct vpoc_bar *b = d->bars + d->n_bars;
    for (size_t i = 0; i < VSC_LONG_BARS; i++) {
        double close = (18000.0 + (double)(i * 37 % 301)) * VSC_TICK;
        b[i] = (struct vpoc_bar){close + 3 * VSC_TICK, close - 2 * VSC_TICK, close,
                                 1.0 + (double)(i % 13) * 0.75};
    }
    vsc_push_session(d, VSC_LONG_BARS, "long");
    b = d->bars + d->n_bars;
    for (size_t i = 0; i < VSC_BROAD_BARS; i++) {
        double close = (15000.0 + (double)(i * 1499 % 1500)) * VSC_TICK;
        b[i] = (struct vpoc_bar){close + VSC_TICK, close - VSC_TICK, close,
                                 2.0 + (double)(i * 7 % 11) + (i % 97 == 0 ? 300.0 : 0.0)};
    }
    vsc_push_session(d, VSC_BROAD_BARS, "broad");
    b = d->bars + d->n_bars;
    for (size_t i = 0; i < VSC_WIDE_BARS; i++) {
        double close = (16000.0 + (double)i) * VSC_TICK, x = (double)i - 1000.0;
        b[i] = (struct vpoc_bar){close + 2 * VSC_TICK, close - 2 * VSC_TICK, close,
                                 1.25 + 400.0 / (1.0 + x * x / 900.0)};
    }
    vsc_push_session(d, VSC_WIDE_BARS, "wide");
    b = d->bars + d->n_bars;
    for (size_t i = 0; i < VSC_BIG_BARS; i++) {
        double close = (17000.0 + (double)(i % 9)) * VSC_TICK;
        b[i] = (struct vpoc_bar){close, close, close, 3e7 + (double)i * 1e6};
    }
    vsc_push_session(d, VSC_BIG_BARS, "big");
    d->bars[d->n_bars] = (struct vpoc_bar){4000.5, 4000.0, 4000.25, 7};
    vsc_push_session(d, 1, "one");
    data_sessions_fini(&syn);
    data_series_fini(&ds);
}

static void vsc_data_fini(struct vsc_data *d) {
    free(d->bars);
    free(d->ss.s);
}

/* One set (sessions start, start + stride, ...) at one chunk size with one kernel: every
 * member equal to the reference, every other session untouched, events in order, the pool
 * empty afterwards. Returns the results (d->ss.n, the caller frees them). */
static struct vpoc_result *vsc_check_one(struct compute *c, const struct vsc_data *d,
                                         const struct vpoc_params *p, size_t chunk, size_t start,
                                         size_t stride, enum compute_vpoc_kernel kernel) {
    char what[192], err[512] = "";
    snprintf(what, sizeof(what), "%s, %s kernel, %s profile, chunk %zu, sessions %zu + %zu k",
             c->ops->name, compute_vpoc_kernel_name(kernel),
             p->profile == VPOC_CLOSE ? "close" : "range", chunk, start, stride);
    struct vpoc_result *res = malloc(d->ss.n * sizeof(*res));
    cr_assert_not_null(res);
    memset(res, 0xA5, d->ss.n * sizeof(*res)); /* what no result is */
    struct compute_vpoc_set *s = NULL;
    int rc = compute_vpoc_set_create(c, d->bars, &d->ss, start, stride, p, chunk, kernel, &s, err,
                                     sizeof(err));
    cr_assert_eq(rc, 0, "%s: create: %s", what, err);
    size_t longest = 0;
    for (size_t k = start; k < d->ss.n; k += stride) {
        int64_t lo, hi;
        vpoc_level_range(d->bars + d->ss.s[k].first, d->ss.s[k].n, p, &lo, &hi);
        bool packable = hi - lo < VPOC_PACK_LEVELS_MAX && strcmp(d->ss.s[k].label, "big") != 0;
        if (packable && d->ss.s[k].n > longest)
            longest = d->ss.s[k].n;
    }
    size_t want_launches = chunk && chunk < longest ? (longest + chunk - 1) / chunk : 1;
    cr_assert_eq(compute_vpoc_set_launches(s), want_launches, "%s: %zu launches, want %zu", what,
                 compute_vpoc_set_launches(s), want_launches);
    size_t n_ev = want_launches + 1;
    struct compute_event *ev = n_ev <= 64 ? calloc(n_ev, sizeof(*ev)) : NULL;
    /* A set runs again, as the loop's refreshes do; the first two passes are only queued, so
     * that each one's launches follow the one before on the stream with no sync between them
     * (where launches may overlap, a pass must not touch what the one before still reads). */
    for (int pass = 0; pass < 2; pass++) {
        rc = compute_vpoc_set_enqueue(c, s, NULL, err, sizeof(err));
        cr_assert_eq(rc, 0, "%s: queued pass %d: %s", what, pass, err);
    }
    rc = compute_vpoc_set_run(c, s, res, ev, NULL, err, sizeof(err));
    cr_assert_eq(rc, 0, "%s: third pass: %s", what, err);
    for (size_t k = 0; k < d->ss.n; k++) {
        const struct data_session *ds = &d->ss.s[k];
        if (k < start || (k - start) % stride != 0) {
            cr_assert_eq(res[k].poc_level, (int64_t)0xA5A5A5A5A5A5A5A5ULL,
                         "%s: session %zu is not in the set but was written", what, k);
            continue;
        }
        struct vpoc_result want;
        cr_assert_eq(vpoc_session(d->bars + ds->first, ds->n, p, &want), 0);
        cr_assert_eq(res[k].poc_level, want.poc_level, "%s: session %zu (%s): POC %lld, want %lld",
                     what, k, ds->label, (long long)res[k].poc_level, (long long)want.poc_level);
        cr_assert_eq(res[k].vah_level, want.vah_level, "%s: session %zu (%s): VAH", what, k,
                     ds->label);
        cr_assert_eq(res[k].val_level, want.val_level, "%s: session %zu (%s): VAL", what, k,
                     ds->label);
        cr_assert_eq(res[k].total_fix, want.total_fix, "%s: session %zu (%s): total", what, k,
                     ds->label);
        cr_assert_eq(res[k].poc, want.poc, "%s: session %zu: POC price %.17g", what, k, res[k].poc);
        cr_assert_eq(res[k].vah, want.vah, "%s: session %zu: VAH price", what, k);
        cr_assert_eq(res[k].val, want.val, "%s: session %zu: VAL price", what, k);
    }
    uint64_t prev = 0;
    for (size_t i = 0; ev && i < n_ev; i++) {
        uint64_t t = 0;
        cr_assert_eq(c->ops->event_time_ns(c, &ev[i], &t), 0, "%s: event %zu has no time", what, i);
        cr_assert_geq(t, prev, "%s: event %zu before event %zu", what, i, i - 1);
        prev = t;
    }
    free(ev);
    compute_vpoc_set_destroy(c, s);
    struct mem_stats st;
    mem_pool_stats(c->pool, &st);
    cr_assert_eq(st.allocated_bytes, 0, "%s: %llu bytes still allocated", what,
                 (unsigned long long)st.allocated_bytes);
    return res;
}

/* The two kernels on one set: each as the reference, and field for field the same. */
static void vsc_check_kernels(struct compute *c, const struct vsc_data *d,
                              const struct vpoc_params *p, size_t chunk, size_t start,
                              size_t stride) {
    struct vpoc_result *packed = vsc_check_one(c, d, p, chunk, start, stride, COMPUTE_VPOC_PACKED);
    struct vpoc_result *dense = vsc_check_one(c, d, p, chunk, start, stride, COMPUTE_VPOC_DENSE);
    for (size_t k = start; k < d->ss.n; k += stride) {
        const struct vpoc_result *a = &packed[k], *b = &dense[k];
        cr_assert(a->poc_level == b->poc_level && a->vah_level == b->vah_level &&
                      a->val_level == b->val_level && a->total_fix == b->total_fix &&
                      a->poc == b->poc && a->vah == b->vah && a->val == b->val,
                  "%s, chunk %zu: session %zu (%s): dense %lld/%lld/%lld (total %lld), packed "
                  "%lld/%lld/%lld (total %lld)",
                  c->ops->name, chunk, k, d->ss.s[k].label, (long long)b->poc_level,
                  (long long)b->vah_level, (long long)b->val_level, (long long)b->total_fix,
                  (long long)a->poc_level, (long long)a->vah_level, (long long)a->val_level,
                  (long long)a->total_fix);
    }
    free(packed);
    free(dense);
}

/* Every combination on backend c over days synthetic days. */
static void vsc_check_all(struct compute *c, int days, uint64_t seed) {
    struct vsc_data d;
    vsc_data_make(&d, days, seed);
    static const size_t chunks[] = {0, 1, 125, 500, 1380, 100000};
    static const enum vpoc_profile_kind kinds[] = {VPOC_CLOSE, VPOC_RANGE};
    for (size_t pk = 0; pk < 2; pk++) {
        struct vpoc_params p = {kinds[pk], VSC_TICK, 0.70};
        for (size_t ci = 0; ci < sizeof(chunks) / sizeof(chunks[0]); ci++) {
            vsc_check_kernels(c, &d, &p, chunks[ci], 0, 1);
            vsc_check_kernels(c, &d, &p, chunks[ci], 1, 2);
        }
    }
    vsc_data_fini(&d);
}

#endif
