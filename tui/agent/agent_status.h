/* The agent's status line: what a remote dashboard needs beyond the recording's events, sent on
 * /events whenever it changes (sticky: a new follower gets the latest at once):
 *   {"type":"status","t_ns":N,"control":true|false,
 *    "telemetry":{"providers":[...],"gpus":[...]} | null,      (tele_json_write's object)
 *    "kmsg":{"state":"live","reason":"","lines":N,"events":N,"lost":N,"cut":N,"dropped":N} | null,
 *    "inflight":{"dev":D,"op":"device","phase":"sync","start_ns":N} | null}
 * t_ns is the agent's monotonic clock when written: the reader maps the run's clock onto its own
 * with it. */
#ifndef RINGSIDE_TUI_AGENT_AGENT_STATUS_H
#define RINGSIDE_TUI_AGENT_AGENT_STATUS_H

#include "backend/kmsg/kmsg_watch.h"
#include "backend/telemetry/tele.h"
#include "backend/trace/trace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct agent_status {
    uint64_t t_ns;
    bool control; /* the agent takes loop commands (--allow-control with a token) */
    bool has_tele;
    struct tele_snap tele; /* large: keep struct agent_status off small stacks */
    bool has_kmsg;
    struct kmsg_stats kmsg;
    char kmsg_reason[256];
    bool has_inflight;
    unsigned inflight_dev;
    struct trace_inflight inflight;
};

/* The line (no newline) into a malloc'd string (*out, *len). 0 or -ENOMEM. */
int agent_status_write(const struct agent_status *s, char **out, size_t *len);

/* Parse a status line. Unknown members are ignored (newer agents may add some); a member of the
 * wrong type is an error. 0, or -EINVAL with why ("member 'kmsg': not an object", ...). */
int agent_status_parse(const char *line, size_t len, struct agent_status *s, char *why,
                       size_t whylen);

#endif
