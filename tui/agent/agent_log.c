/* The agent's event log: a ring of malloc'd lines under one mutex, a condition variable on
 * CLOCK_MONOTONIC for the followers' waits. Every appended line gets an id (1, 2, ...: its place
 * in the stream); a follower keeps the id of the next line it wants, so the writer never waits
 * for a reader and a reader that fell behind just finds its id gone. Lines are reference counted
 * (the window, the run and sticky slots, a follower part-way through one) and never change once
 * appended, so a long line can be copied out over several reads while the window moves on. */
#include "tui/agent/agent_log.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define AGENT_LOG_STICKY  2 /* STATUS, LAYOUT */
#define AGENT_LOG_RING0   64
#define AGENT_LOG_NSEC    1000000000L
#define AGENT_LOG_MS_NSEC 1000000L

struct agent_line {
    uint64_t id;   /* place in the stream (0 for the run line) */
    uint64_t tag;  /* the event number (EVENT), else the last one before it */
    unsigned refs; /* under the log's lock */
    uint8_t kind;  /* enum agent_line_kind */
    size_t len;    /* bytes of text, its '\n' included */
    char text[];
};

struct agent_log {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t max_lines, max_bytes;
    struct agent_line **ring;
    size_t cap, head, count; /* head: the slot of the oldest line held */
    size_t bytes;            /* text held in the window */
    uint64_t next_id;        /* the id the next line gets; the oldest held is next_id - count */
    uint64_t last_seq;
    struct agent_line *run;
    struct agent_line *sticky[AGENT_LOG_STICKY];
    uint64_t appended, evicted, failed;
    uint64_t wakes; /* agent_log_wake calls */
    unsigned followers;
    bool closed;
};

struct agent_follow {
    struct agent_log *log;
    struct agent_line *cur; /* the line being copied out (a reference), or NULL */
    size_t off;             /* bytes of cur already copied */
    uint64_t next;          /* the id of the next window line to send */
    uint64_t owed; /* sticky lines with ids from owed up to where the window part starts are due */
    bool ran;      /* the run line was looked at */
};

/* ---- lines ---- */

static struct agent_line *agent_line_new(enum agent_line_kind kind, const char *text, size_t len) {
    if (len > SIZE_MAX - sizeof(struct agent_line) - 1)
        return NULL;
    struct agent_line *line = malloc(sizeof(*line) + len + 1);
    if (!line)
        return NULL;
    line->id = line->tag = 0;
    line->refs = 1;
    line->kind = (uint8_t)kind;
    line->len = len + 1;
    if (len)
        memcpy(line->text, text, len);
    line->text[len] = '\n';
    return line;
}

static struct agent_line *agent_line_ref(struct agent_line *line) {
    line->refs++;
    return line;
}

static void agent_line_unref(struct agent_line *line) {
    if (line && --line->refs == 0)
        free(line);
}

static int agent_log_sticky_slot(enum agent_line_kind kind) {
    return kind == AGENT_LINE_STATUS ? 0 : kind == AGENT_LINE_LAYOUT ? 1 : -1;
}

/* ---- the window (callers hold the lock) ---- */

static uint64_t agent_log_oldest(const struct agent_log *l) {
    return l->next_id - l->count;
}

static struct agent_line *agent_log_at(const struct agent_log *l, uint64_t id) {
    return l->ring[(l->head + (size_t)(id - agent_log_oldest(l))) % l->cap];
}

static void agent_log_evict(struct agent_log *l) {
    struct agent_line *line = l->ring[l->head];
    l->ring[l->head] = NULL;
    l->head = (l->head + 1) % l->cap;
    l->count--;
    l->bytes -= line->len;
    l->evicted++;
    agent_line_unref(line);
}

/* Room for one more line: a larger ring while under max_lines, else the oldest goes. */
static void agent_log_make_room(struct agent_log *l) {
    if (l->count < l->cap)
        return;
    if (l->cap < l->max_lines) {
        size_t cap = l->cap > l->max_lines / 2 ? l->max_lines : l->cap * 2;
        struct agent_line **ring = malloc(cap * sizeof(*ring));
        if (ring) {
            for (size_t i = 0; i < l->count; i++)
                ring[i] = l->ring[(l->head + i) % l->cap];
            free(l->ring);
            l->ring = ring;
            l->cap = cap;
            l->head = 0;
            return;
        }
    }
    agent_log_evict(l); /* full, or no memory to grow: the window is only smaller */
}

static void agent_log_push(struct agent_log *l, struct agent_line *line) {
    agent_log_make_room(l);
    l->ring[(l->head + l->count) % l->cap] = line;
    l->count++;
    l->bytes += line->len;
    while (l->count > 1 && (l->count > l->max_lines || l->bytes > l->max_bytes))
        agent_log_evict(l);
}

/* true when since selects the line: an event numbered above it, another line tagged since or
 * later. Over the window's order it is false up to some line and true from there on. */
static bool agent_log_selects(const struct agent_line *line, uint64_t since) {
    return line->kind == AGENT_LINE_EVENT ? line->tag > since : line->tag >= since;
}

/* The id of the first held line since selects, or next_id when none does. */
static uint64_t agent_log_find(const struct agent_log *l, uint64_t since) {
    uint64_t lo = agent_log_oldest(l), hi = l->next_id;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (agent_log_selects(agent_log_at(l, mid), since))
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* ---- the log ---- */

int agent_log_create(struct agent_log **out, size_t max_lines, size_t max_bytes) {
    if (max_lines == 0 || max_bytes == 0)
        return -EINVAL;
    struct agent_log *l = calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    l->cap = max_lines < AGENT_LOG_RING0 ? max_lines : AGENT_LOG_RING0;
    l->ring = calloc(l->cap, sizeof(*l->ring));
    if (!l->ring) {
        free(l);
        return -ENOMEM;
    }
    l->max_lines = max_lines;
    l->max_bytes = max_bytes;
    l->next_id = 1;
    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cv, &a);
    pthread_condattr_destroy(&a);
    *out = l;
    return 0;
}

void agent_log_destroy(struct agent_log *l) {
    if (!l)
        return;
    while (l->count)
        agent_log_evict(l);
    for (int k = 0; k < AGENT_LOG_STICKY; k++)
        agent_line_unref(l->sticky[k]);
    agent_line_unref(l->run);
    free(l->ring);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

int agent_log_set_run(struct agent_log *l, const char *line) {
    struct agent_line *run = agent_line_new(AGENT_LINE_STATE, line, strlen(line));
    if (!run)
        return -ENOMEM;
    pthread_mutex_lock(&l->mu);
    struct agent_line *old = l->run;
    l->run = run;
    agent_line_unref(old);
    pthread_mutex_unlock(&l->mu);
    return 0;
}

uint64_t agent_log_append(struct agent_log *l, enum agent_line_kind kind, const char *text,
                          size_t len) {
    struct agent_line *line = agent_line_new(kind, text, len);
    pthread_mutex_lock(&l->mu);
    if (!line) {
        l->failed++;
        pthread_mutex_unlock(&l->mu);
        return 0;
    }
    if (kind == AGENT_LINE_EVENT)
        l->last_seq++;
    line->tag = l->last_seq;
    line->id = l->next_id++;
    int slot = agent_log_sticky_slot(kind);
    if (slot >= 0) {
        agent_line_unref(l->sticky[slot]);
        l->sticky[slot] = agent_line_ref(line);
    }
    agent_log_push(l, line);
    l->appended++;
    uint64_t tag = line->tag;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    return tag;
}

uint64_t agent_log_last_seq(struct agent_log *l) {
    pthread_mutex_lock(&l->mu);
    uint64_t seq = l->last_seq;
    pthread_mutex_unlock(&l->mu);
    return seq;
}

void agent_log_close(struct agent_log *l) {
    pthread_mutex_lock(&l->mu);
    l->closed = true;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

void agent_log_wake(struct agent_log *l) {
    pthread_mutex_lock(&l->mu);
    l->wakes++;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

void agent_log_stats(struct agent_log *l, struct agent_log_stats *out) {
    pthread_mutex_lock(&l->mu);
    out->lines = l->count;
    out->bytes = l->bytes;
    out->appended = l->appended;
    out->evicted = l->evicted;
    out->failed = l->failed;
    out->followers = l->followers;
    pthread_mutex_unlock(&l->mu);
}

/* ---- followers ---- */

int agent_follow_open(struct agent_follow **out, struct agent_log *l, uint64_t since) {
    struct agent_follow *f = calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    f->log = l;
    pthread_mutex_lock(&l->mu);
    f->next = agent_log_find(l, since);
    l->followers++;
    pthread_mutex_unlock(&l->mu);
    *out = f;
    return 0;
}

void agent_follow_close(struct agent_follow *f) {
    if (!f)
        return;
    struct agent_log *l = f->log;
    pthread_mutex_lock(&l->mu);
    agent_line_unref(f->cur);
    l->followers--;
    pthread_cond_broadcast(&l->cv); /* agent_log_wait_followers */
    pthread_mutex_unlock(&l->mu);
    free(f);
}

/* The next line for f (a reference), or NULL when nothing is pending. Under the lock. The
 * window part starts at f->next, or at the oldest line held when that is gone; before it, the
 * latest sticky lines in [f->owed, that start) the follower would otherwise never see, oldest
 * first. */
static struct agent_line *agent_follow_pick(struct agent_follow *f) {
    struct agent_log *l = f->log;
    if (!f->ran) {
        f->ran = true;
        if (l->run)
            return agent_line_ref(l->run);
    }
    uint64_t oldest = agent_log_oldest(l);
    uint64_t from = f->next > oldest ? f->next : oldest;
    struct agent_line *best = NULL;
    for (int k = 0; k < AGENT_LOG_STICKY; k++) {
        struct agent_line *s = l->sticky[k];
        if (s && s->id >= f->owed && s->id < from && (!best || s->id < best->id))
            best = s;
    }
    if (best) {
        f->owed = best->id + 1;
        return agent_line_ref(best);
    }
    f->next = f->owed = from;
    if (from >= l->next_id)
        return NULL;
    f->next = f->owed = from + 1;
    return agent_line_ref(agent_log_at(l, from));
}

/* Copy what is pending into buf; the bytes copied. Under the lock. */
static size_t agent_follow_copy(struct agent_follow *f, char *buf, size_t cap) {
    size_t got = 0;
    while (got < cap) {
        if (!f->cur) {
            f->cur = agent_follow_pick(f);
            f->off = 0;
            if (!f->cur)
                break;
        }
        size_t left = f->cur->len - f->off;
        if (got > 0 && left > cap - got)
            break; /* whole lines where they fit: this one starts the next read */
        size_t n = left < cap - got ? left : cap - got;
        memcpy(buf + got, f->cur->text + f->off, n);
        got += n;
        f->off += n;
        if (f->off == f->cur->len) {
            agent_line_unref(f->cur);
            f->cur = NULL;
        }
    }
    return got;
}

static struct timespec agent_log_deadline(int wait_ms) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += wait_ms / 1000;
    t.tv_nsec += (long)(wait_ms % 1000) * AGENT_LOG_MS_NSEC;
    if (t.tv_nsec >= AGENT_LOG_NSEC) {
        t.tv_sec++;
        t.tv_nsec -= AGENT_LOG_NSEC;
    }
    return t;
}

long agent_follow_read(struct agent_follow *f, char *buf, size_t cap, int wait_ms) {
    struct agent_log *l = f->log;
    if (cap > LONG_MAX)
        cap = LONG_MAX;
    pthread_mutex_lock(&l->mu);
    uint64_t wakes = l->wakes;
    bool timed_out = wait_ms <= 0, have_deadline = false;
    struct timespec until;
    long rc;
    for (;;) {
        size_t got = cap ? agent_follow_copy(f, buf, cap) : 0;
        if (got > 0 || cap == 0) {
            rc = (long)got;
            break;
        }
        if (l->closed) {
            rc = -1;
            break;
        }
        if (timed_out || l->wakes != wakes) {
            rc = 0;
            break;
        }
        if (!have_deadline) {
            until = agent_log_deadline(wait_ms);
            have_deadline = true;
        }
        /* one more look after a timeout: a line may have come with it */
        timed_out = pthread_cond_timedwait(&l->cv, &l->mu, &until) == ETIMEDOUT;
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

bool agent_log_wait_followers(struct agent_log *l, int timeout_ms) {
    struct timespec until = agent_log_deadline(timeout_ms);
    pthread_mutex_lock(&l->mu);
    while (l->followers > 0 && pthread_cond_timedwait(&l->cv, &l->mu, &until) != ETIMEDOUT)
        ;
    bool none = l->followers == 0;
    pthread_mutex_unlock(&l->mu);
    return none;
}
