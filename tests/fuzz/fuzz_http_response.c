/* libFuzzer target for the attach client's reader of answers (tui/agent/http_client.c): the
 * bytes as an agent's answer, read from a descriptor as `ringside attach` reads one: the status
 * line and headers, then the body whole (as /metrics and /control answers are read) and by lines
 * (as /events is), each checked against the bytes themselves. */
#define _GNU_SOURCE /* memfd_create */
#include "tests/fuzz/fuzz_target.h"
#include "tui/agent/http_client.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#define FUZZ_HTTP_BODY_MAX (1u << 20) /* more than any input */
#define FUZZ_HTTP_WHY      256

/* A descriptor that reads the bytes and then the end, like a socket the agent has closed. */
static int fuzz_http_fd(const uint8_t *data, size_t size) {
    int fd = memfd_create("fuzz_http_response", MFD_CLOEXEC);
    FUZZ_CHECK(fd >= 0);
    for (size_t off = 0; off < size;) {
        ssize_t w = write(fd, data + off, size - off);
        FUZZ_CHECK(w > 0);
        off += (size_t)w;
    }
    FUZZ_CHECK(lseek(fd, 0, SEEK_SET) == 0);
    return fd;
}

/* The answer as http_read_response reads it: 0 with *c and *status, or the error (checked). */
static int fuzz_http_open(const uint8_t *data, size_t size, struct http_conn **c, int *status) {
    char why[FUZZ_HTTP_WHY];
    memset(why, 'x', sizeof(why));
    int rc = http_read_response(c, fuzz_http_fd(data, size), 0, status, why, sizeof(why));
    if (rc != 0) {
        FUZZ_CHECK(rc == -EPROTO || rc == -E2BIG);
        FUZZ_CHECK(*c == NULL);
        FUZZ_CHECK(memchr(why, '\0', sizeof(why)) != NULL);
        FUZZ_CHECK(strncmp(why, "response: ", 10) == 0 && why[10] != '\0');
    } else
        FUZZ_CHECK(*c != NULL);
    return rc;
}

/* Where the head ends (through its blank line: "\n\n" or "\n\r\n"), or 0 without one. */
static size_t fuzz_http_head_len(const uint8_t *d, size_t size) {
    for (size_t i = 0; i + 1 < size; i++)
        if (d[i] == '\n' &&
            (d[i + 1] == '\n' || (i + 2 < size && d[i + 1] == '\r' && d[i + 2] == '\n')))
            return i + (d[i + 1] == '\n' ? 2 : 3);
    return 0;
}

/* A head any agent could send: "HTTP/1.x NNN reason", then "Name: value" lines of printable
 * text (neither Content-Length nor Transfer-Encoding), read whole by the first read. */
static bool fuzz_http_plain_head(const uint8_t *d, size_t hlen) {
    if (hlen < 14 || hlen > 4000 || memcmp(d, "HTTP/1.", 7) != 0 || !isdigit(d[7]) || d[8] != ' ' ||
        !isdigit(d[9]) || !isdigit(d[10]) || !isdigit(d[11]) || (d[12] != ' ' && d[12] != '\r'))
        return false;
    unsigned headers = 0;
    size_t i = 0;
    while (i < hlen) {
        size_t e = i;
        while (e < hlen && d[e] != '\n')
            e++;
        size_t n = e > i && d[e - 1] == '\r' ? e - 1 - i : e - i;
        const uint8_t *l = d + i;
        for (size_t k = 0; k < n; k++)
            if (l[k] < ' ' || l[k] >= 0x7f)
                return false;
        if (i > 0 && n > 0) {
            size_t name = 0;
            while (name < n && (isalnum(l[name]) || l[name] == '-'))
                name++;
            if (name == 0 || name >= n || l[name] != ':' ||
                (name == 14 && strncasecmp((const char *)l, "Content-Length", 14) == 0) ||
                (name == 17 && strncasecmp((const char *)l, "Transfer-Encoding", 17) == 0))
                return false;
            headers++;
        }
        i = e + 1;
    }
    return headers <= 100;
}

/* Whether the head names a Content-Length anywhere (the body may then stop short). */
static bool fuzz_http_has_length(const uint8_t *d, size_t hlen) {
    for (size_t i = 0; i + 14 <= hlen; i++)
        if (strncasecmp((const char *)d + i, "content-length", 14) == 0)
            return true;
    return false;
}

/* The one Content-Length of a head, when it has exactly one (in the plain form "Content-Length:
 * N", at most 12 digits) and nothing else that could frame the body (no other line naming
 * content-length or transfer-encoding, no '\r' but before a '\n'). */
static bool fuzz_http_one_length(const uint8_t *d, size_t hlen, uint64_t *len) {
    unsigned found = 0;
    size_t i = 0;
    while (i < hlen && d[i] != '\n') /* the status line */
        i++;
    for (i++; i < hlen;) {
        size_t e = i;
        while (e < hlen && d[e] != '\n')
            e++;
        size_t n = e > i && d[e - 1] == '\r' ? e - 1 - i : e - i;
        const char *l = (const char *)d + i;
        for (size_t k = 0; k < n; k++)
            if (l[k] == '\r')
                return false;
        for (size_t k = 0; k + 14 <= n; k++)
            if (strncasecmp(l + k, "content-length", 14) == 0 ||
                (k + 17 <= n && strncasecmp(l + k, "transfer-encoding", 17) == 0)) {
                if (k != 0 || n < 16 || strncasecmp(l, "content-length:", 15) != 0 || found++)
                    return false;
                size_t v = 15, digits;
                while (v < n && (l[v] == ' ' || l[v] == '\t'))
                    v++;
                for (digits = 0, *len = 0; v < n && l[v] >= '0' && l[v] <= '9'; v++, digits++)
                    *len = *len * 10 + (uint64_t)(l[v] - '0');
                while (v < n && (l[v] == ' ' || l[v] == '\t'))
                    v++;
                if (digits == 0 || digits > 12 || v != n)
                    return false;
                break;
            }
        i = e + 1;
    }
    return found == 1;
}

/* The body by lines, max_line at most: each line the body's next bytes, ended by "\n", "\r\n"
 * or the end; -E2BIG exactly at the first line over max_line. */
static void fuzz_http_lines(const uint8_t *data, size_t size, const char *body, size_t blen,
                            size_t max_line) {
    struct http_conn *c = NULL;
    int status = 0;
    FUZZ_CHECK(fuzz_http_open(data, size, &c, &status) == 0);
    size_t off = 0;
    for (;;) {
        /* the next line of the body as the reader should cut it */
        size_t raw = 0;
        while (off + raw < blen && body[off + raw] != '\n')
            raw++;
        size_t want = raw > 0 && body[off + raw - 1] == '\r' ? raw - 1 : raw;
        const char *line = NULL;
        size_t len = 0;
        int rc = http_read_line(c, &line, &len, max_line);
        if (off == blen) {
            FUZZ_CHECK(rc == 0);
            break;
        }
        if (want > max_line) {
            FUZZ_CHECK(rc == -E2BIG);
            break;
        }
        FUZZ_CHECK(rc == 1);
        FUZZ_CHECK(len == want && memcmp(line, body + off, len) == 0 && line[len] == '\0');
        off += raw < blen - off ? raw + 1 : raw;
    }
    http_close(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct http_conn *c = NULL;
    int status = 0;
    size_t hlen = fuzz_http_head_len(data, size);
    int rc = fuzz_http_open(data, size, &c, &status);
    if (rc != 0) {
        FUZZ_CHECK(!hlen || !fuzz_http_plain_head(data, hlen));
        return 0;
    }
    /* a head came whole, with a status line */
    FUZZ_CHECK(hlen > 0 && size >= 12 && memcmp(data, "HTTP/1.", 7) == 0);
    FUZZ_CHECK(status == (data[9] - '0') * 100 + (data[10] - '0') * 10 + (data[11] - '0'));
    /* the body: the bytes after the head, cut short only by a Content-Length */
    char *body = NULL;
    size_t blen = 0;
    FUZZ_CHECK(http_read_body(c, &body, &blen, FUZZ_HTTP_BODY_MAX) == 0);
    FUZZ_CHECK(body != NULL && body[blen] == '\0');
    FUZZ_CHECK(blen <= size - hlen && memcmp(body, data + hlen, blen) == 0);
    FUZZ_CHECK(blen == size - hlen || fuzz_http_has_length(data, hlen));
    uint64_t given = 0;
    if (fuzz_http_one_length(data, hlen, &given)) /* a length given is a length kept */
        FUZZ_CHECK(blen == (given < size - hlen ? given : size - hlen));
    char *again = NULL;
    size_t alen = 1;
    FUZZ_CHECK(http_read_body(c, &again, &alen, 0) == 0 && alen == 0 && again[0] == '\0');
    free(again);
    http_close(c);
    /* the same body by lines, the longest line allowed depending on the input */
    fuzz_http_lines(data, size, body, blen, (size_t)16 << (size % 8));
    fuzz_http_lines(data, size, body, blen, FUZZ_HTTP_BODY_MAX);
    /* and whole with one byte too little room */
    if (blen > 0) {
        FUZZ_CHECK(fuzz_http_open(data, size, &c, &status) == 0);
        char *cut = NULL;
        size_t clen = 0;
        FUZZ_CHECK(http_read_body(c, &cut, &clen, blen - 1) == -E2BIG && cut == NULL);
        http_close(c);
    }
    free(body);
    return 0;
}

const char fuzz_target_name[] = "fuzz_http_response";

/* Pieces of the agent's answers (tui/agent/agent_http_route.c through libmicrohttpd). */
const char *const fuzz_fragments[] = {
    "HTTP/1.0 200 OK\r\n",
    "HTTP/1.1 200 OK\r\n",
    "HTTP/1.0 401 Unauthorized\r\n",
    "HTTP/1.0 421 Misdirected Request\r\n",
    "HTTP/1.0 503 Service Unavailable\r\n",
    "Connection: close\r\n",
    "Content-Length: 3\r\n",
    "Content-Length: 18446744073709551615\r\n",
    "Content-Length: 18446744073709551616\r\n",
    "content-length:0\r\n",
    "Transfer-Encoding: chunked\r\n",
    "Transfer-Encoding: identity\r\n",
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
