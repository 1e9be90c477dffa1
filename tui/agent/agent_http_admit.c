/* The checks a request passes before its route answers it (agent_http_internal.h): its form
 * (the target, the Host headers). */
#include "tui/agent/agent_http_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

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
    MHD_get_connection_values(c, MHD_HEADER_KIND, http_count_host, &hc);
    if (hc.n > 1) {
        snprintf(why, n, "bad request: %u Host headers (RFC 9112 allows one)", hc.n);
        return MHD_HTTP_BAD_REQUEST;
    }
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (host && !http_host_is_valid(host)) {
        snprintf(why, n, "bad request: the Host header is not host[:port] (RFC 9110)");
        return MHD_HTTP_BAD_REQUEST;
    }
    return 0;
}
