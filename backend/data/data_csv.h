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
    bool skip_bad_rows;  /* skip rows that fail validation instead of stopping */
    const char *symbol;  /* a file with a symbol column: keep this instrument's rows; NULL: a
                            file with more than one instrument is an error that lists them */
    const char *columns; /* a file without a header: its columns' names, comma-separated
                            ("timestamp,open,high,low,close,volume"; "_" skips one), its rows
                            separated by commas or semicolons; NULL or "": a header row */
    bool continuous;     /* --continuous front: a file of several instruments (a symbol column)
                            becomes one front-month series, rolling to the next contract the
                            day after its volume passes the current one's; spreads (a '-' in the
                            name) are left out */
    const char *tz;      /* the IANA zone the file's calendar times are in ("America/Chicago"),
                            turned into UTC with the daylight-saving rules of each date; epoch
                            seconds and times marked Z or +00:00 are UTC already. NULL or "":
                            every time is UTC */
};

struct data_csv_report {
    size_t rows_read;     /* data rows seen (header excluded) */
    size_t rows_skipped;  /* rows rejected under skip_bad_rows */
    size_t rows_other;    /* rows of other instruments than opts->symbol, left out */
    char first_skip[256]; /* "FILE:LINE: column: reason" of the first skipped row, or "" */
    char format[112];     /* the layout recognised, for the log: "Databento OHLCV", ... */
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

/* Parse one UTC timestamp: "YYYY-MM-DD HH:MM[:SS]", "YYYY-MM-DDTHH:MM[:SS]" (ISO 8601: a
 * fraction of a second, dropped, and "Z" or "+00:00" may follow the seconds), "yyyyMMdd
 * HHmmss", or epoch seconds. 0 and *t_s set, or -EINVAL. */
int data_parse_timestamp(const char *s, long long *t_s);

/* Write ds as CSV (timestamp,open,high,low,close,volume[,vix]) that data_csv_load reads back to
 * the same values (round-trip exact doubles). Written atomically. 0 or -errno with err. */
int data_csv_write(const char *path, const struct data_series *ds, char *err, size_t errlen);

#endif
