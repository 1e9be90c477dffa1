/* The classifier: recognises driver and runtime failures in log messages, extracts their
 * fields, and folds multi-line groups (a ring timeout and its process line; a page fault and
 * its address, status and client lines) into one event. Pure: no I/O, no clock. */
#ifndef RINGSIDE_BACKEND_KMSG_KMSG_CLASSIFY_H
#define RINGSIDE_BACKEND_KMSG_KMSG_CLASSIFY_H

#include "backend/kmsg/kmsg.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Grouping state of one input stream (one per source: lines of different sources never
 * group). Embed it; kmsg_classifier_init before use; no resources to free. */
#define KMSG_GROUP_SPAN 32 /* input lines after its first within which a group can grow */

struct kmsg_classifier {
    struct kmsg_event pending; /* the open group's event */
    bool has_pending;
    uint32_t folded[KMSG_GROUP_SPAN];      /* the open group's continuation line numbers */
    uint32_t last_folded[KMSG_GROUP_SPAN]; /* ... of the group last returned */
    uint32_t n_folded, n_last_folded;
    uint8_t group;  /* the open group's kind (internal) */
    uint8_t source; /* enum kmsg_source stamped on every event */
    bool all;       /* also return unflagged GPU-driver lines (category none) */
};

void kmsg_classifier_init(struct kmsg_classifier *c, enum kmsg_source source, bool all);

/* Feed the next line (lineno: 1-based input line, or 0). Events completed by this line are
 * written to out[0..] in input order and their count returned (0..2): an open group closes
 * when a line that does not continue it arrives (a line of another GPU leaves it open, so two
 * devices' interleaved faults stay apart), or KMSG_GROUP_SPAN lines after its first, so its
 * event comes out before the new line's own. A line that opens or continues a group returns nothing
 * until the group closes (kmsg_classifier_pending tells). With all set, a GPU-driver line that is
 * not a failure comes out as a category-none event with its vendor; other lines never do. */
int kmsg_classifier_feed(struct kmsg_classifier *c, const struct kmsg_line *l, uint32_t lineno,
                         struct kmsg_event out[2]);

/* Close the open group, if any, into *out: at the end of input, or when no line came for a
 * while. Returns 1 when an event was written, else 0. */
int kmsg_classifier_flush(struct kmsg_classifier *c, struct kmsg_event *out);

/* The input lines folded into the group event the last feed or flush returned (its own first
 * line excluded; they need not be consecutive: two GPUs' faults interleave), and how many. */
const uint32_t *kmsg_classifier_folded(const struct kmsg_classifier *c, uint32_t *n);

/* The open group's event (its line and lines so far), or NULL. */
const struct kmsg_event *kmsg_classifier_pending(const struct kmsg_classifier *c);

/* Classify one message on its own (no grouping): true when it is a failure, with *out
 * filled; false leaves out->category NONE (and out->vendor set for a GPU-driver line). */
bool kmsg_classify_line(const struct kmsg_line *l, struct kmsg_event *out);

#endif
