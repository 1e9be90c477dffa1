/* Command-line options shared by the dashboard and `ringside train`: parsing into an
 * engine configuration with strict number checks and one-line errors. */
#ifndef RINGSIDE_TUI_CLI_OPTS_H
#define RINGSIDE_TUI_CLI_OPTS_H

#include "backend/engine/engine.h"
#include "backend/kmsg/kmsg_watch.h"
#include "backend/telemetry/tele.h"

#include <stdbool.h>
#include <stddef.h>

#define CLI_EXIT_USAGE 2 /* bad flags or bad input files */

struct cli_train_opts {
    struct engine_conf conf;
    bool headless;
    char jsonl[ENGINE_PATH_MAX];      /* "" = none, "-" = stdout */
    int frames;                       /* dashboard: render this many frames and exit (0 = run) */
    int delay_ds;                     /* dashboard refresh in tenths of a second */
    char theme[ENGINE_PATH_MAX];      /* --theme NAME|PATH, "" = default */
    char record[ENGINE_PATH_MAX];     /* --record FILE: the dashboard also writes JSON lines */
    char config[ENGINE_PATH_MAX];     /* the config file that was read, "" = none */
    uint64_t sync_slow_ns;            /* --sync-slow SECONDS (default 1 s) */
    uint64_t sync_timeout_ns;         /* --sync-timeout SECONDS (default 30 s) */
    struct tele_conf tele;            /* --telemetry, --telemetry-interval, the root directories */
    struct kmsg_conf kmsg;            /* --kmsg-file, --kmsg-backlog, --no-kmsg */
    char kmsg_rules[ENGINE_PATH_MAX]; /* --kmsg-rules FILE: remedies before the shipped ones */
};

/* Parse argv (argv[0] is the subcommand name) for `train` or the dashboard, over the defaults
 * from the config file (--config FILE, else $XDG_CONFIG_HOME/ringside/config.json if present).
 * Returns 0, 1 when --help or --print-config was printed (exit 0), or CLI_EXIT_USAGE after
 * printing the error (with the usage line for a bad flag) to stderr. */
int cli_train_parse(int argc, char **argv, const char *cmd, struct cli_train_opts *o);

/* Strict numbers: the whole string must parse and lie in [lo, hi]. 0 or -EINVAL with err
 * "--flag: 'x' is not an integer in [lo, hi]". */
int cli_parse_long(const char *flag, const char *s, long lo, long hi, long *out, char *err,
                   size_t errlen);
int cli_parse_double(const char *flag, const char *s, double lo, double hi, double *out, char *err,
                     size_t errlen);

/* One option for cli_getopt_run: 0, or -EINVAL with err filled. */
typedef int (*cli_opt_fn)(int id, const char *value, void *ctx, char *err, size_t errlen);

struct option;

/* The getopt_long loop every subcommand shares: -h/--help prints usage and help (returns 1),
 * (shortopts must start with ':' and include 'h'); an unknown option, a missing value, a value
 * on_opt rejects or a stray argument prints the error with the usage line (returns CLI_EXIT_USAGE);
 * otherwise 0. */
int cli_getopt_run(int argc, char **argv, const char *cmd, const char *usage, const char *help,
                   const char *shortopts, const struct option *longopts, cli_opt_fn on_opt,
                   void *ctx);

/* Print "ringside CMD: msg" and "Try 'ringside CMD --help'." to stderr; return
 * CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *usage, const char *msg);

/* The viewing flags the dashboards of a recording and of a remote agent share: --frames N,
 * -d/--delay N (id 'd') and --theme NAME|PATH, with these ids in their longopts. */
enum { CLI_VIEW_FRAMES = 200, CLI_VIEW_THEME };

/* A viewer's defaults: refresh every 0.5 s, slow and hung synchronize at 1 s and 30 s. */
void cli_view_defaults(struct cli_train_opts *o);

/* Apply a viewing flag: 0, -EINVAL with err, or -ENOENT when id is not one of them. */
int cli_view_opt(struct cli_train_opts *o, int id, const char *v, char *err, size_t errlen);

/* A bearer token from the first line of path (trailing blanks dropped; warns on stderr when
 * other users can read the file). 0, or -errno / -EINVAL with err naming the file. */
int cli_token_read(const char *path, char *out, size_t cap, char *err, size_t errlen);

/* Copy into a fixed buffer; -ENAMETOOLONG with err when it does not fit. */
int cli_copy(const char *flag, char *dst, size_t cap, const char *src, char *err, size_t errlen);

#endif
