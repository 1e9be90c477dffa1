/* Mutex-protected bounded ring with drop-oldest and an eventfd for the consumer's poll(). */
#include "backend/core/evring.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Events lie packed one after the other in 64-byte units, each in as many as its own bytes
 * take (ev_bytes: a phase or a sync one, a log line five): the consumer reads the memory the
 * producers wrote in order, a line after the next, rather than a line every 384 bytes. */
#define EVRING_UNIT      64u
#define EVRING_MAX_UNITS ((sizeof(struct ev) + EVRING_UNIT - 1) / EVRING_UNIT)

struct evring_unit {
    unsigned char b[EVRING_UNIT];
};

struct evring {
    pthread_mutex_t lock;
    struct evring_unit *units; /* room for cap events of the largest kind */
    uint32_t n_units;
    uint32_t cap, count; /* events held, at most cap */
    uint32_t tail, head; /* the oldest event's first unit; where the next one goes */
    uint32_t used;       /* units from tail to head */
    uint32_t next_seq;
    uint64_t dropped;
    uint32_t wake_at; /* the wake fd is readable while count >= wake_at */
    int wake_fd;
};

int evring_create(struct evring **out, uint32_t cap) {
    if (cap == 0 || cap > UINT32_MAX / EVRING_MAX_UNITS)
        return -EINVAL;
    struct evring *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    /* on cache-line boundaries; never cleared (a unit is read only once written), so the
     * pages no backlog has reached stay out of the resident set */
    r->n_units = cap * (uint32_t)EVRING_MAX_UNITS;
    r->units = aligned_alloc(EVRING_UNIT, (size_t)r->n_units * EVRING_UNIT);
    r->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!r->units || r->wake_fd < 0) {
        int rc = r->units ? -errno : -ENOMEM;
        free(r->units);
        if (r->wake_fd >= 0)
            close(r->wake_fd);
        free(r);
        return rc;
    }
    r->cap = cap;
    r->wake_at = 1;
    pthread_mutex_init(&r->lock, NULL);
    *out = r;
    return 0;
}

void evring_destroy(struct evring *r) {
    if (!r)
        return;
    pthread_mutex_destroy(&r->lock);
    close(r->wake_fd);
    free(r->units);
    free(r);
}

static uint32_t evring_units_of(size_t bytes) {
    return (uint32_t)((bytes + EVRING_UNIT - 1) / EVRING_UNIT);
}

/* Unit i + n round the ring (no division: the size is not a constant). */
static uint32_t evring_at(const struct evring *r, uint32_t i, uint32_t n) {
    return i + n >= r->n_units ? i + n - r->n_units : i + n;
}

/* bytes between dst and the ring from unit i on, wrapping round its end. */
static void evring_copy_in(struct evring *r, uint32_t i, const void *src, size_t bytes) {
    size_t room = (size_t)(r->n_units - i) * EVRING_UNIT;
    memcpy(r->units[i].b, src, bytes < room ? bytes : room);
    if (bytes > room)
        memcpy(r->units[0].b, (const unsigned char *)src + room, bytes - room);
}

static void evring_copy_out(const struct evring *r, uint32_t i, void *dst, size_t bytes) {
    size_t room = (size_t)(r->n_units - i) * EVRING_UNIT;
    memcpy(dst, r->units[i].b, bytes < room ? bytes : room);
    if (bytes > room)
        memcpy((unsigned char *)dst + room, r->units[0].b, bytes - room);
}

/* The bytes of the event at unit i (its header, kind included, is in that unit). */
static size_t evring_bytes_at(const struct evring *r, uint32_t i) {
    uint16_t kind;
    memcpy(&kind, r->units[i].b + offsetof(struct ev, kind), sizeof(kind));
    return ev_bytes_of_kind(kind);
}

static void evring_drop_oldest(struct evring *r) {
    uint32_t n = evring_units_of(evring_bytes_at(r, r->tail));
    r->tail = evring_at(r, r->tail, n);
    r->used -= n;
    r->count--;
    r->dropped++;
}

static void evring_wake(struct evring *r) {
    uint64_t one = 1;
    ssize_t w = write(r->wake_fd, &one, sizeof(one));
    (void)w; /* EAGAIN only if the counter is saturated: still readable */
}

void evring_push(struct evring *r, const struct ev *e) {
    size_t bytes = ev_bytes(e); /* the event's own bytes, not the whole union's */
    uint32_t n = evring_units_of(bytes);
    pthread_mutex_lock(&r->lock);
    uint32_t before = r->count;
    while (r->count == r->cap || r->n_units - r->used < n)
        evring_drop_oldest(r);
    uint32_t at = r->head;
    if (n == 1) /* the frequent small kinds: one line, copied without a call */
        memcpy(r->units[at].b, e, EVRING_UNIT);
    else
        evring_copy_in(r, at, e, bytes);
    uint32_t seq = r->next_seq++;
    memcpy(r->units[at].b + offsetof(struct ev, seq), &seq, sizeof(seq));
    r->head = evring_at(r, at, n);
    r->used += n;
    r->count++;
    bool wake = before < r->wake_at && r->count >= r->wake_at; /* the backlog just got there */
    pthread_mutex_unlock(&r->lock);
    if (wake)
        evring_wake(r);
}

size_t evring_drain(struct evring *r, struct ev *out, size_t max) {
    pthread_mutex_lock(&r->lock);
    size_t n = 0;
    while (n < max && r->count > 0) {
        size_t bytes = evring_bytes_at(r, r->tail);
        uint32_t k = evring_units_of(bytes);
        if (k == 1)
            memcpy(&out[n], r->units[r->tail].b, EVRING_UNIT);
        else
            evring_copy_out(r, r->tail, &out[n], bytes);
        n++;
        r->tail = evring_at(r, r->tail, k);
        r->used -= k;
        r->count--;
    }
    /* Empty: the next event goes to the first unit again, so the units in use (resident
     * memory, and the lines the threads pass between them) are as many as the deepest backlog
     * takes, not the capacity. */
    if (r->count == 0)
        r->head = r->tail = 0;
    if (r->count < r->wake_at) {
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

void evring_wake_at(struct evring *r, uint32_t n) {
    pthread_mutex_lock(&r->lock);
    r->wake_at = n < 1 ? 1 : n > r->cap ? r->cap : n;
    bool ready = r->count >= r->wake_at;
    uint64_t v;
    if (!ready) { /* as drained: readable from the threshold on */
        ssize_t got = read(r->wake_fd, &v, sizeof(v));
        (void)got;
    }
    pthread_mutex_unlock(&r->lock);
    if (ready)
        evring_wake(r);
}
