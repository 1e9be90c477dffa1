/* Bounded many-producer, one-consumer ring of struct ev. Producers never block on the consumer:
 * when full, the oldest event is dropped and counted. The consumer can poll() a wake fd. */
#ifndef RINGSIDE_BACKEND_CORE_EVRING_H
#define RINGSIDE_BACKEND_CORE_EVRING_H

#include "backend/core/ev.h"

#include <stddef.h>
#include <stdint.h>

struct evring;

/* cap >= 1 events. 0 or -errno. */
int evring_create(struct evring **out, uint32_t cap);
void evring_destroy(struct evring *r);

/* Copy e in (its seq is assigned here). Thread-safe; never blocks on the consumer. */
void evring_push(struct evring *r, const struct ev *e);

/* Copy out up to max events, oldest first; returns how many. One consumer thread only. Each
 * event's own bytes are copied (ev_bytes): what lies past them in out[k] is left as it was. */
size_t evring_drain(struct evring *r, struct ev *out, size_t max);

/* Events dropped because the ring was full, since creation. */
uint64_t evring_dropped(struct evring *r);

/* Readable (POLLIN) while n or more events are pending, as set by evring_wake_at (by
 * default 1: while any is); the consumer poll()s it. */
int evring_wake_fd(const struct evring *r);

/* Make the wake fd readable only once n events are pending (1..cap; 1 is the default): a
 * consumer that drains at its own pace anyway (a dashboard, at every frame) is then woken
 * only for a backlog worth taking early, not for the first event of every burst. */
void evring_wake_at(struct evring *r, uint32_t n);

#endif
