/* The fdinfo provider's pure half: one DRM fdinfo text into a client, and a sample's clients
 * into per-GPU process lists with memory and engine busy %. */
#include "backend/telemetry/tele_fdinfo_internal.h"
#include "backend/telemetry/tele_prov.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parsing ---- */

/* "<uint> [KiB|MiB]" in bytes. False for anything else. */
static bool tele_fdinfo_size(const char *v, uint64_t *out) {
    if (!isdigit((unsigned char)*v))
        return false;
    char *end;
    uint64_t n = strtoull(v, &end, 10);
    end += strspn(end, " \t");
    unsigned shift = *end == '\0'              ? 0
                     : strcmp(end, "KiB") == 0 ? 10
                     : strcmp(end, "MiB") == 0 ? 20
                                               : 64;
    if (shift == 64 || n > (UINT64_MAX >> shift))
        return false; /* an unknown unit, or more bytes than 64 bits hold */
    *out = n << shift;
    return true;
}

static struct tele_fdinfo_engine *tele_fdinfo_engine(struct tele_fdinfo_client *c,
                                                     const char *name) {
    for (int i = 0; i < c->n_engines; i++)
        if (strcmp(c->engines[i].name, name) == 0)
            return &c->engines[i];
    if (c->n_engines >= TELE_FDINFO_ENGINES || strlen(name) >= sizeof(c->engines[0].name))
        return NULL;
    struct tele_fdinfo_engine *e = &c->engines[c->n_engines++];
    snprintf(e->name, sizeof(e->name), "%s", name);
    e->ns = 0;
    e->capacity = 1;
    return e;
}

/* A region's size from the key with the highest rank seen so far. */
static void tele_fdinfo_region(const char *v, uint8_t rank, uint64_t *bytes, bool *valid,
                               uint8_t *have) {
    uint64_t b;
    if (rank > *have && tele_fdinfo_size(v, &b)) {
        *bytes = b;
        *valid = true;
        *have = rank;
    }
}

/* drm-{resident,memory,total}-{vram,gtt}: resident first (what the buffers occupy now; the
 * amdgpu-only drm-memory-* is its alias on current kernels, total on some older ones). */
static bool tele_fdinfo_memory(struct tele_fdinfo_client *c, const char *key, const char *v) {
    static const struct {
        const char *prefix;
        uint8_t rank;
    } kinds[] = {{"drm-resident-", 3}, {"drm-memory-", 2}, {"drm-total-", 1}};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        size_t pl = strlen(kinds[i].prefix);
        if (strncmp(key, kinds[i].prefix, pl) != 0)
            continue;
        if (strcmp(key + pl, "vram") == 0)
            tele_fdinfo_region(v, kinds[i].rank, &c->vram_bytes, &c->vram_valid, &c->vram_rank);
        else if (strcmp(key + pl, "gtt") == 0)
            tele_fdinfo_region(v, kinds[i].rank, &c->gtt_bytes, &c->gtt_valid, &c->gtt_rank);
        return true;
    }
    return false;
}

static void tele_fdinfo_engine_key(struct tele_fdinfo_client *c, const char *key, const char *v) {
    bool capacity = strncmp(key, "drm-engine-capacity-", 20) == 0;
    struct tele_fdinfo_engine *e = tele_fdinfo_engine(c, key + (capacity ? 20 : 11));
    if (!e || !isdigit((unsigned char)*v))
        return;
    uint64_t n = strtoull(v, NULL, 10);
    if (capacity)
        e->capacity = n > 0 && n < UINT32_MAX ? (uint32_t)n : 1; /* zero is not allowed */
    else
        e->ns += n; /* "dec" names two IP blocks; a chip has only one of them */
}

/* One "key:\tvalue" line (keys carry no whitespace; amdgpu puts a space before the tab of
 * drm-memory-gtt and drm-memory-cpu). Returns -ENODEV for another driver's file. */
static int tele_fdinfo_line(struct tele_fdinfo_client *c, const char *key, const char *v,
                            bool *amdgpu) {
    if (strcmp(key, "drm-driver") == 0) {
        *amdgpu = strcmp(v, "amdgpu") == 0;
        return *amdgpu ? 0 : -ENODEV;
    }
    if (strcmp(key, "drm-pdev") == 0) {
        if (!tele_pci_norm(v, c->pdev))
            c->pdev[0] = '\0';
    } else if (strcmp(key, "drm-client-id") == 0 && isdigit((unsigned char)*v)) {
        c->client_id = strtoull(v, NULL, 10);
        c->has_client_id = true;
    } else if (strcmp(key, "amd-evicted-vram") == 0) {
        c->evicted_valid = tele_fdinfo_size(v, &c->evicted_vram_bytes);
    } else if (strncmp(key, "drm-engine-", 11) == 0) {
        tele_fdinfo_engine_key(c, key, v);
    } else {
        tele_fdinfo_memory(c, key, v);
    }
    return 0;
}

int tele_fdinfo_parse(const char *text, struct tele_fdinfo_client *c) {
    memset(c, 0, sizeof(*c));
    bool amdgpu = false;
    char line[256];
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) ? len : sizeof(line) - 1), p);
        p += len + (p[len] == '\n');
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = '\0';
        line[strcspn(line, " \t")] = '\0';
        const char *v = colon + 1 + strspn(colon + 1, " \t");
        if (tele_fdinfo_line(c, line, v, &amdgpu) < 0)
            return -ENODEV;
    }
    if (!amdgpu)
        return -ENODEV;
    return c->pdev[0] ? 0 : -EINVAL;
}

/* ---- aggregation ---- */

/* The identity of a client: device, process, client id. */
static int tele_fdinfo_key_cmp(const void *a, const void *b) {
    const struct tele_fdinfo_client *x = a, *y = b;
    int d = strcmp(x->pdev, y->pdev);
    if (d)
        return d;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->has_client_id != y->has_client_id)
        return x->has_client_id ? -1 : 1;
    return (x->client_id > y->client_id) - (x->client_id < y->client_id);
}

static int tele_fdinfo_sort_cmp(const void *a, const void *b) {
    int d = tele_fdinfo_key_cmp(a, b);
    const struct tele_fdinfo_client *x = a, *y = b;
    return d ? d : (x->fd > y->fd) - (x->fd < y->fd);
}

/* Sort, then drop the second and later descriptors of one client. Returns the count kept. */
static size_t tele_fdinfo_dedupe(struct tele_fdinfo_client *c, size_t n) {
    if (n == 0)
        return 0; /* c may be NULL */
    qsort(c, n, sizeof(c[0]), tele_fdinfo_sort_cmp);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m > 0 && c[i].has_client_id && tele_fdinfo_key_cmp(&c[m - 1], &c[i]) == 0)
            continue;
        if (m != i)
            c[m] = c[i];
        m++;
    }
    return m;
}

/* Busy ns per engine of one process over the interval. */
struct tele_fdinfo_busy {
    bool valid;
    int n;
    struct tele_fdinfo_engine delta[TELE_FDINFO_ENGINES]; /* ns = growth */
};

/* Growth of c's engines since p (the same client last sample); amdgpu prints only engines
 * with time on them, so one missing before had 0. A smaller value keeps the previous one. */
static void tele_fdinfo_busy_add(struct tele_fdinfo_busy *b, struct tele_fdinfo_client *c,
                                 const struct tele_fdinfo_client *p) {
    b->valid = true;
    for (int i = 0; i < c->n_engines; i++) {
        struct tele_fdinfo_engine *e = &c->engines[i];
        uint64_t before = 0;
        for (int j = 0; j < p->n_engines; j++)
            if (strcmp(p->engines[j].name, e->name) == 0)
                before = p->engines[j].ns;
        if (e->ns < before)
            e->ns = before;
        int k = 0;
        while (k < b->n && strcmp(b->delta[k].name, e->name) != 0)
            k++;
        if (k == b->n && b->n == TELE_FDINFO_ENGINES)
            continue;
        if (k == b->n)
            b->delta[b->n++] = (struct tele_fdinfo_engine){.capacity = e->capacity};
        snprintf(b->delta[k].name, sizeof(b->delta[k].name), "%s", e->name);
        b->delta[k].ns += e->ns - before;
    }
}

static double tele_fdinfo_busy_pct(const struct tele_fdinfo_busy *b, uint64_t dt_ns) {
    double best = 0;
    for (int k = 0; k < b->n; k++) {
        double pct = 100.0 * (double)b->delta[k].ns / ((double)dt_ns * b->delta[k].capacity);
        best = pct > best ? pct : best;
    }
    return best > 100 ? 100 : best;
}

/* The process of clients c[0..n) (one pid, one device). */
static void tele_fdinfo_proc(const struct tele_fdinfo_hist *h, struct tele_fdinfo_client *c,
                             size_t n, uint64_t now_ns, struct tele_proc *p) {
    struct tele_fdinfo_busy busy;
    memset(&busy, 0, sizeof(busy));
    memset(p, 0, sizeof(*p));
    p->pid = c[0].pid;
    snprintf(p->name, sizeof(p->name), "%s", c[0].comm);
    for (size_t i = 0; i < n; i++) {
        p->vram_bytes += c[i].vram_valid ? c[i].vram_bytes : 0;
        p->gtt_bytes += c[i].gtt_valid ? c[i].gtt_bytes : 0;
        p->vram_valid |= c[i].vram_valid;
        p->gtt_valid |= c[i].gtt_valid;
        const struct tele_fdinfo_client *prev =
            h->has_prev && h->n_prev && c[i].has_client_id
                ? bsearch(&c[i], h->prev, h->n_prev, sizeof(c[0]), tele_fdinfo_key_cmp)
                : NULL;
        if (prev)
            tele_fdinfo_busy_add(&busy, &c[i], prev);
    }
    p->busy_valid = busy.valid && now_ns > h->prev_ns;
    if (p->busy_valid)
        p->busy_pct = tele_fdinfo_busy_pct(&busy, now_ns - h->prev_ns);
}

static int tele_fdinfo_proc_cmp(const void *a, const void *b) {
    const struct tele_proc *x = a, *y = b;
    if (x->vram_bytes != y->vram_bytes)
        return x->vram_bytes > y->vram_bytes ? -1 : 1;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Device pdev's record from its clients c[0..n) (sorted by pid); procs is scratch for n. */
static void tele_fdinfo_device(const struct tele_fdinfo_hist *h, struct tele_fdinfo_client *c,
                               size_t n, uint64_t now_ns, int32_t self_pid, struct tele_proc *procs,
                               struct tele_gpu *g) {
    size_t np = 0;
    bool vram_known = n == 0; /* no client: no process VRAM, a true 0 */
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && c[j].pid == c[i].pid;)
            j++;
        tele_fdinfo_proc(h, &c[i], j - i, now_ns, &procs[np]);
        procs[np].self = c[i].pid == self_pid;
        vram_known |= procs[np++].vram_valid;
    }
    qsort(procs, np, sizeof(procs[0]), tele_fdinfo_proc_cmp);
    double vram = 0;
    for (size_t i = 0; i < np; i++)
        vram += (double)procs[i].vram_bytes;
    g->n_procs = np < TELE_MAX_PROCS ? (int)np : TELE_MAX_PROCS;
    memcpy(g->procs, procs, (size_t)g->n_procs * sizeof(procs[0]));
    g->procs_more = (uint32_t)(np - (size_t)g->n_procs);
    g->procs_src = 1;
    if (vram_known)
        tele_set(g, TELE_F_PROC_VRAM, vram);
}

static void tele_fdinfo_learn(struct tele_fdinfo_hist *h, const struct tele_fdinfo_client *c,
                              size_t n) {
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < h->n_known && strcmp(h->known[k], c[i].pdev) != 0)
            k++;
        if (k == h->n_known && h->n_known < TELE_MAX_GPUS)
            snprintf(h->known[h->n_known++], sizeof(h->known[0]), "%s", c[i].pdev);
    }
}

/* Keep this sample's clients (their engine counters adjusted) for the next one. */
static int tele_fdinfo_remember(struct tele_fdinfo_hist *h, const struct tele_fdinfo_client *c,
                                size_t n, uint64_t now_ns) {
    if (n > h->cap_prev) {
        struct tele_fdinfo_client *p = realloc(h->prev, n * sizeof(*p));
        if (!p) {
            h->has_prev = false;
            return -ENOMEM;
        }
        h->prev = p;
        h->cap_prev = n;
    }
    if (n)
        memcpy(h->prev, c, n * sizeof(*c));
    h->n_prev = n;
    h->prev_ns = now_ns;
    h->has_prev = true;
    return 0;
}

int tele_fdinfo_aggregate(struct tele_fdinfo_hist *h, struct tele_fdinfo_client *c, size_t n,
                          uint64_t now_ns, int32_t self_pid, struct tele_gpu *out, size_t cap,
                          size_t *n_out) {
    n = tele_fdinfo_dedupe(c, n);
    tele_fdinfo_learn(h, c, n);
    struct tele_proc *procs = malloc((n ? n : 1) * sizeof(*procs));
    *n_out = 0;
    if (!procs)
        return -ENOMEM;
    for (size_t k = 0; k < h->n_known && *n_out < cap; k++) {
        size_t i = 0, j;
        while (i < n && strcmp(c[i].pdev, h->known[k]) != 0)
            i++;
        for (j = i; j < n && strcmp(c[j].pdev, h->known[k]) == 0;)
            j++;
        struct tele_gpu *g = &out[(*n_out)++];
        tele_gpu_init(g, h->known[k]);
        g->vendor = TELE_VENDOR_AMD;
        snprintf(g->driver, sizeof(g->driver), "amdgpu");
        tele_fdinfo_device(h, &c[i], j - i, now_ns, self_pid, procs, g);
    }
    free(procs);
    return tele_fdinfo_remember(h, c, n, now_ns);
}

void tele_fdinfo_hist_fini(struct tele_fdinfo_hist *h) {
    free(h->prev);
    memset(h, 0, sizeof(*h));
}
