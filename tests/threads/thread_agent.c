/* The agent's side under threads: followers reading the event log while its writer appends;
 * the HTTP endpoint serving /events streams, /metrics scrapes and /control posts at once while
 * the log grows; and the attach client (its reader and control threads) driven as the UI drives
 * it against a real agent_http server. Every event line must reach every follower once, in
 * order. */
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/engine/engine.h"
#include "backend/record/record_json.h"
#include "tests/threads/thread_cases.h"
#include "tui/agent/agent_http.h"
#include "tui/agent/agent_log.h"
#include "tui/agent/agent_status.h"
#include "tui/agent/remote.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define TA_FAIL(...)     errbuf_set(why, whylen, -1, __VA_ARGS__)
#define TA_FOLLOWERS     4
#define TA_SCRAPERS      4
#define TA_WAIT_MS       10000 /* the longest anything awaited may take before it fails (TSan) */
#define TA_CLOSE_MS      2000  /* followers left after the log closed: to read to the end */
#define TA_TOKEN         "thread-agent-t0ken"
#define TA_RUN           "{\"type\":\"run\",\"test\":\"thread_agent\"}"
#define TA_WINDOW_LINES  16384 /* more than any scenario writes: nothing is evicted */
#define TA_WINDOW_BYTES  (64u << 20)
#define TA_PAD           400 /* an event line's padding: up to this many bytes */
#define TA_LOG_EVENTS    4000u
#define TA_LOG_READ      256 /* a follower's buffer: longer lines take several reads */
#define TA_STATUS_EVERY  40u
#define TA_LAYOUT_EVERY  300u
#define TA_WAKE_EVERY    700u
#define TA_HTTP_EVENTS   3000u
#define TA_METRICS_EVERY 100u /* the writer swaps the metrics text */
#define TA_SCRAPES_MIN   5
#define TA_CONTROLS      5
#define TA_REMOTE_EVENTS 1500u
#define TA_REMOTE_STATUS 250u /* a status line every this many events */
#define TA_T0            1000000000ull
#define TA_DRAIN         256

/* ---- lines as a follower sees them ---- */

/* What a follower saw: its bytes cut into lines, each checked as it completes. The lines:
 *   the run line (TA_RUN), first;
 *   {"type":"ev","seq":N,"pad":"xx.."}      events, N = 1, 2, ... with nothing skipped;
 *   {"type":"status","n":K,"after":N}       sticky lines, K = 1, 2, ... per kind, N the last
 *   {"type":"layout","n":K,"after":N}       event number before it;
 *   blank keep-alive lines (over HTTP). */
struct ta_seen {
    char line[1024];
    size_t len;
    uint64_t lines, blanks, events, sticky[2];
    uint64_t next_seq; /* the number the next event line must carry */
    char err[200];     /* the first thing wrong, or "" */
};

static void ta_seen_init(struct ta_seen *s) {
    memset(s, 0, sizeof(*s));
    s->next_seq = 1;
}

static void ta_seen_fail(struct ta_seen *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void ta_seen_fail(struct ta_seen *s, const char *fmt, ...) {
    if (s->err[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof(s->err), fmt, ap);
    va_end(ap);
}

static void ta_seen_sticky(struct ta_seen *s, int k, unsigned long long n,
                           unsigned long long after) {
    if (n != s->sticky[k] + 1 || after + 1 != s->next_seq)
        ta_seen_fail(s, "line %llu: %s %llu after event %llu, where %llu after %llu was due",
                     (unsigned long long)s->lines, k ? "layout" : "status", n, after,
                     (unsigned long long)s->sticky[k] + 1, (unsigned long long)s->next_seq - 1);
    s->sticky[k] = n;
}

static void ta_seen_line(struct ta_seen *s, const char *p, size_t n) {
    unsigned long long seq, k, after;
    s->lines++;
    if (n == 0) {
        s->blanks++;
        return;
    }
    if (s->lines - s->blanks == 1) {
        if (strcmp(p, TA_RUN) != 0)
            ta_seen_fail(s, "the first line is '%.60s', not the run line", p);
    } else if (sscanf(p, "{\"type\":\"ev\",\"seq\":%llu,", &seq) == 1) {
        if (seq != s->next_seq)
            ta_seen_fail(s, "line %llu: event %llu where %llu was due",
                         (unsigned long long)s->lines, seq, (unsigned long long)s->next_seq);
        s->next_seq = seq + 1;
        s->events++;
    } else if (sscanf(p, "{\"type\":\"status\",\"n\":%llu,\"after\":%llu}", &k, &after) == 2) {
        ta_seen_sticky(s, 0, k, after);
    } else if (sscanf(p, "{\"type\":\"layout\",\"n\":%llu,\"after\":%llu}", &k, &after) == 2) {
        ta_seen_sticky(s, 1, k, after);
    } else {
        ta_seen_fail(s, "line %llu: unexpected '%.60s'", (unsigned long long)s->lines, p);
    }
}

static void ta_seen_feed(struct ta_seen *s, const char *buf, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            s->line[s->len] = '\0';
            ta_seen_line(s, s->line, s->len);
            s->len = 0;
        } else if (s->len + 1 < sizeof(s->line)) {
            s->line[s->len++] = buf[i];
        } else {
            ta_seen_fail(s, "a line over %zu bytes", sizeof(s->line) - 1);
        }
    }
}

/* Everything the writer wrote came, once, in order, and nothing else. */
static int ta_seen_check(const struct ta_seen *s, int who, uint64_t events, uint64_t status,
                         uint64_t layouts, char *why, size_t whylen) {
    if (s->err[0])
        return TA_FAIL("follower %d: %s", who, s->err);
    if (s->len != 0)
        return TA_FAIL("follower %d: the stream ended inside a line", who);
    if (s->events != events || s->next_seq != events + 1 || s->sticky[0] != status ||
        s->sticky[1] != layouts)
        return TA_FAIL("follower %d: %llu events (up to %llu), %llu status, %llu layout lines; "
                       "%llu, %llu and %llu were written",
                       who, (unsigned long long)s->events, (unsigned long long)s->next_seq - 1,
                       (unsigned long long)s->sticky[0], (unsigned long long)s->sticky[1],
                       (unsigned long long)events, (unsigned long long)status,
                       (unsigned long long)layouts);
    return 0;
}

/* ---- a count to wait for ---- */

/* Counts up and wakes whoever waits for a count. */
struct ta_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned n;
};

static void ta_gate_init(struct ta_gate *g) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    g->n = 0;
}

static void ta_gate_fini(struct ta_gate *g) {
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
}

static void ta_gate_add(struct ta_gate *g, unsigned n) {
    pthread_mutex_lock(&g->mu);
    g->n += n;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Wait until the count reaches want (false after timeout_ms). */
static bool ta_gate_wait(struct ta_gate *g, unsigned want, int timeout_ms) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&g->mu);
    while (g->n < want && pthread_cond_timedwait(&g->cv, &g->mu, &ts) == 0)
        ;
    bool got = g->n >= want;
    pthread_mutex_unlock(&g->mu);
    return got;
}

/* ---- the writer ---- */

struct ta_agent;

struct ta_writer {
    struct agent_log *log;
    unsigned events;
    /* Pacing, so that the readers run while the writer writes (each may be NULL; none after
     * a failure): before a wake the writer waits until the followers read every event so far
     * (read: the events they read, all together), so they are waiting in the log when it
     * wakes them; after swapping the metrics text to generation g, until scraped counts g
     * scrapes. */
    struct ta_gate *read;
    struct ta_agent *agent; /* whose metrics text to swap as it goes */
    struct ta_gate *scraped;
    uint64_t status, layouts;
    char err[160];
};

static void ta_set_metrics(struct ta_agent *a, unsigned gen);

static void ta_writer_fail(struct ta_writer *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void ta_writer_fail(struct ta_writer *w, const char *fmt, ...) {
    if (w->err[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, sizeof(w->err), fmt, ap);
    va_end(ap);
}

static void ta_append_sticky(struct ta_writer *w, enum agent_line_kind kind, uint64_t n,
                             unsigned after) {
    char line[128];
    int len =
        snprintf(line, sizeof(line), "{\"type\":\"%s\",\"n\":%llu,\"after\":%u}",
                 kind == AGENT_LINE_STATUS ? "status" : "layout", (unsigned long long)n, after);
    uint64_t tag = agent_log_append(w->log, kind, line, (size_t)len);
    if (tag != after)
        ta_writer_fail(w, "a sticky line after event %u tagged %llu", after,
                       (unsigned long long)tag);
}

/* Events 1..w->events, a status line every TA_STATUS_EVERY and a layout line every
 * TA_LAYOUT_EVERY of them, a wake every TA_WAKE_EVERY (a follower waiting then reads 0 and goes
 * on). */
static void ta_write_lines(struct ta_writer *w) {
    char pad[TA_PAD + 1], line[TA_PAD + 64];
    memset(pad, 'x', TA_PAD);
    pad[TA_PAD] = '\0';
    for (unsigned i = 1; i <= w->events; i++) {
        int len = snprintf(line, sizeof(line), "{\"type\":\"ev\",\"seq\":%u,\"pad\":\"%.*s\"}", i,
                           (int)((i * 37u) % TA_PAD), pad);
        uint64_t seq = agent_log_append(w->log, AGENT_LINE_EVENT, line, (size_t)len);
        if (seq != i)
            ta_writer_fail(w, "event %u numbered %llu", i, (unsigned long long)seq);
        if (i % TA_STATUS_EVERY == 0)
            ta_append_sticky(w, AGENT_LINE_STATUS, ++w->status, i);
        if (i % TA_LAYOUT_EVERY == 0)
            ta_append_sticky(w, AGENT_LINE_LAYOUT, ++w->layouts, i);
        if (i % TA_WAKE_EVERY == 0) {
            if (w->read && !w->err[0] && !ta_gate_wait(w->read, TA_FOLLOWERS * i, TA_WAIT_MS))
                ta_writer_fail(w, "the followers never read up to event %u", i);
            agent_log_wake(w->log);
        }
        if (w->agent && i % TA_METRICS_EVERY == 0) {
            ta_set_metrics(w->agent, i / TA_METRICS_EVERY);
            if (w->scraped && !w->err[0] &&
                !ta_gate_wait(w->scraped, i / TA_METRICS_EVERY, TA_WAIT_MS))
                ta_writer_fail(w, "no scrape came for generation %u", i / TA_METRICS_EVERY);
        }
    }
}

/* ---- 1: followers of the log ---- */

struct ta_follower {
    struct agent_follow *f;
    struct ta_gate *read; /* events read, by every follower together */
    struct ta_seen seen;
    long end; /* what the last read returned */
};

static void *ta_follow_thread(void *arg) {
    struct ta_follower *a = arg;
    char buf[TA_LOG_READ];
    long n;
    while ((n = agent_follow_read(a->f, buf, sizeof(buf), TA_WAIT_MS)) >= 0) {
        uint64_t before = a->seen.events;
        ta_seen_feed(&a->seen, buf, (size_t)n);
        if (a->seen.events > before)
            ta_gate_add(a->read, (unsigned)(a->seen.events - before));
    }
    a->end = n;
    agent_follow_close(a->f); /* agent_log_wait_followers sees it go */
    a->f = NULL;
    return NULL;
}

int thread_case_agent_log_followers(char *why, size_t whylen) {
    struct agent_log *log = NULL;
    if (agent_log_create(&log, TA_WINDOW_LINES, TA_WINDOW_BYTES) != 0 ||
        agent_log_set_run(log, TA_RUN) != 0) {
        agent_log_destroy(log);
        return TA_FAIL("cannot create the log");
    }
    static struct ta_follower fol[TA_FOLLOWERS];
    static struct ta_gate read;
    pthread_t th[TA_FOLLOWERS];
    int started = 0, rc = 0;
    ta_gate_init(&read);
    for (; started < TA_FOLLOWERS; started++) {
        ta_seen_init(&fol[started].seen);
        fol[started].read = &read;
        fol[started].end = 0;
        if (agent_follow_open(&fol[started].f, log, 0) != 0)
            break;
        if (pthread_create(&th[started], NULL, ta_follow_thread, &fol[started]) != 0) {
            agent_follow_close(fol[started].f);
            break;
        }
    }
    if (started < TA_FOLLOWERS)
        rc = TA_FAIL("cannot start follower %d", started);
    struct ta_writer w = {.log = log, .events = rc == 0 ? TA_LOG_EVENTS : 0, .read = &read};
    ta_write_lines(&w);
    agent_log_close(log);
    bool gone = agent_log_wait_followers(log, TA_CLOSE_MS);
    for (int k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    ta_gate_fini(&read);
    struct agent_log_stats st;
    agent_log_stats(log, &st);
    agent_log_destroy(log);
    if (rc != 0)
        return rc;
    if (w.err[0])
        return TA_FAIL("writer: %s", w.err);
    if (!gone)
        return TA_FAIL("agent_log_wait_followers: followers left after the close");
    if (st.evicted != 0 || st.failed != 0 || st.followers != 0)
        return TA_FAIL("%llu lines evicted, %llu failed, %u followers left",
                       (unsigned long long)st.evicted, (unsigned long long)st.failed, st.followers);
    for (int k = 0; k < TA_FOLLOWERS; k++) {
        if (fol[k].end != -1)
            return TA_FAIL("follower %d ended with %ld, not -1", k, fol[k].end);
        if ((rc = ta_seen_check(&fol[k].seen, k, TA_LOG_EVENTS, w.status, w.layouts, why,
                                whylen)) != 0)
            return rc;
    }
    return 0;
}

/* ---- the agent's handlers, and raw HTTP clients ---- */

struct ta_agent {
    pthread_mutex_t mu;
    char *metrics; /* under mu: the writer swaps it */
    size_t metrics_len;
    atomic_uint controls, chunk_steps;
    atomic_llong step_arg;
};

static void ta_agent_init(struct ta_agent *a) {
    memset(a, 0, sizeof(*a));
    pthread_mutex_init(&a->mu, NULL);
    atomic_init(&a->controls, 0);
    atomic_init(&a->chunk_steps, 0);
    atomic_init(&a->step_arg, 0);
    ta_set_metrics(a, 0);
}

static void ta_agent_fini(struct ta_agent *a) {
    free(a->metrics);
    pthread_mutex_destroy(&a->mu);
}

/* The metrics text of generation gen: a scrape of it is whole when check is 3 * gen. */
static void ta_set_metrics(struct ta_agent *a, unsigned gen) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    fprintf(f, "# TYPE ringside_test_gen gauge\nringside_test_gen %u\n", gen);
    fprintf(f, "# TYPE ringside_test_check gauge\nringside_test_check %u\n", 3 * gen);
    if (fclose(f) != 0) {
        free(text);
        return;
    }
    pthread_mutex_lock(&a->mu);
    char *old = a->metrics;
    a->metrics = text;
    a->metrics_len = len;
    pthread_mutex_unlock(&a->mu);
    free(old);
}

static int ta_metrics(void *ctx, bool openmetrics, char **out, size_t *len) {
    struct ta_agent *a = ctx;
    pthread_mutex_lock(&a->mu);
    char *text = malloc(a->metrics_len + 1);
    if (text) {
        memcpy(text, a->metrics, a->metrics_len);
        *len = a->metrics_len;
    }
    pthread_mutex_unlock(&a->mu);
    if (!text)
        return -ENOMEM;
    *out = text;
    return 0;
}

static int ta_control(void *ctx, enum ev_cmd_id cmd, int64_t arg, char *msg, size_t msglen) {
    struct ta_agent *a = ctx;
    if (cmd == CMD_CHUNK_STEP) {
        atomic_store(&a->step_arg, (long long)arg);
        atomic_fetch_add(&a->chunk_steps, 1);
        snprintf(msg, msglen, "chunk_step %+lld requested", (long long)arg);
    } else {
        snprintf(msg, msglen, "%s: done", ev_cmd_name(cmd));
    }
    atomic_fetch_add(&a->controls, 1); /* last: whoever sees the count sees the rest */
    return 0;
}

static bool ta_health(void *ctx, char *why, size_t whylen) {
    snprintf(why, whylen, "ok");
    return true;
}

/* A log with the run line and a server on 127.0.0.1 (a free port) with the token and control
 * on. 0, or -1 with why (nothing left to undo). */
static int ta_agent_up(struct ta_agent *a, struct agent_log **log, struct agent_http **srv,
                       const char *run, char *why, size_t whylen) {
    *log = NULL;
    *srv = NULL;
    if (agent_log_create(log, TA_WINDOW_LINES, TA_WINDOW_BYTES) != 0 ||
        agent_log_set_run(*log, run) != 0) {
        agent_log_destroy(*log);
        return TA_FAIL("cannot create the log");
    }
    struct agent_http_conf c;
    agent_http_conf_default(&c);
    snprintf(c.listen, sizeof(c.listen), "127.0.0.1:0");
    snprintf(c.token, sizeof(c.token), "%s", TA_TOKEN);
    c.allow_control = true;
    struct agent_http_handlers h = {
        .ctx = a, .metrics = ta_metrics, .control = ta_control, .health = ta_health, .log = *log};
    char err[256] = "";
    if (agent_http_start(srv, &c, &h, err, sizeof(err)) != 0) {
        agent_log_destroy(*log);
        return TA_FAIL("agent_http_start: %s", err);
    }
    return 0;
}

/* The agent stops as the real one does: no more lines, the followers read to the end, the
 * server goes. True when every follower was gone before the server stopped. */
static bool ta_agent_down(struct agent_log *log, struct agent_http *srv,
                          struct agent_http_stats *st) {
    agent_log_close(log);
    bool gone = agent_log_wait_followers(log, TA_CLOSE_MS);
    agent_http_stats(srv, st);
    agent_http_stop(srv);
    return gone;
}

/* A whole HTTP response, read until the server closed the connection. */
struct ta_resp {
    char *buf;
    size_t len, cap;
    size_t body; /* where the body starts (0 until the head came) */
    int status;
};

/* The end of the response head in r (just after its blank line), or 0. */
static size_t ta_head_end(const struct ta_resp *r) {
    for (size_t i = 0; i + 4 <= r->len; i++)
        if (memcmp(r->buf + i, "\r\n\r\n", 4) == 0)
            return i + 4;
    return 0;
}

/* Send req to 127.0.0.1:port on a new connection and read the answer to its end (reads time
 * out after TA_WAIT_MS). The gate, if any, counts once when the head came (or it failed). 0, or
 * -errno with why in err. */
static int ta_request(unsigned port, const char *req, struct ta_resp *r, struct ta_gate *gate,
                      char *err, size_t errlen) {
    memset(r, 0, sizeof(*r));
    int rc = 0;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {TA_WAIT_MS / 1000, 0};
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0 ||
        connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        rc = errbuf_set(err, errlen, -errno, "connect: %s", strerror(errno));
        goto out;
    }
    for (size_t off = 0, n = strlen(req); off < n;) {
        ssize_t w = send(fd, req + off, n - off, MSG_NOSIGNAL);
        if (w <= 0) {
            rc = errbuf_set(err, errlen, -errno, "send: %s", strerror(errno));
            goto out;
        }
        off += (size_t)w;
    }
    for (;;) {
        if (r->cap - r->len < 16384) {
            size_t cap = r->cap ? 2 * r->cap : 65536;
            char *b = realloc(r->buf, cap);
            if (!b) {
                rc = errbuf_set(err, errlen, -ENOMEM, "out of memory");
                goto out;
            }
            r->buf = b;
            r->cap = cap;
        }
        ssize_t got = recv(fd, r->buf + r->len, r->cap - r->len - 1, 0);
        if (got == 0)
            break;
        if (got < 0) {
            rc = errbuf_set(err, errlen, -errno, "recv after %zu bytes: %s", r->len,
                            strerror(errno));
            goto out;
        }
        r->len += (size_t)got;
        r->buf[r->len] = '\0';
        if (!r->body && (r->body = ta_head_end(r)) != 0 && gate) {
            ta_gate_add(gate, 1);
            gate = NULL;
        }
    }
    if (!r->body || sscanf(r->buf, "HTTP/1.%*d %d", &r->status) != 1)
        rc = errbuf_set(err, errlen, -EPROTO, "not an HTTP response (%zu bytes)", r->len);
out:
    if (fd >= 0)
        close(fd);
    if (gate)
        ta_gate_add(gate, 1); /* failed: whoever waits for it need not wait longer */
    return rc;
}

/* ---- 2: the HTTP endpoint under load ---- */

struct ta_http {
    unsigned port;
    struct ta_gate streaming; /* /events clients that have their response head */
    struct ta_gate scraped;   /* /metrics scrapes done, by every scraper together */
    atomic_bool writer_done;
};

struct ta_stream {
    struct ta_http *h;
    struct ta_seen seen;
    int rc, status;
    char err[200];
};

static void *ta_stream_thread(void *arg) {
    struct ta_stream *s = arg;
    struct ta_resp r;
    s->rc = ta_request(s->h->port,
                       "GET /events HTTP/1.0\r\nAuthorization: Bearer " TA_TOKEN
                       "\r\nAccept: application/x-ndjson\r\n\r\n",
                       &r, &s->h->streaming, s->err, sizeof(s->err));
    s->status = r.status;
    if (s->rc == 0)
        ta_seen_feed(&s->seen, r.buf + r.body, r.len - r.body);
    free(r.buf);
    return NULL;
}

struct ta_scraper {
    struct ta_http *h;
    int id;
    unsigned scrapes;
    char err[200];
};

/* One scrape: whole (check = 3 * gen), never older than the one before. */
static void ta_scrape(struct ta_scraper *s, const char *req, unsigned *last) {
    struct ta_resp r;
    unsigned gen = 0, check = 0;
    if (ta_request(s->h->port, req, &r, NULL, s->err, sizeof(s->err)) == 0) {
        const char *body = r.buf + r.body;
        const char *g = strstr(body, "\nringside_test_gen ");
        const char *c = strstr(body, "\nringside_test_check ");
        if (r.status != 200 || !g || !c || sscanf(g, "\nringside_test_gen %u", &gen) != 1 ||
            sscanf(c, "\nringside_test_check %u", &check) != 1 || check != 3 * gen || gen < *last)
            snprintf(s->err, sizeof(s->err), "scrape %u: HTTP %d, gen %u check %u after %u: %.80s",
                     s->scrapes + 1, r.status, gen, check, *last, body);
        *last = gen;
    }
    free(r.buf);
}

/* /metrics until the writer is done (and TA_SCRAPES_MIN at least); the first one asks /healthz
 * too. */
static void *ta_scrape_thread(void *arg) {
    struct ta_scraper *s = arg;
    unsigned last = 0;
    while (!s->err[0] && (s->scrapes < TA_SCRAPES_MIN || !atomic_load(&s->h->writer_done))) {
        ta_scrape(s, "GET /metrics HTTP/1.0\r\n\r\n", &last);
        s->scrapes++;
        ta_gate_add(&s->h->scraped, 1);
    }
    if (s->err[0] || s->id != 0)
        return NULL;
    struct ta_resp r;
    if (ta_request(s->h->port,
                   "GET /healthz HTTP/1.0\r\nAuthorization: Bearer " TA_TOKEN "\r\n\r\n", &r, NULL,
                   s->err, sizeof(s->err)) == 0 &&
        (r.status != 200 || strcmp(r.buf + r.body, "ok\n") != 0))
        snprintf(s->err, sizeof(s->err), "/healthz: HTTP %d '%.40s'", r.status, r.buf + r.body);
    free(r.buf);
    return NULL;
}

struct ta_controller {
    struct ta_http *h;
    char err[200];
};

/* POST /control?cmd=pause: once without the token (401, not acted on), then TA_CONTROLS
 * times with it. */
static void *ta_control_thread(void *arg) {
    struct ta_controller *c = arg;
    struct ta_resp r;
    if (ta_request(c->h->port, "POST /control?cmd=pause HTTP/1.0\r\nContent-Length: 0\r\n\r\n", &r,
                   NULL, c->err, sizeof(c->err)) == 0 &&
        r.status != 401)
        snprintf(c->err, sizeof(c->err), "without the token: HTTP %d", r.status);
    free(r.buf);
    for (int k = 0; k < TA_CONTROLS && !c->err[0]; k++) {
        if (ta_request(c->h->port,
                       "POST /control?cmd=pause HTTP/1.0\r\nAuthorization: Bearer " TA_TOKEN
                       "\r\nContent-Length: 0\r\n\r\n",
                       &r, NULL, c->err, sizeof(c->err)) == 0 &&
            (r.status != 200 || !strstr(r.buf + r.body, "\"ok\":true")))
            snprintf(c->err, sizeof(c->err), "control %d: HTTP %d '%.80s'", k + 1, r.status,
                     r.buf + r.body);
        free(r.buf);
    }
    return NULL;
}

/* The HTTP clients' verdicts, after the server stopped. */
static int ta_http_check(struct ta_stream *streams, struct ta_scraper *scr,
                         const struct ta_controller *ctl, const struct ta_writer *w,
                         const struct ta_agent *a, const struct agent_http_stats *st, char *why,
                         size_t whylen) {
    int rc;
    for (int k = 0; k < TA_FOLLOWERS; k++) {
        if (streams[k].rc != 0 || streams[k].status != 200)
            return TA_FAIL("/events client %d: HTTP %d: %s", k, streams[k].status, streams[k].err);
        if ((rc = ta_seen_check(&streams[k].seen, k, TA_HTTP_EVENTS, w->status, w->layouts, why,
                                whylen)) != 0)
            return rc;
    }
    for (int k = 0; k < TA_SCRAPERS; k++)
        if (scr[k].err[0])
            return TA_FAIL("/metrics client %d: %s", k, scr[k].err);
    if (ctl->err[0])
        return TA_FAIL("/control client: %s", ctl->err);
    unsigned controls = atomic_load(&a->controls);
    if (controls != TA_CONTROLS)
        return TA_FAIL("the control handler ran %u times for %d authorized posts", controls,
                       TA_CONTROLS);
    /* (st->followers may still count a stream whose follower just closed: the server counts
     * it down after agent_follow_close, so agent_log_wait_followers is what says they ended) */
    if (st->unauthorized != 1)
        return TA_FAIL("%llu requests answered 401; 1 was sent without the token",
                       (unsigned long long)st->unauthorized);
    return 0;
}

int thread_case_agent_http_streams(char *why, size_t whylen) {
    static struct ta_agent a;
    static struct ta_http h;
    static struct ta_stream streams[TA_FOLLOWERS];
    static struct ta_scraper scr[TA_SCRAPERS];
    static struct ta_controller ctl;
    struct agent_log *log;
    struct agent_http *srv;
    ta_agent_init(&a);
    if (ta_agent_up(&a, &log, &srv, TA_RUN, why, whylen) != 0) {
        ta_agent_fini(&a);
        return -1;
    }
    memset(&h, 0, sizeof(h));
    h.port = agent_http_port(srv);
    ta_gate_init(&h.streaming);
    ta_gate_init(&h.scraped);
    atomic_init(&h.writer_done, false);
    pthread_t st_th[TA_FOLLOWERS], sc_th[TA_SCRAPERS], ctl_th;
    int n_st = 0, n_sc = 0, rc = 0;
    bool ctl_on = false;
    for (; n_st < TA_FOLLOWERS; n_st++) {
        memset(&streams[n_st], 0, sizeof(streams[n_st]));
        streams[n_st].h = &h;
        ta_seen_init(&streams[n_st].seen);
        if (pthread_create(&st_th[n_st], NULL, ta_stream_thread, &streams[n_st]) != 0)
            break;
    }
    /* every stream follows the log before the first line: each must get them all */
    if (n_st < TA_FOLLOWERS || !ta_gate_wait(&h.streaming, TA_FOLLOWERS, TA_WAIT_MS))
        rc = TA_FAIL("%d /events clients started, not all got their answer", n_st);
    for (; rc == 0 && n_sc < TA_SCRAPERS; n_sc++) {
        scr[n_sc] = (struct ta_scraper){.h = &h, .id = n_sc};
        if (pthread_create(&sc_th[n_sc], NULL, ta_scrape_thread, &scr[n_sc]) != 0) {
            rc = TA_FAIL("cannot start a scraper");
            break;
        }
    }
    ctl = (struct ta_controller){.h = &h};
    if (rc == 0 && !(ctl_on = pthread_create(&ctl_th, NULL, ta_control_thread, &ctl) == 0))
        rc = TA_FAIL("cannot start the controller");
    struct ta_writer w = {
        .log = log, .events = rc == 0 ? TA_HTTP_EVENTS : 0, .agent = &a, .scraped = &h.scraped};
    ta_write_lines(&w);
    atomic_store(&h.writer_done, true);
    for (int k = 0; k < n_sc; k++)
        pthread_join(sc_th[k], NULL);
    if (ctl_on)
        pthread_join(ctl_th, NULL);
    struct agent_http_stats st;
    bool gone = ta_agent_down(log, srv, &st);
    for (int k = 0; k < n_st; k++)
        pthread_join(st_th[k], NULL);
    agent_log_destroy(log);
    ta_gate_fini(&h.streaming);
    ta_gate_fini(&h.scraped);
    if (rc == 0 && w.err[0])
        rc = TA_FAIL("writer: %s", w.err);
    if (rc == 0 && !gone)
        rc = TA_FAIL("/events streams still open after the log closed");
    if (rc == 0)
        rc = ta_http_check(streams, scr, &ctl, &w, &a, &st, why, whylen);
    ta_agent_fini(&a);
    return rc;
}

/* ---- 3: the attach client against a real agent ---- */

/* The run line as backend/record/record.c writes it (what replay_parse_line needs). */
static void ta_run_line(char *buf, size_t n) {
    snprintf(buf, n,
             "{\"type\":\"run\",\"version\":1,\"ringside\":\"0.1.0\",\"host\":\"gpu-box\","
             "\"backend\":\"cpu\",\"device\":\"CPU (test)\",\"arch\":\"x86_64\",\"devices\":1,"
             "\"start_ns\":%llu,\"start_wall_ns\":1700000000000000000,\"epochs\":2,"
             "\"chunk\":250,\"config\":{}}",
             TA_T0);
}

struct ta_remote_writer {
    struct agent_log *log;
    struct agent_status *status; /* large: off the stack */
    char err[160];
};

/* A status line as the agent writes it: control on, one GPU, the kernel log live. */
static void ta_remote_status(struct ta_remote_writer *w, uint64_t t_ns) {
    struct agent_status *s = w->status;
    memset(s, 0, sizeof(*s));
    s->t_ns = t_ns;
    s->control = true;
    s->has_tele = true;
    s->tele.n_prov = 1;
    snprintf(s->tele.prov[0].name, sizeof(s->tele.prov[0].name), "sysfs");
    s->tele.n_gpus = 1;
    tele_gpu_init(&s->tele.gpus[0], "0000:03:00.0");
    s->tele.gpus[0].index = 0;
    s->tele.gpus[0].f[TELE_F_TEMP] = 61;
    s->tele.gpus[0].src[TELE_F_TEMP] = 1;
    s->has_kmsg = true;
    s->kmsg = (struct kmsg_stats){.state = KMSG_STATE_LIVE, .lines = 12};
    char *line = NULL;
    size_t len = 0;
    if (agent_status_write(s, &line, &len) != 0) {
        snprintf(w->err, sizeof(w->err), "agent_status_write failed");
        return;
    }
    agent_log_append(w->log, AGENT_LINE_STATUS, line, len);
    free(line);
}

/* Event seq: a phase, a sync or a metric, by turns. */
static void ta_remote_event(struct ev *e, uint32_t seq) {
    memset(e, 0, sizeof(*e));
    e->t_ns = TA_T0 + seq * 1000000ull;
    e->seq = seq;
    e->dev = 0;
    switch (seq % 3) {
    case 0:
        e->kind = EV_PHASE;
        e->u.phase = (struct ev_phase){.phase = PHASE_FORWARD,
                                       .epoch = 1,
                                       .step = seq,
                                       .chunk = -1,
                                       .start_ns = e->t_ns - 1000,
                                       .end_ns = e->t_ns};
        break;
    case 1:
        e->kind = EV_SYNC;
        e->u.sync = (struct ev_sync){
            .op = SYNC_OP_DEVICE, .rc = 0, .start_ns = e->t_ns - 500, .dur_ns = 500};
        break;
    default:
        e->kind = EV_METRIC;
        e->dev = EV_DEV_NONE;
        e->u.metric =
            (struct ev_metric){.epoch = 1, .step = seq, .loss = 1.0 / seq, .samples_per_s = 1e3};
        break;
    }
}

static void *ta_remote_write(void *arg) {
    struct ta_remote_writer *w = arg;
    char line[2048];
    ta_remote_status(w, TA_T0);
    for (uint32_t seq = 1; seq <= TA_REMOTE_EVENTS && !w->err[0]; seq++) {
        struct ev e;
        ta_remote_event(&e, seq);
        int len = rec_json_event(&e, line, sizeof(line));
        if (len <= 0 || (size_t)len >= sizeof(line) ||
            agent_log_append(w->log, AGENT_LINE_EVENT, line, (size_t)len) != seq)
            snprintf(w->err, sizeof(w->err), "event %u not appended as %u", seq, seq);
        if (seq % TA_REMOTE_STATUS == 0)
            ta_remote_status(w, e.t_ns);
    }
    return NULL;
}

/* What the UI thread saw. */
struct ta_ui {
    uint32_t events; /* the agent's events drained: their seqs were 1..events */
    bool control, key_sent, answered, tele, kmsg;
    char key_msg[160];
    char err[300];
};

/* Take what the source has, as the app's frame does. */
static void ta_ui_frame(struct source *src, struct ta_ui *ui) {
    static struct ev evs[TA_DRAIN];
    size_t n = src->ops->drain(src, evs, TA_DRAIN);
    for (size_t i = 0; i < n && !ui->err[0]; i++) {
        const struct ev *e = &evs[i];
        if (e->kind == EV_LOG) { /* the source's own lines: the control answer, or trouble */
            if (strncmp(e->u.text.text, "agent: chunk_step: ", 19) == 0)
                ui->answered = true;
            else
                snprintf(ui->err, sizeof(ui->err), "unexpected line '%s'", e->u.text.text);
        } else if (e->seq != ui->events + 1) {
            snprintf(ui->err, sizeof(ui->err), "event seq %u after %u", e->seq, ui->events);
        } else {
            ui->events++;
        }
    }
    const struct engine_snap *snap = src->ops->snap(src);
    if (snap->epochs != 2 && !ui->err[0])
        snprintf(ui->err, sizeof(ui->err), "the snapshot says %d epochs", snap->epochs);
    ui->tele |= src->ops->tele(src) != NULL;
    struct kmsg_stats ks;
    const char *reason = NULL;
    ui->kmsg |= src->ops->kmsg(src, &ks, &reason);
    struct trace_inflight in;
    src->ops->inflight(src, 0, &in);
    (void)src->ops->now_ns(src);
    (void)src->ops->status(src);
    ui->control |= src->run.control_off[0] == '\0';
    if (ui->control && !ui->key_sent) {
        ui->key_sent = true;
        if (!src->ops->action(src, SOURCE_CHUNK_UP, ui->key_msg, sizeof(ui->key_msg)))
            snprintf(ui->err, sizeof(ui->err), "chunk up ('+') not handled");
    }
}

/* Frames until every event came and the control answer too, waiting on the wake descriptor. */
static void ta_ui_run(struct source *src, struct ta_ui *ui) {
    uint64_t deadline = mono_now_ns() + TA_WAIT_MS * 1000000ull;
    for (;;) {
        ta_ui_frame(src, ui);
        if (ui->err[0] || (ui->events == TA_REMOTE_EVENTS && ui->answered))
            return;
        if (src->ops->done(src)) {
            snprintf(ui->err, sizeof(ui->err), "the source ended after %u events", ui->events);
            return;
        }
        uint64_t now = mono_now_ns();
        if (now >= deadline) {
            snprintf(ui->err, sizeof(ui->err),
                     "after %d ms: %u of %u events, control %d, answer %d, status '%s'", TA_WAIT_MS,
                     ui->events, TA_REMOTE_EVENTS, ui->control, ui->answered,
                     src->ops->status(src));
            return;
        }
        struct pollfd pf = {src->ops->wake_fd(src), POLLIN, 0};
        poll(&pf, 1, (int)((deadline - now) / 1000000u) + 1);
    }
}

static int ta_remote_check(const struct ta_ui *ui, const struct ta_agent *a, char *why,
                           size_t whylen) {
    if (ui->err[0])
        return TA_FAIL("UI: %s", ui->err);
    if (!ui->tele || !ui->kmsg)
        return TA_FAIL("the status line's telemetry (%d) or kernel log (%d) never showed", ui->tele,
                       ui->kmsg);
    const char *want = "sent: chunk_step +1";
    if (strcmp(ui->key_msg, want) != 0)
        return TA_FAIL("'+' said '%s', not '%s'", ui->key_msg, want);
    unsigned controls = atomic_load(&a->controls), steps = atomic_load(&a->chunk_steps);
    long long arg = atomic_load(&a->step_arg);
    if (controls != 1 || steps != 1 || arg != 1)
        return TA_FAIL("the agent got %u commands, %u chunk_step, arg %lld (want 1, 1, 1)",
                       controls, steps, arg);
    return 0;
}

int thread_case_remote_attach(char *why, size_t whylen) {
    static struct ta_agent a;
    static struct ta_ui ui;
    char run[512];
    struct agent_log *log;
    struct agent_http *srv;
    ta_run_line(run, sizeof(run));
    ta_agent_init(&a);
    memset(&ui, 0, sizeof(ui));
    if (ta_agent_up(&a, &log, &srv, run, why, whylen) != 0) {
        ta_agent_fini(&a);
        return -1;
    }
    struct ta_remote_writer w = {.log = log, .status = calloc(1, sizeof(struct agent_status))};
    struct remote_conf c;
    remote_conf_default(&c);
    snprintf(c.url, sizeof(c.url), "http://127.0.0.1:%u", agent_http_port(srv));
    snprintf(c.token, sizeof(c.token), "%s", TA_TOKEN);
    c.timeout_ms = TA_WAIT_MS;
    c.retry_ms = 100;
    struct source *src = NULL;
    char err[512] = "";
    pthread_t wt;
    bool writing = false;
    int rc = 0;
    if (!w.status)
        rc = TA_FAIL("out of memory");
    else if (remote_open(&src, &c, err, sizeof(err)) != 0)
        rc = TA_FAIL("remote_open: %s", err);
    else if (!(writing = pthread_create(&wt, NULL, ta_remote_write, &w) == 0))
        rc = TA_FAIL("cannot start the writer");
    if (rc == 0)
        ta_ui_run(src, &ui);
    if (src) {
        src->ops->stop(src);
        src->ops->destroy(src);
    }
    if (writing)
        pthread_join(wt, NULL);
    struct agent_http_stats st;
    bool gone = ta_agent_down(log, srv, &st);
    agent_log_destroy(log);
    free(w.status);
    if (rc == 0 && w.err[0])
        rc = TA_FAIL("writer: %s", w.err);
    if (rc == 0)
        rc = ta_remote_check(&ui, &a, why, whylen);
    if (rc == 0 && !gone)
        rc = TA_FAIL("the attach client's stream still open after the log closed");
    ta_agent_fini(&a);
    return rc;
}
