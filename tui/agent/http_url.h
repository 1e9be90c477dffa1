/* The attach client's URLs: http://HOST[:PORT][/PATH], https://HOST[:PORT][/PATH] or
 * unix:/PATH, read by rules of ringside's own (so each refusal is one line saying what is wrong)
 * and pure: no lookup, no I/O. */
#ifndef RINGSIDE_TUI_AGENT_HTTP_URL_H
#define RINGSIDE_TUI_AGENT_HTTP_URL_H

#include <stdbool.h>
#include <stddef.h>

#define HTTP_URL_DEFAULT_PORT 9464 /* the agent's, for http:// and https:// alike */

/* HOST is a name ("localhost", "gpu-box.lan"), an IPv4 address or [IPv6]. */
struct http_url {
    char host[256];      /* without the brackets of an IPv6 address; "localhost" for unix: */
    unsigned port;       /* 1..65535; 0 for unix: */
    bool tls;            /* https:// */
    char unix_path[108]; /* set for unix: URLs */
    char base[256];      /* the path prefix, without a trailing '/' ("" for the root) */
};

/* 0, or -EINVAL with why ("'ftp://x': only http://, https:// and unix: URLs", "port '99999'
 * ..."). */
int http_url_parse(const char *s, struct http_url *u, char *why, size_t whylen);

/* Whether host (a name or an address, without brackets or port) is this machine's loopback:
 * localhost, an address in 127.0.0.0/8 or ::1 (written any way inet_pton reads). */
bool http_host_loopback(const char *host);

/* Whether u stays on this machine: a unix: URL, or a loopback host. */
bool http_url_loopback(const struct http_url *u);

/* "host:port", "[v6]:port" or the socket path: where u connects, for messages. */
void http_url_where(const struct http_url *u, char *out, size_t n);

#endif
