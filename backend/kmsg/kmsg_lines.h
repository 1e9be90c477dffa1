/* Splitting a byte stream (a file, a FIFO, a pipe) into lines with a fixed buffer: a line
 * longer than the buffer is cut (and counted), never a reason to grow. */
#ifndef RINGSIDE_BACKEND_KMSG_KMSG_LINES_H
#define RINGSIDE_BACKEND_KMSG_KMSG_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define KMSG_LINE_MAX 8192 /* bytes of a line kept; the rest of a longer line is dropped */

/* Called with each line (no newline; not NUL-terminated). */
typedef void (*kmsg_line_fn)(void *ctx, const char *line, size_t n);

struct kmsg_lines {
    char buf[KMSG_LINE_MAX + 4096];
    size_t len;         /* bytes held: the start of an unfinished line */
    bool skipping;      /* inside an over-long line whose head was already delivered */
    uint64_t cut;       /* over-long lines cut */
    uint64_t delivered; /* lines delivered */
};

void kmsg_lines_init(struct kmsg_lines *b);

/* One read(2) from fd; every line it completes goes to fn. Returns the bytes read, 0 at end of
 * file, or -errno (-EAGAIN when a non-blocking fd has nothing). */
ssize_t kmsg_lines_read(struct kmsg_lines *b, int fd, kmsg_line_fn fn, void *ctx);

/* Feed bytes that came some other way (same rules as read). */
void kmsg_lines_feed(struct kmsg_lines *b, const char *data, size_t n, kmsg_line_fn fn, void *ctx);

/* At end of input: a last line without a newline is delivered. */
void kmsg_lines_finish(struct kmsg_lines *b, kmsg_line_fn fn, void *ctx);

#endif
