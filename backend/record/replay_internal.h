/* Shared between the replay source and its line parser: one parsed line of a recording. */
#ifndef RINGSIDE_BACKEND_RECORD_REPLAY_INTERNAL_H
#define RINGSIDE_BACKEND_RECORD_REPLAY_INTERNAL_H

#include "backend/core/ev.h"
#include "backend/engine/engine.h"
#include "backend/memory/mem_pool.h"
#include "backend/record/run_info.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;

/* NONE: a line that did not parse far enough to know (kind is set as soon as the type is). */
enum replay_kind {
    REPLAY_NONE,
    REPLAY_RUN,
    REPLAY_EVENT,
    REPLAY_LAYOUT,
    REPLAY_SUMMARY,
    REPLAY_BLANK
};

/* The fields of a summary line the snapshot uses. */
struct replay_summary {
    bool failed, stopped;
    int32_t epochs;
    int64_t steps;
    double train_loss, val_loss, best_val_loss;
    bool has_train_loss, has_val;
    int32_t best_epoch;                         /* with best_checkpoint */
    char checkpoint[256], best_checkpoint[256]; /* "" when the line has none */
};

/* The run line's fields beyond struct run_info. */
struct replay_run_extra {
    int64_t version;
    int32_t epochs; /* epochs of the recorded invocation; a job's: its total (0: not told) */
    int chunk_bars;
    /* A PyTorch job's stream (the Python bridge's run line, "ringside": "bridge"): what it
     * tells of its length, 0 where it does not (steps_per_epoch, batch_size). */
    bool job;
    int64_t steps_per_epoch, batch_size;
};

/* A metric line's members beyond struct ev_metric: which rates it has (a job's lines may
 * lack samples_per_s; steps_per_s is the bridge's own). */
struct replay_metric_extra {
    bool has_samples_per_s, has_steps_per_s;
    double steps_per_s;
};

/* One line. t_ns is when it happened on the run's clock (phase: end, sync: start + duration);
 * 0 for a summary (released as soon as it is reached). Only the member of kind is set. */
struct replay_item {
    enum replay_kind kind;
    uint64_t t_ns;
    unsigned dev; /* LAYOUT */
    struct ev ev;
    struct mem_layout layout;
    struct replay_summary sum;
    struct run_info run;
    struct replay_run_extra extra;
    char phase_name[32]; /* PHASE: the line's own "name" string, when it has one (a bridge job's
                            phase of its own, recorded as phase "other"); "" otherwise */
    struct replay_metric_extra metric; /* METRIC */
};

/* Parse one line (len bytes, no newline needed) into it. 0, or -EINVAL with why: "invalid
 * JSON ...", "unknown type 'x'", "missing field 'x'", "field 'x' is not an integer", ... */
int replay_parse_line(const char *line, size_t len, struct replay_item *it, char *why,
                      size_t whylen);

/* The same for a line already parsed (o, a JSON object; borrowed): what replay_parse_line makes
 * of a line that is not blank once it has parsed it. */
int replay_parse_object(struct json_object *o, struct replay_item *it, char *why, size_t whylen);

#endif
