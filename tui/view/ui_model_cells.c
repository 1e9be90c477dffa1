/* The timeline's cells: how long each phase ran in each cell of a window, from the kept phases
 * and, past their reach, the per-second totals; and the phase that stands for each cell. */
#include "tui/view/ui_model.h"

#include <string.h>

/* Time each phase spends in each cell, for the dominant-phase paint. */
static uint64_t ui_model_cell_ns[UI_PAINT_MAX_COLS][PHASE_COUNT];

/* A window of cols cells of cell ns each from t0. A phase's first cell is the cell index of
 * its start's offset d from t0, (int)(d / cell) in doubles; first_ns turns that division into
 * a walk along thresholds that give the very same index, and edge_ns holds where each cell
 * starts, (uint64_t)(x * cell) after t0, so every boundary is the one the division implies. */
struct ui_model_cells {
    uint64_t t0;
    double cell;
    int cols;
    uint64_t edge_ns[UI_PAINT_MAX_COLS + 1];  /* cell x covers [edge_ns[x], edge_ns[x + 1]) */
    uint64_t first_ns[UI_PAINT_MAX_COLS + 1]; /* least offset whose cell index is >= x */
};

static struct ui_model_cells ui_model_win;

static int ui_model_cell_index(double cell, uint64_t d) {
    return (int)((double)d / cell);
}

/* The least offset whose cell index is at least x: from the estimate x * cell, a step or two
 * either way (the index only grows with the offset). */
static uint64_t ui_model_first_ns(double cell, int x) {
    double est = (double)x * cell;
    uint64_t d = est > 0 ? (uint64_t)est : 0;
    while (d > 0 && ui_model_cell_index(cell, d - 1) >= x)
        d--;
    while (ui_model_cell_index(cell, d) < x)
        d++;
    return d;
}

static void ui_model_cells_init(struct ui_model_cells *c, uint64_t t0, uint64_t t1, int cols) {
    c->t0 = t0;
    c->cols = cols;
    c->cell = (double)(t1 - t0) / cols;
    for (int x = 0; x <= cols; x++) {
        c->edge_ns[x] = t0 + (uint64_t)(x * c->cell);
        c->first_ns[x] = x == 0 ? 0 : ui_model_first_ns(c->cell, x);
    }
}

/* The phase for each cell: the most time there, with what each phase was owed by the cells
 * before (see ui_model_paint); the phase a cell goes to pays the cell's time back. */
static void ui_model_pick(int cols, bool sync, enum ev_phase_id *out) {
    double owed[PHASE_COUNT] = {0};
    for (int x = 0; x < cols; x++) {
        out[x] = PHASE_COUNT;
        double best = 0, busy = 0;
        for (int ph = 0; ph < PHASE_COUNT; ph++) {
            uint64_t ns = ui_model_cell_ns[x][ph];
            if (!ns || (ph == PHASE_SYNC) != sync)
                continue;
            busy += (double)ns;
            owed[ph] += (double)ns;
            if (out[x] == PHASE_COUNT || owed[ph] > best) {
                out[x] = (enum ev_phase_id)ph;
                best = owed[ph];
            }
        }
        if (out[x] != PHASE_COUNT)
            owed[out[x]] -= busy;
    }
}

/* Per-second totals into the first cols cells: each second lands in the cells it overlaps. */
static void ui_model_fill_coarse(const struct ui_model *m, unsigned dev,
                                 const struct ui_model_cells *c, int cols) {
    if (dev >= UI_COARSE_DEVS)
        return;
    for (int x = 0; x < cols; x++) {
        uint64_t c0 = c->edge_ns[x], c1 = c->edge_ns[x + 1];
        for (uint64_t sec = c0 / 1000000000ull; sec * 1000000000ull < c1; sec++) {
            size_t slot = (size_t)(sec % UI_COARSE);
            if (m->coarse_sec[dev][slot] != sec)
                continue;
            /* the share of the second that lies in this cell: phases are spread evenly over it */
            uint64_t s0 = sec * 1000000000ull, s1 = s0 + 1000000000ull;
            double part = (double)((c1 < s1 ? c1 : s1) - (c0 > s0 ? c0 : s0)) / 1e9;
            for (int ph = 0; ph < PHASE_COUNT; ph++) {
                uint64_t us = m->coarse_us[dev][slot][ph];
                if (us)
                    ui_model_cell_ns[x][ph] += (uint64_t)((double)us * 1000.0 * part) + 1;
            }
        }
    }
}

/* The kept phases phases[lo, hi) of dev, newest (highest index) first; *x is the cell the
 * last one started in, where the next one, a little older, most likely starts too. */
static void ui_model_fill_range(const struct ui_model *m, size_t lo, size_t hi, unsigned dev,
                                uint64_t t1, const struct ui_model_cells *c, int *hint) {
    const uint64_t t0 = c->t0;
    const int cols = c->cols;
    int x = *hint;
    for (size_t i = hi; i-- > lo;) {
        const struct ui_phase *p = &m->phases[i];
        if (p->dev != dev || p->end_ns < t0 || p->start_ns >= t1 || p->phase >= PHASE_COUNT)
            continue;
        uint64_t a = p->start_ns > t0 ? p->start_ns : t0, b = p->end_ns < t1 ? p->end_ns : t1;
        uint64_t d = a - t0, span = p->end_ns - p->start_ns;
        /* a window of steps summed: its time spread evenly over its span */
        double share = p->busy_ns < span ? (double)p->busy_ns / (double)span : 1.0;
        while (x > 0 && c->first_ns[x] > d)
            x--;
        while (x < cols && c->first_ns[x + 1] <= d)
            x++;
        for (int k = x; k < cols; k++) {
            uint64_t c0 = c->edge_ns[k], c1 = c->edge_ns[k + 1];
            if (c0 > b || (c0 == b && b > a)) /* a phase ending at a cell's start is not in it */
                break;
            uint64_t lo_ns = a > c0 ? a : c0, hi_ns = b < c1 ? b : c1;
            uint64_t in = hi_ns > lo_ns ? hi_ns - lo_ns : 0;
            if (share < 1.0)
                in = (uint64_t)((double)in * share);
            ui_model_cell_ns[k][p->phase] += in ? in : 1; /* instants count */
            if (c1 > b || (c1 == b && b > a))             /* the next cell's test, done here */
                break;
        }
    }
    *hint = x;
}

/* Block k of kept phases in one step, when it can be: true when it holds nothing of dev in
 * the window, or when every phase of it is dev's and starts and ends inside one cell (its
 * first cell by the same thresholds, and before the next cell's start, so each would add its
 * whole time to that cell alone); false leaves the block to ui_model_fill_range. */
static bool ui_model_fill_block(const struct ui_model *m, size_t k, unsigned dev, uint64_t t1,
                                const struct ui_model_cells *c, int *x) {
    const struct ui_phase_block *b = &m->phase_blocks[k];
    if (b->backwards || b->mixed)
        return false;
    if (b->n == 0 || b->dev != dev || b->max_end_ns < c->t0 || b->min_start_ns >= t1)
        return true;
    if (b->min_start_ns < c->t0 || b->max_end_ns > t1 || b->max_start_ns >= t1)
        return false; /* clipped by the window's edges */
    uint64_t d0 = b->min_start_ns - c->t0, d1 = b->max_start_ns - c->t0;
    while (*x > 0 && c->first_ns[*x] > d0)
        (*x)--;
    while (*x < c->cols && c->first_ns[*x + 1] <= d0)
        (*x)++;
    if (*x >= c->cols || d1 >= c->first_ns[*x + 1] || b->min_start_ns < c->edge_ns[*x] ||
        b->max_end_ns >= c->edge_ns[*x + 1])
        return false;
    for (int ph = 0; ph < PHASE_COUNT; ph++)
        ui_model_cell_ns[*x][ph] += b->phase_ns[ph];
    return true;
}

/* The kept phases phases[lo, hi), newest first, a whole block at a time where its sums do
 * (never block busy, the one being written, whose sums are not of all its slots). */
static void ui_model_fill_span(const struct ui_model *m, size_t lo, size_t hi, size_t busy,
                               unsigned dev, uint64_t t1, const struct ui_model_cells *c, int *x) {
    while (hi > lo) {
        size_t k = (hi - 1) / UI_PHASE_BLOCK, from = k * UI_PHASE_BLOCK;
        from = from > lo ? from : lo;
        bool whole = from == k * UI_PHASE_BLOCK && hi == from + UI_PHASE_BLOCK && k != busy;
        if (!whole || !ui_model_fill_block(m, k, dev, t1, c, x))
            ui_model_fill_range(m, from, hi, dev, t1, c, x);
        hi = from;
    }
}

/* Every kept phase of dev in the window, newest first: the ring's two runs, without a modulo
 * per phase (the sums do not depend on the order). */
static void ui_model_fill_fine(const struct ui_model *m, unsigned dev, uint64_t t1,
                               const struct ui_model_cells *c) {
    int x = c->cols;
    size_t head = m->phase_head % UI_PHASES, n = m->phase_count, busy = head / UI_PHASE_BLOCK;
    size_t newer = n < head ? n : head; /* phases[head - newer, head) */
    ui_model_fill_span(m, head - newer, head, busy, dev, t1, c, &x);
    if (n > newer) /* the older run, wrapped round: phases[UI_PHASES - (n - newer), UI_PHASES) */
        ui_model_fill_span(m, UI_PHASES - (n - newer), UI_PHASES, busy, dev, t1, c, &x);
}

#define UI_LIVE_SCAN 1024 /* newest kept phases looked through for the live phase's event */

uint64_t ui_model_live_from(const struct ui_model *m, unsigned dev, const struct ui_live *live) {
    if (!live || live->phase >= PHASE_COUNT || live->phase == PHASE_SYNC)
        return UINT64_MAX;
    uint64_t from = live->phase_start_ns;
    size_t n = m->phase_count < UI_LIVE_SCAN ? m->phase_count : UI_LIVE_SCAN;
    for (size_t k = 1; k <= n; k++) {
        const struct ui_phase *p = &m->phases[(m->phase_head + UI_PHASES - k) % UI_PHASES];
        if (p->dev == dev && p->phase == live->phase && p->end_ns > from)
            from = p->end_ns;
    }
    return from;
}

/* [a, b) of phase ph, clipped to the window, into the cells it overlaps. */
static void ui_model_fill_open(const struct ui_model_cells *c, unsigned ph, uint64_t a,
                               uint64_t b) {
    a = a > c->t0 ? a : c->t0;
    b = b < c->edge_ns[c->cols] ? b : c->edge_ns[c->cols];
    if (b <= a)
        return;
    int x = ui_model_cell_index(c->cell, a - c->t0);
    x = x < c->cols ? x : c->cols - 1;
    while (x > 0 && c->edge_ns[x] > a)
        x--;
    while (x + 1 < c->cols && c->edge_ns[x + 1] <= a)
        x++;
    for (; x < c->cols && c->edge_ns[x] < b; x++) {
        uint64_t lo = a > c->edge_ns[x] ? a : c->edge_ns[x];
        uint64_t hi = b < c->edge_ns[x + 1] ? b : c->edge_ns[x + 1];
        if (hi > lo)
            ui_model_cell_ns[x][ph] += hi - lo;
    }
}

const uint64_t (*ui_model_cell_times(const struct ui_model *m, unsigned dev,
                                     const struct ui_live *live, uint64_t t0, uint64_t t1,
                                     int cols))[PHASE_COUNT] {
    cols = cols > UI_PAINT_MAX_COLS ? UI_PAINT_MAX_COLS : cols;
    if (cols <= 0 || t1 <= t0)
        return ui_model_cell_ns;
    memset(ui_model_cell_ns, 0, sizeof(ui_model_cell_ns[0]) * (size_t)cols);
    struct ui_model_cells *c = &ui_model_win;
    if (c->t0 != t0 || c->cols != cols || c->cell != (double)(t1 - t0) / cols)
        ui_model_cells_init(c, t0, t1, cols);
    /* the ring where it reaches, the per-second totals for cells wholly older than it */
    const struct ui_phase *oldest = &m->phases[m->phase_head % UI_PHASES];
    uint64_t fine_from = m->phase_count < UI_PHASES ? 0 : oldest->start_ns;
    ui_model_fill_fine(m, dev, t1, c);
    int old_cols = fine_from > t0 ? (int)((double)(fine_from - t0) / c->cell) : 0;
    ui_model_fill_coarse(m, dev, c, old_cols < cols ? old_cols : cols);
    uint64_t from = ui_model_live_from(m, dev, live);
    if (from != UINT64_MAX)
        ui_model_fill_open(c, live->phase, from, t1);
    if (live && live->has_sync)
        ui_model_fill_open(c, PHASE_SYNC, live->sync_start_ns, t1);
    return ui_model_cell_ns;
}

void ui_model_paint(const struct ui_model *m, unsigned dev, bool sync, const struct ui_live *live,
                    uint64_t t0, uint64_t t1, int cols, enum ev_phase_id *out) {
    cols = cols > UI_PAINT_MAX_COLS ? UI_PAINT_MAX_COLS : cols;
    for (int x = 0; x < cols; x++)
        out[x] = PHASE_COUNT;
    if (cols <= 0 || t1 <= t0)
        return;
    ui_model_cell_times(m, dev, live, t0, t1, cols);
    ui_model_pick(cols, sync, out);
}
