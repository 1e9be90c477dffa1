/* Unit tests for the CSV file read session by session (data_csv_open / data_csv_next_session):
 * the sessions it gives against the whole-file load and split, against bars generated in
 * memory, across the reader's buffer edges, and its errors. */
#include "backend/data/data_csv.h"
#include "backend/data/data_series.h"
#include "backend/data/data_synth.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TDS_READ_BYTES  (64u * 1024u) /* what data_csv.c takes from the stream at a time */
#define TDS_T_0102_1000 1704189600LL  /* 2024-01-02 10:00:00 UTC */

static char tds_dir[512];
static char tds_path[1024];

static void tds_setup(void) {
    cr_assert_eq(rs_test_tmpdir(tds_dir, sizeof(tds_dir)), 0);
}

static void tds_teardown(void) {
    rs_test_rmtree(tds_dir);
}

TestSuite(data_stream, .init = tds_setup, .fini = tds_teardown, .timeout = 30);

/* What one way of reading a file gave. */
struct tds_read {
    int rc;
    char err[512];
    struct data_series ds;
    struct data_sessions ss;
    struct data_csv_report rep;
};

static void tds_read_fini(struct tds_read *r) {
    data_series_fini(&r->ds);
    free(r->ss.s);
}

/* The file session by session into one series, each session recorded as the reader gave it. */
static void tds_stream(const char *path, const struct data_csv_opts *o, int hour,
                       struct tds_read *out) {
    memset(out, 0, sizeof(*out));
    data_series_init(&out->ds);
    struct data_csv *r = NULL;
    out->rc = data_csv_open(path, o, hour, &out->rep, &r, out->err, sizeof(out->err));
    size_t cap = 0;
    while (out->rc == 0) {
        struct data_session s;
        int rc = data_csv_next_session(r, &out->ds, &s, out->err, sizeof(out->err));
        if (rc != 1) {
            out->rc = rc;
            break;
        }
        cr_assert_eq(s.first + s.n, out->ds.n, "a session not at the end of the series");
        if (out->ss.n == cap) {
            cap = cap ? 2 * cap : 16;
            out->ss.s = realloc(out->ss.s, cap * sizeof(*out->ss.s));
            cr_assert_not_null(out->ss.s);
        }
        out->ss.s[out->ss.n++] = s;
    }
    if (out->rc == 0)
        out->ds.has_vix = data_csv_has_vix(r);
    data_csv_close(r);
}

/* The file whole (data_csv_load), then split (data_sessions_split). */
static void tds_whole(const char *path, const struct data_csv_opts *o, int hour,
                      struct tds_read *out) {
    memset(out, 0, sizeof(*out));
    data_series_init(&out->ds);
    out->rc = data_csv_load(path, o, &out->ds, &out->rep, out->err, sizeof(out->err));
    if (out->rc == 0)
        cr_assert_eq(data_sessions_split(&out->ds, hour, &out->ss), 0);
}

static bool tds_same_double(double a, double b) {
    return a == b || (isnan(a) && isnan(b));
}

static void tds_assert_bar(const struct data_bar *a, const struct data_bar *b, const char *what,
                           size_t i) {
    cr_assert_eq(a->t_s, b->t_s, "%s: bar %zu time %lld, want %lld", what, i, (long long)a->t_s,
                 (long long)b->t_s);
    cr_assert(tds_same_double(a->open, b->open) && tds_same_double(a->high, b->high) &&
                  tds_same_double(a->low, b->low) && tds_same_double(a->close, b->close) &&
                  tds_same_double(a->volume, b->volume) && tds_same_double(a->vix, b->vix),
              "%s: bar %zu differs", what, i);
}

static void tds_assert_sessions(const struct data_sessions *a, const struct data_sessions *b,
                                const char *what) {
    cr_assert_eq(a->n, b->n, "%s: %zu sessions, want %zu", what, a->n, b->n);
    for (size_t k = 0; k < a->n; k++) {
        cr_assert_eq(a->s[k].first, b->s[k].first, "%s: session %zu first", what, k);
        cr_assert_eq(a->s[k].n, b->s[k].n, "%s: session %zu has %zu bars, want %zu", what, k,
                     a->s[k].n, b->s[k].n);
        cr_assert_str_eq(a->s[k].label, b->s[k].label, "%s: session %zu", what, k);
    }
}

static void tds_assert_series(const struct data_series *a, const struct data_series *b,
                              const char *what) {
    cr_assert_eq(a->n, b->n, "%s: %zu bars, want %zu", what, a->n, b->n);
    cr_assert_eq(a->has_vix, b->has_vix, "%s: has_vix", what);
    for (size_t i = 0; i < a->n; i++)
        tds_assert_bar(&a->bars[i], &b->bars[i], what, i);
}

/* Streamed and whole: the same outcome, bars, sessions and report. */
static void tds_assert_same_as_whole(const char *path, const struct data_csv_opts *o, int hour,
                                     const char *what) {
    struct tds_read s, w;
    tds_stream(path, o, hour, &s);
    tds_whole(path, o, hour, &w);
    cr_assert_eq(s.rc, w.rc, "%s: rc %d (%s), whole %d (%s)", what, s.rc, s.err, w.rc, w.err);
    cr_assert_str_eq(s.err, w.err, "%s", what);
    if (s.rc == 0) {
        tds_assert_series(&s.ds, &w.ds, what);
        tds_assert_sessions(&s.ss, &w.ss, what);
    }
    cr_assert_eq(s.rep.rows_read, w.rep.rows_read, "%s", what);
    cr_assert_eq(s.rep.rows_skipped, w.rep.rows_skipped, "%s", what);
    cr_assert_eq(s.rep.rows_other, w.rep.rows_other, "%s", what);
    cr_assert_eq(s.rep.n_rolls, w.rep.n_rolls, "%s", what);
    cr_assert_str_eq(s.rep.first_skip, w.rep.first_skip, "%s", what);
    cr_assert_str_eq(s.rep.format, w.rep.format, "%s", what);
    tds_read_fini(&s);
    tds_read_fini(&w);
}

static const char *tds_write(const char *text) {
    cr_assert_eq(rs_test_write_file(tds_dir, "data.csv", text, tds_path, sizeof(tds_path)), 0);
    return tds_path;
}

/* ---- against the whole-file load ---- */

/* Every fixture that reads, with the flags it is read with, at calendar days and at the default
 * 18:00 start: what the stream gives is what the load and the split give. */
Test(data_stream, fixtures_match_the_whole_file_load) {
    static const struct {
        const char *rel;
        struct data_csv_opts o;
    } cases[] = {
        {"csv/basic.csv", {0}},
        {"csv/basic.csv.gz", {0}},
        {"csv/basic.csv.zst", {0}},
        {"csv/basic_members.csv.gz", {0}},
        {"csv/crlf_bom_quoted.csv", {0}},
        {"csv/date_time.csv", {0}},
        {"cli/tiny.csv", {0}},
        {"cli/tiny.csv", {.tz = "America/Chicago"}},
        {"cli/skip_one.csv", {.skip_bad_rows = true}},
        {"cli/tradingview.csv", {0}},
        {"cli/ninjatrader.txt", {.tz = "UTC"}},
        {"vendors/databento_batch.csv", {0}},
        {"vendors/databento_batch_two.csv", {.symbol = "5002"}},
        {"vendors/databento_batch_two.csv", {.continuous = true}},
        {"vendors/databento_pretty_ts_fixed.csv", {0}},
        {"vendors/tradingview_iso.csv", {.tz = "America/Chicago"}},
        {"vendors/epoch_us.csv", {0}},
        {"vendors/ninjatrader_tick_chicago.txt", {.tz = "America/Chicago"}},
        {"vendors/ninjatrader_tick_chicago.txt", {.tz = "America/Chicago", .bar = "15m"}},
        {"vendors/ninjatrader_minute_chicago.txt", {.tz = "America/Chicago", .bar = "1h"}},
        {"vendors/plain_fixed.csv", {.price_scale = "1e-9"}},
        {"cli/databento_mixed.csv", {.symbol = "ESH4"}},
        {"cli/databento_mixed.csv", {.symbol = "ESM4"}},
        {"cli/databento_mixed.csv", {.continuous = true}},
        {"cli/headerless.csv", {.columns = "timestamp,open,high,low,close,volume"}},
    };
    static const int hours[] = {0, 18};
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        char path[1024];
        rs_test_fixture(cases[k].rel, path, sizeof(path));
        for (size_t h = 0; h < 2; h++)
            tds_assert_same_as_whole(path, &cases[k].o, hours[h], cases[k].rel);
    }
}

/* Two contracts over six days from 2024-03-10, the volume passing from one to the other, and a
 * spread: each picked, and rolled; as Chicago times, 02:15 on the first day does not exist (the
 * clocks went forward): an error, or a skipped row. */
static const char *tds_write_contracts(void) {
    static char text[64 * 1024];
    size_t used = (size_t)snprintf(text, sizeof(text),
                                   "ts_event,symbol,open,high,low,close,"
                                   "volume\n");
    for (int d = 0; d < 6; d++)
        for (int m = 0; m < 24 * 60; m += 45) {
            char ts[20];
            data_format_time(1710028800LL + d * 86400LL + m * 60LL, ts); /* from 2024-03-10 */
            int vh = 100 - 15 * d, vm = 10 + 20 * d;
            used += (size_t)snprintf(text + used, sizeof(text) - used,
                                     "%s,ESH4,100,101,99,100.5,%d\n%s,ESM4,102,103,101,102.25,%d\n",
                                     ts, vh, ts, vm);
            if (m % 180 == 0)
                used += (size_t)snprintf(text + used, sizeof(text) - used,
                                         "%s,ESH4-ESM4,2,2.25,1.75,2,3\n", ts);
            cr_assert_lt(used, sizeof(text));
        }
    return tds_write(text);
}

Test(data_stream, contracts_picked_and_rolled_match_the_whole_file_load) {
    const char *path = tds_write_contracts();
    const struct data_csv_opts opts[] = {
        {.symbol = "ESH4"},
        {.symbol = "ESM4"},
        {.continuous = true},
        {0}, /* several instruments: the same error */
        {.symbol = "ESH4", .tz = "America/Chicago"},
        {.continuous = true, .tz = "America/Chicago", .skip_bad_rows = true},
    };
    for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]); k++)
        for (int h = 0; h < 24; h += 9)
            tds_assert_same_as_whole(path, &opts[k], h, "contracts");
    struct tds_read s;
    tds_stream(path, &(struct data_csv_opts){.continuous = true}, 18, &s);
    cr_assert_eq(s.rc, 0, "%s", s.err);
    cr_assert_eq(s.rep.n_rolls, 1);
    cr_assert_str_eq(s.rep.roll[0].to, "ESM4");
    tds_read_fini(&s);
}

/* ---- against bars made in memory ---- */

/* Synthetic bars written as CSV and streamed back: every bar as generated, every session where
 * the split of the generated series puts it (no parser between the expectation and the data). */
Test(data_stream, synthetic_bars_come_back_session_by_session) {
    struct data_series gen;
    data_series_init(&gen);
    struct data_synth_opts so = {.days = 6, .seed = 11, .start_hour = 18, .tick = 0.25};
    cr_assert_eq(data_synth_generate(&so, &gen), 0);
    snprintf(tds_path, sizeof(tds_path), "%s/synth.csv", tds_dir);
    char err[512];
    cr_assert_eq(data_csv_write(tds_path, &gen, err, sizeof(err)), 0, "%s", err);
    static const int hours[] = {18, 0, 9};
    for (size_t h = 0; h < 3; h++) {
        struct data_sessions want;
        cr_assert_eq(data_sessions_split(&gen, hours[h], &want), 0);
        struct tds_read s;
        tds_stream(tds_path, NULL, hours[h], &s);
        cr_assert_eq(s.rc, 0, "%s", s.err);
        tds_assert_series(&s.ds, &gen, "synthetic");
        tds_assert_sessions(&s.ss, &want, "synthetic");
        if (hours[h] == 18)
            cr_assert_eq(s.ss.n, 6);
        data_sessions_fini(&want);
        tds_read_fini(&s);
    }
    data_series_fini(&gen);
}

/* A header and rows each padded (trailing blanks are trimmed) to 64 bytes, plus shift bytes in
 * the header: session A (10:00 on, every 10 s) for a_rows rows, then session B (18:00 on). */
static const char *tds_write_padded(int shift, size_t a_rows, size_t b_rows) {
    size_t cap = 64 * (1 + a_rows + b_rows) + 64;
    char *text = malloc(cap);
    cr_assert_not_null(text);
    size_t used =
        (size_t)snprintf(text, cap, "%-*s\n", 63 + shift, "timestamp,open,high,low,close,volume");
    for (size_t i = 0; i < a_rows + b_rows; i++) {
        long long t = i < a_rows ? TDS_T_0102_1000 + 10LL * (long long)i
                                 : TDS_T_0102_1000 + 8 * 3600 + 10LL * (long long)(i - a_rows);
        char ts[20], row[80];
        data_format_time(t, ts);
        snprintf(row, sizeof(row), "%s,100,101,99,100.5,%zu", ts, i + 1);
        used += (size_t)snprintf(text + used, cap - used, "%-63s\n", row);
    }
    cr_assert_lt(used, cap);
    tds_write(text);
    free(text);
    return tds_path;
}

/* Session B's first row starting one byte before, at and one byte after the edge of the
 * reader's first read, and B crossing the second edge: two sessions, every bar in place. */
Test(data_stream, session_boundary_at_the_read_edges) {
    const size_t a_rows = TDS_READ_BYTES / 64 - 1, b_rows = TDS_READ_BYTES / 64 + 7;
    for (int shift = -1; shift <= 1; shift++) {
        const char *path = tds_write_padded(shift, a_rows, b_rows);
        struct tds_read s;
        tds_stream(path, NULL, 18, &s);
        cr_assert_eq(s.rc, 0, "shift %d: %s", shift, s.err);
        cr_assert_eq(s.ss.n, 2, "shift %d: %zu sessions", shift, s.ss.n);
        cr_assert_eq(s.ss.s[0].n, a_rows);
        cr_assert_str_eq(s.ss.s[0].label, "2024-01-02");
        cr_assert_eq(s.ss.s[1].first, a_rows);
        cr_assert_eq(s.ss.s[1].n, b_rows);
        cr_assert_str_eq(s.ss.s[1].label, "2024-01-03");
        for (size_t i = 0; i < a_rows + b_rows; i++) {
            long long t = i < a_rows ? TDS_T_0102_1000 + 10LL * (long long)i
                                     : TDS_T_0102_1000 + 8 * 3600 + 10LL * (long long)(i - a_rows);
            cr_assert_eq(s.ds.bars[i].t_s, t, "shift %d bar %zu", shift, i);
            cr_assert_eq(s.ds.bars[i].volume, (double)(i + 1), "shift %d bar %zu", shift, i);
        }
        tds_read_fini(&s);
        tds_assert_same_as_whole(path, NULL, 18, "padded");
    }
}

/* ---- sessions one by one ---- */

/* A one-bar session between longer ones, a weekend gap, and a last session of one bar; the end
 * stays the end. */
Test(data_stream, sessions_one_at_a_time) {
    tds_write("timestamp,open,high,low,close,volume\n"
              "2024-01-02 09:00,1,1,1,1,1\n2024-01-02 17:59,1,1,1,1,2\n" /* 01-02 */
              "2024-01-02 18:00,1,1,1,1,3\n"                             /* 01-03: one bar */
              "2024-01-04 18:00,1,1,1,1,4\n2024-01-05 16:00,1,1,1,1,5\n" /* 01-05 */
              "2024-01-07 18:30,1,1,1,1,6\n"); /* 01-08: one bar, the last */
    struct data_csv_report rep;
    struct data_csv *r = NULL;
    char err[512];
    cr_assert_eq(data_csv_open(tds_path, NULL, 18, &rep, &r, err, sizeof(err)), 0, "%s", err);
    static const struct {
        size_t n;
        const char *label;
    } want[] = {{2, "2024-01-02"}, {1, "2024-01-03"}, {2, "2024-01-05"}, {1, "2024-01-08"}};
    struct data_series ds;
    data_series_init(&ds);
    double vol = 1;
    for (size_t k = 0; k < 4; k++) {
        ds.n = 0; /* the caller keeps what it wants: here only the current session */
        struct data_session s;
        cr_assert_eq(data_csv_next_session(r, &ds, &s, err, sizeof(err)), 1, "%zu: %s", k, err);
        cr_assert_eq(s.first, 0);
        cr_assert_eq(s.n, want[k].n, "session %zu", k);
        cr_assert_str_eq(s.label, want[k].label);
        for (size_t i = 0; i < s.n; i++)
            cr_assert_eq(ds.bars[i].volume, vol++);
    }
    struct data_session s;
    cr_assert_eq(data_csv_next_session(r, &ds, &s, err, sizeof(err)), 0);
    cr_assert_eq(data_csv_next_session(r, &ds, &s, err, sizeof(err)), 0, "the end stays");
    cr_assert_eq(rep.rows_read, 6);
    data_csv_close(r);
    data_series_fini(&ds);
}

/* ---- errors ---- */

/* Read sessions until one fails: how many came, the bars the caller then holds (what the
 * sessions before the error gave: the failed call leaves ds as it found it), and the error. */
static int tds_until_error(const char *path, const struct data_csv_opts *o, size_t *sessions,
                           size_t *bars, char *err, size_t errlen) {
    struct data_csv *r = NULL;
    int rc = data_csv_open(path, o, 18, NULL, &r, err, errlen);
    struct data_series ds;
    data_series_init(&ds);
    *sessions = 0;
    struct data_session s;
    if (rc == 0)
        while ((rc = data_csv_next_session(r, &ds, &s, err, errlen)) == 1)
            ++*sessions;
    *bars = ds.n;
    data_csv_close(r);
    data_series_fini(&ds);
    return rc;
}

/* A bad row in the third session: the two before it come, then the error as the whole-file
 * load gives it, "FILE:LINE: column: reason". */
Test(data_stream, bad_row_after_two_sessions) {
    static const char *const rows[2][2] = {
        {"2024-01-03 18:05,1,1,1,1,1\n2024-01-03 18:00,1,1,1,1,1\n",
         "timestamp: not increasing (2024-01-03 18:00:00 after 2024-01-03 18:05:00)"},
        {"2024-01-03 18:05,1,1,1,1,1\n2024-01-03 18:06,1,x1,1,1,1\n", "high: not a number: \"x1\""},
    };
    for (size_t k = 0; k < 2; k++) {
        char text[512];
        snprintf(text, sizeof(text),
                 "timestamp,open,high,low,close,volume\n2024-01-02 09:00,1,1,1,1,1\n"
                 "2024-01-02 18:00,1,1,1,1,1\n%s2024-01-04 18:00,1,1,1,1,1\n",
                 rows[k][0]);
        const char *path = tds_write(text);
        char err[512], want[1200];
        size_t sessions, bars;
        cr_assert_eq(tds_until_error(path, NULL, &sessions, &bars, err, sizeof(err)), -EINVAL);
        cr_assert_eq(sessions, 2, "%zu sessions before the error", sessions);
        cr_assert_eq(bars, 2, "%zu bars kept", bars);
        snprintf(want, sizeof(want), "%s:5: %s", path, rows[k][1]);
        cr_assert_str_eq(err, want);
        tds_assert_same_as_whole(path, NULL, 18, "bad row"); /* the same message whole */
    }
}

/* A file of two instruments one after the other, and no pick: the first one's complete sessions
 * come, and at the end the error names both with their rows (it needs the whole file). */
Test(data_stream, several_instruments_found_at_the_end) {
    const char *path = tds_write("timestamp,symbol,open,high,low,close,volume\n"
                                 "2024-01-02 09:00,ESH4,1,1,1,1,1\n"
                                 "2024-01-02 18:00,ESH4,1,1,1,1,1\n"
                                 "2024-01-03 09:00,ESH4,1,1,1,1,1\n"
                                 "2024-01-02 09:00,ESM4,1,1,1,1,1\n"
                                 "2024-01-02 18:00,ESM4,1,1,1,1,1\n");
    char err[512], want[1200];
    size_t sessions, bars;
    cr_assert_eq(tds_until_error(path, NULL, &sessions, &bars, err, sizeof(err)), -EINVAL);
    cr_assert_eq(sessions, 1);
    cr_assert_eq(bars, 1);
    snprintf(want, sizeof(want),
             "%s: several instruments: ESH4 (3 rows), ESM4 (2 rows); pick one with --symbol NAME",
             path);
    cr_assert_str_eq(err, want);
    tds_assert_same_as_whole(path, NULL, 18, "several");
}

Test(data_stream, empty_header_only_and_conflicting_flags) {
    char err[512], want[1200];
    static int not_a_reader;
    struct data_csv *r = (struct data_csv *)(void *)&not_a_reader; /* open must clear it */
    const char *path = tds_write("");
    cr_assert_eq(data_csv_open(path, NULL, 18, NULL, &r, err, sizeof(err)), -EINVAL);
    cr_assert_null(r);
    snprintf(want, sizeof(want), "%s: empty file: expected a header row", path);
    cr_assert_str_eq(err, want);
    path = tds_write("timestamp,open,high,low,close,volume\n\n");
    size_t sessions, bars;
    cr_assert_eq(tds_until_error(path, NULL, &sessions, &bars, err, sizeof(err)), -EINVAL);
    cr_assert_eq(sessions + bars, 0);
    snprintf(want, sizeof(want), "%s: no data rows", path);
    cr_assert_str_eq(err, want);
    struct data_csv_opts both = {.symbol = "ESH4", .continuous = true};
    cr_assert_eq(data_csv_open(path, &both, 18, NULL, &r, err, sizeof(err)), -EINVAL);
    cr_assert(strstr(err, "--symbol ESH4 and --continuous front"), "%s", err);
    data_csv_close(NULL);
}

/* Bad rows skipped in several sessions: the report counts them all once the end is reached. */
Test(data_stream, skipped_rows_counted_to_the_end) {
    const char *path = tds_write("timestamp,open,high,low,close,volume\n"
                                 "2024-01-02 09:00,1,1,1,1,1\n2024-01-02 09:01,1,0,1,1,1\n"
                                 "2024-01-02 18:00,1,1,1,1,1\n2024-01-02 18:01,1,1,1,1,-1\n"
                                 "2024-01-03 18:00,1,1,1,1,1\n");
    struct data_csv_opts o = {.skip_bad_rows = true};
    struct tds_read s;
    tds_stream(path, &o, 18, &s);
    cr_assert_eq(s.rc, 0, "%s", s.err);
    cr_assert_eq(s.ss.n, 3);
    cr_assert_eq(s.rep.rows_read, 5);
    cr_assert_eq(s.rep.rows_skipped, 2);
    char want[1200];
    snprintf(want, sizeof(want), "%s:3: high: 0 is below max(open, close) = 1", path);
    cr_assert_str_eq(s.rep.first_skip, want);
    tds_read_fini(&s);
    tds_assert_same_as_whole(path, &o, 18, "skipped");
}
