/* Tests of cli_args, the reader every command's flags go through: exact long names, values
 * after '=' or in the next word, groups of short options, operands and "--", what is said of a
 * name that is not a flag, and going on after an error. */
#include "tui/cli/cli_args.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

enum { ARGS_EPOCHS = 300, ARGS_EVAL, ARGS_HEADLESS, ARGS_LISTEN };

static const struct option args_train[] = {
    {"epochs", required_argument, NULL, ARGS_EPOCHS},
    {"eval", no_argument, NULL, ARGS_EVAL},
    {"headless", no_argument, NULL, ARGS_HEADLESS},
    {NULL, 0, NULL, 0},
};
static const struct option args_agent[] = {
    {"listen", required_argument, NULL, ARGS_LISTEN},
    {NULL, 0, NULL, 0},
};
static const struct option *const args_tables[] = {args_agent, args_train, NULL};

/* What one read gave: the id, the value ("(null)" for none) and the table. */
struct args_got {
    int id;
    const char *value;
    int table;
};

/* Read every word of argv (NULL-terminated, argv[0] included) into got; returns the count. An
 * error reads as id -EINVAL with the message as its value (in errs). */
static size_t args_read(const char *const *argv, struct args_got *got, size_t cap,
                        char errs[][256]) {
    int argc = 0;
    while (argv[argc])
        argc++;
    struct cli_args a;
    cli_args_init(&a, argc, (char **)argv, "d:h", args_tables); /* only read */
    size_t n = 0;
    int id;
    while (n < cap && (id = cli_args_next(&a, errs[n], 256)) != 0) {
        got[n] = (struct args_got){id, id < 0 ? errs[n] : a.value ? a.value : "(null)", a.table};
        n++;
    }
    return n;
}

Test(cli_args, long_options_and_their_values) {
    const char *argv[] = {"train",        "--epochs", "5",        "--epochs=6", "--epochs=",
                          "--listen=a=b", "--eval",   "--epochs", "-1",         NULL};
    struct args_got g[16];
    char errs[16][256];
    size_t n = args_read(argv, g, 16, errs);
    cr_assert_eq(n, 6);
    cr_assert_eq(g[0].id, ARGS_EPOCHS);
    cr_assert_str_eq(g[0].value, "5");
    cr_assert_eq(g[0].table, 1);
    cr_assert_str_eq(g[1].value, "6");
    cr_assert_str_eq(g[2].value, ""); /* "--epochs=": an empty value, given */
    cr_assert_eq(g[3].id, ARGS_LISTEN);
    cr_assert_str_eq(g[3].value, "a=b");
    cr_assert_eq(g[3].table, 0);
    cr_assert_eq(g[4].id, ARGS_EVAL);
    cr_assert_str_eq(g[4].value, "(null)");
    cr_assert_str_eq(g[5].value, "-1"); /* the next word is the value, whatever it looks like */
}

Test(cli_args, short_options_in_groups) {
    const char *argv[] = {"x", "-d5", "-d", "6", "-hd7", "-dh", NULL};
    struct args_got g[16];
    char errs[16][256];
    size_t n = args_read(argv, g, 16, errs);
    cr_assert_eq(n, 5);
    cr_assert_eq(g[0].id, 'd');
    cr_assert_str_eq(g[0].value, "5");
    cr_assert_str_eq(g[1].value, "6");
    cr_assert_eq(g[2].id, 'h');
    cr_assert_eq(g[3].id, 'd');
    cr_assert_str_eq(g[3].value, "7");
    cr_assert_eq(g[4].id, 'd');
    cr_assert_str_eq(g[4].value, "h"); /* the rest of the word is -d's value */
    cr_assert_eq(g[4].table, -1);
}

Test(cli_args, operands_and_the_end_of_options) {
    const char *argv[] = {"x", "a", "-", "--eval", "--", "--epochs", "-d", NULL};
    struct args_got g[16];
    char errs[16][256];
    size_t n = args_read(argv, g, 16, errs);
    cr_assert_eq(n, 5);
    cr_assert_eq(g[0].id, CLI_ARGS_OPERAND);
    cr_assert_str_eq(g[0].value, "a");
    cr_assert_eq(g[1].id, CLI_ARGS_OPERAND);
    cr_assert_str_eq(g[1].value, "-"); /* standard input */
    cr_assert_eq(g[2].id, ARGS_EVAL);
    cr_assert_eq(g[3].id, CLI_ARGS_OPERAND);
    cr_assert_str_eq(g[3].value, "--epochs");
    cr_assert_eq(g[4].id, CLI_ARGS_OPERAND);
    cr_assert_str_eq(g[4].value, "-d");
}

/* Exact names only: a prefix, unique or not, is unknown, with the names it may mean. */
Test(cli_args, exact_names_and_what_is_said_otherwise) {
    const char *argv[] = {"x",        "--epo",       "--e",      "--evals", "--nosuch",
                          "--eval=1", "--headless=", "--epochs", NULL};
    struct args_got g[16];
    char errs[16][256];
    size_t n = args_read(argv, g, 16, errs);
    cr_assert_eq(n, 7);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(g[i].id, -EINVAL, "word %zu", i);
    cr_assert_str_eq(g[0].value, "unknown option '--epo' (did you mean --epochs?)");
    cr_assert_str_eq(g[1].value, "unknown option '--e' (did you mean --epochs or --eval?)");
    cr_assert_str_eq(g[2].value, "unknown option '--evals' (did you mean --eval?)");
    cr_assert_str_eq(g[3].value, "unknown option '--nosuch'");
    cr_assert_str_eq(g[4].value, "--eval takes no value (not '1')");
    cr_assert_str_eq(g[5].value, "--headless takes no value (not '')");
    cr_assert_str_eq(g[6].value, "--epochs needs a value");
}

/* After an error the reader goes on with the next word (the config prescan relies on it). */
Test(cli_args, an_error_does_not_stop_the_reader) {
    const char *argv[] = {"x", "--nosuch", "-q", "--eval", NULL};
    struct args_got g[16];
    char errs[16][256];
    size_t n = args_read(argv, g, 16, errs);
    cr_assert_eq(n, 3);
    cr_assert_eq(g[0].id, -EINVAL);
    cr_assert_str_eq(g[1].value, "unknown option '-q'");
    cr_assert_eq(g[2].id, ARGS_EVAL);
}

Test(cli_args, find_and_suggest) {
    int t = -1;
    cr_assert_eq(cli_args_find(args_tables, "listen", 6, &t), &args_agent[0]);
    cr_assert_eq(t, 0);
    cr_assert_eq(cli_args_find(args_tables, "epochsX", 6, &t), &args_train[0]); /* len counts */
    cr_assert_eq(t, 1);
    cr_assert_null(cli_args_find(args_tables, "list", 4, NULL));
    char out[128];
    cli_args_suggest(args_tables, "lisen", 5, "'", "'", out, sizeof(out));
    cr_assert_str_eq(out, " (did you mean 'listen'?)");
    cli_args_suggest(args_tables, "zzz", 3, "--", "", out, sizeof(out));
    cr_assert_str_eq(out, "");
    cli_args_suggest(args_tables, "e", 1, "--", "", out, 12); /* cut short, still terminated */
    cr_assert_eq(strlen(out), 11);
}
