/* The stop deadline's clock (pure) and its thread. */
#include "backend/run/stop_deadline.h"

#include "backend/core/mono.h"
#include "backend/core/worker.h"

#include <errno.h>
#include <stdlib.h>

#define STOP_DEADLINE_PERIOD_NS 100000000ull /* ten looks a second */

enum stop_deadline_act stop_deadline_step(struct stop_deadline_clock *c, uint64_t since_ns,
                                          uint64_t now_ns, uint64_t timeout_ns, uint64_t grace_ns) {
    if (since_ns != c->since_ns) /* a new way out, or none */
        *c = (struct stop_deadline_clock){.since_ns = since_ns};
    if (!since_ns || now_ns < since_ns)
        return STOP_DEADLINE_WAIT;
    if (!c->abort_ns) {
        if (now_ns - since_ns < timeout_ns)
            return STOP_DEADLINE_WAIT;
        c->abort_ns = now_ns;
        return STOP_DEADLINE_ABORT;
    }
    return now_ns - c->abort_ns >= grace_ns ? STOP_DEADLINE_ABANDON : STOP_DEADLINE_WAIT;
}

struct stop_deadline {
    struct worker w;
    uint64_t timeout_ns, grace_ns;
    const struct stop_deadline_ops *ops;
    void *ctx;
};

static void *stop_deadline_main(void *arg) {
    struct stop_deadline *d = arg;
    struct stop_deadline_clock c = {0};
    uint64_t next = mono_now_ns();
    do {
        next += STOP_DEADLINE_PERIOD_NS;
        uint64_t now = mono_now_ns(), since = d->ops->since(d->ctx);
        switch (stop_deadline_step(&c, since, now, d->timeout_ns, d->grace_ns)) {
        case STOP_DEADLINE_ABORT:
            d->ops->abort(d->ctx, now - since);
            break;
        case STOP_DEADLINE_ABANDON:
            d->ops->abandon(d->ctx, now - since);
            break;
        case STOP_DEADLINE_WAIT:
            break;
        }
    } while (!worker_nap_until(&d->w, next));
    return NULL;
}

int stop_deadline_start(struct stop_deadline **out, uint64_t timeout_ns, uint64_t grace_ns,
                        const struct stop_deadline_ops *ops, void *ctx) {
    *out = NULL;
    struct stop_deadline *d = calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    *d = (struct stop_deadline){
        .timeout_ns = timeout_ns, .grace_ns = grace_ns, .ops = ops, .ctx = ctx};
    worker_init(&d->w);
    int rc = worker_start(&d->w, stop_deadline_main, d);
    if (rc != 0) {
        worker_fini(&d->w);
        free(d);
        return rc;
    }
    *out = d;
    return 0;
}

void stop_deadline_stop(struct stop_deadline *d) {
    if (!d)
        return;
    worker_fini(&d->w);
    free(d);
}
