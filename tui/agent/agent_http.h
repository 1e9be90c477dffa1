/* The agent's HTTP endpoint (libmicrohttpd, a thread per connection):
 *   GET  /metrics          the Prometheus text format (version 0.0.4), or OpenMetrics 1.0.0 when
 *                          the Accept header asks for application/openmetrics-text; never needs
 *                          a token
 *   GET  /events?since=SEQ the JSON lines of agent_log.h, following until the agent stops
 *                          (&follow=0: what is held now, then the end); keep-alive blank lines
 *   GET  /healthz          "ok" (200), or why not (503)
 *   POST /control?cmd=C[&arg=N]   C: a command of EV_CMDS that /control takes (ev_cmd_remote):
 *                          set_chunk (arg: bars, 0 = whole sessions), chunk_step (arg: 1 or
 *                          -1, a rung up or down), pause, resume, cleanup, probe. Only with
 *                          allow_control and a token; answers JSON
 *                          {"ok":true,"message":".."} or {"ok":false,"error":".."}
 * With a token, everything but /metrics needs "Authorization: Bearer TOKEN" (401 otherwise,
 * compared in constant time); an address group (http_addr.h: IPv4 alone, IPv6 by /64) that
 * sent auth_failures wrong tokens within 60 s is answered 429 (Retry-After) without a look at
 * its token for 10 s, doubling at each further round up to 15 min (http_throttle.h). Other
 * paths 404, other methods 405, a request body or headers over the limit 413/431; a target
 * whose path holds %00, two Host headers or a Host that is not host[:port] 400, a query of more
 * than AGENT_HTTP_MAX_ARGS arguments 414. A request must arrive whole within request_timeout_ms of
 * the accept; a new connection that finds the server or its address full takes the place of a
 * connection still sending its request (see http_guard.h), and is refused only when every place
 * holds a request that arrived. /events streams hold at most max_followers places (503 with
 * Retry-After beyond), at most followers_per_address of them from one address group (429), so
 * that neither clients that drip bytes nor followers can lock /healthz, /metrics and /control
 * out. Refused followers and wrong tokens are logged (handlers->say), at most a line of each
 * kind per 10 s with the count since the last. With TLS
 * credentials (agent_tls.h) the TCP listener speaks HTTPS only; a UNIX socket stays plain HTTP.
 * Nothing from a request reaches a shell or a file path. */
#ifndef RINGSIDE_TUI_AGENT_AGENT_HTTP_H
#define RINGSIDE_TUI_AGENT_AGENT_HTTP_H

#include "backend/core/ev.h"
#include "tui/agent/agent_log.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGENT_HTTP_DEFAULT_LISTEN "127.0.0.1:9464"
#define AGENT_HTTP_TOKEN_BYTES    256
#define AGENT_HTTP_MAX_ARGS       32 /* query arguments read at most (414 beyond) */

struct agent_tls;

struct agent_http_conf {
    char listen[128];    /* "ADDR:PORT" (IPv4, or [IPv6]:PORT; port 0 = a free one), or
                          * "" for none */
    char unix_path[108]; /* a UNIX socket to listen on (created, mode 0660), or "" */
    char token[AGENT_HTTP_TOKEN_BYTES]; /* the bearer token, "" = none */
    bool allow_control;                 /* POST /control acts (needs a token) */
    unsigned max_connections;           /* at once, over all listeners (default 256) */
    size_t max_request_bytes;           /* request line, headers and body (default 8192) */
    unsigned idle_timeout_s;            /* a connection that sends nothing is closed (default 30) */
    unsigned per_address;               /* connections at once from one IP address (default 64) */
    unsigned request_timeout_ms;    /* from the accept to the whole request (line, headers, body),
                                     * else the connection is shut down (default 10000) */
    unsigned max_followers;         /* /events streams at once, below max_connections (0, the
                                     * default: a quarter of max_connections, at least 1 and at
                                     * most max_connections - 1) */
    unsigned followers_per_address; /* of them from one address group, below per_address (0,
                                     * the default: 8, at most max_followers and at most
                                     * per_address - 1, at least 1) */
    unsigned auth_failures;      /* wrong tokens from one address group within 60 s that hold it off
                                  * (0, the default: 10) */
    const struct agent_tls *tls; /* HTTPS on the TCP listener with these credentials (loaded by
                                  * agent_tls_load, kept until agent_http_stop), NULL: HTTP */
};

/* Defaults: listen AGENT_HTTP_DEFAULT_LISTEN, no UNIX socket, no token, no control, 256
 * connections (64 from one address), 8192 bytes, 30 s idle, 10 s for a request, no TLS; the
 * follower and token limits 0 (their defaults: see agent_http_limits). */
void agent_http_conf_default(struct agent_http_conf *c);

/* The follower limits c gets (its 0s replaced by their defaults): 0, or -EINVAL with why
 * ("--max-followers 256 must be below --max-connections 256 (...)"). */
int agent_http_limits(const struct agent_http_conf *c, unsigned *followers, unsigned *per_address,
                      char *why, size_t whylen);

/* got == want, in a time that depends on want's length only (every byte of want is looked at,
 * whatever got holds): how a request's token is checked. */
bool agent_http_token_equal(const char *got, const char *want);

/* Parse "ADDR:PORT" as the listen option takes it. 0, or -EINVAL with why. */
int agent_http_parse_listen(const char *s, char *addr, size_t addrlen, unsigned *port, char *why,
                            size_t whylen);

/* What the endpoints serve; every callback may be called from any connection's thread at once. */
struct agent_http_handlers {
    void *ctx;
    /* The exposition text now (openmetrics: the OpenMetrics form), as a malloc'd buffer the
     * server frees. 0 or -errno (then 500). */
    int (*metrics)(void *ctx, bool openmetrics, char **out, size_t *len);
    /* Apply a loop command. 0 with msg ("set_chunk 250 requested ..."), or
     * -EINVAL / -EBUSY / -ENOTSUP with msg saying why. */
    int (*control)(void *ctx, enum ev_cmd_id cmd, int64_t arg, char *msg, size_t msglen);
    /* true when healthy; why gets a line either way ("ok", "training failed: ..."). */
    bool (*health)(void *ctx, char *why, size_t whylen);
    /* A line for the agent's log, without a newline (refused followers, wrong tokens: at most
     * one line of each kind per 10 s, with the count since the last); NULL: none. */
    void (*say)(void *ctx, const char *line);
    struct agent_log *log; /* what /events follows */
};

/* Request counters for the agent's own metrics. */
struct agent_http_stats {
    uint64_t requests;     /* answered, any status */
    uint64_t answered;     /* answered with a status below 400: each its own count, so the
                              three outcomes are counters that only grow */
    uint64_t unauthorized; /* 401 */
    uint64_t refused;      /* 4xx other than 401, and connections over the limit */
    /* connections shut down or refused by the request deadline and the limits (see
     * http_guard.h): late requests, requests in progress pushed out for a new connection,
     * refusals with every place taken (in all, and from one address) */
    uint64_t timed_out, evicted, over_limit, over_address;
    /* /events refused (and their connections closed): every follower place taken (503), the
     * address group's share taken (429) */
    uint64_t over_followers, over_follower_address;
    uint64_t auth_failed;  /* wrong tokens: an Authorization header that is not the token */
    uint64_t auth_backoff; /* answered 429 without a look at the token (and closed): the
                            * address group sent too many wrong ones */
    unsigned connections;  /* open now */
    unsigned followers;    /* /events streams open now */
};

struct agent_http;

/* Bind and start serving. 0, or -errno with err ("cannot listen on 127.0.0.1:9464: Address
 * already in use", -EINVAL "--allow-control needs --token-file"). A quiet /events stream gets a
 * blank line every 5 s (sooner with an idle timeout under 10 s: half of it). */
int agent_http_start(struct agent_http **out, const struct agent_http_conf *c,
                     const struct agent_http_handlers *h, char *err, size_t errlen);

/* The TCP port listened on (the chosen one for port 0), or 0 without TCP. */
unsigned agent_http_port(const struct agent_http *s);

void agent_http_stats(struct agent_http *s, struct agent_http_stats *out);

/* Stop: the listeners close, open /events streams end (close the log first for a clean end of
 * stream), every connection thread is joined. NULL is a no-op. The log (handlers->log) must
 * outlive the server: destroy it after this. */
void agent_http_stop(struct agent_http *s);

#endif
