/* The attach client's HTTP: one request per connection through libcurl (HTTP/1.0, so the body
 * ends at the close), https:// verified against the system's CA certificates or a file given,
 * the answer read line by line as it arrives. No redirects, no proxies. */
#ifndef RINGSIDE_TUI_AGENT_HTTP_CLIENT_H
#define RINGSIDE_TUI_AGENT_HTTP_CLIENT_H

#include "tui/agent/http_url.h"

#include <errno.h>
#include <stddef.h>

/* The error of an https:// server whose certificate did not verify (an unknown CA, another
 * host's name, expired): a caller may say how to trust it. */
#define HTTP_E_CERT (-EKEYREJECTED)

/* The longest status or header line libcurl takes (its CURL_MAX_HTTP_HEADER). */
#define HTTP_HEAD_LINE_MAX (100 * 1024)

struct http_conn;

/* Connect (to u's socket path for unix:), send "METHOD base+path_query HTTP/1.0" with Host,
 * Accept (accept NULL: any), User-Agent and, when token is neither NULL nor "", the
 * Authorization: Bearer header, and read the status line and headers, all within timeout_ms
 * (0 = no limit; a server that drips its answer a byte at a time does not put it off); later
 * reads each get timeout_ms. For https:// the server's certificate and name are verified
 * against cacert (a PEM file of CA certificates; NULL or "": the system's CA store). 0 with
 * *out and *status, or -errno with why ("cannot connect to 127.0.0.1:9464: Connection
 * refused", "127.0.0.1:9464: timed out waiting for the answer (none in 10.0 s)",
 * "...: not an HTTP response"; HTTP_E_CERT: "https://h:9464/events: the server's certificate
 * is not trusted (...)", -EPROTO for a TLS handshake that failed). */
int http_request(struct http_conn **out, const struct http_url *u, const char *method,
                 const char *path_query, const char *accept, const char *token, const char *cacert,
                 int timeout_ms, int *status, char *why, size_t whylen);

/* The next body line (without '\n') into a buffer valid until the next call: 1 with *line and
 * *len; 0 at the end of the body; -errno on a transfer error or timeout (-ETIMEDOUT: nothing
 * came for timeout_ms), -ECANCELED once http_conn_shutdown was called; -E2BIG for a line over
 * max_line bytes (the connection is then unusable). */
int http_read_line(struct http_conn *c, const char **line, size_t *len, size_t max_line);

/* The whole remaining body (up to max bytes, else -E2BIG), NUL-terminated, malloc'd; errors as
 * http_read_line's. */
int http_read_body(struct http_conn *c, char **out, size_t *len, size_t max);

/* Make a read blocked in another thread (or the next one) return -ECANCELED promptly. Safe to
 * call from any thread while c is open; c stays c's owner's to close. */
void http_conn_shutdown(struct http_conn *c);

void http_close(struct http_conn *c);

/* When why (an http_request's message) ends with ": " and libcurl's words for a status or
 * header line over HTTP_HEAD_LINE_MAX ("Out of memory" as CURLE_OUT_OF_MEMORY, CURLE_TOO_LARGE's
 * from libcurl 8.6), those words (libcurl's, static); else NULL. */
const char *http_head_too_long(const char *why);

#endif
