/* Classification of log messages against the rule table, and grouping of multi-line events. */
#define _GNU_SOURCE /* memmem */
#include "backend/kmsg/kmsg_classify.h"

#include "backend/core/ev.h"
#include "backend/kmsg/kmsg_internal.h"

#include <stddef.h>
#include <string.h>

/* Who printed a line that no rule names a vendor for. */
static uint8_t kmsg_line_vendor(uint64_t kw) {
    if (kw & (KMSG_KW(NVRM) | KMSG_KW(NVIDIA)))
        return KMSG_VENDOR_NVIDIA;
    if (kw & KMSG_KW(AMDGPU))
        return KMSG_VENDOR_AMDGPU;
    if (kw & KMSG_KW(KFD))
        return KMSG_VENDOR_KFD;
    if (kw & (KMSG_KW(DRM) | KMSG_KW(RADEON))) /* radeon has no vendor of its own: DRM's */
        return KMSG_VENDOR_DRM;
    return KMSG_VENDOR_NONE;
}

/* The event's common part from its first line. */
/* The event's common part from its first line (its message is copied once it is shown). */
static void kmsg_event_start(struct kmsg_event *e, const struct kmsg_line *l, uint64_t kw) {
    memset(e, 0, offsetof(struct kmsg_event, message) + 1);
    e->lines = 1;
    e->vendor = kmsg_line_vendor(kw);
    if (l->has_ts) {
        e->ts_ns = l->ts_ns;
        e->has |= KMSG_HAS(TS);
    }
}

/* The PCI address from the line's prefix ("amdgpu 0000:03:00.0: ..."), else /dev/kmsg's
 * DEVICE=+pci:... */
static void kmsg_event_pci(struct kmsg_event *e, const struct kmsg_line *l) {
    if (e->has & KMSG_HAS(PCI))
        return;
    if (kmsg_find_pci(l->text, l->len, e->pci) ||
        (strncmp(l->device, "+pci:", 5) == 0 &&
         kmsg_find_pci(l->device + 5, strlen(l->device + 5), e->pci)))
        e->has |= KMSG_HAS(PCI);
}

/* FreeBSD drm-kmod's DRM_ERROR form, "[drm ERROR :func] ...", where Linux prints "*ERROR*". */
static bool kmsg_drmkmod_error(const struct kmsg_line *l, uint64_t kw) {
    return (kw & KMSG_KW(DRM)) && memmem(l->text, l->len, "[drm ERROR :", 12) != NULL;
}

/* A failure no rule names: a driver's own error marker, or an error-level record from amdgpu,
 * amdkfd or DRM (not NVIDIA's: NVRM prints its load banner and other notices at KERN_ERR). */
static bool kmsg_catch_all(struct kmsg_event *e, const struct kmsg_line *l, uint64_t kw) {
    bool marked = ((kw & KMSG_KW(ERROR_MARK)) && (kw & (KMSG_KW(AMDGPU) | KMSG_KW(DRM)))) ||
                  kmsg_drmkmod_error(l, kw);
    bool err_level = l->prio >= 0 && l->prio <= 3 && e->vendor != KMSG_VENDOR_NONE &&
                     e->vendor != KMSG_VENDOR_NVIDIA;
    if (!marked && !err_level)
        return false;
    e->category = KMSG_CAT_FATAL_OTHER;
    e->severity = SEV_WARNING;
    if (e->vendor == KMSG_VENDOR_KFD)
        e->vendor = KMSG_VENDOR_AMDGPU;
    return true;
}

/* The last layer: a GPU driver's line that no rule or marker names but that speaks of failure
 * (kmsg_vocab) is at least a warning in driver_other, unless the benign list knows it. */
static bool kmsg_driver_other(struct kmsg_event *e, const struct kmsg_line *l, uint64_t kw) {
    if (!(kw & (KMSG_KW(AMDGPU) | KMSG_KW(DRM) | KMSG_KW(KFD) | KMSG_KW(RADEON) | KMSG_KW(NVRM) |
                KMSG_KW(NVIDIA))) ||
        !kmsg_vocab_driver_line(l->text, l->len))
        return false;
    int sev = kmsg_vocab_failure(l->text, l->len);
    if (sev < 0 || kmsg_benign_match(l->text, l->len))
        return false;
    e->category = KMSG_CAT_DRIVER_OTHER;
    e->severity = (uint8_t)sev;
    if (e->vendor == KMSG_VENDOR_KFD)
        e->vendor = KMSG_VENDOR_AMDGPU;
    return true;
}

/* Rule r's category, severity and vendor onto e. */
static void kmsg_apply(struct kmsg_event *e, const struct kmsg_rule *r, long ret) {
    e->category = r->category;
    e->severity = r->severity;
    if (r->flags & KMSG_R_RET)
        e->severity = ret == 0 ? SEV_INFO : SEV_ERROR;
    if (r->flags & KMSG_R_XID)
        e->severity = (uint8_t)kmsg_xid_severity(e->xid);
    if (r->vendor != KMSG_VENDOR_NONE)
        e->vendor = r->vendor;
    else if (e->vendor == KMSG_VENDOR_NONE || e->vendor == KMSG_VENDOR_KFD)
        e->vendor = KMSG_VENDOR_AMDGPU;
}

/* The head rule that matches the line, or NULL; e gets its fields. */
static const struct kmsg_rule *kmsg_find_rule(const struct kmsg_line *l, uint64_t kw,
                                              struct kmsg_event *e, long *ret) {
    for (size_t i = 0; i < kmsg_rules_count; i++) {
        const struct kmsg_rule *r = &kmsg_rules[i];
        if ((r->flags & (KMSG_R_CONT | KMSG_R_EXTRA)) || (r->need & kw) != r->need)
            continue;
        if (kmsg_match(r->tmpl, l->text, l->len, e, ret))
            return r;
    }
    return NULL;
}

/* Fields the extra rules of e's category find in the line. */
static void kmsg_extras(const struct kmsg_line *l, uint64_t kw, struct kmsg_event *e) {
    for (size_t i = 0; i < kmsg_rules_count; i++) {
        const struct kmsg_rule *r = &kmsg_rules[i];
        long ret = 0;
        if ((r->flags & KMSG_R_EXTRA) && r->category == e->category && (r->need & kw) == r->need)
            kmsg_match(r->tmpl, l->text, l->len, e, &ret);
    }
}

/* Classify l into e (kw: its keywords); the group it opens, or KMSG_G_NONE. */
/* Finish classifying l into e, started and matched against the rules (r: the head rule that
 * matched, or NULL; ret its %{ret}). The group it opens, or KMSG_G_NONE. */
static uint8_t kmsg_classify_end(const struct kmsg_line *l, uint64_t kw, struct kmsg_event *e,
                                 const struct kmsg_rule *r, long ret, bool all) {
    if (r) {
        kmsg_apply(e, r, ret);
        kmsg_extras(l, kw, e);
        /* radeon prints some of amdgpu's messages word for word (amdgpu's reset, ring tests and
         * gmc v7/v8 faults came from it): a line that names radeon and not amdgpu is not
         * amdgpu's */
        if (e->vendor == KMSG_VENDOR_AMDGPU && (kw & KMSG_KW(RADEON)) && !(kw & KMSG_KW(AMDGPU)))
            e->vendor = KMSG_VENDOR_DRM;
    } else if (!kmsg_catch_all(e, l, kw) && !kmsg_driver_other(e, l, kw)) {
        if (all && e->vendor != KMSG_VENDOR_NONE) /* chatter that will be shown */
            kmsg_copy_clean(e->message, sizeof(e->message), l->text, l->len);
        return KMSG_G_NONE;
    }
    kmsg_event_pci(e, l);
    kmsg_copy_clean(e->message, sizeof(e->message), l->text, l->len);
    return r ? r->group : KMSG_G_NONE;
}

bool kmsg_classify_line(const struct kmsg_line *l, struct kmsg_event *out) {
    uint64_t kw = kmsg_keywords_scan(l->text, l->len);
    memset(out, 0, sizeof(*out));
    if (!kw) /* most lines: nothing any rule needs */
        return false;
    long ret = 0;
    kmsg_event_start(out, l, kw);
    kmsg_classify_end(l, kw, out, kmsg_find_rule(l, kw, out, &ret), ret, true);
    return out->category != KMSG_CAT_NONE;
}

void kmsg_classifier_init(struct kmsg_classifier *c, enum kmsg_source source, bool all) {
    memset(c, 0, sizeof(*c));
    c->source = (uint8_t)source;
    c->all = all;
}

/* Whether continuation rule r names a ring in l other than the open group's (a lockup of
 * another ring is not the stall the group started with). */
static bool kmsg_other_ring(const struct kmsg_classifier *c, const struct kmsg_rule *r,
                            const struct kmsg_line *l) {
    struct kmsg_event own;
    long ret = 0;
    if (!(r->flags & KMSG_R_RING) || !(c->pending.has & KMSG_HAS(RING)))
        return false;
    memset(&own, 0, sizeof(own));
    return kmsg_match(r->tmpl, l->text, l->len, &own, &ret) && (own.has & KMSG_HAS(RING)) &&
           strcmp(own.ring, c->pending.ring) != 0;
}

/* Fold a continuation line of the open group into its event; true when it was one. */
static bool kmsg_continue(struct kmsg_classifier *c, const struct kmsg_line *l, uint64_t kw,
                          uint32_t lineno, bool *close) {
    for (size_t i = 0; i < kmsg_rules_count; i++) {
        const struct kmsg_rule *r = &kmsg_rules[i];
        long ret = 0;
        if (!(r->flags & KMSG_R_CONT) || !(r->group & (1u << c->group)) ||
            (r->need & kw) != r->need || kmsg_other_ring(c, r, l) ||
            !kmsg_match(r->tmpl, l->text, l->len, &c->pending, &ret))
            continue;
        c->pending.lines++;
        if (c->n_folded < KMSG_GROUP_SPAN)
            c->folded[c->n_folded++] = lineno;
        if (r->category != KMSG_CAT_NONE)
            kmsg_apply(&c->pending, r, ret);
        *close = (r->flags & KMSG_R_CLOSE) != 0;
        return true;
    }
    return false;
}

int kmsg_classifier_flush(struct kmsg_classifier *c, struct kmsg_event *out) {
    if (!c->has_pending)
        return 0;
    *out = c->pending;
    c->has_pending = false;
    memcpy(c->last_folded, c->folded, sizeof(c->folded));
    c->n_last_folded = c->n_folded;
    c->n_folded = 0;
    c->group = KMSG_G_NONE;
    /* a group that never turned out to be a failure (NVRM's GPU record) is a plain line */
    return out->category != KMSG_CAT_NONE || (c->all && out->vendor != KMSG_VENDOR_NONE);
}

const uint32_t *kmsg_classifier_folded(const struct kmsg_classifier *c, uint32_t *n) {
    *n = c->n_last_folded;
    return c->last_folded;
}

/* Whether l names a device other than the open group's (two GPUs' faults can interleave). */
static bool kmsg_other_device(const struct kmsg_classifier *c, const struct kmsg_line *l) {
    char pci[16];
    return (c->pending.has & KMSG_HAS(PCI)) && kmsg_find_pci(l->text, l->len, pci) &&
           strcmp(pci, c->pending.pci) != 0;
}

const struct kmsg_event *kmsg_classifier_pending(const struct kmsg_classifier *c) {
    return c->has_pending ? &c->pending : NULL;
}

int kmsg_classifier_feed(struct kmsg_classifier *c, const struct kmsg_line *l, uint32_t lineno,
                         struct kmsg_event out[2]) {
    uint64_t kw = kmsg_keywords_scan(l->text, l->len);
    int n = 0;
    bool close = false;
    c->n_last_folded = 0;
    if (c->has_pending && lineno >= c->pending.line + KMSG_GROUP_SPAN)
        n = kmsg_classifier_flush(c, &out[0]);
    struct kmsg_event e;
    const struct kmsg_rule *r = NULL;
    long ret = 0;
    if (kw) { /* else (most lines) nothing any rule needs */
        kmsg_event_start(&e, l, kw);
        r = kmsg_find_rule(l, kw, &e, &ret);
    }
    if (c->has_pending) {
        /* a line that opens a group of its own (the next page fault, whose header also holds
         * "for process ...") never continues the open one */
        bool opens = r && r->group != KMSG_G_NONE, other = kmsg_other_device(c, l);
        if (!opens && !other && kmsg_continue(c, l, kw, lineno, &close))
            return close ? kmsg_classifier_flush(c, &out[0]) : 0;
        if (opens || !other)
            n = kmsg_classifier_flush(c, &out[0]);
    }
    if (!kw)
        return n;
    uint8_t group = kmsg_classify_end(l, kw, &e, r, ret, c->all);
    out[n] = e;
    struct kmsg_event *ev = &out[n];
    ev->line = lineno;
    ev->source = c->source;
    if (group != KMSG_G_NONE && !c->has_pending) {
        c->pending = *ev;
        c->has_pending = true;
        c->group = group;
        c->n_folded = 0;
        return n;
    }
    bool shown = ev->category != KMSG_CAT_NONE || (c->all && ev->vendor != KMSG_VENDOR_NONE);
    return n + (shown ? 1 : 0);
}
