/* What the attach client keeps of an answer as libcurl hands it over: the head's lines checked
 * as they come (a status line first, bounded in size and count), the body's bytes buffered and
 * handed out whole or line by line. Pure (no I/O), so it is fuzzed on its own. */
#ifndef RINGSIDE_TUI_AGENT_HTTP_RECV_H
#define RINGSIDE_TUI_AGENT_HTTP_RECV_H

#include <stdbool.h>
#include <stddef.h>

#define HTTP_RECV_HEAD_MAX    16384 /* bytes of a head's status line and headers */
#define HTTP_RECV_HEADERS_MAX 100   /* header lines of a head */

struct http_recv {
    char *buf; /* the body's bytes; [start, end) not handed out; one byte spare for a NUL */
    size_t cap, start, end;
    size_t scanned;      /* bytes from start known to hold no '\n' */
    size_t head_bytes;   /* of the head being read */
    unsigned head_lines; /* ... its header lines */
    bool in_head;        /* a status line came and its blank line has not */
    bool interim;        /* ... and it is a 1xx answer's, which another head follows */
    bool head_done;      /* the final answer's head is whole: its body follows */
    bool ended;          /* set by the owner once the transfer ended well: the body is whole */
};

/* An empty receiver (no allocation yet). */
void http_recv_init(struct http_recv *r);

/* Free the buffer; r may be initialised again. */
void http_recv_fini(struct http_recv *r);

/* One line of a head as it came, with its line end: the status line ("HTTP/1.x NNN ..."), a
 * header, or the blank line that ends it (and sets head_done, unless the status was 1xx). 0,
 * or -EPROTO ("not an HTTP response", "a NUL byte in the answer's headers") / -E2BIG ("answer
 * headers over 16384 bytes", "over 100 headers") with why; r is then not to be fed again. */
int http_recv_head(struct http_recv *r, const char *line, size_t n, char *why, size_t whylen);

/* Append n bytes of the body: 0, or -ENOMEM. */
int http_recv_body(struct http_recv *r, const char *p, size_t n);

/* The next body line (without its "\n" or "\r\n"), NUL-terminated in a buffer valid until the
 * next call on r: 1 with *line and *len; after ended is set, the rest without a line end is the
 * last line. 0 when no whole line is buffered (more is to come, or ended and nothing is left).
 * -E2BIG for a line over max_line bytes, found as soon as that many bytes hold no newline;
 * r then holds nothing usable. */
int http_recv_line(struct http_recv *r, const char **line, size_t *len, size_t max_line);

/* Every byte buffered (up to max, else -E2BIG and nothing taken), NUL-terminated, malloc'd:
 * 0 with *out and *len, or -ENOMEM. */
int http_recv_take(struct http_recv *r, char **out, size_t *len, size_t max);

/* Bytes buffered and not handed out. */
size_t http_recv_held(const struct http_recv *r);

#endif
