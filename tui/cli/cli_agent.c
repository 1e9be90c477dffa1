/* `ringside agent`: its own flags, and the training, telemetry and kernel-log flags of `train`
 * for everything else. */
#include "backend/core/errbuf.h"
#include "tui/agent/agent.h"
#include "tui/cli/cli.h"
#include "tui/cli/cli_args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char cli_agent_usage[] =
    "usage: ringside agent [--listen ADDR:PORT|none] [--unix PATH] [--token-file FILE] "
    "[--tls-cert FILE --tls-key FILE] [--allow-control] [--train | --watch [--socket PATH]] "
    "[--log FILE] [train options]";

static const char cli_agent_help[] =
    "Run telemetry, the kernel-log watcher and, with --train, the training loop without a\n"
    "terminal, and serve them over HTTP: GET /metrics (Prometheus; OpenMetrics when asked for),\n"
    "GET /events?since=SEQ (the JSON lines of 'train --headless', followed live, for 'ringside\n"
    "attach'), GET /healthz, and POST /control when allowed. SIGTERM or SIGINT stops it (the\n"
    "training step ends and the checkpoint is written; a second one leaves at once, exit\n"
    "status 130); SIGHUP reopens --log.\n"
    "\n"
    "  --listen ADDR:PORT       where to listen (default " AGENT_HTTP_DEFAULT_LISTEN
    "; [::1]:PORT for\n"
    "                           IPv6; port 0 picks a free one; none: only --unix)\n"
    "  --unix PATH              also listen on a UNIX socket (mode 0660)\n"
    "  --token-file FILE        a bearer token (the file's first line) that every request but\n"
    "                           /metrics must carry: 'Authorization: Bearer TOKEN'\n"
    "  --tls-cert FILE          serve HTTPS (only) on --listen with this PEM certificate (or\n"
    "                           chain); needs --tls-key. --unix stays plain HTTP\n"
    "  --tls-key FILE           the certificate's PEM private key, unencrypted (keep it 0600)\n"
    "  --allow-control          take loop commands (chunk size, cleanup, probe, pause) on\n"
    "                           POST /control; needs --token-file and --train\n"
    "  --train                  run the training loop here (default: telemetry and kernel log)\n"
    "  --watch                  serve the stream of a PyTorch job that attaches with the Python\n"
    "                           bridge (python/ringside), as 'ringside watch' shows it; POST\n"
    "                           /control goes to it\n"
    "  --socket PATH            where --watch listens (default as 'ringside watch')\n"
    "  --log FILE               append messages to FILE instead of stderr\n"
    "  --max-connections N      connections at once (default 256)\n"
    "  --max-per-address N      connections at once from one IP address (an IPv6 /64 counts as\n"
    "                           one; default 64)\n"
    "  --max-followers N        /events streams at once, below --max-connections (default: a\n"
    "                           quarter of it, 64); the other places stay for short requests\n"
    "  --max-followers-per-address N\n"
    "                           /events streams at once from one IP address, below\n"
    "                           --max-per-address (default 8)\n"
    "  --request-timeout S      a request must arrive whole within S seconds of the accept\n"
    "                           (default 10)\n"
    "  --metrics-interval S     how often the /metrics text is rebuilt (default 1)\n"
    "  --events-window N        event lines kept for followers that reconnect (default 65536)\n"
    "  -h, --help               this help\n"
    "\n"
    "Every other option is one of 'ringside train --help': the data, training and GPU options\n"
    "(with --train), --telemetry and its roots, the kernel-log options, --sync-slow and\n"
    "--sync-timeout, --config. The dashboard's (--headless, --jsonl, --record, --frames,\n"
    "--theme, -d) do not apply.\n";

enum {
    CLI_AGENT_LISTEN = 1000, /* above train's ids: the two tables are read together */
    CLI_AGENT_UNIX,
    CLI_AGENT_TOKEN,
    CLI_AGENT_CONTROL,
    CLI_AGENT_TRAIN,
    CLI_AGENT_LOG,
    CLI_AGENT_MAXCONN,
    CLI_AGENT_PERADDR,
    CLI_AGENT_REQTIMEOUT,
    CLI_AGENT_METRICS,
    CLI_AGENT_WINDOW,
    CLI_AGENT_WATCH,
    CLI_AGENT_SOCKET,
    CLI_AGENT_TLS_CERT,
    CLI_AGENT_TLS_KEY,
    CLI_AGENT_FOLLOWERS,
    CLI_AGENT_FOLLOWERS_PERADDR,
};

static const struct option cli_agent_longopts[] = {
    {"listen", required_argument, NULL, CLI_AGENT_LISTEN},
    {"unix", required_argument, NULL, CLI_AGENT_UNIX},
    {"token-file", required_argument, NULL, CLI_AGENT_TOKEN},
    {"allow-control", no_argument, NULL, CLI_AGENT_CONTROL},
    {"train", no_argument, NULL, CLI_AGENT_TRAIN},
    {"log", required_argument, NULL, CLI_AGENT_LOG},
    {"max-connections", required_argument, NULL, CLI_AGENT_MAXCONN},
    {"max-per-address", required_argument, NULL, CLI_AGENT_PERADDR},
    {"request-timeout", required_argument, NULL, CLI_AGENT_REQTIMEOUT},
    {"metrics-interval", required_argument, NULL, CLI_AGENT_METRICS},
    {"events-window", required_argument, NULL, CLI_AGENT_WINDOW},
    {"watch", no_argument, NULL, CLI_AGENT_WATCH},
    {"socket", required_argument, NULL, CLI_AGENT_SOCKET},
    {"tls-cert", required_argument, NULL, CLI_AGENT_TLS_CERT},
    {"tls-key", required_argument, NULL, CLI_AGENT_TLS_KEY},
    {"max-followers", required_argument, NULL, CLI_AGENT_FOLLOWERS},
    {"max-followers-per-address", required_argument, NULL, CLI_AGENT_FOLLOWERS_PERADDR},
    {NULL, 0, NULL, 0},
};

static int cli_agent_flag(struct agent_opts *o, int id, const char *v, char *err, size_t n) {
    long x = 0;
    double d = 0;
    int rc = 0;
    switch (id) {
    case CLI_AGENT_LISTEN:
        if (strcmp(v, "none") == 0) {
            o->http.listen[0] = '\0';
            return 0;
        }
        char addr[128], why[160];
        unsigned port;
        if (agent_http_parse_listen(v, addr, sizeof(addr), &port, why, sizeof(why)) != 0)
            return errbuf_set(err, n, -EINVAL, "--listen: %s", why);
        return cli_copy("--listen", o->http.listen, sizeof(o->http.listen), v, err, n);
    case CLI_AGENT_UNIX:
        return cli_copy("--unix", o->http.unix_path, sizeof(o->http.unix_path), v, err, n);
    case CLI_AGENT_TOKEN:
        return cli_token_read(v, o->http.token, sizeof(o->http.token), err, n);
    case CLI_AGENT_CONTROL:
        o->http.allow_control = true;
        return 0;
    case CLI_AGENT_TRAIN:
        o->train_loop = true;
        return 0;
    case CLI_AGENT_LOG:
        return cli_copy("--log", o->log_path, sizeof(o->log_path), v, err, n);
    case CLI_AGENT_MAXCONN:
        if ((rc = cli_parse_long("--max-connections", v, 1, 4096, &x, err, n)) == 0)
            o->http.max_connections = (unsigned)x;
        return rc;
    case CLI_AGENT_PERADDR:
        if ((rc = cli_parse_long("--max-per-address", v, 1, 4096, &x, err, n)) == 0)
            o->http.per_address = (unsigned)x;
        return rc;
    case CLI_AGENT_FOLLOWERS:
        if ((rc = cli_parse_long("--max-followers", v, 1, 4095, &x, err, n)) == 0)
            o->http.max_followers = (unsigned)x;
        return rc;
    case CLI_AGENT_FOLLOWERS_PERADDR:
        if ((rc = cli_parse_long("--max-followers-per-address", v, 1, 4095, &x, err, n)) == 0)
            o->http.followers_per_address = (unsigned)x;
        return rc;
    case CLI_AGENT_REQTIMEOUT:
        if ((rc = cli_parse_double("--request-timeout", v, 0.1, 3600, &d, err, n)) == 0)
            o->http.request_timeout_ms = (unsigned)(d * 1000 + 0.5);
        return rc;
    case CLI_AGENT_METRICS:
        if ((rc = cli_parse_double("--metrics-interval", v, 0.05, 3600, &d, err, n)) == 0)
            o->metrics_every_ns = (uint64_t)(d * 1e9);
        return rc;
    case CLI_AGENT_WATCH:
        o->watch = true;
        return 0;
    case CLI_AGENT_SOCKET:
        return cli_copy("--socket", o->socket, sizeof(o->socket), v, err, n);
    case CLI_AGENT_TLS_CERT:
        return cli_copy("--tls-cert", o->tls_cert, sizeof(o->tls_cert), v, err, n);
    case CLI_AGENT_TLS_KEY:
        return cli_copy("--tls-key", o->tls_key, sizeof(o->tls_key), v, err, n);
    case CLI_AGENT_WINDOW:
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
    const struct option *tables[] = {cli_agent_longopts, cli_train_options(), NULL};
    struct cli_args a;
    cli_args_init(&a, argc, argv, "d:h", tables);
    char err[1024];
    int n_rest = 0, copied = 1, id;
    rest[n_rest++] = argv[0];
    while ((id = cli_args_next(&a, err, sizeof(err))) != 0) {
        if (id < 0)
            return cli_usage_error("agent", err);
        if (id == 'h') {
            printf("%s\n\n%s", cli_agent_usage, cli_agent_help);
            return 1;
        }
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
    if (cli_agent_check(o, t, err, sizeof(err)) != 0 || cli_agent_tls(o, err, sizeof(err)) != 0)
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
