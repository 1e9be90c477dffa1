/* The replay source: reads a recording one line ahead of its clock and rebuilds the engine's
 * snapshot from the events it has released. */
#include "backend/run/replay.h"

#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/record/replay_internal.h"
#include "backend/record/replay_snap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct replay {
    struct source src;
    FILE *f;
    char *line; /* REPLAY_LINE_BYTES + 2 */
    uint64_t lineno;
    int read_errno;             /* a read error (0 = none) */
    struct replay_item pending; /* the next line to release, when has_pending */
    bool has_pending, eof;
    uint64_t last_ns;   /* time of the last line released: where the clock stops at the end */
    char stop_why[320]; /* "stopped at line N: why", or "" */
    char status[360];
    /* the clock: rec = rec_base + (real - real_base) * speed, frozen while paused or stopped */
    uint64_t (*clock)(void *ctx);
    void *clock_ctx;
    uint64_t real_base, rec_base;
    double speed;
    bool paused, stopped;
    struct replay_snap rs; /* the snapshots rebuilt from released lines */
};

static uint64_t replay_mono(void *ctx) {
    (void)ctx;
    return mono_now_ns();
}

static struct replay *replay_of(struct source *s) {
    return s->priv;
}

static uint64_t replay_rec_now(struct replay *r) {
    if (r->paused || r->stopped)
        return r->rec_base;
    if (r->eof && !r->has_pending && r->last_ns) /* the recording is over: so is its time */
        return r->last_ns;
    uint64_t real = r->clock(r->clock_ctx);
    uint64_t d = real > r->real_base ? real - r->real_base : 0;
    return r->rec_base + (uint64_t)((double)d * r->speed);
}

/* Restart the clock's arithmetic from now (before a change of speed, pause or clock). */
static void replay_rebase(struct replay *r) {
    r->rec_base = replay_rec_now(r);
    r->real_base = r->clock(r->clock_ctx);
}

/* One line into r->line (its newline kept, its true length in *len: a NUL inside is data, not
 * its end): 1, 0 at the end, or -1 with stop_why set. */
static int replay_read_line(struct replay *r, size_t *len) {
    errno = 0;
    size_t n = 0;
    int ch = EOF;
    while ((ch = getc_unlocked(r->f)) != EOF) {
        if (n < REPLAY_LINE_BYTES + 1)
            r->line[n] = (char)ch;
        n++;
        if (ch == '\n')
            break;
    }
    if (n == 0) {
        if (!ferror(r->f))
            return 0;
        r->read_errno = errno ? errno : EIO;
        snprintf(r->stop_why, sizeof(r->stop_why), "stopped at line %llu: %s",
                 (unsigned long long)r->lineno + 1, strerror(r->read_errno));
        return -1;
    }
    r->lineno++;
    *len = n;
    if (n > REPLAY_LINE_BYTES) {
        snprintf(r->stop_why, sizeof(r->stop_why), "stopped at line %llu: longer than %u bytes",
                 (unsigned long long)r->lineno, REPLAY_LINE_BYTES);
        return -1;
    }
    r->line[n] = '\0';
    if (memchr(r->line, '\0', n)) {
        snprintf(r->stop_why, sizeof(r->stop_why),
                 "stopped at line %llu: a NUL byte: not a recording's text (a damaged file?)",
                 (unsigned long long)r->lineno);
        return -1;
    }
    return 1;
}

/* Read ahead to the next item (blank lines skipped); at the end or a bad line, stop reading. */
static void replay_next(struct replay *r) {
    r->has_pending = false;
    while (!r->eof) {
        size_t len = 0;
        int got = replay_read_line(r, &len);
        if (got <= 0) {
            r->eof = true;
            return;
        }
        char why[256];
        int rc = replay_parse_line(r->line, len, &r->pending, why, sizeof(why));
        if (r->pending.kind == REPLAY_RUN)
            rc = errbuf_set(why, sizeof(why), -EINVAL, "a second run line");
        if (rc != 0) {
            snprintf(r->stop_why, sizeof(r->stop_why), "stopped at line %llu: %s",
                     (unsigned long long)r->lineno, why);
            r->eof = true;
            return;
        }
        if (r->pending.kind != REPLAY_BLANK) {
            r->has_pending = true;
            return;
        }
    }
}

/* ---- the source ---- */

static int replay_wake_fd(struct source *s) {
    (void)s;
    return -1;
}

static size_t replay_drain(struct source *s, struct ev *out, size_t max) {
    struct replay *r = replay_of(s);
    uint64_t now = replay_rec_now(r);
    size_t n = 0;
    while (n < max && r->has_pending && !r->stopped && r->pending.t_ns <= now) {
        if (r->pending.kind == REPLAY_EVENT)
            out[n++] = r->pending.ev;
        if (r->pending.t_ns > r->last_ns)
            r->last_ns = r->pending.t_ns;
        replay_snap_apply(&r->rs, &r->pending);
        replay_next(r);
    }
    return n;
}

static const struct engine_snap *replay_get_snap(struct source *s) {
    struct replay *r = replay_of(s);
    r->rs.snaps[0].t_ns = replay_rec_now(r);
    return &r->rs.snaps[0];
}

static const struct engine_snap *replay_dev_snap(struct source *s, unsigned k) {
    struct replay *r = replay_of(s);
    if (k >= r->rs.n_devs)
        return NULL;
    r->rs.snaps[k].t_ns = replay_rec_now(r);
    return &r->rs.snaps[k];
}

static uint64_t replay_now_ns(struct source *s) {
    return replay_rec_now(replay_of(s));
}

static bool replay_action(struct source *s, enum source_action act, char *msg, size_t msglen) {
    struct replay *r = replay_of(s);
    if (msglen)
        msg[0] = '\0';
    if (act != SOURCE_PAUSE_TOGGLE && act != SOURCE_CHUNK_UP && act != SOURCE_CHUNK_DOWN)
        return false; /* nothing to clean up or probe in a recording */
    replay_rebase(r);
    if (act == SOURCE_PAUSE_TOGGLE) {
        r->paused = !r->paused;
        snprintf(msg, msglen, "replay %s", r->paused ? "paused" : "resumed");
        return true;
    }
    double v = act == SOURCE_CHUNK_UP ? r->speed * 2 : r->speed / 2;
    r->speed = v < REPLAY_SPEED_MIN   ? REPLAY_SPEED_MIN
               : v > REPLAY_SPEED_MAX ? REPLAY_SPEED_MAX
                                      : v;
    snprintf(msg, msglen, "replay speed %gx", r->speed);
    return true;
}

static void replay_stop(struct source *s) {
    struct replay *r = replay_of(s);
    replay_rebase(r);
    r->stopped = true;
}

static bool replay_inflight(struct source *s, unsigned dev, struct trace_inflight *out) {
    (void)s;
    (void)dev;
    memset(out, 0, sizeof(*out));
    return false;
}

static bool replay_done(struct source *s) {
    struct replay *r = replay_of(s);
    return r->stopped || (r->eof && !r->has_pending);
}

static const char *replay_status(struct source *s) {
    struct replay *r = replay_of(s);
    if (r->stop_why[0])
        return r->stop_why;
    if (replay_done(s))
        return "replay finished";
    snprintf(r->status, sizeof(r->status), "replay %gx%s", r->speed, r->paused ? " paused" : "");
    return r->status;
}

static void replay_destroy(struct source *s) {
    if (!s)
        return;
    struct replay *r = replay_of(s);
    if (r->f)
        fclose(r->f);
    free(r->line);
    free(r);
}

static const struct source_ops replay_ops = {
    .name = "replay",
    .wake_fd = replay_wake_fd,
    .drain = replay_drain,
    .snap = replay_get_snap,
    .dev_snap = replay_dev_snap,
    .now_ns = replay_now_ns,
    .action = replay_action,
    .stop = replay_stop,
    .inflight = replay_inflight,
    .done = replay_done,
    .status = replay_status,
    .destroy = replay_destroy,
};

/* The first line must be a run line: it fills src.run and the snapshot's fixed fields. */
static int replay_read_run(struct replay *r, const char *path, char *err, size_t errlen) {
    size_t len = 0;
    int got, prc = 0;
    char why[256];
    while ((got = replay_read_line(r, &len)) > 0) {
        prc = replay_parse_line(r->line, len, &r->pending, why, sizeof(why));
        if (prc != 0 || r->pending.kind != REPLAY_BLANK)
            break;
    }
    if (got < 0 && r->read_errno)
        return errbuf_set(err, errlen, -r->read_errno, "%s: %s", path, strerror(r->read_errno));
    if (got > 0 && prc != 0 && r->pending.kind == REPLAY_RUN)
        return errbuf_set(err, errlen, -EINVAL, "%s: line %llu: %s", path,
                          (unsigned long long)r->lineno, why);
    if (got <= 0 || prc != 0 || r->pending.kind != REPLAY_RUN)
        return errbuf_set(err, errlen, -EINVAL, "%s: not a ringside recording (no run line)", path);
    r->stop_why[0] = '\0';
    return 0;
}

static void replay_init_snap(struct replay *r, const char *path) {
    struct run_info *run = &r->src.run;
    *run = r->pending.run;
    run->replay = true;
    snprintf(run->origin, sizeof(run->origin), "%s", path);
    replay_snap_init(&r->rs, run, &r->pending.extra);
}

int replay_open(struct source **out, const char *path, double speed, char *err, size_t errlen) {
    *out = NULL;
    if (!(speed >= REPLAY_SPEED_MIN && speed <= REPLAY_SPEED_MAX))
        return errbuf_set(err, errlen, -EINVAL, "speed %g is outside %g..%g", speed,
                          REPLAY_SPEED_MIN, REPLAY_SPEED_MAX);
    struct replay *r = calloc(1, sizeof(*r));
    if (!r)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    r->src = (struct source){.ops = &replay_ops, .priv = r};
    int rc = -ENOMEM;
    if (!(r->line = malloc(REPLAY_LINE_BYTES + 2))) {
        errbuf_set(err, errlen, rc, "out of memory");
        goto fail;
    }
    r->speed = speed;
    r->clock = replay_mono;
    if (!(r->f = fopen(path, "r"))) {
        int e = errno;
        rc = errbuf_set(err, errlen, -e, "%s: %s", path, strerror(e));
        goto fail;
    }
    if ((rc = replay_read_run(r, path, err, errlen)) != 0)
        goto fail;
    replay_init_snap(r, path);
    replay_next(r);
    r->rec_base = r->has_pending && r->pending.t_ns ? r->pending.t_ns : r->src.run.start_ns;
    r->real_base = r->clock(r->clock_ctx);
    *out = &r->src;
    return 0;
fail:
    replay_destroy(&r->src);
    return rc;
}

void replay_set_clock(struct source *src, uint64_t (*now)(void *ctx), void *ctx) {
    struct replay *r = replay_of(src);
    r->clock = now;
    r->clock_ctx = ctx;
    r->real_base = now(ctx);
}

double replay_speed(const struct source *src) {
    return ((const struct replay *)src->priv)->speed;
}
