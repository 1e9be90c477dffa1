/* The data-file flags of the commands that read bars outside training (`vpoc`, `predict`):
 * --data, --skip-bad-rows, --symbol, --columns, --tz, --continuous, --time-unit, --price-scale
 * and --bar, parsed and applied the same way for each. */
#ifndef RINGSIDE_TUI_CLI_CLI_DATA_H
#define RINGSIDE_TUI_CLI_CLI_DATA_H

#include "backend/data/data_csv.h"
#include "backend/engine/engine.h"
#include "tui/cli/cli_optab.h"

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

/* Apply flag id (a CLI_O_DATA_*): 0, -EINVAL with err, or -ENOENT when id is not a data flag. */
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
