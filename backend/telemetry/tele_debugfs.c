/* The "debugfs" telemetry provider: the VRAM allocator's free lists (amdgpu_vram_mm) and the
 * rings' fence counters (amdgpu_fence_info) of every amdgpu device under ROOT/dri, with an
 * event when a ring stops making progress. Root only; never wakes a device. */
#include "backend/telemetry/tele_debugfs_internal.h"
#include "backend/telemetry/tele_prov.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TELE_DEBUGFS_BUF_BYTES (64 * 1024) /* amdgpu_vram_mm: ~25 orders and the reserved list */
#define TELE_DEBUGFS_MINORS    256         /* dri/N entries looked at */

struct tele_debugfs_dev {
    int minor;               /* N of dri/N */
    char pci[16];            /* "0000:03:00.0" */
    char dir[TELE_PATH_MAX]; /* ROOT/dri/N */
    struct tele_debugfs_ring_hist hist;
};

struct tele_debugfs {
    const struct tele_ctx *ctx;
    struct tele_debugfs_dev devs[TELE_MAX_GPUS];
    size_t n_devs;
    char buf[TELE_DEBUGFS_BUF_BYTES]; /* the sampling thread's; too big for its stack */
};

/* "1" or "128", not "0000:03:00.0" (the per-device directory of newer kernels) */
static int tele_debugfs_minor(const char *name) {
    size_t len = strlen(name);
    if (len == 0 || len > 4 || strspn(name, "0123456789") != len)
        return -1;
    return atoi(name);
}

static int tele_debugfs_int_cmp(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static bool tele_debugfs_known(const struct tele_debugfs *s, const char *pci) {
    for (size_t i = 0; i < s->n_devs; i++)
        if (strcmp(s->devs[i].pci, pci) == 0)
            return true;
    return false;
}

/* dri/<minor>: kept when its name file says amdgpu with a PCI address not seen yet (older
 * kernels give the render and control minors of a device their own directory too; the lowest
 * minor, the primary one, holds the driver's files). Returns the name file's read error. */
static int tele_debugfs_add(struct tele_debugfs *s, const char *dri, int minor) {
    char rel[16], path[TELE_PATH_MAX], text[256], pci[16];
    struct tele_debugfs_dev *d = &s->devs[s->n_devs];
    snprintf(rel, sizeof(rel), "%d", minor);
    if (tele_path(d->dir, sizeof(d->dir), dri, rel) < 0 ||
        tele_path(path, sizeof(path), d->dir, "name") < 0)
        return 0;
    ssize_t rc = tele_read_text(path, text, sizeof(text));
    if (rc < 0)
        return (int)rc;
    if (!tele_debugfs_parse_name(text, pci) || tele_debugfs_known(s, pci))
        return 0; /* another driver's device, or a second minor of one we have */
    d->minor = minor;
    snprintf(d->pci, sizeof(d->pci), "%s", pci);
    memset(&d->hist, 0, sizeof(d->hist));
    s->n_devs++;
    return 0;
}

/* Every amdgpu device under dri, by minor. 0 or -errno for dri itself; *name_rc is the last
 * error reading a name file (debugfs under kernel lockdown refuses them). */
static int tele_debugfs_discover(struct tele_debugfs *s, const char *dri, int *name_rc) {
    int minors[TELE_DEBUGFS_MINORS];
    size_t n = 0;
    DIR *d = opendir(dri);
    if (!d)
        return -errno;
    for (struct dirent *e; (e = readdir(d)) != NULL && n < TELE_DEBUGFS_MINORS;) {
        int m = tele_debugfs_minor(e->d_name);
        if (m >= 0)
            minors[n++] = m;
    }
    closedir(d);
    qsort(minors, n, sizeof(minors[0]), tele_debugfs_int_cmp);
    *name_rc = 0;
    for (size_t i = 0; i < n && s->n_devs < TELE_MAX_GPUS; i++) {
        int rc = tele_debugfs_add(s, dri, minors[i]);
        if (rc < 0)
            *name_rc = rc;
    }
    return 0;
}

static int tele_debugfs_denied(const char *root, char *reason, size_t reasonlen) {
    snprintf(reason, reasonlen, "permission denied: %s needs root", root);
    return -EACCES;
}

/* debugfs is mode 0700 root: a plain user cannot even list it. */
static int tele_debugfs_check_root(const char *root, char *reason, size_t reasonlen) {
    DIR *d = opendir(root);
    if (d) {
        closedir(d);
        return 0;
    }
    int rc = -errno;
    if (rc == -EACCES || rc == -EPERM)
        return tele_debugfs_denied(root, reason, reasonlen);
    tele_reason_errno(reason, reasonlen, rc, root);
    return rc;
}

static int tele_debugfs_open(const struct tele_ctx *ctx, void **state, char *reason,
                             size_t reasonlen) {
    const char *root = ctx->roots->debugfs;
    char dri[TELE_PATH_MAX];
    int rc = tele_debugfs_check_root(root, reason, reasonlen);
    if (rc < 0)
        return rc;
    if (tele_path(dri, sizeof(dri), root, "dri") < 0) {
        tele_reason_errno(reason, reasonlen, -ENAMETOOLONG, root);
        return -ENAMETOOLONG;
    }
    struct tele_debugfs *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(reason, reasonlen, "out of memory");
        return -ENOMEM;
    }
    s->ctx = ctx;
    int name_rc = 0;
    rc = tele_debugfs_discover(s, dri, &name_rc);
    if (rc == -EACCES || rc == -EPERM ||
        (s->n_devs == 0 && (name_rc == -EACCES || name_rc == -EPERM)))
        rc = tele_debugfs_denied(root, reason, reasonlen);
    else if (s->n_devs == 0) {
        snprintf(reason, reasonlen, "no amdgpu device under %s", dri);
        rc = -ENODEV;
    }
    if (rc < 0) {
        free(s);
        return rc;
    }
    *state = s;
    return 0;
}

/* ---- sampling ---- */

struct tele_debugfs_note_arg {
    const struct tele_debugfs *s;
    const struct tele_debugfs_dev *d;
};

static void tele_debugfs_note(void *arg, const struct tele_ring *r) {
    const struct tele_debugfs_note_arg *a = arg;
    const struct tele_ctx *ctx = a->s->ctx;
    char text[160];
    if (r->stalled)
        snprintf(text, sizeof(text),
                 "ring %s stalled: signaled 0x%08llx < emitted 0x%08llx (no progress in the "
                 "last sample)",
                 r->name, (unsigned long long)r->signaled, (unsigned long long)r->emitted);
    else
        snprintf(text, sizeof(text), "ring %s moving again: signaled 0x%08llx, emitted 0x%08llx",
                 r->name, (unsigned long long)r->signaled, (unsigned long long)r->emitted);
    ctx->emit(ctx, r->stalled ? SEV_ERROR : SEV_INFO, a->d->pci, text);
}

/* dir/name into s->buf. False when it cannot be read (an older kernel without the file). */
static bool tele_debugfs_read(struct tele_debugfs *s, const char *dir, const char *name, char *path,
                              size_t pathcap) {
    return tele_path(path, pathcap, dir, name) == 0 &&
           tele_read_text(path, s->buf, sizeof(s->buf)) >= 0;
}

/* The buddy view; -EPROTONOSUPPORT with reason when the dump's format is not one known here. */
static int tele_debugfs_sample_mm(struct tele_debugfs *s, const struct tele_debugfs_dev *d,
                                  struct tele_gpu *g, char *reason, size_t reasonlen) {
    char path[TELE_PATH_MAX];
    if (!tele_debugfs_read(s, d->dir, "amdgpu_vram_mm", path, sizeof(path)))
        return 0;
    if (tele_debugfs_parse_vram_mm(s->buf, &g->buddy) != TELE_DEBUGFS_MM_UNKNOWN)
        return 0;
    snprintf(reason, reasonlen, "unknown format: %.140s", path);
    return -EPROTONOSUPPORT;
}

static void tele_debugfs_sample_rings(struct tele_debugfs *s, struct tele_debugfs_dev *d,
                                      struct tele_gpu *g) {
    char path[TELE_PATH_MAX];
    if (!tele_debugfs_read(s, d->dir, "amdgpu_fence_info", path, sizeof(path)))
        return;
    struct tele_debugfs_note_arg arg = {s, d};
    g->n_rings = tele_debugfs_parse_fences(s->buf, g->rings, TELE_MAX_RINGS);
    tele_debugfs_rings_track(&d->hist, g->rings, g->n_rings, tele_debugfs_note, &arg);
    g->rings_src = 1;
}

static int tele_debugfs_sample(void *state, struct tele_gpu *out, size_t cap, size_t *n,
                               char *reason, size_t reasonlen) {
    struct tele_debugfs *s = state;
    size_t k = s->n_devs < cap ? s->n_devs : cap;
    int rc = 0;
    for (size_t i = 0; i < k; i++) {
        struct tele_debugfs_dev *d = &s->devs[i];
        struct tele_gpu *g = &out[i];
        tele_gpu_init(g, d->pci);
        g->vendor = TELE_VENDOR_AMD;
        g->card = d->minor;
        snprintf(g->driver, sizeof(g->driver), "amdgpu");
        char why[TELE_REASON_BYTES];
        int r = tele_debugfs_sample_mm(s, d, g, why, sizeof(why));
        if (r < 0 && rc == 0) { /* the first failure is the one reported */
            rc = r;
            snprintf(reason, reasonlen, "%s", why);
        }
        tele_debugfs_sample_rings(s, d, g);
    }
    *n = k;
    return rc;
}

static void tele_debugfs_close(void *state) {
    free(state);
}

const struct tele_prov_ops tele_prov_debugfs_ops = {
    .name = "debugfs",
    .caps = TELE_CAP(BUDDY) | TELE_CAP(FENCES),
    .open = tele_debugfs_open,
    .sample = tele_debugfs_sample,
    .close = tele_debugfs_close,
};
