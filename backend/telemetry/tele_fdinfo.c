/* The "fdinfo" telemetry provider: the processes using each amdgpu GPU, their VRAM, GTT and
 * engine busy %, from ROOT/PID/fdinfo/FD. Finding the DRM descriptors means visiting every
 * descriptor of every process, so that index is rebuilt by a background thread every 2 s and
 * each sample re-reads only the fdinfo files it lists. */
#include "backend/core/mono.h"
#include "backend/core/worker.h"
#include "backend/telemetry/tele_fdinfo_internal.h"
#include "backend/telemetry/tele_prov.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TELE_FDINFO_REBUILD_NS 2000000000ull
#define TELE_FDINFO_TEXT_BYTES 8192 /* an amdgpu fdinfo is 1-2 KiB, engines last */

/* A descriptor known to be an amdgpu DRM file. */
struct tele_fdinfo_pair {
    int32_t pid, fd;
};

struct tele_fdinfo_index {
    struct tele_fdinfo_pair *v;
    size_t n, cap;
};

struct tele_fdinfo {
    char proc[TELE_PATH_MAX]; /* set at open, read-only after: shared with the thread */
    int32_t self_pid;
    struct worker w; /* its mutex guards index and gen */
    struct tele_fdinfo_index index;
    uint64_t gen; /* bumped at each rebuild */
    /* the sampling thread's own */
    struct tele_fdinfo_index work;
    struct tele_fdinfo_client *clients;
    size_t cap_clients;
    struct tele_fdinfo_hist hist;
};

static bool tele_fdinfo_number(const char *name, int32_t *out) {
    size_t len = strlen(name);
    if (len == 0 || len > 9 || strspn(name, "0123456789") != len)
        return false;
    *out = (int32_t)atoi(name);
    return true;
}

static int tele_fdinfo_push(struct tele_fdinfo_index *x, int32_t pid, int32_t fd) {
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 64;
        struct tele_fdinfo_pair *v = realloc(x->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        x->v = v;
        x->cap = cap;
    }
    x->v[x->n++] = (struct tele_fdinfo_pair){pid, fd};
    return 0;
}

/* ROOT/pid/fdinfo/fd parsed into c. 0, -errno when unreadable, or the parser's verdict. */
static int tele_fdinfo_read(const char *proc, int32_t pid, int32_t fd,
                            struct tele_fdinfo_client *c) {
    char rel[48], path[TELE_PATH_MAX], text[TELE_FDINFO_TEXT_BYTES];
    snprintf(rel, sizeof(rel), "%d/fdinfo/%d", (int)pid, (int)fd);
    if (tele_path(path, sizeof(path), proc, rel) < 0)
        return -ENAMETOOLONG;
    ssize_t n = tele_read_text(path, text, sizeof(text));
    return n < 0 ? (int)n : tele_fdinfo_parse(text, c);
}

/* A DRM client is a descriptor on a /dev/dri node: the link says so without reading the fdinfo.
 * When the link cannot be read the fdinfo decides. */
static bool tele_fdinfo_is_amdgpu(const char *proc, int32_t pid, int32_t fd) {
    char rel[48], path[TELE_PATH_MAX], target[64];
    struct tele_fdinfo_client c;
    snprintf(rel, sizeof(rel), "%d/fd/%d", (int)pid, (int)fd);
    if (tele_path(path, sizeof(path), proc, rel) == 0) {
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        if (n >= 0 && (target[n] = '\0', strncmp(target, "/dev/dri/", 9) != 0))
            return false;
    }
    return tele_fdinfo_read(proc, pid, fd, &c) == 0;
}

static int tele_fdinfo_scan_pid(const char *proc, int32_t pid, struct tele_fdinfo_index *x) {
    char rel[32], dir[TELE_PATH_MAX];
    snprintf(rel, sizeof(rel), "%d/fdinfo", (int)pid);
    if (tele_path(dir, sizeof(dir), proc, rel) < 0)
        return 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0; /* exited, a kernel thread, or another user's process */
    int rc = 0;
    int32_t fd;
    for (struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;)
        if (tele_fdinfo_number(e->d_name, &fd) && tele_fdinfo_is_amdgpu(proc, pid, fd))
            rc = tele_fdinfo_push(x, pid, fd);
    closedir(d);
    return rc;
}

/* Every amdgpu DRM descriptor under proc into x (emptied first). 0 or -errno. */
static int tele_fdinfo_scan(const char *proc, struct tele_fdinfo_index *x) {
    x->n = 0;
    DIR *d = opendir(proc);
    if (!d)
        return -errno;
    int rc = 0;
    int32_t pid;
    for (struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;)
        if (tele_fdinfo_number(e->d_name, &pid))
            rc = tele_fdinfo_scan_pid(proc, pid, x);
    closedir(d);
    return rc;
}

/* ---- the index thread ---- */

/* Wait out the period (or a stop), rebuild outside the lock, swap under it. */
static void *tele_fdinfo_thread(void *arg) {
    struct tele_fdinfo *s = arg;
    struct tele_fdinfo_index fresh = {0};
    while (!worker_nap(&s->w, TELE_FDINFO_REBUILD_NS)) {
        if (tele_fdinfo_scan(s->proc, &fresh) != 0)
            continue;
        pthread_mutex_lock(&s->w.mu);
        struct tele_fdinfo_index old = s->index;
        s->index = fresh;
        fresh = old;
        s->gen++;
        pthread_mutex_unlock(&s->w.mu);
    }
    free(fresh.v);
    return NULL;
}

/* Stops the thread first, so nothing below is in use. */
static void tele_fdinfo_free(struct tele_fdinfo *s) {
    worker_fini(&s->w);
    free(s->index.v);
    free(s->work.v);
    free(s->clients);
    tele_fdinfo_hist_fini(&s->hist);
    free(s);
}

/* The first index is built here, so the first sample already lists the processes; none found is
 * fine (a training job may start later, and the thread will find it). */
static int tele_fdinfo_open(const struct tele_ctx *ctx, void **state, char *reason,
                            size_t reasonlen) {
    struct tele_fdinfo *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(reason, reasonlen, "out of memory");
        return -ENOMEM;
    }
    snprintf(s->proc, sizeof(s->proc), "%s", ctx->roots->proc);
    s->self_pid = (int32_t)ctx->self_pid;
    worker_init(&s->w);
    int rc = tele_fdinfo_scan(s->proc, &s->index);
    if (rc < 0)
        tele_reason_errno(reason, reasonlen, rc, s->proc);
    else if ((rc = worker_start(&s->w, tele_fdinfo_thread, s)) < 0)
        snprintf(reason, reasonlen, "cannot start the fdinfo index thread: %s", strerror(-rc));
    if (rc < 0) {
        tele_fdinfo_free(s);
        return rc;
    }
    *state = s;
    return 0;
}

/* ---- sampling ---- */

/* A private copy of the index, and the generation it came from. */
static int tele_fdinfo_take(struct tele_fdinfo *s, uint64_t *gen) {
    pthread_mutex_lock(&s->w.mu);
    int rc = 0;
    s->work.n = 0;
    for (size_t i = 0; i < s->index.n && rc == 0; i++)
        rc = tele_fdinfo_push(&s->work, s->index.v[i].pid, s->index.v[i].fd);
    *gen = s->gen;
    pthread_mutex_unlock(&s->w.mu);
    return rc;
}

/* Drop from the shared index what this sample found gone, unless a rebuild replaced it. */
static void tele_fdinfo_prune(struct tele_fdinfo *s, uint64_t gen) {
    pthread_mutex_lock(&s->w.mu);
    if (s->gen == gen && s->work.n <= s->index.cap) {
        memcpy(s->index.v, s->work.v, s->work.n * sizeof(s->work.v[0]));
        s->index.n = s->work.n;
    }
    pthread_mutex_unlock(&s->w.mu);
}

static void tele_fdinfo_comm(const char *proc, int32_t pid, char comm[16]) {
    char rel[32], path[TELE_PATH_MAX];
    snprintf(rel, sizeof(rel), "%d/comm", (int)pid);
    if (tele_path(path, sizeof(path), proc, rel) < 0 || tele_read_line(path, comm, 16) < 0)
        comm[0] = '\0';
}

/* Read every indexed descriptor into s->clients; the ones that vanished (or became another
 * file) leave s->work. Returns the number of clients. */
static size_t tele_fdinfo_read_all(struct tele_fdinfo *s) {
    size_t n = 0, kept = 0;
    char comm[16] = "";
    int32_t comm_pid = -1;
    for (size_t i = 0; i < s->work.n; i++) {
        struct tele_fdinfo_pair pr = s->work.v[i];
        struct tele_fdinfo_client *c = &s->clients[n];
        if (tele_fdinfo_read(s->proc, pr.pid, pr.fd, c) != 0)
            continue;
        if (pr.pid != comm_pid) {
            tele_fdinfo_comm(s->proc, pr.pid, comm);
            comm_pid = pr.pid;
        }
        c->pid = pr.pid;
        c->fd = pr.fd;
        memcpy(c->comm, comm, sizeof(c->comm));
        s->work.v[kept++] = pr;
        n++;
    }
    s->work.n = kept;
    return n;
}

static int tele_fdinfo_sample(void *state, struct tele_gpu *out, size_t cap, size_t *n,
                              char *reason, size_t reasonlen) {
    struct tele_fdinfo *s = state;
    uint64_t gen;
    *n = 0;
    if (tele_fdinfo_take(s, &gen) < 0) {
        snprintf(reason, reasonlen, "out of memory");
        return -ENOMEM;
    }
    if (s->work.n > s->cap_clients) {
        struct tele_fdinfo_client *c = realloc(s->clients, s->work.n * sizeof(*c));
        if (!c) {
            snprintf(reason, reasonlen, "out of memory");
            return -ENOMEM;
        }
        s->clients = c;
        s->cap_clients = s->work.n;
    }
    size_t before = s->work.n, got = tele_fdinfo_read_all(s);
    if (s->work.n < before)
        tele_fdinfo_prune(s, gen);
    int rc =
        tele_fdinfo_aggregate(&s->hist, s->clients, got, mono_now_ns(), s->self_pid, out, cap, n);
    if (rc < 0)
        snprintf(reason, reasonlen, "out of memory");
    return rc;
}

static void tele_fdinfo_close(void *state) {
    tele_fdinfo_free(state);
}

const struct tele_prov_ops tele_prov_fdinfo_ops = {
    .name = "fdinfo",
    .caps = TELE_CAP(PROCESSES),
    .open = tele_fdinfo_open,
    .sample = tele_fdinfo_sample,
    .close = tele_fdinfo_close,
};
