/* The JSON-lines schema's writer: an event, or a run's summary, as one JSON object (no
 * newline), the lines headless mode prints, recordings hold and the agent serves; the reader
 * of the same lines is replay_parse_line (replay_internal.h). */
#ifndef RINGSIDE_BACKEND_RECORD_RECORD_JSON_H
#define RINGSIDE_BACKEND_RECORD_RECORD_JSON_H

#include "backend/core/ev.h"
#include "backend/engine/engine.h"

#include <stddef.h>
#include <stdint.h>

/* One JSON object (no newline) for an event: {"type":KIND,"seq":N,...}. Returns the length it
 * has (what buf holds is truncated to n-1), as snprintf. */
int rec_json_event(const struct ev *e, char *buf, size_t n);

/* The final summary object: {"type":"summary","state":...}; dropped: the events the run's
 * rings dropped. Returns the length, as snprintf. */
int rec_json_summary(const struct engine_result *r, uint64_t dropped, char *buf, size_t n);

#endif
