/* The dashboard: the UI loop over a ui_source. The UI thread never calls a compute API: it
 * drains events, reads snapshots and redraws at the refresh rate; keys act within a frame. */
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "tui/dashboard/app_internal.h"
#include "tui/dashboard/app_signals.h"

#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const uint64_t app_zoom_ns[APP_ZOOMS] = {5e9, 10e9, 30e9, 60e9, 120e9, 300e9, 600e9, 1800e9};

static const struct panel_ops *const app_panel_table[APP_PANELS] = {
    &panel_gpu_ops,  &panel_memory_ops, &panel_timeline_ops,
    &panel_sync_ops, &panel_events_ops, &panel_loss_ops,
};

/* Events are drained at most every APP_DRAIN_NS (app_live sizes the live ring for it), and
 * every APP_DRAIN_RECORD_NS while recording (its ring then holds 3M events a second between
 * two drains: none drops). */
#define APP_DRAIN_NS        50000000ull
#define APP_DRAIN_RECORD_NS 5000000ull
#define APP_DRAIN_BATCH     256 /* events taken from the source at a time */

void app_notice(struct app *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->notice, sizeof(a->notice), fmt, ap);
    va_end(ap);
    a->notice_until_ns = mono_now_ns() + 4000000000ull;
}

/* One colour pair per theme role; colours beyond the terminal's range fold onto the nearest
 * it has. */
void app_colors(struct app *a) {
    a->color = has_colors() && !getenv("NO_COLOR");
    if (!a->color)
        return;
    start_color();
    use_default_colors();
    for (int r = 0; r < THEME_ROLE_COUNT; r++) {
        short fg = a->theme.c[r].fg, bg = a->theme.c[r].bg;
        init_pair((short)(r + 1), theme_color_fold(fg, COLORS), theme_color_fold(bg, COLORS));
    }
}

/* First q: a graceful stop (the engine finishes its step and checkpoints). A second q, or q
 * once the source is done, leaves at once. */
void app_quit_key(struct app *a) {
    if (a->quitting || a->src->ops->done(a->src)) {
        a->leave_now = true;
        return;
    }
    a->quitting = true;
    a->quit_ns = mono_now_ns();
    a->src->ops->stop(a->src);
    if (strcmp(a->src->run.origin, "live") == 0) /* a replay or an attach just ends */
        app_notice(a, "stopping: finishing the step and writing a checkpoint (q again: leave now)");
}

/* A stop that takes longer than 2 s is a hung call: say which, and how to leave anyway. */
static void app_quit_notice(struct app *a) {
    uint64_t now = mono_now_ns();
    if (!a->quitting || a->leave_now || a->src->ops->done(a->src) ||
        now - a->quit_ns < 2000000000ull)
        return;
    struct trace_inflight inf;
    char stuck[128], by_itself[64] = "";
    uint64_t end = a->quit_ns + a->v->stop_deadline_ns;
    if (a->v->stop_deadline_ns && end > now) /* the stop deadline's own exit (status 3) */
        snprintf(by_itself, sizeof(by_itself), ", by itself in %.0f s",
                 (double)(end - now) / 1e9 + 0.5);
    /* what to do first: the line is cut at the terminal's width */
    if (a->src->ops->inflight(a->src, a->frame.gpu, &inf) &&
        trace_inflight_describe(&inf, now, stuck, sizeof(stuck)))
        app_notice(a, "not stopping: q leaves now%s - %s", by_itself, stuck);
    else
        app_notice(a, "not stopping after %.1f s: q leaves now%s", (double)(now - a->quit_ns) / 1e9,
                   by_itself);
}

/* The telemetry shown: the source's own (a remote agent's), else this machine's service. */
static const struct tele_snap *app_tele(struct app *a) {
    if (a->src->ops->tele)
        return a->src->ops->tele(a->src);
    return a->tele ? tele_snap_read(a->tele, NULL) : NULL;
}

static const char *app_note(void *ctx, uint64_t t_ns, uint16_t dev, uint8_t code) {
    struct source *src = ctx;
    return src->ops->note ? src->ops->note(src, t_ns, dev, code) : NULL;
}

/* Every training device's snapshot into the frame (the first is snap's). */
static void app_frame_devices(struct app *a) {
    struct ui_frame *f = &a->frame;
    unsigned n = a->src->run.n_devices;
    n = n > RUN_MAX_DEVICES ? RUN_MAX_DEVICES : n;
    f->snaps[0] = f->snap;
    f->n_snaps = 1;
    for (unsigned k = 1; k < n && a->src->ops->dev_snap; k++) {
        const struct engine_snap *s = a->src->ops->dev_snap(a->src, k);
        if (!s)
            break;
        f->snaps[f->n_snaps++] = s;
    }
    if (f->gpu >= f->n_snaps)
        f->gpu = 0;
}

/* The device index of training rank k (the run's list; rank 0's --device otherwise). */
static unsigned app_dev_index(const struct app *a, unsigned k) {
    const struct run_info *run = &a->src->run;
    if (k < run->n_devices && run->n_devices > 1)
        return run->devices[k];
    return k < a->frame.n_snaps ? a->frame.snaps[k]->device : k;
}

/* The selected device's sync in flight, and the oldest on any device (what makes a HANG). */
static void app_frame_inflight(struct app *a) {
    struct ui_frame *f = &a->frame;
    f->has_inflight = a->src->ops->inflight(a->src, app_dev_index(a, f->gpu), &f->inflight);
    f->has_oldest = false;
    for (unsigned k = 0; k < f->n_snaps; k++) {
        struct trace_inflight inf;
        unsigned dev = app_dev_index(a, k);
        if (a->src->ops->inflight(a->src, dev, &inf) &&
            (!f->has_oldest || inf.start_ns < f->oldest.start_ns)) {
            f->oldest = inf;
            f->oldest_dev = dev;
            f->has_oldest = true;
        }
    }
}

/* A run that has ended is shown as it was at its end: the clock, the timeline's window and the
 * ages stop at the last device's last snapshot. */
static void app_frame_end(struct ui_frame *f) {
    if (!ui_frame_ended(f, NULL))
        return;
    uint64_t end = 0;
    for (unsigned k = 0; k < f->n_snaps; k++)
        end = f->snaps[k]->t_ns > end ? f->snaps[k]->t_ns : end;
    end = f->snap->t_ns > end ? f->snap->t_ns : end;
    if (end && end < f->now_ns)
        f->now_ns = end;
}

/* The frame every panel draws from this time round. */
static void app_build_frame(struct app *a) {
    struct ui_frame *f = &a->frame;
    if (!a->frozen) {
        f->snap = a->src->ops->snap(a->src);
        app_frame_devices(a);
        f->now_ns = a->src->ops->now_ns(a->src);
        app_frame_end(f);
        app_frame_inflight(a);
    } else {
        f->snap = &a->frozen_snap;
        for (unsigned k = 0; k < f->n_snaps; k++)
            f->snaps[k] = &a->frozen_devs[k];
        f->snaps[0] = f->snap;
    }
    f->model = &a->model;
    f->run = &a->src->run;
    f->theme = &a->theme;
    f->color = a->color;
    f->utf8 = a->utf8;
    f->sync_slow_ns = a->v->sync_slow_ns;
    f->sync_timeout_ns = a->v->sync_timeout_ns;
    f->window_ns = app_zoom_ns[a->zoom];
    f->chunk = f->snap->chunk_bars;
    f->frozen = a->frozen;
    f->source_status = a->src->ops->status(a->src);
    f->source_done = a->src->ops->done(a->src);
    f->tele = app_tele(a);
    f->note = app_note;
    f->note_ctx = a->src;
    f->tele_train = gpu_view_training(f->tele, f->snap);
    const struct source *src = a->src;
    f->kmsg_reason = "";
    if (src->ops->kmsg) /* a remote agent's watcher */
        f->has_kmsg = src->ops->kmsg(a->src, &f->kmsg, &f->kmsg_reason);
    else if ((f->has_kmsg = a->kmsg != NULL)) {
        kmsg_watch_stats(a->kmsg, &f->kmsg);
        f->kmsg_reason = kmsg_watch_reason(a->kmsg);
    }
}

static void app_drain(struct app *a) {
    static struct ev evs[APP_DRAIN_BATCH];
    size_t n;
    while ((n = a->src->ops->drain(a->src, evs, APP_DRAIN_BATCH)) > 0)
        for (size_t i = 0; i < n; i++) {
            ui_model_add(&a->model, &evs[i]);
            if (evs[i].kind == EV_LOG && evs[i].u.text.code == ALERT_HANG_BUNDLE)
                app_notice(a, "%s", evs[i].u.text.text); /* where the hang diagnostics went */
            if (evs[i].kind == EV_COMMAND) /* a command's result shows where the key was seen */
                app_notice(a, "%s: %s", ev_cmd_name(evs[i].u.command.cmd), evs[i].u.command.text);
        }
}

/* Wait until the next frame is due, draining events as they come but at most every
 * APP_DRAIN_NS (a wake-up per event would cost the training threads CPU, and the UI thread
 * a poll, a drain and, recording, a write per event); a key redraws at once. */
static void app_wait(struct app *a, uint64_t deadline_ns) {
    bool tty = isatty(0) && !a->hangup; /* a hung-up terminal would wake poll for ever */
    /* a recording must not drop events: it drains more often */
    uint64_t every = a->v->drain_often ? APP_DRAIN_RECORD_NS : APP_DRAIN_NS;
    uint64_t last_drain = mono_now_ns();
    for (uint64_t now = last_drain; now < deadline_ns; now = mono_now_ns()) {
        bool drain_due = now - last_drain >= every;
        uint64_t until =
            drain_due || last_drain + every > deadline_ns ? deadline_ns : last_drain + every;
        /* a stdin that is not a terminal (a script, /dev/null) is not polled: EOF would spin */
        struct pollfd pf[2] = {{tty ? 0 : -1, POLLIN, 0},
                               {drain_due ? a->src->ops->wake_fd(a->src) : -1, POLLIN, 0}};
        int ms = (int)((until - now + 999999) / 1000000);
        int rc = poll(pf, 2, ms);
        if (rc < 0 && app_signals_waiting())
            return;
        if (rc > 0 && (pf[1].revents & POLLIN) && !a->frozen) {
            app_drain(a);
            last_drain = mono_now_ns();
        }
        /* keys, or a signal: SIGWINCH interrupts poll and getch then returns KEY_RESIZE */
        if (rc < 0 || (pf[0].revents & (POLLIN | POLLHUP))) {
            int ch, n = 0;
            while ((ch = getch()) != ERR && ++n)
                app_key(a, ch);
            if (n)
                return;
        }
    }
}

static void app_loop(struct app *a) {
    int frames = 0;
    for (;;) {
        int ch; /* a SIGWINCH that came while drawing left KEY_RESIZE pending: take it now */
        while (!a->hangup && (ch = getch()) != ERR)
            app_key(a, ch);
        if (!a->frozen)
            app_drain(a);
        app_doctor_pickup(a);
        app_build_frame(a);
        if (!a->hangup)
            app_draw_frame(a, a->quitting);
        if (a->v->frames && ++frames == a->v->frames && !a->quitting) {
            a->quitting = true;
            a->src->ops->stop(a->src);
        }
        int sig = app_signals_take();
        if (sig == SIGHUP) /* the pane or terminal is gone: stop, and never draw again */
            a->hangup = true;
        if (sig)
            app_quit_key(a);
        if (a->hangup && a->quitting && !a->src->ops->done(a->src)) {
            app_wait(a, mono_now_ns() + (uint64_t)a->v->delay_ds * 100000000ull);
            continue;
        }
        app_quit_notice(a);
        if (a->leave_now || (a->quitting && a->src->ops->done(a->src)))
            return;
        app_wait(a, mono_now_ns() + (uint64_t)a->v->delay_ds * 100000000ull);
    }
}

/* --theme NAME|PATH must load; without it the "default" theme file is used when found, else
 * the compiled-in default. */
static int app_theme(struct app *a, char *err, size_t errlen) {
    theme_default(&a->theme);
    snprintf(a->theme_name, sizeof(a->theme_name), "default");
    if (!a->v->theme[0]) {
        struct theme t;
        if (theme_open("default", &t, err, errlen) == 0)
            a->theme = t;
        return 0;
    }
    int rc = theme_open(a->v->theme, &a->theme, err, errlen);
    if (rc == 0)
        snprintf(a->theme_name, sizeof(a->theme_name), "%s", a->theme.name);
    return rc;
}

static void app_setup_terminal(struct app *a) {
    if (!getenv("ESCDELAY")) /* Esc closes at once: ncurses' default waits 1 s for a sequence */
        set_escdelay(25);
    cbreak();
    noecho();
    nodelay(stdscr, TRUE);
    keypad(stdscr, TRUE);
    /* Home and End as every terminal sends them, whatever TERM says (a terminfo entry of one
     * terminal under another, e.g. xterm's inside tmux or screen, lacks the other's) */
    static const struct {
        const char *seq;
        int key;
    } app_alt_keys[] = {{"\033[1~", KEY_HOME}, {"\033[7~", KEY_HOME}, {"\033[H", KEY_HOME},
                        {"\033OH", KEY_HOME},  {"\033[4~", KEY_END},  {"\033[8~", KEY_END},
                        {"\033[F", KEY_END},   {"\033OF", KEY_END}};
    for (size_t k = 0; k < sizeof(app_alt_keys) / sizeof(app_alt_keys[0]); k++)
        if (key_defined(app_alt_keys[k].seq) == 0) /* not bound yet */
            define_key(app_alt_keys[k].seq, app_alt_keys[k].key);
    curs_set(0);
    mousemask(BUTTON1_PRESSED | BUTTON1_CLICKED | BUTTON4_PRESSED
#ifdef BUTTON5_PRESSED
                  | BUTTON5_PRESSED
#endif
              ,
              NULL);
    mouseinterval(0);
    app_colors(a);
    app_relayout(a);
}

/* The panels, each with its own state, the first focused. 0 or -ENOMEM. */
static int app_panels_init(struct app *a) {
    for (int k = 0; k < APP_PANELS; k++) {
        int rc = panel_init(&a->panels[k], app_panel_table[k]);
        if (rc != 0)
            return rc;
        a->panels[k].focused = k == a->focus;
    }
    return 0;
}

static void app_panels_fini(struct app *a) {
    for (int k = 0; k < APP_PANELS; k++)
        panel_fini(&a->panels[k]);
}

/* A start-up error, before curses has the terminal: on the terminal, even while fd 2 goes to
 * the session log. */
static void app_say(const struct app_view *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void app_say(const struct app_view *v, const char *fmt, ...) {
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    dprintf(v->stderr_fd > 0 ? v->stderr_fd : 2, "ringside: %s\n", msg);
}

/* The dashboard in a (all zero). */
static int app_run(struct app *a, struct source *src, const struct app_view *v,
                   const struct app_services *svc) {
    a->src = src;
    a->where = keymap_where(src->ops->name);
    a->v = v;
    a->tele = svc->tele;
    a->kmsg = svc->kmsg;
    a->zoom = 1; /* 10 s */
    ui_model_init_zeroed(&a->model);
    ui_model_use_remedies(&a->model, svc->remedies);
    ui_model_use_run(&a->model, &src->run);
    if (src->run.n_devices > 1) /* the memory sparklines follow the first device */
        ui_model_series_dev(&a->model, src->run.devices[0]);
    char err[512];
    if (app_theme(a, err, sizeof(err)) != 0) {
        app_say(v, "%s", err);
        return RS_EXIT_USAGE;
    }
    if (!isatty(1) && !v->frames) {
        app_say(v, "stdout is not a terminal; use 'ringside train --headless' for JSON lines");
        return RS_EXIT_USAGE;
    }
    a->utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
    a->frame.model = &a->model; /* a key before the first frame finds the model and run */
    a->frame.run = &src->run;
    a->frame.kmsg_reason = a->frame.source_status = "";
    if (app_panels_init(a) != 0) {
        app_panels_fini(a);
        app_say(v, "out of memory");
        return 1;
    }
    app_signals_save_tty();
    if (!newterm(NULL, stdout, stdin)) {
        app_panels_fini(a);
        app_say(v, "cannot initialise the terminal (TERM=%s)",
                getenv("TERM") ? getenv("TERM") : "");
        return RS_EXIT_USAGE;
    }
    app_signals_install();
    app_setup_terminal(a);
    app_doctor_init(&a->doctor);
    app_loop(a);
    app_doctor_fini(&a->doctor); /* a run under way is waited for: it reads files only */
    if (a->hangup) /* no drawing, but a terminal that is still there (kill -HUP) is put back */
        app_signals_restore_tty();
    app_signals_uninstall();
    app_free_windows(a);
    app_panels_fini(a);
    if (!a->hangup) /* after a hangup curses writes nothing more */
        endwin();
    return 0;
}

int app_main(struct source *src, const struct app_view *v, const struct app_services *svc) {
    /* large (the model): neither on the stack nor cleared page by page, so its rings become
     * resident only as they fill */
    struct app *a = calloc(1, sizeof(*a));
    if (!a) {
        fprintf(stderr, "ringside: out of memory\n");
        return 1;
    }
    int rc = app_run(a, src, v, svc);
    free(a);
    return rc;
}
