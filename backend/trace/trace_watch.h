/* The hang watchdog: a thread of its own (never the one that may hang) that looks at what every
 * device has in flight ten times a second (a synchronize, a collective call) and says when it
 * turns slow, when it turns into a HANG, and how long it took when it finally returns: alert
 * events on the trace's ring. On a run of several devices a HANG also says where each other
 * device is: its phase, epoch and step, what it waits in, and whether it has reached the
 * collective the hung device waits in. */
#ifndef RINGSIDE_BACKEND_TRACE_TRACE_WATCH_H
#define RINGSIDE_BACKEND_TRACE_TRACE_WATCH_H

#include "backend/trace/trace.h"

#include <stdint.h>

enum trace_watch_state { TRACE_WATCH_OK, TRACE_WATCH_SLOW, TRACE_WATCH_HANG };

struct trace_watch;

/* Joining and leaving the group (EV_COLL_INIT, EV_COLL_DESTROY) synchronise every rank and take
 * about a second on healthy GPUs (NCCL's init and finalize): they are slow only past this, or
 * past slow_ns when that is longer. */
#define TRACE_WATCH_SETUP_SLOW_NS 5000000000ull

/* The state of a call in flight for age_ns: a synchronize (coll_op < 0) or a collective of
 * enum ev_coll_op coll_op, against slow_ns < hang_ns. Pure. */
enum trace_watch_state trace_watch_grade(uint64_t age_ns, int coll_op, uint64_t slow_ns,
                                         uint64_t hang_ns);

/* Watch devices 0..n_dev-1 of t (borrowed; outlives the watch) against slow_ns < hang_ns.
 * 0 or -errno. */
int trace_watch_start(struct trace_watch **out, struct trace *t, unsigned n_dev, uint64_t slow_ns,
                      uint64_t hang_ns);

/* The state the watchdog last saw on dev (the worse of its sync's and its collective's). Any
 * thread. */
enum trace_watch_state trace_watch_state(struct trace_watch *w, unsigned dev);

/* Stop promptly and join; NULL is fine. */
void trace_watch_stop(struct trace_watch *w);

#endif
