/* The agent's event log: numbering and tags, what since= selects, the window's limits, followers
 * that fell behind, the sticky status and layout lines for late followers, long lines over
 * several reads, waits that time out or are woken from another thread, and the end after close. */
#include "backend/core/mono.h"
#include "tui/agent/agent_log.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

TestSuite(agent_log, .timeout = 30);

static uint64_t al_append(struct agent_log *l, enum agent_line_kind kind, const char *text) {
    return agent_log_append(l, kind, text, strlen(text));
}

/* An event line "eN" for each N in [from, to]. */
static void al_events(struct agent_log *l, int from, int to) {
    for (int n = from; n <= to; n++) {
        char t[32];
        snprintf(t, sizeof(t), "e%d", n);
        cr_assert_eq(al_append(l, AGENT_LINE_EVENT, t), (uint64_t)n);
    }
}

/* Everything pending for f now (no wait), NUL-terminated, in a static buffer; *end set when
 * the stream ended (-1). */
static const char *al_drain_end(struct agent_follow *f, size_t cap, bool *end) {
    static char all[1 << 16];
    char part[4096];
    size_t n = 0;
    long got;
    cr_assert_leq(cap, sizeof(part));
    while ((got = agent_follow_read(f, part, cap, 0)) > 0) {
        cr_assert_lt(n + (size_t)got, sizeof(all));
        memcpy(all + n, part, (size_t)got);
        n += (size_t)got;
    }
    all[n] = '\0';
    if (end)
        *end = got < 0;
    return all;
}

static const char *al_drain(struct agent_follow *f) {
    return al_drain_end(f, 4096, NULL);
}

/* What a new follower with since gets now. */
static const char *al_from(struct agent_log *l, uint64_t since) {
    struct agent_follow *f;
    cr_assert_eq(agent_follow_open(&f, l, since), 0);
    const char *t = al_drain(f);
    agent_follow_close(f);
    return t;
}

static struct agent_log *al_new(size_t max_lines, size_t max_bytes) {
    struct agent_log *l;
    cr_assert_eq(agent_log_create(&l, max_lines, max_bytes), 0);
    return l;
}

Test(agent_log, zero_limits_are_refused) {
    struct agent_log *l;
    cr_assert_eq(agent_log_create(&l, 0, 100), -EINVAL);
    cr_assert_eq(agent_log_create(&l, 100, 0), -EINVAL);
}

Test(agent_log, events_are_numbered_and_other_lines_tagged_with_the_last_event) {
    struct agent_log *l = al_new(100, 1 << 20);
    cr_assert_eq(agent_log_last_seq(l), 0);
    cr_assert_eq(al_append(l, AGENT_LINE_STATUS, "status before any event"), 0);
    cr_assert_eq(al_append(l, AGENT_LINE_EVENT, "e1"), 1);
    cr_assert_eq(al_append(l, AGENT_LINE_EVENT, "e2"), 2);
    cr_assert_eq(al_append(l, AGENT_LINE_STATE, "summary"), 2);
    cr_assert_eq(al_append(l, AGENT_LINE_LAYOUT, "layout"), 2);
    cr_assert_eq(al_append(l, AGENT_LINE_EVENT, "e3"), 3);
    cr_assert_eq(al_append(l, AGENT_LINE_STATUS, "status"), 3);
    cr_assert_eq(agent_log_last_seq(l), 3);
    struct agent_log_stats st;
    agent_log_stats(l, &st);
    cr_assert_eq(st.appended, 7);
    cr_assert_eq(st.lines, 7);
    cr_assert_eq(st.evicted, 0);
    cr_assert_eq(st.failed, 0);
    agent_log_destroy(l);
}

Test(agent_log, since_gives_the_events_above_it_and_the_lines_tagged_with_it_or_later) {
    struct agent_log *l = al_new(100, 1 << 20);
    cr_assert_eq(agent_log_set_run(l, "run"), 0);
    al_append(l, AGENT_LINE_STATE, "s0");
    al_append(l, AGENT_LINE_EVENT, "e1");
    al_append(l, AGENT_LINE_STATE, "s1");
    al_append(l, AGENT_LINE_EVENT, "e2");
    al_append(l, AGENT_LINE_STATE, "s2");
    al_append(l, AGENT_LINE_STATE, "s2b");
    al_append(l, AGENT_LINE_EVENT, "e3");
    cr_assert_str_eq(al_from(l, 0), "run\ns0\ne1\ns1\ne2\ns2\ns2b\ne3\n");
    cr_assert_str_eq(al_from(l, 1), "run\ns1\ne2\ns2\ns2b\ne3\n");
    cr_assert_str_eq(al_from(l, 2), "run\ns2\ns2b\ne3\n");
    cr_assert_str_eq(al_from(l, 3), "run\n");
    /* a since beyond the last event (an earlier run's): the lines still to come */
    struct agent_follow *f;
    cr_assert_eq(agent_follow_open(&f, l, 1000), 0);
    cr_assert_str_eq(al_drain(f), "run\n");
    al_append(l, AGENT_LINE_EVENT, "e4");
    cr_assert_str_eq(al_drain(f), "e4\n");
    agent_follow_close(f);
    agent_log_destroy(l);
}

Test(agent_log, a_reconnect_with_the_last_event_seen_gets_exactly_the_missing_lines) {
    struct agent_log *l = al_new(100, 1 << 20);
    agent_log_set_run(l, "run");
    al_events(l, 1, 3);
    struct agent_follow *f;
    cr_assert_eq(agent_follow_open(&f, l, 0), 0);
    cr_assert_str_eq(al_drain(f), "run\ne1\ne2\ne3\n");
    agent_follow_close(f); /* the connection drops */
    al_events(l, 4, 4);
    al_append(l, AGENT_LINE_STATE, "s4");
    al_events(l, 5, 5);
    cr_assert_str_eq(al_from(l, 3), "run\ne4\ns4\ne5\n");
    agent_log_destroy(l);
}

Test(agent_log, the_window_holds_at_most_max_lines) {
    struct agent_log *l = al_new(3, 1 << 20);
    al_events(l, 1, 5);
    struct agent_log_stats st;
    agent_log_stats(l, &st);
    cr_assert_eq(st.lines, 3);
    cr_assert_eq(st.bytes, 9); /* "eN\n" */
    cr_assert_eq(st.evicted, 2);
    cr_assert_eq(st.appended, 5);
    cr_assert_str_eq(al_from(l, 0), "e3\ne4\ne5\n");
    cr_assert_str_eq(al_from(l, 1), "e3\ne4\ne5\n", "since below the window: from the oldest");
    cr_assert_str_eq(al_from(l, 4), "e5\n");
    agent_log_destroy(l);
}

Test(agent_log, the_window_holds_at_most_max_bytes_but_always_the_newest_line) {
    struct agent_log *l = al_new(1000, 25);
    al_append(l, AGENT_LINE_EVENT, "aaaaaaaaa"); /* 10 bytes with its newline */
    al_append(l, AGENT_LINE_EVENT, "bbbbbbbbb");
    al_append(l, AGENT_LINE_EVENT, "ccccccccc");
    struct agent_log_stats st;
    agent_log_stats(l, &st);
    cr_assert_eq(st.lines, 2);
    cr_assert_eq(st.bytes, 20);
    cr_assert_eq(st.evicted, 1);
    cr_assert_str_eq(al_from(l, 0), "bbbbbbbbb\nccccccccc\n");
    char big[101];
    memset(big, 'x', 100);
    big[100] = '\0';
    al_append(l, AGENT_LINE_EVENT, big);
    agent_log_stats(l, &st);
    cr_assert_eq(st.lines, 1);
    cr_assert_eq(st.bytes, 101);
    cr_assert_eq(st.evicted, 3);
    agent_log_destroy(l);
}

Test(agent_log, the_ring_grows_past_its_first_size_in_order) {
    struct agent_log *l = al_new(500, 1 << 20);
    al_events(l, 1, 700);
    struct agent_follow *f;
    cr_assert_eq(agent_follow_open(&f, l, 0), 0);
    const char *t = al_drain(f);
    agent_follow_close(f);
    char want[16];
    const char *p = t;
    for (int n = 201; n <= 700; n++) {
        int w = snprintf(want, sizeof(want), "e%d\n", n);
        cr_assert(strncmp(p, want, (size_t)w) == 0, "line %d: %.20s", n, p);
        p += w;
    }
    cr_assert_eq(*p, '\0');
    agent_log_destroy(l);
}

Test(agent_log, a_follower_that_fell_behind_goes_on_at_the_oldest_line_with_a_gap) {
    struct agent_log *l = al_new(3, 1 << 20);
    al_events(l, 1, 3);
    struct agent_follow *f;
    cr_assert_eq(agent_follow_open(&f, l, 0), 0);
    char buf[64];
    cr_assert_eq(agent_follow_read(f, buf, 3, 0), 3, "one whole line: cap fits only e1");
    cr_assert(memcmp(buf, "e1\n", 3) == 0);
    al_events(l, 4, 8); /* e2 .. e5 are pushed out before the follower reads them */
    cr_assert_str_eq(al_drain(f), "e6\ne7\ne8\n");
    al_events(l, 9, 9);
    cr_assert_str_eq(al_drain(f), "e9\n");
    agent_follow_close(f);
    agent_log_destroy(l);
}

Test(agent_log, a_late_follower_gets_the_latest_status_and_layout_after_the_run_line) {
    struct agent_log *l = al_new(3, 1 << 20);
    agent_log_set_run(l, "run");
    al_append(l, AGENT_LINE_STATUS, "status1");
    al_append(l, AGENT_LINE_LAYOUT, "layout1");
    al_append(l, AGENT_LINE_STATUS, "status2");
    al_events(l, 1, 4);
    /* the window holds e2 e3 e4: status2 and layout1 only live on as sticky lines */
    cr_assert_str_eq(al_from(l, 0), "run\nlayout1\nstatus2\ne2\ne3\ne4\n");
    cr_assert_str_eq(al_from(l, 3), "run\nlayout1\nstatus2\ne4\n");
    cr_assert_str_eq(al_from(l, 4), "run\nlayout1\nstatus2\n");
    /* a newer status in the window replaces the sticky one and is not sent twice */
    al_append(l, AGENT_LINE_STATUS, "status3");
    cr_assert_str_eq(al_from(l, 0), "run\nlayout1\ne3\ne4\nstatus3\n");
    agent_log_destroy(l);
}

Test(agent_log, sticky_lines_still_in_the_window_are_not_sent_twice) {
    struct agent_log *l = al_new(100, 1 << 20);
    agent_log_set_run(l, "run");
    al_events(l, 1, 1);
    al_append(l, AGENT_LINE_STATUS, "status");
    al_events(l, 2, 2);
    al_append(l, AGENT_LINE_LAYOUT, "layout");
    al_events(l, 3, 3);
    cr_assert_str_eq(al_from(l, 0), "run\ne1\nstatus\ne2\nlayout\ne3\n");
    /* since=2 starts at the layout: the status before it comes first, once */
    cr_assert_str_eq(al_from(l, 2), "run\nstatus\nlayout\ne3\n");
    cr_assert_str_eq(al_from(l, 3), "run\nstatus\nlayout\n");
    agent_log_destroy(l);
}

Test(agent_log, a_follower_that_fell_behind_gets_the_sticky_lines_it_skipped) {
    struct agent_log *l = al_new(3, 1 << 20);
    al_events(l, 1, 1);
    struct agent_follow *f;
    cr_assert_eq(agent_follow_open(&f, l, 0), 0);
    cr_assert_str_eq(al_drain(f), "e1\n");
    al_append(l, AGENT_LINE_STATUS, "status");
    al_events(l, 2, 5); /* the status is pushed out before the follower reads it */
    cr_assert_str_eq(al_drain(f), "status\ne3\ne4\ne5\n");
    agent_follow_close(f);
    agent_log_destroy(l);
}

Test(agent_log, a_line_longer_than_the_buffer_is_continued_over_reads) {
    struct agent_log *l = al_new(2, 1 << 20);
    agent_log_set_run(l, "run");
    size_t n = 10000;
    char *big = malloc(n + 1);
    cr_assert_not_null(big);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + i % 26);
    big[n] = '\0';
    agent_log_append(l, AGENT_LINE_EVENT, big, n);
    struct agent_follow *f;
    cr_assert_eq(agent_follow_open(&f, l, 0), 0);
    char buf[4096];
    cr_assert_eq(agent_follow_read(f, buf, sizeof(buf), 0), 4, "the run line alone: whole lines");
    cr_assert(memcmp(buf, "run\n", 4) == 0);
    char *got = malloc(n + 64);
    cr_assert_not_null(got);
    cr_assert_eq(agent_follow_read(f, got, 4096, 0), 4096);
    /* the long line leaves the window while the follower is part-way through it */
    al_events(l, 2, 4);
    size_t have = 4096;
    long r;
    while ((r = agent_follow_read(f, buf, sizeof(buf), 0)) > 0) {
        cr_assert_leq(have + (size_t)r, n + 64);
        memcpy(got + have, buf, (size_t)r);
        have += (size_t)r;
    }
    cr_assert_eq(have, n + 1 + 6, "the line, then e3 and e4 (e2 went with the window)");
    cr_assert(memcmp(got, big, n) == 0);
    cr_assert(memcmp(got + n, "\ne3\ne4\n", 7) == 0);
    agent_follow_close(f);
    free(got);
    free(big);
    agent_log_destroy(l);
}

Test(agent_log, whole_lines_fill_the_buffer_while_they_fit) {
    struct agent_log *l = al_new(100, 1 << 20);
    al_events(l, 1, 5); /* "e1\n" .. "e5\n": 3 bytes each */
    struct agent_follow *f;
    cr_assert_eq(agent_follow_open(&f, l, 0), 0);
    char buf[16];
    cr_assert_eq(agent_follow_read(f, buf, 8, 0), 6);
    cr_assert(memcmp(buf, "e1\ne2\n", 6) == 0);
    cr_assert_eq(agent_follow_read(f, buf, 9, 0), 9);
    cr_assert(memcmp(buf, "e3\ne4\ne5\n", 9) == 0);
    cr_assert_eq(agent_follow_read(f, buf, 9, 0), 0);
    agent_follow_close(f);
    agent_log_destroy(l);
}

Test(agent_log, a_wait_with_nothing_new_returns_0_after_its_time) {
    struct agent_log *l = al_new(10, 1000);
    al_events(l, 1, 1);
    struct agent_follow *f;
    cr_assert_eq(agent_follow_open(&f, l, 1), 0);
    char buf[64];
    uint64_t t0 = mono_now_ns();
    cr_assert_eq(agent_follow_read(f, buf, sizeof(buf), 60), 0);
    uint64_t waited = mono_now_ns() - t0;
    cr_assert_geq(waited, 55000000u, "waited %llu ns", (unsigned long long)waited);
    cr_assert_lt(waited, 2000000000u);
    cr_assert_eq(agent_follow_read(f, buf, sizeof(buf), 0), 0, "no wait at all");
    agent_follow_close(f);
    agent_log_destroy(l);
}

/* ---- other threads ---- */

struct al_reader {
    struct agent_follow *f;
    int wait_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool started, done;
    long got;
    char buf[256];
    uint64_t took_ns;
};

static void *al_reader_main(void *arg) {
    struct al_reader *r = arg;
    pthread_mutex_lock(&r->mu);
    r->started = true;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    uint64_t t0 = mono_now_ns();
    long got = agent_follow_read(r->f, r->buf, sizeof(r->buf) - 1, r->wait_ms);
    pthread_mutex_lock(&r->mu);
    r->got = got;
    r->took_ns = mono_now_ns() - t0;
    r->done = true;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* A thread blocked (or about to block) in agent_follow_read for up to wait_ms. */
static pthread_t al_reader_start(struct al_reader *r, struct agent_follow *f, int wait_ms) {
    memset(r, 0, sizeof(*r));
    r->f = f;
    r->wait_ms = wait_ms;
    pthread_mutex_init(&r->mu, NULL);
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cv, &a);
    pthread_condattr_destroy(&a);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, al_reader_main, r), 0);
    pthread_mutex_lock(&r->mu);
    while (!r->started)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    return t;
}

static void al_reader_join(pthread_t t, struct al_reader *r) {
    pthread_join(t, NULL);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
}

Test(agent_log, a_waiting_follower_is_woken_by_an_append) {
    struct agent_log *l = al_new(10, 1000);
    struct agent_follow *f;
    cr_assert_eq(agent_follow_open(&f, l, 0), 0);
    struct al_reader r;
    pthread_t t = al_reader_start(&r, f, 20000);
    al_append(l, AGENT_LINE_EVENT, "e1");
    al_reader_join(t, &r);
    cr_assert_eq(r.got, 3);
    cr_assert(memcmp(r.buf, "e1\n", 3) == 0);
    cr_assert_lt(r.took_ns, 10000000000u, "woken, not timed out");
    agent_follow_close(f);
    agent_log_destroy(l);
}

Test(agent_log, close_wakes_a_waiting_follower_which_then_ends) {
    struct agent_log *l = al_new(10, 1000);
    struct agent_follow *f;
    cr_assert_eq(agent_follow_open(&f, l, 0), 0);
    struct al_reader r;
    pthread_t t = al_reader_start(&r, f, 20000);
    agent_log_close(l);
    al_reader_join(t, &r);
    cr_assert_eq(r.got, -1);
    cr_assert_lt(r.took_ns, 10000000000u);
    agent_follow_close(f);
    agent_log_destroy(l);
}

Test(agent_log, wake_makes_a_waiting_follower_return_0) {
    struct agent_log *l = al_new(10, 1000);
    struct agent_follow *f;
    cr_assert_eq(agent_follow_open(&f, l, 0), 0);
    struct al_reader r;
    pthread_t t = al_reader_start(&r, f, 20000);
    /* a wake ends the waits that began before it: wake until the reader is back */
    pthread_mutex_lock(&r.mu);
    while (!r.done) {
        pthread_mutex_unlock(&r.mu);
        agent_log_wake(l);
        pthread_mutex_lock(&r.mu);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += 20000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        while (!r.done && pthread_cond_timedwait(&r.cv, &r.mu, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&r.mu);
    al_reader_join(t, &r);
    cr_assert_eq(r.got, 0);
    cr_assert_lt(r.took_ns, 10000000000u);
    agent_follow_close(f);
    agent_log_destroy(l);
}

Test(agent_log, close_ends_followers_after_they_have_read_everything) {
    struct agent_log *l = al_new(10, 1000);
    agent_log_set_run(l, "run");
    al_events(l, 1, 2);
    struct agent_follow *f;
    cr_assert_eq(agent_follow_open(&f, l, 0), 0);
    agent_log_close(l);
    bool end = false;
    cr_assert_str_eq(al_drain_end(f, 4096, &end), "run\ne1\ne2\n");
    cr_assert(end);
    char buf[8];
    cr_assert_eq(agent_follow_read(f, buf, sizeof(buf), 1000), -1, "no wait once ended");
    agent_follow_close(f);
    agent_log_destroy(l);
}

Test(agent_log, stats_count_followers_and_the_run_line_is_replaced) {
    struct agent_log *l = al_new(10, 1000);
    agent_log_set_run(l, "run1");
    agent_log_set_run(l, "run2");
    struct agent_follow *a, *b;
    cr_assert_eq(agent_follow_open(&a, l, 0), 0);
    cr_assert_eq(agent_follow_open(&b, l, 0), 0);
    struct agent_log_stats st;
    agent_log_stats(l, &st);
    cr_assert_eq(st.followers, 2);
    cr_assert_str_eq(al_drain(a), "run2\n");
    agent_follow_close(a);
    agent_follow_close(b);
    agent_log_stats(l, &st);
    cr_assert_eq(st.followers, 0);
    agent_log_destroy(l);
}

/* One writer, several followers reading to the end: each sees increasing event numbers (gaps
 * where it fell behind) and the last one. */
struct al_counter {
    struct agent_follow *f;
    uint64_t last, lines;
    bool ordered;
};

static void *al_counter_main(void *arg) {
    struct al_counter *c = arg;
    char buf[512];
    size_t have = 0;
    c->ordered = true;
    for (;;) {
        long n = agent_follow_read(c->f, buf + have, sizeof(buf) - have, 1000);
        if (n < 0)
            break;
        have += (size_t)n;
        char *nl;
        while ((nl = memchr(buf, '\n', have))) {
            uint64_t seq = strtoull(buf + 1, NULL, 10);
            c->ordered = c->ordered && seq > c->last;
            c->last = seq;
            c->lines++;
            size_t used = (size_t)(nl - buf) + 1;
            memmove(buf, nl + 1, have - used);
            have -= used;
        }
    }
    return NULL;
}

Test(agent_log, one_writer_and_many_followers) {
    struct agent_log *l = al_new(64, 1 << 20);
    enum { NF = 4, NLINES = 20000 };
    struct al_counter c[NF];
    pthread_t t[NF];
    for (int i = 0; i < NF; i++) {
        memset(&c[i], 0, sizeof(c[i]));
        cr_assert_eq(agent_follow_open(&c[i].f, l, 0), 0);
        cr_assert_eq(pthread_create(&t[i], NULL, al_counter_main, &c[i]), 0);
    }
    al_events(l, 1, NLINES);
    agent_log_close(l);
    for (int i = 0; i < NF; i++) {
        pthread_join(t[i], NULL);
        cr_assert(c[i].ordered);
        cr_assert_eq(c[i].last, NLINES);
        cr_assert_gt(c[i].lines, 0);
        agent_follow_close(c[i].f);
    }
    agent_log_destroy(l);
}
