/* The JSON-lines recorder: the stream headless mode prints and the dashboard's --record
 * writes, one object per line, flushed line by line. `ringside replay` reads it back. */
#ifndef RINGSIDE_BACKEND_RECORD_RECORD_H
#define RINGSIDE_BACKEND_RECORD_RECORD_H

#include "backend/core/ev.h"
#include "backend/engine/engine.h"
#include "backend/memory/mem_pool.h"
#include "backend/record/run_info.h"

#include <stddef.h>
#include <stdint.h>

#define REC_VERSION 1 /* the "version" of the run line; replay refuses newer ones */

struct rec;

/* Open path for writing ("-" = stdout): a FIFO or a terminal (a character device) is written in
 * place; anything else at path, a file or a link, is replaced at once by a new file
 * (afile_open_stream: never written through a link). 0, or -errno with err "cannot write PATH:
 * reason". */
int rec_open(struct rec **out, const char *path, char *err, size_t errlen);

/* A recorder that hands every line (text without its newline) to line(ctx, text, len) rather
 * than writing a file; line returns 0, or an error (-errno) that stops later writes. 0 or
 * -ENOMEM. rec_close frees it. */
typedef int (*rec_sink_fn)(void *ctx, const char *text, size_t len);
int rec_open_sink(struct rec **out, rec_sink_fn line, void *ctx);

/* The first line: {"type":"run","version":1,"host":..,"backend":..,"device":..,"arch":..,
 * "devices":N,"start_ns":..,"start_wall_ns":..,"epochs":..,"chunk":..,"config":{..}}.
 * epochs and chunk are conf's (the epochs of this invocation, the initial chunk size); config
 * is engine_conf_json(conf).
 * Every rec_* write returns 0, or the first write error (-errno; later writes are skipped). */
int rec_run(struct rec *r, const struct run_info *run, const struct engine_conf *conf);

/* One event, as rec_json_event writes it. */
int rec_event(struct rec *r, const struct ev *e);

/* The segment map of dev at t_ns: {"type":"layout","dev":D,"t_ns":T,"segments":[{"size":N,
 * "small":true,"truncated":false,"blocks":[[offset,size,1|0],..]},..],"n_segments":N}
 * (segments largest first; n_segments counts those not listed too; 1 = allocated). */
int rec_layout(struct rec *r, uint64_t t_ns, unsigned dev, const struct mem_layout *l);

/* A layout line for dev from snapshot s when its memory numbers (allocated, reserved, largest
 * free, free blocks, segments) differ from those of the last layout line r wrote (the first
 * call always writes). Call it with every snapshot read; 0 or the write error. */
int rec_snap(struct rec *r, unsigned dev, const struct engine_snap *s);

/* The run facts of a live engine: host (gethostname), backend and device from its latest
 * snapshot (so call it from the snapshot's reader thread), one device, start from
 * engine_clock_anchor, origin "live". */
void rec_live_run(struct engine *e, struct run_info *out);

/* The last line, as rec_json_summary writes it. */
int rec_summary(struct rec *r, const struct engine_result *res, uint64_t dropped);

/* Flush and close (stdout is flushed, not closed) and free r (NULL is a no-op). 0, or the
 * first write error as -errno with err "cannot write PATH: reason". */
int rec_close(struct rec *r, char *err, size_t errlen);

#endif
