/* The dashboard over a live run in this process: the run owner does the work; this file adds
 * what a terminal needs (the session log for stderr, signals left to the UI thread, --record
 * opened before the terminal is taken, leaving a hung loop behind). */
#include "backend/core/afile.h"
#include "backend/core/errbuf.h"
#include "backend/core/quit_signal.h"
#include "backend/record/record.h"
#include "backend/run/run.h"
#include "backend/run/source_watch.h"
#include "tui/dashboard/app.h"
#include "tui/dashboard/app_signals.h"
#include "tui/view/theme.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Events the live ring holds between two drains (at most 50 ms apart): room for 80,000 events
 * a second; a recording should not lose bursts (chunk-1 VPOC emits ~1M phases a second): 4x,
 * drained every 5 ms. */
#define APP_LIVE_RING_EVENTS (1u << 12)

/* While curses owns the terminal, stderr goes to a session log beside the checkpoints, opened
 * once the run has made the output directory and before it starts: a link, a FIFO, a directory
 * or another user's file there is refused then (-2: exit 2, before training and the terminal),
 * never followed or waited on. The descriptor, or -1 when messages stay on stderr. */
static int app_live_session_log(const struct run_opts *o) {
    char err[ENGINE_PATH_MAX + 160], log[ENGINE_PATH_MAX + 32];
    if (afile_mkdirs(o->conf.output_dir, err, sizeof(err)) != 0)
        return -1;
    snprintf(log, sizeof(log), "%s/session.log", o->conf.output_dir);
    int fd = afile_open_fd(log, O_APPEND, 0600, err, sizeof(err));
    if (afile_refused(fd)) {
        fprintf(stderr,
                "ringside: %s (the session log is written only as a regular file of yours)\n", err);
        return -2;
    }
    if (fd < 0)
        fprintf(stderr, "ringside: %s (messages stay on stderr)\n", err);
    return fd < 0 ? -1 : fd;
}

/* Descriptor 2 onto the session log fd (taken over): the terminal's stderr, or -1 with no log. */
static int app_live_redirect_stderr(int fd) {
    if (fd < 0)
        return -1;
    int saved = dup(2);
    dup2(fd, 2);
    close(fd);
    return saved;
}

/* --record FILE: opened before the terminal is taken, so a bad path is a plain error. */
static int app_live_record_open(const struct run_opts *o, struct rec **rec) {
    char err[1024];
    *rec = NULL;
    if (!o->record[0])
        return 0;
    if (strcmp(o->record, "-") == 0) {
        fprintf(stderr, "ringside: --record -: the dashboard draws on stdout; record to a file\n");
        return RS_EXIT_USAGE;
    }
    if (rec_open(rec, o->record, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringside: %s\n", err);
        return RS_EXIT_USAGE;
    }
    return 0;
}

static void app_live_record_close(struct rec *rec, int *rc) {
    char err[1024];
    if (rec && rec_close(rec, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringside: %s\n", err);
        *rc = *rc ? *rc : 1;
    }
}

/* The terminal's stderr while a session log has fd 2 (-1 otherwise). */
static int app_live_tty_fd = -1;

/* Leaving with status 3 from any thread: the terminal as it was, fd 2 on it again for the last
 * words (write, tcsetattr and dup2 alone). */
static void app_live_on_abandon(void *ctx) {
    (void)ctx;
    app_signals_restore_tty();
    if (app_live_tty_fd >= 0)
        dup2(app_live_tty_fd, 2);
}

/* The run's threads inherit the creating thread's signal mask: created with SIGWINCH, SIGINT,
 * SIGTERM and SIGHUP blocked, they leave those signals to the UI thread, whose poll() they
 * interrupt (a resize is then read at once). */
static void app_live_block_signals(sigset_t *old) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGWINCH);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &s, old);
}

/* The run (with the loop, or for watch without it and with the bridge at socket) under the
 * dashboard. */
static int app_live_run(const struct run_opts *o, const struct app_view *v, bool watch,
                        const char *socket) {
    struct run *run = NULL;
    struct source *src = NULL;
    struct rec *rec = NULL;
    struct bridge *bridge = NULL;
    struct theme theme;
    char why[1024];
    if (v->theme[0] && theme_open(v->theme, &theme, why, sizeof(why)) != 0) {
        fprintf(stderr, "ringside: %s\n", why); /* before anything starts, on the terminal */
        return RS_EXIT_USAGE;
    }
    sigset_t old_mask;
    app_live_block_signals(&old_mask);
    struct run_conf rc_conf = {
        .o = o,
        .cmd = watch ? "watch" : "",
        .train = !watch,
        .ring_events = o->record[0] ? 4 * APP_LIVE_RING_EVENTS : APP_LIVE_RING_EVENTS,
        /* every frame drains it: woken between frames only for a backlog that would
         * otherwise risk the ring (a quarter of a recording's, half of the live one) */
        .ring_wake_events = o->record[0] ? APP_LIVE_RING_EVENTS : APP_LIVE_RING_EVENTS / 2,
        .session_log = isatty(1) && !watch,
        .on_abandon = app_live_on_abandon,
    };
    int rc = run_create(&run, &rc_conf);
    int log_fd = rc == 0 && rc_conf.session_log ? app_live_session_log(o) : -1;
    if (log_fd == -2)
        rc = RS_EXIT_USAGE;
    if (rc == 0 && watch) {
        char err[512];
        if (bridge_open(&bridge, socket, err, sizeof(err)) != 0) {
            fprintf(stderr, "ringside watch: %s\n", err);
            rc = RS_EXIT_USAGE;
        }
    }
    if (rc == 0 && !watch && (rc = app_live_record_open(o, &rec)) == 0 && rec)
        run_record(run, rec);
    if (rc == 0)
        rc = run_start(run);
    if (rc == 0 && (watch ? watch_source_create(run, bridge, &src) : run_source(run, &src)) != 0) {
        fprintf(stderr, "ringside: out of memory\n");
        rc = 1;
    }
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL); /* every thread of the run exists now */
    if (rc == 0) {
        int saved = app_live_redirect_stderr(log_fd);
        log_fd = -1;
        app_live_tty_fd = saved;
        quit_signal_set_fd(saved >= 0 ? saved : 2); /* a second signal's words: the terminal */
        struct app_view view = *v;
        view.drain_often = rec != NULL;
        view.stderr_fd = saved;
        struct app_services svc = {run_tele(run), run_kmsg(run), run_remedies(run)};
        rc = app_main(src, &view, &svc);
        if (saved >= 0) {
            dup2(saved, 2);
            quit_signal_set_fd(2);
            app_live_tty_fd = -1;
            close(saved);
        }
        if (rc == 0 && !run_done(run))
            run_abandon(run); /* left with q q while the loop is stuck */
        if (rc == 0)
            rc = run_finish(run, NULL);
    }
    if (log_fd >= 0)
        close(log_fd);
    app_live_record_close(rec, &rc);
    if (src)
        src->ops->destroy(src);
    bridge_close(bridge);
    run_destroy(run);
    return rc;
}

int app_live(const struct run_opts *o, const struct app_view *v) {
    return app_live_run(o, v, false, NULL);
}

int app_watch(const struct run_opts *o, const struct app_view *v, const char *socket) {
    return app_live_run(o, v, true, socket);
}
