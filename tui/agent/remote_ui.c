/* The attach source's operations, on the UI thread: it drains what the reader queued and
 * rebuilds the snapshot from it as a replay does, queues the loop's keys for the control
 * thread, and never waits on the network. */
#include "backend/core/mono.h"
#include "tui/agent/agent_status.h"
#include "tui/agent/remote_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REMOTE_STOP_WAIT_MS 250 /* destroy: how long a thread may take to leave */

/* Why the loop's keys do nothing, or "". */
void remote_control_off(struct remote *r) {
    const char *why = !r->has_front        ? "read-only: waiting for the agent's status"
                      : !r->front->control ? "read-only: the agent was not started with "
                                             "--allow-control"
                      : !r->conf.token[0]  ? "read-only: give the agent's token with --token-file"
                                           : "";
    snprintf(r->src.run.control_off, sizeof(r->src.run.control_off), "%s", why);
}

/* Take the latest status line, if a new one came. */
static void remote_take_status(struct remote *r) {
    pthread_mutex_lock(&r->mu);
    if (r->fresh) {
        memcpy(r->front, r->mid, sizeof(*r->front));
        r->has_front = true;
        r->fresh = false;
    }
    r->ui_status_t_ns = r->status_t_ns;
    r->ui_status_local_ns = r->status_local_ns;
    r->ui_ev_t_ns = r->ev_t_ns;
    r->ui_ev_local_ns = r->ev_local_ns;
    pthread_mutex_unlock(&r->mu);
    remote_control_off(r);
}

/* A new run from a restarted agent: the header's facts and the snapshot start again. */
static void remote_new_run(struct remote *r, const struct replay_item *it) {
    struct run_info *run = &r->src.run;
    char origin[sizeof(run->origin)], off[sizeof(run->control_off)];
    memcpy(origin, run->origin, sizeof(origin));
    memcpy(off, run->control_off, sizeof(off));
    *run = it->run;
    run->replay = false;
    memcpy(run->origin, origin, sizeof(origin));
    memcpy(run->control_off, off, sizeof(off));
    replay_snap_init(&r->rs, run, &it->extra);
}

static void remote_apply_states_locked(struct remote *r) {
    unsigned k = 0;
    for (; k < r->st_n && r->st[k].pos <= r->qhead; k++) {
        if (r->st[k].it.kind == REPLAY_RUN)
            remote_new_run(r, &r->st[k].it);
        else
            replay_snap_apply(&r->rs, &r->st[k].it);
    }
    if (k > 0) {
        memmove(&r->st[0], &r->st[k], (r->st_n - k) * sizeof(r->st[0]));
        r->st_n -= k;
    }
}

static size_t remote_drain(struct source *s, struct ev *out, size_t max) {
    struct remote *r = remote_of(s);
    size_t n = 0;
    remote_take_status(r);
    pthread_mutex_lock(&r->mu);
    for (;;) {
        remote_apply_states_locked(r);
        if (n == max || r->qhead == r->qtail)
            break;
        struct ev *e = &r->q[r->qhead++ % REMOTE_QUEUE_EVENTS];
        replay_snap_event(&r->rs, e);
        out[n++] = *e;
    }
    if (!remote_pending_locked(r) && r->woken) {
        uint64_t v;
        ssize_t got = read(r->wake_fd, &v, sizeof(v));
        (void)got;
        r->woken = false;
    }
    pthread_mutex_unlock(&r->mu);
    return n;
}

static int remote_wake_fd(struct source *s) {
    return remote_of(s)->wake_fd;
}

static uint64_t remote_now_ns(struct source *s) {
    struct remote *r = remote_of(s);
    pthread_mutex_lock(&r->mu);
    bool frozen = r->finished && r->reader_ended;
    pthread_mutex_unlock(&r->mu);
    uint64_t now = mono_now_ns();
    uint64_t last = r->ui_status_t_ns > r->ui_ev_t_ns ? r->ui_status_t_ns : r->ui_ev_t_ns;
    if (frozen && last) /* the run is over: so is its time */
        return last;
    if (r->ui_status_local_ns)
        return r->ui_status_t_ns + (now - r->ui_status_local_ns);
    if (r->ui_ev_local_ns)
        return r->ui_ev_t_ns + (now - r->ui_ev_local_ns);
    return r->src.run.start_ns;
}

/* Rank k's snapshot, rebuilt from the stream's lines (each device's by the events' dev);
 * the sync in flight is the agent's status's, on the device it names. */
static const struct engine_snap *remote_dev_snap(struct source *s, unsigned k) {
    struct remote *r = remote_of(s);
    if (k >= r->rs.n_devs)
        return NULL;
    struct engine_snap *snap = &r->rs.snaps[k];
    snap->t_ns = remote_now_ns(s);
    snap->has_inflight = r->has_front && r->front->has_inflight &&
                         (r->rs.n_devs == 1 || r->front->inflight_dev == r->rs.devs[k]);
    if (snap->has_inflight)
        snap->inflight = r->front->inflight;
    return snap;
}

static const struct engine_snap *remote_snap(struct source *s) {
    return remote_dev_snap(s, 0);
}

/* The command an action asks the agent for. */
static struct remote_cmd remote_action_cmd(const struct remote *r, enum source_action act) {
    switch (act) {
    case SOURCE_PAUSE_TOGGLE:
        return (struct remote_cmd){r->rs.snaps[0].state == ENGINE_PAUSED ? CMD_RESUME : CMD_PAUSE,
                                   0};
    case SOURCE_CHUNK_UP:
    case SOURCE_CHUNK_DOWN: /* the agent's engine steps from its own size */
        return (struct remote_cmd){CMD_CHUNK_STEP, act == SOURCE_CHUNK_UP ? 1 : -1};
    case SOURCE_CLEANUP:
        return (struct remote_cmd){CMD_CLEANUP, 0};
    case SOURCE_PROBE:
        return (struct remote_cmd){CMD_PROBE, 0};
    case SOURCE_ACTIONS:
        break;
    }
    return (struct remote_cmd){CMD_COUNT, 0};
}

static bool remote_action(struct source *s, enum source_action act, char *msg, size_t msglen) {
    struct remote *r = remote_of(s);
    if (msglen)
        msg[0] = '\0';
    if ((unsigned)act >= SOURCE_ACTIONS)
        return false;
    remote_take_status(r);
    if (r->src.run.control_off[0]) {
        snprintf(msg, msglen, "%s", r->src.run.control_off);
        return true;
    }
    struct remote_cmd cmd = remote_action_cmd(r, act);
    pthread_mutex_lock(&r->mu);
    bool room = r->n_cmds < REMOTE_CONTROL_SLOTS;
    if (room) {
        r->cmds[r->n_cmds++] = cmd;
        pthread_cond_broadcast(&r->cond);
    }
    pthread_mutex_unlock(&r->mu);
    if (!room)
        snprintf(msg, msglen, "busy: earlier commands are still being sent to the agent");
    else if (ev_cmd_arg(cmd.cmd) == EV_ARG_STEP)
        snprintf(msg, msglen, "sent: %s %+lld", ev_cmd_name(cmd.cmd), (long long)cmd.arg);
    else
        snprintf(msg, msglen, "sent: %s", ev_cmd_name(cmd.cmd));
    return true;
}

/* Leave: the threads are told at once, and their connections shut so no read holds them. */
void remote_stop(struct source *s) {
    struct remote *r = remote_of(s);
    pthread_mutex_lock(&r->mu);
    r->stopping = true;
    if (r->conn)
        http_conn_shutdown(r->conn);
    if (r->cconn)
        http_conn_shutdown(r->cconn);
    pthread_cond_broadcast(&r->cond);
    remote_wake_locked(r);
    pthread_mutex_unlock(&r->mu);
}

static bool remote_inflight(struct source *s, unsigned dev, struct trace_inflight *out) {
    struct remote *r = remote_of(s);
    memset(out, 0, sizeof(*out));
    remote_take_status(r);
    if (!r->has_front || !r->front->has_inflight || r->front->inflight_dev != dev)
        return false;
    *out = r->front->inflight;
    return true;
}

static bool remote_done(struct source *s) {
    struct remote *r = remote_of(s);
    pthread_mutex_lock(&r->mu);
    bool done = r->stopping || (r->finished && r->reader_ended && !remote_pending_locked(r));
    pthread_mutex_unlock(&r->mu);
    return done;
}

/* The connection in progress, as the header says it: "connecting to HOST: no response for
 * 4 s", "connected to HOST: waiting for the first event (2 s)". */
static void remote_wait_text_locked(struct remote *r, uint64_t now) {
    double s = (double)(now - r->wait_since_ns) / 1e9;
    char took[48] = "";
    if (r->wait == REMOTE_WAIT_HEAD) {
        if (s >= 1)
            snprintf(took, sizeof(took), ": no response for %.0f s", s);
        snprintf(r->status_text, sizeof(r->status_text), "connecting to %.200s%s", r->peer, took);
        return;
    }
    if (s >= 1)
        snprintf(took, sizeof(took), " (%.0f s)", s);
    snprintf(r->status_text, sizeof(r->status_text),
             "connected to %.200s: waiting for the first event%s", r->peer, took);
}

static const char *remote_status(struct source *s) {
    struct remote *r = remote_of(s);
    pthread_mutex_lock(&r->mu);
    uint64_t now = mono_now_ns();
    bool note = r->note[0] && now < r->note_until;
    if (!note && r->wait != REMOTE_WAIT_NONE && !r->stopping)
        remote_wait_text_locked(r, now);
    else
        snprintf(r->status_text, sizeof(r->status_text), "%s", note ? r->note : r->state);
    pthread_mutex_unlock(&r->mu);
    return r->status_text;
}

static const struct tele_snap *remote_tele(struct source *s) {
    struct remote *r = remote_of(s);
    remote_take_status(r);
    return r->has_front && r->front->has_tele ? &r->front->tele : NULL;
}

static bool remote_kmsg(struct source *s, struct kmsg_stats *out, const char **reason) {
    struct remote *r = remote_of(s);
    remote_take_status(r);
    if (!r->has_front || !r->front->has_kmsg)
        return false;
    *out = r->front->kmsg;
    *reason = r->front->kmsg_reason;
    return true;
}

void remote_free(struct remote *r) {
    http_close(r->first);
    if (r->wake_fd >= 0)
        close(r->wake_fd);
    pthread_cond_destroy(&r->cond);
    pthread_mutex_destroy(&r->mu);
    free(r->q);
    free(r->st);
    free(r->back);
    free(r->mid);
    free(r->front);
    free(r);
}

/* Stop, wait a little for the threads to leave; one still in a connect or a request (a host
 * that does not answer) is left to free r when it gets out. */
static void remote_destroy(struct source *s) {
    if (!s)
        return;
    struct remote *r = remote_of(s);
    remote_stop(s);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += REMOTE_STOP_WAIT_MS * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&r->mu);
    while ((r->reader_running || r->control_running) &&
           pthread_cond_timedwait(&r->cond, &r->mu, &ts) == 0)
        ;
    bool reader = r->reader_running, control = r->control_running;
    pthread_t rt = r->reader, ct = r->control;
    r->owner_gone = true;
    pthread_mutex_unlock(&r->mu);
    if (reader)
        pthread_detach(rt);
    else
        pthread_join(rt, NULL);
    if (control)
        pthread_detach(ct);
    else
        pthread_join(ct, NULL);
    if (!reader && !control)
        remote_free(r);
}

const struct source_ops remote_ops = {
    .name = "attach",
    .wake_fd = remote_wake_fd,
    .drain = remote_drain,
    .snap = remote_snap,
    .dev_snap = remote_dev_snap,
    .now_ns = remote_now_ns,
    .action = remote_action,
    .stop = remote_stop,
    .inflight = remote_inflight,
    .done = remote_done,
    .status = remote_status,
    .destroy = remote_destroy,
    .tele = remote_tele,
    .kmsg = remote_kmsg,
};
