/* libFuzzer target for the address parsers: the agent's listen address (--listen ADDR:PORT,
 * agent_http_parse_listen) and the attach client's URL (`ringside attach http://HOST:PORT/base`,
 * https://... or unix:/PATH, http_url_parse), the input's text (up to a NUL) given to both. What
 * parses is written back in its own form and must parse to the same again; a URL taken for this
 * machine's loopback names it by an address inet_pton reads as one, or as localhost. */
#include "tests/fuzz/fuzz_target.h"
#include "tui/agent/agent_http.h"
#include "tui/agent/http_url.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FUZZ_URL_WHY 256

static void fuzz_url_check_why(int rc, const char *why) {
    FUZZ_CHECK(rc == -EINVAL);
    FUZZ_CHECK(memchr(why, '\0', FUZZ_URL_WHY) != NULL && why[0] != '\0');
}

/* ADDR:PORT: an IPv4 or IPv6 address that inet_pton takes, a port to 65535, within addrlen. */
static void fuzz_url_listen(const char *s, size_t addrlen) {
    char addr[64], why[FUZZ_URL_WHY];
    memset(addr, 'x', sizeof(addr));
    memset(why, 'x', sizeof(why));
    unsigned port = 70000;
    int rc = agent_http_parse_listen(s, addr, addrlen, &port, why, sizeof(why));
    if (rc != 0) {
        fuzz_url_check_why(rc, why);
        return;
    }
    size_t n = strnlen(addr, addrlen);
    FUZZ_CHECK(n < addrlen && port <= 65535);
    bool v6 = strchr(addr, ':') != NULL;
    unsigned char bin[16];
    FUZZ_CHECK(inet_pton(v6 ? AF_INET6 : AF_INET, addr, bin) == 1);
    char back[96], addr2[64];
    unsigned port2 = 70000;
    snprintf(back, sizeof(back), v6 ? "[%s]:%u" : "%s:%u", addr, port);
    FUZZ_CHECK(agent_http_parse_listen(back, addr2, sizeof(addr2), &port2, why, sizeof(why)) == 0);
    FUZZ_CHECK(strcmp(addr, addr2) == 0 && port == port2);
}

static bool fuzz_url_same(const struct http_url *a, const struct http_url *b) {
    return strcmp(a->host, b->host) == 0 && a->port == b->port && a->tls == b->tls &&
           strcmp(a->unix_path, b->unix_path) == 0 && strcmp(a->base, b->base) == 0;
}

/* Whether host is a loopback address or localhost, by inet_pton and the text alone. */
static bool fuzz_url_is_loopback(const char *host) {
    unsigned char a[16];
    static const unsigned char v6_loopback[16] = {[15] = 1};
    if (inet_pton(AF_INET, host, a) == 1)
        return a[0] == 127;
    if (inet_pton(AF_INET6, host, a) == 1)
        return memcmp(a, v6_loopback, 16) == 0;
    return strcasecmp(host, "localhost") == 0;
}

/* http://HOST[:PORT][/PATH], https://... or unix:PATH: every field terminated and clean, written
 * back the same. */
static void fuzz_url_url(const char *s) {
    struct http_url u, u2;
    char why[FUZZ_URL_WHY], back[600];
    memset(&u, 0xa5, sizeof(u));
    memset(why, 'x', sizeof(why));
    int rc = http_url_parse(s, &u, why, sizeof(why));
    if (rc != 0) {
        fuzz_url_check_why(rc, why);
        return;
    }
    FUZZ_CHECK(memchr(u.host, '\0', sizeof(u.host)) && memchr(u.base, '\0', sizeof(u.base)));
    FUZZ_CHECK(memchr(u.unix_path, '\0', sizeof(u.unix_path)) != NULL);
    FUZZ_CHECK(http_url_loopback(&u) == (u.unix_path[0] || fuzz_url_is_loopback(u.host)));
    if (u.unix_path[0]) {
        FUZZ_CHECK(strcmp(u.host, "localhost") == 0 && !u.base[0] && !u.tls);
        snprintf(back, sizeof(back), u.unix_path[0] == '/' ? "unix://%s" : "unix:%s", u.unix_path);
    } else {
        size_t hn = strlen(u.host), bn = strlen(u.base);
        FUZZ_CHECK(hn > 0 && u.port >= 1 && u.port <= 65535);
        bool v6 = strchr(u.host, ':') != NULL;
        for (size_t i = 0; i < hn; i++) {
            unsigned char c = (unsigned char)u.host[i];
            FUZZ_CHECK(v6 ? isxdigit(c) || c == ':' || c == '.'
                          : isalnum(c) || c == '.' || c == '-' || c == '_');
        }
        FUZZ_CHECK(bn == 0 || (u.base[0] == '/' && u.base[bn - 1] != '/'));
        for (size_t i = 0; i < bn; i++) {
            unsigned char c = (unsigned char)u.base[i];
            FUZZ_CHECK(c > ' ' && c < 0x7f && c != '?' && c != '#');
        }
        snprintf(back, sizeof(back), v6 ? "%s://[%s]:%u%s" : "%s://%s:%u%s",
                 u.tls ? "https" : "http", u.host, u.port, u.base);
    }
    FUZZ_CHECK(http_url_parse(back, &u2, why, sizeof(why)) == 0);
    FUZZ_CHECK(fuzz_url_same(&u, &u2));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = fuzz_cstring(data, size);
    fuzz_url_listen(s, 64);
    fuzz_url_listen(s, 8); /* too little room for most addresses */
    fuzz_url_url(s);
    free(s);
    return 0;
}

const char fuzz_target_name[] = "fuzz_url";

/* Pieces of real addresses (docs/agent.md, the agent's and attach's options). */
const char *const fuzz_fragments[] = {
    "127.0.0.1:9464",
    "0.0.0.0:0",
    "localhost:9464",
    "[::1]:9464",
    "[::]:65535",
    "[::ffff:192.0.2.1]:65536",
    "[fe80::1%eth0]:9464",
    "http://",
    "http://127.0.0.1:9464",
    "http://localhost:9464/",
    "http://[::1]:9464/ringside/",
    "http://gpu-node-3.cluster:9464/a/b//",
    "http://user@host:1/",
    "HTTP://H:00080",
    "https://agent:9464",
    "https://[::1]:9464/base/",
    "HTTPS://127.0.0.1",
    "http://127.1.2.3:9464",
    "http://[0:0:0:0:0:0:0:1]",
    "http://[::ffff:127.0.0.1]",
    "LocalHost",
    "unix:",
    "unix:/run/user/1000/ringside/agent.sock",
    "unix:///tmp/ringside-1000/agent.sock",
    "ftp://x",
    ":",
    "[",
    "]",
    "/",
    "?",
    "#",
    "%20",
    "65535",
    "99999",
};
const size_t fuzz_fragments_count = sizeof(fuzz_fragments) / sizeof(fuzz_fragments[0]);
