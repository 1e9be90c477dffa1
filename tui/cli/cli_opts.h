/* Command-line options shared by the dashboard and `ringside train`: parsing into an
 * engine configuration with strict number checks and one-line errors. */
#ifndef RINGSIDE_TUI_CLI_CLI_OPTS_H
#define RINGSIDE_TUI_CLI_CLI_OPTS_H

#include "backend/core/errbuf.h"
#include "backend/run/run_opts.h"
#include "tui/cli/cli_optab.h"
#include "tui/dashboard/app.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cli_train_opts {
    struct run_opts run;  /* the run: the loop, its outputs, telemetry, the kernel log */
    struct app_view view; /* the dashboard: --frames, --delay, --theme */
    bool headless;        /* --headless: JSON lines, no dashboard */
};

/* Parse argv (argv[0] is the subcommand name) for `train` or the dashboard, over the defaults
 * from the config file (--config FILE, else $XDG_CONFIG_HOME/ringside/config.json if present).
 * Returns 0, 1 when --help or --print-config was printed (exit 0), or RS_EXIT_USAGE after
 * printing the error as cli_usage_error does. */
int cli_train_parse(int argc, char **argv, const char *cmd, struct cli_train_opts *o);

struct option;

/* The options of `train` and the dashboard (the config file's keys too), for a command that
 * takes them beside its own (cli_args' tables). */
const struct option *cli_train_options(void);

/* Strict numbers: the whole string must parse and lie in [lo, hi]. 0 or -EINVAL with err
 * "--flag: 'x' is not an integer in [lo, hi]". */
int cli_parse_long(const char *flag, const char *s, long lo, long hi, long *out, char *err,
                   size_t errlen);
int cli_parse_double(const char *flag, const char *s, double lo, double hi, double *out, char *err,
                     size_t errlen);

/* One option for cli_getopt_run: 0, or -EINVAL with err filled. */
typedef int (*cli_opt_fn)(int id, const char *value, void *ctx, char *err, size_t errlen);

/* The option loop every subcommand shares, over cli_args' rule (exact long names, a value
 * after '=' or in the next word) and the options of command bit (cli_optab): on_opt gets each
 * option's row id (CLI_O_*, for the long name and the letter alike) and, with operands, each
 * operand in order with id CLI_ARGS_OPERAND (otherwise an operand is an error). -h/--help
 * prints the command's help (returns 1); an unknown option, a missing value, a value on_opt
 * rejects or a stray operand is cli_usage_error's line for cmd (returns RS_EXIT_USAGE);
 * otherwise 0. */
int cli_getopt_run(int argc, char **argv, const char *cmd, unsigned bit, bool operands,
                   cli_opt_fn on_opt, void *ctx);

/* The options given, a bit for each id (CLI_O_*). */
struct cli_seen {
    uint64_t w[(CLI_O_END_ + 63) / 64];
};

static inline void cli_seen_add(struct cli_seen *s, int id) {
    if (id > 0 && id < CLI_O_END_)
        s->w[id / 64] |= 1ull << (id % 64);
}

static inline bool cli_seen_has(const struct cli_seen *s, int id) {
    return id > 0 && id < CLI_O_END_ && (s->w[id / 64] >> (id % 64) & 1u);
}

/* The one line of a usage error on stderr, "ringside: MSG; see 'ringside CMD --help'" (CMD ""
 * is the dashboard: train's help), nothing on stdout; returns RS_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *msg);

/* The viewing flags the dashboards of a recording and of a remote agent share: --frames N
 * (CLI_O_VIEW_FRAMES), -d/--delay N (CLI_O_VIEW_DELAY) and --theme NAME|PATH
 * (CLI_O_VIEW_THEME). */
/* A viewer's defaults: refresh every 0.5 s, slow and hung synchronize at 1 s and 30 s. */
void cli_view_defaults(struct cli_train_opts *o);

/* Apply a viewing flag: 0, -EINVAL with err, or -ENOENT when id is not one of them. */
int cli_view_opt(struct cli_train_opts *o, int id, const char *v, char *err, size_t errlen);

#define CLI_TOKEN_MIN 16 /* characters a bearer token has at least */

/* A bearer token from the first line of path (trailing blanks dropped; warns on stderr when
 * other users can read the file): a regular file (a FIFO is refused, not waited on), the token
 * at least CLI_TOKEN_MIN characters without a space or control character (a NUL included). 0,
 * or -errno / -EINVAL with err naming the file. */
int cli_token_read(const char *path, char *out, size_t cap, char *err, size_t errlen);

/* Copy into a fixed buffer; -ENAMETOOLONG with err when it does not fit. */
int cli_copy(const char *flag, char *dst, size_t cap, const char *src, char *err, size_t errlen);

/* A data-file text option (--time-unit, --price-scale, --bar) checked as the reader will read
 * it (data_csv_opt_check), then copied to dst[cap]: 0, or -EINVAL with err. */
int cli_data_text(const char *flag, const char *v, char *dst, size_t cap, char *err, size_t errlen);

/* --continuous's value: "front" sets *on; anything else is -EINVAL with err. */
int cli_continuous(const char *v, bool *on, char *err, size_t errlen);

#endif
