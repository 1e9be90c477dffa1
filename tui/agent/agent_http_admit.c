/* The checks a request passes before its route answers it (agent_http_internal.h): its form
 * (the target, the Host headers), the token with its backoff for address groups that guess
 * (http_throttle.h), and a follower's place (http_quota.h); each refusal counted, and the
 * floods of them logged at most a line per HTTP_SAY_NS (http_ratelog.h). */
#include "backend/core/mono.h"
#include "tui/agent/agent_http_internal.h"
#include "tui/agent/http_quota.h"
#include "tui/agent/http_throttle.h"

#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define HTTP_NS_PER_S 1000000000ull

const struct sockaddr *agent_http_peer(struct MHD_Connection *c, socklen_t *len) {
    const union MHD_ConnectionInfo *ci =
        mhd_fn.MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    *len = !sa                         ? 0
           : sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
           : sa->sa_family == AF_INET  ? sizeof(struct sockaddr_in)
                                       : 0;
    return sa;
}

bool agent_http_client(struct MHD_Connection *c, struct http_addr *a) {
    socklen_t len;
    const struct sockaddr *sa = agent_http_peer(c, &len);
    return http_addr_group(sa, len, a);
}

/* A line for the agent's log, if it has one. */
static void http_say(const struct agent_http *s, const char *line) {
    if (s->h.say)
        s->h.say(s->h.ctx, line);
}

/* ---- the form ---- */

struct http_host_count {
    unsigned n;
};

static enum MHD_Result http_count_host(void *cls, enum MHD_ValueKind kind, const char *key,
                                       const char *value) {
    (void)kind;
    (void)value;
    struct http_host_count *hc = cls;
    hc->n += strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0;
    return MHD_YES;
}

unsigned agent_http_form(struct MHD_Connection *c, const struct http_req *r, char *why, size_t n) {
    if (r->target == HTTP_TARGET_NUL) {
        snprintf(why, n, "bad request: the path holds a NUL byte (%%00)");
        return MHD_HTTP_BAD_REQUEST;
    }
    if (r->target == HTTP_TARGET_ARGS) {
        snprintf(why, n, "URI too long: the query has %u arguments; the agent reads at most %d",
                 r->args, AGENT_HTTP_MAX_ARGS);
        return MHD_HTTP_URI_TOO_LONG;
    }
    struct http_host_count hc = {0};
    mhd_fn.MHD_get_connection_values(c, MHD_HEADER_KIND, http_count_host, &hc);
    if (hc.n > 1) {
        snprintf(why, n, "bad request: %u Host headers (RFC 9112 allows one)", hc.n);
        return MHD_HTTP_BAD_REQUEST;
    }
    const char *host = mhd_fn.MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (host && !http_host_is_valid(host)) {
        snprintf(why, n, "bad request: the Host header is not host[:port] (RFC 9110)");
        return MHD_HTTP_BAD_REQUEST;
    }
    return 0;
}

/* ---- the token ---- */

enum http_auth { HTTP_AUTH_NONE, HTTP_AUTH_WRONG, HTTP_AUTH_OK };

/* "Bearer TOKEN": the scheme in any case (RFC 7235), one or more spaces, the token compared in
 * constant time. No Authorization header at all is no guess. */
static enum http_auth http_auth_of(const struct agent_http *s, struct MHD_Connection *c) {
    const char *got =
        mhd_fn.MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!got)
        return HTTP_AUTH_NONE;
    size_t scheme = sizeof(HTTP_BEARER) - 2; /* "Bearer" */
    if (strncasecmp(got, HTTP_BEARER, scheme) != 0 || got[scheme] != ' ')
        return HTTP_AUTH_WRONG;
    got += scheme;
    while (*got == ' ')
        got++;
    return agent_http_token_equal(got, s->bearer + sizeof(HTTP_BEARER) - 1) ? HTTP_AUTH_OK
                                                                            : HTTP_AUTH_WRONG;
}

/* Whole seconds, rounded up (at least 1): a Retry-After. */
static unsigned http_seconds(uint64_t ns) {
    uint64_t s = (ns + HTTP_NS_PER_S - 1) / HTTP_NS_PER_S;
    return s < 1 ? 1 : s > 86400 ? 86400 : (unsigned)s;
}

/* A wrong token from a (NULL: the UNIX socket) at now: held against its group, logged. */
static void http_auth_failed(struct agent_http *s, const struct http_addr *a, uint64_t now) {
    atomic_fetch_add(&s->auth_failed, 1);
    uint64_t backoff = 0, count = 0;
    bool starts = http_throttle_fail(s->auth, a, now, &backoff);
    if (!http_ratelog_note(&s->said_auth, now, &count))
        return;
    char who[HTTP_ADDR_NAME], line[384], also[128] = "";
    http_addr_format(a, who, sizeof(who));
    if (starts)
        snprintf(also, sizeof(also), "; it is answered 429 for %u s", http_seconds(backoff));
    snprintf(line, sizeof(line),
             "wrong token from %s (401)%s; wrong tokens since the last such line: %llu; "
             "addresses held off now: %u",
             who, also, (unsigned long long)count, http_throttle_held(s->auth, now));
    http_say(s, line);
}

unsigned agent_http_auth(struct agent_http *s, struct MHD_Connection *c, struct http_req *r,
                         char *why, size_t n) {
    if (!s->conf.token[0])
        return 0;
    struct http_addr addr;
    const struct http_addr *a = agent_http_client(c, &addr) ? &addr : NULL;
    uint64_t now = mono_now_ns(), left = 0;
    if (http_throttle_check(s->auth, a, now, &left)) {
        atomic_fetch_add(&s->auth_backoff, 1);
        char who[HTTP_ADDR_NAME];
        http_addr_format(a, who, sizeof(who));
        r->retry_s = http_seconds(left);
        snprintf(why, n, "too many requests: too many wrong tokens from %s; try again in %u s", who,
                 r->retry_s);
        return MHD_HTTP_TOO_MANY_REQUESTS;
    }
    enum http_auth got = http_auth_of(s, c);
    if (got == HTTP_AUTH_OK) {
        http_throttle_pass(s->auth, a);
        return 0;
    }
    if (got == HTTP_AUTH_WRONG)
        http_auth_failed(s, a, now);
    snprintf(why, n, "unauthorized: send the agent's token as 'Authorization: Bearer TOKEN'");
    return MHD_HTTP_UNAUTHORIZED;
}

/* ---- followers ---- */

unsigned agent_http_follower_take(struct agent_http *s, const struct http_addr *a,
                                  struct http_req *r, char *why, size_t n) {
    enum http_quota_take got = http_quota_take(s->followers_q, a);
    if (got == HTTP_QUOTA_TAKEN)
        return 0;
    bool mine = got == HTTP_QUOTA_ADDR_FULL;
    atomic_fetch_add(mine ? &s->over_follower_address : &s->over_followers, 1);
    char who[HTTP_ADDR_NAME], what[160];
    http_addr_format(a, who, sizeof(who));
    if (mine)
        snprintf(what, sizeof(what),
                 "%s holds its %u follower places (--max-followers-per-address)", who,
                 s->followers_per_address);
    else
        snprintf(what, sizeof(what), "all %u follower places are taken (--max-followers)",
                 s->max_followers);
    r->retry_s = HTTP_RETRY_S;
    snprintf(why, n, "%s: /events refused: %s; try again later",
             mine ? "too many requests" : "busy", what);
    uint64_t count = 0;
    if (http_ratelog_note(&s->said_followers, mono_now_ns(), &count)) {
        char line[384];
        snprintf(line, sizeof(line),
                 "refused an /events follower from %s (%d): %s; followers refused since the "
                 "last such line: %llu",
                 who, mine ? MHD_HTTP_TOO_MANY_REQUESTS : MHD_HTTP_SERVICE_UNAVAILABLE, what,
                 (unsigned long long)count);
        http_say(s, line);
    }
    return mine ? MHD_HTTP_TOO_MANY_REQUESTS : MHD_HTTP_SERVICE_UNAVAILABLE;
}

void agent_http_follower_give(struct agent_http *s, const struct http_addr *a) {
    http_quota_give(s->followers_q, a);
}

void agent_http_say_rest(struct agent_http *s) {
    uint64_t count = 0;
    char line[160];
    if (http_ratelog_flush(&s->said_followers, &count)) {
        snprintf(line, sizeof(line), "followers refused since the last such line: %llu",
                 (unsigned long long)count);
        http_say(s, line);
    }
    if (http_ratelog_flush(&s->said_auth, &count)) {
        snprintf(line, sizeof(line), "wrong tokens since the last such line: %llu",
                 (unsigned long long)count);
        http_say(s, line);
    }
}
