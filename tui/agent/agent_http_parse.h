/* The agent's readers of request values (agent_http_parse.c, for agent_http_route.c): the
 * request target as it came, the query arguments of /events and /control (libmicrohttpd decodes
 * them) and the Host header, each a pure function of its text. */
#ifndef RINGSIDE_TUI_AGENT_AGENT_HTTP_PARSE_H
#define RINGSIDE_TUI_AGENT_AGENT_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A decimal uint64: 1 to 20 digits, nothing else, no overflow (since=, a Content-Length). */
bool http_parse_u64(const char *v, uint64_t *out);

/* What a request target says before anything reads it. */
enum http_target {
    HTTP_TARGET_OK,
    HTTP_TARGET_NUL,  /* its path holds "%00": decoded, C strings would cut it short there */
    HTTP_TARGET_ARGS, /* its query has more arguments than the agent reads */
};

/* Check target (the request line's target as it came, path[?query], not decoded; NULL: none)
 * with at most max_args query arguments. *args: the query's arguments as libmicrohttpd splits
 * them (a piece per '&', a trailing empty one not counted; 0 without a query), counted whatever
 * the verdict. A NUL path is told before too many arguments. */
enum http_target http_target_check(const char *target, unsigned max_args, unsigned *args);

/* Whether host (a Host header's value) is one RFC 9110 takes: uri-host [":" port] (RFC 3986),
 * the host an IP literal in brackets (the characters of an IPv6 or IPvFuture address, and '%'
 * for a zone) or a reg-name (unreserved characters, sub-delims and %XX; empty is allowed), the
 * port 0 to 5 digits, at most 65535. Userinfo ("a@b"), spaces and control bytes are not. */
bool http_host_is_valid(const char *host);

/* Whether host (a Host header: NAME[:PORT] or [V6]:PORT) names this machine by address: an IP
 * literal or localhost, never a DNS name. */
bool http_host_is_address(const char *host);

/* The command /control's cmd= names (name NULL: none given), a remote one of EV_CMDS; or -1
 * with why (the value quoted as at most 32 printable characters, and what cmd= takes). */
int http_cmd_of(const char *name, char *why, size_t n);

/* arg= (arg_s NULL: none given) for cmd as ev_cmd_arg says: bars from 0 to VPOC_CHUNK_MAX, a
 * step of 1 or -1, or ignored. true with *arg, or false with why. */
bool http_cmd_arg(unsigned cmd, const char *arg_s, int64_t *arg, char *why, size_t n);

#endif
