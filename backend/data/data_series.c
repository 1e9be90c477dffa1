/* Bar storage, civil time (dates), session splitting and the fingerprint. */
#include "backend/data/data_series.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA_SERIES_DAY_S     86400
#define DATA_SERIES_FNV_BASIS 0xcbf29ce484222325ull
#define DATA_SERIES_FNV_PRIME 0x100000001b3ull

void data_series_init(struct data_series *ds) {
    memset(ds, 0, sizeof(*ds));
}

void data_series_fini(struct data_series *ds) {
    free(ds->bars);
    memset(ds, 0, sizeof(*ds));
}

int data_series_push(struct data_series *ds, const struct data_bar *b) {
    if (ds->n == ds->cap) {
        size_t cap = ds->cap ? ds->cap * 2 : 1024;
        if (cap > SIZE_MAX / sizeof(*ds->bars))
            return -ENOMEM;
        struct data_bar *nb = realloc(ds->bars, cap * sizeof(*nb));
        if (!nb)
            return -ENOMEM;
        ds->bars = nb;
        ds->cap = cap;
    }
    ds->bars[ds->n++] = *b;
    return 0;
}

/* Howard Hinnant's days_from_civil: exact for the whole proleptic Gregorian calendar. */
int64_t data_days_from_civil(int y, int m, int d) {
    int64_t yy = (int64_t)y - (m <= 2);
    int64_t era = (yy >= 0 ? yy : yy - 399) / 400;
    int64_t yoe = yy - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void data_civil_from_days(int64_t days, int *y, int *m, int *d) {
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

int data_days_in_month(int y, int m) {
    static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return dim[m - 1] + (m == 2 && leap);
}

int64_t data_floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int data_series_clamp_year(int y) {
    return y < 0 ? 0 : y > 9999 ? 9999 : y;
}

void data_format_time(int64_t t_s, char out[20]) {
    int64_t day = data_floor_div(t_s, DATA_SERIES_DAY_S);
    int64_t sec = t_s - day * DATA_SERIES_DAY_S;
    int y, m, d;
    data_civil_from_days(day, &y, &m, &d);
    char tmp[64];
    snprintf(tmp, sizeof(tmp), "%04d-%02d-%02d %02d:%02d:%02d", data_series_clamp_year(y), m, d,
             (int)(sec / 3600), (int)(sec / 60 % 60), (int)(sec % 60));
    memcpy(out, tmp, 19);
    out[19] = '\0';
}

/* Shifting t forward by (24 - H) hours maps [D-1 H:00, D H:00) onto calendar day D; H = 0 is no
 * shift, so that case means plain calendar days. */
static int64_t data_series_shift_s(int start_hour) {
    return start_hour > 0 ? (int64_t)(24 - start_hour) * 3600 : 0;
}

int64_t data_session_day(int64_t t_s, int start_hour) {
    return data_floor_div(t_s + data_series_shift_s(start_hour), DATA_SERIES_DAY_S);
}

int64_t data_session_start(int64_t day, int start_hour) {
    return day * DATA_SERIES_DAY_S - data_series_shift_s(start_hour);
}

void data_session_label(int64_t t_s, int start_hour, char out[11]) {
    int y, m, d;
    data_civil_from_days(data_session_day(t_s, start_hour), &y, &m, &d);
    char tmp[32];
    snprintf(tmp, sizeof(tmp), "%04d-%02d-%02d", data_series_clamp_year(y), m, d);
    memcpy(out, tmp, 10);
    out[10] = '\0';
}

static int data_sessions_push(struct data_sessions *out, size_t *cap, size_t first, int64_t t_s,
                              int start_hour) {
    if (out->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 64;
        struct data_session *ns = realloc(out->s, ncap * sizeof(*ns));
        if (!ns)
            return -ENOMEM;
        out->s = ns;
        *cap = ncap;
    }
    struct data_session *s = &out->s[out->n++];
    s->first = first;
    s->n = 0;
    data_session_label(t_s, start_hour, s->label);
    return 0;
}

int data_sessions_split(const struct data_series *ds, int start_hour, struct data_sessions *out) {
    size_t cap = 0;
    out->s = NULL;
    out->n = 0;
    int64_t cur = 0;
    for (size_t i = 0; i < ds->n; i++) {
        int64_t day = data_session_day(ds->bars[i].t_s, start_hour);
        if (out->n == 0 || day != cur) {
            if (data_sessions_push(out, &cap, i, ds->bars[i].t_s, start_hour) != 0) {
                data_sessions_fini(out);
                return -ENOMEM;
            }
            cur = day;
        }
        out->s[out->n - 1].n++;
    }
    return 0;
}

void data_sessions_fini(struct data_sessions *ss) {
    free(ss->s);
    ss->s = NULL;
    ss->n = 0;
}

/* Little-endian bytes so the fingerprint is the same on every machine. */
static uint64_t data_series_fnv_u64(uint64_t h, uint64_t v) {
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xffu;
        h *= DATA_SERIES_FNV_PRIME;
    }
    return h;
}

/* Every NaN hashes as the canonical quiet NaN, so "no VIX" is one value whatever made it. */
static uint64_t data_series_fnv_f64(uint64_t h, double x) {
    uint64_t v = 0x7ff8000000000000ull;
    if (!isnan(x))
        memcpy(&v, &x, sizeof(v));
    return data_series_fnv_u64(h, v);
}

uint64_t data_series_fingerprint(const struct data_series *ds) {
    uint64_t h = DATA_SERIES_FNV_BASIS;
    for (size_t i = 0; i < ds->n; i++) {
        const struct data_bar *b = &ds->bars[i];
        h = data_series_fnv_u64(h, (uint64_t)b->t_s);
        h = data_series_fnv_f64(h, b->open);
        h = data_series_fnv_f64(h, b->high);
        h = data_series_fnv_f64(h, b->low);
        h = data_series_fnv_f64(h, b->close);
        h = data_series_fnv_f64(h, b->volume);
        h = data_series_fnv_f64(h, b->vix);
    }
    return h;
}
