/* Connection deadlines and per-address limits for the agent's HTTP server (see http_guard.h):
 * a list of open connections under the mutex of a worker (backend/core/worker.h) whose thread
 * sweeps the list periodically and shuts down the sockets of requests that are late. A socket
 * is only ever shut down while its connection is in the list, and the server removes it
 * (http_guard_close) before it closes the descriptor. */
#include "tui/agent/http_guard.h"

#include "backend/core/mono.h"
#include "backend/core/worker.h"
#include "tui/agent/http_addr.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#define GUARD_TICK_MIN_NS 10000000ull   /* the sweeps are at least this far apart */
#define GUARD_TICK_MAX_NS 1000000000ull /* and at most this far */

struct http_guard_conn {
    struct http_guard_conn *prev, *next;
    int fd;
    bool has_addr;         /* an IP address (not a UNIX socket) */
    struct http_addr addr; /* its group: IPv4 alone, IPv6 by /64 */
    uint64_t start_ns;     /* the request began (its deadline: start_ns + request_ns) */
    bool done;             /* the request arrived whole */
    bool closing;          /* shut down by us: no longer counted */
};

struct http_guard {
    struct http_guard_conf conf;
    struct worker w;  /* the sweep; its mutex (w.mu) guards everything below */
    uint64_t tick_ns; /* the sweep's period */
    struct http_guard_conn *head;
    unsigned open; /* in the list and not closing */
    struct http_guard_stats st;
};

/* Shut c's socket down (its thread in the server then sees the end and closes it). */
static void guard_shut_locked(struct http_guard *g, struct http_guard_conn *c) {
    c->closing = true;
    g->open--;
    shutdown(c->fd, SHUT_RDWR);
}

/* A sweep: late requests are shut down. */
static void guard_tick_locked(struct http_guard *g, uint64_t now) {
    for (struct http_guard_conn *c = g->head; c; c = c->next)
        if (!c->done && !c->closing && now - c->start_ns >= g->conf.request_ns) {
            guard_shut_locked(g, c);
            g->st.timed_out++;
        }
}

/* The sweep, every tick_ns until the guard is destroyed: a request is cut at most a tick after
 * its deadline. */
static void *guard_sweep(void *arg) {
    struct http_guard *g = arg;
    while (!worker_nap(&g->w, g->tick_ns)) {
        pthread_mutex_lock(&g->w.mu);
        guard_tick_locked(g, mono_now_ns());
        pthread_mutex_unlock(&g->w.mu);
    }
    return NULL;
}

int http_guard_create(struct http_guard **out, const struct http_guard_conf *c) {
    *out = NULL;
    if (c->max_connections == 0 || c->per_address == 0 || c->request_ns == 0)
        return -EINVAL;
    struct http_guard *g = calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->conf = *c;
    uint64_t tick = c->request_ns / 4;
    tick = tick < GUARD_TICK_MIN_NS ? GUARD_TICK_MIN_NS : tick;
    g->tick_ns = tick > GUARD_TICK_MAX_NS ? GUARD_TICK_MAX_NS : tick;
    worker_init(&g->w);
    int rc = worker_start(&g->w, guard_sweep, g);
    if (rc != 0) {
        worker_fini(&g->w);
        free(g);
        return rc;
    }
    *out = g;
    return 0;
}

void http_guard_destroy(struct http_guard *g) {
    if (!g)
        return;
    worker_fini(&g->w); /* the sweep is joined: nobody else looks at the list */
    while (g->head) {   /* none left by a server that closed its connections first */
        struct http_guard_conn *c = g->head;
        g->head = c->next;
        free(c);
    }
    free(g);
}

/* The oldest connection still sending its request (from key when given), or NULL; and how
 * many connections key holds (all of them without a key). */
static struct http_guard_conn *guard_oldest_locked(struct http_guard *g,
                                                   const struct http_addr *key, unsigned *held) {
    struct http_guard_conn *old = NULL;
    *held = 0;
    for (struct http_guard_conn *c = g->head; c; c = c->next) {
        if (c->closing || (key && (!c->has_addr || !http_addr_equal(&c->addr, key))))
            continue;
        ++*held;
        if (!c->done && (!old || c->start_ns < old->start_ns))
            old = c;
    }
    return old;
}

/* How many counted connections c's address holds (1 without an address). */
static unsigned guard_share_locked(struct http_guard *g, const struct http_guard_conn *c) {
    unsigned n = 0;
    for (struct http_guard_conn *o = g->head; o && c->has_addr; o = o->next)
        n += !o->closing && o->has_addr && http_addr_equal(&o->addr, &c->addr);
    return c->has_addr ? n : 1;
}

/* The server is full: the request in progress to push out is the oldest of the address that
 * holds the most connections, so that one host's many connections make room before anyone
 * else's. */
static struct http_guard_conn *guard_victim_locked(struct http_guard *g) {
    struct http_guard_conn *best = NULL;
    unsigned best_share = 0;
    for (struct http_guard_conn *c = g->head; c; c = c->next) {
        if (c->closing || c->done)
            continue;
        unsigned share = guard_share_locked(g, c);
        if (!best || share > best_share || (share == best_share && c->start_ns < best->start_ns)) {
            best = c;
            best_share = share;
        }
    }
    return best;
}

/* Room for one more within key's share (NULL: the server's): true, after shutting down a
 * request in progress if it took the last place (the address's oldest; for the server, see
 * guard_victim_locked). */
static bool guard_room_locked(struct http_guard *g, const struct http_addr *key, unsigned limit) {
    unsigned held;
    struct http_guard_conn *old = guard_oldest_locked(g, key, &held);
    if (held < limit)
        return true;
    if (old && !key)
        old = guard_victim_locked(g);
    if (!old)
        return false;
    guard_shut_locked(g, old);
    g->st.evicted++;
    return true;
}

bool http_guard_admit(struct http_guard *g, const struct sockaddr *addr, socklen_t len) {
    struct http_addr key;
    bool ip = http_addr_group(addr, len, &key);
    pthread_mutex_lock(&g->w.mu);
    bool ok = !ip || guard_room_locked(g, &key, g->conf.per_address);
    if (!ok)
        g->st.over_address++;
    else if (!(ok = guard_room_locked(g, NULL, g->conf.max_connections)))
        g->st.over_limit++;
    pthread_mutex_unlock(&g->w.mu);
    return ok;
}

struct http_guard_conn *http_guard_open(struct http_guard *g, int fd, const struct sockaddr *addr,
                                        socklen_t len) {
    struct http_guard_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->fd = fd;
    c->has_addr = http_addr_group(addr, len, &c->addr);
    c->start_ns = mono_now_ns();
    pthread_mutex_lock(&g->w.mu);
    c->next = g->head;
    if (g->head)
        g->head->prev = c;
    g->head = c;
    g->open++;
    pthread_mutex_unlock(&g->w.mu);
    return c;
}

void http_guard_done(struct http_guard *g, struct http_guard_conn *c) {
    if (!c)
        return;
    pthread_mutex_lock(&g->w.mu);
    c->done = true;
    pthread_mutex_unlock(&g->w.mu);
}

void http_guard_next(struct http_guard *g, struct http_guard_conn *c) {
    if (!c)
        return;
    pthread_mutex_lock(&g->w.mu);
    c->done = false;
    c->start_ns = mono_now_ns();
    pthread_mutex_unlock(&g->w.mu);
}

void http_guard_close(struct http_guard *g, struct http_guard_conn *c) {
    if (!c)
        return;
    pthread_mutex_lock(&g->w.mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        g->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (!c->closing)
        g->open--;
    pthread_mutex_unlock(&g->w.mu);
    free(c);
}

void http_guard_stats(struct http_guard *g, struct http_guard_stats *out) {
    pthread_mutex_lock(&g->w.mu);
    *out = g->st;
    out->open = g->open;
    pthread_mutex_unlock(&g->w.mu);
}
