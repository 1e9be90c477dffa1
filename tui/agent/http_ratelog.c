/* A rate-limited, counting log line (http_ratelog.h). */
#include "tui/agent/http_ratelog.h"

#include <string.h>

void http_ratelog_init(struct http_ratelog *r, uint64_t period_ns) {
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->mu, NULL);
    r->period_ns = period_ns;
}

void http_ratelog_fini(struct http_ratelog *r) {
    pthread_mutex_destroy(&r->mu);
}

bool http_ratelog_note(struct http_ratelog *r, uint64_t now, uint64_t *count) {
    pthread_mutex_lock(&r->mu);
    r->count++;
    /* a now read before another thread's later one took the lock is no later than its line */
    bool due = !r->said || (now > r->last_ns && now - r->last_ns >= r->period_ns);
    if (due) {
        *count = r->count;
        r->count = 0;
        r->last_ns = now;
        r->said = true;
    }
    pthread_mutex_unlock(&r->mu);
    return due;
}

bool http_ratelog_flush(struct http_ratelog *r, uint64_t *count) {
    pthread_mutex_lock(&r->mu);
    bool any = r->count > 0;
    if (any) {
        *count = r->count;
        r->count = 0;
    }
    pthread_mutex_unlock(&r->mu);
    return any;
}
