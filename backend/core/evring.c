/* Mutex-protected bounded ring with drop-oldest and an eventfd for the consumer's poll(). */
#include "backend/core/evring.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct evring {
    pthread_mutex_t lock;
    struct ev *slots;
    uint32_t cap, head, count; /* head = index of the oldest event */
    uint32_t next_seq;
    uint64_t dropped;
    int wake_fd;
};

int evring_create(struct evring **out, uint32_t cap) {
    if (cap == 0)
        return -EINVAL;
    struct evring *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    /* slots on cache-line boundaries, an event's own bytes in as few lines as they can be;
     * never cleared (a slot is read only once written), so pages not yet reached stay out of
     * the resident set */
    r->slots = aligned_alloc(64, (size_t)cap * sizeof(*r->slots));
    r->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!r->slots || r->wake_fd < 0) {
        int rc = r->slots ? -errno : -ENOMEM;
        free(r->slots);
        if (r->wake_fd >= 0)
            close(r->wake_fd);
        free(r);
        return rc;
    }
    r->cap = cap;
    pthread_mutex_init(&r->lock, NULL);
    *out = r;
    return 0;
}

void evring_destroy(struct evring *r) {
    if (!r)
        return;
    pthread_mutex_destroy(&r->lock);
    close(r->wake_fd);
    free(r->slots);
    free(r);
}

/* i + 1 round the ring (no division: the capacity is not a constant). */
static uint32_t evring_next(const struct evring *r, uint32_t i) {
    return i + 1 == r->cap ? 0 : i + 1;
}

void evring_push(struct evring *r, const struct ev *e) {
    pthread_mutex_lock(&r->lock);
    if (r->count == r->cap) {
        r->head = evring_next(r, r->head);
        r->count--;
        r->dropped++;
    }
    uint32_t at = r->head + r->count;
    struct ev *slot = &r->slots[at >= r->cap ? at - r->cap : at];
    ev_copy(slot, e); /* the event's own bytes, not the whole union's */
    slot->seq = r->next_seq++;
    bool was_empty = r->count++ == 0;
    pthread_mutex_unlock(&r->lock);
    if (was_empty) {
        uint64_t one = 1;
        ssize_t n = write(r->wake_fd, &one, sizeof(one));
        (void)n; /* EAGAIN only if the counter is saturated: still readable */
    }
}

size_t evring_drain(struct evring *r, struct ev *out, size_t max) {
    pthread_mutex_lock(&r->lock);
    size_t n = 0;
    while (n < max && r->count > 0) {
        ev_copy(&out[n++], &r->slots[r->head]);
        r->head = evring_next(r, r->head);
        r->count--;
    }
    if (r->count == 0) {
        /* Empty: the next event goes to the first slot again, so the slots in use (resident
         * memory, and the lines the threads pass between them) are as many as the deepest
         * backlog, not the capacity. */
        r->head = 0;
        /* Reset the wake fd under the lock so a concurrent push re-arms it after us. */
        uint64_t v;
        ssize_t got = read(r->wake_fd, &v, sizeof(v));
        (void)got;
    }
    pthread_mutex_unlock(&r->lock);
    return n;
}

uint64_t evring_dropped(struct evring *r) {
    pthread_mutex_lock(&r->lock);
    uint64_t d = r->dropped;
    pthread_mutex_unlock(&r->lock);
    return d;
}

int evring_wake_fd(const struct evring *r) {
    return r->wake_fd;
}
