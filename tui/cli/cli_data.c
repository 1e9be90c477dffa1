/* The data-file flags shared by `vpoc` and `predict`. */
#include "tui/cli/cli_data.h"

#include "backend/compute/compute.h"
#include "backend/core/errbuf.h"
#include "backend/memory/mem_conf.h"
#include "tui/cli/cli_opts.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int cli_data_opt(struct cli_data_opts *o, int id, const char *v, char *err, size_t errlen) {
    switch (id) {
    case CLI_O_DATA_DATA:
        return cli_copy("--data", o->data, sizeof(o->data), v, err, errlen);
    case CLI_O_DATA_SKIP_BAD_ROWS:
        o->skip_bad = true;
        return 0;
    case CLI_O_DATA_SYMBOL:
        return cli_copy("--symbol", o->symbol, sizeof(o->symbol), v, err, errlen);
    case CLI_O_DATA_COLUMNS:
        return cli_copy("--columns", o->columns, sizeof(o->columns), v, err, errlen);
    case CLI_O_DATA_TZ:
        return cli_copy("--tz", o->tz, sizeof(o->tz), v, err, errlen);
    case CLI_O_DATA_CONTINUOUS:
        return cli_continuous(v, &o->continuous, err, errlen);
    case CLI_O_DATA_TIME_UNIT:
        return cli_data_text("--time-unit", v, o->time_unit, sizeof(o->time_unit), err, errlen);
    case CLI_O_DATA_PRICE_SCALE:
        return cli_data_text("--price-scale", v, o->price_scale, sizeof(o->price_scale), err,
                             errlen);
    case CLI_O_DATA_BAR:
        return cli_data_text("--bar", v, o->bar, sizeof(o->bar), err, errlen);
    default:
        return -ENOENT;
    }
}

static void cli_data_csv_opts(const struct cli_data_opts *o, struct data_csv_opts *co) {
    *co = (struct data_csv_opts){.skip_bad_rows = o->skip_bad,
                                 .symbol = o->symbol,
                                 .columns = o->columns,
                                 .tz = o->tz,
                                 .continuous = o->continuous,
                                 .time_unit = o->time_unit,
                                 .price_scale = o->price_scale,
                                 .bar = o->bar};
}

/* A reader's error said; the exit status it gives. */
static int cli_data_fail(const char *cmd, int rc, const char *err) {
    fprintf(stderr, "ringside %s: %s\n", cmd, err);
    return rc == -ENOMEM ? 1 : RS_EXIT_USAGE;
}

void cli_data_said(const char *cmd, const struct cli_data_opts *o,
                   const struct data_csv_report *rep) {
    const char *path = o->data;
    char said[1200];
    data_csv_describe(rep, said, sizeof(said));
    fprintf(stderr, "ringside %s: %s: read as %s\n", cmd, strcmp(path, "-") == 0 ? "<stdin>" : path,
            said);
}

int cli_data_load(const char *cmd, const struct cli_data_opts *o, struct data_series *ds,
                  struct data_csv_report *rep) {
    struct data_csv_opts co;
    cli_data_csv_opts(o, &co);
    char err[1024];
    int rc = data_csv_load(o->data, &co, ds, rep, err, sizeof(err));
    return rc == 0 ? 0 : cli_data_fail(cmd, rc, err);
}

int cli_data_open(const char *cmd, const struct cli_data_opts *o, int start_hour,
                  struct data_csv_report *rep, struct data_csv **r) {
    struct data_csv_opts co;
    cli_data_csv_opts(o, &co);
    char err[1024];
    int rc = data_csv_open(o->data, &co, start_hour, rep, r, err, sizeof(err));
    return rc == 0 ? 0 : cli_data_fail(cmd, rc, err);
}

int cli_data_next(const char *cmd, struct data_csv *r, struct data_series *ds,
                  struct data_session *s, bool *got) {
    char err[1024];
    int rc = data_csv_next_session(r, ds, s, err, sizeof(err));
    *got = rc == 1;
    return rc < 0 ? cli_data_fail(cmd, rc, err) : 0;
}

int cli_data_compute(const char *cmd, const char *backend, struct compute **c) {
    struct compute_conf cc = {.device = 0, .threads = 1};
    mem_conf_default(&cc.alloc);
    char notice[512], err[512];
    if (compute_open(backend, &cc, c, notice, sizeof(notice), err, sizeof(err)) != 0) {
        fprintf(stderr, "ringside %s: %s\n", cmd, err);
        return RS_EXIT_USAGE;
    }
    return 0;
}
