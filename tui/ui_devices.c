/* Naming, comparing and placing the training devices of a run. */
#include "tui/ui_devices.h"

#include "tui/ui_model.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

int ui_devices_label(const struct run_info *run, const struct engine_snap *const *snaps, unsigned n,
                     char *buf, size_t len) {
    unsigned count = run->n_devices > n ? run->n_devices : n;
    count = count ? count : 1;
    if (count == 1)
        return snprintf(buf, len, "1 device: %s", ui_devices_name(run, snaps, n, 0));
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
        size_t off = (size_t)at < len ? (size_t)at : len;
        at += snprintf(buf + off, len - off, "%s %s", k ? "," : "", name);
        off = (size_t)at < len ? (size_t)at : len;
        if (same > 1)
            at += snprintf(buf + off, len - off, " x%u", same);
    }
    return at;
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

int ui_devices_sync_line(const struct engine_snap *s, unsigned dev, bool sel, char *buf, size_t n) {
    int at = snprintf(buf, n, "dev%u%s", dev, sel ? "*" : " ");
    uint64_t count = 0, p99 = 0;
    for (unsigned op = 0; op < SYNC_OP_COUNT; op++) {
        count += s->sync[op].count;
        p99 = s->sync[op].p99_ns > p99 ? s->sync[op].p99_ns : p99;
    }
    char a[16], b[16];
    if (count) {
        ui_fmt_ns(a, sizeof(a), p99);
        at = ui_devices_cat(buf, n, at, " sync x%llu p99 %s", (unsigned long long)count, a);
    }
    const struct engine_coll_summary *c = &s->coll[EV_COLL_ALLREDUCE];
    if (c->calls) {
        ui_fmt_ns(a, sizeof(a), c->p50_ns);
        ui_fmt_ns(b, sizeof(b), c->p99_ns);
        at = ui_devices_cat(buf, n, at, "  allreduce x%llu p50 %s p99 %s",
                            (unsigned long long)c->calls, a, b);
        if (c->errors)
            at = ui_devices_cat(buf, n, at, " (%llu failed)", (unsigned long long)c->errors);
    }
    if (s->step_ms > 0)
        at = ui_devices_cat(buf, n, at, "  step %.1fms", s->step_ms);
    return at;
}

int ui_devices_skew_line(const struct ui_skew *sk, const struct run_info *run, char *buf,
                         size_t n) {
    return snprintf(buf, n, "step skew %.2fms: dev%u slowest (%.2fms vs %.2fms on dev%u)",
                    sk->skew_ms, ui_dev_index(run, sk->slow), sk->slow_ms, sk->fast_ms,
                    ui_dev_index(run, sk->fast));
}
