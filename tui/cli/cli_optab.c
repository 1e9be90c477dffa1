/* The option and command tables, and what is made from them at run time: the parsers' option
 * tables and --help. */
#include "tui/cli/cli_optab.h"

#include "tui/agent/agent_http.h" /* AGENT_HTTP_DEFAULT_LISTEN, in --listen's help */
#include "tui/cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <string.h>

static const struct cli_opt_row cli_optab_table[] = {
#define CLI_OPT(cmds, key, name, letter, arg, flags, help)                                         \
    {(cmds), CLI_O_##key, (name), (letter), (arg), (flags), (help)},
#define CLI_SECTION(cmds, title) {(cmds), 0, NULL, 0, NULL, 0, (title)},
#include "tui/cli/cli_optab.def"
#undef CLI_OPT
#undef CLI_SECTION
};

#define CLI_OPTAB_N (sizeof(cli_optab_table) / sizeof(cli_optab_table[0]))

static const struct cli_cmd_doc cli_cmd_table[] = {
#define CLI_CMD(key, name, run, summary, also, refused, usage, intro, outro)                       \
    {(name), CLI_CMD_##key, (run), (summary), (also), (refused), (usage), (intro), (outro)},
#include "tui/cli/cli_cmds.def"
#undef CLI_CMD
};

const struct cli_opt_row *cli_optab_rows(size_t *n) {
    *n = CLI_OPTAB_N;
    return cli_optab_table;
}

const struct cli_cmd_doc *cli_optab_cmds(size_t *n) {
    *n = CLI_CMD_COUNT;
    return cli_cmd_table;
}

const struct cli_cmd_doc *cli_optab_cmd(unsigned bit) {
    for (size_t i = 0; i < CLI_CMD_COUNT; i++)
        if (cli_cmd_table[i].bit == bit)
            return &cli_cmd_table[i];
    return NULL;
}

const struct cli_cmd_doc *cli_optab_cmd_named(const char *name) {
    for (size_t i = 0; i < CLI_CMD_COUNT; i++)
        if (strcmp(cli_cmd_table[i].name, name) == 0)
            return &cli_cmd_table[i];
    return NULL;
}

static const struct {
    int id;
    const char *text;
} cli_optab_more_table[] = {
#define CLI_MORE(key, text) {CLI_O_##key, (text)},
#include "tui/cli/cli_optab_more.def"
#undef CLI_MORE
    {0, NULL},
};

const char *cli_optab_more(int id) {
    for (size_t i = 0; cli_optab_more_table[i].text; i++)
        if (cli_optab_more_table[i].id == id)
            return cli_optab_more_table[i].text;
    return NULL;
}

const struct cli_opt_row *cli_optab_row(int id) {
    if (id <= CLI_O_NONE_ || id >= CLI_O_END_)
        return NULL;
    for (size_t i = 0; i < CLI_OPTAB_N; i++)
        if (cli_optab_table[i].id == id)
            return &cli_optab_table[i];
    return NULL;
}

/* ---- the parsers' tables, built once for every command ---- */

static struct option cli_optab_long[CLI_CMD_COUNT][CLI_OPTAB_N + 1];
static char cli_optab_short[CLI_CMD_COUNT][2 * CLI_OPTAB_N + 1];
static pthread_once_t cli_optab_once = PTHREAD_ONCE_INIT;

static void cli_optab_build(void) {
    for (size_t c = 0; c < CLI_CMD_COUNT; c++) {
        size_t nl = 0, ns = 0;
        for (size_t i = 0; i < CLI_OPTAB_N; i++) {
            const struct cli_opt_row *r = &cli_optab_table[i];
            if (!r->name || !(r->cmds & cli_cmd_table[c].bit))
                continue;
            cli_optab_long[c][nl++] =
                (struct option){r->name, r->arg ? required_argument : no_argument, NULL, r->id};
            if (r->letter) {
                cli_optab_short[c][ns++] = r->letter;
                if (r->arg)
                    cli_optab_short[c][ns++] = ':';
            }
        }
        cli_optab_long[c][nl] = (struct option){NULL, 0, NULL, 0};
        cli_optab_short[c][ns] = '\0';
    }
}

/* The index of the command of bit; the first command for a bit that is none. */
static size_t cli_optab_index(unsigned cmd) {
    pthread_once(&cli_optab_once, cli_optab_build);
    for (size_t c = 0; c < CLI_CMD_COUNT; c++)
        if (cli_cmd_table[c].bit == cmd)
            return c;
    return 0;
}

const struct option *cli_optab_longopts(unsigned cmd) {
    return cli_optab_long[cli_optab_index(cmd)];
}

const char *cli_optab_shortopts(unsigned cmd) {
    return cli_optab_short[cli_optab_index(cmd)];
}

int cli_optab_letter(unsigned cmd, int letter) {
    for (size_t i = 0; i < CLI_OPTAB_N; i++)
        if (cli_optab_table[i].letter == letter && (cli_optab_table[i].cmds & cmd))
            return cli_optab_table[i].id;
    return 0;
}

const char *cli_optab_flag(int id, char *buf, size_t cap) {
    const struct cli_opt_row *r = cli_optab_row(id);
    snprintf(buf, cap, "--%s", r ? r->name : "?");
    return buf;
}

const char *cli_optab_left(const struct cli_opt_row *r, char *buf, size_t cap) {
    int k = r->letter ? snprintf(buf, cap, "-%c, ", r->letter) : 0;
    snprintf(buf + k, cap - (size_t)k, "--%s%s%s", r->name, r->arg ? " " : "",
             r->arg ? r->arg : "");
    return buf;
}

/* ---- --help ---- */

#define CLI_HELP_COL  27 /* where an option's text starts */
#define CLI_HELP_WIDE 29 /* a left column this long puts the text on the next line */

/* One option: its left column, then its text's lines at CLI_HELP_COL. */
static int cli_optab_help_row(const struct cli_opt_row *r, FILE *out) {
    char left[96];
    size_t n = strlen(cli_optab_left(r, left, sizeof(left)));
    int rc = 0;
    if (n + 2 >= CLI_HELP_WIDE)
        rc |= fprintf(out, "  %s\n%*s", left, CLI_HELP_COL, "") < 0;
    else if (n + 2 >= CLI_HELP_COL - 2)
        rc |= fprintf(out, "  %s  ", left) < 0;
    else
        rc |= fprintf(out, "  %-*s", CLI_HELP_COL - 2, left) < 0;
    for (const char *line = r->help; *line;) {
        size_t len = strcspn(line, "\n");
        rc |= fprintf(out, "%.*s\n", (int)len, line) < 0;
        line += len + (line[len] == '\n');
        if (*line)
            rc |= fprintf(out, "%*s", CLI_HELP_COL, "") < 0;
    }
    return rc;
}

int cli_optab_help(unsigned cmd, FILE *out) {
    const struct cli_cmd_doc *d = cli_optab_cmd(cmd);
    if (!d)
        return -EIO;
    int rc = fprintf(out, "%s\n\n%s\n", d->usage, d->intro) < 0;
    for (size_t i = 0; i < CLI_OPTAB_N; i++) {
        const struct cli_opt_row *r = &cli_optab_table[i];
        if (!(r->cmds & cmd))
            continue;
        if (r->name)
            rc |= cli_optab_help_row(r, out);
        else
            rc |= fprintf(out, "%s\n", r->help) < 0;
    }
    if (d->outro)
        rc |= fprintf(out, "\n%s", d->outro) < 0;
    return rc || fflush(out) != 0 ? -EIO : 0;
}
