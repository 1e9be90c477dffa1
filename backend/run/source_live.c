/* The live source: the run owner's view for the dashboard. Draining, snapshots and the
 * recording all go through the run (run.h), so the side-work is done once. */
#include "backend/core/mono.h"
#include "backend/run/run.h"
#include "backend/run/source.h"
#include "backend/vpoc/vpoc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct source_live {
    struct run *run;
    struct engine *e;
    int chunk;      /* last chunk size asked for */
    int chunk_seen; /* the engine's chunk size when last looked at */
};

static int source_live_wake_fd(struct source *s) {
    return run_wake_fd(((struct source_live *)s->priv)->run);
}

static size_t source_live_drain(struct source *s, struct ev *out, size_t max) {
    return run_drain(((struct source_live *)s->priv)->run, out, max);
}

static const struct engine_snap *source_live_snap(struct source *s) {
    struct run *r = ((struct source_live *)s->priv)->run;
    return run_snap(r, run_device(r));
}

static uint64_t source_live_now(struct source *s) {
    (void)s;
    return mono_now_ns();
}

static bool source_live_key(struct source *s, int ch, char *msg, size_t msglen) {
    struct source_live *l = s->priv;
    msg[0] = '\0';
    switch (ch) {
    case 'p': {
        bool paused = engine_snap_read(l->e, NULL)->state == ENGINE_PAUSED;
        engine_command(l->e, paused ? CMD_RESUME : CMD_PAUSE, 0);
        snprintf(msg, msglen, "%s", paused ? "resuming" : "pausing at the next step");
        return true;
    }
    case '+':
    case '=':
    case '-': {
        int now = engine_snap_read(l->e, NULL)->chunk_bars;
        if (now != l->chunk_seen) /* the engine changed it (out of memory): step from there */
            l->chunk = l->chunk_seen = now;
        l->chunk = vpoc_chunk_step(l->chunk, ch == '-' ? -1 : 1);
        engine_command(l->e, CMD_SET_CHUNK, l->chunk);
        if (l->chunk)
            snprintf(msg, msglen, "VPOC chunk size %d bars from the next chunk", l->chunk);
        else
            snprintf(msg, msglen, "VPOC chunk size: whole sessions from the next session");
        return true;
    }
    case 'c':
        engine_command(l->e, CMD_CLEANUP, 0);
        snprintf(msg, msglen, "safe cleanup requested");
        return true;
    case 'm':
        engine_command(l->e, CMD_PROBE, 0);
        snprintf(msg, msglen, "memory probe requested");
        return true;
    default:
        return false;
    }
}

static void source_live_stop(struct source *s) {
    run_stop(((struct source_live *)s->priv)->run);
}

static bool source_live_inflight(struct source *s, unsigned dev, struct trace_inflight *out) {
    return run_inflight(((struct source_live *)s->priv)->run, dev, out);
}

static bool source_live_done(struct source *s) {
    return run_done(((struct source_live *)s->priv)->run);
}

static const char *source_live_status(struct source *s) {
    (void)s;
    return "";
}

static void source_live_destroy(struct source *s) {
    if (!s)
        return;
    free(s->priv);
    free(s);
}

static const struct source_ops source_live_ops = {
    .name = "live",
    .wake_fd = source_live_wake_fd,
    .drain = source_live_drain,
    .snap = source_live_snap,
    .now_ns = source_live_now,
    .key = source_live_key,
    .stop = source_live_stop,
    .inflight = source_live_inflight,
    .done = source_live_done,
    .status = source_live_status,
    .destroy = source_live_destroy,
};

int run_source(struct run *r, struct source **out) {
    struct source *s = calloc(1, sizeof(*s));
    struct source_live *l = calloc(1, sizeof(*l));
    if (!s || !l || !run_engine(r)) {
        free(s);
        free(l);
        return !run_engine(r) ? -EINVAL : -ENOMEM;
    }
    int chunk = run_snap(r, run_device(r))->chunk_bars;
    *l = (struct source_live){r, run_engine(r), chunk, chunk};
    s->ops = &source_live_ops;
    s->priv = l;
    run_info(r, &s->run);
    *out = s;
    return 0;
}
