/* ringside's command line: subcommand dispatch, --help and --version. */
#ifndef RINGSIDE_TUI_CLI_CLI_H
#define RINGSIDE_TUI_CLI_CLI_H

#include "tui/cli/cli_opts.h"

#include <stdbool.h>

/* Entry point; returns the process exit status. */
int cli_main(int argc, char **argv);

/* Subcommands (argv[0] is the subcommand name). */
int cli_train(int argc, char **argv);
int cli_dashboard(int argc, char **argv);
int cli_vpoc(int argc, char **argv);
int cli_predict(int argc, char **argv);
int cli_export(int argc, char **argv);
int cli_watch(int argc, char **argv);
int cli_synth(int argc, char **argv);
int cli_replay(int argc, char **argv);
int cli_probe(int argc, char **argv);
int cli_kmsg(int argc, char **argv);
int cli_doctor(int argc, char **argv);
int cli_agent(int argc, char **argv);
int cli_attach(int argc, char **argv);

/* The headless runner for parsed options: JSON lines on --jsonl. */
int cli_run_headless(const struct cli_train_opts *o);

#endif
