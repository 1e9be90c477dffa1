/* The agent's HTTP endpoint on libmicrohttpd: a thread per connection (so an /events stream
 * may block in agent_follow_read), poll() rather than select() (no FD_SETSIZE ceiling). The
 * listening sockets are made here (a TCP one and/or a UNIX one, each served by its own daemon)
 * so that a failure says exactly why; connections over the limit are accepted and closed at once
 * rather than left waiting in the backlog. Nothing from a request reaches a shell or a path. */
#include "tui/agent/agent_http.h"

#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/vpoc/vpoc.h"
#include "tui/agent/agent_http_parse.h"
#include "tui/agent/http_guard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define HTTP_BLOCK          (64 * 1024)  /* an /events response's buffer */
#define HTTP_STACK          (256 * 1024) /* a connection thread's stack */
#define HTTP_WAIT_MS        1000         /* an /events wait, between looks at stopping */
#define HTTP_KEEPALIVE_MS   5000         /* a blank line after this long without data */
#define HTTP_BACKLOG        128
#define HTTP_POOL_EXTRA     4096 /* MHD's own per-connection needs beyond the request */
#define HTTP_POOL_MIN       8192
#define HTTP_SHUT_SLACK     64 /* connections shut down by the guard but not yet closed by MHD */
#define HTTP_CT_TEXT        "text/plain; charset=utf-8"
#define HTTP_CT_PROM        "text/plain; version=0.0.4; charset=utf-8"
#define HTTP_CT_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"
#define HTTP_CT_NDJSON      "application/x-ndjson"
#define HTTP_CT_JSON        "application/json"
#define HTTP_BEARER         "Bearer "

enum http_route { HTTP_NONE, HTTP_METRICS, HTTP_EVENTS, HTTP_HEALTHZ, HTTP_CONTROL };

struct agent_http {
    struct agent_http_conf conf;
    struct agent_http_handlers h;
    char bearer[sizeof(HTTP_BEARER) + AGENT_HTTP_TOKEN_BYTES]; /* the Authorization to match */
    struct MHD_Daemon *tcp, *unix_d;
    struct http_guard *guard; /* the request deadline and the connection limits */
    unsigned port;
    bool unix_made; /* unix_path is ours to remove at stop (unix_dev/ino: the one we made) */
    dev_t unix_dev;
    ino_t unix_ino;
    int keepalive_ms;
    atomic_bool stopping;
    atomic_uint_fast64_t requests, answered, unauthorized, refused;
    atomic_uint connections, followers;
};

/* One request's state (MHD's per-request pointer), freed when it completes. */
struct http_req {
    enum http_route route;
    bool head;     /* HEAD: the headers of the GET */
    bool answered; /* a response is queued */
    uint64_t body; /* bytes of body seen */
};

/* One /events response's state, freed with the response. */
struct http_stream {
    struct agent_http *s;
    struct agent_follow *f;
    bool follow;
};

void agent_http_conf_default(struct agent_http_conf *c) {
    memset(c, 0, sizeof(*c));
    snprintf(c->listen, sizeof(c->listen), "%s", AGENT_HTTP_DEFAULT_LISTEN);
    c->max_connections = 256;
    c->max_request_bytes = 8192;
    c->idle_timeout_s = 30;
    c->per_address = 64;
    c->request_timeout_ms = 10000;
}

/* ---- the listen address ---- */

/* A port: 1 to 5 digits, at most 65535. */
static bool http_parse_port(const char *p, unsigned *port) {
    size_t n = strlen(p);
    if (n == 0 || n > 5 || strspn(p, "0123456789") != n)
        return false;
    unsigned long v = strtoul(p, NULL, 10);
    if (v > 65535)
        return false;
    *port = (unsigned)v;
    return true;
}

int agent_http_parse_listen(const char *s, char *addr, size_t addrlen, unsigned *port, char *why,
                            size_t whylen) {
    if (!s || !*s)
        return errbuf_set(why, whylen, -EINVAL, "no listen address: give ADDR:PORT (e.g. %s)",
                          AGENT_HTTP_DEFAULT_LISTEN);
    const char *host = s, *host_end, *p;
    int family = AF_INET;
    if (*s == '[') {
        host = s + 1;
        host_end = strchr(host, ']');
        if (!host_end)
            return errbuf_set(why, whylen, -EINVAL, "'%s': no ']' after the IPv6 address", s);
        if (host_end[1] != ':')
            return errbuf_set(why, whylen, -EINVAL, "'%s': no :PORT after the ']'", s);
        p = host_end + 2;
        family = AF_INET6;
    } else {
        host_end = strrchr(s, ':');
        if (!host_end)
            return errbuf_set(why, whylen, -EINVAL, "'%s': no port: give ADDR:PORT (e.g. %s)", s,
                              AGENT_HTTP_DEFAULT_LISTEN);
        if (memchr(s, ':', (size_t)(host_end - s)))
            return errbuf_set(why, whylen, -EINVAL,
                              "'%s': an IPv6 address goes in brackets: [ADDR]:PORT", s);
        p = host_end + 1;
    }
    char h[INET6_ADDRSTRLEN];
    size_t hl = (size_t)(host_end - host);
    if (hl == 0)
        return errbuf_set(why, whylen, -EINVAL,
                          "'%s': no address before the port (0.0.0.0 for every interface)", s);
    if (hl >= sizeof(h))
        return errbuf_set(why, whylen, -EINVAL, "'%s': the address is not an IP address", s);
    memcpy(h, host, hl);
    h[hl] = '\0';
    if (family == AF_INET && strcmp(h, "localhost") == 0)
        snprintf(h, sizeof(h), "127.0.0.1");
    unsigned char bin[sizeof(struct in6_addr)];
    if (inet_pton(family, h, bin) != 1)
        return errbuf_set(why, whylen, -EINVAL, "'%s': '%s' is not an %s address", s, h,
                          family == AF_INET ? "IPv4" : "IPv6");
    if (!http_parse_port(p, port))
        return errbuf_set(why, whylen, -EINVAL, "'%s': port '%s' is not a number from 0 to 65535",
                          s, p);
    if (strlen(h) >= addrlen)
        return errbuf_set(why, whylen, -EINVAL, "'%s': no room for the address", s);
    memcpy(addr, h, strlen(h) + 1);
    return 0;
}

/* ---- listening sockets ---- */

/* A listening TCP socket on c->listen; its port. */
static int http_tcp_listen(const char *spec, int *out, unsigned *port, bool *v6, char *err,
                           size_t errlen) {
    char addr[INET6_ADDRSTRLEN], why[256];
    unsigned p;
    int rc = agent_http_parse_listen(spec, addr, sizeof(addr), &p, why, sizeof(why));
    if (rc < 0)
        return errbuf_set(err, errlen, rc, "bad listen address: %s", why);
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    socklen_t sl;
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, addr, &sin->sin_addr) == 1) {
        sin->sin_family = AF_INET;
        sin->sin_port = htons((uint16_t)p);
        sl = sizeof(*sin);
    } else {
        inet_pton(AF_INET6, addr, &sin6->sin6_addr);
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons((uint16_t)p);
        sl = sizeof(*sin6);
    }
    *v6 = ss.ss_family == AF_INET6;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errbuf_set(err, errlen, -errno, "cannot listen on %s: %s", spec, strerror(errno));
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (*v6) /* [::]:PORT takes IPv4 too */
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    if (bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, HTTP_BACKLOG) != 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
        rc = -errno;
        close(fd);
        return errbuf_set(err, errlen, rc, "cannot listen on %s: %s", spec, strerror(-rc));
    }
    *port = ntohs(*v6 ? sin6->sin6_port : sin->sin_port);
    *out = fd;
    return 0;
}

/* 0 when something accepts connections at sa (a live socket), else -errno (-ECONNREFUSED: a
 * stale one). */
static int http_unix_probe(const struct sockaddr_un *sa) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    int rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0 ? 0 : -errno;
    close(fd);
    return rc == -EAGAIN ? 0 : rc; /* EAGAIN: a listener with a full backlog */
}

/* Clear the way for a UNIX socket at sa: nothing there, or a stale socket (removed). */
static int http_unix_clear(const struct sockaddr_un *sa, char *err, size_t errlen) {
    const char *path = sa->sun_path;
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        return errbuf_set(err, errlen, -errno, "cannot listen on %s: %s", path, strerror(errno));
    }
    if (!S_ISSOCK(st.st_mode))
        return errbuf_set(err, errlen, -EEXIST,
                          "cannot listen on %s: it exists and is not a socket (not replacing it)",
                          path);
    int rc = http_unix_probe(sa);
    if (rc == 0)
        return errbuf_set(err, errlen, -EADDRINUSE,
                          "cannot listen on %s: another process is listening on it", path);
    if (rc != -ECONNREFUSED)
        return errbuf_set(err, errlen, rc, "cannot listen on %s: %s", path, strerror(-rc));
    if (unlink(path) != 0 && errno != ENOENT)
        return errbuf_set(err, errlen, -errno, "cannot remove the stale socket %s: %s", path,
                          strerror(errno));
    return 0;
}

/* A listening UNIX socket at path, mode 0660 (a stale socket there is replaced, anything else
 * is not). */
static int http_unix_listen(struct agent_http *s, const char *path, int *out, char *err,
                            size_t errlen) {
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    size_t n = strlen(path);
    if (n >= sizeof(sa.sun_path))
        return errbuf_set(err, errlen, -ENAMETOOLONG,
                          "cannot listen on %s: a UNIX socket path has at most %zu bytes", path,
                          sizeof(sa.sun_path) - 1);
    memcpy(sa.sun_path, path, n + 1);
    int rc = http_unix_clear(&sa, err, errlen);
    if (rc < 0)
        return rc;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errbuf_set(err, errlen, -errno, "cannot listen on %s: %s", path, strerror(errno));
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        rc = -errno;
        close(fd);
        return errbuf_set(err, errlen, rc, "cannot listen on %s: %s", path, strerror(-rc));
    }
    /* nobody can connect between bind and listen, so the mode is set before anyone can */
    struct stat st;
    if (chmod(path, 0660) != 0 || stat(path, &st) != 0 || listen(fd, HTTP_BACKLOG) != 0) {
        rc = -errno;
        unlink(path);
        close(fd);
        return errbuf_set(err, errlen, rc, "cannot listen on %s: %s", path, strerror(-rc));
    }
    s->unix_made = true;
    s->unix_dev = st.st_dev;
    s->unix_ino = st.st_ino;
    *out = fd;
    return 0;
}

/* ---- responses ---- */

static enum http_route http_route_of(const char *url) {
    static const struct {
        const char *path;
        enum http_route route;
    } routes[] = {{"/metrics", HTTP_METRICS},
                  {"/events", HTTP_EVENTS},
                  {"/healthz", HTTP_HEALTHZ},
                  {"/control", HTTP_CONTROL}};
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        if (strcmp(url, routes[i].path) == 0)
            return routes[i].route;
    return HTTP_NONE;
}

/* The connection's guard record (set when it opened), or NULL. */
static struct http_guard_conn *http_guard_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* The request is answered: it arrived in time, and its deadline no longer runs. */
static void http_request_arrived(struct agent_http *s, struct MHD_Connection *c) {
    http_guard_done(s->guard, http_guard_of(c));
}

/* Queue resp (released here) with the content type and the headers every answer has; counted
 * (a refusal that MHD could not send, as when a body runs over the limit part-way, closes the
 * connection: refused all the same). */
static enum MHD_Result http_queue(struct agent_http *s, struct MHD_Connection *c,
                                  struct http_req *r, unsigned status, struct MHD_Response *resp,
                                  const char *ctype) {
    http_request_arrived(s, c);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                "Bearer realm=\"ringside\"");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
                                r->route == HTTP_CONTROL ? "POST" : "GET, HEAD");
    enum MHD_Result ok = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    r->answered = true;
    if (ok == MHD_YES)
        atomic_fetch_add(&s->requests, 1);
    if (ok == MHD_YES && status < 400)
        atomic_fetch_add(&s->answered, 1);
    if (status == MHD_HTTP_UNAUTHORIZED)
        atomic_fetch_add(&s->unauthorized, 1);
    else if (status >= 400 && status < 500)
        atomic_fetch_add(&s->refused, 1);
    return ok;
}

static struct MHD_Response *http_copy(const char *text, size_t len) {
    return MHD_create_response_from_buffer(len, (void *)text, MHD_RESPMEM_MUST_COPY);
}

/* {"ok":true,"message":text} or {"ok":false,"error":text}, and a newline. */
static struct MHD_Response *http_json(bool ok, const char *text) {
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_add(o, "ok", json_object_new_boolean(ok));
    json_object_object_add(o, ok ? "message" : "error", json_object_new_string(text));
    size_t len;
    const char *j = json_object_to_json_string_length(
        o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    struct MHD_Response *resp = NULL;
    char *body = j ? malloc(len + 1) : NULL;
    if (body) {
        memcpy(body, j, len);
        body[len] = '\n';
        resp = MHD_create_response_from_buffer(len + 1, body, MHD_RESPMEM_MUST_FREE);
        if (!resp)
            free(body);
    }
    json_object_put(o);
    return resp;
}

/* A refusal: a line of text, or the JSON error on /control. */
static enum MHD_Result http_refuse(struct agent_http *s, struct MHD_Connection *c,
                                   struct http_req *r, unsigned status, const char *msg) {
    if (r->route == HTTP_CONTROL)
        return http_queue(s, c, r, status, http_json(false, msg), HTTP_CT_JSON);
    char line[512];
    int n = snprintf(line, sizeof(line), "%s\n", msg);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
    return http_queue(s, c, r, status, http_copy(line, len), HTTP_CT_TEXT);
}

/* ---- checks ---- */

bool agent_http_token_equal(const char *got, const char *want) {
    size_t gl = strlen(got), wl = strlen(want);
    volatile unsigned char diff = gl != wl;
    for (size_t i = 0; i < wl; i++)
        diff |= (unsigned char)want[i] ^ (unsigned char)(i < gl ? got[i] : 0);
    return diff == 0;
}

/* "Bearer TOKEN": the scheme in any case (RFC 7235), one or more spaces, the token compared in
 * constant time. */
static bool http_authorized(const struct agent_http *s, struct MHD_Connection *c) {
    if (!s->conf.token[0])
        return true;
    const char *got =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    size_t scheme = sizeof(HTTP_BEARER) - 2; /* "Bearer" */
    if (!got || strncasecmp(got, HTTP_BEARER, scheme) != 0 || got[scheme] != ' ')
        return false;
    got += scheme;
    while (*got == ' ')
        got++;
    return agent_http_token_equal(got, s->bearer + sizeof(HTTP_BEARER) - 1);
}

static bool http_method_ok(enum http_route route, const char *method) {
    if (route == HTTP_CONTROL)
        return strcmp(method, MHD_HTTP_METHOD_POST) == 0;
    return strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
}

/* A decimal uint64 (digits only, no overflow). */
bool http_parse_u64(const char *v, uint64_t *out) {
    size_t n = strlen(v);
    if (n == 0 || n > 20 || strspn(v, "0123456789") != n)
        return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(v[i] - '0');
        if (x > (UINT64_MAX - d) / 10)
            return false;
        x = x * 10 + d;
    }
    *out = x;
    return true;
}

/* The first call of a request (headers read): the refusals that need no body. MHD_YES to go on
 * to the body and the answer. */
/* Whether host (a Host header: NAME[:PORT] or [V6]:PORT) names this machine by address: an IP
 * literal or localhost, never a DNS name someone else controls. */
bool http_host_is_address(const char *host) {
    char name[256];
    if (host[0] == '[') { /* [v6]:port */
        const char *end = strchr(host, ']');
        size_t n = end ? (size_t)(end - host - 1) : 0;
        if (!end || n == 0 || n >= sizeof(name))
            return false;
        memcpy(name, host + 1, n);
        name[n] = '\0';
        struct in6_addr a6;
        return inet_pton(AF_INET6, name, &a6) == 1;
    }
    size_t n = strcspn(host, ":");
    if (n == 0 || n >= sizeof(name))
        return false;
    memcpy(name, host, n);
    name[n] = '\0';
    struct in_addr a4;
    return strcasecmp(name, "localhost") == 0 || inet_pton(AF_INET, name, &a4) == 1;
}

/* Without a token, a browser page of another site could read a loopback agent's /events through
 * a DNS name it points here (DNS rebinding): over TCP, /events and /control then answer only a
 * request that names the agent by address (/metrics and /healthz, which tell nothing of the
 * run's content, still answer scrapers and health checks that use a name). */
static bool http_host_ok(const struct agent_http *s, struct MHD_Connection *c) {
    if (s->conf.token[0])
        return true;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_DAEMON);
    if (ci && ci->daemon == s->unix_d)
        return true; /* a UNIX socket: no browser gets there */
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    return !host || http_host_is_address(host);
}

static enum MHD_Result http_begin(struct agent_http *s, struct MHD_Connection *c,
                                  struct http_req *r, const char *method) {
    if ((r->route == HTTP_EVENTS || r->route == HTTP_CONTROL) && !http_host_ok(s, c))
        return http_refuse(s, c, r, MHD_HTTP_MISDIRECTED_REQUEST,
                           "misdirected: without a token the agent serves /events only to "
                           "requests that name it by address (an IP or localhost), not by a DNS "
                           "name; use the address, or start the agent with --token-file");
    if (r->route != HTTP_METRICS && !http_authorized(s, c))
        return http_refuse(s, c, r, MHD_HTTP_UNAUTHORIZED,
                           "unauthorized: send the agent's token as 'Authorization: Bearer TOKEN'");
    if (r->route == HTTP_NONE)
        return http_refuse(s, c, r, MHD_HTTP_NOT_FOUND,
                           "not found: the agent serves /metrics, /events, /healthz and /control");
    if (!http_method_ok(r->route, method))
        return http_refuse(s, c, r, MHD_HTTP_METHOD_NOT_ALLOWED,
                           r->route == HTTP_CONTROL ? "method not allowed: POST only"
                                                    : "method not allowed: GET or HEAD only");
    if (r->route == HTTP_CONTROL && (!s->conf.allow_control || !s->h.control))
        return http_refuse(s, c, r, MHD_HTTP_FORBIDDEN,
                           "control is off: start the agent with --allow-control and --token-file");
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    uint64_t len;
    if (cl && (!http_parse_u64(cl, &len) || len > s->conf.max_request_bytes))
        return http_refuse(s, c, r, MHD_HTTP_CONTENT_TOO_LARGE, "request body too large");
    return MHD_YES;
}

/* ---- routes ---- */

static enum MHD_Result http_metrics(struct agent_http *s, struct MHD_Connection *c,
                                    struct http_req *r) {
    if (!s->h.metrics)
        return http_refuse(s, c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "no metrics here");
    const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    bool om = accept && strstr(accept, "application/openmetrics-text");
    char *text = NULL;
    size_t len = 0;
    int rc = s->h.metrics(s->h.ctx, om, &text, &len);
    if (rc < 0) {
        free(text);
        char msg[160];
        snprintf(msg, sizeof(msg), "cannot write the metrics: %s", strerror(-rc));
        return http_refuse(s, c, r, MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp)
        free(text);
    return http_queue(s, c, r, MHD_HTTP_OK, resp, om ? HTTP_CT_OPENMETRICS : HTTP_CT_PROM);
}

static enum MHD_Result http_healthz(struct agent_http *s, struct MHD_Connection *c,
                                    struct http_req *r) {
    char why[512] = "ok";
    bool ok = !s->h.health || s->h.health(s->h.ctx, why, sizeof(why) - 1);
    why[sizeof(why) - 2] = '\0';
    size_t n = strlen(why);
    why[n++] = '\n';
    return http_queue(s, c, r, ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, http_copy(why, n),
                      HTTP_CT_TEXT);
}

/* The stream's next bytes: what the log has, a blank line after a quiet spell, or the end (the
 * log closed and read, follow=0 and nothing pending, the server stopping). */
static ssize_t http_stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    struct http_stream *st = cls;
    if (!st->follow) {
        long n = agent_follow_read(st->f, buf, max, 0);
        return n > 0 ? (ssize_t)n : MHD_CONTENT_READER_END_OF_STREAM;
    }
    int keepalive_ms = st->s->keepalive_ms;
    uint64_t quiet_until = mono_now_ns() + (uint64_t)keepalive_ms * 1000000u;
    for (;;) {
        if (atomic_load(&st->s->stopping))
            return MHD_CONTENT_READER_END_OF_STREAM;
        long n = agent_follow_read(st->f, buf, max,
                                   keepalive_ms < HTTP_WAIT_MS ? keepalive_ms : HTTP_WAIT_MS);
        if (n > 0)
            return (ssize_t)n;
        if (n < 0)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (mono_now_ns() >= quiet_until) {
            buf[0] = '\n';
            return 1;
        }
    }
}

static void http_stream_free(void *cls) {
    struct http_stream *st = cls;
    atomic_fetch_sub(&st->s->followers, 1); /* first: the count agrees with the log's */
    agent_follow_close(st->f);
    free(st);
}

static enum MHD_Result http_events(struct agent_http *s, struct MHD_Connection *c,
                                   struct http_req *r) {
    const char *since_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "since");
    const char *follow_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "follow");
    uint64_t since = 0;
    if (since_s && !http_parse_u64(since_s, &since))
        return http_refuse(s, c, r, MHD_HTTP_BAD_REQUEST,
                           "bad since: give the last event number seen (a decimal number)");
    if (follow_s && strcmp(follow_s, "0") != 0 && strcmp(follow_s, "1") != 0)
        return http_refuse(s, c, r, MHD_HTTP_BAD_REQUEST, "bad follow: give 0 or 1");
    if (!s->h.log)
        return http_refuse(s, c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "no events here");
    if (r->head)
        return http_queue(s, c, r, MHD_HTTP_OK, http_copy("", 0), HTTP_CT_NDJSON);
    struct http_stream *st = calloc(1, sizeof(*st));
    if (!st)
        return MHD_NO;
    if (agent_follow_open(&st->f, s->h.log, since) < 0) {
        free(st);
        return MHD_NO;
    }
    st->s = s;
    st->follow = !follow_s || strcmp(follow_s, "1") == 0;
    atomic_fetch_add(&s->followers, 1);
    struct MHD_Response *resp = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, HTTP_BLOCK, http_stream_read, st, http_stream_free);
    if (!resp)
        http_stream_free(st);
    return http_queue(s, c, r, MHD_HTTP_OK, resp, HTTP_CT_NDJSON);
}

/* A request's value for a message: at most 32 printable ASCII characters. */
static void http_quote(char *out, size_t outlen, const char *v) {
    size_t n = 0;
    for (; v[n] && n < 32 && n + 1 < outlen; n++)
        out[n] = v[n] >= 0x20 && v[n] < 0x7f ? v[n] : '?';
    out[n] = '\0';
}

/* How a refusal writes each kind of argument, by enum ev_cmd_arg. */
static const char *const http_arg_hint[] = {"", "&arg=BARS", "&arg=1|-1"};

/* What /control takes, from the command list: "set_chunk&arg=BARS, cleanup, ... or resume". */
static void http_cmd_list(char *buf, size_t n) {
    unsigned last = 0;
    for (unsigned k = 0; k < CMD_COUNT; k++)
        last = ev_cmd_remote(k) ? k : last;
    size_t len = 0;
    buf[0] = '\0';
    for (unsigned k = 0; k < CMD_COUNT && len < n; k++) {
        if (!ev_cmd_remote(k))
            continue;
        int w = snprintf(buf + len, n - len, "%s%s%s",
                         !len        ? ""
                         : k == last ? " or "
                                     : ", ",
                         ev_cmd_name(k), http_arg_hint[ev_cmd_arg(k)]);
        len = w > 0 ? len + (size_t)w : len;
    }
}

/* The command a request names, or -1 with why (400). */
int http_cmd_of(const char *name, char *why, size_t n) {
    int cmd = ev_cmd_from_name(name);
    if (cmd >= 0 && ev_cmd_remote((unsigned)cmd))
        return cmd;
    char q[40], list[256];
    http_quote(q, sizeof(q), name ? name : "");
    http_cmd_list(list, sizeof(list));
    snprintf(why, n, "%s%s%s: give cmd=%s",
             !name     ? "no cmd"
             : cmd < 0 ? "unknown cmd '"
                       : "cmd '",
             q,
             !name     ? ""
             : cmd < 0 ? "'"
                       : "' is not a remote command",
             list);
    return -1;
}

/* The request's arg for cmd, as its kind says; false with why (400). Commands that take no
 * arg ignore one given. */
bool http_cmd_arg(unsigned cmd, const char *arg_s, int64_t *arg, char *why, size_t n) {
    uint64_t v = 0;
    *arg = 0;
    switch (ev_cmd_arg(cmd)) {
    case EV_ARG_BARS:
        if (!arg_s || !http_parse_u64(arg_s, &v) || v > VPOC_CHUNK_MAX) {
            snprintf(why, n, "%s needs arg=BARS, a number from 0 to %d (0 = whole sessions)",
                     ev_cmd_name(cmd), VPOC_CHUNK_MAX);
            return false;
        }
        *arg = (int64_t)v;
        return true;
    case EV_ARG_STEP:
        if (!arg_s || (strcmp(arg_s, "1") != 0 && strcmp(arg_s, "-1") != 0)) {
            snprintf(why, n, "%s needs arg=1 or arg=-1 (a rung up or down the chunk sizes)",
                     ev_cmd_name(cmd));
            return false;
        }
        *arg = arg_s[0] == '-' ? -1 : 1;
        return true;
    case EV_ARG_NONE:
        break;
    }
    return true;
}

static enum MHD_Result http_control(struct agent_http *s, struct MHD_Connection *c,
                                    struct http_req *r) {
    const char *name = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "cmd");
    const char *arg_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "arg");
    char msg[512];
    int64_t arg = 0;
    int cmd = http_cmd_of(name, msg, sizeof(msg));
    if (cmd < 0 || !http_cmd_arg((unsigned)cmd, arg_s, &arg, msg, sizeof(msg)))
        return http_refuse(s, c, r, MHD_HTTP_BAD_REQUEST, msg);
    msg[0] = '\0';
    int rc = s->h.control(s->h.ctx, (enum ev_cmd_id)cmd, arg, msg, sizeof(msg));
    if (rc < 0 && !msg[0])
        snprintf(msg, sizeof(msg), "%s: %s", ev_cmd_name((unsigned)cmd), strerror(-rc));
    else if (rc == 0 && !msg[0])
        snprintf(msg, sizeof(msg), "%s: done", ev_cmd_name((unsigned)cmd));
    unsigned status = rc == 0         ? MHD_HTTP_OK
                      : rc == -EINVAL ? MHD_HTTP_BAD_REQUEST
                                      : MHD_HTTP_CONFLICT;
    return http_queue(s, c, r, status, http_json(rc == 0, msg), HTTP_CT_JSON);
}

/* A query argument whose decoded value holds a NUL (%00): C strings would cut it short. */
static enum MHD_Result http_nul_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                    size_t key_size, const char *value, size_t value_size) {
    (void)kind;
    bool *bad = cls;
    if (strlen(key) != key_size || (value && strlen(value) != value_size))
        *bad = true;
    return MHD_YES;
}

static enum MHD_Result http_serve(struct agent_http *s, struct MHD_Connection *c,
                                  struct http_req *r) {
    bool nul = false;
    MHD_get_connection_values_n(c, MHD_GET_ARGUMENT_KIND, http_nul_arg, &nul);
    if (nul)
        return http_refuse(s, c, r, MHD_HTTP_BAD_REQUEST,
                           "a query argument holds a NUL byte (%00): refused rather than cut");
    switch (r->route) {
    case HTTP_METRICS:
        return http_metrics(s, c, r);
    case HTTP_EVENTS:
        return http_events(s, c, r);
    case HTTP_HEALTHZ:
        return http_healthz(s, c, r);
    case HTTP_CONTROL:
        return http_control(s, c, r);
    case HTTP_NONE:
        break;
    }
    return MHD_NO; /* refused in http_begin */
}

/* ---- MHD callbacks ---- */

static enum MHD_Result http_access(void *cls, struct MHD_Connection *c, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **req_cls) {
    struct agent_http *s = cls;
    struct http_req *r = *req_cls;
    if (!r) {
        r = calloc(1, sizeof(*r));
        if (!r)
            return MHD_NO;
        *req_cls = r;
        r->route = http_route_of(url);
        r->head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
        return http_begin(s, c, r, method);
    }
    if (*upload_data_size > 0) { /* a body: counted, never looked at */
        r->body += *upload_data_size;
        *upload_data_size = 0;
        if (!r->answered && r->body > s->conf.max_request_bytes) /* no Content-Length */
            return http_refuse(s, c, r, MHD_HTTP_CONTENT_TOO_LARGE, "request body too large");
        return MHD_YES;
    }
    if (r->answered)
        return MHD_YES;
    return http_serve(s, c, r);
}

static void http_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                           enum MHD_RequestTerminationCode toe) {
    struct agent_http *s = cls;
    free(*req_cls);
    *req_cls = NULL;
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) /* kept alive: the next request's clock */
        http_guard_next(s->guard, http_guard_of(c));
}

static void http_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode toe) {
    struct agent_http *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        atomic_fetch_add(&s->connections, 1);
        const union MHD_ConnectionInfo *fd =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *ad =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        const struct sockaddr *sa = ad ? ad->client_addr : NULL;
        socklen_t len = !sa                         ? 0
                        : sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                        : sa->sa_family == AF_INET  ? sizeof(struct sockaddr_in)
                                                    : 0;
        *socket_context = fd ? http_guard_open(s->guard, fd->connect_fd, sa, len) : NULL;
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

/* A daemon serving the listening socket fd (it takes fd over, on success). */
static struct MHD_Daemon *http_daemon(struct agent_http *s, int fd, unsigned flags) {
    size_t pool = s->conf.max_request_bytes + HTTP_POOL_EXTRA;
    if (pool < HTTP_POOL_MIN)
        pool = HTTP_POOL_MIN;
    /* over the limit: MHD at its limit stops accepting (the backlog fills); http_admit
     * accepts and closes instead, and the connections the guard shut down may still be
     * closing */
    unsigned limit = s->conf.max_connections + HTTP_SHUT_SLACK;
    flags |= MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
    return MHD_start_daemon(flags, 0, http_admit, s, http_access, s, MHD_OPTION_LISTEN_SOCKET,
                            (MHD_socket)fd, MHD_OPTION_CONNECTION_LIMIT, limit,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool, MHD_OPTION_CONNECTION_TIMEOUT,
                            s->conf.idle_timeout_s, MHD_OPTION_THREAD_STACK_SIZE,
                            (size_t)HTTP_STACK, MHD_OPTION_NOTIFY_CONNECTION, http_notify, s,
                            MHD_OPTION_NOTIFY_COMPLETED, http_completed, s, MHD_OPTION_END);
}

/* Start a daemon on fd; on failure fd is closed (unless MHD already did: a socket is known by
 * its inode, which no later descriptor with the same number has). */
static int http_serve_fd(struct agent_http *s, int fd, unsigned flags, struct MHD_Daemon **out,
                         const char *what, char *err, size_t errlen) {
    struct stat before, after;
    fstat(fd, &before);
    errno = 0;
    *out = http_daemon(s, fd, flags);
    if (*out)
        return 0;
    int rc = errno ? -errno : -EIO;
    if (fstat(fd, &after) == 0 && after.st_ino == before.st_ino && after.st_dev == before.st_dev)
        close(fd);
    return errbuf_set(err, errlen, rc, "cannot serve HTTP on %s: %s", what, strerror(-rc));
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
    return 0;
}

int agent_http_start(struct agent_http **out, const struct agent_http_conf *c,
                     const struct agent_http_handlers *h, char *err, size_t errlen) {
    int rc = http_check_conf(c, err, errlen);
    if (rc < 0)
        return rc;
    struct agent_http *s = calloc(1, sizeof(*s));
    if (!s)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    s->conf = *c;
    s->h = *h;
    snprintf(s->bearer, sizeof(s->bearer), "%s%s", HTTP_BEARER, c->token);
    s->keepalive_ms = HTTP_KEEPALIVE_MS;
    struct http_guard_conf gc = {c->max_connections, c->per_address,
                                 (uint64_t)c->request_timeout_ms * 1000000u};
    if ((rc = http_guard_create(&s->guard, &gc)) != 0) {
        free(s);
        return errbuf_set(err, errlen, rc, "cannot start the HTTP server: %s", strerror(-rc));
    }
    if (c->idle_timeout_s > 0 && c->idle_timeout_s < 2 * HTTP_KEEPALIVE_MS / 1000)
        s->keepalive_ms = (int)c->idle_timeout_s * 500; /* well inside the idle timeout */
    int fd;
    if (c->listen[0]) {
        bool v6 = false;
        rc = http_tcp_listen(c->listen, &fd, &s->port, &v6, err, errlen);
        if (rc == 0)
            rc = http_serve_fd(s, fd, v6 ? MHD_USE_DUAL_STACK : 0, &s->tcp, c->listen, err, errlen);
    }
    if (rc == 0 && c->unix_path[0]) {
        rc = http_unix_listen(s, c->unix_path, &fd, err, errlen);
        if (rc == 0)
            rc = http_serve_fd(s, fd, 0, &s->unix_d, c->unix_path, err, errlen);
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
    out->followers = atomic_load(&s->followers);
}

/* Remove the UNIX socket we made, if it is still the one at the path. */
static void http_unix_remove(const struct agent_http *s) {
    struct stat st;
    if (s->unix_made && lstat(s->conf.unix_path, &st) == 0 && st.st_dev == s->unix_dev &&
        st.st_ino == s->unix_ino)
        unlink(s->conf.unix_path);
}

void agent_http_stop(struct agent_http *s) {
    if (!s)
        return;
    atomic_store(&s->stopping, true);
    if (s->h.log)
        agent_log_wake(s->h.log); /* streams waiting in the log look at stopping now */
    if (s->tcp)
        MHD_stop_daemon(s->tcp);
    if (s->unix_d)
        MHD_stop_daemon(s->unix_d);
    http_unix_remove(s);
    http_guard_destroy(s->guard); /* after the daemons: every connection is closed */
    free(s);
}
