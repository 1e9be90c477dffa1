/* Unit tests for the data module: CSV loading and writing, sessions, fingerprint, synthetic bars.
 */
#include "backend/data/data_csv.h"
#include "backend/data/data_series.h"
#include "backend/data/data_synth.h"
#include "backend/data/data_time.h"
#include "backend/data/data_tz.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Hand-checked epoch seconds (UTC). */
#define T_0102_1430 1704205800LL /* 2024-01-02 14:30:00 */
#define T_0101_1800 1704132000LL /* 2024-01-01 18:00:00 */
#define DAY_S       86400LL

static char test_data_dir[512];
static char test_data_path[1024];
static char test_data_err[512];
static struct data_series test_data_ds;
static struct data_csv_report test_data_rep;

static void test_data_setup(void) {
    cr_assert_eq(rs_test_tmpdir(test_data_dir, sizeof(test_data_dir)), 0);
    data_series_init(&test_data_ds);
    test_data_err[0] = '\0';
}

static void test_data_teardown(void) {
    data_series_fini(&test_data_ds);
    rs_test_rmtree(test_data_dir);
}

TestSuite(data, .init = test_data_setup, .fini = test_data_teardown);

/* The --tz test_data_load_text gives (NULL: none). */
static const char *test_data_zone;

/* Write text to <tmp>/data.csv and load it. */
static int test_data_load_text(const char *text, bool skip) {
    cr_assert_eq(
        rs_test_write_file(test_data_dir, "data.csv", text, test_data_path, sizeof(test_data_path)),
        0);
    struct data_csv_opts o = {.skip_bad_rows = skip, .tz = test_data_zone};
    return data_csv_load(test_data_path, &o, &test_data_ds, &test_data_rep, test_data_err,
                         sizeof(test_data_err));
}

static int test_data_load_fixture(const char *rel) {
    char path[1024];
    rs_test_fixture(rel, path, sizeof(path));
    return data_csv_load(path, NULL, &test_data_ds, &test_data_rep, test_data_err,
                         sizeof(test_data_err));
}

/* Load text, expect -EINVAL with want in the message and nothing appended. */
static void test_data_expect_error(const char *text, const char *want) {
    int rc = test_data_load_text(text, false);
    cr_assert_eq(rc, -EINVAL, "rc %d, err '%s'", rc, test_data_err);
    cr_assert(strstr(test_data_err, want), "err '%s' lacks '%s'", test_data_err, want);
    cr_assert_eq(test_data_ds.n, 0);
}

#define HDR "timestamp,open,high,low,close,volume\n"
#define ROW "2024-01-02 10:00:00,4700.25,4702.5,4699,4701.75,1234\n"

static void test_data_assert_bar(size_t i, long long t, double o, double h, double l, double c,
                                 double v) {
    const struct data_bar *b = &test_data_ds.bars[i];
    cr_assert_eq(b->t_s, t, "bar %zu t %lld", i, (long long)b->t_s);
    cr_assert_eq(b->open, o);
    cr_assert_eq(b->high, h);
    cr_assert_eq(b->low, l);
    cr_assert_eq(b->close, c);
    cr_assert_eq(b->volume, v);
}

/* ---- parsing ---- */

Test(data, basic_fixture_all_timestamp_forms) {
    cr_assert_eq(test_data_load_fixture("csv/basic.csv"), 0, "%s", test_data_err);
    cr_assert_eq(test_data_ds.n, 3);
    cr_assert_eq(test_data_rep.rows_read, 3);
    cr_assert_eq(test_data_rep.rows_skipped, 0);
    cr_assert_not(test_data_ds.has_vix);
    test_data_assert_bar(0, T_0102_1430, 4700.25, 4702.5, 4699, 4701.75, 1234);
    test_data_assert_bar(1, T_0102_1430 + 60, 4701.75, 4703, 4701.5, 4702, 800);
    test_data_assert_bar(2, T_0102_1430 + 120, 4702, 4702.25, 4698.5, 4699.25, 0);
    cr_assert(isnan(test_data_ds.bars[0].vix));
}

/* The same file gzip- and zstd-compressed, and as two gzip members one after the other (as
 * `cat a.gz b.gz` makes): the same bars, the compression in the log's format. */
#ifdef RS_HAVE_ZLIB
#define TEST_DATA_GZIP true
#else
#define TEST_DATA_GZIP false
#endif
#ifdef RS_HAVE_ZSTD
#define TEST_DATA_ZSTD true
#else
#define TEST_DATA_ZSTD false
#endif

/* A build without the library (zlib1g-dev or libzstd-dev was missing) refuses the file in one
 * line that says what to do; true when it did. */
static bool test_data_refused(const char *file, const char *kind) {
    if (test_data_load_fixture(file) != -EINVAL) /* bad input, as a data error is */
        return false;
    char want[96];
    snprintf(want, sizeof(want), "%s-compressed, and this build reads no %s", kind, kind);
    cr_assert(strstr(test_data_err, want), "%s", test_data_err);
    cr_assert_eq(test_data_ds.n, 0);
    return true;
}

Test(data, compressed_files_read_as_the_plain_one) {
    static const struct {
        const char *file, *format, *kind;
        bool built;
    } files[] = {{"csv/basic.csv.gz", "gzip-compressed", "gzip", TEST_DATA_GZIP},
                 {"csv/basic.csv.zst", "zstd-compressed", "zstd", TEST_DATA_ZSTD},
                 {"csv/basic_members.csv.gz", "gzip-compressed", "gzip", TEST_DATA_GZIP}};
    for (size_t k = 0; k < 3; k++) {
        data_series_fini(&test_data_ds);
        data_series_init(&test_data_ds);
        if (!files[k].built) {
            cr_assert(test_data_refused(files[k].file, files[k].kind), "%s", files[k].file);
            continue;
        }
        cr_assert_eq(test_data_load_fixture(files[k].file), 0, "%s: %s", files[k].file,
                     test_data_err);
        cr_assert_eq(test_data_ds.n, 3, "%s", files[k].file);
        test_data_assert_bar(0, T_0102_1430, 4700.25, 4702.5, 4699, 4701.75, 1234);
        test_data_assert_bar(2, T_0102_1430 + 120, 4702, 4702.25, 4698.5, 4699.25, 0);
        char said[1024];
        data_csv_describe(&test_data_rep, said, sizeof(said));
        cr_assert_str_eq(test_data_rep.compression, files[k].kind);
        cr_assert(strstr(said, files[k].format), "%s: %s", files[k].file, said);
    }
}

/* A gzip file cut short and a zstd file with damaged bytes: input errors naming the file. */
Test(data, damaged_compressed_files_are_input_errors) {
    if (TEST_DATA_GZIP) {
        cr_assert_eq(test_data_load_fixture("csv/truncated.csv.gz"), -EINVAL);
        cr_assert(strstr(test_data_err, "truncated.csv.gz: the gzip data ends early"), "%s",
                  test_data_err);
    } else {
        cr_assert(test_data_refused("csv/truncated.csv.gz", "gzip"));
    }
    if (TEST_DATA_ZSTD) {
        cr_assert_eq(test_data_load_fixture("csv/corrupt.csv.zst"), -EINVAL);
        cr_assert(strstr(test_data_err, "corrupt.csv.zst: corrupt zstd data"), "%s", test_data_err);
    } else {
        cr_assert(test_data_refused("csv/corrupt.csv.zst", "zstd"));
    }
    cr_assert_eq(test_data_ds.n, 0);
}

Test(data, date_time_columns_reordered_case_insensitive_vix_close) {
    cr_assert_eq(test_data_load_fixture("csv/date_time.csv"), 0, "%s", test_data_err);
    cr_assert_eq(test_data_ds.n, 2);
    cr_assert(test_data_ds.has_vix);
    test_data_assert_bar(0, T_0102_1430, 4700.25, 4702.5, 4699, 4701.75, 1500);
    test_data_assert_bar(1, T_0102_1430 + 60, 4701.75, 4703, 4701.5, 4702, 900);
    cr_assert_eq(test_data_ds.bars[0].vix, 17.25);
    cr_assert_eq(test_data_ds.bars[1].vix, 17.5);
}

Test(data, crlf_bom_quoted_fields_and_vix) {
    cr_assert_eq(test_data_load_fixture("csv/crlf_bom_quoted.csv"), 0, "%s", test_data_err);
    cr_assert_eq(test_data_ds.n, 2);
    cr_assert(test_data_ds.has_vix);
    test_data_assert_bar(0, T_0102_1430, 4700.25, 4702.5, 4699, 4701.75, 1234);
    test_data_assert_bar(1, T_0102_1430 + 60, 4701.75, 4703, 4701.5, 4702, 800);
    cr_assert_eq(test_data_ds.bars[0].vix, 13.5);
    cr_assert_eq(test_data_ds.bars[1].vix, 14);
}

Test(data, datetime_header_and_blank_lines) {
    cr_assert_eq(test_data_load_text("\nDateTime,Open,High,Low,Close,Volume,VIX\n\n"
                                     "2024-01-02 14:30,1,2,0.5,1.5,7,20.5\n  \n",
                                     false),
                 0, "%s", test_data_err);
    cr_assert_eq(test_data_ds.n, 1);
    test_data_assert_bar(0, T_0102_1430, 1, 2, 0.5, 1.5, 7);
    cr_assert_eq(test_data_ds.bars[0].vix, 20.5);
}

Test(data, stdin_dash) {
    cr_assert_eq(rs_test_write_file(test_data_dir, "in.csv", HDR ROW, test_data_path,
                                    sizeof(test_data_path)),
                 0);
    cr_assert_not_null(freopen(test_data_path, "r", stdin));
    cr_assert_eq(
        data_csv_load("-", NULL, &test_data_ds, NULL, test_data_err, sizeof(test_data_err)), 0,
        "%s", test_data_err);
    cr_assert_eq(test_data_ds.n, 1);
    cr_assert_eq(test_data_ds.bars[0].t_s, T_0102_1430 - 4 * 3600 - 1800);
}

Test(data, numbers_ignore_lc_numeric) {
    if (!setlocale(LC_NUMERIC, "de_DE.UTF-8") && !setlocale(LC_NUMERIC, "fr_FR.UTF-8"))
        cr_skip_test("no locale with a decimal comma installed");
    cr_assert_eq(test_data_load_text(HDR ROW, false), 0, "%s", test_data_err);
    cr_assert_eq(test_data_ds.bars[0].open, 4700.25);
    snprintf(test_data_path, sizeof(test_data_path), "%s/out.csv", test_data_dir);
    cr_assert_eq(
        data_csv_write(test_data_path, &test_data_ds, test_data_err, sizeof(test_data_err)), 0);
    FILE *f = fopen(test_data_path, "r");
    cr_assert_not_null(f);
    char buf[256] = "";
    buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
    fclose(f);
    cr_assert(strstr(buf, ",4700.25,4702.5,4699,4701.75,1234\n"), "%s", buf);
}

/* ---- timestamps ---- */

/* s parses (unit AUTO) to the instant t_s + ns of the given form. */
static void test_data_time(const char *s, int64_t t_s, int32_t ns, enum data_time_form form) {
    struct data_time t;
    char why[256];
    cr_assert_eq(data_time_parse(s, DATA_TIME_AUTO, &t, why, sizeof(why)), 0, "'%s': %s", s, why);
    cr_assert_eq(t.t_s, t_s, "'%s': %lld", s, (long long)t.t_s);
    cr_assert_eq(t.ns, ns, "'%s': ns %d", s, t.ns);
    cr_assert_eq(t.form, form, "'%s': form %d", s, t.form);
}

Test(data, parse_timestamp_accepts) {
    test_data_time("2024-01-02 14:30:00", T_0102_1430, 0, DATA_TIME_WALL);
    test_data_time("2024-01-02T14:30", T_0102_1430, 0, DATA_TIME_WALL);
    test_data_time("2024-02-29 00:00", 1709164800LL, 0, DATA_TIME_WALL);   /* leap day */
    test_data_time("2000-02-29 23:59:59", 951868799LL, 0, DATA_TIME_WALL); /* 400-year leap */
    test_data_time("20240102 143000", T_0102_1430, 0, DATA_TIME_WALL);     /* NinjaTrader */
    test_data_time("20240102 143000 1234567", T_0102_1430, 123456700, DATA_TIME_WALL);
    /* ISO 8601 with an offset is an instant: 08:30 at -06:00 is 14:30 UTC, whatever --tz says */
    static const char *const utc[] = {"2024-01-02T14:30:00Z",      "2024-01-02 14:30:00Z",
                                      "2024-01-02T14:30:00+00:00", "2024-01-02T08:30:00-06:00",
                                      "2024-01-02T09:30-05:00",    "2024-01-02T20:00:00+0530",
                                      "2024-01-03T00:30:00+10"};
    for (size_t i = 0; i < sizeof(utc) / sizeof(utc[0]); i++)
        test_data_time(utc[i], T_0102_1430, 0, DATA_TIME_OFFSET);
    test_data_time("2024-01-02T14:30:00.000000000Z", T_0102_1430, 0, DATA_TIME_OFFSET);
    test_data_time("2024-01-02T14:30:00.999Z", T_0102_1430, 999000000, DATA_TIME_OFFSET);
    /* epoch integers by their digits */
    test_data_time("1704205800", T_0102_1430, 0, DATA_TIME_EPOCH);
    test_data_time("1704205800123", T_0102_1430, 123000000, DATA_TIME_EPOCH);
    test_data_time("1704205800123456", T_0102_1430, 123456000, DATA_TIME_EPOCH);
    test_data_time("1704205800123456789", T_0102_1430, 123456789, DATA_TIME_EPOCH);
    test_data_time("100000000", 100000000, 0, DATA_TIME_EPOCH);        /* 1973-03-03: the least */
    test_data_time("-100000000", -100000000, 0, DATA_TIME_EPOCH);      /* 1966, before 1970 */
    test_data_time("-1500000000000", -1500000000, 0, DATA_TIME_EPOCH); /* ms before 1970 */
    test_data_time("-1500000000001", -1500000001, 999000000, DATA_TIME_EPOCH); /* floored */
    /* dates: daily bars */
    test_data_time("2024-01-02", T_0102_1430 - 52200, 0, DATA_TIME_DATE);
    test_data_time("20240102", T_0102_1430 - 52200, 0, DATA_TIME_DATE);
}

/* The unit of an integer: told by its digits, or forced; each unit's name. */
Test(data, parse_timestamp_units) {
    struct data_time t;
    static const struct {
        const char *text;
        enum data_time_unit unit;
    } units[] = {{"1704205800", DATA_TIME_S},
                 {"1704205800000", DATA_TIME_MS},
                 {"1704205800000000", DATA_TIME_US},
                 {"1704205800000000000", DATA_TIME_NS}};
    for (size_t i = 0; i < 4; i++) {
        cr_assert_eq(data_time_parse(units[i].text, DATA_TIME_AUTO, &t, NULL, 0), 0);
        cr_assert_eq(t.unit, units[i].unit, "%s", units[i].text);
        cr_assert_eq(t.t_s, T_0102_1430);
    }
    /* forced: the same digits in another unit; a date-like integer read as the unit says */
    cr_assert_eq(data_time_parse("1704205800000", DATA_TIME_S, &t, NULL, 0), -EINVAL,
                 "seconds past year 9999");
    cr_assert_eq(data_time_parse("42", DATA_TIME_S, &t, NULL, 0), 0);
    cr_assert_eq(t.t_s, 42);
    cr_assert_eq(data_time_parse("20240102", DATA_TIME_S, &t, NULL, 0), 0);
    cr_assert_eq(t.t_s, 20240102);
    cr_assert_eq(t.form, DATA_TIME_EPOCH);
    cr_assert_eq(data_time_parse("1704205800", DATA_TIME_MS, &t, NULL, 0), 0);
    cr_assert_eq(t.t_s, 1704205);
    cr_assert_eq(t.ns, 800000000);
    enum data_time_unit u;
    cr_assert_eq(data_time_unit_parse("ns", &u), 0);
    cr_assert_eq(u, DATA_TIME_NS);
    cr_assert_eq(data_time_unit_parse("us", &u), 0);
    cr_assert_eq(u, DATA_TIME_US);
    cr_assert_eq(data_time_unit_parse("min", &u), -EINVAL);
    cr_assert_str_eq(data_time_unit_name(DATA_TIME_MS), "milliseconds");
}

Test(data, parse_timestamp_rejects) {
    static const char *bad[] = {
        "2024-02-30 10:00",
        "2023-02-29 10:00",
        "1900-02-29 10:00",
        "2024-04-31 10:00",
        "2024-13-01 10:00",
        "2024-00-01 10:00",
        "2024-01-00 10:00",
        "2024-01-02 24:00",
        "2024-01-02 10:60",
        "2024-01-02 10:00:60",
        "2024-01-02 10:00:0x",
        "2024-01-02 10:00:00+24:00",
        "2024-01-02 10:00:00+01:60",
        "2024-01-02 10:00:00+1",
        "2024-01-02 10:00:00 +01:00",
        "2024-01-02 10:00:00.Z",
        "2024-01-02 10:00:00.1234567890Z",
        "2024-01-02 10:00:00Zx",
        "2024-01-02 10:00.5",
        "2024-01-0",
        "20240230 100000",
        "20240102 240000",
        "20240102 100000 123456",
        "2024010 1000000",
        "2024/01/02 10:00",
        "",
        "-",
        "12a",
        "1.5",
        " 2024-01-02 10:00",
        "2024-1-2 10:00:00",
        /* integers that are no time: too few digits for an epoch time, not a date */
        "0",
        "42",
        "99999999",
        "20241301",
        "12345678901234567890",
        "9223372036854775808",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct data_time t = {.t_s = 42};
        cr_assert_eq(data_time_parse(bad[i], DATA_TIME_AUTO, &t, NULL, 0), -EINVAL, "'%s' accepted",
                     bad[i]);
        cr_assert_eq(t.t_s, 42);
    }
    /* the reason an integer is refused names the flag that reads it */
    struct data_time t;
    char why[512];
    cr_assert_eq(data_time_parse("42", DATA_TIME_AUTO, &t, why, sizeof(why)), -EINVAL);
    cr_assert(strstr(why, "--time-unit"), "%s", why);
}

/* ---- the exports people have ---- */

/* text loads as two bars, the first at 14:30 (4700.25, 4701, 4699.5, 4700.5, 120), and the
 * layout recognised is format. */
static void test_data_expect_export(const char *text, const char *format) {
    cr_assert_eq(test_data_load_text(text, false), 0, "%s", test_data_err);
    cr_assert_eq(test_data_ds.n, 2);
    test_data_assert_bar(0, T_0102_1430, 4700.25, 4701, 4699.5, 4700.5, 120);
    cr_assert_str_eq(test_data_rep.format, format);
}

/* TradingView's chart export: time in epoch seconds, Volume capitalised, indicator columns. */
Test(data, tradingview_export) {
    test_data_expect_export("time,open,high,low,close,Volume,Plot\n"
                            "1704205800,4700.25,4701,4699.5,4700.5,120,1\n"
                            "1704205860,4700.5,4702,4700,4701.75,80,2\n",
                            "TradingView chart export");
}

/* Databento's OHLCV-1m CSV (pretty timestamps), as its docs describe the schema: ts_event in
 * ISO 8601 UTC with nanoseconds, rtype, publisher_id, instrument_id, the prices, volume and
 * symbol; several instruments in one file. */
#define DBN_HDR          "ts_event,rtype,publisher_id,instrument_id,open,high,low,close,volume,symbol\n"
#define DBN_ROW(ts, sym) ts ",33,1,5002,4700.25,4701,4699.5,4700.5,120," sym "\n"
static int test_data_load_symbol(const char *text, const char *symbol) {
    cr_assert_eq(
        rs_test_write_file(test_data_dir, "data.csv", text, test_data_path, sizeof(test_data_path)),
        0);
    struct data_csv_opts o = {.symbol = symbol};
    return data_csv_load(test_data_path, &o, &test_data_ds, &test_data_rep, test_data_err,
                         sizeof(test_data_err));
}

Test(data, databento_one_instrument) {
    cr_assert_eq(test_data_load_symbol(DBN_HDR DBN_ROW("2024-01-02T14:30:00.000000000Z", "ESH4")
                                           DBN_ROW("2024-01-02T14:31:00.000000000Z", "ESH4"),
                                       NULL),
                 0, "%s", test_data_err);
    cr_assert_eq(test_data_ds.n, 2);
    test_data_assert_bar(0, T_0102_1430, 4700.25, 4701, 4699.5, 4700.5, 120);
    cr_assert_str_eq(test_data_rep.format, "Databento ohlcv-1m");
}

#define DBN_MIXED                                                                                  \
    DBN_HDR DBN_ROW("2024-01-02T14:30:00.000000000Z", "ESH4")                                      \
        DBN_ROW("2024-01-02T14:30:00.000000000Z", "ESM4")                                          \
            DBN_ROW("2024-01-02T14:30:00.000000000Z", "ESH4-ESM4")                                 \
                DBN_ROW("2024-01-02T14:31:00.000000000Z", "ESH4")                                  \
                    DBN_ROW("2024-01-02T14:32:00.000000000Z", "ESH4")

Test(data, databento_several_instruments_need_a_pick) {
    cr_assert_eq(test_data_load_symbol(DBN_MIXED, NULL), -EINVAL);
    cr_assert(strstr(test_data_err, "data.csv: several instruments: ESH4 (3 rows), ESM4 (1 "
                                    "rows), ESH4-ESM4 (1 rows); pick one with --symbol NAME"),
              "%s", test_data_err);
    cr_assert_eq(test_data_ds.n, 0, "nothing kept from a refused file");
}

Test(data, databento_symbol_picks_one_instrument) {
    cr_assert_eq(test_data_load_symbol(DBN_MIXED, "ESH4"), 0, "%s", test_data_err);
    cr_assert_eq(test_data_ds.n, 3);
    cr_assert_eq(test_data_rep.rows_other, 2);
    cr_assert_eq(test_data_ds.bars[2].t_s, T_0102_1430 + 120);
    data_series_fini(&test_data_ds);
    data_series_init(&test_data_ds);
    cr_assert_eq(test_data_load_symbol(DBN_MIXED, "NQH4"), -EINVAL);
    cr_assert(strstr(test_data_err, "data.csv: no rows of NQH4 (the file has ESH4 (3 rows)"), "%s",
              test_data_err);
    cr_assert_eq(test_data_load_symbol(HDR ROW, "ESH4"), -EINVAL);
    cr_assert(strstr(test_data_err, "data.csv:1: header: no 'symbol' column to pick ESH4 from"),
              "%s", test_data_err);
}

/* Three days of two contracts and their spread, a bar each a day: ESH4 leads on the first
 * day, ESM4 passes it on the second, so the third day's bar is ESM4's. */
#define ROLL_ROW(day, px, vol, sym)                                                                \
    "2024-03-0" day "T14:30:00.000000000Z,33,1,1," px "," px "," px "," px "," vol "," sym "\n"
#define ROLL_FILE                                                                                  \
    DBN_HDR ROLL_ROW("6", "100", "900", "ESH4") ROLL_ROW("6", "101", "90", "ESM4")                 \
        ROLL_ROW("6", "1", "5", "ESH4-ESM4") ROLL_ROW("7", "102", "500", "ESH4")                   \
            ROLL_ROW("7", "103", "700", "ESM4") ROLL_ROW("8", "104", "100", "ESH4")                \
                ROLL_ROW("8", "105", "800", "ESM4")

Test(data, continuous_front_month_rolls_by_volume) {
    cr_assert_eq(rs_test_write_file(test_data_dir, "data.csv", ROLL_FILE, test_data_path,
                                    sizeof(test_data_path)),
                 0);
    /* integer prices in a Databento layout are its fixed point unless --price-scale says */
    struct data_csv_opts o = {.continuous = true, .price_scale = "1"};
    cr_assert_eq(data_csv_load(test_data_path, &o, &test_data_ds, &test_data_rep, test_data_err,
                               sizeof(test_data_err)),
                 0, "%s", test_data_err);
    cr_assert_eq(test_data_ds.n, 3);
    static const double close[3] = {100, 102, 105}; /* ESH4, ESH4, then ESM4 */
    for (size_t i = 0; i < 3; i++)
        cr_assert_eq(test_data_ds.bars[i].close, close[i], "bar %zu: %g", i,
                     test_data_ds.bars[i].close);
    cr_assert_eq(test_data_rep.n_rolls, 1);
    cr_assert_str_eq(test_data_rep.roll[0].from, "ESH4");
    cr_assert_str_eq(test_data_rep.roll[0].to, "ESM4");
    cr_assert_eq(test_data_rep.roll[0].day_s, data_days_from_civil(2024, 3, 7) * DAY_S);
    cr_assert_eq(test_data_rep.roll[0].to_volume, 700);
    cr_assert_eq(test_data_rep.rows_other, 1, "the spread is left out");
    /* a file of one instrument, and a pick with the roll: one-line refusals */
    data_series_fini(&test_data_ds);
    data_series_init(&test_data_ds);
    cr_assert_eq(rs_test_write_file(test_data_dir, "one.csv", HDR ROW, test_data_path,
                                    sizeof(test_data_path)),
                 0);
    cr_assert_eq(data_csv_load(test_data_path, &o, &test_data_ds, &test_data_rep, test_data_err,
                               sizeof(test_data_err)),
                 -EINVAL);
    cr_assert(strstr(test_data_err, "no 'symbol' column to roll between"), "%s", test_data_err);
    o.symbol = "ESH4";
    cr_assert_eq(data_csv_load(test_data_path, &o, &test_data_ds, &test_data_rep, test_data_err,
                               sizeof(test_data_err)),
                 -EINVAL);
    cr_assert(strstr(test_data_err, "--symbol ESH4 and --continuous front: give one"), "%s",
              test_data_err);
}

/* NinjaTrader's export: no header, "yyyyMMdd HHmmss;open;high;low;close;volume". */
Test(data, ninjatrader_headerless) {
    test_data_zone = "UTC"; /* its files say nothing of their zone */
    /* stamped at their end: the 14:31 line is the bar that opened at 14:30 */
    test_data_expect_export("20240102 143100;4700.25;4701;4699.5;4700.5;120\n"
                            "20240102 143200;4700.5;4702;4700;4701.75;80\n",
                            "NinjaTrader minute export (bars stamped at their end)");
    data_series_fini(&test_data_ds); /* the errors below start from nothing */
    data_series_init(&test_data_ds);
    test_data_expect_error("20240102 143000;4700.25;4701;4699.5;4700.5;120\n"
                           "20240102 143100;4700.5;4699;4700;4701.75;80\n",
                           "data.csv:2: high: 4699 is below max(open, close) = 4701.75");
    test_data_expect_error("20240102 143000;4700.25;4701;4699.5;4700.5\n",
                           "data.csv:1: row: 5 fields, NinjaTrader's rows have 6");
}

/* A file without a header, its columns named (--columns): commas or semicolons. */
static int test_data_load_columns(const char *text, const char *columns) {
    cr_assert_eq(
        rs_test_write_file(test_data_dir, "data.csv", text, test_data_path, sizeof(test_data_path)),
        0);
    struct data_csv_opts o = {.columns = columns};
    return data_csv_load(test_data_path, &o, &test_data_ds, &test_data_rep, test_data_err,
                         sizeof(test_data_err));
}

Test(data, headerless_with_named_columns) {
    cr_assert_eq(test_data_load_columns("2024-01-02 14:30:00,4700.25,4701,4699.5,4700.5,120,x\n"
                                        "2024-01-02 14:31:00,4700.5,4702,4700,4701.75,80,y\n",
                                        "timestamp,open,high,low,close,volume,_"),
                 0, "%s", test_data_err);
    cr_assert_eq(test_data_ds.n, 2);
    test_data_assert_bar(0, T_0102_1430, 4700.25, 4701, 4699.5, 4700.5, 120);
    cr_assert_str_eq(test_data_rep.format, "CSV without a header (--columns)");
    data_series_fini(&test_data_ds);
    data_series_init(&test_data_ds);
    cr_assert_eq(test_data_load_columns("1704205800;4700.25;4701;4699.5;4700.5;120\n",
                                        "time,open,high,low,close,volume"),
                 0, "%s", test_data_err);
    cr_assert_eq(test_data_ds.bars[0].t_s, T_0102_1430);
    cr_assert_eq(test_data_load_columns(ROW, "timestamp,open,high,low,close,vol"), -EINVAL);
    cr_assert(strstr(test_data_err, "--columns: unknown column 'vol'"), "%s", test_data_err);
    cr_assert_eq(test_data_load_columns(ROW, "timestamp,open,high,low,_,volume"), -EINVAL);
    cr_assert(strstr(test_data_err, "--columns: missing required column 'close'"), "%s",
              test_data_err);
}

/* ---- time zones (the system's zone files: tzdata) ---- */

#define T_LOCAL(y, mo, d, h, mi) (data_days_from_civil(y, mo, d) * DAY_S + (h)*3600 + (mi)*60)

static struct data_tz *test_data_tz(const char *name) {
    struct data_tz *tz = NULL;
    cr_assert_eq(data_tz_open(name, &tz, test_data_err, sizeof(test_data_err)), 0, "%s",
                 test_data_err);
    return tz;
}

/* Chicago: CST -6 h, CDT -5 h from the second Sunday of March 02:00 to the first Sunday of
 * November 02:00; in 2045 (past the zone file's listed transitions) the file's rule says the
 * same. */
Test(data, tz_offsets_and_the_rule_past_the_listed_years) {
    struct data_tz *tz = test_data_tz("America/Chicago");
    cr_assert_eq(data_tz_offset(tz, T_LOCAL(2024, 1, 15, 12, 0)), -6 * 3600);
    cr_assert_eq(data_tz_offset(tz, T_LOCAL(2024, 7, 1, 12, 0)), -5 * 3600);
    cr_assert_eq(data_tz_offset(tz, T_LOCAL(2045, 7, 1, 12, 0)), -5 * 3600);
    cr_assert_eq(data_tz_offset(tz, T_LOCAL(2045, 12, 1, 12, 0)), -6 * 3600);
    /* 2045-03-12 is the second Sunday of March: 08:00 UTC is 02:00 CST, the change */
    cr_assert_eq(data_tz_offset(tz, T_LOCAL(2045, 3, 12, 7, 59)), -6 * 3600);
    cr_assert_eq(data_tz_offset(tz, T_LOCAL(2045, 3, 12, 8, 0)), -5 * 3600);
    data_tz_close(tz);
    tz = test_data_tz("Australia/Sydney"); /* the south: daylight saving over the new year */
    cr_assert_eq(data_tz_offset(tz, T_LOCAL(2045, 1, 15, 0, 0)), 11 * 3600);
    cr_assert_eq(data_tz_offset(tz, T_LOCAL(2045, 7, 15, 0, 0)), 10 * 3600);
    data_tz_close(tz);
}

Test(data, tz_local_times_across_both_changes) {
    struct data_tz *tz = test_data_tz("America/Chicago");
    int64_t u = 0;
    cr_assert_eq(data_tz_to_utc(tz, T_LOCAL(2024, 3, 10, 1, 59), INT64_MIN, &u), 0);
    cr_assert_eq(u, T_LOCAL(2024, 3, 10, 7, 59));
    cr_assert_eq(data_tz_to_utc(tz, T_LOCAL(2024, 3, 10, 2, 30), INT64_MIN, &u), -ERANGE,
                 "02:30 was skipped");
    cr_assert_eq(data_tz_to_utc(tz, T_LOCAL(2024, 3, 10, 3, 0), INT64_MIN, &u), 0);
    cr_assert_eq(u, T_LOCAL(2024, 3, 10, 8, 0));
    /* 01:30 on 2024-11-03 happens twice: CDT (06:30 UTC), then CST (07:30 UTC) */
    cr_assert_eq(data_tz_to_utc(tz, T_LOCAL(2024, 11, 3, 1, 30), INT64_MIN, &u), 0);
    cr_assert_eq(u, T_LOCAL(2024, 11, 3, 6, 30));
    cr_assert_eq(data_tz_to_utc(tz, T_LOCAL(2024, 11, 3, 1, 30), T_LOCAL(2024, 11, 3, 6, 59), &u),
                 0);
    cr_assert_eq(u, T_LOCAL(2024, 11, 3, 7, 30));
    data_tz_close(tz);
}

Test(data, tz_names_that_are_refused) {
    struct data_tz *tz = NULL;
    cr_assert_eq(data_tz_open("America/Chicgo", &tz, test_data_err, sizeof(test_data_err)),
                 -ENOENT);
    cr_assert(strstr(test_data_err, "--tz America/Chicgo: no such zone"), "%s", test_data_err);
    cr_assert_eq(data_tz_open("../../etc/passwd", &tz, test_data_err, sizeof(test_data_err)),
                 -EINVAL);
    cr_assert_eq(data_tz_open("/etc/passwd", &tz, test_data_err, sizeof(test_data_err)), -EINVAL);
    cr_assert_null(tz);
}

/* A NinjaTrader file in Chicago time over the night the clocks go back: 01:00 and 01:30 twice,
 * every bar an hour or half an hour after the last in UTC, and starting a minute before its
 * stamp (NinjaTrader stamps a bar with its end). */
Test(data, csv_local_times_with_tz) {
    cr_assert_eq(rs_test_write_file(
                     test_data_dir, "data.csv",
                     "20241103 003000;100;101;99;100.5;1\n20241103 010000;100;101;99;100.5;1\n"
                     "20241103 013000;100;101;99;100.5;1\n20241103 010000;100;101;99;100.5;1\n"
                     "20241103 013000;100;101;99;100.5;1\n20241103 020000;100;101;99;100.5;1\n",
                     test_data_path, sizeof(test_data_path)),
                 0);
    struct data_csv_opts o = {.tz = "America/Chicago"};
    cr_assert_eq(data_csv_load(test_data_path, &o, &test_data_ds, &test_data_rep, test_data_err,
                               sizeof(test_data_err)),
                 0, "%s", test_data_err);
    cr_assert_eq(test_data_ds.n, 6);
    static const int64_t utc[6][2] = {{5, 30}, {6, 0}, {6, 30}, {7, 0}, {7, 30}, {8, 0}};
    for (size_t i = 0; i < 6; i++)
        cr_assert_eq(test_data_ds.bars[i].t_s, T_LOCAL(2024, 11, 3, utc[i][0], utc[i][1]) - 60,
                     "bar %zu", i);
    char said[1024];
    data_csv_describe(&test_data_rep, said, sizeof(said));
    cr_assert(strstr(said, "times local to America/Chicago"), "%s", said);
    data_series_fini(&test_data_ds);
    data_series_init(&test_data_ds);
    cr_assert_eq(rs_test_write_file(test_data_dir, "data.csv",
                                    "timestamp,open,high,low,close,volume\n"
                                    "2024-03-10 01:30:00,100,101,99,100.5,1\n"
                                    "2024-03-10 02:30:00,100,101,99,100.5,1\n",
                                    test_data_path, sizeof(test_data_path)),
                 0);
    cr_assert_eq(data_csv_load(test_data_path, &o, &test_data_ds, &test_data_rep, test_data_err,
                               sizeof(test_data_err)),
                 -EINVAL);
    cr_assert(strstr(test_data_err, "data.csv:3: timestamp: 2024-03-10 02:30:00 does not exist in "
                                    "America/Chicago (the clocks went forward)"),
              "%s", test_data_err);
}

/* ---- validation errors ---- */

Test(data, error_high_below_max) {
    test_data_expect_error(HDR ROW "2024-01-02 10:01:00,4700,4701.25,4699,4702.5,5\n",
                           "data.csv:3: high: 4701.25 is below max(open, close) = 4702.5");
}

Test(data, error_low_above_min) {
    test_data_expect_error(HDR ROW "2024-01-02 10:01:00,4700,4703,4700.5,4702.5,5\n",
                           "data.csv:3: low: 4700.5 is above min(open, close) = 4700");
}

Test(data, error_volume_not_a_number) {
    test_data_expect_error(HDR "2024-01-02 10:01:00,1,2,0.5,1.5,12a\n",
                           "data.csv:2: volume: not a number: \"12a\"");
}

Test(data, error_volume_range) {
    test_data_expect_error(HDR "2024-01-02 10:01:00,1,2,0.5,1.5,-1\n",
                           "data.csv:2: volume: -1 is below 0");
    data_series_fini(&test_data_ds);
    test_data_expect_error(HDR "2024-01-02 10:01:00,1,2,0.5,1.5,2e12\n",
                           "data.csv:2: volume: 2000000000000 is above the maximum");
    data_series_fini(&test_data_ds);
    cr_assert_eq(test_data_load_text(HDR "2024-01-02 10:01:00,1,2,0.5,1.5,1e12\n", false), 0);
}

Test(data, error_non_finite_and_garbage_numbers) {
    test_data_expect_error(HDR "2024-01-02 10:01:00,nan,2,0.5,1.5,1\n",
                           "data.csv:2: open: not a number: \"nan\"");
    test_data_expect_error(HDR "2024-01-02 10:01:00,1,inf,0.5,1.5,1\n",
                           "data.csv:2: high: not a number: \"inf\"");
    test_data_expect_error(HDR "2024-01-02 10:01:00,1,2,,1.5,1\n", "data.csv:2: low: empty field");
    test_data_expect_error(HDR "2024-01-02 10:01:00,1,2,0.5,1.5x,1\n",
                           "data.csv:2: close: not a number: \"1.5x\"");
    test_data_expect_error(HDR "2024-01-02 10:01:00,1,1e999,0.5,1.5,1\n",
                           "data.csv:2: high: out of range: \"1e999\"");
    test_data_expect_error(HDR "2024-01-02 10:01:00,0x10,20,0.5,1.5,1\n",
                           "data.csv:2: open: not a number: \"0x10\"");
    test_data_expect_error(HDR "2024-01-02 10:01:00,1,2,0,5,1.5,1\n",
                           "data.csv:2: row: 7 fields, the header has 6");
}

Test(data, error_vix_column) {
    test_data_expect_error("timestamp,open,high,low,close,volume,vix\n"
                           "2024-01-02 10:01:00,1,2,0.5,1.5,1,abc\n",
                           "data.csv:2: vix: not a number: \"abc\"");
}

Test(data, error_timestamp_not_increasing) {
    test_data_expect_error(HDR "2024-01-02 10:00:00,1,2,0.5,1.5,1\n"
                               "2024-01-02 10:01:00,1,2,0.5,1.5,1\n"
                               "2024-01-02 10:02:00,1,2,0.5,1.5,1\n"
                               "2024-01-02 10:03:00,1,2,0.5,1.5,1\n"
                               "2024-01-02 10:04:00,1,2,0.5,1.5,1\n"
                               "\n"
                               "2024-01-02 10:06:00,1,2,0.5,1.5,1\n"
                               "2024-01-02 10:05:00,1,2,0.5,1.5,1\n",
                           "data.csv:9: timestamp: not increasing (2024-01-02 10:05:00 after "
                           "2024-01-02 10:06:00)");
    test_data_expect_error(HDR ROW ROW, "data.csv:3: timestamp: not increasing");
}

Test(data, error_bad_timestamp_and_date_time) {
    test_data_expect_error(HDR "2024-02-30 10:00:00,1,2,0.5,1.5,1\n",
                           "data.csv:2: timestamp: bad timestamp \"2024-02-30 10:00:00\"");
    test_data_expect_error("date,time,open,high,low,close,volume\n2024-01-02,25:00,1,2,0.5,1.5,1\n",
                           "data.csv:2: date+time: bad timestamp \"2024-01-02 25:00\"");
}

Test(data, error_quoting) {
    test_data_expect_error(HDR "\"2024-01-02 10:00:00,1,2,0.5,1.5,1\n\",,,,,\n",
                           "data.csv:2: row: unterminated quoted field");
    test_data_expect_error(HDR "\"2024-01-02 10:00:00\"x,1,2,0.5,1.5,1\n",
                           "data.csv:2: row: text after the closing quote");
}

Test(data, error_empty_header_only_and_missing_columns) {
    test_data_expect_error("", "data.csv: empty file: expected a header row");
    test_data_expect_error("\n \n", "data.csv: empty file: expected a header row");
    test_data_expect_error(HDR, "data.csv: no data rows");
    test_data_expect_error("timestamp,open,high,low,volume\n" ROW,
                           "data.csv:1: header: missing required column 'close'");
    test_data_expect_error("day,open,high,low,close,volume\n" ROW,
                           "data.csv:1: header: missing required column 'timestamp'");
    test_data_expect_error("date,open,high,low,close,volume\n2024-01-02,1,2,0.5,1.5,10\n",
                           "data.csv:2: timestamp: 2024-01-02 is a date without a time of day: "
                           "daily bars have no intraday profile");
    test_data_expect_error(ROW ROW, "data.csv:1: header: missing required columns 'timestamp', "
                                    "'open', 'high', 'low', 'close', 'volume' (the first row "
                                    "looks like data");
}

Test(data, error_unreadable_file) {
    snprintf(test_data_path, sizeof(test_data_path), "%s/nope.csv", test_data_dir);
    int rc = data_csv_load(test_data_path, NULL, &test_data_ds, NULL, test_data_err,
                           sizeof(test_data_err));
    cr_assert_eq(rc, -ENOENT);
    char want[1200];
    snprintf(want, sizeof(want), "cannot open %s: %s", test_data_path, strerror(ENOENT));
    cr_assert_str_eq(test_data_err, want);
}

/* A line of exactly n bytes (terminator excluded) that is a valid row with a padding column. */
static char *test_data_padded(size_t n, const char *eol) {
    const char *hdr = "timestamp,open,high,low,close,volume,pad\n";
    const char *row = "2024-01-02 10:00:00,1,2,0.5,1.5,1,";
    size_t h = strlen(hdr), r = strlen(row), e = strlen(eol);
    char *s = malloc(h + n + e + 1);
    cr_assert_not_null(s);
    memcpy(s, hdr, h);
    memcpy(s + h, row, r);
    memset(s + h + r, 'x', n - r);
    memcpy(s + h + n, eol, e + 1);
    return s;
}

Test(data, line_length_limit) {
    char *ok = test_data_padded(1048576, "\r\n");
    cr_assert_eq(test_data_load_text(ok, false), 0, "%s", test_data_err);
    cr_assert_eq(test_data_ds.n, 1);
    free(ok);
    data_series_fini(&test_data_ds);
    char *over = test_data_padded(1048577, "\n");
    test_data_expect_error(over, "data.csv:2: line longer than 1048576 bytes");
    free(over);
    char *huge = test_data_padded(10u << 20, "\n");
    test_data_expect_error(huge, "data.csv:2: line longer than 1048576 bytes");
    free(huge);
}

Test(data, skip_bad_rows_counts_and_keeps_first) {
    int rc = test_data_load_text(HDR "2024-01-02 10:00:00,1,2,0.5,1.5,1\n"
                                     "2024-01-02 10:01:00,1,2,0.5,1.5,oops\n"
                                     "2024-01-02 10:02:00,1,2,0.5,1.5,3\n"
                                     "2024-01-02 10:01:30,1,2,0.5,1.5,4\n"
                                     "2024-01-02 10:03:00,1,2,0.5,1.5,5\n",
                                 true);
    cr_assert_eq(rc, 0, "%s", test_data_err);
    cr_assert_eq(test_data_rep.rows_read, 5);
    cr_assert_eq(test_data_rep.rows_skipped, 2);
    cr_assert(strstr(test_data_rep.first_skip, "data.csv:3: volume: not a number: \"oops\""), "%s",
              test_data_rep.first_skip);
    cr_assert_eq(test_data_ds.n, 3);
    cr_assert_eq(test_data_ds.bars[0].volume, 1);
    cr_assert_eq(test_data_ds.bars[1].volume, 3);
    cr_assert_eq(test_data_ds.bars[2].volume, 5);
}

Test(data, skip_bad_rows_all_bad) {
    int rc = test_data_load_text(HDR "2024-01-02 10:00:00,1,2,0.5,1.5,x\n", true);
    cr_assert_eq(rc, -EINVAL);
    cr_assert(strstr(test_data_err, "data.csv: no valid data rows (1 skipped; first:"), "%s",
              test_data_err);
    cr_assert_eq(test_data_ds.n, 0);
}

/* ---- sessions ---- */

static void test_data_push_times(const long long *t, size_t n) {
    for (size_t i = 0; i < n; i++) {
        struct data_bar b = {.t_s = t[i], .open = 1, .high = 1, .low = 1, .close = 1, .vix = NAN};
        cr_assert_eq(data_series_push(&test_data_ds, &b), 0);
    }
}

static void test_data_assert_session(const struct data_sessions *ss, size_t k, size_t first,
                                     size_t n, const char *label) {
    cr_assert_lt(k, ss->n);
    cr_assert_eq(ss->s[k].first, first, "session %zu first %zu", k, ss->s[k].first);
    cr_assert_eq(ss->s[k].n, n, "session %zu n %zu", k, ss->s[k].n);
    cr_assert_str_eq(ss->s[k].label, label);
}

Test(data, sessions_start_hour_18) {
    const long long t[] = {
        T_0101_1800,                         /* Mon 18:00 exactly: first bar of Tue 01-02 */
        T_0101_1800 + 22 * 3600 + 59 * 60,   /* Tue 16:59 */
        T_0101_1800 + DAY_S - 1,             /* Tue 17:59:59 */
        T_0101_1800 + DAY_S,                 /* Tue 18:00: Wed 01-03 */
        T_0101_1800 + 4 * DAY_S - 3600,      /* Fri 01-05 17:00 */
        T_0101_1800 + 6 * DAY_S,             /* Sun 01-07 18:00 after the weekend gap: Mon 01-08 */
        T_0101_1800 + 6 * DAY_S + 16 * 3600, /* Mon 01-08 10:00 */
    };
    test_data_push_times(t, 7);
    struct data_sessions ss;
    cr_assert_eq(data_sessions_split(&test_data_ds, 18, &ss), 0);
    cr_assert_eq(ss.n, 4);
    test_data_assert_session(&ss, 0, 0, 3, "2024-01-02");
    test_data_assert_session(&ss, 1, 3, 1, "2024-01-03");
    test_data_assert_session(&ss, 2, 4, 1, "2024-01-05");
    test_data_assert_session(&ss, 3, 5, 2, "2024-01-08");
    data_sessions_fini(&ss);
}

Test(data, sessions_calendar_days_hour_0) {
    const long long midnight_0102 = T_0102_1430 - 14 * 3600 - 1800;
    const long long t[] = {
        midnight_0102 - 60,                    /* 01-01 23:59 */
        midnight_0102,                         /* 01-02 00:00 exactly */
        midnight_0102 + DAY_S - 1,             /* 01-02 23:59:59 */
        midnight_0102 + 4 * DAY_S + 12 * 3600, /* Sat 01-06 12:00 */
        midnight_0102 + 6 * DAY_S,             /* Mon 01-08 00:00 */
    };
    test_data_push_times(t, 5);
    struct data_sessions ss;
    cr_assert_eq(data_sessions_split(&test_data_ds, 0, &ss), 0);
    cr_assert_eq(ss.n, 4);
    test_data_assert_session(&ss, 0, 0, 1, "2024-01-01");
    test_data_assert_session(&ss, 1, 1, 2, "2024-01-02");
    test_data_assert_session(&ss, 2, 3, 1, "2024-01-06");
    test_data_assert_session(&ss, 3, 4, 1, "2024-01-08");
    data_sessions_fini(&ss);
}

Test(data, session_label_and_empty_split) {
    char label[11];
    data_session_label(T_0101_1800 - 1, 18, label);
    cr_assert_str_eq(label, "2024-01-01");
    data_session_label(T_0101_1800, 18, label);
    cr_assert_str_eq(label, "2024-01-02");
    data_session_label(1709164800LL + 6 * 3600, 9, label); /* 2024-02-29 06:00, H = 9 */
    cr_assert_str_eq(label, "2024-02-29");
    data_session_label(1709164800LL + 9 * 3600, 9, label);
    cr_assert_str_eq(label, "2024-03-01");
    struct data_sessions ss;
    cr_assert_eq(data_sessions_split(&test_data_ds, 18, &ss), 0);
    cr_assert_eq(ss.n, 0);
    data_sessions_fini(&ss);
}

/* ---- fingerprint ---- */

Test(data, fingerprint_known_values) {
    cr_assert_eq(data_series_fingerprint(&test_data_ds), 0xcbf29ce484222325ull); /* FNV basis */
    struct data_bar b = {T_0102_1430, 4700.25, 4702.5, 4699, 4701.75, 1234, NAN};
    cr_assert_eq(data_series_push(&test_data_ds, &b), 0);
    /* Computed independently (Python struct.pack '<q'/'<d', canonical NaN 0x7ff8...). */
    cr_assert_eq(data_series_fingerprint(&test_data_ds), 0x9334d8bfea4f3653ull);
    test_data_ds.bars[0].close = 4701.5;
    cr_assert_neq(data_series_fingerprint(&test_data_ds), 0x9334d8bfea4f3653ull);
}

/* ---- writer ---- */

Test(data, write_shortest_numbers) {
    struct data_bar b = {T_0102_1430, 4712.25, 4713, 0.1, 4712.5, 3, NAN};
    cr_assert_eq(data_series_push(&test_data_ds, &b), 0);
    snprintf(test_data_path, sizeof(test_data_path), "%s/out.csv", test_data_dir);
    cr_assert_eq(
        data_csv_write(test_data_path, &test_data_ds, test_data_err, sizeof(test_data_err)), 0,
        "%s", test_data_err);
    FILE *f = fopen(test_data_path, "r");
    cr_assert_not_null(f);
    char buf[256] = "";
    size_t got = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[got] = '\0';
    cr_assert_str_eq(buf, "timestamp,open,high,low,close,volume\n"
                          "2024-01-02 14:30:00,4712.25,4713,0.1,4712.5,3\n");
    test_data_ds.bars[0].high = NAN;
    cr_assert_eq(
        data_csv_write(test_data_path, &test_data_ds, test_data_err, sizeof(test_data_err)),
        -EINVAL);
}

/* ---- synthetic data ---- */

static void test_data_synth(struct data_series *ds, int days, uint64_t seed, int start_hour) {
    struct data_synth_opts o = {.days = days, .seed = seed, .start_hour = start_hour, .tick = 0.25};
    cr_assert_eq(data_synth_generate(&o, ds), 0);
}

Test(data, synth_deterministic_by_seed) {
    struct data_series a, b, c;
    data_series_init(&a);
    data_series_init(&b);
    data_series_init(&c);
    test_data_synth(&a, 3, 42, 18);
    test_data_synth(&b, 3, 42, 18);
    test_data_synth(&c, 3, 43, 18);
    cr_assert_eq(a.n, 3 * 1380);
    cr_assert_eq(data_series_fingerprint(&a), data_series_fingerprint(&b));
    cr_assert_eq(memcmp(a.bars, b.bars, a.n * sizeof(*a.bars)), 0);
    cr_assert_neq(data_series_fingerprint(&a), data_series_fingerprint(&c));
    data_series_fini(&a);
    data_series_fini(&b);
    data_series_fini(&c);
}

static void test_data_assert_synth_bar(const struct data_bar *b, const struct data_bar *prev) {
    cr_assert_geq(b->high, fmax(b->open, b->close));
    cr_assert_leq(b->low, fmin(b->open, b->close));
    cr_assert(b->low >= 1000 && b->high <= 20000, "price %g..%g out of range", b->low, b->high);
    const double px[4] = {b->open, b->high, b->low, b->close};
    for (int k = 0; k < 4; k++)
        cr_assert_eq(px[k] * 4, floor(px[k] * 4), "%g is not a multiple of 0.25", px[k]);
    cr_assert(b->volume >= 1 && b->volume <= 1e12 && b->volume == floor(b->volume));
    cr_assert(b->vix >= 9 && b->vix <= 80);
    cr_assert_float_eq(b->vix * 100, round(b->vix * 100), 1e-6);
    if (prev)
        cr_assert_gt(b->t_s, prev->t_s);
}

Test(data, synth_valid_bars_and_sessions) {
    test_data_synth(&test_data_ds, 5, 7, 18);
    cr_assert_eq(test_data_ds.n, 5 * 1380);
    cr_assert(test_data_ds.has_vix);
    cr_assert_eq(test_data_ds.bars[0].t_s, T_0101_1800);
    cr_assert_eq(test_data_ds.bars[0].open, 4700);
    for (size_t i = 0; i < test_data_ds.n; i++)
        test_data_assert_synth_bar(&test_data_ds.bars[i], i ? &test_data_ds.bars[i - 1] : NULL);
    struct data_sessions ss;
    cr_assert_eq(data_sessions_split(&test_data_ds, 18, &ss), 0);
    cr_assert_eq(ss.n, 5);
    static const char *labels[] = {"2024-01-02", "2024-01-03", "2024-01-04", "2024-01-05",
                                   "2024-01-08"};
    for (size_t k = 0; k < 5; k++)
        test_data_assert_session(&ss, k, k * 1380, 1380, labels[k]);
    /* Friday's last bar is 16:59 on 01-05; Monday's session opens Sunday 01-07 18:00. */
    cr_assert_eq(test_data_ds.bars[4 * 1380 - 1].t_s, T_0101_1800 + 4 * DAY_S - 3600 - 60);
    cr_assert_eq(test_data_ds.bars[4 * 1380].t_s, T_0101_1800 + 6 * DAY_S);
    data_sessions_fini(&ss);
}

Test(data, synth_start_hour_0_is_calendar_days) {
    test_data_synth(&test_data_ds, 2, 1, 0);
    cr_assert_eq(test_data_ds.bars[0].t_s, T_0101_1800 + 6 * 3600); /* 2024-01-02 00:00 */
    struct data_sessions ss;
    cr_assert_eq(data_sessions_split(&test_data_ds, 0, &ss), 0);
    cr_assert_eq(ss.n, 2);
    test_data_assert_session(&ss, 1, 1380, 1380, "2024-01-03");
    data_sessions_fini(&ss);
}

Test(data, synth_round_trip_through_csv) {
    test_data_synth(&test_data_ds, 2, 99, 18);
    snprintf(test_data_path, sizeof(test_data_path), "%s/synth.csv", test_data_dir);
    cr_assert_eq(
        data_csv_write(test_data_path, &test_data_ds, test_data_err, sizeof(test_data_err)), 0,
        "%s", test_data_err);
    struct data_series back;
    data_series_init(&back);
    cr_assert_eq(data_csv_load(test_data_path, NULL, &back, &test_data_rep, test_data_err,
                               sizeof(test_data_err)),
                 0, "%s", test_data_err);
    cr_assert_eq(back.n, test_data_ds.n);
    cr_assert(back.has_vix);
    cr_assert_eq(test_data_rep.rows_skipped, 0);
    for (size_t i = 0; i < back.n; i++)
        cr_assert_eq(memcmp(&back.bars[i], &test_data_ds.bars[i], sizeof(back.bars[i])), 0,
                     "bar %zu differs", i);
    data_series_fini(&back);
}

/* Price (a close) with the most volume in one session: its point of control. */
static double test_data_poc(const struct data_bar *b, size_t n) {
    double lo = b[0].close, hi = b[0].close;
    for (size_t i = 0; i < n; i++) {
        lo = fmin(lo, b[i].close);
        hi = fmax(hi, b[i].close);
    }
    size_t bins = (size_t)((hi - lo) * 4) + 1, best = 0;
    double *vol = calloc(bins, sizeof(*vol));
    cr_assert_not_null(vol);
    for (size_t i = 0; i < n; i++)
        vol[(size_t)((b[i].close - lo) * 4)] += b[i].volume;
    for (size_t k = 1; k < bins; k++)
        best = vol[k] > vol[best] ? k : best;
    free(vol);
    return lo + (double)best / 4;
}

/* The previous session's POC must say something about where the next session goes: the move from
 * the open to the close correlates with the open's distance to that POC. */
Test(data, synth_prior_poc_carries_signal) {
    test_data_synth(&test_data_ds, 60, 2024, 18);
    double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
    int n = 0;
    for (size_t k = 1; k < 60; k++) {
        const struct data_bar *cur = &test_data_ds.bars[k * 1380];
        double x = test_data_poc(cur - 1380, 1380) - cur[0].open;
        double y = cur[1379].close - cur[0].open;
        sx += x, sy += y, sxx += x * x, syy += y * y, sxy += x * y, n++;
    }
    double corr = (n * sxy - sx * sy) / sqrt((n * sxx - sx * sx) * (n * syy - sy * sy));
    cr_assert_gt(corr, 0.2, "correlation %g", corr);
}

Test(data, synth_rejects_bad_opts) {
    const struct data_synth_opts bad[] = {
        {.days = 0, .tick = 0.25, .start_hour = 18}, {.days = 1, .tick = 0, .start_hour = 18},
        {.days = 1, .tick = -1, .start_hour = 18},   {.days = 1, .tick = NAN, .start_hour = 18},
        {.days = 1, .tick = 0.25, .start_hour = 24}, {.days = 1, .tick = 0.25, .start_hour = -1},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(data_synth_generate(&bad[i], &test_data_ds), -EINVAL, "case %zu", i);
    cr_assert_eq(test_data_ds.n, 0);
}
