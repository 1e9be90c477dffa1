/* OHLCV(+VIX) bars in memory and their split into trading sessions. */
#ifndef RINGSIDE_BACKEND_DATA_DATA_SERIES_H
#define RINGSIDE_BACKEND_DATA_DATA_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DATA_TIME_MIN_S (-62135596800LL) /* 0001-01-01 00:00:00 UTC: timestamps stay in years */
#define DATA_TIME_MAX_S 253402300799LL   /* 9999-12-31 23:59:59 UTC: 0001..9999 */

struct data_bar {
    int64_t t_s; /* UTC epoch seconds */
    double open, high, low, close, volume;
    double vix; /* NaN when the series has no VIX column */
};

/* A growable array of bars; owns bars. */
struct data_series {
    struct data_bar *bars;
    size_t n, cap;
    bool has_vix;
};

/* Sessions are index ranges into a series: bars [first, first + n). */
struct data_session {
    size_t first, n;
    char label[11]; /* trading day D as "YYYY-MM-DD" */
};

struct data_sessions {
    struct data_session *s; /* owned */
    size_t n;
};

void data_series_init(struct data_series *ds);
void data_series_fini(struct data_series *ds);
/* Append one bar; 0 or -ENOMEM. */
int data_series_push(struct data_series *ds, const struct data_bar *b);

/* Trading day D holds bars with t in [D-1 at H:00 UTC, D at H:00 UTC); H in 0..23, H = 0 gives
 * calendar days. Bars must be sorted (the loader guarantees it). 0 or -ENOMEM. */
int data_sessions_split(const struct data_series *ds, int start_hour, struct data_sessions *out);
void data_sessions_fini(struct data_sessions *ss);

/* The session label of one timestamp (helper for the split and for tests). */
void data_session_label(int64_t t_s, int start_hour, char out[11]);

/* FNV-1a 64 over every bar's fields: identifies the data a model was trained on. */
uint64_t data_series_fingerprint(const struct data_series *ds);

/* Days since 1970-01-01 of the proleptic Gregorian date y-m-d (no range checks). */
int64_t data_days_from_civil(int y, int m, int d);
/* Days in month m (1..12) of year y. */
int data_days_in_month(int y, int m);
/* a / b rounded towards minus infinity (b > 0): the day of a time before 1970, say. */
int64_t data_floor_div(int64_t a, int64_t b);
/* Inverse of data_days_from_civil. */
void data_civil_from_days(int64_t days, int *y, int *m, int *d);
/* t_s as "YYYY-MM-DD HH:MM:SS" (UTC); years outside 0..9999 are clamped for the text only. */
void data_format_time(int64_t t_s, char out[20]);

/* Trading day D (days since 1970-01-01) of t_s under data_sessions_split's rule. */
int64_t data_session_day(int64_t t_s, int start_hour);
/* First second of trading day D's session: D-1 at H:00 UTC (D at 00:00 when H = 0). */
int64_t data_session_start(int64_t day, int start_hour);

#endif
