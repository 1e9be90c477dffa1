/* The options of every command, and the commands, as one table each (cli_optab.def and
 * cli_cmds.def): the parsers' long and short option tables, --help, the config file's keys,
 * the man pages and the shell completion are all made from these rows, so a flag is written
 * once. A row names the commands that take it; the parsers switch on its id (CLI_O_KEY). */
#ifndef RINGSIDE_TUI_CLI_CLI_OPTAB_H
#define RINGSIDE_TUI_CLI_CLI_OPTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct option;

/* The commands in the order of cli_cmds.def (and of the top-level --help). */
enum cli_cmd_index {
#define CLI_CMD(key, name, run, summary, also, refused, usage, intro, outro) CLI_CMDI_##key,
#include "tui/cli/cli_cmds.def"
#undef CLI_CMD
    CLI_CMD_COUNT
};

/* One bit a command, for a row's cmds. */
enum cli_cmd_bit {
#define CLI_CMD(key, name, run, summary, also, refused, usage, intro, outro)                       \
    CLI_CMD_##key = 1u << CLI_CMDI_##key,
#include "tui/cli/cli_cmds.def"
#undef CLI_CMD
    CLI_CMD_ALL = (1u << CLI_CMD_COUNT) - 1
};

/* What a row is besides an option of its commands. */
enum cli_opt_flag {
    CLI_F_CONFIG = 1u << 0,    /* a key of the config file, and of --print-config's output */
    CLI_F_TRAINING = 1u << 1,  /* data, training and compute: `watch` refuses it */
    CLI_F_DASHBOARD = 1u << 2, /* how the run is shown: `agent` (no terminal) refuses it */
};

/* The option ids, CLI_O_<KEY> for each row of cli_optab.def: what cli_args_next and the
 * config file give the parsers, for the long name and the letter alike. */
enum cli_opt_id {
    CLI_O_NONE_ = 255, /* below: letters and CLI_ARGS_OPERAND */
#define CLI_OPT(cmds, key, name, letter, arg, flags, help) CLI_O_##key,
#define CLI_SECTION(cmds, title)
#include "tui/cli/cli_optab.def"
#undef CLI_OPT
#undef CLI_SECTION
    CLI_O_END_
};

/* One row: an option, or (name NULL) a heading in its commands' --help. */
struct cli_opt_row {
    unsigned cmds;    /* CLI_CMD_* bits: the commands that take it (or show the heading) */
    int id;           /* CLI_O_*; 0 for a heading */
    const char *name; /* the long name without "--"; NULL: a heading */
    char letter;      /* the short option's letter, or 0 */
    const char *arg;  /* the value's name in help ("N", "FILE", "close|range"); NULL: none */
    unsigned flags;   /* CLI_F_* */
    const char *help; /* the help text, lines ending in '\n' but the last; a heading's title */
};

/* One command. */
struct cli_cmd_doc {
    const char *name;                  /* as typed: "train" */
    unsigned bit;                      /* its CLI_CMD_* */
    int (*run)(int argc, char **argv); /* argv[0] is the command's name */
    const char *summary;               /* one line, for the top-level --help and the man page */
    unsigned also;                     /* another command whose options it takes too (0: none) */
    unsigned refused;                  /* CLI_F_* of also's rows it refuses */
    const char *usage;                 /* "usage: ringside ..." */
    const char *intro;                 /* the text before the options, lines ending in '\n' */
    const char *outro;                 /* after them, or NULL */
};

/* Every row in table order, headings included; *n gets the count. */
const struct cli_opt_row *cli_optab_rows(size_t *n);

/* Every command in table order; *n gets the count. */
const struct cli_cmd_doc *cli_optab_cmds(size_t *n);

/* The command of bit (one CLI_CMD_*), or of name (NULL when there is none). */
const struct cli_cmd_doc *cli_optab_cmd(unsigned bit);
const struct cli_cmd_doc *cli_optab_cmd_named(const char *name);

/* The row of id (a CLI_O_*), or NULL. */
const struct cli_opt_row *cli_optab_row(int id);

/* What the man page says of option id beyond its help (cli_optab_more.def), or NULL. */
const char *cli_optab_more(int id);

/* The command's long options for cli_args (val: the row's id; ends with a zero row) and its
 * short ones ("d:h": a letter, ':' when it takes a value). Built once; never freed. */
const struct option *cli_optab_longopts(unsigned cmd);
const char *cli_optab_shortopts(unsigned cmd);

/* The id of the command's option with that letter, or 0. */
int cli_optab_letter(unsigned cmd, int letter);

/* The option's name as the user writes it: "--epochs" (buf of at least 64 bytes). */
const char *cli_optab_flag(int id, char *buf, size_t cap);

/* The left column of an option in --help: "-d, --delay N" or "--epochs N" (buf of 96). */
const char *cli_optab_left(const struct cli_opt_row *r, char *buf, size_t cap);

/* The command's --help: usage, intro, its options (headings between) and outro. 0, or -EIO. */
int cli_optab_help(unsigned cmd, FILE *out);

#endif
