/* `ringside replay FILE`: a recorded run (headless JSON lines or --record) in the dashboard. */
#include "backend/core/errbuf.h"
#include "backend/kmsg/remedies.h"
#include "backend/run/replay.h"
#include "tui/cli/cli.h"
#include "tui/cli/cli_optab.h"
#include "tui/dashboard/app.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cli_replay_opts {
    struct cli_train_opts o;
    double speed;
    const char *file;
};

static int cli_replay_opt(int id, const char *v, void *ctx, char *err, size_t n) {
    struct cli_replay_opts *r = ctx;
    int rc;
    switch (id) {
    case CLI_O_REPLAY_SPEED:
        return cli_parse_double("--speed", v, REPLAY_SPEED_MIN, REPLAY_SPEED_MAX, &r->speed, err,
                                n);
    case 1: /* the FILE operand ("-" in shortopts returns operands in order) */
        if (r->file)
            return errbuf_set(err, n, -EINVAL, "unexpected argument '%s'", v);
        r->file = v;
        return 0;
    default:
        rc = cli_view_opt(&r->o, id, v, err, n);
        return rc == -ENOENT ? errbuf_set(err, n, -EINVAL, "internal: unhandled option") : rc;
    }
}

static int cli_replay_parse(int argc, char **argv, struct cli_replay_opts *r) {
    cli_view_defaults(&r->o);
    r->speed = 1.0;
    int rc = cli_getopt_run(argc, argv, "replay", CLI_CMD_REPLAY, true, cli_replay_opt, r);
    if (rc != 0)
        return rc;
    if (!r->file)
        return cli_usage_error("replay", "FILE is required");
    return 0;
}

int cli_replay(int argc, char **argv) {
    struct cli_replay_opts *r = calloc(1, sizeof(*r));
    if (!r)
        return 1;
    int rc = cli_replay_parse(argc, argv, r);
    if (rc != 0) {
        free(r);
        return rc == 1 ? 0 : rc;
    }
    struct source *src = NULL;
    char err[ENGINE_PATH_MAX + 256];
    if (replay_open(&src, r->file, r->speed, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringside replay: %s\n", err);
        free(r);
        return RS_EXIT_USAGE;
    }
    struct remedies *rules = NULL; /* a recording's kernel-log events get their remedies too */
    if (remedies_load(&rules, NULL, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringside replay: %s\n", err);
        src->ops->destroy(src);
        free(r);
        return RS_EXIT_USAGE;
    }
    struct app_services svc = {NULL, NULL, rules};
    rc = app_main(src, &r->o.view, &svc);
    const char *st = src->ops->status(src);
    if (rc == 0 && strncmp(st, "stopped at line", 15) == 0) { /* a damaged recording: said */
        fprintf(stderr, "ringside replay: %s: %s\n", r->file, st);
        rc = RS_EXIT_USAGE;
    }
    src->ops->destroy(src);
    remedies_free(rules);
    free(r);
    return rc;
}
