/* `ringside agent`: telemetry, the kernel-log watcher and, with --train, the training loop,
 * without a terminal, served over HTTP (agent_http.h): /metrics for Prometheus, /events for
 * remote dashboards, /healthz, and loop commands when allowed. */
#ifndef RINGSIDE_TUI_AGENT_AGENT_H
#define RINGSIDE_TUI_AGENT_AGENT_H

#include "backend/run/run_opts.h"
#include "tui/agent/agent_http.h"
#include "tui/agent/agent_tls.h"

#include <stdbool.h>
#include <stdint.h>

struct agent_opts {
    struct run_opts run;            /* telemetry and kernel-log flags; the loop's with --train */
    bool train_loop;                /* --train: run the training loop in the agent */
    struct agent_http_conf http;    /* listeners, token, control, limits; TLS: http.tls = &tls */
    char tls_cert[ENGINE_PATH_MAX]; /* --tls-cert FILE, "" = none (then tls_key is "" too) */
    char tls_key[ENGINE_PATH_MAX];  /* --tls-key FILE */
    struct agent_tls tls;           /* both read and checked before the agent starts; the
                                     * owner of the options releases them (agent_tls_fini) */
    char log_path[ENGINE_PATH_MAX]; /* --log FILE (appended to, reopened on SIGHUP), "" = stderr */
    uint64_t metrics_every_ns;      /* how often /metrics' text is rebuilt (default 1 s) */
    size_t window_lines, window_bytes; /* what /events keeps for followers that reconnect */
    /* --watch: serve the stream of a PyTorch job attached through the bridge (python/ringside)
     * at socket ("" = the default path) instead of a loop of ours; POST /control goes to it */
    bool watch;
    char socket[108];
};

/* Defaults: no training loop, AGENT_HTTP_DEFAULT_LISTEN, stderr, 1 s, 65536 lines / 64 MiB. */
void agent_opts_default(struct agent_opts *o);

/* Run until SIGTERM or SIGINT (a second one leaves at once): the training loop, if any, stops
 * gracefully (the step ends, the checkpoint is written), followers get the summary line, the
 * listeners close. 0; 1 when training failed or a service could not start; 2 for a bad
 * option, token file or listen address (said on stderr in one line). */
int agent_run(const struct agent_opts *o);

#endif
