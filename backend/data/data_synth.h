/* Deterministic synthetic ES-like one-minute bars with an anti-correlated VIX series. */
#ifndef RINGSIDE_BACKEND_DATA_DATA_SYNTH_H
#define RINGSIDE_BACKEND_DATA_DATA_SYNTH_H

#include "backend/data/data_series.h"

#include <stdint.h>

struct data_synth_opts {
    int days;       /* trading sessions to generate, >= 1 */
    uint64_t seed;  /* same seed, same bars, on every machine */
    int start_hour; /* session start hour (UTC), as data_sessions_split */
    double tick;    /* price increment, default 0.25 */
};

/* Append days x 1380 bars (23-hour sessions, weekends skipped), starting with the session of
 * 2024-01-02. Prices are multiples of tick in the ES range, volumes are integers following a
 * U-shaped intraday curve; price mean-reverts around a slowly drifting fair value (where volume
 * concentrates), so the distance to the prior session's POC carries signal for the model. 0 or
 * -ENOMEM / -EINVAL. */
int data_synth_generate(const struct data_synth_opts *o, struct data_series *ds);

#endif
