/* The agent's HTTP endpoint, driven over plain sockets: routes, content types, the /events
 * stream (what is held, then following, keep-alives, the end), the token, /control, the size
 * and connection limits, the UNIX socket, HTTPS (through a GnuTLS client) and the TLS files it
 * refuses, and start-up errors. Fake handlers, a real log. */
#include "backend/core/mono.h"
#include "backend/vpoc/vpoc.h"
#include "tests/support/rs_test.h"
#include "tui/agent/agent_http.h"
#include "tui/agent/agent_tls.h"
#include "tui/agent/http_unix.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define AH_METRICS "# TYPE ringside_up gauge\nringside_up 1\n"
#define AH_OM      "# TYPE ringside_up gauge\nringside_up 1\n# EOF\n"
#define AH_TOKEN   "s3cret-token"
#define AH_TIMEOUT 5 /* seconds, for every socket read */

/* What the fake handlers saw and say. */
struct ah_fake {
    atomic_int metrics_calls;
    atomic_bool openmetrics;
    atomic_int control_calls;
    atomic_int cmd;
    atomic_llong arg;
    atomic_bool healthy;
};

static struct ah_fake ah_fake;
static struct agent_log *ah_log;
static struct agent_http *ah_srv;
static struct agent_tls ah_tls; /* the server's credentials, released after it stops */
static char ah_dir[512];

static int ah_metrics(void *ctx, bool openmetrics, char **out, size_t *len) {
    struct ah_fake *f = ctx;
    atomic_fetch_add(&f->metrics_calls, 1);
    atomic_store(&f->openmetrics, openmetrics);
    *out = strdup(openmetrics ? AH_OM : AH_METRICS);
    *len = strlen(*out);
    return 0;
}

static int ah_control(void *ctx, enum ev_cmd_id cmd, int64_t arg, char *msg, size_t msglen) {
    struct ah_fake *f = ctx;
    atomic_fetch_add(&f->control_calls, 1);
    atomic_store(&f->cmd, (int)cmd);
    atomic_store(&f->arg, (long long)arg);
    if (cmd == CMD_PROBE) {
        snprintf(msg, msglen, "a probe is already running");
        return -EBUSY;
    }
    snprintf(msg, msglen, "done \"%s\"", cmd == CMD_SET_CHUNK ? "chunk" : "other");
    return 0;
}

static bool ah_health(void *ctx, char *why, size_t whylen) {
    struct ah_fake *f = ctx;
    bool ok = atomic_load(&f->healthy);
    snprintf(why, whylen, "%s", ok ? "ok" : "training failed: out of memory");
    return ok;
}

static struct agent_http_handlers ah_handlers(void) {
    struct agent_http_handlers h = {.ctx = &ah_fake,
                                    .metrics = ah_metrics,
                                    .control = ah_control,
                                    .health = ah_health,
                                    .log = ah_log};
    return h;
}

static void ah_init(void) {
    memset(&ah_fake, 0, sizeof(ah_fake));
    atomic_store(&ah_fake.healthy, true);
    atomic_store(&ah_fake.cmd, -1);
    cr_assert_eq(agent_log_create(&ah_log, 100, 1 << 20), 0);
    cr_assert_eq(agent_log_set_run(ah_log, "{\"type\":\"run\"}"), 0);
    cr_assert_eq(rs_test_tmpdir(ah_dir, sizeof(ah_dir)), 0);
}

static void ah_fini(void) {
    if (ah_log)
        agent_log_close(ah_log);
    agent_http_stop(ah_srv);
    ah_srv = NULL;
    agent_tls_fini(&ah_tls);
    agent_log_destroy(ah_log);
    ah_log = NULL;
    rs_test_rmtree(ah_dir);
}

TestSuite(agent_http, .init = ah_init, .fini = ah_fini, .timeout = 30);

static struct agent_http_conf ah_conf(void) {
    struct agent_http_conf c;
    agent_http_conf_default(&c);
    snprintf(c.listen, sizeof(c.listen), "127.0.0.1:0");
    return c;
}

static void ah_start(const struct agent_http_conf *c) {
    struct agent_http_handlers h = ah_handlers();
    char err[256] = "";
    cr_assert_eq(agent_http_start(&ah_srv, c, &h, err, sizeof(err)), 0, "%s", err);
    if (c->listen[0])
        cr_assert_gt(agent_http_port(ah_srv), 0);
}

/* c->unix_path: the test's directory/agent.sock */
static void ah_sock_path(struct agent_http_conf *c) {
    int n = snprintf(c->unix_path, sizeof(c->unix_path), "%s/agent.sock", ah_dir);
    cr_assert_lt((size_t)n, sizeof(c->unix_path));
}

/* ---- a tiny client ---- */

static void ah_timeouts(int fd) {
    struct timeval tv = {AH_TIMEOUT, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int ah_connect(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(agent_http_port(ah_srv))};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", strerror(errno));
    ah_timeouts(fd);
    return fd;
}

static int ah_connect_unix(const char *path) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", strerror(errno));
    ah_timeouts(fd);
    return fd;
}

/* Send all of text (a failed send is no test failure: a refused connection may be closed). */
static void ah_send(int fd, const char *text) {
    size_t n = strlen(text), off = 0;
    while (off < n) {
        ssize_t w = send(fd, text + off, n - off, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        off += (size_t)w;
    }
}

struct ah_buf {
    char *p;
    size_t len, cap;
    bool eof;
};

/* Read what comes next (blocking, AH_TIMEOUT at most) into b; false at the end. */
static bool ah_recv(int fd, struct ah_buf *b) {
    if (b->cap - b->len < 4097) {
        b->cap = b->cap ? b->cap * 2 : 8192;
        b->p = realloc(b->p, b->cap);
        cr_assert_not_null(b->p);
    }
    ssize_t n = recv(fd, b->p + b->len, b->cap - b->len - 1, 0);
    if (n < 0 && errno == ECONNRESET)
        n = 0;
    cr_assert_geq(n, 0, "recv: %s", strerror(errno));
    b->len += (size_t)n;
    b->p[b->len] = '\0';
    b->eof = n == 0;
    return n > 0;
}

/* Read until needle is in the buffer (the test fails on a timeout or the end before). */
static void ah_recv_until(int fd, struct ah_buf *b, const char *needle) {
    while (!b->p || !strstr(b->p, needle))
        cr_assert(ah_recv(fd, b), "the end before '%s': %s", needle, b->p ? b->p : "");
}

static void ah_recv_all(int fd, struct ah_buf *b) {
    while (ah_recv(fd, b))
        ;
}

struct ah_resp {
    int status;
    char *head; /* status line and headers */
    char *body;
    size_t body_len;
    struct ah_buf raw;
};

static void ah_parse(struct ah_resp *r) {
    r->status = 0;
    r->head = r->body = NULL;
    if (!r->raw.p || strncmp(r->raw.p, "HTTP/1.", 7) != 0)
        return;
    char *end = strstr(r->raw.p, "\r\n\r\n");
    cr_assert_not_null(end, "no end of headers: %s", r->raw.p);
    end[2] = '\0';
    r->head = r->raw.p;
    r->body = end + 4;
    r->body_len = r->raw.len - (size_t)(r->body - r->raw.p);
    r->status = atoi(r->raw.p + 9);
}

/* The value of header name (in a static buffer), or NULL. */
static const char *ah_header(const struct ah_resp *r, const char *name) {
    static char v[512];
    size_t n = strlen(name);
    for (const char *l = r->head; l && *l; l = strstr(l, "\r\n") ? strstr(l, "\r\n") + 2 : NULL)
        if (strncasecmp(l, name, n) == 0 && l[n] == ':') {
            const char *s = l + n + 1 + strspn(l + n + 1, " ");
            size_t len = strcspn(s, "\r\n");
            snprintf(v, sizeof(v), "%.*s", (int)len, s);
            return v;
        }
    return NULL;
}

/* One request on a new connection; the whole response (the server closes: HTTP/1.0). */
static struct ah_resp ah_on(int fd, const char *request) {
    struct ah_resp r;
    memset(&r, 0, sizeof(r));
    ah_send(fd, request);
    ah_recv_all(fd, &r.raw);
    close(fd);
    ah_parse(&r);
    return r;
}

static struct ah_resp ah_req(const char *request) {
    return ah_on(ah_connect(), request);
}

/* METHOD path with the token (NULL: none) and extra header lines. */
static struct ah_resp ah_call(const char *method, const char *path, const char *token,
                              const char *extra) {
    char req[4096];
    snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\n%s%s%s%s\r\n", method, path,
             token ? "Authorization: Bearer " : "", token ? token : "", token ? "\r\n" : "",
             extra ? extra : "");
    return ah_req(req);
}

static void ah_free(struct ah_resp *r) {
    free(r->raw.p);
    memset(r, 0, sizeof(*r));
}

/* ---- /metrics, /healthz, errors ---- */

Test(agent_http, metrics_in_the_prometheus_text_format) {
    struct agent_http_conf c = ah_conf();
    ah_start(&c);
    struct ah_resp r = ah_call("GET", "/metrics", NULL, NULL);
    cr_assert_eq(r.status, 200, "%s", r.raw.p);
    cr_assert_str_eq(ah_header(&r, "Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
    cr_assert_str_eq(ah_header(&r, "Cache-Control"), "no-store");
    cr_assert_str_eq(ah_header(&r, "X-Content-Type-Options"), "nosniff");
    cr_assert_str_eq(r.body, AH_METRICS);
    cr_assert_not(atomic_load(&ah_fake.openmetrics));
    ah_free(&r);
}

/* Without a token, /events answers only requests that name the agent by address: a DNS name in
 * Host is what a rebinding attack from a browser page sends. /metrics still answers names. */
Test(agent_http, without_a_token_events_need_an_address_in_host) {
    struct agent_http_conf c = ah_conf();
    ah_start(&c);
    static const struct {
        const char *host;
        int status;
    } cases[] = {
        {"127.0.0.1", 200},
        {"127.0.0.1:9464", 200},
        {"localhost:9464", 200},
        {"LOCALHOST", 200},
        {"[::1]:9464", 200},
        {"10.1.2.3", 200},
        {"evil.example", 421},
        {"evil.example:9464", 421},
        {"127.0.0.1.nip.io", 421},
        {"[not-an-ip]:80", 421},
        {"", 421},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        char req[256];
        snprintf(req, sizeof(req), "GET /events?follow=0 HTTP/1.0\r\nHost: %s\r\n\r\n",
                 cases[k].host);
        struct ah_resp r = ah_req(req);
        cr_assert_eq(r.status, cases[k].status, "Host: %s", cases[k].host);
        if (cases[k].status == 421)
            cr_assert_not_null(strstr(r.body, "--token-file"), "%s", r.body);
        ah_free(&r);
    }
    struct ah_resp r = ah_req("GET /metrics HTTP/1.0\r\nHost: prometheus.internal\r\n\r\n");
    cr_assert_eq(r.status, 200, "/metrics by name");
    ah_free(&r);
    r = ah_req("GET /events?follow=0 HTTP/1.0\r\n\r\n"); /* HTTP/1.0 without Host */
    cr_assert_eq(r.status, 200);
    ah_free(&r);
}

Test(agent_http, metrics_in_openmetrics_when_accepted) {
    struct agent_http_conf c = ah_conf();
    ah_start(&c);
    struct ah_resp r = ah_call("GET", "/metrics", NULL,
                               "Accept: application/openmetrics-text;version=1.0.0,"
                               "text/plain;version=0.0.4;q=0.5\r\n");
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(ah_header(&r, "Content-Type"),
                     "application/openmetrics-text; version=1.0.0; charset=utf-8");
    cr_assert_str_eq(r.body, AH_OM);
    cr_assert(atomic_load(&ah_fake.openmetrics));
    ah_free(&r);
}

Test(agent_http, healthz_says_ok_or_why_not) {
    struct agent_http_conf c = ah_conf();
    ah_start(&c);
    struct ah_resp r = ah_call("GET", "/healthz", NULL, NULL);
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(r.body, "ok\n");
    ah_free(&r);
    atomic_store(&ah_fake.healthy, false);
    r = ah_call("GET", "/healthz", NULL, NULL);
    cr_assert_eq(r.status, 503);
    cr_assert_str_eq(r.body, "training failed: out of memory\n");
    ah_free(&r);
    r = ah_call("HEAD", "/healthz", NULL, NULL);
    cr_assert_eq(r.status, 503);
    cr_assert_eq(r.body_len, 0, "HEAD: no body");
    ah_free(&r);
}

Test(agent_http, unknown_paths_are_404_and_other_methods_405) {
    struct agent_http_conf c = ah_conf();
    ah_start(&c);
    struct ah_resp r = ah_call("GET", "/nope", NULL, NULL);
    cr_assert_eq(r.status, 404);
    cr_assert(strstr(r.body, "not found"), "%s", r.body);
    ah_free(&r);
    r = ah_call("GET", "/metrics/", NULL, NULL);
    cr_assert_eq(r.status, 404);
    ah_free(&r);
    r = ah_call("POST", "/metrics", NULL, NULL);
    cr_assert_eq(r.status, 405);
    cr_assert_str_eq(ah_header(&r, "Allow"), "GET, HEAD");
    ah_free(&r);
    r = ah_call("DELETE", "/events", NULL, NULL);
    cr_assert_eq(r.status, 405);
    ah_free(&r);
    r = ah_call("GET", "/control?cmd=pause", NULL, NULL);
    cr_assert_eq(r.status, 405);
    cr_assert_str_eq(ah_header(&r, "Allow"), "POST");
    ah_free(&r);
    struct agent_http_stats st;
    agent_http_stats(ah_srv, &st);
    cr_assert_eq(st.requests, 5);
    cr_assert_eq(st.refused, 5);
    cr_assert_eq(st.unauthorized, 0);
    cr_assert_eq(st.answered, 0);
}

/* ---- /events ---- */

static void ah_fill_log(void) {
    agent_log_append(ah_log, AGENT_LINE_EVENT, "e1", 2);
    agent_log_append(ah_log, AGENT_LINE_STATE, "s1", 2);
    agent_log_append(ah_log, AGENT_LINE_EVENT, "e2", 2);
    agent_log_append(ah_log, AGENT_LINE_EVENT, "e3", 2);
}

Test(agent_http, events_without_follow_give_what_is_held_then_end) {
    ah_fill_log();
    struct agent_http_conf c = ah_conf();
    ah_start(&c);
    struct ah_resp r = ah_call("GET", "/events?since=1&follow=0", NULL, NULL);
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(ah_header(&r, "Content-Type"), "application/x-ndjson");
    cr_assert_str_eq(ah_header(&r, "Cache-Control"), "no-store");
    cr_assert_str_eq(r.body, "{\"type\":\"run\"}\ns1\ne2\ne3\n");
    ah_free(&r);
    r = ah_call("GET", "/events?follow=0", NULL, NULL);
    cr_assert_str_eq(r.body, "{\"type\":\"run\"}\ne1\ns1\ne2\ne3\n");
    ah_free(&r);
}

Test(agent_http, events_with_http_1_1_are_chunked) {
    ah_fill_log();
    struct agent_http_conf c = ah_conf();
    ah_start(&c);
    struct ah_resp r = ah_req(
        "GET /events?since=2&follow=0 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(ah_header(&r, "Transfer-Encoding"), "chunked");
    char body[256] = "";
    size_t n = 0;
    for (const char *p = r.body;;) {
        char *end;
        unsigned long len = strtoul(p, &end, 16);
        cr_assert_eq(strncmp(end, "\r\n", 2), 0);
        if (len == 0)
            break;
        cr_assert_lt(n + len, sizeof(body));
        memcpy(body + n, end + 2, len);
        n += len;
        p = end + 2 + len + 2;
    }
    body[n] = '\0';
    cr_assert_str_eq(body, "{\"type\":\"run\"}\ne3\n");
    ah_free(&r);
}

Test(agent_http, a_follower_gets_new_lines_and_the_end_when_the_log_closes) {
    ah_fill_log();
    struct agent_http_conf c = ah_conf();
    ah_start(&c);
    int fd = ah_connect();
    ah_send(fd, "GET /events?since=3 HTTP/1.0\r\n\r\n");
    struct ah_buf b = {0};
    ah_recv_until(fd, &b, "{\"type\":\"run\"}\n");
    cr_assert(strncmp(b.p, "HTTP/1.", 7) == 0 && strstr(b.p, " 200 "), "%s", b.p);
    struct agent_http_stats st;
    agent_http_stats(ah_srv, &st);
    cr_assert_eq(st.followers, 1);
    cr_assert_eq(st.connections, 1);
    agent_log_append(ah_log, AGENT_LINE_EVENT, "e4", 2);
    ah_recv_until(fd, &b, "{\"type\":\"run\"}\ne4\n");
    agent_log_close(ah_log);
    ah_recv_all(fd, &b);
    cr_assert(strstr(b.p, "\r\n\r\n{\"type\":\"run\"}\ne4\n"), "%s", b.p);
    close(fd);
    free(b.p);
}

Test(agent_http, a_quiet_stream_gets_blank_keep_alive_lines) {
    struct agent_http_conf c = ah_conf();
    c.idle_timeout_s = 2; /* keep-alives every second, inside the idle timeout */
    ah_start(&c);
    int fd = ah_connect();
    ah_send(fd, "GET /events HTTP/1.0\r\n\r\n");
    struct ah_buf b = {0};
    ah_recv_until(fd, &b, "{\"type\":\"run\"}\n");
    uint64_t t0 = mono_now_ns();
    ah_recv_until(fd, &b, "{\"type\":\"run\"}\n\n");
    uint64_t took = mono_now_ns() - t0;
    cr_assert_gt(took, 500000000u, "%llu ns", (unsigned long long)took);
    agent_log_append(ah_log, AGENT_LINE_EVENT, "e1", 2);
    ah_recv_until(fd, &b, "{\"type\":\"run\"}\n\ne1\n");
    close(fd);
    free(b.p);
}

Test(agent_http, bad_since_or_follow_is_400) {
    struct agent_http_conf c = ah_conf();
    ah_start(&c);
    const char *bad[] = {"/events?since=abc", "/events?since=-1",
                         "/events?since=", "/events?since=99999999999999999999999",
                         "/events?follow=yes"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct ah_resp r = ah_call("GET", bad[i], NULL, NULL);
        cr_assert_eq(r.status, 400, "%s: %d", bad[i], r.status);
        cr_assert(strstr(r.body, "bad "), "%s", r.body);
        ah_free(&r);
    }
    struct ah_resp r = ah_call("GET", "/events?since=18446744073709551615&follow=0", NULL, NULL);
    cr_assert_eq(r.status, 200, "the largest uint64");
    ah_free(&r);
}

Test(agent_http, stop_ends_open_streams_without_waiting_for_the_log) {
    struct agent_http_conf c = ah_conf();
    ah_start(&c);
    int fd = ah_connect();
    ah_send(fd, "GET /events HTTP/1.0\r\n\r\n");
    struct ah_buf b = {0};
    ah_recv_until(fd, &b, "{\"type\":\"run\"}\n");
    uint64_t t0 = mono_now_ns();
    agent_http_stop(ah_srv);
    ah_srv = NULL;
    uint64_t took = mono_now_ns() - t0;
    cr_assert_lt(took, 3000000000u, "%llu ns", (unsigned long long)took);
    ah_recv_all(fd, &b);
    close(fd);
    free(b.p);
    struct agent_log_stats ls;
    agent_log_stats(ah_log, &ls);
    cr_assert_eq(ls.followers, 0);
}

/* The server's end of the client socket fd (a descriptor of this process), or -1. */
static int ah_server_end(int fd) {
    struct sockaddr_storage mine, peer;
    socklen_t ml = sizeof(mine);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&mine, &ml), 0);
    for (int k = 3; k < 4096; k++) {
        socklen_t pl = sizeof(peer);
        if (k != fd && getpeername(k, (struct sockaddr *)&peer, &pl) == 0 && pl == ml &&
            memcmp(&peer, &mine, ml) == 0)
            return k;
    }
    return -1;
}

/* This process's resident memory in bytes. */
static uint64_t ah_rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    cr_assert_not_null(f);
    unsigned long long size = 0, rss = 0;
    cr_assert_eq(fscanf(f, "%llu %llu", &size, &rss), 2);
    fclose(f);
    return rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Read fd until needle has come (the test fails on a timeout or the end before); the bytes
 * read. Only a needle's length of the stream is kept. */
static size_t ah_recv_through(int fd, const char *needle) {
    size_t nl = strlen(needle), keep = 0, total = 0;
    static char buf[65536 + 64];
    cr_assert_lt(nl, 64);
    for (;;) {
        ssize_t n = recv(fd, buf + keep, sizeof(buf) - keep - 1, 0);
        cr_assert_gt(n, 0, "the end or a timeout before '%s'", needle);
        total += (size_t)n;
        size_t len = keep + (size_t)n;
        buf[len] = '\0';
        for (size_t k = 0; k + nl <= len; k++)
            if (memcmp(buf + k, needle, nl) == 0)
                return total;
        keep = len < nl ? len : nl;
        memmove(buf, buf + len - keep, keep);
    }
}

#define AH_PUSH_BYTES (64u << 20) /* through a follower that never reads */
#define AH_LINE_BYTES 8192

/* Resident memory says what the process holds, except under AddressSanitizer, whose quarantine
 * keeps what was freed (the evicted lines) resident a while. */
#if defined(__SANITIZE_ADDRESS__)
#define AH_RSS_MEANINGFUL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AH_RSS_MEANINGFUL 0
#endif
#endif
#ifndef AH_RSS_MEANINGFUL
#define AH_RSS_MEANINGFUL 1
#endif

/* A follower that never reads holds the server to what its socket takes and one response
 * block: the log's window is shared and bounded, and the stream reads from it only when the
 * socket has room. 64 MiB go through; the server's queue for the connection stays under the
 * kernel's send buffer limit, the window under its 1 MiB, the process grows by less than 16 MiB
 * (where resident memory means that), and the follower, when it reads at last, goes on at the
 * oldest line still held (a gap, not a backlog). */
Test(agent_http, a_follower_that_never_reads_holds_bounded_memory) {
    struct agent_http_conf c = ah_conf();
    ah_start(&c);
    int fd = ah_connect();
    ah_send(fd, "GET /events HTTP/1.0\r\n\r\n");
    struct ah_buf head = {0};
    ah_recv_until(fd, &head, "{\"type\":\"run\"}\n");
    free(head.p);
    int srv = ah_server_end(fd);
    cr_assert_geq(srv, 0, "no server end of the connection");
    static char line[AH_LINE_BYTES];
    memset(line, 'x', sizeof(line));
    uint64_t rss0 = ah_rss_bytes(), rss_max = rss0, held_max = 0;
    int queued = 0, queued_max = 0;
    struct agent_log_stats ls;
    for (unsigned k = 0; k < AH_PUSH_BYTES / AH_LINE_BYTES; k++) {
        int n = snprintf(line, sizeof(line), "%u ", k);
        line[n] = 'x';
        cr_assert_gt(agent_log_append(ah_log, AGENT_LINE_EVENT, line, sizeof(line)), 0);
        if (k % 512 == 0) {
            cr_assert_eq(ioctl(srv, SIOCOUTQ, &queued), 0);
            queued_max = queued > queued_max ? queued : queued_max;
            uint64_t rss = ah_rss_bytes();
            rss_max = rss > rss_max ? rss : rss_max;
            agent_log_stats(ah_log, &ls);
            held_max = ls.bytes > held_max ? ls.bytes : held_max;
        }
    }
    cr_log_info("a follower that never reads, %u MiB pushed: server send queue at most %d bytes, "
                "resident memory +%.1f MiB",
                AH_PUSH_BYTES >> 20, queued_max, (double)(rss_max - rss0) / (1 << 20));
    cr_assert_leq(queued_max, 4 << 20, "%d bytes queued", queued_max);
    cr_assert_leq(held_max, (1u << 20) + AH_LINE_BYTES, "the window held %llu bytes",
                  (unsigned long long)held_max);
    if (AH_RSS_MEANINGFUL)
        cr_assert_lt(rss_max - rss0, 16u << 20, "grew by %llu bytes",
                     (unsigned long long)(rss_max - rss0));
    agent_log_stats(ah_log, &ls);
    cr_assert_gt(ls.evicted, 0);
    cr_assert_eq(ls.followers, 1, "the slow follower is still connected");
    /* it reads at last: the last line comes, and far fewer bytes than were pushed */
    char last[32];
    snprintf(last, sizeof(last), "\n%u x", AH_PUSH_BYTES / AH_LINE_BYTES - 1);
    size_t seen = ah_recv_through(fd, last);
    cr_log_info("it got %zu bytes when it read at last", seen);
    cr_assert_lt(seen, AH_PUSH_BYTES / 4, "%zu bytes", seen);
    close(fd);
}

/* ---- the token ---- */

Test(agent_http, with_a_token_everything_but_metrics_needs_it) {
    ah_fill_log();
    struct agent_http_conf c = ah_conf();
    snprintf(c.token, sizeof(c.token), AH_TOKEN);
    c.auth_failures = 100; /* the 15 wrong tokens below are looked at (test_agent_refusals) */
    ah_start(&c);
    struct ah_resp r = ah_call("GET", "/metrics", NULL, NULL);
    cr_assert_eq(r.status, 200);
    ah_free(&r);
    const char *paths[] = {"/events?follow=0", "/healthz", "/nope"};
    const char *wrong[] = {NULL, "s3cret-tokem", "s3cret-token2", "s3cret", ""};
    for (size_t i = 0; i < 3; i++) {
        for (size_t k = 0; k < sizeof(wrong) / sizeof(wrong[0]); k++) {
            r = ah_call("GET", paths[i], wrong[k], NULL);
            cr_assert_eq(r.status, 401, "%s with %s", paths[i], wrong[k] ? wrong[k] : "none");
            cr_assert_str_eq(ah_header(&r, "WWW-Authenticate"), "Bearer realm=\"ringside\"");
            ah_free(&r);
        }
    }
    /* %00 in a query value is refused, not cut short ("1%00junk" would read as "1") */
    r = ah_call("GET", "/events?follow=0&since=1%00junk", AH_TOKEN, NULL);
    cr_assert_eq(r.status, 400);
    cr_assert_not_null(strstr(r.body, "NUL byte"), "%s", r.body);
    ah_free(&r);
    /* the scheme in any case (RFC 7235), the token exactly */
    const char *schemes[] = {"Authorization: bearer " AH_TOKEN "\r\n",
                             "Authorization: BEARER  " AH_TOKEN "\r\n"};
    for (size_t k = 0; k < 2; k++) {
        r = ah_call("GET", "/healthz", NULL, schemes[k]);
        cr_assert_eq(r.status, 200, "%s", schemes[k]);
        ah_free(&r);
    }
    const char *bad[] = {"Authorization: Bearer" AH_TOKEN "\r\n",
                         "Authorization: Basic " AH_TOKEN "\r\n",
                         "Authorization: bearer S3CRET-TOKEN\r\n"};
    for (size_t k = 0; k < 3; k++) {
        r = ah_call("GET", "/healthz", NULL, bad[k]);
        cr_assert_eq(r.status, 401, "%s", bad[k]);
        ah_free(&r);
    }
    r = ah_call("GET", "/healthz", AH_TOKEN, NULL);
    cr_assert_eq(r.status, 200);
    ah_free(&r);
    r = ah_call("GET", "/events?follow=0", AH_TOKEN, NULL);
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(r.body, "{\"type\":\"run\"}\ne1\ns1\ne2\ne3\n");
    ah_free(&r);
    struct agent_http_stats st;
    agent_http_stats(ah_srv, &st);
    cr_assert_eq(st.unauthorized, 18); /* 15 wrong tokens, 3 bad headers */
    cr_assert_eq(st.requests, 24);
    cr_assert_eq(st.refused, 1); /* the %00 query */
    cr_assert_eq(st.answered, 5);
}

/* The token check answers exactly: the token itself, and nothing else (a guess wrong at its
 * first byte, at its last, shorter, longer, empty). It looks at every byte of the token whatever
 * the guess (no early exit that would tell an attacker how much of a guess was right): that is
 * its construction (agent_http_token_equal ORs the bytes' differences over the whole token), not
 * something a test on a shared machine can time reliably. */
Test(agent_http, the_token_check_answers_exactly) {
    char want[AGENT_HTTP_TOKEN_BYTES], first[AGENT_HTTP_TOKEN_BYTES], last[AGENT_HTTP_TOKEN_BYTES];
    size_t n = sizeof(want) - 1;
    for (size_t k = 0; k < n; k++)
        want[k] = (char)('a' + k % 26);
    want[n] = '\0';
    memcpy(first, want, sizeof(want));
    memcpy(last, want, sizeof(want));
    first[0] = 'Z';
    last[n - 1] = 'Z';
    cr_assert(agent_http_token_equal(want, want));
    cr_assert_not(agent_http_token_equal(first, want));
    cr_assert_not(agent_http_token_equal(last, want));
    cr_assert_not(agent_http_token_equal("", want));
    cr_assert_not(agent_http_token_equal(want, ""));
    last[n - 1] = '\0'; /* a prefix of the token */
    cr_assert_not(agent_http_token_equal(last, want));
    cr_assert_not(agent_http_token_equal(want, last), "the token and more");
}

/* ---- /control ---- */

static struct agent_http_conf ah_control_conf(void) {
    struct agent_http_conf c = ah_conf();
    snprintf(c.token, sizeof(c.token), AH_TOKEN);
    c.allow_control = true;
    return c;
}

Test(agent_http, control_is_403_when_off) {
    struct agent_http_conf c = ah_conf();
    ah_start(&c);
    struct ah_resp r = ah_call("POST", "/control?cmd=pause", NULL, NULL);
    cr_assert_eq(r.status, 403);
    cr_assert_str_eq(ah_header(&r, "Content-Type"), "application/json");
    cr_assert_str_eq(r.body, "{\"ok\":false,\"error\":\"control is off: start the agent with "
                             "--allow-control and --token-file\"}\n");
    cr_assert_eq(atomic_load(&ah_fake.control_calls), 0);
    ah_free(&r);
}

Test(agent_http, control_is_403_with_a_token_but_not_allowed) {
    struct agent_http_conf c = ah_conf();
    snprintf(c.token, sizeof(c.token), AH_TOKEN);
    ah_start(&c);
    struct ah_resp r = ah_call("POST", "/control?cmd=pause", AH_TOKEN, NULL);
    cr_assert_eq(r.status, 403);
    ah_free(&r);
}

Test(agent_http, control_needs_the_token) {
    struct agent_http_conf c = ah_control_conf();
    ah_start(&c);
    struct ah_resp r = ah_call("POST", "/control?cmd=pause", NULL, NULL);
    cr_assert_eq(r.status, 401);
    cr_assert(strstr(r.body, "\"ok\":false"), "%s", r.body);
    cr_assert_eq(atomic_load(&ah_fake.control_calls), 0);
    ah_free(&r);
}

Test(agent_http, control_calls_the_handler_with_the_command) {
    struct agent_http_conf c = ah_control_conf();
    ah_start(&c);
    struct ah_resp r = ah_call("POST", "/control?cmd=set_chunk&arg=250", AH_TOKEN, NULL);
    cr_assert_eq(r.status, 200, "%s", r.raw.p);
    cr_assert_str_eq(ah_header(&r, "Content-Type"), "application/json");
    cr_assert_str_eq(r.body, "{\"ok\":true,\"message\":\"done \\\"chunk\\\"\"}\n");
    cr_assert_eq(atomic_load(&ah_fake.cmd), CMD_SET_CHUNK);
    cr_assert_eq(atomic_load(&ah_fake.arg), 250);
    ah_free(&r);
    r = ah_call("POST", "/control?cmd=set_chunk&arg=0", AH_TOKEN, NULL);
    cr_assert_eq(r.status, 200);
    cr_assert_eq(atomic_load(&ah_fake.arg), 0);
    ah_free(&r);
    char most[64]; /* the engine's limit, the one every other way in has */
    snprintf(most, sizeof(most), "/control?cmd=set_chunk&arg=%d", VPOC_CHUNK_MAX);
    r = ah_call("POST", most, AH_TOKEN, NULL);
    cr_assert_eq(r.status, 200);
    cr_assert_eq(atomic_load(&ah_fake.arg), VPOC_CHUNK_MAX);
    ah_free(&r);
    const char *cmds[] = {"pause", "resume", "cleanup"};
    const enum ev_cmd_id ids[] = {CMD_PAUSE, CMD_RESUME, CMD_CLEANUP};
    for (size_t i = 0; i < 3; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/control?cmd=%s", cmds[i]);
        r = ah_call("POST", path, AH_TOKEN, NULL);
        cr_assert_eq(r.status, 200, "%s", cmds[i]);
        cr_assert_eq(atomic_load(&ah_fake.cmd), (int)ids[i]);
        ah_free(&r);
    }
    for (int dir = 1; dir >= -1; dir -= 2) { /* a rung up or down, from the loop's size */
        char path[64];
        snprintf(path, sizeof(path), "/control?cmd=chunk_step&arg=%d", dir);
        r = ah_call("POST", path, AH_TOKEN, NULL);
        cr_assert_eq(r.status, 200, "%s", path);
        cr_assert_eq(atomic_load(&ah_fake.cmd), CMD_CHUNK_STEP);
        cr_assert_eq(atomic_load(&ah_fake.arg), dir);
        ah_free(&r);
    }
    r = ah_call("POST", "/control?cmd=probe", AH_TOKEN, NULL);
    cr_assert_eq(r.status, 409, "the handler's -EBUSY");
    cr_assert_str_eq(r.body, "{\"ok\":false,\"error\":\"a probe is already running\"}\n");
    ah_free(&r);
    cr_assert_eq(atomic_load(&ah_fake.control_calls), 9);
}

Test(agent_http, control_refuses_bad_commands) {
    struct agent_http_conf c = ah_control_conf();
    ah_start(&c);
    const char *bad[] = {"/control",
                         "/control?cmd=stop",
                         "/control?cmd=%22%0a",
                         "/control?cmd=set_chunk",
                         "/control?cmd=set_chunk&arg=-1",
                         "/control?cmd=set_chunk&arg=1000001", /* VPOC_CHUNK_MAX + 1 */
                         "/control?cmd=set_chunk&arg=12x",
                         "/control?cmd=chunk_step",
                         "/control?cmd=chunk_step&arg=0",
                         "/control?cmd=chunk_step&arg=2",
                         "/control?cmd=chunk_step&arg=-2",
                         "/control?cmd=chunk_step&arg=1x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct ah_resp r = ah_call("POST", bad[i], AH_TOKEN, NULL);
        cr_assert_eq(r.status, 400, "%s: %d", bad[i], r.status);
        cr_assert(strncmp(r.body, "{\"ok\":false,\"error\":\"", 21) == 0, "%s", r.body);
        ah_free(&r);
    }
    cr_assert_eq(atomic_load(&ah_fake.control_calls), 0);
}

/* The refusal of a name it does not take lists what it does take: every command the event
 * list marks remote, and not the others. */
Test(agent_http, control_refusals_list_the_remote_commands) {
    struct agent_http_conf c = ah_control_conf();
    ah_start(&c);
    const char *bad[] = {"/control?cmd=reboot", "/control?cmd=stop", "/control"};
    const char *why[] = {"unknown cmd 'reboot': give cmd=", "cmd 'stop' is not a remote command",
                         "no cmd: give cmd="};
    for (size_t i = 0; i < 3; i++) {
        struct ah_resp r = ah_call("POST", bad[i], AH_TOKEN, NULL);
        cr_assert_eq(r.status, 400, "%s: %d", bad[i], r.status);
        cr_assert(strstr(r.body, why[i]), "%s", r.body);
        unsigned listed = 0;
        for (unsigned k = 0; k < CMD_COUNT; k++) {
            char want[48];
            static const char *const hint[] = {"", "&arg=BARS", "&arg=1|-1"};
            snprintf(want, sizeof(want), "%s%s", ev_cmd_name(k), hint[ev_cmd_arg(k)]);
            const char *at = strstr(strstr(r.body, "give cmd=") + 9, want);
            cr_assert_eq(at != NULL, ev_cmd_remote(k), "%s in %s", want, r.body);
            listed += at != NULL;
        }
        cr_assert_eq(listed, CMD_COUNT - 1, "all but stop: %s", r.body);
        ah_free(&r);
    }
    cr_assert_eq(atomic_load(&ah_fake.control_calls), 0);
}

Test(agent_http, control_without_a_token_cannot_start) {
    struct agent_http_conf c = ah_conf();
    c.allow_control = true;
    struct agent_http_handlers h = ah_handlers();
    char err[256] = "";
    cr_assert_eq(agent_http_start(&ah_srv, &c, &h, err, sizeof(err)), -EINVAL);
    cr_assert_str_eq(err, "--allow-control needs --token-file");
    cr_assert_null(ah_srv);
}

/* ---- limits ---- */

Test(agent_http, a_body_over_the_limit_is_413) {
    struct agent_http_conf c = ah_control_conf();
    ah_start(&c);
    struct ah_resp r =
        ah_call("POST", "/control?cmd=pause", AH_TOKEN, "Content-Length: 100000\r\n");
    cr_assert_eq(r.status, 413, "%s", r.raw.p ? r.raw.p : "");
    ah_free(&r);
    cr_assert_eq(atomic_load(&ah_fake.control_calls), 0);
    /* without a Content-Length: the connection is closed once the body runs over */
    char req[12288];
    int k =
        snprintf(req, sizeof(req),
                 "POST /control?cmd=pause HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " AH_TOKEN
                 "\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n%x\r\n",
                 10000);
    memset(req + k, 'y', 10000);
    snprintf(req + k + 10000, sizeof(req) - (size_t)k - 10000, "\r\n0\r\n\r\n");
    r = ah_req(req);
    cr_assert(r.status == 0 || r.status == 413, "%d", r.status);
    ah_free(&r);
    cr_assert_eq(atomic_load(&ah_fake.control_calls), 0);
    /* a body within the limit is read and ignored */
    r = ah_req("POST /control?cmd=pause HTTP/1.0\r\nAuthorization: Bearer " AH_TOKEN
               "\r\nContent-Length: 5\r\n\r\nhello");
    cr_assert_eq(r.status, 200);
    ah_free(&r);
}

Test(agent_http, headers_over_the_limit_are_refused) {
    struct agent_http_conf c = ah_conf();
    c.max_request_bytes = 4096;
    ah_start(&c);
    size_t n = 20000;
    static const char head[] = "GET /healthz HTTP/1.0\r\nX-Pad: ", tail[] = "\r\n\r\n";
    size_t k = sizeof(head) - 1;
    char *req = malloc(k + n + sizeof(tail));
    cr_assert_not_null(req);
    memcpy(req, head, k);
    memset(req + k, 'x', n);
    memcpy(req + k + n, tail, sizeof(tail));
    struct ah_resp r = ah_req(req);
    cr_assert(r.status == 413 || r.status == 431, "%d: %s", r.status, r.raw.p ? r.raw.p : "");
    ah_free(&r);
    free(req);
    r = ah_call("GET", "/healthz", NULL, "X-Pad: a few hundred bytes are fine\r\n");
    cr_assert_eq(r.status, 200);
    ah_free(&r);
}

/* A follower of /events, connected and past the run line: *fd, what it read in *b. */
static void ah_follow(int *fd, struct ah_buf *b) {
    *fd = ah_connect();
    ah_send(*fd, "GET /events HTTP/1.0\r\n\r\n");
    ah_recv_until(*fd, b, "{\"type\":\"run\"}\n");
}

/* Followers hold at most the places they may (here 2 of 3 connections): the next /events is
 * refused (429: its address holds them all, its share as well as the total), /healthz is
 * answered in the place kept, and a stream that ends gives its place back. (Before the follower
 * places, 2 followers of 2 connections refused everyone else.) */
Test(agent_http, followers_never_take_the_last_places) {
    struct agent_http_conf c = ah_conf();
    c.max_connections = 3;
    c.max_followers = 2;
    ah_start(&c);
    int fd[2];
    struct ah_buf b[2] = {{0}, {0}};
    for (int i = 0; i < 2; i++)
        ah_follow(&fd[i], &b[i]);
    struct agent_http_stats st;
    agent_http_stats(ah_srv, &st);
    cr_assert_eq(st.connections, 2);
    cr_assert_eq(st.followers, 2);
    struct ah_resp r = ah_call("GET", "/events", NULL, NULL);
    cr_assert_eq(r.status, 429, "%s", r.raw.p ? r.raw.p : "");
    cr_assert_str_eq(ah_header(&r, "Retry-After"), "10");
    ah_free(&r);
    r = ah_call("GET", "/healthz", NULL, NULL);
    cr_assert_eq(r.status, 200, "the place kept: %s", r.raw.p ? r.raw.p : "");
    ah_free(&r);
    agent_http_stats(ah_srv, &st);
    cr_assert_eq(st.over_follower_address, 1);
    /* the two streams stay counted as answered: a refusal takes none back (the metric's
     * "answered" was once the difference, and went down here) */
    cr_assert_eq(st.answered, 3);
    /* a stream ends: its place is free again */
    close(fd[0]);
    agent_log_append(ah_log, AGENT_LINE_EVENT, "e1", 2); /* the write finds the closed socket */
    ah_recv_until(fd[1], &b[1], "e1\n");
    for (int tries = 0; tries < 500; tries++) {
        r = ah_call("GET", "/events?follow=0", NULL, NULL);
        int status = r.status;
        ah_free(&r);
        if (status == 200)
            break;
        cr_assert_eq(status, 429);
        /* the closed stream's thread notices at its next write: give it one */
        agent_log_append(ah_log, AGENT_LINE_EVENT, "ping", 4);
        ah_recv_until(fd[1], &b[1], "ping\n");
        b[1].len = 0;
        b[1].p[0] = '\0';
        cr_assert_lt(tries, 499);
    }
    close(fd[1]);
    free(b[0].p);
    free(b[1].p);
}

/* Whether the server closed fd (the end, or a reset), waiting ms at most; bytes it sent before
 * are read and dropped. */
static bool ah_closed_within(int fd, int ms) {
    uint64_t deadline = mono_now_ns() + (uint64_t)ms * 1000000u;
    char buf[512];
    for (;;) {
        uint64_t now = mono_now_ns();
        if (now >= deadline)
            return false;
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, (int)((deadline - now) / 1000000u) + 1) <= 0)
            continue;
        ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return true;
    }
}

static uint64_t ah_stat_timed_out(void) {
    struct agent_http_stats st;
    agent_http_stats(ah_srv, &st);
    return st.timed_out;
}

Test(agent_http, a_request_that_drips_is_cut_at_the_deadline) {
    struct agent_http_conf c = ah_conf();
    c.request_timeout_ms = 300;
    ah_start(&c);
    int fd = ah_connect();
    /* a byte every 50 ms: each one would reset an idle timeout, never the deadline */
    static const char req[] =
        "GET /healthz HTTP/1.0\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    uint64_t t0 = mono_now_ns();
    bool closed = false;
    for (size_t k = 0; k < sizeof(req) - 1 && !closed; k++) {
        if (send(fd, req + k, 1, MSG_NOSIGNAL) != 1)
            closed = true; /* reset by the server */
        else
            closed = ah_closed_within(fd, 50);
    }
    uint64_t took = mono_now_ns() - t0;
    cr_assert(closed, "still open after %llu ms of dripping", (unsigned long long)(took / 1000000));
    cr_assert_geq(took, 250000000u, "closed before the deadline: %llu ns",
                  (unsigned long long)took);
    cr_assert_lt(took, 2000000000u, "%llu ns", (unsigned long long)took);
    close(fd);
    cr_assert_eq(ah_stat_timed_out(), 1);
    /* a request that arrives in time is answered, and its connection is not counted */
    struct ah_resp r = ah_call("GET", "/healthz", NULL, NULL);
    cr_assert_eq(r.status, 200);
    ah_free(&r);
    cr_assert_eq(ah_stat_timed_out(), 1);
}

#define AH_DRIPPERS 48

/* Many connections from one address that drip their requests: /healthz from the same address
 * still answers at once (each new connection takes the place of the oldest dripping one),
 * followers whose requests arrived are never pushed out, and the drippers are cut at the
 * deadline. Without the guard the server refuses everyone once the drippers hold every place. */
Test(agent_http, dripping_clients_do_not_lock_out_healthz_or_followers) {
    struct agent_http_conf c = ah_conf();
    c.max_connections = 24;
    c.per_address = 16;
    c.request_timeout_ms = 1500;
    ah_start(&c);
    int follower[2];
    struct ah_buf fb[2] = {{0}, {0}};
    for (int i = 0; i < 2; i++) {
        follower[i] = ah_connect();
        ah_send(follower[i], "GET /events HTTP/1.0\r\n\r\n");
        ah_recv_until(follower[i], &fb[i], "{\"type\":\"run\"}\n");
    }
    int drip[AH_DRIPPERS];
    for (int i = 0; i < AH_DRIPPERS; i++) {
        drip[i] = ah_connect();
        ah_send(drip[i], "GET /healthz HTTP/1.0\r\nX-Slow: a");
    }
    for (int i = 0; i < AH_DRIPPERS; i++)
        ah_send(drip[i], "a"); /* one more byte each, as an attacker keeping them alive would */
    uint64_t t0 = mono_now_ns();
    struct ah_resp r = ah_call("GET", "/healthz", NULL, NULL);
    uint64_t took = mono_now_ns() - t0;
    cr_assert_eq(r.status, 200, "/healthz under %d dripping connections: %s", AH_DRIPPERS,
                 r.raw.p ? r.raw.p : "(refused)");
    ah_free(&r);
    cr_log_info("/healthz under %d dripping connections: %.2f ms", AH_DRIPPERS, (double)took / 1e6);
    cr_assert_lt(took, 500000000u, "%llu ns", (unsigned long long)took);
    struct agent_http_stats st;
    agent_http_stats(ah_srv, &st);
    /* 2 followers and up to 14 drippers in the address's 16 places: the rest were pushed out */
    cr_assert_geq(st.evicted, AH_DRIPPERS + 1 - 14, "%llu", (unsigned long long)st.evicted);
    cr_assert_eq(st.over_address + st.over_limit, 0);
    /* the followers are still served */
    agent_log_append(ah_log, AGENT_LINE_EVENT, "after", 5);
    for (int i = 0; i < 2; i++)
        ah_recv_until(follower[i], &fb[i], "after\n");
    /* every dripper is closed: pushed out, or cut at the deadline */
    for (int i = 0; i < AH_DRIPPERS; i++)
        cr_assert(ah_closed_within(drip[i], 3000), "dripper %d still open", i);
    agent_http_stats(ah_srv, &st);
    cr_assert_geq(st.timed_out, 1);
    cr_assert_eq(st.evicted + st.timed_out, AH_DRIPPERS + 1 - 1, "evicted %llu, timed out %llu",
                 (unsigned long long)st.evicted, (unsigned long long)st.timed_out);
    for (int i = 0; i < AH_DRIPPERS; i++)
        close(drip[i]);
    for (int i = 0; i < 2; i++) {
        close(follower[i]);
        free(fb[i].p);
    }
}

/* Followers from one host hold at most its share but one (here 1 of 2): the next follower from
 * it is answered 429, and its /healthz is answered in the place kept. (Before, two followers
 * filled the share and the host's next connection was refused without an answer.) */
Test(agent_http, followers_never_take_an_address_s_last_place) {
    struct agent_http_conf c = ah_conf();
    c.per_address = 2;
    ah_start(&c);
    int fd;
    struct ah_buf b = {0};
    ah_follow(&fd, &b);
    struct ah_resp r = ah_call("GET", "/events", NULL, NULL);
    cr_assert_eq(r.status, 429, "%s", r.raw.p ? r.raw.p : "");
    cr_assert(strstr(r.body, "127.0.0.1 holds its 1 follower places"), "%s", r.body);
    ah_free(&r);
    r = ah_call("GET", "/healthz", NULL, NULL);
    cr_assert_eq(r.status, 200, "%s", r.raw.p ? r.raw.p : "");
    ah_free(&r);
    struct agent_http_stats st;
    agent_http_stats(ah_srv, &st);
    cr_assert_eq(st.over_follower_address, 1);
    cr_assert_eq(st.over_address, 0); /* (the refused one, closing, may have been pushed out) */
    close(fd);
    free(b.p);
}

/* ---- HTTPS ---- */

/* The fixture tls/NAME copied to the test's directory as AS, with mode (git keeps none); its
 * path in out. */
static void ah_tls_file(const char *name, const char *as, mode_t mode, char *out, size_t n) {
    char src[1024], text[4096];
    rs_test_fixture(name, src, sizeof(src));
    FILE *f = fopen(src, "r");
    cr_assert_not_null(f, "%s: %s", src, strerror(errno));
    size_t len = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[len] = '\0';
    char path[1024];
    cr_assert_eq(rs_test_write_file(ah_dir, as, text, path, sizeof(path)), 0);
    cr_assert_eq(chmod(path, mode), 0);
    snprintf(out, n, "%s", path);
}

/* The fixture pair, loaded into ah_tls (the key kept 0600, as it should be). */
static void ah_tls_load(void) {
    char cert[1024], key[1024], err[512] = "";
    ah_tls_file("tls/cert.pem", "cert.pem", 0644, cert, sizeof(cert));
    ah_tls_file("tls/key.pem", "key.pem", 0600, key, sizeof(key));
    cr_assert_eq(agent_tls_load(&ah_tls, cert, key, err, sizeof(err)), 0, "%s", err);
    cr_assert_not_null(ah_tls.cert_pem);
    cr_assert_not_null(ah_tls.key_pem);
}

/* One request over TLS on a new connection, the server's certificate checked as a client
 * checks it: signed by the fixture (the validity dates left out: see tests/fixtures/tls), made
 * out to 127.0.0.1. The whole response (HTTP/1.0: the server closes). */
static struct ah_resp ah_tls_req(const char *request) {
    char ca[1024];
    rs_test_fixture("tls/cert.pem", ca, sizeof(ca));
    gnutls_certificate_credentials_t cred;
    gnutls_session_t ses;
    cr_assert_eq(gnutls_certificate_allocate_credentials(&cred), 0);
    cr_assert_eq(gnutls_certificate_set_x509_trust_file(cred, ca, GNUTLS_X509_FMT_PEM), 1);
    gnutls_certificate_set_verify_flags(cred, GNUTLS_VERIFY_DISABLE_TIME_CHECKS |
                                                  GNUTLS_VERIFY_DISABLE_TRUSTED_TIME_CHECKS);
    cr_assert_eq(gnutls_init(&ses, GNUTLS_CLIENT), 0);
    cr_assert_eq(gnutls_set_default_priority(ses), 0);
    cr_assert_eq(gnutls_credentials_set(ses, GNUTLS_CRD_CERTIFICATE, cred), 0);
    gnutls_session_set_verify_cert(ses, "127.0.0.1", 0);
    int fd = ah_connect();
    gnutls_transport_set_int(ses, fd);
    int rc;
    while ((rc = gnutls_handshake(ses)) == GNUTLS_E_INTERRUPTED)
        ;
    cr_assert_eq(rc, 0, "handshake: %s", gnutls_strerror(rc));
    size_t off = 0, n = strlen(request);
    while (off < n) {
        ssize_t w = gnutls_record_send(ses, request + off, n - off);
        cr_assert_gt(w, 0, "send: %s", gnutls_strerror((int)w));
        off += (size_t)w;
    }
    struct ah_resp r;
    memset(&r, 0, sizeof(r));
    struct ah_buf *b = &r.raw;
    for (;;) {
        if (b->cap - b->len < 4097) {
            b->cap = b->cap ? b->cap * 2 : 8192;
            b->p = realloc(b->p, b->cap);
            cr_assert_not_null(b->p);
        }
        ssize_t got = gnutls_record_recv(ses, b->p + b->len, b->cap - b->len - 1);
        if (got == GNUTLS_E_INTERRUPTED)
            continue;
        /* the end: a close_notify, or the server closing after the answer without one */
        if (got == 0 || got == GNUTLS_E_PREMATURE_TERMINATION)
            break;
        cr_assert_gt(got, 0, "recv: %s", gnutls_strerror((int)got));
        b->len += (size_t)got;
        b->p[b->len] = '\0';
    }
    gnutls_deinit(ses);
    gnutls_certificate_free_credentials(cred);
    close(fd);
    ah_parse(&r);
    return r;
}

/* With TLS the TCP listener answers over TLS only: a request in plain HTTP gets no HTTP
 * answer (the handshake fails and the connection closes). A UNIX socket stays plain. */
Test(agent_http, with_tls_the_port_speaks_https_only) {
    ah_tls_load();
    struct agent_http_conf c = ah_conf();
    c.tls = &ah_tls;
    ah_sock_path(&c);
    ah_start(&c);
    struct ah_resp r = ah_tls_req("GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    cr_assert_eq(r.status, 200, "%s", r.raw.p ? r.raw.p : "");
    cr_assert_str_eq(r.body, "ok\n");
    cr_assert_str_eq(ah_header(&r, "Content-Type"), "text/plain; charset=utf-8");
    ah_free(&r);
    r = ah_req("GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    cr_assert_eq(r.status, 0, "a plain request answered: %s", r.raw.p ? r.raw.p : "");
    cr_assert(!r.raw.p || !strstr(r.raw.p, "HTTP/1."), "%s", r.raw.p);
    ah_free(&r);
    struct agent_http_stats st;
    agent_http_stats(ah_srv, &st);
    cr_assert_eq(st.requests, 1, "only the request over TLS was answered");
    r = ah_on(ah_connect_unix(c.unix_path), "GET /healthz HTTP/1.0\r\n\r\n");
    cr_assert_eq(r.status, 200, "the UNIX socket in plain HTTP");
    ah_free(&r);
}

/* The token works over HTTPS as over HTTP, and /events streams through TLS. */
Test(agent_http, with_tls_and_a_token_events_need_the_token) {
    ah_fill_log();
    ah_tls_load();
    struct agent_http_conf c = ah_conf();
    c.tls = &ah_tls;
    snprintf(c.token, sizeof(c.token), AH_TOKEN);
    ah_start(&c);
    struct ah_resp r = ah_tls_req("GET /events?follow=0 HTTP/1.0\r\n\r\n");
    cr_assert_eq(r.status, 401);
    ah_free(&r);
    r = ah_tls_req("GET /events?follow=0 HTTP/1.0\r\nAuthorization: Bearer " AH_TOKEN "\r\n\r\n");
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(r.body, "{\"type\":\"run\"}\ne1\ns1\ne2\ne3\n");
    ah_free(&r);
}

struct ah_tls_try {
    int rc;
    char err[512];
    bool loaded; /* anything left in the struct */
};

static void ah_tls_try(const char *cert, const char *key, struct ah_tls_try *out) {
    struct agent_tls t;
    memset(&t, 0x5a, sizeof(t));
    out->err[0] = '\0';
    out->rc = agent_tls_load(&t, cert, key, out->err, sizeof(out->err));
    out->loaded = t.cert_pem || t.key_pem || t.cert_len || t.key_len;
    agent_tls_fini(&t);
}

static void ah_tls_try_fn(void *ctx, void *out) {
    const char *const *paths = ctx;
    ah_tls_try(paths[0], paths[1], out);
}

/* Each bad file is refused in one line that names its option and its path and says why, and
 * nothing is left loaded. */
Test(agent_http, bad_tls_files_are_refused_naming_the_file) {
    char cert[1024], key[1024], other[1024], enc[1024], fifo[1024], none[1024], empty[1024],
        junk[1024];
    /* every file 0600: some are tried as keys, and a key's mode is warned of (test_agent_cli) */
    ah_tls_file("tls/cert.pem", "cert.pem", 0600, cert, sizeof(cert));
    ah_tls_file("tls/key.pem", "key.pem", 0600, key, sizeof(key));
    ah_tls_file("tls/other-key.pem", "other-key.pem", 0600, other, sizeof(other));
    ah_tls_file("tls/encrypted-key.pem", "encrypted-key.pem", 0600, enc, sizeof(enc));
    snprintf(fifo, sizeof(fifo), "%s/fifo.pem", ah_dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    snprintf(none, sizeof(none), "%s/none.pem", ah_dir);
    cr_assert_eq(rs_test_write_file(ah_dir, "empty.pem", "", empty, sizeof(empty)), 0);
    cr_assert_eq(rs_test_write_file(ah_dir, "junk.pem", "not a certificate\n", junk, sizeof(junk)),
                 0);
    cr_assert_eq(chmod(empty, 0600) | chmod(junk, 0600), 0);
    const struct {
        const char *cert, *key;
        int rc;
        const char *flag, *file, *why;
    } cases[] = {
        {none, key, -ENOENT, "--tls-cert", none, "No such file"},
        {cert, none, -ENOENT, "--tls-key", none, "No such file"},
        {ah_dir, key, -EINVAL, "--tls-cert", ah_dir, "not a regular file"},
        {cert, fifo, -EINVAL, "--tls-key", fifo, "not a regular file"},
        {empty, key, -ENODATA, "--tls-cert", empty, "empty"},
        {cert, empty, -ENODATA, "--tls-key", empty, "empty"},
        {junk, key, -EINVAL, "--tls-cert", junk, "no PEM certificate"},
        {key, key, -EINVAL, "--tls-cert", key, "no PEM certificate"},
        {cert, junk, -EINVAL, "--tls-key", junk, "no PEM private key"},
        {cert, cert, -EINVAL, "--tls-key", cert, "no PEM private key"},
        {cert, enc, -EINVAL, "--tls-key", enc, "encrypted"},
        {cert, other, -EINVAL, "--tls-key", other, "not the key of the certificate"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct ah_tls_try t;
        ah_tls_try(cases[k].cert, cases[k].key, &t);
        cr_assert_eq(t.rc, cases[k].rc, "case %zu: %d: %s", k, t.rc, t.err);
        char want[1200];
        snprintf(want, sizeof(want), "%s %s: ", cases[k].flag, cases[k].file);
        cr_assert_eq(strncmp(t.err, want, strlen(want)), 0, "case %zu: %s", k, t.err);
        cr_assert(strstr(t.err, cases[k].why), "case %zu: %s", k, t.err);
        cr_assert_null(strchr(t.err, '\n'), "one line: %s", t.err);
        cr_assert_not(t.loaded, "case %zu: left loaded", k);
    }
    /* the pair itself loads */
    struct ah_tls_try t;
    ah_tls_try(cert, key, &t);
    cr_assert_eq(t.rc, 0, "%s", t.err);
    /* a key its reader may not read (root reads any file: tried as nobody) */
    struct ah_tls_try u;
    cr_assert_eq(chmod(ah_dir, 0755), 0); /* nobody may pass through to the files */
    cr_assert_eq(chmod(cert, 0644), 0);   /* and read the certificate */
    if (geteuid() == 0) {
        const char *paths[] = {cert, key};
        cr_assert_eq(rs_test_as_nobody(ah_tls_try_fn, paths, &u, sizeof(u)), 0);
    } else {
        cr_assert_eq(chmod(key, 0), 0);
        ah_tls_try(cert, key, &u);
    }
    cr_assert_eq(u.rc, -EACCES, "%d: %s", u.rc, u.err);
    cr_assert(strstr(u.err, "--tls-key ") && strstr(u.err, "Permission denied"), "%s", u.err);
}

/* ---- listeners ---- */

Test(agent_http, a_unix_socket_serves_and_is_removed_at_stop) {
    struct agent_http_conf c = ah_conf();
    c.listen[0] = '\0';
    ah_sock_path(&c);
    ah_start(&c);
    cr_assert_eq(agent_http_port(ah_srv), 0);
    struct stat st;
    cr_assert_eq(lstat(c.unix_path, &st), 0);
    cr_assert(S_ISSOCK(st.st_mode));
    cr_assert_eq(st.st_mode & 0777, 0660);
    struct ah_resp r = ah_on(ah_connect_unix(c.unix_path), "GET /healthz HTTP/1.0\r\n\r\n");
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(r.body, "ok\n");
    ah_free(&r);
    agent_http_stop(ah_srv);
    ah_srv = NULL;
    cr_assert_neq(lstat(c.unix_path, &st), 0, "removed at stop");
}

/* The names in dir other than keep (and . and ..). */
static unsigned ah_dir_others(const char *dir, const char *keep) {
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    unsigned n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
             strcmp(e->d_name, keep) != 0;
    closedir(d);
    return n;
}

/* The socket never exists with a mode wider than 0660, whatever the umask: it is bound in a
 * private directory, given its mode there and linked into place, so its directory sees it
 * created once and never changed (a chmod after the bind, as before, shows as IN_ATTRIB on it;
 * inotify queues events as the calls make them), and nothing else is left there. */
Test(agent_http, a_unix_socket_never_has_a_wider_mode) {
    struct agent_http_conf c = ah_conf();
    c.listen[0] = '\0';
    ah_sock_path(&c);
    int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    cr_assert_geq(in, 0);
    cr_assert_geq(inotify_add_watch(in, ah_dir, IN_CREATE | IN_ATTRIB | IN_MOVED_TO), 0);
    mode_t old = umask(0); /* bind() alone would make it 0777 */
    ah_start(&c);
    umask(old);
    struct stat st;
    cr_assert_eq(lstat(c.unix_path, &st), 0);
    cr_assert(S_ISSOCK(st.st_mode));
    cr_assert_eq(st.st_mode & 07777, 0660, "mode %o", (unsigned)(st.st_mode & 07777));
    static char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    unsigned created = 0, changed = 0;
    for (ssize_t n; (n = read(in, buf, sizeof(buf))) > 0;)
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)(void *)p;
            if (ev->len && strcmp(ev->name, "agent.sock") == 0) {
                created += (ev->mask & (IN_CREATE | IN_MOVED_TO)) != 0;
                changed += (ev->mask & IN_ATTRIB) != 0;
            }
            p += sizeof(*ev) + ev->len;
        }
    close(in);
    cr_assert_eq(created, 1);
    cr_assert_eq(changed, 0, "its mode was changed after it appeared");
    cr_assert_eq(ah_dir_others(ah_dir, "agent.sock"), 0, "the private directory is gone");
    struct ah_resp r = ah_on(ah_connect_unix(c.unix_path), "GET /healthz HTTP/1.0\r\n\r\n");
    cr_assert_eq(r.status, 200);
    ah_free(&r);
}

/* The helper on its own: what is at the path is never replaced (and nothing is left beside
 * it), a path whose private directory would not fit a socket address is refused in one line. */
Test(agent_http, the_unix_socket_helper_refuses_in_one_line) {
    char path[1024], err[1200] = "";
    struct stat st;
    int fd = -1;
    cr_assert_eq(rs_test_write_file(ah_dir, "taken", "data", path, sizeof(path)), 0);
    cr_assert_eq(http_unix_listen(path, 0660, 4, &fd, &st, err, sizeof(err)), -EEXIST);
    cr_assert(strstr(err, "appeared there meanwhile (not replacing it)"), "%s", err);
    cr_assert_eq(ah_dir_others(ah_dir, "taken"), 0);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert(S_ISREG(st.st_mode));
    /* DIR/a in 98 bytes: a socket address would take it, DIR/.rs-XXXXXX/s would not */
    char dir[600];
    int n = snprintf(dir, sizeof(dir), "%s/", ah_dir);
    cr_assert_lt(n, 90);
    memset(dir + n, 'd', 96 - (size_t)n);
    dir[96] = '\0';
    cr_assert_eq(mkdir(dir, 0700), 0, "%s", strerror(errno));
    snprintf(path, sizeof(path), "%s/a", dir);
    cr_assert_eq(http_unix_listen(path, 0660, 4, &fd, &st, err, sizeof(err)), -ENAMETOOLONG);
    cr_assert(strstr(err, "private directory beside it"), "%s", err);
    cr_assert_null(strchr(err, '\n'));
    cr_assert_eq(ah_dir_others(dir, "none"), 0);
    cr_assert_eq(rmdir(dir), 0);
    snprintf(path, sizeof(path), "%s/ok.sock", ah_dir);
    cr_assert_eq(http_unix_listen(path, 0600, 4, &fd, &st, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(st.st_mode & 07777, 0600);
    struct stat now;
    cr_assert_eq(lstat(path, &now), 0);
    cr_assert_eq(now.st_ino, st.st_ino, "the socket bound is the one at the path");
    close(fd);
}

Test(agent_http, a_unix_socket_replaces_a_stale_one_but_nothing_else) {
    struct agent_http_conf c = ah_conf();
    c.listen[0] = '\0';
    ah_sock_path(&c);
    /* a stale socket: bound, never listened on, closed */
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c.unix_path);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(fd);
    ah_start(&c);
    /* a second agent on the same path: someone is listening there */
    struct agent_http_handlers h = ah_handlers();
    struct agent_http *other = NULL;
    char err[512] = "";
    cr_assert_eq(agent_http_start(&other, &c, &h, err, sizeof(err)), -EADDRINUSE);
    cr_assert(strstr(err, "another process is listening"), "%s", err);
    agent_http_stop(ah_srv);
    ah_srv = NULL;
    /* a regular file is never replaced */
    char path[1024];
    cr_assert_eq(rs_test_write_file(ah_dir, "agent.sock", "data", path, sizeof(path)), 0);
    cr_assert_eq(agent_http_start(&other, &c, &h, err, sizeof(err)), -EEXIST);
    cr_assert(strstr(err, "not a socket"), "%s", err);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert(S_ISREG(st.st_mode));
}

Test(agent_http, both_listeners_at_once) {
    struct agent_http_conf c = ah_conf();
    ah_sock_path(&c);
    ah_start(&c);
    struct ah_resp r = ah_on(ah_connect_unix(c.unix_path), "GET /metrics HTTP/1.0\r\n\r\n");
    cr_assert_eq(r.status, 200);
    ah_free(&r);
    r = ah_call("GET", "/metrics", NULL, NULL);
    cr_assert_eq(r.status, 200);
    ah_free(&r);
}

Test(agent_http, a_port_in_use_is_a_clear_error) {
    struct agent_http_conf c = ah_conf();
    ah_start(&c);
    snprintf(c.listen, sizeof(c.listen), "127.0.0.1:%u", agent_http_port(ah_srv));
    struct agent_http_handlers h = ah_handlers();
    struct agent_http *other = NULL;
    char err[256] = "", want[128];
    cr_assert_eq(agent_http_start(&other, &c, &h, err, sizeof(err)), -EADDRINUSE);
    int n = snprintf(want, sizeof(want), "cannot listen on %s: Address already in use", c.listen);
    cr_assert_lt((size_t)n, sizeof(want));
    cr_assert_str_eq(err, want);
    cr_assert_null(other);
}

Test(agent_http, ipv6_loopback) {
    struct agent_http_conf c = ah_conf();
    snprintf(c.listen, sizeof(c.listen), "[::1]:0");
    struct agent_http_handlers h = ah_handlers();
    char err[256] = "";
    int rc = agent_http_start(&ah_srv, &c, &h, err, sizeof(err));
    if (rc == -EAFNOSUPPORT || rc == -EADDRNOTAVAIL)
        cr_skip_test("no IPv6 here: %s", err);
    cr_assert_eq(rc, 0, "%s", err);
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons(agent_http_port(ah_srv))};
    sa.sin6_addr = in6addr_loopback;
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ah_timeouts(fd);
    struct ah_resp r = ah_on(fd, "GET /healthz HTTP/1.0\r\n\r\n");
    cr_assert_eq(r.status, 200);
    ah_free(&r);
}

Test(agent_http, listen_addresses_parse) {
    char addr[64], why[256];
    unsigned port = 1;
    cr_assert_eq(
        agent_http_parse_listen("127.0.0.1:9464", addr, sizeof(addr), &port, why, sizeof(why)), 0);
    cr_assert_str_eq(addr, "127.0.0.1");
    cr_assert_eq(port, 9464);
    cr_assert_eq(agent_http_parse_listen("0.0.0.0:0", addr, sizeof(addr), &port, why, sizeof(why)),
                 0);
    cr_assert_str_eq(addr, "0.0.0.0");
    cr_assert_eq(port, 0);
    cr_assert_eq(
        agent_http_parse_listen("[::1]:65535", addr, sizeof(addr), &port, why, sizeof(why)), 0);
    cr_assert_str_eq(addr, "::1");
    cr_assert_eq(port, 65535);
    cr_assert_eq(
        agent_http_parse_listen("localhost:80", addr, sizeof(addr), &port, why, sizeof(why)), 0);
    cr_assert_str_eq(addr, "127.0.0.1");
    const struct {
        const char *s, *why;
    } bad[] = {{"", "no listen address"},
               {"9464", "no port"},
               {":9464", "no address"},
               {"127.0.0.1:", "port ''"},
               {"127.0.0.1:65536", "port '65536'"},
               {"127.0.0.1:94a", "port '94a'"},
               {"127.0.0.1:-1", "port '-1'"},
               {"1.2.3:80", "not an IPv4 address"},
               {"example.com:80", "not an IPv4 address"},
               {"::1:9464", "in brackets"},
               {"[::1:9464", "no ']'"},
               {"[::1]9464", "no :PORT"},
               {"[1.2.3.4]:80", "not an IPv6 address"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = '\0';
        cr_assert_eq(agent_http_parse_listen(bad[i].s, addr, sizeof(addr), &port, why, sizeof(why)),
                     -EINVAL, "%s", bad[i].s);
        cr_assert(strstr(why, bad[i].why), "'%s': %s", bad[i].s, why);
    }
    struct agent_http_conf c = ah_conf();
    snprintf(c.listen, sizeof(c.listen), "nowhere:1");
    struct agent_http_handlers h = ah_handlers();
    char err[256] = "";
    cr_assert_eq(agent_http_start(&ah_srv, &c, &h, err, sizeof(err)), -EINVAL);
    cr_assert(strstr(err, "'nowhere:1'"), "%s", err);
}

Test(agent_http, defaults) {
    struct agent_http_conf c;
    memset(&c, 0x5a, sizeof(c));
    agent_http_conf_default(&c);
    cr_assert_str_eq(c.listen, AGENT_HTTP_DEFAULT_LISTEN);
    cr_assert_str_eq(c.unix_path, "");
    cr_assert_str_eq(c.token, "");
    cr_assert_not(c.allow_control);
    cr_assert_eq(c.max_connections, 256);
    cr_assert_eq(c.max_request_bytes, 8192);
    cr_assert_eq(c.idle_timeout_s, 30);
    cr_assert_eq(c.per_address, 64);
    cr_assert_eq(c.request_timeout_ms, 10000);
    cr_assert_eq(c.max_followers, 0, "a quarter of max_connections");
    cr_assert_eq(c.followers_per_address, 0, "8");
    cr_assert_eq(c.auth_failures, 0, "10");
    cr_assert_null(c.tls);
    agent_http_stop(NULL);
}
