/* The agent's HTTP endpoint on libmicrohttpd: a thread per connection (so an /events stream
 * may block in agent_follow_read), poll() rather than select() (no FD_SETSIZE ceiling). Here
 * its daemons start and stop (one for the TCP socket and one for the UNIX socket that
 * agent_http_listen.c makes), each connection is admitted and guarded (http_guard.h), and the
 * counters are read; connections over the limit are accepted and closed at once rather than
 * left waiting in the backlog. The requests are agent_http_route.c's. */
#include "tui/agent/agent_http.h"

#include "backend/core/errbuf.h"
#include "tui/agent/agent_http_internal.h"
#include "tui/agent/agent_tls.h"
#include "tui/agent/http_guard.h"
#include "tui/agent/http_quota.h"
#include "tui/agent/http_throttle.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define HTTP_STACK        (256 * 1024) /* a connection thread's stack */
#define HTTP_KEEPALIVE_MS 5000         /* a blank line after this long without data */
#define HTTP_POOL_EXTRA   4096         /* MHD's own per-connection needs beyond the request */
#define HTTP_POOL_MIN     8192
#define HTTP_SHUT_SLACK   64 /* connections shut down by the guard but not yet closed by MHD */

#define HTTP_FOLLOWERS_PER_ADDRESS 8 /* the default share of one address group */

void agent_http_conf_default(struct agent_http_conf *c) {
    memset(c, 0, sizeof(*c));
    snprintf(c->listen, sizeof(c->listen), "%s", AGENT_HTTP_DEFAULT_LISTEN);
    c->max_connections = 256;
    c->max_request_bytes = 8192;
    c->idle_timeout_s = 30;
    c->per_address = 64;
    c->request_timeout_ms = 10000;
}

int agent_http_limits(const struct agent_http_conf *c, unsigned *followers, unsigned *per_address,
                      char *why, size_t whylen) {
    if (c->max_followers && c->max_followers >= c->max_connections)
        return errbuf_set(why, whylen, -EINVAL,
                          "--max-followers %u must be below --max-connections %u (the places "
                          "left are kept for /healthz, /metrics and /control)",
                          c->max_followers, c->max_connections);
    if (c->followers_per_address && c->followers_per_address >= c->per_address)
        return errbuf_set(why, whylen, -EINVAL,
                          "--max-followers-per-address %u must be below --max-per-address %u (the "
                          "places left are kept for the address's short requests)",
                          c->followers_per_address, c->per_address);
    unsigned all = c->max_followers, one = c->followers_per_address;
    if (!all) {
        all = c->max_connections / 4;
        all = all < 1 ? 1 : all;
        all = all >= c->max_connections && c->max_connections > 1 ? c->max_connections - 1 : all;
    }
    if (!one) {
        one = HTTP_FOLLOWERS_PER_ADDRESS;
        if (one >= c->per_address) /* a single place: a follower may take it */
            one = c->per_address > 1 ? c->per_address - 1 : 1;
        one = one > all ? all : one;
    }
    *followers = all;
    *per_address = one;
    return 0;
}

/* ---- connections ---- */

static void http_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode toe) {
    struct agent_http *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        atomic_fetch_add(&s->connections, 1);
        /* each answer copied before the next query: libmicrohttpd 1.0 answers them all in one
         * union of the connection's, which the next query overwrites */
        const union MHD_ConnectionInfo *fi =
            mhd_fn.MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        MHD_socket fd = fi ? fi->connect_fd : MHD_INVALID_SOCKET;
        socklen_t len;
        const struct sockaddr *sa = agent_http_peer(c, &len);
        *socket_context =
            fd != MHD_INVALID_SOCKET ? http_guard_open(s->guard, (int)fd, sa, len) : NULL;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        http_guard_close(s->guard, *socket_context); /* before MHD closes the socket */
        *socket_context = NULL;
        atomic_fetch_sub(&s->connections, 1);
    }
}

/* A connection the guard has no room for (over all listeners, or from its address) is
 * accepted and closed at once. */
static enum MHD_Result http_admit(void *cls, const struct sockaddr *addr, socklen_t addrlen) {
    struct agent_http *s = cls;
    if (atomic_load(&s->stopping) || !http_guard_admit(s->guard, addr, addrlen)) {
        atomic_fetch_add(&s->refused, 1);
        return MHD_NO;
    }
    return MHD_YES;
}

/* ---- daemons ---- */

/* A daemon serving the listening socket fd (it takes fd over, on success), in HTTPS with tls
 * (NULL: HTTP). */
static struct MHD_Daemon *http_daemon(struct agent_http *s, int fd, unsigned flags,
                                      const struct agent_tls *tls) {
    size_t pool = s->conf.max_request_bytes + HTTP_POOL_EXTRA;
    if (pool < HTTP_POOL_MIN)
        pool = HTTP_POOL_MIN;
    /* over the limit: MHD at its limit stops accepting (the backlog fills); http_admit
     * accepts and closes instead, and the connections the guard shut down may still be
     * closing */
    unsigned limit = s->conf.max_connections + HTTP_SHUT_SLACK;
    flags |= MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
    /* MHD keeps these pointers (not copies): tls outlives the daemon */
    struct MHD_OptionItem tls_opts[] = {
        {MHD_OPTION_HTTPS_MEM_KEY, 0, tls ? tls->key_pem : NULL},
        {MHD_OPTION_HTTPS_MEM_CERT, 0, tls ? tls->cert_pem : NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    if (tls)
        flags |= MHD_USE_TLS;
    else
        tls_opts[0].option = MHD_OPTION_END;
    return mhd_fn.MHD_start_daemon(
        flags, 0, http_admit, s, agent_http_access, s, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
        MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool,
        MHD_OPTION_CONNECTION_TIMEOUT, s->conf.idle_timeout_s, MHD_OPTION_THREAD_STACK_SIZE,
        (size_t)HTTP_STACK, MHD_OPTION_NOTIFY_CONNECTION, http_notify, s,
        MHD_OPTION_NOTIFY_COMPLETED, agent_http_completed, s, MHD_OPTION_URI_LOG_CALLBACK,
        agent_http_uri, s, MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_END);
}

/* Start a daemon on fd; on failure fd is closed (unless MHD already did: a socket is known by
 * its inode, which no later descriptor with the same number has). */
static int http_serve_fd(struct agent_http *s, int fd, unsigned flags, const struct agent_tls *tls,
                         struct MHD_Daemon **out, const char *what, char *err, size_t errlen) {
    struct stat before, after;
    fstat(fd, &before);
    errno = 0;
    *out = http_daemon(s, fd, flags, tls);
    if (*out)
        return 0;
    int rc = errno ? -errno : -EIO;
    if (fstat(fd, &after) == 0 && after.st_ino == before.st_ino && after.st_dev == before.st_dev)
        close(fd);
    return errbuf_set(err, errlen, rc, "cannot serve %s on %s: %s", tls ? "HTTPS" : "HTTP", what,
                      strerror(-rc));
}

static int http_check_conf(const struct agent_http_conf *c, char *err, size_t errlen) {
    size_t tl = strnlen(c->token, sizeof(c->token));
    if (tl == sizeof(c->token))
        return errbuf_set(err, errlen, -EINVAL, "the token is over %zu bytes",
                          sizeof(c->token) - 1);
    for (size_t i = 0; i < tl; i++)
        if ((unsigned char)c->token[i] <= 0x20 || (unsigned char)c->token[i] >= 0x7f)
            return errbuf_set(err, errlen, -EINVAL,
                              "the token has a space or a character that is not printable ASCII");
    if (c->allow_control && tl == 0)
        return errbuf_set(err, errlen, -EINVAL, "--allow-control needs --token-file");
    if (!c->listen[0] && !c->unix_path[0])
        return errbuf_set(err, errlen, -EINVAL, "nothing to listen on: give --listen or --unix");
    if (c->max_connections == 0 || c->max_request_bytes == 0 || c->per_address == 0)
        return errbuf_set(err, errlen, -EINVAL, "a zero connection or request size limit");
    if (c->request_timeout_ms == 0)
        return errbuf_set(err, errlen, -EINVAL, "a zero request timeout");
    unsigned followers, per_address;
    int rc = agent_http_limits(c, &followers, &per_address, err, errlen);
    if (rc < 0)
        return rc;
    if (c->tls && (!c->tls->cert_pem || !c->tls->key_pem))
        return errbuf_set(err, errlen, -EINVAL,
                          "TLS without a certificate and key (agent_tls_load)");
    return 0;
}

int agent_http_start(struct agent_http **out, const struct agent_http_conf *c,
                     const struct agent_http_handlers *h, char *err, size_t errlen) {
    int rc = http_check_conf(c, err, errlen);
    if (rc < 0 || (rc = http_libs_server(err, errlen)) != 0)
        return rc;
    struct agent_http *s = calloc(1, sizeof(*s));
    if (!s)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    s->conf = *c;
    s->h = *h;
    snprintf(s->bearer, sizeof(s->bearer), "%s%s", HTTP_BEARER, c->token);
    s->keepalive_ms = HTTP_KEEPALIVE_MS;
    agent_http_limits(c, &s->max_followers, &s->followers_per_address, NULL, 0);
    http_ratelog_init(&s->said_followers, HTTP_SAY_NS);
    http_ratelog_init(&s->said_auth, HTTP_SAY_NS);
    struct http_guard_conf gc = {c->max_connections, c->per_address,
                                 (uint64_t)c->request_timeout_ms * 1000000u};
    struct http_quota_conf qc = {s->max_followers, s->followers_per_address};
    struct http_throttle_conf tc;
    http_throttle_conf_default(&tc);
    tc.failures = c->auth_failures ? c->auth_failures : tc.failures;
    if ((rc = http_guard_create(&s->guard, &gc)) != 0 ||
        (rc = http_quota_create(&s->followers_q, &qc)) != 0 ||
        (rc = http_throttle_create(&s->auth, &tc)) != 0) {
        agent_http_stop(s);
        return errbuf_set(err, errlen, rc, "cannot start the HTTP server: %s", strerror(-rc));
    }
    if (c->idle_timeout_s > 0 && c->idle_timeout_s < 2 * HTTP_KEEPALIVE_MS / 1000)
        s->keepalive_ms = (int)c->idle_timeout_s * 500; /* well inside the idle timeout */
    int fd;
    if (c->listen[0]) {
        bool v6 = false;
        rc = agent_http_tcp_listen(c->listen, &fd, &s->port, &v6, err, errlen);
        if (rc == 0)
            rc = http_serve_fd(s, fd, v6 ? MHD_USE_DUAL_STACK : 0, c->tls, &s->tcp, c->listen, err,
                               errlen);
    }
    if (rc == 0 && c->unix_path[0]) {
        rc = agent_http_unix_listen(s, c->unix_path, &fd, err, errlen);
        if (rc == 0)
            rc = http_serve_fd(s, fd, 0, NULL, &s->unix_d, c->unix_path, err, errlen);
    }
    if (rc < 0) {
        agent_http_stop(s);
        return rc;
    }
    *out = s;
    return 0;
}

unsigned agent_http_port(const struct agent_http *s) {
    return s && s->tcp ? s->port : 0;
}

void agent_http_stats(struct agent_http *s, struct agent_http_stats *out) {
    out->requests = atomic_load(&s->requests);
    out->answered = atomic_load(&s->answered);
    out->unauthorized = atomic_load(&s->unauthorized);
    out->refused = atomic_load(&s->refused);
    out->connections = atomic_load(&s->connections);
    struct http_guard_stats gs;
    http_guard_stats(s->guard, &gs);
    out->timed_out = gs.timed_out;
    out->evicted = gs.evicted;
    out->over_limit = gs.over_limit;
    out->over_address = gs.over_address;
    out->over_followers = atomic_load(&s->over_followers);
    out->over_follower_address = atomic_load(&s->over_follower_address);
    out->auth_failed = atomic_load(&s->auth_failed);
    out->auth_backoff = atomic_load(&s->auth_backoff);
    out->followers = atomic_load(&s->followers);
}

void agent_http_stop(struct agent_http *s) {
    if (!s)
        return;
    atomic_store(&s->stopping, true);
    if (s->h.log)
        agent_log_wake(s->h.log); /* streams waiting in the log look at stopping now */
    if (s->tcp)
        mhd_fn.MHD_stop_daemon(s->tcp);
    if (s->unix_d)
        mhd_fn.MHD_stop_daemon(s->unix_d);
    agent_http_unix_remove(s);
    http_guard_destroy(s->guard); /* after the daemons: every connection is closed */
    http_quota_destroy(s->followers_q);
    http_throttle_destroy(s->auth);
    agent_http_say_rest(s);
    http_ratelog_fini(&s->said_followers);
    http_ratelog_fini(&s->said_auth);
    free(s);
}
