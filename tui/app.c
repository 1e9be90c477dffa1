/* The dashboard: one screen over the engine's snapshot and event stream. The UI thread never
 * calls a compute API; it polls the event ring and stdin and redraws at the refresh rate. */
#include "backend/core/afile.h"
#include "backend/core/mono.h"
#include "tui/app_model.h"
#include "tui/cli.h"
#include "tui/theme.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define APP_TIMELINE_NS (10ull * 1000000000ull) /* the timeline shows the last 10 s */

struct app {
    const struct cli_train_opts *o;
    struct engine *e;
    struct evring *ring;
    struct app_model model;
    const struct engine_snap *s;
    int chunk;                          /* what the header shows: the last value sent */
    bool quitting, color, tty_in, utf8; /* utf8: line drawing is safe */
    struct theme theme;
    bool leave_now; /* a second q: leave without waiting for the engine */
    char host[64];
};

static volatile sig_atomic_t app_sigint;

static void app_on_signal(int sig) {
    (void)sig;
    app_sigint = 1;
}

/* One colour pair per theme role; colours beyond the terminal's range fold onto the basic 8. */
static void app_colors(struct app *a) {
    a->color = has_colors() && !getenv("NO_COLOR");
    if (!a->color)
        return;
    start_color();
    use_default_colors();
    for (int r = 0; r < THEME_ROLE_COUNT; r++) {
        short fg = a->theme.c[r].fg, bg = a->theme.c[r].bg;
        if (fg >= COLORS)
            fg = (short)(fg % 8);
        if (bg >= COLORS)
            bg = (short)(bg % 8);
        init_pair((short)(r + 1), fg, bg);
    }
}

/* Turn a role's colour (and boldness) on or off; monochrome keeps only bold. */
static void app_attr(struct app *a, enum theme_role r, bool on) {
    attr_t at = a->theme.c[r].bold ? A_BOLD : A_NORMAL;
    if (a->color)
        at |= COLOR_PAIR(r + 1);
    if (on)
        attron(at);
    else
        attroff(at);
}

static void app_title(struct app *a, int y, const char *title) {
    app_attr(a, THEME_TITLE, true);
    mvhline(y, 0, a->utf8 ? ACS_HLINE : '-', COLS);
    mvprintw(y, 2, " %s ", title);
    app_attr(a, THEME_TITLE, false);
}

static const char *app_state_label(const struct app *a) {
    if (a->quitting && a->s->state < ENGINE_FINISHED)
        return "STOPPING";
    switch (a->s->state) {
    case ENGINE_PAUSED:
        return "PAUSED";
    case ENGINE_FINISHED:
        return "FINISHED";
    case ENGINE_FAILED:
        return "FAILED";
    case ENGINE_STARTING:
        return "STARTING";
    default:
        return "RUNNING";
    }
}

static int app_draw_header(struct app *a, int y) {
    const struct engine_snap *s = a->s;
    char el[16], eta[16], chunk[24];
    double elapsed = (double)(mono_now_ns() - s->start_ns) / 1e9;
    app_fmt_hms(el, sizeof(el), elapsed);
    attron(A_BOLD);
    mvprintw(y, 0, "ringside");
    attroff(A_BOLD);
    printw("  %s  backend %s  %s", a->host, s->backend, s->dev.name);
    int st_col = COLS - 22 > 0 ? COLS - 22 : 0;
    enum theme_role st = s->state == ENGINE_FAILED   ? THEME_ERROR
                         : s->state == ENGINE_PAUSED ? THEME_WARN
                                                     : THEME_OK;
    app_attr(a, st, true);
    mvprintw(y, st_col, " %-8s", app_state_label(a));
    app_attr(a, st, false);
    printw(" %s", el);
    double frac = s->total_steps > 0 ? (double)s->step / (double)s->total_steps : 0;
    if (frac > 1)
        frac = 1;
    double rate = elapsed > 0 && frac > 0 ? elapsed / frac : 0;
    app_fmt_hms(eta, sizeof(eta), rate > 0 ? rate - elapsed : 0);
    if (a->chunk > 0)
        snprintf(chunk, sizeof(chunk), "%d bars", a->chunk);
    else
        snprintf(chunk, sizeof(chunk), "whole session");
    mvprintw(y + 1, 0, "epoch %d/%d  step %lld/%lld  ", s->epoch, s->epochs, (long long)s->step,
             (long long)s->total_steps);
    int bar_w = COLS / 5;
    addch('[');
    for (int i = 0; i < bar_w; i++)
        addch(i < (int)(frac * bar_w) ? '#' : '.');
    printw("] %3.0f%%  ETA %s", frac * 100.0, eta);
    char loss[24] = "n/a", val[24] = "n/a";
    if (s->has_loss)
        snprintf(loss, sizeof(loss), "%.4f", s->loss);
    if (s->has_val)
        snprintf(val, sizeof(val), "%.4f", s->val_loss);
    mvprintw(y + 2, 0, "loss %s  val %s  VPOC %zu/%zu sessions  chunk %s  samples/s %.0f", loss,
             val, s->sessions_done, s->sessions, chunk, s->samples_per_s);
    return y + 3;
}

/* Pool numbers and one row per segment: used cells vs free cells, to scale. */
static int app_draw_memory(struct app *a, int y, int rows) {
    const struct mem_stats *m = &a->s->mem;
    char al[24], re[24], lf[24];
    app_fmt_bytes(al, sizeof(al), m->allocated_bytes);
    app_fmt_bytes(re, sizeof(re), m->reserved_bytes);
    app_fmt_bytes(lf, sizeof(lf), m->largest_free_bytes);
    app_title(a, y++, "memory pool");
    mvprintw(y++, 0,
             "allocated %s  reserved %s  largest free %s  frag %.0f%%  free blocks %u  "
             "segments %u",
             al, re, lf, m->frag * 100.0, m->free_blocks, m->segments);
    const struct mem_layout *l = &a->s->layout;
    int w = COLS - 12;
    for (uint32_t i = 0; i < l->n_listed && rows > 0 && w > 4; i++, rows--, y++) {
        char sz[24];
        app_fmt_bytes(sz, sizeof(sz), l->seg[i].size_bytes);
        mvprintw(y, 0, "%10s ", sz);
        for (int x = 0; x < w; x++) {
            uint64_t off = l->seg[i].size_bytes * (uint64_t)x / (uint64_t)w;
            bool used = false;
            for (uint32_t b = 0; b < l->seg[i].n_blocks; b++) {
                const struct mem_block_info *bl = &l->seg[i].blocks[b];
                if (off >= bl->offset_bytes && off < bl->offset_bytes + bl->size_bytes)
                    used = bl->allocated;
            }
            app_attr(a, used ? THEME_SEG_USED : THEME_SEG_FREE, true);
            addch(used ? '#' : '.');
            app_attr(a, used ? THEME_SEG_USED : THEME_SEG_FREE, false);
        }
    }
    return y;
}

/* One row: the phase at each column over the last 10 s, and a legend of what is current. */
static int app_draw_timeline(struct app *a, int y) {
    app_title(a, y++, "phases (last 10 s)");
    uint64_t now = mono_now_ns();
    static enum ev_phase_id cells[1024];
    int w = COLS < 1024 ? COLS : 1024;
    app_model_paint(&a->model, now - APP_TIMELINE_NS, now, w, cells);
    for (int x = 0; x < w; x++) {
        if (cells[x] == PHASE_COUNT) {
            mvaddch(y, x, ' ');
            continue;
        }
        app_attr(a, THEME_PHASE0 + cells[x], true);
        mvaddch(y, x, (chtype)ev_phase_name(cells[x])[0]);
        app_attr(a, THEME_PHASE0 + cells[x], false);
    }
    y++;
    enum ev_phase_id cur = a->s->phase;
    mvprintw(y++, 0, "now: %-10s  -10s%*s", cur < PHASE_COUNT ? ev_phase_name(cur) : "idle",
             COLS - 24 > 0 ? COLS - 24 : 0, "now");
    return y;
}

static int app_draw_sync(struct app *a, int y) {
    app_title(a, y++, "synchronize latency");
    mvprintw(y++, 0, "%-7s %8s %9s %9s %9s %9s", "op", "count", "p50", "p90", "p99", "max");
    for (unsigned op = 0; op < SYNC_OP_COUNT; op++) {
        const struct trace_sync_summary *s = &a->s->sync[op];
        char p50[16], p90[16], p99[16], mx[16];
        app_fmt_ns(p50, sizeof(p50), s->p50_ns);
        app_fmt_ns(p90, sizeof(p90), s->p90_ns);
        app_fmt_ns(p99, sizeof(p99), s->p99_ns);
        app_fmt_ns(mx, sizeof(mx), s->max_ns);
        mvprintw(y++, 0, "%-7s %8llu %9s %9s %9s %9s", ev_sync_op_name(op),
                 (unsigned long long)s->count, p50, p90, p99, mx);
    }
    struct trace_inflight in;
    if (trace_inflight(engine_trace(a->e), (unsigned)a->o->conf.device, &in)) {
        char age[16];
        app_fmt_ns(age, sizeof(age), mono_now_ns() - in.start_ns);
        mvprintw(y++, 0, "in flight: %s sync in %s for %s", ev_sync_op_name(in.op),
                 ev_phase_name(in.phase), age);
    } else {
        mvprintw(y++, 0, "in flight: none");
    }
    return y;
}

static void app_draw_events(struct app *a, int y, int last) {
    app_title(a, y++, "events (newest first)");
    for (size_t k = 0; y < last; k++, y++) {
        const struct app_line *l = app_model_line(&a->model, k);
        if (!l)
            break;
        enum theme_role role = l->severity == SEV_ERROR     ? THEME_ERROR
                               : l->severity == SEV_WARNING ? THEME_WARN
                                                            : THEME_TEXT;
        app_attr(a, role, true);
        mvprintw(y, 0, "%.*s", COLS, l->text);
        app_attr(a, role, false);
    }
}

static void app_draw(struct app *a) {
    erase();
    if (LINES < 16 || COLS < 60) {
        mvprintw(LINES / 2, 0, "terminal too small (%dx%d): need 60x16", COLS, LINES);
        refresh();
        return;
    }
    int y = app_draw_header(a, 0);
    int seg_rows = LINES >= 40 ? 6 : 2;
    y = app_draw_memory(a, y, seg_rows);
    y = app_draw_timeline(a, y);
    y = app_draw_sync(a, y);
    app_draw_events(a, y, LINES - 1);
    app_attr(a, THEME_FOOTER, true);
    if (!a->color)
        attron(A_REVERSE);
    mvprintw(LINES - 1, 0, "%-*.*s", COLS, COLS,
             a->quitting ? " stopping: finishing the step and writing a checkpoint (q again: "
                           "leave now)"
                         : " q quit  p pause/resume  +/- VPOC chunk  c safe cleanup");
    attroff(A_REVERSE);
    app_attr(a, THEME_FOOTER, false);
    refresh();
}

static void app_key(struct app *a, int ch) {
    switch (ch) {
    case 'q':
    case 'Q':
        if (a->quitting || engine_done(a->e)) {
            a->quitting = true;
            a->leave_now = true;
            return;
        }
        a->quitting = true;
        engine_command(a->e, CMD_STOP, 0);
        return;
    case 'p':
        engine_command(a->e, a->s->state == ENGINE_PAUSED ? CMD_RESUME : CMD_PAUSE, 0);
        return;
    case '+':
    case '=':
    case '-':
        a->chunk = app_chunk_step(a->chunk, ch == '-' ? -1 : 1);
        engine_command(a->e, CMD_SET_CHUNK, a->chunk);
        return;
    case 'c':
        engine_command(a->e, CMD_CLEANUP, 0);
        return;
    default:
        return;
    }
}

static void app_drain(struct app *a) {
    static struct ev evs[512];
    size_t n;
    while ((n = evring_drain(a->ring, evs, 512)) > 0)
        for (size_t i = 0; i < n; i++)
            app_model_add(&a->model, &evs[i]);
}

/* Wait until the next frame is due, draining events as they come; a key redraws at once. */
static void app_wait(struct app *a, uint64_t deadline_ns) {
    for (uint64_t now = mono_now_ns(); now < deadline_ns; now = mono_now_ns()) {
        /* a stdin that is not a terminal (a script, /dev/null) is not polled: EOF would spin */
        struct pollfd pf[2] = {{a->tty_in ? 0 : -1, POLLIN, 0},
                               {evring_wake_fd(a->ring), POLLIN, 0}};
        int ms = (int)((deadline_ns - now + 999999) / 1000000);
        if (poll(pf, 2, ms) < 0 && app_sigint)
            return;
        if (pf[1].revents & POLLIN)
            app_drain(a);
        if (pf[0].revents & (POLLIN | POLLHUP)) {
            int ch;
            while ((ch = getch()) != ERR)
                app_key(a, ch);
            return;
        }
        if (a->quitting && engine_done(a->e))
            return;
    }
}

/* Returns when the user quits or --frames is reached and the engine has stopped. */
static void app_loop(struct app *a) {
    int frames = 0;
    for (;;) {
        app_drain(a);
        a->s = engine_snap_read(a->e, NULL);
        app_draw(a);
        if (a->o->frames && ++frames == a->o->frames) {
            engine_command(a->e, CMD_STOP, 0);
            a->quitting = true;
        }
        if (app_sigint && !a->quitting) {
            app_sigint = 0;
            app_key(a, 'q');
        }
        if ((a->quitting && engine_done(a->e)) || a->leave_now)
            return;
        app_wait(a, mono_now_ns() + (uint64_t)a->o->delay_ds * 100000000ull);
    }
}

/* While curses owns the terminal, stderr goes to a session log beside the checkpoints. */
static int app_redirect_stderr(const struct cli_train_opts *o, char *log, size_t loglen) {
    char err[256];
    if (afile_mkdirs(o->conf.output_dir, err, sizeof(err)) != 0)
        return -1;
    snprintf(log, loglen, "%s/session.log", o->conf.output_dir);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    int saved = dup(2);
    dup2(fd, 2);
    close(fd);
    return saved;
}

/* --theme NAME|PATH must load; without it the default file is used when found, else the
 * compiled-in default. */
static int app_theme(const struct cli_train_opts *o, struct theme *t, char *err, size_t errlen) {
    theme_default(t);
    char path[ENGINE_PATH_MAX + 64];
    const char *arg = o->theme[0] ? o->theme : "default";
    int rc = theme_resolve(arg, path, sizeof(path), err, errlen);
    if (rc != 0)
        return o->theme[0] ? rc : 0;
    return theme_load_json(path, t, err, errlen);
}

int app_run(const struct cli_train_opts *o) {
    static struct app a;
    memset(&a, 0, sizeof(a));
    a.o = o;
    a.chunk = o->conf.chunk_bars;
    a.tty_in = isatty(0);
    gethostname(a.host, sizeof(a.host) - 1);
    char err[1024], log[ENGINE_PATH_MAX + 32];
    if (app_theme(o, &a.theme, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringside: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    if (!isatty(1) && !o->frames) {
        fprintf(stderr, "ringside: stdout is not a terminal; use 'ringside train --headless' "
                        "for JSON lines\n");
        return CLI_EXIT_USAGE;
    }

    if (evring_create(&a.ring, 1u << 16) != 0)
        return 1;
    int rc = engine_create(&a.e, &o->conf, a.ring, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "ringside: %s\n", err);
        evring_destroy(a.ring);
        return rc == -ENOMEM ? 1 : CLI_EXIT_USAGE;
    }
    setlocale(LC_CTYPE, "");
    a.utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
    int saved_err = app_redirect_stderr(o, log, sizeof(log));
    signal(SIGINT, app_on_signal);
    signal(SIGTERM, app_on_signal);
    if (!newterm(NULL, stdout, stdin)) {
        if (saved_err >= 0)
            dup2(saved_err, 2);
        fprintf(stderr, "ringside: cannot initialise the terminal (TERM=%s)\n",
                getenv("TERM") ? getenv("TERM") : "");
        engine_destroy(a.e);
        evring_destroy(a.ring);
        return CLI_EXIT_USAGE;
    }
    cbreak();
    noecho();
    nodelay(stdscr, TRUE);
    keypad(stdscr, TRUE);
    curs_set(0);
    app_colors(&a);
    engine_start(a.e);
    app_loop(&a);
    endwin();
    if (saved_err >= 0) {
        dup2(saved_err, 2);
        close(saved_err);
    }
    if (!engine_done(a.e)) {
        fprintf(stderr, "ringside: the training thread did not stop; leaving without waiting\n");
        _exit(3);
    }
    struct engine_result res;
    engine_join(a.e, &res);
    if (res.state == ENGINE_FAILED)
        fprintf(stderr, "ringside: training failed: %s\n", res.error);
    else if (res.checkpoint[0])
        fprintf(stderr, "ringside: %s after %d epochs, checkpoint %s\n",
                res.stopped ? "stopped" : "finished", res.epochs_done, res.checkpoint);
    engine_destroy(a.e);
    evring_destroy(a.ring);
    return res.state == ENGINE_FAILED ? 1 : 0;
}
