/* Client address groups for the per-address limits (http_addr.h). */
#include "tui/agent/http_addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

static const unsigned char http_addr_v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static bool http_addr_is_v4(const struct http_addr *a) {
    return memcmp(a->b, http_addr_v4_prefix, sizeof(http_addr_v4_prefix)) == 0;
}

bool http_addr_group(const struct sockaddr *addr, socklen_t len, struct http_addr *out) {
    if (addr && addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        memcpy(out->b, http_addr_v4_prefix, sizeof(http_addr_v4_prefix));
        memcpy(out->b + 12, &((const struct sockaddr_in *)addr)->sin_addr, 4);
        return true;
    }
    if (addr && addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        memcpy(out->b, &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
        if (!http_addr_is_v4(out)) /* a mapped IPv4 address stays whole */
            memset(out->b + 8, 0, 8);
        return true;
    }
    return false;
}

bool http_addr_equal(const struct http_addr *a, const struct http_addr *b) {
    return memcmp(a->b, b->b, sizeof(a->b)) == 0;
}

void http_addr_format(const struct http_addr *a, char *buf, size_t n) {
    if (n == 0)
        return;
    char text[INET6_ADDRSTRLEN] = "?";
    if (!a)
        snprintf(buf, n, "the UNIX socket");
    else if (http_addr_is_v4(a)) {
        inet_ntop(AF_INET, a->b + 12, text, sizeof(text));
        snprintf(buf, n, "%s", text);
    } else {
        inet_ntop(AF_INET6, a->b, text, sizeof(text));
        snprintf(buf, n, "%s/64", text);
    }
}
