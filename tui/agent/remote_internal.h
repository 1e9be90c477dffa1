/* The attach source's own state, shared by its files: the state the threads share under mu
 * (remote_state.c), the reader thread (remote_reader.c), the control thread
 * (remote_control.c), the UI thread's source operations (remote_ui.c) and the opening
 * (remote.c). */
#ifndef RINGSIDE_TUI_AGENT_REMOTE_INTERNAL_H
#define RINGSIDE_TUI_AGENT_REMOTE_INTERNAL_H

#include "backend/core/ev.h"
#include "backend/record/replay_internal.h"
#include "backend/record/replay_snap.h"
#include "tui/agent/http_client.h"
#include "tui/agent/remote.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define REMOTE_QUEUE_EVENTS  65536 /* events the UI has not drained yet; then the oldest go */
#define REMOTE_STATE_ITEMS   16    /* layout, summary and run lines not applied yet */
#define REMOTE_CONTROL_SLOTS 8     /* commands not sent yet */
#define REMOTE_STATE_BYTES   384

/* A line that is not an event, applied when the UI has drained the events queued before it. */
struct remote_state_item {
    uint64_t pos; /* the queue's tail when it came */
    struct replay_item it;
};

struct remote_cmd {
    enum ev_cmd_id cmd;
    int64_t arg;
};

/* What a connection in progress waits for: the answer's head (connecting), the run line. */
enum remote_wait { REMOTE_WAIT_NONE, REMOTE_WAIT_HEAD, REMOTE_WAIT_RUN };

struct remote {
    struct source src;
    struct remote_conf conf;
    struct http_url url;
    char where[600]; /* "https://host:port/events": for messages */
    char peer[400];  /* "host:port" or "unix:PATH": for the status line */

    pthread_mutex_t mu;
    pthread_cond_t cond; /* CLOCK_MONOTONIC: stop, a command to send, a thread gone */
    int wake_fd;         /* eventfd: readable while something is pending for the UI */
    pthread_t reader, control;
    bool reader_running, control_running, owner_gone;

    /* ---- the reader thread's own ---- */
    struct http_conn *first;   /* the connection remote_open made, handed to the reader */
    struct replay_item item;   /* the line being parsed */
    struct agent_status *back; /* the status line being parsed */
    uint64_t last_seq;         /* the agent's number of the last event queued */
    bool has_seq;              /* ... once one was */
    uint32_t kmsg_seen;        /* kernel-log events of this run */
    uint64_t run_start_ns;     /* the agent's run (a new one: it restarted) */
    unsigned bad_lines;
    bool was_lost;  /* the last connection was lost (told once, not per retry) */
    unsigned flips; /* connections in a row whose run line changed (reset by a steady one) */

    /* ---- shared, under mu ---- */
    bool stopping, finished, reader_ended;
    bool woken;                     /* wake_fd is readable */
    struct http_conn *conn, *cconn; /* open connections, for stop() to shut down */
    struct ev *q;                   /* REMOTE_QUEUE_EVENTS */
    uint64_t qhead, qtail;
    struct remote_state_item *st; /* REMOTE_STATE_ITEMS, by pos */
    unsigned st_n;
    uint32_t ui_seq;                       /* the UI sequence number of the last event queued */
    struct agent_status *mid;              /* the latest status line */
    bool fresh;                            /* ... not yet taken by the UI */
    uint64_t status_t_ns, status_local_ns; /* the agent's clock and ours when it came */
    uint64_t ev_t_ns, ev_local_ns;         /* the same for the latest event, before any status */
    char state[REMOTE_STATE_BYTES];        /* "" or why not connected, or finished */
    char note[160];                        /* a passing notice (restart) */
    enum remote_wait wait;                 /* a connection in progress waits for this... */
    uint64_t wait_since_ns;                /* ...since then (our clock) */
    uint64_t note_until;                   /* our clock */
    struct remote_cmd cmds[REMOTE_CONTROL_SLOTS];
    unsigned n_cmds;

    /* ---- the UI thread's own ---- */
    struct replay_snap rs;
    struct agent_status *front; /* the status the UI shows */
    bool has_front;
    uint64_t ui_status_t_ns, ui_status_local_ns, ui_ev_t_ns, ui_ev_local_ns;
    char status_text[REMOTE_STATE_BYTES];
};

static inline struct remote *remote_of(struct source *s) {
    return s->priv;
}

/* remote_state.c: the shared state (callers hold mu) */
/* Make the wake descriptor readable (once: the UI resets it when it has taken everything). */
void remote_wake_locked(struct remote *r);
/* Events or state lines the UI has not taken yet. */
bool remote_pending_locked(const struct remote *r);
/* Queue an event for the UI (when full, the oldest goes). */
void remote_push_locked(struct remote *r, const struct ev *e);
/* A line of our own in the events panel (not a gap in the agent's sequence). */
void remote_log_locked(struct remote *r, enum ev_severity sev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A layout, summary or run line, applied when the UI has drained the events before it. */
void remote_state_locked(struct remote *r, const struct replay_item *it);
/* The header's state: "" or why not connected, or finished. */
void remote_set_state_locked(struct remote *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* remote_reader.c: the reader thread */
/* Make c the connection stop() shuts down (NULL: none); shut at once if stop came first. */
void remote_track(struct remote *r, struct http_conn **slot, struct http_conn *c);
/* GET /events?since=SEQ: the connection with its status checked, or -errno with why. */
int remote_connect(struct remote *r, uint64_t since, struct http_conn **out, char *why,
                   size_t whylen);
/* The stream's first line (blank keep-alives skipped) into it: 0, or -errno with why. */
int remote_read_run(struct remote *r, struct http_conn *c, struct replay_item *it, char *why,
                    size_t whylen);
/* A thread leaves: the last one out frees r when its owner is gone. */
void remote_thread_exit(struct remote *r, bool *running);
void *remote_reader(void *arg);

/* remote_control.c: the control thread, sending the queued commands as POST /control */
void *remote_controller(void *arg);

/* remote_ui.c: the UI thread's side, the source's operations */
extern const struct source_ops remote_ops;
/* Why the loop's keys do nothing, or "" (into src.run.control_off). */
void remote_control_off(struct remote *r);
/* Leave: the threads are told at once, and their connections shut so no read holds them. */
void remote_stop(struct source *s);
void remote_free(struct remote *r);

#endif
