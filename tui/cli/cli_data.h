/* The data-file flags of the commands that read bars outside training (`vpoc`, `predict`):
 * --data, --skip-bad-rows, --symbol, --columns, --tz, --continuous, --time-unit, --price-scale
 * and --bar, parsed and applied the same way for each. */
#ifndef RINGSIDE_TUI_CLI_CLI_DATA_H
#define RINGSIDE_TUI_CLI_CLI_DATA_H

#include "backend/data/data_csv.h"
#include "backend/engine/engine.h"

#include <stdbool.h>
#include <stddef.h>

struct cli_data_opts {
    char data[ENGINE_PATH_MAX]; /* "" until --data; "-" is stdin */
    bool skip_bad;
    char symbol[DATA_CSV_SYMBOL_MAX];
    char columns[256];
    char tz[64];
    bool continuous;
    char time_unit[8];
    char price_scale[16];
    char bar[16];
};

/* getopt ids of the flags (the longopts entries are CLI_DATA_LONGOPTS). */
enum {
    CLI_DATA_FILE = 300,
    CLI_DATA_SKIP_BAD,
    CLI_DATA_SYMBOL,
    CLI_DATA_COLUMNS,
    CLI_DATA_TZ,
    CLI_DATA_CONTINUOUS,
    CLI_DATA_TIME_UNIT,
    CLI_DATA_PRICE_SCALE,
    CLI_DATA_BAR,
};

#define CLI_DATA_LONGOPTS                                                                          \
    {"data", required_argument, NULL, CLI_DATA_FILE},                                              \
        {"skip-bad-rows", no_argument, NULL, CLI_DATA_SKIP_BAD},                                   \
        {"symbol", required_argument, NULL, CLI_DATA_SYMBOL},                                      \
        {"columns", required_argument, NULL, CLI_DATA_COLUMNS},                                    \
        {"tz", required_argument, NULL, CLI_DATA_TZ},                                              \
        {"continuous", required_argument, NULL, CLI_DATA_CONTINUOUS},                              \
        {"time-unit", required_argument, NULL, CLI_DATA_TIME_UNIT},                                \
        {"price-scale", required_argument, NULL, CLI_DATA_PRICE_SCALE}, {                          \
        "bar", required_argument, NULL, CLI_DATA_BAR                                               \
    }

/* The lines of --help for them. */
#define CLI_DATA_HELP                                                                              \
    "  --data FILE              OHLCV CSV (required; - reads stdin; .gz and .zst read as such)\n"  \
    "  --skip-bad-rows          skip and count invalid rows\n"                                     \
    "  --symbol NAME            the instrument to read, from a file of several (Databento)\n"      \
    "  --columns LIST           a file without a header: its columns (_ skips one)\n"              \
    "  --tz ZONE                the file's times are local to ZONE (America/Chicago)\n"            \
    "  --continuous front       several contracts: the front month, rolled by volume\n"            \
    "  --time-unit s|ms|us|ns   the unit of integer timestamps (default: by their digits)\n"       \
    "  --price-scale 1e-N       prices are integers in 1e-N units (default: from the layout)\n"    \
    "  --bar LENGTH             rows into bars of LENGTH: 30s, 1m, 1h (default: ticks to 1m)\n"

/* Apply flag id: 0, -EINVAL with err, or -ENOENT when id is not a data flag. */
int cli_data_opt(struct cli_data_opts *o, int id, const char *v, char *err, size_t errlen);

/* Read o->data into ds, what it was read as into rep; errors said on stderr as "ringside CMD:
 * ...". 0, RS_EXIT_USAGE for bad input, or 1 (out of memory). */
int cli_data_load(const char *cmd, const struct cli_data_opts *o, struct data_series *ds,
                  struct data_csv_report *rep);

/* What the file was read as (data_csv_describe), said once on stderr as "ringside CMD: FILE:
 * read as ...": at the end of a run that went well, so a refusal stays one line. */
void cli_data_said(const char *cmd, const struct cli_data_opts *o,
                   const struct data_csv_report *rep);

/* The same file read session by session: data_csv_open with start_hour; rep is the caller's,
 * kept until data_csv_close. 0 with *r, or (said on stderr as cli_data_load says it)
 * RS_EXIT_USAGE or 1. */
int cli_data_open(const char *cmd, const struct cli_data_opts *o, int start_hour,
                  struct data_csv_report *rep, struct data_csv **r);

/* The next session into ds and *s (data_csv_next_session): 0 with *got true, or *got false at
 * the end; or, said on stderr, RS_EXIT_USAGE or 1. */
int cli_data_next(const char *cmd, struct data_csv *r, struct data_series *ds,
                  struct data_session *s, bool *got);

struct compute;

/* Open compute backend `backend` ("auto", "cpu", "hip") on device 0 for a data command: 0, or
 * RS_EXIT_USAGE after saying why on stderr as "ringside CMD: ...". A fallback from auto is not
 * said: stderr carries only errors, and what the file was read as, for these commands. */
int cli_data_compute(const char *cmd, const char *backend, struct compute **c);

#endif
