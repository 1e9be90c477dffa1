/* Unit tests for the VPOC reference (levels, profiles, value area, chunking) and MLP features. */
#include "backend/data/data_series.h"
#include "backend/vpoc/vpoc.h"
#include "backend/vpoc/vpoc_features.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TV_EPS 1e-9
#define TV_FIX 65536

static const struct vpoc_params tv_close = {VPOC_CLOSE, 0.25, 0.70};
static const struct vpoc_params tv_range = {VPOC_RANGE, 0.25, 0.70};

/* A bar for the close profile: high/low deliberately away from the close. */
static struct vpoc_bar tv_cbar(double close, double volume) {
    struct vpoc_bar b = {close + 1.0, close - 1.0, close, volume};
    return b;
}

Test(vpoc, level_rounding) {
    cr_assert_eq(vpoc_level(100.00, 0.25), 400);
    cr_assert_eq(vpoc_level(100.10, 0.25), 400);     /* 400.4 */
    cr_assert_eq(vpoc_level(100.20, 0.25), 401);     /* 400.8 */
    cr_assert_eq(vpoc_level(100.125, 0.25), 401);    /* 400.5 exactly: away from zero */
    cr_assert_eq(vpoc_level(4500.375, 0.25), 18002); /* 18001.5 */
    cr_assert_eq(vpoc_level(7.0, 1.0), 7);
}

Test(vpoc, fix_share) {
    cr_assert_eq(vpoc_fix_share(1.0, 1), 65536);
    cr_assert_eq(vpoc_fix_share(1.5, 1), 98304);
    cr_assert_eq(vpoc_fix_share(4.0, 4), 65536);
    cr_assert_eq(vpoc_fix_share(10.0, 3), 218453); /* 655360 / 3 = 218453.33 */
    cr_assert_eq(vpoc_fix_share(2.0, 3), 43691);   /* 131072 / 3 = 43690.67 */
    cr_assert_eq(vpoc_fix_share(1.0, 131072), 1);  /* 0.5 rounds up */
    cr_assert_eq(vpoc_fix_share(0.0, 5), 0);
}

/* Closes/volumes: 100.00 x10, 100.25 x20, 100.50 x50, 100.25 x15, 100.75 x5, 99.75 x30,
 * 100.50 x10. Levels: 399:30 400:10 401:35 402:60 403:5, total 140, POC 402.
 * VA target 98: acc 60; up 5 < dn 35 -> 401 (95); up 5 < dn 10 -> 400 (105). VA 400..402. */
Test(vpoc, close_profile) {
    struct vpoc_bar b[7] = {tv_cbar(100.00, 10), tv_cbar(100.25, 20), tv_cbar(100.50, 50),
                            tv_cbar(100.25, 15), tv_cbar(100.75, 5),  tv_cbar(99.75, 30),
                            tv_cbar(100.50, 10)};
    int64_t lo, hi;
    vpoc_level_range(b, 7, &tv_close, &lo, &hi);
    cr_assert_eq(lo, 399);
    cr_assert_eq(hi, 403);
    int64_t hist[5] = {0};
    vpoc_accumulate(b, 7, &tv_close, 399, hist, 5);
    int64_t want[5] = {30 * TV_FIX, 10 * TV_FIX, 35 * TV_FIX, 60 * TV_FIX, 5 * TV_FIX};
    cr_assert_arr_eq(hist, want, sizeof want);
    struct vpoc_result r;
    cr_assert_eq(vpoc_session(b, 7, &tv_close, &r), 0);
    cr_assert_eq(r.poc_level, 402);
    cr_assert_eq(r.vah_level, 402);
    cr_assert_eq(r.val_level, 400);
    cr_assert_float_eq(r.poc, 100.50, TV_EPS);
    cr_assert_float_eq(r.vah, 100.50, TV_EPS);
    cr_assert_float_eq(r.val, 100.00, TV_EPS);
    cr_assert_eq(r.total_fix, 140 * TV_FIX);
}

/* Two levels share the max: 100.25 x8 and 100.75 x8 -> the lower (401) is the POC. */
Test(vpoc, poc_tie_lowest) {
    struct vpoc_bar b[4] = {tv_cbar(100.75, 8), tv_cbar(100.00, 5), tv_cbar(100.25, 8),
                            tv_cbar(101.00, 1)};
    struct vpoc_result r;
    cr_assert_eq(vpoc_session(b, 4, &tv_close, &r), 0);
    cr_assert_eq(r.poc_level, 401);
    /* total 22, target 15.4: acc 8; up 0 (402) < dn 5 -> 400 (13); up 0 >= dn -1 -> 402 (13);
     * up 8 -> 403 (21). */
    cr_assert_eq(r.val_level, 400);
    cr_assert_eq(r.vah_level, 403);
}

/* hist [4, 9, 4]: acc 9 < 11.9; up 4 == dn 4 -> up wins: VA 1..2. */
Test(vpoc, value_area_tie_goes_up) {
    const struct vpoc_params p = {VPOC_CLOSE, 1.0, 0.70};
    int64_t hist[3] = {4, 9, 4};
    struct vpoc_result r;
    vpoc_finalize(hist, 3, 0, &p, &r);
    cr_assert_eq(r.poc_level, 1);
    cr_assert_eq(r.val_level, 1);
    cr_assert_eq(r.vah_level, 2);
    cr_assert_eq(r.total_fix, 17);
}

Test(vpoc, single_level) {
    struct vpoc_bar b[3] = {tv_cbar(100.0, 1), tv_cbar(100.0, 2), tv_cbar(100.0, 3)};
    struct vpoc_result r;
    cr_assert_eq(vpoc_session(b, 3, &tv_close, &r), 0);
    cr_assert_eq(r.poc_level, 400);
    cr_assert_eq(r.vah_level, 400);
    cr_assert_eq(r.val_level, 400);
    cr_assert_eq(r.total_fix, 6 * TV_FIX);
}

Test(vpoc, range_spread_even) {
    struct vpoc_bar b = {100.75, 100.00, 100.50, 4.0};
    int64_t lo, hi, hist[4] = {0};
    vpoc_level_range(&b, 1, &tv_range, &lo, &hi);
    cr_assert_eq(lo, 400);
    cr_assert_eq(hi, 403);
    vpoc_accumulate(&b, 1, &tv_range, 400, hist, 4);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(hist[i], 65536);
}

/* Volume 10 over 100.00..100.50 (3 levels): 218453 each, total 655359 (not 655360). */
Test(vpoc, range_spread_uneven) {
    struct vpoc_bar b = {100.50, 100.00, 100.25, 10.0};
    int64_t hist[3] = {0};
    vpoc_accumulate(&b, 1, &tv_range, 400, hist, 3);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(hist[i], 218453);
    struct vpoc_result r;
    cr_assert_eq(vpoc_session(&b, 1, &tv_range, &r), 0);
    cr_assert_eq(r.total_fix, 655359);
    cr_assert_eq(r.poc_level, 400); /* three-way tie */
}

/* Closes 100.00 x20, 100.50 x50, 101.25 x30: levels 400..405 = [20, 0, 50, 0, 0, 30].
 * Target 70: acc 50; up 0 == dn 0 -> 403; up 0 == dn 0 -> 404; up 30 > dn 0 -> 405 (80). */
Test(vpoc, value_area_gap) {
    struct vpoc_bar b[3] = {tv_cbar(100.00, 20), tv_cbar(100.50, 50), tv_cbar(101.25, 30)};
    struct vpoc_result r;
    cr_assert_eq(vpoc_session(b, 3, &tv_close, &r), 0);
    cr_assert_eq(r.poc_level, 402);
    cr_assert_eq(r.val_level, 402);
    cr_assert_eq(r.vah_level, 405);
    cr_assert_eq(r.total_fix, 100 * TV_FIX);
}

/* Same profile with value_area 1.0: after 405 (80), up is -1, dn 0 -> 401, dn 20 -> 400 (100). */
Test(vpoc, value_area_full) {
    const struct vpoc_params p = {VPOC_CLOSE, 0.25, 1.0};
    int64_t hist[6] = {20, 0, 50, 0, 0, 30};
    struct vpoc_result r;
    vpoc_finalize(hist, 6, 400, &p, &r);
    cr_assert_eq(r.val_level, 400);
    cr_assert_eq(r.vah_level, 405);
    cr_assert_float_eq(r.val, 100.00, TV_EPS);
    cr_assert_float_eq(r.vah, 101.25, TV_EPS);
    /* Zero-volume edges are never needed: [0, 10, 0] is complete at the POC alone. */
    int64_t h2[3] = {0, 10, 0};
    vpoc_finalize(h2, 3, 0, &p, &r);
    cr_assert_eq(r.val_level, 1);
    cr_assert_eq(r.vah_level, 1);
}

static uint64_t tv_rng(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* A ~1400-bar random walk in ticks with fractional volumes. */
static void tv_gen_session(struct vpoc_bar *b, size_t n, uint64_t seed) {
    double px = 4500.0;
    for (size_t i = 0; i < n; i++) {
        px += 0.25 * (double)((int)(tv_rng(&seed) % 7) - 3);
        b[i].close = px;
        b[i].high = px + 0.25 * (double)(tv_rng(&seed) % 5);
        b[i].low = px - 0.25 * (double)(tv_rng(&seed) % 5);
        b[i].volume = (double)(tv_rng(&seed) % 100000) / 37.0;
    }
}

static void tv_chunked(const struct vpoc_bar *b, size_t n, const struct vpoc_params *p,
                       size_t chunk, int64_t base, int64_t *hist, size_t n_levels) {
    memset(hist, 0, n_levels * sizeof *hist);
    for (size_t off = 0; off < n; off += chunk)
        vpoc_accumulate(b + off, n - off < chunk ? n - off : chunk, p, base, hist, n_levels);
}

static void tv_chunk_check(const struct vpoc_params *p) {
    enum { N = 1400 };
    static struct vpoc_bar b[N];
    tv_gen_session(b, N, 12345);
    int64_t lo, hi;
    vpoc_level_range(b, N, p, &lo, &hi);
    size_t nl = (size_t)(hi - lo + 1);
    int64_t *ref = calloc(nl, sizeof *ref), *h = calloc(nl, sizeof *h);
    cr_assert(ref && h);
    tv_chunked(b, N, p, N, lo, ref, nl);
    struct vpoc_result rref, r, rs;
    vpoc_finalize(ref, nl, lo, p, &rref);
    cr_assert_eq(vpoc_session(b, N, p, &rs), 0);
    cr_assert_eq(memcmp(&rref, &rs, sizeof rs), 0);
    const size_t chunks[] = {1, 7, 500};
    for (size_t c = 0; c < 3; c++) {
        tv_chunked(b, N, p, chunks[c], lo, h, nl);
        cr_assert_eq(memcmp(h, ref, nl * sizeof *h), 0, "chunk %zu", chunks[c]);
        vpoc_finalize(h, nl, lo, p, &r);
        cr_assert_eq(memcmp(&r, &rref, sizeof r), 0, "chunk %zu", chunks[c]);
    }
    cr_assert(rref.val_level <= rref.poc_level && rref.poc_level <= rref.vah_level);
    free(ref);
    free(h);
}

Test(vpoc, chunk_independence_close) {
    tv_chunk_check(&tv_close);
}

Test(vpoc, chunk_independence_range) {
    tv_chunk_check(&tv_range);
}

/* ---- features ---- */

#define TV_T0_S 1700000000
#define TV_HOUR 3600

/* 11 hourly bars in 3 sessions: [0,3) [3,8) [8,11). Columns: open, high, low, close, volume. */
static const double tv_ohlcv[11][5] = {
    {100.00, 100.50, 99.75, 100.25, 100}, {100.25, 100.75, 100.00, 100.50, 200},
    {100.50, 100.50, 99.50, 100.00, 300}, {100.00, 100.25, 99.75, 100.00, 50},
    {100.00, 101.00, 100.00, 100.75, 40}, {100.75, 100.75, 100.25, 100.50, 20},
    {100.50, 100.75, 100.00, 100.75, 10}, {100.75, 101.25, 100.50, 100.75, 5},
    {101.00, 101.50, 101.00, 101.25, 10}, {101.25, 101.25, 100.75, 101.00, 10},
    {101.00, 101.25, 100.75, 101.00, 10},
};

static struct data_session tv_sess3[3] = {
    {0, 3, "2023-11-14"}, {3, 5, "2023-11-15"}, {8, 3, "2023-11-16"}};

/* Prior VPOCs are the caller's input: literal values. */
static const struct vpoc_result tv_prior[3] = {
    {400, 402, 399, 100.00, 100.50, 99.75, 0},
    {403, 404, 401, 100.75, 101.00, 100.25, 0},
    {0},
};

static void tv_series(struct data_series *ds, bool vix) {
    data_series_init(ds);
    for (int i = 0; i < 11; i++) {
        int day = i < 3 ? 0 : i < 8 ? 1 : 2, first = i < 3 ? 0 : i < 8 ? 3 : 8;
        struct data_bar b = {(int64_t)TV_T0_S + day * 86400 + (i - first) * TV_HOUR,
                             tv_ohlcv[i][0],
                             tv_ohlcv[i][1],
                             tv_ohlcv[i][2],
                             tv_ohlcv[i][3],
                             tv_ohlcv[i][4],
                             vix ? 15.0 + 0.5 * i : NAN};
        cr_assert_eq(data_series_push(ds, &b), 0);
    }
    ds->has_vix = vix;
}

static void tv_build(struct data_series *ds, struct feat_set *fs, enum feat_target t, bool vix) {
    struct data_sessions ss = {tv_sess3, 3};
    struct feat_opts o = {tv_close, 2, t, false};
    tv_series(ds, vix);
    cr_assert_eq(feat_build(ds, &ss, tv_prior, &o, fs), 0);
}

static double tv_x(const struct feat_set *fs, size_t row, unsigned j) {
    return fs->x[row * FEAT_COUNT + j];
}

/* Horizon 2 over 11 bars: bars 3..8 have a forward bar (8 + 2 = 10 < 11). */
Test(vpoc, feat_rows_and_targets) {
    struct data_series ds;
    struct feat_set fs;
    tv_build(&ds, &fs, FEAT_TARGET_RETURN_BPS, false);
    cr_assert_eq(fs.n, 6);
    const size_t bars[6] = {3, 4, 5, 6, 7, 8}, sess[6] = {1, 1, 1, 1, 1, 2};
    for (size_t r = 0; r < 6; r++) {
        cr_assert_eq(fs.bar[r], bars[r]);
        cr_assert_eq(fs.session[r], sess[r]);
    }
    cr_assert_float_eq(fs.y[0], 49.87541511038968, 1e-9);  /* 1e4 ln(100.50 / 100.00) */
    cr_assert_float_eq(fs.y[1], 0.0, 1e-12);               /* 100.75 -> 100.75 */
    cr_assert_float_eq(fs.y[3], 49.50505159856205, 1e-9);  /* bar 6 -> bar 8, next session */
    cr_assert_float_eq(fs.y[5], -24.72189145389037, 1e-9); /* 1e4 ln(101.00 / 101.25) */
    feat_set_fini(&fs);
    data_series_fini(&ds);
}

/* all_bars: every bar of sessions 1 and 2 (3..10); the first six rows as without it, the last
 * two (no bar two later) with a NaN target, in both target kinds. */
Test(vpoc, feat_all_bars_to_the_end) {
    struct data_series ds;
    struct feat_set base, all;
    struct data_sessions ss = {tv_sess3, 3};
    tv_build(&ds, &base, FEAT_TARGET_SIGN, true);
    for (int t = 0; t < 2; t++) {
        struct feat_opts o = {tv_close, 2, t ? FEAT_TARGET_SIGN : FEAT_TARGET_RETURN_BPS, true};
        cr_assert_eq(feat_rows(&ds, &ss, &o), 8);
        cr_assert_eq(feat_build(&ds, &ss, tv_prior, &o, &all), 0);
        cr_assert_eq(all.n, 8);
        for (size_t r = 0; r < 8; r++)
            cr_assert_eq(all.bar[r], 3 + r);
        for (size_t r = 0; r < 6 * FEAT_COUNT; r++)
            cr_assert_float_eq(all.x[r], base.x[r], 0.0, "feature %zu", r);
        for (size_t r = 0; t && r < 6; r++)
            cr_assert_float_eq(all.y[r], base.y[r], 0.0, "row %zu", r);
        cr_assert(isnan(all.y[6]) && isnan(all.y[7]), "targets past the data: %g %g", all.y[6],
                  all.y[7]);
        for (size_t r = 6 * FEAT_COUNT; r < 8 * FEAT_COUNT; r++)
            cr_assert(isfinite(all.x[r]), "feature %zu of the last bars", r);
        feat_set_fini(&all);
    }
    feat_set_fini(&base);
    data_series_fini(&ds);
}

Test(vpoc, feat_sign_target) {
    struct data_series ds;
    struct feat_set fs;
    tv_build(&ds, &fs, FEAT_TARGET_SIGN, false);
    /* bar 3 up, bar 4 flat (0, not > 0), bar 5 100.50 -> 100.75 up, bar 6 up, bar 7 up, bar 8 down
     */
    const double want[6] = {1, 0, 1, 1, 1, 0};
    for (size_t r = 0; r < 6; r++)
        cr_assert_float_eq(fs.y[r], want[r], 0.0, "row %zu", r);
    feat_set_fini(&fs);
    data_series_fini(&ds);
}

/* Bar 4 (row 1): o 100.00 h 101.00 l 100.00 c 100.75 v 40, previous close 100.00. */
Test(vpoc, feat_bar_shape) {
    struct data_series ds;
    struct feat_set fs;
    tv_build(&ds, &fs, FEAT_TARGET_RETURN_BPS, false);
    cr_assert_float_eq(tv_x(&fs, 1, 0), 74.72014838701057, 1e-9); /* 1e4 ln(1.0075) */
    cr_assert_float_eq(tv_x(&fs, 1, 1), 49.75134640113708, 1e-9); /* clamped: vs bar 0 100.25 */
    cr_assert_float_eq(tv_x(&fs, 5, 3), 99.25639799969998, 1e-9); /* bar 8 vs bar 0 */
    cr_assert_float_eq(tv_x(&fs, 1, 4), 4.0, 1e-12);
    cr_assert_float_eq(tv_x(&fs, 1, 5), 3.0, 1e-12);
    cr_assert_float_eq(tv_x(&fs, 1, 6), 1.0, 1e-12);
    cr_assert_float_eq(tv_x(&fs, 1, 7), 0.0, 1e-12);
    cr_assert_float_eq(tv_x(&fs, 1, 8), 3.713572066704308, 1e-12); /* ln 41 */
    /* ln 41 - mean(ln 101, ln 201, ln 301, ln 51, ln 41) */
    cr_assert_float_eq(tv_x(&fs, 1, 9), -0.9406146111112603, 1e-9);
    /* ret_1 of bars 0..3: 0, 24.9066, -49.8754, 0 -> population std 27.1663 */
    cr_assert_float_eq(tv_x(&fs, 0, 10), 27.166321712810948, 1e-9);
    feat_set_fini(&fs);
    data_series_fini(&ds);
}

Test(vpoc, feat_session_context) {
    struct data_series ds;
    struct feat_set fs;
    tv_build(&ds, &fs, FEAT_TARGET_RETURN_BPS, false);
    /* bar 4 close 100.75 vs prior[0]: poc 100.00, vah 100.50, val 99.75 */
    cr_assert_float_eq(tv_x(&fs, 1, 11), 3.0, 1e-12);
    cr_assert_float_eq(tv_x(&fs, 1, 12), 1.0, 1e-12);
    cr_assert_float_eq(tv_x(&fs, 1, 13), 4.0, 1e-12);
    cr_assert_float_eq(tv_x(&fs, 1, 14), 3.0, 1e-12);
    /* bar 8 (session 2) uses prior[1]: 101.25 - 100.75 = 2 ticks */
    cr_assert_float_eq(tv_x(&fs, 5, 11), 2.0, 1e-12);
    /* Developing close profile of session 1: 400:50 | 403:40 | 402:20 | 403:50 tie -> 400 |
     * 403:55 -> 403. dist = close - poc in ticks. */
    const double dev[5] = {0.0, 3.0, 2.0, 3.0, 0.0};
    for (size_t r = 0; r < 5; r++)
        cr_assert_float_eq(tv_x(&fs, r, 15), dev[r], 1e-12, "row %zu", r);
    cr_assert_float_eq(tv_x(&fs, 5, 15), 0.0, 1e-12); /* session 2 restarts at 101.25 */
    /* bar 5: open 100.00, high so far 101.00, low so far 99.75, close 100.50 */
    cr_assert_float_eq(tv_x(&fs, 2, 16), 2.0, 1e-12);
    cr_assert_float_eq(tv_x(&fs, 2, 17), -2.0, 1e-12);
    cr_assert_float_eq(tv_x(&fs, 2, 18), 3.0, 1e-12);
    /* bar 7 is 4 hours in: 240 / 1380 = 4 / 23 */
    cr_assert_float_eq(tv_x(&fs, 4, 19), 0.17391304347826086, 1e-12);
    cr_assert_float_eq(tv_x(&fs, 4, 20), 0.8878852184023752, 1e-12);
    cr_assert_float_eq(tv_x(&fs, 4, 21), 0.4600650377311522, 1e-12);
    cr_assert_float_eq(tv_x(&fs, 0, 19), 0.0, 1e-12);
    cr_assert_float_eq(tv_x(&fs, 5, 19), 0.0, 1e-12);
    for (size_t r = 0; r < 6; r++) {
        cr_assert_float_eq(tv_x(&fs, r, 22), 0.0, 0.0);
        cr_assert_float_eq(tv_x(&fs, r, 23), 0.0, 0.0);
    }
    feat_set_fini(&fs);
    data_series_fini(&ds);
}

/* vix_i = 15 + 0.5 i: bar 8 -> 19, change vs bar 0 (8 - 15 clamps) 4; bar 3 -> 16.5, 1.5. */
Test(vpoc, feat_vix) {
    struct data_series ds;
    struct feat_set fs;
    tv_build(&ds, &fs, FEAT_TARGET_RETURN_BPS, true);
    cr_assert_float_eq(tv_x(&fs, 5, 22), 19.0, 1e-12);
    cr_assert_float_eq(tv_x(&fs, 5, 23), 4.0, 1e-12);
    cr_assert_float_eq(tv_x(&fs, 0, 22), 16.5, 1e-12);
    cr_assert_float_eq(tv_x(&fs, 0, 23), 1.5, 1e-12);
    feat_set_fini(&fs);
    data_series_fini(&ds);
}

Test(vpoc, feat_errors_and_names) {
    struct data_series ds;
    struct feat_set fs;
    struct data_sessions one = {tv_sess3, 1};
    struct feat_opts o = {tv_close, 2, FEAT_TARGET_RETURN_BPS, false};
    tv_series(&ds, false);
    cr_assert_eq(feat_build(&ds, &one, tv_prior, &o, &fs), -EINVAL);
    cr_assert_eq(fs.n, 0);
    cr_assert_str_eq(feat_name(0), "ret_1");
    cr_assert_str_eq(feat_name(15), "dist_dev_poc");
    cr_assert_str_eq(feat_name(23), "vix_change");
    for (unsigned j = 0; j < FEAT_COUNT; j++)
        for (unsigned k = j + 1; k < FEAT_COUNT; k++)
            cr_assert_str_neq(feat_name(j), feat_name(k));
    data_series_fini(&ds);
}

/* Column 0: 1 2 3 4 -> mean 2.5, var 1.25; column 1 constant 7 -> std 1; y: 2 4 4 4 -> mean
 * 3.5, var 0.75. */
Test(vpoc, feat_norm) {
    double x[4 * FEAT_COUNT] = {0}, y[4] = {2, 4, 4, 4};
    for (int r = 0; r < 4; r++) {
        x[r * FEAT_COUNT] = r + 1;
        x[r * FEAT_COUNT + 1] = 7;
    }
    struct feat_set fs = {4, x, y, NULL, NULL};
    struct feat_norm nm;
    feat_norm_fit(&fs, 1, 2, FEAT_TARGET_RETURN_BPS, &nm); /* rows 1..2: 2, 3 */
    cr_assert_float_eq(nm.mean[0], 2.5, 1e-12);
    cr_assert_float_eq(nm.std[0], 0.5, 1e-12);
    cr_assert_float_eq(nm.y_mean, 4.0, 1e-12);
    cr_assert_float_eq(nm.y_std, 1.0, 1e-12); /* constant 4, 4 */
    feat_norm_fit(&fs, 0, 4, FEAT_TARGET_SIGN, &nm);
    cr_assert_float_eq(nm.y_mean, 0.0, 0.0);
    cr_assert_float_eq(nm.y_std, 1.0, 0.0);
    feat_norm_fit(&fs, 0, 4, FEAT_TARGET_RETURN_BPS, &nm);
    cr_assert_float_eq(nm.mean[0], 2.5, 1e-12);
    cr_assert_float_eq(nm.std[0], 1.118033988749895, 1e-12); /* sqrt 1.25 */
    cr_assert_float_eq(nm.mean[1], 7.0, 1e-12);
    cr_assert_float_eq(nm.std[1], 1.0, 0.0);
    cr_assert_float_eq(nm.std[5], 1.0, 0.0);
    cr_assert_float_eq(nm.y_mean, 3.5, 1e-12);
    cr_assert_float_eq(nm.y_std, 0.8660254037844386, 1e-12); /* sqrt 0.75 */
    feat_norm_apply(&fs, &nm, FEAT_TARGET_RETURN_BPS);
    cr_assert_float_eq(x[0], -1.3416407864998738, 1e-12); /* -1.5 / sqrt 1.25 */
    cr_assert_float_eq(x[1], 0.0, 1e-12);
    cr_assert_float_eq(y[0], -1.7320508075688772, 1e-12); /* -1.5 / sqrt 0.75 */
    feat_norm_apply(&fs, &nm, FEAT_TARGET_SIGN);
    cr_assert_float_eq(y[0], -1.7320508075688772, 1e-12); /* y untouched for SIGN */
}

/* 10 sessions of 3 bars (30 bars, closes rising). */
static void tv_split_build(struct data_series *ds, struct feat_set *fs, int horizon) {
    static struct data_session s[10];
    static struct vpoc_result prior[10];
    data_series_init(ds);
    for (int i = 0; i < 30; i++) {
        double c = 100.0 + 0.25 * i;
        struct data_bar b = {(int64_t)TV_T0_S + (i / 3) * 86400 + (i % 3) * 60, c, c, c, c, 1, NAN};
        cr_assert_eq(data_series_push(ds, &b), 0);
    }
    for (size_t k = 0; k < 10; k++)
        s[k] = (struct data_session){3 * k, 3, "x"};
    struct data_sessions ss = {s, 10};
    struct feat_opts o = {tv_range, horizon, FEAT_TARGET_SIGN, false};
    cr_assert_eq(feat_build(ds, &ss, prior, &o, fs), 0);
}

Test(vpoc, feat_split) {
    struct data_series ds;
    struct feat_set fs;
    /* horizon 1: sessions 1..9 have samples (9; session 9 has 2), 26 rows. */
    tv_split_build(&ds, &fs, 1);
    cr_assert_eq(fs.n, 26);
    cr_assert_eq(feat_split_index(&fs, 0.2), 21); /* ceil(1.8) = 2: sessions 8, 9 */
    cr_assert_eq(feat_split_index(&fs, 0.5), 12); /* ceil(4.5) = 5: sessions 5..9 */
    cr_assert_eq(feat_split_index(&fs, 0.0), 24); /* at least 1: session 9 */
    cr_assert_eq(feat_split_index(&fs, 1.0), 3);  /* at most 8: sessions 2..9 */
    feat_set_fini(&fs);
    data_series_fini(&ds);
    /* horizon 4: bars 3..25, session 9 has none; 8 sessions -> ceil(1.6) = 2: sessions 7, 8 */
    tv_split_build(&ds, &fs, 4);
    cr_assert_eq(fs.n, 23);
    cr_assert_eq(feat_split_index(&fs, 0.2), 18);
    feat_set_fini(&fs);
    data_series_fini(&ds);
}

Test(vpoc, chunk_ladder) {
    cr_assert_eq(vpoc_chunk_step(500, 1), 1000);
    cr_assert_eq(vpoc_chunk_step(500, -1), 250);
    cr_assert_eq(vpoc_chunk_step(125, -1), 125); /* bottom stays */
    cr_assert_eq(vpoc_chunk_step(3500, 1), 0);   /* then the whole session */
    cr_assert_eq(vpoc_chunk_step(0, 1), 0);
    cr_assert_eq(vpoc_chunk_step(0, -1), 3500);
    cr_assert_eq(vpoc_chunk_step(700, 1), 1000); /* off the ladder: the next rung */
    cr_assert_eq(vpoc_chunk_step(700, -1), 500);
}
