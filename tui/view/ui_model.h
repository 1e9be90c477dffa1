/* What the dashboard remembers between frames, kept apart from drawing so it tests without a
 * terminal: recent phases for the timeline, history series for sparklines, the events list
 * with per-category counts, and sync latencies for the histogram. */
#ifndef RINGSIDE_TUI_VIEW_UI_MODEL_H
#define RINGSIDE_TUI_VIEW_UI_MODEL_H

#include "backend/core/ev.h"
#include "backend/kmsg/kmsg.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct remedies;
struct remedy;

#define UI_PHASES 65536 /* recent phase events kept for the timeline */
#define UI_EVENTS 1024  /* recent events kept for the events panel */
#define UI_SERIES 256   /* points kept per history series */
#define UI_SYNCS  4096  /* recent sync durations kept for the histogram */
#define UI_DETAIL 640
#define UI_MARKS  2048 /* recent kernel-log failures kept for the timeline's markers */

/* Event categories shown in the events panel's title counts. */
#define UI_CATEGORIES(X)                                                                           \
    X(COMMAND, "command")                                                                          \
    X(KERNEL, "kernel")                                                                            \
    X(ALERT, "alert")                                                                              \
    X(WARNING, "warning")                                                                          \
    X(INFO, "info")

enum ui_category {
#define X(id, name) UI_CAT_##id,
    UI_CATEGORIES(X)
#undef X
        UI_CAT_COUNT
};

struct ui_event {
    uint64_t t_ns;
    uint16_t dev;
    uint8_t severity; /* enum ev_severity */
    uint8_t category; /* enum ui_category */
    uint32_t repeat;  /* times this line came in a row (the same but for its numbers) */
    uint8_t code;     /* an alert's or log line's enum ev_alert_code (ALERT_NONE otherwise) */
    char text[EV_TEXT_BYTES + 32];
    char detail[UI_DETAIL]; /* the event's fields, one per line, for the detail view */
    uint8_t kcat;           /* a kernel-log event's enum kmsg_category (NONE otherwise) */
    /* ... and what helps with it, looked up in the model's rules when it came (NULL: no rule
     * applies, or no rules); points into the rules, which outlive the model */
    const struct remedy *remedy;
    bool chatter; /* a GPU driver's line that is not a failure: shown dim */
};

/* A kernel-log failure on the timeline. */
struct ui_mark {
    uint64_t t_ns;
    uint8_t category; /* enum kmsg_category */
    uint8_t severity; /* enum ev_severity */
    char pci[16];     /* the device it names, or "" */
};

/* What the timeline needs of a phase event (24 bytes where the event carries 48). */
struct ui_phase {
    uint64_t start_ns, end_ns;
    uint64_t busy_ns; /* its time: end_ns - start_ns, or less for a window of steps summed,
                         whose time is spread evenly over its span */
    uint16_t dev;
    uint8_t phase; /* enum ev_phase_id */
};

#define UI_PHASE_BLOCK 128 /* kept phases summed together (UI_PHASES is a multiple) */

/* What the timeline needs to take a block of kept phases (the UI_PHASE_BLOCK ring slots from
 * a multiple of it) in one step when they all fall in one cell: their span and each phase's
 * total time, an instant counted 1 ns as a cell counts it. Phases of no known kind are left
 * out, as the timeline leaves them out. */
struct ui_phase_block {
    uint64_t min_start_ns, max_start_ns, max_end_ns;
    uint64_t phase_ns[PHASE_COUNT];
    uint32_t n;     /* phases summed */
    uint16_t dev;   /* the device of every one of them... */
    bool mixed;     /* ...unless several devices' phases share the block */
    bool backwards; /* a phase that ends before it starts (it counts per window) */
};

/* A bounded time series (oldest dropped). */
struct ui_series {
    double v[UI_SERIES];
    size_t head, n;
};

#define UI_COARSE      1800 /* seconds of per-second phase totals: 30 minutes */
#define UI_COARSE_DEVS 16

struct ui_model {
    /* Per-second time spent in each phase (us), for spans the phase ring no longer covers;
     * slot s % UI_COARSE holds second s when coarse_sec says so. */
    uint32_t coarse_us[UI_COARSE_DEVS][UI_COARSE][PHASE_COUNT];
    uint64_t coarse_sec[UI_COARSE_DEVS][UI_COARSE];
    uint64_t phase_last_ns[UI_COARSE_DEVS][PHASE_COUNT]; /* when each phase last ended */
    struct ui_phase phases[UI_PHASES];                   /* ring, newest at (phase_head - 1) */
    size_t phase_head, phase_count;
    /* phases[k * UI_PHASE_BLOCK ...] summed as each block fills up; the block phase_head is
     * in has the sums of its previous round */
    struct ui_phase_block phase_blocks[UI_PHASES / UI_PHASE_BLOCK];
    struct ui_event events[UI_EVENTS]; /* ring, newest at (event_head - 1) */
    size_t event_head, event_count;
    uint64_t event_added; /* list entries appended so far (a folded repeat adds none) */
    uint64_t cat_count[UI_CAT_COUNT];
    struct ui_series loss, val_loss, allocated, reserved, frag;
    struct ui_series epoch_loss; /* the training loss of each epoch evaluated, beside val_loss */
    uint64_t sync_ns[SYNC_OP_COUNT][UI_SYNCS]; /* ring per op */
    size_t sync_head[SYNC_OP_COUNT], sync_n[SYNC_OP_COUNT];
    uint64_t events_seen, last_seq;
    uint64_t gaps;                  /* events the source dropped (seq gaps) */
    struct ui_mark marks[UI_MARKS]; /* ring, newest at (mark_head - 1) */
    size_t mark_head, mark_count;
    uint64_t kmsg_seen, kmsg_last_seq;
    uint64_t kmsg_gaps; /* kernel-log events dropped in a flood (their own ring's seq gaps) */
    const struct remedies *remedies; /* what kernel-log events are matched against (or NULL) */
    const struct run_info *run;      /* the run's devices, for naming them in lines (or NULL) */
    uint16_t series_dev; /* the device whose memory events feed the series (EV_DEV_NONE: any) */
};

void ui_model_init(struct ui_model *m);

/* ui_model_init for a model already all zero (calloc'd, or static and unused): nothing is
 * cleared, so the pages of its rings become resident only as events fill them. */
void ui_model_init_zeroed(struct ui_model *m);

/* Match kernel-log events against r (borrowed: it must outlive the model; NULL: no rules)
 * from now on, as they come. */
void ui_model_use_remedies(struct ui_model *m, const struct remedies *r);
/* Name the devices in the lines as the run does (a watched job's "rank 1"); run (borrowed)
 * outlives the model. NULL: "dev N". */
void ui_model_use_run(struct ui_model *m, const struct run_info *run);

/* Feed the memory series (allocated, reserved, frag) from device index dev's memory events
 * alone (EV_DEV_NONE, the default: every one), so several devices' pools do not interleave. */
void ui_model_series_dev(struct ui_model *m, unsigned dev);

/* A collective event as a list line: "dev 1 allreduce x14 147.1 KiB max 1.1ms" (", failed:
 * rc -110" when it did). Returns the length it would have, as snprintf. */
int ui_model_coll_text(const struct ev *e, const struct run_info *run, char *buf, size_t n);

/* Fold one event into the model. A list entry that repeats the newest one but for its
 * numbers ("checkpoint written ... (epoch 7)") replaces it and counts the repeat, so a
 * chatty log cannot push command results out of sight. */
void ui_model_add(struct ui_model *m, const struct ev *e);

/* For each of cols (<= UI_PAINT_MAX_COLS) cells of [t0, t1), the kernel-log failure to mark:
 * the most severe in the cell (the latest among equals), or category KMSG_CAT_NONE. Returns
 * how many failures fall in the window. */
size_t ui_model_marks(const struct ui_model *m, uint64_t t0, uint64_t t1, int cols,
                      struct ui_mark *out);

/* The most severe (then latest) kernel-log failure that names PCI address pci at or after
 * since_ns, into *out; false when there is none. */
bool ui_model_pci_mark(const struct ui_model *m, const char *pci, uint64_t since_ns,
                       struct ui_mark *out);

/* A kernel-log message without the driver's prefixes ("amdgpu 0000:03:00.0: amdgpu: ",
 * "[drm:fn [amdgpu]] *ERROR* ", "NVRM: "), for a one-line list. */
const char *ui_kmsg_short(const char *message);

/* How many phases of device dev ended at or after since_ns (the rows a timeline of that span
 * shows); a device past the first UI_COARSE_DEVS counts as every phase. */
int ui_model_phases_since(const struct ui_model *m, unsigned dev, uint64_t since_ns);

/* Event k of the list, 0 = newest; NULL past the end. */
const struct ui_event *ui_model_event(const struct ui_model *m, size_t k);

#define UI_PAINT_MAX_COLS 1024

/* What is under way on a device at the frame's time, painted as if it ended at the window's
 * end: the phase begun and not yet ended (its event comes when it ends), and the host's
 * synchronize in flight, on the wait row (as PHASE_SYNC time). */
struct ui_live {
    uint8_t phase;           /* enum ev_phase_id; PHASE_COUNT: none known */
    uint64_t phase_start_ns; /* when it began */
    bool has_sync;           /* a synchronize is in flight... */
    uint64_t sync_start_ns;  /* ...since then */
};

/* Where the live phase's painted part begins: its start, or the end of the newest kept event
 * of that phase on dev that ended after it (the phase's event came before the snapshot that
 * says it is over, or it resumed: the event's time is not painted twice). UINT64_MAX when
 * there is no live phase (PHASE_COUNT, or the host's waits, which are the sync's). */
uint64_t ui_model_live_from(const struct ui_model *m, unsigned dev, const struct ui_live *live);

/* Paint the timeline window [t0, t1) of device dev into cols (<= UI_PAINT_MAX_COLS) cells:
 * cell k covers [t0 + k*w, t0 + (k+1)*w) and gets the phase that took most of its time, or
 * PHASE_COUNT when none overlaps it. "Most" counts, beside the cell's own time, what each
 * phase had in the cells before it and did not get a cell for (error diffusion along the
 * row): phases that alternate faster than a cell (a step's forward and backward) each get
 * cells in proportion to their time, so the row's letters add up to the phases' shares of
 * time, and a phase never shows in a cell it did not run in. sync selects the host's waits
 * (PHASE_SYNC) instead of the device's phases. live (NULL: none) is painted up to t1. The
 * times come from ui_model_cell_times. */
void ui_model_paint(const struct ui_model *m, unsigned dev, bool sync, const struct ui_live *live,
                    uint64_t t0, uint64_t t1, int cols, enum ev_phase_id *out);

/* The time (ns) each phase took in each of cols (<= UI_PAINT_MAX_COLS) cells of [t0, t1) on
 * dev: from the kept phases, and for cells older than all of them from the per-second totals
 * (spread evenly over each second); a phase that merely touches a cell counts 1 ns there so
 * it is not lost; live (NULL: none) adds what is under way, up to t1. Valid until the next
 * call. */
const uint64_t (*ui_model_cell_times(const struct ui_model *m, unsigned dev,
                                     const struct ui_live *live, uint64_t t0, uint64_t t1,
                                     int cols))[PHASE_COUNT];

void ui_series_push(struct ui_series *s, double v);
/* Copy the last max points (oldest first) into out; returns how many. */
size_t ui_series_last(const struct ui_series *s, double *out, size_t max);

/* Latency histogram of op's kept syncs: counts in n_bins log-spaced bins between lo_ns and
 * hi_ns (values outside are clamped to the end bins). Returns the number of samples. */
size_t ui_model_sync_hist(const struct ui_model *m, enum ev_sync_op op, uint64_t lo_ns,
                          uint64_t hi_ns, unsigned *bins, int n_bins);

/* "12.3 MiB"-style sizes, "00:01:23" durations, "733.2us"-style latencies. */
void ui_fmt_bytes(char *buf, size_t n, uint64_t bytes);
void ui_fmt_hms(char *buf, size_t n, double seconds);
void ui_fmt_ns(char *buf, size_t n, uint64_t ns);

const char *ui_category_name(unsigned c);

#endif
