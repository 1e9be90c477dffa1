/* What the agent's HTTP server refuses, and how: /events followers beyond their places (in all
 * and per address group) while /healthz and /metrics go on answering, token guesses held off
 * per address group, and requests of a bad form (two Host headers, a Host with userinfo, a
 * query of too many arguments, a path with %00), each with its status and one log line at most
 * per period. Then the pieces on their own, with the time given: the address groups (IPv6 by
 * /64), the guard's per-address limit over them, the follower places, the token backoff, the
 * rate-limited line, the readers of the target and the Host header. */
#include "tests/support/rs_test.h"
#include "tui/agent/agent_http.h"
#include "tui/agent/agent_http_parse.h"
#include "tui/agent/http_addr.h"
#include "tui/agent/http_guard.h"
#include "tui/agent/http_quota.h"
#include "tui/agent/http_ratelog.h"
#include "tui/agent/http_throttle.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define AR_TOKEN   "refusals-t0ken-of-this-test"
#define AR_TIMEOUT 10 /* seconds, for every socket read */
#define AR_S       1000000000ull

static struct agent_log *ar_log;
static struct agent_http *ar_srv;

/* The lines the server writes (handlers.say). */
static pthread_mutex_t ar_mu = PTHREAD_MUTEX_INITIALIZER;
static char ar_lines[64][512];
static unsigned ar_nlines;

static void ar_say(void *ctx, const char *line) {
    (void)ctx;
    pthread_mutex_lock(&ar_mu);
    if (ar_nlines < 64)
        snprintf(ar_lines[ar_nlines], sizeof(ar_lines[0]), "%s", line);
    ar_nlines++;
    pthread_mutex_unlock(&ar_mu);
}

/* The lines said so far that hold needle. */
static unsigned ar_said(const char *needle) {
    unsigned n = 0;
    pthread_mutex_lock(&ar_mu);
    for (unsigned k = 0; k < ar_nlines && k < 64; k++) {
        n += strstr(ar_lines[k], needle) != NULL;
        cr_assert_null(strchr(ar_lines[k], '\n'), "one line: %s", ar_lines[k]);
    }
    pthread_mutex_unlock(&ar_mu);
    return n;
}

static int ar_metrics(void *ctx, bool openmetrics, char **out, size_t *len) {
    (void)ctx;
    (void)openmetrics;
    *out = strdup("ringside_up 1\n");
    *len = strlen(*out);
    return 0;
}

static void ar_init(void) {
    ar_nlines = 0;
    cr_assert_eq(agent_log_create(&ar_log, 100, 1 << 20), 0);
    cr_assert_eq(agent_log_set_run(ar_log, "{\"type\":\"run\"}"), 0);
}

static void ar_fini(void) {
    if (ar_log)
        agent_log_close(ar_log);
    agent_http_stop(ar_srv);
    ar_srv = NULL;
    agent_log_destroy(ar_log);
    ar_log = NULL;
}

TestSuite(agent_refusals, .init = ar_init, .fini = ar_fini, .timeout = 120);

/* Start on listen (127.0.0.1:0 when NULL) with c's limits; false when the address cannot be
 * had here (no IPv6). */
static bool ar_start(struct agent_http_conf *c, const char *listen) {
    snprintf(c->listen, sizeof(c->listen), "%s", listen ? listen : "127.0.0.1:0");
    struct agent_http_handlers h = {.metrics = ar_metrics, .say = ar_say, .log = ar_log};
    char err[256] = "";
    int rc = agent_http_start(&ar_srv, c, &h, err, sizeof(err));
    if (listen && (rc == -EAFNOSUPPORT || rc == -EADDRNOTAVAIL))
        return false;
    cr_assert_eq(rc, 0, "%s", err);
    return true;
}

static struct agent_http_stats ar_stats(void) {
    struct agent_http_stats st;
    agent_http_stats(ar_srv, &st);
    return st;
}

/* ---- a small client ---- */

/* A connection to the server from the address from ("127.0.0.3", "::1"). */
static int ar_connect(const char *from) {
    bool v6 = strchr(from, ':') != NULL;
    int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(fd, 0);
    struct timeval tv = {AR_TIMEOUT, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    struct sockaddr_storage me, to;
    memset(&me, 0, sizeof(me));
    memset(&to, 0, sizeof(to));
    socklen_t len;
    uint16_t port = htons((uint16_t)agent_http_port(ar_srv));
    if (v6) {
        struct sockaddr_in6 *m = (struct sockaddr_in6 *)&me, *t = (struct sockaddr_in6 *)&to;
        m->sin6_family = t->sin6_family = AF_INET6;
        cr_assert_eq(inet_pton(AF_INET6, from, &m->sin6_addr), 1);
        t->sin6_addr = in6addr_loopback;
        t->sin6_port = port;
        len = sizeof(*m);
    } else {
        struct sockaddr_in *m = (struct sockaddr_in *)&me, *t = (struct sockaddr_in *)&to;
        m->sin_family = t->sin_family = AF_INET;
        cr_assert_eq(inet_pton(AF_INET, from, &m->sin_addr), 1);
        t->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        t->sin_port = port;
        len = sizeof(*m);
    }
    cr_assert_eq(bind(fd, (struct sockaddr *)&me, len), 0, "bind %s: %s", from, strerror(errno));
    cr_assert_eq(connect(fd, (struct sockaddr *)&to, len), 0, "%s", strerror(errno));
    return fd;
}

static void ar_send(int fd, const char *text) {
    size_t n = strlen(text), off = 0;
    while (off < n) {
        ssize_t w = send(fd, text + off, n - off, MSG_NOSIGNAL);
        if (w <= 0)
            return; /* refused: the answer (or its absence) says so */
        off += (size_t)w;
    }
}

struct ar_resp {
    int status; /* 0: none (closed without an answer) */
    char text[16384];
    size_t len;
    bool eof;
};

/* Read into r until needle has come (true) or the end (false). */
static bool ar_recv_until(int fd, struct ar_resp *r, const char *needle) {
    while (!strstr(r->text, needle)) {
        if (r->len + 1 >= sizeof(r->text))
            return false;
        ssize_t n = recv(fd, r->text + r->len, sizeof(r->text) - r->len - 1, 0);
        if (n <= 0) {
            cr_assert(n == 0 || errno == ECONNRESET, "recv: %s", strerror(errno));
            r->eof = true;
            return false;
        }
        r->len += (size_t)n;
        r->text[r->len] = '\0';
    }
    return true;
}

static void ar_status(struct ar_resp *r) {
    r->status = strncmp(r->text, "HTTP/1.", 7) == 0 ? atoi(r->text + 9) : 0;
}

/* The value of header name in r (a static buffer), or NULL. */
static const char *ar_header(const struct ar_resp *r, const char *name) {
    static char v[256];
    size_t n = strlen(name);
    const char *end = strstr(r->text, "\r\n\r\n");
    for (const char *l = strstr(r->text, "\r\n"); l && (!end || l < end); l = strstr(l + 2, "\r\n"))
        if (strncasecmp(l + 2, name, n) == 0 && l[2 + n] == ':') {
            const char *s = l + 3 + n + strspn(l + 3 + n, " ");
            snprintf(v, sizeof(v), "%.*s", (int)strcspn(s, "\r\n"), s);
            return v;
        }
    return NULL;
}

/* One request from from on a new connection, the whole answer (HTTP/1.0: the server closes). */
static struct ar_resp *ar_req(const char *from, const char *request) {
    static struct ar_resp r;
    memset(&r, 0, sizeof(r));
    int fd = ar_connect(from);
    ar_send(fd, request);
    while (ar_recv_until(fd, &r, "\x01never"))
        ;
    close(fd);
    ar_status(&r);
    return &r;
}

/* GET path from from with the token (NULL: none): the status. */
static int ar_get(const char *from, const char *path, const char *token) {
    char req[512];
    snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n%s%s%s\r\n", path,
             token ? "Authorization: Bearer " : "", token ? token : "", token ? "\r\n" : "");
    return ar_req(from, req)->status;
}

/* ---- followers cannot lock out short requests ---- */

#define AR_FOLLOWERS 256
#define AR_PROBES    100

struct ar_flood {
    int fd[AR_FOLLOWERS];
    unsigned followers, refused_429, refused_503, unanswered;
};

/* AR_FOLLOWERS requests for /events from the addresses from[] in turn: those answered 200 stay
 * open (past the run line); the others must be refused 429 or 503, with Retry-After, and closed
 * by the server. */
static void ar_flood(struct ar_flood *f, const char *const *from, unsigned nfrom) {
    memset(f, 0, sizeof(*f));
    for (unsigned k = 0; k < AR_FOLLOWERS; k++) {
        struct ar_resp *r = calloc(1, sizeof(*r));
        cr_assert_not_null(r);
        f->fd[k] = ar_connect(from[k % nfrom]);
        ar_send(f->fd[k], "GET /events HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
        ar_recv_until(f->fd[k], r, "\r\n\r\n");
        ar_status(r);
        if (r->status == 200) {
            cr_assert(ar_recv_until(f->fd[k], r, "{\"type\":\"run\"}\n"), "%s", r->text);
            f->followers++;
        } else if (r->status == 429 || r->status == 503) {
            const char *retry = ar_header(r, "Retry-After");
            cr_assert(retry && atoi(retry) > 0, "no Retry-After: %s", r->text);
            while (ar_recv_until(f->fd[k], r, "\x01never"))
                ;
            cr_assert(r->eof, "a refused follower's connection is closed");
            cr_assert(strstr(r->text, "/events refused"), "%s", r->text);
            f->refused_429 += r->status == 429;
            f->refused_503 += r->status == 503;
            close(f->fd[k]);
            f->fd[k] = -1;
        } else {
            f->unanswered++;
            close(f->fd[k]);
            f->fd[k] = -1;
        }
        free(r);
    }
}

static void ar_flood_end(struct ar_flood *f) {
    for (unsigned k = 0; k < AR_FOLLOWERS; k++)
        if (f->fd[k] >= 0)
            close(f->fd[k]);
}

/* AR_PROBES of /healthz and as many of /metrics from each of from[]: how many answered 200. */
static unsigned ar_probe(const char *const *from, unsigned nfrom) {
    unsigned ok = 0;
    for (unsigned k = 0; k < AR_PROBES; k++)
        for (unsigned a = 0; a < nfrom; a++) {
            ok += ar_get(from[a], "/healthz", NULL) == 200;
            ok += ar_get(from[a], "/metrics", NULL) == 200;
        }
    return ok;
}

/* The defaults (loopback, no token, 256 connections): 256 followers from 127.0.0.2-6 get 8
 * places each (40 in all); the rest are answered 429 and closed, and every probe of /healthz
 * and /metrics, from 127.0.0.1 and from a flooding address, answers 200. Without the follower
 * places the 256 streams held every connection and each probe was refused. */
Test(agent_refusals, followers_from_five_loopback_addresses_leave_probes_answered) {
    struct agent_http_conf c;
    agent_http_conf_default(&c);
    ar_start(&c, NULL);
    static const char *const from[] = {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5",
                                       "127.0.0.6"};
    static struct ar_flood f;
    ar_flood(&f, from, 5);
    cr_assert_eq(f.followers, 5 * 8, "%u followers", f.followers);
    cr_assert_eq(f.refused_429, AR_FOLLOWERS - 5 * 8);
    cr_assert_eq(f.refused_503 + f.unanswered, 0);
    static const char *const probes[] = {"127.0.0.1", "127.0.0.2"};
    unsigned ok = ar_probe(probes, 2);
    cr_log_info("%u followers asked from 5 loopback addresses: %u held, %u refused 429; probes "
                "answered 200: %u of %u",
                AR_FOLLOWERS, f.followers, f.refused_429, ok, 4 * AR_PROBES);
    cr_assert_eq(ok, 4 * AR_PROBES, "%u of %u probes answered 200", ok, 4 * AR_PROBES);
    struct agent_http_stats st = ar_stats();
    cr_assert_eq(st.followers, 5 * 8);
    cr_assert_eq(st.over_follower_address, AR_FOLLOWERS - 5 * 8);
    cr_assert_eq(st.over_followers + st.over_limit + st.over_address, 0);
    cr_assert_geq(ar_said("refused an /events follower from 127.0.0."), 1);
    cr_assert_leq(ar_nlines, 2, "%u lines: at most one per 10 s", ar_nlines);
    /* the followers are still served */
    agent_log_append(ar_log, AGENT_LINE_EVENT, "after", 5);
    for (unsigned k = 0; k < AR_FOLLOWERS; k++)
        if (f.fd[k] >= 0) {
            struct ar_resp r = {0};
            cr_assert(ar_recv_until(f.fd[k], &r, "after\n"), "follower %u", k);
        }
    ar_flood_end(&f);
}

/* The same from one IPv6 /64 (::1: one address, as a /64 test needs a routable prefix; the
 * grouping itself is tested on http_addr_group below): 8 followers, 248 refused, every probe
 * from ::1 answered. Without the places the address's 64 connections were all followers and its
 * probes were refused. */
Test(agent_refusals, followers_from_one_ipv6_address_leave_probes_answered) {
    struct agent_http_conf c;
    agent_http_conf_default(&c);
    if (!ar_start(&c, "[::1]:0"))
        cr_skip_test("no IPv6 loopback here");
    static const char *const from[] = {"::1"};
    static struct ar_flood f;
    ar_flood(&f, from, 1);
    cr_assert_eq(f.followers, 8);
    cr_assert_eq(f.refused_429, AR_FOLLOWERS - 8);
    cr_assert_eq(f.refused_503 + f.unanswered, 0);
    unsigned ok = ar_probe(from, 1);
    cr_log_info("%u followers asked from ::1: %u held; probes answered 200: %u of %u", AR_FOLLOWERS,
                f.followers, ok, 2 * AR_PROBES);
    cr_assert_eq(ok, 2 * AR_PROBES);
    cr_assert_geq(ar_said("from ::/64"), 1);
    ar_flood_end(&f);
}

/* Beyond --max-followers (from addresses each under its share) a follower is answered 503 with
 * Retry-After; the places left answer /healthz; a stream that ends gives its place back. */
Test(agent_refusals, followers_beyond_the_total_are_503) {
    struct agent_http_conf c;
    agent_http_conf_default(&c);
    c.max_connections = 8;
    c.max_followers = 3;
    ar_start(&c, NULL);
    static const char *const from[] = {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"};
    int fd[3];
    for (int k = 0; k < 3; k++) {
        struct ar_resp r = {0};
        fd[k] = ar_connect(from[k]);
        ar_send(fd[k], "GET /events HTTP/1.0\r\n\r\n");
        cr_assert(ar_recv_until(fd[k], &r, "{\"type\":\"run\"}\n"), "%s", r.text);
    }
    struct ar_resp *r = ar_req(from[3], "GET /events HTTP/1.0\r\n\r\n");
    cr_assert_eq(r->status, 503, "%s", r->text);
    cr_assert_str_eq(ar_header(r, "Retry-After"), "10");
    cr_assert(strstr(r->text, "all 3 follower places are taken (--max-followers)"), "%s", r->text);
    for (int k = 0; k < 5; k++)
        cr_assert_eq(ar_get(from[k % 4], "/healthz", NULL), 200);
    cr_assert_eq(ar_stats().over_followers, 1);
    cr_assert_eq(ar_said("(503): all 3 follower places are taken"), 1);
    close(fd[0]); /* its stream sees the end at its next write */
    agent_log_append(ar_log, AGENT_LINE_EVENT, "e1", 2);
    for (int tries = 0; ar_stats().followers == 3; tries++) {
        struct ar_resp got = {0};
        agent_log_append(ar_log, AGENT_LINE_EVENT, "ping", 4);
        cr_assert(ar_recv_until(fd[1], &got, "ping\n"));
        cr_assert_lt(tries, 500);
    }
    r = ar_req(from[3], "GET /events?follow=0 HTTP/1.0\r\n\r\n");
    cr_assert_eq(r->status, 200, "the place came back: %s", r->text);
    close(fd[1]);
    close(fd[2]);
}

/* Limits that would leave followers every place are refused at the start, in one line. */
Test(agent_refusals, follower_limits_must_leave_places) {
    struct agent_http_conf c;
    agent_http_conf_default(&c);
    unsigned all, one;
    char why[256] = "";
    cr_assert_eq(agent_http_limits(&c, &all, &one, why, sizeof(why)), 0);
    cr_assert_eq(all, 64);
    cr_assert_eq(one, 8);
    c.max_connections = 2;
    c.per_address = 4;
    cr_assert_eq(agent_http_limits(&c, &all, &one, why, sizeof(why)), 0);
    cr_assert_eq(all, 1);
    cr_assert_eq(one, 1);
    c.max_connections = 10;
    c.per_address = 1; /* a single place per address: a follower may take it */
    cr_assert_eq(agent_http_limits(&c, &all, &one, why, sizeof(why)), 0);
    cr_assert_eq(one, 1);
    c.max_followers = 10;
    cr_assert_eq(agent_http_limits(&c, &all, &one, why, sizeof(why)), -EINVAL);
    cr_assert_str_eq(why, "--max-followers 10 must be below --max-connections 10 (the places "
                          "left are kept for /healthz, /metrics and /control)");
    c.max_followers = 0;
    c.per_address = 8;
    c.followers_per_address = 8;
    cr_assert_eq(agent_http_limits(&c, &all, &one, why, sizeof(why)), -EINVAL);
    cr_assert(strstr(why, "--max-followers-per-address 8 must be below --max-per-address 8"), "%s",
              why);
    c.followers_per_address = 0;
    c.max_followers = 999;
    c.listen[0] = '\0';
    snprintf(c.unix_path, sizeof(c.unix_path), "/nonexistent/agent.sock");
    struct agent_http_handlers h = {.log = ar_log};
    cr_assert_eq(agent_http_start(&ar_srv, &c, &h, why, sizeof(why)), -EINVAL);
    cr_assert(strstr(why, "--max-followers 999"), "%s", why);
    cr_assert_null(ar_srv);
}

/* ---- token guesses ---- */

#define AR_GUESSES 200

/* AR_GUESSES wrong tokens from 127.0.0.1: 10 are looked at (401), the rest answered 429 with
 * Retry-After without a look, the right token too while it lasts; /metrics (no token) still
 * answers, another address is not held off. One log line for the lot (the first), the rest
 * counted in the line written at the stop. */
Test(agent_refusals, token_guesses_are_held_off_per_address) {
    struct agent_http_conf c;
    agent_http_conf_default(&c);
    snprintf(c.token, sizeof(c.token), AR_TOKEN);
    ar_start(&c, NULL);
    unsigned s401 = 0, s429 = 0;
    for (unsigned k = 0; k < AR_GUESSES; k++) {
        char guess[64];
        snprintf(guess, sizeof(guess), "guess-%u-of-the-token", k);
        int status = ar_get("127.0.0.1", "/healthz", guess);
        s401 += status == 401;
        s429 += status == 429;
        if (status == 429 && s429 == 1) {
            struct ar_resp *r = ar_req("127.0.0.1", "GET /healthz HTTP/1.0\r\nAuthorization: "
                                                    "Bearer " AR_TOKEN "\r\n\r\n");
            cr_assert_eq(r->status, 429, "the right token is not looked at either");
            const char *retry = ar_header(r, "Retry-After");
            cr_assert(retry && atoi(retry) >= 1 && atoi(retry) <= 10, "%s", r->text);
            cr_assert(strstr(r->text, "too many wrong tokens from 127.0.0.1"), "%s", r->text);
            cr_assert_str_eq(ar_header(r, "Connection"), "close");
        }
    }
    cr_log_info("%u wrong tokens from one address: %u looked at (401), %u answered 429", AR_GUESSES,
                s401, s429);
    cr_assert_eq(s401, 10);
    cr_assert_eq(s429, AR_GUESSES - 10);
    cr_assert_eq(ar_get("127.0.0.1", "/metrics", NULL), 200);
    cr_assert_eq(ar_get("127.0.0.2", "/healthz", AR_TOKEN), 200, "another address");
    cr_assert_eq(ar_get("127.0.0.2", "/healthz", "wrong-one"), 401);
    struct agent_http_stats st = ar_stats();
    cr_assert_eq(st.auth_failed, 11);
    cr_assert_eq(st.auth_backoff, AR_GUESSES - 10 + 1);
    cr_assert_eq(st.unauthorized, 11);
    cr_assert_eq(ar_said("wrong token from 127.0.0.1 (401)"), 1);
    cr_assert_eq(ar_nlines, 1, "%u lines", ar_nlines);
    agent_http_stop(ar_srv);
    ar_srv = NULL;
    cr_assert_eq(ar_said("wrong tokens since the last such line: 10"), 1, "the rest at the stop");
}

/* No Authorization header at all is not a guess: never held off for it. */
Test(agent_refusals, requests_without_a_token_are_not_guesses) {
    struct agent_http_conf c;
    agent_http_conf_default(&c);
    snprintf(c.token, sizeof(c.token), AR_TOKEN);
    ar_start(&c, NULL);
    for (int k = 0; k < 30; k++)
        cr_assert_eq(ar_get("127.0.0.1", "/healthz", NULL), 401);
    cr_assert_eq(ar_get("127.0.0.1", "/healthz", AR_TOKEN), 200);
    cr_assert_eq(ar_stats().auth_failed, 0);
    cr_assert_eq(ar_nlines, 0);
}

/* ---- the request's form ---- */

Test(agent_refusals, bad_forms_get_their_status) {
    struct agent_http_conf c;
    agent_http_conf_default(&c);
    ar_start(&c, NULL);
    static const char *const paths[] = {"/healthz", "/metrics", "/events?follow=0"};
    for (size_t k = 0; k < 3; k++) {
        char req[512];
        snprintf(req, sizeof(req),
                 "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n"
                 "Connection: close\r\n\r\n",
                 paths[k]);
        struct ar_resp *r = ar_req("127.0.0.1", req);
        cr_assert_eq(r->status, 400, "two Host headers on %s: %s", paths[k], r->text);
        cr_assert(strstr(r->text, "2 Host headers"), "%s", r->text);
        snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1:80@evil.example\r\n\r\n",
                 paths[k]);
        r = ar_req("127.0.0.1", req);
        cr_assert_eq(r->status, 400, "userinfo in Host on %s: %s", paths[k], r->text);
        cr_assert(strstr(r->text, "not host[:port]"), "%s", r->text);
    }
    /* a query of 1,000 arguments: answered, not closed without a word */
    static char req[8192];
    int n = snprintf(req, sizeof(req), "GET /metrics?");
    for (int k = 0; k < 1000; k++)
        n += snprintf(req + n, sizeof(req) - (size_t)n, "%sa=1", k ? "&" : "");
    snprintf(req + n, sizeof(req) - (size_t)n, " HTTP/1.0\r\n\r\n");
    struct ar_resp *r = ar_req("127.0.0.1", req);
    cr_assert_eq(r->status, 414, "%s", r->text);
    cr_assert(strstr(r->text, "the query has 1000 arguments; the agent reads at most 32"), "%s",
              r->text);
    cr_assert_str_eq(ar_header(r, "Content-Type"), "text/plain; charset=utf-8");
    cr_assert_eq(strchr(strstr(r->text, "\r\n\r\n") + 4, '\n'), r->text + r->len - 1,
                 "one line: %s", r->text);
    /* at the limit, and one over */
    n = snprintf(req, sizeof(req), "GET /events?follow=0");
    for (int k = 1; k < AGENT_HTTP_MAX_ARGS; k++)
        n += snprintf(req + n, sizeof(req) - (size_t)n, "&x%d=1", k);
    snprintf(req + n, sizeof(req) - (size_t)n, " HTTP/1.0\r\n\r\n");
    cr_assert_eq(ar_req("127.0.0.1", req)->status, 200, "%d arguments", AGENT_HTTP_MAX_ARGS);
    snprintf(req + n, sizeof(req) - (size_t)n, "&one=more HTTP/1.0\r\n\r\n");
    cr_assert_eq(ar_req("127.0.0.1", req)->status, 414);
    /* %00 in the path: refused, not read as /metrics */
    static const char *const nul[] = {"/metrics%00.txt", "/healthz%00", "/events%00?follow=0"};
    for (size_t k = 0; k < 3; k++) {
        char line[128];
        snprintf(line, sizeof(line), "GET %s HTTP/1.0\r\n\r\n", nul[k]);
        r = ar_req("127.0.0.1", line);
        cr_assert_eq(r->status, 400, "%s: %s", nul[k], r->text);
        cr_assert(strstr(r->text, "NUL byte"), "%s", r->text);
    }
    /* what was answered before still is */
    cr_assert_eq(ar_get("127.0.0.1", "/metrics", NULL), 200);
    cr_assert_eq(ar_req("127.0.0.1", "GET /metrics HTTP/1.0\r\n\r\n")->status, 200, "no Host");
    cr_assert_eq(ar_req("127.0.0.1", "GET /healthz HTTP/1.0\r\nHost: [::1]:9464\r\n\r\n")->status,
                 200);
    cr_assert_eq(ar_req("127.0.0.1", "GET /metrics%30 HTTP/1.0\r\n\r\n")->status, 404);
    struct agent_http_stats st = ar_stats();
    cr_assert_eq(st.refused, 6 + 1 + 1 + 3 + 1, "each refusal counted");
}

/* ---- the pieces, on their own ---- */

static struct http_addr ar_group(const char *text) {
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    socklen_t len;
    if (strchr(text, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        cr_assert_eq(inet_pton(AF_INET6, text, &s6->sin6_addr), 1, "%s", text);
        len = sizeof(*s6);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        cr_assert_eq(inet_pton(AF_INET, text, &s4->sin_addr), 1, "%s", text);
        len = sizeof(*s4);
    }
    struct http_addr a;
    cr_assert(http_addr_group((struct sockaddr *)&ss, len, &a), "%s", text);
    return a;
}

/* IPv6 by /64 for every per-address limit; IPv4 alone, also when it comes mapped. */
Test(agent_refusals, addresses_group_ipv6_by_64) {
    static const struct {
        const char *a, *b;
        bool same;
    } cases[] = {
        {"2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", true},
        {"2001:db8:1:2::1", "2001:db8:1:3::1", false},
        {"fe80::1", "fe80::2", true},
        {"::1", "::2", true},
        {"127.0.0.2", "127.0.0.3", false},
        {"127.0.0.2", "::ffff:127.0.0.2", true},
        {"::ffff:127.0.0.2", "::ffff:127.0.0.3", false},
        {"::ffff:127.0.0.2", "::1", false},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct http_addr a = ar_group(cases[k].a), b = ar_group(cases[k].b);
        cr_assert_eq(http_addr_equal(&a, &b), cases[k].same, "%s and %s", cases[k].a, cases[k].b);
    }
    char name[HTTP_ADDR_NAME];
    struct http_addr a = ar_group("2001:db8:1:2:3:4:5:6");
    http_addr_format(&a, name, sizeof(name));
    cr_assert_str_eq(name, "2001:db8:1:2::/64");
    a = ar_group("::ffff:10.1.2.3");
    http_addr_format(&a, name, sizeof(name));
    cr_assert_str_eq(name, "10.1.2.3");
    http_addr_format(NULL, name, sizeof(name));
    cr_assert_str_eq(name, "the UNIX socket");
    struct sockaddr sa = {.sa_family = AF_UNIX};
    cr_assert_not(http_addr_group(&sa, sizeof(sa), &a));
    cr_assert_not(http_addr_group(NULL, 0, &a));
}

/* The guard's per-address limit counts a /64 as one address: two connections whose requests
 * arrived from 2001:db8:1:2::/64 fill a share of 2, a third from another address in it is
 * refused; one from the next /64 is not. */
Test(agent_refusals, the_connection_limit_counts_a_64_as_one_address) {
    struct http_guard *g;
    struct http_guard_conf gc = {10, 2, 10 * AR_S};
    cr_assert_eq(http_guard_create(&g, &gc), 0);
    static const char *const held[] = {"2001:db8:1:2::1", "2001:db8:1:2::2"};
    struct http_guard_conn *conn[2];
    int sv[2][2];
    for (int k = 0; k < 2; k++) {
        struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
        inet_pton(AF_INET6, held[k], &s6.sin6_addr);
        cr_assert(http_guard_admit(g, (struct sockaddr *)&s6, sizeof(s6)));
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv[k]), 0);
        conn[k] = http_guard_open(g, sv[k][0], (struct sockaddr *)&s6, sizeof(s6));
        cr_assert_not_null(conn[k]);
        http_guard_done(g, conn[k]); /* a request that arrived: never pushed out */
    }
    struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
    inet_pton(AF_INET6, "2001:db8:1:2:ffff::3", &s6.sin6_addr);
    cr_assert_not(http_guard_admit(g, (struct sockaddr *)&s6, sizeof(s6)), "the same /64");
    inet_pton(AF_INET6, "2001:db8:1:3::1", &s6.sin6_addr);
    cr_assert(http_guard_admit(g, (struct sockaddr *)&s6, sizeof(s6)), "the next /64");
    struct http_guard_stats st;
    http_guard_stats(g, &st);
    cr_assert_eq(st.over_address, 1);
    for (int k = 0; k < 2; k++) {
        http_guard_close(g, conn[k]);
        close(sv[k][0]);
        close(sv[k][1]);
    }
    http_guard_destroy(g);
}

Test(agent_refusals, follower_places_in_all_and_per_address) {
    struct http_quota *q;
    struct http_quota_conf qc = {3, 2};
    cr_assert_eq(http_quota_create(&q, &qc), 0);
    struct http_addr a = ar_group("2001:db8::1"), a2 = ar_group("2001:db8::2"),
                     b = ar_group("10.0.0.1");
    cr_assert_eq(http_quota_take(q, &a), HTTP_QUOTA_TAKEN);
    cr_assert_eq(http_quota_take(q, &a2), HTTP_QUOTA_TAKEN, "the same /64: its second place");
    cr_assert_eq(http_quota_take(q, &a), HTTP_QUOTA_ADDR_FULL);
    cr_assert_eq(http_quota_take(q, NULL), HTTP_QUOTA_TAKEN, "no address: the total only");
    cr_assert_eq(http_quota_take(q, &b), HTTP_QUOTA_FULL);
    cr_assert_eq(http_quota_held(q), 3);
    http_quota_give(q, NULL);
    cr_assert_eq(http_quota_take(q, &b), HTTP_QUOTA_TAKEN);
    cr_assert_eq(http_quota_take(q, &a), HTTP_QUOTA_ADDR_FULL, "its share before the total");
    http_quota_give(q, &a);
    http_quota_give(q, &a2);
    http_quota_give(q, &b);
    cr_assert_eq(http_quota_held(q), 0);
    for (int k = 0; k < 3; k++) /* rows are reused */
        cr_assert_eq(http_quota_take(q, &b), k < 2 ? HTTP_QUOTA_TAKEN : HTTP_QUOTA_ADDR_FULL);
    http_quota_give(q, &b);
    http_quota_give(q, &b);
    http_quota_destroy(q);
    struct http_quota_conf none = {0, 8};
    cr_assert_eq(http_quota_create(&q, &none), 0);
    cr_assert_eq(http_quota_take(q, &a), HTTP_QUOTA_FULL);
    cr_assert_eq(http_quota_take(q, NULL), HTTP_QUOTA_FULL);
    http_quota_destroy(q);
}

/* The backoff with the time given: 10 wrong tokens within 60 s, then 10 s held off, 20 s after
 * the next 10, ... up to 15 min; a /64 is one group; the right token or 15 min without a wrong
 * one forgets. */
Test(agent_refusals, token_backoff_grows_and_is_forgotten) {
    struct http_throttle_conf tc;
    http_throttle_conf_default(&tc);
    cr_assert_eq(tc.failures, 10);
    cr_assert_eq(tc.window_ns, 60 * AR_S);
    cr_assert_eq(tc.backoff_ns, 10 * AR_S);
    cr_assert_eq(tc.backoff_max_ns, 900 * AR_S);
    struct http_throttle *t;
    cr_assert_eq(http_throttle_create(&t, &tc), 0);
    struct http_addr a = ar_group("2001:db8:7:7::1"), same = ar_group("2001:db8:7:7::99"),
                     other = ar_group("2001:db8:7:8::1");
    uint64_t now = 1000 * AR_S, left = 0, len = 0;
    for (int k = 0; k < 9; k++)
        cr_assert_not(http_throttle_fail(t, k % 2 ? &a : &same, now + (uint64_t)k * AR_S, &len));
    cr_assert_not(http_throttle_check(t, &a, now + 9 * AR_S, &left));
    cr_assert(http_throttle_fail(t, &a, now + 9 * AR_S, &len), "the 10th within 60 s");
    cr_assert_eq(len, 10 * AR_S);
    cr_assert(http_throttle_check(t, &same, now + 10 * AR_S, &left));
    cr_assert_eq(left, 9 * AR_S);
    cr_assert_not(http_throttle_check(t, &other, now + 10 * AR_S, &left), "the next /64");
    cr_assert_eq(http_throttle_held(t, now + 10 * AR_S), 1);
    cr_assert_not(http_throttle_check(t, &a, now + 19 * AR_S, &left), "the backoff is over");
    /* each next round doubles */
    uint64_t at = now + 19 * AR_S, want = 20 * AR_S;
    for (int round = 0; round < 8; round++) {
        for (int k = 0; k < 9; k++)
            cr_assert_not(http_throttle_fail(t, &a, at, &len));
        cr_assert(http_throttle_fail(t, &a, at, &len), "round %d", round);
        cr_assert_eq(len, want, "round %d: %llu s", round, (unsigned long long)(len / AR_S));
        at += len;
        want = want * 2 > 900 * AR_S ? 900 * AR_S : want * 2;
    }
    /* the right token forgets it all */
    http_throttle_pass(t, &a);
    cr_assert_not(http_throttle_check(t, &a, at - 1, &left));
    for (int k = 0; k < 9; k++)
        cr_assert_not(http_throttle_fail(t, &a, at, &len));
    cr_assert(http_throttle_fail(t, &a, at, &len));
    cr_assert_eq(len, 10 * AR_S, "back to the first backoff");
    /* failures in separate minutes do not add up */
    cr_assert_not(http_throttle_check(t, &other, at, &left));
    for (int k = 0; k < 30; k++)
        cr_assert_not(http_throttle_fail(t, &other, at + (uint64_t)k * 7 * AR_S, &len), "%d", k);
    /* 15 min without a wrong token: forgotten, the next backoff is the first again */
    uint64_t later = at + 10 * AR_S + 900 * AR_S;
    for (int k = 0; k < 9; k++)
        cr_assert_not(http_throttle_fail(t, &a, later, &len));
    cr_assert(http_throttle_fail(t, &a, later, &len));
    cr_assert_eq(len, 10 * AR_S);
    /* the clients without an address are one group of their own */
    for (int k = 0; k < 10; k++)
        http_throttle_fail(t, NULL, later, &len);
    cr_assert(http_throttle_check(t, NULL, later + 1, &left));
    http_throttle_destroy(t);
    tc.failures = 0;
    cr_assert_eq(http_throttle_create(&t, &tc), -EINVAL);
}

/* The table of groups is bounded: a new group takes the place of the one whose last wrong token
 * is oldest. */
Test(agent_refusals, token_backoff_remembers_a_bounded_number_of_groups) {
    struct http_throttle_conf tc;
    http_throttle_conf_default(&tc);
    tc.groups = 2;
    tc.failures = 2;
    struct http_throttle *t;
    cr_assert_eq(http_throttle_create(&t, &tc), 0);
    struct http_addr a = ar_group("10.0.0.1"), b = ar_group("10.0.0.2"), c = ar_group("10.0.0.3");
    uint64_t len, left;
    http_throttle_fail(t, &a, 1 * AR_S, &len);
    http_throttle_fail(t, &b, 2 * AR_S, &len);
    http_throttle_fail(t, &c, 3 * AR_S, &len); /* a is forgotten */
    cr_assert_not(http_throttle_fail(t, &a, 4 * AR_S, &len), "a counts from 1 again");
    cr_assert(http_throttle_fail(t, &c, 4 * AR_S, &len), "c's two within the window");
    cr_assert(http_throttle_check(t, &c, 5 * AR_S, &left));
    http_throttle_destroy(t);
}

/* One line per period at most, with the count since the last; the rest at the end. */
Test(agent_refusals, a_rate_limited_line_counts_what_it_held_back) {
    struct http_ratelog r;
    http_ratelog_init(&r, 10 * AR_S);
    uint64_t count = 0;
    cr_assert(http_ratelog_note(&r, 100 * AR_S, &count), "the first event: at once");
    cr_assert_eq(count, 1);
    unsigned lines = 0;
    for (uint64_t k = 1; k <= 1000; k++) /* 1,000 events in 25 s */
        if (http_ratelog_note(&r, 100 * AR_S + k * 25 * AR_S / 1000, &count)) {
            lines++;
            cr_assert_eq(count, 400, "line %u: %llu", lines, (unsigned long long)count);
        }
    cr_assert_eq(lines, 2, "at 110 s and 120 s");
    cr_assert(http_ratelog_flush(&r, &count));
    cr_assert_eq(count, 200, "the last 5 s");
    cr_assert_not(http_ratelog_flush(&r, &count));
    cr_assert_not(http_ratelog_note(&r, 121 * AR_S, &count), "within the period");
    cr_assert_not(http_ratelog_note(&r, 100 * AR_S, &count), "a time read before the last line");
    cr_assert(http_ratelog_note(&r, 130 * AR_S, &count));
    cr_assert_eq(count, 3);
    http_ratelog_fini(&r);
}

Test(agent_refusals, hosts_are_host_and_port) {
    static const char *const good[] = {"127.0.0.1",
                                       "127.0.0.1:9464",
                                       "localhost",
                                       "LOCALHOST:1",
                                       "[::1]",
                                       "[::1]:9464",
                                       "gpu-1.example",
                                       "a%2Db:80",
                                       "",
                                       "x:",
                                       "[v1.fe80::a+b]",
                                       "[fe80::1%25eth0]:1",
                                       "h:65535"};
    static const char *const bad[] = {"127.0.0.1:80@evil.example",
                                      "user@127.0.0.1",
                                      "127.0.0.1:80:81",
                                      "127.0.0.1 ",
                                      "a b",
                                      "a\tb",
                                      "[::1",
                                      "[]:80",
                                      "[::1]x",
                                      "[::1]:x",
                                      "h:65536",
                                      "h:123456",
                                      "h:-1",
                                      "a%2",
                                      "a%zz",
                                      "a/b",
                                      "a\\b",
                                      "caf\xc3\xa9"};
    for (size_t k = 0; k < sizeof(good) / sizeof(good[0]); k++)
        cr_assert(http_host_is_valid(good[k]), "'%s'", good[k]);
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
        cr_assert_not(http_host_is_valid(bad[k]), "'%s'", bad[k]);
}

Test(agent_refusals, targets_are_read_before_the_library_splits_them) {
    static const struct {
        const char *target;
        enum http_target verdict;
        unsigned args;
    } cases[] = {
        {"/metrics", HTTP_TARGET_OK, 0},
        {"/metrics?", HTTP_TARGET_OK, 0},
        {"/events?since=1&follow=0", HTTP_TARGET_OK, 2},
        {"/events?a&&b", HTTP_TARGET_OK, 3},
        {"/events?a&", HTTP_TARGET_OK, 1},
        {"/events?&", HTTP_TARGET_OK, 1},
        {"/metrics%00.txt", HTTP_TARGET_NUL, 0},
        {"/metrics%000", HTTP_TARGET_NUL, 0},
        {"/metrics?x=%00", HTTP_TARGET_OK, 1}, /* a value's NUL is refused after the split */
        {"/metrics%0", HTTP_TARGET_OK, 0},
        {"/metrics%30%30", HTTP_TARGET_OK, 0},
        {"/a?1&2&3&4", HTTP_TARGET_ARGS, 4},
        {"/a%00?1&2&3&4", HTTP_TARGET_NUL, 4},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        unsigned args = 99;
        cr_assert_eq(http_target_check(cases[k].target, 3, &args), cases[k].verdict, "%s",
                     cases[k].target);
        cr_assert_eq(args, cases[k].args, "%s: %u", cases[k].target, args);
    }
    unsigned args = 99;
    cr_assert_eq(http_target_check(NULL, 3, &args), HTTP_TARGET_OK);
    cr_assert_eq(args, 0);
}
