/* The kernel-log watcher thread: sources, reading, classification, and the push to the ring. */
#include "backend/kmsg/kmsg_watch.h"

#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/kmsg/kmsg_classify.h"
#include "backend/kmsg/kmsg_inject.h"
#include "backend/kmsg/kmsg_lines.h"
#include "backend/kmsg/kmsg_parse.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#define KMSG_RECORD_MAX  8192      /* a /dev/kmsg record is at most ~1 KiB */
#define KMSG_TICK_MS     100       /* regular files are re-read, open groups closed, this often */
#define KMSG_GROUP_IDLE  100000000 /* ns without a line after which an open group is closed */
#define KMSG_READ_BUDGET 4096      /* records or reads per source before looking at stop again */

enum kmsg_src_kind {
    KMSG_SRC_NONE,   /* not open (the session log before it exists, /dev/kmsg unreadable) */
    KMSG_SRC_DEVICE, /* /dev/kmsg: one record per read */
    KMSG_SRC_FIFO,   /* a FIFO (opened read-write so it never reports end of file) */
    KMSG_SRC_TEXT,   /* a regular file, followed like tail -f */
};

struct kmsg_src {
    enum kmsg_src_kind kind;
    int fd;
    char path[KMSG_PATH_MAX];
    struct kmsg_lines lines;
    struct kmsg_classifier cls;
    uint64_t last_seq;
    bool has_seq;
    bool live; /* past the backlog: its timestamps bound the clock offset */
    off_t pos; /* TEXT: bytes read (a smaller file was truncated or rotated) */
    uint64_t last_ns;
    uint32_t lineno;
};

struct kmsg_watch {
    struct kmsg_conf conf;
    struct evring *ring;
    struct kmsg_src kern, log;
    struct kmsg_src inj;       /* --inject kmsg:FILE: no fd, its own classifier and line times */
    struct kmsg_inject replay; /* ... and its lines, due after start_ns */
    uint64_t start_ns;         /* when the thread was started */
    struct kmsg_clock clock;
    int stop_fd;
    pthread_t thread;
    bool started;
    atomic_int state;
    atomic_uint_least64_t lines, events, lost, cut;
    char reason[320];
};

void kmsg_conf_default(struct kmsg_conf *c) {
    memset(c, 0, sizeof(*c));
    snprintf(c->kmsg_path, sizeof(c->kmsg_path), "/dev/kmsg");
    c->chatter = true;
}

void kmsg_clock_observe(struct kmsg_clock *c, uint64_t ts_ns, uint64_t now_ns) {
    int64_t d = (int64_t)(now_ns - ts_ns);
    if (d < c->offset_ns)
        c->offset_ns = d;
}

uint64_t kmsg_clock_map(const struct kmsg_clock *c, uint64_t ts_ns) {
    return (uint64_t)((int64_t)ts_ns + c->offset_ns);
}

static void kmsg_watch_push(struct kmsg_watch *w, const struct kmsg_event *e, uint64_t t_ns) {
    struct ev ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = EV_KMSG;
    ev.dev = EV_DEV_NONE;
    ev.t_ns = t_ns;
    ev.u.kmsg = *e;
    atomic_fetch_add(&w->events, 1); /* counted first: a reader never drains more than it says */
    evring_push(w->ring, &ev);
}

static void kmsg_watch_warn(struct kmsg_watch *w, enum ev_alert_code code, const char *text) {
    struct ev ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = EV_LOG;
    ev.dev = EV_DEV_NONE;
    ev.t_ns = mono_now_ns();
    ev.u.text.severity = SEV_WARNING;
    ev.u.text.code = (uint8_t)code;
    snprintf(ev.u.text.text, sizeof(ev.u.text.text), "%s", text);
    evring_push(w->ring, &ev);
}

/* Events a line (input line lineno of s) completed, onto the ring: kernel time mapped, or the
 * time it was read. */
static void kmsg_watch_line(struct kmsg_watch *w, struct kmsg_src *s, const struct kmsg_line *l,
                            uint32_t lineno) {
    struct kmsg_event out[2];
    uint64_t now = mono_now_ns();
    s->last_ns = now;
    atomic_fetch_add(&w->lines, 1);
    if (s->live && l->has_ts)
        kmsg_clock_observe(&w->clock, l->ts_ns, now);
    int n = kmsg_classifier_feed(&s->cls, l, lineno, out);
    for (int i = 0; i < n; i++)
        kmsg_watch_push(w, &out[i],
                        out[i].has & KMSG_HAS(TS) ? kmsg_clock_map(&w->clock, out[i].ts_ns) : now);
}

struct kmsg_text_ctx {
    struct kmsg_watch *w;
    struct kmsg_src *s;
};

/* A record (from /dev/kmsg, or saved in a file), else a text line; a gap in the records'
 * sequence numbers counts the records lost before they were read. */
static void kmsg_watch_record(struct kmsg_watch *w, struct kmsg_src *s, const char *buf, size_t n) {
    struct kmsg_line l;
    if (kmsg_parse_record(buf, n, &l) != 0) {
        kmsg_parse_text(buf, n, &l);
    } else {
        if (s->has_seq && l.seq > s->last_seq + 1)
            atomic_fetch_add(&w->lost, l.seq - s->last_seq - 1);
        s->last_seq = l.seq;
        s->has_seq = true;
    }
    kmsg_watch_line(w, s, &l, ++s->lineno);
}

/* A text line: a saved /dev/kmsg record ("6,123,456,-;msg"), else a dmesg/journalctl line. */
static void kmsg_watch_text_line(void *ctx, const char *text, size_t n) {
    struct kmsg_text_ctx *c = ctx;
    if (n > 0 && text[0] == ' ' && memchr(text, '=', n))
        return; /* a saved record's " KEY=VALUE" line */
    /* The session log holds ringside's own messages too ("ringside: kernel error: ..." quotes
     * the line it reports): only the runtime's lines are read there, or each report would be
     * reported again. */
    if (c->s == &c->w->log && n >= 8 && memcmp(text, "ringside", 8) == 0)
        return;
    kmsg_watch_record(c->w, c->s, text, n);
}

/* Read what /dev/kmsg has; false when the source failed and was closed. */
static bool kmsg_watch_read_device(struct kmsg_watch *w, struct kmsg_src *s) {
    static _Thread_local char buf[KMSG_RECORD_MAX];
    for (int k = 0; k < KMSG_READ_BUDGET; k++) {
        ssize_t n = read(s->fd, buf, sizeof(buf));
        if (n > 0) {
            kmsg_watch_record(w, s, buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EPIPE) /* overwritten while we were away: the seq gap counts */
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            s->live = true; /* the backlog, if any, is behind us */
            return true;
        }
        return false;
    }
    return true;
}

static int kmsg_src_open(struct kmsg_src *s, const char *path, bool seek_end);

/* A followed file that was truncated is read again from its start; one that was replaced
 * (rotated: the path names another file now) is reopened, from its start. */
static void kmsg_watch_rewind(struct kmsg_src *s) {
    struct stat st, at;
    if (s->kind != KMSG_SRC_TEXT || fstat(s->fd, &st) != 0)
        return;
    if (stat(s->path, &at) == 0 && (at.st_ino != st.st_ino || at.st_dev != st.st_dev)) {
        char path[KMSG_PATH_MAX];
        snprintf(path, sizeof(path), "%s", s->path);
        int fd = s->fd;
        if (kmsg_src_open(s, path, false) == 0) {
            close(fd);
            s->pos = 0;
            s->live = true; /* a new file: its lines are new */
        }
        return;
    }
    if (st.st_size < s->pos) {
        lseek(s->fd, 0, SEEK_SET);
        s->pos = 0;
        kmsg_lines_init(&s->lines);
    }
}

/* Read what a FIFO or file has; false when the source failed. */
static bool kmsg_watch_read_text(struct kmsg_watch *w, struct kmsg_src *s) {
    struct kmsg_text_ctx ctx = {w, s};
    kmsg_watch_rewind(s);
    for (int k = 0; k < KMSG_READ_BUDGET; k++) {
        uint64_t cut = s->lines.cut;
        ssize_t n = kmsg_lines_read(&s->lines, s->fd, kmsg_watch_text_line, &ctx);
        atomic_fetch_add(&w->cut, s->lines.cut - cut);
        if (n > 0) {
            s->pos += n;
            continue;
        }
        s->live = true; /* the end of what was there at the start */
        return n == 0 || n == -EAGAIN || n == -EINTR;
    }
    return true;
}

static void kmsg_src_close(struct kmsg_src *s) {
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    s->kind = KMSG_SRC_NONE;
}

/* Open path as a kernel-log source of the right kind. 0 or -errno. */
static int kmsg_src_open(struct kmsg_src *s, const char *path, bool seek_end) {
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        int rc = S_ISDIR(st.st_mode) ? -EISDIR : -errno;
        close(fd);
        return rc;
    }
    if (S_ISFIFO(st.st_mode)) { /* also a writer of our own: no end of file between writers */
        close(fd);
        if ((fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0)
            return -errno;
    }
    s->fd = fd;
    s->kind = S_ISCHR(st.st_mode)    ? KMSG_SRC_DEVICE
              : S_ISFIFO(st.st_mode) ? KMSG_SRC_FIFO
                                     : KMSG_SRC_TEXT;
    s->live = s->kind == KMSG_SRC_FIFO;
    if (seek_end && s->kind == KMSG_SRC_TEXT)
        s->pos = lseek(fd, 0, SEEK_END);
    snprintf(s->path, sizeof(s->path), "%s", path);
    kmsg_lines_init(&s->lines);
    return 0;
}

/* Place /dev/kmsg at its end, or backlog records before it; those are read (not live: they
 * do not bound the clock offset) up to the first time the device has nothing more. */
static void kmsg_watch_position(struct kmsg_watch *w, struct kmsg_src *s) {
    static _Thread_local char buf[KMSG_RECORD_MAX];
    s->live = w->conf.backlog <= 0;
    if (w->conf.backlog <= 0) {
        lseek(s->fd, 0, SEEK_END);
        return;
    }
    long total = 0;
    ssize_t n;
    while ((n = read(s->fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EPIPE))
        total += n > 0;
    lseek(s->fd, 0, SEEK_SET);
    for (long skip = total - w->conf.backlog; skip > 0; skip--)
        if (read(s->fd, buf, sizeof(buf)) < 0 && errno != EPIPE)
            break;
}

/* Close groups that saw no line for a while (their last line may be the last for long). */
static void kmsg_watch_idle(struct kmsg_watch *w, struct kmsg_src *s, uint64_t now) {
    struct kmsg_event e;
    if (kmsg_classifier_pending(&s->cls) && now - s->last_ns >= KMSG_GROUP_IDLE &&
        kmsg_classifier_flush(&s->cls, &e))
        kmsg_watch_push(w, &e,
                        e.has & KMSG_HAS(TS) ? kmsg_clock_map(&w->clock, e.ts_ns) : s->last_ns);
}

static bool kmsg_watch_read(struct kmsg_watch *w, struct kmsg_src *s) {
    if (s->kind == KMSG_SRC_DEVICE)
        return kmsg_watch_read_device(w, s);
    return kmsg_watch_read_text(w, s);
}

/* The session log appears once stderr is redirected: everything in it is new then. */
static void kmsg_watch_log_open(struct kmsg_watch *w) {
    if (w->log.kind == KMSG_SRC_NONE && w->conf.session_log[0] &&
        kmsg_src_open(&w->log, w->conf.session_log, false) == 0)
        w->log.live = true;
}

/* Feed the injected lines due by now (its own file line numbers; a budget, so a stop request
 * is looked at between batches). */
static void kmsg_watch_inject(struct kmsg_watch *w, uint64_t now) {
    const struct kmsg_inject_line *il;
    for (int k = 0; k < KMSG_READ_BUDGET; k++) {
        if (!(il = kmsg_inject_due(&w->replay, now - w->start_ns)))
            return;
        struct kmsg_line l;
        kmsg_inject_line(&w->replay, il, &l);
        kmsg_watch_line(w, &w->inj, &l, il->lineno);
    }
}

/* The poll timeout (ms; -1: none) cut short to wake when the next injected line is due. */
static int kmsg_watch_timeout(const struct kmsg_watch *w, int timeout_ms) {
    uint64_t due = kmsg_inject_next_ns(&w->replay);
    if (due == UINT64_MAX)
        return timeout_ms;
    uint64_t at = w->start_ns + due, now = mono_now_ns();
    uint64_t ms = at > now ? (at - now + 999999u) / 1000000u : 0; /* rounded up: no early spin */
    if (timeout_ms >= 0 && ms > (uint64_t)timeout_ms)
        return timeout_ms;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

static void *kmsg_watch_main(void *arg) {
    struct kmsg_watch *w = arg;
    for (;;) {
        kmsg_watch_log_open(w);
        struct pollfd pf[2] = {{w->stop_fd, POLLIN, 0}, {-1, POLLIN, 0}};
        if (w->kern.kind == KMSG_SRC_DEVICE || w->kern.kind == KMSG_SRC_FIFO)
            pf[1].fd = w->kern.fd;
        bool tick = w->kern.kind == KMSG_SRC_TEXT || w->conf.session_log[0] ||
                    kmsg_classifier_pending(&w->kern.cls) || kmsg_classifier_pending(&w->inj.cls);
        if (poll(pf, 2, kmsg_watch_timeout(w, tick ? KMSG_TICK_MS : -1)) < 0 && errno != EINTR)
            break;
        if (pf[0].revents)
            break;
        if (w->kern.kind != KMSG_SRC_NONE && !kmsg_watch_read(w, &w->kern)) {
            char msg[EV_TEXT_BYTES];
            snprintf(msg, sizeof(msg), "kernel log: reading %.100s failed (%s); no longer followed",
                     w->kern.path, strerror(errno));
            kmsg_watch_warn(w, ALERT_NONE, msg);
            kmsg_src_close(&w->kern);
        }
        if (w->log.kind != KMSG_SRC_NONE && !kmsg_watch_read(w, &w->log))
            kmsg_src_close(&w->log);
        kmsg_watch_inject(w, mono_now_ns());
        uint64_t now = mono_now_ns(); /* after every line's last_ns */
        kmsg_watch_idle(w, &w->kern, now);
        kmsg_watch_idle(w, &w->log, now);
        kmsg_watch_idle(w, &w->inj, now);
    }
    return NULL;
}

/* /dev/kmsg could not be opened: say why and what to do, and carry on without it. */
static void kmsg_watch_unreadable(struct kmsg_watch *w, int rc) {
    atomic_store(&w->state, KMSG_STATE_UNREADABLE);
    snprintf(w->reason, sizeof(w->reason), "cannot read %.200s: %s", w->conf.kmsg_path,
             strerror(-rc));
    char msg[EV_TEXT_BYTES];
    snprintf(msg, sizeof(msg),
             "kernel log off: %s. Fix: sudo setcap cap_syslog+ep $(which ringside), or "
             "sysctl kernel.dmesg_restrict=0, or --kmsg-file FIFO fed by journalctl -kf",
             strerror(-rc));
    kmsg_watch_warn(w, ALERT_KMSG_OFF, msg);
}

/* The kernel's source: --kmsg-file (an error when it cannot be opened), else /dev/kmsg (not an
 * error: the state says why), unless --no-kmsg. 0 or -errno with err. */
static int kmsg_watch_open_kern(struct kmsg_watch *w, char *err, size_t errlen) {
    const struct kmsg_conf *c = &w->conf;
    if (!c->off && c->file[0]) {
        int rc = kmsg_src_open(&w->kern, c->file, false);
        if (rc != 0)
            return errbuf_set(err, errlen, rc, "--kmsg-file: %s: %s", c->file, strerror(-rc));
        atomic_store(&w->state, KMSG_STATE_FILE);
    } else if (!c->off) {
        int rc = kmsg_src_open(&w->kern, c->kmsg_path, false);
        if (rc == 0 && w->kern.kind == KMSG_SRC_DEVICE)
            kmsg_watch_position(w, &w->kern);
        if (rc == 0)
            atomic_store(&w->state, KMSG_STATE_LIVE);
        else
            kmsg_watch_unreadable(w, rc);
    }
    return 0;
}

/* Say what --inject kmsg:FILE armed. */
static void kmsg_watch_armed(struct kmsg_watch *w) {
    char msg[EV_TEXT_BYTES];
    snprintf(msg, sizeof(msg), "fault injection armed: kmsg:%.160s (%u lines over %.1f s)",
             w->conf.inject, w->replay.n, (double)kmsg_inject_span_ns(&w->replay) / 1e9);
    kmsg_watch_warn(w, ALERT_NONE, msg);
}

int kmsg_watch_create(struct kmsg_watch **out, const struct kmsg_conf *c, struct evring *ring,
                      char *err, size_t errlen) {
    struct kmsg_watch *w = calloc(1, sizeof(*w));
    *out = NULL;
    if (!w)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    w->conf = *c;
    w->ring = ring;
    w->kern.fd = w->log.fd = w->inj.fd = -1;
    kmsg_classifier_init(&w->kern.cls, c->file[0] ? KMSG_SRC_FILE : KMSG_SRC_KMSG, c->chatter);
    kmsg_classifier_init(&w->log.cls, KMSG_SRC_STDERR, false);
    kmsg_classifier_init(&w->inj.cls, KMSG_SRC_FILE, c->chatter);
    w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->stop_fd < 0) {
        int rc = -errno;
        free(w);
        return errbuf_set(err, errlen, rc, "cannot create an eventfd: %s", strerror(-rc));
    }
    atomic_store(&w->state, KMSG_STATE_OFF);
    /* the errors first: a failed create pushes nothing */
    int rc = c->inject[0] ? kmsg_inject_load(&w->replay, c->inject, err, errlen) : 0;
    if (rc == 0)
        rc = kmsg_watch_open_kern(w, err, errlen);
    if (rc != 0) {
        kmsg_watch_destroy(w);
        return rc;
    }
    if (c->session_log[0] && kmsg_src_open(&w->log, c->session_log, true) == 0)
        w->log.live = true;
    if (c->inject[0])
        kmsg_watch_armed(w);
    *out = w;
    return 0;
}

int kmsg_watch_start(struct kmsg_watch *w) {
    w->start_ns = mono_now_ns(); /* the injected lines' times count from here */
    int rc = pthread_create(&w->thread, NULL, kmsg_watch_main, w);
    w->started = rc == 0;
    return -rc;
}

void kmsg_watch_stats(struct kmsg_watch *w, struct kmsg_stats *out) {
    out->state = (enum kmsg_state)atomic_load(&w->state);
    out->lines = atomic_load(&w->lines);
    out->events = atomic_load(&w->events);
    out->lost = atomic_load(&w->lost);
    out->cut = atomic_load(&w->cut);
    out->dropped = evring_dropped(w->ring);
}

const char *kmsg_watch_reason(const struct kmsg_watch *w) {
    return w->reason;
}

void kmsg_watch_stop(struct kmsg_watch *w) {
    if (!w || !w->started)
        return;
    uint64_t one = 1;
    ssize_t n = write(w->stop_fd, &one, sizeof(one));
    (void)n;
    pthread_join(w->thread, NULL);
    w->started = false;
    /* what is already in the log when the run ends still counts; the thread is gone, so this
     * thread owns the sources now */
    kmsg_watch_log_open(w);
    if (w->kern.kind != KMSG_SRC_NONE)
        kmsg_watch_read(w, &w->kern);
    if (w->log.kind != KMSG_SRC_NONE)
        kmsg_watch_read(w, &w->log);
    /* injected lines due by now too, not the later ones: the run ended before they came */
    kmsg_watch_inject(w, mono_now_ns());
    kmsg_watch_idle(w, &w->kern, UINT64_MAX);
    kmsg_watch_idle(w, &w->log, UINT64_MAX);
    kmsg_watch_idle(w, &w->inj, UINT64_MAX);
}

void kmsg_watch_destroy(struct kmsg_watch *w) {
    if (!w)
        return;
    kmsg_watch_stop(w);
    kmsg_src_close(&w->kern);
    kmsg_src_close(&w->log);
    kmsg_inject_fini(&w->replay);
    close(w->stop_fd);
    free(w);
}
