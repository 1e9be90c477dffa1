/* The agent's HTTP limits under threads: clients that drip their requests on more connections
 * than the server holds, from one address (127.0.0.1), reopening at once those the server
 * closes, while others ask for /healthz from another (127.0.0.2); every /healthz must be
 * answered (each pushes out a dripper: the busiest address's oldest), and the drippers are
 * pushed out, or cut at the deadline once they stop reopening. */
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "tests/threads/thread_cases.h"
#include "tui/agent/agent_http.h"
#include "tui/agent/agent_log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define TG_FAIL(...)  errbuf_set(why, whylen, -1, __VA_ARGS__)
#define TG_DRIPPERS   3  /* threads */
#define TG_CONNS      4  /* connections each keeps open: more than the address may hold */
#define TG_CHECKERS   2  /* threads asking for /healthz */
#define TG_CHECKS     20 /* each */
#define TG_DRIP_MS    20 /* a byte on every connection this often */
#define TG_WAIT_MS    10000
#define TG_REQUEST_MS 100

struct tg_run {
    unsigned port;
    atomic_bool done; /* the checkers finished: the drippers stop reopening */
};

struct tg_checker {
    struct tg_run *run;
    int ok;
    char err[160];
};

/* A connection to 127.0.0.1:port from 127.0.0.1 + from. */
static int tg_connect(unsigned port, unsigned from) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {TG_WAIT_MS / 1000, 0};
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct sockaddr_in me = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK + from)};
    if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
                    bind(fd, (struct sockaddr *)&me, sizeof(me)) != 0 ||
                    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* GET /healthz on a new connection: its status, or -1. */
static int tg_healthz(unsigned port) {
    int fd = tg_connect(port, 1);
    if (fd < 0)
        return -1;
    static const char req[] = "GET /healthz HTTP/1.0\r\n\r\n";
    char buf[512];
    size_t len = 0;
    int status = -1;
    if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) == (ssize_t)sizeof(req) - 1) {
        ssize_t n;
        while (len + 1 < sizeof(buf) && (n = recv(fd, buf + len, sizeof(buf) - len - 1, 0)) > 0)
            len += (size_t)n;
        buf[len] = '\0';
        if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
            status = -1;
    }
    close(fd);
    return status;
}

static void *tg_checker_thread(void *arg) {
    struct tg_checker *c = arg;
    for (int k = 0; k < TG_CHECKS; k++) {
        int status = tg_healthz(c->run->port);
        if (status == 200)
            c->ok++;
        else if (!c->err[0])
            snprintf(c->err, sizeof(c->err), "/healthz %d: %d", k + 1, status);
    }
    return NULL;
}

/* A dripping connection: its request line and a header begun. */
static int tg_drip_open(unsigned port) {
    int fd = tg_connect(port, 0);
    static const char start[] = "GET /healthz HTTP/1.0\r\nX-Slow: ";
    if (fd >= 0)
        send(fd, start, sizeof(start) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    return fd;
}

/* Closed by the server: the end or a reset is there to read. */
static bool tg_drip_closed(int fd) {
    char b[256];
    ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static void *tg_dripper_thread(void *arg) {
    struct tg_run *run = arg;
    int fd[TG_CONNS];
    for (int k = 0; k < TG_CONNS; k++)
        fd[k] = tg_drip_open(run->port);
    uint64_t until = mono_now_ns() + TG_WAIT_MS * 1000000ull;
    for (int open = TG_CONNS; open > 0 && mono_now_ns() < until;) {
        bool reopen = !atomic_load(&run->done);
        open = 0;
        for (int k = 0; k < TG_CONNS; k++) {
            if (fd[k] >= 0 &&
                (tg_drip_closed(fd[k]) || send(fd[k], "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1)) {
                close(fd[k]);
                fd[k] = -1;
            }
            if (fd[k] < 0 && reopen)
                fd[k] = tg_drip_open(run->port);
            open += fd[k] >= 0;
        }
        poll(NULL, 0, TG_DRIP_MS); /* the drip's pace */
    }
    for (int k = 0; k < TG_CONNS; k++)
        if (fd[k] >= 0)
            close(fd[k]);
    return NULL;
}

static int tg_start(struct agent_log **log, struct agent_http **srv, char *why, size_t whylen) {
    if (agent_log_create(log, 64, 1 << 20) != 0 || agent_log_set_run(*log, "{\"type\":\"run\"}"))
        return TG_FAIL("cannot create the log");
    struct agent_http_conf c;
    agent_http_conf_default(&c);
    snprintf(c.listen, sizeof(c.listen), "127.0.0.1:0");
    c.max_connections = 10; /* fewer than the drippers keep open */
    c.per_address = 10;
    c.request_timeout_ms = TG_REQUEST_MS;
    struct agent_http_handlers h = {.log = *log};
    char err[256] = "";
    if (agent_http_start(srv, &c, &h, err, sizeof(err)) != 0)
        return TG_FAIL("agent_http_start: %s", err);
    return 0;
}

int thread_case_agent_http_drippers(char *why, size_t whylen) {
    struct agent_log *log = NULL;
    struct agent_http *srv = NULL;
    int rc = tg_start(&log, &srv, why, whylen);
    static struct tg_run run;
    static struct tg_checker chk[TG_CHECKERS];
    pthread_t dt[TG_DRIPPERS], ct[TG_CHECKERS];
    int nd = 0, nc = 0;
    run.port = rc == 0 ? agent_http_port(srv) : 0;
    atomic_init(&run.done, false);
    for (; rc == 0 && nd < TG_DRIPPERS; nd++)
        if (pthread_create(&dt[nd], NULL, tg_dripper_thread, &run) != 0)
            rc = TG_FAIL("cannot start a dripper");
    for (; rc == 0 && nc < TG_CHECKERS; nc++) {
        chk[nc] = (struct tg_checker){.run = &run};
        if (pthread_create(&ct[nc], NULL, tg_checker_thread, &chk[nc]) != 0)
            rc = TG_FAIL("cannot start a checker");
    }
    for (int k = 0; k < nc; k++)
        pthread_join(ct[k], NULL);
    atomic_store(&run.done, true); /* the drippers drip on until the server closed them all */
    for (int k = 0; k < nd; k++)
        pthread_join(dt[k], NULL);
    struct agent_http_stats st = {0};
    if (srv)
        agent_http_stats(srv, &st);
    agent_http_stop(srv);
    agent_log_destroy(log);
    for (int k = 0; rc == 0 && k < nc; k++)
        if (chk[k].ok != TG_CHECKS)
            rc = TG_FAIL("checker %d: %d of %d /healthz answered 200 (%s)", k, chk[k].ok, TG_CHECKS,
                         chk[k].err);
    if (rc == 0 && (st.evicted == 0 || st.timed_out == 0))
        rc = TG_FAIL("drippers evicted %llu, timed out %llu: both expected",
                     (unsigned long long)st.evicted, (unsigned long long)st.timed_out);
    return rc;
}
