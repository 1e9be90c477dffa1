/* libFuzzer target for the OHLCV(+VIX) CSV loader: arbitrary bytes as a CSV file, loaded strictly
 * and with skip-bad-rows, the bars and messages checked, then written back, reloaded and split
 * into sessions, and read session by session to the same sessions; and once more as a vendor's
 * export is read (--tz, --bar, --time-unit, --price-scale picked by the input's bytes). */
#include "backend/data/data_csv.h"
#include "backend/data/data_series.h"
#include "tests/fuzz/fuzz_target.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_CSV_ERR        512
#define FUZZ_CSV_MAX_PRICE  1e9 /* data_csv.c's limits, as data_csv.h's users rely on them */
#define FUZZ_CSV_MAX_VOLUME 1e12

static char fuzz_csv_path[64], fuzz_csv_rt_path[64];

/* The per-process temp file names, made once. The written-back copy goes to /dev/shm where
 * there is one: data_csv_write syncs the file, which on a disk costs milliseconds a run. */
static void fuzz_csv_paths(void) {
    if (fuzz_csv_path[0])
        return;
    long pid = (long)getpid();
    const char *rt_dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(fuzz_csv_path, sizeof(fuzz_csv_path), "/tmp/fuzz_csv_%ld.csv", pid);
    snprintf(fuzz_csv_rt_path, sizeof(fuzz_csv_rt_path), "%s/fuzz_csv_%ld_rt.csv", rt_dir, pid);
}

static void fuzz_csv_write_file(const char *path, const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(size == 0 || fwrite(data, 1, size, f) == size);
    FUZZ_CHECK(fclose(f) == 0);
}

/* A message: NUL-terminated inside its buffer, non-empty, one line, naming the file first. */
static void fuzz_csv_check_msg(const char *msg, size_t cap, const char *path) {
    FUZZ_CHECK(memchr(msg, '\0', cap) != NULL);
    FUZZ_CHECK(msg[0] != '\0');
    FUZZ_CHECK(strchr(msg, '\n') == NULL);
    FUZZ_CHECK(strncmp(msg, path, strlen(path)) == 0);
}

/* Every bar within the limits data_csv_load documents and enforces, in increasing time. */
static void fuzz_csv_check_series(const struct data_series *ds) {
    FUZZ_CHECK(ds->n >= 1 && ds->n <= ds->cap && ds->bars != NULL);
    for (size_t i = 0; i < ds->n; i++) {
        const struct data_bar *b = &ds->bars[i];
        FUZZ_CHECK(b->t_s >= DATA_TIME_MIN_S && b->t_s <= DATA_TIME_MAX_S);
        FUZZ_CHECK(i == 0 || b->t_s > ds->bars[i - 1].t_s);
        const double px[4] = {b->open, b->high, b->low, b->close};
        for (int k = 0; k < 4; k++)
            FUZZ_CHECK(isfinite(px[k]) && fabs(px[k]) <= FUZZ_CSV_MAX_PRICE);
        FUZZ_CHECK(b->high >= fmax(b->open, b->close));
        FUZZ_CHECK(b->low <= fmin(b->open, b->close));
        FUZZ_CHECK(isfinite(b->volume) && b->volume >= 0 && b->volume <= FUZZ_CSV_MAX_VOLUME);
        if (ds->has_vix)
            FUZZ_CHECK(isfinite(b->vix) && b->vix >= 0);
        else
            FUZZ_CHECK(isnan(b->vix));
    }
}

/* The report of one load: counts add up, and the first skipped row is named iff rows were
 * skipped. */
static void fuzz_csv_check_report(const struct data_csv_report *rep, size_t n, bool skip) {
    FUZZ_CHECK(memchr(rep->first_skip, '\0', sizeof(rep->first_skip)) != NULL);
    FUZZ_CHECK(rep->rows_read == n + rep->rows_skipped);
    FUZZ_CHECK(skip || rep->rows_skipped == 0);
    FUZZ_CHECK((rep->rows_skipped > 0) == (rep->first_skip[0] != '\0'));
    if (rep->rows_skipped > 0)
        fuzz_csv_check_msg(rep->first_skip, sizeof(rep->first_skip), fuzz_csv_path);
}

static bool fuzz_csv_same_bar(const struct data_bar *a, const struct data_bar *b, bool vix) {
    return a->t_s == b->t_s && a->open == b->open && a->high == b->high && a->low == b->low &&
           a->close == b->close && a->volume == b->volume && (!vix || a->vix == b->vix);
}

/* One load of the temp file; on failure the series is as it was and the message well-formed. */
static int fuzz_csv_load(bool skip, struct data_series *ds, struct data_csv_report *rep) {
    struct data_csv_opts opts = {.skip_bad_rows = skip};
    char err[FUZZ_CSV_ERR];
    memset(err, 'x', sizeof(err));
    size_t n0 = ds->n;
    int rc = data_csv_load(fuzz_csv_path, &opts, ds, rep, err, sizeof(err));
    if (rc != 0) {
        FUZZ_CHECK(rc == -EINVAL);
        FUZZ_CHECK(ds->n == n0);
        fuzz_csv_check_msg(err, sizeof(err), fuzz_csv_path);
        return rc;
    }
    FUZZ_CHECK(ds->n > n0);
    fuzz_csv_check_report(rep, ds->n - n0, skip);
    return 0;
}

/* Written back and reloaded: the same bars, exactly. */
static void fuzz_csv_round_trip(const struct data_series *ds) {
    char err[FUZZ_CSV_ERR];
    FUZZ_CHECK(data_csv_write(fuzz_csv_rt_path, ds, err, sizeof(err)) == 0);
    struct data_series back;
    data_series_init(&back);
    struct data_csv_opts opts = {.skip_bad_rows = false};
    FUZZ_CHECK(data_csv_load(fuzz_csv_rt_path, &opts, &back, NULL, err, sizeof(err)) == 0);
    FUZZ_CHECK(back.n == ds->n && back.has_vix == ds->has_vix);
    for (size_t i = 0; i < ds->n; i++)
        FUZZ_CHECK(fuzz_csv_same_bar(&back.bars[i], &ds->bars[i], ds->has_vix));
    data_series_fini(&back);
}

/* Sessions cover the bars in order, each non-empty, labelled "YYYY-MM-DD". */
static void fuzz_csv_sessions(const struct data_series *ds, int start_hour) {
    struct data_sessions ss = {0};
    FUZZ_CHECK(data_sessions_split(ds, start_hour, &ss) == 0);
    size_t next = 0;
    for (size_t i = 0; i < ss.n; i++) {
        FUZZ_CHECK(ss.s[i].first == next && ss.s[i].n >= 1);
        FUZZ_CHECK(strlen(ss.s[i].label) == 10 && ss.s[i].label[4] == '-');
        next += ss.s[i].n;
    }
    FUZZ_CHECK(next == ds->n);
    data_sessions_fini(&ss);
}

/* The file read session by session (skip-bad-rows): the outcome of the whole load (rc), and on
 * success its bars (whole) in the sessions its split makes. */
static void fuzz_csv_stream(int start_hour, int rc, const struct data_series *whole) {
    struct data_csv_opts opts = {.skip_bad_rows = true};
    struct data_series ds;
    data_series_init(&ds);
    struct data_sessions ss = {0};
    if (rc == 0)
        FUZZ_CHECK(data_sessions_split(whole, start_hour, &ss) == 0);
    char err[FUZZ_CSV_ERR];
    struct data_csv *r = NULL;
    int got = data_csv_open(fuzz_csv_path, &opts, start_hour, NULL, &r, err, sizeof(err));
    size_t k = 0;
    struct data_session s;
    while (got == 0 && (got = data_csv_next_session(r, &ds, &s, err, sizeof(err))) == 1) {
        /* sessions may come before an error the whole load gives (a line too long further on,
         * several instruments found at the end) */
        FUZZ_CHECK(s.n >= 1 && s.first + s.n == ds.n);
        FUZZ_CHECK(rc != 0 || (k < ss.n && s.first == ss.s[k].first && s.n == ss.s[k].n &&
                               strcmp(s.label, ss.s[k].label) == 0));
        k++;
        got = 0;
    }
    FUZZ_CHECK(got == rc);
    if (rc != 0)
        fuzz_csv_check_msg(err, sizeof(err), fuzz_csv_path);
    FUZZ_CHECK(rc != 0 || (k == ss.n && ds.n == whole->n));
    for (size_t i = 0; rc == 0 && i < ds.n; i++)
        FUZZ_CHECK(fuzz_csv_same_bar(&ds.bars[i], &whole->bars[i], whole->has_vix));
    data_csv_close(r);
    data_sessions_fini(&ss);
    data_series_fini(&ds);
}

/* The vendors' options, picked by the input's last bytes: whatever loads is a valid series
 * whose bars the report counts, read by the stream as by the whole load; a refusal is one
 * line naming the file. */
static void fuzz_csv_vendor(const uint8_t *data, size_t size) {
    static const char *const tz[] = {"UTC", "America/Chicago", NULL};
    static const char *const bar[] = {NULL, "1m", "5m", "30s"};
    static const char *const unit[] = {NULL, NULL, "ms", "ns"};
    static const char *const scale[] = {NULL, NULL, "1e-9", "1"};
    uint8_t pick = size > 1 ? data[size - 2] : 0;
    struct data_csv_opts o = {.skip_bad_rows = pick & 1,
                              .tz = tz[(pick >> 1) % 3],
                              .bar = bar[(pick >> 3) & 3],
                              .time_unit = unit[(pick >> 5) & 3],
                              .price_scale = scale[(pick >> 6) & 3]};
    struct data_series ds;
    data_series_init(&ds);
    struct data_csv_report rep;
    char err[FUZZ_CSV_ERR], said[1200];
    int rc = data_csv_load(fuzz_csv_path, &o, &ds, &rep, err, sizeof(err));
    if (rc != 0) {
        FUZZ_CHECK(rc == -EINVAL && ds.n == 0);
        fuzz_csv_check_msg(err, sizeof(err), fuzz_csv_path);
    } else {
        fuzz_csv_check_series(&ds);
        FUZZ_CHECK(rep.bars == ds.n);
        FUZZ_CHECK(rep.rows_read >= rep.rows_skipped + rep.rows_other + (rep.bar_s ? 1 : ds.n));
        FUZZ_CHECK(o.skip_bad_rows || rep.rows_skipped == 0);
        data_csv_describe(&rep, said, sizeof(said));
        FUZZ_CHECK(said[0] != '\0' && strchr(said, '\n') == NULL);
    }
    struct data_csv *r = NULL;
    struct data_series st;
    data_series_init(&st);
    struct data_session s;
    int got = data_csv_open(fuzz_csv_path, &o, 18, NULL, &r, err, sizeof(err));
    while (got == 0 && (got = data_csv_next_session(r, &st, &s, err, sizeof(err))) == 1)
        got = 0;
    FUZZ_CHECK(got == rc && (rc != 0 || st.n == ds.n));
    for (size_t i = 0; rc == 0 && i < ds.n; i++)
        FUZZ_CHECK(fuzz_csv_same_bar(&st.bars[i], &ds.bars[i], ds.has_vix));
    data_csv_close(r);
    data_series_fini(&st);
    data_series_fini(&ds);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_csv_paths();
    fuzz_csv_write_file(fuzz_csv_path, data, size);

    struct data_series strict, skip;
    struct data_csv_report rep_strict, rep_skip;
    data_series_init(&strict);
    data_series_init(&skip);
    int rc_strict = fuzz_csv_load(false, &strict, &rep_strict);
    int rc_skip = fuzz_csv_load(true, &skip, &rep_skip);
    fuzz_csv_stream(size ? data[0] % 24 : 18, rc_skip, &skip);

    /* what loads strictly loads the same with skip-bad-rows, nothing skipped */
    if (rc_strict == 0) {
        FUZZ_CHECK(rc_skip == 0 && rep_skip.rows_skipped == 0);
        FUZZ_CHECK(skip.n == strict.n && skip.has_vix == strict.has_vix);
        for (size_t i = 0; i < strict.n; i++)
            FUZZ_CHECK(fuzz_csv_same_bar(&skip.bars[i], &strict.bars[i], strict.has_vix));
    }
    if (rc_skip == 0) {
        fuzz_csv_check_series(&skip);
        /* loading the same file again appends nothing: no row is later than the last bar */
        struct data_bar last = skip.bars[skip.n - 1];
        size_t n = skip.n;
        struct data_csv_report rep_again;
        FUZZ_CHECK(fuzz_csv_load(true, &skip, &rep_again) == -EINVAL);
        FUZZ_CHECK(skip.n == n && fuzz_csv_same_bar(&skip.bars[n - 1], &last, skip.has_vix));
        fuzz_csv_round_trip(&skip);
        fuzz_csv_sessions(&skip, size ? data[size - 1] % 24 : 0);
    }
    data_series_fini(&strict);
    data_series_fini(&skip);
    fuzz_csv_vendor(data, size);
    return 0;
}

const char fuzz_target_name[] = "fuzz_csv";

/* Pieces of real OHLCV CSV input the replay driver mixes into its generated inputs. */
const char *const fuzz_fragments[] = {
    "timestamp,open,high,low,close,volume\n",
    "timestamp,open,high,low,close,volume,vix\n",
    "datetime,Open,High,Low,Close,Volume,VIX_Close\n",
    "date,time,open,high,low,close,volume\n",
    " Vix_Close , Volume ,Extra,CLOSE,Low,High,Open,Time,DATE\n",
    "\xEF\xBB\xBF\"timestamp\",\"open\",\"high\",\"low\",\"close\",\"volume\"\r\n",
    "2024-01-02 14:30:00,4700.25,4702.5,4699,4701.75,1234\n",
    "2024-01-02T14:31,4701.75,4703,4701.5,4702,800\n",
    "2024-01-02,14:32:00,",
    "1704205920,",
    "-62135596800,",
    "253402300799,",
    "9999-12-31 23:59:59,",
    "0001-01-01 00:00,",
    "2024-02-29 09:30,",
    "2023-02-29 09:30,",
    "100,101,99,100.5,10\n",
    "100,101,99,100.5,10,13.5\n",
    "\"4700.25\",",
    "\"he said \"\"hi\"\", twice\"",
    "1e9,",
    "-1e9,",
    "1e12\n",
    "1e300,",
    "2.5e-308,",
    "nan,",
    "inf,",
    "0x1p3,",
    "4700,25,",
    "-0,",
    ",,,,,\n",
    "\r\n",
    "\n\n",
    " \t ",
    "\"unterminated,",
    "\"x\" y,",
    "ts_event,rtype,publisher_id,instrument_id,open,high,low,close,volume\n",
    "1704205800000000000,33,1,4916,4700250000000,4701000000000,4699500000000,4700500000000,120\n",
    "1704205860000000000,35,1,5002,",
    "2024-01-02T14:30:00.000000000Z,33,1,4916,4700.250000000,",
    "time,open,high,low,close,Volume,Volume MA\n",
    "2024-01-02T08:30:00-06:00,",
    "2024-03-10T03:00:00+0530,",
    "1704205800123,",
    "1704205800123456,",
    "20240102 143000;4700.25;4701;4699.5;4700.5;120\r\n",
    "20240102 143015 2500000;4701;4700.75;4701.25;2\r\n",
    "20240102 143015;4701;2\n",
    "20240102;4700.25;4701;4699.5;4700.5;120\n",
    "20241103 013000;",
    "20240310 023000;",
    "00010101 000000;1;1;1;1;1\n",
};
const size_t fuzz_fragments_count = sizeof(fuzz_fragments) / sizeof(fuzz_fragments[0]);
