/* The kernel-log watcher: a thread that follows /dev/kmsg (or a file or FIFO in the dmesg /
 * journalctl formats) and the session log the GPU runtime writes its fatal messages to, and
 * replays the lines of an --inject kmsg:FILE as if the kernel printed them; it classifies every
 * line, and pushes the events onto a ring of its own (a flood drops the oldest, counted) with
 * their times on the run's monotonic clock. */
#ifndef RINGSIDE_BACKEND_KMSG_KMSG_WATCH_H
#define RINGSIDE_BACKEND_KMSG_KMSG_WATCH_H

#include "backend/core/evring.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KMSG_PATH_MAX 1024

struct kmsg_conf {
    bool off;                        /* --no-kmsg: no kernel log (an --inject kmsg: still runs) */
    char kmsg_path[KMSG_PATH_MAX];   /* the kernel's record device (/dev/kmsg) */
    char file[KMSG_PATH_MAX];        /* --kmsg-file: follow this file or FIFO instead, or "" */
    char session_log[KMSG_PATH_MAX]; /* the runtime's stderr, followed from its end, or "" */
    int backlog;                     /* --kmsg-backlog: earlier kernel records to read */
    bool chatter;                    /* also pass GPU-driver lines that are not failures (info) */
    char inject[KMSG_PATH_MAX];      /* --inject kmsg:FILE: lines replayed as if from the kernel
                                        (alongside the kernel log, timed as kmsg_inject.h says), or
                                        "" */
};

void kmsg_conf_default(struct kmsg_conf *c);

/* Where the kernel log comes from, for the events panel's title. */
enum kmsg_state {
    KMSG_STATE_OFF,        /* --no-kmsg */
    KMSG_STATE_LIVE,       /* reading /dev/kmsg */
    KMSG_STATE_FILE,       /* following --kmsg-file */
    KMSG_STATE_UNREADABLE, /* /dev/kmsg could not be opened: see reason */
};

/* Counters, read at any time from any thread. */
struct kmsg_stats {
    enum kmsg_state state;
    uint64_t lines;   /* kernel, session-log and injected lines read */
    uint64_t events;  /* events pushed (failures, and chatter when asked for) */
    uint64_t lost;    /* kernel records overwritten before they were read (seq gaps, EPIPE) */
    uint64_t cut;     /* over-long lines cut */
    uint64_t dropped; /* events the ring dropped because the reader fell behind */
};

struct kmsg_watch;

/* Open the sources. --kmsg-file that cannot be opened is an error (-errno, err names the
 * file), and so is an --inject kmsg:FILE that cannot be read or is over the limits of
 * kmsg_inject.h (err "--inject kmsg:FILE: why"); a failed create pushes no event. /dev/kmsg that
 * cannot be read is not an error: the watcher reports KMSG_STATE_UNREADABLE, and its first event
 * is a warning that says why and the ways out. An injection pushes a warning saying what is
 * armed ("fault injection armed: kmsg:FILE (N lines over S s)"). Events go to ring (owned by the
 * caller, drained by one consumer). 0 or -errno. */
int kmsg_watch_create(struct kmsg_watch **out, const struct kmsg_conf *c, struct evring *ring,
                      char *err, size_t errlen);

/* Start the thread; an injection's schedule starts now. Injected lines are classified with a
 * classifier of their own (source KMSG_SRC_FILE), stamped with the monotonic time they are fed
 * (never their own stamps: those are another boot's), and counted in lines. 0 or -errno. */
int kmsg_watch_start(struct kmsg_watch *w);

void kmsg_watch_stats(struct kmsg_watch *w, struct kmsg_stats *out);

/* The reason /dev/kmsg is unreadable ("" otherwise); fixed once created. */
const char *kmsg_watch_reason(const struct kmsg_watch *w);

/* Stop the thread (promptly: it wakes on the request), then read once more what the sources
 * hold already (and the injected lines due by now, not later ones: the run ended before they
 * were printed) and close open groups, so events written before the end are not lost; their
 * events are on the ring when this returns. Idempotent; NULL is fine. */
void kmsg_watch_stop(struct kmsg_watch *w);

/* Stop (kmsg_watch_stop), close everything, free. NULL is fine. */
void kmsg_watch_destroy(struct kmsg_watch *w);

/* Kernel timestamps onto CLOCK_MONOTONIC: the printk clock runs close to it but may lag or
 * lead by a little. Each live record bounds the offset (it cannot have been printed after it
 * was read), so the offset only ever moves to keep markers out of the future. */
struct kmsg_clock {
    int64_t offset_ns; /* added to a kernel timestamp */
};

/* A record stamped ts_ns was read at now_ns (both ns). */
void kmsg_clock_observe(struct kmsg_clock *c, uint64_t ts_ns, uint64_t now_ns);

/* ts_ns on the monotonic clock. */
uint64_t kmsg_clock_map(const struct kmsg_clock *c, uint64_t ts_ns);

#endif
