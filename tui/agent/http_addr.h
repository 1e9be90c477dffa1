/* Client addresses as the agent's per-address limits count them (the connection limit of
 * http_guard.h, the follower places of http_quota.h, the token backoff of http_throttle.h): an
 * IPv4 address on its own, an IPv6 address by its /64 prefix, since one host or one customer
 * of a provider is routinely handed a whole /64 and can use any address in it. An IPv4 client
 * of a dual-stack socket (::ffff:a.b.c.d) counts as its IPv4 address. Pure functions. */
#ifndef RINGSIDE_TUI_AGENT_HTTP_ADDR_H
#define RINGSIDE_TUI_AGENT_HTTP_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define HTTP_ADDR_NAME 48 /* room for http_addr_format's text */

/* An address group: IPv4 as IPv4-mapped IPv6 (::ffff:a.b.c.d), IPv6 with its last 64 bits
 * zeroed. Two clients fall under the same limits exactly when their groups are equal. */
struct http_addr {
    unsigned char b[16];
};

/* The group of addr (len bytes): true, or false for anything but AF_INET and AF_INET6 (a UNIX
 * socket's client, a short or NULL address), *out then untouched. */
bool http_addr_group(const struct sockaddr *addr, socklen_t len, struct http_addr *out);

/* Whether a and b are the same group. */
bool http_addr_equal(const struct http_addr *a, const struct http_addr *b);

/* a for a log line, terminated within n bytes: "127.0.0.2" or "2001:db8:1:2::/64" (a NULL a:
 * "the UNIX socket"). */
void http_addr_format(const struct http_addr *a, char *buf, size_t n);

#endif
