/* The libdrm amdgpu telemetry provider: opens every amdgpu render node once, then reads the
 * memory heaps, sensors and the driver's eviction, migration, CPU-fault and VRAM-lost counters
 * through libdrm_amdgpu's info ioctls, leaving a runtime-suspended GPU asleep. */
#include "backend/core/mono.h"
#include "backend/telemetry/tele_libdrm_internal.h"

#include <amdgpu.h>
#include <drm.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define TELE_LIBDRM_RENDER_FIRST 128 /* render minors: DRM_MINOR_RENDER * 64 .. + 63 */
#define TELE_LIBDRM_RENDER_LAST  191

struct tele_libdrm_dev {
    int fd;                   /* -1: not opened yet (the GPU was suspended at open) */
    char path[TELE_PATH_MAX]; /* the render node, for a deferred open */
    amdgpu_device_handle h;
    char pci[16];
    char name[96];
    unsigned power_sensor; /* AMDGPU_INFO_SENSOR_* that answered for power; 0: none yet */
    struct tele_libdrm_hist hist;
};

struct tele_libdrm {
    const struct tele_ctx *ctx;
    struct tele_libdrm_dev devs[TELE_MAX_GPUS];
    unsigned n;
};

/* Why nodes were passed over, for the reason when none is left. */
struct tele_libdrm_scan {
    int err; /* the first permission error */
    char err_path[TELE_PATH_MAX];
    char note[TELE_REASON_BYTES]; /* the first other skip: "renderD128: not a character device" */
};

static void tele_libdrm_note(struct tele_libdrm_scan *sc, const char *path, const char *why) {
    const char *base = strrchr(path, '/');
    if (!sc->note[0])
        snprintf(sc->note, sizeof(sc->note), "%.40s: %.100s", base ? base + 1 : path, why);
}

/* The driver's name by DRM_IOCTL_VERSION, the ioctl drmGetVersion makes. libdrm itself is not
 * linked (libdrm_amdgpu's pkg-config file lists it as private), so the two things taken from
 * it, this ioctl and the PCI address below, are done directly. */
static bool tele_libdrm_driver(int fd, char *name, size_t cap) {
    struct drm_version v;
    memset(&v, 0, sizeof(v));
    memset(name, 0, cap);
    v.name = name;
    v.name_len = cap - 1;
    int rc;
    do
        rc = ioctl(fd, DRM_IOCTL_VERSION, &v);
    while (rc < 0 && (errno == EINTR || errno == EAGAIN));
    return rc == 0;
}

/* What sysfs says of a node without opening it, where drmGetDevice2 looks
 * (SYS/dev/char/MAJOR:MINOR/device/uevent): its PCI address and driver. False when sysfs does
 * not know the node; then only opening it tells whether it is amdgpu. */
static bool tele_libdrm_node_sysfs(const char *sys, dev_t rdev, char pci[16], bool *amdgpu) {
    char rel[64], path[TELE_PATH_MAX], uevent[1024];
    snprintf(rel, sizeof(rel), "dev/char/%u:%u/device/uevent", major(rdev), minor(rdev));
    if (tele_path(path, sizeof(path), sys, rel) < 0 ||
        tele_read_text(path, uevent, sizeof(uevent)) < 0 || !tele_uevent_pci(uevent, pci))
        return false;
    char driver[32];
    *amdgpu =
        tele_uevent_get(uevent, "DRIVER", driver, sizeof(driver)) && strcmp(driver, "amdgpu") == 0;
    return true;
}

/* Open a render node; -1 with the skip noted. A FIFO or regular file named like a node is
 * never opened (a FIFO would block the open). */
static int tele_libdrm_open_node(const char *path, struct tele_libdrm_scan *sc, dev_t *rdev) {
    struct stat st;
    if (stat(path, &st) < 0) {
        if (errno != ENOENT)
            tele_libdrm_note(sc, path, strerror(errno));
        return -1;
    }
    if (!S_ISCHR(st.st_mode)) {
        tele_libdrm_note(sc, path, "not a character device");
        return -1;
    }
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
    if (fd < 0 && (errno == EACCES || errno == EPERM) && sc->err == 0) {
        sc->err = -errno;
        snprintf(sc->err_path, sizeof(sc->err_path), "%s", path);
    } else if (fd < 0) {
        tele_libdrm_note(sc, path, strerror(errno));
    } else if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode)) {
        tele_libdrm_note(sc, path, "not a character device");
        close(fd);
        fd = -1;
    }
    *rdev = st.st_rdev;
    return fd;
}

/* Open and initialise d's node. 0, or -1 with the skip noted. */
static int tele_libdrm_attach(const struct tele_libdrm *s, struct tele_libdrm_dev *d,
                              struct tele_libdrm_scan *sc) {
    const char *path = d->path;
    dev_t rdev;
    int fd = tele_libdrm_open_node(path, sc, &rdev);
    if (fd < 0)
        return -1;
    char drv[32], why[64];
    uint32_t major_v, minor_v;
    if (!tele_libdrm_driver(fd, drv, sizeof(drv)) || strcmp(drv, "amdgpu") != 0) {
        snprintf(why, sizeof(why), "not an amdgpu device%s%s", drv[0] ? ": " : "", drv);
        tele_libdrm_note(sc, path, why);
    } else if (!d->pci[0]) { /* tele_libdrm_try found no uevent for the node */
        tele_libdrm_note(sc, path, "no PCI address in sysfs");
    } else if (amdgpu_device_initialize(fd, &major_v, &minor_v, &d->h) != 0) {
        tele_libdrm_note(sc, path, "amdgpu_device_initialize failed");
    } else {
        const char *name = amdgpu_get_marketing_name(d->h);
        snprintf(d->name, sizeof(d->name), "%s", name ? name : "");
        d->fd = fd;
        return 0;
    }
    close(fd);
    return -1;
}

/* Opening a node resumes a runtime-suspended GPU (amdgpu_driver_open_kms), so a node whose GPU
 * sysfs shows suspended is kept unopened until the GPU wakes for someone else; one sysfs says
 * is not amdgpu is not opened at all. An opened node's fd is kept: sampling never reopens. */
static void tele_libdrm_try(struct tele_libdrm *s, const char *path, struct tele_libdrm_scan *sc) {
    struct tele_libdrm_dev *d = &s->devs[s->n];
    struct stat st;
    bool amdgpu = false;
    memset(d, 0, sizeof(*d));
    d->fd = -1;
    snprintf(d->path, sizeof(d->path), "%s", path);
    if (stat(path, &st) == 0 && S_ISCHR(st.st_mode) &&
        tele_libdrm_node_sysfs(s->ctx->roots->sys, st.st_rdev, d->pci, &amdgpu)) {
        if (!amdgpu) {
            tele_libdrm_note(sc, path, "not an amdgpu device");
            return;
        }
        if (tele_pci_power(s->ctx->roots->sys, d->pci) == TELE_POWER_SUSPENDED) {
            s->n++;
            return;
        }
    }
    if (tele_libdrm_attach(s, d, sc) == 0)
        s->n++;
}

static void tele_libdrm_free(struct tele_libdrm *s) {
    for (unsigned i = 0; i < s->n; i++) {
        if (s->devs[i].fd < 0)
            continue;
        amdgpu_device_deinitialize(s->devs[i].h);
        close(s->devs[i].fd);
    }
    free(s);
}

/* Every render minor under dri, in order. */
static void tele_libdrm_scan(struct tele_libdrm *s, const char *dri, struct tele_libdrm_scan *sc) {
    char path[TELE_PATH_MAX];
    struct stat st;
    if (stat(dri, &st) < 0 || !S_ISDIR(st.st_mode)) {
        snprintf(sc->note, sizeof(sc->note), "no such directory");
        return;
    }
    for (int m = TELE_LIBDRM_RENDER_FIRST; m <= TELE_LIBDRM_RENDER_LAST && s->n < TELE_MAX_GPUS;
         m++) {
        int len = snprintf(path, sizeof(path), "%s/renderD%d", dri, m);
        if (len > 0 && (size_t)len < sizeof(path))
            tele_libdrm_try(s, path, sc);
    }
}

/* The architecture (gfx1100) is left to sysfs: amdgpu_query_gpu_info gives a family and an
 * external revision, whose mapping to a target is a per-chip table. */
static int tele_libdrm_open(const struct tele_ctx *ctx, void **state, char *reason,
                            size_t reasonlen) {
    struct tele_libdrm *s = calloc(1, sizeof(*s));
    struct tele_libdrm_scan *sc = calloc(1, sizeof(*sc));
    char dri[TELE_PATH_MAX];
    int rc = 0;
    if (!s || !sc) {
        snprintf(reason, reasonlen, "out of memory");
        rc = -ENOMEM;
    } else if (tele_path(dri, sizeof(dri), ctx->roots->dev, "dri") < 0) {
        snprintf(reason, reasonlen, "device root too long: %s", ctx->roots->dev);
        rc = -ENAMETOOLONG;
    } else {
        s->ctx = ctx;
        tele_libdrm_scan(s, dri, sc);
        if (s->n == 0)
            rc = tele_libdrm_map_none(dri, sc->err, sc->err_path, sc->note, reason, reasonlen);
    }
    free(sc);
    if (rc < 0) {
        free(s);
        return rc;
    }
    *state = s;
    return 0;
}

static bool tele_libdrm_sensor(amdgpu_device_handle h, unsigned id, uint32_t *v) {
    return amdgpu_query_sensor_info(h, id, sizeof(*v), v) == 0;
}

/* GPU_AVG_POWER is gone on newer chips, where GPU_INPUT_POWER answers: the one that worked is
 * remembered so later samples make one ioctl. */
static void tele_libdrm_read_power(struct tele_libdrm_dev *d, struct tele_libdrm_raw *r) {
    static const unsigned ids[] = {AMDGPU_INFO_SENSOR_GPU_AVG_POWER,
                                   TELE_LIBDRM_SENSOR_INPUT_POWER};
    if (d->power_sensor) {
        r->power_ok = tele_libdrm_sensor(d->h, d->power_sensor, &r->power_w);
        return;
    }
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]) && !r->power_ok; i++)
        if ((r->power_ok = tele_libdrm_sensor(d->h, ids[i], &r->power_w)))
            d->power_sensor = ids[i];
}

static bool tele_libdrm_info(amdgpu_device_handle h, unsigned id, unsigned size, void *v) {
    return amdgpu_query_info(h, id, size, v) == 0;
}

/* Any ioctl on the node may resume a runtime-suspended GPU, so a suspended one gets none. */
static void tele_libdrm_read(const struct tele_libdrm *s, struct tele_libdrm_dev *d,
                             struct tele_libdrm_raw *r) {
    memset(r, 0, sizeof(*r));
    r->power = tele_pci_power(s->ctx->roots->sys, d->pci);
    if (r->power == TELE_POWER_SUSPENDED || d->fd < 0)
        return;
    r->t_ns = mono_now_ns();
    r->mem_ok = tele_libdrm_info(d->h, AMDGPU_INFO_MEMORY, sizeof(r->mem), &r->mem);
    r->evictions_ok = tele_libdrm_info(d->h, AMDGPU_INFO_NUM_EVICTIONS, 8, &r->evictions);
    r->bytes_moved_ok = tele_libdrm_info(d->h, AMDGPU_INFO_NUM_BYTES_MOVED, 8, &r->bytes_moved);
    r->cpu_faults_ok =
        tele_libdrm_info(d->h, AMDGPU_INFO_NUM_VRAM_CPU_PAGE_FAULTS, 8, &r->cpu_faults);
    r->vram_lost_ok = tele_libdrm_info(d->h, AMDGPU_INFO_VRAM_LOST_COUNTER, 4, &r->vram_lost);
    r->sclk_ok = tele_libdrm_sensor(d->h, AMDGPU_INFO_SENSOR_GFX_SCLK, &r->sclk_mhz);
    r->mclk_ok = tele_libdrm_sensor(d->h, AMDGPU_INFO_SENSOR_GFX_MCLK, &r->mclk_mhz);
    r->temp_ok = tele_libdrm_sensor(d->h, AMDGPU_INFO_SENSOR_GPU_TEMP, &r->temp_mc);
    r->load_ok = tele_libdrm_sensor(d->h, AMDGPU_INFO_SENSOR_GPU_LOAD, &r->load_pct);
    tele_libdrm_read_power(d, r);
}

static void tele_libdrm_sample_dev(const struct tele_libdrm *s, struct tele_libdrm_dev *d,
                                   struct tele_gpu *g) {
    struct tele_libdrm_raw r;
    struct tele_libdrm_lost lost;
    if (d->fd < 0 && tele_pci_power(s->ctx->roots->sys, d->pci) != TELE_POWER_SUSPENDED) {
        struct tele_libdrm_scan sc = {0};
        tele_libdrm_attach(s, d, &sc); /* awake now: open it (on failure, tried again later) */
    }
    tele_gpu_init(g, d->pci);
    g->vendor = TELE_VENDOR_AMD;
    snprintf(g->driver, sizeof(g->driver), "amdgpu");
    snprintf(g->name, sizeof(g->name), "%s", d->name);
    g->name_src = g->name[0] ? 1 : 0;
    tele_libdrm_read(s, d, &r);
    tele_libdrm_map(&d->hist, &r, g, &lost);
    if (lost.lost) {
        char text[EV_TEXT_BYTES];
        tele_libdrm_map_lost_text(&lost, text, sizeof(text));
        s->ctx->emit(s->ctx, SEV_ERROR, d->pci, text);
    }
}

static int tele_libdrm_sample(void *state, struct tele_gpu *out, size_t cap, size_t *n,
                              char *reason, size_t reasonlen) {
    struct tele_libdrm *s = state;
    (void)reason, (void)reasonlen;
    size_t k = 0;
    for (unsigned i = 0; i < s->n && k < cap; i++)
        tele_libdrm_sample_dev(s, &s->devs[i], &out[k++]);
    *n = k;
    return 0;
}

static void tele_libdrm_close(void *state) {
    if (state)
        tele_libdrm_free(state);
}

const struct tele_prov_ops tele_prov_libdrm_ops = {
    .name = "libdrm",
    .caps = TELE_CAP(MEMORY) | TELE_CAP(UTIL) | TELE_CAP(THERMAL) | TELE_CAP(POWER) |
            TELE_CAP(CLOCKS) | TELE_CAP(COUNTERS) | TELE_CAP(IDENTITY),
    .open = tele_libdrm_open,
    .sample = tele_libdrm_sample,
    .close = tele_libdrm_close,
};
