/* ringside's command line: subcommand dispatch, --help and --version. */
#ifndef RINGSIDE_TUI_CLI_H
#define RINGSIDE_TUI_CLI_H

#include "tui/cli_opts.h"

/* Entry point; returns the process exit status. */
int cli_main(int argc, char **argv);

/* Subcommands (argv[0] is the subcommand name). */
int cli_train(int argc, char **argv);
int cli_dashboard(int argc, char **argv);
int cli_vpoc(int argc, char **argv);
int cli_synth(int argc, char **argv);
int cli_replay(int argc, char **argv);
int cli_probe(int argc, char **argv);

/* Headless and dashboard runners for parsed options. */
int cli_run_headless(const struct cli_train_opts *o);
int app_run(const struct cli_train_opts *o);

#endif
