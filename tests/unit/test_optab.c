/* Tests of the option and command tables themselves: what every row must hold for the
 * parsers, --help, the man pages and the completion made from it to be right. */
#include "tui/cli/cli_man.h"
#include "tui/cli/cli_optab.h"
#include "tui/dashboard/keymap.h"

#include <criterion/criterion.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct cli_opt_row *rows;
static size_t n_rows;
static const struct cli_cmd_doc *cmds;
static size_t n_cmds;

static void optab_setup(void) {
    rows = cli_optab_rows(&n_rows);
    cmds = cli_optab_cmds(&n_cmds);
}

TestSuite(optab, .init = optab_setup);

/* Whether the row is one of command d's options, its own or one it takes from d->also. */
static bool optab_takes(const struct cli_cmd_doc *d, const struct cli_opt_row *r) {
    return r->name && ((r->cmds & d->bit) || ((r->cmds & d->also) && !(r->flags & d->refused)));
}

Test(optab, every_row_names_commands_and_says_something) {
    cr_assert_gt(n_rows, 100);
    for (size_t i = 0; i < n_rows; i++) {
        const struct cli_opt_row *r = &rows[i];
        cr_assert_neq(r->cmds, 0u, "row %zu takes no command", i);
        cr_assert_eq(r->cmds & ~(unsigned)CLI_CMD_ALL, 0u, "row %zu names no command", i);
        cr_assert(r->help && r->help[0], "row %zu has no help", i);
        if (!r->name)
            continue;
        cr_assert_eq(cli_optab_row(r->id), r, "--%s: its id finds another row", r->name);
        cr_assert(strspn(r->name, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(r->name),
                  "--%s: a long name is lowercase words and dashes", r->name);
        /* --help's lines: at most 64 characters after the column, none empty or trailing */
        for (const char *line = r->help; *line;) {
            size_t len = strcspn(line, "\n");
            cr_assert(len > 0 && len <= 64, "--%s: a help line of %zu characters", r->name, len);
            line += len;
            if (*line == '\n')
                cr_assert(*++line, "--%s: help ends in a newline", r->name);
        }
    }
}

Test(optab, names_and_letters_are_unique_in_each_command) {
    for (size_t c = 0; c < n_cmds; c++) {
        const struct cli_cmd_doc *d = &cmds[c];
        bool help = false;
        for (size_t i = 0; i < n_rows; i++) {
            if (!optab_takes(d, &rows[i]))
                continue;
            help |= rows[i].id == CLI_O_HELP;
            for (size_t j = i + 1; j < n_rows; j++) {
                if (!optab_takes(d, &rows[j]) || rows[j].id == CLI_O_HELP)
                    continue;
                cr_assert_str_neq(rows[i].name, rows[j].name, "%s: --%s twice", d->name,
                                  rows[i].name);
                if (rows[i].letter && (rows[i].cmds & d->bit) && (rows[j].cmds & d->bit))
                    cr_assert_neq(rows[i].letter, rows[j].letter, "%s: -%c twice", d->name,
                                  rows[i].letter);
            }
        }
        cr_assert(help, "%s has no --help", d->name);
        cr_assert(d->usage && strncmp(d->usage, "usage: ringside", 15) == 0, "%s's usage", d->name);
        cr_assert(d->intro && d->intro[strlen(d->intro) - 1] == '\n', "%s's intro", d->name);
    }
}

/* The config file's keys are train's options: every one but --config, --print-config and
 * --help, and nothing else. */
Test(optab, config_keys_are_trains_options) {
    size_t keys = 0;
    for (size_t i = 0; i < n_rows; i++) {
        const struct cli_opt_row *r = &rows[i];
        if (!r->name)
            continue;
        bool cmdline =
            r->id == CLI_O_HELP || r->id == CLI_O_TRAIN_CONFIG || r->id == CLI_O_TRAIN_PRINT_CONFIG;
        bool train = (r->cmds & CLI_CMD_TRAIN) != 0;
        cr_assert_eq((r->flags & CLI_F_CONFIG) != 0, train && !cmdline,
                     "--%s: a config key exactly when it is train's", r->name);
        keys += (r->flags & CLI_F_CONFIG) != 0;
    }
    cr_assert_gt(keys, 50);
}

/* The parsers' tables hold a command's rows and nothing else, the letters among them. */
Test(optab, longopts_and_shortopts_are_the_rows) {
    for (size_t c = 0; c < n_cmds; c++) {
        const struct option *lo = cli_optab_longopts(cmds[c].bit);
        size_t want = 0, got = 0;
        for (size_t i = 0; i < n_rows; i++)
            want += rows[i].name && (rows[i].cmds & cmds[c].bit);
        for (; lo[got].name; got++) {
            const struct cli_opt_row *r = cli_optab_row(lo[got].val);
            cr_assert(r && strcmp(r->name, lo[got].name) == 0, "%s: --%s", cmds[c].name,
                      lo[got].name);
            cr_assert_eq(lo[got].has_arg, r->arg ? required_argument : no_argument);
            if (r->letter)
                cr_assert(strchr(cli_optab_shortopts(cmds[c].bit), r->letter));
        }
        cr_assert_eq(got, want, "%s: %zu long options for %zu rows", cmds[c].name, got, want);
    }
    cr_assert_eq(cli_optab_letter(CLI_CMD_TRAIN, 'd'), CLI_O_VIEW_DELAY);
    cr_assert_eq(cli_optab_letter(CLI_CMD_VPOC, 'd'), 0);
    cr_assert_str_eq(cli_optab_shortopts(CLI_CMD_TRAIN), "d:h");
}

/* --help lists each of a command's options with its value's name, under its headings. */
Test(optab, help_lists_every_row) {
    for (size_t c = 0; c < n_cmds; c++) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        cr_assert(f);
        cr_assert_eq(cli_optab_help(cmds[c].bit, f), 0);
        fclose(f);
        cr_assert(strncmp(text, cmds[c].usage, strlen(cmds[c].usage)) == 0);
        for (size_t i = 0; i < n_rows; i++) {
            if (!(rows[i].cmds & cmds[c].bit))
                continue;
            char want[128];
            if (rows[i].name)
                snprintf(want, sizeof(want), "  %s%.*s%s--%s%s%s", rows[i].letter ? "-" : "",
                         rows[i].letter ? 1 : 0, &rows[i].letter, rows[i].letter ? ", " : "",
                         rows[i].name, rows[i].arg ? " " : "", rows[i].arg ? rows[i].arg : "");
            else
                snprintf(want, sizeof(want), "\n%s\n", rows[i].help);
            cr_assert(strstr(text, want), "%s --help lacks '%s'", cmds[c].name, want);
        }
        free(text);
    }
}

/* ringside(1) lists every key of the dashboard's help screen, its keys as the tag. */
Test(optab, man_page_lists_the_keys) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert(f);
    cr_assert_eq(cli_man_page(0, f), 0);
    fclose(f);
    char lines[KEYMAP_ROWS_MAX][KEYMAP_HELP_BYTES];
    size_t n = keymap_help_lines(KEYMAP_ALL, lines, KEYMAP_ROWS_MAX);
    cr_assert_gt(n, 10);
    for (size_t i = 0; i < n; i++) {
        char want[KEYMAP_HELP_BYTES + 16];
        size_t k = strcspn(lines[i], " "), end = k;
        /* the keys: words up to the first run of two spaces */
        while (lines[i][end] == ' ' && lines[i][end + 1] != ' ' && lines[i][end + 1])
            end += 1 + strcspn(lines[i] + end + 1, " ");
        snprintf(want, sizeof(want), ".B %.*s\n", (int)end, lines[i]);
        for (char *p = want; *p; p++) /* as troff writes a dash */
            if (*p == '-')
                memmove(p + 1, p, strlen(p) + 1), *p++ = '\\';
        cr_assert(strstr(text, want), "ringside(1) lacks the keys '%.*s'", (int)end, lines[i]);
    }
    free(text);
}
