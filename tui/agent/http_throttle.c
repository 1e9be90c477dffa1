/* Token-failure backoff per address group (http_throttle.h): a table of the groups that sent
 * wrong tokens lately, under one mutex, looked through in full at each call (a few thousand
 * rows at most, and a call only for a request that needs the token). */
#include "tui/agent/http_throttle.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#define THROTTLE_NS_PER_S 1000000000ull

struct http_throttle_row {
    bool used;
    bool local; /* the clients without an address (addr unused) */
    struct http_addr addr;
    uint64_t window_ns; /* the current window began */
    unsigned failures;  /* in it */
    uint64_t last_ns;   /* the last wrong token */
    uint64_t until_ns;  /* held off until (0: not) */
    unsigned rounds;    /* backoffs so far: the next is backoff_ns << rounds */
};

struct http_throttle {
    struct http_throttle_conf conf;
    pthread_mutex_t mu;
    struct http_throttle_row *rows; /* conf.groups */
};

void http_throttle_conf_default(struct http_throttle_conf *c) {
    c->failures = 10;
    c->window_ns = 60 * THROTTLE_NS_PER_S;
    c->backoff_ns = 10 * THROTTLE_NS_PER_S;
    c->backoff_max_ns = 15 * 60 * THROTTLE_NS_PER_S;
    c->groups = 4096;
}

int http_throttle_create(struct http_throttle **out, const struct http_throttle_conf *c) {
    *out = NULL;
    if (c->failures == 0 || c->window_ns == 0 || c->backoff_ns == 0 ||
        c->backoff_max_ns < c->backoff_ns || c->groups == 0)
        return -EINVAL;
    struct http_throttle *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->conf = *c;
    t->rows = calloc(c->groups, sizeof(*t->rows));
    if (!t->rows) {
        free(t);
        return -ENOMEM;
    }
    pthread_mutex_init(&t->mu, NULL);
    *out = t;
    return 0;
}

void http_throttle_destroy(struct http_throttle *t) {
    if (!t)
        return;
    pthread_mutex_destroy(&t->mu);
    free(t->rows);
    free(t);
}

static bool throttle_is(const struct http_throttle_row *r, const struct http_addr *a) {
    return r->used && (a ? !r->local && http_addr_equal(&r->addr, a) : r->local);
}

/* A row out of date at now (no backoff running, and neither a wrong token nor the end of a
 * backoff for the ceiling's length): as good as free. */
static bool throttle_stale(const struct http_throttle *t, const struct http_throttle_row *r,
                           uint64_t now) {
    uint64_t quiet = r->last_ns > r->until_ns ? r->last_ns : r->until_ns;
    return !r->used || (now >= quiet && now - quiet >= t->conf.backoff_max_ns);
}

/* a's row (stale ones are forgotten), or NULL. */
static struct http_throttle_row *throttle_find_locked(struct http_throttle *t,
                                                      const struct http_addr *a, uint64_t now) {
    for (unsigned k = 0; k < t->conf.groups; k++) {
        struct http_throttle_row *r = &t->rows[k];
        if (!throttle_is(r, a))
            continue;
        if (!throttle_stale(t, r, now))
            return r;
        r->used = false;
        return NULL;
    }
    return NULL;
}

/* A new row for a: a free or stale one, else the one whose last wrong token is oldest. */
static struct http_throttle_row *throttle_add_locked(struct http_throttle *t,
                                                     const struct http_addr *a, uint64_t now) {
    struct http_throttle_row *pick = &t->rows[0]; /* groups >= 1 */
    for (unsigned k = 0; k < t->conf.groups; k++) {
        struct http_throttle_row *r = &t->rows[k];
        if (throttle_stale(t, r, now)) {
            pick = r;
            break;
        }
        if (r->last_ns < pick->last_ns)
            pick = r;
    }
    *pick = (struct http_throttle_row){.used = true, .local = !a, .window_ns = now};
    if (a)
        pick->addr = *a;
    return pick;
}

bool http_throttle_check(struct http_throttle *t, const struct http_addr *a, uint64_t now,
                         uint64_t *left_ns) {
    pthread_mutex_lock(&t->mu);
    struct http_throttle_row *r = throttle_find_locked(t, a, now);
    bool held = r && now < r->until_ns;
    if (held)
        *left_ns = r->until_ns - now;
    pthread_mutex_unlock(&t->mu);
    return held;
}

bool http_throttle_fail(struct http_throttle *t, const struct http_addr *a, uint64_t now,
                        uint64_t *backoff_ns) {
    pthread_mutex_lock(&t->mu);
    struct http_throttle_row *r = throttle_find_locked(t, a, now);
    if (!r)
        r = throttle_add_locked(t, a, now);
    if (now >= r->window_ns && now - r->window_ns >= t->conf.window_ns) {
        r->window_ns = now;
        r->failures = 0;
    }
    r->last_ns = now;
    bool starts = ++r->failures >= t->conf.failures;
    if (starts) {
        uint64_t len = t->conf.backoff_ns;
        for (unsigned k = 0; k < r->rounds && len < t->conf.backoff_max_ns; k++)
            len *= 2;
        len = len < t->conf.backoff_max_ns ? len : t->conf.backoff_max_ns;
        r->until_ns = now + len;
        r->rounds++;
        r->failures = 0;
        r->window_ns = r->until_ns; /* the next window begins when the backoff ends */
        *backoff_ns = len;
    }
    pthread_mutex_unlock(&t->mu);
    return starts;
}

void http_throttle_pass(struct http_throttle *t, const struct http_addr *a) {
    pthread_mutex_lock(&t->mu);
    for (unsigned k = 0; k < t->conf.groups; k++)
        if (throttle_is(&t->rows[k], a))
            t->rows[k].used = false;
    pthread_mutex_unlock(&t->mu);
}

unsigned http_throttle_held(struct http_throttle *t, uint64_t now) {
    unsigned n = 0;
    pthread_mutex_lock(&t->mu);
    for (unsigned k = 0; k < t->conf.groups; k++)
        n += t->rows[k].used && now < t->rows[k].until_ns;
    pthread_mutex_unlock(&t->mu);
    return n;
}
