/* `ringside synth`: write deterministic synthetic ES bars as CSV. */
#include "backend/data/data_csv.h"
#include "backend/data/data_synth.h"
#include "tui/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char cli_synth_usage[] =
    "usage: ringside synth --days N --out FILE [--seed S] [--session-start-hour H] [--tick T]";

static const char cli_synth_help[] =
    "Write N trading days of ES-like one-minute bars (1380 per 23-hour session, with VIX)\n"
    "as CSV. The same seed gives the same file on every machine.\n\n"
    "  --days N                 trading days (required)\n"
    "  --out FILE               output CSV, written atomically (required)\n"
    "  --seed S                 seed (default 42)\n"
    "  --session-start-hour H   session start hour, UTC (default 18)\n"
    "  --tick T                 price increment (default 0.25)\n"
    "  -h, --help               this help\n";

static int cli_synth_parse(int argc, char **argv, struct data_synth_opts *so, char *out,
                           size_t outlen) {
    static const struct option longopts[] = {{"days", required_argument, NULL, 'n'},
                                             {"out", required_argument, NULL, 'o'},
                                             {"seed", required_argument, NULL, 's'},
                                             {"session-start-hour", required_argument, NULL, 'H'},
                                             {"tick", required_argument, NULL, 't'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    char err[512];
    long days = 0, seed = 42, hour = 18;
    double tick = 0.25;
    opterr = 0;
    optind = 1;
    int id, rc = 0;
    out[0] = '\0';
    while (rc == 0 && (id = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (id == 'h') {
            printf("%s\n\n%s", cli_synth_usage, cli_synth_help);
            return 1;
        }
        if (id == '?' || id == ':') {
            snprintf(err, sizeof(err), "%s '%s'",
                     id == '?' ? "unknown option" : "missing value for", argv[optind - 1]);
            return cli_usage_error("synth", cli_synth_usage, err);
        }
        rc = id == 'n' ? cli_parse_long("--days", optarg, 1, 100000, &days, err, sizeof(err))
             : id == 's'
                 ? cli_parse_long("--seed", optarg, 0, __LONG_MAX__, &seed, err, sizeof(err))
             : id == 'H'
                 ? cli_parse_long("--session-start-hour", optarg, 0, 23, &hour, err, sizeof(err))
             : id == 't' ? cli_parse_double("--tick", optarg, 1e-9, 1e9, &tick, err, sizeof(err))
                         : cli_copy("--out", out, outlen, optarg, err, sizeof(err));
    }
    if (rc != 0)
        return cli_usage_error("synth", cli_synth_usage, err);
    if (optind < argc) {
        snprintf(err, sizeof(err), "unexpected argument '%s'", argv[optind]);
        return cli_usage_error("synth", cli_synth_usage, err);
    }
    if (days == 0 || !out[0])
        return cli_usage_error("synth", cli_synth_usage, "--days N and --out FILE are required");
    *so = (struct data_synth_opts){(int)days, (uint64_t)seed, (int)hour, tick};
    return 0;
}

int cli_synth(int argc, char **argv) {
    struct data_synth_opts so;
    char out[ENGINE_PATH_MAX], err[1024];
    int rc = cli_synth_parse(argc, argv, &so, out, sizeof(out));
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
    return rc == 0 ? 0 : CLI_EXIT_USAGE; /* a bad --out path or options */
}
