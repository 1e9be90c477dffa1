/* The live source: the engine running in this process, its event ring and its snapshot. */
#include "tui/ui_source_live.h"

#include "backend/core/mono.h"
#include "tui/record.h"
#include "tui/ui_model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

struct ui_live {
    struct engine *e;
    struct evring *ring;
    struct evring *kring; /* kernel-log events, or NULL */
    int wake_fd;          /* an epoll fd over both rings' wake fds (-1 with one ring) */
    struct rec *rec;      /* --record: every event and snapshot shown is also written (or NULL) */
};

static int ui_live_wake_fd(struct ui_source *s) {
    struct ui_live *l = s->priv;
    return l->wake_fd >= 0 ? l->wake_fd : evring_wake_fd(l->ring);
}

static size_t ui_live_drain(struct ui_source *s, struct ev *out, size_t max) {
    struct ui_live *l = s->priv;
    size_t n = evring_drain(l->ring, out, max);
    if (l->kring && n < max)
        n += evring_drain(l->kring, out + n, max - n);
    for (size_t i = 0; l->rec && i < n; i++)
        rec_event(l->rec, &out[i]);
    return n;
}

static const struct engine_snap *ui_live_snap(struct ui_source *s) {
    struct ui_live *l = s->priv;
    const struct engine_snap *snap = engine_snap_read(l->e, NULL);
    if (l->rec)
        rec_snap(l->rec, 0, snap);
    return snap;
}

static uint64_t ui_live_now(struct ui_source *s) {
    (void)s;
    return mono_now_ns();
}

static bool ui_live_action(struct ui_source *s, enum ui_source_action act, char *msg,
                           size_t msglen) {
    struct ui_live *l = s->priv;
    msg[0] = '\0';
    switch (act) {
    case UI_SOURCE_PAUSE_TOGGLE: {
        bool paused = engine_snap_read(l->e, NULL)->state == ENGINE_PAUSED;
        engine_command(l->e, paused ? CMD_RESUME : CMD_PAUSE, 0);
        snprintf(msg, msglen, "%s", paused ? "resuming" : "pausing at the next step");
        return true;
    }
    case UI_SOURCE_CHUNK_UP:
    case UI_SOURCE_CHUNK_DOWN: /* the engine steps from its own size and says the new one */
        engine_command(l->e, CMD_CHUNK_STEP, act == UI_SOURCE_CHUNK_UP ? 1 : -1);
        return true;
    case UI_SOURCE_CLEANUP:
        engine_command(l->e, CMD_CLEANUP, 0);
        snprintf(msg, msglen, "safe cleanup requested");
        return true;
    case UI_SOURCE_PROBE:
        engine_command(l->e, CMD_PROBE, 0);
        snprintf(msg, msglen, "memory probe requested");
        return true;
    case UI_SOURCE_ACTIONS:
        break;
    }
    return false;
}

static void ui_live_stop(struct ui_source *s) {
    engine_command(((struct ui_live *)s->priv)->e, CMD_STOP, 0);
}

static bool ui_live_inflight(struct ui_source *s, unsigned dev, struct trace_inflight *out) {
    return trace_inflight(engine_trace(((struct ui_live *)s->priv)->e), dev, out);
}

static bool ui_live_done(struct ui_source *s) {
    return engine_done(((struct ui_live *)s->priv)->e);
}

static const char *ui_live_status(struct ui_source *s) {
    (void)s;
    return "";
}

static void ui_live_destroy(struct ui_source *s) {
    if (!s)
        return;
    struct ui_live *l = s->priv;
    if (l->wake_fd >= 0)
        close(l->wake_fd);
    free(s->priv);
    free(s);
}

static const struct ui_source_ops ui_live_ops = {
    .name = "live",
    .wake_fd = ui_live_wake_fd,
    .drain = ui_live_drain,
    .snap = ui_live_snap,
    .now_ns = ui_live_now,
    .action = ui_live_action,
    .stop = ui_live_stop,
    .inflight = ui_live_inflight,
    .done = ui_live_done,
    .status = ui_live_status,
    .destroy = ui_live_destroy,
};

/* One descriptor that is readable while either ring has events. */
static int ui_live_epoll(struct evring *ring, struct evring *kring) {
    int fd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event a = {.events = EPOLLIN}, b = {.events = EPOLLIN};
    if (fd >= 0 && (epoll_ctl(fd, EPOLL_CTL_ADD, evring_wake_fd(ring), &a) != 0 ||
                    epoll_ctl(fd, EPOLL_CTL_ADD, evring_wake_fd(kring), &b) != 0)) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    return fd < 0 ? -errno : fd;
}

int ui_source_live(struct ui_source **out, struct engine *e, struct evring *ring,
                   struct evring *kring, int chunk, struct rec *rec) {
    struct ui_source *s = calloc(1, sizeof(*s));
    struct ui_live *l = calloc(1, sizeof(*l));
    int wake = kring ? ui_live_epoll(ring, kring) : -1;
    if (!s || !l || (kring && wake < 0)) {
        free(s);
        free(l);
        if (wake >= 0)
            close(wake);
        return kring && wake < 0 ? wake : -ENOMEM;
    }
    (void)chunk; /* the engine keeps the chunk size, and steps it */
    *l = (struct ui_live){e, ring, kring, wake, rec};
    s->ops = &ui_live_ops;
    s->priv = l;
    const struct engine_snap *snap = engine_snap_read(e, NULL);
    gethostname(s->run.host, sizeof(s->run.host) - 1);
    snprintf(s->run.backend, sizeof(s->run.backend), "%s", snap->backend);
    snprintf(s->run.dev_name, sizeof(s->run.dev_name), "%s", snap->dev.name);
    snprintf(s->run.dev_arch, sizeof(s->run.dev_arch), "%s", snap->dev.arch);
    s->run.n_devices = 1;
    snprintf(s->run.origin, sizeof(s->run.origin), "live");
    engine_clock_anchor(e, &s->run.start_wall_ns, &s->run.start_ns);
    *out = s;
    return 0;
}
