/* The attach client's URLs: scheme, authority and path prefix checked character by character,
 * each refusal a message that quotes the URL. */
#include "tui/agent/http_url.h"

#include "backend/core/errbuf.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool http_url_host_char(char c) {
    return isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_';
}

static bool http_url_v6_char(char c) {
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

/* ":PORT" after the host, from [colon, end) (colon NULL: none, the default port). */
static int http_url_port(const char *colon, const char *end, struct http_url *u, char *why,
                         size_t whylen) {
    u->port = HTTP_URL_DEFAULT_PORT;
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
            if (!http_url_v6_char(*q))
                return errbuf_set(why, whylen, -EINVAL, "'%s': not an IPv6 address", s);
        colon = host_end + 1 < end ? host_end + 1 : NULL;
        if (colon && *colon != ':')
            return errbuf_set(why, whylen, -EINVAL, "'%s': text after the IPv6 address", s);
    } else {
        colon = memchr(p, ':', (size_t)(end - p));
        host_end = colon ? colon : end;
        for (const char *q = host; q < host_end; q++)
            if (!http_url_host_char(*q))
                return errbuf_set(why, whylen, -EINVAL, "'%s': not a host name", s);
    }
    if (host_end == host)
        return errbuf_set(why, whylen, -EINVAL, "'%s': no host", s);
    if ((size_t)(host_end - host) >= sizeof(u->host))
        return errbuf_set(why, whylen, -EINVAL, "'%s': the host name is too long", s);
    memcpy(u->host, host, (size_t)(host_end - host));
    u->host[host_end - host] = '\0';
    return http_url_port(colon, end, u, why, whylen);
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
    const char *p;
    if (strncasecmp(s, "https://", 8) == 0) {
        u->tls = true;
        p = s + 8;
    } else if (strncasecmp(s, "http://", 7) == 0)
        p = s + 7;
    else
        return errbuf_set(why, whylen, -EINVAL, "'%s': only http://, https:// and unix: URLs", s);
    const char *end = p + strcspn(p, "/?#");
    int rc = http_url_authority(s, p, end, u, why, whylen);
    return rc ? rc : http_url_path(s, end, u, why, whylen);
}

bool http_host_loopback(const char *host) {
    struct in_addr a4;
    struct in6_addr a6;
    if (strcasecmp(host, "localhost") == 0)
        return true;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

bool http_url_loopback(const struct http_url *u) {
    return u->unix_path[0] || http_host_loopback(u->host);
}

void http_url_where(const struct http_url *u, char *out, size_t n) {
    if (u->unix_path[0])
        snprintf(out, n, "%s", u->unix_path);
    else if (strchr(u->host, ':'))
        snprintf(out, n, "[%s]:%u", u->host, u->port);
    else
        snprintf(out, n, "%s:%u", u->host, u->port);
}
