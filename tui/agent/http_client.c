/* A small HTTP/1.0 client: a nonblocking socket, every wait a poll() with the caller's timeout,
 * the response read into one growing buffer that the line reader hands out in pieces. */
#include "tui/agent/http_client.h"

#include "backend/core/errbuf.h"
#include "backend/core/mono.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef RS_VERSION
#define RS_VERSION "dev"
#endif

#define HTTP_DEFAULT_PORT 9464
#define HTTP_HEADER_MAX   16384 /* status line and headers */
#define HTTP_HEADERS_MAX  100
#define HTTP_REQUEST_MAX  4096
#define HTTP_BUF_START    4096

struct http_conn {
    int fd;
    int timeout_ms;
    char *buf; /* [start, end) not yet handed out; one byte always spare for a NUL */
    size_t cap, start, end;
    bool eof;
    bool has_length; /* Content-Length given: the body ends after remaining more bytes */
    uint64_t remaining;
    uint64_t head_deadline; /* while the answer's head is read: the request's (ns, 0 = none),
                               which bytes dripping in one at a time do not put off */
};

/* ---- URLs ---- */

static bool http_host_char(char c) {
    return isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_';
}

static bool http_v6_char(char c) {
    return isxdigit((unsigned char)c) || c == ':' || c == '.';
}

static int http_url_unix(const char *s, const char *p, struct http_url *u, char *why,
                         size_t whylen) {
    if (p[0] == '/' && p[1] == '/' && p[2] == '/') /* unix:///path */
        p += 2;
    if (!p[0])
        return errbuf_set(why, whylen, -EINVAL, "'%s': no socket path after unix:", s);
    if (strlen(p) >= sizeof(u->unix_path))
        return errbuf_set(why, whylen, -EINVAL, "'%s': a socket path is at most %zu bytes", s,
                          sizeof(u->unix_path) - 1);
    snprintf(u->unix_path, sizeof(u->unix_path), "%s", p);
    snprintf(u->host, sizeof(u->host), "localhost");
    return 0;
}

/* HOST, [V6] or either with :PORT, from [p, end). */
static int http_url_authority(const char *s, const char *p, const char *end, struct http_url *u,
                              char *why, size_t whylen) {
    const char *host = p, *host_end, *colon;
    if (memchr(p, '@', (size_t)(end - p)))
        return errbuf_set(why, whylen, -EINVAL, "'%s': user names in URLs are not supported", s);
    if (*p == '[') {
        host = p + 1;
        host_end = memchr(host, ']', (size_t)(end - host));
        if (!host_end || host_end == host)
            return errbuf_set(why, whylen, -EINVAL, "'%s': an IPv6 address needs [ and ]", s);
        for (const char *q = host; q < host_end; q++)
            if (!http_v6_char(*q))
                return errbuf_set(why, whylen, -EINVAL, "'%s': not an IPv6 address", s);
        colon = host_end + 1 < end ? host_end + 1 : NULL;
        if (colon && *colon != ':')
            return errbuf_set(why, whylen, -EINVAL, "'%s': text after the IPv6 address", s);
    } else {
        colon = memchr(p, ':', (size_t)(end - p));
        host_end = colon ? colon : end;
        for (const char *q = host; q < host_end; q++)
            if (!http_host_char(*q))
                return errbuf_set(why, whylen, -EINVAL, "'%s': not a host name", s);
    }
    if (host_end == host)
        return errbuf_set(why, whylen, -EINVAL, "'%s': no host", s);
    if ((size_t)(host_end - host) >= sizeof(u->host))
        return errbuf_set(why, whylen, -EINVAL, "'%s': the host name is too long", s);
    memcpy(u->host, host, (size_t)(host_end - host));
    u->host[host_end - host] = '\0';
    u->port = HTTP_DEFAULT_PORT;
    if (!colon)
        return 0;
    const char *ps = colon + 1;
    unsigned long port = 0;
    bool digits = ps < end && end - ps <= 5;
    for (const char *q = ps; digits && q < end; q++)
        digits = isdigit((unsigned char)*q);
    if (digits)
        port = strtoul(ps, NULL, 10);
    if (!digits || port < 1 || port > 65535)
        return errbuf_set(why, whylen, -EINVAL, "port '%.*s' is not a number in 1..65535",
                          (int)(end - ps), ps);
    u->port = (unsigned)port;
    return 0;
}

/* The path prefix: printable, no query or fragment, without its trailing '/'. */
static int http_url_path(const char *s, const char *p, struct http_url *u, char *why,
                         size_t whylen) {
    size_t n = strlen(p);
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '?' || p[i] == '#')
            return errbuf_set(why, whylen, -EINVAL,
                              "'%s': give the agent's base URL, without ? or #", s);
        if ((unsigned char)p[i] <= ' ' || (unsigned char)p[i] >= 0x7f)
            return errbuf_set(why, whylen, -EINVAL,
                              "'%s': a space or control character in the path", s);
    }
    while (n > 0 && p[n - 1] == '/')
        n--;
    if (n >= sizeof(u->base))
        return errbuf_set(why, whylen, -EINVAL, "'%s': the path is too long", s);
    memcpy(u->base, p, n);
    u->base[n] = '\0';
    return 0;
}

int http_url_parse(const char *s, struct http_url *u, char *why, size_t whylen) {
    memset(u, 0, sizeof(*u));
    if (strncasecmp(s, "unix:", 5) == 0)
        return http_url_unix(s, s + 5, u, why, whylen);
    if (strncasecmp(s, "https://", 8) == 0)
        return errbuf_set(why, whylen, -EINVAL,
                          "'%s': no TLS here: use http:// (over an SSH tunnel across networks)", s);
    if (strncasecmp(s, "http://", 7) != 0)
        return errbuf_set(why, whylen, -EINVAL, "'%s': only http:// and unix: URLs", s);
    const char *p = s + 7, *end = p + strcspn(p, "/?#");
    int rc = http_url_authority(s, p, end, u, why, whylen);
    return rc ? rc : http_url_path(s, end, u, why, whylen);
}

/* ---- connecting ---- */

/* Milliseconds left to deadline (ns, 0 = none) for poll: -1 for no limit, 0 when past. */
static int http_left_ms(uint64_t deadline) {
    if (!deadline)
        return -1;
    uint64_t now = mono_now_ns();
    return now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

static uint64_t http_deadline(int timeout_ms) {
    return timeout_ms > 0 ? mono_now_ns() + (uint64_t)timeout_ms * 1000000ull : 0;
}

/* Wait for events on fd until deadline: 0, or -ETIMEDOUT / -errno. */
static int http_wait(int fd, short events, uint64_t deadline) {
    for (;;) {
        struct pollfd pf = {fd, events, 0};
        int rc = poll(&pf, 1, http_left_ms(deadline));
        if (rc > 0)
            return 0;
        if (rc == 0)
            return -ETIMEDOUT;
        if (errno != EINTR)
            return -errno;
    }
}

/* A connected nonblocking socket, or -errno. */
static int http_connect_one(int family, const struct sockaddr *sa, socklen_t len,
                            uint64_t deadline) {
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (connect(fd, sa, len) != 0) {
        rc = -errno;
        if (rc == -EINPROGRESS || rc == -EAGAIN) {
            int soerr = 0;
            socklen_t sl = sizeof(soerr);
            rc = http_wait(fd, POLLOUT, deadline);
            if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
                rc = -errno;
            else if (rc == 0)
                rc = -soerr;
        }
    }
    if (rc != 0) {
        close(fd);
        return rc;
    }
    return fd;
}

static int http_connect_unix(const struct http_url *u, uint64_t deadline) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", u->unix_path);
    return http_connect_one(AF_UNIX, (const struct sockaddr *)&sa, sizeof(sa), deadline);
}

static int http_connect_tcp(const struct http_url *u, uint64_t deadline, const char *where,
                            char *why, size_t whylen) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    char port[8];
    snprintf(port, sizeof(port), "%u", u->port);
    int g = getaddrinfo(u->host, port, &hints, &res);
    if (g != 0)
        return errbuf_set(why, whylen, g == EAI_SYSTEM ? -errno : -EHOSTUNREACH,
                          "cannot resolve '%s': %s", u->host, gai_strerror(g));
    int fd = -EHOSTUNREACH;
    for (struct addrinfo *ai = res; ai && fd < 0 && fd != -ETIMEDOUT; ai = ai->ai_next)
        fd = http_connect_one(ai->ai_family, ai->ai_addr, ai->ai_addrlen, deadline);
    freeaddrinfo(res);
    if (fd < 0)
        errbuf_set(why, whylen, fd, "cannot connect to %s: %s", where,
                   fd == -ETIMEDOUT ? "timed out" : strerror(-fd));
    return fd;
}

/* "host:port", "[v6]:port" or the socket path. */
static void http_where(const struct http_url *u, char *out, size_t n) {
    if (u->unix_path[0])
        snprintf(out, n, "%s", u->unix_path);
    else if (strchr(u->host, ':'))
        snprintf(out, n, "[%s]:%u", u->host, u->port);
    else
        snprintf(out, n, "%s:%u", u->host, u->port);
}

/* ---- sending ---- */

static int http_send_all(int fd, const char *p, size_t n, uint64_t deadline) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
        int rc = http_wait(fd, POLLOUT, deadline);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int http_format_request(char *buf, size_t cap, const struct http_url *u, const char *method,
                               const char *path_query, const char *accept, const char *token) {
    char host[300];
    if (u->unix_path[0])
        snprintf(host, sizeof(host), "localhost");
    else if (strchr(u->host, ':'))
        snprintf(host, sizeof(host), "[%s]:%u", u->host, u->port);
    else
        snprintf(host, sizeof(host), "%s:%u", u->host, u->port);
    int n = snprintf(buf, cap,
                     "%s %s%s HTTP/1.0\r\nHost: %s\r\nAccept: %s\r\nUser-Agent: ringside/%s\r\n"
                     "%s%s%s%s\r\n",
                     method, u->base, path_query, host, accept && accept[0] ? accept : "*/*",
                     RS_VERSION, token[0] ? "Authorization: Bearer " : "", token,
                     token[0] ? "\r\n" : "",
                     strcmp(method, "POST") == 0 ? "Content-Length: 0\r\n" : "");
    return n < 0 || (size_t)n >= cap ? -E2BIG : n;
}

/* Nothing that would end a header line or split the request line. */
static bool http_clean(const char *s, bool spaces) {
    for (; *s; s++)
        if ((unsigned char)*s < ' ' || *s == 0x7f || (!spaces && *s == ' '))
            return false;
    return true;
}

/* ---- reading ---- */

/* More bytes into the buffer (growing it when full): 0, 0 with eof set, or -errno. */
static int http_fill(struct http_conn *c) {
    if (c->start > 0 && c->start == c->end)
        c->start = c->end = 0;
    if (c->start > 0 && c->end + 1 >= c->cap) {
        memmove(c->buf, c->buf + c->start, c->end - c->start);
        c->end -= c->start;
        c->start = 0;
    }
    if (c->end + 1 >= c->cap) {
        size_t cap = c->cap * 2;
        char *b = realloc(c->buf, cap);
        if (!b)
            return -ENOMEM;
        c->buf = b;
        c->cap = cap;
    }
    uint64_t deadline = http_deadline(c->timeout_ms);
    if (c->head_deadline && (!deadline || c->head_deadline < deadline))
        deadline = c->head_deadline;
    for (;;) {
        ssize_t n = read(c->fd, c->buf + c->end, c->cap - c->end - 1);
        if (n > 0) {
            size_t got = (size_t)n;
            if (c->has_length) { /* bytes past the body are not ours */
                got = got > c->remaining ? (size_t)c->remaining : got;
                c->remaining -= got;
                c->eof = c->remaining == 0;
            }
            c->end += got;
            return 0;
        }
        if (n == 0) {
            c->eof = true;
            return 0;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
        int rc = http_wait(c->fd, POLLIN, deadline);
        if (rc != 0)
            return rc;
    }
}

/* "HTTP/1.x NNN reason": the status, or -1. */
static int http_status_line(const char *line, size_t n) {
    if (n < 12 || memcmp(line, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)line[7]) ||
        line[8] != ' ')
        return -1;
    for (int i = 9; i < 12; i++)
        if (!isdigit((unsigned char)line[i]))
            return -1;
    if (n > 12 && line[12] != ' ')
        return -1;
    return (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
}

/* One header line: Content-Length and Transfer-Encoding matter. 0 or -EPROTO with why. */
static int http_header(struct http_conn *c, char *line, const char *where, char *why,
                       size_t whylen) {
    char *colon = strchr(line, ':');
    if (!colon)
        return errbuf_set(why, whylen, -EPROTO, "%s: a malformed header in the answer", where);
    *colon = '\0';
    const char *v = colon + 1 + strspn(colon + 1, " \t");
    if (strcasecmp(line, "Content-Length") == 0) {
        char *end = NULL;
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        if (!isdigit((unsigned char)*v) || errno != 0 || (*end && !isspace((unsigned char)*end)))
            return errbuf_set(why, whylen, -EPROTO, "%s: a bad Content-Length in the answer",
                              where);
        c->has_length = true;
        c->remaining = n;
    } else if (strcasecmp(line, "Transfer-Encoding") == 0 && strncasecmp(v, "identity", 8) != 0)
        return errbuf_set(why, whylen, -EPROTO, "%s: a %s answer (not HTTP/1.0)", where, v);
    return 0;
}

/* The header block's length (through its blank line) once the buffer holds it, else 0. */
static size_t http_header_end(const struct http_conn *c) {
    for (size_t i = c->start; i < c->end; i++)
        if (c->buf[i] == '\n' &&
            ((i + 1 < c->end && c->buf[i + 1] == '\n') ||
             (i + 2 < c->end && c->buf[i + 1] == '\r' && c->buf[i + 2] == '\n')))
            return i + (c->buf[i + 1] == '\n' ? 2 : 3) - c->start;
    return 0;
}

/* Read the status line and the headers; the body starts at c->start. */
static int http_read_head(struct http_conn *c, int *status, const char *where, char *why,
                          size_t whylen) {
    size_t hlen;
    while ((hlen = http_header_end(c)) == 0) {
        size_t have = c->end - c->start;
        if (memcmp(c->buf + c->start, "HTTP/", have < 5 ? have : 5) != 0)
            return errbuf_set(why, whylen, -EPROTO, "%s: not an HTTP response", where);
        if (have > HTTP_HEADER_MAX)
            return errbuf_set(why, whylen, -E2BIG, "%s: answer headers over %d bytes", where,
                              HTTP_HEADER_MAX);
        if (c->eof)
            return errbuf_set(why, whylen, -EPROTO, "%s: %s", where,
                              c->end > c->start ? "not an HTTP response"
                                                : "the connection closed without an answer");
        int rc = http_fill(c);
        if (rc != 0)
            return rc == -ETIMEDOUT
                       ? errbuf_set(why, whylen, rc,
                                    "%s: timed out waiting for the answer (none in %.1f s)", where,
                                    c->timeout_ms / 1e3)
                       : errbuf_set(why, whylen, rc, "%s: %s", where, strerror(-rc));
    }
    char *h = c->buf + c->start, *save = NULL;
    h[hlen - 1] = '\0';
    c->start += hlen;
    if (memchr(h, '\0', hlen - 1)) /* the lines are read as strings: none may end early */
        return errbuf_set(why, whylen, -EPROTO, "%s: a NUL byte in the answer's headers", where);
    char *line = strtok_r(h, "\r\n", &save); /* the first bytes: nothing before it */
    if (!line || line != h || (*status = http_status_line(line, strlen(line))) < 0)
        return errbuf_set(why, whylen, -EPROTO, "%s: not an HTTP response", where);
    int n = 0, rc = 0;
    while (rc == 0 && (line = strtok_r(NULL, "\r\n", &save)) != NULL)
        rc = ++n > HTTP_HEADERS_MAX
                 ? errbuf_set(why, whylen, -E2BIG, "%s: over %d headers", where, HTTP_HEADERS_MAX)
                 : http_header(c, line, where, why, whylen);
    if (rc == 0 && c->has_length) { /* what came with the headers counts */
        size_t have = c->end - c->start;
        if (have >= c->remaining) {
            c->end = c->start + (size_t)c->remaining;
            c->remaining = 0;
            c->eof = true;
        } else
            c->remaining -= have;
    }
    return rc;
}

/* A connection on fd (taken: closed on failure) with an empty buffer, or NULL with *rc
 * (-ENOMEM) and why. */
static struct http_conn *http_conn_new(int fd, int timeout_ms, int *rc, char *why, size_t whylen) {
    struct http_conn *c = calloc(1, sizeof(*c));
    char *buf = malloc(HTTP_BUF_START);
    if (!c || !buf) {
        free(c);
        free(buf);
        close(fd);
        *rc = errbuf_set(why, whylen, -ENOMEM, "out of memory");
        return NULL;
    }
    *c = (struct http_conn){.fd = fd, .timeout_ms = timeout_ms, .buf = buf, .cap = HTTP_BUF_START};
    return c;
}

/* Connected, with an empty buffer: the connection, or NULL with *rc (-errno) and why. */
static struct http_conn *http_open(const struct http_url *u, int timeout_ms, uint64_t deadline,
                                   const char *where, int *rc, char *why, size_t whylen) {
    int fd = u->unix_path[0] ? http_connect_unix(u, deadline)
                             : http_connect_tcp(u, deadline, where, why, whylen);
    if (fd < 0 && u->unix_path[0])
        errbuf_set(why, whylen, fd, "cannot connect to %s: %s", where,
                   fd == -ETIMEDOUT ? "timed out" : strerror(-fd));
    if (fd < 0) {
        *rc = fd;
        return NULL;
    }
    return http_conn_new(fd, timeout_ms, rc, why, whylen);
}

int http_request(struct http_conn **out, const struct http_url *u, const char *method,
                 const char *path_query, const char *accept, const char *token, int timeout_ms,
                 int *status, char *why, size_t whylen) {
    char where[400], req[HTTP_REQUEST_MAX];
    *out = NULL;
    *status = 0;
    token = token ? token : "";
    http_where(u, where, sizeof(where));
    if (path_query[0] != '/' || !http_clean(path_query, false) || !http_clean(method, false) ||
        !http_clean(token, false) || (accept && !http_clean(accept, true)))
        return errbuf_set(why, whylen, -EINVAL, "a bad request: a control character or space");
    if (http_format_request(req, sizeof(req), u, method, path_query, accept, token) < 0)
        return errbuf_set(why, whylen, -E2BIG, "the request is over %d bytes", HTTP_REQUEST_MAX);
    uint64_t deadline = http_deadline(timeout_ms);
    int rc = 0;
    struct http_conn *c = http_open(u, timeout_ms, deadline, where, &rc, why, whylen);
    if (!c)
        return rc;
    if ((rc = http_send_all(c->fd, req, strlen(req), deadline)) != 0)
        errbuf_set(why, whylen, rc, "%s: cannot send the request: %s", where,
                   rc == -ETIMEDOUT ? "timed out" : strerror(-rc));
    else {
        c->head_deadline = deadline; /* connect, send and the whole head within timeout_ms */
        rc = http_read_head(c, status, where, why, whylen);
        c->head_deadline = 0;
    }
    if (rc != 0) {
        http_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

int http_read_response(struct http_conn **out, int fd, int timeout_ms, int *status, char *why,
                       size_t whylen) {
    *out = NULL;
    *status = 0;
    int rc = 0;
    struct http_conn *c = http_conn_new(fd, timeout_ms, &rc, why, whylen);
    if (!c)
        return rc;
    rc = http_read_head(c, status, "response", why, whylen);
    if (rc != 0) {
        http_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

int http_read_line(struct http_conn *c, const char **line, size_t *len, size_t max_line) {
    size_t scanned = 0; /* bytes of [start, end) known to hold no newline */
    for (;;) {
        char *p = c->buf + c->start;
        char *nl = memchr(p + scanned, '\n', c->end - c->start - scanned);
        if (nl || (c->eof && c->end > c->start)) {
            size_t n = nl ? (size_t)(nl - p) : c->end - c->start;
            c->start += nl ? n + 1 : n;
            if (n > 0 && p[n - 1] == '\r')
                n--;
            if (n > max_line)
                return -E2BIG;
            p[n] = '\0'; /* the '\n' or '\r', or the spare byte at the end */
            *line = p;
            *len = n;
            return 1;
        }
        scanned = c->end - c->start;
        if (scanned > max_line + 1) /* + 1: a '\r' before the newline */
            return -E2BIG;
        if (c->eof)
            return 0;
        int rc = http_fill(c);
        if (rc != 0)
            return rc;
    }
}

int http_read_body(struct http_conn *c, char **out, size_t *len, size_t max) {
    *out = NULL;
    *len = 0;
    while (!c->eof) {
        if (c->end - c->start > max)
            return -E2BIG;
        int rc = http_fill(c);
        if (rc != 0)
            return rc;
    }
    size_t n = c->end - c->start;
    if (n > max)
        return -E2BIG;
    char *b = malloc(n + 1);
    if (!b)
        return -ENOMEM;
    memcpy(b, c->buf + c->start, n);
    b[n] = '\0';
    c->start = c->end;
    *out = b;
    *len = n;
    return 0;
}

int http_conn_fd(const struct http_conn *c) {
    return c->fd;
}

void http_conn_shutdown(struct http_conn *c) {
    if (c)
        shutdown(c->fd, SHUT_RDWR);
}

void http_close(struct http_conn *c) {
    if (!c)
        return;
    close(c->fd);
    free(c->buf);
    free(c);
}
