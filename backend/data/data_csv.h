/* Streaming OHLCV(+VIX) CSV loader with validation. */
#ifndef RINGSIDE_BACKEND_DATA_DATA_CSV_H
#define RINGSIDE_BACKEND_DATA_DATA_CSV_H

#include "backend/data/data_series.h"

#include <stdbool.h>
#include <stddef.h>

#define DATA_CSV_MAX_LINE (1u << 20) /* 1 MiB: longer lines are an error */

struct data_csv_opts {
    bool skip_bad_rows; /* skip rows that fail validation instead of stopping */
};

struct data_csv_report {
    size_t rows_read;     /* data rows seen (header excluded) */
    size_t rows_skipped;  /* rows rejected under skip_bad_rows */
    char first_skip[256]; /* "FILE:LINE: column: reason" of the first skipped row, or "" */
};

/* Read path ("-" is stdin) into ds (appended). Columns by header name, case-insensitive:
 * timestamp|datetime|date+time, open, high, low, close, volume, optional vix|vix_close.
 * Returns 0; or -EINVAL with err = "FILE:LINE: column: reason" for bad data; or -errno with
 * err naming the file for I/O errors. Never reads the whole file into one buffer. */
int data_csv_load(const char *path, const struct data_csv_opts *opts, struct data_series *ds,
                  struct data_csv_report *rep, char *err, size_t errlen);

/* Parse one timestamp: "YYYY-MM-DD HH:MM[:SS]", "YYYY-MM-DDTHH:MM[:SS]" or epoch seconds.
 * 0 and *t_s set, or -EINVAL. */
int data_parse_timestamp(const char *s, long long *t_s);

/* Write ds as CSV (timestamp,open,high,low,close,volume[,vix]) that data_csv_load reads back to
 * the same values (round-trip exact doubles). Written atomically. 0 or -errno with err. */
int data_csv_write(const char *path, const struct data_series *ds, char *err, size_t errlen);

#endif
