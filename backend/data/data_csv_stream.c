/* A CSV file read session by session (data_csv_open / data_csv_next_session), and the whole-file
 * load built on it: one row reader (data_csv.c) under both. */
#include "backend/core/errbuf.h"
#include "backend/data/data_csv.h"
#include "backend/data/data_csv_internal.h"

#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct data_csv {
    struct data_csv_ctx c;
    struct data_csv_report spare; /* the report when the caller wants none */
    locale_t cloc;                /* LC_NUMERIC "C", pinned around every call */
    int start_hour;
    struct data_bar next; /* the first bar of the session after the one last returned */
    bool have_next;
    bool at_end;   /* the rows are read and the end checks passed */
    size_t n_bars; /* bars returned so far */
    /* --continuous front: the whole file read at the first call, then rolled */
    bool rolled;
    struct data_series front; /* the front-month series, handed out from front_at */
    size_t front_at;
};

/* ---- --continuous front ---- */

/* The UTC day (days since 1970-01-01) of t. */
static int64_t data_csv_day(int64_t t) {
    return data_floor_div(t, 86400);
}

/* Record the roll from contract `from` to `to` after day. */
static void data_csv_roll_note(const struct data_csv_ctx *c, int from, int to, int64_t day,
                               const double *vol) {
    struct data_csv_report *rep = c->rep;
    if (rep->n_rolls < DATA_CSV_ROLLS) {
        struct data_csv_roll *r = &rep->roll[rep->n_rolls];
        snprintf(r->from, sizeof(r->from), "%s", c->sym[from].name);
        snprintf(r->to, sizeof(r->to), "%s", c->sym[to].name);
        r->day_s = day * 86400;
        r->from_volume = vol[from];
        r->to_volume = vol[to];
    }
    rep->n_rolls++;
}

/* The front-month series from every instrument's bars (per[]): each day's bars are the active
 * contract's; the day after another contract, not active before, traded more than it, that one
 * becomes active (volume leaves a contract for the next one and does not come back). */
static int data_csv_roll(const struct data_csv_ctx *c, const struct data_series *per,
                         struct data_series *ds, char *err, size_t errlen) {
    size_t n = c->n_sym < DATA_CSV_SYMBOLS ? c->n_sym : DATA_CSV_SYMBOLS;
    size_t at[DATA_CSV_SYMBOLS] = {0}, end[DATA_CSV_SYMBOLS];
    bool used[DATA_CSV_SYMBOLS] = {false};
    int active = -1;
    for (;;) {
        int64_t day = INT64_MAX;
        for (size_t k = 0; k < n; k++)
            if (at[k] < per[k].n) {
                int64_t d = data_csv_day(per[k].bars[at[k]].t_s);
                day = d < day ? d : day;
            }
        if (day == INT64_MAX)
            return 0;
        double vol[DATA_CSV_SYMBOLS] = {0};
        for (size_t k = 0; k < n; k++) {
            for (end[k] = at[k]; end[k] < per[k].n && data_csv_day(per[k].bars[end[k]].t_s) == day;
                 end[k]++)
                vol[k] += per[k].bars[end[k]].volume;
        }
        if (active < 0) { /* the first day: the contract that traded most */
            active = 0;
            for (size_t k = 1; k < n; k++)
                active = vol[k] > vol[active] ? (int)k : active;
            used[active] = true;
        }
        for (size_t i = at[active]; i < end[active]; i++)
            if (data_series_push(ds, &per[active].bars[i]) != 0)
                return errbuf_set(err, errlen, -ENOMEM, "%s: out of memory", c->name);
        int next = -1;
        for (size_t k = 0; k < n; k++)
            if (!used[k] && vol[k] > vol[active] && (next < 0 || vol[k] > vol[next]))
                next = (int)k;
        if (next >= 0) {
            data_csv_roll_note(c, active, next, day, vol);
            active = next;
            used[next] = true;
        }
        for (size_t k = 0; k < n; k++)
            at[k] = end[k];
    }
}

/* Every row of the file, each instrument's bars apart, then the front month rolled from them
 * into r->front: the roll compares every contract's volume day by day, so it needs them all. */
static int data_csv_read_front(struct data_csv *r, char *err, size_t errlen) {
    struct data_series per[DATA_CSV_SYMBOLS];
    for (size_t k = 0; k < DATA_CSV_SYMBOLS; k++)
        data_series_init(&per[k]);
    struct data_bar b;
    size_t k = 0;
    int rc;
    while ((rc = data_csv_ctx_bar(&r->c, &b, &k, err, errlen)) == 1)
        if (data_series_push(&per[k], &b) != 0) {
            rc = errbuf_set(err, errlen, -ENOMEM, "%s: out of memory", r->c.name);
            break;
        }
    if (rc == 0)
        rc = data_csv_ctx_end(&r->c, err, errlen);
    if (rc == 0)
        rc = data_csv_roll(&r->c, per, &r->front, err, errlen);
    for (k = 0; k < DATA_CSV_SYMBOLS; k++)
        data_series_fini(&per[k]);
    r->rolled = true;
    return rc;
}

/* ---- sessions ---- */

/* The next bar in file order (rolled: in the front month's order): 1 with *b, 0 at the end,
 * <0 error. */
static int data_csv_pull(struct data_csv *r, struct data_bar *b, char *err, size_t errlen) {
    size_t sym;
    if (!r->c.continuous)
        return data_csv_ctx_bar(&r->c, b, &sym, err, errlen);
    if (!r->rolled) {
        int rc = data_csv_read_front(r, err, errlen);
        if (rc != 0)
            return rc;
    }
    if (r->front_at == r->front.n)
        return 0;
    *b = r->front.bars[r->front_at++];
    return 1;
}

/* The rest of the session that ds->bars[n0] opened, into ds; its successor's first bar is kept
 * in r->next. 0 (r->at_end set when the rows ran out and the end checks passed) or <0. */
static int data_csv_fill(struct data_csv *r, struct data_series *ds, size_t n0, char *err,
                         size_t errlen) {
    int64_t day = data_session_day(ds->bars[n0].t_s, r->start_hour);
    struct data_bar b;
    int rc;
    while ((rc = data_csv_pull(r, &b, err, errlen)) == 1) {
        if (data_session_day(b.t_s, r->start_hour) != day) {
            r->next = b;
            r->have_next = true;
            return 0;
        }
        if (data_series_push(ds, &b) != 0)
            return errbuf_set(err, errlen, -ENOMEM, "%s: out of memory", r->c.name);
    }
    if (rc == 0 && (rc = data_csv_ctx_end(&r->c, err, errlen)) == 0)
        r->at_end = true;
    return rc;
}

/* The first bar of the next session: the one kept, else the next pulled. 1 with *b, 0 at the
 * end (the end checks passed), <0. */
static int data_csv_first(struct data_csv *r, struct data_bar *b, char *err, size_t errlen) {
    if (r->have_next) {
        *b = r->next;
        r->have_next = false;
        return 1;
    }
    if (r->at_end)
        return 0;
    int rc = data_csv_pull(r, b, err, errlen);
    if (rc == 0 && (rc = data_csv_ctx_end(&r->c, err, errlen)) == 0)
        r->at_end = true;
    return rc;
}

/* One session appended to ds: 1, 0 (no more), or <0 (a file that gave no bar at all is one). */
static int data_csv_session(struct data_csv *r, struct data_series *ds, char *err, size_t errlen) {
    size_t n0 = ds->n;
    struct data_bar b;
    int rc = data_csv_first(r, &b, err, errlen);
    if (rc == 0 && r->n_bars == 0)
        return data_csv_ctx_none(&r->c, err, errlen);
    if (rc != 1)
        return rc;
    if (data_series_push(ds, &b) != 0)
        return errbuf_set(err, errlen, -ENOMEM, "%s: out of memory", r->c.name);
    rc = data_csv_fill(r, ds, n0, err, errlen);
    return rc == 0 ? 1 : rc;
}

int data_csv_next_session(struct data_csv *r, struct data_series *ds, struct data_session *s,
                          char *err, size_t errlen) {
    size_t n0 = ds->n;
    locale_t old = uselocale(r->cloc);
    int rc = data_csv_session(r, ds, err, errlen);
    uselocale(old);
    if (rc != 1) {
        ds->n = n0;
        return rc;
    }
    s->first = n0;
    s->n = ds->n - n0;
    data_session_label(ds->bars[n0].t_s, r->start_hour, s->label);
    r->n_bars += s->n;
    return 1;
}

/* ---- open, close, load ---- */

int data_csv_open(const char *path, const struct data_csv_opts *opts, int start_hour,
                  struct data_csv_report *rep, struct data_csv **out, char *err, size_t errlen) {
    *out = NULL;
    if (rep)
        memset(rep, 0, sizeof(*rep));
    const char *want = opts && opts->symbol && opts->symbol[0] ? opts->symbol : NULL;
    if (opts && opts->continuous && want)
        return errbuf_set(err, errlen, -EINVAL,
                          "--symbol %s and --continuous front: give one (an instrument, or the "
                          "front month rolled)",
                          want);
    struct data_csv *r = calloc(1, sizeof(*r));
    const char *name = strcmp(path, "-") == 0 ? "<stdin>" : path;
    if (!r)
        return errbuf_set(err, errlen, -ENOMEM, "%s: out of memory", name);
    r->start_hour = start_hour;
    data_series_init(&r->front);
    r->cloc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (r->cloc == (locale_t)0) {
        free(r);
        return errbuf_set(err, errlen, -ENOMEM, "%s: cannot create the C locale", name);
    }
    locale_t old = uselocale(r->cloc);
    int rc = data_csv_ctx_init(&r->c, path, opts, rep ? rep : &r->spare, err, errlen);
    uselocale(old);
    if (rc != 0) {
        data_csv_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

bool data_csv_has_vix(const struct data_csv *r) {
    return r->c.col[DATA_CSV_VIX] >= 0;
}

void data_csv_close(struct data_csv *r) {
    if (!r)
        return;
    data_csv_ctx_fini(&r->c);
    data_series_fini(&r->front);
    freelocale(r->cloc);
    free(r);
}

int data_csv_load(const char *path, const struct data_csv_opts *opts, struct data_series *ds,
                  struct data_csv_report *rep, char *err, size_t errlen) {
    struct data_csv *r;
    int rc = data_csv_open(path, opts, 0, rep, &r, err, errlen);
    if (rc != 0)
        return rc;
    size_t n0 = ds->n;
    if (n0 > 0) { /* appended bars come after the ones there */
        r->c.last_t = ds->bars[n0 - 1].t_s;
        r->c.have_last = 1;
    }
    struct data_session s;
    while ((rc = data_csv_next_session(r, ds, &s, err, errlen)) == 1)
        ;
    if (rc == 0)
        ds->has_vix = data_csv_has_vix(r) && (n0 == 0 || ds->has_vix);
    else
        ds->n = n0;
    data_csv_close(r);
    return rc;
}
