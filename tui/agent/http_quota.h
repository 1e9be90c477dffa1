/* Places for long-lived requests (the agent's /events followers): at most so many at once, and
 * at most so many per address group (http_addr.h), so that the connections a follower can
 * never take stay free for short requests (/healthz, /metrics, /control) however many followers
 * ask. A request that arrived is never pushed out (http_guard.h), so this cap, taken when the
 * request is routed, is what keeps followers from holding every place. Thread-safe: every call
 * may come from any thread. */
#ifndef RINGSIDE_TUI_AGENT_HTTP_QUOTA_H
#define RINGSIDE_TUI_AGENT_HTTP_QUOTA_H

#include "tui/agent/http_addr.h"

struct http_quota_conf {
    unsigned total;    /* places at once (0: none, every take is refused) */
    unsigned per_addr; /* places at once for one address group (clients without one: none) */
};

enum http_quota_take {
    HTTP_QUOTA_TAKEN,     /* a place is held: give it back with http_quota_give */
    HTTP_QUOTA_FULL,      /* every place is held */
    HTTP_QUOTA_ADDR_FULL, /* the address group holds its share */
};

struct http_quota;

/* A quota of c's places, none held. 0 or -ENOMEM. */
int http_quota_create(struct http_quota **out, const struct http_quota_conf *c);

/* Every place must have been given back. NULL: a no-op. */
void http_quota_destroy(struct http_quota *q);

/* A place for a client of group a (NULL: one without an address, counted in the total only).
 * The address's share is looked at first: a group at its share is HTTP_QUOTA_ADDR_FULL even
 * when every place is held too. */
enum http_quota_take http_quota_take(struct http_quota *q, const struct http_addr *a);

/* Give back a place taken for a (the same group, or NULL, as at the take). */
void http_quota_give(struct http_quota *q, const struct http_addr *a);

/* Places held now. */
unsigned http_quota_held(struct http_quota *q);

#endif
