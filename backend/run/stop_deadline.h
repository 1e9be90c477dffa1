/* The stop deadline: a watchdog of its own (never a thread that may be stuck) over every way
 * out of a run. From the moment the way out begins (a stop, a failed device, the end of
 * training, the front end leaving) it allows timeout_ns; past it, what can be aborted is
 * aborted (the group's communicators); grace_ns after that, if the way out has still not
 * ended (a call stuck in the runtime cannot be cancelled), the owner leaves the process.
 *
 *     stop_deadline_start(ops, ctx)  ->  ... ops->since() polled ten times a second ...
 *     stop_deadline_stop              (joins; the owner calls it once nothing can block) */
#ifndef RINGSIDE_BACKEND_RUN_STOP_DEADLINE_H
#define RINGSIDE_BACKEND_RUN_STOP_DEADLINE_H

#include <stdbool.h>
#include <stdint.h>

/* Past its abort, the way out has this long to end before the process is left. */
#define STOP_DEADLINE_GRACE_NS 1000000000ull

/* What the watchdog asks of its owner. Every member is called on the watchdog's thread. */
struct stop_deadline_ops {
    /* When the way out began (mono_now_ns), or 0 while nothing is on its way out (running,
     * or a loop that ended while the front end stays). A later value than before is a new
     * way out with a deadline of its own. */
    uint64_t (*since)(void *ctx);
    /* The deadline passed: end every wait that can be ended (abort the communicators).
     * Called once per way out. */
    void (*abort)(void *ctx, uint64_t waited_ns);
    /* The grace after the abort passed too: say what is stuck, write the diagnostics, put
     * the terminal back and leave the process; it is not expected to return (if it does,
     * the watchdog looks again at the next period). */
    void (*abandon)(void *ctx, uint64_t waited_ns);
};

/* What the watchdog does at one look. */
enum stop_deadline_act {
    STOP_DEADLINE_WAIT,    /* nothing due */
    STOP_DEADLINE_ABORT,   /* call ops->abort */
    STOP_DEADLINE_ABANDON, /* call ops->abandon */
};

/* The state between looks (zero-initialised: nothing on its way out). */
struct stop_deadline_clock {
    uint64_t since_ns; /* the way out it times, 0 for none */
    uint64_t abort_ns; /* when it was aborted, 0 before */
};

/* One look at now_ns, the way out having begun at since_ns (0: none). Pure. */
enum stop_deadline_act stop_deadline_step(struct stop_deadline_clock *c, uint64_t since_ns,
                                          uint64_t now_ns, uint64_t timeout_ns, uint64_t grace_ns);

struct stop_deadline;

/* Watch with timeout_ns (> 0) and grace_ns; ops and ctx are borrowed until stop. 0 or
 * -errno. */
int stop_deadline_start(struct stop_deadline **out, uint64_t timeout_ns, uint64_t grace_ns,
                        const struct stop_deadline_ops *ops, void *ctx);

/* Stop watching and join (NULL is a no-op). */
void stop_deadline_stop(struct stop_deadline *d);

#endif
