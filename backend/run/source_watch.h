/* The source of `ringside watch`: the run's telemetry and kernel log (no loop of ours), and
 * the jobs attached through the bridge (python/ringside), each shown as a training device: its
 * phases, metrics, synchronizes and allocator as the lines it streams say, the call it is in
 * (a synchronize, a process-group call) for the hang watch, and the loop's keys sent to it as
 * commands when it takes them. */
#ifndef RINGSIDE_BACKEND_RUN_SOURCE_WATCH_H
#define RINGSIDE_BACKEND_RUN_SOURCE_WATCH_H

#include "backend/run/bridge.h"
#include "backend/run/source.h"

struct replay_item;
struct run;

/* A source over run (a run without the loop: telemetry and kernel log) and b (listening);
 * both borrowed, outliving the source. 0 or -ENOMEM. */
int watch_source_create(struct run *run, struct bridge *b, struct source **out);

/* The same over a bridge its caller polls (the agent, which serves a job's stream as it comes):
 * the caller hands every job's lines to watch_source_line (its opens and closes to the sink
 * watch_source_sink gives) and serves the lines as parsed there; drain then reads neither the
 * bridge nor the run and hands out what the source says of the jobs (attach and end lines, the
 * hang watch's alerts, where a hang bundle went) and the jobs' own events, numbered by the
 * source. The stacks it asks for go out on b, from the thread that drains (the caller's lock on
 * b held). 0 or -ENOMEM. */
int watch_source_create_fed(struct run *run, struct bridge *b, struct source **out);
/* The sink that feeds s (ctx included), for the caller's bridge_poll. */
void watch_source_sink(struct source *s, struct bridge_sink *out);

/* What the sink's line does (job's line handed to s), and what the recording parser made of
 * the line, parsed once for s and its caller alike: 0 with *item (s's, until the next line;
 * REPLAY_BLANK for a blank line or one of the bridge's own, such as "call"), or the error
 * replay_parse_line gives for the line. */
int watch_source_line(struct source *s, unsigned job, const char *line, size_t len,
                      const struct replay_item **item);
/* The device job slot runs on, as its framework numbers it (what its own lines say), or
 * EV_DEV_NONE for a slot with no job. */
unsigned watch_source_job_dev(struct source *s, unsigned slot);

/* Lines read from the jobs that were not understood (each job's first reason goes to the
 * events as a warning), and events dropped because the queue was full. */
void watch_source_counts(struct source *s, uint64_t *bad_lines, uint64_t *dropped);

#endif
