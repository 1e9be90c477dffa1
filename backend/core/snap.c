/* Triple buffer: writer, reader and a middle slot exchanged through one atomic index word. */
#include "backend/core/snap.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#define SNAP_FRESH 4u /* bit set in the middle word when it holds an unread publish */

struct snap {
    size_t bytes;
    unsigned char *buf[3];
    unsigned writer, reader; /* each owned by its side */
    atomic_uint middle;      /* index of the middle buffer | SNAP_FRESH */
};

int snap_create(struct snap **out, size_t payload_bytes) {
    struct snap *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->bytes = payload_bytes;
    for (int i = 0; i < 3; i++) {
        s->buf[i] = calloc(1, payload_bytes ? payload_bytes : 1);
        if (!s->buf[i]) {
            snap_destroy(s);
            return -ENOMEM;
        }
    }
    s->writer = 0;
    atomic_init(&s->middle, 1u);
    s->reader = 2;
    *out = s;
    return 0;
}

void snap_destroy(struct snap *s) {
    if (!s)
        return;
    for (int i = 0; i < 3; i++)
        free(s->buf[i]);
    free(s);
}

void *snap_write_begin(struct snap *s) {
    return s->buf[s->writer];
}

void snap_publish(struct snap *s) {
    unsigned old =
        atomic_exchange_explicit(&s->middle, s->writer | SNAP_FRESH, memory_order_acq_rel);
    s->writer = old & 3u;
}

const void *snap_read(struct snap *s, bool *fresh) {
    bool is_fresh = atomic_load_explicit(&s->middle, memory_order_acquire) & SNAP_FRESH;
    if (is_fresh) {
        unsigned old = atomic_exchange_explicit(&s->middle, s->reader, memory_order_acq_rel);
        s->reader = old & 3u;
    }
    if (fresh)
        *fresh = is_fresh;
    return s->buf[s->reader];
}
