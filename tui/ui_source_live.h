/* The live ui_source over an engine running in this process. */
#ifndef RINGSIDE_TUI_UI_SOURCE_LIVE_H
#define RINGSIDE_TUI_UI_SOURCE_LIVE_H

#include "backend/core/evring.h"
#include "backend/engine/engine.h"
#include "tui/ui_source.h"

struct rec;

/* e, ring, kring (the kernel-log watcher's ring, or NULL) and rec (NULL: no recording) are
 * borrowed and must outlive the source; chunk is not used (the engine keeps the chunk size
 * and steps it itself). Events come from
 * both rings (the wake fd covers both); every event drained and snapshot read is also written
 * to rec. 0 or -errno. Destroy with src->ops->destroy(src). */
int ui_source_live(struct ui_source **out, struct engine *e, struct evring *ring,
                   struct evring *kring, int chunk, struct rec *rec);

#endif
