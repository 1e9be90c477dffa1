/* The dashboard's memory of recent events, and its formatting helpers. */
#include "tui/view/ui_model.h"

#include "tui/view/ui_devices.h"
#include "tui/view/ui_model_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *ui_category_name(unsigned c) {
    static const char *const names[] = {
#define X(id, name) name,
        UI_CATEGORIES(X)
#undef X
    };
    return c < UI_CAT_COUNT ? names[c] : "?";
}

void ui_model_init_zeroed(struct ui_model *m) {
    m->series_dev = EV_DEV_NONE;
}

void ui_model_init(struct ui_model *m) {
    memset(m, 0, sizeof(*m));
    ui_model_init_zeroed(m);
}

void ui_model_series_dev(struct ui_model *m, unsigned dev) {
    m->series_dev = dev >= EV_DEV_NONE ? EV_DEV_NONE : (uint16_t)dev;
}

/* "dev 1 " or, for a watched job, "rank 1 " (its name when it is no rank). */
static void ui_model_dev_name(const struct run_info *run, uint16_t dev, char *buf, size_t n) {
    buf[0] = '\0';
    if (dev == EV_DEV_NONE)
        return;
    for (unsigned k = 0; run && k < run->n_devices && k < RUN_MAX_DEVICES; k++)
        if (run->devices[k] == dev && run->ranks[k].valid) {
            int l = ui_devices_name(run, k, false, buf, n);
            if (l > 0 && (size_t)l + 1 < n)
                snprintf(buf + l, n - (size_t)l, " ");
            return;
        }
    snprintf(buf, n, "dev %u ", dev);
}

int ui_model_coll_text(const struct ev *e, const struct run_info *run, char *buf, size_t n) {
    const struct ev_coll *c = &e->u.coll;
    char dev[48] = "", bytes[24] = "", mx[16];
    ui_model_dev_name(run, e->dev, dev, sizeof(dev));
    if (c->bytes)
        ui_fmt_bytes(bytes, sizeof(bytes), c->bytes);
    ui_fmt_ns(mx, sizeof(mx), c->max_ns);
    char fail[32] = "";
    if (c->rc != 0)
        snprintf(fail, sizeof(fail), ", failed: rc %d", c->rc);
    return snprintf(buf, n, "%s%s x%u%s%s %s %s%s", dev, ev_coll_op_name(c->op), c->calls,
                    bytes[0] ? " " : "", bytes, c->calls > 1 ? "max" : "took", mx, fail);
}

/* The list entry for a collective event: its line, and every field for the details. */
static void ui_model_coll_entry(const struct ev *e, const struct run_info *run,
                                struct ui_event *u) {
    const struct ev_coll *c = &e->u.coll;
    u->severity = c->rc == 0 ? SEV_INFO : SEV_WARNING;
    u->category = c->rc == 0 ? UI_CAT_INFO : UI_CAT_WARNING;
    ui_model_coll_text(e, run, u->text, sizeof(u->text));
    char dev[8] = "-";
    if (e->dev != EV_DEV_NONE)
        snprintf(dev, sizeof(dev), "%u", e->dev);
    snprintf(u->detail, sizeof(u->detail),
             "kind: collective\ndevice: %s\nop: %s\ncalls: %u\nbytes: %llu\ntime in calls: "
             "%llu ns\nlongest call: %llu ns\nepoch: %d\nstep: %lld\nresult: %d",
             dev, ev_coll_op_name(c->op), c->calls, (unsigned long long)c->bytes,
             (unsigned long long)c->dur_ns, (unsigned long long)c->max_ns, c->epoch,
             (long long)c->step, c->rc);
}

void ui_model_use_run(struct ui_model *m, const struct run_info *run) {
    m->run = run;
}

void ui_model_use_remedies(struct ui_model *m, const struct remedies *r) {
    m->remedies = r;
}

void ui_series_push(struct ui_series *s, double v) {
    s->v[s->head] = v;
    s->head = (s->head + 1) % UI_SERIES;
    if (s->n < UI_SERIES)
        s->n++;
}

size_t ui_series_last(const struct ui_series *s, double *out, size_t max) {
    size_t n = s->n < max ? s->n : max;
    for (size_t k = 0; k < n; k++)
        out[k] = s->v[(s->head + UI_SERIES - n + k) % UI_SERIES];
    return n;
}

/* Add a phase's time to the per-second totals of the seconds it covers (a summed window's
 * spread evenly over its span). */
static void ui_model_coarse_add(struct ui_model *m, unsigned dev, const struct ev_phase *p) {
    if (dev >= UI_COARSE_DEVS || p->phase >= PHASE_COUNT || p->end_ns < p->start_ns)
        return;
    uint64_t s0 = p->start_ns / 1000000000ull, s1 = p->end_ns / 1000000000ull;
    uint64_t span = p->end_ns - p->start_ns, busy = ev_phase_busy_ns(p);
    size_t slot0 = (size_t)(s0 % UI_COARSE);
    if (s0 == s1 && m->coarse_sec[dev][slot0] == s0) { /* most: within a second seen before */
        m->coarse_us[dev][slot0][p->phase] += (uint32_t)(busy / 1000u) + 1u;
        return;
    }
    if (s1 - s0 >= UI_COARSE)
        s0 = s1 - UI_COARSE + 1;
    for (uint64_t sec = s0; sec <= s1; sec++) {
        size_t slot = (size_t)(sec % UI_COARSE);
        if (m->coarse_sec[dev][slot] != sec) {
            memset(m->coarse_us[dev][slot], 0, sizeof(m->coarse_us[dev][slot]));
            m->coarse_sec[dev][slot] = sec;
        }
        uint64_t a = sec * 1000000000ull, b = a + 1000000000ull;
        uint64_t lo = p->start_ns > a ? p->start_ns : a, hi = p->end_ns < b ? p->end_ns : b;
        uint64_t part =
            busy < span ? (uint64_t)((double)(hi - lo) * (double)busy / (double)span) : hi - lo;
        m->coarse_us[dev][slot][p->phase] += (uint32_t)(part / 1000u) + 1u;
    }
}

/* Sum block k of the kept phases, its slots all written: once, as it fills up (a pass over
 * 128 phases just written costs less than keeping sums phase by phase). */
static void ui_model_block_sum(struct ui_model *m, size_t k) {
    struct ui_phase_block s = {.min_start_ns = UINT64_MAX};
    const struct ui_phase *p = &m->phases[k * UI_PHASE_BLOCK];
    uint64_t lo = UINT64_MAX, hi_start = 0, hi_end = 0;
    uint32_t n = 0;
    bool mixed = false, backwards = false;
    for (size_t i = 0; i < UI_PHASE_BLOCK; i++, p++) {
        if (p->phase >= PHASE_COUNT)
            continue;
        mixed |= n > 0 && s.dev != p->dev;
        s.dev = p->dev;
        backwards |= p->end_ns < p->start_ns;
        lo = p->start_ns < lo ? p->start_ns : lo;
        hi_start = p->start_ns > hi_start ? p->start_ns : hi_start;
        hi_end = p->end_ns > hi_end ? p->end_ns : hi_end;
        s.phase_ns[p->phase] += p->busy_ns ? p->busy_ns : 1;
        n++;
    }
    s.min_start_ns = lo;
    s.max_start_ns = hi_start;
    s.max_end_ns = hi_end;
    s.n = n;
    s.mixed = mixed;
    s.backwards = backwards;
    m->phase_blocks[k] = s;
}

static void ui_model_phase(struct ui_model *m, const struct ev *e) {
    ui_model_coarse_add(m, e->dev, &e->u.phase);
    if (e->dev < UI_COARSE_DEVS && e->u.phase.phase < PHASE_COUNT &&
        e->u.phase.end_ns > m->phase_last_ns[e->dev][e->u.phase.phase])
        m->phase_last_ns[e->dev][e->u.phase.phase] = e->u.phase.end_ns;
    m->phases[m->phase_head] =
        (struct ui_phase){e->u.phase.start_ns, e->u.phase.end_ns, ev_phase_busy_ns(&e->u.phase),
                          e->dev, e->u.phase.phase};
    m->phase_head = (m->phase_head + 1) % UI_PHASES;
    if (m->phase_head % UI_PHASE_BLOCK == 0) /* a block full */
        ui_model_block_sum(m, (m->phase_head ? m->phase_head : UI_PHASES) / UI_PHASE_BLOCK - 1);
    if (m->phase_count < UI_PHASES)
        m->phase_count++;
}

static void ui_model_sync(struct ui_model *m, const struct ev *e) {
    unsigned op = e->u.sync.op < SYNC_OP_COUNT ? e->u.sync.op : 0;
    m->sync_ns[op][m->sync_head[op]] = e->u.sync.dur_ns;
    m->sync_head[op] = (m->sync_head[op] + 1) % UI_SYNCS;
    if (m->sync_n[op] < UI_SYNCS)
        m->sync_n[op]++;
}

/* The list entry for a command, alert or log event. */
static bool ui_model_entry(const struct ev *e, const struct run_info *run, struct ui_event *u) {
    memset(u, 0, sizeof(*u));
    u->t_ns = e->t_ns;
    u->dev = e->dev;
    if (e->kind == EV_COLLECTIVE) {
        /* joining, leaving, barriers and failures are news; the training all-reduces that
         * went well come thousands a second and are the sync panel's numbers, not entries */
        if (e->u.coll.op == EV_COLL_ALLREDUCE && e->u.coll.rc == 0)
            return false;
        ui_model_coll_entry(e, run, u);
        return true;
    }
    if (e->kind == EV_COMMAND) {
        u->severity = e->u.command.rc == 0 ? SEV_INFO : SEV_WARNING;
        u->category = UI_CAT_COMMAND;
        snprintf(u->text, sizeof(u->text), "%s: %s", ev_cmd_name(e->u.command.cmd),
                 e->u.command.text);
        snprintf(u->detail, sizeof(u->detail), "command: %s\nargument: %lld\nresult: %s (%d)\n%s",
                 ev_cmd_name(e->u.command.cmd), (long long)e->u.command.arg,
                 e->u.command.rc == 0 ? "ok" : "refused", e->u.command.rc, e->u.command.text);
        return true;
    }
    if (e->kind != EV_LOG && e->kind != EV_ALERT)
        return false;
    char dev[8] = "-";
    if (e->dev != EV_DEV_NONE)
        snprintf(dev, sizeof(dev), "%u", e->dev);
    u->severity = e->u.text.severity;
    u->code = e->u.text.code;
    u->category = e->kind == EV_ALERT                 ? UI_CAT_ALERT
                  : e->u.text.severity >= SEV_WARNING ? UI_CAT_WARNING
                                                      : UI_CAT_INFO;
    snprintf(u->text, sizeof(u->text), "%s", e->u.text.text);
    snprintf(u->detail, sizeof(u->detail), "kind: %s\nseverity: %s\ndevice: %s\n\n%s",
             ev_kind_name(e->kind), ev_severity_name(e->u.text.severity), dev, e->u.text.text);
    return true;
}

/* Equal once every run of digits is treated as one placeholder. */
static bool ui_model_same_but_numbers(const char *a, const char *b) {
    for (;;) {
        bool da = *a >= '0' && *a <= '9', db = *b >= '0' && *b <= '9';
        if (da != db)
            return false;
        if (da) {
            while (*a >= '0' && *a <= '9')
                a++;
            while (*b >= '0' && *b <= '9')
                b++;
            continue;
        }
        if (*a != *b)
            return false;
        if (!*a)
            return true;
        a++;
        b++;
    }
}

void ui_model_list_add(struct ui_model *m, struct ui_event *u) {
    m->cat_count[u->category]++;
    struct ui_event *newest =
        m->event_count ? &m->events[(m->event_head + UI_EVENTS - 1) % UI_EVENTS] : NULL;
    if (newest && newest->category == u->category && newest->dev == u->dev &&
        ui_model_same_but_numbers(newest->text, u->text)) {
        u->repeat = newest->repeat + 1;
        *newest = *u;
        return;
    }
    u->repeat = 1;
    m->events[m->event_head] = *u;
    m->event_head = (m->event_head + 1) % UI_EVENTS;
    m->event_added++;
    if (m->event_count < UI_EVENTS)
        m->event_count++;
}

/* A command, alert, log line or collective as a list entry (apart from ui_model_add, whose
 * thousands of phases a second then need no room for an entry on the stack). */
__attribute__((noinline)) static void ui_model_list_event(struct ui_model *m, const struct ev *e) {
    struct ui_event u;
    if (ui_model_entry(e, m->run, &u))
        ui_model_list_add(m, &u);
}

void ui_model_add(struct ui_model *m, const struct ev *e) {
    if (e->kind == EV_KMSG) { /* its own ring, its own sequence */
        ui_model_kmsg(m, e);
        return;
    }
    if (m->events_seen > 0 && e->seq > m->last_seq + 1)
        m->gaps += e->seq - m->last_seq - 1;
    m->last_seq = e->seq;
    m->events_seen++;
    switch ((enum ev_kind)e->kind) {
    case EV_PHASE:
        ui_model_phase(m, e);
        return;
    case EV_SYNC:
        ui_model_sync(m, e);
        return;
    case EV_MEM:
        if (m->series_dev != EV_DEV_NONE && e->dev != m->series_dev)
            return;
        ui_series_push(&m->allocated, (double)e->u.mem.allocated_bytes);
        ui_series_push(&m->reserved, (double)e->u.mem.reserved_bytes);
        ui_series_push(&m->frag, e->u.mem.frag);
        return;
    case EV_METRIC:
        ui_series_push(&m->loss, e->u.metric.loss);
        if (e->u.metric.has_val) { /* an epoch's end: its mean training loss and val */
            ui_series_push(&m->val_loss, e->u.metric.val_loss);
            ui_series_push(&m->epoch_loss, e->u.metric.loss);
        }
        return;
    case EV_COMMAND:
    case EV_ALERT:
    case EV_LOG:
    case EV_COLLECTIVE:
        ui_model_list_event(m, e);
        return;
    case EV_KMSG: /* above */
    case EV_KIND_COUNT:
        return;
    }
}

int ui_model_phases_since(const struct ui_model *m, unsigned dev, uint64_t since_ns) {
    if (dev >= UI_COARSE_DEVS)
        return PHASE_COUNT;
    int n = 0;
    for (int ph = 0; ph < PHASE_COUNT; ph++)
        n += m->phase_last_ns[dev][ph] && m->phase_last_ns[dev][ph] >= since_ns;
    return n;
}

const struct ui_event *ui_model_event(const struct ui_model *m, size_t k) {
    if (k >= m->event_count)
        return NULL;
    return &m->events[(m->event_head + UI_EVENTS - 1 - k) % UI_EVENTS];
}

/* A latency's bin: its log's place between log(lo) (l0) and log(hi) (l0 + span) in n_bins,
 * clamped to the end bins. */
static int ui_model_sync_bin(double l0, double span, int n_bins, uint64_t ns) {
    double v = (double)(ns ? ns : 1);
    int b = (int)((log(v) - l0) / span * n_bins);
    return b < 0 ? 0 : b >= n_bins ? n_bins - 1 : b;
}

#define UI_HIST_MAX_BINS 256

/* The latencies where the bins start, for one (lo, hi, bins): edge_ns[k - 1] is the least
 * latency in bin k or above. The bin grows with the latency (a log's rounding is far finer
 * than one nanosecond's step at these sizes), so a sample's bin is the count of edges at or
 * below it: a search instead of a log per sample, every frame. */
struct ui_model_hist_edges {
    uint64_t lo_ns, hi_ns;
    int n_bins;
    uint64_t edge_ns[UI_HIST_MAX_BINS - 1];
};

static const struct ui_model_hist_edges *ui_model_hist_edges(uint64_t lo_ns, uint64_t hi_ns,
                                                             int n_bins) {
    static struct ui_model_hist_edges e;
    if (e.n_bins == n_bins && e.lo_ns == lo_ns && e.hi_ns == hi_ns)
        return &e;
    double l0 = log((double)lo_ns), span = log((double)hi_ns) - l0;
    for (int k = 1; k < n_bins; k++) { /* the least ns with a bin >= k */
        uint64_t a = 0, b = UINT64_MAX;
        while (a < b) {
            uint64_t mid = a + (b - a) / 2;
            if (ui_model_sync_bin(l0, span, n_bins, mid) >= k)
                b = mid;
            else
                a = mid + 1;
        }
        e.edge_ns[k - 1] = a;
    }
    e.lo_ns = lo_ns;
    e.hi_ns = hi_ns;
    e.n_bins = n_bins;
    return &e;
}

size_t ui_model_sync_hist(const struct ui_model *m, enum ev_sync_op op, uint64_t lo_ns,
                          uint64_t hi_ns, unsigned *bins, int n_bins) {
    for (int b = 0; b < n_bins; b++)
        bins[b] = 0;
    if (op >= SYNC_OP_COUNT || n_bins <= 0 || lo_ns == 0 || hi_ns <= lo_ns)
        return 0;
    if (n_bins > UI_HIST_MAX_BINS) {
        double l0 = log((double)lo_ns), span = log((double)hi_ns) - l0;
        for (size_t k = 0; k < m->sync_n[op]; k++)
            bins[ui_model_sync_bin(l0, span, n_bins, m->sync_ns[op][k])]++;
        return m->sync_n[op];
    }
    const struct ui_model_hist_edges *e = ui_model_hist_edges(lo_ns, hi_ns, n_bins);
    for (size_t k = 0; k < m->sync_n[op]; k++) {
        uint64_t ns = m->sync_ns[op][k];
        size_t at = 0, len = (size_t)n_bins - 1; /* the count of edges at or below ns */
        while (len > 0) { /* halving without a branch to mispredict: conditional moves */
            size_t half = len / 2;
            bool below = e->edge_ns[at + half] <= ns;
            at = below ? at + half + 1 : at;
            len = below ? len - half - 1 : half;
        }
        bins[at]++;
    }
    return m->sync_n[op];
}

void ui_fmt_bytes(char *buf, size_t n, uint64_t bytes) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, n, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
}

void ui_fmt_hms(char *buf, size_t n, double seconds) {
    if (!(seconds > 0))
        seconds = 0;
    unsigned long s = (unsigned long)seconds;
    snprintf(buf, n, "%02lu:%02lu:%02lu", s / 3600, s / 60 % 60, s % 60);
}

void ui_fmt_ns(char *buf, size_t n, uint64_t ns) {
    if (ns < 1000)
        snprintf(buf, n, "%lluns", (unsigned long long)ns);
    else if (ns < 1000000)
        snprintf(buf, n, "%.1fus", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, n, "%.1fms", (double)ns / 1e6);
    else
        snprintf(buf, n, "%.1fs", (double)ns / 1e9);
}
