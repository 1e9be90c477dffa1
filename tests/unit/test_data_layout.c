/* Unit tests of the vendors' layouts: ticks into bars, --bar, the integer timestamps' units,
 * Databento's fixed point, the text options and the line that says what a file was read as. */
#include "backend/data/data_csv.h"
#include "backend/data/data_series.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define T_0102_1430 1704205800LL /* 2024-01-02 14:30:00 UTC, checked by hand */

static char tdl_dir[512], tdl_path[1024], tdl_err[1024];
static struct data_series tdl_ds;
static struct data_csv_report tdl_rep;

static void tdl_setup(void) {
    cr_assert_eq(rs_test_tmpdir(tdl_dir, sizeof(tdl_dir)), 0);
    data_series_init(&tdl_ds);
}

static void tdl_teardown(void) {
    data_series_fini(&tdl_ds);
    rs_test_rmtree(tdl_dir);
}

TestSuite(data_layout, .init = tdl_setup, .fini = tdl_teardown);

static int tdl_load(const char *text, struct data_csv_opts o) {
    cr_assert_eq(rs_test_write_file(tdl_dir, "data.csv", text, tdl_path, sizeof(tdl_path)), 0);
    return data_csv_load(tdl_path, &o, &tdl_ds, &tdl_rep, tdl_err, sizeof(tdl_err));
}

static void tdl_bar(size_t i, long long t, double o, double h, double l, double c, double v) {
    cr_assert(i < tdl_ds.n, "bar %zu of %zu", i, tdl_ds.n);
    const struct data_bar *b = &tdl_ds.bars[i];
    cr_assert_eq(b->t_s, t, "bar %zu t %lld", i, (long long)b->t_s);
    cr_assert_eq(b->open, o, "bar %zu open %g", i, b->open);
    cr_assert_eq(b->high, h, "bar %zu high %g", i, b->high);
    cr_assert_eq(b->low, l, "bar %zu low %g", i, b->low);
    cr_assert_eq(b->close, c, "bar %zu close %g", i, b->close);
    cr_assert_eq(b->volume, v, "bar %zu volume %g", i, b->volume);
}

static void tdl_refused(const char *text, struct data_csv_opts o, const char *want) {
    cr_assert_eq(tdl_load(text, o), -EINVAL, "accepted: %s", text);
    cr_assert(strstr(tdl_err, want), "'%s' lacks '%s'", tdl_err, want);
    cr_assert_eq(tdl_ds.n, 0);
}

static void tdl_said_has(const char *want) {
    char said[1024];
    data_csv_describe(&tdl_rep, said, sizeof(said));
    cr_assert(strstr(said, want), "'%s' lacks '%s'", said, want);
}

/* NinjaTrader 8's ticks: the first trade opens the minute, the last closes it, the volumes
 * add up; trades at the same instant are kept; the minute is the one the trade fell in. */
#define NT_TICKS                                                                                   \
    "20240102 143000 0000000;4700.25;4700;4700.5;3\n"                                              \
    "20240102 143015 2500000;4701;4700.75;4701.25;2\n"                                             \
    "20240102 143015 2500000;4699.5;4699.25;4699.75;1\n"                                           \
    "20240102 143059 9999999;4700.5;4700.25;4700.75;4\n"                                           \
    "20240102 143100 0000000;4700.75;4700.5;4701;10\n"                                             \
    "20240102 143300 0000001;4702;4701.75;4702.25;5\n"

Test(data_layout, ninjatrader_ticks_into_minutes) {
    cr_assert_eq(tdl_load(NT_TICKS, (struct data_csv_opts){.tz = "UTC"}), 0, "%s", tdl_err);
    cr_assert_eq(tdl_ds.n, 3);
    tdl_bar(0, T_0102_1430, 4700.25, 4701, 4699.5, 4700.5, 10);
    tdl_bar(1, T_0102_1430 + 60, 4700.75, 4700.75, 4700.75, 4700.75, 10);
    tdl_bar(2, T_0102_1430 + 180, 4702, 4702, 4702, 4702, 5);
    cr_assert_str_eq(tdl_rep.format, "NinjaTrader tick export");
    cr_assert_eq(tdl_rep.bars, 3);
    cr_assert_eq(tdl_rep.rows_read, 6);
    tdl_said_has("3 1m bars from 6 ticks");
    /* --bar: five minutes from the same ticks */
    data_series_fini(&tdl_ds);
    data_series_init(&tdl_ds);
    cr_assert_eq(tdl_load(NT_TICKS, (struct data_csv_opts){.tz = "UTC", .bar = "5m"}), 0, "%s",
                 tdl_err);
    cr_assert_eq(tdl_ds.n, 1);
    tdl_bar(0, T_0102_1430, 4700.25, 4702, 4699.5, 4702, 25);
}

/* The older tick layout (yyyyMMdd HHmmss;price;volume), and ticks out of order refused. */
Test(data_layout, ninjatrader_ticks_older_layout_and_order) {
    cr_assert_eq(tdl_load("20240102 143000;4700.25;3\n20240102 143000;4700.5;1\n",
                          (struct data_csv_opts){.tz = "UTC"}),
                 0, "%s", tdl_err);
    cr_assert_eq(tdl_ds.n, 1);
    tdl_bar(0, T_0102_1430, 4700.25, 4700.5, 4700.25, 4700.5, 4);
    data_series_fini(&tdl_ds);
    data_series_init(&tdl_ds);
    tdl_refused("20240102 143001 0000000;4700.25;4700;4700.5;3\n"
                "20240102 143000 9999999;4700.25;4700;4700.5;3\n",
                (struct data_csv_opts){.tz = "UTC"}, "data.csv:2: timestamp: not increasing");
}

/* A NinjaTrader file says nothing of its zone: refused without --tz, naming it. */
Test(data_layout, ninjatrader_needs_tz) {
    tdl_refused(NT_TICKS, (struct data_csv_opts){0}, "--tz");
    tdl_refused("20240102 143000;4700.25;4701;4699.5;4700.5;120\n", (struct data_csv_opts){0},
                "NinjaTrader minute export (bars stamped at their end), whose times say nothing "
                "of their zone");
    tdl_refused("20240102;4700.25;4701;4699.5;4700.5;120\n", (struct data_csv_opts){.tz = "UTC"},
                "daily bars have no intraday profile");
}

/* --bar over minute bars: the open of the first, the close of the last, the extremes, the sum;
 * a bar that does not divide a day is refused. */
Test(data_layout, bar_over_minutes) {
    cr_assert_eq(tdl_load("timestamp,open,high,low,close,volume\n"
                          "2024-01-02 14:29,1,2,0.5,1.5,1\n"
                          "2024-01-02 14:30,10,12,9,11,2\n"
                          "2024-01-02 14:31,11,15,10,14,3\n"
                          "2024-01-02 14:34,14,14,8,9,4\n"
                          "2024-01-02 14:35,9,9,9,9,5\n",
                          (struct data_csv_opts){.bar = "5m"}),
                 0, "%s", tdl_err);
    cr_assert_eq(tdl_ds.n, 3);
    tdl_bar(0, T_0102_1430 - 300, 1, 2, 0.5, 1.5, 1);
    tdl_bar(1, T_0102_1430, 10, 15, 8, 9, 9);
    tdl_bar(2, T_0102_1430 + 300, 9, 9, 9, 9, 5);
    tdl_said_has("3 5m bars from 5 rows");
    static const char *const bad[] = {"7m", "0m", "1d", "m", "1.5m", "25h", "1m5", "5", "", "x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(data_csv_opt_check("--bar", bad[i], NULL, tdl_err, sizeof(tdl_err)), -EINVAL,
                     "%s", bad[i]);
        cr_assert(strstr(tdl_err, "--bar"), "%s", tdl_err);
    }
    int64_t s = 0;
    cr_assert_eq(data_csv_opt_check("--bar", "90s", &s, tdl_err, sizeof(tdl_err)), 0);
    cr_assert_eq(s, 90);
}

/* Integer times: the unit from the digits, kept for the file; a row in another is refused. */
Test(data_layout, epoch_units) {
    cr_assert_eq(tdl_load("timestamp,open,high,low,close,volume\n"
                          "1704205800000,1,2,0.5,1.5,1\n1704205860000,1,2,0.5,1.5,1\n",
                          (struct data_csv_opts){0}),
                 0, "%s", tdl_err);
    cr_assert_eq(tdl_ds.bars[1].t_s, T_0102_1430 + 60);
    tdl_said_has("times in epoch milliseconds (UTC)");
    data_series_fini(&tdl_ds);
    data_series_init(&tdl_ds);
    tdl_refused("timestamp,open,high,low,close,volume\n"
                "1704205800000,1,2,0.5,1.5,1\n1704205860,1,2,0.5,1.5,1\n",
                (struct data_csv_opts){0},
                "data.csv:3: timestamp: 1704205860 has the digits of "
                "epoch seconds, the rows before it those of "
                "milliseconds");
    tdl_refused("timestamp,open,high,low,close,volume\n1,1,2,0.5,1.5,1\n2,1,2,0.5,1.5,1\n",
                (struct data_csv_opts){0}, "--time-unit");
    /* forced: the same digits in the unit given */
    cr_assert_eq(tdl_load("timestamp,open,high,low,close,volume\n1704205800000000,1,2,0.5,1.5,1\n",
                          (struct data_csv_opts){.time_unit = "us"}),
                 0, "%s", tdl_err);
    cr_assert_eq(tdl_ds.bars[0].t_s, T_0102_1430);
    tdl_said_has("microseconds");
    cr_assert_eq(data_csv_opt_check("--time-unit", "min", NULL, tdl_err, sizeof(tdl_err)), -EINVAL);
}

/* Databento's defaults: ts_event in ns, fixed-point prices, no symbol column (the
 * instrument_id tells them apart); the first row says the prices' encoding. */
#define DBN_RAW_HDR "ts_event,rtype,publisher_id,instrument_id,open,high,low,close,volume\n"
Test(data_layout, databento_defaults) {
    cr_assert_eq(tdl_load(DBN_RAW_HDR "1704205800000000000,33,1,4916,4700250000000,4701000000000,"
                                      "4699500000000,4700500000000,120\n"
                                      "1704205800000000000,33,1,5002,4800000000000,4800000000000,"
                                      "4800000000000,4800000000000,7\n",
                          (struct data_csv_opts){.symbol = "4916"}),
                 0, "%s", tdl_err);
    cr_assert_eq(tdl_ds.n, 1);
    tdl_bar(0, T_0102_1430, 4700.25, 4701, 4699.5, 4700.5, 120);
    cr_assert_str_eq(tdl_rep.format, "Databento ohlcv-1m");
    cr_assert(tdl_rep.by_id && tdl_rep.price_from_layout && tdl_rep.price_decimals == 9);
    tdl_said_has("instrument_id 4916 of 2");
    tdl_said_has("fixed point, 1e-9");
    data_series_fini(&tdl_ds);
    data_series_init(&tdl_ds);
    /* a decimal in a fixed-point file; integers too small to be fixed point; daily bars */
    tdl_refused(DBN_RAW_HDR "1704205800000000000,33,1,1,4700250000000,4701000000000,"
                            "4699500000000,4700500000000,120\n"
                            "1704205860000000000,33,1,1,4700.25,4701,4699.5,4700.5,120\n",
                (struct data_csv_opts){0}, "data.csv:3: open: \"4700.25\" is not an integer");
    tdl_refused(DBN_RAW_HDR "1704205800000000000,33,1,1,100,101,99,100,120\n",
                (struct data_csv_opts){0}, "--price-scale 1");
    tdl_refused(DBN_RAW_HDR "1704153600000000000,35,1,1,4700250000000,4701000000000,"
                            "4699500000000,4700500000000,120\n",
                (struct data_csv_opts){0}, "ohlcv-1d (rtype 35): daily bars");
    /* --price-scale 1: integers as written */
    cr_assert_eq(tdl_load(DBN_RAW_HDR "1704205800000000000,33,1,1,100,101,99,100,120\n",
                          (struct data_csv_opts){.price_scale = "1"}),
                 0, "%s", tdl_err);
    tdl_bar(0, T_0102_1430, 100, 101, 99, 100, 120);
}

/* A price past the maximum says what scale reads it; scales are powers of ten to 1e-9; a
 * scaled price is exactly the decimal it stands for, negative and below one included. */
Test(data_layout, price_scale) {
    tdl_refused("timestamp,open,high,low,close,volume\n"
                "2024-01-02 14:30,4700250000000,4701000000000,4699500000000,4700500000000,1\n",
                (struct data_csv_opts){0}, "--price-scale 1e-9 (Databento's) reads it as 4700.25");
    cr_assert_eq(tdl_load("timestamp,open,high,low,close,volume\n"
                          "2024-01-02 14:30,-25,5,-125,1,1\n",
                          (struct data_csv_opts){.price_scale = "0.01"}),
                 0, "%s", tdl_err);
    tdl_bar(0, T_0102_1430, -0.25, 0.05, -1.25, 0.01, 1);
    static const char *const bad[] = {"1e-10", "2e-9", "0.02", "1e9", "0.1e-3",
                                      "",      "x",    "0",    "0.",  "1e"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(data_csv_opt_check("--price-scale", bad[i], NULL, tdl_err, sizeof(tdl_err)),
                     -EINVAL, "%s", bad[i]);
    int64_t d = -1;
    cr_assert_eq(data_csv_opt_check("--price-scale", "1e-4", &d, tdl_err, sizeof(tdl_err)), 0);
    cr_assert_eq(d, 4);
}

/* TradingView's ISO times carry the chart's offset: the instant, which --tz does not move. */
Test(data_layout, tradingview_iso_offsets) {
    const char *text = "time,open,high,low,close,Volume,Volume MA\n"
                       "2024-01-02T08:30:00-06:00,1,2,0.5,1.5,1,NaN\n"
                       "2024-01-02T09:31:00-05:00,1,2,0.5,1.5,1,NaN\n";
    for (int k = 0; k < 2; k++) {
        data_series_fini(&tdl_ds);
        data_series_init(&tdl_ds);
        cr_assert_eq(tdl_load(text, (struct data_csv_opts){.tz = k ? "America/Chicago" : NULL}), 0,
                     "%s", tdl_err);
        cr_assert_eq(tdl_ds.bars[0].t_s, T_0102_1430);
        cr_assert_eq(tdl_ds.bars[1].t_s, T_0102_1430 + 60);
        tdl_said_has("ISO 8601 with their UTC offsets");
    }
    tdl_said_has("moved none");
}

/* Two columns that name one thing are refused, naming both (the first would win silently). */
Test(data_layout, duplicate_columns) {
    tdl_refused("timestamp,open,open,high,low,close,volume\n2024-01-02 14:30,1,1,2,0.5,1.5,1\n",
                (struct data_csv_opts){0},
                "data.csv:1: header: columns 2 ('open') and 3 ('open') name the same thing");
    tdl_refused("time,Time,open,high,low,close,volume\n1704205800,1704205800,1,2,0.5,1.5,1\n",
                (struct data_csv_opts){0}, "columns 1 ('time') and 2 ('Time')");
    tdl_refused("x\n", (struct data_csv_opts){.columns = "timestamp,datetime,open"},
                "--columns: columns 1 ('timestamp') and 2 ('datetime') name the same thing");
}
