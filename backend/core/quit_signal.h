/* Quit signals for a whole process (SIGINT, SIGTERM and, unless the caller keeps it, SIGHUP):
 * the first is remembered and wakes quit_signal_fd(), for the front end to start a graceful
 * stop; the second leaves at once from the handler itself, whatever the other threads are
 * doing: the leave hook, one line, _exit(130). Nothing in that path takes a lock, allocates,
 * waits or joins. */
#ifndef RINGSIDE_BACKEND_CORE_QUIT_SIGNAL_H
#define RINGSIDE_BACKEND_CORE_QUIT_SIGNAL_H

#include <stdbool.h>

struct quit_signal_conf {
    bool keep_hup; /* leave SIGHUP to the caller (the agent reopens its log on it) */
    /* What the lines start with ("ringside agent: "); copied. The second signal's line is
     * PREFIX "second Interrupt: exiting immediately" (Terminated, Hangup). */
    const char *prefix;
    /* Non-NULL: the first signal's line, PREFIX "Interrupt: stopping" FIRST, is written by
     * the handler itself (so it is said even when the second comes at once); copied. NULL:
     * the front end says it its own way (the dashboard, on its screen). */
    const char *first;
    /* Optional, before the second's line: async-signal-safe calls only (write, tcsetattr) to
     * put the terminal back. */
    void (*leave)(void);
};

/* Install the handlers (again: the count starts over). 0 or -errno. */
int quit_signal_install(const struct quit_signal_conf *c);

/* Where the last words go (default 2): an fd that reaches the user (the terminal behind a
 * tee or a session log). Async-signal-safe. */
void quit_signal_set_fd(int fd);

/* The first quit signal that came (SIGINT, SIGTERM or SIGHUP), 0 while none has. */
int quit_signal_first(void);

/* Readable once the first has come (for poll); stays readable. */
int quit_signal_fd(void);

/* Block (true) or unblock the quit signals in the calling thread: threads created while they
 * are blocked leave them to the threads that are not, so the front end's own thread takes them
 * one after another, in order. */
void quit_signal_mask(bool block);

/* Default dispositions again for the signals installed. */
void quit_signal_uninstall(void);

#endif
