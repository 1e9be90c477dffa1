/* `ringside agent`: its own flags, and the training, telemetry and kernel-log flags of `train`
 * for everything else. */
#include "backend/core/errbuf.h"
#include "tui/agent/agent.h"
#include "tui/agent/http_libs.h"
#include "tui/cli/cli.h"
#include "tui/cli/cli_args.h"
#include "tui/cli/cli_optab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cli_agent_flag(struct agent_opts *o, int id, const char *v, char *err, size_t n) {
    long x = 0;
    double d = 0;
    int rc = 0;
    switch (id) {
    case CLI_O_AGENT_LISTEN:
        if (strcmp(v, "none") == 0) {
            o->http.listen[0] = '\0';
            return 0;
        }
        char addr[128], why[160];
        unsigned port;
        if (agent_http_parse_listen(v, addr, sizeof(addr), &port, why, sizeof(why)) != 0)
            return errbuf_set(err, n, -EINVAL, "--listen: %s", why);
        return cli_copy("--listen", o->http.listen, sizeof(o->http.listen), v, err, n);
    case CLI_O_AGENT_UNIX:
        return cli_copy("--unix", o->http.unix_path, sizeof(o->http.unix_path), v, err, n);
    case CLI_O_AGENT_TOKEN_FILE:
        return cli_token_read(v, o->http.token, sizeof(o->http.token), err, n);
    case CLI_O_AGENT_ALLOW_CONTROL:
        o->http.allow_control = true;
        return 0;
    case CLI_O_AGENT_TRAIN:
        o->train_loop = true;
        return 0;
    case CLI_O_AGENT_LOG:
        return cli_copy("--log", o->log_path, sizeof(o->log_path), v, err, n);
    case CLI_O_AGENT_MAX_CONNECTIONS:
        if ((rc = cli_parse_long("--max-connections", v, 1, 4096, &x, err, n)) == 0)
            o->http.max_connections = (unsigned)x;
        return rc;
    case CLI_O_AGENT_MAX_PER_ADDRESS:
        if ((rc = cli_parse_long("--max-per-address", v, 1, 4096, &x, err, n)) == 0)
            o->http.per_address = (unsigned)x;
        return rc;
    case CLI_O_AGENT_MAX_FOLLOWERS:
        if ((rc = cli_parse_long("--max-followers", v, 1, 4095, &x, err, n)) == 0)
            o->http.max_followers = (unsigned)x;
        return rc;
    case CLI_O_AGENT_MAX_FOLLOWERS_PER_ADDRESS:
        if ((rc = cli_parse_long("--max-followers-per-address", v, 1, 4095, &x, err, n)) == 0)
            o->http.followers_per_address = (unsigned)x;
        return rc;
    case CLI_O_AGENT_REQUEST_TIMEOUT:
        if ((rc = cli_parse_double("--request-timeout", v, 0.1, 3600, &d, err, n)) == 0)
            o->http.request_timeout_ms = (unsigned)(d * 1000 + 0.5);
        return rc;
    case CLI_O_AGENT_METRICS_INTERVAL:
        if ((rc = cli_parse_double("--metrics-interval", v, 0.05, 3600, &d, err, n)) == 0)
            o->metrics_every_ns = (uint64_t)(d * 1e9);
        return rc;
    case CLI_O_AGENT_WATCH:
        o->watch = true;
        return 0;
    case CLI_O_AGENT_SOCKET:
        return cli_copy("--socket", o->socket, sizeof(o->socket), v, err, n);
    case CLI_O_AGENT_TLS_CERT:
        return cli_copy("--tls-cert", o->tls_cert, sizeof(o->tls_cert), v, err, n);
    case CLI_O_AGENT_TLS_KEY:
        return cli_copy("--tls-key", o->tls_key, sizeof(o->tls_key), v, err, n);
    case CLI_O_AGENT_EVENTS_WINDOW:
        if ((rc = cli_parse_long("--events-window", v, 16, 16777216, &x, err, n)) == 0)
            o->window_lines = (size_t)x;
        return rc;
    default:
        return errbuf_set(err, n, -EINVAL, "internal: unhandled option");
    }
}

/* The dashboard's flags parse as train options but mean nothing here. */
static int cli_agent_check(const struct agent_opts *o, const struct cli_train_opts *t, char *err,
                           size_t n) {
    const char *bad = t->headless        ? "--headless"
                      : t->run.jsonl[0]  ? "--jsonl"
                      : t->run.record[0] ? "--record"
                      : t->view.frames   ? "--frames"
                      : t->view.theme[0] ? "--theme"
                                         : NULL;
    if (bad)
        return errbuf_set(err, n, -EINVAL, "%s is a dashboard option; the agent has no terminal",
                          bad);
    if (!o->http.listen[0] && !o->http.unix_path[0])
        return errbuf_set(err, n, -EINVAL, "--listen none needs --unix PATH");
    if (o->http.allow_control && !o->http.token[0])
        return errbuf_set(err, n, -EINVAL, "--allow-control needs --token-file FILE");
    if (o->train_loop && o->watch)
        return errbuf_set(err, n, -EINVAL, "--train and --watch: one stream at a time");
    if (o->socket[0] && !o->watch)
        return errbuf_set(err, n, -EINVAL, "--socket needs --watch");
    if (o->http.allow_control && !o->train_loop && !o->watch)
        return errbuf_set(err, n, -EINVAL,
                          "--allow-control needs --train or --watch (nothing to control)");
    if (!o->tls_cert[0] != !o->tls_key[0])
        return errbuf_set(err, n, -EINVAL, "%s: give both --tls-cert FILE and --tls-key FILE",
                          o->tls_cert[0] ? "--tls-cert without --tls-key"
                                         : "--tls-key without --tls-cert");
    unsigned followers, per_address;
    int rc = agent_http_limits(&o->http, &followers, &per_address, err, n);
    if (rc < 0)
        return rc;
    if (o->tls_cert[0] && !o->http.listen[0])
        return errbuf_set(err, n, -EINVAL,
                          "--tls-cert with --listen none: TLS is for the TCP listener (a UNIX "
                          "socket stays plain HTTP)");
    return 0;
}

/* --tls-cert and --tls-key read and checked now, before anything starts. */
static int cli_agent_tls(struct agent_opts *o, char *err, size_t n) {
    if (!o->tls_cert[0])
        return 0;
    int rc = agent_tls_load(&o->tls, o->tls_cert, o->tls_key, err, n);
    if (rc == 0)
        o->http.tls = &o->tls;
    return rc;
}

/* 0, 1 after --help, or RS_EXIT_USAGE after the error. The agent's flags and train's are
 * read together (one rule, one error for a name that is neither); train's words go on to
 * cli_train_parse in rest, in order. */
static int cli_agent_parse(int argc, char **argv, struct agent_opts *o, struct cli_train_opts *t,
                           char **rest) {
    const struct option *tables[] = {cli_optab_longopts(CLI_CMD_AGENT), cli_train_options(), NULL};
    struct cli_args a;
    cli_args_init(&a, argc, argv, cli_optab_shortopts(CLI_CMD_TRAIN), tables);
    char err[1024];
    int n_rest = 0, copied = 1, id;
    rest[n_rest++] = argv[0];
    while ((id = cli_args_next(&a, err, sizeof(err))) != 0) {
        if (id < 0)
            return cli_usage_error("agent", err);
        if (id == 'h' || id == CLI_O_HELP)
            return cli_optab_help(CLI_CMD_AGENT, stdout) == 0 ? 1 : RS_EXIT_USAGE;
        if (a.table != 0) /* train's: its words as given, "--" included */
            while (copied < a.next)
                rest[n_rest++] = argv[copied++];
        else if (cli_agent_flag(o, id, a.value, err, sizeof(err)) != 0)
            return cli_usage_error("agent", err);
        copied = a.next;
    }
    rest[n_rest] = NULL;
    int rc = cli_train_parse(n_rest, rest, "agent", t);
    if (rc != 0)
        return rc;
    if (cli_agent_check(o, t, err, sizeof(err)) != 0)
        return cli_usage_error("agent", err);
    if (http_libs_server(err, sizeof(err)) != 0) { /* before anything starts: what to install */
        fprintf(stderr, "ringside agent: %s\n", err);
        return RS_EXIT_USAGE;
    }
    if (cli_agent_tls(o, err, sizeof(err)) != 0)
        return cli_usage_error("agent", err);
    o->run = t->run;
    return 0;
}

int cli_agent(int argc, char **argv) {
    struct agent_opts *o = calloc(1, sizeof(*o));
    struct cli_train_opts *t = calloc(1, sizeof(*t));
    char **rest = calloc((size_t)argc + 1, sizeof(*rest));
    if (!o || !t || !rest) {
        free(o);
        free(t);
        free(rest);
        return 1;
    }
    agent_opts_default(o);
    int rc = cli_agent_parse(argc, argv, o, t, rest);
    if (rc == 0)
        rc = agent_run(o);
    else if (rc == 1)
        rc = 0;
    agent_tls_fini(&o->tls); /* the server has stopped: the key is wiped */
    free(rest);
    free(t);
    free(o);
    return rc;
}
