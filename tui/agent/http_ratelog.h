/* A log line that repeats at most once a period, saying how many times its event happened
 * since the line before: what the agent writes for refused followers and wrong tokens, so a
 * flood of them costs the log one line every few seconds and loses no count. The time is the
 * caller's (monotonic ns). Thread-safe. */
#ifndef RINGSIDE_TUI_AGENT_HTTP_RATELOG_H
#define RINGSIDE_TUI_AGENT_HTTP_RATELOG_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct http_ratelog {
    pthread_mutex_t mu;
    uint64_t period_ns;
    uint64_t last_ns; /* the last line was due (valid once said) */
    bool said;        /* a line was due at least once */
    uint64_t count;   /* events since the last line */
};

void http_ratelog_init(struct http_ratelog *r, uint64_t period_ns);
void http_ratelog_fini(struct http_ratelog *r);

/* One event at now: true when its line is due (the first event ever, or the first one at least
 * period_ns after the last line), with *count the events since the last line, this one
 * included; the caller then writes the line. false: counted for the next line. */
bool http_ratelog_note(struct http_ratelog *r, uint64_t now, uint64_t *count);

/* The events not yet in a line (for a last line at the end): true with *count when any. */
bool http_ratelog_flush(struct http_ratelog *r, uint64_t *count);

#endif
