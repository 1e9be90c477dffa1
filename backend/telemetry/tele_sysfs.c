/* The "sysfs" telemetry provider: every amdgpu card under ROOT/class/drm, found once at open,
 * its files re-read at each sample without waking a runtime-suspended device. */
#include "backend/telemetry/tele_prov.h"
#include "backend/telemetry/tele_sysfs_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TELE_SYSFS_AMD 0x1002

/* "card1" but not "card1-DP-1" (a connector) nor "renderD128" (the same GPU again). */
static bool tele_sysfs_card_number(const char *name, int *card) {
    if (strncmp(name, "card", 4) != 0 || !name[4] || strlen(name) > 8)
        return false;
    for (const char *p = name + 4; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    *card = atoi(name + 4);
    return true;
}

/* Bound to amdgpu, with a PCI address, and (when the file says) an AMD vendor id. */
static bool tele_sysfs_is_amdgpu(const char *dev, char pci[16]) {
    char path[TELE_PATH_MAX], text[1024], val[64];
    uint64_t vendor;
    if (tele_path(path, sizeof(path), dev, "uevent") < 0 ||
        tele_read_text(path, text, sizeof(text)) < 0)
        return false;
    if (!tele_uevent_get(text, "DRIVER", val, sizeof(val)) || strcmp(val, "amdgpu") != 0)
        return false;
    if (!tele_uevent_pci(text, pci))
        return false;
    return !tele_sysfs_read_u64(dev, "vendor", &vendor) || vendor == TELE_SYSFS_AMD;
}

/* dev/hwmon/hwmonK: amdgpu registers one per device. */
static void tele_sysfs_find_hwmon(struct tele_sysfs_card *c) {
    char dir[TELE_PATH_MAX];
    c->hwmon[0] = '\0';
    if (tele_path(dir, sizeof(dir), c->dev, "hwmon") < 0)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strncmp(e->d_name, "hwmon", 5) == 0 &&
            tele_path(c->hwmon, sizeof(c->hwmon), dir, e->d_name) == 0)
            break;
    closedir(d);
}

/* product_name comes from the board's FRU EEPROM, which many boards lack (or leave empty). */
static void tele_sysfs_find_name(struct tele_sysfs_card *c) {
    char path[TELE_PATH_MAX], name[sizeof(c->name)];
    uint64_t device;
    if (tele_path(path, sizeof(path), c->dev, "product_name") == 0 &&
        tele_read_line(path, name, sizeof(name)) == 0 && name[0]) {
        snprintf(c->name, sizeof(c->name), "%s", name);
        return;
    }
    if (tele_sysfs_read_u64(c->dev, "device", &device))
        snprintf(c->name, sizeof(c->name), "AMD GPU 0x%04x", (unsigned)device);
    else
        snprintf(c->name, sizeof(c->name), "AMD GPU");
}

/* The GC block's IP version from ip_discovery (kernels since 5.17), else the KFD node's. */
static void tele_sysfs_find_arch(struct tele_sysfs_card *c) {
    char gc[TELE_PATH_MAX];
    uint64_t major, minor, rev;
    c->arch[0] = '\0';
    if (tele_path(gc, sizeof(gc), c->dev, "ip_discovery/die/0/GC/0") == 0 &&
        tele_sysfs_read_u64(gc, "major", &major) && tele_sysfs_read_u64(gc, "minor", &minor) &&
        tele_sysfs_read_u64(gc, "revision", &rev))
        tele_sysfs_kfd_arch_from_gc((unsigned)major, (unsigned)minor, (unsigned)rev, c->arch,
                                    sizeof(c->arch));
    if (!c->arch[0] && c->kfd_target)
        tele_sysfs_kfd_arch_from_target(c->kfd_target, c->arch, sizeof(c->arch));
}

/* drm/<name>: added to s when it is an amdgpu card. */
static void tele_sysfs_add(struct tele_sysfs *s, const char *drm, const char *name) {
    int card;
    char cardir[TELE_PATH_MAX];
    if (s->n_cards >= TELE_MAX_GPUS || !tele_sysfs_card_number(name, &card))
        return;
    struct tele_sysfs_card *c = &s->cards[s->n_cards];
    memset(c, 0, sizeof(*c));
    if (tele_path(cardir, sizeof(cardir), drm, name) < 0 ||
        tele_path(c->dev, sizeof(c->dev), cardir, "device") < 0 ||
        !tele_sysfs_is_amdgpu(c->dev, c->pci))
        return; /* another driver's card (i915, nouveau): not ours to read */
    c->card = card;
    tele_sysfs_find_hwmon(c);
    tele_sysfs_find_name(c);
    s->n_cards++;
}

static int tele_sysfs_card_cmp(const void *a, const void *b) {
    const struct tele_sysfs_card *x = a, *y = b;
    return (x->card > y->card) - (x->card < y->card);
}

/* Every amdgpu card under s->sys, in card order. 0, or -errno when class/drm is unreadable. */
static int tele_sysfs_discover(struct tele_sysfs *s, char *drm, size_t drmcap) {
    int rc = tele_path(drm, drmcap, s->sys, "class/drm");
    if (rc < 0)
        return rc;
    DIR *d = opendir(drm);
    if (!d)
        return -errno;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        tele_sysfs_add(s, drm, e->d_name);
    closedir(d);
    qsort(s->cards, s->n_cards, sizeof(s->cards[0]), tele_sysfs_card_cmp);
    tele_sysfs_kfd_map(s->sys, s->cards, s->n_cards);
    for (size_t i = 0; i < s->n_cards; i++)
        tele_sysfs_find_arch(&s->cards[i]);
    return 0;
}

static int tele_sysfs_open(const struct tele_ctx *ctx, void **state, char *reason,
                           size_t reasonlen) {
    char drm[TELE_PATH_MAX];
    struct tele_sysfs *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(reason, reasonlen, "out of memory");
        return -ENOMEM;
    }
    snprintf(s->sys, sizeof(s->sys), "%s", ctx->roots->sys);
    int rc = tele_sysfs_discover(s, drm, sizeof(drm));
    if (rc < 0)
        tele_reason_errno(reason, reasonlen, rc, drm);
    else if (s->n_cards == 0) {
        snprintf(reason, reasonlen, "no amdgpu device under %s", drm);
        rc = -ENODEV;
    }
    if (rc < 0) {
        free(s);
        return rc;
    }
    *state = s;
    return 0;
}

static void tele_sysfs_sample_card(const struct tele_sysfs_card *c, struct tele_gpu *g) {
    tele_gpu_init(g, c->pci);
    g->vendor = TELE_VENDOR_AMD;
    g->card = c->card;
    snprintf(g->driver, sizeof(g->driver), "amdgpu");
    snprintf(g->name, sizeof(g->name), "%s", c->name);
    snprintf(g->arch, sizeof(g->arch), "%s", c->arch);
    g->power = tele_power_read(c->dev);
    tele_sysfs_read_idle_safe(c->dev, g);
    /* A suspended dGPU is left asleep: busy, clocks, hwmon, RAS and gpu_metrics all go to the
     * SMU or to registers, and older kernels resume the device to answer them. */
    if (g->power == TELE_POWER_SUSPENDED)
        return;
    tele_sysfs_read_awake(c, g);
    tele_sysfs_metrics_read(c->dev, g); /* last: only for what the text files did not give */
}

static int tele_sysfs_sample(void *state, struct tele_gpu *out, size_t cap, size_t *n, char *reason,
                             size_t reasonlen) {
    const struct tele_sysfs *s = state;
    size_t k = s->n_cards < cap ? s->n_cards : cap;
    (void)reason;
    (void)reasonlen;
    for (size_t i = 0; i < k; i++)
        tele_sysfs_sample_card(&s->cards[i], &out[i]);
    tele_sysfs_kfd_vram(s->sys, s->cards, k, out);
    *n = k;
    return 0;
}

static void tele_sysfs_close(void *state) {
    free(state);
}

const struct tele_prov_ops tele_prov_sysfs_ops = {
    .name = "sysfs",
    .caps = TELE_CAP(MEMORY) | TELE_CAP(UTIL) | TELE_CAP(THERMAL) | TELE_CAP(POWER) |
            TELE_CAP(CLOCKS) | TELE_CAP(FANS) | TELE_CAP(PCIE) | TELE_CAP(ECC) | TELE_CAP(IDENTITY),
    .open = tele_sysfs_open,
    .sample = tele_sysfs_sample,
    .close = tele_sysfs_close,
};
