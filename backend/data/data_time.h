/* Timestamps as market-data exports write them: calendar text (with or without a UTC offset),
 * NinjaTrader's compact forms, dates alone, and integer epoch times in seconds, milliseconds,
 * microseconds or nanoseconds, told apart by their digits. */
#ifndef RINGSIDE_BACKEND_DATA_DATA_TIME_H
#define RINGSIDE_BACKEND_DATA_DATA_TIME_H

#include <stddef.h>
#include <stdint.h>

/* The unit of an integer timestamp. AUTO: from its digits (see data_time_parse). */
enum data_time_unit { DATA_TIME_AUTO, DATA_TIME_S, DATA_TIME_MS, DATA_TIME_US, DATA_TIME_NS };

/* What a timestamp's text says about its zone. */
enum data_time_form {
    DATA_TIME_WALL,   /* a calendar time without a zone: UTC, or local to --tz */
    DATA_TIME_OFFSET, /* a calendar time with "Z" or a UTC offset: an instant */
    DATA_TIME_EPOCH,  /* an integer count since 1970-01-01 UTC: an instant */
    DATA_TIME_DATE,   /* a date without a time of day (a daily bar's) */
};

struct data_time {
    int64_t t_s; /* seconds since 1970-01-01: UTC for OFFSET and EPOCH; for WALL
                    and DATE the wall clock read as if it were UTC */
    int32_t ns;  /* nanoseconds past t_s, 0..999999999 */
    enum data_time_form form;
    enum data_time_unit unit; /* EPOCH: the unit it was read in; AUTO otherwise */
};

/* Parse one timestamp:
 *   YYYY-MM-DD[T| ]HH:MM[:SS[.fraction]][Z|+HH:MM|-HH:MM|+HHMM|+HH]  (ISO 8601; up to 9
 *     fraction digits, kept in ns; the offset makes it an instant)
 *   yyyyMMdd HHmmss[ fffffff]   (NinjaTrader; the 7 digits are 100 ns units)
 *   YYYY-MM-DD                  (a date)
 *   [-]digits                   an epoch time in unit; with DATA_TIME_AUTO, by its significant
 *     digits: 9-11 seconds, 12-14 milliseconds, 15-17 microseconds, 18-19 nanoseconds (each
 *     from 1973-03-03 on); 8 digits that are a calendar date yyyyMMdd are a date; any other
 *     integer is refused (a row number, say, is no time)
 * Years 0001..9999. 0 with *out; or -EINVAL with why (the reason, without the text itself when
 * it is only malformed: "" then) and *out untouched. */
int data_time_parse(const char *s, enum data_time_unit unit, struct data_time *out, char *why,
                    size_t whylen);

/* "s", "ms", "us" (or "µs") or "ns" into *u: 0, or -EINVAL. */
int data_time_unit_parse(const char *s, enum data_time_unit *u);

/* "seconds", "milliseconds", "microseconds", "nanoseconds" ("" for AUTO). */
const char *data_time_unit_name(enum data_time_unit u);

/* (a_s, a_ns) - (b_s, b_ns) compared: <0, 0, >0. */
int data_time_cmp(int64_t a_s, int32_t a_ns, int64_t b_s, int32_t b_ns);

#endif
