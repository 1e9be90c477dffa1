/* The events that flow from the engine, the telemetry and the kernel-log threads to the UI and
 * the JSON-lines writer. Fixed size, copied by value: no pointer crosses threads. */
#ifndef RINGSIDE_BACKEND_CORE_EV_H
#define RINGSIDE_BACKEND_CORE_EV_H

#include "backend/core/kmsg_event.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Training-loop phases: the name printed in JSON; the letter that stands for the phase in the
 * timeline's cells, legend and help (one a phase, none shared); the label the timeline shows
 * (the host's synchronizes are its "wait" row). */
#define EV_PHASES(X)                                                                               \
    X(LOAD, "load", "l", "load")                                                                   \
    X(VPOC, "vpoc", "v", "vpoc")                                                                   \
    X(FEATURES, "features", "x", "features")                                                       \
    X(H2D, "h2d", "h", "h2d")                                                                      \
    X(CLEANUP, "cleanup", "c", "cleanup")                                                          \
    X(FORWARD, "forward", "f", "forward")                                                          \
    X(BACKWARD, "backward", "b", "backward")                                                       \
    X(OPTIMIZER, "optimizer", "o", "optimizer")                                                    \
    X(SYNC, "sync", "w", "wait")                                                                   \
    X(EVAL, "eval", "e", "eval")                                                                   \
    X(CHECKPOINT, "checkpoint", "k", "checkpoint")                                                 \
    X(PAUSED, "paused", "p", "paused")                                                             \
    X(ALLREDUCE, "allreduce", "a", "allreduce")                                                    \
    X(COMM_INIT, "comm-init", "i", "comm-init")                                                    \
    X(TEARDOWN, "teardown", "t", "teardown")                                                       \
    X(BARRIER, "barrier", "r", "barrier")                                                          \
    X(OTHER, "other", "?", "other") /* a watched job's phase of another name */

enum ev_phase_id {
#define X(id, name, letter, label) PHASE_##id,
    EV_PHASES(X)
#undef X
        PHASE_COUNT
};

/* What a traced synchronize waited for. */
#define EV_SYNC_OPS(X)                                                                             \
    X(DEVICE, "device")                                                                            \
    X(STREAM, "stream")                                                                            \
    X(EVENT, "event")                                                                              \
    X(COPY, "copy")

enum ev_sync_op {
#define X(id, name) SYNC_OP_##id,
    EV_SYNC_OPS(X)
#undef X
        SYNC_OP_COUNT
};

/* The kinds of event: the "type" of its JSON line, and the member of struct ev's union that
 * carries it (what ev_kind_bytes counts). A new kind is a row here and a case in each switch
 * over the kinds (the JSON writer and reader, the replay's snapshot, the dashboard's model):
 * the compiler names every one that lacks it. */
#define EV_KINDS(X)                                                                                \
    X(PHASE, "phase", phase)                                                                       \
    X(SYNC, "sync", sync)                                                                          \
    X(MEM, "mem", mem)                                                                             \
    X(METRIC, "metric", metric)                                                                    \
    X(COMMAND, "command", command)                                                                 \
    X(ALERT, "alert", text)                                                                        \
    X(LOG, "log", text)                                                                            \
    X(KMSG, "kmsg", kmsg)                                                                          \
    X(COLLECTIVE, "collective", coll)

enum ev_kind {
#define X(id, name, member) EV_##id,
    EV_KINDS(X)
#undef X
        EV_KIND_COUNT
};

/* What a command's argument is. */
enum ev_cmd_arg {
    EV_ARG_NONE, /* none (0) */
    EV_ARG_BARS, /* bars per VPOC chunk, 0 = whole sessions, at most VPOC_CHUNK_MAX */
    EV_ARG_STEP  /* +1 or -1: a rung up or down the VPOC chunk ladder (vpoc_chunk_step) */
};

/* Commands from the UI, an attached dashboard or a signal to the engine: the name (in the JSON
 * lines and in POST /control?cmd=NAME), what the argument is, and whether /control takes it. */
#define EV_CMDS(X)                                                                                 \
    X(SET_CHUNK, "set_chunk", EV_ARG_BARS, true)                                                   \
    X(CHUNK_STEP, "chunk_step", EV_ARG_STEP, true)                                                 \
    X(CLEANUP, "cleanup", EV_ARG_NONE, true)                                                       \
    X(PROBE, "probe", EV_ARG_NONE, true)                                                           \
    X(PAUSE, "pause", EV_ARG_NONE, true)                                                           \
    X(RESUME, "resume", EV_ARG_NONE, true)                                                         \
    X(STOP, "stop", EV_ARG_NONE, false)

enum ev_cmd_id {
#define X(id, name, arg, remote) CMD_##id,
    EV_CMDS(X)
#undef X
        CMD_COUNT
};

/* The collective calls of a multi-device run, numbered as the communicator numbers them. */
#define EV_COLL_OPS(X)                                                                             \
    X(NONE, "none")                                                                                \
    X(INIT, "init")                                                                                \
    X(ALLREDUCE, "allreduce")                                                                      \
    X(BARRIER, "barrier")                                                                          \
    X(DESTROY, "destroy")                                                                          \
    X(BROADCAST, "broadcast")                                                                      \
    X(ALLGATHER, "allgather")                                                                      \
    X(REDUCE_SCATTER, "reduce_scatter")

enum ev_coll_op {
#define X(id, name) EV_COLL_##id,
    EV_COLL_OPS(X)
#undef X
        EV_COLL_COUNT
};

enum ev_severity { SEV_INFO, SEV_WARNING, SEV_ERROR };

#define EV_DEV_NONE   0xFFFFu
#define EV_TEXT_BYTES 256

/* One span of a phase, or the same phase of a window of training steps summed up (count > 1:
 * from the first one's start to the last one's end, busy_ns inside them; the steps between two
 * synchronizes come as one event a phase, not thousands a second). */
struct ev_phase {
    uint8_t phase;  /* enum ev_phase_id */
    int32_t epoch;  /* 1-based; 0 before training */
    int32_t chunk;  /* VPOC chunk index within its session; -1 otherwise */
    uint32_t count; /* spans summed here; 0 or 1: one span, start_ns to end_ns */
    int64_t step;   /* global optimizer step (the last one's, when summed); -1 outside a step */
    uint64_t start_ns, end_ns;
    uint64_t busy_ns; /* time inside the spans (count > 1; otherwise end_ns - start_ns) */
};

/* The time a phase event's spans ran: busy_ns when summed, else its one span (0 for one that
 * ends before it starts). */
static inline uint64_t ev_phase_busy_ns(const struct ev_phase *p) {
    if (p->count > 1)
        return p->busy_ns;
    return p->end_ns > p->start_ns ? p->end_ns - p->start_ns : 0;
}

struct ev_sync {
    uint8_t op; /* enum ev_sync_op */
    int32_t rc; /* 0, or the backend's negative error */
    uint64_t start_ns, dur_ns;
};

struct ev_mem {
    uint64_t allocated_bytes, reserved_bytes, largest_free_bytes, total_free_bytes;
    uint32_t free_blocks, segments;
    double frag; /* 1 - largest_free / total_free; 0 when nothing is free */
};

struct ev_metric {
    int32_t epoch;
    int64_t step;
    double loss;     /* mean training loss since the previous metric; the epoch's when has_val */
    double val_loss; /* valid only if has_val */
    bool has_val;
    double samples_per_s;
};

/* Collective calls of one device: one call (init, a barrier, destroy) or the training
 * all-reduces since the previous such event, summed up. */
struct ev_coll {
    uint8_t op;              /* enum ev_coll_op */
    int32_t rc;              /* 0, or the first failure's negative error */
    uint32_t calls;          /* calls summed up here (>= 1) */
    uint64_t bytes;          /* bytes those calls reduced */
    uint64_t start_ns;       /* the first call's start */
    uint64_t dur_ns, max_ns; /* time inside the calls in total, and the longest one */
    int32_t epoch;           /* where the loop was (0 before training) */
    int64_t step;            /* the global step of the last call (-1 outside a step) */
};

/* A command (UI -> engine: arg) or a command result (engine -> UI: rc and text). A chunk_step
 * that is applied answers as the set_chunk of the size it landed on. */
struct ev_command {
    uint8_t cmd; /* enum ev_cmd_id */
    int32_t rc;  /* result: 0 ok, negative error */
    int64_t arg; /* as ev_cmd_arg says: bars per chunk (0 = whole session), or a step of 1 / -1 */
    char text[EV_TEXT_BYTES];
};

/* What an alert or log line is about, for consumers that act on it (a HANG writes a
 * diagnostic bundle; the kernel log being off brings the ways out in the event's details). */
enum ev_alert_code {
    ALERT_NONE,
    ALERT_SYNC_SLOW,
    ALERT_SYNC_HANG,
    ALERT_SYNC_BACK,
    ALERT_KMSG_OFF,
    ALERT_HANG_BUNDLE /* a log line: where the hang diagnostics went (or why they did not) */
};

struct ev_text {
    uint8_t severity; /* enum ev_severity */
    uint8_t code;     /* enum ev_alert_code (ALERT_NONE for most) */
    char text[EV_TEXT_BYTES];
};

struct ev {
    uint64_t t_ns; /* monotonic, when the event happened */
    uint32_t seq;  /* assigned by the ring; a gap tells the consumer events were dropped */
    uint16_t kind; /* enum ev_kind */
    uint16_t dev;  /* device index or EV_DEV_NONE */
    union {
        struct ev_phase phase;
        struct ev_sync sync;
        struct ev_mem mem;
        struct ev_metric metric;
        struct ev_command command;
        struct ev_text text;    /* ALERT and LOG */
        struct kmsg_event kmsg; /* KMSG: a kernel-log (or runtime stderr) event; t_ns is its
                                   time on the run's clock */
        struct ev_coll coll;    /* COLLECTIVE */
    } u;
};

/* ev_kind_bytes[kind]: the bytes an event of that kind uses, the header and its member of
 * the union (ev.c, from EV_KINDS). */
extern const uint16_t ev_kind_bytes[EV_KIND_COUNT];

/* The bytes of e that its kind uses (all of it for a kind unknown here). A copy of that many
 * carries the event; what lies past them is no part of it, and a consumer reads the member
 * its kind names, never another. ev_bytes_of_kind: the same for a kind. */
static inline size_t ev_bytes_of_kind(unsigned kind) {
    size_t n = kind < EV_KIND_COUNT ? ev_kind_bytes[kind] : 0;
    return n ? n : sizeof(struct ev);
}

static inline size_t ev_bytes(const struct ev *e) {
    return ev_bytes_of_kind(e->kind);
}

/* Copy src's own bytes into dst (a cache line at least: the frequent small kinds then copy
 * without a call). */
static inline void ev_copy(struct ev *dst, const struct ev *src) {
    size_t n = ev_bytes(src);
    if (n <= 64)
        memcpy(dst, src, 64); /* a constant size: two moves, no call */
    else
        memcpy(dst, src, n);
}

/* Names for the enums above, or "?" when out of range. */
const char *ev_kind_name(unsigned kind);
const char *ev_phase_name(unsigned phase);
/* A phase's letter on the timeline ('?' out of range, as for PHASE_OTHER), and its label
 * there ("wait" for sync; "?" out of range). */
char ev_phase_letter(unsigned phase);
const char *ev_phase_label(unsigned phase);
const char *ev_sync_op_name(unsigned op);
const char *ev_cmd_name(unsigned cmd);
const char *ev_severity_name(unsigned sev);
const char *ev_coll_op_name(unsigned op);

/* Reverse lookup for the JSON reader; -1 when unknown. */
int ev_phase_from_name(const char *name);
int ev_coll_op_from_name(const char *name);

/* A command's id from its name ("set_chunk"), or -1 when there is no such command. */
int ev_cmd_from_name(const char *name);

/* What cmd's argument is (EV_ARG_NONE out of range). */
enum ev_cmd_arg ev_cmd_arg(unsigned cmd);

/* Whether POST /control takes cmd (a remote stop is refused: the agent's owner stops it). */
bool ev_cmd_remote(unsigned cmd);

#endif
