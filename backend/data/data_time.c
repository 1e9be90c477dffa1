/* Timestamp parsing: ISO 8601 (any offset), NinjaTrader's compact forms, dates, epoch integers. */
#include "backend/data/data_time.h"

#include "backend/core/errbuf.h"
#include "backend/data/data_series.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define DATA_TIME_DAY_S 86400

/* The units of an epoch integer: name, ticks a second, and the significant digits the AUTO
 * rule gives it (1e8 s, 1973-03-03, is the least of each; the most fit the years). */
static const struct {
    const char *flag, *name;
    int64_t per_s;
    int min_digits, max_digits;
} data_time_units[] = {
    [DATA_TIME_AUTO] = {"", "", 0, 0, 0},
    [DATA_TIME_S] = {"s", "seconds", 1, 9, 11},
    [DATA_TIME_MS] = {"ms", "milliseconds", 1000, 12, 14},
    [DATA_TIME_US] = {"us", "microseconds", 1000000, 15, 17},
    [DATA_TIME_NS] = {"ns", "nanoseconds", 1000000000, 18, 19},
};
#define DATA_TIME_NUNITS ((int)(sizeof(data_time_units) / sizeof(data_time_units[0])))

const char *data_time_unit_name(enum data_time_unit u) {
    return data_time_units[u].name;
}

int data_time_unit_parse(const char *s, enum data_time_unit *u) {
    for (int k = DATA_TIME_S; k < DATA_TIME_NUNITS; k++)
        if (strcmp(s, data_time_units[k].flag) == 0) {
            *u = (enum data_time_unit)k;
            return 0;
        }
    if (strcmp(s, "\xC2\xB5s") == 0) { /* µs */
        *u = DATA_TIME_US;
        return 0;
    }
    return -EINVAL;
}

int data_time_cmp(int64_t a_s, int32_t a_ns, int64_t b_s, int32_t b_ns) {
    if (a_s != b_s)
        return a_s < b_s ? -1 : 1;
    return a_ns < b_ns ? -1 : a_ns > b_ns;
}

/* Exactly n decimal digits at s into *v. */
static int data_time_digits(const char *s, int n, int *v) {
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        *v = *v * 10 + (s[i] - '0');
    }
    return 0;
}

/* A calendar date and time, checked, into out (seconds as if UTC): 0 or -EINVAL. */
static int data_time_civil(int y, int mo, int d, int h, int mi, int sec, struct data_time *out) {
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > data_days_in_month(y, mo) || h > 23 || mi > 59 ||
        sec > 59)
        return -EINVAL;
    out->t_s = data_days_from_civil(y, mo, d) * DATA_TIME_DAY_S + h * 3600 + mi * 60 + sec;
    return 0;
}

/* A fraction of a second after the '.': 1..9 digits into ns; *end past them. */
static int data_time_fraction(const char *s, int32_t *ns, const char **end) {
    size_t n = strspn(s, "0123456789");
    if (n == 0 || n > 9)
        return -EINVAL;
    int32_t v = 0;
    for (size_t i = 0; i < 9; i++)
        v = v * 10 + (i < n ? s[i] - '0' : 0);
    *ns = v;
    *end = s + n;
    return 0;
}

/* "Z", "+HH:MM", "+HHMM" or "+HH" (or '-'), the whole rest of the text: the offset east of
 * UTC into *off_s. 0, or -EINVAL. */
static int data_time_offset(const char *r, int32_t *off_s) {
    if ((r[0] == 'Z' || r[0] == 'z') && r[1] == '\0') {
        *off_s = 0;
        return 0;
    }
    if (r[0] != '+' && r[0] != '-')
        return -EINVAL;
    int h, m = 0;
    size_t n = strlen(r + 1);
    if (data_time_digits(r + 1, 2, &h) != 0)
        return -EINVAL;
    if (n == 5 && r[3] == ':')
        n = data_time_digits(r + 4, 2, &m) == 0 ? 0 : n;
    else if (n == 4)
        n = data_time_digits(r + 3, 2, &m) == 0 ? 0 : n;
    else if (n == 2)
        n = 0;
    if (n != 0 || h > 23 || m > 59)
        return -EINVAL;
    *off_s = (r[0] == '-' ? -1 : 1) * (h * 3600 + m * 60);
    return 0;
}

/* ISO 8601 after "YYYY-MM-DD": nothing (a date) or [T ]HH:MM[:SS[.f]][offset]. */
static int data_time_iso(const char *s, struct data_time *out) {
    int y, mo, d, h = 0, mi = 0, sec = 0;
    int32_t ns = 0, off = 0;
    if (data_time_digits(s, 4, &y) || s[4] != '-' || data_time_digits(s + 5, 2, &mo) ||
        s[7] != '-' || data_time_digits(s + 8, 2, &d))
        return -EINVAL;
    enum data_time_form form = DATA_TIME_DATE;
    const char *r = s + 10;
    if (*r != '\0') {
        if ((*r != 'T' && *r != ' ') || data_time_digits(r + 1, 2, &h) || r[3] != ':' ||
            data_time_digits(r + 4, 2, &mi))
            return -EINVAL;
        r += 6;
        if (*r == ':') {
            if (data_time_digits(r + 1, 2, &sec))
                return -EINVAL;
            r += 3;
            if (*r == '.' && data_time_fraction(r + 1, &ns, &r) != 0)
                return -EINVAL;
        }
        form = DATA_TIME_WALL;
        if (*r != '\0') {
            if (data_time_offset(r, &off) != 0)
                return -EINVAL;
            form = DATA_TIME_OFFSET;
        }
    }
    struct data_time t = {.ns = ns, .form = form};
    if (data_time_civil(y, mo, d, h, mi, sec, &t) != 0)
        return -EINVAL;
    t.t_s -= off;
    *out = t;
    return 0;
}

/* "yyyyMMdd HHmmss" or "yyyyMMdd HHmmss fffffff" (NinjaTrader's bars and ticks). */
static int data_time_compact(const char *s, size_t len, struct data_time *out) {
    int y, mo, d, h, mi, sec, frac = 0;
    if (data_time_digits(s, 4, &y) || data_time_digits(s + 4, 2, &mo) ||
        data_time_digits(s + 6, 2, &d) || data_time_digits(s + 9, 2, &h) ||
        data_time_digits(s + 11, 2, &mi) || data_time_digits(s + 13, 2, &sec))
        return -EINVAL;
    if (len == 23 && (s[15] != ' ' || data_time_digits(s + 16, 7, &frac)))
        return -EINVAL;
    struct data_time t = {.ns = frac * 100, .form = DATA_TIME_WALL};
    if (data_time_civil(y, mo, d, h, mi, sec, &t) != 0)
        return -EINVAL;
    *out = t;
    return 0;
}

/* An integer: its value in unit (AUTO: by its digits), or yyyyMMdd as a date. */
static int data_time_integer(const char *s, enum data_time_unit unit, struct data_time *out,
                             char *why, size_t whylen) {
    bool neg = *s == '-';
    const char *p = s + neg;
    size_t n = strlen(p);
    if (n == 0 || strspn(p, "0123456789") != n)
        return -EINVAL;
    while (n > 1 && *p == '0') /* significant digits */
        p++, n--;
    if (n > 19)
        return errbuf_set(why, whylen, -EINVAL, "more digits than any epoch time");
    uint64_t v = 0;
    for (const char *q = p; *q; q++)
        v = v * 10 + (uint64_t)(*q - '0');
    if (v > INT64_MAX)
        return errbuf_set(why, whylen, -EINVAL, "beyond the largest epoch time");
    if (unit == DATA_TIME_AUTO) {
        struct data_time d = {.form = DATA_TIME_DATE};
        int y = (int)(v / 10000), mo = (int)(v / 100 % 100), dd = (int)(v % 100);
        if (!neg && n == 8 && data_time_civil(y, mo, dd, 0, 0, 0, &d) == 0) {
            *out = d;
            return 0;
        }
        for (int k = DATA_TIME_S; k < DATA_TIME_NUNITS && unit == DATA_TIME_AUTO; k++)
            if ((int)n >= data_time_units[k].min_digits && (int)n <= data_time_units[k].max_digits)
                unit = (enum data_time_unit)k;
        if (unit == DATA_TIME_AUTO)
            return errbuf_set(why, whylen, -EINVAL,
                              "not a time: epoch times have 9-11 digits (seconds), 12-14 "
                              "(milliseconds), 15-17 (microseconds) or 18-19 (nanoseconds), "
                              "and 8 are a date yyyyMMdd; --time-unit s|ms|us|ns reads it in "
                              "that unit");
    }
    int64_t per = data_time_units[unit].per_s, iv = neg ? -(int64_t)v : (int64_t)v;
    int64_t t_s = data_floor_div(iv, per);
    if (t_s < DATA_TIME_MIN_S || t_s > DATA_TIME_MAX_S)
        return errbuf_set(why, whylen, -EINVAL, "outside years 0001-9999 as %s since 1970",
                          data_time_units[unit].name);
    *out = (struct data_time){.t_s = t_s,
                              .ns = (int32_t)((iv - t_s * per) * (1000000000 / per)),
                              .form = DATA_TIME_EPOCH,
                              .unit = unit};
    return 0;
}

int data_time_parse(const char *s, enum data_time_unit unit, struct data_time *out, char *why,
                    size_t whylen) {
    if (why && whylen)
        why[0] = '\0';
    size_t len = strlen(s);
    if ((len == 15 || len == 23) && s[8] == ' ')
        return data_time_compact(s, len, out);
    if (len >= 10 && s[4] == '-')
        return data_time_iso(s, out);
    return data_time_integer(s, unit, out, why, whylen);
}
