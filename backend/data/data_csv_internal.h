/* The row reader under every CSV read (data_csv.c): a file's header, then its rows one at a
 * time, each validated into a bar. The session reader (data_csv_stream.c) groups the bars into
 * sessions, and rolls contracts for --continuous front; nothing else includes this header. */
#ifndef RINGSIDE_BACKEND_DATA_DATA_CSV_INTERNAL_H
#define RINGSIDE_BACKEND_DATA_DATA_CSV_INTERNAL_H

#include "backend/data/data_csv.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum data_csv_col {
    DATA_CSV_TS,
    DATA_CSV_DATE,
    DATA_CSV_TIME,
    DATA_CSV_OPEN,
    DATA_CSV_HIGH,
    DATA_CSV_LOW,
    DATA_CSV_CLOSE,
    DATA_CSV_VOLUME,
    DATA_CSV_VIX,
    DATA_CSV_SYMBOL,
    DATA_CSV_RTYPE,      /* Databento's record type: the bar length */
    DATA_CSV_INSTRUMENT, /* Databento's instrument_id: the instrument without map_symbols */
    DATA_CSV_NCOL
};

/* The layouts recognised (data_csv_layout.c holds each one's name and what it implies). */
enum data_csv_layout {
    DATA_CSV_GENERIC,     /* a header row of known names */
    DATA_CSV_GIVEN,       /* no header: --columns names the columns */
    DATA_CSV_DATABENTO,   /* ts_event, rtype, publisher_id, instrument_id, ... */
    DATA_CSV_TRADINGVIEW, /* time, open, high, low, close, Volume, indicators */
    DATA_CSV_NT_MINUTE,   /* no header: yyyyMMdd HHmmss;open;high;low;close;volume */
    DATA_CSV_NT_TICK,     /* no header: yyyyMMdd HHmmss fffffff;last;bid;ask;volume (or the
                             older yyyyMMdd HHmmss;price;volume) */
    DATA_CSV_NT_DAILY,    /* no header: yyyyMMdd;open;high;low;close;volume */
};

#define DATA_CSV_SYMBOLS 16  /* instruments counted by name; more are counted together */
#define DATA_CSV_MSG     320 /* a row's reason */

struct data_in;
struct data_tz;

/* One file being read: the open stream, the bounded line buffer, the current row's fields and
 * what the rows so far have shown (the last time, the instruments). */
struct data_csv_ctx {
    const char *name; /* file name as shown in messages */
    struct data_in *in;
    char *rbuf; /* the stream's bytes not yet cut into lines: rbuf[rpos, rlen) */
    size_t rpos, rlen;
    char *line;
    size_t lineno;
    char **f; /* fields of the current row, pointing into line */
    size_t nf, fcap;
    size_t ncols;            /* header field count */
    long col[DATA_CSV_NCOL]; /* field index of each column, -1 when absent */
    long dup[2];             /* the first two fields that name one column, or -1 */
    int64_t last_t;          /* timestamp of the last accepted bar: the next must be later */
    int32_t last_ns;         /* ... and its nanoseconds (ticks: the next may be equal) */
    int have_last;           /* last_t is set (the caller may set it before the first row) */
    enum data_csv_layout layout;
    int time_unit;      /* enum data_time_unit: --time-unit, or AUTO */
    int unit_seen;      /* the unit of the integer timestamps so far (AUTO: none yet) */
    int price_decimals; /* prices are integers in 10^-price_decimals units */
    bool price_pending; /* Databento without --price-scale: the first row decides */
    bool first_done;    /* the first row's layout checks are made */
    int64_t bar_s;      /* aggregate into bars this long (0: the rows are the bars) */
    char sep;           /* the field separator: ',' or, for NinjaTrader's files, ';' */
    bool pending;       /* the line read with the header is the first data row */
    bool skip;          /* opts->skip_bad_rows */
    const char *want;   /* opts->symbol */
    bool several;       /* a second instrument turned up (and none was picked): count only */
    const char *given;  /* opts->columns: the file has no header */
    bool continuous;    /* opts->continuous: every instrument's times checked apart */
    bool too_many;      /* more instruments than DATA_CSV_SYMBOLS to roll between */
    int64_t sym_last_t[DATA_CSV_SYMBOLS]; /* continuous: last_t of each instrument */
    int32_t sym_last_ns[DATA_CSV_SYMBOLS];
    bool sym_have_last[DATA_CSV_SYMBOLS];
    struct data_bar agg[DATA_CSV_SYMBOLS]; /* bar_s: each instrument's bar being built */
    bool agg_live[DATA_CSV_SYMBOLS];
    bool agg_eof;       /* the rows have run out: the bars being built are given out */
    struct data_tz *tz; /* opts->tz opened, or NULL */
    const char *tz_name;
    struct data_csv_report *rep; /* borrowed: counts and the format, filled as rows are read */
    struct {                     /* the instruments seen, in order of appearance */
        char name[DATA_CSV_SYMBOL_MAX];
        size_t rows;
    } sym[DATA_CSV_SYMBOLS];
    size_t n_sym, rows_more; /* names kept; rows of instruments past them */
};

/* Open path ("-": stdin) with opts (NULL: the defaults) and read up to its header, filling
 * rep->format (rep is borrowed until data_csv_ctx_fini). The caller has pinned LC_NUMERIC to
 * "C". 0, or the errors data_csv_load documents for a file that ends or fails before its
 * first row. c is fit for data_csv_ctx_fini whatever this returns. */
int data_csv_ctx_init(struct data_csv_ctx *c, const char *path, const struct data_csv_opts *opts,
                      struct data_csv_report *rep, char *err, size_t errlen);

/* The next row that gives a bar: 1 with *b and *sym (the instrument's index in c->sym when
 * c->continuous, else 0); 0 at the end of the file; or -EINVAL with err = "FILE:LINE: column:
 * reason" (a bad row without skip_bad_rows, a line too long, corrupt compressed data), -ENOMEM
 * or -errno naming the file. Rows skipped or of other instruments are counted in c->rep and
 * never returned. The caller has pinned LC_NUMERIC to "C". */
int data_csv_ctx_next(struct data_csv_ctx *c, struct data_bar *b, size_t *sym, char *err,
                      size_t errlen);

/* The next bar: data_csv_ctx_next's row, or (c->bar_s) the rows aggregated into bars of
 * c->bar_s seconds, each instrument's apart (stamped at the start of their interval: open the
 * first row's open, high and low the extremes, close the last row's close, volume the sum).
 * Returns as data_csv_ctx_next does; a bar is given once a row of a later interval (or the end)
 * is read. Counts the bars in c->rep. */
int data_csv_ctx_bar(struct data_csv_ctx *c, struct data_bar *b, size_t *sym, char *err,
                     size_t errlen);

/* Whether header name a is lower, case-insensitive. */
int data_csv_name_eq(const char *a, const char *lower);

/* ---- layouts (data_csv_layout.c) ---- */

/* The layout of a file without a header, from its first line (fields split on ';'): one of the
 * NinjaTrader layouts, with the columns mapped (c->col, c->ncols, c->sep); false when it is
 * none of them. */
bool data_csv_layout_headerless(struct data_csv_ctx *c, const char *line);

/* The layout a header row names (c->col mapped): Databento, TradingView or generic. */
enum data_csv_layout data_csv_layout_of_header(const struct data_csv_ctx *c);

/* The layout's name for the report ("NinjaTrader tick export"); for Databento rtype names the
 * schema ("ohlcv-1m"), or is NULL. */
void data_csv_layout_name(enum data_csv_layout l, const char *rtype, char *out, size_t n);

/* What the layout asks before any row is read, with what opts gave: 0, or -EINVAL with err (a
 * NinjaTrader file without --tz; daily bars). c->layout and its columns are set. */
int data_csv_layout_check(const struct data_csv_ctx *c, char *err, size_t errlen);

/* The checks the first data row makes for its layout (Databento's rtype: a daily schema is
 * refused; its prices: fixed point or not, when --price-scale does not say). 0 or -EINVAL with
 * err. */
int data_csv_layout_first_row(struct data_csv_ctx *c, char *err, size_t errlen);

/* Whether the layout's rows are ticks (one price, aggregated into bars). */
bool data_csv_layout_ticks(enum data_csv_layout l);

/* Seconds a bar of the layout is stamped after its start (NinjaTrader's minute bars: 60, their
 * end); ringside stamps bars with their start. */
int32_t data_csv_layout_end_stamp(enum data_csv_layout l);

/* After data_csv_ctx_next returned 0: the errors only the whole file decides (several
 * instruments and no --symbol; more instruments than DATA_CSV_SYMBOLS to roll). 0 or -EINVAL
 * with err. */
int data_csv_ctx_end(const struct data_csv_ctx *c, char *err, size_t errlen);

/* The error for a file whose rows gave no bar at all (no rows of --symbol, every row skipped,
 * or none): always -EINVAL with err. */
int data_csv_ctx_none(const struct data_csv_ctx *c, char *err, size_t errlen);

/* The file closed and the buffers freed; rep is not touched. */
void data_csv_ctx_fini(struct data_csv_ctx *c);

#endif
