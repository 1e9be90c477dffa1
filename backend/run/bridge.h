/* The listening side of the PyTorch bridge (python/ringside): a UNIX stream socket, private to
 * the user, that training scripts connect to, one connection a job, and stream JSON lines over
 * (the headless schema, plus the bridge's own "call" lines); lines back to a job carry the
 * dashboard's commands. Everything is non-blocking and driven by the caller's poll: a job
 * that floods is read at the caller's pace (the script drops and counts on its side), one that
 * does not read its commands gets -EAGAIN, and a line longer than BRIDGE_LINE_MAX is skipped
 * and counted. One thread. */
#ifndef RINGSIDE_BACKEND_RUN_BRIDGE_H
#define RINGSIDE_BACKEND_RUN_BRIDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BRIDGE_MAX_JOBS 16         /* connections at once; more are refused (closed at once) */
#define BRIDGE_LINE_MAX (1u << 20) /* a longer line is skipped and counted */
#define BRIDGE_PATH_MAX 108        /* sun_path */

struct bridge;

/* $XDG_RUNTIME_DIR/ringside/bridge.sock, or /tmp/ringside-UID/bridge.sock without it. 0, or
 * -ENAMETOOLONG. */
int bridge_default_path(char *out, size_t outlen);

/* Listen at path (NULL: the default), creating its directory (mode 0700) and the socket (mode
 * 0600). A socket left by a process that is gone is replaced; one that answers is another
 * listener: -EADDRINUSE. 0, or -errno with err naming the path. */
int bridge_open(struct bridge **out, const char *path, char *err, size_t errlen);
/* Close every connection and remove the socket file. NULL is a no-op. */
void bridge_close(struct bridge *b);

const char *bridge_path(const struct bridge *b);
/* The listening socket and every connection, for the caller's poll (room for
 * BRIDGE_MAX_JOBS + 1); the count. */
size_t bridge_fds(const struct bridge *b, int *fds);

/* What bridge_poll reports. job: the connection's slot (0..BRIDGE_MAX_JOBS-1), reused after
 * it closes (a JOB_CLOSED comes before). */
struct bridge_sink {
    void (*opened)(void *ctx, unsigned job, pid_t pid); /* pid from the socket (0: unknown) */
    void (*line)(void *ctx, unsigned job, const char *line, size_t len); /* without newline */
    void (*overlong)(void *ctx, unsigned job);                           /* a line skipped */
    void (*closed)(void *ctx, unsigned job);
    void *ctx;
    /* Optional: a process of another user (not root) connected and was closed at once (the
     * socket's mode keeps others out; a --socket in a shared place may not). */
    void (*refused)(void *ctx, pid_t pid, uid_t uid);
};

/* Accept what is waiting and read what every connection has sent, at most max_bytes in all
 * (a flood cannot hold the caller), handing complete lines to the sink. Never blocks. The
 * bytes read. */
size_t bridge_poll(struct bridge *b, const struct bridge_sink *sink, size_t max_bytes);

/* Send one line (a newline is added) to job. 0; -EAGAIN when the job is not reading (nothing
 * is sent); -ENOTCONN when there is no such connection. */
int bridge_send(struct bridge *b, unsigned job, const char *line);

#endif
