/* The layouts the reader recognises (one table: each layout's name and what it implies), the
 * checks each asks of the options and of its first row, the text options, and the one line
 * that says what a file was read as. */
#include "backend/core/errbuf.h"
#include "backend/data/data_csv.h"
#include "backend/data/data_csv_internal.h"
#include "backend/data/data_time.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct data_csv_layout_info {
    const char *name;
    bool ticks;          /* the rows are trades, one price each, aggregated into bars */
    bool zoneless;       /* the file says nothing of its zone and is often local: --tz required */
    bool daily;          /* daily bars: refused, they have no intraday profile */
    int32_t end_stamp_s; /* a bar is stamped with its end, this long after its start */
} data_csv_layouts[] = {
    [DATA_CSV_GENERIC] = {"CSV with a header", false, false, false, 0},
    [DATA_CSV_GIVEN] = {"CSV without a header (--columns)", false, false, false, 0},
    [DATA_CSV_DATABENTO] = {"Databento OHLCV", false, false, false, 0},
    [DATA_CSV_TRADINGVIEW] = {"TradingView chart export", false, false, false, 0},
    /* NinjaTrader stamps a bar with its close: the 9:31 bar holds 9:30:00-9:30:59 */
    [DATA_CSV_NT_MINUTE] = {"NinjaTrader minute export (bars stamped at their end)", false, true,
                            false, 60},
    [DATA_CSV_NT_TICK] = {"NinjaTrader tick export", true, true, false, 0},
    [DATA_CSV_NT_DAILY] = {"NinjaTrader daily export", false, true, true, 0},
};

/* Databento's record types of the OHLCV schemas (its rtype column). */
static const struct {
    const char *rtype, *schema;
    bool daily;
} data_csv_rtypes[] = {
    {"32", "ohlcv-1s", false}, {"33", "ohlcv-1m", false}, {"34", "ohlcv-1h", false},
    {"35", "ohlcv-1d", true},  {"36", "ohlcv-eod", true},
};
#define DATA_CSV_NRTYPES (sizeof(data_csv_rtypes) / sizeof(data_csv_rtypes[0]))

bool data_csv_layout_ticks(enum data_csv_layout l) {
    return data_csv_layouts[l].ticks;
}

int32_t data_csv_layout_end_stamp(enum data_csv_layout l) {
    return data_csv_layouts[l].end_stamp_s;
}

void data_csv_layout_name(enum data_csv_layout l, const char *rtype, char *out, size_t n) {
    const char *schema = NULL;
    for (size_t k = 0; rtype && k < DATA_CSV_NRTYPES; k++)
        if (strcmp(rtype, data_csv_rtypes[k].rtype) == 0)
            schema = data_csv_rtypes[k].schema;
    if (schema) /* "Databento ohlcv-1m" */
        snprintf(out, n, "Databento %s", schema);
    else
        snprintf(out, n, "%s", data_csv_layouts[l].name);
}

/* ---- recognising a layout ---- */

/* The columns of a NinjaTrader layout: time first, then each column's place. */
static void data_csv_layout_cols(struct data_csv_ctx *c, size_t nf, long open, long high, long low,
                                 long close, long volume) {
    for (int k = 0; k < DATA_CSV_NCOL; k++)
        c->col[k] = -1;
    c->col[DATA_CSV_TS] = 0;
    c->col[DATA_CSV_OPEN] = open;
    c->col[DATA_CSV_HIGH] = high;
    c->col[DATA_CSV_LOW] = low;
    c->col[DATA_CSV_CLOSE] = close;
    c->col[DATA_CSV_VOLUME] = volume;
    c->ncols = nf;
    c->sep = ';';
}

bool data_csv_layout_headerless(struct data_csv_ctx *c, const char *line) {
    const char *semi = strchr(line, ';');
    size_t tlen = semi ? (size_t)(semi - line) : 0, nf = 1;
    if (!semi || tlen >= 32 || strspn(line, "0123456789 ") != tlen)
        return false;
    for (const char *p = line; *p; p++)
        nf += *p == ';';
    char ts[32];
    memcpy(ts, line, tlen);
    ts[tlen] = '\0';
    struct data_time t;
    if (data_time_parse(ts, DATA_TIME_AUTO, &t, NULL, 0) != 0)
        return false;
    /* the time's form tells the layout; its rows' fields are then checked against it */
    if (tlen == 23 || (tlen == 15 && nf == 3)) {
        c->layout = DATA_CSV_NT_TICK; /* last;bid;ask;volume (NinjaTrader 8), price;volume (7) */
        nf = nf == 3 ? 3 : 5;
        data_csv_layout_cols(c, nf, -1, -1, -1, 1, (long)nf - 1);
        return true;
    }
    if (tlen == 15)
        c->layout = DATA_CSV_NT_MINUTE;
    else if (tlen == 8 && t.form == DATA_TIME_DATE)
        c->layout = DATA_CSV_NT_DAILY;
    else
        return false;
    data_csv_layout_cols(c, 6, 1, 2, 3, 4, 5);
    return true;
}

enum data_csv_layout data_csv_layout_of_header(const struct data_csv_ctx *c) {
    const char *ts = c->col[DATA_CSV_TS] >= 0 ? c->f[c->col[DATA_CSV_TS]] : "";
    if (data_csv_name_eq(ts, "ts_event"))
        return DATA_CSV_DATABENTO;
    if (data_csv_name_eq(ts, "time"))
        return DATA_CSV_TRADINGVIEW; /* time alone: TradingView's epoch or ISO times */
    return DATA_CSV_GENERIC;
}

/* ---- what a layout asks ---- */

/* "FILE:LINE: header: " when the file has a header row, "FILE: " otherwise. */
static void data_csv_layout_where(const struct data_csv_ctx *c, char *out, size_t n) {
    bool header = c->layout == DATA_CSV_GENERIC || c->layout == DATA_CSV_DATABENTO ||
                  c->layout == DATA_CSV_TRADINGVIEW;
    if (header)
        snprintf(out, n, "%s:%zu: header: ", c->name, c->lineno);
    else
        snprintf(out, n, "%s: ", c->name);
}

int data_csv_layout_check(const struct data_csv_ctx *c, char *err, size_t errlen) {
    const struct data_csv_layout_info *l = &data_csv_layouts[c->layout];
    if (l->daily)
        return errbuf_set(err, errlen, -EINVAL,
                          "%s:%zu: a %s (yyyyMMdd;open;high;low;close;volume): daily bars have no "
                          "intraday profile: VPOC needs minute bars or ticks (export NinjaTrader's "
                          "minute or tick data)",
                          c->name, c->lineno, l->name);
    if (l->zoneless && !c->tz)
        return errbuf_set(err, errlen, -EINVAL,
                          "%s: a %s, whose times say nothing of their zone (NinjaTrader 8 writes "
                          "its exports in UTC; older versions, and vendors' files for it, in the "
                          "PC's local time): say which with --tz (--tz UTC, --tz America/Chicago)",
                          c->name, l->name);
    char where[300];
    data_csv_layout_where(c, where, sizeof(where));
    if (c->continuous && c->col[DATA_CSV_SYMBOL] < 0)
        return errbuf_set(err, errlen, -EINVAL,
                          "%sno 'symbol' column to roll between (leave out --continuous: the file "
                          "holds one instrument)",
                          where);
    if (c->want && c->col[DATA_CSV_SYMBOL] < 0)
        return errbuf_set(err, errlen, -EINVAL,
                          "%sno 'symbol' column to pick %s from (leave out --symbol: the file "
                          "holds one instrument)",
                          where, c->want);
    return 0;
}

/* [-]digits: a fixed-point price as Databento writes it (its decimal prices have a point). */
static bool data_csv_layout_integer(const char *s) {
    s += *s == '-';
    return *s && strspn(s, "0123456789") == strlen(s);
}

int data_csv_layout_first_row(struct data_csv_ctx *c, char *err, size_t errlen) {
    if (c->layout != DATA_CSV_DATABENTO)
        return 0;
    const char *rtype = c->col[DATA_CSV_RTYPE] >= 0 ? c->f[c->col[DATA_CSV_RTYPE]] : NULL;
    data_csv_layout_name(c->layout, rtype, c->rep->format, sizeof(c->rep->format));
    for (size_t k = 0; rtype && k < DATA_CSV_NRTYPES; k++)
        if (data_csv_rtypes[k].daily && strcmp(rtype, data_csv_rtypes[k].rtype) == 0)
            return errbuf_set(err, errlen, -EINVAL,
                              "%s:%zu: Databento %s (rtype %s): daily bars have no intraday "
                              "profile: VPOC needs ohlcv-1m, ohlcv-1s or ohlcv-1h bars",
                              c->name, c->lineno, data_csv_rtypes[k].schema, rtype);
    if (c->price_pending) { /* the first row's prices say which encoding the file has */
        bool fixed = true, tiny = true;
        for (int k = DATA_CSV_OPEN; k <= DATA_CSV_CLOSE; k++) {
            const char *p = c->f[c->col[k]];
            fixed = fixed && data_csv_layout_integer(p);
            tiny = tiny && strlen(p + (*p == '-')) <= 6; /* below 0.001 in 1e-9 units */
        }
        if (fixed && tiny) /* neither encoding reads it as a price: asked, not guessed */
            return errbuf_set(err, errlen, -EINVAL,
                              "%s:%zu: open: %.40s read in Databento's fixed point (1e-9 units) "
                              "is below a thousandth: decimal prices have a point (%.40s.0), "
                              "or --price-scale 1 reads them as written",
                              c->name, c->lineno, c->f[c->col[DATA_CSV_OPEN]],
                              c->f[c->col[DATA_CSV_OPEN]]);
        c->price_decimals = fixed ? DATA_CSV_PRICE_DECIMALS_MAX : 0;
        c->rep->price_decimals = c->price_decimals;
        c->rep->price_from_layout = fixed;
        c->price_pending = false;
    }
    return 0;
}

/* ---- the text options ---- */

/* "1", "1e-N" or "0.0...01" (N 0..9 decimals) into *dec. */
static int data_csv_scale_parse(const char *v, int64_t *dec) {
    if (strcmp(v, "1") == 0) {
        *dec = 0;
        return 0;
    }
    if ((v[0] == '1' && (v[1] == 'e' || v[1] == 'E') && v[2] == '-' && v[3] >= '0' && v[3] <= '9' &&
         v[4] == '\0')) {
        *dec = v[3] - '0';
        return 0;
    }
    size_t zeros = strncmp(v, "0.", 2) == 0 ? strspn(v + 2, "0") : SIZE_MAX;
    if (zeros != SIZE_MAX && v[2 + zeros] == '1' && v[3 + zeros] == '\0' &&
        zeros + 1 <= DATA_CSV_PRICE_DECIMALS_MAX) {
        *dec = (int64_t)zeros + 1;
        return 0;
    }
    return -EINVAL;
}

/* "30s", "1m", "5m", "1h": seconds into *s, a day a whole number of them. */
static int data_csv_bar_parse(const char *v, int64_t *s) {
    char *end = NULL;
    long n = strtol(v, &end, 10);
    if (v[0] < '1' || v[0] > '9' || !end || n <= 0 || n > 86400 || end[0] == '\0' || end[1] != '\0')
        return -EINVAL;
    int64_t mul = end[0] == 's' ? 1 : end[0] == 'm' ? 60 : end[0] == 'h' ? 3600 : 0;
    if (mul == 0 || n * mul > 86400 || 86400 % (n * mul) != 0)
        return -EINVAL;
    *s = n * mul;
    return 0;
}

int data_csv_opt_check(const char *flag, const char *value, int64_t *out, char *err,
                       size_t errlen) {
    int64_t v = 0;
    if (strcmp(flag, "--time-unit") == 0) {
        enum data_time_unit u;
        if (data_time_unit_parse(value, &u) != 0)
            return errbuf_set(err, errlen, -EINVAL,
                              "--time-unit: '%.40s' is not s, ms, us or ns (the unit of the "
                              "file's integer timestamps)",
                              value);
        v = u;
    } else if (strcmp(flag, "--price-scale") == 0) {
        if (data_csv_scale_parse(value, &v) != 0)
            return errbuf_set(err, errlen, -EINVAL,
                              "--price-scale: '%.40s' is not a power of ten from 1 down to 1e-9 "
                              "(1e-9 reads Databento's fixed-point prices; 1 reads prices as "
                              "written)",
                              value);
    } else if (data_csv_bar_parse(value, &v) != 0) {
        return errbuf_set(err, errlen, -EINVAL,
                          "--bar: '%.40s' is not a bar length that divides a day (30s, 1m, 5m, "
                          "15m, 1h)",
                          value);
    }
    if (out)
        *out = v;
    return 0;
}

/* ---- what a file was read as ---- */

/* Append to buf[0, n) at *used. */
static void data_csv_put(char *buf, size_t n, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void data_csv_put(char *buf, size_t n, size_t *used, const char *fmt, ...) {
    if (*used >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *used, n - *used, fmt, ap);
    va_end(ap);
    *used = k < 0 ? n : *used + (size_t)k;
}

/* "1m", "30s", "1h" */
static void data_csv_bar_name(int64_t s, char out[24]) {
    if (s % 3600 == 0)
        snprintf(out, 24, "%lldh", (long long)(s / 3600));
    else if (s % 60 == 0)
        snprintf(out, 24, "%lldm", (long long)(s / 60));
    else
        snprintf(out, 24, "%llds", (long long)s);
}

static void data_csv_describe_times(const struct data_csv_report *rep, char *buf, size_t n,
                                    size_t *used) {
    const char *sep = "";
    data_csv_put(buf, n, used, "; times ");
    if (rep->forms & (1u << DATA_TIME_EPOCH)) {
        data_csv_put(buf, n, used, "in epoch %s (UTC)",
                     data_time_unit_name((enum data_time_unit)rep->time_unit));
        sep = ", ";
    }
    if (rep->forms & (1u << DATA_TIME_OFFSET)) {
        data_csv_put(buf, n, used, "%sISO 8601 with their UTC offsets", sep);
        sep = ", ";
    }
    bool utc = !rep->tz[0] || strcmp(rep->tz, "UTC") == 0 || strcmp(rep->tz, "Etc/UTC") == 0;
    if (rep->forms & (1u << DATA_TIME_WALL))
        data_csv_put(buf, n, used, "%s%s%s%s", sep, utc ? "in UTC" : "local to ",
                     utc && rep->tz[0] ? " (--tz UTC)" : "", utc ? "" : rep->tz);
    else if (rep->tz[0])
        data_csv_put(buf, n, used, " (--tz %s moved none: they carry their zone)", rep->tz);
}

static void data_csv_describe_rest(const struct data_csv_report *rep, char *buf, size_t n,
                                   size_t *used) {
    if (rep->price_decimals == 0)
        data_csv_put(buf, n, used, "; prices as written");
    else if (rep->price_from_layout)
        data_csv_put(buf, n, used, "; prices in fixed point, 1e-9 units (the vendor's default)");
    else
        data_csv_put(buf, n, used, "; prices integers in 1e-%d units (--price-scale)",
                     rep->price_decimals);
    if (rep->n_rolls > 0 || (rep->n_instruments > 1 && !rep->kept[0]))
        data_csv_put(buf, n, used, "; the front month of %zu instruments, %zu rolls",
                     rep->n_instruments, rep->n_rolls);
    else if (rep->kept[0])
        data_csv_put(buf, n, used, "; %s %s", rep->by_id ? "instrument_id" : "instrument",
                     rep->kept);
    if (rep->kept[0] && rep->n_instruments > 1 && rep->n_rolls == 0)
        data_csv_put(buf, n, used, " of %zu", rep->n_instruments);
    size_t used_rows = rep->rows_read - rep->rows_other - rep->rows_skipped;
    if (rep->bar_s > 0) {
        char bar[24];
        data_csv_bar_name(rep->bar_s, bar);
        data_csv_put(buf, n, used, "; %zu %s bars from %zu %s", rep->bars, bar, used_rows,
                     rep->ticks ? "ticks" : "rows");
    } else {
        data_csv_put(buf, n, used, "; %zu bar%s", rep->bars, rep->bars == 1 ? "" : "s");
    }
    if (rep->rows_other)
        data_csv_put(buf, n, used, " (%zu row%s of other instruments left out)", rep->rows_other,
                     rep->rows_other == 1 ? "" : "s");
    if (rep->rows_skipped)
        data_csv_put(buf, n, used, "; %zu bad row%s skipped (first: %s)", rep->rows_skipped,
                     rep->rows_skipped == 1 ? "" : "s", rep->first_skip);
}

void data_csv_describe(const struct data_csv_report *rep, char *buf, size_t n) {
    size_t used = 0;
    if (n == 0)
        return;
    buf[0] = '\0';
    data_csv_put(buf, n, &used, "%s%s%s", rep->format, rep->compression[0] ? ", " : "",
                 rep->compression[0] ? rep->compression : "");
    if (rep->compression[0])
        data_csv_put(buf, n, &used, "-compressed");
    data_csv_describe_times(rep, buf, n, &used);
    data_csv_describe_rest(rep, buf, n, &used);
}
