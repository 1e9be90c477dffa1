/* Benchmark (not a test): CPU time to render the dashboard's five panels at 200x60 into an
 * off-screen curses screen, over the model of a long, busy run, and the UI thread's CPU per
 * frame with the ingest of the events the CPU backend's training emits between two frames. */
#include "tui/dashboard/panel.h"
#include "tui/view/layout.h"

#include <curses.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BD_ROWS           60
#define BD_COLS           200
#define BD_PANELS         5
#define BD_FRAMES         500
#define BD_FRAME_NS       500000000ull /* the default refresh, -d 5 */
#define BD_STEP_NS        800000ull    /* one training step of the CPU backend */
#define BD_STEPS_PER_EPO  81
#define BD_GOAL_RENDER_MS 1.0 /* median render at 200x60 */
#define BD_GOAL_FRAME_MS  2.0 /* median UI thread CPU a frame: ingest + render */

static const struct panel_ops *const bd_ops[BD_PANELS] = {
    &panel_gpu_ops, &panel_memory_ops, &panel_timeline_ops, &panel_sync_ops, &panel_events_ops};

/* Everything a frame reads; static, the model is a few MiB. */
static struct ui_model bd_model;
static struct engine_snap bd_snap;
static struct run_info bd_run;
static struct theme bd_theme;
static struct ui_frame bd_frame;
static struct panel bd_panels[BD_PANELS];
static uint64_t bd_now_ns = 1000000000ull, bd_step;
static uint32_t bd_seq, bd_rng = 12345;

static uint32_t bd_rand(void) {
    bd_rng = bd_rng * 1664525u + 1013904223u;
    return bd_rng >> 8;
}

static void bd_add(struct ev *e) {
    e->seq = ++bd_seq;
    ui_model_add(&bd_model, e);
}

static void bd_phase(enum ev_phase_id ph, uint64_t start, uint64_t end, int32_t chunk) {
    struct ev e = {.t_ns = end, .kind = EV_PHASE, .dev = 0};
    e.u.phase = (struct ev_phase){.phase = (uint8_t)ph,
                                  .epoch = (int32_t)(bd_step / BD_STEPS_PER_EPO) + 1,
                                  .step = chunk < 0 ? (int64_t)bd_step : -1,
                                  .chunk = chunk,
                                  .start_ns = start,
                                  .end_ns = end};
    bd_add(&e);
}

static void bd_sync(enum ev_sync_op op, uint64_t start, uint64_t dur) {
    struct ev e = {.t_ns = start + dur, .kind = EV_SYNC, .dev = 0};
    e.u.sync = (struct ev_sync){.op = (uint8_t)op, .start_ns = start, .dur_ns = dur};
    bd_add(&e);
}

static void bd_text(enum ev_kind kind, enum ev_severity sev, const char *text) {
    struct ev e = {.t_ns = bd_now_ns, .kind = (uint16_t)kind, .dev = 0};
    if (kind == EV_COMMAND) {
        e.u.command.cmd = CMD_CLEANUP;
        snprintf(e.u.command.text, sizeof(e.u.command.text), "%s", text);
    } else {
        e.u.text.severity = (uint8_t)sev;
        snprintf(e.u.text.text, sizeof(e.u.text.text), "%s", text);
    }
    bd_add(&e);
}

/* The end of an epoch: eval, checkpoint, the next epoch's VPOC chunks, a metric, a mem sample
 * and a log line, as the live engine emits them. */
static void bd_epoch_end(void) {
    uint64_t t = bd_now_ns;
    bd_phase(PHASE_EVAL, t, t + 3000000, -1);
    bd_phase(PHASE_CHECKPOINT, t + 3000000, t + 7000000, -1);
    for (int c = 0; c < 56; c++)
        bd_phase(PHASE_VPOC, t + 7000000 + (uint64_t)c * 5000, t + 7005000 + (uint64_t)c * 5000, c);
    struct ev m = {.t_ns = t, .kind = EV_METRIC, .dev = EV_DEV_NONE};
    m.u.metric = (struct ev_metric){.epoch = (int32_t)(bd_step / BD_STEPS_PER_EPO),
                                    .loss = 0.7 + (bd_rand() % 1000) / 10000.0,
                                    .val_loss = 0.9,
                                    .has_val = true,
                                    .samples_per_s = 450000};
    bd_add(&m);
    struct ev mem = {.t_ns = t, .kind = EV_MEM, .dev = 0};
    const struct mem_stats *ms = &bd_snap.mem;
    mem.u.mem = (struct ev_mem){.allocated_bytes = ms->allocated_bytes + bd_rand() % (1u << 20),
                                .reserved_bytes = ms->reserved_bytes,
                                .largest_free_bytes = ms->largest_free_bytes,
                                .total_free_bytes = ms->total_free_bytes,
                                .free_blocks = ms->free_blocks,
                                .segments = ms->segments,
                                .frag = ms->frag};
    bd_add(&mem);
    char line[128];
    snprintf(line, sizeof(line), "checkpoint written: /tmp/TRAINING/vpoc_mlp.rsmodel (epoch %llu)",
             (unsigned long long)(bd_step / BD_STEPS_PER_EPO));
    bd_text(EV_LOG, SEV_INFO, line);
    bd_now_ns += 8000000;
}

static void bd_phase_sum(enum ev_phase_id ph, uint64_t start, uint64_t end, uint64_t busy,
                         uint32_t count) {
    struct ev e = {.t_ns = end, .kind = EV_PHASE, .dev = 0};
    e.u.phase = (struct ev_phase){.phase = (uint8_t)ph,
                                  .epoch = (int32_t)(bd_step / BD_STEPS_PER_EPO) + 1,
                                  .step = (int64_t)bd_step,
                                  .chunk = -1,
                                  .count = count,
                                  .start_ns = start,
                                  .end_ns = end,
                                  .busy_ns = busy};
    bd_add(&e);
}

#define BD_WINDOW 16 /* steps between the loop's synchronizes */

/* A window of training steps as the loop reports it after its synchronize: h2d, forward,
 * backward and optimizer, each summed over the window's steps, then the host's sync wait. */
static void bd_train_step(void) {
    uint64_t t = bd_now_ns, q = BD_STEP_NS / 8;
    bd_now_ns += BD_STEP_NS;
    bool epoch_end = ++bd_step % BD_STEPS_PER_EPO == 0;
    if (bd_step % BD_WINDOW != 0 && !epoch_end)
        return;
    uint32_t n = (uint32_t)((bd_step - 1) % BD_WINDOW + 1);
    uint64_t w0 = t + BD_STEP_NS - (uint64_t)n * BD_STEP_NS, span = (uint64_t)n * BD_STEP_NS;
    bd_phase_sum(PHASE_H2D, w0, w0 + span - 7 * q - q / 4 * 3, (uint64_t)n * (q / 4), n);
    bd_phase_sum(PHASE_FORWARD, w0 + q / 4, w0 + span - 5 * q, (uint64_t)n * (3 * q - q / 4), n);
    bd_phase_sum(PHASE_BACKWARD, w0 + 3 * q, w0 + span - q, (uint64_t)n * 4 * q, n);
    bd_phase_sum(PHASE_OPTIMIZER, w0 + 7 * q, w0 + span, (uint64_t)n * q, n);
    bd_phase(PHASE_SYNC, w0 + q / 4, w0 + span, -1);
    bd_sync(SYNC_OP_STREAM, w0 + q / 4, span - q / 4 + bd_rand() % 200000);
    bd_sync(SYNC_OP_COPY, w0, 5000 + bd_rand() % 50000);
    if (epoch_end)
        bd_epoch_end();
}

/* Advance the run by span_ns of training. */
static void bd_run_for(uint64_t span_ns) {
    uint64_t end = bd_now_ns + span_ns;
    while (bd_now_ns < end)
        bd_train_step();
    bd_snap.step = (int64_t)bd_step;
    bd_snap.epoch = (int32_t)(bd_step / BD_STEPS_PER_EPO) + 1;
    bd_frame.now_ns = bd_now_ns;
}

/* A pool of 24 segments with a mix of used and free blocks, as a fragmented run has. */
static void bd_layout(struct mem_layout *l) {
    l->n_segments = l->n_listed = 24;
    for (uint32_t s = 0; s < l->n_listed; s++) {
        uint64_t size = s < 8 ? 20u << 20 : 2u << 20, off = 0;
        l->seg[s].size_bytes = size;
        l->seg[s].small_pool = s >= 8;
        uint32_t n = 4 + s % 20;
        for (uint32_t b = 0; b < n; b++) {
            uint64_t len = b + 1 == n ? size - off : size / n;
            l->seg[s].blocks[b] = (struct mem_block_info){off, len, (b + s) % 3 != 0};
            off += len;
        }
        l->seg[s].n_blocks = n;
    }
}

static void bd_snapshot(void) {
    bd_snap.state = ENGINE_RUNNING;
    bd_snap.phase = PHASE_BACKWARD;
    snprintf(bd_snap.backend, sizeof(bd_snap.backend), "cpu");
    snprintf(bd_snap.dev.name, sizeof(bd_snap.dev.name), "host CPU (16 cores, 1 MLP threads)");
    snprintf(bd_snap.dev.arch, sizeof(bd_snap.dev.arch), "x86_64");
    bd_snap.dev.mem_valid = true;
    bd_snap.dev.mem_total_bytes = 64ull << 30;
    bd_snap.dev.mem_free_bytes = 40ull << 30;
    bd_snap.chunk_bars = 500;
    bd_snap.epochs = 200;
    bd_snap.steps_per_epoch = BD_STEPS_PER_EPO;
    bd_snap.total_steps = 200 * BD_STEPS_PER_EPO;
    bd_snap.mem = (struct mem_stats){.allocated_bytes = 96u << 20,
                                     .reserved_bytes = 208u << 20,
                                     .largest_free_bytes = 18u << 20,
                                     .total_free_bytes = 112u << 20,
                                     .free_blocks = 61,
                                     .segments = 24,
                                     .frag = 0.84};
    bd_layout(&bd_snap.layout);
    for (int op = 0; op < SYNC_OP_COUNT; op++)
        bd_snap.sync[op] = (struct trace_sync_summary){.count = 20000u + (uint64_t)op,
                                                       .p50_ns = 450000,
                                                       .p90_ns = 560000,
                                                       .p99_ns = 3600000,
                                                       .max_ns = 12000000};
}

/* The frame, the run and a model that has seen ten minutes of training and some commands. */
static void bd_fixture(void) {
    ui_model_init(&bd_model);
    theme_default(&bd_theme);
    bd_run =
        (struct run_info){.host = "bench", .backend = "cpu", .n_devices = 1, .start_ns = bd_now_ns};
    snprintf(bd_run.dev_name, sizeof(bd_run.dev_name), "host CPU (16 cores, 1 MLP threads)");
    snprintf(bd_run.dev_arch, sizeof(bd_run.dev_arch), "x86_64");
    bd_snapshot();
    bd_frame = (struct ui_frame){.snap = &bd_snap,
                                 .model = &bd_model,
                                 .run = &bd_run,
                                 .theme = &bd_theme,
                                 .utf8 = true,
                                 .sync_slow_ns = 1000000000ull,
                                 .sync_timeout_ns = 30000000000ull,
                                 .window_ns = 10000000000ull,
                                 .chunk = 500,
                                 .source_status = ""};
    for (int k = 0; k < 120; k++) {
        bd_run_for(5000000000ull);
        bd_text(k % 10 ? EV_LOG : EV_ALERT, k % 7 ? SEV_INFO : SEV_WARNING,
                "sync p99 above 3 ms on dev 0 (stream)");
        if (k % 20 == 0)
            bd_text(EV_COMMAND, SEV_INFO,
                    "cleanup dev 0: sync 0.5 ms, empty_cache 0.1 ms released 2097152 bytes");
    }
}

static void bd_colors(void) {
    bd_frame.color = has_colors() && !getenv("NO_COLOR");
    if (!bd_frame.color)
        return;
    start_color();
    use_default_colors();
    for (int r = 0; r < THEME_ROLE_COUNT; r++)
        init_pair((short)(r + 1), theme_color_fold(bd_theme.c[r].fg, COLORS),
                  theme_color_fold(bd_theme.c[r].bg, COLORS));
}

/* The panels' windows at the sizes layout_compute gives for 200x60; 0 or -1. */
static int bd_windows(void) {
    struct layout_item items[BD_PANELS];
    struct ui_rect rects[BD_PANELS];
    struct layout_out lay;
    for (int k = 0; k < BD_PANELS; k++)
        items[k] = (struct layout_item){bd_ops[k]->min_h, bd_ops[k]->pref_h, bd_ops[k]->column,
                                        bd_ops[k]->grow, bd_ops[k]->extra};
    layout_compute(BD_ROWS, BD_COLS, items, BD_PANELS, 0, &lay, rects);
    for (int k = 0; k < BD_PANELS; k++) {
        struct ui_rect r = rects[k];
        if (panel_init(&bd_panels[k], bd_ops[k]) != 0)
            return -1;
        bd_panels[k].h = r.h;
        bd_panels[k].w = r.w;
        bd_panels[k].focused = k == 0;
        if (r.h == 0)
            continue;
        bd_panels[k].win = newwin(r.h, r.w, r.y, r.x);
        if (!bd_panels[k].win)
            return -1;
        printf("  %-9s %3dx%-3d at (%d,%d)\n", bd_ops[k]->name, r.w, r.h, r.x, r.y);
    }
    return 0;
}

/* The calling thread's CPU time: the UI thread's, as the dashboard would spend it. */
static double bd_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One frame as the app draws it: erase, draw and stage every panel, then one doupdate;
 * panel_ms[k] gets panel k's share (ms). */
static void bd_draw(double *panel_ms) {
    for (int k = 0; k < BD_PANELS; k++) {
        struct panel *p = &bd_panels[k];
        double t0 = bd_cpu_ns();
        if (p->win) {
            werase(p->win);
            p->ops->draw(p, &bd_frame);
            wnoutrefresh(p->win);
        }
        panel_ms[k] = (bd_cpu_ns() - t0) / 1e6;
    }
    doupdate();
}

static int bd_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts ms[0..n) and prints its median, p99, mean and max; returns the median. */
static double bd_report(const char *what, double *ms, int n) {
    qsort(ms, (size_t)n, sizeof(ms[0]), bd_cmp);
    double sum = 0;
    for (int k = 0; k < n; k++)
        sum += ms[k];
    printf("%-28s median %7.3f ms  p99 %7.3f ms  mean %7.3f ms  max %7.3f ms\n", what, ms[n / 2],
           ms[(n * 99) / 100], sum / n, ms[n - 1]);
    return ms[n / 2];
}

static void bd_goal(const char *what, double median_ms, double goal_ms) {
    printf("goal: %s median < %g ms: %.3f ms (%s)\n", what, goal_ms, median_ms,
           median_ms < goal_ms ? "met" : "NOT met");
}

/* frames frames: each ingests half a second of training, then renders. The series are
 * frames long: draw, ingest, whole frame, then one per panel. */
static void bd_measure(int frames) {
    enum { BD_DRAW, BD_INGEST, BD_FRAME, BD_SERIES = BD_FRAME + 1 + BD_PANELS };
    double *ms = calloc((size_t)frames * BD_SERIES, sizeof(double));
    if (!ms) {
        fprintf(stderr, "bench_dashboard: out of memory\n");
        exit(1);
    }
    for (int k = 0; k < frames; k++) {
        double panel_ms[BD_PANELS];
        double t0 = bd_cpu_ns();
        bd_run_for(BD_FRAME_NS);
        double t1 = bd_cpu_ns();
        bd_draw(panel_ms);
        double t2 = bd_cpu_ns();
        ms[BD_INGEST * frames + k] = (t1 - t0) / 1e6;
        ms[BD_DRAW * frames + k] = (t2 - t1) / 1e6;
        ms[BD_FRAME * frames + k] = (t2 - t0) / 1e6;
        for (int p = 0; p < BD_PANELS; p++)
            ms[(BD_FRAME + 1 + p) * frames + k] = panel_ms[p];
    }
    double draw = bd_report("render 5 panels + doupdate", ms + BD_DRAW * frames, frames);
    for (int p = 0; p < BD_PANELS; p++) {
        char what[32];
        snprintf(what, sizeof(what), "  panel %s", bd_ops[p]->name);
        bd_report(what, ms + (BD_FRAME + 1 + p) * frames, frames);
    }
    bd_report("ingest 0.5 s of events", ms + BD_INGEST * frames, frames);
    double frame = bd_report("UI thread CPU per frame", ms + BD_FRAME * frames, frames);
    bd_goal("render", draw, BD_GOAL_RENDER_MS);
    bd_goal("UI thread CPU per frame (ingest + render)", frame, BD_GOAL_FRAME_MS);
    free(ms);
}

int main(int argc, char **argv) {
    int frames = argc > 1 ? atoi(argv[1]) : BD_FRAMES;
    frames = frames > 0 ? frames : BD_FRAMES;
    setlocale(LC_ALL, "");
    FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
    const char *term =
        getenv("TERM") && strcmp(getenv("TERM"), "dumb") ? getenv("TERM") : "xterm-256color";
    SCREEN *scr = out && in ? newterm(term, out, in) : NULL;
    if (!scr) {
        fprintf(stderr, "bench_dashboard: cannot open a curses screen for TERM=%s\n", term);
        return 1;
    }
    resizeterm(BD_ROWS, BD_COLS);
    bd_fixture();
    bd_colors();
    printf("bench_dashboard: %dx%d, TERM=%s, colour %s, %zu phases %zu events in the model\n",
           BD_COLS, BD_ROWS, term, bd_frame.color ? "on" : "off", bd_model.phase_count,
           bd_model.event_count);
    int rc = bd_windows();
    if (rc == 0)
        bd_measure(frames);
    for (int k = 0; k < BD_PANELS; k++) {
        if (bd_panels[k].win)
            delwin(bd_panels[k].win);
        panel_fini(&bd_panels[k]);
    }
    endwin();
    delscreen(scr);
    fclose(out);
    fclose(in);
    return rc == 0 ? 0 : 1;
}
