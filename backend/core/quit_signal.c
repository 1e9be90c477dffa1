/* Quit signals: a count and a self-pipe, the second signal's exit in the handler. */
#define _GNU_SOURCE /* pipe2 */
#include "backend/core/quit_signal.h"

#include "backend/core/errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_int quit_signal_count; /* lock-free: safe in a handler, on any thread */
static atomic_int quit_signal_first_sig;
static atomic_bool quit_signal_said; /* the first's handler has said its words */
static atomic_int quit_signal_out = 2;
static int quit_signal_pipe[2] = {-1, -1};
static char quit_signal_prefix[64], quit_signal_first_words[160];
static bool quit_signal_say_first;
static void (*quit_signal_leave)(void);
static bool quit_signal_hup;

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the handler's counter must be lock-free");

/* strsignal's words for the three, which strsignal itself may not give in a handler */
static const char *quit_signal_name(int sig) {
    return sig == SIGINT ? "Interrupt" : sig == SIGTERM ? "Terminated" : "Hangup";
}

/* The pieces of one line in one write(2) (memcpy and strlen are async-signal-safe), so two
 * handlers on two threads never mix their words. */
static void quit_signal_say(const char *a, const char *b, const char *c, const char *d) {
    const char *parts[] = {a, b, c, d};
    char line[sizeof(quit_signal_prefix) + sizeof(quit_signal_first_words) + 64];
    size_t n = 0;
    for (size_t k = 0; k < sizeof(parts) / sizeof(parts[0]); k++) {
        size_t len = strlen(parts[k]);
        len = len < sizeof(line) - 1 - n ? len : sizeof(line) - 1 - n;
        memcpy(line + n, parts[k], len);
        n += len;
    }
    line[n++] = '\n';
    ssize_t w = write(atomic_load(&quit_signal_out), line, n);
    (void)w;
}

static void quit_signal_on(int sig) {
    int saved = errno;
    if (atomic_fetch_add(&quit_signal_count, 1) == 0) {
        atomic_store(&quit_signal_first_sig, sig);
        ssize_t w = write(quit_signal_pipe[1], "q", 1);
        (void)w;
        if (quit_signal_say_first)
            quit_signal_say(quit_signal_prefix, quit_signal_name(sig), ": stopping",
                            quit_signal_first_words);
        atomic_store(&quit_signal_said, true);
        errno = saved;
        return;
    }
    /* the first's words, if its handler runs on another thread right now: 50 ms at most */
    for (int k = 0; k < 50 && !atomic_load(&quit_signal_said); k++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    if (quit_signal_leave)
        quit_signal_leave();
    quit_signal_say(quit_signal_prefix, "second ", quit_signal_name(sig), ": exiting immediately");
    _exit(RS_EXIT_INTR);
}

int quit_signal_install(const struct quit_signal_conf *c) {
    if (quit_signal_pipe[0] < 0 && pipe2(quit_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        return -errno;
    char drain[16];
    while (read(quit_signal_pipe[0], drain, sizeof(drain)) > 0) {
    }
    atomic_store(&quit_signal_count, 0);
    atomic_store(&quit_signal_first_sig, 0);
    atomic_store(&quit_signal_said, false);
    snprintf(quit_signal_prefix, sizeof(quit_signal_prefix), "%s",
             c->prefix ? c->prefix : "ringside: ");
    snprintf(quit_signal_first_words, sizeof(quit_signal_first_words), "%s",
             c->first ? c->first : "");
    quit_signal_say_first = c->first != NULL;
    quit_signal_leave = c->leave;
    quit_signal_hup = !c->keep_hup;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = quit_signal_on;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaddset(&sa.sa_mask, SIGHUP);
    if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0 ||
        (quit_signal_hup && sigaction(SIGHUP, &sa, NULL) != 0))
        return -errno;
    return 0;
}

void quit_signal_set_fd(int fd) {
    atomic_store(&quit_signal_out, fd);
}

int quit_signal_first(void) {
    return atomic_load(&quit_signal_first_sig);
}

int quit_signal_fd(void) {
    return quit_signal_pipe[0];
}

void quit_signal_mask(bool block) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    if (quit_signal_hup)
        sigaddset(&s, SIGHUP);
    pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &s, NULL);
}

void quit_signal_uninstall(void) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (quit_signal_hup)
        signal(SIGHUP, SIG_DFL);
    quit_signal_leave = NULL;
}
