/* `ringside synth`: write deterministic synthetic ES bars as CSV. */
#include "backend/data/data_csv.h"
#include "backend/data/data_synth.h"
#include "tui/cli/cli.h"
#include "tui/cli/cli_optab.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

struct cli_synth_args {
    long days, seed, hour;
    double tick;
    char out[ENGINE_PATH_MAX];
};

static int cli_synth_opt(int id, const char *v, void *ctx, char *err, size_t n) {
    struct cli_synth_args *a = ctx;
    switch (id) {
    case CLI_O_SYNTH_DAYS:
        return cli_parse_long("--days", v, 1, 100000, &a->days, err, n);
    case CLI_O_SYNTH_SEED:
        return cli_parse_long("--seed", v, 0, __LONG_MAX__, &a->seed, err, n);
    case CLI_O_SYNTH_SESSION_START_HOUR:
        return cli_parse_long("--session-start-hour", v, 0, 23, &a->hour, err, n);
    case CLI_O_SYNTH_TICK:
        return cli_parse_double("--tick", v, 1e-9, 1e9, &a->tick, err, n);
    default:
        return cli_copy("--out", a->out, sizeof(a->out), v, err, n);
    }
}

static int cli_synth_parse(int argc, char **argv, struct data_synth_opts *so,
                           struct cli_synth_args *a) {
    *a = (struct cli_synth_args){.seed = 42, .hour = 18, .tick = 0.25};
    int rc = cli_getopt_run(argc, argv, "synth", CLI_CMD_SYNTH, false, cli_synth_opt, a);
    if (rc != 0)
        return rc;
    if (a->days == 0 || !a->out[0])
        return cli_usage_error("synth", "--days N and --out FILE are required");
    *so = (struct data_synth_opts){(int)a->days, (uint64_t)a->seed, (int)a->hour, a->tick};
    return 0;
}

int cli_synth(int argc, char **argv) {
    struct data_synth_opts so;
    struct cli_synth_args args;
    char err[1024];
    const char *out = args.out;
    int rc = cli_synth_parse(argc, argv, &so, &args);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    struct data_series ds;
    data_series_init(&ds);
    rc = data_synth_generate(&so, &ds);
    if (rc == 0)
        rc = data_csv_write(out, &ds, err, sizeof(err));
    else
        snprintf(err, sizeof(err), "cannot generate data: %s", strerror(-rc));
    if (rc != 0)
        fprintf(stderr, "ringside synth: %s\n", err);
    else
        fprintf(stderr, "ringside synth: wrote %zu bars (%d sessions) to %s\n", ds.n, so.days, out);
    data_series_fini(&ds);
    return rc == 0 ? 0 : RS_EXIT_USAGE; /* a bad --out path or options */
}
