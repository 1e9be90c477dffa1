/* Parsers for the amdgpu debugfs files the debugfs provider reads (device name, VRAM allocator
 * dump, fence counters) and the stalled-ring tracking, kept free of file access for the tests. */
#include "backend/telemetry/tele_debugfs_internal.h"
#include "backend/telemetry/tele_prov.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dri/N/name ---- */

/* One word of the name line: an address, bare or after "dev=", "master=" or "unique=" (older
 * kernels spell the unique name "pci:0000:03:00.0"). */
static bool tele_debugfs_name_token(const char *tok, size_t len, char pci[16]) {
    static const char *const prefixes[] = {"dev=", "master=", "unique=", "pci:"};
    char buf[64];
    if (len >= sizeof(buf))
        return false;
    memcpy(buf, tok, len);
    buf[len] = '\0';
    char *p = buf;
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
        if (strncmp(p, prefixes[i], strlen(prefixes[i])) == 0)
            p += strlen(prefixes[i]);
    return tele_pci_norm(p, pci);
}

bool tele_debugfs_parse_name(const char *text, char pci[16]) {
    const char *p = text + strspn(text, " \t");
    size_t len = strcspn(p, " \t\n");
    if (len != 6 || strncmp(p, "amdgpu", 6) != 0)
        return false;
    for (p += len; *p && *p != '\n'; p += len) {
        p += strspn(p, " \t");
        len = strcspn(p, " \t\n");
        if (len && tele_debugfs_name_token(p, len, pci))
            return true;
    }
    return false;
}

/* ---- amdgpu_vram_mm ---- */

/* What one pass over the dump found, before it is turned into a tele_buddy. */
struct tele_debugfs_mm {
    uint64_t ttm_size; /* "  size: N" of the TTM header, bytes; 0 when absent */
    bool have_chunk;   /* buddy header line seen */
    uint64_t chunk_kib, total_mib, free_mib;
    bool have_order;    /* at least one order line */
    bool have_mm_total; /* drm_mm "total:" line seen */
    uint64_t mm_total, mm_free, mm_largest, mm_holes;
};

/* "order-%2d free: %8llu KiB, blocks: %llu" (and the 2022 "order-%d ... pages: %llu"): the
 * block count is exact, the printed free size rounded, so only the count is taken. */
static void tele_debugfs_mm_order(const char *line, struct tele_debugfs_mm *m,
                                  struct tele_buddy *b) {
    char *end;
    long order = strtol(line + 6, &end, 10);
    const char *cnt = strstr(end, "blocks:");
    if (!cnt)
        cnt = strstr(end, "pages:");
    if (end == line + 6 || order < 0 || !cnt)
        return;
    cnt = strchr(cnt, ':') + 1;
    uint64_t blocks = strtoull(cnt, NULL, 10);
    m->have_order = true;
    if (order >= TELE_BUDDY_ORDERS)
        return; /* beyond the record; never on a real GPU (2^40 chunks) */
    b->order_blocks[order] = blocks;
    if (order + 1 > b->n_orders)
        b->n_orders = (int)order + 1;
}

/* "0x...-0x...: N: free" is a free hole of N units. */
static void tele_debugfs_mm_hole(const char *line, struct tele_debugfs_mm *m) {
    uint64_t start, end, size;
    char state[8];
    if (sscanf(line, "%" SCNx64 "-%" SCNx64 ": %" SCNu64 ": %7s", &start, &end, &size, state) !=
            4 ||
        strcmp(state, "free") != 0)
        return;
    m->mm_holes++;
    if (size > m->mm_largest)
        m->mm_largest = size;
}

static void tele_debugfs_mm_line(const char *line, struct tele_debugfs_mm *m,
                                 struct tele_buddy *b) {
    uint64_t used;
    line += strspn(line, " \t");
    if (sscanf(line, "size: %" SCNu64, &m->ttm_size) == 1)
        return;
    if (sscanf(line, "chunk_size: %" SCNu64 "KiB, total: %" SCNu64 "MiB, free: %" SCNu64 "MiB",
               &m->chunk_kib, &m->total_mib, &m->free_mib) == 3)
        m->have_chunk = true;
    else if (strncmp(line, "order-", 6) == 0)
        tele_debugfs_mm_order(line, m, b);
    else if (sscanf(line, "total: %" SCNu64 ", used %" SCNu64 " free %" SCNu64, &m->mm_total, &used,
                    &m->mm_free) == 3)
        m->have_mm_total = true;
    else if (strncmp(line, "0x", 2) == 0)
        tele_debugfs_mm_hole(line, m);
}

static void tele_debugfs_mm_buddy(const struct tele_debugfs_mm *m, struct tele_buddy *b) {
    b->chunk_bytes = m->chunk_kib << 10;
    b->total_bytes =
        m->ttm_size && (m->ttm_size >> 20) == m->total_mib ? m->ttm_size : m->total_mib << 20;
    uint64_t free_bytes = 0;
    for (int o = 0; o < b->n_orders; o++) {
        b->order_free_bytes[o] = b->order_blocks[o] * (b->chunk_bytes << o);
        free_bytes += b->order_free_bytes[o];
        b->free_blocks += b->order_blocks[o];
        if (b->order_blocks[o])
            b->largest_free_bytes = b->chunk_bytes << o;
    }
    b->free_bytes = m->have_order ? free_bytes : m->free_mib << 20;
    b->valid = b->chunk_bytes > 0;
}

static void tele_debugfs_mm_drm_mm(const struct tele_debugfs_mm *m, struct tele_buddy *b) {
    /* the TTM header's size is in bytes: when it equals the total, so do the node sizes */
    uint64_t unit = m->ttm_size && m->ttm_size == m->mm_total ? 1 : TELE_DEBUGFS_MM_PAGE_BYTES;
    memset(b, 0, sizeof(*b));
    b->chunk_bytes = unit;
    b->total_bytes = m->mm_total * unit;
    b->free_bytes = m->mm_free * unit;
    b->largest_free_bytes = m->mm_largest * unit;
    b->free_blocks = m->mm_holes;
    b->valid = true;
}

enum tele_debugfs_mm_format tele_debugfs_parse_vram_mm(const char *text, struct tele_buddy *b) {
    struct tele_debugfs_mm m;
    memset(&m, 0, sizeof(m));
    memset(b, 0, sizeof(*b));
    char line[256];
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) ? len : sizeof(line) - 1), p);
        tele_debugfs_mm_line(line, &m, b);
        p += len + (p[len] == '\n');
    }
    if (m.have_chunk) {
        tele_debugfs_mm_buddy(&m, b);
        return TELE_DEBUGFS_MM_BUDDY;
    }
    if (m.have_mm_total) {
        tele_debugfs_mm_drm_mm(&m, b);
        return TELE_DEBUGFS_MM_DRM_MM;
    }
    memset(b, 0, sizeof(*b));
    return TELE_DEBUGFS_MM_UNKNOWN;
}

/* ---- amdgpu_fence_info ---- */

/* The hex number after a label ("Last emitted                 0x0000a1b5"). */
static bool tele_debugfs_fence_value(const char *line, size_t label_len, uint64_t *out) {
    const char *p = line + label_len;
    p += strspn(p, " \t");
    if (!isxdigit((unsigned char)*p))
        return false;
    char *end;
    *out = strtoull(p, &end, 16);
    return end != p;
}

/* "--- ring 3 (comp_1.2.0) ---": a new block, its name between the parentheses. */
static bool tele_debugfs_fence_head(const char *line, size_t len, struct tele_ring *r) {
    const char *lp = memchr(line, '(', len), *rp = NULL;
    for (const char *q = line + len; q > line && !rp; q--)
        if (q[-1] == ')')
            rp = q - 1;
    if (!lp || !rp || rp <= lp + 1)
        return false;
    memset(r, 0, sizeof(*r));
    snprintf(r->name, sizeof(r->name), "%.*s", (int)(rp - lp - 1), lp + 1);
    return true;
}

int tele_debugfs_parse_fences(const char *text, struct tele_ring *rings, int cap) {
    static const char sig[] = "Last signaled fence", emi[] = "Last emitted";
    int n = 0;
    bool in_block = false, got_sig = false, got_emi = false;
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        uint64_t v = 0;
        if (strncmp(p, "--- ring ", 9) == 0) {
            n += in_block && got_sig && got_emi; /* close the previous block */
            in_block = n < cap && tele_debugfs_fence_head(p, len, &rings[n]);
            got_sig = got_emi = false;
        } else if (in_block && !got_sig && strncmp(p, sig, sizeof(sig) - 1) == 0) {
            got_sig = tele_debugfs_fence_value(p, sizeof(sig) - 1, &v);
            rings[n].signaled = v;
        } else if (in_block && got_sig && !got_emi && strncmp(p, emi, sizeof(emi) - 1) == 0) {
            /* the first one; GFX and SDMA rings print a second for the trailing fence */
            got_emi = tele_debugfs_fence_value(p, sizeof(emi) - 1, &v);
            rings[n].emitted = v;
        }
        p += len + (p[len] == '\n');
    }
    return n + (in_block && got_sig && got_emi);
}

/* ---- stalled rings ---- */

/* The kernel's fence sequence numbers are 32-bit and wrap: emitted is ahead of signaled when
 * their difference, modulo 2^32, is below half the range. */
static bool tele_debugfs_ring_pending(const struct tele_ring *r) {
    uint32_t ahead = (uint32_t)r->emitted - (uint32_t)r->signaled;
    return ahead != 0 && ahead < 0x80000000u;
}

static const struct tele_debugfs_ring_seen *
tele_debugfs_ring_find(const struct tele_debugfs_ring_hist *h, const char *name) {
    for (int i = 0; i < h->n; i++)
        if (strcmp(h->r[i].name, name) == 0)
            return &h->r[i];
    return NULL;
}

void tele_debugfs_rings_track(struct tele_debugfs_ring_hist *h, struct tele_ring *rings, int n,
                              tele_debugfs_note_fn note, void *arg) {
    struct tele_debugfs_ring_hist next;
    next.n = n < TELE_MAX_RINGS ? n : TELE_MAX_RINGS;
    for (int i = 0; i < next.n; i++) {
        struct tele_ring *r = &rings[i];
        const struct tele_debugfs_ring_seen *prev = tele_debugfs_ring_find(h, r->name);
        r->stalled = prev && tele_debugfs_ring_pending(r) && prev->signaled == r->signaled;
        if (note && r->stalled != (prev && prev->stalled))
            note(arg, r);
        snprintf(next.r[i].name, sizeof(next.r[i].name), "%s", r->name);
        next.r[i].signaled = r->signaled;
        next.r[i].stalled = r->stalled;
    }
    *h = next;
}
