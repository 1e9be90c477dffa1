/* `ringside train`: the training loop headless (JSON lines) or under the dashboard. */
#include "backend/record/record.h"
#include "backend/run/errtee.h"
#include "backend/run/run.h"
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

static volatile sig_atomic_t cli_signals;

/* First SIGINT/SIGTERM/SIGHUP: a graceful stop (finish the step, checkpoint). Second: leave
 * now. */
static void cli_on_signal(int sig) {
    (void)sig;
    if (++cli_signals >= 2) {
        static const char msg[] = "ringside: second interrupt: exiting immediately\n";
        ssize_t n = write(errtee_terminal_fd(), msg, sizeof(msg) - 1); /* not through the tee */
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

/* The run line first (from the loop engine_create made), then every event, layout change
 * and the summary, until the loop ends; a signal asks it to stop gracefully. */
static int cli_headless_loop(struct run *run) {
    static struct ev evs[CLI_DRAIN]; /* the main thread's alone */
    bool stop_sent = false;
    while (!run_done(run)) {
        struct pollfd pf = {run_wake_fd(run), POLLIN, 0};
        poll(&pf, 1, 200);
        if (cli_signals > 0 && !stop_sent) {
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

static void cli_tee_start(const struct run_opts *o, struct cli_tee *ct) {
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
            return;
        }
        close(fd);
        ct->temp = true;
    }
    if (errtee_start(&ct->t, ct->path, err, sizeof(err)) != 0)
        fprintf(stderr, "ringside train: %s (the runtime's messages are not classified)\n", err);
}

/* The temporary log's name, once nothing needs to open it again. */
static void cli_tee_unlink(struct cli_tee *ct) {
    if (ct->temp)
        unlink(ct->path);
    ct->temp = false;
}

int cli_run_headless(const struct cli_train_opts *o) {
    struct run *run = NULL;
    struct rec *out = NULL;
    char err[ENGINE_PATH_MAX + 128];
    struct cli_tee tee;
    cli_tee_start(&o->run, &tee);
    struct run_conf c = {.o = &o->run,
                         .cmd = "train",
                         .train = true,
                         .ring_events = CLI_RING_CAP,
                         .echo = true,
                         .quiet = true,
                         .kmsg_ends_with_loop = true,
                         .session_log = tee.t != NULL,
                         .session_log_path = tee.path};
    int rc = run_create(&run, &c);
    if (rc == 0 && rec_open(&out, o->run.jsonl, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringside train: %s\n", err);
        rc = RS_EXIT_USAGE;
    }
    if (rc == 0)
        run_record(run, out);
    if (rc == 0) {
        cli_install_signals();
        rc = run_start(run);
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
