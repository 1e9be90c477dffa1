/* The bash completion script, made from the option and command tables. */
#include "tui/cli/cli_man.h"
#include "tui/cli/cli_optab.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* Whether the row is one of cmd's options: its own, or one of the other command's it takes. */
static bool cli_complete_takes(const struct cli_cmd_doc *d, const struct cli_opt_row *r) {
    if (!r->name)
        return false;
    if (r->cmds & d->bit)
        return true;
    return (r->cmds & d->also) && !(r->flags & d->refused);
}

/* What completes an option's value, from its name in help: the lowercase words of "a|b|c"
 * (-W), file names for FILE or PATH (-f), directories for DIR (-d). *words gets the words. */
static void cli_complete_kind(const char *arg, char *words, size_t cap, bool *files, bool *dirs) {
    size_t n = 0;
    *files = *dirs = false;
    words[0] = '\0';
    for (const char *p = arg; *p;) {
        size_t len = strcspn(p, "|");
        bool lower = len > 0;
        for (size_t i = 0; i < len; i++)
            lower &= (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= '0' && p[i] <= '9') || p[i] == '-';
        if (lower && n + len + 2 < cap) {
            n += (size_t)snprintf(words + n, cap - n, "%s%.*s", n ? " " : "", (int)len, p);
        } else if (!lower) {
            *files |=
                strstr(p, "FILE") == p || strstr(p, "PATH") == p || strstr(p, "CHECKPOINT") == p;
            *dirs |= strncmp(p, "DIR", 3) == 0;
        }
        p += len + (p[len] == '|');
    }
}

/* One command's arm of the value case: "cmd:--a|cmd:--b) ...;;" for each kind of value. */
static int cli_complete_values(FILE *out, const struct cli_cmd_doc *d) {
    size_t n;
    const struct cli_opt_row *rows = cli_optab_rows(&n);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        const struct cli_opt_row *r = &rows[i];
        if (!cli_complete_takes(d, r) || !r->arg)
            continue;
        char words[256];
        bool files, dirs;
        cli_complete_kind(r->arg, words, sizeof(words), &files, &dirs);
        rc |= fprintf(out, "    %s:--%s)\n        COMPREPLY=(", d->name, r->name) < 0;
        if (words[0])
            rc |= fprintf(out, "$(compgen -W '%s' -- \"$cur\") ", words) < 0;
        if (files || dirs)
            rc |= fprintf(out, "$(compgen -%c -- \"$cur\")", dirs ? 'd' : 'f') < 0;
        rc |= fputs(")\n        return ;;\n", out) < 0;
    }
    return rc;
}

int cli_complete_bash(FILE *out) {
    size_t nc, n;
    const struct cli_cmd_doc *cmds = cli_optab_cmds(&nc);
    const struct cli_opt_row *rows = cli_optab_rows(&n);
    int rc = fputs("# bash completion for ringside, made from its option and command tables\n"
                   "_ringside() {\n"
                   "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}\n"
                   "    local cmd=train\n"
                   "    case ${COMP_WORDS[1]} in\n    ",
                   out) < 0;
    for (size_t c = 0; c < nc; c++)
        rc |= fprintf(out, "%s%s", c ? "|" : "", cmds[c].name) < 0;
    rc |= fputs(") cmd=${COMP_WORDS[1]} ;;\n    esac\n"
                "    if [ \"$COMP_CWORD\" -eq 1 ] && [[ $cur != -* ]]; then\n"
                "        COMPREPLY=($(compgen -W '",
                out) < 0;
    for (size_t c = 0; c < nc; c++)
        rc |= fprintf(out, "%s%s", c ? " " : "", cmds[c].name) < 0;
    rc |= fputs("' -- \"$cur\"))\n        return\n    fi\n    case $cmd:$prev in\n", out) < 0;
    for (size_t c = 0; c < nc; c++)
        rc |= cli_complete_values(out, &cmds[c]);
    rc |= fputs("    esac\n    local opts\n    case $cmd in\n", out) < 0;
    for (size_t c = 0; c < nc; c++) {
        rc |= fprintf(out, "    %s) opts='", cmds[c].name) < 0;
        bool first = true;
        for (size_t i = 0; i < n; i++)
            if (cli_complete_takes(&cmds[c], &rows[i])) {
                rc |= fprintf(out, "%s--%s", first ? "" : " ", rows[i].name) < 0;
                first = false;
            }
        rc |= fputs("' ;;\n", out) < 0;
    }
    rc |= fputs("    esac\n"
                "    if [[ $cur == -* ]]; then\n"
                "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
                "    else\n"
                "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
                "    fi\n"
                "}\n"
                "complete -o filenames -F _ringside ringside\n",
                out) < 0;
    return rc || fflush(out) != 0 ? -EIO : 0;
}
