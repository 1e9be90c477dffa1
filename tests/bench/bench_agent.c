/* Benchmark (not a test): what serving /metrics under heavy scrape load costs the training loop
 * of `ringside agent --train`, and whether the agent's memory stays bounded under it.
 *
 * It starts `RINGSIDE agent --listen 127.0.0.1:0 --train --backend cpu ...` (its stderr to a
 * file in a temp dir, where it learns the port from the "serving http://..." line), waits for
 * the first training steps and a 3 s warm-up, then measures three windows in a row:
 *   quiet        Q s, nobody but the bench scraping
 *   loaded       S s, N threads each looping: connect, GET /metrics (HTTP/1.0), read to the
 *                close, check the status is 200 and the body has the step counter, close,
 *                pause MS ms (200 threads every 100 ms: ~2000 scrapes/s, far beyond any
 *                Prometheus setup)
 *   quiet after  Q s
 * The training rate of a window is the agent's own ringside_train_steps_total over it, read by
 * the main thread at each end. That counter is refreshed once per --metrics-interval (1 s here),
 * so one read can be up to that old: the windows must be long relative to it (the defaults
 * are). To shrink that error, each end is read where the counter moves (a scrape every 10 ms
 * until it changes, at most a few seconds), which leaves a read about as old as the engine's
 * snapshot (published every 100 ms) rather than up to a second. The slowdown is the loaded
 * rate against the mean of the two quiet ones (goal <= 2%); how much the two quiet ones differ
 * is printed too, as the noise floor (every epoch, 81 steps here, ends with an eval and a
 * checkpoint write, so a busy disk or machine shows). The agent's VmRSS is sampled every 0.5 s
 * (max and last per window), VmHWM at the end. The scrapers run on the same machine and take
 * CPU from the training threads too: on a small machine, that is part of the cost.
 * Usage:
 *   bench_agent RINGSIDE [--scrapers N (200)] [--seconds S (30)] [--interval-ms MS (100)]
 *               [--quiet-seconds Q (S)] [-- extra agent args]
 * Exit: 0 when it ran (whatever the numbers), 1 when it could not (the agent did not start...),
 * 2 for a bad option. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BENCH_AGENT_COUNTER   "ringside_train_steps_total"
#define BENCH_AGENT_GOAL_PCT  2.0
#define BENCH_AGENT_WARMUP_S  3.0
#define BENCH_AGENT_START_S   60.0 /* for the "serving" line, then for the first steps */
#define BENCH_AGENT_FRESH_S   3.0  /* a counter that does not move in this long is taken as is */
#define BENCH_AGENT_RSS_S     0.5
#define BENCH_AGENT_STOP_S    60.0 /* after SIGTERM, then SIGKILL */
#define BENCH_AGENT_IO_S      10   /* a scrape's socket timeouts */
#define BENCH_AGENT_MAX_EXTRA 64

extern char **environ;

struct bench_agent_opts {
    const char *ringside;
    unsigned scrapers, interval_ms;
    double seconds, quiet_s;
    const char *extra[BENCH_AGENT_MAX_EXTRA];
    int n_extra;
};

/* The agent: its process, temp dir, log and port. */
struct bench_agent_proc {
    pid_t pid;
    bool reaped;
    int status;
    char dir[4096], log[4200], out[4200];
    unsigned port;
};

/* A growing receive buffer, one per thread. */
struct bench_agent_buf {
    char *p;
    size_t len, cap;
};

/* What every scraper reads; stop is the only thing written while they run. */
struct bench_agent_load {
    unsigned port, interval_ms;
    atomic_bool stop;
};

struct bench_agent_scraper {
    pthread_t th;
    struct bench_agent_load *load;
    uint64_t done, failed;
    double *lat_ms; /* one per scrape done */
    size_t n_lat, cap_lat;
    char why[128]; /* the first failure */
};

struct bench_agent_window {
    const char *name;
    double t0, t1, steps0, steps1;
    double rss_max_kib, rss_last_kib;
};

static double bench_agent_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void bench_agent_sleep(double s) {
    if (s <= 0)
        return;
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

/* ---- HTTP ---- */

static int bench_agent_connect(unsigned port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct timeval tv = {BENCH_AGENT_IO_S, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

static int bench_agent_recv_all(int fd, struct bench_agent_buf *b) {
    b->len = 0;
    for (;;) {
        if (b->cap - b->len < 4096) {
            size_t cap = b->cap ? b->cap * 2 : 65536;
            char *p = realloc(b->p, cap);
            if (!p)
                return -ENOMEM;
            b->p = p;
            b->cap = cap;
        }
        ssize_t n = recv(fd, b->p + b->len, b->cap - b->len - 1, 0);
        if (n == 0)
            break;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        b->len += (size_t)n;
    }
    b->p[b->len] = '\0';
    return 0;
}

/* One GET /metrics over a fresh connection, read to the close: the HTTP status in *status
 * (0 when none came back) and the response in b. 0, or -errno. */
static int bench_agent_get(unsigned port, struct bench_agent_buf *b, int *status) {
    static const char req[] = "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n";
    *status = 0;
    int fd = bench_agent_connect(port);
    if (fd < 0)
        return fd;
    size_t sent = 0;
    while (sent < sizeof(req) - 1) {
        ssize_t n = send(fd, req + sent, sizeof(req) - 1 - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EPIPE;
            close(fd);
            return -e;
        }
        sent += (size_t)n;
    }
    int rc = bench_agent_recv_all(fd, b);
    close(fd);
    if (rc == 0 && sscanf(b->p, "HTTP/%*d.%*d %d", status) != 1)
        *status = 0;
    return rc;
}

/* The value of the unlabelled sample NAME in an exposition text; false when absent. */
static bool bench_agent_sample(const char *text, const char *name, double *v) {
    size_t n = strlen(name);
    for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        if (strncmp(l, name, n) != 0 || l[n] != ' ')
            continue;
        char *end;
        *v = strtod(l + n + 1, &end);
        return end != l + n + 1;
    }
    return false;
}

/* The step counter by one scrape of the main thread. 0, or -1 with why on stderr. */
static int bench_agent_steps(unsigned port, struct bench_agent_buf *b, double *steps) {
    int status;
    int rc = bench_agent_get(port, b, &status);
    const char *body = rc == 0 ? strstr(b->p, "\r\n\r\n") : NULL;
    if (rc == 0 && status == 200 && body &&
        bench_agent_sample(body + 4, BENCH_AGENT_COUNTER, steps))
        return 0;
    if (rc != 0)
        fprintf(stderr, "bench_agent: GET /metrics: %s\n", strerror(-rc));
    else
        fprintf(stderr, "bench_agent: GET /metrics: status %d, %s\n", status,
                body ? "no " BENCH_AGENT_COUNTER " in the body" : "no body");
    return -1;
}

/* The counter read where the agent's loop refreshes it: a scrape every 10 ms until the value
 * changes, so that it is one poll old rather than up to a --metrics-interval. *t: when. */
static int bench_agent_steps_fresh(unsigned port, struct bench_agent_buf *b, double *steps,
                                   double *t) {
    double first, v, deadline = bench_agent_now() + BENCH_AGENT_FRESH_S;
    if (bench_agent_steps(port, b, &first) != 0)
        return -1;
    do {
        bench_agent_sleep(0.01);
        if (bench_agent_steps(port, b, &v) != 0)
            return -1;
        *t = bench_agent_now();
    } while (v == first && *t < deadline);
    *steps = v;
    return 0;
}

/* ---- the scrapers ---- */

static void bench_agent_fail(struct bench_agent_scraper *s, const char *why, int err) {
    s->failed++;
    if (!s->why[0])
        snprintf(s->why, sizeof(s->why), "%s%s%s", why, err ? ": " : "", err ? strerror(err) : "");
}

static void bench_agent_record(struct bench_agent_scraper *s, double ms) {
    if (s->n_lat == s->cap_lat) {
        size_t cap = s->cap_lat ? s->cap_lat * 2 : 1024;
        double *p = realloc(s->lat_ms, cap * sizeof(*p));
        if (!p)
            return; /* the scrape still counts; its latency is lost */
        s->lat_ms = p;
        s->cap_lat = cap;
    }
    s->lat_ms[s->n_lat++] = ms;
}

static void *bench_agent_scrape_loop(void *arg) {
    struct bench_agent_scraper *s = arg;
    struct bench_agent_buf b = {0};
    while (!atomic_load(&s->load->stop)) {
        int status;
        double t0 = bench_agent_now();
        int rc = bench_agent_get(s->load->port, &b, &status);
        double ms = (bench_agent_now() - t0) * 1e3;
        if (rc != 0)
            bench_agent_fail(s, "connect/send/recv", -rc);
        else if (status != 200)
            bench_agent_fail(s, status ? "status not 200" : "no HTTP status line", 0);
        else if (!strstr(b.p, BENCH_AGENT_COUNTER))
            bench_agent_fail(s, "no " BENCH_AGENT_COUNTER " in the body", 0);
        else {
            s->done++;
            bench_agent_record(s, ms);
        }
        bench_agent_sleep((double)s->load->interval_ms / 1e3);
    }
    free(b.p);
    return NULL;
}

/* Start n scrapers; the number started (all of them, or fewer when threads ran out). */
static unsigned bench_agent_load_start(struct bench_agent_scraper *s, unsigned n,
                                       struct bench_agent_load *load) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    unsigned k;
    for (k = 0; k < n; k++) {
        s[k].load = load;
        if (pthread_create(&s[k].th, &attr, bench_agent_scrape_loop, &s[k]) != 0)
            break;
    }
    pthread_attr_destroy(&attr);
    return k;
}

static void bench_agent_load_stop(struct bench_agent_scraper *s, unsigned n,
                                  struct bench_agent_load *load) {
    atomic_store(&load->stop, true);
    for (unsigned k = 0; k < n; k++)
        pthread_join(s[k].th, NULL);
}

/* ---- the agent process ---- */

/* The agent's VmRSS: or VmHWM: in KiB, or -1. */
static double bench_agent_vm(pid_t pid, const char *field) {
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    double kib = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, field, n) == 0) {
            kib = strtod(line + n, NULL);
            break;
        }
    if (f)
        fclose(f);
    return kib;
}

/* Whether the agent is still running (reaps it when not). */
static bool bench_agent_alive(struct bench_agent_proc *p) {
    if (p->reaped)
        return false;
    if (waitpid(p->pid, &p->status, WNOHANG) == p->pid)
        p->reaped = true;
    return !p->reaped;
}

static void bench_agent_describe(int status, char *out, size_t n) {
    if (WIFEXITED(status))
        snprintf(out, n, "exited %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(out, n, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(out, n, "status 0x%x", (unsigned)status);
}

/* The last lines of the agent's log on stderr, for a failure. */
static void bench_agent_log_tail(const struct bench_agent_proc *p) {
    FILE *f = fopen(p->log, "r");
    if (!f)
        return;
    char buf[2048];
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size > (long)sizeof(buf) - 1 ? size - (long)sizeof(buf) + 1 : 0, SEEK_SET);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    fprintf(stderr, "bench_agent: the agent's log ends with:\n%s%s", buf,
            n && buf[n - 1] != '\n' ? "\n" : "");
}

static int bench_agent_spawn(const struct bench_agent_opts *o, struct bench_agent_proc *p) {
    const char *base[] = {o->ringside,
                          "agent",
                          "--listen",
                          "127.0.0.1:0",
                          "--train",
                          "--backend",
                          "cpu",
                          "--synthetic-days",
                          "20",
                          "--epochs",
                          "1000000",
                          "--output",
                          p->out,
                          "--telemetry",
                          "none",
                          "--no-kmsg",
                          "--metrics-interval",
                          "1"};
    enum { NB = sizeof(base) / sizeof(base[0]) };
    const char *args[NB + BENCH_AGENT_MAX_EXTRA + 1];
    memcpy(args, base, sizeof(base));
    for (int k = 0; k < o->n_extra; k++)
        args[NB + k] = o->extra[k];
    args[NB + o->n_extra] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, p->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 2, 1);
    int rc = posix_spawnp(&p->pid, o->ringside, &fa, NULL, (char *const *)args, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        fprintf(stderr, "bench_agent: cannot start %s: %s\n", o->ringside, strerror(rc));
    return rc == 0 ? 0 : -1;
}

/* The port from the agent's "serving http://127.0.0.1:PORT" line. 0, or -1 (said why). */
static int bench_agent_wait_port(struct bench_agent_proc *p) {
    static const char key[] = "serving http://127.0.0.1:";
    double deadline = bench_agent_now() + BENCH_AGENT_START_S;
    char buf[65536];
    while (bench_agent_now() < deadline) {
        FILE *f = fopen(p->log, "r");
        size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = '\0';
        const char *s = strstr(buf, key);
        if (s && strchr(s, '\n')) { /* the whole line is there */
            p->port = (unsigned)strtoul(s + sizeof(key) - 1, NULL, 10);
            if (p->port > 0 && p->port < 65536)
                return 0;
        }
        if (!bench_agent_alive(p)) {
            char st[96];
            bench_agent_describe(p->status, st, sizeof(st));
            fprintf(stderr, "bench_agent: the agent %s before it served\n", st);
            return -1;
        }
        bench_agent_sleep(0.02);
    }
    fprintf(stderr, "bench_agent: no \"%s...\" line in %.0f s\n", key, BENCH_AGENT_START_S);
    return -1;
}

/* Until the loop has stepped, then the warm-up. 0, or -1 (said why). */
static int bench_agent_wait_steps(struct bench_agent_proc *p, struct bench_agent_buf *b) {
    double deadline = bench_agent_now() + BENCH_AGENT_START_S, steps = 0;
    while (bench_agent_now() < deadline) {
        if (!bench_agent_alive(p)) {
            fprintf(stderr, "bench_agent: the agent stopped before its first step\n");
            return -1;
        }
        if (bench_agent_steps(p->port, b, &steps) != 0)
            return -1;
        if (steps > 0) {
            bench_agent_sleep(BENCH_AGENT_WARMUP_S);
            return 0;
        }
        bench_agent_sleep(0.1);
    }
    fprintf(stderr, "bench_agent: %s still 0 after %.0f s\n", BENCH_AGENT_COUNTER,
            BENCH_AGENT_START_S);
    return -1;
}

/* SIGTERM, then SIGKILL after BENCH_AGENT_STOP_S; how long it took to go. */
static double bench_agent_stop(struct bench_agent_proc *p) {
    double t0 = bench_agent_now();
    if (!bench_agent_alive(p))
        return 0;
    kill(p->pid, SIGTERM);
    while (bench_agent_alive(p) && bench_agent_now() - t0 < BENCH_AGENT_STOP_S)
        bench_agent_sleep(0.02);
    if (!p->reaped) {
        fprintf(stderr, "bench_agent: the agent did not stop in %.0f s: SIGKILL\n",
                BENCH_AGENT_STOP_S);
        kill(p->pid, SIGKILL);
        while (waitpid(p->pid, &p->status, 0) < 0 && errno == EINTR) {
        }
        p->reaped = true;
    }
    return bench_agent_now() - t0;
}

static int bench_agent_rm_one(const char *path, const struct stat *st, int flag, struct FTW *f) {
    (void)st;
    (void)flag;
    (void)f;
    remove(path);
    return 0;
}

/* ---- the windows ---- */

static void bench_agent_rss(const struct bench_agent_proc *p, struct bench_agent_window *w) {
    double kib = bench_agent_vm(p->pid, "VmRSS:");
    if (kib < 0)
        return;
    w->rss_last_kib = kib;
    w->rss_max_kib = kib > w->rss_max_kib ? kib : w->rss_max_kib;
}

/* Read the counter at the start, sample RSS for `seconds`, then read the counter at the end
 * (the caller's load, if any, runs around it). 0, or -1 when the agent stopped answering. */
static int bench_agent_window_begin(struct bench_agent_proc *p, struct bench_agent_buf *b,
                                    struct bench_agent_window *w) {
    w->rss_max_kib = w->rss_last_kib = -1;
    bench_agent_rss(p, w);
    return bench_agent_steps_fresh(p->port, b, &w->steps0, &w->t0);
}

static int bench_agent_window_end(struct bench_agent_proc *p, struct bench_agent_buf *b,
                                  struct bench_agent_window *w, double seconds) {
    double end = w->t0 + seconds;
    for (double now = bench_agent_now(); now < end; now = bench_agent_now()) {
        bench_agent_sleep(end - now < BENCH_AGENT_RSS_S ? end - now : BENCH_AGENT_RSS_S);
        bench_agent_rss(p, w);
        if (!bench_agent_alive(p))
            return -1;
    }
    int rc = bench_agent_steps_fresh(p->port, b, &w->steps1, &w->t1);
    bench_agent_rss(p, w);
    return rc;
}

static double bench_agent_rate(const struct bench_agent_window *w) {
    return w->t1 > w->t0 ? (w->steps1 - w->steps0) / (w->t1 - w->t0) : 0;
}

static int bench_agent_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- the run ---- */

struct bench_agent_result {
    struct bench_agent_window win[3]; /* quiet, loaded, quiet after */
    uint64_t done, failed;
    double load_s, p50_ms, p99_ms;
    unsigned started;
    char why[128];
};

/* Everything the scrapers did, summed; their latencies merged for the percentiles. */
static void bench_agent_collect(struct bench_agent_scraper *s, unsigned n,
                                struct bench_agent_result *r) {
    size_t total = 0, k = 0;
    for (unsigned i = 0; i < n; i++)
        total += s[i].n_lat;
    double *all = malloc((total ? total : 1) * sizeof(*all));
    for (unsigned i = 0; i < n; i++) {
        r->done += s[i].done;
        r->failed += s[i].failed;
        if (!r->why[0] && s[i].why[0])
            snprintf(r->why, sizeof(r->why), "%s", s[i].why);
        if (all && s[i].n_lat)
            memcpy(all + k, s[i].lat_ms, s[i].n_lat * sizeof(*all));
        k += s[i].n_lat;
        free(s[i].lat_ms);
    }
    if (all && total) {
        qsort(all, total, sizeof(*all), bench_agent_cmp);
        r->p50_ms = all[(size_t)((double)(total - 1) * 0.50)];
        r->p99_ms = all[(size_t)((double)(total - 1) * 0.99)];
    }
    free(all);
}

/* The loaded window: the scrapers start after its first read and stop after its last. */
static int bench_agent_loaded(const struct bench_agent_opts *o, struct bench_agent_proc *p,
                              struct bench_agent_buf *b, struct bench_agent_result *r) {
    struct bench_agent_scraper *s = calloc(o->scrapers, sizeof(*s));
    struct bench_agent_load load = {.port = p->port, .interval_ms = o->interval_ms};
    atomic_init(&load.stop, false);
    if (!s || bench_agent_window_begin(p, b, &r->win[1]) != 0) {
        free(s);
        return -1;
    }
    double t0 = bench_agent_now();
    r->started = bench_agent_load_start(s, o->scrapers, &load);
    int rc = bench_agent_window_end(p, b, &r->win[1], o->seconds);
    bench_agent_load_stop(s, r->started, &load);
    r->load_s = bench_agent_now() - t0;
    bench_agent_collect(s, r->started, r);
    free(s);
    return rc;
}

static int bench_agent_measure(const struct bench_agent_opts *o, struct bench_agent_proc *p,
                               struct bench_agent_result *r) {
    struct bench_agent_buf b = {0};
    r->win[0].name = "quiet";
    r->win[1].name = "loaded";
    r->win[2].name = "quiet after";
    int rc = bench_agent_wait_port(p);
    if (rc == 0)
        rc = bench_agent_wait_steps(p, &b);
    if (rc == 0)
        printf("bench_agent: agent pid %d on port %u, training; windows %.0f / %.0f / %.0f s\n",
               (int)p->pid, p->port, o->quiet_s, o->seconds, o->quiet_s);
    fflush(stdout);
    if (rc == 0 && (rc = bench_agent_window_begin(p, &b, &r->win[0])) == 0)
        rc = bench_agent_window_end(p, &b, &r->win[0], o->quiet_s);
    if (rc == 0)
        rc = bench_agent_loaded(o, p, &b, r);
    if (rc == 0 && (rc = bench_agent_window_begin(p, &b, &r->win[2])) == 0)
        rc = bench_agent_window_end(p, &b, &r->win[2], o->quiet_s);
    free(b.p);
    return rc;
}

static void bench_agent_report(const struct bench_agent_opts *o, const struct bench_agent_result *r,
                               double hwm_kib) {
    printf("%-12s %8s %10s %12s %13s\n", "window", "seconds", "steps/s", "rss max MiB",
           "rss last MiB");
    for (int k = 0; k < 3; k++) {
        const struct bench_agent_window *w = &r->win[k];
        printf("%-12s %8.1f %10.1f %12.1f %13.1f\n", w->name, w->t1 - w->t0, bench_agent_rate(w),
               w->rss_max_kib / 1024, w->rss_last_kib / 1024);
    }
    printf("scrapes: %u scrapers every %u ms: %llu done, %llu failed%s%s%s, %.1f/s, latency "
           "p50 %.2f ms p99 %.2f ms\n",
           r->started, o->interval_ms, (unsigned long long)r->done, (unsigned long long)r->failed,
           r->why[0] ? " (first: " : "", r->why, r->why[0] ? ")" : "",
           r->load_s > 0 ? (double)r->done / r->load_s : 0, r->p50_ms, r->p99_ms);
    double q0 = bench_agent_rate(&r->win[0]), q2 = bench_agent_rate(&r->win[2]);
    double quiet = (q0 + q2) / 2, spread = q0 > q2 ? q0 - q2 : q2 - q0;
    double ratio = quiet > 0 ? bench_agent_rate(&r->win[1]) / quiet : 0;
    double before = r->win[0].rss_max_kib / 1024, loaded = r->win[1].rss_max_kib / 1024;
    double after = r->win[2].rss_max_kib / 1024;
    printf("training rate: loaded / mean(quiet, quiet after) = %.4f; the quiet windows differ "
           "by %.1f%% (a slowdown below that is noise)\n",
           ratio, quiet > 0 ? spread / quiet * 100 : 0);
    printf("rss: max %.1f MiB quiet, %.1f MiB loaded (%+.1f MiB under load), %.1f MiB after; "
           "VmHWM %.1f MiB\n",
           before, loaded, loaded - before, after, hwm_kib / 1024);
    printf("bench_agent: slowdown %.1f%% (goal <= %.0f%%), rss max %.1f MiB quiet / %.1f MiB "
           "loaded / %.1f MiB after\n",
           (1 - ratio) * 100, BENCH_AGENT_GOAL_PCT, before, loaded, after);
}

/* ---- options ---- */

static int bench_agent_usage(void) {
    fprintf(stderr, "usage: bench_agent RINGSIDE [--scrapers N] [--seconds S] [--interval-ms MS] "
                    "[--quiet-seconds Q] [-- extra agent args]\n");
    return 2;
}

static bool bench_agent_num(const char *s, double lo, double hi, double *v) {
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return errno == 0 && end != s && *end == '\0' && *v >= lo && *v <= hi;
}

static int bench_agent_args(int argc, char **argv, struct bench_agent_opts *o) {
    *o = (struct bench_agent_opts){
        .scrapers = 200, .interval_ms = 100, .seconds = 30, .quiet_s = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        double v;
        bool has = i + 1 < argc;
        if (strcmp(a, "--") == 0) {
            if (argc - i - 1 > BENCH_AGENT_MAX_EXTRA)
                return bench_agent_usage();
            for (i++; i < argc; i++)
                o->extra[o->n_extra++] = argv[i];
        } else if (strcmp(a, "--scrapers") == 0 && has && bench_agent_num(argv[++i], 1, 4096, &v))
            o->scrapers = (unsigned)v;
        else if (strcmp(a, "--seconds") == 0 && has && bench_agent_num(argv[++i], 1, 86400, &v))
            o->seconds = v;
        else if (strcmp(a, "--interval-ms") == 0 && has && bench_agent_num(argv[++i], 0, 60000, &v))
            o->interval_ms = (unsigned)v;
        else if (strcmp(a, "--quiet-seconds") == 0 && has &&
                 bench_agent_num(argv[++i], 1, 86400, &v))
            o->quiet_s = v;
        else if (a[0] != '-' && !o->ringside)
            o->ringside = a;
        else
            return bench_agent_usage();
    }
    if (!o->ringside)
        return bench_agent_usage();
    if (o->quiet_s < 0)
        o->quiet_s = o->seconds;
    return 0;
}

static int bench_agent_tmpdir(struct bench_agent_proc *p) {
    const char *base = getenv("TMPDIR");
    snprintf(p->dir, sizeof(p->dir), "%s/bench_agent.XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(p->dir)) {
        fprintf(stderr, "bench_agent: mkdtemp %s: %s\n", p->dir, strerror(errno));
        return -1;
    }
    snprintf(p->log, sizeof(p->log), "%s/agent.log", p->dir);
    snprintf(p->out, sizeof(p->out), "%s/out", p->dir);
    return mkdir(p->out, 0700) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    struct bench_agent_opts o;
    if (bench_agent_args(argc, argv, &o) != 0)
        return 2;
    struct bench_agent_proc p = {0};
    struct bench_agent_result r = {0};
    if (bench_agent_tmpdir(&p) != 0)
        return 1;
    int rc = bench_agent_spawn(&o, &p);
    double hwm = -1, stop_s = 0;
    if (rc == 0) {
        rc = bench_agent_measure(&o, &p, &r);
        hwm = bench_agent_vm(p.pid, "VmHWM:");
        stop_s = bench_agent_stop(&p);
    }
    if (rc == 0) {
        char st[96];
        bench_agent_describe(p.status, st, sizeof(st));
        bench_agent_report(&o, &r, hwm);
        printf("agent: SIGTERM -> %s in %.1f s\n", st, stop_s);
    } else if (p.pid > 0) {
        fprintf(stderr, "bench_agent: could not run the benchmark\n");
        bench_agent_log_tail(&p);
    }
    nftw(p.dir, bench_agent_rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return rc == 0 ? 0 : 1;
}
