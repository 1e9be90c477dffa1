/* JSON members for a classified event. */
#include "backend/kmsg/kmsg_json.h"

#include "backend/core/ev.h"
#include "backend/core/json_out.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool kmsg_json_string(char *buf, size_t cap, size_t *len, const char *s) {
    size_t o = *len;
    if (o + 2 >= cap)
        return false;
    size_t n = json_out_escape(buf + o + 1, cap - o - 1, s);
    if (o + n + 3 > cap) { /* the quotes and the NUL */
        buf[o] = '\0';
        return false;
    }
    buf[o] = '"';
    buf[o + n + 1] = '"';
    buf[o + n + 2] = '\0';
    *len = o + n + 2;
    return true;
}

/* Lengths at or above this mark a buffer that is full: once a member did not fit, no later
 * (shorter) one is added, so a cut output is a prefix of the whole that ends at a member. */
#define KMSG_JSON_FULL ((size_t)1 << (sizeof(size_t) * 8 - 1))

/* Append one member; false (and nothing appended) when it does not fit. */
static bool kmsg_json_add(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool kmsg_json_add(char *buf, size_t cap, size_t *len, const char *fmt, ...) {
    if (*len & KMSG_JSON_FULL)
        return false;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap - *len) {
        buf[*len] = '\0';
        *len |= KMSG_JSON_FULL;
        return false;
    }
    *len += (size_t)n;
    return true;
}

static void kmsg_json_str_member(char *buf, size_t cap, size_t *len, const char *key,
                                 const char *val) {
    size_t was = *len;
    if (!kmsg_json_add(buf, cap, len, ",\"%s\":", key) || !kmsg_json_string(buf, cap, len, val)) {
        *len = (was & ~KMSG_JSON_FULL) | KMSG_JSON_FULL;
        buf[was & ~KMSG_JSON_FULL] = '\0';
    }
}

static void kmsg_json_fields(const struct kmsg_event *e, char *buf, size_t cap, size_t *len) {
    if (e->has & KMSG_HAS(PCI))
        kmsg_json_str_member(buf, cap, len, "pci", e->pci);
    if (e->has & KMSG_HAS(RING))
        kmsg_json_str_member(buf, cap, len, "ring", e->ring);
    if (e->has & KMSG_HAS(SEQ))
        kmsg_json_add(buf, cap, len, ",\"seq_signaled\":%" PRIu64 ",\"seq_emitted\":%" PRIu64,
                      e->seq_signaled, e->seq_emitted);
    if (e->has & KMSG_HAS(XID)) {
        kmsg_json_add(buf, cap, len, ",\"xid\":%u", (unsigned)e->xid);
        const char *m = kmsg_xid_meaning(e->xid);
        if (m)
            kmsg_json_str_member(buf, cap, len, "xid_meaning", m);
    }
    if (e->has & KMSG_HAS(PID))
        kmsg_json_add(buf, cap, len, ",\"pid\":%d", (int)e->pid);
    if (e->has & KMSG_HAS(PROCESS))
        kmsg_json_str_member(buf, cap, len, "process", e->process);
    if (e->has & KMSG_HAS(TID))
        kmsg_json_add(buf, cap, len, ",\"tid\":%d", (int)e->tid);
    if (e->has & KMSG_HAS(THREAD))
        kmsg_json_str_member(buf, cap, len, "thread", e->thread);
    if (e->has & KMSG_HAS(PASID))
        kmsg_json_add(buf, cap, len, ",\"pasid\":%u", (unsigned)e->pasid);
    if (e->has & KMSG_HAS(VMID))
        kmsg_json_add(buf, cap, len, ",\"vmid\":%u", (unsigned)e->vmid);
    if (e->has & KMSG_HAS(ADDR))
        kmsg_json_add(buf, cap, len, ",\"addr\":\"0x%" PRIx64 "\"", e->addr);
    if (e->has & KMSG_HAS(CLIENT))
        kmsg_json_str_member(buf, cap, len, "client", e->client);
    if (e->has & KMSG_HAS(NODE))
        kmsg_json_add(buf, cap, len, ",\"node\":%u", (unsigned)e->node);
}

size_t kmsg_json_members(const struct kmsg_event *e, char *buf, size_t cap) {
    size_t len = 0;
    if (cap == 0)
        return 0;
    buf[0] = '\0';
    kmsg_json_add(buf, cap, &len, "\"line\":%u", (unsigned)e->line);
    if (e->has & KMSG_HAS(TS))
        kmsg_json_add(buf, cap, &len, ",\"ts\":%" PRIu64 ".%06" PRIu64,
                      (uint64_t)(e->ts_ns / 1000000000u),
                      (uint64_t)(e->ts_ns % 1000000000u / 1000u));
    else
        kmsg_json_add(buf, cap, &len, ",\"ts\":null");
    kmsg_json_str_member(buf, cap, &len, "vendor", kmsg_vendor_name(e->vendor));
    kmsg_json_str_member(buf, cap, &len, "category", kmsg_category_name(e->category));
    kmsg_json_str_member(buf, cap, &len, "severity", ev_severity_name(e->severity));
    kmsg_json_fields(e, buf, cap, &len);
    if (e->lines > 1)
        kmsg_json_add(buf, cap, &len, ",\"lines\":%u", (unsigned)e->lines);
    kmsg_json_str_member(buf, cap, &len, "message", e->message);
    return len & ~KMSG_JSON_FULL;
}
