/* Kernel-log events in the dashboard's model: list entries with their fields, and the
 * timeline's failure markers. */
#include "backend/kmsg/kmsg.h"
#include "backend/kmsg/remedies.h"
#include "tui/view/ui_model.h"
#include "tui/view/ui_model_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The list label of a failure: its category's, with the number of an Xid. */
static void ui_kmsg_label(const struct kmsg_event *k, char *buf, size_t n) {
    if (k->category == KMSG_CAT_XID && (k->has & KMSG_HAS(XID)))
        snprintf(buf, n, "Xid %u", (unsigned)k->xid);
    else
        snprintf(buf, n, "%s", kmsg_category_label(k->category));
}

/* Skip a "0000:03:00.0: " style address. */
static const char *ui_kmsg_skip_pci(const char *s) {
    const char *p = s;
    while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || *p == ':' || *p == '.')
        p++;
    return p - s >= 11 && p[-1] == ':' && p[0] == ' ' ? p + 1 : s;
}

const char *ui_kmsg_short(const char *m) {
    static const char *const prefixes[] = {"amdgpu ", "kfd kfd: ", "amdgpu: ", "NVRM: ", "[drm] "};
    for (int round = 0; round < 4; round++) {
        const char *was = m;
        for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
            if (strncmp(m, prefixes[i], strlen(prefixes[i])) == 0)
                m = ui_kmsg_skip_pci(m + strlen(prefixes[i]));
        if (strncmp(m, "[drm:", 5) == 0 && strstr(m, "]] ")) /* [drm:fn [amdgpu]] */
            m = strstr(m, "]] ") + 3;
        if (strncmp(m, "*ERROR* ", 8) == 0)
            m += 8;
        while (*m == ' ')
            m++;
        if (m == was)
            break;
    }
    return *m ? m : "(empty)";
}

static int ui_kmsg_put(char *buf, size_t n, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int ui_kmsg_put(char *buf, size_t n, size_t *len, const char *fmt, ...) {
    if (*len >= n)
        return 0;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *len, n - *len, fmt, ap);
    va_end(ap);
    if (k > 0)
        *len = *len + (size_t)k < n ? *len + (size_t)k : n - 1;
    return k;
}

/* The detail view's fields, one per line. */
static void ui_kmsg_detail(const struct kmsg_event *k, char *d, size_t n) {
    static const char *const sources[] = {"/dev/kmsg", "--kmsg-file", "the session log (stderr)"};
    size_t len = 0;
    d[0] = '\0';
    ui_kmsg_put(d, n, &len, "category: %s (%s)   from: %s%s%s\n", kmsg_category_name(k->category),
                ev_severity_name(k->severity), k->vendor ? kmsg_vendor_name(k->vendor) : "",
                k->vendor ? ", " : "", sources[k->source < 3 ? k->source : 0]);
    if (k->has & KMSG_HAS(PCI))
        ui_kmsg_put(d, n, &len, "device: %s\n", k->pci);
    if (k->has & KMSG_HAS(XID)) {
        const char *m = kmsg_xid_meaning(k->xid);
        ui_kmsg_put(d, n, &len, "Xid %u: %s\n", (unsigned)k->xid, m ? m : "(not in the catalogue)");
    }
    if (k->has & KMSG_HAS(RING))
        ui_kmsg_put(d, n, &len, "ring: %s\n", k->ring);
    if (k->has & KMSG_HAS(SEQ))
        ui_kmsg_put(d, n, &len,
                    "fences: signaled %" PRIu64 ", emitted %" PRIu64 " (%" PRIu64 " behind)\n",
                    k->seq_signaled, k->seq_emitted,
                    k->seq_emitted > k->seq_signaled ? k->seq_emitted - k->seq_signaled : 0);
    if (k->has & (KMSG_HAS(PROCESS) | KMSG_HAS(PID)))
        ui_kmsg_put(d, n, &len, "process: %s pid %d", k->has & KMSG_HAS(PROCESS) ? k->process : "?",
                    k->has & KMSG_HAS(PID) ? (int)k->pid : 0);
    if (k->has & (KMSG_HAS(THREAD) | KMSG_HAS(TID)))
        ui_kmsg_put(d, n, &len, "  thread: %s tid %d", k->has & KMSG_HAS(THREAD) ? k->thread : "?",
                    k->has & KMSG_HAS(TID) ? (int)k->tid : 0);
    if (k->has & (KMSG_HAS(PROCESS) | KMSG_HAS(PID) | KMSG_HAS(THREAD) | KMSG_HAS(TID)))
        ui_kmsg_put(d, n, &len, "\n");
    if (k->has & KMSG_HAS(ADDR))
        ui_kmsg_put(d, n, &len, "fault address: 0x%" PRIx64 "\n", k->addr);
    if (k->has & KMSG_HAS(PASID))
        ui_kmsg_put(d, n, &len, "pasid %u  ", (unsigned)k->pasid);
    if (k->has & KMSG_HAS(VMID))
        ui_kmsg_put(d, n, &len, "vmid %u  ", (unsigned)k->vmid);
    if (k->has & KMSG_HAS(CLIENT))
        ui_kmsg_put(d, n, &len, "client %s  ", k->client);
    if (k->has & KMSG_HAS(NODE))
        ui_kmsg_put(d, n, &len, "GPU node %u  ", (unsigned)k->node);
    if (k->has & (KMSG_HAS(PASID) | KMSG_HAS(VMID) | KMSG_HAS(CLIENT) | KMSG_HAS(NODE)))
        ui_kmsg_put(d, n, &len, "\n");
    if (k->has & KMSG_HAS(TS))
        ui_kmsg_put(d, n, &len, "kernel time: %" PRIu64 ".%06" PRIu64 " s", k->ts_ns / 1000000000u,
                    k->ts_ns % 1000000000u / 1000u);
    if (k->lines > 1)
        ui_kmsg_put(d, n, &len, "%s%u lines", k->has & KMSG_HAS(TS) ? "   " : "",
                    (unsigned)k->lines);
    ui_kmsg_put(d, n, &len, "%s%s", (k->has & KMSG_HAS(TS)) || k->lines > 1 ? "\n" : "",
                k->message);
}

static void ui_kmsg_mark(struct ui_model *m, uint64_t t_ns, const struct kmsg_event *k) {
    struct ui_mark *mk = &m->marks[m->mark_head];
    *mk = (struct ui_mark){.t_ns = t_ns, .category = k->category, .severity = k->severity};
    if (k->has & KMSG_HAS(PCI))
        snprintf(mk->pci, sizeof(mk->pci), "%s", k->pci);
    m->mark_head = (m->mark_head + 1) % UI_MARKS;
    if (m->mark_count < UI_MARKS)
        m->mark_count++;
}

void ui_model_kmsg(struct ui_model *m, const struct ev *e) {
    const struct kmsg_event *k = &e->u.kmsg;
    if (m->kmsg_seen > 0 && e->seq > m->kmsg_last_seq + 1)
        m->kmsg_gaps += e->seq - m->kmsg_last_seq - 1;
    m->kmsg_last_seq = e->seq;
    m->kmsg_seen++;
    struct ui_event u;
    memset(&u, 0, sizeof(u));
    u.t_ns = e->t_ns;
    u.dev = EV_DEV_NONE;
    u.severity = k->severity;
    u.kcat = k->category;
    u.remedy = remedies_find(m->remedies, k); /* once, with every field the rules may match */
    u.category = k->category != KMSG_CAT_NONE ? UI_CAT_KERNEL : UI_CAT_INFO;
    u.chatter = k->category == KMSG_CAT_NONE;
    char label[24];
    ui_kmsg_label(k, label, sizeof(label));
    snprintf(u.text, sizeof(u.text), "%s: %s", label, ui_kmsg_short(k->message));
    ui_kmsg_detail(k, u.detail, sizeof(u.detail));
    if (k->category != KMSG_CAT_NONE)
        ui_kmsg_mark(m, e->t_ns, k);
    ui_model_list_add(m, &u);
}

size_t ui_model_marks(const struct ui_model *m, uint64_t t0, uint64_t t1, int cols,
                      struct ui_mark *out) {
    cols = cols > UI_PAINT_MAX_COLS ? UI_PAINT_MAX_COLS : cols;
    for (int x = 0; x < cols; x++)
        out[x] = (struct ui_mark){.category = KMSG_CAT_NONE};
    if (cols <= 0 || t1 <= t0)
        return 0;
    size_t n = 0;
    double cell = (double)(t1 - t0) / cols;
    for (size_t k = m->mark_count; k > 0; k--) { /* oldest first: later ones win ties */
        const struct ui_mark *mk = &m->marks[(m->mark_head + UI_MARKS - k) % UI_MARKS];
        if (mk->t_ns < t0 || mk->t_ns >= t1)
            continue;
        n++;
        int x = (int)((double)(mk->t_ns - t0) / cell);
        x = x >= cols ? cols - 1 : x;
        if (out[x].category == KMSG_CAT_NONE || mk->severity >= out[x].severity)
            out[x] = *mk;
    }
    return n;
}

bool ui_model_pci_mark(const struct ui_model *m, const char *pci, uint64_t since_ns,
                       struct ui_mark *out) {
    bool found = false;
    for (size_t k = m->mark_count; pci[0] && k > 0; k--) { /* oldest first: later ones win ties */
        const struct ui_mark *mk = &m->marks[(m->mark_head + UI_MARKS - k) % UI_MARKS];
        if (mk->t_ns < since_ns || strcmp(mk->pci, pci) != 0)
            continue;
        if (!found || mk->severity >= out->severity)
            *out = *mk;
        found = true;
    }
    return found;
}
