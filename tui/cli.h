/* ringside's command line: subcommand dispatch, --help and --version. */
#ifndef RINGSIDE_TUI_CLI_H
#define RINGSIDE_TUI_CLI_H

#include "tui/bundle.h"
#include "tui/cli_opts.h"

#include <stdbool.h>

/* Entry point; returns the process exit status. */
int cli_main(int argc, char **argv);

/* Subcommands (argv[0] is the subcommand name). */
int cli_train(int argc, char **argv);
int cli_dashboard(int argc, char **argv);
int cli_vpoc(int argc, char **argv);
int cli_synth(int argc, char **argv);
int cli_replay(int argc, char **argv);
int cli_probe(int argc, char **argv);
int cli_kmsg(int argc, char **argv);
int cli_doctor(int argc, char **argv);
int cli_agent(int argc, char **argv);
int cli_attach(int argc, char **argv);

struct evring;
struct kmsg_watch;
struct remedies;

/* The kernel-log watcher of a run: its ring, the watcher, and the remedies for details. */
struct cli_kmsg_run {
    struct evring *ring;
    struct kmsg_watch *watch;
    struct remedies *remedies;
};

/* Load the remedies (--kmsg-rules or the user's file, then the shipped ones) and, unless
 * --no-kmsg without an --inject kmsg:FILE, start the watcher on its own ring (with --no-kmsg it
 * reads no kernel log, only the injected lines); with session_log, it also follows
 * <output>/session.log (where the dashboard sends stderr). 0, or the exit status after
 * printing "ringside CMD: why" (a bad --kmsg-file, --inject kmsg:FILE or rules file: 2). */
int cli_kmsg_start(const struct cli_train_opts *o, bool session_log, struct cli_kmsg_run *out,
                   const char *cmd);

/* Stop the watcher and free everything (safe on a zeroed or failed run). */
void cli_kmsg_stop(struct cli_kmsg_run *k);

/* Warnings, errors and alerts (and the kernel log's failures) also go to stderr, so a run
 * without a terminal is not silent. */
void cli_echo(const struct ev *e);

/* What a run without a terminal needs to write the hang diagnostics. */
struct cli_hang {
    const struct cli_train_opts *o;
    struct engine *e;
    struct tele *tele;         /* or NULL */
    struct bundle_ring recent; /* the last events */
};

/* Call with every event: on a HANG alert, the diagnostic bundle, once; then true with *log the
 * event saying where it went (already echoed to stderr), for the caller to write. */
bool cli_hang_event(struct cli_hang *h, const struct ev *e, struct ev *log);

/* Headless and dashboard runners for parsed options. */
int cli_run_headless(const struct cli_train_opts *o);
int app_run(const struct cli_train_opts *o);

#endif
