/* libFuzzer target for what the agent reads from a request (tui/agent/agent_http_parse.c): the
 * input's first line as a query string ("since=42&follow=0", "cmd=set_chunk&arg=250"), checked
 * as a request target's query (its arguments counted as libmicrohttpd splits them), each
 * argument decoded as libmicrohttpd decodes it, every value read as a number (since=,
 * Content-Length), a command (cmd=), each command's argument (arg=) and a Host header; the
 * second line as a Host header (its form, and whether it names the agent by address); the third
 * as a whole request target (a %00 in its path, its arguments). */
#include "backend/core/ev.h"
#include "backend/vpoc/vpoc.h"
#include "tests/fuzz/fuzz_target.h"
#include "tui/agent/agent_http.h"
#include "tui/agent/agent_http_parse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FUZZ_QUERY_WHY 512 /* the agent's message buffer */

/* A message for a request: terminated inside its buffer, not empty, printable ASCII only (a
 * request's bytes never reach an answer or a log as control characters). */
static void fuzz_query_check_why(const char *why, size_t n) {
    FUZZ_CHECK(memchr(why, '\0', n) != NULL && why[0] != '\0');
    for (const unsigned char *p = (const unsigned char *)why; *p; p++)
        FUZZ_CHECK(*p >= 0x20 && *p < 0x7f);
}

/* A number: exactly the decimal values strtoull takes in full, 1 to 20 digits, written back
 * the same (leading zeros aside). */
static void fuzz_query_u64(const char *v) {
    uint64_t got = 0x5a5a5a5a5a5a5a5aull;
    bool ok = http_parse_u64(v, &got);
    size_t n = strlen(v);
    bool digits = n > 0 && n <= 20 && strspn(v, "0123456789") == n;
    errno = 0;
    unsigned long long want = digits ? strtoull(v, NULL, 10) : 0;
    FUZZ_CHECK(ok == (digits && errno == 0));
    if (!ok) {
        FUZZ_CHECK(got == 0x5a5a5a5a5a5a5a5aull);
        return;
    }
    FUZZ_CHECK(got == want);
    char back[24];
    snprintf(back, sizeof(back), "%" PRIu64, got);
    size_t zeros = strspn(v, "0");
    FUZZ_CHECK(strcmp(back, zeros == n ? "0" : v + zeros) == 0);
}

/* A command: a remote one of exactly that name, or a refusal that quotes the value safely. */
static void fuzz_query_cmd(const char *v, size_t whylen) {
    char why[FUZZ_QUERY_WHY];
    memset(why, 'x', sizeof(why));
    int cmd = http_cmd_of(v, why, whylen);
    if (cmd >= 0) {
        FUZZ_CHECK(v && cmd < CMD_COUNT && ev_cmd_remote((unsigned)cmd));
        FUZZ_CHECK(strcmp(ev_cmd_name((unsigned)cmd), v) == 0);
        return;
    }
    FUZZ_CHECK(cmd == -1);
    fuzz_query_check_why(why, whylen);
    for (unsigned k = 0; v && k < CMD_COUNT; k++)
        FUZZ_CHECK(!ev_cmd_remote(k) || strcmp(ev_cmd_name(k), v) != 0);
}

/* A command's argument, as its kind says. */
static void fuzz_query_arg(unsigned cmd, const char *v) {
    char why[FUZZ_QUERY_WHY];
    memset(why, 'x', sizeof(why));
    int64_t arg = 12345;
    bool ok = http_cmd_arg(cmd, v, &arg, why, sizeof(why));
    enum ev_cmd_arg kind = ev_cmd_arg(cmd);
    if (!ok) {
        FUZZ_CHECK(kind != EV_ARG_NONE);
        fuzz_query_check_why(why, sizeof(why));
        return;
    }
    uint64_t bars = 0;
    switch (kind) {
    case EV_ARG_NONE:
        FUZZ_CHECK(arg == 0);
        break;
    case EV_ARG_BARS:
        FUZZ_CHECK(v && http_parse_u64(v, &bars) && arg >= 0 && arg <= VPOC_CHUNK_MAX);
        FUZZ_CHECK((uint64_t)arg == bars);
        break;
    case EV_ARG_STEP:
        FUZZ_CHECK(v && (arg == 1 || arg == -1));
        FUZZ_CHECK(strcmp(v, arg == 1 ? "1" : "-1") == 0);
        break;
    }
}

/* A Host header taken as host[:port]: printable ASCII without spaces, no userinfo, path or
 * query, a port of at most 5 digits up to 65535 after the last ':' outside brackets. */
static void fuzz_query_host_form(const char *host) {
    if (!http_host_is_valid(host))
        return;
    for (const unsigned char *p = (const unsigned char *)host; *p; p++)
        FUZZ_CHECK(*p > 0x20 && *p < 0x7f && !strchr("@/\\?#\"<>^`{|}", *p));
    const char *rest = host;
    if (host[0] == '[') {
        const char *end = strchr(host, ']');
        FUZZ_CHECK(end && end > host + 1);
        rest = end + 1;
        FUZZ_CHECK(*rest == '\0' || *rest == ':');
    }
    const char *colon = strchr(rest, ':');
    if (!colon)
        return;
    FUZZ_CHECK(strchr(colon + 1, ':') == NULL);
    size_t digits = strlen(colon + 1);
    FUZZ_CHECK(digits <= 5 && strspn(colon + 1, "0123456789") == digits);
    FUZZ_CHECK(digits == 0 || strtoul(colon + 1, NULL, 10) <= 65535);
}

/* A Host header said to name this machine: an IP literal or localhost, never a DNS name. */
static void fuzz_query_host(const char *host) {
    fuzz_query_host_form(host);
    if (!http_host_is_address(host))
        return;
    char name[256];
    bool v6 = host[0] == '[';
    const char *from = v6 ? host + 1 : host;
    size_t n = v6 ? (size_t)(strchr(host, ']') - from) : strcspn(host, ":");
    FUZZ_CHECK(n > 0 && n < sizeof(name));
    memcpy(name, from, n);
    name[n] = '\0';
    unsigned char bin[16];
    if (v6)
        FUZZ_CHECK(inet_pton(AF_INET6, name, bin) == 1);
    else
        FUZZ_CHECK(strcasecmp(name, "localhost") == 0 || inet_pton(AF_INET, name, bin) == 1);
    if (strcasecmp(name, "localhost") != 0)
        FUZZ_CHECK(strspn(name, "0123456789abcdefABCDEF.:") == n);
}

/* The arguments libmicrohttpd makes of a query: a piece per '&', a trailing empty one not. */
static unsigned fuzz_query_mhd_args(const char *q) {
    unsigned n = 0;
    for (const char *p = q; *p;) {
        const char *amp = strchr(p, '&');
        n++;
        if (!amp)
            break;
        p = amp + 1;
    }
    return n;
}

/* A request target: %00 in its path is told first, then more arguments than the limit, with
 * the arguments counted as the library splits them; the limit's edges both ways. */
static void fuzz_query_target(const char *target) {
    const char *q = strchr(target, '?');
    size_t path = q ? (size_t)(q - target) : strlen(target);
    bool nul = false;
    for (size_t k = 0; k + 2 < path && !nul; k++)
        nul = memcmp(target + k, "%00", 3) == 0;
    unsigned want = q ? fuzz_query_mhd_args(q + 1) : 0;
    for (unsigned max = want > 0 ? want - 1 : 0; max <= want + 1; max++) {
        unsigned args = 12345;
        enum http_target v = http_target_check(target, max, &args);
        FUZZ_CHECK(args == want);
        FUZZ_CHECK(v == (nul ? HTTP_TARGET_NUL : want > max ? HTTP_TARGET_ARGS : HTTP_TARGET_OK));
    }
    unsigned args = 1;
    FUZZ_CHECK(http_target_check(target, AGENT_HTTP_MAX_ARGS, &args) != HTTP_TARGET_ARGS ||
               args > AGENT_HTTP_MAX_ARGS);
}

/* One value, decoded: every reader the agent applies to a query value. */
static void fuzz_query_value(const char *v) {
    fuzz_query_u64(v);
    fuzz_query_cmd(v, FUZZ_QUERY_WHY);
    fuzz_query_cmd(v, 9); /* a message cut short stays terminated */
    for (unsigned k = 0; k <= CMD_COUNT; k++)
        fuzz_query_arg(k, v);
    fuzz_query_host(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_cstring(data, size);
    char *host = strchr(text, '\n');
    if (host) {
        *host++ = '\0';
        char *target = strchr(host, '\n');
        if (target) {
            *target++ = '\0';
            target[strcspn(target, "\r\n")] = '\0';
            fuzz_query_target(target);
        }
        host[strcspn(host, "\r")] = '\0';
        fuzz_query_host(host);
    }
    /* the first line as the query of a target */
    size_t qlen = strlen(text);
    char *as_target = malloc(qlen + 3);
    FUZZ_CHECK(as_target != NULL);
    memcpy(as_target, "/?", 2);
    memcpy(as_target + 2, text, qlen + 1);
    fuzz_query_target(as_target);
    free(as_target);
    /* the arguments as libmicrohttpd splits and decodes them */
    char *save = NULL;
    for (char *kv = strtok_r(text, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
        char *val = strchr(kv, '=');
        if (val)
            *val++ = '\0';
        MHD_http_unescape(kv);
        fuzz_query_value(kv);
        if (val) {
            MHD_http_unescape(val);
            fuzz_query_value(val);
        }
    }
    /* no cmd= or no arg= */
    fuzz_query_cmd(NULL, FUZZ_QUERY_WHY);
    for (unsigned k = 0; k <= CMD_COUNT; k++)
        fuzz_query_arg(k, NULL);
    free(text);
    return 0;
}

const char fuzz_target_name[] = "fuzz_agent_query";

/* Pieces of real requests (tui/agent/remote_reader.c and remote_control.c, docs/agent.md's
 * curl lines). */
const char *const fuzz_fragments[] = {
    "since=0",
    "since=18446744073709551615",
    "since=18446744073709551616",
    "since=00000000000000000000042",
    "&follow=0",
    "&follow=1",
    "cmd=pause",
    "cmd=resume",
    "cmd=set_chunk&arg=250",
    "cmd=set_chunk&arg=1000000",
    "cmd=set_chunk&arg=1000001",
    "cmd=chunk_step&arg=-1",
    "cmd=chunk_step&arg=1",
    "cmd=cleanup",
    "cmd=probe",
    "cmd=stop",
    "%00",
    "%41",
    "%2",
    "+",
    "&",
    "=",
    "\n127.0.0.1:9464",
    "\nlocalhost:9464",
    "\n[::1]:9464",
    "\n[::ffff:127.0.0.1]:80",
    "\nagent.example:9464",
    "\n[",
    "\n127.0.0.1:80@evil.example",
    "\n[fe80::1%25eth0]:9464",
    "\nh:65536",
    "\n\n/metrics%00.txt",
    "\n\n/events?since=1&follow=0",
    "\n\n/healthz?&&",
    "&a=1&a=1&a=1&a=1&a=1&a=1&a=1&a=1",
};
const size_t fuzz_fragments_count = sizeof(fuzz_fragments) / sizeof(fuzz_fragments[0]);
