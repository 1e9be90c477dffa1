/* Reading a command line's words into options and operands, with exact long names and a
 * suggestion for a name that is not one. */
#include "tui/cli/cli_args.h"

#include "backend/core/errbuf.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void cli_args_init(struct cli_args *a, int argc, char **argv, const char *shortopts,
                   const struct option *const *tables) {
    *a = (struct cli_args){.argc = argc,
                           .argv = argv,
                           .shortopts = shortopts ? shortopts : "",
                           .tables = tables,
                           .next = 1,
                           .table = -1};
}

const struct option *cli_args_find(const struct option *const *tables, const char *name, size_t len,
                                   int *table) {
    for (int t = 0; tables[t]; t++)
        for (const struct option *o = tables[t]; o->name; o++)
            if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) {
                if (table)
                    *table = t;
                return o;
            }
    return NULL;
}

#define CLI_ARGS_NAME_MAX 64 /* names compared for a suggestion: longer ones are not */

/* Levenshtein distance between a[0..n) and b[0..m), both at most CLI_ARGS_NAME_MAX. */
static size_t cli_args_distance(const char *a, size_t n, const char *b, size_t m) {
    size_t row[CLI_ARGS_NAME_MAX + 1];
    for (size_t j = 0; j <= m; j++)
        row[j] = j;
    for (size_t i = 1; i <= n; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[m];
}

/* Whether option name is worth suggesting for the unknown name[0..len): it starts with it, or
 * is a slip of the keyboard away (one edit for a short name, two for a longer one). */
static bool cli_args_close(const char *option, const char *name, size_t len) {
    size_t m = strlen(option);
    if (len == 0 || len > CLI_ARGS_NAME_MAX || m > CLI_ARGS_NAME_MAX)
        return false;
    if (len < m && strncmp(option, name, len) == 0)
        return true;
    return cli_args_distance(name, len, option, m) <= (len <= 4 ? 1u : 2u);
}

void cli_args_suggest(const struct option *const *tables, const char *name, size_t len,
                      const char *open, const char *close, char *out, size_t outlen) {
    const char *hits[32];
    size_t n = 0;
    for (int t = 0; tables[t]; t++)
        for (const struct option *o = tables[t]; o->name && n < 32; o++)
            if (cli_args_close(o->name, name, len))
                hits[n++] = o->name;
    out[0] = '\0';
    size_t at = 0;
    for (size_t i = 0; i < n && at < outlen; i++) {
        const char *sep = i == 0 ? " (did you mean " : i + 1 == n ? " or " : ", ";
        int w = snprintf(out + at, outlen - at, "%s%s%s%s%s", sep, open, hits[i], close,
                         i + 1 == n ? "?)" : "");
        at += w > 0 ? (size_t)w : 0;
    }
}

/* The long option in word (after its "--"). */
static int cli_args_long(struct cli_args *a, const char *word, char *err, size_t errlen) {
    const char *eq = strchr(word, '=');
    size_t len = eq ? (size_t)(eq - word) : strlen(word);
    a->row = cli_args_find(a->tables, word, len, &a->table);
    if (!a->row) {
        char hint[512];
        cli_args_suggest(a->tables, word, len, "--", "", hint, sizeof(hint));
        return errbuf_set(err, errlen, -EINVAL, "unknown option '--%.*s'%s", (int)len, word, hint);
    }
    if (a->row->has_arg == no_argument) {
        if (eq)
            return errbuf_set(err, errlen, -EINVAL, "--%s takes no value (not '%s')", a->row->name,
                              eq + 1);
        a->value = NULL;
    } else if (eq) {
        a->value = eq + 1;
    } else if (a->next < a->argc) {
        a->value = a->argv[a->next++];
    } else {
        return errbuf_set(err, errlen, -EINVAL, "--%s needs a value", a->row->name);
    }
    return a->row->val;
}

/* The next letter of a word of short options. */
static int cli_args_short(struct cli_args *a, char *err, size_t errlen) {
    char c = *a->group++;
    const char *s = c != ':' ? strchr(a->shortopts, c) : NULL;
    if (!s)
        return errbuf_set(err, errlen, -EINVAL, "unknown option '-%c'", c);
    a->value = NULL;
    if (s[1] == ':') {
        if (*a->group)
            a->value = a->group;
        else if (a->next < a->argc)
            a->value = a->argv[a->next++];
        else
            return errbuf_set(err, errlen, -EINVAL, "-%c needs a value", c);
        a->group = "";
    }
    return (unsigned char)c;
}

int cli_args_next(struct cli_args *a, char *err, size_t errlen) {
    a->row = NULL;
    a->table = -1;
    if (a->group && *a->group)
        return cli_args_short(a, err, errlen);
    a->group = NULL;
    if (a->next >= a->argc)
        return 0;
    const char *word = a->argv[a->next++];
    if (!a->operands && strcmp(word, "--") == 0) {
        a->operands = true;
        return cli_args_next(a, err, errlen);
    }
    if (a->operands || word[0] != '-' || word[1] == '\0') { /* "-" alone: stdin, an operand */
        a->value = word;
        return CLI_ARGS_OPERAND;
    }
    if (word[1] == '-')
        return cli_args_long(a, word + 2, err, errlen);
    a->group = word + 1;
    return cli_args_short(a, err, errlen);
}
