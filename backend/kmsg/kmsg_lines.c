/* Bounded line splitting for files, FIFOs and pipes. */
#include "backend/kmsg/kmsg_lines.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

void kmsg_lines_init(struct kmsg_lines *b) {
    b->len = 0;
    b->skipping = false;
    b->cut = b->delivered = 0;
}

/* Deliver the complete lines in buf[0..len), keep the unfinished tail. */
static void kmsg_lines_split(struct kmsg_lines *b, kmsg_line_fn fn, void *ctx) {
    size_t start = 0;
    for (;;) {
        char *nl = memchr(b->buf + start, '\n', b->len - start);
        if (!nl)
            break;
        size_t end = (size_t)(nl - b->buf);
        if (!b->skipping) {
            size_t n = end - start;
            b->cut += n > KMSG_LINE_MAX;
            fn(ctx, b->buf + start, n > KMSG_LINE_MAX ? KMSG_LINE_MAX : n);
            b->delivered++;
        }
        b->skipping = false;
        start = end + 1;
    }
    size_t rest = b->len - start;
    if (!b->skipping && rest > KMSG_LINE_MAX) { /* too long: its head now, the rest dropped */
        fn(ctx, b->buf + start, KMSG_LINE_MAX);
        b->delivered++;
        b->cut++;
        b->skipping = true;
    }
    if (b->skipping)
        rest = 0;
    memmove(b->buf, b->buf + b->len - rest, rest);
    b->len = rest;
}

void kmsg_lines_feed(struct kmsg_lines *b, const char *data, size_t n, kmsg_line_fn fn, void *ctx) {
    while (n > 0) {
        size_t room = sizeof(b->buf) - b->len;
        size_t k = n < room ? n : room;
        memcpy(b->buf + b->len, data, k);
        b->len += k;
        data += k;
        n -= k;
        kmsg_lines_split(b, fn, ctx);
    }
}

ssize_t kmsg_lines_read(struct kmsg_lines *b, int fd, kmsg_line_fn fn, void *ctx) {
    ssize_t r = read(fd, b->buf + b->len, sizeof(b->buf) - b->len);
    if (r < 0)
        return -errno;
    b->len += (size_t)r;
    kmsg_lines_split(b, fn, ctx);
    return r;
}

void kmsg_lines_finish(struct kmsg_lines *b, kmsg_line_fn fn, void *ctx) {
    if (b->len > 0 && !b->skipping) {
        fn(ctx, b->buf, b->len);
        b->delivered++;
    }
    b->len = 0;
    b->skipping = false;
}
