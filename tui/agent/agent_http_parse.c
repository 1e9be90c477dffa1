/* The agent's readers of request values (agent_http_parse.h) and its token comparison: pure
 * functions of a request's text, apart from libmicrohttpd. */
#include "tui/agent/agent_http_parse.h"

#include "backend/core/ev.h"
#include "backend/vpoc/vpoc.h"
#include "tui/agent/agent_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool agent_http_token_equal(const char *got, const char *want) {
    size_t gl = strlen(got), wl = strlen(want);
    volatile unsigned char diff = gl != wl;
    for (size_t i = 0; i < wl; i++)
        diff |= (unsigned char)want[i] ^ (unsigned char)(i < gl ? got[i] : 0);
    return diff == 0;
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

enum http_target http_target_check(const char *target, unsigned max_args, unsigned *args) {
    *args = 0;
    if (!target)
        return HTTP_TARGET_OK;
    size_t path = strcspn(target, "?");
    const char *query = target[path] ? target + path + 1 : NULL;
    size_t qlen = query ? strlen(query) : 0;
    for (size_t k = 0; k < qlen; k++)
        *args += query[k] == '&';
    if (qlen > 0)
        *args += query[qlen - 1] != '&'; /* the last piece; a trailing '&' ends none */
    for (size_t k = 0; k + 2 < path; k++)
        if (target[k] == '%' && target[k + 1] == '0' && target[k + 2] == '0')
            return HTTP_TARGET_NUL;
    return *args > max_args ? HTTP_TARGET_ARGS : HTTP_TARGET_OK;
}

/* A character of a reg-name but '%' (RFC 3986: unreserved and sub-delims). */
static bool http_host_regname_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch && strchr("-._~!$&'()*+,;=", ch));
}

static bool http_host_hex(char ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

bool http_host_is_valid(const char *host) {
    const char *p = host;
    if (*p == '[') { /* IP-literal: IPv6address / IPvFuture, and a zone's %25 */
        size_t n = 0;
        while (p[1 + n] && (http_host_regname_char(p[1 + n]) || p[1 + n] == ':' || p[1 + n] == '%'))
            n++;
        if (n == 0 || p[1 + n] != ']')
            return false;
        p += n + 2;
    } else {
        while (*p && *p != ':') {
            if (*p == '%' && http_host_hex(p[1]) && http_host_hex(p[2]))
                p += 3;
            else if (http_host_regname_char(*p))
                p++;
            else
                return false;
        }
    }
    if (!*p)
        return true;
    if (*p++ != ':')
        return false;
    size_t digits = strspn(p, "0123456789");
    if (p[digits] || digits > 5)
        return false;
    return digits == 0 || strtoul(p, NULL, 10) <= 65535;
}

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
