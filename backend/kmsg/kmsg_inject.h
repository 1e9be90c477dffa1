/* The replay schedule of --inject kmsg:FILE: the file's lines, each with the time after the
 * watcher's start at which it is fed to the classifier as if the kernel had just printed it.
 * Pure (no clock, no thread): the watcher asks which lines are due and when the next one is.
 *
 * Timing: a line's due time is the sum of the gaps between the kernel stamps (`[  12.345678]`
 * of dmesg and journalctl -o short-monotonic, or a saved record's) of the timestamped lines
 * before it, counted from the first timestamped line; a line without a stamp is due with the
 * line before it (the first ones at the start). A silence longer than KMSG_INJECT_GAP_MAX_NS
 * is shortened to it, so a capture spanning hours replays in seconds or minutes; a stamp that
 * goes backwards (another boot) is a gap of 0. */
#ifndef RINGSIDE_BACKEND_KMSG_KMSG_INJECT_H
#define RINGSIDE_BACKEND_KMSG_KMSG_INJECT_H

#include "backend/kmsg/kmsg.h"

#include <stddef.h>
#include <stdint.h>

#define KMSG_INJECT_MAX_BYTES  (8u << 20)     /* a larger file is an error */
#define KMSG_INJECT_MAX_LINES  100000u        /* ... and so is one with more lines */
#define KMSG_INJECT_GAP_MAX_NS 10000000000ull /* longer silences are cut to this (10 s) */

/* One line to feed. */
struct kmsg_inject_line {
    uint64_t due_ns; /* after the start; never less than the line before's */
    uint32_t off;    /* the line in the schedule's text (no newline) */
    uint32_t len;
    uint32_t lineno; /* 1-based line number in the file */
};

/* A schedule. All zeros is a valid empty one (nothing to replay); kmsg_inject_fini frees. */
struct kmsg_inject {
    char *text;                     /* the file's bytes (owned) */
    struct kmsg_inject_line *lines; /* in file order (owned) */
    uint32_t n;                     /* lines to feed: blank and " KEY=VALUE" lines are not */
    uint32_t next;                  /* the first line not fed yet */
};

/* Build the schedule of buf (n bytes, copied: the caller keeps buf) into *s, which must be
 * zeroed or finied. 0; -EFBIG with err saying which limit (KMSG_INJECT_MAX_BYTES, or more than
 * KMSG_INJECT_MAX_LINES lines in all) buf is over; -ENOMEM. An empty buf is a valid, empty
 * schedule. On failure *s is left empty. */
int kmsg_inject_parse(struct kmsg_inject *s, const char *buf, size_t n, char *err, size_t errlen);

/* Read the regular file path (at most KMSG_INJECT_MAX_BYTES) and build its schedule, as
 * kmsg_inject_parse. 0, or -errno with err "--inject kmsg:PATH: why" (one line). */
int kmsg_inject_load(struct kmsg_inject *s, const char *path, char *err, size_t errlen);

/* Free the schedule and leave it empty. Zeroed or already finied is fine. */
void kmsg_inject_fini(struct kmsg_inject *s);

/* The next line if it is due at t_ns after the start (marked fed: the next call returns the
 * one after it), else NULL (none due yet, or every line fed). */
const struct kmsg_inject_line *kmsg_inject_due(struct kmsg_inject *s, uint64_t t_ns);

/* When the next line is due (ns after the start), or UINT64_MAX when every line was fed. */
uint64_t kmsg_inject_next_ns(const struct kmsg_inject *s);

/* How long the whole replay takes: the last line's due time (0 when empty). */
uint64_t kmsg_inject_span_ns(const struct kmsg_inject *s);

/* Parse line l of s into *out (a saved record or a dmesg/journalctl text line; text points into
 * s) with its stamp dropped (has_ts false): it is from another boot, and the line's time is
 * when it is fed. */
void kmsg_inject_line(const struct kmsg_inject *s, const struct kmsg_inject_line *l,
                      struct kmsg_line *out);

#endif
