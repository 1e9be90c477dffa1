/* The OHLCV(+VIX) CSV row reader with row validation, and its exact round-trip writer. */
#include "backend/data/data_csv.h"

#include "backend/core/afile.h"
#include "backend/core/errbuf.h"
#include "backend/data/data_csv_internal.h"
#include "backend/data/data_in.h"
#include "backend/data/data_time.h"
#include "backend/data/data_tz.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA_CSV_LINE_BUF   (DATA_CSV_MAX_LINE + 3) /* content + "\r\n" + NUL */
#define DATA_CSV_MAX_VOLUME 1e12                    /* profile fixed point overflows above */
#define DATA_CSV_MAX_PRICE  1e9                     /* price levels must fit in 64 bits */
#define DATA_CSV_RBUF       (64u * 1024u)           /* decompressed bytes taken at a time */

static const struct {
    const char *name;
    enum data_csv_col col;
} data_csv_names[] = {
    {"timestamp", DATA_CSV_TS},
    {"datetime", DATA_CSV_TS},
    {"date", DATA_CSV_DATE},
    {"time", DATA_CSV_TIME},
    {"open", DATA_CSV_OPEN},
    {"high", DATA_CSV_HIGH},
    {"low", DATA_CSV_LOW},
    {"close", DATA_CSV_CLOSE},
    {"volume", DATA_CSV_VOLUME},
    {"vix", DATA_CSV_VIX},
    {"vix_close", DATA_CSV_VIX},
    {"ts_event", DATA_CSV_TS},
    {"symbol", DATA_CSV_SYMBOL},
    {"rtype", DATA_CSV_RTYPE},
    {"instrument_id", DATA_CSV_INSTRUMENT},
};

/* ---- numbers ---- */

/* Digits and sign/point/exponent only: rejects nan, inf, hex floats and locale decimal commas
 * before strtod sees them, so its result depends on nothing but the C locale set by the load. */
static int data_csv_number(const char *s, double *out, char *why, size_t whylen) {
    if (*s == '\0')
        return errbuf_set(why, whylen, -EINVAL, "empty field");
    char *end = NULL;
    if (strspn(s, "0123456789+-.eE") == strlen(s))
        *out = strtod(s, &end);
    if (!end || end == s || *end != '\0')
        return errbuf_set(why, whylen, -EINVAL, "not a number: \"%.40s\"", s);
    if (!isfinite(*out))
        return errbuf_set(why, whylen, -EINVAL, "out of range: \"%.40s\"", s);
    return 0;
}

/* Shortest %.Ng (N = 15..17) that reads back to the same double: 4712.25, not 4712.2500000001. */
static void data_csv_fmt(double x, char out[32]) {
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, 32, "%.*g", prec, x);
        if (strtod(out, NULL) == x)
            return;
    }
}

/* ---- lines and fields ---- */

static int data_csv_too_long(struct data_csv_ctx *c, size_t lineno, char *err, size_t errlen) {
    return errbuf_set(err, errlen, -EINVAL, "%s:%zu: line longer than %u bytes", c->name, lineno,
                      DATA_CSV_MAX_LINE);
}

/* 1 with ctx->line holding the next physical line (terminator stripped), 0 at EOF, <0 error. */
static int data_csv_read_line(struct data_csv_ctx *c, char *err, size_t errlen) {
    size_t len = 0;
    bool got = false, nl = false;
    while (!nl) {
        if (c->rpos == c->rlen) {
            ssize_t k = data_in_read(c->in, c->rbuf, DATA_CSV_RBUF, err, errlen);
            if (k < 0) /* corrupt compressed data is bad input, as a bad row is */
                return k == -EILSEQ ? -EINVAL : (int)k;
            if (k == 0)
                break;
            c->rpos = 0;
            c->rlen = (size_t)k;
        }
        got = true;
        const char *at = c->rbuf + c->rpos, *end = memchr(at, '\n', c->rlen - c->rpos);
        size_t take = end ? (size_t)(end - at) : c->rlen - c->rpos;
        if (len + take > DATA_CSV_MAX_LINE + 1) /* the content and a '\r' at most */
            return data_csv_too_long(c, c->lineno + 1, err, errlen);
        memcpy(c->line + len, at, take);
        len += take;
        c->rpos += take + (end != NULL);
        nl = end != NULL;
    }
    if (!got)
        return 0;
    c->lineno++;
    c->line[len] = '\0';
    len = strlen(c->line); /* a NUL byte ends the line's text, as it always did */
    if (len > 0 && c->line[len - 1] == '\r')
        c->line[--len] = '\0';
    return len > DATA_CSV_MAX_LINE ? data_csv_too_long(c, c->lineno, err, errlen) : 1;
}

static int data_csv_push_field(struct data_csv_ctx *c, char *start, char *end) {
    while (start < end && (*start == ' ' || *start == '\t'))
        start++;
    while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *end = '\0';
    if (c->nf == c->fcap) {
        size_t cap = c->fcap ? c->fcap * 2 : 16;
        char **nf = realloc(c->f, cap * sizeof(*nf));
        if (!nf)
            return -ENOMEM;
        c->f = nf;
        c->fcap = cap;
    }
    c->f[c->nf++] = start;
    return 0;
}

/* Unquote one RFC 4180 field starting at the opening quote *s, in place; *next is what follows
 * the closing quote (',' or the end). */
static int data_csv_unquote(char *s, char **end, char **next, char *why, size_t whylen) {
    char *w = s, *r = s + 1;
    for (;; r++) {
        if (*r == '\0')
            return errbuf_set(why, whylen, -EINVAL,
                              "unterminated quoted field (a quoted field cannot span lines)");
        if (*r == '"' && r[1] != '"')
            break;
        r += *r == '"';
        *w++ = *r;
    }
    for (r++; *r == ' ' || *r == '\t'; r++)
        ;
    if (*r != ',' && *r != ';' && *r != '\0')
        return errbuf_set(why, whylen, -EINVAL, "text after the closing quote of a field");
    *end = w;
    *next = r;
    return 0;
}

/* Split line into c->f in place. 0, -ENOMEM, or -EINVAL with why. */
static int data_csv_split(struct data_csv_ctx *c, char *s, char *why, size_t whylen) {
    c->nf = 0;
    for (;;) {
        while (*s == ' ' || *s == '\t')
            s++;
        char *end = s, *next = s;
        if (*s == '"') {
            int rc = data_csv_unquote(s, &end, &next, why, whylen);
            if (rc != 0)
                return rc;
        } else {
            char seps[2] = {c->sep, '\0'};
            next = end = s + strcspn(s, seps);
        }
        int more = *next == c->sep;
        if (data_csv_push_field(c, s, end) != 0)
            return errbuf_set(why, whylen, -ENOMEM, "out of memory");
        if (!more)
            return 0;
        s = next + 1;
    }
}

static int data_csv_blank(const char *s) {
    return s[strspn(s, " \t")] == '\0';
}

/* ---- header ---- */

int data_csv_name_eq(const char *a, const char *lower) {
    for (; *a && *lower; a++, lower++) {
        char ch = (*a >= 'A' && *a <= 'Z') ? (char)(*a - 'A' + 'a') : *a;
        if (ch != *lower)
            return 0;
    }
    return *a == *lower;
}

static void data_csv_map_columns(struct data_csv_ctx *c) {
    for (int k = 0; k < DATA_CSV_NCOL; k++)
        c->col[k] = -1;
    c->dup[0] = c->dup[1] = -1;
    for (size_t i = 0; i < c->nf; i++)
        for (size_t k = 0; k < sizeof(data_csv_names) / sizeof(data_csv_names[0]); k++) {
            if (!data_csv_name_eq(c->f[i], data_csv_names[k].name))
                continue;
            long *at = &c->col[data_csv_names[k].col];
            if (*at >= 0 && c->dup[0] < 0) { /* two columns for one thing: the first seen */
                c->dup[0] = *at;
                c->dup[1] = (long)i;
            }
            *at = *at < 0 ? (long)i : *at;
        }
    c->ncols = c->nf;
    /* time alone is TradingView's timestamp; date alone a daily file's (refused by its rows) */
    for (int k = DATA_CSV_DATE; k <= DATA_CSV_TIME && c->col[DATA_CSV_TS] < 0; k++)
        if (c->col[DATA_CSV_DATE + DATA_CSV_TIME - k] < 0 && c->col[k] >= 0) {
            c->col[DATA_CSV_TS] = c->col[k];
            c->col[k] = -1;
        }
    if (c->col[DATA_CSV_TS] < 0 && (c->col[DATA_CSV_DATE] < 0 || c->col[DATA_CSV_TIME] < 0))
        c->col[DATA_CSV_DATE] = c->col[DATA_CSV_TIME] = -1;
    /* Databento without map_symbols: the instrument_id tells the instruments apart */
    c->rep->by_id = c->col[DATA_CSV_SYMBOL] < 0 && c->col[DATA_CSV_INSTRUMENT] >= 0;
    if (c->rep->by_id)
        c->col[DATA_CSV_SYMBOL] = c->col[DATA_CSV_INSTRUMENT];
}

/* Every missing required column named in one message; a hint when the row looks like data. */
static int data_csv_check_header(struct data_csv_ctx *c, char *err, size_t errlen) {
    char where[300];
    if (c->given)
        snprintf(where, sizeof(where), "--columns");
    else
        snprintf(where, sizeof(where), "%s:%zu: header", c->name, c->lineno);
    if (c->dup[0] >= 0)
        return errbuf_set(err, errlen, -EINVAL,
                          "%s: columns %ld ('%.40s') and %ld ('%.40s') name the same thing: keep "
                          "one, or rename the other (a name ringside does not know is ignored)",
                          where, c->dup[0] + 1, c->f[c->dup[0]], c->dup[1] + 1, c->f[c->dup[1]]);
    static const char *req[] = {"timestamp", "open", "high", "low", "close", "volume"};
    static const enum data_csv_col req_col[] = {DATA_CSV_TS,  DATA_CSV_OPEN,  DATA_CSV_HIGH,
                                                DATA_CSV_LOW, DATA_CSV_CLOSE, DATA_CSV_VOLUME};
    char list[128] = "";
    int missing = 0;
    for (int k = 0; k < 6; k++) {
        int have = c->col[req_col[k]] >= 0 || (k == 0 && c->col[DATA_CSV_DATE] >= 0);
        if (have)
            continue;
        size_t used = strlen(list);
        snprintf(list + used, sizeof(list) - used, "%s'%s'", missing ? ", " : "", req[k]);
        missing++;
    }
    if (!missing)
        return 0;
    struct data_time t;
    double x;
    int numeric = data_time_parse(c->f[0], DATA_TIME_AUTO, &t, NULL, 0) == 0 ||
                  data_csv_number(c->f[0], &x, NULL, 0) == 0;
    return errbuf_set(err, errlen, -EINVAL, "%s: missing required column%s %s%s", where,
                      missing > 1 ? "s" : "", list,
                      numeric && !c->given ? " (the first row looks like data: a header row is "
                                             "required, or name the columns with --columns)"
                                           : "");
}

/* The header a file without one is given (--columns), checked as a header row is; a name
 * the reader does not know is refused (a typo would otherwise drop a column), "_" skips one. */
static int data_csv_given_header(struct data_csv_ctx *c, char *err, size_t errlen) {
    size_t n = strlen(c->given);
    if (n > DATA_CSV_MAX_LINE)
        return errbuf_set(err, errlen, -EINVAL, "--columns: longer than %u bytes",
                          DATA_CSV_MAX_LINE);
    memcpy(c->line, c->given, n + 1);
    char why[160];
    int rc = data_csv_split(c, c->line, why, sizeof(why));
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "--columns: %s", why);
    for (size_t i = 0; i < c->nf; i++) {
        bool known = strcmp(c->f[i], "_") == 0;
        for (size_t k = 0; !known && k < sizeof(data_csv_names) / sizeof(data_csv_names[0]); k++)
            known = data_csv_name_eq(c->f[i], data_csv_names[k].name);
        if (!known)
            return errbuf_set(err, errlen, -EINVAL,
                              "--columns: unknown column '%.40s' (timestamp, datetime, ts_event, "
                              "date, time, open, high, low, close, volume, vix, symbol, or _ to "
                              "skip one)",
                              c->f[i]);
    }
    data_csv_map_columns(c);
    c->layout = DATA_CSV_GIVEN;
    return data_csv_check_header(c, err, errlen);
}

/* Read up to and including the header row (or, in a file without one, the first row, left
 * pending). */
static int data_csv_header(struct data_csv_ctx *c, char *err, size_t errlen) {
    if (c->given)
        return data_csv_given_header(c, err, errlen);
    int rc;
    while ((rc = data_csv_read_line(c, err, errlen)) == 1) {
        char *s = c->line;
        if (c->lineno == 1 && strncmp(s, "\xEF\xBB\xBF", 3) == 0)
            memmove(s, s + 3, strlen(s + 3) + 1);
        if (data_csv_blank(s))
            continue;
        if (data_csv_layout_headerless(c, s)) {
            c->pending = true; /* the line is the first row */
            break;
        }
        char why[160];
        rc = data_csv_split(c, s, why, sizeof(why));
        if (rc != 0)
            return errbuf_set(err, errlen, rc, "%s:%zu: header: %s", c->name, c->lineno, why);
        data_csv_map_columns(c);
        c->layout = data_csv_layout_of_header(c);
        rc = data_csv_check_header(c, err, errlen);
        if (rc == 0 && c->continuous && c->col[DATA_CSV_SYMBOL] < 0)
            rc = errbuf_set(err, errlen, -EINVAL,
                            "%s:%zu: header: no 'symbol' column to roll between (leave out "
                            "--continuous: the file holds one instrument)",
                            c->name, c->lineno);
        if (rc == 0 && c->want && c->col[DATA_CSV_SYMBOL] < 0)
            rc = errbuf_set(err, errlen, -EINVAL,
                            "%s:%zu: header: no 'symbol' column to pick %s from (leave out "
                            "--symbol: the file holds one instrument)",
                            c->name, c->lineno, c->want);
        return rc;
    }
    if (rc == 1)
        return 0;
    return rc < 0
               ? rc
               : errbuf_set(err, errlen, -EINVAL, "%s: empty file: expected a header row", c->name);
}

/* ---- rows ---- */

/* The row's timestamp text: its column, or date and time joined; *col names it. */
static const char *data_csv_time_text(struct data_csv_ctx *c, char joined[64], const char **col) {
    *col = "timestamp";
    if (c->col[DATA_CSV_TS] >= 0)
        return c->f[c->col[DATA_CSV_TS]];
    *col = "date+time";
    if (snprintf(joined, 64, "%s %s", c->f[c->col[DATA_CSV_DATE]], c->f[c->col[DATA_CSV_TIME]]) >=
        64)
        joined[0] = '\0';
    return joined;
}

/* An integer timestamp in another unit than the rows before it is a mistake, not a time. */
static int data_csv_row_unit(struct data_csv_ctx *c, const struct data_time *t, const char *col,
                             const char *s, char *why, size_t whylen) {
    if (t->form != DATA_TIME_EPOCH || c->time_unit != DATA_TIME_AUTO)
        return 0;
    if (c->unit_seen == DATA_TIME_AUTO)
        c->unit_seen = t->unit;
    c->rep->time_unit = c->unit_seen;
    if ((int)t->unit == c->unit_seen)
        return 0;
    return errbuf_set(why, whylen, -EINVAL,
                      "%s: %.40s has the digits of epoch %s, the rows before it those of %s "
                      "(--time-unit s|ms|us|ns reads every row in one unit)",
                      col, s, data_time_unit_name(t->unit),
                      data_time_unit_name((enum data_time_unit)c->unit_seen));
}

/* The row's time, in UTC, checked against the row before. -EDOM for a date without a time
 * (a daily bar), -EINVAL for any other bad time; why says which. */
static int data_csv_row_time(struct data_csv_ctx *c, struct data_time *t, char *why,
                             size_t whylen) {
    const char *col;
    char joined[64], inner[DATA_CSV_MSG];
    const char *s = data_csv_time_text(c, joined, &col);
    if (data_time_parse(s, (enum data_time_unit)c->time_unit, t, inner, sizeof(inner)) != 0) {
        if (inner[0])
            return errbuf_set(why, whylen, -EINVAL, "%s: %.40s is %s", col, s, inner);
        return errbuf_set(why, whylen, -EINVAL,
                          "%s: bad timestamp \"%.40s\" (expected YYYY-MM-DD HH:MM[:SS], ISO "
                          "8601 with or without a UTC offset, yyyyMMdd HHmmss, or an epoch time "
                          "in s, ms, us or ns)",
                          col, s);
    }
    if (t->form == DATA_TIME_DATE)
        return errbuf_set(why, whylen, -EDOM,
                          "%s: %.40s is a date without a time of day: daily bars have no "
                          "intraday profile (VPOC needs minute bars or ticks)",
                          col, s);
    int rc = data_csv_row_unit(c, t, col, s, why, whylen);
    if (rc != 0)
        return rc;
    bool ticks = data_csv_layout_ticks(c->layout);
    int32_t end = data_csv_layout_end_stamp(c->layout);
    if (t->form == DATA_TIME_WALL && c->tz) { /* the first instant after the last row's stamp */
        int64_t u, after = c->have_last ? c->last_t + end - ticks : INT64_MIN;
        if (data_tz_to_utc(c->tz, t->t_s, after, &u) != 0)
            return errbuf_set(why, whylen, -EINVAL,
                              "%s: %.40s does not exist in %s (the clocks went forward)", col, s,
                              c->tz_name);
        t->t_s = u;
    }
    t->t_s -= end; /* the bar's start */
    if (t->t_s < DATA_TIME_MIN_S || t->t_s > DATA_TIME_MAX_S)
        return errbuf_set(why, whylen, -EINVAL, "%s: %.40s is outside years 0001-9999 in UTC", col,
                          s);
    c->rep->forms |= 1u << t->form;
    int order = c->have_last ? data_time_cmp(t->t_s, t->ns, c->last_t, c->last_ns) : 1;
    if (order < 0 || (!ticks && t->t_s <= c->last_t && c->have_last)) {
        char now[20], prev[20];
        data_format_time(t->t_s, now);
        data_format_time(c->last_t, prev);
        return errbuf_set(why, whylen, -EINVAL, "%s: not increasing (%s after %s)", col, now, prev);
    }
    return 0;
}

static int data_csv_row_num(struct data_csv_ctx *c, enum data_csv_col k, const char *name,
                            double *out, char *why, size_t whylen) {
    char inner[128];
    if (data_csv_number(c->f[c->col[k]], out, inner, sizeof(inner)) != 0)
        return errbuf_set(why, whylen, -EINVAL, "%s: %s", name, inner);
    return 0;
}

/* A fixed-point price: an integer in 10^-dec units, read as the decimal it stands for (the
 * point put in the text, so 4700250000000 at 9 reads exactly as 4700.25 does). */
static int data_csv_scaled(const char *s, int dec, double *out, char *why, size_t whylen) {
    bool neg = *s == '-';
    const char *d = s + neg;
    size_t n = strlen(d);
    if (n == 0 || n > 40 || strspn(d, "0123456789") != n)
        return errbuf_set(why, whylen, -EINVAL,
                          "\"%.40s\" is not an integer, and prices are read in fixed point, "
                          "1e-%d units (--price-scale 1 reads them as written)",
                          s, dec);
    char txt[64];
    size_t w = 0, lead = (size_t)dec >= n ? (size_t)dec - n + 1 : 0; /* zeros before the digits */
    txt[w++] = neg ? '-' : '+';
    for (size_t i = 0; i < lead + n; i++) {
        if (i == lead + n - (size_t)dec)
            txt[w++] = '.';
        txt[w++] = i < lead ? '0' : d[i - lead];
    }
    txt[w] = '\0';
    *out = strtod(txt, NULL);
    return 0;
}

/* One of the four prices, as the file's scale says. */
static int data_csv_row_price(struct data_csv_ctx *c, enum data_csv_col k, const char *name,
                              double *out, char *why, size_t whylen) {
    if (c->price_decimals == 0)
        return data_csv_row_num(c, k, name, out, why, whylen);
    char inner[DATA_CSV_MSG];
    if (data_csv_scaled(c->f[c->col[k]], c->price_decimals, out, inner, sizeof(inner)) != 0)
        return errbuf_set(why, whylen, -EINVAL, "%s: %s", name, inner);
    return 0;
}

/* "col: X is rel Y", numbers formatted only once a row has failed. */
static int data_csv_bound(char *why, size_t whylen, const char *col, double x, const char *rel,
                          double lim) {
    char xs[32], ls[32];
    data_csv_fmt(x, xs);
    data_csv_fmt(lim, ls);
    return errbuf_set(why, whylen, -EINVAL, "%s: %s is %s %s", col, xs, rel, ls);
}

/* A price out of range that a scale would bring in: what --price-scale would make of it. */
static int data_csv_too_big(char *why, size_t whylen, const char *col, double x, bool scaled) {
    char xs[32], as9[32];
    data_csv_fmt(x, xs);
    if (scaled || fabs(x) / 1e9 > DATA_CSV_MAX_PRICE)
        return errbuf_set(why, whylen, -EINVAL, "%s: %s is beyond the maximum price +/- 1e9", col,
                          xs);
    int k = 1;
    while (fabs(x) / pow(10, k) > DATA_CSV_MAX_PRICE)
        k++;
    data_csv_fmt(x / 1e9, as9);
    return errbuf_set(why, whylen, -EINVAL,
                      "%s: %s is beyond the maximum price +/- 1e9: prices in fixed point? "
                      "--price-scale 1e-9 (Databento's) reads it as %s; 1e-%d is the least "
                      "scale that fits",
                      col, xs, as9, k);
}

static int data_csv_check_bar(const struct data_csv_ctx *c, const struct data_bar *b, char *why,
                              size_t whylen) {
    static const char *const names[4] = {"open", "high", "low", "close"};
    const double px[4] = {b->open, b->high, b->low, b->close};
    for (int k = 0; k < 4; k++)
        if (fabs(px[k]) > DATA_CSV_MAX_PRICE)
            return data_csv_too_big(why, whylen, names[k], px[k], c->price_decimals > 0);
    double hi = fmax(b->open, b->close), lo = fmin(b->open, b->close);
    if (b->high < hi)
        return data_csv_bound(why, whylen, "high", b->high, "below max(open, close) =", hi);
    if (b->low > lo)
        return data_csv_bound(why, whylen, "low", b->low, "above min(open, close) =", lo);
    if (b->volume < 0)
        return data_csv_bound(why, whylen, "volume", b->volume, "below", 0);
    if (b->volume > DATA_CSV_MAX_VOLUME)
        return data_csv_bound(why, whylen, "volume", b->volume, "above the maximum",
                              DATA_CSV_MAX_VOLUME);
    if (b->vix < 0)
        return data_csv_bound(why, whylen, "vix", b->vix, "below", 0);
    return 0;
}

/* Split the current line into its fields, as many as the header's. 0, -ENOMEM, or -EINVAL
 * with why. */
static int data_csv_fields(struct data_csv_ctx *c, char *why, size_t whylen) {
    char inner[160];
    int rc = data_csv_split(c, c->line, inner, sizeof(inner));
    if (rc != 0)
        return errbuf_set(why, whylen, rc, "row: %s", inner);
    if (c->nf != c->ncols)
        return errbuf_set(why, whylen, -EINVAL, "row: %zu fields, %s %zu", c->nf,
                          c->sep == ';' ? "NinjaTrader's rows have" : "the header has", c->ncols);
    return 0;
}

/* Count the row's instrument (its place in sym into *kout); false when the row is left out
 * (another instrument than the one picked, or any row once a second one has turned up without
 * a pick; rolling: a spread). */
static bool data_csv_symbol(struct data_csv_ctx *c, struct data_csv_report *rep, size_t *kout) {
    const char *s = c->f[c->col[DATA_CSV_SYMBOL]];
    size_t k = 0;
    while (k < c->n_sym && strcmp(c->sym[k].name, s) != 0)
        k++;
    if (k < c->n_sym)
        c->sym[k].rows++;
    else if (k < DATA_CSV_SYMBOLS) {
        snprintf(c->sym[k].name, sizeof(c->sym[k].name), "%s", s);
        c->sym[k].rows = 1;
        c->n_sym++;
        rep->n_instruments++;
    } else
        c->rows_more++;
    *kout = k;
    if (c->continuous) {
        bool spread = strchr(s, '-') != NULL;
        c->too_many = c->too_many || (!spread && k >= DATA_CSV_SYMBOLS);
        rep->rows_other += spread;
        return !spread && k < DATA_CSV_SYMBOLS;
    }
    if (c->want) {
        bool mine = strcmp(s, c->want) == 0;
        rep->rows_other += !mine;
        return mine;
    }
    c->several = c->several || c->n_sym > 1;
    return !c->several;
}

/* "ESH4 (12000 rows), ESM4 (800 rows)" into buf: the instruments seen. */
static void data_csv_symbols(const struct data_csv_ctx *c, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < c->n_sym && used < n; k++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s (%zu rows)", k ? ", " : "",
                                 c->sym[k].name, c->sym[k].rows);
    if (c->rows_more && used < n)
        snprintf(buf + used, n - used, " and %zu rows of more instruments", c->rows_more);
}

/* Parse and validate the current row's fields into b. 0, or -EINVAL with why = "column:
 * reason". */
static int data_csv_row(struct data_csv_ctx *c, struct data_bar *b, struct data_time *t, char *why,
                        size_t whylen) {
    int rc;
    b->vix = NAN;
    if ((rc = data_csv_row_time(c, t, why, whylen)) != 0)
        return rc;
    b->t_s = t->t_s;
    if (data_csv_layout_ticks(c->layout)) { /* one price: the trade's */
        if ((rc = data_csv_row_price(c, DATA_CSV_CLOSE, "price", &b->close, why, whylen)) != 0)
            return rc;
        b->open = b->high = b->low = b->close;
    } else if ((rc = data_csv_row_price(c, DATA_CSV_OPEN, "open", &b->open, why, whylen)) != 0 ||
               (rc = data_csv_row_price(c, DATA_CSV_HIGH, "high", &b->high, why, whylen)) != 0 ||
               (rc = data_csv_row_price(c, DATA_CSV_LOW, "low", &b->low, why, whylen)) != 0 ||
               (rc = data_csv_row_price(c, DATA_CSV_CLOSE, "close", &b->close, why, whylen)) != 0)
        return rc;
    if ((rc = data_csv_row_num(c, DATA_CSV_VOLUME, "volume", &b->volume, why, whylen)) != 0)
        return rc;
    if (c->col[DATA_CSV_VIX] >= 0 &&
        (rc = data_csv_row_num(c, DATA_CSV_VIX, "vix", &b->vix, why, whylen)) != 0)
        return rc;
    return data_csv_check_bar(c, b, why, whylen);
}

/* Record a rejected row; a fatal error unless opts->skip_bad_rows. */
static int data_csv_reject(struct data_csv_ctx *c, int rc, const char *why, char *err,
                           size_t errlen) {
    struct data_csv_report *rep = c->rep;
    if (rc == -ENOMEM || !c->skip)
        return errbuf_set(err, errlen, rc, "%s:%zu: %s", c->name, c->lineno, why);
    if (rep->rows_skipped++ == 0)
        errbuf_set(rep->first_skip, sizeof(rep->first_skip), 0, "%s:%zu: %s", c->name, c->lineno,
                   why);
    return 0;
}

int data_csv_ctx_none(const struct data_csv_ctx *c, char *err, size_t errlen) {
    char list[512];
    data_csv_symbols(c, list, sizeof(list));
    if (c->want && (c->n_sym > 0 || c->rows_more))
        return errbuf_set(err, errlen, -EINVAL, "%s: no rows of %s (the file has %s)", c->name,
                          c->want, list);
    if (c->rep->rows_skipped)
        return errbuf_set(err, errlen, -EINVAL, "%s: no valid data rows (%zu skipped; first: %s)",
                          c->name, c->rep->rows_skipped, c->rep->first_skip);
    return errbuf_set(err, errlen, -EINVAL, "%s: no data rows", c->name);
}

int data_csv_ctx_end(const struct data_csv_ctx *c, char *err, size_t errlen) {
    if (c->several) {
        char list[512];
        data_csv_symbols(c, list, sizeof(list));
        return errbuf_set(err, errlen, -EINVAL,
                          "%s: several instruments%s: %s; pick one with --symbol NAME", c->name,
                          c->rep->by_id ? " (by instrument_id: the file has no symbol column)" : "",
                          list);
    }
    if (c->continuous && c->too_many)
        return errbuf_set(err, errlen, -EINVAL,
                          "%s: more than %d instruments to roll between (--continuous front)",
                          c->name, DATA_CSV_SYMBOLS);
    return 0;
}

/* Rolling: times increase within each instrument, so the row is checked against the last of
 * its own instrument (sym). */
static void data_csv_last_of(struct data_csv_ctx *c, size_t sym) {
    c->have_last = c->sym_have_last[sym];
    c->last_t = c->sym_have_last[sym] ? c->sym_last_t[sym] : 0;
    c->last_ns = c->sym_have_last[sym] ? c->sym_last_ns[sym] : 0;
}

/* The accepted row's time as the last one (of its instrument, when rolling). */
static void data_csv_accept(struct data_csv_ctx *c, size_t k, const struct data_time *t) {
    c->last_t = t->t_s;
    c->last_ns = t->ns;
    c->have_last = 1;
    if (c->continuous) {
        c->sym_last_t[k] = t->t_s;
        c->sym_last_ns[k] = t->ns;
        c->sym_have_last[k] = true;
    }
    if (c->rep->kept[0] == '\0' && c->col[DATA_CSV_SYMBOL] >= 0 && !c->continuous)
        snprintf(c->rep->kept, sizeof(c->rep->kept), "%s", c->f[c->col[DATA_CSV_SYMBOL]]);
}

int data_csv_ctx_next(struct data_csv_ctx *c, struct data_bar *b, size_t *sym, char *err,
                      size_t errlen) {
    int rc = 0;
    while (c->pending || (rc = data_csv_read_line(c, err, errlen)) == 1) {
        c->pending = false;
        if (data_csv_blank(c->line))
            continue;
        if (c->given && c->rep->rows_read == 0 && !strchr(c->line, ',') && strchr(c->line, ';'))
            c->sep = ';'; /* named columns, semicolon-separated rows */
        c->rep->rows_read++;
        char why[DATA_CSV_MSG];
        rc = data_csv_fields(c, why, sizeof(why));
        if (rc == 0 && !c->first_done) { /* what the layout's first row says of the rest */
            c->first_done = true;
            if ((rc = data_csv_layout_first_row(c, err, errlen)) != 0)
                return rc;
        }
        size_t k = 0;
        if (rc == 0 && c->col[DATA_CSV_SYMBOL] >= 0 && !data_csv_symbol(c, c->rep, &k))
            continue;
        if (c->continuous)
            data_csv_last_of(c, k);
        struct data_time t;
        if (rc == 0)
            rc = data_csv_row(c, b, &t, why, sizeof(why));
        if (rc == -EDOM && !c->have_last && c->rep->rows_skipped == 0) /* a daily file */
            return errbuf_set(err, errlen, -EINVAL, "%s:%zu: %s", c->name, c->lineno, why);
        if (rc != 0) {
            if ((rc = data_csv_reject(c, rc == -EDOM ? -EINVAL : rc, why, err, errlen)) != 0)
                return rc;
            continue;
        }
        data_csv_accept(c, k, &t);
        *sym = c->continuous ? k : 0;
        return 1;
    }
    return rc;
}

/* ---- open and close ---- */

static int data_csv_open_input(struct data_csv_ctx *c, const char *path, char *err, size_t errlen) {
    c->line = malloc(DATA_CSV_LINE_BUF);
    c->rbuf = malloc(DATA_CSV_RBUF);
    if (!c->line || !c->rbuf)
        return errbuf_set(err, errlen, -ENOMEM, "%s: out of memory", c->name);
    int rc = data_in_open(path, &c->in, err, errlen);
    return rc == -ENOTSUP ? -EINVAL : rc; /* a file this build cannot read: bad input */
}

/* The text options (--time-unit, --price-scale, --bar) into c, checked. */
static int data_csv_text_opts(struct data_csv_ctx *c, const struct data_csv_opts *opts, char *err,
                              size_t errlen) {
    const struct {
        const char *flag, *value;
    } o[] = {
        {"--time-unit", opts ? opts->time_unit : NULL},
        {"--price-scale", opts ? opts->price_scale : NULL},
        {"--bar", opts ? opts->bar : NULL},
    };
    int64_t v[3] = {DATA_TIME_AUTO, -1, 0};
    for (size_t k = 0; k < 3; k++) {
        if (!o[k].value || !o[k].value[0])
            continue;
        int rc = data_csv_opt_check(o[k].flag, o[k].value, &v[k], err, errlen);
        if (rc != 0)
            return rc;
    }
    c->time_unit = (int)v[0];
    c->price_decimals = v[1] < 0 ? 0 : (int)v[1];
    c->price_pending = v[1] < 0; /* the layout decides */
    c->bar_s = v[2];
    return 0;
}

/* What the layout implies once the header is read: the bar length, the prices' scale, the
 * report's fields. */
static void data_csv_layout_apply(struct data_csv_ctx *c) {
    struct data_csv_report *rep = c->rep;
    data_csv_layout_name(c->layout, NULL, rep->format, sizeof(rep->format));
    if (strcmp(data_in_kind(c->in), "plain") != 0)
        snprintf(rep->compression, sizeof(rep->compression), "%s", data_in_kind(c->in));
    rep->ticks = data_csv_layout_ticks(c->layout);
    if (c->bar_s == 0 && rep->ticks)
        c->bar_s = 60;
    rep->bar_s = c->bar_s;
    if (c->price_pending && c->layout != DATA_CSV_DATABENTO)
        c->price_pending = false; /* as written */
    rep->price_decimals = c->price_decimals;
    rep->time_unit = c->time_unit;
    if (c->tz_name)
        snprintf(rep->tz, sizeof(rep->tz), "%s", c->tz_name);
}

int data_csv_ctx_init(struct data_csv_ctx *c, const char *path, const struct data_csv_opts *opts,
                      struct data_csv_report *rep, char *err, size_t errlen) {
    *c = (struct data_csv_ctx){
        .name = strcmp(path, "-") == 0 ? "<stdin>" : path,
        .sep = ',',
        .skip = opts && opts->skip_bad_rows,
        .want = opts && opts->symbol && opts->symbol[0] ? opts->symbol : NULL,
        .given = opts && opts->columns && opts->columns[0] ? opts->columns : NULL,
        .continuous = opts && opts->continuous,
        .rep = rep,
    };
    int rc = data_csv_text_opts(c, opts, err, errlen);
    if (rc == 0)
        rc = data_csv_open_input(c, path, err, errlen);
    if (rc == 0 && opts && opts->tz && opts->tz[0]) {
        c->tz_name = opts->tz;
        rc = data_tz_open(opts->tz, &c->tz, err, errlen);
        rc = rc == -ENOENT ? -EINVAL : rc; /* a zone that is not there: a bad --tz */
    }
    if (rc == 0)
        rc = data_csv_header(c, err, errlen);
    if (rc == 0) {
        data_csv_layout_apply(c);
        rc = data_csv_layout_check(c, err, errlen);
    }
    return rc;
}

void data_csv_ctx_fini(struct data_csv_ctx *c) {
    data_in_close(c->in);
    data_tz_close(c->tz);
    free(c->rbuf);
    free(c->line);
    free(c->f);
    c->in = NULL;
    c->tz = NULL;
    c->rbuf = c->line = NULL;
    c->f = NULL;
}

/* ---- write ---- */

/* strtod and printf follow LC_NUMERIC: pin this thread to "C" while writing, so 4700.25 is
 * written the same whatever locale the program runs in. 0 or -ENOMEM. */
static int data_csv_pin_c(locale_t *cloc, locale_t *old) {
    *cloc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (*cloc == (locale_t)0)
        return -ENOMEM;
    *old = uselocale(*cloc);
    return 0;
}

/* One CSV row; -EINVAL when a value cannot be written so that it reads back. */
static int data_csv_write_bar(FILE *fp, const struct data_bar *b, bool has_vix) {
    double v[6] = {b->open, b->high, b->low, b->close, b->volume, has_vix ? b->vix : 0};
    char num[6][32], t[20];
    for (int i = 0; i < 6; i++) {
        if (!isfinite(v[i]))
            return -EINVAL;
        data_csv_fmt(v[i], num[i]);
    }
    if (b->t_s < DATA_TIME_MIN_S || b->t_s > DATA_TIME_MAX_S)
        return -EINVAL;
    data_format_time(b->t_s, t);
    fprintf(fp, "%s,%s,%s,%s,%s,%s%s%s\n", t, num[0], num[1], num[2], num[3], num[4],
            has_vix ? "," : "", has_vix ? num[5] : "");
    return 0;
}

static int data_csv_write_rows(FILE *fp, const struct data_series *ds, size_t *bad) {
    fputs(ds->has_vix ? "timestamp,open,high,low,close,volume,vix\n"
                      : "timestamp,open,high,low,close,volume\n",
          fp);
    for (size_t i = 0; i < ds->n; i++) {
        if (data_csv_write_bar(fp, &ds->bars[i], ds->has_vix) != 0) {
            *bad = i;
            return -EINVAL;
        }
    }
    return 0;
}

int data_csv_write(const char *path, const struct data_series *ds, char *err, size_t errlen) {
    locale_t cloc, old;
    if (data_csv_pin_c(&cloc, &old) != 0)
        return errbuf_set(err, errlen, -ENOMEM, "%s: cannot create the C locale", path);
    struct afile af;
    size_t bad = 0;
    int rc = afile_open_user(&af, path, err, errlen);
    if (rc != 0)
        goto fail;
    if (data_csv_write_rows(af.fp, ds, &bad) != 0) {
        afile_abort(&af);
        rc = errbuf_set(err, errlen, -EINVAL,
                        "%s: bar %zu has a non-finite value or a time outside years 0001-9999",
                        path, bad);
        goto fail;
    }
    rc = afile_commit(&af, err, errlen);
fail:
    uselocale(old);
    freelocale(cloc);
    return rc;
}
