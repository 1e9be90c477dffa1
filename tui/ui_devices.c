/* Naming, comparing and placing the training devices of a run. */
#include "tui/ui_devices.h"

#include "tui/ui_model.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define UI_DEVICES_NAME_BYTES 128 /* a device name, as long as any source gives one */

unsigned ui_dev_index(const struct run_info *run, unsigned k) {
    if (run && k < run->n_devices && k < RUN_MAX_DEVICES)
        return run->devices[k];
    return k;
}

/* Rank k's device name: its snapshot's, else the run's. */
static const char *ui_devices_name(const struct run_info *run,
                                   const struct engine_snap *const *snaps, unsigned n, unsigned k) {
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

/* The label with every name cut to cut columns (0: whole names). */
static int ui_devices_label_cut(const struct run_info *run, const struct engine_snap *const *snaps,
                                unsigned n, int cut, char *buf, size_t len) {
    unsigned count = run->n_devices > n ? run->n_devices : n;
    count = count ? count : 1;
    char nm[UI_DEVICES_NAME_BYTES];
    if (count == 1) {
        ui_devices_name_cut(nm, sizeof(nm), ui_devices_name(run, snaps, n, 0), cut);
        return snprintf(buf, len, "1 device: %s", nm);
    }
    unsigned names = count < RUN_MAX_DEVICES ? count : RUN_MAX_DEVICES;
    bool done[RUN_MAX_DEVICES] = {false};
    int at = snprintf(buf, len, "%u devices:", count);
    for (unsigned k = 0; k < names; k++) {
        if (done[k])
            continue;
        const char *name = ui_devices_name(run, snaps, n, k);
        unsigned same = 0;
        for (unsigned j = k; j < names; j++)
            if (!done[j] && strcmp(ui_devices_name(run, snaps, n, j), name) == 0) {
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
    count = count ? count : 1;
    snprintf(tmp, sizeof(tmp), "%u device%s: ..", count, count == 1 ? "" : "s");
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

/* Append part to the line of length at in buf when it fits whole within width (<= 0: any
 * width). Returns the new length. */
static int ui_devices_part(char *buf, size_t n, int at, int width, const char *part) {
    int l = (int)strlen(part);
    if (width > 0 && at + l > width)
        return at;
    return ui_devices_cat(buf, n, at, "%s", part);
}

int ui_devices_sync_line(const struct engine_snap *s, unsigned dev, bool sel, int width, char *buf,
                         size_t n) {
    int at = snprintf(buf, n, "dev%u%s", dev, sel ? "*" : " ");
    uint64_t count = 0, p99 = 0;
    for (unsigned op = 0; op < SYNC_OP_COUNT; op++) {
        count += s->sync[op].count;
        p99 = s->sync[op].p99_ns > p99 ? s->sync[op].p99_ns : p99;
    }
    char a[16], b[16], part[128];
    if (s->step_ms > 0) {
        snprintf(part, sizeof(part), " step %.1fms", s->step_ms);
        at = ui_devices_part(buf, n, at, width, part);
    }
    if (count) {
        ui_fmt_ns(a, sizeof(a), p99);
        snprintf(part, sizeof(part), "  sync x%llu p99 %s", (unsigned long long)count, a);
        at = ui_devices_part(buf, n, at, width, part);
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
        at = ui_devices_part(buf, n, at, width, part);
    }
    return at;
}

int ui_devices_skew_line(const struct ui_skew *sk, const struct run_info *run, char *buf,
                         size_t n) {
    return snprintf(buf, n, "step skew %.2fms: dev%u slowest (%.2fms vs %.2fms on dev%u)",
                    sk->skew_ms, ui_dev_index(run, sk->slow), sk->slow_ms, sk->fast_ms,
                    ui_dev_index(run, sk->fast));
}
