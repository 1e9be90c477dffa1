/* End-to-end tests of the ringside binary: exit statuses, error messages and files left behind. */
#include "backend/core/crc32.h"
#include "backend/core/json_out.h"
#include "backend/data/data_csv.h"
#include "backend/data/data_synth.h"
#include "backend/vpoc/vpoc.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CLI_TEST_OUT_BYTES (1u << 18)
#define CLI_TEST_ERR_BYTES (1u << 16)

/* The current test's scratch directory and the last run's results. */
static char cli_test_dir[4096];
static struct {
    int rc;
    char out[CLI_TEST_OUT_BYTES];
    char err[CLI_TEST_ERR_BYTES];
} cli_test_res;

static void cli_test_init(void) {
    cr_assert_eq(rs_test_tmpdir(cli_test_dir, sizeof(cli_test_dir)), 0);
}

static void cli_test_fini(void) {
    rs_test_rmtree(cli_test_dir);
}

TestSuite(cli, .init = cli_test_init, .fini = cli_test_fini, .timeout = 60);

/* ---- helpers ---- */

/* "<tmpdir>/name" in one of a few rotating buffers, so several can be live at once. */
static const char *cli_test_path(const char *name) {
    static char bufs[8][4200];
    static unsigned next;
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof(bufs[0]), "%s/%s", cli_test_dir, name);
    return b;
}

static const char *cli_test_fix(const char *name) {
    static char bufs[4][4200];
    static unsigned next;
    char rel[256];
    snprintf(rel, sizeof(rel), "cli/%s", name);
    return rs_test_fixture(rel, bufs[next++ % 4], sizeof(bufs[0]));
}

static int cli_test_exec(const char *const *argv) {
    cli_test_res.rc = rs_test_run(argv, cli_test_res.out, sizeof(cli_test_res.out),
                                  cli_test_res.err, sizeof(cli_test_res.err));
    cr_assert_neq(cli_test_res.rc, -1, "could not start %s/ringside", RS_BINARY_DIR);
    /* A sanitized child reports on its stderr, which this runner captures: surface it. */
    cr_assert(!strstr(cli_test_res.err, "runtime error:") && !strstr(cli_test_res.err, "Sanitizer"),
              "sanitizer report from ringside:\n%s", cli_test_res.err);
    return cli_test_res.rc;
}
#define CLI_TEST_RUN(...) cli_test_exec((const char *const[]){__VA_ARGS__, NULL})

static void cli_test_err_has(const char *const *needles) {
    for (size_t i = 0; needles[i]; i++)
        cr_assert(strstr(cli_test_res.err, needles[i]), "stderr lacks \"%s\"; stderr was:\n%s",
                  needles[i], cli_test_res.err);
}
#define CLI_TEST_ERR_HAS(...) cli_test_err_has((const char *const[]){__VA_ARGS__, NULL})

static void cli_test_out_has(const char *const *needles) {
    for (size_t i = 0; needles[i]; i++)
        cr_assert(strstr(cli_test_res.out, needles[i]), "stdout lacks \"%s\"", needles[i]);
}
#define CLI_TEST_OUT_HAS(...) cli_test_out_has((const char *const[]){__VA_ARGS__, NULL})

static void cli_test_status(int want) {
    cr_assert_eq(cli_test_res.rc, want, "exit status %d, want %d; stderr:\n%s", cli_test_res.rc,
                 want, cli_test_res.err);
}

static size_t cli_test_count(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static bool cli_test_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Number of entries in the scratch directory (., .. excluded). */
static size_t cli_test_dir_entries(void) {
    DIR *d = opendir(cli_test_dir);
    cr_assert(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* Whole file into a NUL-terminated heap buffer; *len gets its size. */
static char *cli_test_slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    cr_assert(b);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    b[n] = '\0';
    if (len)
        *len = (size_t)n;
    return b;
}

static void cli_test_spit(const char *path, const char *b, size_t len) {
    FILE *f = fopen(path, "wb");
    cr_assert(f, "cannot create %s", path);
    cr_assert_eq(fwrite(b, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

/* A bad CSV given to `vpoc`: status 2, nothing on stdout, one line on stderr holding needles. */
static void cli_test_vpoc_bad(const char *path, const char *const *needles) {
    CLI_TEST_RUN("vpoc", "--data", path);
    cli_test_status(2);
    cr_assert_str_eq(cli_test_res.out, "", "stdout not empty on error");
    cr_assert_eq(cli_test_count(cli_test_res.err, "\n"), 1, "want one line, got:\n%s",
                 cli_test_res.err);
    cli_test_err_has(needles);
}
#define CLI_TEST_VPOC_BAD(path, ...)                                                               \
    cli_test_vpoc_bad(path, (const char *const[]){__VA_ARGS__, NULL})

/* A bad CSV given to headless `train`: status 2, and neither the JSONL nor the output dir made. */
static void cli_test_train_bad(const char *path, const char *const *needles) {
    const char *jsonl = cli_test_path("run.jsonl"), *outdir = cli_test_path("ckpt");
    CLI_TEST_RUN("train", "--headless", "--epochs", "1", "--data", path, "--output", outdir,
                 "--jsonl", jsonl);
    cli_test_status(2);
    cli_test_err_has(needles);
    cr_assert_not(cli_test_exists(jsonl), "%s left behind", jsonl);
    cr_assert_not(cli_test_exists(outdir), "%s left behind", outdir);
}
#define CLI_TEST_TRAIN_BAD(path, ...)                                                              \
    cli_test_train_bad(path, (const char *const[]){__VA_ARGS__, NULL})

/* A usage error: status 2, nothing on stdout, and one line on stderr: "ringside: ", the
 * needles, and the hint to the command's --help at its end. */
static void cli_test_usage(const char *hint, const char *const *needles) {
    cli_test_status(2);
    cr_assert_str_eq(cli_test_res.out, "");
    cr_assert_eq(cli_test_count(cli_test_res.err, "\n"), 1, "want one line, got:\n%s",
                 cli_test_res.err);
    cr_assert_eq(strncmp(cli_test_res.err, "ringside: ", 10), 0, "%s", cli_test_res.err);
    size_t n = strlen(cli_test_res.err), h = strlen(hint);
    cr_assert(n > h && strncmp(cli_test_res.err + n - h - 1, hint, h) == 0,
              "the line does not end with \"%s\": %s", hint, cli_test_res.err);
    cli_test_err_has(needles);
}
#define CLI_TEST_USAGE(hint, ...) cli_test_usage(hint, (const char *const[]){__VA_ARGS__, NULL})
#define CLI_HINT_TRAIN            "; see 'ringside train --help'"
#define CLI_HINT_VPOC             "; see 'ringside vpoc --help'"
#define CLI_HINT_SYNTH            "; see 'ringside synth --help'"

/* Run `train` with extra flags that must be rejected before anything is written. */
static void cli_test_train_flags(const char *const *extra) {
    const char *argv[32] = {
        "train", "--headless", "--synthetic-days",    "5",       "--epochs",
        "1",     "--output",   cli_test_path("ckpt"), "--jsonl", cli_test_path("o.jsonl")};
    size_t n = 10;
    for (size_t i = 0; extra[i] && n < 31; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    cli_test_exec(argv);
    cr_assert_not(cli_test_exists(cli_test_path("o.jsonl")), "JSONL written after a bad flag");
    cr_assert_not(cli_test_exists(cli_test_path("ckpt")), "output dir made after a bad flag");
}
#define CLI_TEST_TRAIN_FLAGS(...) cli_test_train_flags((const char *const[]){__VA_ARGS__, NULL})

/* A real 1-epoch checkpoint at <tmpdir>/mk/vpoc_mlp.rsmodel; returns its path. */
static const char *cli_test_make_ckpt(void) {
    const char *dir = cli_test_path("mk");
    CLI_TEST_RUN("train", "--headless", "--synthetic-days", "5", "--epochs", "1", "--output", dir,
                 "--jsonl", cli_test_path("mk.jsonl"));
    cli_test_status(0);
    const char *ck = cli_test_path("mk/vpoc_mlp.rsmodel");
    cr_assert(cli_test_exists(ck));
    return ck;
}

static void cli_test_resume_bad(const char *ck, const char *const *needles) {
    const char *jsonl = cli_test_path("resume.jsonl");
    CLI_TEST_RUN("train", "--headless", "--synthetic-days", "5", "--epochs", "1", "--output",
                 cli_test_path("out"), "--resume", ck, "--jsonl", jsonl);
    cli_test_status(2);
    cli_test_err_has(needles);
    cr_assert_not(cli_test_exists(jsonl), "JSONL written for a bad checkpoint");
}
#define CLI_TEST_RESUME_BAD(ck, ...)                                                               \
    cli_test_resume_bad(ck, (const char *const[]){__VA_ARGS__, NULL})

/* ---- CSV errors through `vpoc` ---- */

Test(cli, csv_empty_file) {
    CLI_TEST_VPOC_BAD(cli_test_fix("empty.csv"), "empty.csv", "empty file", "header");
}

Test(cli, csv_header_only) {
    CLI_TEST_VPOC_BAD(cli_test_fix("header_only.csv"), "header_only.csv", "no data rows");
}

Test(cli, csv_no_header) {
    CLI_TEST_VPOC_BAD(cli_test_fix("no_header.csv"), "no_header.csv:1:", "header",
                      "a header row is required");
}

Test(cli, csv_missing_column) {
    CLI_TEST_VPOC_BAD(cli_test_fix("missing_volume.csv"), "missing_volume.csv:1:", "'volume'");
    cr_assert_null(strstr(cli_test_res.err, "'close'"), "close is present, not missing");
}

Test(cli, csv_missing_columns_all_named) {
    CLI_TEST_VPOC_BAD(cli_test_fix("missing_close_volume.csv"),
                      "missing_close_volume.csv:1:", "'close'", "'volume'");
}

Test(cli, csv_non_numeric) {
    /* Line 4: the blank line 3 still counts as a physical line. */
    CLI_TEST_VPOC_BAD(cli_test_fix("non_numeric.csv"), "non_numeric.csv:4:", "high", "abc");
}

Test(cli, csv_high_below_body) {
    CLI_TEST_VPOC_BAD(cli_test_fix("high_below.csv"), "high_below.csv:3:", "high", "100.25",
                      "100.5");
}

Test(cli, csv_low_above_body) {
    CLI_TEST_VPOC_BAD(cli_test_fix("low_above.csv"), "low_above.csv:3:", "low", "100.25");
}

Test(cli, csv_negative_volume) {
    CLI_TEST_VPOC_BAD(cli_test_fix("negative_volume.csv"), "negative_volume.csv:3:", "volume",
                      "-5");
}

Test(cli, csv_nan_value) {
    CLI_TEST_VPOC_BAD(cli_test_fix("nan_close.csv"), "nan_close.csv:3:", "close", "nan");
}

Test(cli, csv_inf_value) {
    CLI_TEST_VPOC_BAD(cli_test_fix("inf_volume.csv"), "inf_volume.csv:3:", "volume", "inf");
}

Test(cli, csv_duplicate_timestamp) {
    CLI_TEST_VPOC_BAD(cli_test_fix("dup_timestamp.csv"), "dup_timestamp.csv:3:", "timestamp",
                      "not increasing");
}

Test(cli, csv_backwards_timestamp) {
    CLI_TEST_VPOC_BAD(cli_test_fix("backwards_timestamp.csv"),
                      "backwards_timestamp.csv:4:", "timestamp", "not increasing", "09:29");
}

Test(cli, csv_bad_timestamp_format) {
    CLI_TEST_VPOC_BAD(cli_test_fix("bad_timestamp.csv"), "bad_timestamp.csv:3:", "timestamp",
                      "2024/01/02 09:31", "expected YYYY-MM-DD");
}

Test(cli, csv_too_few_fields) {
    CLI_TEST_VPOC_BAD(cli_test_fix("short_row.csv"), "short_row.csv:3:", "5 fields", "6");
}

Test(cli, csv_too_many_fields) {
    CLI_TEST_VPOC_BAD(cli_test_fix("long_row.csv"), "long_row.csv:3:", "7 fields", "6");
}

Test(cli, csv_ten_megabyte_line) {
    const char *path = cli_test_path("huge.csv");
    size_t big = 10u << 20;
    static const char head[] = "timestamp,open,high,low,close,volume\n"
                               "2024-01-02 09:30,100,101,99,100.5,10\n"
                               "2024-01-02 09:31,100,101,99,100.5,";
    char *b = malloc(sizeof(head) + big + 1);
    cr_assert(b);
    memcpy(b, head, sizeof(head) - 1);
    memset(b + sizeof(head) - 1, '1', big);
    b[sizeof(head) - 1 + big] = '\n';
    cli_test_spit(path, b, sizeof(head) + big);
    free(b);
    CLI_TEST_VPOC_BAD(path, "huge.csv:3:", "longer than");
}

Test(cli, csv_nonexistent_file) {
    const char *path = cli_test_path("no/such.csv");
    CLI_TEST_VPOC_BAD(path, path, "cannot open");
}

Test(cli, csv_directory_as_file) {
    CLI_TEST_VPOC_BAD(cli_test_dir, cli_test_dir, "directory");
}

Test(cli, csv_stdin_empty) {
    /* rs_test_run gives the child /dev/null as stdin. */
    CLI_TEST_VPOC_BAD("-", "<stdin>", "empty file");
}

Test(cli, csv_huge_price_no_crash) {
    /* A finite but absurd price (1e300) is rejected by the loader: price levels must fit in
     * 64 bits, so the profile code never sees it. */
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("huge_price.csv"));
    cli_test_status(2);
    cr_assert_str_eq(cli_test_res.out, "");
    CLI_TEST_ERR_HAS("huge_price.csv:3:", "open");
}

Test(cli, csv_price_range_too_wide_for_tick_no_crash) {
    /* Closes 0 and 2^61 + 512 are beyond the price limit; the row is named. */
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("wide_range.csv"), "--tick", "1");
    cli_test_status(2);
    cr_assert_str_eq(cli_test_res.out, "");
    CLI_TEST_ERR_HAS("wide_range.csv:3:");
}

Test(cli, tick_too_fine_for_the_data) {
    /* Valid prices, but a tick so small that one session spans more levels than a profile may
     * hold: an input error naming the session and the tick, before anything is allocated. */
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("tiny.csv"), "--tick", "1e-8");
    cli_test_status(2);
    cr_assert_str_eq(cli_test_res.out, "");
    CLI_TEST_ERR_HAS("price levels", "--tick");
}

Test(cli, data_and_synthetic_days_exclude_each_other) {
    CLI_TEST_RUN("train", "--headless", "--data", cli_test_fix("tiny.csv"), "--synthetic-days",
                 "5");
    cli_test_status(2);
    CLI_TEST_ERR_HAS("--data", "--synthetic-days");
}

Test(cli, resume_rejects_architecture_flags) {
    CLI_TEST_RUN("train", "--headless", "--resume", "x.rsmodel", "--hidden", "8");
    cli_test_status(2);
    CLI_TEST_ERR_HAS("--hidden", "--resume");
}

Test(cli, synth_unwritable_output_is_a_usage_error) {
    CLI_TEST_RUN("synth", "--days", "1", "--out", "/nonexistent-dir/x.csv");
    cli_test_status(2);
    CLI_TEST_ERR_HAS("/nonexistent-dir/x.csv");
}

Test(cli, csv_skip_bad_rows_vpoc) {
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("skip_one.csv"), "--skip-bad-rows");
    cli_test_status(0);
    CLI_TEST_ERR_HAS("1 bad row skipped", "skip_one.csv:3:", "high");
    /* Three good bars remain: closes 100.5 x10, 100.75 x20, 101 x30; POC 101 holds 30 of 60,
     * and 70% (42) is reached by adding 100.75 (the only neighbour). */
    cr_assert_eq(cli_test_count(cli_test_res.out, "\n"), 1);
    CLI_TEST_OUT_HAS("\"session\":\"2024-01-02\"", "\"bars\":3,", "\"poc\":101,", "\"vah\":101,",
                     "\"val\":100.75}");
}

/* The exports people have: each read without editing, the same three bars (closes 100.5 x10,
 * 100.75 x20, 101 x30: POC 101, value area 100.75..101). */
static void cli_test_three_bars(void) {
    cli_test_status(0);
    cr_assert_eq(cli_test_count(cli_test_res.out, "\n"), 1, "%s", cli_test_res.out);
    CLI_TEST_OUT_HAS("\"session\":\"2024-01-02\"", "\"bars\":3,", "\"poc\":101,", "\"vah\":101,",
                     "\"val\":100.75}");
}

Test(cli, csv_exports_tradingview_ninjatrader_databento) {
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("tradingview.csv"));
    cli_test_three_bars();
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("ninjatrader.txt"), "--tz", "UTC");
    cli_test_three_bars();
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("databento_mixed.csv"), "--symbol", "ESH4");
    cli_test_three_bars();
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("databento_mixed.csv"), "--continuous", "front");
    cli_test_three_bars(); /* one day: ESH4 traded most, ESM4 never passed it */
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("headerless.csv"), "--columns",
                 "timestamp,open,high,low,close,volume");
    cli_test_three_bars();
    /* without the names: the first row is taken for a header, and the error says what to do */
    CLI_TEST_VPOC_BAD(cli_test_fix("headerless.csv"),
                      "headerless.csv:1: header:", "name the columns with --columns");
}

/* Several instruments and no pick: one line naming each with its rows, status 2. */
Test(cli, csv_several_instruments_vpoc) {
    CLI_TEST_VPOC_BAD(cli_test_fix("databento_mixed.csv"), "databento_mixed.csv",
                      "several instruments: ESH4 (3 rows), ESM4 (2 rows)", "--symbol NAME");
    CLI_TEST_TRAIN_BAD(cli_test_fix("databento_mixed.csv"), "several instruments",
                       "pick one with --symbol NAME");
}

Test(cli, csv_skip_bad_rows_only_bad_rows_is_an_error) {
    /* Skipping every data row leaves nothing: still an input error. */
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("no_header.csv"), "--skip-bad-rows");
    cli_test_status(2);
    cr_assert_str_eq(cli_test_res.out, "");
}

/* ---- CSV errors through headless `train` ---- */

Test(cli, train_csv_empty_file) {
    CLI_TEST_TRAIN_BAD(cli_test_fix("empty.csv"), "empty.csv", "empty file");
}

Test(cli, train_csv_missing_column) {
    CLI_TEST_TRAIN_BAD(cli_test_fix("missing_volume.csv"), "missing_volume.csv:1:", "'volume'");
}

Test(cli, train_csv_non_numeric) {
    CLI_TEST_TRAIN_BAD(cli_test_fix("non_numeric.csv"), "non_numeric.csv:4:", "high", "abc");
}

Test(cli, train_csv_high_below_body) {
    CLI_TEST_TRAIN_BAD(cli_test_fix("high_below.csv"), "high_below.csv:3:", "high");
}

Test(cli, train_csv_backwards_timestamp) {
    CLI_TEST_TRAIN_BAD(cli_test_fix("backwards_timestamp.csv"),
                       "backwards_timestamp.csv:4:", "timestamp", "not increasing");
}

Test(cli, train_csv_bad_timestamp_format) {
    CLI_TEST_TRAIN_BAD(cli_test_fix("bad_timestamp.csv"), "bad_timestamp.csv:3:", "timestamp");
}

Test(cli, train_csv_nonexistent_file) {
    const char *path = cli_test_path("missing.csv");
    CLI_TEST_TRAIN_BAD(path, path, "cannot open");
}

Test(cli, train_csv_directory_as_file) {
    const char *dir = cli_test_path("adir");
    cr_assert_eq(mkdir(dir, 0700), 0);
    CLI_TEST_TRAIN_BAD(dir, dir, "directory");
}

Test(cli, train_csv_error_stdout_jsonl_empty) {
    /* --jsonl - : the error goes to stderr and stdout stays empty. */
    CLI_TEST_RUN("train", "--headless", "--epochs", "1", "--data", cli_test_fix("nan_close.csv"),
                 "--output", cli_test_path("ckpt"));
    cli_test_status(2);
    cr_assert_str_eq(cli_test_res.out, "");
    CLI_TEST_ERR_HAS("nan_close.csv:3:", "close");
}

/* 5 synthetic days plus a duplicate of the last row: the bad row is line 1 + 6900 + 1. */
static const char *cli_test_synth_with_dup(void) {
    const char *path = cli_test_path("dup5.csv");
    CLI_TEST_RUN("synth", "--days", "5", "--seed", "3", "--out", path);
    cli_test_status(0);
    size_t len;
    char *b = cli_test_slurp(path, &len);
    cr_assert(len > 2 && b[len - 1] == '\n');
    const char *last = b + len - 2;
    while (last > b && last[-1] != '\n')
        last--;
    size_t ll = (size_t)(b + len - last);
    char *nb = malloc(len + ll);
    cr_assert(nb);
    memcpy(nb, b, len);
    memcpy(nb + len, last, ll);
    cli_test_spit(path, nb, len + ll);
    free(nb);
    free(b);
    return path;
}

Test(cli, train_csv_duplicate_row_at_end) {
    CLI_TEST_TRAIN_BAD(cli_test_synth_with_dup(), "dup5.csv:6902:", "timestamp", "not increasing");
}

Test(cli, train_csv_skip_bad_rows) {
    const char *path = cli_test_synth_with_dup();
    const char *jsonl = cli_test_path("skip.jsonl");
    CLI_TEST_RUN("train", "--headless", "--epochs", "1", "--data", path, "--skip-bad-rows",
                 "--output", cli_test_path("ckpt"), "--jsonl", jsonl);
    cli_test_status(0);
    CLI_TEST_ERR_HAS("1 bad row skipped", "dup5.csv:6902:");
    char *j = cli_test_slurp(jsonl, NULL);
    cr_assert(strstr(j, "\"type\":\"summary\""));
    free(j);
}

/* ---- flags ---- */

Test(cli, flag_unknown_train) {
    CLI_TEST_TRAIN_FLAGS("--bogus");
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "unknown option '--bogus'");
}

Test(cli, flag_continuous_takes_front_only) {
    CLI_TEST_RUN("train", "--headless", "--continuous", "back");
    cli_test_usage(CLI_HINT_TRAIN,
                   (const char *const[]){"--continuous: 'back' is not front", NULL});
}

Test(cli, flag_unknown_vpoc) {
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("tiny.csv"), "--bogus");
    CLI_TEST_USAGE(CLI_HINT_VPOC, "unknown option '--bogus'");
}

Test(cli, flag_unknown_synth) {
    const char *out = cli_test_path("s.csv");
    CLI_TEST_RUN("synth", "--days", "2", "--out", out, "--bogus");
    CLI_TEST_USAGE(CLI_HINT_SYNTH, "unknown option '--bogus'");
    cr_assert_eq(cli_test_dir_entries(), 0, "synth left files behind");
}

Test(cli, flag_unknown_toplevel) {
    CLI_TEST_RUN("--bogus"); /* the dashboard's options are train's */
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "unknown option '--bogus'");
}

Test(cli, flag_missing_value_train) {
    CLI_TEST_TRAIN_FLAGS("--epochs");
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "--epochs needs a value");
}

Test(cli, flag_missing_value_vpoc) {
    CLI_TEST_RUN("vpoc", "--data");
    CLI_TEST_USAGE(CLI_HINT_VPOC, "--data needs a value");
}

Test(cli, flag_missing_value_synth) {
    CLI_TEST_RUN("synth", "--days", "2", "--out");
    CLI_TEST_USAGE(CLI_HINT_SYNTH, "--out needs a value");
}

Test(cli, flag_epochs_not_numeric) {
    CLI_TEST_TRAIN_FLAGS("--epochs", "abc");
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "--epochs", "'abc'", "integer");
}

Test(cli, flag_epochs_trailing_garbage) {
    CLI_TEST_TRAIN_FLAGS("--epochs", "3x");
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "--epochs", "'3x'");
}

Test(cli, flag_session_start_hour_24_train) {
    CLI_TEST_TRAIN_FLAGS("--session-start-hour", "24");
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "--session-start-hour", "'24'", "23");
}

Test(cli, flag_session_start_hour_24_vpoc) {
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("tiny.csv"), "--session-start-hour", "24");
    CLI_TEST_USAGE(CLI_HINT_VPOC, "--session-start-hour", "'24'", "23");
}

Test(cli, flag_chunk_negative_train) {
    CLI_TEST_TRAIN_FLAGS("--chunk", "-1");
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "--chunk", "'-1'");
}

Test(cli, flag_chunk_negative_vpoc) {
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("tiny.csv"), "--chunk", "-1");
    CLI_TEST_USAGE(CLI_HINT_VPOC, "--chunk", "'-1'");
}

/* One limit for the chunk size, the engine's (VPOC_CHUNK_MAX), for train and vpoc alike. */
Test(cli, flag_chunk_over_the_limit) {
    char over[24], max[24];
    snprintf(over, sizeof(over), "%d", VPOC_CHUNK_MAX + 1);
    snprintf(max, sizeof(max), "%d", VPOC_CHUNK_MAX);
    CLI_TEST_TRAIN_FLAGS("--chunk", over);
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "--chunk", over, max);
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("tiny.csv"), "--chunk", over);
    CLI_TEST_USAGE(CLI_HINT_VPOC, "--chunk", over, max);
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("tiny.csv"), "--chunk", max);
    cli_test_status(0);
}

Test(cli, flag_profile_foo_train) {
    CLI_TEST_TRAIN_FLAGS("--profile", "foo");
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "--profile", "'foo'", "close", "range");
}

Test(cli, flag_profile_foo_vpoc) {
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("tiny.csv"), "--profile", "foo");
    CLI_TEST_USAGE(CLI_HINT_VPOC, "--profile", "'foo'", "close", "range");
}

Test(cli, flag_loss_foo) {
    CLI_TEST_TRAIN_FLAGS("--loss", "foo");
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "--loss", "'foo'", "mse", "bce");
}

Test(cli, flag_hidden_zero) {
    CLI_TEST_TRAIN_FLAGS("--hidden", "0");
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "--hidden", "'0'");
}

Test(cli, flag_hidden_not_numeric) {
    CLI_TEST_TRAIN_FLAGS("--hidden", "32,abc");
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "--hidden", "'abc'");
}

Test(cli, flag_hidden_empty_item) {
    CLI_TEST_TRAIN_FLAGS("--hidden", "32,,16");
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "--hidden");
}

Test(cli, flag_value_area_above_one_train) {
    CLI_TEST_TRAIN_FLAGS("--value-area", "1.5");
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "--value-area", "'1.5'");
}

Test(cli, flag_value_area_above_one_vpoc) {
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("tiny.csv"), "--value-area", "1.5");
    CLI_TEST_USAGE(CLI_HINT_VPOC, "--value-area", "'1.5'");
}

Test(cli, flag_tick_nan) {
    CLI_TEST_TRAIN_FLAGS("--tick", "nan");
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "--tick", "'nan'");
}

Test(cli, flag_jsonl_without_headless) {
    CLI_TEST_RUN("train", "--jsonl", cli_test_path("o.jsonl"));
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "--jsonl", "--headless");
    cr_assert_eq(cli_test_dir_entries(), 0);
}

Test(cli, flag_unexpected_argument) {
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("tiny.csv"), "extra");
    CLI_TEST_USAGE(CLI_HINT_VPOC, "unexpected argument", "'extra'");
}

Test(cli, unknown_subcommand) {
    CLI_TEST_RUN("frob");
    CLI_TEST_USAGE("; see 'ringside --help'", "unknown command 'frob'");
}

Test(cli, vpoc_without_data) {
    CLI_TEST_RUN("vpoc", "--chunk", "7");
    CLI_TEST_USAGE(CLI_HINT_VPOC, "--data", "required");
}

Test(cli, synth_without_out) {
    CLI_TEST_RUN("synth", "--days", "3");
    CLI_TEST_USAGE(CLI_HINT_SYNTH, "--out", "required");
    cr_assert_eq(cli_test_dir_entries(), 0);
}

Test(cli, synth_without_days) {
    CLI_TEST_RUN("synth", "--out", cli_test_path("s.csv"));
    CLI_TEST_USAGE(CLI_HINT_SYNTH, "--days", "required");
    cr_assert_eq(cli_test_dir_entries(), 0, "synth created its output without --days");
}

Test(cli, synth_bad_days_creates_nothing) {
    CLI_TEST_RUN("synth", "--out", cli_test_path("s.csv"), "--days", "abc");
    CLI_TEST_USAGE(CLI_HINT_SYNTH, "--days", "'abc'");
    cr_assert_eq(cli_test_dir_entries(), 0, "synth left files behind");
}

Test(cli, synth_bad_hour_creates_nothing) {
    CLI_TEST_RUN("synth", "--out", cli_test_path("s.csv"), "--days", "2", "--session-start-hour",
                 "24");
    CLI_TEST_USAGE(CLI_HINT_SYNTH, "--session-start-hour", "'24'");
    cr_assert_eq(cli_test_dir_entries(), 0, "synth left files behind");
}

/* ---- allocator configuration ---- */

Test(cli, alloc_conf_flag_unknown_key) {
    CLI_TEST_TRAIN_FLAGS("--alloc-conf", "foo:1");
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "--alloc-conf", "unknown key", "'foo'");
}

Test(cli, alloc_conf_flag_bad_value) {
    CLI_TEST_TRAIN_FLAGS("--alloc-conf", "max_split_size_mb:abc");
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "--alloc-conf", "max_split_size_mb", "'abc'");
}

Test(cli, alloc_conf_flag_no_colon) {
    CLI_TEST_TRAIN_FLAGS("--alloc-conf", "garbage");
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "--alloc-conf", "'garbage'");
}

Test(cli, alloc_conf_env_unknown_key) {
    cr_assert_eq(setenv("RINGSIDE_ALLOC_CONF", "bogus:1", 1), 0);
    CLI_TEST_TRAIN_FLAGS("--epochs", "1");
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "RINGSIDE_ALLOC_CONF", "unknown key", "'bogus'");
}

Test(cli, alloc_conf_env_bad_value) {
    cr_assert_eq(setenv("RINGSIDE_ALLOC_CONF", "garbage_collection_threshold:x", 1), 0);
    CLI_TEST_TRAIN_FLAGS("--epochs", "1");
    CLI_TEST_USAGE(CLI_HINT_TRAIN, "RINGSIDE_ALLOC_CONF", "garbage_collection_threshold", "'x'");
}

Test(cli, alloc_conf_flag_overrides_bad_env) {
    cr_assert_eq(setenv("RINGSIDE_ALLOC_CONF", "bogus:1", 1), 0);
    CLI_TEST_RUN("train", "--headless", "--synthetic-days", "5", "--epochs", "1", "--output",
                 cli_test_path("ckpt"), "--jsonl", cli_test_path("o.jsonl"), "--alloc-conf",
                 "max_split_size_mb:128");
    cli_test_status(0);
}

/* ---- compute backends ---- */

/* True when `ringside --version` lists hip among the compiled-in backends. */
static bool cli_test_has_hip(void) {
    CLI_TEST_RUN("--version");
    cli_test_status(0);
    return strstr(cli_test_res.out, "hip") != NULL;
}

Test(cli, backend_hip_not_compiled_vpoc) {
    if (cli_test_has_hip())
        cr_skip_test("this build has the HIP backend");
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("tiny.csv"), "--backend", "hip");
    cli_test_status(2);
    cr_assert_str_eq(cli_test_res.out, "");
    CLI_TEST_ERR_HAS("'hip'", "not compiled");
}

Test(cli, backend_hip_not_compiled_train) {
    if (cli_test_has_hip())
        cr_skip_test("this build has the HIP backend");
    CLI_TEST_TRAIN_FLAGS("--backend", "hip");
    cli_test_status(2);
    CLI_TEST_ERR_HAS("'hip'", "not compiled");
}

Test(cli, backend_foo_vpoc) {
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("tiny.csv"), "--backend", "foo");
    cli_test_status(2);
    cr_assert_str_eq(cli_test_res.out, "");
    CLI_TEST_ERR_HAS("unknown backend 'foo'", "auto");
}

Test(cli, backend_foo_train) {
    CLI_TEST_TRAIN_FLAGS("--backend", "foo");
    cli_test_status(2);
    CLI_TEST_ERR_HAS("unknown backend 'foo'");
}

/* ---- checkpoints ---- */

Test(cli, resume_missing_file) {
    const char *ck = cli_test_path("nope.rsmodel");
    CLI_TEST_RESUME_BAD(ck, ck, "cannot open");
}

Test(cli, resume_truncated) {
    const char *ck = cli_test_make_ckpt();
    size_t len;
    char *b = cli_test_slurp(ck, &len);
    cli_test_spit(ck, b, len / 2);
    free(b);
    CLI_TEST_RESUME_BAD(ck, "vpoc_mlp.rsmodel", "truncated");
}

Test(cli, resume_truncated_below_header) {
    const char *ck = cli_test_make_ckpt();
    size_t len;
    char *b = cli_test_slurp(ck, &len);
    cli_test_spit(ck, b, 20);
    free(b);
    CLI_TEST_RESUME_BAD(ck, "vpoc_mlp.rsmodel", "truncated");
}

Test(cli, resume_corrupt_body) {
    const char *ck = cli_test_make_ckpt();
    size_t len;
    char *b = cli_test_slurp(ck, &len);
    b[len / 2] ^= 0x40; /* inside the parameter arrays */
    cli_test_spit(ck, b, len);
    free(b);
    CLI_TEST_RESUME_BAD(ck, "vpoc_mlp.rsmodel", "checksum");
}

Test(cli, resume_corrupt_header_says_corrupt) {
    /* A bit flip in hidden[0] (offset 20) of a complete file: the header now implies another
     * size, and without a valid checksum a truncation and a damaged header look alike, so the
     * message must name both and the checksum. */
    const char *ck = cli_test_make_ckpt();
    size_t len;
    char *b = cli_test_slurp(ck, &len);
    b[20] ^= 0x01;
    cli_test_spit(ck, b, len);
    free(b);
    CLI_TEST_RESUME_BAD(ck, "vpoc_mlp.rsmodel", "corrupt");
    cr_assert(strstr(cli_test_res.err, "checksum mismatch"), "%s", cli_test_res.err);
}

Test(cli, resume_not_a_checkpoint) {
    CLI_TEST_RESUME_BAD(cli_test_fix("tiny.csv"), "tiny.csv");
}

/* A checkpoint whose checksum is right but whose numbers the model cannot run in float32: the
 * double at offset off of the file set to v, the CRC fixed. */
static void cli_test_ckpt_set(const char *ck, size_t off, double v) {
    size_t len;
    unsigned char *b = (unsigned char *)cli_test_slurp(ck, &len);
    cr_assert_gt(len, off + 8);
    memcpy(b + off, &v, 8);
    uint32_t crc = crc32_update(0, b, len - 4);
    for (int i = 0; i < 4; i++)
        b[len - 4 + (size_t)i] = (unsigned char)(crc >> (8 * i));
    cli_test_spit(ck, (const char *)b, len);
    free(b);
}

/* A finite parameter past float32's range (1e308), or a norm_std so small the normalised
 * features overflow (5e-324), gave "output": null on every row with exit 0: refused at load,
 * one line naming the field and its value, exit 2, nothing on stdout. */
Test(cli, predict_refuses_numbers_float32_cannot_run) {
    char ck[4200], data[4200]; /* cli_test_path's buffers are reused */
    snprintf(ck, sizeof(ck), "%s", cli_test_make_ckpt());
    snprintf(data, sizeof(data), "%s", cli_test_path("new.csv"));
    CLI_TEST_RUN("synth", "--days", "5", "--out", data);
    cli_test_status(0);
    CLI_TEST_RUN("predict", "--model", ck, "--data", data);
    cli_test_status(0); /* the model as trained runs */
    cr_assert(strstr(cli_test_res.out, "\"output\":") && !strstr(cli_test_res.out, "null,"),
              "%.300s", cli_test_res.out);
    size_t len;
    char *orig = cli_test_slurp(ck, &len);
    /* 24 features: norm_mean at 112, norm_std at 112 + 8 * 24, params after Adam's 56 bytes */
    static const struct {
        size_t off;
        double v;
        const char *said;
    } cases[] = {
        {112 + 16 * 24 + 56, 1e308, "params[0] is 1e+308: beyond float32's range"},
        {112 + 16 * 24 + 56 + 8 * 5, -4e38, "params[5] is -4e+38: beyond float32's range"},
        {112 + 8 * 24 + 8 * 3, 5e-324, "norm_std[3] is 4.94066e-324: below 1e-12"},
        {112 + 8 * 2, 1e300, "norm_mean[2] is 1e+300: beyond float32's range"},
        {104, 1e-300, "y_std is 1e-300: below 1e-12"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        cli_test_spit(ck, orig, len);
        cli_test_ckpt_set(ck, cases[k].off, cases[k].v);
        for (int cmd = 0; cmd < 2; cmd++) {
            if (cmd == 0)
                CLI_TEST_RUN("predict", "--model", ck, "--data", data);
            else
                CLI_TEST_RUN("export", "--model", ck, "--format", "onnx", "--out",
                             cli_test_path("m.onnx"));
            cli_test_status(2);
            cr_assert_str_eq(cli_test_res.out, "");
            cr_assert_eq(cli_test_count(cli_test_res.err, "\n"), 1, "%s", cli_test_res.err);
            char want[4400];
            snprintf(want, sizeof(want), "ringside %s: %s: %s", cmd == 0 ? "predict" : "export", ck,
                     cases[k].said);
            cr_assert(strncmp(cli_test_res.err, want, strlen(want)) == 0, "want '%s', got %s", want,
                      cli_test_res.err);
        }
    }
    free(orig);
}

/* ---- what is planted where ringside writes ---- */

enum cli_plant { CLI_PLANT_FIFO, CLI_PLANT_LINK, CLI_PLANT_DIR, CLI_PLANT_OTHERS };

static void cli_test_plant(enum cli_plant what, const char *path, const char *victim) {
    switch (what) {
    case CLI_PLANT_FIFO:
        cr_assert_eq(mkfifo(path, 0666), 0);
        break;
    case CLI_PLANT_LINK:
        cr_assert_eq(symlink(victim, path), 0);
        break;
    case CLI_PLANT_DIR:
        cr_assert_eq(mkdir(path, 0777), 0);
        break;
    case CLI_PLANT_OTHERS: /* a regular file of another user's (this test runs as root) */
        cli_test_spit(path, "theirs\n", 7);
        cr_assert_eq(chown(path, 65534, 65534), 0);
        break;
    }
}

/* A FIFO planted as session.log in an output directory others can write held the run before
 * any output (a writer's open waits for a reader); a link was skipped with a warning and a
 * directory or another user's file the same: each is refused now, before any work, in one line
 * naming the path and what is there, exit 2, and left as it was. The bound on the run is a
 * failure bound only: a refusal comes at once. */
Test(cli, train_refuses_what_is_planted_as_its_session_log) {
    char dir[4200], log[4200], victim[4200], jsonl[4200]; /* cli_test_path's buffers are reused */
    snprintf(dir, sizeof(dir), "%s", cli_test_path("shared"));
    snprintf(log, sizeof(log), "%s", cli_test_path("shared/session.log"));
    snprintf(victim, sizeof(victim), "%s", cli_test_path("victim"));
    snprintf(jsonl, sizeof(jsonl), "%s", cli_test_path("run.jsonl"));
    cr_assert_eq(mkdir(dir, 0777), 0);
    cr_assert_eq(chmod(dir, 01777), 0); /* like /tmp: anyone may create a file in it */
    cli_test_spit(victim, "precious", 8);
    static const char *const said[] = {
        "a FIFO is there, not a regular file: left as it is",
        "a symbolic link is there (not followed): left as it is",
        "a directory is there, not a regular file: left as it is",
        "a file of uid 65534 is there, not of this user (uid 0): left as it is"};
    for (int what = CLI_PLANT_FIFO; what <= CLI_PLANT_OTHERS; what++) {
        if (what == CLI_PLANT_OTHERS && geteuid() != 0)
            continue; /* no file of another user's can be made */
        cli_test_plant((enum cli_plant)what, log, victim);
        const char *argv[] = {"train",    "--headless", "--synthetic-days", "5",   "--epochs", "1",
                              "--output", dir,          "--jsonl",          jsonl, NULL};
        cli_test_res.rc =
            rs_test_run_within(argv, 20000, cli_test_res.out, sizeof(cli_test_res.out),
                               cli_test_res.err, sizeof(cli_test_res.err));
        cr_assert_neq(cli_test_res.rc, -2, "still running 20 s on: %s holds the run", said[what]);
        cli_test_status(2);
        char want[4400];
        snprintf(want, sizeof(want),
                 "ringside train: %s: %s (the session log is written only as a regular file of "
                 "yours)\n",
                 log, said[what]);
        cr_assert_str_eq(cli_test_res.err, want);
        cr_assert_not(cli_test_exists(jsonl), "the run went on");
        cr_assert_not(cli_test_exists(cli_test_path("shared/vpoc_mlp.rsmodel")));
        struct stat st;
        cr_assert_eq(lstat(log, &st), 0);
        static const mode_t kinds[] = {S_IFIFO, S_IFLNK, S_IFDIR, S_IFREG};
        cr_assert_eq(st.st_mode & S_IFMT, kinds[what], "what was planted is not as it was");
        char *v = cli_test_slurp(victim, NULL);
        cr_assert_str_eq(v, "precious");
        free(v);
        if (what == CLI_PLANT_OTHERS) {
            char *t = cli_test_slurp(log, NULL);
            cr_assert_str_eq(t, "theirs\n");
            free(t);
        }
        cr_assert_eq(remove(log), 0);
    }
}

/* The session log of a run is created 0600 (it holds the runtime's messages beside the kernel
 * log's), whatever the umask lets others read; the model files take the umask's mode. */
Test(cli, train_session_log_is_private) {
    const char *dir = cli_test_path("out");
    cr_assert_eq(mkdir(dir, 0755), 0);
    mode_t old = umask(002);
    CLI_TEST_RUN("train", "--headless", "--synthetic-days", "5", "--epochs", "1", "--output", dir,
                 "--jsonl", cli_test_path("run.jsonl"));
    umask(old);
    cli_test_status(0);
    struct stat st;
    cr_assert_eq(stat(cli_test_path("out/session.log"), &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "session.log is %o", (unsigned)(st.st_mode & 0777));
    static const char *const models[] = {"out/vpoc_mlp.rsmodel", "out/vpoc_mlp_metadata.json",
                                         "out/vpoc_mlp.safetensors"};
    for (size_t k = 0; k < 3; k++) {
        cr_assert_eq(stat(cli_test_path(models[k]), &st), 0);
        cr_assert_eq(st.st_mode & 0777, 0664, "%s is %o, not 0666 under umask 002", models[k],
                     (unsigned)(st.st_mode & 0777));
    }
}

/* --jsonl FILE where a link was planted: the link is replaced by the recording, its target is
 * not written. */
Test(cli, train_jsonl_replaces_a_planted_link) {
    const char *victim = cli_test_path("victim"), *jsonl = cli_test_path("run.jsonl");
    cli_test_spit(victim, "precious", 8);
    cr_assert_eq(symlink(victim, jsonl), 0);
    CLI_TEST_RUN("train", "--headless", "--synthetic-days", "5", "--epochs", "1", "--output",
                 cli_test_path("out"), "--jsonl", jsonl);
    cli_test_status(0);
    char *v = cli_test_slurp(victim, NULL);
    cr_assert_str_eq(v, "precious", "the link's target was written");
    free(v);
    struct stat st;
    cr_assert_eq(lstat(jsonl, &st), 0);
    cr_assert(S_ISREG(st.st_mode), "the link is still there");
    char *j = cli_test_slurp(jsonl, NULL);
    cr_assert(strncmp(j, "{\"type\":\"run\"", 13) == 0, "%.80s", j);
    cr_assert(strstr(j, "\"type\":\"summary\""));
    free(j);
    cr_assert_eq(rs_test_count_tmp(cli_test_dir), 0);
}

/* Links and FIFOs planted at the checkpoint's paths are replaced by the files (renamed over
 * them), their targets never written and no writer waiting on a FIFO; a directory at one of
 * them would fail every checkpoint: refused before any work, exit 2, one line. */
Test(cli, train_replaces_what_is_planted_at_its_checkpoints) {
    char dir[4200], victim[4200]; /* cli_test_path's buffers are reused */
    snprintf(dir, sizeof(dir), "%s", cli_test_path("shared"));
    snprintf(victim, sizeof(victim), "%s", cli_test_path("victim"));
    cr_assert_eq(mkdir(dir, 0777), 0);
    cr_assert_eq(chmod(dir, 01777), 0);
    cli_test_spit(victim, "precious", 8);
    cr_assert_eq(symlink(victim, cli_test_path("shared/vpoc_mlp.rsmodel")), 0);
    cr_assert_eq(symlink(victim, cli_test_path("shared/vpoc_mlp_metadata.json")), 0);
    cr_assert_eq(mkfifo(cli_test_path("shared/vpoc_mlp.safetensors"), 0666), 0);
    const char *argv[] = {
        "train", "--headless", "--synthetic-days",         "5", "--epochs", "1", "--output",
        dir,     "--jsonl",    cli_test_path("run.jsonl"), NULL};
    cli_test_res.rc = rs_test_run_within(argv, 40000, cli_test_res.out, sizeof(cli_test_res.out),
                                         cli_test_res.err, sizeof(cli_test_res.err));
    cr_assert_neq(cli_test_res.rc, -2, "still running 40 s on");
    cli_test_status(0);
    char *v = cli_test_slurp(victim, NULL);
    cr_assert_str_eq(v, "precious", "written through a planted link");
    free(v);
    static const char *const files[] = {"shared/vpoc_mlp.rsmodel", "shared/vpoc_mlp_metadata.json",
                                        "shared/vpoc_mlp.safetensors"};
    struct stat st;
    for (size_t k = 0; k < 3; k++) {
        cr_assert_eq(lstat(cli_test_path(files[k]), &st), 0);
        cr_assert(S_ISREG(st.st_mode), "%s is not the checkpoint's file", files[k]);
    }
    cr_assert_eq(unlink(cli_test_path("shared/vpoc_mlp.safetensors")), 0);
    cr_assert_eq(mkdir(cli_test_path("shared/vpoc_mlp.safetensors"), 0777), 0);
    CLI_TEST_RUN("train", "--headless", "--synthetic-days", "5", "--epochs", "1", "--output", dir,
                 "--jsonl", cli_test_path("run2.jsonl"));
    cli_test_status(2);
    char want[4400];
    snprintf(want, sizeof(want),
             "ringside train: %s: a directory is there, not a regular file: left as it is (the "
             "checkpoint goes there)\n",
             cli_test_path("shared/vpoc_mlp.safetensors"));
    cr_assert_str_eq(cli_test_res.err, want);
    cr_assert_not(cli_test_exists(cli_test_path("run2.jsonl")));
}

/* ---- help and version ---- */

static void cli_test_help(const char *const *argv) {
    cli_test_exec(argv);
    cli_test_status(0);
    cr_assert(strstr(cli_test_res.out, "usage:"), "no usage: in\n%s", cli_test_res.out);
    cr_assert_str_eq(cli_test_res.err, "");
}

Test(cli, help_toplevel) {
    cli_test_help((const char *const[]){"--help", NULL});
    CLI_TEST_OUT_HAS("train", "vpoc", "synth");
    cli_test_help((const char *const[]){"-h", NULL});
}

Test(cli, help_train) {
    cli_test_help((const char *const[]){"train", "--help", NULL});
    CLI_TEST_OUT_HAS("--headless", "--alloc-conf", "--resume");
}

Test(cli, help_vpoc) {
    cli_test_help((const char *const[]){"vpoc", "--help", NULL});
    CLI_TEST_OUT_HAS("--data", "--chunk");
}

Test(cli, help_synth) {
    cli_test_help((const char *const[]){"synth", "--help", NULL});
    CLI_TEST_OUT_HAS("--days", "--out");
}

Test(cli, help_wins_over_bad_flags) {
    /* --help before a bad value prints help; nothing runs. */
    cli_test_help((const char *const[]){"train", "--help", "--epochs", "abc", NULL});
}

Test(cli, version) {
    CLI_TEST_RUN("--version");
    cli_test_status(0);
    cr_assert(strncmp(cli_test_res.out, "ringside ", 9) == 0, "got %s", cli_test_res.out);
    CLI_TEST_OUT_HAS("cpu");
    CLI_TEST_RUN("-V");
    cli_test_status(0);
}

/* ---- end to end ---- */

/* The value of "key": in a JSON line, as a double; fails when absent. */
static double cli_test_json_num(const char *line, const char *key) {
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\":", key);
    const char *p = strstr(line, pat);
    cr_assert(p, "no %s in %s", key, line);
    return strtod(p + strlen(pat), NULL);
}

Test(cli, vpoc_tiny_hand_computed_close) {
    /* Session 2024-01-02 (bars before 18:00): closes 100 x10, 100.25 x30, 100.5 x5; POC 100.25
     * holds 30 of 45; 70% = 31.5 needs one more level: below (10) beats above (5), so VAL 100.
     * The 19:00 bar starts trading day 2024-01-03: one level, 101 everywhere. */
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("tiny.csv"));
    cli_test_status(0);
    cr_assert_eq(cli_test_count(cli_test_res.out, "\n"), 2);
    const char *l2 = strchr(cli_test_res.out, '\n') + 1;
    cr_assert(strncmp(cli_test_res.out, "{\"session\":\"2024-01-02\"", 23) == 0);
    cr_assert_float_eq(cli_test_json_num(cli_test_res.out, "volume"), 45.0, 1e-9);
    cr_assert_float_eq(cli_test_json_num(cli_test_res.out, "bars"), 3.0, 1e-9);
    cr_assert_float_eq(cli_test_json_num(cli_test_res.out, "poc"), 100.25, 1e-9);
    cr_assert_float_eq(cli_test_json_num(cli_test_res.out, "vah"), 100.25, 1e-9);
    cr_assert_float_eq(cli_test_json_num(cli_test_res.out, "val"), 100.0, 1e-9);
    cr_assert(strstr(l2, "\"session\":\"2024-01-03\""));
    cr_assert_float_eq(cli_test_json_num(l2, "volume"), 7.0, 1e-9);
    cr_assert_float_eq(cli_test_json_num(l2, "poc"), 101.0, 1e-9);
    cr_assert_float_eq(cli_test_json_num(l2, "vah"), 101.0, 1e-9);
    cr_assert_float_eq(cli_test_json_num(l2, "val"), 101.0, 1e-9);
}

Test(cli, vpoc_tiny_hand_computed_range) {
    /* Range profile, volume spread evenly over low..high: 10 over 99.75..100.5 (2.5 each),
     * 30 over 100..100.5 (10 each), 5 over 100.25..100.5 (2.5 each) gives 99.75: 2.5,
     * 100: 12.5, 100.25: 15, 100.5: 15. The tie goes to the lower level (POC 100.25); the
     * value area adds 100.5 (15 >= 12.5, acc 30 < 31.5) and then 100 (acc 42.5). */
    CLI_TEST_RUN("vpoc", "--data", cli_test_fix("tiny.csv"), "--profile", "range", "--chunk", "1");
    cli_test_status(0);
    cr_assert_float_eq(cli_test_json_num(cli_test_res.out, "poc"), 100.25, 1e-9);
    cr_assert_float_eq(cli_test_json_num(cli_test_res.out, "vah"), 100.5, 1e-9);
    cr_assert_float_eq(cli_test_json_num(cli_test_res.out, "val"), 100.0, 1e-9);
}

Test(cli, synth_then_vpoc_chunk_invariant) {
    const char *csv = cli_test_path("s3.csv");
    CLI_TEST_RUN("synth", "--days", "3", "--seed", "1", "--out", csv);
    cli_test_status(0);
    cr_assert_str_eq(cli_test_res.out, "");
    static const char *const profiles[] = {"close", "range"};
    static const char *const chunks[] = {"1", "7", "500", "0"};
    static char first[CLI_TEST_OUT_BYTES];
    for (size_t p = 0; p < 2; p++) {
        for (size_t c = 0; c < 4; c++) {
            CLI_TEST_RUN("vpoc", "--data", csv, "--chunk", chunks[c], "--profile", profiles[p]);
            cli_test_status(0);
            /* 3 trading days of 1380 one-minute bars each. */
            cr_assert_eq(cli_test_count(cli_test_res.out, "\n"), 3);
            cr_assert_eq(cli_test_count(cli_test_res.out, "\"bars\":1380,"), 3);
            if (c == 0)
                memcpy(first, cli_test_res.out, sizeof(first));
            else
                cr_assert_str_eq(cli_test_res.out, first, "%s chunk %s differs from chunk 1",
                                 profiles[p], chunks[c]);
        }
    }
}

/* What `vpoc` prints for bars, worked out apart from it: the whole series split at once, each
 * session through the reference profile (vpoc_session, not a compute backend), written line by
 * line as its --help says. A heap string; *lines gets its line count. */
static char *cli_test_vpoc_expect(const struct data_series *ds, const struct vpoc_params *p,
                                  size_t *lines) {
    struct data_sessions ss;
    cr_assert_eq(data_sessions_split(ds, 18, &ss), 0);
    struct vpoc_bar *vb = malloc(ds->n * sizeof(*vb));
    size_t cap = 160 * ss.n + 1, used = 0;
    char *text = malloc(cap);
    cr_assert(vb && text);
    vpoc_bars_from_series(ds->bars, ds->n, vb);
    text[0] = '\0';
    for (size_t k = 0; k < ss.n; k++) {
        const struct data_session *s = &ss.s[k];
        struct vpoc_result r;
        cr_assert_eq(vpoc_session(vb + s->first, s->n, p, &r), 0);
        double volume = 0;
        for (size_t i = 0; i < s->n; i++)
            volume += ds->bars[s->first + i].volume;
        char v[JSON_OUT_NUM_MAX], poc[JSON_OUT_NUM_MAX], vah[JSON_OUT_NUM_MAX],
            val[JSON_OUT_NUM_MAX];
        json_out_num(v, sizeof(v), volume, JSON_OUT_INT);
        json_out_num(poc, sizeof(poc), r.poc, JSON_OUT_INT);
        json_out_num(vah, sizeof(vah), r.vah, JSON_OUT_INT);
        json_out_num(val, sizeof(val), r.val, JSON_OUT_INT);
        used += (size_t)snprintf(text + used, cap - used,
                                 "{\"session\":\"%s\",\"bars\":%zu,\"volume\":%s,\"poc\":%s,"
                                 "\"vah\":%s,\"val\":%s}\n",
                                 s->label, s->n, v, poc, vah, val);
        cr_assert_lt(used, cap);
    }
    *lines = ss.n;
    data_sessions_fini(&ss);
    free(vb);
    return text;
}

/* 50 synthetic days written as CSV: more bars than `vpoc` gathers into one window (65536), so
 * it profiles and prints them in more than one. Returns the file; ds gets the bars. */
static const char *cli_test_vpoc_days(struct data_series *ds) {
    data_series_init(ds);
    struct data_synth_opts so = {.days = 50, .seed = 5, .start_hour = 18, .tick = 0.25};
    cr_assert_eq(data_synth_generate(&so, ds), 0);
    cr_assert_gt(ds->n, (size_t)1 << 16);
    const char *csv = cli_test_path("d50.csv");
    char err[512];
    cr_assert_eq(data_csv_write(csv, ds, err, sizeof(err)), 0, "%s", err);
    return csv;
}

/* The file read as a stream, a window at a time, prints what the whole series profiled at once
 * gives, byte for byte, for both profiles. */
Test(cli, vpoc_streamed_matches_the_whole_series) {
    struct data_series ds;
    const char *csv = cli_test_vpoc_days(&ds);
    static const char *const profiles[] = {"close", "range"}, *const chunks[] = {"500", "7"};
    for (size_t k = 0; k < 2; k++) {
        struct vpoc_params p = {k ? VPOC_RANGE : VPOC_CLOSE, 0.25, 0.70};
        size_t lines;
        char *want = cli_test_vpoc_expect(&ds, &p, &lines);
        cr_assert_eq(lines, 50);
        CLI_TEST_RUN("vpoc", "--data", csv, "--profile", profiles[k], "--chunk", chunks[k],
                     "--backend", "cpu");
        cli_test_status(0);
        /* stderr: only what the file was read as, once */
        cr_assert(strstr(cli_test_res.err, "read as CSV with a header") &&
                      strchr(cli_test_res.err, '\n') ==
                          cli_test_res.err + strlen(cli_test_res.err) - 1,
                  "%s", cli_test_res.err);
        cr_assert_str_eq(cli_test_res.out, want, "%s profile differs", profiles[k]);
        free(want);
    }
    data_series_fini(&ds);
}

/* A row out of order at the end of a file longer than a window: status 2 and the row named, as
 * ever, and nothing on stdout, though windows were profiled before the row was read. */
Test(cli, vpoc_bad_row_after_a_window) {
    struct data_series ds;
    const char *csv = cli_test_vpoc_days(&ds);
    FILE *f = fopen(csv, "a");
    cr_assert(f);
    fputs("2024-01-02 12:00:00,4700,4700,4700,4700,1,15\n", f);
    cr_assert_eq(fclose(f), 0);
    CLI_TEST_RUN("vpoc", "--data", csv, "--backend", "cpu");
    cli_test_status(2);
    char line[64];
    snprintf(line, sizeof(line), "d50.csv:%zu: timestamp: not increasing", ds.n + 2);
    CLI_TEST_ERR_HAS(line);
    cr_assert_eq(cli_test_count(cli_test_res.err, "\n"), 1, "%s", cli_test_res.err);
    cr_assert_str_eq(cli_test_res.out, "", "a failed run printed results");
    data_series_fini(&ds);
}

Test(cli, synth_same_seed_same_bytes) {
    const char *a = cli_test_path("a.csv"), *b = cli_test_path("b.csv");
    CLI_TEST_RUN("synth", "--days", "2", "--seed", "9", "--out", a);
    cli_test_status(0);
    CLI_TEST_RUN("synth", "--days", "2", "--seed", "9", "--out", b);
    cli_test_status(0);
    size_t la, lb;
    char *x = cli_test_slurp(a, &la), *y = cli_test_slurp(b, &lb);
    cr_assert_eq(la, lb);
    cr_assert(memcmp(x, y, la) == 0);
    /* Header plus 2 x 1380 bars. */
    cr_assert_eq(cli_test_count(x, "\n"), 1 + 2 * 1380);
    free(x);
    free(y);
}

Test(cli, train_headless_end_to_end) {
    const char *jsonl = cli_test_path("x.jsonl"), *dir = cli_test_path("out");
    CLI_TEST_RUN("train", "--headless", "--synthetic-days", "5", "--epochs", "2", "--output", dir,
                 "--jsonl", jsonl);
    cli_test_status(0);
    cr_assert_str_eq(cli_test_res.out, "");
    char *j = cli_test_slurp(jsonl, NULL);
    static const char *const phases[] = {"load",    "vpoc",    "features",  "h2d",
                                         "cleanup", "forward", "backward",  "optimizer",
                                         "sync",    "eval",    "checkpoint"};
    for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++) {
        char pat[64];
        snprintf(pat, sizeof(pat), "\"phase\":\"%s\"", phases[i]);
        cr_assert(strstr(j, pat), "no %s phase in the JSONL", phases[i]);
    }
    static const char *const types[] = {"sync", "mem", "metric", "summary", "phase", "log"};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        char pat[64];
        snprintf(pat, sizeof(pat), "\"type\":\"%s\"", types[i]);
        cr_assert(strstr(j, pat), "no %s event in the JSONL", types[i]);
    }
    cr_assert_eq(cli_test_count(j, "\"type\":\"summary\""), 1);
    const char *sum = strstr(j, "\"type\":\"summary\"");
    cr_assert(strstr(sum, "\"state\":\"completed\""));
    cr_assert(strstr(sum, "\"epochs\":2,"));
    cr_assert(strstr(j, "\"type\":\"metric\"") && strstr(j, "\"epoch\":2,"));
    cr_assert_null(strstr(j, "\"epoch\":3,"));
    /* Every line is one JSON object. */
    for (const char *l = j; *l; l = strchr(l, '\n') + 1)
        cr_assert(l[0] == '{' && strchr(l, '\n') && strchr(l, '\n')[-1] == '}');
    free(j);
    cr_assert(cli_test_exists(cli_test_path("out/vpoc_mlp.rsmodel")));
    cr_assert(cli_test_exists(cli_test_path("out/vpoc_mlp_metadata.json")));
}

Test(cli, train_resume_continues_at_next_epoch) {
    const char *dir = cli_test_path("out");
    CLI_TEST_RUN("train", "--headless", "--synthetic-days", "5", "--epochs", "2", "--output", dir,
                 "--jsonl", cli_test_path("a.jsonl"));
    cli_test_status(0);
    const char *jsonl = cli_test_path("b.jsonl");
    CLI_TEST_RUN("train", "--headless", "--synthetic-days", "5", "--epochs", "1", "--output", dir,
                 "--resume", cli_test_path("out/vpoc_mlp.rsmodel"), "--jsonl", jsonl);
    cli_test_status(0);
    char *j = cli_test_slurp(jsonl, NULL);
    const char *m = strstr(j, "\"type\":\"metric\"");
    cr_assert(m);
    cr_assert(strstr(m, "\"epoch\":3,"), "no metric for epoch 3");
    cr_assert_null(strstr(j, "\"epoch\":1,"), "resumed run repeated epoch 1");
    cr_assert_null(strstr(j, "\"epoch\":4,"), "--epochs 1 ran more than one epoch");
    cr_assert(strstr(strstr(j, "\"type\":\"summary\""), "\"epochs\":3,"));
    free(j);
}

Test(cli, train_output_under_a_file_fails_up_front) {
    /* An --output that can never be created (here: under a regular file) fails before any
     * training, with status 2, naming the directory, and leaves no JSONL behind. */
    const char *file = cli_test_path("plain");
    cli_test_spit(file, "x", 1);
    const char *jsonl = cli_test_path("o.jsonl");
    CLI_TEST_RUN("train", "--headless", "--synthetic-days", "5", "--epochs", "1", "--output",
                 cli_test_path("plain/sub"), "--jsonl", jsonl);
    cli_test_status(2);
    CLI_TEST_ERR_HAS("plain/sub");
    cr_assert_not(cli_test_exists(jsonl), "JSONL written before the output dir was checked");
}

/* ---- kmsg classify ---- */

static const char cli_test_kmsg_log[] =
    "[  100.000001] usb 1-1: new high-speed USB device number 3 using xhci_hcd\n"
    "[  100.500000] amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=7, "
    "emitted seq=9\n"
    "[  100.500010] amdgpu 0000:03:00.0: amdgpu:  Process information: process python3 pid "
    "4242 thread python3 pid 4243\n"
    "[  101.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=77, name=train, GPU has fallen off the "
    "bus.\n";

Test(cli, kmsg_classify_prints_one_object_per_event) {
    const char *log = cli_test_path("k.log");
    cli_test_spit(log, cli_test_kmsg_log, strlen(cli_test_kmsg_log));
    CLI_TEST_RUN("kmsg", "classify", log);
    cli_test_status(0);
    cr_assert_eq(cli_test_count(cli_test_res.out, "\n"), 2, "%s", cli_test_res.out);
    const char *first = cli_test_res.out, *second = strchr(first, '\n') + 1;
    cr_assert(strncmp(first,
                      "{\"line\":2,\"ts\":100.500000,\"vendor\":\"amdgpu\","
                      "\"category\":\"ring_timeout\",\"severity\":\"error\"",
                      87) == 0,
              "%s", first);
    cr_assert(strstr(first, "\"seq_signaled\":7,\"seq_emitted\":9") &&
                  strstr(first, "\"pid\":4242"),
              "%s", first);
    cr_assert(strstr(first, "\"lines\":2") && strstr(first, "\"remedy\":\""), "%s", first);
    cr_assert(strncmp(second, "{\"line\":4,", 10) == 0 && strstr(second, "\"xid\":79,") &&
                  strstr(second, "\"pci\":\"0000:3b:00.0\"") &&
                  strstr(second, "\"process\":\"train\""),
              "%s", second);
}

Test(cli, kmsg_classify_all_gives_every_line) {
    const char *log = cli_test_path("k.log");
    cli_test_spit(log, cli_test_kmsg_log, strlen(cli_test_kmsg_log));
    CLI_TEST_RUN("kmsg", "classify", "--all", log);
    cli_test_status(0);
    cr_assert_eq(cli_test_count(cli_test_res.out, "\n"), 4, "%s", cli_test_res.out);
    cr_assert(strstr(cli_test_res.out, "{\"line\":1,\"category\":\"none\"}\n{\"line\":2,"), "%s",
              cli_test_res.out);
    cr_assert(strstr(cli_test_res.out, "\n{\"line\":3,\"category\":\"none\",\"part_of\":2}\n"
                                       "{\"line\":4,"),
              "%s", cli_test_res.out);
}

Test(cli, kmsg_classify_bad_input_and_usage) {
    CLI_TEST_RUN("kmsg", "classify", cli_test_path("missing.log"));
    cli_test_status(2);
    CLI_TEST_ERR_HAS("missing.log", "No such file");
    cr_assert_str_eq(cli_test_res.out, "");
    CLI_TEST_RUN("kmsg", "explain");
    cli_test_status(2);
    CLI_TEST_ERR_HAS("unknown verb 'explain'");
    CLI_TEST_RUN("kmsg");
    cli_test_status(2);
    const char *rules = cli_test_path("rules.json");
    cli_test_spit(rules, "{\"rules\": [{\"category\": \"bogus\", \"title\": \"t\"}]}", 48);
    CLI_TEST_RUN("kmsg", "classify", "--rules", rules, "-");
    cli_test_status(2);
    CLI_TEST_ERR_HAS("rules.json", "rules[0].category");
    CLI_TEST_RUN("kmsg", "classify", "-"); /* standard input is /dev/null here */
    cli_test_status(0);
    cr_assert_str_eq(cli_test_res.out, "");
}

Test(cli, train_headless_writes_kernel_log_events) {
    const char *log = cli_test_path("k.log"), *jsonl = cli_test_path("k.jsonl");
    cli_test_spit(log, cli_test_kmsg_log, strlen(cli_test_kmsg_log));
    /* the file is read to its end before the run's output closes, however short the run */
    CLI_TEST_RUN("train", "--headless", "--synthetic-days", "5", "--epochs", "1", "--output",
                 cli_test_path("out"), "--jsonl", jsonl, "--kmsg-file", log);
    cli_test_status(0);
    char *j = cli_test_slurp(jsonl, NULL);
    cr_assert_eq(cli_test_count(j, "\"type\":\"kmsg\""), 2, "%s", j);
    cr_assert(strstr(j, "\"source\":\"file\",\"line\":2,\"ts\":100.500000,\"vendor\":\"amdgpu\","
                        "\"category\":\"ring_timeout\""),
              "%s", j);
    cr_assert(strstr(j, "\"category\":\"xid\",\"severity\":\"error\""), "%s", j);
    cr_assert(strstr(cli_test_res.err, "ringside: kernel error: ring_timeout: amdgpu 0000:03:00.0"),
              "%s", cli_test_res.err);
    free(j);
    CLI_TEST_RUN("train", "--headless", "--synthetic-days", "5", "--epochs", "1", "--output",
                 cli_test_path("out"), "--kmsg-file", cli_test_path("none.log"));
    cli_test_status(2);
    CLI_TEST_ERR_HAS("--kmsg-file", "none.log");
    CLI_TEST_RUN("train", "--headless", "--no-kmsg", "--kmsg-file", log);
    cli_test_status(2);
    CLI_TEST_ERR_HAS("--no-kmsg and --kmsg-file exclude each other");
}

/* Lines without stamps are all due at the start: the run's end finds them fed, however short. */
Test(cli, train_headless_replays_an_injected_kernel_log) {
    static const char text[] =
        "amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=7, emitted seq=9\n"
        "amdgpu 0000:03:00.0: amdgpu:  Process information: process python3 pid 4242 thread "
        "python3 pid 4243\n"
        "NVRM: Xid (PCI:0000:3b:00): 79, pid=77, name=train, GPU has fallen off the bus.\n";
    const char *inj = cli_test_path("in:ject.log"), *jsonl = cli_test_path("i.jsonl");
    cli_test_spit(inj, text, strlen(text));
    char spec[4400];
    snprintf(spec, sizeof(spec), "kmsg:%s", inj); /* a ':' in the path is fine */
    CLI_TEST_RUN("train", "--headless", "--synthetic-days", "5", "--epochs", "1", "--output",
                 cli_test_path("out"), "--jsonl", jsonl, "--no-kmsg", "--inject", spec);
    cli_test_status(0);
    CLI_TEST_ERR_HAS(
        "ringside: warning: fault injection armed: kmsg:", "in:ject.log (3 lines over 0.0 s)",
        "ringside: kernel error: ring_timeout: amdgpu 0000:03:00.0");
    char *j = cli_test_slurp(jsonl, NULL);
    cr_assert_eq(cli_test_count(j, "\"type\":\"kmsg\""), 2, "%s", j);
    cr_assert(strstr(j, "\"source\":\"file\",\"line\":1,\"ts\":null,\"vendor\":\"amdgpu\","
                        "\"category\":\"ring_timeout\""),
              "no kernel stamp on an injected line: %s", j);
    cr_assert(strstr(j, "\"category\":\"xid\",\"severity\":\"error\""), "%s", j);
    free(j);
}

Test(cli, inject_kmsg_errors_are_one_line) {
    const char *out = cli_test_path("out");
    CLI_TEST_RUN("train", "--headless", "--inject", "kmsg:");
    cli_test_status(2);
    CLI_TEST_ERR_HAS("--inject kmsg: needs a file");
    CLI_TEST_RUN("train", "--headless", "--inject", "kmsg:a.log,hang:cleanup:1,kmsg:b.log");
    cli_test_status(2);
    CLI_TEST_ERR_HAS("--inject kmsg: given twice; one file at a time");
    char spec[4400];
    snprintf(spec, sizeof(spec), "kmsg:%s", cli_test_path("none.log"));
    CLI_TEST_RUN("train", "--headless", "--synthetic-days", "5", "--epochs", "1", "--output", out,
                 "--jsonl", cli_test_path("n.jsonl"), "--inject", spec);
    cli_test_status(2);
    CLI_TEST_ERR_HAS("--inject kmsg:", "none.log: No such file or directory");
    cr_assert_eq(cli_test_count(cli_test_res.err, "\n"), 1, "%s", cli_test_res.err);
}

/* watch trains nothing: a training flag is refused by name, and the hint is to watch's help. */
Test(cli, watch_refuses_training_flags_with_its_own_hint) {
    CLI_TEST_RUN("watch", "--epochs", "3");
    CLI_TEST_USAGE("; see 'ringside watch --help'",
                   "--epochs does not apply: watch trains nothing");
    CLI_TEST_RUN("watch", "--socket", cli_test_path("w.sock"), "--backend", "cpu");
    CLI_TEST_USAGE("; see 'ringside watch --help'", "--backend does not apply");
    CLI_TEST_RUN("watch", "--bogus");
    CLI_TEST_USAGE("; see 'ringside watch --help'", "unknown option '--bogus'");
}

/* `vpoc --vpoc-kernel dense` prints what the packed kernel prints, byte for byte, on 60
 * synthetic days (a window of 47 sessions, then the rest) at several chunk sizes and both
 * profiles; an unknown kernel is a usage error. */
Test(cli, vpoc_dense_kernel_prints_the_packed_output) {
    const char *csv = cli_test_path("syn.csv");
    CLI_TEST_RUN("synth", "--days", "60", "--out", csv);
    cli_test_status(0);
    static const char *const chunks[] = {"250", "1000", "0"}, *const profiles[] = {"close",
                                                                                   "range"};
    static char packed[CLI_TEST_OUT_BYTES];
    for (size_t i = 0; i < 3; i++)
        for (size_t k = 0; k < 2; k++) {
            CLI_TEST_RUN("vpoc", "--data", csv, "--backend", "cpu", "--chunk", chunks[i],
                         "--profile", profiles[k]);
            cli_test_status(0);
            cr_assert_eq(cli_test_count(cli_test_res.out, "\n"), 60);
            snprintf(packed, sizeof(packed), "%s", cli_test_res.out);
            CLI_TEST_RUN("vpoc", "--data", csv, "--backend", "cpu", "--chunk", chunks[i],
                         "--profile", profiles[k], "--vpoc-kernel", "dense");
            cli_test_status(0);
            cr_assert_str_eq(cli_test_res.out, packed, "chunk %s, %s profile", chunks[i],
                             profiles[k]);
        }
    CLI_TEST_RUN("vpoc", "--data", csv, "--vpoc-kernel", "sparse");
    CLI_TEST_USAGE(CLI_HINT_VPOC, "--vpoc-kernel: 'sparse' is not one of packed, dense");
}
