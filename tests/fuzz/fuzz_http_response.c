/* libFuzzer target for what the attach client keeps of an agent's answer (tui/agent/http_recv.c),
 * fed as libcurl feeds it: the head line by line (each through its '\n') until the final
 * answer's blank line, then the body's bytes in pieces whose sizes the input decides, read line
 * by line between the pieces (as /events is read) and whole (as /control answers are), each
 * checked against the bytes themselves. */
#include "tests/fuzz/fuzz_target.h"
#include "tui/agent/http_recv.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FUZZ_HTTP_BODY_MAX (1u << 20) /* more than any input */
#define FUZZ_HTTP_WHY      256

/* The length of the line at d (through its '\n', else to the end). */
static size_t fuzz_http_line_len(const uint8_t *d, size_t size) {
    const uint8_t *nl = memchr(d, '\n', size);
    return nl ? (size_t)(nl - d) + 1 : size;
}

static bool fuzz_http_blank(const uint8_t *l, size_t n) {
    return (n == 1 && l[0] == '\n') || (n == 2 && l[0] == '\r' && l[1] == '\n');
}

/* A head any agent could send, from its status line through its blank line at d: "HTTP/1.x NNN
 * reason" with NNN from 200, then "Name: value" lines of printable text, at most 100 of them
 * and 4000 bytes in all. Its length, or 0 when it is not one. */
static size_t fuzz_http_plain_head(const uint8_t *d, size_t size) {
    size_t n = fuzz_http_line_len(d, size);
    if (n < 13 || memcmp(d, "HTTP/1.", 7) != 0 || !isdigit(d[7]) || d[8] != ' ' || d[9] < '2' ||
        !isdigit(d[9]) || !isdigit(d[10]) || !isdigit(d[11]) ||
        (d[12] != ' ' && d[12] != '\r' && d[12] != '\n'))
        return 0;
    size_t off = 0;
    for (unsigned lines = 0; off < size && off <= 4000 && lines <= 101; lines++) {
        const uint8_t *l = d + off;
        n = fuzz_http_line_len(l, size - off);
        off += n;
        if (lines > 0 && fuzz_http_blank(l, n))
            return off <= 4000 ? off : 0;
        size_t text = n - (l[n - 1] == '\n') - (n > 1 && l[n - 2] == '\r');
        for (size_t k = 0; k < text; k++)
            if (l[k] < ' ' || l[k] >= 0x7f)
                return 0;
        size_t name = 0;
        while (lines > 0 && name < text && (isalnum(l[name]) || l[name] == '-'))
            name++;
        if (lines > 0 && (name == 0 || name >= text || l[name] != ':'))
            return 0;
    }
    return 0;
}

/* Feed the head lines until the final answer's head is whole: the body's offset, or 0 when
 * the head was refused or never ended (the refusal checked). */
static size_t fuzz_http_head(struct http_recv *r, const uint8_t *data, size_t size) {
    size_t off = 0, bytes = 0;
    unsigned headers = 0;
    bool first = true;
    while (off < size && !r->head_done) {
        char why[FUZZ_HTTP_WHY];
        memset(why, 'x', sizeof(why));
        const uint8_t *l = data + off;
        size_t n = fuzz_http_line_len(l, size - off);
        int rc = http_recv_head(r, (const char *)l, n, why, sizeof(why));
        if (rc != 0) {
            FUZZ_CHECK(rc == -EPROTO || rc == -E2BIG);
            FUZZ_CHECK(memchr(why, '\0', sizeof(why)) != NULL && why[0] != '\0');
            return 0;
        }
        /* what was taken: no NUL, a status line first, within the limits */
        FUZZ_CHECK(memchr(l, '\0', n) == NULL);
        if (first)
            FUZZ_CHECK(n >= 12 && memcmp(l, "HTTP/1.", 7) == 0);
        bool blank = !first && fuzz_http_blank(l, n);
        headers = first ? 0 : headers + !blank;
        bytes = first ? n : bytes + (blank ? 0 : n);
        FUZZ_CHECK(headers <= HTTP_RECV_HEADERS_MAX && bytes <= HTTP_RECV_HEAD_MAX);
        FUZZ_CHECK(!r->head_done || blank); /* the head ends at a blank line only */
        first = blank;
        off += n;
    }
    return r->head_done ? off : 0;
}

/* The body in pieces (sizes from the input's bytes, 1 to 64), read by lines of max_line at
 * most between them and after the end: each line the body's next bytes, ended by "\n", "\r\n"
 * or the end; -E2BIG exactly at the first line over max_line. */
static void fuzz_http_lines(const uint8_t *data, size_t size, size_t hlen, size_t max_line) {
    const char *body = (const char *)data + hlen;
    size_t blen = size - hlen, fed = 0, off = 0, k = 0;
    struct http_recv r;
    http_recv_init(&r);
    for (;;) {
        size_t raw = 0; /* the next line of the body as the reader should cut it */
        while (off + raw < blen && body[off + raw] != '\n')
            raw++;
        size_t want = raw > 0 && body[off + raw - 1] == '\r' ? raw - 1 : raw;
        const char *line = NULL;
        size_t len = 0;
        int rc;
        while ((rc = http_recv_line(&r, &line, &len, max_line)) == 0 && !r.ended) {
            /* that line not whole yet: never one over the limit */
            FUZZ_CHECK(fed - off <= max_line + 1);
            size_t piece = 1 + (size > 0 ? data[k++ % size] % 64 : 0);
            piece = piece < blen - fed ? piece : blen - fed;
            FUZZ_CHECK(http_recv_body(&r, body + fed, piece) == 0);
            fed += piece;
            r.ended = fed == blen;
        }
        if (want > max_line) {
            FUZZ_CHECK(rc == -E2BIG);
            break;
        }
        if (off == blen) {
            FUZZ_CHECK(rc == 0);
            break;
        }
        FUZZ_CHECK(rc == 1);
        FUZZ_CHECK(len == want && memcmp(line, body + off, len) == 0 && line[len] == '\0');
        off += raw < blen - off ? raw + 1 : raw;
    }
    http_recv_fini(&r);
}

/* The body whole: every byte, or -E2BIG with one byte too little room. */
static void fuzz_http_whole(const uint8_t *data, size_t size, size_t hlen) {
    size_t blen = size - hlen;
    struct http_recv r;
    http_recv_init(&r);
    FUZZ_CHECK(http_recv_body(&r, (const char *)data + hlen, blen) == 0);
    r.ended = true;
    char *body = NULL;
    size_t len = 1;
    if (blen > 0) {
        FUZZ_CHECK(http_recv_take(&r, &body, &len, blen - 1) == -E2BIG && body == NULL);
        FUZZ_CHECK(http_recv_held(&r) == blen);
    }
    FUZZ_CHECK(http_recv_take(&r, &body, &len, FUZZ_HTTP_BODY_MAX) == 0);
    FUZZ_CHECK(len == blen && body[len] == '\0' && memcmp(body, data + hlen, len) == 0);
    free(body);
    FUZZ_CHECK(http_recv_take(&r, &body, &len, 0) == 0 && len == 0 && body[0] == '\0');
    free(body);
    http_recv_fini(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct http_recv r;
    http_recv_init(&r);
    size_t hlen = fuzz_http_head(&r, data, size), plain = fuzz_http_plain_head(data, size);
    http_recv_fini(&r);
    FUZZ_CHECK(!plain || hlen == plain); /* a plain head is taken, and ends where it ends */
    if (hlen == 0)
        return 0;
    fuzz_http_whole(data, size, hlen);
    fuzz_http_lines(data, size, hlen, (size_t)16 << (size % 8));
    fuzz_http_lines(data, size, hlen, FUZZ_HTTP_BODY_MAX);
    return 0;
}

const char fuzz_target_name[] = "fuzz_http_response";

/* Pieces of the agent's answers (tui/agent/agent_http_route.c through libmicrohttpd). */
const char *const fuzz_fragments[] = {
    "HTTP/1.0 200 OK\r\n",
    "HTTP/1.1 200 OK\r\n",
    "HTTP/1.1 100 Continue\r\n\r\n",
    "HTTP/1.0 401 Unauthorized\r\n",
    "HTTP/1.0 421 Misdirected Request\r\n",
    "HTTP/1.0 503 Service Unavailable\r\n",
    "Connection: close\r\n",
    "Content-Length: 3\r\n",
    "Content-Type: application/x-ndjson\r\n",
    "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n",
    "Cache-Control: no-store\r\n",
    "X-Content-Type-Options: nosniff\r\n",
    "WWW-Authenticate: Bearer realm=\"ringside\"\r\n",
    "Date: Thu, 26 Nov 2026 12:00:00 GMT\r\n",
    "\r\n",
    "\n",
    "\r",
    "ok\n",
    "{\"ok\":true,\"message\":\"pause requested\"}\n",
    "{\"ok\":false,\"error\":\"unknown cmd 'x': give cmd=set_chunk&arg=BARS\"}\n",
    "{\"type\":\"status\",\"t_ns\":5,\"control\":false,\"telemetry\":null,\"kmsg\":null,"
    "\"inflight\":null}\n",
    "{\"type\":\"log\",\"seq\":0,\"t_ns\":1000000000,\"severity\":\"info\",\"message\":\"loaded\"}"
    "\n",
    "# TYPE ringside_up gauge\nringside_up 1\n",
    "HTTP/",
    "HTTP/1.0 ",
    ": ",
};
const size_t fuzz_fragments_count = sizeof(fuzz_fragments) / sizeof(fuzz_fragments[0]);
