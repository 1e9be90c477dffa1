/* Naming, comparing and placing the training devices of a run. */
#include "tui/view/ui_devices.h"

#include "tui/view/ui_model.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define UI_DEVICES_NAME_BYTES 128 /* a device name, as long as any source gives one */

unsigned ui_dev_index(const struct run_info *run, unsigned k) {
    if (run && k < run->n_devices && k < RUN_MAX_DEVICES)
        return run->devices[k];
    return k;
}

/* snprintf at buf's end, as far as it goes; at is the length so far. */
static int ui_devices_cat(char *buf, size_t n, int at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int ui_devices_cat(char *buf, size_t n, int at, const char *fmt, ...) {
    size_t off = (size_t)at < n ? (size_t)at : n;
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(buf + off, n - off, fmt, ap);
    va_end(ap);
    return at + (len > 0 ? len : 0);
}

/* Watched job k's facts, or NULL for a device of ours. */
static const struct run_rank *ui_devices_rank(const struct run_info *run, unsigned k) {
    if (!run || k >= run->n_devices || k >= RUN_MAX_DEVICES || !run->ranks[k].valid)
        return NULL;
    return &run->ranks[k];
}

/* Whether another job shown has job k's name (and neither is a rank). */
static bool ui_devices_name_taken(const struct run_info *run, unsigned k) {
    const struct run_rank *a = ui_devices_rank(run, k);
    for (unsigned j = 0; a && j < run->n_devices && j < RUN_MAX_DEVICES; j++) {
        const struct run_rank *b = ui_devices_rank(run, j);
        if (j != k && b && b->rank < 0 && strcmp(a->name, b->name) == 0)
            return true;
    }
    return false;
}

int ui_devices_name(const struct run_info *run, unsigned k, bool world, char *buf, size_t len) {
    const struct run_rank *r = ui_devices_rank(run, k);
    if (!r)
        return snprintf(buf, len, "dev%u", ui_dev_index(run, k));
    if (r->rank >= 0 && world && r->world_size > 0)
        return snprintf(buf, len, "rank %d/%d", (int)r->rank, (int)r->world_size);
    if (r->rank >= 0)
        return snprintf(buf, len, "rank %d", (int)r->rank);
    if (r->pid > 0 && (ui_devices_name_taken(run, k) || !r->name[0]))
        return snprintf(buf, len, "%s%spid %d", r->name, r->name[0] ? " " : "", (int)r->pid);
    return snprintf(buf, len, "%s", r->name[0] ? r->name : "job");
}

int ui_devices_name_fit(const struct run_info *run, unsigned k, int width, char *buf, size_t len) {
    char nm[96];
    int l = ui_devices_name(run, k, true, nm, sizeof(nm));
    if (width > 0 && l > width)
        ui_devices_name(run, k, false, nm, sizeof(nm));
    return width > 0 ? ui_devices_fit(buf, len, nm, width) : snprintf(buf, len, "%s", nm);
}

/* The parts of ui_devices_who_more, by how long they stay: the first goes last. */
enum ui_devices_part {
    UI_DEVICES_HOST = 1u << 0,
    UI_DEVICES_PID = 1u << 1,
    UI_DEVICES_BACKEND = 1u << 2,
    UI_DEVICES_LOCAL = 1u << 3,
};

/* The parts of job r in mask, in reading order: local rank, host, pid, backend. */
static int ui_devices_more_parts(const struct run_info *run, const struct run_rank *r,
                                 unsigned mask, char *buf, size_t len) {
    int at = 0;
    if (len)
        buf[0] = '\0';
    if ((mask & UI_DEVICES_LOCAL) && r->local_rank >= 0)
        at = ui_devices_cat(buf, len, at, "  local %d", (int)r->local_rank);
    if ((mask & UI_DEVICES_HOST) && r->host[0] && strcmp(r->host, run->host) != 0)
        at = ui_devices_cat(buf, len, at, "  host %s", r->host);
    if ((mask & UI_DEVICES_PID) && r->pid > 0)
        at = ui_devices_cat(buf, len, at, "  pid %d", (int)r->pid);
    if ((mask & UI_DEVICES_BACKEND) && r->group_backend[0])
        at = ui_devices_cat(buf, len, at, "  %s", r->group_backend);
    return at;
}

int ui_devices_who_more(const struct run_info *run, unsigned k, int width, char *buf, size_t len) {
    const struct run_rank *r = ui_devices_rank(run, k);
    if (len)
        buf[0] = '\0';
    if (!r)
        return 0;
    /* all of them, then without the local rank, the backend, the pid, the host */
    for (unsigned mask = UI_DEVICES_LOCAL * 2 - 1; mask; mask >>= 1) {
        char tmp[160];
        int l = ui_devices_more_parts(run, r, mask, tmp, sizeof(tmp));
        if (width <= 0 || l <= width)
            return snprintf(buf, len, "%s", tmp);
    }
    return 0;
}

int ui_devices_who(const struct run_info *run, unsigned k, int width, char *buf, size_t len) {
    char nm[96], more[160];
    int l = ui_devices_name_fit(run, k, width, nm, sizeof(nm));
    if (width > 0 && width <= l)
        more[0] = '\0';
    else
        ui_devices_who_more(run, k, width > 0 ? width - l : 0, more, sizeof(more));
    return snprintf(buf, len, "%s%s", nm, more);
}

/* Rank k's device name: its snapshot's, else the run's. */
static const char *ui_devices_dev_name(const struct run_info *run,
                                       const struct engine_snap *const *snaps, unsigned n,
                                       unsigned k) {
    if (k < n && snaps && snaps[k] && snaps[k]->dev.name[0])
        return snaps[k]->dev.name;
    return run->dev_name;
}

/* "%s" of name, cut to at most cut columns with ".." marking the cut (cut 0: whole). */
static int ui_devices_name_cut(char *buf, size_t len, const char *name, int cut) {
    int l = (int)strlen(name);
    if (cut <= 0 || l <= cut)
        return snprintf(buf, len, "%s", name);
    return snprintf(buf, len, "%.*s..", cut - 2, name);
}

/* The label's count of count devices: "2 devices"; watched jobs "2 ranks (gloo)", "2 of 4
 * ranks (nccl)", "3 jobs", "3 jobs, 2 ranks" (the backend where every rank has the same). */
static int ui_devices_count(const struct run_info *run, unsigned count, char *buf, size_t len) {
    unsigned ranks = 0, jobs = 0;
    int32_t world = 0;
    const char *be = NULL;
    bool same = true;
    for (unsigned k = 0; k < count && k < RUN_MAX_DEVICES; k++) {
        const struct run_rank *r = ui_devices_rank(run, k);
        if (!r)
            continue;
        jobs++;
        if (r->rank < 0)
            continue;
        ranks++;
        world = r->world_size > world ? r->world_size : world;
        same = same && r->group_backend[0] && (!be || strcmp(be, r->group_backend) == 0);
        be = r->group_backend;
    }
    if (jobs < count) /* devices of ours */
        return snprintf(buf, len, "%u device%s", count, count == 1 ? "" : "s");
    char back[24] = "";
    if (ranks && same)
        snprintf(back, sizeof(back), " (%s)", be);
    if (ranks == jobs && world > (int32_t)ranks)
        return snprintf(buf, len, "%u of %d ranks%s", ranks, (int)world, back);
    if (ranks == jobs)
        return snprintf(buf, len, "%u rank%s%s", ranks, ranks == 1 ? "" : "s", back);
    if (ranks)
        return snprintf(buf, len, "%u jobs, %u rank%s%s", jobs, ranks, ranks == 1 ? "" : "s", back);
    return snprintf(buf, len, "%u job%s", jobs, jobs == 1 ? "" : "s");
}

/* The label with every name cut to cut columns (0: whole names). */
static int ui_devices_label_cut(const struct run_info *run, const struct engine_snap *const *snaps,
                                unsigned n, int cut, char *buf, size_t len) {
    unsigned count = run->n_devices > n ? run->n_devices : n;
    count = count ? count : 1;
    char nm[UI_DEVICES_NAME_BYTES], what[64];
    ui_devices_count(run, count, what, sizeof(what));
    if (count == 1) {
        ui_devices_name_cut(nm, sizeof(nm), ui_devices_dev_name(run, snaps, n, 0), cut);
        return snprintf(buf, len, "%s: %s", what, nm);
    }
    unsigned names = count < RUN_MAX_DEVICES ? count : RUN_MAX_DEVICES;
    bool done[RUN_MAX_DEVICES] = {false};
    int at = snprintf(buf, len, "%s:", what);
    for (unsigned k = 0; k < names; k++) {
        if (done[k])
            continue;
        const char *name = ui_devices_dev_name(run, snaps, n, k);
        unsigned same = 0;
        for (unsigned j = k; j < names; j++)
            if (!done[j] && strcmp(ui_devices_dev_name(run, snaps, n, j), name) == 0) {
                done[j] = true;
                same++;
            }
        ui_devices_name_cut(nm, sizeof(nm), name, cut);
        size_t off = (size_t)at < len ? (size_t)at : len;
        at += snprintf(buf + off, len - off, "%s %s", k ? "," : "", nm);
        off = (size_t)at < len ? (size_t)at : len;
        if (same > 1)
            at += snprintf(buf + off, len - off, " x%u", same);
    }
    return at;
}

int ui_devices_label(const struct run_info *run, const struct engine_snap *const *snaps, unsigned n,
                     char *buf, size_t len) {
    return ui_devices_label_cut(run, snaps, n, 0, buf, len);
}

int ui_devices_fit(char *buf, size_t len, const char *s, int width) {
    int l = (int)strlen(s);
    if (width <= 0 || len == 0) {
        if (len)
            buf[0] = '\0';
        return 0;
    }
    if (l <= width)
        return snprintf(buf, len, "%s", s);
    if (width < 3) /* too narrow for any text and a mark: the mark alone */
        return snprintf(buf, len, "%.*s", width, "..");
    return snprintf(buf, len, "%.*s..", width - 2, s);
}

int ui_devices_label_fit(const struct run_info *run, const struct engine_snap *const *snaps,
                         unsigned n, int width, char *buf, size_t len) {
    char tmp[1024];
    int l = ui_devices_label_cut(run, snaps, n, 0, tmp, sizeof(tmp));
    if (l <= width && (size_t)l < sizeof(tmp))
        return snprintf(buf, len, "%s", tmp);
    for (int cut = UI_DEVICES_NAME_BYTES; cut >= UI_DEVICES_NAME_MIN; cut--) { /* names shortened */
        l = ui_devices_label_cut(run, snaps, n, cut, tmp, sizeof(tmp));
        if (l <= width && (size_t)l < sizeof(tmp))
            return snprintf(buf, len, "%s", tmp);
    }
    unsigned count = run->n_devices > n ? run->n_devices : n;
    char what[64];
    ui_devices_count(run, count ? count : 1, what, sizeof(what));
    snprintf(tmp, sizeof(tmp), "%s: ..", what);
    return ui_devices_fit(buf, len, tmp, width);
}

int ui_devices_header(const struct run_info *run, const struct engine_snap *const *snaps,
                      unsigned n, const char *status, int width, char *buf, size_t len) {
    char lab[512], st[264], host[sizeof(run->host) + 4];
    int full = ui_devices_label(run, snaps, n, lab, sizeof(lab));
    int sl = status && status[0] ? (int)strlen(status) + 2 : 0;
    /* the host gives way first, down to a few columns, so the devices keep theirs */
    int fixed = 2 + 2 + (int)strlen(run->backend) + 2;
    int host_w = width - fixed - full - sl;
    host_w = host_w < UI_DEVICES_NAME_MIN ? UI_DEVICES_NAME_MIN : host_w;
    ui_devices_fit(host, sizeof(host), run->host, host_w);
    int left = width - fixed - (int)strlen(host); /* for the label and the status */
    if (sl && left - full >= sl) {
        snprintf(st, sizeof(st), "  %s", status);
    } else if (sl && left - full >= 2 + UI_DEVICES_NAME_MIN) {
        char cut[256];
        ui_devices_fit(cut, sizeof(cut), status, left - full - 2);
        snprintf(st, sizeof(st), "  %s", cut);
    } else if (sl) { /* no room: the status is marked as cut, the label shortened */
        snprintf(st, sizeof(st), "  ..");
    } else {
        st[0] = '\0';
    }
    ui_devices_label_fit(run, snaps, n, left - (int)strlen(st), lab, sizeof(lab));
    return snprintf(buf, len, "  %s  %s  %s%s", host, run->backend, lab, st);
}

bool ui_devices_skew(const struct engine_snap *const *snaps, unsigned n, struct ui_skew *out) {
    unsigned seen = 0;
    memset(out, 0, sizeof(*out));
    for (unsigned k = 0; k < n; k++) {
        if (!snaps[k] || !(snaps[k]->step_ms > 0))
            continue;
        double v = snaps[k]->step_ms;
        if (seen == 0 || v > out->slow_ms) {
            out->slow = k;
            out->slow_ms = v;
        }
        if (seen == 0 || v < out->fast_ms) {
            out->fast = k;
            out->fast_ms = v;
        }
        seen++;
    }
    out->skew_ms = out->slow_ms - out->fast_ms;
    return seen >= 2;
}

unsigned ui_devices_window(unsigned n, unsigned room, unsigned sel, unsigned *shown) {
    room = room ? room : 1;
    if (n <= room) {
        *shown = n;
        return 0;
    }
    *shown = room;
    sel = sel < n ? sel : n - 1;
    unsigned first = sel >= room ? sel - room + 1 : 0; /* sel is the last shown, or in view */
    return first + room > n ? n - room : first;
}

unsigned ui_devices_columns(int width, int min_w, unsigned n) {
    if (n == 0 || min_w <= 0)
        return 1;
    unsigned fit = width >= min_w ? (unsigned)((width + 1) / (min_w + 1)) : 1;
    fit = fit ? fit : 1;
    return fit < n ? fit : n;
}

void ui_devices_more(unsigned hidden, char *buf, size_t len) {
    if (hidden)
        snprintf(buf, len, "+%u more", hidden);
    else if (len)
        buf[0] = '\0';
}

/* Append part to the line of length at in buf when it fits whole within width (<= 0: any
 * width), else set *cut. Returns the new length. */
static int ui_devices_part(char *buf, size_t n, int at, int width, const char *part, bool *cut) {
    int l = (int)strlen(part);
    if (width > 0 && at + l > width) {
        *cut = true;
        return at;
    }
    return ui_devices_cat(buf, n, at, "%s", part);
}

int ui_devices_sync_line(const struct engine_snap *s, const struct run_info *run, unsigned k,
                         int name_w, bool sel, int width, char *buf, size_t n) {
    char nm[96];
    ui_devices_name(run, k, true, nm, sizeof(nm));
    int at = snprintf(buf, n, "%s%s%*s", nm, sel ? "*" : " ",
                      name_w > (int)strlen(nm) ? name_w - (int)strlen(nm) : 0, "");
    uint64_t count = 0, p99 = 0;
    for (unsigned op = 0; op < SYNC_OP_COUNT; op++) {
        count += s->sync[op].count;
        p99 = s->sync[op].p99_ns > p99 ? s->sync[op].p99_ns : p99;
    }
    char a[16], b[16], part[128];
    bool cut = false;
    if (s->step_ms > 0) {
        snprintf(part, sizeof(part), " step %.1fms", s->step_ms);
        at = ui_devices_part(buf, n, at, width, part, &cut);
    }
    if (count) {
        ui_fmt_ns(a, sizeof(a), p99);
        snprintf(part, sizeof(part), "  sync x%llu p99 %s", (unsigned long long)count, a);
        at = ui_devices_part(buf, n, at, width, part, &cut);
    }
    const struct comm_op_stats *c = &s->coll[EV_COLL_ALLREDUCE];
    if (c->calls) {
        ui_fmt_ns(a, sizeof(a), c->p50_ns);
        ui_fmt_ns(b, sizeof(b), c->p99_ns);
        int l = snprintf(part, sizeof(part), "  allreduce x%llu p50 %s p99 %s",
                         (unsigned long long)c->calls, a, b);
        if (c->errors && l > 0 && (size_t)l < sizeof(part))
            snprintf(part + l, sizeof(part) - (size_t)l, " (%llu failed)",
                     (unsigned long long)c->errors);
        at = ui_devices_part(buf, n, at, width, part, &cut);
    }
    char more[160];
    if (cut || (width > 0 && at >= width)) /* the figures first: who it is where they all fit */
        return at;
    ui_devices_who_more(run, k, width > 0 ? width - at : 0, more, sizeof(more));
    return ui_devices_cat(buf, n, at, "%s", more);
}

int ui_devices_skew_line(const struct ui_skew *sk, const struct run_info *run, char *buf,
                         size_t n) {
    char slow[96], fast[96];
    ui_devices_name(run, sk->slow, false, slow, sizeof(slow));
    ui_devices_name(run, sk->fast, false, fast, sizeof(fast));
    return snprintf(buf, n, "step skew %.2fms: %s slowest (%.2fms vs %.2fms on %s)", sk->skew_ms,
                    slow, sk->slow_ms, sk->fast_ms, fast);
}
