/* `ringside attach URL`: a source (backend/run/source.h) that follows a remote agent's /events
 * stream. A reader thread keeps the connection (reconnecting with since= the last event seen, so
 * nothing still held by the agent is lost), parses the lines and hands them to the UI thread; the
 * snapshot is rebuilt from the events as a replay does, the telemetry and kernel-log counters come
 * from the status lines, and the run's clock is the agent's, mapped onto ours. The loop's keys (p +
 * - c m) are sent back as POST /control when the agent allows control and a token was given;
 * otherwise run.control_off says why and they do nothing. */
#ifndef RINGSIDE_TUI_AGENT_REMOTE_H
#define RINGSIDE_TUI_AGENT_REMOTE_H

#include "backend/run/source.h"

#include <stdbool.h>
#include <stddef.h>

struct remote_conf {
    char url[512];     /* http://host:port, https://host:port or unix:/path */
    char token[256];   /* bearer token, "" = none */
    char cacert[1024]; /* https: a PEM file of the CA certificates that vouch for the agent,
                        * trusted instead of the system's; "" = the system's */
    int timeout_ms;    /* connect and read timeout (default 10000; the agent sends a keep-alive
                        * line every few seconds) */
    int retry_ms;      /* between reconnects (default 1000) */
};

void remote_conf_default(struct remote_conf *c);

/* Whether c's token would cross a network in clear: a token given, an http:// URL (neither
 * https:// nor unix:) and a host that is not this machine's loopback (localhost, 127.0.0.0/8,
 * ::1). Pure; false for a URL that does not parse (remote_open says why). */
bool remote_token_in_clear(const struct remote_conf *c);

/* Connect and read the run line (so a wrong URL or token is a plain error before the terminal
 * is taken), then start the reader thread. 0, or -errno with err ("http://h:9464/events: 401
 * Unauthorized: give the agent's token with --token-file", "...: not a ringside agent",
 * "https://h:9464/events: the server's certificate is not trusted (...); ... --cacert FILE"). */
int remote_open(struct source **out, const struct remote_conf *c, char *err, size_t errlen);

#endif
