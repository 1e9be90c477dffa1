/* The attach source's shared state: the queue of events and state lines for the UI, the
 * wake descriptor, the header's state. The callers hold mu. */
#include "backend/core/mono.h"
#include "tui/agent/remote_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Make the wake descriptor readable (once: the UI resets it when it has taken everything). */
void remote_wake_locked(struct remote *r) {
    uint64_t one = 1;
    if (r->woken)
        return;
    ssize_t n = write(r->wake_fd, &one, sizeof(one));
    (void)n; /* a full counter is still readable */
    r->woken = true;
}

bool remote_pending_locked(const struct remote *r) {
    return r->qhead != r->qtail || r->st_n > 0;
}

/* The agent's clock now, from the latest status line (else the latest event). */
static uint64_t remote_clock_locked(const struct remote *r) {
    uint64_t now = mono_now_ns();
    if (r->status_local_ns)
        return r->status_t_ns + (now - r->status_local_ns);
    if (r->ev_local_ns)
        return r->ev_t_ns + (now - r->ev_local_ns);
    return r->src.run.start_ns;
}

void remote_push_locked(struct remote *r, const struct ev *e) {
    if (r->qtail - r->qhead == REMOTE_QUEUE_EVENTS)
        r->qhead++; /* the oldest goes: the sequence's gap shows it */
    r->q[r->qtail++ % REMOTE_QUEUE_EVENTS] = *e;
    remote_wake_locked(r);
}

/* A line of our own in the events panel (not a gap in the agent's sequence). */
void remote_log_locked(struct remote *r, enum ev_severity sev, const char *fmt, ...) {
    struct ev e = {
        .t_ns = remote_clock_locked(r), .seq = r->ui_seq, .kind = EV_LOG, .dev = EV_DEV_NONE};
    e.u.text.severity = (uint8_t)sev;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.u.text.text, sizeof(e.u.text.text), fmt, ap);
    va_end(ap);
    remote_push_locked(r, &e);
}

void remote_state_locked(struct remote *r, const struct replay_item *it) {
    if (r->st_n == REMOTE_STATE_ITEMS) { /* full: an older layout is superseded anyway */
        unsigned k = 0;
        while (k < r->st_n && r->st[k].it.kind != REPLAY_LAYOUT)
            k++;
        k = k < r->st_n ? k : 0;
        memmove(&r->st[k], &r->st[k + 1], (r->st_n - k - 1) * sizeof(r->st[0]));
        r->st_n--;
    }
    r->st[r->st_n].pos = r->qtail;
    r->st[r->st_n++].it = *it;
    remote_wake_locked(r);
}

void remote_set_state_locked(struct remote *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->state, sizeof(r->state), fmt, ap);
    va_end(ap);
    remote_wake_locked(r); /* the header changes */
}
