/* The source of `ringside watch`: the run's telemetry and kernel log (no loop of ours), and
 * the jobs attached through the bridge (python/ringside), each shown as a training device: its
 * phases, metrics, synchronizes and allocator as the lines it streams say, the call it is in
 * (a synchronize, a process-group call) for the hang watch, and the loop's keys sent to it as
 * commands when it takes them. */
#ifndef RINGSIDE_BACKEND_RUN_SOURCE_WATCH_H
#define RINGSIDE_BACKEND_RUN_SOURCE_WATCH_H

#include "backend/run/bridge.h"
#include "backend/run/source.h"

struct run;

/* A source over run (a run without the loop: telemetry and kernel log) and b (listening);
 * both borrowed, outliving the source. 0 or -ENOMEM. */
int watch_source_create(struct run *run, struct bridge *b, struct source **out);

/* Lines read from the jobs that were not understood (each job's first reason goes to the
 * events as a warning), and events dropped because the queue was full. */
void watch_source_counts(struct source *s, uint64_t *bad_lines, uint64_t *dropped);

#endif
