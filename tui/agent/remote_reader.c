/* The attach source's reader thread: follows the agent's /events stream, reconnecting with
 * since= the last event it queued (a restarted agent's new run from its start), and queues
 * events, state lines and status lines for the UI.
 *
 * Sequence numbers: the agent numbers every event line (kernel-log events too); the UI's model
 * counts a gap in its own sequence, which leaves kernel-log events out. So an event reaches the
 * UI with the agent's number less the kernel-log events before it (an agent's missing numbers,
 * a window that no longer held them, still show as a gap), and a kernel-log event with a count
 * of its own. */
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/run/replay.h"
#include "tui/agent/agent_status.h"
#include "tui/agent/remote_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REMOTE_FLIP_MAX_MS   30000 /* the longest wait between connections whose run changes */
#define REMOTE_BAD_LINES_LOG 5     /* bad lines told of in the events panel */
#define REMOTE_NOTE_NS       10000000000ull /* a restart notice stays in the header 10 s */

/* How a followed stream ended. */
enum remote_end { REMOTE_END_LOST, REMOTE_END_STOP, REMOTE_END_FINISHED };

static bool remote_stopping(struct remote *r) {
    pthread_mutex_lock(&r->mu);
    bool stop = r->stopping;
    pthread_mutex_unlock(&r->mu);
    return stop;
}

/* Make c the connection stop() shuts down (NULL: none); shut at once if stop came first. */
void remote_track(struct remote *r, struct http_conn **slot, struct http_conn *c) {
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
int remote_connect(struct remote *r, uint64_t since, struct http_conn **out, char *why,
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
int remote_read_run(struct remote *r, struct http_conn *c, struct replay_item *it, char *why,
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

/* A thread leaves: the last one out frees r when its owner is gone. */
void remote_thread_exit(struct remote *r, bool *running) {
    pthread_mutex_lock(&r->mu);
    *running = false;
    bool last = r->owner_gone && !r->reader_running && !r->control_running;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->mu);
    if (last)
        remote_free(r);
}

void *remote_reader(void *arg) {
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
