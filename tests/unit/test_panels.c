/* Panel rendering: each panel draws a known snapshot into an off-screen window (a curses
 * screen on /dev/null) at 80x24 and 200x60 sizes, and the cells read back show the numbers
 * and labels. */
#include "backend/kmsg/remedies.h"
#include "backend/telemetry/tele_prov.h"
#include "tests/support/rs_test.h"
#include "tui/dashboard/panel.h"
#include "tui/dashboard/ui.h"
#include "tui/dashboard/widgets.h"
#include "tui/view/layout.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(panels, .timeout = 20);

static SCREEN *pt_screen;
static struct panel *pt_panels[8]; /* the panels a test made, freed by pt_close */
static int pt_n_panels;
static FILE *pt_out, *pt_in;
static struct engine_snap pt_snap;
static struct ui_model pt_model;
static struct run_info pt_run;
static struct theme pt_theme;
static struct ui_frame pt_frame;

/* A screen of rows x cols that writes to /dev/null; Criterion runs each test in its own
 * process, so curses' globals start fresh every time. */
static void pt_open(int rows, int cols) {
    pt_out = fopen("/dev/null", "w");
    pt_in = fopen("/dev/null", "r");
    pt_screen = newterm("xterm", pt_out, pt_in);
    cr_assert_not_null(pt_screen);
    resizeterm(rows, cols);
}

static void pt_close(void) {
    for (int k = 0; k < pt_n_panels; k++)
        panel_fini(pt_panels[k]);
    pt_n_panels = 0;
    endwin();
    delscreen(pt_screen);
    fclose(pt_out);
    fclose(pt_in);
}

/* The text of row y of w (trailing blanks kept), in a static buffer. */
static const char *pt_row(WINDOW *w, int y) {
    static char buf[512];
    int n = getmaxx(w) < 511 ? getmaxx(w) : 511;
    if (n < 0) /* getmaxx of no window */
        n = 0;
    mvwinnstr(w, y, 0, buf, n);
    buf[n] = '\0';
    return buf;
}

/* True when some row of w contains s. */
static bool pt_has(WINDOW *w, const char *s) {
    for (int y = 0; y < getmaxy(w); y++)
        if (strstr(pt_row(w, y), s))
            return true;
    return false;
}

static void pt_event(enum ev_kind kind, uint64_t t, int a, int b) {
    struct ev e = {.t_ns = t, .kind = (uint16_t)kind, .dev = 0};
    if (kind == EV_PHASE)
        e.u.phase = (struct ev_phase){.phase = (uint8_t)a,
                                      .start_ns = t - (uint64_t)b * 1000000,
                                      .end_ns = t,
                                      .epoch = 1,
                                      .step = 1,
                                      .chunk = -1};
    if (kind == EV_SYNC)
        e.u.sync = (struct ev_sync){.op = (uint8_t)a, .dur_ns = (uint64_t)b * 1000};
    if (kind == EV_LOG) {
        e.u.text.severity = (uint8_t)a;
        snprintf(e.u.text.text, sizeof(e.u.text.text), "log line %c%d", 'a' + b % 26, b);
    }
    ui_model_add(&pt_model, &e);
}

/* A known moment of a run: epoch 3 of 10, two segments, some syncs, a few log lines. */
static void pt_fixture(void) {
    memset(&pt_snap, 0, sizeof(pt_snap));
    ui_model_init(&pt_model);
    theme_default(&pt_theme);
    pt_run = (struct run_info){.host = "box",
                               .backend = "cpu",
                               .dev_name = "host CPU",
                               .dev_arch = "x86_64",
                               .n_devices = 1,
                               .start_ns = 1000000000ull};
    pt_snap.state = ENGINE_RUNNING;
    pt_snap.phase = PHASE_FORWARD;
    snprintf(pt_snap.backend, sizeof(pt_snap.backend), "cpu");
    snprintf(pt_snap.dev.name, sizeof(pt_snap.dev.name), "host CPU");
    snprintf(pt_snap.dev.arch, sizeof(pt_snap.dev.arch), "x86_64");
    pt_snap.dev.mem_valid = true;
    pt_snap.dev.mem_total_bytes = 16ull << 30;
    pt_snap.dev.mem_free_bytes = 12ull << 30;
    pt_snap.mem = (struct mem_stats){.allocated_bytes = 3u << 20,
                                     .reserved_bytes = 22u << 20,
                                     .largest_free_bytes = 18u << 20,
                                     .total_free_bytes = 19u << 20,
                                     .free_blocks = 2,
                                     .segments = 2,
                                     .frag = 0.0526};
    pt_snap.has_vpoc_peak = true;
    pt_snap.vpoc_peak_chunk = 125;
    pt_snap.vpoc_peak = (struct mem_stats){
        .allocated_bytes = 706u * 1024, .active_blocks = 1381, .reserved_bytes = 2u << 20};
    pt_snap.vpoc_base = (struct mem_stats){.allocated_bytes = 16u * 1024, .active_blocks = 1};
    pt_snap.layout.n_segments = pt_snap.layout.n_listed = 2;
    pt_snap.layout.seg[0].size_bytes = 20u << 20;
    pt_snap.layout.seg[0].n_blocks = 2;
    pt_snap.layout.seg[0].blocks[0] = (struct mem_block_info){0, 2u << 20, true};
    pt_snap.layout.seg[0].blocks[1] = (struct mem_block_info){2u << 20, 18u << 20, false};
    pt_snap.layout.seg[1].size_bytes = 2u << 20;
    pt_snap.layout.seg[1].n_blocks = 2;
    pt_snap.layout.seg[1].blocks[0] = (struct mem_block_info){0, 1u << 20, true};
    pt_snap.layout.seg[1].blocks[1] = (struct mem_block_info){1u << 20, 1u << 20, false};
    pt_snap.sync[SYNC_OP_STREAM] = (struct trace_sync_summary){
        .count = 1234, .p50_ns = 733200, .p90_ns = 815100, .p99_ns = 905200, .max_ns = 17100000};
    uint64_t now = 11000000000ull; /* 10 s into the run */
    for (int k = 0; k < 50; k++)
        pt_event(EV_SYNC, now, SYNC_OP_STREAM, 700 + k);
    pt_event(EV_PHASE, now - 6000000000ull, PHASE_VPOC, 1000); /* -6 s .. -7 s */
    pt_event(EV_PHASE, now, PHASE_FORWARD, 2000);              /* the last 2 s */
    for (int k = 0; k < 30; k++)
        pt_event(EV_LOG, now, k == 29 ? SEV_WARNING : SEV_INFO, k);
    pt_frame = (struct ui_frame){.now_ns = now,
                                 .snap = &pt_snap,
                                 .model = &pt_model,
                                 .run = &pt_run,
                                 .theme = &pt_theme,
                                 .color = false,
                                 .utf8 = false,
                                 .sync_slow_ns = 1000000000ull,
                                 .sync_timeout_ns = 30000000000ull,
                                 .window_ns = 10000000000ull,
                                 .source_status = "",
                                 .tele_train = -1};
}

static struct tele_snap pt_tele;

/* Two GPUs from telemetry: a dGPU the loop trains on with most fields read (temperature not),
 * and a suspended one. */
static void pt_tele_fixture(void) {
    memset(&pt_tele, 0, sizeof(pt_tele));
    pt_tele.n_prov = 2;
    snprintf(pt_tele.prov[0].name, sizeof(pt_tele.prov[0].name), "sysfs");
    snprintf(pt_tele.prov[1].name, sizeof(pt_tele.prov[1].name), "fdinfo");
    pt_tele.n_gpus = 2;
    struct tele_gpu *g = &pt_tele.gpus[0];
    tele_gpu_init(g, "0000:03:00.0");
    g->index = 0;
    g->vendor = TELE_VENDOR_AMD;
    snprintf(g->name, sizeof(g->name), "Radeon RX 7900 XTX");
    g->name_src = 1;
    tele_set(g, TELE_F_VRAM_USED, 6.0 * (1 << 30));
    tele_set(g, TELE_F_VRAM_TOTAL, 24.0 * (1 << 30));
    tele_set(g, TELE_F_GTT_USED, 512.0 * (1 << 20));
    tele_set(g, TELE_F_BUSY, 97);
    tele_set(g, TELE_F_POWER, 289);
    tele_set(g, TELE_F_SCLK, 2482);
    tele_set(g, TELE_F_PROC_VRAM, 5.0 * (1 << 30));
    g->src[TELE_F_PROC_VRAM] = 2;
    g->vram_used_by[0] = 6.0 * (1 << 30);
    g->vram_total_by[0] = 24.0 * (1 << 30);
    g->vram_by_valid = g->vram_total_by_valid = 1;
    struct tele_gpu *s = &pt_tele.gpus[1];
    tele_gpu_init(s, "0000:0a:00.0");
    s->index = 1;
    s->power = TELE_POWER_SUSPENDED;
    snprintf(s->name, sizeof(s->name), "Radeon RX 6800");
    snprintf(pt_snap.dev.pci, sizeof(pt_snap.dev.pci), "0000:03:00.0");
    pt_snap.dev.mem_total_bytes = 24ull << 30;
    pt_snap.dev.mem_free_bytes = 20ull << 30;
    pt_frame.tele = &pt_tele;
    pt_frame.tele_train = 0;
}

/* p (zeroed, or drawn before: its state starts again) as a panel of ops in a new h x w window,
 * drawn once. */
static WINDOW *pt_draw(const struct panel_ops *ops, struct panel *p, int h, int w) {
    bool known = false;
    for (int k = 0; k < pt_n_panels; k++)
        known |= pt_panels[k] == p;
    if (!known) {
        cr_assert_lt(pt_n_panels, 8);
        pt_panels[pt_n_panels++] = p;
    }
    panel_fini(p);
    cr_assert_eq(panel_init(p, ops), 0);
    p->win = newwin(h, w, 0, 0);
    p->h = h;
    p->w = w;
    cr_assert_not_null(p->win);
    ops->draw(p, &pt_frame);
    return p->win;
}

/* Widths and heights each panel gets at 80x24 and at 200x60 (from the layout). */
/* The events panel's composed details as one text, the event's line first, and its role; NULL
 * when there are none. */
static const char *pt_detail(const struct panel *p, enum theme_role *role) {
    static char buf[8192];
    const char *head, *body;
    enum theme_role r;
    if (!panel_events_detail(p, &head, &body, &r))
        return NULL;
    snprintf(buf, sizeof(buf), "%s\n%s", head, body);
    if (role)
        *role = r;
    return buf;
}

static const int pt_sizes[2][2] = {{5, 80}, {12, 100}};

Test(panels, memory_shows_pool_numbers_and_segment_map) {
    for (int s = 0; s < 2; s++) {
        pt_open(60, 200);
        pt_fixture();
        struct panel p = {0};
        WINDOW *w = pt_draw(&panel_memory_ops, &p, pt_sizes[s][0], pt_sizes[s][1]);
        cr_assert(pt_has(w, "memory pool"), "%s", pt_row(w, 0));
        cr_assert(pt_has(w, "frag 5%"), "%s", pt_row(w, 0));
        cr_assert_not(pt_has(w, "OOM"), "no refusal yet: %s", pt_row(w, 0));
        cr_assert(pt_has(w, s ? "allocated 3.0 MiB" : "alloc 3.0 MiB"), "%s", pt_row(w, 1));
        cr_assert(pt_has(w, "reserved 22.0 MiB"));
        cr_assert(pt_has(w, "largest free 18.0 MiB"));
        if (s) /* room for the VPOC line at the larger size */
            cr_assert(pt_has(w, "VPOC peak (chunk 125): +690.0 KiB in +1380 blocks"), "%s",
                      pt_row(w, 3));
        cr_assert(pt_has(w, s ? "free blocks 2  segments 2" : "2 free/2 seg"), "%s", pt_row(w, 1));
        /* the 20 MiB segment: 2 of 20 MiB used (~10% '#'), the rest its largest free block */
        int row = -1;
        for (int y = 0; y < p.h; y++)
            if (strstr(pt_row(w, y), "20.0 MiB"))
                row = y;
        cr_assert_geq(row, 0, "no row for the 20 MiB segment");
        const char *r = pt_row(w, row);
        size_t used = 0, largest = 0;
        for (const char *c = r + 11; *c; c++) {
            used += *c == '#';
            largest += *c == '~';
        }
        size_t cells = (size_t)p.w - 2 - 12;
        cr_assert_float_eq((double)used, cells * 0.1, 1.0, "%zu of %zu: %s", used, cells, r);
        cr_assert_float_eq((double)largest, cells * 0.9, 1.0, "%s", r);
        delwin(w);
        pt_close();
    }
}

/* An allocation the device refused is counted in the title, before the fragmentation. */
Test(panels, memory_title_counts_refused_allocations) {
    pt_open(24, 80);
    pt_fixture();
    pt_snap.mem.n_oom = 2;
    struct panel p = {0};
    WINDOW *w = pt_draw(&panel_memory_ops, &p, 5, 80);
    cr_assert(pt_has(w, "OOM 2  frag 5%"), "%s", pt_row(w, 0));
    delwin(w);
    pt_close();
}

Test(panels, sync_shows_percentiles_and_watch_state) {
    pt_open(60, 200);
    pt_fixture();
    struct panel p = {0};
    WINDOW *w = pt_draw(&panel_sync_ops, &p, 8, 100);
    cr_assert(pt_has(w, "stream"));
    cr_assert(pt_has(w, "1234"));
    cr_assert(pt_has(w, "733.2us"));
    cr_assert(pt_has(w, "905.2us"));
    cr_assert(pt_has(w, "17.1ms"));
    cr_assert(pt_has(w, "in flight: none"));
    delwin(w);
    /* a stream sync in flight for 2 s is SLOW; for 40 s it is a HANG */
    pt_frame.has_inflight = true;
    pt_frame.inflight = (struct trace_inflight){pt_frame.now_ns - 2000000000ull, SYNC_OP_STREAM,
                                                PHASE_CLEANUP, EV_COLL_NONE, 0};
    w = pt_draw(&panel_sync_ops, &p, 8, 100);
    cr_assert(pt_has(w, "stream sync in cleanup for 2.0s  [SLOW]"));
    delwin(w);
    /* a watched job's collective: its name and number, not a sync's words */
    pt_frame.inflight.coll = EV_COLL_ALLREDUCE;
    pt_frame.inflight.coll_seq = 243;
    w = pt_draw(&panel_sync_ops, &p, 8, 100);
    cr_assert(pt_has(w, "in flight: allreduce #243 for 2.0s  [SLOW]"));
    delwin(w);
    pt_frame.inflight.coll = EV_COLL_NONE;
    pt_frame.now_ns = 60000000000ull; /* a minute into the run, the sync began at 20 s */
    pt_frame.inflight.start_ns = 20000000000ull;
    w = pt_draw(&panel_sync_ops, &p, 4, 80); /* compact: the watch line comes first */
    cr_assert(strstr(pt_row(w, 1), "[HANG]"), "%s", pt_row(w, 1));
    /* then, hung, the driver's side: no kernel log is read in the fixture */
    cr_assert(strstr(pt_row(w, 2), "driver: the kernel log is not read"), "%s", pt_row(w, 2));
    cr_assert(pt_has(w, "HANG  slow > 1.0s  hang > 30.0s"));
    delwin(w);
    pt_frame.inflight.start_ns = 0; /* nothing in flight: the busiest op, labelled */
    pt_frame.has_inflight = false;
    w = pt_draw(&panel_sync_ops, &p, 4, 80);
    cr_assert(strstr(pt_row(w, 2), "stream x1234  p50 733.2us  p99 905.2us  max 17.1ms"), "%s",
              pt_row(w, 2));
    delwin(w);
    pt_close();
}

/* A hung sync shows the latest kernel-log failures under it, newest first. */
Test(panels, sync_hang_shows_the_latest_driver_failures) {
    pt_open(60, 200);
    pt_fixture();
    static const char *const msgs[] = {
        "amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=10, emitted seq=12",
        "amdgpu 0000:03:00.0: amdgpu: MES failed to respond to msg=REMOVE_QUEUE"};
    for (int k = 0; k < 2; k++) {
        struct ev e = {.kind = EV_KMSG, .t_ns = 19000000000ull, .dev = EV_DEV_NONE};
        e.u.kmsg.category = (uint8_t)(k ? KMSG_CAT_MES : KMSG_CAT_RING_TIMEOUT);
        e.u.kmsg.severity = SEV_ERROR;
        e.u.kmsg.lines = 1;
        snprintf(e.u.kmsg.message, sizeof(e.u.kmsg.message), "%s", msgs[k]);
        ui_model_add(&pt_model, &e);
    }
    pt_frame.now_ns = 60000000000ull; /* a minute into the run, the sync began at 20 s */
    pt_frame.has_inflight = true;
    pt_frame.inflight =
        (struct trace_inflight){20000000000ull, SYNC_OP_DEVICE, PHASE_CLEANUP, EV_COLL_NONE, 0};
    struct panel p = {0};
    WINDOW *w = pt_draw(&panel_sync_ops, &p, 11, 100);
    const char *mes = NULL, *ring = NULL;
    int mes_y = -1, ring_y = -1;
    for (int y = 0; y < p.h; y++) {
        if (!mes && strstr(pt_row(w, y), "driver ") && strstr(pt_row(w, y), "MES failed")) {
            mes = pt_row(w, y);
            mes_y = y;
        } else if (strstr(pt_row(w, y), "driver ") && strstr(pt_row(w, y), "ring gfx_0.0.0")) {
            ring = pt_row(w, y);
            ring_y = y;
        }
    }
    cr_assert_geq(mes_y, 0, "the newest failure is shown");
    cr_assert(ring && ring_y == mes_y + 1, "then the one before it");
    cr_assert(strstr(pt_row(w, mes_y), "(k: details)"), "%s", pt_row(w, mes_y));
    delwin(w);
    pt_close();
}

/* The row of w whose text starts with prefix, or NULL. */
static const char *pt_row_starting(WINDOW *w, const char *prefix) {
    for (int y = 0; y < getmaxy(w); y++)
        if (strncmp(pt_row(w, y), prefix, strlen(prefix)) == 0)
            return pt_row(w, y);
    return NULL;
}

Test(panels, timeline_gantt_rows_per_active_phase) {
    pt_open(60, 200);
    pt_fixture();
    struct panel p = {0};
    /* 12 label columns, then 93 cells of 10 s / 93 = 107.5 ms each */
    WINDOW *w = pt_draw(&panel_timeline_ops, &p, 6, 106);
    cr_assert(pt_has(w, "last 10 s"));
    const char *vpoc = pt_row_starting(w, " vpoc ");
    cr_assert_not_null(vpoc, "no vpoc row");
    /* vpoc ran from -7 s to -6 s: cells 27..37 */
    cr_assert_eq(vpoc[12 + 32], 'v', "%s", vpoc);
    cr_assert_eq(vpoc[12 + 20], ' ', "%s", vpoc);
    cr_assert_eq(vpoc[12 + 60], ' ', "%s", vpoc);
    const char *fwd = pt_row_starting(w, " forward <"); /* the phase now is marked */
    cr_assert_not_null(fwd, "no forward row marked as current");
    cr_assert_eq(fwd[12 + 85], 'f', "%s", fwd); /* the last 2 s: cells 74..92 */
    cr_assert_eq(fwd[12 + 50], ' ', "%s", fwd);
    cr_assert_null(pt_row_starting(w, " eval"), "a phase that did not run has a row");
    cr_assert(pt_has(w, "-10.0s"));
    cr_assert(pt_has(w, "-5.0s"));
    cr_assert(pt_has(w, "now"));
    delwin(w);
    pt_close();
}

Test(panels, timeline_compact_row_when_short) {
    pt_open(24, 80);
    pt_fixture();
    struct panel p = {0};
    WINDOW *w = pt_draw(&panel_timeline_ops, &p, 4, 106); /* 2 rows: too few for a Gantt */
    const char *dev0 = pt_row_starting(w, " dev0");
    cr_assert_not_null(dev0, "no compact dev0 row");
    cr_assert_eq(dev0[12 + 32], 'v', "%s", dev0);
    cr_assert_eq(dev0[12 + 85], 'f', "%s", dev0);
    cr_assert(pt_has(w, "now  forward"));
    cr_assert(pt_has(w, "f forward"), "the legend names what the row shows");
    cr_assert(pt_has(w, "v vpoc"));
    cr_assert(!pt_has(w, "eval"), "the legend names a phase that did not run");
    delwin(w);
    pt_close();
}

/* The row of w that starts with prefix: its index, or -1. */
static int pt_row_index(WINDOW *w, const char *prefix) {
    for (int y = 0; y < getmaxy(w); y++)
        if (strncmp(pt_row(w, y), prefix, strlen(prefix)) == 0)
            return y;
    return -1;
}

/* A call hung in the pre-training cleanup, 12 s ago, with a 5 s sync timeout: the cleanup
 * since then, the device sync in flight since then, nothing of either ended yet. */
static void pt_hang_fixture(void) {
    pt_fixture();
    ui_model_init(&pt_model);
    pt_frame.now_ns = 30000000000ull; /* 29 s into the run */
    uint64_t now = pt_frame.now_ns, since = now - 12000000000ull;
    pt_event(EV_PHASE, since - 100000000ull, PHASE_FEATURES, 300); /* ended before */
    pt_snap.phase = PHASE_CLEANUP;
    pt_snap.phase_start_ns = since - 1000000;
    pt_snap.has_phase_start = true;
    pt_frame.has_inflight = true;
    pt_frame.inflight =
        (struct trace_inflight){since, SYNC_OP_DEVICE, PHASE_CLEANUP, EV_COLL_NONE, 0};
    pt_frame.sync_timeout_ns = 5000000000ull;
}

/* At 80x24 the timeline has 3 rows under its title: the hung call's wait row, marked HANG
 * with its age in the error role, takes the axis's; the cleanup fills the device's row up
 * to now; the legend says the phase now and names only what the rows show. */
Test(panels, timeline_compact_shows_a_hung_call_live) {
    pt_open(24, 80);
    pt_hang_fixture();
    struct panel p = {0};
    WINDOW *w = pt_draw(&panel_timeline_ops, &p, 4, 80);
    const char *dev0 = pt_row_starting(w, " dev0");
    cr_assert_not_null(dev0, "no dev0 row");
    for (int x = 12; x < 79; x++)
        cr_assert_eq(dev0[x], 'c', "cell %d: %s", x - 12, dev0);
    int y = pt_row_index(w, " HANG 12s ");
    cr_assert_geq(y, 0, "no wait row marked HANG");
    const char *wait = pt_row(w, y);
    for (int x = 12; x < 79; x++)
        cr_assert_eq(wait[x], 'w', "wait cell %d: %s", x - 12, wait);
    /* the error role (monochrome: bold), not the wait's own fill (reverse) */
    chtype label = mvwinch(w, y, 1), cell = mvwinch(w, y, 78);
    cr_assert(label & A_BOLD);
    cr_assert(cell & A_BOLD);
    cr_assert(!(cell & A_REVERSE));
    cr_assert(pt_has(w, "now  cleanup 12s"));
    cr_assert(pt_has(w, "c cleanup"));
    cr_assert(pt_has(w, "w wait"));
    cr_assert(!pt_has(w, "features"), "a phase no cell shows is in the legend");
    delwin(w);
    pt_close();
}

/* The full form: a row for the cleanup under way, marked as now, filled up to now, and the
 * wait row of the hung call. */
Test(panels, timeline_gantt_shows_a_hung_call_live) {
    pt_open(60, 200);
    pt_hang_fixture();
    struct panel p = {0};
    WINDOW *w = pt_draw(&panel_timeline_ops, &p, 9, 106);
    const char *cl = pt_row_starting(w, " cleanup <");
    cr_assert_not_null(cl, "no cleanup row marked as now");
    cr_assert_eq(cl[12], 'c', "%s", cl);
    cr_assert_eq(cl[12 + 92], 'c', "%s", cl);
    const char *wait = pt_row_starting(w, " HANG 12s ");
    cr_assert_not_null(wait, "no wait row marked HANG");
    cr_assert_eq(wait[12 + 92], 'w', "%s", wait);
    delwin(w);
    pt_close();
}

/* A pause is a live paused bar while it lasts, in both forms; once it is over its event
 * draws it. */
Test(panels, timeline_shows_a_pause_while_it_lasts) {
    pt_open(60, 200);
    pt_fixture();
    ui_model_init(&pt_model);
    uint64_t now = pt_frame.now_ns;
    pt_event(EV_PHASE, now - 3000000000ull, PHASE_BACKWARD, 4000); /* -7 s .. -3 s */
    pt_snap.phase = PHASE_PAUSED;
    pt_snap.phase_start_ns = now - 3000000000ull;
    pt_snap.has_phase_start = true;
    pt_snap.in_steps = true;
    struct panel p = {0};
    WINDOW *w = pt_draw(&panel_timeline_ops, &p, 6, 106);
    const char *pa = pt_row_starting(w, " paused <");
    cr_assert_not_null(pa, "no paused row marked as now");
    cr_assert_eq(pa[12 + 92], 'p', "%s", pa);
    cr_assert_eq(pa[12 + 60], ' ', "%s", pa);
    delwin(w);
    w = pt_draw(&panel_timeline_ops, &p, 4, 80);
    const char *dev0 = pt_row_starting(w, " dev0");
    cr_assert_not_null(dev0);
    cr_assert_eq(dev0[78], 'p', "%s", dev0);
    cr_assert_eq(dev0[12 + 30], 'b', "%s", dev0);
    cr_assert(pt_has(w, "now  paused 3.0s"));
    delwin(w);
    pt_close();
}

/* Within the steps and in no phase of its own, the loop says its step, and the full form
 * marks a step's phases as now. */
Test(panels, timeline_now_within_the_steps) {
    pt_open(60, 200);
    pt_fixture();
    pt_snap.phase = PHASE_COUNT;
    pt_snap.in_steps = true;
    pt_snap.step = 4321;
    struct panel p = {0};
    WINDOW *w = pt_draw(&panel_timeline_ops, &p, 4, 80);
    cr_assert(pt_has(w, "now  step 4321"));
    delwin(w);
    w = pt_draw(&panel_timeline_ops, &p, 6, 106);
    cr_assert_not_null(pt_row_starting(w, " forward <"));
    cr_assert_not_null(pt_row_starting(w, " vpoc "));
    cr_assert_null(pt_row_starting(w, " vpoc <"));
    delwin(w);
    pt_close();
}

/* The panel's help names every phase by its letter, from the phase table. */
Test(panels, timeline_help_names_every_letter) {
    for (unsigned ph = 0; ph < PHASE_COUNT; ph++) {
        char want[32];
        snprintf(want, sizeof(want), " %c %s ", ev_phase_letter(ph), ev_phase_label(ph));
        cr_assert(strstr(panel_timeline_ops.help, want), "'%s' is not in the help: %s", want,
                  panel_timeline_ops.help);
    }
}

Test(panels, events_newest_first_with_counts_and_detail) {
    pt_open(24, 80);
    pt_fixture();
    struct panel p = {0};
    WINDOW *w = pt_draw(&panel_events_ops, &p, 6, 80);
    cr_assert(pt_has(w, "warning 1"), "%s", pt_row(w, 0));
    cr_assert(pt_has(w, "info 29"), "%s", pt_row(w, 0));
    cr_assert(strstr(pt_row(w, 1), "log line d29"), "%s", pt_row(w, 1));
    cr_assert(strstr(pt_row(w, 2), "log line c28"), "%s", pt_row(w, 2));
    /* scroll down twice, then Enter composes the details of the selected (third newest) line
     * and asks the app to show them */
    p.focused = true;
    cr_assert_null(pt_detail(&p, NULL), "none before an Enter");
    cr_assert_eq(PANEL_HANDLED, panel_events_ops.key(&p, KEY_DOWN, &pt_frame));
    cr_assert_eq(PANEL_HANDLED, panel_events_ops.key(&p, KEY_DOWN, &pt_frame));
    cr_assert_eq(PANEL_HANDLED | PANEL_OPEN_EVENT_DETAIL,
                 panel_events_ops.key(&p, '\n', &pt_frame));
    pt_event(EV_LOG, pt_frame.now_ns, SEV_INFO, 40); /* arrives while the details are open */
    werase(w);
    panel_events_ops.draw(&p, &pt_frame);
    enum theme_role role;
    const char *d = pt_detail(&p, &role);
    cr_assert(d && strncmp(strchr(d, ' ') + 2, "info  log line b27\n", 19) == 0,
              "the details moved to another event: %s", d);
    cr_assert(strstr(d, "severity: info"), "%s", d);
    cr_assert_eq(role, THEME_TEXT);
    cr_assert(strstr(pt_row(w, 0), "events (1 newer above: Home)"), "the list stays: %s",
              pt_row(w, 0));
    cr_assert_not(pt_has(w, "severity: info"), "the app shows the details, not the panel");
    delwin(w);
    pt_close();
}

/* The selection is an entry, not a row number: new lines arriving between a look and a key
 * press must not move Enter onto another event. At the top the list follows the newest. */
Test(panels, events_selection_stays_on_its_entry_while_new_ones_arrive) {
    pt_open(24, 80);
    pt_fixture();
    struct panel p = {0};
    WINDOW *w = pt_draw(&panel_events_ops, &p, 6, 80);
    p.focused = true;
    pt_event(EV_LOG, pt_frame.now_ns, SEV_INFO, 41); /* at the top: followed */
    werase(w);
    panel_events_ops.draw(&p, &pt_frame);
    cr_assert(strstr(pt_row(w, 1), "> ") && strstr(pt_row(w, 1), "log line p41"), "%s",
              pt_row(w, 1));
    cr_assert_eq(PANEL_HANDLED, panel_events_ops.key(&p, KEY_DOWN, &pt_frame));
    cr_assert_eq(PANEL_HANDLED, panel_events_ops.key(&p, KEY_DOWN, &pt_frame)); /* c28 */
    pt_event(EV_LOG, pt_frame.now_ns, SEV_INFO, 42);
    pt_event(EV_LOG, pt_frame.now_ns, SEV_INFO, 43);
    werase(w);
    panel_events_ops.draw(&p, &pt_frame);
    cr_assert(strstr(pt_row(w, 1), "log line p41"), "the view should hold still: %s", pt_row(w, 1));
    cr_assert(strstr(pt_row(w, 3), "> ") && strstr(pt_row(w, 3), "log line c28"),
              "the selection should stay on its line: %s", pt_row(w, 3));
    cr_assert(strstr(pt_row(w, 0), "events (2 newer above: Home)"), "%s", pt_row(w, 0));
    pt_event(EV_LOG, pt_frame.now_ns, SEV_INFO, 44); /* between the look and the key */
    cr_assert_eq(PANEL_HANDLED | PANEL_OPEN_EVENT_DETAIL,
                 panel_events_ops.key(&p, '\n', &pt_frame));
    cr_assert(strstr(pt_detail(&p, NULL), "log line c28"), "Enter opened another event");
    delwin(w);
    pt_close();
}

/* The kernel log being off is known by its code, not its wording: Enter on it shows the ways
 * out; a line that merely says the same words does not. */
Test(panels, events_kernel_log_off_details_give_the_ways_out) {
    pt_open(24, 80);
    pt_fixture();
    pt_frame.kmsg_reason = "cannot read /dev/kmsg: Operation not permitted";
    for (int k = 0; k < 2; k++) {
        struct ev e = {.kind = EV_LOG, .t_ns = pt_frame.now_ns, .dev = EV_DEV_NONE};
        e.u.text.severity = SEV_WARNING;
        e.u.text.code = (uint8_t)(k ? ALERT_KMSG_OFF : ALERT_NONE);
        snprintf(e.u.text.text, sizeof(e.u.text.text), "%s",
                 k ? "kernel log off: Operation not permitted"
                   : "note: kernel log off is a phrase");
        ui_model_add(&pt_model, &e);
    }
    struct panel p = {0};
    WINDOW *w = pt_draw(&panel_events_ops, &p, 20, 80);
    p.focused = true;
    cr_assert_eq(PANEL_HANDLED | PANEL_OPEN_EVENT_DETAIL,
                 panel_events_ops.key(&p, '\n', &pt_frame)); /* the newest: the coded one */
    const char *d = pt_detail(&p, NULL);
    cr_assert(strstr(d, "Ways out:"), "%s", d);
    cr_assert(strstr(d, "setcap cap_syslog+ep"), "%s", d);
    cr_assert_eq(PANEL_HANDLED, panel_events_ops.key(&p, KEY_DOWN, &pt_frame));
    cr_assert_eq(PANEL_HANDLED | PANEL_OPEN_EVENT_DETAIL,
                 panel_events_ops.key(&p, '\n', &pt_frame));
    d = pt_detail(&p, NULL);
    cr_assert(strstr(d, "is a phrase"), "%s", d);
    cr_assert_not(strstr(d, "Ways out:"), "the wording alone does not make it the kernel log");
    delwin(w);
    pt_close();
}

/* A kernel-log failure as the watcher reports it. */
static void pt_kmsg(uint32_t seq, enum kmsg_category cat, const char *msg) {
    struct ev e = {.kind = EV_KMSG, .t_ns = pt_frame.now_ns, .seq = seq, .dev = EV_DEV_NONE};
    e.u.kmsg.category = (uint8_t)cat;
    e.u.kmsg.severity = SEV_ERROR;
    e.u.kmsg.lines = 1;
    snprintf(e.u.kmsg.message, sizeof(e.u.kmsg.message), "%s", msg);
    ui_model_add(&pt_model, &e);
}

/* k: the events panel's entry point selects the newest kernel-log failure, however many other
 * events came after it, and opens its details with what helps (found when it came). */
Test(panels, events_show_kernel_selects_the_newest_kernel_failure) {
    pt_open(24, 80);
    pt_fixture();
    char dir[256], path[512], err[256] = "";
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    cr_assert_eq(rs_test_write_file(dir, "r.json",
                                    "{\"rules\": [{\"category\": \"mes\", \"title\": \"MES hung\", "
                                    "\"explanation\": \"the scheduler firmware\", \"actions\": "
                                    "[\"update linux-firmware\"]}]}",
                                    path, sizeof(path)),
                 0);
    struct remedies *rules = NULL;
    cr_assert_eq(remedies_load_file(&rules, path, err, sizeof(err)), 0, "%s", err);
    ui_model_use_remedies(&pt_model, rules);
    pt_kmsg(0, KMSG_CAT_RING_TIMEOUT, "amdgpu: ring gfx_0.0.0 timeout");
    pt_kmsg(1, KMSG_CAT_MES, "amdgpu: MES failed to respond to msg=REMOVE_QUEUE");
    for (int k = 0; k < 3; k++) /* newer than both */
        pt_event(EV_LOG, pt_frame.now_ns, SEV_INFO, 50 + k);
    struct panel p = {0};
    WINDOW *w = pt_draw(&panel_events_ops, &p, 20, 80);
    cr_assert(panel_events_show_kernel(&p, &pt_frame));
    struct panel_list at = panel_events_list(&p);
    cr_assert_eq(at.selected, 3, "three log lines above it");
    cr_assert_eq(at.scroll, 3, "it is the first line shown");
    enum theme_role role;
    const char *d = pt_detail(&p, &role);
    cr_assert(d && strstr(d, "MES failed to respond"), "%s", d);
    cr_assert_not(strstr(d, "ring gfx_0.0.0"), "the older failure");
    cr_assert(strstr(d, "What helps: MES hung"), "%s", d);
    cr_assert(strstr(d, "\n  - update linux-firmware"), "%s", d);
    cr_assert_eq(role, THEME_ERROR);
    werase(w); /* the list stays under the details, held on the failure */
    panel_events_ops.draw(&p, &pt_frame);
    cr_assert(pt_has(w, "events (3 newer above: Home)"), "%s", pt_row(w, 0));
    delwin(w);
    pt_close();
    remedies_free(rules);
    rs_test_rmtree(dir);
}

/* Without a kernel-log failure k finds nothing, and the panel stays as it was. */
Test(panels, events_show_kernel_without_one_changes_nothing) {
    pt_open(24, 80);
    pt_fixture();
    struct panel p = {0};
    WINDOW *w = pt_draw(&panel_events_ops, &p, 6, 80);
    p.focused = true;
    cr_assert_eq(PANEL_HANDLED, panel_events_ops.key(&p, KEY_DOWN, &pt_frame));
    cr_assert_not(panel_events_show_kernel(&p, &pt_frame));
    cr_assert_eq(panel_events_list(&p).selected, 1);
    cr_assert_null(pt_detail(&p, NULL));
    struct panel other = {0}; /* another panel is not the events panel */
    WINDOW *w2 = pt_draw(&panel_gpu_ops, &other, 4, 80);
    pt_kmsg(0, KMSG_CAT_MES, "amdgpu: MES failed to respond");
    cr_assert_not(panel_events_show_kernel(&other, &pt_frame));
    cr_assert_null(pt_detail(&other, NULL));
    delwin(w2);
    delwin(w);
    pt_close();
}

/* An entry that drops off the end of the list leaves the selection on the oldest kept. */
Test(panels, events_selection_clamps_when_its_entry_is_dropped) {
    pt_open(24, 80);
    pt_fixture();
    struct panel p = {0};
    WINDOW *w = pt_draw(&panel_events_ops, &p, 6, 80);
    p.focused = true;
    cr_assert_eq(PANEL_HANDLED, panel_events_ops.key(&p, KEY_END, &pt_frame));
    for (int k = 0; k < UI_EVENTS; k++)
        pt_event(EV_LOG, pt_frame.now_ns, SEV_INFO, 100 + k);
    werase(w);
    panel_events_ops.draw(&p, &pt_frame);
    struct panel_list at = panel_events_list(&p);
    cr_assert_eq(at.selected, UI_EVENTS - 1);
    cr_assert_geq(at.scroll, UI_EVENTS - 5);
    cr_assert_leq(at.scroll, at.selected);
    delwin(w);
    pt_close();
}

Test(panels, gpu_without_telemetry_says_why_and_shows_the_runtime) {
    pt_open(24, 80);
    pt_fixture();
    struct panel p = {0};
    WINDOW *w = pt_draw(&panel_gpu_ops, &p, 4, 80);
    cr_assert(pt_has(w, "0 GPUs"));
    cr_assert(pt_has(w, "telemetry: off"), "%s", pt_row(w, 1));
    cr_assert(pt_has(w, "training: pool 22.0 MiB"), "%s", pt_row(w, 3));
    cr_assert(pt_has(w, "runtime 4.0 GiB/16.0 GiB"), "%s", pt_row(w, 3));
    cr_assert(pt_has(w, "pool 22.0 MiB"));
    delwin(w);
    pt_close();
}

Test(panels, gpu_lists_every_gpu_with_na_for_unread_values) {
    pt_open(60, 200);
    pt_fixture();
    pt_tele_fixture();
    struct panel p = {0};
    WINDOW *w = pt_draw(&panel_gpu_ops, &p, 6, 120);
    cr_assert(pt_has(w, "2 GPUs"));
    const char *r1 = pt_row(w, 1);
    cr_assert(strstr(r1, "*0 Radeon RX 7900 XTX"), "%s", r1);
    cr_assert(strstr(r1, "6.0 GiB/24.0 GiB"), "%s", r1);
    cr_assert(strstr(r1, "GTT 512.0 MiB"), "%s", r1);
    cr_assert(strstr(r1, "97%"), "%s", r1);
    cr_assert(strstr(r1, "n/a"), "temperature was not read: %s", r1);
    cr_assert(strstr(r1, "289W") && strstr(r1, "2482MHz"), "%s", r1);
    const char *r2 = pt_row(w, 2);
    cr_assert(strstr(r2, " 1 Radeon RX 6800") && strstr(r2, "suspended"), "%s", r2);
    cr_assert(pt_has(w, "runtime 4.0 GiB/24.0 GiB"));
    delwin(w);
    /* half of a 160-column screen: the bar and GTT give way, the gauges stay */
    w = pt_draw(&panel_gpu_ops, &p, 6, 80);
    r1 = pt_row(w, 1);
    cr_assert(strstr(r1, "6.0 GiB/24.0 GiB") && strstr(r1, "97%") && strstr(r1, "289W") &&
                  strstr(r1, "2482MHz"),
              "%s", r1);
    delwin(w);
    pt_close();
}

/* The GPU overlay reads and moves the selection through the panel's accessors; drawing keeps
 * it within the GPUs there are. */
Test(panels, gpu_selection_through_its_accessors) {
    pt_open(24, 80);
    pt_fixture();
    pt_tele_fixture();
    struct panel p = {0};
    WINDOW *w = pt_draw(&panel_gpu_ops, &p, 6, 80);
    cr_assert_eq(panel_gpu_selected(&p), 0);
    panel_gpu_select(&p, 1);
    cr_assert_eq(panel_gpu_selected(&p), 1);
    panel_gpu_select(&p, 5);
    werase(w);
    panel_gpu_ops.draw(&p, &pt_frame);
    cr_assert_eq(panel_gpu_selected(&p), 1, "two GPUs: the last");
    delwin(w);
    pt_close();
}

Test(panels, gpu_keys_select_and_enter_asks_for_details) {
    pt_open(24, 80);
    pt_fixture();
    pt_tele_fixture();
    struct panel p = {0};
    WINDOW *w = pt_draw(&panel_gpu_ops, &p, 6, 80);
    cr_assert_eq(panel_gpu_ops.key(&p, KEY_DOWN, &pt_frame), PANEL_HANDLED);
    cr_assert_eq(panel_gpu_ops.key(&p, KEY_DOWN, &pt_frame), PANEL_HANDLED);
    cr_assert_eq(panel_gpu_selected(&p), 1, "the selection stops at the last GPU");
    cr_assert_eq(panel_gpu_ops.key(&p, '\n', &pt_frame), PANEL_HANDLED | PANEL_OPEN_GPU_OVERLAY,
                 "Enter asks the app for the overlay");
    cr_assert_eq(panel_gpu_ops.key(&p, 'x', &pt_frame), PANEL_IGNORED);
    delwin(w);
    pt_close();
}

/* ---- several training devices at the dashboard's sizes ---- */

static struct engine_snap pt_devs[RUN_MAX_DEVICES];

/* n training devices (indices 0..n-1), each a copy of the fixture's snapshot with the same
 * step time (the skew line then names dev0 alone), all-reduces, and a telemetry GPU of its
 * own. */
static void pt_devices(unsigned n) {
    pt_fixture();
    pt_run.n_devices = n;
    snprintf(pt_run.dev_name, sizeof(pt_run.dev_name), "NVIDIA H100 80GB HBM3");
    memset(&pt_tele, 0, sizeof(pt_tele));
    pt_tele.n_gpus = n;
    for (unsigned k = 0; k < n; k++) {
        pt_run.devices[k] = (uint16_t)k;
        pt_devs[k] = pt_snap;
        pt_devs[k].step_ms = 12.5;
        pt_devs[k].coll[EV_COLL_ALLREDUCE] =
            (struct comm_op_stats){.calls = 140, .p50_ns = 310000, .p99_ns = 1100000};
        snprintf(pt_devs[k].dev.pci, sizeof(pt_devs[k].dev.pci), "0000:%02x:00.0", 0x10 + k);
        struct tele_gpu *g = &pt_tele.gpus[k];
        tele_gpu_init(g, pt_devs[k].dev.pci);
        g->index = (int)k;
        snprintf(g->name, sizeof(g->name), "NVIDIA H100 80GB HBM3");
        tele_set(g, TELE_F_BUSY, 90);
        pt_frame.snaps[k] = &pt_devs[k];
    }
    pt_frame.snap = &pt_devs[0];
    pt_frame.n_snaps = n;
    pt_frame.gpu = 0;
    pt_frame.tele = &pt_tele;
}

/* The devices w names by a row of their own (rows below the title containing "devK" then a
 * blank or the selection star, or for the GPU panel a row starting with its "*K " mark). */
static unsigned pt_devices_named(WINDOW *w, unsigned n, bool gpu_rows) {
    unsigned named = 0;
    for (unsigned k = 0; k < n; k++) {
        char a[16], b[16];
        snprintf(a, sizeof(a), gpu_rows ? " *%u " : "dev%u ", k);
        snprintf(b, sizeof(b), gpu_rows ? " *%u " : "dev%u*", k);
        bool seen = false;
        for (int y = 1; y < getmaxy(w) && !seen; y++) {
            const char *r = pt_row(w, y);
            seen = gpu_rows ? strncmp(r, a, strlen(a)) == 0 : strstr(r, a) || strstr(r, b);
        }
        named += seen;
    }
    return named;
}

/* The N of a "+N more" mark for devices anywhere in w (its title included; "+N more
 * segments" is not one), 0 without one. */
static unsigned pt_more(WINDOW *w) {
    for (int y = 0; y < getmaxy(w); y++) {
        const char *r = pt_row(w, y);
        for (const char *c = strchr(r, '+'); c; c = strchr(c + 1, '+')) {
            unsigned m;
            int end = 0;
            if (sscanf(c, "+%u more%n", &m, &end) == 1 && end > 0 &&
                strncmp(c + end, " segments", 9) != 0)
                return m;
        }
    }
    return 0;
}

/* Every device-showing panel, at the size the layout gives it at 80x24, 120x40 and 200x60,
 * with 2, 4 and 8 devices: every device has a row or column of its own, or a "+N more" mark
 * counts exactly those without one. */
Test(panels, every_device_shown_or_counted_at_each_size) {
    static const int sizes[3][2] = {{24, 80}, {40, 120}, {60, 200}};
    static const unsigned devs[3] = {2, 4, 8};
    const struct panel_ops *ops[5] = {&panel_gpu_ops, &panel_memory_ops, &panel_timeline_ops,
                                      &panel_sync_ops, &panel_events_ops};
    struct layout_item items[5];
    for (int k = 0; k < 5; k++)
        items[k] = (struct layout_item){ops[k]->min_h, ops[k]->pref_h, ops[k]->column, ops[k]->grow,
                                        ops[k]->extra};
    pt_open(60, 200);
    for (int s = 0; s < 3; s++) {
        struct layout_out lo;
        struct ui_rect r[5];
        layout_compute(sizes[s][0], sizes[s][1], items, 5, 0, &lo, r);
        for (int d = 0; d < 3; d++)
            for (int k = 0; k < 4; k++) { /* not the events list: no device rows */
                pt_devices(devs[d]);
                cr_assert_gt(r[k].h, 0, "%s hidden at %dx%d", ops[k]->name, sizes[s][1],
                             sizes[s][0]);
                struct panel p = {0};
                WINDOW *w = pt_draw(ops[k], &p, r[k].h, r[k].w);
                unsigned named = pt_devices_named(w, devs[d], k == 0), more = pt_more(w);
                char all[4096] = "";
                for (int y = 0; y < r[k].h; y++)
                    snprintf(all + strlen(all), sizeof(all) - strlen(all), "|%s\n", pt_row(w, y));
                cr_assert_geq(named, 1, "%s %dx%d, %u devices: none named\n%s", ops[k]->name,
                              sizes[s][1], sizes[s][0], devs[d], all);
                cr_assert_eq(named + more, devs[d], "%s %dx%d, %u devices: %u named, +%u more\n%s",
                             ops[k]->name, sizes[s][1], sizes[s][0], devs[d], named, more, all);
                delwin(w);
                panel_fini(&p);
                pt_n_panels = 0;
            }
    }
    pt_close();
}

/* ---- watched PyTorch jobs: two gloo ranks on the CPU ---- */

/* Ranks 0 and 1 of a world of 2, both their device 0, with no allocator lines (a CPU job), the
 * job's rates told. */
static void pt_ranks(void) {
    pt_devices(2);
    pt_run.watch = true;
    snprintf(pt_run.dev_name, sizeof(pt_run.dev_name), "CPU");
    pt_frame.tele = NULL;
    pt_frame.tele_train = -1;
    for (unsigned k = 0; k < 2; k++) {
        pt_run.devices[k] = 0;
        pt_run.ranks[k] = (struct run_rank){.valid = true,
                                            .rank = (int32_t)k,
                                            .local_rank = (int32_t)k,
                                            .world_size = 2,
                                            .pid = 4242 + (int32_t)k,
                                            .open = true};
        snprintf(pt_run.ranks[k].name, sizeof(pt_run.ranks[k].name), "train_ddp");
        snprintf(pt_run.ranks[k].group_backend, sizeof(pt_run.ranks[k].group_backend), "gloo");
        struct engine_snap *s = &pt_devs[k];
        memset(&s->mem, 0, sizeof(s->mem));
        memset(&s->layout, 0, sizeof(s->layout));
        s->has_vpoc_peak = false;
        s->dev.mem_valid = false;
        snprintf(s->dev.name, sizeof(s->dev.name), "CPU");
        snprintf(s->backend, sizeof(s->backend), "pytorch-cpu");
        s->job = true;
        s->na = ENGINE_NA_CHUNK | ENGINE_NA_MEM;
        s->samples_per_s = 2808;
        s->steps_per_s = 43.9;
        s->step_ms = k ? 22.4 : 21.3;
    }
}

/* The rows of w as one text, for messages. */
static const char *pt_all(WINDOW *w) {
    static char all[8192];
    all[0] = '\0';
    for (int y = 0; y < getmaxy(w); y++)
        snprintf(all + strlen(all), sizeof(all) - strlen(all), "|%s\n", pt_row(w, y));
    return all;
}

Test(panels, watched_cpu_ranks_have_no_pool_numbers) {
    pt_open(40, 120);
    pt_ranks();
    struct panel p = {0};
    cr_assert_eq(panel_memory_ops.rows(&p, &pt_frame, 120), 3, "the title, n/a and why");
    WINDOW *w = pt_draw(&panel_memory_ops, &p, 3, 80);
    cr_assert(pt_has(w, "allocated n/a  reserved n/a  largest free n/a  frag n/a"), "%s",
              pt_all(w));
    cr_assert(pt_has(w, "no allocator lines: a CPU job has no caching allocator"), "%s", pt_all(w));
    cr_assert_not(pt_has(w, "0 B"), "%s", pt_all(w));
    /* one of the two with allocator lines: the grid, n/a in the other's cell */
    pt_devs[1].na &= ~(uint32_t)ENGINE_NA_MEM;
    pt_devs[1].mem.reserved_bytes = 2u << 20;
    w = pt_draw(&panel_memory_ops, &p, 5, 80);
    cr_assert(pt_has(w, "rank 0/2* alloc n/a res n/a"), "%s", pt_all(w));
    cr_assert(pt_has(w, "rank 1/2  alloc 0 B res 2.0 MiB"), "%s", pt_all(w));
    cr_assert(pt_has(w, "free n/a  frag n/a"), "%s", pt_all(w));
    /* the GPU panel's training line: pools and the runtime n/a, each once */
    pt_devs[1].na |= ENGINE_NA_MEM;
    w = pt_draw(&panel_gpu_ops, &p, 3, 120);
    cr_assert(pt_has(w, "2 jobs training (rank 0, rank 1): pools n/a (no allocator lines)"), "%s",
              pt_all(w));
    pt_frame.n_snaps = 1;
    w = pt_draw(&panel_gpu_ops, &p, 3, 120);
    cr_assert(pt_has(w, "training: pool n/a, runtime n/a on CPU"), "%s", pt_all(w));
    cr_assert_not(pt_has(w, "n/a/n/a"), "%s", pt_all(w));
    pt_close();
}

Test(panels, watched_ranks_each_have_a_row) {
    pt_open(40, 120);
    pt_ranks();
    struct panel p = {0};
    /* the sync panel at its least: both ranks' lines before the skew line */
    WINDOW *w = pt_draw(&panel_sync_ops, &p, 4, 80);
    cr_assert(pt_has(w, "rank 0/2* step 21.3ms"), "%s", pt_all(w));
    cr_assert(pt_has(w, "rank 1/2  step 22.4ms"), "%s", pt_all(w));
    cr_assert_not(pt_has(w, "dev0"), "%s", pt_all(w));
    w = pt_draw(&panel_sync_ops, &p, 8, 120);
    cr_assert(pt_has(w, "step skew 1.10ms: rank 1 slowest (22.40ms vs 21.30ms on rank 0)"), "%s",
              pt_all(w));
    cr_assert(pt_has(w, "pid 4243  gloo"), "%s", pt_all(w));
    /* the timeline: a row each, named */
    w = pt_draw(&panel_timeline_ops, &p, 10, 120);
    cr_assert(pt_has(w, " rank 0/2*  "), "%s", pt_all(w));
    cr_assert(pt_has(w, " rank 1/2   "), "%s", pt_all(w));
    cr_assert(pt_has(w, "rank 0/2  last"), "%s", pt_all(w));
    cr_assert_not(pt_has(w, "dev0"), "%s", pt_all(w));
    pt_close();
}

/* The header's loss line: the loop of ours as it always was; a job with what it reported,
 * n/a for what it did not, no chunk nor VPOC of its own. */
Test(panels, header_rates_of_the_loop_and_of_a_job) {
    struct engine_snap s = {
        .has_val = true, .val_loss = 0.8586, .chunk_bars = 250, .samples_per_s = 202403};
    char buf[192];
    ui_header_rates(&s, buf, sizeof(buf));
    cr_assert_str_eq(buf, " val 0.8586  chunk 250 bars  samples/s 202403");
    s.chunk_bars = 0;
    s.samples_per_s = 0; /* a loop of ours that measured 0 */
    ui_header_rates(&s, buf, sizeof(buf));
    cr_assert_str_eq(buf, " val 0.8586  chunk whole session  samples/s 0");
    struct engine_snap j = {
        .job = true, .na = ENGINE_NA_CHUNK | ENGINE_NA_SAMPLES | ENGINE_NA_STEPS | ENGINE_NA_MEM};
    ui_header_rates(&j, buf, sizeof(buf));
    cr_assert_str_eq(buf, " val n/a  samples/s n/a  steps/s n/a");
    j.na = ENGINE_NA_CHUNK;
    j.samples_per_s = 2808;
    j.steps_per_s = 43.87;
    ui_header_rates(&j, buf, sizeof(buf));
    cr_assert_str_eq(buf, " val n/a  samples/s 2808  steps/s 43.9");
    j.na = 0; /* a job that told its chunk */
    j.chunk_bars = 500;
    ui_header_rates(&j, buf, sizeof(buf));
    cr_assert_str_eq(buf, " val n/a  chunk 500 bars  samples/s 2808  steps/s 43.9");
}

Test(panels, header_progress_of_a_job_without_a_length) {
    struct engine_snap j = {.job = true};
    char buf[96];
    const char *why = ui_header_job_at(&j, buf, sizeof(buf));
    cr_assert_str_eq(buf, "no step yet");
    cr_assert_str_eq(why, "no ETA: the job did not tell connect(epochs=, steps_per_epoch=)");
    j.epoch = 2;
    j.step = 7;
    ui_header_job_at(&j, buf, sizeof(buf));
    cr_assert_str_eq(buf, "epoch 2  step 7");
    j.epochs = 3;
    why = ui_header_job_at(&j, buf, sizeof(buf));
    cr_assert_str_eq(buf, "epoch 2/3  step 7");
    cr_assert_str_eq(why, "no ETA: the job did not tell connect(steps_per_epoch=)");
}

/* The header's state: a call past the timeout on any device is HUNG even when the first
 * device has finished (a watched job's rank 0 left while rank 1 hangs); a watch with no job
 * says WATCHING. */
Test(panels, header_state_hung_before_finished_and_watching) {
    struct engine_snap done = {.state = ENGINE_FINISHED}, idle = {.state = ENGINE_STARTING};
    struct run_info run = {.watch = true};
    struct ui_frame f = {.now_ns = 40000000000ull,
                         .snap = &done,
                         .run = &run,
                         .sync_slow_ns = 1000000000ull,
                         .sync_timeout_ns = 5000000000ull};
    cr_assert_str_eq(ui_frame_state(&f, false), "FINISHED");
    f.has_oldest = true;
    f.oldest.start_ns = 30000000000ull; /* 10 s in flight on another device */
    cr_assert_str_eq(ui_frame_state(&f, false), "HUNG");
    f.oldest.start_ns = 38000000000ull; /* 2 s: slow, not hung */
    cr_assert_str_eq(ui_frame_state(&f, false), "FINISHED");
    f.has_oldest = false;
    f.snap = &idle;
    snprintf(run.idle, sizeof(run.idle), "no job attached");
    cr_assert_str_eq(ui_frame_state(&f, false), "WATCHING");
    run.idle[0] = '\0';
    cr_assert_str_eq(ui_frame_state(&f, false), "STARTING");
}

/* Text from a kernel log or a remote agent cannot steer the terminal: controls, C1 controls
 * and the direction overrides each become '?', everything else (UTF-8 included) stays. */
Test(panels, scrub_controls_and_direction_marks) {
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"plain text", "plain text"},
        {"esc\x1b[2Jclear", "esc?[2Jclear"},
        {"bell\x07 del\x7f", "bell? del?"},
        {"c1 \xc2\23331m", "c1 ?31m"}, /* \233: the CSI byte 0x9b */
        {"rlo \xe2\x80\xaegnp.exe", "rlo ?gnp.exe"},
        {"isolates \xe2\x81\xa6x\xe2\x81\xa9", "isolates ?x?"},
        {"marks \xe2\x80\x8e\xe2\x80\x8f", "marks ??"},
        {"utf8 \xc3\xa9 \xe2\x80\x94 \xe2\x96\x88", "utf8 \xc3\xa9 \xe2\x80\x94 \xe2\x96\x88"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        char out[64];
        int n = w_scrub(cases[k].in, (int)strlen(cases[k].in), out);
        cr_assert_str_eq(out, cases[k].want, "case %zu", k);
        cr_assert_eq(n, (int)strlen(cases[k].want));
    }
}
