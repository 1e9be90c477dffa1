/* A small HTTP/1.0 client for ringside's own agent: one request per connection (the body then
 * ends at the close), read line by line as it arrives. No TLS, no redirects, no proxies. */
#ifndef RINGSIDE_TUI_AGENT_HTTP_CLIENT_H
#define RINGSIDE_TUI_AGENT_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

/* http://HOST[:PORT][/PATH] ("localhost", an IPv4 address, or [IPv6]; default port 9464: the
 * agent's), or unix:/PATH for the agent's UNIX socket. */
struct http_url {
    char host[256];
    unsigned port;
    char unix_path[108]; /* set for unix: URLs */
    char base[256];      /* the path prefix, without a trailing '/' ("" for the root) */
};

/* 0, or -EINVAL with why ("'ftp://x': only http:// and unix: URLs", "port '99999' ..."). */
int http_url_parse(const char *s, struct http_url *u, char *why, size_t whylen);

struct http_conn;

/* Connect, send "METHOD base+path_query HTTP/1.0" with Host, Accept and, when token is not "",
 * the Authorization: Bearer header, and read the status line and headers, all within
 * timeout_ms (0 = no limit; a server that drips its answer a byte at a time does not put it
 * off); later reads each get timeout_ms. 0 with *status set, or
 * -errno with why ("cannot connect to 127.0.0.1:9464: Connection refused", "timed out", "not
 * an HTTP response"). */
int http_request(struct http_conn **out, const struct http_url *u, const char *method,
                 const char *path_query, const char *accept, const char *token, int timeout_ms,
                 int *status, char *why, size_t whylen);

/* The response on fd, a connected descriptor that the request went out on (a socket, a pipe):
 * its status line and headers, read as http_request reads them. fd belongs to the connection
 * from here on (http_close closes it, and so does a failure). 0 with *out and *status, or
 * -errno with why ("response: not an HTTP response"). */
int http_read_response(struct http_conn **out, int fd, int timeout_ms, int *status, char *why,
                       size_t whylen);

/* The next body line (without '\n') into a buffer valid until the next call: 1 with *line and
 * *len; 0 at the end of the body; -errno on a read error or timeout; -E2BIG for a line over
 * max_line bytes (the connection is then unusable). */
int http_read_line(struct http_conn *c, const char **line, size_t *len, size_t max_line);

/* The whole remaining body (up to max bytes, else -E2BIG), NUL-terminated, malloc'd. */
int http_read_body(struct http_conn *c, char **out, size_t *len, size_t max);

/* The descriptor, for poll(); and a way to make a blocked read return from another thread. */
int http_conn_fd(const struct http_conn *c);
void http_conn_shutdown(struct http_conn *c);

void http_close(struct http_conn *c);

#endif
