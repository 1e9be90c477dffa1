/* What the option and command tables make for the system beside --help: the man pages and
 * the shell completion (written at build time by rs_docgen, installed with the binary). */
#ifndef RINGSIDE_TUI_CLI_CLI_MAN_H
#define RINGSIDE_TUI_CLI_CLI_MAN_H

#include <stdio.h>

/* The man page of command cmd (one CLI_CMD_*: ringside-CMD(1)), or with cmd 0 ringside(1).
 * 0, or -EIO. */
int cli_man_page(unsigned cmd, FILE *out);

/* The bash completion script: commands, each command's options, and their values where the
 * table names them (FILE, DIR and PATH: file names; "a|b": those words). 0, or -EIO. */
int cli_complete_bash(FILE *out);

#endif
