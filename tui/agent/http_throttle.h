/* The agent's answer to token guessing: per address group (http_addr.h: IPv4 on its own, IPv6
 * by /64; the clients without an address, those of the UNIX socket, as one more group), so
 * many failed tokens within a window hold the group off for a backoff, during which the server
 * answers 429 without looking at the token; each further round of failures doubles the backoff,
 * up to a ceiling. A group that sends the right token, or that has sent no wrong one for the
 * ceiling's length, is forgotten. The time is the caller's (monotonic ns), so the rules are
 * testable without waiting. Memory is bounded: at most `groups` groups are remembered (a new
 * one then takes the place of the one whose last failure is oldest). Thread-safe. */
#ifndef RINGSIDE_TUI_AGENT_HTTP_THROTTLE_H
#define RINGSIDE_TUI_AGENT_HTTP_THROTTLE_H

#include "tui/agent/http_addr.h"

#include <stdbool.h>
#include <stdint.h>

struct http_throttle_conf {
    unsigned failures;       /* wrong tokens within window_ns that start a backoff (>= 1) */
    uint64_t window_ns;      /* (> 0) */
    uint64_t backoff_ns;     /* the first backoff (> 0); each next one twice the last */
    uint64_t backoff_max_ns; /* the longest (>= backoff_ns) */
    unsigned groups;         /* groups remembered at most (>= 1) */
};

/* The agent's: 10 wrong tokens within 60 s, then 10 s held off, doubling up to 15 min; 4096
 * groups. */
void http_throttle_conf_default(struct http_throttle_conf *c);

struct http_throttle;

/* 0, -EINVAL (a limit out of range) or -ENOMEM. */
int http_throttle_create(struct http_throttle **out, const struct http_throttle_conf *c);

/* NULL: a no-op. */
void http_throttle_destroy(struct http_throttle *t);

/* Whether group a (NULL: the clients without an address) is held off at now: true with *left_ns
 * the backoff's rest (> 0). */
bool http_throttle_check(struct http_throttle *t, const struct http_addr *a, uint64_t now,
                         uint64_t *left_ns);

/* A wrong token from a at now, counted; true when it starts a backoff, with *backoff_ns its
 * length. (A caller that asks http_throttle_check first never counts one during a backoff.) */
bool http_throttle_fail(struct http_throttle *t, const struct http_addr *a, uint64_t now,
                        uint64_t *backoff_ns);

/* The right token from a: its failures and backoffs are forgotten. */
void http_throttle_pass(struct http_throttle *t, const struct http_addr *a);

/* Groups held off at now. */
unsigned http_throttle_held(struct http_throttle *t, uint64_t now);

#endif
