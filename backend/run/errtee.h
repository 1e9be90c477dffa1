/* stderr copied, as it is written, to where it went before and to a file: in a headless run the
 * GPU runtime's own messages (HIP's `Memory access fault by GPU node-N ...`,
 * `HSA_STATUS_ERROR_...`, CUDA's fatal prints) reach the terminal as before and also the
 * session log the kernel-log watcher follows, so they are classified as in the dashboard. */
#ifndef RINGSIDE_BACKEND_RUN_ERRTEE_H
#define RINGSIDE_BACKEND_RUN_ERRTEE_H

#include <stddef.h>

struct errtee;

/* From now on, file descriptor 2 is a pipe whose bytes a thread writes to the former stderr and
 * appends to path: a regular file of this user's, created 0600 (an existing one made 0600), as
 * afile_open_fd opens it, so a link, a FIFO, a directory or another user's file there is
 * refused (afile_refused(rc)) without being followed, waited on or written. 0, or -errno with
 * err set (stderr is then as it was). */
int errtee_start(struct errtee **out, const char *path, char *err, size_t errlen);

/* Give file descriptor 2 back, after every byte written to it before the call has reached
 * both places; frees t. NULL is a no-op. */
void errtee_stop(struct errtee *t);

/* Where a message that must reach the terminal at once goes: the former stderr while a tee runs
 * (one a process), else 2. Async-signal-safe: for a signal handler's last words before _exit,
 * which the tee's thread would not live to copy. */
int errtee_terminal_fd(void);

#endif
