/* The agent's event log: the JSON lines a remote follower reads (GET /events), kept in a
 * bounded in-memory window. One writer (the agent's main loop) appends; any number of
 * followers read from any thread and wait for new lines without polling.
 *
 * Numbering: every event line gets the next sequence number (1, 2, ...), the "seq" its JSON
 * carries; a state line (layout, status, summary) is tagged with the number of the last event
 * before it. A follower that has seen events up to SEQ asks for since=SEQ and gets every event
 * line numbered above SEQ and every state line tagged SEQ or later, in the order appended, so a
 * reconnect loses nothing still in the window and a gap in the numbers means lines the window
 * no longer holds. The run line (the stream's first) and the latest line of each sticky kind
 * (status, layout) are kept outside the window, so a late follower still starts from the whole
 * state. */
#ifndef RINGSIDE_TUI_AGENT_AGENT_LOG_H
#define RINGSIDE_TUI_AGENT_AGENT_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum agent_line_kind {
    AGENT_LINE_EVENT,  /* numbered */
    AGENT_LINE_STATE,  /* tagged, not sticky (the summary) */
    AGENT_LINE_STATUS, /* tagged, sticky: telemetry and kernel-log counters */
    AGENT_LINE_LAYOUT, /* tagged, sticky: the pool's segment map */
    AGENT_LINE_KIND_COUNT
};

struct agent_log;

/* A window of at most max_lines lines and max_bytes bytes of text (the oldest go first; the
 * newest line is always kept, whatever its size). 0 or -ENOMEM / -EINVAL (a zero limit). */
int agent_log_create(struct agent_log **out, size_t max_lines, size_t max_bytes);
void agent_log_destroy(struct agent_log *l);

/* The run line (no newline): sent first to every follower. Replaces any earlier one. 0 or
 * -ENOMEM. */
int agent_log_set_run(struct agent_log *l, const char *line);

/* Append one line (text without its newline, len bytes, no '\n' inside). Returns the event
 * number it got (EVENT) or its tag (other kinds); wakes every waiting follower. 0 on -ENOMEM
 * (the line is dropped and counted). Writer thread only. */
uint64_t agent_log_append(struct agent_log *l, enum agent_line_kind kind, const char *text,
                          size_t len);

/* The last event number given (0 before the first). */
uint64_t agent_log_last_seq(struct agent_log *l);

/* No more lines will come: followers are woken and, once they have read everything, end.
 * Lines appended after it are still delivered to followers that have not ended. */
void agent_log_close(struct agent_log *l);

/* After agent_log_close: wait up to timeout_ms for every follower to have read to the end and
 * closed (a server that stops calls it first, so followers get the last lines). True when none
 * is left. */
bool agent_log_wait_followers(struct agent_log *l, int timeout_ms);

/* Wake every follower waiting in agent_follow_read now: with nothing pending it returns 0 at
 * once (a server that is stopping uses it so that no stream waits out its wait_ms). */
void agent_log_wake(struct agent_log *l);

/* ---- followers ---- */

struct agent_follow;

/* Start following after event since (0 = from the oldest line still held): the follower starts
 * at the first held line that since selects, or at the next line to come when none does (a since
 * beyond the last event, from an earlier run, gets the new lines whatever their numbers). The log
 * must outlive its followers. 0 or -ENOMEM. */
int agent_follow_open(struct agent_follow **out, struct agent_log *l, uint64_t since);
void agent_follow_close(struct agent_follow *f);

/* Copy the next bytes of the stream into buf (up to cap, whole lines where they fit; a line
 * longer than cap is continued at the next call): the run line first, then the sticky lines the
 * window no longer holds that the follower has not seen, then the window's lines in order,
 * each ending in '\n'. A follower that fell behind (its next line was pushed out) goes on at
 * the oldest line held, after the latest sticky lines it skipped. Waits up to wait_ms (<= 0: not
 * at all) for something new when nothing is pending.
 * Returns the bytes copied; 0 when nothing came in wait_ms (the caller may send a keep-alive
 * "\n", which readers skip as a blank line); -1 when the log is closed and everything was
 * read. One thread at a time per follower. */
long agent_follow_read(struct agent_follow *f, char *buf, size_t cap, int wait_ms);

/* Counters for the agent's own metrics. */
struct agent_log_stats {
    uint64_t lines, bytes; /* held in the window now */
    uint64_t appended;     /* lines appended since creation */
    uint64_t evicted;      /* lines pushed out of the window */
    uint64_t failed;       /* lines dropped for want of memory */
    unsigned followers;    /* open followers */
};
void agent_log_stats(struct agent_log *l, struct agent_log_stats *out);

#endif
