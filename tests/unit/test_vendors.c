/* Vendors' export layouts against the same bars in the plain layout (tests/fixtures/vendors):
 * `ringside vpoc` prints the same lines for each, says in one line on stderr what it
 * recognised, and refuses with one line what it cannot read without a flag. */
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define VEND_OUT_BYTES (1u << 18)
#define VEND_ERR_BYTES (1u << 16)

/* The current test's scratch directory, the last run's results and plain.csv's lines. */
static char vend_dir[4096];
static struct {
    int rc;
    char out[VEND_OUT_BYTES];
    char err[VEND_ERR_BYTES];
} vend_res;
static char vend_ref[VEND_OUT_BYTES];

static void vend_init(void) {
    cr_assert_eq(rs_test_tmpdir(vend_dir, sizeof(vend_dir)), 0);
}

static void vend_fini(void) {
    rs_test_rmtree(vend_dir);
}

TestSuite(vendors, .init = vend_init, .fini = vend_fini, .timeout = 60);

/* ---- helpers ---- */

/* A NULL-terminated list of strings, and the empty one. */
#define VEND_ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define VEND_NO_ARGS   ((const char *const[]){NULL})

static const char *vend_fix(const char *name) {
    static char bufs[4][4200];
    static unsigned next;
    char rel[256];
    snprintf(rel, sizeof(rel), "vendors/%s", name);
    return rs_test_fixture(rel, bufs[next++ % 4], sizeof(bufs[0]));
}

static int vend_exec(const char *const *argv) {
    vend_res.rc =
        rs_test_run(argv, vend_res.out, sizeof(vend_res.out), vend_res.err, sizeof(vend_res.err));
    cr_assert_neq(vend_res.rc, -1, "could not start %s/ringside", RS_BINARY_DIR);
    /* A sanitized child reports on its stderr, which this runner captures: surface it. */
    cr_assert(!strstr(vend_res.err, "runtime error:") && !strstr(vend_res.err, "Sanitizer"),
              "sanitizer report from ringside:\n%s", vend_res.err);
    return vend_res.rc;
}
#define VEND_RUN(...) vend_exec(VEND_ARGS(__VA_ARGS__))

static size_t vend_count(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static void vend_status(int want) {
    cr_assert_eq(vend_res.rc, want, "exit status %d, want %d; stderr:\n%s", vend_res.rc, want,
                 vend_res.err);
}

static void vend_err_has(const char *const *needles) {
    for (size_t i = 0; needles[i]; i++)
        cr_assert(strstr(vend_res.err, needles[i]), "stderr lacks \"%s\"; stderr was:\n%s",
                  needles[i], vend_res.err);
}

/* stderr is one line, its only '\n' at its end. */
static void vend_err_one_line(void) {
    size_t n = strlen(vend_res.err);
    cr_assert(n > 0 && vend_count(vend_res.err, "\n") == 1 && vend_res.err[n - 1] == '\n',
              "want one line on stderr, got:\n%s", vend_res.err);
}

/* `vpoc --data path --tick 0.25 --session-start-hour 18` and the extra flags. */
static void vend_vpoc(const char *path, const char *const *extra) {
    const char *argv[24] = {"vpoc", "--data", path, "--tick", "0.25", "--session-start-hour", "18"};
    size_t n = 7;
    for (size_t i = 0; extra[i]; i++) {
        cr_assert(n < 23);
        argv[n++] = extra[i];
    }
    argv[n] = NULL;
    vend_exec(argv);
}

/* plain.csv's lines into vend_ref: status 0, four sessions at least. */
static void vend_reference(void) {
    vend_vpoc(vend_fix("plain.csv"), VEND_NO_ARGS);
    vend_status(0);
    cr_assert_geq(vend_count(vend_res.out, "\n"), 4, "want 4 sessions at least, got:\n%s",
                  vend_res.out);
    cr_assert_eq(vend_count(vend_res.out, "\"session\":"), vend_count(vend_res.out, "\n"));
    memcpy(vend_ref, vend_res.out, sizeof(vend_ref));
}

/* name (with extra flags) read as the same bars as plain.csv: status 0, the same stdout byte for
 * byte, and one line on stderr, "ringside vpoc: " and what was recognised. */
static void vend_same(const char *name, const char *const *extra) {
    vend_reference();
    vend_vpoc(vend_fix(name), extra);
    vend_status(0);
    cr_assert_str_eq(vend_res.out, vend_ref, "%s: stdout differs from plain.csv's:\n%s\nwant:\n%s",
                     name, vend_res.out, vend_ref);
    vend_err_one_line();
    cr_assert_eq(strncmp(vend_res.err, "ringside vpoc: ", 15), 0, "%s", vend_res.err);
}

/* path (with extra flags) refused: status 2, nothing on stdout, one line on stderr holding
 * needle. */
static void vend_refused(const char *path, const char *const *extra, const char *needle) {
    vend_vpoc(path, extra);
    vend_status(2);
    cr_assert_str_eq(vend_res.out, "", "stdout not empty on a refusal");
    vend_err_one_line();
    vend_err_has(VEND_ARGS(needle));
}

/* ---- the reference ---- */

Test(vendors, plain_reference) {
    vend_reference();
}

/* ---- the same bars in each layout ---- */

Test(vendors, databento_batch) {
    vend_same("databento_batch.csv", VEND_NO_ARGS);
    vend_err_has(VEND_ARGS("Databento", "nanoseconds", "1e-9"));
}

Test(vendors, databento_batch_two_symbol) {
    vend_same("databento_batch_two.csv", VEND_ARGS("--symbol", "4916"));
    vend_err_has(VEND_ARGS("4916"));
}

Test(vendors, databento_ns_decimal) {
    vend_same("databento_ns_decimal.csv", VEND_NO_ARGS);
}

Test(vendors, databento_pretty_ts_fixed) {
    vend_same("databento_pretty_ts_fixed.csv", VEND_NO_ARGS);
}

Test(vendors, tradingview_unix) {
    vend_same("tradingview_unix.csv", VEND_NO_ARGS);
}

Test(vendors, tradingview_iso) {
    vend_same("tradingview_iso.csv", VEND_NO_ARGS);
    vend_err_has(VEND_ARGS("TradingView", "offset"));
}

/* The offset gives the instant: --tz does not move it again. */
Test(vendors, tradingview_iso_tz) {
    vend_same("tradingview_iso.csv", VEND_ARGS("--tz", "America/Chicago"));
}

Test(vendors, epoch_ms) {
    vend_same("epoch_ms.csv", VEND_NO_ARGS);
    vend_err_has(VEND_ARGS("milliseconds"));
}

Test(vendors, epoch_us) {
    vend_same("epoch_us.csv", VEND_NO_ARGS);
}

Test(vendors, epoch_ns) {
    vend_same("epoch_ns.csv", VEND_NO_ARGS);
}

Test(vendors, epoch_ms_time_unit) {
    vend_same("epoch_ms.csv", VEND_ARGS("--time-unit", "ms"));
}

Test(vendors, ninjatrader_minute_chicago) {
    vend_same("ninjatrader_minute_chicago.txt", VEND_ARGS("--tz", "America/Chicago"));
}

Test(vendors, ninjatrader_minute_utc) {
    vend_same("ninjatrader_minute_utc.txt", VEND_ARGS("--tz", "UTC"));
}

/* Ticks aggregated to one-minute bars by default. */
Test(vendors, ninjatrader_tick_chicago) {
    vend_same("ninjatrader_tick_chicago.txt", VEND_ARGS("--tz", "America/Chicago"));
    vend_err_has(VEND_ARGS("NinjaTrader", "tick", "America/Chicago"));
}

Test(vendors, ninjatrader_tick_chicago_bar_1m) {
    vend_same("ninjatrader_tick_chicago.txt", VEND_ARGS("--tz", "America/Chicago", "--bar", "1m"));
}

Test(vendors, plain_fixed_price_scale) {
    vend_same("plain_fixed.csv", VEND_ARGS("--price-scale", "1e-9"));
}

/* ---- what needs a flag ---- */

Test(vendors, ninjatrader_minute_needs_tz) {
    vend_refused(vend_fix("ninjatrader_minute_chicago.txt"), VEND_NO_ARGS, "--tz");
}

Test(vendors, ninjatrader_tick_needs_tz) {
    vend_refused(vend_fix("ninjatrader_tick_chicago.txt"), VEND_NO_ARGS, "--tz");
}

Test(vendors, ninjatrader_daily_refused) {
    vend_refused(vend_fix("ninjatrader_daily.txt"), VEND_ARGS("--tz", "UTC"), "daily bars");
}

Test(vendors, ninjatrader_daily_columns_refused) {
    vend_refused(vend_fix("ninjatrader_daily.txt"),
                 VEND_ARGS("--columns", "timestamp,open,high,low,close,volume"), "daily bars");
}

Test(vendors, plain_fixed_needs_price_scale) {
    vend_refused(vend_fix("plain_fixed.csv"), VEND_NO_ARGS, "--price-scale");
}

Test(vendors, databento_batch_two_needs_symbol) {
    vend_refused(vend_fix("databento_batch_two.csv"), VEND_NO_ARGS, "--symbol");
}

/* Integers too small for any epoch unit in a timestamp column. */
Test(vendors, small_integer_times_need_time_unit) {
    char path[4200];
    cr_assert_eq(rs_test_write_file(vend_dir, "small_ints.csv",
                                    "timestamp,open,high,low,close,volume\n"
                                    "1,4700,4700.25,4699.75,4700,10\n"
                                    "2,4700,4700.5,4700,4700.25,12\n"
                                    "3,4700.25,4700.5,4700,4700.5,8\n",
                                    path, sizeof(path)),
                 0);
    vend_refused(path, VEND_NO_ARGS, "--time-unit");
}

/* ---- train ---- */

/* Headless training on the Databento batch file: what was recognised said once on stderr. */
Test(vendors, train_databento_batch) {
    char out[4200];
    snprintf(out, sizeof(out), "%s/out", vend_dir);
    VEND_RUN("train", "--headless", "--epochs", "1", "--data", vend_fix("databento_batch.csv"),
             "--tick", "0.25", "--output", out);
    vend_status(0);
    cr_assert_eq(vend_count(vend_res.err, "Databento"), 1,
                 "want \"Databento\" once on stderr, got:\n%s", vend_res.err);
}
