/* The attach client's receiver: head lines counted and checked, body bytes in one growing buffer
 * that the line reader cuts in place. */
#include "tui/agent/http_recv.h"

#include "backend/core/errbuf.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define HTTP_RECV_BUF_START 4096

void http_recv_init(struct http_recv *r) {
    memset(r, 0, sizeof(*r));
}

void http_recv_fini(struct http_recv *r) {
    free(r->buf);
    http_recv_init(r);
}

/* "HTTP/1.x NNN" (a reason or nothing after): the status, or -1. */
static int http_recv_status(const char *line, size_t n) {
    if (n < 12 || memcmp(line, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)line[7]) ||
        line[8] != ' ')
        return -1;
    for (int i = 9; i < 12; i++)
        if (!isdigit((unsigned char)line[i]))
            return -1;
    if (n > 12 && line[12] != ' ' && line[12] != '\r' && line[12] != '\n')
        return -1;
    return (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
}

int http_recv_head(struct http_recv *r, const char *line, size_t n, char *why, size_t whylen) {
    if (memchr(line, '\0', n)) /* what follows it would be read short */
        return errbuf_set(why, whylen, -EPROTO, "a NUL byte in the answer's headers");
    if (!r->in_head) { /* the first line of a head: its status line, nothing before it */
        int status = http_recv_status(line, n);
        if (status < 0 || r->head_done)
            return errbuf_set(why, whylen, -EPROTO, "not an HTTP response");
        r->in_head = true;
        r->interim = status < 200;
        r->head_bytes = n;
        r->head_lines = 0;
    } else if ((n == 1 && line[0] == '\n') || (n == 2 && line[0] == '\r' && line[1] == '\n')) {
        r->in_head = false;
        r->head_done = !r->interim;
    } else if (++r->head_lines > HTTP_RECV_HEADERS_MAX)
        return errbuf_set(why, whylen, -E2BIG, "over %d headers", HTTP_RECV_HEADERS_MAX);
    else
        r->head_bytes += n;
    if (r->head_bytes > HTTP_RECV_HEAD_MAX)
        return errbuf_set(why, whylen, -E2BIG, "answer headers over %d bytes", HTTP_RECV_HEAD_MAX);
    return 0;
}

/* Room for n more bytes and the spare one: 0, or -ENOMEM. */
static int http_recv_room(struct http_recv *r, size_t n) {
    if (r->start == r->end)
        r->start = r->end = r->scanned = 0;
    if (r->end + n + 1 <= r->cap)
        return 0;
    if (r->start > 0) { /* what was handed out goes first */
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
    }
    size_t cap = r->cap ? r->cap : HTTP_RECV_BUF_START;
    while (cap < r->end + n + 1)
        cap *= 2;
    if (cap == r->cap)
        return 0;
    char *b = realloc(r->buf, cap);
    if (!b)
        return -ENOMEM;
    r->buf = b;
    r->cap = cap;
    return 0;
}

int http_recv_body(struct http_recv *r, const char *p, size_t n) {
    if (n == 0)
        return 0;
    int rc = http_recv_room(r, n);
    if (rc != 0)
        return rc;
    memcpy(r->buf + r->end, p, n);
    r->end += n;
    return 0;
}

int http_recv_line(struct http_recv *r, const char **line, size_t *len, size_t max_line) {
    if (!r->buf) /* nothing came yet */
        return 0;
    char *p = r->buf + r->start;
    size_t have = r->end - r->start;
    char *nl = have > r->scanned ? memchr(p + r->scanned, '\n', have - r->scanned) : NULL;
    if (!nl && !(r->ended && have > 0)) {
        r->scanned = have;
        return have > max_line + 1 ? -E2BIG : 0; /* + 1: a '\r' before the newline */
    }
    size_t n = nl ? (size_t)(nl - p) : have;
    r->start += nl ? n + 1 : n;
    r->scanned = 0;
    if (n > 0 && p[n - 1] == '\r')
        n--;
    if (n > max_line)
        return -E2BIG;
    p[n] = '\0'; /* the '\n' or '\r', or the spare byte at the end */
    *line = p;
    *len = n;
    return 1;
}

int http_recv_take(struct http_recv *r, char **out, size_t *len, size_t max) {
    size_t n = r->end - r->start;
    *out = NULL;
    *len = 0;
    if (n > max)
        return -E2BIG;
    char *b = malloc(n + 1);
    if (!b)
        return -ENOMEM;
    if (n > 0) /* (no buffer before a first byte) */
        memcpy(b, r->buf + r->start, n);
    b[n] = '\0';
    r->start = r->end;
    r->scanned = 0;
    *out = b;
    *len = n;
    return 0;
}

size_t http_recv_held(const struct http_recv *r) {
    return r->end - r->start;
}
