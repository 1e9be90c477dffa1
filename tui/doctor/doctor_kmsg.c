/* ringside doctor: kernel-log health. The backlog of root/dev/kmsg (a character device on a
 * machine, a text file of saved records or dmesg lines in a fixture) goes through the kernel-log
 * classifier; one row per driver-error category seen. */
#include "backend/core/ev.h"
#include "backend/kmsg/kmsg_classify.h"
#include "backend/kmsg/kmsg_lines.h"
#include "backend/kmsg/kmsg_parse.h"
#include "backend/kmsg/remedies.h"
#include "tui/doctor/doctor.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DOCTOR_KMSG_RECORD_MAX 8192 /* a /dev/kmsg record is at most ~1 KiB */

static const char doctor_kmsg_group[] = "kernel log";

struct doctor_kmsg_cat {
    unsigned count;
    int severity; /* worst enum ev_severity seen */
    struct kmsg_event last;
};

struct doctor_kmsg {
    struct kmsg_classifier cls;
    struct doctor_kmsg_cat cat[KMSG_CAT_COUNT];
    unsigned long records;
    unsigned long lineno;
    struct doctor_kmsg_events *keep; /* or NULL */
};

static void doctor_kmsg_event(struct doctor_kmsg *k, const struct kmsg_event *e) {
    if (e->category == KMSG_CAT_NONE || e->category >= KMSG_CAT_COUNT)
        return;
    struct doctor_kmsg_cat *c = &k->cat[e->category];
    if (c->count == 0 || e->severity > c->severity)
        c->severity = e->severity;
    c->count++;
    c->last = *e;
    struct doctor_kmsg_events *kp = k->keep;
    if (!kp)
        return;
    if (kp->n == DOCTOR_KMSG_KEEP) { /* drop the oldest */
        memmove(kp->ev, kp->ev + 1, (DOCTOR_KMSG_KEEP - 1) * sizeof(kp->ev[0]));
        kp->n--;
    }
    kp->ev[kp->n++] = *e;
    kp->total++;
}

static void doctor_kmsg_feed(struct doctor_kmsg *k, const struct kmsg_line *l) {
    struct kmsg_event ev[2];
    int got = kmsg_classifier_feed(&k->cls, l, (uint32_t)++k->lineno, ev);
    for (int i = 0; i < got; i++)
        doctor_kmsg_event(k, &ev[i]);
}

/* A text line: a saved /dev/kmsg record, or any form dmesg and journalctl print. */
static void doctor_kmsg_line(void *ctx, const char *s, size_t n) {
    struct doctor_kmsg *k = ctx;
    struct kmsg_line l;
    if (n > 1 && s[0] == ' ' && memchr(s, '=', n) && !memchr(s, ';', n))
        return; /* a " KEY=VALUE" dictionary line of the record before */
    if (kmsg_parse_record(s, n, &l) != 0)
        kmsg_parse_text(s, n, &l);
    k->records++;
    doctor_kmsg_feed(k, &l);
}

/* The device's backlog, one record per read, until nothing is left. 0 or -errno. */
static int doctor_kmsg_read_device(struct doctor_kmsg *k, int fd) {
    static _Thread_local char buf[DOCTOR_KMSG_RECORD_MAX];
    lseek(fd, 0, SEEK_SET);
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n > 0) {
            struct kmsg_line l;
            if (kmsg_parse_record(buf, (size_t)n, &l) != 0)
                kmsg_parse_text(buf, (size_t)n, &l);
            k->records++;
            doctor_kmsg_feed(k, &l);
            continue;
        }
        if (n < 0 && (errno == EPIPE || errno == EINTR))
            continue; /* EPIPE: records overwritten under us; the next read goes on */
        if (n == 0 || errno == EAGAIN)
            return 0;
        return -errno;
    }
}

static int doctor_kmsg_read_file(struct doctor_kmsg *k, int fd) {
    struct kmsg_lines *lines = malloc(sizeof(*lines));
    ssize_t r;
    if (!lines)
        return -ENOMEM;
    kmsg_lines_init(lines);
    while ((r = kmsg_lines_read(lines, fd, doctor_kmsg_line, k)) != 0)
        if (r < 0 && r != -EINTR) {
            free(lines);
            return (int)r;
        }
    kmsg_lines_finish(lines, doctor_kmsg_line, k);
    free(lines);
    return 0;
}

/* Seconds since boot from root/proc/uptime, or a negative value. */
static double doctor_kmsg_uptime(const struct doctor_env *e) {
    char path[4096];
    double up = -1;
    snprintf(path, sizeof(path), "%s/proc/uptime", e->root);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    if (fscanf(f, "%lf", &up) != 1)
        up = -1;
    fclose(f);
    return up;
}

static void doctor_kmsg_age(double s, char *out, size_t cap) {
    if (s < 120)
        snprintf(out, cap, "%.0f s", s);
    else if (s < 2 * 3600)
        snprintf(out, cap, "%.0f min", s / 60);
    else if (s < 2 * 86400)
        snprintf(out, cap, "%.0f h", s / 3600);
    else
        snprintf(out, cap, "%.0f d", s / 86400);
}

static void doctor_kmsg_unreadable(struct doctor_report *r, const char *why) {
    doctor_remedy(doctor_add(r, doctor_kmsg_group, "driver errors", DOCTOR_SKIP,
                             "/dev/kmsg not read: %.200s", why),
                  "run as root (sudo ringside doctor), or sudo setcap cap_syslog+ep "
                  "$(which ringside), or sudo sysctl kernel.dmesg_restrict=0");
}

static void doctor_kmsg_rows(struct doctor_kmsg *k, const struct doctor_env *e,
                             struct doctor_report *r) {
    struct remedies *rules = NULL;
    char err[256], age[32], ago[48];
    double up = doctor_kmsg_uptime(e);
    bool any = false;
    if (remedies_load(&rules, NULL, err, sizeof(err)) != 0)
        rules = NULL;
    for (int c = 1; c < KMSG_CAT_COUNT; c++) {
        const struct doctor_kmsg_cat *cat = &k->cat[c];
        if (cat->count == 0)
            continue;
        any = true;
        ago[0] = '\0';
        if ((cat->last.has & KMSG_HAS(TS)) && up >= 0 && up * 1e9 >= (double)cat->last.ts_ns) {
            doctor_kmsg_age(up - (double)cat->last.ts_ns / 1e9, age, sizeof(age));
            snprintf(ago, sizeof(ago), " %s ago", age);
        }
        struct doctor_row *row =
            doctor_add(r, doctor_kmsg_group, kmsg_category_name((unsigned)c),
                       cat->severity >= SEV_ERROR ? DOCTOR_FAIL : DOCTOR_WARN,
                       "%u since boot; last%s: %.180s", cat->count, ago, cat->last.message);
        const struct remedy *rem = rules ? remedies_find(rules, &cat->last) : NULL;
        if (rem && rem->n_actions > 0)
            doctor_remedy(row, "%.90s: %.300s (more: sudo dmesg | ringside kmsg classify)",
                          rem->title, rem->actions[0]);
        else if (rem)
            doctor_remedy(row, "%.90s (more: sudo dmesg | ringside kmsg classify)", rem->title);
        else
            doctor_remedy(row, "see sudo dmesg | ringside kmsg classify");
    }
    if (!any)
        doctor_add(r, doctor_kmsg_group, "driver errors", DOCTOR_OK,
                   "no driver errors in the kernel log (%lu records read)", k->records);
    remedies_free(rules);
}

void doctor_check_kmsg(const struct doctor_env *e, struct doctor_report *r) {
    doctor_check_kmsg_keep(e, r, NULL);
}

void doctor_check_kmsg_keep(const struct doctor_env *e, struct doctor_report *r,
                            struct doctor_kmsg_events *keep) {
    if (keep)
        memset(keep, 0, sizeof(*keep));
    char path[4096];
    struct stat st;
    snprintf(path, sizeof(path), "%s/dev/kmsg", e->root);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        doctor_kmsg_unreadable(r, strerror(errno));
        return;
    }
    struct doctor_kmsg *k = calloc(1, sizeof(*k));
    int rc = k ? 0 : -ENOMEM;
    if (k)
        k->keep = keep;
    if (rc == 0 && fstat(fd, &st) != 0)
        rc = -errno;
    if (rc == 0 && S_ISDIR(st.st_mode))
        rc = -EISDIR;
    if (rc == 0) {
        bool device = S_ISCHR(st.st_mode);
        kmsg_classifier_init(&k->cls, device ? KMSG_SRC_KMSG : KMSG_SRC_FILE, false);
        rc = device ? doctor_kmsg_read_device(k, fd) : doctor_kmsg_read_file(k, fd);
    }
    close(fd);
    if (rc == 0) {
        struct kmsg_event last;
        if (kmsg_classifier_flush(&k->cls, &last))
            doctor_kmsg_event(k, &last);
        doctor_kmsg_rows(k, e, r);
    } else {
        doctor_kmsg_unreadable(r, strerror(-rc));
    }
    free(k);
}
