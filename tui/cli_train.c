/* `ringside train`: the training loop headless (JSON lines) or under the dashboard. */
#include "backend/core/evring.h"
#include "backend/core/mono.h"
#include "backend/kmsg/kmsg_watch.h"
#include "backend/trace/trace_watch.h"
#include "tui/bundle.h"
#include "tui/cli.h"
#include "tui/cli_tele.h"
#include "tui/record.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLI_RING_CAP (1u << 16)
#define CLI_DRAIN    512

static volatile sig_atomic_t cli_signals;

/* First SIGINT/SIGTERM/SIGHUP: a graceful stop (finish the step, checkpoint). Second: leave
 * now. */
static void cli_on_signal(int sig) {
    (void)sig;
    if (++cli_signals >= 2) {
        static const char msg[] = "ringside: second interrupt: exiting immediately\n";
        ssize_t n = write(2, msg, sizeof(msg) - 1);
        (void)n;
        _exit(130);
    }
}

static void cli_install_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = cli_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL); /* the terminal that started it went away: the same */
    signal(SIGPIPE, SIG_IGN);
}

void cli_echo(const struct ev *e) {
    if ((e->kind == EV_LOG && e->u.text.severity >= SEV_WARNING) || e->kind == EV_ALERT)
        fprintf(stderr, "ringside: %s: %s\n", ev_severity_name(e->u.text.severity), e->u.text.text);
    if (e->kind == EV_KMSG && e->u.kmsg.severity >= SEV_WARNING)
        fprintf(stderr, "ringside: kernel %s: %s: %s\n", ev_severity_name(e->u.kmsg.severity),
                kmsg_category_name(e->u.kmsg.category), e->u.kmsg.message);
}

bool cli_hang_event(struct cli_hang *h, const struct ev *e, struct ev *log) {
    char msg[EV_TEXT_BYTES];
    if (!bundle_due(&h->recent, e))
        return false;
    struct bundle_src b = {.o = h->o,
                           .snap = engine_snap_read(h->e, NULL),
                           .tele = h->tele ? tele_snap_read(h->tele, NULL) : NULL};
    bundle_on_hang(&h->recent, e, &b, msg, sizeof(msg));
    *log = (struct ev){.t_ns = mono_now_ns(), .kind = EV_LOG, .dev = EV_DEV_NONE};
    log->u.text.severity = SEV_WARNING;
    snprintf(log->u.text.text, sizeof(log->u.text.text), "%s", msg);
    cli_echo(log);
    return true;
}

static void cli_write_ring(struct evring *ring, struct rec *out, struct cli_hang *h) {
    static struct ev evs[CLI_DRAIN];
    size_t n;
    while (ring && (n = evring_drain(ring, evs, CLI_DRAIN)) > 0) {
        for (size_t i = 0; i < n; i++) {
            struct ev log;
            cli_echo(&evs[i]);
            rec_event(out, &evs[i]);
            if (cli_hang_event(h, &evs[i], &log))
                rec_event(out, &log);
        }
    }
}

/* A layout line when the snapshot's memory numbers changed (this loop is its one reader). */
static void cli_write_layout(struct engine *e, struct rec *out, unsigned dev) {
    bool fresh = false;
    const struct engine_snap *s = engine_snap_read(e, &fresh);
    if (fresh)
        rec_snap(out, dev, s);
}

static int cli_headless_loop(struct engine *e, struct evring *ring, struct evring *kring,
                             struct kmsg_watch *kwatch, struct rec *out, unsigned dev,
                             struct cli_hang *h) {
    bool stop_sent = false;
    while (!engine_done(e)) {
        struct pollfd pf[2] = {{evring_wake_fd(ring), POLLIN, 0},
                               {kring ? evring_wake_fd(kring) : -1, POLLIN, 0}};
        poll(pf, 2, 200);
        if (cli_signals > 0 && !stop_sent) {
            engine_command(e, CMD_STOP, 0);
            stop_sent = true;
        }
        cli_write_ring(ring, out, h);
        cli_write_ring(kring, out, h);
        cli_write_layout(e, out, dev);
    }
    struct engine_result res;
    engine_join(e, &res);
    kmsg_watch_stop(kwatch); /* what the kernel log holds by now still makes the output */
    cli_write_ring(ring, out, h);
    cli_write_ring(kring, out, h);
    cli_write_layout(e, out, dev);
    rec_summary(out, &res, evring_dropped(ring));
    if (res.state == ENGINE_FAILED) {
        fprintf(stderr, "ringside train: %s\n", res.error);
        return 1;
    }
    if (res.checkpoint_error[0]) { /* trained, but the result is not saved */
        char note[2 * ENGINE_PATH_MAX + 768];
        engine_checkpoint_note(&res, note, sizeof(note));
        fprintf(stderr, "ringside train: %s after %d epochs; %s\n",
                res.stopped ? "stopped" : "finished", res.epochs_done, note);
        return 1;
    }
    return 0;
}

/* The run line first; the snapshot engine_create published gives backend and device. */
static int cli_open_rec(struct engine *e, const struct cli_train_opts *o, struct rec **out) {
    char err[ENGINE_PATH_MAX + 128];
    if (rec_open(out, o->jsonl, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringside train: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    struct ui_run run;
    rec_live_run(e, &run);
    rec_run(*out, &run, &o->conf);
    rec_snap(*out, (unsigned)o->conf.device, engine_snap_read(e, NULL));
    return 0;
}

/* A write error fails the run, except a reader of stdout that went away (as before). */
static int cli_close_rec(struct rec *out, bool to_stdout, int rc) {
    char err[ENGINE_PATH_MAX + 128];
    int crc = rec_close(out, err, sizeof(err));
    if (crc == 0 || rc != 0 || (to_stdout && crc == -EPIPE))
        return rc;
    fprintf(stderr, "ringside train: %s\n", err);
    return 1;
}

int cli_run_headless(const struct cli_train_opts *o) {
    struct evring *ring = NULL;
    struct engine *e = NULL;
    struct rec *out = NULL;
    struct tele *tele = NULL;     /* its events (Xid, resets, stalled rings) join the JSON lines */
    struct cli_kmsg_run km = {0}; /* and so do the kernel log's */
    struct trace_watch *watch = NULL; /* and the watchdog's alerts */
    char err[1024];
    int rc = evring_create(&ring, CLI_RING_CAP);
    if (rc != 0) {
        fprintf(stderr, "ringside train: out of memory\n");
        return 1;
    }
    rc = engine_create(&e, &o->conf, ring, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "ringside train: %s\n", err);
        rc = rc == -ENOMEM ? 1 : CLI_EXIT_USAGE;
        goto done;
    }
    if ((rc = cli_open_rec(e, o, &out)) != 0 ||
        (rc = cli_tele_start(&o->tele, ring, &tele, "train")) != 0 ||
        (rc = cli_kmsg_start(o, false, &km, "train")) != 0)
        goto done;
    cli_install_signals();
    if ((rc = engine_start(e)) != 0 ||
        (rc = trace_watch_start(&watch, engine_trace(e), (unsigned)o->conf.device + 1,
                                o->sync_slow_ns, o->sync_timeout_ns)) != 0) {
        fprintf(stderr, "ringside train: cannot start the engine: %s\n", strerror(-rc));
        rc = 1;
        goto done;
    }
    static struct cli_hang hang; /* the recent events: not on the stack */
    memset(&hang, 0, sizeof(hang));
    hang.o = o;
    hang.e = e;
    hang.tele = tele;
    rc = cli_headless_loop(e, ring, km.ring, km.watch, out, (unsigned)o->conf.device, &hang);
done:
    trace_watch_stop(watch);
    tele_destroy(tele);
    cli_kmsg_stop(&km);
    engine_destroy(e);
    if (out)
        rc = cli_close_rec(out, strcmp(o->jsonl, "-") == 0, rc);
    evring_destroy(ring);
    return rc;
}

static int cli_train_common(int argc, char **argv, const char *cmd) {
    struct cli_train_opts *o = calloc(1, sizeof(*o));
    if (!o)
        return 1;
    int rc = cli_train_parse(argc, argv, cmd, o);
    if (rc == 0)
        rc = o->headless ? cli_run_headless(o) : app_run(o);
    else if (rc == 1)
        rc = 0;
    free(o);
    return rc;
}

int cli_train(int argc, char **argv) {
    return cli_train_common(argc, argv, "train");
}

int cli_dashboard(int argc, char **argv) {
    return cli_train_common(argc, argv, "");
}
