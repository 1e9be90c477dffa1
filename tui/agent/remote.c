/* The attach source: a reader thread follows the agent's /events stream (reconnecting with
 * since= the last event it queued) and hands events, layouts, summaries and status lines to the
 * UI thread, which rebuilds the snapshot from them as a replay does; a control thread sends the
 * loop's keys back as POST /control. The UI thread never waits on the network.
 *
 * Sequence numbers: the agent numbers every event line (kernel-log events too); the UI's model
 * counts a gap in its own sequence, which leaves kernel-log events out. So an event reaches the
 * UI with the agent's number less the kernel-log events before it (an agent's missing numbers,
 * a window that no longer held them, still show as a gap), and a kernel-log event with a count
 * of its own. */
#include "tui/agent/remote.h"

#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/record/replay_internal.h"
#include "backend/record/replay_snap.h"
#include "backend/run/replay.h"
#include "tui/agent/agent_status.h"
#include "tui/agent/http_client.h"

#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define REMOTE_QUEUE_EVENTS  65536 /* events the UI has not drained yet; then the oldest go */
#define REMOTE_STATE_ITEMS   16    /* layout, summary and run lines not applied yet */
#define REMOTE_FLIP_MAX_MS   30000 /* the longest wait between connections whose run changes */
#define REMOTE_CONTROL_SLOTS 8     /* commands not sent yet */
#define REMOTE_BAD_LINES_LOG 5     /* bad lines told of in the events panel */
#define REMOTE_NOTE_NS       10000000000ull /* a restart notice stays in the header 10 s */
#define REMOTE_STOP_WAIT_MS  250            /* destroy: how long a thread may take to leave */
#define REMOTE_CONTROL_BODY  65536
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

/* How a followed stream ended. */
enum remote_end { REMOTE_END_LOST, REMOTE_END_STOP, REMOTE_END_FINISHED };

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

static struct remote *remote_of(struct source *s) {
    return s->priv;
}

void remote_conf_default(struct remote_conf *c) {
    memset(c, 0, sizeof(*c));
    c->timeout_ms = 10000;
    c->retry_ms = 1000;
}

/* ---- shared state (callers hold mu) ---- */

/* Make the wake descriptor readable (once: the UI resets it when it has taken everything). */
static void remote_wake_locked(struct remote *r) {
    uint64_t one = 1;
    if (r->woken)
        return;
    ssize_t n = write(r->wake_fd, &one, sizeof(one));
    (void)n; /* a full counter is still readable */
    r->woken = true;
}

static bool remote_pending_locked(const struct remote *r) {
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

static void remote_push_locked(struct remote *r, const struct ev *e) {
    if (r->qtail - r->qhead == REMOTE_QUEUE_EVENTS)
        r->qhead++; /* the oldest goes: the sequence's gap shows it */
    r->q[r->qtail++ % REMOTE_QUEUE_EVENTS] = *e;
    remote_wake_locked(r);
}

/* A line of our own in the events panel (not a gap in the agent's sequence). */
static void remote_log_locked(struct remote *r, enum ev_severity sev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void remote_log_locked(struct remote *r, enum ev_severity sev, const char *fmt, ...) {
    struct ev e = {
        .t_ns = remote_clock_locked(r), .seq = r->ui_seq, .kind = EV_LOG, .dev = EV_DEV_NONE};
    e.u.text.severity = (uint8_t)sev;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.u.text.text, sizeof(e.u.text.text), fmt, ap);
    va_end(ap);
    remote_push_locked(r, &e);
}

static void remote_state_locked(struct remote *r, const struct replay_item *it) {
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

static void remote_set_state_locked(struct remote *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void remote_set_state_locked(struct remote *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->state, sizeof(r->state), fmt, ap);
    va_end(ap);
    remote_wake_locked(r); /* the header changes */
}

/* ---- the reader thread ---- */

static bool remote_stopping(struct remote *r) {
    pthread_mutex_lock(&r->mu);
    bool stop = r->stopping;
    pthread_mutex_unlock(&r->mu);
    return stop;
}

/* Make c the connection stop() shuts down (NULL: none); shut at once if stop came first. */
static void remote_track(struct remote *r, struct http_conn **slot, struct http_conn *c) {
    pthread_mutex_lock(&r->mu);
    *slot = c;
    if (c && r->stopping)
        http_conn_shutdown(c);
    pthread_mutex_unlock(&r->mu);
}

/* Wait ms, or less when stopped. */
static void remote_wait_ms(struct remote *r, uint64_t ms) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + ms * 1000000ull;
    ts.tv_sec += (time_t)(ns / 1000000000ull);
    ts.tv_nsec = (long)(ns % 1000000000ull);
    pthread_mutex_lock(&r->mu);
    while (!r->stopping && pthread_cond_timedwait(&r->cond, &r->mu, &ts) == 0)
        ;
    pthread_mutex_unlock(&r->mu);
}

/* Wait retry_ms between reconnects. */
static void remote_pause(struct remote *r) {
    remote_wait_ms(r, (uint64_t)r->conf.retry_ms);
}

/* The run changed at another connection in a row (two agents behind one address, or one that
 * restarts in a loop): the first change is followed at once, then waits double from a tenth
 * of retry_ms (up to 30 s), with up to half again of random jitter so several dashboards do
 * not come in step; said once. */
static void remote_flip_pause(struct remote *r) {
    if (++r->flips < 2)
        return;
    uint64_t base = (uint64_t)(r->conf.retry_ms > 10 ? r->conf.retry_ms / 10 : 1);
    unsigned shift = r->flips - 2 < 16 ? r->flips - 2 : 16;
    uint64_t ms = base << shift;
    ms = ms < REMOTE_FLIP_MAX_MS ? ms : REMOTE_FLIP_MAX_MS;
    ms += (uint64_t)rand() % (ms / 2 + 1);
    if (r->flips == 2) {
        pthread_mutex_lock(&r->mu);
        remote_log_locked(r, SEV_WARNING,
                          "attach: the agent's run changes at every connection (two agents "
                          "behind one address, or one restarting in a loop?): waiting longer "
                          "between tries");
        pthread_mutex_unlock(&r->mu);
    }
    remote_wait_ms(r, ms);
}

static void remote_bad_line(struct remote *r, const char *why) {
    pthread_mutex_lock(&r->mu);
    if (++r->bad_lines <= REMOTE_BAD_LINES_LOG)
        remote_log_locked(r, SEV_WARNING, "attach: a line from the agent skipped: %s%s", why,
                          r->bad_lines == REMOTE_BAD_LINES_LOG ? " (no more of these shown)" : "");
    pthread_mutex_unlock(&r->mu);
}

/* GET /events?since=SEQ: the connection with its status checked, or -errno with why. */
static int remote_connect(struct remote *r, uint64_t since, struct http_conn **out, char *why,
                          size_t whylen) {
    char path[64];
    int status = 0;
    snprintf(path, sizeof(path), "/events?since=%llu", (unsigned long long)since);
    int rc = http_request(out, &r->url, "GET", path, "application/x-ndjson", r->conf.token,
                          r->conf.cacert, r->conf.timeout_ms, &status, why, whylen);
    if (rc == HTTP_E_CERT && why && whylen > 0) {
        size_t n = strlen(why);
        snprintf(why + n, whylen - n, "; %s",
                 r->conf.cacert[0] ? "is it signed by a CA of --cacert, for the URL's host name?"
                                   : "give the certificate of the CA that signed it with "
                                     "--cacert FILE");
    }
    if (rc != 0)
        return rc;
    if (status == 200)
        return 0;
    http_close(*out);
    *out = NULL;
    if (status == 401)
        return errbuf_set(why, whylen, -EACCES, "%s: 401 Unauthorized: %s", r->where,
                          r->conf.token[0] ? "the agent does not take the token given"
                                           : "give the agent's token with --token-file FILE");
    if (status == 404)
        return errbuf_set(why, whylen, -ENOENT, "%s: not a ringside agent (404 Not Found)",
                          r->where);
    return errbuf_set(why, whylen, -EPROTO, "%s: the agent answered HTTP %d", r->where, status);
}

/* The stream's first line (blank keep-alives skipped) into it: 0, or -errno with why. */
static int remote_read_run(struct remote *r, struct http_conn *c, struct replay_item *it, char *why,
                           size_t whylen) {
    const char *line;
    size_t len;
    int rc, prc = 0;
    char pwhy[256];
    it->kind = REPLAY_NONE;
    while ((rc = http_read_line(c, &line, &len, REPLAY_LINE_BYTES)) == 1) {
        prc = replay_parse_line(line, len, it, pwhy, sizeof(pwhy));
        if (prc != 0 || it->kind != REPLAY_BLANK)
            break;
    }
    if (rc == 1 && prc == 0 && it->kind == REPLAY_RUN)
        return 0;
    if (rc == 1 && it->kind == REPLAY_RUN) /* a newer recording version, a bad field */
        return errbuf_set(why, whylen, -EPROTO, "%s: the run line: %s", r->where, pwhy);
    if (rc == 1)
        return errbuf_set(why, whylen, -EPROTO,
                          "%s: not a ringside agent (its stream does not start with a run line)",
                          r->where);
    if (rc == 0)
        return errbuf_set(why, whylen, -EPROTO, "%s: the stream ended before its run line",
                          r->where);
    return errbuf_set(why, whylen, rc, "%s: %s", r->where,
                      rc == -ETIMEDOUT ? "timed out waiting for the run line" : strerror(-rc));
}

/* A status line into the latest (the UI takes it when it next looks). */
static void remote_status_line(struct remote *r, const char *line, size_t len) {
    char why[256];
    if (agent_status_parse(line, len, r->back, why, sizeof(why)) != 0) {
        remote_bad_line(r, why);
        return;
    }
    pthread_mutex_lock(&r->mu);
    struct agent_status *t = r->mid;
    r->mid = r->back;
    r->back = t;
    r->fresh = true;
    r->status_t_ns = r->mid->t_ns;
    r->status_local_ns = mono_now_ns();
    remote_wake_locked(r);
    pthread_mutex_unlock(&r->mu);
}

static void remote_event(struct remote *r, struct ev *e) {
    if (r->has_seq && e->seq <= r->last_seq)
        return; /* seen before the reconnection */
    r->has_seq = true;
    r->last_seq = e->seq;
    pthread_mutex_lock(&r->mu);
    if (e->kind == EV_KMSG) {
        e->seq = ++r->kmsg_seen;
    } else {
        e->seq -= r->kmsg_seen;
        r->ui_seq = e->seq;
    }
    if (e->t_ns >= r->ev_t_ns) {
        r->ev_t_ns = e->t_ns;
        r->ev_local_ns = mono_now_ns();
    }
    remote_push_locked(r, e);
    pthread_mutex_unlock(&r->mu);
}

/* The writer's spelling of a status line's type (agent_status_write: json-c, plain). */
static bool remote_is_status(const char *line, size_t len) {
    static const char key[] = "\"type\":\"status\"";
    for (size_t i = 0; i + sizeof(key) - 1 <= len; i++)
        if (line[i] == '"' && memcmp(line + i, key, sizeof(key) - 1) == 0)
            return true;
    return false;
}

static void remote_line(struct remote *r, const char *line, size_t len) {
    char why[256];
    if (remote_is_status(line, len)) {
        remote_status_line(r, line, len);
        return;
    }
    int rc = replay_parse_line(line, len, &r->item, why, sizeof(why));
    if (rc != 0 && strncmp(why, "unknown type 'status'", 21) == 0) {
        remote_status_line(r, line, len); /* spelt with spaces */
        return;
    }
    if (rc == 0 && r->item.kind == REPLAY_RUN)
        rc = errbuf_set(why, sizeof(why), -EINVAL, "a second run line");
    if (rc != 0) {
        remote_bad_line(r, why);
        return;
    }
    if (r->item.kind == REPLAY_EVENT) {
        remote_event(r, &r->item.ev);
        return;
    }
    if (r->item.kind != REPLAY_LAYOUT && r->item.kind != REPLAY_SUMMARY)
        return;
    pthread_mutex_lock(&r->mu);
    remote_state_locked(r, &r->item);
    if (r->item.kind == REPLAY_SUMMARY && !r->finished) {
        r->finished = true;
        remote_set_state_locked(r, "the agent's run finished");
    }
    pthread_mutex_unlock(&r->mu);
}

/* A run line on a new connection: the same run, or the agent restarted (a new run from its
 * first event: the caller reconnects with since=0). */
static bool remote_same_run(struct remote *r, const struct replay_item *run) {
    if (run->run.start_ns == r->run_start_ns)
        return true;
    r->run_start_ns = run->run.start_ns;
    r->last_seq = 0;
    r->has_seq = false;
    pthread_mutex_lock(&r->mu);
    r->kmsg_seen = 0;
    remote_state_locked(r, run);
    remote_log_locked(r, SEV_WARNING, "attach: the agent restarted: following its new run");
    snprintf(r->note, sizeof(r->note), "the agent restarted: following its new run");
    r->note_until = mono_now_ns() + REMOTE_NOTE_NS;
    pthread_mutex_unlock(&r->mu);
    return false;
}

/* Read c's lines until it ends. */
static enum remote_end remote_follow(struct remote *r, struct http_conn *c, char *why,
                                     size_t whylen) {
    const char *line;
    size_t len;
    int rc;
    while ((rc = http_read_line(c, &line, &len, REPLAY_LINE_BYTES)) == 1)
        if (len > 0)
            remote_line(r, line, len);
    pthread_mutex_lock(&r->mu);
    enum remote_end end = r->stopping   ? REMOTE_END_STOP
                          : r->finished ? REMOTE_END_FINISHED
                                        : REMOTE_END_LOST;
    pthread_mutex_unlock(&r->mu);
    if (rc == 0)
        snprintf(why, whylen, "the agent closed the stream");
    else if (rc == -ETIMEDOUT)
        snprintf(why, whylen, "nothing from the agent in %.1f s", r->conf.timeout_ms / 1e3);
    else if (rc == -E2BIG)
        snprintf(why, whylen, "a line over %u bytes", REPLAY_LINE_BYTES);
    else
        snprintf(why, whylen, "%s", strerror(-rc));
    return end;
}

/* What the connection in progress waits for now (the header says it, and for how long). */
static void remote_waiting(struct remote *r, enum remote_wait w) {
    pthread_mutex_lock(&r->mu);
    r->wait = w;
    r->wait_since_ns = mono_now_ns();
    remote_wake_locked(r);
    pthread_mutex_unlock(&r->mu);
}

/* Connect (or take remote_open's connection) and check the run line. */
static int remote_reopen(struct remote *r, struct http_conn **c, char *why, size_t whylen) {
    if (r->first) {
        *c = r->first;
        r->first = NULL;
        return 0;
    }
    remote_waiting(r, REMOTE_WAIT_HEAD);
    int rc = remote_connect(r, r->has_seq ? r->last_seq : 0, c, why, whylen);
    if (rc == 0) {
        remote_track(r, &r->conn, *c);
        remote_waiting(r, REMOTE_WAIT_RUN);
        rc = remote_read_run(r, *c, &r->item, why, whylen);
    }
    remote_waiting(r, REMOTE_WAIT_NONE);
    if (rc != 0 && *c) {
        remote_track(r, &r->conn, NULL);
        http_close(*c);
        *c = NULL;
    }
    if (rc != 0)
        return rc;
    if (!remote_same_run(r, &r->item)) {
        remote_track(r, &r->conn, NULL);
        http_close(*c);
        *c = NULL;
        return 1;
    }
    pthread_mutex_lock(&r->mu);
    if (r->was_lost)
        remote_log_locked(r, SEV_INFO, "attach: reconnected to the agent (after event %llu)",
                          (unsigned long long)r->last_seq);
    r->was_lost = false;
    remote_set_state_locked(r, "%s", "");
    pthread_mutex_unlock(&r->mu);
    return 0;
}

static void remote_lost(struct remote *r, const char *why) {
    pthread_mutex_lock(&r->mu);
    if (!r->stopping) {
        if (!r->was_lost)
            remote_log_locked(r, SEV_WARNING, "attach: disconnected from the agent: %s", why);
        r->was_lost = true;
        remote_set_state_locked(r, "disconnected: %s; reconnecting", why);
    }
    pthread_mutex_unlock(&r->mu);
}

static void remote_free(struct remote *r);

/* A thread leaves: the last one out frees r when its owner is gone. */
static void remote_thread_exit(struct remote *r, bool *running) {
    pthread_mutex_lock(&r->mu);
    *running = false;
    bool last = r->owner_gone && !r->reader_running && !r->control_running;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->mu);
    if (last)
        remote_free(r);
}

static void *remote_reader(void *arg) {
    struct remote *r = arg;
    char why[512];
    while (!remote_stopping(r)) {
        struct http_conn *c = NULL;
        int rc = remote_reopen(r, &c, why, sizeof(why));
        if (rc == 1) { /* a new run: again from its start (at once the first time) */
            remote_flip_pause(r);
            continue;
        }
        if (rc == 0)
            r->flips = 0;
        if (rc != 0) {
            remote_lost(r, why);
            remote_pause(r);
            continue;
        }
        remote_track(r, &r->conn, c);
        enum remote_end end = remote_follow(r, c, why, sizeof(why));
        remote_track(r, &r->conn, NULL);
        http_close(c);
        if (end == REMOTE_END_STOP || end == REMOTE_END_FINISHED)
            break;
        remote_lost(r, why);
        remote_pause(r);
    }
    pthread_mutex_lock(&r->mu);
    r->reader_ended = true;
    remote_wake_locked(r); /* done() may have changed */
    pthread_mutex_unlock(&r->mu);
    remote_thread_exit(r, &r->reader_running);
    return NULL;
}

/* ---- the control thread ---- */

/* The answer's {"ok":..,"message":..|"error":..} into text; true when ok. */
static bool remote_answer(int status, const char *body, char *text, size_t n) {
    json_object *o = json_tokener_parse(body);
    json_object *ok = NULL, *msg = NULL;
    bool good = false;
    if (o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, "ok", &ok) &&
        json_object_is_type(ok, json_type_boolean)) {
        good = json_object_get_boolean(ok);
        if (json_object_object_get_ex(o, good ? "message" : "error", &msg) &&
            json_object_is_type(msg, json_type_string))
            snprintf(text, n, "%s", json_object_get_string(msg));
        else
            snprintf(text, n, "%s", good ? "done" : "refused");
    } else if (status == 401)
        snprintf(text, n, "401 Unauthorized: the agent does not take the token given");
    else
        snprintf(text, n, "the agent answered HTTP %d", status);
    json_object_put(o);
    return good && status == 200;
}

static void remote_send(struct remote *r, const struct remote_cmd *cmd) {
    char path[96], why[512], text[EV_TEXT_BYTES];
    const char *name = ev_cmd_name(cmd->cmd);
    if (ev_cmd_arg(cmd->cmd) != EV_ARG_NONE)
        snprintf(path, sizeof(path), "/control?cmd=%s&arg=%lld", name, (long long)cmd->arg);
    else
        snprintf(path, sizeof(path), "/control?cmd=%s", name);
    struct http_conn *c = NULL;
    int status = 0;
    bool ok = false;
    int rc = http_request(&c, &r->url, "POST", path, "application/json", r->conf.token,
                          r->conf.cacert, r->conf.timeout_ms, &status, why, sizeof(why));
    if (rc == 0) {
        char *body = NULL;
        size_t len = 0;
        remote_track(r, &r->cconn, c);
        rc = http_read_body(c, &body, &len, REMOTE_CONTROL_BODY);
        remote_track(r, &r->cconn, NULL);
        if (rc == 0)
            ok = remote_answer(status, body, text, sizeof(text));
        else
            snprintf(why, sizeof(why), "reading the answer: %s", strerror(-rc));
        free(body);
        http_close(c);
    }
    pthread_mutex_lock(&r->mu);
    if (rc != 0 && !r->stopping)
        remote_log_locked(r, SEV_WARNING, "attach: %s failed: %s", name, why);
    else if (rc == 0)
        remote_log_locked(r, ok ? SEV_INFO : SEV_WARNING, "agent: %s: %s", name, text);
    pthread_mutex_unlock(&r->mu);
}

static void *remote_controller(void *arg) {
    struct remote *r = arg;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->stopping && r->n_cmds == 0)
            pthread_cond_wait(&r->cond, &r->mu);
        if (r->stopping)
            break;
        struct remote_cmd cmd = r->cmds[0];
        memmove(&r->cmds[0], &r->cmds[1], --r->n_cmds * sizeof(r->cmds[0]));
        pthread_mutex_unlock(&r->mu);
        remote_send(r, &cmd);
        pthread_mutex_lock(&r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    remote_thread_exit(r, &r->control_running);
    return NULL;
}

/* ---- the UI thread ---- */

/* Why the loop's keys do nothing, or "". */
static void remote_control_off(struct remote *r) {
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
static void remote_stop(struct source *s) {
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

static void remote_free(struct remote *r) {
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

static const struct source_ops remote_ops = {
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

/* ---- opening ---- */

static int remote_alloc(struct remote **out, const struct remote_conf *c) {
    struct remote *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->wake_fd = -1;
    r->conf = *c;
    if (r->conf.timeout_ms < 0)
        r->conf.timeout_ms = 0;
    if (r->conf.retry_ms <= 0)
        r->conf.retry_ms = 1000;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cond, &ca);
    pthread_condattr_destroy(&ca);
    r->q = malloc(REMOTE_QUEUE_EVENTS * sizeof(*r->q));
    r->st = malloc(REMOTE_STATE_ITEMS * sizeof(*r->st));
    r->back = calloc(1, sizeof(*r->back));
    r->mid = calloc(1, sizeof(*r->mid));
    r->front = calloc(1, sizeof(*r->front));
    r->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!r->q || !r->st || !r->back || !r->mid || !r->front || r->wake_fd < 0) {
        int rc = r->wake_fd < 0 ? -errno : -ENOMEM;
        remote_free(r);
        return rc;
    }
    r->src = (struct source){.ops = &remote_ops, .priv = r};
    *out = r;
    return 0;
}

/* The run line fills src.run: the agent's run, shown as live from the URL. */
static void remote_first_run(struct remote *r) {
    struct run_info *run = &r->src.run;
    *run = r->item.run;
    run->replay = false;
    snprintf(run->origin, sizeof(run->origin), "%.*s", (int)sizeof(run->origin) - 1, r->conf.url);
    r->run_start_ns = run->start_ns;
    replay_snap_init(&r->rs, run, &r->item.extra);
    remote_control_off(r);
}

static int remote_start(struct remote *r, char *err, size_t errlen) {
    int rc;
    r->reader_running = r->control_running = true;
    if ((rc = pthread_create(&r->reader, NULL, remote_reader, r)) != 0) {
        r->reader_running = r->control_running = false;
        return errbuf_set(err, errlen, -rc, "cannot start a thread: %s", strerror(rc));
    }
    if ((rc = pthread_create(&r->control, NULL, remote_controller, r)) != 0) {
        r->control_running = false;
        remote_stop(&r->src);
        pthread_join(r->reader, NULL);
        return errbuf_set(err, errlen, -rc, "cannot start a thread: %s", strerror(rc));
    }
    return 0;
}

bool remote_token_in_clear(const struct remote_conf *c) {
    struct http_url u;
    char why[256];
    return c->token[0] && http_url_parse(c->url, &u, why, sizeof(why)) == 0 && !u.tls &&
           !http_url_loopback(&u);
}

int remote_open(struct source **out, const struct remote_conf *c, char *err, size_t errlen) {
    *out = NULL;
    struct remote *r = NULL;
    int rc = remote_alloc(&r, c);
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "%s", strerror(-rc));
    if ((rc = http_url_parse(c->url, &r->url, err, errlen)) != 0)
        goto fail;
    if (r->url.unix_path[0])
        snprintf(r->peer, sizeof(r->peer), "unix:%s", r->url.unix_path);
    else
        snprintf(r->peer, sizeof(r->peer), "%s%s%s:%u", strchr(r->url.host, ':') ? "[" : "",
                 r->url.host, strchr(r->url.host, ':') ? "]" : "", r->url.port);
    if (r->url.unix_path[0])
        snprintf(r->where, sizeof(r->where), "%.580s /events", r->peer);
    else
        snprintf(r->where, sizeof(r->where), "%s://%.300s%.250s/events",
                 r->url.tls ? "https" : "http", r->peer, r->url.base);
    if ((rc = remote_connect(r, 0, &r->first, err, errlen)) != 0 ||
        (rc = remote_read_run(r, r->first, &r->item, err, errlen)) != 0)
        goto fail;
    remote_first_run(r);
    if ((rc = remote_start(r, err, errlen)) != 0)
        goto fail;
    *out = &r->src;
    return 0;
fail:
    remote_free(r);
    return rc;
}
