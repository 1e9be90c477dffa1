/* The man pages, made from the option and command tables: ringside(1) with the commands and
 * the dashboard's keys, and ringside-CMD(1) for each command with its options as --help lists
 * them. */
#include "tui/cli/cli_man.h"

#include "tui/cli/cli_optab.h"
#include "tui/dashboard/keymap.h"

#include <errno.h>
#include <string.h>

/* Text for troff: a backslash as \e, '-' as \- (so options paste as typed), a line that would
 * start with '.' or '\'' guarded with \&. */
static int cli_man_text(FILE *out, const char *s, size_t len) {
    int rc = 0;
    bool bol = true;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (bol && (c == '.' || c == '\''))
            rc |= fputs("\\&", out) < 0;
        if (c == '\\')
            rc |= fputs("\\e", out) < 0;
        else if (c == '-')
            rc |= fputs("\\-", out) < 0;
        else
            rc |= fputc(c, out) == EOF;
        bol = c == '\n';
    }
    return rc;
}

static int cli_man_str(FILE *out, const char *s) {
    return cli_man_text(out, s, strlen(s));
}

/* Paragraphs of text (lines ending in '\n'; an empty line starts a new paragraph). */
static int cli_man_paras(FILE *out, const char *s) {
    int rc = 0;
    for (const char *line = s; *line;) {
        size_t len = strcspn(line, "\n");
        if (len == 0)
            rc |= fputs(".PP\n", out) < 0;
        else
            rc |= cli_man_text(out, line, len) | (fputc('\n', out) == EOF);
        line += len + (line[len] == '\n');
    }
    return rc;
}

static int cli_man_head(FILE *out, const char *title, const char *name, const char *summary) {
    int rc = fprintf(out,
                     ".\\\" Made from ringside's option and command tables; not edited by hand.\n"
                     ".TH %s 1 \"\" \"ringside %s\" \"User Commands\"\n.SH NAME\n",
                     title, RS_VERSION) < 0;
    rc |= cli_man_str(out, name) | (fputs(" \\- ", out) < 0) | cli_man_str(out, summary);
    return rc | (fputc('\n', out) == EOF);
}

/* One option: its tag (the left column of --help) and its text. */
static int cli_man_opt(FILE *out, const struct cli_opt_row *r) {
    char left[96];
    int rc = fputs(".TP\n.B ", out) < 0;
    rc |= cli_man_str(out, cli_optab_left(r, left, sizeof(left))) | (fputc('\n', out) == EOF);
    rc |= cli_man_str(out, r->help) | (fputc('\n', out) == EOF);
    const char *more = cli_optab_more(r->id);
    if (more)
        rc |= (fputs(".IP\n", out) < 0) | cli_man_str(out, more) | (fputc('\n', out) == EOF);
    return rc;
}

static int cli_man_cmd(unsigned bit, FILE *out) {
    const struct cli_cmd_doc *d = cli_optab_cmd(bit);
    char title[64], name[64];
    snprintf(name, sizeof(name), "ringside-%s", d->name);
    snprintf(title, sizeof(title), "RINGSIDE-%s", d->name);
    for (char *p = title; *p; p++)
        *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
    int rc = cli_man_head(out, title, name, d->summary);
    const char *usage = strncmp(d->usage, "usage: ", 7) == 0 ? d->usage + 7 : d->usage;
    rc |= fputs(".SH SYNOPSIS\n", out) < 0;
    rc |= cli_man_str(out, usage) | (fputs("\n.SH DESCRIPTION\n", out) < 0);
    rc |= cli_man_paras(out, d->intro) | (fputs(".SH OPTIONS\n", out) < 0);
    size_t n;
    const struct cli_opt_row *rows = cli_optab_rows(&n);
    for (size_t i = 0; i < n; i++) {
        if (!(rows[i].cmds & bit))
            continue;
        if (rows[i].name) {
            rc |= cli_man_opt(out, &rows[i]);
        } else { /* a heading: "Data:" */
            size_t len = strlen(rows[i].help);
            rc |= fputs(".SS ", out) < 0;
            rc |= cli_man_text(out, rows[i].help,
                               len && rows[i].help[len - 1] == ':' ? len - 1 : len);
            rc |= fputc('\n', out) == EOF;
        }
    }
    if (d->outro)
        rc |= (fputs(".PP\n", out) < 0) | cli_man_paras(out, d->outro);
    rc |= fprintf(out, ".SH \"SEE ALSO\"\n.BR ringside (1)\n") < 0;
    return rc;
}

/* ringside(1): what it is, the commands, the dashboard's keys. */
static int cli_man_top(FILE *out) {
    int rc = cli_man_head(out, "RINGSIDE", "ringside",
                          "a terminal dashboard for GPU training: memory, phases, synchronizes "
                          "and the kernel log's driver errors");
    rc |= fputs(".SH SYNOPSIS\n.B ringside\n[\\fICOMMAND\\fR] [\\fIoptions\\fR]\n"
                ".SH DESCRIPTION\n"
                "With no command, ringside opens the dashboard on its own training loop "
                "(synthetic data unless \\-\\-data is given); its options are those of\n"
                ".BR ringside\\-train (1).\n"
                "The dashboard shows every GPU's memory and allocator fragmentation, the phases "
                "of the loop (or of a PyTorch job that attaches, with\n.BR ringside\\-watch (1)),\n"
                "synchronize and collective latencies with a hang watch, and the GPU driver's "
                "errors from the kernel log.\n.SH COMMANDS\n",
                out) < 0;
    size_t n;
    const struct cli_cmd_doc *cmds = cli_optab_cmds(&n);
    for (size_t i = 0; i < n; i++) {
        rc |= fprintf(out, ".TP\n.BR ringside\\-%s (1)\n", cmds[i].name) < 0;
        rc |= cli_man_str(out, cmds[i].summary) | (fputc('\n', out) == EOF);
    }
    rc |= fputs(".TP\n.B \\-h, \\-\\-help\nthis help\n.TP\n.B \\-V, \\-\\-version\n"
                "version and compiled-in backends\n.SH KEYS\nIn the dashboard "
                "(? shows them there too):\n",
                out) < 0;
    char lines[KEYMAP_ROWS_MAX][KEYMAP_HELP_BYTES];
    size_t nl = keymap_help_lines(KEYMAP_ALL, lines, KEYMAP_ROWS_MAX);
    for (size_t i = 0; i < nl; i++) {
        /* "label" then two spaces or more (the label's column), then the text */
        const char *gap = strstr(lines[i], "  ");
        size_t len = gap ? (size_t)(gap - lines[i]) : strlen(lines[i]);
        const char *text = lines[i] + len;
        text += strspn(text, " ");
        rc |= fputs(".TP\n.B ", out) < 0;
        rc |= cli_man_text(out, lines[i], len) | (fputc('\n', out) == EOF);
        rc |= cli_man_str(out, text) | (fputc('\n', out) == EOF);
    }
    rc |= fputs(".SH \"EXIT STATUS\"\n0 done; 1 a failure at run time; 2 a usage error or bad "
                "input, said in one line on stderr; 3 a hang the process could not leave in "
                "time; 130 a second interrupt.\n.SH \"SEE ALSO\"\n",
                out) < 0;
    for (size_t i = 0; i < n; i++)
        rc |= fprintf(out, ".BR ringside\\-%s (1)%s\n", cmds[i].name, i + 1 < n ? "," : "") < 0;
    return rc;
}

int cli_man_page(unsigned cmd, FILE *out) {
    int rc = cmd ? (cli_optab_cmd(cmd) ? cli_man_cmd(cmd, out) : 1) : cli_man_top(out);
    return rc || fflush(out) != 0 ? -EIO : 0;
}
