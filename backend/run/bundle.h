/* The diagnostic bundle written once when a synchronize turns into a HANG: one JSON file in the
 * output directory with what anyone debugging the hang asks first (configuration, versions,
 * the last events, the latest telemetry, the pool, the kernel log around the hang). */
#ifndef RINGSIDE_BACKEND_RUN_BUNDLE_H
#define RINGSIDE_BACKEND_RUN_BUNDLE_H

#include "backend/core/ev.h"
#include "backend/engine/engine.h"
#include "backend/run/run_opts.h"
#include "backend/telemetry/tele.h"

#include <stdbool.h>
#include <stddef.h>

#define BUNDLE_EVENTS 500 /* recent events kept for the bundle */

/* The events a consumer saw last (a ring of copies; embed it, zero-initialised). */
struct bundle_ring {
    struct ev ev[BUNDLE_EVENTS];
    size_t head, n;
    bool written; /* the bundle of this run exists: never a second one */
};

void bundle_ring_add(struct bundle_ring *r, const struct ev *e);

/* What the bundle is written from; tele may be NULL. */
struct bundle_src {
    const struct run_opts *o; /* the run's options: where the bundle goes, and its config */
    const struct engine_snap *snap;
    const struct tele_snap *tele;
    const struct bundle_ring *ring;
    const struct ev *hang; /* the watchdog's HANG alert */
    const char *diagnosis; /* a watched rank's verdict, evidence and stacks, or NULL */
};

/* Write <output>/hang-<YYYYmmdd-HHMMSS>.json atomically; its path into path. 0, or -errno
 * with err. */
int bundle_write(const struct bundle_src *b, char *path, size_t pathlen, char *err, size_t errlen);

/* Add e to the ring; true when it is the run's first HANG alert, so a bundle is due (the
 * caller then reads its snapshots, which it must not do for every event: their readers are
 * told only once what changed). */
bool bundle_due(struct bundle_ring *r, const struct ev *e);

/* The stalled rings of the GPU at pci (telemetry's fence counters: signaled short of emitted
 * and not moving since the sample before), as "gfx_0.0.0 at fence 0x7 of 0x9, ..." into out;
 * false, out "", when it has none or t has no fence counters for it. */
bool bundle_stalled_rings(const struct tele_snap *t, const char *pci, char *out, size_t len);

/* Write the bundle for the HANG alert e (b's ring and hang are filled in here), and say where
 * (or why not) in msg, and which rings of the training GPU had stopped (the GPU itself stuck,
 * not the host), when telemetry saw any. Never a second one in a run. */
void bundle_on_hang(struct bundle_ring *r, const struct ev *e, const struct bundle_src *b,
                    char *msg, size_t msglen);

#endif
