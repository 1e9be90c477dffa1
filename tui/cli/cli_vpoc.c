/* `ringside vpoc`: each session's volume profile results as JSON lines, computed chunk by
 * chunk through a compute backend exactly as the training loop does. */
#include "backend/compute/compute.h"
#include "backend/core/errbuf.h"
#include "backend/core/json_out.h"
#include "backend/data/data_csv.h"
#include "backend/vpoc/vpoc.h"
#include "tui/cli/cli.h"
#include "tui/cli/cli_data.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char cli_vpoc_usage[] =
    "usage: ringside vpoc --data FILE [--chunk N] [--profile close|range] [--tick T] "
    "[--value-area F] [--session-start-hour H] [--skip-bad-rows] [--symbol NAME] [--columns LIST] "
    "[--tz ZONE] [--continuous front] [--backend B]";

static const char cli_vpoc_help[] =
    "Print one JSON object per session: session, bars, volume, poc, vah, val.\n\n" CLI_DATA_HELP
    "  --chunk N                bars per chunk, 0 = whole session (default 500); the output\n"
    "                           is identical for every chunk size\n"
    "  --profile close|range    volume at the close's level, or spread low..high (close)\n"
    "  --tick T                 price increment (default 0.25)\n"
    "  --value-area F           value-area fraction (default 0.70)\n"
    "  --session-start-hour H   trading day D starts at D-1 H:00 UTC (default 18)\n"
    "  --backend auto|cpu|hip   compute backend (default auto)\n"
    "  -h, --help               this help\n";

struct cli_vpoc_opts {
    struct cli_data_opts in;
    char backend[16];
    long chunk, start_hour;
    struct vpoc_params p;
};

static int cli_vpoc_opt(int id, const char *v, void *ctx, char *err, size_t n) {
    struct cli_vpoc_opts *o = ctx;
    int rc = cli_data_opt(&o->in, id, v, err, n);
    if (rc != -ENOENT)
        return rc;
    switch (id) {
    case 'c':
        return cli_parse_long("--chunk", v, 0, VPOC_CHUNK_MAX, &o->chunk, err, n);
    case 't':
        return cli_parse_double("--tick", v, 1e-9, 1e9, &o->p.tick, err, n);
    case 'a':
        return cli_parse_double("--value-area", v, 1e-6, 1, &o->p.value_area, err, n);
    case 'H':
        return cli_parse_long("--session-start-hour", v, 0, 23, &o->start_hour, err, n);
    case 'b':
        return cli_copy("--backend", o->backend, sizeof(o->backend), v, err, n);
    case 'p':
        if (strcmp(v, "close") != 0 && strcmp(v, "range") != 0)
            return errbuf_set(err, n, -EINVAL, "--profile: '%s' is not one of close, range", v);
        o->p.profile = strcmp(v, "range") == 0 ? VPOC_RANGE : VPOC_CLOSE;
        return 0;
    default:
        return errbuf_set(err, n, -EINVAL, "internal: unhandled option");
    }
}

static int cli_vpoc_parse(int argc, char **argv, struct cli_vpoc_opts *o) {
    static const struct option longopts[] = {CLI_DATA_LONGOPTS,
                                             {"chunk", required_argument, NULL, 'c'},
                                             {"profile", required_argument, NULL, 'p'},
                                             {"tick", required_argument, NULL, 't'},
                                             {"value-area", required_argument, NULL, 'a'},
                                             {"session-start-hour", required_argument, NULL, 'H'},
                                             {"backend", required_argument, NULL, 'b'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    *o = (struct cli_vpoc_opts){
        .chunk = 500, .start_hour = 18, .backend = "auto", .p = {VPOC_CLOSE, 0.25, 0.70}};
    int rc = cli_getopt_run(argc, argv, "vpoc", cli_vpoc_usage, cli_vpoc_help, ":h", longopts,
                            cli_vpoc_opt, o);
    if (rc != 0)
        return rc;
    if (!o->in.data[0])
        return cli_usage_error("vpoc", cli_vpoc_usage, "--data FILE is required");
    return 0;
}

static int cli_vpoc_print(const struct data_series *ds, const struct data_session *s,
                          const struct vpoc_result *r) {
    double volume = 0;
    for (size_t i = 0; i < s->n; i++)
        volume += ds->bars[s->first + i].volume;
    /* whole numbers without a point: JSON readers and people both prefer 4701 to 4701.0 */
    char v[JSON_OUT_NUM_MAX], poc[JSON_OUT_NUM_MAX], vah[JSON_OUT_NUM_MAX], val[JSON_OUT_NUM_MAX];
    json_out_num(v, sizeof(v), volume, JSON_OUT_INT);
    json_out_num(poc, sizeof(poc), r->poc, JSON_OUT_INT);
    json_out_num(vah, sizeof(vah), r->vah, JSON_OUT_INT);
    json_out_num(val, sizeof(val), r->val, JSON_OUT_INT);
    return printf("{\"session\":\"%s\",\"bars\":%zu,\"volume\":%s,\"poc\":%s,\"vah\":%s,"
                  "\"val\":%s}\n",
                  s->label, s->n, v, poc, vah, val) < 0
               ? -EIO
               : 0;
}

/* Every session through the backend; all results before any output. */
static int cli_vpoc_compute(struct compute *c, const struct cli_vpoc_opts *o,
                            const struct data_series *ds, const struct data_sessions *ss,
                            struct vpoc_result *res) {
    char err[512];
    struct vpoc_bar *bars = malloc((ds->n ? ds->n : 1) * sizeof(*bars));
    if (!bars) {
        fprintf(stderr, "ringside vpoc: out of memory\n");
        return 1;
    }
    vpoc_bars_from_series(ds->bars, ds->n, bars);
    int rc = vpoc_sessions_check(bars, ss, &o->p, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "ringside vpoc: %s: %s\n", o->in.data, err);
        free(bars);
        return RS_EXIT_USAGE;
    }
    rc = compute_vpoc_all(c, bars, ss, &o->p, o->chunk > 0 ? (size_t)o->chunk : 0, res, err,
                          sizeof(err));
    if (rc != 0)
        fprintf(stderr, "ringside vpoc: %s\n", err);
    free(bars);
    return rc == 0 ? 0 : 1;
}

static int cli_vpoc_load(const struct cli_vpoc_opts *o, struct data_series *ds,
                         struct data_sessions *ss) {
    int rc = cli_data_load("vpoc", &o->in, ds);
    if (rc == 0 && data_sessions_split(ds, (int)o->start_hour, ss) != 0) {
        fprintf(stderr, "ringside vpoc: out of memory\n");
        rc = 1;
    }
    return rc;
}

int cli_vpoc(int argc, char **argv) {
    struct cli_vpoc_opts o;
    int rc = cli_vpoc_parse(argc, argv, &o);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    struct compute *c = NULL;
    if ((rc = cli_data_compute("vpoc", o.backend, &c)) != 0)
        return rc;
    struct data_series ds;
    struct data_sessions ss = {0};
    struct vpoc_result *res = NULL;
    data_series_init(&ds);
    rc = cli_vpoc_load(&o, &ds, &ss);
    if (rc == 0 && !(res = calloc(ss.n ? ss.n : 1, sizeof(*res)))) {
        fprintf(stderr, "ringside vpoc: out of memory\n");
        rc = 1;
    }
    if (rc == 0)
        rc = cli_vpoc_compute(c, &o, &ds, &ss, res);
    for (size_t k = 0; rc == 0 && k < ss.n; k++)
        if (cli_vpoc_print(&ds, &ss.s[k], &res[k]) != 0)
            rc = 1;
    if (rc == 0 && fflush(stdout) != 0)
        rc = 1;
    free(res);
    data_sessions_fini(&ss);
    data_series_fini(&ds);
    compute_close(c);
    return rc;
}
