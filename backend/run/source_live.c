/* The live source: the run owner's view for the dashboard. Draining, snapshots and the
 * recording all go through the run (run.h), so the side-work is done once. */
#include "backend/core/mono.h"
#include "backend/run/run.h"
#include "backend/run/source.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int source_live_wake_fd(struct source *s) {
    return run_wake_fd((struct run *)s->priv);
}

static size_t source_live_drain(struct source *s, struct ev *out, size_t max) {
    return run_drain((struct run *)s->priv, out, max);
}

static const struct engine_snap *source_live_snap(struct source *s) {
    struct run *r = s->priv;
    return run_snap(r, run_device(r));
}

static const struct engine_snap *source_live_dev_snap(struct source *s, unsigned k) {
    struct run *r = s->priv;
    unsigned devs[ENGINE_MAX_DEVICES];
    unsigned n = run_devices(r, devs);
    return k < n ? run_snap(r, devs[k]) : NULL;
}

static uint64_t source_live_now(struct source *s) {
    (void)s;
    return mono_now_ns();
}

static bool source_live_action(struct source *s, enum source_action act, char *msg, size_t msglen) {
    struct run *r = s->priv;
    msg[0] = '\0';
    switch (act) {
    case SOURCE_PAUSE_TOGGLE: {
        bool paused = run_snap(r, run_device(r))->state == ENGINE_PAUSED;
        run_command(r, paused ? CMD_RESUME : CMD_PAUSE, 0);
        snprintf(msg, msglen, "%s", paused ? "resuming" : "pausing at the next step");
        return true;
    }
    case SOURCE_CHUNK_UP:
    case SOURCE_CHUNK_DOWN: /* the engine steps from its own size and says the new one */
        run_command(r, CMD_CHUNK_STEP, act == SOURCE_CHUNK_UP ? 1 : -1);
        return true;
    case SOURCE_CLEANUP:
        run_command(r, CMD_CLEANUP, 0);
        snprintf(msg, msglen, "safe cleanup requested");
        return true;
    case SOURCE_PROBE:
        run_command(r, CMD_PROBE, 0);
        snprintf(msg, msglen, "memory probe requested");
        return true;
    case SOURCE_ACTIONS:
        break;
    }
    return false;
}

static void source_live_stop(struct source *s) {
    run_stop((struct run *)s->priv);
}

static bool source_live_inflight(struct source *s, unsigned dev, struct trace_inflight *out) {
    return run_inflight((struct run *)s->priv, dev, out);
}

static bool source_live_done(struct source *s) {
    return run_done((struct run *)s->priv);
}

static const char *source_live_status(struct source *s) {
    (void)s;
    return "";
}

static void source_live_destroy(struct source *s) {
    free(s); /* the run is its owner's */
}

static const struct source_ops source_live_ops = {
    .name = "live",
    .wake_fd = source_live_wake_fd,
    .drain = source_live_drain,
    .snap = source_live_snap,
    .dev_snap = source_live_dev_snap,
    .now_ns = source_live_now,
    .action = source_live_action,
    .stop = source_live_stop,
    .inflight = source_live_inflight,
    .done = source_live_done,
    .status = source_live_status,
    .destroy = source_live_destroy,
};

int run_source(struct run *r, struct source **out) {
    if (!run_engine(r))
        return -EINVAL;
    struct source *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->ops = &source_live_ops;
    s->priv = r;
    run_info(r, &s->run);
    *out = s;
    return 0;
}
