/* `ringside train`: the training loop headless (JSON lines) or under the dashboard. */
#include "backend/core/afile.h"
#include "backend/core/quit_signal.h"
#include "backend/record/record.h"
#include "backend/run/errtee.h"
#include "backend/run/run.h"
#include "backend/run/stop_deadline.h"
#include "tui/cli/cli.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CLI_RING_CAP (1u << 16)
#define CLI_DRAIN    512

/* First SIGINT/SIGTERM/SIGHUP (the terminal that started it went away: the same): a graceful
 * stop (finish the step, checkpoint), said at once; second: leave now, from the handler. */
static int cli_install_signals(void) {
    struct quit_signal_conf q = {
        .prefix = "ringside train: ",
        .first = " (the step ends and the checkpoint is written; a second signal leaves at once)"};
    quit_signal_set_fd(errtee_terminal_fd()); /* not through the tee */
    signal(SIGPIPE, SIG_IGN);
    return quit_signal_install(&q);
}

/* The run line first (from the loop engine_create made), then every event, layout change
 * and the summary, until the loop ends; a signal asks it to stop gracefully (the run's stop
 * deadline bounds how long that may take). */
static int cli_headless_loop(struct run *run) {
    static struct ev evs[CLI_DRAIN]; /* the main thread's alone */
    bool stop_sent = false;
    while (!run_done(run)) {
        struct pollfd pf[2] = {{run_wake_fd(run), POLLIN, 0},
                               {stop_sent ? -1 : quit_signal_fd(), POLLIN, 0}};
        poll(pf, 2, 200);
        if (quit_signal_first() && !stop_sent) {
            run_stop(run);
            stop_sent = true;
        }
        while (run_drain(run, evs, CLI_DRAIN) > 0) {
        }
        run_snap(run, run_device(run));
    }
    return run_finish(run, NULL);
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

/* stderr also into a log the kernel-log watcher follows, so the GPU runtime's own messages are
 * classified as in the dashboard: <output>/session.log when the directory exists; otherwise a
 * file of its own in $TMPDIR, removed once the run has started (the watcher and the tee hold
 * it open), since a run that fails on its input must leave no output directory behind. */
struct cli_tee {
    struct errtee *t;
    char path[ENGINE_PATH_MAX + 32];
    bool temp;
};

/* The temporary log's name, once nothing needs to open it again. */
static void cli_tee_unlink(struct cli_tee *ct) {
    if (ct->temp)
        unlink(ct->path);
    ct->temp = false;
}

static int cli_tee_start(const struct run_opts *o, struct cli_tee *ct) {
    char err[ENGINE_PATH_MAX + 128];
    struct stat st;
    memset(ct, 0, sizeof(*ct));
    if (stat(o->conf.output_dir, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(ct->path, sizeof(ct->path), "%s/session.log", o->conf.output_dir);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(ct->path, sizeof(ct->path), "%.900s/ringside-stderr-XXXXXX",
                 tmp && tmp[0] ? tmp : "/tmp");
        int fd = mkstemp(ct->path);
        if (fd < 0) {
            fprintf(stderr, "ringside train: %s: %s (the runtime's messages are not classified)\n",
                    ct->path, strerror(errno));
            ct->path[0] = '\0';
            return 0;
        }
        close(fd);
        ct->temp = true;
    }
    int rc = errtee_start(&ct->t, ct->path, err, sizeof(err));
    if (afile_refused(rc)) { /* planted there, or not ours: before any work, and left alone */
        fprintf(stderr,
                "ringside train: %s (the session log is written only as a regular file of "
                "yours)\n",
                err);
        cli_tee_unlink(ct);
        return RS_EXIT_USAGE;
    }
    if (rc != 0)
        fprintf(stderr, "ringside train: %s (the runtime's messages are not classified)\n", err);
    return 0;
}

int cli_run_headless(const struct cli_train_opts *o) {
    struct run *run = NULL;
    struct rec *out = NULL;
    char err[ENGINE_PATH_MAX + 128];
    struct cli_tee tee;
    int rc = cli_tee_start(&o->run, &tee);
    if (rc != 0)
        return rc;
    struct run_conf c = {.o = &o->run,
                         .cmd = "train",
                         .train = true,
                         .ring_events = CLI_RING_CAP,
                         .echo = true,
                         .quiet = true,
                         .kmsg_ends_with_loop = true,
                         .session_log = tee.t != NULL,
                         .session_log_path = tee.path};
    rc = run_create(&run, &c);
    if (rc == 0 && rec_open(&out, o->run.jsonl, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringside train: %s\n", err);
        rc = RS_EXIT_USAGE;
    }
    if (rc == 0)
        run_record(run, out);
    int src = rc == 0 ? cli_install_signals() : 0;
    if (src != 0) {
        fprintf(stderr, "ringside train: cannot install the signal handlers: %s\n", strerror(-src));
        rc = 1;
    }
    if (rc == 0) {
        quit_signal_mask(true); /* the run's threads leave the signals to this one */
        rc = run_start(run);
        quit_signal_mask(false);
    }
    cli_tee_unlink(&tee);
    if (rc == 0)
        rc = cli_headless_loop(run);
    errtee_stop(tee.t); /* before the watcher's last read: all the run wrote is in the log */
    run_destroy(run);
    if (out)
        rc = cli_close_rec(out, strcmp(o->run.jsonl, "-") == 0, rc);
    return rc;
}

/* The dashboard over the loop: the view takes the watchdog's thresholds. */
static int cli_dashboard_live(const struct cli_train_opts *o) {
    struct app_view v = o->view;
    v.sync_slow_ns = o->run.sync_slow_ns;
    v.sync_timeout_ns = o->run.sync_timeout_ns;
    v.stop_deadline_ns = (uint64_t)(o->run.conf.teardown_timeout_s * 1e9) + STOP_DEADLINE_GRACE_NS;
    return app_live(&o->run, &v);
}

static int cli_train_common(int argc, char **argv, const char *cmd) {
    struct cli_train_opts *o = calloc(1, sizeof(*o));
    if (!o)
        return 1;
    int rc = cli_train_parse(argc, argv, cmd, o);
    if (rc == 0)
        rc = o->headless ? cli_run_headless(o) : cli_dashboard_live(o);
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
