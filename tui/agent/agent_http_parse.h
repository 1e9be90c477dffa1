/* The agent's readers of request values (agent_http_parse.c, for agent_http_route.c): the query
 * arguments of /events and /control (libmicrohttpd decodes them) and the Host header, each a pure
 * function of its text. */
#ifndef RINGSIDE_TUI_AGENT_AGENT_HTTP_PARSE_H
#define RINGSIDE_TUI_AGENT_AGENT_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A decimal uint64: 1 to 20 digits, nothing else, no overflow (since=, a Content-Length). */
bool http_parse_u64(const char *v, uint64_t *out);

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
