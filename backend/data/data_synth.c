/* Deterministic ES-like one-minute bars: mean reversion around a drifting fair value, U-shaped
 * volume and an anti-correlated VIX, from a seeded xoshiro256** stream. */
#include "backend/data/data_synth.h"

#include "backend/core/rng.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>

/* a*b+c must round twice everywhere, or the bars would differ between compilers and CPUs
 * (gcc in ISO C mode already contracts nothing). */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#define DATA_SYNTH_BARS      1380 /* 23 hours of one-minute bars per session */
#define DATA_SYNTH_MAX_DAYS  1000000
#define DATA_SYNTH_START     4700.0
#define DATA_SYNTH_PRICE_LO  1000.0
#define DATA_SYNTH_PRICE_HI  20000.0
#define DATA_SYNTH_FAIR_STEP 4.0                  /* points per session */
#define DATA_SYNTH_SIGMA     1.0                  /* points per minute */
#define DATA_SYNTH_WICK      0.5                  /* points of |noise| beyond open/close */
#define DATA_SYNTH_KAPPA     0.034657359027997264 /* ln 2 / 20: 20-minute half-life */
#define DATA_SYNTH_VIX_BETA  0.02                 /* VIX points per ES point of return, negated */
#define DATA_SYNTH_VIX_MEAN  16.0
#define DATA_SYNTH_VIX_NOISE 0.02   /* per minute */
#define DATA_SYNTH_VIX_PULL  0.0003 /* per-minute reversion to the mean: ~2.5-session half-life */
#define DATA_SYNTH_CASH_OPEN 930    /* session minute of the cash open (15.5 h in) */
#define DATA_SYNTH_CASH_END  1320   /* session minute of the cash close (22 h in) */

struct data_synth_state {
    uint64_t s[4]; /* xoshiro256** */
    bool have_spare;
    double spare;    /* second Box-Muller normal */
    double tick;     /* points */
    int64_t c_ticks; /* last close */
    int64_t lo_ticks, hi_ticks;
    double fair; /* F, points */
    double vix;  /* unrounded VIX state */
};

static uint64_t data_synth_rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

static uint64_t data_synth_next(struct data_synth_state *st) {
    uint64_t *s = st->s;
    uint64_t out = data_synth_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = data_synth_rotl(s[3], 45);
    return out;
}

/* Uniform in (0, 1]: never 0, so log() below is finite. */
static double data_synth_unit(struct data_synth_state *st) {
    return (double)((data_synth_next(st) >> 11) + 1) * 0x1p-53;
}

static double data_synth_normal(struct data_synth_state *st) {
    if (st->have_spare) {
        st->have_spare = false;
        return st->spare;
    }
    double r = sqrt(-2.0 * log(data_synth_unit(st)));
    double a = 6.283185307179586 * data_synth_unit(st);
    st->spare = r * sin(a);
    st->have_spare = true;
    return r * cos(a);
}

/* Intraday volume shape by session minute: a burst at the session open, a quiet night, then a U
 * over the cash hours (heavy at the cash open and close). */
static double data_synth_volume_curve(int m) {
    double v = 400.0 + 2500.0 * exp(-m / 30.0);
    if (m >= DATA_SYNTH_CASH_OPEN && m < DATA_SYNTH_CASH_END) {
        double mid = (DATA_SYNTH_CASH_OPEN + DATA_SYNTH_CASH_END) / 2.0;
        double u = (m - mid) / (DATA_SYNTH_CASH_END - mid);
        v += 1500.0 + 6000.0 * u * u;
    } else if (m >= DATA_SYNTH_CASH_END) {
        v += 400.0;
    }
    return v;
}

static int64_t data_synth_clamp(int64_t x, int64_t lo, int64_t hi) {
    return x < lo ? lo : x > hi ? hi : x;
}

static double data_synth_clampf(double x, double lo, double hi) {
    return x < lo ? lo : x > hi ? hi : x;
}

static struct data_bar data_synth_bar(struct data_synth_state *st, int64_t t_s, int m) {
    double tick = st->tick, c = (double)st->c_ticks * tick;
    double x = c + DATA_SYNTH_KAPPA * (st->fair - c) + DATA_SYNTH_SIGMA * data_synth_normal(st);
    int64_t o = st->c_ticks;
    int64_t nc = data_synth_clamp(llround(x / tick), st->lo_ticks, st->hi_ticks);
    int64_t hi = (o > nc ? o : nc) + llround(fabs(data_synth_normal(st)) * DATA_SYNTH_WICK / tick);
    int64_t lo = (o < nc ? o : nc) - llround(fabs(data_synth_normal(st)) * DATA_SYNTH_WICK / tick);
    hi = data_synth_clamp(hi, st->lo_ticks, st->hi_ticks); /* o and nc are inside already */
    lo = data_synth_clamp(lo, st->lo_ticks, st->hi_ticks);
    double d = ((double)nc * tick - st->fair) / 4.0;
    double vol =
        data_synth_volume_curve(m) * exp(0.35 * data_synth_normal(st)) * (1.0 + 1.5 * exp(-d * d));
    st->vix += -DATA_SYNTH_VIX_BETA * (double)(nc - o) * tick +
               DATA_SYNTH_VIX_PULL * (DATA_SYNTH_VIX_MEAN - st->vix) +
               DATA_SYNTH_VIX_NOISE * data_synth_normal(st);
    st->vix = data_synth_clampf(st->vix, 9.0, 80.0);
    st->c_ticks = nc;
    return (struct data_bar){
        .t_s = t_s,
        .open = (double)o * tick,
        .high = (double)hi * tick,
        .low = (double)lo * tick,
        .close = (double)nc * tick,
        .volume = fmax(1.0, (double)llround(vol)),
        .vix = round(st->vix * 100.0) / 100.0,
    };
}

/* One trading day: move the fair value, then 1380 bars from the session start. */
static int data_synth_session(struct data_synth_state *st, int64_t day, int start_hour,
                              struct data_series *ds) {
    double f = st->fair + DATA_SYNTH_FAIR_STEP * data_synth_normal(st);
    double lo = DATA_SYNTH_PRICE_LO + 500.0, hi = DATA_SYNTH_PRICE_HI - 500.0;
    st->fair = f < lo ? 2 * lo - f : f > hi ? 2 * hi - f : f; /* reflect off the edges */
    int64_t t0 = data_session_start(day, start_hour);
    for (int m = 0; m < DATA_SYNTH_BARS; m++) {
        struct data_bar b = data_synth_bar(st, t0 + 60 * (int64_t)m, m);
        if (data_series_push(ds, &b) != 0)
            return -ENOMEM;
    }
    return 0;
}

static void data_synth_seed(struct data_synth_state *st, const struct data_synth_opts *o) {
    uint64_t x = o->seed;
    for (int i = 0; i < 4; i++)
        st->s[i] = rng_splitmix64(&x);
    st->have_spare = false;
    st->tick = o->tick;
    st->lo_ticks = (int64_t)ceil(DATA_SYNTH_PRICE_LO / o->tick);
    st->hi_ticks = (int64_t)floor(DATA_SYNTH_PRICE_HI / o->tick);
    st->c_ticks = data_synth_clamp(llround(DATA_SYNTH_START / o->tick), st->lo_ticks, st->hi_ticks);
    st->fair = DATA_SYNTH_START;
    st->vix = 15.0;
}

int data_synth_generate(const struct data_synth_opts *o, struct data_series *ds) {
    if (o->days < 1 || o->days > DATA_SYNTH_MAX_DAYS || !(o->tick >= 1e-6 && o->tick <= 100.0) ||
        o->start_hour < 0 || o->start_hour > 23)
        return -EINVAL;
    struct data_synth_state st;
    data_synth_seed(&st, o);
    size_t n0 = ds->n;
    int64_t day = data_days_from_civil(2024, 1, 2);
    for (int k = 0; k < o->days; k++, day++) {
        while ((day + 4) % 7 == 0 || (day + 4) % 7 == 6) /* 1970-01-01 was a Thursday */
            day++;
        if (data_synth_session(&st, day, o->start_hour, ds) != 0) {
            ds->n = n0;
            return -ENOMEM;
        }
    }
    if (n0 == 0)
        ds->has_vix = true;
    return 0;
}
