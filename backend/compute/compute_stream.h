/* An in-order asynchronous work queue with one worker thread: the CPU backend's "stream".
 * Enqueue returns at once; compute_stream_wait() blocks until everything enqueued has run,
 * exactly as a GPU stream synchronize does, so sync tracing measures real waiting. */
#ifndef RINGSIDE_BACKEND_COMPUTE_COMPUTE_STREAM_H
#define RINGSIDE_BACKEND_COMPUTE_COMPUTE_STREAM_H

#include <stddef.h>

#define COMPUTE_STREAM_ARG_MAX 128 /* bytes of arguments copied with each operation */

struct compute_stream;

/* An operation: runs on the worker with its copied arguments; 0 or a negative error that
 * becomes the stream's sticky error (later operations still run). */
typedef int (*compute_stream_fn)(void *arg);

/* depth: queued operations before enqueue blocks (>= 1). 0 or -errno. */
int compute_stream_create(struct compute_stream **out, size_t depth);
/* Waits for queued work, then stops the worker. */
void compute_stream_destroy(struct compute_stream *s);

/* Copy arg_bytes (<= COMPUTE_STREAM_ARG_MAX) of arg and queue fn. Blocks only while the
 * queue is full. 0 or -E2BIG. */
int compute_stream_enqueue(struct compute_stream *s, compute_stream_fn fn, const void *arg,
                           size_t arg_bytes);

/* Block until every operation enqueued before the call has finished; return and clear the
 * sticky error (0 if none). */
int compute_stream_wait(struct compute_stream *s);

#endif
