/* The words of a command line, read by the one rule every ringside command follows: a long
 * option is given by its exact name (never an abbreviation, so an option added later cannot
 * change what a command line means), its value after '=' or in the next word; a short option
 * is one letter, its value the rest of the word or the next word; "--" ends the options; any
 * other word is an operand. The config file's keys are the same names, looked up the same way
 * (cli_args_find). */
#ifndef RINGSIDE_TUI_CLI_CLI_ARGS_H
#define RINGSIDE_TUI_CLI_CLI_ARGS_H

#include <getopt.h> /* struct option, no_argument, required_argument: the tables' rows */
#include <stdbool.h>
#include <stddef.h>

#define CLI_ARGS_OPERAND 1 /* the id cli_args_next gives a word that is not an option */

/* A reader over argv. Set by cli_args_init; table, row and value describe what cli_args_next
 * returned last. */
struct cli_args {
    int argc;
    char **argv;                        /* argv[0] is the command's name, never read */
    const char *shortopts;              /* letters; one followed by ':' takes a value */
    const struct option *const *tables; /* NULL-terminated: the command's long options (their
                                           rows' val > 1, flag NULL; names unique across them) */
    int next;                           /* the word to read next */
    const char *group;                  /* the letters left in a word of short options */
    bool operands;                      /* "--" was read: every word left is an operand */
    int table;                /* the index in tables of the option's row; -1: short, operand */
    const struct option *row; /* the option's row; NULL for a short option or an operand */
    const char *value;        /* the option's value (NULL when it takes none), or the operand */
};

/* Read argv[1..argc-1]. shortopts may be NULL (no short options); tables is borrowed. */
void cli_args_init(struct cli_args *a, int argc, char **argv, const char *shortopts,
                   const struct option *const *tables);

/* The next word or words: an option's id (its row's val, or its letter) with a->value set, or
 * CLI_ARGS_OPERAND with the word in a->value; 0 when no word is left; -EINVAL with err for an
 * unknown option ("unknown option '--epoch' (did you mean --epochs?)"), a missing value
 * ("--epochs needs a value") or a value given to an option that takes none ("--headless takes
 * no value"). After an error the next call goes on with the word after the bad one. */
int cli_args_next(struct cli_args *a, char *err, size_t errlen);

/* The row named exactly name[0..len) in tables (*table: its table's index; may be NULL), or
 * NULL. */
const struct option *cli_args_find(const struct option *const *tables, const char *name, size_t len,
                                   int *table);

/* What to suggest for the unknown name[0..len): " (did you mean --a, --b or --c?)", each name
 * between open and close ("--" and "" for a flag), the names that start with it or are one or
 * two edits from it; "" when there are none. out is always terminated. */
void cli_args_suggest(const struct option *const *tables, const char *name, size_t len,
                      const char *open, const char *close, char *out, size_t outlen);

#endif
