/* The agent's defence against slow and greedy clients, apart from the HTTP library: every open
 * connection with its address and the time its request began. A request must arrive whole
 * (line, headers and body) within a deadline, or its socket is shut down; each address (an
 * address group: IPv4 alone, IPv6 by /64, see http_addr.h) holds at most so many connections;
 * and a new connection that finds its address full takes the place of that address's oldest
 * connection still sending its request (one that finds the server full: of the address holding
 * the most connections), so that clients holding connections open by dripping bytes cannot
 * lock anyone out. Connections whose request arrived (an /events follower) are never pushed
 * out: the server caps those itself (http_quota.h). Thread-safe: every call may come from any
 * thread. */
#ifndef RINGSIDE_TUI_AGENT_HTTP_GUARD_H
#define RINGSIDE_TUI_AGENT_HTTP_GUARD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct http_guard_conf {
    unsigned max_connections; /* at once, over every listener */
    unsigned per_address;     /* at once from one address group (http_addr.h: an IPv4 address,
                               * an IPv6 /64; UNIX sockets: no limit) */
    uint64_t request_ns;      /* from the accept (or the end of the previous request on a
                                 kept-alive connection) to the whole request */
};

/* Monotonic counts of connections closed or refused, by why. */
struct http_guard_stats {
    uint64_t timed_out;    /* the request did not arrive in time: shut down */
    uint64_t evicted;      /* shut down while sending its request, for a new connection */
    uint64_t over_limit;   /* refused: every place taken by a connection whose request came */
    uint64_t over_address; /* refused: the same, within the address's limit */
    unsigned open;         /* counted now (those being shut down left out) */
};

struct http_guard;
struct http_guard_conn;

/* A guard and its sweep (a worker thread). 0 or -errno (-EINVAL: a zero limit or deadline). */
int http_guard_create(struct http_guard **out, const struct http_guard_conf *c);

/* Stop the sweep; every connection must be closed (http_guard_close) before. NULL: a no-op. */
void http_guard_destroy(struct http_guard *g);

/* Whether a connection from addr may come in: true, after shutting down the oldest
 * connection still sending its request when the server or addr is full; false (counted) when
 * none can make room. */
bool http_guard_admit(struct http_guard *g, const struct sockaddr *addr, socklen_t len);

/* A connection admitted: its socket fd (shut down if its request is late) and its address.
 * NULL when out of memory (the connection is then not guarded). */
struct http_guard_conn *http_guard_open(struct http_guard *g, int fd, const struct sockaddr *addr,
                                        socklen_t len);

/* Its request arrived whole: no deadline any more (until http_guard_next). NULL: a no-op. */
void http_guard_done(struct http_guard *g, struct http_guard_conn *c);

/* A kept-alive connection waits for its next request: the deadline runs again from now. */
void http_guard_next(struct http_guard *g, struct http_guard_conn *c);

/* The connection closes (before its fd does): forgotten and freed. NULL: a no-op. */
void http_guard_close(struct http_guard *g, struct http_guard_conn *c);

void http_guard_stats(struct http_guard *g, struct http_guard_stats *out);

#endif
