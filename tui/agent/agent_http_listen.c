/* The agent's listening sockets: the listen option's address parsed, a TCP socket bound to it,
 * and a UNIX socket made at a path with its mode from the start (http_unix.h; a stale one
 * replaced, anything else left alone) and removed at stop. Made here rather than by
 * libmicrohttpd so that a failure says exactly why. */
#include "backend/core/errbuf.h"
#include "tui/agent/agent_http_internal.h"
#include "tui/agent/http_unix.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define HTTP_BACKLOG 128

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

int agent_http_tcp_listen(const char *spec, int *out, unsigned *port, bool *v6, char *err,
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

int agent_http_unix_listen(struct agent_http *s, const char *path, int *out, char *err,
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
    struct stat st;
    int fd;
    if ((rc = http_unix_listen(path, 0660, HTTP_BACKLOG, &fd, &st, err, errlen)) < 0)
        return rc;
    s->unix_made = true;
    s->unix_dev = st.st_dev;
    s->unix_ino = st.st_ino;
    *out = fd;
    return 0;
}

void agent_http_unix_remove(const struct agent_http *s) {
    struct stat st;
    if (s->unix_made && lstat(s->conf.unix_path, &st) == 0 && st.st_dev == s->unix_dev &&
        st.st_ino == s->unix_ino)
        unlink(s->conf.unix_path);
}
