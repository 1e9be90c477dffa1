/* The attach source against a fake agent: a listening socket on 127.0.0.1 served by threads
 * that answer scripted responses and record every request. Checked: the run line, events with
 * their sequence numbers, the snapshot rebuilt from events, layouts and the summary, status
 * lines (telemetry, kernel log, the sync in flight, control), reconnection with since=, a
 * restarted agent, refusals (401, 404, not an agent, https:// to a plain HTTP server), the
 * loop's keys and a prompt stop; the HTTP client's URL parser and line reader on their own, and
 * when a token would cross the network in clear. (https:// verified: test_remote_tls.c.) */
#include "backend/core/mono.h"
#include "backend/engine/engine.h"
#include "backend/record/record_json.h"
#include "tests/support/rs_test.h"
#include "tui/agent/agent_status.h"
#include "tui/agent/http_client.h"
#include "tui/agent/remote.h"
#include "tui/view/ui_model.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RT_SCRIPTS 12
#define RT_REQS    16
#define RT_WAIT_MS 5000 /* the longest any await in these tests takes before it fails */
#define RT_T0      1000000000ull
#define RT_T1      7000000000ull /* a restarted agent's run */

/* ---- the fake agent ---- */

struct rt_script {
    char prefix[32]; /* the request line it answers: "GET /events", "POST /control" */
    char *response;  /* what is sent (malloc'd) */
    bool hold;       /* then keep the connection until the client closes it (or the end) */
    int drip_ms;     /* > 0: one byte at a time, this far apart */
    bool used;
};

struct rt_agent {
    int lfd;
    unsigned port;
    char url[64];
    pthread_t acceptor;
    pthread_mutex_t mu;
    pthread_cond_t cond; /* a request came */
    struct rt_script script[RT_SCRIPTS];
    unsigned n_script;
    char req[RT_REQS][1024]; /* request lines and headers, in the order they came */
    unsigned n_req;
    int release[2]; /* written at the end: held connections let go */
    pthread_t handler[RT_REQS];
    unsigned n_handler;
    bool quit;
};

struct rt_conn {
    struct rt_agent *a;
    int fd;
};

static struct rt_agent rt_agent;
static struct ev rt_got[256]; /* what the tests drained */
static size_t rt_n;

static void rt_send(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return; /* the client went: nothing more to tell it */
        p += w;
        n -= (size_t)w;
    }
}

/* text one byte every ms, until the end, the client closes or the test ends. */
static void rt_drip(struct rt_agent *a, int fd, const char *text, int ms) {
    for (; *text; text++) {
        if (send(fd, text, 1, MSG_NOSIGNAL) != 1)
            return;
        struct pollfd pf = {a->release[0], POLLIN, 0};
        if (poll(&pf, 1, ms) != 0)
            return;
    }
}

/* The request head (through its blank line), NUL-terminated. */
static void rt_read_request(int fd, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    while (n + 1 < cap && !strstr(buf, "\r\n\r\n")) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, RT_WAIT_MS) <= 0)
            return;
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r <= 0)
            return;
        n += (size_t)r;
        buf[n] = '\0';
    }
}

/* Record the request and take the first unused script it matches (or NULL). */
static struct rt_script *rt_match(struct rt_agent *a, const char *req) {
    struct rt_script *s = NULL;
    pthread_mutex_lock(&a->mu);
    if (a->n_req < RT_REQS)
        snprintf(a->req[a->n_req++], sizeof(a->req[0]), "%s", req);
    for (unsigned k = 0; !s && k < a->n_script; k++)
        if (!a->script[k].used &&
            strncmp(req, a->script[k].prefix, strlen(a->script[k].prefix)) == 0)
            s = &a->script[k];
    if (s)
        s->used = true;
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->mu);
    return s;
}

static void *rt_handle(void *arg) {
    struct rt_conn *c = arg;
    char req[1024];
    rt_read_request(c->fd, req, sizeof(req));
    struct rt_script *s = rt_match(c->a, req);
    static const char none[] = "HTTP/1.0 503 Service Unavailable\r\n\r\n";
    if (s && s->drip_ms > 0)
        rt_drip(c->a, c->fd, s->response, s->drip_ms);
    else if (s)
        rt_send(c->fd, s->response, strlen(s->response));
    else
        rt_send(c->fd, none, sizeof(none) - 1);
    if (s && s->hold) {
        struct pollfd pf[2] = {{c->fd, POLLIN, 0}, {c->a->release[0], POLLIN, 0}};
        poll(pf, 2, 2 * RT_WAIT_MS);
    }
    close(c->fd);
    free(c);
    return NULL;
}

static void *rt_accept(void *arg) {
    struct rt_agent *a = arg;
    for (;;) {
        int fd = accept(a->lfd, NULL, NULL);
        if (fd < 0 && errno == EINTR)
            continue;
        if (fd < 0)
            return NULL; /* shut down: the test is over */
        struct rt_conn *c = malloc(sizeof(*c));
        cr_assert(c);
        *c = (struct rt_conn){a, fd};
        pthread_mutex_lock(&a->mu);
        bool room = !a->quit && a->n_handler < RT_REQS &&
                    pthread_create(&a->handler[a->n_handler], NULL, rt_handle, c) == 0;
        a->n_handler += room;
        pthread_mutex_unlock(&a->mu);
        if (!room) {
            close(fd);
            free(c);
        }
    }
}

static void rt_setup(void) {
    struct rt_agent *a = &rt_agent;
    memset(a, 0, sizeof(*a));
    rt_n = 0;
    pthread_mutex_init(&a->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&a->cond, &ca);
    cr_assert_eq(pipe(a->release), 0);
    a->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    cr_assert_eq(bind(a->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(listen(a->lfd, 16), 0);
    cr_assert_eq(getsockname(a->lfd, (struct sockaddr *)&sa, &len), 0);
    a->port = ntohs(sa.sin_port);
    snprintf(a->url, sizeof(a->url), "http://127.0.0.1:%u", a->port);
    cr_assert_eq(pthread_create(&a->acceptor, NULL, rt_accept, a), 0);
}

static void rt_teardown(void) {
    struct rt_agent *a = &rt_agent;
    pthread_mutex_lock(&a->mu);
    a->quit = true;
    pthread_mutex_unlock(&a->mu);
    shutdown(a->lfd, SHUT_RDWR);
    cr_assert_eq(write(a->release[1], "x", 1), 1);
    pthread_join(a->acceptor, NULL);
    for (unsigned k = 0; k < a->n_handler; k++)
        pthread_join(a->handler[k], NULL);
    close(a->lfd);
    close(a->release[0]);
    close(a->release[1]);
    for (unsigned k = 0; k < a->n_script; k++)
        free(a->script[k].response);
}

TestSuite(remote, .init = rt_setup, .fini = rt_teardown, .timeout = 30);

/* Answer the next request starting with prefix with text (taken over). */
static void rt_script(const char *prefix, char *text, bool hold) {
    struct rt_agent *a = &rt_agent;
    pthread_mutex_lock(&a->mu);
    cr_assert_lt(a->n_script, RT_SCRIPTS);
    struct rt_script *s = &a->script[a->n_script++];
    snprintf(s->prefix, sizeof(s->prefix), "%s", prefix);
    s->response = text;
    s->hold = hold;
    pthread_mutex_unlock(&a->mu);
}

/* Answer the next GET /events with text one byte every ms, then hold the connection. */
static void rt_script_drip(const char *text, int ms) {
    rt_script("GET /events", strdup(text), true);
    pthread_mutex_lock(&rt_agent.mu);
    rt_agent.script[rt_agent.n_script - 1].drip_ms = ms;
    pthread_mutex_unlock(&rt_agent.mu);
}

/* Wait until n requests came; the k-th of them (0-based) into out. */
static void rt_await_request(unsigned k, char *out, size_t cap) {
    struct rt_agent *a = &rt_agent;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += RT_WAIT_MS / 1000;
    pthread_mutex_lock(&a->mu);
    while (a->n_req <= k && pthread_cond_timedwait(&a->cond, &a->mu, &ts) == 0)
        ;
    bool got = a->n_req > k;
    if (got)
        snprintf(out, cap, "%s", a->req[k]);
    pthread_mutex_unlock(&a->mu);
    cr_assert(got, "request %u never came", k + 1);
}

static unsigned rt_requests(void) {
    pthread_mutex_lock(&rt_agent.mu);
    unsigned n = rt_agent.n_req;
    pthread_mutex_unlock(&rt_agent.mu);
    return n;
}

/* ---- what the fake agent sends ---- */

static FILE *rt_begin(char **buf, size_t *len) {
    FILE *f = open_memstream(buf, len);
    cr_assert(f);
    fputs("HTTP/1.0 200 OK\r\nContent-Type: application/x-ndjson\r\n\r\n", f);
    return f;
}

static void rt_run(FILE *f, uint64_t start_ns) {
    fprintf(f,
            "{\"type\":\"run\",\"version\":1,\"ringside\":\"0.1.0\",\"host\":\"gpu-box\","
            "\"backend\":\"cpu\",\"device\":\"CPU (test)\",\"arch\":\"x86_64\",\"devices\":1,"
            "\"start_ns\":%llu,\"start_wall_ns\":1700000000000000000,\"epochs\":2,\"chunk\":250,"
            "\"config\":{}}\n",
            (unsigned long long)start_ns);
}

static void rt_event(FILE *f, const struct ev *e) {
    char line[2048];
    cr_assert_lt((size_t)rec_json_event(e, line, sizeof(line)), sizeof(line));
    fprintf(f, "%s\n", line);
}

/* Event seq: a phase at step seq (an odd one a kernel-log event when kmsg is set). */
static void rt_events(FILE *f, uint32_t from, uint32_t to, bool kmsg) {
    for (uint32_t seq = from; seq <= to; seq++) {
        struct ev e = {.t_ns = RT_T0 + seq * 1000000ull, .seq = seq, .dev = 0};
        if (kmsg && seq % 2) {
            e.kind = EV_KMSG;
            e.dev = EV_DEV_NONE;
            e.u.kmsg.lines = 1;
            e.u.kmsg.severity = SEV_ERROR;
            snprintf(e.u.kmsg.message, sizeof(e.u.kmsg.message), "amdgpu: ring gfx timeout");
        } else {
            e.kind = EV_PHASE;
            e.u.phase = (struct ev_phase){.phase = PHASE_FORWARD,
                                          .epoch = 1,
                                          .step = seq,
                                          .chunk = -1,
                                          .start_ns = e.t_ns - 1000,
                                          .end_ns = e.t_ns};
        }
        rt_event(f, &e);
    }
}

static void rt_layout(FILE *f) {
    fputs("{\"type\":\"layout\",\"dev\":0,\"t_ns\":1500000000,\"segments\":[{\"size\":2097152,"
          "\"small\":false,\"truncated\":false,\"blocks\":[[0,1048576,1],[1048576,1048576,0]]}],"
          "\"n_segments\":3}\n",
          f);
}

static void rt_summary(FILE *f) {
    fputs("{\"type\":\"summary\",\"state\":\"completed\",\"epochs\":2,\"steps\":40,"
          "\"train_loss\":0.5,\"val_loss\":0.25,\"best_val_loss\":0.2}\n",
          f);
}

/* A status line as the agent writes it: control as given, one GPU at 61 C, the kernel log
 * live, a stream sync in flight on device 0. */
static void rt_status(FILE *f, bool control, uint64_t t_ns) {
    static struct agent_status s;
    memset(&s, 0, sizeof(s));
    s.t_ns = t_ns;
    s.control = control;
    s.has_tele = true;
    s.tele.n_prov = 1;
    snprintf(s.tele.prov[0].name, sizeof(s.tele.prov[0].name), "sysfs");
    s.tele.n_gpus = 1;
    tele_gpu_init(&s.tele.gpus[0], "0000:03:00.0");
    s.tele.gpus[0].index = 0;
    s.tele.gpus[0].f[TELE_F_TEMP] = 61;
    s.tele.gpus[0].src[TELE_F_TEMP] = 1;
    s.has_kmsg = true;
    s.kmsg = (struct kmsg_stats){.state = KMSG_STATE_LIVE, .lines = 12, .events = 2};
    s.has_inflight = true;
    s.inflight = (struct trace_inflight){
        .start_ns = t_ns - 5, .op = SYNC_OP_STREAM, .phase = PHASE_BACKWARD};
    char *line = NULL;
    size_t len = 0;
    cr_assert_eq(agent_status_write(&s, &line, &len), 0);
    fprintf(f, "%s\n\n", line); /* and a keep-alive */
    free(line);
}

/* The stream f holds (the buffer rt_begin set up) answers the next GET /events. */
static void rt_script_end(FILE *f, char **buf, bool hold) {
    cr_assert_eq(fclose(f), 0); /* sets *buf */
    rt_script("GET /events", *buf, hold);
    *buf = NULL;
}

/* ---- driving the source as the app does ---- */

static struct source *rt_open_retry(const char *token, int retry_ms) {
    struct remote_conf c;
    remote_conf_default(&c);
    snprintf(c.url, sizeof(c.url), "%s", rt_agent.url);
    snprintf(c.token, sizeof(c.token), "%s", token);
    c.retry_ms = retry_ms;
    c.timeout_ms = RT_WAIT_MS;
    struct source *src = NULL;
    char err[512] = "";
    cr_assert_eq(remote_open(&src, &c, err, sizeof(err)), 0, "%s", err);
    cr_assert(src);
    return src;
}

static struct source *rt_open(const char *token) {
    return rt_open_retry(token, 10);
}

typedef bool (*rt_until_fn)(struct source *s);

/* Drain when the wake descriptor says so, until until(s) holds (false after RT_WAIT_MS). */
static bool rt_pump(struct source *s, rt_until_fn until) {
    uint64_t deadline = mono_now_ns() + RT_WAIT_MS * 1000000ull;
    for (;;) {
        rt_n += s->ops->drain(s, rt_got + rt_n, sizeof(rt_got) / sizeof(rt_got[0]) - rt_n);
        if (until(s))
            return true;
        uint64_t now = mono_now_ns();
        if (now >= deadline)
            return false;
        struct pollfd pf = {s->ops->wake_fd(s), POLLIN, 0};
        poll(&pf, 1, (int)((deadline - now) / 1000000) + 1);
    }
}

static bool rt_is_done(struct source *s) {
    return s->ops->done(s);
}

static bool rt_has_tele(struct source *s) {
    return s->ops->tele(s) != NULL;
}

static bool rt_has_control(struct source *s) {
    return s->run.control_off[0] == '\0';
}

static bool rt_has_status(struct source *s) {
    return strncmp(s->run.control_off, "read-only: waiting", 18) != 0;
}

/* The agent's events drained so far (our own log lines left out), into seqs. */
static size_t rt_agent_events(uint32_t *seqs, size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < rt_n && n < cap; i++)
        if (rt_got[i].kind != EV_LOG)
            seqs[n++] = rt_got[i].seq;
    return n;
}

static const struct ev *rt_find_log(const char *needle) {
    for (size_t i = 0; i < rt_n; i++)
        if (rt_got[i].kind == EV_LOG && strstr(rt_got[i].u.text.text, needle))
            return &rt_got[i];
    return NULL;
}

static bool rt_has_answers(struct source *s) {
    (void)s;
    return rt_find_log("agent: chunk_step: chunk_step +1") &&
           rt_find_log("agent: chunk_step: chunk_step -1");
}

/* ---- opening ---- */

Test(remote, open_reads_the_run_line) {
    char *buf = NULL, req[1024];
    size_t len = 0;
    FILE *f = rt_begin(&buf, &len);
    fputs("\n", f); /* a keep-alive before the run line is fine */
    rt_run(f, RT_T0);
    rt_script_end(f, &buf, true);
    struct source *src = rt_open("");
    cr_assert_str_eq(src->ops->name, "attach");
    cr_assert_str_eq(src->run.host, "gpu-box");
    cr_assert_str_eq(src->run.backend, "cpu");
    cr_assert_str_eq(src->run.dev_name, "CPU (test)");
    cr_assert_eq(src->run.start_ns, RT_T0);
    cr_assert_not(src->run.replay);
    cr_assert_str_eq(src->run.origin, rt_agent.url);
    cr_assert_str_eq(src->run.control_off, "read-only: waiting for the agent's status");
    cr_assert_str_eq(src->ops->status(src), "");
    cr_assert_not(src->ops->done(src));
    cr_assert_null(src->ops->tele(src));
    struct kmsg_stats ks;
    const char *reason = NULL;
    cr_assert_not(src->ops->kmsg(src, &ks, &reason));
    const struct engine_snap *snap = src->ops->snap(src);
    cr_assert_eq(snap->chunk_bars, 250);
    cr_assert_eq(snap->epochs, 2);
    cr_assert_eq(snap->state, ENGINE_RUNNING);
    cr_assert_geq(src->ops->wake_fd(src), 0);
    rt_await_request(0, req, sizeof(req));
    cr_assert(strncmp(req, "GET /events?since=0 HTTP/1.0\r\n", 30) == 0, "%s", req);
    cr_assert(strstr(req, "\r\nAccept: application/x-ndjson\r\n"), "%s", req);
    cr_assert_null(strstr(req, "Authorization"), "no token, no header: %s", req);
    src->ops->destroy(src);
}

struct rt_refusal { /* arrays: the parameters are copied into each test's process */
    char response[160];
    int rc;
    char err[96];
};

ParameterizedTestParameters(remote, open_refusals) {
    static struct rt_refusal p[] = {
        {"HTTP/1.0 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\n\r\n", -EACCES,
         "/events: 401 Unauthorized: give the agent's token with --token-file"},
        {"HTTP/1.0 404 Not Found\r\n\r\n", -ENOENT, "/events: not a ringside agent"},
        {"HTTP/1.0 500 Oops\r\n\r\n", -EPROTO, "/events: the agent answered HTTP 500"},
        {"HTTP/1.0 200 OK\r\n\r\n{\"type\":\"log\",\"seq\":1,\"t_ns\":1,\"severity\":\"info\","
         "\"message\":\"hi\"}\n",
         -EPROTO, "not a ringside agent (its stream does not start with a run line)"},
        {"HTTP/1.0 200 OK\r\n\r\nhello\n", -EPROTO, "not a ringside agent"},
        {"HTTP/1.0 200 OK\r\n\r\n", -EPROTO, "the stream ended before its run line"},
        {"SSH-2.0-OpenSSH_9.2\r\n", -EPROTO, "not an HTTP response"},
    };
    return cr_make_param_array(struct rt_refusal, p, sizeof(p) / sizeof(p[0]));
}

ParameterizedTest(struct rt_refusal *p, remote, open_refusals) {
    rt_script("GET /events", strdup(p->response), false);
    struct remote_conf c;
    remote_conf_default(&c);
    snprintf(c.url, sizeof(c.url), "%s", rt_agent.url);
    struct source *src = NULL;
    char err[512] = "";
    cr_assert_eq(remote_open(&src, &c, err, sizeof(err)), p->rc, "%s", err);
    cr_assert_null(src);
    cr_assert(strstr(err, p->err), "'%s' lacks '%s'", err, p->err);
}

Test(remote, open_without_an_agent) {
    struct remote_conf c;
    remote_conf_default(&c);
    int fd = socket(AF_INET, SOCK_STREAM, 0); /* a port nobody listens on */
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    snprintf(c.url, sizeof(c.url), "http://127.0.0.1:%u", ntohs(sa.sin_port));
    struct source *src = NULL;
    char err[512] = "", want[128];
    cr_assert_eq(remote_open(&src, &c, err, sizeof(err)), -ECONNREFUSED, "%s", err);
    close(fd);
    snprintf(want, sizeof(want), "cannot connect to 127.0.0.1:%u: Connection refused",
             ntohs(sa.sin_port));
    cr_assert_str_eq(err, want);
    snprintf(c.url, sizeof(c.url), "ftp://127.0.0.1");
    cr_assert_eq(remote_open(&src, &c, err, sizeof(err)), -EINVAL);
    cr_assert(strstr(err, "only http://, https:// and unix: URLs"), "%s", err);
}

/* A plain HTTP server's answer to bytes that are no request (a TLS hello), as libmicrohttpd's:
 * what came is read, 400 goes back at once and the connection closes. One connection on lfd. */
static void *rt_plain_http(void *arg) {
    int lfd = *(int *)arg, fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    static const char answer[] = "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n";
    char buf[2048];
    struct pollfd pf = {fd, POLLIN, 0};
    if (poll(&pf, 1, RT_WAIT_MS) == 1 && read(fd, buf, sizeof(buf)) > 0)
        rt_send(fd, answer, sizeof(answer) - 1);
    close(fd);
    return NULL;
}

/* https:// to a server that speaks plain HTTP: a TLS error naming the URL, not a wait for the
 * timeout. */
Test(remote, https_to_a_plain_http_server_is_a_tls_error) {
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    cr_assert_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(listen(lfd, 1), 0);
    cr_assert_eq(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, rt_plain_http, &lfd), 0);
    struct remote_conf c;
    remote_conf_default(&c);
    snprintf(c.url, sizeof(c.url), "https://127.0.0.1:%u", ntohs(sa.sin_port));
    /* a CA file of our own: the handshake is reached whatever CA certificates the system has */
    rs_test_fixture("tls/ca.pem", c.cacert, sizeof(c.cacert));
    c.timeout_ms = 60000; /* a wait for it would outlast the test's own timeout */
    struct source *src = NULL;
    char err[512] = "", want[128];
    cr_assert_eq(remote_open(&src, &c, err, sizeof(err)), -EPROTO, "%s", err);
    cr_assert_null(src);
    snprintf(want, sizeof(want), "https://127.0.0.1:%u/events: the TLS handshake failed (",
             ntohs(sa.sin_port));
    cr_assert(strncmp(err, want, strlen(want)) == 0, "%s", err);
    cr_assert(strstr(err, "): is the agent serving https://?"), "%s", err);
    shutdown(lfd, SHUT_RDWR);
    pthread_join(t, NULL);
    close(lfd);
}

/* ---- the stream ---- */

Test(remote, events_layout_and_summary_rebuild_the_snapshot) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = rt_begin(&buf, &len);
    rt_run(f, RT_T0);
    rt_events(f, 1, 4, false);
    struct ev cmd = {.t_ns = RT_T0 + 5000000, .seq = 5, .kind = EV_COMMAND, .dev = EV_DEV_NONE};
    cmd.u.command = (struct ev_command){.cmd = CMD_SET_CHUNK, .arg = 500, .text = "ok"};
    rt_event(f, &cmd);
    rt_layout(f);
    rt_summary(f);
    rt_script_end(f, &buf, false);
    struct source *src = rt_open("");
    cr_assert(rt_pump(src, rt_is_done), "never done: status '%s'", src->ops->status(src));
    uint32_t seqs[16];
    cr_assert_eq(rt_agent_events(seqs, 16), 5);
    for (uint32_t k = 0; k < 5; k++)
        cr_assert_eq(seqs[k], k + 1, "event %u has seq %u", k, seqs[k]);
    const struct engine_snap *snap = src->ops->snap(src);
    cr_assert_eq(snap->step, 40, "the summary's steps");
    cr_assert_eq(snap->epoch, 2);
    cr_assert_eq(snap->chunk_bars, 500, "the set_chunk command's result");
    cr_assert_eq(snap->layout.n_segments, 3);
    cr_assert_eq(snap->layout.n_listed, 1);
    cr_assert_eq(snap->layout.seg[0].n_blocks, 2);
    cr_assert_eq(snap->state, ENGINE_FINISHED);
    cr_assert_eq(snap->best_val_loss, 0.2);
    cr_assert_str_eq(src->ops->status(src), "the agent's run finished");
    cr_assert_eq(src->ops->now_ns(src), RT_T0 + 5000000, "the clock stops at the end");
    cr_assert_eq(rt_requests(), 1, "no reconnection after the summary");
    src->ops->destroy(src);
}

Test(remote, kernel_log_events_leave_no_gap) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = rt_begin(&buf, &len);
    rt_run(f, RT_T0);
    rt_events(f, 1, 7, true); /* 1, 3, 5, 7 kernel-log; 2, 4, 6 phases */
    rt_summary(f);
    rt_script_end(f, &buf, false);
    struct source *src = rt_open("");
    cr_assert(rt_pump(src, rt_is_done));
    static struct ui_model m;
    ui_model_init(&m);
    for (size_t i = 0; i < rt_n; i++)
        ui_model_add(&m, &rt_got[i]);
    cr_assert_eq(m.events_seen, 3);
    cr_assert_eq(m.gaps, 0);
    cr_assert_eq(m.kmsg_seen, 4);
    cr_assert_eq(m.kmsg_gaps, 0);
    src->ops->destroy(src);
}

Test(remote, status_line_gives_telemetry_kmsg_and_inflight) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = rt_begin(&buf, &len);
    rt_run(f, RT_T0);
    rt_status(f, false, RT_T0 + 3000000000ull);
    rt_script_end(f, &buf, true);
    uint64_t before = mono_now_ns();
    struct source *src = rt_open("");
    cr_assert(rt_pump(src, rt_has_tele));
    const struct tele_snap *t = src->ops->tele(src);
    cr_assert_eq(t->n_gpus, 1);
    cr_assert_str_eq(t->gpus[0].pci, "0000:03:00.0");
    cr_assert_eq(t->gpus[0].f[TELE_F_TEMP], 61);
    cr_assert_eq(t->gpus[0].src[TELE_F_TEMP], 1);
    struct kmsg_stats ks;
    const char *reason = NULL;
    cr_assert(src->ops->kmsg(src, &ks, &reason));
    cr_assert_eq(ks.state, KMSG_STATE_LIVE);
    cr_assert_eq(ks.lines, 12);
    cr_assert_eq(ks.events, 2);
    cr_assert_str_eq(reason, "");
    struct trace_inflight inf;
    cr_assert(src->ops->inflight(src, 0, &inf));
    cr_assert_eq(inf.op, SYNC_OP_STREAM);
    cr_assert_eq(inf.phase, PHASE_BACKWARD);
    cr_assert_eq(inf.start_ns, RT_T0 + 3000000000ull - 5);
    cr_assert_not(src->ops->inflight(src, 1, &inf), "another device");
    /* the agent's clock: its t_ns when the line came, and ours since */
    uint64_t now = src->ops->now_ns(src), waited = mono_now_ns() - before;
    cr_assert_geq(now, RT_T0 + 3000000000ull);
    cr_assert_leq(now, RT_T0 + 3000000000ull + waited);
    cr_assert_str_eq(src->run.control_off,
                     "read-only: the agent was not started with --allow-control");
    src->ops->destroy(src);
}

Test(remote, reconnects_where_it_left_off) {
    char *buf = NULL, req[1024];
    size_t len = 0;
    FILE *f = rt_begin(&buf, &len);
    rt_run(f, RT_T0);
    rt_events(f, 1, 3, false);
    rt_script_end(f, &buf, false); /* and the connection drops */
    f = rt_begin(&buf, &len);
    rt_run(f, RT_T0);
    rt_events(f, 3, 5, false); /* 3 again: already seen */
    rt_summary(f);
    rt_script_end(f, &buf, false);
    struct source *src = rt_open("");
    cr_assert(rt_pump(src, rt_is_done), "never done: status '%s'", src->ops->status(src));
    rt_await_request(1, req, sizeof(req));
    cr_assert(strncmp(req, "GET /events?since=3 HTTP/1.0\r\n", 30) == 0, "%s", req);
    uint32_t seqs[16];
    cr_assert_eq(rt_agent_events(seqs, 16), 5, "none lost, none twice");
    for (uint32_t k = 0; k < 5; k++)
        cr_assert_eq(seqs[k], k + 1);
    cr_assert_not_null(rt_find_log("disconnected from the agent: the agent closed the stream"));
    cr_assert_not_null(rt_find_log("reconnected to the agent (after event 3)"));
    static struct ui_model m;
    ui_model_init(&m);
    for (size_t i = 0; i < rt_n; i++)
        ui_model_add(&m, &rt_got[i]);
    cr_assert_eq(m.gaps, 0, "a resumed stream is no gap");
    src->ops->destroy(src);
}

/* Drain until the source's status holds needle (false after RT_WAIT_MS); it changes with
 * time alone, so it is looked at every 20 ms as well as at every wake-up. */
static bool rt_await_status(struct source *s, const char *needle) {
    uint64_t deadline = mono_now_ns() + RT_WAIT_MS * 1000000ull;
    while (!strstr(s->ops->status(s), needle)) {
        if (mono_now_ns() >= deadline)
            return false;
        struct pollfd pf = {s->ops->wake_fd(s), POLLIN, 0};
        poll(&pf, 1, 20);
        rt_n += s->ops->drain(s, rt_got + rt_n, sizeof(rt_got) / sizeof(rt_got[0]) - rt_n);
    }
    return true;
}

#define RT_DRIP_HEAD                                                                               \
    "HTTP/1.0 200 OK\r\nX-Pad: "                                                                   \
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n"

/* An agent that accepts and then drips its answer, or answers the head and nothing more: the
 * header says what attach waits for and for how long, and the deadline for the answer's head
 * (the timeout, not put off by each byte) sends it back to reconnecting. */
Test(remote, a_silent_or_dripping_agent_shows_why_and_is_left) {
    char *buf = NULL, req[1024], want[128];
    size_t len = 0;
    FILE *f = rt_begin(&buf, &len);
    rt_run(f, RT_T0);
    rt_script_end(f, &buf, false);     /* and the connection drops */
    rt_script_drip(RT_DRIP_HEAD, 100); /* 8 s of head, one byte each 100 ms */
    rt_script("GET /events", strdup("HTTP/1.0 200 OK\r\n\r\n"), true); /* then nothing */
    struct remote_conf c;
    remote_conf_default(&c);
    snprintf(c.url, sizeof(c.url), "%s", rt_agent.url);
    c.retry_ms = 50;
    c.timeout_ms = 1200;
    struct source *src = NULL;
    char err[512] = "";
    cr_assert_eq(remote_open(&src, &c, err, sizeof(err)), 0, "%s", err);
    snprintf(want, sizeof(want), "connecting to 127.0.0.1:%u: no response for 1 s", rt_agent.port);
    rt_await_request(1, req, sizeof(req));
    uint64_t t0 = mono_now_ns(); /* (at most the 100 ms of the first byte later than the request) */
    cr_assert(rt_await_status(src, want), "status '%s'", src->ops->status(src));
    rt_await_request(2, req, sizeof(req)); /* the head's deadline passed: a new connection */
    uint64_t took = mono_now_ns() - t0;
    cr_log_info("a dripping agent is left %.2f s after the request", (double)took / 1e9);
    cr_assert(took > 1000000000u && took < 2500000000u, "%llu ns", (unsigned long long)took);
    snprintf(want, sizeof(want), "connected to 127.0.0.1:%u: waiting for the first event",
             rt_agent.port);
    cr_assert(rt_await_status(src, want), "status '%s'", src->ops->status(src));
    cr_assert(rt_await_status(src, "waiting for the first event (1 s)"), "status '%s'",
              src->ops->status(src));
    rt_await_request(3, req, sizeof(req)); /* the read timed out: a new connection */
    src->ops->destroy(src);
}

Test(remote, follows_a_restarted_agent) {
    char *buf = NULL, req[1024];
    size_t len = 0;
    FILE *f = rt_begin(&buf, &len);
    rt_run(f, RT_T0);
    rt_events(f, 1, 2, false);
    rt_script_end(f, &buf, false);
    f = rt_begin(&buf, &len); /* since=2 to a new agent: its run line says so */
    rt_run(f, RT_T1);
    rt_script_end(f, &buf, false);
    f = rt_begin(&buf, &len); /* since=0: the new run from its start */
    rt_run(f, RT_T1);
    rt_events(f, 1, 1, false);
    rt_summary(f);
    rt_script_end(f, &buf, false);
    struct source *src = rt_open("");
    cr_assert(rt_pump(src, rt_is_done), "never done: status '%s'", src->ops->status(src));
    rt_await_request(2, req, sizeof(req));
    cr_assert(strncmp(req, "GET /events?since=0 ", 20) == 0, "%s", req);
    rt_await_request(1, req, sizeof(req));
    cr_assert(strncmp(req, "GET /events?since=2 ", 20) == 0, "%s", req);
    uint32_t seqs[16];
    cr_assert_eq(rt_agent_events(seqs, 16), 3);
    cr_assert_eq(seqs[2], 1, "the new run's first event");
    cr_assert_not_null(rt_find_log("the agent restarted"));
    cr_assert_eq(src->run.start_ns, RT_T1);
    cr_assert_str_eq(src->run.origin, rt_agent.url);
    cr_assert_str_eq(src->ops->status(src), "the agent restarted: following its new run");
    cr_assert_eq(src->ops->snap(src)->start_ns, RT_T1);
    src->ops->destroy(src);
}

/* Two agents behind one address: every connection's run differs from the last. The first change
 * is followed at once; then the waits double (from a tenth of retry_ms: 10, 20, 40, 80, 160,
 * 320 ms here, jitter only adds), with one notice, until a connection is steady again. */
Test(remote, a_run_that_changes_at_every_connection_backs_off) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = rt_begin(&buf, &len);
    rt_run(f, RT_T0);
    rt_events(f, 1, 2, false);
    rt_script_end(f, &buf, false);
    for (int k = 0; k < 7; k++) { /* T1, T0, T1, ...: seven changes */
        f = rt_begin(&buf, &len);
        rt_run(f, k % 2 == 0 ? RT_T1 : RT_T0);
        rt_script_end(f, &buf, false);
    }
    f = rt_begin(&buf, &len); /* steady at last: the run of the seventh change, T1 */
    rt_run(f, RT_T1);
    rt_events(f, 1, 1, false);
    rt_summary(f);
    rt_script_end(f, &buf, false);
    uint64_t t0 = mono_now_ns();
    struct source *src = rt_open_retry("", 100);
    cr_assert(rt_pump(src, rt_is_done), "never done: status '%s'", src->ops->status(src));
    uint64_t took_ms = (mono_now_ns() - t0) / 1000000u;
    cr_assert_eq(rt_requests(), 9);
    cr_assert_geq(took_ms, 10 + 20 + 40 + 80 + 160 + 320, "reconnected in a tight loop (%llu ms)",
                  (unsigned long long)took_ms);
    size_t notices = 0;
    for (size_t i = 0; i < rt_n; i++)
        notices += rt_got[i].kind == EV_LOG &&
                   strstr(rt_got[i].u.text.text, "changes at every connection") != NULL;
    cr_assert_eq(notices, 1);
    cr_assert_eq(src->run.start_ns, RT_T1);
    src->ops->destroy(src);
}

/* ---- keys ---- */

Test(remote, keys_without_control_send_nothing) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = rt_begin(&buf, &len);
    rt_run(f, RT_T0);
    rt_script_end(f, &buf, true);
    struct source *src = rt_open("s3cret");
    char msg[160];
    cr_assert(src->ops->action(src, SOURCE_CHUNK_UP, msg, sizeof(msg)));
    cr_assert_str_eq(msg, "read-only: waiting for the agent's status");
    cr_assert_not(src->ops->action(src, SOURCE_ACTIONS, msg, sizeof(msg)), "no such action");
    cr_assert_not(src->ops->action(src, (enum source_action)0x170, msg, sizeof(msg)));
    src->ops->destroy(src);
    cr_assert_eq(rt_requests(), 1, "only /events");
}

Test(remote, keys_with_control_but_no_token) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = rt_begin(&buf, &len);
    rt_run(f, RT_T0);
    rt_status(f, true, RT_T0);
    rt_script_end(f, &buf, true);
    struct source *src = rt_open("");
    cr_assert(rt_pump(src, rt_has_status));
    cr_assert_str_eq(src->run.control_off, "read-only: give the agent's token with --token-file");
    char msg[160];
    for (unsigned act = 0; act < SOURCE_ACTIONS; act++) {
        cr_assert(src->ops->action(src, (enum source_action)act, msg, sizeof(msg)));
        cr_assert_str_eq(msg, src->run.control_off);
    }
    src->ops->destroy(src);
    cr_assert_eq(rt_requests(), 1, "only /events");
}

/* Up and down go as chunk_step 1 and -1: the agent's engine steps from its own size. */
Test(remote, chunk_up_and_down_send_chunk_step_with_the_token) {
    char *buf = NULL, req[1024], want[96];
    size_t len = 0;
    FILE *f = rt_begin(&buf, &len);
    rt_run(f, RT_T0);
    rt_status(f, true, RT_T0);
    rt_script_end(f, &buf, true);
    for (int k = 0; k < 2; k++) {
        char *answer = malloc(256);
        cr_assert(answer);
        snprintf(answer, 256,
                 "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n"
                 "{\"ok\":true,\"message\":\"chunk_step %s requested\"}",
                 k ? "-1" : "+1");
        rt_script("POST /control", answer, false);
    }
    struct source *src = rt_open("s3cret");
    cr_assert(rt_pump(src, rt_has_control), "control_off '%s'", src->run.control_off);
    char msg[160];
    cr_assert(src->ops->action(src, SOURCE_CHUNK_UP, msg, sizeof(msg)));
    cr_assert_str_eq(msg, "sent: chunk_step +1");
    rt_await_request(1, req, sizeof(req));
    snprintf(want, sizeof(want), "POST /control?cmd=chunk_step&arg=1 HTTP/1.0\r\n");
    cr_assert(strncmp(req, want, strlen(want)) == 0, "%s", req);
    cr_assert(strstr(req, "\r\nAuthorization: Bearer s3cret\r\n"), "%s", req);
    cr_assert(src->ops->action(src, SOURCE_CHUNK_DOWN, msg, sizeof(msg)));
    cr_assert_str_eq(msg, "sent: chunk_step -1");
    rt_await_request(2, req, sizeof(req));
    snprintf(want, sizeof(want), "POST /control?cmd=chunk_step&arg=-1 HTTP/1.0\r\n");
    cr_assert(strncmp(req, want, strlen(want)) == 0, "%s", req);
    cr_assert(rt_pump(src, rt_has_answers), "the answers never came to the events panel");
    cr_assert_not_null(rt_find_log("agent: chunk_step: chunk_step +1 requested"));
    cr_assert_not_null(rt_find_log("agent: chunk_step: chunk_step -1 requested"));
    rt_await_request(0, req, sizeof(req));
    cr_assert(strstr(req, "\r\nAuthorization: Bearer s3cret\r\n"), "/events too: %s", req);
    src->ops->destroy(src);
}

/* p asks for a pause while the agent's loop runs, c and m for a cleanup and a probe. */
Test(remote, the_other_actions_send_their_commands) {
    char *buf = NULL, req[1024];
    size_t len = 0;
    FILE *f = rt_begin(&buf, &len);
    rt_run(f, RT_T0);
    rt_status(f, true, RT_T0);
    rt_script_end(f, &buf, true);
    struct source *src = rt_open("s3cret");
    cr_assert(rt_pump(src, rt_has_control), "control_off '%s'", src->run.control_off);
    static const struct {
        enum source_action act;
        const char *msg, *path;
    } want[] = {{SOURCE_PAUSE_TOGGLE, "sent: pause", "POST /control?cmd=pause HTTP/1.0\r\n"},
                {SOURCE_CLEANUP, "sent: cleanup", "POST /control?cmd=cleanup HTTP/1.0\r\n"},
                {SOURCE_PROBE, "sent: probe", "POST /control?cmd=probe HTTP/1.0\r\n"}};
    for (unsigned k = 0; k < 3; k++) {
        char msg[160];
        cr_assert(src->ops->action(src, want[k].act, msg, sizeof(msg)));
        cr_assert_str_eq(msg, want[k].msg);
        rt_await_request(k + 1, req, sizeof(req));
        cr_assert(strncmp(req, want[k].path, strlen(want[k].path)) == 0, "%s", req);
    }
    src->ops->destroy(src);
}

Test(remote, stop_returns_at_once_while_the_reader_waits) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = rt_begin(&buf, &len);
    rt_run(f, RT_T0);
    rt_script_end(f, &buf, true); /* then nothing: the reader blocks in its read */
    struct source *src = rt_open("");
    uint64_t t0 = mono_now_ns();
    src->ops->stop(src);
    uint64_t t1 = mono_now_ns();
    cr_assert(src->ops->done(src));
    src->ops->destroy(src);
    uint64_t t2 = mono_now_ns();
    cr_assert_lt(t1 - t0, 100000000ull, "stop took %llu ns", (unsigned long long)(t1 - t0));
    cr_assert_lt(t2 - t0, 200000000ull, "destroy took %llu ns", (unsigned long long)(t2 - t0));
}

/* ---- the HTTP client ---- */

struct rt_url {
    char in[64];
    int rc;
    char host[32];
    unsigned port;
    char base[32];
    char unix_path[32];
    char why[64]; /* a piece of the reason */
    bool tls;
};

ParameterizedTestParameters(remote, url_parse) {
    static struct rt_url p[] = {
        {"http://localhost", 0, "localhost", 9464, "", "", "", false},
        {"http://10.0.0.2:8080/ringside/", 0, "10.0.0.2", 8080, "/ringside", "", "", false},
        {"HTTP://gpu-box.lan:9464/", 0, "gpu-box.lan", 9464, "", "", "", false},
        {"http://[::1]:9000", 0, "::1", 9000, "", "", "", false},
        {"http://[fe80::1]", 0, "fe80::1", 9464, "", "", "", false},
        {"unix:/run/ringside.sock", 0, "localhost", 0, "", "/run/ringside.sock", "", false},
        {"unix:///tmp/a.sock", 0, "localhost", 0, "", "/tmp/a.sock", "", false},
        {"https://x", 0, "x", 9464, "", "", "", true},
        {"HTTPS://[::1]:443/a/", 0, "::1", 443, "/a", "", "", true},
        {"ftp://x", -EINVAL, "", 0, "", "", "only http://, https:// and unix: URLs", false},
        {"localhost:9464", -EINVAL, "", 0, "", "", "only http://, https:// and unix: URLs", false},
        {"https://", -EINVAL, "", 0, "", "", "no host", false},
        {"https://h:65536", -EINVAL, "", 0, "", "", "port '65536'", false},
        {"http://h:99999", -EINVAL, "", 0, "", "", "port '99999' is not a number in 1..65535",
         false},
        {"http://h:0", -EINVAL, "", 0, "", "", "port '0'", false},
        {"http://h:", -EINVAL, "", 0, "", "", "port ''", false},
        {"http://h:80x", -EINVAL, "", 0, "", "", "port '80x'", false},
        {"http://", -EINVAL, "", 0, "", "", "no host", false},
        {"http://:9464", -EINVAL, "", 0, "", "", "no host", false},
        {"http://u:p@h", -EINVAL, "", 0, "", "", "user names", false},
        {"http://h/x?y=1", -EINVAL, "", 0, "", "", "without ? or #", false},
        {"http://h?y", -EINVAL, "", 0, "", "", "without ? or #", false},
        {"http://h/a b", -EINVAL, "", 0, "", "", "a space or control character", false},
        {"http://h_h!", -EINVAL, "", 0, "", "", "not a host name", false},
        {"http://[::1", -EINVAL, "", 0, "", "", "needs [ and ]", false},
        {"http://[::1]x", -EINVAL, "", 0, "", "", "text after the IPv6 address", false},
        {"http://[zz]", -EINVAL, "", 0, "", "", "not an IPv6 address", false},
        {"unix:", -EINVAL, "", 0, "", "", "no socket path", false},
    };
    return cr_make_param_array(struct rt_url, p, sizeof(p) / sizeof(p[0]));
}

ParameterizedTest(struct rt_url *p, remote, url_parse) {
    struct http_url u;
    char why[256] = "";
    cr_assert_eq(http_url_parse(p->in, &u, why, sizeof(why)), p->rc, "'%s': %s", p->in, why);
    if (p->rc != 0) {
        cr_assert(strstr(why, p->why), "'%s': why is '%s', want '%s'", p->in, why, p->why);
        return;
    }
    cr_assert_str_eq(u.host, p->host);
    cr_assert_eq(u.port, p->port);
    cr_assert_eq(u.tls, p->tls, "'%s'", p->in);
    cr_assert_str_eq(u.base, p->base);
    cr_assert_str_eq(u.unix_path, p->unix_path);
}

struct rt_clear {
    char url[48];
    char token[16];
    bool warned; /* the token crosses a network in clear */
};

/* The warning before a token goes out over plain http:// to another machine: loopback hosts
 * (by name, any address of 127.0.0.0/8, ::1 however written), unix: and https:// keep it;
 * without a token, or with a URL that does not parse, there is nothing to warn of. */
ParameterizedTestParameters(remote, token_in_clear) {
    static struct rt_clear p[] = {
        {"http://10.0.0.2:9464", "s3cret", true},
        {"http://gpu-box.lan", "s3cret", true},
        {"http://[fe80::1]:9464", "s3cret", true},
        {"http://[::ffff:10.0.0.2]", "s3cret", true},
        {"http://128.0.0.1", "s3cret", true},
        {"http://localhost.evil.example", "s3cret", true},
        {"http://0.0.0.0:9464", "s3cret", true},
        {"http://127.0.0.1:9464", "s3cret", false},
        {"http://127.255.3.4", "s3cret", false},
        {"http://LOCALHOST:9464/base", "s3cret", false},
        {"http://[::1]:9464", "s3cret", false},
        {"http://[0:0:0:0:0:0:0:1]", "s3cret", false},
        {"unix:/run/ringside.sock", "s3cret", false},
        {"https://10.0.0.2:9464", "s3cret", false},
        {"https://gpu-box.lan", "s3cret", false},
        {"http://10.0.0.2:9464", "", false},
        {"http://10.0.0.2:99999", "s3cret", false},
    };
    return cr_make_param_array(struct rt_clear, p, sizeof(p) / sizeof(p[0]));
}

ParameterizedTest(struct rt_clear *p, remote, token_in_clear) {
    struct remote_conf c;
    remote_conf_default(&c);
    snprintf(c.url, sizeof(c.url), "%s", p->url);
    snprintf(c.token, sizeof(c.token), "%s", p->token);
    cr_assert_eq(remote_token_in_clear(&c), p->warned, "'%s' with token '%s'", p->url, p->token);
}

Test(remote, url_parse_long_unix_path) {
    char s[200] = "unix:/";
    struct http_url u;
    char why[256] = "";
    memset(s + 6, 'a', 150);
    cr_assert_eq(http_url_parse(s, &u, why, sizeof(why)), -EINVAL);
    cr_assert(strstr(why, "a socket path is at most 107 bytes"), "%s", why);
}

/* GET path from the fake agent: the connection and its status. */
static struct http_conn *rt_get(const char *path, int timeout_ms, int want_rc, int *status,
                                char *why, size_t whylen) {
    struct http_url u;
    cr_assert_eq(http_url_parse(rt_agent.url, &u, why, whylen), 0);
    struct http_conn *c = NULL;
    cr_assert_eq(
        http_request(&c, &u, "GET", path, "text/plain", "", NULL, timeout_ms, status, why, whylen),
        want_rc, "%s", why);
    return c;
}

Test(remote, http_lines_crlf_length_and_end) {
    /* Content-Length stops the body before the EXTRA the server sends after it */
    rt_script("GET /x",
              strdup("HTTP/1.1 200 OK\r\nContent-Length: 11\r\nX-A: b\r\n\r\n"
                     "ab\r\n\ncd\nefgEXTRA\n"),
              false);
    int status = 0;
    char why[256] = "";
    struct http_conn *c = rt_get("/x", RT_WAIT_MS, 0, &status, why, sizeof(why));
    cr_assert_eq(status, 200);
    const char *line;
    size_t len;
    const char *want[] = {"ab", "", "cd", "efg"};
    for (size_t k = 0; k < 4; k++) {
        cr_assert_eq(http_read_line(c, &line, &len, 100), 1);
        cr_assert_eq(len, strlen(want[k]));
        cr_assert(memcmp(line, want[k], len) == 0, "line %zu: '%.*s'", k, (int)len, line);
    }
    cr_assert_eq(http_read_line(c, &line, &len, 100), 0);
    cr_assert_eq(http_read_line(c, &line, &len, 100), 0, "and stays at the end");
    http_close(c);
}

Test(remote, http_line_over_the_limit) {
    char *text = malloc(70000);
    cr_assert(text);
    int n = snprintf(text, 70000, "HTTP/1.0 200 OK\r\n\r\nshort\n");
    memset(text + n, 'x', 65536);
    snprintf(text + n + 65536, 70000 - (size_t)n - 65536, "\nafter\n");
    rt_script("GET /big", text, false);
    int status = 0;
    char why[256] = "";
    struct http_conn *c = rt_get("/big", RT_WAIT_MS, 0, &status, why, sizeof(why));
    const char *line;
    size_t len;
    cr_assert_eq(http_read_line(c, &line, &len, 4096), 1);
    cr_assert_eq(len, 5);
    cr_assert_eq(http_read_line(c, &line, &len, 4096), -E2BIG);
    http_close(c);
}

Test(remote, http_body_and_errors) {
    rt_script("GET /body", strdup("HTTP/1.0 403 Forbidden\r\n\r\n{\"ok\":false}"), false);
    rt_script("GET /silent", strdup(""), true);
    int status = 0;
    char why[256] = "";
    struct http_conn *c = rt_get("/body", RT_WAIT_MS, 0, &status, why, sizeof(why));
    cr_assert_eq(status, 403);
    char *body = NULL;
    size_t len = 0;
    cr_assert_eq(http_read_body(c, &body, &len, 64), 0);
    cr_assert_str_eq(body, "{\"ok\":false}");
    cr_assert_eq(len, 12);
    free(body);
    http_close(c);
    c = rt_get("/silent", 100, -ETIMEDOUT, &status, why, sizeof(why));
    cr_assert_null(c);
    cr_assert(strstr(why, "timed out waiting for the answer"), "%s", why);
    /* a head that drips in faster than the timeout still has the timeout for the whole */
    rt_script("GET /drip", strdup(RT_DRIP_HEAD), true);
    pthread_mutex_lock(&rt_agent.mu);
    rt_agent.script[rt_agent.n_script - 1].drip_ms = 20; /* 1.5 s in all */
    pthread_mutex_unlock(&rt_agent.mu);
    uint64_t t0 = mono_now_ns();
    c = rt_get("/drip", 300, -ETIMEDOUT, &status, why, sizeof(why));
    uint64_t took = mono_now_ns() - t0;
    cr_assert_null(c);
    cr_assert(strstr(why, "timed out waiting for the answer (none in 0.3 s)"), "%s", why);
    cr_assert_lt(took, 1000000000u, "%llu ns", (unsigned long long)took);
    c = rt_get("bad path", 100, -EINVAL, &status, why, sizeof(why));
    cr_assert_null(c);
}
