/* OHLCV(+VIX) CSV files read with validation: session by session as a stream, or whole. */
#ifndef RINGSIDE_BACKEND_DATA_DATA_CSV_H
#define RINGSIDE_BACKEND_DATA_DATA_CSV_H

#include "backend/data/data_series.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DATA_CSV_MAX_LINE (1u << 20) /* 1 MiB: longer lines are an error */

#define DATA_CSV_SYMBOL_MAX 64 /* bytes of an instrument's name, its NUL included */

struct data_csv_opts {
    bool skip_bad_rows;      /* skip rows that fail validation instead of stopping */
    const char *symbol;      /* a file with a symbol column: keep this instrument's rows; NULL: a
                                file with more than one instrument is an error that lists them */
    const char *columns;     /* a file without a header: its columns' names, comma-separated
                                ("timestamp,open,high,low,close,volume"; "_" skips one), its rows
                                separated by commas or semicolons; NULL or "": a header row */
    bool continuous;         /* --continuous front: a file of several instruments (a symbol column)
                                becomes one front-month series, rolling to the next contract the
                                day after its volume passes the current one's; spreads (a '-' in the
                                name) are left out */
    const char *tz;          /* the IANA zone the file's calendar times are in ("America/Chicago"),
                                turned into UTC with the daylight-saving rules of each date; epoch
                                times and times with "Z" or a UTC offset are instants already. NULL
                                or "": calendar times are UTC, and a NinjaTrader file (which says
                                nothing of its zone) is refused */
    const char *time_unit;   /* --time-unit "s", "ms", "us" or "ns": integer timestamps in that
                                unit; NULL or "": by their digits (data_time_parse) */
    const char *price_scale; /* --price-scale "1e-N" (N 0..9, or "1"): prices are integers in
                                those units; NULL or "": Databento's fixed point (integers in
                                1e-9) recognised from its layout, any other file as written */
    const char *bar;         /* --bar "30s", "1m", "5m", "1h"...: rows aggregated into bars of
                                that length (a day a whole number of them); NULL or "": ticks
                                into one-minute bars, bars as they are */
};

#define DATA_CSV_PRICE_DECIMALS_MAX 9 /* --price-scale 1e-9 at most */

struct data_csv_report {
    size_t rows_read;     /* data rows seen (header excluded) */
    size_t rows_skipped;  /* rows rejected under skip_bad_rows */
    size_t rows_other;    /* rows of other instruments than opts->symbol, left out */
    char first_skip[256]; /* "FILE:LINE: column: reason" of the first skipped row, or "" */
    char format[112];     /* the layout recognised: "Databento OHLCV-1m", "TradingView chart
                             export", "NinjaTrader tick export", "CSV with a header", ... */
    char compression[8];  /* "gzip", "zstd", or "" */
    char tz[64];          /* opts->tz as given, or "" */
    unsigned forms;       /* the timestamp forms seen: a bit (1 << enum data_time_form) each */
    int time_unit;        /* enum data_time_unit of the integer timestamps (AUTO: none) */
    int price_decimals;   /* prices read as integers in 10^-price_decimals units (0: as written) */
    bool price_from_layout; /* ... because the layout says so (Databento), not --price-scale */
    bool ticks;             /* the rows are trades (one price each), aggregated into bars */
    int64_t bar_s;          /* rows aggregated into bars of this many seconds (0: not) */
    size_t bars;            /* bars given (after the aggregation) */
    bool by_id;             /* instruments told apart by Databento's instrument_id */
    size_t n_instruments;   /* instruments seen (0: the file has no symbol column) */
    char kept[DATA_CSV_SYMBOL_MAX]; /* the instrument read (--symbol, or the only one) */
    /* opts->continuous: each roll, in order (the first DATA_CSV_ROLLS of n_rolls) */
    size_t n_rolls;
    struct data_csv_roll {
        char from[DATA_CSV_SYMBOL_MAX], to[DATA_CSV_SYMBOL_MAX];
        int64_t day_s;                 /* UTC midnight of the day the new contract's volume led */
        double from_volume, to_volume; /* that day's volumes */
    } roll[16];
};
#define DATA_CSV_ROLLS 16

/* A file being read session by session. Memory: the current session's bars (what the caller
 * keeps), one line (at most 1 MiB) and the decompressor's buffers; with opts->continuous, every
 * bar of the file (the roll compares every contract's volume day by day), read at the first
 * data_csv_next_session. */
struct data_csv;

/* Open path ("-" is stdin) and read its header. Columns by header name, case-insensitive:
 * timestamp|datetime|ts_event|date+time (or time alone, as TradingView exports epoch
 * seconds), open, high, low, close, volume, optional vix|vix_close and symbol. A file without a
 * header whose rows are "yyyyMMdd HHmmss;open;high;low;close;volume" is read as NinjaTrader
 * writes it. Sessions follow data_sessions_split's rule with start_hour (0..23). rep (NULL, or
 * the caller's, kept until data_csv_close) is zeroed, its format filled here, its counts as rows
 * are read; it is complete once data_csv_next_session has returned 0. 0 with *out; or the errors
 * of data_csv_load for a header (or an option) that cannot be read; *out is then NULL. */
int data_csv_open(const char *path, const struct data_csv_opts *opts, int start_hour,
                  struct data_csv_report *rep, struct data_csv **out, char *err, size_t errlen);

/* The next session's bars appended to ds, in time order, and where they are into *s (s->first
 * = ds->n on entry; s->n >= 1; s->label its trading day): 1. 0 when the file has no more and
 * the checks that need all of it passed (a file that gave no bar, or several instruments and
 * no opts->symbol, is an error instead, found at its end: the first instrument's sessions may
 * have come before). Errors as data_csv_load's, returned when the reader reaches them: the
 * sessions returned before a bad row stand; ds is as it was on entry. After an error only
 * data_csv_close may be called. A session is returned once the first bar of the next one (or
 * the end) is read: the reader keeps that one bar. */
int data_csv_next_session(struct data_csv *r, struct data_series *ds, struct data_session *s,
                          char *err, size_t errlen);

/* Whether the file has a VIX column (every bar's vix is NaN otherwise). */
bool data_csv_has_vix(const struct data_csv *r);

/* Close the file and free the reader; NULL is a no-op. */
void data_csv_close(struct data_csv *r);

/* Read path whole into ds (appended: its first bar must come after ds's last), through
 * data_csv_open and data_csv_next_session. Returns 0; or -EINVAL with err = "FILE:LINE:
 * column: reason" for bad data (or "FILE: several instruments: ..." naming each with its rows);
 * or -errno with err naming the file for I/O errors; ds is then as it was. Never reads the whole
 * file into one buffer. */
int data_csv_load(const char *path, const struct data_csv_opts *opts, struct data_series *ds,
                  struct data_csv_report *rep, char *err, size_t errlen);

/* What a file read to its end was read as, in one line for the user: the layout, the times'
 * unit and zone, the prices' scale, the instrument kept, the rows (and ticks) and the skips:
 * "Databento OHLCV-1m: ts_event in epoch nanoseconds (UTC); prices in fixed point, 1e-9 units
 * (Databento's default); instrument 4916 of 2; 420 bars from 840 rows (420 of other
 * instruments left out)". Always NUL-terminated. */
void data_csv_describe(const struct data_csv_report *rep, char *buf, size_t n);

/* Check one of opts' text options as the reader will read it ("--time-unit", "--price-scale"
 * or "--bar" with its value): 0, or -EINVAL with err saying what is accepted. The out value
 * (enum data_time_unit, decimals, seconds), when not NULL. */
int data_csv_opt_check(const char *flag, const char *value, int64_t *out, char *err, size_t errlen);

/* Write ds as CSV (timestamp,open,high,low,close,volume[,vix]) that data_csv_load reads back to
 * the same values (round-trip exact doubles). Written atomically. 0 or -errno with err. */
int data_csv_write(const char *path, const struct data_series *ds, char *err, size_t errlen);

#endif
